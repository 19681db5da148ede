//! [`Mappings`] over `fass` address spaces: [`FassMappings`] (cargo
//! feature `fass`).
//!
//! A kernel that manages its tasks' address spaces with [`fass::Fass`]
//! (FASS: one caching page directory, domains as address-space tags) hands
//! the manager and its platform to a [`FassMappings`] and the result to
//! `spm` as its [`Mappings`]. Every task is [`AddressSpace::User`] with its
//! fass [`SpaceId`]:
//!
//! * [`Mappings::translate`] is [`Fass::translate`] (a private 4 KiB page,
//!   or the section of a shared segment the space maps);
//! * [`Mappings::for_each_mapping`] is [`Fass::for_each_mapping_of`]: fass
//!   keeps no reverse index, so this reads every second-level table of
//!   every space (256 descriptors per first-level slot in use; `SPACES`
//!   spaces of at most `SLOTS` slots each: up to `256 * SLOTS * SPACES`
//!   reads). The mappings found for the two pages asked last (up to
//!   [`MAX_SITES`] each) are remembered under the current generation, so
//!   the changes an exchange makes inside its interrupts-masked windows
//!   ([`Mappings::write_protect`], [`Mappings::swap`],
//!   [`Mappings::restore_write`]) check and edit only those, one
//!   translation each, instead of walking every table;
//! * the changes are [`Fass::set_page_ap`] and [`Fass::retarget_page`]
//!   with [`PageLines::LeaveToCaller`] (the exchange cleans the pages'
//!   lines before its switch and flushes them after it): each rewrites
//!   one descriptor of the space's own second-level table, which is also
//!   the table the CPD links, cleans its line and invalidates the page's
//!   TLB entry.
//!
//! # Example
//! Task 1's page, which task 2 maps too, moves into a DTCM frame mapped at
//! task 1's resource slot; afterwards both tasks reach the DTCM frame.
//! The hidden first lines build the FASS manager as in `fass`'s docs, on a
//! recording CPU that fass and the exchange share.
//! ```
//! # use fass::{Cpd, DefaultPolicy, DomainSet, Fass, KernelTable, Layout, Split};
//! # use mmu_armv5::descriptor::L1Encoding;
//! # use mmu_armv5::maint::Arm926;
//! # use mmu_armv5::regs::MockCp15;
//! # use mmu_armv5::table::{PoolBlock, TableKind, TablePool, TableRef};
//! # use mmu_armv5::{Domain, ModifiedVirtAddr};
//! # let cpu = core::cell::RefCell::new(Arm926::new(MockCp15::arm926()));
//! # let mut mem = Box::new([PoolBlock::ZERO; 8]);
//! # let pool = TablePool::new(&mut *mem, Pa::new(0x0100_0000), ModifiedVirtAddr::new(0xC100_0000))?;
//! # let mut sys = Split::new(SharedCpu(&cpu), pool);
//! # // The kernel's RAM at 3 GiB, one section, built through the mapper.
//! # let mut kt = mmu_armv5::table::PageTable::new(&mut sys)?;
//! # let ram = mmu_armv5::table::MapAttrs::new(mmu_armv5::Domain::default(), mmu_armv5::descriptor::AccessPermission::PrivRw, mmu_armv5::descriptor::CachePolicy::WriteBack);
//! # let (at, to) = (mmu_armv5::ModifiedVirtAddr::new(0xC000_0000), mmu_armv5::PhysAddr::new(0));
//! # kt.map(&mut sys, at, to, 1 << 20, ram, mmu_armv5::table::SizePolicy::Largest)?.flush_on(&mut sys);
//! # // SAFETY: `MockCp15` only records register writes (see `KernelTable::new`).
//! # let kernel = unsafe { KernelTable::new(&sys, kt.root(), L1Encoding::Arm9, &Layout::DEMO, Domain::default()) }?;
//! # let mut fass: Fass<DefaultPolicy, 8, 8, 4> = Fass::new(Cpd::new(kernel), DomainSet::EMPTY, DefaultPolicy::default())?;
//! use mmu_armv5::descriptor::{AccessPermission as Ap, CachePolicy};
//! use mmu_armv5::size::{Frame, Page, PageSizeKind};
//! use mmu_armv5::{PhysAddr as Pa, VirtAddr as Va};
//! use spm::AddressSpace::{Kernel, User};
//! use spm::{exchange::DEFAULT_CHUNK, Exchange, ExchangeRequest, FassMappings, FrameDesc, FrameState, FrameTable};
//! use spm::{Hw, InitialUse, Location, Mappings, PhysRegion, PhysWindows, RecordingIrq, Rights, SectionSummary, SharedCpu, SpaceId};
//! let (t1, t2, wb) = (SpaceId(1), SpaceId(2), CachePolicy::WriteBack);
//! for t in [t1, t2] {
//!     fass.add_space(t)?;
//!     fass.map_page(&mut sys, t, Page::from_start(Va::new(0x8000))?, Frame::from_start(Pa::new(0x5000))?, Ap::ReadWrite, wb)?;
//! }
//! let (slot, dtcm) = (Page::from_start(Va::new(0x0010_0000))?, Frame::from_start(Pa::new(0x0300_0000))?);
//! fass.map_page(&mut sys, t1, slot, dtcm, Ap::PrivRw, wb)?; // resource slot
//! // The frame table (RAM, DTCM frames page resources) and physical memory (host buffers here).
//! let regions = [PhysRegion::new(Pa::new(0), 64 << 10, Location::Ram, InitialUse::Kernel)?,
//!                PhysRegion::new(Pa::new(0x0300_0000), 32 << 10, Location::Dtcm, InitialUse::Resource)?];
//! let (mut frames, mut sections) = ([FrameDesc::default(); 16 + 8], [SectionSummary::default(); 2]);
//! let mut table = FrameTable::<2>::new(&regions, &mut frames, &mut sections)?;
//! table.init_range(Frame::from_start(Pa::new(0x5000))?, FrameState::User(t1), true)?;
//! let (mut ram, mut dtcm) = (vec![0u8; 64 << 10], vec![0u8; 32 << 10]);
//! ram[0x5123] = 42;
//! let mut phys = PhysWindows::<2>::new();
//! // SAFETY: each buffer stands for its physical range and is reached only through `phys`.
//! unsafe { phys.add(Pa::new(0), 64 << 10, ram.as_mut_ptr()) }?;
//! // SAFETY: as above.
//! unsafe { phys.add(Pa::new(0x0300_0000), 32 << 10, dtcm.as_mut_ptr()) }?;
//! let (mut hw, mut irq) = (Hw::new(SharedCpu(&cpu), phys), RecordingIrq::new());
//! // The exchange, over the fass spaces.
//! let mut maps = FassMappings::new(&mut fass, &mut sys);
//! let req = ExchangeRequest { caller: Kernel, target_space: User(t1), target: Va::new(0x8000),
//!     resource_space: User(t1), resource: Va::new(0x0010_0000), size: PageSizeKind::Small, count: 1, rights: Rights::RW };
//! let mut ex = Exchange::begin(&mut table, &maps, req, DEFAULT_CHUNK)?;
//! // SAFETY: the frame table, fass's tables and `hw` describe one machine; nothing else reaches the frames.
//! unsafe { ex.run(&mut table, &mut maps, &mut hw, &mut irq) }?;
//! for t in [t1, t2] {
//!     assert_eq!(maps.translate(User(t), Va::new(0x8123)).unwrap().page, Pa::new(0x0300_0000));
//! }
//! let mut byte = [0];
//! hw.phys.read(Pa::new(0x0300_0123), &mut byte)?;
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
//! The manager is held by `&mut` for the life of the value, so every
//! change to it goes through [`FassMappings::edit`], which advances
//! [`Mappings::generation`]. Keep one `FassMappings` for the life of an
//! exchange: it holds the write-protection memory.
//!
//! # What is not covered
//! * **The kernel's table.** [`AddressSpace::Kernel`] translates to
//!   nothing and its mappings are never reported: fass does not manage the
//!   kernel's table. Map the page resources an exchange uses (TCM frames)
//!   into a task's space, as the demo kernel does at its resource slots;
//!   a kernel alias of an exchanged frame (a linear map) must be uncached
//!   and unused for writes meanwhile, as `spm` asks of aliases of another
//!   size.
//! * **Shared segments.** A segment page is reported (a section) but never
//!   edited: fass refuses per-page edits of segments
//!   ([`fass::FassError::NotPrivate`]). A change that meets one is not made,
//!   [`FassMappings::take_error`] reports [`FassMappingsError::Fass`] and
//!   the generation changes, so an exchange stops with `Changed` at its
//!   next step instead of completing with the segment's mapping unmoved.
//! * **Moving page tables.** fass's tables cannot be re-linked from
//!   outside: [`Mappings::move_second_level`] and
//!   [`Mappings::move_first_level`] change nothing and report
//!   [`FassMappingsError::TableMove`]. Do not mark table frames movable in
//!   the frame table.
//!
//! [`Fass::translate`]: fass::Fass::translate
//! [`Fass::for_each_mapping_of`]: fass::Fass::for_each_mapping_of
//! [`Fass::set_page_ap`]: fass::Fass::set_page_ap
//! [`Fass::retarget_page`]: fass::Fass::retarget_page

use crate::mappings::{AddressSpace, Mappings, ReverseMapping, Translation};
use crate::walk_memo::WalkMemo;
use core::cell::Cell;
use core::fmt;
use fass::{Fass, FassError, PageLines, PageMapping, Platform, SpaceId, VictimPolicy};
use mmu_armv5::addr::FCSE_WINDOW_SIZE;
use mmu_armv5::descriptor::{AccessPermission, SubpageAp};
use mmu_armv5::size::PageSizeKind;
use mmu_armv5::{ModifiedVirtAddr, PhysAddr, VirtAddr};

/// The most mappings whose write access [`FassMappings`] remembers at once.
pub const MAX_PROTECTED: usize = 16;

/// The most mappings of one page [`FassMappings`] remembers from a walk; a
/// page with more is walked again for every change.
pub const MAX_SITES: usize = 8;

/// What write protection leaves: no subpage writable.
const PROTECTED: SubpageAp = SubpageAp::uniform(AccessPermission::NoneOrRom);

/// What went wrong inside a [`Mappings`] call of [`FassMappings`] (which
/// cannot return an error), kept for [`FassMappings::take_error`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum FassMappingsError {
    /// fass refused a lookup or an edit (a segment page: `NotPrivate`; a
    /// table it cannot read).
    Fass(FassError),
    /// [`Mappings::write_protect`] found more writable mappings than
    /// [`MAX_PROTECTED`]: the rest stayed writable and the generation
    /// changed.
    ProtectFull,
    /// [`Mappings::swap`] met a page with more than [`MAX_SITES`]
    /// mappings: nothing was swapped and the generation changed.
    TooManyMappings(PhysAddr),
    /// A page-table frame was moved: fass's tables are not re-linked.
    TableMove(PhysAddr),
}

impl fmt::Display for FassMappingsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            FassMappingsError::Fass(e) => write!(f, "fass: {e}"),
            FassMappingsError::ProtectFull => write!(
                f,
                "more than {MAX_PROTECTED} writable mappings to protect at once"
            ),
            FassMappingsError::TooManyMappings(pa) => {
                write!(f, "page {pa} has more than {MAX_SITES} mappings to swap")
            }
            FassMappingsError::TableMove(pa) => {
                write!(f, "fass page tables cannot move (frame {pa})")
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

/// One mapping: the space and the page's MVA there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Site {
    space: SpaceId,
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
    space: SpaceId(0),
    mva: ModifiedVirtAddr::new(0),
};

/// The mappings of one page, found by a walk or remembered.
type Sites = heapless::Vec<(Site, PageMapping), MAX_SITES>;

/// The address of space `space`'s page at `mva`, given its PID bits
/// (`pid << 25`): a low page's MVA lies in the space's own window.
fn va_of(mva: ModifiedVirtAddr, pid_window: u32) -> VirtAddr {
    let m = mva.as_u32();
    if pid_window != 0 && m & !(FCSE_WINDOW_SIZE - 1) == pid_window {
        VirtAddr::new(m & (FCSE_WINDOW_SIZE - 1))
    } else {
        VirtAddr::new(m)
    }
}

/// [`Mappings`] over the address spaces of a [`Fass`] manager (see the
/// [module docs](self)).
///
/// `S` is the platform fass runs on (CPU, cache maintenance, table
/// memory). An exchange step also needs the CPU in its `hw`: on a kernel
/// the platform's CPU part is then a [`SharedCpu`](crate::SharedCpu) over
/// the one CPU value both use; in host tests, a second mock.
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
pub struct FassMappings<
    'f,
    P: VictimPolicy,
    S: ?Sized,
    const SPACES: usize,
    const SLOTS: usize,
    const SEGMENTS: usize,
> {
    fass: &'f mut Fass<P, SPACES, SLOTS, SEGMENTS>,
    sys: &'f mut S,
    saved: heapless::Vec<Saved, MAX_PROTECTED>,
    generation: u64,
    error: Cell<Option<FassMappingsError>>,
    /// The last two pages walked, most recent first.
    memo: Cell<Memo>,
}

impl<
        P: VictimPolicy,
        S: ?Sized,
        const SPACES: usize,
        const SLOTS: usize,
        const SEGMENTS: usize,
    > fmt::Debug for FassMappings<'_, P, S, SPACES, SLOTS, SEGMENTS>
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FassMappings")
            .field("protected", &self.saved.len())
            .field("generation", &self.generation)
            .field("error", &self.error.get())
            .finish_non_exhaustive()
    }
}

impl<'f, P, S, const SPACES: usize, const SLOTS: usize, const SEGMENTS: usize>
    FassMappings<'f, P, S, SPACES, SLOTS, SEGMENTS>
where
    P: VictimPolicy,
    S: Platform + ?Sized,
{
    /// The mappings of `fass`'s spaces, changed on `sys` (the platform the
    /// manager runs on).
    pub fn new(fass: &'f mut Fass<P, SPACES, SLOTS, SEGMENTS>, sys: &'f mut S) -> Self {
        FassMappings {
            fass,
            sys,
            saved: heapless::Vec::new(),
            generation: 0,
            error: Cell::new(None),
            memo: Cell::new(Memo::new(NO_SITE)),
        }
    }

    /// The manager (read-only).
    #[must_use]
    pub fn fass(&self) -> &Fass<P, SPACES, SLOTS, SEGMENTS> {
        self.fass
    }

    /// The platform (read-only).
    #[must_use]
    pub fn platform(&self) -> &S {
        self.sys
    }

    /// The manager and its platform, for changes (map, unmap, switch,
    /// resolve, create or destroy spaces): advances the generation, since
    /// they may add, remove or move mappings.
    pub fn edit(&mut self) -> (&mut Fass<P, SPACES, SLOTS, SEGMENTS>, &mut S) {
        self.changed();
        (&mut *self.fass, &mut *self.sys)
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

    fn fail(&self, e: FassMappingsError) {
        self.error.set(Some(e));
    }

    /// The address of `site`'s page in its space.
    fn va(&self, site: Site) -> Result<VirtAddr, FassError> {
        let pid = self.fass.pid_of(site.space)?;
        Ok(va_of(site.mva, pid.fcseidr_value()))
    }

    /// The mapping at `site`, if it still maps a `size` page at `page`.
    fn at(&self, site: Site, page: PhysAddr, size: PageSizeKind) -> Option<PageMapping> {
        let va = self.va(site).ok()?;
        match self.fass.translate(&*self.sys, site.space, va) {
            Ok(Some(m)) if m.mva == site.mva && m.pa == page && m.size == size => Some(m),
            Ok(_) => None,
            Err(e) => {
                self.fail(e.into());
                None
            }
        }
    }

    /// Walks every space for the mappings of a `size` page at `page`;
    /// calls `f` with each.
    fn walk(&self, page: PhysAddr, size: PageSizeKind, mut f: impl FnMut(Site, PageMapping)) {
        let r = self.fass.for_each_mapping_of(&*self.sys, page, |space, m| {
            if m.pa == page && m.size == size {
                f(Site { space, mva: m.mva }, m);
            }
        });
        if let Err(e) = r {
            self.fail(e.into());
        }
    }

    /// The remembered mappings of `page`, each checked to map it still;
    /// `None` if not remembered or one no longer does.
    fn remembered(&self, page: PhysAddr, size: PageSizeKind) -> Option<Sites> {
        self.memo.get().recall(self.generation, page, size, |site| {
            self.at(site, page, size)
        })
    }

    /// Remembers the mappings of `page` found by a complete walk, in front
    /// of the most recent other page remembered.
    fn remember(&self, page: PhysAddr, size: PageSizeKind, sites: &Sites) {
        let mut memo = self.memo.get();
        memo.remember(
            self.generation,
            page,
            size,
            sites.iter().map(|(site, _)| *site),
        );
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
    /// (spaces, then MVAs; `act` changes permissions only, which keeps
    /// that order).
    fn each_site(
        &mut self,
        page: PhysAddr,
        size: PageSizeKind,
        mut act: impl FnMut(&mut Self, Site, PageMapping),
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

    /// Sets the permissions of the mapping at `site`; false (and the error
    /// kept, the generation changed) if fass refuses.
    fn set_ap(&mut self, site: Site, ap: SubpageAp) -> bool {
        let r = self
            .va(site)
            .and_then(|va| self.fass.set_page_ap(self.sys, site.space, va, ap));
        self.settle(r.map(|_| ()))
    }

    /// Keeps the error of a refused edit and changes the generation, so a
    /// running exchange sees the mappings as changed.
    fn settle(&mut self, r: Result<(), FassError>) -> bool {
        match r {
            Ok(()) => true,
            Err(e) => {
                self.fail(e.into());
                self.changed();
                false
            }
        }
    }

    /// Forgets protections whose mapping no longer holds what write
    /// protection left (the kernel changed or removed it).
    fn forget_stale(&mut self) {
        let mut i = 0;
        while let Some(s) = self.saved.get(i).copied() {
            let live = self.va(s.site).ok().and_then(|va| {
                self.fass
                    .translate(&*self.sys, s.site.space, va)
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

impl<P, S, const SPACES: usize, const SLOTS: usize, const SEGMENTS: usize> Mappings
    for FassMappings<'_, P, S, SPACES, SLOTS, SEGMENTS>
where
    P: VictimPolicy,
    S: Platform + ?Sized,
{
    fn translate(&self, space: AddressSpace, va: VirtAddr) -> Option<Translation> {
        let AddressSpace::User(id) = space else {
            return None;
        };
        let m = self.fass.translate(&*self.sys, id, va).ok()??;
        Some(Translation {
            page: m.pa,
            size: m.size,
            writable: m.writable(),
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
        let report = |site: Site, m: &PageMapping| ReverseMapping {
            space: AddressSpace::User(site.space),
            mva: site.mva,
            writable: m.writable(),
            cached: m.cache.cacheable(),
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
                let r = self.va(site).and_then(|va| {
                    self.fass
                        .retarget_page(self.sys, site.space, va, to, PageLines::LeaveToCaller)
                });
                self.settle(r.map(|_| ()));
            }
        }
        // What was remembered of `a` now describes `b` and vice versa.
        let mut memo = self.memo.get();
        memo.swapped(a, b, size);
        self.memo.set(memo);
    }

    fn move_second_level(&mut self, old: PhysAddr, _new: PhysAddr) {
        self.fail(FassMappingsError::TableMove(old));
    }

    fn move_first_level(&mut self, old: PhysAddr, _new: PhysAddr) {
        self.fail(FassMappingsError::TableMove(old));
    }
}
