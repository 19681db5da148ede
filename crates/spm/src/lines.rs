//! Cache maintenance over a range of lines, provided by the kernel.
//!
//! An exchange cleans, discards and flushes whole chunks of a page at every
//! cacheable address the page is mapped at. Done one
//! [`CacheMaintenance`] call per 32-byte line, the calls cost more than the
//! maintenance itself; [`LineMaintenance`] lets the kernel do a range in one
//! tight loop (on the ARM926EJ-S one `MCR` and one `ADD` per line). The
//! provided methods are exactly the per-line loops, so an implementation
//! may be empty (`impl LineMaintenance for MyHw {}`), as the host test
//! doubles are.

use mmu_armv5::maint::CacheMaintenance;
use mmu_armv5::ModifiedVirtAddr;

/// Line maintenance over `[mva, mva + len)`. `mva` is line aligned and
/// `len` a multiple of the line ([`CacheMaintenance::DCACHE_LINE`]) in every
/// call `spm` makes; no range crosses a 4 KiB frame. None of these drains
/// the write buffer.
pub trait LineMaintenance: CacheMaintenance {
    /// Cleans every D-cache line of the range.
    fn clean_dcache_lines(&mut self, mva: ModifiedVirtAddr, len: u32) {
        each_line::<Self>(mva, len, |a| self.clean_dcache_line(a));
    }

    /// Invalidates every D-cache line of the range without writing it back.
    ///
    /// # Safety
    /// As [`CacheMaintenance::invalidate_dcache_line`]: the caller knows no
    /// line of the range holds data anyone needs.
    unsafe fn invalidate_dcache_lines(&mut self, mva: ModifiedVirtAddr, len: u32) {
        each_line::<Self>(mva, len, |a| {
            // SAFETY: the caller's promise covers every line of the range.
            unsafe { self.invalidate_dcache_line(a) }
        });
    }

    /// Cleans and invalidates every D-cache line of the range and
    /// invalidates every I-cache line of it.
    fn flush_lines(&mut self, mva: ModifiedVirtAddr, len: u32) {
        each_line::<Self>(mva, len, |a| {
            self.clean_invalidate_dcache_line(a);
            self.invalidate_icache_line(a);
        });
    }
}

/// Line maintenance of a CPU lent by exclusive reference: each range goes
/// to the borrowed value, so its overrides are kept.
impl<T: LineMaintenance + ?Sized> LineMaintenance for &mut T {
    #[inline]
    fn clean_dcache_lines(&mut self, mva: ModifiedVirtAddr, len: u32) {
        (**self).clean_dcache_lines(mva, len);
    }
    #[inline]
    unsafe fn invalidate_dcache_lines(&mut self, mva: ModifiedVirtAddr, len: u32) {
        // SAFETY: the same cache; the caller's promise is passed on as it is.
        unsafe { (**self).invalidate_dcache_lines(mva, len) }
    }
    #[inline]
    fn flush_lines(&mut self, mva: ModifiedVirtAddr, len: u32) {
        (**self).flush_lines(mva, len);
    }
}

/// Calls `op` with the address of every line of `[mva, mva + len)`.
fn each_line<H: CacheMaintenance + ?Sized>(
    mva: ModifiedVirtAddr,
    len: u32,
    mut op: impl FnMut(ModifiedVirtAddr),
) {
    let mut a = 0;
    while a < len {
        op(ModifiedVirtAddr::new(mva.as_u32().wrapping_add(a)));
        a += H::DCACHE_LINE;
    }
}
