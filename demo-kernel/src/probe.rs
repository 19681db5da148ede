//! Probe accesses: one load or store that may abort without killing the kernel.
//!
//! A probe arms a flag, executes one `LDR`/`STR` (or `LDRT`/`STRT`, which
//! check user-mode permissions from SVC mode) in `asm/probe.s`, and disarms.
//! If the instruction aborts, the data-abort handler (`asm/vectors.s`) sees
//! the flag and the instruction's address, records DFSR and FAR, and resumes
//! after the instruction; the probe then returns the fault. Any other data
//! abort stays fatal. This is what the differential tests against
//! `mmu_armv5::translate` are built on.

use core::cell::UnsafeCell;

use mmu_armv5::{Domain, FaultKind};

extern "C" {
    fn __probe_ldr(va: u32) -> u32;
    fn __probe_ldrt(va: u32) -> u32;
    fn __probe_str(va: u32, value: u32);
    fn __probe_strt(va: u32, value: u32);
}

/// Shared with the abort handler: field offsets 0, 4, 8, 12 are fixed.
#[repr(C)]
struct ProbeState {
    armed: u32,
    faulted: u32,
    dfsr: u32,
    far: u32,
}

struct StateCell(UnsafeCell<ProbeState>);
// SAFETY: single core; the abort handler only runs synchronously inside a probe.
unsafe impl Sync for StateCell {}

#[export_name = "__probe_state"]
static STATE: StateCell = StateCell(UnsafeCell::new(ProbeState {
    armed: 0,
    faulted: 0,
    dfsr: 0,
    far: 0,
}));

/// Whose permissions a probe checks.
#[derive(Clone, Copy, PartialEq, Eq, Debug, defmt::Format)]
pub enum Privilege {
    /// The kernel's (SVC mode, `LDR`/`STR`).
    Kernel,
    /// User mode's (`LDRT`/`STRT` issued from SVC mode).
    User,
}

/// The abort a probe raised.
#[derive(Clone, Copy, PartialEq, Eq, Debug, defmt::Format)]
pub struct ProbeFault {
    /// The data fault status register as the abort left it.
    pub dfsr: u32,
    /// The fault address register as the abort left it.
    pub far: u32,
}

impl ProbeFault {
    /// The fault kind encoded in DFSR\[3:0\].
    pub fn kind(&self) -> FaultKind {
        FaultKind::from_status(self.dfsr)
    }

    /// The domain field DFSR\[7:4\].
    pub fn domain(&self) -> Domain {
        Domain::from_low_bits(self.dfsr >> 4)
    }
}

fn state() -> *mut ProbeState {
    STATE.0.get()
}

/// Runs `access` with the probe armed; returns the fault it raised, if any.
fn armed<T>(access: impl FnOnce() -> T) -> Result<T, ProbeFault> {
    let s = state();
    // SAFETY: `s` points to the static state; volatile accesses keep their
    // order relative to the probe instruction (an opaque call).
    unsafe {
        core::ptr::addr_of_mut!((*s).faulted).write_volatile(0);
        core::ptr::addr_of_mut!((*s).armed).write_volatile(1);
    }
    let value = access();
    // SAFETY: as above; the abort handler has finished if it ran.
    unsafe {
        core::ptr::addr_of_mut!((*s).armed).write_volatile(0);
        if core::ptr::addr_of!((*s).faulted).read_volatile() != 0 {
            return Err(ProbeFault {
                dfsr: core::ptr::addr_of!((*s).dfsr).read_volatile(),
                far: core::ptr::addr_of!((*s).far).read_volatile(),
            });
        }
    }
    Ok(value)
}

/// Loads the word at `va` with `privilege`'s permissions.
///
/// Reading a device register can have side effects on the device; the
/// kernel's own memory is only read.
pub fn probe_read(va: u32, privilege: Privilege) -> Result<u32, ProbeFault> {
    armed(|| match privilege {
        // SAFETY: one load; an abort is absorbed by the armed handler.
        Privilege::Kernel => unsafe { __probe_ldr(va) },
        // SAFETY: as above, with user permissions.
        Privilege::User => unsafe { __probe_ldrt(va) },
    })
}

/// Stores `value` at `va` with `privilege`'s permissions.
///
/// # Safety
/// If the store succeeds it changes memory: `va` must not hold anything the
/// kernel (or a live Rust reference) relies on.
pub unsafe fn probe_write(va: u32, value: u32, privilege: Privilege) -> Result<(), ProbeFault> {
    armed(|| match privilege {
        // SAFETY: the caller vouches for the target; an abort is absorbed.
        Privilege::Kernel => unsafe { __probe_str(va, value) },
        // SAFETY: as above, with user permissions.
        Privilege::User => unsafe { __probe_strt(va, value) },
    })
}
