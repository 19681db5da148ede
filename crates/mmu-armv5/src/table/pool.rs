//! [`TablePool`]: a `no_std` table allocator over memory the caller provides.
//!
//! The memory is an array of 16 KiB-aligned [`PoolBlock`]s; the pool hands out
//! 1 KiB coarse tables, 4 KiB fine tables and 16 KiB L1 tables from it, and
//! maps physical to virtual addresses by a fixed offset. A kernel gives it a
//! static array and the array's physical address; host tests give it heap
//! memory and any 16 KiB-aligned "physical" base they like.

use super::alloc::{AllocError, AllocId, TableAlloc, TableKind};
use super::TableError;
use crate::addr::{Align, ModifiedVirtAddr, PhysAddr};
use core::marker::PhantomData;
use core::ptr::NonNull;

const BLOCK: u32 = 16 * 1024;
const UNIT: u32 = 1024;

/// 16 KiB of table memory, aligned to 16 KiB (one L1 table, or sixteen coarse tables).
#[repr(C, align(16384))]
pub struct PoolBlock(pub [u32; 4096]);

impl PoolBlock {
    /// A zeroed block.
    pub const ZERO: PoolBlock = PoolBlock([0; 4096]);
}

/// Table allocator over `BLOCKS` caller-provided [`PoolBlock`]s.
///
/// Each pool has its own [`AllocId`]: tables built with it and the flush
/// tokens of their changes are refused by (never freed into) any other
/// allocator, a pool over the same physical base or over the same memory
/// later included.
pub struct TablePool<'m, const BLOCKS: usize> {
    mem: NonNull<PoolBlock>,
    id: AllocId,
    used: [u16; BLOCKS],
    phys_base: PhysAddr,
    mva_base: ModifiedVirtAddr,
    _mem: PhantomData<&'m mut [PoolBlock; BLOCKS]>,
}

impl<'m, const BLOCKS: usize> TablePool<'m, BLOCKS> {
    /// A pool over `mem`, whose first byte has physical address `phys_base`
    /// and is known to the D-cache as `mva_base`. `phys_base` must be 16 KiB
    /// aligned and the whole pool must fit below 4 GiB.
    ///
    /// # Errors
    /// [`TableError::Misaligned`] for a misaligned base or a pool passing
    /// 4 GiB; [`TableError::NoAllocatorId`] if no [`AllocId`] can be taken
    /// (see [`AllocId::fresh`]: only in user mode with interrupts enabled
    /// on a CPU without atomics).
    pub fn new(
        mem: &'m mut [PoolBlock; BLOCKS],
        phys_base: PhysAddr,
        mva_base: ModifiedVirtAddr,
    ) -> Result<Self, TableError> {
        PhysAddr::new_aligned(phys_base.as_u32(), Align::KIB_16)?;
        let bytes = (BLOCKS as u64) * BLOCK as u64;
        PhysAddr::try_new(phys_base.as_u32() as u64 + bytes)?;
        Ok(TablePool {
            mem: NonNull::from(mem).cast(),
            id: AllocId::fresh().ok_or(TableError::NoAllocatorId)?,
            used: [0; BLOCKS],
            phys_base,
            mva_base,
            _mem: PhantomData,
        })
    }

    /// Where the pool reaches its memory now (for [`TablePool::relocate`]
    /// and for diagnostics).
    #[must_use]
    pub fn memory(&self) -> NonNull<[PoolBlock; BLOCKS]> {
        self.mem.cast()
    }

    /// Moves the pool to a new address of the same memory: the tables it
    /// handed out, its [`AllocId`] and its physical base stay, and from now
    /// on it reaches the memory through `mem` and cleans it by `mva_base`.
    ///
    /// The boot hand-off: a pool built with the MMU off reaches its memory
    /// at the identity-mapped physical address; once the kernel runs at its
    /// own addresses and the identity map is dropped, it moves to the
    /// memory's kernel address (see `fass::kernel_table` for the whole
    /// sequence).
    ///
    /// # Safety
    /// `mem` points at the same physical memory the pool was built over
    /// (the same `BLOCKS` blocks at its physical base), readable and
    /// writable at that address for the rest of `'m`, and reached by
    /// nothing but the pool (as the original borrow was); `mva_base` is
    /// the address the D-cache knows it by.
    pub unsafe fn relocate(
        &mut self,
        mem: NonNull<[PoolBlock; BLOCKS]>,
        mva_base: ModifiedVirtAddr,
    ) {
        self.mem = mem.cast();
        self.mva_base = mva_base;
    }

    /// Number of free 1 KiB units.
    #[must_use]
    pub fn free_units(&self) -> usize {
        self.used.iter().map(|u| u.count_zeros() as usize).sum()
    }

    /// (block, first unit) of a table at `pa`, if inside the pool and aligned.
    fn locate(&self, kind: TableKind, pa: PhysAddr) -> Option<(usize, u32)> {
        let off = pa.as_u32().checked_sub(self.phys_base.as_u32())?;
        if off % kind.size() != 0
            || (off as u64 + kind.size() as u64) > BLOCKS as u64 * BLOCK as u64
        {
            return None;
        }
        Some(((off / BLOCK) as usize, (off % BLOCK) / UNIT))
    }
}

fn mask(kind: TableKind, unit: u32) -> u16 {
    match kind {
        TableKind::L1 => 0xFFFF,
        TableKind::Fine => 0xF << unit,
        TableKind::Coarse => 1 << unit,
    }
}

// SAFETY: allocations are disjoint sub-ranges of the borrowed blocks (tracked
// by the `used` bitmap), aligned to their size because blocks are 16 KiB
// aligned and units are placed at multiples of the table size; `table_ptr`
// returns pointers only inside the borrowed memory, which outlives the pool.
unsafe impl<const BLOCKS: usize> TableAlloc for TablePool<'_, BLOCKS> {
    fn allocate(&mut self, kind: TableKind) -> Result<PhysAddr, AllocError> {
        let step = kind.size() / UNIT;
        for (b, used) in self.used.iter_mut().enumerate() {
            let mut unit = 0;
            while unit < 16 {
                let m = mask(kind, unit);
                if *used & m == 0 {
                    *used |= m;
                    let off = b as u32 * BLOCK + unit * UNIT;
                    return Ok(PhysAddr::new(self.phys_base.as_u32() + off));
                }
                unit += step;
            }
        }
        Err(AllocError)
    }

    unsafe fn deallocate(&mut self, kind: TableKind, pa: PhysAddr) {
        if let Some((b, unit)) = self.locate(kind, pa) {
            self.used[b] &= !mask(kind, unit);
        }
    }

    fn table_ptr(&self, kind: TableKind, pa: PhysAddr) -> Option<NonNull<u32>> {
        let (b, unit) = self.locate(kind, pa)?;
        // SAFETY: `b < BLOCKS` and `unit < 16` by `locate`, so the offset stays
        // inside the borrowed array.
        let p = unsafe {
            self.mem
                .as_ptr()
                .add(b)
                .cast::<u32>()
                .add(unit as usize * 256)
        };
        NonNull::new(p)
    }

    fn table_mva(&self, pa: PhysAddr) -> ModifiedVirtAddr {
        let off = pa.as_u32().wrapping_sub(self.phys_base.as_u32());
        ModifiedVirtAddr::new(self.mva_base.as_u32().wrapping_add(off))
    }

    fn alloc_id(&self) -> Option<AllocId> {
        Some(self.id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::boxed::Box;

    #[test]
    fn allocates_aligned_disjoint_tables_and_reuses_freed_ones() {
        let mut mem = Box::new([PoolBlock::ZERO, PoolBlock::ZERO]);
        let mut p = TablePool::new(
            &mut mem,
            PhysAddr::new(0x0400_0000),
            ModifiedVirtAddr::new(0xC400_0000),
        )
        .unwrap();
        assert_eq!(p.free_units(), 32);
        let l1 = p.allocate(TableKind::L1).unwrap();
        assert_eq!(l1, PhysAddr::new(0x0400_0000));
        let c = p.allocate(TableKind::Coarse).unwrap();
        assert_eq!(c, PhysAddr::new(0x0400_4000));
        let f = p.allocate(TableKind::Fine).unwrap();
        assert_eq!(
            f,
            PhysAddr::new(0x0400_5000),
            "fine tables are 4 KiB aligned"
        );
        assert_eq!(p.free_units(), 32 - 16 - 1 - 4);
        assert!(p.allocate(TableKind::L1).is_err(), "no whole block left");
        assert!(p
            .table_ptr(TableKind::Coarse, PhysAddr::new(0x0400_7C00))
            .is_some());
        assert!(
            p.table_ptr(TableKind::Coarse, PhysAddr::new(0x0400_8000))
                .is_none(),
            "past the end"
        );
        assert!(p
            .table_ptr(TableKind::Coarse, PhysAddr::new(0x0400_8004))
            .is_none());
        assert!(p
            .table_ptr(TableKind::Coarse, PhysAddr::new(0x0300_0000))
            .is_none());
        assert!(
            p.table_ptr(TableKind::L1, PhysAddr::new(0x0400_2000))
                .is_none(),
            "misaligned L1"
        );
        assert_eq!(p.table_mva(c), ModifiedVirtAddr::new(0xC400_4000));
        // SAFETY: nothing points at these tables.
        unsafe { p.deallocate(TableKind::Fine, f) };
        // SAFETY: as above.
        unsafe { p.deallocate(TableKind::Coarse, c) };
        assert_eq!(
            p.allocate(TableKind::Fine).unwrap(),
            PhysAddr::new(0x0400_4000)
        );
    }

    /// Issue 26, item 5: a pool moved to another address of its memory
    /// keeps its tables, its id and its physical addresses.
    #[test]
    fn a_relocated_pool_keeps_its_tables() {
        let mut mem = Box::new([PoolBlock::ZERO, PoolBlock::ZERO]);
        let mut p = TablePool::new(
            &mut mem,
            PhysAddr::new(0x0400_0000),
            ModifiedVirtAddr::new(0x0400_0000),
        )
        .unwrap();
        let id = p.alloc_id();
        let l1 = p.allocate(TableKind::L1).unwrap();
        let before = p.table_ptr(TableKind::L1, l1);
        let at = p.memory();
        // SAFETY: the same memory (a host has one address for it).
        unsafe { p.relocate(at, ModifiedVirtAddr::new(0xC400_0000)) };
        assert_eq!(p.alloc_id(), id);
        assert_eq!(p.table_ptr(TableKind::L1, l1), before);
        assert_eq!(p.table_mva(l1), ModifiedVirtAddr::new(0xC400_0000));
        assert_eq!(p.free_units(), 16);
        assert_eq!(
            p.allocate(TableKind::Coarse).unwrap(),
            PhysAddr::new(0x0400_4000)
        );
    }

    #[test]
    fn rejects_misaligned_base() {
        let mut mem = Box::new([PoolBlock::ZERO]);
        assert!(TablePool::new(&mut mem, PhysAddr::new(0x1000), ModifiedVirtAddr::ZERO).is_err());
    }
}
