//! `cargo xtask mutants`: mutation testing of the code that decides
//! isolation, permissions and flushes, with `cargo-mutants` (installed with
//! `cargo install cargo-mutants --locked` when missing).
//!
//! Each mutant is tested against its own crate's tests (`--test-workspace
//! false`, set in `.cargo/mutants.toml` together with the exclusions of the
//! mutants shown to be equivalent, each explained in `docs/testing.md`).
//! Every run writes its outcomes under `<target>/mutants/<label>/`; after a
//! run the scores are computed over all the outcomes found there (the
//! newest run of each mutant counts), so shards run one after another add
//! up to the whole.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::cargo;
use crate::setup::ensure_cargo_tool;
use crate::{Error, Result};

/// The files whose mutants `cargo xtask mutants` tests by default (issue 16:
/// the isolation-, permission- and flush-critical code).
pub const DEFAULT_FILES: [&str; 14] = [
    "crates/fass/src/pid.rs",
    "crates/fass/src/domain.rs",
    "crates/fass/src/policy.rs",
    "crates/fass/src/resolve.rs",
    "crates/fass/src/switch.rs",
    "crates/fass/src/manager.rs",
    "crates/fass/src/window.rs",
    "crates/mmu-armv5/src/translate.rs",
    "crates/mmu-armv5/src/descriptor/l1.rs",
    "crates/mmu-armv5/src/descriptor/l2.rs",
    "crates/mmu-armv5/src/descriptor/attr.rs",
    "crates/mmu-armv5/src/table/mapper.rs",
    "crates/spm/src/frame.rs",
    "crates/spm/src/exchange.rs",
];

/// Sequences of each `fass` model isolation property per mutant
/// (`FASS_PROPTEST_CASES`; the normal test runs 500-2,000).
pub const MUTANT_MODEL_CASES: u32 = 100;

/// Cases of the other property tests per mutant (`PROPTEST_CASES`, read by
/// the configurations built on proptest's default; 256 normally).
pub const MUTANT_PROPTEST_CASES: u32 = 32;

/// Options of `cargo xtask mutants`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MutantsOpts {
    /// Files to mutate (default: [`DEFAULT_FILES`]).
    pub files: Vec<String>,
    /// `k/n`: only the k-th of n shards of the mutants.
    pub shard: Option<(u32, u32)>,
    /// Parallel build/test jobs (default 1).
    pub jobs: Option<u32>,
    /// Only print the scores of the outcomes already collected.
    pub summary_only: bool,
}

/// Parses `k/n` with `0 <= k < n` (cargo-mutants numbers shards from 0).
pub fn parse_shard(s: &str) -> Option<(u32, u32)> {
    let (k, n) = s.split_once('/')?;
    let (k, n) = (k.parse().ok()?, n.parse().ok()?);
    (n > 0 && k < n).then_some((k, n))
}

/// What happened to one mutant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// A test failed: the mutant was caught.
    Caught,
    /// Every test passed: the mutant survived.
    Missed,
    /// The tests did not finish in time (counted as caught, listed).
    Timeout,
    /// The mutant did not build (not counted).
    Unviable,
}

/// One mutant's outcome.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MutantOutcome {
    /// The mutated file, relative to the repository.
    pub file: String,
    /// cargo-mutants' name of the mutant (file, line, column, change).
    pub name: String,
    /// Its outcome.
    pub outcome: Outcome,
}

/// Reads the mutant outcomes of one `mutants.out/outcomes.json`.
pub fn parse_outcomes(json: &str) -> Result<Vec<MutantOutcome>> {
    let v: serde_json::Value = serde_json::from_str(json)
        .map_err(|e| Error::Check(format!("outcomes.json is not JSON: {e}")))?;
    let list = v
        .get("outcomes")
        .and_then(|o| o.as_array())
        .ok_or_else(|| Error::Check("outcomes.json has no `outcomes` list".into()))?;
    let mut out = Vec::new();
    for o in list {
        let Some(m) = o.get("scenario").and_then(|s| s.get("Mutant")) else {
            continue; // the baseline
        };
        let field = |k: &str| {
            m.get(k)
                .and_then(|x| x.as_str())
                .map(str::to_string)
                .ok_or_else(|| Error::Check(format!("a mutant without `{k}` in outcomes.json")))
        };
        let outcome = match o.get("summary").and_then(|s| s.as_str()) {
            Some("CaughtMutant") => Outcome::Caught,
            Some("MissedMutant") => Outcome::Missed,
            Some("Timeout") => Outcome::Timeout,
            Some("Unviable") => Outcome::Unviable,
            other => {
                return Err(Error::Check(format!(
                    "unknown mutant outcome {other:?} in outcomes.json"
                )))
            }
        };
        out.push(MutantOutcome {
            file: field("file")?,
            name: field("name")?,
            outcome,
        });
    }
    Ok(out)
}

/// Scores of one file.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FileScore {
    /// Caught mutants.
    pub caught: u32,
    /// Survivors.
    pub missed: u32,
    /// Timeouts (counted as caught).
    pub timeout: u32,
    /// Mutants that did not build.
    pub unviable: u32,
    /// The survivors' names.
    pub survivors: Vec<String>,
}

impl FileScore {
    /// Caught (timeouts included) over the viable mutants, in percent;
    /// `None` without viable mutants.
    pub fn percent(&self) -> Option<f64> {
        let viable = self.caught + self.missed + self.timeout;
        (viable > 0).then(|| 100.0 * f64::from(self.caught + self.timeout) / f64::from(viable))
    }
}

/// Scores per file; a mutant seen several times counts with its last outcome.
pub fn scores(outcomes: &[MutantOutcome]) -> BTreeMap<String, FileScore> {
    let mut last: BTreeMap<&str, &MutantOutcome> = BTreeMap::new();
    for o in outcomes {
        last.insert(&o.name, o);
    }
    let mut per_file: BTreeMap<String, FileScore> = BTreeMap::new();
    for o in last.values() {
        let s = per_file.entry(o.file.clone()).or_default();
        match o.outcome {
            Outcome::Caught => s.caught += 1,
            Outcome::Missed => {
                s.missed += 1;
                s.survivors.push(o.name.clone());
            }
            Outcome::Timeout => s.timeout += 1,
            Outcome::Unviable => s.unviable += 1,
        }
    }
    per_file
}

/// The score table, as Markdown.
pub fn table(scores: &BTreeMap<String, FileScore>) -> String {
    let mut s = String::from(
        "| file | caught | missed | timeout | unviable | score |\n|---|---|---|---|---|---|\n",
    );
    for (file, f) in scores {
        let pct = f
            .percent()
            .map_or_else(|| "n/a".to_string(), |p| format!("{p:.1} %"));
        s.push_str(&format!(
            "| `{file}` | {} | {} | {} | {} | {pct} |\n",
            f.caught, f.missed, f.timeout, f.unviable
        ));
    }
    let survivors: Vec<&String> = scores.values().flat_map(|f| &f.survivors).collect();
    if !survivors.is_empty() {
        s.push_str("\nSurvivors:\n");
        for n in survivors {
            s.push_str(&format!("- `{n}`\n"));
        }
    }
    s
}

/// Every `outcomes.json` under `dir` (one level of run labels).
fn collect(dir: &Path) -> Result<Vec<MutantOutcome>> {
    let mut runs: Vec<PathBuf> = match std::fs::read_dir(dir) {
        Ok(rd) => rd
            .filter_map(|e| e.ok())
            .map(|e| e.path().join("mutants.out").join("outcomes.json"))
            .filter(|p| p.is_file())
            .collect(),
        Err(_) => Vec::new(),
    };
    // Oldest first, so a newer run's outcome of the same mutant wins.
    runs.sort_by_key(|p| std::fs::metadata(p).and_then(|m| m.modified()).ok());
    let mut all = Vec::new();
    for p in runs {
        let text = std::fs::read_to_string(&p).map_err(|source| Error::Io {
            what: format!("reading {}", p.display()),
            source,
        })?;
        all.extend(parse_outcomes(&text)?);
    }
    Ok(all)
}

/// A directory-name label for a run.
fn label(opts: &MutantsOpts) -> String {
    let files = if opts.files.is_empty() {
        "default".to_string()
    } else {
        opts.files
            .iter()
            .map(|f| f.replace(['/', '*', '.'], "_"))
            .collect::<Vec<_>>()
            .join("+")
    };
    match opts.shard {
        Some((k, n)) => format!("{files}-shard-{k}-of-{n}"),
        None => files,
    }
}

/// Runs `cargo mutants` as `opts` says, then prints the scores of every
/// outcome collected so far and writes them to `<target>/mutants/scores.md`.
pub fn run(opts: &MutantsOpts) -> Result<()> {
    let root = cargo::target_dir()?.join("mutants");
    if !opts.summary_only {
        ensure_cargo_tool("cargo-mutants", "cargo-mutants")?;
        let out = root.join(label(opts));
        std::fs::create_dir_all(&out).map_err(|source| Error::Io {
            what: format!("creating {}", out.display()),
            source,
        })?;
        let mut cmd = cargo::cargo();
        cmd.args(["mutants", "--no-shuffle", "--output"]).arg(&out);
        let files: Vec<&str> = if opts.files.is_empty() {
            DEFAULT_FILES.to_vec()
        } else {
            opts.files.iter().map(String::as_str).collect()
        };
        for f in files {
            cmd.args(["--file", f]);
        }
        if let Some((k, n)) = opts.shard {
            cmd.args(["--shard", &format!("{k}/{n}")]);
        }
        cmd.args(["--jobs", &opts.jobs.unwrap_or(1).to_string()]);
        // Property tests run fewer cases per mutant (`fass`'s model
        // isolation properties 100 sequences instead of 500-2,000, the
        // others 32 instead of proptest's 256): a mutant only a lucky seed
        // would catch then survives, and gets a direct test of the decision.
        cmd.env("FASS_PROPTEST_CASES", MUTANT_MODEL_CASES.to_string());
        cmd.env("PROPTEST_CASES", MUTANT_PROPTEST_CASES.to_string());
        let command = cargo::display(&cmd);
        let status = cmd.status().map_err(|source| Error::Spawn {
            command: command.clone(),
            source,
        })?;
        // cargo-mutants exits with 2 when mutants survived and 3 on
        // timeouts: the scores below are the result. Anything else
        // (1 usage, 4 the unmutated tree's tests fail) is an error.
        if !matches!(status.code(), Some(0 | 2 | 3)) {
            return Err(Error::CommandFailed { command, status });
        }
    }
    let outcomes = collect(&root)?;
    if outcomes.is_empty() {
        return Err(Error::Check(format!(
            "no mutant outcomes under {}",
            root.display()
        )));
    }
    let t = table(&scores(&outcomes));
    print!("\n{t}");
    let path = root.join("scores.md");
    std::fs::write(&path, &t).map_err(|source| Error::Io {
        what: format!("writing {}", path.display()),
        source,
    })?;
    println!("\nscores written to {}", path.display());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const JSON: &str = r#"{"outcomes":[
        {"scenario":"Baseline","summary":"Success"},
        {"scenario":{"Mutant":{"name":"a.rs:1:1: replace f -> bool with true","file":"a.rs"}},"summary":"CaughtMutant"},
        {"scenario":{"Mutant":{"name":"a.rs:2:1: replace g -> bool with true","file":"a.rs"}},"summary":"MissedMutant"},
        {"scenario":{"Mutant":{"name":"a.rs:3:1: replace h -> u32 with 0","file":"a.rs"}},"summary":"Timeout"},
        {"scenario":{"Mutant":{"name":"b.rs:1:1: replace i with ()","file":"b.rs"}},"summary":"Unviable"}
    ]}"#;

    #[test]
    fn outcomes_parse_and_score_per_file() {
        let o = parse_outcomes(JSON).unwrap();
        assert_eq!(o.len(), 4);
        let s = scores(&o);
        let a = &s["a.rs"];
        assert_eq!((a.caught, a.missed, a.timeout, a.unviable), (1, 1, 1, 0));
        assert!((a.percent().unwrap() - 200.0 / 3.0).abs() < 1e-9);
        assert_eq!(a.survivors, ["a.rs:2:1: replace g -> bool with true"]);
        assert_eq!(s["b.rs"].percent(), None);
        let t = table(&s);
        assert!(t.contains("| `a.rs` | 1 | 1 | 1 | 0 | 66.7 % |"), "{t}");
        assert!(
            t.contains("- `a.rs:2:1: replace g -> bool with true`"),
            "{t}"
        );
    }

    #[test]
    fn the_newest_outcome_of_a_mutant_counts() {
        let mut o = parse_outcomes(JSON).unwrap();
        o.push(MutantOutcome {
            file: "a.rs".into(),
            name: "a.rs:2:1: replace g -> bool with true".into(),
            outcome: Outcome::Caught,
        });
        let a = &scores(&o)["a.rs"];
        assert_eq!((a.caught, a.missed), (2, 0));
        assert_eq!(a.percent(), Some(100.0));
    }

    #[test]
    fn unknown_outcomes_and_bad_json_are_errors() {
        assert!(parse_outcomes("nope").is_err());
        assert!(parse_outcomes(r#"{"x":1}"#).is_err());
        assert!(parse_outcomes(
            r#"{"outcomes":[{"scenario":{"Mutant":{"name":"n","file":"f"}},"summary":"Weird"}]}"#
        )
        .is_err());
    }

    #[test]
    fn shards_are_k_of_n_from_zero() {
        assert_eq!(parse_shard("0/4"), Some((0, 4)));
        assert_eq!(parse_shard("3/4"), Some((3, 4)));
        for bad in ["4/4", "1/0", "x/2", "1", "-1/2"] {
            assert_eq!(parse_shard(bad), None, "{bad}");
        }
    }

    #[test]
    fn default_files_exist() {
        for f in DEFAULT_FILES {
            assert!(crate::repo_root().join(f).is_file(), "{f}");
        }
    }
}
