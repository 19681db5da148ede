//! The demo kernel's user program: one image linked at 0x8000, loaded into
//! every process. The FCSE relocates each copy into its process's PID window.
//!
//! `_start` receives the role in r0 and its arguments in r1-r7 (see
//! [`abi::role`]) and calls [`user_main`], which runs the role and exits with
//! the number of checks that failed (0 = success).
//!
//! On the host this crate compiles to an empty program (like the kernel).
#![cfg_attr(target_os = "none", no_std, no_main)]

#[cfg(target_os = "none")]
mod abi;
#[cfg(target_os = "none")]
mod hostile;
#[cfg(target_os = "none")]
mod longipc;
mod omission;
#[cfg(target_os = "none")]
mod roles;
#[cfg(target_os = "none")]
mod sys;
#[cfg(target_os = "none")]
mod vfp;

#[cfg(target_os = "none")]
core::arch::global_asm!(
    r#"
    .section .text._start, "ax"
    .arm
    .global _start
_start:
    stmfd   sp!, {{r4-r7}}
    bl      user_main
1:  b       1b
"#
);

/// Runs role `role` with arguments `a`..`g` and exits with its result.
#[cfg(target_os = "none")]
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn user_main(
    role: u32,
    a: u32,
    b: u32,
    c: u32,
    d: u32,
    e: u32,
    f: u32,
    g: u32,
) -> ! {
    let code = roles::run(role, [a, b, c, d, e, f, g]);
    sys::exit(code)
}

#[cfg(target_os = "none")]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    sys::exit(0xDEAD)
}

/// On the host the user program is empty (see the crate docs).
#[cfg(not(target_os = "none"))]
fn main() {}
