//! `cargo xtask run` without `--append`: a short demonstration of the three
//! switching modes under `-icount shift=10,sleep=off`, summarised as one
//! table with a line saying what each column is.
//!
//! One QEMU boot of the kernel's measuring build (feature `measure`) runs a
//! token ring of [`N`] processes, an IPC server with [`N`] clients and [`N`]
//! yielding processes under each mode; the per-mode figures are the
//! kernel's `BENCH` lines (yield, one-way IPC), its `RESULT` lines (counts
//! over the whole run) and the modelled cycles per switch on the SA-1100
//! from `bench-model --switch-cost` ([`model`]). Nothing is computed here
//! but sums and the naive/mode ratio of the modelled cycles.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::Path;
use std::time::Duration;

use crate::bench::{parse_log, BenchLine, Kind};
use crate::board::Board;
use crate::qemu::{Ending, QemuOutcome, QemuRun};
use crate::{Error, Result};

/// Ring members, IPC clients and yielding processes.
pub const N: u32 = 8;
/// The modes, in table order.
pub const MODES: [&str; 3] = ["naive", "fcse", "fass"];

/// The kernel command line of the demonstration.
pub fn cmdline() -> String {
    format!(
        "scenario=ring,ipc,yield mode=naive,fcse,fass n={N} passes=10 rounds=10 slice=100000000"
    )
}

/// What each column is: printed under the table.
pub const LEGEND: &str = "\
columns: yield / one-way IPC = mean instructions of one YIELD / one SEND_RECV hand-off \
(ring of 8) from the trap vector to the return to user mode of the next process, min-max \
in brackets (MEASURED under -icount by the kernel's measuring build with its own \
bookkeeping subtracted, i.e. the kernel users build; no timer tick in the windows; \
`cargo xtask bench` checks these counts against the plugin's from outside); SA-1100 cycles/switch = MODELLED cycles per switch of a ring of 8 \
touching nothing (cache and TLB model of armv5-sim); naive/mode = naive's modelled cycles \
over this mode's; cache flushes, TLB invalidations = counts over the whole boot (MEASURED).";

fn fields(text: &str, prefix: &str) -> Option<HashMap<String, String>> {
    let rest = text.strip_prefix(prefix)?.strip_prefix(' ')?;
    Some(
        rest.split(' ')
            .filter_map(|kv| kv.split_once('='))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    )
}

fn num(r: &HashMap<String, String>, k: &str) -> u64 {
    r.get(k).and_then(|v| v.parse().ok()).unwrap_or(0)
}

/// The modelled cycles per switch per mode (`naive`, `fcse`, `fass`), as
/// `bench-model --switch-cost` prints them (`SWITCHCOST mode=M cycles=C`).
pub fn parse_switch_cost(text: &str) -> Result<Vec<(String, f64)>> {
    let mut v = Vec::new();
    for l in text.lines() {
        if let Some(f) = fields(l.trim(), "SWITCHCOST") {
            let (Some(m), Some(c)) = (
                f.get("mode"),
                f.get("cycles").and_then(|c| c.parse::<f64>().ok()),
            ) else {
                return Err(Error::Check(format!("malformed SWITCHCOST line `{l}`")));
            };
            if !c.is_finite() || c <= 0.0 {
                return Err(Error::Check(format!("SWITCHCOST without a cost: `{l}`")));
            }
            v.push((m.clone(), c));
        }
    }
    if v.is_empty() {
        return Err(Error::Check(
            "bench-model printed no SWITCHCOST line".into(),
        ));
    }
    Ok(v)
}

/// Runs `bench-model --switch-cost N` (the dev profile, as `cargo xtask
/// test`'s model stage builds it) for the demonstration's ring.
pub fn model() -> Result<Vec<(String, f64)>> {
    model_for(N, None, false)
}

/// Runs `bench-model --switch-cost n`, with this run's kernel path
/// lengths (`qemu_csv`) if given; `release`: the release build (as `cargo
/// xtask bench` builds it).
pub fn model_for(n: u32, qemu_csv: Option<&Path>, release: bool) -> Result<Vec<(String, f64)>> {
    let mut cmd = crate::cargo::cargo();
    cmd.args(["run", "-q"]);
    if release {
        cmd.arg("--release");
    }
    cmd.args(["-p", "bench", "--bin", "bench-model", "--"])
        .args(["--switch-cost", &n.to_string()]);
    if let Some(q) = qemu_csv {
        cmd.arg("--qemu-csv").arg(q);
    }
    let out = cmd.output().map_err(|source| Error::Io {
        what: "running bench-model --switch-cost".into(),
        source,
    })?;
    if !out.status.success() {
        return Err(Error::Check(format!(
            "bench-model --switch-cost failed: {}",
            String::from_utf8_lossy(&out.stderr)
        )));
    }
    parse_switch_cost(&String::from_utf8_lossy(&out.stdout))
}

fn figure(bench: &[BenchLine], kind: Kind, mode: &str) -> String {
    bench
        .iter()
        .find(|b| b.kind == kind && b.mode.name() == mode && b.n == N)
        .map_or_else(
            || "not measured".to_string(),
            |b| match b.range {
                Some((lo, hi)) => format!("{} ({lo}-{hi})", b.value),
                None => b.value.to_string(),
            },
        )
}

/// The table from the log lines of one demonstration boot and the
/// modelled cycles (`None`: the model did not run).
pub fn table<'a>(
    lines: impl IntoIterator<Item = &'a str> + Clone,
    model: Option<&[(String, f64)]>,
) -> Result<String> {
    let bench = parse_log(lines.clone())
        .map_err(|e| Error::Check(format!("malformed BENCH line: {e:?}")))?;
    let mut results = Vec::new();
    for l in lines {
        if let Some(r) = fields(l.trim(), "RESULT") {
            results.push(r);
        }
    }
    let cycles =
        |mode: &str| model.and_then(|m| m.iter().find(|(k, _)| k == mode).map(|(_, c)| *c));
    let mut out = String::from(
        "| mode | yield (instr.) | one-way IPC (instr.) | SA-1100 cycles/switch (modelled) | naive/mode (modelled) | cache flushes | TLB invalidations |\n\
         |---|---:|---:|---:|---:|---:|---:|\n",
    );
    for mode in MODES {
        let rs: Vec<_> = results
            .iter()
            .filter(|r| r.get("mode").map(String::as_str) == Some(mode))
            .collect();
        if rs.is_empty() {
            return Err(Error::Check(format!("no RESULT line for mode {mode}")));
        }
        let sum = |k: &str| rs.iter().map(|r| num(r, k)).sum::<u64>();
        let failed = sum("failed") + sum("killed") + sum("stuck");
        if failed > 0 {
            return Err(Error::Check(format!(
                "mode {mode}: {failed} processes failed"
            )));
        }
        let (c, ratio) = match (cycles(mode), cycles("naive")) {
            (Some(c), Some(naive)) => (format!("{c:.0}"), format!("{:.1}x", naive / c)),
            (Some(c), None) => (format!("{c:.0}"), "–".into()),
            _ => ("not modelled".into(), "–".into()),
        };
        let _ = writeln!(
            out,
            "| {mode} | {} | {} | {c} | {ratio} | {} | {} |",
            figure(&bench, Kind::Yield, mode),
            figure(&bench, Kind::IpcOneway, mode),
            sum("dflush"),
            sum("tlb") + sum("tlb_entries"),
        );
    }
    Ok(out)
}

/// Boots the demonstration (`elf`: the measuring build) and prints the
/// table.
pub fn run(qemu: &Path, board: Board, elf: &Path, timeout: Duration) -> Result<QemuOutcome> {
    let mut run = QemuRun::new(qemu, elf, timeout);
    run.board = board;
    run.append = Some(cmdline());
    run.icount = Some(10);
    let out = run.run()?;
    if out.ending != Ending::Exited(0) {
        return Err(Error::Check(format!(
            "the demonstration ended with {:?}:\n{}",
            out.ending,
            out.log_text()
        )));
    }
    let model = match model() {
        Ok(m) => Some(m),
        Err(e) => {
            eprintln!("the SA-1100 model did not run: {e}");
            None
        }
    };
    println!(
        "demo kernel on {}, `{}`, -icount shift=10,sleep=off:\n",
        board.name(),
        cmdline()
    );
    print!(
        "{}",
        table(out.lines.iter().map(|l| l.text.as_str()), model.as_deref())?
    );
    println!("\n{LEGEND}");
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines() -> Vec<String> {
        let mut lines = Vec::new();
        for m in MODES {
            lines.push(format!("RESULT name=ring mode={m} procs=8 failed=0 killed=0 stuck=0 switches=10 dflush=1 tlb=2 tlb_entries=3 domain_faults=4 recycles=5"));
            lines.push(format!("RESULT name=ipc mode={m} procs=5 failed=0 killed=0 stuck=0 switches=10 dflush=1 tlb=2 tlb_entries=3 domain_faults=4 recycles=5"));
            lines.push(format!(
                "BENCH kind=yield mode={m} n=8 touch=0 value=77 unit=instructions min=75 max=79"
            ));
            lines.push(format!(
                "BENCH kind=ipc_oneway mode={m} n=8 touch=0 value=89 unit=instructions"
            ));
        }
        lines
    }

    #[test]
    fn table_shows_figures_model_and_ratio_per_mode() {
        let lines = lines();
        let model = [
            ("naive".to_string(), 42000.0),
            ("fcse".to_string(), 2600.0),
            ("fass".to_string(), 2100.0),
        ];
        let t = table(lines.iter().map(String::as_str), Some(&model)).unwrap();
        assert!(
            t.contains("| fass | 77 (75-79) | 89 | 2100 | 20.0x | 2 | 10 |"),
            "{t}"
        );
        assert!(
            t.contains("| naive | 77 (75-79) | 89 | 42000 | 1.0x |"),
            "{t}"
        );
        // Without the model: said so, never a number.
        let t = table(lines.iter().map(String::as_str), None).unwrap();
        assert!(
            t.contains("| fcse | 77 (75-79) | 89 | not modelled | – |"),
            "{t}"
        );
        // A mode without RESULT lines, or a failed process, is an error.
        assert!(table(lines[..4].iter().map(String::as_str), None).is_err());
        let mut bad = lines.clone();
        bad[0] = bad[0].replace("failed=0", "failed=1");
        assert!(table(bad.iter().map(String::as_str), None).is_err());
        // A figure the kernel did not print is "not measured".
        let few: Vec<_> = lines
            .iter()
            .filter(|l| !l.contains("kind=yield"))
            .map(String::as_str)
            .collect();
        assert!(table(few, None)
            .unwrap()
            .contains("| naive | not measured | 89 |"));
    }

    #[test]
    fn switch_cost_lines_are_read_or_refused() {
        let v = parse_switch_cost(
            "SWITCHCOST mode=naive cycles=42403\nnoise\nSWITCHCOST mode=fass cycles=2206\n",
        )
        .unwrap();
        assert_eq!(v, [("naive".into(), 42403.0), ("fass".into(), 2206.0)]);
        assert!(parse_switch_cost("").is_err());
        assert!(parse_switch_cost("SWITCHCOST mode=naive cycles=x").is_err());
        assert!(parse_switch_cost("SWITCHCOST mode=naive cycles=0").is_err());
    }
}
