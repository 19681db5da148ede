//! The kernel's CP15: one [`HwCp15`] owner, created by `kmain` through
//! the `unsafe` constructor and lent (`&mut`) to the code that needs it
//! (`mmu_armv5` implements `Cp15` and `CacheMaintenance` for `&mut T`),
//! with the typed [`Cp15Ext`](mmu_armv5::regs::Cp15Ext) accessors.
//!
//! The process subsystem's kernel holds its own handle for the time it is
//! installed, leased from the owner ([`crate::proc::kernel::Lease`]); the
//! handlers entered from assembly reach CP15 through that kernel, or,
//! where none can be lent, through the one documented exception
//! (`proc::kernel::trap_cp15`).

use mmu_armv5::maint::CacheMaintenance;
use mmu_armv5::regs::HwCp15;

/// Drains the write buffer (so page-table stores are visible to the table
/// walker), then invalidates the whole TLB, through `cp15`.
pub fn flush_tlb(cp15: &mut HwCp15) {
    let mut m = crate::board::maint(cp15);
    m.drain_write_buffer();
    m.invalidate_tlb();
}

/// Runs `f` with a by-value stand-in for `cp15`, which this call borrows
/// mutably: zero-sized, unlike the borrow, it passes no pointer into
/// code that is not inlined (what [`crate::proc::platform::with_sys`]
/// does for the strategies). `f` uses the stand-in and drops it; it must
/// not keep it past its return (nothing here stores an `HwCp15`).
#[inline(always)]
pub fn lend<R>(cp15: &mut HwCp15, f: impl FnOnce(HwCp15) -> R) -> R {
    let _ = cp15; // borrowed for the call: the stand-in below replaces it
                  // SAFETY: a stand-in for `cp15`, borrowed mutably for this call and
                  // dropped by `f` before it returns, so the owner and it are never
                  // used at once.
    f(unsafe { HwCp15::new() })
}
