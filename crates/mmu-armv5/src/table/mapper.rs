//! A hardware page table: map, unmap, protect, look up and iterate.
//!
//! [`PageTable`] names an L1 table (16 KiB, 4096 one-MiB slots) and the
//! second-level tables hanging off it, all in memory from a [`TableAlloc`].
//! Addresses are modified virtual addresses ([`ModifiedVirtAddr`]): page
//! tables are indexed after FCSE relocation.
//!
//! Every change returns a [`TableFlush`] naming the cache and TLB maintenance
//! it needs. Operations are all-or-nothing: they check the whole range and
//! allocate every new table before writing anything.
//!
//! # Which tables a `PageTable` frees
//! A `PageTable` owns the second-level tables it allocated itself (in
//! [`PageTable::map`]) and keeps one bit per first-level slot saying so. It
//! frees an owned table only when it unlinks it, and only through the
//! [`TableFlush`] of that change, after the maintenance that makes the table
//! unreachable. Tables linked any other way (adopted with
//! [`PageTable::from_root`], shared with [`PageTable::share_l1_entries`],
//! installed with [`PageTable::set_l1_entry_unchecked`]) are never freed by
//! it. Safe code cannot link a table into a second slot:
//! [`PageTable::set_l1_entry`] refuses table descriptors.

use super::alloc::{AllocId, TableAlloc, TableKind};
use super::flush::TableFlush;
use super::raw::TableRef;
use super::TableError;
use crate::addr::{check_aligned, Align, Domain, ModifiedVirtAddr, PhysAddr};
use crate::descriptor::{
    AccessPermission, CachePolicy, CoarseTableDesc, FineTableDesc, L1Descriptor, L1Encoding,
    L2Descriptor, LargePageDesc, SectionDesc, SmallPageDesc, SubpageAp, Tex, TinyPageDesc,
};
use crate::size::{Frame, PageSizeKind};
use core::fmt;
use core::ops::Range;

const MIB: u32 = 1 << 20;
/// First-level slots.
const SLOTS: usize = 4096;
/// Words of a bit set with one bit per first-level slot.
const SLOT_WORDS: usize = 128;
const _: () = assert!(SLOT_WORDS * 32 == SLOTS);

/// Attributes of a new mapping.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct MapAttrs {
    /// Domain (one per MiB: every mapping in a MiB shares its first-level entry's domain).
    pub domain: Domain,
    /// Access permission (all subpages).
    pub ap: AccessPermission,
    /// C and B bits.
    pub cache: CachePolicy,
    /// XScale TEX bits (sections, large and tiny pages; zero elsewhere).
    pub tex: Tex,
}

impl MapAttrs {
    /// Attributes with TEX zero.
    #[must_use]
    pub const fn new(domain: Domain, ap: AccessPermission, cache: CachePolicy) -> MapAttrs {
        MapAttrs {
            domain,
            ap,
            cache,
            tex: Tex::ZERO,
        }
    }
}

/// Which page sizes [`PageTable::map`] may use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum SizePolicy {
    /// The largest size that fits the alignment of both addresses and the
    /// remaining length at each step; tiny pages only where 4 KiB alignment
    /// is missing.
    Largest,
    /// Exactly this size; addresses and length must be multiples of it.
    Exactly(PageSizeKind),
}

/// One mapping found in a table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Mapping {
    /// First MVA of the page.
    pub mva: ModifiedVirtAddr,
    /// First physical address of the page.
    pub pa: PhysAddr,
    /// Page size.
    pub size: PageSizeKind,
    /// Domain from the first-level entry.
    pub domain: Domain,
    /// Access permission per subpage (uniform for sections and tiny pages).
    pub ap: SubpageAp,
    /// C and B bits.
    pub cache: CachePolicy,
}

/// A first-level table and its second-level tables.
///
/// See the [module documentation](self) for which tables it frees.
///
/// ```
/// use mmu_armv5::descriptor::{AccessPermission, CachePolicy};
/// use mmu_armv5::maint::Arm926;
/// use mmu_armv5::regs::MockCp15;
/// use mmu_armv5::size::PageSizeKind;
/// use mmu_armv5::table::{MapAttrs, PageTable, PoolBlock, SizePolicy, TableError, TablePool};
/// use mmu_armv5::{Domain, ModifiedVirtAddr as Mva, PhysAddr};
///
/// // Table memory (heap on the host, a static array in a kernel): 2 x 16 KiB
/// // at "physical" 16 MiB, which the D-cache knows at 0xC100_0000.
/// let mut mem = Box::new([PoolBlock::ZERO; 2]);
/// let mut pool = TablePool::new(&mut *mem, PhysAddr::new(0x0100_0000), Mva::new(0xC100_0000))?;
/// // The maintenance a change needs, here recorded by a mock ARM926EJ-S.
/// let mut cpu = Arm926::new(MockCp15::arm926());
///
/// let mut pt = PageTable::new(&mut pool)?;
/// assert_eq!(pool.free_units(), 16); // the 16 KiB first-level table took one block
/// let attrs = MapAttrs::new(Domain::new(1)?, AccessPermission::ReadWrite, CachePolicy::WriteBack);
/// // 68 KiB: the largest pages that fit are one 64 KiB page and one 4 KiB page.
/// pt.map(&mut pool, Mva::new(0x1_0000), PhysAddr::new(0x40_0000), 0x11000, attrs, SizePolicy::Largest)?
///     .flush(&mut cpu, &mut pool);
/// assert_eq!(pool.free_units(), 15); // plus one 1 KiB coarse table
///
/// let large = pt.lookup(&pool, Mva::new(0x1_8004))?.unwrap();
/// assert_eq!((large.mva, large.pa, large.size), (Mva::new(0x1_0000), PhysAddr::new(0x40_0000), PageSizeKind::Large));
/// let small = pt.lookup(&pool, Mva::new(0x2_0123))?.unwrap();
/// assert_eq!((small.pa, small.size), (PhysAddr::new(0x41_0000), PageSizeKind::Small));
/// assert_eq!(pt.lookup(&pool, Mva::new(0x2_1000))?, None);
///
/// // Operations are all-or-nothing: an overlap changes nothing.
/// let again = pt.map(&mut pool, Mva::new(0x2_0000), PhysAddr::new(0x50_0000), 0x2000, attrs, SizePolicy::Largest);
/// assert_eq!(again, Err(TableError::AlreadyMapped(Mva::new(0x2_0000))));
///
/// // Unmapping everything empties the coarse table; the token frees it
/// // only after the TLB and cache maintenance.
/// let flush = pt.unmap(&mut pool, Mva::new(0x1_0000), 0x11000)?;
/// assert_eq!(flush.tables_to_free(), 1);
/// flush.flush(&mut cpu, &mut pool);
/// assert_eq!(pool.free_units(), 16);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(PartialEq, Eq)]
pub struct PageTable {
    root: TableRef,
    encoding: L1Encoding,
    owns_root: bool,
    /// The allocator the table was built with (see [`AllocId`]).
    owner: Owner,
    /// Bit `slot`: the table linked at `slot`, if any, was allocated by this
    /// `PageTable` and is freed by it when unlinked.
    owned: [u32; SLOT_WORDS],
}

impl fmt::Debug for PageTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PageTable")
            .field("root", &self.root)
            .field("encoding", &self.encoding)
            .field("owns_root", &self.owns_root)
            .field(
                "owned_tables",
                &self.owned.iter().map(|w| w.count_ones()).sum::<u32>(),
            )
            .finish()
    }
}

/// Which allocator a [`PageTable`] accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Owner {
    /// Only the one with this id (`None`: one that gives no id).
    Of(Option<AllocId>),
    /// Any: an adopted root ([`PageTable::from_root`]), whose contract
    /// names the allocator.
    Adopted,
}

/// Tables allocated by [`PageTable::map`] before it writes anything, in the
/// order their slots will take them, linked through their first entry (a
/// fault descriptor word holding the next table's address): no memory
/// beyond the tables themselves, however many a call needs.
struct Fresh {
    head: Option<TableRef>,
    tail: Option<TableRef>,
}

impl Fresh {
    const fn new() -> Fresh {
        Fresh {
            head: None,
            tail: None,
        }
    }

    /// Allocates a cleared table of `kind` and appends it.
    fn push<A: TableAlloc + ?Sized>(
        &mut self,
        alloc: &mut A,
        kind: TableKind,
    ) -> Result<(), TableError> {
        let t = TableRef::allocate(alloc, kind)?;
        if let Some(tail) = self.tail {
            // SAFETY: `tail` is a table this call allocated and has not
            // linked anywhere; its first entry holds the chain (bits [1:0]
            // clear) until it is linked.
            unsafe { tail.write(alloc, 0, t.pa.as_u32() | chain_kind(kind))? };
        } else {
            self.head = Some(t);
        }
        self.tail = Some(t);
        Ok(())
    }

    /// Takes the first table, clearing its chain word.
    fn pop<A: TableAlloc + ?Sized>(&mut self, alloc: &A) -> Result<TableRef, TableError> {
        let t = self.head.ok_or(TableError::OutOfTableMemory)?;
        let word = t.read(alloc, 0)?;
        // SAFETY: as in `push`: an allocated, unlinked table of this call.
        unsafe { t.write(alloc, 0, 0)? };
        self.head = if self.tail == Some(t) {
            self.tail = None;
            None
        } else {
            chain_next(word)
        };
        Ok(t)
    }

    /// Frees every table not taken (none was ever linked).
    fn free<A: TableAlloc + ?Sized>(mut self, alloc: &mut A) {
        while self.head.is_some() {
            match self.pop(alloc) {
                // SAFETY: allocated by this call and never linked anywhere.
                Ok(t) => unsafe { alloc.deallocate(t.kind, t.pa) },
                // Unreachable with a conforming allocator; the rest leaks.
                Err(_) => break,
            }
        }
    }
}

fn chain_kind(kind: TableKind) -> u32 {
    match kind {
        TableKind::Fine => 1 << 2,
        _ => 0,
    }
}

fn chain_next(word: u32) -> Option<TableRef> {
    let kind = if word & (1 << 2) != 0 {
        TableKind::Fine
    } else {
        TableKind::Coarse
    };
    TableRef::new(kind, PhysAddr::new(word & !kind.align().mask())).ok()
}

fn kib_range(mva: ModifiedVirtAddr, pa: PhysAddr, len: u32) -> Result<(), TableError> {
    check_aligned(mva.as_u32(), Align::KIB_1)?;
    check_aligned(pa.as_u32(), Align::KIB_1)?;
    check_len(mva, len)?;
    if pa.as_u32().checked_add(len - 1).is_none() {
        return Err(TableError::AddressOverflow);
    }
    Ok(())
}

fn check_len(mva: ModifiedVirtAddr, len: u32) -> Result<(), TableError> {
    if len == 0 {
        return Err(TableError::EmptyRange);
    }
    check_aligned(len, Align::KIB_1).map_err(|_| TableError::BadLength(len))?;
    if mva.as_u32().checked_add(len - 1).is_none() {
        return Err(TableError::AddressOverflow);
    }
    Ok(())
}

/// The page size to use at `mva`/`pa` with `remaining` bytes left.
fn chunk_size(
    mva: u32,
    pa: u32,
    remaining: u32,
    policy: SizePolicy,
) -> Result<PageSizeKind, TableError> {
    match policy {
        SizePolicy::Exactly(k) => {
            let s = k.size();
            check_aligned(mva, k.align())?;
            check_aligned(pa, k.align())?;
            if remaining < s || !remaining.is_multiple_of(s) {
                return Err(TableError::BadLength(remaining));
            }
            Ok(k)
        }
        SizePolicy::Largest => {
            for k in PageSizeKind::LARGEST_FIRST {
                let s = k.size();
                if mva.is_multiple_of(s) && pa.is_multiple_of(s) && remaining >= s {
                    return Ok(k);
                }
            }
            // Unreachable with a checked 1 KiB-aligned range; report it as such.
            Err(TableError::BadLength(remaining))
        }
    }
}

/// Where the entries for a page of `size` at `mva` sit in a table of `kind`:
/// (first index, count).
fn l2_slots(kind: TableKind, mva: u32, size: PageSizeKind) -> Result<(usize, usize), TableError> {
    match kind {
        TableKind::Coarse => {
            let idx = ((mva >> 12) & 0xFF) as usize;
            match size {
                PageSizeKind::Large => Ok((idx & !15, 16)),
                PageSizeKind::Small => Ok((idx, 1)),
                _ => Err(TableError::TinyPageInCoarseTable(ModifiedVirtAddr::new(
                    mva,
                ))),
            }
        }
        TableKind::Fine => {
            let idx = ((mva >> 10) & 0x3FF) as usize;
            match size {
                PageSizeKind::Large => Ok((idx & !63, 64)),
                PageSizeKind::Small => Ok((idx & !3, 4)),
                PageSizeKind::Tiny => Ok((idx, 1)),
                PageSizeKind::Section => Err(TableError::BadLength(MIB)),
            }
        }
        TableKind::L1 => Err(TableError::NotSecondLevel(PhysAddr::new(0))),
    }
}

/// The second-level index of `mva` in a table of `kind`.
fn l2_index(kind: TableKind, mva: u32) -> usize {
    match kind {
        TableKind::Fine => ((mva >> 10) & 0x3FF) as usize,
        _ => ((mva >> 12) & 0xFF) as usize,
    }
}

fn l2_descriptor(size: PageSizeKind, pa: u32, attrs: MapAttrs) -> L2Descriptor {
    let ap = SubpageAp::uniform(attrs.ap);
    match size {
        PageSizeKind::Large => L2Descriptor::Large(LargePageDesc {
            frame: Frame::containing(PhysAddr::new(pa)),
            ap,
            cache: attrs.cache,
            tex: attrs.tex,
        }),
        PageSizeKind::Small => L2Descriptor::Small(SmallPageDesc {
            frame: Frame::containing(PhysAddr::new(pa)),
            ap,
            cache: attrs.cache,
        }),
        _ => L2Descriptor::Tiny(TinyPageDesc {
            frame: Frame::containing(PhysAddr::new(pa)),
            ap: attrs.ap,
            cache: attrs.cache,
            tex: attrs.tex,
        }),
    }
}

/// Writes a page descriptor into a second-level table, replicated as the
/// table kind requires (a large page fills 16 coarse or 64 fine entries, a
/// small page 4 fine entries). Records the written table memory in `flush`.
///
/// This is the building block for code that keeps its own second-level
/// tables outside a [`PageTable`] (for example per-space directories that
/// the hardware never walks).
///
/// # Safety
/// As for [`TableRef::write`]: `table` is a second-level table the caller
/// manages (or one of a [`PageTable`]'s, whose first-level links this never
/// changes), not a table handed to a [`TableFlush`] to be freed.
pub unsafe fn write_l2_page<A: TableAlloc + ?Sized>(
    alloc: &A,
    table: TableRef,
    mva: ModifiedVirtAddr,
    desc: L2Descriptor,
    flush: &mut TableFlush,
) -> Result<(), TableError> {
    let size = match desc.size() {
        Some(s) => s,
        None => {
            // A fault: clear the single entry the address selects.
            if table.kind == TableKind::L1 {
                return Err(TableError::NotSecondLevel(table.pa));
            }
            let idx = l2_index(table.kind, mva.as_u32());
            // SAFETY: the caller's contract.
            unsafe { table.write(alloc, idx, desc.to_bits())? };
            flush.table_written(table.entry_mva(alloc, idx), 4);
            return Ok(());
        }
    };
    let (first, count) = l2_slots(table.kind, mva.as_u32(), size)?;
    // SAFETY: the caller's contract.
    unsafe { table.fill(alloc, first, count, desc.to_bits())? };
    flush.table_written(table.entry_mva(alloc, first), 4 * count as u32);
    Ok(())
}

impl PageTable {
    /// Allocates an empty L1 table (every slot a fault).
    pub fn new<A: TableAlloc + ?Sized>(alloc: &mut A) -> Result<PageTable, TableError> {
        PageTable::with_encoding(alloc, L1Encoding::Arm9)
    }

    /// Allocates an empty L1 table whose first-level entries will be written
    /// in `encoding` (use [`L1Encoding::XScale`] on XScale cores).
    pub fn with_encoding<A: TableAlloc + ?Sized>(
        alloc: &mut A,
        encoding: L1Encoding,
    ) -> Result<PageTable, TableError> {
        Ok(PageTable {
            root: TableRef::allocate(alloc, TableKind::L1)?,
            encoding,
            owns_root: true,
            owner: Owner::Of(alloc.alloc_id()),
            owned: [0; SLOT_WORDS],
        })
    }

    /// Takes over an existing L1 table at `root` (for example one built by boot code).
    ///
    /// Every access still goes through the allocator's `table_ptr`, which
    /// refuses memory it cannot reach. The adopted table and the
    /// second-level tables it links already are never freed by this
    /// `PageTable` (not by [`PageTable::unmap`], not by
    /// [`PageTable::release`]); the tables it allocates from now on are.
    ///
    /// # Safety
    ///
    /// While the returned `PageTable` is used, no other `PageTable` may
    /// change the first-level table at `root` or free a second-level table
    /// it links. Each `PageTable` remembers which second-level tables it
    /// allocated; two of them managing one root could free a table the
    /// other linked since (the hardware would walk freed memory), or give a
    /// table away (e.g. [`PageTable::share_l1_entries`]) that its real owner
    /// frees later. The allocator passed to its methods is the one whose
    /// memory holds the table: an adopted table accepts any allocator
    /// ([`PageTable::check_alloc`] has no id to compare).
    pub unsafe fn from_root(root: PhysAddr, encoding: L1Encoding) -> Result<PageTable, TableError> {
        Ok(PageTable {
            root: TableRef::new(TableKind::L1, root)?,
            encoding,
            owns_root: false,
            owner: Owner::Adopted,
            owned: [0; SLOT_WORDS],
        })
    }

    /// Checks that `alloc` is the allocator this table was built with.
    ///
    /// Every method that takes an allocator starts with this check: a
    /// table is never read, changed or freed through another allocator,
    /// which could hand the same physical addresses to other tables (two
    /// [`TablePool`](super::TablePool)s over one base).
    ///
    /// # Errors
    /// [`TableError::WrongAllocator`] if `alloc`'s [`TableAlloc::alloc_id`]
    /// is not the one the table was built with. A table adopted with
    /// [`PageTable::from_root`] accepts any (its contract names the
    /// allocator).
    #[inline]
    pub fn check_alloc<A: TableAlloc + ?Sized>(&self, alloc: &A) -> Result<(), TableError> {
        match self.owner {
            Owner::Of(id) if id != alloc.alloc_id() => Err(TableError::WrongAllocator),
            _ => Ok(()),
        }
    }

    /// The id of the allocator this table was built with, if it gave one
    /// (`None` as well for a table adopted with [`PageTable::from_root`]).
    #[must_use]
    pub const fn alloc_id(&self) -> Option<AllocId> {
        match self.owner {
            Owner::Of(id) => id,
            Owner::Adopted => None,
        }
    }

    /// Physical address of the L1 table (the translation table base to load).
    #[must_use]
    pub const fn root(&self) -> PhysAddr {
        self.root.pa
    }

    /// The L1 table as a [`TableRef`].
    #[must_use]
    pub const fn root_table(&self) -> TableRef {
        self.root
    }

    /// The encoding first-level entries are written in.
    #[must_use]
    pub const fn encoding(&self) -> L1Encoding {
        self.encoding
    }

    /// Whether the second-level table linked at first-level slot `index`,
    /// if any, was allocated by this `PageTable` (which then frees it when
    /// it unlinks it). `false` for an index past the table.
    #[must_use]
    pub const fn owns_l2_table(&self, index: usize) -> bool {
        index < SLOTS && self.owned[index / 32] & (1 << (index % 32)) != 0
    }

    fn set_owned(&mut self, index: usize, owned: bool) {
        if let Some(w) = self.owned.get_mut(index / 32) {
            if owned {
                *w |= 1 << (index % 32);
            } else {
                *w &= !(1 << (index % 32));
            }
        }
    }

    /// The table linked at `index` if this `PageTable` owns it.
    fn owned_table<A: TableAlloc + ?Sized>(
        &self,
        alloc: &A,
        index: usize,
    ) -> Result<Option<TableRef>, TableError> {
        if !self.owns_l2_table(index) {
            return Ok(None);
        }
        match self.l1_entry(alloc, index)?.table() {
            Some((kind, pa)) => Ok(Some(TableRef::new(kind, pa)?)),
            None => Ok(None),
        }
    }

    /// Reads first-level slot `index` (0..4096).
    pub fn l1_entry<A: TableAlloc + ?Sized>(
        &self,
        alloc: &A,
        index: usize,
    ) -> Result<L1Descriptor, TableError> {
        self.check_alloc(alloc)?;
        Ok(L1Descriptor::from_bits(self.root.read(alloc, index)?))
    }

    /// Writes first-level slot `index` and records the maintenance the old
    /// entry needs (none if it was a fault).
    fn write_l1<A: TableAlloc + ?Sized>(
        &mut self,
        alloc: &A,
        index: usize,
        word: u32,
        flush: &mut TableFlush,
    ) -> Result<(), TableError> {
        let old = self.l1_entry(alloc, index)?;
        // SAFETY: the root is this `PageTable`'s own table; every caller
        // keeps `owned` in step with the link it writes.
        unsafe { self.root.write(alloc, index, word)? };
        flush.table_written(self.root.entry_mva(alloc, index), 4);
        let mva = ModifiedVirtAddr::new((index as u32) << 20);
        match old {
            L1Descriptor::Fault { .. } => {}
            // One TLB entry per section.
            L1Descriptor::Section(_) => flush.tlb_stale(mva, MIB, MIB),
            // Pages of any size down to 1 KiB: more entries than are worth
            // invalidating one by one, so the whole TLB.
            _ => flush.tlb_all(),
        }
        Ok(())
    }

    /// Overwrites first-level slot `index` with `desc` (a fault or a
    /// section), in the table's encoding.
    ///
    /// The previous entry's translations may be cached, so the token asks
    /// for the TLB entries of that MiB to be invalidated unless the old entry
    /// was a fault. If the old entry linked a second-level table this
    /// `PageTable` owns, the token frees that table after the maintenance.
    ///
    /// # Errors
    /// [`TableError::TableLinkRefused`] for a coarse or fine table
    /// descriptor: a second link to a table could outlive the table (see
    /// [`PageTable::share_l1_entries`], [`PageTable::move_l1_entry`] and
    /// [`PageTable::set_l1_entry_unchecked`]); [`TableError::IndexOutOfRange`].
    pub fn set_l1_entry<A: TableAlloc + ?Sized>(
        &mut self,
        alloc: &A,
        index: usize,
        desc: L1Descriptor,
    ) -> Result<TableFlush, TableError> {
        self.check_alloc(alloc)?;
        if desc.table().is_some() {
            return Err(TableError::TableLinkRefused(index));
        }
        let old = self.owned_table(alloc, index)?;
        let mut f = TableFlush::new();
        self.write_l1(alloc, index, desc.encode(self.encoding), &mut f)?;
        self.set_owned(index, false);
        if let Some(t) = old {
            // Cannot fail: the table was just read through the same allocator.
            // If it did, the table would leak, never be freed early.
            // SAFETY: the table was this `PageTable`'s own, and the entry just
            // written was its only link; the token's maintenance makes it
            // unreachable before the free.
            let _ = unsafe { f.free_after_flush(alloc, t) };
        }
        Ok(f)
    }

    /// Overwrites first-level slot `index` with any descriptor, table links
    /// included. The slot does not own what it links: this `PageTable`
    /// never frees a table installed this way.
    ///
    /// Returns the token for the maintenance (as [`PageTable::set_l1_entry`])
    /// and, if the old entry linked a table this `PageTable` owned, that
    /// table: it is no longer linked here, and the caller now owns it (to
    /// free it after the maintenance, e.g. with
    /// [`TableFlush::free_after_flush`], or to reuse it).
    ///
    /// # Safety
    /// A second-level table `desc` links must stay a valid table (not freed,
    /// not reused) for as long as this entry links it and until the
    /// maintenance after unlinking it is done: it is not a table another
    /// slot of this `PageTable` owns (its unmap would free it), and its owner
    /// elsewhere keeps it alive.
    pub unsafe fn set_l1_entry_unchecked<A: TableAlloc + ?Sized>(
        &mut self,
        alloc: &A,
        index: usize,
        desc: L1Descriptor,
    ) -> Result<(TableFlush, Option<TableRef>), TableError> {
        self.check_alloc(alloc)?;
        let old = self.owned_table(alloc, index)?;
        let mut f = TableFlush::new();
        self.write_l1(alloc, index, desc.encode(self.encoding), &mut f)?;
        self.set_owned(index, false);
        Ok((f, old))
    }

    /// Moves first-level entry `from` to slot `to` (which must hold a
    /// fault), with the ownership of the table it links; `from` becomes a
    /// fault. For example to move a process's mappings between FCSE windows.
    ///
    /// # Errors
    /// [`TableError::AlreadyMapped`] if `to` is not a fault,
    /// [`TableError::IndexOutOfRange`].
    pub fn move_l1_entry<A: TableAlloc + ?Sized>(
        &mut self,
        alloc: &A,
        from: usize,
        to: usize,
    ) -> Result<TableFlush, TableError> {
        self.check_alloc(alloc)?;
        let word = self.root.read(alloc, from)?;
        if self.l1_entry(alloc, to)?.is_valid() {
            return Err(TableError::AlreadyMapped(ModifiedVirtAddr::new(
                (to as u32) << 20,
            )));
        }
        let mut f = TableFlush::new();
        if from == to {
            return Ok(f);
        }
        let owned = self.owns_l2_table(from);
        self.write_l1(alloc, to, word, &mut f)?;
        self.set_owned(to, owned);
        self.write_l1(alloc, from, 0, &mut f)?;
        self.set_owned(from, false);
        Ok(f)
    }

    /// Copies first-level entries `slots` of this table into the same slots
    /// of `into` (the kernel's mappings into a new process table, say).
    ///
    /// The second-level tables those entries link become shared: from now
    /// on neither table frees them (this one gives up their ownership), so
    /// they stay valid as long as any table may link them. Later changes
    /// inside a shared second-level table show in both tables; first-level
    /// changes do not.
    ///
    /// # Errors
    /// [`TableError::IndexOutOfRange`] for slots past 4096,
    /// [`TableError::AlreadyMapped`] if a slot of `into` that would receive a
    /// valid entry is not a fault (nothing is written then).
    pub fn share_l1_entries<A: TableAlloc + ?Sized>(
        &mut self,
        alloc: &A,
        into: &mut PageTable,
        slots: Range<usize>,
    ) -> Result<TableFlush, TableError> {
        self.check_alloc(alloc)?;
        if slots.end > SLOTS {
            return Err(TableError::IndexOutOfRange(slots.end));
        }
        for i in slots.clone() {
            if self.l1_entry(alloc, i)?.is_valid() && into.l1_entry(alloc, i)?.is_valid() {
                return Err(TableError::AlreadyMapped(ModifiedVirtAddr::new(
                    (i as u32) << 20,
                )));
            }
        }
        let mut f = TableFlush::new();
        for i in slots {
            let e = self.l1_entry(alloc, i)?;
            if e.is_valid() {
                self.set_owned(i, false);
                into.write_l1(alloc, i, e.encode(into.encoding), &mut f)?;
                into.set_owned(i, false);
            }
        }
        Ok(f)
    }

    /// Maps `[mva, mva + len)` to `[pa, pa + len)` with `attrs`.
    ///
    /// Errors: misaligned addresses or length (1 KiB, or the size an
    /// [`SizePolicy::Exactly`] asks for), an empty or wrapping range, any part
    /// already mapped, a MiB whose existing table has another domain, a tiny
    /// page in a MiB that has a coarse table, or no table memory (then
    /// nothing is changed: every new table is allocated before anything is
    /// written).
    pub fn map<A: TableAlloc + ?Sized>(
        &mut self,
        alloc: &mut A,
        mva: ModifiedVirtAddr,
        pa: PhysAddr,
        len: u32,
        attrs: MapAttrs,
        policy: SizePolicy,
    ) -> Result<TableFlush, TableError> {
        self.check_alloc(alloc)?;
        kib_range(mva, pa, len)?;
        // Pass 1: check every chunk; note which MiBs need a new table, and
        // which of those a fine one.
        let mut needs_table = [0u32; SLOT_WORDS];
        let mut needs_fine = [0u32; SLOT_WORDS];
        let mut off = 0u32;
        while off < len {
            let (m, p) = (mva.as_u32() + off, pa.as_u32() + off);
            let k = chunk_size(m, p, len - off, policy)?;
            let slot = (m >> 20) as usize;
            let bit = 1 << (slot % 32);
            if k == PageSizeKind::Tiny {
                needs_fine[slot / 32] |= bit;
            }
            self.check_free(alloc, m, k, attrs.domain)?;
            if k != PageSizeKind::Section && !self.l1_entry(alloc, slot)?.is_valid() {
                needs_table[slot / 32] |= bit;
            }
            off += k.size();
        }
        // Pass 2: allocate the new tables, in slot order; none is linked yet,
        // so on failure they go straight back.
        let mut fresh = Fresh::new();
        for slot in 0..SLOTS {
            let bit = 1 << (slot % 32);
            if needs_table[slot / 32] & bit == 0 {
                continue;
            }
            let kind = if needs_fine[slot / 32] & bit != 0 {
                TableKind::Fine
            } else {
                TableKind::Coarse
            };
            if let Err(e) = fresh.push(alloc, kind) {
                fresh.free(alloc);
                return Err(e);
            }
        }
        // Pass 3: write. Cannot fail with an allocator that keeps its
        // contract (every table was reached above); if it does, the pages
        // written are unmapped again and the tables involved leak.
        let mut flush = TableFlush::new();
        let mut off = 0u32;
        while off < len {
            let (m, p) = (mva.as_u32() + off, pa.as_u32() + off);
            let k = chunk_size(m, p, len - off, policy)?;
            if let Err(e) = self.write_chunk(alloc, m, p, k, attrs, &mut fresh, &mut flush) {
                if off > 0 {
                    if let Ok(undo) = self.unmap(alloc, mva, off) {
                        flush.merge(undo);
                    }
                }
                fresh.free(alloc);
                // SAFETY: the range is back to its previous, unmapped state
                // and the tables the undo unlinked are leaked, not freed.
                unsafe { flush.ignore() };
                return Err(e);
            }
            off += k.size();
        }
        Ok(flush)
    }

    fn check_free<A: TableAlloc + ?Sized>(
        &self,
        alloc: &A,
        mva: u32,
        size: PageSizeKind,
        domain: Domain,
    ) -> Result<(), TableError> {
        let at = ModifiedVirtAddr::new(mva);
        let l1 = self.l1_entry(alloc, (mva >> 20) as usize)?;
        match (l1, size) {
            (L1Descriptor::Fault { .. }, _) => Ok(()),
            (_, PageSizeKind::Section) | (L1Descriptor::Section(_), _) => {
                Err(TableError::AlreadyMapped(at))
            }
            (L1Descriptor::Coarse(_), PageSizeKind::Tiny) => {
                Err(TableError::TinyPageInCoarseTable(at))
            }
            (l1, _) => {
                let (kind, tpa) = l1.table().ok_or(TableError::AlreadyMapped(at))?;
                if l1.domain() != Some(domain) {
                    return Err(TableError::DomainMismatch {
                        mva: at,
                        existing: l1.domain().unwrap_or(domain),
                    });
                }
                let t = TableRef::new(kind, tpa)?;
                let (first, count) = l2_slots(kind, mva, size)?;
                for i in first..first + count {
                    if t.read(alloc, i)? & 3 != 0 {
                        return Err(TableError::AlreadyMapped(at));
                    }
                }
                Ok(())
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn write_chunk<A: TableAlloc + ?Sized>(
        &mut self,
        alloc: &mut A,
        mva: u32,
        pa: u32,
        size: PageSizeKind,
        attrs: MapAttrs,
        fresh: &mut Fresh,
        flush: &mut TableFlush,
    ) -> Result<(), TableError> {
        let slot = (mva >> 20) as usize;
        if size == PageSizeKind::Section {
            let d = L1Descriptor::Section(SectionDesc {
                frame: Frame::containing(PhysAddr::new(pa)),
                ap: attrs.ap,
                cache: attrs.cache,
                domain: attrs.domain,
                p: false,
                tex: attrs.tex,
            });
            self.write_l1(alloc, slot, d.encode(self.encoding), flush)?;
            self.set_owned(slot, false);
            return Ok(());
        }
        let table = match self.l1_entry(alloc, slot)?.table() {
            Some((kind, tpa)) => TableRef::new(kind, tpa)?,
            None => {
                let t = fresh.pop(alloc)?;
                let d = match t.kind {
                    TableKind::Fine => L1Descriptor::Fine(FineTableDesc {
                        table: Frame::containing(t.pa),
                        domain: attrs.domain,
                    }),
                    _ => L1Descriptor::Coarse(CoarseTableDesc {
                        table: Frame::containing(t.pa),
                        domain: attrs.domain,
                        p: false,
                    }),
                };
                // The table was cleared through the cache: clean it too.
                flush.table_written(alloc.table_mva(t.pa), t.kind.size());
                self.write_l1(alloc, slot, d.encode(self.encoding), flush)?;
                self.set_owned(slot, true);
                t
            }
        };
        // SAFETY: a second-level table linked from this `PageTable`; only a
        // page descriptor is written, never a first-level link.
        unsafe {
            write_l2_page(
                alloc,
                table,
                ModifiedVirtAddr::new(mva),
                l2_descriptor(size, pa, attrs),
                flush,
            )
        }
    }

    /// Finds the mapping of `mva`, if any.
    pub fn lookup<A: TableAlloc + ?Sized>(
        &self,
        alloc: &A,
        mva: ModifiedVirtAddr,
    ) -> Result<Option<Mapping>, TableError> {
        self.check_alloc(alloc)?;
        let m = mva.as_u32();
        let l1 = self.l1_entry(alloc, (m >> 20) as usize)?;
        match l1 {
            L1Descriptor::Fault { .. } => Ok(None),
            L1Descriptor::Section(s) => Ok(Some(Mapping {
                mva: mva.align_down(Align::MIB_1),
                pa: s.frame.start(),
                size: PageSizeKind::Section,
                domain: s.domain,
                ap: SubpageAp::uniform(s.ap),
                cache: s.cache,
            })),
            L1Descriptor::Coarse(_) | L1Descriptor::Fine(_) => {
                let (kind, tpa) = l1.table().ok_or(TableError::NotMapped(mva))?;
                let t = TableRef::new(kind, tpa)?;
                let d = L2Descriptor::from_bits(t.read(alloc, l2_index(kind, m))?);
                let domain = l1.domain().unwrap_or_default();
                Ok(mapping_of(kind, m, d, domain))
            }
        }
    }

    /// Walks `[mva, mva + len)` page by page, checking that every page is
    /// mapped and lies wholly inside the range; calls `f` for each.
    fn for_each_page<A: TableAlloc + ?Sized>(
        &self,
        alloc: &A,
        mva: ModifiedVirtAddr,
        len: u32,
        mut f: impl FnMut(&Mapping) -> Result<(), TableError>,
    ) -> Result<(), TableError> {
        check_aligned(mva.as_u32(), Align::KIB_1)?;
        check_len(mva, len)?;
        let mut off = 0u32;
        while off < len {
            let at = ModifiedVirtAddr::new(mva.as_u32() + off);
            let m = self.lookup(alloc, at)?.ok_or(TableError::NotMapped(at))?;
            let size = m.size.size();
            if m.mva != at || len - off < size {
                return Err(TableError::PartialPage(at));
            }
            f(&m)?;
            off += size;
        }
        Ok(())
    }

    /// Removes every mapping in `[mva, mva + len)`.
    ///
    /// A second-level table this `PageTable` owns that becomes empty is
    /// unlinked and handed to the token, which frees it after the
    /// maintenance; a table it does not own stays linked (empty).
    ///
    /// Errors: a page in the range not mapped, or a page only partly inside
    /// the range (then nothing is changed).
    pub fn unmap<A: TableAlloc + ?Sized>(
        &mut self,
        alloc: &mut A,
        mva: ModifiedVirtAddr,
        len: u32,
    ) -> Result<TableFlush, TableError> {
        self.check_alloc(alloc)?;
        let mut step = MIB;
        self.for_each_page(alloc, mva, len, |m| {
            step = step.min(m.size.size());
            Ok(())
        })?;
        let mut flush = TableFlush::new();
        let mut off = 0u32;
        while off < len {
            let at = mva.as_u32() + off;
            let slot = (at >> 20) as usize;
            let l1 = self.l1_entry(alloc, slot)?;
            match l1.table() {
                None => {
                    // SAFETY: the root is this `PageTable`'s own; a section
                    // entry becomes a fault, no link changes.
                    unsafe { self.root.write(alloc, slot, 0)? };
                    flush.table_written(self.root.entry_mva(alloc, slot), 4);
                    self.set_owned(slot, false);
                    off += MIB;
                }
                Some((kind, tpa)) => {
                    let t = TableRef::new(kind, tpa)?;
                    let d = L2Descriptor::from_bits(t.read(alloc, l2_index(kind, at))?);
                    let size = d
                        .size()
                        .ok_or(TableError::NotMapped(ModifiedVirtAddr::new(at)))?;
                    let (first, count) = l2_slots(kind, at, size)?;
                    // SAFETY: a second-level table linked from this
                    // `PageTable`; page entries become faults.
                    unsafe { t.fill(alloc, first, count, 0)? };
                    flush.table_written(t.entry_mva(alloc, first), 4 * count as u32);
                    off += size.size();
                    // The range's last page of this MiB: only then can the
                    // table have become empty (the range is mapped whole).
                    let slot_done = off == len || at.wrapping_add(size.size()) & 0xf_ffff == 0;
                    let handed_over =
                        slot_done && self.owns_l2_table(slot) && t.is_empty(alloc)? && {
                            // SAFETY: the table is this `PageTable`'s own and
                            // empty; the entry cleared right after is its only
                            // link (safe code cannot link it twice), and the
                            // token frees it only after the maintenance that
                            // makes the unlinking visible and drops its TLB
                            // entries. If the token cannot take it, it stays
                            // linked (empty) and owned.
                            unsafe { flush.free_after_flush(alloc, t) }.is_ok()
                        };
                    if handed_over {
                        // SAFETY: the root is this `PageTable`'s own; the
                        // table's ownership moved to the token just above.
                        unsafe { self.root.write(alloc, slot, 0)? };
                        flush.table_written(self.root.entry_mva(alloc, slot), 4);
                        self.set_owned(slot, false);
                    }
                }
            }
        }
        flush.tlb_stale(mva, len, step);
        Ok(flush)
    }

    /// Changes the access permission and cacheability of every page in
    /// `[mva, mva + len)`. Same range rules as [`PageTable::unmap`]. Frees
    /// nothing: only page descriptors change.
    pub fn protect<A: TableAlloc + ?Sized>(
        &mut self,
        alloc: &mut A,
        mva: ModifiedVirtAddr,
        len: u32,
        ap: AccessPermission,
        cache: CachePolicy,
    ) -> Result<TableFlush, TableError> {
        self.check_alloc(alloc)?;
        let mut step = MIB;
        self.for_each_page(alloc, mva, len, |m| {
            step = step.min(m.size.size());
            Ok(())
        })?;
        let mut flush = TableFlush::new();
        let root = self.root;
        let encoding = self.encoding;
        self.for_each_page(alloc, mva, len, |m| {
            let slot = (m.mva.as_u32() >> 20) as usize;
            let l1 = L1Descriptor::from_bits(root.read(alloc, slot)?);
            match l1 {
                L1Descriptor::Section(s) => {
                    let d = L1Descriptor::Section(SectionDesc { ap, cache, ..s });
                    // SAFETY: the root is this `PageTable`'s own; a section
                    // stays a section, no link changes.
                    unsafe { root.write(alloc, slot, d.encode(encoding))? };
                    flush.table_written(root.entry_mva(alloc, slot), 4);
                    Ok(())
                }
                _ => {
                    let (kind, tpa) = l1.table().ok_or(TableError::NotMapped(m.mva))?;
                    let t = TableRef::new(kind, tpa)?;
                    let old =
                        L2Descriptor::from_bits(t.read(alloc, l2_index(kind, m.mva.as_u32()))?);
                    let tex = match old {
                        L2Descriptor::Large(l) => l.tex,
                        L2Descriptor::Tiny(t) => t.tex,
                        _ => Tex::ZERO,
                    };
                    let attrs = MapAttrs {
                        domain: m.domain,
                        ap,
                        cache,
                        tex,
                    };
                    // SAFETY: a second-level table linked from this
                    // `PageTable`; a page descriptor is rewritten in place.
                    unsafe {
                        write_l2_page(
                            alloc,
                            t,
                            m.mva,
                            l2_descriptor(m.size, m.pa.as_u32(), attrs),
                            &mut flush,
                        )
                    }
                }
            }
        })?;
        flush.tlb_stale(mva, len, step);
        Ok(flush)
    }

    /// Iterates over every mapping, in address order. A table `alloc`
    /// cannot read yields its error once: a second-level table's ends the
    /// iteration of its MiB, the first-level table's the whole iteration.
    pub fn mappings<'a, A: TableAlloc + ?Sized>(&'a self, alloc: &'a A) -> MappingIter<'a, A> {
        MappingIter {
            table: self,
            alloc,
            slot: 0,
            index: 0,
        }
    }

    /// Frees the second-level tables this `PageTable` owns and, unless it
    /// was adopted with [`PageTable::from_root`], the L1 table. Tables it
    /// does not own (adopted, shared or installed unchecked) are left alone.
    ///
    /// # Safety
    /// No translation table base or other descriptor may still point at this
    /// table or its owned second-level tables, and the TLB must hold no entry
    /// from them once the memory is reused.
    pub unsafe fn release<A: TableAlloc + ?Sized>(self, alloc: &mut A) -> Result<(), TableError> {
        self.check_alloc(alloc)?;
        for slot in 0..SLOTS {
            if let Some(t) = self.owned_table(alloc, slot)? {
                // SAFETY: the caller promises nothing points at this table any more.
                unsafe { alloc.deallocate(t.kind, t.pa) };
            }
        }
        if self.owns_root {
            // SAFETY: as above, for the L1 table.
            unsafe { alloc.deallocate(TableKind::L1, self.root.pa) };
        }
        Ok(())
    }
}

fn mapping_of(kind: TableKind, mva: u32, d: L2Descriptor, domain: Domain) -> Option<Mapping> {
    let size = d.size()?;
    // In a coarse table a `0b11` word is not a tiny page (translation fault).
    if kind == TableKind::Coarse && size == PageSizeKind::Tiny {
        return None;
    }
    let (ap, cache) = match d {
        L2Descriptor::Large(l) => (l.ap, l.cache),
        L2Descriptor::Small(s) => (s.ap, s.cache),
        L2Descriptor::Tiny(t) => (SubpageAp::uniform(t.ap), t.cache),
        L2Descriptor::Fault { .. } => return None,
    };
    Some(Mapping {
        mva: ModifiedVirtAddr::new(mva & !(size.size() - 1)),
        pa: d.frame_start()?,
        size,
        domain,
        ap,
        cache,
    })
}

/// Iterator over the mappings of a [`PageTable`]; see [`PageTable::mappings`].
pub struct MappingIter<'a, A: TableAlloc + ?Sized> {
    table: &'a PageTable,
    alloc: &'a A,
    slot: usize,
    index: usize,
}

impl<A: TableAlloc + ?Sized> Iterator for MappingIter<'_, A> {
    type Item = Result<Mapping, TableError>;

    fn next(&mut self) -> Option<Self::Item> {
        while self.slot < SLOTS {
            let l1 = match self.table.l1_entry(self.alloc, self.slot) {
                Ok(d) => d,
                Err(e) => {
                    // The root table cannot be read: no later slot can.
                    self.slot = SLOTS;
                    return Some(Err(e));
                }
            };
            match l1 {
                L1Descriptor::Section(_) => {
                    let mva = ModifiedVirtAddr::new((self.slot as u32) << 20);
                    self.slot += 1;
                    return self.table.lookup(self.alloc, mva).transpose();
                }
                _ => {
                    // A fault (or anything else that links no table).
                    let Some((kind, tpa)) = l1.table() else {
                        self.slot += 1;
                        continue;
                    };
                    let granule: u32 = if kind == TableKind::Fine { 10 } else { 12 };
                    let domain = l1.domain().unwrap_or_default();
                    while self.index < kind.entries() {
                        let i = self.index;
                        let w = match TableRef::new(kind, tpa).and_then(|t| t.read(self.alloc, i)) {
                            Ok(w) => w,
                            Err(e) => {
                                self.index = kind.entries();
                                return Some(Err(e));
                            }
                        };
                        let mva = ((self.slot as u32) << 20) | ((i as u32) << granule);
                        match mapping_of(kind, mva, L2Descriptor::from_bits(w), domain) {
                            Some(m) => {
                                // Skip the replicas of a multi-entry page.
                                let span = (m.size.size() >> granule).max(1) as usize;
                                self.index = (i & !(span - 1)) + span;
                                return Some(Ok(m));
                            }
                            None => self.index += 1,
                        }
                    }
                }
            }
            self.slot += 1;
            self.index = 0;
        }
        None
    }
}
