//! The board the kernel is built for, chosen at build time by exactly one
//! cargo feature (`board-versatilepb`, the default, `board-collie`,
//! `board-connex`; `cargo xtask --board NAME` picks it and the target).
//!
//! Each board module gives the same items: its memory map
//! ([`map::Layout`], shared with `build.rs`, which writes the linker-script
//! values from it), the console UART, the preemption timer and its
//! interrupt controller, the free-running counter the trap path reads (its
//! virtual address is the linker symbol `__board_counter`), the CPU's cache
//! and TLB maintenance type ([`Maint`], built by [`maint`]), the CPU it
//! expects and whether it has TCM. Code outside this module has no
//! board-specific constant.

#[cfg(not(any(
    feature = "board-versatilepb",
    feature = "board-collie",
    feature = "board-connex"
)))]
compile_error!(
    "demo-kernel needs one of the features board-versatilepb, board-collie, board-connex"
);

#[cfg(any(
    all(feature = "board-versatilepb", feature = "board-collie"),
    all(feature = "board-versatilepb", feature = "board-connex"),
    all(feature = "board-collie", feature = "board-connex")
))]
compile_error!("demo-kernel takes exactly one board-* feature (add --no-default-features)");

// Every board's layout is compiled (build.rs reads them all); the kernel
// uses its own.
#[allow(dead_code)]
pub mod map;

#[cfg(any(feature = "board-collie", feature = "board-connex"))]
mod ostimer;

#[cfg(feature = "board-collie")]
mod collie;
#[cfg(feature = "board-collie")]
pub use collie::*;

#[cfg(feature = "board-connex")]
mod connex;
#[cfg(feature = "board-connex")]
pub use connex::*;

#[cfg(all(
    feature = "board-versatilepb",
    not(any(feature = "board-collie", feature = "board-connex"))
))]
mod versatilepb;
#[cfg(all(
    feature = "board-versatilepb",
    not(any(feature = "board-collie", feature = "board-connex"))
))]
pub use versatilepb::*;

/// Virtual address of physical device register `pa` (in one of the board's
/// device MiBs, mapped from [`map::DEVICE_VIRT`]).
pub const fn device(pa: u32) -> u32 {
    let va = LAYOUT.device_va(pa);
    assert!(va != 0, "device register outside the board's device MiBs");
    va
}

/// Instructions in `ticks` of the board's counter under `-icount shift=10`
/// (1,024 virtual ns per instruction).
pub const fn ticks_to_instructions(ticks: u64) -> u64 {
    (ticks * 1_000_000 + COUNTER_TICKS_PER_MEGA_INSN / 2) / COUNTER_TICKS_PER_MEGA_INSN
}

/// Counter ticks of `n` instructions under `-icount shift=10` (used by the
/// measuring build's clock).
#[cfg_attr(not(feature = "measure"), allow(dead_code))]
pub const fn instructions_to_ticks(n: u64) -> u64 {
    n * COUNTER_TICKS_PER_MEGA_INSN / 1_000_000
}
