//! Long IPC roles ([`crate::abi::role::LONGIPC`], [`crate::abi::role::LONGBAD`]):
//! a ping-pong of buffers whose every byte is checked on arrival (and the
//! bytes after the message, which must not change), and the refusals.

use core::ptr::{copy_nonoverlapping, read_volatile, write_volatile};

use crate::abi::{err, nr, prot, DATA_VA, LONG_MAX, PAGE};
use crate::sys::{self, syscall};

/// The message buffer (sent from and received into).
const BUF: u32 = DATA_VA;
/// The plain copy's source and destination (the benchmark's laps).
const SRC: u32 = DATA_VA + PAGE;
const DST: u32 = DATA_VA + 2 * PAGE;
/// Pages mapped at `DATA_VA` (the one after is unmapped).
const PAGES: u32 = 3;
/// The sizes of a run with size 0.
const SIZES: [u32; 3] = [64, 1024, 4096];
/// What the bytes after a message hold.
const SENTINEL: u8 = 0xEE;

core::arch::global_asm!(include_str!("../../src/asm/copy_words.s"), options(raw));

extern "C" {
    /// The kernel's long-IPC copy routine (`asm/copy_words.s`, the same
    /// file): `dst`, `src`, `len` multiples of 4.
    fn copy_words(dst: *mut u32, src: *const u32, len: u32);
}

fn lsend(dest: u32, buf: u32, len: u32) -> u32 {
    syscall(nr::LSEND, [dest, buf, len, 0])[0]
}

fn lrecv(buf: u32, cap: u32) -> [u32; 4] {
    syscall(nr::LRECV, [buf, cap, 0, 0])
}

fn lsend_recv(dest: u32, buf: u32, len: u32, cap: u32) -> [u32; 4] {
    syscall(nr::LSEND_RECV, [dest, buf, len, cap])
}

fn lap(k: u32) {
    syscall(nr::LAP, [k, 0, 0, 0]);
}

/// Byte `i` of the message of `who` in round `round` of size `size`.
fn byte(who: u32, size: u32, round: u32, i: u32) -> u8 {
    (i.wrapping_mul(7) ^ round.wrapping_mul(13) ^ who.wrapping_mul(101) ^ (size >> 4)) as u8
}

fn at(va: u32, i: u32) -> *mut u8 {
    (va + i) as *mut u8
}

/// Writes the message into `BUF` and the sentinel after it.
fn fill(who: u32, size: u32, round: u32) {
    for i in 0..LONG_MAX {
        let v = if i < size {
            byte(who, size, round, i)
        } else {
            SENTINEL
        };
        // SAFETY: `BUF` maps `LONG_MAX` bytes of our own read/write pages.
        unsafe { write_volatile(at(BUF, i), v) };
    }
}

/// Mismatches of the message of `who` in `BUF`, and of the sentinel after.
fn check(who: u32, size: u32, round: u32) -> u32 {
    let mut bad = 0;
    for i in 0..LONG_MAX {
        let want = if i < size {
            byte(who, size, round, i)
        } else {
            SENTINEL
        };
        // SAFETY: as in `fill`.
        if unsafe { read_volatile(at(BUF, i)) } != want {
            bad += 1;
        }
    }
    bad
}

fn map_buffers() -> u32 {
    u32::from(sys::is_err(sys::map(DATA_VA, PAGES * PAGE, prot::RW)))
}

/// Long IPC ping-pong (see [`crate::abi::role::LONGIPC`]).
pub fn ping_pong(i: u32, peer: u32, rounds: u32, size: u32, bench: bool) -> u32 {
    let mut bad = map_buffers() * 1000;
    let sizes: &[u32] = if size == 0 {
        &SIZES
    } else {
        core::slice::from_ref(&size)
    };
    if i == 1 {
        // The answerer: everything it receives comes from the peer, in the
        // order the peer sends it; an empty message ends.
        fill(1, 0, 0);
        let mut r = lrecv(BUF, LONG_MAX);
        for &s in sizes {
            for round in 0..rounds {
                if r[0] != peer || r[1] != s {
                    return bad + 100;
                }
                bad += check(0, s, round);
                fill(1, s, round);
                r = lsend_recv(peer, BUF, s, LONG_MAX);
            }
        }
        if r[0] != peer || r[1] != 0 {
            bad += 1;
        }
        return bad;
    }
    for &s in sizes {
        for round in 0..rounds {
            if bench && round == 1 {
                sys::mark(0);
            }
            fill(0, s, round);
            let r = lsend_recv(peer, BUF, s, LONG_MAX);
            if r[0] != peer || r[1] != s {
                return bad + 200;
            }
            bad += check(1, s, round);
        }
        if bench {
            // The plain copy of the same size in our own space, between
            // `LAP`s: laps that copy and empty ones, alternately.
            for k in 0..rounds {
                // SAFETY: `SRC` and `DST` are two of our own read/write
                // pages; `s` is at most one page.
                unsafe {
                    write_volatile(at(SRC, k % s), k as u8);
                }
                lap(0);
                if s % 4 == 0 {
                    // SAFETY: as above; page-aligned buffers, `s` a
                    // multiple of 4 (the kernel copies the same way).
                    unsafe { copy_words(DST as *mut u32, SRC as *const u32, s) };
                } else {
                    // SAFETY: as above.
                    unsafe { copy_nonoverlapping(at(SRC, 0), at(DST, 0), s as usize) };
                }
                lap(1);
                lap(0);
                lap(2);
                // SAFETY: as above.
                if unsafe { read_volatile(at(DST, k % s)) } != k as u8 {
                    bad += 1;
                }
            }
            sys::mark(1);
        }
    }
    // The end: an empty message, nothing received after it.
    if lsend(peer, BUF, 0) != 0 {
        bad += 1;
    }
    bad
}

/// Checks `got == want` (an error code), counting a mismatch.
fn expect(bad: &mut u32, got: u32, want: i32) {
    if got != want as u32 {
        *bad += 1;
    }
}

/// Long IPC's refusals (see [`crate::abi::role::LONGBAD`]): `i` 0 the
/// prober, 1 its receiver (`peer`), 2 the receiver that exits while the
/// prober waits on it (`exiter`); `other` an address of another
/// process's FCSE window.
pub fn refusals(i: u32, peer: u32, exiter: u32, other: u32) -> u32 {
    let mut bad = map_buffers() * 1000;
    match i {
        2 => {
            // Never receives: the prober's send waits until this exit.
            for _ in 0..20 {
                sys::yield_now();
            }
            0
        }
        1 => {
            // Buffers refused before blocking: read-only (our text), too
            // long, the kernel's.
            expect(&mut bad, lrecv(0x8000, 64)[0], err::EFAULT);
            expect(&mut bad, lrecv(BUF, LONG_MAX + 1)[0], err::EMSGSIZE);
            expect(&mut bad, lrecv(0xC000_0000, 64)[0], err::EFAULT);
            // The prober's 128 bytes do not fit 64: refused to it, and the
            // 64 bytes after arrive.
            fill(1, 0, 0);
            let r = lrecv(BUF, 64);
            if r[0] != peer || r[1] != 64 {
                bad += 10;
            }
            bad += check(0, 64, 7);
            // A plain receive: a long message of 16 bytes is refused to its
            // sender; the plain message after arrives.
            let (from, w) = sys::recv();
            if from != peer || w != [1, 2, 3] {
                bad += 20;
            }
            // A plain message to a long receive: 0 bytes, words in r2, r3.
            let r = lrecv(BUF, 64);
            if r != [peer, 0, 4, 5] {
                bad += 40;
            }
            bad
        }
        _ => {
            // The receiver exits while we wait on it: ESRCH.
            fill(0, 64, 7);
            expect(&mut bad, lsend(exiter, BUF, 64), err::ESRCH);
            // Refused before anything is sent.
            expect(&mut bad, lsend(peer, BUF, LONG_MAX + 1), err::EMSGSIZE);
            expect(&mut bad, lsend(peer, 0xC000_0000, 64), err::EFAULT);
            expect(&mut bad, lsend(peer, other, 64), err::EFAULT);
            // Unmapped halfway: the last 32 bytes of the mapping and 32 after.
            expect(
                &mut bad,
                lsend(peer, DATA_VA + PAGES * PAGE - 32, 64),
                err::EFAULT,
            );
            expect(&mut bad, lsend(peer, 0xFFFF_FFF0, 64), err::EINVAL);
            expect(&mut bad, lsend(sys_getid(), BUF, 64), err::EDEADLK);
            expect(&mut bad, lsend(63, BUF, 64), err::ESRCH);
            // Longer than the receiver's buffer, then the right size.
            expect(&mut bad, lsend(peer, BUF, 128), err::EMSGSIZE);
            fill(0, 64, 7);
            expect(&mut bad, lsend(peer, BUF, 64), 0);
            // A long message to a plain receive.
            expect(&mut bad, lsend(peer, BUF, 16), err::EMSGSIZE);
            expect(&mut bad, sys::send(peer, [1, 2, 3]), 0);
            expect(&mut bad, sys::send(peer, [4, 5, 6]), 0);
            bad
        }
    }
}

fn sys_getid() -> u32 {
    syscall(nr::GETID, [0; 4])[0]
}
