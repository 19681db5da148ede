//! The VFP roles ([`role::VFP_CHECK`], [`role::VFP_DIE`],
//! [`role::VFP_YIELD`]). The crate is soft-float: the VFP is reached only
//! through these assembly blocks (`.fpu vfp`), which name no VFP register
//! to the compiler (it never uses them itself).

use core::arch::asm;

use crate::abi::role;
use crate::abi::vfp::{fpscr, word, SPIN, TAG, WAIT, WORDS};
use crate::sys;

/// d0-d15 and FPSCR into `w` (d0's low word first).
fn read_all(w: &mut [u32; WORDS]) {
    // SAFETY: stores 33 words into `w`, ours; touches no other memory and
    // no register the compiler uses (it never uses the VFP).
    unsafe {
        asm!(
            ".fpu vfp",
            "vstmia {p}, {{d0-d15}}",
            "vmrs {t}, fpscr",
            "str {t}, [{p}, #128]",
            p = in(reg) w.as_mut_ptr(),
            t = out(reg) _,
            options(nostack),
        );
    }
}

/// d0-d15 and FPSCR from `w`.
fn write_all(w: &[u32; WORDS]) {
    // SAFETY: loads 33 words from `w`; writes only VFP registers, which
    // the compiler never uses.
    unsafe {
        asm!(
            ".fpu vfp",
            "vldmia {p}, {{d0-d15}}",
            "ldr {t}, [{p}, #128]",
            "vmsr fpscr, {t}",
            p = in(reg) w.as_ptr(),
            t = out(reg) _,
            options(nostack, readonly),
        );
    }
}

/// What checker `who` writes in round `k`.
fn pattern(who: u32, k: u32) -> [u32; WORDS] {
    let mut w = [0; WORDS];
    for (i, x) in w.iter_mut().enumerate().take(32) {
        *x = word(who, k, i as u32);
    }
    w[32] = fpscr(who, k);
    w
}

/// Spins about 30,000 instructions without a system call (the timer
/// preempts it at least twice at the default slice).
fn spin() {
    let mut x = 0u32;
    for _ in 0..7500 {
        // SAFETY: a local; volatile only to keep the loop.
        unsafe { core::ptr::write_volatile(&mut x, core::ptr::read_volatile(&x).wrapping_add(1)) };
    }
}

/// [`role::VFP_CHECK`].
pub fn check(who: u32, rounds: u32, flags: u32) -> u32 {
    if flags & WAIT != 0 {
        for _ in 0..8 {
            sys::yield_now();
        }
    }
    let (mut bad, mut foreign) = (0u32, 0u32);
    let mut seen = [0u32; WORDS];
    for k in 0..rounds + 2 {
        if k == 2 {
            sys::mark(0);
        }
        read_all(&mut seen);
        let want = if k == 0 {
            [0; WORDS]
        } else {
            pattern(who, k - 1)
        };
        for i in 0..WORDS {
            if seen[i] != want[i] {
                bad += 1;
                let tagged = seen[i] & 0xFFFF_0000 == TAG;
                if i < 32 && tagged && (seen[i] >> 12) & 0xF != who & 0xF {
                    foreign += 1;
                }
            }
        }
        write_all(&pattern(who, k));
        if flags & SPIN != 0 {
            spin();
        } else {
            sys::yield_now();
        }
    }
    sys::mark(1);
    bad.min(0xFFFF) | foreign.min(0xFFFF) << 16
}

/// [`role::VFP_DIE`]: never returns normally.
pub fn die(who: u32, uses_vfp: u32) -> u32 {
    if uses_vfp != 0 {
        write_all(&pattern(who, 0x7F));
    }
    // SAFETY: a permanently undefined instruction (not a coprocessor one):
    // the kernel kills the process; nothing after it runs.
    unsafe { asm!(".word 0xe7f000f0", options(nostack, nomem)) };
    0xBAD1
}

/// The bits of the double `m / 2` (`m` >= 1), with integer operations
/// only: the crate is soft-float, and the check should not trust a float
/// routine either.
fn halves(m: u32) -> u64 {
    let p = 31 - m.leading_zeros(); // m = 1.f * 2^p
    let exponent = u64::from(p) + 1023 - 1;
    let fraction = (u64::from(m) << (52 - p)) & ((1 << 52) - 1);
    exponent << 52 | fraction
}

/// [`role::VFP_YIELD`].
pub fn yielder(who: u32, rounds: u32, uses_vfp: u32) -> u32 {
    let mut bad = 0;
    if uses_vfp != 0 {
        // d0 = 0.0, d1 = 3.0, d2 = 0.5, d3 = 1.0, the rest and FPSCR 0.
        let mut w = [0u32; WORDS];
        for (d, v) in [(0, 0.0f64), (1, 3.0), (2, 0.5), (3, 1.0)] {
            let b = v.to_bits();
            w[2 * d] = b as u32;
            w[2 * d + 1] = (b >> 32) as u32;
        }
        write_all(&w);
    }
    for k in 0..rounds + 2 {
        // Only the first process marks: the other's `MARK 0` would be a
        // transit inside the measured window.
        if k == 2 && who == 0 {
            sys::mark(0);
        }
        if uses_vfp != 0 {
            let (a0, a1, b0, b1): (u32, u32, u32, u32);
            // SAFETY: VFP registers only (d0, d1 computed, d2, d3 read),
            // which the compiler never uses; the results come back in
            // four core registers.
            unsafe {
                asm!(
                    ".fpu vfp",
                    "vadd.f64 d0, d0, d2",
                    "vmul.f64 d1, d1, d3",
                    "vmov {a0}, {a1}, d0",
                    "vmov {b0}, {b1}, d1",
                    a0 = out(reg) a0,
                    a1 = out(reg) a1,
                    b0 = out(reg) b0,
                    b1 = out(reg) b1,
                    options(nostack, nomem),
                );
            }
            if (u64::from(a1) << 32 | u64::from(a0)) != halves(k + 1) {
                bad += 1;
            }
            if (u64::from(b1) << 32 | u64::from(b0)) != 3.0f64.to_bits() {
                bad += 1;
            }
        }
        sys::yield_now();
    }
    // Both: the first to finish ends the window, before any exit.
    sys::mark(1);
    bad
}

/// Runs a VFP role; `None` for another role.
pub fn run(r: u32, a: [u32; 7]) -> Option<u32> {
    Some(match r {
        role::VFP_CHECK => check(a[0], a[1], a[2]),
        role::VFP_DIE => die(a[0], a[1]),
        role::VFP_YIELD => yielder(a[0], a[1], a[2]),
        _ => return None,
    })
}
