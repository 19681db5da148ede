//! Descriptor attributes: access permissions, cacheability, XScale TEX bits.

use core::fmt;

/// A descriptor field that failed a check.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum DescriptorError {
    /// A TEX value above 7.
    TexOutOfRange(u8),
    /// An AP value above 3.
    ApOutOfRange(u8),
}

impl fmt::Display for DescriptorError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            DescriptorError::TexOutOfRange(t) => write!(f, "TEX value {t} does not fit in 3 bits"),
            DescriptorError::ApOutOfRange(a) => write!(f, "AP value {a} does not fit in 2 bits"),
        }
    }
}

impl core::error::Error for DescriptorError {}

/// The SCTLR S (system) and R (ROM) protection bits, which give AP = `00` its meaning.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ProtectionBits {
    /// SCTLR.S (bit 8).
    pub system: bool,
    /// SCTLR.R (bit 9).
    pub rom: bool,
}

/// A two-bit AP (access permission) field.
///
/// What each value allows, for privileged and user accesses:
///
/// | AP | S | R | privileged | user |
/// |---|---|---|---|---|
/// | `00` | 0 | 0 | none | none |
/// | `00` | 1 | 0 | read | none |
/// | `00` | 0 | 1 | read | read |
/// | `00` | 1 | 1 | UNPREDICTABLE: treated as none (as QEMU does) | none |
/// | `01` | x | x | read/write | none |
/// | `10` | x | x | read/write | read |
/// | `11` | x | x | read/write | read/write |
///
/// ARMv5 has no execute-never bit: an instruction fetch needs read permission.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[repr(u8)]
pub enum AccessPermission {
    /// `00`: no access, or read-only as selected by SCTLR.S/R.
    NoneOrRom = 0,
    /// `01`: privileged read/write, user none.
    PrivRw = 1,
    /// `10`: privileged read/write, user read-only.
    PrivRwUserRo = 2,
    /// `11`: read/write for both.
    ReadWrite = 3,
}

impl AccessPermission {
    /// All four values, in encoding order.
    pub const ALL: [AccessPermission; 4] = [
        AccessPermission::NoneOrRom,
        AccessPermission::PrivRw,
        AccessPermission::PrivRwUserRo,
        AccessPermission::ReadWrite,
    ];

    /// Decodes the low two bits.
    #[inline]
    #[must_use]
    pub const fn from_bits(bits: u32) -> AccessPermission {
        match bits & 3 {
            0 => AccessPermission::NoneOrRom,
            1 => AccessPermission::PrivRw,
            2 => AccessPermission::PrivRwUserRo,
            _ => AccessPermission::ReadWrite,
        }
    }

    /// The two-bit encoding.
    #[inline]
    #[must_use]
    pub const fn bits(self) -> u32 {
        self as u32
    }

    /// Whether a read (or instruction fetch) is allowed.
    #[must_use]
    pub const fn allows_read(self, privileged: bool, prot: ProtectionBits) -> bool {
        match self {
            AccessPermission::NoneOrRom => match (prot.system, prot.rom) {
                (true, false) => privileged,
                (false, true) => true,
                _ => false,
            },
            AccessPermission::PrivRw => privileged,
            AccessPermission::PrivRwUserRo | AccessPermission::ReadWrite => true,
        }
    }

    /// Whether a write is allowed.
    #[must_use]
    pub const fn allows_write(self, privileged: bool) -> bool {
        match self {
            AccessPermission::NoneOrRom => false,
            AccessPermission::PrivRw | AccessPermission::PrivRwUserRo => privileged,
            AccessPermission::ReadWrite => true,
        }
    }
}

/// The four AP fields of a large or small page, one per quarter (subpage).
///
/// For a large page the quarter is selected by VA bits \[15:14\], for a small
/// page by VA bits \[11:10\]; field `i` sits at descriptor bits `[5+2i:4+2i]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct SubpageAp(pub [AccessPermission; 4]);

impl SubpageAp {
    /// The same permission for all four subpages.
    #[must_use]
    pub const fn uniform(ap: AccessPermission) -> SubpageAp {
        SubpageAp([ap, ap, ap, ap])
    }

    /// Decodes descriptor bits \[11:4\].
    #[must_use]
    pub const fn from_descriptor(desc: u32) -> SubpageAp {
        SubpageAp([
            AccessPermission::from_bits(desc >> 4),
            AccessPermission::from_bits(desc >> 6),
            AccessPermission::from_bits(desc >> 8),
            AccessPermission::from_bits(desc >> 10),
        ])
    }

    /// Encodes into descriptor bits \[11:4\].
    #[must_use]
    pub const fn descriptor_bits(self) -> u32 {
        (self.0[0].bits() << 4)
            | (self.0[1].bits() << 6)
            | (self.0[2].bits() << 8)
            | (self.0[3].bits() << 10)
    }

    /// The permission of subpage `index` (taken modulo 4).
    #[must_use]
    pub const fn get(self, index: usize) -> AccessPermission {
        self.0[index & 3]
    }

    /// Whether all four subpages have the same permission.
    #[must_use]
    pub fn is_uniform(self) -> bool {
        self.0.iter().all(|&a| a == self.0[0])
    }
}

/// The C and B bits: how an access is cached and buffered.
///
/// Names follow the ARM926EJ-S and XScale meanings (C=1, B=0 is
/// write-through there; the SA-1100 treats it as cached, unbuffered).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[repr(u8)]
pub enum CachePolicy {
    /// C=0, B=0: uncached, unbuffered (strongly ordered; devices).
    Uncached = 0,
    /// C=0, B=1: uncached, bufferable.
    Buffered = 1,
    /// C=1, B=0: write-through cached.
    WriteThrough = 2,
    /// C=1, B=1: write-back cached.
    WriteBack = 3,
}

impl CachePolicy {
    /// All four values, in encoding order.
    pub const ALL: [CachePolicy; 4] = [
        CachePolicy::Uncached,
        CachePolicy::Buffered,
        CachePolicy::WriteThrough,
        CachePolicy::WriteBack,
    ];

    /// Decodes descriptor bits C (\[3\]) and B (\[2\]).
    #[inline]
    #[must_use]
    pub const fn from_descriptor(desc: u32) -> CachePolicy {
        match (desc >> 2) & 3 {
            0 => CachePolicy::Uncached,
            1 => CachePolicy::Buffered,
            2 => CachePolicy::WriteThrough,
            _ => CachePolicy::WriteBack,
        }
    }

    /// Encodes into descriptor bits C (\[3\]) and B (\[2\]).
    #[inline]
    #[must_use]
    pub const fn descriptor_bits(self) -> u32 {
        (self as u32) << 2
    }

    /// Whether the C bit is set.
    #[inline]
    #[must_use]
    pub const fn cacheable(self) -> bool {
        (self as u8) & 2 != 0
    }

    /// Whether the B bit is set.
    #[inline]
    #[must_use]
    pub const fn bufferable(self) -> bool {
        (self as u8) & 1 != 0
    }
}

/// XScale type-extension (TEX) bits; zero (the default) on other CPUs.
///
/// On XScale the low bit is the X bit that selects, with C and B, the
/// mini-data cache or write-allocate behaviour.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Tex(u8);

impl Tex {
    /// TEX = 0: the only value on non-XScale CPUs.
    pub const ZERO: Tex = Tex(0);

    /// A TEX value in 0..=7.
    pub const fn new(v: u8) -> Result<Tex, DescriptorError> {
        if v < 8 {
            Ok(Tex(v))
        } else {
            Err(DescriptorError::TexOutOfRange(v))
        }
    }

    /// From the low three bits of `bits`.
    #[must_use]
    pub const fn from_low_bits(bits: u32) -> Tex {
        Tex((bits & 7) as u8)
    }

    /// The value.
    #[must_use]
    pub const fn get(self) -> u8 {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn c_and_b_bits_of_every_policy() {
        use CachePolicy::*;
        for (p, c, b) in [
            (Uncached, false, false),
            (Buffered, false, true),
            (WriteThrough, true, false),
            (WriteBack, true, true),
        ] {
            assert_eq!((p.cacheable(), p.bufferable()), (c, b), "{p:?}");
        }
    }

    #[test]
    fn descriptor_errors_say_which_field_and_value() {
        assert_eq!(
            std::format!("{}", DescriptorError::TexOutOfRange(9)),
            "TEX value 9 does not fit in 3 bits"
        );
        assert_eq!(
            std::format!("{}", DescriptorError::ApOutOfRange(4)),
            "AP value 4 does not fit in 2 bits"
        );
    }

    const NONE: ProtectionBits = ProtectionBits {
        system: false,
        rom: false,
    };
    const S: ProtectionBits = ProtectionBits {
        system: true,
        rom: false,
    };
    const R: ProtectionBits = ProtectionBits {
        system: false,
        rom: true,
    };
    const SR: ProtectionBits = ProtectionBits {
        system: true,
        rom: true,
    };

    #[test]
    fn ap_table_from_the_manual() {
        use AccessPermission::*;
        // (ap, prot, priv read, priv write, user read, user write)
        let table = [
            (NoneOrRom, NONE, false, false, false, false),
            (NoneOrRom, S, true, false, false, false),
            (NoneOrRom, R, true, false, true, false),
            (NoneOrRom, SR, false, false, false, false),
            (PrivRw, NONE, true, true, false, false),
            (PrivRw, SR, true, true, false, false),
            (PrivRwUserRo, NONE, true, true, true, false),
            (ReadWrite, NONE, true, true, true, true),
            (ReadWrite, S, true, true, true, true),
        ];
        for (ap, prot, pr, pw, ur, uw) in table {
            assert_eq!(ap.allows_read(true, prot), pr, "{ap:?} {prot:?} priv read");
            assert_eq!(ap.allows_write(true), pw, "{ap:?} priv write");
            assert_eq!(ap.allows_read(false, prot), ur, "{ap:?} {prot:?} user read");
            assert_eq!(ap.allows_write(false), uw, "{ap:?} user write");
        }
    }

    #[test]
    fn subpage_fields_sit_at_bits_4_to_11() {
        use AccessPermission::*;
        let s = SubpageAp([ReadWrite, NoneOrRom, PrivRw, PrivRwUserRo]);
        assert_eq!(s.descriptor_bits(), (3 << 4) | (1 << 8) | (2 << 10));
        assert_eq!(SubpageAp::from_descriptor(s.descriptor_bits()), s);
        assert!(!s.is_uniform());
        assert!(SubpageAp::uniform(PrivRw).is_uniform());
    }

    #[test]
    fn cache_bits() {
        assert_eq!(CachePolicy::WriteBack.descriptor_bits(), 0b1100);
        assert_eq!(CachePolicy::WriteThrough.descriptor_bits(), 0b1000);
        assert_eq!(CachePolicy::Buffered.descriptor_bits(), 0b0100);
        for c in CachePolicy::ALL {
            assert_eq!(CachePolicy::from_descriptor(c.descriptor_bits()), c);
        }
        assert!(CachePolicy::WriteThrough.cacheable() && !CachePolicy::WriteThrough.bufferable());
        assert_eq!(Tex::new(8), Err(DescriptorError::TexOutOfRange(8)));
    }
}
