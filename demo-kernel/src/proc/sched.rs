//! The scheduler: the ready set (one bit per runnable process slot, an O(1)
//! round-robin pick with `CLZ`, which ARMv5 has), the one function through
//! which every scheduling state changes (so that the set never disagrees
//! with the table), the general decision after a trap ([`Wish`],
//! [`Kernel::choose`]), and entering and leaving user mode
//! ([`Kernel::run`]).

use mmu_armv5::regs::{Cp15Ext, Dacr, DomainAccess};
use mmu_armv5::FcsePid;

use super::kernel::{installed, Exit, Kernel, State, TrapFrame};
use super::strategy::Strategy;
use super::strategy::MAX_PROCS;
use super::timer;
use crate::mmu::KERNEL_DOMAIN;

// The set is two 32-bit words: one bit per slot.
const _: () = assert!(MAX_PROCS == 64);

/// The runnable processes ([`State::runnable`]), one bit per slot: slot
/// `i` is bit `i & 31` of word `i >> 5` (the assembly fast path,
/// `asm/fastpath.s`, reads and writes the two words).
#[repr(transparent)]
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

impl Kernel {
    /// The process a [`Wish`] comes to, ready to return to user mode: one
    /// blocked in a TCM call has its exchange continued first, as itself
    /// (switched to), and is taken only when the call is over; preempted
    /// again, the next one is chosen. When none can run (every process
    /// ended, or the rest are deadlocked, and then they are ended) the
    /// kernel leaves user mode for good.
    #[inline(never)]
    pub(super) fn choose(&mut self, w: Wish) -> usize {
        let mut next = self.choose_runnable(w);
        while self.procs[next].state == State::InTcm {
            let over = if self.current == Some(next) || self.switch_full(next) {
                self.tcm_continue(next)
            } else {
                self.end(next, Exit::SwitchFailed);
                false
            };
            if over {
                break;
            }
            next = self.choose_runnable(Wish::Next(self.pick_after(next)));
        }
        next
    }

    /// [`Kernel::choose`] without the TCM continuation: any runnable process.
    fn choose_runnable(&mut self, w: Wish) -> usize {
        let next = match w {
            Wish::Next(Some(n)) => Some(n),
            Wish::Next(None) => self.pick(None),
            Wish::Resume(prefer) => {
                let keep = self
                    .current
                    .filter(|c| self.procs[*c].state == State::Ready);
                match (prefer, keep) {
                    (None, Some(c)) => Some(c),
                    _ => self.pick(prefer),
                }
            }
        };
        match next {
            Some(n) => n,
            None => {
                for i in 0..MAX_PROCS {
                    if self.procs[i].alive() {
                        self.end(i, Exit::Deadlock);
                    }
                }
                self.leave()
            }
        }
    }

    /// Puts the kernel's own address space back: the kernel table in the
    /// TTBR, PID 0, only the kernel's domain enabled.
    fn restore_kernel_space(&mut self) {
        let root = crate::mmu::with_tables(|t, _| t.root());
        let c = &mut self.cp15;
        // SAFETY: the kernel table maps everything the kernel uses; PID 0
        // leaves addresses unrelocated; the kernel's domain stays client.
        unsafe {
            if let Ok(ttbr) = mmu_armv5::regs::Ttbr::new(root) {
                c.set_ttbr(ttbr);
            }
            c.set_fcse_pid(FcsePid::ZERO);
            c.set_dacr(Dacr::only(KERNEL_DOMAIN, DomainAccess::Client));
        }
        crate::cp15::flush_tlb(c);
    }

    /// Runs the processes until none can run.
    pub fn run(slice_ticks: u32) {
        // SAFETY: thread context (the scenario runner), no reference to
        // the kernel alive; `k` is not used once user mode is entered
        // below (the traps take their own).
        let Some(k) = (unsafe { installed() }) else {
            return;
        };
        if let Strategy::Table(_) = k.strategy {
            // The per-table strategies map user pages in the user domain
            // and never write the DACR: enable it (client) beside the kernel's.
            let dacr = Dacr::only(KERNEL_DOMAIN, DomainAccess::Client)
                .with(super::strategy::USER_DOMAIN, DomainAccess::Client);
            // SAFETY: the kernel's domain stays client; the user domain
            // only holds user mappings, checked by their access permissions.
            unsafe { k.cp15.set_dacr(dacr) };
        }
        timer::start(slice_ticks);
        let ctx = core::ptr::addr_of_mut!(k.kctx);
        // SAFETY: `__sched_enter` saves the callee-saved registers in `ctx`
        // (inside the installed kernel, which outlives the run) and returns
        // here when `__sched_leave(ctx)` is called.
        unsafe { __sched_enter(ctx) };
        timer::stop();
    }

    /// No process can run: leave user mode for good (back into [`Kernel::run`]).
    fn leave(&mut self) -> ! {
        timer::stop();
        self.restore_kernel_space();
        let ctx = core::ptr::addr_of!(self.kctx);
        // SAFETY: `kctx` was filled by `__sched_enter` in `run`, whose frame
        // is still live below the trap frames being abandoned.
        unsafe { __sched_leave(ctx) }
    }
}

extern "C" {
    fn __sched_enter(ctx: *mut [u32; 10]);
    fn __sched_leave(ctx: *const [u32; 10]) -> !;
}

/// What a trap asks the scheduler for ([`Kernel::finish`]).
#[derive(Clone, Copy)]
pub(super) enum Wish {
    /// This process (a round-robin pick, or the current one again); `None`:
    /// round robin after the current one.
    Next(Option<usize>),
    /// The current process if it is ready and nothing is preferred, else
    /// the preferred one if ready, else round robin.
    Resume(Option<usize>),
}

/// Called by `__sched_enter` (`asm/trap.s`): picks the first process and
/// returns its frame.
#[no_mangle]
pub extern "C" fn sched_first_frame() -> *mut TrapFrame {
    // SAFETY: called by `__sched_enter` from `Kernel::run`, which holds no
    // reference to the kernel across it (see there).
    match unsafe { installed() } {
        Some(k) => {
            k.current = None;
            k.finish(Wish::Resume(None))
        }
        None => defmt::panic!("user mode entered without a kernel"),
    }
}

/// Called by `__sched_enter` if the SVC stack every trap runs on is not
/// 8-byte aligned (the AAPCS requires it at every call).
#[no_mangle]
pub extern "C" fn misaligned_svc_stack(sp: u32) -> ! {
    defmt::panic!("SVC stack pointer {=u32:#010x} is not 8-byte aligned", sp)
}
