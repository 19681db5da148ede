//! Step 4: a process's address space and its pages.

use fass::{Platform, SpaceId};
use mmu_armv5::descriptor::{AccessPermission, CachePolicy};
use mmu_armv5::size::FrameRange;
use mmu_armv5::size::{Frame, PageRange};
use mmu_armv5::{PhysAddr, VirtAddr};
use spm::{FrameState, FrameTable};

use crate::{Error, Vm};

/// Creates address space `id` and maps `len` bytes of its memory at `va`
/// (user read/write, write-back cached) to the frames at `pa`, which the
/// kernel's frame allocator handed out: the frame table records them as
/// the process's pages, which `spm` checks before it moves or changes one.
/// `fass` and `spm` name the space with the same `SpaceId`; the frame
/// table refuses an id above `spm::MAX_SPACE_ID` (4095), which it cannot
/// record.
///
/// `fass` gives the space an FCSE PID now and a domain at its first switch;
/// nothing reaches the CPD until the process touches a page (a fault the
/// abort handler resolves, step 6).
pub fn spawn<S: Platform + ?Sized, const R: usize>(
    vm: &mut Vm,
    sys: &mut S,
    frames: &mut FrameTable<'_, R>,
    id: SpaceId,
    va: VirtAddr,
    pa: PhysAddr,
    len: u32,
) -> Result<(), Error> {
    // The byte range becomes pages once, here: misaligned, empty or
    // wrapping input is refused (`Error::Addr`) before anything changes.
    let pages = PageRange::from_bytes(va, len)?;
    let first = Frame::from_start(pa)?;
    vm.add_space(id)?;
    let (ap, cache) = (AccessPermission::ReadWrite, CachePolicy::WriteBack);
    vm.map_pages(sys, id, pages, first, ap, cache)?;
    frames.init_range(FrameRange::from_bytes(pa, len)?, FrameState::User(id), true)?;
    Ok(())
}
