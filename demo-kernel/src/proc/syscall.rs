//! The system calls (numbers and errors in [`crate::abi`]). Every argument
//! is checked; a bad one is an error code in r0, never a kernel fault.

use super::kernel::{After, Exit, Kernel};
use crate::abi::{err, nr, PRINT_MAX, STATS_WORDS};

impl Kernel {
    /// Runs the system call the saved registers of process `cur` ask for.
    pub fn syscall(&mut self, cur: usize) -> After {
        self.counters.syscalls += 1;
        self.procs[cur].syscalls += 1;
        let ctx = self.procs[cur].ctx;
        let a = [ctx.r[0], ctx.r[1], ctx.r[2], ctx.r[3]];
        let msg = [a[1], a[2], a[3]];
        let mut after = After::Continue;
        let ret: Option<i32> = match ctx.r[7] {
            nr::YIELD => {
                after = After::Yield;
                Some(0)
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
            nr::REPLY => Some(self.ipc_reply(cur, a[0], msg)),
            nr::MAP => Some(self.map_user(cur, a[0], a[1], a[2])),
            nr::UNMAP => Some(self.unmap_user(cur, a[0], a[1])),
            nr::SEG_MAP => Some(self.seg_map(cur, a[0])),
            nr::SEG_UNMAP => Some(self.seg_unmap(cur, a[0])),
            nr::STATS => Some(self.sys_stats(cur, a[0], a[1])),
            nr::PRINT => Some(self.sys_print(cur, a[0], a[1])),
            nr::MARK => Some(self.sys_mark(a[0])),
            nr::GETID => Some(cur as i32),
            nr::TCM_EXCHANGE | nr::TCM_RELEASE | nr::TCM_STATE => {
                let (r, a) = self.sys_tcm(cur, ctx.r[7], a[0], a[1]);
                after = a;
                r
            }
            nr::TCM_CREATE | nr::TCM_DELETE | nr::TCM_SET_STATE => {
                Some(self.sys_tcm_op(cur, ctx.r[7], a[0], a[1]))
            }
            _ => Some(err::ENOSYS),
        };
        if let Some(r) = ret {
            if r < 0 {
                self.procs[cur].errors += 1;
            }
            self.procs[cur].ctx.r[0] = r as u32;
        }
        after
    }

    fn sys_stats(&mut self, cur: usize, buf: u32, len: u32) -> i32 {
        if !buf.is_multiple_of(4) || len < (STATS_WORDS as u32) * 4 {
            return err::EINVAL;
        }
        let hw = super::platform::counts();
        let live = self.procs.iter().filter(|p| p.alive()).count() as u32;
        let words: [u32; STATS_WORDS] = [
            self.counters.switches,
            self.counters.syscalls,
            hw.dcache_flushes,
            hw.tlb_flushes,
            self.counters.domain_faults,
            self.strategy.stats().collisions as u32,
            cur as u32,
            live,
        ];
        match self.copy_to_user(buf, &words) {
            Ok(()) => 0,
            Err(e) => e,
        }
    }

    fn sys_print(&mut self, cur: usize, buf: u32, len: u32) -> i32 {
        if len > PRINT_MAX || buf.checked_add(len).is_none() {
            return err::EINVAL;
        }
        let mut bytes = [0u8; PRINT_MAX as usize];
        let out = &mut bytes[..len as usize];
        if let Err(e) = self.copy_from_user(buf, out) {
            return e;
        }
        match core::str::from_utf8(out) {
            Ok(s) => defmt::info!("USER id={=usize} msg={=str}", cur, s),
            Err(_) => defmt::info!("USER id={=usize} bytes={=[u8]}", cur, out),
        }
        0
    }

    fn sys_mark(&mut self, k: u32) -> i32 {
        if k as usize >= self.marks.len() {
            return err::EINVAL;
        }
        let now = self.mark_now();
        let slot = &mut self.marks[k as usize];
        if slot.is_none() {
            *slot = Some(now);
            // The switch-path clock runs between the marks.
            self.clock.on = k == 0;
            self.clock.t0 = None;
            if k == 0 {
                super::clock::start();
            } else {
                super::clock::stop();
            }
        }
        0
    }
}
