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
//! * [`kernel`]: processes, their creation and end, the kernel record;
//! * [`mem`]: the memory system calls (private pages, shared segments);
//! * [`sched`]: the ready set (bitmap, O(1) round-robin pick), the
//!   scheduler's decisions, entering and leaving user mode;
//! * [`ipc`]: synchronous IPC with sender queues and reply lists (no scans);
//! * [`switch`]: the switch, last step before the return (lean records, full switch);
//! * [`fastpath`]: the assembly fast path of yield, IPC hand-offs and
//!   timer preemption (`asm/fastpath.s`) and the layout it relies on;
//! * [`trap`]: traps from user mode: the entry points, the short paths
//!   (yield, IPC, timer), the abort fast paths and the general handler;
//! * [`uaccess`]: checked copies from and to user memory;
//! * [`syscall`]: the system calls;
//! * [`tcm`]: TCM with `spm` (frame table, emulated banks, reverse
//!   mappings); `tcm::setup`: where the banks are and the kernel mappings of
//!   them, once per boot; `tcm::syscalls`, `tcm::ops`: the TCM system calls
//!   (exchanges; page operations);
//! * [`vfp`]: the VFP for user processes (detection, lazy or eager switching);
//! * [`scenario`]: the workloads the command line selects, and their reports.

pub mod clock;
pub mod elf;
pub mod fastpath;
pub mod frames;
pub mod ipc;
pub mod kernel;
mod kstate;
pub mod mem;
pub mod omission;
pub mod platform;
pub mod scenario;
pub mod sched;
pub mod strategy;
pub mod switch;
pub mod syscall;
pub mod tcm;
pub mod timer;
pub mod trap;
pub mod uaccess;
pub mod vfp;
