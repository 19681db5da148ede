//! `scenario=kstate`: checks of the process kernel's own bookkeeping in
//! cases no user program can provoke, run on the installed kernel without
//! running a process (regressions of issue 24, found by reading):
//!
//! 1. an unmap the strategy refuses keeps the page's record and its frame
//!    (the frame used to go back to the allocator while still mapped);
//! 2. [`Kernel::end`] clears every page record of the dead process, the
//!    TCM resource pages and exchange targets included (they used to stay,
//!    naming frames already given back);
//! 3. a new frame is cleaned out of the D-cache after being zeroed, and a
//!    spawn cleans every page it loaded and invalidates the I-cache once
//!    per code page (neither happened: on a VIVT write-back cache the new
//!    owner could read the previous owner's data or stale code).
//!
//! Reports `KSTATE mode=M failed=MASK` (bit i: check i + 1 failed).

use super::kernel::{alias_cleans, frames, Exit, Kernel, Page};
use super::platform;
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
    if !new_frames_and_code_are_cleaned(k) {
        failed |= 4;
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

/// One frame allocation cleans one frame; a spawn cleans each page it
/// loads twice (zeroed, then filled) and invalidates the I-cache once per
/// code page.
fn new_frames_and_code_are_cleaned(k: &mut Kernel) -> bool {
    let c0 = alias_cleans();
    let Some(pa) = frames().alloc() else {
        return false;
    };
    let frame_ok = alias_cleans().wrapping_sub(c0) == 1;
    frames().release(pa);
    let (c1, i1) = (alias_cleans(), platform::counts().icache_flushes);
    let idx = match k.spawn(role::WORKER, [1, 0, 0, 0, 0, 0, 0]) {
        Ok(i) => i,
        Err(_) => return false,
    };
    let p = &k.procs[idx];
    let pages = p.kernel_pages.iter().flatten().count() as u32;
    let code = p.kernel_pages.iter().flatten().filter(|pg| pg.exec).count() as u32;
    let cleans = alias_cleans().wrapping_sub(c1);
    let inval = platform::counts().icache_flushes.wrapping_sub(i1);
    k.end(idx, Exit::Code(0));
    let spawn_ok = code > 0 && cleans == 2 * pages && inval >= code;
    if !frame_ok || !spawn_ok {
        defmt::error!(
            "kstate: frame cleaned {=bool}; spawn of {=u32} pages ({=u32} code): {=u32} cleans, {=u32} I-cache invalidations",
            frame_ok,
            pages,
            code,
            cleans,
            inval
        );
    }
    frame_ok && spawn_ok
}
