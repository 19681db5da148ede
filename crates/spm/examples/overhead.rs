//! Memory overhead of the frame table for 128 MiB RAM + 32 KiB ITCM + 32 KiB
//! DTCM, and the cost of one 4 KiB exchange measured on a small host model.
//!
//! Run: `cargo run -p spm --example overhead`

use mmu_armv5::maint::CacheMaintenance;
use mmu_armv5::regs::{Cp15, Cp15Op, Cp15Reg};
use mmu_armv5::{ModifiedVirtAddr, PhysAddr, VirtAddr};
use spm::exchange::DEFAULT_CHUNK;
use spm::{
    AddressSpace, Exchange, ExchangeRequest, FrameDesc, FrameState, FrameTable, InitialUse,
    InterruptControl, Location, Mapping, Mappings, PageSize, PhysMemory, Region, Rights,
    SectionSummary, SpaceId, Translation,
};
use std::cell::Cell;
use std::collections::HashMap;
use std::rc::Rc;

/// The model: byte memory and an operation counter (one per cache/TLB
/// operation, per word copied, per mapping change).
#[derive(Default)]
struct Model {
    mem: HashMap<u32, u8>,
    ops: Rc<Cell<u32>>,
    ttbr: u32,
}

impl Model {
    fn tick(&self, n: u32) {
        self.ops.set(self.ops.get() + n);
    }
}

impl PhysMemory for Model {
    fn copy(&mut self, dst: PhysAddr, src: PhysAddr, len: u32) {
        for i in 0..len {
            let v = self.mem.get(&(src.as_u32() + i)).copied().unwrap_or(0);
            self.mem.insert(dst.as_u32() + i, v);
        }
        self.tick(len / 4);
    }
    fn zero(&mut self, dst: PhysAddr, len: u32) {
        for i in 0..len {
            self.mem.insert(dst.as_u32() + i, 0);
        }
        self.tick(len / 4);
    }
}

impl CacheMaintenance for Model {
    const DCACHE_LINE: u32 = 32;
    fn clean_invalidate_dcache(&mut self) {
        self.tick(1);
    }
    fn invalidate_icache(&mut self) {
        self.tick(1);
    }
    fn clean_dcache_line(&mut self, _: ModifiedVirtAddr) {
        self.tick(1);
    }
    fn clean_invalidate_dcache_line(&mut self, _: ModifiedVirtAddr) {
        self.tick(1);
    }
    unsafe fn invalidate_dcache_line(&mut self, _: ModifiedVirtAddr) {
        self.tick(1);
    }
    fn invalidate_icache_line(&mut self, _: ModifiedVirtAddr) {
        self.tick(1);
    }
    fn drain_write_buffer(&mut self) {
        self.tick(1);
    }
    fn invalidate_tlb(&mut self) {
        self.tick(1);
    }
    fn invalidate_tlb_entry(&mut self, _: ModifiedVirtAddr) {
        self.tick(1);
    }
}

impl Cp15 for Model {
    fn read(&self, reg: Cp15Reg) -> u32 {
        if reg == Cp15Reg::Ttbr {
            self.ttbr
        } else {
            0
        }
    }
    unsafe fn write(&mut self, reg: Cp15Reg, value: u32) {
        if reg == Cp15Reg::Ttbr {
            self.ttbr = value;
        }
    }
    unsafe fn op(&mut self, _: Cp15Op, _: u32) {}
    fn test_clean_invalidate_dcache(&mut self) -> bool {
        true
    }
    fn test_clean_dcache(&mut self) -> bool {
        true
    }
}

/// Small-page mappings: (space, va, pa, writable, saved write).
#[derive(Default)]
struct Maps(Vec<(AddressSpace, u32, u32, bool, bool)>);

impl Mappings for Maps {
    fn translate(&self, space: AddressSpace, va: VirtAddr) -> Option<Translation> {
        self.0
            .iter()
            .find(|e| e.0 == space && e.1 == va.as_u32() & !0xfff)
            .map(|e| Translation {
                page: PhysAddr::new(e.2),
                size: PageSize::Small,
                writable: e.3,
            })
    }
    fn for_each_mapping(&self, page: PhysAddr, _: PageSize, f: &mut dyn FnMut(&Mapping)) {
        for e in self.0.iter().filter(|e| e.2 == page.as_u32()) {
            f(&Mapping {
                space: e.0,
                mva: ModifiedVirtAddr::new(e.1),
                writable: e.3,
            });
        }
    }
    fn write_protect(&mut self, page: PhysAddr, _: PageSize) {
        for e in self.0.iter_mut().filter(|e| e.2 == page.as_u32()) {
            e.4 = e.3;
            e.3 = false;
        }
    }
    fn restore_write(&mut self, page: PhysAddr, _: PageSize) {
        for e in self.0.iter_mut().filter(|e| e.2 == page.as_u32()) {
            e.3 |= e.4;
        }
    }
    fn swap(&mut self, a: PhysAddr, b: PhysAddr, _: PageSize) {
        for e in self.0.iter_mut() {
            if e.2 == a.as_u32() {
                e.2 = b.as_u32();
            } else if e.2 == b.as_u32() {
                e.2 = a.as_u32();
            }
        }
    }
    fn move_second_level(&mut self, _: PhysAddr, _: PhysAddr) {}
    fn move_first_level(&mut self, _: PhysAddr, _: PhysAddr) {}
}

/// Interrupt control that measures masked windows in model operations.
struct Irq {
    ops: Rc<Cell<u32>>,
    start: u32,
    windows: Vec<u32>,
}

impl InterruptControl for Irq {
    fn disable(&mut self) -> bool {
        self.start = self.ops.get();
        true
    }
    fn restore(&mut self, _: bool) {
        self.windows.push(self.ops.get() - self.start);
    }
}

fn main() {
    let ram = Region::new(
        PhysAddr::new(0),
        128 << 20,
        Location::Ram,
        InitialUse::Resource,
    )
    .expect("RAM region");
    let itcm = Region::new(
        PhysAddr::new(0xfffe_0000),
        32 << 10,
        Location::Itcm,
        InitialUse::Resource,
    )
    .expect("ITCM region");
    let dtcm = Region::new(
        PhysAddr::new(0xfffe_8000),
        32 << 10,
        Location::Dtcm,
        InitialUse::Resource,
    )
    .expect("DTCM region");
    let regions = [ram, itcm, dtcm];
    let mut frames = vec![FrameDesc::default(); FrameTable::<3>::frames_needed(&regions)];
    let mut sections = vec![SectionSummary::default(); FrameTable::<3>::sections_needed(&regions)];
    let mut table = FrameTable::<3>::new(&regions, &mut frames, &mut sections).expect("table");

    let n = table.frame_count();
    let bytes = table.overhead_bytes();
    println!("Frame table for 128 MiB RAM + 32 KiB ITCM + 32 KiB DTCM");
    println!("  frames described:        {n}");
    println!(
        "  per frame:               {} bytes",
        core::mem::size_of::<FrameDesc>()
    );
    println!(
        "  per 1 MiB summary:       {} bytes ({} summaries)",
        core::mem::size_of::<SectionSummary>(),
        FrameTable::<3>::sections_needed(&regions)
    );
    println!(
        "  total:                   {bytes} bytes ({:.3} bytes/frame, {:.4} % of memory)",
        bytes as f64 / n as f64,
        100.0 * bytes as f64 / (n as f64 * 4096.0)
    );
    println!("  Fiasco thesis (36 B/frame): {} bytes", 36 * n);

    // One writable 4 KiB user data page into DTCM.
    let me = SpaceId::new(1).expect("space");
    let space = AddressSpace::User(me);
    table
        .init_range(PhysAddr::new(0x5000), 0x1000, FrameState::User(me), true)
        .expect("user page");
    let mut maps = Maps::default();
    maps.0.push((space, 0x8000, 0x5000, true, false));
    maps.0.push((space, 0x10_0000, 0xfffe_8000, false, false));
    let mut model = Model::default();
    let req = ExchangeRequest {
        caller: space,
        target_space: space,
        target: VirtAddr::new(0x8000),
        resource_space: space,
        resource: VirtAddr::new(0x10_0000),
        size: PageSize::Small,
        count: 1,
        rights: Rights::RW,
    };
    let mut x = Exchange::begin(&mut table, &maps, req, DEFAULT_CHUNK).expect("begin");
    let mut irq = Irq {
        ops: model.ops.clone(),
        start: 0,
        windows: Vec::new(),
    };
    x.run(&mut table, &mut maps, &mut model, &mut irq)
        .expect("exchange");
    let s = x.stats();
    println!();
    println!("4 KiB exchange of a writable page into DTCM, chunk {DEFAULT_CHUNK} bytes");
    println!("  (FROM THE HOST MODEL in this example: operations counted = cache/TLB ops,");
    println!("   32-bit words copied, mapping changes; not cycles on hardware)");
    println!("  steps:                          {}", s.steps);
    println!("  interrupts-masked windows:      {}", s.masked_windows);
    println!(
        "  longest masked window:          {} ops (exchange's own count)",
        s.longest_masked_ops
    );
    println!(
        "  longest masked window:          {} ops (measured by the model)",
        irq.windows.iter().max().copied().unwrap_or(0)
    );
    println!(
        "  total:                          {} ops, {} bytes copied",
        s.total_ops, s.bytes_copied
    );
    println!(
        "  whole-page copy under cli (thesis): >= {} ops in one window",
        4096 / 4
    );
}
