//! Tightly-coupled memory with `spm`: the frame table, TCM discovery (or
//! the board's emulated TCM), the kernel side of `spm`'s traits, and the
//! kernel's own page exchange.
//!
//! One concept per file:
//!
//! * this file: the constants, the TCM state of this boot ([`Tcm`],
//!   [`state`], [`is_set_up`]), the kernel job and the exchange timings;
//! * `setup`: where the banks are and the kernel mappings of them, once
//!   per boot ([`setup::init`]);
//! * `maps`: the reverse mappings (`Maps`, `spm`'s `Mappings`) and the
//!   reverse index behind them;
//! * `hw`: this CPU as `spm` drives it (`Hw`: physical copies through the
//!   uncached windows, cache and TLB maintenance, CP15);
//! * `irq`: the bounded interrupt windows (`Irq`, `kernel_irq`);
//! * `exchange`: one exchange step or cancel over all of the above, and
//!   why `spm`'s `unsafe` calls are sound here;
//! * `syscalls`, `ops`: the TCM system calls and `spm`'s page operations.
//!
//! What the state of this file rests on:
//!
//! * **Where TCM is** is decided once per boot by [`setup::init`]
//!   (`spm::tcm::plan`): per kind the CPU's TCM if it reports one, placed
//!   in a physical hole, else the board's emulated bank in RAM (QEMU). Bank
//!   bases and sizes are runtime values (up to [`MAX_BANK_SIZE`] each);
//!   everything here works from [`Tcm::layout`] and the reverse index.
//! * **Kernel mappings** (built once, before any address space exists, so
//!   the per-table strategies copy them into every space): SCTLR.S is set
//!   (AP=00 becomes privileged read-only); the MiB holding the switch/IPC
//!   page `.text.kswitch` is remapped with small pages (that page read-only);
//!   every TCM frame is mapped read-only at [`KTCM_VA`] (where the kernel
//!   page goes when it leaves ITCM) and read/write at [`KTCM_RW_VA`]
//!   (for copies); all RAM is mapped uncached at [`PHYS_WINDOW`] for
//!   copies. The two second-level tables are statics outside the table pool,
//!   so no strategy ever frees them.

mod exchange;
mod hw;
mod irq;
mod maps;
pub mod ops;
pub mod setup;
pub mod syscalls;

use crate::global::Global;
use mmu_armv5::descriptor::{AccessPermission, SmallPageDesc};
use mmu_armv5::size::Frame;
use mmu_armv5::PhysAddr;
use spm::tcm::{TcmBank, TcmKind, TcmLayout};
use spm::{Exchange, FrameState, FrameTable};

// The names `ops` and `syscalls` reach as `tcm::...`.
use exchange::{cancel, kernel_request, split, step};
use hw::Hw;
use irq::{set_irqs_enabled, take_kernel_irqs, Irq};
use maps::{note_mapper, user_entry, Maps};
use syscalls::{location_code, state_code};

/// The largest TCM bank (per kind) the kernel's tables hold: frame
/// descriptions, kernel windows, mapping records and allocation bitmaps are
/// sized for it; a bank's real size is a runtime value up to this.
pub const MAX_BANK_SIZE: u32 = 256 << 10;
/// Frames per bank slot (of the largest bank).
pub const BANK_FRAMES: usize = (MAX_BANK_SIZE / 4096) as usize;
/// Kernel view of the TCM frames, read-only: ITCM slot at +0, DTCM slot at
/// +[`MAX_BANK_SIZE`] (frames past a bank's size are unmapped).
pub const KTCM_VA: u32 = 0xFF00_0000;
/// Kernel view of the TCM frames, read/write (copies and zeroing), laid
/// out as [`KTCM_VA`]'s.
pub const KTCM_RW_VA: u32 = KTCM_VA + 2 * MAX_BANK_SIZE;
/// All RAM, uncached, for `spm`'s physical copies.
pub const PHYS_WINDOW: u32 = 0xD000_0000;
/// Where a process's TCM resource pages are mapped (kernel-only access;
/// `MAP` and `TCM_CREATE` there are refused). The user ABI names it too.
pub const USER_RES_VA: u32 = crate::abi::TCM_RES_VA;
/// TCM resource pages per process.
pub const RES_SLOTS: usize = 4;
/// Chunk of one exchange step (bytes copied or flushed per step).
pub const CHUNK: u32 = 4096;
/// Kernel mapping records: the switch page and every TCM frame's read-only view.
pub const KMAPS: usize = 1 + 2 * BANK_FRAMES;

extern "C" {
    static __kswitch_start: u8;
}

/// The switch/IPC page's kernel virtual address.
pub fn kswitch_va() -> u32 {
    // SAFETY: a linker-script symbol; only its address is used.
    core::ptr::from_ref(unsafe { &__kswitch_start }) as u32
}

static TCM: Global<Option<Tcm>> = Global::new(None);

/// A kernel mapping of a frame `spm` may move.
#[derive(Clone, Copy)]
pub struct KMap {
    /// Kernel virtual address.
    pub va: u32,
    /// The frame it maps now.
    pub pa: u32,
    pub(super) entry: *mut u32,
}

/// The kernel's own exchange (the switch page into ITCM and back), driven
/// one step per timer tick while processes run.
pub enum KernelJob {
    /// Not started.
    Idle,
    /// Moving the page into ITCM frame `frame` (mapped at `res` before).
    Out {
        /// The exchange.
        x: Exchange,
        /// The ITCM frame.
        frame: u32,
        /// The kernel view the ITCM frame had (the old frame's afterwards).
        res: u32,
    },
    /// The page runs from ITCM.
    In {
        /// The ITCM frame.
        frame: u32,
        /// The kernel view of the old frame.
        res: u32,
        /// Ticks spent in ITCM so far.
        ticks: u32,
        /// Process switches when it arrived.
        switches0: u32,
    },
    /// Moving it back.
    Back {
        /// The exchange.
        x: Exchange,
        /// The ITCM frame.
        frame: u32,
    },
    /// Done (or failed, see [`Tcm::job_error`]).
    Done,
}

/// Counters of the kernel job.
#[derive(Clone, Copy, Default)]
pub struct JobStats {
    /// Exchanges completed into ITCM.
    pub out: u32,
    /// Exchanges completed back to RAM.
    pub back: u32,
    /// The switch page's descriptor was seen mapping the ITCM frame.
    pub seen_in_itcm: bool,
    /// Process switches while the page was in ITCM.
    pub switches_in_itcm: u32,
    /// Steps taken.
    pub steps: u32,
    /// Longest masked window, in counter ticks.
    pub longest_window: u32,
    /// Ticks the page spent in ITCM while processes ran.
    pub ticks_in_itcm: u32,
    /// Finished after the processes ended (they were too quick).
    pub finished_late: bool,
}

/// Timing of one user exchange.
#[derive(Clone, Copy, Default)]
pub struct XTiming {
    /// Counter ticks inside the exchange's steps.
    pub ticks: u32,
    /// Longest masked window, in counter ticks.
    pub longest: u32,
    /// Steps.
    pub steps: u32,
    /// Masked windows.
    pub windows: u32,
    /// Times the exchange was preempted between steps.
    pub preempted: u32,
}

/// The TCM state of this boot.
pub struct Tcm {
    /// The frame table (all RAM and both TCM banks).
    pub table: FrameTable<'static, 4>,
    /// The banks in use.
    pub layout: TcmLayout,
    /// Whether any bank is the CPU's TCM (else both are the board's emulated banks).
    pub from_cpu: bool,
    pub(super) used: [u64; 2],
    /// Kernel mapping records.
    pub kmaps: [KMap; KMAPS],
    pub(super) wp: [Option<(*mut u32, AccessPermission)>; 8],
    pub(super) root: *mut u32,
    /// The kernel job.
    pub job: KernelJob,
    /// Its counters.
    pub job_stats: JobStats,
    /// Its error, if it failed.
    pub job_error: Option<spm::ExchangeError>,
}

/// The TCM state, once [`setup::init`] ran.
///
/// # Safety
/// While the returned reference is alive no other reference to the state
/// exists (single core, no re-entry: module docs): the caller holds it for
/// a bounded stretch that calls no other user of it.
pub unsafe fn state<'a>() -> Option<&'a mut Tcm> {
    // SAFETY: the caller's contract.
    unsafe { TCM.get_mut() }.as_mut()
}

/// Whether [`setup::init`] set the TCM state up.
pub fn is_set_up() -> bool {
    // SAFETY: the reference lives for this expression only, which reaches
    // no other user of the state.
    unsafe { state() }.is_some()
}

/// Makes the state [`setup::init`] built this boot's TCM state
/// and indexes its kernel mapping records (`home`: the switch page's frame).
pub(super) fn install(t: Tcm, home: u32) {
    maps::index(&t, home);
    // SAFETY: called once, before anything else reads `TCM`.
    unsafe { TCM.set(Some(t)) };
}

impl Tcm {
    fn bank(&self, kind: TcmKind) -> Option<TcmBank> {
        match kind {
            TcmKind::Instruction => self.layout.itcm,
            TcmKind::Data => self.layout.dtcm,
        }
    }

    /// Takes a free frame of `kind`.
    pub fn alloc(&mut self, kind: TcmKind) -> Option<u32> {
        let k = kind_index(kind);
        let bank = self.bank(kind)?;
        let free = (!self.used[k]).trailing_zeros() as usize;
        if free >= (bank.size() / 4096) as usize {
            return None;
        }
        self.used[k] |= 1 << free;
        Some(bank.base().as_u32() + (free as u32) * 4096)
    }

    /// Which bank `pa` lies in.
    pub fn kind_of(&self, pa: u32) -> Option<TcmKind> {
        self.layout
            .banks()
            .find(|b| pa.wrapping_sub(b.base().as_u32()) < b.size())
            .map(|b| b.kind())
    }

    /// Gives TCM frame `pa` back (a page resource again).
    pub fn free(&mut self, pa: u32) {
        if let Some(kind) = self.kind_of(pa) {
            note_mapper(pa, None);
            if let Some(b) = self.bank(kind) {
                let i = (pa - b.base().as_u32()) / 4096;
                self.used[kind_index(kind)] &= !(1 << i);
            }
            self.init_frame(pa, FrameState::Resource);
        }
    }

    /// Frames of both banks in use.
    pub fn in_use(&self) -> u32 {
        self.used[0].count_ones() + self.used[1].count_ones()
    }

    /// Write-protect records held (mappings an exchange took write access
    /// from and has not given back yet).
    pub fn protect_records(&self) -> usize {
        self.wp.iter().filter(|r| r.is_some()).count()
    }

    /// The kernel's read-only view of TCM frame `pa`.
    pub fn kernel_view(&self, pa: u32) -> Option<u32> {
        self.kmaps[1..]
            .iter()
            .position(|m| m.pa == pa)
            .map(|i| KTCM_VA + (i as u32) * 4096)
    }

    /// The kernel's first-level table (the CPD under FASS), in the linear map.
    pub fn root(&self) -> *mut u32 {
        self.root
    }

    /// The frame the switch page's descriptor maps now.
    pub fn kswitch_frame(&self) -> u32 {
        // SAFETY: the record's entry points into the static text table.
        let d = unsafe { self.kmaps[0].entry.read_volatile() };
        SmallPageDesc::word_frame(d).start().as_u32()
    }

    /// Records a user RAM frame's owner (or frees it: `None`).
    pub fn set_owner(&mut self, pa: u32, owner: Option<usize>) {
        note_mapper(pa, owner);
        let state = match owner.map(|o| spm::SpaceId::new(o as u16)) {
            Some(s) => FrameState::User(s),
            None if self.kind_of(pa).is_some() => FrameState::Resource,
            None => FrameState::Undefined,
        };
        self.init_frame(pa, state);
    }

    /// Puts the (movable) frame at `pa` into `state`. The frames this is
    /// called with are the kernel's own page-aligned frames of described
    /// regions, so it cannot fail; a debug build checks that.
    fn init_frame(&mut self, pa: u32, state: FrameState) {
        let r = Frame::from_start(PhysAddr::new(pa)).map(|f| self.table.init_range(f, state, true));
        debug_assert!(
            matches!(r, Ok(Ok(()))),
            "frame {pa:#x} is not a described frame"
        );
    }
}

/// The index of `kind`'s bank in [`Tcm`]'s per-bank tables.
fn kind_index(kind: TcmKind) -> usize {
    match kind {
        TcmKind::Instruction => 0,
        TcmKind::Data => 1,
    }
}
