//! Shared set-up for the integration tests: a machine with 8 MiB of RAM at
//! physical 0, a frame pool in its upper half, and raw table writes.
#![allow(dead_code)]

use armv5_sim::presets::Preset;
use armv5_sim::{encode, sctlr, Machine, MemoryKind, MemoryRegion, Width};
use mmu_armv5::regs::Dacr;
use mmu_armv5::regs::Sctlr;
use mmu_armv5::regs::Ttbr;
use mmu_armv5::PhysAddr;

pub const RAM_SIZE: u32 = 8 << 20;

pub fn machine(preset: Preset) -> Machine {
    let mut cfg = preset.config;
    cfg.regions.push(MemoryRegion {
        base: PhysAddr::new(0),
        size: RAM_SIZE,
        kind: MemoryKind::Ram,
        latency: 0,
    });
    let mut m = Machine::new(cfg).unwrap();
    m.set_frame_pool(PhysAddr::new(4 << 20), 4 << 20).unwrap();
    m
}

pub fn w(m: &mut Machine, pa: u32, word: u32) {
    m.phys_write(PhysAddr::new(pa), Width::Word, word).unwrap();
}

pub fn r(m: &Machine, pa: u32) -> u32 {
    m.phys_read(PhysAddr::new(pa), Width::Word).unwrap()
}

pub fn new_l1(m: &mut Machine) -> u32 {
    m.alloc_frames(16 << 10).unwrap().as_u32()
}

/// Writes first-level descriptor `desc` for the 1 MiB at `mva`.
pub fn map(m: &mut Machine, l1: u32, mva: u32, desc: u32) {
    w(m, encode::l1_entry_addr(l1, mva), desc);
}

/// MMU, D-cache and I-cache on, tables at `l1`, every domain client.
pub fn enable(m: &mut Machine, l1: u32) {
    m.set_ttbr(Ttbr::new(PhysAddr::new(l1)).unwrap());
    m.set_dacr(Dacr::ALL_CLIENT);
    m.set_sctlr(Sctlr::from_bits(sctlr::M | sctlr::C | sctlr::I));
}

/// Most proptest cases per property under Miri, which interprets every
/// access of the model (milliseconds each).
pub const MIRI_CASES: u32 = 8;

/// Proptest configuration: `cases` cases natively; under Miri at most
/// [`MIRI_CASES`], without failure persistence (Miri isolates file access),
/// with the XorShift generator.
pub fn proptest_config(cases: u32) -> proptest::test_runner::Config {
    proptest_config_with(cases, MIRI_CASES)
}

/// As [`proptest_config`], with `miri` cases under Miri.
pub fn proptest_config_with(cases: u32, miri: u32) -> proptest::test_runner::Config {
    if cfg!(miri) {
        proptest::test_runner::Config {
            cases: cases.min(miri),
            failure_persistence: None,
            // Interpreted, the default ChaCha generator costs more than
            // the code under test.
            rng_algorithm: proptest::test_runner::RngAlgorithm::XorShift,
            ..Default::default()
        }
    } else {
        proptest::test_runner::Config::with_cases(cases)
    }
}

/// `n` natively; under Miri `n / 10` (at least 1): loop counts of tests
/// that drive the model directly.
pub const fn scaled(n: u32) -> u32 {
    if cfg!(miri) {
        if n / 10 == 0 {
            1
        } else {
            n / 10
        }
    } else {
        n
    }
}
