//! The system calls (numbers and errors in [`crate::abi`]). Every argument
//! is checked; a bad one is an error code in r0, never a kernel fault.

use super::ipc::NO_RECV;
use super::kernel::{After, Exit, Kernel};
use crate::abi::{err, nr, PRINT_MAX, STATS_WORDS};
use crate::global::Global;

/// Why a system call failed: the kernel's typed errors up to the system-call
/// boundary, where each becomes one ABI error code ([`SysError::code`],
/// [`crate::abi::err`]).
#[derive(Clone, Copy, PartialEq, Eq, Debug, defmt::Format)]
pub enum SysError {
    /// No such system call, or a facility this boot does not have.
    NoSys,
    /// A user address the process cannot access.
    Fault,
    /// A malformed argument.
    Invalid,
    /// Out of frames, table memory or page slots.
    NoMemory,
    /// No such process, or it is not waiting for this.
    NoSuchProcess,
    /// The call would wait for the caller itself.
    Deadlock,
    /// The page is the kernel's.
    NotPermitted,
    /// Already mapped, or in use by an exchange.
    Busy,
    /// A frame-state change the rules refuse.
    BadState,
    /// A long message longer than the limit or the receiver's buffer.
    TooLong,
}

impl SysError {
    /// The ABI error code (negative).
    pub const fn code(self) -> i32 {
        match self {
            SysError::NoSys => err::ENOSYS,
            SysError::Fault => err::EFAULT,
            SysError::Invalid => err::EINVAL,
            SysError::NoMemory => err::ENOMEM,
            SysError::NoSuchProcess => err::ESRCH,
            SysError::Deadlock => err::EDEADLK,
            SysError::NotPermitted => err::EPERM,
            SysError::Busy => err::EBUSY,
            SysError::BadState => err::ESTATE,
            SysError::TooLong => err::EMSGSIZE,
        }
    }
}

impl From<fass::FassError> for SysError {
    /// A strategy's refusal of a user-requested mapping.
    fn from(e: fass::FassError) -> Self {
        use fass::space::SpaceError;
        use fass::FassError as E;
        match e {
            E::NotPrivate(_) | E::Addr(_) | E::Segment(_) | E::Pid(_) => SysError::Invalid,
            E::Space(SpaceError::AlreadyMapped(_)) => SysError::Busy,
            E::Space(SpaceError::Misaligned(_)) => SysError::Invalid,
            _ => SysError::NoMemory,
        }
    }
}

#[cfg(feature = "measure")]
extern "C" {
    /// The current transit's entry stamp, written by `SAVE_USER` (`asm/trap.s`,
    /// measuring build only).
    static __in_stamp: u32;
}

/// The plain-copy laps of `LAP` ([`Kernel::sys_lap`]).
#[derive(Clone, Copy)]
pub struct Laps {
    /// The last `LAP 0`'s entry stamp.
    #[cfg_attr(not(feature = "measure"), allow(dead_code))]
    start: Option<u32>,
    /// (ticks, laps): laps that copied, empty laps.
    pub sums: [(u64, u32); 2],
}

static LAPS: Global<Laps> = Global::new(Laps {
    start: None,
    sums: [(0, 0); 2],
});

/// The laps summed so far (cleared by [`clear_laps`]).
pub fn laps() -> Laps {
    // SAFETY: `Global`'s contract; a copy.
    unsafe { LAPS.get() }
}

/// Clears the laps (before a scenario).
pub fn clear_laps() {
    // SAFETY: `Global`'s contract.
    unsafe {
        LAPS.set(Laps {
            start: None,
            sums: [(0, 0); 2],
        })
    };
}

/// A system call's result: the value for r0, or why it failed.
pub type SysResult<T = ()> = Result<T, SysError>;

impl Kernel {
    /// Runs the system call the saved registers of process `cur` ask for.
    pub fn syscall(&mut self, cur: usize) -> After {
        self.counters.syscalls += 1;
        self.procs[cur].syscalls += 1;
        let ctx = self.procs[cur].ctx;
        let a = [ctx.r[0], ctx.r[1], ctx.r[2], ctx.r[3]];
        let msg = [a[1], a[2], a[3]];
        let mut after = After::Continue;
        let unit = |r: SysResult| r.map(|()| 0);
        let ret: Option<SysResult<i32>> = match ctx.r[7] {
            nr::YIELD => {
                after = After::Yield;
                Some(Ok(0))
            }
            nr::EXIT => {
                self.end(cur, Exit::Code(a[0]));
                None
            }
            nr::SEND => {
                after = After::Reschedule(self.ipc_send(cur, a[0], msg, false));
                None
            }
            nr::CALL => {
                after = After::Reschedule(self.ipc_send(cur, a[0], msg, true));
                None
            }
            nr::RECV => {
                self.ipc_recv(cur);
                None
            }
            nr::SEND_RECV => match self.ipc_send_recv(cur, a[0], msg) {
                Ok(d) => {
                    after = After::Reschedule(d);
                    None
                }
                Err(e) => Some(Err(e)),
            },
            nr::REPLY => Some(unit(self.ipc_reply(cur, a[0], msg))),
            nr::LSEND | nr::LSEND_RECV => {
                let cap = if ctx.r[7] == nr::LSEND { NO_RECV } else { a[3] };
                match self.long_send(cur, a[0], a[1], a[2], cap) {
                    Ok(d) => {
                        after = After::Reschedule(d);
                        None
                    }
                    Err(e) => Some(Err(e)),
                }
            }
            nr::LRECV => self.long_recv(cur, a[0], a[1]).err().map(Err),
            nr::LAP => Some(unit(self.sys_lap(a[0]))),
            nr::MAP => Some(unit(self.map_user(cur, a[0], a[1], a[2]))),
            nr::UNMAP => Some(unit(self.unmap_user(cur, a[0], a[1]))),
            nr::LOAD_CODE => Some(unit(self.load_code(cur, a[0], a[1]))),
            nr::SEG_MAP => Some(unit(self.seg_map(cur, a[0]))),
            nr::SEG_UNMAP => Some(unit(self.seg_unmap(cur, a[0]))),
            nr::STATS => Some(unit(self.sys_stats(cur, a[0], a[1]))),
            nr::PRINT => Some(unit(self.sys_print(cur, a[0], a[1]))),
            nr::MARK => Some(unit(self.sys_mark(a[0]))),
            nr::GETID => Some(Ok(cur as i32)),
            nr::TCM_EXCHANGE | nr::TCM_RELEASE | nr::TCM_STATE => {
                let (r, a) = self.sys_tcm(cur, ctx.r[7], a[0], a[1]);
                after = a;
                r
            }
            nr::TCM_CREATE | nr::TCM_DELETE | nr::TCM_SET_STATE => {
                Some(self.sys_tcm_op(cur, ctx.r[7], a[0], a[1]))
            }
            _ => Some(Err(SysError::NoSys)),
        };
        if let Some(r) = ret {
            self.set_result(cur, r);
        }
        after
    }

    /// The system-call boundary: puts `r` into process `cur`'s r0, a typed
    /// error as its ABI code ([`SysError::code`]), counted in the process's
    /// `errors`.
    #[inline]
    pub(super) fn set_result(&mut self, cur: usize, r: SysResult<i32>) {
        let r = r.unwrap_or_else(|e| {
            self.procs[cur].errors += 1;
            e.code()
        });
        self.procs[cur].ctx.r[0] = r as u32;
    }

    fn sys_stats(&mut self, cur: usize, buf: u32, len: u32) -> SysResult {
        if !buf.is_multiple_of(4) || len < (STATS_WORDS as u32) * 4 {
            return Err(SysError::Invalid);
        }
        self.sync();
        let hw = self.hw_counts();
        let live = self.procs.iter().filter(|p| p.alive()).count() as u32;
        let words: [u32; STATS_WORDS] = [
            self.counters.switches,
            self.counters.syscalls,
            hw.dcache_flushes,
            hw.tlb_flushes,
            self.counters().domain_faults,
            self.strategy.stats().collisions as u32,
            cur as u32,
            live,
        ];
        self.copy_to_user(buf, &words)
    }

    fn sys_print(&mut self, cur: usize, buf: u32, len: u32) -> SysResult {
        if len > PRINT_MAX || buf.checked_add(len).is_none() {
            return Err(SysError::Invalid);
        }
        let mut bytes = [0u8; PRINT_MAX as usize];
        let out = &mut bytes[..len as usize];
        self.copy_from_user(buf, out)?;
        match core::str::from_utf8(out) {
            Ok(s) => defmt::info!("USER id={=usize} msg={=str}", cur, s),
            Err(_) => defmt::info!("USER id={=usize} bytes={=[u8]}", cur, out),
        }
        Ok(())
    }

    /// `LAP k`: between `MARK 0` and `MARK 1`, sums the counter between
    /// this call's entry and the entry of the last `LAP 0` (k = 1: the lap
    /// copied; k = 2: it was empty), so that the difference of the two
    /// means is the user code of a lap alone ([`laps`]).
    fn sys_lap(&mut self, k: u32) -> SysResult {
        if k > 2 {
            return Err(SysError::Invalid);
        }
        // The shipped build keeps no stamps: a lap is accepted and not timed.
        #[cfg(not(feature = "measure"))]
        return Ok(());
        #[cfg(feature = "measure")]
        self.lap_measured(k)
    }

    /// [`Self::sys_lap`] in the measuring build.
    #[cfg(feature = "measure")]
    fn lap_measured(&mut self, k: u32) -> SysResult {
        // SAFETY: written only by the entry stub of this transit.
        let now = unsafe { core::ptr::addr_of!(__in_stamp).read_volatile() };
        let on = self.clock.on;
        // SAFETY: `Global`'s contract: single core, no reference alive
        // across this call.
        unsafe {
            LAPS.with(|l| {
                if k == 0 {
                    l.start = Some(now);
                } else if let (Some(t0), true) = (l.start.take(), on) {
                    let (t, n) = &mut l.sums[k as usize - 1];
                    *t += u64::from(now.wrapping_sub(t0));
                    *n += 1;
                }
            })
        };
        Ok(())
    }

    fn sys_mark(&mut self, k: u32) -> SysResult {
        if k as usize >= self.marks.len() {
            return Err(SysError::Invalid);
        }
        let now = self.mark_now();
        let slot = &mut self.marks[k as usize];
        if slot.is_none() {
            *slot = Some(now);
            // The switch-path clock runs between the marks.
            self.clock.on = k == 0;
            self.clock.t0 = None;
            if k == 0 {
                // Collisions before the window are not the window's.
                self.fault_clock = super::clock::FaultClock::default();
                super::clock::start();
            } else {
                super::clock::stop();
            }
        }
        Ok(())
    }
}
