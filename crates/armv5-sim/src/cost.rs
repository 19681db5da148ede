//! A cost model: turns [`Counters`] into CPU cycles.
//!
//! Every event the model counts has a per-event cost; the sum, plus the
//! region latencies already accumulated in [`Counters::bus_cycles`], is the
//! modelled time. A whole-cache clean costs what the model saw it do (lines
//! visited and lines written back), never a constant.

use crate::counters::Counters;
use std::fmt;

/// Cycles per modelled event. See [`crate::presets`] for sourced values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CostModel {
    /// CPU clock in Hz (to convert cycles to time).
    pub clock_hz: u64,
    /// Every CPU access (fetch, read, write), hit or not.
    pub access: u64,
    /// Extra per TLB miss (the hardware table walk).
    pub tlb_miss: u64,
    /// Extra per cache line fill (a cache miss).
    pub line_fill: u64,
    /// Per dirty line written back (eviction or clean).
    pub write_back: u64,
    /// Extra per uncached read or fetch.
    pub uncached_read: u64,
    /// Extra per uncached write (write-buffered).
    pub uncached_write: u64,
    /// Extra per write-through write.
    pub write_through: u64,
    /// Per line visited by a whole-cache clean.
    pub clean_line_visit: u64,
    /// Per whole-cache operation (the flash invalidate itself).
    pub whole_cache_op: u64,
    /// Per single-line maintenance or test-and-clean operation.
    pub line_op: u64,
    /// Per TLB invalidation (whole or entry).
    pub tlb_invalidate: u64,
    /// Per DACR, FCSEIDR, TTBR or SCTLR write.
    pub cp15_write: u64,
    /// Per write-buffer drain.
    pub drain: u64,
    /// Per abort taken (exception entry, not the handler).
    pub fault: u64,
}

/// Cycles per cost component, for reports.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CostBreakdown {
    /// CPU accesses.
    pub accesses: u64,
    /// TLB misses.
    pub tlb_misses: u64,
    /// Line fills.
    pub line_fills: u64,
    /// Write-backs.
    pub write_backs: u64,
    /// Uncached and write-through traffic.
    pub uncached: u64,
    /// Cache and TLB maintenance (including lines visited by cleans).
    pub maintenance: u64,
    /// CP15 register writes.
    pub cp15_writes: u64,
    /// Faults.
    pub faults: u64,
    /// MemoryRegion latencies ([`Counters::bus_cycles`]).
    pub bus: u64,
}

impl CostBreakdown {
    /// The total.
    #[must_use]
    pub fn total(&self) -> u64 {
        [
            self.accesses,
            self.tlb_misses,
            self.line_fills,
            self.write_backs,
            self.uncached,
            self.maintenance,
            self.cp15_writes,
            self.faults,
            self.bus,
        ]
        .iter()
        .fold(0, |sum, &x| sum.saturating_add(x))
    }
}

impl fmt::Display for CostBreakdown {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "accesses     {}", self.accesses)?;
        writeln!(f, "tlb misses   {}", self.tlb_misses)?;
        writeln!(f, "line fills   {}", self.line_fills)?;
        writeln!(f, "write-backs  {}", self.write_backs)?;
        writeln!(f, "uncached     {}", self.uncached)?;
        writeln!(f, "maintenance  {}", self.maintenance)?;
        writeln!(f, "cp15 writes  {}", self.cp15_writes)?;
        writeln!(f, "faults       {}", self.faults)?;
        writeln!(f, "bus          {}", self.bus)?;
        write!(f, "total        {} cycles", self.total())
    }
}

/// `sum(cost * count)`, saturating at `u64::MAX` (costs and counters are
/// public fields: any value may come in).
fn weighted(terms: &[(u64, u64)]) -> u64 {
    terms.iter().fold(0, |sum, &(cost, n)| {
        sum.saturating_add(cost.saturating_mul(n))
    })
}

impl CostModel {
    /// The cycles of `c`, by component.
    #[must_use]
    pub fn breakdown(&self, c: &Counters) -> CostBreakdown {
        CostBreakdown {
            accesses: weighted(&[(self.access, c.accesses())]),
            tlb_misses: weighted(&[(self.tlb_miss, c.tlb_misses())]),
            line_fills: weighted(&[(self.line_fill, c.line_fills())]),
            write_backs: weighted(&[(self.write_back, c.write_backs)]),
            uncached: weighted(&[
                (self.uncached_read, c.uncached_reads),
                (self.uncached_write, c.uncached_writes),
                (self.write_through, c.write_throughs),
            ]),
            maintenance: weighted(&[
                (self.clean_line_visit, c.clean_lines_visited),
                (self.whole_cache_op, c.cache_whole_ops),
                (self.line_op, c.cache_line_ops),
                (self.line_op, c.test_clean_ops),
                (self.tlb_invalidate, c.tlb_invalidate_all),
                (self.tlb_invalidate, c.tlb_invalidate_entry),
                (self.drain, c.write_buffer_drains),
            ]),
            cp15_writes: weighted(&[
                (self.cp15_write, c.dacr_writes),
                (self.cp15_write, c.fcseidr_writes),
                (self.cp15_write, c.ttbr_writes),
                (self.cp15_write, c.sctlr_writes),
            ]),
            faults: weighted(&[(self.fault, c.total_faults())]),
            bus: c.bus_cycles,
        }
    }

    /// Total modelled cycles of `c`.
    #[must_use]
    pub fn cycles(&self, c: &Counters) -> u64 {
        self.breakdown(c).total()
    }

    /// Modelled time of `c` in microseconds at [`CostModel::clock_hz`].
    #[must_use]
    pub fn micros(&self, c: &Counters) -> f64 {
        self.cycles(c) as f64 * 1e6 / self.clock_hz as f64
    }
}
