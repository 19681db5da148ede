//! TTBR: the translation table base register (`c2, 0, c0, 0`).
//!
//! On ARMv4/ARMv5 bits \[31:14\] hold the physical address of the 16 KiB
//! first-level table; bits \[13:0\] should be zero (reads are unpredictable,
//! so [`Ttbr::from_bits`] discards them).

use super::field;
use crate::addr::{AddrError, PhysAddr};
use core::fmt;
use tock_registers::LocalRegisterCopy;

pub use fields::TTBR;

/// `tock-registers` field definitions (the macro's generated items carry no docs of their own).
#[allow(missing_docs)]
mod fields {
    use tock_registers::register_bitfields;

    register_bitfields![u32,
    /// TTBR bit fields.
    pub TTBR [
        /// Bits \[31:14\] of the first-level table's physical address.
        BASE OFFSET(14) NUMBITS(18) []
    ]
    ];
}

/// A TTBR value: the physical base of a 16 KiB-aligned first-level table.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[repr(transparent)]
pub struct Ttbr(u32);

impl Ttbr {
    /// Required alignment of a first-level table: 16 KiB, the weight of
    /// the lowest bit of [`TTBR::BASE`](const@TTBR::BASE).
    pub const ALIGN: u32 = 1 << TTBR::BASE.shift;

    /// A TTBR pointing at the first-level table at `base`.
    ///
    /// # Errors
    /// [`AddrError::Misaligned`] if `base` is not 16 KiB aligned.
    #[inline]
    pub const fn new(base: PhysAddr) -> Result<Ttbr, AddrError> {
        let a = base.as_u32();
        if a & (Self::ALIGN - 1) == 0 {
            Ok(Ttbr(a))
        } else {
            Err(AddrError::Misaligned {
                addr: a,
                align: Self::ALIGN,
            })
        }
    }

    /// Decodes a register value read from hardware; bits \[13:0\] are discarded.
    #[inline]
    #[must_use]
    pub const fn from_bits(bits: u32) -> Ttbr {
        Ttbr(bits & field::mask(TTBR::BASE))
    }

    /// The physical address of the first-level table.
    #[inline]
    #[must_use]
    pub const fn base(self) -> PhysAddr {
        PhysAddr::new(self.0)
    }

    /// The raw register value (bits \[13:0\] zero).
    #[inline]
    #[must_use]
    pub const fn bits(self) -> u32 {
        self.0
    }

    /// The value as a `tock-registers` copy, for field-level access.
    #[inline]
    #[must_use]
    pub fn as_register(self) -> LocalRegisterCopy<u32, TTBR::Register> {
        LocalRegisterCopy::new(self.0)
    }
}

impl fmt::Debug for Ttbr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Ttbr({:#010x})", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use tock_registers::debug::RegisterDebugInfo;

    #[test]
    fn aligned_base_round_trips() {
        assert_eq!(Ttbr::ALIGN, 16 * 1024);
        let t = Ttbr::new(PhysAddr::new(0x0000_4000)).unwrap();
        assert_eq!(t.bits(), 0x4000);
        assert_eq!(t.base(), PhysAddr::new(0x4000));
        assert_eq!(t.as_register().read(TTBR::BASE), 1);
        assert_eq!(
            Ttbr::new(PhysAddr::new(0xFFFF_C000)).unwrap().bits(),
            0xFFFF_C000
        );
    }

    #[test]
    fn misaligned_base_is_a_typed_error() {
        assert_eq!(
            Ttbr::new(PhysAddr::new(0x0000_2000)),
            Err(AddrError::Misaligned {
                addr: 0x2000,
                align: 0x4000
            })
        );
        assert!(Ttbr::new(PhysAddr::new(0xC000_0001)).is_err());
    }

    #[test]
    fn from_bits_drops_the_low_bits() {
        assert_eq!(
            Ttbr::from_bits(0xA000_7FFF).base(),
            PhysAddr::new(0xA000_4000)
        );
    }

    proptest! {
        #![proptest_config(crate::testing::proptest_config(256))]
        /// The base is exactly the `tock-registers` field, in place.
        #[test]
        fn accessors_agree_with_tock_fields(bits in any::<u32>()) {
            let raw = LocalRegisterCopy::<u32, TTBR::Register>::new(bits);
            let fields = TTBR::Register::fields();
            for (name, f) in TTBR::Register::field_names().iter().zip(fields) {
                let t = Ttbr::from_bits(bits);
                let ours = match *name {
                    "BASE" => t.base().as_u32(),
                    other => panic!("TTBR::{other} has no accessor listed"),
                };
                prop_assert_eq!(ours, f.val(raw.read(*f)).value, "{}", name);
                prop_assert_eq!(t.bits(), ours);
                prop_assert_eq!(t.as_register().read(*f), raw.read(*f));
            }
        }

        #[test]
        fn new_accepts_exactly_the_aligned_bases(a in any::<u32>()) {
            let r = Ttbr::new(PhysAddr::new(a));
            prop_assert_eq!(r.is_ok(), a % 0x4000 == 0);
            if let Ok(t) = r {
                prop_assert_eq!(Ttbr::from_bits(t.bits()), t);
                prop_assert_eq!(t.base().as_u32(), a);
            }
        }
    }
}
