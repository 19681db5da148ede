//! Physical memory access, provided by the kernel.

use mmu_armv5::PhysAddr;

/// Reads and writes physical memory by physical address.
///
/// # Contract
/// Both methods act on memory itself: reads see what is in memory (the
/// caller has cleaned the D-cache lines of the source), and writes have
/// reached memory on return (an implementation that goes through a cached
/// kernel alias cleans that alias). TCM is never cached, so copies into it
/// need no maintenance. Ranges never cross a 4 KiB frame.
pub trait PhysMemory {
    /// Copies `len` bytes from `src` to `dst` (non-overlapping).
    fn copy(&mut self, dst: PhysAddr, src: PhysAddr, len: u32);
    /// Writes `len` zero bytes at `dst`.
    fn zero(&mut self, dst: PhysAddr, len: u32);
}

/// Physical memory lent by exclusive reference.
impl<T: PhysMemory + ?Sized> PhysMemory for &mut T {
    #[inline]
    fn copy(&mut self, dst: PhysAddr, src: PhysAddr, len: u32) {
        (**self).copy(dst, src, len);
    }
    #[inline]
    fn zero(&mut self, dst: PhysAddr, len: u32) {
        (**self).zero(dst, len);
    }
}
