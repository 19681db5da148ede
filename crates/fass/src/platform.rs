//! The one object this crate drives: CP15 registers, cache maintenance and
//! translation-table memory together.
//!
//! Every operation that changes tables also maintains caches and TLBs, so it
//! needs all three capabilities at once. On the `armv5-sim` model one value
//! (`Machine`) provides all three; on hardware or with the recording mock
//! they are separate values, joined by [`Split`].

use core::ptr::NonNull;
use mmu_armv5::maint::{CacheMaintenance, TrustedMaintenance};
use mmu_armv5::regs::{Cp15, Cp15Op, Cp15Reg};
use mmu_armv5::table::{AllocError, AllocId, TableAlloc, TableKind};
use mmu_armv5::{ModifiedVirtAddr, PhysAddr};

/// CP15 access, cache maintenance and table memory of one CPU.
///
/// Implemented for every type that has the three capabilities.
///
/// The maintenance is a [`TrustedMaintenance`]: fass frees the tables a
/// change unlinked once that maintenance says they are unreachable.
pub trait Platform: Cp15 + TrustedMaintenance + TableAlloc {}

impl<T: Cp15 + TrustedMaintenance + TableAlloc> Platform for T {}

/// A [`Platform`] made of a CPU (`hw`: CP15 and maintenance, for example
/// `Arm926<HwCp15>` or `Arm926<MockCp15>`) and a table allocator (`tables`,
/// for example a `TablePool`). Every trait method forwards to the part that
/// has it.
#[derive(Debug)]
pub struct Split<H, A> {
    /// CP15 registers and cache maintenance.
    pub hw: H,
    /// Translation-table memory.
    pub tables: A,
}

impl<H, A> Split<H, A> {
    /// Joins a CPU and a table allocator.
    pub const fn new(hw: H, tables: A) -> Self {
        Split { hw, tables }
    }
}

impl<H: Cp15, A> Cp15 for Split<H, A> {
    fn read(&self, reg: Cp15Reg) -> u32 {
        self.hw.read(reg)
    }

    unsafe fn write(&mut self, reg: Cp15Reg, value: u32) {
        // SAFETY: the caller upholds `Cp15::write`'s contract for this CPU,
        // which is `self.hw`.
        unsafe { self.hw.write(reg, value) }
    }

    unsafe fn op(&mut self, op: Cp15Op, value: u32) {
        // SAFETY: as for `write`: same contract, same CPU.
        unsafe { self.hw.op(op, value) }
    }

    fn test_clean_invalidate_dcache(&mut self) -> bool {
        self.hw.test_clean_invalidate_dcache()
    }

    fn test_clean_dcache(&mut self) -> bool {
        self.hw.test_clean_dcache()
    }
}

impl<H: CacheMaintenance, A> CacheMaintenance for Split<H, A> {
    const DCACHE_LINE: u32 = H::DCACHE_LINE;

    fn clean_invalidate_dcache(&mut self) {
        self.hw.clean_invalidate_dcache();
    }

    fn invalidate_icache(&mut self) {
        self.hw.invalidate_icache();
    }

    fn clean_dcache_line(&mut self, mva: ModifiedVirtAddr) {
        self.hw.clean_dcache_line(mva);
    }

    fn clean_invalidate_dcache_line(&mut self, mva: ModifiedVirtAddr) {
        self.hw.clean_invalidate_dcache_line(mva);
    }

    unsafe fn invalidate_dcache_line(&mut self, mva: ModifiedVirtAddr) {
        // SAFETY: the caller upholds the same contract for the same cache.
        unsafe { self.hw.invalidate_dcache_line(mva) }
    }

    fn invalidate_icache_line(&mut self, mva: ModifiedVirtAddr) {
        self.hw.invalidate_icache_line(mva);
    }

    fn drain_write_buffer(&mut self) {
        self.hw.drain_write_buffer();
    }

    fn invalidate_tlb(&mut self) {
        self.hw.invalidate_tlb();
    }

    fn invalidate_tlb_entry(&mut self, mva: ModifiedVirtAddr) {
        self.hw.invalidate_tlb_entry(mva);
    }

    fn clean_dcache_range(&mut self, mva: ModifiedVirtAddr, len: u32) {
        self.hw.clean_dcache_range(mva, len);
    }

    fn flush_all(&mut self) {
        self.hw.flush_all();
    }
}

// SAFETY: every method forwards to `self.tables`, whose implementation
// upholds the contract; `Split` adds no memory of its own.
unsafe impl<H, A: TableAlloc> TableAlloc for Split<H, A> {
    fn allocate(&mut self, kind: TableKind) -> Result<PhysAddr, AllocError> {
        self.tables.allocate(kind)
    }

    unsafe fn deallocate(&mut self, kind: TableKind, pa: PhysAddr) {
        // SAFETY: the caller upholds the same contract for the same allocator.
        unsafe { self.tables.deallocate(kind, pa) }
    }

    fn table_ptr(&self, kind: TableKind, pa: PhysAddr) -> Option<NonNull<u32>> {
        self.tables.table_ptr(kind, pa)
    }

    fn table_mva(&self, pa: PhysAddr) -> ModifiedVirtAddr {
        self.tables.table_mva(pa)
    }

    fn alloc_id(&self) -> Option<AllocId> {
        self.tables.alloc_id()
    }
}

// SAFETY: every maintenance method forwards to `self.hw`, which keeps the
// promise.
unsafe impl<H: TrustedMaintenance, A> TrustedMaintenance for Split<H, A> {}
