//! Domain and access-permission checks, made on every access against the
//! current DACR and SCTLR S/R bits (ARM ARM, ARMv5, "Domain access control"
//! and "Access permissions").

use crate::walk::TlbEntry;
use mmu_armv5::regs::{Dacr, DomainAccess};
use mmu_armv5::{Fault, FaultKind};

/// Who is accessing memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Privilege {
    /// User mode.
    User,
    /// Any privileged mode.
    Privileged,
}

/// What an access does. ARMv5 has no execute-never: execute needs read permission.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AccessKind {
    /// A data read.
    Read,
    /// A data write.
    Write,
    /// An instruction fetch.
    Execute,
}

/// Whether access permission `ap` allows the access, with SCTLR bits `s` and `r`.
///
/// | AP | privileged | user |
/// |----|------------|------|
/// | 00, S=0 R=0 | none | none |
/// | 00, S=1 R=0 | read | none |
/// | 00, S=0 R=1 | read | read |
/// | 00, S=1 R=1 | none (UNPREDICTABLE; QEMU: none) | none |
/// | 01 | read/write | none |
/// | 10 | read/write | read |
/// | 11 | read/write | read/write |
#[inline]
#[must_use]
pub const fn ap_allows(ap: u8, s: bool, r: bool, privileged: bool, write: bool) -> bool {
    match ap & 3 {
        0 => {
            if write {
                false
            } else {
                match (s, r) {
                    (true, false) => privileged,
                    (false, true) => true,
                    _ => false,
                }
            }
        }
        1 => privileged,
        2 => privileged || !write,
        _ => true,
    }
}

/// Checks the domain, then the permission, of `mva` under `mapping`.
///
/// Domain no access (00) and reserved (10) give a domain fault; client (01)
/// checks AP; manager (11) allows everything. Faults are at the mapping's
/// level (section or page) and carry its domain.
#[inline]
pub fn check(
    mapping: &TlbEntry,
    mva: u32,
    dacr: Dacr,
    s: bool,
    r: bool,
    privilege: Privilege,
    kind: AccessKind,
) -> Result<(), Fault> {
    let level = mapping.size.fault_level();
    match dacr.get(mapping.domain) {
        DomainAccess::Manager => Ok(()),
        DomainAccess::Client => {
            let privileged = matches!(privilege, Privilege::Privileged);
            let write = matches!(kind, AccessKind::Write);
            if ap_allows(mapping.ap(mva), s, r, privileged, write) {
                Ok(())
            } else {
                Err(Fault::new(FaultKind::Permission(level), mapping.domain))
            }
        }
        DomainAccess::NoAccess | DomainAccess::Reserved => {
            Err(Fault::new(FaultKind::Domain(level), mapping.domain))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ap_table() {
        // (ap, s, r) -> (priv read, priv write, user read, user write)
        let cases = [
            (0, false, false, [false, false, false, false]),
            (0, true, false, [true, false, false, false]),
            (0, false, true, [true, false, true, false]),
            (0, true, true, [false, false, false, false]),
            (1, false, false, [true, true, false, false]),
            (2, false, false, [true, true, true, false]),
            (3, false, false, [true, true, true, true]),
            (3, true, true, [true, true, true, true]),
        ];
        for (ap, s, r, want) in cases {
            let got = [
                ap_allows(ap, s, r, true, false),
                ap_allows(ap, s, r, true, true),
                ap_allows(ap, s, r, false, false),
                ap_allows(ap, s, r, false, true),
            ];
            assert_eq!(got, want, "ap {ap} s {s} r {r}");
        }
    }
}
