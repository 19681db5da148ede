//! Seeded differential test of [`mmu_armv5::translate`] against an MMU.
//!
//! The same seed produces the same sequence of random mappings (sections,
//! coarse and fine tables, large/small/tiny pages, every AP value, random
//! subpage permissions, several domains), MMU states (DACR, FCSE PID, SCTLR
//! S and R bits) and word accesses (loads and stores, privileged and user).
//! For every access the runner predicts the outcome with
//! [`mmu_armv5::translate::translate`] and compares it with what the
//! [`Target`] observed: the value read, the value that reached memory, or
//! the fault status, domain and fault address.
//!
//! Two targets exist: the demo kernel under QEMU (real loads and stores,
//! aborts caught) and the `armv5-sim` model. Both report a digest of the
//! outcomes in architectural form, so the two can be compared directly.
//!
//! Known QEMU 7.2 deviations from the architecture are modelled in
//! [`Deviations`] and counted, never hidden: the FAR holds the VA rather than
//! the MVA, and an invalid second-level entry under a no-access domain is
//! reported as a page domain fault instead of a page translation fault.
#![no_std]
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(missing_docs)]

mod outcome;
mod rng;
mod runner;
#[cfg(feature = "sim")]
pub mod sim;

pub use outcome::{Counts, Deviations, Mismatch, Observed, Report};
pub use rng::Rng;
pub use runner::{pattern, run, Config, Target, TestState};
