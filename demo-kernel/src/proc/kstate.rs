//! `scenario=kstate`: checks of the process kernel's own bookkeeping in
//! cases no user program can provoke, run on the installed kernel without
//! running a process (regressions of issue 24, found by reading):
//!
//! 1. an unmap the strategy refuses keeps the page's record and its frame
//!    (the frame used to go back to the allocator while still mapped);
//! 2. [`Kernel::end`] clears every page record of the dead process, the
//!    TCM resource pages and exchange targets included (they used to stay,
//!    naming frames already given back).
//!
//! Reports `KSTATE mode=M failed=MASK` (bit i: check i + 1 failed).

use super::kernel::{frames, Exit, Kernel, Page};
use super::tcm::USER_RES_VA;
use crate::abi::role;

/// A user address the worker never maps.
const UNMAPPED_VA: u32 = 0x0050_0000;

/// Runs the checks on `k` (mode `mode`, for the report); whether all pass.
pub(super) fn run(k: &mut Kernel, mode: &str) -> bool {
    let idx = match k.spawn(role::WORKER, [1, 0, 0, 0, 0, 0, 0]) {
        Ok(i) => i,
        Err(e) => {
            defmt::error!("kstate mode {=str}: spawn failed: {}", mode, e);
            return false;
        }
    };
    let mut failed = 0u32;
    if !refused_unmap_keeps_the_frame(k, idx) {
        failed |= 1;
    }
    if !end_clears_every_record(k, idx) {
        failed |= 2;
    }
    defmt::info!("KSTATE mode={=str} failed={=u32:#x}", mode, failed);
    failed == 0
}

/// A page record whose address the strategy has no mapping for: its unmap
/// fails, and the frame must not go back to the allocator.
fn refused_unmap_keeps_the_frame(k: &mut Kernel, idx: usize) -> bool {
    let Some(pa) = frames().alloc() else {
        return false;
    };
    let Some(slot) = k.procs[idx].user_pages.iter().position(Option::is_none) else {
        frames().release(pa);
        return false;
    };
    k.procs[idx].user_pages[slot] = Some(Page {
        va: UNMAPPED_VA,
        pa,
        exec: false,
    });
    let free = frames().free();
    let r = k.unmap_page(idx, UNMAPPED_VA);
    let kept = frames().free() == free && k.procs[idx].user_pages[slot].is_some();
    if r.is_ok() || !kept {
        defmt::error!(
            "kstate: a refused unmap (ok: {=bool}) gave the frame back or dropped its record",
            r.is_ok()
        );
    }
    // Undo the made-up record (its frame is ours to give back once).
    if k.procs[idx].user_pages[slot].take().is_some() {
        frames().release(pa);
    }
    r.is_err() && kept
}

/// A dead process keeps no page record: a resource page and an exchange
/// target are cleared with the rest, and every frame it held given back.
fn end_clears_every_record(k: &mut Kernel, idx: usize) -> bool {
    let Some(pa) = frames().alloc() else {
        return false;
    };
    k.procs[idx].res_pages[0] = Some(Page {
        va: USER_RES_VA,
        pa,
        exec: false,
    });
    k.procs[idx].tcm_targets[0] = Some(UNMAPPED_VA);
    // Every frame the process holds (all RAM here) goes back.
    let q = &k.procs[idx];
    let held = q
        .kernel_pages
        .iter()
        .chain(q.user_pages.iter())
        .chain(q.res_pages.iter())
        .flatten()
        .count();
    let free = frames().free() + held;
    k.end(idx, Exit::Code(0));
    let p = &k.procs[idx];
    let cleared = p.res_pages.iter().all(Option::is_none)
        && p.tcm_targets.iter().all(Option::is_none)
        && p.user_pages.iter().all(Option::is_none)
        && p.kernel_pages.iter().all(Option::is_none);
    if !cleared || frames().free() != free {
        defmt::error!("kstate: a dead process kept page records or the frame");
    }
    cleared && frames().free() == free
}
