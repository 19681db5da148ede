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
use core::num::NonZeroU64;
use core::ptr::NonNull;

/// Which table allocator a table or a flush token came from
/// ([`TableAlloc::alloc_id`]).
///
/// A [`PageTable`](super::PageTable) remembers the id of the allocator it
/// was built with and refuses any other
/// ([`TableError::WrongAllocator`](super::TableError::WrongAllocator)); a
/// [`TableFlush`](super::TableFlush) frees a table only into the allocator
/// it came from. Two allocators may well hand out the same physical
/// addresses (two [`TablePool`](super::TablePool)s built over one base),
/// so an address alone does not say whose table it is.
///
/// Ids come from a process-wide counter ([`AllocId::fresh`]): a 64-bit
/// value that only goes up, so an id is never handed out twice (2^64 ids:
/// centuries at one allocator per nanosecond).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct AllocId(NonZeroU64);

impl AllocId {
    /// A new id, never returned before in this program.
    ///
    /// `None` only where no atomic operation is available (ARMv4/ARMv5)
    /// and interrupts could not be masked around the counter's update
    /// (the caller runs in user mode with IRQ or FIQ enabled): taking an
    /// id there could race with an interrupt handler taking one.
    #[must_use]
    pub fn fresh() -> Option<AllocId> {
        next_id().and_then(NonZeroU64::new).map(AllocId)
    }

    /// The id as a number (for logs).
    #[must_use]
    pub const fn get(self) -> u64 {
        self.0.get()
    }
}

#[cfg(target_has_atomic = "64")]
fn next_id() -> Option<u64> {
    use core::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(1);
    // Relaxed: only uniqueness matters, which the read-modify-write gives.
    let id = NEXT.fetch_add(1, Ordering::Relaxed);
    // 2^64 - 1 ids are never reached (see `AllocId`); refuse rather than wrap.
    (id != u64::MAX).then_some(id)
}

#[cfg(not(target_has_atomic = "64"))]
fn next_id() -> Option<u64> {
    use core::cell::UnsafeCell;
    /// The counter, touched only with IRQ and FIQ masked.
    struct Counter(UnsafeCell<u64>);
    // SAFETY: the cell is accessed only in `next_id`, with IRQ and FIQ
    // masked on a single-core ARMv4/ARMv5 CPU (the only targets without
    // 64-bit atomics this crate supports), so accesses never overlap.
    unsafe impl Sync for Counter {}
    static NEXT: Counter = Counter(UnsafeCell::new(1));
    crate::irq::without_interrupts(|| {
        let now = crate::irq::current();
        if !now.irq_masked() || !now.fiq_masked() {
            // User mode: the mask did not take; an interrupt handler
            // could update the counter between our read and write.
            return None;
        }
        // SAFETY: IRQ and FIQ are masked on a single core: nothing else
        // runs until they are restored, so this is the only access.
        unsafe {
            let p = NEXT.0.get();
            let id = *p;
            if id == u64::MAX {
                return None;
            }
            *p = id + 1;
            Some(id)
        }
    })
}

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
///
/// [`TableAlloc::alloc_id`] returns `Some` only with an id no other
/// allocator returns (one from [`AllocId::fresh`], kept for the allocator's
/// life and passed on by wrappers that forward every call to one
/// allocator); the table code then refuses to use this allocator's tables
/// with another one. `None` (the default) opts out of that check: tables
/// built with such an allocator are accepted only by allocators that
/// return `None` too.
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

    /// Which allocator this is (see [`AllocId`]); `None` if it does not say.
    #[inline]
    fn alloc_id(&self) -> Option<AllocId> {
        None
    }
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
    #[inline]
    fn alloc_id(&self) -> Option<AllocId> {
        (**self).alloc_id()
    }
}
