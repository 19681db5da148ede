//! The Miri stage: the library crates' unit tests and a chosen set of their
//! model-backed integration tests under Miri (Stacked Borrows, the default
//! model), on the nightly toolchain, which xtask installs with the `miri`
//! and `rust-src` components when missing.
//!
//! Miri interprets every instruction, about a thousand times slower than a
//! native run: property tests shrink their case counts under `cfg(miri)`,
//! and a few tests that repeat, on large tables, code paths that other tests
//! of the same run already take are skipped ([`MiriRun::skip`], each with
//! its reason). `docs/testing.md` lists what runs and the time it takes.
//!
//! Two sets ([`Set`]): the stage of `cargo xtask test` ([`Set::Stage`])
//! leaves out, besides [`MiriRun::skip`], the tests of
//! [`MiriRun::stage_skip`]: each repeats on more data an unsafe path that a
//! test kept in the stage already takes, so the stage finds the same
//! undefined behaviour in about half the time; `cargo xtask miri --full`
//! ([`Set::Full`]) runs them too.

use crate::cargo::run_checked;
use crate::setup::{ensure_toolchain, toolchain_cargo, NIGHTLY};
use crate::{Error, Result};
use std::io::Write;

/// One `cargo miri test` invocation: a package, test targets of it, and
/// tests left out.
#[derive(Clone, Copy, Debug)]
pub struct MiriRun {
    /// The package.
    pub package: &'static str,
    /// Arguments selecting its test targets (`--lib`, `--test NAME`).
    pub targets: &'static [&'static str],
    /// Full names of tests not run under Miri, each with why.
    pub skip: &'static [(&'static str, &'static str)],
    /// Full names of tests the stage of `cargo xtask test` leaves out
    /// ([`Set::Stage`]; `cargo xtask miri --full` runs them), each with the
    /// test of the stage that takes the same unsafe path.
    pub stage_skip: &'static [(&'static str, &'static str)],
    /// Which of the two lanes runs it: the lanes run side by side (Miri
    /// interprets on one core), each run after run.
    pub lane: u8,
}

/// Everything the stage runs, in order.
pub const RUNS: &[MiriRun] = &[
    MiriRun {
        package: "mmu-armv5",
        targets: &["--lib"],
        skip: &[],
        // Tests that repeat, table after table, the raw entry accessors
        // (`RootTable::read`/`write`, the coarse-table accessors) and the
        // pool's blocks that the kept tests of the same modules already
        // take; about half of this run's time under Miri.
        stage_skip: &[
            (
                "table::share::tests::any_range_errors_or_copies_exactly",
                "random ranges through the argument checks of `bad_ranges_are_typed_errors` \
                 and the copy of `entries_are_rewritten_in_the_receiving_tables_encoding`",
            ),
            (
                "table::share::tests::copies_exactly_the_valid_entries_of_the_range",
                "the copy path of `entries_are_rewritten_in_the_receiving_tables_encoding`",
            ),
            (
                "table::share::tests::a_different_entry_refuses_the_whole_range",
                "the `AlreadyMapped` refusal of `sharing_from_a_raw_root`",
            ),
            (
                "table::share::tests::sharing_again_copies_only_new_entries_and_keeps_the_tables_own",
                "the copy path of `entries_are_rewritten_in_the_receiving_tables_encoding`, twice",
            ),
            (
                "table::edit::tests::refusals_change_nothing",
                "full-table walks (`mappings`) around the lookups of `retarget_page_keeps_every_attribute`",
            ),
        ],
        lane: 0,
    },
    MiriRun {
        package: "mmu-armv5",
        targets: &["--test", "translate"],
        skip: &[],
        stage_skip: &[],
        lane: 0,
    },
    MiriRun {
        package: "armv5-sim",
        targets: &["--lib"],
        skip: &[],
        stage_skip: &[],
        lane: 0,
    },
    MiriRun {
        package: "armv5-sim",
        targets: &["--test", "model"],
        skip: &[],
        stage_skip: &[],
        lane: 0,
    },
    MiriRun {
        package: "fass",
        targets: &["--lib"],
        lane: 1,
        // The property tests of the modules without `unsafe` code
        // (domain, pid, slots, layout, policy: plain safe Rust over
        // arrays, no raw pointer, no container with unsafe internals):
        // random operation sequences over code whose every memory access
        // the same modules' example tests (kept) already make under Miri;
        // natively they run with proptest's full case count.
        stage_skip: &[
            (
                "domain::tests::slot_bookkeeping_matches_a_model",
                "safe code only; the example tests of domain.rs (claim, evict, the fast path's move) run",
            ),
            (
                "pid::tests::best_effort_never_misses_a_needed_flush",
                "safe code only; the example tests of pid.rs run",
            ),
            (
                "slots::tests::behaves_like_a_btreeset",
                "safe code only; the example tests of slots.rs run",
            ),
            (
                "layout::tests::overlap_is_symmetric_and_matches_slot_sets",
                "safe code only; the example tests of layout.rs run",
            ),
            (
                "layout::tests::valid_layouts_are_disjoint",
                "safe code only; the example tests of layout.rs run",
            ),
            (
                "policy::tests::choice_is_always_eligible_and_clean_if_possible",
                "safe code only; the example tests of policy.rs run",
            ),
            (
                "lean::tests::settled_switches_match_full_ones_in_a_ring",
                "a fixed sequence through the settling path (`settle_lean`) of \
                 `settled_switches_do_what_full_switches_would`, four strategies over",
            ),
            (
                "manager::tests::a_range_that_fails_half_way_is_unmapped_again",
                "295 map and unmap calls through the table accessors of \
                 `page_ranges_map_and_unmap_every_page_and_refuse_a_taken_one`",
            ),
        ],
        skip: &[
            (
                "lean::tests::the_comparison_sees_lean_switches_of_every_strategy",
                "70 s: every strategy's lean and full switches side by side, each \
                 taken alone by the other lean tests",
            ),
            (
                "switch::tests::every_table_a_classic_strategy_loads_holds_the_kernels_entries",
                "52 s: reads all 4,096 entries of each table loaded; the table \
                 writes are those of the other classic-strategy tests",
            ),
            (
                "lean::tests::a_lean_switch_does_what_the_full_switch_would",
                "34 s: repeats the full and lean switch paths the single-strategy \
                 lean tests take",
            ),
        ],
    },
    MiriRun {
        package: "spm",
        targets: &["--lib"],
        // spm's only raw-pointer code is `PhysWindows` (hw.rs), whose tests
        // all run (its other `unsafe` states contracts about the hardware,
        // not memory accesses of this program); these tests move whole
        // pages through the byte-wise host doubles, minutes each under Miri,
        // or walk full 4,096-entry tables through `TableMappings` (which has
        // no raw-pointer code; the table accesses it makes run under Miri
        // in mmu-armv5's tests). The exchange's begin, refusal and drop
        // paths still run.
        skip: &[
            (
                "tables::tests::an_exchange_runs_through_the_tables",
                "30 s: a whole-page exchange through two full tables",
            ),
            (
                "tables::tests::every_mapping_of_a_page_is_reported_once_per_descriptor",
                "full-table walks of two tables, repeated",
            ),
            (
                "tables::tests::moved_tables_are_relinked_where_the_allocator_reaches_them",
                "reads all 4,096 first-level entries of two tables, twice",
            ),
            (
                "tables::tests::protection_past_its_memory_leaves_the_rest_writable_and_says_so",
                "full-table walks in batches of eight descriptors",
            ),
            (
                "tables::tests::restore_keeps_what_the_kernel_changed_meanwhile",
                "full-table walks of two tables",
            ),
            (
                "tables::tests::swap_exchanges_frames_and_carries_rights_and_protection",
                "full-table walks of two tables, repeated",
            ),
            (
                "tables::tests::the_generation_counts_the_kernels_changes",
                "full-table walks of two tables",
            ),
            (
                "tables::tests::write_protection_is_restored_exactly",
                "full-table walks of two tables, repeated",
            ),
            (
                "tests::a_cancelled_directory_move_is_switched_back_or_finished",
                "over 6 min: 16 KiB page-directory moves on the byte-wise host doubles",
            ),
            (
                "tests::kernel_code_moves_into_itcm_and_back",
                "over 3 min: two whole-page exchanges on the byte-wise host doubles",
            ),
            (
                "tests::moved_page_tables_and_directories_are_re_pointed",
                "page-table and directory moves on the byte-wise host doubles",
            ),
            (
                "tests::at_most_max_scattered_pages_are_scattered",
                "an eight-page exchange on the byte-wise host doubles",
            ),
            (
                "tests::a_directory_with_a_foreign_frame_is_refused",
                "a 16 KiB page-directory move on the byte-wise host doubles",
            ),
            (
                "tests::a_recheck_counts_its_kernel_calls",
                "two whole-page exchanges on the byte-wise host doubles",
            ),
            (
                "tests::a_later_page_whose_frames_changed_is_refused",
                "three whole-page copies on the byte-wise host doubles",
            ),
            (
                "tests::the_statistics_count_every_call",
                "about thirty exchanges, directories included on the byte-wise host doubles",
            ),
            (
                "tests::lines_filled_during_the_copy_never_take_a_later_write",
                "three exchanges with a load of every line per step on the byte-wise host doubles",
            ),
            (
                "tests::a_cancel_asks_for_the_mappings_again_only_after_a_change",
                "two whole-page copies on the byte-wise host doubles",
            ),
            (
                "tests::a_directory_switched_back_keeps_later_writes",
                "two partial 16 KiB page-directory moves on the byte-wise host doubles",
            ),
            (
                "tests::a_directory_cancelled_after_its_last_switch_is_finished",
                "two 16 KiB page-directory moves on the byte-wise host doubles",
            ),
            (
                "tests::remembered_mappings_are_asked_for_once_per_page_side",
                "a two-page exchange on the byte-wise host doubles",
            ),
            (
                "tests::a_large_page_moves_the_tables_in_any_of_its_frames",
                "two 64 KiB large-page exchanges on the byte-wise host doubles",
            ),
            (
                "tests::a_directory_cancel_leaves_a_changed_page_alone",
                "two pages of a page-directory move on the byte-wise host doubles",
            ),
            (
                "tests::maintenance_stays_inside_the_exchanged_pages",
                "four exchanges with two pages of cached lines on the byte-wise host doubles",
            ),
            (
                "tests::directory_maintenance_stays_inside_the_switched_pages",
                "two 16 KiB page-directory moves on the byte-wise host doubles",
            ),
            (
                "tests::a_cancel_counts_the_switched_page",
                "three two-page exchanges cancelled in their copy or flush on the byte-wise host doubles",
            ),
            (
                "tests::a_cancel_leaves_a_changed_frame_of_the_current_page_busy",
                "two exchanges cancelled in their copy or flush on the byte-wise host doubles",
            ),
            (
                "tests::ranges_may_end_at_four_gib_and_touch",
                "a whole-page exchange and two begun ones on the byte-wise host doubles",
            ),
            (
                "tests::protects_names_exactly_the_frames_of_the_protected_page",
                "a whole-page exchange and a begun one on the byte-wise host doubles",
            ),
            (
                "tests::a_held_directory_frame_that_changed_is_refused",
                "three begun 16 KiB page-directory moves on the byte-wise host doubles",
            ),
        ],
        stage_skip: &[],
        lane: 0,
    },
];

/// Which tests a Miri run takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Set {
    /// The stage of `cargo xtask test`: every run without its
    /// [`MiriRun::skip`] and [`MiriRun::stage_skip`] tests.
    Stage,
    /// `cargo xtask miri --full`: without [`MiriRun::skip`] only.
    Full,
}

/// Cases of every property test that takes proptest's default
/// configuration (`PROPTEST_CASES`); the crates' own helpers cap theirs
/// under `cfg(miri)` too.
pub const PROPTEST_CASES: &str = "8";

/// The `cargo miri test` arguments of `r` in `set` (after `cargo`).
pub fn args(r: &MiriRun, set: Set) -> Vec<String> {
    let mut a: Vec<String> = ["miri", "test", "-p", r.package]
        .iter()
        .map(|s| s.to_string())
        .collect();
    a.extend(r.targets.iter().map(|s| s.to_string()));
    let stage: &[(&str, &str)] = match set {
        Set::Stage => r.stage_skip,
        Set::Full => &[],
    };
    if !r.skip.is_empty() || !stage.is_empty() {
        a.push("--".into());
        for (name, _) in r.skip.iter().chain(stage) {
            a.push("--skip".into());
            a.push((*name).into());
        }
        a.push("--exact".into());
    }
    a
}

/// Runs [`RUNS`] under Miri, the tests of `set`, the two lanes side by
/// side; each run's output is printed when it ends. Any failure fails the
/// stage (after both lanes).
pub fn run(set: Set) -> Result<()> {
    ensure_toolchain(NIGHTLY, &["miri", "rust-src"])?;
    run_checked(toolchain_cargo(NIGHTLY).args(["miri", "setup"]))?;
    let lane = |n: u8| -> Result<()> {
        for r in RUNS.iter().filter(|r| r.lane == n) {
            let mut cmd = toolchain_cargo(NIGHTLY);
            cmd.args(args(r, set)).env("PROPTEST_CASES", PROPTEST_CASES);
            let command = format!("cargo +{NIGHTLY} {}", args(r, set).join(" "));
            let start = std::time::Instant::now();
            let out = cmd.output().map_err(|source| Error::Spawn {
                command: command.clone(),
                source,
            })?;
            let mut io = std::io::stderr().lock();
            let _ = io.write_all(&out.stdout);
            let _ = io.write_all(&out.stderr);
            let _ = writeln!(
                io,
                "xtask: `{command}`: {:.0} s",
                start.elapsed().as_secs_f64()
            );
            if !out.status.success() {
                return Err(Error::CommandFailed {
                    command,
                    status: out.status,
                });
            }
        }
        Ok(())
    };
    let (a, b) = std::thread::scope(|s| {
        let b = s.spawn(|| lane(1));
        let a = lane(0);
        (a, b.join().expect("the Miri lane thread panicked"))
    });
    a.and(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skipped_tests_are_named_exactly() {
        let fass = RUNS.iter().find(|r| r.package == "fass").unwrap();
        let a = args(fass, Set::Full);
        assert_eq!(&a[..5], ["miri", "test", "-p", "fass", "--lib"]);
        assert_eq!(a[5], "--");
        assert_eq!(a.last().unwrap(), "--exact");
        assert_eq!(a.iter().filter(|s| *s == "--skip").count(), fass.skip.len());
        let a = args(fass, Set::Stage);
        assert_eq!(
            a.iter().filter(|s| *s == "--skip").count(),
            fass.skip.len() + fass.stage_skip.len()
        );
        for (name, _) in fass.stage_skip {
            assert!(a.iter().any(|s| s == name), "{name}");
        }
        let plain = args(&RUNS[0], Set::Full);
        assert_eq!(plain, ["miri", "test", "-p", "mmu-armv5", "--lib"]);
    }

    /// Whether a file under `dir` defines `fn name(`.
    fn defines(dir: &std::path::Path, name: &str) -> bool {
        std::fs::read_dir(dir).unwrap().any(|e| {
            let p = e.unwrap().path();
            if p.is_dir() {
                defines(&p, name)
            } else {
                std::fs::read_to_string(&p)
                    .map(|t| t.contains(&format!("fn {name}(")))
                    .unwrap_or(false)
            }
        })
    }

    #[test]
    fn the_stage_set_leaves_out_tests_the_full_set_runs() {
        let fass = RUNS.iter().find(|r| r.package == "fass").unwrap();
        assert!(!fass.stage_skip.is_empty());
        for r in RUNS {
            for (name, _) in r.stage_skip {
                assert!(
                    !r.skip.iter().any(|(s, _)| s == name),
                    "{name} is in both lists"
                );
                // The stage skips it, the full set does not.
                assert!(args(r, Set::Stage).iter().any(|a| a == name));
                assert!(!args(r, Set::Full).iter().any(|a| a == name));
            }
        }
    }

    /// A stage-skipped test either lives in a module without `unsafe` (the
    /// stage leaves out only tests of code Miri has nothing of its own to
    /// check in), or its reason names, in backticks, a test of the same
    /// module that the stage keeps and that takes the same unsafe path.
    #[test]
    fn stage_skipped_tests_are_safe_code_or_name_a_kept_test() {
        for r in RUNS {
            let dir = crate::repo_root()
                .join("crates")
                .join(r.package)
                .join("src");
            for (name, why) in r.stage_skip {
                let mut path: Vec<&str> = name.split("::").collect();
                path.truncate(path.len() - 2); // `tests::the_test`
                let file = dir.join(format!("{}.rs", path.join("/")));
                let mut text = std::fs::read_to_string(&file)
                    .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
                // A module's tests may live in `module/tests.rs`.
                let tests = dir.join(path.join("/")).join("tests.rs");
                text.push_str(&std::fs::read_to_string(tests).unwrap_or_default());
                if !text.contains("unsafe") {
                    continue;
                }
                let kept: Vec<&str> = why
                    .split('`')
                    .skip(1)
                    .step_by(2)
                    .filter(|t| text.contains(&format!("fn {t}(")))
                    .filter(|t| {
                        !r.skip
                            .iter()
                            .chain(r.stage_skip)
                            .any(|(n, _)| n.rsplit("::").next() == Some(t))
                    })
                    .collect();
                assert!(
                    !kept.is_empty(),
                    "{name}: {} has unsafe code and the reason names no kept test of it",
                    file.display()
                );
            }
        }
    }

    #[test]
    fn every_skipped_test_exists() {
        for r in RUNS {
            for (name, why) in r.skip.iter().chain(r.stage_skip) {
                let f = name.rsplit("::").next().unwrap();
                let dir = crate::repo_root()
                    .join("crates")
                    .join(r.package)
                    .join("src");
                assert!(defines(&dir, f), "{name} not found in {}", dir.display());
                assert!(!why.is_empty());
            }
        }
    }
}
