//! A translation lookaside buffer: fully associative, entries tagged by MVA
//! only (no address-space identifier), holding what the walk found.
//!
//! Nothing invalidates an entry but an explicit TLB operation, so a page-table
//! change without a TLB invalidate keeps using the stale entry, as hardware
//! does. The ARM926EJ-S main TLB is 2-way set associative with lockdown; the
//! model treats every TLB as fully associative (a deviation in which entry a
//! miss evicts, not in what a hit returns).

use crate::config::{TlbConfig, TlbReplacement};
use crate::rng::Rng;
use crate::walk::TlbEntry;
use mmu_armv5::size::PageSizeKind;

/// One slot: `mva & mask == base` selects it; an empty slot has mask 0 and
/// base 1, which no MVA matches.
#[derive(Clone, Copy, Debug)]
struct Slot {
    mask: u32,
    base: u32,
    mapping: TlbEntry,
}

const EMPTY_MAPPING: TlbEntry = TlbEntry {
    mva_base: 0,
    size: PageSizeKind::Section,
    pa_base: 0,
    aps: 0,
    domain: mmu_armv5::Domain::from_low_bits(0),
    cacheable: false,
    bufferable: false,
};

const EMPTY: Slot = Slot {
    mask: 0,
    base: 1,
    mapping: EMPTY_MAPPING,
};

impl Slot {
    #[inline]
    fn hit(&self, mva: u32) -> bool {
        mva & self.mask == self.base
    }

    #[inline]
    fn valid(&self) -> bool {
        self.base & 1 == 0
    }
}

/// One TLB.
#[derive(Clone, Debug)]
pub(crate) struct Tlb {
    entries: Vec<Slot>,
    next: usize,
    policy: TlbReplacement,
    rng: Rng,
    last: usize,
}

impl Tlb {
    pub(crate) fn new(cfg: TlbConfig, seed: u64) -> Tlb {
        Tlb {
            entries: vec![EMPTY; cfg.entries as usize],
            next: 0,
            policy: cfg.replacement,
            rng: Rng::new(seed),
            last: 0,
        }
    }

    /// The entry covering `mva`, if any.
    #[inline]
    pub(crate) fn lookup(&mut self, mva: u32) -> Option<TlbEntry> {
        if let Some(e) = self.entries.get(self.last) {
            if e.hit(mva) {
                return Some(e.mapping);
            }
        }
        let i = self.entries.iter().position(|e| e.hit(mva))?;
        self.last = i;
        Some(self.entries[i].mapping)
    }

    /// Installs a mapping in the victim slot.
    pub(crate) fn insert(&mut self, m: TlbEntry) {
        let n = self.entries.len();
        let slot = match self.policy {
            TlbReplacement::RoundRobin => {
                let s = self.next;
                self.next = (s + 1) % n;
                s
            }
            TlbReplacement::Random => self.rng.below(n as u32) as usize,
        };
        self.entries[slot] = Slot {
            mask: !(m.size.size() - 1),
            base: m.mva_base,
            mapping: m,
        };
        self.last = slot;
    }

    /// Invalidates every entry.
    pub(crate) fn invalidate_all(&mut self) {
        self.entries.iter_mut().for_each(|e| *e = EMPTY);
    }

    /// Invalidates every entry covering `mva`; returns how many.
    pub(crate) fn invalidate_mva(&mut self, mva: u32) -> u32 {
        let mut n = 0;
        for e in &mut self.entries {
            if e.hit(mva) {
                *e = EMPTY;
                n += 1;
            }
        }
        n
    }

    /// Number of valid entries.
    pub(crate) fn valid_entries(&self) -> usize {
        self.entries.iter().filter(|e| e.valid()).count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mmu_armv5::Domain;

    fn small(mva: u32) -> TlbEntry {
        TlbEntry {
            mva_base: mva,
            size: PageSizeKind::Small,
            pa_base: mva ^ 0x8000_0000,
            aps: 0xff,
            domain: Domain::new(0).unwrap(),
            cacheable: true,
            bufferable: true,
        }
    }

    #[test]
    fn round_robin_evicts_oldest_and_invalidate_by_mva() {
        let mut t = Tlb::new(
            TlbConfig {
                entries: 2,
                replacement: TlbReplacement::RoundRobin,
            },
            0,
        );
        t.insert(small(0x1000));
        t.insert(small(0x2000));
        assert!(t.lookup(0x1FFC).is_some());
        t.insert(small(0x3000));
        assert!(t.lookup(0x1000).is_none(), "first entry was the victim");
        assert_eq!(t.lookup(0x2004).unwrap().pa(0x2004), 0x8000_2004);
        assert_eq!(t.invalidate_mva(0x2ABC), 1);
        assert!(t.lookup(0x2000).is_none());
        assert_eq!(t.valid_entries(), 1);
        t.invalidate_all();
        assert_eq!(t.valid_entries(), 0);
    }
}
