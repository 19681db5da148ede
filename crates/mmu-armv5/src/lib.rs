//! Typed ARMv4/ARMv5 MMU vocabulary.
//!
//! This crate describes the memory-management hardware of ARM926EJ-S,
//! XScale and StrongARM cores in Rust types:
//!
//! * [`addr`]: virtual, modified-virtual (FCSE-relocated) and physical
//!   addresses, FCSE PIDs and domains;
//! * [`size`]: page sizes as types (1 MiB sections, 64 KiB large, 4 KiB small,
//!   1 KiB tiny pages), and checked ranges of pages and frames;
//! * [`space`]: [`SpaceId`], the kernel's name for an address space, which
//!   `fass` and `spm` share;
//! * [`descriptor`]: first- and second-level descriptors, bit for bit as the
//!   ARM Architecture Reference Manual (ARMv5) lays them out;
//! * [`table`]: first-level, coarse and fine tables, table memory behind the
//!   [`table::TableAlloc`] trait, and a mapper whose changes return
//!   `#[must_use]` flush tokens; boot-time building with the MMU off
//!   ([`table::MmuOff`], which discharges tokens safely) and sharing the
//!   kernel's first-level entries ([`table::PageTable::share_from`]);
//! * [`translate`]: a software table walk that predicts the hardware's result
//!   or its exact fault;
//! * [`fault`]: fault kinds and the DFSR/IFSR encoding;
//! * [`regs`]: CP15 registers as value types over a [`regs::Cp15`] backend
//!   (real `MRC`/`MCR` on bare-metal ARM, a recording mock elsewhere);
//! * [`maint`]: cache, write-buffer and TLB maintenance per CPU;
//! * [`irq`]: masking IRQ and FIQ (the CPSR's I and F bits);
//! * [`marker`]: the marker accesses through which a kernel built for the
//!   cache check tells a QEMU plugin what its CP15 operations did.
//!
//! # `unsafe`
//! Only the hardware edge is `unsafe`: the `MRC`/`MCR` backend, register
//! writes that change what memory the CPU sees (TTBR, SCTLR, DACR, FCSEIDR),
//! D-cache invalidation that discards dirty lines, raw writes to table
//! memory handed out by a [`table::TableAlloc`], and unmasking interrupts
//! ([`irq::restore`]). Each `unsafe fn` states its
//! contract under a `# Safety` heading. Building tables before the MMU is on
//! needs none: an [`MmuOff`] witness, checked against SCTLR, stands in for
//! the maintenance, and only switching the MMU on
//! ([`MmuOff::enable_mmu`]) is `unsafe`.
//!
//! # QEMU deviations
//! The crate follows the architecture. Where QEMU 7.2 differs (the FAR holds
//! the VA rather than the MVA under FCSE; an invalid second-level entry in a
//! no-access domain is reported as a page domain fault; an invalid
//! first-level entry reports a domain), [`translate`] still gives the
//! architectural answer and the demo kernel's differential test names the
//! deviation.
#![no_std]
// docs.rs (`--cfg docsrs`): badges naming the feature or target an item needs.
#![cfg_attr(docsrs, feature(doc_cfg))]
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(missing_docs)]
#![deny(clippy::undocumented_unsafe_blocks)]

#[cfg(test)]
extern crate std;

#[cfg(test)]
mod testing;

pub mod addr;
pub mod descriptor;
pub mod fault;
pub mod irq;
pub mod maint;
pub mod marker;
pub mod regs;
pub mod size;
pub mod space;
pub mod table;
pub mod translate;

pub use addr::{AddrError, Domain, FcsePid, ModifiedVirtAddr, PhysAddr, VirtAddr};
pub use fault::{Fault, FaultKind, FaultLevel};
pub use space::SpaceId;
pub use table::MmuOff;

/// The README's examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
