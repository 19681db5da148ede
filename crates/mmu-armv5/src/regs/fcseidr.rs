//! FCSEIDR: the Fast Context-Switch Extension process ID register (`c13, 0, c0, 0`).
//!
//! The PID sits in bits \[31:25\]; bits \[24:0\] should be zero. A write is
//! always exactly `pid << 25`: QEMU's collie and connex models do not mask
//! the low bits and add them to every address, so [`Fcseidr`] cannot hold
//! anything else. [`Fcseidr::from_bits`] keeps the PID and reports stray low
//! bits separately ([`Fcseidr::stray_low_bits`]) so a reader can detect them.

use super::field;
use crate::addr::FcsePid;
use core::fmt;
use tock_registers::LocalRegisterCopy;

pub use fields::FCSEIDR;

/// `tock-registers` field definitions (the macro's generated items carry no docs of their own).
#[allow(missing_docs)]
mod fields {
    use tock_registers::register_bitfields;

    register_bitfields![u32,
    /// FCSEIDR bit fields.
    pub FCSEIDR [
        /// The FCSE process ID.
        PID OFFSET(25) NUMBITS(7) []
    ]
    ];
}

/// A value of FCSEIDR as written: exactly `pid << 25`.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[repr(transparent)]
pub struct Fcseidr(FcsePid);

impl Fcseidr {
    /// The register value for `pid`.
    #[inline]
    #[must_use]
    pub const fn new(pid: FcsePid) -> Fcseidr {
        Fcseidr(pid)
    }

    /// Decodes a value read from hardware: the PID from bits \[31:25\].
    ///
    /// Any bits in \[24:0\] are not part of the value (see
    /// [`Fcseidr::stray_low_bits`]).
    #[inline]
    #[must_use]
    pub const fn from_bits(bits: u32) -> Fcseidr {
        match FcsePid::new(field::read(bits, FCSEIDR::PID) as u8) {
            Ok(p) => Fcseidr(p),
            // Unreachable: seven bits are always <= 127.
            Err(_) => Fcseidr(FcsePid::ZERO),
        }
    }

    /// The bits \[24:0\] of a raw value, which should be zero.
    #[inline]
    #[must_use]
    pub const fn stray_low_bits(bits: u32) -> u32 {
        bits & !field::mask(FCSEIDR::PID)
    }

    /// The PID.
    #[inline]
    #[must_use]
    pub const fn pid(self) -> FcsePid {
        self.0
    }

    /// The register value: exactly `pid << 25`.
    #[inline]
    #[must_use]
    pub const fn bits(self) -> u32 {
        self.0.fcseidr_value()
    }

    /// The value as a `tock-registers` copy, for field-level access.
    #[inline]
    #[must_use]
    pub fn as_register(self) -> LocalRegisterCopy<u32, FCSEIDR::Register> {
        LocalRegisterCopy::new(self.bits())
    }
}

impl fmt::Debug for Fcseidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Fcseidr({})", self.0.get())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use tock_registers::debug::RegisterDebugInfo;

    #[test]
    fn value_is_exactly_pid_shifted() {
        // Derived from the field: bits [31:25], seven of them.
        assert_eq!(crate::addr::FCSE_PID_SHIFT, 25);
        assert_eq!(FcsePid::MAX, 127);
        let v = Fcseidr::new(FcsePid::new(5).unwrap());
        assert_eq!(v.bits(), 0x0A00_0000);
        assert_eq!(v.as_register().read(FCSEIDR::PID), 5);
        assert_eq!(Fcseidr::new(FcsePid::new(127).unwrap()).bits(), 0xFE00_0000);
        assert_eq!(Fcseidr::default().bits(), 0);
    }

    #[test]
    fn stray_low_bits_are_reported_not_kept() {
        let raw = 0x0A00_0123;
        let v = Fcseidr::from_bits(raw);
        assert_eq!(v.pid().get(), 5);
        assert_eq!(v.bits(), 0x0A00_0000);
        assert_eq!(Fcseidr::stray_low_bits(raw), 0x123);
    }

    proptest! {
        #![proptest_config(crate::testing::proptest_config(256))]
        /// The PID is exactly the `tock-registers` field, and the stray bits
        /// are everything outside it.
        #[test]
        fn accessors_agree_with_tock_fields(bits in any::<u32>()) {
            let raw = LocalRegisterCopy::<u32, FCSEIDR::Register>::new(bits);
            let v = Fcseidr::from_bits(bits);
            let fields = FCSEIDR::Register::fields();
            for (name, f) in FCSEIDR::Register::field_names().iter().zip(fields) {
                let ours = match *name {
                    "PID" => u32::from(v.pid().get()),
                    other => panic!("FCSEIDR::{other} has no accessor listed"),
                };
                prop_assert_eq!(ours, raw.read(*f), "{}", name);
                prop_assert_eq!(v.bits(), f.val(ours).value);
                prop_assert_eq!(v.as_register().read(*f), ours);
                prop_assert_eq!(Fcseidr::stray_low_bits(bits), bits & !f.val(f.mask).mask());
            }
        }

        #[test]
        fn every_pid_round_trips(p in 0u8..=127) {
            let pid = FcsePid::new(p).unwrap();
            let v = Fcseidr::new(pid);
            prop_assert_eq!(v.bits(), u32::from(p) << 25);
            prop_assert_eq!(Fcseidr::stray_low_bits(v.bits()), 0);
            prop_assert_eq!(Fcseidr::from_bits(v.bits()), v);
        }
    }
}
