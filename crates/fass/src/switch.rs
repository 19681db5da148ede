//! Address-space switching strategies behind one interface.
//!
//! [`SwitchStrategy`] is what benchmarks and tests drive, so the three
//! strategies are compared on equal terms: the same calls create, map,
//! share, switch and resolve faults. This module holds the trait and the
//! three switch paths:
//!
//! | strategy | switch | caches |
//! |---|---|---|
//! | [`Fass`] | DACR write + FCSEIDR write (domain recycled first if the space has none) | flushed only when a dirty domain is recycled (under [`RecycleRule::ExclusiveWindows`](crate::manager::RecycleRule) not even then if its space is window-exclusive), a collision takes a dirty owner's slot, or a fill enters a window holding another space's left lines |
//! | [`TableSwitch`] with [`ClassicKind::Fcse`] | TTBR write + TLB invalidate + FCSEIDR write | guaranteed mode: never; best effort: when [`PidAllocator::switch`](crate::pid::PidAllocator::switch) decides |
//! | [`TableSwitch`] with [`ClassicKind::Naive`] | D-cache clean+invalidate, I-cache invalidate, TTBR write, TLB invalidate | every switch |
//!
//! Switching to the space already running does nothing.
//!
//! Each strategy also switches through a precomputed record per space
//! ([`SwitchStrategy::switch_lean`], see [`crate::lean`]): the same register
//! writes and maintenance as the table above, without the decisions.

use crate::classic::{ClassicKind, TableSwitch};
use crate::copy::{CopyEnd, CopyError, CopyMemory, CopyPath};
use crate::domain::Owner;
use crate::error::FassError;
use crate::id::{SegmentId, SpaceId};
use crate::lean::{self, LeanKind, LeanSwitch, StaleSwitch};
use crate::manager::{Fass, Hot};
use crate::pid::FlushDecision;
use crate::platform::Platform;
use crate::policy::VictimPolicy;
use crate::resolve::Resolution;
use crate::segment::{SegmentAccess, SegmentSpec};
use crate::stats::{Event, Stats};
use mmu_armv5::descriptor::{AccessPermission, CachePolicy};
use mmu_armv5::maint::CacheMaintenance;
use mmu_armv5::regs::{Cp15, Cp15Ext, Dacr, Far, Fsr, Ttbr};
use mmu_armv5::size::{Frame, PageRange, Size4KiB};
use mmu_armv5::table::TableError;
use mmu_armv5::{Domain, ModifiedVirtAddr, VirtAddr};

/// A way of managing and switching address spaces.
///
/// Every method that touches tables or caches takes the [`Platform`] it
/// runs on.
///
/// Code written against the trait runs every strategy; here the same
/// round-robin scheduler counts the full cache flushes of FASS and of the
/// naive per-space tables:
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
/// use fass::{Cpd, DefaultPolicy, DomainSet, Fass, FassError, Platform, SpaceId, SwitchStrategy, ClassicKind, TableSwitch};
///
/// /// Creates `n` spaces, runs them in turn for `rounds` rounds after a
/// /// first one, and returns the full flushes of those rounds.
/// fn flushes<T: SwitchStrategy, S: Platform>(t: &mut T, sys: &mut S, n: u16, rounds: u32) -> Result<u64, FassError> {
///     for s in 0..n {
///         t.create_space(sys, SpaceId(s))?;
///         t.switch_to(sys, SpaceId(s))?;
///     }
///     let before = t.stats().full_flushes;
///     for _ in 0..rounds {
///         for s in 0..n {
///             t.switch_to(sys, SpaceId(s))?;
///             assert_eq!(t.current(), Some(SpaceId(s)));
///         }
///     }
///     Ok(t.stats().full_flushes - before)
/// }
///
/// let mut mem = Box::new([PoolBlock::ZERO; 8]);
/// let (mut sys, kernel) = platform(&mut mem, &Layout::DEMO);
/// let mut fass: Fass<DefaultPolicy, 8, 8, 4> = Fass::new(Cpd::new(kernel), DomainSet::EMPTY, DefaultPolicy::default())?;
/// assert_eq!(flushes(&mut fass, &mut sys, 3, 2)?, 0);
///
/// let mut mem = Box::new([PoolBlock::ZERO; 8]);
/// let (mut sys, kernel) = platform(&mut mem, &Layout::DEMO);
/// let mut naive: TableSwitch<8, 2> = TableSwitch::new(ClassicKind::Naive, Domain::new(1)?, kernel);
/// assert_eq!(flushes(&mut naive, &mut sys, 3, 2)?, 6); // every switch
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait SwitchStrategy {
    /// Creates an empty address space `id`.
    fn create_space<S: Platform + ?Sized>(
        &mut self,
        sys: &mut S,
        id: SpaceId,
    ) -> Result<(), FassError>;
    /// Destroys space `id` and everything it maps.
    fn destroy_space<S: Platform + ?Sized>(
        &mut self,
        sys: &mut S,
        id: SpaceId,
    ) -> Result<(), FassError>;
    /// Maps `pages` of `id` to as many frames from `frame`, with 4 KiB pages.
    fn map_pages<S: Platform + ?Sized>(
        &mut self,
        sys: &mut S,
        id: SpaceId,
        pages: PageRange<Size4KiB, VirtAddr>,
        frame: Frame<Size4KiB>,
        ap: AccessPermission,
        cache: CachePolicy,
    ) -> Result<(), FassError>;
    /// Unmaps `pages` of `id` (every page must be mapped).
    fn unmap_pages<S: Platform + ?Sized>(
        &mut self,
        sys: &mut S,
        id: SpaceId,
        pages: PageRange<Size4KiB, VirtAddr>,
    ) -> Result<(), FassError>;
    /// Defines shared segment `id`.
    fn create_segment(&mut self, id: SegmentId, spec: SegmentSpec) -> Result<(), FassError>;
    /// Removes the definition of segment `id` (mapped nowhere).
    fn destroy_segment(&mut self, id: SegmentId) -> Result<(), FassError>;
    /// Maps segment `seg` into `space` at `at`, the segment's own address.
    fn map_segment<S: Platform + ?Sized>(
        &mut self,
        sys: &mut S,
        space: SpaceId,
        seg: SegmentId,
        at: VirtAddr,
        access: SegmentAccess,
    ) -> Result<(), FassError>;
    /// Unmaps segment `seg` from `space`.
    fn unmap_segment<S: Platform + ?Sized>(
        &mut self,
        sys: &mut S,
        space: SpaceId,
        seg: SegmentId,
    ) -> Result<(), FassError>;
    /// Makes `next` the running address space.
    fn switch_to<S: Platform + ?Sized>(
        &mut self,
        sys: &mut S,
        next: SpaceId,
    ) -> Result<(), FassError>;
    /// Resolves an abort (`fsr`, `far`) the strategy may have caused
    /// (FASS: CPD fills and collisions); other strategies cause none.
    fn resolve<S: Platform + ?Sized>(
        &mut self,
        sys: &mut S,
        fsr: Fsr,
        far: Far,
    ) -> Result<Resolution, FassError>;
    /// The generation precomputed switches are stamped with
    /// ([`crate::lean`]): a record of another generation is stale.
    fn generation(&self) -> u64;
    /// A copy of space `id`'s precomputed switch, if it holds one valid in
    /// the current generation (what [`SwitchStrategy::switch_lean`] would
    /// apply).
    fn lean_switch(&self, id: SpaceId) -> Option<LeanSwitch>;
    /// Makes `next` the running space through its precomputed switch: the
    /// record's register writes and maintenance, and the bookkeeping of a
    /// full switch, exactly what [`SwitchStrategy::switch_to`] would do now
    /// (nothing if `next` is already running). [`StaleSwitch`], with nothing
    /// written, if `next` holds no record of the current generation: call
    /// `switch_to`, which records a fresh one.
    fn switch_lean<S: Cp15 + CacheMaintenance + ?Sized>(
        &mut self,
        sys: &mut S,
        next: SpaceId,
    ) -> Result<(), StaleSwitch>;
    /// The modified virtual address `va` of space `id` is known by now.
    fn mva_of(&self, id: SpaceId, va: VirtAddr) -> Result<ModifiedVirtAddr, FassError>;
    /// The running space.
    fn current(&self) -> Option<SpaceId>;
    /// The counters so far.
    fn stats(&self) -> Stats;
    /// Copies `len` bytes from `from` (a space and address) to `to`, the
    /// kernel's long-IPC copy: FASS from window to window with both domains
    /// open, the classic strategies through the kernel's linear map with
    /// the user aliases cleaned and invalidated ([`crate::copy`]). Every
    /// refusal is decided before a byte is written.
    ///
    /// # Errors
    /// [`CopyError`].
    fn copy_between<S: Platform + ?Sized, M: CopyMemory<S> + ?Sized>(
        &mut self,
        sys: &mut S,
        mem: &mut M,
        from: CopyEnd,
        to: CopyEnd,
        len: u32,
    ) -> Result<CopyPath, CopyError>;
}

impl<P, const SPACES: usize, const SLOTS: usize, const SEGMENTS: usize> SwitchStrategy
    for Fass<P, SPACES, SLOTS, SEGMENTS>
where
    P: VictimPolicy,
{
    fn create_space<S: Platform + ?Sized>(
        &mut self,
        _sys: &mut S,
        id: SpaceId,
    ) -> Result<(), FassError> {
        Fass::add_space(self, id)
    }

    fn destroy_space<S: Platform + ?Sized>(
        &mut self,
        sys: &mut S,
        id: SpaceId,
    ) -> Result<(), FassError> {
        Fass::destroy_space(self, sys, id)
    }

    fn map_pages<S: Platform + ?Sized>(
        &mut self,
        sys: &mut S,
        id: SpaceId,
        pages: PageRange<Size4KiB, VirtAddr>,
        frame: Frame<Size4KiB>,
        ap: AccessPermission,
        cache: CachePolicy,
    ) -> Result<(), FassError> {
        Fass::map_pages(self, sys, id, pages, frame, ap, cache)
    }

    fn unmap_pages<S: Platform + ?Sized>(
        &mut self,
        sys: &mut S,
        id: SpaceId,
        pages: PageRange<Size4KiB, VirtAddr>,
    ) -> Result<(), FassError> {
        Fass::unmap_pages(self, sys, id, pages)
    }

    fn create_segment(&mut self, id: SegmentId, spec: SegmentSpec) -> Result<(), FassError> {
        Fass::create_segment(self, id, spec)
    }

    fn destroy_segment(&mut self, id: SegmentId) -> Result<(), FassError> {
        Fass::destroy_segment(self, id)
    }

    fn map_segment<S: Platform + ?Sized>(
        &mut self,
        sys: &mut S,
        space: SpaceId,
        seg: SegmentId,
        at: VirtAddr,
        access: SegmentAccess,
    ) -> Result<(), FassError> {
        Fass::map_segment(self, sys, space, seg, at, access)
    }

    fn unmap_segment<S: Platform + ?Sized>(
        &mut self,
        sys: &mut S,
        space: SpaceId,
        seg: SegmentId,
    ) -> Result<(), FassError> {
        Fass::unmap_segment(self, sys, space, seg)
    }

    /// In steady state exactly one DACR write and one FCSEIDR write. A
    /// space that holds no domain is given one (recycled from another
    /// space by the policy if none is free); if it was recycled, unless
    /// [`Fass::set_eager_relink`] turned it off, the space's directory
    /// entries are written into the empty CPD slots at once
    /// (`Fass::relink`), so it does not come back in through one fault per
    /// slot.
    fn switch_to<S: Platform + ?Sized>(
        &mut self,
        sys: &mut S,
        next: SpaceId,
    ) -> Result<(), FassError> {
        let (domain, pid) = {
            let st = self.space(next)?;
            (st.domain, st.pid.pid())
        };
        if self.current == Some(next) {
            // Nothing to write; its record made afresh if it went stale.
            let rec = self.fresh_lean(next);
            lean::set(&mut self.lean, next, rec);
            return Ok(());
        }
        self.stats.record(Event::Switch);
        let d = match domain {
            Some(d) => d,
            None => {
                // `next`'s record holds no domain: it owns none in the table
                // (`acquire_domain` records it there).
                // A domain recycled from another space: the usual case past
                // the free domains, every switch of a long ring.
                let recycled = self.domains.free().is_empty();
                let d = self.acquire_domain(sys, Owner::Space(next), true)?;
                // Its entries back in now, not one fault per slot later. A
                // free domain (a space's first run, mostly) is left to fill
                // lazily, as before: it happens once, not on every lap.
                if recycled && self.eager_relink {
                    self.relink(sys, next, d);
                }
                d
            }
        };
        self.policy.touch(d);
        let user = self.user_dacr(self.space(next)?, d);
        // Conservative, as Pistachio: a space that runs may fill the cache
        // with lines of its own domain and of its segments'.
        self.domains.mark_dirty(user);
        let dacr = user.with(self.kernel, mmu_armv5::regs::DomainAccess::Client);
        // SAFETY: the kernel's domain stays client, so kernel code and data
        // (above 32 MiB by the layout, unaffected by the PID) stay reachable;
        // only `next`'s own domain and its segments' are opened; the caches
        // may hold other spaces' lines at other MVAs only, or in domains
        // `next` cannot use (collisions are caught as domain faults).
        unsafe {
            sys.set_dacr(dacr);
            sys.set_fcse_pid(pid);
        }
        self.current = Some(next);
        // The hot record from the values at hand (`refresh_hot` would look
        // `next`'s record up again): `next` holds `d`, its PID is `pid`.
        self.hot = Hot {
            space: u32::from(next.0),
            domain: d.get(),
            pid_bits: pid.fcseidr_value(),
            tag: (u32::from(d.get()) << 5) | self.tag_base,
        };
        debug_assert_eq!(self.hot, self.computed_hot(), "stale hot record");
        self.record_lean(next, dacr, pid, d);
        Ok(())
    }

    fn generation(&self) -> u64 {
        self.generation
    }

    fn lean_switch(&self, id: SpaceId) -> Option<LeanSwitch> {
        lean::valid(&self.lean, id.0, self.generation)
    }

    /// Two register writes (DACR, FCSEIDR), the switch counted, the policy
    /// told, the fault path's record of the running space set.
    #[inline]
    fn switch_lean<S: Cp15 + CacheMaintenance + ?Sized>(
        &mut self,
        sys: &mut S,
        next: SpaceId,
    ) -> Result<(), StaleSwitch> {
        let rec = lean::valid(&self.lean, next.0, self.generation).ok_or(StaleSwitch)?;
        if self.current == Some(next) {
            return Ok(());
        }
        debug_assert_eq!(Some(rec), self.fresh_lean(next), "stale FASS record");
        self.stats.record(Event::Switch);
        let d = Domain::from_low_bits(u32::from(rec.domain));
        self.policy.touch(d);
        // SAFETY: the values `switch_to` wrote for `next` in this generation
        // (the record is stamped with it): since then no domain changed
        // hands, no segment was mapped or unmapped and no domain they open
        // was cleaned (each changes the generation), so they are what a
        // switch to `next` writes now, with the same justification.
        unsafe {
            sys.set_dacr(Dacr::from_bits(rec.reg));
            sys.set_fcse_pid(rec.pid);
        }
        self.current = Some(next);
        self.hot = Hot {
            space: u32::from(next.0),
            domain: rec.domain,
            pid_bits: rec.pid.fcseidr_value(),
            tag: (u32::from(rec.domain) << 5) | self.tag_base,
        };
        debug_assert_eq!(self.hot, self.computed_hot());
        Ok(())
    }

    fn resolve<S: Platform + ?Sized>(
        &mut self,
        sys: &mut S,
        fsr: Fsr,
        far: Far,
    ) -> Result<Resolution, FassError> {
        Fass::resolve(self, sys, fsr, far)
    }

    fn mva_of(&self, id: SpaceId, va: VirtAddr) -> Result<ModifiedVirtAddr, FassError> {
        Fass::mva_of(self, id, va)
    }

    fn current(&self) -> Option<SpaceId> {
        self.current
    }

    fn stats(&self) -> Stats {
        Fass::stats(self)
    }

    fn copy_between<S: Platform + ?Sized, M: CopyMemory<S> + ?Sized>(
        &mut self,
        sys: &mut S,
        mem: &mut M,
        from: CopyEnd,
        to: CopyEnd,
        len: u32,
    ) -> Result<CopyPath, CopyError> {
        Fass::copy_between(self, sys, mem, from, to, len)
    }
}

impl<const SPACES: usize, const SEGMENTS: usize> SwitchStrategy for TableSwitch<SPACES, SEGMENTS> {
    fn create_space<S: Platform + ?Sized>(
        &mut self,
        sys: &mut S,
        id: SpaceId,
    ) -> Result<(), FassError> {
        TableSwitch::create_space(self, sys, id)
    }

    fn destroy_space<S: Platform + ?Sized>(
        &mut self,
        sys: &mut S,
        id: SpaceId,
    ) -> Result<(), FassError> {
        TableSwitch::destroy_space(self, sys, id)
    }

    fn map_pages<S: Platform + ?Sized>(
        &mut self,
        sys: &mut S,
        id: SpaceId,
        pages: PageRange<Size4KiB, VirtAddr>,
        frame: Frame<Size4KiB>,
        ap: AccessPermission,
        cache: CachePolicy,
    ) -> Result<(), FassError> {
        TableSwitch::map_pages(self, sys, id, pages, frame, ap, cache)
    }

    fn unmap_pages<S: Platform + ?Sized>(
        &mut self,
        sys: &mut S,
        id: SpaceId,
        pages: PageRange<Size4KiB, VirtAddr>,
    ) -> Result<(), FassError> {
        TableSwitch::unmap_pages(self, sys, id, pages)
    }

    fn create_segment(&mut self, id: SegmentId, spec: SegmentSpec) -> Result<(), FassError> {
        TableSwitch::create_segment(self, id, spec)
    }

    fn destroy_segment(&mut self, id: SegmentId) -> Result<(), FassError> {
        TableSwitch::destroy_segment(self, id)
    }

    fn map_segment<S: Platform + ?Sized>(
        &mut self,
        sys: &mut S,
        space: SpaceId,
        seg: SegmentId,
        at: VirtAddr,
        access: SegmentAccess,
    ) -> Result<(), FassError> {
        TableSwitch::map_segment(self, sys, space, seg, at, access)
    }

    fn unmap_segment<S: Platform + ?Sized>(
        &mut self,
        sys: &mut S,
        space: SpaceId,
        seg: SegmentId,
    ) -> Result<(), FassError> {
        TableSwitch::unmap_segment(self, sys, space, seg)
    }

    fn switch_to<S: Platform + ?Sized>(
        &mut self,
        sys: &mut S,
        next: SpaceId,
    ) -> Result<(), FassError> {
        let root = self.space(next)?.table.root();
        if self.current == Some(next) {
            // Nothing to write; its record made afresh if it went stale.
            let rec = self.fresh_lean(next);
            lean::set(&mut self.lean, next, rec);
            return Ok(());
        }
        let ttbr = Ttbr::new(root).map_err(TableError::from)?;
        self.stats.record(Event::Switch);
        match self.kind {
            ClassicKind::Naive => {
                self.flush_caches(sys);
                // SAFETY: every space's table holds the kernel's entries, so
                // the kernel stays mapped; the caches were just cleaned and
                // invalidated, so no line of the previous space survives.
                unsafe { sys.set_ttbr(ttbr) };
                sys.invalidate_tlb();
            }
            ClassicKind::Fcse(_) => {
                let prev = self.current;
                let mut prev_ctx = prev
                    .and_then(|p| self.spaces.get_mut(usize::from(p.0)))
                    .and_then(Option::as_mut)
                    .and_then(|st| st.pid.take());
                let next_ctx = self
                    .spaces
                    .get(usize::from(next.0))
                    .and_then(Option::as_ref)
                    .and_then(|st| st.pid.as_ref());
                let decided = match next_ctx {
                    Some(n) => self.pids.switch(prev_ctx.as_mut(), n),
                    None => Ok(crate::pid::PidSwitch {
                        pid: mmu_armv5::FcsePid::ZERO,
                        flush: FlushDecision::None,
                    }),
                };
                if let (Some(p), Some(ctx)) = (prev, prev_ctx) {
                    if let Ok(st) = self.space_mut(p) {
                        st.pid = Some(ctx);
                    }
                }
                let decided = decided?;
                if let FlushDecision::Flush { ticket, .. } = decided.flush {
                    self.flush_caches(sys);
                    let _ = self.pids.flush_done(ticket);
                } else {
                    self.stats.record(Event::TlbOnlyInvalidation);
                }
                // SAFETY: every space's table holds the kernel's entries;
                // the kernel runs above 32 MiB, unaffected by the PID; the
                // PID allocator decided (and we performed) any flush the
                // next space's window needs.
                unsafe { sys.set_ttbr(ttbr) };
                sys.invalidate_tlb();
                // SAFETY: as above.
                unsafe { sys.set_fcse_pid(decided.pid) };
            }
        }
        self.current = Some(next);
        self.record_lean(next, ttbr);
        Ok(())
    }

    fn generation(&self) -> u64 {
        self.pids.generation()
    }

    fn lean_switch(&self, id: SpaceId) -> Option<LeanSwitch> {
        lean::valid(&self.lean, id.0, self.pids.generation())
    }

    /// Naive: D-cache clean+invalidate, I-cache invalidation, TTBR write,
    /// TLB invalidation. FCSE: TTBR write, TLB invalidation, FCSEIDR write,
    /// and the PID allocator told (its epoch and running space, two words:
    /// the record exists only while the switch changes nothing else there).
    #[inline]
    fn switch_lean<S: Cp15 + CacheMaintenance + ?Sized>(
        &mut self,
        sys: &mut S,
        next: SpaceId,
    ) -> Result<(), StaleSwitch> {
        let rec = lean::valid(&self.lean, next.0, self.pids.generation()).ok_or(StaleSwitch)?;
        if self.current == Some(next) {
            return Ok(());
        }
        debug_assert_eq!(Some(rec), self.fresh_lean(next), "stale table record");
        self.stats.record(Event::Switch);
        let ttbr = Ttbr::from_bits(rec.reg);
        if rec.kind == LeanKind::Naive {
            self.flush_caches(sys);
            // SAFETY: `next`'s table (it exists: a destroyed space's record
            // goes with it), which holds the kernel's entries; the caches
            // were just cleaned and invalidated.
            unsafe { sys.set_ttbr(ttbr) };
            sys.invalidate_tlb();
        } else {
            self.stats.record(Event::TlbOnlyInvalidation);
            // SAFETY: `next`'s table, holding the kernel's entries; the
            // kernel runs above 32 MiB. The record exists only while a
            // switch to `next` needs no flush (its PID is cache-dirty with
            // `next` as its last user, no large space's windows or shared
            // writes in the cache: each change moves the generation).
            unsafe { sys.set_ttbr(ttbr) };
            sys.invalidate_tlb();
            // SAFETY: as above.
            unsafe { sys.set_fcse_pid(rec.pid) };
            self.pids.switched_lean(next, rec.pid);
        }
        self.current = Some(next);
        Ok(())
    }

    fn resolve<S: Platform + ?Sized>(
        &mut self,
        _sys: &mut S,
        fsr: Fsr,
        _far: Far,
    ) -> Result<Resolution, FassError> {
        Ok(Resolution::NotFass(fsr.fault()))
    }

    fn mva_of(&self, id: SpaceId, va: VirtAddr) -> Result<ModifiedVirtAddr, FassError> {
        TableSwitch::mva_of(self, id, va)
    }

    fn current(&self) -> Option<SpaceId> {
        self.current
    }

    fn stats(&self) -> Stats {
        self.stats
    }

    fn copy_between<S: Platform + ?Sized, M: CopyMemory<S> + ?Sized>(
        &mut self,
        sys: &mut S,
        mem: &mut M,
        from: CopyEnd,
        to: CopyEnd,
        len: u32,
    ) -> Result<CopyPath, CopyError> {
        TableSwitch::copy_between(self, sys, mem, from, to, len)
    }
}
#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::cpd::Cpd;
    use crate::domain::DomainSet;
    use crate::kernel_table::tests::kernel_table;
    use crate::layout::Layout;
    use crate::layout::Region;
    use crate::manager::RecycleRule;
    use crate::pid::PidMode;
    use crate::platform::Split;
    use crate::policy::DefaultPolicy;
    use crate::resolve::{Flushed, Resolution};
    use crate::space::tests::{mem as table_mem, pool, Mem};
    use mmu_armv5::maint::Arm926;
    use mmu_armv5::regs::{Cp15Event, Cp15Reg, MockCp15};
    use mmu_armv5::size::Page;
    use mmu_armv5::table::TablePool;
    use mmu_armv5::table::{TableKind as HwTableKind, TableRef};
    use mmu_armv5::Domain;
    use mmu_armv5::{Fault, FcsePid, PhysAddr};
    use std::vec::Vec;

    type Hw = Arm926<MockCp15>;
    pub(crate) type F = Fass<DefaultPolicy, 64, 40, 4>;
    pub(crate) type Sys<'m> = Split<Hw, TablePool<'m, 64>>;

    /// The 4 KiB pages of `[va, va + len)`, which the test knows are valid.
    pub(crate) fn pages(va: u32, len: u32) -> PageRange<Size4KiB, VirtAddr> {
        PageRange::from_bytes(VirtAddr::new(va), len).unwrap()
    }

    /// The 4 KiB page at `va`.
    pub(crate) fn page(va: u32) -> Page<Size4KiB, VirtAddr> {
        Page::from_start(VirtAddr::new(va)).unwrap()
    }

    /// The 4 KiB frame at `pa`.
    pub(crate) fn frame(pa: u32) -> Frame<Size4KiB> {
        Frame::from_start(PhysAddr::new(pa)).unwrap()
    }

    pub(crate) fn d(n: u8) -> Domain {
        Domain::new(n).unwrap()
    }

    pub(crate) fn setup(mem: &mut Mem, layout: Layout, reserved: DomainSet) -> (F, Sys<'_>) {
        let mut sys = Split::new(Arm926::new(MockCp15::arm926()), pool(mem));
        let cpd = Cpd::new(kernel_table(&mut sys, &layout));
        let f = F::new(cpd, reserved, DefaultPolicy::default()).unwrap();
        (f, sys)
    }

    pub(crate) fn map(f: &mut F, sys: &mut Sys<'_>, s: u16, va: u32, pa: u32) {
        f.map_page(
            sys,
            SpaceId(s),
            page(va),
            frame(pa),
            AccessPermission::ReadWrite,
            CachePolicy::WriteBack,
        )
        .unwrap();
    }

    fn one_pid_layout() -> Layout {
        Layout::new(
            FcsePid::new(1).unwrap(),
            FcsePid::new(1).unwrap(),
            Region::new(0x8000_0000, 1 << 30).unwrap(),
            Region::new(0xC000_0000, 1 << 30).unwrap(),
        )
        .unwrap()
    }

    #[test]
    fn steady_state_switch_is_exactly_one_dacr_and_one_fcseidr_write() {
        let mut mem = table_mem();
        let (mut f, mut sys) = setup(&mut mem, Layout::DEMO, DomainSet::EMPTY);
        let n = 15u16; // every free domain
        for s in 0..n {
            f.add_space(SpaceId(s)).unwrap();
            map(
                &mut f,
                &mut sys,
                s,
                0x8000,
                0x0010_0000 + u32::from(s) * 0x1000,
            );
        }
        for s in 0..n {
            f.switch_to(&mut sys, SpaceId(s)).unwrap();
            let r = f
                .resolve(&mut sys, Fsr::from_bits(0x005), Far::from_bits(0x8000))
                .unwrap();
            assert!(matches!(
                r,
                Resolution::Resolved {
                    flushed: Flushed::Nothing,
                    collided_with: None,
                    ..
                }
            ));
        }
        let before = f.stats();
        for _round in 0..3 {
            for s in 0..n {
                sys.hw.cp15_mut().clear();
                f.switch_to(&mut sys, SpaceId(s)).unwrap();
                let dom = f.domain_of(SpaceId(s)).unwrap().unwrap();
                let pid = f.pid_of(SpaceId(s)).unwrap();
                assert_eq!(
                    sys.hw.cp15().events(),
                    [
                        Cp15Event::Write(Cp15Reg::Dacr, f.dacr_of(SpaceId(s), dom).unwrap().bits()),
                        Cp15Event::Write(Cp15Reg::Fcseidr, pid.fcseidr_value()),
                    ]
                );
                // No fault: the CPD still holds the space's slot.
                assert!(matches!(
                    f.resolve(&mut sys, Fsr::from_bits(0x005), Far::from_bits(0x8000))
                        .unwrap(),
                    Resolution::NotFass(_)
                ));
            }
        }
        let delta = f.stats().since(&before);
        assert_eq!(delta.switches, 45);
        assert_eq!(delta.full_flushes, 0);
        assert_eq!(delta.tlb_only, 0);
        assert_eq!(delta.collisions, 0);
    }

    /// Regression (issue 26, item 8): the inherent `Fass::create_space(id)`
    /// hid the trait method, so `fass.create_space(&mut sys, id)` failed to
    /// compile (E0061). The inherent form is `add_space` now; both work on
    /// a `Fass`, and say the same.
    #[test]
    fn the_trait_and_inherent_forms_both_work_on_a_fass() {
        let mut mem = table_mem();
        let (mut f, mut sys) = setup(&mut mem, one_pid_layout(), DomainSet::EMPTY);
        f.create_space(&mut sys, SpaceId(0)).unwrap();
        f.add_space(SpaceId(1)).unwrap();
        assert_eq!(
            f.create_space(&mut sys, SpaceId(1)),
            Err(FassError::SpaceExists(SpaceId(1)))
        );
        assert_eq!(
            f.add_space(SpaceId(0)),
            Err(FassError::SpaceExists(SpaceId(0)))
        );
        f.destroy_space(&mut sys, SpaceId(0)).unwrap();
    }

    #[test]
    fn collisions_on_a_shared_pid_move_the_slot_and_flush_a_dirty_owner() {
        let mut mem = table_mem();
        let (mut f, mut sys) = setup(&mut mem, one_pid_layout(), DomainSet::EMPTY);
        f.add_space(SpaceId(0)).unwrap();
        f.add_space(SpaceId(1)).unwrap();
        assert_eq!(f.stats().pid_shares, 1);
        map(&mut f, &mut sys, 0, 0x8000, 0x0010_0000);
        map(&mut f, &mut sys, 1, 0x8000, 0x0020_0000);
        f.switch_to(&mut sys, SpaceId(0)).unwrap();
        let da = f.domain_of(SpaceId(0)).unwrap().unwrap();
        assert_eq!(
            f.resolve(&mut sys, Fsr::from_bits(0x005), Far::from_bits(0x8000))
                .unwrap(),
            Resolution::Resolved {
                slot: 0x20,
                collided_with: None,
                flushed: Flushed::Nothing
            }
        );
        f.switch_to(&mut sys, SpaceId(1)).unwrap();
        let db = f.domain_of(SpaceId(1)).unwrap().unwrap();
        sys.hw.cp15_mut().clear();
        // Hardware reports the MVA.
        let fsr = 0x009 | (u32::from(da.get()) << 4);
        assert_eq!(
            f.resolve(&mut sys, Fsr::from_bits(fsr), Far::from_bits(0x0200_8000))
                .unwrap(),
            Resolution::Resolved {
                slot: 0x20,
                collided_with: Some(da),
                flushed: Flushed::Full
            }
        );
        let ev: Vec<_> = sys.hw.cp15().events().to_vec();
        assert!(ev.contains(&Cp15Event::Op(mmu_armv5::regs::Cp15Op::InvalidateTlb, 0)));
        assert!(ev.contains(&Cp15Event::Op(mmu_armv5::regs::Cp15Op::InvalidateICache, 0)));
        assert_eq!(f.domains().slot_owner(0x20), Some(db));
        assert!(f.domains().is_dirty(db) && !f.domains().is_dirty(da));
        // QEMU reports the VA; A's domain is clean now: TLB only.
        f.switch_to(&mut sys, SpaceId(0)).unwrap();
        // Switching marked A dirty; B ran since the flush too, so it is dirty.
        let fsr = 0x009 | (u32::from(db.get()) << 4);
        assert_eq!(
            f.resolve(&mut sys, Fsr::from_bits(fsr), Far::from_bits(0x8000))
                .unwrap(),
            Resolution::Resolved {
                slot: 0x20,
                collided_with: Some(db),
                flushed: Flushed::Full
            }
        );
        let s = f.stats();
        assert_eq!((s.collisions, s.full_flushes, s.cpd_fills), (2, 2, 3));
    }

    #[test]
    fn clean_previous_owner_costs_a_tlb_invalidation_only() {
        use mmu_armv5::regs::Cp15Op;
        let mut mem = table_mem();
        let (mut f, mut sys) = setup(&mut mem, one_pid_layout(), DomainSet::EMPTY);
        for s in 0..3 {
            f.add_space(SpaceId(s)).unwrap();
            map(
                &mut f,
                &mut sys,
                s,
                0x8000,
                0x0010_0000 + u32::from(s) * 0x1000,
            );
        }
        map(&mut f, &mut sys, 2, 0x0030_0000, 0x0030_0000);
        f.switch_to(&mut sys, SpaceId(2)).unwrap();
        let _ = f
            .resolve(&mut sys, Fsr::from_bits(0x005), Far::from_bits(0x0030_0000))
            .unwrap();
        f.switch_to(&mut sys, SpaceId(0)).unwrap();
        let _ = f
            .resolve(&mut sys, Fsr::from_bits(0x005), Far::from_bits(0x8000))
            .unwrap();
        f.switch_to(&mut sys, SpaceId(1)).unwrap();
        let d0 = f.domain_of(SpaceId(0)).unwrap();
        let d2 = f.domain_of(SpaceId(2)).unwrap();
        let r = f
            .resolve(&mut sys, Fsr::from_bits(0x009), Far::from_bits(0x8000))
            .unwrap();
        assert_eq!(
            r,
            Resolution::Resolved {
                slot: 0x20,
                collided_with: d0,
                flushed: Flushed::Full
            }
        );
        // After that flush only space 1's domain is dirty; 2 is clean and owns 0x23.
        assert!(!f.domains().is_dirty(d2.unwrap()));
        map(&mut f, &mut sys, 1, 0x0030_0000, 0x0050_0000);
        let s0 = f.stats();
        sys.hw.cp15_mut().clear();
        let r = f
            .resolve(&mut sys, Fsr::from_bits(0x009), Far::from_bits(0x0030_0000))
            .unwrap();
        assert_eq!(
            r,
            Resolution::Resolved {
                slot: 0x23,
                collided_with: d2,
                flushed: Flushed::TlbOnly
            }
        );
        let ops: Vec<_> = sys
            .hw
            .cp15()
            .events()
            .iter()
            .filter(|e| {
                !matches!(
                    e,
                    Cp15Event::Op(Cp15Op::CleanDCacheLine | Cp15Op::DrainWriteBuffer, _)
                )
            })
            .copied()
            .collect();
        assert_eq!(ops, [Cp15Event::Op(Cp15Op::InvalidateTlb, 0)]);
        let s1 = f.stats().since(&s0);
        assert_eq!((s1.full_flushes, s1.tlb_only, s1.collisions), (0, 1, 1));
    }

    #[test]
    fn running_out_of_domains_recycles_never_the_current_or_kernel() {
        // Only domains 1 and 2 can be handed out.
        let reserved = DomainSet::ALL.without(d(1)).without(d(2));
        let mut mem = table_mem();
        let (f, mut sys) = setup(&mut mem, Layout::DEMO, reserved);
        let mut f = f.with_recycle_rule(RecycleRule::Conservative);
        for s in 0..3 {
            f.add_space(SpaceId(s)).unwrap();
        }
        f.switch_to(&mut sys, SpaceId(0)).unwrap();
        f.switch_to(&mut sys, SpaceId(1)).unwrap();
        f.switch_to(&mut sys, SpaceId(2)).unwrap();
        // Space 1 was current: space 0's (dirty) domain was taken.
        assert_eq!(f.domain_of(SpaceId(0)).unwrap(), None);
        assert!(f.domain_of(SpaceId(1)).unwrap().is_some());
        let s = f.stats();
        assert_eq!(
            (s.domain_allocs, s.recycles_dirty, s.full_flushes),
            (2, 1, 1)
        );
        if let Some(dom) = f.domain_of(SpaceId(2)).unwrap() {
            assert_ne!(dom, d(0));
        }
    }

    fn only_ops(sys: &Sys<'_>) -> Vec<Cp15Event> {
        use mmu_armv5::regs::Cp15Op;
        // CPD writes clean their table line and drain: not what is judged here.
        sys.hw
            .cp15()
            .events()
            .iter()
            .filter(|e| {
                !matches!(
                    e,
                    Cp15Event::Op(Cp15Op::CleanDCacheLine | Cp15Op::DrainWriteBuffer, _)
                )
            })
            .copied()
            .collect()
    }

    /// A full flush as [`only_ops`] shows it (its drain filtered out).
    fn full_flush_events() -> [Cp15Event; 3] {
        use mmu_armv5::regs::Cp15Op;
        [
            Cp15Event::TestClean {
                invalidate: true,
                clean: true,
            },
            Cp15Event::Op(Cp15Op::InvalidateICache, 0),
            Cp15Event::Op(Cp15Op::InvalidateTlb, 0),
        ]
    }

    /// `n` spaces on a manager with only the domains outside `reserved`,
    /// under `rule`, each with a page at 0x8000 (not faulted in).
    fn spaces_with_a_page(
        mem: &mut Mem,
        reserved: DomainSet,
        rule: RecycleRule,
        n: u16,
    ) -> (F, Sys<'_>) {
        let (f, mut sys) = setup(mem, Layout::DEMO, reserved);
        let mut f = f.with_recycle_rule(rule);
        for s in 0..n {
            f.add_space(SpaceId(s)).unwrap();
            map(
                &mut f,
                &mut sys,
                s,
                0x8000,
                0x0010_0000 + u32::from(s) * 0x1000,
            );
        }
        (f, sys)
    }

    /// Two usable domains; spaces 0, 1, 2 (PIDs 63, 62, 61) each map a low
    /// page at 0x8000 (plus `extra` for space 0); 0 and 1 run and fill
    /// their slot; then the switch to 2 must recycle space 0's dirty domain.
    /// Returns the CP15 events of that switch (without CPD line cleaning).
    fn recycle_space_0(
        mem: &mut Mem,
        rule: RecycleRule,
        extra: Option<u32>,
    ) -> (F, Sys<'_>, Vec<Cp15Event>) {
        let reserved = DomainSet::ALL.without(d(1)).without(d(2));
        let (mut f, mut sys) = spaces_with_a_page(mem, reserved, rule, 3);
        if let Some(va) = extra {
            map(&mut f, &mut sys, 0, va, 0x0020_0000);
        }
        for s in 0..2 {
            f.switch_to(&mut sys, SpaceId(s)).unwrap();
            assert!(matches!(
                f.resolve(&mut sys, Fsr::from_bits(0x005), Far::from_bits(0x8000))
                    .unwrap(),
                Resolution::Resolved {
                    flushed: Flushed::Nothing,
                    ..
                }
            ));
        }
        let d0 = f.domain_of(SpaceId(0)).unwrap().unwrap();
        assert!(f.domains().is_dirty(d0));
        sys.hw.cp15_mut().clear();
        f.switch_to(&mut sys, SpaceId(2)).unwrap();
        assert_eq!(f.domain_of(SpaceId(0)).unwrap(), None);
        assert_eq!(f.domain_of(SpaceId(2)).unwrap(), Some(d0));
        let ev = only_ops(&sys);
        (f, sys, ev)
    }

    fn switch_events(f: &F, s: u16) -> [Cp15Event; 2] {
        let dom = f.domain_of(SpaceId(s)).unwrap().unwrap();
        [
            Cp15Event::Write(Cp15Reg::Dacr, f.dacr_of(SpaceId(s), dom).unwrap().bits()),
            Cp15Event::Write(
                Cp15Reg::Fcseidr,
                f.pid_of(SpaceId(s)).unwrap().fcseidr_value(),
            ),
        ]
    }

    const SLOT_63: usize = 63 * 32; // space 0's slot of 0x8000 (PID 63)

    #[test]
    fn evicting_a_window_exclusive_dirty_domain_clears_its_slots_and_the_tlb_only() {
        use mmu_armv5::regs::Cp15Op;
        let mut mem = table_mem();
        let (f, sys, ev) = recycle_space_0(&mut mem, RecycleRule::ExclusiveWindows, None);
        let mut want = std::vec![Cp15Event::Op(Cp15Op::InvalidateTlb, 0)];
        want.extend(switch_events(&f, 2));
        assert_eq!(ev, want);
        assert!(!f.cpd.entry(&sys, SLOT_63).unwrap().is_valid());
        assert_eq!(f.domains().slot_owner(SLOT_63), None);
        let s = f.stats();
        assert_eq!(
            (
                s.recycles_exclusive,
                s.recycles_dirty,
                s.full_flushes,
                s.tlb_only
            ),
            (1, 0, 0, 1)
        );
        let p63 = FcsePid::new(63).unwrap();
        assert_eq!(
            f.window_lines().leftover(p63),
            crate::window::Leftover::One(SpaceId(0))
        );
        // The space that left the lines refills its own window without a flush.
        let (mut f, mut sys) = (f, sys);
        f.switch_to(&mut sys, SpaceId(0)).unwrap();
        assert!(matches!(
            f.resolve(&mut sys, Fsr::from_bits(0x005), Far::from_bits(0x8000))
                .unwrap(),
            Resolution::Resolved {
                slot: SLOT_63,
                collided_with: None,
                flushed: Flushed::Nothing
            }
        ));
        assert_eq!(f.stats().full_flushes, 0);
    }

    /// Three spaces with a page each that never faulted in, two domains:
    /// the switch to space 2 recycles a domain that owns no CPD slot.
    fn recycle_slotless(mem: &mut Mem, rule: RecycleRule) -> (F, Sys<'_>) {
        let reserved = DomainSet::ALL.without(d(1)).without(d(2));
        let (mut f, mut sys) = spaces_with_a_page(mem, reserved, rule, 3);
        for s in 0..2 {
            f.switch_to(&mut sys, SpaceId(s)).unwrap();
        }
        (f, sys)
    }

    #[test]
    fn recycling_a_domain_without_slots_invalidates_no_tlb() {
        // A dirty domain of a window-exclusive space: taken without a
        // flush, and without a TLB invalidation, as it owns no CPD slot
        // (nothing of it can be in the TLB).
        let mut mem = table_mem();
        let (mut f, mut sys) = recycle_slotless(&mut mem, RecycleRule::ExclusiveWindows);
        sys.hw.cp15_mut().clear();
        f.switch_to(&mut sys, SpaceId(2)).unwrap();
        assert_eq!(only_ops(&sys), switch_events(&f, 2));
        assert_eq!((f.stats().recycles_exclusive, f.stats().tlb_only), (1, 0));
    }

    #[test]
    fn recycling_a_clean_domain_without_slots_invalidates_no_tlb() {
        // Three domains, conservative rule. Spaces 0-2 run, space 3 takes
        // a dirty domain with a full flush, which leaves every domain but
        // the running one's clean; then space 0 takes a clean one that owns
        // no CPD slot: neither a flush nor a TLB invalidation.
        let mut mem = table_mem();
        let reserved = DomainSet::ALL.without(d(1)).without(d(2)).without(d(3));
        let (mut f, mut sys) = spaces_with_a_page(&mut mem, reserved, RecycleRule::Conservative, 4);
        for s in 0..4 {
            f.switch_to(&mut sys, SpaceId(s)).unwrap();
        }
        assert_eq!(f.stats().full_flushes, 1);
        let before = f.stats();
        sys.hw.cp15_mut().clear();
        f.switch_to(&mut sys, SpaceId(0)).unwrap();
        assert_eq!(only_ops(&sys), switch_events(&f, 0));
        let delta = f.stats().since(&before);
        assert_eq!(
            (delta.recycles_clean, delta.tlb_only, delta.full_flushes),
            (1, 0, 0)
        );
    }

    #[test]
    fn a_flush_free_victim_is_preferred_even_with_more_slots() {
        // Three domains. Space 0 is not window-exclusive (its one slot lies
        // outside its PID's window), space 1 is (two slots, both in its
        // window); both dirty. With space 2 running, space 3 needs a
        // domain: the fewest-slots policy takes space 1's, flush-free, over
        // space 0's, which has fewer slots but would cost a full flush.
        let mut mem = table_mem();
        let reserved = DomainSet::ALL.without(d(1)).without(d(2)).without(d(3));
        let (f, mut sys) = setup(&mut mem, Layout::DEMO, reserved);
        let mut f = f.with_recycle_rule(RecycleRule::ExclusiveWindows);
        for s in 0..4 {
            f.add_space(SpaceId(s)).unwrap();
        }
        let far = 0x0400_0000;
        assert_ne!(f.pid_of(SpaceId(0)).unwrap().get(), 2);
        map(&mut f, &mut sys, 0, far, 0x0010_0000);
        map(&mut f, &mut sys, 1, 0x8000, 0x0011_0000);
        map(&mut f, &mut sys, 1, 0x0010_0000, 0x0012_0000);
        let fill = |f: &mut F, sys: &mut Sys<'_>, va: u32| {
            assert!(matches!(
                f.resolve(sys, Fsr::from_bits(0x005), Far::from_bits(va))
                    .unwrap(),
                Resolution::Resolved {
                    flushed: Flushed::Nothing,
                    ..
                }
            ));
        };
        f.switch_to(&mut sys, SpaceId(0)).unwrap();
        fill(&mut f, &mut sys, far);
        f.switch_to(&mut sys, SpaceId(1)).unwrap();
        fill(&mut f, &mut sys, 0x8000);
        fill(&mut f, &mut sys, 0x0010_0000);
        f.switch_to(&mut sys, SpaceId(2)).unwrap();
        assert!(!f.is_window_exclusive(SpaceId(0)).unwrap());
        assert!(f.is_window_exclusive(SpaceId(1)).unwrap());
        let d1 = f.domain_of(SpaceId(1)).unwrap().unwrap();
        f.switch_to(&mut sys, SpaceId(3)).unwrap();
        assert_eq!(f.domain_of(SpaceId(3)).unwrap(), Some(d1));
        assert!(f.domain_of(SpaceId(0)).unwrap().is_some());
        let s = f.stats();
        assert_eq!((s.recycles_exclusive, s.full_flushes), (1, 0));
    }

    #[test]
    fn evicting_a_dirty_domain_flushes_unless_the_space_is_window_exclusive() {
        use mmu_armv5::regs::Cp15Op;
        // A fixed page above 32 MiB outside its window (in window 1).
        let mut mem = table_mem();
        let (f, _sys, ev) =
            recycle_space_0(&mut mem, RecycleRule::ExclusiveWindows, Some(0x0200_8000));
        assert!(!f.is_window_exclusive(SpaceId(0)).unwrap());
        assert!(f.is_window_exclusive(SpaceId(1)).unwrap());
        let mut want = full_flush_events().to_vec();
        want.extend(switch_events(&f, 2));
        assert_eq!(ev, want);
        let s = f.stats();
        assert_eq!(
            (s.recycles_exclusive, s.recycles_dirty, s.full_flushes),
            (0, 1, 1)
        );
        assert!(!f.window_lines().any());
        // The conservative rule flushes an exclusive space's dirty domain.
        let mut mem = table_mem();
        let (f, _sys, ev) = recycle_space_0(&mut mem, RecycleRule::Conservative, None);
        assert!(f.is_window_exclusive(SpaceId(0)).unwrap());
        let mut want = full_flush_events().to_vec();
        want.extend(switch_events(&f, 2));
        assert_eq!(ev, want);
        assert_eq!(
            (f.stats().recycles_dirty, f.stats().recycles_exclusive),
            (1, 0)
        );
        // A fixed page inside its own window keeps a space exclusive: it
        // is the window's own MVA space (it may not alias a mapped low page).
        let (f, _sys, ev) = recycle_space_0(
            &mut mem,
            RecycleRule::ExclusiveWindows,
            Some(63 << 25 | 0x0030_0000),
        );
        assert!(f.is_window_exclusive(SpaceId(0)).unwrap());
        assert_eq!(ev[0], Cp15Event::Op(Cp15Op::InvalidateTlb, 0));
        assert_eq!(f.stats().full_flushes, 0);
        // A shared PID is never exclusive.
        let mut mem = table_mem();
        let (mut f, _) = setup(&mut mem, one_pid_layout(), DomainSet::EMPTY);
        f.add_space(SpaceId(0)).unwrap();
        assert!(f.is_window_exclusive(SpaceId(0)).unwrap());
        f.add_space(SpaceId(1)).unwrap();
        assert!(!f.is_window_exclusive(SpaceId(0)).unwrap());
        assert!(!f.is_window_exclusive(SpaceId(1)).unwrap());
    }

    #[test]
    fn filling_a_slot_in_a_window_holding_another_spaces_lines_flushes_first() {
        let mut mem = table_mem();
        let (mut f, mut sys, _) = recycle_space_0(&mut mem, RecycleRule::ExclusiveWindows, None);
        // Space 2 (running) maps a fixed page at space 0's MVA.
        map(&mut f, &mut sys, 2, 63 << 25 | 0x8000, 0x0030_0000);
        sys.hw.cp15_mut().clear();
        let before = f.stats();
        assert_eq!(
            f.resolve(
                &mut sys,
                Fsr::from_bits(0x005),
                Far::from_bits(63 << 25 | 0x8000)
            )
            .unwrap(),
            Resolution::Resolved {
                slot: SLOT_63,
                collided_with: None,
                flushed: Flushed::Full
            }
        );
        assert_eq!(only_ops(&sys), full_flush_events());
        let s = f.stats().since(&before);
        assert_eq!(
            (s.full_flushes, s.window_flushes, s.collisions, s.cpd_fills),
            (1, 1, 1, 1)
        );
        assert!(!f.window_lines().any());
        // Space 0 coming back collides with space 2's (dirty) slot: the
        // ordinary rule, not the window guard.
        f.switch_to(&mut sys, SpaceId(0)).unwrap();
        let before = f.stats();
        let r = f
            .resolve(&mut sys, Fsr::from_bits(0x005), Far::from_bits(0x8000))
            .unwrap();
        assert!(matches!(
            r,
            Resolution::Resolved {
                slot: SLOT_63,
                collided_with: Some(_),
                flushed: Flushed::Full
            }
        ));
        let s = f.stats().since(&before);
        assert_eq!((s.full_flushes, s.window_flushes), (1, 0));
    }

    #[test]
    fn after_a_full_flush_the_same_fill_needs_no_flush() {
        let mut mem = table_mem();
        let (mut f, mut sys, _) = recycle_space_0(&mut mem, RecycleRule::ExclusiveWindows, None);
        map(&mut f, &mut sys, 2, 63 << 25 | 0x8000, 0x0030_0000);
        f.full_flush(&mut sys);
        assert!(!f.window_lines().any());
        sys.hw.cp15_mut().clear();
        let before = f.stats();
        assert_eq!(
            f.resolve(
                &mut sys,
                Fsr::from_bits(0x005),
                Far::from_bits(63 << 25 | 0x8000)
            )
            .unwrap(),
            Resolution::Resolved {
                slot: SLOT_63,
                collided_with: None,
                flushed: Flushed::Nothing
            }
        );
        assert_eq!(only_ops(&sys), []);
        let s = f.stats().since(&before);
        assert_eq!((s.full_flushes, s.window_flushes, s.collisions), (0, 0, 0));
    }

    #[test]
    fn destroying_a_space_flushes_only_if_its_left_lines_may_be_cached() {
        let mut mem = table_mem();
        let (mut f, mut sys, _) = recycle_space_0(&mut mem, RecycleRule::ExclusiveWindows, None);
        // Space 1 has lines in its dirty domain: destroyed with a flush.
        // Space 0 left lines in window 63: destroyed with a flush too,
        // unless a flush came first.
        sys.hw.cp15_mut().clear();
        f.destroy_space(&mut sys, SpaceId(0)).unwrap();
        assert_eq!(only_ops(&sys), full_flush_events());
        assert_eq!(f.stats().full_flushes, 1);
        // A space that never ran and holds no domain: nothing to flush.
        f.add_space(SpaceId(5)).unwrap();
        sys.hw.cp15_mut().clear();
        f.destroy_space(&mut sys, SpaceId(5)).unwrap();
        assert_eq!(only_ops(&sys), []);
        assert_eq!(f.stats().full_flushes, 1);
    }

    #[test]
    fn other_faults_are_not_fass_faults() {
        let mut mem = table_mem();
        let (mut f, mut sys) = setup(&mut mem, Layout::DEMO, DomainSet::EMPTY);
        // No space runs: none is reported running, not even the one whose
        // number is the "nobody" marker's.
        assert!(!f.runs(SpaceId(0)) && !f.runs(SpaceId(u16::MAX)));
        f.add_space(SpaceId(0)).unwrap();
        map(&mut f, &mut sys, 0, 0x8000, 0x0010_0000);
        f.switch_to(&mut sys, SpaceId(0)).unwrap();
        assert_eq!(
            f.resolve(&mut sys, Fsr::from_bits(0x00f), Far::from_bits(0x8000))
                .unwrap(),
            Resolution::NotFass(Fault::from_fsr(0x00f))
        );
        assert_eq!(
            f.resolve(&mut sys, Fsr::from_bits(0x005), Far::from_bits(0x0100_0000))
                .unwrap(),
            Resolution::NotFass(Fault::from_fsr(0x005))
        );
        assert_eq!(
            f.map_page(
                &mut sys,
                SpaceId(0),
                page(0xC000_0000),
                frame(0),
                AccessPermission::ReadWrite,
                CachePolicy::WriteBack
            ),
            Err(FassError::NotPrivate(VirtAddr::new(0xC000_0000)))
        );
        assert_eq!(
            f.add_space(SpaceId(0)),
            Err(FassError::SpaceExists(SpaceId(0)))
        );
        assert_eq!(
            f.add_space(SpaceId(64)),
            Err(FassError::SpaceIdOutOfRange(SpaceId(64)))
        );
        assert_eq!(
            f.switch_to(&mut sys, SpaceId(9)),
            Err(FassError::UnknownSpace(SpaceId(9)))
        );
    }

    #[test]
    fn unmapping_the_last_page_of_an_owned_slot_clears_the_cpd_copy() {
        let mut mem = table_mem();
        let (mut f, mut sys) = setup(&mut mem, Layout::DEMO, DomainSet::EMPTY);
        f.add_space(SpaceId(0)).unwrap();
        map(&mut f, &mut sys, 0, 0x8000, 0x0010_0000);
        f.switch_to(&mut sys, SpaceId(0)).unwrap();
        let _ = f
            .resolve(&mut sys, Fsr::from_bits(0x005), Far::from_bits(0x8000))
            .unwrap();
        let dom = f.domain_of(SpaceId(0)).unwrap().unwrap();
        let slot = VirtAddr::new(0x8000)
            .to_mva(f.pid_of(SpaceId(0)).unwrap())
            .l1_index();
        assert_eq!(f.domains().slot_owner(slot), Some(dom));
        f.unmap_page(&mut sys, SpaceId(0), page(0x8000)).unwrap();
        assert_eq!(f.domains().slot_owner(slot), None);
        assert!(!f.cpd.entry(&sys, slot).unwrap().is_valid());
        f.destroy_space(&mut sys, SpaceId(0)).unwrap();
        assert_eq!(
            f.domain_of(SpaceId(0)),
            Err(FassError::UnknownSpace(SpaceId(0)))
        );
    }

    pub(crate) fn classic(
        mem: &mut Mem,
        kind: crate::classic::ClassicKind,
    ) -> (TableSwitch<8, 2>, Sys<'_>) {
        classic_in(mem, kind, Layout::DEMO)
    }

    /// A classic strategy of `kind` in `layout`, on the recording mock.
    pub(crate) fn classic_in(
        mem: &mut Mem,
        kind: crate::classic::ClassicKind,
        layout: Layout,
    ) -> (TableSwitch<8, 2>, Sys<'_>) {
        let mut sys = Split::new(Arm926::new(MockCp15::arm926()), pool(mem));
        let t = TableSwitch::new(kind, d(1), kernel_table(&mut sys, &layout));
        (t, sys)
    }

    /// A segment specification for the trait tests.
    fn seg_spec() -> crate::segment::SegmentSpec {
        crate::segment::SegmentSpec {
            base: VirtAddr::new(0x8000_0000),
            pa: PhysAddr::new(0x0010_0000),
            size: 1 << 20,
            ap: AccessPermission::ReadWrite,
            cache: CachePolicy::WriteBack,
        }
    }

    /// What every strategy answers through the trait: the running space,
    /// the generation its own accessor gives, and a destroyed segment is
    /// gone (its identifier can be defined again).
    fn trait_contract<T: SwitchStrategy>(
        t: &mut T,
        sys: &mut Sys<'_>,
        inherent_generation: impl Fn(&T) -> u64,
    ) {
        for s in 0..3 {
            t.create_space(sys, SpaceId(s)).unwrap();
        }
        assert_eq!(SwitchStrategy::current(t), None);
        // Round robin: under one shared PID, or with two domains for three
        // spaces, switches flush or recycle and move the generation past 1.
        for round in 0..3 {
            for s in 0..3 {
                t.switch_to(sys, SpaceId(s)).unwrap();
                assert_eq!(
                    SwitchStrategy::current(t),
                    Some(SpaceId(s)),
                    "round {round}"
                );
            }
        }
        let g = SwitchStrategy::generation(t);
        assert_eq!(g, inherent_generation(t));
        assert!(g > 1, "generation {g}");
        let id = crate::id::SegmentId(0);
        t.create_segment(id, seg_spec()).unwrap();
        assert_eq!(
            t.create_segment(id, seg_spec()),
            Err(FassError::Segment(crate::segment::SegmentError::Exists(id)))
        );
        SwitchStrategy::destroy_segment(t, id).unwrap();
        t.create_segment(id, seg_spec()).unwrap();
    }

    #[test]
    fn fass_answers_the_strategy_trait() {
        let mut mem = table_mem();
        // Two free domains for three spaces: switches recycle.
        let reserved = DomainSet::ALL.without(d(1)).without(d(2));
        let (mut f, mut sys) = setup(&mut mem, Layout::DEMO, reserved);
        trait_contract(&mut f, &mut sys, |f| f.generation());
    }

    #[test]
    fn table_strategies_answer_the_strategy_trait() {
        let mut mem = table_mem();
        let (mut t, mut sys) = classic_in(
            &mut mem,
            crate::classic::ClassicKind::Fcse(PidMode::BestEffort),
            one_pid_layout(),
        );
        trait_contract(&mut t, &mut sys, |t| t.generation());
    }

    #[test]
    fn fcse_guaranteed_switch_is_ttbr_tlb_pid_and_never_a_flush() {
        use crate::pid::PidMode;
        use mmu_armv5::regs::Cp15Op;
        let mut mem = table_mem();
        let (mut t, mut sys) = classic(
            &mut mem,
            crate::classic::ClassicKind::Fcse(PidMode::Guaranteed),
        );
        for s in 0..3 {
            t.create_space(&mut sys, SpaceId(s)).unwrap();
        }
        for round in 0..3 {
            for s in 0..3 {
                sys.hw.cp15_mut().clear();
                t.switch_to(&mut sys, SpaceId(s)).unwrap();
                assert_eq!(
                    sys.hw.cp15().events(),
                    [
                        Cp15Event::Write(Cp15Reg::Ttbr, t.root_of(SpaceId(s)).unwrap().as_u32()),
                        Cp15Event::Op(Cp15Op::InvalidateTlb, 0),
                        Cp15Event::Write(
                            Cp15Reg::Fcseidr,
                            t.pid_of(SpaceId(s)).unwrap().fcseidr_value()
                        ),
                    ],
                    "round {round} space {s}"
                );
            }
        }
        assert_eq!(t.stats().full_flushes, 0);
        assert_eq!(t.stats().switches, 9);
        // Above 32 MiB is refused in guaranteed mode.
        assert_eq!(
            t.map_pages(
                &mut sys,
                SpaceId(0),
                pages(0x0200_0000, 0x1000),
                frame(0x0030_0000),
                AccessPermission::ReadWrite,
                CachePolicy::WriteBack
            ),
            Err(FassError::Pid(crate::pid::PidError::LargeNotSupported))
        );
        // So is a range whose last page crosses 32 MiB, not one that ends there.
        let (ap, cache) = (AccessPermission::ReadWrite, CachePolicy::WriteBack);
        assert_eq!(
            t.map_pages(
                &mut sys,
                SpaceId(0),
                pages(0x01FF_F000, 0x2000),
                frame(0x0030_0000),
                ap,
                cache
            ),
            Err(FassError::Pid(crate::pid::PidError::LargeNotSupported))
        );
        t.map_pages(
            &mut sys,
            SpaceId(0),
            pages(0x01FF_E000, 0x2000),
            frame(0x0030_0000),
            ap,
            cache,
        )
        .unwrap();
        // Frames reaching past 4 GiB are refused before anything is mapped.
        assert_eq!(
            t.map_pages(
                &mut sys,
                SpaceId(1),
                pages(0x8000, 0x2000),
                frame(0xFFFF_F000),
                ap,
                cache
            ),
            Err(FassError::Addr(mmu_armv5::AddrError::RangeWraps {
                start: 0xFFFF_F000,
                count: 2
            }))
        );
        t.map_pages(
            &mut sys,
            SpaceId(1),
            pages(0x8000, 0x1000),
            frame(0xFFFF_F000),
            ap,
            cache,
        )
        .unwrap();
    }

    /// The kernel-region entries of the table at `root` equal the kernel
    /// table's, slot by slot.
    fn holds_kernel_entries(t: &TableSwitch<8, 2>, sys: &Sys<'_>, root: PhysAddr) -> bool {
        let k = t.kernel.table();
        let r = TableRef::new(HwTableKind::L1, root).unwrap();
        Layout::DEMO
            .kernel()
            .slots()
            .all(|s| k.read(sys, s).unwrap() == r.read(sys, s).unwrap())
    }

    #[test]
    fn every_table_a_classic_strategy_loads_holds_the_kernels_entries() {
        use crate::classic::ClassicKind as Kind;
        for kind in [
            Kind::Naive,
            Kind::Fcse(PidMode::Guaranteed),
            Kind::Fcse(PidMode::BestEffort),
        ] {
            let mut mem = table_mem();
            let (mut t, mut sys) = classic(&mut mem, kind);
            // A second kernel entry, so a copy of only the first would show.
            let k = t.kernel.table();
            let section = k.read(&sys, 0xC00).unwrap() + (1 << 20);
            // SAFETY: the test's kernel table, managed by no `PageTable`: a
            // section entry, no table link.
            unsafe { k.write(&sys, 0xF00, section) }.unwrap();
            for s in 0..3 {
                t.create_space(&mut sys, SpaceId(s)).unwrap();
                map_table(&mut t, &mut sys, s, 0x8000);
            }
            if kind == Kind::Fcse(PidMode::BestEffort) {
                // Grows large: its low entries move to window 0.
                map_table(&mut t, &mut sys, 1, 0x0400_0000);
            }
            for s in 0..3 {
                t.switch_to(&mut sys, SpaceId(s)).unwrap();
                let ttbr = sys.hw.cp15().register(Cp15Reg::Ttbr);
                assert_eq!(ttbr, t.root_of(SpaceId(s)).unwrap().as_u32());
                assert!(
                    holds_kernel_entries(&t, &sys, PhysAddr::new(ttbr)),
                    "{kind:?} space {s}"
                );
            }
            // Destroying the running space loads the kernel's own table.
            t.destroy_space(&mut sys, SpaceId(2)).unwrap();
            assert_eq!(
                sys.hw.cp15().register(Cp15Reg::Ttbr),
                t.kernel.root().as_u32()
            );
        }
    }

    pub(crate) fn map_table(t: &mut TableSwitch<8, 2>, sys: &mut Sys<'_>, s: u16, va: u32) {
        t.map_pages(
            sys,
            SpaceId(s),
            pages(va, 0x1000),
            frame(0x0030_0000 + u32::from(s) * 0x1000),
            AccessPermission::ReadWrite,
            CachePolicy::WriteBack,
        )
        .unwrap();
    }

    #[test]
    fn naive_switch_flushes_caches_then_loads_ttbr_and_invalidates_tlb() {
        use mmu_armv5::regs::Cp15Op;
        let mut mem = table_mem();
        let (mut t, mut sys) = classic(&mut mem, crate::classic::ClassicKind::Naive);
        t.create_space(&mut sys, SpaceId(0)).unwrap();
        t.create_space(&mut sys, SpaceId(1)).unwrap();
        t.switch_to(&mut sys, SpaceId(0)).unwrap();
        sys.hw.cp15_mut().clear();
        t.switch_to(&mut sys, SpaceId(1)).unwrap();
        assert_eq!(
            sys.hw.cp15().events(),
            [
                Cp15Event::TestClean {
                    invalidate: true,
                    clean: true
                },
                Cp15Event::Op(Cp15Op::DrainWriteBuffer, 0),
                Cp15Event::Op(Cp15Op::InvalidateICache, 0),
                Cp15Event::Write(Cp15Reg::Ttbr, t.root_of(SpaceId(1)).unwrap().as_u32()),
                Cp15Event::Op(Cp15Op::InvalidateTlb, 0),
            ]
        );
        // Switching to the running space does nothing.
        sys.hw.cp15_mut().clear();
        t.switch_to(&mut sys, SpaceId(1)).unwrap();
        assert!(sys.hw.cp15().events().is_empty());
        assert_eq!((t.stats().switches, t.stats().full_flushes), (2, 2));
        // Manager access needs a per-segment domain: refused here.
        t.create_segment(
            crate::id::SegmentId(0),
            crate::segment::SegmentSpec {
                base: VirtAddr::new(0x8000_0000),
                pa: PhysAddr::new(0x0010_0000),
                size: 1 << 20,
                ap: AccessPermission::ReadWrite,
                cache: CachePolicy::WriteBack,
            },
        )
        .unwrap();
        assert_eq!(
            t.map_segment(
                &mut sys,
                SpaceId(1),
                crate::id::SegmentId(0),
                VirtAddr::new(0x8000_0000),
                SegmentAccess::Manager
            ),
            Err(FassError::Segment(
                crate::segment::SegmentError::ManagerUnsupported(crate::id::SegmentId(0))
            ))
        );
    }
}
