//! User processes in QEMU: the demo kernel's scenarios (`scenario=...`)
//! under the three switching modes, checked through the machine-readable
//! `RESULT`, `STEADY`, `PROC` and `BASELINE` lines the kernel prints.

use std::collections::HashMap;
use std::time::Duration;

use tests::{boot, Ending, QemuOutcome};

mod common;
use common::{num, show};

const LIMIT: Duration = Duration::from_secs(120);

/// `key=value` pairs of every line starting with `kind `.
fn records(out: &QemuOutcome, kind: &str) -> Vec<HashMap<String, String>> {
    out.lines
        .iter()
        .filter_map(|l| l.text.strip_prefix(&format!("{kind} ")))
        .map(|rest| {
            rest.split(' ')
                .filter_map(|kv| kv.split_once('='))
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        })
        .collect()
}

/// The one record of `kind` with every `(key, value)` of `keys`.
fn find<'a>(
    recs: &'a [HashMap<String, String>],
    keys: &[(&str, &str)],
) -> Option<&'a HashMap<String, String>> {
    let mut it = recs.iter().filter(|r| {
        keys.iter()
            .all(|(k, v)| r.get(*k).map(String::as_str) == Some(*v))
    });
    let first = it.next();
    assert!(it.next().is_none(), "two records match {keys:?}");
    first
}

fn run(append: &str) -> QemuOutcome {
    let out = boot(Some(append), LIMIT);
    assert_eq!(out.ending, Ending::Exited(0), "{}", show(&out));
    assert!(out.has_line("scenarios done"), "{}", show(&out));
    assert_eq!(out.malformed, 0, "{}", show(&out));
    out
}

/// As [`run`], under `-icount shift=10,sleep=off` (instruction counts).
fn run_icount(append: &str) -> QemuOutcome {
    run_icount_of(tests::kernel(), append)
}

/// As [`run_icount`], with the measuring build (feature `measure`): the
/// only one that prints `BENCH`, `TRANSITS` and `SWITCHPATH` lines.
fn run_measuring(append: &str) -> QemuOutcome {
    run_icount_of(tests::measuring_kernel(), append)
}

fn run_icount_of(elf: std::path::PathBuf, append: &str) -> QemuOutcome {
    let qemu = xtask::setup::ensure_qemu().expect("qemu");
    let mut r = xtask::qemu::QemuRun::new(qemu, elf, LIMIT);
    r.append = Some(append.to_string());
    r.icount = Some(10);
    let out = r.run().expect("QEMU run");
    assert_eq!(out.ending, Ending::Exited(0), "{}", show(&out));
    assert!(out.has_line("scenarios done"), "{}", show(&out));
    assert_eq!(out.malformed, 0, "{}", show(&out));
    out
}

/// Frames, table memory, domains, PIDs and user entries of the kernel
/// table, TCM frames, busy frames of `spm`'s frame table and the kernel's
/// write-protect records are back to their counts from before the
/// scenario, and no exchange is left in progress.
fn check_baseline(out: &QemuOutcome, name: &str, mode: &str, n: &str) {
    let b = records(out, "BASELINE");
    let r = find(&b, &[("name", name), ("mode", mode), ("n", n)])
        .unwrap_or_else(|| panic!("no BASELINE for {name} {mode} {n}\n{}", show(out)));
    assert_eq!(num(r, "frames_before"), num(r, "frames_after"), "{r:?}");
    assert_eq!(num(r, "pool_before"), num(r, "pool_after"), "{r:?}");
    assert_eq!(num(r, "domains_before"), num(r, "domains_after"), "{r:?}");
    assert_eq!(num(r, "pids_after"), 0, "{r:?}");
    assert_eq!(num(r, "live"), 0, "{r:?}");
    assert_eq!(num(r, "user_l1_after"), 0, "{r:?}");
    assert_eq!(num(r, "tcm_before"), num(r, "tcm_after"), "{r:?}");
    assert_eq!(num(r, "busy_before"), num(r, "busy_after"), "{r:?}");
    assert_eq!(num(r, "wp_before"), num(r, "wp_after"), "{r:?}");
    assert_eq!(num(r, "exchanges_after"), 0, "{r:?}");
}

const RING_NS: [u64; 7] = [2, 4, 8, 14, 16, 24, 32];

/// The ring's results; `measuring`: `out` is the measuring build's, which
/// prints one `ring` figure per (mode, n) and one `switch_tail` figure
/// where the assembly fast path switched (every (mode, n) but FASS past
/// its 15 free domains, whose switches recycle through the Rust path); the
/// shipped build prints no measurement line at all.
fn check_ring(out: &QemuOutcome, touch: &str, measuring: bool) {
    let results = records(out, "RESULT");
    let steady = records(out, "STEADY");
    for mode in ["naive", "fcse", "fass"] {
        for n in RING_NS {
            let ns = n.to_string();
            let keys = [
                ("name", "ring"),
                ("mode", mode),
                ("n", ns.as_str()),
                ("touch", touch),
            ];
            let r = find(&results, &keys)
                .unwrap_or_else(|| panic!("no RESULT for {keys:?}\n{}", show(out)));
            // Every member saw every token intact and exited 0.
            assert_eq!(num(r, "exited_ok"), n, "{r:?}");
            assert_eq!(
                num(r, "failed") + num(r, "killed") + num(r, "stuck"),
                0,
                "{r:?}"
            );
            let s = find(&steady, &keys).unwrap_or_else(|| panic!("no STEADY for {keys:?}"));
            let switches = num(s, "switches");
            // passes=4: three steady laps of n hops each (preemptions may add a few).
            assert!(switches >= 3 * n, "{s:?}");
            match mode {
                "naive" => {
                    assert_eq!(num(s, "dflush"), switches, "{s:?}");
                    assert_eq!(num(s, "tlb"), switches, "{s:?}");
                }
                "fcse" => {
                    assert_eq!(num(s, "dflush"), 0, "{s:?}");
                    assert_eq!(num(s, "tlb"), switches, "{s:?}");
                }
                _ => {
                    if n <= 15 {
                        // Every member keeps its domain: DACR + FCSEIDR only.
                        assert_eq!(num(s, "dflush"), 0, "{s:?}");
                        assert_eq!(num(s, "tlb"), 0, "{s:?}");
                        assert_eq!(num(s, "tlb_entries"), 0, "{s:?}");
                        assert_eq!(num(s, "recycles"), 0, "{s:?}");
                    } else {
                        // More members than the 15 free domains: recycling.
                        assert!(num(s, "recycles") > 0, "{s:?}");
                    }
                }
            }
            check_baseline(out, "ring", mode, &ns);
        }
    }
    if !measuring {
        for kind in ["BENCH", "TRANSITS", "SWITCHPATH"] {
            assert!(records(out, kind).is_empty(), "{kind}: {}", show(out));
        }
        return;
    }
    // Past the 15 free domains FASS recycles; the space switched to gets
    // its directory's entries re-linked into the CPD at the switch (fass's
    // eager re-link), so hardly a refill fault follows: at most one per
    // ten hand-offs (collisions of a shared PID). The faults there are
    // are transits of the window, in `ring` (issue 25).
    let transits = records(out, "TRANSITS");
    for n in RING_NS.iter().filter(|n| **n > 15) {
        let ns = n.to_string();
        let t = find(
            &transits,
            &[("name", "ring"), ("mode", "fass"), ("n", ns.as_str())],
        )
        .unwrap_or_else(|| panic!("no TRANSITS ring fass n={n}"));
        assert!(num(t, "oneway") >= 3 * n, "{t:?}");
        assert!(num(t, "fault") * 10 <= num(t, "oneway"), "{t:?}");
        assert_eq!(num(t, "fault") == 0, num(t, "fault_instr") == 0, "{t:?}");
    }
    // One ring figure per (mode, n); one switch tail where the fast path
    // switched, at most one elsewhere.
    let bench = records(out, "BENCH");
    for mode in ["naive", "fcse", "fass"] {
        for n in RING_NS {
            let ns = n.to_string();
            let count = |kind: &str| {
                bench
                    .iter()
                    .filter(|b| {
                        b.get("kind").map(String::as_str) == Some(kind)
                            && b.get("mode").map(String::as_str) == Some(mode)
                            && b.get("n") == Some(&ns)
                    })
                    .count()
            };
            assert_eq!(count("ring"), 1, "ring {mode} n={n}: {}", show(out));
            let tails = count("switch_tail");
            if mode == "fass" && n > 15 {
                assert!(tails <= 1, "switch_tail {mode} n={n}: {}", show(out));
            } else {
                assert_eq!(tails, 1, "switch_tail {mode} n={n}: {}", show(out));
            }
        }
    }
}

#[test]
fn token_ring_without_touch() {
    let out = run("scenario=ring mode=naive,fcse,fass n=2,4,8,14,16,24,32 passes=4 touch=0");
    check_ring(&out, "0", false);
}

#[test]
fn token_ring_touching_4_kib() {
    let out =
        run_measuring("scenario=ring mode=naive,fcse,fass n=2,4,8,14,16,24,32 passes=4 touch=4096");
    check_ring(&out, "4096", true);
}

fn proc_lines(out: &QemuOutcome, from: &str, to: &str) -> Vec<HashMap<String, String>> {
    // PROC lines of one scenario run: between the previous BASELINE (or the
    // start) and its RESULT line.
    let texts: Vec<&str> = out.lines.iter().map(|l| l.text.as_str()).collect();
    let end = texts
        .iter()
        .position(|t| t.starts_with(to))
        .unwrap_or_else(|| panic!("no line starting {to}"));
    let start = texts[..end]
        .iter()
        .rposition(|t| t.starts_with(from))
        .map_or(0, |i| i + 1);
    texts[start..end]
        .iter()
        .filter_map(|t| t.strip_prefix("PROC "))
        .map(|rest| {
            rest.split(' ')
                .filter_map(|kv| kv.split_once('='))
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        })
        .collect()
}

#[test]
fn collisions_faults_bad_calls_fuzzing_and_ipc() {
    let out = run(
        "scenario=collide,faults,badcalls,fuzz,ipc mode=naive,fcse,fass n=4 rounds=10 calls=10000",
    );
    let results = records(out_ref(&out), "RESULT");
    for mode in ["naive", "fcse", "fass"] {
        // Collision: two processes map different data at 0x04000000 and
        // 0x04100000.
        let r = find(&results, &[("name", "collide"), ("mode", mode)]).unwrap();
        let procs = proc_lines(
            &out,
            "BASELINE",
            &format!("RESULT name=collide mode={mode} "),
        );
        // Each always read its own data, in every mode (FCSE-only: best
        // effort, the colliders' spaces move to PID 0 and pay flushes).
        assert_eq!(num(r, "exited_ok"), 3, "{r:?}");
        assert_eq!(num(r, "killed"), 0, "{r:?}");
        assert!(procs.iter().all(|p| p["code"] == "0"), "{procs:?}");
        if mode == "fcse" {
            assert!(num(r, "full_flushes") > 0, "{r:?}");
        }
        if mode == "fass" {
            assert!(num(r, "collisions") >= 10, "{r:?}");
            assert!(num(r, "domain_faults") >= 10, "{r:?}");
            // The second page's collision of each turn finds the other
            // collider's domain clean (flushed by the first): no flush.
            // (A timer tick between the two pages spoils a turn: >= 5 of 10.)
            assert!(num(r, "flush_free_collisions") >= 5, "{r:?}");
            assert!(
                num(r, "flush_free_collisions") < num(r, "domain_faults"),
                "{r:?}"
            );
        } else {
            assert_eq!(num(r, "flush_free_collisions"), 0, "{r:?}");
        }
        check_baseline(&out, "collide", mode, "0");

        // Faults: five faulters killed with the right kind, the workers finish.
        let r = find(&results, &[("name", "faults"), ("mode", mode)]).unwrap();
        assert_eq!(num(r, "killed"), 5, "{r:?}");
        assert_eq!(num(r, "exited_ok"), 2, "{r:?}");
        let procs = proc_lines(
            &out,
            "BASELINE",
            &format!("RESULT name=faults mode={mode} "),
        );
        let killed: Vec<_> = procs.iter().filter(|p| p["exit"] == "killed").collect();
        let expect = [
            ("data", "permission", "section", "0xc0000000"),
            ("data", "translation", "section", "0x02008000"),
            ("data", "translation", "section", "0x00e00000"),
            ("prefetch", "permission", "page", "0x00500000"),
            ("data", "permission", "page", "0x00008000"),
        ];
        assert_eq!(killed.len(), expect.len(), "{procs:?}");
        for (p, (trap, fault, level, addr)) in killed.iter().zip(expect) {
            assert_eq!(
                (
                    p["trap"].as_str(),
                    p["fault"].as_str(),
                    p["level"].as_str(),
                    p["addr"].as_str()
                ),
                (trap, fault, level, addr),
                "{mode}: {p:?}"
            );
        }
        check_baseline(&out, "faults", mode, "0");

        // Bad system calls: every invalid call got its error code.
        let procs = proc_lines(
            &out,
            "BASELINE",
            &format!("RESULT name=badcalls mode={mode} "),
        );
        let checker = procs.iter().find(|p| p["role"] == "8").unwrap();
        let code: u64 = checker["code"].parse().unwrap();
        // All 22 invalid calls (bits 0..21) and the valid MAP/UNMAP/STATS/PRINT
        // pass in every mode.
        assert_eq!(code, 0, "{mode}: bad-call mask {code:#x}");
        // All 22 refusals are counted as errors by the kernel: every typed
        // error becomes r0 at one place (`Kernel::set_result`), SEND's
        // refusals on the IPC path included.
        assert_eq!(checker["errors"], "22", "{checker:?}");

        // 10,000 random system calls: the kernel survives, nothing is killed.
        let r = find(&results, &[("name", "fuzz"), ("mode", mode)]).unwrap();
        assert_eq!(num(r, "exited_ok"), 2, "{r:?}");
        assert_eq!(num(r, "killed"), 0, "{r:?}");
        assert!(num(r, "syscalls") >= 10_000, "{r:?}");

        // IPC: n = 4 processes, a server and 3 clients, 10 round trips each.
        let r = find(&results, &[("name", "ipc"), ("mode", mode), ("n", "4")]).unwrap();
        assert_eq!(num(r, "exited_ok"), 4, "{r:?}");
        assert_eq!(num(r, "round_trips"), 30, "{r:?}");
        let s = find(&records(&out, "STEADY"), &[("name", "ipc"), ("mode", mode)])
            .cloned()
            .unwrap();
        if mode != "naive" {
            assert_eq!(num(&s, "dflush"), 0, "{s:?}");
        }
        check_baseline(&out, "ipc", mode, "4");
    }
    assert!(out.has_line("USER id=0 msg=badcalls: all invalid calls refused"));
}

/// `SEND_RECV` (the `sendrecv` scenario's three processes, see the role):
/// the hand-off to a receiver waiting in RECV with the caller left in
/// RECV, the send queued on a receiver that is not waiting and the
/// caller's receive then taking a sender queued on it meanwhile, and the
/// refusals (no such process, the caller itself), in every mode; the same
/// kernel state before and after.
#[test]
fn send_recv_hands_off_queues_and_refuses() {
    let out = run("scenario=sendrecv mode=naive,fcse,fass");
    let results = records(&out, "RESULT");
    for mode in ["naive", "fcse", "fass"] {
        let r = find(&results, &[("name", "sendrecv"), ("mode", mode)])
            .unwrap_or_else(|| panic!("no RESULT for sendrecv {mode}\n{}", show(&out)));
        assert_eq!(num(r, "exited_ok"), 3, "{r:?}");
        assert_eq!(
            num(r, "failed") + num(r, "killed") + num(r, "stuck"),
            0,
            "{r:?}"
        );
        let procs = proc_lines(
            &out,
            "BASELINE",
            &format!("RESULT name=sendrecv mode={mode} "),
        );
        assert_eq!(procs.len(), 3, "{procs:?}");
        // Each process's failed checks (process 0: a bit mask).
        assert!(procs.iter().all(|p| p["code"] == "0"), "{mode}: {procs:?}");
        // The four refusals are the kernel's typed errors.
        let checker = procs.iter().find(|p| p["id"] == "0").unwrap();
        assert_eq!(checker["errors"], "4", "{checker:?}");
        check_baseline(&out, "sendrecv", mode, "0");
    }
}

/// `LOAD_CODE` in every mode: six routines loaded at one address of the
/// code window (mapped, then replaced in place five times), each called
/// and returning its own value; a load outside the window and one from
/// inside it refused (the process's two errors); every frame back after.
/// QEMU has no caches, so this checks the system call; what the I-cache
/// would hold is the cache check's `omit=icache-load`.
#[test]
fn code_pages_load_and_replace_in_place() {
    let out = run("scenario=codeload mode=naive,fcse,fass rounds=6");
    let results = records(&out, "RESULT");
    for mode in ["naive", "fcse", "fass"] {
        let r = find(&results, &[("name", "codeload"), ("mode", mode)])
            .unwrap_or_else(|| panic!("no RESULT for codeload {mode}\n{}", show(&out)));
        assert_eq!(num(r, "exited_ok"), 1, "{r:?}");
        let procs = proc_lines(
            &out,
            "BASELINE",
            &format!("RESULT name=codeload mode={mode} "),
        );
        assert_eq!(procs.len(), 1, "{procs:?}");
        assert_eq!(procs[0]["code"], "0", "{mode}: {procs:?}");
        assert_eq!(procs[0]["errors"], "2", "{mode}: {procs:?}");
        // MAP, six loads, two refusals, EXIT.
        assert_eq!(procs[0]["syscalls"], "10", "{mode}: {procs:?}");
        check_baseline(&out, "codeload", mode, "0");
    }
}

/// `scenario=recycle`: sixteen spaces with fixed pages above 32 MiB on
/// FASS's fifteen domains, two of them mapping the same address in turn;
/// every page reads zero when fresh and keeps its pattern across the
/// yields, in every mode. Under FASS domains are recycled with full
/// flushes (none of the spaces is window-exclusive).
#[test]
fn recycled_domains_keep_fixed_pages_private() {
    let out = run("scenario=recycle mode=naive,fcse,fass rounds=2");
    let results = records(&out, "RESULT");
    for mode in ["naive", "fcse", "fass"] {
        let r = find(&results, &[("name", "recycle"), ("mode", mode)])
            .unwrap_or_else(|| panic!("no RESULT for recycle {mode}\n{}", show(&out)));
        assert_eq!(num(r, "exited_ok"), 16, "{r:?}");
        if mode == "fass" {
            assert!(num(r, "recycles") > 0, "{r:?}");
            assert!(num(r, "full_flushes") > 0, "{r:?}");
        }
        check_baseline(&out, "recycle", mode, "0");
    }
}

fn out_ref(out: &QemuOutcome) -> &QemuOutcome {
    out
}

#[test]
fn shared_segment_in_every_mode() {
    let out = run("scenario=share mode=naive,fcse,fass rounds=10");
    let (results, steady) = (records(&out, "RESULT"), records(&out, "STEADY"));
    for mode in ["naive", "fcse", "fass"] {
        let r = find(&results, &[("name", "share"), ("mode", mode)]).unwrap();
        // Three sharers took 30 turns; each read the previous writer's value.
        assert_eq!(num(r, "exited_ok"), 3, "{r:?}");
        assert_eq!(num(r, "killed"), 0, "{r:?}");
        let s = find(&steady, &[("name", "share"), ("mode", mode)]).unwrap();
        let switches = num(s, "switches");
        assert!(switches >= 20, "{s:?}");
        match mode {
            "naive" => assert_eq!(num(s, "dflush"), switches, "{s:?}"),
            "fcse" => {
                assert_eq!(num(s, "dflush"), 0, "{s:?}");
                assert_eq!(num(s, "tlb"), switches, "{s:?}");
            }
            _ => {
                assert_eq!(num(s, "dflush"), 0, "{s:?}");
                assert_eq!(num(s, "tlb"), 0, "{s:?}");
                assert_eq!(num(s, "seg_domains"), 1, "{s:?}");
            }
        }
        check_baseline(&out, "share", mode, "0");
    }
}

#[test]
fn tcm_exchanges_user_and_kernel_pages_while_processes_run() {
    let out = run_measuring("scenario=tcm mode=naive,fcse,fass rounds=10");
    let results = records(&out, "RESULT");
    let tcm = records(&out, "TCM");
    for mode in ["naive", "fcse", "fass"] {
        // The TCM process (its hot code page into ITCM, its data page into
        // DTCM and back, code into DTCM refused), the IPC server, two
        // clients and a worker all finish with their own results intact.
        let r = find(&results, &[("name", "tcm"), ("mode", mode)]).unwrap();
        assert_eq!(num(r, "exited_ok"), 5, "{r:?}");
        assert_eq!(
            num(r, "failed") + num(r, "killed") + num(r, "stuck"),
            0,
            "{r:?}"
        );
        assert_eq!(num(r, "round_trips"), 80, "{r:?}");
        // Every TLB entry invalidation reaches the counter, the exchanges'
        // own included: 28 of them (the code page in and back, 3 each at
        // the switch; the writable data page in and back, 3 each at the
        // protection, the switch and the restore; the kernel page out and
        // back, 2 each at the switch), 49 the scenario's mapping changes
        // (29 before the hostile scenario's roles grew the user image from
        // 3 to 5 pages, the VFP roles to 6 and the code-load role to 7:
        // each of the 5 processes unmaps 4 more at its exit).
        assert_eq!(num(r, "tlb_entries"), 77, "{r:?}");
        let procs = proc_lines(&out, "BASELINE", &format!("RESULT name=tcm mode={mode} "));
        let user = procs.iter().find(|p| p["role"] == "10").unwrap();
        assert_eq!(user["code"], "0", "{mode}: {user:?}");
        // The refused code-into-DTCM exchange is its one error.
        assert_eq!(user["errors"], "1", "{mode}: {user:?}");

        let t = find(&tcm, &[("mode", mode)]).unwrap();
        assert_eq!(t["source"], "board", "{t:?}");
        assert_eq!(num(t, "user_exchanges"), 4, "{t:?}");
        // The switch/IPC page went into ITCM and back while processes ran.
        assert_eq!(num(t, "kernel_out"), 1, "{t:?}");
        assert_eq!(num(t, "kernel_back"), 1, "{t:?}");
        assert_eq!(t["kernel_seen_in_itcm"], "true", "{t:?}");
        assert!(num(t, "kernel_switches_in_itcm") > 0, "{t:?}");
        assert_eq!(t["kernel_error"], "false", "{t:?}");
        assert_eq!(t["kernel_page_home"], "true", "{t:?}");
        assert_eq!(num(t, "tcm_frames_in_use"), 0, "{t:?}");
        check_baseline(&out, "tcm", mode, "0");
    }
    // Every exchange: 2 bounded steps (protect and the 4 KiB copy; switch,
    // the 4 KiB flush and restore); the timer preempted them in between.
    let xs = records(&out, "TCMX");
    assert_eq!(xs.len(), 12, "{}", show(&out));
    for x in &xs {
        assert_eq!(num(x, "steps"), 2, "{x:?}");
        assert!(num(x, "windows") >= 1, "{x:?}");
        assert!(
            num(x, "longest_window_instr") < num(x, "instr") / 4,
            "{x:?}"
        );
    }
    assert!(xs.iter().map(|x| num(x, "preempted")).sum::<u64>() > 0);
    let bench = records(&out, "BENCH");
    for kind in ["tcm", "tcm_window"] {
        assert_eq!(
            bench.iter().filter(|b| b["kind"] == kind).count(),
            3,
            "{kind}"
        );
    }
}

/// The hostile scenario (issue 15): a victim with secret pages and
/// attackers that exchange pages into TCM and, between the steps of the
/// exchange, try to unmap, re-map, exit, fault, delete, re-state, map over
/// the resource slots and start a second exchange, from Thumb and from ARM
/// state, or unmap a page in TCM so that the victim's secret lands in its
/// frame. No attacker ever runs its own code mid-exchange (the kernel
/// blocks it in the call instead of replaying the call by rewinding the
/// pc), reads a secret word, has a refused call accepted, or loses its own
/// data; the victim's secret never changes; every TCM frame, busy flag and
/// write-protect record is back afterwards.
///
/// Twelve rounds: the victim's `ALLOC`s wrap around its seven slots, so it
/// unmaps a page and maps a fresh frame at the same address while its FCSE
/// PID is set (with rounds=4 it never did, and a TLB entry left at the
/// unrelocated address went unnoticed: see `proc::platform` in the kernel).
#[test]
fn hostile_processes_cannot_reach_a_victim_through_the_tcm_exchange() {
    let out = run_icount("scenario=hostile mode=naive,fcse,fass rounds=12");
    let results = records(&out, "RESULT");
    let hostile = records(&out, "HOSTILE");
    for mode in ["naive", "fcse", "fass"] {
        let r = find(&results, &[("name", "hostile"), ("mode", mode)]).unwrap();
        // The victim, seven attackers and two watchers all exit 0: the
        // victim's secret words unchanged; each attacker read none of them
        // (bits 0-15), never escaped mid-exchange (bit 16), had no refused
        // call accepted (bit 17), kept its own data (bit 18) and had every
        // exchange and release it relies on succeed (bit 19).
        assert_eq!(num(r, "procs"), 10, "{r:?}");
        assert_eq!(num(r, "exited_ok"), 10, "{mode}: {}", show(&out));
        assert_eq!(num(r, "killed"), 0, "{r:?}");
        let procs = proc_lines(
            &out,
            "BASELINE",
            &format!("RESULT name=hostile mode={mode} "),
        );
        assert_eq!(procs.len(), 10, "{procs:?}");
        for p in &procs {
            assert_eq!(p["code"], "0", "{mode}: {p:?}");
        }
        // The exchanges were preempted between their steps, the callers
        // in ARM and in Thumb state.
        let h = find(&hostile, &[("mode", mode)]).unwrap();
        assert!(num(h, "preempted_arm") > 0, "{h:?}");
        assert!(num(h, "preempted_thumb") > 0, "{h:?}");
        check_baseline(&out, "hostile", mode, "0");
    }
}

/// `key=value` records of `kind` between the previous `BASELINE` (or the
/// start) and the line starting `to`.
fn records_before(out: &QemuOutcome, kind: &str, to: &str) -> Vec<HashMap<String, String>> {
    let texts: Vec<&str> = out.lines.iter().map(|l| l.text.as_str()).collect();
    let end = texts
        .iter()
        .position(|t| t.starts_with(to))
        .unwrap_or_else(|| panic!("no line starting {to}"));
    let start = texts[..end]
        .iter()
        .rposition(|t| t.starts_with("BASELINE"))
        .map_or(0, |i| i + 1);
    texts[start..end]
        .iter()
        .filter_map(|t| t.strip_prefix(&format!("{kind} ")))
        .map(|rest| {
            rest.split(' ')
                .filter_map(|kv| kv.split_once('='))
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        })
        .collect()
}

/// Regressions of issue 24: a refused unmap keeps the frame and its
/// record; a dead process keeps no page record (TCM resource pages and
/// exchange targets included); a new frame is cleaned after zeroing, a
/// spawn cleans what it loaded and invalidates the I-cache for code.
/// In-kernel checks on the installed kernel (`proc/kstate.rs`), in every
/// mode.
#[test]
fn kernel_page_bookkeeping_regressions() {
    let out = run("scenario=kstate mode=naive,fcse,fass");
    let ks = records(&out, "KSTATE");
    for mode in ["naive", "fcse", "fass"] {
        let r = find(&ks, &[("mode", mode)]).unwrap_or_else(|| panic!("{}", show(&out)));
        assert_eq!(r["failed"], "0x0", "{mode}: {}", show(&out));
    }
}

#[test]
fn tcm_page_operations_follow_spm_rules() {
    let out = run("scenario=tcmops mode=naive,fcse,fass");
    let results = records(&out, "RESULT");
    let ops = records(&out, "TCMOPS");
    for mode in ["naive", "fcse", "fass"] {
        let r = find(&results, &[("name", "tcmops"), ("mode", mode)]).unwrap();
        assert_eq!(num(r, "exited_ok"), 1, "{r:?}");
        let to = format!("RESULT name=tcmops mode={mode} ");
        let procs = proc_lines(&out, "BASELINE", &to);
        let user = procs.iter().find(|p| p["role"] == "11").unwrap();
        // Every check passed: the created DTCM page read as zero over the
        // old pattern, giving a mapped page up as a resource gave EPERM,
        // undefined gave ESTATE and kernel page EPERM, ...
        assert_eq!(user["code"], "0", "{mode}: {user:?}");
        // ... and the eleven refusals it provokes are its only errors.
        assert_eq!(user["errors"], "11", "{mode}: {user:?}");

        let t = find(&ops, &[("mode", mode)]).unwrap();
        assert_eq!(num(t, "tcm_frames_in_use"), 0, "{t:?}");
        let lines = records_before(&out, "TCMOP", &to);
        let (creates, deletes): (Vec<_>, Vec<_>) = lines.iter().partition(|l| l["call"] == "17");
        assert_eq!(creates.len(), 3, "{lines:?}");
        assert_eq!(deletes.len(), 3, "{lines:?}");
        assert!(deletes.iter().all(|l| l["call"] == "18"), "{lines:?}");
        // The DTCM page came from the frame the exchanged page had left
        // its pattern in (the bank's first), yet read as zero.
        assert_eq!(creates[0]["pa"], t["dtcm"], "{lines:?}");
        // Each create takes one frame, each delete gives it back: after the
        // deletes, RAM and TCM are at their counts from before the creates.
        let (first, last) = (creates[0], deletes[2]);
        assert_eq!(num(first, "tcm_in_use_before"), 0, "{lines:?}");
        assert_eq!(num(last, "tcm_in_use"), 0, "{lines:?}");
        assert_eq!(
            num(first, "ram_free_before"),
            num(last, "ram_free"),
            "{lines:?}"
        );
        for c in &creates {
            assert_eq!(
                num(c, "ram_free_before") + num(c, "tcm_in_use"),
                num(c, "ram_free") + num(c, "tcm_in_use_before") + 1,
                "{c:?}"
            );
        }
        for d in &deletes {
            assert_eq!(
                num(d, "ram_free") + num(d, "tcm_in_use_before"),
                num(d, "ram_free_before") + num(d, "tcm_in_use") + 1,
                "{d:?}"
            );
        }
        check_baseline(&out, "tcmops", mode, "0");
    }
}

#[test]
fn large_rings_beyond_the_pids_and_domains() {
    let out = run("scenario=ring mode=naive,fcse,fass n=48,64 passes=4");
    let (results, steady) = (records(&out, "RESULT"), records(&out, "STEADY"));
    assert!(records(&out, "LIMIT").is_empty(), "{}", show(&out));
    for mode in ["naive", "fcse", "fass"] {
        for n in ["48", "64"] {
            let keys = [("name", "ring"), ("mode", mode), ("n", n)];
            let r = find(&results, &keys).unwrap();
            assert_eq!(num(r, "exited_ok").to_string(), n, "{r:?}");
            let s = find(&steady, &keys).unwrap();
            match (mode, n) {
                // 63 PIDs: the 64th space shares one (best effort) and is flushed for.
                ("fcse", "64") => assert!(num(s, "dflush") > 0, "{s:?}"),
                ("fcse", _) => assert_eq!(num(s, "dflush"), 0, "{s:?}"),
                // 15 domains: recycling.
                ("fass", _) => assert!(num(s, "recycles") > 0, "{s:?}"),
                _ => {}
            }
            check_baseline(&out, "ring", mode, n);
        }
    }
}

#[test]
fn fass_switch_path_uses_the_precomputed_registers() {
    let out = run_measuring("scenario=ring mode=fcse,fass n=4 passes=4");
    let paths = records(&out, "SWITCHPATH");
    let fass = find(&paths, &[("mode", "fass")]).unwrap();
    let fcse = find(&paths, &[("mode", "fcse")]).unwrap();
    // Every measured switch between the marks took the lean path: FASS
    // and FCSE-only (four spaces, a PID each) alike switch through the
    // kernel's record.
    for p in [fass, fcse] {
        assert!(num(p, "measured") >= 12, "{p:?}");
        assert_eq!(num(p, "lean"), num(p, "measured"), "{p:?}");
    }
    // Decision-to-user is part of the round, and FASS's is the shorter path.
    assert!(
        num(fass, "mean") < num(fass, "round_per_switch"),
        "{fass:?}"
    );
    assert!(num(fass, "mean") < num(fcse, "mean"), "{fass:?} {fcse:?}");
    let bench = records(&out, "BENCH");
    let b = find(&bench, &[("kind", "switch_tail"), ("mode", "fass")]).unwrap();
    assert_eq!(num(b, "value"), num(fass, "mean"), "{b:?}");
}

#[test]
fn fass_collision_resolution_is_timed() {
    let out = run_measuring("scenario=fault mode=fass rounds=10");
    let (faults, results, bench) = (
        records(&out, "FAULT"),
        records(&out, "RESULT"),
        records(&out, "BENCH"),
    );
    let f = find(&faults, &[("mode", "fass")]).unwrap();
    let r = find(&results, &[("name", "fault")]).unwrap();
    assert_eq!(num(r, "exited_ok"), 2, "{r:?}");
    assert_eq!(num(f, "resolved"), num(r, "domain_faults"), "{f:?} {r:?}");
    assert!(num(f, "resolved") >= 20, "{f:?}");
    // Both kinds occur: with a full flush and without (TLB only; a timer
    // tick between the two pages spoils a turn, so not every round).
    assert!(num(f, "flushed") >= 10, "{f:?}");
    assert!(num(f, "flush_free") >= 5, "{f:?}");
    assert_eq!(
        num(f, "flushed") + num(f, "flush_free"),
        num(f, "resolved"),
        "{f:?}"
    );
    assert_eq!(
        num(f, "flush_free"),
        num(r, "flush_free_collisions"),
        "{f:?} {r:?}"
    );
    let b = find(&bench, &[("kind", "fault")]).unwrap();
    assert!(
        num(b, "value") > 0 && num(b, "value") <= num(f, "max_instr"),
        "{b:?}"
    );
    let b = find(&bench, &[("kind", "fault_flush")]).unwrap();
    assert!(
        num(b, "value") > 0 && num(b, "value") <= num(f, "flushed_max_instr"),
        "{b:?}"
    );
}

/// The `BENCH` value of `kind` for `mode` and `n`.
fn bench_value(out: &QemuOutcome, kind: &str, mode: &str, n: &str) -> u64 {
    let bench = records(out, "BENCH");
    let b = find(&bench, &[("kind", kind), ("mode", mode), ("n", n)])
        .unwrap_or_else(|| panic!("no BENCH kind={kind} mode={mode} n={n}: {}", show(out)));
    num(b, "value")
}

/// Issue 11: yield, one-way IPC and preemption cost the same at 14
/// processes as at 2 (within 5%: no scan over the process slots on the
/// trap, scheduling or IPC path), in every mode; and every mode runs the
/// scenarios with the same results. The IPC round trip is counted over
/// every IPC transit (issue 25): at n=14 the server is busy and a third of
/// the calls queue (the slow path), so it is not comparable across n; the
/// hand-off itself is `ipc_oneway`'s, and at n=2 nearly every IPC transit
/// is one.
#[test]
fn transits_are_independent_of_the_process_count() {
    let out = run_measuring(
        "scenario=ring,yield,ipc,preempt mode=naive,fcse,fass n=2,4,14 touch=0 passes=20 rounds=20",
    );
    let results = records(&out, "RESULT");
    let transits = records(&out, "TRANSITS");
    for mode in ["naive", "fcse", "fass"] {
        let t = find(&transits, &[("name", "ipc"), ("mode", mode), ("n", "2")]).unwrap();
        assert!(num(t, "ipc_handoff_pct") >= 90, "{t:?}");
        assert!(
            bench_value(&out, "ipc_roundtrip", mode, "14")
                >= bench_value(&out, "ipc_roundtrip", mode, "2"),
            "{mode}: queued IPC costs more than a hand-off"
        );
        for (kind, n2) in [
            ("yield", "2"),
            ("preempt", "2"),
            // The ring passes the token with SEND_RECV, so even in a ring
            // of 2 the next member waits in RECV: every pass a hand-off.
            ("ipc_oneway", "2"),
        ] {
            let (a, b) = (
                bench_value(&out, kind, mode, n2),
                bench_value(&out, kind, mode, "14"),
            );
            let (lo, hi) = (a.min(b) as f64, a.max(b) as f64);
            assert!(hi <= lo * 1.05, "{kind} {mode}: n={n2} {a}, n=14 {b}");
        }
        for name in ["ring", "yield", "ipc", "preempt"] {
            for n in ["2", "14"] {
                let r = find(&results, &[("name", name), ("mode", mode), ("n", n)])
                    .unwrap_or_else(|| panic!("no RESULT {name} {mode} {n}"));
                let f = find(&results, &[("name", name), ("mode", "fass"), ("n", n)]).unwrap();
                for key in [
                    "procs",
                    "exited_ok",
                    "failed",
                    "killed",
                    "stuck",
                    "round_trips",
                ] {
                    assert_eq!(r.get(key), f.get(key), "{name} {mode} n={n} {key}");
                }
                assert_eq!(num(r, "exited_ok"), n.parse::<u64>().unwrap(), "{r:?}");
            }
        }
    }
}
