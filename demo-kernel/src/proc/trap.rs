//! The short paths: the system calls `YIELD`, `SEND`, `CALL`, `RECV`,
//! `REPLY` and `REPLY_WAIT` with register-sized messages (r1-r3), and the
//! timer interrupt, handled straight from the saved frame without the
//! generic dispatcher ([`Kernel::trap`], [`Kernel::syscall`]). A hand-off (the receiver of a message, the caller
//! of a reply, a yield's round-robin successor) is switched to directly
//! ([`Kernel::switch_ready`]); anything else goes through the scheduler's
//! decision ([`Kernel::finish`]). Either way the switch is the last step
//! before the return.

use super::clock::{self, Transit};
use super::kernel::{Kernel, State, TrapFrame, Wish};
use super::strategy::MAX_PROCS;
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
                        clock::mark(Transit::Yield);
                        Some(self.switch_ready(n))
                    }
                    _ => {
                        if next != Some(cur) {
                            clock::mark(Transit::Yield);
                        }
                        Some(self.finish(Wish::Next(next)))
                    }
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
            nr::RECV => {
                self.count_syscall(cur);
                self.ipc_recv(cur);
                Some(self.finish(self.resume_or_block(cur)))
            }
            nr::REPLY | nr::REPLY_WAIT => {
                self.count_syscall(cur);
                let (dest, msg) = self.message(cur);
                let ret = self.ipc_reply(cur, dest, msg);
                if ret < 0 {
                    self.procs[cur].errors += 1;
                    self.procs[cur].ctx.r[0] = ret as u32;
                    return Some(self.finish(Wish::Next(Some(cur))));
                }
                if number == nr::REPLY {
                    self.procs[cur].ctx.r[0] = 0;
                } else {
                    self.ipc_recv(cur);
                    if self.procs[cur].state == State::Ready {
                        // A sender was queued: the server goes on with it.
                        return Some(self.finish(Wish::Next(Some(cur))));
                    }
                }
                // Hand-off: the caller, made ready (never `cur`), runs next.
                clock::mark(Transit::IpcReply);
                Some(self.switch_ready(dest as usize))
            }
            _ => None,
        }
    }

    /// A timer interrupt in the current process: acknowledged, the kernel
    /// job's tick, then round robin, the next ready process switched to
    /// directly. `None`: not the timer (or no process runs), nothing was
    /// done; take the generic path.
    #[inline(always)]
    pub(super) fn irq_fast(&mut self) -> Option<*mut TrapFrame> {
        let cur = self.current? & (MAX_PROCS - 1);
        if !timer::ack() {
            return None;
        }
        self.counters.irqs += 1;
        self.kernel_job_tick();
        let next = self.ready.next_after(cur);
        if next != Some(cur) {
            self.counters.preemptions += 1;
            clock::mark(Transit::Preempt);
        }
        match next {
            Some(n) if self.procs[n].state == State::Ready => Some(self.switch_ready(n)),
            _ => Some(self.finish(Wish::Next(next))),
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
