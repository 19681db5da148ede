//! The two classic strategies FASS is compared with, both with one hardware
//! first-level table ([`PageTable`]) per address space, switched by
//! reloading the translation table base:
//!
//! * [`ClassicKind::Fcse`]: the Linux FCSE patch (G. Chanteperdrix,
//!   R. Cochran, "The ARM Fast Context Switch Extension for Linux", Real
//!   Time Linux Workshop 2009). Each space has an FCSE PID. In [`PidMode::Guaranteed`] a switch is TTBR write + TLB
//!   invalidate + FCSEIDR write and never flushes a cache; spaces cannot
//!   map above 32 MiB. In [`PidMode::BestEffort`] PIDs are shared when they
//!   run out and a space that maps above 32 MiB moves to PID 0 (its
//!   first-level entries move from its window to window 0); the switch
//!   flushes exactly when [`PidAllocator::switch`] decides so.
//! * [`ClassicKind::Naive`]: no FCSE (every space runs at PID 0; FCSEIDR is
//!   never written and must hold 0); every switch cleans and invalidates
//!   the D-cache, invalidates the I-cache, reloads the TTBR and invalidates
//!   the TLB.
//!
//! This module is the management half (spaces, pages, segments); the switch
//! paths are in [`crate::switch`]. Private pages and segments are mapped in
//! the caller's user domain, which the caller keeps enabled (client) in the
//! DACR together with the kernel's; these strategies never write the DACR,
//! so segments cannot be granted manager access here
//! ([`SegmentError::ManagerUnsupported`]).
//!
//! Destroying a space whose lines may still be cached (FCSE: its PID is
//! cache-dirty; naive: it is running) cleans and invalidates the caches, as
//! Linux's `flush_cache_mm` at exit: otherwise dirty lines could later be
//! written back over its frames' next owner.

use crate::error::FassError;
use crate::id::{SegmentId, SpaceId};
use crate::kernel_table::KernelTable;
use crate::layout::{Layout, RegionKind, SLOTS_PER_WINDOW};
use crate::lean::{self, LeanKind, LeanSwitch, LeanTable};
use crate::manager::{frames_for, purge_page};
use crate::pid::{FlushDecision, PidAllocator, PidContext, PidMode};
use crate::platform::Platform;
use crate::segment::{SegmentAccess, SegmentError, SegmentSet, SegmentSpec, Segments};
use crate::space::{SpaceError, PAGE_SIZE};
use crate::stats::{Event, Stats};
use mmu_armv5::addr::{FCSE_PID_SHIFT, FCSE_WINDOW_SIZE};
use mmu_armv5::descriptor::{AccessPermission, CachePolicy};
use mmu_armv5::maint::CacheMaintenance;
use mmu_armv5::regs::{Cp15Ext, Ttbr};
use mmu_armv5::size::{Frame, PageRange, PageSizeKind, Size4KiB};
use mmu_armv5::table::{MapAttrs, PageTable, SizePolicy, TableError, TableFlush};
use mmu_armv5::{Domain, FcsePid, ModifiedVirtAddr, PhysAddr, VirtAddr};

/// Which classic strategy a [`TableSwitch`] implements.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum ClassicKind {
    /// Per-space tables plus FCSE PIDs in the given mode.
    Fcse(PidMode),
    /// Per-space tables, PID 0, full flush on every switch.
    Naive,
}

pub(crate) struct TableSpace {
    pub(crate) table: PageTable,
    pub(crate) pid: Option<PidContext>,
    pub(crate) segs: SegmentSet,
}

impl TableSpace {
    pub(crate) fn pid(&self) -> FcsePid {
        self.pid.as_ref().map_or(FcsePid::ZERO, PidContext::pid)
    }
}

/// A classic strategy: one hardware first-level table per space.
///
/// In [`ClassicKind::Fcse`] with [`PidMode::Guaranteed`] a switch loads the
/// next space's table, invalidates the TLB and sets its PID, and never
/// flushes a cache:
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
/// use fass::{FassError, PidError, PidMode, SpaceId, SwitchStrategy, ClassicKind, TableSwitch};
/// use mmu_armv5::descriptor::{AccessPermission as Ap, CachePolicy};
/// use mmu_armv5::regs::{Cp15Event, Cp15Op, Cp15Reg};
/// use mmu_armv5::size::{Frame, PageRange};
/// use mmu_armv5::VirtAddr;
///
/// let mut mem = Box::new([PoolBlock::ZERO; 8]);
/// let (mut sys, kernel) = platform(&mut mem, &Layout::DEMO);
/// let user = Domain::new(1)?; // the caller keeps it client in the DACR
/// let mut fcse: TableSwitch<8, 2> = TableSwitch::new(ClassicKind::Fcse(PidMode::Guaranteed), user, kernel);
///
/// let (a, b) = (SpaceId(1), SpaceId(2));
/// fcse.create_space(&mut sys, a)?;
/// fcse.create_space(&mut sys, b)?;
/// let page = PageRange::from_bytes(VirtAddr::new(0x8000), 0x1000)?;
/// fcse.map_pages(&mut sys, a, page, Frame::from_start(PhysAddr::new(0x0030_0000))?, Ap::ReadWrite, CachePolicy::WriteBack)?;
/// assert_ne!(fcse.root_of(a)?, fcse.root_of(b)?); // a table each
/// assert_ne!(fcse.pid_of(a)?, fcse.pid_of(b)?); // and a PID each
/// assert_eq!(fcse.mva_of(a, VirtAddr::new(0x8000))?, VirtAddr::new(0x8000).to_mva(fcse.pid_of(a)?));
///
/// fcse.switch_to(&mut sys, a)?;
/// sys.hw.cp15_mut().clear();
/// fcse.switch_to(&mut sys, b)?;
/// assert_eq!(
///     sys.hw.cp15().events(),
///     [
///         Cp15Event::Write(Cp15Reg::Ttbr, fcse.root_of(b)?.as_u32()),
///         Cp15Event::Op(Cp15Op::InvalidateTlb, 0),
///         Cp15Event::Write(Cp15Reg::Fcseidr, fcse.pid_of(b)?.fcseidr_value()),
///     ]
/// );
/// assert_eq!(fcse.stats().full_flushes, 0);
///
/// // Guaranteed mode keeps every space inside its own 32 MiB window.
/// let above = PageRange::from_bytes(VirtAddr::new(0x0200_0000), 0x1000)?;
/// let big = fcse.map_pages(&mut sys, a, above, Frame::from_start(PhysAddr::new(0x0031_0000))?, Ap::ReadWrite, CachePolicy::WriteBack);
/// assert_eq!(big, Err(FassError::Pid(PidError::LargeNotSupported)));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct TableSwitch<const SPACES: usize, const SEGMENTS: usize> {
    pub(crate) kind: ClassicKind,
    pub(crate) layout: Layout,
    pub(crate) user: Domain,
    pub(crate) kernel: KernelTable,
    pub(crate) pids: PidAllocator,
    pub(crate) spaces: [Option<TableSpace>; SPACES],
    pub(crate) segments: Segments<SEGMENTS>,
    pub(crate) stats: Stats,
    pub(crate) current: Option<SpaceId>,
    /// Per space, its precomputed switch ([`crate::lean`]).
    pub(crate) lean: LeanTable<SPACES>,
}

impl<const SPACES: usize, const SEGMENTS: usize> TableSwitch<SPACES, SEGMENTS> {
    /// A strategy of `kind` over the kernel's table `kernel` (the boot
    /// first-level table), in the layout it was checked against: its
    /// kernel-region entries are copied into every new space's table, and
    /// it is loaded when the running space is destroyed. User mappings go in
    /// domain `user`; first-level entries are written in the kernel table's
    /// encoding.
    #[must_use]
    pub fn new(kind: ClassicKind, user: Domain, kernel: KernelTable) -> Self {
        let layout = *kernel.layout();
        let mode = match kind {
            ClassicKind::Fcse(m) => m,
            ClassicKind::Naive => PidMode::BestEffort,
        };
        TableSwitch {
            kind,
            layout,
            user,
            kernel,
            pids: PidAllocator::new(&layout, mode),
            spaces: core::array::from_fn(|_| None),
            segments: Segments::new(),
            stats: Stats::ZERO,
            current: None,
            lean: [None; SPACES],
        }
    }

    /// The strategy.
    #[must_use]
    pub const fn kind(&self) -> ClassicKind {
        self.kind
    }

    /// The counters so far.
    #[must_use]
    pub fn stats(&self) -> Stats {
        self.stats
    }

    /// The running space.
    #[must_use]
    pub fn current(&self) -> Option<SpaceId> {
        self.current
    }

    /// The PID allocator (unused in [`ClassicKind::Naive`]).
    #[must_use]
    pub fn pids(&self) -> &PidAllocator {
        &self.pids
    }

    /// The physical address of space `id`'s first-level table.
    pub fn root_of(&self, id: SpaceId) -> Result<PhysAddr, FassError> {
        Ok(self.space(id)?.table.root())
    }

    /// The FCSE PID space `id` runs with (0 in [`ClassicKind::Naive`] and for
    /// spaces larger than 32 MiB).
    pub fn pid_of(&self, id: SpaceId) -> Result<FcsePid, FassError> {
        Ok(self.space(id)?.pid())
    }

    /// The modified virtual address `va` of space `id` is known by now.
    pub fn mva_of(&self, id: SpaceId, va: VirtAddr) -> Result<ModifiedVirtAddr, FassError> {
        Ok(va.to_mva(self.space(id)?.pid()))
    }

    pub(crate) fn space(&self, id: SpaceId) -> Result<&TableSpace, FassError> {
        self.spaces
            .get(usize::from(id.0))
            .and_then(Option::as_ref)
            .ok_or(FassError::UnknownSpace(id))
    }

    pub(crate) fn space_mut(&mut self, id: SpaceId) -> Result<&mut TableSpace, FassError> {
        self.spaces
            .get_mut(usize::from(id.0))
            .and_then(Option::as_mut)
            .ok_or(FassError::UnknownSpace(id))
    }

    /// Full D-cache clean+invalidate and I-cache invalidate (no TLB).
    pub(crate) fn flush_caches<S: CacheMaintenance + ?Sized>(&mut self, sys: &mut S) {
        sys.clean_invalidate_dcache();
        sys.invalidate_icache();
        self.stats.record(Event::FullFlush);
    }

    /// Acts on a PID flush decision: full flush, then reports it done
    /// (the running space's precomputed switch stays valid: its PID stays
    /// cache-dirty).
    pub(crate) fn act<S: CacheMaintenance + ?Sized>(&mut self, sys: &mut S, d: FlushDecision) {
        if let FlushDecision::Flush { ticket, .. } = d {
            sys.flush_all();
            self.stats.record(Event::FullFlush);
            let old = self.pids.generation();
            let _ = self.pids.flush_done(ticket);
            let new = self.pids.generation();
            lean::carry(&mut self.lean, self.current, old, new);
        }
    }

    /// The generation of the precomputed switches ([`crate::lean`]): the
    /// PID allocator's ([`PidAllocator::generation`]); never changes under
    /// [`ClassicKind::Naive`].
    #[must_use]
    pub fn generation(&self) -> u64 {
        self.pids.generation()
    }

    /// The record a full switch to `id` makes now, if a switch to it can
    /// be done from one: always under [`ClassicKind::Naive`]; under FCSE
    /// while the switch would need no flush and change nothing in the PID
    /// allocator but its epoch and running space
    /// ([`PidAllocator::lean_ok`]).
    pub(crate) fn fresh_lean(&self, id: SpaceId) -> Option<LeanSwitch> {
        let st = self.space(id).ok()?;
        let ttbr = Ttbr::new(st.table.root()).ok()?;
        let gen = self.pids.generation();
        match (self.kind, st.pid.as_ref()) {
            (ClassicKind::Naive, _) => {
                Some(LeanSwitch::table(gen, LeanKind::Naive, ttbr, FcsePid::ZERO))
            }
            (ClassicKind::Fcse(_), Some(ctx)) if self.pids.lean_ok(ctx) => {
                Some(LeanSwitch::table(gen, LeanKind::Fcse, ttbr, ctx.pid()))
            }
            (ClassicKind::Fcse(_), _) => None,
        }
    }

    /// Records `id`'s precomputed switch after a full switch to it (whose
    /// TTBR was `ttbr`), or none if a switch to it cannot be done from one.
    pub(crate) fn record_lean(&mut self, id: SpaceId, ttbr: Ttbr) {
        let rec = self.fresh_lean(id);
        debug_assert!(rec.is_none_or(|r| r.ttbr() == Some(ttbr)));
        lean::set(&mut self.lean, id, rec);
    }

    /// Creates an empty space `id` with its own first-level table (holding
    /// the kernel's entries) and, for FCSE, a PID.
    pub fn create_space<S: Platform + ?Sized>(
        &mut self,
        sys: &mut S,
        id: SpaceId,
    ) -> Result<(), FassError> {
        let entry = self
            .spaces
            .get(usize::from(id.0))
            .ok_or(FassError::SpaceIdOutOfRange(id))?;
        if entry.is_some() {
            return Err(FassError::SpaceExists(id));
        }
        let mut table = PageTable::with_encoding(sys, self.kernel.encoding())?;
        if let Err(e) = self.copy_kernel(sys, &mut table) {
            // SAFETY: the table was never loaded nor linked anywhere.
            let _ = unsafe { self.release_table(sys, table) };
            return Err(e);
        }
        let pid = match self.kind {
            ClassicKind::Naive => None,
            ClassicKind::Fcse(_) => match self.pids.allocate(id) {
                Ok(a) => {
                    if a.shared {
                        self.stats.record(Event::PidShared);
                    }
                    self.act(sys, a.flush);
                    Some(a.context)
                }
                Err(e) => {
                    // SAFETY: the table was never loaded nor linked anywhere.
                    let _ = unsafe { self.release_table(sys, table) };
                    return Err(e.into());
                }
            },
        };
        lean::set(&mut self.lean, id, None);
        if let Some(e) = self.spaces.get_mut(usize::from(id.0)) {
            *e = Some(TableSpace {
                table,
                pid,
                segs: SegmentSet::EMPTY,
            });
        }
        Ok(())
    }

    /// Copies the kernel table's entries into `table` (a fresh space
    /// table): every valid first-level entry of the kernel region, so the
    /// kernel stays mapped whenever `table` is loaded (the kernel maps
    /// nothing outside its region, checked by [`KernelTable::new`]).
    fn copy_kernel<S: Platform + ?Sized>(
        &self,
        sys: &mut S,
        table: &mut PageTable,
    ) -> Result<(), FassError> {
        let region = self.layout.kernel();
        // Below 4 GiB: the layout keeps the kernel out of the low 32 MiB.
        let len = u32::try_from(region.size()).map_err(|_| TableError::AddressOverflow)?;
        // SAFETY: the kernel's first-level entries do not change while this
        // strategy lives (`KernelTable::new`'s contract), so the
        // second-level tables they link live as long as the kernel's table,
        // longer than any space's table; `table` is fresh and owns none of
        // them, and never frees what it links this way.
        let flush = unsafe {
            table.share_from_root(
                &*sys,
                self.kernel.root(),
                ModifiedVirtAddr::new(region.base()),
                len,
            )?
        };
        flush.flush_on(sys);
        Ok(())
    }

    /// Frees `table` (a space's first-level table) and the second-level
    /// tables the space allocated, but not the kernel's: the kernel-region
    /// entries were copied from the boot table by
    /// [`TableSwitch::create_space`] and link the kernel's own second-level
    /// tables, which every other table still uses. Those entries are
    /// cleared first, so [`PageTable::release`] never sees them. A space
    /// never owns anything in the kernel region (private pages there are
    /// refused), so clearing the whole region loses nothing of its own.
    ///
    /// # Safety
    /// As [`PageTable::release`]: no translation table base points at
    /// `table` and the TLB holds no entry walked through it except the
    /// kernel's (which every table maps identically).
    unsafe fn release_table<S: Platform + ?Sized>(
        &self,
        sys: &mut S,
        table: PageTable,
    ) -> Result<(), FassError> {
        let root = table.root_table();
        for slot in self.layout.kernel().slots() {
            // No maintenance: the walker never reads this table again, and
            // the kernel's translations it held are the boot table's own.
            // SAFETY: these slots link the kernel's tables, which `table`
            // does not own (installed with `set_l1_entry_unchecked`):
            // clearing them changes no table it frees.
            unsafe { root.write(&*sys, slot, 0)? };
        }
        // SAFETY: the caller's promise; only the space's own second-level
        // tables are linked from `table` now.
        unsafe { table.release(sys)? };
        Ok(())
    }

    fn check_private(&self, va: VirtAddr, mva: ModifiedVirtAddr) -> Result<(), FassError> {
        match self.layout.classify(mva) {
            RegionKind::Kernel | RegionKind::Shared => Err(FassError::NotPrivate(va)),
            _ => Ok(()),
        }
    }

    /// Best effort: makes space `id` large with mappings up to window
    /// `highest`, moving it to PID 0 the first time (its entries move from
    /// its window to window 0), and acts on the flush decision.
    fn grow<S: Platform + ?Sized>(
        &mut self,
        sys: &mut S,
        id: SpaceId,
        highest: u8,
    ) -> Result<(), FassError> {
        let running = self.current == Some(id);
        let st = self
            .spaces
            .get_mut(usize::from(id.0))
            .and_then(Option::as_mut)
            .ok_or(FassError::UnknownSpace(id))?;
        let Some(ctx) = st.pid.as_mut() else {
            return Ok(());
        };
        let old = ctx.pid();
        let was_large = ctx.is_large();
        let decision = self
            .pids
            .set_large(ctx, highest.max(ctx.highest_window()))?;
        if !was_large && old != FcsePid::ZERO {
            let first = (u32::from(old.get()) << FCSE_PID_SHIFT >> 20) as usize;
            let mut flush = TableFlush::new();
            for i in 0..SLOTS_PER_WINDOW {
                let e = st.table.l1_entry(&*sys, first + i)?;
                if e.is_valid() {
                    flush.merge(st.table.move_l1_entry(&*sys, first + i, i)?);
                }
            }
            flush.flush_on(sys);
            if running {
                // SAFETY: the space's low mappings were just moved to
                // window 0, where PID 0 puts its accesses; the kernel runs
                // above 32 MiB and is not relocated.
                unsafe { sys.set_fcse_pid(FcsePid::ZERO) };
            }
        }
        self.act(sys, decision);
        Ok(())
    }

    /// Maps `pages` of space `id` to as many frames from `frame`, with 4 KiB
    /// pages (as [`Fass::map_pages`](crate::Fass::map_pages): the range is
    /// checked when built, the frames only for reaching past 4 GiB; all
    /// pages are checked first; on error nothing has changed, except that a
    /// best-effort space asked to map above 32 MiB may have become large).
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
        let st = self.space(id)?;
        let end = pages.last().start().as_u32() + (PAGE_SIZE - 1);
        let above = end >= FCSE_WINDOW_SIZE;
        if above && self.kind == ClassicKind::Fcse(PidMode::Guaranteed) {
            return Err(FassError::Pid(crate::pid::PidError::LargeNotSupported));
        }
        let pid = st.pid();
        // A space about to grow large moves its low entries out of its own
        // window, so a fixed page there is free even if the window is full.
        let growing = above && pid != FcsePid::ZERO && self.kind != ClassicKind::Naive;
        for page in pages {
            let v = page.start();
            let mva = v.to_mva(pid);
            self.check_private(v, mva)?;
            let vacated = growing
                && v.as_u32() >= FCSE_WINDOW_SIZE
                && v.as_u32() >> FCSE_PID_SHIFT == u32::from(pid.get());
            if !vacated && st.table.lookup(&*sys, mva)?.is_some() {
                return Err(FassError::Space(SpaceError::AlreadyMapped(mva)));
            }
        }
        if above && self.kind != ClassicKind::Naive {
            self.grow(sys, id, (end >> FCSE_PID_SHIFT) as u8)?;
        }
        let pid = self.space(id)?.pid();
        let attrs = MapAttrs::new(self.user, ap, cache);
        for (done, (page, frame)) in pages.iter().zip(frames).enumerate() {
            let mva = page.start().to_mva(pid);
            let st = self.space_mut(id)?;
            match st.table.map(
                sys,
                mva,
                frame.start(),
                PAGE_SIZE,
                attrs,
                SizePolicy::Exactly(PageSizeKind::Small),
            ) {
                Ok(f) => f.flush_on(sys),
                Err(e) => {
                    for back in pages.iter().take(done) {
                        let _ = self.unmap_one(sys, id, back.start().to_mva(pid));
                    }
                    return Err(e.into());
                }
            }
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
        let f = self.space_mut(id)?.table.unmap(sys, mva, PAGE_SIZE)?;
        f.flush_on(sys);
        Ok(())
    }

    /// Unmaps `pages` of space `id` (every page must be mapped; checked
    /// first). Each page's lines are cleaned and invalidated by MVA.
    pub fn unmap_pages<S: Platform + ?Sized>(
        &mut self,
        sys: &mut S,
        id: SpaceId,
        pages: PageRange<Size4KiB, VirtAddr>,
    ) -> Result<(), FassError> {
        let pid = self.space(id)?.pid();
        for page in pages {
            let mva = page.start().to_mva(pid);
            let m = self.space(id)?.table.lookup(&*sys, mva)?;
            if m.is_none() || self.layout.classify(mva) == RegionKind::Shared {
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

    /// Maps segment `seg` into `space`'s table at `at` (its own address),
    /// with sections. Only client access.
    pub fn map_segment<S: Platform + ?Sized>(
        &mut self,
        sys: &mut S,
        space: SpaceId,
        seg: SegmentId,
        at: VirtAddr,
        access: SegmentAccess,
    ) -> Result<(), FassError> {
        let mapped = self.space(space)?.segs;
        let spec = *self.segments.check_map(space, mapped, seg, at)?.spec();
        if access == SegmentAccess::Manager {
            return Err(SegmentError::ManagerUnsupported(seg).into());
        }
        let attrs = MapAttrs::new(self.user, spec.ap, spec.cache);
        self.segments.add_sharer(seg)?;
        let st = self.space_mut(space)?;
        let mapped = st.table.map(
            sys,
            ModifiedVirtAddr::new(spec.base.as_u32()),
            spec.pa,
            spec.size,
            attrs,
            SizePolicy::Exactly(PageSizeKind::Section),
        );
        match mapped {
            Ok(f) => {
                f.flush_on(sys);
                st.segs = st.segs.with(seg);
                Ok(())
            }
            Err(e) => {
                let _ = self.segments.remove_sharer(seg);
                Err(e.into())
            }
        }
    }

    /// Unmaps segment `seg` from `space`. After the last sharer the caches
    /// are flushed, so no line of the segment outlives its mappings.
    pub fn unmap_segment<S: Platform + ?Sized>(
        &mut self,
        sys: &mut S,
        space: SpaceId,
        seg: SegmentId,
    ) -> Result<(), FassError> {
        let st = self.space(space)?;
        if !st.segs.contains(seg) {
            return Err(SegmentError::NotMapped {
                space,
                segment: seg,
            }
            .into());
        }
        let spec = *self.segments.get(seg)?.spec();
        let st = self.space_mut(space)?;
        let f = st
            .table
            .unmap(sys, ModifiedVirtAddr::new(spec.base.as_u32()), spec.size)?;
        f.flush_on(sys);
        st.segs = st.segs.without(seg);
        if self.segments.remove_sharer(seg)? {
            self.flush_caches(sys);
        }
        Ok(())
    }

    /// Destroys space `id`: unmaps its segments, flushes the caches if its
    /// lines may be cached, loads the kernel's table if it was running, and
    /// frees its first-level table, the second-level tables it allocated
    /// (never the kernel's, whose entries it only copied) and its PID.
    pub fn destroy_space<S: Platform + ?Sized>(
        &mut self,
        sys: &mut S,
        id: SpaceId,
    ) -> Result<(), FassError> {
        let segs = self.space(id)?.segs;
        for s in segs.iter() {
            self.unmap_segment(sys, id, s)?;
        }
        let running = self.current == Some(id);
        let cached = match self.kind {
            ClassicKind::Naive => running,
            ClassicKind::Fcse(_) => self.pids.is_dirty(self.space(id)?.pid()),
        };
        if cached {
            self.flush_caches(sys);
        }
        if running {
            // SAFETY: the kernel's own table maps the kernel region like
            // every space's table does; no user space runs until the next
            // switch loads one.
            unsafe {
                sys.set_ttbr(Ttbr::new(self.kernel.root()).map_err(TableError::from)?);
            }
            sys.invalidate_tlb();
            self.current = None;
        }
        let Some(st) = self
            .spaces
            .get_mut(usize::from(id.0))
            .and_then(Option::take)
        else {
            return Err(FassError::UnknownSpace(id));
        };
        lean::set(&mut self.lean, id, None);
        // SAFETY: the TTBR does not point at this table (loaded elsewhere
        // above if it was running), no other table links the tables it
        // allocated, and the TLB was invalidated when it stopped running.
        unsafe { self.release_table(sys, st.table)? };
        if let Some(ctx) = st.pid {
            self.pids.release(ctx)?;
        }
        Ok(())
    }
}
