//! Outcomes, their comparison with a prediction, and the run's report.

use mmu_armv5::{Fault, FaultKind, FaultLevel};

/// What a target saw for one access.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Observed {
    /// The access completed; for a load, the value read (0 for a store).
    Done(u32),
    /// The access aborted with this fault status and fault address.
    Abort {
        /// DFSR value.
        fsr: u32,
        /// FAR value.
        far: u32,
    },
}

/// Deviations from the architecture a target is known to have.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Deviations {
    /// The FAR holds the VA the program issued, not the MVA (QEMU 7.2).
    pub far_is_va: bool,
    /// A coarse/fine first-level entry's domain is checked before the
    /// second-level entry is read, so an invalid page in a no-access or
    /// reserved domain reports a page domain fault (QEMU 7.2).
    pub domain_before_l2: bool,
}

impl Deviations {
    /// None: the target follows the architecture (the `armv5-sim` model).
    pub const ARCHITECTURE: Deviations = Deviations {
        far_is_va: false,
        domain_before_l2: false,
    };
    /// QEMU 7.2's `arm926` (see `shared/notes/armv5-qemu-facts.md`).
    pub const QEMU_7_2: Deviations = Deviations {
        far_is_va: true,
        domain_before_l2: true,
    };
}

/// How many accesses ended each way.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Counts {
    /// Loads that completed.
    pub loads: u32,
    /// Stores that completed.
    pub stores: u32,
    /// Section translation faults.
    pub translation_section: u32,
    /// Page translation faults.
    pub translation_page: u32,
    /// Section domain faults.
    pub domain_section: u32,
    /// Page domain faults.
    pub domain_page: u32,
    /// Section permission faults.
    pub permission_section: u32,
    /// Page permission faults.
    pub permission_page: u32,
    /// Any other fault kind.
    pub other: u32,
    /// Accesses by a user-mode (`LDRT`/`STRT`) probe.
    pub user: u32,
    /// Accesses under a non-zero FCSE PID.
    pub relocated: u32,
    /// Mappings created (sections and pages).
    pub mappings: u32,
    /// Mappings refused because they overlapped earlier ones (expected).
    pub overlaps: u32,
}

impl Counts {
    pub(crate) fn record_fault(&mut self, kind: FaultKind) {
        use FaultLevel::{Page, Section};
        match kind {
            FaultKind::Translation(Section) => self.translation_section += 1,
            FaultKind::Translation(Page) => self.translation_page += 1,
            FaultKind::Domain(Section) => self.domain_section += 1,
            FaultKind::Domain(Page) => self.domain_page += 1,
            FaultKind::Permission(Section) => self.permission_section += 1,
            FaultKind::Permission(Page) => self.permission_page += 1,
            _ => self.other += 1,
        }
    }
}

/// The first access whose outcome differed from the prediction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Mismatch {
    /// Index of the access in the run.
    pub index: u32,
    /// The address accessed.
    pub va: u32,
    /// Whether it was a store.
    pub write: bool,
    /// Whether it was privileged.
    pub privileged: bool,
    /// What `translate` predicted: `Done(value)` or `Abort { fsr, far }` in
    /// the target's own terms (deviations applied).
    pub expected: Observed,
    /// What the target saw.
    pub observed: Observed,
}

/// The result of a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Report {
    /// The seed.
    pub seed: u64,
    /// Accesses performed.
    pub accesses: u32,
    /// Accesses whose outcome differed from the prediction.
    pub mismatches: u32,
    /// Accesses where a known target deviation changed the expected outcome.
    pub deviations: u32,
    /// Of those, the aborts whose expected FAR became the VA instead of the
    /// MVA ([`Deviations::far_is_va`]).
    pub far_is_va: u32,
    /// Of those, the aborts whose expected page translation fault became a
    /// page domain fault ([`Deviations::domain_before_l2`]).
    pub domain_before_l2: u32,
    /// Outcome counts.
    pub counts: Counts,
    /// FNV-1a digest of every outcome in architectural form: equal for two
    /// targets that behaved identically on the same seed.
    pub digest: u64,
    /// The first mismatch, if any.
    pub first_mismatch: Option<Mismatch>,
}

/// FNV-1a, 64 bits.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Digest(pub u64);

impl Digest {
    pub(crate) const fn new() -> Digest {
        Digest(0xcbf2_9ce4_8422_2325)
    }

    pub(crate) fn word(&mut self, w: u32) {
        for b in w.to_le_bytes() {
            self.0 ^= b as u64;
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
}

/// An expected abort in the target's terms, with whether a deviation applied.
/// Which deviations changed one expected abort.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Applied {
    /// The FAR is the VA, not the MVA.
    pub far_is_va: bool,
    /// A page domain fault instead of a page translation fault.
    pub domain_before_l2: bool,
}

impl Applied {
    /// Whether any deviation applied.
    pub(crate) fn any(self) -> bool {
        self.far_is_va || self.domain_before_l2
    }
}

pub(crate) fn expected_abort(
    arch: Fault,
    va: u32,
    mva: u32,
    l1_domain_denies: bool,
    dev: Deviations,
) -> (Fault, u32, Applied) {
    let mut deviated = Applied::default();
    let mut fault = arch;
    if dev.domain_before_l2
        && l1_domain_denies
        && arch.kind == FaultKind::Translation(FaultLevel::Page)
    {
        fault = Fault {
            kind: FaultKind::Domain(FaultLevel::Page),
            domain: arch.domain,
        };
        deviated.domain_before_l2 = true;
    }
    let far = if dev.far_is_va {
        if va != mva {
            deviated.far_is_va = true;
        }
        va
    } else {
        mva
    };
    (fault, far, deviated)
}

/// Whether an observed abort matches the expected fault and address.
///
/// The domain field is compared only where the architecture defines it
/// (QEMU fills it in from the descriptor for section translation faults).
pub(crate) fn abort_matches(expected: Fault, expected_far: u32, fsr: u32, far: u32) -> bool {
    let seen = Fault::from_fsr(fsr);
    seen.kind == expected.kind && seen.domain == expected.domain && far == expected_far
}

#[cfg(test)]
mod tests {
    use super::*;
    use mmu_armv5::Domain;

    fn fault(kind: FaultKind) -> Fault {
        Fault {
            kind,
            domain: Some(Domain::from_low_bits(3)),
        }
    }

    #[test]
    fn each_deviation_is_reported_by_name() {
        let page_translation = fault(FaultKind::Translation(FaultLevel::Page));
        let q = Deviations::QEMU_7_2;
        // Relocated access (VA != MVA) in a denying domain: both apply.
        let (f, far, d) = expected_abort(page_translation, 0x1000, 0x0200_1000, true, q);
        assert_eq!(f.kind, FaultKind::Domain(FaultLevel::Page));
        assert_eq!(far, 0x1000);
        assert!(d.far_is_va && d.domain_before_l2 && d.any());
        // Not relocated, domain allows: neither applies.
        let (f, far, d) = expected_abort(page_translation, 0x0400_0000, 0x0400_0000, false, q);
        assert_eq!(f, page_translation);
        assert_eq!(far, 0x0400_0000);
        assert_eq!(d, Applied::default());
        assert!(!d.any());
        // Only the FAR.
        let (_, _, d) = expected_abort(page_translation, 0x1000, 0x0200_1000, false, q);
        assert!(d.far_is_va && !d.domain_before_l2);
        // The architecture: nothing applies, the FAR is the MVA.
        let a = Deviations::ARCHITECTURE;
        let (f, far, d) = expected_abort(page_translation, 0x1000, 0x0200_1000, true, a);
        assert_eq!((f, far, d.any()), (page_translation, 0x0200_1000, false));
    }
}
