//! The memory system calls: `MAP`/`UNMAP` of private zeroed pages and
//! `SEG_MAP`/`SEG_UNMAP` of the scenario's shared segments, through the
//! switching strategy, with the strategy's errors turned into the ABI's.

use fass::{SegmentId, SpaceId, SwitchStrategy};
use mmu_armv5::descriptor::{AccessPermission, CachePolicy};
use mmu_armv5::VirtAddr;

use super::kernel::{frame_at, frames, free_frame, one_page, set_owner, Kernel, Page, USER_PAGES};
use super::strategy::{dispatch, SEGMENTS};
use super::syscall::{SysError, SysResult};
use super::tcm::{self, RES_SLOTS};
use crate::abi;

/// The access permissions of `MAP`'s `prot` argument.
fn ap_of(prot: u32) -> SysResult<AccessPermission> {
    match prot {
        abi::prot::NONE => Ok(AccessPermission::PrivRw),
        abi::prot::READ => Ok(AccessPermission::PrivRwUserRo),
        abi::prot::RW => Ok(AccessPermission::ReadWrite),
        _ => Err(SysError::Invalid),
    }
}

impl Kernel {
    /// Maps `len` bytes of fresh zeroed pages at `va` for process `idx` (`MAP`).
    pub fn map_user(&mut self, idx: usize, va: u32, len: u32, prot: u32) -> SysResult {
        let ap = ap_of(prot)?;
        if !va.is_multiple_of(4096)
            || len == 0
            || !len.is_multiple_of(4096)
            || len > (USER_PAGES as u32) * 4096
        {
            return Err(SysError::Invalid);
        }
        let Some(end) = va.checked_add(len) else {
            return Err(SysError::Invalid);
        };
        if va < 0x1000 || end > crate::mmu::USER_TOP {
            return Err(SysError::Invalid);
        }
        // The TCM resource slots are the kernel's.
        let res_end = tcm::USER_RES_VA + (RES_SLOTS as u32) * 4096;
        if va < res_end && tcm::USER_RES_VA < end {
            return Err(SysError::Invalid);
        }
        let pages = (len / 4096) as usize;
        let free_slots = self.procs[idx]
            .user_pages
            .iter()
            .filter(|p| p.is_none())
            .count();
        if free_slots < pages {
            return Err(SysError::NoMemory);
        }
        let space = SpaceId(idx as u16);
        let mut done = 0;
        let mut result = Ok(());
        for k in 0..pages {
            let pva = va + (k as u32) * 4096;
            let Some(pa) = frames().alloc() else {
                result = Err(SysError::NoMemory);
                break;
            };
            let r = self.sys(|st, sys| dispatch!(st, s => SwitchStrategy::map_pages(s, sys, space, one_page(pva)?, frame_at(pa)?, ap, CachePolicy::WriteBack)),
            );
            match r {
                Ok(()) => {
                    if let Some(slot) = self.procs[idx].user_pages.iter_mut().find(|p| p.is_none())
                    {
                        *slot = Some(Page {
                            va: pva,
                            pa,
                            exec: false,
                        });
                        set_owner(pa, Some(idx));
                    }
                    done += 1;
                }
                Err(e) => {
                    frames().release(pa);
                    result = Err(e.into());
                    break;
                }
            }
        }
        if result.is_err() {
            // Undo the pages mapped by this call.
            for k in 0..done {
                let _ = self.unmap_page(idx, va + (k as u32) * 4096);
            }
        }
        result
    }

    pub(super) fn unmap_page(&mut self, idx: usize, va: u32) -> SysResult {
        let space = SpaceId(idx as u16);
        let Some(slot) = self.procs[idx]
            .user_pages
            .iter()
            .position(|p| p.is_some_and(|p| p.va == va))
        else {
            return Err(SysError::Invalid);
        };
        let Some(pg) = self.procs[idx].user_pages[slot] else {
            return Err(SysError::Invalid);
        };
        let r = crate::marker::omitting_tlb(crate::marker::Omit::TlbUnmap, || {
            self.sys(
                |st, sys| dispatch!(st, s => SwitchStrategy::unmap_pages(s, sys, space, one_page(va)?)),
            )
        });
        match r {
            Ok(()) => {
                // Only once no translation of it is left: a frame still
                // mapped must not go to the next owner.
                self.procs[idx].user_pages[slot] = None;
                free_frame(pg.pa);
                Ok(())
            }
            Err(e) => {
                // Still mapped (as far as anyone knows): the record and the
                // frame stay the process's, freed when it ends.
                defmt::warn!(
                    "unmapping {=u32:#010x} of process {=usize} failed: {}",
                    va,
                    idx,
                    e
                );
                Err(e.into())
            }
        }
    }

    /// Unmaps `len` bytes at `va` that process `idx` mapped with `MAP` (`UNMAP`).
    pub fn unmap_user(&mut self, idx: usize, va: u32, len: u32) -> SysResult {
        if !va.is_multiple_of(4096)
            || len == 0
            || !len.is_multiple_of(4096)
            || len > (USER_PAGES as u32) * 4096
        {
            return Err(SysError::Invalid);
        }
        if va.checked_add(len).is_none() {
            return Err(SysError::Invalid);
        }
        let p = &self.procs[idx];
        for k in 0..len / 4096 {
            let pva = va + k * 4096;
            if p.kernel_pages.iter().flatten().any(|pg| pg.va == pva) {
                return Err(SysError::NotPermitted);
            }
            if !p.user_pages.iter().flatten().any(|pg| pg.va == pva) {
                return Err(SysError::Invalid);
            }
            // In TCM or being exchanged: its frames stay (`TCM_RELEASE` first).
            if self.tcm_busy(idx, pva) {
                return Err(SysError::Busy);
            }
        }
        for k in 0..len / 4096 {
            self.unmap_page(idx, va + k * 4096)?;
        }
        Ok(())
    }

    /// Maps segment `id` into process `idx` (`SEG_MAP`) and puts its address
    /// in the caller's r1.
    pub fn seg_map(&mut self, idx: usize, id: u32) -> SysResult {
        self.bump_epoch();
        let Some(Some(info)) = self.segments.get(id as usize).copied() else {
            return Err(SysError::Invalid);
        };
        if self.procs[idx].segs & (1 << id) != 0 {
            return Err(SysError::Busy);
        }
        let space = SpaceId(idx as u16);
        let r = self.sys(|st, sys| dispatch!(st, s => SwitchStrategy::map_segment(s, sys, space, SegmentId(id as u16), VirtAddr::new(info.va), fass::SegmentAccess::Client)),
        );
        match r {
            Ok(()) => {
                self.procs[idx].segs |= 1 << id;
                self.procs[idx].ctx.r[1] = info.va;
                Ok(())
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Unmaps segment `id` from process `idx` (`SEG_UNMAP`).
    pub fn seg_unmap(&mut self, idx: usize, id: u32) -> SysResult {
        self.bump_epoch();
        if id as usize >= SEGMENTS || self.procs[idx].segs & (1 << id) == 0 {
            return Err(SysError::Invalid);
        }
        let space = SpaceId(idx as u16);
        let r = self.sys(|st, sys| dispatch!(st, s => SwitchStrategy::unmap_segment(s, sys, space, SegmentId(id as u16))),
        );
        self.procs[idx].segs &= !(1 << id);
        r.map_err(SysError::from)
    }
}
