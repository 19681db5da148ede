//! Benchmark figures counted from outside the kernel: the benchmark
//! contract's boots ([`crate::bench::contract`]) under the `cache-check`
//! plugin with transit counting on (`transits=on`, cache model off: the
//! plain kernel carries no markers), `-icount` as `cargo xtask bench`
//! boots them, so the kernel's own `BENCH` lines of the same boot are the
//! cross-check.
//!
//! A transit runs from the last user-mode instruction of one process to
//! the first user-mode instruction of the next (or the same) one and
//! counts every kernel instruction in between (the plugin's
//! `cache_check::transit` says how each is classified). The plugin files
//! transits under windows, one per `MARK 0` .. `MARK 1` pair; the
//! scenarios mark once per (mode, n) run, in command-line order (modes
//! outer, counts inner), which is how a window gets its mode and n.
//!
//! Output: `<target>/bench/outside.csv`, header
//! `board,kind,mode,n,touch,min,median,max` (instructions), one row per
//! (board, kind, mode, n, touch): each scenario's boot files the kinds of
//! [`kinds_of`] (the ring's hand-offs as `ipc_oneway`, the ring figure
//! `ring`: every kernel instruction of the window divided by its switches,
//! one value, min = median = max; the ipc boot's `ipc_all` (every IPC
//! transit), `ipc_handoff` and `ipc_queued`; `yield`, `preempt`, `fault`,
//! `tcm` from their boots). The fault scenario marks no window: its one
//! run's transits are those outside any window.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::bench::contract::{self, Scenario};
use crate::bench::{parse_log, BenchLine, Kind, Mode, ICOUNT_SHIFT};
use crate::board::Board;
use crate::cachecheck::{Boot, Report};
use crate::{cargo, Error, Result};

/// The CSV header.
pub const CSV_HEADER: &str = "board,kind,mode,n,touch,min,median,max";
/// Largest difference between a kernel figure and the outside count of the
/// same boot that is not reported.
pub const TOLERANCE: f64 = 0.02;

/// One outside-counted figure.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// Board name.
    pub board: &'static str,
    /// Kind (the plugin's transit kinds, `ring`, `ipc_all`).
    pub kind: String,
    /// Mode.
    pub mode: Mode,
    /// Processes, as on the command line.
    pub n: u32,
    /// Bytes touched.
    pub touch: u32,
    /// Transits counted.
    pub count: u64,
    /// Fewest instructions.
    pub min: u64,
    /// Median.
    pub median: u64,
    /// Most.
    pub max: u64,
    /// Mean.
    pub mean: f64,
}

/// A kernel figure and the outside count it is compared with.
#[derive(Clone, Debug, PartialEq)]
pub struct Comparison {
    /// Board name.
    pub board: &'static str,
    /// The kernel's kind.
    pub kind: Kind,
    /// Mode.
    pub mode: Mode,
    /// Processes.
    pub n: u32,
    /// Bytes touched.
    pub touch: u32,
    /// The kernel's `BENCH` value.
    pub kernel: f64,
    /// The outside mean it corresponds to.
    pub outside: f64,
}

impl Comparison {
    /// `(outside - kernel) / kernel`.
    pub fn difference(&self) -> f64 {
        (self.outside - self.kernel) / self.kernel
    }

    /// Whether the difference passes [`TOLERANCE`].
    pub fn differs(&self) -> bool {
        self.difference().abs() > TOLERANCE
    }
}

/// The outside kind a kernel kind corresponds to (`None`: not compared;
/// `fault` mixes the flushing and the non-flushing resolutions, the
/// round trip is two transits, the TCM window is no transit).
pub fn counterpart(kind: Kind) -> Option<&'static str> {
    match kind {
        Kind::Yield => Some("yield"),
        Kind::IpcOneway => Some("ipc_oneway"),
        Kind::Preempt => Some("preempt"),
        Kind::Ring => Some("ring"),
        Kind::Tcm => Some("tcm"),
        _ => None,
    }
}

/// Every (mode, n) run of `s`'s boot, in the order the kernel runs them.
pub fn runs(s: &Scenario) -> Vec<(Mode, u32)> {
    s.modes
        .iter()
        .flat_map(|&m| s.ns.iter().map(move |&n| (m, n)))
        .collect()
}

/// The outside kinds a scenario's boot files, each under the CSV name it
/// gets: one row per (board, kind, mode, n, touch) over all boots.
pub fn kinds_of(scenario: &str) -> &'static [(&'static str, &'static str)] {
    match scenario {
        // The kernel's `ipc_oneway` of the ring is every IPC transit of the
        // window (all hand-offs when every member waits in receive).
        "ring" => &[("ipc_all", "ipc_oneway"), ("ring", "ring")],
        "yield" => &[("yield", "yield")],
        "preempt" => &[("preempt", "preempt")],
        "ipc" => &[
            ("ipc_all", "ipc_all"),
            ("ipc_handoff", "ipc_handoff"),
            ("ipc_queued", "ipc_queued"),
            ("ipc_roundtrip", "ipc_roundtrip"),
        ],
        "fault" => &[("fault", "fault")],
        "tcm" => &[("tcm", "tcm")],
        _ => &[],
    }
}

/// The `rounds=` of `scenario`'s command line in the contract.
pub fn rounds_of(scenario: &str) -> Option<u32> {
    contract::SCENARIOS
        .iter()
        .find(|s| s.name == scenario)?
        .extra
        .split(' ')
        .find_map(|w| w.strip_prefix("rounds="))?
        .parse()
        .ok()
}

/// The rows of one boot of scenario `scenario`: window `i` is `runs[i]`
/// (a boot of one run that opened no window: its transits outside any
/// window). An error if the plugin saw another number of windows.
pub fn rows_of(
    board: &'static str,
    scenario: &str,
    touch: u32,
    runs: &[(Mode, u32)],
    report: &Report,
) -> Result<Vec<Row>> {
    let unmarked = runs.len() == 1 && report.windows == 0;
    if report.windows as usize != runs.len() && !unmarked {
        return Err(Error::Check(format!(
            "{} measurement windows for {} runs",
            report.windows,
            runs.len()
        )));
    }
    let run_of = |w: Option<u32>| match (w, unmarked) {
        (None, true) => Some(runs[0]),
        (Some(w), false) => runs.get(w as usize).copied(),
        _ => None,
    };
    let kinds = kinds_of(scenario);
    let csv_name = |k: &str| kinds.iter().find(|(from, _)| *from == k).map(|(_, to)| *to);
    let mut rows = Vec::new();
    for t in &report.transits {
        let (Some((mode, n)), Some(kind)) = (run_of(t.window), csv_name(&t.kind)) else {
            continue;
        };
        rows.push(Row {
            board,
            kind: kind.into(),
            mode,
            n,
            touch,
            count: t.n,
            min: t.min,
            median: t.median,
            max: t.max,
            mean: t.mean,
        });
    }
    // The round trip: every IPC transit of the window per round trip
    // completed in it. The server marks after answering one call of each
    // client and answers every client's `rounds` calls before it closes the
    // window: (n - 1) (rounds - 1) round trips (n counts the server).
    if let (Some(_), Some(rounds)) = (csv_name("ipc_roundtrip"), rounds_of(scenario)) {
        for (w, &(mode, n)) in runs.iter().enumerate() {
            let all = report
                .transits
                .iter()
                .find(|t| t.window == Some(w as u32) && t.kind == "ipc_all");
            let trips = u64::from(n.saturating_sub(1)) * u64::from(rounds.saturating_sub(1));
            if let (Some(t), true) = (all, trips > 0) {
                let v = t.mean * t.n as f64 / trips as f64;
                let r = v.round() as u64;
                rows.push(Row {
                    board,
                    kind: "ipc_roundtrip".into(),
                    mode,
                    n,
                    touch,
                    count: trips,
                    min: r,
                    median: r,
                    max: r,
                    mean: v,
                });
            }
        }
    }
    // The ring figure.
    if csv_name("ring").is_some() {
        for (w, &(mode, n)) in runs.iter().enumerate() {
            if let Some(&(insns, switches)) = report.window_totals.get(&(w as u32)) {
                if switches > 0 {
                    let v = insns as f64 / switches as f64;
                    let r = v.round() as u64;
                    rows.push(Row {
                        board,
                        kind: "ring".into(),
                        mode,
                        n,
                        touch,
                        count: switches,
                        min: r,
                        median: r,
                        max: r,
                        mean: v,
                    });
                }
            }
        }
    }
    Ok(rows)
}

/// The comparisons of one boot: every `BENCH` line with an outside
/// counterpart in the same (mode, n, touch).
pub fn compare(board: &'static str, bench: &[BenchLine], rows: &[Row]) -> Vec<Comparison> {
    let mut v = Vec::new();
    for b in bench {
        let Some(k) = counterpart(b.kind) else {
            continue;
        };
        let Some(r) = rows
            .iter()
            .find(|r| r.kind == k && r.mode == b.mode && r.n == b.n && r.touch == b.touch)
        else {
            continue;
        };
        v.push(Comparison {
            board,
            kind: b.kind,
            mode: b.mode,
            n: b.n,
            touch: b.touch,
            kernel: b.value,
            outside: r.mean,
        });
    }
    v
}

/// The CSV text of `rows`.
pub fn csv(rows: &[Row]) -> String {
    let mut o = format!("{CSV_HEADER}\n");
    for r in rows {
        let _ = writeln!(
            o,
            "{},{},{},{},{},{},{},{}",
            r.board,
            r.kind,
            r.mode.name(),
            r.n,
            r.touch,
            r.min,
            r.median,
            r.max
        );
    }
    o
}

/// The comparison as a Markdown table, the differences above
/// [`TOLERANCE`] marked.
pub fn comparison_table(c: &[Comparison]) -> String {
    let mut o = String::from(
        "| board | kind | mode | n | touch | kernel BENCH | outside mean | difference |\n|---|---|---|---:|---:|---:|---:|---:|\n",
    );
    for x in c {
        let _ = writeln!(
            o,
            "| {} | {} | {} | {} | {} | {:.0} | {:.1} | {:+.1} %{} |",
            x.board,
            x.kind.name(),
            x.mode.name(),
            x.n,
            x.touch,
            x.kernel,
            x.outside,
            100.0 * x.difference(),
            if x.differs() { " **>2 %**" } else { "" }
        );
    }
    o
}

/// What [`collect`] produced.
#[derive(Clone, Debug, Default)]
pub struct Outside {
    /// Every figure.
    pub rows: Vec<Row>,
    /// Every cross-check.
    pub comparisons: Vec<Comparison>,
    /// Boots whose windows could not be matched to their runs, with why.
    pub skipped: Vec<String>,
}

impl Outside {
    /// The comparisons whose difference passes [`TOLERANCE`].
    pub fn differing(&self) -> Vec<&Comparison> {
        self.comparisons.iter().filter(|c| c.differs()).collect()
    }
}

/// Boots every contract command line on versatilepb and `extra` boards
/// under the plugin (transits on, model off, `-icount`), plain kernel.
pub fn collect(timeout: Duration, extra: &[Board]) -> Result<Outside> {
    let plugin = crate::cachecheck::build_plugin()?;
    let qemu = crate::setup::ensure_qemu()?;
    let mut out = Outside::default();
    for board in std::iter::once(Board::Versatilepb).chain(extra.iter().copied()) {
        let elf = cargo::build_kernel_for(board)?;
        for s in &contract::SCENARIOS {
            for &touch in s.touches {
                let cmdline = s.cmdline(touch);
                let c = Boot {
                    qemu: &qemu,
                    plugin: &plugin,
                    board,
                    elf: &elf,
                    append: Some(&cmdline),
                    timeout,
                    transits: true,
                    model: false,
                    icount: Some(ICOUNT_SHIFT),
                    echo: false,
                }
                .run()?;
                let runs = runs(s);
                let rows = match rows_of(board.name(), s.name, touch, &runs, &c.report) {
                    Ok(r) => r,
                    Err(e) => {
                        out.skipped
                            .push(format!("{} `{cmdline}`: {e}", board.name()));
                        continue;
                    }
                };
                let bench =
                    parse_log(c.outcome.lines.iter().map(|l| l.text.as_str())).map_err(|e| {
                        Error::Check(format!("`{cmdline}`: malformed BENCH line: {e:?}"))
                    })?;
                println!(
                    "outside {} `{cmdline}`: {} windows, {} figures ({:.1} s)",
                    board.name(),
                    c.report.windows,
                    rows.len(),
                    c.elapsed.as_secs_f64()
                );
                out.comparisons.extend(compare(board.name(), &bench, &rows));
                out.rows.extend(rows);
            }
        }
    }
    Ok(out)
}

/// The modelled lat_ctx figure: kernel cycles per switch of the ring
/// (`scenario=ring`, touch 0) under naive and FASS, from the cache-check
/// kernel's own accesses through the board CPU's model.
#[derive(Clone, Debug, PartialEq)]
pub struct Modelled {
    /// Board (its CPU's preset).
    pub board: &'static str,
    /// Processes.
    pub n: u32,
    /// Modelled cycles per switch, naive.
    pub naive: f64,
    /// Modelled cycles per switch, FASS.
    pub fass: f64,
}

/// The ring's boot for [`modelled`]: naive then FASS, `ns` processes.
pub fn modelled_cmdline(ns: &[u32]) -> String {
    let ns: Vec<String> = ns.iter().map(u32::to_string).collect();
    format!(
        "scenario=ring mode=naive,fass n={} touch=0 passes=20 slice=100000000",
        ns.join(",")
    )
}

/// Boots the ring under naive and FASS on `board`'s cache-check kernel
/// with the model and transit counting on, and returns the modelled
/// cycles per switch (every kernel transit of the window).
pub fn modelled(timeout: Duration, board: Board, ns: &[u32]) -> Result<Vec<Modelled>> {
    let plugin = crate::cachecheck::build_plugin()?;
    let qemu = crate::setup::ensure_qemu()?;
    let elf = crate::cachecheck::build_kernel(board)?;
    let cmdline = modelled_cmdline(ns);
    let c = Boot {
        qemu: &qemu,
        plugin: &plugin,
        board,
        elf: &elf,
        append: Some(&cmdline),
        timeout,
        transits: true,
        model: true,
        icount: None,
        echo: false,
    }
    .run()?;
    c.report.trusted()?;
    let runs: Vec<(Mode, u32)> = [Mode::Naive, Mode::Fass]
        .iter()
        .flat_map(|&m| ns.iter().map(move |&n| (m, n)))
        .collect();
    if c.report.windows as usize != runs.len() {
        return Err(Error::Check(format!(
            "`{cmdline}`: {} windows for {} runs",
            c.report.windows,
            runs.len()
        )));
    }
    let per_switch = |w: usize| {
        let (_, switches) = c
            .report
            .window_totals
            .get(&(w as u32))
            .copied()
            .unwrap_or((0, 0));
        let cycles = c
            .report
            .window_cycles
            .get(&(w as u32))
            .copied()
            .unwrap_or(0);
        (switches > 0).then(|| cycles as f64 / switches as f64)
    };
    let mut out = Vec::new();
    for (i, &n) in ns.iter().enumerate() {
        if let (Some(naive), Some(fass)) = (per_switch(i), per_switch(ns.len() + i)) {
            out.push(Modelled {
                board: board.name(),
                n,
                naive,
                fass,
            });
        }
    }
    Ok(out)
}

/// Writes `<target>/bench/outside.csv` and returns its path.
pub fn write_csv(rows: &[Row]) -> Result<PathBuf> {
    let dir = cargo::target_dir()?.join("bench");
    write_csv_in(&dir, rows)
}

fn write_csv_in(dir: &Path, rows: &[Row]) -> Result<PathBuf> {
    let io = |what: String| move |source| Error::Io { what, source };
    std::fs::create_dir_all(dir).map_err(io(format!("creating {}", dir.display())))?;
    let path = dir.join("outside.csv");
    std::fs::write(&path, csv(rows)).map_err(io(format!("writing {}", path.display())))?;
    Ok(path)
}

/// Measures the cache-check plugin's run time against plain QEMU
/// ([`crate::cachecheck::overhead`]) and prints it with the 5x goal, for
/// `cargo xtask bench` and `cargo xtask outside`.
pub fn print_overhead(timeout: Duration) -> Result<crate::cachecheck::Overhead> {
    let oh = crate::cachecheck::overhead(timeout)?;
    println!(
        "cache-check plugin overhead (versatilepb, `{}`): plain QEMU {:.2} s, under the plugin {:.2} s: {:.1}x (goal: at most 5x)",
        crate::cachecheck::OVERHEAD_CMDLINE,
        oh.plain,
        oh.plugin,
        oh.ratio()
    );
    Ok(oh)
}

/// `cargo xtask bench`'s outside part: collects, writes the CSV, prints the
/// cross-check; an error if a kernel figure differs from the outside count
/// by more than [`TOLERANCE`].
pub fn bench_hook(timeout: Duration, extra: &[Board]) -> Result<Outside> {
    print_overhead(timeout)?;
    for m in modelled(timeout, Board::Collie, &[2])? {
        println!(
            "modelled lat_ctx on {} (SA-1110 preset, the cache-check kernel's own accesses, \
             n={}): naive {:.0}, FASS {:.0} cycles per switch, naive/FASS {:.1}x (paper: 57x)",
            m.board,
            m.n,
            m.naive,
            m.fass,
            m.naive / m.fass
        );
    }
    let o = collect(timeout, extra)?;
    let path = write_csv(&o.rows)?;
    println!(
        "outside-counted figures: {} rows in {}",
        o.rows.len(),
        path.display()
    );
    for s in &o.skipped {
        println!("  not counted: {s}");
    }
    println!("\nkernel BENCH figures against the outside count of the same boot:\n");
    print!("{}", comparison_table(&o.comparisons));
    let d = o.differing();
    if !d.is_empty() {
        return Err(Error::Check(format!(
            "{} of {} kernel figures differ from the outside count by more than {:.0} %",
            d.len(),
            o.comparisons.len(),
            100.0 * TOLERANCE
        )));
    }
    Ok(o)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(windows: u32, transits: &str) -> Report {
        let text = format!(
            "cache-check report v1\nstats insns=1 fetch_pa_checked=1\ncount kind=StaleAlias n=0\nwindows n={windows}\n{transits}"
        );
        Report::parse(&text).unwrap()
    }

    #[test]
    fn windows_take_the_runs_in_command_line_order() {
        let s = contract::SCENARIOS
            .iter()
            .find(|s| s.name == "yield")
            .unwrap();
        let r = runs(s);
        assert_eq!(r[0], (Mode::Naive, 2));
        assert_eq!(r[1], (Mode::Naive, 8));
        assert_eq!(r[6], (Mode::Fcse, 2));
        let rep = report(
            2,
            "transit window=1 kind=yield n=8 min=179 median=179 max=183 mean=181.0 cycles_min=0 cycles_median=0 cycles_max=0 cycles_mean=0.0\n\
             transit window=none kind=mark n=2 min=5 median=5 max=5 mean=5.0 cycles_min=0 cycles_median=0 cycles_max=0 cycles_mean=0.0\n\
             transit window=1 kind=ipc_handoff n=2 min=100 median=100 max=100 mean=100.0 cycles_min=0 cycles_median=0 cycles_max=0 cycles_mean=0.0\n\
             transit window=1 kind=ipc_queued n=2 min=300 median=300 max=500 mean=400.0 cycles_min=0 cycles_median=0 cycles_max=0 cycles_mean=0.0\n\
             transit window=1 kind=ipc_all n=4 min=100 median=100 max=500 mean=250.0 cycles_min=0 cycles_median=0 cycles_max=0 cycles_mean=0.0\n\
             window index=1 insns=1000 cycles=0 switches=8\n",
        );
        let rows = rows_of("versatilepb", "yield", 0, &r[..2], &rep).unwrap();
        let y = rows.iter().find(|x| x.kind == "yield").unwrap();
        // The yield boot files its yields only.
        assert!(rows.iter().all(|x| x.kind == "yield"), "{rows:?}");
        let rows = rows_of("versatilepb", "ipc", 0, &r[..2], &rep).unwrap();
        assert!(!rows.iter().any(|x| x.kind == "yield" || x.kind == "ring"));
        let ring = rows_of("versatilepb", "ring", 0, &r[..2], &rep).unwrap();
        // The ring's one-way IPC: every IPC transit of the window.
        assert_eq!(
            ring.iter().find(|x| x.kind == "ipc_oneway").unwrap().count,
            4
        );
        // The ipc boot's round trip: 1,000 IPC instructions over
        // (8 - 1) x (20 - 1) round trips.
        let rt = rows.iter().find(|x| x.kind == "ipc_roundtrip").unwrap();
        assert_eq!(
            (rt.mode, rt.n, rt.count, rt.median),
            (Mode::Naive, 8, 133, 8)
        );
        assert_eq!(
            (y.mode, y.n, y.min, y.median, y.max),
            (Mode::Naive, 8, 179, 179, 183)
        );
        let all = rows.iter().find(|x| x.kind == "ipc_all").unwrap();
        assert_eq!(
            (all.count, all.min, all.max, all.mean),
            (4, 100, 500, 250.0)
        );
        let ring = ring.iter().find(|x| x.kind == "ring").unwrap();
        assert_eq!((ring.median, ring.mean), (125, 125.0));
        assert!(!rows.iter().any(|x| x.kind == "mark"));
        assert!(rows_of("versatilepb", "yield", 0, &r[..3], &rep).is_err());
        let rows = rows_of("versatilepb", "yield", 0, &r[..2], &rep).unwrap();
        let text = csv(&rows);
        assert!(text.starts_with("board,kind,mode,n,touch,min,median,max\n"));
        assert!(
            text.contains("versatilepb,yield,naive,8,0,179,179,183\n"),
            "{text}"
        );
    }

    #[test]
    fn the_modelled_boot_runs_naive_then_fass() {
        assert_eq!(
            modelled_cmdline(&[2, 16]),
            "scenario=ring mode=naive,fass n=2,16 touch=0 passes=20 slice=100000000"
        );
    }

    #[test]
    fn a_boot_of_one_unmarked_run_files_its_transits() {
        let s = contract::SCENARIOS
            .iter()
            .find(|s| s.name == "fault")
            .unwrap();
        let rep = report(
            0,
            "transit window=none kind=fault n=40 min=150 median=212 max=400 mean=220.0 cycles_min=0 cycles_median=0 cycles_max=0 cycles_mean=0.0\n",
        );
        let rows = rows_of("versatilepb", "fault", 0, &runs(s), &rep).unwrap();
        assert_eq!(rows.len(), 1);
        assert_eq!(
            (rows[0].mode, rows[0].n, rows[0].median),
            (Mode::Fass, 2, 212)
        );
        // Two runs without windows cannot be told apart.
        assert!(rows_of(
            "versatilepb",
            "fault",
            0,
            &[(Mode::Fass, 2), (Mode::Fass, 4)],
            &rep
        )
        .is_err());
    }

    #[test]
    fn kernel_figures_are_compared_with_their_counterparts() {
        let rows = vec![Row {
            board: "versatilepb",
            kind: "yield".into(),
            mode: Mode::Fass,
            n: 2,
            touch: 0,
            count: 8,
            min: 179,
            median: 181,
            max: 183,
            mean: 181.0,
        }];
        let line = |kind, value| BenchLine {
            kind,
            mode: Mode::Fass,
            n: 2,
            touch: 0,
            value,
            range: None,
        };
        let c = compare(
            "versatilepb",
            &[
                line(Kind::Yield, 76.0),
                line(Kind::Preempt, 1.0),
                line(Kind::SwitchTail, 5.0),
            ],
            &rows,
        );
        assert_eq!(c.len(), 1);
        assert!(c[0].differs());
        let same = compare("versatilepb", &[line(Kind::Yield, 180.0)], &rows);
        assert!(!same[0].differs());
        let t = comparison_table(&c);
        assert!(
            t.contains("| versatilepb | yield | fass | 2 | 0 | 76 | 181.0 | +138.2 % **>2 %** |"),
            "{t}"
        );
        let dir = std::env::temp_dir().join(format!("xtask-outside-{}", std::process::id()));
        let p = write_csv_in(&dir, &rows).unwrap();
        assert!(std::fs::read_to_string(&p)
            .unwrap()
            .contains("yield,fass,2,0,179,181,183"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
