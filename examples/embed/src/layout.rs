//! Step 1: the virtual address-space layout.

use fass::{Layout, Region};
use mmu_armv5::FcsePid;

use crate::Error;

/// The layout this kernel runs with: FCSE PIDs 1..=16 (each process's
/// addresses below 32 MiB relocated into its own 32 MiB window, the windows
/// together 32 MiB to 544 MiB), shared segments at 1 GiB (256 MiB), the
/// kernel from 3 GiB to the top (its image, the physical window, the TCM
/// window and the vectors at 0xFFFF_0000).
///
/// `Layout::new` checks that the three parts are 1 MiB aligned, disjoint,
/// and that neither the kernel nor the shared region lies in the low
/// 32 MiB, which every FCSEIDR write would relocate.
pub fn layout() -> Result<Layout, Error> {
    let first = FcsePid::new(1)?;
    let last = FcsePid::new(16)?;
    let shared = Region::new(0x4000_0000, 256 << 20)?;
    let kernel = Region::new(0xC000_0000, 1 << 30)?;
    Ok(Layout::new(first, last, shared, kernel)?)
}
