//! Physical memory regions: where a frame is and what it may ever be used for.
//!
//! A frame's location (RAM, ITCM, DTCM, device) and its maximum rights are
//! properties of the physical memory, not of its content, and never change at
//! run time. They are therefore stored once per [`PhysRegion`] instead of once
//! per frame, which is what lets a [`FrameDesc`](crate::frame::FrameDesc)
//! stay at two bytes.

use core::fmt;
use mmu_armv5::addr::Align;
use mmu_armv5::PhysAddr;

/// Size of one frame: a 4 KiB small page.
pub const FRAME_SIZE: u32 = 4096;
/// Size of one section: 1 MiB.
pub const SECTION_SIZE: u32 = 1 << 20;

/// Where a physical frame is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Location {
    /// Ordinary (external) RAM behind the caches.
    Ram,
    /// Instruction TCM: executable, readable and writable; preferred for code,
    /// data accesses from the load/store unit are slower than from the DTCM.
    Itcm,
    /// Data TCM: readable and writable, never executable (an instruction fetch
    /// from a DTCM address reads the memory behind it, not the DTCM).
    Dtcm,
    /// Memory-mapped device: never movable.
    Device,
}

impl Location {
    /// The largest rights any frame at this location can ever have.
    #[must_use]
    pub const fn ceiling(self) -> Rights {
        match self {
            Location::Ram | Location::Itcm => Rights::RWX,
            Location::Dtcm | Location::Device => Rights::RW,
        }
    }

    /// Whether this location is tightly-coupled memory.
    #[must_use]
    pub const fn is_tcm(self) -> bool {
        matches!(self, Location::Itcm | Location::Dtcm)
    }
}

/// A set of access rights: read, write, execute.
///
/// ```
/// use spm::{Location, Rights};
///
/// assert!(Rights::RWX.contains(Rights::RX));
/// assert!(!Rights::RW.contains(Rights::X));
/// assert_eq!(Rights::R.union(Rights::X), Rights::RX);
/// assert!(Rights::RW.writable() && !Rights::RX.writable());
/// assert_eq!(Rights::from_bits_truncate(0xFF), Rights::RWX);
/// // Code may go to ITCM but never to DTCM.
/// assert!(Location::Itcm.ceiling().contains(Rights::RX));
/// assert!(!Location::Dtcm.ceiling().contains(Rights::RX));
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Rights(u8);

impl Rights {
    /// No rights.
    pub const NONE: Rights = Rights(0);
    /// Readable.
    pub const R: Rights = Rights(1);
    /// Writable.
    pub const W: Rights = Rights(2);
    /// Executable.
    pub const X: Rights = Rights(4);
    /// Readable and writable (data).
    pub const RW: Rights = Rights(3);
    /// Readable and executable (code).
    pub const RX: Rights = Rights(5);
    /// Everything.
    pub const RWX: Rights = Rights(7);

    /// Rights from the low three bits (`R` = 1, `W` = 2, `X` = 4).
    #[must_use]
    pub const fn from_bits_truncate(bits: u8) -> Rights {
        Rights(bits & 7)
    }

    /// The raw bits.
    #[must_use]
    pub const fn bits(self) -> u8 {
        self.0
    }

    /// Whether every right in `other` is also in `self`.
    #[must_use]
    pub const fn contains(self, other: Rights) -> bool {
        self.0 & other.0 == other.0
    }

    /// The union of two sets.
    #[must_use]
    pub const fn union(self, other: Rights) -> Rights {
        Rights(self.0 | other.0)
    }

    /// Whether the set includes write access.
    #[must_use]
    pub const fn writable(self) -> bool {
        self.0 & 2 != 0
    }
}

impl fmt::Debug for Rights {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let c = |bit: u8, ch: char| if self.0 & bit != 0 { ch } else { '-' };
        write!(f, "{}{}{}", c(1, 'r'), c(2, 'w'), c(4, 'x'))
    }
}

/// How the frames of a region start out when the frame table is built.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum InitialUse {
    /// Not usable (holes, device memory): state undefined.
    Undefined,
    /// Free page resources (the usual start for TCM).
    Resource,
    /// Kernel pages (kernel image, boot allocations).
    Kernel,
}

/// A contiguous, 4 KiB-aligned physical memory region with a fixed location
/// and maximum rights.
///
/// ```
/// use mmu_armv5::PhysAddr;
/// use spm::{InitialUse, Location, PhysRegion, RegionError, Rights};
///
/// let itcm = PhysRegion::new(PhysAddr::new(0x0200_0000), 16 << 10, Location::Itcm, InitialUse::Resource)?;
/// assert_eq!((itcm.frames(), itcm.sections(), itcm.max_rights()), (4, 1, Rights::RWX));
/// assert!(itcm.contains(PhysAddr::new(0x0200_3FFF)) && !itcm.contains(PhysAddr::new(0x0200_4000)));
/// // Lowered rights: this ITCM takes code only, no data writes.
/// assert_eq!(itcm.with_max_rights(Rights::RX)?.max_rights(), Rights::RX);
///
/// let dtcm = PhysRegion::new(PhysAddr::new(0x0300_0000), 16 << 10, Location::Dtcm, InitialUse::Resource)?;
/// assert_eq!(
///     dtcm.with_max_rights(Rights::RX),
///     Err(RegionError::RightsAboveCeiling { location: Location::Dtcm, asked: Rights::RX })
/// );
/// assert_eq!(
///     PhysRegion::new(PhysAddr::new(0x1000_0000), 0x1000, Location::Device, InitialUse::Resource),
///     Err(RegionError::DeviceNotFixed)
/// );
/// assert_eq!(
///     PhysRegion::new(PhysAddr::new(0x0100_0800), 0x1000, Location::Ram, InitialUse::Kernel),
///     Err(RegionError::MisalignedBase(PhysAddr::new(0x0100_0800)))
/// );
/// # Ok::<(), RegionError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct PhysRegion {
    base: PhysAddr,
    frames: u32,
    location: Location,
    max_rights: Rights,
    initial: InitialUse,
    movable: bool,
}

/// A region description that cannot be used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum RegionError {
    /// The base is not 4 KiB aligned.
    MisalignedBase(PhysAddr),
    /// The size is zero or not a multiple of 4 KiB.
    BadSize(u32),
    /// The region wraps past the end of the 32-bit physical address space.
    Wraps(PhysAddr),
    /// The requested maximum rights exceed what the location allows
    /// (e.g. an executable DTCM region).
    RightsAboveCeiling {
        /// The region's location.
        location: Location,
        /// The rights asked for.
        asked: Rights,
    },
    /// Device memory described as movable or as holding resources.
    DeviceNotFixed,
}

impl fmt::Display for RegionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            RegionError::MisalignedBase(b) => write!(f, "region base {b} is not 4 KiB aligned"),
            RegionError::BadSize(s) => {
                write!(f, "region size {s:#x} is zero or not a multiple of 4 KiB")
            }
            RegionError::Wraps(b) => write!(f, "region at {b} wraps past 4 GiB"),
            RegionError::RightsAboveCeiling { location, asked } => write!(
                f,
                "{location:?} memory can never have rights {asked:?} (ceiling {:?})",
                location.ceiling()
            ),
            RegionError::DeviceNotFixed => {
                f.write_str("device memory must be unmovable and not a page resource")
            }
        }
    }
}

impl core::error::Error for RegionError {}

impl PhysRegion {
    /// A region of `size` bytes at `base`, with the location's full rights
    /// ([`Location::ceiling`]). Device regions start undefined and unmovable;
    /// others are movable.
    pub const fn new(
        base: PhysAddr,
        size: u32,
        location: Location,
        initial: InitialUse,
    ) -> Result<PhysRegion, RegionError> {
        if !base.is_aligned(Align::KIB_4) {
            return Err(RegionError::MisalignedBase(base));
        }
        if size == 0 || !size.is_multiple_of(FRAME_SIZE) {
            return Err(RegionError::BadSize(size));
        }
        if base.as_u32().checked_add(size - 1).is_none() {
            return Err(RegionError::Wraps(base));
        }
        let movable = !matches!(location, Location::Device);
        if !movable && matches!(initial, InitialUse::Resource) {
            return Err(RegionError::DeviceNotFixed);
        }
        Ok(PhysRegion {
            base,
            frames: size / FRAME_SIZE,
            location,
            max_rights: location.ceiling(),
            initial,
            movable,
        })
    }

    /// This region with maximum rights lowered to `rights`. Asking for more
    /// than the location allows (code in DTCM) is an error.
    pub const fn with_max_rights(mut self, rights: Rights) -> Result<PhysRegion, RegionError> {
        if !self.location.ceiling().contains(rights) {
            return Err(RegionError::RightsAboveCeiling {
                location: self.location,
                asked: rights,
            });
        }
        self.max_rights = rights;
        Ok(self)
    }

    /// This region with its frames initially unmovable (e.g. a DMA pool).
    #[must_use]
    pub const fn pinned(mut self) -> PhysRegion {
        self.movable = false;
        self
    }

    /// First physical address.
    #[must_use]
    pub const fn base(&self) -> PhysAddr {
        self.base
    }

    /// Size in bytes.
    #[must_use]
    pub const fn size(&self) -> u32 {
        self.frames * FRAME_SIZE
    }

    /// Number of 4 KiB frames.
    #[must_use]
    pub const fn frames(&self) -> u32 {
        self.frames
    }

    /// Where the region is.
    #[must_use]
    pub const fn location(&self) -> Location {
        self.location
    }

    /// The largest rights any frame of the region may have.
    #[must_use]
    pub const fn max_rights(&self) -> Rights {
        self.max_rights
    }

    /// How the frames start out.
    #[must_use]
    pub const fn initial(&self) -> InitialUse {
        self.initial
    }

    /// Whether frames start out movable.
    #[must_use]
    pub const fn movable(&self) -> bool {
        self.movable
    }

    /// Whether `pa` lies in the region.
    #[must_use]
    pub const fn contains(&self, pa: PhysAddr) -> bool {
        let off = pa.as_u32().wrapping_sub(self.base.as_u32());
        pa.as_u32() >= self.base.as_u32() && off / FRAME_SIZE < self.frames
    }

    /// The last byte's address.
    #[must_use]
    pub const fn last(&self) -> u32 {
        self.base.as_u32() + (self.frames * FRAME_SIZE - 1)
    }

    /// Whether the two regions share any byte.
    #[must_use]
    pub const fn overlaps(&self, other: &PhysRegion) -> bool {
        self.base.as_u32() <= other.last() && other.base.as_u32() <= self.last()
    }

    /// Number of 1 MiB slots the region touches (its per-section summaries).
    #[must_use]
    pub const fn sections(&self) -> u32 {
        (self.last() >> 20) - (self.base.as_u32() >> 20) + 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dtcm_is_never_executable() {
        let r = PhysRegion::new(
            PhysAddr::new(0xfffe_8000),
            0x8000,
            Location::Dtcm,
            InitialUse::Resource,
        )
        .unwrap();
        assert!(!r.max_rights().contains(Rights::X));
        assert_eq!(
            r.with_max_rights(Rights::RWX),
            Err(RegionError::RightsAboveCeiling {
                location: Location::Dtcm,
                asked: Rights::RWX
            })
        );
        assert_eq!(
            r.with_max_rights(Rights::R).unwrap().max_rights(),
            Rights::R
        );
    }

    #[test]
    fn bad_regions_are_typed_errors() {
        let p = PhysAddr::new;
        assert_eq!(
            PhysRegion::new(p(0x1001), 0x1000, Location::Ram, InitialUse::Resource),
            Err(RegionError::MisalignedBase(p(0x1001)))
        );
        assert_eq!(
            PhysRegion::new(p(0x1000), 0, Location::Ram, InitialUse::Resource),
            Err(RegionError::BadSize(0))
        );
        assert_eq!(
            PhysRegion::new(p(0x1000), 0x1800, Location::Ram, InitialUse::Resource),
            Err(RegionError::BadSize(0x1800))
        );
        assert_eq!(
            PhysRegion::new(p(0xffff_f000), 0x2000, Location::Ram, InitialUse::Resource),
            Err(RegionError::Wraps(p(0xffff_f000)))
        );
        assert_eq!(
            PhysRegion::new(
                p(0x1000_0000),
                0x1000,
                Location::Device,
                InitialUse::Resource
            ),
            Err(RegionError::DeviceNotFixed)
        );
        // The very top of the address space is fine.
        let top =
            PhysRegion::new(p(0xffff_f000), 0x1000, Location::Ram, InitialUse::Resource).unwrap();
        assert!(top.contains(p(0xffff_ffff)));
        assert!(!top.contains(p(0xffff_efff)));
    }

    #[test]
    fn sections_and_overlap() {
        let p = PhysAddr::new;
        let itcm =
            PhysRegion::new(p(0xfffe_0000), 0x8000, Location::Itcm, InitialUse::Resource).unwrap();
        let dtcm =
            PhysRegion::new(p(0xfffe_8000), 0x8000, Location::Dtcm, InitialUse::Resource).unwrap();
        assert_eq!(itcm.sections(), 1);
        assert!(!itcm.overlaps(&dtcm));
        let ram = PhysRegion::new(
            p(0x0008_0000),
            0x0020_0000,
            Location::Ram,
            InitialUse::Kernel,
        )
        .unwrap();
        assert_eq!(ram.sections(), 3);
        let inner =
            PhysRegion::new(p(0x0010_0000), 0x1000, Location::Ram, InitialUse::Kernel).unwrap();
        assert!(ram.overlaps(&inner) && inner.overlaps(&ram));
    }
}
