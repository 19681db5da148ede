//! The TCM system calls and the kernel's own page exchange, over `spm`
//! and the reverse mappings of [`crate::proc::tcm`].
//!
//! * `TCM_EXCHANGE(va, kind)`: the kernel takes a free frame of the bank
//!   (`kind` 0 = ITCM, 1 = DTCM), maps it as a page resource at the
//!   caller's resource slot (kernel-only access) and exchanges the
//!   caller's page at `va` into it with [`spm::Exchange`]: afterwards `va`
//!   is backed by TCM with the same content, the old frame sits at the
//!   resource slot. Code (a page of the image's text) needs `X`, which
//!   DTCM never grants: refused with `EINVAL`.
//! * `TCM_RELEASE(va)`: the reverse exchange, then the TCM frame is
//!   unmapped and free again.
//! * `TCM_STATE(va)`: `spm`'s state query (`spm::ops::query_state`):
//!   state code | location code << 4 ([`state_code`]).
//!
//! An exchange runs step by step with IRQs enabled (only `spm`'s own
//! windows mask them); after a step that let the timer tick in, the
//! caller is preempted if another process can run: it is blocked in its
//! call ([`State::InTcm`]), never returned to user mode while the exchange
//! is in progress, and the scheduler continues the exchange
//! ([`Kernel::tcm_continue`], from `choose`) in its address space before
//! it runs again; only then is the result in its r0. Nothing is replayed
//! (a replay by rewinding the pc is wrong in Thumb state, and would let
//! the caller run its own code between the steps of its exchange).
//!
//! While a process has an exchange in progress or a page in TCM, the
//! calls that would change or free the frames involved are refused
//! ([`Kernel::tcm_busy`]: `UNMAP`, `TCM_DELETE`, `TCM_SET_STATE` with
//! `EBUSY`; `MAP` and `TCM_CREATE` at the resource slots with `EINVAL`);
//! the kernel's own paths (a process ending) cancel its exchange first
//! ([`Kernel::cancel_pending`]).

use fass::{SpaceId, SwitchStrategy};
use mmu_armv5::descriptor::{AccessPermission, CachePolicy};
use mmu_armv5::regs::{Far, Fsr};
use mmu_armv5::size::PageSizeKind;
use mmu_armv5::VirtAddr;
use spm::tcm::TcmKind;
use spm::{AddressSpace, ExchangeError, ExchangeRequest, FrameState, Location, Progress, Rights};

use crate::abi::nr;
use crate::probe::{probe_read, Privilege};
use crate::proc::kernel::{
    frame_at, free_frame, one_page, set_owner, After, Kernel, Page, Pending, State,
};
use crate::proc::strategy::{dispatch, Strategy};
use crate::proc::syscall::{SysError, SysResult};
use crate::proc::tcm::{self, Hw, Irq, KernelJob, Maps, XTiming, CHUNK, USER_RES_VA};
use crate::proc::timer;

/// Exchange steps of the kernel job per timer tick.
const JOB_STEPS_PER_TICK: u32 = 12;

/// Ticks the kernel page stays in ITCM before it is moved back.
const KERNEL_TICKS_IN_ITCM: u32 = 6;

/// Why an exchange was refused or failed, as a system-call error.
fn xerr(e: ExchangeError) -> SysError {
    match e {
        ExchangeError::RightsExceeded { .. } => SysError::Invalid,
        ExchangeError::NotPermitted
        | ExchangeError::NotOwner(_)
        | ExchangeError::KernelOnly(_)
        | ExchangeError::NotMovable(_) => SysError::NotPermitted,
        ExchangeError::Busy(_) => SysError::Busy,
        ExchangeError::NotMapped(_) => SysError::Fault,
        _ => SysError::Invalid,
    }
}

fn space(cur: usize) -> AddressSpace {
    AddressSpace::User(spm::SpaceId::new(cur as u16))
}

impl Kernel {
    /// Under FASS, makes the CPD hold the current process's slot of `va`
    /// (a kernel probe, its fault resolved), so its descriptor can be found.
    pub(in crate::proc) fn touch(&mut self, cur: usize, va: u32) {
        if !matches!(self.strategy, Strategy::Fass(_)) || va >= crate::mmu::USER_TOP {
            return;
        }
        // SAFETY: no other reference to the TCM state is alive while `t` is
        // (`tcm`'s module docs: single core, no re-entry); `t` is not used across a
        // call that reaches the state (`free_frame`, `set_owner`).
        let Some(t) = (unsafe { tcm::state() }) else {
            return;
        };
        for _ in 0..4 {
            let found = tcm::user_entry(&self.strategy, t.root(), cur, va).is_some();
            if found {
                return;
            }
            match probe_read(va, Privilege::Kernel) {
                Ok(_) => return,
                Err(f) => {
                    if !self.resolve(Fsr::from_bits(f.dfsr), Far::from_bits(f.far)) {
                        return;
                    }
                }
            }
        }
    }

    /// `TCM_EXCHANGE`, `TCM_RELEASE` and `TCM_STATE` of process `cur`.
    /// `None`: preempted between steps; `cur` is blocked in the call
    /// ([`State::InTcm`]) until [`Kernel::tcm_continue`] ends it.
    pub fn sys_tcm(
        &mut self,
        cur: usize,
        call: u32,
        va: u32,
        kind: u32,
    ) -> (Option<SysResult<i32>>, After) {
        if !tcm::is_set_up() {
            return (Some(Err(SysError::NoSys)), After::Continue);
        }
        if call == nr::TCM_STATE {
            return (Some(self.tcm_state(cur, va)), After::Continue);
        }
        // One exchange at a time, another process's (the caller's own
        // cannot be pending: it would still be blocked in its call).
        if self.pending.is_some() {
            return (Some(Err(SysError::Busy)), After::Continue);
        }
        match self.tcm_begin(cur, [call, va, kind]) {
            Ok(p) => self.pending = Some(p),
            Err(e) => return (Some(Err(e)), After::Continue),
        }
        match self.tcm_run(cur) {
            Some(r) => (Some(r), After::Continue),
            None => (None, After::Yield),
        }
    }

    /// Continues the exchange of process `idx`, blocked in its TCM call
    /// and now the current process (the scheduler switched to it, so its
    /// slots can be touched). `true`: the call is over, `idx` is ready
    /// with the result in r0; `false`: preempted again, still blocked.
    pub(in crate::proc) fn tcm_continue(&mut self, idx: usize) -> bool {
        match self.tcm_run(idx) {
            None => false,
            Some(r) => {
                self.set_result(idx, r);
                self.set_state(idx, State::Ready);
                true
            }
        }
    }

    /// Whether page `va` of process `idx` is in TCM or part of an exchange
    /// in progress: its frames must not be changed or freed.
    pub(in crate::proc) fn tcm_busy(&self, idx: usize, va: u32) -> bool {
        let p = &self.procs[idx];
        if p.tcm_targets.contains(&Some(va)) {
            return true;
        }
        self.pending.as_ref().is_some_and(|x| {
            x.proc == idx && (x.call[1] == va || p.res_pages[x.slot].is_some_and(|r| r.va == va))
        })
    }

    fn tcm_state(&mut self, cur: usize, va: u32) -> SysResult<i32> {
        if va >= crate::mmu::USER_TOP {
            return Err(SysError::Fault);
        }
        self.touch(cur, va & !0xFFF);
        // SAFETY: no other reference to the TCM state is alive while `t` is
        // (`tcm`'s module docs: single core, no re-entry); `t` is not used across a
        // call that reaches the state (`free_frame`, `set_owner`).
        let Some(t) = (unsafe { tcm::state() }) else {
            return Err(SysError::NoSys);
        };
        let (table, tt) = tcm::split(t);
        let maps = Maps::new(&mut self.procs, &self.strategy, tt);
        let r = spm::ops::query_state(table, &maps, space(cur), VirtAddr::new(va));
        let frame = spm::Mappings::translate(&maps, space(cur), VirtAddr::new(va));
        match (r, frame) {
            (Ok(state), Some(tr)) => {
                let loc = table
                    .region_of(tr.page)
                    .map(|r| tcm::location_code(r.location()))
                    .unwrap_or(3);
                Ok((tcm::state_code(state) | (loc << 4)) as i32)
            }
            _ => Err(SysError::Fault),
        }
    }

    fn request(&self, cur: usize, va: u32, slot: usize, exec: bool) -> ExchangeRequest {
        let me = space(cur);
        ExchangeRequest {
            caller: me,
            target_space: me,
            target: VirtAddr::new(va),
            resource_space: me,
            resource: VirtAddr::new(USER_RES_VA + (slot as u32) * 4096),
            size: PageSizeKind::Small,
            count: 1,
            rights: if exec { Rights::RX } else { Rights::RW },
        }
    }

    fn record(&self, cur: usize, va: u32) -> Option<Page> {
        let p = &self.procs[cur];
        p.kernel_pages
            .iter()
            .chain(p.user_pages.iter())
            .flatten()
            .find(|pg| pg.va == va)
            .copied()
    }

    fn tcm_begin(&mut self, cur: usize, args: [u32; 3]) -> Result<Pending, SysError> {
        let [call, va, kind] = args;
        if va & 0xFFF != 0 {
            return Err(SysError::Invalid);
        }
        let exec = self.record(cur, va).ok_or(SysError::Invalid)?.exec;
        // SAFETY: no other reference to the TCM state is alive while `t` is
        // (`tcm`'s module docs: single core, no re-entry); `t` is not used across a
        // call that reaches the state (`free_frame`, `set_owner`).
        let t = unsafe { tcm::state() }.ok_or(SysError::NoSys)?;
        let slot = if call == nr::TCM_EXCHANGE {
            let kind = match kind {
                0 => TcmKind::Instruction,
                1 => TcmKind::Data,
                _ => return Err(SysError::Invalid),
            };
            if self.procs[cur].tcm_targets.contains(&Some(va)) {
                return Err(SysError::Busy);
            }
            let slot = self.procs[cur]
                .res_pages
                .iter()
                .position(Option::is_none)
                .ok_or(SysError::NoMemory)?;
            let frame = t.alloc(kind).ok_or(SysError::NoMemory)?;
            let rva = USER_RES_VA + (slot as u32) * 4096;
            let sp = SpaceId(cur as u16);
            let r = self.sys(|st, sys| dispatch!(st, s => SwitchStrategy::map_pages(s, sys, sp, one_page(rva)?, frame_at(frame)?, AccessPermission::PrivRw, CachePolicy::Uncached)));
            if let Err(e) = r {
                t.free(frame);
                return Err(e.into());
            }
            self.procs[cur].res_pages[slot] = Some(Page {
                va: rva,
                pa: frame,
                exec: false,
            });
            tcm::note_mapper(frame, Some(cur));
            slot
        } else {
            let slot = self.procs[cur]
                .tcm_targets
                .iter()
                .position(|t| *t == Some(va))
                .ok_or(SysError::Invalid)?;
            // The frame the page left is still the caller's user page
            // (thesis 4.4.2.3): it becomes a page resource again with
            // `spm`'s delete, so the page can be exchanged back into it.
            let rva = USER_RES_VA + (slot as u32) * 4096;
            self.touch(cur, rva);
            let sid = spm::SpaceId::new(cur as u16);
            let (table, tt) = tcm::split(t);
            let maps = Maps::new(&mut self.procs, &self.strategy, tt);
            if let Err(e) = spm::ops::delete_user_page(table, &maps, sid, VirtAddr::new(rva)) {
                defmt::info!("TCM release of process {=usize}: {}", cur, e);
                return Err(SysError::Busy);
            }
            slot
        };
        let req = self.request(cur, va, slot, exec);
        self.touch(cur, va);
        self.touch(cur, req.resource.as_u32());
        // SAFETY: no other reference to the TCM state is alive while `t` is
        // (`tcm`'s module docs: single core, no re-entry); `t` is not used across a
        // call that reaches the state (`free_frame`, `set_owner`).
        let t = unsafe { tcm::state() }.ok_or(SysError::NoSys)?;
        let (table, tt) = tcm::split(t);
        let maps = Maps::new(&mut self.procs, &self.strategy, tt);
        match spm::Exchange::begin(table, &maps, req, CHUNK) {
            Ok(x) => Ok(Pending {
                proc: cur,
                call: args,
                slot,
                x,
                t: XTiming::default(),
            }),
            Err(e) => {
                defmt::info!(
                    "TCM call {=u32} of process {=usize} refused: {}",
                    call,
                    cur,
                    e
                );
                if call == nr::TCM_EXCHANGE {
                    self.drop_resource(cur, slot);
                } else if let Some(r) = self.procs[cur].res_pages[slot] {
                    // The frame the release made a page resource is the
                    // caller's user page again.
                    set_owner(r.pa, Some(cur));
                }
                Err(xerr(e))
            }
        }
    }

    /// Unmaps resource slot `slot` of `cur` and frees its frame.
    fn drop_resource(&mut self, cur: usize, slot: usize) {
        let Some(pg) = self.procs[cur].res_pages[slot].take() else {
            return;
        };
        self.procs[cur].tcm_targets[slot] = None;
        let sp = SpaceId(cur as u16);
        let r = self.sys(
            |st, sys| dispatch!(st, s => SwitchStrategy::unmap_pages(s, sys, sp, one_page(pg.va)?)),
        );
        if let Err(e) = r {
            // The per-table strategies may fail to unmap (see the report):
            // clear the descriptor kernel-side.
            defmt::warn!(
                "unmapping TCM resource {=u32:#x} failed ({}); cleared directly",
                pg.va,
                e
            );
            // SAFETY: no other reference to the TCM state is alive while `t` is
            // (`tcm`'s module docs: single core, no re-entry); `t` is not used across a
            // call that reaches the state (`free_frame`, `set_owner`).
            if let Some(t) = unsafe { tcm::state() } {
                if let Some((entry, mva)) = tcm::user_entry(&self.strategy, t.root(), cur, pg.va) {
                    // SAFETY: the resource slot's own descriptor; the TLB
                    // entry of its MVA is invalidated right after.
                    unsafe { entry.write_volatile(0) };
                    let mut m = crate::board::maint(&mut self.cp15);
                    mmu_armv5::maint::CacheMaintenance::clean_dcache_line(
                        &mut m,
                        mmu_armv5::ModifiedVirtAddr::new(entry as u32),
                    );
                    crate::proc::platform::invalidate_tlb_entry_on(
                        &mut self.cp15,
                        mmu_armv5::ModifiedVirtAddr::new(mva),
                    );
                }
            }
        }
        free_frame(pg.pa);
    }

    /// Runs the pending exchange of `cur` (the current process) until it
    /// ends, or until a tick came in between two steps while another
    /// process can run: then `cur` is blocked in its call
    /// ([`State::InTcm`]) and the answer is `None`. `Some`: the call's result.
    fn tcm_run(&mut self, cur: usize) -> Option<SysResult<i32>> {
        let mut p = self.pending.take()?;
        if p.proc != cur {
            self.pending = Some(p);
            return Some(Err(SysError::Busy));
        }
        let req = *p.x.request();
        self.touch(cur, req.target.as_u32());
        self.touch(cur, req.resource.as_u32());
        // SAFETY: no other reference to the TCM state is alive while `t` is
        // (`tcm`'s module docs: single core, no re-entry); `t` is not used across a
        // call that reaches the state (`free_frame`, `set_owner`).
        let t = unsafe { tcm::state() }?;
        let mut irq = Irq::default();
        let result = loop {
            let t0 = timer::now();
            tcm::set_irqs_enabled(true);
            let r = tcm::step(
                &mut p.x,
                &mut self.procs,
                &self.strategy,
                t,
                &mut Hw::new(&mut self.cp15),
                &mut irq,
            );
            tcm::set_irqs_enabled(false);
            p.t.ticks += timer::now().wrapping_sub(t0);
            p.t.steps += 1;
            p.t.longest = p.t.longest.max(irq.longest);
            p.t.windows += core::mem::take(&mut irq.windows);
            match r {
                Err(e) => {
                    defmt::error!("TCM exchange of process {=usize} failed: {}", cur, e);
                    break Err(xerr(e));
                }
                Ok(Progress::Done) => break Ok(()),
                Ok(Progress::Pending) => {}
            }
            let taken = tcm::take_kernel_irqs();
            self.counters.irqs += taken;
            if taken > 0 && self.pick_after(cur).is_some_and(|n| n != cur) {
                // The tick came in between two steps and another process
                // can run: block the caller in its call.
                self.counters.preemptions += 1;
                p.t.preempted += 1;
                let thumb = self.procs[cur].ctx.cpsr & (1 << 5) != 0;
                self.tcm_preempted[usize::from(thumb)] += 1;
                self.pending = Some(p);
                self.set_state(cur, State::InTcm);
                return None;
            }
        };
        let taken = tcm::take_kernel_irqs();
        self.counters.irqs += taken;
        // A failed exchange released its frames; a page whose switch was
        // done was finished (it counts as exchanged).
        let exchanged = result.is_ok()
            || tcm::cancel(
                &mut p.x,
                &mut self.procs,
                &self.strategy,
                t,
                &mut Hw::new(&mut self.cp15),
            )
            .is_ok_and(|n| n == 1);
        self.complete(cur, &p, exchanged);
        if let Some(slot) = self.xtimes.iter_mut().find(|s| s.is_none()) {
            *slot = Some((p.call[0], p.t));
        }
        Some(result.map(|_| 0))
    }

    fn complete(&mut self, cur: usize, p: &Pending, exchanged: bool) {
        match (p.call[0], exchanged) {
            (nr::TCM_EXCHANGE, true) => self.procs[cur].tcm_targets[p.slot] = Some(p.call[1]),
            (nr::TCM_EXCHANGE, false) => self.drop_resource(cur, p.slot),
            (_, true) => self.drop_resource(cur, p.slot),
            (_, false) => {
                // The page stays in TCM; the frame it left is the caller's
                // user page again (the release made it a page resource).
                if let Some(r) = self.procs[cur].res_pages[p.slot] {
                    set_owner(r.pa, Some(cur));
                }
            }
        }
    }

    /// Process `idx` is ending: its exchange in progress, if any, is
    /// cancelled (both frames back, `spm::Exchange::cancel`) before
    /// anything of it is freed, and its records follow the outcome.
    pub fn cancel_pending(&mut self, idx: usize) {
        if self.pending.as_ref().is_none_or(|p| p.proc != idx) {
            return;
        }
        let Some(mut p) = self.pending.take() else {
            return;
        };
        // SAFETY: no other reference to the TCM state is alive while `t` is
        // (`tcm`'s module docs: single core, no re-entry); `t` is not used across a
        // call that reaches the state (`free_frame`, `set_owner`).
        let Some(t) = (unsafe { tcm::state() }) else {
            return;
        };
        let exchanged = match tcm::cancel(
            &mut p.x,
            &mut self.procs,
            &self.strategy,
            t,
            &mut Hw::new(&mut self.cp15),
        ) {
            Ok(n) => n == 1,
            Err(e) => {
                defmt::error!("cancelling the exchange of process {=usize}: {}", idx, e);
                false
            }
        };
        self.complete(idx, &p, exchanged);
    }

    /// Starts moving the switch/IPC page into ITCM (advanced on timer ticks).
    pub fn start_kernel_job(&mut self) {
        // SAFETY: no other reference to the TCM state is alive while `t` is
        // (`tcm`'s module docs: single core, no re-entry); `t` is not used across a
        // call that reaches the state (`free_frame`, `set_owner`).
        let Some(t) = (unsafe { tcm::state() }) else {
            return;
        };
        if !matches!(t.job, KernelJob::Idle | KernelJob::Done) {
            return;
        }
        t.job_stats = tcm::JobStats::default();
        t.job_error = None;
        let Some(frame) = t.alloc(TcmKind::Instruction) else {
            t.job = KernelJob::Done;
            return;
        };
        let Some(res) = t.kernel_view(frame) else {
            t.job = KernelJob::Done;
            return;
        };
        let req = tcm::kernel_request(tcm::kswitch_va(), res);
        let (table, tt) = tcm::split(t);
        let maps = Maps::new(&mut self.procs, &self.strategy, tt);
        match spm::Exchange::begin(table, &maps, req, CHUNK) {
            Ok(x) => t.job = KernelJob::Out { x, frame, res },
            Err(e) => {
                t.free(frame);
                t.job_error = Some(e);
                t.job = KernelJob::Done;
            }
        }
    }

    /// Advances the kernel job on a timer tick: up to [`JOB_STEPS_PER_TICK`]
    /// bounded steps (each its own masked window at most).
    #[inline(always)]
    pub fn kernel_job_tick(&mut self) {
        // Without a job under way (every scenario but `tcm`), a tick costs
        // this check only.
        let idle = |t: &mut tcm::Tcm| matches!(t.job, KernelJob::Idle | KernelJob::Done);
        // SAFETY: the reference lives for this expression only, which reaches
        // no other user of the TCM state.
        if unsafe { tcm::state() }.is_none_or(idle) {
            return;
        }
        self.kernel_job_ticks();
    }

    /// The job's steps of one tick.
    #[inline(never)]
    fn kernel_job_ticks(&mut self) {
        for _ in 0..JOB_STEPS_PER_TICK {
            // SAFETY: the reference lives for this expression only, which reaches
            // no other user of the TCM state.
            let moving = unsafe { tcm::state() }
                .is_some_and(|t| matches!(t.job, KernelJob::Out { .. } | KernelJob::Back { .. }));
            self.kernel_job_step();
            if !moving {
                break;
            }
        }
    }

    /// One step of the kernel job.
    fn kernel_job_step(&mut self) {
        // SAFETY: no other reference to the TCM state is alive while `t` is
        // (`tcm`'s module docs: single core, no re-entry); `t` is not used across a
        // call that reaches the state (`free_frame`, `set_owner`).
        let Some(t) = (unsafe { tcm::state() }) else {
            return;
        };
        // Every tick comes here: the idle states return without moving the
        // job (an `Exchange` is a few hundred bytes).
        match &mut t.job {
            KernelJob::Idle | KernelJob::Done => return,
            KernelJob::In { ticks, .. } if *ticks + 1 < KERNEL_TICKS_IN_ITCM => {
                *ticks += 1;
                return;
            }
            _ => {}
        }
        let job = core::mem::replace(&mut t.job, KernelJob::Done);
        let mut irq = Irq::default();
        let mut hw = Hw::new(&mut self.cp15);
        let mut step = |x: &mut spm::Exchange, procs, strategy, t: &mut tcm::Tcm| {
            tcm::step(x, procs, strategy, t, &mut hw, &mut irq)
        };
        t.job = match job {
            KernelJob::Out { mut x, frame, res } => {
                t.job_stats.steps += 1;
                match step(&mut x, &mut self.procs, &self.strategy, t) {
                    Ok(Progress::Pending) => KernelJob::Out { x, frame, res },
                    Ok(Progress::Done) => {
                        t.job_stats.out += 1;
                        t.job_stats.seen_in_itcm = t.kswitch_frame() == frame;
                        KernelJob::In {
                            frame,
                            res,
                            ticks: 0,
                            switches0: self.counters.switches,
                        }
                    }
                    Err(e) => {
                        // The failed exchange released its frames: the
                        // ITCM frame goes back unless the page got into it.
                        t.job_error = Some(e);
                        if tcm::cancel(&mut x, &mut self.procs, &self.strategy, t, &mut hw) != Ok(1)
                        {
                            t.free(frame);
                        }
                        KernelJob::Done
                    }
                }
            }
            KernelJob::In {
                frame,
                res,
                ticks,
                switches0,
            } => {
                if ticks + 1 < KERNEL_TICKS_IN_ITCM {
                    KernelJob::In {
                        frame,
                        res,
                        ticks: ticks + 1,
                        switches0,
                    }
                } else {
                    t.job_stats.ticks_in_itcm = ticks + 1;
                    t.job_stats.switches_in_itcm = self.counters.switches - switches0;
                    let req = tcm::kernel_request(tcm::kswitch_va(), res);
                    let (table, tt) = tcm::split(t);
                    let maps = Maps::new(&mut self.procs, &self.strategy, tt);
                    match spm::Exchange::begin(table, &maps, req, CHUNK) {
                        Ok(x) => KernelJob::Back { x, frame },
                        Err(e) => {
                            t.job_error = Some(e);
                            KernelJob::Done
                        }
                    }
                }
            }
            KernelJob::Back { mut x, frame } => {
                t.job_stats.steps += 1;
                match step(&mut x, &mut self.procs, &self.strategy, t) {
                    Ok(Progress::Pending) => KernelJob::Back { x, frame },
                    Ok(Progress::Done) => {
                        t.job_stats.back += 1;
                        t.free(frame);
                        KernelJob::Done
                    }
                    Err(e) => {
                        // The page is back in RAM if the failed exchange
                        // got that far: then the ITCM frame is free.
                        t.job_error = Some(e);
                        if tcm::cancel(&mut x, &mut self.procs, &self.strategy, t, &mut hw) == Ok(1)
                        {
                            t.free(frame);
                        }
                        KernelJob::Done
                    }
                }
            }
            other => other,
        };
        t.job_stats.longest_window = t.job_stats.longest_window.max(irq.longest);
    }

    /// After the processes ended: runs the kernel job to its end.
    pub fn finish_kernel_job(&mut self) {
        // SAFETY: no other reference to the TCM state is alive while `t` is
        // (`tcm`'s module docs: single core, no re-entry); `t` is not used across a
        // call that reaches the state (`free_frame`, `set_owner`).
        let Some(t) = (unsafe { tcm::state() }) else {
            return;
        };
        for _ in 0..10_000 {
            if matches!(t.job, KernelJob::Done | KernelJob::Idle) {
                return;
            }
            t.job_stats.finished_late = true;
            self.kernel_job_step();
        }
    }
}

/// The spm state code of `state` (syscall `TCM_STATE`): 0 undefined,
/// 1 resource, 2 user page, 3 kernel page.
pub(super) fn state_code(state: FrameState) -> u32 {
    match state {
        FrameState::Undefined => 0,
        FrameState::Resource => 1,
        FrameState::User(_) => 2,
        FrameState::Kernel(_) => 3,
    }
}

/// The location code: 0 RAM, 1 ITCM, 2 DTCM, 3 device.
pub(super) fn location_code(l: Location) -> u32 {
    match l {
        Location::Ram => 0,
        Location::Itcm => 1,
        Location::Dtcm => 2,
        Location::Device => 3,
    }
}
