//! The switch, the last step before the return to user mode: the
//! decision's process made current through its precomputed switch (FASS:
//! the kernel's own DACR/FCSEIDR record of the current generation; naive
//! and FCSE-only: `fass`'s [`SwitchStrategy::switch_lean`]), else through
//! the strategy's full `switch_to`, which records a fresh one.

use fass::{SpaceId, SwitchStrategy};
use mmu_armv5::regs::Cp15Ext;

use super::kernel::{Exit, Fast, Kernel, State, TrapFrame};
use super::platform;
use super::sched::Wish;
use super::strategy::{dispatch, Strategy, MAX_PROCS};
use super::timer;
use crate::cp15::hw;

impl Kernel {
    /// Decides on the process to run after a trap and switches to it
    /// ([`Kernel::switch_ready`]); returns its frame, which
    /// `__return_to_user` resumes. Out of line, on the switch page: the
    /// short paths switch to a hand-off directly and come here only for a
    /// general decision.
    #[inline(never)]
    #[link_section = ".text.kswitch"]
    pub(super) fn finish(&mut self, w: Wish) -> *mut TrapFrame {
        let ready = |k: &Kernel, n: usize| k.procs[n & (MAX_PROCS - 1)].state == State::Ready;
        let next = match (w, self.current) {
            // (Never a process blocked in a TCM call: `choose` continues it.)
            (Wish::Next(Some(n)), Some(c)) if n == c && self.procs[c].state != State::InTcm => c,
            // A ready process named (a round-robin pick, a hand-off): what
            // `choose` would take, without its general path.
            (Wish::Next(Some(n)) | Wish::Resume(Some(n)), _) if ready(self, n) => n,
            (Wish::Resume(None), Some(c)) if ready(self, c) => c,
            _ => self.choose(w),
        };
        self.switch_ready(next)
    }

    /// Switches to `next`, decided on (ready, or the current process
    /// again), and returns its frame. The switch tail's clock
    /// ([`SwitchClock`](super::clock::SwitchClock)) starts here (its stamp
    /// is dropped if `next` is the current process). Under FASS a process
    /// whose precomputed registers are of the current generation ([`Fast`])
    /// is switched to by writing them: the lean path, a handful of
    /// instructions besides the two register writes; naive and FCSE-only
    /// take `fass`'s precomputed switch ([`SwitchStrategy::switch_lean`])
    /// here too; anything else takes the full switch.
    #[inline(always)]
    pub(super) fn switch_ready(&mut self, next: usize) -> *mut TrapFrame {
        let next = next & (MAX_PROCS - 1);
        let t0 = timer::now();
        if self.current == Some(next) {
            return &mut self.procs[next].ctx;
        }
        let gen = self.gen;
        let p = &mut self.procs[next];
        let f = p.fast;
        if f.gen == gen {
            // SAFETY: the values `fass` wrote on `next`'s last full switch,
            // with no recycle, release, flush or space/segment change since
            // (the generation): they keep the kernel's domain client and
            // open only `next`'s domains, and its PID's window may be served
            // from the caches (`set_switch_regs`'s contract).
            unsafe { hw().set_switch_regs(f.regs) };
            self.current = Some(next);
            self.counters.switches += 1;
            self.counters.lean_switches += 1;
            self.clock.t0 = Some(t0);
            return &mut p.ctx;
        }
        // Naive and FCSE-only: their precomputed switch, inline as well (the
        // same quality of path as FASS's; the mechanisms differ).
        if self.switch_table_lean(next, t0) {
            return &mut self.procs[next].ctx;
        }
        self.switch_slow(next, t0)
    }

    /// A switch that is not lean: through the strategy; on failure the
    /// process ends and another one is chosen.
    #[inline(never)]
    pub(super) fn switch_slow(&mut self, mut next: usize, t0: u32) -> *mut TrapFrame {
        loop {
            if self.current == Some(next) || self.switch_full(next, t0) {
                return &mut self.procs[next].ctx;
            }
            self.end(next, Exit::SwitchFailed);
            next = self.choose(Wish::Resume(None));
        }
    }

    /// Naive and FCSE-only: the strategy's precomputed switch to `next`
    /// ([`SwitchStrategy::switch_lean`]: TTBR, FCSEIDR under FCSE, and the
    /// maintenance the mechanism needs, through the counting platform), if
    /// it holds one of the current generation; `false`: nothing was done.
    #[inline(always)]
    fn switch_table_lean(&mut self, next: usize, t0: u32) -> bool {
        let Strategy::Table(ts) = &mut self.strategy else {
            return false;
        };
        if ts
            .switch_lean(&mut platform::counting(), SpaceId(next as u16))
            .is_err()
        {
            return false;
        }
        self.current = Some(next);
        self.counters.switches += 1;
        self.clock.t0 = Some(t0);
        true
    }

    #[inline(never)]
    pub(super) fn switch_full(&mut self, next: usize, t0: u32) -> bool {
        let r = self.sys(
            |st, sys| dispatch!(st, s => SwitchStrategy::switch_to(s, sys, SpaceId(next as u16))),
        );
        match r {
            Ok(()) => {
                if self.current != Some(next) {
                    self.counters.switches += 1;
                }
                self.current = Some(next);
                if let Strategy::Fass(_) = &self.strategy {
                    self.procs[next].fast = Fast {
                        gen: self.gen,
                        regs: hw().switch_regs(),
                    };
                }
                self.clock.t0 = Some(t0);
                true
            }
            Err(e) => {
                defmt::error!("switch to process {=usize} failed: {}", next, e);
                false
            }
        }
    }
}
