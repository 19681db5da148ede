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
    /// `REPLY` r1-r3 to process r0, then `RECV` (the server's call: a
    /// round trip is two transits); returns like `RECV`, or the `REPLY`
    /// error (nothing received).
    pub const REPLY_WAIT: u32 = 20;
    /// `SEND` r1-r3 to process r0, then `RECV`, in one call (L4's
    /// send-and-receive; a token ring's pass, lmbench `lat_ctx`): if r0
    /// waits in `RECV` it gets the message and runs next, the caller left
    /// waiting in `RECV` (one transit, a one-way IPC); else the caller is
    /// queued on r0 as a sender and, once r0 has received, waits in `RECV`.
    /// Returns like `RECV` (sender in r0, words in r1-r3), or the `SEND`
    /// error (`ESRCH`: no such process; `EDEADLK`: r0 is the caller) with
    /// nothing sent or received.
    pub const SEND_RECV: u32 = 21;
    /// Long IPC: send the r2 bytes at r1 (at most [`super::LONG_MAX`]) to
    /// process r0, which receives them into the buffer it announced in
    /// `LRECV`; blocks until it has. Returns 0, or `EFAULT` (a byte of the
    /// buffer not readable), `EMSGSIZE` (longer than `LONG_MAX`, than the
    /// receiver's buffer, or any bytes to a receiver in plain `RECV`),
    /// `ESRCH`, `EDEADLK`. A receiver in plain `RECV` gets a message of 0
    /// bytes as r1-r3 = 0.
    pub const LSEND: u32 = 22;
    /// Long IPC: receive from anyone into the r1 bytes at r0 (at most
    /// [`super::LONG_MAX`]); blocks. Returns the sender in r0 and the bytes
    /// received in r1; a plain `SEND`'s message arrives as 0 bytes with its
    /// first two words in r2, r3. `EFAULT`: a byte of the buffer not
    /// writable; `EMSGSIZE`: r1 over `LONG_MAX`.
    pub const LRECV: u32 = 23;
    /// `LSEND` r1, r2 to r0, then `LRECV` into r1 with capacity r3, in one
    /// call (as `SEND_RECV`): if r0 waits in `LRECV` it gets the bytes and
    /// runs next. Returns like `LRECV`, or the `LSEND` error (nothing sent
    /// or received).
    pub const LSEND_RECV: u32 = 24;
    /// Lap stamp for the plain-copy benchmark: r0 = 0 starts a lap, r0 = 1
    /// ends one that copied, r0 = 2 ends an empty one (the kernel sums the
    /// counter between the system calls' entries, between `MARK`s only).
    pub const LAP: u32 = 25;
    /// Loads one page of code: r0 the page's address in the code window
    /// (`CODE_VA`, `CODE_PAGES` pages), r1 where the 4096 bytes are
    /// (word aligned, readable by the caller, outside the window). A page
    /// of the window not loaded yet is mapped (read-only for the process);
    /// one loaded before is replaced in place, under the same address and
    /// frame, so its old instructions may still be in the I-cache: the
    /// kernel cleans the new code to RAM and invalidates the I-cache
    /// before returning. `EINVAL` for an address outside the window or a
    /// source in it, `EFAULT` for a source the caller cannot read,
    /// `ENOMEM` if no frame or page record is left, `EBUSY` for a page in
    /// TCM.
    pub const LOAD_CODE: u32 = 26;
    /// One past the highest number.
    pub const COUNT: u32 = 27;
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
    /// A long message longer than [`super::LONG_MAX`] or than the
    /// receiver's buffer.
    pub const EMSGSIZE: i32 = -10;
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
    /// Hostile scenario's victim: keeps secret pages and serves the
    /// requests of [`super::victim`]; r1 `DONE` messages to wait for.
    /// Exits with the number of its secret words that changed.
    pub const VICTIM: u32 = 12;
    /// Hostile scenario's attacker: r1 attack ([`super::attack`]), r2 the
    /// victim's id, r3 rounds, r4 the process it watches (`WATCH` only).
    /// Exits with [`super::attack::result`] bits (0: nothing reached).
    pub const ATTACKER: u32 = 13;
    /// Yield benchmark: r1 its index, r2 rounds, r3 bytes touched per
    /// round; each round touches its bytes and yields (`MARK`s around all
    /// but two warm-up rounds).
    pub const YIELDER: u32 = 14;
    /// Preemption benchmark: r1 its index, r2 rounds, r3 bytes touched per
    /// round; each round touches its bytes and spins about a timer slice
    /// (10,000 instructions at the default slice under `-icount 10`)
    /// without a system call (`MARK`s around all but two warm-up rounds).
    pub const SPINNER: u32 = 15;
    /// `SEND_RECV` checker, r1 its index (0, 1, 2: three consecutive
    /// processes): the hand-off, the queued send and its receive of a
    /// queued sender, the refusals. Exits with the checks that failed.
    pub const SENDRECV: u32 = 16;
    /// Long IPC ping-pong: r1 its index (0 sends first, 1 answers), r2 the
    /// peer's id, r3 rounds per size, r4 the size in bytes (0: 64, 1024 and
    /// 4096 in turn), r5 1 to measure (`MARK`s around all but the first
    /// round, then the plain-copy laps). Every message's content is checked
    /// on arrival. Exits with the checks that failed.
    pub const LONGIPC: u32 = 17;
    /// Long IPC's refusals: r1 its index (0 the prober, 1 its receiver,
    /// 2 a receiver that exits while the prober waits on it), r2 the
    /// receiver's id, r3 the exiting receiver's id. Exits with the checks
    /// that failed.
    pub const LONGBAD: u32 = 18;
    /// VFP isolation checker: r1 its index, r2 rounds, r3 [`super::vfp`]
    /// flags. Each round reads d0-d15 and FPSCR, which must hold exactly
    /// what it wrote the round before (zeros before its first write), then
    /// writes its own pattern ([`super::vfp::word`]) and yields or spins
    /// (preempted). Exits with `mismatches | foreign << 16`, foreign: words
    /// seen that another checker wrote (0: nothing crossed).
    pub const VFP_CHECK: u32 = 19;
    /// Dies while owning the VFP: r1 its index, r2 non-zero: first writes
    /// its pattern (a secret) into d0-d15 and FPSCR; then runs an
    /// undefined (non-VFP) instruction and is killed.
    pub const VFP_DIE: u32 = 20;
    /// VFP yield benchmark: r1 its index, r2 rounds, r3 non-zero: computes
    /// with the VFP (`vadd.f64`, `vmul.f64`) each round and checks the
    /// results across its yields (index 0 sets `MARK 0` after two warm-up
    /// rounds, the first to finish `MARK 1`). Exits with the checks that failed.
    pub const VFP_YIELD: u32 = 21;
    /// Maps fresh pages and checks they read as zero (`scenario=reuse`).
    pub const FRESH: u32 = 22;
    /// Loads code at `CODE_VA` r1 times, each a different routine over
    /// the one before (`LOAD_CODE`), calls it and checks what it returns
    /// (`scenario=codeload`).
    pub const CODELOAD: u32 = 23;
    /// Maps r2 fresh pages at r1, r1 + 1 MiB, ... (one first-level slot
    /// each), checks that the first r3 words of each read as zero, writes
    /// a pattern from r4 there and checks it after each of r5 yields
    /// (`scenario=recycle`).
    pub const RECYCLE: u32 = 24;
}

/// The VFP roles' flags and patterns ([`role::VFP_CHECK`]).
pub mod vfp {
    /// Spin (preempted by the timer) instead of yielding each round.
    pub const SPIN: u32 = 1;
    /// Yield eight times before the first VFP instruction.
    pub const WAIT: u32 = 2;
    /// The high halfword of every word a checker writes to d0-d15.
    pub const TAG: u32 = 0x5EC7_0000;
    /// Words of the state: d0-d15 (low word first), then FPSCR.
    pub const WORDS: usize = 33;

    /// Word `i` (< 32) of d0-d15 that checker `who` writes in round `k`:
    /// [`TAG`], `who` in bits 15:12, `i` in 11:7, `k` in 6:0.
    pub const fn word(who: u32, k: u32, i: u32) -> u32 {
        TAG | (who & 0xF) << 12 | (i & 0x1F) << 7 | (k & 0x7F)
    }

    /// The FPSCR value checker `who` writes in round `k`: flags NZCV, DN,
    /// FZ, the rounding mode and the cumulative exception flags, all
    /// readable back (vector length and stride 0, trap enables 0).
    pub const fn fpscr(who: u32, k: u32) -> u32 {
        ((who + 1) & 0xF) << 28
            | (k & 1) << 25
            | (who & 1) << 24
            | ((k >> 1) & 3) << 22
            | (k.wrapping_add(who) & 0x1F)
    }
}

/// Requests a hostile scenario's victim serves (word 0 of a `CALL`).
pub mod victim {
    /// Map one more page (the lowest free frame: the one an attacker just
    /// gave back) and fill it with the secret.
    pub const ALLOC: u32 = 1;
    /// Exchange the first secret page into DTCM, or back out of it.
    pub const TCM: u32 = 2;
    /// One attacker is done (or, sent by a watcher, ended).
    pub const DONE: u32 = 3;
    /// Bits 31..16 of every secret word: an attacker that reads a word
    /// with them has read the victim's memory.
    pub const SECRET_TAG: u32 = 0x5EC2;
}

/// The attacks of a hostile scenario's attacker ([`super::role::ATTACKER`]).
/// "Mid-exchange" is what a kernel that replays a preempted `TCM_EXCHANGE`
/// by rewinding the pc by 4 allows in Thumb state (the SVC is 2 bytes
/// there): the caller resumes 2 bytes early, at its own code.
pub mod attack {
    /// Thumb: mid-exchange, unmap the page being exchanged, let the victim
    /// map a page (it gets the freed frame), re-enter the exchange.
    pub const THUMB_UNMAP: u32 = 0;
    /// Thumb: as `THUMB_UNMAP`, then exit mid-exchange (the kernel ends it).
    pub const THUMB_EXIT: u32 = 1;
    /// Thumb: mid-exchange, unmap the page and map it again (re-map),
    /// let the victim map a page, re-enter.
    pub const THUMB_REMAP: u32 = 2;
    /// Thumb: mid-exchange, delete and re-state the page, map over the TCM
    /// resource slots, start a second exchange and a release, then unmap.
    pub const THUMB_OPS: u32 = 3;
    /// Thumb: mid-exchange, store into the page being exchanged (killed
    /// by the write protection's permission fault).
    pub const THUMB_FAULT: u32 = 4;
    /// ARM: exchanges preempted in ARM state; in between, unmap the page
    /// in TCM and map over the resource slots (both must be refused).
    pub const ARM_PREEMPT: u32 = 5;
    /// Unmap a page in TCM, let the victim exchange its secret page into
    /// the bank, map the page again and release it.
    pub const UNMAP_IN_TCM: u32 = 6;
    /// Waits until process r4 ended, then sends `DONE` for it.
    pub const WATCH: u32 = 7;

    /// Exit-code bits of an attacker.
    pub mod result {
        /// Bits 15..0: secret words of the victim it read (saturating).
        pub const LEAKED: u32 = 0xFFFF;
        /// It ran its own code while its exchange was in progress.
        pub const ESCAPED: u32 = 1 << 16;
        /// A call that must be refused was accepted.
        pub const ACCEPTED: u32 = 1 << 17;
        /// Its own data changed under it.
        pub const OWN_DATA: u32 = 1 << 18;
        /// A TCM call it relies on failed.
        pub const TCM_FAILED: u32 = 1 << 19;
    }
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
/// Longest long-IPC message ([`nr::LSEND`]) and receive buffer.
pub const LONG_MAX: u32 = 4096;
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
/// Where a hostile scenario's victim maps its secret pages.
pub const VICTIM_VA: u32 = 0x0060_0000;
/// Where a hostile scenario's attacker maps the page it exchanges.
pub const ATTACK_VA: u32 = 0x0050_0000;
/// The TCM resource slots of a process (kernel-only, `tcm::USER_RES_VA`):
/// `MAP` there is refused.
pub const TCM_RES_VA: u32 = 0x01F0_0000;
/// The code window of `LOAD_CODE`.
pub const CODE_VA: u32 = 0x0070_0000;
/// Pages in the code window.
pub const CODE_PAGES: u32 = 4;
/// `scenario=recycle`: the fixed page two processes map in turn (in the
/// FCSE window of PID 32, which the scenario's 16 spaces do not reach);
/// the others map theirs in the MiBs after it.
pub const RECYCLE_VA: u32 = 0x4000_0000;
/// The second fixed address colliders map, in the next first-level slot
/// (1 MiB further): touching both makes every other collision flush-free
/// under FASS (see the collider role).
pub const COLLIDE_VA2: u32 = 0x0410_0000;
