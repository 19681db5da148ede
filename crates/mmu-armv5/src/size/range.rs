//! Half-open ranges of pages and frames of one size (the checks: the
//! [`size`](crate::size#ranges) module docs).

use super::{Frame, Page, PageSize, VirtualAddress};
use crate::addr::{AddrError, ModifiedVirtAddr, PhysAddr};
use core::fmt;
use core::iter::FusedIterator;
use core::marker::PhantomData;

/// 4 GiB, one past the last address.
const TOP: u64 = 1 << 32;

/// The checked part shared by page and frame ranges: `count` pages of
/// `S::SIZE` bytes from `start`, aligned, at least one, not past 4 GiB.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
struct Span {
    start: u32,
    count: u32,
}

impl Span {
    /// `count` pages from `start`, which the caller has checked is aligned.
    const fn new<S: PageSize>(start: u32, count: u32) -> Result<Span, AddrError> {
        if count == 0 {
            return Err(AddrError::EmptyRange);
        }
        if (count as u64) << S::SHIFT > TOP - start as u64 {
            return Err(AddrError::RangeWraps { start, count });
        }
        Ok(Span { start, count })
    }

    /// `len` bytes from `start`.
    const fn from_bytes<S: PageSize>(start: u32, len: u32) -> Result<Span, AddrError> {
        if start & (S::SIZE - 1) != 0 {
            return Err(AddrError::Misaligned {
                addr: start,
                align: S::SIZE,
            });
        }
        if len == 0 {
            return Err(AddrError::EmptyRange);
        }
        if len & (S::SIZE - 1) != 0 {
            return Err(AddrError::PartialPage { len, size: S::SIZE });
        }
        Span::new::<S>(start, len >> S::SHIFT)
    }

    /// From the page at `start` up to (not including) the page at `end`,
    /// both aligned.
    const fn between<S: PageSize>(start: u32, end: u32) -> Result<Span, AddrError> {
        if end <= start {
            return Err(AddrError::EmptyRange);
        }
        Ok(Span {
            start,
            count: (end - start) >> S::SHIFT,
        })
    }

    /// The start of the last page.
    const fn last<S: PageSize>(self) -> u32 {
        self.start + ((self.count - 1) << S::SHIFT)
    }

    /// One past the last byte, as a 64-bit number (it may be 4 GiB).
    const fn end<S: PageSize>(self) -> u64 {
        self.start as u64 + self.len::<S>()
    }

    const fn len<S: PageSize>(self) -> u64 {
        (self.count as u64) << S::SHIFT
    }

    const fn contains<S: PageSize>(self, addr: u32) -> bool {
        addr >= self.start && (addr as u64) < self.end::<S>()
    }
}

/// Pages `[start, start + count)` of size `S`, named by addresses of kind
/// `A` (MVAs unless said otherwise, as [`Page`]). Never empty; see the
/// [module docs](crate::size#ranges) for what the constructors check.
///
/// ```
/// use mmu_armv5::size::{Page, PageRange, Size4KiB};
/// use mmu_armv5::{AddrError, VirtAddr};
///
/// let pages = PageRange::<Size4KiB, VirtAddr>::from_bytes(VirtAddr::new(0x8000), 0x3000)?;
/// assert_eq!((pages.count(), pages.len()), (3, 0x3000));
/// assert_eq!(pages.start().start(), VirtAddr::new(0x8000));
/// assert_eq!(pages.last().start(), VirtAddr::new(0xa000));
/// assert_eq!(pages.end().map(Page::start), Some(VirtAddr::new(0xb000)));
/// let starts: Vec<u32> = pages.iter().map(|p| p.start().as_u32()).collect();
/// assert_eq!(starts, [0x8000, 0x9000, 0xa000]);
///
/// // The same range built from a first page and a count, or two pages:
/// let first = Page::from_start(VirtAddr::new(0x8000))?;
/// assert_eq!(PageRange::new(first, 3), Ok(pages));
/// assert_eq!(Page::range(first, Page::from_start(VirtAddr::new(0xb000))?), Ok(pages));
///
/// type Small = PageRange<Size4KiB, VirtAddr>;
/// let at = VirtAddr::new;
/// assert_eq!(Small::from_bytes(at(0x8000), 0), Err(AddrError::EmptyRange));
/// assert_eq!(
///     Small::from_bytes(at(0x8000), 0x1800),
///     Err(AddrError::PartialPage { len: 0x1800, size: 0x1000 })
/// );
/// assert_eq!(
///     Small::from_bytes(at(0xffff_f000), 0x2000),
///     Err(AddrError::RangeWraps { start: 0xffff_f000, count: 2 })
/// );
/// // The top page is a range of its own, with no page after it.
/// assert_eq!(Small::from_bytes(at(0xffff_f000), 0x1000)?.end(), None);
/// # Ok::<(), AddrError>(())
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct PageRange<S: PageSize, A: VirtualAddress = ModifiedVirtAddr> {
    span: Span,
    marker: PhantomData<(S, A)>,
}

// A range is never empty: `is_empty` would always be false.
#[allow(clippy::len_without_is_empty)]
impl<S: PageSize, A: VirtualAddress> PageRange<S, A> {
    const fn wrap(span: Span) -> Self {
        PageRange {
            span,
            marker: PhantomData,
        }
    }

    /// `count` pages from `start`: [`AddrError::EmptyRange`] if `count` is
    /// zero, [`AddrError::RangeWraps`] if they reach past 4 GiB.
    pub const fn new(start: Page<S, A>, count: u32) -> Result<Self, AddrError> {
        match Span::new::<S>(start.raw(), count) {
            Ok(span) => Ok(Self::wrap(span)),
            Err(e) => Err(e),
        }
    }

    /// The first page.
    #[must_use]
    pub const fn start(self) -> Page<S, A> {
        Page::at(self.span.start)
    }

    /// The last page (the range is never empty).
    #[must_use]
    pub const fn last(self) -> Page<S, A> {
        Page::at(self.span.last::<S>())
    }

    /// The page just after the range, or `None` if the range ends at 4 GiB.
    #[must_use]
    pub const fn end(self) -> Option<Page<S, A>> {
        let end = self.span.end::<S>();
        if end < TOP {
            Some(Page::at(end as u32))
        } else {
            None
        }
    }

    /// The number of pages, at least one.
    #[must_use]
    pub const fn count(self) -> u32 {
        self.span.count
    }

    /// The length in bytes (`count() * S::SIZE`; 4 GiB for the whole
    /// address space, hence 64 bits).
    #[must_use]
    pub const fn len(self) -> u64 {
        self.span.len::<S>()
    }

    /// Whether `page` is one of the range's pages.
    #[must_use]
    pub const fn contains(self, page: Page<S, A>) -> bool {
        self.span.contains::<S>(page.raw())
    }

    /// The pages in address order.
    #[must_use]
    pub const fn iter(self) -> PageIter<S, A> {
        PageIter {
            next: self.span.start,
            left: self.span.count,
            marker: PhantomData,
        }
    }
}

impl<S: PageSize, A: VirtualAddress> Page<S, A> {
    /// The pages from `start` up to, not including, `end`:
    /// [`AddrError::EmptyRange`] unless `end` is after `start`.
    pub const fn range(start: Self, end: Self) -> Result<PageRange<S, A>, AddrError> {
        match Span::between::<S>(start.raw(), end.raw()) {
            Ok(span) => Ok(PageRange::wrap(span)),
            Err(e) => Err(e),
        }
    }
}

impl<S: PageSize, A: VirtualAddress> PageRange<S, A> {
    /// The pages of `[start, start + len)`: `start` aligned to the page
    /// size, `len` a non-zero multiple of it, the range not past 4 GiB (the
    /// errors in the [module docs](crate::size#ranges)).
    pub fn from_bytes(start: A, len: u32) -> Result<Self, AddrError> {
        Span::from_bytes::<S>(start.to_u32(), len).map(Self::wrap)
    }
}

impl<S: PageSize, A: VirtualAddress> From<Page<S, A>> for PageRange<S, A> {
    /// The range of this one page (which never reaches past 4 GiB).
    fn from(page: Page<S, A>) -> Self {
        Self::wrap(Span {
            start: page.raw(),
            count: 1,
        })
    }
}

impl<S: PageSize, A: VirtualAddress> IntoIterator for PageRange<S, A> {
    type Item = Page<S, A>;
    type IntoIter = PageIter<S, A>;

    fn into_iter(self) -> PageIter<S, A> {
        self.iter()
    }
}

impl<S: PageSize, A: VirtualAddress> fmt::Debug for PageRange<S, A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "PageRange<{:?}>({:#010x}, {} pages)",
            S::KIND,
            self.span.start,
            self.span.count
        )
    }
}

#[cfg(feature = "defmt")]
impl<S: PageSize, A: VirtualAddress> defmt::Format for PageRange<S, A> {
    fn format(&self, f: defmt::Formatter) {
        defmt::write!(
            f,
            "PageRange({=u32:#x}, {=u32} pages, {})",
            self.span.start,
            self.span.count,
            S::KIND
        )
    }
}

/// The pages of a [`PageRange`], in address order.
#[derive(Clone, Debug)]
pub struct PageIter<S: PageSize, A: VirtualAddress = ModifiedVirtAddr> {
    next: u32,
    left: u32,
    marker: PhantomData<(S, A)>,
}

impl<S: PageSize, A: VirtualAddress> Iterator for PageIter<S, A> {
    type Item = Page<S, A>;

    fn next(&mut self) -> Option<Page<S, A>> {
        let at = step::<S>(&mut self.next, &mut self.left)?;
        Some(Page::at(at))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left as usize, Some(self.left as usize))
    }
}

impl<S: PageSize, A: VirtualAddress> DoubleEndedIterator for PageIter<S, A> {
    fn next_back(&mut self) -> Option<Page<S, A>> {
        let at = step_back::<S>(self.next, &mut self.left)?;
        Some(Page::at(at))
    }
}

impl<S: PageSize, A: VirtualAddress> ExactSizeIterator for PageIter<S, A> {}
impl<S: PageSize, A: VirtualAddress> FusedIterator for PageIter<S, A> {}

/// Takes the first of `left` pages from `next`. The last page may be the
/// top one, so `next` wraps to 0 after it (and is never read again).
fn step<S: PageSize>(next: &mut u32, left: &mut u32) -> Option<u32> {
    if *left == 0 {
        return None;
    }
    let at = *next;
    *next = at.wrapping_add(S::SIZE);
    *left -= 1;
    Some(at)
}

/// Takes the last of `left` pages from `next`.
fn step_back<S: PageSize>(next: u32, left: &mut u32) -> Option<u32> {
    if *left == 0 {
        return None;
    }
    *left -= 1;
    Some(next + (*left << S::SHIFT))
}

/// Physical frames `[start, start + count)` of size `S`. Never empty; see
/// the [module docs](crate::size#ranges) for what the constructors check.
///
/// ```
/// use mmu_armv5::size::{Frame, FrameRange, Size4KiB};
/// use mmu_armv5::{AddrError, PhysAddr};
///
/// let first = Frame::<Size4KiB>::from_start(PhysAddr::new(0x0400_0000))?;
/// let frames = FrameRange::new(first, 2)?;
/// assert_eq!(frames, FrameRange::from_bytes(PhysAddr::new(0x0400_0000), 0x2000)?);
/// assert_eq!(frames.last().start(), PhysAddr::new(0x0400_1000));
/// assert!(frames.contains(Frame::containing(PhysAddr::new(0x0400_1ffc))));
/// assert!(!frames.contains(Frame::containing(PhysAddr::new(0x0400_2000))));
/// assert_eq!(frames.iter().count(), 2);
/// assert_eq!(
///     FrameRange::new(Frame::<Size4KiB>::from_start(PhysAddr::new(0xffff_e000))?, 3),
///     Err(AddrError::RangeWraps { start: 0xffff_e000, count: 3 })
/// );
/// # Ok::<(), AddrError>(())
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct FrameRange<S: PageSize> {
    span: Span,
    marker: PhantomData<S>,
}

// A range is never empty: `is_empty` would always be false.
#[allow(clippy::len_without_is_empty)]
impl<S: PageSize> FrameRange<S> {
    const fn wrap(span: Span) -> Self {
        FrameRange {
            span,
            marker: PhantomData,
        }
    }

    /// `count` frames from `start`: [`AddrError::EmptyRange`] if `count` is
    /// zero, [`AddrError::RangeWraps`] if they reach past 4 GiB.
    pub const fn new(start: Frame<S>, count: u32) -> Result<Self, AddrError> {
        match Span::new::<S>(start.start.as_u32(), count) {
            Ok(span) => Ok(Self::wrap(span)),
            Err(e) => Err(e),
        }
    }

    /// The frames of `[start, start + len)`: `start` aligned to the frame
    /// size, `len` a non-zero multiple of it, the range not past 4 GiB
    /// (the errors in the [module docs](crate::size#ranges)).
    pub const fn from_bytes(start: PhysAddr, len: u32) -> Result<Self, AddrError> {
        match Span::from_bytes::<S>(start.as_u32(), len) {
            Ok(span) => Ok(Self::wrap(span)),
            Err(e) => Err(e),
        }
    }

    /// The first frame.
    #[must_use]
    pub const fn start(self) -> Frame<S> {
        frame_at(self.span.start)
    }

    /// The last frame (the range is never empty).
    #[must_use]
    pub const fn last(self) -> Frame<S> {
        frame_at(self.span.last::<S>())
    }

    /// The frame just after the range, or `None` if the range ends at 4 GiB.
    #[must_use]
    pub const fn end(self) -> Option<Frame<S>> {
        let end = self.span.end::<S>();
        if end < TOP {
            Some(frame_at(end as u32))
        } else {
            None
        }
    }

    /// The number of frames, at least one.
    #[must_use]
    pub const fn count(self) -> u32 {
        self.span.count
    }

    /// The length in bytes (`count() * S::SIZE`; 4 GiB for all of physical
    /// address space, hence 64 bits).
    #[must_use]
    pub const fn len(self) -> u64 {
        self.span.len::<S>()
    }

    /// Whether `frame` is one of the range's frames.
    #[must_use]
    pub const fn contains(self, frame: Frame<S>) -> bool {
        self.span.contains::<S>(frame.start.as_u32())
    }

    /// The frames in address order.
    #[must_use]
    pub const fn iter(self) -> FrameIter<S> {
        FrameIter {
            next: self.span.start,
            left: self.span.count,
            marker: PhantomData,
        }
    }
}

const fn frame_at<S: PageSize>(start: u32) -> Frame<S> {
    Frame {
        start: PhysAddr::new(start),
        size: PhantomData,
    }
}

impl<S: PageSize> Frame<S> {
    /// The frames from `start` up to, not including, `end`:
    /// [`AddrError::EmptyRange`] unless `end` is after `start`.
    pub const fn range(start: Self, end: Self) -> Result<FrameRange<S>, AddrError> {
        match Span::between::<S>(start.start.as_u32(), end.start.as_u32()) {
            Ok(span) => Ok(FrameRange::wrap(span)),
            Err(e) => Err(e),
        }
    }
}

impl<S: PageSize> From<Frame<S>> for FrameRange<S> {
    /// The range of this one frame (which never reaches past 4 GiB).
    fn from(frame: Frame<S>) -> Self {
        Self::wrap(Span {
            start: frame.start.as_u32(),
            count: 1,
        })
    }
}

impl<S: PageSize> IntoIterator for FrameRange<S> {
    type Item = Frame<S>;
    type IntoIter = FrameIter<S>;

    fn into_iter(self) -> FrameIter<S> {
        self.iter()
    }
}

impl<S: PageSize> fmt::Debug for FrameRange<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "FrameRange<{:?}>({:#010x}, {} frames)",
            S::KIND,
            self.span.start,
            self.span.count
        )
    }
}

#[cfg(feature = "defmt")]
impl<S: PageSize> defmt::Format for FrameRange<S> {
    fn format(&self, f: defmt::Formatter) {
        defmt::write!(
            f,
            "FrameRange({=u32:#x}, {=u32} frames, {})",
            self.span.start,
            self.span.count,
            S::KIND
        )
    }
}

/// The frames of a [`FrameRange`], in address order.
#[derive(Clone, Debug)]
pub struct FrameIter<S: PageSize> {
    next: u32,
    left: u32,
    marker: PhantomData<S>,
}

impl<S: PageSize> Iterator for FrameIter<S> {
    type Item = Frame<S>;

    fn next(&mut self) -> Option<Frame<S>> {
        step::<S>(&mut self.next, &mut self.left).map(frame_at)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left as usize, Some(self.left as usize))
    }
}

impl<S: PageSize> DoubleEndedIterator for FrameIter<S> {
    fn next_back(&mut self) -> Option<Frame<S>> {
        step_back::<S>(self.next, &mut self.left).map(frame_at)
    }
}

impl<S: PageSize> ExactSizeIterator for FrameIter<S> {}
impl<S: PageSize> FusedIterator for FrameIter<S> {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::addr::VirtAddr;
    use crate::size::{Size1KiB, Size1MiB, Size4KiB, Size64KiB};

    type Small = PageRange<Size4KiB, VirtAddr>;

    #[test]
    fn from_bytes_names_the_first_failed_check() {
        let at = VirtAddr::new;
        // Misaligned start wins over every length problem.
        assert_eq!(
            Small::from_bytes(at(0x8800), 0),
            Err(AddrError::Misaligned {
                addr: 0x8800,
                align: 0x1000
            })
        );
        assert_eq!(Small::from_bytes(at(0x8000), 0), Err(AddrError::EmptyRange));
        assert_eq!(
            Small::from_bytes(at(0x8000), 0xfff),
            Err(AddrError::PartialPage {
                len: 0xfff,
                size: 0x1000
            })
        );
        assert_eq!(
            Small::from_bytes(at(0x8000), 0x1001),
            Err(AddrError::PartialPage {
                len: 0x1001,
                size: 0x1000
            })
        );
        assert_eq!(
            Small::from_bytes(at(0xffff_f000), 0x2000),
            Err(AddrError::RangeWraps {
                start: 0xffff_f000,
                count: 2
            })
        );
        // Up to the top is fine: the last page may be in a range.
        let top = Small::from_bytes(at(0xfff0_0000), 0x10_0000).unwrap();
        assert_eq!((top.count(), top.end()), (256, None));
        assert_eq!(top.last().start(), at(0xffff_f000));
    }

    #[test]
    fn new_refuses_zero_and_wrapping_counts() {
        let p = Page::<Size1MiB>::from_start(ModifiedVirtAddr::new(0xfff0_0000)).unwrap();
        assert_eq!(PageRange::new(p, 0), Err(AddrError::EmptyRange));
        assert_eq!(PageRange::new(p, 1).map(PageRange::count), Ok(1));
        assert_eq!(
            PageRange::new(p, 2),
            Err(AddrError::RangeWraps {
                start: 0xfff0_0000,
                count: 2
            })
        );
        // The whole address space: 4 GiB, which only 64 bits hold.
        let zero = Page::<Size1MiB>::from_start(ModifiedVirtAddr::ZERO).unwrap();
        let all = PageRange::new(zero, 4096).unwrap();
        assert_eq!((all.len(), all.end()), (1 << 32, None));
        assert_eq!(
            PageRange::new(zero, 4097),
            Err(AddrError::RangeWraps {
                start: 0,
                count: 4097
            })
        );
        // A count whose byte length overflows 32 bits is refused, not wrapped.
        let big = u32::MAX;
        assert_eq!(
            PageRange::new(zero, big),
            Err(AddrError::RangeWraps {
                start: 0,
                count: big
            })
        );
    }

    #[test]
    fn range_needs_an_end_after_the_start() {
        let page = |a| Page::<Size64KiB>::from_start(ModifiedVirtAddr::new(a)).unwrap();
        assert_eq!(
            Page::range(page(0x2_0000), page(0x2_0000)),
            Err(AddrError::EmptyRange)
        );
        assert_eq!(
            Page::range(page(0x3_0000), page(0x2_0000)),
            Err(AddrError::EmptyRange)
        );
        let r = Page::range(page(0x2_0000), page(0x5_0000)).unwrap();
        assert_eq!((r.count(), r.end()), (3, Some(page(0x5_0000))));
        let frame = |a| Frame::<Size1KiB>::from_start(PhysAddr::new(a)).unwrap();
        assert_eq!(
            Frame::range(frame(0x400), frame(0x400)),
            Err(AddrError::EmptyRange)
        );
        assert_eq!(
            Frame::range(frame(0x400), frame(0xc00)).map(FrameRange::count),
            Ok(2)
        );
    }

    #[test]
    fn frame_range_checks_like_page_range() {
        type F = FrameRange<Size4KiB>;
        let pa = PhysAddr::new;
        assert_eq!(
            F::from_bytes(pa(0x10), 0x1000),
            Err(AddrError::Misaligned {
                addr: 0x10,
                align: 0x1000
            })
        );
        assert_eq!(F::from_bytes(pa(0), 0), Err(AddrError::EmptyRange));
        assert_eq!(
            F::from_bytes(pa(0), 0x800),
            Err(AddrError::PartialPage {
                len: 0x800,
                size: 0x1000
            })
        );
        assert_eq!(
            F::from_bytes(pa(0xffff_f000), 0x2000),
            Err(AddrError::RangeWraps {
                start: 0xffff_f000,
                count: 2
            })
        );
        let top = F::from_bytes(pa(0xffff_e000), 0x2000).unwrap();
        assert_eq!(top.end(), None);
        assert_eq!(top.len(), 0x2000);
        let f = top.iter().map(|f| f.start().as_u32());
        assert!(f.eq([0xffff_e000, 0xffff_f000]));
        assert!(top
            .iter()
            .rev()
            .map(|f| f.start().as_u32())
            .eq([0xffff_f000, 0xffff_e000]));
        assert_eq!(
            F::from_bytes(pa(0x1000), 0x1000).unwrap().end(),
            Some(Frame::containing(pa(0x2000)))
        );
    }

    #[test]
    fn one_page_is_a_range_of_one() {
        let top = Page::<Size4KiB, VirtAddr>::containing(VirtAddr::new(0xffff_ffff));
        let r = PageRange::from(top);
        assert_eq!(
            (r.count(), r.start(), r.last(), r.end()),
            (1, top, top, None)
        );
        let f = Frame::<Size64KiB>::containing(PhysAddr::new(0x0003_1234));
        let fr = FrameRange::from(f);
        assert_eq!((fr.count(), fr.start()), (1, f));
        assert_eq!(
            fr.end(),
            Some(Frame::containing(PhysAddr::new(0x0004_0000)))
        );
    }

    #[test]
    fn contains_is_half_open() {
        let r = PageRange::<Size4KiB>::from_bytes(ModifiedVirtAddr::new(0x5000), 0x2000).unwrap();
        let page = |a| Page::<Size4KiB>::containing(ModifiedVirtAddr::new(a));
        assert!(!r.contains(page(0x4fff)));
        assert!(r.contains(page(0x5000)));
        assert!(r.contains(page(0x6fff)));
        assert!(!r.contains(page(0x7000)));
        let f = FrameRange::<Size4KiB>::from_bytes(PhysAddr::new(0x5000), 0x2000).unwrap();
        let frame = |a| Frame::<Size4KiB>::containing(PhysAddr::new(a));
        assert!(!f.contains(frame(0x4fff)));
        assert!(f.contains(frame(0x5000)));
        assert!(f.contains(frame(0x6fff)));
        assert!(!f.contains(frame(0x7000)));
    }

    #[test]
    fn iterators_count_down_from_both_ends() {
        let r = Small::from_bytes(VirtAddr::new(0xffff_d000), 0x3000).unwrap();
        let mut it = r.iter();
        assert_eq!(it.len(), 3);
        assert_eq!(
            it.next_back().map(|p| p.start().as_u32()),
            Some(0xffff_f000)
        );
        assert_eq!(it.next().map(|p| p.start().as_u32()), Some(0xffff_d000));
        assert_eq!(it.size_hint(), (1, Some(1)));
        assert_eq!(it.next().map(|p| p.start().as_u32()), Some(0xffff_e000));
        assert_eq!(it.next(), None);
        assert_eq!(it.next_back(), None);
        assert_eq!(it.len(), 0);
        let mut frames = FrameRange::<Size4KiB>::from_bytes(PhysAddr::new(0x1000), 0x2000)
            .unwrap()
            .iter();
        assert_eq!(frames.size_hint(), (2, Some(2)));
        frames.next();
        assert_eq!(frames.len(), 1);
        frames.next_back();
        assert_eq!(frames.size_hint(), (0, Some(0)));
        let mut top = r.into_iter().skip(2);
        assert_eq!(top.next().map(|p| p.start().as_u32()), Some(0xffff_f000));
        assert_eq!(top.next(), None);
    }

    #[test]
    fn debug_names_start_and_count() {
        let r = Small::from_bytes(VirtAddr::new(0x8000), 0x2000).unwrap();
        assert_eq!(
            std::format!("{r:?}"),
            "PageRange<Small>(0x00008000, 2 pages)"
        );
        let f = FrameRange::<Size4KiB>::from_bytes(PhysAddr::new(0x1000), 0x1000).unwrap();
        assert_eq!(
            std::format!("{f:?}"),
            "FrameRange<Small>(0x00001000, 1 frames)"
        );
    }
}
