//! The three switching modes, all behind `fass`'s [`SwitchStrategy`]: the
//! kernel holds one [`Strategy`] and calls the trait through [`dispatch!`],
//! so the same workload runs under each.

use fass::{
    ClassicKind, Cpd, DefaultPolicy, DomainSet, Fass, FassError, KernelTable, Layout, PidMode,
    SwitchStrategy, TableSwitch,
};
use mmu_armv5::descriptor::L1Encoding;
use mmu_armv5::{Domain, PhysAddr};

use crate::mmu::KERNEL_DOMAIN;

/// Most processes (and address spaces) at once.
pub const MAX_PROCS: usize = 64;
/// First-level slots a FASS space's directory holds.
pub const SPACE_SLOTS: usize = 8;
/// Shared segments.
pub const SEGMENTS: usize = 4;
/// The user domain of the per-table strategies.
pub const USER_DOMAIN: Domain = Domain::from_low_bits(1);

/// The FASS manager the kernel uses.
pub type FassS = Fass<DefaultPolicy, MAX_PROCS, SPACE_SLOTS, SEGMENTS>;
/// The per-table strategies (FCSE-only and naive).
pub type TableS = TableSwitch<MAX_PROCS, SEGMENTS>;

/// A switching mode chosen on the command line (`mode=`).
#[derive(Clone, Copy, PartialEq, Eq, defmt::Format)]
pub enum SwitchMode {
    /// Per-process tables, full cache and TLB flush on every switch.
    Naive,
    /// Per-process tables with FCSE PIDs (best effort: a space that maps
    /// above 32 MiB, or one beyond the 63 PIDs, runs with PID 0 and is
    /// flushed for): TLB flush per switch, no cache flush otherwise.
    Fcse,
    /// One CPD, domains as address-space tags, FCSE PIDs.
    Fass,
}

impl SwitchMode {
    /// Every mode, in table order.
    pub const ALL: [SwitchMode; 3] = [SwitchMode::Naive, SwitchMode::Fcse, SwitchMode::Fass];

    /// The command-line name.
    pub fn name(self) -> &'static str {
        match self {
            SwitchMode::Naive => "naive",
            SwitchMode::Fcse => "fcse",
            SwitchMode::Fass => "fass",
        }
    }

    /// Parses a command-line name.
    pub fn parse(s: &str) -> Option<SwitchMode> {
        SwitchMode::ALL.into_iter().find(|m| m.name() == s)
    }
}

/// One of the strategies.
///
/// One value lives in the kernel's static state for a whole scenario and
/// the kernel has no allocator, so the larger variant is not boxed.
#[allow(clippy::large_enum_variant)]
pub enum Strategy {
    /// FASS.
    Fass(FassS),
    /// FCSE-only or naive.
    Table(TableS),
}

/// Calls the same [`SwitchStrategy`] code on whichever strategy `$s` holds.
macro_rules! dispatch {
    ($s:expr, $v:ident => $e:expr) => {
        match $s {
            $crate::proc::strategy::Strategy::Fass($v) => $e,
            $crate::proc::strategy::Strategy::Table($v) => $e,
        }
    };
}
pub(crate) use dispatch;

impl Strategy {
    /// A fresh strategy of `mode` over the kernel's first-level table at `root`
    /// (FASS uses it as its CPD; the others copy its kernel entries).
    pub fn new(mode: SwitchMode, root: PhysAddr) -> Result<Strategy, FassError> {
        // SAFETY: `root` is the kernel's own first-level table, allocated
        // from the kernel's table pool, which lives in a static for the rest
        // of the kernel's life; its kernel-region entries map everything the
        // kernel uses (`crate::mmu`: RAM, devices, vectors, TCM views), grant
        // user mode nothing, and stay as they are while a scenario runs; it
        // is in the TTBR (FASS keeps it there as its CPD, the per-table
        // strategies load it when no process runs); the kernel writes the
        // translation registers itself only to put back what the strategy
        // wrote (`Kernel::restore_kernel_space` after the scenario, the lean
        // FASS switch of `Kernel::finish`).
        let table = crate::mmu::with_tables(|_, pool| unsafe {
            KernelTable::new(&*pool, root, L1Encoding::Arm9, &Layout::DEMO, KERNEL_DOMAIN)
        })?;
        Ok(match mode {
            SwitchMode::Fass => {
                let mut cpd = Cpd::new(table);
                // SAFETY: the table is never freed nor moved (the CPD is
                // loaded in the TTBR for good), and the pool's memory is a
                // static.
                crate::mmu::with_tables(|_, pool| unsafe { cpd.pin(&*pool) })
                    .map_err(FassError::Table)?;
                #[allow(unused_mut, reason = "changed only by a cache-check build")]
                let mut f = Fass::new(cpd, DomainSet::EMPTY, DefaultPolicy::default())?;
                #[cfg(feature = "cache-check")]
                if crate::marker::omitted(crate::marker::Omit::RecycleClean) {
                    f.skip_next_recycle_clean();
                }
                Strategy::Fass(f)
            }
            SwitchMode::Fcse | SwitchMode::Naive => {
                let kind = if mode == SwitchMode::Naive {
                    ClassicKind::Naive
                } else {
                    // Best effort: one PID per space while they last; a
                    // space mapping above 32 MiB (or a 64th space) moves to
                    // PID 0 and pays flushes instead of being refused.
                    ClassicKind::Fcse(PidMode::BestEffort)
                };
                Strategy::Table(TableSwitch::new(kind, USER_DOMAIN, table))
            }
        })
    }

    /// The strategy's counters.
    pub fn stats(&self) -> fass::Stats {
        dispatch!(self, s => SwitchStrategy::stats(s))
    }

    /// The aborts FASS's fast path resolved (none for the others).
    pub fn fast_faults(&self) -> fass::FastFaults {
        match self {
            Strategy::Fass(f) => f.fast_faults(),
            _ => fass::FastFaults::ZERO,
        }
    }

    /// Domains free for spaces and segments (FASS only).
    pub fn free_domains(&self) -> Option<usize> {
        match self {
            Strategy::Fass(f) => Some(f.domains().free().len()),
            Strategy::Table(_) => None,
        }
    }

    /// Domains held by shared segments (FASS only; 0 otherwise).
    pub fn segment_domains(&self) -> u32 {
        match self {
            Strategy::Fass(f) => (0..SEGMENTS as u16)
                .filter(|i| {
                    f.segments()
                        .get(fass::SegmentId(*i))
                        .is_ok_and(|g| g.domain().is_some())
                })
                .count() as u32,
            Strategy::Table(_) => 0,
        }
    }

    /// FCSE PIDs in use (per-table strategies only: FASS keeps its allocator private).
    pub fn pids_in_use(&self) -> Option<usize> {
        match self {
            Strategy::Fass(_) => None,
            Strategy::Table(t) => Some(
                (1..=63u8)
                    .filter_map(|p| mmu_armv5::FcsePid::new(p).ok())
                    .filter(|p| t.pids().users(*p) > 0)
                    .count(),
            ),
        }
    }
}
