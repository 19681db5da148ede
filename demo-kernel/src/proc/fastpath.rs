//! The assembly fast path of the commonest system calls (`asm/fastpath.s`:
//! its contract is stated there): YIELD to a ready process, SEND/CALL to a
//! receiver waiting in RECV, REPLY/REPLY_WAIT to a caller waiting for the
//! reply, SEND_RECV to a receiver waiting in RECV (the caller then waits in
//! RECV), CALL to a busy server (queued) and RECV with nothing queued (the
//! caller blocks, the next ready process runs), and REPLY_WAIT taking the
//! next queued CALL at once (no switch), each switching through the
//! process's precomputed record of the current generation (`kernel::Fast`)
//! straight from the SVC vector: FASS writes its DACR and FCSEIDR,
//! FCSE-only its TTBR, a TLB invalidation and its FCSEIDR, naive the cache
//! flush (one call, [`fast_flush_caches`]), its TTBR and a TLB
//! invalidation, each without any other call into Rust; and
//! the timer's preemption from the IRQ stub, the tick in Rust
//! ([`fast_irq_tick`]).
//! Anything else falls back to the Rust path unchanged.
//!
//! The assembly reaches the kernel's fields by the offsets computed here
//! from the Rust types, and the layout facts it relies on beyond offsets
//! (enum tags, `Option` words, field order) are checked at compile time
//! below, so a change of a type either moves the offsets with it or stops
//! the build.

use core::mem::{offset_of, size_of, MaybeUninit};

use mmu_armv5::regs::{Dacr, SwitchRegs};
use mmu_armv5::FcsePid;

use super::clock::SwitchClock;
use super::ipc::{LINK_NEXT, LINK_PREV, LINK_REPLY_HEAD, LINK_SEND_HEAD, LINK_SEND_TAIL, NONE};
use super::kernel::{Counters, Fast, Kernel, KernelSlot, Proc, State, TrapFrame, KERNEL};
use super::platform;
use super::sched::ReadySet;
use super::strategy::SwitchMode;
use super::strategy::MAX_PROCS;
use crate::abi::nr;
use mmu_armv5::maint::CacheMaintenance;

/// A system-call entry of the assembly fast path (never called from Rust:
/// entered by `ldr pc` with the registers of the contract in
/// `asm/fastpath.s`).
type Entry = unsafe extern "C" fn();

extern "C" {
    fn __svc_general();
    fn __irq_general();
    fn __svc_yield_fass();
    fn __svc_send_fass();
    fn __svc_recv_fass();
    fn __svc_reply_fass();
    fn __svc_send_recv_fass();
    fn __svc_yield_naive();
    fn __svc_send_naive();
    fn __svc_recv_naive();
    fn __svc_reply_naive();
    fn __svc_send_recv_naive();
    fn __svc_yield_fcse();
    fn __svc_send_fcse();
    fn __svc_recv_fcse();
    fn __svc_reply_fcse();
    fn __svc_send_recv_fcse();
    fn __irq_preempt_fass();
    fn __irq_preempt_naive();
    fn __irq_preempt_fcse();
}

/// Entries of a dispatch table: every system-call number the fast path
/// takes is below it.
const SVC_TABLE_LEN: usize = nr::SEND_RECV as usize + 1;
const _: () = assert!(
    nr::YIELD < nr::SEND_RECV
        && nr::SEND < nr::SEND_RECV
        && nr::RECV < nr::SEND_RECV
        && nr::CALL < nr::SEND_RECV
        && nr::REPLY < nr::SEND_RECV
        && nr::REPLY_WAIT < nr::SEND_RECV
);

/// A dispatch table: YIELD, SEND, CALL, RECV, REPLY, REPLY_WAIT and SEND_RECV to
/// the given handlers, every other number to the Rust path; the IRQ handler after
/// them (index [`SVC_TABLE_LEN`]).
const fn svc_table_of(
    yield_: Entry,
    send: Entry,
    recv: Entry,
    reply: Entry,
    send_recv: Entry,
    irq: Entry,
) -> [Entry; SVC_TABLE_LEN + 1] {
    let mut t: [Entry; SVC_TABLE_LEN + 1] = [__svc_general; SVC_TABLE_LEN + 1];
    t[SVC_TABLE_LEN] = irq;
    t[nr::YIELD as usize] = yield_;
    t[nr::SEND as usize] = send;
    t[nr::CALL as usize] = send;
    t[nr::RECV as usize] = recv;
    t[nr::REPLY as usize] = reply;
    t[nr::REPLY_WAIT as usize] = reply;
    t[nr::SEND_RECV as usize] = send_recv;
    t
}

/// FASS: the handlers that switch with the kernel's own record.
static SVC_FASS_TABLE: [Entry; SVC_TABLE_LEN + 1] = svc_table_of(
    __svc_yield_fass,
    __svc_send_fass,
    __svc_recv_fass,
    __svc_reply_fass,
    __svc_send_recv_fass,
    __irq_preempt_fass,
);

/// FCSE-only: the same handlers, switching with the TTBR and FCSEIDR of
/// the process's record and a TLB invalidation.
static SVC_FCSE_TABLE: [Entry; SVC_TABLE_LEN + 1] = svc_table_of(
    __svc_yield_fcse,
    __svc_send_fcse,
    __svc_recv_fcse,
    __svc_reply_fcse,
    __svc_send_recv_fcse,
    __irq_preempt_fcse,
);

/// Naive: the same handlers, switching with the cache flush
/// ([`fast_flush_caches`]), the TTBR of the process's record and a TLB
/// invalidation.
static SVC_NAIVE_TABLE: [Entry; SVC_TABLE_LEN + 1] = svc_table_of(
    __svc_yield_naive,
    __svc_send_naive,
    __svc_recv_naive,
    __svc_reply_naive,
    __svc_send_recv_naive,
    __irq_preempt_naive,
);

/// Every system call and the IRQ to the Rust path (`trap_entry`): the
/// table of a kernel whose VFP needs the next switch ([`super::vfp`]).
static SVC_GENERAL_TABLE: [Entry; SVC_TABLE_LEN + 1] = {
    let mut t: [Entry; SVC_TABLE_LEN + 1] = [__svc_general; SVC_TABLE_LEN + 1];
    t[SVC_TABLE_LEN] = __irq_general;
    t
};

/// The dispatch table that takes everything through the Rust path
/// ([`Kernel::svc_table`] while the VFP needs the next switch).
pub(super) fn svc_general_table() -> *const u32 {
    SVC_GENERAL_TABLE.as_ptr().cast()
}

/// The dispatch table of a kernel in `mode` ([`Kernel::svc_table`]).
pub(super) fn svc_table(mode: SwitchMode) -> *const u32 {
    let t = match mode {
        SwitchMode::Fass => &SVC_FASS_TABLE,
        SwitchMode::Fcse => &SVC_FCSE_TABLE,
        SwitchMode::Naive => &SVC_NAIVE_TABLE,
    };
    t.as_ptr().cast()
}

/// The cache maintenance of a naive switch, before its TTBR write: the
/// whole D-cache cleaned and invalidated and the I-cache invalidated, by
/// the board CPU's own method (ARM926 test-and-clean, SA-1110 flush-region
/// read, XScale line allocation) through the counting platform, which
/// counts both (what `fass`'s `TableSwitch` does on a naive switch).
/// Called by the naive switch of the assembly fast path (`SWITCH_REGS` in
/// `asm/fastpath.s`) and by the Rust lean path (`switch::apply_table`);
/// touches nothing of the kernel's.
#[no_mangle]
pub extern "C" fn fast_flush_caches() {
    // SAFETY: called by the assembly fast path in a trap from user mode
    // of the installed kernel, or by `switch::apply_table`, which does not
    // use its own handle during the call; dropped on return.
    let mut m = platform::counting_on(unsafe { super::kernel::trap_cp15() });
    if !crate::marker::omitted(crate::marker::Omit::NaiveClean) {
        m.clean_invalidate_dcache();
    }
    m.invalidate_icache();
}

/// Called by the IRQ handlers of the assembly fast path
/// (`__irq_preempt_*`) first: the timer's tick if the timer raised the
/// interrupt and a process runs (acknowledged, counted, the kernel job's
/// step: `Kernel::irq_tick`), 1; else 0, nothing done (the Rust path
/// takes the interrupt).
#[no_mangle]
pub extern "C" fn fast_irq_tick() -> u32 {
    // SAFETY: called from a trap from user mode (`trap::trap_entry`'s
    // contract), with no reference to the kernel alive.
    let k = unsafe { super::kernel::running_kernel() };
    u32::from(k.irq_tick())
}

/// Called by the IRQ handlers of the assembly fast path after
/// [`fast_irq_tick`] when they cannot switch themselves: the round-robin
/// decision after the tick (`Kernel::irq_after_tick`); the frame to
/// resume.
#[no_mangle]
pub extern "C" fn fast_irq_decide() -> *mut TrapFrame {
    // SAFETY: as in `fast_irq_tick`.
    let k = unsafe { super::kernel::running_kernel() };
    let frame = k.irq_after_tick();
    // The VFP's switch work, as at the end of `trap::trap_entry` (the
    // switch may have been to a process whose record the VFP marked).
    if k.vfp.watch {
        k.vfp_after_trap();
    }
    frame
}

/// Called by the queued CALL and the blocking RECV of the assembly fast
/// path (`asm/fastpath.s`, labels 87-89) when the process to run next is
/// ready but its switch record is of an older generation: the call is
/// done (the caller blocked and counted by the assembly), only the switch
/// is left, which [`Kernel::switch_ready`] makes (a full one), without
/// the general path's dispatch and decision (the measuring build files
/// the transit after it, as every other: `clock::classify`). The frame to
/// resume.
#[no_mangle]
pub extern "C" fn fast_blocked_switch(next: usize) -> *mut TrapFrame {
    // SAFETY: as in `fast_irq_tick`.
    let k = unsafe { super::kernel::running_kernel() };
    let frame = k.switch_ready(next);
    // The VFP's switch work, as at the end of `trap::trap_entry`.
    if k.vfp.watch {
        k.vfp_after_trap();
    }
    frame
}

/// The tag byte of `s` (`State` is `repr(u8)`: the tag comes first).
const fn tag(s: &State) -> u8 {
    // SAFETY: a `repr(u8)` enum starts with its `u8` tag, always
    // initialised.
    unsafe { *(s as *const State).cast::<u8>() }
}

/// Byte `i` of `s`, which the caller knows to be initialised.
const fn byte(s: &State, i: usize) -> u8 {
    // SAFETY: in bounds (checked by the caller against `size_of`), and the
    // caller reads only bytes of the variant's fields.
    unsafe { *(s as *const State).cast::<u8>().add(i) }
}

/// `Reply::from`'s offset inside `State`: right after the tag, aligned.
const REPLY_FROM: usize = 2;
const _: () = {
    let s = State::Reply { from: 0x1234 };
    assert!(REPLY_FROM + 2 <= size_of::<State>());
    assert!(byte(&s, REPLY_FROM) == 0x34 && byte(&s, REPLY_FROM + 1) == 0x12);
};

/// `Call::dest`'s offset inside `State` (right after the tag, aligned) and
/// `Call::msg`'s (the next word): what the queued `CALL` of the fast path
/// writes and the queued `REPLY_WAIT` reads.
const CALL_DEST: usize = 2;
/// See [`CALL_DEST`].
const CALL_MSG: usize = 4;
const _: () = {
    let s = State::Call {
        dest: 0x1234,
        msg: [0x0403_0201, 0x0807_0605, 0x0c0b_0a09],
    };
    assert!(CALL_MSG + 12 <= size_of::<State>());
    assert!(byte(&s, CALL_DEST) == 0x34 && byte(&s, CALL_DEST + 1) == 0x12);
    let mut i = 0;
    while i < 12 {
        assert!(byte(&s, CALL_MSG + i) == i as u8 + 1);
        i += 1;
    }
    // The message is three whole words (LDM/STM).
    assert!((offset_of!(Proc, state) + CALL_MSG).is_multiple_of(4));
    assert!((offset_of!(Kernel, procs) + offset_of!(Proc, state) + CALL_MSG).is_multiple_of(4));
    assert!(size_of::<Proc>().is_multiple_of(4));
};

// `Option<usize>` (`Kernel::current`) and `Option<u32>`
// (`SwitchClock::t0`): the tag word (1 = `Some`) then the value.
const _: () = {
    // SAFETY: both types are two initialised words when `Some`.
    let w: [u32; 2] = unsafe { core::mem::transmute::<Option<usize>, [u32; 2]>(Some(7)) };
    assert!(w[0] == 1 && w[1] == 7);
    // SAFETY: as above.
    let w: [u32; 2] = unsafe { core::mem::transmute::<Option<u32>, [u32; 2]>(Some(9)) };
    assert!(w[0] == 1 && w[1] == 9);
};

// `SwitchRegs` (`repr(C)`): the DACR word, then the FCSEIDR word.
const _: () = {
    let Ok(pid) = FcsePid::new(3) else { panic!() };
    let r = SwitchRegs::new(Dacr::from_bits(0x55), pid);
    // SAFETY: two initialised words.
    let w: [u32; 2] = unsafe { core::mem::transmute::<SwitchRegs, [u32; 2]>(r) };
    assert!(w[0] == 0x55 && w[1] == 3 << 25);
};

// The frame is the record's first field (a frame pointer is its record's
// address), the kernel the slot's first field (the symbol is the kernel's
// address), the three counters the fast path adds to are the first three
// and in that order, and `messages` follows `round_trips`.
const _: () = {
    assert!(offset_of!(Proc, ctx) == 0);
    assert!(offset_of!(KernelSlot, k) == 0);
    assert!(size_of::<MaybeUninit<Kernel>>() == size_of::<Kernel>());
    assert!(offset_of!(Counters, switches) == 0);
    assert!(offset_of!(Counters, lean_switches) == 4);
    assert!(offset_of!(Counters, syscalls) == 8);
    assert!(offset_of!(Counters, messages) == offset_of!(Counters, round_trips) + 4);
    assert!(size_of::<ReadySet>() == 8);
    // `ldrd`/`strd` of the ready set and of the switch clock's `t0` need
    // doubleword addresses.
    assert!(
        offset_of!(Kernel, ready).is_multiple_of(8) && core::mem::align_of::<KernelSlot>() >= 8
    );
    assert!(K_T0.is_multiple_of(8));
    assert!((K_COUNTERS + offset_of!(Counters, round_trips)).is_multiple_of(8));
    assert!(MAX_PROCS == 64 && NONE == 255);
};

/// Offsets from the kernel's address.
const K_CUR: usize = offset_of!(Kernel, current) + 4;
const K_READY: usize = offset_of!(Kernel, ready);
const K_T0: usize = offset_of!(Kernel, clock) + offset_of!(SwitchClock, t0);
const K_COUNTERS: usize = offset_of!(Kernel, counters);
const K_PROCS: usize = offset_of!(Kernel, procs);
/// Offsets from a process's record.
const P_STATE: usize = offset_of!(Proc, state);
const P_GEN: usize = offset_of!(Proc, fast) + offset_of!(Fast, gen);
const P_REGS: usize = offset_of!(Proc, fast) + offset_of!(Fast, regs);
const P_TTBR: usize = offset_of!(Proc, fast) + offset_of!(Fast, ttbr);
const P_LINKS: usize = offset_of!(Proc, ipc);

core::arch::global_asm!(
    crate::marker::asm_with_markers!("src/asm/fastpath.s"),
    kernel = sym KERNEL,
    v5te = const cfg!(target_feature = "v5te") as u32,
    measure = const cfg!(feature = "measure") as u32,
    proc_size = const size_of::<Proc>(),
    max_procs = const MAX_PROCS,
    link_none = const NONE,
    nr_call = const nr::CALL,
    nr_reply_wait = const nr::REPLY_WAIT,
    st_call = const tag(&State::Call { dest: 0, msg: [0; 3] }),
    st_ready = const tag(&State::Ready),
    st_recv = const tag(&State::Recv),
    st_reply = const tag(&State::Reply { from: 0 }),
    irq_entry = const SVC_TABLE_LEN * size_of::<Entry>(),
    k_preemptions = const K_COUNTERS + offset_of!(Counters, preemptions),
    k_cur = const K_CUR,
    k_gen = const offset_of!(Kernel, gen),
    k_ready = const K_READY,
    k_svc_table = const offset_of!(Kernel, svc_table),
    svc_table_len = const SVC_TABLE_LEN,
    k_t0_tag = const K_T0,
    k_counters = const K_COUNTERS,
    k_syscalls = const K_COUNTERS + offset_of!(Counters, syscalls),
    k_messages = const K_COUNTERS + offset_of!(Counters, messages),
    k_round_trips = const K_COUNTERS + offset_of!(Counters, round_trips),
    k_procs = const K_PROCS,
    p_state = const P_STATE,
    p_reply_from = const P_STATE + REPLY_FROM,
    p_syscalls = const offset_of!(Proc, syscalls),
    p_link_send_head = const P_LINKS + LINK_SEND_HEAD,
    p_link_send_tail = const P_LINKS + LINK_SEND_TAIL,
    p_call_dest = const P_STATE + CALL_DEST,
    p_call_msg = const P_STATE + CALL_MSG,
    p_link_reply_head = const P_LINKS + LINK_REPLY_HEAD,
    p_link_next = const P_LINKS + LINK_NEXT,
    p_link_prev = const P_LINKS + LINK_PREV,
    pr_state = const K_PROCS + P_STATE,
    pr_reply_from = const K_PROCS + P_STATE + REPLY_FROM,
    pr_gen = const K_PROCS + P_GEN,
    pr_dacr = const K_PROCS + P_REGS,
    pr_fcseidr = const K_PROCS + P_REGS + 4,
    pr_ttbr = const K_PROCS + P_TTBR,
    pr_link_reply_head = const K_PROCS + P_LINKS + LINK_REPLY_HEAD,
    pr_link_send_head = const K_PROCS + P_LINKS + LINK_SEND_HEAD,
    pr_link_send_tail = const K_PROCS + P_LINKS + LINK_SEND_TAIL,
    pr_call_msg = const K_PROCS + P_STATE + CALL_MSG,
    pr_link_next = const K_PROCS + P_LINKS + LINK_NEXT,
    pr_link_prev = const K_PROCS + P_LINKS + LINK_PREV,
);
