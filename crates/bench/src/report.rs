//! Markdown tables and the CSV of a grid's results. Every modelled figure
//! is labelled "modelled" in the table titles and column heads.

use crate::memory::Memory;
use crate::model::{Cpu, Mode, Outcome, Pattern, PolicyKind};
use crate::suite::{modes, Results};
use std::fmt::Write as _;

/// The FASS policy the "FASS" rows of the main tables use: the current
/// `fass::DefaultPolicy` (clean-first round-robin).
pub const DEFAULT_POLICY: PolicyKind = PolicyKind::RoundRobin;

/// The modes of the main tables: naive, FCSE-only, FASS with the default policy.
#[must_use]
pub fn main_modes() -> [Mode; 3] {
    [Mode::Naive, Mode::Fcse, Mode::Fass(DEFAULT_POLICY)]
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
    if r.grid.touches().contains(&1024) {
        1024
    } else {
        r.grid.touches().last().copied().unwrap_or(0)
    }
}

/// One policy's summary against clean-first round-robin.
#[derive(Clone, Copy, Debug)]
pub struct PolicyVerdict {
    /// The policy.
    pub policy: PolicyKind,
    /// Smallest flush reduction against round-robin over N >= 16 and both
    /// patterns (1.0 = no flushes left; negative = more flushes).
    pub min_reduction: f64,
    /// Total flushes over N >= 16, both patterns, relative reduction.
    pub total_reduction: f64,
    /// Largest cycles ratio against round-robin for N < 16 (1.0 = equal).
    pub worst_below_16: f64,
}

/// Compares every policy with round-robin on the SA-1100 traces.
#[must_use]
pub fn policy_verdicts(r: &Results) -> Vec<PolicyVerdict> {
    let cpu = Cpu::Sa1100;
    let touch = policy_touch(r);
    let mut v = Vec::new();
    for p in PolicyKind::ALL {
        let mut min_red = f64::INFINITY;
        let (mut tot_p, mut tot_rr) = (0.0, 0.0);
        let mut worst = 0.0f64;
        for pattern in [Pattern::Ring, Pattern::Ipc] {
            for &n in r.grid.ns() {
                let (Some(o), Some(rr)) = (
                    r.get(cpu, pattern, Mode::Fass(p), touch, n),
                    r.get(cpu, pattern, Mode::Fass(PolicyKind::RoundRobin), touch, n),
                ) else {
                    continue;
                };
                if n >= 16 {
                    let (fp, frr) = (o.flushes_per_thousand(), rr.flushes_per_thousand());
                    tot_p += fp;
                    tot_rr += frr;
                    let red = if frr > 0.0 { 1.0 - fp / frr } else { 0.0 };
                    min_red = min_red.min(red);
                } else {
                    worst = worst.max(o.cycles_per_switch() / rr.cycles_per_switch());
                }
            }
        }
        v.push(PolicyVerdict {
            policy: p,
            min_reduction: if min_red.is_finite() { min_red } else { 0.0 },
            total_reduction: if tot_rr > 0.0 {
                1.0 - tot_p / tot_rr
            } else {
                0.0
            },
            worst_below_16: worst,
        });
    }
    v
}

/// The policy comparison: full flushes per 1,000 switches and modelled
/// cycles per switch for every policy, SA-1100, both patterns.
#[must_use]
pub fn policy_tables(r: &Results) -> String {
    let mut out = String::new();
    let cpu = Cpu::Sa1100;
    let touch = policy_touch(r);
    let ns = r.grid.ns();
    for pattern in [Pattern::Ring, Pattern::Ipc] {
        for (what, f) in [
            (
                "full flushes per 1,000 switches (modelled run)",
                Outcome::flushes_per_thousand as fn(&Outcome) -> f64,
            ),
            ("modelled cycles per switch", Outcome::cycles_per_switch),
        ] {
            let _ = writeln!(
                out,
                "#### {} {}, touch {}: {what}\n",
                cpu.name(),
                pattern.name(),
                touch_name(touch)
            );
            header(&mut out, "policy", ns, &[]);
            for p in PolicyKind::ALL {
                let _ = write!(out, "| {} |", p.name());
                for &n in ns {
                    match r.get(cpu, pattern, Mode::Fass(p), touch, n) {
                        Some(o) => {
                            let _ = write!(out, " {} |", num(f(o)));
                        }
                        None => out.push_str(" – |"),
                    }
                }
                out.push('\n');
            }
            out.push('\n');
        }
    }
    out.push_str("#### Against clean-first round-robin (N >= 16: flushes; N < 16: cycles)\n\n");
    out.push_str("| policy | smallest flush reduction, any N >= 16, either pattern | flush reduction, all N >= 16 together | worst cycles ratio at N < 16 | goal: >= 25 % fewer flushes, not worse below 16 |\n");
    out.push_str("|---|---:|---:|---:|---|\n");
    for v in policy_verdicts(r) {
        let met = v.min_reduction >= 0.25 && v.worst_below_16 <= 1.01;
        let _ = writeln!(
            out,
            "| {} | {:.1} % | {:.1} % | {:.3} | {} |",
            v.policy.name(),
            100.0 * v.min_reduction,
            100.0 * v.total_reduction,
            v.worst_below_16,
            if met { "met" } else { "not met" }
        );
    }
    out.push('\n');
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

/// The modelled goals: steady-state flushes and the naive/FASS ratio.
#[must_use]
pub fn model_goals(r: &Results) -> String {
    let mut out = String::new();
    out.push_str("| goal | figure (modelled) | met? |\n|---|---|---|\n");
    // Steady state: FASS runs whose spaces fit the free domains.
    let mut worst = (0.0f64, 0.0f64);
    let mut runs = 0;
    for ((_, _, mode, _, _), o) in &r.runs {
        if matches!(mode, Mode::Fass(_)) && o.workload.spaces() <= crate::suite::FREE_DOMAINS {
            runs += 1;
            worst.0 = worst.0.max(o.cache_flush_ops_per_switch());
            worst.1 = worst.1.max(o.tlb_invalidations_per_switch());
        }
    }
    let _ = writeln!(
        out,
        "| 0 cache flushes and 0 TLB invalidations per switch in steady state while N fits the free domains | worst of {runs} FASS runs (ring N <= 14, IPC N + 1 <= 15; every policy, touch, preset): {} whole-cache ops / switch, {} TLB invalidations / switch | {} |",
        num(worst.0),
        num(worst.1),
        if worst == (0.0, 0.0) && runs > 0 { "met" } else { "NOT met" }
    );
    let t0 = 0;
    for cpu in Cpu::ALL {
        if let (Some(n), Some(f)) = (
            r.get(cpu, Pattern::Ring, Mode::Naive, t0, 2),
            r.get(cpu, Pattern::Ring, Mode::Fass(DEFAULT_POLICY), t0, 2),
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
    out.push('\n');
    out
}

/// Every run as CSV (one line per run; all figures modelled).
#[must_use]
pub fn csv(r: &Results) -> String {
    let mut out = String::from(
        "cpu,pattern,mode,touch,n,switches,modelled_cycles,modelled_cycles_per_switch,baseline_cycles_per_pass,tlb_misses,line_fills,write_backs,full_flushes,cache_whole_ops,tlb_invalidations,recycles_clean,recycles_dirty,collisions,cpd_fills\n",
    );
    for ((cpu, pattern, mode, touch, n), o) in &r.runs {
        let c = &o.counters;
        let s = &o.stats;
        let _ = writeln!(
            out,
            "{},{},{},{touch},{n},{},{},{:.2},{:.2},{},{},{},{},{},{},{},{},{},{}",
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
            s.collisions,
            s.cpd_fills,
        );
    }
    out
}
