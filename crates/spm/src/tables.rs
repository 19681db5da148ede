//! [`Mappings`] over `mmu-armv5` page tables: [`TableMappings`].
//!
//! A kernel that keeps its translation tables as [`PageTable`]s (one per
//! address space, or one for every space through FCSE PIDs, or a mix)
//! registers each address space with its FCSE PID and its table, and
//! hands the result to `spm` as its [`Mappings`]:
//!
//! * [`Mappings::translate`] looks the address up in the space's table,
//!   at its MVA (`va` relocated by the space's PID);
//! * [`Mappings::for_each_mapping`] walks every registered table
//!   ([`PageTable::mappings`]) for the descriptors that map the page. A
//!   second-level table linked from several tables (shared with
//!   [`PageTable::share_l1_entries`]) is reported once; a section copied
//!   into several first-level tables once per table (both are descriptors
//!   the walker may use). The walk is remembered for the two pages asked
//!   last (up to [`MEMO_SITES`] descriptors each), so the changes an
//!   exchange makes inside its interrupts-masked windows
//!   ([`Mappings::write_protect`], [`Mappings::swap`],
//!   [`Mappings::restore_write`]) touch only those descriptors, after
//!   checking each still maps the page, instead of walking every table;
//! * the changes go through [`PageTable::set_page_ap`] and
//!   [`PageTable::retarget_page`], which keep every other attribute; each
//!   one's [`TableFlush`] is carried out with
//!   the maintenance value `C` the [`TableMappings`] holds (clean the table
//!   lines the walker reads, drain, invalidate the page's TLB entry).
//!
//! # Which mappings are writable, and write protection
//! A mapping is *writable* when any of its (sub)pages has an access
//! permission other than `NoneOrRom`, i.e. when privileged code could
//! write through it: a kernel running with a task's table loaded reaches
//! that task's pages too, so "the task cannot write it" is not enough for
//! an exchange. [`Mappings::write_protect`] sets every (sub)page to
//! `NoneOrRom` and remembers the permissions it replaced, per descriptor;
//! [`Mappings::restore_write`] puts back exactly those, on the descriptors
//! that still hold what write protection left (a descriptor the kernel
//! changed meanwhile keeps the kernel's change). Because the memory is per
//! descriptor, it follows a mapping through [`Mappings::swap`].
//!
//! `NoneOrRom` is read-only for privileged code only with SCTLR.S set (and
//! for everyone with SCTLR.R): **set S or R**, or every read through a
//! protected page faults until its exchange ends (a protected user page
//! always faults for user code with S; the fault handler then waits for
//! the exchange, see [`crate::exchange`]).
//!
//! At most [`MAX_PROTECTED`] descriptors are remembered at once. Past that
//! a writable mapping is left writable and [`Mappings::generation`]
//! changes, so the exchange sees it still writable at its next step and
//! stops with [`crate::ExchangeError::Changed`] instead of copying a page
//! that can change; [`TableMappings::take_error`] says why.
//!
//! # Generation
//! [`Mappings::generation`] counts the changes the kernel makes:
//! [`TableMappings::edit`] (the way to map and unmap while the value lives)
//! and [`TableMappings::bump_generation`] (after changing a registered
//! table by any other means) advance it. Keep one `TableMappings` for the
//! life of an exchange: it holds the write-protection memory.
//!
//! # What the kernel still vouches for
//! Everything the `unsafe` exchange calls ask of [`Mappings`]: that the
//! registered tables are every table the CPU may walk (a table left out
//! hides its mappings), that the PIDs are the ones the spaces run with,
//! and that mappings of different tables at one MVA are never cached at
//! the same time (FCSE PIDs, or a cache flush on every switch). `spm` asks
//! for the mappings of a page *of one size*: a mapping of another size that
//! covers the frame (a section of a linear map over a small page) is not
//! reported, so such aliases must be uncached and unused for writes while
//! the frame is exchanged.
//!
//! # Page tables that move
//! `spm` moves page-table frames only if the frame table marks them
//! movable. [`Mappings::move_second_level`] re-links the first-level
//! entries and [`Mappings::move_first_level`] re-roots the [`PageTable`]
//! only if the table allocator reaches the new frame (a [`TablePool`]
//! reaches only its own memory, so do not mark pool frames movable); both
//! leave the moved tables unowned (never freed by the `PageTable`).
//! Otherwise nothing is re-linked and [`TableMappings::take_error`]
//! reports [`TablesError::Table`].
//!
//! [`TablePool`]: mmu_armv5::table::TablePool

use crate::mappings::{AddressSpace, Mappings, ReverseMapping, Translation};
use crate::walk_memo::WalkMemo;
use core::cell::Cell;
use core::fmt;
use mmu_armv5::descriptor::{
    AccessPermission, CoarseTableDesc, FineTableDesc, L1Descriptor, SubpageAp,
};
use mmu_armv5::maint::TrustedMaintenance;
use mmu_armv5::size::{Frame, PageSizeKind};
use mmu_armv5::table::Mapping as TableEntry;
use mmu_armv5::table::{PageTable, TableAlloc, TableError, TableFlush, TableKind};
use mmu_armv5::{FcsePid, ModifiedVirtAddr, PhysAddr, VirtAddr};

/// The most descriptors whose write access [`TableMappings`] remembers at
/// once (an exchange protects the two frames of one page at a time; a page
/// directory, four pages of them).
pub const MAX_PROTECTED: usize = 16;

/// The most descriptors of one page [`TableMappings`] remembers from a
/// walk; a page with more is walked for every change.
pub const MEMO_SITES: usize = 8;

#[cfg(test)]
mod tests;

/// Whether privileged code may write through some (sub)page of `ap`.
fn writable(ap: SubpageAp) -> bool {
    ap.0.iter().any(|&a| a != AccessPermission::NoneOrRom)
}

/// What write protection leaves: no (sub)page writable.
const PROTECTED: SubpageAp = SubpageAp::uniform(AccessPermission::NoneOrRom);

/// Why [`TableMappings`] refused a registration, or what went wrong inside
/// a [`Mappings`] call (kept for [`TableMappings::take_error`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum TablesError {
    /// Every slot for a space (or table) is taken.
    Full,
    /// The space is registered already.
    Duplicate(AddressSpace),
    /// The space is not registered.
    UnknownSpace(AddressSpace),
    /// [`Mappings::write_protect`] found more writable descriptors than
    /// [`MAX_PROTECTED`] it can remember: the rest stayed writable, and
    /// the generation changed so the exchange notices.
    ProtectFull,
    /// A table operation failed (a table the allocator cannot reach; never
    /// with an allocator that keeps its contract and tables only it built).
    Table(TableError),
}

impl fmt::Display for TablesError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            TablesError::Full => f.write_str("no slot left for another space or table"),
            TablesError::Duplicate(s) => write!(f, "{s:?} is registered already"),
            TablesError::UnknownSpace(s) => write!(f, "{s:?} is not registered"),
            TablesError::ProtectFull => write!(
                f,
                "more than {MAX_PROTECTED} writable mappings to protect at once"
            ),
            TablesError::Table(e) => write!(f, "{e}"),
        }
    }
}

impl core::error::Error for TablesError {}

impl From<TableError> for TablesError {
    fn from(e: TableError) -> Self {
        TablesError::Table(e)
    }
}

/// A registered address space.
#[derive(Clone, Copy, Debug)]
struct Space {
    space: AddressSpace,
    pid: FcsePid,
    /// Index into the tables.
    table: usize,
}

/// One descriptor: the table it is in and the first MVA of its page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Site {
    table: usize,
    mva: ModifiedVirtAddr,
}

/// A descriptor write protection changed: what it had, what it got.
#[derive(Clone, Copy, Debug)]
struct Saved {
    site: Site,
    was: SubpageAp,
}

/// The sites of the last two pages walked.
type Memo = WalkMemo<Site, MEMO_SITES>;

const NO_SITE: Site = Site {
    table: 0,
    mva: ModifiedVirtAddr::new(0),
};

/// Descriptors found by one pass, with the mapping each holds.
type Batch = heapless::Vec<(Site, TableEntry), MEMO_SITES>;

/// [`Mappings`] over up to `N` address spaces in `mmu-armv5`
/// [`PageTable`]s (see the [module docs](self)).
///
/// `A` is the tables' allocator; `C` the maintenance used after each
/// descriptor change (clean the table lines the hardware walker reads,
/// drain the write buffer, invalidate the page's TLB entry). An exchange
/// step takes the mappings and its `hw` as two `&mut` values and both need
/// the CPU, so `C` is the kernel's one CPU value shared with the `hw`
/// through a [`SharedCpu`](crate::SharedCpu) (a `RefCell`, each call
/// borrowing it for itself), or, in host tests, a second mock CPU as
/// below.
///
/// ```
/// use mmu_armv5::descriptor::{AccessPermission, CachePolicy};
/// use mmu_armv5::maint::Arm926;
/// use mmu_armv5::regs::MockCp15;
/// use mmu_armv5::table::{MapAttrs, PageTable, PoolBlock, SizePolicy, TablePool};
/// use mmu_armv5::{Domain, FcsePid, ModifiedVirtAddr, PhysAddr, VirtAddr};
/// use mmu_armv5::size::PageSizeKind;
/// use spm::{AddressSpace, Mappings, SpaceId, TableMappings};
///
/// let mut mem = Box::new([PoolBlock::ZERO; 2]);
/// let mut pool = TablePool::new(&mut *mem, PhysAddr::new(0x0100_0000), ModifiedVirtAddr::new(0xC100_0000))?;
/// let mut pt = PageTable::new(&mut pool)?;
/// let task = AddressSpace::User(SpaceId(1));
/// let mut maps = TableMappings::<_, _, 2>::new(&mut pool, Arm926::new(MockCp15::arm926()));
/// maps.add(AddressSpace::Kernel, FcsePid::ZERO, &mut pt)?;
/// maps.add_sharing(task, FcsePid::new(1)?, AddressSpace::Kernel)?; // one table, FCSE PIDs
///
/// // The task's page at VA 0x8000 (MVA 0x0200_8000, PID 1), mapped through `edit`.
/// let attrs = MapAttrs::new(Domain::new(0)?, AccessPermission::ReadWrite, CachePolicy::WriteBack);
/// let e = maps.edit(task).unwrap();
/// let mva = VirtAddr::new(0x8000).to_mva(e.pid);
/// e.table.map(e.alloc, mva, PhysAddr::new(0x5000), 0x1000, attrs, SizePolicy::Largest)?.flush(e.maint, e.alloc);
///
/// let t = maps.translate(task, VirtAddr::new(0x8123)).unwrap();
/// assert_eq!((t.page, t.writable), (PhysAddr::new(0x5000), true));
/// let mut seen = Vec::new();
/// maps.for_each_mapping(PhysAddr::new(0x5000), PageSizeKind::Small, &mut |m| seen.push((m.space, m.mva)));
/// assert_eq!(seen, [(task, ModifiedVirtAddr::new(0x0200_8000))]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct TableMappings<'t, A: TableAlloc + ?Sized, C, const N: usize = 4> {
    alloc: &'t mut A,
    maint: C,
    tables: heapless::Vec<&'t mut PageTable, N>,
    spaces: heapless::Vec<Space, N>,
    saved: heapless::Vec<Saved, MAX_PROTECTED>,
    generation: u64,
    error: Cell<Option<TablesError>>,
    /// The last two pages walked, most recent first.
    memo: Cell<Memo>,
}

impl<A: TableAlloc + ?Sized, C, const N: usize> fmt::Debug for TableMappings<'_, A, C, N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TableMappings")
            .field("spaces", &self.spaces)
            .field("tables", &self.tables.len())
            .field("protected", &self.saved.len())
            .field("generation", &self.generation)
            .field("error", &self.error.get())
            .finish_non_exhaustive()
    }
}

/// One registered table opened for changes by [`TableMappings::edit`]:
/// what [`PageTable::map`], [`PageTable::unmap`] and the token's
/// [`TableFlush::flush`](mmu_armv5::table::TableFlush::flush) need.
#[derive(Debug)]
pub struct TableEdit<'e, A: ?Sized, C> {
    /// The space's table.
    pub table: &'e mut PageTable,
    /// The table allocator.
    pub alloc: &'e mut A,
    /// The maintenance [`TableMappings`] holds.
    pub maint: &'e mut C,
    /// The space's FCSE PID (its MVAs are its addresses relocated by it).
    pub pid: FcsePid,
}

impl<'t, A: TableAlloc + ?Sized, C: TrustedMaintenance, const N: usize> TableMappings<'t, A, C, N> {
    /// No spaces yet, over the tables of `alloc`, with `maint` for the
    /// maintenance after each descriptor change.
    pub fn new(alloc: &'t mut A, maint: C) -> Self {
        TableMappings {
            alloc,
            maint,
            tables: heapless::Vec::new(),
            spaces: heapless::Vec::new(),
            saved: heapless::Vec::new(),
            generation: 0,
            error: Cell::new(None),
            memo: Cell::new(Memo::new(NO_SITE)),
        }
    }

    /// Registers `space`, running with FCSE PID `pid` (the kernel's is
    /// usually [`FcsePid::ZERO`]), whose translations are `table`.
    ///
    /// # Errors
    /// [`TablesError::Duplicate`], [`TablesError::Full`], or
    /// [`TablesError::Table`] if the allocator cannot reach the table.
    pub fn add(
        &mut self,
        space: AddressSpace,
        pid: FcsePid,
        table: &'t mut PageTable,
    ) -> Result<(), TablesError> {
        if self.find(space).is_some() {
            return Err(TablesError::Duplicate(space));
        }
        table.l1_entry(&*self.alloc, 0)?;
        if self.spaces.is_full() {
            return Err(TablesError::Full);
        }
        self.tables.push(table).map_err(|_| TablesError::Full)?;
        let index = self.tables.len() - 1;
        self.spaces
            .push(Space {
                space,
                pid,
                table: index,
            })
            .map_err(|_| TablesError::Full)?;
        self.changed();
        Ok(())
    }

    /// Registers `space`, running with FCSE PID `pid`, in the table of the
    /// registered space `with` (one table for several spaces, told apart
    /// by their PIDs).
    ///
    /// # Errors
    /// [`TablesError::Duplicate`], [`TablesError::UnknownSpace`] for
    /// `with`, [`TablesError::Full`].
    pub fn add_sharing(
        &mut self,
        space: AddressSpace,
        pid: FcsePid,
        with: AddressSpace,
    ) -> Result<(), TablesError> {
        if self.find(space).is_some() {
            return Err(TablesError::Duplicate(space));
        }
        let table = self
            .find(with)
            .ok_or(TablesError::UnknownSpace(with))?
            .table;
        self.spaces
            .push(Space { space, pid, table })
            .map_err(|_| TablesError::Full)?;
        self.changed();
        Ok(())
    }

    /// The table of `space`.
    #[must_use]
    pub fn table(&self, space: AddressSpace) -> Option<&PageTable> {
        let s = self.find(space)?;
        self.tables.get(s.table).map(|t| &**t)
    }

    /// The table allocator.
    #[must_use]
    pub fn alloc(&self) -> &A {
        self.alloc
    }

    /// Opens the table of `space` for changes (map, unmap, protect):
    /// advances the generation, since they may add or remove mappings.
    pub fn edit(&mut self, space: AddressSpace) -> Option<TableEdit<'_, A, C>> {
        let s = self.find(space)?;
        self.changed();
        Some(TableEdit {
            table: self.tables.get_mut(s.table)?,
            alloc: &mut *self.alloc,
            maint: &mut self.maint,
            pid: s.pid,
        })
    }

    /// Advances [`Mappings::generation`]: call it after changing a
    /// registered table other than through [`TableMappings::edit`].
    pub fn bump_generation(&mut self) {
        self.changed();
    }

    /// Descriptors whose write access is taken and remembered now.
    #[must_use]
    pub fn protected(&self) -> usize {
        self.saved.len()
    }

    /// The last error a [`Mappings`] call met (which cannot return one),
    /// cleared by the call.
    pub fn take_error(&mut self) -> Option<TablesError> {
        self.error.take()
    }

    fn changed(&mut self) {
        // A `u64` that only goes up: it cannot come back to a value an
        // exchange trusts within 2^64 changes (see `Mappings::generation`).
        self.generation = self.generation.wrapping_add(1);
        self.memo.set(Memo::new(NO_SITE));
    }

    fn fail(&self, e: TablesError) {
        self.error.set(Some(e));
    }

    fn find(&self, space: AddressSpace) -> Option<Space> {
        self.spaces.iter().find(|s| s.space == space).copied()
    }

    /// The space a descriptor of table `table` at `mva` is reported in:
    /// the space of that table whose FCSE window holds `mva`, else the
    /// first space registered with the table.
    fn space_of(&self, table: usize, mva: ModifiedVirtAddr) -> AddressSpace {
        let mut first = None;
        for s in self.spaces.iter().filter(|s| s.table == table) {
            if s.pid != FcsePid::ZERO && mva.window() == s.pid.get() {
                return s.space;
            }
            first = first.or(Some(s.space));
        }
        first.unwrap_or(AddressSpace::Kernel)
    }

    fn mapping(&self, site: Site, m: &TableEntry) -> ReverseMapping {
        ReverseMapping {
            space: self.space_of(site.table, site.mva),
            mva: m.mva,
            writable: writable(m.ap),
            cached: m.cache.cacheable(),
        }
    }

    /// The mapping at `site`, if it still maps a `size` page at `page`.
    fn at(&self, site: Site, page: PhysAddr, size: PageSizeKind) -> Option<TableEntry> {
        let m = self.tables.get(site.table)?.lookup(&*self.alloc, site.mva);
        match m {
            Ok(Some(m)) if m.mva == site.mva && m.pa == page && m.size == size => Some(m),
            Ok(_) => None,
            Err(e) => {
                self.fail(e.into());
                None
            }
        }
    }

    /// Whether the descriptor of table `t` at `mva` is one an earlier table
    /// reaches too: the same first-level table, or the same second-level
    /// table linked at the same slot.
    fn shared_with_earlier(&self, t: usize, mva: ModifiedVirtAddr) -> bool {
        let root = self.tables[t].root();
        let slot = mva.l1_index();
        let link = |t: &PageTable| {
            t.l1_entry(&*self.alloc, slot)
                .ok()
                .and_then(L1Descriptor::table)
        };
        let mine = link(self.tables[t]);
        self.tables[..t]
            .iter()
            .any(|e| e.root() == root || (mine.is_some() && link(e) == mine))
    }

    /// Walks every table for descriptors of a `size` page at one of
    /// `pages`, in (table, MVA) order after `after`; returns up to
    /// [`MEMO_SITES`] of them and whether there were more.
    fn walk(&self, pages: &[PhysAddr], size: PageSizeKind, after: Option<Site>) -> (Batch, bool) {
        let mut batch = Batch::new();
        for (t, table) in self.tables.iter().enumerate() {
            if after.is_some_and(|a| t < a.table) {
                continue;
            }
            for r in table.mappings(&*self.alloc) {
                let m = match r {
                    Ok(m) => m,
                    Err(e) => {
                        self.fail(e.into());
                        continue;
                    }
                };
                let site = Site {
                    table: t,
                    mva: m.mva,
                };
                if after.is_some_and(|a| t == a.table && m.mva.as_u32() <= a.mva.as_u32())
                    || m.size != size
                    || !pages.contains(&m.pa)
                    || self.shared_with_earlier(t, m.mva)
                {
                    continue;
                }
                if batch.push((site, m)).is_err() {
                    return (batch, true);
                }
            }
        }
        (batch, false)
    }

    /// The remembered descriptors of `page`, each checked to map it still;
    /// `None` if not remembered or one no longer does.
    fn remembered(&self, page: PhysAddr, size: PageSizeKind) -> Option<Batch> {
        self.memo.get().recall(self.generation, page, size, |site| {
            self.at(site, page, size)
        })
    }

    /// Remembers the descriptors of `page` found by a complete walk, in
    /// front of the most recent other page remembered.
    fn remember(&self, page: PhysAddr, size: PageSizeKind, batch: &Batch) {
        let mut memo = self.memo.get();
        memo.remember(
            self.generation,
            page,
            size,
            batch.iter().map(|(site, _)| *site),
        );
        self.memo.set(memo);
    }

    /// Calls `act` once for every descriptor of a `size` page at one of
    /// `pages` (with the index of its page): from the remembered walks
    /// when every page has one, else walking the tables in batches (a
    /// descriptor `act` changes is never visited again).
    fn each_site(
        &mut self,
        pages: &[PhysAddr],
        size: PageSizeKind,
        mut act: impl FnMut(&mut Self, usize, Site, TableEntry),
    ) {
        let mut known: heapless::Vec<Batch, 2> = heapless::Vec::new();
        for &p in pages {
            let Some(b) = self.remembered(p, size) else {
                break;
            };
            if known.push(b).is_err() {
                break;
            }
        }
        if known.len() == pages.len() {
            for (i, batch) in known.iter().enumerate() {
                for &(site, m) in batch {
                    act(self, i, site, m);
                }
            }
            return;
        }
        let mut after = None;
        loop {
            let (batch, more) = self.walk(pages, size, after);
            if let ([page], None, false) = (pages, after, more) {
                self.remember(*page, size, &batch);
            }
            for &(site, m) in &batch {
                let i = pages.iter().position(|&p| p == m.pa).unwrap_or(0);
                act(self, i, site, m);
            }
            match batch.last() {
                Some(&(site, _)) if more => after = Some(site),
                _ => break,
            }
        }
    }

    /// Carries out a change's maintenance, or keeps its error.
    fn finish(&mut self, r: Result<TableFlush, TableError>) {
        match r {
            Ok(f) => f.flush(&mut self.maint, &mut *self.alloc),
            Err(e) => self.fail(e.into()),
        }
    }

    /// Sets the permissions of the descriptor at `site`.
    fn set_ap(&mut self, site: Site, ap: SubpageAp) {
        let r = match self.tables.get_mut(site.table) {
            Some(t) => t.set_page_ap(&*self.alloc, site.mva, ap),
            None => return,
        };
        self.finish(r);
    }

    /// Forgets protections whose descriptor no longer holds what write
    /// protection left (the kernel changed or removed it).
    fn forget_stale(&mut self) {
        let mut i = 0;
        while let Some(s) = self.saved.get(i).copied() {
            let live = self.tables.get(s.site.table).and_then(|t| {
                t.lookup(&*self.alloc, s.site.mva)
                    .ok()
                    .flatten()
                    .filter(|m| m.mva == s.site.mva && m.ap == PROTECTED)
            });
            if live.is_some() {
                i += 1;
            } else {
                self.saved.swap_remove(i);
            }
        }
    }
}

impl<A: TableAlloc + ?Sized, C: TrustedMaintenance, const N: usize> Mappings
    for TableMappings<'_, A, C, N>
{
    fn translate(&self, space: AddressSpace, va: VirtAddr) -> Option<Translation> {
        let s = self.find(space)?;
        let m = match self.tables[s.table].lookup(&*self.alloc, va.to_mva(s.pid)) {
            Ok(m) => m?,
            Err(e) => {
                self.fail(e.into());
                return None;
            }
        };
        Some(Translation {
            page: m.pa,
            size: m.size,
            writable: writable(m.ap),
        })
    }

    fn generation(&self) -> Option<u64> {
        Some(self.generation)
    }

    fn for_each_mapping(
        &self,
        page: PhysAddr,
        size: PageSizeKind,
        f: &mut dyn FnMut(&ReverseMapping),
    ) {
        if let Some(batch) = self.remembered(page, size) {
            for (site, m) in &batch {
                f(&self.mapping(*site, m));
            }
            return;
        }
        let mut after = None;
        let mut first = true;
        loop {
            let (batch, more) = self.walk(&[page], size, after);
            for (site, m) in &batch {
                f(&self.mapping(*site, m));
            }
            if first && !more {
                self.remember(page, size, &batch);
            }
            first = false;
            match batch.last() {
                Some(&(site, _)) if more => after = Some(site),
                _ => break,
            }
        }
    }

    fn write_protect(&mut self, page: PhysAddr, size: PageSizeKind) {
        self.forget_stale();
        self.each_site(&[page], size, |me, _, site, m| {
            if !writable(m.ap) {
                return;
            }
            if me.saved.push(Saved { site, was: m.ap }).is_err() {
                me.fail(TablesError::ProtectFull);
                me.changed();
                return;
            }
            me.set_ap(site, PROTECTED);
        });
    }

    fn restore_write(&mut self, page: PhysAddr, size: PageSizeKind) {
        self.each_site(&[page], size, |me, _, site, m| {
            let Some(i) = me.saved.iter().position(|s| s.site == site) else {
                return;
            };
            let s = me.saved.swap_remove(i);
            if m.ap == PROTECTED {
                me.set_ap(site, s.was);
            }
        });
    }

    fn swap(&mut self, a: PhysAddr, b: PhysAddr, size: PageSizeKind) {
        self.each_site(&[a, b], size, |me, i, site, _| {
            let to = if i == 0 { b } else { a };
            let r = match me.tables.get_mut(site.table) {
                Some(t) => t.retarget_page(&*me.alloc, site.mva, to),
                None => return,
            };
            me.finish(r);
        });
        // What was remembered of `a` now describes `b` and vice versa.
        let mut memo = self.memo.get();
        memo.swapped(a, b, size);
        self.memo.set(memo);
    }

    fn move_second_level(&mut self, old: PhysAddr, new: PhysAddr) {
        for t in 0..self.tables.len() {
            for slot in 0..4096 {
                let l1 = match self.tables[t].l1_entry(&*self.alloc, slot) {
                    Ok(d) => d,
                    Err(e) => {
                        self.fail(e.into());
                        break;
                    }
                };
                let Some((kind, tpa)) = l1.table() else {
                    continue;
                };
                if tpa.as_u32() & !0xFFF != old.as_u32() {
                    continue;
                }
                let to = PhysAddr::new(new.as_u32() | (tpa.as_u32() & 0xFFF));
                if self.alloc.table_ptr(kind, to).is_none() {
                    self.fail(TablesError::Table(TableError::UnreachableTable(to)));
                    continue;
                }
                let link = match l1 {
                    L1Descriptor::Coarse(c) => L1Descriptor::Coarse(CoarseTableDesc {
                        table: Frame::containing(to),
                        ..c
                    }),
                    L1Descriptor::Fine(f) => L1Descriptor::Fine(FineTableDesc {
                        table: Frame::containing(to),
                        ..f
                    }),
                    _ => continue,
                };
                // SAFETY: `spm` moved the second-level table's content to
                // `to`, a frame its frame table now records as this page
                // table's (the exchange caller vouches for the frame
                // table), so it stays a valid table while linked, and no
                // slot of this `PageTable` owns a table there (it was a
                // page resource until now). The old frame returned (if
                // owned) is `spm`'s now and is dropped, never freed.
                let r = unsafe { self.tables[t].set_l1_entry_unchecked(&*self.alloc, slot, link) };
                self.finish(r.map(|(f, _old)| f));
            }
        }
    }

    fn move_first_level(&mut self, old: PhysAddr, new: PhysAddr) {
        if self.alloc.table_ptr(TableKind::L1, new).is_none() {
            self.fail(TablesError::Table(TableError::UnreachableTable(new)));
            return;
        }
        for t in self.tables.iter_mut() {
            if t.root() == old {
                // SAFETY: the exchange moved this table from `old` to
                // `new`; `t`, replaced here, is the only handle on it (this
                // type holds each table by `&mut` while it lives).
                match unsafe { PageTable::from_root(new, t.encoding()) } {
                    Ok(moved) => **t = moved,
                    Err(e) => self.error.set(Some(e.into())),
                }
            }
        }
    }
}
