//! Transit timing: every trap from user mode is timed from the exception
//! vector's first instruction to the return to user mode (`movs pc, lr`)
//! inclusive, under `-icount shift=10,sleep=off`.
//!
//! The entry stubs (`asm/trap.s`, `SAVE_USER`) read the 24 MHz counter at
//! the [`TRANSIT_ENTRY_INSTRUCTIONS`]th instruction from the vector into
//! `__in_stamp`; `__return_to_user` reads it again as late as it can and,
//! after that read (outside the measured window), adds the difference to a
//! running total and to the bucket the kernel chose for the transit
//! ([`Transit`], set with [`mark`]; [`Transit::Other`] unless set), only
//! between `MARK 0` and `MARK 1` ([`start`], [`stop`]). The instructions
//! before the first read and after the second ([`TRANSIT_ENTRY_INSTRUCTIONS`],
//! [`TRANSIT_TAIL_INSTRUCTIONS`]) are added as constants.
//!
//! Checked once against a single-step trace (README, "Transit timing"):
//! `cargo xtask run --icount 10 --append "scenario=yield mode=fass n=2 ..."`
//! with QEMU's `-singlestep -d exec,nochain` counts the same instructions
//! from the SVC vector to the `movs` as [`Transit::Yield`] reports.

/// Instructions from the vector up to and including the counter read
/// (SVC, IRQ, undefined, prefetch abort alike; see `SAVE_USER`).
pub const TRANSIT_ENTRY_INSTRUCTIONS: u64 = 14;
/// Instructions after the return's counter read that are inside the
/// transit: the stamp store, `ldmia` and `movs` (the accounting between
/// them is not counted).
pub const TRANSIT_TAIL_INSTRUCTIONS: u64 = 3;

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
}

/// Buckets, the total first ([`Transit`] values index the rest).
const PAIRS: usize = 8;

extern "C" {
    static mut __in_stamp: u32;
    static mut __transit_bucket: u32;
    static mut __transit_default: u32;
    static mut __transit_acc: [u32; 2 * PAIRS];
}

/// The bucket word's value for `t`: the byte offset of its pair from
/// `__cur_frame` (`asm/trap.s`: the pairs start 28 bytes after it).
const fn offset(t: Transit) -> u32 {
    28 + 8 * t as u32
}

/// Files the current transit under `t` (if measuring).
#[inline(always)]
pub fn mark(t: Transit) {
    // SAFETY: words of `asm/trap.s` touched only by the kernel with IRQs
    // masked (single core) and by `__return_to_user` after the Rust code.
    unsafe {
        let b = core::ptr::addr_of_mut!(__transit_bucket);
        if b.read_volatile() != 0 {
            b.write_volatile(offset(t));
        }
    }
}

/// Starts measuring: the sums cleared, the current transit filed as other.
pub fn start() {
    // SAFETY: as in `mark`.
    unsafe {
        core::ptr::addr_of_mut!(__transit_acc).write_volatile([0; 2 * PAIRS]);
        core::ptr::addr_of_mut!(__transit_default).write_volatile(offset(Transit::Other));
        core::ptr::addr_of_mut!(__transit_bucket).write_volatile(offset(Transit::Other));
    }
}

/// Stops measuring (the current transit is not counted).
pub fn stop() {
    // SAFETY: as in `mark`.
    unsafe {
        core::ptr::addr_of_mut!(__transit_default).write_volatile(0);
        core::ptr::addr_of_mut!(__transit_bucket).write_volatile(0);
    }
}

/// A general-path data abort stamped `t0` by its own stub at the 11th
/// instruction (`__user_trap_dabt`): its transit's entry stamp, moved to
/// where the other stubs read theirs, so that the same constants apply.
pub fn enter_abort(t0: u32) {
    // Three instructions later: 3 * 24.576 ticks.
    // SAFETY: as in `mark`.
    unsafe { core::ptr::addr_of_mut!(__in_stamp).write_volatile(t0.wrapping_add(74)) };
}

/// Measured transits of one kind: how many and their instructions.
#[derive(Clone, Copy, Default, defmt::Format)]
pub struct Sum {
    /// Transits.
    pub n: u32,
    /// Their instructions, constants included.
    pub instructions: u64,
}

impl Sum {
    /// The mean per transit (0 if none).
    pub fn mean(self) -> u64 {
        if self.n == 0 {
            0
        } else {
            self.instructions / u64::from(self.n)
        }
    }
}

/// The sums so far: `None` for the total, else one kind's.
pub fn sum(t: Option<Transit>) -> Sum {
    let i = t.map_or(0, |t| t as usize);
    // SAFETY: as in `mark`.
    let acc = unsafe { core::ptr::addr_of!(__transit_acc).read_volatile() };
    let (ticks, n) = (acc[2 * i], acc[2 * i + 1]);
    Sum {
        n,
        instructions: u64::from(ticks) * 1000 / 24_576
            + u64::from(n) * (TRANSIT_ENTRY_INSTRUCTIONS + TRANSIT_TAIL_INSTRUCTIONS),
    }
}
