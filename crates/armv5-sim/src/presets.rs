//! Named CPU presets: cache and TLB geometry plus a cost model, each value
//! with its source.
//!
//! Sources:
//! * **\[W05\]** Wiggins, Tuch, Uhlig, Heiser, "Implementation of Fast
//!   Address-Space Switching and TLB Sharing on the StrongARM Processor"
//!   (ACSAC 2003). Quotes: "The direct cost for
//!   flushing the caches is 1,000–18,000 cycles. In addition there is the
//!   indirect cost of the new context starting off with cold caches,
//!   resulting in a number of cache misses (≈ 70 cycles per line) and TLB
//!   misses (≈ 45 cycles per entry). [...] on a 200MHz processor." and
//!   "The StrongARM has a 32-entry ITLB and a 32-entry DTLB, both fully
//!   associative. It has a 16kB instruction and an 8kB data cache, both fully
//!   virtual and 32-way associative".
//! * **\[COMP9242\]** G. Heiser, "Caches: What Every OS Designer Must
//!   Know", COMP9242 (Advanced Operating Systems) lecture slides, UNSW,
//!   2008: "Native Linux vs OKL4/Wombat on PXA255 @ 400MHz".
//! * **\[ARM926 TRM\]** ARM926EJ-S Technical Reference Manual (ARM DDI 0198):
//!   I and D caches each 4–128 KiB, 4-way set associative, 8-word (32-byte)
//!   lines, write-back or write-through per page, pseudo-random or
//!   round-robin replacement (SCTLR.RR); a 64-entry unified main TLB (2-way
//!   set associative, 8 lockable entries).
//! * **\[XScale\]** Intel XScale Core Developer's Manual / PXA255 Developer's
//!   Manual: 32 KiB I-cache and 32 KiB D-cache, 32-way set associative,
//!   32-byte lines, round-robin replacement; 32-entry fully associative I-TLB
//!   and D-TLB with round-robin replacement.
//! * **\[facts\]** MIDR values read from QEMU 7.2 (`-M versatilepb -cpu
//!   arm926`, `-M connex`, `-M collie`).
//!
//! Values marked *estimate* have no cited figure: they are round numbers for
//! the part's class, chosen before any result was looked at. No value is
//! tuned to reproduce a paper's result. The model has no mini-data-cache
//! (SA-1100, XScale), no micro-TLBs (ARM926EJ-S) and no TLB set associativity
//! or lockdown.
//!
//! Regions are not part of a preset: add RAM with latency 0 (the cost model's
//! `line_fill`, `uncached_read` and `tlb_miss` already are the memory's
//! penalty) and give device or slow regions their own extra latency.

use crate::config::{CacheConfig, Config, Replacement, TlbConfig, TlbLayout, TlbReplacement};
use crate::cost::CostModel;

/// A CPU preset: a configuration (without regions) and a cost model.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Preset {
    /// The machine configuration (add regions before building).
    pub config: Config,
    /// The cost model.
    pub cost: CostModel,
}

/// StrongARM SA-1100 at 200 MHz: the CPU family of QEMU's `-M collie`
/// (SA-1110), the demo kernel's `--board collie`.
#[must_use]
pub fn sa1100() -> Preset {
    Preset {
        config: Config {
            name: "SA-1100",
            // SA-1100 Developer's Manual: ID register 0x4401A11x (x = revision; 0 here).
            midr: 0x4401_A110,
            // The SA-1100 has no cache type register (estimate: reads 0 in the model).
            cache_type: 0,
            // [facts] / FcsePid::MAX_SA1100: six PID bits.
            fcse_pid_max: 63,
            // [W05]: "16kB instruction [...] cache [...] 32-way associative";
            // 32-byte lines per the SA-1100 manual. Replacement: round-robin (estimate).
            icache: CacheConfig {
                size: 16 << 10,
                ways: 32,
                line: 32,
                replacement: Replacement::RoundRobin,
            },
            // [W05]: "8kB data cache [...] 32-way associative".
            dcache: CacheConfig {
                size: 8 << 10,
                ways: 32,
                line: 32,
                replacement: Replacement::RoundRobin,
            },
            // [W05]: "32-entry ITLB and a 32-entry DTLB, both fully associative".
            // Replacement round-robin (estimate).
            tlb: TlbLayout::Split {
                itlb: TlbConfig {
                    entries: 32,
                    replacement: TlbReplacement::RoundRobin,
                },
                dtlb: TlbConfig {
                    entries: 32,
                    replacement: TlbReplacement::RoundRobin,
                },
            },
            seed: 0,
            regions: Vec::new(),
            table_mva_offset: 0,
        },
        cost: CostModel {
            // [W05]: "on a 200MHz processor"; "a 200MHz SA-1100 CPU".
            clock_hz: 200_000_000,
            // Estimate: single-cycle cache/TLB hit.
            access: 1,
            // [W05]: "TLB misses (≈ 45 cycles per entry)".
            tlb_miss: 45,
            // [W05]: "cache misses (≈ 70 cycles per line)".
            line_fill: 70,
            // Estimate: one line transfer to memory, taken equal to a fill.
            write_back: 70,
            // Estimate: a single-word memory access, latency-bound.
            uncached_read: 20,
            // Estimate: absorbed by the write buffer.
            uncached_write: 1,
            // Estimate: absorbed by the write buffer.
            write_through: 1,
            // The SA-1100 has no clean-all operation: software cleans by
            // reading a cache-sized flush region, one line fill per line
            // visited, so a visit costs a line fill ([W05]'s ≈ 70). (As a
            // consequence a full clean of the 256-line D-cache costs about
            // 17,900 cycles plus write-backs, at the top of [W05]'s
            // 1,000–18,000; this was checked after the fact, not tuned.)
            clean_line_visit: 70,
            // Estimate: one MCR (flash invalidate).
            whole_cache_op: 1,
            // Estimate: one MCR.
            line_op: 1,
            // Estimate: one MCR.
            tlb_invalidate: 1,
            // Estimate: one MCR.
            cp15_write: 1,
            // Estimate: a few cycles for an empty or short buffer.
            drain: 4,
            // Estimate: pipeline refill on exception entry.
            fault: 3,
        },
    }
}

/// ARM926EJ-S with 16 KiB I + 16 KiB D caches (the sizes of i.MX28 and
/// AT91SAM9 parts), 400 MHz (AT91SAM9G20 class; estimate): the CPU of
/// QEMU's `-M versatilepb -cpu arm926`, the demo kernel's default board.
#[must_use]
pub fn arm926ejs() -> Preset {
    Preset {
        config: Config {
            name: "ARM926EJ-S",
            // [facts]: QEMU `-cpu arm926` MIDR 0x41069265.
            midr: 0x4106_9265,
            // [ARM926 TRM] cache type encoding for 16 KiB, 4-way, 8-word lines,
            // write-back with register 7 cleaning: 0x1D152152.
            cache_type: 0x1D15_2152,
            fcse_pid_max: 127,
            // [ARM926 TRM]: 4-way, 32-byte lines; size 16 KiB chosen (i.MX28,
            // AT91SAM9). Reset replacement is pseudo-random (SCTLR.RR = 0).
            icache: CacheConfig {
                size: 16 << 10,
                ways: 4,
                line: 32,
                replacement: Replacement::Random,
            },
            dcache: CacheConfig {
                size: 16 << 10,
                ways: 4,
                line: 32,
                replacement: Replacement::Random,
            },
            // [ARM926 TRM]: 64-entry unified main TLB (modelled fully
            // associative, round-robin; the TRM's 2-way sets and lockdown are not modelled).
            tlb: TlbLayout::Unified(TlbConfig {
                entries: 64,
                replacement: TlbReplacement::RoundRobin,
            }),
            seed: 0,
            regions: Vec::new(),
            table_mva_offset: 0,
        },
        cost: CostModel {
            // Estimate: AT91SAM9G20 runs at 400 MHz, i.MX28 at 454 MHz.
            clock_hz: 400_000_000,
            // Estimate: single-cycle hit.
            access: 1,
            // Estimate: two uncached descriptor reads (the walker reads memory).
            tlb_miss: 40,
            // Estimate: 8-word burst from SDRAM at about a third of the core clock.
            line_fill: 40,
            // Estimate: equal to a fill.
            write_back: 40,
            // Estimate: one SDRAM access.
            uncached_read: 20,
            // Estimate: write-buffered.
            uncached_write: 1,
            // Estimate: write-buffered.
            write_through: 1,
            // Estimate: one clean-by-index MCR per line (the ARM926 has no clean-all).
            clean_line_visit: 1,
            // Estimate: one MCR.
            whole_cache_op: 1,
            // Estimate: one MCR or test-and-clean MRC.
            line_op: 1,
            // Estimate: one MCR.
            tlb_invalidate: 1,
            // Estimate: one MCR.
            cp15_write: 1,
            // Estimate.
            drain: 4,
            // Estimate.
            fault: 3,
        },
    }
}

/// Intel PXA255 (XScale) at 400 MHz: the CPU of QEMU's `-M connex`, the
/// demo kernel's `--board connex`.
#[must_use]
pub fn pxa255() -> Preset {
    Preset {
        config: Config {
            name: "PXA255",
            // [facts]: QEMU `-M connex` MIDR 0x69052d00.
            midr: 0x6905_2D00,
            // [XScale] cache type for 32 KiB, 32-way, 32-byte lines: 0x0B1AA1AA.
            cache_type: 0x0B1A_A1AA,
            fcse_pid_max: 127,
            // [XScale]: 32 KiB, 32-way, 32-byte lines, round-robin.
            icache: CacheConfig {
                size: 32 << 10,
                ways: 32,
                line: 32,
                replacement: Replacement::RoundRobin,
            },
            dcache: CacheConfig {
                size: 32 << 10,
                ways: 32,
                line: 32,
                replacement: Replacement::RoundRobin,
            },
            // [XScale]: 32-entry fully associative I-TLB and D-TLB, round-robin.
            tlb: TlbLayout::Split {
                itlb: TlbConfig {
                    entries: 32,
                    replacement: TlbReplacement::RoundRobin,
                },
                dtlb: TlbConfig {
                    entries: 32,
                    replacement: TlbReplacement::RoundRobin,
                },
            },
            seed: 0,
            regions: Vec::new(),
            table_mva_offset: 0,
        },
        cost: CostModel {
            // [COMP9242]: "PXA255 @ 400MHz".
            clock_hz: 400_000_000,
            // Estimate.
            access: 1,
            // Estimate: two descriptor reads from 100 MHz SDRAM.
            tlb_miss: 60,
            // Estimate: 8-word burst from 100 MHz SDRAM at a 400 MHz core.
            line_fill: 60,
            // Estimate: equal to a fill.
            write_back: 60,
            // Estimate.
            uncached_read: 30,
            // Estimate: write-buffered.
            uncached_write: 1,
            // Estimate: write-buffered.
            write_through: 1,
            // Estimate: XScale cleans by allocating lines of a clean region,
            // one line-allocate MCR per line visited.
            clean_line_visit: 1,
            // Estimate.
            whole_cache_op: 1,
            // Estimate.
            line_op: 1,
            // Estimate.
            tlb_invalidate: 1,
            // Estimate (XScale also needs CPWAIT after CP15 writes).
            cp15_write: 3,
            // Estimate.
            drain: 4,
            // Estimate.
            fault: 3,
        },
    }
}

/// Every preset.
#[must_use]
pub fn all() -> [Preset; 3] {
    [sa1100(), arm926ejs(), pxa255()]
}
