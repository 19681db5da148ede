//! Tightly-coupled memory (scratch-pad) management for ARMv5.
//!
//! After the TCM design of Daniel Molka's Fiasco thesis (seed 003), with a
//! far smaller frame description and an exchange that never keeps interrupts
//! off for a whole page copy:
//!
//! * [`region`]: physical regions with a fixed location (RAM, ITCM, DTCM,
//!   device) and maximum rights;
//! * [`frame`]: the frame table, two bytes per 4 KiB frame plus four bytes per
//!   1 MiB, over caller-provided storage;
//! * [`tcm`]: ARM926EJ-S TCM discovery (c0,c0,2 and c9,c1,x) and placement,
//!   or a board-described region when the CPU reports none (QEMU);
//! * [`ops`]: create, delete and change pages, with the thesis's permission rules;
//! * [`mappings`], [`irq`], [`phys`]: what the kernel provides (reverse
//!   mappings, interrupt masking, physical memory access);
//! * [`exchange`]: the resumable page exchange.
//!
//! `no_std`, no allocator.
#![no_std]
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(missing_docs)]
#![deny(clippy::undocumented_unsafe_blocks)]

#[cfg(test)]
extern crate std;

pub mod exchange;
pub mod frame;
pub mod irq;
pub mod mappings;
pub mod ops;
pub mod phys;
pub mod region;
pub mod tcm;

#[cfg(test)]
mod testkit;
#[cfg(test)]
mod tests;

pub use exchange::{Exchange, ExchangeError, ExchangeRequest, ExchangeStats, Progress};
pub use frame::{
    FrameDesc, FrameError, FrameState, FrameTable, KernelUse, SectionSummary, SpaceId,
};
pub use irq::InterruptControl;
pub use mappings::{AddressSpace, Mapping, Mappings, PageSize, Translation};
pub use ops::{OpError, StateRequest};
pub use phys::PhysMemory;
pub use region::{InitialUse, Location, Region, RegionError, Rights, FRAME_SIZE, SECTION_SIZE};
pub use tcm::{TcmBank, TcmError, TcmKind, TcmLayout};
