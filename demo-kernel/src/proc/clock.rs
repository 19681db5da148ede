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
//! the switch tail and a collision resolved on the general path. The
//! transit is classified there, after it, from what the entry stub stored
//! beside its stamp (the trap's kind and the user's r7, the call number)
//! and from which process runs next ([`classify`]), as the outside count
//! does: nothing marks a transit while it runs. None of the bookkeeping
//! runs inside a measured window: the kernel paths pay only fixed
//! assembly (the two counter reads, the entry stamp's store and the
//! assembly fast path's switch-tail stamp), which is subtracted.
//!
//! Checked against a single-step trace (README, "Transit timing"):
//! `qemu-system-arm ... -singlestep -d exec,nochain` counts the same
//! instructions from the SVC vector to the `movs` as [`Transit::Yield`]
//! reports.

#[cfg(feature = "measure")]
use super::kernel::{installed, Kernel, TrapFrame};
#[cfg(feature = "measure")]
use super::strategy::MAX_PROCS;
#[cfg(feature = "measure")]
use crate::abi::nr;
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
/// counter read and entry store (4: `ldr`, `ldr`, `ldr` of the address,
/// `stmia` of frame, kind, stamp and r7) and the return's counter read
/// (2). Subtracted from every transit filed through [`return_accounting`],
/// so that the figures are the shipped kernel's (checked against a
/// single-step trace of both builds: `docs/benchmarks/method.md`).
#[cfg(feature = "measure")]
pub const MEASURE_TRANSIT_INSTRUCTIONS: u64 = 6;
/// The same for an abort: the abort stub's counter read (1 more than the
/// shipped `mov r5, #0`) and the return's (2, `__return_fast`'s or
/// `__return_to_user`'s).
#[cfg(feature = "measure")]
pub const MEASURE_ABORT_INSTRUCTIONS: u64 = 3;
/// The switch-tail stamp of the assembly fast path (`SWITCH_REGS`:
/// `READ_COUNTER`, `mov r8, #1` and the store of `Some(t0)`, one `strd` on
/// ARMv5TE, two `str` on ARMv4), subtracted from every transit the fast
/// path switched in (the switch clock's `t0` set at the return: only the
/// fast path stamps it). The Rust paths take no stamp and mark nothing.
#[cfg(feature = "measure")]
pub const MEASURE_FAST_STAMP_INSTRUCTIONS: u64 = if cfg!(target_feature = "v5te") { 4 } else { 5 };

/// Ticks of `n` instructions under `-icount shift=10`.
#[cfg(feature = "measure")]
const fn ticks(n: u64) -> u32 {
    crate::board::instructions_to_ticks(n) as u32
}

/// Whether this is the measuring build (the `measure` feature).
pub const MEASURING: bool = cfg!(feature = "measure");

/// What a transit was, classified after it ([`classify`]) from the trap's
/// kind, the call number and which process runs next: the outside count's
/// definitions (`crates/cache-check`, `transit.rs`).
#[derive(Clone, Copy, PartialEq, Eq, Debug, defmt::Format)]
#[repr(u32)]
pub enum Transit {
    /// `YIELD`.
    Yield = 1,
    /// `SEND` or `SEND_RECV` after which another process runs that entered
    /// the kernel last by a receiving call (`RECV`, `CALL`, `SEND_RECV`,
    /// `REPLY_WAIT`): a hand-off.
    IpcOneway = 2,
    /// `CALL`, the same way a hand-off.
    IpcCall = 3,
    /// `REPLY` or `REPLY_WAIT`, the same way a hand-off.
    IpcReply = 4,
    /// An interrupt after which another process runs.
    Preempt = 5,
    /// Anything else.
    Other = 6,
    /// Any other IPC system call (`SEND`, `CALL`, `SEND_RECV`, `RECV`,
    /// `REPLY`, `REPLY_WAIT`): queued, blocked, served from a queue, or
    /// failed (the slow IPC path).
    IpcQueued = 7,
    /// A data or prefetch abort (a refill, a collision), on the fast path
    /// or the general one.
    Fault = 8,
    /// `LSEND`/`LSEND_RECV` after which another process runs that entered
    /// the kernel last by a long receive (`LRECV`, `LSEND_RECV`): the copy
    /// of the buffer included.
    LongIpc = 9,
    /// An undefined instruction after which the same process resumes (the
    /// VFP given to it, `vfp::Kernel::vfp_undefined`).
    VfpTrap = 10,
}

/// The trap kinds the entry stubs pass (`asm/trap.s`): undefined
/// instruction.
#[cfg(feature = "measure")]
const KIND_UNDEF: u32 = 1;
/// SVC.
#[cfg(feature = "measure")]
const KIND_SVC: u32 = 2;
/// Prefetch abort.
#[cfg(feature = "measure")]
const KIND_PABT: u32 = 3;
/// Data abort.
#[cfg(feature = "measure")]
const KIND_DABT: u32 = 4;
/// IRQ.
#[cfg(feature = "measure")]
const KIND_IRQ: u32 = 6;

#[cfg(feature = "measure")]
/// A call that sends a message (a hand-off's first half).
fn sends(c: u32) -> bool {
    matches!(
        c,
        nr::SEND | nr::CALL | nr::SEND_RECV | nr::REPLY | nr::REPLY_WAIT
    )
}

#[cfg(feature = "measure")]
/// A call that waits for a message (a hand-off's second half).
fn receives(c: u32) -> bool {
    matches!(c, nr::RECV | nr::CALL | nr::SEND_RECV | nr::REPLY_WAIT)
}

#[cfg(feature = "measure")]
/// The transit of a trap of `kind` (`call`: the user's r7 at the entry, the
/// call number of an SVC), after which the same process resumes (`same`)
/// or another one whose last entry into the kernel was the system call
/// `next_call` (`None`: not a system call, or not known). The outside
/// count's rules (`crates/cache-check`, `transit.rs`), so that both sides
/// file a transit under the same kind.
pub fn classify(kind: u32, call: u32, same: bool, next_call: Option<u32>) -> Transit {
    match kind {
        KIND_SVC => match call {
            nr::YIELD => Transit::Yield,
            c if sends(c) || receives(c) => {
                if !sends(c) || same || !next_call.is_some_and(receives) {
                    Transit::IpcQueued
                } else if c == nr::CALL {
                    Transit::IpcCall
                } else if c == nr::REPLY || c == nr::REPLY_WAIT {
                    Transit::IpcReply
                } else {
                    Transit::IpcOneway
                }
            }
            nr::LSEND | nr::LSEND_RECV
                if !same && matches!(next_call, Some(nr::LRECV | nr::LSEND_RECV)) =>
            {
                Transit::LongIpc
            }
            _ => Transit::Other,
        },
        KIND_IRQ if !same => Transit::Preempt,
        KIND_UNDEF if same => Transit::VfpTrap,
        KIND_PABT | KIND_DABT => Transit::Fault,
        _ => Transit::Other,
    }
}

/// Buckets, the total first ([`Transit`] values index the rest).
const PAIRS: usize = 11;
/// [`Transits::pending`]'s bucket of the transit that opened the window
/// (`MARK 0`): measuring, but this one is not counted.
#[cfg(feature = "measure")]
const SKIP: u32 = 0xff;

/// Whether transits are filed.
#[derive(Clone, Copy, PartialEq, Eq)]
#[cfg_attr(not(feature = "measure"), allow(dead_code))]
enum Phase {
    /// Not measuring.
    Off,
    /// The `MARK 0` call that opens the window: not counted.
    Opening,
    /// Measuring.
    On,
}

/// The transit sums.
struct Transits {
    /// Whether transits are filed.
    phase: Phase,
    /// (ticks, count) per bucket, the total first.
    acc: [(u32, u32); PAIRS],
    /// (shortest, longest) per bucket, in ticks.
    range: [(u32, u32); PAIRS],
    /// The last transit closed, not filed yet: (bucket, ticks). The next
    /// one may continue it ([`Transits::close`]); `SKIP` for the
    /// `MARK 0` call, whose continuation is not counted either.
    pending: Option<(u32, u32)>,
    /// Per process slot, the system call it last entered the kernel by,
    /// plus 1 (0: by another trap, or not yet): what a hand-off's receiver
    /// waits in ([`classify`]'s `next_call`). Kept measuring or not.
    #[cfg(feature = "measure")]
    left_by: [u32; MAX_PROCS],
    /// The slot of the process the last return resumed: the one that
    /// traps next.
    #[cfg(feature = "measure")]
    running: Option<usize>,
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
    phase: Phase::Off,
    acc: [(0, 0); PAIRS],
    range: [(0, 0); PAIRS],
    pending: None,
    #[cfg(feature = "measure")]
    left_by: [0; MAX_PROCS],
    #[cfg(feature = "measure")]
    running: None,
});

/// The abort stamp of a data abort the fast path declined (written by
/// [`enter_abort`], read by the general path; 0 in the shipped build).
static ABT_STAMP: Global<u32> = Global::new(0);

#[cfg(feature = "measure")]
extern "C" {
    /// The frame of the process that trapped, written by `SAVE_USER`
    /// (`asm/trap.s`) with the three below.
    static __in_frame: usize;
    /// The trap's kind (`KIND_*`).
    static __in_kind: u32;
    /// The transit's entry stamp.
    static __in_stamp: u32;
    /// The user's r7 at the entry: an SVC's call number.
    static __in_call: u32;
    /// The running process's frame (`asm/trap.s`).
    static __cur_frame: usize;
    /// The last return's stamp after its accounting, written by
    /// `__return_to_user` and `__return_fast` (`asm/trap.s`),
    /// [`RETURN_GAP_INSTRUCTIONS`] before the next entry stamp if no user
    /// instruction ran in between.
    static __out_stamp: u32;
}

/// Starts measuring: the sums cleared; the current transit (the `MARK 0`
/// system call of the harness) is not counted.
pub fn start() {
    // SAFETY: `Global`'s contract: single core, no re-entry, and the
    // reference lives for this function, which calls nothing.
    let tr = unsafe { TRANSITS.get_mut() };
    tr.acc = [(0, 0); PAIRS];
    tr.range = [(0, 0); PAIRS];
    tr.phase = Phase::Opening;
    tr.pending = None;
}

/// Stops measuring (the current transit is not counted).
pub fn stop() {
    // SAFETY: as in `start`.
    let tr = unsafe { TRANSITS.get_mut() };
    #[cfg(feature = "measure")]
    tr.flush();
    tr.phase = Phase::Off;
}

/// The slot of the process `k` runs (`Kernel::current`) if `f` is its
/// frame: the process a return resumes (no division: the accounting's
/// length decides how often a tick is pending at the return).
#[cfg(feature = "measure")]
fn running_slot(k: &Kernel, f: usize) -> Option<usize> {
    let c = k.current? & (MAX_PROCS - 1);
    (core::ptr::addr_of!(k.procs[c].ctx) as usize == f).then_some(c)
}

/// Called by `__return_to_user` (`asm/trap.s`) after its counter read
/// `t_out`, outside the measured window, with the frame `next` it resumes:
/// classifies the transit ([`classify`], from the entry's kind and call
/// number and from who runs next) and closes it (if measuring), then the
/// switch tail and a collision resolved on the general path, which all
/// end at this return.
#[cfg(feature = "measure")]
#[no_mangle]
pub extern "C" fn return_accounting(t_out: u32, next: *const TrapFrame) {
    // SAFETY: written only by the entry stubs (`SAVE_USER`, or
    // `enter_abort`/`enter_transit` for an abort) at this transit's entry.
    let (from, kind, t_in, call) = unsafe {
        (
            core::ptr::addr_of!(__in_frame).read_volatile(),
            core::ptr::addr_of!(__in_kind).read_volatile(),
            core::ptr::addr_of!(__in_stamp).read_volatile(),
            core::ptr::addr_of!(__in_call).read_volatile(),
        )
    };
    let same = from == next as usize;
    // SAFETY: on the way back to user mode, after the trap handler's
    // reference to the kernel ended: this is the only one.
    let k = unsafe { installed() };
    let next_slot = k.as_deref().and_then(|k| running_slot(k, next as usize));
    // Only the assembly fast path stamps the switch tail, inside the window.
    let fast_stamp = k.as_deref().is_some_and(|k| k.clock.t0.is_some());
    // SAFETY: `Global`'s contract: single core, no re-entry; the
    // reference ends before the kernel's clocks are closed below.
    let tr = unsafe { TRANSITS.get_mut() };
    let next_call = next_slot.and_then(|s| tr.left_by[s].checked_sub(1));
    // The process that trapped is the one the last return resumed.
    if let Some(s) = tr.running.filter(|_| from != 0) {
        tr.left_by[s] = if kind == KIND_SVC {
            call.wrapping_add(1)
        } else {
            0
        };
    }
    tr.running = next_slot;
    match tr.phase {
        Phase::Off => {}
        Phase::Opening => {
            tr.pending = Some((SKIP, 0));
            tr.phase = Phase::On;
        }
        Phase::On => {
            let t = classify(kind, call, same, next_call);
            let own = if t == Transit::Fault {
                MEASURE_ABORT_INSTRUCTIONS
            } else if fast_stamp {
                MEASURE_TRANSIT_INSTRUCTIONS + MEASURE_FAST_STAMP_INSTRUCTIONS
            } else {
                MEASURE_TRANSIT_INSTRUCTIONS
            };
            tr.close(
                t as u32,
                t_out.wrapping_sub(t_in).wrapping_sub(ticks(own)),
                t_in,
                kind == KIND_DABT,
            );
        }
    }
    if let Some(k) = k {
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
/// transit's entry, its stamp moved to where the other stubs read theirs,
/// so that the same constants apply; kept as the abort stamp
/// ([`abort_stamp`]).
pub fn enter_abort(t0: u32) {
    #[cfg(feature = "measure")]
    {
        // SAFETY: `Global`'s contract: a plain store, no reference alive.
        unsafe { ABT_STAMP.set(t0) };
        enter(
            KIND_DABT,
            t0.wrapping_sub(ticks(FAULT_ENTRY_INSTRUCTIONS - TRANSIT_ENTRY_INSTRUCTIONS)),
        );
    }
    #[cfg(not(feature = "measure"))]
    let _ = t0;
}

/// A general-path prefetch abort whose stub read the counter where
/// `SAVE_USER` does, but stored nothing (`t0`): its transit's entry.
pub fn enter_transit(t0: u32) {
    #[cfg(feature = "measure")]
    enter(KIND_PABT, t0);
    #[cfg(not(feature = "measure"))]
    let _ = t0;
}

/// Writes a transit's entry as `SAVE_USER` does: the current frame, the
/// trap's `kind` and the stamp `t_in` (no call number: not an SVC).
#[cfg(feature = "measure")]
fn enter(kind: u32, t_in: u32) {
    // SAFETY: single core, IRQs masked; `SAVE_USER` writes them at the
    // next trap's entry, after this transit's return; `__cur_frame` is the
    // trapping process's frame until then.
    unsafe {
        let frame = core::ptr::addr_of!(__cur_frame).read_volatile();
        core::ptr::addr_of!(__in_frame)
            .cast_mut()
            .write_volatile(frame);
        core::ptr::addr_of!(__in_kind)
            .cast_mut()
            .write_volatile(kind);
        core::ptr::addr_of!(__in_stamp)
            .cast_mut()
            .write_volatile(t_in);
    }
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
/// process chosen) to the return to user mode,
/// [`TRANSIT_TAIL_INSTRUCTIONS`] before `movs pc, lr` (the tail is added):
/// the switch itself and the restore of the next process's registers from
/// its frame. Stamped by the assembly fast path only (`SWITCH_REGS`, fixed
/// instructions the transit subtracts): a stamp on the Rust paths would
/// be code the compiler places inside the transit's window, so their
/// switches have no tail figure.
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

impl SwitchClock {
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
    // SAFETY: `Global`'s contract: single core, no re-entry; the
    // reference ends before the kernel is reached below.
    let tr = unsafe { TRANSITS.get_mut() };
    if tr.phase == Phase::On {
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
