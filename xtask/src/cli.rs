//! The `cargo xtask` command line.

use std::time::Duration;

use crate::board::Board;
use crate::{Error, Result};

/// Default time limit for one QEMU run.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// Usage text.
pub const USAGE: &str = "\
usage: cargo xtask <command> [options]

commands:
  run     build the demo kernel and boot it in qemu-system-arm (default versatilepb,
          ARM926EJ-S; --board collie: StrongARM SA-1110, --board connex: XScale PXA255);
          without --append/--icount: a short demonstration (ring and IPC under naive,
          FCSE-only and FASS, counted with -icount) printed as a table; with them:
          boots with that command line and exits with the kernel's status
  test    every check in order: fmt, clippy, host tests, docs, ARM builds of the
          no_std crates (ARMv5TE and StrongARM ARMv4), the embedding example,
          in-kernel tests under QEMU, QEMU integration tests; stops at the
          first failure
  build   build the demo kernel only (prints the ELF path; --board as for run)
  bench   benchmarks: model tables and plots (docs/), criterion microbenchmarks
          (short configuration), QEMU instruction counts; updates docs/benchmarks.md
  outside the benchmark contract's boots counted from outside the kernel (cache-check
          plugin, transits): writes <target>/bench/outside.csv, compares with the
          kernel's BENCH lines (--board and --timeout as for bench)
  mutants mutation testing (cargo-mutants, installed if missing) of the isolation-,
          permission- and flush-critical files; prints the score per file
  fuzz    the cargo-fuzz targets (mapper, fass, spm; nightly and cargo-fuzz installed
          if missing), from the committed corpus, new inputs under target/fuzz/
  miri    the library crates' tests under Miri: the set `cargo xtask test` runs, or with
          --full every test it leaves out too (docs/testing.md, \"Miri\")

options (run):
  --board NAME      versatilepb (default), collie or connex (also for build)
  --timeout SECS    kill QEMU after SECS seconds (default 60)
  --append TEXT     kernel command line (e.g. \"test\", \"test only=NAME\", \"demo\",
                    \"scenario=tcm mode=fass\")
  --icount SHIFT    deterministic instruction counting (-icount shift=SHIFT,sleep=off)
  --measure         boot the measuring build (feature `measure`: transit stamps on the
                    kernel paths, BENCH/TRANSITS/SWITCHPATH lines; what bench boots)
  --cache-check     build the kernel with the cache-check markers and boot it under the
                    cache-check QEMU plugin (VIVT cache and TLB model of the board's CPU);
                    prints the violations, exits non-zero on any (default command line: test)
options (test):
  --timeout SECS    time limit of each QEMU run (default 60)
  --skip KEY        do not run a stage (repeatable; keys: fmt clippy host-tests
                    model-bench docs package arm-v5te arm-v4 embed msrv miri fuzz
                    kernel cache-check integration); skipped stages do not count as passed
options (mutants):
  --file PATH       mutate this file (repeatable; default: the critical files,
                    `xtask::mutants::DEFAULT_FILES`)
  --shard K/N       only the K-th (from 0) of N shards of the mutants
  --jobs N          parallel cargo-mutants jobs (default 1)
  --summary         only print the scores of the outcomes collected so far
options (fuzz):
  --seconds N       run each target N seconds (default 60)
  --target T        only this target (repeatable)
options (bench):
  --full            criterion's default (longer) measurement instead of the short one
  --board NAME      also measure the QEMU counts on collie or connex (repeatable;
                    versatilepb is always measured, the model uses its counts)
  --timeout SECS    time limit of each QEMU run (default 60)
";

/// Options of `cargo xtask run`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunOpts {
    /// QEMU time limit.
    pub timeout: Duration,
    /// Kernel command line (`-append`).
    pub append: Option<String>,
    /// `-icount shift=N,sleep=off`.
    pub icount: Option<u8>,
    /// The board.
    pub board: Board,
    /// Boot the measuring build (`--measure`:
    /// [`crate::cargo::build_measuring_kernel_for`]).
    pub measure: bool,
    /// Boot under the cache-check plugin.
    pub cache_check: bool,
}

/// A parsed `cargo xtask` command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Command {
    /// Build and boot the demo kernel.
    Run(RunOpts),
    /// Run every check.
    Test {
        /// QEMU time limit per run.
        timeout: Duration,
        /// Stage keys to skip.
        skip: Vec<String>,
    },
    /// Build the kernel only, for this board.
    Build(Board),
    /// Run the benchmarks.
    Bench {
        /// Criterion's default configuration instead of the short one.
        full: bool,
        /// QEMU time limit per scenario.
        timeout: Duration,
        /// Boards measured besides versatilepb (`--board`, repeatable).
        boards: Vec<Board>,
    },
    /// The outside-counted benchmark figures.
    Outside {
        /// QEMU time limit per boot.
        timeout: Duration,
        /// Boards besides versatilepb.
        boards: Vec<Board>,
    },
    /// Mutation testing.
    Mutants(crate::mutants::MutantsOpts),
    /// Fuzzing.
    Fuzz(crate::fuzz::FuzzOpts),
    /// The Miri runs (`--full`: [`crate::miri::Set::Full`]).
    Miri {
        /// Every test, not only the stage's set.
        full: bool,
    },
    /// Print usage.
    Help,
}

fn value<'a>(it: &mut impl Iterator<Item = &'a str>, flag: &str) -> Result<&'a str> {
    it.next()
        .ok_or_else(|| Error::Usage(format!("{flag} needs a value\n\n{USAGE}")))
}

fn parse_timeout(s: &str) -> Result<Duration> {
    match s.parse::<u64>() {
        Ok(n) if n > 0 => Ok(Duration::from_secs(n)),
        _ => Err(Error::Usage(format!(
            "--timeout wants a positive number of seconds, got `{s}`"
        ))),
    }
}

/// Parses the arguments after `cargo xtask`.
pub fn parse<'a>(args: impl IntoIterator<Item = &'a str>) -> Result<Command> {
    let mut it = args.into_iter();
    let Some(cmd) = it.next() else {
        return Ok(Command::Help);
    };
    match cmd {
        "run" => {
            let mut opts = RunOpts {
                timeout: DEFAULT_TIMEOUT,
                append: None,
                icount: None,
                board: Board::default(),
                measure: false,
                cache_check: false,
            };
            while let Some(a) = it.next() {
                match a {
                    "--board" => opts.board = Board::parse(value(&mut it, a)?)?,
                    "--timeout" => opts.timeout = parse_timeout(value(&mut it, a)?)?,
                    "--append" => opts.append = Some(value(&mut it, a)?.to_string()),
                    "--measure" => opts.measure = true,
                    "--cache-check" => opts.cache_check = true,
                    "--icount" => {
                        let v = value(&mut it, a)?;
                        opts.icount =
                            Some(v.parse::<u8>().ok().filter(|s| *s <= 10).ok_or_else(|| {
                                Error::Usage(format!("--icount wants a shift 0..=10, got `{v}`"))
                            })?);
                    }
                    _ => {
                        return Err(Error::Usage(format!(
                            "unknown option `{a}` for run\n\n{USAGE}"
                        )))
                    }
                }
            }
            Ok(Command::Run(opts))
        }
        "test" => {
            let mut timeout = DEFAULT_TIMEOUT;
            let mut skip = Vec::new();
            while let Some(a) = it.next() {
                match a {
                    "--timeout" => timeout = parse_timeout(value(&mut it, a)?)?,
                    "--skip" => {
                        let k = value(&mut it, a)?;
                        if !crate::stages::all().iter().any(|s| s.key == k) {
                            return Err(Error::Usage(format!(
                                "unknown stage `{k}` for --skip\n\n{USAGE}"
                            )));
                        }
                        skip.push(k.to_string());
                    }
                    _ => {
                        return Err(Error::Usage(format!(
                            "unknown option `{a}` for test\n\n{USAGE}"
                        )))
                    }
                }
            }
            Ok(Command::Test { timeout, skip })
        }
        "outside" => {
            let mut timeout = DEFAULT_TIMEOUT;
            let mut boards = Vec::new();
            while let Some(a) = it.next() {
                match a {
                    "--board" => {
                        let b = Board::parse(value(&mut it, a)?)?;
                        if b != Board::Versatilepb && !boards.contains(&b) {
                            boards.push(b);
                        }
                    }
                    "--timeout" => timeout = parse_timeout(value(&mut it, a)?)?,
                    _ => {
                        return Err(Error::Usage(format!(
                            "unknown option `{a}` for outside\n\n{USAGE}"
                        )))
                    }
                }
            }
            Ok(Command::Outside { timeout, boards })
        }
        "bench" => {
            let mut full = false;
            let mut timeout = DEFAULT_TIMEOUT;
            let mut boards = Vec::new();
            while let Some(a) = it.next() {
                match a {
                    "--full" => full = true,
                    "--board" => {
                        let b = Board::parse(value(&mut it, a)?)?;
                        if b != Board::Versatilepb && !boards.contains(&b) {
                            boards.push(b);
                        }
                    }
                    "--timeout" => timeout = parse_timeout(value(&mut it, a)?)?,
                    _ => {
                        return Err(Error::Usage(format!(
                            "unknown option `{a}` for bench\n\n{USAGE}"
                        )))
                    }
                }
            }
            Ok(Command::Bench {
                full,
                timeout,
                boards,
            })
        }
        "mutants" => {
            let mut opts = crate::mutants::MutantsOpts::default();
            while let Some(a) = it.next() {
                match a {
                    "--file" => opts.files.push(value(&mut it, a)?.to_string()),
                    "--shard" => {
                        let v = value(&mut it, a)?;
                        opts.shard = Some(crate::mutants::parse_shard(v).ok_or_else(|| {
                            Error::Usage(format!("--shard wants K/N with K < N, got `{v}`"))
                        })?);
                    }
                    "--jobs" => {
                        let v = value(&mut it, a)?;
                        opts.jobs = Some(v.parse().ok().filter(|j| *j > 0).ok_or_else(|| {
                            Error::Usage(format!("--jobs wants a positive number, got `{v}`"))
                        })?);
                    }
                    "--summary" => opts.summary_only = true,
                    _ => {
                        return Err(Error::Usage(format!(
                            "unknown option `{a}` for mutants\n\n{USAGE}"
                        )))
                    }
                }
            }
            Ok(Command::Mutants(opts))
        }
        "miri" => {
            let mut full = false;
            for a in it {
                match a {
                    "--full" => full = true,
                    _ => {
                        return Err(Error::Usage(format!(
                            "unknown option `{a}` for miri\n\n{USAGE}"
                        )))
                    }
                }
            }
            Ok(Command::Miri { full })
        }
        "fuzz" => {
            let mut opts = crate::fuzz::FuzzOpts::default();
            while let Some(a) = it.next() {
                match a {
                    "--seconds" => {
                        let v = value(&mut it, a)?;
                        opts.seconds = v.parse().ok().filter(|n| *n > 0).ok_or_else(|| {
                            Error::Usage(format!("--seconds wants a positive number, got `{v}`"))
                        })?;
                    }
                    "--target" => opts.targets.push(value(&mut it, a)?.to_string()),
                    _ => {
                        return Err(Error::Usage(format!(
                            "unknown option `{a}` for fuzz\n\n{USAGE}"
                        )))
                    }
                }
            }
            Ok(Command::Fuzz(opts))
        }
        "build" => {
            let mut board = Board::default();
            while let Some(a) = it.next() {
                match a {
                    "--board" => board = Board::parse(value(&mut it, a)?)?,
                    _ => {
                        return Err(Error::Usage(format!(
                            "unknown option `{a}` for build\n\n{USAGE}"
                        )))
                    }
                }
            }
            Ok(Command::Build(board))
        }
        "help" | "-h" | "--help" => Ok(Command::Help),
        other => Err(Error::Usage(format!(
            "unknown command `{other}`\n\n{USAGE}"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn miri_takes_the_stage_set_or_full() {
        assert_eq!(parse(["miri"]).unwrap(), Command::Miri { full: false });
        assert_eq!(
            parse(["miri", "--full"]).unwrap(),
            Command::Miri { full: true }
        );
    }

    #[test]
    fn no_arguments_is_help() {
        assert_eq!(parse([]).unwrap(), Command::Help);
    }

    #[test]
    fn run_defaults_and_options() {
        assert_eq!(
            parse(["run"]).unwrap(),
            Command::Run(RunOpts {
                timeout: DEFAULT_TIMEOUT,
                append: None,
                icount: None,
                board: Board::Versatilepb,
                measure: false,
                cache_check: false,
            })
        );
        assert_eq!(
            parse([
                "run",
                "--timeout",
                "5",
                "--append",
                "test only=x",
                "--icount",
                "10",
                "--board",
                "collie",
                "--measure"
            ])
            .unwrap(),
            Command::Run(RunOpts {
                timeout: Duration::from_secs(5),
                append: Some("test only=x".into()),
                icount: Some(10),
                board: Board::Collie,
                measure: true,
                cache_check: false,
            })
        );
        assert_eq!(
            parse(["run", "--cache-check", "--board", "connex"]).unwrap(),
            Command::Run(RunOpts {
                timeout: DEFAULT_TIMEOUT,
                append: None,
                icount: None,
                board: Board::Connex,
                measure: false,
                cache_check: true,
            })
        );
        assert!(parse(["run", "--board", "zaurus"]).is_err());
        assert!(parse(["run", "--board"]).is_err());
    }

    #[test]
    fn test_and_build() {
        assert_eq!(
            parse(["test"]).unwrap(),
            Command::Test {
                timeout: DEFAULT_TIMEOUT,
                skip: vec![]
            }
        );
        assert_eq!(
            parse([
                "test",
                "--timeout",
                "7",
                "--skip",
                "fmt",
                "--skip",
                "clippy"
            ])
            .unwrap(),
            Command::Test {
                timeout: Duration::from_secs(7),
                skip: vec!["fmt".into(), "clippy".into()]
            }
        );
        assert_eq!(
            parse(["build"]).unwrap(),
            Command::Build(Board::Versatilepb)
        );
        assert_eq!(
            parse(["build", "--board", "connex"]).unwrap(),
            Command::Build(Board::Connex)
        );
        assert_eq!(
            parse(["bench"]).unwrap(),
            Command::Bench {
                full: false,
                timeout: DEFAULT_TIMEOUT,
                boards: vec![]
            }
        );
        assert_eq!(
            parse([
                "bench",
                "--board",
                "connex",
                "--board",
                "versatilepb",
                "--board",
                "collie",
                "--board",
                "connex"
            ])
            .unwrap(),
            Command::Bench {
                full: false,
                timeout: DEFAULT_TIMEOUT,
                boards: vec![Board::Connex, Board::Collie]
            }
        );
        assert_eq!(
            parse(["bench", "--full", "--timeout", "9"]).unwrap(),
            Command::Bench {
                full: true,
                timeout: Duration::from_secs(9),
                boards: vec![]
            }
        );
    }

    #[test]
    fn outside_options() {
        assert_eq!(
            parse(["outside", "--board", "collie", "--timeout", "9"]).unwrap(),
            Command::Outside {
                timeout: Duration::from_secs(9),
                boards: vec![Board::Collie]
            }
        );
    }

    #[test]
    fn fuzz_options() {
        assert_eq!(
            parse(["fuzz"]).unwrap(),
            Command::Fuzz(crate::fuzz::FuzzOpts::default())
        );
        assert_eq!(
            parse(["fuzz", "--seconds", "600", "--target", "spm"]).unwrap(),
            Command::Fuzz(crate::fuzz::FuzzOpts {
                seconds: 600,
                targets: vec!["spm".to_string()],
            })
        );
        for bad in [
            &["fuzz", "--seconds", "0"][..],
            &["fuzz", "--target"],
            &["fuzz", "-x"],
        ] {
            assert!(
                matches!(parse(bad.iter().copied()), Err(Error::Usage(_))),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn mutants_options() {
        assert_eq!(
            parse(["mutants"]).unwrap(),
            Command::Mutants(crate::mutants::MutantsOpts::default())
        );
        assert_eq!(
            parse(["mutants", "--file", "a.rs", "--file", "b.rs", "--shard", "1/3", "--jobs", "2"])
                .unwrap(),
            Command::Mutants(crate::mutants::MutantsOpts {
                files: vec!["a.rs".into(), "b.rs".into()],
                shard: Some((1, 3)),
                jobs: Some(2),
                summary_only: false,
            })
        );
    }

    #[test]
    fn bad_usage_is_an_error() {
        for args in [
            &["frobnicate"][..],
            &["run", "--timeout"],
            &["run", "--timeout", "0"],
            &["run", "--timeout", "x"],
            &["run", "--icount", "11"],
            &["run", "--bogus"],
            &["test", "--append", "x"],
            &["test", "--skip", "nonsense"],
            &["test", "--skip"],
            &["build", "extra"],
            &["bench", "--quick"],
            &["outside", "--full"],
            &["mutants", "--shard", "2/2"],
            &["mutants", "--jobs", "0"],
            &["mutants", "--file"],
            &["miri", "--quick"],
        ] {
            assert!(
                matches!(parse(args.iter().copied()), Err(Error::Usage(_))),
                "{args:?}"
            );
        }
    }
}
