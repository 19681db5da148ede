//! The memory-management layer of a small RTOS on an ARMv5 CPU
//! (ARM926EJ-S, XScale, StrongARM), built on `mmu-armv5`, `fass` and `spm`
//! from their documentation: what `docs/porting.md` in the repository
//! walks through, one step per module.
//!
//! | step | function | what |
//! |---|---|---|
//! | 1 | [`layout()`] | the virtual address-space layout (`fass::Layout`) |
//! | 2 | [`plan_tcm`], [`frame_table`] | TCM discovery and placement, the frame table |
//! | 3 | [`boot()`] | the kernel's table, vouched for, as the CPD of a [`Vm`] |
//! | 4 | [`spawn`] | an address space and its pages |
//! | 5 | [`switch`] | the scheduler's switch |
//! | 6 | [`data_abort`], [`prefetch_abort`] | abort handlers resolving FASS faults |
//! | 7 | [`dtcm_slot`], [`exchange_page`] | a task's page into DTCM and back |
//! | 8 | [`hand_over`] | a classic strategy (`TableSwitch`) from the same vouch |
//!
//! Every step is generic over the `mmu-armv5` traits: the host tests run
//! it on a recording `MockCp15` (`tests/steps.rs`), and on bare-metal ARM
//! [`hw`] runs it on `HwCp15`. The board is one value ([`Board`]); the
//! exchange uses `spm`'s ready-made adapters on the CPU and memory it
//! borrows (`&mut` references implement the crates' traits).
#![no_std]
#![deny(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]

pub mod abort;
pub mod board;
pub mod boot;
pub mod error;
pub mod exchange;
#[cfg(all(target_arch = "arm", target_os = "none"))]
pub mod hw;
pub mod layout;
pub mod process;
pub mod sched;
pub mod strategy;
pub mod tcm;

pub use abort::{data_abort, prefetch_abort, AbortAction};
pub use board::{Board, EXAMPLE, KERNEL_DOMAIN};
pub use boot::{boot, Vm, VECTORS_VA};
pub use error::Error;
pub use exchange::{dtcm_slot, exchange_page, DtcmSlot};
pub use layout::layout;
pub use process::spawn;
pub use sched::switch;
pub use strategy::{hand_over, Classic, CLASSIC_USER_DOMAIN};
pub use tcm::{frame_table, plan_tcm};

/// Address spaces the kernel runs at once (`fass::SpaceId(0)` to `(15)`).
pub const MAX_SPACES: usize = 16;
/// First-level (1 MiB) slots each space's directory holds.
pub const SPACE_SLOTS: usize = 8;
/// Shared segments.
pub const SEGMENTS: usize = 2;
/// 16 KiB blocks of table memory: the kernel's first-level table and every
/// second-level table (the kernel's and the spaces').
pub const POOL_BLOCKS: usize = 8;
/// Physical windows (`spm::PhysWindows`): the frames and the two TCM banks.
pub const PHYS_WINDOWS: usize = 3;
