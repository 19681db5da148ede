//! A TLB model that remembers, per MVA page, the physical page QEMU gave
//! when the entry was filled, and forgets it only on a TLB operation (or an
//! eviction).
//!
//! Page sizes are invisible to the plugin (it sees addresses, not
//! descriptors), so an entry covers one 1 MiB MVA region with one VA->PA
//! offset and a bitmap of the 1 KiB blocks (the smallest ARMv5 page, a tiny
//! page) seen through it: a section (or a run of linearly mapped pages)
//! takes one entry, as a section takes one entry on hardware, and pages
//! with other offsets take an entry each, as small and tiny pages do.

use crate::config::{TlbConfig, TlbReplacement};
use crate::rng::Rng;

/// One entry.
#[derive(Clone, Copy, Debug)]
struct Entry {
    valid: bool,
    /// MVA >> 20.
    mib: u32,
    /// (PA >> 10) - (MVA >> 10), wrapping.
    delta: u32,
    /// The 1 KiB blocks of the MiB seen through this entry.
    pages: [u64; 16],
}

const EMPTY: Entry = Entry {
    valid: false,
    mib: 0,
    delta: 0,
    pages: [0; 16],
};

impl Entry {
    #[inline(always)]
    fn has(&self, page: u32) -> bool {
        let p = (page & 0x3FF) as usize;
        self.pages[p >> 6] & (1 << (p & 63)) != 0
    }

    #[inline]
    fn add(&mut self, page: u32) {
        let p = (page & 0x3FF) as usize;
        self.pages[p >> 6] |= 1 << (p & 63);
    }

    /// Whether the entry holds any 1 KiB block of the 4 KiB page of `page`.
    #[inline]
    fn has_small(&self, page: u32) -> bool {
        let p = (page & 0x3FC) as usize;
        (self.pages[p >> 6] >> (p & 63)) & 0xF != 0
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
    /// The entry last hit, per side (0: fetches, 1: data), so a unified
    /// TLB keeps a shortcut for each.
    last: [usize; 2],
    /// Per hash of a 1 KiB page, the entry that last held a page of that
    /// hash: a hint, checked before use (at most one entry holds a page),
    /// that spares the search of every entry.
    hint: [u8; HINTS],
}

/// Entries of [`VTlb::hint`].
const HINTS: usize = 256;

#[inline(always)]
fn hint_of(page: u32) -> usize {
    ((page ^ (page >> 8)) as usize) & (HINTS - 1)
}

impl VTlb {
    pub(crate) fn new(cfg: TlbConfig, seed: u64) -> VTlb {
        VTlb {
            entries: vec![EMPTY; cfg.entries.max(1) as usize],
            next: 0,
            policy: cfg.replacement,
            rng: Rng::new(seed),
            last: [0; 2],
            hint: [0; HINTS],
        }
    }

    /// The entry index holding `page` (an MVA >> 10), if any.
    #[inline(always)]
    fn holding(&self, page: u32) -> Option<usize> {
        let mib = page >> 10;
        let hint = usize::from(self.hint[hint_of(page)]);
        for i in [self.last[0], self.last[1], hint] {
            let Some(l) = self.entries.get(i) else {
                continue;
            };
            if l.valid && l.mib == mib && l.has(page) {
                return Some(i);
            }
        }
        self.entries
            .iter()
            .position(|e| e.valid && e.mib == mib && e.has(page))
    }

    /// Remembers that entry `i` holds `page`.
    #[inline(always)]
    fn remember(&mut self, page: u32, i: usize) {
        // Entries beyond 255 are found by the search alone.
        if let Ok(i) = u8::try_from(i) {
            self.hint[hint_of(page)] = i;
        }
    }

    /// The physical address the entry holding `mva` translates it to, if any.
    pub(crate) fn translate(&self, mva: u32) -> Option<u32> {
        let page = mva >> 10;
        self.holding(page)
            .map(|i| (page.wrapping_add(self.entries[i].delta) << 10) | (mva & 0x3FF))
    }

    /// An access to `mva` that QEMU translated to `pa`: compares with the
    /// entry holding the page, or fills one. A stale entry is corrected
    /// (the violation is reported once).
    #[inline(always)]
    pub(crate) fn access(&mut self, mva: u32, pa: u32, fetch: bool) -> Lookup {
        let side = usize::from(!fetch);
        let page = mva >> 10;
        let delta = (pa >> 10).wrapping_sub(page);
        if let Some(i) = self.holding(page) {
            self.last[side] = i;
            self.remember(page, i);
            let e = self.entries[i].delta;
            if e == delta {
                return Lookup::Hit;
            }
            let stale = page.wrapping_add(e) << 10 | (mva & 0x3FF);
            self.drop_block(page);
            self.fill(page, delta, side);
            return Lookup::Stale(stale);
        }
        let mib = page >> 10;
        if let Some(i) = self
            .entries
            .iter()
            .position(|e| e.valid && e.mib == mib && e.delta == delta)
        {
            // Same MiB, same offset: taken as the same section (no walk).
            self.entries[i].add(page);
            self.last[side] = i;
            self.remember(page, i);
            return Lookup::Hit;
        }
        self.fill(page, delta, side);
        Lookup::Miss
    }

    fn fill(&mut self, page: u32, delta: u32, side: usize) {
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
            mib: page >> 10,
            delta,
            pages: [0; 16],
        };
        e.add(page);
        self.entries[slot] = e;
        self.last[side] = slot;
        self.remember(page, slot);
    }

    /// Drops the entries holding the 1 KiB block `page`.
    fn drop_block(&mut self, page: u32) {
        let mib = page >> 10;
        for e in &mut self.entries {
            if e.valid && e.mib == mib && e.has(page) {
                *e = EMPTY;
            }
        }
    }

    /// Invalidate by MVA: drops the entries that hold a block of the 4 KiB
    /// page of `mva` (the operand names one page of whatever size: taking
    /// the small page's four blocks errs on dropping more); when none does,
    /// every entry of its MiB (one of them may be the section or large page
    /// that covers the page on hardware).
    pub(crate) fn invalidate_mva(&mut self, mva: u32) {
        let page = mva >> 10;
        let mib = page >> 10;
        let mut any = false;
        for e in &mut self.entries {
            if e.valid && e.mib == mib && e.has_small(page) {
                *e = EMPTY;
                any = true;
            }
        }
        if !any {
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

    impl VTlb {
        fn access_d(&mut self, mva: u32, pa: u32) -> Lookup {
            self.access(mva, pa, false)
        }
    }

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
        assert_eq!(t.access_d(0xC000_0000, 0x0000_0000), Lookup::Miss);
        assert_eq!(t.access_d(0xC000_5004, 0x0000_5004), Lookup::Hit);
        assert_eq!(t.valid_entries(), 1);
        assert_eq!(t.access_d(0xC000_6000, 0x0123_4000), Lookup::Miss);
        assert_eq!(t.valid_entries(), 2);
        assert_eq!(t.translate(0xC000_6010), Some(0x0123_4010));
        // Remapped without an invalidation: stale, then corrected.
        assert_eq!(
            t.access_d(0xC000_6000, 0x0777_7000),
            Lookup::Stale(0x0123_4000)
        );
        assert_eq!(t.access_d(0xC000_6000, 0x0777_7000), Lookup::Hit);
    }

    #[test]
    fn invalidate_by_mva_drops_the_section_even_for_an_unseen_page() {
        let mut t = tlb(4);
        t.access_d(0xC010_0000, 0x0010_0000);
        t.access_d(0xC020_0000, 0x0020_0000);
        t.invalidate_mva(0xC018_0000);
        assert_eq!(t.translate(0xC010_0000), None);
        assert_eq!(t.translate(0xC020_0000), Some(0x0020_0000));
        t.invalidate_all();
        assert_eq!(t.valid_entries(), 0);
    }

    #[test]
    fn tiny_pages_of_one_small_page_are_told_apart() {
        let mut t = tlb(4);
        // Four 1 KiB tiny pages of one 4 KiB page, each on its own frame.
        assert_eq!(t.access_d(0x0040_0000, 0x0800_0000), Lookup::Miss);
        assert_eq!(t.access_d(0x0040_0400, 0x0900_0400), Lookup::Miss);
        assert_eq!(t.access_d(0x0040_0010, 0x0800_0010), Lookup::Hit);
        assert_eq!(t.access_d(0x0040_0404, 0x0900_0404), Lookup::Hit);
        // Invalidating the small page's MVA drops every tiny page of it.
        t.invalidate_mva(0x0040_0000);
        assert_eq!(t.valid_entries(), 0);
    }

    #[test]
    fn round_robin_eviction() {
        let mut t = tlb(2);
        t.access_d(0x0010_0000, 0x1000_0000);
        t.access_d(0x0020_0000, 0x2000_0000);
        t.access_d(0x0030_0000, 0x3000_0000);
        assert_eq!(t.translate(0x0010_0000), None, "oldest evicted");
        assert_eq!(t.translate(0x0020_0000), Some(0x2000_0000));
    }
}
