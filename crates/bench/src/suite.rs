//! The grid of model runs behind the tables and plots, and the properties
//! `--check` asserts on it.

use crate::model::{self, Cpu, Mode, Outcome, Pattern, PolicyKind, Rule, Workload};
use crate::path::KernelPaths;
use crate::BenchError;
use fass::Layout;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// Process counts of the full grid (ring size, or IPC clients).
pub const NS: [u16; 9] = [2, 4, 8, 14, 16, 24, 32, 48, 64];
/// Bytes touched per pass in the full grid.
pub const TOUCHES: [u32; 4] = [0, 1024, 4096, 16384];
/// Process counts of the short form: 2 and 14 fit the free domains, 16 is
/// the first N that recycles domains, 32 and 48 recycle heavily while every
/// space still has an FCSE PID of its own (IPC 48: 49 spaces).
pub const QUICK_NS: [u16; 5] = [2, 14, 16, 32, 48];
/// Bytes touched per pass in the short form.
pub const QUICK_TOUCHES: [u32; 2] = [0, 4096];
/// Spaces (ring N or IPC N + 1) that fit the 15 free domains of the demo layout.
pub const FREE_DOMAINS: u16 = 15;
/// Spaces that get FCSE PIDs of their own in the demo layout (PIDs 1..=63):
/// up to this many spaces, every space of the workload is window-exclusive
/// (all its mappings lie below 32 MiB, so in its own PID window).
#[allow(clippy::cast_possible_truncation)] // 63 fits
pub const FREE_PIDS: u16 = Layout::DEMO.pid_count() as u16;
/// The CPU of the policy comparison.
pub const POLICY_CPU: Cpu = Cpu::Sa1100;

/// The modes of the whole grid (every preset, touch size, pattern and N):
/// naive, FCSE-only, FASS with every policy under the default rule
/// ([`Rule::Exclusive`]) and clean-first round-robin under
/// [`Rule::Conservative`] (the seed baseline). The other policies under the
/// conservative rule run only in the policy comparison ([`policy_modes`]).
#[must_use]
pub fn modes() -> Vec<Mode> {
    let mut v = vec![Mode::Naive, Mode::Fcse];
    v.extend(
        PolicyKind::ALL
            .iter()
            .map(|p| Mode::Fass(*p, Rule::Exclusive)),
    );
    v.push(Mode::Fass(PolicyKind::RoundRobin, Rule::Conservative));
    v
}

/// The modes of the policy comparison: every policy under both rules
/// (run on [`POLICY_CPU`] at [`Grid::policy_touch`], every N, both patterns).
#[must_use]
pub fn policy_modes() -> Vec<Mode> {
    Rule::ALL
        .iter()
        .flat_map(|r| PolicyKind::ALL.iter().map(move |p| Mode::Fass(*p, *r)))
        .collect()
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
            512
        }
    }

    /// The touch size of the policy comparison: 1 KiB if the grid has it,
    /// else its largest.
    #[must_use]
    pub fn policy_touch(&self) -> u32 {
        let t = self.touches();
        if t.contains(&1024) {
            1024
        } else {
            t.last().copied().unwrap_or(0)
        }
    }

    fn workload(
        &self,
        paths: &KernelPaths,
        cpu: Cpu,
        mode: Mode,
        pattern: Pattern,
        n: u16,
        touch: u32,
    ) -> Workload {
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
            path: paths.of(mode, pattern),
        }
    }
}

/// The modelled cycles per switch of a token ring of `n` spaces touching
/// `touch` bytes per turn on `cpu`, for naive, FCSE-only and FASS (the
/// default policy and rule of `fass`), in that order: what `cargo xtask
/// run` prints beside the kernel's counts (`bench-model --switch-cost`).
///
/// # Errors
///
/// A configuration the model rejects, or `fass` without a default policy
/// among the modelled ones.
pub fn switch_cost(
    paths: &KernelPaths,
    cpu: Cpu,
    n: u16,
    touch: u32,
) -> Result<[(Mode, f64); 3], BenchError> {
    let policy = PolicyKind::default_of_fass().ok_or_else(|| {
        BenchError::KernelPath("fass's default policy is not one the model runs".into())
    })?;
    let fass = Mode::Fass(policy, Rule::default_of_fass());
    let grid = Grid { quick: true };
    let mut out = [(Mode::Naive, 0.0), (Mode::Fcse, 0.0), (fass, 0.0)];
    for (mode, cycles) in &mut out {
        let w = grid.workload(paths, cpu, *mode, Pattern::Ring, n, touch);
        *cycles = model::run(&w)?.cycles_per_switch();
    }
    Ok(out)
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
    /// The kernel path lengths the runs used.
    pub paths: KernelPaths,
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

/// One model run of the grid.
#[derive(Clone, Copy)]
enum Job {
    /// The baseline of (cpu, mode, touch).
    Baseline(Workload),
    /// A run.
    Run(Workload),
}

/// Runs the grid: both presets, both patterns, every mode of [`modes`], N
/// and touch size, plus the policy comparison's runs ([`policy_modes`]) not
/// already among them. The runs are independent (a fresh model each) and
/// are spread over the host's threads; the results do not depend on the
/// order. Every run's kernel path comes from `paths`. `progress` is called
/// after each run.
pub fn run(
    grid: Grid,
    paths: KernelPaths,
    progress: impl Fn(&Outcome) + Sync,
) -> Result<Results, BenchError> {
    let mut jobs = Vec::new();
    let mut seen = BTreeSet::new();
    let mut add = |cpu: Cpu, mode: Mode, touch: u32, jobs: &mut Vec<Job>| {
        if !seen.insert((cpu, mode, touch)) {
            return;
        }
        jobs.push(Job::Baseline(model::baseline_of(&grid.workload(
            &paths,
            cpu,
            mode,
            Pattern::Ring,
            1,
            touch,
        ))));
        for pattern in [Pattern::Ring, Pattern::Ipc] {
            for &n in grid.ns() {
                jobs.push(Job::Run(
                    grid.workload(&paths, cpu, mode, pattern, n, touch),
                ));
            }
        }
    };
    for cpu in Cpu::ALL {
        for mode in modes() {
            for &touch in grid.touches() {
                add(cpu, mode, touch, &mut jobs);
            }
        }
    }
    for mode in policy_modes() {
        add(POLICY_CPU, mode, grid.policy_touch(), &mut jobs);
    }
    let next = AtomicUsize::new(0);
    let done: Mutex<Vec<(Job, Result<Outcome, BenchError>)>> = Mutex::new(Vec::new());
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    std::thread::scope(|sc| {
        for _ in 0..threads {
            sc.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(job) = jobs.get(i).copied() else {
                    break;
                };
                let w = match job {
                    Job::Baseline(w) | Job::Run(w) => w,
                };
                let r = model::run(&w);
                if let (Job::Run(_), Ok(o)) = (job, &r) {
                    progress(o);
                }
                let failed = r.is_err();
                done.lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push((job, r));
                if failed {
                    // Stop every worker: the grid is incomplete anyway.
                    next.store(jobs.len(), Ordering::Relaxed);
                }
            });
        }
    });
    let mut runs = BTreeMap::new();
    let mut baselines = BTreeMap::new();
    for (job, r) in done.into_inner().unwrap_or_else(|e| e.into_inner()) {
        let o = r?;
        let w = o.workload;
        match job {
            Job::Baseline(_) => {
                baselines.insert((w.cpu, w.mode, w.touch), o.cycles_per_switch());
            }
            Job::Run(_) => {
                runs.insert((w.cpu, w.pattern, w.mode, w.touch, w.n), o);
            }
        }
    }
    Ok(Results {
        grid,
        runs,
        baselines,
        paths,
    })
}

/// Asserts the properties the benchmarks promise:
/// * every run switched;
/// * FASS (every policy, both rules): zero whole-cache operations, zero TLB
///   invalidations and zero full flushes in the measured rounds while the
///   spaces fit the free domains (ring N <= 15, IPC N + 1 <= 15);
/// * FASS under [`Rule::Exclusive`] (every policy, both patterns): zero full
///   flushes, zero whole-cache operations and zero window flushes while
///   every space has a PID of its own (spaces <= [`FREE_PIDS`], so all are
///   window-exclusive); beyond the free domains it recycled domains
///   flush-free (`recycles_exclusive > 0`), and at least one such run exists;
/// * FASS under [`Rule::Conservative`]: at least one full flush in every run
///   with more spaces than free domains, and at least one such run exists
///   (so the comparison of the rules measures something);
/// * naive: exactly one full flush per switch;
/// * at least one FASS run within the free domains exists.
///
/// Returns how many runs each property covered.
pub fn check(r: &Results) -> Result<CheckSummary, BenchError> {
    if r.runs.is_empty() {
        return Err(BenchError::Check("no runs".into()));
    }
    let fail = |what: &str, msg: String| Err(BenchError::Check(format!("{what}: {msg}")));
    let (mut steady, mut exclusive, mut conservative, mut naive) = (0, 0, 0, 0);
    for ((cpu, pattern, mode, touch, n), o) in &r.runs {
        let what = format!(
            "{} {} {mode} touch={touch} n={n}",
            cpu.name(),
            pattern.name()
        );
        if o.switches == 0 {
            return fail(&what, "no switch".into());
        }
        let spaces = o.workload.spaces();
        let c = &o.counters;
        let s = &o.stats;
        if matches!(mode, Mode::Fass(..)) && spaces <= FREE_DOMAINS {
            steady += 1;
            if c.cache_whole_ops != 0
                || c.tlb_invalidate_all + c.tlb_invalidate_entry != 0
                || s.full_flushes != 0
            {
                return fail(
                    &what,
                    format!("flush or TLB invalidation in steady state\n{c}"),
                );
            }
        }
        if mode.rule() == Some(Rule::Exclusive) && spaces <= FREE_PIDS {
            if s.full_flushes != 0 || c.cache_whole_ops != 0 || s.window_flushes != 0 {
                return fail(
                    &what,
                    format!(
                        "{} full flushes, {} window flushes, {} whole-cache operations with every space window-exclusive\n{c}",
                        s.full_flushes, s.window_flushes, c.cache_whole_ops
                    ),
                );
            }
            if spaces > FREE_DOMAINS {
                exclusive += 1;
                if s.recycles_exclusive == 0 {
                    return fail(
                        &what,
                        format!(
                            "{spaces} spaces > {FREE_DOMAINS} free domains but no flush-free (exclusive) recycle"
                        ),
                    );
                }
            }
        }
        if mode.rule() == Some(Rule::Conservative) && spaces > FREE_DOMAINS {
            conservative += 1;
            if s.full_flushes == 0 {
                return fail(
                    &what,
                    format!("no full flush under the conservative rule with {spaces} spaces > {FREE_DOMAINS} free domains"),
                );
            }
        }
        if *mode == Mode::Naive {
            naive += 1;
        }
        if *mode == Mode::Naive && s.full_flushes != o.switches {
            return fail(
                &what,
                format!("{} flushes for {} switches", s.full_flushes, o.switches),
            );
        }
    }
    if steady == 0 {
        return Err(BenchError::Check(
            "no FASS run within the free domains".into(),
        ));
    }
    if exclusive == 0 {
        return Err(BenchError::Check(format!(
            "no run under the exclusive-windows rule with {FREE_DOMAINS} < spaces <= {FREE_PIDS}"
        )));
    }
    if conservative == 0 {
        return Err(BenchError::Check(
            "no run under the conservative rule beyond the free domains".into(),
        ));
    }
    Ok(CheckSummary {
        runs: r.runs.len(),
        steady,
        exclusive,
        conservative,
        naive,
    })
}

/// How many runs each property of [`check`] covered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CheckSummary {
    /// Runs checked.
    pub runs: usize,
    /// FASS runs within the free domains (0 flushes, 0 TLB invalidations).
    pub steady: usize,
    /// Exclusive-windows runs beyond the free domains and within the PIDs
    /// (0 full flushes, flush-free recycles seen).
    pub exclusive: usize,
    /// Conservative runs beyond the free domains (full flushes seen).
    pub conservative: usize,
    /// Naive runs (one full flush per switch).
    pub naive: usize,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paths() -> KernelPaths {
        KernelPaths::fallback().unwrap()
    }

    /// A small grid that passes [`check`]: naive and FASS within the free
    /// domains, FASS under both rules beyond them (SA-1100, ring and IPC).
    fn small() -> Results {
        let grid = Grid { quick: true };
        let mut runs = BTreeMap::new();
        let fass = |p, r| Mode::Fass(p, r);
        let set = [
            (Mode::Naive, Pattern::Ring, 2),
            (
                fass(PolicyKind::RoundRobin, Rule::Exclusive),
                Pattern::Ring,
                2,
            ),
            (
                fass(PolicyKind::RoundRobin, Rule::Conservative),
                Pattern::Ipc,
                2,
            ),
            (
                fass(PolicyKind::FewestSlots, Rule::Exclusive),
                Pattern::Ring,
                16,
            ),
            (
                fass(PolicyKind::RoundRobin, Rule::Exclusive),
                Pattern::Ipc,
                16,
            ),
            (
                fass(PolicyKind::RoundRobin, Rule::Conservative),
                Pattern::Ring,
                16,
            ),
        ];
        for (mode, pattern, n) in set {
            let w = grid.workload(&paths(), Cpu::Sa1100, mode, pattern, n, 0);
            let o = model::run(&w).unwrap();
            runs.insert((w.cpu, w.pattern, w.mode, w.touch, w.n), o);
        }
        Results {
            grid,
            runs,
            baselines: BTreeMap::new(),
            paths: paths(),
        }
    }

    fn key(mode: Mode, pattern: Pattern, n: u16) -> Key {
        (Cpu::Sa1100, pattern, mode, 0, n)
    }

    /// Applies `f` to the run of `k` in a copy of `r` and runs the check.
    fn tampered(
        r: &Results,
        k: Key,
        f: impl FnOnce(&mut Outcome),
    ) -> Result<CheckSummary, BenchError> {
        let mut runs = r.runs.clone();
        f(runs.get_mut(&k).expect("run in the small grid"));
        check(&Results {
            grid: r.grid,
            runs,
            baselines: BTreeMap::new(),
            paths: paths(),
        })
    }

    fn removed(r: &Results, k: Key) -> Result<CheckSummary, BenchError> {
        let mut runs = r.runs.clone();
        runs.remove(&k).expect("run in the small grid");
        check(&Results {
            grid: r.grid,
            runs,
            baselines: BTreeMap::new(),
            paths: paths(),
        })
    }

    #[test]
    fn every_check_can_fail() {
        let r = small();
        assert_eq!(
            check(&r).unwrap(),
            CheckSummary {
                runs: 6,
                steady: 2,
                exclusive: 2,
                conservative: 1,
                naive: 1
            }
        );
        let steady = key(
            Mode::Fass(PolicyKind::RoundRobin, Rule::Exclusive),
            Pattern::Ring,
            2,
        );
        let steady_cons = key(
            Mode::Fass(PolicyKind::RoundRobin, Rule::Conservative),
            Pattern::Ipc,
            2,
        );
        let excl = key(
            Mode::Fass(PolicyKind::FewestSlots, Rule::Exclusive),
            Pattern::Ring,
            16,
        );
        let excl_ipc = key(
            Mode::Fass(PolicyKind::RoundRobin, Rule::Exclusive),
            Pattern::Ipc,
            16,
        );
        let cons = key(
            Mode::Fass(PolicyKind::RoundRobin, Rule::Conservative),
            Pattern::Ring,
            16,
        );
        let naive = key(Mode::Naive, Pattern::Ring, 2);
        let cases: Vec<(&str, &str, Result<CheckSummary, BenchError>)> = vec![
            (
                "no switch",
                "no switch",
                tampered(&r, naive, |o| o.switches = 0),
            ),
            (
                "steady: whole-cache op",
                "steady state",
                tampered(&r, steady, |o| o.counters.cache_whole_ops = 1),
            ),
            (
                "steady (conservative): TLB invalidation",
                "steady state",
                tampered(&r, steady_cons, |o| o.counters.tlb_invalidate_entry = 1),
            ),
            (
                "steady: whole-TLB invalidation",
                "steady state",
                tampered(&r, steady, |o| o.counters.tlb_invalidate_all = 1),
            ),
            (
                "steady: full flush",
                "steady state",
                tampered(&r, steady, |o| o.stats.full_flushes = 1),
            ),
            (
                "exclusive: full flush",
                "window-exclusive",
                tampered(&r, excl, |o| o.stats.full_flushes = 1),
            ),
            (
                "exclusive ipc: window flush",
                "window-exclusive",
                tampered(&r, excl_ipc, |o| o.stats.window_flushes = 1),
            ),
            (
                "exclusive: whole-cache op",
                "window-exclusive",
                tampered(&r, excl, |o| o.counters.cache_whole_ops = 1),
            ),
            (
                "exclusive: no flush-free recycle",
                "no flush-free",
                tampered(&r, excl, |o| o.stats.recycles_exclusive = 0),
            ),
            (
                "conservative: no flush beyond the free domains",
                "no full flush under the conservative rule",
                tampered(&r, cons, |o| o.stats.full_flushes = 0),
            ),
            (
                "naive: a switch without a flush",
                "flushes for",
                tampered(&r, naive, |o| o.stats.full_flushes -= 1),
            ),
            (
                "no steady-state run",
                "no FASS run within the free domains",
                {
                    let mut runs = r.runs.clone();
                    runs.remove(&steady);
                    runs.remove(&steady_cons);
                    check(&Results {
                        grid: r.grid,
                        runs,
                        baselines: BTreeMap::new(),
                        paths: paths(),
                    })
                },
            ),
            (
                "no exclusive run beyond the free domains",
                "no run under the exclusive-windows rule",
                {
                    let mut runs = r.runs.clone();
                    runs.remove(&excl);
                    runs.remove(&excl_ipc);
                    check(&Results {
                        grid: r.grid,
                        runs,
                        baselines: BTreeMap::new(),
                        paths: paths(),
                    })
                },
            ),
            (
                "no conservative run beyond the free domains",
                "no run under the conservative rule",
                removed(&r, cons),
            ),
            (
                "no runs",
                "no runs",
                check(&Results {
                    grid: r.grid,
                    runs: BTreeMap::new(),
                    baselines: BTreeMap::new(),
                    paths: paths(),
                }),
            ),
        ];
        for (what, expected, res) in cases {
            match res {
                Err(BenchError::Check(m)) => assert!(m.contains(expected), "{what}: {m}"),
                other => panic!("{what}: {other:?}"),
            }
        }
    }

    #[test]
    fn grid_covers_what_the_check_needs() {
        let g = Grid { quick: true };
        assert!(g.ns().iter().any(|&n| n < FREE_DOMAINS));
        assert!(g.ns().iter().any(|&n| n > FREE_DOMAINS && n < FREE_PIDS));
        assert!(modes().contains(&Mode::Fass(PolicyKind::RoundRobin, Rule::Conservative)));
        assert_eq!(FREE_PIDS, 63);
    }
}
