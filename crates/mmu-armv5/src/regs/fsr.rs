//! DFSR and IFSR: the data and instruction (prefetch) fault status registers
//! (`c5, 0, c0, 0` and `c5, 0, c0, 1`).
//!
//! Both share one layout on ARMv4/ARMv5: status in bits \[3:0\], domain in
//! bits \[7:4\], decoded by [`Fault::from_fsr`]. Bit 8 is zero. Beyond that:
//!
//! * **XScale**: bit 9 (`D`) flags a debug event (the cause is in the debug
//!   control and status register); bit 10 (`X`) extends the status field, and
//!   when it is set the status bits name XScale-specific aborts (lock aborts,
//!   imprecise external data aborts, cache parity errors) rather than the
//!   architectural kinds [`Fsr::fault`] returns. Check
//!   [`Fsr::xscale_extended_status`] before trusting the decoded kind there.
//! * **ARMv6** (not targeted here) puts FS\[4\] in bit 10 and `WnR` in bit 11;
//!   ARM926EJ-S, the SA-1100 and QEMU's ARMv5 models leave bits 10 and 11 zero.

use super::field;
use crate::fault::Fault;
use core::fmt;
use tock_registers::LocalRegisterCopy;

pub use fields::FSR;

/// `tock-registers` field definitions (the macro's generated items carry no docs of their own).
#[allow(missing_docs)]
mod fields {
    use tock_registers::register_bitfields;

    register_bitfields![u32,
    /// DFSR/IFSR bit fields.
    pub FSR [
        /// Fault status.
        STATUS OFFSET(0) NUMBITS(4) [],
        /// Domain of the faulting descriptor (where defined).
        DOMAIN OFFSET(4) NUMBITS(4) [],
        /// XScale: debug event.
        XSCALE_D OFFSET(9) NUMBITS(1) [],
        /// XScale: status field extension.
        XSCALE_X OFFSET(10) NUMBITS(1) []
    ]
    ];
}

/// A DFSR or IFSR value.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[repr(transparent)]
pub struct Fsr(u32);

impl Fsr {
    /// A value from the raw register bits.
    #[inline]
    #[must_use]
    pub const fn from_bits(bits: u32) -> Fsr {
        Fsr(bits)
    }

    /// The value a fault of this kind and domain produces.
    #[inline]
    #[must_use]
    pub const fn from_fault(fault: Fault) -> Fsr {
        Fsr(fault.fsr())
    }

    /// The raw register value.
    #[inline]
    #[must_use]
    pub const fn bits(self) -> u32 {
        self.0
    }

    /// The four status bits.
    #[inline]
    #[must_use]
    pub const fn status(self) -> u32 {
        field::read(self.0, FSR::STATUS)
    }

    /// The raw domain field (bits \[7:4\]), whether or not the kind defines one.
    #[inline]
    #[must_use]
    pub const fn domain_field(self) -> u8 {
        field::read(self.0, FSR::DOMAIN) as u8
    }

    /// The architectural fault kind and domain (via [`Fault::from_fsr`]).
    #[inline]
    #[must_use]
    pub const fn fault(self) -> Fault {
        Fault::from_fsr(self.0)
    }

    /// Status bits with XScale's `X` extension (bit 10): a value's
    /// architectural kind is in the four status bits only when `X` is clear.
    const KIND_BITS: u32 = field::mask(FSR::STATUS) | field::mask(FSR::XSCALE_X);

    /// A section (`0x5`) or page (`0x7`) translation fault: nothing is
    /// mapped at the address (or, under FASS, not yet in the CPD).
    ///
    /// False when XScale's `X` bit extends the status field (the four bits
    /// then name an XScale-specific abort).
    ///
    /// ```
    /// use mmu_armv5::regs::Fsr;
    ///
    /// assert!(Fsr::from_bits(0x005).is_translation_fault());
    /// assert!(Fsr::from_bits(0x0b7).is_translation_fault());
    /// assert!(!Fsr::from_bits(0x405).is_translation_fault()); // XScale extended status
    /// assert!(Fsr::from_bits(0x069).is_domain_fault());
    /// assert!(!Fsr::from_bits(0x00f).is_lazy_fill_candidate()); // a permission fault
    /// ```
    #[inline]
    #[must_use]
    pub const fn is_translation_fault(self) -> bool {
        matches!(self.0 & Self::KIND_BITS, 0x5 | 0x7)
    }

    /// A section (`0x9`) or page (`0xB`) domain fault: the descriptor's
    /// domain has no access in the DACR (under FASS: another space's entry
    /// in the CPD, a collision). False when XScale's `X` bit is set.
    #[inline]
    #[must_use]
    pub const fn is_domain_fault(self) -> bool {
        matches!(self.0 & Self::KIND_BITS, 0x9 | 0xB)
    }

    /// A section (`0xD`) or page (`0xF`) permission fault. False when
    /// XScale's `X` bit is set.
    #[inline]
    #[must_use]
    pub const fn is_permission_fault(self) -> bool {
        matches!(self.0 & Self::KIND_BITS, 0xD | 0xF)
    }

    /// A translation or a domain fault at section or page level: the two
    /// kinds a lazily filled first-level table (the FASS caching page
    /// directory) produces and resolves, and the only ones
    /// `fass::Fass::resolve` may handle without handing them back.
    #[inline]
    #[must_use]
    pub const fn is_lazy_fill_candidate(self) -> bool {
        // One shift of a bit set instead of two range tests (a fault path
        // asks this on every abort): bit `s` of `LAZY` is set for the
        // statuses 0x5, 0x7, 0x9 and 0xB, and `X` must be clear.
        const LAZY: u32 = (1 << 0x5) | (1 << 0x7) | (1 << 0x9) | (1 << 0xB);
        self.0 & field::mask(FSR::XSCALE_X) == 0 && (LAZY >> (self.0 & 0xF)) & 1 != 0
    }

    /// XScale `X` (bit 10): the status field has an extended, XScale-specific meaning.
    #[inline]
    #[must_use]
    pub const fn xscale_extended_status(self) -> bool {
        field::is_set(self.0, FSR::XSCALE_X)
    }

    /// XScale `D` (bit 9): the abort was a debug event.
    #[inline]
    #[must_use]
    pub const fn xscale_debug_event(self) -> bool {
        field::is_set(self.0, FSR::XSCALE_D)
    }

    /// The value as a `tock-registers` copy, for field-level access.
    #[inline]
    #[must_use]
    pub fn as_register(self) -> LocalRegisterCopy<u32, FSR::Register> {
        LocalRegisterCopy::new(self.0)
    }
}

impl fmt::Debug for Fsr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Fsr({:#05x}: {})", self.0, self.fault())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::addr::Domain;
    use crate::fault::{FaultKind, FaultLevel};
    use proptest::prelude::*;
    use tock_registers::debug::RegisterDebugInfo;

    proptest! {
        #![proptest_config(crate::testing::proptest_config(256))]
        /// Every const accessor reads exactly its `tock-registers` field, and
        /// [`Fault::from_fsr`] and [`Fault::fsr`] use the same fields.
        #[test]
        fn accessors_agree_with_tock_fields(bits in any::<u32>()) {
            let v = Fsr::from_bits(bits);
            let r = v.as_register();
            let fields = FSR::Register::fields();
            for (name, f) in FSR::Register::field_names().iter().zip(fields) {
                let ours = match *name {
                    "STATUS" => v.status(),
                    "DOMAIN" => u32::from(v.domain_field()),
                    "XSCALE_D" => u32::from(v.xscale_debug_event()),
                    "XSCALE_X" => u32::from(v.xscale_extended_status()),
                    other => panic!("FSR::{other} has no accessor listed"),
                };
                prop_assert_eq!(ours, r.read(*f), "{}", name);
            }
            let fault = v.fault();
            prop_assert_eq!(fault.kind, FaultKind::from_status(r.read(FSR::STATUS)));
            if let Some(d) = fault.domain {
                prop_assert_eq!(u32::from(d.get()), r.read(FSR::DOMAIN));
            }
            let encoded = Fsr::from_fault(fault);
            prop_assert_eq!(
                encoded.bits(),
                (FSR::STATUS.val(fault.kind.status())
                    + FSR::DOMAIN.val(fault.domain.map_or(0, |d| u32::from(d.get()))))
                .value
            );
        }
    }

    #[test]
    fn fields_follow_the_manual() {
        let v = Fsr::from_bits(0x06b);
        assert_eq!(v.status(), 0xb);
        assert_eq!(v.domain_field(), 6);
        assert_eq!(v.as_register().read(FSR::STATUS), 0xb);
        assert_eq!(v.as_register().read(FSR::DOMAIN), 6);
        assert_eq!(
            v.fault(),
            Fault::new(FaultKind::Domain(FaultLevel::Page), Domain::new(6).unwrap())
        );
        assert!(!v.xscale_extended_status() && !v.xscale_debug_event());
    }

    #[test]
    fn qemu_values_decode() {
        assert_eq!(
            Fsr::from_bits(0x005).fault().kind,
            FaultKind::Translation(FaultLevel::Section)
        );
        assert_eq!(Fsr::from_bits(0x005).fault().domain, None);
        assert_eq!(
            Fsr::from_bits(0x00f).fault().kind,
            FaultKind::Permission(FaultLevel::Page)
        );
    }

    #[test]
    fn kind_predicates_match_the_decoded_kind() {
        for bits in 0..0x800u32 {
            let v = Fsr::from_bits(bits);
            let arch = bits & (1 << 10) == 0;
            let (t, d, p) = match v.fault().kind {
                FaultKind::Translation(_) => (true, false, false),
                FaultKind::Domain(_) => (false, true, false),
                FaultKind::Permission(_) => (false, false, true),
                _ => (false, false, false),
            };
            assert_eq!(v.is_translation_fault(), arch && t, "{bits:#x}");
            assert_eq!(v.is_domain_fault(), arch && d, "{bits:#x}");
            assert_eq!(v.is_permission_fault(), arch && p, "{bits:#x}");
            assert_eq!(v.is_lazy_fill_candidate(), arch && (t || d), "{bits:#x}");
        }
    }

    #[test]
    fn xscale_bits() {
        let v = Fsr::from_bits((1 << 10) | (1 << 9) | 0x6);
        assert!(v.xscale_extended_status());
        assert!(v.xscale_debug_event());
        assert_eq!(v.as_register().read(FSR::XSCALE_X), 1);
        assert_eq!(v.status(), 0x6);
    }

    #[test]
    fn from_fault_round_trips() {
        for s in 0..16u32 {
            for d in 0..16u32 {
                let v = Fsr::from_bits((d << 4) | s);
                let back = Fsr::from_fault(v.fault());
                assert_eq!(back.fault(), v.fault());
            }
        }
    }
}
