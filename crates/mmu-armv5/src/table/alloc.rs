//! Where translation table memory comes from.
//!
//! In the style of `aarch64-paging`'s `Translation`: the page-table code
//! never allocates by itself; it asks a [`TableAlloc`] for physical table
//! memory and for a pointer through which it can reach that memory. Host
//! tests back it with heap memory, the `armv5-sim` model with its simulated
//! RAM (so the model's walker reads the very tables the code built), and a
//! kernel with its own frame pool.

use crate::addr::{Align, ModifiedVirtAddr, PhysAddr};
use core::fmt;
use core::ptr::NonNull;

/// The three kinds of translation table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum TableKind {
    /// First-level table: 4096 entries, 16 KiB, 16 KiB aligned.
    L1,
    /// Coarse table: 256 entries, 1 KiB, 1 KiB aligned; large and small pages.
    Coarse,
    /// Fine table: 1024 entries, 4 KiB, 4 KiB aligned; large, small and tiny pages.
    Fine,
}

impl TableKind {
    /// Number of 32-bit entries.
    #[must_use]
    pub const fn entries(self) -> usize {
        match self {
            TableKind::L1 => 4096,
            TableKind::Coarse => 256,
            TableKind::Fine => 1024,
        }
    }

    /// Size in bytes, which is also the required alignment.
    #[must_use]
    pub const fn size(self) -> u32 {
        (self.entries() * 4) as u32
    }

    /// The required alignment (the size).
    #[must_use]
    pub const fn align(self) -> Align {
        match self {
            TableKind::L1 => Align::KIB_16,
            TableKind::Coarse => Align::KIB_1,
            TableKind::Fine => Align::KIB_4,
        }
    }
}

/// The table allocator has no memory left.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct AllocError;

impl fmt::Display for AllocError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("no memory left for a page table")
    }
}

impl core::error::Error for AllocError {}

/// Provider of translation table memory (first- and second-level).
///
/// # Safety
/// The table code performs raw volatile reads and writes through the
/// pointers this trait returns, so an implementation promises:
/// * [`TableAlloc::allocate`] returns the physical address of `kind.size()`
///   bytes aligned to `kind.size()`, used by nothing else until
///   [`TableAlloc::deallocate`]; the contents may be arbitrary (the table code
///   clears a new table).
/// * [`TableAlloc::table_ptr`] returns `Some` only for a pointer valid for
///   reads and writes of `kind.size()` bytes, aligned to 4, that stays valid
///   as long as the allocator lives; and `None` for any address outside the
///   memory it manages. (A descriptor read from a table can name any
///   address; the table code asks `table_ptr` before following it, so a
///   corrupted or foreign table yields an error, never a wild access.)
///
/// [`TableAlloc::table_mva`] returns the address the CPU's D-cache knows that
/// memory by, so the table code can clean the lines the hardware walker reads.
pub unsafe trait TableAlloc {
    /// Allocates a table of `kind`.
    fn allocate(&mut self, kind: TableKind) -> Result<PhysAddr, AllocError>;

    /// Returns a table to the allocator.
    ///
    /// # Safety
    /// `pa` came from [`TableAlloc::allocate`] with the same `kind`, and no
    /// descriptor or translation table base still points at it.
    unsafe fn deallocate(&mut self, kind: TableKind, pa: PhysAddr);

    /// Pointer to the first entry of the table of `kind` at `pa`, or `None`
    /// if that memory is not table memory this allocator can reach.
    fn table_ptr(&self, kind: TableKind, pa: PhysAddr) -> Option<NonNull<u32>>;

    /// The modified virtual address of the table at `pa`, for cache maintenance.
    fn table_mva(&self, pa: PhysAddr) -> ModifiedVirtAddr;
}

// SAFETY: every method goes to the borrowed allocator, which keeps the
// contract; its pointers stay valid as long as it lives, so at least as
// long as the reference.
unsafe impl<A: TableAlloc + ?Sized> TableAlloc for &mut A {
    #[inline]
    fn allocate(&mut self, kind: TableKind) -> Result<PhysAddr, AllocError> {
        (**self).allocate(kind)
    }
    #[inline]
    unsafe fn deallocate(&mut self, kind: TableKind, pa: PhysAddr) {
        // SAFETY: the caller's promise, for the same allocator.
        unsafe { (**self).deallocate(kind, pa) }
    }
    #[inline]
    fn table_ptr(&self, kind: TableKind, pa: PhysAddr) -> Option<NonNull<u32>> {
        (**self).table_ptr(kind, pa)
    }
    #[inline]
    fn table_mva(&self, pa: PhysAddr) -> ModifiedVirtAddr {
        (**self).table_mva(pa)
    }
}
