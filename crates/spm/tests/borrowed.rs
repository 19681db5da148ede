//! `spm`'s traits hold for `&mut T` and forward every method to the
//! borrowed value, provided methods included.

use mmu_armv5::maint::CacheMaintenance;
use mmu_armv5::size::PageSizeKind;
use mmu_armv5::{ModifiedVirtAddr as Mva, PhysAddr, VirtAddr};
use spm::{
    AddressSpace, InterruptControl, LineMaintenance, Mappings, PhysMemory, ReverseMapping,
    Translation,
};

/// Records every call by name.
#[derive(Default)]
struct Log(Vec<&'static str>);

impl PhysMemory for Log {
    fn copy(&mut self, _: PhysAddr, _: PhysAddr, _: u32) {
        self.0.push("copy");
    }
    fn zero(&mut self, _: PhysAddr, _: u32) {
        self.0.push("zero");
    }
}

impl InterruptControl for Log {
    fn disable(&mut self) -> bool {
        self.0.push("disable");
        true
    }
    fn restore(&mut self, _: bool) {
        self.0.push("restore");
    }
}

impl CacheMaintenance for Log {
    const DCACHE_LINE: u32 = 32;
    fn clean_invalidate_dcache(&mut self) {}
    fn invalidate_icache(&mut self) {}
    fn clean_dcache_line(&mut self, _: Mva) {
        self.0.push("line");
    }
    fn clean_invalidate_dcache_line(&mut self, _: Mva) {
        self.0.push("line");
    }
    unsafe fn invalidate_dcache_line(&mut self, _: Mva) {
        self.0.push("line");
    }
    fn invalidate_icache_line(&mut self, _: Mva) {
        self.0.push("line");
    }
    fn drain_write_buffer(&mut self) {}
    fn invalidate_tlb(&mut self) {}
    fn invalidate_tlb_entry(&mut self, _: Mva) {}
}

/// Ranges answered whole, as a CPU with a hardware range loop would.
impl LineMaintenance for Log {
    fn clean_dcache_lines(&mut self, _: Mva, _: u32) {
        self.0.push("clean range");
    }
    unsafe fn invalidate_dcache_lines(&mut self, _: Mva, _: u32) {
        self.0.push("invalidate range");
    }
    fn flush_lines(&mut self, _: Mva, _: u32) {
        self.0.push("flush range");
    }
}

impl Mappings for Log {
    fn translate(&self, _: AddressSpace, va: VirtAddr) -> Option<Translation> {
        Some(Translation {
            page: PhysAddr::new(va.as_u32() & !0xFFF),
            size: PageSizeKind::Small,
            writable: true,
        })
    }
    fn generation(&self) -> Option<u64> {
        Some(7)
    }
    fn for_each_mapping(&self, _: PhysAddr, _: PageSizeKind, f: &mut dyn FnMut(&ReverseMapping)) {
        f(&ReverseMapping {
            space: AddressSpace::Kernel,
            mva: Mva::new(0x1000),
            writable: true,
            cached: true,
        });
    }
    fn collect_mappings(&self, _: PhysAddr, _: PageSizeKind, _: &mut [ReverseMapping]) -> usize {
        99
    }
    fn write_protect(&mut self, _: PhysAddr, _: PageSizeKind) {
        self.0.push("write_protect");
    }
    fn restore_write(&mut self, _: PhysAddr, _: PageSizeKind) {
        self.0.push("restore_write");
    }
    fn swap(&mut self, _: PhysAddr, _: PhysAddr, _: PageSizeKind) {
        self.0.push("swap");
    }
    fn swapped(&mut self, _: PhysAddr, _: PhysAddr, _: PageSizeKind) {
        self.0.push("swapped");
    }
    fn move_second_level(&mut self, _: PhysAddr, _: PhysAddr) {
        self.0.push("move_second_level");
    }
    fn move_first_level(&mut self, _: PhysAddr, _: PhysAddr) {
        self.0.push("move_first_level");
    }
}

fn pa(a: u32) -> PhysAddr {
    PhysAddr::new(a)
}

#[test]
fn memory_and_interrupts_lent_by_reference_reach_the_owner() {
    let mut log = Log::default();
    {
        let mut lent = &mut log;
        PhysMemory::copy(&mut lent, pa(0x1000), pa(0x2000), 64);
        PhysMemory::zero(&mut lent, pa(0x1000), 64);
        let was = InterruptControl::disable(&mut lent);
        InterruptControl::restore(&mut lent, was);
    }
    assert_eq!(log.0, ["copy", "zero", "disable", "restore"]);
}

#[test]
fn lent_line_maintenance_keeps_whole_range_overrides() {
    let mut log = Log::default();
    {
        let mut lent = &mut log;
        LineMaintenance::clean_dcache_lines(&mut lent, Mva::new(0x8000), 256);
        // SAFETY: a logging stand-in, no cache.
        unsafe { LineMaintenance::invalidate_dcache_lines(&mut lent, Mva::new(0x8000), 256) };
        LineMaintenance::flush_lines(&mut lent, Mva::new(0x8000), 256);
    }
    assert_eq!(
        log.0,
        ["clean range", "invalidate range", "flush range"],
        "one call per range, not one per line"
    );
}

#[test]
fn lent_mappings_answer_and_edit_as_the_owner() {
    let mut log = Log::default();
    {
        let mut lent = &mut log;
        let t = Mappings::translate(&lent, AddressSpace::Kernel, VirtAddr::new(0x3456)).unwrap();
        assert_eq!(t.page, pa(0x3000));
        assert_eq!(Mappings::generation(&lent), Some(7));
        let mut seen = 0;
        Mappings::for_each_mapping(&lent, pa(0x3000), PageSizeKind::Small, &mut |m| {
            assert_eq!(m.mva, Mva::new(0x1000));
            seen += 1;
        });
        assert_eq!(seen, 1);
        let mut out = [];
        let n = Mappings::collect_mappings(&lent, pa(0x3000), PageSizeKind::Small, &mut out);
        assert_eq!(n, 99, "the owner's own collect_mappings, not the default");
        Mappings::write_protect(&mut lent, pa(0x3000), PageSizeKind::Small);
        Mappings::swap(&mut lent, pa(0x3000), pa(0x4000), PageSizeKind::Small);
        Mappings::swapped(&mut lent, pa(0x3000), pa(0x4000), PageSizeKind::Small);
        Mappings::restore_write(&mut lent, pa(0x3000), PageSizeKind::Small);
        Mappings::move_second_level(&mut lent, pa(0x5000), pa(0x6000));
        Mappings::move_first_level(&mut lent, pa(0x8000), pa(0xC000));
    }
    assert_eq!(
        log.0,
        [
            "write_protect",
            "swap",
            "swapped",
            "restore_write",
            "move_second_level",
            "move_first_level"
        ]
    );
}
