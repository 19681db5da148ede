//! Roles of the boots that give the cache check's injected omissions a
//! situation in which the omitted operation is the only protection
//! (the kernel's `proc::omission`).

use crate::abi::{prot, DATA_VA};
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
