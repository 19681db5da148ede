//! The grid of model runs behind the tables and plots, and the properties
//! `--check` asserts on it.

use crate::model::{self, Cpu, Mode, Outcome, Pattern, PolicyKind, Workload};
use crate::BenchError;
use std::collections::BTreeMap;

/// Process counts of the full grid (ring size, or IPC clients).
pub const NS: [u16; 9] = [2, 4, 8, 14, 16, 24, 32, 48, 64];
/// Bytes touched per pass in the full grid.
pub const TOUCHES: [u32; 4] = [0, 1024, 4096, 16384];
/// Process counts of the short form.
pub const QUICK_NS: [u16; 3] = [2, 14, 32];
/// Bytes touched per pass in the short form.
pub const QUICK_TOUCHES: [u32; 2] = [0, 4096];
/// Spaces (ring N or IPC N + 1) that fit the 15 free domains of the demo layout.
pub const FREE_DOMAINS: u16 = 15;

/// Every mode, FASS once per policy.
#[must_use]
pub fn modes() -> Vec<Mode> {
    let mut v = vec![Mode::Naive, Mode::Fcse];
    v.extend(PolicyKind::ALL.iter().map(|p| Mode::Fass(*p)));
    v
}

/// Which grid to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Grid {
    /// Short form (CI): fewer N, touch sizes and switches.
    pub quick: bool,
}

impl Grid {
    /// The process counts.
    #[must_use]
    pub fn ns(&self) -> &'static [u16] {
        if self.quick {
            &QUICK_NS
        } else {
            &NS
        }
    }

    /// The touch sizes.
    #[must_use]
    pub fn touches(&self) -> &'static [u32] {
        if self.quick {
            &QUICK_TOUCHES
        } else {
            &TOUCHES
        }
    }

    /// Switches measured per run (at least; whole rounds).
    #[must_use]
    pub fn min_switches(&self) -> u32 {
        if self.quick {
            128
        } else {
            2048
        }
    }

    fn workload(&self, cpu: Cpu, mode: Mode, pattern: Pattern, n: u16, touch: u32) -> Workload {
        let per_round = match pattern {
            Pattern::Ring => u32::from(n),
            Pattern::Ipc => 2 * u32::from(n),
        };
        Workload {
            cpu,
            mode,
            pattern,
            n,
            touch,
            warmup_rounds: 2,
            rounds: self.min_switches().div_ceil(per_round.max(1)).max(2),
        }
    }
}

/// Key of one run.
pub type Key = (Cpu, Pattern, Mode, u32, u16);

/// The results of a grid.
pub struct Results {
    /// The grid.
    pub grid: Grid,
    /// Every run, by (cpu, pattern, mode, touch, n).
    pub runs: BTreeMap<Key, Outcome>,
    /// Baseline cycles per turn (no switch), by (cpu, mode, touch).
    pub baselines: BTreeMap<(Cpu, Mode, u32), f64>,
}

impl Results {
    /// The run of `key`, if it was part of the grid.
    #[must_use]
    pub fn get(
        &self,
        cpu: Cpu,
        pattern: Pattern,
        mode: Mode,
        touch: u32,
        n: u16,
    ) -> Option<&Outcome> {
        self.runs.get(&(cpu, pattern, mode, touch, n))
    }
}

/// Runs the grid: both presets, both patterns, every mode, N and touch size.
/// `progress` is called after each run.
pub fn run(grid: Grid, mut progress: impl FnMut(&Outcome)) -> Result<Results, BenchError> {
    let mut runs = BTreeMap::new();
    let mut baselines = BTreeMap::new();
    for cpu in Cpu::ALL {
        for mode in modes() {
            for &touch in grid.touches() {
                let base = grid.workload(cpu, mode, Pattern::Ring, 1, touch);
                let b = model::run(&model::baseline_of(&base))?;
                baselines.insert((cpu, mode, touch), b.cycles_per_switch());
                for pattern in [Pattern::Ring, Pattern::Ipc] {
                    for &n in grid.ns() {
                        let o = model::run(&grid.workload(cpu, mode, pattern, n, touch))?;
                        progress(&o);
                        runs.insert((cpu, pattern, mode, touch, n), o);
                    }
                }
            }
        }
    }
    Ok(Results {
        grid,
        runs,
        baselines,
    })
}

/// Asserts the properties the benchmarks promise:
/// * FASS (every policy): zero whole-cache operations, zero TLB
///   invalidations and zero full flushes in the measured rounds while the
///   spaces fit the free domains (ring N <= 15, IPC N + 1 <= 15);
/// * naive: exactly one full flush per switch;
/// * every run switched.
pub fn check(r: &Results) -> Result<(), BenchError> {
    if r.runs.is_empty() {
        return Err(BenchError::Check("no runs".into()));
    }
    let mut steady = 0;
    for ((cpu, pattern, mode, touch, n), o) in &r.runs {
        let what = format!(
            "{} {} {mode} touch={touch} n={n}",
            cpu.name(),
            pattern.name()
        );
        if o.switches == 0 {
            return Err(BenchError::Check(format!("{what}: no switch")));
        }
        let spaces = o.workload.spaces();
        if matches!(mode, Mode::Fass(_)) && spaces <= FREE_DOMAINS {
            steady += 1;
            let c = &o.counters;
            if c.cache_whole_ops != 0
                || c.tlb_invalidate_all + c.tlb_invalidate_entry != 0
                || o.stats.full_flushes != 0
            {
                return Err(BenchError::Check(format!(
                    "{what}: steady state flushed or invalidated\n{c}"
                )));
            }
        }
        if *mode == Mode::Naive && o.stats.full_flushes != o.switches {
            return Err(BenchError::Check(format!(
                "{what}: {} flushes for {} switches",
                o.stats.full_flushes, o.switches
            )));
        }
    }
    if steady == 0 {
        return Err(BenchError::Check(
            "no FASS run within the free domains".into(),
        ));
    }
    Ok(())
}
