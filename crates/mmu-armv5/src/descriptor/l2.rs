//! Second-level descriptors.

use super::attr::{AccessPermission, CachePolicy, SubpageAp, Tex};
use crate::addr::PhysAddr;
use crate::size::{Frame, PageSizeKind, Size1KiB, Size4KiB, Size64KiB};

const TYPE_LARGE: u32 = 0b01;
const TYPE_SMALL: u32 = 0b10;
const TYPE_TINY: u32 = 0b11;

/// A 64 KiB large page.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LargePageDesc {
    /// The physical 64 KiB frame.
    pub frame: Frame<Size64KiB>,
    /// AP of each 16 KiB quarter (selected by VA\[15:14\]).
    pub ap: SubpageAp,
    /// C and B bits.
    pub cache: CachePolicy,
    /// XScale TEX bits \[14:12\] (zero elsewhere).
    pub tex: Tex,
}

/// A 4 KiB small page.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SmallPageDesc {
    /// The physical 4 KiB frame.
    pub frame: Frame<Size4KiB>,
    /// AP of each 1 KiB quarter (selected by VA\[11:10\]).
    pub ap: SubpageAp,
    /// C and B bits.
    pub cache: CachePolicy,
}

impl SmallPageDesc {
    /// Decodes `w` if it is a small-page descriptor (`[1:0] = 10`), as
    /// [`L2Descriptor::from_bits`] would; `None` for every other kind.
    /// Small enough to inline where a kernel checks a live entry.
    #[inline]
    #[must_use]
    pub const fn from_bits(w: u32) -> Option<SmallPageDesc> {
        if w & 3 == TYPE_SMALL {
            Some(SmallPageDesc {
                frame: Frame::containing(PhysAddr::new(w & 0xFFFF_F000)),
                ap: SubpageAp::from_descriptor(w),
                cache: CachePolicy::from_descriptor(w),
            })
        } else {
            None
        }
    }

    /// The frame that the small-page descriptor word `w` maps (bits
    /// \[31:12\]). The word's kind is not checked: for words known to be
    /// small pages, such as entries the caller wrote itself.
    #[inline]
    #[must_use]
    pub const fn word_frame(w: u32) -> Frame<Size4KiB> {
        Frame::containing(PhysAddr::new(w))
    }

    /// The small-page descriptor word `w` mapping `frame` instead: bits
    /// \[31:12\] replaced, every attribute kept. For a small page `s`
    /// decoded from `w`, the word of `SmallPageDesc { frame, ..s }`.
    #[inline]
    #[must_use]
    pub const fn word_with_frame(w: u32, frame: Frame<Size4KiB>) -> u32 {
        (w & 0xFFF) | frame.start().as_u32()
    }

    /// The small-page descriptor word `w` with all four AP fields set to
    /// `ap`, every other bit kept. For a small page `s` decoded from `w`,
    /// the word of `SmallPageDesc { ap: SubpageAp::uniform(ap), ..s }`.
    #[inline]
    #[must_use]
    pub const fn word_with_ap(w: u32, ap: AccessPermission) -> u32 {
        // AP3..AP0 at [11:4]: the two bits repeated four times.
        (w & !0xFF0) | ((ap.bits() * 0x55) << 4)
    }
}

/// A 1 KiB tiny page (fine tables only).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TinyPageDesc {
    /// The physical 1 KiB frame.
    pub frame: Frame<Size1KiB>,
    /// Access permission (bits \[5:4\]).
    pub ap: AccessPermission,
    /// C and B bits.
    pub cache: CachePolicy,
    /// XScale TEX bits \[8:6\] (zero elsewhere).
    pub tex: Tex,
}

/// A decoded second-level descriptor.
///
/// ```
/// use mmu_armv5::descriptor::{
///     AccessPermission, CachePolicy, L2Descriptor, SmallPageDesc, SubpageAp,
/// };
/// use mmu_armv5::size::{Frame, PageSizeKind};
/// use mmu_armv5::PhysAddr;
///
/// let page = L2Descriptor::Small(SmallPageDesc {
///     frame: Frame::from_start(PhysAddr::new(0x0040_2000)).unwrap(),
///     ap: SubpageAp::uniform(AccessPermission::ReadWrite),
///     cache: CachePolicy::WriteThrough,
/// });
/// // base | AP3..AP0 = 0b11 each at [11:4] | C | 0b10
/// assert_eq!(page.to_bits(), 0x0040_2FFA);
/// assert_eq!(L2Descriptor::from_bits(0x0040_2FFA), page);
/// assert_eq!(page.size(), Some(PageSizeKind::Small));
/// assert_eq!(page.frame_start(), Some(PhysAddr::new(0x0040_2000)));
///
/// // One read-only 1 KiB quarter: subpage permissions decode per quarter.
/// let L2Descriptor::Small(s) = L2Descriptor::from_bits(0x0040_2FBA) else {
///     unreachable!()
/// };
/// assert_eq!(s.ap.get(1), AccessPermission::PrivRwUserRo);
/// assert!(!s.ap.is_uniform());
/// ```
///
/// The `0b11` encoding means a tiny page in a fine table. In a coarse table
/// it is UNPREDICTABLE on ARMv5 (an "extended small page" on XScale and
/// ARMv6); [`translate`](crate::translate) treats it as a page translation
/// fault, as QEMU does, and the table code never writes it there.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum L2Descriptor {
    /// Invalid: any access faults. Bits \[31:2\] are free for software.
    Fault {
        /// The raw word (its low two bits are zero).
        raw: u32,
    },
    /// A 64 KiB large page.
    Large(LargePageDesc),
    /// A 4 KiB small page.
    Small(SmallPageDesc),
    /// A 1 KiB tiny page.
    Tiny(TinyPageDesc),
}

impl L2Descriptor {
    /// The invalid descriptor with all bits zero.
    pub const FAULT: L2Descriptor = L2Descriptor::Fault { raw: 0 };

    /// Decodes a second-level word. Every word decodes; should-be-zero bits are ignored.
    #[must_use]
    pub const fn from_bits(w: u32) -> L2Descriptor {
        let cache = CachePolicy::from_descriptor(w);
        match w & 3 {
            TYPE_LARGE => L2Descriptor::Large(LargePageDesc {
                frame: Frame::containing(PhysAddr::new(w & 0xFFFF_0000)),
                ap: SubpageAp::from_descriptor(w),
                cache,
                tex: Tex::from_low_bits(w >> 12),
            }),
            TYPE_SMALL => L2Descriptor::Small(SmallPageDesc {
                frame: Frame::containing(PhysAddr::new(w & 0xFFFF_F000)),
                ap: SubpageAp::from_descriptor(w),
                cache,
            }),
            TYPE_TINY => L2Descriptor::Tiny(TinyPageDesc {
                frame: Frame::containing(PhysAddr::new(w & 0xFFFF_FC00)),
                ap: AccessPermission::from_bits(w >> 4),
                cache,
                tex: Tex::from_low_bits(w >> 6),
            }),
            _ => L2Descriptor::Fault { raw: w },
        }
    }

    /// Encodes the descriptor.
    #[must_use]
    pub const fn to_bits(self) -> u32 {
        match self {
            L2Descriptor::Fault { raw } => raw & !3,
            L2Descriptor::Large(l) => {
                l.frame.start().as_u32()
                    | ((l.tex.get() as u32) << 12)
                    | l.ap.descriptor_bits()
                    | l.cache.descriptor_bits()
                    | TYPE_LARGE
            }
            L2Descriptor::Small(s) => {
                s.frame.start().as_u32()
                    | s.ap.descriptor_bits()
                    | s.cache.descriptor_bits()
                    | TYPE_SMALL
            }
            L2Descriptor::Tiny(t) => {
                t.frame.start().as_u32()
                    | ((t.tex.get() as u32) << 6)
                    | (t.ap.bits() << 4)
                    | t.cache.descriptor_bits()
                    | TYPE_TINY
            }
        }
    }

    /// The page size, or `None` for a fault descriptor.
    #[must_use]
    pub const fn size(self) -> Option<PageSizeKind> {
        match self {
            L2Descriptor::Fault { .. } => None,
            L2Descriptor::Large(_) => Some(PageSizeKind::Large),
            L2Descriptor::Small(_) => Some(PageSizeKind::Small),
            L2Descriptor::Tiny(_) => Some(PageSizeKind::Tiny),
        }
    }

    /// The physical start of the page, or `None` for a fault descriptor.
    #[must_use]
    pub const fn frame_start(self) -> Option<PhysAddr> {
        match self {
            L2Descriptor::Fault { .. } => None,
            L2Descriptor::Large(l) => Some(l.frame.start()),
            L2Descriptor::Small(s) => Some(s.frame.start()),
            L2Descriptor::Tiny(t) => Some(t.frame.start()),
        }
    }

    /// Whether the descriptor is valid (not a fault).
    #[must_use]
    pub const fn is_valid(self) -> bool {
        !matches!(self, L2Descriptor::Fault { .. })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use AccessPermission::*;

    #[test]
    fn only_a_fault_descriptor_is_invalid() {
        assert!(!L2Descriptor::Fault { raw: 0x1234_5670 }.is_valid());
        assert!(!L2Descriptor::from_bits(0).is_valid());
        let small = L2Descriptor::Small(SmallPageDesc {
            frame: Frame::containing(PhysAddr::new(0x0030_0000)),
            ap: SubpageAp::uniform(ReadWrite),
            cache: CachePolicy::WriteBack,
        });
        assert!(small.is_valid());
        assert!(L2Descriptor::from_bits(small.to_bits()).is_valid());
    }

    #[test]
    fn a_small_page_word_changes_in_place_as_its_decoded_form_would() {
        let w = L2Descriptor::Small(SmallPageDesc {
            frame: Frame::containing(PhysAddr::new(0x0765_4000)),
            ap: SubpageAp([ReadWrite, PrivRw, NoneOrRom, PrivRwUserRo]),
            cache: CachePolicy::WriteBack,
        })
        .to_bits();
        let Some(s) = SmallPageDesc::from_bits(w) else {
            panic!("a small page")
        };
        assert_eq!(L2Descriptor::from_bits(w), L2Descriptor::Small(s));
        assert_eq!(SmallPageDesc::word_frame(w), s.frame);
        for ap in AccessPermission::ALL {
            let uniform = SmallPageDesc {
                ap: SubpageAp::uniform(ap),
                ..s
            };
            assert_eq!(
                SmallPageDesc::word_with_ap(w, ap),
                L2Descriptor::Small(uniform).to_bits()
            );
        }
        let to = Frame::containing(PhysAddr::new(0x07F0_1000));
        assert_eq!(
            SmallPageDesc::word_with_frame(w, to),
            L2Descriptor::Small(SmallPageDesc { frame: to, ..s }).to_bits()
        );
        for other in [0, 0x0765_4001, 0x0765_4FFF, 0x0765_4ABC] {
            assert_eq!(SmallPageDesc::from_bits(other), None, "{other:#x}");
        }
    }

    #[test]
    fn large_page_bits_match_the_manual() {
        let l = L2Descriptor::Large(LargePageDesc {
            frame: Frame::from_start(PhysAddr::new(0x1234_0000)).unwrap(),
            ap: SubpageAp([ReadWrite, PrivRw, NoneOrRom, PrivRwUserRo]),
            cache: CachePolicy::WriteThrough,
            tex: Tex::new(1).unwrap(),
        });
        let w = l.to_bits();
        assert_eq!(
            w,
            0x1234_0000 | (1 << 12) | (2 << 10) | (1 << 6) | (3 << 4) | (1 << 3) | 0b01
        );
        assert_eq!(L2Descriptor::from_bits(w), l);
    }

    #[test]
    fn small_page_bits_match_the_manual() {
        let s = L2Descriptor::Small(SmallPageDesc {
            frame: Frame::from_start(PhysAddr::new(0x0765_4000)).unwrap(),
            ap: SubpageAp::uniform(PrivRwUserRo),
            cache: CachePolicy::Buffered,
        });
        assert_eq!(s.to_bits(), 0x0765_4000 | 0xAA0 | (1 << 2) | 0b10);
        assert_eq!(s.size(), Some(PageSizeKind::Small));
    }

    #[test]
    fn tiny_page_bits_match_the_manual() {
        let t = L2Descriptor::Tiny(TinyPageDesc {
            frame: Frame::from_start(PhysAddr::new(0x0000_8C00)).unwrap(),
            ap: ReadWrite,
            cache: CachePolicy::WriteBack,
            tex: Tex::ZERO,
        });
        assert_eq!(t.to_bits(), 0x0000_8C00 | (3 << 4) | 0b1100 | 0b11);
        assert_eq!(t.frame_start(), Some(PhysAddr::new(0x8C00)));
        assert_eq!(
            L2Descriptor::from_bits(0x40),
            L2Descriptor::Fault { raw: 0x40 }
        );
    }

    fn arb_l2() -> impl Strategy<Value = L2Descriptor> {
        let ap = (0u32..256).prop_map(|b| SubpageAp::from_descriptor(b << 4));
        let cache = (0u32..4).prop_map(|c| CachePolicy::from_descriptor(c << 2));
        prop_oneof![
            any::<u32>().prop_map(|r| L2Descriptor::Fault { raw: r & !3 }),
            (any::<u32>(), ap.clone(), cache.clone(), 0u8..8).prop_map(|(a, ap, cache, t)| {
                L2Descriptor::Large(LargePageDesc {
                    frame: Frame::containing(PhysAddr::new(a)),
                    ap,
                    cache,
                    tex: Tex::new(t).unwrap(),
                })
            }),
            (any::<u32>(), ap, cache.clone()).prop_map(|(a, ap, cache)| {
                L2Descriptor::Small(SmallPageDesc {
                    frame: Frame::containing(PhysAddr::new(a)),
                    ap,
                    cache,
                })
            }),
            (any::<u32>(), 0u32..4, cache, 0u8..8).prop_map(|(a, ap, cache, t)| {
                L2Descriptor::Tiny(TinyPageDesc {
                    frame: Frame::containing(PhysAddr::new(a)),
                    ap: AccessPermission::from_bits(ap),
                    cache,
                    tex: Tex::new(t).unwrap(),
                })
            }),
        ]
    }

    proptest! {
        #![proptest_config(crate::testing::proptest_config(256))]
        #[test]
        fn encode_then_decode_round_trips(desc in arb_l2()) {
            prop_assert_eq!(L2Descriptor::from_bits(desc.to_bits()), desc);
        }

        #[test]
        fn the_small_page_helpers_agree_with_the_enum(w in any::<u32>(), ap in 0u32..4, f in any::<u32>()) {
            let ap = AccessPermission::from_bits(ap);
            let frame = Frame::containing(PhysAddr::new(f));
            match L2Descriptor::from_bits(w) {
                L2Descriptor::Small(s) => {
                    prop_assert_eq!(SmallPageDesc::from_bits(w), Some(s));
                    prop_assert_eq!(SmallPageDesc::word_frame(w), s.frame);
                    prop_assert_eq!(
                        SmallPageDesc::word_with_ap(w, ap),
                        L2Descriptor::Small(SmallPageDesc { ap: SubpageAp::uniform(ap), ..s }).to_bits()
                    );
                    prop_assert_eq!(
                        SmallPageDesc::word_with_frame(w, frame),
                        L2Descriptor::Small(SmallPageDesc { frame, ..s }).to_bits()
                    );
                }
                _ => prop_assert_eq!(SmallPageDesc::from_bits(w), None),
            }
        }

        #[test]
        fn decode_then_encode_keeps_every_defined_bit(w in any::<u32>()) {
            let defined = match w & 3 {
                0 => !3,
                1 => 0xFFFF_0000 | 0x7FFF,
                2 => 0xFFFF_FFFF,
                _ => 0xFFFF_FC00 | 0x1FF,
            };
            prop_assert_eq!(L2Descriptor::from_bits(w).to_bits(), w & defined);
        }
    }
}
