//! ARM926EJ-S cache, write-buffer and TLB maintenance.
//!
//! The whole D-cache is cleaned and invalidated with the "test, clean and
//! invalidate" loop (`MRC p15, 0, APSR_nzcv, c7, c14, 3` until Z is set),
//! which writes every dirty line back before discarding it. On hardware the
//! loop ends once each dirty line has been visited; on a misbehaving backend
//! it stops after [`Arm926::MAX_TEST_CLEAN_ITERATIONS`] and counts the
//! event in [`Arm926::test_clean_cap_hits`]. It never falls back to a plain
//! invalidate, which would discard data.
//!
//! Line operations take the MVA with bits \[4:0\] cleared (the TRM's "MVA
//! format" for c7); TLB entry operations take the MVA with bits \[9:0\]
//! cleared (its format for c8).

use crate::addr::ModifiedVirtAddr;
use crate::maint::CacheMaintenance;
use crate::regs::{Cp15, Cp15Op};

/// ARM926EJ-S maintenance over a [`Cp15`] backend.
///
/// Also implements [`Cp15`] by delegation, so one value serves code generic
/// over `H: Cp15 + CacheMaintenance`.
#[derive(Debug)]
pub struct Arm926<C: Cp15> {
    cp15: C,
    cap_hits: u32,
}

impl<C: Cp15> Arm926<C> {
    /// D-cache line length: 32 bytes.
    pub const LINE: u32 = 32;
    /// Upper bound on test-and-clean iterations per whole-cache clean.
    ///
    /// The largest ARM926EJ-S D-cache (128 KiB) has 4096 lines; each
    /// iteration cleans at least one, so hardware never gets near this.
    pub const MAX_TEST_CLEAN_ITERATIONS: u32 = 65536;

    /// Wraps a backend.
    #[inline]
    pub const fn new(cp15: C) -> Arm926<C> {
        Arm926 { cp15, cap_hits: 0 }
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

    /// How many whole-cache cleans stopped at
    /// [`Arm926::MAX_TEST_CLEAN_ITERATIONS`] without the backend reporting
    /// the D-cache clean. Zero on working hardware.
    #[inline]
    pub const fn test_clean_cap_hits(&self) -> u32 {
        self.cap_hits
    }

    /// Cleans the whole D-cache without invalidating it (test-and-clean loop,
    /// `c7, c10, 3`), then drains the write buffer.
    pub fn clean_dcache(&mut self) {
        let mut clean = false;
        for _ in 0..Self::MAX_TEST_CLEAN_ITERATIONS {
            if self.cp15.test_clean_dcache() {
                clean = true;
                break;
            }
        }
        super::note(super::test_clean_key(10), 0);
        if !clean {
            self.cap_hits = self.cap_hits.saturating_add(1);
        }
        self.drain_write_buffer();
    }

    /// Cleans the D-cache line holding the word at `mva` (a table entry
    /// just written, say), passing `mva` to the `MCR` as it is: one
    /// instruction, where [`CacheMaintenance::clean_dcache_line`] first
    /// clears bits \[4:0\].
    ///
    /// The TRM's MVA format for c7 marks those bits should-be-zero; the
    /// line is selected by bits \[31:5\], and Linux's ARM926EJ-S page-table
    /// code cleans a just-written entry by its own (word) address too
    /// (`cpu_arm926_set_pte_ext`). Use it on the hot paths of a kernel that
    /// rewrites descriptors; `clean_dcache_line` everywhere else. No drain.
    #[inline(always)]
    pub fn clean_dcache_entry(&mut self, mva: ModifiedVirtAddr) {
        self.safe_op(Cp15Op::CleanDCacheLine, mva.as_u32());
    }

    #[inline]
    fn line(mva: ModifiedVirtAddr) -> u32 {
        mva.as_u32() & !(Self::LINE - 1)
    }

    #[inline]
    fn tlb_mva(mva: ModifiedVirtAddr) -> u32 {
        mva.as_u32() & !0x3ff
    }

    #[inline]
    fn safe_op(&mut self, op: Cp15Op, value: u32) {
        debug_assert!(!matches!(
            op,
            Cp15Op::InvalidateDCache | Cp15Op::InvalidateDCacheLine | Cp15Op::InvalidateIdCache
        ));
        // SAFETY: only called with operations that lose no data (clean,
        // clean+invalidate, I-cache and TLB invalidation, write-buffer drain).
        unsafe { self.cp15.op(op, value) }
    }
}

impl<C: Cp15> CacheMaintenance for Arm926<C> {
    const DCACHE_LINE: u32 = 32;

    fn clean_invalidate_dcache(&mut self) {
        let mut clean = false;
        for _ in 0..Self::MAX_TEST_CLEAN_ITERATIONS {
            if self.cp15.test_clean_invalidate_dcache() {
                clean = true;
                break;
            }
        }
        super::note(super::test_clean_key(14), 0);
        if !clean {
            self.cap_hits = self.cap_hits.saturating_add(1);
        }
        self.drain_write_buffer();
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
        self.safe_op(Cp15Op::CleanInvalidateDCacheLine, Self::line(mva));
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
        self.safe_op(Cp15Op::InvalidateTlbEntry, Self::tlb_mva(mva));
    }
}

delegate_cp15!([C: Cp15] Arm926<C>, cp15);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::addr::{Domain, FcsePid};
    use crate::regs::Cp15Reg;
    use crate::regs::{Cp15Event, Cp15Ext, Dacr, DomainAccess, MockCp15, DIRTY_FOREVER};
    use proptest::prelude::*;
    use std::vec::Vec;

    const fn tc(clean: bool) -> Cp15Event {
        Cp15Event::TestClean {
            invalidate: true,
            clean,
        }
    }

    fn mva(a: u32) -> ModifiedVirtAddr {
        ModifiedVirtAddr::new(a)
    }

    #[test]
    fn clean_invalidate_loops_until_clean_then_drains() {
        let mut m = MockCp15::arm926();
        m.set_dirty_iterations(3);
        let mut h = Arm926::new(m);
        h.clean_invalidate_dcache();
        assert_eq!(
            h.cp15().events(),
            &[
                tc(false),
                tc(false),
                tc(false),
                tc(true),
                Cp15Event::Op(Cp15Op::DrainWriteBuffer, 0)
            ]
        );
        assert_eq!(h.test_clean_cap_hits(), 0);
        assert_eq!(h.cp15().overflows(), 0);
    }

    #[test]
    fn clean_invalidate_on_a_clean_cache_is_one_test() {
        let mut h = Arm926::new(MockCp15::arm926());
        h.clean_invalidate_dcache();
        assert_eq!(
            h.cp15().events(),
            &[tc(true), Cp15Event::Op(Cp15Op::DrainWriteBuffer, 0)]
        );
    }

    #[test]
    fn clean_without_invalidate_uses_test_and_clean() {
        let mut m = MockCp15::arm926();
        m.set_dirty_iterations(1);
        let mut h = Arm926::new(m);
        h.clean_dcache();
        assert_eq!(
            h.cp15().events(),
            &[
                Cp15Event::TestClean {
                    invalidate: false,
                    clean: false
                },
                Cp15Event::TestClean {
                    invalidate: false,
                    clean: true
                },
                Cp15Event::Op(Cp15Op::DrainWriteBuffer, 0)
            ]
        );
    }

    #[test]
    #[cfg_attr(
        miri,
        ignore = "131,072 mock loop iterations take a minute under Miri; no unsafe code involved"
    )]
    fn a_backend_that_never_reports_clean_hits_the_cap_and_never_invalidates() {
        let mut m = MockCp15::arm926();
        m.set_dirty_iterations(DIRTY_FOREVER);
        let mut h = Arm926::new(m);
        h.clean_invalidate_dcache();
        assert_eq!(h.test_clean_cap_hits(), 1);
        let logged = h.cp15().events().len() as u32 + h.cp15().overflows();
        // Exactly the cap of tests plus the drain; no plain invalidate.
        assert_eq!(logged, Arm926::<MockCp15>::MAX_TEST_CLEAN_ITERATIONS + 1);
        assert!(h
            .cp15()
            .events()
            .iter()
            .all(|e| *e == tc(false) || *e == Cp15Event::Op(Cp15Op::DrainWriteBuffer, 0)));
        h.cp15_mut().clear();
        h.clean_dcache();
        assert_eq!(h.test_clean_cap_hits(), 2);
    }

    #[test]
    fn single_operations_issue_the_right_op_and_operand() {
        let mut h = Arm926::new(MockCp15::arm926());
        h.invalidate_icache();
        h.clean_dcache_line(mva(0xC000_1234));
        h.clean_invalidate_dcache_line(mva(0x0200_003F));
        // SAFETY: mock backend; no data to lose.
        unsafe { h.invalidate_dcache_line(mva(0x40)) };
        h.invalidate_icache_line(mva(0x8001));
        h.drain_write_buffer();
        h.invalidate_tlb();
        h.invalidate_tlb_entry(mva(0x0A00_87FF));
        assert_eq!(
            h.into_inner().events(),
            &[
                Cp15Event::Op(Cp15Op::InvalidateICache, 0),
                Cp15Event::Op(Cp15Op::CleanDCacheLine, 0xC000_1220),
                Cp15Event::Op(Cp15Op::CleanInvalidateDCacheLine, 0x0200_0020),
                Cp15Event::Op(Cp15Op::InvalidateDCacheLine, 0x40),
                Cp15Event::Op(Cp15Op::InvalidateICacheLine, 0x8000),
                Cp15Event::Op(Cp15Op::DrainWriteBuffer, 0),
                Cp15Event::Op(Cp15Op::InvalidateTlb, 0),
                Cp15Event::Op(Cp15Op::InvalidateTlbEntry, 0x0A00_8400),
            ]
        );
    }

    #[test]
    fn an_entry_clean_passes_the_word_address_unchanged() {
        let mut h = Arm926::new(MockCp15::arm926());
        h.clean_dcache_entry(mva(0xC000_1234));
        h.clean_dcache_line(mva(0xC000_1234));
        assert_eq!(
            h.cp15().events(),
            &[
                Cp15Event::Op(Cp15Op::CleanDCacheLine, 0xC000_1234),
                Cp15Event::Op(Cp15Op::CleanDCacheLine, 0xC000_1220),
            ]
        );
    }

    #[test]
    fn range_clean_and_flush_all_use_the_trait_defaults() {
        let mut h = Arm926::new(MockCp15::arm926());
        h.clean_dcache_range(mva(0x1010), 0x40);
        assert_eq!(
            h.cp15_mut().take_events().as_slice(),
            &[
                Cp15Event::Op(Cp15Op::CleanDCacheLine, 0x1000),
                Cp15Event::Op(Cp15Op::CleanDCacheLine, 0x1020),
                Cp15Event::Op(Cp15Op::CleanDCacheLine, 0x1040),
                Cp15Event::Op(Cp15Op::DrainWriteBuffer, 0),
            ]
        );
        h.flush_all();
        assert_eq!(
            h.cp15().events(),
            &[
                tc(true),
                Cp15Event::Op(Cp15Op::DrainWriteBuffer, 0),
                Cp15Event::Op(Cp15Op::InvalidateICache, 0),
                Cp15Event::Op(Cp15Op::InvalidateTlb, 0),
            ]
        );
    }

    #[test]
    fn one_value_is_both_registers_and_maintenance() {
        fn switch<H: Cp15 + CacheMaintenance>(h: &mut H, dacr: Dacr, pid: FcsePid) {
            // SAFETY: mock backend.
            unsafe {
                h.set_dacr(dacr);
                h.set_fcse_pid(pid);
            }
            h.invalidate_tlb();
        }
        let mut h = Arm926::new(MockCp15::arm926());
        let dacr = Dacr::only(Domain::new(1).unwrap(), DomainAccess::Client);
        switch(&mut h, dacr, FcsePid::new(2).unwrap());
        assert_eq!(
            h.cp15().events(),
            &[
                Cp15Event::Write(Cp15Reg::Dacr, dacr.bits()),
                Cp15Event::Write(Cp15Reg::Fcseidr, 2 << 25),
                Cp15Event::Op(Cp15Op::InvalidateTlb, 0),
            ]
        );
        assert_eq!(h.midr().bits(), 0x4106_9265);
        assert!(h.test_clean_dcache());
    }

    proptest! {
        #![proptest_config(crate::testing::proptest_config(256))]
        #[test]
        fn loop_length_matches_dirty_iterations(n in 0u32..400) {
            let mut m = MockCp15::arm926();
            m.set_dirty_iterations(n);
            let mut h = Arm926::new(m);
            h.clean_invalidate_dcache();
            let mut expect: Vec<Cp15Event> = (0..n).map(|_| tc(false)).collect();
            expect.push(tc(true));
            expect.push(Cp15Event::Op(Cp15Op::DrainWriteBuffer, 0));
            prop_assert_eq!(h.cp15().events(), expect.as_slice());
            prop_assert_eq!(h.test_clean_cap_hits(), 0);
        }

        #[test]
        fn line_operands_are_line_aligned(a in any::<u32>()) {
            let mut h = Arm926::new(MockCp15::arm926());
            h.clean_dcache_line(mva(a));
            h.invalidate_tlb_entry(mva(a));
            prop_assert_eq!(
                h.cp15().events(),
                &[
                    Cp15Event::Op(Cp15Op::CleanDCacheLine, a & !31),
                    Cp15Event::Op(Cp15Op::InvalidateTlbEntry, a & !0x3ff),
                ]
            );
        }
    }
}
