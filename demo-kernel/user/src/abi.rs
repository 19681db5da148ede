//! The system-call ABI shared by the kernel and the user program (the kernel
//! includes this file with `#[path]`, so both sides read the same numbers).
//!
//! A call is `SVC #0` with the number in r7 and up to four arguments in
//! r0-r3; the kernel returns r0 (a value, or a negative [`err`] code) and
//! r1-r3 (extra results of `RECV`/`CALL`). A process starts at the image's
//! entry with its role and seven arguments in r0-r7 ([`role`]).
#![allow(dead_code)]

/// System-call numbers (r7).
pub mod nr {
    /// Give up the CPU; returns 0.
    pub const YIELD: u32 = 0;
    /// End the process with exit code r0; never returns.
    pub const EXIT: u32 = 1;
    /// Send r1-r3 to process r0; blocks until it receives. Returns 0.
    pub const SEND: u32 = 2;
    /// Receive from anyone; blocks. Returns the sender in r0, words in r1-r3.
    pub const RECV: u32 = 3;
    /// Send r1-r3 to process r0 and wait for its reply (r1-r3). Returns 0.
    pub const CALL: u32 = 4;
    /// Reply r1-r3 to process r0, which must be waiting in `CALL` on us. Returns 0.
    pub const REPLY: u32 = 5;
    /// Map private zeroed pages at fixed address r0, length r1, protection r2.
    pub const MAP: u32 = 6;
    /// Unmap pages mapped by `MAP` at r0, length r1.
    pub const UNMAP: u32 = 7;
    /// Map shared segment r0 (read/write); returns 0 and its address in r1.
    pub const SEG_MAP: u32 = 8;
    /// Unmap shared segment r0.
    pub const SEG_UNMAP: u32 = 9;
    /// Copy [`super::STATS_WORDS`] counter words to the buffer r0 (length r1 bytes, word aligned).
    pub const STATS: u32 = 10;
    /// Print r1 bytes at r0 (at most [`super::PRINT_MAX`]).
    pub const PRINT: u32 = 11;
    /// Measurement mark r0 (0 = start, 1 = stop): the kernel reads its counters.
    pub const MARK: u32 = 12;
    /// The caller's process id.
    pub const GETID: u32 = 13;
    /// TCM: move the caller's page at r0 into the TCM of kind r1 (0 = ITCM, 1 = DTCM).
    pub const TCM_EXCHANGE: u32 = 14;
    /// TCM: move the caller's page at r0 back out of TCM.
    pub const TCM_RELEASE: u32 = 15;
    /// TCM: the state of the frame behind the caller's page at r0 (`spm`'s
    /// query): state (0 undefined, 1 resource, 2 user page, 3 kernel page)
    /// | location << 4 (0 RAM, 1 ITCM, 2 DTCM, 3 device).
    pub const TCM_STATE: u32 = 16;
    /// TCM: create a zeroed user page of location r1 (0 RAM, 1 ITCM, 2 DTCM)
    /// from a page resource and map it read/write at r0 (`spm`'s create).
    pub const TCM_CREATE: u32 = 17;
    /// TCM: delete the caller's user page at r0 (owner only): unmapped, its
    /// frame a page resource again (`spm`'s delete).
    pub const TCM_DELETE: u32 = 18;
    /// TCM: set the state of the frame behind the caller's page at r0 to r1
    /// (state codes as in `TCM_STATE`; `spm`'s checked transitions).
    /// Returns the new state code.
    pub const TCM_SET_STATE: u32 = 19;
    /// One past the highest number.
    pub const COUNT: u32 = 20;
}

/// Error codes (returned in r0 as negative numbers).
pub mod err {
    /// No such system call.
    pub const ENOSYS: i32 = -1;
    /// A pointer the caller may not access (or not mapped).
    pub const EFAULT: i32 = -2;
    /// A bad argument (alignment, range, protection, unknown segment).
    pub const EINVAL: i32 = -3;
    /// Out of frames, table memory or per-process page slots.
    pub const ENOMEM: i32 = -4;
    /// No such process (or it exited).
    pub const ESRCH: i32 = -5;
    /// The call would wait for the caller itself.
    pub const EDEADLK: i32 = -6;
    /// Not allowed (e.g. unmapping the image or the stack).
    pub const EPERM: i32 = -7;
    /// Already mapped / busy.
    pub const EBUSY: i32 = -8;
    /// A page-state transition `spm`'s rules allow no one.
    pub const ESTATE: i32 = -9;
}

/// Roles (r0 at start) and their arguments (r1-r7).
pub mod role {
    /// Token ring member: r1 index, r2 ring size, r3 passes, r4 bytes touched, r5 next, r6 previous.
    pub const RING: u32 = 1;
    /// IPC server: r1 clients, r2 rounds per client, r3 first client id (clients are consecutive).
    pub const SERVER: u32 = 2;
    /// IPC client: r1 server id, r2 rounds, r3 index.
    pub const CLIENT: u32 = 3;
    /// Collider: r1 fixed address, r2 value, r3 rounds, r4 second fixed address (0: none).
    pub const COLLIDER: u32 = 4;
    /// Sharer of segment 0: r1 index, r2 sharers, r3 rounds.
    pub const SHARER: u32 = 5;
    /// Faulter: r1 fault kind ([`super::fault`]).
    pub const FAULTER: u32 = 6;
    /// Fuzzer: r1 seed, r2 calls.
    pub const FUZZER: u32 = 7;
    /// Bad-call checker (deterministic list of invalid calls).
    pub const BADCALLS: u32 = 8;
    /// Worker: r1 iterations (computes, yields, checks).
    pub const WORKER: u32 = 9;
    /// TCM user: r1 rounds.
    pub const TCM: u32 = 10;
    /// TCM page operations (create, delete, state changes); no arguments.
    pub const TCMOPS: u32 = 11;
}

/// Faults a [`role::FAULTER`] commits.
pub mod fault {
    /// Load from kernel memory (0xC000_0000).
    pub const KERNEL_READ: u32 = 0;
    /// Load from another process's PID window (PID 1's 0x8000).
    pub const OTHER_WINDOW: u32 = 1;
    /// Load from an unmapped address of its own window.
    pub const UNMAPPED: u32 = 2;
    /// Branch into a data page mapped without user access.
    pub const EXEC_DATA: u32 = 3;
    /// Store into its own read-only text.
    pub const WRITE_TEXT: u32 = 4;
}

/// Page protections of `MAP`.
pub mod prot {
    /// No user access (a guard page: user loads, stores and instruction fetches fault).
    pub const NONE: u32 = 0;
    /// User read-only.
    pub const READ: u32 = 1;
    /// User read/write.
    pub const RW: u32 = 3;
}

/// Words `STATS` copies: switches, syscalls, flushes, TLB invalidations,
/// domain faults resolved, collisions, process id, live processes.
pub const STATS_WORDS: usize = 8;
/// Longest `PRINT`.
pub const PRINT_MAX: u32 = 128;
/// Where each process's stack ends (two pages below).
pub const STACK_TOP: u32 = 0x0020_0000;
/// Stack size.
pub const STACK_SIZE: u32 = 0x2000;
/// Where ring members and others map their private data.
pub const DATA_VA: u32 = 0x0030_0000;
/// Page size.
pub const PAGE: u32 = 4096;
/// Shared segment 0's address.
pub const SEGMENT_VA: u32 = 0x8000_0000;
/// The fixed address colliders map (above 32 MiB: not relocated).
pub const COLLIDE_VA: u32 = 0x0400_0000;
/// The second fixed address colliders map, in the next first-level slot
/// (1 MiB further): touching both makes every other collision flush-free
/// under FASS (see the collider role).
pub const COLLIDE_VA2: u32 = 0x0410_0000;
