//! Tightly-coupled memory (scratch-pad) management for ARMv5.
//!
//! After the TCM design of D. Molka, "Support for on-chip memory in Fiasco",
//! Großer Beleg (student research thesis), TU Dresden, 2007, with a far
//! smaller frame description and an exchange that never keeps interrupts off
//! for a whole page copy.
//!
//! # Module map
//!
//! | module | job |
//! |---|---|
//! | [`region`] | physical regions with a fixed location (RAM, ITCM, DTCM, device) and maximum rights |
//! | [`frame`] | the frame table: two bytes per 4 KiB frame plus four bytes per 1 MiB, over caller-provided storage |
//! | [`tcm`] | TCM discovery and placement through `mmu_armv5`'s typed `TcmStatus`/`TcmRegion` (c9 is never touched for a TCM the status register does not report), or a board-described TCM (QEMU); [`tcm::plan`] decides per kind between the CPU's TCM (kept or placed at a board base) and the board's emulated bank, [`tcm::apply`] carries the plan out |
//! | [`ops`] | create, delete and change pages, with the thesis's permission rules; a resource is zeroed before it becomes a user page |
//! | [`mappings`] | what the kernel provides: reverse mappings and page-table changes ([`Mappings`]) |
//! | [`irq`] | what the kernel provides: interrupt masking ([`InterruptControl`]) |
//! | [`phys`] | what the kernel provides: physical copies and zeroing ([`PhysMemory`]) |
//! | [`lines`] | what the kernel provides: cache maintenance over a range of lines ([`LineMaintenance`], per-line defaults) |
//! | [`exchange`] | the resumable page exchange with bounded interrupts-off windows |
//! | [`tables`] | ready-made [`Mappings`] over `mmu-armv5` page tables ([`TableMappings`]) |
//! | `fass_spaces` | (cargo feature `fass`) ready-made [`Mappings`] over the address spaces of any `fass` switch strategy (`Fass`, `TableSwitch` naive or with FCSE PIDs) and the kernel's own table (`SpaceMappings`, alias `FassMappings`) |
//! | [`hw`] | ready-made hardware side: [`Hw`] (CPU + [`PhysMemory`]), [`SharedCpu`], [`PhysWindows`], [`CpsrIrq`], [`RecordingIrq`] |
//!
//! Page sizes are `mmu_armv5`'s [`PageSizeKind`](mmu_armv5::size::PageSizeKind)
//! (like the addresses, not re-exported): 4 KiB, 64 KiB and 1 MiB pages are
//! exchanged; 1 KiB tiny pages are refused with [`OpError::TinyPage`] and
//! [`ExchangeError::TinyPage`].
//!
//! # Example
//!
//! A board whose CPU reports no TCM (QEMU's `arm926`) describes one; the
//! frame table then covers RAM and that TCM, and every TCM frame starts as a
//! page resource that a task may exchange its pages into.
//!
//! ```
//! use mmu_armv5::{regs::MockCp15, PhysAddr};
//! use spm::tcm::{self, TcmBank, TcmKind, TcmLayout};
//! use spm::{FrameDesc, FrameState, FrameTable, InitialUse, Location, PhysRegion, SectionSummary};
//!
//! let cpu = MockCp15::new(); // TCM status reads 0: no TCM
//! let board = TcmLayout {
//!     itcm: None,
//!     dtcm: Some(TcmBank::board(TcmKind::Data, PhysAddr::new(0x0300_0000), 32 << 10)?),
//! };
//! let layout = tcm::discover(&cpu)?.or_board(board);
//! let dtcm = layout.dtcm.unwrap().region()?;
//! let ram = PhysRegion::new(PhysAddr::new(0), 1 << 20, Location::Ram, InitialUse::Resource)?;
//! let regions = [ram, dtcm];
//!
//! let mut frames = [FrameDesc::default(); 256 + 8];
//! let mut sections = [SectionSummary::default(); 2];
//! assert_eq!(FrameTable::<2>::frames_needed(&regions), frames.len());
//! let table = FrameTable::<2>::new(&regions, &mut frames, &mut sections)?;
//! assert_eq!(table.desc(PhysAddr::new(0x0300_1000))?.state(), FrameState::Resource);
//! assert_eq!(table.region_of(PhysAddr::new(0x0300_1000))?.location(), Location::Dtcm);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Adopting `spm` in a kernel with `mmu-armv5` page tables
//!
//! An exchange needs the kernel's page tables, CPU, physical memory and
//! interrupt mask. With tables kept as [`mmu_armv5::table::PageTable`]s the
//! crate provides all four: [`TableMappings`] (the [`Mappings`] over those
//! tables), [`Hw`] (the CPU joined with [`PhysMemory`]), [`PhysWindows`]
//! (physical memory through the kernel's uncached mappings) and
//! [`CpsrIrq`] ([`RecordingIrq`] on the host), with [`SharedCpu`] letting
//! the mappings and the hardware use one CPU value. Here a task's page moves
//! into DTCM. The first block stands for what the kernel has already
//! (table memory, its page table with the task's page and a kernel window
//! on the DTCM, its CPU, physical memory: host buffers here, 16 lines).
//! The adoption itself, from `use spm` to `ex.run`, is **38 lines: 25 of
//! code**, the rest comments (the `SAFETY` ones among them) and blank
//! lines; the checks after it are 7 more.
//!
//! ```
//! use mmu_armv5::descriptor::{AccessPermission, CachePolicy};
//! use mmu_armv5::maint::Arm926;
//! use mmu_armv5::regs::MockCp15;
//! use mmu_armv5::table::{MapAttrs, PageTable, PoolBlock, SizePolicy, TablePool};
//! use mmu_armv5::{Domain, FcsePid, ModifiedVirtAddr as Mva, PhysAddr as Pa, VirtAddr as Va};
//! // What the kernel has already.
//! let mut mem = Box::new([PoolBlock::ZERO; 2]);
//! let mut pool = TablePool::new(&mut *mem, Pa::new(0x0100_0000), Mva::new(0xC100_0000))?;
//! let mut pt = PageTable::new(&mut pool)?; // the kernel at PID 0, task 1 at PID 1
//! let mut cpu = Arm926::new(MockCp15::arm926());
//! let attrs = |ap| MapAttrs::new(Domain::from_low_bits(0), ap, CachePolicy::WriteBack);
//! let (task_va, rw, kernel_rw) = (Va::new(0x8000), AccessPermission::ReadWrite, AccessPermission::PrivRw);
//! pt.map(&mut pool, task_va.to_mva(FcsePid::new(1)?), Pa::new(0x5000), 4096, attrs(rw), SizePolicy::Largest)?.flush(&mut cpu, &mut pool);
//! pt.map(&mut pool, Mva::new(0xC300_0000), Pa::new(0x0300_0000), 4096, attrs(kernel_rw), SizePolicy::Largest)?.flush(&mut cpu, &mut pool);
//! let (mut ram, mut dtcm) = (vec![0u8; 64 << 10], vec![0u8; 32 << 10]);
//! ram[0x5123] = 42;
//!
//! use spm::AddressSpace::{Kernel, User};
//! use spm::{exchange::DEFAULT_CHUNK, Exchange, ExchangeRequest, FrameDesc, FrameState, FrameTable, Hw};
//! use mmu_armv5::size::{Frame, PageSizeKind};
//! use spm::{InitialUse, Location, PhysRegion, PhysWindows, RecordingIrq, Rights};
//! use spm::{SectionSummary, SharedCpu, SpaceId, TableMappings};
//!
//! // 1. The frame table: the task's page in RAM, the DTCM's frames page resources.
//! let regions = [
//!     PhysRegion::new(Pa::new(0), 64 << 10, Location::Ram, InitialUse::Kernel)?,
//!     PhysRegion::new(Pa::new(0x0300_0000), 32 << 10, Location::Dtcm, InitialUse::Resource)?,
//! ];
//! let (mut frames, mut sections) = ([FrameDesc::default(); 16 + 8], [SectionSummary::default(); 2]);
//! let mut table = FrameTable::<2>::new(&regions, &mut frames, &mut sections)?;
//! let task = SpaceId(1);
//! table.init_range(Frame::from_start(Pa::new(0x5000))?, FrameState::User(task), true)?;
//!
//! // 2. The mappings: every space with its FCSE PID and its table (here one for both);
//! // they clean the table lines they write with the CPU, which the exchange needs too.
//! let cpu = core::cell::RefCell::new(cpu);
//! let mut maps = TableMappings::<_, _, 2>::new(&mut pool, SharedCpu(&cpu));
//! maps.add(Kernel, FcsePid::ZERO, &mut pt)?;
//! maps.add_sharing(User(task), FcsePid::new(1)?, Kernel)?;
//!
//! // 3. The hardware: the CPU joined with physical memory; interrupts (`CpsrIrq` on the target).
//! let mut phys = PhysWindows::<2>::new();
//! // SAFETY: each buffer stands for its physical range and is reached only through `phys`.
//! unsafe { phys.add(Pa::new(0), 64 << 10, ram.as_mut_ptr()) }?;
//! // SAFETY: as above.
//! unsafe { phys.add(Pa::new(0x0300_0000), 32 << 10, dtcm.as_mut_ptr()) }?;
//! let (mut hw, mut irq) = (Hw::new(SharedCpu(&cpu), phys), RecordingIrq::new());
//!
//! // 4. Move the task's page into the DTCM frame the kernel maps at 0xC300_0000.
//! let req = ExchangeRequest { caller: Kernel, target_space: User(task), target: task_va, resource_space: Kernel,
//!     resource: Va::new(0xC300_0000), size: PageSizeKind::Small, count: 1, rights: Rights::RW };
//! let mut ex = Exchange::begin(&mut table, &maps, req, DEFAULT_CHUNK)?;
//! // SAFETY: the frame table, the page table and `hw` describe one machine and nothing else
//! // reaches the two frames.
//! unsafe { ex.run(&mut table, &mut maps, &mut hw, &mut irq) }?;
//!
//! // The task's address now leads to DTCM, still writable, with the content.
//! use spm::Mappings;
//! let t = maps.translate(User(task), Va::new(0x8123)).unwrap();
//! assert_eq!((t.page, t.writable), (Pa::new(0x0300_0000), true));
//! let mut byte = [0];
//! hw.phys.read(Pa::new(0x0300_0123), &mut byte)?;
//! assert_eq!(byte, [42]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! `tests/common/mod.rs` is a fuller kernel over the `armv5-sim` model,
//! and `examples/overhead.rs` measures the exchange on it.
//!
//! # Adopting `spm` in a kernel with `fass` address spaces
//! With the cargo feature `fass`, `spm::SpaceMappings` is the
//! [`Mappings`] over the spaces of any `fass` switch strategy (`Fass`,
//! `TableSwitch` in both kinds) plus the kernel's own `PageTable`: step 2
//! above becomes `SpaceMappings::new(&mut strategy, &mut platform)
//! .with_kernel(&mut kernel_table)`, and the rest is unchanged. Its module
//! docs move a task's page into DTCM and back in that way, the round trip
//! as one call sequence (a doctest run with `cargo test -p spm --features
//! fass`); `tests/strategies.rs` runs it on the `armv5-sim` model for each
//! strategy.
//!
//! # What is `unsafe`, and why there
//! `spm` owns no page tables and no memory: it acts on what the kernel
//! tells it. Three kinds of claims make its actions sound, and `spm` can
//! check none of them: that the frame table is true (a page resource holds
//! nothing anyone needs; no frame it moves is memory the program reaches
//! through Rust references), that [`Mappings`] reports every mapping of a
//! frame as the MMU walks it, and that the hardware handed in is the CPU
//! those mappings are used on. Decided per operation:
//!
//! * **`unsafe fn`** where `spm` writes memory or hardware state on the
//!   strength of those claims: [`Exchange::step`], [`Exchange::run`],
//!   [`Exchange::finish_page`] and [`Exchange::cancel`] (they copy into page
//!   resources, discard their cache lines, rewrite page-table entries, and
//!   load the translation table base when a page directory moves), and
//!   [`ops::change_state`] / [`ops::create_user_page`] (they zero a page
//!   resource after discarding its cache lines). Each `# Safety` section
//!   names the claims; the caller states them once per call site.
//! * **Safe** where `spm` only reads or keeps its own books:
//!   [`Exchange::begin`] (marks busy flags), [`ops::query_state`],
//!   [`ops::delete_user_page`], the frame table itself.
//! * **The traits stay safe to implement** ([`Mappings`], [`PhysMemory`],
//!   [`LineMaintenance`], [`InterruptControl`]): an implementation is only
//!   trusted by the `unsafe` call that hands it in, and test doubles over a
//!   simulated machine need no `unsafe impl`. Making them `unsafe trait`s
//!   instead would leave the frame table's truth, which no trait
//!   implementation can vouch for, unaccounted.
//! * **The ready-made implementations** ([`hw`], [`tables`]) ask for a
//!   promise only where they reach something `spm` cannot check:
//!   [`PhysWindows::add`] (the pointer reaches that physical memory,
//!   uncached, and nothing else uses it) and [`CpsrIrq::new`] (the masks
//!   it restores end its own windows). [`TableMappings`] changes
//!   descriptors through the table API only; what it reports is what the
//!   tables it is given hold, and that those are every table the CPU
//!   walks stays the exchange caller's claim.
//!
//! Everything an exchange relied on in an earlier step is checked again at
//! every step (see [`exchange`]): a kernel that breaks the rules between
//! steps gets [`ExchangeError::Changed`], not a corrupted mapping.
//!
//! `no_std`, no allocator.
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
/// costs more than the code under test).
#[cfg(test)]
pub(crate) fn proptest_config() -> proptest::test_runner::Config {
    if cfg!(miri) {
        proptest::test_runner::Config {
            cases: 8,
            failure_persistence: None,
            rng_algorithm: proptest::test_runner::RngAlgorithm::XorShift,
            ..proptest::test_runner::Config::default()
        }
    } else {
        proptest::test_runner::Config::default()
    }
}

pub mod exchange;
#[cfg(feature = "fass")]
#[cfg_attr(docsrs, doc(cfg(feature = "fass")))]
pub mod fass_spaces;
pub mod frame;
pub mod hw;
pub mod irq;
pub mod lines;
pub mod mappings;
pub mod ops;
pub mod phys;
pub mod region;
pub mod tables;
pub mod tcm;
mod walk_memo;

#[cfg(test)]
mod testkit;
#[cfg(test)]
mod tests;

pub use exchange::{
    Exchange, ExchangeError, ExchangeRequest, ExchangeStats, Progress, MAX_SCATTERED,
};
#[cfg(feature = "fass")]
#[cfg_attr(docsrs, doc(cfg(feature = "fass")))]
pub use fass_spaces::{
    FassMappings, FassMappingsError, FrameIndex, SpaceMappings, SpaceMappingsError, SpaceTables,
    TableSwitchMappings, WalkTables,
};
pub use frame::{
    FrameDesc, FrameError, FrameState, FrameTable, KernelUse, SectionSummary, MAX_SPACE_ID,
};
pub use hw::{CpsrIrq, Hw, PhysError, PhysWindows, RecordingIrq, SharedCpu};
pub use irq::InterruptControl;
pub use lines::LineMaintenance;
pub use mappings::{AddressSpace, Mappings, ReverseMapping, Translation};
/// The name of an address space: `mmu-armv5`'s, the one `fass` uses too.
/// A frame records owners up to [`MAX_SPACE_ID`].
pub use mmu_armv5::SpaceId;
pub use ops::{OpError, StateRequest};
pub use phys::PhysMemory;
pub use region::{InitialUse, Location, PhysRegion, RegionError, Rights, FRAME_SIZE, SECTION_SIZE};
pub use tables::{TableEdit, TableMappings, TablesError, MAX_PROTECTED};
pub use tcm::{BoardTcm, PlannedBank, TcmBank, TcmError, TcmKind, TcmLayout, TcmPlan, TcmSource};

/// The README's examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
