//! Step 2: TCM set-up and the frame table.

use mmu_armv5::regs::Cp15;
use mmu_armv5::size::{Frame, FrameRange};
use mmu_armv5::PhysAddr;
use spm::tcm::{self, TcmLayout};
use spm::{FrameDesc, FrameState, FrameTable, InitialUse, KernelUse, Location};
use spm::{PhysRegion, SectionSummary};

use crate::{Board, Error};

/// Regions the frame table describes: the kernel image, the frames, ITCM, DTCM.
pub const REGIONS: usize = 4;

/// Finds the CPU's TCM (the status register, then the region registers of
/// the banks it reports), decides per kind between the CPU's bank and the
/// board's emulated one, and places the CPU's banks the plan moves.
/// Returns the banks in effect. On QEMU's `arm926` (no TCM reported) these
/// are the board's emulated banks and no TCM register is written.
///
/// # Safety
/// Run once, early, with nothing in use in the board's placement ranges
/// (`board.tcm.itcm_base`, `board.tcm.dtcm_base`) and no dirty cache line
/// covering them: a placed bank's content is undefined (`spm::tcm::apply`).
pub unsafe fn plan_tcm<C: Cp15 + ?Sized>(cpu: &mut C, board: &Board) -> Result<TcmLayout, Error> {
    let found = tcm::discover(cpu)?;
    let plan = tcm::plan(found, &board.tcm)?;
    // SAFETY: the caller's promise: nothing lives where the plan places a bank.
    let banks = unsafe { tcm::apply(cpu, &plan) }?;
    Ok(banks)
}

/// The frame table over the kernel image (pinned; the table pool in it
/// marked as page tables), the frames (undefined until handed out) and the
/// TCM banks (page resources), with `kernel_pages` (the kernel's movable
/// pages, see [`crate::boot`]) marked as kernel pages that may move.
/// `descs` and `sections` are the table's storage: two bytes per 4 KiB
/// frame and four per MiB described.
pub fn frame_table<'s>(
    board: &Board,
    banks: &TcmLayout,
    kernel_pages: &[PhysAddr],
    descs: &'s mut [FrameDesc],
    sections: &'s mut [SectionSummary],
) -> Result<FrameTable<'s, REGIONS>, Error> {
    let (k, f) = (board.kernel_ram, board.frames);
    let image = PhysRegion::new(k.base(), k.size(), Location::Ram, InitialUse::Kernel)?.pinned();
    let frames = PhysRegion::new(f.base(), f.size(), Location::Ram, InitialUse::Undefined)?;
    // The image and the frames, then one region per TCM bank.
    let mut regions = [image, frames, image, image];
    let mut n = 2;
    for bank in banks.banks() {
        regions[n] = bank.region()?;
        n += 1;
    }
    let mut table = FrameTable::new(&regions[..n], descs, sections)?;
    let page_tables = FrameState::Kernel(KernelUse::PageTable);
    table.init_range(
        FrameRange::from_bytes(board.table_pool, board.table_pool_size)?,
        page_tables,
        false,
    )?;
    for &page in kernel_pages {
        table.init_range(
            Frame::from_start(page)?,
            FrameState::Kernel(KernelUse::Plain),
            true,
        )?;
    }
    Ok(table)
}
