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
/// the conservative rule (Pistachio's policy and rule: Wiggins, Tuch,
/// Uhlig, Heiser, ACSAC 2003).
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
        "Baseline: **{BASELINE}** (Pistachio's clean-first round-robin under its published rule). \
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
    for cpu in Cpu::ALL {
        if let Some((n, f, ratio)) = lat_ctx_ratio(r, cpu) {
            let goal = cpu == Cpu::Sa1100;
            let _ = writeln!(
                out,
                "| naive / FASS cycles per switch, lat_ctx (ring), 2 processes, 0 KiB, real kernel path, {}{} | {} / {} = {:.1} | {} |",
                cpu.name(),
                if goal {
                    format!(" (goal >= {SEED_LAT_CTX_RATIO}: the hardware ratio of Wiggins et al. 2003)")
                } else {
                    " (no goal; for comparison)".to_string()
                },
                num(n),
                num(f),
                ratio,
                if !goal {
                    "–".to_string()
                } else {
                    verdict_at_least(ratio, SEED_LAT_CTX_RATIO)
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

/// Wiggins, Tuch, Uhlig, Heiser, ACSAC 2003 (SA-1100, Linux, lmbench `lat_ctx`, 2 processes, nothing
/// touched): the original kernel's latency over the FASS kernel's, "a factor
/// of 57". Hardware, not modelled.
pub const SEED_LAT_CTX_RATIO: f64 = 57.0;
/// Wiggins et al., ACSAC 2003, L4 on the SA-1100 at 200 MHz: IPC round trip without and with
/// fast context switching, microseconds (hardware).
pub const SEED_L4_ROUND_TRIP_US: (f64, f64) = (135.0, 10.0);
/// One-way IPC including the address-space switch, cycles (hardware):
/// OKL4 on XScale PXA255 and seL4 on ARM11 (Elphinstone and Heiser, "From
/// L3 to seL4", 2013).
pub const L4_ONE_WAY_CYCLES: [(&str, f64); 2] =
    [("OKL4, XScale PXA255", 151.0), ("seL4, ARM11", 188.0)];

/// "met" when `x >= goal`, else "NOT met (short by …)".
fn verdict_at_least(x: f64, goal: f64) -> String {
    if x >= goal {
        "met".into()
    } else {
        format!("**NOT met** (short by {:.1})", goal - x)
    }
}

/// Modelled cycles per switch of naive and FASS (the shipped default) for
/// lat_ctx at 2 processes, nothing touched, and their ratio.
#[must_use]
pub fn lat_ctx_ratio(r: &Results, cpu: Cpu) -> Option<(f64, f64, f64)> {
    let n = r
        .get(cpu, Pattern::Ring, Mode::Naive, 0, 2)?
        .cycles_per_switch();
    let f = r
        .get(cpu, Pattern::Ring, default_fass(), 0, 2)?
        .cycles_per_switch();
    Some((n, f, n / f))
}

/// The modelled lat_ctx and IPC figures per mode, with the real kernel
/// path, next to the hardware figures of Wiggins et al. (ACSAC 2003) and
/// of L4 kernels.
#[must_use]
pub fn anchors(r: &Results) -> String {
    let mut out = String::from(
        "Every figure in the mode columns is MODELLED (the preset's cost model applied to the events the model counted), with the kernel path as long as the real demo kernel's (next section); the reference column gives measurements on hardware from the papers. FASS = the shipped default; µs at the preset's clock.\n\n\
         | figure (modelled) | naive | FCSE-only | FASS | naive / FASS | FCSE / FASS | reference (hardware, not modelled) |\n|---|---:|---:|---:|---:|---:|---|\n",
    );
    let modes = [Mode::Naive, Mode::Fcse, default_fass()];
    for cpu in Cpu::ALL {
        let mhz = cpu.preset().cost.clock_hz as f64 / 1e6;
        let cyc = |p: Pattern, m: Mode| {
            r.get(cpu, p, m, 0, 2).map(|o| match p {
                Pattern::Ring => o.cycles_per_switch(),
                Pattern::Ipc => 2.0 * o.cycles_per_switch(),
            })
        };
        let sa = cpu == Cpu::Sa1100;
        let rows: [(String, Pattern, f64, String); 3] = [
            (
                format!(
                    "{}: lat_ctx (ring), 2 processes, 0 KiB: cycles per switch",
                    cpu.name()
                ),
                Pattern::Ring,
                1.0,
                if sa {
                    let ratio = lat_ctx_ratio(r, cpu).map_or(0.0, |x| x.2);
                    format!(
                        "Wiggins et al. 2003, SA-1100 200 MHz, Linux: naive / FASS = {SEED_LAT_CTX_RATIO:.0}x; goal: modelled >= {SEED_LAT_CTX_RATIO:.0}x: {}",
                        verdict_at_least(ratio, SEED_LAT_CTX_RATIO)
                    )
                } else {
                    "– (no hardware figure)".into()
                },
            ),
            (
                format!(
                    "{}: IPC round trip, server + 2 clients, 0 KiB: cycles (µs)",
                    cpu.name()
                ),
                Pattern::Ipc,
                1.0,
                if sa {
                    let (a, b) = SEED_L4_ROUND_TRIP_US;
                    format!(
                        "Wiggins et al. 2003, L4 on SA-1100 200 MHz: {a:.0} µs without FASS, {b:.0} µs with ({:.1}x)",
                        a / b
                    )
                } else {
                    "–".into()
                },
            ),
            (
                format!("{}: one-way IPC (half the round trip): cycles", cpu.name()),
                Pattern::Ipc,
                0.5,
                L4_ONE_WAY_CYCLES
                    .iter()
                    .map(|(k, c)| format!("{k}: {c:.0} cycles"))
                    .collect::<Vec<_>>()
                    .join("; "),
            ),
        ];
        for (what, p, scale, reference) in rows {
            let v: Vec<Option<f64>> = modes
                .iter()
                .map(|&m| cyc(p, m).map(|c| c * scale))
                .collect();
            let cell = |x: Option<f64>| match x {
                Some(c) if p == Pattern::Ipc && scale == 1.0 => {
                    format!("{} ({:.1} µs)", num(c), c / mhz)
                }
                Some(c) => num(c),
                None => "–".into(),
            };
            let ratio = |a: Option<f64>, b: Option<f64>| match (a, b) {
                (Some(a), Some(b)) if b > 0.0 => format!("{:.1}", a / b),
                _ => "–".into(),
            };
            let _ = writeln!(
                out,
                "| {what} | {} | {} | {} | {} | {} | {reference} |",
                cell(v[0]),
                cell(v[1]),
                cell(v[2]),
                ratio(v[0], v[2]),
                ratio(v[1], v[2]),
            );
        }
    }
    out.push('\n');
    out
}

/// The kernel path lengths the runs used, their sources, and the stated
/// data-access ratio.
#[must_use]
pub fn kernel_path(r: &Results) -> String {
    let mut out = r.paths.markdown();
    let _ = writeln!(
        out,
        "Instruction counts are measured (QEMU `-icount`, the demo kernel built for versatilepb / ARM926; they drive both presets). \
         Data accesses are NOT measured (`-icount` counts instructions only): {} per instruction, half stores and half loads \
         (the proportion of the model's earlier fixed path, 32 per 80), an assumption. {}\n",
        crate::path::ACCESSES_PER_INSN,
        if r.paths.uses_fallback() {
            "Some lengths come from the recorded fallback table (its provenance in the file): this run had no QEMU figure for them."
        } else {
            "Every length comes from this run's QEMU figures."
        }
    );
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
    fn anchors_are_modelled_with_the_real_path_next_to_the_hardware_figures() {
        use crate::model::{run, Workload};
        use crate::path::KernelPaths;
        use crate::suite::Grid;
        let paths = KernelPaths::fallback().unwrap();
        let mut runs = BTreeMap::new();
        for mode in [Mode::Naive, Mode::Fcse, default_fass()] {
            for pattern in [Pattern::Ring, Pattern::Ipc] {
                let w = Workload {
                    cpu: Cpu::Sa1100,
                    mode,
                    pattern,
                    n: 2,
                    touch: 0,
                    warmup_rounds: 2,
                    rounds: 8,
                    path: paths.of(mode, pattern),
                };
                runs.insert((w.cpu, pattern, mode, 0, 2), run(&w).unwrap());
            }
        }
        let r = Results {
            grid: Grid { quick: true },
            runs,
            baselines: BTreeMap::new(),
            paths,
        };
        let (n, f, ratio) = lat_ctx_ratio(&r, Cpu::Sa1100).unwrap();
        assert_eq!(ratio, n / f);
        assert_eq!(lat_ctx_ratio(&r, Cpu::Arm926), None);
        let a = anchors(&r);
        assert!(a.contains("is MODELLED"), "{a}");
        let row = a
            .lines()
            .find(|l| l.starts_with("| SA-1100 (collie): lat_ctx (ring), 2 processes, 0 KiB"))
            .unwrap();
        assert!(row.contains(&format!("| {:.1} |", ratio)), "{row}");
        assert!(
            row.contains("naive / FASS = 57x; goal: modelled >= 57x: "),
            "{row}"
        );
        assert!(
            row.contains(&verdict_at_least(ratio, SEED_LAT_CTX_RATIO)),
            "{row}"
        );
        assert!(a.contains("135 µs without FASS, 10 µs with"), "{a}");
        assert!(
            a.contains("OKL4, XScale PXA255: 151 cycles; seL4, ARM11: 188 cycles"),
            "{a}"
        );
        let k = kernel_path(&r);
        assert!(k.contains("NOT measured"), "{k}");
        assert!(k.contains("fallback table"), "{k}");
    }

    #[test]
    fn the_seed_ratio_goal_is_judged_and_can_fail() {
        assert_eq!(verdict_at_least(57.0, SEED_LAT_CTX_RATIO), "met");
        assert_eq!(
            verdict_at_least(56.9, SEED_LAT_CTX_RATIO),
            "**NOT met** (short by 0.1)"
        );
        assert_eq!(
            verdict_at_least(13.0, SEED_LAT_CTX_RATIO),
            "**NOT met** (short by 44.0)"
        );
    }

    #[test]
    fn host_times_parse() {
        let h = parse_host_ns("domain/acquire_recycle/rr\t70\t4\nnoise\nx\ty\n");
        assert_eq!(h.len(), 1);
        assert_eq!(h.get(&host_bench_name(PolicyKind::RoundRobin)), Some(&70.0));
    }
}
