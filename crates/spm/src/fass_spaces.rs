//! [`Mappings`] over the address spaces of any `fass` switch strategy,
//! and the kernel's own table: [`SpaceMappings`] (cargo feature `fass`).
//!
//! A kernel that manages its tasks' address spaces with a
//! [`fass::SwitchStrategy`] (FASS: one caching page directory, domains as
//! address-space tags; or the classic per-space tables, naive or with FCSE
//! PIDs) hands the strategy and its platform to a [`SpaceMappings`], adds
//! its own table with [`SpaceMappings::with_kernel`], and gives the result
//! to `spm` as its [`Mappings`]. Every task is [`AddressSpace::User`] with
//! its fass [`SpaceId`]; the kernel's table is [`AddressSpace::Kernel`].
//! The strategy is reached through [`SpaceTables`], which `spm` implements
//! for [`Fass`] and [`TableSwitch`] (so [`FassMappings`] and
//! [`TableSwitchMappings`] are the same adapter): an RTOS on either gets
//! the exchange with no trait implementation of its own.
//!
//! * [`Mappings::translate`] is the strategy's `translate` (a private 4 KiB
//!   page, or the section of a shared segment the space maps), or
//!   [`PageTable::lookup`] in the kernel's table;
//! * [`Mappings::for_each_mapping`] is the strategy's
//!   `for_each_mapping_of` and a walk of the kernel's table: fass keeps no
//!   reverse index, so this reads every second-level table of every space
//!   (256 descriptors per first-level slot in use). The mappings found for
//!   the two pages asked last (up to [`MAX_SITES`] each) are remembered
//!   under the current generation, so the changes an exchange makes inside
//!   its interrupts-masked windows ([`Mappings::write_protect`],
//!   [`Mappings::swap`], [`Mappings::restore_write`]) check and edit only
//!   those, one translation each, instead of walking every table;
//! * a kernel that keeps its own reverse index (page records by frame)
//!   hands it over with [`SpaceMappings::with_index`] ([`FrameIndex`]): it
//!   is asked before walking (each site it names is looked up and kept
//!   only if it maps the page), its generation counts in the adapter's,
//!   and [`Mappings::swapped`] tells it of every swap so its records
//!   follow, out of the masked window. Without one ([`WalkTables`], the
//!   default) the adapter walks;
//! * the changes are the strategy's `set_page_ap` and `retarget_page`
//!   with [`PageLines::LeaveToCaller`] (the exchange cleans the pages'
//!   lines before its switch and flushes them after it), or
//!   [`PageTable::set_page_ap`] and [`PageTable::retarget_page`] in the
//!   kernel's table: each rewrites one descriptor, cleans its line and
//!   invalidates the page's TLB entry. A space's descriptor is in its own
//!   second-level table, which is also the table the CPD (FASS) links; the
//!   kernel's second-level tables are linked, not copied, by every space's
//!   table and the CPD, so one write is seen by every strategy.
//!
//! # Example: a round trip through TCM
//! Task 1's page moves into a DTCM frame that only the kernel's table maps
//! (at `0xE000_0000`, the kernel's TCM window), and back: one call
//! sequence, the same on every strategy (here FASS). After the first
//! exchange the old frame is mapped at the kernel's window and is still
//! the task's page (it holds a copy of the task's data), so the kernel
//! gives it back as a resource before the second exchange, and the TCM
//! frame after it. The hidden first lines build the kernel's table through
//! the mapper and the FASS manager as in `fass`'s docs, on a recording CPU
//! that fass and the exchange share.
//! ```
//! # use fass::{Cpd, DefaultPolicy, DomainSet, Fass, KernelTable, Layout, Split};
//! # use mmu_armv5::descriptor::L1Encoding;
//! # use mmu_armv5::maint::Arm926;
//! # use mmu_armv5::regs::MockCp15;
//! # use mmu_armv5::table::{MapAttrs, PageTable, PoolBlock, SizePolicy, TablePool};
//! # use mmu_armv5::{Domain, ModifiedVirtAddr};
//! # let cpu = core::cell::RefCell::new(Arm926::new(MockCp15::arm926()));
//! # let mut mem = Box::new([PoolBlock::ZERO; 8]);
//! # let pool = TablePool::new(&mut *mem, Pa::new(0x0100_0000), ModifiedVirtAddr::new(0xC100_0000))?;
//! # let mut sys = Split::new(SharedCpu(&cpu), pool);
//! # // The kernel's RAM at 3 GiB (a section) and its DTCM window (a page).
//! # let mut kt = PageTable::new(&mut sys)?;
//! # let kattrs = MapAttrs::new(Domain::default(), Ap::PrivRw, CachePolicy::WriteBack);
//! # kt.map(&mut sys, ModifiedVirtAddr::new(0xC000_0000), Pa::new(0), 1 << 20, kattrs, SizePolicy::Largest)?.flush_on(&mut sys);
//! # kt.map(&mut sys, ModifiedVirtAddr::new(0xE000_0000), Pa::new(0x0300_0000), 4096, kattrs, SizePolicy::Largest)?.flush_on(&mut sys);
//! # // SAFETY: `MockCp15` only records register writes (see `KernelTable::new`).
//! # let kernel = unsafe { KernelTable::new(&sys, kt.root(), L1Encoding::Arm9, &Layout::DEMO, Domain::default()) }?;
//! # let mut fass: Fass<DefaultPolicy, 8, 8, 4> = Fass::new(Cpd::new(kernel), DomainSet::EMPTY, DefaultPolicy::default())?;
//! use mmu_armv5::descriptor::{AccessPermission as Ap, CachePolicy};
//! use mmu_armv5::size::{Frame, Page, PageSizeKind};
//! use mmu_armv5::{PhysAddr as Pa, VirtAddr as Va};
//! use spm::ops::{self, StateRequest};
//! use spm::AddressSpace::{Kernel, User};
//! use spm::{exchange::DEFAULT_CHUNK, Exchange, ExchangeRequest, FrameDesc, FrameState, FrameTable};
//! use spm::{Hw, InitialUse, Location, Mappings, PhysRegion, PhysWindows, RecordingIrq, Rights};
//! use spm::{SectionSummary, SharedCpu, SpaceId, SpaceMappings};
//! let task = SpaceId(1);
//! fass.add_space(task)?;
//! fass.map_page(&mut sys, task, Page::from_start(Va::new(0x8000))?, Frame::from_start(Pa::new(0x5000))?, Ap::ReadWrite, CachePolicy::WriteBack)?;
//! // The frame table (RAM, DTCM frames page resources) and physical memory (host buffers here).
//! let regions = [PhysRegion::new(Pa::new(0), 64 << 10, Location::Ram, InitialUse::Kernel)?,
//!                PhysRegion::new(Pa::new(0x0300_0000), 32 << 10, Location::Dtcm, InitialUse::Resource)?];
//! let (mut frames, mut sections) = ([FrameDesc::default(); 16 + 8], [SectionSummary::default(); 2]);
//! let mut table = FrameTable::<2>::new(&regions, &mut frames, &mut sections)?;
//! table.init_range(Frame::from_start(Pa::new(0x5000))?, FrameState::User(task), true)?;
//! let (mut ram, mut dtcm) = (vec![0u8; 64 << 10], vec![0u8; 32 << 10]);
//! ram[0x5123] = 42;
//! let mut phys = PhysWindows::<2>::new();
//! // SAFETY: each buffer stands for its physical range and is reached only through `phys`.
//! unsafe { phys.add(Pa::new(0), 64 << 10, ram.as_mut_ptr()) }?;
//! // SAFETY: as above.
//! unsafe { phys.add(Pa::new(0x0300_0000), 32 << 10, dtcm.as_mut_ptr()) }?;
//! let (mut hw, mut irq) = (Hw::new(SharedCpu(&cpu), phys), RecordingIrq::new());
//!
//! // The mappings: the strategy's spaces and the kernel's table.
//! let mut maps = SpaceMappings::new(&mut fass, &mut sys).with_kernel(&mut kt);
//! let window = Va::new(0xE000_0000);
//! let req = ExchangeRequest { caller: Kernel, target_space: User(task), target: Va::new(0x8000),
//!     resource_space: Kernel, resource: window, size: PageSizeKind::Small, count: 1, rights: Rights::RW };
//! let resource = StateRequest::Set(FrameState::Resource);
//! // In.
//! let mut ex = Exchange::begin(&mut table, &maps, req, DEFAULT_CHUNK)?;
//! // SAFETY (this and the calls below): the frame table, the strategy's and the kernel's
//! // tables and `hw` describe one machine; nothing else reaches the frames.
//! unsafe { ex.run(&mut table, &mut maps, &mut hw, &mut irq) }?;
//! assert_eq!(maps.translate(User(task), Va::new(0x8123)).unwrap().page, Pa::new(0x0300_0000));
//! // The old frame, now at the kernel's window, given back as a resource.
//! // SAFETY: as above.
//! unsafe { ops::change_state(&mut table, &maps, &mut hw, Kernel, window, resource) }?;
//! // Back.
//! let mut ex = Exchange::begin(&mut table, &maps, req, DEFAULT_CHUNK)?;
//! // SAFETY: as above.
//! unsafe { ex.run(&mut table, &mut maps, &mut hw, &mut irq) }?;
//! // The TCM frame, at the kernel's window again, given back as a resource.
//! // SAFETY: as above.
//! unsafe { ops::change_state(&mut table, &maps, &mut hw, Kernel, window, resource) }?;
//!
//! assert_eq!(maps.translate(User(task), Va::new(0x8123)).unwrap().page, Pa::new(0x5000));
//! assert_eq!(maps.translate(Kernel, window).unwrap().page, Pa::new(0x0300_0000));
//! assert_eq!(table.desc(Pa::new(0x0300_0000))?.state(), FrameState::Resource);
//! assert_eq!(table.busy_frames(), 0);
//! let mut byte = [0];
//! hw.phys.read(Pa::new(0x5123), &mut byte)?;
//! assert_eq!(byte, [42]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Write protection
//! As in [`crate::tables`]: a mapping is writable when any subpage has a
//! permission other than `NoneOrRom`; [`Mappings::write_protect`] sets all
//! four to `NoneOrRom` and remembers, per mapping (space and MVA), what it
//! replaced (at most [`MAX_PROTECTED`] at once; past that the mapping
//! stays writable, the generation changes and the exchange stops with
//! [`crate::ExchangeError::Changed`]). **Set SCTLR.S or R**, as there.
//!
//! # Generation
//! The strategy (and the kernel's table) are held by `&mut` for the life of
//! the value, so every change to them goes through [`SpaceMappings::edit`]
//! or [`SpaceMappings::edit_kernel`], which advance
//! [`Mappings::generation`] (a `u64` that only goes up). Keep one
//! `SpaceMappings` for the life of an exchange: it holds the
//! write-protection memory.
//!
//! # What is not covered
//! * **Sections of the kernel's table** (a linear map) are reported but
//!   never edited: their first-level entries are copied into every space's
//!   table (or the CPD), so an edit in one table would leave the copies.
//!   A change that meets one is not made,
//!   [`SpaceMappings::take_error`] reports
//!   [`FassMappingsError::KernelSection`] and the generation changes, so an
//!   exchange stops with `Changed`. `spm` asks for mappings of one size:
//!   a linear-map section over an exchanged small page is not reported, so
//!   it must be uncached and unused for writes meanwhile.
//! * **Shared segments.** A segment page is reported (a section) but never
//!   edited: fass refuses per-page edits of segments
//!   ([`fass::FassError::NotPrivate`]). A change that meets one is not made,
//!   [`SpaceMappings::take_error`] reports [`FassMappingsError::Fass`] and
//!   the generation changes, so an exchange stops with `Changed` at its
//!   next step instead of completing with the segment's mapping unmoved.
//! * **Moving page tables.** The strategies' tables cannot be re-linked
//!   from outside: [`Mappings::move_second_level`] and
//!   [`Mappings::move_first_level`] change nothing and report
//!   [`FassMappingsError::TableMove`]. Do not mark table frames movable in
//!   the frame table.
//!
//! [`PageTable::lookup`]: mmu_armv5::table::PageTable::lookup
//! [`PageTable::set_page_ap`]: mmu_armv5::table::PageTable::set_page_ap
//! [`PageTable::retarget_page`]: mmu_armv5::table::PageTable::retarget_page

use crate::mappings::{AddressSpace, Mappings, ReverseMapping, Translation};
use crate::walk_memo::WalkMemo;
use core::cell::Cell;
use core::fmt;
use fass::{
    Fass, FassError, PageLines, PageMapping, Platform, SpaceId, SwitchStrategy, TableSwitch,
    VictimPolicy,
};
use mmu_armv5::addr::FCSE_WINDOW_SIZE;
use mmu_armv5::descriptor::{AccessPermission, SubpageAp};
use mmu_armv5::size::PageSizeKind;
use mmu_armv5::table::{PageTable, TableAlloc, TableError};
use mmu_armv5::{FcsePid, ModifiedVirtAddr, PhysAddr, VirtAddr};

/// The most mappings whose write access [`SpaceMappings`] remembers at once.
pub const MAX_PROTECTED: usize = 16;

/// The most mappings of one page [`SpaceMappings`] remembers from a walk; a
/// page with more is walked again for every change.
pub const MAX_SITES: usize = 8;

/// What write protection leaves: no subpage writable.
const PROTECTED: SubpageAp = SubpageAp::uniform(AccessPermission::NoneOrRom);

/// The per-space lookups and per-page edits [`SpaceMappings`] needs of a
/// [`SwitchStrategy`]: what a space maps at an address, every mapping of a
/// frame, and a page's permissions or frame changed in place, with the
/// maintenance of [`fass`]'s `lookup` module.
///
/// Implemented here for every strategy `fass` has ([`Fass`], and
/// [`TableSwitch`] in both of its kinds, [`fass::ClassicKind::Naive`] and
/// [`fass::ClassicKind::Fcse`]), by their inherent methods of the same names; a
/// strategy of the kernel's own implements it the same way and gets
/// [`SpaceMappings`] with it.
pub trait SpaceTables: SwitchStrategy {
    /// The FCSE PID space `id` runs with (its MVAs are its addresses
    /// relocated by it).
    ///
    /// # Errors
    /// [`FassError::UnknownSpace`].
    fn space_pid(&self, id: SpaceId) -> Result<FcsePid, FassError>;

    /// What space `id` maps at `va` (a private page or a segment section).
    ///
    /// # Errors
    /// As [`Fass::translate`].
    fn translate_page<A: TableAlloc + ?Sized>(
        &self,
        alloc: &A,
        id: SpaceId,
        va: VirtAddr,
    ) -> Result<Option<PageMapping>, FassError>;

    /// Calls `f` with every mapping of the frame at `pa` in every space.
    ///
    /// # Errors
    /// As [`Fass::for_each_mapping_of`].
    fn mappings_of<A: TableAlloc + ?Sized>(
        &self,
        alloc: &A,
        pa: PhysAddr,
        f: &mut dyn FnMut(SpaceId, PageMapping),
    ) -> Result<(), FassError>;

    /// Sets the permissions of space `id`'s private page at `va`.
    ///
    /// # Errors
    /// As [`Fass::set_page_ap`].
    fn page_ap<S: Platform + ?Sized>(
        &mut self,
        sys: &mut S,
        id: SpaceId,
        va: VirtAddr,
        ap: SubpageAp,
    ) -> Result<PageMapping, FassError>;

    /// Points space `id`'s private page at `va` at the frame at `pa`,
    /// leaving the page's cache lines to the caller.
    ///
    /// # Errors
    /// As [`Fass::retarget_page`].
    fn page_frame<S: Platform + ?Sized>(
        &mut self,
        sys: &mut S,
        id: SpaceId,
        va: VirtAddr,
        pa: PhysAddr,
    ) -> Result<PageMapping, FassError>;
}

/// The one body of both [`SpaceTables`] impls: each method forwards to
/// the strategy's inherent method of the same job (`Fass` and
/// `TableSwitch` name them alike, outside `SwitchStrategy`).
macro_rules! forward_space_tables {
    () => {
        fn space_pid(&self, id: SpaceId) -> Result<FcsePid, FassError> {
            self.pid_of(id)
        }
        fn translate_page<A: TableAlloc + ?Sized>(
            &self,
            alloc: &A,
            id: SpaceId,
            va: VirtAddr,
        ) -> Result<Option<PageMapping>, FassError> {
            self.translate(alloc, id, va)
        }
        fn mappings_of<A: TableAlloc + ?Sized>(
            &self,
            alloc: &A,
            pa: PhysAddr,
            f: &mut dyn FnMut(SpaceId, PageMapping),
        ) -> Result<(), FassError> {
            self.for_each_mapping_of(alloc, pa, f)
        }
        fn page_ap<S: Platform + ?Sized>(
            &mut self,
            sys: &mut S,
            id: SpaceId,
            va: VirtAddr,
            ap: SubpageAp,
        ) -> Result<PageMapping, FassError> {
            self.set_page_ap(sys, id, va, ap)
        }
        fn page_frame<S: Platform + ?Sized>(
            &mut self,
            sys: &mut S,
            id: SpaceId,
            va: VirtAddr,
            pa: PhysAddr,
        ) -> Result<PageMapping, FassError> {
            self.retarget_page(sys, id, va, pa, PageLines::LeaveToCaller)
        }
    };
}

impl<P: VictimPolicy, const SPACES: usize, const SLOTS: usize, const SEGMENTS: usize> SpaceTables
    for Fass<P, SPACES, SLOTS, SEGMENTS>
{
    forward_space_tables!();
}

/// Both kinds ([`fass::ClassicKind::Naive`], [`fass::ClassicKind::Fcse`]): each space's
/// own table, at the PID it runs with (0 for `Naive`).
impl<const SPACES: usize, const SEGMENTS: usize> SpaceTables for TableSwitch<SPACES, SEGMENTS> {
    forward_space_tables!();
}

/// Where a frame is mapped: the reverse index [`SpaceMappings`] asks
/// before walking, and is told of every swap (the hook of a kernel that
/// keeps its own records of which frame each of its mappings maps).
///
/// A kernel that knows its mappings (page records, an index by frame)
/// answers [`FrameIndex::sites_of`] in O(1); without one, [`WalkTables`] (the
/// default) makes the adapter read every second-level table of every space.
///
/// # Contract
/// * When [`FrameIndex::sites_of`] returns `true` it has reported *every*
///   mapping of the page, in every space and in the kernel's table (the
///   adapter does not walk then): a mapping it leaves out is neither
///   protected nor moved by an exchange. It may report more (a stale
///   site): the adapter looks each site up and drops one that does not map
///   the page. It reports them in the same order for the same state.
/// * [`FrameIndex::generation`] changes (only upwards) whenever an answer
///   of `sites_of` may have changed other than by [`FrameIndex::moved`]:
///   the adapter adds it to its own generation, so an exchange sees the
///   index's changes as changes of the mappings.
/// * [`FrameIndex::moved`] is called from [`Mappings::swapped`], after the
///   exchange's interrupts-masked window: until then the index may still
///   describe the two pages as before the swap (the adapter accounts for
///   that).
pub trait FrameIndex {
    /// Calls `f` with the space and the address there (a task's virtual
    /// address, or the kernel's) of every mapping of the `size` page at
    /// `page`, and returns `true`; or returns `false`, reporting nothing,
    /// if the index does not cover the page (the adapter then walks).
    fn sites_of(
        &self,
        page: PhysAddr,
        size: PageSizeKind,
        f: &mut dyn FnMut(AddressSpace, VirtAddr),
    ) -> bool;

    /// A value that only goes up, changed whenever the index's answers may
    /// change other than by [`FrameIndex::moved`]. The default: never.
    fn generation(&self) -> u64 {
        0
    }

    /// Every mapping of `a` now maps `b` and every mapping of `b` maps `a`
    /// (an exchange's swap): the records follow. The default does nothing.
    fn moved(&mut self, a: PhysAddr, b: PhysAddr, size: PageSizeKind) {
        let _ = (a, b, size);
    }
}

/// No reverse index: [`SpaceMappings`] walks every table (the default).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WalkTables;

impl FrameIndex for WalkTables {
    fn sites_of(
        &self,
        _page: PhysAddr,
        _size: PageSizeKind,
        _f: &mut dyn FnMut(AddressSpace, VirtAddr),
    ) -> bool {
        false
    }
}

/// An index lent by exclusive reference: every method, including the
/// provided ones, goes to the borrowed value.
impl<I: FrameIndex + ?Sized> FrameIndex for &mut I {
    fn sites_of(
        &self,
        page: PhysAddr,
        size: PageSizeKind,
        f: &mut dyn FnMut(AddressSpace, VirtAddr),
    ) -> bool {
        (**self).sites_of(page, size, f)
    }
    fn generation(&self) -> u64 {
        (**self).generation()
    }
    fn moved(&mut self, a: PhysAddr, b: PhysAddr, size: PageSizeKind) {
        (**self).moved(a, b, size);
    }
}

/// What went wrong inside a [`Mappings`] call of [`SpaceMappings`] (which
/// cannot return an error), kept for [`SpaceMappings::take_error`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum FassMappingsError {
    /// The strategy refused a lookup or an edit (a segment page:
    /// `NotPrivate`; a table it cannot read).
    Fass(FassError),
    /// The kernel's table refused a lookup or an edit (a table its
    /// allocator does not reach).
    Kernel(TableError),
    /// A section of the kernel's table was to be edited: its first-level
    /// entry may be copied into other tables (every space's table, the
    /// CPD), so it is not changed in one. Nothing was changed and the
    /// generation changed.
    KernelSection(ModifiedVirtAddr),
    /// [`Mappings::write_protect`] found more writable mappings than
    /// [`MAX_PROTECTED`]: the rest stayed writable and the generation
    /// changed.
    ProtectFull,
    /// [`Mappings::swap`] met a page with more than [`MAX_SITES`]
    /// mappings: nothing was swapped and the generation changed.
    TooManyMappings(PhysAddr),
    /// A page-table frame was moved: the strategy's tables are not re-linked.
    TableMove(PhysAddr),
}

/// The errors of [`SpaceMappings`] under the name of any strategy.
pub type SpaceMappingsError = FassMappingsError;

impl fmt::Display for FassMappingsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            FassMappingsError::Fass(e) => write!(f, "fass: {e}"),
            FassMappingsError::Kernel(e) => write!(f, "kernel table: {e}"),
            FassMappingsError::KernelSection(mva) => {
                write!(f, "the kernel's section at {mva} is not edited")
            }
            FassMappingsError::ProtectFull => write!(
                f,
                "more than {MAX_PROTECTED} writable mappings to protect at once"
            ),
            FassMappingsError::TooManyMappings(pa) => {
                write!(f, "page {pa} has more than {MAX_SITES} mappings to swap")
            }
            FassMappingsError::TableMove(pa) => {
                write!(f, "the strategy's page tables cannot move (frame {pa})")
            }
        }
    }
}

impl core::error::Error for FassMappingsError {}

impl From<FassError> for FassMappingsError {
    fn from(e: FassError) -> Self {
        FassMappingsError::Fass(e)
    }
}

impl From<TableError> for FassMappingsError {
    fn from(e: TableError) -> Self {
        FassMappingsError::Kernel(e)
    }
}

/// One mapping: the space (a task's, or the kernel's table) and the page's
/// MVA there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Site {
    space: AddressSpace,
    mva: ModifiedVirtAddr,
}

/// A mapping write protection changed, and what it had.
#[derive(Clone, Copy, Debug)]
struct Saved {
    site: Site,
    was: SubpageAp,
}

/// The sites of the last two pages walked.
type Memo = WalkMemo<Site, MAX_SITES>;

const NO_SITE: Site = Site {
    space: AddressSpace::Kernel,
    mva: ModifiedVirtAddr::new(0),
};

/// One mapping as found: its MVA, frame, size, permissions and cache bits.
#[derive(Clone, Copy, Debug)]
struct Found {
    pa: PhysAddr,
    size: PageSizeKind,
    ap: SubpageAp,
    cacheable: bool,
}

impl Found {
    fn writable(&self) -> bool {
        self.ap.0.iter().any(|&a| a != AccessPermission::NoneOrRom)
    }
}

impl From<&PageMapping> for Found {
    fn from(m: &PageMapping) -> Self {
        Found {
            pa: m.pa,
            size: m.size,
            ap: m.ap,
            cacheable: m.cache.cacheable(),
        }
    }
}

impl From<&mmu_armv5::table::Mapping> for Found {
    fn from(m: &mmu_armv5::table::Mapping) -> Self {
        Found {
            pa: m.pa,
            size: m.size,
            ap: m.ap,
            cacheable: m.cache.cacheable(),
        }
    }
}

/// The mappings of one page, found by a walk or remembered.
type Sites = heapless::Vec<(Site, Found), MAX_SITES>;

/// The address of a space's page at `mva`, given its PID bits
/// (`pid << 25`): a low page's MVA lies in the space's own window.
fn va_of(mva: ModifiedVirtAddr, pid_window: u32) -> VirtAddr {
    let m = mva.as_u32();
    if pid_window != 0 && m & !(FCSE_WINDOW_SIZE - 1) == pid_window {
        VirtAddr::new(m & (FCSE_WINDOW_SIZE - 1))
    } else {
        VirtAddr::new(m)
    }
}

/// [`Mappings`] over the address spaces of any [`SwitchStrategy`] with
/// [`SpaceTables`] ([`Fass`], [`TableSwitch`] naive or with FCSE PIDs), and
/// optionally the kernel's own table (see the [module docs](self)).
///
/// `T` is the strategy; `S` the platform it runs on (CPU, cache
/// maintenance, table memory). An exchange step also needs the CPU in its
/// `hw`: on a kernel the platform's CPU part is then a
/// [`SharedCpu`](crate::SharedCpu) over the one CPU value both use; in host
/// tests, a second mock.
///
/// ```
/// # use fass::{Cpd, DefaultPolicy, DomainSet, Fass, KernelTable, Layout, Split};
/// # use mmu_armv5::descriptor::L1Encoding;
/// # use mmu_armv5::maint::Arm926;
/// # use mmu_armv5::regs::MockCp15;
/// # use mmu_armv5::table::{PoolBlock, TableKind, TablePool, TableRef};
/// # use mmu_armv5::{Domain, ModifiedVirtAddr};
/// # let mut mem = Box::new([PoolBlock::ZERO; 8]);
/// # let pool = TablePool::new(&mut *mem, PhysAddr::new(0x0100_0000), ModifiedVirtAddr::new(0xC100_0000))?;
/// # let mut sys = Split::new(Arm926::new(MockCp15::arm926()), pool);
/// # // The kernel's RAM at 3 GiB, one section, built through the mapper.
/// # let mut kt = mmu_armv5::table::PageTable::new(&mut sys)?;
/// # let ram = mmu_armv5::table::MapAttrs::new(mmu_armv5::Domain::default(), mmu_armv5::descriptor::AccessPermission::PrivRw, mmu_armv5::descriptor::CachePolicy::WriteBack);
/// # let (at, to) = (mmu_armv5::ModifiedVirtAddr::new(0xC000_0000), mmu_armv5::PhysAddr::new(0));
/// # kt.map(&mut sys, at, to, 1 << 20, ram, mmu_armv5::table::SizePolicy::Largest)?.flush_on(&mut sys);
/// # // SAFETY: `MockCp15` only records register writes (see `KernelTable::new`).
/// # let kernel = unsafe { KernelTable::new(&sys, kt.root(), L1Encoding::Arm9, &Layout::DEMO, Domain::default()) }?;
/// // A FASS manager (set up as in `fass`'s docs) with two tasks sharing a frame.
/// let mut fass: Fass<DefaultPolicy, 8, 8, 4> = Fass::new(Cpd::new(kernel), DomainSet::EMPTY, DefaultPolicy::default())?;
/// use mmu_armv5::descriptor::{AccessPermission as Ap, CachePolicy};
/// use mmu_armv5::size::{Frame, Page, PageSizeKind};
/// use mmu_armv5::{PhysAddr, VirtAddr};
/// use spm::{AddressSpace, FassMappings, Mappings, SpaceId};
/// let (a, b) = (SpaceId(1), SpaceId(2));
/// let (page, frame) = (Page::from_start(VirtAddr::new(0x8000))?, Frame::from_start(PhysAddr::new(0x5000))?);
/// for s in [a, b] {
///     fass.add_space(s)?;
///     fass.map_page(&mut sys, s, page, frame, Ap::ReadWrite, CachePolicy::WriteBack)?;
/// }
/// let maps = FassMappings::new(&mut fass, &mut sys);
/// let t = maps.translate(AddressSpace::User(a), VirtAddr::new(0x8123)).unwrap();
/// assert_eq!((t.page, t.writable), (PhysAddr::new(0x5000), true));
/// let mut seen = Vec::new();
/// maps.for_each_mapping(PhysAddr::new(0x5000), PageSizeKind::Small, &mut |m| seen.push(m.space));
/// assert_eq!(seen, [AddressSpace::User(a), AddressSpace::User(b)]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct SpaceMappings<'f, T: ?Sized, S: ?Sized, I = WalkTables> {
    spaces: &'f mut T,
    sys: &'f mut S,
    kernel: Option<&'f mut PageTable>,
    /// Where frames are mapped, asked before walking.
    index: I,
    /// The pages of a swap whose [`FrameIndex::moved`] is still to come.
    pending: Option<(PhysAddr, PhysAddr, PageSizeKind)>,
    saved: heapless::Vec<Saved, MAX_PROTECTED>,
    generation: u64,
    error: Cell<Option<FassMappingsError>>,
    /// The last two pages walked, most recent first.
    memo: Cell<Memo>,
}

/// [`SpaceMappings`] over a [`Fass`] manager (the name it had first).
pub type FassMappings<'f, P, S, const SPACES: usize, const SLOTS: usize, const SEGMENTS: usize> =
    SpaceMappings<'f, Fass<P, SPACES, SLOTS, SEGMENTS>, S>;

/// [`SpaceMappings`] over the classic per-space tables ([`TableSwitch`],
/// naive or with FCSE PIDs).
pub type TableSwitchMappings<'f, S, const SPACES: usize, const SEGMENTS: usize> =
    SpaceMappings<'f, TableSwitch<SPACES, SEGMENTS>, S>;

impl<T: ?Sized, S: ?Sized, I> fmt::Debug for SpaceMappings<'_, T, S, I> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SpaceMappings")
            .field("kernel", &self.kernel.is_some())
            .field("protected", &self.saved.len())
            .field("generation", &self.generation)
            .field("error", &self.error.get())
            .finish_non_exhaustive()
    }
}

impl<'f, T, S> SpaceMappings<'f, T, S>
where
    T: SpaceTables + ?Sized,
    S: Platform + ?Sized,
{
    /// The mappings of the strategy's spaces, changed on `sys` (the
    /// platform the strategy runs on). [`AddressSpace::Kernel`] maps
    /// nothing until [`SpaceMappings::with_kernel`].
    pub fn new(spaces: &'f mut T, sys: &'f mut S) -> Self {
        SpaceMappings {
            spaces,
            sys,
            kernel: None,
            index: WalkTables,
            pending: None,
            saved: heapless::Vec::new(),
            generation: 0,
            error: Cell::new(None),
            memo: Cell::new(Memo::new(NO_SITE)),
        }
    }
}

impl<'f, T, S, I> SpaceMappings<'f, T, S, I>
where
    T: SpaceTables + ?Sized,
    S: Platform + ?Sized,
    I: FrameIndex,
{
    /// Asks `index` where a frame is mapped before walking every table,
    /// and tells it of every swap (see [`FrameIndex`]): the hook of a
    /// kernel with its own reverse index and records. The generation
    /// changes.
    #[must_use]
    pub fn with_index<J: FrameIndex>(self, index: J) -> SpaceMappings<'f, T, S, J> {
        let mut m = SpaceMappings {
            spaces: self.spaces,
            sys: self.sys,
            kernel: self.kernel,
            index,
            pending: None,
            saved: self.saved,
            generation: self.generation,
            error: self.error,
            memo: self.memo,
        };
        m.changed();
        m
    }

    /// The reverse index (read-only).
    #[must_use]
    pub fn index(&self) -> &I {
        &self.index
    }

    /// The reverse index, for changes: advances the generation, since its
    /// answers may change.
    pub fn edit_index(&mut self) -> &mut I {
        self.changed();
        &mut self.index
    }

    /// Adds the kernel's own table as [`AddressSpace::Kernel`]: a
    /// [`PageTable`] built in the platform's table memory (the one whose
    /// root the strategy's `KernelTable` vouches for), at FCSE PID 0. Its
    /// pages (second-level descriptors: TCM windows, a page the kernel
    /// moves) are reported and edited like the tasks'; the strategy sees
    /// each edit, since every space's table (and the CPD) links the
    /// kernel's second-level tables rather than copying them. Its sections
    /// (a linear map) are reported but never edited
    /// ([`FassMappingsError::KernelSection`]).
    #[must_use]
    pub fn with_kernel(mut self, kernel: &'f mut PageTable) -> Self {
        self.kernel = Some(kernel);
        self.changed();
        self
    }

    /// The strategy (read-only).
    #[must_use]
    pub fn spaces(&self) -> &T {
        self.spaces
    }

    /// The manager (read-only): [`SpaceMappings::spaces`] under its first name.
    #[must_use]
    pub fn fass(&self) -> &T {
        self.spaces
    }

    /// The platform (read-only).
    #[must_use]
    pub fn platform(&self) -> &S {
        self.sys
    }

    /// The strategy and its platform, for changes (map, unmap, switch,
    /// resolve, create or destroy spaces): advances the generation, since
    /// they may add, remove or move mappings.
    pub fn edit(&mut self) -> (&mut T, &mut S) {
        self.changed();
        (&mut *self.spaces, &mut *self.sys)
    }

    /// The kernel's table and the platform, for changes: advances the
    /// generation. `None` without a kernel table.
    pub fn edit_kernel(&mut self) -> Option<(&mut PageTable, &mut S)> {
        self.changed();
        Some((self.kernel.as_deref_mut()?, &mut *self.sys))
    }

    /// Mappings whose write access is taken and remembered now.
    #[must_use]
    pub fn protected(&self) -> usize {
        self.saved.len()
    }

    /// The last error a [`Mappings`] call met, cleared by the call.
    pub fn take_error(&mut self) -> Option<FassMappingsError> {
        self.error.take()
    }

    fn changed(&mut self) {
        // A `u64` that only goes up: it cannot come back to a value an
        // exchange trusts within 2^64 changes (see `Mappings::generation`).
        self.generation = self.generation.wrapping_add(1);
        self.memo.set(Memo::new(NO_SITE));
    }

    /// The generation: the adapter's own changes and the index's. Both
    /// only go up, so their sum only goes up, and changes with either.
    fn gen(&self) -> u64 {
        self.generation.wrapping_add(self.index.generation())
    }

    fn fail(&self, e: FassMappingsError) {
        self.error.set(Some(e));
    }

    /// The address of `site`'s page in its space.
    fn va(&self, site: Site) -> Result<VirtAddr, FassError> {
        match site.space {
            AddressSpace::Kernel => Ok(VirtAddr::new(site.mva.as_u32())),
            AddressSpace::User(id) => {
                let pid = self.spaces.space_pid(id)?;
                Ok(va_of(site.mva, pid.fcseidr_value()))
            }
        }
    }

    /// What the kernel's table maps at `mva`.
    fn kernel_at(&self, mva: ModifiedVirtAddr) -> Option<Found> {
        let k = self.kernel.as_deref()?;
        match k.lookup(&*self.sys, mva) {
            Ok(m) => m.as_ref().map(Found::from),
            Err(e) => {
                self.fail(e.into());
                None
            }
        }
    }

    /// The mapping at `site`, if it still maps a `size` page at `page`.
    fn at(&self, site: Site, page: PhysAddr, size: PageSizeKind) -> Option<Found> {
        let found = match site.space {
            AddressSpace::Kernel => self
                .kernel_at(site.mva)
                .filter(|_| self.kernel_page_mva(site.mva, size)),
            AddressSpace::User(id) => {
                let va = self.va(site).ok()?;
                match self.spaces.translate_page(&*self.sys, id, va) {
                    Ok(Some(m)) if m.mva == site.mva => Some(Found::from(&m)),
                    Ok(_) => None,
                    Err(e) => {
                        self.fail(e.into());
                        None
                    }
                }
            }
        };
        found.filter(|m| m.pa == page && m.size == size)
    }

    /// Whether `mva` is the first address of a `size` page.
    fn kernel_page_mva(&self, mva: ModifiedVirtAddr, size: PageSizeKind) -> bool {
        mva.as_u32() & (size.size() - 1) == 0
    }

    /// Walks every space, and the kernel's table, for the mappings of a
    /// `size` page at `page`; calls `f` with each.
    fn walk(&self, page: PhysAddr, size: PageSizeKind, mut f: impl FnMut(Site, Found)) {
        if self.indexed(page, size, &mut f) {
            return;
        }
        let r = self.spaces.mappings_of(&*self.sys, page, &mut |space, m| {
            if m.pa == page && m.size == size {
                f(
                    Site {
                        space: AddressSpace::User(space),
                        mva: m.mva,
                    },
                    Found::from(&m),
                );
            }
        });
        if let Err(e) = r {
            self.fail(e.into());
        }
        let Some(k) = self.kernel.as_deref() else {
            return;
        };
        for m in k.mappings(&*self.sys) {
            match m {
                Ok(m) if m.pa == page && m.size == size => f(
                    Site {
                        space: AddressSpace::Kernel,
                        mva: m.mva,
                    },
                    Found::from(&m),
                ),
                Ok(_) => {}
                Err(e) => {
                    self.fail(e.into());
                    return;
                }
            }
        }
    }

    /// The mappings of `page` by the index, each looked up and kept only
    /// if it maps the page; `false` if the index does not cover the page.
    /// Between a swap and its [`FrameIndex::moved`], the index still has
    /// the two pages' mappings under their old frames: both are asked.
    fn indexed(&self, page: PhysAddr, size: PageSizeKind, f: &mut impl FnMut(Site, Found)) -> bool {
        let mut ask = [Some(page), None];
        if let Some((a, b, s)) = self.pending {
            if s == size && (page == a || page == b) {
                ask = [Some(a), Some(b)];
            }
        }
        let mut covered = false;
        for p in ask.into_iter().flatten() {
            covered |= self.index.sites_of(p, size, &mut |space, va| {
                if let Some((site, m)) = self.at_va(space, va) {
                    if m.pa == page && m.size == size {
                        f(site, m);
                    }
                }
            });
        }
        covered
    }

    /// The mapping of `space` at `va`, with its MVA.
    fn at_va(&self, space: AddressSpace, va: VirtAddr) -> Option<(Site, Found)> {
        match space {
            AddressSpace::Kernel => {
                let mva = ModifiedVirtAddr::new(va.as_u32());
                Some((Site { space, mva }, self.kernel_at(mva)?))
            }
            AddressSpace::User(id) => match self.spaces.translate_page(&*self.sys, id, va) {
                Ok(Some(m)) => Some((Site { space, mva: m.mva }, Found::from(&m))),
                // A stale site: nothing mapped there, or no such space now.
                Ok(None) | Err(FassError::UnknownSpace(_)) => None,
                Err(e) => {
                    self.fail(e.into());
                    None
                }
            },
        }
    }

    /// The remembered mappings of `page`, each checked to map it still;
    /// `None` if not remembered or one no longer does.
    fn remembered(&self, page: PhysAddr, size: PageSizeKind) -> Option<Sites> {
        self.memo
            .get()
            .recall(self.gen(), page, size, |site| self.at(site, page, size))
    }

    /// Remembers the mappings of `page` found by a complete walk, in front
    /// of the most recent other page remembered.
    fn remember(&self, page: PhysAddr, size: PageSizeKind, sites: &Sites) {
        let mut memo = self.memo.get();
        memo.remember(self.gen(), page, size, sites.iter().map(|(site, _)| *site));
        self.memo.set(memo);
    }

    /// The mappings of `page`: remembered, or found by a walk (and then
    /// remembered if they fit). `None` if there are more than
    /// [`MAX_SITES`] (the caller walks and acts as it goes).
    fn sites(&self, page: PhysAddr, size: PageSizeKind) -> Option<Sites> {
        if let Some(s) = self.remembered(page, size) {
            return Some(s);
        }
        let mut sites = Sites::new();
        let mut fits = true;
        self.walk(page, size, |site, m| {
            fits &= sites.push((site, m)).is_ok();
        });
        if fits {
            self.remember(page, size, &sites);
            Some(sites)
        } else {
            None
        }
    }

    /// Calls `act` with every mapping of `page`: the remembered or walked
    /// ones, or (more than [`MAX_SITES`]) walking in batches of that many,
    /// each batch the mappings after the previous one in the walk's order
    /// (spaces, then MVAs, then the kernel's table; `act` changes
    /// permissions only, which keeps that order).
    fn each_site(
        &mut self,
        page: PhysAddr,
        size: PageSizeKind,
        mut act: impl FnMut(&mut Self, Site, Found),
    ) {
        if let Some(sites) = self.sites(page, size) {
            for (site, m) in sites {
                act(self, site, m);
            }
            return;
        }
        let mut skip = 0;
        loop {
            let mut batch = Sites::new();
            let (mut seen, mut more) = (0, false);
            self.walk(page, size, |site, m| {
                if seen >= skip {
                    more |= batch.push((site, m)).is_err();
                }
                seen += 1;
            });
            for (site, m) in batch {
                act(self, site, m);
            }
            if !more {
                return;
            }
            skip += MAX_SITES;
        }
    }

    /// Edits the kernel's page at `mva` (`ap`, or the frame `to`).
    fn edit_kernel_page(
        &mut self,
        mva: ModifiedVirtAddr,
        ap: Option<SubpageAp>,
        to: Option<PhysAddr>,
    ) -> Result<(), FassMappingsError> {
        let Some(k) = self.kernel.as_deref_mut() else {
            return Err(FassMappingsError::Kernel(TableError::NotMapped(mva)));
        };
        let sys = &mut *self.sys;
        match k.lookup(&*sys, mva)? {
            Some(m) if m.size == PageSizeKind::Section => {
                return Err(FassMappingsError::KernelSection(mva));
            }
            _ => {}
        }
        let flush = match (ap, to) {
            (Some(ap), _) => k.set_page_ap(&*sys, mva, ap)?,
            (None, Some(pa)) => k.retarget_page(&*sys, mva, pa)?,
            (None, None) => return Ok(()),
        };
        flush.flush_on(sys);
        Ok(())
    }

    /// Sets the permissions of the mapping at `site`; false (and the error
    /// kept, the generation changed) if refused.
    fn set_ap(&mut self, site: Site, ap: SubpageAp) -> bool {
        let r = match site.space {
            AddressSpace::Kernel => self.edit_kernel_page(site.mva, Some(ap), None),
            AddressSpace::User(id) => self
                .va(site)
                .and_then(|va| self.spaces.page_ap(self.sys, id, va, ap))
                .map(|_| ())
                .map_err(Into::into),
        };
        self.settle(r)
    }

    /// Points the mapping at `site` at `to`; false (and the error kept,
    /// the generation changed) if refused.
    fn retarget(&mut self, site: Site, to: PhysAddr) -> bool {
        let r = match site.space {
            AddressSpace::Kernel => self.edit_kernel_page(site.mva, None, Some(to)),
            AddressSpace::User(id) => self
                .va(site)
                .and_then(|va| self.spaces.page_frame(self.sys, id, va, to))
                .map(|_| ())
                .map_err(Into::into),
        };
        self.settle(r)
    }

    /// Keeps the error of a refused edit and changes the generation, so a
    /// running exchange sees the mappings as changed.
    fn settle(&mut self, r: Result<(), FassMappingsError>) -> bool {
        match r {
            Ok(()) => true,
            Err(e) => {
                self.fail(e);
                self.changed();
                false
            }
        }
    }

    /// What the mapping at `site` holds now, whatever its frame.
    fn live(&self, site: Site) -> Option<Found> {
        match site.space {
            AddressSpace::Kernel => self.kernel_at(site.mva),
            AddressSpace::User(id) => {
                let va = self.va(site).ok()?;
                self.spaces
                    .translate_page(&*self.sys, id, va)
                    .ok()
                    .flatten()
                    .filter(|m| m.mva == site.mva)
                    .as_ref()
                    .map(Found::from)
            }
        }
    }

    /// Forgets protections whose mapping no longer holds what write
    /// protection left (the kernel changed or removed it).
    fn forget_stale(&mut self) {
        let mut i = 0;
        while let Some(s) = self.saved.get(i).copied() {
            if self.live(s.site).is_some_and(|m| m.ap == PROTECTED) {
                i += 1;
            } else {
                self.saved.swap_remove(i);
            }
        }
    }
}

impl<T, S, I> Mappings for SpaceMappings<'_, T, S, I>
where
    T: SpaceTables + ?Sized,
    S: Platform + ?Sized,
    I: FrameIndex,
{
    fn translate(&self, space: AddressSpace, va: VirtAddr) -> Option<Translation> {
        let m = match space {
            AddressSpace::Kernel => self.kernel_at(ModifiedVirtAddr::new(va.as_u32()))?,
            AddressSpace::User(id) => self
                .spaces
                .translate_page(&*self.sys, id, va)
                .ok()?
                .as_ref()
                .map(Found::from)?,
        };
        Some(Translation {
            page: m.pa,
            size: m.size,
            writable: m.writable(),
        })
    }

    fn generation(&self) -> Option<u64> {
        Some(self.gen())
    }

    fn for_each_mapping(
        &self,
        page: PhysAddr,
        size: PageSizeKind,
        f: &mut dyn FnMut(&ReverseMapping),
    ) {
        let report = |site: Site, m: &Found| ReverseMapping {
            space: site.space,
            mva: site.mva,
            writable: m.writable(),
            cached: m.cacheable,
        };
        if let Some(sites) = self.sites(page, size) {
            for (site, m) in &sites {
                f(&report(*site, m));
            }
        } else {
            self.walk(page, size, |site, m| f(&report(site, &m)));
        }
    }

    fn write_protect(&mut self, page: PhysAddr, size: PageSizeKind) {
        self.forget_stale();
        self.each_site(page, size, |me, site, m| {
            if !m.writable() {
                return;
            }
            if me.saved.is_full() {
                me.fail(FassMappingsError::ProtectFull);
                me.changed();
                return;
            }
            if me.set_ap(site, PROTECTED) {
                // Room was checked above.
                let _ = me.saved.push(Saved { site, was: m.ap });
            }
        });
    }

    fn restore_write(&mut self, page: PhysAddr, size: PageSizeKind) {
        self.each_site(page, size, |me, site, m| {
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
        // Both sides are found before either changes (a retargeted
        // mapping of `a` maps `b`). A side too large to remember is
        // changed while walked, and the other side then holds it too:
        // that case is refused (the generation changes, the exchange
        // stops) rather than half done.
        let (Some(sa), Some(sb)) = (self.sites(a, size), self.sites(b, size)) else {
            let many = if self.sites(a, size).is_none() { a } else { b };
            self.fail(FassMappingsError::TooManyMappings(many));
            self.changed();
            return;
        };
        for (sites, to) in [(sa, b), (sb, a)] {
            for (site, _) in sites {
                self.retarget(site, to);
            }
        }
        // What was remembered of `a` now describes `b` and vice versa.
        let mut memo = self.memo.get();
        memo.swapped(a, b, size);
        self.memo.set(memo);
        self.pending = Some((a, b, size));
    }

    /// The index's records follow the swap ([`FrameIndex::moved`]), out of
    /// the masked window.
    fn swapped(&mut self, a: PhysAddr, b: PhysAddr, size: PageSizeKind) {
        if self.pending.take().is_some() {
            self.index.moved(a, b, size);
        }
    }

    fn move_second_level(&mut self, old: PhysAddr, _new: PhysAddr) {
        self.fail(FassMappingsError::TableMove(old));
    }

    fn move_first_level(&mut self, old: PhysAddr, _new: PhysAddr) {
        self.fail(FassMappingsError::TableMove(old));
    }
}
