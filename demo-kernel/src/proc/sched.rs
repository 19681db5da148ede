//! The ready set: one bit per runnable process slot, an O(1) round-robin
//! pick with `CLZ` (ARMv5 has it), and the one function through which every
//! scheduling state changes, so that the set never disagrees with the table.

use super::kernel::{Kernel, State};
use super::strategy::MAX_PROCS;

// The set is two 32-bit words: one bit per slot.
const _: () = assert!(MAX_PROCS == 64);

/// The runnable processes ([`State::runnable`]), one bit per slot.
#[derive(Clone, Copy, Default, PartialEq, Eq, Debug)]
pub struct ReadySet([u32; 2]);

/// The lowest set bit of `w` (not 0): one `CLZ` on the isolated bit.
#[inline(always)]
fn lowest(w: u32) -> usize {
    (31 - (w & w.wrapping_neg()).leading_zeros()) as usize
}

impl ReadySet {
    /// No process runnable.
    pub const EMPTY: ReadySet = ReadySet([0; 2]);

    /// Adds slot `i`.
    #[inline(always)]
    pub fn insert(&mut self, i: usize) {
        self.0[(i >> 5) & 1] |= 1 << (i & 31);
    }

    /// Removes slot `i`.
    #[inline(always)]
    pub fn remove(&mut self, i: usize) {
        self.0[(i >> 5) & 1] &= !(1 << (i & 31));
    }

    /// The lowest slot in the set.
    #[inline(always)]
    pub fn first(self) -> Option<usize> {
        let [lo, hi] = self.0;
        if lo != 0 {
            Some(lowest(lo))
        } else if hi != 0 {
            Some(32 + lowest(hi))
        } else {
            None
        }
    }

    /// The first slot after `cur` in round-robin order, `cur` itself last
    /// (if it is in the set): constant time, whatever the number of slots.
    #[inline(always)]
    pub fn next_after(self, cur: usize) -> Option<usize> {
        let cur = cur & (MAX_PROCS - 1);
        let [lo, hi] = self.0;
        // The slots above `cur` in each word (two shifts: `cur & 31` may be 31).
        let (above_lo, above_hi) = if cur < 32 {
            ((u32::MAX << cur) << 1 & lo, hi)
        } else {
            (0, (u32::MAX << (cur & 31)) << 1 & hi)
        };
        if above_lo != 0 {
            Some(lowest(above_lo))
        } else if above_hi != 0 {
            Some(32 + lowest(above_hi))
        } else {
            self.first()
        }
    }
}

impl Kernel {
    /// Sets the scheduling state of process `i`, keeping the ready set in
    /// step: the only way a state changes.
    #[inline(always)]
    pub(super) fn set_state(&mut self, i: usize, s: State) {
        let i = i & (MAX_PROCS - 1);
        if s.runnable() {
            self.ready.insert(i);
        } else {
            self.ready.remove(i);
        }
        self.procs[i].state = s;
    }

    /// The next process to run: `prefer` if ready, else round robin after
    /// the current one (the current one last); `None` if none is runnable.
    #[inline]
    pub(super) fn pick(&self, prefer: Option<usize>) -> Option<usize> {
        if let Some(p) = prefer.filter(|p| self.procs[*p & (MAX_PROCS - 1)].state == State::Ready) {
            return Some(p);
        }
        match self.current {
            Some(c) => self.ready.next_after(c),
            None => self.ready.first(),
        }
    }

    /// The next runnable process after `cur` in round-robin order (possibly `cur`).
    #[inline(always)]
    pub(super) fn pick_after(&self, cur: usize) -> Option<usize> {
        self.ready.next_after(cur)
    }
}
