//! An address space's own page directory, which the hardware never walks.
//!
//! Under FASS the translation table base points at the caching page
//! directory ([`crate::cpd`]) for good; each address space keeps its
//! first-level entries here and the CPD copies them in on demand. Because
//! no walker reads it, this directory is compact: only the first-level
//! slots in use are stored (slot number and descriptor word), at most
//! `SLOTS` of them. A space confined to its 32 MiB window needs 32.
//!
//! Second-level (coarse) tables are real hardware tables from a
//! [`TableAlloc`]: the CPD entry and this directory point at the same table,
//! so page-level changes need no copying, only the table-write maintenance
//! the returned [`TableFlush`] carries. Descriptors are stored with domain 0;
//! the CPD tags its copy with the space's current domain.
//!
//! Addresses here are modified virtual addresses (after FCSE relocation).

use core::fmt;
use heapless::Vec;
use mmu_armv5::addr::Align;
use mmu_armv5::descriptor::{
    AccessPermission, CachePolicy, CoarseTableDesc, L1Descriptor, L2Descriptor, SmallPageDesc,
    SubpageAp,
};
use mmu_armv5::size::Frame;
use mmu_armv5::table::{write_l2_page, TableAlloc, TableError, TableFlush, TableKind, TableRef};
use mmu_armv5::{Domain, ModifiedVirtAddr, PhysAddr};

/// Size of a page this directory maps.
pub const PAGE_SIZE: u32 = 4096;

/// A directory operation that cannot be done.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum SpaceError {
    /// The directory already holds its maximum number of first-level slots.
    DirectoryFull,
    /// An address not aligned to 4 KiB.
    Misaligned(u32),
    /// The page is already mapped.
    AlreadyMapped(ModifiedVirtAddr),
    /// The page is not mapped.
    NotMapped(ModifiedVirtAddr),
    /// A table operation failed.
    Table(TableError),
}

impl fmt::Display for SpaceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            SpaceError::DirectoryFull => f.write_str("address-space directory is full"),
            SpaceError::Misaligned(a) => write!(f, "{a:#010x} is not 4 KiB aligned"),
            SpaceError::AlreadyMapped(a) => write!(f, "{a} is already mapped"),
            SpaceError::NotMapped(a) => write!(f, "{a} is not mapped"),
            SpaceError::Table(e) => write!(f, "table: {e}"),
        }
    }
}

impl core::error::Error for SpaceError {}

impl From<TableError> for SpaceError {
    fn from(e: TableError) -> Self {
        SpaceError::Table(e)
    }
}

/// The result of a change to the directory.
#[derive(Debug)]
#[must_use = "the table maintenance must be performed"]
pub struct DirChange {
    /// Table-write and TLB maintenance for the change.
    pub flush: TableFlush,
    /// The first-level slot whose descriptor changed (a table was added or
    /// freed), to be written through to the CPD if the space owns that slot there.
    pub l1_changed: Option<usize>,
}

/// A compact page directory of at most `SLOTS` first-level slots.
pub struct SpaceDir<const SLOTS: usize> {
    /// (slot, raw word) pairs, in no particular order, each slot once.
    entries: Vec<(u16, u32), SLOTS>,
    /// The 32 MiB window every slot in use lies in ([`WINDOW_NONE`] when
    /// no slot is, [`WINDOW_MIXED`] when they lie in several): kept with
    /// every change of `entries`, so that [`SpaceDir::single_window`] is
    /// O(1) on the domain-recycling path.
    window: u8,
}

/// [`SpaceDir::window`]: no slot in use.
const WINDOW_NONE: u8 = u8::MAX;
/// [`SpaceDir::window`]: slots in more than one window.
const WINDOW_MIXED: u8 = u8::MAX - 1;

/// The window of a first-level slot (`slot < 4096`: at most 127).
fn window_of(slot: usize) -> u8 {
    (slot / crate::layout::SLOTS_PER_WINDOW) as u8
}

impl<const SLOTS: usize> Default for SpaceDir<SLOTS> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const SLOTS: usize> fmt::Debug for SpaceDir<SLOTS> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map()
            .entries(self.entries.iter().map(|(k, v)| (k, v)))
            .finish()
    }
}

impl<const SLOTS: usize> SpaceDir<SLOTS> {
    /// An empty directory.
    #[must_use]
    pub const fn new() -> Self {
        SpaceDir {
            entries: Vec::new(),
            window: WINDOW_NONE,
        }
    }

    /// Number of first-level slots in use.
    #[must_use]
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no slot is in use.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The first-level descriptor of `slot` (a fault descriptor if unused), domain 0.
    #[must_use]
    pub fn entry(&self, slot: usize) -> L1Descriptor {
        let Ok(key) = u16::try_from(slot) else {
            return L1Descriptor::FAULT;
        };
        match self.entries.iter().find(|(k, _)| *k == key) {
            Some((_, w)) => L1Descriptor::from_bits(*w),
            None => L1Descriptor::FAULT,
        }
    }

    /// The raw word of `slot` (domain 0), if the slot is in use.
    #[must_use]
    pub fn raw(&self, slot: usize) -> Option<u32> {
        let key = u16::try_from(slot).ok()?;
        self.entries
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, w)| *w)
    }

    /// The raw word of `slot` (domain 0) and its index in the directory,
    /// if the slot is in use, looked for at index `hint` first (an index
    /// an earlier call answered: the fast fault path's guess that a space
    /// faults on the slot it faulted on last, a collision being resolved
    /// back and forth). Any `hint` is safe: the slot is compared.
    #[inline]
    pub(crate) fn raw_near(&self, hint: usize, slot: usize) -> Option<(usize, u32)> {
        let e = self.entries.as_slice();
        if let Some(&(k, w)) = e.get(hint) {
            if usize::from(k) == slot {
                return Some((hint, w));
            }
        }
        let i = e.iter().position(|(k, _)| usize::from(*k) == slot)?;
        e.get(i).map(|&(_, w)| (i, w))
    }

    /// The slots in use with their raw words (domain 0), in no particular
    /// order: what a switch re-links into the CPD eagerly.
    pub(crate) fn raw_entries(&self) -> &[(u16, u32)] {
        self.entries.as_slice()
    }

    /// The slots in use, in no particular order.
    pub fn slots(&self) -> impl Iterator<Item = usize> + '_ {
        self.entries.iter().map(|(k, _)| usize::from(*k))
    }

    /// Whether every slot in use lies in the 32 MiB window `w` (slots
    /// `32 * w .. 32 * w + 32`); true when no slot is in use. O(1).
    #[must_use]
    pub fn single_window(&self, w: usize) -> bool {
        self.window == WINDOW_NONE || usize::from(self.window) == w
    }

    /// Recomputes [`SpaceDir::window`] after a removal.
    fn rescan_window(&mut self) {
        let mut win = WINDOW_NONE;
        for &(k, _) in &self.entries {
            let w = window_of(usize::from(k));
            win = if win == WINDOW_NONE || win == w {
                w
            } else {
                WINDOW_MIXED
            };
        }
        self.window = win;
    }

    fn table_of(&self, slot: usize) -> Option<TableRef> {
        let (kind, pa) = self.entry(slot).table()?;
        TableRef::new(kind, pa).ok()
    }

    /// The physical address `mva` maps to, if mapped.
    pub fn lookup<A: TableAlloc + ?Sized>(
        &self,
        alloc: &A,
        mva: ModifiedVirtAddr,
    ) -> Result<Option<PhysAddr>, SpaceError> {
        let Some(t) = self.table_of(mva.l1_index()) else {
            return Ok(None);
        };
        let idx = ((mva.as_u32() >> 12) & 0xFF) as usize;
        let d = L2Descriptor::from_bits(t.read(alloc, idx)?);
        Ok(d.frame_start()
            .map(|pa| PhysAddr::new(pa.as_u32() | (mva.as_u32() & (PAGE_SIZE - 1)))))
    }

    /// Maps the 4 KiB page at `mva` to `pa`.
    pub fn map<A: TableAlloc + ?Sized>(
        &mut self,
        alloc: &mut A,
        mva: ModifiedVirtAddr,
        pa: PhysAddr,
        ap: AccessPermission,
        cache: CachePolicy,
    ) -> Result<DirChange, SpaceError> {
        if !mva.is_aligned(Align::KIB_4) {
            return Err(SpaceError::Misaligned(mva.as_u32()));
        }
        if !pa.is_aligned(Align::KIB_4) {
            return Err(SpaceError::Misaligned(pa.as_u32()));
        }
        if self.lookup(alloc, mva)?.is_some() {
            return Err(SpaceError::AlreadyMapped(mva));
        }
        let slot = mva.l1_index();
        let mut flush = TableFlush::new();
        let mut l1_changed = None;
        let table = match self.table_of(slot) {
            Some(t) => t,
            None => {
                if self.entries.len() >= SLOTS {
                    return Err(SpaceError::DirectoryFull);
                }
                let t = TableRef::allocate(alloc, TableKind::Coarse)?;
                flush.table_written(alloc.table_mva(t.pa), TableKind::Coarse.size());
                let d = L1Descriptor::Coarse(CoarseTableDesc {
                    table: Frame::containing(t.pa),
                    domain: Domain::default(),
                    p: false,
                });
                // Capacity was checked above; the slot fits in u16 (< 4096).
                let _ = self.entries.push((slot as u16, d.to_bits()));
                let w = window_of(slot);
                if self.window == WINDOW_NONE {
                    self.window = w;
                } else if self.window != w {
                    self.window = WINDOW_MIXED;
                }
                l1_changed = Some(slot);
                t
            }
        };
        let desc = L2Descriptor::Small(SmallPageDesc {
            frame: Frame::containing(pa),
            ap: SubpageAp::uniform(ap),
            cache,
        });
        // SAFETY: one of this directory's own coarse tables (allocated here,
        // linked only through its entries); a page descriptor is written.
        unsafe { write_l2_page(alloc, table, mva, desc, &mut flush)? };
        Ok(DirChange { flush, l1_changed })
    }

    /// Unmaps the 4 KiB page at `mva`; frees its coarse table when it empties.
    ///
    /// The emptied table is not freed here: it is handed to the returned
    /// change's [`TableFlush`], which returns it to `alloc` only after its
    /// maintenance. A caller that copied this directory's first-level entry
    /// into a table the hardware walks (`l1_changed`: the CPD) removes that
    /// copy before performing the flush; a token dropped unflushed leaks the
    /// table, which is safe.
    ///
    /// The caller must have cleaned the page's D-cache lines first: the
    /// VIVT cache may still hold them under `mva`.
    pub fn unmap<A: TableAlloc + ?Sized>(
        &mut self,
        alloc: &mut A,
        mva: ModifiedVirtAddr,
    ) -> Result<DirChange, SpaceError> {
        if !mva.is_aligned(Align::KIB_4) {
            return Err(SpaceError::Misaligned(mva.as_u32()));
        }
        let slot = mva.l1_index();
        let t = self.table_of(slot).ok_or(SpaceError::NotMapped(mva))?;
        let idx = ((mva.as_u32() >> 12) & 0xFF) as usize;
        if !L2Descriptor::from_bits(t.read(alloc, idx)?).is_valid() {
            return Err(SpaceError::NotMapped(mva));
        }
        let mut flush = TableFlush::new();
        // SAFETY: one of this directory's own coarse tables; a page entry
        // becomes a fault.
        unsafe { t.write(alloc, idx, 0)? };
        flush.table_written(t.entry_mva(alloc, idx), 4);
        flush.tlb_stale(mva, PAGE_SIZE, PAGE_SIZE);
        let mut l1_changed = None;
        if t.is_empty(alloc)? {
            if let Some(i) = self
                .entries
                .iter()
                .position(|(k, _)| usize::from(*k) == slot)
            {
                self.entries.swap_remove(i);
                self.rescan_window();
            }
            l1_changed = Some(slot);
            // SAFETY: the table came from `alloc` as a coarse table and was
            // linked only through this directory's entry, now gone, and the
            // copies of that entry the caller makes (`l1_changed`); the token
            // frees it only after its maintenance, which the caller performs
            // once those copies are gone (see above). It is given up here
            // exactly once: the entry no longer names it.
            unsafe { flush.free_after_flush(alloc, t)? };
        }
        Ok(DirChange { flush, l1_changed })
    }

    /// Frees every second-level table (the space is being destroyed).
    ///
    /// # Safety
    /// No CPD entry may still point at these tables.
    pub unsafe fn release<A: TableAlloc + ?Sized>(&mut self, alloc: &mut A) {
        // O(slots in use), each slot once.
        for &(_, w) in &self.entries {
            let table = L1Descriptor::from_bits(w).table();
            if let Some(t) = table.and_then(|(kind, pa)| TableRef::new(kind, pa).ok()) {
                // SAFETY: allocated here as `t.kind`; the caller guarantees
                // nothing points at it any more.
                unsafe { alloc.deallocate(t.kind, t.pa) };
            }
        }
        self.entries.clear();
        self.window = WINDOW_NONE;
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use mmu_armv5::table::{PoolBlock, TablePool};
    use std::boxed::Box;

    /// Table memory for host tests: 64 blocks of 16 KiB on the heap, owned
    /// by the test (no leak for Miri to report).
    pub(crate) type Mem = Box<[PoolBlock; 64]>;

    /// Fresh zeroed table memory.
    pub(crate) fn mem() -> Mem {
        Box::new([PoolBlock::ZERO; 64])
    }

    /// A table pool over `mem`, at PA 16 MiB, reached at MVA 0xC100_0000.
    pub(crate) fn pool(mem: &mut Mem) -> TablePool<'_, 64> {
        TablePool::new(
            mem,
            PhysAddr::new(0x0100_0000),
            ModifiedVirtAddr::new(0xC100_0000),
        )
        .unwrap()
    }

    #[test]
    fn a_space_in_its_window_needs_at_most_a_kib_of_directory() {
        assert!(core::mem::size_of::<SpaceDir<48>>() <= 1024);
        assert!(core::mem::size_of::<SpaceDir<32>>() <= 1024);
    }

    #[test]
    fn map_lookup_unmap() {
        let mut m = mem();
        let mut a = pool(&mut m);
        let mut dir: SpaceDir<4> = SpaceDir::new();
        let va = ModifiedVirtAddr::new(0x0210_3000);
        let c = dir
            .map(
                &mut a,
                va,
                PhysAddr::new(0x0080_0000),
                AccessPermission::ReadWrite,
                CachePolicy::WriteBack,
            )
            .unwrap();
        assert_eq!(c.l1_changed, Some(0x21));
        assert!(!c.flush.clean_ranges().is_empty());
        // SAFETY: test table memory only.
        unsafe { c.flush.ignore() };
        assert_eq!(
            dir.lookup(&a, ModifiedVirtAddr::new(0x0210_3abc)).unwrap(),
            Some(PhysAddr::new(0x0080_0abc))
        );
        assert!(matches!(dir.entry(0x21), L1Descriptor::Coarse(_)));
        assert_eq!(
            dir.map(
                &mut a,
                va,
                PhysAddr::new(0),
                AccessPermission::ReadWrite,
                CachePolicy::WriteBack
            )
            .unwrap_err(),
            SpaceError::AlreadyMapped(va)
        );
        let c = dir
            .map(
                &mut a,
                ModifiedVirtAddr::new(0x0210_4000),
                PhysAddr::new(0x0090_0000),
                AccessPermission::ReadWrite,
                CachePolicy::WriteBack,
            )
            .unwrap();
        assert_eq!(c.l1_changed, None);
        // SAFETY: test only.
        unsafe { c.flush.ignore() };
        let c = dir.unmap(&mut a, va).unwrap();
        assert_eq!(c.l1_changed, None);
        // SAFETY: test only.
        unsafe { c.flush.ignore() };
        let c = dir
            .unmap(&mut a, ModifiedVirtAddr::new(0x0210_4000))
            .unwrap();
        assert_eq!(c.l1_changed, Some(0x21));
        // SAFETY: test only.
        unsafe { c.flush.ignore() };
        assert!(dir.is_empty());
        assert_eq!(
            dir.unmap(&mut a, va).unwrap_err(),
            SpaceError::NotMapped(va)
        );
    }

    #[test]
    fn the_window_of_the_slots_follows_maps_and_unmaps() {
        let mut m = mem();
        let mut a = pool(&mut m);
        let mut dir: SpaceDir<4> = SpaceDir::new();
        // Empty: in every window.
        assert!(dir.single_window(0) && dir.single_window(5));
        let map = |dir: &mut SpaceDir<4>, a: &mut _, va: u32| {
            let c = dir
                .map(
                    a,
                    ModifiedVirtAddr::new(va),
                    PhysAddr::new(0x0080_0000),
                    AccessPermission::ReadWrite,
                    CachePolicy::WriteBack,
                )
                .unwrap();
            // SAFETY: test table memory only.
            unsafe { c.flush.ignore() };
        };
        // Window 1 is slots 32..64 (0x0200_0000..0x0400_0000).
        map(&mut dir, &mut a, 0x0210_3000);
        map(&mut dir, &mut a, 0x03F0_0000);
        assert!(dir.single_window(1));
        assert!(!dir.single_window(0) && !dir.single_window(2));
        // A slot of window 2 (0x0400_0000): mixed.
        map(&mut dir, &mut a, 0x0400_0000);
        assert!(!dir.single_window(1) && !dir.single_window(2));
        // Its removal makes the directory single-window again.
        let c = dir
            .unmap(&mut a, ModifiedVirtAddr::new(0x0400_0000))
            .unwrap();
        // SAFETY: test only.
        unsafe { c.flush.ignore() };
        assert!(dir.single_window(1) && !dir.single_window(2));
        for va in [0x0210_3000, 0x03F0_0000] {
            let c = dir.unmap(&mut a, ModifiedVirtAddr::new(va)).unwrap();
            // SAFETY: test only.
            unsafe { c.flush.ignore() };
        }
        assert!(dir.single_window(7));
    }

    #[test]
    fn an_emptied_table_is_freed_only_by_the_flush_after_its_maintenance() {
        use mmu_armv5::maint::Arm926;
        use mmu_armv5::regs::MockCp15;
        let mut m = mem();
        let mut a = pool(&mut m);
        let free = a.free_units();
        let mut dir: SpaceDir<4> = SpaceDir::new();
        let va = ModifiedVirtAddr::new(0x0210_3000);
        let c = dir
            .map(
                &mut a,
                va,
                PhysAddr::new(0x0080_0000),
                AccessPermission::ReadWrite,
                CachePolicy::WriteBack,
            )
            .unwrap();
        let mut cpu = Arm926::new(MockCp15::arm926());
        c.flush.flush(&mut cpu, &mut a);
        let used = a.free_units();
        assert!(used < free);
        let c = dir.unmap(&mut a, va).unwrap();
        assert_eq!(c.l1_changed, Some(0x21));
        // Still allocated: a CPD copy of the slot may name the table until
        // the caller has written the change through.
        assert_eq!(a.free_units(), used);
        assert_eq!(c.flush.tables_to_free(), 1);
        c.flush.flush(&mut cpu, &mut a);
        assert_eq!(a.free_units(), free);
    }

    #[test]
    fn release_frees_every_second_level_table_once() {
        let mut m = mem();
        let mut a = pool(&mut m);
        let free = a.free_units();
        let mut dir: SpaceDir<4> = SpaceDir::new();
        for va in [0x0210_3000, 0x0210_4000, 0x0230_0000, 0x0240_0000] {
            let c = dir
                .map(
                    &mut a,
                    ModifiedVirtAddr::new(va),
                    PhysAddr::new(0x0030_0000),
                    AccessPermission::ReadWrite,
                    CachePolicy::WriteBack,
                )
                .unwrap();
            let _ = c.flush;
        }
        assert_eq!(dir.len(), 3);
        assert!(a.free_units() < free);
        // SAFETY: no CPD entry points at these tables (none was written).
        unsafe { dir.release(&mut a) };
        assert!(dir.is_empty());
        assert_eq!(a.free_units(), free);
    }

    #[test]
    fn directory_capacity_and_alignment_are_typed_errors() {
        let mut m = mem();
        let mut a = pool(&mut m);
        let mut dir: SpaceDir<2> = SpaceDir::new();
        for s in 0..2u32 {
            let c = dir
                .map(
                    &mut a,
                    ModifiedVirtAddr::new(s << 20),
                    PhysAddr::new(0x1000),
                    AccessPermission::ReadWrite,
                    CachePolicy::WriteBack,
                )
                .unwrap();
            // SAFETY: test only.
            unsafe { c.flush.ignore() };
        }
        assert_eq!(
            dir.map(
                &mut a,
                ModifiedVirtAddr::new(2 << 20),
                PhysAddr::new(0x1000),
                AccessPermission::ReadWrite,
                CachePolicy::WriteBack
            )
            .unwrap_err(),
            SpaceError::DirectoryFull
        );
        assert_eq!(
            dir.map(
                &mut a,
                ModifiedVirtAddr::new(0x10),
                PhysAddr::new(0x1000),
                AccessPermission::ReadWrite,
                CachePolicy::WriteBack
            )
            .unwrap_err(),
            SpaceError::Misaligned(0x10)
        );
    }
}
