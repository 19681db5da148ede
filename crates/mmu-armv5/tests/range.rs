//! Page and frame ranges against a 64-bit model of what they may hold: the
//! constructors accept exactly the aligned, non-empty ranges that end at or
//! below 4 GiB and name the first check that fails; the iterators give
//! `count` aligned, consecutive pages that cover `len` bytes.

#[allow(unused_imports)] // the ledger, which these tests do not need
mod common;
use common::proptest_config;
use mmu_armv5::size::{
    Frame, FrameRange, Page, PageRange, PageSize, Size1KiB, Size1MiB, Size4KiB, Size64KiB,
};
use mmu_armv5::{AddrError, ModifiedVirtAddr, PhysAddr, VirtAddr};
use proptest::prelude::*;

const TOP: u64 = 1 << 32;

/// Addresses near the interesting places: anywhere, page-aligned, near the top.
fn addr(size: u32) -> impl Strategy<Value = u32> {
    prop_oneof![
        any::<u32>(),
        any::<u32>().prop_map(move |a| a & !(size - 1)),
        (0..64u32).prop_map(move |k| 0u32.wrapping_sub((k + 1) * size)),
    ]
}

/// Byte lengths: anywhere, whole pages (zero included), a page off.
fn len(size: u32) -> impl Strategy<Value = u32> {
    prop_oneof![
        any::<u32>(),
        (0..=64u32).prop_map(move |k| k * size),
        (1..=64u32).prop_map(move |k| k * size + 1),
        any::<u32>().prop_map(move |l| l & !(size - 1)),
    ]
}

/// What `from_bytes` must answer, from the definition.
fn expected<S: PageSize>(start: u32, len: u32) -> Result<u32, AddrError> {
    if !start.is_multiple_of(S::SIZE) {
        Err(AddrError::Misaligned {
            addr: start,
            align: S::SIZE,
        })
    } else if len == 0 {
        Err(AddrError::EmptyRange)
    } else if !len.is_multiple_of(S::SIZE) {
        Err(AddrError::PartialPage { len, size: S::SIZE })
    } else if u64::from(start) + u64::from(len) > TOP {
        Err(AddrError::RangeWraps {
            start,
            count: len / S::SIZE,
        })
    } else {
        Ok(len / S::SIZE)
    }
}

fn check_pages<S: PageSize>(start: u32, len: u32) -> Result<(), TestCaseError> {
    let got = PageRange::<S, VirtAddr>::from_bytes(VirtAddr::new(start), len);
    prop_assert_eq!(got.map(PageRange::count), expected::<S>(start, len));
    let mva = PageRange::<S>::from_bytes(ModifiedVirtAddr::new(start), len);
    prop_assert_eq!(mva.map(PageRange::count), expected::<S>(start, len));
    let Ok(r) = got else { return Ok(()) };
    prop_assert_eq!(r.len(), u64::from(r.count()) * u64::from(S::SIZE));
    prop_assert_eq!(r.len(), u64::from(len));
    let first = Page::<S, VirtAddr>::from_start(VirtAddr::new(start)).unwrap();
    prop_assert_eq!(PageRange::new(first, r.count()), Ok(r));
    let mut n = 0u32;
    let mut prev: Option<u32> = None;
    for p in r {
        let a = p.start().as_u32();
        prop_assert_eq!(a % S::SIZE, 0);
        prop_assert_eq!(
            u64::from(a),
            u64::from(start) + u64::from(n) * u64::from(S::SIZE)
        );
        prop_assert!(
            prev.is_none_or(|b| b < a),
            "no wrap: {:?} then {:#x}",
            prev,
            a
        );
        prop_assert!(r.contains(p));
        prev = Some(a);
        n += 1;
        if n > 4096 {
            break; // long ranges: the first pages and the ends below suffice
        }
    }
    prop_assert_eq!(n, r.count().min(4097));
    prop_assert_eq!(r.iter().len(), r.count() as usize);
    prop_assert_eq!(r.iter().next_back(), Some(r.last()));
    prop_assert_eq!(
        u64::from(r.last().start().as_u32()) + u64::from(S::SIZE),
        u64::from(start) + u64::from(len)
    );
    match r.end() {
        Some(end) => {
            prop_assert_eq!(
                u64::from(end.start().as_u32()),
                u64::from(start) + u64::from(len)
            );
            prop_assert!(!r.contains(end));
            prop_assert_eq!(Page::range(first, end), Ok(r));
        }
        None => prop_assert_eq!(u64::from(start) + u64::from(len), TOP),
    }
    Ok(())
}

fn check_frames<S: PageSize>(start: u32, len: u32) -> Result<(), TestCaseError> {
    let got = FrameRange::<S>::from_bytes(PhysAddr::new(start), len);
    prop_assert_eq!(got.map(FrameRange::count), expected::<S>(start, len));
    let Ok(r) = got else { return Ok(()) };
    let first = Frame::<S>::from_start(PhysAddr::new(start)).unwrap();
    prop_assert_eq!(FrameRange::new(first, r.count()), Ok(r));
    prop_assert_eq!(r.start(), first);
    prop_assert_eq!(r.len(), u64::from(len));
    let shown = r.iter().take(64).map(|f| f.start().as_u32());
    let want = (0..r.count().min(64)).map(|i| start + i * S::SIZE);
    prop_assert!(shown.eq(want));
    prop_assert_eq!(r.iter().next_back(), Some(r.last()));
    Ok(())
}

/// `new` from a page and a count, against the 64-bit end.
fn check_count<S: PageSize>(start: u32, count: u32) -> Result<(), TestCaseError> {
    let start = start & !(S::SIZE - 1);
    let page = Page::<S>::from_start(ModifiedVirtAddr::new(start)).unwrap();
    let end = u64::from(start) + u64::from(count) * u64::from(S::SIZE);
    let want = if count == 0 {
        Err(AddrError::EmptyRange)
    } else if end > TOP {
        Err(AddrError::RangeWraps { start, count })
    } else {
        Ok(count)
    };
    prop_assert_eq!(PageRange::new(page, count).map(PageRange::count), want);
    let frame = Frame::<S>::from_start(PhysAddr::new(start)).unwrap();
    prop_assert_eq!(FrameRange::new(frame, count).map(FrameRange::count), want);
    if let Ok(r) = PageRange::new(page, count) {
        prop_assert_eq!(r.len(), end - u64::from(start));
        prop_assert_eq!(r.end().is_none(), end == TOP);
    }
    Ok(())
}

/// `Page::range` between two pages.
fn check_between<S: PageSize>(a: u32, b: u32) -> Result<(), TestCaseError> {
    let page = |x: u32| Page::<S>::containing(ModifiedVirtAddr::new(x));
    let (pa, pb) = (page(a), page(b));
    let got = Page::range(pa, pb);
    let (sa, sb) = (pa.start().as_u32(), pb.start().as_u32());
    if sb <= sa {
        prop_assert_eq!(got, Err(AddrError::EmptyRange));
    } else {
        let r = got.unwrap();
        prop_assert_eq!(r.count(), (sb - sa) / S::SIZE);
        prop_assert_eq!((r.start(), r.end()), (pa, Some(pb)));
        let fr = Frame::range(
            Frame::<S>::containing(PhysAddr::new(a)),
            Frame::<S>::containing(PhysAddr::new(b)),
        );
        prop_assert_eq!(fr.map(FrameRange::count), Ok(r.count()));
    }
    Ok(())
}

macro_rules! per_size {
    ($($name:ident: $s:ty),*) => {$(
        mod $name {
            use super::*;

            proptest! {
                #![proptest_config(proptest_config(512))]

                #[test]
                fn from_bytes_matches_the_model(start in addr(<$s>::SIZE), len in len(<$s>::SIZE)) {
                    check_pages::<$s>(start, len)?;
                    check_frames::<$s>(start, len)?;
                }

                #[test]
                fn new_matches_the_model(
                    start in addr(<$s>::SIZE),
                    count in prop_oneof![0..=64u32, any::<u32>(), Just(u32::MAX)],
                ) {
                    check_count::<$s>(start, count)?;
                }

                #[test]
                fn range_matches_the_model(a in addr(<$s>::SIZE), b in addr(<$s>::SIZE)) {
                    check_between::<$s>(a, b)?;
                }
            }
        }
    )*};
}

per_size!(section: Size1MiB, large: Size64KiB, small: Size4KiB, tiny: Size1KiB);
