//! The FCSE PID allocator and its cache-flush decisions, in the two modes
//! of the Linux FCSE patch (Chanteperdrix and Cochran, "The ARM Fast
//! Context Switch Extension for Linux", Real Time Linux Workshop 2009).
//!
//! * [`PidMode::Guaranteed`]: every address space gets a PID of its own; when
//!   none is free, allocation fails with [`PidError::Exhausted`]; address
//!   spaces cannot grow past 32 MiB; a context switch never flushes caches.
//!   (Shared writable mappings must be mapped uncached by the caller.)
//! * [`PidMode::BestEffort`]: PIDs are shared when they run out, address
//!   spaces larger than 32 MiB run at PID 0 with their highest window
//!   tracked, and a switch flushes when, and only when, one of the rules
//!   below says the cache may hold another space's lines at an address the
//!   next space uses.
//!
//! # Flush rules (best effort)
//! A switch from `prev` to `next` (at PID `p`) flushes iff
//! * [`FlushReasons::PID_REUSED`]: `p` is cache-dirty and its last user is
//!   not `next`;
//! * [`FlushReasons::LARGE_OVERLAP`]: a large space has run since the last
//!   flush and its highest window is at or above `p` (`p != 0`), or `next` is
//!   large and a PID inside its windows `1..=highest` is cache-dirty;
//! * [`FlushReasons::SHARED_WRITES`]: `prev` wrote shared-writable pages
//!   (see [`PidAllocator::note_shared_write`]).
//!
//! After the decision, `p` is marked dirty and its last user set to `next`.
//!
//! # The flush epoch
//! A flush may be long and, on a kernel that keeps preemption enabled
//! during it, interrupted by other switches. Every switch advances an
//! epoch; a [`FlushTicket`] records the epoch at which the flush was
//! decided, and [`PidAllocator::flush_done`] clears the dirty bits only if
//! no switch happened since. Otherwise the bits stay set (a later, needless
//! flush is safe; a lost dirty bit is not).
//!
//! The decisions are returned as data ([`FlushDecision`]); the switch code
//! acts on them.

use crate::id::SpaceId;
use crate::layout::Layout;
use core::fmt;
use mmu_armv5::FcsePid;

/// Which of the Linux patch's two modes the allocator runs in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum PidMode {
    /// One PID per address space, never a flush on switch.
    Guaranteed,
    /// PIDs shared when they run out, large spaces at PID 0, flush when needed.
    BestEffort,
}

/// A PID operation that cannot be done.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum PidError {
    /// Guaranteed mode and every PID of the layout is in use.
    Exhausted,
    /// The context's PID has no users in this allocator (a context from another
    /// allocator, or one already released).
    NotAllocated(FcsePid),
    /// Address spaces larger than 32 MiB exist only in best-effort mode.
    LargeNotSupported,
    /// A window number above 127.
    WindowOutOfRange(u8),
    /// Best effort: the PID already has 65,535 users (every PID has, when
    /// allocating), the most its count holds.
    TooManyUsers(FcsePid),
}

impl fmt::Display for PidError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            PidError::Exhausted => f.write_str("no free FCSE PID"),
            PidError::NotAllocated(p) => write!(f, "FCSE PID {} is not allocated", p.get()),
            PidError::LargeNotSupported => {
                f.write_str("address spaces larger than 32 MiB need best-effort mode")
            }
            PidError::WindowOutOfRange(w) => write!(f, "FCSE window {w} is above 127"),
            PidError::TooManyUsers(p) => {
                write!(f, "FCSE PID {} already has {} users", p.get(), u16::MAX)
            }
        }
    }
}

impl core::error::Error for PidError {}

/// Why a flush is needed: a set of reasons.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct FlushReasons(u8);

impl FlushReasons {
    /// No reason.
    pub const NONE: FlushReasons = FlushReasons(0);
    /// The next PID is cache-dirty and was last used by another address space.
    pub const PID_REUSED: FlushReasons = FlushReasons(1);
    /// A large address space's high mappings and a small space's window meet in the cache.
    pub const LARGE_OVERLAP: FlushReasons = FlushReasons(2);
    /// The previous address space wrote shared-writable pages.
    pub const SHARED_WRITES: FlushReasons = FlushReasons(4);
    /// Guaranteed mode handed out a PID whose window a destroyed space left in the cache.
    pub const STALE_PID: FlushReasons = FlushReasons(8);
    /// An address space moved from its PID to PID 0 and must leave the cache.
    pub const BECAME_LARGE: FlushReasons = FlushReasons(16);

    /// Whether every reason in `other` is in `self`.
    #[must_use]
    pub const fn contains(self, other: FlushReasons) -> bool {
        self.0 & other.0 == other.0
    }

    /// Both sets of reasons.
    #[must_use]
    pub const fn union(self, other: FlushReasons) -> FlushReasons {
        FlushReasons(self.0 | other.0)
    }

    /// Whether there is no reason at all.
    #[must_use]
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The raw bits.
    #[must_use]
    pub const fn bits(self) -> u8 {
        self.0
    }
}

impl fmt::Debug for FlushReasons {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const NAMES: [(FlushReasons, &str); 5] = [
            (FlushReasons::PID_REUSED, "PID_REUSED"),
            (FlushReasons::LARGE_OVERLAP, "LARGE_OVERLAP"),
            (FlushReasons::SHARED_WRITES, "SHARED_WRITES"),
            (FlushReasons::STALE_PID, "STALE_PID"),
            (FlushReasons::BECAME_LARGE, "BECAME_LARGE"),
        ];
        write!(f, "FlushReasons(")?;
        let mut first = true;
        for (r, n) in NAMES {
            if self.contains(r) {
                if !first {
                    write!(f, "|")?;
                }
                write!(f, "{n}")?;
                first = false;
            }
        }
        write!(f, ")")
    }
}

/// Proof that a flush was decided at a given epoch; hand it back to
/// [`PidAllocator::flush_done`] once the caches are clean and invalid.
#[derive(Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[must_use = "report the finished flush with PidAllocator::flush_done"]
pub struct FlushTicket {
    epoch: u64,
}

impl FlushTicket {
    /// A ticket for a flush decided at `epoch` (for other epoch-counted
    /// trackers of this crate, such as [`crate::window::WindowLines`]).
    pub(crate) const fn at(epoch: u64) -> FlushTicket {
        FlushTicket { epoch }
    }

    /// The epoch the flush was decided in.
    #[must_use]
    pub const fn epoch(&self) -> u64 {
        self.epoch
    }
}

/// Whether the caller must clean and invalidate the caches (and the TLB).
#[derive(Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[must_use = "a flush decision must be acted upon"]
pub enum FlushDecision {
    /// Nothing to flush.
    None,
    /// Clean and invalidate the D-cache, invalidate the I-cache and the TLB,
    /// then call [`PidAllocator::flush_done`] with the ticket.
    Flush {
        /// Why.
        reasons: FlushReasons,
        /// The ticket for [`PidAllocator::flush_done`].
        ticket: FlushTicket,
    },
}

impl FlushDecision {
    /// The reasons, empty for [`FlushDecision::None`].
    #[must_use]
    pub fn reasons(&self) -> FlushReasons {
        match self {
            FlushDecision::None => FlushReasons::NONE,
            FlushDecision::Flush { reasons, .. } => *reasons,
        }
    }

    /// Whether a flush is needed.
    #[must_use]
    pub fn is_flush(&self) -> bool {
        matches!(self, FlushDecision::Flush { .. })
    }
}

/// The FCSE state of one address space (Linux's `mm->context.fcse`).
///
/// Created only by [`PidAllocator::allocate`] and consumed by
/// [`PidAllocator::release`]; it is neither `Clone` nor `Copy`, so a PID
/// cannot be released twice.
#[derive(Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct PidContext {
    space: SpaceId,
    pid: FcsePid,
    large: bool,
    highest_window: u8,
    shared_dirty: bool,
}

impl PidContext {
    /// The address space this context belongs to.
    #[must_use]
    pub const fn space(&self) -> SpaceId {
        self.space
    }

    /// The PID to load into FCSEIDR when this space runs.
    #[must_use]
    pub const fn pid(&self) -> FcsePid {
        self.pid
    }

    /// Whether the space is larger than 32 MiB (and so runs at PID 0).
    #[must_use]
    pub const fn is_large(&self) -> bool {
        self.large
    }

    /// For a large space, the highest FCSE window its mappings reach (0: none above 32 MiB).
    #[must_use]
    pub const fn highest_window(&self) -> u8 {
        self.highest_window
    }

    /// Whether the space wrote shared-writable pages since the last flush.
    #[must_use]
    pub const fn shared_dirty(&self) -> bool {
        self.shared_dirty
    }
}

/// The result of [`PidAllocator::allocate`].
#[derive(Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[must_use]
pub struct Allocation {
    /// The new space's FCSE state.
    pub context: PidContext,
    /// Best effort: the PID was already in use and is now shared.
    pub shared: bool,
    /// Guaranteed mode: a flush needed before the space first runs.
    pub flush: FlushDecision,
}

/// The result of [`PidAllocator::switch`].
#[derive(Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[must_use]
pub struct PidSwitch {
    /// The PID to load into FCSEIDR.
    pub pid: FcsePid,
    /// Whether to flush first.
    pub flush: FlushDecision,
}

const PIDS: usize = 128;

/// The FCSE PID allocator. See the [module docs](self) for the rules.
///
/// ```
/// use fass::{FlushDecision, FlushReasons, Layout, PidAllocator, PidError, PidMode, Region, SpaceId};
/// use mmu_armv5::FcsePid;
///
/// // A layout with a single FCSE window (PID 1), so two spaces must share it.
/// let one = FcsePid::new(1)?;
/// let layout = Layout::new(one, one, Region::new(0x8000_0000, 1 << 30)?, Region::new(0xC000_0000, 1 << 30)?)?;
///
/// // Guaranteed: a PID per space, or an error.
/// let mut strict = PidAllocator::new(&layout, PidMode::Guaranteed);
/// assert_eq!(strict.allocate(SpaceId(1))?.context.pid(), one);
/// assert_eq!(strict.allocate(SpaceId(2)), Err(PidError::Exhausted));
///
/// // Best effort: the PID is shared, and switches flush when they must.
/// let mut pids = PidAllocator::new(&layout, PidMode::BestEffort);
/// let mut a = pids.allocate(SpaceId(1))?.context;
/// let b = pids.allocate(SpaceId(2))?;
/// assert!(b.shared);
/// let b = b.context;
/// assert_eq!(pids.users(one), 2);
///
/// // A runs first: PID 1 holds no lines yet.
/// let s = pids.switch(None, &a)?;
/// assert_eq!((s.pid, s.flush), (one, FlushDecision::None));
/// // B would hit A's lines at the same MVAs: flush.
/// let s = pids.switch(Some(&mut a), &b)?;
/// assert_eq!(s.flush.reasons(), FlushReasons::PID_REUSED);
/// let FlushDecision::Flush { ticket, .. } = s.flush else { unreachable!() };
/// // ... the kernel cleans and invalidates the caches and the TLB, then:
/// assert!(pids.flush_done(ticket));
/// assert_eq!(pids.last_user(one), Some(SpaceId(2)));
/// // Back to A: B's lines are cached under PID 1 now.
/// assert!(pids.switch(None, &a)?.flush.is_flush());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct PidAllocator {
    mode: PidMode,
    first: u8,
    last: u8,
    users: [u16; PIDS],
    last_user: [Option<SpaceId>; PIDS],
    dirty: u128,
    /// Highest window of any large space that ran since the last flush (0: none).
    large_cached_highest: u8,
    /// Advanced by every switch; 64 bits, so a ticket cannot meet its
    /// epoch again (2^64 switches).
    epoch: u64,
    share_cursor: u8,
    current: Option<Current>,
    /// A released space had written shared-writable pages: flush at the next switch.
    orphan_shared_writes: bool,
    /// Contexts with shared writes noted and not yet flushed by a switch away.
    pending_shared_writes: u32,
    /// Changes whenever a switch that needed no flush and changed nothing
    /// but the epoch and the running space may stop being one (see
    /// [`PidAllocator::generation`]).
    generation: u64,
}

#[derive(Clone, Copy, Debug)]
struct Current {
    space: SpaceId,
    pid: FcsePid,
    large_highest: u8,
}

const fn bit(pid: u8) -> u128 {
    1u128 << (pid & 127)
}

/// Bits of PIDs `1..=highest`.
const fn windows_mask(highest: u8) -> u128 {
    if highest == 0 {
        0
    } else if highest >= 127 {
        !1u128
    } else {
        ((1u128 << (highest + 1)) - 1) & !1
    }
}

impl PidAllocator {
    /// An allocator handing out the layout's PIDs, every PID clean and free.
    #[must_use]
    pub const fn new(layout: &Layout, mode: PidMode) -> PidAllocator {
        PidAllocator {
            mode,
            first: layout.first_pid().get(),
            last: layout.last_pid().get(),
            users: [0; PIDS],
            last_user: [None; PIDS],
            dirty: 0,
            large_cached_highest: 0,
            epoch: 0,
            share_cursor: layout.last_pid().get(),
            current: None,
            orphan_shared_writes: false,
            pending_shared_writes: 0,
            generation: 0,
        }
    }

    /// The mode.
    #[must_use]
    pub const fn mode(&self) -> PidMode {
        self.mode
    }

    /// Number of address spaces using `pid`.
    #[must_use]
    pub fn users(&self, pid: FcsePid) -> u16 {
        self.users
            .get(pid.get() as usize)
            .copied()
            .unwrap_or_default()
    }

    /// Whether `pid`'s window may have lines in the cache.
    #[must_use]
    pub const fn is_dirty(&self, pid: FcsePid) -> bool {
        self.dirty & bit(pid.get()) != 0
    }

    /// The address space that last ran with `pid`, if it still exists.
    #[must_use]
    pub fn last_user(&self, pid: FcsePid) -> Option<SpaceId> {
        self.last_user.get(pid.get() as usize).copied().flatten()
    }

    /// The current flush epoch (advanced by every switch).
    #[must_use]
    pub const fn epoch(&self) -> u64 {
        self.epoch
    }

    /// The highest window of any large space cached since the last flush (0: none).
    #[must_use]
    pub const fn large_cached_highest(&self) -> u8 {
        self.large_cached_highest
    }

    /// A counter that changes exactly when [`PidAllocator::lean_ok`] may
    /// turn false for a live context (the precomputed switches of
    /// [`crate::lean`] are stamped with it): a PID's last user replaced (a
    /// PID shared or reused, a space moved to PID 0), a finished flush that
    /// cleans a PID, a large space's windows reaching further into the
    /// cache, shared writes noted or left by a released space. Allocating,
    /// releasing (the released context is gone, and no other one's answer
    /// rested on it) and switches that change none of these leave it alone.
    /// 64 bits: it never comes back to an earlier value (2^64 such events).
    #[must_use]
    pub const fn generation(&self) -> u64 {
        self.generation
    }

    fn bump(&mut self) {
        self.generation = self.generation.wrapping_add(1);
    }

    /// Sets `pid`'s last user to `user`, changing the generation if it
    /// replaces or forgets another space.
    fn set_last_user(&mut self, pid: u8, user: Option<SpaceId>) {
        let Some(slot) = self.last_user.get_mut(usize::from(pid)) else {
            return;
        };
        let old = core::mem::replace(slot, user);
        if old.is_some() && old != user {
            self.bump();
        }
    }

    /// Raises the highest cached large window to `highest`, changing the
    /// generation if it grows.
    fn cache_large(&mut self, highest: u8) {
        if highest > self.large_cached_highest {
            self.large_cached_highest = highest;
            self.bump();
        }
    }

    /// Whether a switch to `ctx` now needs no flush and changes nothing
    /// here but the epoch and the running space, whichever space it comes
    /// from: `ctx` is not large and its PID is cache-dirty with `ctx` as its
    /// last user, no large space's windows in the cache reach its PID, and no
    /// shared writes await a flush. Stays true until the
    /// [generation](PidAllocator::generation) changes; a switch to `ctx`
    /// done meanwhile is [`PidAllocator::switched_lean`].
    #[must_use]
    pub fn lean_ok(&self, ctx: &PidContext) -> bool {
        let p = ctx.pid.get();
        let no_shared_writes = self.mode == PidMode::Guaranteed
            || (!ctx.shared_dirty && self.pending_shared_writes == 0 && !self.orphan_shared_writes);
        !ctx.large
            && p != 0
            && self.dirty & bit(p) != 0
            && self.last_user(ctx.pid) == Some(ctx.space)
            && self.large_cached_highest < p
            && no_shared_writes
    }

    /// Records a switch to `space` at `pid` for which [`PidAllocator::lean_ok`]
    /// held in the current generation: what [`PidAllocator::switch`] would
    /// do then (advance the epoch, note the running space), without
    /// deciding anything.
    #[inline]
    pub fn switched_lean(&mut self, space: SpaceId, pid: FcsePid) {
        self.switched_lean_times(space, pid, 1);
    }

    /// [`PidAllocator::switched_lean`] for `times` such switches, the last
    /// of them to `space` at `pid` (the epoch advances by `times`).
    #[inline]
    pub(crate) fn switched_lean_times(&mut self, space: SpaceId, pid: FcsePid, times: u64) {
        self.epoch = self.epoch.wrapping_add(times);
        self.current = Some(Current {
            space,
            pid,
            large_highest: 0,
        });
    }

    fn pid_unchecked(p: u8) -> FcsePid {
        // `p` is always 0..=127 here: it comes from a layout or from `& 127`.
        FcsePid::new(p & 127).unwrap_or(FcsePid::ZERO)
    }

    fn ticket(&self) -> FlushTicket {
        FlushTicket { epoch: self.epoch }
    }

    /// Gives `space` a PID: a free clean one first, from the top down; then a
    /// free dirty one; then (best effort) a shared one with the fewest users.
    /// A PID counts at most 65,535 users: beyond, [`PidError::TooManyUsers`]
    /// (nothing changes).
    pub fn allocate(&mut self, space: SpaceId) -> Result<Allocation, PidError> {
        let mut free_dirty = None;
        let mut chosen = None;
        for p in (self.first..=self.last).rev() {
            if self.users[p as usize] == 0 {
                if self.dirty & bit(p) == 0 {
                    chosen = Some(p);
                    break;
                }
                if free_dirty.is_none() {
                    free_dirty = Some(p);
                }
            }
        }
        let mut flush = FlushDecision::None;
        let mut shared = false;
        let p = match (chosen, free_dirty) {
            (Some(p), _) => p,
            (None, Some(p)) => {
                if self.mode == PidMode::Guaranteed {
                    // A switch never flushes in this mode, so the dead
                    // space's lines must go before the new one runs.
                    flush = FlushDecision::Flush {
                        reasons: FlushReasons::STALE_PID,
                        ticket: self.ticket(),
                    };
                }
                p
            }
            (None, None) => match self.mode {
                PidMode::Guaranteed => return Err(PidError::Exhausted),
                PidMode::BestEffort => {
                    shared = true;
                    self.least_shared()?
                }
            },
        };
        self.users[p as usize] += 1;
        Ok(Allocation {
            context: PidContext {
                space,
                pid: Self::pid_unchecked(p),
                large: false,
                highest_window: 0,
                shared_dirty: false,
            },
            shared,
            flush,
        })
    }

    /// The PID with the fewest users, searching down from a rotating
    /// cursor; an error if even that one cannot count another user.
    fn least_shared(&mut self) -> Result<u8, PidError> {
        let n = (self.first..=self.last).count();
        let mut best = self.share_cursor;
        let mut best_users = u16::MAX;
        let mut p = self.share_cursor;
        for _ in 0..n {
            if self.users[p as usize] < best_users {
                best = p;
                best_users = self.users[p as usize];
            }
            p = if p == self.first { self.last } else { p - 1 };
        }
        if best_users == u16::MAX {
            return Err(PidError::TooManyUsers(Self::pid_unchecked(best)));
        }
        self.share_cursor = if best == self.first {
            self.last
        } else {
            best - 1
        };
        Ok(best)
    }

    fn check(&self, ctx: &PidContext) -> Result<(), PidError> {
        if self.users(ctx.pid) == 0 {
            Err(PidError::NotAllocated(ctx.pid))
        } else {
            Ok(())
        }
    }

    /// Returns the space's PID. Its lines may stay in the cache: the PID
    /// stays dirty and forgets its last user, so the next user flushes.
    pub fn release(&mut self, ctx: PidContext) -> Result<(), PidError> {
        self.check(&ctx)?;
        let p = ctx.pid.get() as usize;
        self.users[p] -= 1;
        // No other context's `lean_ok` rests on this last user (theirs
        // would be themselves): the generation stays.
        if self.last_user[p] == Some(ctx.space) {
            self.last_user[p] = None;
        }
        if self.current.is_some_and(|c| c.space == ctx.space) {
            self.current = None;
        }
        if ctx.shared_dirty {
            let was = core::mem::replace(&mut self.orphan_shared_writes, true);
            if self.mode == PidMode::BestEffort {
                // Still pending, now as the orphan flag.
                self.pending_shared_writes = self.pending_shared_writes.saturating_sub(1);
                if !was {
                    self.bump();
                }
            }
        }
        Ok(())
    }

    /// Best effort: marks the space as larger than 32 MiB with mappings up to
    /// FCSE window `highest_window` (0: none above 32 MiB any more), moving it
    /// to PID 0 the first time.
    ///
    /// Moving needs the space's lines out of the cache
    /// ([`FlushReasons::BECAME_LARGE`]); reaching windows that small spaces
    /// have in the cache needs a flush too ([`FlushReasons::LARGE_OVERLAP`]).
    /// If PID 0 already counts 65,535 users, moving is
    /// [`PidError::TooManyUsers`] and nothing changes.
    pub fn set_large(
        &mut self,
        ctx: &mut PidContext,
        highest_window: u8,
    ) -> Result<FlushDecision, PidError> {
        if self.mode == PidMode::Guaranteed {
            return Err(PidError::LargeNotSupported);
        }
        if highest_window > FcsePid::MAX {
            return Err(PidError::WindowOutOfRange(highest_window));
        }
        self.check(ctx)?;
        if !ctx.large && self.users[0] == u16::MAX {
            return Err(PidError::TooManyUsers(FcsePid::ZERO));
        }
        let mut reasons = FlushReasons::NONE;
        if !ctx.large {
            let old = ctx.pid.get() as usize;
            if self.dirty & bit(old as u8) != 0 {
                reasons = reasons.union(FlushReasons::BECAME_LARGE);
            }
            self.users[old] -= 1;
            if self.last_user[old] == Some(ctx.space) {
                self.set_last_user(old as u8, None);
            }
            self.users[0] += 1;
            ctx.pid = FcsePid::ZERO;
            ctx.large = true;
        }
        ctx.highest_window = highest_window;
        if let Some(c) = self.current.as_mut() {
            if c.space == ctx.space {
                // It runs at PID 0 from now on: the rules of a switch to it apply.
                if self.dirty & bit(0) != 0 && self.last_user[0] != Some(ctx.space) {
                    reasons = reasons.union(FlushReasons::PID_REUSED);
                }
                if self.dirty & windows_mask(highest_window) != 0 {
                    reasons = reasons.union(FlushReasons::LARGE_OVERLAP);
                }
                c.pid = FcsePid::ZERO;
                c.large_highest = highest_window;
                self.dirty |= bit(0);
                self.set_last_user(0, Some(ctx.space));
                self.cache_large(highest_window);
            }
        }
        if reasons.is_empty() {
            Ok(FlushDecision::None)
        } else {
            Ok(FlushDecision::Flush {
                reasons,
                ticket: self.ticket(),
            })
        }
    }

    /// Records that the space wrote a shared-writable page (best effort: the
    /// next switch away from it flushes).
    pub fn note_shared_write(&mut self, ctx: &mut PidContext) {
        if !ctx.shared_dirty {
            ctx.shared_dirty = true;
            if self.mode == PidMode::BestEffort {
                // Every switch away from `ctx` must flush now.
                self.pending_shared_writes = self.pending_shared_writes.saturating_add(1);
                self.bump();
            }
        }
    }

    /// Switches from `prev` (if any) to `next`: decides the flush, then marks
    /// `next`'s PID dirty with `next` as its last user.
    pub fn switch(
        &mut self,
        prev: Option<&mut PidContext>,
        next: &PidContext,
    ) -> Result<PidSwitch, PidError> {
        self.check(next)?;
        let p = next.pid.get();
        self.epoch = self.epoch.wrapping_add(1);
        let mut reasons = FlushReasons::NONE;
        if self.mode == PidMode::BestEffort {
            if self.dirty & bit(p) != 0 && self.last_user[p as usize] != Some(next.space) {
                reasons = reasons.union(FlushReasons::PID_REUSED);
            }
            let cached_large_overlaps = p != 0 && self.large_cached_highest >= p;
            let next_large_overlaps =
                next.large && self.dirty & windows_mask(next.highest_window) != 0;
            if cached_large_overlaps || next_large_overlaps {
                reasons = reasons.union(FlushReasons::LARGE_OVERLAP);
            }
            let prev_wrote = prev.is_some_and(|prev| {
                // The flush about to happen writes those lines back.
                core::mem::take(&mut prev.shared_dirty)
            });
            if prev_wrote {
                self.pending_shared_writes = self.pending_shared_writes.saturating_sub(1);
            }
            if prev_wrote || core::mem::take(&mut self.orphan_shared_writes) {
                reasons = reasons.union(FlushReasons::SHARED_WRITES);
            }
        }
        self.dirty |= bit(p);
        self.set_last_user(p, Some(next.space));
        let large_highest = if next.large { next.highest_window } else { 0 };
        self.cache_large(large_highest);
        self.current = Some(Current {
            space: next.space,
            pid: next.pid,
            large_highest,
        });
        let flush = if reasons.is_empty() {
            FlushDecision::None
        } else {
            FlushDecision::Flush {
                reasons,
                ticket: self.ticket(),
            }
        };
        Ok(PidSwitch {
            pid: next.pid,
            flush,
        })
    }

    /// Reports a finished full flush. If no switch happened since the
    /// ticket was issued, every dirty bit is cleared except the running
    /// space's PID (which keeps filling the cache), and `true` is returned;
    /// otherwise nothing changes and `false` is returned.
    pub fn flush_done(&mut self, ticket: FlushTicket) -> bool {
        if ticket.epoch != self.epoch {
            return false;
        }
        let before = self.dirty;
        self.dirty = 0;
        self.large_cached_highest = 0;
        if let Some(c) = self.current {
            self.dirty = bit(c.pid.get());
            self.large_cached_highest = c.large_highest;
        }
        if before & !self.dirty != 0 {
            self.bump();
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::Region;
    use proptest::prelude::*;
    use std::vec::Vec;

    fn pid(p: u8) -> FcsePid {
        FcsePid::new(p).unwrap()
    }

    fn small_layout(last: u8) -> Layout {
        Layout::new(
            pid(1),
            pid(last),
            Region::new(0x8000_0000, 1 << 30).unwrap(),
            Region::new(0xC000_0000, 1 << 30).unwrap(),
        )
        .unwrap()
    }

    fn alloc(a: &mut PidAllocator, s: u16) -> PidContext {
        let r = a.allocate(SpaceId(s)).unwrap();
        assert_eq!(r.flush, FlushDecision::None);
        r.context
    }

    fn done(a: &mut PidAllocator, d: FlushDecision) -> bool {
        match d {
            FlushDecision::Flush { ticket, .. } => a.flush_done(ticket),
            FlushDecision::None => panic!("expected a flush"),
        }
    }

    #[test]
    fn pids_are_handed_out_top_down_and_exhaust_in_guaranteed_mode() {
        let mut a = PidAllocator::new(&small_layout(3), PidMode::Guaranteed);
        let got: Vec<u8> = (0..3).map(|s| alloc(&mut a, s).pid().get()).collect();
        assert_eq!(got, [3, 2, 1]);
        assert_eq!(a.allocate(SpaceId(9)), Err(PidError::Exhausted));
    }

    #[test]
    fn guaranteed_mode_never_flushes_on_switch() {
        let mut a = PidAllocator::new(&small_layout(3), PidMode::Guaranteed);
        let mut c: Vec<PidContext> = (0..3).map(|s| alloc(&mut a, s)).collect();
        a.note_shared_write(&mut c[0]);
        for i in 0..30 {
            let (prev, next) = (i % 3, (i + 1) % 3);
            let (l, r) = c.split_at_mut(next.max(prev));
            let (p, n) = if prev < next {
                (&mut l[prev], &r[0])
            } else {
                (&mut r[0], &l[next])
            };
            let s = a.switch(Some(p), n).unwrap();
            assert_eq!(s.flush, FlushDecision::None);
            assert_eq!(s.pid, n.pid());
        }
        assert_eq!(a.set_large(&mut c[0], 5), Err(PidError::LargeNotSupported));
    }

    #[test]
    fn guaranteed_mode_flushes_a_stale_pid_at_allocation() {
        let mut a = PidAllocator::new(&small_layout(2), PidMode::Guaranteed);
        let c2 = alloc(&mut a, 0);
        let c1 = alloc(&mut a, 1);
        let _ = a.switch(None, &c2).unwrap();
        a.release(c2).unwrap();
        // PID 2 is free but dirty: the only free PID.
        let r = a.allocate(SpaceId(7)).unwrap();
        assert_eq!(r.context.pid(), pid(2));
        assert_eq!(r.flush.reasons(), FlushReasons::STALE_PID);
        assert!(done(&mut a, r.flush));
        assert!(!a.is_dirty(pid(2)));
        let _ = c1;
    }

    #[test]
    fn clean_free_pids_are_preferred_over_dirty_ones() {
        let mut a = PidAllocator::new(&small_layout(3), PidMode::Guaranteed);
        let c3 = alloc(&mut a, 0);
        let _ = a.switch(None, &c3).unwrap();
        a.release(c3).unwrap();
        assert_eq!(alloc(&mut a, 1).pid(), pid(2));
    }

    #[test]
    fn best_effort_shares_the_least_used_pid() {
        let mut a = PidAllocator::new(&small_layout(3), PidMode::BestEffort);
        let _c: Vec<PidContext> = (0..3).map(|s| alloc(&mut a, s)).collect();
        let mut shared = Vec::new();
        for s in 3..9 {
            let r = a.allocate(SpaceId(s)).unwrap();
            assert!(r.shared);
            shared.push(r.context.pid().get());
        }
        // Each round hands out every PID once before any gets a third user.
        let mut first = shared[..3].to_vec();
        first.sort_unstable();
        assert_eq!(first, [1, 2, 3]);
        for p in 1..=3 {
            assert_eq!(a.users(pid(p)), 3);
        }
    }

    #[test]
    fn flush_rule_pid_reused_truth_table() {
        // (dirty, last user is next) -> flush
        for (make_dirty, same_user, expect) in [
            (false, false, false),
            (false, true, false),
            (true, true, false),
            (true, false, true),
        ] {
            let mut a = PidAllocator::new(&small_layout(1), PidMode::BestEffort);
            let x = alloc(&mut a, 0);
            let y = a.allocate(SpaceId(1)).unwrap().context;
            assert_eq!(x.pid(), y.pid());
            if make_dirty {
                let user = if same_user { &y } else { &x };
                let _ = a.switch(None, user).unwrap();
            } else if same_user {
                // Clean PID whose last user is y: run y, then flush.
                let s = a.switch(None, &y).unwrap();
                assert_eq!(s.flush, FlushDecision::None);
                let t = FlushTicket { epoch: a.epoch() };
                a.current = None;
                assert!(a.flush_done(t));
            }
            let s = a.switch(None, &y).unwrap();
            assert_eq!(s.flush.is_flush(), expect, "{make_dirty} {same_user}");
            if expect {
                assert_eq!(s.flush.reasons(), FlushReasons::PID_REUSED);
            }
        }
    }

    #[test]
    fn released_last_user_is_forgotten_so_id_reuse_is_safe() {
        let mut a = PidAllocator::new(&small_layout(1), PidMode::BestEffort);
        let x = alloc(&mut a, 5);
        let _ = a.switch(None, &x).unwrap();
        a.release(x).unwrap();
        // Same SpaceId, new space, same PID: must flush.
        let x2 = alloc(&mut a, 5);
        let s = a.switch(None, &x2).unwrap();
        assert_eq!(s.flush.reasons(), FlushReasons::PID_REUSED);
    }

    #[test]
    fn shared_writes_flush_on_switch_away_once() {
        let mut a = PidAllocator::new(&small_layout(3), PidMode::BestEffort);
        let mut x = alloc(&mut a, 0);
        let y = alloc(&mut a, 1);
        let _ = a.switch(None, &x).unwrap();
        a.note_shared_write(&mut x);
        let s = a.switch(Some(&mut x), &y).unwrap();
        assert_eq!(s.flush.reasons(), FlushReasons::SHARED_WRITES);
        assert!(!x.shared_dirty());
        assert!(done(&mut a, s.flush));
        let s = a.switch(None, &x).unwrap();
        assert_eq!(s.flush, FlushDecision::None);
        let s = a.switch(Some(&mut x), &y).unwrap();
        assert_eq!(s.flush, FlushDecision::None);
    }

    #[test]
    fn lean_ok_needs_a_dirty_own_pid_and_no_pending_shared_writes() {
        let mut a = PidAllocator::new(&small_layout(3), PidMode::BestEffort);
        let mut x = alloc(&mut a, 0);
        let mut y = alloc(&mut a, 1);
        // Never run: its PID is clean, a switch to it changes the dirty set.
        assert!(!a.lean_ok(&x));
        let _ = a.switch(None, &x).unwrap();
        let _ = a.switch(Some(&mut x), &y).unwrap();
        assert!(a.lean_ok(&x) && a.lean_ok(&y));
        // Its own shared write: the switch away from it must flush.
        a.note_shared_write(&mut x);
        assert!(x.shared_dirty());
        assert!(!a.lean_ok(&x));
        // Another space's pending shared write makes every switch flush.
        assert!(!y.shared_dirty());
        assert!(!a.lean_ok(&y));
        let s = a.switch(Some(&mut x), &y).unwrap();
        assert_eq!(s.flush.reasons(), FlushReasons::SHARED_WRITES);
        assert!(done(&mut a, s.flush));
        // The flush cleaned every PID but y's, which runs now.
        assert!(!a.lean_ok(&x));
        assert!(a.lean_ok(&y));
        let _ = a.switch(Some(&mut y), &x).unwrap();
        assert!(a.lean_ok(&x) && a.lean_ok(&y));

        // Guaranteed PIDs are never shared: shared writes need no flush.
        let mut g = PidAllocator::new(&small_layout(3), PidMode::Guaranteed);
        let mut x = alloc(&mut g, 0);
        let _ = g.switch(None, &x).unwrap();
        g.note_shared_write(&mut x);
        assert!(x.shared_dirty());
        assert!(g.lean_ok(&x));
    }

    #[test]
    fn lean_ok_is_false_for_a_pid_last_used_by_another_space() {
        // One PID, two spaces sharing it (best effort).
        let mut a = PidAllocator::new(&small_layout(1), PidMode::BestEffort);
        let mut x = alloc(&mut a, 0);
        let y = a.allocate(SpaceId(1)).unwrap().context;
        assert_eq!(x.pid(), y.pid());
        let _ = a.switch(None, &x).unwrap();
        assert!(a.lean_ok(&x));
        let s = a.switch(Some(&mut x), &y).unwrap();
        assert_eq!(s.flush.reasons(), FlushReasons::PID_REUSED);
        assert!(done(&mut a, s.flush));
        // The PID is dirty and small, but y's lines are in it now.
        assert!(a.is_dirty(x.pid()));
        assert!(!a.lean_ok(&x));
        assert!(a.lean_ok(&y));
    }

    #[test]
    fn lean_ok_is_false_while_a_large_spaces_windows_reach_the_pid() {
        let mut a = PidAllocator::new(&small_layout(3), PidMode::BestEffort);
        let mut big = alloc(&mut a, 0); // PID 3
        let mut p2 = alloc(&mut a, 1); // PID 2
        assert_eq!(p2.pid(), pid(2));
        let _ = a.switch(None, &big).unwrap();
        let d = a.set_large(&mut big, 2).unwrap();
        assert!(done(&mut a, d));
        assert_eq!(a.large_cached_highest(), 2);
        // The switch to PID 2 must flush the large space's window 2; until
        // that flush is done, PID 2 is dirty with p2 as its last user and
        // still overlapped.
        let s = a.switch(Some(&mut big), &p2).unwrap();
        assert_eq!(s.flush.reasons(), FlushReasons::LARGE_OVERLAP);
        assert!(a.is_dirty(pid(2)));
        assert_eq!(a.last_user(pid(2)), Some(SpaceId(1)));
        assert!(!a.lean_ok(&p2));
        assert!(done(&mut a, s.flush));
        assert!(a.lean_ok(&p2));
        let _ = &mut p2;
    }

    #[test]
    fn releasing_a_space_with_shared_writes_changes_the_generation() {
        let mut a = PidAllocator::new(&small_layout(3), PidMode::BestEffort);
        let mut x = alloc(&mut a, 0);
        let mut y = alloc(&mut a, 1);
        let _ = a.switch(None, &y).unwrap();
        let _ = a.switch(Some(&mut y), &x).unwrap();
        let _ = a.switch(Some(&mut x), &y).unwrap();
        a.note_shared_write(&mut x);
        let g = a.generation();
        a.release(x).unwrap();
        // The orphaned writes still need a flush: a precomputed switch made
        // before must not stay valid.
        assert_ne!(a.generation(), g);
        assert!(!a.lean_ok(&y));
        let s = a.switch(None, &y).unwrap();
        assert_eq!(s.flush.reasons(), FlushReasons::SHARED_WRITES);
        assert!(done(&mut a, s.flush));
        assert!(a.lean_ok(&y));
    }

    #[test]
    fn the_highest_window_may_be_the_last_pid() {
        let mut a = PidAllocator::new(&small_layout(4), PidMode::BestEffort);
        let mut big = alloc(&mut a, 0);
        assert!(a.set_large(&mut big, FcsePid::MAX).is_ok());
        assert_eq!(big.highest_window(), FcsePid::MAX);
    }

    /// Best effort over PIDs 2..=5 (the first PID above 1), each with two users.
    fn two_users_each_from_pid_2() -> (PidAllocator, Vec<PidContext>) {
        let layout = Layout::new(
            pid(2),
            pid(5),
            Region::new(0x8000_0000, 1 << 30).unwrap(),
            Region::new(0xC000_0000, 1 << 30).unwrap(),
        )
        .unwrap();
        let mut a = PidAllocator::new(&layout, PidMode::BestEffort);
        let mut ctxs: Vec<PidContext> = (0..4).map(|s| alloc(&mut a, s)).collect();
        for s in 4..8 {
            ctxs.push(a.allocate(SpaceId(s)).unwrap().context);
        }
        for p in 2..=5 {
            assert_eq!(a.users(pid(p)), 2);
        }
        (a, ctxs)
    }

    #[test]
    fn sharing_picks_the_least_used_pid_wherever_the_cursor_stands() {
        let (mut a, mut ctxs) = two_users_each_from_pid_2();
        // Each PID in turn becomes the only least-used one: it is chosen,
        // whichever PID the rotating cursor starts from.
        for (n, p) in [2u8, 3, 4, 5, 4, 2, 5, 3].into_iter().enumerate() {
            let i = ctxs.iter().position(|c| c.pid() == pid(p)).unwrap();
            a.release(ctxs.swap_remove(i)).unwrap();
            let got = a.allocate(SpaceId(20 + n as u16)).unwrap().context;
            assert_eq!(got.pid(), pid(p), "round {n}");
            ctxs.push(got);
        }
    }

    #[test]
    fn ties_are_broken_round_robin_below_the_last_shared_pid() {
        let (mut a, _ctxs) = two_users_each_from_pid_2();
        let first = a.allocate(SpaceId(20)).unwrap().context;
        // Its new user leaves again: every PID has two users, as before.
        let p = first.pid();
        a.release(first).unwrap();
        let next = a.allocate(SpaceId(21)).unwrap().context.pid();
        let below = if p.get() == 2 { 5 } else { p.get() - 1 };
        assert_eq!(next, pid(below));
    }

    #[test]
    fn a_flush_that_cleans_no_pid_keeps_the_generation() {
        // One PID shared by x and y: the switch to y flushes x's lines, and
        // y keeps running at that PID, so no PID becomes clean.
        let mut a = PidAllocator::new(&small_layout(1), PidMode::BestEffort);
        let mut x = alloc(&mut a, 0);
        let y = a.allocate(SpaceId(1)).unwrap().context;
        let _ = a.switch(None, &x).unwrap();
        let s = a.switch(Some(&mut x), &y).unwrap();
        assert_eq!(s.flush.reasons(), FlushReasons::PID_REUSED);
        let g = a.generation();
        assert!(done(&mut a, s.flush));
        assert_eq!(a.generation(), g);
        assert!(a.lean_ok(&y));
        // A flush that cleans a PID changes it.
        let mut a = PidAllocator::new(&small_layout(2), PidMode::BestEffort);
        let mut x = alloc(&mut a, 0);
        let y = alloc(&mut a, 1);
        let _ = a.switch(None, &x).unwrap();
        a.note_shared_write(&mut x);
        let s = a.switch(Some(&mut x), &y).unwrap();
        let g = a.generation();
        assert!(done(&mut a, s.flush));
        assert_ne!(a.generation(), g);
    }

    #[test]
    fn flush_reasons_combine_test_and_print_as_sets() {
        let r = FlushReasons::PID_REUSED.union(FlushReasons::SHARED_WRITES);
        assert_eq!(r.bits(), 0b101);
        assert!(r.contains(FlushReasons::PID_REUSED));
        assert!(r.contains(FlushReasons::SHARED_WRITES));
        assert!(r.contains(FlushReasons::NONE));
        assert!(!r.contains(FlushReasons::LARGE_OVERLAP));
        assert!(!r.contains(FlushReasons::PID_REUSED.union(FlushReasons::STALE_PID)));
        assert_eq!(r.union(r), r);
        assert!(!r.is_empty() && FlushReasons::NONE.is_empty());
        assert_eq!(
            std::format!("{r:?}"),
            "FlushReasons(PID_REUSED|SHARED_WRITES)"
        );
        assert_eq!(std::format!("{:?}", FlushReasons::NONE), "FlushReasons()");
    }

    #[test]
    fn pid_errors_say_what_went_wrong() {
        let cases = [
            (PidError::Exhausted, "no free FCSE PID"),
            (
                PidError::NotAllocated(pid(3)),
                "FCSE PID 3 is not allocated",
            ),
            (
                PidError::WindowOutOfRange(200),
                "FCSE window 200 is above 127",
            ),
            (
                PidError::TooManyUsers(pid(1)),
                "FCSE PID 1 already has 65535 users",
            ),
        ];
        for (e, text) in cases {
            assert_eq!(std::format!("{e}"), text);
        }
    }

    #[test]
    fn a_context_reports_its_size_and_the_allocator_its_epoch() {
        let mut a = PidAllocator::new(&small_layout(4), PidMode::BestEffort);
        let mut big = alloc(&mut a, 0);
        assert!(!big.is_large());
        assert_eq!(big.highest_window(), 0);
        let e = a.epoch();
        let _ = a.switch(None, &big).unwrap();
        assert_eq!(a.epoch(), e + 1);
        let old = big.pid();
        assert_eq!(a.last_user(old), Some(SpaceId(0)));
        let d = a.set_large(&mut big, 3).unwrap();
        assert!(done(&mut a, d));
        // Its old PID forgets it; PID 0 names it.
        assert_eq!(a.last_user(old), None);
        assert_eq!(a.last_user(FcsePid::ZERO), Some(SpaceId(0)));
        assert!(big.is_large());
        assert_eq!(big.highest_window(), 3);
        // A large space runs at PID 0, never lean: its windows overlap.
        assert!(!a.lean_ok(&big));
    }

    #[test]
    fn large_space_moves_to_pid_zero_and_overlaps_low_windows() {
        let mut a = PidAllocator::new(&small_layout(6), PidMode::BestEffort);
        let mut big = alloc(&mut a, 0); // PID 6
        let p5 = alloc(&mut a, 1); // PID 5
        let p2 = {
            let _four = alloc(&mut a, 2);
            let _three = alloc(&mut a, 3);
            alloc(&mut a, 4)
        };
        assert_eq!(p2.pid(), pid(2));
        let _ = a.switch(None, &big).unwrap();
        // Growing while running with dirty PID 6: the space must leave the cache.
        let d = a.set_large(&mut big, 3).unwrap();
        assert_eq!(d.reasons(), FlushReasons::BECAME_LARGE);
        assert_eq!(big.pid(), FcsePid::ZERO);
        assert_eq!(a.users(pid(6)), 0);
        assert_eq!(a.users(FcsePid::ZERO), 1);
        assert!(done(&mut a, d));
        assert!(a.is_dirty(FcsePid::ZERO));
        assert_eq!(a.large_cached_highest(), 3);
        // PID 5 is above window 3: no overlap.
        let s = a.switch(Some(&mut big), &p5).unwrap();
        assert_eq!(s.flush, FlushDecision::None);
        // PID 2 is inside windows 1..=3 of the cached large space.
        let s = a.switch(None, &p2).unwrap();
        assert_eq!(s.flush.reasons(), FlushReasons::LARGE_OVERLAP);
        assert!(done(&mut a, s.flush));
        assert_eq!(a.large_cached_highest(), 0);
        // Back to the large space: PID 2 is dirty and inside its windows.
        let s = a.switch(None, &big).unwrap();
        assert_eq!(s.flush.reasons(), FlushReasons::LARGE_OVERLAP);
        assert!(done(&mut a, s.flush));
        // Shrinking to no high mappings: its lines in windows 1..=3 are
        // still cached, so the next switch to PID 2 flushes once...
        assert_eq!(a.set_large(&mut big, 0).unwrap(), FlushDecision::None);
        let s = a.switch(None, &p2).unwrap();
        assert_eq!(s.flush.reasons(), FlushReasons::LARGE_OVERLAP);
        assert!(done(&mut a, s.flush));
        // ...and after that the two alternate without flushing.
        for _ in 0..3 {
            assert_eq!(a.switch(None, &big).unwrap().flush, FlushDecision::None);
            assert_eq!(a.switch(None, &p2).unwrap().flush, FlushDecision::None);
        }
        assert_eq!(
            a.set_large(&mut big, 200),
            Err(PidError::WindowOutOfRange(200))
        );
    }

    #[test]
    fn growing_into_dirty_windows_flushes() {
        let mut a = PidAllocator::new(&small_layout(4), PidMode::BestEffort);
        let mut big = alloc(&mut a, 0); // 4
        let mut p3 = alloc(&mut a, 1); // 3
        let _ = a.switch(None, &p3).unwrap();
        // Not running: the decision waits for its next switch.
        assert_eq!(a.set_large(&mut big, 3).unwrap(), FlushDecision::None);
        let s = a.switch(Some(&mut p3), &big).unwrap();
        assert_eq!(s.flush.reasons(), FlushReasons::LARGE_OVERLAP);
        assert!(done(&mut a, s.flush));

        // Growing while running, from PID 2 into window 1, which PID 1 dirtied.
        let mut a = PidAllocator::new(&small_layout(2), PidMode::BestEffort);
        let mut grow = alloc(&mut a, 0); // 2
        let p1 = alloc(&mut a, 1); // 1
        let _ = a.switch(None, &p1).unwrap();
        let _ = a.switch(None, &grow).unwrap();
        let d = a.set_large(&mut grow, 1).unwrap();
        assert_eq!(
            d.reasons(),
            FlushReasons::BECAME_LARGE.union(FlushReasons::LARGE_OVERLAP)
        );
        assert!(done(&mut a, d));
        assert!(a.is_dirty(FcsePid::ZERO));
        assert!(!a.is_dirty(pid(1)) && !a.is_dirty(pid(2)));
        assert_eq!(a.large_cached_highest(), 1);
        assert_eq!(a.last_user(FcsePid::ZERO), Some(SpaceId(0)));
    }

    #[test]
    fn a_running_large_space_growing_keeps_the_other_windows_dirty() {
        let mut a = PidAllocator::new(&small_layout(4), PidMode::BestEffort);
        let mut big = alloc(&mut a, 0); // 4
        let mut p3 = alloc(&mut a, 1); // 3
        let _ = a.switch(None, &p3).unwrap();
        let _ = a.switch(Some(&mut p3), &big).unwrap();
        let d = a.set_large(&mut big, 1).unwrap();
        assert!(done(&mut a, d));
        // PID 3 runs and dirties window 3, above the large space's windows.
        assert_eq!(
            a.switch(Some(&mut big), &p3).unwrap().flush,
            FlushDecision::None
        );
        assert_eq!(
            a.switch(Some(&mut p3), &big).unwrap().flush,
            FlushDecision::None
        );
        // Growing to window 2 while running: nothing dirty in 1..=2, no
        // flush, and window 3 stays dirty...
        assert_eq!(a.set_large(&mut big, 2).unwrap(), FlushDecision::None);
        assert!(a.is_dirty(pid(3)) && a.is_dirty(FcsePid::ZERO));
        // ...so growing over it flushes PID 3's lines.
        let d = a.set_large(&mut big, 3).unwrap();
        assert_eq!(d.reasons(), FlushReasons::LARGE_OVERLAP);
    }

    #[test]
    fn epoch_keeps_dirty_bits_when_a_switch_interrupts_the_flush() {
        let mut a = PidAllocator::new(&small_layout(1), PidMode::BestEffort);
        let x = alloc(&mut a, 0);
        let y = alloc(&mut a, 1);
        let _ = a.switch(None, &x).unwrap();
        let s = a.switch(None, &y).unwrap();
        let FlushDecision::Flush { ticket, .. } = s.flush else {
            panic!("expected flush")
        };
        // A switch back to x happens while the flush runs.
        let s2 = a.switch(None, &x).unwrap();
        assert!(s2.flush.is_flush());
        assert!(!a.flush_done(ticket), "interrupted flush must not clear");
        assert!(a.is_dirty(pid(1)));
        assert_eq!(a.last_user(pid(1)), Some(SpaceId(0)));
        // The second flush completes: only the running space's PID stays dirty.
        assert!(done(&mut a, s2.flush));
        assert!(a.is_dirty(pid(1)));
        assert_eq!(a.switch(None, &x).unwrap().flush, FlushDecision::None);
    }

    #[test]
    fn release_checks_the_context() {
        let mut a = PidAllocator::new(&small_layout(2), PidMode::BestEffort);
        let mut b = PidAllocator::new(&small_layout(2), PidMode::BestEffort);
        let x = alloc(&mut a, 0);
        assert_eq!(b.release(x), Err(PidError::NotAllocated(pid(2))));
        let y = alloc(&mut a, 1);
        assert_eq!(
            b.switch(None, &y).unwrap_err(),
            PidError::NotAllocated(pid(1))
        );
    }

    #[test]
    fn a_pids_user_count_never_overflows() {
        // One PID, shared by everyone: 65,535 users is the most it counts.
        // (Under Miri the count starts near the top: it interprets every
        // allocation.)
        let mut a = PidAllocator::new(&small_layout(1), PidMode::BestEffort);
        let first = if cfg!(miri) { u16::MAX - 3 } else { 0 };
        a.users[1] = first;
        let mut held: Vec<PidContext> = (first..u16::MAX)
            .map(|s| a.allocate(SpaceId(s)).unwrap().context)
            .collect();
        assert_eq!(a.users(pid(1)), u16::MAX);
        assert_eq!(a.allocate(SpaceId(7)), Err(PidError::TooManyUsers(pid(1))));
        assert_eq!(a.users(pid(1)), u16::MAX);
        // The PID still counts as in use after the refusal, and frees up.
        a.release(held.pop().unwrap()).unwrap();
        assert_eq!(a.users(pid(1)), u16::MAX - 1);
        held.push(a.allocate(SpaceId(7)).unwrap().context);
        // Moving to PID 0 is bounded the same way.
        let mut big = held.pop().unwrap();
        a.users[0] = u16::MAX;
        assert_eq!(
            a.set_large(&mut big, 2),
            Err(PidError::TooManyUsers(FcsePid::ZERO))
        );
        assert!(!big.is_large());
        assert_eq!(a.users(pid(1)), u16::MAX);
    }

    #[test]
    fn windows_mask_covers_one_to_highest() {
        assert_eq!(windows_mask(0), 0);
        assert_eq!(windows_mask(1), 0b10);
        assert_eq!(windows_mask(3), 0b1110);
        assert_eq!(windows_mask(127), !1u128);
    }

    /// A reference model of the cache: which (space, PID) pairs may have lines in it.
    #[derive(Clone, Copy, Debug)]
    enum Op {
        Create,
        Destroy(usize),
        Switch(usize),
        SharedWrite,
        Grow(usize, u8),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            1 => Just(Op::Create),
            1 => (0usize..16).prop_map(Op::Destroy),
            6 => (0usize..16).prop_map(Op::Switch),
            1 => Just(Op::SharedWrite),
            1 => ((0usize..16), 0u8..8).prop_map(|(i, w)| Op::Grow(i, w)),
        ]
    }

    proptest! {
        #![proptest_config(crate::proptest_config())]
        /// Soundness: whenever the next space could see a line another space
        /// left at one of its addresses, the allocator demands a flush.
        #[test]
        fn best_effort_never_misses_a_needed_flush(ops in proptest::collection::vec(op(), 1..200)) {
            let mut a = PidAllocator::new(&small_layout(4), PidMode::BestEffort);
            let mut spaces: Vec<PidContext> = Vec::new();
            let mut next_id = 0u16;
            // Model: per window 0..=4, which spaces may own lines there.
            let mut cache: [Vec<SpaceId>; 8] = Default::default();
            let mut shared_dirty_running = false;
            let mut running: Option<usize> = None;
            for o in ops {
                match o {
                    Op::Create => {
                        let r = a.allocate(SpaceId(next_id)).unwrap();
                        prop_assert_eq!(r.flush, FlushDecision::None);
                        next_id += 1;
                        spaces.push(r.context);
                    }
                    Op::Destroy(i) if i < spaces.len() => {
                        if running == Some(i) { running = None; }
                        else if let Some(r) = running { if r > i { running = Some(r - 1); } }
                        let c = spaces.remove(i);
                        a.release(c).unwrap();
                    }
                    Op::SharedWrite => {
                        if let Some(r) = running {
                            a.note_shared_write(&mut spaces[r]);
                            shared_dirty_running = true;
                        }
                    }
                    Op::Grow(i, w) if i < spaces.len() => {
                        let d = a.set_large(&mut spaces[i], w).unwrap();
                        let flushed = d.is_flush();
                        if d.is_flush() {
                            for c in cache.iter_mut() { c.clear(); }
                            let _ = done(&mut a, d);
                        }
                        if running == Some(i) {
                            let s = spaces[i].space();
                            let conflict = cache.iter().take(w as usize + 1).any(|c| c.iter().any(|&o| o != s));
                            prop_assert!(!conflict || flushed, "missed flush growing {:?}", s);
                            for c in cache.iter_mut().take(w as usize + 1) { if !c.contains(&s) { c.push(s); } }
                        }
                    }
                    Op::Switch(i) if i < spaces.len() => {
                        let next_space = spaces[i].space();
                        let windows: Vec<usize> = if spaces[i].is_large() {
                            (0..=spaces[i].highest_window() as usize).collect()
                        } else {
                            std::vec![spaces[i].pid().get() as usize]
                        };
                        let conflict = windows.iter().any(|&w| cache[w].iter().any(|&s| s != next_space));
                        let s = if let Some(r) = running {
                            if r == i {
                                let (n, _) = (spaces[i].space(), ());
                                let _ = n;
                                // Switching to itself: take prev = None to avoid aliasing.
                                a.switch(None, &spaces[i]).unwrap()
                            } else {
                                let (lo, hi) = spaces.split_at_mut(r.max(i));
                                let (p, n) = if r < i { (&mut lo[r], &hi[0]) } else { (&mut hi[0], &lo[i]) };
                                a.switch(Some(p), n).unwrap()
                            }
                        } else {
                            a.switch(None, &spaces[i]).unwrap()
                        };
                        let must = conflict || (shared_dirty_running && running != Some(i));
                        if must {
                            prop_assert!(s.flush.is_flush(), "missed flush switching to {:?}", next_space);
                        }
                        if running != Some(i) { shared_dirty_running = spaces[i].shared_dirty(); }
                        if s.flush.is_flush() {
                            for c in cache.iter_mut() { c.clear(); }
                            prop_assert!(done(&mut a, s.flush));
                        }
                        for w in windows { if !cache[w].contains(&next_space) { cache[w].push(next_space); } }
                        running = Some(i);
                    }
                    _ => {}
                }
            }
        }
    }
}
