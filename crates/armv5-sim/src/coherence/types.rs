//! The checker's input and output types: the contract with the `cache-check`
//! QEMU plugin.

use std::fmt;

/// Which CPU the checker models (the CPU of one QEMU board).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Cpu {
    /// ARM926EJ-S: QEMU's `-M versatilepb -cpu arm926`.
    Arm926,
    /// StrongARM SA-1110: QEMU's `-M collie`.
    Sa1110,
    /// Intel PXA255 (XScale): QEMU's `-M connex`.
    Pxa255,
}

impl Cpu {
    /// Every modelled CPU.
    pub const ALL: [Cpu; 3] = [Cpu::Arm926, Cpu::Sa1110, Cpu::Pxa255];

    /// The CPU's preset: geometry, replacement and cost model. The SA-1110
    /// has the SA-1100's core, caches and TLBs, so it takes
    /// [`presets::sa1100`](crate::presets::sa1100).
    #[must_use]
    pub fn preset(self) -> crate::presets::Preset {
        match self {
            Cpu::Arm926 => crate::presets::arm926ejs(),
            Cpu::Sa1110 => crate::presets::sa1100(),
            Cpu::Pxa255 => crate::presets::pxa255(),
        }
    }

    /// A short name for reports.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Cpu::Arm926 => "ARM926EJ-S",
            Cpu::Sa1110 => "SA-1110",
            Cpu::Pxa255 => "PXA255",
        }
    }
}

/// What an [`Access`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AccessKind {
    /// An instruction fetch (one per executed instruction).
    Fetch,
    /// A data load.
    Load,
    /// A data store.
    Store,
}

/// One memory access of the guest, as QEMU executed it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Access {
    /// Address of the instruction that made the access (for a fetch, `va`).
    pub pc: u32,
    /// Virtual address as the guest used it (before FCSE relocation).
    pub va: u32,
    /// Physical address QEMU translated `va` to.
    pub pa: u32,
    /// Size in bytes (1, 2, 4 or 8).
    pub size: u8,
    /// Fetch, load or store.
    pub kind: AccessKind,
    /// QEMU says the access went to device memory (uncached; not modelled).
    pub io: bool,
    /// The access was made in a privileged mode.
    pub privileged: bool,
}

/// Kinds of coherence violation: cases where the real CPU would have
/// returned (or written) something else than QEMU did.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ViolationKind {
    /// A virtual-tag hit on a line filled from another physical address
    /// (on hardware: another address space's data).
    StaleAlias,
    /// A hit on the right line that holds an older version than the newest.
    StaleLine,
    /// A miss or uncached read that got RAM's version while the newest is
    /// dirty in a cache line under another alias, or was lost by the
    /// write-back of an older line.
    StaleRam,
    /// An instruction fetch that gets an older version than the newest.
    StaleFetch,
    /// A model-TLB hit whose physical address differs from QEMU's, or a
    /// translation fault on an address the model TLB still maps.
    StaleTlb,
    /// A table walk that reads a first-level descriptor whose newest version
    /// is not in RAM.
    StaleWalk,
    /// The guest asserted a clean D-cache while dirty lines remain.
    IncompleteClean,
}

impl ViolationKind {
    /// Every kind, in the order of [`Counts::by_kind`].
    pub const ALL: [ViolationKind; 7] = [
        ViolationKind::StaleAlias,
        ViolationKind::StaleLine,
        ViolationKind::StaleRam,
        ViolationKind::StaleFetch,
        ViolationKind::StaleTlb,
        ViolationKind::StaleWalk,
        ViolationKind::IncompleteClean,
    ];

    /// The kind's name, as printed in reports.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            ViolationKind::StaleAlias => "StaleAlias",
            ViolationKind::StaleLine => "StaleLine",
            ViolationKind::StaleRam => "StaleRam",
            ViolationKind::StaleFetch => "StaleFetch",
            ViolationKind::StaleTlb => "StaleTlb",
            ViolationKind::StaleWalk => "StaleWalk",
            ViolationKind::IncompleteClean => "IncompleteClean",
        }
    }

    /// Index of the kind in [`ViolationKind::ALL`].
    #[must_use]
    pub const fn index(self) -> usize {
        self as usize
    }
}

impl fmt::Display for ViolationKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One reported violation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Violation {
    /// What went wrong.
    pub kind: ViolationKind,
    /// The instruction that observed it.
    pub pc: u32,
    /// The virtual address accessed (for [`ViolationKind::IncompleteClean`],
    /// the MVA of a dirty line).
    pub va: u32,
    /// The modified virtual address (after FCSE relocation).
    pub mva: u32,
    /// The physical address QEMU accessed (for
    /// [`ViolationKind::IncompleteClean`], the dirty line's; for
    /// [`ViolationKind::StaleWalk`], the descriptor's).
    pub pa: u32,
    /// Privileged mode.
    pub privileged: bool,
    /// The running address space (last [`Event::Space`](mmu_armv5::marker::Event::Space)).
    pub space: u32,
    /// The running scenario (last [`Event::Scenario`](mmu_armv5::marker::Event::Scenario)).
    pub scenario: u32,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} pc={:#010x} va={:#010x} mva={:#010x} pa={:#010x} mode={} space={} scenario={}",
            self.kind,
            self.pc,
            self.va,
            self.mva,
            self.pa,
            if self.privileged { "svc" } else { "usr" },
            self.space,
            self.scenario
        )
    }
}

/// Violation counts per kind (never capped).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// Count per kind, indexed by [`ViolationKind::index`].
    pub by_kind: [u64; 7],
}

impl Counts {
    /// The count of one kind.
    #[must_use]
    pub const fn of(&self, kind: ViolationKind) -> u64 {
        self.by_kind[kind.index()]
    }

    /// The sum over every kind.
    #[must_use]
    pub fn total(&self) -> u64 {
        self.by_kind.iter().sum()
    }
}

impl fmt::Display for Counts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, k) in ViolationKind::ALL.iter().enumerate() {
            if i > 0 {
                f.write_str(" ")?;
            }
            write!(f, "{}={}", k, self.by_kind[i])?;
        }
        Ok(())
    }
}
