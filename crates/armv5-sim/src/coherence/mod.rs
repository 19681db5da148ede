//! A coherence checker: replays a guest's real accesses (from the
//! `cache-check` QEMU plugin) through a version model of the CPU's VIVT
//! caches and TLB and reports where the real CPU would have returned
//! something else than QEMU did.
//!
//! (Skeleton: the API is final, the model follows.)

mod types;

pub use types::{Access, AccessKind, Counts, Cpu, Violation, ViolationKind};

use mmu_armv5::marker::Key;

/// How many violations [`Checker::violations`] keeps (counts go on).
pub const MAX_VIOLATIONS: usize = 1000;

/// The checker.
#[derive(Debug)]
pub struct Checker {
    cpu: Cpu,
    violations: Vec<Violation>,
    counts: Counts,
    cycles: u64,
    instructions: u64,
}

impl Checker {
    /// A checker for `cpu`, in the reset state: MMU and caches off.
    #[must_use]
    pub fn new(cpu: Cpu) -> Checker {
        Checker {
            cpu,
            violations: Vec::new(),
            counts: Counts::default(),
            cycles: 0,
            instructions: 0,
        }
    }

    /// The modelled CPU.
    #[must_use]
    pub fn cpu(&self) -> Cpu {
        self.cpu
    }

    /// One fetch, load or store.
    pub fn access(&mut self, a: &Access) {
        if a.kind == AccessKind::Fetch {
            self.instructions += 1;
        }
        self.cycles += 1;
    }

    /// One decoded marker: `key` with `value`, issued by the instruction at `pc`.
    pub fn marker(&mut self, key: Key, value: u32, pc: u32) {
        let _ = (key, value, pc);
    }

    /// The first [`MAX_VIOLATIONS`] violations, in order.
    #[must_use]
    pub fn violations(&self) -> &[Violation] {
        &self.violations
    }

    /// Violation counts per kind.
    #[must_use]
    pub fn counts(&self) -> Counts {
        self.counts
    }

    /// Modelled cycles so far.
    #[must_use]
    pub fn cycles(&self) -> u64 {
        self.cycles
    }

    /// Instructions (fetches) so far.
    #[must_use]
    pub fn instructions(&self) -> u64 {
        self.instructions
    }
}
