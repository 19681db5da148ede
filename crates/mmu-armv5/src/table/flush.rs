//! `#[must_use]` tokens for the maintenance a table change needs.
//!
//! A table write is not seen by the hardware until (1) the D-cache lines
//! holding the changed entries are cleaned and the write buffer drained (the
//! ARM926EJ-S walker reads memory, not the cache), and (2) any TLB entry
//! caching the old translation is invalidated. Mapping into invalid entries
//! needs no TLB maintenance (TLBs never hold faults); unmapping or changing
//! permissions does. Every mutating table operation returns a [`TableFlush`]
//! that records exactly that, and [`TableFlush::flush`] performs it.

use crate::addr::ModifiedVirtAddr;
use crate::maint::CacheMaintenance;

/// Largest number of per-entry TLB invalidations before the whole TLB is invalidated instead.
pub const MAX_TLB_ENTRY_OPS: u32 = 16;
const MAX_RANGES: usize = 8;

/// Which TLB entries a change made stale.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum TlbInvalidate {
    /// None: only invalid entries were filled.
    None,
    /// One invalidate-by-MVA at each `step` bytes of `[start, start + len)`.
    Pages {
        /// First MVA.
        start: ModifiedVirtAddr,
        /// Length in bytes.
        len: u32,
        /// Distance between invalidations: the smallest page size changed.
        step: u32,
    },
    /// The whole TLB.
    All,
}

impl TlbInvalidate {
    /// The smallest scope covering both.
    #[must_use]
    pub fn merge(self, other: TlbInvalidate) -> TlbInvalidate {
        match (self, other) {
            (TlbInvalidate::None, x) | (x, TlbInvalidate::None) => x,
            (
                TlbInvalidate::Pages {
                    start: s1,
                    len: l1,
                    step: p1,
                },
                TlbInvalidate::Pages {
                    start: s2,
                    len: l2,
                    step: p2,
                },
            ) => {
                let a = s1.as_u32().min(s2.as_u32());
                let e1 = s1.as_u32() as u64 + l1 as u64;
                let e2 = s2.as_u32() as u64 + l2 as u64;
                let end = e1.max(e2);
                let step = p1.min(p2);
                let len = end - a as u64;
                if len > u32::MAX as u64 || len / step as u64 > MAX_TLB_ENTRY_OPS as u64 {
                    TlbInvalidate::All
                } else {
                    TlbInvalidate::Pages {
                        start: ModifiedVirtAddr::new(a),
                        len: len as u32,
                        step,
                    }
                }
            }
            _ => TlbInvalidate::All,
        }
    }

    /// Number of per-entry operations, or `None` for a whole-TLB invalidate.
    #[must_use]
    pub fn entry_ops(self) -> Option<u32> {
        match self {
            TlbInvalidate::None => Some(0),
            TlbInvalidate::Pages { len, step, .. } => Some(len.div_ceil(step)),
            TlbInvalidate::All => None,
        }
    }
}

/// The maintenance a table change needs before the hardware may see it.
#[must_use = "a table change is not seen by the hardware until flushed: call `flush`"]
#[derive(Debug, PartialEq, Eq)]
pub struct TableFlush {
    tlb: TlbInvalidate,
    clean: heapless::Vec<(u32, u32), MAX_RANGES>,
    clean_all: bool,
}

impl Default for TableFlush {
    fn default() -> Self {
        TableFlush::new()
    }
}

impl TableFlush {
    /// A token asking for nothing.
    pub const fn new() -> TableFlush {
        TableFlush {
            tlb: TlbInvalidate::None,
            clean: heapless::Vec::new(),
            clean_all: false,
        }
    }

    /// Records that table memory at `[mva, mva + len)` changed.
    pub fn table_written(&mut self, mva: ModifiedVirtAddr, len: u32) {
        if self.clean_all || len == 0 {
            return;
        }
        let (s, e) = (mva.as_u32(), mva.as_u32().saturating_add(len));
        for r in self.clean.iter_mut() {
            let (rs, re) = (r.0, r.0.saturating_add(r.1));
            if s <= re && rs <= e {
                let ns = rs.min(s);
                *r = (ns, re.max(e) - ns);
                return;
            }
        }
        if self.clean.push((s, e - s)).is_err() {
            self.clean.clear();
            self.clean_all = true;
        }
    }

    /// Records that translations of `[start, start + len)` in pages of at least
    /// `step` bytes may be cached in the TLB and are now stale.
    pub fn tlb_stale(&mut self, start: ModifiedVirtAddr, len: u32, step: u32) {
        let scope = if step == 0 || len.div_ceil(step) > MAX_TLB_ENTRY_OPS {
            TlbInvalidate::All
        } else {
            TlbInvalidate::Pages { start, len, step }
        };
        self.tlb = self.tlb.merge(scope);
    }

    /// Records that the whole TLB must be invalidated.
    pub fn tlb_all(&mut self) {
        self.tlb = TlbInvalidate::All;
    }

    /// Combines two tokens into one covering both.
    pub fn merge(&mut self, other: TableFlush) {
        self.tlb = self.tlb.merge(other.tlb);
        if other.clean_all {
            self.clean.clear();
            self.clean_all = true;
        }
        for (s, l) in other.clean {
            self.table_written(ModifiedVirtAddr::new(s), l);
        }
    }

    /// The TLB maintenance this token will perform.
    #[must_use]
    pub fn tlb(&self) -> TlbInvalidate {
        self.tlb
    }

    /// The table-memory ranges whose D-cache lines this token will clean
    /// (empty with [`TableFlush::cleans_whole_dcache`]).
    #[must_use]
    pub fn clean_ranges(&self) -> &[(u32, u32)] {
        &self.clean
    }

    /// Whether too many ranges changed and the whole D-cache will be cleaned.
    #[must_use]
    pub fn cleans_whole_dcache(&self) -> bool {
        self.clean_all
    }

    /// Performs the maintenance: clean the changed table lines and drain the
    /// write buffer, then invalidate the stale TLB entries.
    pub fn flush<M: CacheMaintenance + ?Sized>(self, m: &mut M) {
        if self.clean_all {
            m.clean_invalidate_dcache();
        } else if !self.clean.is_empty() {
            for &(s, l) in &self.clean {
                let line = M::DCACHE_LINE;
                let mut a = s & !(line - 1);
                let end = s.saturating_add(l);
                while a < end {
                    m.clean_dcache_line(ModifiedVirtAddr::new(a));
                    a = match a.checked_add(line) {
                        Some(n) => n,
                        None => break,
                    };
                }
            }
            m.drain_write_buffer();
        }
        match self.tlb {
            TlbInvalidate::None => {}
            TlbInvalidate::All => m.invalidate_tlb(),
            TlbInvalidate::Pages { start, len, step } => {
                let mut off = 0u32;
                while off < len {
                    m.invalidate_tlb_entry(ModifiedVirtAddr::new(start.as_u32().wrapping_add(off)));
                    off = match off.checked_add(step) {
                        Some(n) => n,
                        None => break,
                    };
                }
            }
        }
    }

    /// Drops the token without doing the maintenance.
    ///
    /// # Safety
    /// The hardware must not depend on the change yet: the MMU is off, the
    /// table is not reachable from the translation table base, or the caller
    /// performs equivalent maintenance itself.
    pub unsafe fn ignore(self) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tlb_scopes_merge_and_escalate() {
        let p = |s, l, st| TlbInvalidate::Pages {
            start: ModifiedVirtAddr::new(s),
            len: l,
            step: st,
        };
        assert_eq!(
            TlbInvalidate::None.merge(p(0x1000, 0x1000, 0x1000)),
            p(0x1000, 0x1000, 0x1000)
        );
        assert_eq!(
            p(0x1000, 0x1000, 0x1000).merge(p(0x3000, 0x1000, 0x1000)),
            p(0x1000, 0x3000, 0x1000)
        );
        assert_eq!(
            p(0, 0x1000, 0x1000).merge(p(0x10_0000, 0x1000, 0x1000)),
            TlbInvalidate::All
        );
        assert_eq!(p(0, 0x10_0000, 0x10_0000).entry_ops(), Some(1));
    }

    #[test]
    fn clean_ranges_coalesce_then_overflow_to_whole_cache() {
        let mut f = TableFlush::new();
        f.table_written(ModifiedVirtAddr::new(0x1000), 4);
        f.table_written(ModifiedVirtAddr::new(0x1004), 4);
        assert_eq!(f.clean_ranges(), &[(0x1000, 8)]);
        for i in 0..8 {
            f.table_written(ModifiedVirtAddr::new(0x10_0000 * (i + 1)), 4);
        }
        assert!(f.cleans_whole_dcache());
        // SAFETY: test token, no hardware involved.
        unsafe { f.ignore() };
    }
}
