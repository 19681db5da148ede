//! Omission hooks for the cache check (feature `cache-check`, never in a
//! shipped kernel): a kernel built for the check can make `fass` leave one
//! maintenance operation out on purpose, so the check's own tests see that
//! the missing clean is reported.
//!
//! Only one hook: [`Fass::skip_next_recycle_clean`](crate::manager::Fass::skip_next_recycle_clean),
//! the D-cache clean of the next full flush for a recycled dirty domain
//! (the I-cache and TLB invalidations of that flush stay), done by the
//! maintenance wrapper here.

use mmu_armv5::maint::CacheMaintenance;
use mmu_armv5::ModifiedVirtAddr;

/// `S`'s maintenance without the whole D-cache clean and invalidate.
pub(crate) struct SkipClean<'a, S: CacheMaintenance + ?Sized>(pub(crate) &'a mut S);

impl<S: CacheMaintenance + ?Sized> CacheMaintenance for SkipClean<'_, S> {
    const DCACHE_LINE: u32 = S::DCACHE_LINE;
    fn clean_invalidate_dcache(&mut self) {}
    fn invalidate_icache(&mut self) {
        self.0.invalidate_icache();
    }
    fn clean_dcache_line(&mut self, mva: ModifiedVirtAddr) {
        self.0.clean_dcache_line(mva);
    }
    fn clean_invalidate_dcache_line(&mut self, mva: ModifiedVirtAddr) {
        self.0.clean_invalidate_dcache_line(mva);
    }
    unsafe fn invalidate_dcache_line(&mut self, mva: ModifiedVirtAddr) {
        // SAFETY: forwarded; the caller upholds the contract.
        unsafe { self.0.invalidate_dcache_line(mva) }
    }
    fn invalidate_icache_line(&mut self, mva: ModifiedVirtAddr) {
        self.0.invalidate_icache_line(mva);
    }
    fn drain_write_buffer(&mut self) {
        self.0.drain_write_buffer();
    }
    fn invalidate_tlb(&mut self) {
        self.0.invalidate_tlb();
    }
    fn invalidate_tlb_entry(&mut self, mva: ModifiedVirtAddr) {
        self.0.invalidate_tlb_entry(mva);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mmu_armv5::maint::Arm926;
    use mmu_armv5::regs::{Cp15Event, Cp15Op, MockCp15};

    #[test]
    fn the_skip_keeps_the_rest_of_the_flush() {
        let mut m = Arm926::new(MockCp15::arm926());
        SkipClean(&mut m).flush_all();
        assert_eq!(
            m.cp15().events(),
            &[
                Cp15Event::Op(Cp15Op::InvalidateICache, 0),
                Cp15Event::Op(Cp15Op::InvalidateTlb, 0)
            ]
        );
    }
}
