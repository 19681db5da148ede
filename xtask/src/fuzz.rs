//! `cargo xtask fuzz`: the cargo-fuzz targets under `fuzz/` (nightly,
//! libFuzzer), and their short run inside `cargo xtask test`.
//!
//! Each target starts from the committed, minimised corpus in
//! `fuzz/corpus/<target>/` and writes what it finds to a scratch corpus
//! under the workspace's target directory, so a run never changes the
//! checkout. A crash stops the run: libFuzzer writes the input under
//! `<target-dir>/fuzz/artifacts/<target>/` and the command fails, naming it.
//! The nightly toolchain and `cargo-fuzz` are installed when missing.

use std::path::Path;
use std::process::Command;

use crate::cargo;
use crate::setup::{ensure_cargo_tool, ensure_toolchain, toolchain_cargo, NIGHTLY};
use crate::{Error, Result};

/// The fuzz targets (`fuzz/fuzz_targets/<name>.rs`), each checking one
/// crate's public API against a reference model:
/// - `mapper`: mmu-armv5 page-table sequences against a page map and
///   `translate`, with table-memory accounting;
/// - `fass`: the FASS manager and the classic strategies on the armv5-sim
///   model, for isolation between address spaces;
/// - `spm`: the spm frame table and page exchange on the model, against the
///   documented frame-state transitions and the pages' content.
pub const TARGETS: [&str; 3] = ["mapper", "fass", "spm"];

/// Seconds each target runs inside `cargo xtask test`.
pub const SHORT_SECONDS: u64 = 15;

/// Options of `cargo xtask fuzz`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FuzzOpts {
    /// Seconds per target.
    pub seconds: u64,
    /// Targets to run (default: all of [`TARGETS`]).
    pub targets: Vec<String>,
}

impl Default for FuzzOpts {
    fn default() -> Self {
        FuzzOpts {
            seconds: 60,
            targets: Vec::new(),
        }
    }
}

/// What one target's run did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FuzzReport {
    /// The target.
    pub target: String,
    /// Inputs executed (libFuzzer's `Done N runs` line).
    pub runs: Option<u64>,
}

/// Builds and runs the chosen targets, one after another.
pub fn run(opts: &FuzzOpts) -> Result<Vec<FuzzReport>> {
    let targets: Vec<String> = if opts.targets.is_empty() {
        TARGETS.iter().map(|t| t.to_string()).collect()
    } else {
        opts.targets.clone()
    };
    for t in &targets {
        if !TARGETS.contains(&t.as_str()) {
            return Err(Error::Usage(format!(
                "unknown fuzz target `{t}` (targets: {})",
                TARGETS.join(", ")
            )));
        }
    }
    ensure_toolchain(NIGHTLY, &["rust-src"])?;
    ensure_cargo_tool("cargo-fuzz", "cargo-fuzz")?;
    let work = cargo::target_dir()?.join("fuzz");
    let build = work.join("build");
    let mut reports = Vec::new();
    for t in &targets {
        let scratch = work.join("corpus").join(t);
        let artifacts = work.join("artifacts").join(t);
        for d in [&scratch, &artifacts] {
            std::fs::create_dir_all(d).map_err(|e| io(format!("creating {}", d.display()), e))?;
        }
        let log = work.join(format!("{t}.log"));
        let committed = crate::repo_root().join("fuzz").join("corpus").join(t);
        let mut cmd = fuzz_command(&build);
        // New inputs go to the first corpus directory: the scratch one.
        cmd.args(["run", "-O", t.as_str()]).arg(&scratch);
        if committed.is_dir() {
            cmd.arg(&committed);
        }
        cmd.arg("--")
            .arg(format!("-max_total_time={}", opts.seconds))
            .arg(format!("-artifact_prefix={}/", artifacts.display()));
        let file = std::fs::File::create(&log)
            .map_err(|e| io(format!("creating {}", log.display()), e))?;
        cmd.stderr(file);
        eprintln!(
            "xtask: fuzzing `{t}` for {} s (log: {})",
            opts.seconds,
            log.display()
        );
        let status = cmd.status().map_err(|e| Error::Spawn {
            command: format!("cargo +{NIGHTLY} fuzz run {t}"),
            source: e,
        })?;
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        let runs = done_runs(&text);
        if !status.success() {
            let tail: Vec<&str> = text.lines().rev().take(60).collect();
            for l in tail.into_iter().rev() {
                eprintln!("{l}");
            }
            return Err(Error::Check(format!(
                "fuzz target `{t}` failed ({status}); the input is under {}",
                artifacts.display()
            )));
        }
        match runs {
            Some(n) => eprintln!("xtask: `{t}`: {n} inputs in {} s, no failure", opts.seconds),
            None => eprintln!("xtask: `{t}`: done, no failure"),
        }
        reports.push(FuzzReport {
            target: t.clone(),
            runs,
        });
    }
    Ok(reports)
}

/// Lints the fuzz targets (their own workspace, so the clippy stage does
/// not see them) with clippy on the nightly toolchain, warnings denied,
/// with `--locked`: a change of the library crates' dependencies that
/// `fuzz/Cargo.lock` does not follow fails here.
pub fn clippy() -> Result<()> {
    ensure_toolchain(NIGHTLY, &["clippy"])?;
    let mut cmd = toolchain_cargo(NIGHTLY);
    cmd.current_dir(crate::repo_root().join("fuzz"))
        .env(
            "CARGO_TARGET_DIR",
            cargo::target_dir()?.join("fuzz").join("clippy"),
        )
        .args(["clippy", "--locked", "--bins", "--", "-D", "warnings"]);
    crate::cargo::run_checked(&mut cmd)
}

/// The `cargo +nightly fuzz` command for the `fuzz/` crate, building in
/// `build` (under the workspace's target directory), optimised with debug
/// assertions (`-O` keeps them in cargo-fuzz).
fn fuzz_command(build: &Path) -> Command {
    let mut cmd = toolchain_cargo(NIGHTLY);
    cmd.current_dir(crate::repo_root().join("fuzz"));
    cmd.arg("fuzz");
    // `run` and its options are appended by the caller; cargo-fuzz takes
    // its build options after the subcommand.
    cmd.env("CARGO_TARGET_DIR", build);
    cmd
}

/// The number in libFuzzer's final `Done N runs in S second(s)` line.
pub fn done_runs(stderr: &str) -> Option<u64> {
    stderr.lines().rev().find_map(|l| {
        let rest = l.strip_prefix("Done ")?;
        rest.split_whitespace().next()?.parse().ok()
    })
}

fn io(what: String, source: std::io::Error) -> Error {
    Error::Io { what, source }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_run_count_is_read_from_libfuzzers_last_line() {
        let log = "#1024\tpulse  cov: 10\nDone 32813 runs in 21 second(s)\n";
        assert_eq!(done_runs(log), Some(32813));
        assert_eq!(done_runs("INFO: nothing\n"), None);
    }

    #[test]
    fn every_target_has_its_file() {
        for t in TARGETS {
            let p = crate::repo_root()
                .join("fuzz")
                .join("fuzz_targets")
                .join(format!("{t}.rs"));
            assert!(p.is_file(), "{}", p.display());
        }
    }
}
