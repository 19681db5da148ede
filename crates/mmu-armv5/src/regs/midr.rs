//! MIDR: the main ID register (`c0, 0, c0, 0`), read-only.
//!
//! Layout (ARM Architecture Reference Manual, post-ARM7 format): bits
//! \[31:24\] implementer, \[23:20\] variant, \[19:16\] architecture, \[15:4\]
//! primary part number, \[3:0\] revision. Intel XScale cores subdivide the
//! part number (\[15:13\] core generation, \[12:10\] core revision, \[9:4\]
//! product number) but keep the same outer layout.
//!
//! Known values: QEMU `arm926` 0x41069265, QEMU `pxa255` (connex)
//! 0x69052d00, QEMU `sa1110` (collie) 0x6901b119, real SA-1100 0x4401a11x.

use super::field;
use crate::addr::FcsePid;
use core::fmt;
use tock_registers::LocalRegisterCopy;

pub use fields::MIDR;

/// `tock-registers` field definitions (the macro's generated items carry no docs of their own).
#[allow(missing_docs)]
mod fields {
    use tock_registers::register_bitfields;

    register_bitfields![u32,
    /// MIDR fields.
    pub MIDR [
        /// Implementer code (0x41 ARM, 0x44 DEC, 0x69 Intel).
        IMPLEMENTER OFFSET(24) NUMBITS(8) [],
        /// Variant.
        VARIANT OFFSET(20) NUMBITS(4) [],
        /// Architecture code.
        ARCHITECTURE OFFSET(16) NUMBITS(4) [],
        /// Primary part number.
        PART OFFSET(4) NUMBITS(12) [],
        /// Revision.
        REVISION OFFSET(0) NUMBITS(4) []
    ]
    ];
}

/// Implementer code of ARM Ltd (`'A'`).
pub const IMPLEMENTER_ARM: u8 = 0x41;
/// Implementer code of Digital Equipment Corporation (`'D'`), the SA-1100's designer.
pub const IMPLEMENTER_DEC: u8 = 0x44;
/// Implementer code of Intel (`'i'`): XScale and the SA-1110.
pub const IMPLEMENTER_INTEL: u8 = 0x69;

/// The CPU families this workspace knows how to drive.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum CpuKind {
    /// ARM926EJ-S (implementer ARM, part 0x926).
    Arm926ejs,
    /// Intel XScale (implementer Intel, architecture ARMv5TE), e.g. PXA255 0x69052d00.
    XScale,
    /// StrongARM SA-1100 (implementer DEC, part 0xa11), 0x4401a11x.
    Sa1100,
    /// StrongARM SA-1110 (implementer Intel, part 0xb11), 0x6901b11x.
    Sa1110,
    /// Anything else.
    Other,
}

impl CpuKind {
    /// Whether this is a StrongARM SA-1100 or SA-1110.
    #[inline]
    #[must_use]
    pub const fn is_strongarm(self) -> bool {
        matches!(self, CpuKind::Sa1100 | CpuKind::Sa1110)
    }

    /// The largest FCSE PID the CPU accepts: 63 on StrongARM (six PID bits), 127 otherwise.
    #[inline]
    #[must_use]
    pub const fn max_fcse_pid(self) -> u8 {
        if self.is_strongarm() {
            FcsePid::MAX_SA1100
        } else {
            FcsePid::MAX
        }
    }
}

/// The architecture field of the MIDR.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Architecture {
    /// `1`: ARMv4.
    V4,
    /// `2`: ARMv4T.
    V4T,
    /// `3`: ARMv5.
    V5,
    /// `4`: ARMv5T.
    V5T,
    /// `5`: ARMv5TE.
    V5TE,
    /// `6`: ARMv5TEJ.
    V5TEJ,
    /// `7`: ARMv6.
    V6,
    /// `0xF`: defined by the CPUID registers (ARMv7 and later).
    CpuId,
    /// Any other (reserved) code.
    Other(u8),
}

impl Architecture {
    /// Decodes the four-bit architecture field.
    #[must_use]
    pub const fn from_field(f: u8) -> Architecture {
        match f & MIDR::ARCHITECTURE.mask as u8 {
            1 => Architecture::V4,
            2 => Architecture::V4T,
            3 => Architecture::V5,
            4 => Architecture::V5T,
            5 => Architecture::V5TE,
            6 => Architecture::V5TEJ,
            7 => Architecture::V6,
            0xf => Architecture::CpuId,
            other => Architecture::Other(other),
        }
    }
}

/// A main ID register value.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[repr(transparent)]
pub struct Midr(u32);

impl Midr {
    /// QEMU 7.2 `-cpu arm926`.
    pub const QEMU_ARM926: Midr = Midr(0x4106_9265);
    /// QEMU 7.2 `-M connex` (XScale PXA255).
    pub const QEMU_PXA255: Midr = Midr(0x6905_2d00);
    /// QEMU 7.2 `-M collie` (StrongARM SA-1110).
    pub const QEMU_SA1110: Midr = Midr(0x6901_b119);

    /// A value from the raw register bits.
    #[inline]
    #[must_use]
    pub const fn from_bits(bits: u32) -> Midr {
        Midr(bits)
    }

    /// The raw register value.
    #[inline]
    #[must_use]
    pub const fn bits(self) -> u32 {
        self.0
    }

    /// Implementer code (bits \[31:24\]).
    #[inline]
    #[must_use]
    pub const fn implementer(self) -> u8 {
        field::read(self.0, MIDR::IMPLEMENTER) as u8
    }

    /// Variant (bits \[23:20\]).
    #[inline]
    #[must_use]
    pub const fn variant(self) -> u8 {
        field::read(self.0, MIDR::VARIANT) as u8
    }

    /// Raw architecture code (bits \[19:16\]).
    #[inline]
    #[must_use]
    pub const fn architecture_field(self) -> u8 {
        field::read(self.0, MIDR::ARCHITECTURE) as u8
    }

    /// Decoded architecture.
    #[inline]
    #[must_use]
    pub const fn architecture(self) -> Architecture {
        Architecture::from_field(self.architecture_field())
    }

    /// Primary part number (bits \[15:4\]).
    #[inline]
    #[must_use]
    pub const fn part_number(self) -> u16 {
        field::read(self.0, MIDR::PART) as u16
    }

    /// Revision (bits \[3:0\]).
    #[inline]
    #[must_use]
    pub const fn revision(self) -> u8 {
        field::read(self.0, MIDR::REVISION) as u8
    }

    /// Which CPU family this is.
    #[must_use]
    pub const fn cpu_kind(self) -> CpuKind {
        match (self.implementer(), self.part_number()) {
            (IMPLEMENTER_ARM, 0x926) => CpuKind::Arm926ejs,
            (IMPLEMENTER_DEC, 0xa11) => CpuKind::Sa1100,
            (IMPLEMENTER_INTEL, 0xb11) => CpuKind::Sa1110,
            (IMPLEMENTER_INTEL, _) if matches!(self.architecture(), Architecture::V5TE) => {
                CpuKind::XScale
            }
            _ => CpuKind::Other,
        }
    }

    /// The value as a `tock-registers` copy, for field-level access.
    #[inline]
    #[must_use]
    pub fn as_register(self) -> LocalRegisterCopy<u32, MIDR::Register> {
        LocalRegisterCopy::new(self.0)
    }
}

impl fmt::Debug for Midr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Midr({:#010x}, {:?})", self.0, self.cpu_kind())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use tock_registers::debug::RegisterDebugInfo;

    proptest! {
        #![proptest_config(crate::testing::proptest_config(256))]
        /// Every const accessor reads exactly its `tock-registers` field.
        #[test]
        fn accessors_agree_with_tock_fields(bits in any::<u32>()) {
            let m = Midr::from_bits(bits);
            let fields = MIDR::Register::fields();
            for (name, f) in MIDR::Register::field_names().iter().zip(fields) {
                let ours = match *name {
                    "IMPLEMENTER" => u32::from(m.implementer()),
                    "VARIANT" => u32::from(m.variant()),
                    "ARCHITECTURE" => u32::from(m.architecture_field()),
                    "PART" => u32::from(m.part_number()),
                    "REVISION" => u32::from(m.revision()),
                    other => panic!("MIDR::{other} has no accessor listed"),
                };
                prop_assert_eq!(ours, m.as_register().read(*f), "{}", name);
            }
            prop_assert_eq!(
                m.architecture(),
                Architecture::from_field(m.as_register().read(MIDR::ARCHITECTURE) as u8)
            );
        }
    }

    #[test]
    fn qemu_arm926_fields() {
        let m = Midr::QEMU_ARM926;
        assert_eq!(m.implementer(), 0x41);
        assert_eq!(m.variant(), 0);
        assert_eq!(m.architecture(), Architecture::V5TEJ);
        assert_eq!(m.part_number(), 0x926);
        assert_eq!(m.revision(), 5);
        assert_eq!(m.cpu_kind(), CpuKind::Arm926ejs);
        let r = m.as_register();
        assert_eq!(r.read(MIDR::IMPLEMENTER), 0x41);
        assert_eq!(r.read(MIDR::PART), 0x926);
        assert_eq!(r.read(MIDR::REVISION), 5);
    }

    #[test]
    fn known_cpus_are_identified() {
        assert_eq!(Midr::QEMU_PXA255.cpu_kind(), CpuKind::XScale);
        assert_eq!(Midr::QEMU_PXA255.architecture(), Architecture::V5TE);
        assert_eq!(Midr::QEMU_SA1110.cpu_kind(), CpuKind::Sa1110);
        assert_eq!(Midr::QEMU_SA1110.architecture(), Architecture::V4);
        assert_eq!(Midr::QEMU_SA1110.revision(), 9);
        for rev in 0..16 {
            assert_eq!(
                Midr::from_bits(0x4401_a110 | rev).cpu_kind(),
                CpuKind::Sa1100
            );
            assert_eq!(
                Midr::from_bits(0x6901_b110 | rev).cpu_kind(),
                CpuKind::Sa1110
            );
        }
        // Other XScale parts (PXA270, IXP425).
        assert_eq!(Midr::from_bits(0x6905_4117).cpu_kind(), CpuKind::XScale);
        assert_eq!(Midr::from_bits(0x6905_41c1).cpu_kind(), CpuKind::XScale);
        // ARM946E-S, ARM1136, SA-110.
        assert_eq!(Midr::from_bits(0x4105_9461).cpu_kind(), CpuKind::Other);
        assert_eq!(Midr::from_bits(0x4117_b363).cpu_kind(), CpuKind::Other);
        assert_eq!(Midr::from_bits(0x4401_a102).cpu_kind(), CpuKind::Other);
    }

    #[test]
    fn pid_limits() {
        assert_eq!(CpuKind::Sa1100.max_fcse_pid(), 63);
        assert_eq!(CpuKind::Sa1110.max_fcse_pid(), 63);
        assert_eq!(CpuKind::Arm926ejs.max_fcse_pid(), 127);
        assert_eq!(CpuKind::XScale.max_fcse_pid(), 127);
        assert!(!CpuKind::XScale.is_strongarm());
    }
}
