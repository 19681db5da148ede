//! The kernel's handle on CP15: `mmu_armv5`'s [`HwCp15`] with the typed
//! [`Cp15Ext`](mmu_armv5::regs::Cp15Ext) accessors.

use mmu_armv5::maint::CacheMaintenance;
use mmu_armv5::regs::HwCp15;

/// The CP15 of this CPU.
pub fn hw() -> HwCp15 {
    // SAFETY: the kernel runs privileged (SVC/ABT/UND mode) on one core with
    // interrupts masked, so no two `HwCp15` handles are ever used concurrently.
    unsafe { HwCp15::new() }
}

/// Drains the write buffer (so page-table stores are visible to the table
/// walker), then invalidates the whole TLB.
pub fn invalidate_tlb() {
    let mut m = crate::board::maint(hw());
    m.drain_write_buffer();
    m.invalidate_tlb();
}
