//! The caching page directory (CPD): the one first-level table the hardware
//! walks under FASS. The translation table base points at it from boot on
//! and never changes.
//!
//! Slots are filled lazily from the current space's own directory and
//! tagged with its domain; this module only writes slots, each write
//! followed by the D-cache clean and write-buffer drain the hardware walker
//! needs. Entries are written in the CPU's first-level encoding
//! ([`L1Encoding`]: bit 4 set on ARM9/StrongARM, clear on XScale). Which
//! slot to fill, and what to flush, is decided by the caller
//! ([`crate::manager::Fass`]).

use mmu_armv5::descriptor::{L1Descriptor, L1Encoding};
use mmu_armv5::maint::CacheMaintenance;
use mmu_armv5::table::{TableAlloc, TableError, TableKind, TableRef};
use mmu_armv5::PhysAddr;

/// The caching page directory.
#[derive(Debug, PartialEq, Eq)]
pub struct Cpd {
    table: TableRef,
    encoding: L1Encoding,
}

impl Cpd {
    /// Takes over the 16 KiB first-level table at `root` (the boot table,
    /// holding the kernel's own mappings); entries are written in `encoding`.
    pub fn new(root: PhysAddr, encoding: L1Encoding) -> Result<Cpd, TableError> {
        Ok(Cpd {
            table: TableRef::new(TableKind::L1, root)?,
            encoding,
        })
    }

    /// The first-level encoding entries are written in.
    #[must_use]
    pub const fn encoding(&self) -> L1Encoding {
        self.encoding
    }

    /// The physical address to load into the translation table base.
    #[must_use]
    pub const fn root(&self) -> PhysAddr {
        self.table.pa
    }

    /// The raw word in `slot`.
    pub fn raw<A: TableAlloc + ?Sized>(&self, alloc: &A, slot: usize) -> Result<u32, TableError> {
        self.table.read(alloc, slot)
    }

    /// The descriptor in `slot`.
    pub fn entry<A: TableAlloc + ?Sized>(
        &self,
        alloc: &A,
        slot: usize,
    ) -> Result<L1Descriptor, TableError> {
        Ok(L1Descriptor::from_bits(self.table.read(alloc, slot)?))
    }

    /// Writes `desc` into `slot` (in the CPD's encoding), then cleans the
    /// entry's D-cache line and drains the write buffer so the walker sees
    /// it. TLB maintenance for the old entry is the caller's.
    pub fn write<S: TableAlloc + CacheMaintenance + ?Sized>(
        &mut self,
        sys: &mut S,
        slot: usize,
        desc: L1Descriptor,
    ) -> Result<(), TableError> {
        self.table.write(sys, slot, desc.encode(self.encoding))?;
        let mva = self.table.entry_mva(sys, slot);
        sys.clean_dcache_range(mva, 4);
        Ok(())
    }

    /// Writes the raw word `raw`, already in the CPD's encoding, into
    /// `slot`, with the same maintenance as [`Cpd::write`].
    pub fn write_raw<S: TableAlloc + CacheMaintenance + ?Sized>(
        &mut self,
        sys: &mut S,
        slot: usize,
        raw: u32,
    ) -> Result<(), TableError> {
        self.table.write(sys, slot, raw)?;
        let mva = self.table.entry_mva(sys, slot);
        sys.clean_dcache_range(mva, 4);
        Ok(())
    }

    /// Clears `slot` to a fault descriptor (with the same maintenance as [`Cpd::write`]).
    pub fn clear<S: TableAlloc + CacheMaintenance + ?Sized>(
        &mut self,
        sys: &mut S,
        slot: usize,
    ) -> Result<(), TableError> {
        self.write(sys, slot, L1Descriptor::FAULT)
    }
}
