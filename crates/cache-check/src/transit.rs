//! Kernel transits counted from outside the kernel: from the last
//! user-mode instruction of one process to the first user-mode instruction
//! of the next (or of the same) process.
//!
//! The counter sees every executed instruction, privileged or not, in
//! order ([`Counter::user`], [`Counter::kernel`]); a transit's length is
//! the number of privileged instructions between the two user instructions
//! (the vector's first instruction to the return to user mode, both
//! included), and its modelled cycles are the cache model's cycle count
//! across the same span. Nothing the kernel runs is left out, and nothing
//! needs the kernel's cooperation: the plain kernel (no markers) is counted
//! the same way.
//!
//! Classification, from the outside only:
//! * the vector entered (the kernel uses high vectors at `0xFFFF_0000`):
//!   SVC, IRQ, prefetch or data abort;
//! * for an SVC, the call number in r7 and the first argument in r0,
//!   followed through the user's instruction stream ([`crate::insn`]);
//! * which process runs next: a process is known by the physical page of
//!   its code (every process has its own copy of the user image), and one
//!   that left through an SVC resumes at the physical address after it,
//!   where the counter remembers which call it made.
//!
//! | kind | transit |
//! |---|---|
//! | `yield` | `YIELD` |
//! | `ipc_handoff` | a sending IPC call (`SEND`, `CALL`, `SEND_RECV`, `REPLY`, `REPLY_WAIT`) after which another process resumes from a receiving call (`RECV`, `CALL`, `SEND_RECV`, `REPLY_WAIT`): the message went straight to a waiting receiver |
//! | `ipc_queued` | every other IPC transit: a send that queues, a receive that blocks or takes a queued message |
//! | `preempt` | IRQ, after which another process runs |
//! | `irq` | IRQ, after which the same process resumes |
//! | `fault` | prefetch or data abort |
//! | `tcm` | `TCM_EXCHANGE` or `TCM_RELEASE` |
//! | `mark` | `MARK` (the measurement harness; never inside a window) |
//! | `other` | any other call, an unknown call number, an undefined instruction |
//!
//! Windows: the demo kernel's benchmark scenarios call `MARK 0` and
//! `MARK 1` around their measured rounds, once per (mode, n) run, in the
//! order of the command line; the counter opens a window after the
//! transit of a `MARK 0` and closes it at the transit of a `MARK 1`, and
//! files every transit under the window it started in.

use std::collections::{BTreeMap, HashMap};

use crate::insn::{self, Regs};

/// The demo kernel's system-call numbers, from the ABI file the kernel and
/// the user program share.
#[allow(missing_docs)]
#[path = "../../../demo-kernel/user/src/abi.rs"]
mod abi;
use abi::nr;

/// First address of the kernel's (high) exception vectors.
pub const VECTORS: u32 = 0xFFFF_0000;
/// Offset of the undefined-instruction vector.
pub const UNDEF: u32 = 0x04;
/// Offset of the SVC vector.
pub const SVC: u32 = 0x08;
/// Offset of the prefetch-abort vector.
pub const PABT: u32 = 0x0C;
/// Offset of the data-abort vector.
pub const DABT: u32 = 0x10;
/// Offset of the IRQ vector.
pub const IRQ: u32 = 0x18;

/// What a transit was.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    /// `YIELD`.
    Yield,
    /// A sending IPC call that handed the message to a waiting receiver.
    IpcHandoff,
    /// Any other IPC transit.
    IpcQueued,
    /// An IRQ after which another process runs.
    Preempt,
    /// An IRQ after which the same process resumes.
    Irq,
    /// A prefetch or data abort.
    Fault,
    /// `TCM_EXCHANGE` or `TCM_RELEASE`.
    Tcm,
    /// `MARK`.
    Mark,
    /// Anything else.
    Other,
}

impl Kind {
    /// Every kind, in report order.
    pub const ALL: [Kind; 9] = [
        Kind::Yield,
        Kind::IpcHandoff,
        Kind::IpcQueued,
        Kind::Preempt,
        Kind::Irq,
        Kind::Fault,
        Kind::Tcm,
        Kind::Mark,
        Kind::Other,
    ];

    /// The word used in reports.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Yield => "yield",
            Kind::IpcHandoff => "ipc_handoff",
            Kind::IpcQueued => "ipc_queued",
            Kind::Preempt => "preempt",
            Kind::Irq => "irq",
            Kind::Fault => "fault",
            Kind::Tcm => "tcm",
            Kind::Mark => "mark",
            Kind::Other => "other",
        }
    }

    /// The kind named `s`.
    pub fn parse(s: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.name() == s)
    }
}

fn sends(n: u32) -> bool {
    matches!(
        n,
        nr::SEND | nr::CALL | nr::SEND_RECV | nr::REPLY | nr::REPLY_WAIT
    )
}

fn receives(n: u32) -> bool {
    matches!(n, nr::RECV | nr::CALL | nr::SEND_RECV | nr::REPLY_WAIT)
}

fn is_ipc(n: u32) -> bool {
    sends(n) || receives(n)
}

fn page(pa: u32) -> u32 {
    pa & !0xFFF
}

/// A transit being counted.
#[derive(Clone, Copy, Debug)]
struct Open {
    vector: Option<u32>,
    from: Option<u32>,
    call: Option<u32>,
    arg0: Option<u32>,
    k0: u64,
    cycles0: u64,
    window: Option<u32>,
}

/// The transits of one kind in one window.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Samples {
    /// Instructions of each transit, in order.
    pub insns: Vec<u64>,
    /// Modelled cycles of each transit, in order.
    pub cycles: Vec<u64>,
}

/// Minimum, median, maximum and mean of a set of counts.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Stats {
    /// How many.
    pub n: usize,
    /// The smallest.
    pub min: u64,
    /// The median (the lower middle one for an even count).
    pub median: u64,
    /// The largest.
    pub max: u64,
    /// The mean.
    pub mean: f64,
}

impl Stats {
    /// The statistics of `v`, `None` if it is empty.
    pub fn of(v: &[u64]) -> Option<Stats> {
        if v.is_empty() {
            return None;
        }
        let mut s = v.to_vec();
        s.sort_unstable();
        Some(Stats {
            n: s.len(),
            min: s[0],
            median: s[(s.len() - 1) / 2],
            max: s[s.len() - 1],
            mean: s.iter().sum::<u64>() as f64 / s.len() as f64,
        })
    }
}

/// Totals of one window: every kernel instruction and every switch to
/// another process (lmbench `lat_ctx`'s figure is their ratio).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Totals {
    /// Kernel instructions of the window's transits.
    pub insns: u64,
    /// Modelled cycles of the window's transits.
    pub cycles: u64,
    /// Transits after which another process ran.
    pub switches: u64,
}

/// The transit counter.
#[derive(Clone, Debug, Default)]
pub struct Counter {
    regs: Regs,
    saved: HashMap<u32, Regs>,
    waiting: HashMap<u32, u32>,
    open: Option<Open>,
    last: Option<(Option<u32>, u32)>,
    window: Option<u32>,
    windows: u32,
    samples: BTreeMap<(Option<u32>, Kind), Samples>,
    totals: BTreeMap<u32, Totals>,
}

impl Counter {
    /// A counter that has seen nothing.
    pub fn new() -> Counter {
        Counter::default()
    }

    /// A user-mode instruction at `pa` (`None`: unknown), with encoding
    /// `insn` of `size` bytes, about to execute; `cycles` is the model's
    /// cycle count before it, `k` the number of privileged instructions
    /// executed before it.
    pub fn user(&mut self, pa: Option<u32>, insn: u32, size: usize, cycles: u64, k: u64) {
        if let Some(o) = self.open.take() {
            self.close(o, pa, cycles, k);
        }
        self.regs.step(pa, insn, size);
        self.last = Some((pa, insn));
    }

    /// A privileged instruction at `va` about to execute; `cycles` and `k`
    /// as for [`Counter::user`]. Only the first of a transit is needed (the
    /// plugin counts the others inline when the model is off).
    pub fn kernel(&mut self, va: u32, cycles: u64, k: u64) {
        if self.open.is_none() {
            let Some((from, last)) = self.last else {
                return; // booting: no user instruction yet
            };
            let vector = (va & !0x1F == VECTORS).then_some(va & 0x1F);
            let svc = vector == Some(SVC) && insn::is_svc(last);
            let (call, arg0) = if svc {
                (self.regs.r7, self.regs.r0)
            } else {
                (None, None)
            };
            if let Some(pa) = from {
                self.saved.insert(page(pa), self.regs);
                if let Some(c) = call {
                    self.waiting.insert(pa.wrapping_add(4), c);
                }
            }
            self.open = Some(Open {
                vector,
                from,
                call,
                arg0,
                k0: k,
                cycles0: cycles,
                window: self.window,
            });
        }
    }

    fn close(&mut self, o: Open, to: Option<u32>, cycles: u64, k: u64) {
        let insns = k.saturating_sub(o.k0);
        let same = matches!((o.from, to), (Some(a), Some(b)) if page(a) == page(b));
        let resumed_from = to.and_then(|pa| self.waiting.remove(&pa));
        let kind = match (o.vector, o.call) {
            (Some(SVC), Some(nr::YIELD)) => Kind::Yield,
            (Some(SVC), Some(nr::MARK)) => Kind::Mark,
            (Some(SVC), Some(nr::TCM_EXCHANGE | nr::TCM_RELEASE)) => Kind::Tcm,
            (Some(SVC), Some(c)) if is_ipc(c) => {
                if sends(c) && !same && resumed_from.is_some_and(receives) {
                    Kind::IpcHandoff
                } else {
                    Kind::IpcQueued
                }
            }
            (Some(IRQ), _) if same => Kind::Irq,
            (Some(IRQ), _) => Kind::Preempt,
            (Some(PABT | DABT), _) => Kind::Fault,
            _ => Kind::Other,
        };
        let spent = cycles.saturating_sub(o.cycles0);
        // The harness's own calls belong to no window.
        let window = if kind == Kind::Mark { None } else { o.window };
        let s = self.samples.entry((window, kind)).or_default();
        s.insns.push(insns);
        s.cycles.push(spent);
        if let Some(w) = window {
            let t = self.totals.entry(w).or_default();
            t.insns += insns;
            t.cycles += spent;
            t.switches += u64::from(!same);
        }
        if kind == Kind::Mark {
            match o.arg0 {
                Some(0) if self.window.is_none() => {
                    self.window = Some(self.windows);
                    self.windows += 1;
                }
                Some(1) => self.window = None,
                _ => {}
            }
        }
        // The resumed process's registers: as it left them, except r0 (a
        // call's return value).
        self.regs = to
            .and_then(|pa| self.saved.get(&page(pa)).copied())
            .unwrap_or_default();
        self.regs.r0 = None;
    }

    /// How many windows were opened.
    pub fn windows(&self) -> u32 {
        self.windows
    }

    /// The transits per (window, kind); window `None`: outside every window.
    pub fn samples(&self) -> &BTreeMap<(Option<u32>, Kind), Samples> {
        &self.samples
    }

    /// The totals per window.
    pub fn totals(&self) -> &BTreeMap<u32, Totals> {
        &self.totals
    }
}

#[cfg(test)]
mod tests {
    use super::Counter as Inner;
    use super::*;

    /// The counter, with the privileged instructions counted as the
    /// tracer does.
    #[derive(Default)]
    struct Counter {
        c: Inner,
        k: u64,
    }

    impl Counter {
        fn new() -> Counter {
            Counter::default()
        }
        fn user(&mut self, pa: Option<u32>, insn: u32, size: usize, cycles: u64) {
            self.c.user(pa, insn, size, cycles, self.k);
        }
        fn kernel(&mut self, va: u32, cycles: u64) {
            self.c.kernel(va, cycles, self.k);
            self.k += 1;
        }
        fn samples(&self) -> &BTreeMap<(Option<u32>, Kind), Samples> {
            self.c.samples()
        }
        fn totals(&self) -> &BTreeMap<u32, Totals> {
            self.c.totals()
        }
        fn windows(&self) -> u32 {
            self.c.windows()
        }
    }

    const SVC0: u32 = 0xEF00_0000;
    const NOP: u32 = 0xE1A0_0000; // mov r0, r0
    fn mov(r: u32, v: u32) -> u32 {
        0xE3A0_0000 | (r << 12) | v
    }

    /// Process `p` (code page `p << 12` + 0x10_0000) calls `nr` with r0 =
    /// `a0`; `k` kernel instructions follow, then `to`'s code at `to_pa`.
    fn call(c: &mut Counter, from_pa: u32, nr: u32, a0: u32, k: u64, to_pa: u32) {
        c.user(Some(from_pa - 8), mov(0, a0), 4, 0);
        c.user(Some(from_pa - 4), mov(7, nr), 4, 0);
        c.user(Some(from_pa), SVC0, 4, 0);
        for i in 0..k {
            c.kernel(if i == 0 { VECTORS + SVC } else { 0xC000_1000 }, 10 * i);
        }
        c.user(Some(to_pa), NOP, 4, 10 * k);
    }

    fn only(c: &Counter, w: Option<u32>, k: Kind) -> Vec<u64> {
        c.samples()
            .get(&(w, k))
            .map(|s| s.insns.clone())
            .unwrap_or_default()
    }

    #[test]
    fn yields_marks_and_windows() {
        let (a, b) = (0x0010_0100, 0x0020_0100);
        let mut c = Counter::new();
        // Boot: kernel instructions before any user one are no transit.
        c.kernel(0xC000_0000, 0);
        call(&mut c, a, nr::YIELD, 0, 50, b + 4);
        call(&mut c, b, nr::MARK, 0, 20, b + 4);
        call(&mut c, b, nr::YIELD, 0, 60, a + 4);
        call(&mut c, a, nr::YIELD, 0, 61, b + 4);
        call(&mut c, b, nr::MARK, 1, 20, b + 4);
        call(&mut c, b, nr::YIELD, 0, 70, a + 4);
        assert_eq!(only(&c, None, Kind::Yield), [50, 70]);
        assert_eq!(only(&c, Some(0), Kind::Yield), [60, 61]);
        assert_eq!(only(&c, None, Kind::Mark), [20, 20]);
        assert_eq!(c.windows(), 1);
        let t = c.totals()[&0];
        assert_eq!((t.insns, t.switches, t.cycles), (121, 2, 10 * 60 + 10 * 61));
        assert_eq!(c.samples()[&(Some(0), Kind::Yield)].cycles, [600, 610]);
        let s = Stats::of(&only(&c, Some(0), Kind::Yield)).unwrap();
        assert_eq!((s.n, s.min, s.median, s.max, s.mean), (2, 60, 60, 61, 60.5));
        assert_eq!(Stats::of(&[]), None);
    }

    #[test]
    fn a_send_to_a_waiting_receiver_is_a_handoff() {
        let (a, b) = (0x0010_0100, 0x0020_0200);
        let mut c = Counter::new();
        c.user(Some(b - 100), NOP, 4, 0);
        // b blocks in RECV; a runs (a receive that blocks: queued).
        call(&mut c, b, nr::RECV, 0, 40, a - 100);
        // a sends to b, b resumes from its RECV: a hand-off.
        call(&mut c, a, nr::SEND_RECV, 0, 30, b + 4);
        // b sends to a, which waits in SEND_RECV: a hand-off too.
        call(&mut c, b, nr::SEND, 0, 31, a + 4);
        // a sends to someone not waiting and resumes itself: queued.
        call(&mut c, a, nr::SEND, 0, 90, a + 4);
        assert_eq!(only(&c, None, Kind::IpcHandoff), [30, 31]);
        assert_eq!(only(&c, None, Kind::IpcQueued), [40, 90]);
    }

    #[test]
    fn irqs_faults_and_unknown_calls() {
        let (a, b) = (0x0010_0000, 0x0020_0000);
        let mut c = Counter::new();
        let run = |c: &mut Counter, pa: u32, vec: u32, k: u64, to: u32| {
            c.user(Some(pa), NOP, 4, 0);
            for i in 0..k {
                c.kernel(if i == 0 { VECTORS + vec } else { 0xC000_2000 }, 0);
            }
            c.user(Some(to), NOP, 4, 0);
        };
        run(&mut c, a, IRQ, 100, b + 8);
        run(&mut c, b + 8, IRQ, 30, b + 12);
        run(&mut c, b + 12, DABT, 150, b + 12);
        run(&mut c, b + 12, PABT, 140, b + 12);
        run(&mut c, b + 12, UNDEF, 10, b + 12);
        // An SVC whose number was loaded from memory: not guessed.
        c.user(Some(a), 0xE591_7000, 4, 0); // ldr r7, [r1]
        c.user(Some(a + 4), SVC0, 4, 0);
        c.kernel(VECTORS + SVC, 0);
        c.user(Some(a + 8), NOP, 4, 0);
        assert_eq!(only(&c, None, Kind::Preempt), [100]);
        assert_eq!(only(&c, None, Kind::Irq), [30]);
        assert_eq!(only(&c, None, Kind::Fault), [150, 140]);
        assert_eq!(only(&c, None, Kind::Other), [10, 1]);
        for k in Kind::ALL {
            assert_eq!(Kind::parse(k.name()), Some(k));
        }
    }

    #[test]
    fn a_call_number_survives_a_preemption_of_its_process() {
        let (a, b) = (0x0010_0000, 0x0020_0000);
        let mut c = Counter::new();
        c.user(Some(a), mov(7, nr::YIELD), 4, 0);
        c.kernel(VECTORS + IRQ, 0); // preempted between the MOV and the SVC
        c.user(Some(b), mov(7, nr::SEND), 4, 0);
        c.kernel(VECTORS + IRQ, 0);
        c.user(Some(a + 4), SVC0, 4, 0);
        c.kernel(VECTORS + SVC, 0);
        c.user(Some(b + 4), NOP, 4, 0);
        assert_eq!(only(&c, None, Kind::Yield), [1]);
        assert_eq!(only(&c, None, Kind::Preempt), [1, 1]);
    }
}
