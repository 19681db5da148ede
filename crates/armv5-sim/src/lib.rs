//! A host model of the ARMv5 memory system: MMU table walk, TLBs without
//! address-space tags, virtually indexed and tagged I and D caches, write
//! buffer drains, CP15 state, and a cost model with sourced CPU presets.
//!
//! QEMU models no caches; this crate is the project's model of that
//! hardware. The [`Machine`] implements `mmu-armv5`'s
//! [`Cp15`](mmu_armv5::regs::Cp15),
//! [`CacheMaintenance`](mmu_armv5::maint::CacheMaintenance) and
//! [`TableAlloc`](mmu_armv5::table::TableAlloc) traits (and so does
//! `&mut Machine`), so code written against them runs on it unchanged, while
//! a test interleaves that code with [`Machine::load`], [`Machine::store`]
//! and [`Machine::fetch`] as the current process.
//!
//! ```
//! use armv5_sim::{encode, presets, Machine, Privilege, MemoryRegion, MemoryKind, Width};
//! use mmu_armv5::regs::{Dacr, Sctlr, Ttbr};
//! use mmu_armv5::{PhysAddr, VirtAddr};
//!
//! let mut cfg = presets::sa1100().config;
//! cfg.regions.push(MemoryRegion { base: PhysAddr::new(0), size: 4 << 20, kind: MemoryKind::Ram, latency: 0 });
//! let mut m = Machine::new(cfg).unwrap();
//! m.set_frame_pool(PhysAddr::new(1 << 20), 1 << 20).unwrap();
//! let root = m.alloc_frames(16 << 10).unwrap();
//! let l1 = root.as_u32();
//! // VA 0x0010_0000 -> PA 0x0020_0000, a write-back section in domain 0.
//! let entry = encode::l1_entry_addr(l1, 0x0010_0000);
//! m.phys_write(PhysAddr::new(entry), Width::Word, encode::section(0x0020_0000, 3, 0, true, true)).unwrap();
//! m.set_ttbr(Ttbr::new(root).unwrap());
//! m.set_dacr(Dacr::ALL_CLIENT);
//! m.set_sctlr(Sctlr::from_bits(0).with_mmu(true).with_dcache(true).with_icache(true));
//! let va = VirtAddr::new(0x0010_0040);
//! // A read miss fills the line; no write-allocate, so read first.
//! assert_eq!(m.load(va, Width::Word, Privilege::User), Ok(0));
//! m.store(va, Width::Word, 7, Privilege::User).unwrap();
//! assert_eq!(m.load(va, Width::Word, Privilege::User), Ok(7));
//! // Write-back: memory still holds the old value until a clean.
//! assert_eq!(m.phys_read(PhysAddr::new(0x0020_0040), Width::Word), Ok(0));
//! m.clean_dcache_all();
//! assert_eq!(m.phys_read(PhysAddr::new(0x0020_0040), Width::Word), Ok(7));
//! ```
//!
//! Module map: [`config`] (geometry, regions), `memory` (backing store),
//! [`walk`] (the table walk), [`protection`] (domain and AP checks), `tlb`,
//! `cache`, [`cp15`] (register and maintenance effects), `frames` (frame pool
//! and `TableAlloc`), [`counters`], [`cost`], [`presets`], [`replay`],
//! [`encode`] (raw descriptors for tests), [`coherence`] (a checker that
//! replays a real guest's accesses, traced by QEMU, through a version model
//! of these caches and TLBs and reports where the hardware would differ).
//!
//! Deviations from hardware, all deliberate: TLBs are fully associative (the
//! ARM926EJ-S main TLB is 2-way with lockdown) and there are no micro-TLBs or
//! mini-data-caches; write-buffer contents are not modelled (a drain is
//! counted); with the MMU off, accesses use `pa = mva` and only the I-cache
//! caches; one dirty bit per line.
// docs.rs (`--cfg docsrs`): badges naming the feature or target an item needs.
#![cfg_attr(docsrs, feature(doc_cfg))]
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(missing_docs)]
#![deny(clippy::undocumented_unsafe_blocks)]

mod cache;
pub mod coherence;
pub mod config;
pub mod cost;
pub mod counters;
pub mod cp15;
pub mod encode;
pub mod error;
mod frames;
mod machine;
mod memory;
pub mod presets;
pub mod protection;
pub mod replay;
mod rng;
mod tlb;
pub mod walk;

pub use config::{
    CacheConfig, Config, MemoryKind, MemoryRegion, Replacement, TlbConfig, TlbLayout,
    TlbReplacement, MAX_CACHE_SIZE, MIN_DCACHE_LINE,
};
pub use cost::{CostBreakdown, CostModel};
pub use counters::Counters;
pub use cp15::sctlr;
pub use error::{CacheSide, ConfigError, MemError};
pub use machine::{Machine, Probe};
pub use memory::Width;
pub use protection::{AccessKind, Privilege};
pub use walk::TlbEntry;

/// The README's examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
