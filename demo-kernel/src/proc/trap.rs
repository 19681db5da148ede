//! Traps from user mode: the entry points the stubs of `asm/trap.s` call
//! ([`trap_entry`], [`trap_dabt`], [`trap_pabt`]), the short paths, the
//! abort fast paths and the general handler ([`Kernel::trap`]).
//!
//! Short paths: the system calls `YIELD`, `SEND`, `CALL`, `RECV`, `REPLY`,
//! `REPLY_WAIT` and `SEND_RECV` with register-sized messages (r1-r3), and the timer
//! interrupt, handled straight from the saved frame without the generic
//! dispatcher ([`Kernel::trap`], [`Kernel::syscall`]). A hand-off (the
//! receiver of a message, the caller of a reply, a round-robin successor)
//! is switched to directly ([`Kernel::switch_ready`]); anything else goes
//! through the scheduler's decision ([`Kernel::finish`]). Either way the
//! switch is the last step before the return.

use super::clock::{self, FaultClock};
use fass::{Resolution, SpaceId, SwitchStrategy};
use mmu_armv5::regs::{Cp15Ext, Far, Fsr, HwCp15};

use super::kernel::{running_kernel, After, Exit, Kernel, State, TrapFrame, TrapKind};
use super::sched::Wish;
use super::strategy::MAX_PROCS;
use super::strategy::{dispatch, FassS, Strategy};
use super::timer;
use crate::abi::nr;

impl Kernel {
    /// The system call of the current process if it is one of the short
    /// path's, done: the frame to resume. `None`: not one of them (or no
    /// process runs), nothing was done; take the generic path.
    #[inline(always)]
    pub(super) fn svc_fast(&mut self) -> Option<*mut TrapFrame> {
        let cur = self.current? & (MAX_PROCS - 1);
        let number = self.procs[cur].ctx.r[7];
        match number {
            nr::YIELD => {
                self.count_syscall(cur);
                self.procs[cur].ctx.r[0] = 0;
                let next = self.ready.next_after(cur);
                match next {
                    Some(n) if n != cur && self.procs[n].state == State::Ready => {
                        Some(self.switch_ready(n))
                    }
                    _ => Some(self.finish(Wish::Next(next))),
                }
            }
            nr::SEND | nr::CALL => {
                self.count_syscall(cur);
                let (dest, msg) = self.message(cur);
                match self.ipc_send(cur, dest, msg, number == nr::CALL) {
                    // The receiver, made ready (never `cur`): hand-off.
                    Some(d) => Some(self.switch_ready(d)),
                    None => Some(self.finish(Wish::Resume(None))),
                }
            }
            // Out of line: the switch page is full.
            nr::SEND_RECV => Some(self.svc_send_recv(cur)),
            nr::RECV => {
                self.count_syscall(cur);
                self.ipc_recv(cur);
                Some(self.finish(self.resume_or_block(cur)))
            }
            nr::REPLY | nr::REPLY_WAIT => {
                self.count_syscall(cur);
                let (dest, msg) = self.message(cur);
                if let Err(e) = self.ipc_reply(cur, dest, msg) {
                    self.set_result(cur, Err(e));
                    return Some(self.finish(Wish::Next(Some(cur))));
                }
                if number == nr::REPLY {
                    self.set_result(cur, Ok(0));
                } else {
                    self.ipc_recv(cur);
                    if self.procs[cur].state == State::Ready {
                        // A sender was queued: the server goes on with it.
                        return Some(self.finish(Wish::Next(Some(cur))));
                    }
                }
                // Hand-off: the caller, made ready (never `cur`), runs next.
                Some(self.switch_ready(dest as usize))
            }
            _ => None,
        }
    }

    /// `SEND_RECV` of `cur` ([`Kernel::ipc_send_recv`]): the frame to
    /// resume, the receiver's on a hand-off.
    #[inline(never)]
    fn svc_send_recv(&mut self, cur: usize) -> *mut TrapFrame {
        self.count_syscall(cur);
        let (dest, msg) = self.message(cur);
        match self.ipc_send_recv(cur, dest, msg) {
            // The receiver, made ready (never `cur`): hand-off.
            Ok(Some(d)) => self.switch_ready(d),
            // Queued on `dest`: `cur` waits.
            Ok(None) => self.finish(Wish::Resume(None)),
            Err(e) => {
                self.set_result(cur, Err(e));
                self.finish(Wish::Next(Some(cur)))
            }
        }
    }

    /// A timer interrupt in the current process: acknowledged, the kernel
    /// job's tick, then round robin, the next ready process switched to
    /// directly. `None`: not the timer (or no process runs), nothing was
    /// done; take the generic path.
    #[inline(always)]
    pub(super) fn irq_fast(&mut self) -> Option<*mut TrapFrame> {
        if !self.irq_tick() {
            return None;
        }
        Some(self.irq_after_tick())
    }

    /// The timer's tick, if it raised the interrupt and a process runs:
    /// acknowledged, counted, the kernel job's step; `false`: nothing done.
    #[inline(always)]
    pub(super) fn irq_tick(&mut self) -> bool {
        if self.current.is_none() || !timer::ack() {
            return false;
        }
        self.counters.irqs += 1;
        self.kernel_job_tick();
        true
    }

    /// After the tick ([`Kernel::irq_tick`]): round robin, the next ready
    /// process switched to directly; the frame to resume.
    #[inline(always)]
    pub(super) fn irq_after_tick(&mut self) -> *mut TrapFrame {
        let Some(cur) = self.current else {
            return self.finish(Wish::Resume(None));
        };
        let cur = cur & (MAX_PROCS - 1);
        let next = self.ready.next_after(cur);
        if next != Some(cur) {
            self.counters.preemptions += 1;
        }
        match next {
            Some(n) if self.procs[n].state == State::Ready => self.switch_ready(n),
            _ => self.finish(Wish::Next(next)),
        }
    }

    /// Counts a system call of `cur`.
    #[inline(always)]
    fn count_syscall(&mut self, cur: usize) {
        self.counters.syscalls += 1;
        self.procs[cur].syscalls += 1;
    }

    /// The register-sized message of `cur`'s system call: r0 (the other
    /// party) and r1-r3.
    #[inline(always)]
    fn message(&self, cur: usize) -> (u32, [u32; 3]) {
        let c = &self.procs[cur].ctx.r;
        (c[0], [c[1], c[2], c[3]])
    }

    /// After a call that may have blocked `cur`: `cur` again if it is
    /// ready, else a scheduling decision.
    #[inline(always)]
    fn resume_or_block(&self, cur: usize) -> Wish {
        if self.procs[cur].state == State::Ready {
            Wish::Next(Some(cur))
        } else {
            Wish::Resume(None)
        }
    }
}

impl Kernel {
    /// Resolves an abort of the current process through the strategy;
    /// `true` if the access can be retried.
    pub fn resolve(&mut self, fsr: Fsr, far: Far) -> bool {
        self.resolve_fault(fsr, far).is_some()
    }

    /// [`Kernel::resolve`], saying what the resolution flushed:
    /// `Some(flushed)` if the access can be retried.
    pub fn resolve_fault(&mut self, fsr: Fsr, far: Far) -> Option<fass::Flushed> {
        let r = self.sys(|st, sys| dispatch!(st, s => SwitchStrategy::resolve(s, sys, fsr, far)));
        match r {
            Ok(Resolution::Resolved { flushed, .. }) => {
                if fsr.is_domain_fault() {
                    self.counters.domain_faults += 1;
                } else {
                    self.counters.fills += 1;
                }
                Some(flushed)
            }
            Ok(Resolution::NotFass(_)) => None,
            Err(e) => {
                defmt::error!("fault resolution failed: {}", e);
                None
            }
        }
    }

    /// Handles a trap of kind `kind` (see `asm/trap.s`) of the current
    /// process, whose registers are in its frame; says what to run next.
    #[inline(never)]
    fn trap(&mut self, kind: u32) -> Wish {
        let Some(cur) = self.current else {
            return Wish::Resume(None);
        };
        match kind {
            2 => match self.syscall(cur) {
                After::Continue if self.procs[cur].state == State::Ready => Wish::Next(Some(cur)),
                After::Continue => Wish::Resume(None),
                After::Yield => Wish::Next(self.pick_after(cur)),
                After::Reschedule(prefer) => Wish::Resume(prefer),
            },
            6 => {
                if timer::ack() {
                    self.counters.irqs += 1;
                    self.kernel_job_tick();
                    let next = self.pick_after(cur);
                    if next != Some(cur) {
                        self.counters.preemptions += 1;
                    }
                    return Wish::Next(next);
                }
                Wish::Next(Some(cur))
            }
            3 | 4 => {
                let c = &self.cp15;
                // A prefetch abort has no FAR: the address is the pc.
                let (trap, fsr, far) = if kind == 4 {
                    (TrapKind::Data, c.dfsr(), c.far())
                } else {
                    (
                        TrapKind::Prefetch,
                        c.ifsr(),
                        Far::from_bits(self.procs[cur].ctx.pc),
                    )
                };
                if let Some(flushed) = self.resolve_fault(fsr, far) {
                    let domain = fsr.is_domain_fault();
                    if domain && flushed == fass::Flushed::TlbOnly {
                        self.counters.flush_free_collisions += 1;
                    }
                    if domain && kind == 4 {
                        let i = if flushed == fass::Flushed::Full {
                            FaultClock::FLUSHED
                        } else {
                            FaultClock::FLUSH_FREE
                        };
                        if clock::MEASURING {
                            self.fault_clock.general = Some((i, clock::abort_stamp()));
                        }
                    }
                    return Wish::Next(Some(cur));
                }
                self.end(
                    cur,
                    Exit::Killed {
                        trap,
                        fsr: fsr.bits(),
                        addr: far.bits(),
                    },
                );
                Wish::Resume(None)
            }
            // An undefined instruction that was the VFP's (EN clear): the
            // process gets the VFP and the instruction runs again.
            1 if self.vfp_undefined(cur) => Wish::Next(Some(cur)),
            _ => {
                let addr = self.procs[cur].ctx.pc;
                self.end(
                    cur,
                    Exit::Killed {
                        trap: TrapKind::Undefined,
                        fsr: 0,
                        addr,
                    },
                );
                Wish::Resume(None)
            }
        }
    }

    /// The data-abort fast path under FASS ([`Kernel::abort_fast`] with
    /// the DFSR and FAR): `Some(DFSR bits)` if resolved (a domain fault is
    /// a collision, timed by the fault clock: [`fast_abort_return`]).
    #[inline(always)]
    fn dabt_fast(&mut self) -> Option<u32> {
        let fsr = self.cp15.dfsr();
        let far = self.cp15.far();
        self.abort_fast(fsr, far)?;
        Some(fsr.bits())
    }

    /// The prefetch-abort fast path under FASS for the instruction at `pc`
    /// ([`Kernel::abort_fast`] with the IFSR and `pc`: an ARMv5 prefetch
    /// abort has no fault address register; `pc` is a virtual address,
    /// relocated by `fass` below 32 MiB as the FAR would be).
    #[inline(always)]
    fn pabt_fast(&mut self, pc: u32) -> bool {
        let fsr = self.cp15.ifsr();
        self.abort_fast(fsr, Far::from_bits(pc)).is_some()
    }

    /// The abort fast path under FASS: a fault `fass` resolves without
    /// flushing anything ([`fass::Fass::resolve_fast`]: a fill, or a
    /// collision with a clean domain): no strategy dispatch, no
    /// table-pool borrow, no scheduling decision (the same process again,
    /// as `trap` + `finish` would decide). The generation stays valid
    /// (`resolve_fast` never changes it). It is counted once, by `fass`
    /// ([`fass::Fass::fast_faults`]), and folded into the kernel's counters
    /// when they are read ([`Kernel::counters`]). `Some(domain fault)`:
    /// resolved; `None`: nothing was done, take the general path.
    #[inline(always)]
    fn abort_fast(&mut self, fsr: Fsr, far: Far) -> Option<bool> {
        let cur = self.current?;
        let cp15 = &mut self.cp15;
        // The strategy sits above 4 KiB into the kernel record: `opaque`
        // makes its address once, so that its tag and the FASS record
        // after it are reached with immediate offsets from it (without it
        // the optimiser builds both large offsets from the kernel's base).
        let Strategy::Fass(fs) = opaque(&mut self.strategy) else {
            return None;
        };
        let id = SpaceId(cur as u16);
        // SAFETY: as in `sync`: the current process runs with the registers
        // `fass` last wrote for it, in the current generation.
        if !fs.runs(id) && unsafe { fs.note_switched(id) }.is_err() {
            // After lean switches (see `sync`).
            return None;
        }
        // `opaque` only hides the pointer's origin: without it the
        // optimiser folds in the static's address and rebuilds it for each
        // field access (two more instructions each, measured under icount).
        resolve_fast(opaque(fs), cp15, fsr, far)?;
        // `resolve_fast` resolves FS 0x5/0x7 (translation) and 0x9/0xB
        // (domain) only: bit 3 tells them apart.
        let domain = fsr.bits() & 0b1000 != 0;
        debug_assert_eq!(domain, fsr.is_domain_fault());
        Some(domain)
    }
}

/// `r` itself, its value hidden from the optimiser as
/// [`core::hint::black_box`] hides it, but in its register: `black_box`
/// stores it to the stack and loads it back (three instructions on the
/// abort fast path, measured under icount).
#[inline(always)]
// The block takes the pointer's value only; it reads and writes no memory.
#[allow(clippy::pointers_in_nomem_asm_block)]
fn opaque<T>(r: &mut T) -> &mut T {
    let mut p: *mut T = r;
    // SAFETY: an empty assembly block that neither reads nor writes memory
    // nor the stack nor the flags; it only claims to change `p`, which it
    // leaves as it is.
    unsafe {
        core::arch::asm!("/* {0} */", inout(reg) p, options(nomem, nostack, preserves_flags))
    };
    // SAFETY: `p` is `fs`, unchanged: the same unique borrow, reborrowed for
    // its lifetime.
    unsafe { &mut *p }
}

/// [`fass::Fass::resolve_fast`] on the kernel's FASS and its CP15
/// handle `c` (borrowed: inlined whole, the borrow of the zero-sized handle
/// costs nothing here, while a by-value stand-in through
/// [`crate::cp15::lend`]'s closure measured 21 instructions more on
/// `kind=fault`): what it flushed, if
/// it resolved the fault. Inlined into `trap_dabt`'s frame (one call
/// frame on the fast path); the manager is reached through one base
/// register (`opaque`), its hot fields at small offsets. On the CP15
/// itself, not the counting one: its one TLB invalidation (a collision)
/// is counted by `fass` ([`fass::FastFaults::collisions`]) and folded into
/// the maintenance counts when they are read ([`Kernel::hw_counts`]).
#[inline(always)]
fn resolve_fast(fs: &mut FassS, c: &mut HwCp15, fsr: Fsr, far: Far) -> Option<fass::Flushed> {
    match fs.resolve_fast(&mut crate::board::maint(c), fsr, far)? {
        Resolution::Resolved { flushed, .. } => Some(flushed),
        Resolution::NotFass(_) => None,
    }
}

/// Called by `__user_trap_dabt` (`asm/trap.s`) for a data abort from user
/// mode, with r0-r12, sp_usr and lr_usr saved in the current process's
/// frame: a fault `fass` resolves without a flush ([`Kernel::dabt_fast`])
/// answers non-zero (with [`DABT_DOMAIN`] set for a domain fault, timed
/// by the fault clock; 1 a translation fault), and the same process
/// resumes at once
/// (`__return_fast`, then [`fast_abort_return`]); otherwise the answer is
/// 0, nothing was done, and `__user_trap_dabt` stamps the general path
/// ([`trap_dabt_declined`]), completes the frame and calls [`trap_entry`].
/// The frame and the abort's stamp stay with the stub (in r4 and r5, free
/// there: the user's registers are saved), out of this call's registers.
#[no_mangle]
pub extern "C" fn trap_dabt() -> u32 {
    // SAFETY: a trap from user mode (see `trap_entry`).
    let k = unsafe { running_kernel() };
    match k.dabt_fast() {
        // The status bit that tells a domain fault (0x9/0xB) from a
        // translation fault (0x5/0x7), and 1: two instructions.
        Some(fsr) => (fsr & DABT_DOMAIN) | 1,
        None => 0,
    }
}

/// The bit of [`trap_dabt`]'s answer (and of the FSR) set for a domain
/// fault.
const DABT_DOMAIN: u32 = 0b1000;

/// Called by `__user_trap_dabt` (`asm/trap.s`) when [`trap_dabt`]
/// declined the data abort stamped `t0`, before the general path: the
/// transit's entry stamp (`clock::enter_abort`).
#[no_mangle]
pub extern "C" fn trap_dabt_declined(t0: u32) {
    clock::enter_abort(t0);
}

/// Called by `__return_fast` (`asm/trap.s`, measuring build only) after
/// its counter read `t_out`, outside the measured window, for an abort
/// stamped `t0` that [`trap_dabt`] or [`trap_pabt`] resolved with
/// `answer`: filed as a fault transit, and a data abort's domain fault (a
/// collision, [`DABT_DOMAIN`] set) is timed by the fault clock
/// ([`FaultClock`], `clock::fast_return_accounting`).
#[cfg(feature = "measure")]
#[no_mangle]
pub extern "C" fn fast_abort_return(answer: u32, t_out: u32, t0: u32) {
    let prefetch = answer & PABT_BIT != 0;
    if answer & DABT_DOMAIN != 0 && !prefetch {
        // SAFETY: called by `__return_fast` on the way back to user mode
        // of the installed kernel's process, with no reference to the
        // kernel alive (the trap's ended with `trap_dabt`).
        if let Some(k) = unsafe { super::kernel::installed() } {
            k.fault_clock.fast = Some(t0);
        }
    }
    clock::fast_return_accounting(t_out, t0, prefetch);
}

/// The bit of [`trap_pabt`]'s answer that no answer of [`trap_dabt`] has.
const PABT_BIT: u32 = 0b10;
/// [`trap_pabt`]'s answer for a prefetch abort resolved on the fast path.
const PABT_FAST: u32 = PABT_BIT | 1;

/// Called by `__user_trap_pabt` (`asm/trap.s`) for a prefetch abort from
/// user mode at `pc`, with r0-r12, sp_usr and lr_usr saved in the current
/// process's frame and the counter read at the transit's entry (`t0`): a
/// fault `fass` resolves without a flush ([`Kernel::pabt_fast`]) answers
/// 1, and the fetch is retried at once (`__return_fast`); otherwise the
/// answer is 0 and `__user_trap_pabt` completes the frame and calls
/// [`trap_entry`].
#[no_mangle]
pub extern "C" fn trap_pabt(t0: u32, pc: u32) -> u32 {
    // SAFETY: a trap from user mode (see `trap_entry`).
    let k = unsafe { running_kernel() };
    if k.pabt_fast(pc) {
        return PABT_FAST;
    }
    clock::enter_transit(t0);
    0
}

/// Called by the trap stubs (`asm/trap.s`) for every exception from user
/// mode, the user registers saved in the current process's frame; returns
/// the frame to resume (after the VFP's switch work, if it has any:
/// [`Kernel::vfp_after_trap`]).
#[no_mangle]
#[link_section = ".text.kswitch"]
pub extern "C" fn trap_entry(kind: u32) -> *mut TrapFrame {
    // SAFETY: a trap from user mode: user mode runs only inside
    // `Kernel::run` of the installed kernel.
    let k = unsafe { running_kernel() };
    let fast = match kind {
        2 => k.svc_fast(),
        6 => k.irq_fast(),
        _ => None,
    };
    let frame = match fast {
        Some(frame) => frame,
        None => {
            let w = k.trap(kind);
            k.finish(w)
        }
    };
    // The VFP's switch work, only while it needs it (`vfp`'s docs).
    if k.vfp.watch {
        k.vfp_after_trap();
    }
    frame
}
