//! User processes: address spaces through one of three switching
//! strategies, a round-robin scheduler preempted by the SP804 timer,
//! synchronous IPC, system calls and abort handling.
//!
//! * [`clock`]: transit timing (vector to `movs`), per kind;
//! * [`elf`]: the user image's loadable segments;
//! * [`frames`]: physical frames for user memory;
//! * [`platform`]: the `fass` platform over the real CP15, with counters;
//! * [`strategy`]: the three switching modes behind `SwitchStrategy`;
//! * [`timer`]: the preemption timer and the 24 MHz reference counter;
//! * [`kernel`]: processes, traps, memory calls, timing;
//! * [`sched`]: the ready set (bitmap, O(1) round-robin pick);
//! * [`ipc`]: synchronous IPC with sender queues and reply lists (no scans);
//! * [`switch`]: the switch, last step before the return (lean records, full switch);
//! * [`trap`]: the short system-call path (yield and IPC);
//! * [`uaccess`]: checked copies from and to user memory;
//! * [`syscall`]: the system calls;
//! * [`tcm`]: TCM with `spm` (frame table, emulated banks, reverse mappings);
//! * [`tcm_setup`]: where the TCM banks are and the kernel mappings of them, once per boot;
//! * [`tcm_sys`], [`tcm_ops`]: the TCM system calls (exchanges; page operations);
//! * [`scenario`]: the workloads the command line selects, and their reports.

pub mod clock;
pub mod elf;
pub mod frames;
pub mod ipc;
pub mod kernel;
pub mod platform;
pub mod scenario;
pub mod sched;
pub mod strategy;
pub mod switch;
pub mod syscall;
pub mod tcm;
pub mod tcm_ops;
pub mod tcm_setup;
pub mod tcm_sys;
pub mod timer;
pub mod trap;
pub mod uaccess;
