//! `cargo xtask run` without `--append`: a short demonstration of the three
//! switching modes under `-icount shift=10,sleep=off`, summarised as a table.
//!
//! One QEMU boot runs a token ring of [`N`] processes and an IPC server
//! with [`N`] clients under each mode; the table is built from
//! the kernel's `RESULT` and `SWITCHPATH` lines (nothing is computed here
//! but sums).

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::Path;
use std::time::Duration;

use crate::board::Board;
use crate::qemu::{Ending, QemuOutcome, QemuRun};
use crate::{Error, Result};

/// Ring members and IPC clients.
pub const N: u32 = 8;
/// The modes, in table order.
pub const MODES: [&str; 3] = ["naive", "fcse", "fass"];

/// The kernel command line of the demonstration.
pub fn cmdline() -> String {
    format!("scenario=ring,ipc mode=naive,fcse,fass n={N} passes=10 rounds=10")
}

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

/// The table from the log lines of one demonstration boot.
pub fn table<'a>(lines: impl IntoIterator<Item = &'a str>) -> Result<String> {
    let mut results = Vec::new();
    let mut paths = Vec::new();
    for l in lines {
        if let Some(r) = fields(l.trim(), "RESULT") {
            results.push(r);
        } else if let Some(p) = fields(l.trim(), "SWITCHPATH") {
            paths.push(p);
        }
    }
    let mut out = String::from(
        "| mode | processes | switches | cache flushes | TLB invalidations | domain faults | recycles | instructions/switch (ring, decision to user) |\n\
         |---|---:|---:|---:|---:|---:|---:|---:|\n",
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
        let per_switch = paths
            .iter()
            .find(|p| {
                p.get("mode").map(String::as_str) == Some(mode)
                    && p.get("name").map(String::as_str) == Some("ring")
            })
            .map_or_else(|| "–".to_string(), |p| num(p, "mean").to_string());
        let _ = writeln!(
            out,
            "| {mode} | {} | {} | {} | {} | {} | {} | {per_switch} |",
            sum("procs"),
            sum("switches"),
            sum("dflush"),
            sum("tlb") + sum("tlb_entries"),
            sum("domain_faults"),
            sum("recycles"),
        );
    }
    Ok(out)
}

/// Boots the demonstration and prints the table.
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
    println!(
        "demo kernel on {}, `{}`, -icount shift=10,sleep=off (counts over the whole run; \
         instructions per switch from the scheduler's decision to the return to user mode):\n",
        board.name(),
        cmdline()
    );
    print!("{}", table(out.lines.iter().map(|l| l.text.as_str()))?);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_sums_results_per_mode() {
        let mut lines = Vec::new();
        for m in MODES {
            lines.push(format!("RESULT name=ring mode={m} procs=8 failed=0 killed=0 stuck=0 switches=10 dflush=1 tlb=2 tlb_entries=3 domain_faults=4 recycles=5"));
            lines.push(format!("RESULT name=ipc mode={m} procs=5 failed=0 killed=0 stuck=0 switches=10 dflush=1 tlb=2 tlb_entries=3 domain_faults=4 recycles=5"));
            lines.push(format!("SWITCHPATH name=ring mode={m} n=8 mean=77"));
        }
        let t = table(lines.iter().map(String::as_str)).unwrap();
        assert!(
            t.contains("| fass | 13 | 20 | 2 | 10 | 8 | 10 | 77 |"),
            "{t}"
        );
        assert!(table(lines[..2].iter().map(String::as_str)).is_err());
    }
}
