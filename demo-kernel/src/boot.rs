//! Start-up code and exception vectors (assembly).
//!
//! `asm/boot.s` is the ELF entry (`_start`, physical, MMU off) and
//! `_start_high` (virtual, MMU on); `asm/vectors.s` holds the vector page and
//! the exception entry stubs; `asm/probe.s` the probe instructions;
//! `asm/trap.s` the user-mode trap frames and the way into user mode;
//! `asm/vfp.s` the VFP's guarded detection and its register save and load.
//! The files with CP15 accesses get the cache-check marker macros
//! ([`asm_with_markers`]).

use crate::marker::asm_with_markers;

core::arch::global_asm!(asm_with_markers!("src/asm/boot.s"), options(raw));
core::arch::global_asm!(asm_with_markers!("src/asm/vectors.s"), options(raw));
core::arch::global_asm!(include_str!("asm/probe.s"), options(raw));
/// `MEASURE` for `asm/trap.s`: 1 in the measuring build (the `measure`
/// feature: the transit stamps and their accounting), 0 in the shipped one.
#[cfg(feature = "measure")]
macro_rules! measure_flag {
    () => {
        ".equ MEASURE, 1\n"
    };
}
#[cfg(not(feature = "measure"))]
macro_rules! measure_flag {
    () => {
        ".equ MEASURE, 0\n"
    };
}
core::arch::global_asm!(
    concat!(measure_flag!(), include_str!("asm/trap.s")),
    options(raw)
);
core::arch::global_asm!(include_str!("asm/vfp.s"), options(raw));
