//! The memory of the last two pages a [`Mappings`](crate::Mappings)
//! adapter walked: where each page is mapped (up to `N` sites), valid for
//! one generation of the adapter. An exchange asks about the same two pages
//! again and again (protect, swap, restore); with this, only the first ask
//! walks the tables. Shared by [`TableMappings`](crate::TableMappings) and
//! `FassMappings`, whose sites differ (a table index or an address space,
//! with the page's MVA).

use mmu_armv5::size::PageSizeKind;
use mmu_armv5::PhysAddr;

/// One page's sites, as a walk found them.
#[derive(Clone, Copy, Debug)]
struct Entry<T: Copy, const N: usize> {
    /// The generation they were found under (`None`: empty slot).
    gen: Option<u64>,
    page: PhysAddr,
    size: PageSizeKind,
    n: usize,
    sites: [T; N],
}

/// The last two pages walked, most recent first.
#[derive(Clone, Copy, Debug)]
pub(crate) struct WalkMemo<T: Copy, const N: usize> {
    entries: [Entry<T, N>; 2],
}

impl<T: Copy, const N: usize> WalkMemo<T, N> {
    /// Nothing remembered; `fill` only fills the unused site slots.
    pub(crate) const fn new(fill: T) -> Self {
        let e = Entry {
            gen: None,
            page: PhysAddr::ZERO,
            size: PageSizeKind::Small,
            n: 0,
            sites: [fill; N],
        };
        WalkMemo { entries: [e, e] }
    }

    /// The sites of the `size` page at `page` remembered under `gen`.
    pub(crate) fn sites(&self, gen: u64, page: PhysAddr, size: PageSizeKind) -> Option<&[T]> {
        let e = self
            .entries
            .iter()
            .find(|e| e.gen == Some(gen) && e.page == page && e.size == size)?;
        Some(&e.sites[..e.n.min(N)])
    }

    /// The sites of the `size` page at `page` remembered under `gen`, each
    /// with what `at` finds there (the adapter's check that the site still
    /// maps the page); `None` if nothing is remembered or `at` refuses one.
    pub(crate) fn recall<F>(
        &self,
        gen: u64,
        page: PhysAddr,
        size: PageSizeKind,
        mut at: impl FnMut(T) -> Option<F>,
    ) -> Option<heapless::Vec<(T, F), N>> {
        let mut out = heapless::Vec::new();
        for &site in self.sites(gen, page, size)? {
            out.push((site, at(site)?)).ok()?;
        }
        Some(out)
    }

    /// Remembers the sites of a complete walk of the page (the first `N`),
    /// in front of the most recent other page remembered.
    pub(crate) fn remember(
        &mut self,
        gen: u64,
        page: PhysAddr,
        size: PageSizeKind,
        sites: impl IntoIterator<Item = T>,
    ) {
        let mut new = Entry {
            gen: Some(gen),
            page,
            size,
            n: 0,
            ..self.entries[0]
        };
        for (s, site) in new.sites.iter_mut().zip(sites) {
            *s = site;
            new.n += 1;
        }
        let other = self
            .entries
            .into_iter()
            .find(|e| e.gen.is_some() && (e.page != page || e.size != size))
            .unwrap_or(Entry { gen: None, ..new });
        self.entries = [new, other];
    }

    /// The targets of every mapping of `a` and `b` were exchanged: what was
    /// remembered of `a` now describes `b` and vice versa.
    pub(crate) fn swapped(&mut self, a: PhysAddr, b: PhysAddr, size: PageSizeKind) {
        for e in &mut self.entries {
            if e.size == size && e.page == a {
                e.page = b;
            } else if e.size == size && e.page == b {
                e.page = a;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMALL: PageSizeKind = PageSizeKind::Small;

    fn pa(a: u32) -> PhysAddr {
        PhysAddr::new(a)
    }

    #[test]
    fn remembers_two_pages_under_one_generation() {
        let mut m = WalkMemo::<u8, 4>::new(0);
        assert_eq!(m.sites(0, pa(0x1000), SMALL), None);
        m.remember(0, pa(0x1000), SMALL, [1, 2]);
        m.remember(0, pa(0x2000), SMALL, [3]);
        assert_eq!(m.sites(0, pa(0x1000), SMALL), Some(&[1, 2][..]));
        assert_eq!(m.sites(0, pa(0x2000), SMALL), Some(&[3][..]));
        assert_eq!(m.sites(1, pa(0x1000), SMALL), None, "another generation");
        assert_eq!(
            m.sites(0, pa(0x1000), PageSizeKind::Large),
            None,
            "another size"
        );
        // A third page pushes out the older of the two.
        m.remember(0, pa(0x3000), SMALL, [4, 5, 6, 7, 8]);
        assert_eq!(
            m.sites(0, pa(0x3000), SMALL),
            Some(&[4, 5, 6, 7][..]),
            "first N"
        );
        assert_eq!(m.sites(0, pa(0x2000), SMALL), Some(&[3][..]));
        assert_eq!(m.sites(0, pa(0x1000), SMALL), None);
        // The same page again replaces its own entry, not the other.
        m.remember(0, pa(0x3000), SMALL, [9]);
        assert_eq!(m.sites(0, pa(0x3000), SMALL), Some(&[9][..]));
        assert_eq!(m.sites(0, pa(0x2000), SMALL), Some(&[3][..]));
    }

    #[test]
    fn recall_checks_every_site_and_refuses_on_one_failure() {
        let mut m = WalkMemo::<u8, 4>::new(0);
        assert!(
            m.recall(0, pa(0x1000), SMALL, Some).is_none(),
            "nothing yet"
        );
        m.remember(0, pa(0x1000), SMALL, [1, 2, 3]);
        let all = m.recall(0, pa(0x1000), SMALL, |s| Some(u32::from(s) * 10));
        assert_eq!(all.as_deref(), Some(&[(1, 10), (2, 20), (3, 30)][..]));
        let one_moved = m.recall(0, pa(0x1000), SMALL, |s| (s != 2).then_some(s));
        assert!(one_moved.is_none(), "a site that no longer maps the page");
        assert!(
            m.recall(1, pa(0x1000), SMALL, Some).is_none(),
            "another generation"
        );
    }

    #[test]
    fn a_swap_exchanges_the_pages() {
        let mut m = WalkMemo::<u8, 4>::new(0);
        m.remember(0, pa(0x1000), SMALL, [1]);
        m.remember(0, pa(0x2000), SMALL, [2]);
        m.swapped(pa(0x1000), pa(0x2000), SMALL);
        assert_eq!(m.sites(0, pa(0x1000), SMALL), Some(&[2][..]));
        assert_eq!(m.sites(0, pa(0x2000), SMALL), Some(&[1][..]));
        m.swapped(pa(0x1000), pa(0x2000), PageSizeKind::Large);
        assert_eq!(
            m.sites(0, pa(0x1000), SMALL),
            Some(&[2][..]),
            "other size untouched"
        );
    }
}
