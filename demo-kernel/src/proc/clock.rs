//! Timing of the kernel paths in the measuring build (the `measure`
//! feature, which `cargo xtask bench` and `cargo xtask run` enable; the
//! shipped kernel reads no counter on its paths and files nothing: every
//! function here is then a no-op and the scenarios print no `BENCH` line),
//! under `-icount shift=10,sleep=off` (the
//! board's counter then counts a fixed number of ticks per instruction:
//! 24.576 for versatilepb's 24 MHz counter, 3.775 for the 3.6864 MHz OSCR of
//! collie and connex; [`crate::board::instructions_to_ticks`]):
//!
//! * transits ([`Transit`]): every trap from user mode, from the exception
//!   vector's first instruction to the return to user mode (`movs pc, lr`)
//!   inclusive, filed by kind, with the shortest and longest per kind: the
//!   aborts resolved on the fast path (`__return_fast`) included
//!   ([`Transit::Fault`]), and the `MARK 0` system call that opens the
//!   window left out ([`start`]);
//! * the switch tail ([`SwitchClock`]): from the scheduler's decision to
//!   the return to user mode (the old `kind=switch`);
//! * collisions ([`FaultClock`]): a domain fault from the data-abort vector
//!   to the return that retries the access.
//!
//! The entry stubs (`asm/trap.s`, `SAVE_USER`) read the counter at the
//! [`TRANSIT_ENTRY_INSTRUCTIONS`]th instruction from the vector into
//! `__in_stamp`; `__return_to_user` reads it again
//! [`TRANSIT_TAIL_INSTRUCTIONS`] instructions before user mode and then,
//! outside the measured window, calls [`return_accounting`], which closes
//! the transit (only between `MARK 0` and `MARK 1`: [`start`], [`stop`]),
//! the switch tail and a collision resolved on the general path. None of
//! the bookkeeping runs inside a measured window: the kernel paths pay only
//! the two counter reads, the entry stamp's store, [`mark`] and the switch
//! tail's start.
//!
//! Checked against a single-step trace (README, "Transit timing"):
//! `qemu-system-arm ... -singlestep -d exec,nochain` counts the same
//! instructions from the SVC vector to the `movs` as [`Transit::Yield`]
//! reports.

#[cfg(feature = "measure")]
use super::kernel::installed;
use crate::global::Global;

/// Instructions from the vector up to and including the counter read
/// (SVC, IRQ, undefined, prefetch abort alike; see `SAVE_USER`).
pub const TRANSIT_ENTRY_INSTRUCTIONS: u64 = 10;
/// Instructions after the return's counter read that are inside the
/// transit: `ldr lr`, `ldmia` and `movs` (the accounting call between the
/// read and them is not counted).
pub const TRANSIT_TAIL_INSTRUCTIONS: u64 = 3;
/// Instructions from the data-abort vector up to and including the counter
/// read in `__user_trap_dabt` (vector 1, `__exc_dabt` 5, then the frame
/// pointer's two loads, the register store, the counter's address and the
/// read): added to every [`FaultClock`] measurement.
pub const FAULT_ENTRY_INSTRUCTIONS: u64 = 11;
/// Instructions from the counter read that ends a return's accounting
/// (`__out_stamp`) to the next transit's entry stamp when no user
/// instruction runs in between: the return's last five (`ldr`, `str` of
/// the stamp, then `ldr lr`, `ldmia`, `movs` or their `__return_fast`
/// equivalent) and the next entry's [`TRANSIT_ENTRY_INSTRUCTIONS`].
#[cfg(feature = "measure")]
pub const RETURN_GAP_INSTRUCTIONS: u64 = 5 + TRANSIT_ENTRY_INSTRUCTIONS;
/// Instructions after the counter read in `__return_fast` (`str`, `ldmia`,
/// `movs pc, lr`); `__return_to_user` has as many
/// ([`TRANSIT_TAIL_INSTRUCTIONS`]).
pub const FAST_RETURN_TAIL_INSTRUCTIONS: u64 = 3;

/// Instructions of the measuring build's own inside a transit's window
/// that the shipped build does not run, all fixed assembly: `SAVE_USER`'s
/// counter read and stamp store (4), the return's mark (`mov r5` or
/// `MARK_TRANSIT`, 1) and counter read (2). Subtracted from every transit
/// filed through [`return_accounting`], so that the figures are the shipped
/// kernel's (checked against a single-step trace of both builds:
/// `docs/benchmarks/method.md`).
#[cfg(feature = "measure")]
pub const MEASURE_TRANSIT_INSTRUCTIONS: u64 = 7;
/// The same for an abort resolved on the fast path: the abort stub's
/// counter read (1 more than the shipped `mov r5, #0`) and
/// `__return_fast`'s (2). A general-path abort returns through
/// `__return_to_user`, one more (its `mov r5, #0`).
#[cfg(feature = "measure")]
pub const MEASURE_ABORT_INSTRUCTIONS: u64 = 3;
/// The switch-tail stamp of the assembly fast path (`SWITCH_REGS`:
/// `READ_COUNTER`, `mov r8, #1` and the store of `Some(t0)`, one `strd` on
/// ARMv5TE, two `str` on ARMv4), subtracted from every transit the fast
/// path files. The Rust paths' stamp and marks (a few instructions the
/// compiler places) are not subtracted.
#[cfg(feature = "measure")]
pub const MEASURE_FAST_STAMP_INSTRUCTIONS: u64 = if cfg!(target_feature = "v5te") { 4 } else { 5 };

/// Ticks of `n` instructions under `-icount shift=10`.
#[cfg(feature = "measure")]
const fn ticks(n: u64) -> u32 {
    crate::board::instructions_to_ticks(n) as u32
}

/// Whether this is the measuring build (the `measure` feature).
pub const MEASURING: bool = cfg!(feature = "measure");

/// What a transit was, as the kernel decided during it.
#[derive(Clone, Copy, PartialEq, Eq, defmt::Format)]
#[repr(u32)]
pub enum Transit {
    /// `YIELD` that switched to another process.
    Yield = 1,
    /// `SEND` handed to a receiver blocked in `RECV`, which runs next.
    IpcOneway = 2,
    /// `CALL` handed to a receiver blocked in `RECV`, which runs next.
    IpcCall = 3,
    /// `REPLY` handed to the caller, which runs next.
    IpcReply = 4,
    /// A timer interrupt that switched.
    Preempt = 5,
    /// Anything else (the default).
    Other = 6,
    /// An IPC system call (`SEND`, `CALL`, `SEND_RECV`, `RECV`, `REPLY`,
    /// `REPLY_WAIT`) that was not a hand-off: queued, blocked, or served
    /// from a queue (the slow IPC path).
    IpcQueued = 7,
    /// A data or prefetch abort (a refill, a collision), on the fast path
    /// or the general one.
    Fault = 8,
    /// `LSEND`/`LSEND_RECV` handed to a receiver blocked in a receive,
    /// which runs next: the copy of the buffer included.
    LongIpc = 9,
    /// An undefined instruction that gave the process the VFP
    /// (`vfp::Kernel::vfp_undefined`).
    VfpTrap = 10,
}

/// Buckets, the total first ([`Transit`] values index the rest).
const PAIRS: usize = 11;
/// [`Transits::bucket`] of the transit that opened the window (`MARK 0`):
/// measuring, but this one is not counted.
const SKIP: u32 = 0xff;

/// The transit sums.
struct Transits {
    /// The current transit's bucket ([`Transit`] as a number); 0 while
    /// not measuring.
    bucket: u32,
    /// The bucket a transit starts in ([`Transit::Other`]; 0 while not
    /// measuring).
    default: u32,
    /// (ticks, count) per bucket, the total first.
    acc: [(u32, u32); PAIRS],
    /// (shortest, longest) per bucket, in ticks.
    range: [(u32, u32); PAIRS],
    /// The last transit closed, not filed yet: (bucket, ticks). The next
    /// one may continue it ([`Transits::close`]); [`SKIP`] for the
    /// `MARK 0` call, whose continuation is not counted either.
    pending: Option<(u32, u32)>,
}

impl Transits {
    #[cfg(feature = "measure")]
    /// Files a transit of `dt` ticks under `bucket` (and the total).
    fn add(&mut self, bucket: usize, dt: u32) {
        for i in [0, bucket % PAIRS] {
            let (t, n) = &mut self.acc[i];
            *t = t.wrapping_add(dt);
            *n += 1;
            let r = &mut self.range[i];
            *r = if *n == 1 {
                (dt, dt)
            } else {
                (r.0.min(dt), r.1.max(dt))
            };
        }
    }

    #[cfg(feature = "measure")]
    /// Files the pending transit, if any (not the `MARK 0` call's).
    fn flush(&mut self) {
        if let Some((b, dt)) = self.pending.take() {
            if b != SKIP {
                self.add(b as usize, dt);
            }
        }
    }

    #[cfg(feature = "measure")]
    /// Closes a transit of `dt` ticks (its own instructions already
    /// subtracted) under `bucket`, entered at `t_in`. A transit entered
    /// with no user instruction since the last return (`t_in` within
    /// [`RETURN_GAP_INSTRUCTIONS`] of [`__out_stamp`]: an interrupt pending
    /// at the return, a prefetch abort on the instruction returned to) is
    /// the same transit counted from outside the kernel, from the last user
    /// instruction to the first: it continues the pending one, under that
    /// one's kind, with the return and entry instructions between the two
    /// counted once. `data_abort`: a data abort, whose instruction was
    /// fetched and begun (a user instruction: it never continues).
    fn close(&mut self, bucket: u32, dt: u32, t_in: u32, data_abort: bool) {
        // SAFETY: written only by the return paths (`asm/trap.s`), after
        // the last transit's accounting.
        let out = unsafe { core::ptr::addr_of!(__out_stamp).read_volatile() };
        let gap = crate::board::ticks_to_instructions(u64::from(t_in.wrapping_sub(out)));
        match self.pending {
            Some((b, p)) if !data_abort && gap <= RETURN_GAP_INSTRUCTIONS => {
                let fixed = ticks(TRANSIT_ENTRY_INSTRUCTIONS + TRANSIT_TAIL_INSTRUCTIONS);
                self.pending = Some((b, p.wrapping_add(dt).wrapping_add(fixed)));
            }
            _ => {
                self.flush();
                self.pending = Some((bucket, dt));
            }
        }
    }
}

static TRANSITS: Global<Transits> = Global::new(Transits {
    bucket: 0,
    default: 0,
    acc: [(0, 0); PAIRS],
    range: [(0, 0); PAIRS],
    pending: None,
});

/// The abort stamp of a data abort the fast path declined (written by
/// [`enter_abort`], read by the general path; 0 in the shipped build).
static ABT_STAMP: Global<u32> = Global::new(0);

#[cfg(feature = "measure")]
extern "C" {
    /// The transit's entry stamp, written by `SAVE_USER` (`asm/trap.s`).
    static __in_stamp: u32;
    /// The last return's stamp after its accounting, written by
    /// `__return_marked` and `__return_fast` (`asm/trap.s`),
    /// [`RETURN_GAP_INSTRUCTIONS`] before the next entry stamp if no user
    /// instruction ran in between.
    static __out_stamp: u32;
}

/// Files the current transit under `t` (if measuring; a no-op in the
/// shipped build).
#[inline(always)]
pub fn mark(t: Transit) {
    if !MEASURING {
        return;
    }
    // SAFETY: the reference lives for this function, which calls nothing
    // (single core, no re-entry: `Global`'s contract).
    let tr = unsafe { TRANSITS.get_mut() };
    if tr.bucket != 0 && tr.bucket != SKIP {
        tr.bucket = t as u32;
    }
}

/// Files the current transit under `t` unless it was filed already (the
/// IPC system calls: [`Transit::IpcQueued`] until a hand-off says
/// otherwise).
#[inline(always)]
pub fn mark_default(t: Transit) {
    if !MEASURING {
        return;
    }
    // SAFETY: as in `mark`.
    let tr = unsafe { TRANSITS.get_mut() };
    if tr.bucket != 0 && tr.bucket == tr.default {
        tr.bucket = t as u32;
    }
}

/// Starts measuring: the sums cleared; the current transit (the `MARK 0`
/// system call of the harness) is not counted.
pub fn start() {
    // SAFETY: as in `mark`.
    let tr = unsafe { TRANSITS.get_mut() };
    tr.acc = [(0, 0); PAIRS];
    tr.range = [(0, 0); PAIRS];
    tr.default = Transit::Other as u32;
    tr.bucket = SKIP;
    tr.pending = None;
}

/// Stops measuring (the current transit is not counted).
pub fn stop() {
    // SAFETY: as in `mark`.
    let tr = unsafe { TRANSITS.get_mut() };
    #[cfg(feature = "measure")]
    tr.flush();
    tr.default = 0;
    tr.bucket = 0;
}

/// Called by `__return_to_user` (`asm/trap.s`) after its counter read
/// `t_out`, outside the measured window: closes the transit (if
/// measuring), the switch tail and a collision resolved on the general
/// path, which all end at this return. `fast_mark`: the [`Transit`] the
/// assembly fast path (`asm/fastpath.s`) decided on, as a number (its
/// [`mark`], done here to keep the bookkeeping out of the window); 0 from
/// every other path, which marks for itself.
#[cfg(feature = "measure")]
#[no_mangle]
pub extern "C" fn return_accounting(t_out: u32, fast_mark: u32) {
    // SAFETY: as in `mark`: the reference's last use is before the kernel
    // is reached below, and nothing in between touches the transits.
    let tr = unsafe { TRANSITS.get_mut() };
    if tr.bucket == SKIP {
        tr.pending = Some((SKIP, 0));
        tr.bucket = tr.default;
    } else if tr.bucket != 0 {
        if fast_mark != 0 {
            tr.bucket = fast_mark;
        }
        // SAFETY: written only by `SAVE_USER` at this transit's entry.
        let t_in = unsafe { core::ptr::addr_of!(__in_stamp).read_volatile() };
        let own = if tr.bucket == Transit::Fault as u32 {
            MEASURE_ABORT_INSTRUCTIONS + 1
        } else if fast_mark != 0 {
            MEASURE_TRANSIT_INSTRUCTIONS + MEASURE_FAST_STAMP_INSTRUCTIONS
        } else {
            MEASURE_TRANSIT_INSTRUCTIONS
        };
        // A data abort on the general path: `enter_abort` moved its stamp
        // one instruction back from its own.
        let data_abort = tr.bucket == Transit::Fault as u32
            && abort_stamp().wrapping_sub(t_in)
                == ticks(FAULT_ENTRY_INSTRUCTIONS - TRANSIT_ENTRY_INSTRUCTIONS);
        let bucket = tr.bucket;
        tr.close(
            bucket,
            t_out.wrapping_sub(t_in).wrapping_sub(ticks(own)),
            t_in,
            data_abort,
        );
        tr.bucket = tr.default;
    }
    // SAFETY: on the way back to user mode, after the trap handler's
    // reference to the kernel ended: this is the only one.
    if let Some(k) = unsafe { installed() } {
        k.clock.close(t_out);
        k.fault_clock.close_general(t_out);
    }
}

// The data-abort stub reads the counter no earlier than the others, and
// the fast return's tail is as long as the general one's (a fast-path
// abort is filed with the transit constants).
const _: () = assert!(FAULT_ENTRY_INSTRUCTIONS >= TRANSIT_ENTRY_INSTRUCTIONS);
const _: () = assert!(FAST_RETURN_TAIL_INSTRUCTIONS == TRANSIT_TAIL_INSTRUCTIONS);

/// A general-path data abort stamped `t0` by its own stub at the
/// [`FAULT_ENTRY_INSTRUCTIONS`]th instruction (`__user_trap_dabt`): its
/// transit's entry stamp, moved to where the other stubs read theirs, so
/// that the same constants apply; kept as the abort stamp
/// ([`abort_stamp`]).
pub fn enter_abort(t0: u32) {
    #[cfg(feature = "measure")]
    enter_abort_measuring(t0);
    #[cfg(not(feature = "measure"))]
    let _ = t0;
}

#[cfg(feature = "measure")]
fn enter_abort_measuring(t0: u32) {
    mark(Transit::Fault);
    // SAFETY: `Global`'s contract: a plain store, no reference alive.
    unsafe { ABT_STAMP.set(t0) };
    let t_in = t0.wrapping_sub(ticks(FAULT_ENTRY_INSTRUCTIONS - TRANSIT_ENTRY_INSTRUCTIONS));
    // SAFETY: single core, IRQs masked; `SAVE_USER` writes it at the next
    // trap's entry, after this transit's return.
    unsafe {
        core::ptr::addr_of!(__in_stamp)
            .cast_mut()
            .write_volatile(t_in)
    };
}

/// A transit whose stub read the counter where `SAVE_USER` does, but did
/// not store it (the prefetch-abort stub, `t0`): its entry stamp.
pub fn enter_transit(t0: u32) {
    mark(Transit::Fault);
    // SAFETY: as in `enter_abort`.
    #[cfg(feature = "measure")]
    unsafe {
        core::ptr::addr_of!(__in_stamp)
            .cast_mut()
            .write_volatile(t0)
    };
    #[cfg(not(feature = "measure"))]
    let _ = t0;
}

/// The abort stamp of the data abort being handled on the general path.
pub fn abort_stamp() -> u32 {
    // SAFETY: `Global`'s contract: a plain load, no reference alive.
    unsafe { ABT_STAMP.get() }
}

/// Measured transits of one kind: how many and their instructions.
#[derive(Clone, Copy, Default, defmt::Format)]
pub struct Sum {
    /// Transits.
    pub n: u32,
    /// Their instructions, constants included.
    pub instructions: u64,
    /// The shortest transit's instructions (0 if none).
    pub min: u64,
    /// The longest transit's instructions (0 if none).
    pub max: u64,
}

impl Sum {
    /// The mean per transit, rounded to the nearest instruction (0 if none).
    pub fn mean(self) -> u64 {
        div_round(self.instructions, u64::from(self.n))
    }

    /// Two kinds together (their sums, the shorter minimum, the longer
    /// maximum).
    pub fn plus(self, o: Sum) -> Sum {
        let pick = |a: u64, b: u64, f: fn(u64, u64) -> u64| match (self.n, o.n) {
            (0, _) => b,
            (_, 0) => a,
            _ => f(a, b),
        };
        Sum {
            n: self.n + o.n,
            instructions: self.instructions + o.instructions,
            min: pick(self.min, o.min, u64::min),
            max: pick(self.max, o.max, u64::max),
        }
    }
}

/// `a / b` rounded to the nearest integer (halves up); 0 if `b` is 0.
pub const fn div_round(a: u64, b: u64) -> u64 {
    match (a + b / 2).checked_div(b) {
        Some(q) => q,
        None => 0,
    }
}

/// The sums so far: `None` for the total, else one kind's.
pub fn sum(t: Option<Transit>) -> Sum {
    let i = t.map_or(0, |t| t as usize);
    // SAFETY: a copy out of the cell; no reference to it is alive.
    let ((ticks, n), (lo, hi)) = unsafe { TRANSITS.with(|tr| (tr.acc[i], tr.range[i])) };
    let fixed = TRANSIT_ENTRY_INSTRUCTIONS + TRANSIT_TAIL_INSTRUCTIONS;
    let one = |t: u32| crate::board::ticks_to_instructions(u64::from(t)) + fixed;
    Sum {
        n,
        instructions: crate::board::ticks_to_instructions(u64::from(ticks)) + u64::from(n) * fixed,
        min: if n == 0 { 0 } else { one(lo) },
        max: if n == 0 { 0 } else { one(hi) },
    }
}

/// Times the switch tail: from the scheduler's decision (a different
/// process chosen, [`Kernel::finish`](super::kernel::Kernel)) to the
/// return to user mode, [`TRANSIT_TAIL_INSTRUCTIONS`] before `movs pc, lr`
/// (the tail is added). Everything in between is measured: the switch
/// itself, the return from `trap_entry` and the restore of the next
/// process's registers from its frame.
#[derive(Clone, Copy, Default)]
pub struct SwitchClock {
    /// Counter at the last decision, if its return is not measured yet
    /// (set on every switch, accumulated only while `on`).
    pub t0: Option<u32>,
    /// Whether to accumulate (between `MARK 0` and `MARK 1`).
    pub on: bool,
    /// Measured switches.
    pub n: u32,
    /// Their ticks.
    pub ticks: u64,
    /// Shortest (ticks).
    pub min: u32,
    /// Longest (ticks).
    pub max: u32,
}

/// The switch tail's start stamp: the board's counter in the measuring
/// build, 0 in the shipped one (which reads no counter).
#[inline(always)]
pub fn switch_stamp() -> u32 {
    if MEASURING {
        super::timer::now()
    } else {
        0
    }
}

impl SwitchClock {
    /// Starts the switch tail stamped `t0` ([`switch_stamp`]; a no-op in
    /// the shipped build).
    #[inline(always)]
    pub fn begin(&mut self, t0: u32) {
        if MEASURING {
            self.t0 = Some(t0);
        }
    }

    /// Closes a pending measurement at the return stamped `t_out`.
    #[cfg(feature = "measure")]
    fn close(&mut self, t_out: u32) {
        if let Some(t0) = self.t0.take() {
            if self.on {
                let dt = t_out.wrapping_sub(t0) + ticks(TRANSIT_TAIL_INSTRUCTIONS);
                self.n += 1;
                self.ticks += u64::from(dt);
                self.min = if self.n == 1 { dt } else { self.min.min(dt) };
                self.max = self.max.max(dt);
            }
        }
    }
}

/// Times the domain faults (collisions) the strategy resolves, on the whole
/// abort path: from the data-abort exception vector (the counter is read
/// in `__user_trap_dabt`, [`FAULT_ENTRY_INSTRUCTIONS`] instructions after
/// the vector) to the return to user mode that retries the access (a time
/// stamp three instructions before `movs pc, lr`). Kept apart by what the
/// resolution flushed: [`fass::Flushed::Full`] (`FLUSHED`) or not
/// (`FLUSH_FREE`). Each measurement is closed by the accounting of its own
/// return, outside the measured window ([`return_accounting`] on the
/// general path, [`fast_return_accounting`] on the fast one).
#[derive(Clone, Copy, Default)]
pub struct FaultClock {
    /// A resolution on the general path whose return is not measured yet:
    /// its kind's index and abort stamp.
    pub general: Option<(usize, u32)>,
    /// A collision resolved on the fast path whose return is not measured
    /// yet: its abort stamp (measuring build only).
    #[cfg_attr(not(feature = "measure"), allow(dead_code))]
    pub fast: Option<u32>,
    /// Measured resolutions per kind.
    pub n: [u32; 2],
    /// Their ticks.
    pub ticks: [u64; 2],
    /// Longest (ticks).
    pub max: [u32; 2],
}

impl FaultClock {
    /// Index of the resolutions without a full flush.
    pub const FLUSH_FREE: usize = 0;
    /// Index of the resolutions with a full flush ([`fass::Flushed::Full`]).
    pub const FLUSHED: usize = 1;

    /// Adds the resolution of kind `i` stamped `t0` at the abort and `t1`
    /// three instructions before its return.
    #[cfg(feature = "measure")]
    fn add(&mut self, i: usize, t0: u32, t1: u32) {
        let i = i % 2;
        let dt =
            t1.wrapping_sub(t0) + ticks(FAULT_ENTRY_INSTRUCTIONS + FAST_RETURN_TAIL_INSTRUCTIONS);
        self.n[i] += 1;
        self.ticks[i] += u64::from(dt);
        self.max[i] = self.max[i].max(dt);
    }

    /// Closes a general-path resolution at its return, stamped `t_out`.
    #[cfg(feature = "measure")]
    fn close_general(&mut self, t_out: u32) {
        if let Some((i, t0)) = self.general.take() {
            self.add(i, t0, t_out);
        }
    }
}

/// Called (through `trap::fast_abort_return`) by `__return_fast`
/// (`asm/trap.s`) after its counter read `t_out`, outside the measured
/// window, for an abort stamped `t0` that the fast path resolved (a
/// refill or a collision): files it as a [`Transit::Fault`] (if
/// measuring; `prefetch`: its stub read the counter at the
/// [`TRANSIT_ENTRY_INSTRUCTIONS`]th instruction, a data abort's at the
/// [`FAULT_ENTRY_INSTRUCTIONS`]th) and closes the collision timed by the
/// fault clock, if it was one.
#[cfg(feature = "measure")]
#[no_mangle]
pub extern "C" fn fast_return_accounting(t_out: u32, t0: u32, prefetch: bool) {
    // SAFETY: as in `mark`: the reference ends before the kernel is
    // reached below.
    let tr = unsafe { TRANSITS.get_mut() };
    if tr.bucket != 0 && tr.bucket != SKIP {
        // Moved to where the other stubs read the counter, so that the
        // transit constants of `sum` apply.
        let early = if prefetch {
            0
        } else {
            FAULT_ENTRY_INSTRUCTIONS - TRANSIT_ENTRY_INSTRUCTIONS
        };
        tr.close(
            Transit::Fault as u32,
            (t_out.wrapping_sub(t0) + ticks(early)).wrapping_sub(ticks(MEASURE_ABORT_INSTRUCTIONS)),
            t0.wrapping_sub(ticks(early)),
            !prefetch,
        );
    }
    // SAFETY: on the fast path's way back to user mode, after its
    // reference to the kernel ended: this is the only one.
    if let Some(k) = unsafe { installed() } {
        let c = &mut k.fault_clock;
        if let Some(t0) = c.fast.take() {
            c.add(FaultClock::FLUSH_FREE, t0, t_out);
        }
    }
}
