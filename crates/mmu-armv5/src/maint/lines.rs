//! Cache maintenance over a range of whole lines.
//!
//! Cleaning or discarding a page one [`CacheMaintenance`] call per line
//! costs more in calls than in maintenance. [`RangeMaintenance`] does a
//! [`LineRange`] in one go: on bare-metal ARM, through
//! [`HwCp15`](crate::regs::HwCp15)'s [`Cp15::op_lines`], an unrolled loop
//! of `MCR` + `ADD` pairs (16, 8 or 4 lines per iteration when the length
//! is a multiple of that many lines, else one), whose exit test is an exact
//! compare so that a range ending at 4 GiB works; on any other backend, one
//! [`Cp15::op`] per line, lowest address first, so the mock records every
//! line.
//!
//! Every CPU this crate supports has 32-byte D- and I-cache lines
//! ([`LINE`]): the ARM926EJ-S (its cache type register reports 8-word
//! lines for every cache size), the XScale and the SA-1100.
//!
//! None of the range operations drains the write buffer; call
//! [`CacheMaintenance::drain_write_buffer`] afterwards where the hardware
//! table walker or another bus master must see the data.

use core::fmt;
use core::iter::FusedIterator;

use super::{Arm926, CacheMaintenance, FlushRead, Sa1100, XScale};
use crate::addr::ModifiedVirtAddr;
use crate::regs::{Cp15, Cp15Op};

/// Cache line length in bytes of every supported CPU (ARM926EJ-S, XScale,
/// SA-1100): the unit of a [`LineRange`].
pub const LINE: u32 = 32;

// The CPU wrappers agree with the range unit.
const _: () = assert!(Arm926::<crate::regs::MockCp15>::LINE == LINE);
const _: () = assert!(XScale::<crate::regs::MockCp15>::LINE == LINE);
const _: () = assert!(Sa1100::<crate::regs::MockCp15, fn(ModifiedVirtAddr)>::LINE == LINE);
const _: () = assert!(<Arm926<crate::regs::MockCp15> as CacheMaintenance>::DCACHE_LINE == LINE);

/// Why a [`LineRange`] could not be made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum LineRangeError {
    /// The start is not at a line boundary (a multiple of [`LINE`]).
    MisalignedStart(ModifiedVirtAddr),
    /// The length is not a whole number of lines.
    PartialLine(u32),
    /// The range runs past the top of the address space (4 GiB).
    PastTop,
}

impl fmt::Display for LineRangeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            LineRangeError::MisalignedStart(a) => {
                write!(
                    f,
                    "{:#010x} is not at a {LINE}-byte line boundary",
                    a.as_u32()
                )
            }
            LineRangeError::PartialLine(len) => {
                write!(f, "{len} bytes is not a whole number of {LINE}-byte lines")
            }
            LineRangeError::PastTop => f.write_str("the range runs past 4 GiB"),
        }
    }
}

impl core::error::Error for LineRangeError {}

/// `[start, start + len)` in modified virtual addresses, made of whole
/// cache lines: `start` and `len` are multiples of [`LINE`] and the range
/// ends at 4 GiB at the latest.
///
/// The hardware loop of [`Cp15::op_lines`] relies on these three facts to
/// stop exactly at the end (it compares for equality), which is why the
/// unchecked constructor is `unsafe`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct LineRange {
    start: u32,
    len: u32,
}

impl LineRange {
    /// The empty range (at address 0).
    pub const EMPTY: LineRange = LineRange { start: 0, len: 0 };

    /// The lines of `[start, start + len)`.
    ///
    /// # Errors
    /// [`LineRangeError::MisalignedStart`] or [`LineRangeError::PartialLine`]
    /// if `start` or `len` is not a multiple of [`LINE`];
    /// [`LineRangeError::PastTop`] if the range ends above 4 GiB.
    #[inline]
    pub const fn new(start: ModifiedVirtAddr, len: u32) -> Result<LineRange, LineRangeError> {
        let s = start.as_u32();
        if !s.is_multiple_of(LINE) {
            Err(LineRangeError::MisalignedStart(start))
        } else if !len.is_multiple_of(LINE) {
            Err(LineRangeError::PartialLine(len))
        } else if s != 0 && len > s.wrapping_neg() {
            Err(LineRangeError::PastTop)
        } else {
            Ok(LineRange { start: s, len })
        }
    }

    /// The lines of `[start, start + len)`, unchecked: the fast path for
    /// callers that already hold the guarantees, such as a kernel
    /// implementing `spm`'s line maintenance, whose every call passes whole
    /// lines inside one 4 KiB frame.
    ///
    /// # Safety
    /// `start` and `len` are multiples of [`LINE`] and
    /// `start + len <= 2^32`. Otherwise the hardware loop of
    /// [`Cp15::op_lines`] does not stop at the end of the range: it runs on
    /// through the address space, which for an invalidation discards data
    /// of unrelated lines.
    #[inline(always)]
    #[must_use]
    pub const unsafe fn new_unchecked(start: ModifiedVirtAddr, len: u32) -> LineRange {
        debug_assert!(start.as_u32().is_multiple_of(LINE) && len.is_multiple_of(LINE));
        debug_assert!(start.as_u32() as u64 + len as u64 <= 1 << 32);
        LineRange {
            start: start.as_u32(),
            len,
        }
    }

    /// The first byte of the range.
    #[inline(always)]
    #[must_use]
    pub const fn start(self) -> ModifiedVirtAddr {
        ModifiedVirtAddr::new(self.start)
    }

    /// The length in bytes (a multiple of [`LINE`]).
    #[inline(always)]
    #[must_use]
    pub const fn len(self) -> u32 {
        self.len
    }

    /// Whether the range has no line.
    #[inline]
    #[must_use]
    pub const fn is_empty(self) -> bool {
        self.len == 0
    }

    /// The number of lines.
    #[inline]
    #[must_use]
    pub const fn lines(self) -> u32 {
        self.len / LINE
    }

    /// The address of every line, lowest first.
    #[inline]
    pub const fn iter(self) -> Lines {
        Lines {
            next: self.start,
            left: self.lines(),
        }
    }

    /// Calls `by` with the lines per iteration of the unrolled hardware
    /// loop: 16, 8 or 4 when the length is a multiple of that many lines,
    /// else 1; 0 for an empty range. Each branch passes a literal, so after
    /// inlining `by`'s own `match` on it folds away.
    #[inline(always)]
    #[cfg_attr(
        not(any(test, all(target_arch = "arm", target_os = "none"))),
        allow(dead_code, reason = "used by the hardware backend and the tests")
    )]
    pub(crate) fn unrolled<R>(self, by: impl FnOnce(u32) -> R) -> R {
        let len = self.len;
        if len == 0 {
            by(0)
        } else if len.is_multiple_of(16 * LINE) {
            by(16)
        } else if len.is_multiple_of(8 * LINE) {
            by(8)
        } else if len.is_multiple_of(4 * LINE) {
            by(4)
        } else {
            by(1)
        }
    }
}

impl IntoIterator for LineRange {
    type Item = ModifiedVirtAddr;
    type IntoIter = Lines;

    #[inline]
    fn into_iter(self) -> Lines {
        self.iter()
    }
}

/// The line addresses of a [`LineRange`], lowest first ([`LineRange::iter`]).
#[derive(Clone, Debug)]
pub struct Lines {
    next: u32,
    left: u32,
}

impl Iterator for Lines {
    type Item = ModifiedVirtAddr;

    #[inline]
    fn next(&mut self) -> Option<ModifiedVirtAddr> {
        if self.left == 0 {
            return None;
        }
        let a = self.next;
        self.left -= 1;
        // Wraps to 0 only after the line ending at 4 GiB, the last one.
        self.next = a.wrapping_add(LINE);
        Some(ModifiedVirtAddr::new(a))
    }

    #[inline]
    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left as usize, Some(self.left as usize))
    }
}

impl ExactSizeIterator for Lines {}
impl FusedIterator for Lines {}

/// A cache operation on one line by MVA, as [`Cp15::op_lines`] repeats it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum LineOp {
    /// Clean one D-cache line (`c7, 0, c10, 1`; every supported CPU).
    CleanD,
    /// Invalidate one D-cache line without writing it back (`c7, 0, c6, 1`;
    /// every supported CPU). Discards dirty data.
    InvalidateD,
    /// Clean and invalidate one D-cache line (`c7, 0, c14, 1`; ARM926EJ-S
    /// only: XScale and SA-1100 clean, then invalidate).
    CleanInvalidateD,
    /// Invalidate one I-cache line (`c7, 0, c5, 1`; ARM926EJ-S and XScale,
    /// not the SA-1100).
    InvalidateI,
}

impl LineOp {
    /// The single-line [`Cp15Op`] this repeats.
    #[inline]
    #[must_use]
    pub const fn cp15_op(self) -> Cp15Op {
        match self {
            LineOp::CleanD => Cp15Op::CleanDCacheLine,
            LineOp::InvalidateD => Cp15Op::InvalidateDCacheLine,
            LineOp::CleanInvalidateD => Cp15Op::CleanInvalidateDCacheLine,
            LineOp::InvalidateI => Cp15Op::InvalidateICacheLine,
        }
    }
}

/// Cache maintenance over a [`LineRange`], per CPU.
///
/// The provided methods call the matching [`CacheMaintenance`] line
/// operation once per line; the CPU wrappers of this crate override them
/// with [`Cp15::op_lines`] (one unrolled `MCR` loop on hardware) where
/// their CPU has the operation. None of them drains the write buffer.
///
/// ```
/// use mmu_armv5::maint::{Arm926, LineRange, RangeMaintenance};
/// use mmu_armv5::regs::{Cp15Event, Cp15Op, MockCp15};
/// use mmu_armv5::ModifiedVirtAddr;
///
/// // Three lines from 0x8000: on hardware one unrolled loop of `MCR`s.
/// let lines = LineRange::new(ModifiedVirtAddr::new(0x8000), 96).unwrap();
/// assert_eq!(lines.lines(), 3);
/// let mut cpu = Arm926::new(MockCp15::arm926());
/// cpu.clean_dcache_lines(lines);
/// assert_eq!(
///     cpu.cp15().events(),
///     &[
///         Cp15Event::Op(Cp15Op::CleanDCacheLine, 0x8000),
///         Cp15Event::Op(Cp15Op::CleanDCacheLine, 0x8020),
///         Cp15Event::Op(Cp15Op::CleanDCacheLine, 0x8040),
///     ]
/// );
/// // Not a whole number of lines: refused, nothing is issued.
/// assert!(LineRange::new(ModifiedVirtAddr::new(0x8000), 40).is_err());
/// ```
pub trait RangeMaintenance: CacheMaintenance {
    /// Cleans every D-cache line of `range`.
    fn clean_dcache_lines(&mut self, range: LineRange) {
        for a in range {
            self.clean_dcache_line(a);
        }
    }

    /// Invalidates every D-cache line of `range` without writing it back.
    ///
    /// # Safety
    /// As [`CacheMaintenance::invalidate_dcache_line`], for every line of
    /// `range`: no line of it holds data anyone needs.
    unsafe fn invalidate_dcache_lines(&mut self, range: LineRange) {
        for a in range {
            // SAFETY: the caller's promise covers every line of the range.
            unsafe { self.invalidate_dcache_line(a) };
        }
    }

    /// Cleans and invalidates every D-cache line of `range`.
    fn clean_invalidate_dcache_lines(&mut self, range: LineRange) {
        for a in range {
            self.clean_invalidate_dcache_line(a);
        }
    }

    /// Invalidates every I-cache line of `range` (or more: a CPU without
    /// single-line I-cache invalidation invalidates the whole I-cache).
    fn invalidate_icache_lines(&mut self, range: LineRange) {
        for a in range {
            self.invalidate_icache_line(a);
        }
    }
}

/// Range maintenance of a CPU lent by exclusive reference: each range goes
/// to the borrowed value, so its unrolled loops are kept.
impl<T: RangeMaintenance + ?Sized> RangeMaintenance for &mut T {
    #[inline(always)]
    fn clean_dcache_lines(&mut self, range: LineRange) {
        (**self).clean_dcache_lines(range);
    }
    #[inline(always)]
    unsafe fn invalidate_dcache_lines(&mut self, range: LineRange) {
        // SAFETY: the same cache; the caller's promise is passed on as it is.
        unsafe { (**self).invalidate_dcache_lines(range) }
    }
    #[inline(always)]
    fn clean_invalidate_dcache_lines(&mut self, range: LineRange) {
        (**self).clean_invalidate_dcache_lines(range);
    }
    #[inline(always)]
    fn invalidate_icache_lines(&mut self, range: LineRange) {
        (**self).invalidate_icache_lines(range);
    }
}

/// ARM926EJ-S: all four are one hardware loop each.
impl<C: Cp15> RangeMaintenance for Arm926<C> {
    #[inline(always)]
    fn clean_dcache_lines(&mut self, range: LineRange) {
        // SAFETY: cleaning loses no data.
        unsafe { self.cp15_mut().op_lines(LineOp::CleanD, range) }
    }

    #[inline(always)]
    unsafe fn invalidate_dcache_lines(&mut self, range: LineRange) {
        // SAFETY: the caller guarantees no line of the range holds data it needs.
        unsafe { self.cp15_mut().op_lines(LineOp::InvalidateD, range) }
    }

    #[inline(always)]
    fn clean_invalidate_dcache_lines(&mut self, range: LineRange) {
        // SAFETY: every line is written back before it is invalidated.
        unsafe { self.cp15_mut().op_lines(LineOp::CleanInvalidateD, range) }
    }

    #[inline(always)]
    fn invalidate_icache_lines(&mut self, range: LineRange) {
        // SAFETY: the I-cache never holds dirty data.
        unsafe { self.cp15_mut().op_lines(LineOp::InvalidateI, range) }
    }
}

/// XScale: clean, D-invalidate and I-invalidate are hardware loops; clean
/// and invalidate stays the per-line pair with interrupts masked in between
/// ([`CacheMaintenance::clean_invalidate_dcache_line`]), the provided method.
impl<C: Cp15> RangeMaintenance for XScale<C> {
    #[inline(always)]
    fn clean_dcache_lines(&mut self, range: LineRange) {
        // SAFETY: cleaning loses no data.
        unsafe { self.cp15_mut().op_lines(LineOp::CleanD, range) }
    }

    #[inline(always)]
    unsafe fn invalidate_dcache_lines(&mut self, range: LineRange) {
        // SAFETY: the caller guarantees no line of the range holds data it needs.
        unsafe { self.cp15_mut().op_lines(LineOp::InvalidateD, range) }
    }

    #[inline(always)]
    fn invalidate_icache_lines(&mut self, range: LineRange) {
        // SAFETY: the I-cache never holds dirty data.
        unsafe { self.cp15_mut().op_lines(LineOp::InvalidateI, range) }
    }
}

/// SA-1100: clean and D-invalidate are hardware loops; clean and invalidate
/// is the per-line pair (the provided method); the I-cache has no line
/// operation, so a non-empty range invalidates the whole I-cache once.
impl<C: Cp15, R: FlushRead> RangeMaintenance for Sa1100<C, R> {
    #[inline(always)]
    fn clean_dcache_lines(&mut self, range: LineRange) {
        // SAFETY: cleaning loses no data.
        unsafe { self.cp15_mut().op_lines(LineOp::CleanD, range) }
    }

    #[inline(always)]
    unsafe fn invalidate_dcache_lines(&mut self, range: LineRange) {
        // SAFETY: the caller guarantees no line of the range holds data it needs.
        unsafe { self.cp15_mut().op_lines(LineOp::InvalidateD, range) }
    }

    #[inline]
    fn invalidate_icache_lines(&mut self, range: LineRange) {
        if !range.is_empty() {
            self.invalidate_icache();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::maint::CleanRegion;
    use crate::regs::{Cp15Event, MockCp15};
    use proptest::prelude::*;
    use std::vec::Vec;

    fn mva(a: u32) -> ModifiedVirtAddr {
        ModifiedVirtAddr::new(a)
    }

    fn ops(op: Cp15Op, addrs: impl IntoIterator<Item = u32>) -> Vec<Cp15Event> {
        addrs.into_iter().map(|a| Cp15Event::Op(op, a)).collect()
    }

    #[test]
    fn only_whole_lines_below_4_gib_make_a_range() {
        assert_eq!(
            LineRange::new(mva(0x1010), 64),
            Err(LineRangeError::MisalignedStart(mva(0x1010)))
        );
        assert_eq!(
            LineRange::new(mva(0x1000), 33),
            Err(LineRangeError::PartialLine(33))
        );
        assert_eq!(
            LineRange::new(mva(0xFFFF_FFE0), 64),
            Err(LineRangeError::PastTop)
        );
        // Ending exactly at 4 GiB is fine, and so is the whole space but one line.
        let top = LineRange::new(mva(0xFFFF_FFC0), 64).unwrap();
        assert_eq!(
            (top.start(), top.len(), top.lines()),
            (mva(0xFFFF_FFC0), 64, 2)
        );
        assert_eq!(
            LineRange::new(mva(0), u32::MAX - 31).unwrap().lines(),
            (1 << 27) - 1
        );
        let empty = LineRange::new(mva(0x2000), 0).unwrap();
        assert!(empty.is_empty() && empty.iter().next().is_none());
        assert!(LineRange::EMPTY.is_empty());
    }

    #[test]
    fn the_errors_say_what_is_wrong() {
        use std::string::ToString;
        assert_eq!(
            LineRangeError::MisalignedStart(mva(4)).to_string(),
            "0x00000004 is not at a 32-byte line boundary"
        );
        assert_eq!(
            LineRangeError::PartialLine(40).to_string(),
            "40 bytes is not a whole number of 32-byte lines"
        );
        assert_eq!(
            LineRangeError::PastTop.to_string(),
            "the range runs past 4 GiB"
        );
    }

    #[test]
    fn the_lines_of_a_range_ending_at_4_gib_stop_there() {
        let r = LineRange::new(mva(0xFFFF_FFA0), 0x60).unwrap();
        let v: Vec<u32> = r.iter().map(ModifiedVirtAddr::as_u32).collect();
        assert_eq!(v, [0xFFFF_FFA0, 0xFFFF_FFC0, 0xFFFF_FFE0]);
        assert_eq!(r.iter().len(), 3);
        let mut it = r.into_iter();
        it.by_ref().for_each(drop);
        assert_eq!(it.next(), None, "fused after the last line");
    }

    #[test]
    fn the_hardware_loop_unrolls_by_the_largest_fitting_block() {
        let by = |len: u32| LineRange::new(mva(0x4000), len).unwrap().unrolled(|n| n);
        assert_eq!(by(0), 0);
        assert_eq!(by(32), 1);
        assert_eq!(by(96), 1);
        assert_eq!(by(128), 4);
        assert_eq!(by(384), 4);
        assert_eq!(by(256), 8);
        assert_eq!(by(768), 8);
        assert_eq!(by(512), 16);
        assert_eq!(by(4096), 16);
        assert_eq!(by(4096 + 32), 1);
    }

    #[test]
    fn each_op_repeats_its_single_line_operation() {
        assert_eq!(LineOp::CleanD.cp15_op(), Cp15Op::CleanDCacheLine);
        assert_eq!(LineOp::InvalidateD.cp15_op(), Cp15Op::InvalidateDCacheLine);
        assert_eq!(
            LineOp::CleanInvalidateD.cp15_op(),
            Cp15Op::CleanInvalidateDCacheLine
        );
        assert_eq!(LineOp::InvalidateI.cp15_op(), Cp15Op::InvalidateICacheLine);
    }

    #[test]
    fn arm926_issues_one_operation_per_line_in_order() {
        let r = LineRange::new(mva(0xC000_1000), 0x80).unwrap();
        let lines = [0xC000_1000, 0xC000_1020, 0xC000_1040, 0xC000_1060];
        let mut h = Arm926::new(MockCp15::arm926());
        h.clean_dcache_lines(r);
        assert_eq!(
            h.cp15_mut().take_events().as_slice(),
            ops(Cp15Op::CleanDCacheLine, lines)
        );
        // SAFETY: mock backend; no data to lose.
        unsafe { h.invalidate_dcache_lines(r) };
        assert_eq!(
            h.cp15_mut().take_events().as_slice(),
            ops(Cp15Op::InvalidateDCacheLine, lines)
        );
        h.clean_invalidate_dcache_lines(r);
        assert_eq!(
            h.cp15_mut().take_events().as_slice(),
            ops(Cp15Op::CleanInvalidateDCacheLine, lines)
        );
        h.invalidate_icache_lines(r);
        assert_eq!(
            h.cp15_mut().take_events().as_slice(),
            ops(Cp15Op::InvalidateICacheLine, lines)
        );
        h.clean_dcache_lines(LineRange::EMPTY);
        assert!(
            h.cp15().events().is_empty(),
            "no drain, nothing for no line"
        );
    }

    #[test]
    fn xscale_and_sa1100_split_or_widen_what_they_lack() {
        let _serial = crate::irq::tests::LOCK
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let region = CleanRegion::new(mva(0xE000_0000), 0x2000, 32).unwrap();
        let r = LineRange::new(mva(0x3000), 0x40).unwrap();
        let pair = |a: u32| {
            [
                Cp15Event::Op(Cp15Op::CleanDCacheLine, a),
                Cp15Event::Op(Cp15Op::InvalidateDCacheLine, a),
            ]
        };
        let split: Vec<Cp15Event> = [0x3000, 0x3020].into_iter().flat_map(pair).collect();

        // SAFETY: mock backend; nothing is mapped or touched.
        let mut x = unsafe { XScale::new(MockCp15::pxa255(), region) };
        x.clean_dcache_lines(r);
        // SAFETY: mock backend; no data to lose.
        unsafe { x.invalidate_dcache_lines(r) };
        x.invalidate_icache_lines(r);
        let mut expect = ops(Cp15Op::CleanDCacheLine, [0x3000, 0x3020]);
        expect.extend(ops(Cp15Op::InvalidateDCacheLine, [0x3000, 0x3020]));
        expect.extend(ops(Cp15Op::InvalidateICacheLine, [0x3000, 0x3020]));
        assert_eq!(x.cp15_mut().take_events().as_slice(), expect);
        x.clean_invalidate_dcache_lines(r);
        assert_eq!(x.cp15_mut().take_events().as_slice(), split);

        let mut reads = 0;
        // SAFETY: as above.
        let mut s = unsafe { Sa1100::new(MockCp15::sa1110(), |_| reads += 1, region) };
        s.clean_dcache_lines(r);
        s.clean_invalidate_dcache_lines(r);
        s.invalidate_icache_lines(r);
        s.invalidate_icache_lines(LineRange::EMPTY);
        let mut expect = ops(Cp15Op::CleanDCacheLine, [0x3000, 0x3020]);
        expect.extend(split);
        expect.push(Cp15Event::Op(Cp15Op::InvalidateICache, 0));
        assert_eq!(s.cp15_mut().take_events().as_slice(), expect);
        drop(s);
        assert_eq!(reads, 0, "no whole-cache clean");
    }

    /// A backend without an `op_lines` of its own (the provided one) and
    /// the per-line provided methods of the trait give the same sequence.
    #[test]
    fn the_provided_methods_and_op_lines_agree() {
        struct PerLine(MockCp15);
        impl CacheMaintenance for PerLine {
            const DCACHE_LINE: u32 = 32;
            fn clean_invalidate_dcache(&mut self) {}
            fn invalidate_icache(&mut self) {}
            fn clean_dcache_line(&mut self, mva: ModifiedVirtAddr) {
                // SAFETY: mock backend.
                unsafe { self.0.op(Cp15Op::CleanDCacheLine, mva.as_u32()) }
            }
            fn clean_invalidate_dcache_line(&mut self, _: ModifiedVirtAddr) {}
            unsafe fn invalidate_dcache_line(&mut self, _: ModifiedVirtAddr) {}
            fn invalidate_icache_line(&mut self, _: ModifiedVirtAddr) {}
            fn drain_write_buffer(&mut self) {}
            fn invalidate_tlb(&mut self) {}
            fn invalidate_tlb_entry(&mut self, _: ModifiedVirtAddr) {}
        }
        impl RangeMaintenance for PerLine {}

        let r = LineRange::new(mva(0x0010_0000), 0x220).unwrap();
        let mut p = PerLine(MockCp15::arm926());
        p.clean_dcache_lines(r);
        let mut h = Arm926::new(MockCp15::arm926());
        h.clean_dcache_lines(r);
        assert_eq!(p.0.events(), h.cp15().events());
        assert_eq!(h.cp15().events().len(), 17);
    }

    proptest! {
        #![proptest_config(crate::testing::proptest_config(256))]
        /// Every line of the range exactly once, in order, whatever the
        /// start and length: what the spm-style per-line loop visits.
        #[test]
        fn a_range_visits_exactly_its_lines(
            start in prop_oneof![any::<u32>(), 0xFFFF_0000u32..=u32::MAX],
            len in 0u32..0x4000,
        ) {
            let (s, l) = (start & !31, len & !31);
            match LineRange::new(mva(s), l) {
                Ok(r) => {
                    prop_assert!(u64::from(s) + u64::from(l) <= 1 << 32);
                    let got: Vec<u32> = r.iter().map(ModifiedVirtAddr::as_u32).collect();
                    let want: Vec<u32> = (0..l / 32).map(|i| s + i * 32).collect();
                    prop_assert_eq!(got, want);
                    let n = r.unrolled(|n| n);
                    prop_assert!(n == 0 || r.lines() % n == 0);
                }
                Err(e) => {
                    prop_assert_eq!(e, LineRangeError::PastTop);
                    prop_assert!(u64::from(s) + u64::from(l) > 1 << 32);
                }
            }
            if start & 31 != 0 {
                prop_assert_eq!(
                    LineRange::new(mva(start), l),
                    Err(LineRangeError::MisalignedStart(mva(start)))
                );
            }
        }
    }
}
