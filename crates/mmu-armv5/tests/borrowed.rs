//! The traits hold for `&mut T` and forward every method to the borrowed
//! value, provided methods included: a backend's overrides are kept, and
//! what is done through the reference is done to the owner.

use mmu_armv5::maint::{Arm926, CacheMaintenance, LineOp, LineRange, RangeMaintenance, XScale};
use mmu_armv5::regs::{Cp15, Cp15Event, Cp15Op, Cp15Reg, MockCp15};
use mmu_armv5::table::{PageTable, TableAlloc, TableKind, TablePool};
use mmu_armv5::{ModifiedVirtAddr as Mva, PhysAddr};

mod common;
use common::{mem, BASE};

/// A CP15 that does a whole line range in one call, as `HwCp15` does with
/// its unrolled loop, and counts both kinds of call.
#[derive(Default)]
struct WholeRange {
    ops: u32,
    ranges: u32,
}

impl Cp15 for WholeRange {
    fn read(&self, _: Cp15Reg) -> u32 {
        0
    }
    unsafe fn write(&mut self, _: Cp15Reg, _: u32) {}
    unsafe fn op(&mut self, _: Cp15Op, _: u32) {
        self.ops += 1;
    }
    unsafe fn op_lines(&mut self, _: LineOp, _: LineRange) {
        self.ranges += 1;
    }
    fn test_clean_invalidate_dcache(&mut self) -> bool {
        true
    }
    fn test_clean_dcache(&mut self) -> bool {
        true
    }
}

fn lines(n: u32) -> LineRange {
    LineRange::new(Mva::new(0x8000), 32 * n).unwrap()
}

#[test]
fn a_borrowed_cp15_keeps_the_backends_range_loop() {
    let mut cpu = WholeRange::default();
    let mut lent = &mut cpu;
    // SAFETY: a counting backend, no hardware.
    unsafe { Cp15::op_lines(&mut lent, LineOp::CleanD, lines(8)) };
    assert_eq!(
        (cpu.ranges, cpu.ops),
        (1, 0),
        "one range call, not eight line ops"
    );
}

#[test]
fn maintenance_on_a_borrowed_mock_is_logged_by_its_owner() {
    let mut mock = MockCp15::arm926();
    {
        let mut m = Arm926::new(&mut mock);
        m.clean_dcache_line(Mva::new(0x1234));
        m.invalidate_tlb_entry(Mva::new(0x5000));
    }
    assert_eq!(
        mock.events(),
        &[
            Cp15Event::Op(Cp15Op::CleanDCacheLine, 0x1220),
            Cp15Event::Op(Cp15Op::InvalidateTlbEntry, 0x5000),
        ]
    );
}

/// Maintenance that answers a whole-cache flush and a range clean itself.
#[derive(Default)]
struct Counting {
    lines: u32,
    ranges: u32,
    flushes: u32,
}

impl CacheMaintenance for Counting {
    const DCACHE_LINE: u32 = 32;
    fn clean_invalidate_dcache(&mut self) {}
    fn invalidate_icache(&mut self) {}
    fn clean_dcache_line(&mut self, _: Mva) {
        self.lines += 1;
    }
    fn clean_invalidate_dcache_line(&mut self, _: Mva) {}
    unsafe fn invalidate_dcache_line(&mut self, _: Mva) {}
    fn invalidate_icache_line(&mut self, _: Mva) {}
    fn drain_write_buffer(&mut self) {}
    fn invalidate_tlb(&mut self) {}
    fn invalidate_tlb_entry(&mut self, _: Mva) {}
    fn clean_dcache_range(&mut self, _: Mva, _: u32) {
        self.ranges += 1;
    }
    fn flush_all(&mut self) {
        self.flushes += 1;
    }
}

impl RangeMaintenance for Counting {
    fn clean_dcache_lines(&mut self, _: LineRange) {
        self.ranges += 1;
    }
}

#[test]
fn borrowed_maintenance_keeps_the_overridden_provided_methods() {
    let mut c = Counting::default();
    {
        let mut lent = &mut c;
        CacheMaintenance::clean_dcache_range(&mut lent, Mva::new(0x1000), 256);
        CacheMaintenance::flush_all(&mut lent);
        RangeMaintenance::clean_dcache_lines(&mut lent, lines(4));
        assert_eq!(<&mut Counting as CacheMaintenance>::DCACHE_LINE, 32);
    }
    assert_eq!((c.ranges, c.flushes, c.lines), (2, 1, 0));
}

#[test]
fn a_borrowed_xscale_range_is_issued_by_the_owner() {
    let region = mmu_armv5::maint::CleanRegion::new(Mva::new(0xE000_0000), 0x2000, 32).unwrap();
    // SAFETY: mock backend; nothing is mapped or touched.
    let mut x = unsafe { XScale::new(MockCp15::pxa255(), region) };
    {
        let mut lent = &mut x;
        RangeMaintenance::clean_dcache_lines(&mut lent, lines(2));
    }
    assert_eq!(
        x.into_inner().events(),
        &[
            Cp15Event::Op(Cp15Op::CleanDCacheLine, 0x8000),
            Cp15Event::Op(Cp15Op::CleanDCacheLine, 0x8020),
        ]
    );
}

#[test]
fn tables_built_through_a_borrowed_pool_belong_to_the_pool() {
    let mut m = mem::<4>();
    let mut pool = TablePool::new(&mut m, PhysAddr::new(BASE), Mva::new(0xC400_0000)).unwrap();
    let before = pool.free_units();
    let root = {
        let mut lent = &mut pool;
        let t = PageTable::new(&mut lent).unwrap();
        assert!(TableAlloc::table_ptr(&lent, TableKind::L1, t.root()).is_some());
        t.root()
    };
    assert_eq!(pool.free_units(), before - 16, "a 16 KiB first-level table");
    assert!(pool.table_ptr(TableKind::L1, root).is_some());
    {
        let mut lent = &mut pool;
        // SAFETY: the table just allocated, never installed or linked.
        unsafe {
            <&mut TablePool<'_, 4> as TableAlloc>::deallocate(&mut lent, TableKind::L1, root)
        };
    }
    assert_eq!(pool.free_units(), before);
}
