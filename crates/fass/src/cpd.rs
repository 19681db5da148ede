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
//!
//! A CPD is built only from a [`KernelTable`], the kernel's table vouched
//! for as the one the CPU walks; its writes are therefore this crate's own
//! (crate-private): no safe caller can put an arbitrary descriptor into the
//! live table.

use crate::kernel_table::KernelTable;
use crate::layout::SLOT_COUNT;
use mmu_armv5::descriptor::{L1Descriptor, L1Encoding};
use mmu_armv5::maint::CacheMaintenance;
use mmu_armv5::table::{TableAlloc, TableError, TableKind, TableRef};
use mmu_armv5::{ModifiedVirtAddr, PhysAddr};

/// The caching page directory.
#[derive(Debug, PartialEq, Eq)]
pub struct Cpd {
    kernel: KernelTable,
    /// Where the table is reached, once [`Cpd::pin`] cached it.
    pinned: Option<Pinned>,
}

/// The CPD's virtual address and the MVA its D-cache lines are known by,
/// cached by [`Cpd::pin`] for the fast fault path
/// ([`Fass::resolve_fast`](crate::Fass::resolve_fast)). The address is kept
/// as an integer so that a [`Cpd`] stays `Send` like the rest of the
/// manager; it is turned back into a pointer only in [`Cpd::read_pinned`]
/// and [`Cpd::write_pinned`], under the promise [`Cpd::pin`] was given.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Pinned {
    va: usize,
    mva: u32,
}

impl Cpd {
    /// Takes over the kernel's table (the boot table, holding the kernel's
    /// own mappings, loaded in the translation table base for good); entries
    /// are written in its encoding.
    #[must_use]
    pub const fn new(kernel: KernelTable) -> Cpd {
        Cpd {
            kernel,
            pinned: None,
        }
    }

    fn table(&self) -> TableRef {
        self.kernel.table()
    }

    /// The kernel table this CPD was built from.
    #[must_use]
    pub const fn kernel(&self) -> &KernelTable {
        &self.kernel
    }

    /// Caches where the table is reached through `alloc` (its pointer and
    /// the MVA of its D-cache lines), so that [`Cpd::read_pinned`] and the
    /// crate's pinned writes need no allocator lookup: what the fast fault
    /// path ([`Fass::resolve_fast`](crate::Fass::resolve_fast)) works with.
    /// Errors if `alloc` cannot reach the table.
    ///
    /// # Safety
    /// The pointer `alloc.table_ptr` returns for this table must stay valid
    /// for reads and writes of the whole table (16 KiB) for as long as this
    /// `Cpd` exists, and `alloc.table_mva` must stay the address its lines
    /// are cached by: the table is never freed nor moved, and its memory
    /// outlives the `Cpd` (a kernel's static page directory, or a test
    /// allocator declared before the manager).
    pub unsafe fn pin<A: TableAlloc + ?Sized>(&mut self, alloc: &A) -> Result<(), TableError> {
        let p = alloc
            .table_ptr(TableKind::L1, self.table().pa)
            .ok_or(TableError::UnreachableTable(self.table().pa))?;
        self.pinned = Some(Pinned {
            va: p.as_ptr() as usize,
            mva: alloc.table_mva(self.table().pa).as_u32(),
        });
        Ok(())
    }

    /// Whether [`Cpd::pin`] cached the table's address.
    #[must_use]
    pub const fn is_pinned(&self) -> bool {
        self.pinned.is_some()
    }

    /// The raw word in `slot` (`slot & 0xFFF`: a slot index is an address's
    /// top 12 bits) read through the pinned address; `None` if not pinned.
    #[inline]
    #[must_use]
    pub fn read_pinned(&self, slot: usize) -> Option<u32> {
        let p = self.pinned?;
        let ptr = p.va as *const u32;
        // SAFETY: `pin`'s caller promised 4096 readable words behind `va`
        // for this `Cpd`'s lifetime; the index is masked below 4096.
        Some(unsafe { ptr.add(slot & 0xFFF).read_volatile() })
    }

    /// Writes the raw word `raw` (in the CPD's encoding) into `slot`
    /// (`slot & 0xFFF`) through the pinned address, then cleans the entry's
    /// D-cache line and drains the write buffer, as [`Cpd::write`] does;
    /// `false` (nothing written) if not pinned.
    #[inline]
    pub(crate) fn write_pinned<S: CacheMaintenance + ?Sized>(
        &mut self,
        sys: &mut S,
        slot: usize,
        raw: u32,
    ) -> bool {
        let Some(p) = self.pinned else {
            return false;
        };
        let i = slot & 0xFFF;
        let ptr = p.va as *mut u32;
        // SAFETY: as in `read_pinned`, writable too (`pin`'s contract).
        unsafe { ptr.add(i).write_volatile(raw) };
        let mva = ModifiedVirtAddr::new(p.mva.wrapping_add(4 * i as u32));
        sys.clean_dcache_line(mva);
        sys.drain_write_buffer();
        true
    }

    /// The first-level encoding entries are written in.
    #[must_use]
    pub const fn encoding(&self) -> L1Encoding {
        self.kernel.encoding()
    }

    /// The physical address to load into the translation table base.
    #[must_use]
    pub const fn root(&self) -> PhysAddr {
        self.kernel.root()
    }

    /// The raw word in `slot`.
    pub fn raw<A: TableAlloc + ?Sized>(&self, alloc: &A, slot: usize) -> Result<u32, TableError> {
        self.table().read(alloc, slot)
    }

    /// The descriptor in `slot`.
    pub fn entry<A: TableAlloc + ?Sized>(
        &self,
        alloc: &A,
        slot: usize,
    ) -> Result<L1Descriptor, TableError> {
        Ok(L1Descriptor::from_bits(self.table().read(alloc, slot)?))
    }

    /// Writes `desc` into `slot` (in the CPD's encoding), then cleans the
    /// entry's D-cache line and drains the write buffer so the walker sees
    /// it. TLB maintenance for the old entry is the caller's.
    pub(crate) fn write<S: TableAlloc + CacheMaintenance + ?Sized>(
        &mut self,
        sys: &mut S,
        slot: usize,
        desc: L1Descriptor,
    ) -> Result<(), TableError> {
        // SAFETY: the CPD is this crate's own first-level table, not one a
        // `PageTable` manages or a `TableFlush` frees.
        unsafe {
            self.table()
                .write(sys, slot, desc.encode(self.encoding()))?
        };
        let mva = self.table().entry_mva(sys, slot);
        sys.clean_dcache_range(mva, 4);
        Ok(())
    }

    /// Writes the raw word `raw`, already in the CPD's encoding, into
    /// `slot`, with the same maintenance as [`Cpd::write`].
    pub(crate) fn write_raw<S: TableAlloc + CacheMaintenance + ?Sized>(
        &mut self,
        sys: &mut S,
        slot: usize,
        raw: u32,
    ) -> Result<(), TableError> {
        // SAFETY: as in `write`: the CPD is this crate's own table.
        unsafe { self.table().write(sys, slot, raw)? };
        let mva = self.table().entry_mva(sys, slot);
        sys.clean_dcache_range(mva, 4);
        Ok(())
    }

    /// Clears `slot` to a fault descriptor (with the same maintenance as
    /// [`Cpd::write`]): through the pinned address if [`Cpd::pin`] cached it
    /// (no allocator lookup: a recycle clears each slot of its victim),
    /// else as [`Cpd::write`].
    pub(crate) fn clear<S: TableAlloc + CacheMaintenance + ?Sized>(
        &mut self,
        sys: &mut S,
        slot: usize,
    ) -> Result<(), TableError> {
        if slot >= SLOT_COUNT {
            return Err(TableError::IndexOutOfRange(slot));
        }
        // A fault descriptor's word is the same in every encoding.
        const RAW: u32 = L1Descriptor::FAULT.encode(L1Encoding::Arm9);
        const _: () = assert!(RAW == L1Descriptor::FAULT.encode(L1Encoding::XScale));
        if self.write_pinned(sys, slot, RAW) {
            return Ok(());
        }
        self.write(sys, slot, L1Descriptor::FAULT)
    }
}
