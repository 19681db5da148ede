//! Fast Address-Space Switching (FASS) for ARMv4/ARMv5.
//!
//! ARMv5 caches are virtually indexed and virtually tagged and its TLB has
//! no address-space identifiers, so a naive kernel cleans and invalidates
//! every cache and the TLB on each context switch. This crate implements the
//! two mechanisms that avoid it (seeds 000, 001, 002 of the project):
//!
//! * FCSE PIDs: every address below 32 MiB is relocated into a per-process
//!   32 MiB window ([`pid`]), so the caches never see two processes at the
//!   same modified virtual address;
//! * domains as address-space tags: one first-level table (the caching page
//!   directory) holds entries of several address spaces, each tagged with
//!   its owner's domain; a switch reloads the DACR ([`domain`], [`policy`]).
//!
//! Modules:
//! * [`id`]: identifiers of address spaces and shared segments;
//! * [`layout`]: the validated virtual address-space layout;
//! * [`pid`]: the FCSE PID allocator, guaranteed and best-effort modes, and
//!   its flush decisions;
//! * [`slots`]: a set of first-level (1 MiB) slots with O(members) iteration;
//! * [`domain`]: the domain table: owners, dirty mask, CPD slot ownership;
//! * [`policy`]: victim choice when domains run out;
//! * [`stats`]: event counters;
//! * [`space`]: an address space's compact page directory;
//! * [`cpd`]: the caching page directory the hardware walks;
//! * [`switch`]: switching strategies, FASS state and page mapping;
//! * [`resolve`]: FASS fault resolution (CPD fills, collisions).
//!
//! Everything is `no_std`, allocation-free and generic over the
//! `mmu-armv5` traits, so the same code drives real CP15 registers, the
//! recording mock and the `armv5-sim` model.
#![no_std]
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(missing_docs)]
#![deny(clippy::undocumented_unsafe_blocks)]

#[cfg(test)]
extern crate std;

pub mod cpd;
pub mod domain;
pub mod id;
pub mod layout;
pub mod pid;
pub mod policy;
pub mod resolve;
pub mod slots;
pub mod space;
pub mod stats;
pub mod switch;

pub use domain::{DomainError, DomainOwner, DomainSet, DomainTable};
pub use id::{SegmentId, SpaceId};
pub use layout::{Layout, LayoutError, Region, RegionKind};
pub use pid::{
    FlushDecision, FlushReasons, FlushTicket, PidAllocator, PidContext, PidError, PidMode,
};
pub use policy::{DefaultPolicy, VictimPolicy};
pub use resolve::{Flushed, Resolution};
pub use stats::{Event, Stats};
pub use switch::{FassError, FassSwitch, SwitchStrategy};
