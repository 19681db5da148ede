//! A table allocator that checks every free (no double free, no free of
//! memory it never handed out) and logs allocations and frees in one
//! sequence with the cache and TLB maintenance, so a test can check that a
//! table is freed only after the maintenance that makes it unreachable.
#![allow(dead_code)]

use mmu_armv5::maint::CacheMaintenance;
use mmu_armv5::table::{AllocError, PoolBlock, TableAlloc, TableKind, TablePool};
use mmu_armv5::{ModifiedVirtAddr, PhysAddr};
use std::cell::RefCell;
use std::collections::BTreeSet;
use std::ptr::NonNull;
use std::rc::Rc;

/// Physical base of the ledger's pool.
pub const BASE: u32 = 0x0400_0000;

/// One allocator or maintenance event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// A table was allocated at this address.
    Alloc(PhysAddr),
    /// The table at this address was freed.
    Free(PhysAddr),
    /// The D-cache line at this MVA was cleaned.
    Clean(u32),
    /// The whole D-cache was cleaned and invalidated.
    CleanAll,
    /// The write buffer was drained.
    Drain,
    /// The TLB entry for this MVA was invalidated.
    TlbEntry(u32),
    /// The whole TLB was invalidated.
    TlbAll,
}

#[derive(Default)]
struct State {
    live: BTreeSet<u32>,
    log: Vec<Event>,
}

/// Shared record of what the allocator and the maintenance did.
#[derive(Clone, Default)]
pub struct Ledger(Rc<RefCell<State>>);

/// Zeroed heap memory for a pool of `N` blocks (`N` > 0), allocated in one
/// step: building it block by block copies 16 KiB per block, which takes
/// seconds under Miri.
pub fn mem<const N: usize>() -> Box<[PoolBlock; N]> {
    let layout = std::alloc::Layout::new::<[PoolBlock; N]>();
    assert!(layout.size() > 0, "a pool needs at least one block");
    // SAFETY: the layout has a non-zero size (checked above).
    let p = unsafe { std::alloc::alloc_zeroed(layout) }.cast::<[PoolBlock; N]>();
    if p.is_null() {
        std::alloc::handle_alloc_error(layout);
    }
    // SAFETY: `p` is a fresh allocation of `layout`, the layout of the
    // array; all-zero bytes are a valid `PoolBlock` (plain `u32` words); the
    // box takes ownership and frees it with the same layout.
    unsafe { Box::from_raw(p) }
}

impl Ledger {
    /// An allocator over `mem` that reports to this ledger.
    pub fn alloc<'m, const N: usize>(&self, mem: &'m mut [PoolBlock; N]) -> LedgerAlloc<'m, N> {
        LedgerAlloc {
            pool: TablePool::new(mem, PhysAddr::new(BASE), ModifiedVirtAddr::new(0xC400_0000))
                .unwrap(),
            ledger: self.clone(),
        }
    }

    /// Maintenance that reports to this ledger.
    pub fn maint(&self) -> LedgerMaint {
        LedgerMaint(self.clone())
    }

    /// Whether the table at `pa` is allocated.
    pub fn is_live(&self, pa: PhysAddr) -> bool {
        self.0.borrow().live.contains(&pa.as_u32())
    }

    /// Number of allocated tables.
    pub fn live(&self) -> usize {
        self.0.borrow().live.len()
    }

    /// Every event so far.
    pub fn log(&self) -> Vec<Event> {
        self.0.borrow().log.clone()
    }

    /// Forgets the events so far.
    pub fn clear_log(&self) {
        self.0.borrow_mut().log.clear();
    }

    fn push(&self, e: Event) {
        self.0.borrow_mut().log.push(e);
    }
}

/// A [`TablePool`] whose allocations and frees the ledger checks.
pub struct LedgerAlloc<'m, const N: usize> {
    pool: TablePool<'m, N>,
    ledger: Ledger,
}

// SAFETY: forwards to `TablePool`, which upholds the contract; the ledger
// only records.
unsafe impl<const N: usize> TableAlloc for LedgerAlloc<'_, N> {
    fn allocate(&mut self, kind: TableKind) -> Result<PhysAddr, AllocError> {
        let pa = self.pool.allocate(kind)?;
        assert!(self.ledger.0.borrow_mut().live.insert(pa.as_u32()));
        self.ledger.push(Event::Alloc(pa));
        Ok(pa)
    }

    unsafe fn deallocate(&mut self, kind: TableKind, pa: PhysAddr) {
        assert!(
            self.ledger.0.borrow_mut().live.remove(&pa.as_u32()),
            "double free, or a free of memory never allocated: {pa}"
        );
        self.ledger.push(Event::Free(pa));
        // SAFETY: the caller's contract, forwarded.
        unsafe { self.pool.deallocate(kind, pa) };
    }

    fn table_ptr(&self, kind: TableKind, pa: PhysAddr) -> Option<NonNull<u32>> {
        self.pool.table_ptr(kind, pa)
    }

    fn table_mva(&self, pa: PhysAddr) -> ModifiedVirtAddr {
        self.pool.table_mva(pa)
    }

    fn alloc_id(&self) -> Option<mmu_armv5::table::AllocId> {
        self.pool.alloc_id()
    }
}

/// Maintenance that only records what it is asked to do.
pub struct LedgerMaint(Ledger);

// SAFETY: a host test: no ARMv5 MMU walks these tables. The ledger checks
// that every table is freed only after the maintenance recorded here.
unsafe impl mmu_armv5::maint::TrustedMaintenance for LedgerMaint {}

impl CacheMaintenance for LedgerMaint {
    const DCACHE_LINE: u32 = 32;

    fn clean_invalidate_dcache(&mut self) {
        self.0.push(Event::CleanAll);
    }
    fn invalidate_icache(&mut self) {}
    fn clean_dcache_line(&mut self, mva: ModifiedVirtAddr) {
        self.0.push(Event::Clean(mva.as_u32() & !31));
    }
    fn clean_invalidate_dcache_line(&mut self, mva: ModifiedVirtAddr) {
        self.0.push(Event::Clean(mva.as_u32() & !31));
    }
    unsafe fn invalidate_dcache_line(&mut self, _mva: ModifiedVirtAddr) {}
    fn invalidate_icache_line(&mut self, _mva: ModifiedVirtAddr) {}
    fn drain_write_buffer(&mut self) {
        self.0.push(Event::Drain);
    }
    fn invalidate_tlb(&mut self) {
        self.0.push(Event::TlbAll);
    }
    fn invalidate_tlb_entry(&mut self, mva: ModifiedVirtAddr) {
        self.0.push(Event::TlbEntry(mva.as_u32()));
    }
}
