//! Roles of the boots that give the cache check's injected omissions a
//! situation in which the omitted operation is the only protection
//! (the kernel's `proc::omission`).

use crate::abi::{prot, CODE_PAGES, CODE_VA, DATA_VA};
use crate::sys;

const PAGE: u32 = 4096;

/// `scenario=reuse`: maps `pages` fresh private pages at [`DATA_VA`] and
/// reads every word of them, which must be zero (the kernel zeroes a frame
/// before handing it out, and cleans the zeros out of its own alias).
/// Returns 0, 1000 if the map fails, else 1 + the number of non-zero words.
pub fn fresh_pages(pages: u32) -> u32 {
    let len = pages * PAGE;
    if sys::is_err(sys::map(DATA_VA, len, prot::RW)) {
        return 1000;
    }
    let mut bad = 0u32;
    for i in 0..len / 4 {
        // SAFETY: the pages were just mapped read/write at `DATA_VA`.
        let v = unsafe { ((DATA_VA + i * 4) as *const u32).read_volatile() };
        if v != 0 {
            bad += 1;
        }
    }
    if bad == 0 {
        0
    } else {
        1 + bad
    }
}

/// `MOV r0, #imm` (ARM, `imm` < 256).
const MOV_R0: u32 = 0xE3A0_0000;
/// `MOV pc, lr`: a return every ARM CPU has (the SA-1110 has no `BX`).
const RET: u32 = 0xE1A0_F00E;

/// `scenario=codeload`: `rounds` times, writes a routine returning a
/// value of its own (`MOV r0, #v; MOV pc, lr`) into a data page, has the
/// kernel load it as the code page at [`CODE_VA`] (`LOAD_CODE`: mapped
/// the first time, replaced in place after that) and calls it. A CPU
/// whose I-cache still held the previous routine (the kernel's
/// invalidation left out) would return the previous value. Also checks
/// that a load outside the code window and one from inside it are
/// refused. Returns 0, 1000 + the round if a map or load fails, else
/// the number of wrong values and refusals not made.
pub fn code_reload(rounds: u32) -> u32 {
    if sys::is_err(sys::map(DATA_VA, PAGE, prot::RW)) {
        return 1000;
    }
    let buf = DATA_VA as *mut u32;
    let mut bad = 0u32;
    for k in 0..rounds {
        let want = (k * 37 + 11) & 0xFF;
        // SAFETY: the page was mapped read/write at `DATA_VA`.
        unsafe {
            buf.write_volatile(MOV_R0 | want);
            buf.add(1).write_volatile(RET);
        }
        if sys::is_err(sys::load_code(CODE_VA, DATA_VA)) {
            return 1000 + k;
        }
        // SAFETY: the kernel just loaded a complete ARM routine (no
        // arguments, result in r0, returns with `MOV pc, lr`) at `CODE_VA`,
        // mapped readable (so executable) for this process.
        let f: extern "C" fn() -> u32 = unsafe { core::mem::transmute(CODE_VA as usize) };
        if f() != want {
            bad += 1;
        }
    }
    // Outside the window, and a source inside it.
    if !sys::is_err(sys::load_code(CODE_VA + CODE_PAGES * PAGE, DATA_VA)) {
        bad += 1;
    }
    if !sys::is_err(sys::load_code(CODE_VA + PAGE, CODE_VA)) {
        bad += 1;
    }
    bad
}

/// `scenario=recycle`: maps `pages` fresh private pages, one per MiB from
/// `va` (fixed pages: above 32 MiB, outside the process's FCSE window, so
/// FASS flushes the caches when it recycles the process's domain), checks
/// that the first `words` words of each read as zero (the reads allocate
/// the lines), writes a pattern from `value` over them (dirty lines) and
/// checks it after each of `rounds` yields. Returns 0, 1000 if a map
/// fails, else the number of wrong words.
pub fn recycled_pages(va: u32, pages: u32, words: u32, value: u32, rounds: u32) -> u32 {
    const MIB: u32 = 1 << 20;
    let words = words.min(PAGE / 4);
    for k in 0..pages {
        if sys::is_err(sys::map(va + k * MIB, PAGE, prot::RW)) {
            return 1000;
        }
    }
    let word = |k: u32, w: u32| (va + k * MIB + 4 * w) as *mut u32;
    let pattern = |k: u32, w: u32| value ^ (k << 16) ^ w;
    let mut bad = 0u32;
    for k in 0..pages {
        for w in 0..words {
            // SAFETY: our own read/write page, `w` < 1024.
            if unsafe { word(k, w).read_volatile() } != 0 {
                bad += 1;
            }
        }
        for w in 0..words {
            // SAFETY: as above.
            unsafe { word(k, w).write_volatile(pattern(k, w)) };
        }
    }
    for _ in 0..rounds {
        sys::yield_now();
        for k in 0..pages {
            for w in 0..words {
                // SAFETY: as above.
                if unsafe { word(k, w).read_volatile() } != pattern(k, w) {
                    bad += 1;
                }
            }
        }
    }
    bad
}
