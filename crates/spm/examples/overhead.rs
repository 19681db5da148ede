//! Memory overhead of the frame table for 128 MiB RAM + 32 KiB ITCM + 32 KiB
//! DTCM, and the cost of one 4 KiB exchange into DTCM measured on the
//! `armv5-sim` model (ARM926EJ-S preset) for a range of chunk sizes.
//!
//! Run: `cargo run -p spm --example overhead`
//!
//! Every cost figure is MODELLED: cycles are the model's cost model applied
//! to the events it counted (accesses, line fills, write-backs, maintenance
//! operations, TLB walks), not a measurement of a CPU. The project's goal
//! for the real kernel (total <= 2,500 instructions, longest
//! interrupts-off window <= 300 instructions) is to be measured under QEMU
//! in a later issue; these figures only compare chunk sizes.

#[path = "../tests/common/mod.rs"]
mod common;

use armv5_sim::presets;
use common::{Kernel, Storage, DTCM};
use mmu_armv5::size::Frame;
use mmu_armv5::size::PageSizeKind;
use mmu_armv5::{PhysAddr, VirtAddr};
use spm::{
    AddressSpace, Exchange, ExchangeRequest, FrameDesc, FrameState, FrameTable, InitialUse,
    Location, PhysRegion, Rights, SectionSummary, SpaceId,
};

/// One exchange's figures.
struct Row {
    chunk: u32,
    steps: u32,
    windows: usize,
    total_cycles: u64,
    longest_cycles: u64,
    total_ops: u32,
    longest_ops: u32,
    accesses: u64,
    maintenance: u64,
    table_words: u64,
}

/// Exchanges one writable 4 KiB user page (every line dirty in the D-cache)
/// into DTCM with `chunk`-byte steps on a fresh model.
fn measure(chunk: u32, writable: bool) -> Row {
    let mut st = Storage::new();
    let mut k = Kernel::new(&mut st);
    let me = SpaceId(1);
    let space = AddressSpace::User(me);
    k.table
        .init_range(
            Frame::from_start(PhysAddr::new(0x5000)).unwrap(),
            FrameState::User(me),
            true,
        )
        .expect("user page");
    k.maps.map(space, 0x8000, 0x5000, PageSizeKind::Small, true);
    k.maps
        .map(space, 0x10_0000, DTCM, PageSizeKind::Small, false);
    // The task has used its page: every line cached and dirty.
    for i in (0..0x1000).step_by(32) {
        k.load(space, 0x8000 + i).expect("load");
    }
    for i in (0..0x1000).step_by(4) {
        k.store(space, 0x8000 + i, i as u8).expect("store");
    }
    if !writable {
        // Read-only variant: clean the page and drop write access first.
        k.m.borrow_mut().clean_invalidate_dcache_all();
        k.maps.unmap(space, 0x8000, PageSizeKind::Small);
        k.maps
            .map(space, 0x8000, 0x5000, PageSizeKind::Small, false);
    }
    let req = ExchangeRequest {
        caller: space,
        target_space: space,
        target: VirtAddr::new(0x8000),
        resource_space: space,
        resource: VirtAddr::new(0x10_0000),
        size: PageSizeKind::Small,
        count: 1,
        rights: Rights::RW,
    };
    let before = k.counters();
    let words_before = k.maps.table_words;
    let mut x = Exchange::begin(&mut k.table, &k.maps, req, chunk).expect("begin");
    // SAFETY: the model's frame table, mappings and machine are one
    // consistent (simulated) system: nothing the exchange writes is memory
    // of this program.
    unsafe { x.run(&mut k.table, &mut k.maps, &mut k.hw, &mut k.irq) }.expect("exchange");
    let spent = &k.counters() - &before;
    let cost = presets::arm926ejs().cost;
    let st = x.stats();
    Row {
        chunk,
        steps: st.steps,
        windows: k.irq.windows.len(),
        total_cycles: cost.cycles(&spent),
        longest_cycles: k.irq.longest(&cost),
        total_ops: st.total_ops,
        longest_ops: st.longest_masked_ops,
        accesses: spent.accesses(),
        maintenance: spent.cache_line_ops + spent.tlb_invalidate_entry + spent.write_buffer_drains,
        table_words: k.maps.table_words - words_before,
    }
}

fn main() {
    let ram = PhysRegion::new(
        PhysAddr::new(0),
        128 << 20,
        Location::Ram,
        InitialUse::Resource,
    )
    .expect("RAM region");
    let itcm = PhysRegion::new(
        PhysAddr::new(0xfffe_0000),
        32 << 10,
        Location::Itcm,
        InitialUse::Resource,
    )
    .expect("ITCM region");
    let dtcm = PhysRegion::new(
        PhysAddr::new(0xfffe_8000),
        32 << 10,
        Location::Dtcm,
        InitialUse::Resource,
    )
    .expect("DTCM region");
    let regions = [ram, itcm, dtcm];
    let mut frames = vec![FrameDesc::default(); FrameTable::<3>::frames_needed(&regions)];
    let mut sections = vec![SectionSummary::default(); FrameTable::<3>::sections_needed(&regions)];
    let table = FrameTable::<3>::new(&regions, &mut frames, &mut sections).expect("table");

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
    println!();
    println!("4 KiB exchange into DTCM on the armv5-sim model, ARM926EJ-S preset (MODELLED)");
    println!("  writable page, all 128 lines dirty before the exchange; copies through an");
    println!(
        "  uncached kernel window (the model charges {} cycles per uncached read)",
        presets::arm926ejs().cost.uncached_read
    );
    println!();
    println!(
        "  {:>5} {:>5} {:>7} | {:>14} {:>16} | {:>9} {:>11} | {:>8} {:>11} {:>11}",
        "chunk",
        "steps",
        "windows",
        "total cycles",
        "longest window",
        "total ops",
        "longest ops",
        "accesses",
        "maint. ops",
        "table words"
    );
    for chunk in [32, 64, 128, 256, 512, 1024, 2048, 4096] {
        let r = measure(chunk, true);
        println!(
            "  {:>5} {:>5} {:>7} | {:>14} {:>16} | {:>9} {:>11} | {:>8} {:>11} {:>11}",
            r.chunk,
            r.steps,
            r.windows,
            r.total_cycles,
            r.longest_cycles,
            r.total_ops,
            r.longest_ops,
            r.accesses,
            r.maintenance,
            r.table_words
        );
    }
    let r = measure(spm::exchange::DEFAULT_CHUNK, false);
    println!(
        "  read-only page, chunk {}: total {} modelled cycles, {} masked window(s), longest {} modelled cycles ({} ops)",
        r.chunk, r.total_cycles, r.windows, r.longest_cycles, r.longest_ops
    );
    println!();
    println!("  cycles: the preset's cost model over the model's event counters (modelled).");
    println!("  ops: spm's own count (one per maintenance operation, word copied, Mappings call,");
    println!("  register write). accesses: CPU loads/stores the model executed (the copy).");
    println!("  table words: descriptor words the test kernel wrote (not counted by the model).");
    println!("  Not modelled: the instructions of spm and of the kernel's Mappings code.");
    println!("  Goal for the real kernel (QEMU measurement is a later issue): total <= 2,500");
    println!("  instructions, longest interrupts-off window <= 300 instructions.");
}
