//! Simulated accesses per second on the SA-1100 preset.
//!
//! `cargo run --release -p armv5-sim --example throughput -- [--short]`
//!
//! The workload is mostly TLB and cache hits: a user process loads and
//! stores words over a 4 KiB working set (write-back sections) and fetches
//! from a 2 KiB code loop, with one access in 64 going to a cold page.

use armv5_sim::{encode, presets, sctlr, Machine, MemoryKind, MemoryRegion, Privilege, Width};
use mmu_armv5::regs::Sctlr;
use mmu_armv5::regs::Ttbr;
use mmu_armv5::{regs::Dacr, PhysAddr, VirtAddr};
use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let short = std::env::args().any(|a| a == "--short");
    let total: u64 = if short { 20_000_000 } else { 200_000_000 };
    let preset = presets::sa1100();
    let cost = preset.cost;
    let mut cfg = preset.config;
    cfg.regions.push(MemoryRegion {
        base: PhysAddr::new(0xC000_0000),
        size: 32 << 20,
        kind: MemoryKind::Ram,
        latency: 0,
    });
    let mut m = Machine::new(cfg)?;
    m.set_frame_pool(PhysAddr::new(0xC100_0000), 16 << 20)?;
    let l1 = m.alloc_frames(16 << 10)?.as_u32();
    // Identity-map RAM as write-back sections, domain 0, user read/write.
    for mb in 0..32u32 {
        let a = 0xC000_0000 + (mb << 20);
        m.phys_write(
            PhysAddr::new(encode::l1_entry_addr(l1, a)),
            Width::Word,
            encode::section(a, 3, 0, true, true),
        )?;
    }
    m.set_ttbr(Ttbr::new(PhysAddr::new(l1)).unwrap());
    m.set_dacr(Dacr::ALL_CLIENT);
    m.set_sctlr(Sctlr::from_bits(sctlr::M | sctlr::C | sctlr::I));

    let data = 0xC040_0000u32;
    let code = 0xC000_8000u32;
    let before = m.counters().clone();
    let start = Instant::now();
    let mut sum = 0u32;
    let mut i = 0u64;
    while i < total {
        let k = (i as u32).wrapping_mul(2_654_435_761);
        let off = (k >> 20) & 0xFFC;
        let r = match i & 3 {
            0 => m
                .fetch(VirtAddr::new(code + (off & 0x7FC)), Privilege::User)
                .map(|v| sum = sum.wrapping_add(v)),
            1 => m.store(VirtAddr::new(data + off), Width::Word, k, Privilege::User),
            _ if i & 63 == 2 => m
                .load(
                    VirtAddr::new(0xC100_0000 + (k & 0xF_FFFC)),
                    Width::Word,
                    Privilege::User,
                )
                .map(|v| sum = sum.wrapping_add(v)),
            _ => m
                .load(VirtAddr::new(data + off), Width::Word, Privilege::User)
                .map(|v| sum = sum.wrapping_add(v)),
        };
        r.map_err(|f| format!("unexpected fault {f}"))?;
        i += 1;
    }
    let secs = start.elapsed().as_secs_f64();
    let d = m.counters() - &before;
    println!("preset            {}", m.config().name);
    println!("accesses          {}", d.accesses());
    println!("host seconds      {secs:.3}");
    println!(
        "accesses/second   {:.1} M",
        d.accesses() as f64 / secs / 1e6
    );
    println!(
        "modelled cycles   {} ({:.1} ms at {} MHz)",
        cost.cycles(&d),
        cost.micros(&d) / 1000.0,
        cost.clock_hz / 1_000_000
    );
    println!("checksum          {sum:#010x}");
    print!("{d}");
    Ok(())
}
