//! The cross-check of the kernel's own figures against the counts taken
//! from outside the kernel.
//!
//! The outside counts (`<target>/bench/outside.csv`, header
//! [`OUTSIDE_HEADER`]) come from QEMU's side: per transit, the instructions
//! from the last user-mode instruction of one process to the first
//! user-mode instruction of the next, one row per figure with its shortest,
//! median and longest transit. The kernel's figures (`qemu.csv`, from the
//! measuring build's `BENCH` lines) are means over the same windows.
//! [`compare`] sets each kernel figure beside the outside count of the same
//! (board, kind, mode, n, touch) and fails every pair that differs by more
//! than [`TOLERANCE`]: where the kernel gives its shortest and longest
//! transit, its shortest against the outside min, and the outside median
//! inside the kernel's range (a mean and a median differ when the transits
//! take two lengths, as a yield alternating between two paths does; the
//! outside max also holds the rare transit the plugin files under the
//! same kind with more in it); else its mean against the outside median.
//! A kind that cannot be counted the same way from both sides is listed
//! "not compared" with the reason ([`not_compared`]); any other figure
//! that only one side has fails the check as a difference does.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::figures::Figures;
use super::line::{parse_value, Mode};

/// The first line of `outside.csv`.
pub const OUTSIDE_HEADER: &str = "board,kind,mode,n,touch,min,median,max";
/// The largest relative difference between a kernel figure and the
/// outside median that passes (2 %).
pub const TOLERANCE: f64 = 0.02;

/// One row of `outside.csv`.
#[derive(Clone, Debug, PartialEq)]
pub struct OutsideRow {
    /// The board.
    pub board: String,
    /// The kind, as the plugin names it (the `BENCH` kind names where the
    /// kernel has the same figure).
    pub kind: String,
    /// The mode.
    pub mode: Mode,
    /// Processes.
    pub n: u32,
    /// Bytes touched per turn.
    pub touch: u32,
    /// Shortest transit (instructions).
    pub min: f64,
    /// Median transit.
    pub median: f64,
    /// Longest transit.
    pub max: f64,
}

/// Why `outside.csv` was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CsvError {
    /// The first line is not [`OUTSIDE_HEADER`].
    Header(String),
    /// Line `.0` (1-based) has a field that cannot be read, named `.1`.
    Field(usize, &'static str, String),
    /// Line `.0` has not eight fields.
    Width(usize),
    /// Line `.0` has min > median or median > max.
    Order(usize),
}

/// Parses `outside.csv`.
pub fn parse_outside(text: &str) -> Result<Vec<OutsideRow>, CsvError> {
    let mut lines = text.lines();
    let head = lines.next().unwrap_or("").trim();
    if head != OUTSIDE_HEADER {
        return Err(CsvError::Header(head.to_string()));
    }
    let mut rows = Vec::new();
    for (i, l) in lines.enumerate() {
        let no = i + 2;
        if l.trim().is_empty() {
            continue;
        }
        let f: Vec<&str> = l.trim().split(',').collect();
        let [board, kind, mode, n, touch, min, median, max] = f[..] else {
            return Err(CsvError::Width(no));
        };
        let bad = |name: &'static str, v: &str| CsvError::Field(no, name, v.to_string());
        let num = |name: &'static str, v: &str| parse_value(v).ok_or_else(|| bad(name, v));
        let row = OutsideRow {
            board: board.to_string(),
            kind: kind.to_string(),
            mode: Mode::parse(mode).ok_or_else(|| bad("mode", mode))?,
            n: n.parse().map_err(|_| bad("n", n))?,
            touch: touch.parse().map_err(|_| bad("touch", touch))?,
            min: num("min", min)?,
            median: num("median", median)?,
            max: num("max", max)?,
        };
        if row.min > row.median || row.median > row.max {
            return Err(CsvError::Order(no));
        }
        rows.push(row);
    }
    Ok(rows)
}

/// Why figures of `kind` are not compared, if they are not: the kinds
/// whose span or classification cannot be the same inside and outside
/// the kernel (kernel-only), and the outside counts the kernel has no line
/// for (outside-only, informative).
pub fn not_compared(kind: &str) -> Option<&'static str> {
    Some(match kind {
        "switch_tail" => "kernel only: starts at the scheduler's decision, inside a transit, where the outside sees no boundary",
        "fault" | "fault_flush" => "defined differently: the kernel times one collision (a domain fault) without (`fault`) or with (`fault_flush`) a flush; from outside, a collision cannot be told from a refill, so the plugin's `fault` is every abort transit of the fault boot",
        "tcm" => "defined differently: the kernel times the exchange's steps inside `TCM_EXCHANGE`; the plugin's `tcm` is every `TCM_EXCHANGE` and `TCM_RELEASE` transit of the boot, whole",
        "tcm_window" => "kernel only: an interrupts-off window inside one call",
        "long_ipc" => "kernel only: the plugin does not classify long IPC (`LSEND_RECV` is `other` to it)",
        "long_copy" => "kernel only: user code between two `LAP` calls, no transit",
        "ipc_legacy" => "legacy kind of the old kernel",
        "yield_vfp0_lazy" | "yield_vfp0_eager" | "yield_vfp1_lazy" | "yield_vfp1_eager"
        | "yield_vfp2_lazy" | "yield_vfp2_eager" => "kernel only: yields and VFP traps per yield; the plugin files the traps as `other` and cannot tell the two processes' yields apart by VFP use",
        "ipc_all" | "ipc_handoff" | "ipc_queued" => "outside only (informative): every IPC transit of the ipc boot, its hand-offs and the rest; the kernel's figure is `ipc_roundtrip`",
        _ => return None,
    })
}

/// How a pair is judged.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Verdict {
    /// Both sides, within [`TOLERANCE`] (the relative difference).
    Agree(f64),
    /// Both sides, further apart than [`TOLERANCE`].
    Differ(f64),
    /// The kind is not compared, for this reason.
    NotCompared(&'static str),
    /// Only one side has the figure, and no reason says why: a failure.
    OneSided,
}

/// One kernel figure beside its outside count.
#[derive(Clone, Debug, PartialEq)]
pub struct Pair {
    /// board, kind, mode, n, touch.
    pub key: (String, String, Mode, u32, u32),
    /// The kernel's mean (measuring build), if it printed one.
    pub kernel: Option<f64>,
    /// The kernel's shortest and longest transit, where it gave them.
    pub kernel_range: Option<(f64, f64)>,
    /// The outside (min, median, max), if counted.
    pub outside: Option<(f64, f64, f64)>,
}

impl Pair {
    /// The relative difference that judges the pair, when both sides
    /// exist: with the kernel's range, its min against the outside min
    /// (infinite if the outside median lies outside the kernel's range,
    /// widened by [`TOLERANCE`]); else the mean against the median.
    pub fn difference(&self) -> Option<f64> {
        let rel = |k: f64, o: f64| if o > 0.0 { (k - o) / o } else { f64::INFINITY };
        match (self.kernel, self.kernel_range, self.outside) {
            (Some(_), Some((kl, kh)), Some((ol, om, _))) => {
                if om < kl * (1.0 - TOLERANCE) || om > kh * (1.0 + TOLERANCE) {
                    return Some(f64::INFINITY);
                }
                Some(rel(kl, ol))
            }
            (Some(k), None, Some((_, m, _))) => Some(rel(k, m)),
            _ => None,
        }
    }

    /// The pair's verdict.
    pub fn verdict(&self) -> Verdict {
        if let Some(why) = not_compared(&self.key.1) {
            return Verdict::NotCompared(why);
        }
        match self.difference() {
            Some(d) if d.abs() > TOLERANCE => Verdict::Differ(d),
            Some(d) => Verdict::Agree(d),
            None => Verdict::OneSided,
        }
    }

    /// Whether the pair fails the check: both sides further apart than
    /// [`TOLERANCE`], or a figure on one side only with no reason.
    pub fn fails(&self) -> bool {
        matches!(self.verdict(), Verdict::Differ(_) | Verdict::OneSided)
    }
}

/// The outside counts as figures (the median, with the shortest and
/// longest transit as the range), for the summary's goals: the rows whose
/// board and kind the bench knows and that are compared with the kernel's
/// ([`not_compared`]).
pub fn outside_figures(rows: &[OutsideRow]) -> Figures {
    let mut f = Figures::new();
    for r in rows {
        if not_compared(&r.kind).is_some() {
            continue;
        }
        let (Some(board), Some(kind)) = (
            crate::board::Board::ALL
                .iter()
                .find(|b| b.name() == r.board)
                .map(|b| b.name()),
            super::line::Kind::parse(&r.kind),
        ) else {
            continue;
        };
        f.add(
            board,
            &[super::line::BenchLine {
                kind,
                mode: r.mode,
                n: r.n,
                touch: r.touch,
                value: r.median,
                range: Some((r.min, r.max)),
            }],
        );
    }
    f
}

/// Every figure of either side, the kernel's with its outside count.
pub fn compare(kernel: &Figures, outside: &[OutsideRow]) -> Vec<Pair> {
    let mut m: BTreeMap<(String, String, Mode, u32, u32), Pair> = BTreeMap::new();
    for ((board, kind, mode, n, touch), v) in kernel.iter() {
        let key = (
            board.to_string(),
            kind.name().to_string(),
            *mode,
            *n,
            *touch,
        );
        m.insert(
            key.clone(),
            Pair {
                key,
                kernel: Some(v),
                kernel_range: kernel.range(&(*board, *kind, *mode, *n, *touch)),
                outside: None,
            },
        );
    }
    for r in outside {
        let key = (r.board.clone(), r.kind.clone(), r.mode, r.n, r.touch);
        m.entry(key.clone())
            .or_insert(Pair {
                key,
                kernel: None,
                kernel_range: None,
                outside: None,
            })
            .outside = Some((r.min, r.median, r.max));
    }
    m.into_values().collect()
}

/// The pairs whose kind the kernel prints as a transit (those the
/// cross-check is about), as a Markdown table; the failures first counted.
pub fn markdown(pairs: &[Pair]) -> String {
    let count = |f: fn(&Verdict) -> bool| pairs.iter().filter(|p| f(&p.verdict())).count();
    let mut out = format!(
        "Cross-check, kernel (measuring build, mean) against outside (shipped build, median), \
         tolerance {} %: {} pairs compared, {} differ by more; {} on one side only with no \
         reason (failures); {} not compared (below the table, with the reasons).\n\n\
         | board | kind | mode | n | touch | kernel mean (min-max) | outside min / median / max | difference |\n\
         |---|---|---|---:|---:|---:|---:|---:|\n",
        TOLERANCE * 100.0,
        count(|v| matches!(v, Verdict::Agree(_) | Verdict::Differ(_))),
        count(|v| matches!(v, Verdict::Differ(_))),
        count(|v| matches!(v, Verdict::OneSided)),
        count(|v| matches!(v, Verdict::NotCompared(_))),
    );
    // Not compared: one row per kind and reason, with the touch sizes and
    // how many pairs.
    let mut skipped: BTreeMap<(&str, &str), (Vec<u32>, usize)> = BTreeMap::new();
    for p in pairs {
        let (b, k, m, n, t) = &p.key;
        if let Verdict::NotCompared(why) = p.verdict() {
            let e = skipped.entry((k.as_str(), why)).or_default();
            if !e.0.contains(t) {
                e.0.push(*t);
            }
            e.1 += 1;
            continue;
        }
        let kernel = match (p.kernel, p.kernel_range) {
            (Some(v), Some((lo, hi))) => format!("{v} ({lo}-{hi})"),
            (Some(v), None) => format!("{v}"),
            (None, _) => "–".to_string(),
        };
        let outside = p
            .outside
            .map_or("–".to_string(), |(a, b, c)| format!("{a} / {b} / {c}"));
        let diff = match p.verdict() {
            Verdict::Differ(d) => format!("**{:+.1} %**", d * 100.0),
            Verdict::Agree(d) => format!("{:+.1} %", d * 100.0),
            Verdict::NotCompared(_) | Verdict::OneSided => "**one side only**".to_string(),
        };
        let _ = writeln!(
            out,
            "| {b} | `{k}` | {} | {n} | {t} | {kernel} | {outside} | {diff} |",
            m.name()
        );
    }
    if !skipped.is_empty() {
        out.push_str(
            "\nNot compared (every board, mode and n of the kind; the figures are in the \
             tables of each board and in `<target>/bench/outside.csv`):\n\n\
             | kind | touch | pairs | why |\n|---|---|---:|---|\n",
        );
        for ((k, why), (touches, pairs)) in &skipped {
            let t: Vec<String> = touches.iter().map(u32::to_string).collect();
            let _ = writeln!(out, "| `{k}` | {} | {pairs} | {why} |", t.join(", "));
        }
    }
    out.push('\n');
    out
}

/// The failures as one error message, `None` if there are none.
pub fn failures(pairs: &[Pair]) -> Option<String> {
    let bad: Vec<String> = pairs
        .iter()
        .filter(|p| p.fails())
        .map(|p| {
            let (b, k, m, n, t) = &p.key;
            let how = match p.verdict() {
                Verdict::Differ(d) => format!("{:+.1} %", d * 100.0),
                _ => "one side only".to_string(),
            };
            format!(
                "{b} {k} {} n={n} touch={t}: kernel {}{} vs outside {} ({how})",
                m.name(),
                p.kernel.map_or("–".into(), |k| k.to_string()),
                p.kernel_range
                    .map_or(String::new(), |(lo, hi)| format!(" ({lo}-{hi})")),
                p.outside
                    .map_or("–".into(), |o| format!("{} / {} / {}", o.0, o.1, o.2)),
            )
        })
        .collect();
    if bad.is_empty() {
        None
    } else {
        Some(format!(
            "{} figures differ from the outside counts by more than {} % or have no counterpart:\n{}",
            bad.len(),
            TOLERANCE * 100.0,
            bad.join("\n")
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::line::parse_log;

    const CSV: &str = "board,kind,mode,n,touch,min,median,max\n\
        versatilepb,yield,fass,2,0,64,66,68\n\
        versatilepb,ipc_oneway,fass,2,0,70,78,80\n\
        versatilepb,ipc_queued,fass,14,0,200,250,660\n";

    fn kernel() -> Figures {
        let mut f = Figures::new();
        f.add(
            "versatilepb",
            &parse_log([
                "BENCH kind=yield mode=fass n=2 touch=0 value=66 unit=instructions",
                "BENCH kind=ipc_oneway mode=fass n=2 touch=0 value=80 unit=instructions",
                "BENCH kind=preempt mode=fass n=2 touch=0 value=112 unit=instructions",
            ])
            .unwrap(),
        );
        f
    }

    #[test]
    fn pairs_within_two_percent_pass_and_others_fail() {
        let rows = parse_outside(CSV).unwrap();
        let pairs = compare(&kernel(), &rows);
        let get = |k: &str| pairs.iter().find(|p| p.key.1 == k).unwrap();
        assert!(!get("yield").fails());
        // 80 against a median of 78: +2.6 %, fails.
        assert!(get("ipc_oneway").fails());
        // One side only, no reason: a failure.
        assert_eq!(get("preempt").difference(), None);
        assert_eq!(get("preempt").verdict(), Verdict::OneSided);
        assert!(get("preempt").fails());
        // One side only with a reason: listed, not judged.
        assert_eq!(get("ipc_queued").kernel, None);
        assert!(matches!(
            get("ipc_queued").verdict(),
            Verdict::NotCompared(_)
        ));
        assert!(!get("ipc_queued").fails());
        let msg = failures(&pairs).unwrap();
        assert!(
            msg.contains("ipc_oneway fass n=2 touch=0: kernel 80 vs outside 70 / 78 / 80 (+2.6 %)"),
            "{msg}"
        );
        assert!(
            msg.contains("preempt fass n=2 touch=0: kernel 112 vs outside – (one side only)"),
            "{msg}"
        );
        let md = markdown(&pairs);
        assert!(
            md.contains("2 pairs compared, 1 differ by more; 1 on one side only with no reason (failures); 1 not compared"),
            "{md}"
        );
        assert!(md.contains("| **one side only** |"), "{md}");
        assert!(
            md.contains("| `ipc_queued` | 0 | 1 | outside only (informative)"),
            "{md}"
        );
        assert!(
            md.contains("| versatilepb | `yield` | fass | 2 | 0 | 66 | 64 / 66 / 68 | +0.0 % |"),
            "{md}"
        );
        assert!(md.contains("**+2.6 %**"), "{md}");
        // An outside count that has none of the kernel's figures fails
        // (a run without `outside.csv` says so before any pair is made).
        assert!(failures(&compare(&kernel(), &[])).is_some());
        // A kernel-only kind with its reason does not.
        let mut f = Figures::new();
        f.add(
            "versatilepb",
            &parse_log(["BENCH kind=switch_tail mode=fass n=2 touch=0 value=18 unit=instructions"])
                .unwrap(),
        );
        assert_eq!(failures(&compare(&f, &[])), None);
    }

    #[test]
    fn a_kernel_range_is_judged_against_the_outside_range() {
        let mut f = Figures::new();
        f.add(
            "versatilepb",
            &parse_log([
                "BENCH kind=yield mode=fass n=2 touch=0 value=66 unit=instructions min=64 max=68",
                "BENCH kind=yield mode=fass n=14 touch=0 value=70 unit=instructions min=68 max=72",
            ])
            .unwrap(),
        );
        let rows = parse_outside(
            "board,kind,mode,n,touch,min,median,max\n\
             versatilepb,yield,fass,2,0,64,64,68\n\
             versatilepb,yield,fass,14,0,64,68,200\n",
        )
        .unwrap();
        let pairs = compare(&f, &rows);
        // Two paths, 64 and 68: the mean 66 is no median, the range agrees.
        assert!(!pairs[0].fails(), "{:?}", pairs[0]);
        assert_eq!(pairs[0].difference(), Some(0.0));
        // A shortest transit 68 against 64: +6.3 %, whatever the max says.
        assert!(pairs[1].fails());
        // An outside median outside the kernel's range fails.
        let mut g = Figures::new();
        g.add(
            "versatilepb",
            &parse_log([
                "BENCH kind=yield mode=fass n=2 touch=0 value=67 unit=instructions min=66 max=68",
            ])
            .unwrap(),
        );
        assert_eq!(compare(&g, &rows)[0].difference(), Some(f64::INFINITY));
    }

    #[test]
    fn malformed_outside_csv_is_refused() {
        assert!(matches!(
            parse_outside("board,kind\n"),
            Err(CsvError::Header(_))
        ));
        assert!(matches!(parse_outside(""), Err(CsvError::Header(_))));
        let h = OUTSIDE_HEADER;
        assert_eq!(
            parse_outside(&format!("{h}\nversatilepb,yield,fass,2,0,1,2\n")),
            Err(CsvError::Width(2))
        );
        assert!(matches!(
            parse_outside(&format!("{h}\nversatilepb,yield,fast,2,0,1,2,3\n")),
            Err(CsvError::Field(2, "mode", _))
        ));
        assert!(matches!(
            parse_outside(&format!("{h}\nversatilepb,yield,fass,2,0,1,x,3\n")),
            Err(CsvError::Field(2, "median", _))
        ));
        assert_eq!(
            parse_outside(&format!("{h}\nversatilepb,yield,fass,2,0,5,2,3\n")),
            Err(CsvError::Order(2))
        );
    }
}
