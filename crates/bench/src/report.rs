//! Markdown tables and the CSV of a grid's results. Every modelled figure
//! is labelled "modelled" in the table titles and column heads.

use crate::memory::Memory;
use crate::model::{Cpu, Mode, Outcome, Pattern, PolicyKind, Rule};
use crate::suite::{modes, policy_modes, Results, FREE_DOMAINS, FREE_PIDS, POLICY_CPU};
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// The FASS policy of the main tables: `fass::DefaultPolicy`, found by type
/// ([`PolicyKind::default_of_fass`]); clean-first fewest-slots if the bench
/// does not know that type (a test fails then).
#[must_use]
pub fn default_policy() -> PolicyKind {
    PolicyKind::default_of_fass().unwrap_or(PolicyKind::FewestSlots)
}

/// FASS as `Fass::new` builds it: `fass::DefaultPolicy` under the default
/// recycling rule.
#[must_use]
pub fn default_fass() -> Mode {
    Mode::Fass(default_policy(), Rule::default_of_fass())
}

/// The baseline of the policy comparison: clean-first round-robin under
/// the conservative rule (Pistachio's policy and rule, seed 000).
pub const BASELINE: Mode = Mode::Fass(PolicyKind::RoundRobin, Rule::Conservative);

/// The modes of the main tables and the switch-cost plot: naive, FCSE-only,
/// FASS as `Fass::new` builds it, and the [`BASELINE`] (FASS under the
/// conservative rule).
#[must_use]
pub fn main_modes() -> Vec<Mode> {
    let mut v = vec![Mode::Naive, Mode::Fcse, default_fass()];
    if !v.contains(&BASELINE) {
        v.push(BASELINE);
    }
    v
}

fn touch_name(t: u32) -> String {
    if t == 0 {
        "0".into()
    } else {
        format!("{} KiB", t / 1024)
    }
}

fn num(x: f64) -> String {
    if x >= 100.0 {
        format!("{x:.0}")
    } else if x >= 10.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.2}")
    }
}

fn header(out: &mut String, first: &str, ns: &[u16], extra: &[&str]) {
    let _ = write!(out, "| {first} |");
    for e in extra {
        let _ = write!(out, " {e} |");
    }
    for n in ns {
        let _ = write!(out, " N={n} |");
    }
    out.push('\n');
    out.push_str("|---|");
    for _ in 0..extra.len() + ns.len() {
        out.push_str("---:|");
    }
    out.push('\n');
}

/// Cycles per switch (ring) or per round trip (IPC: two switches).
fn per_unit(o: &Outcome) -> f64 {
    match o.workload.pattern {
        Pattern::Ring => o.cycles_per_switch(),
        Pattern::Ipc => 2.0 * o.cycles_per_switch(),
    }
}

/// The main tables: modelled cycles per switch (ring) and per round trip
/// (IPC) for naive, FCSE-only and FASS, every touch size and N, per preset.
#[must_use]
pub fn main_tables(r: &Results) -> String {
    let mut out = String::new();
    let ns = r.grid.ns();
    for cpu in Cpu::ALL {
        for pattern in [Pattern::Ring, Pattern::Ipc] {
            let (title, unit) = match pattern {
                Pattern::Ring => ("token ring of N spaces", "per switch"),
                Pattern::Ipc => ("IPC ping-pong, server + N clients", "per round trip"),
            };
            let _ = writeln!(
                out,
                "#### {}: {title}, modelled cycles {unit}\n",
                cpu.name()
            );
            header(
                &mut out,
                "mode, touch",
                ns,
                &["baseline (modelled cycles per pass, no switch)"],
            );
            for mode in main_modes() {
                for &touch in r.grid.touches() {
                    let base = r.baselines.get(&(cpu, mode, touch)).copied().unwrap_or(0.0);
                    let _ = write!(out, "| {mode}, {} | {} |", touch_name(touch), num(base));
                    for &n in ns {
                        match r.get(cpu, pattern, mode, touch, n) {
                            Some(o) => {
                                let _ = write!(out, " {} |", num(per_unit(o)));
                            }
                            None => out.push_str(" – |"),
                        }
                    }
                    out.push('\n');
                }
            }
            out.push('\n');
        }
    }
    out
}

/// The detail table of one preset: every mode and policy, both patterns,
/// a few N and touch sizes: modelled cycles, TLB misses, cache misses,
/// write-backs, flushes and TLB invalidations per switch.
#[must_use]
pub fn detail_table(r: &Results, cpu: Cpu) -> String {
    let mut out = String::new();
    let ns: Vec<u16> = [2u16, 14, 16, 32, 64]
        .into_iter()
        .filter(|n| r.grid.ns().contains(n))
        .collect();
    let touches: Vec<u32> = [0u32, 4096]
        .into_iter()
        .filter(|t| r.grid.touches().contains(t))
        .collect();
    let _ = writeln!(
        out,
        "#### {}: per switch, every mode and policy (all modelled)\n",
        cpu.name()
    );
    out.push_str("| pattern | N | touch | mode | cycles / switch | TLB misses / switch | cache misses (line fills) / switch | write-backs / switch | full flushes / 1,000 switches | TLB invalidations / switch |\n");
    out.push_str("|---|---:|---:|---|---:|---:|---:|---:|---:|---:|\n");
    for pattern in [Pattern::Ring, Pattern::Ipc] {
        for &n in &ns {
            for &touch in &touches {
                for mode in modes() {
                    if let Some(o) = r.get(cpu, pattern, mode, touch, n) {
                        let _ = writeln!(
                            out,
                            "| {} | {n} | {} | {mode} | {} | {} | {} | {} | {} | {} |",
                            pattern.name(),
                            touch_name(touch),
                            num(o.cycles_per_switch()),
                            num(o.tlb_misses_per_switch()),
                            num(o.cache_misses_per_switch()),
                            num(o.write_backs_per_switch()),
                            num(o.flushes_per_thousand()),
                            num(o.tlb_invalidations_per_switch()),
                        );
                    }
                }
            }
        }
    }
    out.push('\n');
    out
}

/// The touch size the policy comparison uses.
#[must_use]
pub fn policy_touch(r: &Results) -> u32 {
    r.grid.policy_touch()
}

/// The host-time figures of the criterion microbenchmarks, by benchmark
/// name (ns per iteration), as `cargo xtask bench` passes them in; empty
/// when they were not measured in this run.
pub type HostNs = BTreeMap<String, f64>;

/// The criterion benchmark of a policy's victim choice.
#[must_use]
pub fn host_bench_name(p: PolicyKind) -> String {
    format!("domain/acquire_recycle/{}", p.key())
}

/// Reads `name<TAB>ns` lines (the file `cargo xtask bench` writes).
#[must_use]
pub fn parse_host_ns(text: &str) -> HostNs {
    text.lines()
        .filter_map(|l| {
            let (name, ns) = l.split_once('\t')?;
            let ns: f64 = ns.split('\t').next()?.trim().parse().ok()?;
            Some((name.trim().to_string(), ns))
        })
        .collect()
}

/// One (policy, rule) summarised against the [`BASELINE`] on the
/// [`POLICY_CPU`] traces at the policy touch size.
#[derive(Clone, Copy, Debug)]
pub struct PolicyVerdict {
    /// The FASS mode (policy and rule).
    pub mode: Mode,
    /// Smallest flush reduction against the baseline over N >= 16 and both
    /// patterns (1.0 = no flushes left; negative = more flushes).
    pub min_reduction: f64,
    /// Full flushes over every N >= 16 and both patterns.
    pub flushes_16: u64,
    /// The baseline's full flushes over the same runs.
    pub baseline_flushes_16: u64,
    /// Full flushes over every N < 16 and both patterns.
    pub flushes_below_16: u64,
    /// The baseline's full flushes over the same runs.
    pub baseline_flushes_below_16: u64,
    /// Largest modelled-cycles ratio against the baseline at N < 16 (1.0 = equal).
    pub worst_below_16: f64,
    /// Mean modelled cycles per switch over every N and both patterns.
    pub mean_cycles: f64,
    /// Mean modelled cycles per switch over N >= 16, both patterns.
    pub mean_cycles_16: f64,
}

/// Cycles ratios up to this count as "not worse" below 16 (model noise of
/// victim order is below it; the figure is printed).
pub const NOT_WORSE_RATIO: f64 = 1.01;
/// Two policies whose mean modelled cycles differ by less than this
/// fraction tie on cycles.
pub const CYCLES_TIE: f64 = 0.001;

impl PolicyVerdict {
    /// Relative reduction of the total flushes at N >= 16 against the baseline.
    #[must_use]
    pub fn total_reduction(&self) -> f64 {
        if self.baseline_flushes_16 == 0 {
            0.0
        } else {
            1.0 - self.flushes_16 as f64 / self.baseline_flushes_16 as f64
        }
    }

    /// The goal: at least 25 % fewer full flushes than the baseline at every
    /// N = 16..64 (each N, both patterns), not worse below 16 (no more
    /// flushes, cycles within [`NOT_WORSE_RATIO`]).
    #[must_use]
    pub fn goal_met(&self) -> bool {
        self.min_reduction >= 0.25
            && self.flushes_below_16 <= self.baseline_flushes_below_16
            && self.worst_below_16 <= NOT_WORSE_RATIO
    }
}

/// Compares every policy under both rules with the [`BASELINE`].
#[must_use]
pub fn policy_verdicts(r: &Results) -> Vec<PolicyVerdict> {
    let touch = policy_touch(r);
    let mut v = Vec::new();
    for mode in policy_modes() {
        let mut min_red = f64::INFINITY;
        let (mut f16, mut b16, mut fb, mut bb) = (0u64, 0u64, 0u64, 0u64);
        let mut worst = 0.0f64;
        let (mut cyc, mut runs, mut cyc16, mut runs16) = (0.0, 0u32, 0.0, 0u32);
        for pattern in [Pattern::Ring, Pattern::Ipc] {
            for &n in r.grid.ns() {
                let (Some(o), Some(b)) = (
                    r.get(POLICY_CPU, pattern, mode, touch, n),
                    r.get(POLICY_CPU, pattern, BASELINE, touch, n),
                ) else {
                    continue;
                };
                cyc += o.cycles_per_switch();
                runs += 1;
                if n >= 16 {
                    f16 += o.stats.full_flushes;
                    b16 += b.stats.full_flushes;
                    cyc16 += o.cycles_per_switch();
                    runs16 += 1;
                    let (fp, fb) = (o.flushes_per_thousand(), b.flushes_per_thousand());
                    let red = if fb > 0.0 { 1.0 - fp / fb } else { 0.0 };
                    min_red = min_red.min(red);
                } else {
                    fb += o.stats.full_flushes;
                    bb += b.stats.full_flushes;
                    worst = worst.max(o.cycles_per_switch() / b.cycles_per_switch());
                }
            }
        }
        v.push(PolicyVerdict {
            mode,
            min_reduction: if min_red.is_finite() { min_red } else { 0.0 },
            flushes_16: f16,
            baseline_flushes_16: b16,
            flushes_below_16: fb,
            baseline_flushes_below_16: bb,
            worst_below_16: worst,
            mean_cycles: cyc / f64::from(runs.max(1)),
            mean_cycles_16: cyc16 / f64::from(runs16.max(1)),
        });
    }
    v
}

/// The recommended default (policy and rule) and why, chosen from the data:
/// among the modes that meet the goal (all of them if none does), fewest
/// full flushes at N >= 16; on a tie, lowest mean modelled cycles per switch
/// (within [`CYCLES_TIE`] counts as a tie); then lowest host time of the
/// policy's victim choice in the criterion microbenchmarks (`host`); then
/// the first in table order.
#[must_use]
pub fn recommend(verdicts: &[PolicyVerdict], host: &HostNs) -> (Mode, String) {
    let mut why = String::new();
    let met: Vec<&PolicyVerdict> = verdicts.iter().filter(|v| v.goal_met()).collect();
    let pool: Vec<&PolicyVerdict> = if met.is_empty() {
        why.push_str("no (policy, rule) meets the goal, so every one is a candidate; ");
        verdicts.iter().collect()
    } else {
        let _ = write!(why, "{} of {} meet the goal; ", met.len(), verdicts.len());
        met
    };
    let Some(fewest) = pool.iter().map(|v| v.flushes_16).min() else {
        return (BASELINE, "no data".into());
    };
    let pool: Vec<&PolicyVerdict> = pool
        .into_iter()
        .filter(|v| v.flushes_16 == fewest)
        .collect();
    let names = |p: &[&PolicyVerdict]| {
        p.iter()
            .map(|v| v.mode.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let _ = write!(
        why,
        "fewest full flushes at N >= 16 ({fewest} over both patterns, against {} for the baseline): {}",
        pool.first().map_or(0, |v| v.baseline_flushes_16),
        names(&pool)
    );
    if pool.len() == 1 {
        why.push('.');
        return (pool[0].mode, why);
    }
    let best = pool
        .iter()
        .map(|v| v.mean_cycles)
        .fold(f64::INFINITY, f64::min);
    let pool: Vec<&PolicyVerdict> = pool
        .into_iter()
        .filter(|v| v.mean_cycles <= best * (1.0 + CYCLES_TIE))
        .collect();
    let _ = write!(
        why,
        " (a tie); lowest mean modelled cycles per switch over every N ({}, ties within {} %): {}",
        num(best),
        100.0 * CYCLES_TIE,
        names(&pool)
    );
    if pool.len() == 1 {
        why.push('.');
        return (pool[0].mode, why);
    }
    let host_of = |v: &PolicyVerdict| match v.mode {
        Mode::Fass(p, _) => host.get(&host_bench_name(p)).copied(),
        _ => None,
    };
    if pool.iter().all(|v| host_of(v).is_some()) {
        let mut sorted = pool.clone();
        sorted.sort_by(|a, b| {
            host_of(a)
                .unwrap_or(f64::INFINITY)
                .total_cmp(&host_of(b).unwrap_or(f64::INFINITY))
        });
        let pick = sorted[0];
        let _ = write!(
            why,
            " (a tie); lowest host time of the victim choice (criterion `{}`: {} ns, this run): {}.",
            match pick.mode {
                Mode::Fass(p, _) => host_bench_name(p),
                _ => String::new(),
            },
            host_of(pick).map_or("–".into(), num),
            pick.mode
        );
        (pick.mode, why)
    } else {
        let _ = write!(
            why,
            " (a tie); host times of the criterion microbenchmarks not measured in this run, so the first in table order: {}.",
            pool[0].mode
        );
        (pool[0].mode, why)
    }
}

/// The verdict of `mode`, if the comparison has it.
fn verdict_of(verdicts: &[PolicyVerdict], mode: Mode) -> Option<&PolicyVerdict> {
    verdicts.iter().find(|v| v.mode == mode)
}

/// The summary under the policy tables: per rule, how many policies meet
/// the goal and which is best; where the reduction comes from (the rule with
/// the baseline's policy, the best policy under the baseline's rule); by how
/// much the best falls short if none meets it; the recommended default
/// against the one `fass` ships.
#[must_use]
pub fn policy_summary(verdicts: &[PolicyVerdict], host: &HostNs) -> String {
    let mut out = String::new();
    for rule in Rule::ALL {
        let of_rule: Vec<PolicyVerdict> = verdicts
            .iter()
            .filter(|v| v.mode.rule() == Some(rule))
            .copied()
            .collect();
        if of_rule.is_empty() {
            continue;
        }
        let same_flushes = of_rule
            .windows(2)
            .all(|w| w[0].flushes_16 == w[1].flushes_16);
        let met = of_rule.iter().filter(|v| v.goal_met()).count();
        let (best, _) = recommend(&of_rule, host);
        let short = if met == 0 {
            let top = of_rule
                .iter()
                .map(|v| v.min_reduction)
                .fold(f64::NEG_INFINITY, f64::max);
            format!(
                " (the largest smallest reduction is {:.1} %: short of 25 % by {:.1} percentage points)",
                100.0 * top,
                100.0 * (0.25 - top)
            )
        } else {
            String::new()
        };
        let _ = writeln!(
            out,
            "* Under the **{}** rule: {met} of {} policies meet the goal{short}; {}; best (same order as the recommendation below: flushes, then modelled cycles): **{best}**.",
            rule.name(),
            of_rule.len(),
            if same_flushes {
                format!(
                    "every policy has the same full flushes at N >= 16 ({} over both patterns), so the victim choice does not change the flush count, only the modelled cycles",
                    of_rule[0].flushes_16
                )
            } else {
                "the policies differ in full flushes at N >= 16".into()
            }
        );
    }
    // Where the reduction comes from: the rule alone (the baseline's policy
    // under the other rule) and the policy alone (the best policy under the
    // baseline's rule).
    let Mode::Fass(base_policy, base_rule) = BASELINE else {
        return out;
    };
    for rule in Rule::ALL.into_iter().filter(|r| *r != base_rule) {
        if let Some(v) = verdict_of(verdicts, Mode::Fass(base_policy, rule)) {
            let _ = writeln!(
                out,
                "* The rule alone ({} under the {} rule): {:.1} % fewer full flushes at the worst N >= 16, {:.1} % over all N >= 16.",
                base_policy.name(),
                rule.name(),
                100.0 * v.min_reduction,
                100.0 * v.total_reduction()
            );
        }
    }
    if let Some(v) = verdicts
        .iter()
        .filter(|v| v.mode.rule() == Some(base_rule) && v.mode != BASELINE)
        .max_by(|a, b| {
            a.min_reduction
                .total_cmp(&b.min_reduction)
                .then(b.mean_cycles.total_cmp(&a.mean_cycles))
        })
    {
        let _ = writeln!(
            out,
            "* The policy alone (the other policy with the largest reduction under the {} rule, {}): {:.1} % fewer full flushes at the worst N >= 16, {:.1} % over all N >= 16.",
            base_rule.name(),
            v.mode,
            100.0 * v.min_reduction,
            100.0 * v.total_reduction()
        );
    }
    if !verdicts.iter().any(PolicyVerdict::goal_met) {
        if let Some(v) = verdicts.iter().max_by(|a, b| {
            a.min_reduction
                .total_cmp(&b.min_reduction)
                .then(b.mean_cycles.total_cmp(&a.mean_cycles))
        }) {
            let _ = writeln!(
                out,
                "* **No (policy, rule) meets the goal.** The best, {}, has {:.1} % fewer full flushes at its worst N >= 16: short of 25 % by {:.1} percentage points{}.",
                v.mode,
                100.0 * v.min_reduction,
                100.0 * (0.25 - v.min_reduction),
                if v.flushes_below_16 > v.baseline_flushes_below_16
                    || v.worst_below_16 > NOT_WORSE_RATIO
                {
                    format!(
                        ", and it is worse below 16 ({} full flushes against {}, cycles ratio {:.3})",
                        v.flushes_below_16, v.baseline_flushes_below_16, v.worst_below_16
                    )
                } else {
                    String::new()
                }
            );
        }
    }
    let (pick, why) = recommend(verdicts, host);
    let shipped = default_fass();
    let _ = writeln!(
        out,
        "\n**Recommended default (from this run's data): {pick}.** Why: {why}\n\n\
         `fass` ships `DefaultPolicy` = {} and `RecycleRule::default()` = {}: {}.\n",
        default_policy().name(),
        Rule::default_of_fass().name(),
        if pick == shipped {
            "the same as the recommendation"
        } else {
            "NOT the recommendation of this run"
        }
    );
    out
}

fn flush_cell(o: &Outcome, b: Option<&Outcome>, n: u16) -> String {
    let f = o.flushes_per_thousand();
    match b {
        Some(b) if n >= 16 && b.flushes_per_thousand() > 0.0 => {
            format!(
                "{} ({:+.0} %)",
                num(f),
                100.0 * (f / b.flushes_per_thousand() - 1.0)
            )
        }
        _ => num(f),
    }
}

/// The policy comparison: full flushes per 1,000 switches (with the change
/// against the [`BASELINE`] at N >= 16) and modelled cycles per switch for
/// every policy under both rules, [`POLICY_CPU`], both patterns; the goal
/// per (policy, rule); the recommended default.
#[must_use]
pub fn policy_tables(r: &Results, host: &HostNs) -> String {
    let mut out = String::new();
    let touch = policy_touch(r);
    let ns = r.grid.ns();
    let _ = writeln!(
        out,
        "Baseline: **{BASELINE}** (Pistachio's clean-first round-robin under the seed rule). \
         Flush cells at N >= 16 give the change against it in parentheses (-100 % = no flush left).\n"
    );
    for pattern in [Pattern::Ring, Pattern::Ipc] {
        for flushes in [true, false] {
            let what = if flushes {
                "full flushes per 1,000 switches (modelled run)"
            } else {
                "modelled cycles per switch"
            };
            let _ = writeln!(
                out,
                "#### {} {}, touch {}: {what}\n",
                POLICY_CPU.name(),
                pattern.name(),
                touch_name(touch)
            );
            header(&mut out, "rule, policy", ns, &[]);
            for mode in policy_modes() {
                let Mode::Fass(p, rule) = mode else { continue };
                let _ = write!(out, "| {}, {} |", rule.name(), p.name());
                for &n in ns {
                    match r.get(POLICY_CPU, pattern, mode, touch, n) {
                        Some(o) if flushes => {
                            let b = r.get(POLICY_CPU, pattern, BASELINE, touch, n);
                            let _ = write!(out, " {} |", flush_cell(o, b, n));
                        }
                        Some(o) => {
                            let _ = write!(out, " {} |", num(o.cycles_per_switch()));
                        }
                        None => out.push_str(" – |"),
                    }
                }
                out.push('\n');
            }
            out.push('\n');
        }
    }
    let _ = writeln!(
        out,
        "#### Against {BASELINE} (N >= 16: flushes; N < 16: flushes and cycles)\n"
    );
    let _ = writeln!(
        out,
        "| rule, policy | smallest flush reduction, any N >= 16, either pattern | flush reduction, all N >= 16 together | full flushes N < 16 (baseline) | worst modelled cycles ratio at N < 16 | mean modelled cycles / switch, N >= 16 | mean modelled cycles / switch, all N | goal: >= 25 % fewer flushes at every N = 16..{}, not worse below 16 |",
        ns.last().copied().unwrap_or(64)
    );
    out.push_str("|---|---:|---:|---:|---:|---:|---:|---|\n");
    let verdicts = policy_verdicts(r);
    for v in &verdicts {
        let Mode::Fass(p, rule) = v.mode else {
            continue;
        };
        let _ = writeln!(
            out,
            "| {}, {} | {:.1} % | {:.1} % | {} ({}) | {:.3} | {} | {} | {} |",
            rule.name(),
            p.name(),
            100.0 * v.min_reduction,
            100.0 * v.total_reduction(),
            v.flushes_below_16,
            v.baseline_flushes_below_16,
            v.worst_below_16,
            num(v.mean_cycles_16),
            num(v.mean_cycles),
            if v.goal_met() { "met" } else { "not met" }
        );
    }
    out.push('\n');
    out.push_str(&policy_summary(&verdicts, host));
    out
}

/// The memory table.
#[must_use]
pub fn memory_table(m: &Memory) -> String {
    let mut out = String::new();
    let per = m.per_process();
    out.push_str("| figure | bytes | goal | how measured |\n|---|---:|---|---|\n");
    let _ = writeln!(
        out,
        "| FASS space directory, 32 MiB space | {} | <= 1,024 (hardware L1 table: {}) {} | `size_of::<fass::space::SpaceDir<32>>()` |",
        m.space_dir_32mib,
        m.hw_l1_table,
        if m.space_dir_32mib <= 1024 { "met" } else { "NOT met" }
    );
    let _ = writeln!(
        out,
        "| frame description per 4 KiB frame | {} (+ {} per MiB summary: {:.3} per frame in all) | <= 4 {} | `size_of::<spm::FrameDesc>()`; `FrameTable::overhead_bytes / frame_count` for 128 MiB |",
        m.frame_desc,
        m.section_summary,
        m.frame_table_per_frame,
        if m.frame_table_per_frame <= 4.0 { "met" } else { "NOT met" }
    );
    let _ = writeln!(
        out,
        "| bookkeeping per space, `TableSwitch` (naive, FCSE) | {} | – | `size_of` with 65 minus with 64 spaces |",
        m.classic_per_space
    );
    let _ = writeln!(
        out,
        "| bookkeeping per space, `Fass` (SLOTS = 32) | {} | – | `size_of` with 65 minus with 64 spaces |",
        m.fass_per_space
    );
    for (i, name) in ["naive", "FCSE-only", "FASS"].iter().enumerate() {
        let _ = writeln!(
            out,
            "| table memory per space, {name} (text, data, stack: 3 slots) | {} | – | counting `TableAlloc` around the real strategy |",
            m.tables_per_space[i]
        );
    }
    let _ = writeln!(
        out,
        "| FASS tables shared by all spaces (the CPD) | {} | – | counting `TableAlloc` |",
        m.fass_shared_tables
    );
    for (i, name) in ["naive", "FCSE-only", "FASS (+ CPD / N)"]
        .iter()
        .enumerate()
    {
        let _ = writeln!(
            out,
            "| **total kernel memory per process, {name}** | {} | – | bookkeeping + table memory |",
            per[i]
        );
    }
    out.push('\n');
    out
}

/// The modelled goals: steady-state flushes, the naive/FASS ratio, and the
/// exclusive-windows rule's flush-free recycling (with the conservative
/// rule's flushes for contrast).
#[must_use]
pub fn model_goals(r: &Results) -> String {
    let mut out = String::new();
    out.push_str("| goal | figure (modelled) | met? |\n|---|---|---|\n");
    // Steady state: FASS runs whose spaces fit the free domains.
    let mut worst = (0.0f64, 0.0f64);
    let mut runs = 0;
    for ((_, _, mode, _, _), o) in &r.runs {
        if matches!(mode, Mode::Fass(..)) && o.workload.spaces() <= FREE_DOMAINS {
            runs += 1;
            worst.0 = worst.0.max(o.cache_flush_ops_per_switch());
            worst.1 = worst.1.max(o.tlb_invalidations_per_switch());
        }
    }
    let _ = writeln!(
        out,
        "| 0 cache flushes and 0 TLB invalidations per switch in steady state while N fits the free domains | worst of {runs} FASS runs (ring N <= 14, IPC N + 1 <= 15; every policy and rule, touch, preset): {} whole-cache ops / switch, {} TLB invalidations / switch | {} |",
        num(worst.0),
        num(worst.1),
        if worst == (0.0, 0.0) && runs > 0 { "met" } else { "NOT met" }
    );
    let t0 = 0;
    for cpu in Cpu::ALL {
        if let (Some(n), Some(f)) = (
            r.get(cpu, Pattern::Ring, Mode::Naive, t0, 2),
            r.get(cpu, Pattern::Ring, default_fass(), t0, 2),
        ) {
            let ratio = n.cycles_per_switch() / f.cycles_per_switch();
            let goal = cpu == Cpu::Sa1100;
            let _ = writeln!(
                out,
                "| naive / FASS cycles per switch, 2 processes, 0 KiB, {}{} | {} / {} = {:.1} | {} |",
                cpu.name(),
                if goal { " (goal >= 20)" } else { " (no goal; for comparison)" },
                num(n.cycles_per_switch()),
                num(f.cycles_per_switch()),
                ratio,
                if !goal {
                    "–"
                } else if ratio >= 20.0 {
                    "met"
                } else {
                    "NOT met"
                }
            );
        }
    }
    // Beyond the free domains: the exclusive-windows rule (the property
    // `suite::check` asserts) and, for contrast, the conservative one.
    let (mut excl, mut excl_flushes, mut cons, mut cons_min) = (0, 0u64, 0, f64::INFINITY);
    for o in r.runs.values() {
        let spaces = o.workload.spaces();
        if spaces <= FREE_DOMAINS {
            continue;
        }
        match o.workload.mode.rule() {
            Some(Rule::Exclusive) if spaces <= FREE_PIDS => {
                excl += 1;
                excl_flushes += o.stats.full_flushes;
            }
            Some(Rule::Conservative) => {
                cons += 1;
                cons_min = cons_min.min(o.flushes_per_thousand());
            }
            _ => {}
        }
    }
    let _ = writeln!(
        out,
        "| exclusive-windows rule: 0 full flushes with {}..{FREE_PIDS} spaces (more than the free domains, every space with a PID of its own) | {excl} FASS runs (every policy, touch, preset, both patterns): {excl_flushes} full flushes in all | {} |",
        FREE_DOMAINS + 1,
        if excl > 0 && excl_flushes == 0 { "met" } else { "NOT met" }
    );
    let _ = writeln!(
        out,
        "| (for contrast) conservative rule with more than {FREE_DOMAINS} spaces: full flushes per 1,000 switches | fewest of {cons} FASS runs: {} | – |",
        if cons_min.is_finite() { num(cons_min) } else { "–".into() }
    );
    out.push('\n');
    out
}

/// Every run as CSV (one line per run; all figures modelled).
#[must_use]
pub fn csv(r: &Results) -> String {
    let mut out = String::from(
        "cpu,pattern,mode,touch,n,switches,modelled_cycles,modelled_cycles_per_switch,baseline_cycles_per_pass,tlb_misses,line_fills,write_backs,full_flushes,cache_whole_ops,tlb_invalidations,recycles_clean,recycles_dirty,recycles_exclusive,window_flushes,collisions,cpd_fills\n",
    );
    for ((cpu, pattern, mode, touch, n), o) in &r.runs {
        let c = &o.counters;
        let s = &o.stats;
        let _ = writeln!(
            out,
            "{},{},{},{touch},{n},{},{},{:.2},{:.2},{},{},{},{},{},{},{},{},{},{},{},{}",
            cpu.name(),
            pattern.name(),
            mode.key(),
            o.switches,
            o.cycles,
            o.cycles_per_switch(),
            r.baselines
                .get(&(*cpu, *mode, *touch))
                .copied()
                .unwrap_or(0.0),
            c.tlb_misses(),
            c.line_fills(),
            c.write_backs,
            s.full_flushes,
            c.cache_whole_ops,
            c.tlb_invalidate_all + c.tlb_invalidate_entry,
            s.recycles_clean,
            s.recycles_dirty,
            s.recycles_exclusive,
            s.window_flushes,
            s.collisions,
            s.cpd_fills,
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(
        p: PolicyKind,
        r: Rule,
        min_reduction: f64,
        flushes_16: u64,
        cycles: f64,
    ) -> PolicyVerdict {
        PolicyVerdict {
            mode: Mode::Fass(p, r),
            min_reduction,
            flushes_16,
            baseline_flushes_16: 100,
            flushes_below_16: 0,
            baseline_flushes_below_16: 0,
            worst_below_16: 1.0,
            mean_cycles: cycles,
            mean_cycles_16: cycles,
        }
    }

    #[test]
    fn the_shipped_default_policy_is_known() {
        assert!(PolicyKind::default_of_fass().is_some());
        assert_eq!(default_fass().rule(), Some(Rule::Exclusive));
    }

    #[test]
    fn goal_needs_25_percent_and_not_worse_below_16() {
        let mut a = v(PolicyKind::Lru, Rule::Conservative, 0.25, 75, 10.0);
        assert!(a.goal_met());
        a.min_reduction = 0.249;
        assert!(!a.goal_met());
        a.min_reduction = 0.5;
        a.flushes_below_16 = 1;
        assert!(!a.goal_met());
        a.flushes_below_16 = 0;
        a.worst_below_16 = 1.02;
        assert!(!a.goal_met());
        assert!(
            (v(PolicyKind::Lru, Rule::Conservative, 0.3, 70, 1.0).total_reduction() - 0.3).abs()
                < 1e-9
        );
    }

    #[test]
    fn recommendation_orders_by_flushes_then_cycles_then_host_time() {
        let host = HostNs::new();
        let vs = [
            v(PolicyKind::RoundRobin, Rule::Conservative, 0.0, 100, 10.0),
            v(PolicyKind::Random, Rule::Exclusive, 0.9, 10, 12.0),
            v(PolicyKind::Lru, Rule::Exclusive, 0.95, 5, 20.0),
        ];
        assert_eq!(recommend(&vs, &host).0, vs[2].mode);
        let vs = [
            v(PolicyKind::Random, Rule::Exclusive, 1.0, 0, 12.0),
            v(PolicyKind::FewestSlots, Rule::Exclusive, 1.0, 0, 11.0),
        ];
        assert_eq!(recommend(&vs, &host).0, vs[1].mode);
        let vs = [
            v(PolicyKind::Random, Rule::Exclusive, 1.0, 0, 11.0),
            v(PolicyKind::FewestSlots, Rule::Exclusive, 1.0, 0, 11.0),
        ];
        let mut host = HostNs::new();
        host.insert(host_bench_name(PolicyKind::Random), 50.0);
        host.insert(host_bench_name(PolicyKind::FewestSlots), 90.0);
        assert_eq!(recommend(&vs, &host).0, vs[0].mode);
    }

    #[test]
    fn summary_says_by_how_much_the_best_falls_short() {
        let vs = [
            v(PolicyKind::RoundRobin, Rule::Conservative, 0.0, 100, 10.0),
            v(PolicyKind::Lru, Rule::Conservative, 0.10, 90, 10.0),
            v(PolicyKind::RoundRobin, Rule::Exclusive, 0.20, 80, 10.0),
        ];
        let s = policy_summary(&vs, &HostNs::new());
        assert!(s.contains("No (policy, rule) meets the goal"), "{s}");
        assert!(s.contains("short of 25 % by 5.0 percentage points"), "{s}");
        assert!(s.contains("The rule alone"), "{s}");
        assert!(s.contains("20.0 % fewer full flushes"), "{s}");
        let vs = [
            v(PolicyKind::RoundRobin, Rule::Conservative, 0.0, 100, 10.0),
            v(PolicyKind::RoundRobin, Rule::Exclusive, 1.0, 0, 10.0),
        ];
        let s = policy_summary(&vs, &HostNs::new());
        assert!(!s.contains("No (policy, rule) meets the goal"), "{s}");
        assert!(s.contains("1 of 1 policies meet the goal"), "{s}");
    }

    #[test]
    fn host_times_parse() {
        let h = parse_host_ns("domain/acquire_recycle/rr\t70\t4\nnoise\nx\ty\n");
        assert_eq!(h.len(), 1);
        assert_eq!(h.get(&host_bench_name(PolicyKind::RoundRobin)), Some(&70.0));
    }
}
