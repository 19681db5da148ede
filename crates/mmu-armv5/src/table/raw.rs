//! Entry-level access to table memory handed out by a [`TableAlloc`].
//!
//! Every read and write of a translation table in this crate goes through
//! [`TableRef`]: a table's kind and physical address, resolved to a pointer
//! by the allocator on each access, bounds-checked, and accessed with
//! volatile operations (the hardware walker reads the same memory).
//!
//! Reads are safe. Writes are `unsafe`: a [`TableRef`] can name any table,
//! including one a [`PageTable`](super::PageTable) manages (whose
//! first-level links tell it which tables to free) or one waiting in a
//! [`TableFlush`](super::TableFlush) to be freed (linked through its first
//! entry), and a raw write there could make safe code free a table twice or
//! free one still in use.

use super::alloc::{TableAlloc, TableKind};
use super::TableError;
use crate::addr::{ModifiedVirtAddr, PhysAddr};

/// A translation table: its kind and physical address.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct TableRef {
    /// What kind of table it is.
    pub kind: TableKind,
    /// Its physical address.
    pub pa: PhysAddr,
}

impl TableRef {
    /// A table of `kind` at `pa`; `pa` must be aligned to the table size.
    pub const fn new(kind: TableKind, pa: PhysAddr) -> Result<TableRef, TableError> {
        if pa.is_aligned(kind.align()) {
            Ok(TableRef { kind, pa })
        } else {
            Err(TableError::MisalignedTable(pa))
        }
    }

    /// Allocates a new table of `kind` and clears every entry to fault.
    pub fn allocate<A: TableAlloc + ?Sized>(
        alloc: &mut A,
        kind: TableKind,
    ) -> Result<TableRef, TableError> {
        let pa = alloc
            .allocate(kind)
            .map_err(|_| TableError::OutOfTableMemory)?;
        let t = match TableRef::new(kind, pa) {
            Ok(t) => t,
            Err(e) => {
                // SAFETY: `pa` was just allocated with `kind` and nothing points at it.
                unsafe { alloc.deallocate(kind, pa) };
                return Err(e);
            }
        };
        match t.ptr(alloc) {
            Ok(p) => {
                for i in 0..kind.entries() {
                    // SAFETY: `TableAlloc::table_ptr` promises `kind.size()` valid
                    // bytes (= `kind.entries()` words) behind `p`; `i` is in range.
                    unsafe { p.add(i).write_volatile(0) };
                }
                Ok(t)
            }
            Err(e) => {
                // SAFETY: as above: just allocated, unreferenced.
                unsafe { alloc.deallocate(kind, pa) };
                Err(e)
            }
        }
    }

    fn ptr<A: TableAlloc + ?Sized>(self, alloc: &A) -> Result<*mut u32, TableError> {
        alloc
            .table_ptr(self.kind, self.pa)
            .map(|p| p.as_ptr())
            .ok_or(TableError::UnreachableTable(self.pa))
    }

    /// Reads entry `index`.
    pub fn read<A: TableAlloc + ?Sized>(self, alloc: &A, index: usize) -> Result<u32, TableError> {
        if index >= self.kind.entries() {
            return Err(TableError::IndexOutOfRange(index));
        }
        let p = self.ptr(alloc)?;
        // SAFETY: `table_ptr` returned a pointer valid for `kind.entries()` words,
        // and `index` is below that.
        Ok(unsafe { p.add(index).read_volatile() })
    }

    /// Writes entry `index`. The caller is responsible for the cache clean and
    /// TLB maintenance the change needs (the mapper returns a token for it).
    ///
    /// # Safety
    /// The table is one the caller manages itself: not the first-level or a
    /// second-level table of a [`PageTable`](super::PageTable) (or, if it is,
    /// the write does not change which table a first-level entry links), and
    /// not a table handed to a [`TableFlush`](super::TableFlush) to be freed.
    pub unsafe fn write<A: TableAlloc + ?Sized>(
        self,
        alloc: &A,
        index: usize,
        value: u32,
    ) -> Result<(), TableError> {
        if index >= self.kind.entries() {
            return Err(TableError::IndexOutOfRange(index));
        }
        let p = self.ptr(alloc)?;
        // SAFETY: as in `read`.
        unsafe { p.add(index).write_volatile(value) };
        Ok(())
    }

    /// Writes `count` consecutive entries starting at `index` with `value`.
    ///
    /// # Safety
    /// As for [`TableRef::write`].
    pub unsafe fn fill<A: TableAlloc + ?Sized>(
        self,
        alloc: &A,
        index: usize,
        count: usize,
        value: u32,
    ) -> Result<(), TableError> {
        let end = index
            .checked_add(count)
            .ok_or(TableError::IndexOutOfRange(index))?;
        if end > self.kind.entries() {
            return Err(TableError::IndexOutOfRange(end));
        }
        let p = self.ptr(alloc)?;
        for i in index..end {
            // SAFETY: as in `read`; `i < end <= entries`.
            unsafe { p.add(i).write_volatile(value) };
        }
        Ok(())
    }

    /// Whether every entry is a fault descriptor.
    pub fn is_empty<A: TableAlloc + ?Sized>(self, alloc: &A) -> Result<bool, TableError> {
        let p = self.ptr(alloc)?;
        for i in 0..self.kind.entries() {
            // SAFETY: as in `read`.
            if unsafe { p.add(i).read_volatile() } & 3 != 0 {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// The MVA of entry `index`, for cleaning its D-cache line: the table's
    /// MVA plus `4 * index`, modulo 4 GiB (`index` is not checked against
    /// the table's size).
    #[must_use]
    pub fn entry_mva<A: TableAlloc + ?Sized>(self, alloc: &A, index: usize) -> ModifiedVirtAddr {
        let base = alloc.table_mva(self.pa);
        ModifiedVirtAddr::new(base.as_u32().wrapping_add((index as u32).wrapping_mul(4)))
    }
}
