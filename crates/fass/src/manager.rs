//! The FASS address-space manager: spaces, shared segments, domains, the
//! CPD and PIDs; creating, destroying, mapping and unmapping.
//!
//! [`Fass`] holds all FASS state. Its switch path is in [`crate::switch`]
//! and its fault resolution (lazy CPD fills, collisions) in
//! [`crate::resolve`]; this module holds everything else.
//!
//! * A space gets a best-effort FCSE PID at creation (shared when they run
//!   out: domains catch the collisions) and a domain when it first runs
//!   (recycled from another space by the [`VictimPolicy`] when none is free).
//! * Private pages are 4 KiB pages, inside the space's 32 MiB window or
//!   fixed above it (never in the kernel or shared region). Fixed pages
//!   above 32 MiB are not relocated, so they may land in another space's
//!   window: the CPD holds one of the two at a time and the other faults
//!   into [`Fass::resolve`] (a collision). A fixed page inside the space's
//!   own window aliases its low page at the same offset (the same MVA): the
//!   directory rejects the second one as [`SpaceError::AlreadyMapped`].
//! * Shared segments ([`crate::segment`]) get a domain on first map and
//!   give it back on last unmap; segment domains are never recycled, so
//!   they count against the 15 a space could use.
//!
//! # Recycling a domain: the [`RecycleRule`]
//! Taking a domain back from a space clears the CPD slots it tags and
//! invalidates the TLB. Whether the caches must be flushed too depends on
//! who could later hit the lines the space left (the caches are virtually
//! indexed and tagged by MVA, so a line is hit by whoever next reaches its
//! MVA through a valid CPD entry, whatever physical page that entry maps):
//!
//! * [`RecycleRule::Conservative`] (Pistachio, OKL4, Wiggins): flush
//!   whenever the domain is dirty (its owner ran since the last full flush).
//! * [`RecycleRule::ExclusiveWindows`] (the default): no flush, even if
//!   dirty, when the owner is *window-exclusive* ([`Fass::is_window_exclusive`]):
//!   every first-level slot of its directory lies inside its own 32 MiB FCSE
//!   window (no fixed page above 32 MiB outside it, never moved to PID 0)
//!   and no other space holds its PID. Its lines then sit at MVAs of its
//!   own window only. No other space's low pages reach that window (their
//!   PIDs differ) and its own later accesses find lines consistent with
//!   its own mappings (every unmap cleans and invalidates the page's lines
//!   by MVA, domain or not). The lines are recorded as left in that window
//!   ([`crate::window::WindowLines`]) and the domain goes to its new owner
//!   clean. Other owners (segments, spaces with fixed pages outside their
//!   window or a shared PID) keep the conservative rule.
//!
//! What remains reachable is guarded where the window is next entered: a
//! CPD fill of a slot inside a window holding lines left by *another* space
//! (a fixed page of another space there, a space that was later given the
//! same PID, a shared segment) flushes first ([`crate::resolve`]); a space
//! destroyed while its left lines may be cached flushes before its frames
//! and PID are reused. A full flush, whatever triggered it, clears the
//! record (epoch-guarded like the PID allocator's dirty bits).

use crate::cpd::Cpd;
use crate::domain::{DomainSet, DomainTable, Eviction, Owner};
use crate::error::FassError;
use crate::id::{SegmentId, SpaceId};
use crate::layout::{Layout, RegionKind};
use crate::lean::{self, LeanSwitch, LeanTable};
use crate::pid::{PidAllocator, PidContext, PidMode};
use crate::platform::Platform;
use crate::policy::VictimPolicy;
use crate::segment::{SegmentAccess, SegmentSet, SegmentSpec, Segments};
use crate::space::{SpaceDir, SpaceError, PAGE_SIZE};
use crate::stats::{Event, FastFaults, Stats, Tally};
use crate::window::WindowLines;
use mmu_armv5::descriptor::{AccessPermission, CachePolicy};
use mmu_armv5::maint::CacheMaintenance;
use mmu_armv5::regs::{Cp15Ext, Dacr, DomainAccess};
use mmu_armv5::size::{Frame, FrameRange, Page, PageRange, Size4KiB};
use mmu_armv5::{Domain, FcsePid, ModifiedVirtAddr, PhysAddr, VirtAddr};

pub(crate) struct SpaceState<const SLOTS: usize> {
    pub(crate) pid: PidContext,
    pub(crate) dir: SpaceDir<SLOTS>,
    /// The directory index of the slot the fast fault path resolved last
    /// for this space: where it looks first ([`SpaceDir::raw_near`]).
    pub(crate) fast_hint: usize,
    pub(crate) domain: Option<Domain>,
    pub(crate) segs: SegmentSet,
    pub(crate) seg_managed: SegmentSet,
}

/// The frames `pages` map to from `frame`: as many as there are pages, or
/// [`AddrError::RangeWraps`](mmu_armv5::AddrError::RangeWraps) if they
/// would reach past 4 GiB.
pub(crate) fn frames_for(
    pages: PageRange<Size4KiB, VirtAddr>,
    frame: Frame<Size4KiB>,
) -> Result<FrameRange<Size4KiB>, FassError> {
    Ok(FrameRange::new(frame, pages.count())?)
}

/// Cleans and invalidates the D- and I-cache lines of the 4 KiB page at
/// `mva` (the VIVT caches know them by MVA), then drains the write buffer.
pub(crate) fn purge_page<S: CacheMaintenance + ?Sized>(sys: &mut S, mva: ModifiedVirtAddr) {
    let mva = mva.align_down(mmu_armv5::addr::Align::KIB_4);
    let mut off = 0;
    while off < PAGE_SIZE {
        let a = ModifiedVirtAddr::new(mva.as_u32() + off);
        sys.clean_invalidate_dcache_line(a);
        sys.invalidate_icache_line(a);
        off += S::DCACHE_LINE;
    }
    sys.drain_write_buffer();
}

/// When recycling a dirty domain costs a cache flush (see the
/// [module docs](self)).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum RecycleRule {
    /// Every dirty domain is flushed out of the caches when it is taken back
    /// (the rule of the systems FASS comes from).
    Conservative,
    /// A dirty domain of a window-exclusive space is taken back without a
    /// flush; its lines are recorded per FCSE window and a later fill of
    /// that window by another space flushes first. The default.
    #[default]
    ExclusiveWindows,
}

/// FASS: FCSE PIDs plus domains as address-space tags over one CPD.
///
/// `SPACES` bounds the space identifiers (`0..SPACES`), `SLOTS` the
/// first-level slots per space directory, `SEGMENTS` (at most 32) the
/// segment identifiers.
///
/// Two spaces that share the only FCSE PID of the layout and map the same
/// address meet in one CPD slot; domains tell them apart, and
/// [`Fass::resolve`] moves the slot on the domain fault:
///
/// ```
/// # use fass::{KernelTable, Layout, Split};
/// # use mmu_armv5::descriptor::L1Encoding;
/// # use mmu_armv5::maint::Arm926;
/// # use mmu_armv5::regs::MockCp15;
/// # use mmu_armv5::table::{PoolBlock, TableKind as HwTable, TablePool, TableRef};
/// # use mmu_armv5::{Domain, ModifiedVirtAddr, PhysAddr};
/// # type Sys<'m> = Split<Arm926<MockCp15>, TablePool<'m, 8>>;
/// # // A recording ARM926EJ-S and 128 KiB of table memory, and the kernel's
/// # // table (one kernel-only section at 3 GiB, domain 0), as in the crate example.
/// # fn platform<'m>(mem: &'m mut [PoolBlock; 8], layout: &Layout) -> (Sys<'m>, KernelTable) {
/// #     let pool = TablePool::new(mem, PhysAddr::new(0x0100_0000), ModifiedVirtAddr::new(0xC100_0000)).unwrap();
/// #     let mut sys = Split::new(Arm926::new(MockCp15::arm926()), pool);
/// #     // The kernel's RAM at 3 GiB, one section, built through the mapper.
/// #     let mut kt = mmu_armv5::table::PageTable::new(&mut sys).unwrap();
/// #     let ram = mmu_armv5::table::MapAttrs::new(mmu_armv5::Domain::default(), mmu_armv5::descriptor::AccessPermission::PrivRw, mmu_armv5::descriptor::CachePolicy::WriteBack);
/// #     let (at, to) = (mmu_armv5::ModifiedVirtAddr::new(0xC000_0000), mmu_armv5::PhysAddr::new(0));
/// #     kt.map(&mut sys, at, to, 1 << 20, ram, mmu_armv5::table::SizePolicy::Largest).unwrap().flush_on(&mut sys);
/// #     // SAFETY: `MockCp15` only records register writes (see `KernelTable::new`).
/// #     let kernel = unsafe { KernelTable::new(&sys, kt.root(), L1Encoding::Arm9, layout, Domain::default()) }.unwrap();
/// #     (sys, kernel)
/// # }
/// use fass::resolve::Flushed;
/// use fass::{Cpd, DefaultPolicy, DomainSet, Fass, Region, Resolution, SpaceId, SwitchStrategy};
/// use mmu_armv5::descriptor::{AccessPermission as Ap, CachePolicy};
/// use mmu_armv5::regs::{Far, Fsr};
/// use mmu_armv5::size::{Frame, Page};
/// use mmu_armv5::{FaultKind, FaultLevel, FcsePid, VirtAddr};
///
/// let pid = FcsePid::new(1)?;
/// let layout = Layout::new(pid, pid, Region::new(0x8000_0000, 1 << 30)?, Region::new(0xC000_0000, 1 << 30)?)?;
/// let mut mem = Box::new([PoolBlock::ZERO; 8]);
/// let (mut sys, kernel) = platform(&mut mem, &layout);
/// let mut fass: Fass<DefaultPolicy, 8, 8, 4> =
///     Fass::new(Cpd::new(kernel), DomainSet::EMPTY, DefaultPolicy::default())?;
///
/// let (a, b) = (SpaceId(1), SpaceId(2));
/// fass.add_space(a)?;
/// fass.add_space(b)?;
/// assert_eq!(fass.pid_of(a)?, fass.pid_of(b)?); // one PID for both
/// let page = Page::from_start(VirtAddr::new(0x8000))?; // MVA 0x0200_8000: CPD slot 0x20 for both
/// fass.map_page(&mut sys, a, page, Frame::from_start(PhysAddr::new(0x0030_0000))?, Ap::ReadWrite, CachePolicy::WriteBack)?;
/// fass.map_page(&mut sys, b, page, Frame::from_start(PhysAddr::new(0x0031_0000))?, Ap::ReadWrite, CachePolicy::WriteBack)?;
///
/// // A's first access: a section translation fault on the empty slot; filled.
/// fass.switch_to(&mut sys, a)?;
/// let fill = fass.resolve(&mut sys, Fsr::from_bits(0x005), Far::from_bits(0x8000))?;
/// assert_eq!(fill, Resolution::Resolved { slot: 0x20, collided_with: None, flushed: Flushed::Nothing });
///
/// // B's access meets A's entry: a section domain fault in A's domain, FAR
/// // the MVA. The slot moves to B; A ran, so its lines are flushed first.
/// fass.switch_to(&mut sys, b)?;
/// let da = fass.domain_of(a)?.unwrap();
/// let fsr = 0x009 | u32::from(da.get()) << 4;
/// let moved = fass.resolve(&mut sys, Fsr::from_bits(fsr), Far::from_bits(0x0200_8000))?;
/// assert_eq!(moved, Resolution::Resolved { slot: 0x20, collided_with: Some(da), flushed: Flushed::Full });
/// assert_eq!(fass.domains().slot_owner(0x20), fass.domain_of(b)?);
/// assert_eq!((fass.stats().cpd_fills, fass.stats().collisions), (2, 1));
///
/// // A permission fault is not FASS's doing: handed back, decoded.
/// let db = fass.domain_of(b)?.unwrap();
/// let other = fass.resolve(&mut sys, Fsr::from_bits(0x00F | u32::from(db.get()) << 4), Far::from_bits(0x8000))?;
/// assert!(matches!(other, Resolution::NotFass(f) if f.kind == FaultKind::Permission(FaultLevel::Page)));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// Laid out in declaration order (`repr(C)`), what the fast fault path
/// ([`Fass::resolve_fast`]) reads first, at small offsets, the large tables
/// last.
#[repr(C)]
pub struct Fass<P: VictimPolicy, const SPACES: usize, const SLOTS: usize, const SEGMENTS: usize> {
    pub(crate) hot: Hot,
    /// Per space, the directory entry its fast faults used last.
    pub(crate) hot_dirs: [HotDir; SPACES],
    pub(crate) cpd: Cpd,
    pub(crate) stats: Tally,
    pub(crate) current: Option<SpaceId>,
    pub(crate) generation: u64,
    pub(crate) kernel: Domain,
    /// The low bits of a coarse CPD entry of this encoding: bit 4 (ARM9
    /// only) and the coarse type (see [`Hot::tag`]).
    pub(crate) tag_base: u32,
    pub(crate) rule: RecycleRule,
    /// The owned domains whose owner is a window-exclusive space
    /// ([`Fass::exclusive`]), kept across recycles so that the victim choice
    /// does not test every owned domain's space again: updated when a
    /// domain changes hands, recomputed (O(owned domains)) at the first
    /// recycle after an event that can change a space's exclusivity
    /// (`excl_stale`: a space created or destroyed, which changes a PID's
    /// user count, or a page mapped or unmapped, which can change the
    /// windows a directory uses).
    pub(crate) excl: DomainSet,
    /// `excl` must be recomputed before it is used.
    pub(crate) excl_stale: bool,
    pub(crate) windows: WindowLines,
    pub(crate) domains: DomainTable,
    pub(crate) layout: Layout,
    pub(crate) pids: PidAllocator,
    pub(crate) policy: P,
    pub(crate) segments: Segments<SEGMENTS>,
    /// Per space, its precomputed switch ([`crate::lean`]).
    pub(crate) lean: LeanTable<SPACES>,
    pub(crate) spaces: [Option<SpaceState<SLOTS>>; SPACES],
    /// Whether a switch that gives a space a domain re-links its
    /// directory's entries into the CPD at once ([`Fass::set_eager_relink`]).
    pub(crate) eager_relink: bool,
    /// Omission hook of the cache check ([`crate::omit`]).
    #[cfg(feature = "cache-check")]
    pub(crate) skip_recycle_clean: bool,
}

/// What the fast fault path ([`Fass::resolve_fast`]) needs to know of the
/// current space without looking it up, recomputed by [`Fass::refresh_hot`]
/// whenever the current space or a space's domain changes (a switch,
/// [`Fass::note_switched`], a domain taken back or released, a space
/// destroyed). FASS never changes a space's PID after creation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(C)]
pub(crate) struct Hot {
    /// The current space's index, if it holds a domain; [`Hot::NONE`]
    /// otherwise (the fast path declines).
    pub(crate) space: u32,
    /// Its domain's number (valid with `space`).
    pub(crate) domain: u8,
    /// Its FCSE PID in FCSEIDR position (`pid << 25`): OR-ed into a fault
    /// address below 32 MiB, that address's MVA.
    pub(crate) pid_bits: u32,
    /// The low bits of its CPD entries for coarse tables: its domain in
    /// [8:5], the encoding's bit 4, the coarse type `0b01`.
    pub(crate) tag: u32,
}

/// The directory entry a space's fast faults ([`Fass::resolve_fast`])
/// last used: its directory's word for first-level slot `slot` (a
/// coarse-table entry), so that a fault of that space in that slot again
/// (the common case: two spaces colliding on one slot) needs no look-up of
/// the space table or the directory. Kept per space (indexed by the
/// space, next to [`Hot`]), a copy of the directory's word, kept right by
/// dropping it ([`HotDir::NONE`]) wherever that directory changes: every
/// mapping and unmapping (`map_one`/`unmap_one`, through which every
/// directory change goes), and the space's creation and destruction.
/// Checked against the directory in debug builds on every use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(C)]
pub(crate) struct HotDir {
    /// The first-level slot; `u32::MAX` (no slot) when empty.
    pub(crate) slot: u32,
    /// The space directory's word for it (coarse: `word & 3 == 0b01`).
    pub(crate) word: u32,
}

impl HotDir {
    /// No entry cached.
    pub(crate) const NONE: HotDir = HotDir {
        slot: u32::MAX,
        word: 0,
    };

    /// Drops space `id`'s entry (its directory changes, or the space).
    pub(crate) fn drop_for(dirs: &mut [HotDir], id: SpaceId) {
        if let Some(h) = dirs.get_mut(usize::from(id.0)) {
            *h = HotDir::NONE;
        }
    }
}

impl Hot {
    /// No current space holding a domain.
    pub(crate) const NONE: Hot = Hot {
        space: u32::MAX,
        domain: u8::MAX,
        pid_bits: 0,
        tag: 0,
    };
}

impl<P: VictimPolicy, const SPACES: usize, const SLOTS: usize, const SEGMENTS: usize>
    Fass<P, SPACES, SLOTS, SEGMENTS>
{
    /// FASS over the CPD `cpd` (the kernel's table, loaded in the
    /// translation table base for good, with the kernel's mappings in the
    /// kernel's domain), in the layout its [`KernelTable`] was checked
    /// against, with the kernel's domain and `reserved` never handed out.
    /// PIDs are shared when they run out (collisions are caught by
    /// domains). Domains are recycled under the default [`RecycleRule`]
    /// ([`RecycleRule::ExclusiveWindows`]); see [`Fass::with_recycle_rule`].
    ///
    /// [`KernelTable`]: crate::KernelTable
    pub fn new(cpd: Cpd, reserved: DomainSet, policy: P) -> Result<Self, FassError> {
        let layout = *cpd.kernel().layout();
        let kernel = cpd.kernel().domain();
        let tag_base = match cpd.encoding() {
            mmu_armv5::descriptor::L1Encoding::Arm9 => 1 << 4 | 0b01,
            mmu_armv5::descriptor::L1Encoding::XScale => 0b01,
        };
        Ok(Fass {
            hot: Hot::NONE,
            hot_dirs: [HotDir::NONE; SPACES],
            tag_base,
            lean: [None; SPACES],
            layout,
            kernel,
            pids: PidAllocator::new(&layout, PidMode::BestEffort),
            domains: DomainTable::new(kernel, reserved)?,
            policy,
            cpd,
            stats: Tally::ZERO,
            spaces: core::array::from_fn(|_| None),
            segments: Segments::new(),
            current: None,
            rule: RecycleRule::default(),
            excl: DomainSet::EMPTY,
            excl_stale: false,
            windows: WindowLines::new(),
            generation: 0,
            eager_relink: true,
            #[cfg(feature = "cache-check")]
            skip_recycle_clean: false,
        })
    }

    /// Recomputes [`Hot`] from the current space and its domain.
    pub(crate) fn refresh_hot(&mut self) {
        self.hot = self.computed_hot();
    }

    /// [`Hot`] as the current space and its domain make it.
    pub(crate) fn computed_hot(&self) -> Hot {
        self.current
            .and_then(|c| {
                let st = self.spaces.get(usize::from(c.0))?.as_ref()?;
                let d = st.domain?;
                Some(Hot {
                    space: u32::from(c.0),
                    domain: d.get(),
                    pid_bits: u32::from(st.pid.pid().get()) << 25,
                    tag: (u32::from(d.get()) << 5) | self.tag_base,
                })
            })
            .unwrap_or(Hot::NONE)
    }

    /// Whether `id` is the current space and holds a domain: then
    /// [`Fass::resolve_fast`] may resolve its faults (a cheap test for a
    /// kernel that may have to [`note_switched`](Fass::note_switched) first).
    #[must_use]
    #[inline]
    pub fn runs(&self, id: SpaceId) -> bool {
        self.hot.space == u32::from(id.0)
    }

    /// This manager with recycling rule `rule` (for a fresh manager, e.g.
    /// `Fass::new(..)?.with_recycle_rule(RecycleRule::Conservative)`).
    #[must_use]
    pub fn with_recycle_rule(mut self, rule: RecycleRule) -> Self {
        self.rule = rule;
        self
    }

    /// Sets the recycling rule for later evictions. Safe at any time: lines
    /// already left in windows stay recorded and guarded under either rule.
    pub fn set_recycle_rule(&mut self, rule: RecycleRule) {
        self.rule = rule;
    }

    /// Whether a switch to a space that holds no domain, when no domain is
    /// free (so one is recycled from another space), re-links the entries
    /// of its directory into the CPD with the domain it is given, instead
    /// of leaving each slot to a fault on first touch (the default: on; a
    /// space given a free domain fills lazily either way). Off, every
    /// slot is filled lazily, one translation or domain fault each, as the
    /// fault paths' own tests want. Safe at any time: it changes when a
    /// slot is filled, never what is written or which maintenance it needs.
    pub fn set_eager_relink(&mut self, on: bool) {
        self.eager_relink = on;
    }

    /// Whether switches re-link eagerly ([`Fass::set_eager_relink`]).
    #[must_use]
    pub fn eager_relink(&self) -> bool {
        self.eager_relink
    }

    /// Feature `cache-check` only, for the cache check's own tests: from
    /// now on, every full flush for a recycled dirty domain leaves out its
    /// D-cache clean and invalidate (see [`crate::omit`]). Never in a
    /// shipped kernel: that flush is what keeps the recycled domain's
    /// lines from the next owner.
    #[cfg(feature = "cache-check")]
    pub fn skip_recycle_cleans(&mut self) {
        self.skip_recycle_clean = true;
    }

    /// The recycling rule in force.
    #[must_use]
    pub fn recycle_rule(&self) -> RecycleRule {
        self.rule
    }

    /// Per FCSE window, the lines recycled domains left in the caches.
    #[must_use]
    pub fn window_lines(&self) -> &WindowLines {
        &self.windows
    }

    /// Whether space `id` is window-exclusive now: it runs at its own PID
    /// (not moved to PID 0), no other space holds that PID, and every
    /// first-level slot of its directory lies inside that PID's 32 MiB
    /// window. Under [`RecycleRule::ExclusiveWindows`] its domain is
    /// recycled without a cache flush.
    pub fn is_window_exclusive(&self, id: SpaceId) -> Result<bool, FassError> {
        Ok(self.exclusive(self.space(id)?))
    }

    pub(crate) fn exclusive(&self, st: &SpaceState<SLOTS>) -> bool {
        let pid = st.pid.pid();
        if st.pid.is_large() || self.pids.users(pid) != 1 {
            return false;
        }
        st.dir.single_window(usize::from(pid.get()))
    }

    /// The generation of the precomputed switches ([`crate::lean`]): it
    /// changes whenever the DACR and FCSEIDR values a
    /// [`switch_to`](crate::SwitchStrategy::switch_to) wrote for a space may
    /// stop being what a switch to it would write, or a domain one of them
    /// opens stops being marked dirty: a domain taken back or released, a
    /// segment mapped or unmapped, a full flush that cleans an owned domain.
    /// Nothing else changes it. 64 bits: it never comes back to an earlier value
    /// (2^64 such events).
    ///
    /// While it is unchanged, a kernel may also switch back to a space by
    /// writing those two values itself and then tell
    /// [`Fass::note_switched`]; [`SwitchStrategy::switch_lean`] does the
    /// same, checked.
    ///
    /// [`SwitchStrategy::switch_lean`]: crate::SwitchStrategy::switch_lean
    #[must_use]
    pub fn generation(&self) -> u64 {
        self.generation
    }

    fn bump_generation(&mut self) {
        self.generation = self.generation.wrapping_add(1);
    }

    /// Records `id` as the running space without touching the hardware,
    /// for a kernel that switched to `id` itself by writing the DACR and
    /// FCSEIDR values [`switch_to`](crate::SwitchStrategy::switch_to) last
    /// wrote for it, with [`Fass::generation`] unchanged since. That is all
    /// `switch_to` would have done (the domains it marks dirty still are:
    /// only the events that change the generation clean them); the switch
    /// is counted and the policy told.
    ///
    /// Errors: unknown space, or a space without a domain (it was never
    /// switched to, or lost its domain, which changed the generation).
    ///
    /// # Safety
    /// The CPU runs `id` now: its DACR and FCSEIDR hold the values a
    /// `switch_to(id)` wrote in the current generation. The manager's
    /// bookkeeping (which domains may have lines in the caches, which space
    /// the fault path resolves for) follows this claim; a false one lets a
    /// later recycle skip a flush another space's lines needed.
    pub unsafe fn note_switched(&mut self, id: SpaceId) -> Result<(), FassError> {
        let Some(d) = self.space(id)?.domain else {
            return Err(FassError::UnknownSpace(id));
        };
        if self.current != Some(id) {
            self.stats.record(Event::Switch);
            self.policy.touch(d);
            self.current = Some(id);
        }
        self.refresh_hot();
        Ok(())
    }

    /// The counters so far, the fast fault path's resolutions
    /// ([`Fass::fast_faults`]) folded in.
    #[must_use]
    pub fn stats(&self) -> Stats {
        self.stats.stats()
    }

    /// What [`Fass::resolve_fast`] resolved so far, by fault status and
    /// outcome (already part of [`Fass::stats`]).
    #[must_use]
    pub fn fast_faults(&self) -> FastFaults {
        self.stats.fast
    }

    /// The domain table (read-only).
    #[must_use]
    pub fn domains(&self) -> &DomainTable {
        &self.domains
    }

    /// The segment table (read-only).
    #[must_use]
    pub fn segments(&self) -> &Segments<SEGMENTS> {
        &self.segments
    }

    /// The caching page directory.
    #[must_use]
    pub fn cpd(&self) -> &Cpd {
        &self.cpd
    }

    /// The layout.
    #[must_use]
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// The running space.
    #[must_use]
    pub fn current(&self) -> Option<SpaceId> {
        self.current
    }

    /// The FCSE PID of `id`.
    pub fn pid_of(&self, id: SpaceId) -> Result<mmu_armv5::FcsePid, FassError> {
        Ok(self.space(id)?.pid.pid())
    }

    /// The modified virtual address `va` of space `id` is known by.
    pub fn mva_of(&self, id: SpaceId, va: VirtAddr) -> Result<ModifiedVirtAddr, FassError> {
        Ok(va.to_mva(self.space(id)?.pid.pid()))
    }

    /// The domain `id` holds now, if any.
    pub fn domain_of(&self, id: SpaceId) -> Result<Option<Domain>, FassError> {
        Ok(self.space(id)?.domain)
    }

    /// The segments `id` maps.
    pub fn segments_of(&self, id: SpaceId) -> Result<SegmentSet, FassError> {
        Ok(self.space(id)?.segs)
    }

    /// The DACR value space `id` runs with if it holds `domain`: the
    /// kernel's domain and `domain` as client, each segment it maps as
    /// client or manager.
    pub fn dacr_of(&self, id: SpaceId, domain: Domain) -> Result<Dacr, FassError> {
        Ok(self
            .user_dacr(self.space(id)?, domain)
            .with(self.kernel, DomainAccess::Client))
    }

    /// The DACR bits of a space's own and segment domains (without the kernel's).
    pub(crate) fn user_dacr(&self, st: &SpaceState<SLOTS>, domain: Domain) -> Dacr {
        let mut v = Dacr::only(domain, DomainAccess::Client);
        for s in st.segs.iter() {
            if let Some(d) = self.segments.get(s).ok().and_then(|g| g.domain()) {
                let a = if st.seg_managed.contains(s) {
                    DomainAccess::Manager
                } else {
                    DomainAccess::Client
                };
                v = v.with(d, a);
            }
        }
        v
    }

    pub(crate) fn space(&self, id: SpaceId) -> Result<&SpaceState<SLOTS>, FassError> {
        self.spaces
            .get(usize::from(id.0))
            .and_then(Option::as_ref)
            .ok_or(FassError::UnknownSpace(id))
    }

    pub(crate) fn space_mut(&mut self, id: SpaceId) -> Result<&mut SpaceState<SLOTS>, FassError> {
        self.spaces
            .get_mut(usize::from(id.0))
            .and_then(Option::as_mut)
            .ok_or(FassError::UnknownSpace(id))
    }

    /// Creates an empty address space `id` with an FCSE PID (shared if none is free).
    ///
    /// [`SwitchStrategy::create_space`](crate::SwitchStrategy::create_space)
    /// without the platform, which FASS does not need to create a space.
    /// (Named apart so that the trait form, `fass.create_space(&mut sys,
    /// id)`, works on a `Fass` too: an inherent method of the same name
    /// would hide it.)
    pub fn add_space(&mut self, id: SpaceId) -> Result<(), FassError> {
        let entry = self
            .spaces
            .get_mut(usize::from(id.0))
            .ok_or(FassError::SpaceIdOutOfRange(id))?;
        if entry.is_some() {
            return Err(FassError::SpaceExists(id));
        }
        self.excl_stale = true;
        let a = self.pids.allocate(id)?;
        if a.shared {
            self.stats.record(Event::PidShared);
        }
        // Best-effort allocation never asks for a flush; FASS relies on domains anyway.
        let _ = a.flush;
        lean::set(&mut self.lean, id, None);
        HotDir::drop_for(&mut self.hot_dirs, id);
        *entry = Some(SpaceState {
            pid: a.context,
            dir: SpaceDir::new(),
            fast_hint: 0,
            domain: None,
            segs: SegmentSet::EMPTY,
            seg_managed: SegmentSet::EMPTY,
        });
        Ok(())
    }

    /// After a full flush: every domain clean but those the running space
    /// uses, no window holding left lines. If that cleaned an owned domain,
    /// the generation changes (a record of another space would skip marking
    /// it dirty again); the running space's record, whose domains stay
    /// dirty, is carried over to the new generation.
    pub(crate) fn full_flush<S: CacheMaintenance + ?Sized>(&mut self, sys: &mut S) {
        let ticket = self.windows.flush_ticket();
        sys.flush_all();
        // Nothing can be left in between here (the flush is not
        // preemptible), but the ticket keeps the rule of `crate::pid`.
        let _ = self.windows.flush_done(ticket);
        let before = self.domains.dirty_mask();
        self.domains.mark_all_clean();
        self.stats.record(Event::FullFlush);
        if let Some(st) = self.current.and_then(|c| self.space(c).ok()) {
            if let Some(d) = st.domain {
                let v = self.user_dacr(st, d);
                self.domains.mark_dirty(v);
            }
        }
        // Only an owned domain can be in a record's DACR.
        let owned = self.domains.owned().to_dacr(DomainAccess::Manager).bits();
        if before.bits() & !self.domains.dirty_mask().bits() & owned != 0 {
            let old = self.generation;
            self.bump_generation();
            lean::carry(&mut self.lean, self.current, old, self.generation);
        }
    }

    /// The record a full switch to `id` makes now, if a switch to it can be
    /// done from one: `id` holds a domain and every domain its DACR opens is
    /// marked dirty (which a lean switch does not do again).
    pub(crate) fn fresh_lean(&self, id: SpaceId) -> Option<LeanSwitch> {
        let st = self.space(id).ok()?;
        let d = st.domain?;
        let user = self.user_dacr(st, d);
        if self.domains.dirty_mask().bits() & user.bits() != user.bits() {
            return None;
        }
        Some(LeanSwitch::fass(
            self.generation,
            user.with(self.kernel, DomainAccess::Client),
            st.pid.pid(),
            d,
        ))
    }

    /// Records `id`'s precomputed switch: `dacr` and the FCSEIDR of `pid`,
    /// `id` holding `d`, in the current generation. Called by a full switch
    /// to it, which just wrote those values and marked `dacr`'s domains dirty.
    pub(crate) fn record_lean(&mut self, id: SpaceId, dacr: Dacr, pid: FcsePid, d: Domain) {
        lean::set(
            &mut self.lean,
            id,
            Some(LeanSwitch::fass(self.generation, dacr, pid, d)),
        );
    }

    /// Acts on an eviction or release whose CPD slots were already cleared.
    /// `excl`: whether the evicted owner was a window-exclusive space (its
    /// domain's bit in the kept set `excl`, up to date at a recycle).
    fn after_eviction<S: CacheMaintenance + ?Sized>(
        &mut self,
        sys: &mut S,
        e: &Eviction,
        recycled: bool,
        excl: bool,
    ) {
        self.bump_generation();
        let leaves_lines =
            recycled && e.was_dirty && excl && self.rule == RecycleRule::ExclusiveWindows;
        let mut left_in_window = None;
        match e.owner {
            Owner::Space(s) => {
                if let Ok(st) = self.space_mut(s) {
                    st.domain = None;
                    if leaves_lines {
                        left_in_window = Some((s, st.pid.pid()));
                    }
                }
                // Only the current space's domain is in the hot record (a
                // recycle never takes it: it is protected).
                if u32::from(self.hot.domain) == u32::from(e.domain.get()) {
                    self.refresh_hot();
                }
                debug_assert_eq!(self.hot, self.computed_hot(), "stale hot record");
            }
            Owner::Segment(g) => {
                let _ = self.segments.set_domain(g, None);
            }
        }
        if let Some((s, pid)) = left_in_window {
            // Its lines stay, at MVAs of its own window only: record them
            // there; the domain starts clean for its new owner.
            self.windows.note_left(pid, s);
            self.domains.mark_clean(e.domain);
            self.stats.record(Event::DomainRecycledExclusive);
            if e.slots > 0 {
                sys.invalidate_tlb();
                self.stats.record(Event::TlbOnlyInvalidation);
            }
            return;
        }
        if recycled {
            self.stats.record(if e.was_dirty {
                Event::DomainRecycledDirty
            } else {
                Event::DomainRecycledClean
            });
        }
        if e.was_dirty {
            #[cfg(feature = "cache-check")]
            if recycled && self.skip_recycle_clean {
                self.full_flush(&mut crate::omit::SkipClean(sys));
                return;
            }
            self.full_flush(sys);
        } else if e.slots > 0 {
            sys.invalidate_tlb();
            self.stats.record(Event::TlbOnlyInvalidation);
        }
    }

    /// Domains that must not be recycled now: the current space's own and
    /// every segment's.
    /// O(1): the segments' domains are the ones the table records as
    /// segment-owned, the current space's is in the hot record.
    fn protected(&self) -> DomainSet {
        let segs = self.domains.segment_owned();
        let p = match Domain::new(self.hot.domain) {
            Ok(d) if self.hot.space != Hot::NONE.space => segs.with(d),
            _ => segs,
        };
        debug_assert_eq!(p, self.computed_protected(), "protected set");
        p
    }

    /// [`Fass::protected`] computed from the current space's record and
    /// every segment (what debug builds check the kept values against).
    fn computed_protected(&self) -> DomainSet {
        let mut p = DomainSet::EMPTY;
        if let Some(d) = self.current.and_then(|c| self.space(c).ok()?.domain) {
            p = p.with(d);
        }
        for d in self.segments.domains() {
            p = p.with(d);
        }
        p
    }

    /// The owned domains whose owner is window-exclusive, computed from
    /// every owned domain's space (O(owned domains)): what `excl` holds.
    fn computed_excl(&self) -> DomainSet {
        let mut set = DomainSet::EMPTY;
        for d in self.domains.owned().iter() {
            if let crate::domain::DomainOwner::Owned(Owner::Space(s)) = self.domains.owner(d) {
                if self.space(s).is_ok_and(|st| self.exclusive(st)) {
                    set = set.with(d);
                }
            }
        }
        set
    }

    /// The owned domains the recycling rule would take back without a flush
    /// even if dirty: under [`RecycleRule::ExclusiveWindows`], those of
    /// window-exclusive spaces. O(1) unless an event since the last call
    /// may have changed a space's exclusivity (then `excl` is recomputed).
    fn flush_free_domains(&mut self) -> DomainSet {
        if self.excl_stale {
            self.excl = self.computed_excl();
            self.excl_stale = false;
        }
        debug_assert_eq!(
            self.excl,
            self.computed_excl(),
            "stale exclusive-domain set"
        );
        if self.rule != RecycleRule::ExclusiveWindows {
            return DomainSet::EMPTY;
        }
        self.excl.intersection(self.domains.owned())
    }

    /// Takes a domain for `owner`, recycling one if none is free. A space
    /// owner is recorded as holding it (its `domain`) here, even if
    /// clearing the victim's CPD slots failed (then with the error), so that
    /// a space's record and the domain table never disagree: a space whose
    /// record holds no domain owns none in the table, which saves the
    /// table's search for an owner (`unowned`, true only for such a space).
    pub(crate) fn acquire_domain<S: Platform + ?Sized>(
        &mut self,
        sys: &mut S,
        owner: Owner,
        unowned: bool,
    ) -> Result<Domain, FassError> {
        let protect = self.protected();
        let flush_free = self.flush_free_domains();
        let mut cpd_error = None;
        let cpd = &mut self.cpd;
        let clear = |slot| {
            if let Err(e) = cpd.clear(&mut *sys, slot) {
                cpd_error = Some(e);
            }
        };
        let acquired = if unowned {
            self.domains
                .acquire_unowned(owner, protect, flush_free, &mut self.policy, clear)
        } else {
            self.domains
                .acquire_preferring(owner, protect, flush_free, &mut self.policy, clear)
        };
        let acquired = match acquired {
            Ok(a) => a,
            Err(e) => {
                // Nothing changed hands, but recomputing is cheap next to
                // an error and needs no argument about it.
                self.excl_stale = true;
                return Err(e.into());
            }
        };
        // The domain changed hands (from its old owner, if any): its bit in
        // `excl` now follows the new owner (read first: whether the old
        // owner was window-exclusive decides the eviction's flush).
        let was_excl = self.excl.contains(acquired.domain);
        let excl = match owner {
            Owner::Space(s) => match self.space_mut(s) {
                Ok(st) => {
                    st.domain = Some(acquired.domain);
                    self.space(s).is_ok_and(|st| self.exclusive(st))
                }
                Err(_) => false,
            },
            Owner::Segment(_) => false,
        };
        self.excl = if excl {
            self.excl.with(acquired.domain)
        } else {
            self.excl.without(acquired.domain)
        };
        if let Some(e) = cpd_error {
            return Err(FassError::Table(e));
        }
        match &acquired.evicted {
            Some(e) => self.after_eviction(sys, e, true, was_excl),
            None => self.stats.record(Event::DomainAllocated),
        }
        Ok(acquired.domain)
    }

    /// Gives back the domain of `owner` (if it holds one), clearing its CPD
    /// slots; flushes if it is dirty.
    fn release_domain<S: Platform + ?Sized>(
        &mut self,
        sys: &mut S,
        owner: Owner,
    ) -> Result<(), FassError> {
        let mut cpd_error = None;
        let cpd = &mut self.cpd;
        let ev = self.domains.release(owner, |slot| {
            if let Err(e) = cpd.clear(&mut *sys, slot) {
                cpd_error = Some(e);
            }
        });
        if let Some(e) = &ev {
            self.excl = self.excl.without(e.domain);
        }
        if let Some(e) = cpd_error {
            return Err(FassError::Table(e));
        }
        if let Some(e) = ev {
            self.after_eviction(sys, &e, false, false);
        }
        Ok(())
    }

    fn check_private(&self, va: VirtAddr, mva: ModifiedVirtAddr) -> Result<(), FassError> {
        match self.layout.classify(mva) {
            RegionKind::Kernel | RegionKind::Shared => Err(FassError::NotPrivate(va)),
            _ => Ok(()),
        }
    }

    /// Writes a changed directory slot through to the CPD if the space owns it there.
    fn write_through<S: Platform + ?Sized>(
        &mut self,
        sys: &mut S,
        id: SpaceId,
        slot: usize,
    ) -> Result<(), FassError> {
        let st = self.space(id)?;
        let Some(d) = st.domain else { return Ok(()) };
        if self.domains.slot_owner(slot) != Some(d) {
            return Ok(());
        }
        let desc = st.dir.entry(slot);
        if desc.is_valid() {
            self.cpd.write(sys, slot, desc.with_domain(d))?;
        } else {
            self.cpd.clear(&mut *sys, slot)?;
            self.domains.release_slot(d, slot);
        }
        sys.invalidate_tlb();
        self.stats.record(Event::TlbOnlyInvalidation);
        Ok(())
    }

    /// Maps the 4 KiB page `page` of space `id` (inside or above its 32 MiB
    /// window, never in the kernel or shared region) to `frame`.
    pub fn map_page<S: Platform + ?Sized>(
        &mut self,
        sys: &mut S,
        id: SpaceId,
        page: Page<Size4KiB, VirtAddr>,
        frame: Frame<Size4KiB>,
        ap: AccessPermission,
        cache: CachePolicy,
    ) -> Result<(), FassError> {
        self.map_pages(sys, id, PageRange::from(page), frame, ap, cache)
    }

    /// Maps `pages` of space `id` to as many frames from `frame`, with 4 KiB
    /// pages. The range was checked when it was built (aligned, non-empty,
    /// not past 4 GiB); the frames are given by their first only, so the two
    /// lengths cannot disagree, and only their end is checked here
    /// ([`AddrError::RangeWraps`](mmu_armv5::AddrError::RangeWraps) in
    /// [`FassError::Addr`]). Every page is checked first (private region,
    /// not mapped); if table memory runs out part-way, the pages already
    /// mapped are unmapped again, so on error nothing has changed.
    pub fn map_pages<S: Platform + ?Sized>(
        &mut self,
        sys: &mut S,
        id: SpaceId,
        pages: PageRange<Size4KiB, VirtAddr>,
        frame: Frame<Size4KiB>,
        ap: AccessPermission,
        cache: CachePolicy,
    ) -> Result<(), FassError> {
        let frames = frames_for(pages, frame)?;
        let pid = self.space(id)?.pid.pid();
        for page in pages {
            let v = page.start();
            let mva = v.to_mva(pid);
            self.check_private(v, mva)?;
            if self.space(id)?.dir.lookup(&*sys, mva)?.is_some() {
                return Err(FassError::Space(SpaceError::AlreadyMapped(mva)));
            }
        }
        for (done, (page, frame)) in pages.iter().zip(frames).enumerate() {
            let mva = page.start().to_mva(pid);
            if let Err(e) = self.map_one(sys, id, mva, frame.start(), ap, cache) {
                for back in pages.iter().take(done) {
                    let _ = self.unmap_one(sys, id, back.start().to_mva(pid));
                }
                return Err(e);
            }
        }
        Ok(())
    }

    fn map_one<S: Platform + ?Sized>(
        &mut self,
        sys: &mut S,
        id: SpaceId,
        mva: ModifiedVirtAddr,
        pa: PhysAddr,
        ap: AccessPermission,
        cache: CachePolicy,
    ) -> Result<(), FassError> {
        self.excl_stale = true;
        // The directory changes: the fast path's copy of one of its words
        // goes (dropped first, whatever the outcome).
        HotDir::drop_for(&mut self.hot_dirs, id);
        let change = self.space_mut(id)?.dir.map(sys, mva, pa, ap, cache)?;
        change.flush.flush_on(sys);
        if let Some(slot) = change.l1_changed {
            self.write_through(sys, id, slot)?;
        }
        Ok(())
    }

    fn unmap_one<S: Platform + ?Sized>(
        &mut self,
        sys: &mut S,
        id: SpaceId,
        mva: ModifiedVirtAddr,
    ) -> Result<(), FassError> {
        purge_page(sys, mva);
        self.excl_stale = true;
        HotDir::drop_for(&mut self.hot_dirs, id);
        let change = self.space_mut(id)?.dir.unmap(sys, mva)?;
        // The CPD copy of an emptied slot goes first: the token frees the
        // emptied table, which the CPD entry may still name.
        let written = match change.l1_changed {
            Some(slot) => self.write_through(sys, id, slot),
            None => Ok(()),
        };
        match written {
            Ok(()) => change.flush.flush_on(sys),
            Err(e) => {
                // The CPD may still name the emptied table: keep it (the
                // token is dropped, leaking it) and do the page's
                // maintenance without the free.
                let _ = change.flush;
                sys.clean_invalidate_dcache();
                sys.invalidate_tlb();
                return Err(e);
            }
        }
        Ok(())
    }

    /// Unmaps the 4 KiB page `page` of space `id`.
    pub fn unmap_page<S: Platform + ?Sized>(
        &mut self,
        sys: &mut S,
        id: SpaceId,
        page: Page<Size4KiB, VirtAddr>,
    ) -> Result<(), FassError> {
        self.unmap_pages(sys, id, PageRange::from(page))
    }

    /// Unmaps `pages` of space `id`: every page must be mapped (checked
    /// first; on error nothing changes). Each page's cache lines are
    /// cleaned and invalidated by MVA before it goes.
    pub fn unmap_pages<S: Platform + ?Sized>(
        &mut self,
        sys: &mut S,
        id: SpaceId,
        pages: PageRange<Size4KiB, VirtAddr>,
    ) -> Result<(), FassError> {
        let pid = self.space(id)?.pid.pid();
        for page in pages {
            let mva = page.start().to_mva(pid);
            if self.space(id)?.dir.lookup(&*sys, mva)?.is_none() {
                return Err(FassError::Space(SpaceError::NotMapped(mva)));
            }
        }
        for page in pages {
            self.unmap_one(sys, id, page.start().to_mva(pid))?;
        }
        Ok(())
    }

    /// Defines shared segment `id` (mapped nowhere yet).
    pub fn create_segment(&mut self, id: SegmentId, spec: SegmentSpec) -> Result<(), FassError> {
        Ok(self.segments.create(&self.layout, id, spec)?)
    }

    /// Removes the definition of segment `id`, which must be mapped nowhere.
    pub fn destroy_segment(&mut self, id: SegmentId) -> Result<(), FassError> {
        self.segments.destroy(id)?;
        Ok(())
    }

    /// Maps segment `seg` into space `space` at `at`, which must be the
    /// segment's own address. The first sharer gets the segment a domain
    /// (recycling a space's if none is free). If `space` is running, its
    /// DACR is reloaded at once.
    pub fn map_segment<S: Platform + ?Sized>(
        &mut self,
        sys: &mut S,
        space: SpaceId,
        seg: SegmentId,
        at: VirtAddr,
        access: SegmentAccess,
    ) -> Result<(), FassError> {
        let mapped = self.space(space)?.segs;
        self.segments.check_map(space, mapped, seg, at)?;
        if self.segments.add_sharer(seg)? {
            match self.acquire_domain(sys, Owner::Segment(seg), false) {
                Ok(d) => self.segments.set_domain(seg, Some(d))?,
                Err(e) => {
                    let _ = self.segments.remove_sharer(seg);
                    return Err(e);
                }
            }
        }
        self.bump_generation();
        let st = self.space_mut(space)?;
        st.segs = st.segs.with(seg);
        if access == SegmentAccess::Manager {
            st.seg_managed = st.seg_managed.with(seg);
        }
        self.reload_dacr_if_current(sys, space)
    }

    /// Unmaps segment `seg` from space `space`. The last sharer gives the
    /// segment's domain back: its CPD slots are cleared and, if it is
    /// dirty, the caches flushed (its lines must not outlive the mapping).
    pub fn unmap_segment<S: Platform + ?Sized>(
        &mut self,
        sys: &mut S,
        space: SpaceId,
        seg: SegmentId,
    ) -> Result<(), FassError> {
        let st = self.space(space)?;
        if !st.segs.contains(seg) {
            return Err(FassError::Segment(
                crate::segment::SegmentError::NotMapped {
                    space,
                    segment: seg,
                },
            ));
        }
        self.bump_generation();
        let st = self.space_mut(space)?;
        st.segs = st.segs.without(seg);
        st.seg_managed = st.seg_managed.without(seg);
        // No TLB maintenance: the segment's entries carry its domain, which
        // the new DACR no longer enables.
        self.reload_dacr_if_current(sys, space)?;
        if self.segments.remove_sharer(seg)? {
            self.release_domain(sys, Owner::Segment(seg))?;
            self.segments.set_domain(seg, None)?;
        }
        Ok(())
    }

    fn reload_dacr_if_current<S: Platform + ?Sized>(
        &mut self,
        sys: &mut S,
        space: SpaceId,
    ) -> Result<(), FassError> {
        if self.current != Some(space) {
            return Ok(());
        }
        let st = self.space(space)?;
        let Some(d) = st.domain else { return Ok(()) };
        let user = self.user_dacr(st, d);
        self.domains.mark_dirty(user);
        // SAFETY: the kernel's domain stays client; only domains `space`
        // owns or shares are opened, as on a switch to it.
        unsafe { sys.set_dacr(user.with(self.kernel, DomainAccess::Client)) };
        Ok(())
    }

    /// Destroys space `id`: unmaps its segments, takes back its domain
    /// (flushing if it is dirty, since its lines would otherwise outlive
    /// it), flushes if lines it left when its domain was recycled may still
    /// be cached (its frames and PID are about to be reused), frees its
    /// tables and PID.
    pub fn destroy_space<S: Platform + ?Sized>(
        &mut self,
        sys: &mut S,
        id: SpaceId,
    ) -> Result<(), FassError> {
        let segs = self.space(id)?.segs;
        self.excl_stale = true;
        for s in segs.iter() {
            self.unmap_segment(sys, id, s)?;
        }
        self.release_domain(sys, Owner::Space(id))?;
        let pid = self.space(id)?.pid.pid();
        if self.windows.may_hold_lines_of(pid, id) {
            #[cfg(feature = "cache-check")]
            if self.skip_recycle_clean {
                self.full_flush(&mut crate::omit::SkipClean(sys));
            } else {
                self.full_flush(sys);
            }
            #[cfg(not(feature = "cache-check"))]
            self.full_flush(sys);
        }
        if self.current == Some(id) {
            self.current = None;
            self.refresh_hot();
        }
        let Some(mut st) = self
            .spaces
            .get_mut(usize::from(id.0))
            .and_then(Option::take)
        else {
            return Err(FassError::UnknownSpace(id));
        };
        lean::set(&mut self.lean, id, None);
        HotDir::drop_for(&mut self.hot_dirs, id);
        // SAFETY: the CPD slots pointing at this space's tables were cleared
        // above (every CPD copy of its entries is in its domain's slot set).
        unsafe { st.dir.release(sys) };
        self.pids.release(st.pid)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::segment::SegmentAccess;
    use crate::switch::tests::{frame, page, pages, setup};
    use crate::{domain::DomainSet, layout::Layout};
    use mmu_armv5::descriptor::{AccessPermission, CachePolicy};
    use mmu_armv5::maint::Arm926;
    use mmu_armv5::regs::{Cp15Event, Cp15Op, MockCp15};
    use mmu_armv5::AddrError;

    fn va(a: u32) -> VirtAddr {
        VirtAddr::new(a)
    }

    /// A manager with one space, 0.
    fn one_space(
        mem: &mut crate::space::tests::Mem,
    ) -> (crate::switch::tests::F, crate::switch::tests::Sys<'_>) {
        let (mut f, sys) = setup(mem, Layout::DEMO, DomainSet::EMPTY);
        f.add_space(SpaceId(0)).unwrap();
        (f, sys)
    }

    #[test]
    fn frames_are_checked_to_the_last_one_and_single_pages_are_ranges_of_one() {
        use crate::switch::tests::{Sys, F};
        let mut mem = crate::space::tests::mem();
        let (mut f, mut sys) = one_space(&mut mem);
        let id = SpaceId(0);
        let (ap, cache) = (AccessPermission::ReadWrite, CachePolicy::WriteBack);
        let pid = f.pid_of(id).unwrap();
        let mva = |a| va(a).to_mva(pid);
        let lookup =
            |f: &F, sys: &Sys<'_>, a| f.space(id).unwrap().dir.lookup(sys, mva(a)).unwrap();
        // Two frames from the last one of physical memory reach past 4 GiB:
        // refused, nothing mapped.
        assert_eq!(
            f.map_pages(
                &mut sys,
                id,
                pages(0x1000, 0x2000),
                frame(0xFFFF_F000),
                ap,
                cache
            ),
            Err(FassError::Addr(AddrError::RangeWraps {
                start: 0xFFFF_F000,
                count: 2
            }))
        );
        assert_eq!(lookup(&f, &sys, 0x1000), None);
        // The last frame alone is fine.
        f.map_pages(
            &mut sys,
            id,
            pages(0x1000, 0x1000),
            frame(0xFFFF_F000),
            ap,
            cache,
        )
        .unwrap();
        assert_eq!(lookup(&f, &sys, 0x1000), Some(PhysAddr::new(0xFFFF_F000)));
        // One page maps and unmaps exactly that page.
        f.map_page(&mut sys, id, page(0x2000), frame(0x0030_0000), ap, cache)
            .unwrap();
        assert_eq!(lookup(&f, &sys, 0x2000), Some(PhysAddr::new(0x0030_0000)));
        assert_eq!(lookup(&f, &sys, 0x3000), None);
        f.unmap_page(&mut sys, id, page(0x2000)).unwrap();
        assert_eq!(lookup(&f, &sys, 0x2000), None);
        assert_eq!(lookup(&f, &sys, 0x1000), Some(PhysAddr::new(0xFFFF_F000)));
        assert_eq!(
            f.unmap_page(&mut sys, id, page(0x2000)),
            Err(FassError::Space(SpaceError::NotMapped(mva(0x2000))))
        );
        // A range with an unmapped page is refused before anything goes.
        assert_eq!(
            f.unmap_pages(&mut sys, id, pages(0x1000, 0x2000)),
            Err(FassError::Space(SpaceError::NotMapped(mva(0x2000))))
        );
        assert_eq!(lookup(&f, &sys, 0x1000), Some(PhysAddr::new(0xFFFF_F000)));
    }

    #[test]
    fn purging_a_page_cleans_each_of_its_lines_once_then_drains() {
        let mut sys = Arm926::new(MockCp15::arm926());
        // Any address in the page: the whole page.
        purge_page(&mut sys, ModifiedVirtAddr::new(0x0210_3abc));
        let ev = sys.cp15().events();
        let lines = (PAGE_SIZE / 32) as usize;
        assert_eq!(ev.len(), 2 * lines + 1);
        for (i, pair) in ev[..2 * lines].chunks(2).enumerate() {
            let a = 0x0210_3000 + 32 * i as u32;
            assert_eq!(
                pair,
                [
                    Cp15Event::Op(Cp15Op::CleanInvalidateDCacheLine, a),
                    Cp15Event::Op(Cp15Op::InvalidateICacheLine, a),
                ]
            );
        }
        assert_eq!(ev[2 * lines], Cp15Event::Op(Cp15Op::DrainWriteBuffer, 0));
    }

    #[test]
    fn page_ranges_map_and_unmap_every_page_and_refuse_a_taken_one() {
        use crate::switch::tests::Sys;
        let mut mem = crate::space::tests::mem();
        let (mut f, mut sys) = one_space(&mut mem);
        let id = SpaceId(0);
        let (ap, cache) = (AccessPermission::ReadWrite, CachePolicy::WriteBack);
        let map_one = |f: &mut crate::switch::tests::F, sys: &mut Sys<'_>, va: u32| {
            f.map_pages(sys, id, pages(va, PAGE_SIZE), frame(0x0030_0000), ap, cache)
        };
        let base = 0x0010_0000;
        f.map_pages(
            &mut sys,
            id,
            pages(base, 3 * PAGE_SIZE),
            frame(0x0020_0000),
            ap,
            cache,
        )
        .unwrap();
        let pid = f.pid_of(id).unwrap();
        let taken = |va: u32| {
            Err::<(), _>(FassError::Space(SpaceError::AlreadyMapped(
                VirtAddr::new(va).to_mva(pid),
            )))
        };
        // Each of the three pages, and only they, are mapped.
        for k in 0..3 {
            assert_eq!(
                map_one(&mut f, &mut sys, base + k * PAGE_SIZE),
                taken(base + k * PAGE_SIZE)
            );
        }
        assert_eq!(map_one(&mut f, &mut sys, base + 3 * PAGE_SIZE), Ok(()));
        // Unmapping the range frees each page.
        f.unmap_pages(&mut sys, id, pages(base, 3 * PAGE_SIZE))
            .unwrap();
        for k in 0..3 {
            assert_eq!(map_one(&mut f, &mut sys, base + k * PAGE_SIZE), Ok(()));
        }
        f.unmap_pages(&mut sys, id, pages(base, 4 * PAGE_SIZE))
            .unwrap();
        // A range whose third page is taken is refused before anything is
        // mapped.
        map_one(&mut f, &mut sys, base + 2 * PAGE_SIZE).unwrap();
        assert_eq!(
            f.map_pages(
                &mut sys,
                id,
                pages(base, 3 * PAGE_SIZE),
                frame(0x0020_0000),
                ap,
                cache
            ),
            taken(base + 2 * PAGE_SIZE)
        );
        for k in 0..2 {
            assert_eq!(map_one(&mut f, &mut sys, base + k * PAGE_SIZE), Ok(()));
        }
    }

    #[test]
    fn a_range_maps_each_page_to_its_own_frame() {
        let mut mem = crate::space::tests::mem();
        let (mut f, mut sys) = one_space(&mut mem);
        let id = SpaceId(0);
        // From the second page of the space: a page address computed the
        // wrong way round would wrap below zero.
        let (base, pa) = (0x1000, 0x0020_0000);
        let (ap, cache) = (AccessPermission::ReadWrite, CachePolicy::WriteBack);
        f.map_pages(
            &mut sys,
            id,
            pages(base, 3 * PAGE_SIZE),
            frame(pa),
            ap,
            cache,
        )
        .unwrap();
        let pid = f.pid_of(id).unwrap();
        for k in 0..3 {
            let mva = VirtAddr::new(base + k * PAGE_SIZE).to_mva(pid);
            let got = f.space(id).unwrap().dir.lookup(&sys, mva).unwrap();
            assert_eq!(got, Some(PhysAddr::new(pa + k * PAGE_SIZE)), "page {k}");
        }
    }

    #[test]
    fn a_range_that_fails_half_way_is_unmapped_again() {
        let mut mem = crate::space::tests::mem();
        let (mut f, mut sys) = one_space(&mut mem);
        let id = SpaceId(0);
        let (ap, cache) = (AccessPermission::ReadWrite, CachePolicy::WriteBack);
        // 39 of the directory's 40 slots taken by single pages above the
        // window; then a 2 MiB range: its first MiB takes the last slot,
        // its second fails after 256 pages were mapped.
        let single = |k: u32| VirtAddr::new(0x0400_0000 + (k << 20));
        for k in 0..39 {
            f.map_pages(
                &mut sys,
                id,
                pages(single(k).as_u32(), PAGE_SIZE),
                frame(0x0100_0000),
                ap,
                cache,
            )
            .unwrap();
        }
        let (base, len) = (0x0010_0000, 2 << 20);
        let r = f.map_pages(
            &mut sys,
            id,
            pages(base, len),
            frame(0x0100_0000),
            ap,
            cache,
        );
        assert_eq!(r, Err(FassError::Space(SpaceError::DirectoryFull)));
        let pid = f.pid_of(id).unwrap();
        let dir = &f.space(id).unwrap().dir;
        assert_eq!(dir.len(), 39, "{dir:?}");
        for off in (0..len).step_by(PAGE_SIZE as usize) {
            let mva = VirtAddr::new(base + off).to_mva(pid);
            assert_eq!(dir.lookup(&sys, mva).unwrap(), None, "{off:#x}");
        }
        for k in 0..39 {
            let mva = single(k).to_mva(pid);
            assert!(dir.lookup(&sys, mva).unwrap().is_some(), "{k}");
        }
    }

    #[test]
    fn a_segment_mapped_for_management_opens_its_domain_as_manager() {
        use mmu_armv5::regs::DomainAccess;
        let mut mem = crate::space::tests::mem();
        let (mut f, mut sys) = setup(&mut mem, Layout::DEMO, DomainSet::EMPTY);
        let spec = crate::segment::SegmentSpec {
            base: VirtAddr::new(0x8000_0000),
            pa: PhysAddr::new(0x0010_0000),
            size: 1 << 20,
            ap: AccessPermission::ReadWrite,
            cache: CachePolicy::WriteBack,
        };
        for (s, g, access, want) in [
            (0, 0, SegmentAccess::Client, DomainAccess::Client),
            (1, 1, SegmentAccess::Manager, DomainAccess::Manager),
        ] {
            let (space, seg) = (SpaceId(s), SegmentId(g));
            f.add_space(space).unwrap();
            let base = VirtAddr::new(0x8000_0000 + (u32::from(g) << 20));
            f.create_segment(seg, crate::segment::SegmentSpec { base, ..spec })
                .unwrap();
            f.map_segment(&mut sys, space, seg, base, access).unwrap();
            assert!(f.segments_of(space).unwrap().contains(seg));
            let gd = f.segments().get(seg).unwrap().domain().unwrap();
            let dacr = f
                .dacr_of(space, mmu_armv5::Domain::new(15).unwrap())
                .unwrap();
            assert_eq!(dacr.get(gd), want, "{access:?}");
        }
    }

    #[test]
    fn the_recycling_rule_is_what_was_set_last() {
        let mut mem = crate::space::tests::mem();
        let (mut f, _sys) = setup(&mut mem, Layout::DEMO, DomainSet::EMPTY);
        for rule in [RecycleRule::ExclusiveWindows, RecycleRule::Conservative] {
            f.set_recycle_rule(rule);
            assert_eq!(f.recycle_rule(), rule);
        }
    }
}
