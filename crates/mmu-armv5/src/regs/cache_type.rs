//! The cache type register (`c0, 0, c0, 1`), read-only.
//!
//! Layout (ARM Architecture Reference Manual, ARMv4/ARMv5; ARM926EJ-S TRM
//! section 2.3.2):
//!
//! | bits | field |
//! |------|-------|
//! | \[31:29\] | zero in this format (ARMv7 uses `0b100`) |
//! | \[28:25\] | `Ctype`: write policy, cleaning method, lockdown format |
//! | \[24\]    | `S`: 1 = separate I and D caches (Harvard), 0 = unified |
//! | \[23:12\] | `Dsize` |
//! | \[11:0\]  | `Isize` |
//!
//! Each size field: \[11\] reserved (ARMv6: `P`, page colouring), \[10\]
//! reserved, \[9:6\] `Size`, \[5:3\] `Assoc`, \[2\] `M`, \[1:0\] `Len`, with
//!
//! * cache size = `(2 + M) << (Size + 8)` bytes,
//! * ways = `(2 + M) << (Assoc - 1)`, or 1 (direct mapped) if `Assoc` = 0 and `M` = 0,
//!   and no cache at all if `Assoc` = 0 and `M` = 1,
//! * line length = `1 << (Len + 3)` bytes.
//!
//! The reserved bits \[11:10\] are ignored: QEMU's `arm926` reports
//! `0x01dd20d2` (inherited from its ARM1136 model) whose `Dsize` has them set.
//! That value decodes as a Harvard cache with `Ctype` 0 (write-through), a
//! 64 KiB 4-way D-cache and a 4 KiB 4-way I-cache, both with 32-byte lines.
//!
//! CPUs without the register (StrongARM SA-1100/SA-1110) return the main ID
//! register instead, whose top bits are non-zero: [`CacheType::decode`]
//! rejects that with [`CacheTypeError::NotThisFormat`].

use super::field;
use core::fmt;
use tock_registers::LocalRegisterCopy;

pub use fields::{CACHE_SIZE, CTR};

/// `tock-registers` field definitions (the macro's generated items carry no docs of their own).
#[allow(missing_docs)]
mod fields {
    use tock_registers::register_bitfields;

    register_bitfields![u32,
    /// Cache type register fields.
    pub CTR [
        /// Must be zero in the ARMv4/ARMv5 format.
        FORMAT OFFSET(29) NUMBITS(3) [],
        /// Cache type: write policy, cleaning method, lockdown format.
        CTYPE OFFSET(25) NUMBITS(4) [],
        /// Separate I and D caches.
        S OFFSET(24) NUMBITS(1) [],
        /// D-cache (or unified cache) size field.
        DSIZE OFFSET(12) NUMBITS(12) [],
        /// I-cache (or unified cache) size field.
        ISIZE OFFSET(0) NUMBITS(12) []
    ],
    /// Fields of one 12-bit size field (`Dsize` or `Isize`).
    pub CACHE_SIZE [
        /// ARMv6 page colouring restriction; reserved on ARMv5.
        P OFFSET(11) NUMBITS(1) [],
        /// Size exponent.
        SIZE OFFSET(6) NUMBITS(4) [],
        /// Associativity exponent.
        ASSOC OFFSET(3) NUMBITS(3) [],
        /// Multiplier (x3 instead of x2).
        M OFFSET(2) NUMBITS(1) [],
        /// Line length exponent.
        LEN OFFSET(0) NUMBITS(2) []
    ]
    ];
}

/// Why a cache type register value could not be decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum CacheTypeError {
    /// Bits \[31:29\] are not zero: not the ARMv4/ARMv5 format (an ARMv7
    /// register, or the main ID register of a CPU without a cache type register).
    NotThisFormat(u32),
    /// A `Ctype` value the architecture reserves.
    ReservedCtype(u8),
    /// A size field whose size is not a whole number of `ways * line` sets.
    Geometry {
        /// Which cache the field describes.
        cache: CacheSide,
        /// The 12-bit size field.
        field: u16,
    },
    /// A geometry whose size is not a whole, non-zero number of
    /// `ways * line` sets, or with zero ways or a line that is not a power
    /// of two (see [`CacheGeometry::new`]).
    BadGeometry {
        /// Total size in bytes.
        size: u32,
        /// Number of ways.
        ways: u32,
        /// Line length in bytes.
        line: u32,
    },
    /// `S` = 0 (unified cache) but `Dsize` and `Isize` differ.
    UnifiedMismatch {
        /// The `Dsize` field.
        dsize: u16,
        /// The `Isize` field.
        isize: u16,
    },
}

impl fmt::Display for CacheTypeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            CacheTypeError::NotThisFormat(v) => write!(
                f,
                "cache type register {v:#010x} is not in the ARMv4/ARMv5 format"
            ),
            CacheTypeError::ReservedCtype(c) => write!(f, "reserved cache type {c:#06b}"),
            CacheTypeError::Geometry { cache, field } => write!(
                f,
                "{cache:?} size field {field:#05x} describes an impossible geometry"
            ),
            CacheTypeError::BadGeometry { size, ways, line } => write!(
                f,
                "{size} bytes are not a whole number of sets of {ways} ways of {line}-byte lines"
            ),
            CacheTypeError::UnifiedMismatch { dsize, isize } => write!(
                f,
                "unified cache with different size fields (Dsize {dsize:#05x}, Isize {isize:#05x})"
            ),
        }
    }
}

impl core::error::Error for CacheTypeError {}

/// Which cache a size field describes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum CacheSide {
    /// The D-cache (`Dsize`), or the unified cache.
    Data,
    /// The I-cache (`Isize`).
    Instruction,
}

impl fmt::Display for CacheSide {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            CacheSide::Instruction => "I-cache",
            CacheSide::Data => "D-cache",
        })
    }
}

/// How dirty lines are cleaned.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum CleanMethod {
    /// Write-through cache: nothing to clean.
    NotNeeded,
    /// Clean by reading a block of memory (StrongARM style).
    ReadBlock,
    /// Clean with CP15 register 7 operations.
    Register7,
}

/// Cache lockdown support.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Lockdown {
    /// No lockdown.
    None,
    /// Format A.
    FormatA,
    /// Format B.
    FormatB,
    /// Format C (ARM926EJ-S).
    FormatC,
    /// Format D.
    FormatD,
}

/// The decoded `Ctype` field.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct CacheClass {
    /// Whether the cache is write-back (otherwise write-through).
    pub write_back: bool,
    /// How dirty lines are cleaned.
    pub clean: CleanMethod,
    /// Lockdown support.
    pub lockdown: Lockdown,
}

impl CacheClass {
    /// Decodes a four-bit `Ctype` value.
    ///
    /// # Errors
    /// [`CacheTypeError::ReservedCtype`] for values the architecture reserves.
    pub const fn from_ctype(ctype: u8) -> Result<CacheClass, CacheTypeError> {
        let (write_back, clean, lockdown) = match ctype {
            0b0000 => (false, CleanMethod::NotNeeded, Lockdown::None),
            0b0001 => (true, CleanMethod::ReadBlock, Lockdown::None),
            0b0010 => (true, CleanMethod::Register7, Lockdown::None),
            0b0101 => (true, CleanMethod::Register7, Lockdown::FormatD),
            0b0110 => (true, CleanMethod::Register7, Lockdown::FormatA),
            0b0111 => (true, CleanMethod::Register7, Lockdown::FormatB),
            0b1110 => (true, CleanMethod::Register7, Lockdown::FormatC),
            other => return Err(CacheTypeError::ReservedCtype(other)),
        };
        Ok(CacheClass {
            write_back,
            clean,
            lockdown,
        })
    }
}

/// Size, associativity and line length of one cache.
///
/// The fields are private: [`CacheGeometry::new`] (and the register decoder)
/// only make geometries with at least one set, so [`CacheGeometry::sets`]
/// never divides by zero.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct CacheGeometry {
    size: u32,
    ways: u32,
    line: u32,
}

impl CacheGeometry {
    /// A cache of `size` bytes, `ways` ways and `line`-byte lines.
    ///
    /// # Errors
    /// [`CacheTypeError::BadGeometry`] unless `ways` is at least 1, `line`
    /// is a power of two, and `size` is a non-zero multiple of
    /// `ways * line` (which must fit in 32 bits).
    pub const fn new(size: u32, ways: u32, line: u32) -> Result<CacheGeometry, CacheTypeError> {
        let bad = CacheTypeError::BadGeometry { size, ways, line };
        if ways == 0 || !line.is_power_of_two() {
            return Err(bad);
        }
        let Some(set_bytes) = ways.checked_mul(line) else {
            return Err(bad);
        };
        if size < set_bytes || !size.is_multiple_of(set_bytes) {
            return Err(bad);
        }
        Ok(CacheGeometry { size, ways, line })
    }

    /// Total size in bytes.
    #[inline]
    #[must_use]
    pub const fn size(self) -> u32 {
        self.size
    }

    /// Number of ways (1 = direct mapped).
    #[inline]
    #[must_use]
    pub const fn ways(self) -> u32 {
        self.ways
    }

    /// Line length in bytes.
    #[inline]
    #[must_use]
    pub const fn line(self) -> u32 {
        self.line
    }

    /// Number of sets: `size / (ways * line)`, at least 1.
    #[inline]
    #[must_use]
    pub const fn sets(self) -> u32 {
        self.size / (self.ways * self.line)
    }

    /// Decodes a 12-bit size field (bits \[11:10\] are ignored).
    ///
    /// Returns `Ok(None)` when the field says there is no cache (`M` = 1, `Assoc` = 0).
    ///
    /// # Errors
    /// [`CacheTypeError::Geometry`] if the size is not a whole, non-zero number
    /// of `ways * line` sets.
    pub const fn decode(
        field: u16,
        cache: CacheSide,
    ) -> Result<Option<CacheGeometry>, CacheTypeError> {
        let f = field as u32;
        let len = field::read(f, CACHE_SIZE::LEN);
        let m = field::read(f, CACHE_SIZE::M);
        let assoc = field::read(f, CACHE_SIZE::ASSOC);
        let size_exp = field::read(f, CACHE_SIZE::SIZE);
        if assoc == 0 && m == 1 {
            return Ok(None);
        }
        let size = (2 + m) << (size_exp + 8);
        let ways = if assoc == 0 {
            1
        } else {
            (2 + m) << (assoc - 1)
        };
        let line = 1 << (len + 3);
        match CacheGeometry::new(size, ways, line) {
            Ok(g) => Ok(Some(g)),
            Err(_) => Err(CacheTypeError::Geometry {
                cache,
                // Both size fields are as wide as `Isize`.
                field: (f & CTR::ISIZE.mask) as u16,
            }),
        }
    }
}

/// A fully decoded cache type register.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct CacheInfo {
    /// Write policy, cleaning method and lockdown format.
    pub class: CacheClass,
    /// Separate I- and D-caches (`S` = 1).
    pub harvard: bool,
    /// The D-cache (or the unified cache), if present.
    pub dcache: Option<CacheGeometry>,
    /// The I-cache (or, if not Harvard, the unified cache again), if present.
    pub icache: Option<CacheGeometry>,
}

/// A raw cache type register value.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[repr(transparent)]
pub struct CacheType(u32);

impl CacheType {
    /// QEMU 7.2's `arm926` value.
    pub const QEMU_ARM926: CacheType = CacheType(0x01dd_20d2);
    /// An ARM926EJ-S with a 16 KiB I-cache and an 8 KiB D-cache (ARM926EJ-S
    /// TRM, table 2-10): write-back, register 7 cleaning, format C lockdown,
    /// 4-way, 32-byte lines.
    pub const ARM926_16K_I_8K_D: CacheType = CacheType(0x1d11_2152);

    /// A value from the raw register bits.
    #[inline]
    #[must_use]
    pub const fn from_bits(bits: u32) -> CacheType {
        CacheType(bits)
    }

    /// The raw register value.
    #[inline]
    #[must_use]
    pub const fn bits(self) -> u32 {
        self.0
    }

    /// The raw `Ctype` field.
    #[inline]
    #[must_use]
    pub const fn ctype(self) -> u8 {
        field::read(self.0, CTR::CTYPE) as u8
    }

    /// `S`: separate I and D caches.
    #[inline]
    #[must_use]
    pub const fn harvard(self) -> bool {
        field::is_set(self.0, CTR::S)
    }

    /// The raw `Dsize` field.
    #[inline]
    #[must_use]
    pub const fn dsize(self) -> u16 {
        field::read(self.0, CTR::DSIZE) as u16
    }

    /// The raw `Isize` field.
    #[inline]
    #[must_use]
    pub const fn isize(self) -> u16 {
        field::read(self.0, CTR::ISIZE) as u16
    }

    /// Decodes and checks every field.
    ///
    /// # Errors
    /// See [`CacheTypeError`].
    pub const fn decode(self) -> Result<CacheInfo, CacheTypeError> {
        if field::read(self.0, CTR::FORMAT) != 0 {
            return Err(CacheTypeError::NotThisFormat(self.0));
        }
        let class = match CacheClass::from_ctype(self.ctype()) {
            Ok(c) => c,
            Err(e) => return Err(e),
        };
        let harvard = self.harvard();
        if !harvard && self.dsize() != self.isize() {
            return Err(CacheTypeError::UnifiedMismatch {
                dsize: self.dsize(),
                isize: self.isize(),
            });
        }
        let dcache = match CacheGeometry::decode(self.dsize(), CacheSide::Data) {
            Ok(g) => g,
            Err(e) => return Err(e),
        };
        let icache = match CacheGeometry::decode(self.isize(), CacheSide::Instruction) {
            Ok(g) => g,
            Err(e) => return Err(e),
        };
        Ok(CacheInfo {
            class,
            harvard,
            dcache,
            icache,
        })
    }

    /// The value as a `tock-registers` copy, for field-level access.
    #[inline]
    #[must_use]
    pub fn as_register(self) -> LocalRegisterCopy<u32, CTR::Register> {
        LocalRegisterCopy::new(self.0)
    }
}

impl fmt::Debug for CacheType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CacheType({:#010x})", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use tock_registers::debug::RegisterDebugInfo;

    const KIB: u32 = 1024;

    #[test]
    fn cache_sides_print_their_names() {
        use std::string::ToString;
        assert_eq!(CacheSide::Instruction.to_string(), "I-cache");
        assert_eq!(CacheSide::Data.to_string(), "D-cache");
    }

    /// A size field from its parts: `Size`, `Assoc`, `M`, `Len`.
    const fn sf(size: u16, assoc: u16, m: u16, len: u16) -> u16 {
        (size << 6) | (assoc << 3) | (m << 2) | len
    }

    #[test]
    fn real_arm926_value_decodes_per_the_trm() {
        let v = CacheType::ARM926_16K_I_8K_D;
        assert_eq!(v.ctype(), 0b1110);
        assert!(v.harvard());
        let reg = v.as_register();
        assert_eq!(reg.read(CTR::CTYPE), 0b1110);
        assert_eq!(reg.read(CTR::DSIZE), 0x112);
        let d = LocalRegisterCopy::<u32, CACHE_SIZE::Register>::new(u32::from(v.dsize()));
        assert_eq!(d.read(CACHE_SIZE::SIZE), 0b0100);
        assert_eq!(d.read(CACHE_SIZE::ASSOC), 0b010);
        assert_eq!(d.read(CACHE_SIZE::LEN), 0b10);
        let info = v.decode().unwrap();
        assert_eq!(
            info.class,
            CacheClass {
                write_back: true,
                clean: CleanMethod::Register7,
                lockdown: Lockdown::FormatC
            }
        );
        let dc = info.dcache.unwrap();
        assert_eq!(
            (dc.size(), dc.ways(), dc.line(), dc.sets()),
            (8 * KIB, 4, 32, 64)
        );
        let ic = info.icache.unwrap();
        assert_eq!(
            (ic.size(), ic.ways(), ic.line(), ic.sets()),
            (16 * KIB, 4, 32, 128)
        );
    }

    #[test]
    fn qemu_arm926_value_decodes_sanely() {
        let info = CacheType::QEMU_ARM926.decode().unwrap();
        assert!(info.harvard);
        assert_eq!(
            info.class,
            CacheClass {
                write_back: false,
                clean: CleanMethod::NotNeeded,
                lockdown: Lockdown::None
            }
        );
        let dc = info.dcache.unwrap();
        assert_eq!((dc.size(), dc.ways(), dc.line()), (64 * KIB, 4, 32));
        let ic = info.icache.unwrap();
        assert_eq!((ic.size(), ic.ways(), ic.line()), (4 * KIB, 4, 32));
    }

    #[test]
    fn qemu_pxa255_value_decodes() {
        // QEMU's XScale models report 0x0d172172.
        let info = CacheType::from_bits(0x0d17_2172).decode().unwrap();
        assert_eq!(info.class.lockdown, Lockdown::FormatA);
        let dc = info.dcache.unwrap();
        assert_eq!(
            (dc.size(), dc.ways(), dc.line(), dc.sets()),
            (16 * KIB, 64, 32, 8)
        );
    }

    #[test]
    fn strongarm_main_id_is_rejected() {
        for midr in [0x4401_a119u32, 0x6901_b119] {
            assert_eq!(
                CacheType::from_bits(midr).decode(),
                Err(CacheTypeError::NotThisFormat(midr))
            );
        }
    }

    #[test]
    fn reserved_ctype_and_mismatch_are_typed_errors() {
        assert_eq!(
            CacheType::from_bits((0b0011 << 25) | (1 << 24) | 0x152).decode(),
            Err(CacheTypeError::ReservedCtype(0b0011))
        );
        assert_eq!(
            CacheType::from_bits((0b1110 << 25) | (0x112 << 12) | 0x152).decode(),
            Err(CacheTypeError::UnifiedMismatch {
                dsize: 0x112,
                isize: 0x152
            })
        );
    }

    #[test]
    fn absent_and_impossible_caches() {
        // M = 1, Assoc = 0: no cache.
        assert_eq!(
            CacheGeometry::decode(sf(0b0101, 0, 1, 0b10), CacheSide::Data),
            Ok(None)
        );
        // 512 bytes (Size 0), 128 ways (Assoc 7) of 64-byte lines: impossible.
        assert_eq!(
            CacheGeometry::decode(sf(0, 0b111, 0, 0b11), CacheSide::Instruction),
            Err(CacheTypeError::Geometry {
                cache: CacheSide::Instruction,
                field: sf(0, 0b111, 0, 0b11)
            })
        );
        // Direct mapped.
        let g = CacheGeometry::decode(sf(0b0011, 0, 0, 0b10), CacheSide::Data)
            .unwrap()
            .unwrap();
        assert_eq!(
            (g.size(), g.ways(), g.line(), g.sets()),
            (4 * KIB, 1, 32, 128)
        );
        // M = 1: x3 sizes and ways.
        let g = CacheGeometry::decode(sf(0b0011, 1, 1, 0b10), CacheSide::Data)
            .unwrap()
            .unwrap();
        assert_eq!((g.size(), g.ways()), (6 * KIB, 3));
    }

    proptest! {
        #![proptest_config(crate::testing::proptest_config(256))]
        /// Every const accessor reads exactly its `tock-registers` field.
        #[test]
        fn accessors_agree_with_tock_fields(bits in any::<u32>()) {
            let v = CacheType::from_bits(bits);
            let r = v.as_register();
            let fields = CTR::Register::fields();
            for (name, f) in CTR::Register::field_names().iter().zip(fields) {
                let ours = match *name {
                    // No accessor: `decode` refuses a non-zero format.
                    "FORMAT" => {
                        let refused =
                            matches!(v.decode(), Err(CacheTypeError::NotThisFormat(b)) if b == bits);
                        prop_assert_eq!(refused, r.read(*f) != 0);
                        continue;
                    }
                    "CTYPE" => u32::from(v.ctype()),
                    "S" => u32::from(v.harvard()),
                    "DSIZE" => u32::from(v.dsize()),
                    "ISIZE" => u32::from(v.isize()),
                    other => panic!("CTR::{other} has no accessor listed"),
                };
                prop_assert_eq!(ours, r.read(*f), "{}", name);
            }
        }

        /// [`CacheGeometry::decode`] reads each part of a size field from
        /// its `tock-registers` field and ignores `P`.
        #[test]
        fn size_field_decoding_agrees_with_tock_fields(field in 0u16..0x1000) {
            let r = LocalRegisterCopy::<u32, CACHE_SIZE::Register>::new(u32::from(field));
            for name in CACHE_SIZE::Register::field_names() {
                match *name {
                    "P" | "SIZE" | "ASSOC" | "M" | "LEN" => {}
                    other => panic!("CACHE_SIZE::{other} is not checked"),
                }
            }
            let size = r.read(CACHE_SIZE::SIZE);
            let assoc = r.read(CACHE_SIZE::ASSOC);
            let m = r.read(CACHE_SIZE::M);
            let len = r.read(CACHE_SIZE::LEN);
            let got = CacheGeometry::decode(field, CacheSide::Data);
            match got {
                Ok(None) => prop_assert!(assoc == 0 && m == 1),
                Ok(Some(g)) => {
                    prop_assert_eq!(g.size(), (2 + m) << (size + 8));
                    let ways = if assoc == 0 { 1 } else { (2 + m) << (assoc - 1) };
                    prop_assert_eq!(g.ways(), ways);
                    prop_assert_eq!(g.line(), 1 << (len + 3));
                }
                Err(e) => prop_assert_eq!(e, CacheTypeError::Geometry { cache: CacheSide::Data, field }),
            }
            let without_p = field & !(CACHE_SIZE::P::SET.mask() as u16);
            prop_assert_eq!(
                got.ok(),
                CacheGeometry::decode(without_p, CacheSide::Data).ok()
            );
        }

        #[test]
        fn decode_never_panics_and_is_consistent(bits in any::<u32>()) {
            if let Ok(info) = CacheType::from_bits(bits).decode() {
                for g in [info.dcache, info.icache].into_iter().flatten() {
                    prop_assert!(g.sets() >= 1);
                    prop_assert_eq!(g.sets() * g.ways() * g.line(), g.size());
                }
            }
        }

        /// Regression: `sets` divided by `ways * line` of public fields, so
        /// a geometry with zero ways panicked (division by zero) and a large
        /// `ways * line` overflowed. Only checked geometries exist now.
        #[test]
        fn only_geometries_with_sets_can_be_made(
            size in any::<u32>(),
            ways in prop_oneof![Just(0u32), Just(u32::MAX), 0u32..256],
            line in prop_oneof![Just(0u32), 0u32..1024, Just(1 << 31)],
        ) {
            match CacheGeometry::new(size, ways, line) {
                Ok(g) => {
                    prop_assert!(g.sets() >= 1);
                    prop_assert_eq!(
                        u64::from(g.sets()) * u64::from(g.ways()) * u64::from(g.line()),
                        u64::from(g.size())
                    );
                }
                Err(e) => prop_assert_eq!(e, CacheTypeError::BadGeometry { size, ways, line }),
            }
        }
    }

    #[test]
    fn zero_ways_or_lines_are_refused() {
        for (size, ways, line) in [
            (4096, 0, 32),
            (4096, 4, 0),
            (4096, 4, 48),
            (16, 4, 32),
            (u32::MAX, u32::MAX, 2),
        ] {
            assert_eq!(
                CacheGeometry::new(size, ways, line),
                Err(CacheTypeError::BadGeometry { size, ways, line })
            );
        }
        assert_eq!(
            CacheGeometry::new(8192, 4, 32).map(CacheGeometry::sets),
            Ok(64)
        );
    }
}
