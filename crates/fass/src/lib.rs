//! Fast Address-Space Switching (FASS) for ARMv4/ARMv5.
//!
//! ARMv5 caches are virtually indexed and virtually tagged and its TLB has
//! no address-space identifiers, so a naive kernel cleans and invalidates
//! every cache and the TLB on each context switch. This crate implements the
//! two mechanisms that avoid it (see [Sources](#sources)):
//!
//! * FCSE PIDs: every address below 32 MiB is relocated into a per-process
//!   32 MiB window ([`pid`]), so the caches never see two processes at the
//!   same modified virtual address;
//! * domains as address-space tags: one first-level table (the caching page
//!   directory) holds entries of several address spaces, each tagged with
//!   its owner's domain; a switch reloads the DACR ([`domain`], [`policy`]).
//!
//! When the 15 free domains run out, one is recycled from a space that is
//! not running. The published implementations (Wiggins et al.) flush the
//! caches whenever the recycled domain is dirty (its owner ran since the
//! last flush), which in a ring of more than 15 spaces means a full flush
//! about every 15 switches. This
//! crate's default [`RecycleRule::ExclusiveWindows`] skips that flush for a
//! *window-exclusive* space: one whose mappings all lie inside its own
//! 32 MiB FCSE window, at a PID no other space holds. Its lines are tagged
//! with MVAs of that window only, which no other space reaches through its
//! own (relocated) addresses; the only other ways in (a fixed page of
//! another space inside that window, a later space given the same PID, the
//! space's frames being reused after it is destroyed) flush first, guided
//! by a per-window record of the lines left behind ([`window`]), which any
//! full flush clears. [`RecycleRule::Conservative`] keeps the published rule;
//! the `policy_table` example compares both on the model.
//!
//! It also implements the two strategies FASS is measured against (per-space
//! tables with FCSE PIDs, as the Linux FCSE patch; and a naive full flush),
//! all behind one trait, [`SwitchStrategy`], each with a precomputed
//! ("lean") switch per space for the context-switch path ([`lean`]).
//!
//! Module map:
//! * [`id`]: identifiers of address spaces and shared segments;
//! * [`layout`]: the validated virtual address-space layout;
//! * [`kernel_table`]: the kernel's first-level table, checked and vouched for;
//! * [`platform`]: the CPU + table memory every operation runs on;
//! * [`pid`]: the FCSE PID allocator, guaranteed and best-effort modes, and
//!   its flush decisions;
//! * [`slots`]: a set of first-level (1 MiB) slots with O(members) iteration;
//! * [`domain`]: the domain table: owners, dirty mask, CPD slot ownership;
//! * [`policy`]: victim choice when domains run out;
//! * [`stats`]: event counters;
//! * [`space`]: an address space's compact page directory;
//! * [`segment`]: shared segments (definitions, validation, sharers);
//! * [`cpd`]: the caching page directory the hardware walks;
//! * [`manager`]: the FASS manager [`Fass`]: spaces, segments, domains,
//!   PIDs; create, destroy, map, unmap; the [`RecycleRule`];
//! * [`classic`]: the per-space-table strategies [`TableSwitch`] (FCSE-only
//!   and naive);
//! * [`copy`]: copies between address spaces (long IPC), per strategy;
//! * [`switch`]: the [`SwitchStrategy`] trait and the three switch paths;
//! * [`lean`]: the precomputed switches every strategy keeps per space;
//! * [`resolve`]: FASS fault resolution (CPD fills, collisions, the window
//!   guard);
//! * [`window`]: per FCSE window, the lines recycled domains left in the
//!   caches;
//! * [`error`]: the error type.
//!
//! Everything is `no_std`, allocation-free and generic over the
//! `mmu-armv5` traits, so the same code drives real CP15 registers, the
//! recording mock and the `armv5-sim` model.
//!
//! # Sources
//! * A. Wiggins, H. Tuch, V. Uhlig, G. Heiser, "Implementation of Fast
//!   Address-Space Switching and TLB Sharing on the StrongARM Processor",
//!   ACSAC 2003: FASS in L4 and Linux, domains as address-space tags, and
//!   the conservative recycling rule;
//! * G. Heiser, "Caches: What Every OS Designer Must Know", COMP9242
//!   lecture slides, UNSW, 2008: virtually indexed, virtually tagged
//!   caches, FCSE PID relocation and domains for fast address-space
//!   switching;
//! * G. Chanteperdrix, R. Cochran, "The ARM Fast Context Switch Extension
//!   for Linux", Real Time Linux Workshop 2009: per-process tables with
//!   FCSE PIDs, the strategy of [`TableSwitch`]'s FCSE mode.
//!
//! # Safety model
//! The strategies write the translation registers (TTBR, DACR, FCSEIDR)
//! and the live first-level table from safe methods. What makes that sound
//! is checked where it can be and promised once where it cannot:
//!
//! * checked: the [`Layout`] keeps the kernel (and the shared region) out
//!   of the FCSE-relocated 32 MiB, so no FCSEIDR write moves the kernel;
//!   the kernel's table maps something, only inside the kernel region, only
//!   in the kernel's domain ([`KernelTable::new`]); every table a classic
//!   strategy loads is built with the kernel's entries copied in; every
//!   DACR FASS writes keeps the kernel's domain open; the live table (the
//!   CPD) is written by this crate only ([`Cpd`]'s writers are private);
//! * promised, by calling an `unsafe` function with a `# Safety` section:
//!   that the kernel table maps all memory the kernel uses and is the table
//!   the CPU walks ([`KernelTable::new`], in the style of `x86_64`'s
//!   `OffsetPageTable::new`); that a pinned CPD stays put ([`Cpd::pin`]);
//!   that the CPU already runs a space whose registers the kernel wrote
//!   itself ([`Fass::note_switched`]).
//!
//! Every strategy is built from a [`KernelTable`], so every safe register
//! write rests on that one promise; a [`KernelTable`] is `Copy`, and one
//! vouch covers any number of strategies used one at a time, with
//! [`KernelTable::hand_over`] between two. Host tests make it too, one `unsafe`
//! block per fixture: no backend gets a safe way around it. A marker trait
//! for backends whose register writes cannot reach the host's memory
//! (`MockCp15`, the `armv5-sim` model) was considered and left out: a
//! strategy is not tied to the backend it is later driven with (each call
//! takes its platform), so a strategy built on such a safe path could then
//! drive `HwCp15` with nothing promised; tying them would put a backend
//! type parameter on every strategy and a `fass` trait on the model crate,
//! to save one `unsafe` line per test fixture.
//!
//! ```
//! use fass::{Cpd, DefaultPolicy, DomainSet, Fass, KernelTable, Layout, Resolution, SpaceId, Split, SwitchStrategy};
//! use mmu_armv5::descriptor::{AccessPermission, CachePolicy, L1Encoding};
//! use mmu_armv5::maint::Arm926;
//! use mmu_armv5::regs::{Cp15Event, Cp15Reg, Far, Fsr, MockCp15};
//! use mmu_armv5::size::{Frame, PageRange, PageSizeKind};
//! use mmu_armv5::table::{MapAttrs, PageTable, PoolBlock, SizePolicy, TablePool};
//! use mmu_armv5::{Domain, ModifiedVirtAddr, PhysAddr, VirtAddr};
//!
//! // Table memory and a recording ARM926EJ-S, joined into one platform.
//! let mut mem = Box::new([PoolBlock::ZERO; 8]);
//! let pool = TablePool::new(&mut *mem, PhysAddr::new(0x0100_0000), ModifiedVirtAddr::new(0xC100_0000)).unwrap();
//! let mut sys = Split::new(Arm926::new(MockCp15::arm926()), pool);
//! // The kernel's table (the boot first-level table, loaded in the TTBR for
//! // good): here one section of kernel RAM at 3 GiB, in the kernel's domain.
//! let kernel = Domain::new(0).unwrap();
//! let mut kt = PageTable::new(&mut sys).unwrap();
//! let ram = MapAttrs::new(kernel, AccessPermission::PrivRw, CachePolicy::WriteBack);
//! let section = SizePolicy::Exactly(PageSizeKind::Section);
//! kt.map(&mut sys, ModifiedVirtAddr::new(0xC000_0000), PhysAddr::new(0), 1 << 20, ram, section)
//!     .unwrap()
//!     .flush_on(&mut sys);
//! // SAFETY: `MockCp15` only records register writes; on hardware this is
//! // the promise that the table maps all the kernel uses and is the one the
//! // CPU walks (see `KernelTable::new`).
//! let table = unsafe { KernelTable::new(&sys, kt.root(), L1Encoding::Arm9, &Layout::DEMO, kernel) }.unwrap();
//! // The CPD is that table.
//! let mut fass: Fass<DefaultPolicy, 8, 8, 4> =
//!     Fass::new(Cpd::new(table), DomainSet::EMPTY, DefaultPolicy::default()).unwrap();
//!
//! let a = SpaceId(1);
//! fass.add_space(a).unwrap();
//! let pages = PageRange::from_bytes(VirtAddr::new(0x8000), 0x2000).unwrap(); // two 4 KiB pages
//! let frame = Frame::from_start(PhysAddr::new(0x0030_0000)).unwrap(); // the first of two frames
//! fass.map_pages(&mut sys, a, pages, frame, AccessPermission::ReadWrite, CachePolicy::WriteBack).unwrap();
//! fass.switch_to(&mut sys, a).unwrap();
//! // The first access faults (empty CPD slot); resolving fills the slot.
//! let r = fass.resolve(&mut sys, Fsr::from_bits(0x005), Far::from_bits(0x8000)).unwrap();
//! assert!(matches!(r, Resolution::Resolved { .. }));
//!
//! // Switching back to `a` after another space costs one DACR and one FCSEIDR write.
//! fass.add_space(SpaceId(2)).unwrap();
//! fass.switch_to(&mut sys, SpaceId(2)).unwrap();
//! sys.hw.cp15_mut().clear();
//! fass.switch_to(&mut sys, a).unwrap();
//! let d = fass.domain_of(a).unwrap().unwrap();
//! assert_eq!(
//!     sys.hw.cp15().events(),
//!     [
//!         Cp15Event::Write(Cp15Reg::Dacr, fass.dacr_of(a, d).unwrap().bits()),
//!         Cp15Event::Write(Cp15Reg::Fcseidr, fass.pid_of(a).unwrap().fcseidr_value()),
//!     ]
//! );
//! ```
#![no_std]
// docs.rs (`--cfg docsrs`): badges naming the feature or target an item needs.
#![cfg_attr(docsrs, feature(doc_cfg))]
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(missing_docs)]
#![deny(clippy::undocumented_unsafe_blocks)]

#[cfg(test)]
extern crate std;

/// The property tests' configuration: proptest's defaults natively; under
/// Miri a few cases each, no failure file (Miri isolates the file system)
/// and the XorShift generator (interpreted, the default ChaCha generator
/// costs ten times what the code under test does).
#[cfg(test)]
pub(crate) fn proptest_config() -> proptest::test_runner::Config {
    if cfg!(miri) {
        proptest::test_runner::Config {
            cases: 4,
            failure_persistence: None,
            rng_algorithm: proptest::test_runner::RngAlgorithm::XorShift,
            ..proptest::test_runner::Config::default()
        }
    } else {
        proptest::test_runner::Config::default()
    }
}

pub mod classic;
pub mod copy;
pub mod cpd;
pub mod domain;
pub mod error;
pub mod id;
pub mod kernel_table;
pub mod layout;
pub mod lean;
pub mod lookup;
pub mod manager;
#[cfg(feature = "cache-check")]
pub mod omit;
pub mod pid;
pub mod platform;
pub mod policy;
pub mod resolve;
pub mod segment;
pub mod slots;
pub mod space;
pub mod stats;
pub mod switch;
pub mod window;

pub use classic::{ClassicKind, TableSwitch};
pub use copy::{CopyEnd, CopyError, CopyFault, CopyMemory, CopyPath, MAX_COPY_LEN};
pub use cpd::Cpd;
pub use domain::{DomainError, DomainOwner, DomainSet, DomainTable};
pub use error::FassError;
pub use id::{SegmentId, SpaceId};
pub use kernel_table::{KernelTable, KernelTableError};
pub use layout::{Layout, LayoutError, Region, RegionKind};
pub use lean::{AppliedLean, LeanKind, LeanSwitch, Maintenance, StaleSwitch};
pub use lookup::{PageLines, PageMapping};
pub use manager::{Fass, RecycleRule};
pub use pid::{
    FlushDecision, FlushReasons, FlushTicket, PidAllocator, PidContext, PidError, PidMode,
};
pub use platform::{Platform, Split};
pub use policy::{DefaultPolicy, VictimPolicy};
pub use resolve::{Flushed, Resolution};
pub use segment::{SegmentAccess, SegmentError, SegmentSpec};
pub use stats::{Event, FastFaults, Stats};
pub use switch::SwitchStrategy;
pub use window::{Leftover, WindowLines};

/// The README's examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
