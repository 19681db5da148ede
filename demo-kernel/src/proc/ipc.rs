//! Synchronous IPC in constant time: a FIFO of blocked senders per
//! receiver and a list of callers waiting for a reply per server, both
//! intrusive (slot indices in the process records), so that neither a
//! receive nor an exit scans the process table: an exit wakes only the
//! processes linked to the dying one.

use super::clock::{self, Transit};
use super::kernel::{Kernel, State};
use super::strategy::MAX_PROCS;
use super::syscall::{SysError, SysResult};

/// No process (the end of a list).
pub(super) const NONE: u8 = u8::MAX;

/// Offsets of the links the assembly fast path (`asm/fastpath.s`) reads
/// and writes: the first sender, the first caller, next and previous.
pub(super) const LINK_SEND_HEAD: usize = core::mem::offset_of!(Links, send_head);
/// See [`LINK_SEND_HEAD`].
pub(super) const LINK_REPLY_HEAD: usize = core::mem::offset_of!(Links, reply_head);
/// See [`LINK_SEND_HEAD`].
pub(super) const LINK_NEXT: usize = core::mem::offset_of!(Links, next);
/// See [`LINK_SEND_HEAD`].
pub(super) const LINK_PREV: usize = core::mem::offset_of!(Links, prev);

/// A process's IPC links.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Links {
    /// First sender blocked on this process (in `SEND`/`CALL`).
    send_head: u8,
    /// Last sender blocked on this process.
    send_tail: u8,
    /// First caller waiting for this process's reply.
    reply_head: u8,
    /// Next in the list this process is in: its receiver's send queue
    /// while in `Send`/`Call`, its server's reply list while in `Reply`
    /// (never both).
    next: u8,
    /// Previous in its server's reply list (`Reply` only).
    prev: u8,
}

impl Links {
    /// In no list, nobody waiting.
    pub const NONE: Links = Links {
        send_head: NONE,
        send_tail: NONE,
        reply_head: NONE,
        next: NONE,
        prev: NONE,
    };
}

/// What a sender whose message was taken does next.
enum Then {
    /// `SEND`: returns 0.
    Ready,
    /// `CALL`: waits for the receiver's reply.
    Reply,
    /// `SEND_RECV`: receives.
    Recv,
}

/// Slot `i` as a list index.
#[inline(always)]
fn ix(i: u8) -> usize {
    usize::from(i) & (MAX_PROCS - 1)
}

impl Kernel {
    /// Appends sender `s` to receiver `r`'s queue.
    #[inline(always)]
    fn enqueue_sender(&mut self, r: usize, s: usize) {
        self.procs[s].ipc.next = NONE;
        let tail = self.procs[r].ipc.send_tail;
        if tail == NONE {
            self.procs[r].ipc.send_head = s as u8;
        } else {
            self.procs[ix(tail)].ipc.next = s as u8;
        }
        self.procs[r].ipc.send_tail = s as u8;
    }

    /// Takes the first sender blocked on `r`.
    #[inline(always)]
    fn dequeue_sender(&mut self, r: usize) -> Option<usize> {
        let head = self.procs[r].ipc.send_head;
        if head == NONE {
            return None;
        }
        let s = ix(head);
        let next = self.procs[s].ipc.next;
        self.procs[r].ipc.send_head = next;
        if next == NONE {
            self.procs[r].ipc.send_tail = NONE;
        }
        self.procs[s].ipc.next = NONE;
        Some(s)
    }

    /// Removes sender `s` from receiver `r`'s queue (an exit: walks that
    /// queue only).
    fn unqueue_sender(&mut self, r: usize, s: usize) {
        let mut prev = NONE;
        let mut at = self.procs[r].ipc.send_head;
        while at != NONE {
            let next = self.procs[ix(at)].ipc.next;
            if ix(at) == s {
                if prev == NONE {
                    self.procs[r].ipc.send_head = next;
                } else {
                    self.procs[ix(prev)].ipc.next = next;
                }
                if self.procs[r].ipc.send_tail == at {
                    self.procs[r].ipc.send_tail = prev;
                }
                self.procs[s].ipc.next = NONE;
                return;
            }
            prev = at;
            at = next;
        }
    }

    /// Blocks caller `c` waiting for `server`'s reply.
    #[inline(always)]
    fn await_reply(&mut self, c: usize, server: usize) {
        self.set_state(
            c,
            State::Reply {
                from: server as u16,
            },
        );
        let head = self.procs[server].ipc.reply_head;
        self.procs[c].ipc.prev = NONE;
        self.procs[c].ipc.next = head;
        if head != NONE {
            self.procs[ix(head)].ipc.prev = c as u8;
        }
        self.procs[server].ipc.reply_head = c as u8;
    }

    /// Removes caller `c` from `server`'s reply list.
    #[inline(always)]
    fn unlink_reply(&mut self, c: usize, server: usize) {
        let Links { next, prev, .. } = self.procs[c].ipc;
        if prev == NONE {
            self.procs[server].ipc.reply_head = next;
        } else {
            self.procs[ix(prev)].ipc.next = next;
        }
        if next != NONE {
            self.procs[ix(next)].ipc.prev = prev;
        }
        self.procs[c].ipc.next = NONE;
        self.procs[c].ipc.prev = NONE;
    }

    /// Delivers `msg` from `from` into `to`'s saved registers.
    #[inline(always)]
    fn deliver(&mut self, to: usize, from: usize, msg: [u32; 3]) {
        let c = &mut self.procs[to].ctx;
        c.r[0] = from as u32;
        c.r[1..4].copy_from_slice(&msg);
        self.counters.messages += 1;
    }

    /// Checks an IPC destination of process `cur`.
    fn check_dest(&self, cur: usize, dest: u32) -> Result<usize, SysError> {
        let d = dest as usize;
        if d >= MAX_PROCS || !self.procs[d].alive() {
            return Err(SysError::NoSuchProcess);
        }
        if d == cur {
            return Err(SysError::Deadlock);
        }
        Ok(d)
    }

    /// `SEND`/`CALL` from `cur`: hands the message to `dest` if it waits
    /// in `RECV` (then `dest` is the process to run next, the answer), else
    /// queues `cur` on it.
    #[inline(always)]
    pub fn ipc_send(&mut self, cur: usize, dest: u32, msg: [u32; 3], call: bool) -> Option<usize> {
        let d = match self.check_dest(cur, dest) {
            Ok(d) => d,
            Err(e) => {
                self.set_result(cur, Err(e));
                return None;
            }
        };
        if self.procs[d].state == State::Recv {
            // Direct hand-off: the receiver runs next.
            self.deliver(d, cur, msg);
            self.set_state(d, State::Ready);
            if call {
                clock::mark(Transit::IpcCall);
                self.await_reply(cur, d);
            } else {
                clock::mark(Transit::IpcOneway);
                self.set_result(cur, Ok(0));
            }
            return Some(d);
        }
        let dest = d as u16;
        let s = if call {
            State::Call { dest, msg }
        } else {
            State::Send { dest, msg }
        };
        self.set_state(cur, s);
        self.enqueue_sender(d, cur);
        None
    }

    /// `SEND_RECV` from `cur`: as `SEND`, then `RECV`, atomically. If
    /// `dest` waits in `RECV` it gets the message and is the process to run
    /// next (the answer, a one-way hand-off), and `cur` receives at once: it
    /// takes the first sender queued on it, or waits in `RECV`. Else `cur`
    /// is queued on `dest` and receives when `dest` has taken the message
    /// ([`Kernel::ipc_recv`]). An error (no such process, `cur` itself)
    /// sends and receives nothing.
    #[inline(always)]
    pub fn ipc_send_recv(
        &mut self,
        cur: usize,
        dest: u32,
        msg: [u32; 3],
    ) -> SysResult<Option<usize>> {
        let d = self.check_dest(cur, dest)?;
        if self.procs[d].state == State::Recv {
            // Direct hand-off: the receiver runs next, `cur` receives.
            self.deliver(d, cur, msg);
            self.set_state(d, State::Ready);
            clock::mark(Transit::IpcOneway);
            self.ipc_recv(cur);
            return Ok(Some(d));
        }
        self.set_state(
            cur,
            State::SendRecv {
                dest: d as u16,
                msg,
            },
        );
        self.enqueue_sender(d, cur);
        Ok(None)
    }

    /// `RECV` of `cur`: takes the first sender queued on it, or blocks. A
    /// sender in `SEND_RECV` then receives in turn (its send is done),
    /// which may take a sender queued on it, and so on down the chain:
    /// each step delivers one message, and a process is queued on one
    /// receiver at most, so the chain ends. Out of line (`trap_entry`
    /// inlines the short paths and has no room for two copies), on the
    /// switch page.
    #[inline(never)]
    #[link_section = ".text.kswitch"]
    pub fn ipc_recv(&mut self, cur: usize) {
        let mut r = cur;
        loop {
            let Some(j) = self.dequeue_sender(r) else {
                self.set_state(r, State::Recv);
                return;
            };
            let (msg, then) = match self.procs[j].state {
                State::Send { msg, .. } => (msg, Then::Ready),
                State::Call { msg, .. } => (msg, Then::Reply),
                State::SendRecv { msg, .. } => (msg, Then::Recv),
                // Never queued in another state (an exit unqueues it).
                _ => {
                    debug_assert!(false, "process {} queued while not sending", j);
                    continue;
                }
            };
            self.deliver(r, j, msg);
            // `r` got a message: running (`cur`), or a sender in
            // `SEND_RECV` whose send was taken one step up the chain.
            if r != cur {
                self.set_state(r, State::Ready);
            }
            match then {
                Then::Ready => {
                    self.set_state(j, State::Ready);
                    self.procs[j].ctx.r[0] = 0;
                    return;
                }
                Then::Reply => {
                    self.await_reply(j, r);
                    return;
                }
                // Its send done, `j` receives.
                Then::Recv => r = j,
            }
        }
    }

    /// `REPLY` from `cur` to `dest`.
    #[inline(always)]
    pub fn ipc_reply(&mut self, cur: usize, dest: u32, msg: [u32; 3]) -> SysResult {
        let d = dest as usize;
        if d >= MAX_PROCS || self.procs[d].state != (State::Reply { from: cur as u16 }) {
            return Err(SysError::NoSuchProcess);
        }
        self.unlink_reply(d, cur);
        let c = &mut self.procs[d].ctx;
        c.r[0] = 0;
        c.r[1..4].copy_from_slice(&msg);
        self.set_state(d, State::Ready);
        self.counters.round_trips += 1;
        self.counters.messages += 1;
        Ok(())
    }

    /// Unlinks ending process `idx` from the IPC lists and wakes, with
    /// `ESRCH`, exactly the processes blocked on it (its queued senders
    /// and the callers waiting for its reply): no scan of the table.
    pub(super) fn ipc_exit(&mut self, idx: usize) {
        match self.procs[idx].state {
            State::Send { dest, .. } | State::Call { dest, .. } | State::SendRecv { dest, .. } => {
                self.unqueue_sender(usize::from(dest), idx)
            }
            State::Reply { from } => self.unlink_reply(idx, usize::from(from)),
            _ => {}
        }
        while let Some(j) = self.dequeue_sender(idx) {
            self.wake_esrch(j);
        }
        loop {
            let head = self.procs[idx].ipc.reply_head;
            if head == NONE {
                break;
            }
            let j = ix(head);
            self.unlink_reply(j, idx);
            self.wake_esrch(j);
        }
        self.procs[idx].ipc = Links::NONE;
    }

    /// Makes `j` ready with `ESRCH` in r0 (its call's error, counted
    /// like every other: [`Kernel::set_result`]).
    fn wake_esrch(&mut self, j: usize) {
        self.set_state(j, State::Ready);
        self.set_result(j, Err(SysError::NoSuchProcess));
    }
}
