//! Step 7: a task's page into DTCM and back, with `spm`'s exchange over
//! the `fass` address spaces (`spm::FassMappings`).

use core::cell::RefCell;

use fass::{SpaceId, Split};
use mmu_armv5::descriptor::{AccessPermission, CachePolicy};
use mmu_armv5::maint::TrustedMaintenance;
use mmu_armv5::regs::Cp15;
use mmu_armv5::size::{Frame, Page, PageSizeKind};
use mmu_armv5::table::TableAlloc;
use mmu_armv5::{PhysAddr, VirtAddr};
use spm::exchange::DEFAULT_CHUNK;
use spm::ops::{self, StateRequest};
use spm::{AddressSpace, CpsrIrq, Exchange, ExchangeRequest, ExchangeStats, FassMappings};
use spm::{FrameState, FrameTable, Hw, PhysMemory, Rights, SharedCpu};

use crate::{Error, Vm};

/// Where a task's DTCM page lives while it is out: the DTCM frame the task
/// gets (mapped at its resource slot, privileged only) and the slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DtcmSlot {
    /// The task.
    pub task: SpaceId,
    /// The virtual address of the resource slot in the task's space.
    pub slot: VirtAddr,
}

/// Maps the DTCM frame `dtcm` (a page resource in the frame table) at
/// `slot` in `task`'s space, privileged read/write, so that an exchange can
/// swap it with one of the task's pages. `fass` manages only the tasks'
/// spaces, so the resource is mapped in the task's space, not the kernel's.
pub fn dtcm_slot<S: fass::Platform + ?Sized>(
    vm: &mut Vm,
    sys: &mut S,
    task: SpaceId,
    slot: VirtAddr,
    dtcm: PhysAddr,
) -> Result<DtcmSlot, Error> {
    let (page, frame) = (Page::from_start(slot)?, Frame::from_start(dtcm)?);
    let (ap, cache) = (AccessPermission::PrivRw, CachePolicy::WriteBack);
    vm.map_page(sys, task, page, frame, ap, cache)?;
    Ok(DtcmSlot { task, slot })
}

/// Exchanges the task's page at `page` with the frame at its resource slot
/// (content and write access move with the page), then gives the frame now
/// at the slot back as a page resource, so the next exchange finds one
/// there. The round trip is two calls of this function: the first moves
/// the page into the DTCM frame (the old RAM frame goes to the slot), the
/// task runs from DTCM, the second moves it back to the RAM frame.
///
/// The exchange runs in bounded steps (256 bytes copied or flushed each)
/// with interrupts masked only inside a step; this function runs them back
/// to back (`Exchange::run`), where a kernel may instead call
/// `Exchange::step` and do other work between two. While the page is
/// write-protected a write to it faults: the abort handler asks
/// `Exchange::protects` and waits for (or finishes) the page.
///
/// `tables` and `cpu` are the two halves of the platform (with
/// `fass::Split`, its `tables` and `hw` fields): the mappings (`fass`) and
/// the exchange's hardware side share the one CPU. `mem` is the physical
/// memory behind the board's physical window.
///
/// # Safety
/// `frames` describes memory truthfully (no frame of the exchange is memory
/// the program reaches through Rust references), `vm`'s CPD is the table
/// the CPU walks, `cpu` is this CPU and `mem` reaches its physical memory,
/// and no interrupt handler changes mappings (`spm::Exchange::step`).
#[allow(clippy::too_many_arguments)]
pub unsafe fn exchange_page<A, H, P, const R: usize>(
    vm: &mut Vm,
    tables: &mut A,
    cpu: &mut H,
    mem: &mut P,
    frames: &mut FrameTable<'_, R>,
    at: DtcmSlot,
    page: VirtAddr,
) -> Result<ExchangeStats, Error>
where
    A: TableAlloc + ?Sized,
    H: Cp15 + TrustedMaintenance,
    P: PhysMemory + ?Sized,
{
    // One CPU for `fass` (it cleans the table lines it writes) and the
    // hardware side: a `RefCell` around the borrowed CPU, borrowed within
    // each call.
    let cpu = RefCell::new(cpu);
    let mut sys = Split::new(SharedCpu(&cpu), tables);
    let mut maps = FassMappings::new(vm, &mut sys);
    let mut hw = Hw::new(SharedCpu(&cpu), mem);
    // SAFETY: only the exchange's steps use it, and each pairs every
    // `disable` with its `restore` and opens no other masked section.
    let mut irq = unsafe { CpsrIrq::new() };
    let space = AddressSpace::User(at.task);
    let request = ExchangeRequest {
        caller: AddressSpace::Kernel,
        target_space: space,
        target: page,
        resource_space: space,
        resource: at.slot,
        size: PageSizeKind::Small,
        count: 1,
        rights: Rights::RW,
    };
    let mut exchange = Exchange::begin(frames, &maps, request, DEFAULT_CHUNK)?;
    // SAFETY: the caller's promises (see `# Safety`); `maps` reports every
    // mapping of the tasks' spaces, the only ones that map these frames.
    unsafe { exchange.run(frames, &mut maps, &mut hw, &mut irq) }?;
    // The frame now at the slot is still the task's page (its old copy):
    // the kernel gives it back as a resource, which the way back needs.
    let resource = StateRequest::Set(FrameState::Resource);
    // SAFETY: as above; the slot is privileged, the task cannot reach it.
    unsafe { ops::change_state(frames, &maps, &mut hw, space, at.slot, resource) }?;
    Ok(exchange.stats())
}
