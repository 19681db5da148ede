//! Cache, write-buffer and TLB maintenance.
//!
//! [`CacheMaintenance`] is what the FASS and TCM code needs from a CPU. Each
//! CPU family implements it over a [`Cp15`](crate::regs::Cp15) backend:
//! [`Arm926`] (test-and-clean loops), [`XScale`] (line allocation into a
//! [`CleanRegion`]) and [`Sa1100`] (reading a flush region). The `armv5-sim`
//! model implements it directly, so the same code runs on the model.
//!
//! [`RangeMaintenance`] does the line operations over a whole
//! [`LineRange`]: one unrolled `MCR` loop per range on hardware (see
//! [below](#ranges-of-lines)).
//!
//! # Ranges of lines
//! A [`LineRange`] is whole 32-byte lines ([`LINE`]), checked when made
//! ([`LineRange::new`]). [`RangeMaintenance`] cleans, invalidates or cleans
//! and invalidates its D-cache lines, or invalidates its I-cache lines,
//! through [`Cp15::op_lines`](crate::regs::Cp15::op_lines): with
//! `HwCp15` an unrolled loop of `MCR` + `ADD` pairs; with any other
//! backend one operation per line, which the mock records line by line.

/// Implements [`Cp15`](crate::regs::Cp15) for a maintenance wrapper by
/// forwarding every call to its backend field, so one value serves as both
/// the registers and the maintenance of a CPU.
macro_rules! delegate_cp15 {
    ([$($gen:tt)*] $ty:ty, $field:ident) => {
        impl<$($gen)*> $crate::regs::Cp15 for $ty {
            #[inline(always)]
            fn read(&self, reg: $crate::regs::Cp15Reg) -> u32 {
                self.$field.read(reg)
            }

            #[inline(always)]
            unsafe fn write(&mut self, reg: $crate::regs::Cp15Reg, value: u32) {
                // SAFETY: forwarded; the caller upholds `Cp15::write`'s contract.
                unsafe { self.$field.write(reg, value) }
            }

            #[inline(always)]
            unsafe fn op(&mut self, op: $crate::regs::Cp15Op, value: u32) {
                // SAFETY: forwarded; the caller upholds `Cp15::op`'s contract.
                unsafe { self.$field.op(op, value) }
            }

            #[inline(always)]
            unsafe fn op_lines(
                &mut self,
                op: $crate::maint::LineOp,
                range: $crate::maint::LineRange,
            ) {
                // SAFETY: forwarded; the caller upholds `Cp15::op_lines`'s contract.
                unsafe { self.$field.op_lines(op, range) }
            }

            #[inline(always)]
            fn test_clean_invalidate_dcache(&mut self) -> bool {
                self.$field.test_clean_invalidate_dcache()
            }

            #[inline(always)]
            fn test_clean_dcache(&mut self) -> bool {
                self.$field.test_clean_dcache()
            }
        }
    };
}

mod arm926;
mod clean_region;
mod lines;
mod sa1100;
mod xscale;

pub use arm926::Arm926;
pub use clean_region::{CleanRegion, CleanRegionError};
pub use lines::{LineOp, LineRange, LineRangeError, Lines, RangeMaintenance, LINE};
pub use sa1100::{FlushRead, Sa1100, VolatileFlushRead};
pub use xscale::XScale;

use crate::addr::ModifiedVirtAddr;

/// Tells the cache-check observer `key` with `value` (see
/// [`crate::marker`]), for what a whole-cache clean does outside one CP15
/// operation: the end of a test-and-clean loop, the claim that a clean by
/// reads or line allocations left no dirty line.
///
/// Emitted only with the feature `cache-check` on bare-metal ARM, whatever
/// the backend: a kernel built with the feature maps the marker window.
/// Elsewhere, nothing.
#[inline(always)]
pub(crate) fn note(key: crate::marker::Key, value: u32) {
    #[cfg(all(feature = "cache-check", target_arch = "arm", target_os = "none"))]
    crate::regs::hw_emit(key, value);
    #[cfg(not(all(feature = "cache-check", target_arch = "arm", target_os = "none")))]
    let _ = (key, value);
}

/// The marker of a test-and-clean loop that has ended (`MRC c7, <crm>, 3`).
#[inline(always)]
pub(crate) const fn test_clean_key(crm: u8) -> crate::marker::Key {
    crate::marker::Key::Cp15 {
        read: true,
        crn: 7,
        crm,
        opc2: 3,
    }
}

/// The distance between line operations that covers every line of a cache
/// whose lines are `line` bytes: `line` itself if it is a power of two of at
/// least a word, otherwise one word (every line is then visited, several
/// times over). Guards the loops below against an implementation whose
/// [`CacheMaintenance::DCACHE_LINE`] is zero or odd.
#[inline]
#[must_use]
pub(crate) const fn line_step(line: u32) -> u32 {
    if line.is_power_of_two() && line >= 4 {
        line
    } else {
        4
    }
}

/// Cache, write-buffer and TLB maintenance of one CPU.
///
/// Whole-cache operations that would discard dirty data are not offered
/// without a clean: only [`CacheMaintenance::invalidate_dcache_line`] can
/// lose writes, and it is `unsafe`.
pub trait CacheMaintenance {
    /// D-cache line length in bytes (32 on ARM926EJ-S, XScale and SA-1100):
    /// a power of two, at most the real line length. (Range loops in this
    /// crate step by one word if it is not a power of two of at least 4.)
    const DCACHE_LINE: u32;

    /// Cleans (writes back) and invalidates the whole D-cache, then drains the write buffer.
    fn clean_invalidate_dcache(&mut self);
    /// Invalidates the whole I-cache (it never holds dirty data).
    fn invalidate_icache(&mut self);
    /// Cleans the D-cache line holding `mva`, if present.
    fn clean_dcache_line(&mut self, mva: ModifiedVirtAddr);
    /// Cleans and invalidates the D-cache line holding `mva`, if present.
    fn clean_invalidate_dcache_line(&mut self, mva: ModifiedVirtAddr);
    /// Invalidates the D-cache line holding `mva` without writing it back.
    ///
    /// # Safety
    /// Any write to that line not yet written back is lost; the caller must
    /// know the line holds no data it needs.
    unsafe fn invalidate_dcache_line(&mut self, mva: ModifiedVirtAddr);
    /// Invalidates the I-cache line holding `mva`, if present.
    fn invalidate_icache_line(&mut self, mva: ModifiedVirtAddr);
    /// Drains the write buffer: every buffered write has reached memory on return.
    fn drain_write_buffer(&mut self);
    /// Invalidates every I- and D-TLB entry.
    fn invalidate_tlb(&mut self);
    /// Invalidates the I- and D-TLB entries that translate `mva`.
    fn invalidate_tlb_entry(&mut self, mva: ModifiedVirtAddr);

    /// Cleans every D-cache line overlapping `[mva, mva + len)`, then drains the
    /// write buffer: what the hardware table walker needs after a table write.
    fn clean_dcache_range(&mut self, mva: ModifiedVirtAddr, len: u32) {
        let line = line_step(Self::DCACHE_LINE);
        let start = mva.as_u32() & !(line - 1);
        let end = mva.as_u32().saturating_add(len);
        let mut a = start;
        while a < end {
            self.clean_dcache_line(ModifiedVirtAddr::new(a));
            a = match a.checked_add(line) {
                Some(n) => n,
                None => break,
            };
        }
        self.drain_write_buffer();
    }

    /// Cleans and invalidates the whole D-cache, invalidates the I-cache and
    /// the TLB: the full flush a naive context switch (or a dirty domain
    /// eviction) performs.
    fn flush_all(&mut self) {
        self.clean_invalidate_dcache();
        self.invalidate_icache();
        self.invalidate_tlb();
    }
}

/// The maintenance of a CPU lent by exclusive reference: every method,
/// including the provided ones, goes to the borrowed value (so its own
/// overrides are kept).
impl<T: CacheMaintenance + ?Sized> CacheMaintenance for &mut T {
    const DCACHE_LINE: u32 = T::DCACHE_LINE;
    #[inline(always)]
    fn clean_invalidate_dcache(&mut self) {
        (**self).clean_invalidate_dcache();
    }
    #[inline(always)]
    fn invalidate_icache(&mut self) {
        (**self).invalidate_icache();
    }
    #[inline(always)]
    fn clean_dcache_line(&mut self, mva: ModifiedVirtAddr) {
        (**self).clean_dcache_line(mva);
    }
    #[inline(always)]
    fn clean_invalidate_dcache_line(&mut self, mva: ModifiedVirtAddr) {
        (**self).clean_invalidate_dcache_line(mva);
    }
    #[inline(always)]
    unsafe fn invalidate_dcache_line(&mut self, mva: ModifiedVirtAddr) {
        // SAFETY: the same cache; the caller's promise is passed on as it is.
        unsafe { (**self).invalidate_dcache_line(mva) }
    }
    #[inline(always)]
    fn invalidate_icache_line(&mut self, mva: ModifiedVirtAddr) {
        (**self).invalidate_icache_line(mva);
    }
    #[inline(always)]
    fn drain_write_buffer(&mut self) {
        (**self).drain_write_buffer();
    }
    #[inline(always)]
    fn invalidate_tlb(&mut self) {
        (**self).invalidate_tlb();
    }
    #[inline(always)]
    fn invalidate_tlb_entry(&mut self, mva: ModifiedVirtAddr) {
        (**self).invalidate_tlb_entry(mva);
    }
    #[inline(always)]
    fn clean_dcache_range(&mut self, mva: ModifiedVirtAddr, len: u32) {
        (**self).clean_dcache_range(mva, len);
    }
    #[inline(always)]
    fn flush_all(&mut self) {
        (**self).flush_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::irq::{self, IrqState};
    use crate::regs::{Cp15, Cp15Op, Cp15Reg, MockCp15};
    use std::vec::Vec;

    /// Records the interrupt masks at every maintenance operation.
    struct IrqSpy(MockCp15, Vec<(Cp15Op, IrqState)>);

    impl Cp15 for IrqSpy {
        fn read(&self, reg: Cp15Reg) -> u32 {
            self.0.read(reg)
        }
        unsafe fn write(&mut self, reg: Cp15Reg, value: u32) {
            // SAFETY: mock backend.
            unsafe { self.0.write(reg, value) }
        }
        unsafe fn op(&mut self, op: Cp15Op, value: u32) {
            self.1.push((op, irq::current()));
            // SAFETY: mock backend.
            unsafe { self.0.op(op, value) }
        }
        fn test_clean_invalidate_dcache(&mut self) -> bool {
            true
        }
        fn test_clean_dcache(&mut self) -> bool {
            true
        }
    }

    /// Regression (issue 12, item 6): XScale and SA-1100 "clean and
    /// invalidate line" is two operations; an interrupt between them could
    /// dirty the line again and the invalidate would discard that write.
    /// Interrupts are now masked across the pair.
    #[test]
    fn split_clean_and_invalidate_runs_with_interrupts_masked() {
        let _serial = irq::tests::LOCK.lock().unwrap_or_else(|e| e.into_inner());
        let region = CleanRegion::new(ModifiedVirtAddr::new(0xE000_0000), 0x2000, 32).unwrap();
        // SAFETY: mock backend; nothing is mapped or touched.
        let mut x = unsafe { XScale::new(IrqSpy(MockCp15::pxa255(), Vec::new()), region) };
        x.clean_invalidate_dcache_line(ModifiedVirtAddr::new(0x1234));
        // SAFETY: as above.
        let mut s = unsafe { Sa1100::new(IrqSpy(MockCp15::sa1110(), Vec::new()), |_| {}, region) };
        s.clean_invalidate_dcache_line(ModifiedVirtAddr::new(0x1234));
        let (sc, _) = s.into_parts();
        for log in [&x.into_inner().1, &sc.1] {
            assert_eq!(
                log.as_slice(),
                &[
                    (Cp15Op::CleanDCacheLine, IrqState::MASKED),
                    (Cp15Op::InvalidateDCacheLine, IrqState::MASKED)
                ]
            );
        }
        assert_eq!(irq::current(), IrqState::ENABLED, "masks restored");
    }
}
