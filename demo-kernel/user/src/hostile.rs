//! The hostile scenario's roles: a victim that keeps secret pages, and
//! attackers that try to reach them through the TCM exchange
//! ([`crate::abi::attack`]).
//!
//! The Thumb attacks issue `TCM_EXCHANGE` from Thumb code
//! (`hostile_thumb_svc`), whose 2-byte `SVC` is directly preceded by a
//! `BX` into `hostile_escape`: reached only if the kernel resumes the
//! caller 4 bytes before the end of the `SVC` (the replay of a preempted
//! call by rewinding the pc, correct in ARM state only). The escape runs
//! the attack ([`hostile_escape_body`]) while the exchange is half done,
//! then re-issues the `SVC`. A kernel that blocks the caller until its
//! exchange is over never enters the escape.

use core::cell::UnsafeCell;
use core::ptr::{read_volatile, write_volatile};

use crate::abi::attack::{self, result};
use crate::abi::{err, nr, prot, victim, ATTACK_VA, PAGE, TCM_RES_VA, VICTIM_VA};
use crate::sys::{self, syscall};

// `hostile_thumb_svc(va, kind, number)`: the system call `number` with
// r0 = va, r1 = kind, issued from Thumb state. The halfword before the
// `SVC` is `BX r5` (r5 = `hostile_escape`), never reached in order.
// `hostile_escape` (ARM) runs the attack on an 8-byte aligned stack and
// jumps back to the `SVC` (r6) with r0-r3 and r7 as they were.
// Not on a CPU without Thumb (StrongARM; the scenario needs TCM, which
// those boards lack, so it never runs there).
#[cfg(not(no_thumb))]
core::arch::global_asm!(
    r#"
    .section .text.hostile_thumb, "ax"
    .balign 4
    .thumb
    .thumb_func
    .type   hostile_thumb_svc, %function
    .global hostile_thumb_svc
hostile_thumb_svc:
    push    {r4-r7, lr}
    movs    r7, r2
    ldr     r5, =hostile_escape
    ldr     r6, =hostile_resvc
    movs    r2, #0
    movs    r3, #0
    b       hostile_resvc
    bx      r5
    .thumb_func
    .type   hostile_resvc, %function
    .global hostile_resvc
hostile_resvc:
    svc     #0
    pop     {r4-r7, pc}
    .ltorg

    .balign 4
    .arm
    .type   hostile_escape, %function
    .global hostile_escape
hostile_escape:
    mov     r4, sp
    bic     sp, sp, #7
    push    {r0-r4, r6, r7, lr}
    bl      hostile_escape_body
    pop     {r0-r4, r6, r7, lr}
    mov     sp, r4
    bx      r6
"#,
    options(raw)
);

#[cfg(not(no_thumb))]
extern "C" {
    fn hostile_thumb_svc(va: u32, kind: u32, number: u32) -> u32;
}

/// No Thumb state on this CPU: every call is refused as the kernel would
/// refuse a bad one.
#[cfg(no_thumb)]
unsafe fn hostile_thumb_svc(_va: u32, _kind: u32, _number: u32) -> u32 {
    err::ENOSYS as u32
}

/// What the escape does, and what it saw (one process, one thread).
struct Escape {
    kind: u32,
    victim: u32,
    /// Whether the attack is still to be done for the current exchange.
    armed: bool,
    /// Times the escape was entered.
    escapes: u32,
    /// Calls the kernel must refuse that it accepted.
    accepted: u32,
    /// Whether `ATTACK_VA` is mapped (after the escape's own unmap and map).
    mapped: bool,
}

struct Shared(UnsafeCell<Escape>);
// SAFETY: a process is single-threaded; the escape runs in place of the
// interrupted system call, never beside other code of the process.
unsafe impl Sync for Shared {}

static ESC: Shared = Shared(UnsafeCell::new(Escape {
    kind: 0,
    victim: 0,
    armed: false,
    escapes: 0,
    accepted: 0,
    mapped: false,
}));

fn esc() -> &'static mut Escape {
    // SAFETY: see `Shared`; each use is one short borrow.
    unsafe { &mut *ESC.0.get() }
}

/// Word `w` of the victim's secret page `slot`.
fn secret(slot: u32, w: u32) -> u32 {
    (victim::SECRET_TAG << 16) | (slot << 10) | w
}

/// Word `w` of attacker `me`'s page in round `k`.
fn own(me: u32, k: u32, w: u32) -> u32 {
    0xA77A_0000 ^ (me << 20) ^ (k << 10) ^ w
}

fn words(va: u32) -> *mut u32 {
    va as *mut u32
}

fn fill(va: u32, f: impl Fn(u32) -> u32) {
    for w in 0..PAGE / 4 {
        // SAFETY: the caller's own read/write page at `va`.
        unsafe { write_volatile(words(va).add(w as usize), f(w)) };
    }
}

/// Words of the page at `va` that differ from `f`.
fn differ(va: u32, f: impl Fn(u32) -> u32) -> u32 {
    (0..PAGE / 4)
        // SAFETY: the caller's own readable page at `va`.
        .filter(|&w| unsafe { read_volatile(words(va).add(w as usize)) } != f(w))
        .count() as u32
}

/// Secret words of the victim in the page at `va`.
fn secrets_in(va: u32) -> u32 {
    (0..PAGE / 4)
        // SAFETY: the caller's own readable page at `va`.
        .filter(
            |&w| unsafe { read_volatile(words(va).add(w as usize)) } >> 16 == victim::SECRET_TAG,
        )
        .count() as u32
}

fn state(va: u32) -> u32 {
    syscall(nr::TCM_STATE, [va, 0, 0, 0])[0]
}

fn unmap(va: u32) -> i32 {
    syscall(nr::UNMAP, [va, PAGE, 0, 0])[0] as i32
}

/// A TCM call from ARM state, retried while another process's exchange
/// is in progress (`EBUSY`).
fn tcm_arm(number: u32, va: u32, kind: u32) -> i32 {
    for _ in 0..100 {
        let r = syscall(number, [va, kind, 0, 0])[0] as i32;
        if r != err::EBUSY {
            return r;
        }
        sys::yield_now();
    }
    err::EBUSY
}

/// `TCM_EXCHANGE(va, DTCM)` from Thumb state, retried on `EBUSY`.
fn exchange_thumb(va: u32) -> i32 {
    for _ in 0..100 {
        // SAFETY: a system call (see the assembly); the escape it may
        // enter keeps every register the call's caller relies on.
        let r = unsafe { hostile_thumb_svc(va, 1, nr::TCM_EXCHANGE) } as i32;
        if r != err::EBUSY {
            return r;
        }
        sys::yield_now();
    }
    err::EBUSY
}

/// Counts a call the kernel must refuse that it accepted.
fn refused(r: i32) {
    if r >= 0 {
        esc().accepted += 1;
    }
}

fn ask(victim: u32, what: u32) {
    let _ = sys::call(victim, [what, 0, 0]);
}

/// The attack, run in place of the interrupted `TCM_EXCHANGE` (only ever
/// reached through the replay described in the module docs).
#[no_mangle]
extern "C" fn hostile_escape_body() {
    let e = esc();
    e.escapes += 1;
    if !e.armed {
        return;
    }
    e.armed = false;
    let (kind, victim) = (e.kind, e.victim);
    match kind {
        attack::THUMB_UNMAP | attack::THUMB_EXIT | attack::THUMB_REMAP => {
            if unmap(ATTACK_VA) == 0 {
                esc().mapped = false;
            }
            // The victim maps a page: the lowest free frame, just freed.
            ask(victim, victim::ALLOC);
            if kind == attack::THUMB_REMAP && sys::map(ATTACK_VA, PAGE, prot::RW) == 0 {
                esc().mapped = true;
                fill(ATTACK_VA, |w| own(0xF, 0, w));
            }
            if kind == attack::THUMB_EXIT {
                sys::exit(0);
            }
        }
        attack::THUMB_OPS => {
            refused(syscall(nr::TCM_DELETE, [ATTACK_VA, 0, 0, 0])[0] as i32);
            refused(syscall(nr::TCM_SET_STATE, [ATTACK_VA, 1, 0, 0])[0] as i32);
            for k in 0..4 {
                let va = TCM_RES_VA + k * PAGE;
                if sys::map(va, PAGE, prot::RW) == 0 {
                    esc().accepted += 1;
                    let _ = unmap(va);
                }
            }
            // A second exchange and a release while this one is pending.
            refused(syscall(nr::TCM_EXCHANGE, [ATTACK_VA + PAGE, 1, 0, 0])[0] as i32);
            refused(syscall(nr::TCM_RELEASE, [ATTACK_VA, 0, 0, 0])[0] as i32);
            if unmap(ATTACK_VA) == 0 {
                esc().mapped = false;
                esc().accepted += 1;
            }
            ask(victim, victim::ALLOC);
        }
        attack::THUMB_FAULT => {
            // SAFETY: our own page, write-protected by the exchange: the
            // store faults and the kernel ends us.
            unsafe { write_volatile(words(ATTACK_VA), 0xDEAD_BEEF) };
        }
        _ => {}
    }
}

/// One exchange of the attack page from Thumb state with the escape armed,
/// then what is left of it checked, released and unmapped. Returns the
/// secret words seen and whether its own data survived.
fn thumb_round(me: u32, k: u32) -> (u32, bool, bool) {
    let e = esc();
    if sys::map(ATTACK_VA, PAGE, prot::RW) != 0 {
        return (0, true, false);
    }
    e.mapped = true;
    fill(ATTACK_VA, |w| own(me, k, w));
    e.armed = true;
    let r = exchange_thumb(ATTACK_VA);
    let e = esc();
    e.armed = false;
    let mut seen = 0;
    let mut own_ok = true;
    let mut tcm_ok = true;
    if !e.mapped {
        // Unmapped by the escape: map it again and look at what it holds.
        if sys::map(ATTACK_VA, PAGE, prot::RW) == 0 {
            e.mapped = true;
        }
    }
    if e.mapped {
        seen += secrets_in(ATTACK_VA);
        if r == 0 && esc().escapes == 0 {
            // A clean exchange: the page is in DTCM with our data.
            own_ok &= state(ATTACK_VA) == 2 | (2 << 4);
            own_ok &= differ(ATTACK_VA, |w| own(me, k, w)) == 0;
            // A page in TCM is not unmapped.
            if unmap(ATTACK_VA) == 0 {
                esc().accepted += 1;
                esc().mapped = false;
            }
        }
    }
    if r == 0 {
        tcm_ok &= tcm_arm(nr::TCM_RELEASE, ATTACK_VA, 0) == 0 || esc().escapes > 0;
    } else {
        tcm_ok = false;
    }
    if esc().mapped {
        seen += secrets_in(ATTACK_VA);
        if esc().escapes == 0 {
            own_ok &= differ(ATTACK_VA, |w| own(me, k, w)) == 0;
        }
        if unmap(ATTACK_VA) == 0 {
            esc().mapped = false;
        }
    }
    (seen, own_ok, tcm_ok)
}

/// ARM state: exchanges preempted in ARM state; with the page in DTCM,
/// unmapping it and mapping over the resource slots must be refused.
fn arm_round(me: u32, k: u32, victim: u32) -> (u32, bool, bool) {
    if sys::map(ATTACK_VA, PAGE, prot::RW) != 0 {
        return (0, true, false);
    }
    fill(ATTACK_VA, |w| own(me, k, w));
    let mut tcm_ok = tcm_arm(nr::TCM_EXCHANGE, ATTACK_VA, 1) == 0;
    let mut own_ok = true;
    let mut mapped = true;
    if tcm_ok {
        own_ok &= state(ATTACK_VA) == 2 | (2 << 4);
        own_ok &= differ(ATTACK_VA, |w| own(me, k, w)) == 0;
        if unmap(ATTACK_VA) == 0 {
            esc().accepted += 1;
            mapped = false;
        }
        for s in 0..4 {
            let va = TCM_RES_VA + s * PAGE;
            if sys::map(va, PAGE, prot::RW) == 0 {
                esc().accepted += 1;
                let _ = unmap(va);
            }
        }
        // Also a range that only reaches into the slots.
        if sys::map(TCM_RES_VA - PAGE, 2 * PAGE, prot::RW) == 0 {
            esc().accepted += 1;
            let _ = syscall(nr::UNMAP, [TCM_RES_VA - PAGE, 2 * PAGE, 0, 0]);
        }
        ask(victim, victim::ALLOC);
        if mapped {
            tcm_ok &= tcm_arm(nr::TCM_RELEASE, ATTACK_VA, 0) == 0;
            own_ok &= state(ATTACK_VA) == 2;
            own_ok &= differ(ATTACK_VA, |w| own(me, k, w)) == 0;
        }
    }
    let seen = if mapped { secrets_in(ATTACK_VA) } else { 0 };
    if mapped {
        let _ = unmap(ATTACK_VA);
    }
    (seen, own_ok, tcm_ok)
}

/// A page in TCM is unmapped (must be refused); the victim exchanges its
/// secret page into the bank; the attacker maps its page again, releases
/// it and reads what it gets.
fn unmap_in_tcm_round(me: u32, k: u32, victim: u32) -> (u32, bool, bool) {
    if sys::map(ATTACK_VA, PAGE, prot::RW) != 0 {
        return (0, true, false);
    }
    fill(ATTACK_VA, |w| own(me, k, w));
    let tcm_ok = tcm_arm(nr::TCM_EXCHANGE, ATTACK_VA, 1) == 0;
    let mut own_ok = true;
    let mut seen = 0;
    if tcm_ok {
        let unmapped = unmap(ATTACK_VA) == 0;
        if unmapped {
            esc().accepted += 1;
        }
        // The victim's secret page into DTCM (the frame just freed?) and back.
        ask(victim, victim::TCM);
        if unmapped && sys::map(ATTACK_VA, PAGE, prot::RW) != 0 {
            return (0, own_ok, tcm_ok);
        }
        let _ = tcm_arm(nr::TCM_RELEASE, ATTACK_VA, 0);
        seen += secrets_in(ATTACK_VA);
        if !unmapped {
            own_ok &= differ(ATTACK_VA, |w| own(me, k, w)) == 0;
        }
        ask(victim, victim::TCM);
        seen += secrets_in(ATTACK_VA);
    }
    let _ = unmap(ATTACK_VA);
    (seen, own_ok, tcm_ok)
}

/// Attacker `kind` against `victim` for `rounds` rounds; returns the
/// [`result`] bits.
pub fn attacker(kind: u32, victim: u32, rounds: u32, watched: u32) -> u32 {
    let me = syscall(nr::GETID, [0; 4])[0];
    if kind == attack::WATCH {
        // Blocks until `watched` ends (ESRCH), then reports it done.
        let _ = sys::call(watched, [0; 3]);
        ask(victim, victim::DONE);
        return 0;
    }
    {
        let e = esc();
        e.kind = kind;
        e.victim = victim;
    }
    let mut leaked = 0u32;
    let mut bits = 0;
    for k in 0..rounds {
        let (seen, own_ok, tcm_ok) = match kind {
            attack::ARM_PREEMPT => arm_round(me, k, victim),
            attack::UNMAP_IN_TCM => unmap_in_tcm_round(me, k, victim),
            _ => thumb_round(me, k),
        };
        leaked = leaked.saturating_add(seen);
        if !own_ok {
            bits |= result::OWN_DATA;
        }
        if !tcm_ok {
            bits |= result::TCM_FAILED;
        }
    }
    let e = esc();
    if e.escapes > 0 {
        bits |= result::ESCAPED;
    }
    if e.accepted > 0 {
        bits |= result::ACCEPTED;
    }
    // The dying attacks leave their `DONE` to a watcher.
    if !matches!(kind, attack::THUMB_EXIT | attack::THUMB_FAULT) {
        ask(victim, victim::DONE);
    }
    bits | leaked.min(result::LEAKED)
}

/// Pages of the victim: slot 0 is the one it exchanges into DTCM.
const VSLOTS: u32 = 8;

/// The victim: secret pages at `VICTIM_VA`, verified after every request
/// it serves, until `dones` `DONE` requests came. Returns the secret words
/// that changed (plus 0x10000 if one of its own TCM calls failed).
pub fn victim(dones: u32) -> u32 {
    let page = |s: u32| VICTIM_VA + s * PAGE;
    let mut mapped = [false; VSLOTS as usize];
    let mut bad = 0u32;
    let mut tcm_failed = false;
    let mut in_tcm = false;
    let mut next = 1;
    if sys::map(page(0), PAGE, prot::RW) != 0 {
        return 0xDEAD;
    }
    mapped[0] = true;
    fill(page(0), |w| secret(0, w));
    let check = |mapped: &[bool; VSLOTS as usize]| -> u32 {
        (0..VSLOTS)
            .filter(|&s| mapped[s as usize])
            .map(|s| differ(page(s), |w| secret(s, w)))
            .sum()
    };
    let mut done = 0;
    while done < dones {
        let (from, w) = sys::recv();
        if sys::is_err(from) {
            continue;
        }
        match w[0] {
            victim::ALLOC => {
                let s = next;
                next = 1 + next % (VSLOTS - 1);
                if mapped[s as usize] {
                    bad += differ(page(s), |w| secret(s, w));
                    mapped[s as usize] = unmap(page(s)) != 0;
                }
                if !mapped[s as usize] && sys::map(page(s), PAGE, prot::RW) == 0 {
                    mapped[s as usize] = true;
                    fill(page(s), |w| secret(s, w));
                }
            }
            victim::TCM => {
                let number = if in_tcm {
                    nr::TCM_RELEASE
                } else {
                    nr::TCM_EXCHANGE
                };
                if tcm_arm(number, page(0), 1) == 0 {
                    in_tcm = !in_tcm;
                } else {
                    tcm_failed = true;
                }
            }
            victim::DONE => done += 1,
            _ => {}
        }
        let _ = sys::reply(from, [0; 3]);
        bad += check(&mapped);
    }
    if in_tcm && tcm_arm(nr::TCM_RELEASE, page(0), 0) != 0 {
        tcm_failed = true;
    }
    bad += check(&mapped);
    for s in 0..VSLOTS {
        if mapped[s as usize] {
            let _ = unmap(page(s));
        }
    }
    bad.min(0xFFFF) | if tcm_failed { 0x1_0000 } else { 0 }
}
