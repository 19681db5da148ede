//! Shared segments: physically contiguous, 1 MiB-aligned regions of the
//! layout's shared region, mapped at the same address in every sharer.
//!
//! Because a segment sits at the same (unrelocated, above 32 MiB) address in
//! every sharer, the VIVT caches and the TLB see one modified virtual
//! address per byte of it: no synonyms. Under FASS a segment gets a domain
//! of its own on first map and gives it back on last unmap; every sharer's
//! DACR enables that domain (client, or manager if the kernel grants it),
//! so one CPD entry and one set of TLB entries serve all sharers.
//!
//! This module is the bookkeeping all strategies share: definitions,
//! validation and sharer counts. Mapping is the strategies' job.

use crate::id::{SegmentId, SpaceId};
use crate::layout::{Layout, SLOT_SHIFT, SLOT_SIZE};
use core::fmt;
use mmu_armv5::descriptor::{AccessPermission, CachePolicy, L1Descriptor, SectionDesc, Tex};
use mmu_armv5::size::Frame;
use mmu_armv5::{Domain, PhysAddr, VirtAddr};

/// How a sharer may use a segment's domain.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum SegmentAccess {
    /// Client: the segment's access permissions are checked.
    Client,
    /// Manager: no permission checks (the kernel grants this explicitly).
    Manager,
}

/// What a segment is: where, backed by what, with which permissions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct SegmentSpec {
    /// Its address in every sharer (1 MiB aligned, inside the shared region).
    pub base: VirtAddr,
    /// Its physical memory (1 MiB aligned, contiguous).
    pub pa: PhysAddr,
    /// Its size in bytes (a non-zero multiple of 1 MiB).
    pub size: u32,
    /// Access permission of every sharer (client access).
    pub ap: AccessPermission,
    /// Cacheability.
    pub cache: CachePolicy,
}

/// A segment operation that cannot be done.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum SegmentError {
    /// The identifier is beyond the table's capacity.
    IdOutOfRange(SegmentId),
    /// A segment with this identifier already exists.
    Exists(SegmentId),
    /// No segment with this identifier exists.
    Unknown(SegmentId),
    /// Base, physical address or size is not a multiple of 1 MiB, or the size is zero.
    Misaligned {
        /// The virtual base.
        base: VirtAddr,
        /// The physical base.
        pa: PhysAddr,
        /// The size.
        size: u32,
    },
    /// The segment does not lie inside the layout's shared region.
    OutsideSharedRegion {
        /// The virtual base.
        base: VirtAddr,
        /// The size.
        size: u32,
    },
    /// The segment overlaps an existing one.
    Overlaps(SegmentId),
    /// A space asked for the segment at another address than its own.
    WrongAddress {
        /// The segment.
        segment: SegmentId,
        /// Its address.
        expected: VirtAddr,
        /// The address asked for.
        got: VirtAddr,
    },
    /// The space already maps the segment.
    AlreadyMapped {
        /// The space.
        space: SpaceId,
        /// The segment.
        segment: SegmentId,
    },
    /// The space does not map the segment.
    NotMapped {
        /// The space.
        space: SpaceId,
        /// The segment.
        segment: SegmentId,
    },
    /// The segment is still mapped by this many spaces.
    InUse {
        /// The segment.
        segment: SegmentId,
        /// Its sharers.
        sharers: u16,
    },
    /// The strategy cannot grant manager access (it has no per-segment domain).
    ManagerUnsupported(SegmentId),
    /// The segment already counts 65,535 sharers, the most its count holds.
    TooManySharers(SegmentId),
    /// The segment counts no sharer to remove.
    NoSharer(SegmentId),
}

impl fmt::Display for SegmentError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            SegmentError::IdOutOfRange(s) => write!(f, "segment id {} out of range", s.0),
            SegmentError::Exists(s) => write!(f, "segment {} already exists", s.0),
            SegmentError::Unknown(s) => write!(f, "no segment {}", s.0),
            SegmentError::Misaligned { base, pa, size } => write!(
                f,
                "segment at {base} -> {pa}, {size:#x} bytes, is not 1 MiB aligned"
            ),
            SegmentError::OutsideSharedRegion { base, size } => write!(
                f,
                "segment at {base}, {size:#x} bytes, is outside the shared region"
            ),
            SegmentError::Overlaps(s) => write!(f, "segment overlaps segment {}", s.0),
            SegmentError::WrongAddress {
                segment,
                expected,
                got,
            } => write!(f, "segment {} lives at {expected}, not {got}", segment.0),
            SegmentError::AlreadyMapped { space, segment } => {
                write!(f, "space {} already maps segment {}", space.0, segment.0)
            }
            SegmentError::NotMapped { space, segment } => {
                write!(f, "space {} does not map segment {}", space.0, segment.0)
            }
            SegmentError::InUse { segment, sharers } => {
                write!(f, "segment {} is mapped by {sharers} spaces", segment.0)
            }
            SegmentError::ManagerUnsupported(s) => {
                write!(f, "manager access to segment {} is not supported here", s.0)
            }
            SegmentError::TooManySharers(s) => {
                write!(f, "segment {} already has {} sharers", s.0, u16::MAX)
            }
            SegmentError::NoSharer(s) => write!(f, "segment {} has no sharer", s.0),
        }
    }
}

impl core::error::Error for SegmentError {}

/// A set of segment identifiers `0..32`, bit `n` for `SegmentId(n)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct SegmentSet(u32);

impl SegmentSet {
    /// No segment.
    pub const EMPTY: SegmentSet = SegmentSet(0);

    /// Whether `id` is a member (identifiers of 32 and more never are).
    #[must_use]
    pub const fn contains(self, id: SegmentId) -> bool {
        id.0 < 32 && self.0 & (1 << id.0) != 0
    }

    /// This set with `id` (identifiers of 32 and more are ignored).
    #[must_use]
    pub const fn with(self, id: SegmentId) -> SegmentSet {
        if id.0 < 32 {
            SegmentSet(self.0 | 1 << id.0)
        } else {
            self
        }
    }

    /// This set without `id`.
    #[must_use]
    pub const fn without(self, id: SegmentId) -> SegmentSet {
        if id.0 < 32 {
            SegmentSet(self.0 & !(1 << id.0))
        } else {
            self
        }
    }

    /// Whether the set is empty.
    #[must_use]
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// Members in increasing order.
    pub fn iter(self) -> impl Iterator<Item = SegmentId> {
        // One step per member, not per possible id (the full flush's
        // `user_dacr` runs this on the flushed fault path).
        let mut bits = self.0;
        core::iter::from_fn(move || {
            if bits == 0 {
                return None;
            }
            let s = bits.trailing_zeros();
            bits &= bits - 1;
            Some(SegmentId(s as u16))
        })
    }
}

/// One segment: its definition, sharer count and (under FASS) domain.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment {
    spec: SegmentSpec,
    sharers: u16,
    domain: Option<Domain>,
}

impl Segment {
    /// The definition.
    #[must_use]
    pub const fn spec(&self) -> &SegmentSpec {
        &self.spec
    }

    /// Number of spaces mapping it.
    #[must_use]
    pub const fn sharers(&self) -> u16 {
        self.sharers
    }

    /// Its domain (FASS only; `None` while nobody maps it).
    #[must_use]
    pub const fn domain(&self) -> Option<Domain> {
        self.domain
    }

    /// The first-level slots it covers.
    #[must_use]
    pub const fn slots(&self) -> core::ops::Range<usize> {
        let first = (self.spec.base.as_u32() >> SLOT_SHIFT) as usize;
        first..first + (self.spec.size >> SLOT_SHIFT) as usize
    }

    /// The section descriptor of `slot` (one of [`Segment::slots`]) in
    /// `domain`, or `None` for a slot outside the segment.
    #[must_use]
    pub fn section(&self, slot: usize, domain: Domain) -> Option<L1Descriptor> {
        let r = self.slots();
        if !r.contains(&slot) {
            return None;
        }
        let pa = self.spec.pa.as_u32() + (((slot - r.start) as u32) << SLOT_SHIFT);
        Some(L1Descriptor::Section(SectionDesc {
            frame: Frame::containing(PhysAddr::new(pa)),
            ap: self.spec.ap,
            cache: self.spec.cache,
            domain,
            p: false,
            tex: Tex::default(),
        }))
    }
}

/// The segment table: at most `N` (up to 32) segments, identifiers `0..N`.
#[derive(Debug)]
pub struct Segments<const N: usize> {
    segs: [Option<Segment>; N],
}

impl<const N: usize> Default for Segments<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> Segments<N> {
    const CAPACITY_OK: () = assert!(N <= 32, "at most 32 segments (SegmentSet is 32 bits)");

    /// An empty table.
    #[must_use]
    pub const fn new() -> Self {
        #[allow(clippy::let_unit_value)]
        let () = Self::CAPACITY_OK;
        Segments { segs: [None; N] }
    }

    /// The segment `id`.
    pub fn get(&self, id: SegmentId) -> Result<&Segment, SegmentError> {
        self.segs
            .get(usize::from(id.0))
            .ok_or(SegmentError::IdOutOfRange(id))?
            .as_ref()
            .ok_or(SegmentError::Unknown(id))
    }

    fn get_mut(&mut self, id: SegmentId) -> Result<&mut Segment, SegmentError> {
        self.segs
            .get_mut(usize::from(id.0))
            .ok_or(SegmentError::IdOutOfRange(id))?
            .as_mut()
            .ok_or(SegmentError::Unknown(id))
    }

    /// Defines segment `id`: checks alignment, that it lies in `layout`'s
    /// shared region and that it overlaps no other segment.
    pub fn create(
        &mut self,
        layout: &Layout,
        id: SegmentId,
        spec: SegmentSpec,
    ) -> Result<(), SegmentError> {
        let slot = self
            .segs
            .get(usize::from(id.0))
            .ok_or(SegmentError::IdOutOfRange(id))?;
        if slot.is_some() {
            return Err(SegmentError::Exists(id));
        }
        let aligned = |v: u32| v.is_multiple_of(SLOT_SIZE);
        if spec.size == 0
            || !aligned(spec.size)
            || !aligned(spec.base.as_u32())
            || !aligned(spec.pa.as_u32())
            || spec.pa.as_u32().checked_add(spec.size - 1).is_none()
        {
            return Err(SegmentError::Misaligned {
                base: spec.base,
                pa: spec.pa,
                size: spec.size,
            });
        }
        if !layout
            .shared()
            .contains_range(spec.base.as_u32(), u64::from(spec.size))
        {
            return Err(SegmentError::OutsideSharedRegion {
                base: spec.base,
                size: spec.size,
            });
        }
        let (b, e) = (
            u64::from(spec.base.as_u32()),
            u64::from(spec.base.as_u32()) + u64::from(spec.size),
        );
        for (i, s) in self.segs.iter().enumerate() {
            if let Some(s) = s {
                let (ob, oe) = (
                    u64::from(s.spec.base.as_u32()),
                    u64::from(s.spec.base.as_u32()) + u64::from(s.spec.size),
                );
                if b < oe && ob < e {
                    return Err(SegmentError::Overlaps(SegmentId(i as u16)));
                }
            }
        }
        if let Some(slot) = self.segs.get_mut(usize::from(id.0)) {
            *slot = Some(Segment {
                spec,
                sharers: 0,
                domain: None,
            });
        }
        Ok(())
    }

    /// Removes the definition of `id`; it must be mapped nowhere.
    pub fn destroy(&mut self, id: SegmentId) -> Result<SegmentSpec, SegmentError> {
        let s = self.get(id)?;
        if s.sharers != 0 {
            return Err(SegmentError::InUse {
                segment: id,
                sharers: s.sharers,
            });
        }
        let spec = s.spec;
        if let Some(slot) = self.segs.get_mut(usize::from(id.0)) {
            *slot = None;
        }
        Ok(spec)
    }

    /// Checks that `space`, which maps `mapped`, may map `id` at `at`.
    pub fn check_map(
        &self,
        space: SpaceId,
        mapped: SegmentSet,
        id: SegmentId,
        at: VirtAddr,
    ) -> Result<&Segment, SegmentError> {
        let s = self.get(id)?;
        if at != s.spec.base {
            return Err(SegmentError::WrongAddress {
                segment: id,
                expected: s.spec.base,
                got: at,
            });
        }
        if mapped.contains(id) {
            return Err(SegmentError::AlreadyMapped { space, segment: id });
        }
        Ok(s)
    }

    /// Counts one more sharer; returns whether it is the first. At 65,535
    /// sharers, [`SegmentError::TooManySharers`] (nothing changes).
    pub fn add_sharer(&mut self, id: SegmentId) -> Result<bool, SegmentError> {
        let s = self.get_mut(id)?;
        s.sharers = s
            .sharers
            .checked_add(1)
            .ok_or(SegmentError::TooManySharers(id))?;
        Ok(s.sharers == 1)
    }

    /// Counts one sharer less; returns whether it was the last. With no
    /// sharer, [`SegmentError::NoSharer`] (nothing changes).
    pub fn remove_sharer(&mut self, id: SegmentId) -> Result<bool, SegmentError> {
        let s = self.get_mut(id)?;
        s.sharers = s.sharers.checked_sub(1).ok_or(SegmentError::NoSharer(id))?;
        Ok(s.sharers == 0)
    }

    /// Records the domain `id` is tagged with (FASS).
    pub fn set_domain(&mut self, id: SegmentId, d: Option<Domain>) -> Result<(), SegmentError> {
        self.get_mut(id)?.domain = d;
        Ok(())
    }

    /// The segment covering first-level slot `slot`, if any (O(N)).
    #[must_use]
    pub fn at_slot(&self, slot: usize) -> Option<(SegmentId, &Segment)> {
        self.segs.iter().enumerate().find_map(|(i, s)| {
            s.as_ref()
                .filter(|s| s.slots().contains(&slot))
                .map(|s| (SegmentId(i as u16), s))
        })
    }

    /// The domains of every segment that has one.
    pub fn domains(&self) -> impl Iterator<Item = Domain> + '_ {
        self.segs
            .iter()
            .filter_map(|s| s.as_ref().and_then(|s| s.domain))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segment_sets_iterate_their_members_in_order() {
        let s = SegmentSet::EMPTY
            .with(SegmentId(31))
            .with(SegmentId(0))
            .with(SegmentId(5))
            .with(SegmentId(40));
        let got: std::vec::Vec<u16> = s.iter().map(|g| g.0).collect();
        assert_eq!(got, [0, 5, 31]);
        assert_eq!(SegmentSet::EMPTY.iter().count(), 0);
    }

    fn spec(base: u32, pa: u32, size: u32) -> SegmentSpec {
        SegmentSpec {
            base: VirtAddr::new(base),
            pa: PhysAddr::new(pa),
            size,
            ap: AccessPermission::ReadWrite,
            cache: CachePolicy::WriteBack,
        }
    }

    #[test]
    fn sharer_counts_neither_wrap_nor_go_below_zero() {
        let mut t: Segments<1> = Segments::new();
        let g = SegmentId(0);
        t.create(&Layout::DEMO, g, spec(0x8000_0000, 0, 1 << 20))
            .unwrap();
        assert_eq!(t.remove_sharer(g), Err(SegmentError::NoSharer(g)));
        assert_eq!(t.add_sharer(g), Ok(true));
        // Under Miri, which interprets every call, start near the top.
        let skip = if cfg!(miri) { u16::MAX - 4 } else { 0 };
        t.get_mut(g).unwrap().sharers += skip;
        for _ in (1 + skip)..u16::MAX {
            assert_eq!(t.add_sharer(g), Ok(false));
        }
        assert_eq!(t.add_sharer(g), Err(SegmentError::TooManySharers(g)));
        assert_eq!(t.get(g).unwrap().sharers(), u16::MAX);
        // Every sharer still counted: the last one is the 65,535th.
        t.get_mut(g).unwrap().sharers -= skip;
        for _ in (1 + skip)..u16::MAX {
            assert_eq!(t.remove_sharer(g), Ok(false));
        }
        assert_eq!(t.remove_sharer(g), Ok(true));
        assert_eq!(t.destroy(g).map(|s| s.base), Ok(VirtAddr::new(0x8000_0000)));
    }

    #[test]
    fn definitions_are_validated() {
        let l = Layout::DEMO;
        let mut t: Segments<4> = Segments::new();
        let m = 1 << 20;
        assert_eq!(t.create(&l, SegmentId(0), spec(0x8000_0000, 0, m)), Ok(()));
        assert_eq!(
            t.create(&l, SegmentId(0), spec(0x8010_0000, 0, m)),
            Err(SegmentError::Exists(SegmentId(0)))
        );
        assert_eq!(
            t.create(&l, SegmentId(4), spec(0x8010_0000, 0, m)),
            Err(SegmentError::IdOutOfRange(SegmentId(4)))
        );
        assert!(matches!(
            t.create(&l, SegmentId(1), spec(0x8010_1000, 0, m)),
            Err(SegmentError::Misaligned { .. })
        ));
        assert!(matches!(
            t.create(&l, SegmentId(1), spec(0x8010_0000, 0x1000, m)),
            Err(SegmentError::Misaligned { .. })
        ));
        assert!(matches!(
            t.create(&l, SegmentId(1), spec(0x8010_0000, 0, 0)),
            Err(SegmentError::Misaligned { .. })
        ));
        // Below, across the end of, and far from the shared region.
        for (b, s) in [(0x7FF0_0000, 2 * m), (0xBFF0_0000, 2 * m), (0x0200_0000, m)] {
            assert_eq!(
                t.create(&l, SegmentId(1), spec(b, 0, s)),
                Err(SegmentError::OutsideSharedRegion {
                    base: VirtAddr::new(b),
                    size: s
                })
            );
        }
        assert_eq!(
            t.create(&l, SegmentId(1), spec(0x7FF0_0000 + m, 0, 2 * m)),
            Err(SegmentError::Overlaps(SegmentId(0)))
        );
        assert_eq!(
            t.create(&l, SegmentId(1), spec(0x8010_0000, m, 2 * m)),
            Ok(())
        );
        assert_eq!(t.at_slot(0x801).map(|(i, _)| i), Some(SegmentId(1)));
        assert_eq!(t.at_slot(0x802).map(|(i, _)| i), Some(SegmentId(1)));
        assert_eq!(t.at_slot(0x803), None);
        let s = t.get(SegmentId(1)).unwrap();
        let d = Domain::new(7).unwrap();
        match s.section(0x802, d) {
            Some(L1Descriptor::Section(sd)) => {
                assert_eq!(sd.frame.start(), PhysAddr::new(2 * m));
                assert_eq!(sd.domain, d);
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(s.section(0x800, d), None);
    }

    #[test]
    fn mapping_checks_address_and_membership_and_counts_sharers() {
        let l = Layout::DEMO;
        let mut t: Segments<2> = Segments::new();
        t.create(&l, SegmentId(1), spec(0x8000_0000, 0, 1 << 20))
            .unwrap();
        let sp = SpaceId(3);
        assert_eq!(
            t.check_map(
                sp,
                SegmentSet::EMPTY,
                SegmentId(1),
                VirtAddr::new(0x8010_0000)
            )
            .unwrap_err(),
            SegmentError::WrongAddress {
                segment: SegmentId(1),
                expected: VirtAddr::new(0x8000_0000),
                got: VirtAddr::new(0x8010_0000)
            }
        );
        let mapped = SegmentSet::EMPTY.with(SegmentId(1));
        assert_eq!(
            t.check_map(sp, mapped, SegmentId(1), VirtAddr::new(0x8000_0000))
                .unwrap_err(),
            SegmentError::AlreadyMapped {
                space: sp,
                segment: SegmentId(1)
            }
        );
        assert_eq!(
            t.check_map(sp, SegmentSet::EMPTY, SegmentId(0), VirtAddr::new(0))
                .unwrap_err(),
            SegmentError::Unknown(SegmentId(0))
        );
        assert_eq!(t.add_sharer(SegmentId(1)), Ok(true));
        assert_eq!(t.add_sharer(SegmentId(1)), Ok(false));
        assert_eq!(
            t.destroy(SegmentId(1)),
            Err(SegmentError::InUse {
                segment: SegmentId(1),
                sharers: 2
            })
        );
        assert_eq!(t.remove_sharer(SegmentId(1)), Ok(false));
        assert_eq!(t.remove_sharer(SegmentId(1)), Ok(true));
        assert!(t.destroy(SegmentId(1)).is_ok());
        assert_eq!(mapped.iter().collect::<std::vec::Vec<_>>(), [SegmentId(1)]);
    }
}
