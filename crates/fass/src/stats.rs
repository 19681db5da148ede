//! Event counters: what the switching and fault code did, for benchmarks
//! and for tests that assert "no flush happened".

/// One countable event.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Event {
    /// A context switch.
    Switch,
    /// A free domain was allocated.
    DomainAllocated,
    /// A clean domain was taken from its owner (no cache flush needed).
    DomainRecycledClean,
    /// A dirty domain was taken from its owner (cache flush needed).
    DomainRecycledDirty,
    /// A full D-cache clean+invalidate, I-cache and TLB invalidation.
    FullFlush,
    /// A TLB invalidation without any cache flush.
    TlbOnlyInvalidation,
    /// A CPD slot was found tagged with another domain than the faulting space's.
    Collision,
    /// A PID was handed to a space while already in use by another (best effort).
    PidShared,
    /// A CPD slot was filled from a space's own directory: on a fault, or
    /// eagerly when a switch gave the space a domain.
    CpdFill,
    /// A dirty domain of a window-exclusive space was taken from its owner
    /// without a cache flush (CPD slots cleared, TLB invalidated), under
    /// [`RecycleRule::ExclusiveWindows`](crate::manager::RecycleRule).
    DomainRecycledExclusive,
    /// A CPD fill flushed the caches because the slot's FCSE window may hold
    /// lines another space's recycled domain left there (the slot itself
    /// was empty or held by a clean domain). Also counted as a collision.
    WindowFlush,
}

/// Counters of every [`Event`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Stats {
    /// Context switches.
    pub switches: u64,
    /// Free domains allocated.
    pub domain_allocs: u64,
    /// Clean domains recycled.
    pub recycles_clean: u64,
    /// Dirty domains recycled.
    pub recycles_dirty: u64,
    /// Full cache and TLB flushes.
    pub full_flushes: u64,
    /// TLB-only invalidations.
    pub tlb_only: u64,
    /// Collisions in the CPD.
    pub collisions: u64,
    /// PID sharing events.
    pub pid_shares: u64,
    /// CPD fills.
    pub cpd_fills: u64,
    /// Dirty domains of window-exclusive spaces recycled without a flush.
    pub recycles_exclusive: u64,
    /// Full flushes a CPD fill needed because of lines left in its window
    /// ([`Event::WindowFlush`]).
    pub window_flushes: u64,
}

impl Stats {
    /// All counters zero.
    pub const ZERO: Stats = Stats {
        switches: 0,
        domain_allocs: 0,
        recycles_clean: 0,
        recycles_dirty: 0,
        full_flushes: 0,
        tlb_only: 0,
        collisions: 0,
        pid_shares: 0,
        cpd_fills: 0,
        recycles_exclusive: 0,
        window_flushes: 0,
    };

    /// Counts one `event`. The counters wrap (a `u64` of events does not
    /// wrap in practice), one add with carry on a 32-bit core: the fast
    /// fault path counts three.
    #[inline]
    pub fn record(&mut self, event: Event) {
        let c = match event {
            Event::Switch => &mut self.switches,
            Event::DomainAllocated => &mut self.domain_allocs,
            Event::DomainRecycledClean => &mut self.recycles_clean,
            Event::DomainRecycledDirty => &mut self.recycles_dirty,
            Event::FullFlush => &mut self.full_flushes,
            Event::TlbOnlyInvalidation => &mut self.tlb_only,
            Event::Collision => &mut self.collisions,
            Event::PidShared => &mut self.pid_shares,
            Event::CpdFill => &mut self.cpd_fills,
            Event::DomainRecycledExclusive => &mut self.recycles_exclusive,
            Event::WindowFlush => &mut self.window_flushes,
        };
        *c = c.wrapping_add(1);
    }

    /// The count of `event`.
    #[must_use]
    pub const fn count(&self, event: Event) -> u64 {
        match event {
            Event::Switch => self.switches,
            Event::DomainAllocated => self.domain_allocs,
            Event::DomainRecycledClean => self.recycles_clean,
            Event::DomainRecycledDirty => self.recycles_dirty,
            Event::FullFlush => self.full_flushes,
            Event::TlbOnlyInvalidation => self.tlb_only,
            Event::Collision => self.collisions,
            Event::PidShared => self.pid_shares,
            Event::CpdFill => self.cpd_fills,
            Event::DomainRecycledExclusive => self.recycles_exclusive,
            Event::WindowFlush => self.window_flushes,
        }
    }

    /// Counter-wise difference `self - earlier` (saturating): the events
    /// between two snapshots.
    #[must_use]
    pub const fn since(&self, earlier: &Stats) -> Stats {
        Stats {
            switches: self.switches.saturating_sub(earlier.switches),
            domain_allocs: self.domain_allocs.saturating_sub(earlier.domain_allocs),
            recycles_clean: self.recycles_clean.saturating_sub(earlier.recycles_clean),
            recycles_dirty: self.recycles_dirty.saturating_sub(earlier.recycles_dirty),
            full_flushes: self.full_flushes.saturating_sub(earlier.full_flushes),
            tlb_only: self.tlb_only.saturating_sub(earlier.tlb_only),
            collisions: self.collisions.saturating_sub(earlier.collisions),
            pid_shares: self.pid_shares.saturating_sub(earlier.pid_shares),
            cpd_fills: self.cpd_fills.saturating_sub(earlier.cpd_fills),
            recycles_exclusive: self
                .recycles_exclusive
                .saturating_sub(earlier.recycles_exclusive),
            window_flushes: self.window_flushes.saturating_sub(earlier.window_flushes),
        }
    }

    /// Full flushes per 1,000 switches (0 with no switch).
    #[must_use]
    pub fn flushes_per_thousand_switches(&self) -> f64 {
        if self.switches == 0 {
            0.0
        } else {
            self.full_flushes as f64 * 1000.0 / self.switches as f64
        }
    }
}

/// What [`Fass::resolve_fast`](crate::Fass::resolve_fast) resolved: each
/// fault counted once, by its fault status (translation or domain fault)
/// and its outcome (a fill of an empty slot, or a collision with a clean
/// owner resolved with a TLB invalidation only), in 32 bits (one add on
/// the fast path; a wrap is carried into a high word off that path, so the
/// counts are exact 64-bit counts).
///
/// [`Fass::stats`](crate::Fass::stats) folds them into [`Stats`] when read
/// ([`Stats::with_fast`]): a fast collision is a [`Event::Collision`], a
/// [`Event::TlbOnlyInvalidation`] and a [`Event::CpdFill`], a fast fill a
/// [`Event::CpdFill`]. A kernel that counts resolved faults by their
/// status reads them here too rather than counting them again.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[repr(C)]
pub struct FastFaults {
    /// Low words, indexed by [`FastFaults::index`].
    low: [u32; 4],
    /// High words (the carries of `low`).
    high: [u32; 4],
}

impl FastFaults {
    /// Nothing counted.
    pub const ZERO: FastFaults = FastFaults {
        low: [0; 4],
        high: [0; 4],
    };

    /// The counter of a fault with this outcome and status.
    #[inline(always)]
    const fn index(collision: bool, domain_fault: bool) -> usize {
        (collision as usize) << 1 | domain_fault as usize
    }

    /// Counts one fast resolution: `collision` (the slot had a clean
    /// owner) or a fill, of a domain fault (`domain_fault`) or a
    /// translation fault.
    #[inline(always)]
    pub(crate) fn record(&mut self, collision: bool, domain_fault: bool) {
        let i = Self::index(collision, domain_fault) % 4;
        let n = self.low[i].wrapping_add(1);
        self.low[i] = n;
        if n == 0 {
            self.carry(i);
        }
    }

    #[cold]
    #[inline(never)]
    fn carry(&mut self, i: usize) {
        if let Some(h) = self.high.get_mut(i) {
            *h = h.wrapping_add(1);
        }
    }

    /// The fast resolutions with this outcome (`collision`: a clean owner
    /// moved out, else a fill) of faults with this status (`domain_fault`,
    /// else a translation fault).
    #[must_use]
    pub const fn count(&self, collision: bool, domain_fault: bool) -> u64 {
        let i = Self::index(collision, domain_fault);
        (self.high[i] as u64) << 32 | self.low[i] as u64
    }

    /// Collisions resolved with a TLB invalidation only.
    #[must_use]
    pub const fn collisions(&self) -> u64 {
        self.count(true, false) + self.count(true, true)
    }

    /// Fills of an empty slot.
    #[must_use]
    pub const fn fills(&self) -> u64 {
        self.count(false, false) + self.count(false, true)
    }

    /// Resolutions of domain faults (either outcome).
    #[must_use]
    pub const fn domain_faults(&self) -> u64 {
        self.count(false, true) + self.count(true, true)
    }

    /// Resolutions of translation faults (either outcome).
    #[must_use]
    pub const fn translation_faults(&self) -> u64 {
        self.count(false, false) + self.count(true, false)
    }

    /// Every fast resolution.
    #[must_use]
    pub const fn total(&self) -> u64 {
        self.collisions() + self.fills()
    }
}

impl Stats {
    /// These counters with the fast path's resolutions `fast` folded in
    /// (see [`FastFaults`]).
    #[must_use]
    pub const fn with_fast(&self, fast: &FastFaults) -> Stats {
        let mut s = *self;
        s.collisions = s.collisions.wrapping_add(fast.collisions());
        s.tlb_only = s.tlb_only.wrapping_add(fast.collisions());
        s.cpd_fills = s.cpd_fills.wrapping_add(fast.total());
        s
    }
}

/// A manager's counters: the general paths' [`Stats`] and the fast fault
/// path's [`FastFaults`], folded when read ([`Tally::stats`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C)]
pub(crate) struct Tally {
    /// The fast fault path's counts (first: it is the hot part).
    pub(crate) fast: FastFaults,
    /// Everything else.
    pub(crate) base: Stats,
}

impl Tally {
    /// Nothing counted.
    pub(crate) const ZERO: Tally = Tally {
        fast: FastFaults::ZERO,
        base: Stats::ZERO,
    };

    /// Counts one `event` (see [`Stats::record`]).
    #[inline]
    pub(crate) fn record(&mut self, event: Event) {
        self.base.record(event);
    }

    /// Every counter, the fast path's folded in.
    pub(crate) fn stats(&self) -> Stats {
        self.base.with_fast(&self.fast)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: [Event; 11] = [
        Event::Switch,
        Event::DomainAllocated,
        Event::DomainRecycledClean,
        Event::DomainRecycledDirty,
        Event::FullFlush,
        Event::TlbOnlyInvalidation,
        Event::Collision,
        Event::PidShared,
        Event::CpdFill,
        Event::DomainRecycledExclusive,
        Event::WindowFlush,
    ];

    #[test]
    fn each_event_has_its_own_counter() {
        for (i, e) in ALL.iter().enumerate() {
            let mut s = Stats::ZERO;
            for _ in 0..=i {
                s.record(*e);
            }
            for other in ALL {
                let want = if other == *e { i as u64 + 1 } else { 0 };
                assert_eq!(s.count(other), want, "{e:?} vs {other:?}");
            }
        }
    }

    #[test]
    fn since_and_rate() {
        let mut s = Stats::ZERO;
        for _ in 0..2000 {
            s.record(Event::Switch);
        }
        s.record(Event::FullFlush);
        let snap = s;
        s.record(Event::FullFlush);
        s.record(Event::Switch);
        let d = s.since(&snap);
        assert_eq!(d.full_flushes, 1);
        assert_eq!(d.switches, 1);
        assert_eq!(snap.flushes_per_thousand_switches(), 0.5);
        assert_eq!(Stats::ZERO.flushes_per_thousand_switches(), 0.0);
        let mut m = Stats::ZERO;
        m.full_flushes = u64::from(u32::MAX);
        m.record(Event::FullFlush);
        assert_eq!(m.full_flushes, 1 << 32);
    }

    #[test]
    fn fast_faults_fold_by_outcome_and_status() {
        let mut t = Tally::ZERO;
        t.record(Event::Collision);
        t.record(Event::CpdFill);
        let mut f = FastFaults::ZERO;
        for (n, c, d) in [
            (1, false, false),
            (2, false, true),
            (3, true, false),
            (4, true, true),
        ] {
            for _ in 0..n {
                f.record(c, d);
            }
        }
        t.fast = f;
        assert_eq!((f.fills(), f.collisions()), (3, 7));
        assert_eq!((f.translation_faults(), f.domain_faults()), (4, 6));
        assert_eq!(f.total(), 10);
        let s = t.stats();
        assert_eq!((s.collisions, s.tlb_only, s.cpd_fills), (8, 7, 11));
        assert_eq!(s.full_flushes, 0);
        assert_eq!(s.since(&t.base).cpd_fills, 10);
    }

    #[test]
    fn fast_faults_carry_past_32_bits() {
        let mut f = FastFaults::ZERO;
        f.low[FastFaults::index(true, true)] = u32::MAX;
        f.record(true, true);
        f.record(true, true);
        assert_eq!(f.count(true, true), (1 << 32) + 1);
        assert_eq!(f.count(true, false), 0);
        assert_eq!(Stats::ZERO.with_fast(&f).tlb_only, (1 << 32) + 1);
    }
}
