//! The kernel record and its processes: their states, creation, images,
//! pages and end.
//!
//! All kernel state is one [`Kernel`] value in a static, reached only from
//! thread context before and after a scenario and from the trap entry
//! points ([`super::trap`]) while one runs; the kernel never takes
//! interrupts itself (IRQs are masked in every privileged mode), so there is
//! no concurrent access.
//!
//! Each process's user registers live in its own [`TrapFrame`]
//! ([`Proc::ctx`]): the trap stubs (`asm/trap.s`) save them straight into
//! the running process's frame and return to user mode from whichever frame
//! the trap entry hands back, so a context switch copies no registers. The
//! other concepts have their own modules: traps ([`super::trap`]), the
//! scheduler ([`super::sched`]), the switch ([`super::switch`]), IPC
//! ([`super::ipc`]), system calls ([`super::syscall`], [`super::mem`]),
//! timing ([`super::clock`]).

use crate::global::Global;
use fass::{SegmentId, SpaceId, SwitchStrategy};
use mmu_armv5::descriptor::{AccessPermission, CachePolicy};
use mmu_armv5::regs::{HwCp15, SwitchRegs};
use mmu_armv5::size::{Frame, PageRange, Size4KiB};
use mmu_armv5::{PhysAddr, VirtAddr};

use super::clock::{self, FaultClock, SwitchClock};
use super::frames::Frames;
use super::ipc::Links;
use super::platform::{self, with_sys, HwCounts};
use super::sched::ReadySet;
use super::strategy::{dispatch, Strategy, SwitchMode, MAX_PROCS, SEGMENTS};
use super::tcm::{self, RES_SLOTS};
use super::{elf, timer};
use crate::abi;

/// The user program image, built by `cargo xtask` before the kernel.
pub static USER_IMAGE: &[u8] = include_bytes!(env!("DEMO_USER_ELF"));

/// User registers as the trap stubs (`asm/trap.s`) save them.
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct TrapFrame {
    /// r0-r12.
    pub r: [u32; 13],
    /// User sp.
    pub sp: u32,
    /// User lr.
    pub lr: u32,
    /// Where the process resumes.
    pub pc: u32,
    /// Its CPSR.
    pub cpsr: u32,
}

/// User mode, IRQs enabled, FIQs masked.
const USER_CPSR: u32 = 0x50;
/// Kernel-owned pages (image and stack) per process.
pub const KERNEL_PAGES: usize = 16;
/// Pages a process may map with `MAP`.
pub const USER_PAGES: usize = 16;

/// Why an abort or trap ended a process.
#[derive(Clone, Copy, PartialEq, Eq, defmt::Format)]
pub enum TrapKind {
    /// Data abort.
    Data,
    /// Prefetch abort.
    Prefetch,
    /// Undefined instruction.
    Undefined,
}

impl TrapKind {
    /// Report name.
    pub fn name(self) -> &'static str {
        match self {
            TrapKind::Data => "data",
            TrapKind::Prefetch => "prefetch",
            TrapKind::Undefined => "undefined",
        }
    }
}

/// How a process ended.
#[derive(Clone, Copy, PartialEq, Eq, defmt::Format)]
pub enum Exit {
    /// `EXIT` with this code.
    Code(u32),
    /// Killed by a fault the strategy did not resolve.
    Killed {
        /// Which trap.
        trap: TrapKind,
        /// The fault status (DFSR/IFSR; 0 for undefined instructions).
        fsr: u32,
        /// The fault address (FAR, or the instruction's address).
        addr: u32,
    },
    /// Blocked forever: no other process could ever wake it.
    Deadlock,
    /// Its address space could not be switched to.
    SwitchFailed,
}

/// Scheduling state.
///
/// `repr(u8)`: the tag is the first byte, each variant's fields follow
/// it as in a `repr(C)` struct (the assembly fast path, `asm/fastpath.s`,
/// reads and writes the tag and `Reply::from`; `super::fastpath` checks
/// the layout).
#[repr(u8)]
#[derive(Clone, Copy, PartialEq, Eq, defmt::Format)]
pub enum State {
    /// Slot unused.
    Free,
    /// Runnable (or running).
    Ready,
    /// Waiting in `RECV`.
    Recv,
    /// Waiting in `SEND` until `dest` receives.
    Send {
        /// Destination.
        dest: u16,
        /// Message.
        msg: [u32; 3],
    },
    /// Waiting in `CALL` until `dest` receives.
    Call {
        /// Destination.
        dest: u16,
        /// Message.
        msg: [u32; 3],
    },
    /// Waiting in `SEND_RECV` until `dest` receives; then in `RECV`.
    SendRecv {
        /// Destination.
        dest: u16,
        /// Message.
        msg: [u32; 3],
    },
    /// Waiting for `from`'s reply.
    Reply {
        /// Who must reply.
        from: u16,
    },
    /// Blocked in a TCM call whose exchange is in progress
    /// ([`Kernel::pending`]): scheduled like a ready process, but the
    /// scheduler continues the exchange ([`Kernel::tcm_continue`]) and
    /// never returns it to user mode before the call is over.
    InTcm,
    /// Ended (see [`Proc::exit`]).
    Dead,
    /// Waiting in `LSEND`/`LSEND_RECV` until `dest` receives
    /// ([`super::ipc`]'s long IPC): `msg` is the buffer, its length and the
    /// capacity to receive into afterwards (`NO_RECV`: none, `LSEND`).
    LongSend {
        /// Destination.
        dest: u16,
        /// Buffer, length, receive capacity.
        msg: [u32; 3],
    },
    /// Waiting in `LRECV` (or the receive of `LSEND_RECV`) with a buffer.
    LongRecv {
        /// The buffer.
        buf: u32,
        /// Its capacity in bytes.
        cap: u32,
    },
}

impl State {
    /// Whether the scheduler may pick a process in this state: ready, or
    /// blocked in a TCM call (whose exchange it then continues).
    #[inline(always)]
    pub fn runnable(self) -> bool {
        matches!(self, State::Ready | State::InTcm)
    }
}

/// The one 4 KiB page at `va`, as `fass` maps and unmaps ranges (a
/// misaligned `va` is refused as `FassError::Addr`).
pub fn one_page(va: u32) -> Result<PageRange<Size4KiB, VirtAddr>, fass::FassError> {
    Ok(PageRange::from_bytes(VirtAddr::new(va), 4096)?)
}

/// The 4 KiB frame at `pa` (a misaligned `pa` is refused as
/// `FassError::Addr`).
pub fn frame_at(pa: u32) -> Result<Frame<Size4KiB>, fass::FassError> {
    Ok(Frame::from_start(PhysAddr::new(pa))?)
}

/// A page a process owns: virtual address and frame.
#[derive(Clone, Copy)]
pub struct Page {
    /// User virtual address.
    pub va: u32,
    /// Physical frame.
    pub pa: u32,
    /// Holds code (from the image's non-writable segment).
    pub exec: bool,
}

/// One process.
///
/// `repr(C)`: the frame first (a process's frame pointer is its record's
/// address), its precomputed switch registers right after.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct Proc {
    /// Saved user registers: the trap stubs save and restore them here.
    pub ctx: TrapFrame,
    /// Its precomputed switch (every strategy).
    pub fast: Fast,
    /// Scheduling state.
    pub state: State,
    /// Its role ([`abi::role`]).
    pub role: u32,
    /// Image and stack pages (unmappable by the process).
    pub kernel_pages: [Option<Page>; KERNEL_PAGES],
    /// Pages mapped with `MAP`.
    pub user_pages: [Option<Page>; USER_PAGES],
    /// TCM resource pages, slot `i` at `tcm::USER_RES_VA + i * 4096`
    /// (kernel-only access): the frame a page exchanged into TCM left.
    pub res_pages: [Option<Page>; RES_SLOTS],
    /// For each resource slot, the page that was exchanged into TCM.
    pub tcm_targets: [Option<u32>; RES_SLOTS],
    /// Segments mapped (bit per segment id).
    pub segs: u8,
    /// How it ended.
    pub exit: Option<Exit>,
    /// System calls made.
    pub syscalls: u32,
    /// System calls that returned an error.
    pub errors: u32,
    /// IPC queue and reply-list links ([`super::ipc`]).
    pub ipc: Links,
}

impl Proc {
    const FREE: Proc = Proc {
        state: State::Free,
        ctx: TrapFrame {
            r: [0; 13],
            sp: 0,
            lr: 0,
            pc: 0,
            cpsr: 0,
        },
        role: 0,
        kernel_pages: [None; KERNEL_PAGES],
        user_pages: [None; USER_PAGES],
        res_pages: [None; RES_SLOTS],
        tcm_targets: [None; RES_SLOTS],
        segs: 0,
        exit: None,
        syscalls: 0,
        errors: 0,
        fast: Fast::NONE,
        ipc: Links::NONE,
    };

    /// Whether the process exists and has not ended.
    pub fn alive(&self) -> bool {
        !matches!(self.state, State::Free | State::Dead)
    }
}

/// Kernel event counters of one scenario.
///
/// `repr(C)`: the assembly fast path (`asm/fastpath.s`) adds one to the
/// first three with one load and one store of three words.
#[repr(C)]
#[derive(Clone, Copy, Default, defmt::Format)]
pub struct Counters {
    /// Context switches (between two different processes).
    pub switches: u32,
    /// Of which lean switches: a process's precomputed switch ([`Fast`])
    /// applied by the kernel itself, its register writes and TLB
    /// invalidation not through the counting platform (added in
    /// [`Kernel::mark_now`]); FASS: DACR and FCSEIDR; FCSE-only: TTBR, TLB
    /// invalidation, FCSEIDR; naive: the cache flush (through the counting
    /// platform), TTBR, TLB invalidation.
    pub lean_switches: u32,
    /// System calls.
    pub syscalls: u32,
    /// Timer interrupts.
    pub irqs: u32,
    /// Preemptions that switched.
    pub preemptions: u32,
    /// Aborts the strategy resolved on a domain fault (the general path's
    /// here; [`Kernel::counters`] adds the fast path's).
    pub domain_faults: u32,
    /// Of which collisions resolved with a TLB invalidation only (the
    /// slot's previous owner was clean: no cache flush).
    pub flush_free_collisions: u32,
    /// Aborts the strategy resolved on a translation fault (lazy CPD fill;
    /// the general path's here, [`Kernel::counters`] adds the fast path's).
    pub fills: u32,
    /// Aborts taken inside checked user copies and resolved.
    pub copy_faults: u32,
    /// Processes killed.
    pub kills: u32,
    /// IPC round trips completed (replies delivered).
    pub round_trips: u32,
    /// IPC messages delivered.
    pub messages: u32,
}

/// A measurement mark: everything counted, read at one instant.
#[derive(Clone, Copy, defmt::Format)]
pub struct Mark {
    /// The 24 MHz counter.
    pub ticks: u32,
    /// CP15 maintenance so far.
    pub hw: HwCounts,
    /// The strategy's counters.
    pub stats: fass::Stats,
    /// The kernel's counters.
    pub counters: Counters,
    /// Domains held by shared segments (FASS; 0 otherwise).
    pub seg_domains: u32,
}

/// A shared segment the scenario defined.
#[derive(Clone, Copy)]
pub struct SegmentInfo {
    /// Its address in every sharer.
    pub va: u32,
}

/// The kernel while a scenario runs.
///
/// `repr(C)` with the fields of the lean switch path ([`Kernel::finish`])
/// first, so that they are reached with immediate offsets.
#[repr(C)]
pub struct Kernel {
    /// The running process.
    pub current: Option<usize>,
    /// The runnable processes ([`State::runnable`]), kept by
    /// [`Kernel::set_state`] (8-byte aligned: the assembly fast path loads
    /// and stores it as one doubleword).
    pub(super) ready: ReadySet,
    /// The generation precomputed switch registers must carry
    /// ([`Fast::gen`]): odd, from the strategy's
    /// [`generation`](fass::SwitchStrategy::generation) and
    /// [`Kernel::epoch`], refreshed after every strategy call (0, never a
    /// generation, marks a process without precomputed registers).
    pub(super) gen: u32,
    /// The system-call dispatch table of the assembly fast path
    /// (`asm/fastpath.s`): this mode's handlers, which switch with the
    /// processes' records ([`Fast`]).
    pub(super) svc_table: *const u32,
    /// Switch-path timing.
    pub clock: SwitchClock,
    /// Counters.
    pub counters: Counters,
    /// Domain-fault resolution timing (near the counters: the fast abort
    /// path updates both).
    pub fault_clock: FaultClock,
    /// The process table.
    pub procs: [Proc; MAX_PROCS],
    /// Its strategy.
    pub strategy: Strategy,
    /// Marks set by `MARK 0` and `MARK 1` (the first of each is kept).
    pub marks: [Option<Mark>; 2],
    /// Defined segments.
    pub segments: [Option<SegmentInfo>; SEGMENTS],
    /// Callee-saved registers of the thread that entered user mode.
    pub(super) kctx: [u32; 10],
    /// Bumped by every kernel change that can alter a FASS process's DACR
    /// (segments, spawn, exit); part of [`Kernel::gen`].
    epoch: u32,
    /// [`Counters::lean_switches`] the per-table strategy has been told of
    /// ([`Kernel::sync`]).
    settled: u32,
    /// TCM: an exchange preempted between steps.
    pub pending: Option<Pending>,
    /// TCM: timing of each completed user exchange (in order).
    pub xtimes: [Option<(u32, tcm::XTiming)>; 8],
    /// TCM: user exchanges preempted between two steps, by the caller's
    /// instruction set ([ARM, Thumb]).
    pub tcm_preempted: [u32; 2],
    /// The VFP's owner, policy and the processes' saved VFP states
    /// ([`super::vfp`]); after the fields the fast paths reach.
    pub vfp: super::vfp::Vfp,
    /// The CP15 handle the kernel runs on (its strategy calls through
    /// [`Kernel::sys`], its scheduler, traps and TCM calls directly or
    /// through [`crate::cp15::lend`]), standing in for `kmain`'s owner
    /// while the kernel is installed ([`Lease`]). Zero-sized: last, it
    /// moves no other field.
    pub(super) cp15: HwCp15,
}

/// A process's precomputed switch, valid while `gen` equals the kernel's
/// current generation ([`Kernel::gen`]).
///
/// FASS: the DACR and FCSEIDR `fass` wrote on the process's last full
/// switch (no domain taken back or released, no full flush, no segment or
/// space change since). Naive and FCSE-only: the TTBR and FCSEIDR of the
/// strategy's own precomputed switch ([`fass::LeanSwitch`], made on the
/// last full switch, valid while the strategy's generation stays), applied
/// with its maintenance ([`fass::LeanSwitch::maintenance`]) by the kernel
/// and settled with the strategy later ([`fass::AppliedLean`]).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct Fast {
    /// Generation they were computed in (0: none, never valid).
    pub gen: u32,
    /// The DACR (FASS; `Dacr::NONE` otherwise) and FCSEIDR (`pid << 25`;
    /// naive: 0, never written) values.
    pub regs: SwitchRegs,
    /// The TTBR value (per-table strategies; 0 under FASS).
    pub ttbr: u32,
}

impl Fast {
    /// No precomputed registers.
    pub const NONE: Fast = Fast {
        gen: 0,
        regs: SwitchRegs::NONE,
        ttbr: 0,
    };

    /// A FASS record of generation `gen`: `regs`.
    pub const fn fass(gen: u32, regs: SwitchRegs) -> Fast {
        Fast { gen, regs, ttbr: 0 }
    }

    /// A per-table record of generation `gen` from the strategy's own
    /// `rec` (`None` for a FASS record).
    pub fn table(gen: u32, rec: &fass::LeanSwitch) -> Option<Fast> {
        let ttbr = rec.ttbr()?;
        let pid = rec.fcse_pid().unwrap_or(mmu_armv5::FcsePid::ZERO);
        Some(Fast {
            gen,
            regs: SwitchRegs::new(mmu_armv5::regs::Dacr::NONE, pid),
            ttbr: ttbr.bits(),
        })
    }
}

/// A TCM exchange of process `proc` interrupted between two steps.
pub struct Pending {
    /// Whose.
    pub proc: usize,
    /// The system call (`TCM_EXCHANGE` or `TCM_RELEASE`) and its arguments.
    pub call: [u32; 3],
    /// The resource slot.
    pub slot: usize,
    /// The exchange.
    pub x: spm::Exchange,
    /// Its timing so far.
    pub t: tcm::XTiming,
}

/// The installed kernel: the value at the static's own address (the
/// assembly fast path, `asm/fastpath.s`, reaches it through the symbol
/// with no pointer to load), valid while `live`.
#[repr(C)]
pub(super) struct KernelSlot {
    /// The kernel, initialised while `live`.
    pub(super) k: core::mem::MaybeUninit<Kernel>,
    /// Whether `k` holds a kernel.
    live: bool,
}

pub(super) static KERNEL: Global<KernelSlot> = Global::new(KernelSlot {
    k: core::mem::MaybeUninit::uninit(),
    live: false,
});
/// The frame allocator's state, only reached through [`frames`].
static FRAMES: Global<Frames> = Global::new(Frames::new());

/// The frame allocator, reached through [`frames`]: each method takes the
/// cell for its own call only, so no reference to it outlives a call.
#[derive(Clone, Copy)]
pub struct FrameAllocator(());

impl FrameAllocator {
    /// Takes one frame ([`Frames::alloc`]: zeroed through the kernel's
    /// linear map) and cleans those zeros out of the D-cache
    /// ([`clean_kernel_alias`]), so the new owner, reading the frame
    /// through its own alias of a VIVT cache, sees zeros and not the
    /// previous owner's data. Only while a kernel is installed (its
    /// system calls and spawns: [`trap_cp15`]'s contract).
    pub fn alloc(self) -> Option<u32> {
        // SAFETY: no reference to the allocator outlives one of these
        // calls, none of which re-enters another (single core, no
        // re-entry: module docs).
        let pa = unsafe { FRAMES.with(Frames::alloc) }?;
        if !crate::marker::omitted(crate::marker::Omit::FrameClean) {
            clean_kernel_alias(pa);
        }
        Some(pa)
    }

    /// Gives RAM frame `pa` back ([`Frames::release`]).
    pub fn release(self, pa: u32) -> bool {
        // SAFETY: as in `alloc`.
        unsafe { FRAMES.with(|f| f.release(pa)) }
    }

    /// Frames free ([`Frames::free`]).
    pub fn free(self) -> usize {
        // SAFETY: as in `alloc`.
        unsafe { FRAMES.with(|f| f.free()) }
    }
}

/// Cleans the D-cache lines of frame `pa`'s kernel alias (its linear
/// map) and drains the write buffer: what the kernel wrote there reaches
/// RAM before another alias of the frame (a process's) can read it.
/// By MVA range (`RangeMaintenance`: one unrolled loop on hardware).
///
/// Only while a kernel is installed ([`trap_cp15`]'s contract).
pub fn clean_kernel_alias(pa: u32) {
    use mmu_armv5::maint::{CacheMaintenance, LineRange, RangeMaintenance};
    let va = mmu_armv5::ModifiedVirtAddr::new(crate::mmu::phys_to_virt(pa & !0xFFF));
    // SAFETY: called for an installed kernel (the contract above), from
    // code that does not use the kernel's own handle meanwhile; dropped
    // on return.
    let mut m = platform::counting_on(unsafe { trap_cp15() });
    // A page-aligned 4 KiB range in the linear map: whole lines, below
    // 4 GiB, so `new` cannot refuse it.
    if let Ok(r) = LineRange::new(va, 4096) {
        m.clean_dcache_lines(r);
    }
    m.drain_write_buffer();
    // SAFETY: single core, not re-entered; a counter only.
    unsafe { ALIAS_CLEANS.with(|n| *n = n.wrapping_add(1)) };
}

static ALIAS_CLEANS: Global<u32> = Global::new(0);

/// Frames cleaned by [`clean_kernel_alias`] since boot (for the kernel's
/// own checks, `scenario=kstate`).
pub fn alias_cleans() -> u32 {
    // SAFETY: a copy of a counter written only by `clean_kernel_alias`.
    unsafe { ALIAS_CLEANS.get() }
}

/// The frame allocator.
pub fn frames() -> FrameAllocator {
    FrameAllocator(())
}

/// Records `pa`'s owner in the TCM frame table (if set up).
pub fn set_owner(pa: u32, owner: Option<usize>) {
    // SAFETY: the reference lives for this call only, which reaches no
    // other user of the TCM state.
    if let Some(t) = unsafe { tcm::state() } {
        t.set_owner(pa, owner);
    }
}

/// Gives a process's frame back: a TCM frame to its bank, RAM to the allocator.
pub fn free_frame(pa: u32) {
    // SAFETY: as in `set_owner`.
    match unsafe { tcm::state() } {
        Some(t) if t.kind_of(pa).is_some() => t.free(pa),
        t => {
            if let Some(t) = t {
                t.set_owner(pa, None);
            }
            frames().release(pa);
        }
    }
}

impl KernelSlot {
    /// The kernel, if one is installed.
    fn installed(&mut self) -> Option<&mut Kernel> {
        if self.live {
            // SAFETY: `k` is initialised while `live`.
            Some(unsafe { self.k.assume_init_mut() })
        } else {
            None
        }
    }
}

/// The installed kernel, if a scenario set one up.
///
/// # Safety
/// While the returned reference is alive no other reference to the kernel
/// exists and nothing else reaches it: the caller holds it in thread
/// context for a bounded stretch that runs no user mode (`Kernel::run` and
/// the trap entry points take their own), and never calls this (or
/// [`running_kernel`], [`install`], [`uninstall`]) meanwhile.
pub unsafe fn installed<'a>() -> Option<&'a mut Kernel> {
    // SAFETY: the caller's contract: this is the only access to the slot.
    unsafe { KERNEL.get_mut() }.installed()
}

/// The kernel, in a trap from user mode.
///
/// # Safety
///
/// Only while user mode runs or from a trap taken from it: user mode is
/// entered only by [`Kernel::run`] of the installed kernel, which stays
/// installed until `run` returns. No other reference to the kernel may be
/// alive while the returned one is.
#[inline(always)]
pub(super) unsafe fn running_kernel<'a>() -> &'a mut Kernel {
    // SAFETY: the caller's contract: the kernel is installed and this is
    // the only reference to it.
    unsafe { KERNEL.get_mut().k.assume_init_mut() }
}

/// The CP15 handle of a handler entered from assembly that no reference
/// can be lent to and that cannot reach the kernel's own
/// ([`Kernel::cp15`] through [`running_kernel`]) because its caller may
/// hold the kernel: the naive switch's cache maintenance
/// (`fastpath::fast_flush_caches`, called by the assembly fast path and
/// by the Rust lean switch) and the CP15 maintenance of `spm`'s mapping
/// callbacks (`tcm::Maps`, called by `spm` in the middle of an exchange
/// that holds the kernel's handle). The one place, besides `kmain`'s owner
/// and the lease's stand-ins, that makes a CP15 handle.
///
/// Why a trap handler may use CP15: it runs privileged, on one core, with
/// interrupts masked, on behalf of the installed kernel, which holds the
/// handle leased from `kmain`'s owner ([`Lease`]) for as long as user mode
/// or its traps run; the handle is zero-sized and each of these callers
/// uses it for the one maintenance operation it is called for, between
/// two uses of the kernel's, never interleaved with them.
///
/// # Safety
/// Only while a kernel is installed (from a trap taken from user mode, or
/// a system call or kernel job the installed kernel runs); the handle is
/// dropped before the caller returns.
#[inline(always)]
pub(super) unsafe fn trap_cp15() -> HwCp15 {
    // SAFETY: the caller's contract: the installed kernel's lease holds
    // `kmain`'s owner, which is not used meanwhile (see above).
    unsafe { HwCp15::new() }
}

/// Installs `k` (replacing any previous kernel).
pub fn install(k: Kernel) {
    // SAFETY: thread context, no scenario running: no reference into the
    // slot (old or new kernel) is alive.
    let slot = unsafe { KERNEL.get_mut() };
    if slot.live {
        // SAFETY: initialised while `live`; dropped once, replaced below.
        unsafe { slot.k.assume_init_drop() };
    }
    slot.k.write(k);
    slot.live = true;
}

/// A scenario's hold on `kmain`'s CP15 owner while a kernel is installed.
///
/// [`Lease::install`] borrows the owner mutably for the lease's life and
/// gives the kernel it installs a handle standing in for it; dropping the
/// lease uninstalls (and drops) the kernel, so the kernel's handle is never
/// used once the borrow ends, nor the owner while the kernel lives.
pub struct Lease<'c>(core::marker::PhantomData<&'c mut HwCp15>);

impl<'c> Lease<'c> {
    /// Builds a kernel in `mode` over the CP15 owner `cp15` and installs it
    /// (replacing any previous kernel) until the lease is dropped.
    pub fn install(cp15: &'c mut HwCp15, mode: SwitchMode) -> Result<Lease<'c>, fass::FassError> {
        let _ = cp15; // held by the lease's lifetime
                      // SAFETY: the handle stands in for `cp15`, borrowed mutably by the
                      // returned lease until it is dropped; it goes only into the kernel
                      // installed here, which the lease's drop uninstalls (dropping the
                      // handle), so the owner and the handle are never used at once.
        let k = Kernel::new(mode, unsafe { HwCp15::new() })?;
        install(k);
        Ok(Lease(core::marker::PhantomData))
    }
}

impl Drop for Lease<'_> {
    fn drop(&mut self) {
        uninstall();
    }
}

/// Removes and returns the kernel.
pub fn uninstall() -> Option<Kernel> {
    // SAFETY: as in `install`.
    let slot = unsafe { KERNEL.get_mut() };
    if !slot.live {
        return None;
    }
    slot.live = false;
    // SAFETY: initialised while `live`, which is now false: read once.
    Some(unsafe { slot.k.assume_init_read() })
}

/// What the trap does after a system call.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum After {
    /// Return to the caller (or reschedule if it blocked or ended).
    Continue,
    /// Give the CPU to the next ready process in round-robin order.
    Yield,
    /// Reschedule, preferring this process (a direct hand-off).
    Reschedule(Option<usize>),
}

/// Why a process could not be created.
#[derive(Clone, Copy, PartialEq, Eq, defmt::Format)]
pub enum SpawnError {
    /// The process table is full.
    TableFull,
    /// The image is malformed.
    Elf(elf::ElfError),
    /// Out of frames.
    NoFrames,
    /// The image needs more pages than a process may own.
    TooManyPages,
    /// The strategy refused.
    Strategy(fass::FassError),
}

impl From<fass::FassError> for SpawnError {
    fn from(e: fass::FassError) -> Self {
        SpawnError::Strategy(e)
    }
}

impl Kernel {
    /// Runs `f` on the strategy and the platform, after bringing `fass`'s
    /// idea of the current space up to date (lean switches skip it), and
    /// refreshes the generation afterwards.
    pub fn sys<R>(&mut self, f: impl FnOnce(&mut Strategy, &mut platform::Sys<'_>) -> R) -> R {
        self.sync();
        let r = with_sys(&mut self.cp15, |sys| f(&mut self.strategy, sys));
        self.refresh_gen();
        r
    }

    /// After lean switches `fass` still thinks the process it last switched
    /// to runs: tell it which one does (FASS: [`fass::Fass::note_switched`];
    /// the lean switch wrote exactly the registers its last full switch
    /// did, in the same generation) and, under the per-table strategies,
    /// hand back the lean switches made since the last time
    /// ([`fass::TableSwitch::settle_lean`]: counted as the strategy's own).
    #[inline]
    pub(super) fn sync(&mut self) {
        let owed = self.counters.lean_switches.wrapping_sub(self.settled);
        match (&mut self.strategy, self.current) {
            (Strategy::Fass(fs), Some(c)) => {
                let id = SpaceId(c as u16);
                if fs.current() != Some(id) {
                    // SAFETY: process `c` runs with the DACR and FCSEIDR `fass`
                    // last wrote for it: a full switch, or the lean path of
                    // `finish`, which writes them only while their generation
                    // is the current one.
                    if let Err(e) = unsafe { fs.note_switched(id) } {
                        defmt::error!("re-synchronising fass on process {=usize} failed: {}", c, e);
                    }
                }
            }
            (Strategy::Table(ts), Some(c)) if owed != 0 => {
                let id = SpaceId(c as u16);
                let r = ts.lean_switch(id).ok_or(fass::StaleSwitch).and_then(|rec| {
                    // SAFETY: process `c` runs, switched to last by a lean
                    // switch (no full switch since the last settle: each
                    // syncs first); the `owed` lean switches since then each
                    // wrote a record of the strategy's, of the generation
                    // current then and now (a change of it goes through a
                    // strategy call, which syncs first), with its
                    // maintenance (`switch_ready`, `asm/fastpath.s`).
                    unsafe { ts.settle_lean(rec.applied(id, owed)) }
                });
                if let Err(e) = r {
                    defmt::error!(
                        "settling lean switches to process {=usize} failed: {}",
                        c,
                        e
                    );
                }
            }
            _ => {}
        }
        self.settled = self.counters.lean_switches;
    }

    /// Recomputes [`Kernel::gen`]: every recycle, release, full flush
    /// (domains become clean and must be marked dirty again by a full
    /// switch) and change of segments or spaces makes all precomputed
    /// switch registers stale.
    #[inline]
    fn refresh_gen(&mut self) {
        // The low 32 bits of the strategy's 64-bit generation (the
        // kernel's records keep a 32-bit stamp the assembly compares).
        let low = dispatch!(&self.strategy, s => SwitchStrategy::generation(s)) as u32;
        self.gen = low.wrapping_add(self.epoch).wrapping_shl(1) | 1;
    }

    /// A kernel change that can alter a process's DACR (spawn, exit, segments).
    pub(super) fn bump_epoch(&mut self) {
        self.epoch = self.epoch.wrapping_add(1);
        self.refresh_gen();
    }

    /// A kernel in `mode` over the kernel's page table, running its strategy
    /// calls through `cp15` ([`Lease::install`] gives it one); no process yet.
    fn new(mode: SwitchMode, cp15: HwCp15) -> Result<Kernel, fass::FassError> {
        let root = crate::mmu::with_tables(|t, _| t.root());
        clock::stop();
        Ok(Kernel {
            strategy: Strategy::new(mode, root)?,
            procs: [Proc::FREE; MAX_PROCS],
            current: None,
            counters: Counters::default(),
            marks: [None; 2],
            segments: [None; SEGMENTS],
            kctx: [0; 10],
            epoch: 0,
            settled: 0,
            gen: 1,
            svc_table: super::fastpath::svc_table(mode),
            ready: ReadySet::EMPTY,
            clock: SwitchClock::default(),
            fault_clock: FaultClock::default(),
            pending: None,
            xtimes: [None; 8],
            tcm_preempted: [0; 2],
            vfp: super::vfp::Vfp::new(super::fastpath::svc_table(mode)),
            cp15,
        })
    }

    /// Defines shared segment `id` at `va` over the 1 MiB of physical memory at `pa` (zeroed).
    pub fn define_segment(&mut self, id: u16, va: u32, pa: u32) -> Result<(), fass::FassError> {
        let base = crate::mmu::phys_to_virt(pa) as *mut u32;
        for i in 0..(1 << 18) {
            // SAFETY: `pa` is a MiB reserved for segments, in the linear map.
            unsafe { base.add(i).write_volatile(0) };
        }
        let spec = fass::SegmentSpec {
            base: VirtAddr::new(va),
            pa: PhysAddr::new(pa),
            size: 1 << 20,
            ap: AccessPermission::ReadWrite,
            cache: CachePolicy::WriteBack,
        };
        dispatch!(&mut self.strategy, s => SwitchStrategy::create_segment(s, SegmentId(id), spec))?;
        if let Some(slot) = self.segments.get_mut(usize::from(id)) {
            *slot = Some(SegmentInfo { va });
        }
        Ok(())
    }

    /// Creates a process running `role` with arguments `args` (r1-r7).
    pub fn spawn(&mut self, role: u32, args: [u32; 7]) -> Result<usize, SpawnError> {
        self.bump_epoch();
        let idx = self
            .procs
            .iter()
            .position(|p| p.state == State::Free)
            .ok_or(SpawnError::TableFull)?;
        let image = elf::parse(USER_IMAGE).map_err(SpawnError::Elf)?;
        let space = SpaceId(idx as u16);
        self.sys(|st, sys| dispatch!(st, s => SwitchStrategy::create_space(s, sys, space)))?;
        let mut p = Proc::FREE;
        p.role = role;
        let r = self.load(&image, space, &mut p);
        if let Err(e) = r {
            self.release_pages(space, &mut p);
            let _ = self
                .sys(|st, sys| dispatch!(st, s => SwitchStrategy::destroy_space(s, sys, space)));
            return Err(e);
        }
        p.ctx.r[0] = role;
        p.ctx.r[1..8].copy_from_slice(&args);
        p.ctx.sp = abi::STACK_TOP;
        p.ctx.pc = image.entry;
        p.ctx.cpsr = USER_CPSR;
        self.procs[idx] = p;
        self.set_state(idx, State::Ready);
        Ok(idx)
    }

    /// Maps one kernel-owned page of `p` at `va` with `ap`, filled by `fill`.
    fn kernel_page(
        &mut self,
        space: SpaceId,
        p: &mut Proc,
        va: u32,
        ap: AccessPermission,
        exec: bool,
        fill: impl FnOnce(*mut u8),
    ) -> Result<(), SpawnError> {
        let slot = p
            .kernel_pages
            .iter()
            .position(Option::is_none)
            .ok_or(SpawnError::TooManyPages)?;
        let pa = frames().alloc().ok_or(SpawnError::NoFrames)?;
        fill(crate::mmu::phys_to_virt(pa) as *mut u8);
        self.publish_frame(pa, exec);
        let r = self.sys(|st, sys| dispatch!(st, s => SwitchStrategy::map_pages(s, sys, space, one_page(va)?, frame_at(pa)?, ap, CachePolicy::WriteBack)),
        );
        if let Err(e) = r {
            frames().release(pa);
            return Err(e.into());
        }
        set_owner(pa, Some(space.0 as usize));
        p.kernel_pages[slot] = Some(Page { va, pa, exec });
        Ok(())
    }

    /// What the kernel wrote into frame `pa` through its linear map goes
    /// to RAM before a process reads or fetches it through its own alias
    /// ([`clean_kernel_alias`]); for code (`exec`) the I-cache is then
    /// invalidated, whole: one operation, where the page's lines by MVA
    /// would be 128.
    ///
    /// For a fresh mapping the I-cache invalidation is redundant: no
    /// instruction can be cached under an address no page maps, since
    /// every unmap invalidates its page's I-lines by MVA (`fass`'s
    /// `purge_page`), and a process ends through its unmaps. It is the
    /// only protection where code is written over a page that stays mapped
    /// at an address the process has executed: `LOAD_CODE` replacing a
    /// page ([`Kernel::load_code`](super::mem)).
    pub(super) fn publish_frame(&mut self, pa: u32, exec: bool) {
        if !crate::marker::omitted(crate::marker::Omit::FrameClean) {
            clean_kernel_alias(pa);
        }
        if exec && !crate::marker::omitted(crate::marker::Omit::IcacheLoad) {
            mmu_armv5::maint::CacheMaintenance::invalidate_icache(&mut platform::counting_on(
                &mut self.cp15,
            ));
        }
    }

    fn load(
        &mut self,
        image: &elf::Image<'_>,
        space: SpaceId,
        p: &mut Proc,
    ) -> Result<(), SpawnError> {
        for seg in image.segments.iter().flatten() {
            let first = seg.vaddr & !0xFFF;
            let end = (seg.vaddr + seg.memsz).div_ceil(4096) * 4096;
            let ap = if seg.writable {
                AccessPermission::ReadWrite
            } else {
                AccessPermission::PrivRwUserRo
            };
            for page in (first..end).step_by(4096) {
                let bytes = image.bytes;
                self.kernel_page(space, p, page, ap, !seg.writable, |dst| {
                    // File bytes of the segment that fall into this page.
                    let lo = page.max(seg.vaddr);
                    let hi = (page + 4096).min(seg.vaddr + seg.filesz);
                    if lo < hi {
                        let off = (seg.offset + (lo - seg.vaddr)) as usize;
                        let src = &bytes[off..off + (hi - lo) as usize];
                        // SAFETY: `dst` is a fresh frame of 4096 bytes in
                        // the linear map; `lo - page + len <= 4096`.
                        unsafe {
                            core::ptr::copy_nonoverlapping(
                                src.as_ptr(),
                                dst.add((lo - page) as usize),
                                src.len(),
                            )
                        };
                    }
                })?;
            }
        }
        for page in (abi::STACK_TOP - abi::STACK_SIZE..abi::STACK_TOP).step_by(4096) {
            self.kernel_page(space, p, page, AccessPermission::ReadWrite, false, |_| {})?;
        }
        Ok(())
    }

    /// Unmaps and frees every page of `p` (the space stays).
    fn release_pages(&mut self, space: SpaceId, p: &mut Proc) {
        p.tcm_targets = [None; RES_SLOTS];
        for page in p
            .kernel_pages
            .iter_mut()
            .chain(p.user_pages.iter_mut())
            .chain(p.res_pages.iter_mut())
        {
            if let Some(pg) = page.take() {
                let _ = self.sys(|st, sys| dispatch!(st, s => SwitchStrategy::unmap_pages(s, sys, space, one_page(pg.va)?)),
                );
                free_frame(pg.pa);
            }
        }
    }

    /// The kernel's counters, the aborts `fass` resolved on the fast path
    /// (counted once, by `fass`: [`fass::Fass::fast_faults`]) folded in.
    pub fn counters(&self) -> Counters {
        let f = self.strategy.fast_faults();
        let mut c = self.counters;
        c.domain_faults = c.domain_faults.wrapping_add(f.domain_faults() as u32);
        c.fills = c.fills.wrapping_add(f.translation_faults() as u32);
        c.flush_free_collisions = c
            .flush_free_collisions
            .wrapping_add(f.count(true, true) as u32);
        c
    }

    /// The CP15 maintenance counts, with the register writes and TLB
    /// invalidations of lean switches (FASS: DACR and FCSEIDR; per-table
    /// strategies: TTBR and TLB, and FCSEIDR under FCSE) and the TLB
    /// invalidations of the aborts `fass` resolved on the fast path (one per
    /// collision, [`fass::FastFaults::collisions`]), which bypass the
    /// counting CP15.
    pub fn hw_counts(&self) -> HwCounts {
        let mut hw = platform::counts();
        let lean = self.counters.lean_switches;
        match &self.strategy {
            Strategy::Fass(_) => {
                hw.dacr_writes += lean;
                hw.pid_writes += lean;
            }
            Strategy::Table(ts) => {
                hw.ttbr_writes += lean;
                hw.tlb_flushes += lean;
                if matches!(ts.kind(), fass::ClassicKind::Fcse(_)) {
                    hw.pid_writes += lean;
                }
            }
        }
        let fast = self.strategy.fast_faults().collisions() as u32;
        hw.tlb_flushes = hw.tlb_flushes.wrapping_add(fast);
        hw
    }

    /// Reads every counter now ([`Kernel::hw_counts`], [`Kernel::counters`]),
    /// after settling the lean switches with the strategy ([`Kernel::sync`]).
    pub fn mark_now(&mut self) -> Mark {
        self.sync();
        let hw = self.hw_counts();
        Mark {
            ticks: timer::now(),
            hw,
            stats: self.strategy.stats(),
            counters: self.counters(),
            seg_domains: self.strategy.segment_domains(),
        }
    }

    /// Ends process `idx` with `exit`: wakes whoever waits on it with
    /// `ESRCH`, frees its pages and destroys its address space.
    pub fn end(&mut self, idx: usize, exit: Exit) {
        if !self.procs[idx].alive() {
            return;
        }
        self.bump_epoch();
        self.procs[idx].fast = Fast::NONE;
        // The VFP: nothing of it stays behind (`vfp::Kernel::vfp_end`).
        self.vfp_end(idx);
        // Its exchange in progress (it was blocked in the call) is
        // cancelled before anything of it is freed.
        self.cancel_pending(idx);
        if matches!(exit, Exit::Killed { .. }) {
            self.counters.kills += 1;
        }
        self.ipc_exit(idx);
        self.set_state(idx, State::Dead);
        self.procs[idx].exit = Some(exit);
        let space = SpaceId(idx as u16);
        let mut p = self.procs[idx];
        for id in 0..SEGMENTS as u32 {
            if p.segs & (1 << id) != 0 {
                let _ = self.seg_unmap(idx, id);
            }
        }
        self.release_pages(space, &mut p);
        // Every record `release_pages` cleared (the TCM resource pages and
        // exchange targets too: stale ones would name frames given back).
        self.procs[idx].kernel_pages = p.kernel_pages;
        self.procs[idx].user_pages = p.user_pages;
        self.procs[idx].res_pages = p.res_pages;
        self.procs[idx].tcm_targets = p.tcm_targets;
        self.procs[idx].segs = 0;
        if let Err(e) =
            self.sys(|st, sys| dispatch!(st, s => SwitchStrategy::destroy_space(s, sys, space)))
        {
            defmt::error!("destroying space {=usize} failed: {}", idx, e);
        }
        if self.current == Some(idx) {
            self.current = None;
        }
    }
}
