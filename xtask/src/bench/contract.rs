//! The contract between `cargo xtask bench` and the demo kernel: which
//! command lines the bench boots and which `BENCH` kinds each must print.
//!
//! This module is the one place that defines it; `docs/benchmarks/method.md`
//! carries the same table ([`markdown`], checked by a test), and the
//! kernel's scenarios follow it.
//!
//! Every boot runs one scenario under the three modes and every process
//! count (`mode=naive,fcse,fass n=2,8,14,16,32,64`), so a whole touch size of
//! a scenario costs one boot. For every (mode, n) of its command line the
//! kernel prints each kind the scenario lists, as
//!
//! ```text
//! BENCH kind=K mode=M n=N touch=T value=V unit=instructions [min=A max=B]
//! ```
//!
//! with `n` and `touch` as on the command line, and `V` the mean over the
//! scenario's measured window (after a warm-up round, no process exiting
//! inside it; the `MARK 0` system call that opens it is not in it), rounded
//! to the nearest instruction, counted under `-icount shift=10,sleep=off`
//! by the kernel's measuring build (feature `measure`; the shipped build
//! prints no `BENCH` line). Unless a kind says otherwise, a figure runs
//! from the first instruction of the exception vector to the return to
//! user mode (`movs pc, lr` or equivalent) inclusive, and counts kernel
//! instructions only; `min`/`max` are the shortest and longest single
//! transit where the figure is one transit's.

use super::line::{Kind, Mode};

/// The timer period of every scenario but `preempt` and `tcm` (whose
/// figures need the tick): 100 s, so that no periodic tick falls inside a
/// measured window. Under `-icount` a tick comes every so many
/// instructions, and the measuring build, which runs its accounting
/// between transits, would take more of them per window than the shipped
/// build the outside count measures; a tick taken at a return, before any
/// user instruction, also lengthens the transit it ends (counted from
/// outside, the transit runs to the next user instruction).
macro_rules! no_tick {
    () => {
        "slice=100000000"
    };
}

/// Process counts of the switch and IPC scenarios.
pub const NS: [u32; 6] = [2, 8, 14, 16, 32, 64];
/// Bytes each process touches per turn in the switch and IPC scenarios.
pub const TOUCHES: [u32; 2] = [0, 4096];

/// One scenario of the contract: booted once per touch size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Scenario {
    /// The name after `scenario=`.
    pub name: &'static str,
    /// The modes of `mode=`, all in one boot.
    pub modes: &'static [Mode],
    /// The counts of `n=`, all in one boot.
    pub ns: &'static [u32],
    /// One boot per touch size (`touch=`).
    pub touches: &'static [u32],
    /// Further words of the command line.
    pub extra: &'static str,
    /// The kinds the kernel prints for every (mode, n) of the boot.
    pub prints: &'static [Kind],
    /// What the processes do and what `n` counts.
    pub workload: &'static str,
}

impl Scenario {
    /// The command line of the boot with `touch` bytes.
    pub fn cmdline(&self, touch: u32) -> String {
        let join = |v: Vec<String>| v.join(",");
        let mut s = format!(
            "scenario={} mode={} n={} touch={touch}",
            self.name,
            join(self.modes.iter().map(|m| m.name().to_string()).collect()),
            join(self.ns.iter().map(u32::to_string).collect()),
        );
        if !self.extra.is_empty() {
            s.push(' ');
            s.push_str(self.extra);
        }
        s
    }

    /// Every command line of the scenario (one per touch size).
    pub fn cmdlines(&self) -> Vec<String> {
        self.touches.iter().map(|&t| self.cmdline(t)).collect()
    }

    /// Every (kind, mode, n, touch) the scenario's boots must print.
    pub fn expected(&self) -> Vec<(Kind, Mode, u32, u32)> {
        let mut v = Vec::new();
        for &touch in self.touches {
            for &mode in self.modes {
                for &n in self.ns {
                    for &kind in self.prints {
                        v.push((kind, mode, n, touch));
                    }
                }
            }
        }
        v
    }
}

const ALL_MODES: &[Mode] = &Mode::ALL;
const FASS_ONLY: &[Mode] = &[Mode::Fass];

/// The scenarios `cargo xtask bench` boots, in order.
pub const SCENARIOS: [Scenario; 8] = [
    Scenario {
        name: "ring",
        modes: ALL_MODES,
        ns: &NS,
        touches: &TOUCHES,
        extra: concat!("passes=20 ", no_tick!()),
        prints: &[Kind::Ring, Kind::IpcOneway, Kind::SwitchTail],
        workload: "token ring of n processes (lmbench `lat_ctx`): each receives the token, touches its bytes and passes it on with one `SEND_RECV` (send, then receive, as L4's `lat_ctx` would): the next one is always blocked in receive",
    },
    Scenario {
        name: "yield",
        modes: ALL_MODES,
        ns: &NS,
        touches: &TOUCHES,
        extra: concat!("rounds=20 ", no_tick!()),
        prints: &[Kind::Yield],
        workload: "n processes, each `rounds` times: touch its bytes, yield",
    },
    Scenario {
        name: "preempt",
        modes: ALL_MODES,
        ns: &NS,
        touches: &TOUCHES,
        extra: "rounds=20",
        prints: &[Kind::Preempt],
        workload: "n processes that make no system call while measured: each touches its bytes in a loop until the timer has preempted it `rounds` times",
    },
    Scenario {
        name: "ipc",
        modes: ALL_MODES,
        ns: &NS,
        touches: &TOUCHES,
        extra: concat!("rounds=20 ", no_tick!()),
        prints: &[Kind::IpcRoundtrip],
        workload: "n processes: one server and n - 1 clients (n counts every process, the server included); each client makes `rounds` calls, touching its bytes before each, the server touches its bytes and replies",
    },
    Scenario {
        name: "fault",
        modes: FASS_ONLY,
        ns: &[2],
        touches: &[0],
        extra: concat!("rounds=20 ", no_tick!()),
        prints: &[Kind::Fault, Kind::FaultFlush],
        workload: "two colliders on the same fixed pages (domain faults exist under FASS only)",
    },
    Scenario {
        name: "tcm",
        modes: FASS_ONLY,
        ns: &[1],
        touches: &[4096],
        extra: "rounds=20",
        prints: &[Kind::Tcm, Kind::TcmWindow],
        workload: "a 4 KiB code page moved into ITCM by `TCM_EXCHANGE` while IPC traffic runs",
    },
    Scenario {
        name: "longipc",
        modes: ALL_MODES,
        ns: &[2],
        touches: &[64, 1024, 4096],
        extra: concat!("rounds=20 ", no_tick!()),
        prints: &[Kind::LongIpc, Kind::LongCopy],
        workload: "two processes in a long-IPC ping-pong (`LSEND_RECV`) of `touch` bytes, every byte checked; then the same copy inside one space between `LAP` stamps",
    },
    Scenario {
        name: "vfpyield",
        modes: ALL_MODES,
        ns: &[2],
        touches: &[0],
        extra: concat!("rounds=20 vfp=lazy,eager ", no_tick!()),
        prints: &[
            Kind::YieldVfp0Lazy,
            Kind::YieldVfp0Eager,
            Kind::YieldVfp1Lazy,
            Kind::YieldVfp1Eager,
            Kind::YieldVfp2Lazy,
            Kind::YieldVfp2Eager,
        ],
        workload: "two processes yielding to each other `rounds` times, of which 0, 1 or 2 compute with the VFP each round (`vfpyield0`, `vfpyield1`, `vfpyield2`), under lazy and eager VFP switching (versatilepb only: collie and connex have no VFP)",
    },
];

/// What a kind measures (the definition the kernel implements).
pub fn definition(kind: Kind) -> &'static str {
    match kind {
        Kind::Yield => "A calls yield, B runs: from the SWI vector of A's yield to B's return to user mode",
        Kind::IpcOneway => "the ring's pass, `SEND_RECV` to B blocked in receive, B runs with the message: from the SWI vector of A's call to B's return to user mode, over every IPC transit of the window (hand-offs and queued ones; the hand-off share is in the kernel's `TRANSITS` line)",
        Kind::IpcRoundtrip => "every IPC transit of the window (calls, replies, receives; hand-offs and the slow path of queued callers alike) divided by the round trips completed in it (the server's user instructions not counted); the hand-off share is in the kernel's `TRANSITS` line",
        Kind::Preempt => "timer IRQ in A, B runs: from the IRQ vector to B's return to user mode",
        Kind::Ring => "every kernel instruction (every trap and IRQ: sends, receives, timer, domain recycling, and every refill and collision fault, the fast path's included) of the measured passes divided by the switches in them",
        Kind::Fault => "a domain fault (collision) resolved without a cache flush: from the data-abort vector to the return that retries the access",
        Kind::FaultFlush => "the same, resolved with a full cache flush",
        Kind::SwitchTail => "secondary: the tail of a switch the assembly fast path makes, from the scheduler's decision (another process picked) to the return to user mode (the old `kind=switch`, still read under that name); no figure where every switch takes the Rust paths, which take no stamp",
        Kind::Tcm => "one 4 KiB exchange into TCM by the `TCM_EXCHANGE` system call, all its steps",
        Kind::TcmWindow => "the exchange's longest interrupts-off window",
        Kind::IpcLegacy => "legacy (old kernel): every instruction between the ipc scenario's marks, user code included, per round trip",
        Kind::LongIpc => "A sends `touch` bytes (`LSEND_RECV`) to B blocked in a long receive, B runs with them in its buffer: from the SWI vector of A's send to B's return to user mode, the buffer checks and the copy included",
        Kind::LongCopy => "the same bytes copied inside one space by user code (the kernel's copy routine): the counter between the entries of the `LAP` calls around the copy, less the same around nothing",
        Kind::YieldVfp0Lazy => "two processes that do not use the VFP yield to each other, lazy VFP switching: the kernel instructions of the measured yields (from the SWI vector to the return to user mode) and of the VFP traps (undefined-instruction vector to the return) in their window, per yield",
        Kind::YieldVfp0Eager => "the same, eager VFP switching",
        Kind::YieldVfp1Lazy => "the same with one of the two computing with the VFP, lazy: the yields and the VFP traps they cause, per yield",
        Kind::YieldVfp1Eager => "the same, eager (its state saved and loaded on each switch away from and to it)",
        Kind::YieldVfp2Lazy => "the same with both computing with the VFP, lazy",
        Kind::YieldVfp2Eager => "the same, eager",
    }
}

/// Every command line `cargo xtask bench` boots, in order.
pub fn cmdlines() -> Vec<String> {
    SCENARIOS.iter().flat_map(Scenario::cmdlines).collect()
}

/// The scenario whose command line is `cmdline`, if any.
pub fn scenario_of(cmdline: &str) -> Option<&'static Scenario> {
    SCENARIOS
        .iter()
        .find(|s| s.cmdlines().iter().any(|c| c == cmdline))
}

/// The scenario that prints `kind`, if the contract has one.
pub fn printed_by(kind: Kind) -> Option<&'static Scenario> {
    SCENARIOS.iter().find(|s| s.prints.contains(&kind))
}

/// The contract as Markdown: the command lines and what each prints, then
/// the definition of every kind. `docs/benchmarks/method.md` carries it
/// verbatim.
pub fn markdown() -> String {
    let mut out = String::from(
        "| command line (one boot each) | what runs | prints, for every mode and n of the line |\n|---|---|---|\n",
    );
    for s in &SCENARIOS {
        let kinds: Vec<String> = s.prints.iter().map(|k| format!("`{}`", k.name())).collect();
        out.push_str(&format!(
            "| {} | {} | {} |\n",
            s.cmdlines()
                .iter()
                .map(|c| format!("`{c}`"))
                .collect::<Vec<_>>()
                .join("<br>"),
            s.workload,
            kinds.join(", ")
        ));
    }
    out.push_str("\n| kind | what it measures |\n|---|---|\n");
    for k in Kind::ALL {
        out.push_str(&format!("| `{}` | {} |\n", k.name(), definition(k)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_but_the_legacy_one_has_exactly_one_scenario() {
        for k in Kind::ALL {
            let n = SCENARIOS.iter().filter(|s| s.prints.contains(&k)).count();
            let want = usize::from(k != Kind::IpcLegacy);
            assert_eq!(n, want, "{k:?}");
        }
    }

    #[test]
    fn the_switch_and_ipc_kinds_cover_every_mode_n_and_touch() {
        for k in [
            Kind::Yield,
            Kind::IpcOneway,
            Kind::IpcRoundtrip,
            Kind::Preempt,
            Kind::Ring,
        ] {
            let s = printed_by(k).unwrap();
            let e = s.expected();
            for m in Mode::ALL {
                for n in [2, 8, 14, 16, 32, 64] {
                    for t in [0, 4096] {
                        assert!(e.contains(&(k, m, n, t)), "{k:?} {m:?} {n} {t}");
                    }
                }
            }
        }
    }

    #[test]
    fn command_lines_are_the_documented_ones() {
        let c = cmdlines();
        assert_eq!(
            c[0],
            "scenario=ring mode=naive,fcse,fass n=2,8,14,16,32,64 touch=0 passes=20 slice=100000000"
        );
        assert_eq!(
            c[1],
            "scenario=ring mode=naive,fcse,fass n=2,8,14,16,32,64 touch=4096 passes=20 slice=100000000"
        );
        assert!(c.contains(
            &"scenario=fault mode=fass n=2 touch=0 rounds=20 slice=100000000".to_string()
        ));
        assert!(c.contains(&"scenario=tcm mode=fass n=1 touch=4096 rounds=20".to_string()));
        assert!(c.contains(
            &"scenario=vfpyield mode=naive,fcse,fass n=2 touch=0 rounds=20 vfp=lazy,eager slice=100000000"
                .to_string()
        ));
        // A few boots, not one per figure.
        assert_eq!(c.len(), 14);
        for l in &c {
            assert!(scenario_of(l).is_some(), "{l}");
            // The kernel's command-line buffer is 512 bytes.
            assert!(l.len() < 200, "{l}");
        }
        assert!(scenario_of("scenario=ring n=2").is_none());
    }

    #[test]
    fn the_markdown_names_every_command_line_and_kind() {
        let md = markdown();
        for c in cmdlines() {
            assert!(md.contains(&format!("`{c}`")), "{c}");
        }
        for k in Kind::ALL {
            assert!(md.contains(&format!("| `{}` |", k.name())), "{k:?}");
        }
    }
}
