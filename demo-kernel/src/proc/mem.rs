//! The memory system calls: `MAP`/`UNMAP` of private zeroed pages,
//! `SEG_MAP`/`SEG_UNMAP` of the scenario's shared segments and `LOAD_CODE`
//! of code pages, through the switching strategy, with the strategy's
//! errors turned into the ABI's.

use fass::{SegmentId, SpaceId, SwitchStrategy};
use mmu_armv5::descriptor::{AccessPermission, CachePolicy};
use mmu_armv5::maint::{LineRange, RangeMaintenance};
use mmu_armv5::VirtAddr;

use super::kernel::{frame_at, frames, free_frame, one_page, set_owner, Kernel, Page, USER_PAGES};
use super::platform;
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

    /// Loads the 4096 bytes at the caller's `src` as the code page at `va`
    /// of process `idx` (`LOAD_CODE`, the window `abi::CODE_VA`): a page
    /// of the window loaded before is replaced in place (same frame, same
    /// mapping), any other is mapped fresh, read-only for the process,
    /// among its kernel-owned pages (freed when it ends). The process
    /// cannot write the page, so the copy goes through the kernel's linear
    /// map, and [`Kernel::publish_frame`] cleans it to RAM and invalidates
    /// the I-cache.
    ///
    /// A replaced page keeps its address and frame, so the VIVT caches may
    /// hold its old contents under the process's MVA: the D-lines are
    /// cleaned and invalidated by MVA first (the process may have read
    /// the page); the I-lines go with the whole I-cache invalidation,
    /// which nothing else does here (no unmap, no switch), so it is the
    /// only protection against the old instructions (the cache check's
    /// `omit=icache-load`, `scenario=codeload`). `EBUSY` for a page in
    /// TCM or in an exchange.
    pub fn load_code(&mut self, idx: usize, va: u32, src: u32) -> SysResult {
        let window_end = abi::CODE_VA + abi::CODE_PAGES * abi::PAGE;
        if !va.is_multiple_of(abi::PAGE) || !(abi::CODE_VA..window_end).contains(&va) {
            return Err(SysError::Invalid);
        }
        let src_end = src.checked_add(abi::PAGE).ok_or(SysError::Invalid)?;
        if !src.is_multiple_of(4) || (src < window_end && abi::CODE_VA < src_end) {
            return Err(SysError::Invalid);
        }
        // The whole source is readable before anything changes.
        self.check_user_buffer(src, abi::PAGE, false)?;
        let space = SpaceId(idx as u16);
        let loaded = self.procs[idx]
            .kernel_pages
            .iter()
            .flatten()
            .find(|p| p.va == va)
            .copied();
        let (pa, slot) = match loaded {
            Some(pg) => {
                // In TCM or being exchanged: its frame is not `pg.pa`'s
                // linear map now (`TCM_RELEASE` first).
                if self.tcm_busy(idx, va) {
                    return Err(SysError::Busy);
                }
                let mva = dispatch!(&self.strategy, s => SwitchStrategy::mva_of(s, space, VirtAddr::new(va)))?;
                // A page-aligned 4 KiB range: whole lines, cannot be refused.
                if let Ok(r) = LineRange::new(mva, abi::PAGE) {
                    platform::counting_on(&mut self.cp15).clean_invalidate_dcache_lines(r);
                }
                (pg.pa, None)
            }
            None => {
                let slot = self.procs[idx]
                    .kernel_pages
                    .iter()
                    .position(Option::is_none)
                    .ok_or(SysError::NoMemory)?;
                (frames().alloc().ok_or(SysError::NoMemory)?, Some(slot))
            }
        };
        let dst = crate::mmu::phys_to_virt(pa) as *mut u32;
        let mut copied = Ok(());
        for i in 0..abi::PAGE / 4 {
            match self.read_user_word(src + 4 * i) {
                // SAFETY: `pa` is a frame of the process's (its code page,
                // or just allocated), in the linear map; `i < 1024`.
                Ok(w) => unsafe { dst.add(i as usize).write_volatile(w) },
                Err(e) => {
                    copied = Err(e);
                    break;
                }
            }
        }
        // Even after a failed copy: a replaced page holds part of the new
        // code, which the caches must not contradict.
        self.publish_frame(pa, true);
        let Some(slot) = slot else {
            return copied;
        };
        if let Err(e) = copied {
            frames().release(pa);
            return Err(e);
        }
        let r = self.sys(|st, sys| dispatch!(st, s => SwitchStrategy::map_pages(s, sys, space, one_page(va)?, frame_at(pa)?, AccessPermission::PrivRwUserRo, CachePolicy::WriteBack)),
        );
        if let Err(e) = r {
            frames().release(pa);
            return Err(e.into());
        }
        set_owner(pa, Some(idx));
        self.procs[idx].kernel_pages[slot] = Some(Page { va, pa, exec: true });
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
