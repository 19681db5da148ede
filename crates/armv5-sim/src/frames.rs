//! A frame pool inside the model's RAM, and the machine's [`TableAlloc`]
//! implementation on top of it: page tables built by `mmu-armv5` live in the
//! very memory the model's walker reads.

use crate::error::{ConfigError, MemError};
use crate::machine::Machine;
use mmu_armv5::table::{AllocError, TableAlloc, TableKind};
use mmu_armv5::{ModifiedVirtAddr, PhysAddr};
use std::collections::BTreeMap;
use std::ptr::NonNull;

/// Bump allocator with per-size free lists over one physical range; it
/// knows every block it handed out, so a free of anything else is refused.
#[derive(Debug, Default)]
pub(crate) struct FramePool {
    next: u64,
    end: u64,
    free: BTreeMap<u32, Vec<u32>>,
    /// Blocks handed out: address -> size.
    live: BTreeMap<u32, u32>,
}

impl FramePool {
    fn alloc(&mut self, size: u32) -> Option<u32> {
        let pa = match self.free.get_mut(&size).and_then(Vec::pop) {
            Some(pa) => pa,
            None => {
                let size64 = u64::from(size);
                let start = self.next.div_ceil(size64) * size64;
                if start + size64 > self.end {
                    return None;
                }
                self.next = start + size64;
                start as u32
            }
        };
        self.live.insert(pa, size);
        Some(pa)
    }

    fn free(&mut self, pa: u32, size: u32) -> Result<(), MemError> {
        if self.live.get(&pa) != Some(&size) {
            return Err(MemError::NotAllocated { addr: pa, size });
        }
        self.live.remove(&pa);
        self.free.entry(size).or_default().push(pa);
        Ok(())
    }
}

impl Machine {
    /// Gives `[base, base + size)` (1 KiB aligned, inside one RAM region) to
    /// the frame pool that [`Machine::alloc_frames`] and [`TableAlloc`] use.
    /// Replaces any previous pool.
    pub fn set_frame_pool(&mut self, base: PhysAddr, size: u32) -> Result<(), ConfigError> {
        let b = base.as_u32();
        if size == 0
            || !b.is_multiple_of(1024)
            || !size.is_multiple_of(1024)
            || !self.mem.is_ram_range(b, size)
        {
            return Err(ConfigError::BadPool { base: b, size });
        }
        self.pool = FramePool {
            next: u64::from(b),
            end: u64::from(b) + u64::from(size),
            free: BTreeMap::new(),
            live: BTreeMap::new(),
        };
        Ok(())
    }

    /// Allocates `size` bytes (a power of two, at least 1 KiB) aligned to
    /// `size` from the frame pool, zeroed in physical memory.
    pub fn alloc_frames(&mut self, size: u32) -> Result<PhysAddr, AllocError> {
        if !size.is_power_of_two() || size < 1024 {
            return Err(AllocError);
        }
        let pa = self.pool.alloc(size).ok_or(AllocError)?;
        // The pool lies in one RAM region (`set_frame_pool` checks it).
        self.mem.zero(pa, size);
        Ok(PhysAddr::new(pa))
    }

    /// Returns frames from [`Machine::alloc_frames`] to the pool.
    ///
    /// # Errors
    /// [`MemError::NotAllocated`] unless `pa` is a block the pool handed out
    /// with this `size` and has not taken back: a second free of a block, or
    /// a free of anything else, would let the pool hand one block to two
    /// owners.
    pub fn free_frames(&mut self, pa: PhysAddr, size: u32) -> Result<(), MemError> {
        self.pool.free(pa.as_u32(), size)
    }
}

// SAFETY: `allocate` hands out `kind.size()`-aligned, `kind.size()`-byte
// blocks of one RAM region, each used by nothing else until deallocated (the
// pool never hands a block out twice). `table_ptr` returns `Some` only when
// the whole table lies inside one region's backing store, a
// `Vec<Cell<u32>>` that is never resized or freed while the machine lives, so
// the pointer is valid for reads and writes of `kind.size()` bytes, aligned to
// 4, and writes through it are interior mutation the model observes.
unsafe impl TableAlloc for Machine {
    fn allocate(&mut self, kind: TableKind) -> Result<PhysAddr, AllocError> {
        self.alloc_frames(kind.size())
    }

    unsafe fn deallocate(&mut self, kind: TableKind, pa: PhysAddr) {
        // A table the pool never handed out is not taken in (the caller broke
        // the contract; refusing keeps the pool's blocks single-owner).
        let _ = self.free_frames(pa, kind.size());
    }

    /// A pointer into the backing store, stable for the machine's life;
    /// `None` unless `pa` is aligned to the table size and the whole table
    /// lies inside one region.
    fn table_ptr(&self, kind: TableKind, pa: PhysAddr) -> Option<NonNull<u32>> {
        let a = pa.as_u32();
        if !a.is_multiple_of(kind.size()) || !self.mem.is_range(a, kind.size()) {
            return None;
        }
        self.mem.word_ptr(a)
    }

    fn table_mva(&self, pa: PhysAddr) -> ModifiedVirtAddr {
        ModifiedVirtAddr::new(pa.as_u32().wrapping_add(self.config.table_mva_offset))
    }
}
