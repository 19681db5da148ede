//! `cache-check`: a QEMU 7.2 TCG plugin that runs the guest's real
//! instruction fetches, loads, stores and CP15 operations through
//! `armv5-sim`'s coherence checker (VIVT caches and TLB of an ARM926EJ-S,
//! SA-1110 or PXA255), and counts the kernel's transits from outside.
//!
//! ```text
//! qemu-system-arm ... -plugin file=libcache_check.so,cpu=arm926,ram_base=0,ram_size=0x8000000,out=report.txt -d plugin
//! ```
//!
//! `cargo xtask run --cache-check` builds it and the kernel with the
//! `cache-check` feature, boots, and prints the report.
//!
//! What goes to the model, per executed instruction, in execution order:
//! * a `Fetch` (every instruction; its physical address from the host
//!   address of its bytes, [`ram`]);
//! * a `Load`/`Store` per data access, with the physical address and the
//!   device flag QEMU gives (`qemu_plugin_get_hwaddr`);
//! * accesses to `mmu_armv5::marker`'s window are decoded instead
//!   (`marker::Decoder`) and handed over as markers (CP15 writes and reads
//!   with their operands, and the pseudo events); they never reach the
//!   caches.
//!
//! How QEMU reports them (model on): each translated block calls back once
//! when it starts, each instruction adds one to a counter of instructions
//! started inline (generated code, no call), and each data access calls
//! back. At every callback the counter says how many of the running
//! block's instructions have started (they start in order), so their
//! fetches go to the model then, exactly those, also when an exception
//! ends the block early ([`plugin::Plugin::block_exec`]).
//!
//! An instruction is privileged if it lies at or above `kernel_base`
//! (kernel, vectors, devices), or runs before the kernel first runs there
//! (the boot code at its physical address): the plugin API of 7.2 shows no
//! CPSR, and the demo kernel keeps user code below 32 MiB.
//!
//! Arguments: [`args`]. Transit counting: [`transit`].
//!
//! The report (written to `out` at exit; [`plugin::Plugin::report`]) is
//! text, one record per line: `cache-check report v1`, then `run`,
//! `stats`, `marker_error` (the first few), `count kind=K n=N` per
//! violation kind, `violation kind=K pc= va= mva= pa= mode= space=
//! scenario=` (the first `first`), and with `transits=on`: `windows`,
//! `transit window=W kind=K n= min= median= max= mean= cycles_...`,
//! `window index=W insns= cycles= switches=`.
//!
//! The FFI ([`ffi`], not in test builds) is the only `unsafe` code; the
//! rest is host-tested without QEMU.
#![deny(unsafe_code)]
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(missing_docs)]
#![deny(clippy::undocumented_unsafe_blocks)]

pub mod args;
#[cfg(not(test))]
pub mod ffi;
pub mod insn;
pub mod plugin;
pub mod ram;
pub mod trace;
pub mod transit;
