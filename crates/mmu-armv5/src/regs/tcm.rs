//! Tightly coupled memory (ARM926EJ-S): the TCM status register
//! (`c0, 0, c0, 2`, read-only) and the D/I TCM region registers
//! (`c9, 0, c1, 0` and `c9, 0, c1, 1`).
//!
//! Per the ARM926EJ-S TRM (sections 2.3.3 and 2.3.9):
//!
//! * TCM status: bit 16 = a DTCM is present, bit 0 = an ITCM is present.
//! * Region register: bits \[31:12\] base (physical) address, \[11:6\] zero,
//!   \[5:2\] size (read-only, set by the hardware integration), bit 1 zero,
//!   bit 0 enable. Size `0b0000` means no TCM; `0b0011` is 4 KiB and each
//!   step doubles up to `0b1011` = 1 MiB; the other encodings are reserved.
//!   The base must be aligned to the size.
//!
//! QEMU's `arm926` has no TCM: the status register reads 0 and the region
//! registers trap as undefined instructions. Check [`TcmStatus`] first.

use super::field;
use crate::addr::PhysAddr;
use core::fmt;
use tock_registers::LocalRegisterCopy;

pub use fields::{TCM_REGION, TCM_STATUS};

/// `tock-registers` field definitions (the macro's generated items carry no docs of their own).
#[allow(missing_docs)]
mod fields {
    use tock_registers::register_bitfields;

    register_bitfields![u32,
    /// TCM status register fields.
    pub TCM_STATUS [
        /// A data TCM is present.
        DTCM OFFSET(16) NUMBITS(1) [],
        /// An instruction TCM is present.
        ITCM OFFSET(0) NUMBITS(1) []
    ],
    /// TCM region register fields.
    pub TCM_REGION [
        /// Bits \[31:12\] of the base address.
        BASE OFFSET(12) NUMBITS(20) [],
        /// Size encoding.
        SIZE OFFSET(2) NUMBITS(4) [],
        /// Region enabled.
        ENABLE OFFSET(0) NUMBITS(1) []
    ]
    ];
}

/// Why a TCM region value is not valid.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum TcmRegionError {
    /// A size encoding the ARM926EJ-S TRM reserves (`0b0001`, `0b0010`, `0b1100`..=`0b1111`).
    ReservedSize(u8),
    /// The base is not aligned to the region size (or to 4 KiB).
    Misaligned {
        /// The base address.
        base: u32,
        /// The required alignment in bytes.
        align: u32,
    },
}

impl fmt::Display for TcmRegionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            TcmRegionError::ReservedSize(s) => write!(f, "reserved TCM size encoding {s:#06b}"),
            TcmRegionError::Misaligned { base, align } => {
                write!(f, "TCM base {base:#010x} is not aligned to {align:#x}")
            }
        }
    }
}

impl core::error::Error for TcmRegionError {}

/// The TCM status register: which TCMs the core has.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default, Debug)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[repr(transparent)]
pub struct TcmStatus(u32);

impl TcmStatus {
    /// A value from the raw register bits.
    #[inline]
    #[must_use]
    pub const fn from_bits(bits: u32) -> TcmStatus {
        TcmStatus(bits)
    }

    /// The raw register value.
    #[inline]
    #[must_use]
    pub const fn bits(self) -> u32 {
        self.0
    }

    /// A data TCM is present (bit 16).
    #[inline]
    #[must_use]
    pub const fn dtcm_present(self) -> bool {
        field::is_set(self.0, TCM_STATUS::DTCM)
    }

    /// An instruction TCM is present (bit 0).
    #[inline]
    #[must_use]
    pub const fn itcm_present(self) -> bool {
        field::is_set(self.0, TCM_STATUS::ITCM)
    }

    /// The value as a `tock-registers` copy, for field-level access.
    #[inline]
    #[must_use]
    pub fn as_register(self) -> LocalRegisterCopy<u32, TCM_STATUS::Register> {
        LocalRegisterCopy::new(self.0)
    }
}

/// A TCM size, as the region register's size field encodes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct TcmSize(u8);

impl TcmSize {
    /// No TCM (`0b0000`).
    pub const NONE: TcmSize = TcmSize(0);

    /// Decodes a four-bit size field.
    ///
    /// # Errors
    /// [`TcmRegionError::ReservedSize`] for the reserved encodings.
    #[inline]
    pub const fn from_field(field: u8) -> Result<TcmSize, TcmRegionError> {
        match field {
            0 | 0b0011..=0b1011 => Ok(TcmSize(field)),
            other => Err(TcmRegionError::ReservedSize(other)),
        }
    }

    /// The size for `bytes` (0, or a power of two from 4 KiB to 1 MiB), if it has an encoding.
    #[inline]
    #[must_use]
    pub const fn from_bytes(bytes: u32) -> Option<TcmSize> {
        if bytes == 0 {
            return Some(TcmSize::NONE);
        }
        if !bytes.is_power_of_two() || bytes < 4096 || bytes > (1 << 20) {
            return None;
        }
        // 4 KiB = 2^12 encodes as 3.
        Some(TcmSize((bytes.trailing_zeros() - 9) as u8))
    }

    /// The four-bit field value.
    #[inline]
    #[must_use]
    pub const fn field(self) -> u8 {
        self.0
    }

    /// The size in bytes (0 for no TCM).
    #[inline]
    #[must_use]
    pub const fn bytes(self) -> u32 {
        if self.0 == 0 {
            0
        } else {
            1 << (self.0 as u32 + 9)
        }
    }
}

/// A TCM region register value: base, size and enable.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct TcmRegion {
    base: PhysAddr,
    size: TcmSize,
    enabled: bool,
}

impl TcmRegion {
    /// A region at `base` of `size`.
    ///
    /// The size field is read-only on the ARM926EJ-S: writing a region keeps
    /// the hardware's size, so pass the size read back from the register.
    ///
    /// # Errors
    /// [`TcmRegionError::Misaligned`] if `base` is not aligned to 4 KiB and to `size`.
    pub const fn new(
        base: PhysAddr,
        size: TcmSize,
        enabled: bool,
    ) -> Result<TcmRegion, TcmRegionError> {
        // At least the weight of the lowest base bit (4 KiB).
        let min = 1 << TCM_REGION::BASE.shift;
        let align = if size.bytes() > min {
            size.bytes()
        } else {
            min
        };
        let b = base.as_u32();
        if b & (align - 1) != 0 {
            return Err(TcmRegionError::Misaligned { base: b, align });
        }
        Ok(TcmRegion {
            base,
            size,
            enabled,
        })
    }

    /// Decodes a raw register value.
    ///
    /// # Errors
    /// [`TcmRegionError::ReservedSize`] for a reserved size encoding,
    /// [`TcmRegionError::Misaligned`] if the base is not aligned to the size.
    pub const fn from_bits(bits: u32) -> Result<TcmRegion, TcmRegionError> {
        let size = match TcmSize::from_field(field::read(bits, TCM_REGION::SIZE) as u8) {
            Ok(s) => s,
            Err(e) => return Err(e),
        };
        TcmRegion::new(
            PhysAddr::new(bits & field::mask(TCM_REGION::BASE)),
            size,
            field::is_set(bits, TCM_REGION::ENABLE),
        )
    }

    /// The raw register value.
    #[inline]
    #[must_use]
    pub const fn bits(self) -> u32 {
        // `new` checked that the base has no bits below `BASE`.
        self.base.as_u32()
            | field::place(TCM_REGION::SIZE, self.size.0 as u32)
            | field::place(TCM_REGION::ENABLE, self.enabled as u32)
    }

    /// The base address.
    #[inline]
    #[must_use]
    pub const fn base(self) -> PhysAddr {
        self.base
    }

    /// The size.
    #[inline]
    #[must_use]
    pub const fn size(self) -> TcmSize {
        self.size
    }

    /// Whether the region is enabled.
    #[inline]
    #[must_use]
    pub const fn enabled(self) -> bool {
        self.enabled
    }

    /// This region with its enable bit set to `on`.
    #[inline]
    #[must_use]
    pub const fn with_enabled(self, on: bool) -> TcmRegion {
        TcmRegion {
            enabled: on,
            ..self
        }
    }

    /// The value as a `tock-registers` copy, for field-level access.
    #[inline]
    #[must_use]
    pub fn as_register(self) -> LocalRegisterCopy<u32, TCM_REGION::Register> {
        LocalRegisterCopy::new(self.bits())
    }
}

impl fmt::Debug for TcmRegion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "TcmRegion({:#010x}, {} KiB, {})",
            self.base.as_u32(),
            self.size.bytes() / 1024,
            if self.enabled { "on" } else { "off" }
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use tock_registers::debug::RegisterDebugInfo;

    #[test]
    fn status_bits() {
        let s = TcmStatus::from_bits(1 << 16);
        assert!(s.dtcm_present() && !s.itcm_present());
        let s = TcmStatus::from_bits(1);
        assert!(!s.dtcm_present() && s.itcm_present());
        assert_eq!(s.as_register().read(TCM_STATUS::ITCM), 1);
        assert_eq!(TcmStatus::from_bits(0), TcmStatus::default());
    }

    #[test]
    fn size_encodings_follow_the_trm() {
        let table = [
            (0b0000, 0),
            (0b0011, 4 << 10),
            (0b0100, 8 << 10),
            (0b0101, 16 << 10),
            (0b0110, 32 << 10),
            (0b0111, 64 << 10),
            (0b1000, 128 << 10),
            (0b1001, 256 << 10),
            (0b1010, 512 << 10),
            (0b1011, 1 << 20),
        ];
        for (field, bytes) in table {
            let s = TcmSize::from_field(field).unwrap();
            assert_eq!(s.bytes(), bytes);
            assert_eq!(TcmSize::from_bytes(bytes), Some(s));
        }
        for reserved in [0b0001u8, 0b0010, 0b1100, 0b1101, 0b1110, 0b1111] {
            assert_eq!(
                TcmSize::from_field(reserved),
                Err(TcmRegionError::ReservedSize(reserved))
            );
        }
        assert_eq!(TcmSize::from_bytes(2048), None);
        assert_eq!(TcmSize::from_bytes(3 << 12), None);
        assert_eq!(TcmSize::from_bytes(2 << 20), None);
    }

    #[test]
    fn region_layout() {
        // Linux's DTCM placement with 32 KiB, enabled.
        let size = TcmSize::from_bytes(32 << 10).unwrap();
        let r = TcmRegion::new(PhysAddr::new(0xfffe_8000), size, true).unwrap();
        assert_eq!(r.bits(), 0xfffe_8000 | (0b0110 << 2) | 1);
        assert_eq!(TcmRegion::from_bits(r.bits()), Ok(r));
        let reg = r.as_register();
        assert_eq!(reg.read(TCM_REGION::BASE), 0xfffe8);
        assert_eq!(reg.read(TCM_REGION::SIZE), 0b0110);
        assert_eq!(reg.read(TCM_REGION::ENABLE), 1);
        assert!(!r.with_enabled(false).enabled());
        assert_eq!(r.with_enabled(false).bits(), r.bits() & !1);
    }

    #[test]
    fn region_errors() {
        let size = TcmSize::from_bytes(32 << 10).unwrap();
        assert_eq!(
            TcmRegion::new(PhysAddr::new(0xfffe_4000), size, true),
            Err(TcmRegionError::Misaligned {
                base: 0xfffe_4000,
                align: 32 << 10
            })
        );
        assert_eq!(
            TcmRegion::new(PhysAddr::new(0x100), TcmSize::NONE, false),
            Err(TcmRegionError::Misaligned {
                base: 0x100,
                align: 4096
            })
        );
        assert_eq!(
            TcmRegion::from_bits(0x1000 | (0b1111 << 2)),
            Err(TcmRegionError::ReservedSize(0b1111))
        );
    }

    proptest! {
        #![proptest_config(crate::testing::proptest_config(256))]
        /// The status accessors read exactly their `tock-registers` fields.
        #[test]
        fn status_accessors_agree_with_tock_fields(bits in any::<u32>()) {
            let s = TcmStatus::from_bits(bits);
            let fields = TCM_STATUS::Register::fields();
            for (name, f) in TCM_STATUS::Register::field_names().iter().zip(fields) {
                let ours = match *name {
                    "DTCM" => s.dtcm_present(),
                    "ITCM" => s.itcm_present(),
                    other => panic!("TCM_STATUS::{other} has no accessor listed"),
                };
                prop_assert_eq!(ours, s.as_register().is_set(*f), "{}", name);
            }
        }

        /// Decoding and encoding a region go through exactly the
        /// `tock-registers` fields.
        #[test]
        fn region_accessors_agree_with_tock_fields(bits in any::<u32>(), on in any::<bool>()) {
            let raw = LocalRegisterCopy::<u32, TCM_REGION::Register>::new(bits);
            let Ok(r) = TcmRegion::from_bits(bits) else {
                // Refused: a reserved size, or a base not aligned to the size.
                let size = TcmSize::from_field(raw.read(TCM_REGION::SIZE) as u8);
                let base = TCM_REGION::BASE.val(raw.read(TCM_REGION::BASE)).value;
                prop_assert!(size.map_or(true, |s| !base.is_multiple_of(s.bytes().max(1))));
                return Ok(());
            };
            let fields = TCM_REGION::Register::fields();
            for (name, f) in TCM_REGION::Register::field_names().iter().zip(fields) {
                let ours = match *name {
                    "BASE" => r.base().as_u32() >> f.shift,
                    "SIZE" => u32::from(r.size().field()),
                    "ENABLE" => u32::from(r.enabled()),
                    other => panic!("TCM_REGION::{other} has no accessor listed"),
                };
                prop_assert_eq!(ours, raw.read(*f), "{}", name);
                prop_assert_eq!(r.as_register().read(*f), ours, "{}", name);
            }
            let fields = TCM_REGION::BASE.val(raw.read(TCM_REGION::BASE))
                + TCM_REGION::SIZE.val(raw.read(TCM_REGION::SIZE))
                + TCM_REGION::ENABLE.val(u32::from(on));
            prop_assert_eq!(r.with_enabled(on).bits(), fields.value);
        }

        #[test]
        fn from_bits_never_panics_and_round_trips(bits in any::<u32>()) {
            if let Ok(r) = TcmRegion::from_bits(bits) {
                // Bits [11:6] and 1 are not part of the value.
                prop_assert_eq!(r.bits(), bits & 0xFFFF_F03D);
                prop_assert_eq!(TcmRegion::from_bits(r.bits()), Ok(r));
            }
        }
    }
}
