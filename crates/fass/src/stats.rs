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
    /// A CPD slot was filled from a space's own directory on a fault.
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
}
