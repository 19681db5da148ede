//! Public inputs give typed errors, never a panic: configurations, the
//! frame pool, the cost model.

mod common;
use armv5_sim::{
    presets, CacheConfig, CacheSide, ConfigError, CostModel, Counters, Machine, MemError,
    MemoryKind, MemoryRegion, Replacement, TlbConfig, TlbLayout, TlbReplacement,
};
use common::{machine, proptest_config};
use mmu_armv5::regs::Sctlr;
use mmu_armv5::PhysAddr;
use proptest::prelude::*;

/// Regression: `free_frames` took any address; a second free of a block put
/// it on the free list twice and the pool then handed it to two owners.
#[test]
fn the_frame_pool_refuses_frees_of_blocks_it_does_not_hold() {
    let mut m = machine(presets::arm926ejs());
    let a = m.alloc_frames(1024).unwrap();
    m.free_frames(a, 1024).unwrap();
    assert_eq!(
        m.free_frames(a, 1024),
        Err(MemError::NotAllocated {
            addr: a.as_u32(),
            size: 1024
        })
    );
    let b = m.alloc_frames(4096).unwrap();
    assert_eq!(
        m.free_frames(b, 1024),
        Err(MemError::NotAllocated {
            addr: b.as_u32(),
            size: 1024
        }),
        "wrong size"
    );
    assert!(m.free_frames(PhysAddr::new(0x1234), 1024).is_err());
    let (x, y) = (m.alloc_frames(1024).unwrap(), m.alloc_frames(1024).unwrap());
    assert_ne!(x, y, "one block, one owner");
}

/// Regression: zeroing a new block computed `pa + size`, which overflowed
/// (a debug panic) for the block that ends at 4 GiB.
#[test]
fn frames_at_the_top_of_the_address_space() {
    let mut cfg = presets::arm926ejs().config;
    cfg.regions.push(MemoryRegion {
        base: PhysAddr::new(0xFFFF_F000),
        size: 0x1000,
        kind: MemoryKind::Ram,
        latency: 0,
    });
    let mut m = Machine::new(cfg).unwrap();
    m.set_frame_pool(PhysAddr::new(0xFFFF_F000), 0x1000)
        .unwrap();
    let last = (0..4).map(|_| m.alloc_frames(1024).unwrap()).last();
    assert_eq!(last, Some(PhysAddr::new(0xFFFF_FC00)));
}

/// Regression: `CacheConfig::lines`/`sets` divided by public fields (zero
/// line or ways panicked); a D-cache line shorter than the 32 bytes the
/// machine reports as `DCACHE_LINE` let range cleans skip lines; a huge cache
/// was allocated as asked.
#[test]
fn cache_geometry_is_checked() {
    let zero = CacheConfig {
        size: 4096,
        ways: 0,
        line: 0,
        replacement: Replacement::Lru,
    };
    assert_eq!((zero.lines(), zero.sets()), (None, None));
    let c = CacheConfig { line: 32, ..zero };
    assert_eq!((c.lines(), c.sets()), (Some(128), None));
    let mut cfg = presets::arm926ejs().config;
    cfg.dcache.line = 16;
    assert_eq!(
        Machine::new(cfg.clone()).unwrap_err(),
        ConfigError::DcacheLineTooShort { line: 16 }
    );
    cfg.dcache.line = 32;
    cfg.icache.size = 1 << 30;
    assert_eq!(
        Machine::new(cfg).unwrap_err(),
        ConfigError::CacheTooLarge {
            side: CacheSide::Instruction,
            size: 1 << 30
        }
    );
}

/// Regression: the cost model multiplied and added public fields without
/// bounds (an overflow panic in debug builds).
#[test]
fn the_cost_model_saturates() {
    let mut cost: CostModel = presets::arm926ejs().cost;
    cost.access = u64::MAX;
    cost.fault = u64::MAX;
    let mut c = Counters {
        d_reads: u64::MAX,
        i_fetches: 2,
        bus_cycles: u64::MAX,
        ..Counters::default()
    };
    c.faults = [u64::MAX; 16];
    assert_eq!(c.accesses(), u64::MAX);
    assert_eq!(c.total_faults(), u64::MAX);
    assert_eq!(cost.cycles(&c), u64::MAX);
}

fn cache() -> impl Strategy<Value = CacheConfig> {
    (
        prop_oneof![Just(0u32), 0u32..1 << 16, Just(1 << 31), any::<u32>()],
        prop_oneof![Just(0u32), 0u32..64, any::<u32>()],
        prop_oneof![Just(0u32), 0u32..512, any::<u32>()],
    )
        .prop_map(|(size, ways, line)| CacheConfig {
            size,
            ways,
            line,
            replacement: Replacement::RoundRobin,
        })
}

fn tlb() -> impl Strategy<Value = TlbConfig> {
    prop_oneof![Just(0u32), 0u32..8192, any::<u32>()].prop_map(|entries| TlbConfig {
        entries,
        replacement: TlbReplacement::Random,
    })
}

proptest! {
    #![proptest_config(proptest_config(256))]

    /// Any configuration builds a machine or gives a typed error; a machine
    /// that builds can be used. Regions stay small so the property runs fast.
    #[test]
    fn any_configuration_builds_or_is_refused(
        icache in cache(),
        dcache in cache(),
        itlb in tlb(),
        dtlb in tlb(),
        split in any::<bool>(),
        pid_max in any::<u8>(),
        regions in prop::collection::vec((any::<u32>(), 0u32..0x4000), 0..3),
    ) {
        let mut cfg = presets::arm926ejs().config;
        cfg.icache = icache;
        cfg.dcache = dcache;
        cfg.tlb = if split { TlbLayout::Split { itlb, dtlb } } else { TlbLayout::Unified(itlb) };
        cfg.fcse_pid_max = pid_max;
        cfg.regions = regions
            .into_iter()
            .map(|(base, size)| MemoryRegion { base: PhysAddr::new(base), size, kind: MemoryKind::Ram, latency: 1 })
            .collect();
        if let Ok(mut m) = Machine::new(cfg) {
            let r = m.regions().next();
            if let Some(r) = r {
                let _ = m.set_frame_pool(r.base, r.size);
                let _ = m.alloc_frames(1024);
            }
            m.set_sctlr(Sctlr::from_bits(armv5_sim::sctlr::M | armv5_sim::sctlr::C));
            let _ = m.load(mmu_armv5::VirtAddr::new(0), armv5_sim::Width::Word, armv5_sim::Privilege::User);
        }
    }
}
