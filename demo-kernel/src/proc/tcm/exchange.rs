//! One step (or the cancel) of an exchange over this kernel's frame table,
//! mappings, CPU and interrupt mask, and the request of the kernel's own
//! page exchange.
//!
//! Why `spm`'s `unsafe` calls are sound here ([`step`], [`cancel`],
//! and `spm::ops::create_user_page`/`change_state` in `ops.rs`):
//! the frame table describes this machine's RAM and TCM, and a frame it
//! calls a page resource is a free frame of the user frame allocator or
//! of a TCM bank (kernel code and data are never resources; the kernel's
//! own page that moves is copied whole and re-mapped); no Rust reference
//! points into user frames or TCM. [`Maps`] reports every mapping of a
//! frame `spm` may move (the records `maps` describes, one user mapping per private
//! frame plus the kernel's records), its generation changes on every
//! `note_mapper` (every user map and unmap; the kernel never changes a
//! user mapping's access otherwise), and the kernel's IRQ handler
//! (`kernel_irq`) changes no mapping. [`Hw`] is this CPU; [`Irq`] masks
//! its IRQs (FIQs stay masked in every privileged mode).

use mmu_armv5::size::PageSizeKind;
use mmu_armv5::VirtAddr;
use spm::{AddressSpace, Exchange, ExchangeRequest, FrameTable, Rights};

use super::{Hw, Irq, Maps, Tcm};
use crate::proc::kernel::Proc;
use crate::proc::strategy::{Strategy, MAX_PROCS};

/// One step of `x` over this kernel's frame table, mappings and CPU.
pub(super) fn step(
    x: &mut Exchange,
    procs: &mut [Proc; MAX_PROCS],
    strategy: &Strategy,
    t: &mut Tcm,
    hw: &mut Hw,
    irq: &mut Irq,
) -> Result<spm::Progress, spm::ExchangeError> {
    let (table, tt) = split(t);
    let mut maps = Maps::new(procs, strategy, tt);
    // SAFETY: this kernel's frame table, mappings, CPU and interrupt mask
    // (see this module's docs: why `spm`'s unsafe calls are sound here).
    unsafe { x.step(table, &mut maps, hw, irq) }
}

/// Cancels `x` (see `spm::Exchange::cancel`): the pages exchanged.
pub(super) fn cancel(
    x: &mut Exchange,
    procs: &mut [Proc; MAX_PROCS],
    strategy: &Strategy,
    t: &mut Tcm,
    hw: &mut Hw,
) -> Result<u32, spm::ExchangeError> {
    let (table, tt) = split(t);
    let mut maps = Maps::new(procs, strategy, tt);
    // SAFETY: as in `step`.
    unsafe { x.cancel(table, &mut maps, hw, &mut Irq::default()) }
}

/// Split borrows of a TCM state for an exchange step.
pub(super) fn split(t: &mut Tcm) -> (&mut FrameTable<'static, 4>, &mut Tcm) {
    let p: *mut Tcm = t;
    // SAFETY: `Maps::new` uses only `kmaps`, `wp` and `root`, never `table`:
    // the two borrows are disjoint.
    unsafe { (&mut (*p).table, &mut *p) }
}

/// The request moving kernel page `target` into (or back from) the kernel view `resource`.
pub(super) fn kernel_request(target: u32, resource: u32) -> ExchangeRequest {
    ExchangeRequest {
        caller: AddressSpace::Kernel,
        target_space: AddressSpace::Kernel,
        target: VirtAddr::new(target),
        resource_space: AddressSpace::Kernel,
        resource: VirtAddr::new(resource),
        size: PageSizeKind::Small,
        count: 1,
        rights: Rights::RX,
    }
}
