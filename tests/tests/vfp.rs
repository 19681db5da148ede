//! The VFP for user processes (`demo-kernel/src/proc/vfp.rs`): on
//! versatilepb (QEMU's arm926 has a VFP9-S), in every switching mode and
//! both VFP policies (lazy, eager), no VFP register value crosses from one
//! process to another, and a process killed while owning the VFP leaves
//! nothing behind; on collie and connex (no VFP) the VFP scenarios report
//! "not applicable". Checked through the `PROC`, `RESULT` and `VFP` lines.
//!
//! The user checkers ([`role::VFP_CHECK`] in `demo-kernel/user/src/abi.rs`)
//! each write a pattern of their own into d0-d15 and FPSCR every round and
//! read back, the next round, exactly that (zeros before their first
//! write); two ping-pong with yields, two spin and are preempted. A word of
//! another checker's pattern, a zero lost or anything else counts in their
//! exit code, which must be 0.

use std::collections::HashMap;
use std::time::Duration;

use tests::{boot_on, Board, Ending, QemuOutcome};

mod common;
use common::{fields, show, signed};

const LIMIT: Duration = Duration::from_secs(180);
const MODES: [&str; 3] = ["naive", "fcse", "fass"];
const POLICIES: [&str; 2] = ["lazy", "eager"];

/// One scenario run: its `PROC` lines, its `RESULT` and its `VFP` line.
struct Run {
    procs: Vec<HashMap<String, String>>,
    result: HashMap<String, String>,
    vfp: HashMap<String, String>,
}

/// The runs of the log, in order (`PROC`... `RESULT`, then `VFP`).
fn runs(out: &QemuOutcome) -> Vec<Run> {
    let mut all = Vec::new();
    let mut procs = Vec::new();
    let mut result = None;
    for l in &out.lines {
        let t = l.text.as_str();
        if let Some(rest) = t.strip_prefix("PROC ") {
            procs.push(fields(rest));
        } else if let Some(rest) = t.strip_prefix("RESULT ") {
            result = Some(fields(rest));
        } else if let Some(rest) = t.strip_prefix("VFP ") {
            all.push(Run {
                procs: std::mem::take(&mut procs),
                result: result.take().expect("a VFP line after its RESULT"),
                vfp: fields(rest),
            });
        }
    }
    all
}

/// Boots versatilepb under `-icount shift=10` (the spinners are then
/// preempted at fixed points) with `append`; it must end well.
fn boot_icount(append: &str) -> QemuOutcome {
    let qemu = xtask::setup::ensure_qemu().expect("qemu");
    let mut r = xtask::qemu::QemuRun::new(qemu, tests::kernel(), LIMIT);
    r.append = Some(append.to_string());
    r.icount = Some(10);
    let out = r.run().expect("QEMU run");
    assert_eq!(out.ending, Ending::Exited(0), "{}", show(&out));
    assert!(out.has_line("scenarios done"), "{}", show(&out));
    assert_eq!(out.malformed, 0, "{}", show(&out));
    out
}

/// The run of `name` in `mode` under `policy`.
fn the_run<'a>(all: &'a [Run], name: &str, mode: &str, policy: &str) -> &'a Run {
    let mut it = all.iter().filter(|r| {
        r.vfp.get("name").map(String::as_str) == Some(name)
            && r.vfp.get("mode").map(String::as_str) == Some(mode)
            && r.vfp.get("policy").map(String::as_str) == Some(policy)
    });
    let first = it
        .next()
        .unwrap_or_else(|| panic!("no run of {name} {mode} {policy}"));
    assert!(it.next().is_none(), "two runs of {name} {mode} {policy}");
    first
}

/// After every run the VFP is nobody's: no owner, EN clear, no process
/// marked as a user.
fn left_clean(r: &Run) {
    assert_eq!(signed(&r.vfp, "owner_after"), -1, "{:?}", r.vfp);
    assert_eq!(r.vfp["enabled_after"], "false", "{:?}", r.vfp);
    assert_eq!(signed(&r.vfp, "used_after"), 0, "{:?}", r.vfp);
}

#[test]
fn vfp_is_found_on_versatilepb() {
    let out = boot_icount("scenario=vfpyield0 mode=fass rounds=2");
    assert!(
        out.has_line(
            "VFP: FPSID=0x41011090 implementer=0x41 arch=1 part=0x10 variant=9 revision=0"
        ),
        "{}",
        show(&out)
    );
}

#[test]
fn no_vfp_register_crosses_between_processes_in_any_mode_or_policy() {
    let out =
        boot_icount("scenario=vfpleak mode=naive,fcse,fass vfp=lazy,eager rounds=60 slice=2000");
    let all = runs(&out);
    for mode in MODES {
        for policy in POLICIES {
            let r = the_run(&all, "vfpleak", mode, policy);
            let ctx = format!("vfpleak {mode} {policy}\n{}", show(&out));
            assert_eq!(r.procs.len(), 4, "{ctx}");
            for p in &r.procs {
                assert_eq!(p["exit"], "code", "{p:?} {ctx}");
                let code = signed(p, "code");
                assert_eq!(
                    code,
                    0,
                    "process {} saw {} wrong words, {} of another process's: {ctx}",
                    p["id"],
                    code & 0xFFFF,
                    code >> 16
                );
            }
            // The spinners were preempted with their state in the VFP.
            assert!(signed(&r.result, "preemptions") >= 4, "{ctx}");
            // The state really moved between the processes (otherwise the
            // check above would prove nothing).
            assert!(signed(&r.vfp, "saves") >= 40, "{ctx}");
            assert!(signed(&r.vfp, "loads") >= 40, "{ctx}");
            left_clean(r);
        }
        // Lazy traps at every change of owner; eager at a first use (and
        // after a switch that was not a lean one: no record to mark).
        let lazy = the_run(&all, "vfpleak", mode, "lazy");
        let eager = the_run(&all, "vfpleak", mode, "eager");
        assert!(signed(&lazy.vfp, "traps") >= 40, "{:?}", lazy.vfp);
        assert!(signed(&eager.vfp, "traps") >= 4, "{:?}", eager.vfp);
        assert!(
            signed(&eager.vfp, "traps") < signed(&lazy.vfp, "traps"),
            "{:?} {:?}",
            eager.vfp,
            lazy.vfp
        );
    }
}

#[test]
fn a_process_killed_owning_the_vfp_leaves_nothing_behind() {
    let out = boot_icount("scenario=vfpkill mode=naive,fcse,fass vfp=lazy,eager rounds=10");
    let all = runs(&out);
    for mode in MODES {
        for policy in POLICIES {
            let r = the_run(&all, "vfpkill", mode, policy);
            let ctx = format!("vfpkill {mode} {policy}\n{}", show(&out));
            let by_id = |id: &str| {
                r.procs
                    .iter()
                    .find(|p| p["id"] == id)
                    .unwrap_or_else(|| panic!("no process {id}: {ctx}"))
            };
            // Process 0 filled every register with its secret and was
            // killed by an undefined instruction while owning the VFP
            // (EN set: the trap is not the VFP's).
            let dead = by_id("0");
            assert_eq!(dead["exit"], "killed", "{ctx}");
            assert_eq!(dead["trap"], "undefined", "{ctx}");
            // Process 1 started using the VFP after that: it read zeros
            // first (not the secret), then its own values every round.
            let checker = by_id("1");
            assert_eq!(checker["exit"], "code", "{ctx}");
            assert_eq!(signed(checker, "code"), 0, "{ctx}");
            // Process 2 never used the VFP: its undefined instruction is
            // given the VFP once, then it is killed as undefined.
            let plain = by_id("2");
            assert_eq!(plain["exit"], "killed", "{ctx}");
            assert_eq!(plain["trap"], "undefined", "{ctx}");
            // Every owner that ended was dropped (0 and 2 died owning it).
            assert!(signed(&r.vfp, "dropped") >= 2, "{ctx}");
            assert_eq!(signed(&r.result, "killed"), 2, "{ctx}");
            left_clean(r);
        }
    }
}

#[test]
fn the_vfp_scenarios_are_not_applicable_on_collie_and_connex() {
    for board in [Board::Collie, Board::Connex] {
        let out = boot_on(
            board,
            Some("scenario=vfpleak,vfpkill,vfpyield1 mode=fass vfp=lazy,eager"),
            LIMIT,
        );
        assert_eq!(out.ending, Ending::Exited(0), "{}", show(&out));
        let name = board.name();
        assert!(
            out.has_line(&format!(
                "VFP: not applicable on {name} (the FPSID read is undefined: no VFP)"
            )),
            "{}",
            show(&out)
        );
        for s in ["vfpleak", "vfpkill", "vfpyield1"] {
            assert!(
                out.has_line(&format!(
                    "scenario {s} mode fass: not applicable on {name} (no VFP)"
                )),
                "{}",
                show(&out)
            );
        }
        assert!(runs(&out).is_empty(), "{}", show(&out));
        assert!(
            !out.lines.iter().any(|l| l.text.starts_with("PROC ")),
            "{}",
            show(&out)
        );
    }
}

#[test]
fn a_bad_vfp_policy_is_refused() {
    let out = boot_on(
        Board::Versatilepb,
        Some("scenario=vfpkill mode=fass vfp=sometimes"),
        LIMIT,
    );
    assert_ne!(out.ending, Ending::Exited(0), "{}", show(&out));
    assert!(
        out.has_line("vfp=sometimes: not a list of lazy, eager"),
        "{}",
        show(&out)
    );
    assert!(runs(&out).is_empty(), "{}", show(&out));
}
