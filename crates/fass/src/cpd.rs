//! The caching page directory (CPD): the one first-level table the hardware
//! walks under FASS. The translation table base points at it from boot on
//! and never changes.
//!
//! Slots are filled lazily from the current space's own directory and
//! tagged with its domain; this module only writes slots, each write
//! followed by the D-cache clean and write-buffer drain the hardware walker
//! needs. Which slot to fill, and what to flush, is decided by the caller
//! ([`crate::switch::FassSwitch`]).

use mmu_armv5::descriptor::L1Descriptor;
use mmu_armv5::maint::CacheMaintenance;
use mmu_armv5::table::{TableAlloc, TableError, TableKind, TableRef};
use mmu_armv5::PhysAddr;

/// The caching page directory.
#[derive(Debug, PartialEq, Eq)]
pub struct Cpd {
    table: TableRef,
}

impl Cpd {
    /// Takes over the 16 KiB first-level table at `root` (the boot table,
    /// holding the kernel's own mappings).
    pub fn new(root: PhysAddr) -> Result<Cpd, TableError> {
        Ok(Cpd {
            table: TableRef::new(TableKind::L1, root)?,
        })
    }

    /// The physical address to load into the translation table base.
    #[must_use]
    pub const fn root(&self) -> PhysAddr {
        self.table.pa
    }

    /// The descriptor in `slot`.
    pub fn entry<A: TableAlloc + ?Sized>(
        &self,
        alloc: &A,
        slot: usize,
    ) -> Result<L1Descriptor, TableError> {
        Ok(L1Descriptor::from_bits(self.table.read(alloc, slot)?))
    }

    /// Writes `desc` into `slot`, then cleans the entry's D-cache line and
    /// drains the write buffer so the walker sees it. TLB maintenance for
    /// the old entry is the caller's.
    pub fn write<A: TableAlloc + ?Sized, M: CacheMaintenance + ?Sized>(
        &mut self,
        alloc: &A,
        maint: &mut M,
        slot: usize,
        desc: L1Descriptor,
    ) -> Result<(), TableError> {
        self.table.write(alloc, slot, desc.to_bits())?;
        maint.clean_dcache_range(self.table.entry_mva(alloc, slot), 4);
        Ok(())
    }

    /// Clears `slot` to a fault descriptor (with the same maintenance as [`Cpd::write`]).
    pub fn clear<A: TableAlloc + ?Sized, M: CacheMaintenance + ?Sized>(
        &mut self,
        alloc: &A,
        maint: &mut M,
        slot: usize,
    ) -> Result<(), TableError> {
        self.write(alloc, maint, slot, L1Descriptor::FAULT)
    }
}
