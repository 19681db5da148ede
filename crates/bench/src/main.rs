//! `bench-model`: runs the model grid, writes the tables, the CSV and the
//! plots. Used by `cargo xtask bench` (full grid) and `cargo xtask test`
//! (`--quick --check`).
//!
//! ```text
//! bench-model [--quick] [--check] --out DIR [--plots DIR] [--host-ns FILE] [--qemu-csv FILE]
//! bench-model --switch-cost N [--qemu-csv FILE]
//! ```
//!
//! `--switch-cost N` runs only the token ring of N spaces (touch 0) on the
//! SA-1100 preset under naive, FCSE-only and FASS and prints one line per
//! mode, `SWITCHCOST mode=M cycles=C` (modelled cycles per switch), for
//! `cargo xtask run`.
//!
//! Writes `DIR/model.md` (Markdown tables, every figure modelled),
//! `DIR/model.csv` (one line per run) and the PNGs
//! `switch_cost.png`, `policies.png` and `lat_ctx.png` into `--plots`
//! (default `DIR`).
//! `--host-ns` names a file of `benchmark<TAB>ns` lines from this run's
//! criterion microbenchmarks (`cargo xtask bench` writes it): the last
//! tie-breaker of the recommended default. `--qemu-csv` names this run's
//! QEMU instruction counts (`<target>/bench/qemu.csv`): the kernel path
//! lengths of the model; without it, or for a figure it lacks, the recorded
//! fallback table (`bench::path`).

use bench::path::KernelPaths;
use bench::{memory, plot, report, suite, BenchError};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

struct Args {
    quick: bool,
    check: bool,
    out: PathBuf,
    plots: Option<PathBuf>,
    host_ns: Option<PathBuf>,
    qemu_csv: Option<PathBuf>,
    switch_cost: Option<u16>,
}

fn parse() -> Result<Args, String> {
    let mut a = Args {
        quick: false,
        check: false,
        out: PathBuf::new(),
        plots: None,
        host_ns: None,
        qemu_csv: None,
        switch_cost: None,
    };
    let mut out = None;
    let mut it = std::env::args().skip(1);
    while let Some(x) = it.next() {
        match x.as_str() {
            "--quick" => a.quick = true,
            "--check" => a.check = true,
            "--out" => out = Some(PathBuf::from(it.next().ok_or("--out needs a directory")?)),
            "--plots" => {
                a.plots = Some(PathBuf::from(it.next().ok_or("--plots needs a directory")?));
            }
            "--host-ns" => {
                a.host_ns = Some(PathBuf::from(it.next().ok_or("--host-ns needs a file")?));
            }
            "--qemu-csv" => {
                a.qemu_csv = Some(PathBuf::from(it.next().ok_or("--qemu-csv needs a file")?));
            }
            "--switch-cost" => {
                let v = it.next().ok_or("--switch-cost needs a ring size")?;
                a.switch_cost = Some(
                    v.parse::<u16>()
                        .ok()
                        .filter(|n| (2..=64).contains(n))
                        .ok_or_else(|| format!("--switch-cost wants 2..=64, got `{v}`"))?,
                );
            }
            other => return Err(format!("unknown argument `{other}`")),
        }
    }
    if a.switch_cost.is_some() {
        return Ok(a);
    }
    a.out = out
        .ok_or("usage: bench-model [--quick] [--check] --out DIR [--plots DIR] [--host-ns FILE] [--qemu-csv FILE]")?;
    Ok(a)
}

/// `--switch-cost N`: the modelled cycles per switch of a ring of `n`.
fn switch_cost(a: &Args, n: u16) -> Result<(), BenchError> {
    let paths = match &a.qemu_csv {
        Some(p) => KernelPaths::from_qemu(&std::fs::read_to_string(p)?)?,
        None => KernelPaths::fallback()?,
    };
    for (mode, cycles) in suite::switch_cost(&paths, bench::model::Cpu::Sa1100, n, 0)? {
        let m = match mode {
            bench::model::Mode::Naive => "naive",
            bench::model::Mode::Fcse => "fcse",
            bench::model::Mode::Fass(..) => "fass",
        };
        println!("SWITCHCOST mode={m} cycles={cycles:.0}");
    }
    Ok(())
}

fn run(a: &Args) -> Result<(), BenchError> {
    if let Some(n) = a.switch_cost {
        return switch_cost(a, n);
    }
    let start = Instant::now();
    std::fs::create_dir_all(&a.out)?;
    let plots = a.plots.clone().unwrap_or_else(|| a.out.clone());
    std::fs::create_dir_all(&plots)?;
    let grid = suite::Grid { quick: a.quick };
    let paths = match &a.qemu_csv {
        Some(p) => KernelPaths::from_qemu(&std::fs::read_to_string(p)?)?,
        None => KernelPaths::fallback()?,
    };
    let count = AtomicUsize::new(0);
    let r = suite::run(grid, paths, |_| {
        count.fetch_add(1, Ordering::Relaxed);
    })?;
    let count = count.into_inner();
    let host = match &a.host_ns {
        Some(p) => report::parse_host_ns(&std::fs::read_to_string(p)?),
        None => report::HostNs::new(),
    };
    println!(
        "model grid: {count} runs ({}) in {:.1} s",
        if a.quick { "short form" } else { "full" },
        start.elapsed().as_secs_f64()
    );
    if a.check {
        let c = suite::check(&r)?;
        println!(
            "check ({} runs): {} FASS runs within the {} free domains (both rules): 0 whole-cache operations, 0 TLB invalidations, 0 full flushes; \
             {} exclusive-windows runs with {} < spaces <= {} (own PIDs): 0 full flushes, flush-free recycles seen; \
             {} conservative runs beyond the free domains: full flushes seen; {} naive runs: one full flush per switch",
            c.runs,
            c.steady,
            suite::FREE_DOMAINS,
            c.exclusive,
            suite::FREE_DOMAINS,
            suite::FREE_PIDS,
            c.conservative,
            c.naive
        );
    }
    let mem = memory::measure()?;
    let mut md = String::new();
    md.push_str("### Goals held against the model (modelled)\n\n");
    md.push_str(&report::model_goals(&r));
    md.push_str("### lat_ctx and IPC with the real kernel path, against the published hardware and L4 figures (modelled)\n\n");
    md.push_str(&report::anchors(&r));
    md.push_str("### The kernel path the model runs\n\n");
    md.push_str(&report::kernel_path(&r));
    md.push_str("### Memory (sizes of the real types; not modelled)\n\n");
    md.push_str(&report::memory_table(&mem));
    md.push_str("### Modelled cycles per switch and per round trip\n\n");
    md.push_str(&report::main_tables(&r));
    md.push_str("### Detail per mode and policy (modelled)\n\n");
    for cpu in bench::model::Cpu::ALL {
        md.push_str(&report::detail_table(&r, cpu));
    }
    md.push_str("### Domain-recycling policies (modelled)\n\n");
    md.push_str(&report::policy_tables(&r, &host));
    let md_path = a.out.join("model.md");
    std::fs::write(&md_path, &md)?;
    std::fs::write(a.out.join("model.csv"), report::csv(&r))?;
    plot::switch_cost(&r, &plots.join("switch_cost.png"))?;
    plot::policies(&r, &plots.join("policies.png"))?;
    plot::lat_ctx(&r, &plots.join("lat_ctx.png"))?;
    print!("{md}");
    println!(
        "wrote {}, {}, {} and {} ({:.1} s)",
        md_path.display(),
        a.out.join("model.csv").display(),
        plots.join("switch_cost.png").display(),
        plots.join("policies.png").display(),
        start.elapsed().as_secs_f64()
    );
    Ok(())
}

fn main() -> ExitCode {
    let a = match parse() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    match run(&a) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
