//! Page sizes as types, and pages and frames of a given size.
//!
//! ARMv5 maps memory in four granules: 1 MiB sections (first level), 64 KiB
//! large pages and 4 KiB small pages (coarse or fine second-level tables), and
//! 1 KiB tiny pages (fine tables only). As in the `x86_64` crate, the size is a
//! type parameter, so a [`Frame<Size1MiB>`] cannot be handed where a 4 KiB
//! frame is expected, and alignment is checked once, at construction.
//!
//! # Ranges
//! A [`PageRange`] or [`FrameRange`] is a start and a count of pages: at
//! least one page, every page aligned to the size, none reaching past
//! 4 GiB (the last page of the address space may be in a range). The checks
//! are done once, by the constructors, which return an [`AddrError`] naming
//! the first one that fails:
//!
//! | input | error |
//! |---|---|
//! | a start address not aligned to the size | [`AddrError::Misaligned`] |
//! | a length or count of zero, an end not after the start | [`AddrError::EmptyRange`] |
//! | a byte length not a whole number of pages | [`AddrError::PartialPage`] |
//! | a range that would reach past 4 GiB | [`AddrError::RangeWraps`] |
//!
//! Code that takes a range (as `fass` does to map or unmap pages) then has
//! no length to validate.

use crate::addr::{AddrError, Align, ModifiedVirtAddr, PhysAddr, VirtAddr};
use crate::fault::FaultLevel;
use core::fmt;
use core::marker::PhantomData;

mod range;

pub use range::{FrameIter, FrameRange, PageIter, PageRange};

/// A page size known at compile time.
pub trait PageSize: Copy + Eq + Ord + fmt::Debug + 'static {
    /// Size in bytes.
    const SIZE: u32;
    /// log2 of the size.
    const SHIFT: u32;
    /// The size as an alignment.
    const ALIGN: Align;
    /// The same size as a run-time value.
    const KIND: PageSizeKind;
}

macro_rules! page_size {
    ($(#[$doc:meta])* $name:ident, $shift:expr, $kind:ident, $align:ident) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum $name {}

        impl PageSize for $name {
            const SIZE: u32 = 1 << $shift;
            const SHIFT: u32 = $shift;
            const ALIGN: Align = Align::$align;
            const KIND: PageSizeKind = PageSizeKind::$kind;
        }
    };
}

page_size!(
    /// 1 MiB: a section, mapped by a first-level descriptor.
    Size1MiB,
    20,
    Section,
    MIB_1
);
page_size!(
    /// 64 KiB: a large page (coarse or fine table).
    Size64KiB,
    16,
    Large,
    KIB_64
);
page_size!(
    /// 4 KiB: a small page (coarse or fine table).
    Size4KiB,
    12,
    Small,
    KIB_4
);
page_size!(
    /// 1 KiB: a tiny page (fine tables only).
    Size1KiB,
    10,
    Tiny,
    KIB_1
);

/// A page size as a run-time value: the one page-size type of the stack
/// (`fass`, `spm`, `armv5-sim` and the mapper all take it).
///
/// ```
/// use mmu_armv5::fault::FaultLevel;
/// use mmu_armv5::size::PageSizeKind;
///
/// let large = PageSizeKind::Large;
/// assert_eq!((large.size(), large.shift()), (64 << 10, 16));
/// assert_eq!(large.small_pages(), 16); // 4 KiB frames it covers
/// assert_eq!(PageSizeKind::Tiny.small_pages(), 0); // less than one
/// assert_eq!(large.fault_level(), FaultLevel::Page);
/// assert_eq!(PageSizeKind::Section.fault_level(), FaultLevel::Section);
/// assert!(PageSizeKind::Tiny < PageSizeKind::Section);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum PageSizeKind {
    /// 1 KiB tiny page.
    Tiny,
    /// 4 KiB small page.
    Small,
    /// 64 KiB large page.
    Large,
    /// 1 MiB section.
    Section,
}

impl PageSizeKind {
    /// Every size, largest first.
    pub const LARGEST_FIRST: [PageSizeKind; 4] = [
        PageSizeKind::Section,
        PageSizeKind::Large,
        PageSizeKind::Small,
        PageSizeKind::Tiny,
    ];

    /// Size in bytes.
    #[must_use]
    pub const fn size(self) -> u32 {
        1 << self.shift()
    }

    /// The size as an alignment.
    #[must_use]
    pub const fn align(self) -> Align {
        match self {
            PageSizeKind::Tiny => Align::KIB_1,
            PageSizeKind::Small => Align::KIB_4,
            PageSizeKind::Large => Align::KIB_64,
            PageSizeKind::Section => Align::MIB_1,
        }
    }

    /// log2 of the size.
    #[must_use]
    pub const fn shift(self) -> u32 {
        match self {
            PageSizeKind::Tiny => 10,
            PageSizeKind::Small => 12,
            PageSizeKind::Large => 16,
            PageSizeKind::Section => 20,
        }
    }

    /// How many 4 KiB small pages (physical frames) one page of this size
    /// covers: 256 for a section, 16 for a large page, 1 for a small page,
    /// and 0 for a tiny page, which is smaller than one.
    #[must_use]
    pub const fn small_pages(self) -> u32 {
        self.size() / Size4KiB::SIZE
    }

    /// The level a fault on a mapping of this size reports: a section is
    /// a first-level entry, the other sizes are second-level ones.
    #[must_use]
    pub const fn fault_level(self) -> FaultLevel {
        match self {
            PageSizeKind::Section => FaultLevel::Section,
            PageSizeKind::Large | PageSizeKind::Small | PageSizeKind::Tiny => FaultLevel::Page,
        }
    }
}

/// A physical frame of size `S`: a [`PhysAddr`] aligned to `S::SIZE`.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Frame<S: PageSize> {
    start: PhysAddr,
    size: PhantomData<S>,
}

impl<S: PageSize> Frame<S> {
    /// The frame starting at `start`, which must be aligned to the frame size.
    #[inline]
    pub const fn from_start(start: PhysAddr) -> Result<Self, AddrError> {
        if start.is_aligned(S::ALIGN) {
            Ok(Frame {
                start,
                size: PhantomData,
            })
        } else {
            Err(AddrError::Misaligned {
                addr: start.as_u32(),
                align: S::SIZE,
            })
        }
    }

    /// The frame containing `addr`.
    #[inline]
    #[must_use]
    pub const fn containing(addr: PhysAddr) -> Self {
        Frame {
            start: addr.align_down(S::ALIGN),
            size: PhantomData,
        }
    }

    /// First byte of the frame.
    #[inline]
    #[must_use]
    pub const fn start(self) -> PhysAddr {
        self.start
    }
}

impl<S: PageSize> fmt::Debug for Frame<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Frame<{:?}>({:#010x})", S::KIND, self.start.as_u32())
    }
}

#[cfg(feature = "defmt")]
impl<S: PageSize> defmt::Format for Frame<S> {
    fn format(&self, f: defmt::Formatter) {
        defmt::write!(f, "Frame({=u32:#x}, {})", self.start.as_u32(), S::KIND)
    }
}

/// The address kinds a [`Page`] can be named by: [`ModifiedVirtAddr`] (the
/// default; what page tables are indexed by) and [`VirtAddr`] (a program's
/// address, before the FCSE relocates it). Sealed: implemented by these two only.
pub trait VirtualAddress:
    sealed::Sealed + Copy + Eq + Ord + core::hash::Hash + fmt::Debug + 'static
{
    /// The address as a number.
    fn to_u32(self) -> u32;
    /// The address with this value.
    fn from_u32(addr: u32) -> Self;
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for crate::VirtAddr {}
    impl Sealed for crate::ModifiedVirtAddr {}
}

/// A page of size `S` at an address of kind `A` aligned to `S::SIZE`.
///
/// Page tables are indexed by MVA, so pages are named by MVA unless said
/// otherwise (`A` defaults to [`ModifiedVirtAddr`]); obtain one from a
/// program's address with [`VirtAddr::to_mva`]. A `Page<S, VirtAddr>` names
/// a page of a program's addresses, which the FCSE may still relocate: what
/// `fass` maps, as it knows each space's PID.
///
/// ```
/// use mmu_armv5::size::{Page, Size4KiB};
/// use mmu_armv5::{AddrError, VirtAddr};
///
/// let page = Page::<Size4KiB, VirtAddr>::from_start(VirtAddr::new(0x8000))?;
/// assert_eq!(page.start(), VirtAddr::new(0x8000));
/// assert_eq!(Page::<Size4KiB, _>::containing(VirtAddr::new(0x8abc)), page);
/// assert_eq!(
///     Page::<Size4KiB, VirtAddr>::from_start(VirtAddr::new(0x8004)),
///     Err(AddrError::Misaligned { addr: 0x8004, align: 0x1000 })
/// );
/// # Ok::<(), AddrError>(())
/// ```
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Page<S: PageSize, A: VirtualAddress = ModifiedVirtAddr> {
    start: u32,
    marker: PhantomData<(S, A)>,
}

impl<S: PageSize, A: VirtualAddress> Page<S, A> {
    /// The page at `start`, known to be aligned.
    #[inline]
    pub(crate) const fn at(start: u32) -> Self {
        Page {
            start,
            marker: PhantomData,
        }
    }

    /// The first byte's address as a number.
    #[inline]
    pub(crate) const fn raw(self) -> u32 {
        self.start
    }
}

impl<S: PageSize, A: VirtualAddress> Page<S, A> {
    /// The page starting at `start`, which must be aligned to the page size.
    #[inline]
    pub fn from_start(start: A) -> Result<Self, AddrError> {
        let start = start.to_u32();
        if start.is_multiple_of(S::SIZE) {
            Ok(Page::at(start))
        } else {
            Err(AddrError::Misaligned {
                addr: start,
                align: S::SIZE,
            })
        }
    }

    /// The page containing `addr`.
    #[inline]
    #[must_use]
    pub fn containing(addr: A) -> Self {
        Page::at(addr.to_u32() & !(S::SIZE - 1))
    }

    /// First byte of the page.
    #[inline]
    #[must_use]
    pub fn start(self) -> A {
        A::from_u32(self.start)
    }
}

impl VirtualAddress for VirtAddr {
    #[inline]
    fn to_u32(self) -> u32 {
        self.as_u32()
    }

    #[inline]
    fn from_u32(addr: u32) -> Self {
        VirtAddr::new(addr)
    }
}

impl VirtualAddress for ModifiedVirtAddr {
    #[inline]
    fn to_u32(self) -> u32 {
        self.as_u32()
    }

    #[inline]
    fn from_u32(addr: u32) -> Self {
        ModifiedVirtAddr::new(addr)
    }
}

impl<S: PageSize, A: VirtualAddress> fmt::Debug for Page<S, A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Page<{:?}>({:#010x})", S::KIND, self.start)
    }
}

#[cfg(feature = "defmt")]
impl<S: PageSize, A: VirtualAddress> defmt::Format for Page<S, A> {
    fn format(&self, f: defmt::Formatter) {
        defmt::write!(f, "Page({=u32:#x}, {})", self.start, S::KIND)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(Size1MiB::SIZE, 1 << 20);
        assert_eq!(Size64KiB::SIZE, 64 << 10);
        assert_eq!(Size4KiB::SIZE, 4 << 10);
        assert_eq!(Size1KiB::SIZE, 1 << 10);
        for k in PageSizeKind::LARGEST_FIRST {
            assert_eq!(k.size(), 1 << k.shift());
            assert_eq!(k.align().bytes(), k.size());
        }
        assert_eq!(Size1KiB::ALIGN, Align::KIB_1);
        assert_eq!(Size64KiB::KIND.size(), Size64KiB::SIZE);
    }

    #[test]
    fn small_pages_count_whole_4k_frames() {
        let counts = PageSizeKind::LARGEST_FIRST.map(PageSizeKind::small_pages);
        assert_eq!(counts, [256, 16, 1, 0]);
        for k in PageSizeKind::LARGEST_FIRST {
            assert_eq!(
                k.small_pages() * Size4KiB::SIZE,
                k.size() & !(Size4KiB::SIZE - 1)
            );
        }
    }

    #[test]
    fn only_sections_fault_at_the_first_level() {
        let levels = PageSizeKind::LARGEST_FIRST.map(PageSizeKind::fault_level);
        assert_eq!(
            levels,
            [
                FaultLevel::Section,
                FaultLevel::Page,
                FaultLevel::Page,
                FaultLevel::Page
            ]
        );
    }

    #[test]
    fn frames_and_pages_check_alignment() {
        assert!(Frame::<Size1MiB>::from_start(PhysAddr::new(0x0010_0000)).is_ok());
        assert_eq!(
            Frame::<Size1MiB>::from_start(PhysAddr::new(0x0010_1000)),
            Err(AddrError::Misaligned {
                addr: 0x0010_1000,
                align: 1 << 20
            })
        );
        assert_eq!(
            Frame::<Size4KiB>::containing(PhysAddr::new(0x1234)).start(),
            PhysAddr::new(0x1000)
        );
        assert!(Page::<Size1KiB>::from_start(ModifiedVirtAddr::new(0x400)).is_ok());
        assert!(Page::<Size64KiB>::from_start(ModifiedVirtAddr::new(0x8000)).is_err());
    }
}
