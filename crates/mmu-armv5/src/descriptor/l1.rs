//! First-level descriptors.

use super::attr::{AccessPermission, CachePolicy, Tex};
use crate::addr::{Domain, PhysAddr};
use crate::size::{Frame, Size1KiB, Size1MiB, Size4KiB};
use crate::table::TableKind;

const TYPE_COARSE: u32 = 0b01;
const TYPE_SECTION: u32 = 0b10;
const TYPE_FINE: u32 = 0b11;
/// Bit 4: "should be one" on ARM9 and StrongARM, must be zero on XScale.
const BIT4: u32 = 1 << 4;

const fn dom_bits(d: Domain) -> u32 {
    (d.get() as u32) << 5
}

const fn p_bit(p: bool) -> u32 {
    if p {
        1 << 9
    } else {
        0
    }
}

/// How a CPU wants bit 4 of first-level descriptors.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum L1Encoding {
    /// ARM9 and StrongARM: bit 4 set ("should be one").
    #[default]
    Arm9,
    /// XScale: bit 4 clear (it selects ECC/other behaviour there).
    XScale,
}

/// A section: 1 MiB mapped by one first-level entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SectionDesc {
    /// The physical 1 MiB frame.
    pub frame: Frame<Size1MiB>,
    /// Access permission (bits \[11:10\]).
    pub ap: AccessPermission,
    /// C and B bits.
    pub cache: CachePolicy,
    /// Domain (bits \[8:5\]).
    pub domain: Domain,
    /// The implementation-defined P bit \[9\] (ECC on some parts; keep zero on ARM926).
    pub p: bool,
    /// XScale TEX bits \[14:12\] (zero elsewhere).
    pub tex: Tex,
}

/// A pointer to a coarse second-level table (256 entries, 4 KiB granules).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CoarseTableDesc {
    /// Physical address of the table (1 KiB aligned).
    pub table: Frame<Size1KiB>,
    /// Domain of every page in this 1 MiB (bits \[8:5\]).
    pub domain: Domain,
    /// The implementation-defined P bit \[9\].
    pub p: bool,
}

impl CoarseTableDesc {
    /// Decodes `w` if it is a coarse-table link (`[1:0] = 01`), as
    /// [`L1Descriptor::from_bits`] would; `None` for every other kind.
    /// Small enough to inline where a kernel follows a live entry.
    #[inline]
    #[must_use]
    pub const fn from_bits(w: u32) -> Option<CoarseTableDesc> {
        if w & 3 == TYPE_COARSE {
            Some(CoarseTableDesc {
                table: Frame::containing(PhysAddr::new(w & 0xFFFF_FC00)),
                domain: Domain::from_low_bits(w >> 5),
                p: w & (1 << 9) != 0,
            })
        } else {
            None
        }
    }
}

/// A pointer to a fine second-level table (1024 entries, 1 KiB granules).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FineTableDesc {
    /// Physical address of the table (4 KiB aligned).
    pub table: Frame<Size4KiB>,
    /// Domain of every page in this 1 MiB (bits \[8:5\]).
    pub domain: Domain,
}

/// A decoded first-level descriptor.
///
/// ```
/// use mmu_armv5::descriptor::{
///     AccessPermission, CachePolicy, L1Descriptor, L1Encoding, SectionDesc, Tex,
/// };
/// use mmu_armv5::size::Frame;
/// use mmu_armv5::table::TableKind;
/// use mmu_armv5::{Domain, PhysAddr};
///
/// // A 1 MiB section of write-back RAM at 3 MiB, read/write, domain 2.
/// let section = L1Descriptor::Section(SectionDesc {
///     frame: Frame::from_start(PhysAddr::new(0x0030_0000)).unwrap(),
///     ap: AccessPermission::ReadWrite,
///     cache: CachePolicy::WriteBack,
///     domain: Domain::new(2).unwrap(),
///     p: false,
///     tex: Tex::ZERO,
/// });
/// // base | AP=3 at [11:10] | domain 2 at [8:5] | bit 4 | C | B | 0b10
/// assert_eq!(section.to_bits(), 0x0030_0C5E);
/// assert_eq!(section.encode(L1Encoding::XScale), 0x0030_0C4E); // bit 4 clear
/// assert_eq!(L1Descriptor::from_bits(0x0030_0C5E), section);
/// assert_eq!(section.domain(), Domain::new(2).ok());
///
/// // A coarse-table link: the table at 0x8400 in domain 1.
/// let coarse = L1Descriptor::from_bits(0x0000_8400 | (1 << 5) | 0b01);
/// assert_eq!(coarse.table(), Some((TableKind::Coarse, PhysAddr::new(0x8400))));
/// assert_eq!(coarse.domain(), Domain::new(1).ok());
///
/// // Low bits 0b00 are a fault; the other bits stay free for software.
/// assert_eq!(L1Descriptor::from_bits(0xABC0), L1Descriptor::Fault { raw: 0xABC0 });
/// assert!(!L1Descriptor::FAULT.is_valid());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum L1Descriptor {
    /// Invalid: any access faults. Bits \[31:2\] are ignored by the hardware and
    /// kept here for software use.
    Fault {
        /// The raw word (its low two bits are zero).
        raw: u32,
    },
    /// Points at a coarse second-level table.
    Coarse(CoarseTableDesc),
    /// Maps a 1 MiB section.
    Section(SectionDesc),
    /// Points at a fine second-level table.
    Fine(FineTableDesc),
}

impl L1Descriptor {
    /// The invalid descriptor with all bits zero.
    pub const FAULT: L1Descriptor = L1Descriptor::Fault { raw: 0 };

    /// Decodes a first-level word. Every word decodes; should-be-zero bits and
    /// bit 4 are ignored.
    #[must_use]
    pub const fn from_bits(w: u32) -> L1Descriptor {
        let domain = Domain::from_low_bits(w >> 5);
        match w & 3 {
            TYPE_COARSE => L1Descriptor::Coarse(CoarseTableDesc {
                table: Frame::containing(PhysAddr::new(w & 0xFFFF_FC00)),
                domain,
                p: w & (1 << 9) != 0,
            }),
            TYPE_SECTION => L1Descriptor::Section(SectionDesc {
                frame: Frame::containing(PhysAddr::new(w & 0xFFF0_0000)),
                ap: AccessPermission::from_bits(w >> 10),
                cache: CachePolicy::from_descriptor(w),
                domain,
                p: w & (1 << 9) != 0,
                tex: Tex::from_low_bits(w >> 12),
            }),
            TYPE_FINE => L1Descriptor::Fine(FineTableDesc {
                table: Frame::containing(PhysAddr::new(w & 0xFFFF_F000)),
                domain,
            }),
            _ => L1Descriptor::Fault { raw: w },
        }
    }

    /// Encodes for ARM9 and StrongARM cores: bit 4 set, as their manuals require.
    ///
    /// A fault descriptor keeps its software bits unchanged.
    #[must_use]
    pub const fn to_bits(self) -> u32 {
        match self {
            L1Descriptor::Fault { raw } => raw & !3,
            _ => self.to_bits_xscale() | BIT4,
        }
    }

    /// Encodes for XScale cores: bit 4 clear, as the XScale core manual requires.
    #[must_use]
    pub const fn to_bits_xscale(self) -> u32 {
        match self {
            L1Descriptor::Fault { raw } => raw & !3,
            L1Descriptor::Coarse(c) => {
                c.table.start().as_u32() | p_bit(c.p) | dom_bits(c.domain) | TYPE_COARSE
            }
            L1Descriptor::Section(s) => {
                s.frame.start().as_u32()
                    | ((s.tex.get() as u32) << 12)
                    | (s.ap.bits() << 10)
                    | p_bit(s.p)
                    | dom_bits(s.domain)
                    | s.cache.descriptor_bits()
                    | TYPE_SECTION
            }
            L1Descriptor::Fine(f) => f.table.start().as_u32() | dom_bits(f.domain) | TYPE_FINE,
        }
    }

    /// Encodes for the given CPU family.
    #[must_use]
    pub const fn encode(self, encoding: L1Encoding) -> u32 {
        match encoding {
            L1Encoding::Arm9 => self.to_bits(),
            L1Encoding::XScale => self.to_bits_xscale(),
        }
    }

    /// The domain, for every kind but fault.
    #[must_use]
    pub const fn domain(self) -> Option<Domain> {
        match self {
            L1Descriptor::Fault { .. } => None,
            L1Descriptor::Coarse(c) => Some(c.domain),
            L1Descriptor::Section(s) => Some(s.domain),
            L1Descriptor::Fine(f) => Some(f.domain),
        }
    }

    /// This descriptor with its domain replaced (a fault descriptor is unchanged).
    #[must_use]
    pub const fn with_domain(self, domain: Domain) -> L1Descriptor {
        match self {
            L1Descriptor::Fault { raw } => L1Descriptor::Fault { raw },
            L1Descriptor::Coarse(c) => L1Descriptor::Coarse(CoarseTableDesc { domain, ..c }),
            L1Descriptor::Section(s) => L1Descriptor::Section(SectionDesc { domain, ..s }),
            L1Descriptor::Fine(f) => L1Descriptor::Fine(FineTableDesc { domain, ..f }),
        }
    }

    /// The second-level table this descriptor points at, if any.
    #[must_use]
    pub const fn table(self) -> Option<(TableKind, PhysAddr)> {
        match self {
            L1Descriptor::Coarse(c) => Some((TableKind::Coarse, c.table.start())),
            L1Descriptor::Fine(f) => Some((TableKind::Fine, f.table.start())),
            _ => None,
        }
    }

    /// Whether the descriptor is valid (not a fault).
    #[must_use]
    pub const fn is_valid(self) -> bool {
        !matches!(self, L1Descriptor::Fault { .. })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn d(n: u8) -> Domain {
        Domain::new(n).unwrap()
    }

    #[test]
    fn section_bits_match_the_manual() {
        let s = L1Descriptor::Section(SectionDesc {
            frame: Frame::from_start(PhysAddr::new(0xC010_0000)).unwrap(),
            ap: AccessPermission::PrivRwUserRo,
            cache: CachePolicy::WriteBack,
            domain: d(5),
            p: true,
            tex: Tex::new(5).unwrap(),
        });
        let w = s.to_bits();
        assert_eq!(w & 3, 0b10, "type");
        assert_eq!(w & (1 << 2), 1 << 2, "B");
        assert_eq!(w & (1 << 3), 1 << 3, "C");
        assert_eq!(w & (1 << 4), 1 << 4, "bit 4 set on ARM9");
        assert_eq!((w >> 5) & 0xf, 5, "domain [8:5]");
        assert_eq!((w >> 9) & 1, 1, "P [9]");
        assert_eq!((w >> 10) & 3, 2, "AP [11:10]");
        assert_eq!((w >> 12) & 7, 5, "TEX [14:12]");
        assert_eq!(w & 0xFFF0_0000, 0xC010_0000, "base [31:20]");
        assert_eq!(w, 0xC010_5000 | (2 << 10) | (1 << 9) | (5 << 5) | 0x1e);
        assert_eq!(s.to_bits_xscale(), w & !(1 << 4));
        assert_eq!(L1Descriptor::from_bits(w), s);
    }

    #[test]
    fn coarse_and_fine_bits_match_the_manual() {
        let c = L1Descriptor::Coarse(CoarseTableDesc {
            table: Frame::from_start(PhysAddr::new(0x0012_3C00)).unwrap(),
            domain: d(15),
            p: false,
        });
        assert_eq!(c.to_bits(), 0x0012_3C00 | (15 << 5) | (1 << 4) | 0b01);
        let f = L1Descriptor::Fine(FineTableDesc {
            table: Frame::from_start(PhysAddr::new(0x0012_3000)).unwrap(),
            domain: d(1),
        });
        assert_eq!(f.to_bits(), 0x0012_3000 | (1 << 5) | (1 << 4) | 0b11);
        assert_eq!(
            c.table(),
            Some((TableKind::Coarse, PhysAddr::new(0x0012_3C00)))
        );
        assert_eq!(L1Descriptor::FAULT.to_bits(), 0);
        assert_eq!(
            L1Descriptor::from_bits(0xABCD_0000),
            L1Descriptor::Fault { raw: 0xABCD_0000 }
        );
        assert_eq!(c.with_domain(d(3)).domain(), Some(d(3)));
    }

    #[test]
    fn only_a_coarse_link_decodes_as_one() {
        let c = CoarseTableDesc {
            table: Frame::from_start(PhysAddr::new(0x0012_3C00)).unwrap(),
            domain: d(6),
            p: true,
        };
        assert_eq!(
            CoarseTableDesc::from_bits(L1Descriptor::Coarse(c).to_bits()),
            Some(c)
        );
        for other in [0, 0x0012_3C02, 0x0012_3C03, 0x0012_3C1C] {
            assert_eq!(CoarseTableDesc::from_bits(other), None, "{other:#x}");
        }
    }

    #[test]
    fn with_domain_retags_every_kind_and_changes_nothing_else() {
        let sec = L1Descriptor::Section(SectionDesc {
            frame: Frame::from_start(PhysAddr::new(0x0030_0000)).unwrap(),
            ap: AccessPermission::ReadWrite,
            cache: CachePolicy::WriteThrough,
            domain: d(2),
            p: false,
            tex: Tex::new(1).unwrap(),
        });
        let fine = L1Descriptor::Fine(FineTableDesc {
            table: Frame::from_start(PhysAddr::new(0x0040_1000)).unwrap(),
            domain: d(2),
        });
        for desc in [sec, fine] {
            let t = desc.with_domain(d(9));
            assert_eq!(t.domain(), Some(d(9)));
            assert_eq!(t.to_bits(), (desc.to_bits() & !(0xF << 5)) | (9 << 5));
        }
        let fault = L1Descriptor::Fault { raw: 0x1234_5670 };
        assert_eq!(fault.with_domain(d(9)), fault);
        assert_eq!(fault.domain(), None);
    }

    fn arb_l1() -> impl Strategy<Value = L1Descriptor> {
        prop_oneof![
            any::<u32>().prop_map(|r| L1Descriptor::Fault { raw: r & !3 }),
            (any::<u32>(), 0u8..16, any::<bool>()).prop_map(|(a, dm, p)| {
                L1Descriptor::Coarse(CoarseTableDesc {
                    table: Frame::containing(PhysAddr::new(a)),
                    domain: Domain::new(dm).unwrap(),
                    p,
                })
            }),
            (
                any::<u32>(),
                0u32..4,
                0u32..4,
                0u8..16,
                any::<bool>(),
                0u8..8
            )
                .prop_map(|(a, ap, cb, dm, p, tex)| {
                    L1Descriptor::Section(SectionDesc {
                        frame: Frame::containing(PhysAddr::new(a)),
                        ap: AccessPermission::from_bits(ap),
                        cache: CachePolicy::from_descriptor(cb << 2),
                        domain: Domain::new(dm).unwrap(),
                        p,
                        tex: Tex::new(tex).unwrap(),
                    })
                }),
            (any::<u32>(), 0u8..16).prop_map(|(a, dm)| {
                L1Descriptor::Fine(FineTableDesc {
                    table: Frame::containing(PhysAddr::new(a)),
                    domain: Domain::new(dm).unwrap(),
                })
            }),
        ]
    }

    proptest! {
        #![proptest_config(crate::testing::proptest_config(256))]
        #[test]
        fn encode_then_decode_round_trips(desc in arb_l1()) {
            prop_assert_eq!(L1Descriptor::from_bits(desc.to_bits()), desc);
            prop_assert_eq!(L1Descriptor::from_bits(desc.to_bits_xscale()), desc);
        }

        #[test]
        fn with_domain_changes_only_the_domain_field(desc in arb_l1(), dm in 0u8..16) {
            let t = desc.with_domain(d(dm));
            if let L1Descriptor::Fault { .. } = desc {
                prop_assert_eq!(t, desc);
            } else {
                prop_assert_eq!(t.domain(), Some(d(dm)));
                prop_assert_eq!(
                    t.to_bits(),
                    (desc.to_bits() & !(0xF << 5)) | (u32::from(dm) << 5)
                );
            }
        }

        #[test]
        fn a_coarse_link_decodes_alone_as_in_the_enum(w in any::<u32>()) {
            let alone = CoarseTableDesc::from_bits(w);
            match L1Descriptor::from_bits(w) {
                L1Descriptor::Coarse(c) => prop_assert_eq!(alone, Some(c)),
                _ => prop_assert_eq!(alone, None),
            }
        }

        #[test]
        fn decode_then_encode_keeps_every_defined_bit(w in any::<u32>()) {
            let back = L1Descriptor::from_bits(w).to_bits_xscale();
            let defined = match w & 3 {
                0 => !3,
                1 => 0xFFFF_FC00 | 0x3E3,
                2 => 0xFFF0_0000 | 0x7000 | 0xFEF,
                _ => 0xFFFF_F000 | 0x1E3,
            };
            prop_assert_eq!(back, w & defined);
        }
    }
}
