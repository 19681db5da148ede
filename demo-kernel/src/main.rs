//! Demo kernel for `qemu-system-arm -M versatilepb` (ARM926EJ-S), `-M collie`
//! (StrongARM SA-1110) and `-M connex` (XScale PXA255), one board per build
//! ([`board`]).
//!
//! Boots with the MMU off at the physical load address (`asm/boot.s`), maps
//! itself at `0xC000_0000` (far above the 32 MiB FCSE window), enables the
//! MMU with high vectors and enters [`kmain`]. It logs over the PL011 UART
//! with `defmt` and ends the QEMU run through semihosting with an exit status.
//!
//! The semihosting command line (QEMU's `-append`) selects what runs:
//! * `test`: every in-kernel test ([`harness`]), exit status 0 only if all pass;
//! * `test only=NAME`: the one test `NAME` (also the harness's own manual
//!   self-checks, which fail or hang on purpose);
//! * `scenario=ring,ipc,... mode=naive,fcse,fass n=...`: user processes
//!   ([`proc`]) running the named scenarios under each switching mode;
//! * anything else: the demo.
//!
//! On the host this crate compiles to an empty program, so workspace-wide host
//! builds and lints do not need an ARM toolchain.
#![cfg_attr(target_os = "none", no_std, no_main)]
#![cfg_attr(target_os = "none", deny(unsafe_op_in_unsafe_fn))]
#![cfg_attr(target_os = "none", deny(clippy::undocumented_unsafe_blocks))]

#[cfg(target_os = "none")]
#[path = "../user/src/abi.rs"]
mod abi;
#[cfg(target_os = "none")]
mod board;
#[cfg(target_os = "none")]
mod boot;
#[cfg(target_os = "none")]
mod bootinfo;
#[cfg(target_os = "none")]
mod cmdline;
#[cfg(target_os = "none")]
mod cp15;
#[cfg(target_os = "none")]
mod critical;
#[cfg(target_os = "none")]
mod demo;
#[cfg(target_os = "none")]
mod exit;
#[cfg(target_os = "none")]
mod global;
#[cfg(target_os = "none")]
#[macro_use]
mod harness;
#[cfg(target_os = "none")]
mod difftest;
#[cfg(target_os = "none")]
mod logger;
#[cfg(target_os = "none")]
mod marker;
#[cfg(target_os = "none")]
mod mmu;
#[cfg(target_os = "none")]
mod probe;
#[cfg(target_os = "none")]
mod proc;
#[cfg(target_os = "none")]
mod tests;
#[cfg(target_os = "none")]
mod uart;
#[cfg(target_os = "none")]
mod vectors;

/// Rust entry point, called by `_start_high` (`asm/boot.s`) in SVC mode with
/// the MMU on, stacks set and `.bss` zeroed.
#[cfg(target_os = "none")]
#[no_mangle]
pub extern "C" fn kmain() -> ! {
    board::uart::init();
    defmt::info!("board: {=str}", board::NAME);
    defmt::info!(
        "demo-kernel: MMU on, running at {=u32:#010x}",
        kmain as *const () as u32
    );
    // SAFETY: `kmain` runs in SVC mode on the only core with interrupts
    // masked, and this is the kernel's one owner of CP15: everything below
    // borrows it (or, for a scenario's kernel, leases it), so no two
    // handles change CP15 state at once. (The handlers entered from
    // assembly that cannot be lent it use `proc::kernel::trap_cp15`, under
    // the same argument; the fatal exception report reads its own.)
    let mut cp15 = unsafe { mmu_armv5::regs::HwCp15::new() };
    #[cfg(feature = "cache-check")]
    marker::boot_report(&cp15);
    bootinfo::log(&cp15);
    if let Err(e) = mmu::init(&mut cp15) {
        defmt::error!("cannot build the kernel page table: {}", e);
        exit::exit(exit::EXIT_SETUP);
    }
    let cmd = match cmdline::read() {
        Ok(cmd) => cmd,
        Err(e) => {
            defmt::error!("cannot read the semihosting command line: {}", e);
            exit::exit(exit::EXIT_USAGE);
        }
    };
    omit(cmd.omit);
    match cmd.mode {
        cmdline::Mode::Test => {
            if let Some(s) = cmd.seed {
                match cmdline::parse_u64(s) {
                    Some(seed) => difftest::set_seed(seed),
                    None => {
                        defmt::error!("seed={=str}: not a decimal or 0x hex number", s);
                        exit::exit(exit::EXIT_USAGE);
                    }
                }
            }
            let ok = harness::run(&mut cp15, cmd.only);
            exit::exit(if ok {
                exit::EXIT_OK
            } else {
                exit::EXIT_TEST_FAILED
            });
        }
        cmdline::Mode::Scenario => {
            let ok = proc::scenario::run(&mut cp15, &cmd.params);
            defmt::info!("scenarios done");
            exit::exit(if ok {
                exit::EXIT_OK
            } else {
                exit::EXIT_TEST_FAILED
            });
        }
        cmdline::Mode::Demo => {
            demo::run(&mut cp15);
            exit::exit(exit::EXIT_OK);
        }
    }
}

/// Applies `omit=NAME` (a cache-check build's injected omission, reported
/// to the observer at boot, "none" included); exits with the usage status
/// for an unknown name, or for any `omit=` in a kernel built without the
/// feature `cache-check` (a shipped kernel has no such switch).
#[cfg(target_os = "none")]
fn omit(name: Option<&str>) {
    let o = match name.map(marker::Omit::parse) {
        None => marker::Omit::None,
        Some(Some(o)) => o,
        Some(None) => {
            defmt::error!("omit={=str}: no such omission", name.unwrap_or(""));
            exit::exit(exit::EXIT_USAGE);
        }
    };
    #[cfg(feature = "cache-check")]
    {
        if o != marker::Omit::None {
            defmt::warn!("cache check: leaving out {=str} on purpose", o.name());
        }
        marker::set_omit(o);
    }
    #[cfg(not(feature = "cache-check"))]
    if o != marker::Omit::None {
        defmt::error!("omit= needs a kernel built with the feature cache-check");
        exit::exit(exit::EXIT_USAGE);
    }
}

/// On the host the kernel is an empty program (see the crate docs).
#[cfg(not(target_os = "none"))]
fn main() {}
