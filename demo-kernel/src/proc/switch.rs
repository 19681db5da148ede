//! The switch, the last step before the return to user mode: the
//! decision's process made current through its precomputed switch of the
//! current generation, the kernel's own record ([`Fast`]: FASS, DACR and
//! FCSEIDR; naive and FCSE-only, the TTBR and FCSEIDR of `fass`'s
//! [`LeanSwitch`](fass::LeanSwitch), with its maintenance), else through
//! the strategy's full `switch_to`, which records a fresh one.

use fass::{ClassicKind, SpaceId, SwitchStrategy};
use mmu_armv5::maint::CacheMaintenance;
use mmu_armv5::marker::Event;
use mmu_armv5::regs::{Cp15Ext, HwCp15, Ttbr};

use super::kernel::{Exit, Fast, Kernel, State, TrapFrame};
use super::sched::Wish;
use super::strategy::{dispatch, Strategy, MAX_PROCS};

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
    /// is dropped if `next` is the current process). A process whose
    /// precomputed switch is of the current generation ([`Fast`]) is
    /// switched to by applying it ([`Kernel::apply_lean`]): the lean path,
    /// a handful of instructions besides the register writes and the
    /// mechanism's maintenance, the same for every strategy; anything else
    /// takes the full switch.
    #[inline(always)]
    pub(super) fn switch_ready(&mut self, next: usize) -> *mut TrapFrame {
        let next = next & (MAX_PROCS - 1);
        if self.current == Some(next) {
            return &mut self.procs[next].ctx;
        }
        let gen = self.gen;
        let p = &mut self.procs[next];
        let f = p.fast;
        // A record the VFP marked (`vfp::Kernel::vfp_switch_in`: the
        // process gets the VFP back at this switch) is valid otherwise:
        // tested only when the generation does not match.
        if f.gen == gen || (f.gen ^ 1 == gen && self.vfp_switch_in(next)) {
            match &self.strategy {
                // SAFETY: the values `fass` wrote on `next`'s last full
                // switch, with no recycle, release, flush or space/segment
                // change since (the generation): they keep the kernel's
                // domain client and open only `next`'s domains, and its
                // PID's window may be served from the caches
                // (`set_switch_regs`'s contract).
                Strategy::Fass(_) => unsafe { self.cp15.set_switch_regs(f.regs) },
                Strategy::Table(ts) => crate::cp15::lend(&mut self.cp15, |c| {
                    // SAFETY: the record of `next`'s table, made from the
                    // strategy's own of this generation (`Fast::table`).
                    unsafe { apply_table(c, ts.kind(), &f) }
                }),
            }
            self.current = Some(next);
            crate::marker::event(Event::Space, next as u32);
            self.counters.switches += 1;
            self.counters.lean_switches += 1;
            return &mut self.procs[next].ctx;
        }
        self.switch_slow(next)
    }

    /// A switch that is not lean: through the strategy; on failure the
    /// process ends and another one is chosen.
    #[inline(never)]
    pub(super) fn switch_slow(&mut self, mut next: usize) -> *mut TrapFrame {
        loop {
            if self.current == Some(next) || self.switch_full(next) {
                return &mut self.procs[next].ctx;
            }
            self.end(next, Exit::SwitchFailed);
            next = self.choose(Wish::Resume(None));
        }
    }

    #[inline(never)]
    pub(super) fn switch_full(&mut self, next: usize) -> bool {
        let r = self.sys(
            |st, sys| dispatch!(st, s => SwitchStrategy::switch_to(s, sys, SpaceId(next as u16))),
        );
        match r {
            Ok(()) => {
                if self.current != Some(next) {
                    self.counters.switches += 1;
                }
                self.current = Some(next);
                crate::marker::event(Event::Space, next as u32);
                self.procs[next].fast = match &self.strategy {
                    Strategy::Fass(_) => Fast::fass(self.gen, self.cp15.switch_regs()),
                    Strategy::Table(ts) => ts
                        .lean_switch(SpaceId(next as u16))
                        .and_then(|rec| Fast::table(self.gen, &rec))
                        .unwrap_or(Fast::NONE),
                };
                true
            }
            Err(e) => {
                defmt::error!("switch to process {=usize} failed: {}", next, e);
                false
            }
        }
    }
}

/// A per-table strategy's lean switch from the kernel's record `f`, on its
/// CP15 handle `c` (lent by value, [`crate::cp15::lend`]) (what
/// the assembly fast path does, `asm/fastpath.s`): naive, the caches
/// cleaned and invalidated through the counting platform
/// ([`fast_flush_caches`](super::fastpath::fast_flush_caches)); the TTBR,
/// the TLB invalidated; FCSE-only, the FCSEIDR. The register writes and the
/// TLB invalidation are counted as lean switches (`Kernel::mark_now`).
///
/// # Safety
/// `f` is the record of the process switched to, made from the strategy's
/// own precomputed switch ([`Fast::table`]) in the current generation.
///
/// Out of line: the switch page (`.text.kswitch`) has no room for it.
#[inline(never)]
unsafe fn apply_table(mut c: HwCp15, kind: ClassicKind, f: &Fast) {
    if kind == ClassicKind::Naive {
        super::fastpath::fast_flush_caches();
    }
    // SAFETY: the table of the process switched to, which holds the
    // kernel's entries; naive: the caches were just cleaned and
    // invalidated; FCSE: the record exists only while the switch needs no
    // flush (`fass::lean`), the kernel runs above 32 MiB.
    unsafe { c.set_ttbr(Ttbr::from_bits(f.ttbr)) };
    crate::board::maint(&mut c).invalidate_tlb();
    if let ClassicKind::Fcse(_) = kind {
        // SAFETY: as above.
        unsafe { c.set_fcse_pid(f.regs.pid()) };
    }
}
