//! Lines left behind in the caches by domains recycled without a flush.
//!
//! Under [`RecycleRule::ExclusiveWindows`](crate::manager::RecycleRule) the
//! domain of a *window-exclusive* space (every first-level slot of its
//! directory inside its own FCSE PID window, and that PID held by no other
//! space) is taken back with its CPD slots cleared and the TLB invalidated
//! but **without** a cache flush. Its lines stay in the VIVT caches, tagged
//! with MVAs of its own window only. This tracker records, per FCSE window
//! (per PID), whose lines may have been left there since the last full
//! flush, so that anyone about to reach that window through a fresh CPD
//! entry can flush first ([`WindowLines::may_hold_other_than`]).
//!
//! Per PID the state is a [`Leftover`]: nobody, one space, or several. It
//! is set by [`WindowLines::note_left`] when such a domain is recycled and
//! cleared by a finished full flush. Like the PID allocator's dirty bits
//! ([`crate::pid`]), clearing is guarded by a flush epoch: a flush that was
//! decided before lines were left (on a kernel that recycles a domain while
//! a long flush is interrupted) does not clear what it may have missed.

use crate::id::SpaceId;
use crate::layout::{SLOTS_PER_WINDOW, SLOT_COUNT};
use crate::pid::FlushTicket;
use mmu_armv5::FcsePid;

const PIDS: usize = 128;

/// Whose lines a window may hold that no CPD entry accounts for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Leftover {
    /// None since the last full flush.
    #[default]
    Nobody,
    /// Lines of this one space.
    One(SpaceId),
    /// Lines of two or more spaces.
    Many,
}

impl Leftover {
    /// This state with `space`'s lines added.
    #[must_use]
    pub const fn with(self, space: SpaceId) -> Leftover {
        match self {
            Leftover::Nobody => Leftover::One(space),
            Leftover::One(s) if s.0 == space.0 => Leftover::One(s),
            _ => Leftover::Many,
        }
    }
}

/// Per FCSE window, the lines recycled domains left in the caches.
#[derive(Clone, Debug)]
#[repr(C)]
pub struct WindowLines {
    /// Whether any entry of `left` may be other than [`Leftover::Nobody`]
    /// (cleared with them): the fault path's one-load answer when none is.
    /// First (`repr(C)`), for that path.
    some: bool,
    epoch: u64,
    left: [Leftover; PIDS],
}

impl Default for WindowLines {
    fn default() -> Self {
        Self::new()
    }
}

/// The PID whose 32 MiB window holds first-level slot `slot` (`None` for
/// a slot of 4096 or more).
#[must_use]
pub fn window_of_slot(slot: usize) -> Option<FcsePid> {
    if slot >= SLOT_COUNT {
        return None;
    }
    FcsePid::new((slot / SLOTS_PER_WINDOW) as u8).ok()
}

impl WindowLines {
    /// Nothing left anywhere.
    #[must_use]
    pub const fn new() -> WindowLines {
        WindowLines {
            left: [Leftover::Nobody; PIDS],
            epoch: 0,
            some: false,
        }
    }

    /// What window `pid` may hold.
    #[must_use]
    pub fn leftover(&self, pid: FcsePid) -> Leftover {
        self.left
            .get(usize::from(pid.get()))
            .copied()
            .unwrap_or_default()
    }

    /// Whether window `pid` may hold lines left by a recycled domain.
    #[must_use]
    pub fn may_hold(&self, pid: FcsePid) -> bool {
        self.leftover(pid) != Leftover::Nobody
    }

    /// Whether window `pid` may hold left lines of a space other than
    /// `filler` (`None`: of anyone). A CPD fill by `filler` in that window
    /// must flush first.
    #[must_use]
    #[inline]
    pub fn may_hold_other_than(&self, pid: FcsePid, filler: Option<SpaceId>) -> bool {
        if !self.some {
            return false;
        }
        match (self.leftover(pid), filler) {
            (Leftover::Nobody, _) => false,
            (Leftover::One(s), Some(f)) => s != f,
            _ => true,
        }
    }

    /// Whether window `pid` may hold left lines of `space` (its own
    /// or several spaces').
    #[must_use]
    pub fn may_hold_lines_of(&self, pid: FcsePid, space: SpaceId) -> bool {
        match self.leftover(pid) {
            Leftover::Nobody => false,
            Leftover::One(s) => s == space,
            Leftover::Many => true,
        }
    }

    /// Whether any window may hold left lines. O(1): `some` is set with
    /// every leftover recorded and cleared only with all of them.
    #[must_use]
    pub fn any(&self) -> bool {
        debug_assert_eq!(self.some, self.left.iter().any(|l| *l != Leftover::Nobody));
        self.some
    }

    /// Records that `space`'s domain was recycled without a flush: its lines
    /// (all in window `pid`) may stay in the caches. Advances the epoch.
    pub fn note_left(&mut self, pid: FcsePid, space: SpaceId) {
        self.epoch = self.epoch.wrapping_add(1);
        if let Some(l) = self.left.get_mut(usize::from(pid.get())) {
            *l = l.with(space);
            self.some = true;
        }
    }

    /// The current epoch (advanced by every [`WindowLines::note_left`]).
    #[must_use]
    pub const fn epoch(&self) -> u64 {
        self.epoch
    }

    /// A ticket to take before starting a full flush.
    #[must_use = "report the finished flush with WindowLines::flush_done"]
    pub fn flush_ticket(&self) -> FlushTicket {
        FlushTicket::at(self.epoch)
    }

    /// Reports a finished full flush started with `ticket`: if nothing was
    /// left since, every window is clean again and `true` is returned;
    /// otherwise nothing changes and `false` is returned.
    pub fn flush_done(&mut self, ticket: FlushTicket) -> bool {
        if ticket.epoch() != self.epoch {
            return false;
        }
        self.left = [Leftover::Nobody; PIDS];
        self.some = false;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pid(p: u8) -> FcsePid {
        FcsePid::new(p).unwrap()
    }

    #[test]
    fn leftovers_merge_and_guard_other_spaces_only() {
        let mut w = WindowLines::new();
        assert!(!w.any());
        assert!(!w.may_hold_other_than(pid(5), None));
        w.note_left(pid(5), SpaceId(1));
        assert_eq!(w.leftover(pid(5)), Leftover::One(SpaceId(1)));
        // The space itself may refill its own window; nobody else may.
        assert!(!w.may_hold_other_than(pid(5), Some(SpaceId(1))));
        assert!(w.may_hold_other_than(pid(5), Some(SpaceId(2))));
        assert!(w.may_hold_other_than(pid(5), None));
        assert!(!w.may_hold_other_than(pid(6), Some(SpaceId(2))));
        assert!(w.may_hold_lines_of(pid(5), SpaceId(1)));
        assert!(!w.may_hold_lines_of(pid(5), SpaceId(2)));
        w.note_left(pid(5), SpaceId(1));
        assert_eq!(w.leftover(pid(5)), Leftover::One(SpaceId(1)));
        w.note_left(pid(5), SpaceId(2));
        assert_eq!(w.leftover(pid(5)), Leftover::Many);
        assert!(w.may_hold_other_than(pid(5), Some(SpaceId(1))));
        assert!(w.may_hold_lines_of(pid(5), SpaceId(9)));
        let t = w.flush_ticket();
        assert!(w.flush_done(t));
        assert!(!w.any() && !w.may_hold(pid(5)));
    }

    #[test]
    fn a_flush_decided_before_lines_were_left_does_not_clear_them() {
        let mut w = WindowLines::new();
        w.note_left(pid(3), SpaceId(1));
        let t = w.flush_ticket();
        // While the flush runs, another domain is recycled without a flush.
        w.note_left(pid(4), SpaceId(2));
        assert!(!w.flush_done(t));
        assert!(w.may_hold(pid(3)) && w.may_hold(pid(4)));
        let t = w.flush_ticket();
        assert!(w.flush_done(t));
        assert!(!w.any());
    }

    #[test]
    fn any_and_the_epoch_follow_every_leftover() {
        let mut w = WindowLines::new();
        assert!(!w.any());
        assert_eq!(w.epoch(), 0);
        w.note_left(pid(9), SpaceId(4));
        assert!(w.any());
        assert_eq!(w.epoch(), 1);
        // Every window holding lines: still "any".
        for p in 0..128 {
            w.note_left(pid(p), SpaceId(4));
        }
        assert!(w.any());
        assert_eq!(w.epoch(), 129);
        let t = w.flush_ticket();
        assert!(w.flush_done(t));
        assert!(!w.any());
        // A flush does not move the epoch.
        assert_eq!(w.epoch(), 129);
    }

    #[test]
    fn slots_map_to_their_window() {
        assert_eq!(window_of_slot(0), Some(FcsePid::ZERO));
        assert_eq!(window_of_slot(32), Some(pid(1)));
        assert_eq!(window_of_slot(63 * 32 + 31), Some(pid(63)));
        assert_eq!(window_of_slot(4095), Some(pid(127)));
        assert_eq!(window_of_slot(4096), None);
    }
}
