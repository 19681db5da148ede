//! The kernel's CP15: one [`HwCp15`] owner, created by `kmain` through
//! the `unsafe` constructor and lent (`&mut`) to the code that needs it
//! (`mmu_armv5` implements `Cp15` and `CacheMaintenance` for `&mut T`),
//! with the typed [`Cp15Ext`](mmu_armv5::regs::Cp15Ext) accessors.
//!
//! The process subsystem's kernel holds its own handle for the time it is
//! installed, leased from the owner ([`crate::proc::kernel::Lease`]).

use mmu_armv5::maint::CacheMaintenance;
use mmu_armv5::regs::HwCp15;

/// A fresh handle on this CPU's CP15, for the files not yet converted to
/// the owner passed down from `kmain` (`proc/trap.rs`, `proc/switch.rs`,
/// `proc/sched.rs`, `proc/fastpath.rs`, `proc/tcm/`, `board/`, and the
/// transitional helpers [`invalidate_tlb`], `mmu::maint`, `mmu::set_entry`,
/// `proc::platform::counting`).
///
/// Transitional: new code takes a `&mut HwCp15` parameter instead.
pub fn hw() -> HwCp15 {
    // SAFETY: the kernel runs privileged (SVC/ABT/UND mode) on one core with
    // interrupts masked, so no two `HwCp15` handles are ever used concurrently.
    unsafe { HwCp15::new() }
}

/// Drains the write buffer (so page-table stores are visible to the table
/// walker), then invalidates the whole TLB, through `cp15`.
pub fn flush_tlb(cp15: &mut HwCp15) {
    let mut m = crate::board::maint(cp15);
    m.drain_write_buffer();
    m.invalidate_tlb();
}

/// [`flush_tlb`] on a fresh handle ([`hw`]), for the files not yet
/// converted (`proc/sched.rs`, `proc/tcm/setup.rs`).
pub fn invalidate_tlb() {
    flush_tlb(&mut hw());
}
