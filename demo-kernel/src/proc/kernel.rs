//! Processes, the scheduler, IPC and traps.
//!
//! All kernel state is one [`Kernel`] value in a static, reached only from
//! thread context before and after a scenario and from [`trap_entry`] while
//! one runs; the kernel never takes interrupts itself (IRQs are masked in
//! every privileged mode), so there is no concurrent access.
//!
//! Each process's user registers live in its own [`TrapFrame`]
//! ([`Proc::ctx`]): the trap stubs (`asm/trap.s`) save them straight into
//! the running process's frame and return to user mode from whichever frame
//! [`trap_entry`] hands back, so a context switch copies no registers.
//! [`trap_entry`] first lets [`Kernel::trap`] handle the event (system call,
//! tick, abort) and say what to run next ([`Wish`]), then decides on the
//! process and switches to it, as the last thing before the return to user
//! mode ([`Kernel::finish`]).

use core::cell::UnsafeCell;

use fass::{Resolution, SegmentId, SpaceId, SwitchStrategy};
use mmu_armv5::descriptor::{AccessPermission, CachePolicy};
use mmu_armv5::regs::{Cp15Ext, Dacr, DomainAccess};
use mmu_armv5::{FaultKind, FcsePid, PhysAddr, VirtAddr};

use super::clock::{self, FaultClock, SwitchClock};
use super::frames::Frames;
use super::ipc::Links;
use super::platform::{self, with_sys, HwCounts};
use super::sched::ReadySet;
use super::strategy::{dispatch, FassS, Strategy, SwitchMode, MAX_PROCS, SEGMENTS};
use super::tcm::{self, RES_SLOTS};
use super::{elf, timer};
use crate::abi::{self, err};
use crate::cp15::hw;
use crate::mmu::KERNEL_DOMAIN;

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
}

impl State {
    /// Whether the scheduler may pick a process in this state: ready, or
    /// blocked in a TCM call (whose exchange it then continues).
    #[inline(always)]
    pub fn runnable(self) -> bool {
        matches!(self, State::Ready | State::InTcm)
    }
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
    /// FASS: the precomputed switch registers.
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
#[derive(Clone, Copy, Default, defmt::Format)]
pub struct Counters {
    /// Context switches (between two different processes).
    pub switches: u32,
    /// Of which lean FASS switches (precomputed DACR and FCSEIDR written by
    /// the kernel itself, not through the counting platform: see
    /// [`Kernel::mark_now`]).
    pub lean_switches: u32,
    /// System calls.
    pub syscalls: u32,
    /// Timer interrupts.
    pub irqs: u32,
    /// Preemptions that switched.
    pub preemptions: u32,
    /// Aborts the strategy resolved on a domain fault.
    pub domain_faults: u32,
    /// Of which collisions resolved with a TLB invalidation only (the
    /// slot's previous owner was clean: no cache flush).
    pub flush_free_collisions: u32,
    /// Aborts the strategy resolved on a translation fault (lazy CPD fill).
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
    /// The generation precomputed switch registers must carry
    /// ([`Fast::gen`]): odd, from `fass`'s
    /// [`generation`](fass::Fass::generation) and [`Kernel::epoch`],
    /// refreshed after every strategy call (0, never a generation, marks a
    /// process without precomputed registers).
    pub(super) gen: u32,
    /// The runnable processes ([`State::runnable`]), kept by
    /// [`Kernel::set_state`].
    pub(super) ready: ReadySet,
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
    kctx: [u32; 10],
    /// Bumped by every kernel change that can alter a FASS process's DACR
    /// (segments, spawn, exit); part of [`Kernel::gen`].
    epoch: u32,
    /// TCM: an exchange preempted between steps.
    pub pending: Option<Pending>,
    /// TCM: timing of each completed user exchange (in order).
    pub xtimes: [Option<(u32, tcm::XTiming)>; 8],
    /// TCM: user exchanges preempted between two steps, by the caller's
    /// instruction set ([ARM, Thumb]).
    pub tcm_preempted: [u32; 2],
}

/// The precomputed DACR and FCSEIDR of a FASS process, valid while
/// `gen` equals the kernel's current generation ([`Kernel::gen`]): no
/// domain was taken back or released, no full flush, no segment or space
/// change since `fass` wrote them on the process's last full switch.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct Fast {
    /// Generation they were computed in (0: none, never valid).
    pub gen: u32,
    /// DACR value.
    pub dacr: u32,
    /// FCSEIDR value (`pid << 25`).
    pub fcseidr: u32,
}

impl Fast {
    /// No precomputed registers.
    pub const NONE: Fast = Fast {
        gen: 0,
        dacr: 0,
        fcseidr: 0,
    };
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

struct Global<T>(UnsafeCell<T>);
// SAFETY: single core; see the module docs (no concurrent access).
unsafe impl<T> Sync for Global<T> {}

static KERNEL: Global<Option<Kernel>> = Global(UnsafeCell::new(None));
static FRAMES: Global<Frames> = Global(UnsafeCell::new(Frames::new()));

/// The frame allocator.
pub fn frames() -> &'static mut Frames {
    // SAFETY: single core, no re-entry (module docs); callers never hold two
    // of these references at once.
    unsafe { &mut *FRAMES.0.get() }
}

/// Records `pa`'s owner in the TCM frame table (if set up).
pub fn set_owner(pa: u32, owner: Option<usize>) {
    if let Some(t) = tcm::tcm() {
        t.set_owner(pa, owner);
    }
}

/// Gives a process's frame back: a TCM frame to its bank, RAM to the allocator.
pub fn free_frame(pa: u32) {
    match tcm::tcm() {
        Some(t) if t.kind_of(pa).is_some() => t.free(pa),
        t => {
            if let Some(t) = t {
                t.set_owner(pa, None);
            }
            frames().release(pa);
        }
    }
}

/// The kernel, if a scenario set one up.
pub fn kernel() -> Option<&'static mut Kernel> {
    // SAFETY: as in `frames`.
    unsafe { (*KERNEL.0.get()).as_mut() }
}

/// The kernel, in a trap from user mode.
///
/// # Safety
///
/// Only while user mode runs or from a trap taken from it: user mode is
/// entered only by [`Kernel::run`] of the installed kernel, which stays
/// installed until `run` returns. No other reference to the kernel may be
/// alive.
#[inline(always)]
unsafe fn running_kernel() -> &'static mut Kernel {
    // SAFETY: the caller's contract: the kernel is installed.
    unsafe { (*KERNEL.0.get()).as_mut().unwrap_unchecked() }
}

/// Installs `k` (replacing any previous kernel).
pub fn install(k: Kernel) {
    // SAFETY: as in `frames`; no reference into the old value is alive.
    unsafe { *KERNEL.0.get() = Some(k) };
}

/// Removes and returns the kernel.
pub fn uninstall() -> Option<Kernel> {
    // SAFETY: as in `install`.
    unsafe { (*KERNEL.0.get()).take() }
}

extern "C" {
    fn __sched_enter(ctx: *mut [u32; 10]);
    fn __sched_leave(ctx: *const [u32; 10]) -> !;
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

fn ap_of(prot: u32) -> Option<AccessPermission> {
    match prot {
        abi::prot::NONE => Some(AccessPermission::PrivRw),
        abi::prot::READ => Some(AccessPermission::PrivRwUserRo),
        abi::prot::RW => Some(AccessPermission::ReadWrite),
        _ => None,
    }
}

/// Maps a `FassError` from a user-requested mapping to an error code.
pub fn map_error(e: fass::FassError) -> i32 {
    use fass::FassError as E;
    match e {
        E::NotPrivate(_) | E::BadLength(_) | E::Segment(_) | E::Pid(_) => err::EINVAL,
        E::Space(fass::space::SpaceError::AlreadyMapped(_)) => err::EBUSY,
        E::Space(fass::space::SpaceError::Misaligned(_)) => err::EINVAL,
        _ => err::ENOMEM,
    }
}

impl Kernel {
    /// Runs `f` on the strategy and the platform, after bringing `fass`'s
    /// idea of the current space up to date (lean switches skip it), and
    /// refreshes the generation afterwards.
    pub fn sys<R>(&mut self, f: impl FnOnce(&mut Strategy, &mut platform::Sys<'_>) -> R) -> R {
        self.sync();
        let r = with_sys(|sys| f(&mut self.strategy, sys));
        self.refresh_gen();
        r
    }

    /// After lean switches `fass` still thinks the process it last switched
    /// to runs: tell it which one does ([`fass::Fass::note_switched`]; the
    /// lean switch wrote exactly the registers its last full switch did,
    /// in the same generation).
    #[inline]
    fn sync(&mut self) {
        if let (Strategy::Fass(fs), Some(c)) = (&mut self.strategy, self.current) {
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
    }

    /// Recomputes [`Kernel::gen`]: every recycle, release, full flush
    /// (domains become clean and must be marked dirty again by a full
    /// switch) and change of segments or spaces makes all precomputed
    /// switch registers stale.
    #[inline]
    fn refresh_gen(&mut self) {
        if let Strategy::Fass(f) = &self.strategy {
            // The low 32 bits, as before `fass` widened its generation (the
            // kernel's own lean path keeps its 32-bit stamp until it moves
            // to `SwitchStrategy::switch_lean`).
            let low = f.generation() as u32;
            self.gen = low.wrapping_add(self.epoch).wrapping_shl(1) | 1;
        }
    }

    /// A kernel change that can alter a process's DACR (spawn, exit, segments).
    fn bump_epoch(&mut self) {
        self.epoch = self.epoch.wrapping_add(1);
        self.refresh_gen();
    }

    /// A kernel in `mode` over the kernel's page table; no process yet.
    pub fn new(mode: SwitchMode) -> Result<Kernel, fass::FassError> {
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
            gen: 1,
            ready: ReadySet::EMPTY,
            clock: SwitchClock::default(),
            fault_clock: FaultClock::default(),
            pending: None,
            xtimes: [None; 8],
            tcm_preempted: [0; 2],
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
        let r = self.sys(|st, sys| dispatch!(st, s => SwitchStrategy::map_pages(s, sys, space, VirtAddr::new(va), PhysAddr::new(pa), 4096, ap, CachePolicy::WriteBack)),
        );
        if let Err(e) = r {
            frames().release(pa);
            return Err(e.into());
        }
        set_owner(pa, Some(space.0 as usize));
        p.kernel_pages[slot] = Some(Page { va, pa, exec });
        Ok(())
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
                let _ = self.sys(|st, sys| dispatch!(st, s => SwitchStrategy::unmap_pages(s, sys, space, VirtAddr::new(pg.va), 4096)),
                );
                free_frame(pg.pa);
            }
        }
    }

    /// Maps `len` bytes of fresh zeroed pages at `va` for process `idx` (`MAP`).
    pub fn map_user(&mut self, idx: usize, va: u32, len: u32, prot: u32) -> i32 {
        let Some(ap) = ap_of(prot) else {
            return err::EINVAL;
        };
        if !va.is_multiple_of(4096)
            || len == 0
            || !len.is_multiple_of(4096)
            || len > (USER_PAGES as u32) * 4096
        {
            return err::EINVAL;
        }
        let Some(end) = va.checked_add(len) else {
            return err::EINVAL;
        };
        if va < 0x1000 || end > crate::mmu::USER_TOP {
            return err::EINVAL;
        }
        // The TCM resource slots are the kernel's.
        let res_end = tcm::USER_RES_VA + (RES_SLOTS as u32) * 4096;
        if va < res_end && tcm::USER_RES_VA < end {
            return err::EINVAL;
        }
        let pages = (len / 4096) as usize;
        let free_slots = self.procs[idx]
            .user_pages
            .iter()
            .filter(|p| p.is_none())
            .count();
        if free_slots < pages {
            return err::ENOMEM;
        }
        let space = SpaceId(idx as u16);
        let mut done = 0;
        let mut result = 0;
        for k in 0..pages {
            let pva = va + (k as u32) * 4096;
            let Some(pa) = frames().alloc() else {
                result = err::ENOMEM;
                break;
            };
            let r = self.sys(|st, sys| dispatch!(st, s => SwitchStrategy::map_pages(s, sys, space, VirtAddr::new(pva), PhysAddr::new(pa), 4096, ap, CachePolicy::WriteBack)),
            );
            match r {
                Ok(()) => {
                    if let Some(slot) = self.procs[idx].user_pages.iter_mut().find(|p| p.is_none())
                    {
                        *slot = Some(Page {
                            va: pva,
                            pa,
                            exec: false,
                        });
                        set_owner(pa, Some(idx));
                    }
                    done += 1;
                }
                Err(e) => {
                    frames().release(pa);
                    result = map_error(e);
                    break;
                }
            }
        }
        if result != 0 {
            // Undo the pages mapped by this call.
            for k in 0..done {
                let _ = self.unmap_page(idx, va + (k as u32) * 4096);
            }
        }
        result
    }

    pub(super) fn unmap_page(&mut self, idx: usize, va: u32) -> i32 {
        let space = SpaceId(idx as u16);
        let Some(slot) = self.procs[idx]
            .user_pages
            .iter()
            .position(|p| p.is_some_and(|p| p.va == va))
        else {
            return err::EINVAL;
        };
        let Some(pg) = self.procs[idx].user_pages[slot].take() else {
            return err::EINVAL;
        };
        let r = self.sys(|st, sys| dispatch!(st, s => SwitchStrategy::unmap_pages(s, sys, space, VirtAddr::new(va), 4096)),
        );
        free_frame(pg.pa);
        match r {
            Ok(()) => 0,
            Err(e) => {
                defmt::warn!(
                    "unmapping {=u32:#010x} of process {=usize} failed: {}",
                    va,
                    idx,
                    e
                );
                map_error(e)
            }
        }
    }

    /// Unmaps `len` bytes at `va` that process `idx` mapped with `MAP` (`UNMAP`).
    pub fn unmap_user(&mut self, idx: usize, va: u32, len: u32) -> i32 {
        if !va.is_multiple_of(4096)
            || len == 0
            || !len.is_multiple_of(4096)
            || len > (USER_PAGES as u32) * 4096
        {
            return err::EINVAL;
        }
        if va.checked_add(len).is_none() {
            return err::EINVAL;
        }
        let p = &self.procs[idx];
        for k in 0..len / 4096 {
            let pva = va + k * 4096;
            if p.kernel_pages.iter().flatten().any(|pg| pg.va == pva) {
                return err::EPERM;
            }
            if !p.user_pages.iter().flatten().any(|pg| pg.va == pva) {
                return err::EINVAL;
            }
            // In TCM or being exchanged: its frames stay (`TCM_RELEASE` first).
            if self.tcm_busy(idx, pva) {
                return err::EBUSY;
            }
        }
        for k in 0..len / 4096 {
            let r = self.unmap_page(idx, va + k * 4096);
            if r != 0 {
                return r;
            }
        }
        0
    }

    /// Maps segment `id` into process `idx` (`SEG_MAP`); returns 0 and puts
    /// its address in the caller's r1.
    pub fn seg_map(&mut self, idx: usize, id: u32) -> i32 {
        self.bump_epoch();
        let Some(Some(info)) = self.segments.get(id as usize).copied() else {
            return err::EINVAL;
        };
        if self.procs[idx].segs & (1 << id) != 0 {
            return err::EBUSY;
        }
        let space = SpaceId(idx as u16);
        let r = self.sys(|st, sys| dispatch!(st, s => SwitchStrategy::map_segment(s, sys, space, SegmentId(id as u16), VirtAddr::new(info.va), fass::SegmentAccess::Client)),
        );
        match r {
            Ok(()) => {
                self.procs[idx].segs |= 1 << id;
                self.procs[idx].ctx.r[1] = info.va;
                0
            }
            Err(e) => map_error(e),
        }
    }

    /// Unmaps segment `id` from process `idx` (`SEG_UNMAP`).
    pub fn seg_unmap(&mut self, idx: usize, id: u32) -> i32 {
        self.bump_epoch();
        if id as usize >= SEGMENTS || self.procs[idx].segs & (1 << id) == 0 {
            return err::EINVAL;
        }
        let space = SpaceId(idx as u16);
        let r = self.sys(|st, sys| dispatch!(st, s => SwitchStrategy::unmap_segment(s, sys, space, SegmentId(id as u16))),
        );
        self.procs[idx].segs &= !(1 << id);
        match r {
            Ok(()) => 0,
            Err(e) => map_error(e),
        }
    }

    /// Reads every counter now. The CP15 counts include the DACR and
    /// FCSEIDR writes of lean switches.
    pub fn mark_now(&self) -> Mark {
        let mut hw = platform::counts();
        hw.dacr_writes += self.counters.lean_switches;
        hw.pid_writes += self.counters.lean_switches;
        Mark {
            ticks: timer::now(),
            hw,
            stats: self.strategy.stats(),
            counters: self.counters,
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
        self.procs[idx].kernel_pages = p.kernel_pages;
        self.procs[idx].user_pages = p.user_pages;
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

    /// Resolves an abort of the current process through the strategy;
    /// `true` if the access can be retried.
    pub fn resolve(&mut self, fsr: u32, addr: u32) -> bool {
        self.resolve_fault(fsr, addr).is_some()
    }

    /// [`Kernel::resolve`], saying what the resolution flushed:
    /// `Some(flushed)` if the access can be retried.
    pub fn resolve_fault(&mut self, fsr: u32, addr: u32) -> Option<fass::Flushed> {
        let r = self.sys(|st, sys| dispatch!(st, s => SwitchStrategy::resolve(s, sys, fsr, addr)));
        match r {
            Ok(Resolution::Resolved { flushed, .. }) => {
                if is_domain_fault(fsr) {
                    self.counters.domain_faults += 1;
                } else {
                    self.counters.fills += 1;
                }
                Some(flushed)
            }
            Ok(Resolution::NotFass(_)) => None,
            Err(e) => {
                defmt::error!("fault resolution failed: {}", e);
                None
            }
        }
    }

    /// The process a [`Wish`] comes to, ready to return to user mode: one
    /// blocked in a TCM call has its exchange continued first, as itself
    /// (switched to), and is taken only when the call is over; preempted
    /// again, the next one is chosen. When none can run (every process
    /// ended, or the rest are deadlocked, and then they are ended) the
    /// kernel leaves user mode for good.
    #[inline(never)]
    pub(super) fn choose(&mut self, w: Wish) -> usize {
        let mut next = self.choose_runnable(w);
        while self.procs[next].state == State::InTcm {
            let over = if self.current == Some(next) || self.switch_full(next, timer::now()) {
                self.tcm_continue(next)
            } else {
                self.end(next, Exit::SwitchFailed);
                false
            };
            if over {
                break;
            }
            next = self.choose_runnable(Wish::Next(self.pick_after(next)));
        }
        next
    }

    /// [`Kernel::choose`] without the TCM continuation: any runnable process.
    fn choose_runnable(&mut self, w: Wish) -> usize {
        let next = match w {
            Wish::Next(Some(n)) => Some(n),
            Wish::Next(None) => self.pick(None),
            Wish::Resume(prefer) => {
                let keep = self
                    .current
                    .filter(|c| self.procs[*c].state == State::Ready);
                match (prefer, keep) {
                    (None, Some(c)) => Some(c),
                    _ => self.pick(prefer),
                }
            }
        };
        match next {
            Some(n) => n,
            None => {
                for i in 0..MAX_PROCS {
                    if self.procs[i].alive() {
                        self.end(i, Exit::Deadlock);
                    }
                }
                self.leave()
            }
        }
    }

    /// Puts the kernel's own address space back: the kernel table in the
    /// TTBR, PID 0, only the kernel's domain enabled.
    fn restore_kernel_space(&mut self) {
        let root = crate::mmu::with_tables(|t, _| t.root());
        let mut c = hw();
        // SAFETY: the kernel table maps everything the kernel uses; PID 0
        // leaves addresses unrelocated; the kernel's domain stays client.
        unsafe {
            if let Ok(ttbr) = mmu_armv5::regs::Ttbr::new(root) {
                c.set_ttbr(ttbr);
            }
            c.set_fcse_pid(FcsePid::ZERO);
            c.set_dacr(Dacr::only(KERNEL_DOMAIN, DomainAccess::Client));
        }
        crate::cp15::invalidate_tlb();
    }

    /// Runs the processes until none can run.
    pub fn run(slice_ticks: u32) {
        let Some(k) = kernel() else {
            return;
        };
        if let Strategy::Table(_) = k.strategy {
            // The per-table strategies map user pages in the user domain
            // and never write the DACR: enable it (client) beside the kernel's.
            let dacr = Dacr::only(KERNEL_DOMAIN, DomainAccess::Client)
                .with(super::strategy::USER_DOMAIN, DomainAccess::Client);
            // SAFETY: the kernel's domain stays client; the user domain
            // only holds user mappings, checked by their access permissions.
            unsafe { hw().set_dacr(dacr) };
        }
        timer::start(slice_ticks);
        let ctx = core::ptr::addr_of_mut!(k.kctx);
        // SAFETY: `__sched_enter` saves the callee-saved registers in `ctx`
        // (inside the installed kernel, which outlives the run) and returns
        // here when `__sched_leave(ctx)` is called.
        unsafe { __sched_enter(ctx) };
        timer::stop();
    }

    /// No process can run: leave user mode for good (back into [`Kernel::run`]).
    fn leave(&mut self) -> ! {
        timer::stop();
        self.restore_kernel_space();
        let ctx = core::ptr::addr_of!(self.kctx);
        // SAFETY: `kctx` was filled by `__sched_enter` in `run`, whose frame
        // is still live below the trap frames being abandoned.
        unsafe { __sched_leave(ctx) }
    }

    /// Handles a trap of kind `kind` (see `asm/trap.s`) of the current
    /// process, whose registers are in its frame; says what to run next.
    #[inline(never)]
    fn trap(&mut self, kind: u32) -> Wish {
        let Some(cur) = self.current else {
            return Wish::Resume(None);
        };
        match kind {
            2 => match self.syscall(cur) {
                After::Continue if self.procs[cur].state == State::Ready => Wish::Next(Some(cur)),
                After::Continue => Wish::Resume(None),
                After::Yield => Wish::Next(self.pick_after(cur)),
                After::Reschedule(prefer) => Wish::Resume(prefer),
            },
            6 => {
                if timer::ack() {
                    self.counters.irqs += 1;
                    self.kernel_job_tick();
                    let next = self.pick_after(cur);
                    if next != Some(cur) {
                        self.counters.preemptions += 1;
                        clock::mark(clock::Transit::Preempt);
                    }
                    return Wish::Next(next);
                }
                Wish::Next(Some(cur))
            }
            3 | 4 => {
                let c = hw();
                let (trap, fsr, addr) = if kind == 4 {
                    (TrapKind::Data, c.dfsr().bits(), c.far().bits())
                } else {
                    (TrapKind::Prefetch, c.ifsr().bits(), self.procs[cur].ctx.pc)
                };
                if let Some(flushed) = self.resolve_fault(fsr, addr) {
                    let domain = is_domain_fault(fsr);
                    if domain && flushed == fass::Flushed::TlbOnly {
                        self.counters.flush_free_collisions += 1;
                    }
                    if domain && kind == 4 {
                        let i = if flushed == fass::Flushed::Full {
                            FaultClock::FLUSHED
                        } else {
                            FaultClock::FLUSH_FREE
                        };
                        self.fault_clock.general = Some((i, clock::abort_stamp()));
                    }
                    return Wish::Next(Some(cur));
                }
                self.end(cur, Exit::Killed { trap, fsr, addr });
                Wish::Resume(None)
            }
            _ => {
                let addr = self.procs[cur].ctx.pc;
                self.end(
                    cur,
                    Exit::Killed {
                        trap: TrapKind::Undefined,
                        fsr: 0,
                        addr,
                    },
                );
                Wish::Resume(None)
            }
        }
    }

    /// The data-abort fast path under FASS, for the abort stamped `t0`
    /// ([`Kernel::abort_fast`] with the DFSR and FAR); a collision is timed
    /// ([`FaultClock`]).
    #[inline(always)]
    fn dabt_fast(&mut self, t0: u32) -> bool {
        let c = hw();
        let (fsr, far) = (c.dfsr().bits(), c.far().bits());
        match self.abort_fast(fsr, far) {
            Some(true) => {
                self.fault_clock.fast = Some(t0);
                true
            }
            Some(false) => true,
            None => false,
        }
    }

    /// The prefetch-abort fast path under FASS for the instruction at `pc`
    /// ([`Kernel::abort_fast`] with the IFSR and `pc`: an ARMv5 prefetch
    /// abort has no fault address register; `pc` is a virtual address,
    /// relocated by `fass` below 32 MiB as the FAR would be).
    #[inline(always)]
    fn pabt_fast(&mut self, pc: u32) -> bool {
        let fsr = hw().ifsr().bits();
        self.abort_fast(fsr, pc).is_some()
    }

    /// The abort fast path under FASS: a fault `fass` resolves without
    /// flushing anything ([`fass::Fass::resolve_fast`]: a fill, or a
    /// collision with a clean domain) is counted as [`Kernel::trap`] counts
    /// it and the current process resumes: no strategy dispatch, no
    /// table-pool borrow, no scheduling decision (the same process again,
    /// as `trap` + `finish` would decide). The generation stays valid
    /// (`resolve_fast` never changes it). `Some(domain fault)`: resolved;
    /// `None`: nothing was done, take the general path.
    #[inline(always)]
    fn abort_fast(&mut self, fsr: u32, addr: u32) -> Option<bool> {
        let cur = self.current?;
        let Strategy::Fass(fs) = &mut self.strategy else {
            return None;
        };
        let id = SpaceId(cur as u16);
        // SAFETY: as in `sync`: the current process runs with the registers
        // `fass` last wrote for it, in the current generation.
        if !fs.runs(id) && unsafe { fs.note_switched(id) }.is_err() {
            // After lean switches (see `sync`).
            return None;
        }
        // `black_box` only hides the pointer's origin: without it the
        // optimiser folds in the static's address and rebuilds it for each
        // field access (two more instructions each, measured under icount).
        let flushed = resolve_fast(core::hint::black_box(fs), fsr, addr)?;
        // `resolve_fast` resolves FS 0x5/0x7 (translation) and 0x9/0xB
        // (domain) only: bit 3 tells them apart.
        let domain = fsr & 0b1000 != 0;
        debug_assert_eq!(domain, is_domain_fault(fsr));
        if domain {
            self.counters.domain_faults += 1;
            if flushed == fass::Flushed::TlbOnly {
                self.counters.flush_free_collisions += 1;
            }
        } else {
            self.counters.fills += 1;
        }
        Some(domain)
    }
}

/// [`fass::Fass::resolve_fast`] on the kernel's FASS: what it flushed, if
/// it resolved the fault. Out of line, so that the manager is reached
/// through one base register (its hot fields at small offsets), not at
/// large offsets into the whole kernel record.
#[inline(never)]
fn resolve_fast(fs: &mut FassS, fsr: u32, far: u32) -> Option<fass::Flushed> {
    match fs.resolve_fast(&mut platform::counting(), fsr, far)? {
        Resolution::Resolved { flushed, .. } => Some(flushed),
        Resolution::NotFass(_) => None,
    }
}

/// Whether `fsr` is a section or page domain fault (FS 0x9 or 0xB):
/// [`FaultKind::Domain`] without decoding the rest.
#[inline]
fn is_domain_fault(fsr: u32) -> bool {
    let d = matches!(fsr & 0x40F, 0x9 | 0xB);
    debug_assert_eq!(
        d,
        matches!(FaultKind::from_status(fsr), FaultKind::Domain(_))
    );
    d
}

/// What a trap asks the scheduler for ([`Kernel::finish`]).
#[derive(Clone, Copy)]
pub(super) enum Wish {
    /// This process (a round-robin pick, or the current one again); `None`:
    /// round robin after the current one.
    Next(Option<usize>),
    /// The current process if it is ready and nothing is preferred, else
    /// the preferred one if ready, else round robin.
    Resume(Option<usize>),
}

/// Called by `__sched_enter` (`asm/trap.s`): picks the first process and
/// returns its frame.
#[no_mangle]
pub extern "C" fn sched_first_frame() -> *mut TrapFrame {
    match kernel() {
        Some(k) => {
            k.current = None;
            k.finish(Wish::Resume(None))
        }
        None => defmt::panic!("user mode entered without a kernel"),
    }
}

/// Called by `__sched_enter` if the SVC stack every trap runs on is not
/// 8-byte aligned (the AAPCS requires it at every call).
#[no_mangle]
pub extern "C" fn misaligned_svc_stack(sp: u32) -> ! {
    defmt::panic!("SVC stack pointer {=u32:#010x} is not 8-byte aligned", sp)
}

/// Called by `__user_trap_dabt` (`asm/trap.s`) for a data abort from user
/// mode, with r0-r12, sp_usr and lr_usr saved in the current process's
/// `frame` and the counter read at the abort (`t0`): a fault `fass`
/// resolves without a flush ([`Kernel::dabt_fast`]) answers `frame`, and
/// the same process resumes at once (`__return_fast`); otherwise the
/// answer is null and `__user_trap_dabt` completes the frame and calls
/// [`trap_entry`].
#[no_mangle]
pub extern "C" fn trap_dabt(frame: *mut TrapFrame, t0: u32) -> *mut TrapFrame {
    // SAFETY: a trap from user mode (see `trap_entry`).
    let k = unsafe { running_kernel() };
    if k.dabt_fast(t0) {
        return frame;
    }
    clock::enter_abort(t0);
    core::ptr::null_mut()
}

/// Called by `__user_trap_pabt` (`asm/trap.s`) for a prefetch abort from
/// user mode at `pc`, with r0-r12, sp_usr and lr_usr saved in the current
/// process's `frame` and the counter read at the transit's entry (`t0`):
/// a fault `fass` resolves without a flush ([`Kernel::pabt_fast`]) answers
/// `frame`, and the fetch is retried at once (`__return_fast`); otherwise
/// the answer is null and `__user_trap_pabt` completes the frame and calls
/// [`trap_entry`].
#[no_mangle]
pub extern "C" fn trap_pabt(frame: *mut TrapFrame, t0: u32, pc: u32) -> *mut TrapFrame {
    // SAFETY: a trap from user mode (see `trap_entry`).
    let k = unsafe { running_kernel() };
    if k.pabt_fast(pc) {
        return frame;
    }
    clock::enter_transit(t0);
    core::ptr::null_mut()
}

/// Called by the trap stubs (`asm/trap.s`) for every exception from user
/// mode, the user registers saved in the current process's frame; returns
/// the frame to resume.
#[no_mangle]
#[link_section = ".text.kswitch"]
pub extern "C" fn trap_entry(kind: u32) -> *mut TrapFrame {
    // SAFETY: a trap from user mode: user mode runs only inside
    // `Kernel::run` of the installed kernel.
    let k = unsafe { running_kernel() };
    let fast = match kind {
        2 => k.svc_fast(),
        6 => k.irq_fast(),
        _ => None,
    };
    if let Some(frame) = fast {
        return frame;
    }
    let w = k.trap(kind);
    k.finish(w)
}
