//! FASS fault resolution: lazy CPD fills and collisions.
//!
//! A translation or domain fault (section or page level) on a slot the
//! current space's own directory maps, whose CPD entry is not the space's,
//! is a FASS fault: the CPD slot is
//! empty (fill it) or tagged with another domain (a collision: move the
//! slot, retag it; flush caches and TLB if the previous owner's domain is
//! dirty, otherwise invalidate the TLB only). Anything else is handed back
//! to the kernel decoded.
//!
//! A fault in a shared segment's slot that the current space maps is filled
//! with the segment's section entry in the segment's domain: every sharer
//! then uses that one entry (and the TLB entries walked from it).
//!
//! The window guard: a domain recycled without a flush
//! ([`RecycleRule::ExclusiveWindows`](crate::manager::RecycleRule)) leaves
//! its owner's lines at MVAs of the owner's FCSE window, recorded in
//! [`WindowLines`](crate::window::WindowLines). Before a fill makes a slot
//! of that window reachable for any other space (a fixed page of another
//! space, a space given the same PID later), the caches are flushed
//! ([`Flushed::Full`], counted as a collision and a
//! [`Event::WindowFlush`]). The space that left the lines may refill its
//! own window without a flush: they are its own, still consistent with its
//! mappings.
//!
//! The fault address may be the MVA (hardware) or the VA (QEMU, under
//! FCSE): an address below 32 MiB is taken as a VA of the current PID.

use crate::error::FassError;
use crate::id::SpaceId;
use crate::layout::RegionKind;
use crate::manager::{Fass, HotDir};
use crate::platform::Platform;
use crate::policy::VictimPolicy;
use crate::stats::Event;
use crate::window::window_of_slot;
use mmu_armv5::addr::FCSE_WINDOW_SIZE;
use mmu_armv5::descriptor::{L1Descriptor, L1Encoding};
use mmu_armv5::maint::CacheMaintenance;
use mmu_armv5::regs::{Dacr, DomainAccess, Far, Fsr};
use mmu_armv5::{Domain, Fault, VirtAddr};

/// What resolving a FASS fault flushed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Flushed {
    /// Nothing: an empty CPD slot was filled.
    Nothing,
    /// The TLB only: the slot's previous owner was clean.
    TlbOnly,
    /// D-cache clean+invalidate, I-cache and TLB invalidation: the previous owner was dirty.
    Full,
}

/// The outcome of [`Fass::resolve`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[must_use]
pub enum Resolution {
    /// The CPD now holds the current space's entry; retry the access.
    Resolved {
        /// The first-level slot filled.
        slot: usize,
        /// The domain that owned it before, on a collision.
        collided_with: Option<Domain>,
        /// What was flushed.
        flushed: Flushed,
    },
    /// Not a FASS fault: the kernel handles it.
    NotFass(Fault),
}

/// The CPD word of the coarse-table entry `word` (from a space directory)
/// tagged with domain `d` in `encoding`: the domain in bits [8:5] and the
/// encoding's bit 4, exactly what [`L1Descriptor::encode`] makes of it
/// (checked in debug builds); every CPD write goes through that encoding,
/// so raw equality is descriptor equality.
#[inline]
pub(crate) fn coarse_entry(word: u32, d: Domain, encoding: L1Encoding) -> u32 {
    let bit4 = match encoding {
        L1Encoding::Arm9 => 1 << 4,
        L1Encoding::XScale => 0,
    };
    let want = (word & 0xFFFF_FE00) | (u32::from(d.get()) << 5) | bit4 | 0b01;
    debug_assert_eq!(
        want,
        L1Descriptor::from_bits(word)
            .with_domain(d)
            .encode(encoding)
    );
    want
}

impl<P: VictimPolicy, const SPACES: usize, const SLOTS: usize, const SEGMENTS: usize>
    Fass<P, SPACES, SLOTS, SEGMENTS>
{
    /// Resolves a data or prefetch abort with status `fsr` at fault address `far`.
    pub fn resolve<S: Platform + ?Sized>(
        &mut self,
        sys: &mut S,
        fsr: Fsr,
        far: Far,
    ) -> Result<Resolution, FassError> {
        if let Some(r) = self.resolve_private(sys, fsr, far) {
            return r;
        }
        self.resolve_general(sys, fsr, far)
    }

    /// The fast path of [`Fass::resolve`]: a section or page, translation
    /// or domain fault in a slot of the current space's own directory that
    /// holds a coarse table (every private mapping is one). Works on raw
    /// words: the wanted CPD word is the directory's with the space's domain
    /// in bits [8:5] and the encoding's bit 4, exactly what
    /// [`L1Descriptor::encode`] makes of it (checked in debug builds), and
    /// every CPD write goes through that encoding, so raw equality is
    /// descriptor equality. `None`: not such a fault, take the general path
    /// (shared segments, other descriptor kinds, anything to hand back).
    #[inline]
    fn resolve_private<S: Platform + ?Sized>(
        &mut self,
        sys: &mut S,
        fsr: Fsr,
        far: Far,
    ) -> Option<Result<Resolution, FassError>> {
        if !fsr.is_lazy_fill_candidate() {
            return None;
        }
        let cur = self.current?;
        let st = self.spaces.get(usize::from(cur.0))?.as_ref()?;
        let d = st.domain?;
        let mva = VirtAddr::new(far.bits()).to_mva(st.pid.pid());
        let slot = mva.l1_index();
        let word = st.dir.raw(slot)?;
        if word & 3 != 0b01 {
            return None;
        }
        let want = coarse_entry(word, d, self.cpd.encoding());
        match self.cpd.raw(&*sys, slot) {
            Err(e) => return Some(Err(e.into())),
            Ok(w) if w == want => return Some(Ok(Resolution::NotFass(fsr.fault()))),
            Ok(_) => {}
        }
        Some(self.fill(sys, slot, d, want, Some(cur)))
    }

    /// The common case of [`Fass::resolve`], specialised for a kernel's
    /// abort path: a section or page, translation or domain fault of the
    /// current space in a slot of its own directory that holds a coarse
    /// table (every private mapping is one), whose CPD slot is empty or
    /// tagged with another domain that is **clean**, in an FCSE window no
    /// recycled domain of another space left lines in. Then nothing needs
    /// flushing: the slot is rewritten with the space's entry (tagged with
    /// its domain), the entry's D-cache line cleaned and the write buffer
    /// drained, the TLB invalidated if the slot had an owner (one
    /// operation), and the slot's ownership, the dirty mask and the
    /// counters updated exactly as [`Fass::resolve`] would (the counters
    /// once, in [`Fass::fast_faults`], which [`Fass::stats`] folds into the
    /// same [`Stats`](crate::Stats) counts): the answer is
    /// [`Resolution::Resolved`] with [`Flushed::TlbOnly`] (a collision) or
    /// [`Flushed::Nothing`] (a fill).
    ///
    /// `None` for everything else, with nothing changed: the caller then
    /// calls [`Fass::resolve`] (a dirty previous owner, lines left in the
    /// window, shared segments, genuine faults, a [`Cpd`](crate::Cpd) that
    /// was not [pinned](crate::Cpd::pin), no current space).
    ///
    /// Works on raw words through the pinned CPD, so it needs only cache
    /// maintenance from the platform, no table allocator. It never changes
    /// [`Fass::generation`] (no domain changes hands, nothing is flushed).
    /// The current space is the one [`Fass`] last switched to (or was told
    /// of with [`Fass::note_switched`]); what it needs of it (domain, PID)
    /// is kept at hand for it on every switch ([`Fass::runs`] tells whether
    /// a space is that one).
    ///
    /// Always inlined: a kernel's abort path calls it once, and its answer
    /// is then decoded in registers, in the caller's one frame.
    #[inline(always)]
    pub fn resolve_fast<S: CacheMaintenance + ?Sized>(
        &mut self,
        sys: &mut S,
        fsr: Fsr,
        far: Far,
    ) -> Option<Resolution> {
        if !fsr.is_lazy_fill_candidate() {
            return None;
        }
        // The current space, its domain and PID from the hot record, not
        // looked up (see `Hot`); checked against the tables in debug builds.
        let hot = self.hot;
        // Any space index fits in 16 bits; `Hot::NONE`'s (`u32::MAX`) is
        // no index and is declined here, so the domain of a current space
        // needs no check (a `Domain`, below 16, as `Hot` was made of it).
        if hot.space as usize >= SPACES {
            return None;
        }
        let cur = SpaceId(hot.space as u16);
        debug_assert_eq!(hot, self.computed_hot());
        debug_assert!(hot.domain < 16);
        let d = Domain::new(hot.domain & 0xF).ok()?;
        let far = far.bits();
        let mva = if far < FCSE_WINDOW_SIZE {
            far | hot.pid_bits
        } else {
            far
        };
        let slot = (mva >> 20) as usize;
        // The flush checks first: a collision that needs one is declined
        // before the directory is searched.
        // A slot `d` owns already holds its entry, or is left to the
        // general path (nothing to move).
        let prev = self.domains.slot_owner(slot);
        if prev == Some(d)
            || prev.is_some_and(|o| self.domains.is_dirty(o))
            || window_of_slot(slot).is_some_and(|w| self.windows.may_hold_other_than(w, Some(cur)))
        {
            return None;
        }
        // The directory entry: the one used last if it is this space's for
        // this slot (see `HotDir`), otherwise looked up (and kept).
        let hd = *self.hot_dirs.get(usize::from(cur.0))?;
        let word = if hd.slot == slot as u32 {
            debug_assert_eq!(
                self.space(cur).ok().and_then(|st| st.dir.raw(slot)),
                Some(hd.word),
                "stale directory entry in the hot record"
            );
            hd.word
        } else {
            let st = self.spaces.get_mut(usize::from(cur.0))?.as_mut()?;
            let (i, word) = st.dir.raw_near(st.fast_hint, slot)?;
            if word & 3 != 0b01 {
                return None;
            }
            st.fast_hint = i;
            if let Some(h) = self.hot_dirs.get_mut(usize::from(cur.0)) {
                *h = HotDir {
                    slot: slot as u32,
                    word,
                };
            }
            word
        };
        let want = (word & 0xFFFF_FE00) | hot.tag;
        debug_assert_eq!(want, coarse_entry(word, d, self.cpd.encoding()));
        if self.cpd.read_pinned(slot)? == want {
            // A genuine fault: the general path hands it back.
            return None;
        }
        // As in `fill`: the new entry first, then the TLB.
        self.cpd.write_pinned(sys, slot, want);
        let flushed = if prev.is_some() {
            sys.invalidate_tlb();
            Flushed::TlbOnly
        } else {
            Flushed::Nothing
        };
        // `d` is owned (the current space holds it), `prev` (not `d`)
        // owned the slot.
        self.domains.move_slot(prev, d, slot);
        self.domains.mark_dirty(Dacr::only(d, DomainAccess::Client));
        // Counted once (a collision, its TLB-only invalidation and the CPD
        // fill, or a fill), folded into `Stats` when read. Statuses 0x5/0x7
        // (translation) and 0x9/0xB (domain) only: bit 3 tells them apart.
        let domain_fault = fsr.bits() & 0b1000 != 0;
        debug_assert_eq!(domain_fault, fsr.is_domain_fault());
        self.stats.fast.record(prev.is_some(), domain_fault);
        Some(Resolution::Resolved {
            slot,
            collided_with: prev,
            flushed,
        })
    }

    /// Eager re-link: after `id` was given domain `d` (a switch to a space
    /// that held none, the domain recycled from another), writes every coarse-table entry of its directory
    /// whose CPD slot is empty into the CPD, tagged with `d`, instead of
    /// leaving each to a translation fault on the way back in (a fault is
    /// a full exception round trip; a fill here is a word written, its
    /// D-cache line cleaned and the write buffer drained). Returns the
    /// slots filled.
    ///
    /// Only what the lazy path would fill without any maintenance beyond
    /// the entry's line: a slot no domain owns whose CPD word is a fault
    /// entry, in an FCSE window no recycled domain of another space left
    /// lines in (those stay to the fault, which flushes first). An empty
    /// slot needs no TLB invalidation: a translation fault is never held
    /// in the TLB (ARM926EJ-S, SA-1110 and PXA255 alike), and every
    /// clearing of a slot that held an entry was followed by one (the
    /// eviction's, before this call). Slots held by another domain (a
    /// collision) are left to the fault path too: moving them would cost
    /// a TLB invalidation for a slot `id` may not touch.
    ///
    /// Needs the [pinned](crate::Cpd::pin) CPD; fills nothing otherwise.
    /// Changes no generation: the CPD slots `d` owns grow, nothing else.
    pub(crate) fn relink<S: CacheMaintenance + ?Sized>(
        &mut self,
        sys: &mut S,
        id: SpaceId,
        d: Domain,
    ) -> u32 {
        if !self.cpd.is_pinned() {
            return 0;
        }
        let Some(st) = self.spaces.get(usize::from(id.0)).and_then(|s| s.as_ref()) else {
            return 0;
        };
        let tag = (u32::from(d.get()) << 5) | self.tag_base;
        let mut filled = 0;
        for &(k, word) in st.dir.raw_entries() {
            let slot = usize::from(k);
            if word & 3 != 0b01
                || self.domains.slot_owner(slot).is_some()
                || window_of_slot(slot)
                    .is_some_and(|w| self.windows.may_hold_other_than(w, Some(id)))
            {
                continue;
            }
            match self.cpd.read_pinned(slot) {
                Some(w) if w & 3 == 0 => {}
                _ => continue,
            }
            let want = (word & 0xFFFF_FE00) | tag;
            debug_assert_eq!(want, coarse_entry(word, d, self.cpd.encoding()));
            self.cpd.write_pinned(sys, slot, want);
            self.domains.move_slot(None, d, slot);
            self.stats.record(Event::CpdFill);
            filled += 1;
        }
        filled
    }

    fn resolve_general<S: Platform + ?Sized>(
        &mut self,
        sys: &mut S,
        fsr: Fsr,
        far: Far,
    ) -> Result<Resolution, FassError> {
        let fault = fsr.fault();
        // Section faults come from an empty or foreign CPD slot; a page
        // translation fault too, when the slot holds another space's coarse
        // table lacking that page (the walk reports it before any domain
        // check). The comparison with the wanted entry below tells them
        // from genuine faults.
        if !fsr.is_lazy_fill_candidate() {
            return Ok(Resolution::NotFass(fault));
        }
        let Some(cur) = self.current else {
            return Ok(Resolution::NotFass(fault));
        };
        let st = self.space(cur)?;
        // Relocated below 32 MiB only (`to_mva` leaves the rest as it is).
        let mva = VirtAddr::new(far.bits()).to_mva(st.pid.pid());
        let slot = mva.l1_index();
        let shared = self.layout.classify(mva) == RegionKind::Shared;
        let wanted = if shared {
            self.segments
                .at_slot(slot)
                .filter(|(id, _)| st.segs.contains(*id))
                .and_then(|(_, g)| Some((g.domain()?, g)))
                .and_then(|(d, g)| Some((d, g.section(slot, d)?)))
        } else {
            let desc = st.dir.entry(slot);
            st.domain
                .filter(|_| desc.is_valid())
                .map(|d| (d, desc.with_domain(d)))
        };
        let Some((d, want)) = wanted else {
            return Ok(Resolution::NotFass(fault));
        };
        if self.cpd.entry(&*sys, slot)? == want {
            return Ok(Resolution::NotFass(fault));
        }
        let filler = if shared { None } else { Some(cur) };
        let raw = want.encode(self.cpd.encoding());
        self.fill(sys, slot, d, raw, filler)
    }

    /// Writes `want` (a descriptor in the CPD's encoding, tagged `d`, on
    /// behalf of space `filler`, or of a
    /// segment if `None`) into CPD slot `slot`, evicting the slot's previous
    /// owner with the flush its dirty state requires, and flushing anyway if
    /// the slot's FCSE window may hold lines another space's recycled
    /// domain left there.
    pub(crate) fn fill<S: Platform + ?Sized>(
        &mut self,
        sys: &mut S,
        slot: usize,
        d: Domain,
        want: u32,
        filler: Option<SpaceId>,
    ) -> Result<Resolution, FassError> {
        let prev = self.domains.slot_owner(slot).filter(|o| *o != d);
        let left_lines =
            window_of_slot(slot).is_some_and(|w| self.windows.may_hold_other_than(w, filler));
        // Write the new entry before flushing, so no walk can refetch the
        // old one after the TLB invalidation.
        self.cpd.write_raw(sys, slot, want)?;
        if let Some(o) = prev {
            self.domains.release_slot(o, slot);
        }
        let prev_dirty = prev.is_some_and(|o| self.domains.is_dirty(o));
        if prev.is_some() || left_lines {
            self.stats.record(Event::Collision);
        }
        let flushed = if prev_dirty || left_lines {
            if !prev_dirty {
                self.stats.record(Event::WindowFlush);
            }
            #[cfg(feature = "cache-check")]
            if !prev_dirty && self.skip_recycle_clean {
                // The deferred clean of the lines a recycled domain left.
                self.full_flush(&mut crate::omit::SkipClean(sys));
            } else {
                self.full_flush(sys);
            }
            #[cfg(not(feature = "cache-check"))]
            self.full_flush(sys);
            Flushed::Full
        } else if prev.is_some() {
            sys.invalidate_tlb();
            self.stats.record(Event::TlbOnlyInvalidation);
            Flushed::TlbOnly
        } else {
            Flushed::Nothing
        };
        self.domains.claim_slot(d, slot)?;
        self.domains.mark_dirty(Dacr::only(d, DomainAccess::Client));
        self.stats.record(Event::CpdFill);
        Ok(Resolution::Resolved {
            slot,
            collided_with: prev,
            flushed,
        })
    }
}
