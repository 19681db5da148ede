//! Synchronous IPC in constant time: a FIFO of blocked senders per
//! receiver and a list of callers waiting for a reply per server, both
//! intrusive (slot indices in the process records), so that neither a
//! receive nor an exit scans the process table: an exit wakes only the
//! processes linked to the dying one.
//!
//! Long IPC (`LSEND`, `LRECV`, `LSEND_RECV`) carries a buffer of up to
//! [`LONG_MAX`] bytes from the sender's address space into the buffer the
//! receiver announced, copied by the strategy
//! ([`fass::SwitchStrategy::copy_between`]: FASS from window to window, the
//! others through the kernel's linear map with the aliases' maintenance).
//! Both buffers are checked with the user-pointer probes of every other
//! call when announced (the sender's readable, the receiver's writable,
//! every page: [`Kernel::check_user_buffer`]); a process blocked in long
//! IPC cannot change its own mappings, so they stay valid until the copy.
//! Long senders wait in the same queues as the others, so an exit wakes
//! them with `ESRCH` like any sender. A plain receiver takes an empty long
//! message (r1-r3 = 0) and refuses a longer one (`EMSGSIZE` to its
//! sender); a long receiver takes a plain message as 0 bytes (its first
//! two words in r2, r3).

use super::kernel::{Kernel, State};
use super::strategy::{dispatch, MAX_PROCS};
use super::syscall::{SysError, SysResult};
use super::uaccess::KernelMemory;
use crate::abi::LONG_MAX;
use fass::{CopyEnd, CopyError, SpaceId, SwitchStrategy};

/// A long send's receive capacity when it receives nothing after (`LSEND`).
pub(super) const NO_RECV: u32 = u32::MAX;

/// No process (the end of a list).
pub(super) const NONE: u8 = u8::MAX;

/// Offsets of the links the assembly fast path (`asm/fastpath.s`) reads
/// and writes: the first and last sender, the first caller, next and
/// previous.
pub(super) const LINK_SEND_HEAD: usize = core::mem::offset_of!(Links, send_head);
/// See [`LINK_SEND_HEAD`].
pub(super) const LINK_SEND_TAIL: usize = core::mem::offset_of!(Links, send_tail);
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
        if matches!(self.procs[d].state, State::LongRecv { .. }) {
            let then = if call { Plain::Call } else { Plain::Send };
            return Some(self.plain_to_long(cur, d, msg, then));
        }
        if self.procs[d].state == State::Recv {
            // Direct hand-off: the receiver runs next.
            self.deliver(d, cur, msg);
            self.set_state(d, State::Ready);
            if call {
                self.await_reply(cur, d);
            } else {
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
        if matches!(self.procs[d].state, State::LongRecv { .. }) {
            return Ok(Some(self.plain_to_long(cur, d, msg, Plain::SendRecv)));
        }
        if self.procs[d].state == State::Recv {
            // Direct hand-off: the receiver runs next, `cur` receives.
            self.deliver(d, cur, msg);
            self.set_state(d, State::Ready);
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
    /// switch page in the shipped build. The measuring build's transit
    /// bookkeeping and the cache-check build's markers, inlined into
    /// `trap_entry`, leave the page no room for it there (QEMU counts the same instructions wherever it lies; only
    /// the TCM scenario's placement differs).
    #[inline(never)]
    #[cfg_attr(
        not(any(feature = "measure", feature = "cache-check")),
        link_section = ".text.kswitch"
    )]
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
                // A long sender: out of line, the rest of the chain too.
                State::LongSend { .. } => return self.recv_chain(cur, r, None, Some(j)),
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
            State::Send { dest, .. }
            | State::Call { dest, .. }
            | State::SendRecv { dest, .. }
            | State::LongSend { dest, .. } => self.unqueue_sender(usize::from(dest), idx),
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
        self.wake_with(j, SysError::NoSuchProcess);
    }

    /// Makes `j` ready with error `e` in r0.
    fn wake_with(&mut self, j: usize, e: SysError) {
        self.set_state(j, State::Ready);
        self.set_result(j, Err(e));
    }
}

/// What a plain sender handed to a long receiver does next.
#[derive(Clone, Copy)]
enum Plain {
    Send,
    Call,
    SendRecv,
}

/// What a sender whose message was taken does next (long IPC's chain).
#[derive(Clone, Copy)]
enum Next {
    /// Returns 0.
    Ready,
    /// Waits for the receiver's reply.
    Reply,
    /// Receives, into this buffer and capacity if long.
    Recv(Option<(u32, u32)>),
}

/// The system-call error of a refused copy.
fn copy_error(e: CopyError) -> SysError {
    match e {
        CopyError::TooLong(_) => SysError::TooLong,
        CopyError::Overlap => SysError::Invalid,
        CopyError::Fass(fass::FassError::UnknownSpace(_)) => SysError::NoSuchProcess,
        CopyError::Fass(_) => SysError::NoMemory,
        _ => SysError::Fault,
    }
}

impl Kernel {
    /// `LSEND` (`cap` = [`NO_RECV`]) or `LSEND_RECV` from `cur`: `len`
    /// bytes at `buf` to `dest`, then (`LSEND_RECV`) a receive into `buf`
    /// with capacity `cap`. Checks everything first (an error sends and
    /// receives nothing); hands the bytes to `dest` if it waits in a
    /// receive (then `dest` is the process to run next, the answer), else
    /// queues `cur` on it.
    #[inline(never)]
    pub fn long_send(
        &mut self,
        cur: usize,
        dest: u32,
        buf: u32,
        len: u32,
        cap: u32,
    ) -> SysResult<Option<usize>> {
        let d = self.check_dest(cur, dest)?;
        if len > LONG_MAX || (cap != NO_RECV && cap > LONG_MAX) {
            return Err(SysError::TooLong);
        }
        // One probe per page: an `LSEND_RECV` whose receive range covers
        // the message (the usual reply buffer) and does not wrap probes the
        // pages once, for writing (a write probe reads the word first, so
        // it refuses every page the read probe would, with the same error);
        // otherwise the send range is probed for reading, then the receive
        // range, as the errors' order requires.
        if cap == NO_RECV || len > cap || buf.checked_add(cap).is_none() {
            self.check_user_buffer(buf, len, false)?;
        }
        if cap != NO_RECV {
            self.check_user_buffer(buf, cap, true)?;
        }
        let rbuf = match self.procs[d].state {
            State::Recv => None,
            State::LongRecv { buf, cap } => Some((buf, cap)),
            _ => {
                let dest = d as u16;
                self.set_state(
                    cur,
                    State::LongSend {
                        dest,
                        msg: [buf, len, cap],
                    },
                );
                self.enqueue_sender(d, cur);
                return Ok(None);
            }
        };
        // Direct hand-off: the receiver runs next.
        self.take_long(d, rbuf, cur, buf, len)?;
        self.set_state(d, State::Ready);
        if cap == NO_RECV {
            self.set_result(cur, Ok(0));
        } else if self.procs[cur].ipc.send_head == NONE {
            // Nothing queued on `cur` (the ping-pong's case): it blocks in
            // its receive, as `recv_chain` would decide, without the chain.
            self.set_state(cur, State::LongRecv { buf, cap });
        } else {
            self.recv_chain(cur, cur, Some((buf, cap)), None);
        }
        Ok(Some(d))
    }

    /// `LRECV` of `cur` into `cap` bytes at `buf`: takes the first sender
    /// queued on it, or blocks.
    #[inline(never)]
    pub fn long_recv(&mut self, cur: usize, buf: u32, cap: u32) -> SysResult {
        if cap > LONG_MAX {
            return Err(SysError::TooLong);
        }
        self.check_user_buffer(buf, cap, true)?;
        self.recv_chain(cur, cur, Some((buf, cap)), None);
        Ok(())
    }

    /// Receiver `r` (with its buffer `rbuf` if it receives long) takes
    /// `len` bytes at `buf` from sender `j`: copied by the strategy, the
    /// receiver's r0 = `j`, r1 = `len`. A plain receiver takes only an
    /// empty message. Nothing is delivered on an error.
    fn take_long(
        &mut self,
        r: usize,
        rbuf: Option<(u32, u32)>,
        j: usize,
        buf: u32,
        len: u32,
    ) -> SysResult {
        let Some((rb, rcap)) = rbuf else {
            if len != 0 {
                return Err(SysError::TooLong);
            }
            self.deliver(r, j, [0; 3]);
            return Ok(());
        };
        if len > rcap {
            return Err(SysError::TooLong);
        }
        let from = CopyEnd::new(SpaceId(j as u16), buf);
        let to = CopyEnd::new(SpaceId(r as u16), rb);
        self.sys(|st, sys| {
            dispatch!(st, s => SwitchStrategy::copy_between(s, sys, &mut KernelMemory, from, to, len))
        })
        .map_err(copy_error)?;
        self.deliver(r, j, [len, 0, 0]);
        Ok(())
    }

    /// Delivers plain `msg` from `from` to long receiver `to`: 0 bytes,
    /// the first two words in r2, r3.
    fn deliver_plain_long(&mut self, to: usize, from: usize, msg: [u32; 3]) {
        self.deliver(to, from, [0, msg[0], msg[1]]);
    }

    /// A plain `SEND`/`CALL`/`SEND_RECV` of `cur` to `d`, which waits in a
    /// long receive: hand-off, `d` runs next.
    #[inline(never)]
    fn plain_to_long(&mut self, cur: usize, d: usize, msg: [u32; 3], then: Plain) -> usize {
        self.deliver_plain_long(d, cur, msg);
        self.set_state(d, State::Ready);
        match then {
            Plain::Send => {
                self.set_result(cur, Ok(0));
            }
            Plain::Call => {
                self.await_reply(cur, d);
            }
            Plain::SendRecv => {
                self.ipc_recv(cur);
            }
        }
        d
    }

    /// The receive chain of [`Kernel::ipc_recv`] for every kind of sender
    /// and receiver: receiver `r` (long into `rbuf`, or plain) takes
    /// `first` (already dequeued) or the first sender queued on it, or
    /// blocks; a sender whose send was taken and who receives next
    /// (`SEND_RECV`, `LSEND_RECV`) receives in turn. A long sender whose
    /// message cannot be taken (too long for the receiver, its buffer
    /// refused by the copy) is woken with the error and the receiver takes
    /// the next one.
    #[inline(never)]
    fn recv_chain(
        &mut self,
        cur: usize,
        mut r: usize,
        mut rbuf: Option<(u32, u32)>,
        mut first: Option<usize>,
    ) {
        loop {
            let Some(j) = first.take().or_else(|| self.dequeue_sender(r)) else {
                let waiting = match rbuf {
                    Some((buf, cap)) => State::LongRecv { buf, cap },
                    None => State::Recv,
                };
                self.set_state(r, waiting);
                return;
            };
            let next = match self.procs[j].state {
                State::Send { msg, .. } | State::Call { msg, .. } | State::SendRecv { msg, .. } => {
                    match rbuf {
                        Some(_) => self.deliver_plain_long(r, j, msg),
                        None => self.deliver(r, j, msg),
                    }
                    match self.procs[j].state {
                        State::Send { .. } => Next::Ready,
                        State::Call { .. } => Next::Reply,
                        _ => Next::Recv(None),
                    }
                }
                State::LongSend {
                    msg: [buf, len, cap],
                    ..
                } => {
                    if let Err(e) = self.take_long(r, rbuf, j, buf, len) {
                        self.wake_with(j, e);
                        continue;
                    }
                    if cap == NO_RECV {
                        Next::Ready
                    } else {
                        Next::Recv(Some((buf, cap)))
                    }
                }
                // Never queued in another state (an exit unqueues it).
                _ => {
                    debug_assert!(false, "process {} queued while not sending", j);
                    continue;
                }
            };
            if r != cur {
                self.set_state(r, State::Ready);
            }
            match next {
                Next::Ready => {
                    self.set_state(j, State::Ready);
                    self.procs[j].ctx.r[0] = 0;
                    return;
                }
                Next::Reply => {
                    self.await_reply(j, r);
                    return;
                }
                Next::Recv(b) => {
                    r = j;
                    rbuf = b;
                }
            }
        }
    }
}
