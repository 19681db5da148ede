//! Full cache flushes per 1,000 switches for every victim policy, on the
//! `armv5-sim` model of the SA-1100 (MODELLED figures, not measurements).
//!
//! Workload: N address spaces (N = 16, 24, 32, 48, 64) are created under
//! FASS with the demo layout (PIDs 1..=63; 15 domains free after the
//! kernel's). Each space maps four private 4 KiB pages, two in each of two
//! 1 MiB slots of its 32 MiB window. The spaces then run in a fixed
//! pseudo-random order (xorshift32, seed 1; each turn picks a space other
//! than the running one), 20 turns per space after 2 warm-up rounds; on
//! each turn the space loads and stores one word in each of its four pages
//! (faults are resolved by [`Fass::resolve`]). A row gives, for one policy,
//! the full flushes (D-cache clean+invalidate, I-cache and TLB invalidation)
//! per 1,000 switches after warm-up, as counted by the FASS statistics and
//! cross-checked against the model's whole-cache operations. For
//! comparison the last rows run the same workload with per-space tables
//! and FCSE PIDs (best effort; guaranteed mode cannot hold 64 spaces in 63
//! PIDs) and with a naive full flush per switch.
//!
//! Every FASS policy runs under both recycling rules
//! ([`RecycleRule::Conservative`]: flush whenever a dirty domain is
//! recycled; [`RecycleRule::ExclusiveWindows`]: no flush for a space whose
//! mappings all lie in its own FCSE window at a PID of its own). A second
//! table repeats the workload with every fourth space also mapping one
//! fixed page above 32 MiB outside its window (in window 1, slot 32 + s/4,
//! so the fixed pages do not collide with each other unless PID 1 is in
//! use): those spaces are not window-exclusive and keep the conservative
//! rule. At N = 64 the 63 PIDs are one short, so two spaces share a PID and
//! are not exclusive either.
//!
//! Run with `cargo run --release -p fass --example policy_table`.

use armv5_sim::{encode, presets, sctlr, Machine, MemoryKind, MemoryRegion, Privilege, Width};
use fass::policy::{CleanFirstLru, CleanFirstRandom, CleanFirstRoundRobin, FewestSlots};
use fass::{
    ClassicKind, Cpd, DomainSet, Fass, KernelTable, Layout, PidMode, RecycleRule, Resolution,
    SpaceId, SwitchStrategy, TableSwitch, VictimPolicy,
};
use mmu_armv5::descriptor::{AccessPermission, CachePolicy, L1Encoding};
use mmu_armv5::regs::{Dacr, DomainAccess};
use mmu_armv5::regs::{Sctlr, Ttbr};
use mmu_armv5::size::{Frame, Page, PageRange};
use mmu_armv5::table::{TableKind as HwTable, TableRef};
use mmu_armv5::{Domain, PhysAddr, VirtAddr};

const NS: [u16; 5] = [16, 24, 32, 48, 64];
const TURNS_PER_SPACE: u32 = 20;
const WARMUP_ROUNDS: u32 = 2;

fn machine() -> Machine {
    let mut cfg = presets::sa1100().config;
    cfg.regions.push(MemoryRegion {
        base: PhysAddr::new(0),
        size: 8 << 20,
        kind: MemoryKind::Ram,
        latency: 0,
    });
    let mut m = Machine::new(cfg).expect("model configuration");
    m.set_frame_pool(PhysAddr::new(4 << 20), 4 << 20)
        .expect("frame pool");
    m.set_sctlr(Sctlr::from_bits(sctlr::M | sctlr::C | sctlr::I));
    m
}

fn page_va(p: u32) -> VirtAddr {
    VirtAddr::new(0x8000 + (p / 2) * (1 << 20) + (p % 2) * 0x1000)
}

fn page_pa(s: u16, p: u32) -> PhysAddr {
    PhysAddr::new((u32::from(s) * 4 + p + 1) * 0x1000)
}

/// The fixed page of space `s` in the mixed workload, if it has one.
fn fixed_page(mixed: bool, s: u16) -> Option<VirtAddr> {
    (mixed && s % 4 == 3).then(|| VirtAddr::new(0x0200_0000 + u32::from(s / 4) * (1 << 20)))
}

/// Runs the workload; returns (switches, full flushes, whole-cache ops) after warm-up.
fn run<T: SwitchStrategy>(m: &mut Machine, t: &mut T, n: u16, mixed: bool) -> (u64, u64, u64) {
    for s in 0..n {
        t.create_space(m, SpaceId(s)).expect("create");
        for p in 0..4 {
            t.map_pages(
                m,
                SpaceId(s),
                PageRange::from(Page::from_start(page_va(p)).expect("page")),
                Frame::from_start(page_pa(s, p)).expect("frame"),
                AccessPermission::ReadWrite,
                CachePolicy::WriteBack,
            )
            .expect("map");
        }
        if let Some(va) = fixed_page(mixed, s) {
            t.map_pages(
                m,
                SpaceId(s),
                PageRange::from(Page::from_start(va).expect("page")),
                Frame::from_start(PhysAddr::new(0x0020_0000 + u32::from(s) * 0x1000))
                    .expect("frame"),
                AccessPermission::ReadWrite,
                CachePolicy::WriteBack,
            )
            .expect("map fixed");
        }
    }
    let mut rng = 1u32;
    let mut next = |cur: u16| loop {
        rng ^= rng << 13;
        rng ^= rng >> 17;
        rng ^= rng << 5;
        let s = (rng % u32::from(n)) as u16;
        if s != cur {
            return s;
        }
    };
    let turn = |m: &mut Machine, t: &mut T, s: u16| {
        t.switch_to(m, SpaceId(s)).expect("switch");
        for p in 0..5 {
            let va = match (p, fixed_page(mixed, s)) {
                (4, Some(va)) => va,
                (4, None) => break,
                _ => page_va(p),
            };
            let v = loop {
                match m.load(va, Width::Word, Privilege::User) {
                    Ok(v) => break v,
                    Err(_) => {
                        let (fsr, far) = (m.dfsr(), m.far());
                        match t.resolve(m, fsr, far).expect("resolve") {
                            Resolution::Resolved { .. } => {}
                            Resolution::NotFass(f) => panic!("unexpected fault {f:?}"),
                        }
                    }
                }
            };
            m.store(va, Width::Word, v.wrapping_add(1), Privilege::User)
                .expect("store after a successful load");
        }
    };
    let mut cur = 0u16;
    for _ in 0..WARMUP_ROUNDS * u32::from(n) {
        cur = next(cur);
        turn(m, t, cur);
    }
    let (s0, c0) = (t.stats(), m.counters().clone());
    for _ in 0..TURNS_PER_SPACE * u32::from(n) {
        cur = next(cur);
        turn(m, t, cur);
    }
    let s = t.stats().since(&s0);
    let c = m.counters() - &c0;
    (s.switches, s.full_flushes, c.cache_whole_ops)
}

/// The kernel's table on the model: a fresh first-level table with one
/// section of kernel RAM at 3 GiB (PA 0, kernel only, domain 0), loaded in
/// the TTBR, vouched for.
fn kernel_table(m: &mut Machine) -> KernelTable {
    let root = TableRef::allocate(m, HwTable::L1).expect("kernel table");
    // SAFETY: a fresh first-level table no `PageTable` manages: the entry
    // is a section, no table link.
    unsafe { root.write(m, 0xC00, encode::section(0, 1, 0, true, true)) }.expect("kernel entry");
    m.set_ttbr(Ttbr::new(root.pa).unwrap());
    // SAFETY: the model's register writes reach no host memory; the table
    // stays allocated in the machine for as long as it lives.
    let t = unsafe {
        KernelTable::new(
            &*m,
            root.pa,
            L1Encoding::Arm9,
            &Layout::DEMO,
            Domain::default(),
        )
    };
    t.expect("kernel table")
}

fn fass_row<P: VictimPolicy>(name: &str, rule: RecycleRule, mixed: bool, make: impl Fn() -> P) {
    let rule_name = match rule {
        RecycleRule::Conservative => "conservative",
        RecycleRule::ExclusiveWindows => "exclusive windows",
    };
    print!("| {name:<26} | {rule_name:<17} |");
    for n in NS {
        let mut m = machine();
        let cpd = Cpd::new(kernel_table(&mut m));
        m.set_dacr(Dacr::only(Domain::default(), DomainAccess::Client));
        let mut f: Fass<P, 64, 8, 1> = Fass::new(cpd, DomainSet::EMPTY, make())
            .expect("FASS")
            .with_recycle_rule(rule);
        let (sw, fl, ops) = run(&mut m, &mut f, n, mixed);
        // Each full flush is one D clean+invalidate and one I invalidate.
        assert_eq!(ops, 2 * fl, "model and FASS counters disagree");
        print!(" {:>7.1} |", fl as f64 * 1000.0 / sw as f64);
    }
    println!();
}

fn table_row(name: &str, kind: ClassicKind, mixed: bool) {
    print!("| {name:<26} | {:<17} |", "-");
    for n in NS {
        let mut m = machine();
        let table = kernel_table(&mut m);
        let (k, u) = (Domain::new(0).expect("0"), Domain::new(1).expect("1"));
        m.set_dacr(Dacr::only(k, DomainAccess::Client).with(u, DomainAccess::Client));
        let mut t: TableSwitch<64, 1> = TableSwitch::new(kind, u, table);
        let (sw, fl, _) = run(&mut m, &mut t, n, mixed);
        print!(" {:>7.1} |", fl as f64 * 1000.0 / sw as f64);
    }
    println!();
}

fn table(title: &str, mixed: bool) {
    println!();
    println!("{title}");
    println!("Full flushes per 1,000 switches (MODELLED on armv5-sim, SA-1100 preset)");
    print!(
        "| {:<26} | {:<17} |",
        "strategy / N spaces", "recycling rule"
    );
    for n in NS {
        print!(" {n:>7} |");
    }
    println!();
    println!(
        "|{}|{}|{}",
        "-".repeat(28),
        "-".repeat(19),
        "---------|".repeat(NS.len())
    );
    for rule in [RecycleRule::Conservative, RecycleRule::ExclusiveWindows] {
        fass_row(
            "FASS, clean-first RR",
            rule,
            mixed,
            CleanFirstRoundRobin::default,
        );
        fass_row("FASS, clean-first random", rule, mixed, || {
            CleanFirstRandom::new(1)
        });
        fass_row("FASS, fewest slots", rule, mixed, FewestSlots::default);
        fass_row("FASS, clean-first LRU", rule, mixed, CleanFirstLru::default);
    }
    table_row(
        "FCSE tables, best effort",
        ClassicKind::Fcse(PidMode::BestEffort),
        mixed,
    );
    table_row("naive", ClassicKind::Naive, mixed);
}

fn main() {
    table(
        "Workload A: every space maps only inside its own 32 MiB window",
        false,
    );
    table(
        "Workload B: every fourth space also maps a fixed page outside its window",
        true,
    );
}
