//! Event counters: what the model did, for tests and for the cost model.

use mmu_armv5::FaultKind;
use std::fmt;
use std::ops::Sub;

macro_rules! counters {
    ($( $(#[$doc:meta])* $field:ident ),* $(,)?) => {
        /// Counts of every modelled event since the machine was built.
        ///
        /// Take two snapshots (`clone`) and subtract them to get the events
        /// of the code in between.
        #[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
        pub struct Counters {
            $( $(#[$doc])* pub $field: u64, )*
            /// Faults by fault status code (bits \[3:0\] of the FSR); see
            /// [`Counters::faults_of`].
            pub faults: [u64; 16],
        }

        impl Sub for &Counters {
            type Output = Counters;
            /// Field-wise difference (saturating at zero).
            fn sub(self, rhs: &Counters) -> Counters {
                let mut faults = [0; 16];
                for (i, f) in faults.iter_mut().enumerate() {
                    *f = self.faults[i].saturating_sub(rhs.faults[i]);
                }
                Counters {
                    $( $field: self.$field.saturating_sub(rhs.$field), )*
                    faults,
                }
            }
        }

        impl fmt::Display for Counters {
            /// One `name value` pair per line, zero counts omitted.
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                $( if self.$field != 0 {
                    writeln!(f, "{:<26} {}", stringify!($field), self.$field)?;
                } )*
                for (status, &n) in self.faults.iter().enumerate() {
                    if n != 0 {
                        let kind = FaultKind::from_status(status as u32);
                        writeln!(f, "{:<26} {}", format!("fault {kind:?}"), n)?;
                    }
                }
                Ok(())
            }
        }
    };
}

counters! {
    /// Instruction fetches.
    i_fetches,
    /// Data reads.
    d_reads,
    /// Data writes.
    d_writes,
    /// Instruction-side TLB hits (in the unified TLB when there is one).
    itlb_hits,
    /// Instruction-side TLB misses (each one a table walk).
    itlb_misses,
    /// Data-side TLB hits.
    dtlb_hits,
    /// Data-side TLB misses (each one a table walk).
    dtlb_misses,
    /// Descriptor words read by table walks.
    walk_reads,
    /// I-cache hits.
    icache_hits,
    /// I-cache misses (cacheable fetches not found).
    icache_misses,
    /// D-cache read hits.
    dcache_read_hits,
    /// D-cache read misses.
    dcache_read_misses,
    /// D-cache write hits.
    dcache_write_hits,
    /// D-cache write misses (no write-allocate: the write goes to memory).
    dcache_write_misses,
    /// Lines filled into the I-cache.
    icache_line_fills,
    /// Lines filled into the D-cache.
    dcache_line_fills,
    /// Dirty D-cache lines written back (evictions and cleans).
    write_backs,
    /// Writes that went to memory through a write-through line.
    write_throughs,
    /// Uncached reads and fetches (C=0 page, device, cache disabled, MMU off).
    uncached_reads,
    /// Uncached writes, including write misses.
    uncached_writes,
    /// Accesses that went to a TCM region.
    tcm_accesses,
    /// Whole-cache maintenance operations (I or D, clean and/or invalidate).
    cache_whole_ops,
    /// Lines visited by whole-cache CLEAN operations (each line must be
    /// examined; a whole-cache invalidate alone is one flash-clear operation).
    clean_lines_visited,
    /// Single-line maintenance operations by MVA.
    cache_line_ops,
    /// Test-and-clean (ARM926) operations issued.
    test_clean_ops,
    /// Whole-TLB invalidations (I, D or both count once each).
    tlb_invalidate_all,
    /// Single-entry TLB invalidations.
    tlb_invalidate_entry,
    /// Write-buffer drains.
    write_buffer_drains,
    /// DACR writes.
    dacr_writes,
    /// FCSEIDR writes.
    fcseidr_writes,
    /// TTBR writes.
    ttbr_writes,
    /// SCTLR writes.
    sctlr_writes,
    /// Sum of region latencies over every bus transaction (uncached access,
    /// line fill, write-back, write-through, walk read).
    bus_cycles,
}

impl Counters {
    /// Faults of `kind` (both alignment encodings count as one).
    #[must_use]
    pub fn faults_of(&self, kind: FaultKind) -> u64 {
        self.faults[kind.status() as usize]
    }

    /// Every fault, of any kind.
    #[must_use]
    pub fn total_faults(&self) -> u64 {
        self.faults.iter().fold(0, |n, &f| n.saturating_add(f))
    }

    /// Every CPU access (fetches, reads and writes).
    #[must_use]
    pub fn accesses(&self) -> u64 {
        self.i_fetches
            .saturating_add(self.d_reads)
            .saturating_add(self.d_writes)
    }

    /// TLB misses, I and D.
    #[must_use]
    pub fn tlb_misses(&self) -> u64 {
        self.itlb_misses.saturating_add(self.dtlb_misses)
    }

    /// Line fills, I and D.
    #[must_use]
    pub fn line_fills(&self) -> u64 {
        self.icache_line_fills
            .saturating_add(self.dcache_line_fills)
    }
}

impl Sub for Counters {
    type Output = Counters;
    fn sub(self, rhs: Counters) -> Counters {
        &self - &rhs
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mmu_armv5::FaultLevel;

    #[test]
    fn delta_and_display() {
        let mut a = Counters {
            d_reads: 10,
            ..Counters::default()
        };
        a.faults[FaultKind::Domain(FaultLevel::Page).status() as usize] = 2;
        let mut b = a.clone();
        b.d_reads = 15;
        b.write_backs = 3;
        b.faults[FaultKind::Domain(FaultLevel::Page).status() as usize] = 5;
        let d = &b - &a;
        assert_eq!(d.d_reads, 5);
        assert_eq!(d.write_backs, 3);
        assert_eq!(d.faults_of(FaultKind::Domain(FaultLevel::Page)), 3);
        assert_eq!(d.total_faults(), 3);
        let s = d.to_string();
        assert!(s.contains("d_reads"), "{s}");
        assert!(s.contains("write_backs"), "{s}");
        assert!(s.contains("Domain(Page)"), "{s}");
        assert!(!s.contains("d_writes"), "zero counts are omitted: {s}");
        // Reversed operands saturate rather than wrap.
        assert_eq!((a.clone() - b.clone()).d_reads, 0);
    }
}
