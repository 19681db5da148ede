//! [`HwCp15`]: the real coprocessor, through `MRC` and `MCR`.
//!
//! Compiled only for bare-metal ARM (`target_arch = "arm"`, `target_os =
//! "none"`). Coprocessor register numbers are instruction immediates, so
//! every [`Cp15Reg`] and [`Cp15Op`] maps to its own literal instruction in a
//! `match`; the methods are `#[inline(always)]` so a constant argument folds
//! the `match` away and a typed accessor becomes a single instruction.
//!
//! [`Cp15::op_lines`] is an unrolled loop: 16, 8 or 4 `MCR` + `ADD` pairs
//! per iteration when the range is a multiple of that many lines, else one,
//! ended by an exact compare with the end address (so a range ending at
//! 4 GiB, whose end wraps to 0, works; [`LineRange`] guarantees whole lines).

use super::backend::{Cp15, Cp15Op, Cp15Reg};
use crate::maint::{LineOp, LineRange, LINE};
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

/// `$lines` copies of `MCR p15, 0, {a}, c7, <op>` + `ADD {a}, {a}, #32`
/// (the line length, [`LINE`]), as one assembler string. Written out
/// rather than with `.rept`: LLVM sizes inline assembly by its statements,
/// and an unexpanded `.rept` makes it misplace literal pools (out-of-range
/// fixups).
macro_rules! line_ops {
    (1, $op:literal) => {
        concat!("mcr p15, 0, {a}, ", $op, "\n", "add {a}, {a}, #{line}\n")
    };
    (4, $op:literal) => {
        concat!(
            line_ops!(1, $op),
            line_ops!(1, $op),
            line_ops!(1, $op),
            line_ops!(1, $op)
        )
    };
    (8, $op:literal) => {
        concat!(line_ops!(4, $op), line_ops!(4, $op))
    };
    (16, $op:literal) => {
        concat!(line_ops!(8, $op), line_ops!(8, $op))
    };
}

/// One line operation (`MCR p15, 0, <addr>, c7, <op>`) over every line of
/// a [`LineRange`], as many lines per loop iteration as
/// [`LineRange::unrolled`] says.
macro_rules! line_loop {
    (@unrolled $start:ident, $len:ident, $op:literal, $lines:tt) => {
        // SAFETY: line maintenance by MVA never faults and changes only
        // cache state; the enclosing `unsafe fn` forwards its caller's
        // contract for the operation (see `Cp15::op_lines`). `$len` is a
        // non-zero multiple of `$lines` lines and `$start + $len` at most
        // 4 GiB (`LineRange`'s invariant), so the loop ends exactly at the
        // end of the range. Not `nomem`: like `mcr!`, a barrier to the
        // compiler's memory accesses.
        unsafe {
            asm!(
                "2:",
                line_ops!($lines, $op),
                "cmp {a}, {end}",
                "bne 2b",
                a = inout(reg) $start => _,
                end = in(reg) $start.wrapping_add($len),
                line = const LINE,
                options(nostack)
            )
        }
    };
    ($range:expr, $op:literal) => {{
        let range: LineRange = $range;
        let (start, len) = (range.start().as_u32(), range.len());
        range.unrolled(|lines| match lines {
            16 => line_loop!(@unrolled start, len, $op, 16),
            8 => line_loop!(@unrolled start, len, $op, 8),
            4 => line_loop!(@unrolled start, len, $op, 4),
            1 => line_loop!(@unrolled start, len, $op, 1),
            _ => {}
        })
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
    unsafe fn op_lines(&mut self, op: LineOp, range: LineRange) {
        match op {
            LineOp::CleanD => line_loop!(range, "c7, c10, 1"),
            LineOp::InvalidateD => line_loop!(range, "c7, c6, 1"),
            LineOp::CleanInvalidateD => line_loop!(range, "c7, c14, 1"),
            LineOp::InvalidateI => line_loop!(range, "c7, c5, 1"),
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
