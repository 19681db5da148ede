//! Boots in which one maintenance operation of the kernel is the only
//! protection, so that the cache check's injected omissions (`omit=NAME`,
//! [`crate::marker::Omit`]) show up as violations (docs/testing.md,
//! "Cache check"). Each passes with the operation in place.
//!
//! `scenario=reuse`, for `omit=frame-clean`: the kernel reads frames
//! through its linear map (a checksum, as a core dump, a swap-out or a
//! page deduplication does) and frees them; a process then maps fresh
//! pages (`MAP`), which are those frames again, and reads every word,
//! which must be zero. [`kernel::frames`]`().alloc()` zeroes each frame
//! through the linear map: on a VIVT D-cache that allocates on reads only,
//! the zeros hit the lines the checksum left resident and stay dirty
//! there, and only the clean after the zeroing
//! ([`kernel::clean_kernel_alias`]) puts them in RAM before the process
//! reads the frame through its own alias. Without it the process reads
//! the frames' old contents (the checker's `StaleRam`; QEMU, which has
//! no caches, still returns zeros, so the process passes either way).
//!
//! `scenario=codeload`, for `omit=icache-load`: a process has the kernel
//! load code at one address of its code window again and again
//! (`LOAD_CODE`, [`Kernel::load_code`]), a different routine each time,
//! and calls each. From the second load on the page is replaced in place
//! (same frame, same mapping, same MVA), after the process has executed
//! the previous routine there: no unmap invalidates its I-lines and no
//! switch comes between, so the kernel's I-cache invalidation after the
//! copy ([`Kernel::publish_frame`]) is the only thing between the process
//! and its old instructions (the checker's `StaleFetch`; QEMU, which has
//! no caches, runs the new routine either way). Everywhere else that
//! invalidation is redundant: a fresh mapping's MVA holds no I-line, since
//! every unmap invalidates its page's I-lines by MVA.
//!
//! `scenario=recycle`, for `omit=recycle-clean` (FASS; the other modes run
//! it as a plain workload): sixteen spaces on the fifteen domains, each
//! with fixed pages above 32 MiB outside its own FCSE window, so none is
//! window-exclusive and every recycle of a dirty domain needs a full
//! flush. In start order: thirteen fillers (two fixed pages each, in MiBs
//! of their own, a few words touched), `F` (one fixed page at
//! `abi::RECYCLE_VA`, every word read, then written: 128 dirty lines), a
//! fourteenth filler `M`, and `L`, which maps its own page at the same
//! `RECYCLE_VA`. `L`'s first switch needs a domain: the current space
//! (`M`) is protected and every other is dirty and non-exclusive, so
//! `fass::DefaultPolicy` (fewest CPD slots: `F` has three, code, stack and
//! its page, the fillers four) takes `F`'s. The slots `F`'s domain tagged
//! are cleared, so `L`'s fill of the `RECYCLE_VA` slot finds no previous
//! owner and no left lines (those are recorded for window-exclusive
//! owners only): the recycle's D-cache clean and invalidation is the only
//! thing between `L`'s reads of its fresh page and `F`'s lines at the
//! same MVA (the checker's `StaleAlias`; on hardware `L` would read `F`'s
//! data, and its check of zeros would fail). Only `M` runs in between, so
//! most of `F`'s lines are still resident. Timer preemptions reorder the
//! sequence: the cache check boots it with `slice=1000000`.

use super::kernel::{self, Kernel};
use crate::abi::{self, role};

/// Loads of `scenario=codeload` (the process's `rounds`, at least 2: one
/// mapping, then replacements in place).
pub fn code_reload(k: &mut Kernel, rounds: u32) -> Result<(), kernel::SpawnError> {
    k.spawn(role::CODELOAD, [rounds.max(2), 0, 0, 0, 0, 0, 0])?;
    Ok(())
}

/// Fillers of `scenario=recycle` (with `F`, `M` and `L`: sixteen spaces).
const RECYCLE_FILLERS: u32 = 13;

/// Spawns `scenario=recycle` (module docs): each process checks its pages
/// across `rounds` yields.
pub fn domain_recycle(k: &mut Kernel, rounds: u32) -> Result<(), kernel::SpawnError> {
    const MIB: u32 = 1 << 20;
    // A filler: two pages in MiBs of its own after `RECYCLE_VA`.
    let filler = |k: &mut Kernel, i: u32| {
        let va = abi::RECYCLE_VA + (1 + 2 * i) * MIB;
        k.spawn(
            role::RECYCLE,
            [va, 2, 8, 0x0F11_0000 | i << 8, rounds, 0, 0],
        )
    };
    for i in 0..RECYCLE_FILLERS {
        filler(k, i)?;
    }
    // F, M, L.
    k.spawn(
        role::RECYCLE,
        [abi::RECYCLE_VA, 1, 1024, 0x5EC2_F000, rounds, 0, 0],
    )?;
    filler(k, RECYCLE_FILLERS)?;
    k.spawn(
        role::RECYCLE,
        [abi::RECYCLE_VA, 1, 1024, 0x0000_1000, rounds, 0, 0],
    )?;
    Ok(())
}

/// Frames read, freed and mapped again: 16 KiB, the D-cache of the
/// ARM926EJ-S preset (the SA-1110's 8 KiB keeps the last two).
pub const REUSE_FRAMES: usize = 4;

/// The pattern the checksummed frames hold (the previous owner's data).
const PATTERN: u32 = 0x5EC2_E700;

/// Spawns the process that maps [`REUSE_FRAMES`] fresh pages (after its
/// own image, so it takes the frames freed here), then takes that many
/// frames, fills them with a pattern, checksums them through the linear
/// map (the reads bring the kernel alias's lines into the D-cache) and
/// frees them: the lowest free frames, which the process's `MAP` takes.
/// Fails the setup if no frame is left or the checksum is not what was
/// written.
pub fn frame_reuse(k: &mut Kernel) -> Result<(), kernel::SpawnError> {
    k.spawn(role::FRESH, [REUSE_FRAMES as u32, 0, 0, 0, 0, 0, 0])?;
    let mut taken = [0u32; REUSE_FRAMES];
    let mut n = 0;
    for slot in taken.iter_mut() {
        match kernel::frames().alloc() {
            Some(pa) => {
                *slot = pa;
                n += 1;
            }
            None => break,
        }
    }
    let (mut sum, mut want) = (0u32, 0u32);
    for (f, &pa) in taken[..n].iter().enumerate() {
        let va = crate::mmu::phys_to_virt(pa) as *mut u32;
        for i in 0..1024u32 {
            let v = PATTERN ^ ((f as u32) << 12) ^ i;
            // SAFETY: the frame is ours (just allocated, mapped nowhere
            // else); the linear map covers all RAM.
            unsafe { va.add(i as usize).write_volatile(v) };
            want = want.wrapping_add(v);
        }
        // The stores went to RAM (no allocation on a write miss) or hit
        // lines still there from an earlier use: cleaned, so the reads
        // below leave clean lines either way.
        kernel::clean_kernel_alias(pa);
        for i in 0..1024 {
            // SAFETY: as above.
            sum = sum.wrapping_add(unsafe { va.add(i).read_volatile() });
        }
    }
    for &pa in &taken[..n] {
        kernel::frames().release(pa);
    }
    if n < REUSE_FRAMES {
        return Err(kernel::SpawnError::NoFrames);
    }
    if sum != want {
        // Memory does not hold what was just written: the setup fails.
        defmt::error!("reuse: checksum {=u32:#x}, expected {=u32:#x}", sum, want);
        return Err(kernel::SpawnError::NoFrames);
    }
    Ok(())
}
