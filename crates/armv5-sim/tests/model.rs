//! Behaviour of the model: walk cases, fault registers, CP15 and maintenance
//! through the `mmu-armv5` traits, table allocation, determinism, costs,
//! configuration errors and replay.

mod common;
use armv5_sim::replay::{replay, Outcome, ReplayAccess, ReplayOp, ReplayState};
use armv5_sim::{
    encode, presets, sctlr, AccessKind, CacheConfig, CacheSide, Config, ConfigError, Machine,
    MemoryKind, MemoryRegion, Privilege, Replacement, Width,
};
use common::*;
use mmu_armv5::maint::CacheMaintenance;
use mmu_armv5::regs::Sctlr;
use mmu_armv5::regs::{Cp15, Cp15Ext, Cp15Op, Cp15Reg, Dacr};
use mmu_armv5::size::PageSizeKind;
use mmu_armv5::table::{TableAlloc, TableKind};
use mmu_armv5::{Domain, FaultKind, FaultLevel, FcsePid, ModifiedVirtAddr, PhysAddr, VirtAddr};

const U: Privilege = Privilege::User;
const P: Privilege = Privilege::Privileged;

fn ld(m: &mut Machine, va: u32, p: Privilege) -> Result<u32, FaultKind> {
    m.load(VirtAddr::new(va), Width::Word, p)
        .map_err(|f| f.kind)
}

fn st(m: &mut Machine, va: u32, v: u32, p: Privilege) -> Result<(), FaultKind> {
    m.store(VirtAddr::new(va), Width::Word, v, p)
        .map_err(|f| f.kind)
}

#[test]
fn coarse_table_small_and_large_pages_with_subpage_ap() {
    let mut m = machine(presets::arm926ejs());
    let l1 = new_l1(&mut m);
    let ct = m.alloc_frames(1024).unwrap().as_u32();
    map(&mut m, l1, 0x0100_0000, encode::coarse(ct, 2));
    // Small page at 0x0100_1000 -> 0x0020_3000, subpages AP 3,2,1,0.
    w(
        &mut m,
        encode::coarse_entry_addr(ct, 0x0100_1000),
        encode::small(0x0020_3000, [3, 2, 1, 0], false, false),
    );
    // Large page at 0x0101_0000 -> 0x0030_0000, replicated 16x; AP0..3 = 3,0,3,1.
    for k in 0..16 {
        w(
            &mut m,
            encode::coarse_entry_addr(ct, 0x0101_0000 + k * 0x1000),
            encode::large(0x0030_0000, [3, 0, 3, 1], true, true),
        );
    }
    // A tiny-page encoding in a coarse table: page translation fault.
    w(
        &mut m,
        encode::coarse_entry_addr(ct, 0x0100_5000),
        encode::tiny(0x0040_0000, 3, false, false),
    );
    w(&mut m, 0x0020_3000, 11);
    w(&mut m, 0x0030_8004, 22);
    enable(&mut m, l1);
    let pf = |_: u8| FaultKind::Permission(FaultLevel::Page);
    assert_eq!(ld(&mut m, 0x0100_1000, U), Ok(11)); // AP0 = 11
    assert_eq!(st(&mut m, 0x0100_1400, 1, U), Err(pf(0))); // AP1 = 10: user RO
    assert_eq!(ld(&mut m, 0x0100_1400, U), Ok(0));
    assert_eq!(ld(&mut m, 0x0100_1800, U), Err(pf(0))); // AP2 = 01: user none
    assert_eq!(st(&mut m, 0x0100_1800, 1, P), Ok(()));
    assert_eq!(ld(&mut m, 0x0100_1C00, P), Err(pf(0))); // AP3 = 00, S=R=0
    assert_eq!(m.dfsr().bits(), 0x2F, "page permission, domain 2");
    assert_eq!(m.far().bits(), 0x0100_1C00);
    // Large page: VA[15:14] selects the AP.
    assert_eq!(ld(&mut m, 0x0101_8004, U), Ok(22)); // AP2 = 11
    assert_eq!(ld(&mut m, 0x0101_4000, U), Err(pf(0))); // AP1 = 00
    assert_eq!(ld(&mut m, 0x0101_C000, U), Err(pf(0))); // AP3 = 01
    assert_eq!(ld(&mut m, 0x0101_C000, P), Ok(0));
    let t = m
        .probe(VirtAddr::new(0x0101_8004), AccessKind::Read, U, 4)
        .unwrap();
    assert_eq!(t.mapping.size, PageSizeKind::Large);
    assert_eq!(t.pa, PhysAddr::new(0x0030_8004));
    assert_eq!(
        ld(&mut m, 0x0100_5000, P),
        Err(FaultKind::Translation(FaultLevel::Page))
    );
    assert_eq!(
        m.dfsr().bits(),
        0x27,
        "page translation carries the L1 domain"
    );
    assert_eq!(
        ld(&mut m, 0x0100_2000, P),
        Err(FaultKind::Translation(FaultLevel::Page))
    );
    assert_eq!(
        ld(&mut m, 0x0200_0000, P),
        Err(FaultKind::Translation(FaultLevel::Section))
    );
    assert_eq!(m.dfsr().bits(), 0x05);
}

#[test]
fn fine_table_tiny_pages() {
    let mut m = machine(presets::pxa255());
    let l1 = new_l1(&mut m);
    let ft = m.alloc_frames(4096).unwrap().as_u32();
    map(&mut m, l1, 0x0300_0000, encode::fine(ft, 4));
    w(
        &mut m,
        encode::fine_entry_addr(ft, 0x0300_0400),
        encode::tiny(0x0050_0C00, 2, true, true),
    );
    // Small page in a fine table, replicated 4x.
    for k in 0..4 {
        w(
            &mut m,
            encode::fine_entry_addr(ft, 0x0300_2000 + k * 0x400),
            encode::small(0x0060_0000, [3, 3, 3, 3], false, false),
        );
    }
    w(&mut m, 0x0050_0C10, 5);
    w(&mut m, 0x0060_0FF0, 6);
    enable(&mut m, l1);
    assert_eq!(ld(&mut m, 0x0300_0410, U), Ok(5));
    assert_eq!(
        st(&mut m, 0x0300_0410, 1, U),
        Err(FaultKind::Permission(FaultLevel::Page))
    );
    assert_eq!(ld(&mut m, 0x0300_2FF0, U), Ok(6));
    let t = m
        .probe(VirtAddr::new(0x0300_0410), AccessKind::Read, U, 4)
        .unwrap();
    assert_eq!(t.mapping.size, PageSizeKind::Tiny);
    assert_eq!(t.mapping.domain, Domain::new(4).unwrap());
    assert_eq!(
        ld(&mut m, 0x0300_0800, U),
        Err(FaultKind::Translation(FaultLevel::Page))
    );
}

#[test]
fn s_and_r_bits_for_ap_00() {
    let mut m = machine(presets::arm926ejs());
    let l1 = new_l1(&mut m);
    map(
        &mut m,
        l1,
        0x0010_0000,
        encode::section(0x0020_0000, 0, 0, false, false),
    );
    enable(&mut m, l1);
    let base = Sctlr::from_bits(sctlr::M | sctlr::C | sctlr::I);
    let pk = FaultKind::Permission(FaultLevel::Section);
    let perm = Err(pk);
    m.set_sctlr(base);
    assert_eq!(ld(&mut m, 0x0010_0000, P), perm);
    m.set_sctlr(base.with_system_protection(true));
    assert_eq!(ld(&mut m, 0x0010_0000, P), Ok(0));
    assert_eq!(ld(&mut m, 0x0010_0000, U), perm);
    assert_eq!(st(&mut m, 0x0010_0000, 1, P), Err(pk));
    m.set_sctlr(base.with_rom_protection(true));
    assert_eq!(ld(&mut m, 0x0010_0000, U), Ok(0));
    assert_eq!(st(&mut m, 0x0010_0000, 1, P), Err(pk));
    m.set_sctlr(base.with_system_protection(true).with_rom_protection(true));
    assert_eq!(ld(&mut m, 0x0010_0000, P), perm);
}

#[test]
fn fcse_faults_report_the_mva_and_prefetch_aborts_use_ifsr() {
    let mut m = machine(presets::sa1100());
    let l1 = new_l1(&mut m);
    enable(&mut m, l1);
    m.set_fcse_pid(FcsePid::new(5).unwrap());
    assert_eq!(
        ld(&mut m, 0x0000_8000, U),
        Err(FaultKind::Translation(FaultLevel::Section))
    );
    assert_eq!(m.far().bits(), 0x0A00_8000, "FAR holds the MVA");
    // SAFETY: the model; a register write cannot break the host.
    unsafe { Cp15::write(&mut m, Cp15Reg::Fcseidr, 0xFFFF_FFFF) };
    assert_eq!(
        Cp15::read(&m, Cp15Reg::Fcseidr),
        63 << 25,
        "low bits ignored, six PID bits on SA-1100"
    );
    let (dfsr, far) = (m.dfsr(), m.far());
    let f = m.fetch(VirtAddr::new(0x0300_0000), U).unwrap_err();
    assert_eq!(f.kind, FaultKind::Translation(FaultLevel::Section));
    assert_eq!(m.ifsr().bits(), 0x05);
    assert_eq!(
        (m.dfsr(), m.far()),
        (dfsr, far),
        "prefetch abort leaves DFSR/FAR"
    );
    m.set_sctlr(m.sctlr().with_alignment_check(true));
    assert_eq!(ld(&mut m, 0x0300_0002, P), Err(FaultKind::Alignment));
    assert_eq!(m.dfsr().bits(), 0x01);
    assert_eq!(m.counters().faults_of(FaultKind::Alignment), 1);
    assert_eq!(
        m.counters()
            .faults_of(FaultKind::Translation(FaultLevel::Section)),
        2
    );
}

#[test]
fn misaligned_word_load_rotates_without_alignment_checking() {
    let mut m = machine(presets::arm926ejs());
    w(&mut m, 0x1000, 0x4433_2211);
    // MMU off: flat, uncached.
    assert_eq!(ld(&mut m, 0x1001, P), Ok(0x1144_3322));
    assert_eq!(m.load(VirtAddr::new(0x1002), Width::Half, P), Ok(0x4433));
    assert_eq!(m.load(VirtAddr::new(0x1003), Width::Byte, P), Ok(0x44));
    m.store(VirtAddr::new(0x1001), Width::Byte, 0xAB, P)
        .unwrap();
    assert_eq!(r(&m, 0x1000), 0x4433_AB11);
}

#[test]
fn code_runs_through_the_mmu_armv5_traits() {
    let mut m = machine(presets::arm926ejs());
    let l1 = TableAlloc::allocate(&mut m, TableKind::L1).unwrap();
    assert_eq!(l1.as_u32() % (16 << 10), 0);
    let ptr = TableAlloc::table_ptr(&m, TableKind::L1, l1).unwrap();
    // SAFETY: `table_ptr` promises 16 KiB of valid table memory.
    unsafe {
        ptr.as_ptr()
            .add(0x001)
            .write_volatile(encode::section(0x0020_0000, 3, 1, true, true));
    }
    assert!(TableAlloc::table_ptr(&m, TableKind::L1, PhysAddr::new(0x4000_0000)).is_none());
    assert!(TableAlloc::table_ptr(&m, TableKind::L1, PhysAddr::new(RAM_SIZE - 0x1000)).is_none());
    {
        // Through `&mut Machine`, as a generic owner would use it.
        let mut h: &mut Machine = &mut m;
        // SAFETY: the model's registers only affect the model.
        unsafe {
            Cp15::write(&mut h, Cp15Reg::Ttbr, l1.as_u32());
            Cp15::write(&mut h, Cp15Reg::Dacr, Dacr::ALL_CLIENT.bits());
            Cp15::write(&mut h, Cp15Reg::Sctlr, sctlr::M | sctlr::C | sctlr::I);
            h.set_fcse_pid(FcsePid::new(9).unwrap());
        }
        assert_eq!(Cp15Ext::fcse_pid(&h), FcsePid::new(9).unwrap());
        assert_eq!(Cp15::read(&h, Cp15Reg::Midr), 0x4106_9265);
    }
    m.set_fcse_pid(FcsePid::ZERO);
    let va = 0x0010_0020;
    assert_eq!(ld(&mut m, va, U), Ok(0));
    st(&mut m, va, 77, U).unwrap();
    assert_eq!(r(&m, 0x0020_0020), 0);
    CacheMaintenance::clean_dcache_range(&mut m, ModifiedVirtAddr::new(va), 4);
    assert_eq!(r(&m, 0x0020_0020), 77);
    assert_eq!(m.counters().write_buffer_drains, 1);
    // Test-and-clean loop: cleans every dirty line, then reports clean.
    for k in 0..8 {
        st(&mut m, va + 0x100 * k, k, U).unwrap_or(());
        let _ = ld(&mut m, va + 0x100 * k, U);
        st(&mut m, va + 0x100 * k, 100 + k, U).unwrap();
    }
    assert_eq!(m.dcache_dirty_lines(), 8);
    let mut calls = 0;
    while !Cp15::test_clean_invalidate_dcache(&mut m) {
        calls += 1;
        assert!(calls < 100, "test-and-clean must terminate");
    }
    assert_eq!(calls, 7);
    assert_eq!(m.dcache_valid_lines(), 0);
    assert_eq!(r(&m, 0x0020_0020 + 0x300), 103);
    // TLB operations through the backend.
    assert!(m.tlb_valid_entries() > 0);
    // SAFETY: invalidating the model's TLB loses nothing.
    unsafe { Cp15::op(&mut m, Cp15Op::InvalidateTlb, 0) };
    assert_eq!(m.tlb_valid_entries(), 0);
    assert_eq!(m.counters().tlb_invalidate_all, 1);
}

fn thrash(seed: u64) -> armv5_sim::Counters {
    let mut p = presets::arm926ejs();
    p.config.seed = seed;
    let mut m = machine(p);
    let l1 = new_l1(&mut m);
    map(
        &mut m,
        l1,
        0x0010_0000,
        encode::section(0x0020_0000, 3, 0, true, true),
    );
    enable(&mut m, l1);
    // 5 lines per set against 4 ways: random replacement decides the misses.
    for round in 0..scaled(200) {
        for k in 0..5u32 {
            let va = 0x0010_0000 + k * 4096 + (round % 4) * 32;
            let _ = ld(&mut m, va, U);
            st(&mut m, va, round, U).unwrap();
        }
    }
    m.counters().clone()
}

#[test]
fn same_seed_same_counters() {
    assert_eq!(thrash(1), thrash(1));
    assert_ne!(thrash(1), thrash(2), "random replacement follows the seed");
}

#[test]
fn lru_keeps_the_recently_used_line() {
    let mut p = presets::arm926ejs();
    p.config.dcache = CacheConfig {
        size: 1024,
        ways: 4,
        line: 32,
        replacement: Replacement::Lru,
    };
    let mut m = machine(p);
    let l1 = new_l1(&mut m);
    map(
        &mut m,
        l1,
        0x0010_0000,
        encode::section(0x0020_0000, 3, 0, true, true),
    );
    enable(&mut m, l1);
    let set_stride = 256; // 1 KiB / 4 ways
    for k in 0..4 {
        ld(&mut m, 0x0010_0000 + k * set_stride, U).unwrap();
    }
    ld(&mut m, 0x0010_0000, U).unwrap(); // line 0 most recent
    ld(&mut m, 0x0010_0000 + 4 * set_stride, U).unwrap(); // evicts line 1
    let before = m.counters().clone();
    ld(&mut m, 0x0010_0000, U).unwrap();
    assert_eq!((m.counters() - &before).dcache_read_hits, 1);
    ld(&mut m, 0x0010_0000 + set_stride, U).unwrap();
    assert_eq!((m.counters() - &before).dcache_read_misses, 1);
}

#[test]
fn whole_clean_cost_comes_from_lines_visited_and_written_back() {
    let p = presets::sa1100();
    let cost = p.cost;
    let mut m = machine(p);
    let l1 = new_l1(&mut m);
    map(
        &mut m,
        l1,
        0x0010_0000,
        encode::section(0x0020_0000, 3, 0, true, true),
    );
    enable(&mut m, l1);
    let clean_cost = |m: &mut Machine| {
        let b = m.counters().clone();
        CacheMaintenance::clean_invalidate_dcache(m);
        let d = m.counters() - &b;
        (cost.cycles(&d), d)
    };
    let (c0, d0) = clean_cost(&mut m);
    assert_eq!(d0.clean_lines_visited, 256, "8 KiB / 32 B");
    assert_eq!(d0.write_backs, 0);
    for k in 0..40 {
        let va = 0x0010_0000 + 32 * k;
        ld(&mut m, va, U).unwrap();
        st(&mut m, va, k, U).unwrap();
    }
    let (c40, d40) = clean_cost(&mut m);
    assert_eq!(d40.write_backs, 40);
    assert_eq!(c40 - c0, 40 * cost.write_back);
    assert!((1_000..=18_000).contains(&c0), "{c0}");
    assert_eq!(r(&m, 0x0020_0000 + 32 * 39), 39);
}

#[test]
fn bad_configurations_are_typed_errors() {
    let base = presets::arm926ejs().config;
    let with_d = |f: fn(&mut CacheConfig)| {
        let mut c = base.clone();
        f(&mut c.dcache);
        Machine::new(c).unwrap_err()
    };
    assert!(matches!(
        with_d(|d| d.size = 12 << 10),
        ConfigError::CacheSizeNotPowerOfTwo {
            side: CacheSide::Data,
            ..
        }
    ));
    assert!(matches!(
        with_d(|d| d.ways = 3),
        ConfigError::WaysNotPowerOfTwo { .. }
    ));
    assert!(matches!(
        with_d(|d| {
            d.size = 256;
            d.ways = 16
        }),
        ConfigError::WaysExceedLines {
            ways: 16,
            lines: 8,
            ..
        }
    ));
    assert!(matches!(
        with_d(|d| d.line = 48),
        ConfigError::BadLineSize { .. }
    ));
    let ram = |base: u32, size: u32| MemoryRegion {
        base: PhysAddr::new(base),
        size,
        kind: MemoryKind::Ram,
        latency: 0,
    };
    let mut c: Config = base.clone();
    c.regions = vec![ram(0, 1 << 20), ram(0x8_0000, 1 << 20)];
    assert_eq!(
        Machine::new(c).unwrap_err(),
        ConfigError::OverlappingRegions {
            existing: 0,
            added: 0x8_0000
        }
    );
    let mut m = Machine::new(base).unwrap();
    assert!(matches!(
        m.add_region(ram(0x100, 4096)),
        Err(ConfigError::UnalignedRegion { .. })
    ));
    m.add_region(MemoryRegion {
        kind: MemoryKind::Dtcm,
        ..ram(0xFFFE_8000, 8192)
    })
    .unwrap();
    assert_eq!(Cp15::read(&m, Cp15Reg::TcmStatus), 1 << 16);
    assert_eq!(
        Cp15::read(&m, Cp15Reg::DtcmRegion),
        0xFFFE_8000 | (4 << 2) | 1
    );
    assert!(
        m.set_frame_pool(PhysAddr::new(0xFFFE_8000), 4096).is_err(),
        "TCM is not RAM"
    );
    assert!(ConfigError::BadTlbEntries(0).to_string().contains("TLB"));
}

#[test]
fn replay_reports_values_and_aborts() {
    let mut m = machine(presets::arm926ejs());
    let l1 = 0x0010_0000u32;
    let writes = [
        (
            PhysAddr::new(encode::l1_entry_addr(l1, 0x0400_0000)),
            encode::section(0x0020_0000, 2, 1, true, true),
        ),
        (PhysAddr::new(0x0020_0010), 0x1234_5678),
    ];
    let state = ReplayState {
        sctlr: sctlr::M | sctlr::C,
        ttbr: l1,
        dacr: Dacr::ALL_CLIENT.bits(),
        fcseidr: 0,
    };
    let acc = |va: u32, op, privilege| ReplayAccess {
        va: VirtAddr::new(va),
        op,
        width: Width::Word,
        privilege,
    };
    let out = replay(
        &mut m,
        &writes,
        &state,
        &[
            acc(0x0400_0010, ReplayOp::Load, U),
            acc(0x0400_0010, ReplayOp::Store(1), U),
            acc(0x0400_0010, ReplayOp::Store(2), P),
            acc(0x0400_0010, ReplayOp::Load, U),
            acc(0x0500_0000, ReplayOp::Fetch, P),
        ],
    )
    .unwrap();
    assert_eq!(
        out,
        vec![
            Outcome::Value(0x1234_5678),
            Outcome::DataAbort {
                fsr: 0x1D,
                far: 0x0400_0010
            },
            Outcome::Stored,
            Outcome::Value(2),
            Outcome::PrefetchAbort { fsr: 0x05 },
        ]
    );
}
