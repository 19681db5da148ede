//! The demo kernel on the boards besides versatilepb: `-M collie`
//! (StrongARM SA-1110) and `-M connex` (XScale PXA255). Each boots, passes
//! every in-kernel test including the differential test (at least 1,000
//! accesses, 0 mismatches, each QEMU deviation counted by name), reports
//! the TCM scenarios as not applicable, and runs processes in the three
//! switching modes (short parameters).

use std::time::Duration;

use tests::{boot_on, Board, Ending, QemuOutcome};

mod common;
use common::{fields, num, show};

const LIMIT: Duration = Duration::from_secs(120);
const EXTRA: [Board; 2] = [Board::Collie, Board::Connex];

fn line_with<'a>(out: &'a QemuOutcome, prefix: &str) -> &'a str {
    out.lines
        .iter()
        .map(|l| l.text.as_str())
        .find(|t| t.starts_with(prefix))
        .unwrap_or_else(|| panic!("no line starting {prefix:?}:\n{}", show(out)))
}

#[test]
fn every_kernel_test_passes_on_collie_and_connex() {
    for board in EXTRA {
        let out = boot_on(board, Some("test"), LIMIT);
        assert_eq!(out.ending, Ending::Exited(0), "{}", show(&out));
        let passed = xtask::stages::kernel_test_verdict(&out)
            .unwrap_or_else(|e| panic!("{}: {e}\n{}", board.name(), show(&out)));
        assert!(passed >= 8, "{}", show(&out));
        assert!(
            out.has_line(&format!("board: {}", board.name())),
            "{}",
            show(&out)
        );
        assert!(out.has_line("CPU is the board's"), "{}", show(&out));
        // QEMU adds FCSEIDR bits [24:0] to the MVA: named and counted.
        let want = format!("deviation fcseidr_low_bits_added on {}: 1", board.name());
        assert!(out.has_line(&want), "{want}\n{}", show(&out));
        for name in [
            "translate_matches_qemu",
            "midr_is_the_boards",
            "fcseidr_low_bits_as_the_board_does",
        ] {
            assert!(
                out.has_line(&format!("test {name} ... ok")),
                "{name} on {}:\n{}",
                board.name(),
                show(&out)
            );
        }
        let d = fields(line_with(&out, "difftest: seed="));
        assert!(num(&d, "accesses") >= 1000, "{}", show(&out));
        assert_eq!(num(&d, "mismatches"), 0, "{}", show(&out));
        // Both QEMU deviations occur and are counted by name; together
        // they cover every deviated access.
        let dev = fields(line_with(
            &out,
            &format!("difftest deviations on {}:", board.name()),
        ));
        let (far, dom) = (num(&dev, "far_is_va"), num(&dev, "domain_before_l2"));
        assert!(far > 0 && dom > 0, "{}", show(&out));
        assert!(far.max(dom) <= num(&d, "deviations"), "{}", show(&out));
        assert!(far + dom >= num(&d, "deviations"), "{}", show(&out));
    }
}

#[test]
fn another_seed_is_taken_and_printed() {
    let out = boot_on(
        Board::Connex,
        Some("test only=translate_matches_qemu seed=0x1234"),
        LIMIT,
    );
    assert_eq!(out.ending, Ending::Exited(0), "{}", show(&out));
    let d = fields(line_with(&out, "difftest: seed="));
    assert_eq!(num(&d, "seed"), 0x1234, "{}", show(&out));
    assert_eq!(num(&d, "mismatches"), 0, "{}", show(&out));
    let bad = boot_on(
        Board::Connex,
        Some("test only=translate_matches_qemu seed=12x"),
        LIMIT,
    );
    assert_eq!(bad.ending, Ending::Exited(2), "{}", show(&bad));
}

#[test]
fn processes_run_in_every_mode_and_tcm_is_not_applicable() {
    let scenarios = "ring,ipc,collide,share,faults,badcalls,fuzz,tcm,tcmops,hostile";
    for board in EXTRA {
        let out = boot_on(
            board,
            Some(&format!(
                "scenario={scenarios} mode=naive,fcse,fass n=4 passes=4 rounds=4 calls=200"
            )),
            LIMIT,
        );
        assert_eq!(out.ending, Ending::Exited(0), "{}", show(&out));
        assert!(out.has_line("scenarios done"), "{}", show(&out));
        assert_eq!(out.malformed, 0, "{}", show(&out));
        for mode in ["naive", "fcse", "fass"] {
            for tcm in ["tcm", "tcmops", "hostile"] {
                let want = format!(
                    "scenario {tcm} mode {mode}: not applicable on {} (no TCM)",
                    board.name()
                );
                assert!(out.has_line(&want), "{want}\n{}", show(&out));
            }
            for name in [
                "ring", "ipc", "collide", "share", "faults", "badcalls", "fuzz",
            ] {
                let r = out
                    .lines
                    .iter()
                    .map(|l| l.text.as_str())
                    .filter(|t| t.starts_with("RESULT "))
                    .map(fields)
                    .find(|r| {
                        r.get("name").map(String::as_str) == Some(name)
                            && r.get("mode").map(String::as_str) == Some(mode)
                    })
                    .unwrap_or_else(|| {
                        panic!(
                            "no RESULT {name} {mode} on {}:\n{}",
                            board.name(),
                            show(&out)
                        )
                    });
                assert!(num(&r, "procs") > 0, "{r:?}");
                assert_eq!(num(&r, "stuck"), 0, "{name} {mode}: {r:?}");
                assert_eq!(num(&r, "failed"), 0, "{name} {mode}: {r:?}");
                // The faults scenario's five faulters are killed, its two
                // workers finish; nothing else is killed.
                let killed = if name == "faults" { 5 } else { 0 };
                assert_eq!(num(&r, "killed"), killed, "{name} {mode}: {r:?}");
                // The flush-region D-cache cleans are counted: naive cleans
                // at every switch, FCSE-only and FASS do not (the ring's
                // processes each have their own PID and domain).
                if name == "ring" {
                    let (d, s) = (num(&r, "dflush"), num(&r, "switches"));
                    if mode == "naive" {
                        assert!(d >= s && s > 0, "{r:?}");
                    } else {
                        assert!(d < s, "{r:?}");
                    }
                }
            }
        }
    }
}
