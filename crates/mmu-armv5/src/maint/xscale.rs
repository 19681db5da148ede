//! Intel XScale cache, write-buffer and TLB maintenance.
//!
//! XScale has no "clean the whole D-cache" operation and no test-and-clean.
//! [`XScale::clean_invalidate_dcache`] instead allocates (`c7, c2, 5`, no
//! line fill) one cache size of lines in a reserved [`CleanRegion`]: each
//! allocation evicts a line, writing it back if dirty, so afterwards the
//! cache holds only clean-region lines and every other line has reached
//! memory. Successive cleans alternate between the region's two halves. No
//! invalidate follows: the clean-region lines are harmless and a whole-cache
//! invalidate could discard data written in between.
//!
//! The mini-data cache (selected by page attributes and the auxiliary control
//! register) is not covered: memory must not be mapped mini-data-cacheable.
//!
//! XScale lacks the unified operations "clean and invalidate D line"
//! (`c7, c14, 1`) and "invalidate TLB entry" (`c8, c7, 1`): they are issued
//! as clean then invalidate line (`c7, c10, 1` + `c7, c6, 1`, with IRQ and
//! FIQ masked in between, so no handler's write to the line is lost) and as
//! I-TLB entry + D-TLB entry (`c8, c5, 1` + `c8, c6, 1`), as Linux does.

use super::clean_region::CleanRegion;
use crate::addr::ModifiedVirtAddr;
use crate::maint::CacheMaintenance;
use crate::regs::{Cp15, Cp15Op};

/// XScale maintenance over a [`Cp15`] backend and a reserved clean region.
///
/// Also implements [`Cp15`] by delegation.
#[derive(Debug)]
pub struct XScale<C: Cp15> {
    cp15: C,
    region: CleanRegion,
    next_half: u32,
}

impl<C: Cp15> XScale<C> {
    /// D-cache line length: 32 bytes.
    pub const LINE: u32 = 32;

    /// Wraps a backend and the region used to clean the D-cache.
    ///
    /// # Safety
    /// For as long as this value is used, both halves of `region`
    /// (`2 * region.cache_size()` bytes from `region.base()`) are mapped
    /// cacheable and write-back at those MVAs, and nothing else reads or
    /// writes them or the memory behind them: line allocation fills lines
    /// with unspecified data that may later be written back there.
    /// `region.cache_size()` is at least the D-cache size (32 KiB on PXA25x).
    #[inline]
    pub const unsafe fn new(cp15: C, region: CleanRegion) -> XScale<C> {
        XScale {
            cp15,
            region,
            next_half: 0,
        }
    }

    /// The backend.
    #[inline]
    pub const fn cp15(&self) -> &C {
        &self.cp15
    }

    /// The backend, mutably.
    #[inline]
    pub fn cp15_mut(&mut self) -> &mut C {
        &mut self.cp15
    }

    /// Unwraps the backend.
    #[inline]
    pub fn into_inner(self) -> C {
        self.cp15
    }

    /// The clean region.
    #[inline]
    pub const fn region(&self) -> CleanRegion {
        self.region
    }

    #[inline]
    fn line(mva: ModifiedVirtAddr) -> u32 {
        mva.as_u32() & !(Self::LINE - 1)
    }

    #[inline]
    fn safe_op(&mut self, op: Cp15Op, value: u32) {
        // SAFETY: callers pass only operations that lose no data (clean,
        // I-cache and TLB invalidation, drain), or a D-line invalidate right
        // after cleaning that same line.
        unsafe { self.cp15.op(op, value) }
    }
}

impl<C: Cp15> CacheMaintenance for XScale<C> {
    const DCACHE_LINE: u32 = 32;

    fn clean_invalidate_dcache(&mut self) {
        let start = self.region.half(self.next_half).as_u32();
        self.next_half ^= 1;
        let mut off = 0;
        while off < self.region.cache_size() {
            // SAFETY: the constructor's contract makes the clean region
            // mapped, cacheable and reserved, so allocating lines there
            // cannot fault or clobber anything; the evicted lines are
            // written back, not discarded.
            unsafe { self.cp15.op(Cp15Op::AllocateDCacheLine, start + off) };
            off += Self::LINE;
        }
        self.drain_write_buffer();
        // No `Event::AssertClean` for the cache check: each allocation is
        // an `MCR` (reported with the feature `cache-check`), and the
        // allocated lines may themselves be dirty (unspecified data), so
        // "no dirty line" would not hold.
    }

    #[inline]
    fn invalidate_icache(&mut self) {
        self.safe_op(Cp15Op::InvalidateICache, 0);
    }

    #[inline]
    fn clean_dcache_line(&mut self, mva: ModifiedVirtAddr) {
        self.safe_op(Cp15Op::CleanDCacheLine, Self::line(mva));
    }

    #[inline]
    fn clean_invalidate_dcache_line(&mut self, mva: ModifiedVirtAddr) {
        let l = Self::line(mva);
        // Interrupts masked: a handler writing the line between the clean
        // and the invalidate would lose that write.
        crate::irq::without_interrupts(|| {
            self.safe_op(Cp15Op::CleanDCacheLine, l);
            self.safe_op(Cp15Op::InvalidateDCacheLine, l);
        });
    }

    #[inline]
    unsafe fn invalidate_dcache_line(&mut self, mva: ModifiedVirtAddr) {
        // SAFETY: the caller guarantees the line holds no data it needs.
        unsafe { self.cp15.op(Cp15Op::InvalidateDCacheLine, Self::line(mva)) }
    }

    #[inline]
    fn invalidate_icache_line(&mut self, mva: ModifiedVirtAddr) {
        self.safe_op(Cp15Op::InvalidateICacheLine, Self::line(mva));
    }

    #[inline]
    fn drain_write_buffer(&mut self) {
        self.safe_op(Cp15Op::DrainWriteBuffer, 0);
    }

    #[inline]
    fn invalidate_tlb(&mut self) {
        self.safe_op(Cp15Op::InvalidateTlb, 0);
    }

    #[inline]
    fn invalidate_tlb_entry(&mut self, mva: ModifiedVirtAddr) {
        let a = mva.as_u32() & !0x3ff;
        self.safe_op(Cp15Op::InvalidateITlbEntry, a);
        self.safe_op(Cp15Op::InvalidateDTlbEntry, a);
    }
}

delegate_cp15!([C: Cp15] XScale<C>, cp15);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::regs::{Cp15Event, Cp15Reg, MockCp15};
    use std::vec::Vec;

    fn xscale(cache_size: u32) -> XScale<MockCp15> {
        let r = CleanRegion::new(ModifiedVirtAddr::new(0xE000_0000), cache_size, 32).unwrap();
        // SAFETY: mock backend; nothing is mapped or touched.
        unsafe { XScale::new(MockCp15::pxa255(), r) }
    }

    fn allocs(start: u32, n: u32) -> Vec<Cp15Event> {
        (0..n)
            .map(|i| Cp15Event::Op(Cp15Op::AllocateDCacheLine, start + 32 * i))
            .collect()
    }

    #[test]
    fn whole_clean_allocates_one_cache_size_alternating_halves() {
        let mut h = xscale(256);
        h.clean_invalidate_dcache();
        let mut want = allocs(0xE000_0000, 8);
        want.push(Cp15Event::Op(Cp15Op::DrainWriteBuffer, 0));
        assert_eq!(h.cp15_mut().take_events().as_slice(), want.as_slice());
        h.clean_invalidate_dcache();
        let mut want = allocs(0xE000_0100, 8);
        want.push(Cp15Event::Op(Cp15Op::DrainWriteBuffer, 0));
        assert_eq!(h.cp15_mut().take_events().as_slice(), want.as_slice());
        h.clean_invalidate_dcache();
        assert_eq!(
            h.cp15().events().first(),
            Some(&Cp15Event::Op(Cp15Op::AllocateDCacheLine, 0xE000_0000))
        );
        assert!(
            !h.cp15().events().iter().any(|e| matches!(
                e,
                Cp15Event::Op(Cp15Op::InvalidateDCache | Cp15Op::InvalidateIdCache, _)
            )),
            "never a whole-cache invalidate"
        );
    }

    #[test]
    fn pxa255_sized_clean_is_1024_allocations() {
        let mut h = xscale(32 * 1024);
        h.clean_invalidate_dcache();
        let m = h.into_inner();
        assert_eq!(m.events().len() as u32 + m.overflows(), 1024 + 1);
    }

    #[test]
    fn line_and_tlb_operations_use_xscale_encodings() {
        let mut h = xscale(256);
        h.clean_invalidate_dcache_line(ModifiedVirtAddr::new(0x1234));
        h.invalidate_tlb_entry(ModifiedVirtAddr::new(0x0A00_87FF));
        h.clean_dcache_line(ModifiedVirtAddr::new(0x41));
        h.invalidate_icache_line(ModifiedVirtAddr::new(0x8001));
        h.invalidate_icache();
        h.invalidate_tlb();
        assert_eq!(
            h.cp15().events(),
            &[
                Cp15Event::Op(Cp15Op::CleanDCacheLine, 0x1220),
                Cp15Event::Op(Cp15Op::InvalidateDCacheLine, 0x1220),
                Cp15Event::Op(Cp15Op::InvalidateITlbEntry, 0x0A00_8400),
                Cp15Event::Op(Cp15Op::InvalidateDTlbEntry, 0x0A00_8400),
                Cp15Event::Op(Cp15Op::CleanDCacheLine, 0x40),
                Cp15Event::Op(Cp15Op::InvalidateICacheLine, 0x8000),
                Cp15Event::Op(Cp15Op::InvalidateICache, 0),
                Cp15Event::Op(Cp15Op::InvalidateTlb, 0),
            ]
        );
        assert_eq!(h.read(Cp15Reg::Midr), 0x6905_2d00);
    }
}
