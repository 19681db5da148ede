//! The short system-call path: `YIELD`, `SEND`, `CALL`, `RECV` and `REPLY`
//! with register-sized messages (r1-r3), handled straight from the saved
//! frame without the generic dispatcher ([`Kernel::syscall`]); the switch
//! ([`Kernel::finish`]) stays the last step before the return.

use super::clock::{self, Transit};
use super::kernel::{Kernel, State, Wish};
use super::strategy::MAX_PROCS;
use crate::abi::nr;

impl Kernel {
    /// The system call of the current process if it is one of the short
    /// path's, done: what to run next. `None`: not one of them (or no
    /// process runs), nothing was done; take the generic path.
    #[inline(always)]
    pub(super) fn svc_fast(&mut self) -> Option<Wish> {
        let cur = self.current? & (MAX_PROCS - 1);
        let c = &self.procs[cur].ctx.r;
        let number = c[7];
        if (number > nr::REPLY && number != nr::REPLY_WAIT) || number == nr::EXIT {
            return None;
        }
        // The register-sized message: r0 (destination) and r1-r3.
        let r = [c[0], c[1], c[2], c[3]];
        self.clock_in();
        self.counters.syscalls += 1;
        self.procs[cur].syscalls += 1;
        let msg = [r[1], r[2], r[3]];
        let w = match number {
            nr::YIELD => {
                self.procs[cur].ctx.r[0] = 0;
                let next = self.pick_after(cur);
                if next != Some(cur) {
                    clock::mark(Transit::Yield);
                }
                Wish::Next(next)
            }
            nr::SEND | nr::CALL => Wish::Resume(self.ipc_send(cur, r[0], msg, number == nr::CALL)),
            nr::RECV => {
                self.ipc_recv(cur);
                self.resume_or_block(cur)
            }
            nr::REPLY_WAIT => {
                let ret = self.ipc_reply(cur, r[0], msg);
                if ret < 0 {
                    self.procs[cur].errors += 1;
                    self.procs[cur].ctx.r[0] = ret as u32;
                    return Some(Wish::Next(Some(cur)));
                }
                self.ipc_recv(cur);
                if self.procs[cur].state == State::Ready {
                    // A sender was queued: the server goes on with it.
                    Wish::Next(Some(cur))
                } else {
                    // Hand-off: the caller runs next.
                    clock::mark(Transit::IpcReply);
                    Wish::Resume(Some(r[0] as usize))
                }
            }
            _ => {
                let ret = self.ipc_reply(cur, r[0], msg);
                if ret < 0 {
                    self.procs[cur].errors += 1;
                }
                self.procs[cur].ctx.r[0] = ret as u32;
                if ret < 0 {
                    Wish::Next(Some(cur))
                } else {
                    // Hand-off: the caller runs next.
                    clock::mark(Transit::IpcReply);
                    Wish::Resume(Some(r[0] as usize))
                }
            }
        };
        Some(w)
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
