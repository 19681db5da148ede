//! The checks of `cargo xtask test`, in order. The first failure stops the
//! run; every stage prints a header, and the run ends with one summary line
//! `N passed, M failed` counting stages.

use std::time::{Duration, Instant};

use crate::board::Board;
use crate::cargo::{
    self, arm_cargo, run_checked, ARMV4T, ARMV5TE, KERNEL, NO_STD_CRATES, STRONGARM_RUSTFLAGS,
};
use crate::qemu::{self, Ending, QemuOutcome};
use crate::{Error, Result};

/// Host library crates whose docs must build without warnings.
pub const DOC_CRATES: [&str; 4] = ["mmu-armv5", "fass", "spm", "armv5-sim"];
/// Library crates packaged as they would be published (the `package` stage).
pub const PACKAGE_CRATES: [&str; 4] = ["mmu-armv5", "fass", "spm", "armv5-sim"];
/// The optional features of the library crates that the host stages
/// (clippy, tests, docs) and the ARM builds enable, so that their code is
/// linted, tested, documented and built for ARM too: `spm`'s `Mappings`
/// over `fass` spaces.
pub const LIB_FEATURES: &str = "spm/fass";
/// Kernel command line that runs the in-kernel tests.
pub const KERNEL_TEST_CMDLINE: &str = "test";

/// One check.
pub struct Stage {
    /// Short name, printed in headers and the failure message.
    pub name: &'static str,
    /// Key for `--skip`.
    pub key: &'static str,
    run: fn(&Settings) -> Result<()>,
}

/// Settings shared by the stages.
#[derive(Clone, Debug)]
pub struct Settings {
    /// Time limit of each QEMU run.
    pub qemu_timeout: Duration,
    /// Keys of stages not to run (counted neither passed nor failed).
    pub skip: Vec<String>,
}

/// Every stage, in the order they run.
pub fn all() -> Vec<Stage> {
    vec![
        Stage {
            name: "fmt",
            key: "fmt",
            run: fmt,
        },
        Stage {
            name: "clippy",
            key: "clippy",
            run: clippy,
        },
        Stage {
            name: "host tests",
            key: "host-tests",
            run: host_tests,
        },
        Stage {
            name: "model benchmarks (short form)",
            key: "model-bench",
            run: model_bench,
        },
        Stage {
            name: "docs",
            key: "docs",
            run: docs,
        },
        Stage {
            name: "package",
            key: "package",
            run: package,
        },
        Stage {
            name: "ARMv5TE no_std builds",
            key: "arm-v5te",
            run: arm_v5te,
        },
        Stage {
            name: "StrongARM (ARMv4) no_std builds",
            key: "arm-v4",
            run: arm_v4,
        },
        Stage {
            name: "embedding example (porting.md snippets, host tests, ARMv5TE build)",
            key: "embed",
            run: embed,
        },
        Stage {
            name: "MSRV (Rust 1.87) builds",
            key: "msrv",
            run: msrv,
        },
        Stage {
            name: "Miri (undefined behaviour in the library crates' tests)",
            key: "miri",
            run: miri,
        },
        Stage {
            name: "fuzzing, short (each cargo-fuzz target 15 s)",
            key: "fuzz",
            run: fuzz_short,
        },
        Stage {
            name: "kernel tests under QEMU (versatilepb, collie, connex)",
            key: "kernel",
            run: kernel_tests,
        },
        Stage {
            name: "cache check under the QEMU plugin (versatilepb, collie, connex; every omission reported)",
            key: "cache-check",
            run: cache_check,
        },
        Stage {
            name: "QEMU integration tests",
            key: "integration",
            run: integration,
        },
    ]
}

fn embed(_: &Settings) -> Result<()> {
    crate::embed::run()
}

fn miri(_: &Settings) -> Result<()> {
    crate::miri::run(crate::miri::Set::Stage)
}

fn fuzz_short(_: &Settings) -> Result<()> {
    crate::fuzz::clippy()?;
    crate::fuzz::run(&crate::fuzz::FuzzOpts {
        seconds: crate::fuzz::SHORT_SECONDS,
        targets: Vec::new(),
    })
    .map(|_| ())
}

fn fmt(_: &Settings) -> Result<()> {
    run_checked(cargo::cargo().args(["fmt", "--all", "--check"]))?;
    // The fuzz targets and the embedding example are their own workspaces.
    for manifest in ["fuzz/Cargo.toml", crate::embed::MANIFEST] {
        run_checked(cargo::cargo().args(["fmt", "--all", "--check", "--manifest-path", manifest]))?;
    }
    Ok(())
}

fn clippy(_: &Settings) -> Result<()> {
    // Default members = the host crates; the kernel is linted for ARM below.
    run_checked(cargo::cargo().args([
        "clippy",
        "--all-targets",
        "--features",
        LIB_FEATURES,
        "--",
        "-D",
        "warnings",
    ]))
}

fn host_tests(_: &Settings) -> Result<()> {
    run_checked(cargo::cargo().args([
        "test",
        "--workspace",
        "--exclude",
        "tests",
        "--exclude",
        KERNEL,
        "--features",
        LIB_FEATURES,
    ]))
}

/// The short form of the model benchmarks: a small grid with its checks
/// (FASS steady state without flushes, naive flushing every switch), the
/// tables and the plots, into `<target>/bench-quick`.
fn model_bench(_: &Settings) -> Result<()> {
    crate::bench::quick()
}

fn docs(_: &Settings) -> Result<()> {
    let mut cmd = cargo::cargo();
    cmd.args(["doc", "--no-deps"])
        .env("RUSTDOCFLAGS", "-D warnings");
    for c in DOC_CRATES {
        cmd.args(["-p", c]);
    }
    cmd.args(["--features", LIB_FEATURES]);
    run_checked(&mut cmd)
}

/// The library crates package as they would be published:
/// `cargo package --locked --allow-dirty -p mmu-armv5 -p fass -p spm -p armv5-sim`.
///
/// Checks each manifest (metadata, `readme`, every path dependency between
/// them also carrying a version), the file list, and that each `.crate`
/// builds on its own from its packaged contents (verification is on). The
/// four are packaged in one invocation because none is on crates.io: Cargo
/// (1.90 and later) then resolves their dependencies on each other through
/// a local overlay registry of the just-packaged crates under
/// `<target>/package`, where `cargo package -p fass` alone would look for
/// `mmu-armv5` on crates.io and fail. `--locked`: `Cargo.lock` must not
/// change. `--allow-dirty`, like the other stages, checks the working tree
/// as it is, committed or not.
fn package(_: &Settings) -> Result<()> {
    forget_stale_packages()?;
    let mut cmd = cargo::cargo();
    cmd.args(["package", "--locked", "--allow-dirty"]);
    for c in PACKAGE_CRATES {
        cmd.args(["-p", c]);
    }
    run_checked(&mut cmd)
}

/// Removes Cargo's extracted copies of the packaged crates from earlier
/// `cargo package` runs.
///
/// Verification unpacks each just-packaged crate from the overlay registry
/// into `$CARGO_HOME/registry/src/<registry id>/<name>-<version>`, the id
/// derived from the registry's path, and Cargo never unpacks again into a
/// directory that exists: a second checkout at the same path (a CI clone
/// made again) would verify `armv5-sim` against the `mmu-armv5` sources of
/// the first. Local registries' ids start with `-` (crates.io's name their
/// host), so only those copies of these four crates are removed.
fn forget_stale_packages() -> Result<()> {
    let Some(home) = std::env::var_os("CARGO_HOME")
        .map(std::path::PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| std::path::PathBuf::from(h).join(".cargo")))
    else {
        return Ok(());
    };
    let Ok(registries) = std::fs::read_dir(home.join("registry").join("src")) else {
        return Ok(());
    };
    for reg in registries.flatten() {
        if !reg.file_name().to_string_lossy().starts_with('-') {
            continue;
        }
        let Ok(crates) = std::fs::read_dir(reg.path()) else {
            continue;
        };
        for c in crates.flatten() {
            let name = c.file_name().to_string_lossy().into_owned();
            if is_packaged_copy(&name) {
                std::fs::remove_dir_all(c.path()).map_err(|e| {
                    Error::Check(format!("cannot remove {}: {e}", c.path().display()))
                })?;
            }
        }
    }
    Ok(())
}

/// Whether `dir` (`<name>-<version>`) is an unpacked copy of one of
/// [`PACKAGE_CRATES`].
fn is_packaged_copy(dir: &str) -> bool {
    PACKAGE_CRATES.iter().any(|c| {
        dir.strip_prefix(c)
            .and_then(|v| v.strip_prefix('-'))
            .is_some_and(|v| v.starts_with(|d: char| d.is_ascii_digit()))
    })
}

fn arm_libs(target: &str, rustflags: Option<&str>) -> Result<()> {
    crate::setup::ensure_rust_src()?;
    let mut cmd = arm_cargo("build", target);
    for c in NO_STD_CRATES {
        cmd.args(["-p", c]);
    }
    cmd.args(["--features", LIB_FEATURES]);
    if let Some(f) = rustflags {
        cmd.env("RUSTFLAGS", f);
    }
    run_checked(&mut cmd)
}

fn arm_v5te(_: &Settings) -> Result<()> {
    arm_libs(ARMV5TE, None)
}

fn arm_v4(_: &Settings) -> Result<()> {
    arm_libs(ARMV4T, Some(STRONGARM_RUSTFLAGS))
}

/// The declared `rust-version` ([`crate::setup::MSRV`]) holds: the host
/// crates (libraries and binaries) check, and the `no_std` crates build for
/// ARMv5TE, with that toolchain (installed by rustup when missing). Their
/// tests are not built: proptest, a dev-dependency, needs a newer Rust.
fn msrv(_: &Settings) -> Result<()> {
    use crate::setup::{ensure_toolchain, toolchain_cargo, MSRV};
    ensure_toolchain(MSRV, &["rust-src"])?;
    let dir = cargo::target_dir()?.join("msrv");
    let mut host = toolchain_cargo(MSRV);
    host.args(["check", "--lib", "--bins", "--target-dir"])
        .arg(&dir)
        .args(MSRV_HOST_CRATES.iter().flat_map(|c| ["-p", c]));
    run_checked(&mut host)?;
    let mut arm = toolchain_cargo(MSRV);
    arm.env("RUSTC_BOOTSTRAP", "1")
        .args([
            "build",
            "--target",
            ARMV5TE,
            "-Zbuild-std=core",
            "--target-dir",
        ])
        .arg(&dir)
        .args(NO_STD_CRATES.iter().flat_map(|c| ["-p", c]));
    run_checked(&mut arm)
}

/// Host crates the MSRV stage checks: the libraries and the tools built on them.
pub const MSRV_HOST_CRATES: [&str; 6] = [
    "mmu-armv5",
    "fass",
    "spm",
    "armv5-sim",
    "mmu-difftest",
    "bench",
];

/// Per board (versatilepb, collie, connex): clippy of the kernel and the
/// user program for the board's target, the build, and the in-kernel tests
/// (the differential test among them) under QEMU.
fn kernel_tests(s: &Settings) -> Result<()> {
    crate::setup::ensure_rust_src()?;
    for board in Board::ALL {
        println!("== board {}", board.name());
        let mut lint = cargo::kernel_cargo_for("clippy", board)?;
        lint.args(["-p", cargo::USER, "--", "-D", "warnings"]);
        run_checked(&mut lint)?;
        if board == Board::Versatilepb {
            // The measuring build's code (`measure`), in its own target
            // directory as `cargo::build_measuring_kernel_for` builds it.
            let mut lint = cargo::kernel_cargo_for("clippy", board)?;
            lint.args(["--features", cargo::MEASURE_FEATURE, "--target-dir"])
                .arg(cargo::target_dir()?.join("measure"))
                .args(["--", "-D", "warnings"]);
            run_checked(&mut lint)?;
        }
        let elf = cargo::build_kernel_for(board)?;
        let out = qemu::boot_on(board, &elf, s.qemu_timeout, Some(KERNEL_TEST_CMDLINE), true)?;
        let passed = kernel_test_verdict(&out).inspect_err(|_| {
            if !out.stderr.trim().is_empty() {
                eprintln!("QEMU stderr:\n{}", out.stderr.trim_end());
            }
        })?;
        println!("in-kernel tests on {}: {passed} passed", board.name());
    }
    Ok(())
}

fn cache_check(s: &Settings) -> Result<()> {
    crate::cachecheck::stage(s.qemu_timeout)
}

fn integration(_: &Settings) -> Result<()> {
    run_checked(cargo::cargo().args(["test", "-p", "tests"]))
}

/// Parses the kernel's summary line `kernel tests: N passed, M failed`.
pub fn parse_kernel_summary(text: &str) -> Option<(u32, u32)> {
    let rest = text.strip_prefix("kernel tests: ")?;
    let (p, f) = rest.split_once(" passed, ")?;
    let f = f.strip_suffix(" failed")?;
    Some((p.parse().ok()?, f.parse().ok()?))
}

/// Judges an in-kernel test run: QEMU exited 0, the kernel printed its
/// summary, at least one test passed and none failed. Returns the number passed.
pub fn kernel_test_verdict(out: &QemuOutcome) -> Result<u32> {
    let summary = out
        .lines
        .iter()
        .rev()
        .find_map(|l| parse_kernel_summary(&l.text));
    match (out.ending, summary) {
        (Ending::TimedOut, _) => Err(Error::Check(format!(
            "QEMU timed out; the last line above names the test that hung ({} lines decoded)",
            out.lines.len()
        ))),
        (Ending::Signalled, _) => Err(Error::Check("QEMU was killed by a signal".into())),
        (Ending::Exited(0), Some((passed, 0))) if passed > 0 => Ok(passed),
        (Ending::Exited(code), Some((passed, failed))) => Err(Error::Check(format!(
            "kernel exited with status {code}: {passed} passed, {failed} failed"
        ))),
        (Ending::Exited(code), None) => Err(Error::Check(format!(
            "kernel exited with status {code} without a test summary"
        ))),
    }
}

/// Runs `stages` in order, stopping at the first failure. Prints a header per
/// stage and the final `N passed, M failed` line. Returns whether all passed.
pub fn run(stages: &[Stage], settings: &Settings) -> bool {
    let total = stages.len();
    let mut passed = 0;
    let mut failed = 0;
    let mut skipped = 0;
    let mut times: Vec<(&str, f64)> = Vec::new();
    let all = Instant::now();
    for (i, stage) in stages.iter().enumerate() {
        println!("\n==> [{}/{}] {}", i + 1, total, stage.name);
        if settings.skip.iter().any(|k| k == stage.key) {
            skipped += 1;
            println!("==> {}: skipped (--skip {})", stage.name, stage.key);
            continue;
        }
        let start = Instant::now();
        match (stage.run)(settings) {
            Ok(()) => {
                passed += 1;
                let secs = start.elapsed().as_secs_f64();
                times.push((stage.key, secs));
                println!("==> {}: ok ({secs:.1} s)", stage.name);
            }
            Err(e) => {
                failed += 1;
                eprintln!("\nerror: stage `{}` failed: {e}", stage.name);
                break;
            }
        }
    }
    if !times.is_empty() {
        // One line per stage that ran, for the 20-minute budget of the
        // whole run (docs/testing.md).
        println!("\nstage times:");
        for (key, secs) in &times {
            println!("  {key:<12} {secs:>7.1} s");
        }
        println!("  {:<12} {:>7.1} s", "total", all.elapsed().as_secs_f64());
    }
    if failed == 0 {
        println!("\n{passed} of {total} stages passed, {skipped} skipped");
    } else {
        println!(
            "\nstopped after the first failure ({} of {total} stages not run)",
            total - passed - failed - skipped
        );
    }
    println!("{passed} passed, {failed} failed");
    failed == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::defmt_log::{Level, LogLine};

    #[test]
    fn only_unpacked_copies_of_the_packaged_crates_are_forgotten() {
        for d in [
            "mmu-armv5-0.1.0",
            "fass-0.1.0",
            "spm-0.2.3",
            "armv5-sim-0.1.0",
        ] {
            assert!(is_packaged_copy(d), "{d}");
        }
        for d in [
            "spmx-0.1.0",
            "fass",
            "fass-extra-1.0",
            "heapless-0.9.3",
            "mmu-armv5",
        ] {
            assert!(!is_packaged_copy(d), "{d}");
        }
    }

    fn outcome(ending: Ending, texts: &[&str]) -> QemuOutcome {
        QemuOutcome {
            ending,
            lines: texts
                .iter()
                .map(|t| LogLine {
                    level: Level::Info,
                    text: t.to_string(),
                })
                .collect(),
            stderr: String::new(),
            malformed: 0,
        }
    }

    #[test]
    fn summary_parses_only_the_exact_form() {
        assert_eq!(
            parse_kernel_summary("kernel tests: 7 passed, 0 failed"),
            Some((7, 0))
        );
        assert_eq!(
            parse_kernel_summary("kernel tests: 7 passed, 2 failed"),
            Some((7, 2))
        );
        assert_eq!(
            parse_kernel_summary("kernel tests: x passed, 0 failed"),
            None
        );
        assert_eq!(parse_kernel_summary("tests: 7 passed, 0 failed"), None);
        assert_eq!(
            parse_kernel_summary("kernel tests: 7 passed, 0 failed!"),
            None
        );
    }

    #[test]
    fn verdict_needs_exit_zero_a_summary_and_no_failures() {
        let ok = outcome(
            Ending::Exited(0),
            &["test a ... ok", "kernel tests: 1 passed, 0 failed"],
        );
        assert_eq!(kernel_test_verdict(&ok).unwrap(), 1);
        for bad in [
            outcome(Ending::Exited(0), &["kernel tests: 0 passed, 0 failed"]),
            outcome(Ending::Exited(1), &["kernel tests: 3 passed, 1 failed"]),
            outcome(Ending::Exited(0), &["kernel tests: 3 passed, 1 failed"]),
            outcome(Ending::Exited(0), &["no summary"]),
            outcome(Ending::Exited(101), &["panic: x"]),
            outcome(Ending::TimedOut, &["test hang ..."]),
            outcome(Ending::Signalled, &[]),
        ] {
            assert!(kernel_test_verdict(&bad).is_err(), "{:?}", bad.ending);
        }
    }

    #[test]
    fn stage_order_is_the_documented_one() {
        let names: Vec<_> = all().iter().map(|s| s.name).collect();
        assert_eq!(names.first(), Some(&"fmt"));
        assert_eq!(names.last(), Some(&"QEMU integration tests"));
        let pos = |n: &str| names.iter().position(|x| *x == n).unwrap();
        assert!(pos("clippy") < pos("host tests"));
        assert!(pos("docs") < pos("ARMv5TE no_std builds"));
        assert!(
            pos("StrongARM (ARMv4) no_std builds")
                < pos("kernel tests under QEMU (versatilepb, collie, connex)")
        );
        let embed = names
            .iter()
            .position(|n| n.starts_with("embedding example"));
        assert!(pos("ARMv5TE no_std builds") < embed.unwrap());
    }

    fn pass(_: &Settings) -> Result<()> {
        Ok(())
    }
    fn fail(_: &Settings) -> Result<()> {
        Err(Error::Check("boom".into()))
    }
    fn unreachable_stage(_: &Settings) -> Result<()> {
        panic!("a stage after a failure must not run")
    }

    #[test]
    fn run_stops_at_the_first_failure() {
        let s = Settings {
            qemu_timeout: Duration::from_secs(1),
            skip: vec![],
        };
        let st = |name, run| Stage {
            name,
            key: name,
            run,
        };
        assert!(run(&[st("a", pass), st("b", pass)], &s));
        assert!(!run(
            &[st("a", pass), st("b", fail), st("c", unreachable_stage)],
            &s
        ));
        let skip_b = Settings {
            qemu_timeout: Duration::from_secs(1),
            skip: vec!["b".into()],
        };
        assert!(run(&[st("a", pass), st("b", fail)], &skip_b));
    }

    #[test]
    fn msrv_stage_checks_the_declared_rust_version() {
        let manifest = std::fs::read_to_string(crate::repo_root().join("Cargo.toml")).unwrap();
        let declared = manifest
            .lines()
            .find_map(|l| l.trim().strip_prefix("rust-version = "))
            .map(|v| v.trim_matches('"'));
        assert_eq!(declared, Some(crate::setup::MSRV));
    }

    #[test]
    fn stage_keys_are_unique() {
        let keys: Vec<_> = all().iter().map(|s| s.key).collect();
        for (i, k) in keys.iter().enumerate() {
            assert!(!keys[i + 1..].contains(k), "{k}");
        }
    }
}
