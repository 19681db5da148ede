//! The kernel path the model runs: how many instructions the kernel
//! executes per switch (per mode and pattern) and per abort, taken from the
//! demo kernel's QEMU instruction counts, and how many data accesses go
//! with them.
//!
//! * Instructions: this run's `<target>/bench/qemu.csv` (`cargo xtask
//!   bench` runs QEMU first and passes it as `--qemu-csv`); for a figure it
//!   lacks, or without it (the short form in `cargo xtask test`), the
//!   recorded fallback table [`FALLBACK_CSV`]
//!   (`crates/bench/data/kernel_path.csv`, its provenance in its comment
//!   lines). Which figure feeds which path: [`Use`].
//! * Data accesses: **not measured** (`-icount` counts instructions only):
//!   [`ACCESSES_PER_INSN`] per instruction, half stores, half loads, the
//!   proportion of the model's earlier fixed path (32 accesses per 80
//!   instructions). An assumption, stated in the report.

use crate::model::{Mode, Pattern};
use crate::BenchError;
use std::fmt::Write as _;

/// The recorded fallback table: same columns as `qemu.csv`, `#` lines are
/// comments (provenance).
pub const FALLBACK_CSV: &str = include_str!("../data/kernel_path.csv");
/// The header of `qemu.csv` and of the fallback table.
pub const CSV_HEADER: &str = "board,kind,mode,n,touch,value";
/// The board whose counts feed the model (both CPU presets).
pub const BOARD: &str = "versatilepb";
/// Data accesses per kernel instruction (stated, not measured).
pub const ACCESSES_PER_INSN: f64 = 0.4;
/// Longest kernel path the model's address map holds (64 KiB of code).
pub const MAX_PATH_INSNS: u32 = 16_384;

/// The kernel work of one switch and of one abort, as the model runs it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct KernelPath {
    /// Instructions fetched per switch (half before the strategy's
    /// `switch_to`, half after).
    pub switch_insns: u32,
    /// Data accesses per switch (half stores before, half loads after).
    pub switch_accesses: u32,
    /// Instructions fetched per abort resolved.
    pub fault_insns: u32,
    /// Data accesses per abort resolved.
    pub fault_accesses: u32,
}

/// Data accesses that go with `insns` instructions.
#[must_use]
pub fn accesses_of(insns: u32) -> u32 {
    (f64::from(insns) * ACCESSES_PER_INSN).round() as u32
}

impl KernelPath {
    /// The path of `switch_insns` and `fault_insns` instructions, with
    /// [`ACCESSES_PER_INSN`] data accesses per instruction.
    #[must_use]
    pub fn of(switch_insns: u32, fault_insns: u32) -> KernelPath {
        KernelPath {
            switch_insns,
            switch_accesses: accesses_of(switch_insns),
            fault_insns,
            fault_accesses: accesses_of(fault_insns),
        }
    }

    /// Whether the model's address map holds it.
    #[must_use]
    pub fn fits(&self) -> bool {
        self.switch_insns <= MAX_PATH_INSNS && self.fault_insns <= MAX_PATH_INSNS
    }
}

/// Which QEMU figure a length comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Use {
    /// The `BENCH` kind.
    pub kind: &'static str,
    /// Its mode.
    pub mode: &'static str,
    /// Processes.
    pub n: u32,
    /// Bytes touched.
    pub touch: u32,
    /// The figure covers this many switches (a round trip: 2).
    pub switches: u32,
}

/// The figures behind the paths: per mode class (naive, FCSE-only, FASS)
/// the ring path (`ring`, lmbench `lat_ctx` shape: every kernel
/// instruction per switch, at 2 processes, nothing touched), the IPC path
/// (`ipc_roundtrip` over its two transits), and the fault path (`fault`:
/// a FASS collision resolved without a flush; the only aborts the model
/// has are FASS ones).
pub const USES: [[Use; 2]; 3] = {
    const fn ring(mode: &'static str) -> Use {
        Use {
            kind: "ring",
            mode,
            n: 2,
            touch: 0,
            switches: 1,
        }
    }
    const fn ipc(mode: &'static str) -> Use {
        Use {
            kind: "ipc_roundtrip",
            mode,
            n: 2,
            touch: 0,
            switches: 2,
        }
    }
    [
        [ring("naive"), ipc("naive")],
        [ring("fcse"), ipc("fcse")],
        [ring("fass"), ipc("fass")],
    ]
};
/// The figure behind the fault path.
pub const FAULT_USE: Use = Use {
    kind: "fault",
    mode: "fass",
    n: 2,
    touch: 0,
    switches: 1,
};

/// Where a length came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// This run's QEMU figures.
    Qemu,
    /// The recorded fallback table.
    Fallback,
}

/// One length and its source.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Length {
    /// The figure.
    pub from: Use,
    /// The figure's value (instructions over `from.switches` switches).
    pub value: f64,
    /// Where it came from.
    pub source: Source,
}

impl Length {
    /// Instructions per switch (or per abort), rounded.
    #[must_use]
    pub fn per_switch(&self) -> u32 {
        (self.value / f64::from(self.from.switches)).round() as u32
    }
}

/// The lengths of every path the model runs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct KernelPaths {
    /// Per mode class (naive, FCSE-only, FASS): ring path, IPC path.
    pub switch: [[Length; 2]; 3],
    /// The fault path.
    pub fault: Length,
}

/// Rows of a `qemu.csv`-shaped text: (board, kind, mode, n, touch, value).
type Row = (String, String, String, u32, u32, f64);

/// Parses a `qemu.csv`-shaped text; `#` lines and blank lines are skipped,
/// the first other line must be [`CSV_HEADER`].
pub fn parse_csv(text: &str) -> Result<Vec<Row>, BenchError> {
    let bad = |i: usize, why: &str| BenchError::KernelPath(format!("line {}: {why}", i + 1));
    let mut lines = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty() && !l.trim_start().starts_with('#'));
    match lines.next() {
        Some((_, h)) if h.trim() == CSV_HEADER => {}
        Some((i, _)) => return Err(bad(i, &format!("expected the header `{CSV_HEADER}`"))),
        None => return Err(BenchError::KernelPath("no header".into())),
    }
    let mut rows = Vec::new();
    for (i, l) in lines {
        let f: Vec<&str> = l.trim().split(',').collect();
        let [board, kind, mode, n, touch, value] = f[..] else {
            return Err(bad(i, "expected 6 fields"));
        };
        let n = n.parse().map_err(|_| bad(i, "bad n"))?;
        let touch = touch.parse().map_err(|_| bad(i, "bad touch"))?;
        let value = value
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite() && *v >= 0.0)
            .ok_or_else(|| bad(i, "bad value"))?;
        rows.push((board.into(), kind.into(), mode.into(), n, touch, value));
    }
    Ok(rows)
}

fn find(rows: &[Row], u: &Use) -> Option<f64> {
    rows.iter()
        .find(|(b, k, m, n, t, _)| {
            b == BOARD && k == u.kind && m == u.mode && *n == u.n && *t == u.touch
        })
        .map(|r| r.5)
}

impl KernelPaths {
    /// Every length from the fallback table.
    pub fn fallback() -> Result<KernelPaths, BenchError> {
        KernelPaths::from_rows(&[], &parse_csv(FALLBACK_CSV)?)
    }

    /// Every length from `qemu_csv` (a run's `qemu.csv`), each missing one
    /// from the fallback table.
    pub fn from_qemu(qemu_csv: &str) -> Result<KernelPaths, BenchError> {
        KernelPaths::from_rows(&parse_csv(qemu_csv)?, &parse_csv(FALLBACK_CSV)?)
    }

    fn from_rows(run: &[Row], fallback: &[Row]) -> Result<KernelPaths, BenchError> {
        let length = |u: Use| -> Result<Length, BenchError> {
            let l = if let Some(value) = find(run, &u) {
                Length {
                    from: u,
                    value,
                    source: Source::Qemu,
                }
            } else if let Some(value) = find(fallback, &u) {
                Length {
                    from: u,
                    value,
                    source: Source::Fallback,
                }
            } else {
                return Err(BenchError::KernelPath(format!(
                    "no `{}` figure (mode {}, n={}, touch={}) in the run nor in the fallback table",
                    u.kind, u.mode, u.n, u.touch
                )));
            };
            if l.per_switch() > MAX_PATH_INSNS {
                return Err(BenchError::KernelPath(format!(
                    "`{}` {}: {} instructions per switch, more than the model's {MAX_PATH_INSNS}",
                    u.kind,
                    u.mode,
                    l.per_switch()
                )));
            }
            Ok(l)
        };
        let mut switch = [[Length {
            from: FAULT_USE,
            value: 0.0,
            source: Source::Fallback,
        }; 2]; 3];
        for (c, uses) in USES.iter().enumerate() {
            for (p, u) in uses.iter().enumerate() {
                switch[c][p] = length(*u)?;
            }
        }
        Ok(KernelPaths {
            switch,
            fault: length(FAULT_USE)?,
        })
    }

    /// The path a workload of `mode` and `pattern` runs.
    #[must_use]
    pub fn of(&self, mode: Mode, pattern: Pattern) -> KernelPath {
        let c = class(mode);
        let p = match pattern {
            Pattern::Ring => 0,
            Pattern::Ipc => 1,
        };
        KernelPath::of(self.switch[c][p].per_switch(), self.fault.per_switch())
    }

    /// Whether any length came from the fallback table.
    #[must_use]
    pub fn uses_fallback(&self) -> bool {
        self.fault.source == Source::Fallback
            || self
                .switch
                .iter()
                .flatten()
                .any(|l| l.source == Source::Fallback)
    }

    /// The lengths as a Markdown table, with their sources.
    #[must_use]
    pub fn markdown(&self) -> String {
        let mut out = String::from(
            "| path | QEMU figure (instructions, measured) | source | modelled per switch / abort: instruction fetches, data accesses (stated) |\n|---|---|---|---|\n",
        );
        let src = |s: Source| match s {
            Source::Qemu => "this run",
            Source::Fallback => "fallback table (`crates/bench/data/kernel_path.csv`)",
        };
        let row = |out: &mut String, what: &str, l: &Length| {
            let insns = l.per_switch();
            let _ = writeln!(
                out,
                "| {what} | `{}` mode={} n={} touch={}: {}{} | {} | {insns}, {} |",
                l.from.kind,
                l.from.mode,
                l.from.n,
                l.from.touch,
                l.value,
                if l.from.switches > 1 {
                    format!(" / {} transits", l.from.switches)
                } else {
                    String::new()
                },
                src(l.source),
                accesses_of(insns)
            );
        };
        for (c, name) in ["naive", "FCSE-only", "FASS"].iter().enumerate() {
            row(
                &mut out,
                &format!("{name}, ring switch"),
                &self.switch[c][0],
            );
            row(
                &mut out,
                &format!("{name}, IPC transit"),
                &self.switch[c][1],
            );
        }
        row(&mut out, "abort (every mode)", &self.fault);
        out.push('\n');
        out
    }
}

/// The mode class of a model mode: 0 naive, 1 FCSE-only, 2 FASS (every
/// policy and rule).
#[must_use]
pub fn class(mode: Mode) -> usize {
    match mode {
        Mode::Naive => 0,
        Mode::Fcse => 1,
        Mode::Fass(..) => 2,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{PolicyKind, Rule};

    #[test]
    fn the_fallback_table_has_every_length() {
        let p = KernelPaths::fallback().unwrap();
        assert!(p.uses_fallback());
        assert_eq!(p.of(Mode::Naive, Pattern::Ring).switch_insns, 1849);
        assert_eq!(p.of(Mode::Fcse, Pattern::Ipc).switch_insns, 1213);
        let f = p.of(Mode::Fass(PolicyKind::Lru, Rule::Exclusive), Pattern::Ring);
        assert_eq!(f, KernelPath::of(1523, 223));
        assert_eq!(f.switch_accesses, 609);
        assert!(FALLBACK_CSV.contains("Provenance: demo kernel at commit"));
    }

    #[test]
    fn run_figures_win_and_missing_ones_fall_back() {
        let csv = "board,kind,mode,n,touch,value\n\
                   versatilepb,ring,fass,2,0,90\n\
                   versatilepb,ring,fass,8,0,91\n\
                   collie,ring,naive,2,0,5\n\
                   versatilepb,yield,naive,2,0,70\n";
        let p = KernelPaths::from_qemu(csv).unwrap();
        let fass = Mode::Fass(PolicyKind::FewestSlots, Rule::Exclusive);
        assert_eq!(p.of(fass, Pattern::Ring).switch_insns, 90);
        assert_eq!(p.switch[2][0].source, Source::Qemu);
        // Another board's figure is not this board's.
        assert_eq!(p.of(Mode::Naive, Pattern::Ring).switch_insns, 1849);
        assert_eq!(p.switch[0][0].source, Source::Fallback);
        assert!(p.uses_fallback());
        let md = p.markdown();
        assert!(
            md.contains(
                "| FASS, ring switch | `ring` mode=fass n=2 touch=0: 90 | this run | 90, 36 |"
            ),
            "{md}"
        );
        assert!(md.contains("| naive, IPC transit | `ipc_roundtrip` mode=naive n=2 touch=0: 2049 / 2 transits | fallback table"), "{md}");
    }

    #[test]
    fn bad_tables_are_refused() {
        for bad in [
            "",
            "# only a comment\n",
            "kind,mode\nring,fass\n",
            "board,kind,mode,n,touch,value\nversatilepb,ring,fass,2,0\n",
            "board,kind,mode,n,touch,value\nversatilepb,ring,fass,x,0,1\n",
            "board,kind,mode,n,touch,value\nversatilepb,ring,fass,2,0,-1\n",
            "board,kind,mode,n,touch,value\nversatilepb,ring,fass,2,0,1e9\n",
        ] {
            assert!(
                matches!(KernelPaths::from_qemu(bad), Err(BenchError::KernelPath(_))),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn accesses_follow_the_stated_ratio() {
        assert_eq!(accesses_of(80), 32);
        assert_eq!(accesses_of(0), 0);
        assert!(KernelPath::of(MAX_PATH_INSNS, 1).fits());
        assert!(!KernelPath::of(MAX_PATH_INSNS + 1, 1).fits());
    }
}
