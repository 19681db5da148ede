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
//!
//! # Feature `cache-check`: marker accesses
//! With the crate feature `cache-check`, every CP15 access this backend
//! issues is also made visible to an observer outside the CPU (the
//! `cache-check` QEMU plugin) through the two marker loads of
//! [`crate::marker`]: right before each `MCR` (the value written), right
//! after each `MRC` of a register whose value can change (SCTLR, TTBR, DACR,
//! DFSR, IFSR, FAR, the TCM region registers, FCSEIDR; the ID registers are
//! not reported), in the same `asm!` block, so no other memory access comes
//! between them. [`Cp15::op_lines`] reports each line operation (one marker
//! per `MCR`; the loop is then not unrolled), and the test-and-clean loops
//! of [`crate::maint::Arm926`] one marker `MRC c7, c14|c10, 3` each once the
//! loop has ended. [`HwCp15::marker`] emits a pseudo [`Event`]. The
//! kernel must map the marker window (kernel-only, uncached, onto any RAM)
//! before the first marked access, with the MMU on. Without the feature not
//! one instruction differs: [`HwCp15::marker`] is then empty.

use super::backend::{Cp15, Cp15Op, Cp15Reg};
use crate::maint::{LineOp, LineRange, LINE};
use crate::marker::Event;
#[cfg(feature = "cache-check")]
use crate::marker::{self, Key};
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

    /// Tells the cache-check observer `event` with `value` (two marker
    /// loads, see [`crate::marker`]); nothing at all without the feature
    /// `cache-check`.
    #[inline(always)]
    pub fn marker(&self, event: Event, value: u32) {
        #[cfg(feature = "cache-check")]
        emit(Key::Event(event), value);
        #[cfg(not(feature = "cache-check"))]
        let _ = (event, value);
    }
}

/// The two marker loads for `key` and `value` ([`marker::first`], then
/// [`marker::second`]), back to back.
///
/// The window must be mapped readable in the current address space (the
/// feature's contract, see the module docs).
#[cfg(feature = "cache-check")]
#[inline(always)]
pub(crate) fn emit(key: Key, value: u32) {
    // SAFETY: two byte loads from the marker window, which the kernel maps
    // kernel-only and uncached for as long as the feature is on (the
    // feature's contract); their results are discarded and nothing else
    // is touched. Not `nomem`: the observer relies on their order with
    // the accesses around them.
    unsafe {
        asm!(
            "ldrb {a}, [{a}]",
            "ldrb {b}, [{b}]",
            a = inout(reg) marker::first(key, value) => _,
            b = inout(reg) marker::second(value) => _,
            options(nostack, preserves_flags, readonly)
        )
    };
}

/// The key of `MRC`/`MCR p15, 0, _, c<crn>, c<crm>, <opc2>`.
#[cfg(feature = "cache-check")]
const fn cp15_key(read: bool, crn: u8, crm: u8, opc2: u8) -> u32 {
    Key::Cp15 {
        read,
        crn,
        crm,
        opc2,
    }
    .raw() as u32
}

/// First marker address of `key` less the value bits: `WINDOW_BASE | key << 10`.
#[cfg(feature = "cache-check")]
const fn first_base(key: u32) -> u32 {
    marker::WINDOW_BASE | (key << marker::KEY_SHIFT)
}

/// Base of every second marker address.
#[cfg(feature = "cache-check")]
const SECOND_BASE: u32 = marker::WINDOW_BASE | marker::SECOND_BIT;

/// `MRC p15, 0, r, CRn, CRm, opc2` into a fresh register (ID registers:
/// never reported to the cache-check observer).
macro_rules! mrc_id {
    ($crn:literal, $crm:literal, $opc2:literal) => {{
        let v: u32;
        // SAFETY: reading a CP15 ID register has no side effect; `HwCp15`
        // exists only in privileged mode (its constructor's contract), where
        // the read is permitted. They never change: the compiler may treat
        // them as pure.
        unsafe {
            asm!(
                concat!("mrc p15, 0, {v}, c", $crn, ", c", $crm, ", ", $opc2),
                v = out(reg) v,
                options(nomem, nostack, preserves_flags)
            )
        };
        v
    }};
}

/// `MRC p15, 0, r, CRn, CRm, opc2` into a fresh register, of a register
/// that changes with writes and faults (kept in order with them).
#[cfg(not(feature = "cache-check"))]
macro_rules! mrc {
    ($crn:literal, $crm:literal, $opc2:literal) => {{
        let v: u32;
        // SAFETY: reading a CP15 register has no side effect; `HwCp15`
        // exists only in privileged mode (its constructor's contract), where
        // the read is permitted.
        unsafe {
            asm!(
                concat!("mrc p15, 0, {v}, c", $crn, ", c", $crm, ", ", $opc2),
                v = out(reg) v,
                options(nostack, preserves_flags)
            )
        };
        v
    }};
}

/// As above, followed by the two marker loads carrying the value read:
/// `[first_base + (v >> 22)]`, then `[SECOND_BASE + (v & 0x3F_FFFF)]`
/// (the value's low 22 bits as `(v << 10) >> 10`).
#[cfg(feature = "cache-check")]
macro_rules! mrc {
    ($crn:literal, $crm:literal, $opc2:literal) => {{
        let v: u32;
        // SAFETY: reading a CP15 register has no side effect; `HwCp15`
        // exists only in privileged mode (its constructor's contract), where
        // the read is permitted. The two byte loads read the marker window,
        // mapped for as long as the feature is on (see `emit`).
        unsafe {
            asm!(
                concat!("mrc p15, 0, {v}, c", $crn, ", c", $crm, ", ", $opc2),
                "ldrb {t}, [{b0}, {v}, lsr #22]",
                "mov {t}, {v}, lsl #10",
                "ldrb {t}, [{b1}, {t}, lsr #10]",
                v = out(reg) v,
                t = out(reg) _,
                b0 = in(reg) first_base(cp15_key(true, $crn, $crm, $opc2)),
                b1 = in(reg) SECOND_BASE,
                options(nostack, preserves_flags, readonly)
            )
        };
        v
    }};
}

/// `MCR p15, 0, value, CRn, CRm, opc2`; the caller's `unsafe` contract covers it.
#[cfg(not(feature = "cache-check"))]
macro_rules! mcr {
    ($crn:literal, $crm:literal, $opc2:literal, $value:expr) => {{
        // SAFETY: the enclosing `unsafe fn` forwards its caller's contract
        // for this register or operation (see `Cp15::write` / `Cp15::op`).
        // Not `nomem`: the instruction changes how memory is seen, so the
        // compiler must not move memory accesses across it.
        unsafe {
            asm!(
                concat!("mcr p15, 0, {v}, c", $crn, ", c", $crm, ", ", $opc2),
                v = in(reg) $value,
                options(nostack, preserves_flags)
            )
        }
    }};
}

/// As above, preceded by the two marker loads carrying the value written.
#[cfg(feature = "cache-check")]
macro_rules! mcr {
    ($crn:literal, $crm:literal, $opc2:literal, $value:expr) => {{
        let value: u32 = $value;
        // SAFETY: the enclosing `unsafe fn` forwards its caller's contract
        // for this register or operation (see `Cp15::write` / `Cp15::op`);
        // the two byte loads read the marker window, mapped for as long as
        // the feature is on (see `emit`). Not `nomem`: the instruction
        // changes how memory is seen.
        unsafe {
            asm!(
                "ldrb {a}, [{a}]",
                "ldrb {b}, [{b}]",
                concat!("mcr p15, 0, {v}, c", $crn, ", c", $crm, ", ", $opc2),
                a = inout(reg) marker::first(
                    Key::Cp15 { read: false, crn: $crn, crm: $crm, opc2: $opc2 },
                    value
                ) => _,
                b = inout(reg) marker::second(value) => _,
                v = in(reg) value,
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
#[cfg(not(feature = "cache-check"))]
macro_rules! line_ops {
    (1, $op:expr) => {
        concat!("mcr p15, 0, {a}, ", $op, "\n", "add {a}, {a}, #{line}\n")
    };
    (4, $op:expr) => {
        concat!(
            line_ops!(1, $op),
            line_ops!(1, $op),
            line_ops!(1, $op),
            line_ops!(1, $op)
        )
    };
    (8, $op:expr) => {
        concat!(line_ops!(4, $op), line_ops!(4, $op))
    };
    (16, $op:expr) => {
        concat!(line_ops!(8, $op), line_ops!(8, $op))
    };
}

/// One line operation (`MCR p15, 0, <addr>, c7, <op>`) over every line of
/// a [`LineRange`], as many lines per loop iteration as
/// [`LineRange::unrolled`] says.
#[cfg(not(feature = "cache-check"))]
macro_rules! line_loop {
    (@unrolled $start:ident, $len:ident, $op:expr, $lines:tt) => {
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
    ($range:expr, $crm:literal, $opc2:literal) => {{
        let range: LineRange = $range;
        let (start, len) = (range.start().as_u32(), range.len());
        range.unrolled(|lines| match lines {
            16 => line_loop!(@unrolled start, len, concat!("c7, c", $crm, ", ", $opc2), 16),
            8 => line_loop!(@unrolled start, len, concat!("c7, c", $crm, ", ", $opc2), 8),
            4 => line_loop!(@unrolled start, len, concat!("c7, c", $crm, ", ", $opc2), 4),
            1 => line_loop!(@unrolled start, len, concat!("c7, c", $crm, ", ", $opc2), 1),
            _ => {}
        })
    }};
}

/// With the feature `cache-check`: one line operation per loop iteration,
/// each preceded by its two marker loads (the line's address, as for an
/// `MCR` by [`mcr!`]), so the observer sees every line exactly.
#[cfg(feature = "cache-check")]
macro_rules! line_loop {
    ($range:expr, $crm:literal, $opc2:literal) => {{
        let range: LineRange = $range;
        let (start, len) = (range.start().as_u32(), range.len());
        range.unrolled(|lines| {
            if lines != 0 {
                // SAFETY: as for the loop without the feature: line
                // maintenance by MVA never faults and changes only cache
                // state, the caller's contract covers the operation, and
                // `len` is a non-zero multiple of the line (`LineRange`'s
                // invariant) so the loop ends exactly at the end of the
                // range. The byte loads read the marker window, mapped for
                // as long as the feature is on (see `emit`).
                unsafe {
                    asm!(
                        "2:",
                        "ldrb {t}, [{b0}, {a}, lsr #22]",
                        "mov {t}, {a}, lsl #10",
                        "ldrb {t}, [{b1}, {t}, lsr #10]",
                        concat!("mcr p15, 0, {a}, c7, c", $crm, ", ", $opc2),
                        "add {a}, {a}, #{line}",
                        "cmp {a}, {end}",
                        "bne 2b",
                        a = inout(reg) start => _,
                        end = in(reg) start.wrapping_add(len),
                        t = out(reg) _,
                        b0 = in(reg) first_base(cp15_key(false, 7, $crm, $opc2)),
                        b1 = in(reg) SECOND_BASE,
                        line = const LINE,
                        options(nostack)
                    )
                }
            }
        })
    }};
}

impl Cp15 for HwCp15 {
    #[inline(always)]
    fn read(&self, reg: Cp15Reg) -> u32 {
        match reg {
            // ID registers never change: the compiler may treat them as pure.
            Cp15Reg::Midr => mrc_id!(0, 0, 0),
            Cp15Reg::CacheType => mrc_id!(0, 0, 1),
            Cp15Reg::TcmStatus => mrc_id!(0, 0, 2),
            // The others change with writes and faults: keep them ordered.
            Cp15Reg::Sctlr => mrc!(1, 0, 0),
            Cp15Reg::Ttbr => mrc!(2, 0, 0),
            Cp15Reg::Dacr => mrc!(3, 0, 0),
            Cp15Reg::Dfsr => mrc!(5, 0, 0),
            Cp15Reg::Ifsr => mrc!(5, 0, 1),
            Cp15Reg::Far => mrc!(6, 0, 0),
            Cp15Reg::DtcmRegion => mrc!(9, 1, 0),
            Cp15Reg::ItcmRegion => mrc!(9, 1, 1),
            Cp15Reg::Fcseidr => mrc!(13, 0, 0),
        }
    }

    #[inline(always)]
    unsafe fn write(&mut self, reg: Cp15Reg, value: u32) {
        match reg {
            // Read-only registers ignore writes (documented on `Cp15::write`);
            // an MCR to them would be unpredictable, so none is issued.
            Cp15Reg::Midr | Cp15Reg::CacheType | Cp15Reg::TcmStatus => {}
            Cp15Reg::Sctlr => mcr!(1, 0, 0, value),
            Cp15Reg::Ttbr => mcr!(2, 0, 0, value),
            Cp15Reg::Dacr => mcr!(3, 0, 0, value),
            Cp15Reg::Dfsr => mcr!(5, 0, 0, value),
            Cp15Reg::Ifsr => mcr!(5, 0, 1, value),
            Cp15Reg::Far => mcr!(6, 0, 0, value),
            Cp15Reg::DtcmRegion => mcr!(9, 1, 0, value),
            Cp15Reg::ItcmRegion => mcr!(9, 1, 1, value),
            Cp15Reg::Fcseidr => mcr!(13, 0, 0, value),
        }
    }

    #[inline(always)]
    unsafe fn op(&mut self, op: Cp15Op, value: u32) {
        match op {
            Cp15Op::InvalidateIdCache => mcr!(7, 7, 0, value),
            Cp15Op::InvalidateICache => mcr!(7, 5, 0, value),
            Cp15Op::InvalidateICacheLine => mcr!(7, 5, 1, value),
            Cp15Op::InvalidateDCache => mcr!(7, 6, 0, value),
            Cp15Op::InvalidateDCacheLine => mcr!(7, 6, 1, value),
            Cp15Op::CleanDCacheLine => mcr!(7, 10, 1, value),
            Cp15Op::CleanInvalidateDCacheLine => mcr!(7, 14, 1, value),
            Cp15Op::DrainWriteBuffer => mcr!(7, 10, 4, value),
            Cp15Op::AllocateDCacheLine => mcr!(7, 2, 5, value),
            Cp15Op::InvalidateTlb => mcr!(8, 7, 0, value),
            Cp15Op::InvalidateTlbEntry => mcr!(8, 7, 1, value),
            Cp15Op::InvalidateITlb => mcr!(8, 5, 0, value),
            Cp15Op::InvalidateITlbEntry => mcr!(8, 5, 1, value),
            Cp15Op::InvalidateDTlb => mcr!(8, 6, 0, value),
            Cp15Op::InvalidateDTlbEntry => mcr!(8, 6, 1, value),
        }
    }

    #[inline(always)]
    unsafe fn op_lines(&mut self, op: LineOp, range: LineRange) {
        match op {
            LineOp::CleanD => line_loop!(range, 10, 1),
            LineOp::InvalidateD => line_loop!(range, 6, 1),
            LineOp::CleanInvalidateD => line_loop!(range, 14, 1),
            LineOp::InvalidateI => line_loop!(range, 5, 1),
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
