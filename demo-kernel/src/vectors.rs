//! Fatal exceptions: the Rust side of the stubs in `asm/vectors.s`.
//!
//! Every exception other than a data abort absorbed by a probe
//! ([`crate::probe`]) is a kernel bug: it is reported with the registers that
//! explain it and QEMU exits with [`EXIT_EXCEPTION`](crate::exit::EXIT_EXCEPTION).

use mmu_armv5::regs::{Cp15Ext, HwCp15};

use crate::exit;

/// Which vector was taken (r0 of the assembly stubs).
#[derive(Clone, Copy, PartialEq, Eq, defmt::Format)]
pub enum ExceptionKind {
    /// Branch to the reset vector.
    Reset,
    /// Undefined instruction.
    Undefined,
    /// SVC (a semihosting call QEMU did not handle also lands here).
    Svc,
    /// Prefetch abort.
    PrefetchAbort,
    /// Data abort outside a probe.
    DataAbort,
    /// The reserved vector.
    Reserved,
    /// IRQ (the kernel never unmasks interrupts).
    Irq,
    /// FIQ.
    Fiq,
}

impl ExceptionKind {
    fn from_code(code: u32) -> ExceptionKind {
        match code {
            0 => ExceptionKind::Reset,
            1 => ExceptionKind::Undefined,
            2 => ExceptionKind::Svc,
            3 => ExceptionKind::PrefetchAbort,
            4 => ExceptionKind::DataAbort,
            5 => ExceptionKind::Reserved,
            6 => ExceptionKind::Irq,
            _ => ExceptionKind::Fiq,
        }
    }
}

/// Reports an exception the kernel does not handle and ends the run.
///
/// Called from `asm/vectors.s` in the exception's mode: `kind` is the vector
/// number, `spsr` the interrupted CPSR, `pc` the address of the instruction
/// concerned.
#[no_mangle]
pub extern "C" fn unexpected_exception(kind: u32, spsr: u32, pc: u32) -> ! {
    let kind = ExceptionKind::from_code(kind);
    // SAFETY: an exception handler entered from assembly, to which no
    // owner can be lent; it only reads the fault registers and never
    // returns (the run ends below), so the interrupted owner never uses
    // CP15 again.
    let c = unsafe { HwCp15::new() };
    match kind {
        ExceptionKind::DataAbort => defmt::error!(
            "unexpected data abort at pc={=u32:#010x}: DFSR={=u32:#05x} FAR={=u32:#010x} SPSR={=u32:#x}",
            pc,
            c.dfsr().bits(),
            c.far().bits(),
            spsr
        ),
        ExceptionKind::PrefetchAbort => defmt::error!(
            "unexpected prefetch abort at pc={=u32:#010x}: IFSR={=u32:#05x} SPSR={=u32:#x}",
            pc,
            c.ifsr().bits(),
            spsr
        ),
        _ => defmt::error!(
            "unexpected {} exception at pc={=u32:#010x} SPSR={=u32:#x}",
            kind,
            pc,
            spsr
        ),
    }
    exit::exit(exit::EXIT_EXCEPTION)
}
