//! Long IPC in QEMU: the `longipc` scenario (a ping-pong of 64 B, 1 KiB and
//! 4 KiB buffers, every byte of every message and the bytes after it
//! checked by the receiving process) and the `longbad` scenario (the
//! refusals: too long, over the kernel, over another process's window,
//! unmapped halfway, wrapping, to itself, to no process, longer than the
//! receiver's buffer, a long message to a plain receive, and the receiver
//! exiting while a sender waits), in every mode on every board.

use std::collections::HashMap;
use std::time::Duration;

use tests::{boot_on, Board, Ending, QemuOutcome};

mod common;
use common::{fields, num, show};

const LIMIT: Duration = Duration::from_secs(120);
const BOARDS: [Board; 3] = [Board::Versatilepb, Board::Collie, Board::Connex];
const MODES: [&str; 3] = ["naive", "fcse", "fass"];

/// The RESULT line of scenario `name` in `mode`, and the PROC lines
/// printed just before it (that run's processes).
fn run_of(
    out: &QemuOutcome,
    name: &str,
    mode: &str,
) -> (HashMap<String, String>, Vec<HashMap<String, String>>) {
    let texts: Vec<&str> = out.lines.iter().map(|l| l.text.as_str()).collect();
    let head = format!("RESULT name={name} mode={mode} ");
    let end = texts
        .iter()
        .position(|t| t.starts_with(&head))
        .unwrap_or_else(|| panic!("no {head}\n{}", show(out)));
    let start = texts[..end]
        .iter()
        .rposition(|t| t.starts_with("BASELINE "))
        .map_or(0, |i| i + 1);
    let procs = texts[start..end]
        .iter()
        .filter_map(|t| t.strip_prefix("PROC "))
        .map(fields)
        .collect();
    (fields(texts[end]), procs)
}

fn baseline_back(out: &QemuOutcome, name: &str, mode: &str) {
    let head = format!("BASELINE name={name} mode={mode} ");
    let b = out
        .lines
        .iter()
        .find(|l| l.text.starts_with(&head))
        .map(|l| fields(&l.text))
        .unwrap_or_else(|| panic!("no {head}\n{}", show(out)));
    for k in ["frames", "pool", "domains", "user_l1"] {
        assert_eq!(
            num(&b, &format!("{k}_before")),
            num(&b, &format!("{k}_after")),
            "{k}: {b:?}"
        );
    }
    assert_eq!(num(&b, "live"), 0, "{b:?}");
}

#[test]
fn long_ipc_in_every_mode_on_every_board() {
    for board in BOARDS {
        let out = boot_on(
            board,
            Some("scenario=longipc,longbad mode=naive,fcse,fass rounds=3"),
            LIMIT,
        );
        let b = board.name();
        assert_eq!(out.ending, Ending::Exited(0), "{b}: {}", show(&out));
        assert!(out.has_line("scenarios done"), "{b}: {}", show(&out));
        assert_eq!(out.malformed, 0, "{b}: {}", show(&out));
        for mode in MODES {
            // The ping-pong: both exit 0 (every byte of 3 rounds of each
            // size arrived, the bytes after each message unchanged).
            let (r, procs) = run_of(&out, "longipc", mode);
            assert_eq!(num(&r, "exited_ok"), 2, "{b} {mode}: {r:?}");
            assert_eq!(
                num(&r, "failed") + num(&r, "killed") + num(&r, "stuck"),
                0,
                "{b} {mode}: {r:?}"
            );
            assert_eq!(procs.len(), 2, "{b} {mode}: {procs:?}");
            assert!(
                procs.iter().all(|p| p["code"] == "0" && p["errors"] == "0"),
                "{b} {mode}: {procs:?}"
            );
            // Messages went through (the kernel's count). How many were
            // hand-offs to a waiting receiver is a measuring-build line
            // (`LONGIPC`, printed by the kernel `cargo xtask bench` runs),
            // checked wherever the kernel printed it.
            assert!(num(&r, "messages") > 0, "{b} {mode}: {r:?}");
            if let Some(l) = out
                .lines
                .iter()
                .find(|l| l.text.starts_with(&format!("LONGIPC mode={mode} ")))
                .map(|l| fields(&l.text))
            {
                assert!(num(&l, "handoffs") > 0, "{b} {mode}: {l:?}");
            }
            baseline_back(&out, "longipc", mode);

            // The refusals: every process exits 0 (each refusal was the
            // expected typed error), with the expected error counts.
            let (r, procs) = run_of(&out, "longbad", mode);
            assert_eq!(num(&r, "exited_ok"), 3, "{b} {mode}: {r:?}");
            assert_eq!(num(&r, "killed") + num(&r, "stuck"), 0, "{b} {mode}: {r:?}");
            assert!(
                procs.iter().all(|p| p["code"] == "0"),
                "{b} {mode}: {procs:?}"
            );
            let errors = |id: &str| {
                procs
                    .iter()
                    .find(|p| p["id"] == id)
                    .map(|p| num(p, "errors"))
                    .unwrap_or_else(|| panic!("{b} {mode}: no process {id}: {procs:?}"))
            };
            // Receiver: read-only, too long and kernel buffers refused.
            assert_eq!(errors("0"), 3, "{b} {mode}: {procs:?}");
            // Prober: ESRCH (receiver exited while it waited), EMSGSIZE,
            // EFAULT x3 (kernel, other window, unmapped halfway), EINVAL
            // (wraps), EDEADLK, ESRCH, EMSGSIZE x2 (receiver's buffer, a
            // plain receive).
            assert_eq!(errors("2"), 10, "{b} {mode}: {procs:?}");
            baseline_back(&out, "longbad", mode);
        }
    }
}
