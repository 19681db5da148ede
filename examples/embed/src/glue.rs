//! The one piece of glue step 7 ([`crate::exchange`]) still writes itself:
//! [`Lent`]. Everything else comes from `spm` ready-made: the mappings
//! (`spm::TableMappings`), the hardware side (`spm::Hw`, `spm::SharedCpu`),
//! physical memory (`spm::PhysWindows`) and interrupt masking
//! (`spm::CpsrIrq`).
//!
//! Why it remains: `spm::SharedCpu` shares a CPU held in a `RefCell`, and
//! `spm::Hw` holds its physical memory by value; both need their part to
//! implement `mmu-armv5`'s `Cp15` and `CacheMaintenance` or `spm`'s
//! `PhysMemory`. This kernel owns neither during an exchange: the CPU lives
//! in `fass::Split` between steps and the physical windows are the
//! caller's, so [`crate::move_to_dtcm`] only borrows them (`&mut`), and
//! neither crate implements its traits for `&mut T`. [`Lent`] forwards
//! them. A kernel that keeps its CPU in a `RefCell` and its
//! `spm::PhysWindows` in the `spm::Hw` it builds needs none of this.

use mmu_armv5::maint::CacheMaintenance;
use mmu_armv5::regs::{Cp15, Cp15Op, Cp15Reg};
use mmu_armv5::{ModifiedVirtAddr as Mva, PhysAddr};
use spm::PhysMemory;

/// A CPU or physical memory lent for one exchange: every trait the
/// exchange needs of it, forwarded to the borrowed value.
#[derive(Debug)]
pub struct Lent<'a, T: ?Sized>(pub &'a mut T);

impl<T: Cp15 + ?Sized> Cp15 for Lent<'_, T> {
    fn read(&self, reg: Cp15Reg) -> u32 {
        self.0.read(reg)
    }
    unsafe fn write(&mut self, reg: Cp15Reg, value: u32) {
        // SAFETY: forwarded to the same CPU; the caller's contract.
        unsafe { self.0.write(reg, value) }
    }
    unsafe fn op(&mut self, op: Cp15Op, value: u32) {
        // SAFETY: as for `write`.
        unsafe { self.0.op(op, value) }
    }
    fn test_clean_invalidate_dcache(&mut self) -> bool {
        self.0.test_clean_invalidate_dcache()
    }
    fn test_clean_dcache(&mut self) -> bool {
        self.0.test_clean_dcache()
    }
}

impl<T: CacheMaintenance + ?Sized> CacheMaintenance for Lent<'_, T> {
    const DCACHE_LINE: u32 = T::DCACHE_LINE;
    fn clean_invalidate_dcache(&mut self) {
        self.0.clean_invalidate_dcache();
    }
    fn invalidate_icache(&mut self) {
        self.0.invalidate_icache();
    }
    fn clean_dcache_line(&mut self, mva: Mva) {
        self.0.clean_dcache_line(mva);
    }
    fn clean_invalidate_dcache_line(&mut self, mva: Mva) {
        self.0.clean_invalidate_dcache_line(mva);
    }
    unsafe fn invalidate_dcache_line(&mut self, mva: Mva) {
        // SAFETY: the caller's promise, for the same cache.
        unsafe { self.0.invalidate_dcache_line(mva) }
    }
    fn invalidate_icache_line(&mut self, mva: Mva) {
        self.0.invalidate_icache_line(mva);
    }
    fn drain_write_buffer(&mut self) {
        self.0.drain_write_buffer();
    }
    fn invalidate_tlb(&mut self) {
        self.0.invalidate_tlb();
    }
    fn invalidate_tlb_entry(&mut self, mva: Mva) {
        self.0.invalidate_tlb_entry(mva);
    }
    fn clean_dcache_range(&mut self, mva: Mva, len: u32) {
        self.0.clean_dcache_range(mva, len);
    }
    fn flush_all(&mut self) {
        self.0.flush_all();
    }
}

impl<T: PhysMemory + ?Sized> PhysMemory for Lent<'_, T> {
    fn copy(&mut self, dst: PhysAddr, src: PhysAddr, len: u32) {
        self.0.copy(dst, src, len);
    }
    fn zero(&mut self, dst: PhysAddr, len: u32) {
        self.0.zero(dst, len);
    }
}
