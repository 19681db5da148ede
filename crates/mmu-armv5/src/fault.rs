//! Memory-abort kinds and their fault-status (DFSR/IFSR) encoding.
//!
//! The status values and their priority are those of the ARM Architecture
//! Reference Manual for ARMv4/ARMv5 ("Fault Address and Fault Status
//! registers"): bits \[3:0\] give the status, bits \[7:4\] the domain where one
//! applies.

use crate::addr::Domain;
use crate::regs::{field, FSR};
use core::fmt;

/// Whether a fault was raised by a first-level (section) or a second-level (page) lookup.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum FaultLevel {
    /// Raised by a section descriptor or an invalid first-level descriptor.
    Section,
    /// Raised by a second-level (large, small or tiny page) lookup.
    Page,
}

/// The kind of a memory abort, as encoded in the fault status register.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum FaultKind {
    /// Vector exception (status `0b0000`, ARMv4 26-bit legacy).
    Vector,
    /// Alignment fault (status `0b0001` or `0b0011`).
    Alignment,
    /// Terminal exception (status `0b0010`).
    Terminal,
    /// External abort on a line fetch (section `0b0100`, page `0b0110`).
    LinefetchAbort(FaultLevel),
    /// Translation fault (section `0b0101`, page `0b0111`).
    Translation(FaultLevel),
    /// External abort on a non-linefetch access (section `0b1000`, page `0b1010`).
    ExternalAbort(FaultLevel),
    /// Domain fault (section `0b1001`, page `0b1011`).
    Domain(FaultLevel),
    /// External abort on a table walk (first level `0b1100`, second level `0b1110`).
    TranslationExternalAbort(FaultLevel),
    /// Permission fault (section `0b1101`, page `0b1111`).
    Permission(FaultLevel),
}

impl FaultKind {
    /// Decodes the four status bits of a fault status register.
    #[must_use]
    pub const fn from_status(status: u32) -> FaultKind {
        use FaultLevel::{Page, Section};
        match status & FSR::STATUS.mask {
            0b0000 => FaultKind::Vector,
            0b0001 | 0b0011 => FaultKind::Alignment,
            0b0010 => FaultKind::Terminal,
            0b0100 => FaultKind::LinefetchAbort(Section),
            0b0110 => FaultKind::LinefetchAbort(Page),
            0b0101 => FaultKind::Translation(Section),
            0b0111 => FaultKind::Translation(Page),
            0b1000 => FaultKind::ExternalAbort(Section),
            0b1010 => FaultKind::ExternalAbort(Page),
            0b1001 => FaultKind::Domain(Section),
            0b1011 => FaultKind::Domain(Page),
            0b1100 => FaultKind::TranslationExternalAbort(Section),
            0b1110 => FaultKind::TranslationExternalAbort(Page),
            0b1101 => FaultKind::Permission(Section),
            _ => FaultKind::Permission(Page),
        }
    }

    /// The four status bits for this kind (alignment encodes as `0b0001`).
    #[must_use]
    pub const fn status(self) -> u32 {
        use FaultLevel::{Page, Section};
        match self {
            FaultKind::Vector => 0b0000,
            FaultKind::Alignment => 0b0001,
            FaultKind::Terminal => 0b0010,
            FaultKind::LinefetchAbort(Section) => 0b0100,
            FaultKind::LinefetchAbort(Page) => 0b0110,
            FaultKind::Translation(Section) => 0b0101,
            FaultKind::Translation(Page) => 0b0111,
            FaultKind::ExternalAbort(Section) => 0b1000,
            FaultKind::ExternalAbort(Page) => 0b1010,
            FaultKind::Domain(Section) => 0b1001,
            FaultKind::Domain(Page) => 0b1011,
            FaultKind::TranslationExternalAbort(Section) => 0b1100,
            FaultKind::TranslationExternalAbort(Page) => 0b1110,
            FaultKind::Permission(Section) => 0b1101,
            FaultKind::Permission(Page) => 0b1111,
        }
    }

    /// Whether the architecture defines the domain field for this kind.
    ///
    /// The manual marks it invalid for alignment, vector and terminal
    /// exceptions, for section translation faults and for first-level
    /// translation external aborts. (QEMU fills it in anyway from the
    /// descriptor; see the crate docs on known QEMU deviations.)
    #[must_use]
    pub const fn has_domain(self) -> bool {
        !matches!(
            self,
            FaultKind::Vector
                | FaultKind::Alignment
                | FaultKind::Terminal
                | FaultKind::Translation(FaultLevel::Section)
                | FaultKind::TranslationExternalAbort(FaultLevel::Section)
        )
    }
}

/// A decoded fault: its kind and, where the architecture defines one, its domain.
///
/// ```
/// use mmu_armv5::fault::{Fault, FaultKind, FaultLevel};
/// use mmu_armv5::Domain;
///
/// // DFSR 0x3B: a page domain fault in domain 3.
/// let f = Fault::from_fsr(0x3B);
/// assert_eq!(f.kind, FaultKind::Domain(FaultLevel::Page));
/// assert_eq!(f.domain, Some(Domain::new(3).unwrap()));
/// assert_eq!(f.fsr(), 0x3B);
/// // A section translation fault defines no domain: the field is dropped.
/// assert_eq!(Fault::from_fsr(0x35).domain, None);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Fault {
    /// What went wrong.
    pub kind: FaultKind,
    /// The domain of the descriptor that faulted, where defined (see [`FaultKind::has_domain`]).
    pub domain: Option<Domain>,
}

impl Fault {
    /// A fault of `kind` in `domain`; the domain is dropped if `kind` defines none.
    #[must_use]
    pub const fn new(kind: FaultKind, domain: Domain) -> Fault {
        Fault {
            kind,
            domain: if kind.has_domain() {
                Some(domain)
            } else {
                None
            },
        }
    }

    /// A fault with no domain information.
    #[must_use]
    pub const fn without_domain(kind: FaultKind) -> Fault {
        Fault { kind, domain: None }
    }

    /// Decodes a DFSR or IFSR value (bits \[3:0\] status, bits \[7:4\] domain).
    ///
    /// The domain is reported only where the architecture defines it.
    #[must_use]
    pub const fn from_fsr(fsr: u32) -> Fault {
        Fault::new(
            FaultKind::from_status(field::read(fsr, FSR::STATUS)),
            Domain::from_low_bits(field::read(fsr, FSR::DOMAIN)),
        )
    }

    /// The fault status register value this fault produces: status in bits
    /// \[3:0\], the domain (or zero) in bits \[7:4\].
    #[must_use]
    pub const fn fsr(self) -> u32 {
        let d = match self.domain {
            Some(d) => d.get() as u32,
            None => 0,
        };
        field::place(FSR::DOMAIN, d) | field::place(FSR::STATUS, self.kind.status())
    }
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.domain {
            Some(d) => write!(f, "{:?} fault in domain {}", self.kind, d.get()),
            None => write!(f, "{:?} fault", self.kind),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_status_round_trips() {
        for s in 0..16u32 {
            let k = FaultKind::from_status(s);
            let back = k.status();
            if s == 0b0011 {
                assert_eq!(back, 0b0001, "both alignment encodings decode the same");
            } else {
                assert_eq!(back, s, "status {s:#06b}");
            }
        }
    }

    #[test]
    fn status_values_match_the_manual_and_qemu() {
        // Values seen in QEMU's DFSR (see shared/notes/armv5-qemu-facts.md).
        assert_eq!(
            Fault::from_fsr(0x005).kind,
            FaultKind::Translation(FaultLevel::Section)
        );
        assert_eq!(
            Fault::from_fsr(0x007).kind,
            FaultKind::Translation(FaultLevel::Page)
        );
        let d = Fault::from_fsr(0x059);
        assert_eq!(d.kind, FaultKind::Domain(FaultLevel::Section));
        assert_eq!(d.domain, Some(Domain::new(5).unwrap()));
        let p = Fault::from_fsr(0x06b);
        assert_eq!(p.kind, FaultKind::Domain(FaultLevel::Page));
        assert_eq!(p.domain, Some(Domain::new(6).unwrap()));
        assert_eq!(
            Fault::from_fsr(0x00d).kind,
            FaultKind::Permission(FaultLevel::Section)
        );
        assert_eq!(
            Fault::from_fsr(0x00f).kind,
            FaultKind::Permission(FaultLevel::Page)
        );
        assert_eq!(Fault::from_fsr(0x001).kind, FaultKind::Alignment);
        assert_eq!(Fault::from_fsr(0x0f1).domain, None);
        assert_eq!(Fault::from_fsr(0x0f5).domain, None);
    }

    #[test]
    fn fsr_encoding() {
        let f = Fault::new(FaultKind::Domain(FaultLevel::Page), Domain::new(6).unwrap());
        assert_eq!(f.fsr(), 0x06b);
        let t = Fault::new(
            FaultKind::Translation(FaultLevel::Section),
            Domain::new(6).unwrap(),
        );
        assert_eq!(t.fsr(), 0x005);
    }
}
