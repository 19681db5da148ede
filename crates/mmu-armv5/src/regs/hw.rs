//! [`HwCp15`]: the real coprocessor, through `MRC` and `MCR`.
//!
//! Compiled only for bare-metal ARM (`target_arch = "arm"`, `target_os =
//! "none"`). Coprocessor register numbers are instruction immediates, so
//! every [`Cp15Reg`] and [`Cp15Op`] maps to its own literal instruction in a
//! `match`; the methods are `#[inline(always)]` so a constant argument folds
//! the `match` away and a typed accessor becomes a single instruction.

use super::backend::{Cp15, Cp15Op, Cp15Reg};
use core::arch::asm;

/// CP15 on the CPU this code runs on.
///
/// Zero-sized. Only privileged code may execute `MRC`/`MCR` to CP15, hence
/// the `unsafe` constructor.
#[derive(Debug)]
pub struct HwCp15 {
    _private: (),
}

impl HwCp15 {
    /// The CP15 of the running CPU.
    ///
    /// # Safety
    /// The caller runs in a privileged mode (CP15 accesses from user mode are
    /// undefined instructions) and is the only owner of CP15 state changes,
    /// i.e. it does not create a second `HwCp15` that could race its
    /// register writes with this one.
    #[inline(always)]
    #[must_use]
    pub const unsafe fn new() -> HwCp15 {
        HwCp15 { _private: () }
    }
}

/// `MRC p15, 0, r, CRn, CRm, opc2` into a fresh register.
macro_rules! mrc {
    ($crn:literal, $crm:literal, $opc2:literal, $opts:tt) => {{
        let v: u32;
        // SAFETY: reading a CP15 register has no side effect; `HwCp15`
        // exists only in privileged mode (its constructor's contract), where
        // the read is permitted.
        unsafe {
            asm!(
                concat!("mrc p15, 0, {v}, ", $crn, ", ", $crm, ", ", $opc2),
                v = out(reg) v,
                options$opts
            )
        };
        v
    }};
}

/// `MCR p15, 0, value, CRn, CRm, opc2`; the caller's `unsafe` contract covers it.
macro_rules! mcr {
    ($crn:literal, $crm:literal, $opc2:literal, $value:expr) => {{
        // SAFETY: the enclosing `unsafe fn` forwards its caller's contract
        // for this register or operation (see `Cp15::write` / `Cp15::op`).
        // Not `nomem`: the instruction changes how memory is seen, so the
        // compiler must not move memory accesses across it.
        unsafe {
            asm!(
                concat!("mcr p15, 0, {v}, ", $crn, ", ", $crm, ", ", $opc2),
                v = in(reg) $value,
                options(nostack, preserves_flags)
            )
        }
    }};
}

impl Cp15 for HwCp15 {
    #[inline(always)]
    fn read(&self, reg: Cp15Reg) -> u32 {
        match reg {
            // ID registers never change: the compiler may treat them as pure.
            Cp15Reg::Midr => mrc!("c0", "c0", "0", (nomem, nostack, preserves_flags)),
            Cp15Reg::CacheType => mrc!("c0", "c0", "1", (nomem, nostack, preserves_flags)),
            Cp15Reg::TcmStatus => mrc!("c0", "c0", "2", (nomem, nostack, preserves_flags)),
            // The others change with writes and faults: keep them ordered.
            Cp15Reg::Sctlr => mrc!("c1", "c0", "0", (nostack, preserves_flags)),
            Cp15Reg::Ttbr => mrc!("c2", "c0", "0", (nostack, preserves_flags)),
            Cp15Reg::Dacr => mrc!("c3", "c0", "0", (nostack, preserves_flags)),
            Cp15Reg::Dfsr => mrc!("c5", "c0", "0", (nostack, preserves_flags)),
            Cp15Reg::Ifsr => mrc!("c5", "c0", "1", (nostack, preserves_flags)),
            Cp15Reg::Far => mrc!("c6", "c0", "0", (nostack, preserves_flags)),
            Cp15Reg::DtcmRegion => mrc!("c9", "c1", "0", (nostack, preserves_flags)),
            Cp15Reg::ItcmRegion => mrc!("c9", "c1", "1", (nostack, preserves_flags)),
            Cp15Reg::Fcseidr => mrc!("c13", "c0", "0", (nostack, preserves_flags)),
        }
    }

    #[inline(always)]
    unsafe fn write(&mut self, reg: Cp15Reg, value: u32) {
        match reg {
            // Read-only registers ignore writes (documented on `Cp15::write`);
            // an MCR to them would be unpredictable, so none is issued.
            Cp15Reg::Midr | Cp15Reg::CacheType | Cp15Reg::TcmStatus => {}
            Cp15Reg::Sctlr => mcr!("c1", "c0", "0", value),
            Cp15Reg::Ttbr => mcr!("c2", "c0", "0", value),
            Cp15Reg::Dacr => mcr!("c3", "c0", "0", value),
            Cp15Reg::Dfsr => mcr!("c5", "c0", "0", value),
            Cp15Reg::Ifsr => mcr!("c5", "c0", "1", value),
            Cp15Reg::Far => mcr!("c6", "c0", "0", value),
            Cp15Reg::DtcmRegion => mcr!("c9", "c1", "0", value),
            Cp15Reg::ItcmRegion => mcr!("c9", "c1", "1", value),
            Cp15Reg::Fcseidr => mcr!("c13", "c0", "0", value),
        }
    }

    #[inline(always)]
    unsafe fn op(&mut self, op: Cp15Op, value: u32) {
        match op {
            Cp15Op::InvalidateIdCache => mcr!("c7", "c7", "0", value),
            Cp15Op::InvalidateICache => mcr!("c7", "c5", "0", value),
            Cp15Op::InvalidateICacheLine => mcr!("c7", "c5", "1", value),
            Cp15Op::InvalidateDCache => mcr!("c7", "c6", "0", value),
            Cp15Op::InvalidateDCacheLine => mcr!("c7", "c6", "1", value),
            Cp15Op::CleanDCacheLine => mcr!("c7", "c10", "1", value),
            Cp15Op::CleanInvalidateDCacheLine => mcr!("c7", "c14", "1", value),
            Cp15Op::DrainWriteBuffer => mcr!("c7", "c10", "4", value),
            Cp15Op::AllocateDCacheLine => mcr!("c7", "c2", "5", value),
            Cp15Op::InvalidateTlb => mcr!("c8", "c7", "0", value),
            Cp15Op::InvalidateTlbEntry => mcr!("c8", "c7", "1", value),
            Cp15Op::InvalidateITlb => mcr!("c8", "c5", "0", value),
            Cp15Op::InvalidateITlbEntry => mcr!("c8", "c5", "1", value),
            Cp15Op::InvalidateDTlb => mcr!("c8", "c6", "0", value),
            Cp15Op::InvalidateDTlbEntry => mcr!("c8", "c6", "1", value),
        }
    }

    #[inline(always)]
    fn test_clean_invalidate_dcache(&mut self) -> bool {
        let cpsr: u32;
        // SAFETY: test, clean and invalidate writes dirty lines back before
        // invalidating them, so no data is lost; `HwCp15` exists only in
        // privileged mode. The MRC sets the flags (Z = the whole D-cache is
        // clean), read back with MRS; not `nomem` because lines move to memory.
        unsafe {
            asm!(
                "mrc p15, 0, APSR_nzcv, c7, c14, 3",
                "mrs {cpsr}, cpsr",
                cpsr = out(reg) cpsr,
                options(nostack)
            )
        };
        cpsr & (1 << 30) != 0
    }

    #[inline(always)]
    fn test_clean_dcache(&mut self) -> bool {
        let cpsr: u32;
        // SAFETY: test and clean only writes dirty lines back; `HwCp15`
        // exists only in privileged mode. Z = the whole D-cache is clean.
        unsafe {
            asm!(
                "mrc p15, 0, APSR_nzcv, c7, c10, 3",
                "mrs {cpsr}, cpsr",
                cpsr = out(reg) cpsr,
                options(nostack)
            )
        };
        cpsr & (1 << 30) != 0
    }
}
