//! The memory system calls: `MAP`/`UNMAP` of private zeroed pages and
//! `SEG_MAP`/`SEG_UNMAP` of the scenario's shared segments, through the
//! switching strategy, with the strategy's errors turned into the ABI's.

use fass::{SegmentId, SpaceId, SwitchStrategy};
use mmu_armv5::descriptor::{AccessPermission, CachePolicy};
use mmu_armv5::{PhysAddr, VirtAddr};

use super::kernel::{frames, free_frame, set_owner, Kernel, Page, USER_PAGES};
use super::strategy::{dispatch, SEGMENTS};
use super::tcm::{self, RES_SLOTS};
use crate::abi::{self, err};

fn ap_of(prot: u32) -> Option<AccessPermission> {
    match prot {
        abi::prot::NONE => Some(AccessPermission::PrivRw),
        abi::prot::READ => Some(AccessPermission::PrivRwUserRo),
        abi::prot::RW => Some(AccessPermission::ReadWrite),
        _ => None,
    }
}

/// Maps a `FassError` from a user-requested mapping to an error code.
pub fn map_error(e: fass::FassError) -> i32 {
    use fass::FassError as E;
    match e {
        E::NotPrivate(_) | E::BadLength(_) | E::Segment(_) | E::Pid(_) => err::EINVAL,
        E::Space(fass::space::SpaceError::AlreadyMapped(_)) => err::EBUSY,
        E::Space(fass::space::SpaceError::Misaligned(_)) => err::EINVAL,
        _ => err::ENOMEM,
    }
}

impl Kernel {
    /// Maps `len` bytes of fresh zeroed pages at `va` for process `idx` (`MAP`).
    pub fn map_user(&mut self, idx: usize, va: u32, len: u32, prot: u32) -> i32 {
        let Some(ap) = ap_of(prot) else {
            return err::EINVAL;
        };
        if !va.is_multiple_of(4096)
            || len == 0
            || !len.is_multiple_of(4096)
            || len > (USER_PAGES as u32) * 4096
        {
            return err::EINVAL;
        }
        let Some(end) = va.checked_add(len) else {
            return err::EINVAL;
        };
        if va < 0x1000 || end > crate::mmu::USER_TOP {
            return err::EINVAL;
        }
        // The TCM resource slots are the kernel's.
        let res_end = tcm::USER_RES_VA + (RES_SLOTS as u32) * 4096;
        if va < res_end && tcm::USER_RES_VA < end {
            return err::EINVAL;
        }
        let pages = (len / 4096) as usize;
        let free_slots = self.procs[idx]
            .user_pages
            .iter()
            .filter(|p| p.is_none())
            .count();
        if free_slots < pages {
            return err::ENOMEM;
        }
        let space = SpaceId(idx as u16);
        let mut done = 0;
        let mut result = 0;
        for k in 0..pages {
            let pva = va + (k as u32) * 4096;
            let Some(pa) = frames().alloc() else {
                result = err::ENOMEM;
                break;
            };
            let r = self.sys(|st, sys| dispatch!(st, s => SwitchStrategy::map_pages(s, sys, space, VirtAddr::new(pva), PhysAddr::new(pa), 4096, ap, CachePolicy::WriteBack)),
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
                    result = map_error(e);
                    break;
                }
            }
        }
        if result != 0 {
            // Undo the pages mapped by this call.
            for k in 0..done {
                let _ = self.unmap_page(idx, va + (k as u32) * 4096);
            }
        }
        result
    }

    pub(super) fn unmap_page(&mut self, idx: usize, va: u32) -> i32 {
        let space = SpaceId(idx as u16);
        let Some(slot) = self.procs[idx]
            .user_pages
            .iter()
            .position(|p| p.is_some_and(|p| p.va == va))
        else {
            return err::EINVAL;
        };
        let Some(pg) = self.procs[idx].user_pages[slot].take() else {
            return err::EINVAL;
        };
        let r = self.sys(|st, sys| dispatch!(st, s => SwitchStrategy::unmap_pages(s, sys, space, VirtAddr::new(va), 4096)),
        );
        free_frame(pg.pa);
        match r {
            Ok(()) => 0,
            Err(e) => {
                defmt::warn!(
                    "unmapping {=u32:#010x} of process {=usize} failed: {}",
                    va,
                    idx,
                    e
                );
                map_error(e)
            }
        }
    }

    /// Unmaps `len` bytes at `va` that process `idx` mapped with `MAP` (`UNMAP`).
    pub fn unmap_user(&mut self, idx: usize, va: u32, len: u32) -> i32 {
        if !va.is_multiple_of(4096)
            || len == 0
            || !len.is_multiple_of(4096)
            || len > (USER_PAGES as u32) * 4096
        {
            return err::EINVAL;
        }
        if va.checked_add(len).is_none() {
            return err::EINVAL;
        }
        let p = &self.procs[idx];
        for k in 0..len / 4096 {
            let pva = va + k * 4096;
            if p.kernel_pages.iter().flatten().any(|pg| pg.va == pva) {
                return err::EPERM;
            }
            if !p.user_pages.iter().flatten().any(|pg| pg.va == pva) {
                return err::EINVAL;
            }
            // In TCM or being exchanged: its frames stay (`TCM_RELEASE` first).
            if self.tcm_busy(idx, pva) {
                return err::EBUSY;
            }
        }
        for k in 0..len / 4096 {
            let r = self.unmap_page(idx, va + k * 4096);
            if r != 0 {
                return r;
            }
        }
        0
    }

    /// Maps segment `id` into process `idx` (`SEG_MAP`); returns 0 and puts
    /// its address in the caller's r1.
    pub fn seg_map(&mut self, idx: usize, id: u32) -> i32 {
        self.bump_epoch();
        let Some(Some(info)) = self.segments.get(id as usize).copied() else {
            return err::EINVAL;
        };
        if self.procs[idx].segs & (1 << id) != 0 {
            return err::EBUSY;
        }
        let space = SpaceId(idx as u16);
        let r = self.sys(|st, sys| dispatch!(st, s => SwitchStrategy::map_segment(s, sys, space, SegmentId(id as u16), VirtAddr::new(info.va), fass::SegmentAccess::Client)),
        );
        match r {
            Ok(()) => {
                self.procs[idx].segs |= 1 << id;
                self.procs[idx].ctx.r[1] = info.va;
                0
            }
            Err(e) => map_error(e),
        }
    }

    /// Unmaps segment `id` from process `idx` (`SEG_UNMAP`).
    pub fn seg_unmap(&mut self, idx: usize, id: u32) -> i32 {
        self.bump_epoch();
        if id as usize >= SEGMENTS || self.procs[idx].segs & (1 << id) == 0 {
            return err::EINVAL;
        }
        let space = SpaceId(idx as u16);
        let r = self.sys(|st, sys| dispatch!(st, s => SwitchStrategy::unmap_segment(s, sys, space, SegmentId(id as u16))),
        );
        self.procs[idx].segs &= !(1 << id);
        match r {
            Ok(()) => 0,
            Err(e) => map_error(e),
        }
    }
}
