//! `spm`'s page operations as system calls, with its permission rules (a
//! process changes only what it owns; kernel pages only by the kernel):
//!
//! * `TCM_CREATE(va, kind)`: the kernel takes a free frame of location
//!   `kind` (0 = RAM, 1 = ITCM, 2 = DTCM: the `TCM_STATE` location codes)
//!   as a page resource, maps it read/write at the caller's `va` (checked
//!   like `MAP`: aligned, below the user top, not already mapped) and turns
//!   it into the caller's user page with `spm::ops::create_user_page`,
//!   which zeroes it first: nothing a previous user left in it leaks.
//! * `TCM_DELETE(va)`: `spm::ops::delete_user_page` (the owner only), then
//!   the page is unmapped and its frame given back (TCM to its bank as a
//!   page resource, RAM to the frame allocator).
//! * `TCM_SET_STATE(va, state)`: `spm::ops::change_state` with a `Set`
//!   request (`state`: 0 undefined, 1 resource, 2 the caller's user page,
//!   3 kernel page); returns the new state code. Transitions no one may
//!   make return `ESTATE`, kernel-only ones `EPERM`; so does a resource
//!   (1): the page would stay mapped read/write here (`TCM_DELETE` gives
//!   a page up).
//!
//! These calls name pages the process mapped with `MAP` or `TCM_CREATE`;
//! the image, the stack and pages exchanged into TCM stay the kernel's
//! (`EPERM`, `EBUSY`). Every successful create or delete prints a
//! `TCMOP` line with the free RAM frames and TCM frames in use, before and
//! after.

use fass::{SpaceId, SwitchStrategy};
use mmu_armv5::descriptor::{AccessPermission, CachePolicy};
use mmu_armv5::size::Frame;
use mmu_armv5::{PhysAddr, VirtAddr};
use spm::{AddressSpace, FrameState, KernelUse, OpError, StateRequest, TcmKind};

use crate::abi::nr;
use crate::proc::kernel::{frame_at, frames, free_frame, one_page, Kernel, Page};
use crate::proc::strategy::dispatch;
use crate::proc::syscall::{SysError, SysResult};
use crate::proc::tcm::{self, Hw, Maps, RES_SLOTS, USER_RES_VA};

/// Where a created page's frame comes from.
#[derive(Clone, Copy)]
enum Source {
    Ram,
    Tcm(TcmKind),
}

fn source(kind: u32) -> Result<Source, SysError> {
    match kind {
        0 => Ok(Source::Ram),
        1 => Ok(Source::Tcm(TcmKind::Instruction)),
        2 => Ok(Source::Tcm(TcmKind::Data)),
        _ => Err(SysError::Invalid),
    }
}

/// Why a page operation was refused, as a system-call error.
pub fn op_error(e: OpError) -> SysError {
    match e {
        OpError::NotMapped(_) | OpError::Frame(_) => SysError::Fault,
        OpError::TinyPage(_) | OpError::NotResource { .. } => SysError::Invalid,
        OpError::Busy(_) => SysError::Busy,
        OpError::NotOwner { .. } | OpError::KernelOnly(_) => SysError::NotPermitted,
        OpError::Transition { .. } => SysError::BadState,
    }
}

/// The frame state `code` names for `caller` (`TCM_SET_STATE`).
fn state_of(code: u32, caller: spm::SpaceId) -> Result<FrameState, SysError> {
    match code {
        0 => Ok(FrameState::Undefined),
        1 => Ok(FrameState::Resource),
        2 => Ok(FrameState::User(caller)),
        3 => Ok(FrameState::Kernel(KernelUse::Plain)),
        _ => Err(SysError::Invalid),
    }
}

fn spm_space(cur: usize) -> spm::SpaceId {
    spm::SpaceId::new(cur as u16)
}

/// Free RAM frames and TCM frames in use.
fn counts() -> (usize, u32) {
    // SAFETY: the reference lives for this expression only, which reaches
    // no other user of the TCM state.
    (
        frames().free(),
        unsafe { tcm::state() }.map_or(0, |t| t.in_use()),
    )
}

impl Kernel {
    /// `TCM_CREATE`, `TCM_DELETE` and `TCM_SET_STATE` of process `cur`.
    pub fn sys_tcm_op(&mut self, cur: usize, call: u32, va: u32, arg: u32) -> SysResult<i32> {
        if !tcm::is_set_up() {
            return Err(SysError::NoSys);
        }
        let before = counts();
        // The frame behind `va` before the call (a delete's), or after it (a create's).
        let frame = |k: &Kernel| {
            k.procs[cur]
                .user_pages
                .iter()
                .flatten()
                .find(|pg| pg.va == va)
                .map_or(0, |pg| pg.pa)
        };
        let old = frame(self);
        let r = match call {
            nr::TCM_CREATE => self.tcm_create(cur, va, arg),
            nr::TCM_DELETE => self.tcm_delete(cur, va),
            _ => self.tcm_set_state(cur, va, arg),
        };
        r.inspect(|_| {
            {
                let pa = if call == nr::TCM_CREATE {
                    frame(self)
                } else {
                    old
                };
                if call != nr::TCM_SET_STATE {
                    let after = counts();
                    defmt::info!(
                        "TCMOP id={=usize} call={=u32} va={=u32:#010x} pa={=u32:#010x} ram_free_before={=usize} tcm_in_use_before={=u32} ram_free={=usize} tcm_in_use={=u32}",
                        cur,
                        call,
                        va,
                        pa,
                        before.0,
                        before.1,
                        after.0,
                        after.1
                    );
                }
            }
        })
    }

    /// Checks `va` names one of `cur`'s `MAP`/`TCM_CREATE` pages that is
    /// not exchanged into TCM.
    fn own_page(&self, cur: usize, va: u32) -> Result<(), SysError> {
        if !va.is_multiple_of(4096) || va >= crate::mmu::USER_TOP {
            return Err(SysError::Invalid);
        }
        let p = &self.procs[cur];
        if p.kernel_pages.iter().flatten().any(|pg| pg.va == va) {
            return Err(SysError::NotPermitted);
        }
        if !p.user_pages.iter().flatten().any(|pg| pg.va == va) {
            return Err(SysError::Fault);
        }
        if self.tcm_busy(cur, va) {
            return Err(SysError::Busy);
        }
        Ok(())
    }

    fn tcm_create(&mut self, cur: usize, va: u32, kind: u32) -> SysResult<i32> {
        let src = source(kind)?;
        let sid = spm_space(cur);
        let res_end = USER_RES_VA + (RES_SLOTS as u32) * 4096;
        if !va.is_multiple_of(4096)
            || !(0x1000..=crate::mmu::USER_TOP - 4096).contains(&va)
            || (USER_RES_VA..res_end).contains(&va)
        {
            return Err(SysError::Invalid);
        }
        let p = &self.procs[cur];
        if p.kernel_pages
            .iter()
            .chain(p.user_pages.iter())
            .flatten()
            .any(|pg| pg.va == va)
        {
            return Err(SysError::Busy);
        }
        let slot = p
            .user_pages
            .iter()
            .position(Option::is_none)
            .ok_or(SysError::NoMemory)?;
        // SAFETY: no other reference to the TCM state is alive while `t` is
        // (`tcm`'s module docs: single core, no re-entry); `t` is not used across a
        // call that reaches the state (`free_frame`, `set_owner`).
        let t = unsafe { tcm::state() }.ok_or(SysError::NoSys)?;
        let pa = match src {
            Source::Ram => {
                let pa = frames().alloc().ok_or(SysError::NoMemory)?;
                // A free RAM frame becomes a page resource (the kernel's
                // transition from undefined).
                let r = Frame::from_start(PhysAddr::new(pa))
                    .map(|f| t.table.init_range(f, FrameState::Resource, true));
                if !matches!(r, Ok(Ok(()))) {
                    free_frame(pa);
                    return Err(SysError::NoMemory);
                }
                pa
            }
            Source::Tcm(k) => t.alloc(k).ok_or(SysError::NoMemory)?,
        };
        let space = SpaceId(cur as u16);
        let r = self.sys(|st, sys| dispatch!(st, s => SwitchStrategy::map_pages(s, sys, space, one_page(va)?, frame_at(pa)?, AccessPermission::ReadWrite, CachePolicy::WriteBack)));
        if let Err(e) = r {
            free_frame(pa);
            return Err(e.into());
        }
        self.procs[cur].user_pages[slot] = Some(Page {
            va,
            pa,
            exec: false,
        });
        tcm::note_mapper(pa, Some(cur));
        self.touch(cur, va);
        // SAFETY: no other reference to the TCM state is alive while `t` is
        // (`tcm`'s module docs: single core, no re-entry); `t` is not used across a
        // call that reaches the state (`free_frame`, `set_owner`).
        let t = unsafe { tcm::state() }.ok_or(SysError::NoSys)?;
        let (table, tt) = tcm::split(t);
        let maps = Maps::new(&mut self.procs, &self.strategy, tt);
        // SAFETY: this kernel's frame table, mappings and CPU (`tcm.rs`,
        // "why `spm`'s unsafe calls are sound here").
        let r = unsafe {
            spm::ops::create_user_page(
                table,
                &maps,
                &mut Hw::new(&mut self.cp15),
                sid,
                VirtAddr::new(va),
            )
        };
        match r {
            Ok(_) => Ok(0),
            Err(e) => {
                defmt::info!("TCM_CREATE of process {=usize} refused: {}", cur, e);
                // Unmaps it and gives the frame back.
                let _ = self.unmap_page(cur, va);
                Err(op_error(e))
            }
        }
    }

    fn tcm_delete(&mut self, cur: usize, va: u32) -> SysResult<i32> {
        let sid = spm_space(cur);
        self.own_page(cur, va)?;
        self.touch(cur, va);
        // SAFETY: no other reference to the TCM state is alive while `t` is
        // (`tcm`'s module docs: single core, no re-entry); `t` is not used across a
        // call that reaches the state (`free_frame`, `set_owner`).
        let t = unsafe { tcm::state() }.ok_or(SysError::NoSys)?;
        let (table, tt) = tcm::split(t);
        let maps = Maps::new(&mut self.procs, &self.strategy, tt);
        spm::ops::delete_user_page(table, &maps, sid, VirtAddr::new(va)).map_err(op_error)?;
        // A page resource now: unmapped, its frame given back.
        self.unmap_page(cur, va).map(|()| 0)
    }

    fn tcm_set_state(&mut self, cur: usize, va: u32, code: u32) -> SysResult<i32> {
        let sid = spm_space(cur);
        let to = state_of(code, sid)?;
        self.own_page(cur, va)?;
        // A resource is the kernel's to hand out, but this page stays
        // mapped read/write in the caller's space: giving it up is
        // `TCM_DELETE`, which unmaps it.
        if to == FrameState::Resource {
            return Err(SysError::NotPermitted);
        }
        self.touch(cur, va);
        // SAFETY: no other reference to the TCM state is alive while `t` is
        // (`tcm`'s module docs: single core, no re-entry); `t` is not used across a
        // call that reaches the state (`free_frame`, `set_owner`).
        let t = unsafe { tcm::state() }.ok_or(SysError::NoSys)?;
        let (table, tt) = tcm::split(t);
        let maps = Maps::new(&mut self.procs, &self.strategy, tt);
        // SAFETY: as in `tcm_create`.
        let r = unsafe {
            spm::ops::change_state(
                table,
                &maps,
                &mut Hw::new(&mut self.cp15),
                AddressSpace::User(sid),
                VirtAddr::new(va),
                StateRequest::Set(to),
            )
        };
        match r {
            Ok(s) => Ok(tcm::state_code(s) as i32),
            Err(e) => {
                defmt::info!("TCM_SET_STATE of process {=usize} refused: {}", cur, e);
                Err(op_error(e))
            }
        }
    }
}
