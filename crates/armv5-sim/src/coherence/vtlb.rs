//! A TLB model that remembers, per MVA page, the physical page QEMU gave
//! when the entry was filled, and forgets it only on a TLB operation (or an
//! eviction).
//!
//! Page sizes are invisible to the plugin (it sees addresses, not
//! descriptors), so an entry covers one 1 MiB MVA region with one VA->PA
//! offset and a bitmap of the 4 KiB pages seen through it: a section (or
//! a run of linearly mapped pages) takes one entry, as a section takes one
//! entry on hardware, and pages with other offsets take an entry each, as
//! small pages do.

use crate::config::{TlbConfig, TlbReplacement};
use crate::rng::Rng;

/// One entry.
#[derive(Clone, Copy, Debug)]
struct Entry {
    valid: bool,
    /// MVA >> 20.
    mib: u32,
    /// (PA >> 12) - (MVA >> 12), wrapping.
    delta: u32,
    /// The 4 KiB pages of the MiB seen through this entry.
    pages: [u64; 4],
}

const EMPTY: Entry = Entry {
    valid: false,
    mib: 0,
    delta: 0,
    pages: [0; 4],
};

impl Entry {
    #[inline]
    fn has(&self, page: u32) -> bool {
        let p = (page & 0xFF) as usize;
        self.pages[p >> 6] & (1 << (p & 63)) != 0
    }

    #[inline]
    fn add(&mut self, page: u32) {
        let p = (page & 0xFF) as usize;
        self.pages[p >> 6] |= 1 << (p & 63);
    }
}

/// What a lookup found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Lookup {
    /// An entry translates the page as QEMU did.
    Hit,
    /// An entry translates the page to another physical page (given).
    Stale(u32),
    /// No entry: the hardware walks the tables (the entry is now filled).
    Miss,
}

/// One TLB.
#[derive(Clone, Debug)]
pub(crate) struct VTlb {
    entries: Vec<Entry>,
    next: usize,
    policy: TlbReplacement,
    rng: Rng,
    last: usize,
}

impl VTlb {
    pub(crate) fn new(cfg: TlbConfig, seed: u64) -> VTlb {
        VTlb {
            entries: vec![EMPTY; cfg.entries.max(1) as usize],
            next: 0,
            policy: cfg.replacement,
            rng: Rng::new(seed),
            last: 0,
        }
    }

    /// The entry index holding `page` (an MVA >> 12), if any.
    #[inline]
    fn holding(&self, page: u32) -> Option<usize> {
        let mib = page >> 8;
        let l = &self.entries[self.last];
        if l.valid && l.mib == mib && l.has(page) {
            return Some(self.last);
        }
        self.entries
            .iter()
            .position(|e| e.valid && e.mib == mib && e.has(page))
    }

    /// The physical address the entry holding `mva` translates it to, if any.
    pub(crate) fn translate(&self, mva: u32) -> Option<u32> {
        let page = mva >> 12;
        self.holding(page)
            .map(|i| (page.wrapping_add(self.entries[i].delta) << 12) | (mva & 0xFFF))
    }

    /// An access to `mva` that QEMU translated to `pa`: compares with the
    /// entry holding the page, or fills one. A stale entry is corrected
    /// (the violation is reported once).
    #[inline]
    pub(crate) fn access(&mut self, mva: u32, pa: u32) -> Lookup {
        let page = mva >> 12;
        let delta = (pa >> 12).wrapping_sub(page);
        if let Some(i) = self.holding(page) {
            self.last = i;
            let e = self.entries[i].delta;
            if e == delta {
                return Lookup::Hit;
            }
            let stale = page.wrapping_add(e) << 12 | (mva & 0xFFF);
            self.drop_page(page);
            self.fill(page, delta);
            return Lookup::Stale(stale);
        }
        let mib = page >> 8;
        if let Some(i) = self
            .entries
            .iter()
            .position(|e| e.valid && e.mib == mib && e.delta == delta)
        {
            // Same MiB, same offset: taken as the same section (no walk).
            self.entries[i].add(page);
            self.last = i;
            return Lookup::Hit;
        }
        self.fill(page, delta);
        Lookup::Miss
    }

    fn fill(&mut self, page: u32, delta: u32) {
        let n = self.entries.len();
        let slot = match self.entries.iter().position(|e| !e.valid) {
            Some(s) => s,
            None => match self.policy {
                TlbReplacement::RoundRobin => {
                    let s = self.next;
                    self.next = (s + 1) % n;
                    s
                }
                TlbReplacement::Random => self.rng.below(n as u32) as usize,
            },
        };
        let mut e = Entry {
            valid: true,
            mib: page >> 8,
            delta,
            pages: [0; 4],
        };
        e.add(page);
        self.entries[slot] = e;
        self.last = slot;
    }

    fn drop_page(&mut self, page: u32) -> bool {
        let mib = page >> 8;
        let mut any = false;
        for e in &mut self.entries {
            if e.valid && e.mib == mib && e.has(page) {
                *e = EMPTY;
                any = true;
            }
        }
        any
    }

    /// Invalidate by MVA: drops the entries that hold the page; when none
    /// does, every entry of its MiB (one of them may be the section that
    /// covers the page on hardware).
    pub(crate) fn invalidate_mva(&mut self, mva: u32) {
        let page = mva >> 12;
        if !self.drop_page(page) {
            let mib = page >> 8;
            for e in &mut self.entries {
                if e.valid && e.mib == mib {
                    *e = EMPTY;
                }
            }
        }
    }

    /// Invalidates every entry.
    pub(crate) fn invalidate_all(&mut self) {
        self.entries.iter_mut().for_each(|e| *e = EMPTY);
    }

    /// Number of valid entries.
    pub(crate) fn valid_entries(&self) -> usize {
        self.entries.iter().filter(|e| e.valid).count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tlb(n: u32) -> VTlb {
        VTlb::new(
            TlbConfig {
                entries: n,
                replacement: TlbReplacement::RoundRobin,
            },
            0,
        )
    }

    #[test]
    fn sections_coalesce_and_pages_do_not() {
        let mut t = tlb(2);
        assert_eq!(t.access(0xC000_0000, 0x0000_0000), Lookup::Miss);
        assert_eq!(t.access(0xC000_5004, 0x0000_5004), Lookup::Hit);
        assert_eq!(t.valid_entries(), 1);
        assert_eq!(t.access(0xC000_6000, 0x0123_4000), Lookup::Miss);
        assert_eq!(t.valid_entries(), 2);
        assert_eq!(t.translate(0xC000_6010), Some(0x0123_4010));
        // Remapped without an invalidation: stale, then corrected.
        assert_eq!(
            t.access(0xC000_6000, 0x0777_7000),
            Lookup::Stale(0x0123_4000)
        );
        assert_eq!(t.access(0xC000_6000, 0x0777_7000), Lookup::Hit);
    }

    #[test]
    fn invalidate_by_mva_drops_the_section_even_for_an_unseen_page() {
        let mut t = tlb(4);
        t.access(0xC010_0000, 0x0010_0000);
        t.access(0xC020_0000, 0x0020_0000);
        t.invalidate_mva(0xC018_0000);
        assert_eq!(t.translate(0xC010_0000), None);
        assert_eq!(t.translate(0xC020_0000), Some(0x0020_0000));
        t.invalidate_all();
        assert_eq!(t.valid_entries(), 0);
    }

    #[test]
    fn round_robin_eviction() {
        let mut t = tlb(2);
        t.access(0x0010_0000, 0x1000_0000);
        t.access(0x0020_0000, 0x2000_0000);
        t.access(0x0030_0000, 0x3000_0000);
        assert_eq!(t.translate(0x0010_0000), None, "oldest evicted");
        assert_eq!(t.translate(0x0020_0000), Some(0x2000_0000));
    }
}
