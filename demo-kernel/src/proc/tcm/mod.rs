//! Tightly-coupled memory with `spm`: the frame table, TCM discovery (or
//! the board's emulated TCM), the kernel side of `spm`'s traits, and the
//! kernel's own page exchange.
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
//! * **Reverse mappings** ([`Maps`]): every user mapping of a frame is one
//!   of the kernel's page records (image, stack, `MAP` pages, TCM resource
//!   pages), in exactly one space (user pages are private; shared segments
//!   are 1 MiB sections and never exchanged); kernel mappings are the
//!   records in [`Tcm::kmaps`]. Descriptors are found kernel-side:
//!   per-table strategies through `TableSwitch::root_of`; FASS through the
//!   CPD entry of the page's MVA (`mva_of`), accepted only if it carries the
//!   space's domain (`domain_of`): FASS exposes no per-space directory, so
//!   the kernel first makes the caller's slots present in the CPD by
//!   touching them (a resolved fault, [`super::kernel::Kernel::touch`]).
//!   The CPD copy and the space's own directory share the second-level
//!   table, so one descriptor write changes both. The linear map and the
//!   physical window are physical views, not mappings in this sense.
//! * **Bounded windows**: [`Irq`] masks IRQs around `spm`'s masked steps
//!   and times each window with the 24 MHz counter; between steps the
//!   system call opens an interrupt window (`kernel_irq` takes the tick).
//! * **Why `spm`'s `unsafe` calls are sound here** ([`step`], [`cancel`],
//!   and `spm::ops::create_user_page`/`change_state` in `ops.rs`):
//!   the frame table describes this machine's RAM and TCM, and a frame it
//!   calls a page resource is a free frame of the user frame allocator or
//!   of a TCM bank (kernel code and data are never resources; the kernel's
//!   own page that moves is copied whole and re-mapped); no Rust reference
//!   points into user frames or TCM. [`Maps`] reports every mapping of a
//!   frame `spm` may move (the records above, one user mapping per private
//!   frame plus the kernel's records), its generation changes on every
//!   `note_mapper` (every user map and unmap; the kernel never changes a
//!   user mapping's access otherwise), and the kernel's IRQ handler
//!   (`kernel_irq`) changes no mapping. [`Hw`] is this CPU; [`Irq`] masks
//!   its IRQs (FIQs stay masked in every privileged mode).

pub mod ops;
pub mod setup;
pub mod syscalls;

use crate::board::Maint;
use crate::global::Global;
use core::marker::PhantomData;
use mmu_armv5::descriptor::{AccessPermission, CachePolicy, CoarseTableDesc, SmallPageDesc};
use mmu_armv5::irq;
use mmu_armv5::maint::{CacheMaintenance, LineOp, LineRange, RangeMaintenance};
use mmu_armv5::regs::{Cp15, Cp15Op, Cp15Reg, HwCp15};
use mmu_armv5::size::{Frame, PageSizeKind, Size4KiB};
use mmu_armv5::{ModifiedVirtAddr, PhysAddr, VirtAddr};
use spm::tcm::{TcmBank, TcmKind, TcmLayout};
use spm::{
    AddressSpace, Exchange, ExchangeRequest, FrameState, FrameTable, InterruptControl,
    LineMaintenance, Location, Mappings, PhysMemory, ReverseMapping, Rights, Translation,
};

use super::frames::{FRAMES_END, FRAMES_PHYS};
use super::kernel::Proc;
use super::platform::{counting_on, CountingCp15};
use super::strategy::{dispatch, Strategy, MAX_PROCS};
use super::timer;
use crate::mmu::phys_to_virt;

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

/// RAM frames the user frame allocator hands out.
const RAM_FRAMES: usize = ((FRAMES_END - FRAMES_PHYS) / 4096) as usize;
/// Frames with kernel mapping records: every TCM frame, then the switch
/// page's home frame.
const KFRAMES: usize = 2 * BANK_FRAMES + 1;
/// Frames in the reverse index: user RAM, then the [`KFRAMES`].
const RFRAMES: usize = RAM_FRAMES + KFRAMES;

/// The reverse index: for every frame `spm` may exchange, who maps it and
/// where its record is, answered in O(1) (user pages are private: at most
/// one user mapping per frame; kernel mappings exist only for TCM frames
/// and the switch page).
struct RIndex {
    /// The process that maps the frame (index + 1; 0 none).
    user: [u8; RFRAMES],
    /// Its page record (index into `kernel_pages ++ user_pages ++
    /// res_pages`, + 1; 0 not known yet: found on first use).
    rec: [u8; RFRAMES],
    /// The kernel mapping record (index into [`Tcm::kmaps`], + 1; 0 none):
    /// TCM frames and the switch page's home frame at first, any frame
    /// after exchanges (a record follows its mapping's frame).
    kmap: [u8; RFRAMES],
    /// Bank bases and sizes ([ITCM, DTCM]), the switch page's home frame.
    banks: [(u32, u32); 2],
    home: u32,
    /// Bumped whenever a user mapping is added or removed
    /// ([`Mappings::generation`]).
    generation: u32,
    /// The last two frames looked up ([`Maps::found`]): an exchange asks
    /// about the same two frames at every phase.
    hot: [Option<Found>; 2],
    /// Which of `hot` is replaced next.
    hot_next: usize,
}

/// The reverse index. Touched with IRQs masked (or from `kernel_irq`,
/// which never touches it) on one core; every user takes the reference for
/// one short expression or block that calls no other user of it, and never
/// holds two.
static RINDEX: Global<RIndex> = Global::new(RIndex {
    user: [0; RFRAMES],
    rec: [0; RFRAMES],
    kmap: [0; RFRAMES],
    banks: [(0, 0); 2],
    home: u32::MAX,
    generation: 0,
    hot: [None; 2],
    hot_next: 0,
});

impl RIndex {
    /// The slot among the [`KFRAMES`] of `pa`, if it has one.
    #[inline(always)]
    fn kslot(&self, pa: u32) -> Option<usize> {
        for (k, &(base, size)) in self.banks.iter().enumerate() {
            let off = pa.wrapping_sub(base);
            if off < size {
                return Some(k * BANK_FRAMES + (off / 4096) as usize);
            }
        }
        (pa == self.home).then_some(2 * BANK_FRAMES)
    }

    /// The reverse-index slot of `pa`, if it has one.
    #[inline(always)]
    fn slot(&self, pa: u32) -> Option<usize> {
        let i = (pa.wrapping_sub(FRAMES_PHYS) / 4096) as usize;
        if i < RAM_FRAMES {
            return Some(i);
        }
        self.kslot(pa).map(|k| RAM_FRAMES + k)
    }
}

/// Records that process `proc` maps frame `pa` (user pages are private:
/// one mapper per frame), or that nobody does.
pub fn note_mapper(pa: u32, proc: Option<usize>) {
    // SAFETY: `RINDEX`'s contract: the only reference, for this block.
    let r = unsafe { RINDEX.get_mut() };
    r.generation = r.generation.wrapping_add(1);
    r.hot = [None; 2];
    if let Some(i) = r.slot(pa) {
        r.user[i] = proc.map_or(0, |p| p as u8 + 1);
        r.rec[i] = 0;
    }
}

/// Page record `k` of `p` (`kernel_pages ++ user_pages ++ res_pages`).
fn record(p: &Proc, k: usize) -> Option<&super::kernel::Page> {
    let (nk, nu) = (p.kernel_pages.len(), p.user_pages.len());
    if k < nk {
        p.kernel_pages[k].as_ref()
    } else if k < nk + nu {
        p.user_pages[k - nk].as_ref()
    } else {
        p.res_pages.get(k - nk - nu)?.as_ref()
    }
}

/// [`record`], mutably.
fn record_mut(p: &mut Proc, k: usize) -> Option<&mut super::kernel::Page> {
    let (nk, nu) = (p.kernel_pages.len(), p.user_pages.len());
    if k < nk {
        p.kernel_pages[k].as_mut()
    } else if k < nk + nu {
        p.user_pages[k - nk].as_mut()
    } else {
        p.res_pages.get_mut(k - nk - nu)?.as_mut()
    }
}

/// Who maps a frame: its reverse-index slot, its user mapping (process,
/// page record index, virtual address) and its kernel mapping record.
#[derive(Clone, Copy)]
struct Who {
    slot: usize,
    user: Option<(usize, usize, u32)>,
    kmap: Option<usize>,
}

/// A frame's mappings as looked up once: who maps it and the descriptor
/// and MVA of its user mapping. Valid while the generation it was found
/// under is current and no swap moved the frame's mappings (a swap forgets
/// every [`Found`]): second-level tables never move (pinned), so a user
/// descriptor stays where it is while the mapping exists, also when FASS
/// takes the space's slot out of the CPD.
#[derive(Clone, Copy)]
struct Found {
    pa: u32,
    generation: u32,
    who: Who,
    entry: Option<(*mut u32, u32)>,
}

/// The user descriptor and kernel mapping record of `pa` if it is among
/// the frames looked up last (and still current).
fn hot_descriptors(pa: u32) -> Option<(Option<*mut u32>, Option<usize>)> {
    // SAFETY: `RINDEX`'s contract: the only reference, for this block.
    let r = unsafe { RINDEX.get_mut() };
    let g = r.generation;
    let h = r
        .hot
        .iter()
        .flatten()
        .find(|h| h.pa == pa && h.generation == g)?;
    Some((h.entry.map(|(e, _)| e), h.who.kmap))
}

/// Keeps `f` among the two frames looked up last.
fn remember(f: Found) {
    // SAFETY: `RINDEX`'s contract: the only reference, for this block.
    let r = unsafe { RINDEX.get_mut() };
    if let Some(h) = r.hot.iter_mut().flatten().find(|h| h.pa == f.pa) {
        *h = f;
        return;
    }
    r.hot[r.hot_next] = Some(f);
    r.hot_next ^= 1;
}

/// Who maps `pa`, from the reverse index (a page record is searched once,
/// then remembered).
fn who(procs: &[Proc; MAX_PROCS], pa: u32) -> Option<Who> {
    // SAFETY: `RINDEX`'s contract: the only reference, for this block.
    let r = unsafe { RINDEX.get_mut() };
    let slot = r.slot(pa)?;
    let kmap = r.kmap[slot].checked_sub(1).map(usize::from);
    let user = r.user[slot]
        .checked_sub(1)
        .map(usize::from)
        .and_then(|w| Some((w, procs.get(w).filter(|p| p.alive())?)))
        .and_then(|(w, p)| {
            if let Some(k) = r.rec[slot].checked_sub(1).map(usize::from) {
                if let Some(pg) = record(p, k).filter(|pg| pg.pa == pa) {
                    return Some((w, k, pg.va));
                }
            }
            let k = (0..RECORDS).find(|&k| record(p, k).is_some_and(|pg| pg.pa == pa))?;
            r.rec[slot] = k as u8 + 1;
            Some((w, k, record(p, k)?.va))
        });
    Some(Who { slot, user, kmap })
}

/// Records per process (`kernel_pages ++ user_pages ++ res_pages`).
const RECORDS: usize = super::kernel::KERNEL_PAGES + super::kernel::USER_PAGES + RES_SLOTS;

/// Ticks taken by `kernel_irq` since the last [`take_kernel_irqs`].
static KIRQ: Global<u32> = Global::new(0);

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
    // SAFETY: `RINDEX`'s contract: the only reference, for this block.
    let r = unsafe { RINDEX.get_mut() };
    r.banks =
        [t.layout.itcm, t.layout.dtcm].map(|b| b.map_or((0, 0), |b| (b.base().as_u32(), b.size())));
    r.home = home;
    for (j, k) in t.kmaps.iter().enumerate() {
        if let Some(i) = r.slot(k.pa) {
            r.kmap[i] = j as u8 + 1;
        }
    }
    // SAFETY: called once, before anything else reads `TCM`.
    unsafe { TCM.set(Some(t)) };
}

/// The access permission of the first 1 KiB of the small page `desc`
/// (the kernel maps every page with one permission for all four).
#[inline(always)]
fn ap_of(desc: u32) -> Option<AccessPermission> {
    SmallPageDesc::from_bits(desc).map(|s| s.ap.get(0))
}

/// Cleans the D-cache line holding the descriptor at `p` (no drain), so
/// the table walker sees it.
#[inline(always)]
fn clean_line(p: *mut u32) {
    // SAFETY: called by `spm`'s mapping callbacks in a TCM call or job of
    // the installed kernel, whose `Hw` holds the kernel's handle and is not
    // in use meanwhile (`kernel::trap_cp15`); dropped on return.
    let mut m = crate::board::maint(unsafe { super::kernel::trap_cp15() });
    crate::board::clean_dcache_entry(&mut m, ModifiedVirtAddr::new(p as u32));
}

/// Drains the write buffer.
#[inline(always)]
fn drain() {
    // SAFETY: as in `clean_line`.
    crate::board::maint(unsafe { super::kernel::trap_cp15() }).drain_write_buffer();
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

/// The platform `spm` drives: the counting CP15, ARM926 maintenance, and
/// physical copies through the uncached windows; for as long as it lives
/// it borrows the kernel's CP15 handle mutably and stands in for it.
pub struct Hw<'c>(Maint<CountingCp15>, PhantomData<&'c mut HwCp15>);

impl<'c> Hw<'c> {
    /// The hardware, over the kernel's CP15 handle `cp15`.
    pub fn new(cp15: &'c mut HwCp15) -> Hw<'c> {
        let _ = cp15; // held by the lifetime
                      // SAFETY: a zero-sized stand-in for `cp15`, which the returned
                      // value borrows mutably for as long as it holds the stand-in:
                      // the two are never used at once.
        let c = unsafe { HwCp15::new() };
        Hw(counting_on(c), PhantomData)
    }
}

fn window(pa: u32) -> *mut u32 {
    // SAFETY: `RINDEX`'s contract: the only reference, for this block.
    for (k, &(base, size)) in unsafe { RINDEX.get_mut() }.banks.iter().enumerate() {
        let off = pa.wrapping_sub(base);
        if off < size {
            return (KTCM_RW_VA + k as u32 * MAX_BANK_SIZE + off) as *mut u32;
        }
    }
    (PHYS_WINDOW + pa.wrapping_sub(crate::board::LAYOUT.ram_phys)) as *mut u32
}

/// `$pairs` copies of an eight-word `LDMIA`/`STMIA` pair (32 bytes), as one
/// assembler string. Written out rather than with `.rept`: LLVM sizes
/// inline assembly by its statements, and an unexpanded `.rept` makes it
/// misplace literal pools (out-of-range fixups).
macro_rules! ldm_stm {
    (1) => {
        concat!(
            "ldmia {s}!, {{r3, r4, r5, r7, r8, r9, r10, r12}}\n",
            "stmia {d}!, {{r3, r4, r5, r7, r8, r9, r10, r12}}\n"
        )
    };
    (2) => {
        concat!(ldm_stm!(1), ldm_stm!(1))
    };
    (4) => {
        concat!(ldm_stm!(2), ldm_stm!(2))
    };
    (8) => {
        concat!(ldm_stm!(4), ldm_stm!(4))
    };
    (16) => {
        concat!(ldm_stm!(8), ldm_stm!(8))
    };
    (32) => {
        concat!(ldm_stm!(16), ldm_stm!(16))
    };
}

/// Copies `len` bytes from `s` to `d` (word-aligned pointers into the
/// kernel's uncached windows), `$pairs` eight-word `LDM`/`STM` pairs per
/// loop iteration; `len` is a non-zero multiple of `$pairs * 32`.
macro_rules! copy_loop {
    ($s:ident, $d:ident, $len:ident, $pairs:tt) => {
        // SAFETY: `spm` passes frame-internal ranges of described RAM or
        // TCM; both windows are uncached kernel read/write mappings, the
        // pointers word aligned and `$len` a non-zero multiple of the bytes
        // per iteration; only the named registers are changed.
        unsafe {
            core::arch::asm!(
                "2:",
                ldm_stm!($pairs),
                "cmp {s}, {end}",
                "bne 2b",
                s = inout(reg) $s => _,
                d = inout(reg) $d => _,
                end = in(reg) ($s as u32).wrapping_add($len),
                out("r3") _, out("r4") _, out("r5") _, out("r7") _,
                out("r8") _, out("r9") _, out("r10") _, out("r12") _,
                options(nostack)
            )
        }
    };
}

impl PhysMemory for Hw<'_> {
    fn copy(&mut self, dst: PhysAddr, src: PhysAddr, len: u32) {
        let (d, s) = (window(dst.as_u32()), window(src.as_u32()));
        // A 4 KiB chunk (the kernel's `CHUNK`) is four iterations of 32
        // pairs: 256 `LDM`/`STM` and 8 loop instructions (with 8 pairs per
        // iteration the loop was 32 of 288). 256 bytes of code.
        if len == 0 {
        } else if len.is_multiple_of(1024) {
            copy_loop!(s, d, len, 32);
        } else if len.is_multiple_of(256) {
            copy_loop!(s, d, len, 8);
        } else if len.is_multiple_of(128) {
            copy_loop!(s, d, len, 4);
        } else if len.is_multiple_of(64) {
            copy_loop!(s, d, len, 2);
        } else {
            for i in 0..(len / 4) as usize {
                // SAFETY: `spm` passes frame-internal ranges of described RAM
                // or TCM; both windows are uncached kernel read/write mappings.
                unsafe { d.add(i).write_volatile(s.add(i).read_volatile()) };
            }
        }
    }

    fn zero(&mut self, dst: PhysAddr, len: u32) {
        let d = window(dst.as_u32());
        for i in 0..(len / 4) as usize {
            // SAFETY: as in `copy`.
            unsafe { d.add(i).write_volatile(0) };
        }
    }
}

/// `[mva, mva + len)` as whole lines.
#[inline(always)]
fn lines(mva: ModifiedVirtAddr, len: u32) -> LineRange {
    // SAFETY: `mva` is line aligned and `len` a multiple of the line in
    // every call `spm` makes, and no range crosses a 4 KiB frame
    // (`LineMaintenance`'s promise), so the range is whole lines below 4 GiB.
    unsafe { LineRange::new_unchecked(mva, len) }
}

/// One unrolled `MCR` loop per range (`mmu_armv5`'s [`RangeMaintenance`]
/// for the ARM926EJ-S: sixteen lines per loop iteration for a 4 KiB chunk).
impl LineMaintenance for Hw<'_> {
    fn clean_dcache_lines(&mut self, mva: ModifiedVirtAddr, len: u32) {
        self.0.clean_dcache_lines(lines(mva, len));
    }

    unsafe fn invalidate_dcache_lines(&mut self, mva: ModifiedVirtAddr, len: u32) {
        // SAFETY: forwarded; the caller upholds the contract for the range.
        unsafe { self.0.invalidate_dcache_lines(lines(mva, len)) };
    }

    /// Cleans and invalidates the range's D-cache lines one by one, and
    /// invalidates the whole I-cache with one `MCR` instead of each of the
    /// range's I-cache lines (the trait allows more than the range).
    ///
    /// Trade-off: per line, a 4 KiB page is 128 more `MCR`s and `ADD`s in
    /// every flush of every cacheable mapping; the whole invalidate costs
    /// one instruction, and afterwards every process refills the I-cache
    /// lines it still needs (at most the I-cache's size, 4 KiB on QEMU's
    /// ARM926, 4-128 KiB on silicon), once, spread over its next fetches
    /// and never inside a masked window. Exchanges are rare next to
    /// instruction fetches, so the refills cost less than the `MCR` loop
    /// for I-caches up to a few times the page size; a kernel with a large
    /// I-cache and frequent exchanges would go back to the line loop.
    fn flush_lines(&mut self, mva: ModifiedVirtAddr, len: u32) {
        self.0.clean_invalidate_dcache_lines(lines(mva, len));
        // The whole I-cache in one operation (counted with the strategies'
        // I-cache invalidations, so `RESULT iflush` stays exact).
        self.0.invalidate_icache();
    }
}

impl CacheMaintenance for Hw<'_> {
    const DCACHE_LINE: u32 = <Maint<CountingCp15> as CacheMaintenance>::DCACHE_LINE;
    fn clean_invalidate_dcache(&mut self) {
        self.0.clean_invalidate_dcache()
    }
    fn invalidate_icache(&mut self) {
        self.0.invalidate_icache()
    }
    fn clean_dcache_line(&mut self, mva: ModifiedVirtAddr) {
        self.0.clean_dcache_line(mva)
    }
    fn clean_invalidate_dcache_line(&mut self, mva: ModifiedVirtAddr) {
        self.0.clean_invalidate_dcache_line(mva)
    }
    unsafe fn invalidate_dcache_line(&mut self, mva: ModifiedVirtAddr) {
        // SAFETY: forwarded; the caller upholds the contract.
        unsafe { self.0.invalidate_dcache_line(mva) }
    }
    fn invalidate_icache_line(&mut self, mva: ModifiedVirtAddr) {
        self.0.invalidate_icache_line(mva)
    }
    fn drain_write_buffer(&mut self) {
        self.0.drain_write_buffer()
    }
    fn invalidate_tlb(&mut self) {
        self.0.invalidate_tlb()
    }
    /// One `MCR`, counted in the platform's `tlb_entries` like every other
    /// TLB entry invalidation (the kernel's reported counters are exact).
    #[inline(always)]
    fn invalidate_tlb_entry(&mut self, mva: ModifiedVirtAddr) {
        self.0.invalidate_tlb_entry(mva)
    }
}

impl Cp15 for Hw<'_> {
    fn read(&self, reg: Cp15Reg) -> u32 {
        self.0.read(reg)
    }
    unsafe fn write(&mut self, reg: Cp15Reg, value: u32) {
        // SAFETY: forwarded; the caller upholds the contract.
        unsafe { self.0.write(reg, value) }
    }
    unsafe fn op(&mut self, op: Cp15Op, value: u32) {
        // SAFETY: forwarded; the caller upholds the contract.
        unsafe { self.0.op(op, value) }
    }
    unsafe fn op_lines(&mut self, op: LineOp, range: LineRange) {
        // SAFETY: forwarded; the caller upholds the contract.
        unsafe { self.0.op_lines(op, range) }
    }
    fn test_clean_invalidate_dcache(&mut self) -> bool {
        self.0.test_clean_invalidate_dcache()
    }
    fn test_clean_dcache(&mut self) -> bool {
        self.0.test_clean_dcache()
    }
}

/// Enables (or masks again) IRQs in SVC mode around an exchange step: a
/// tick is then taken by `kernel_irq` whenever `spm` has not masked it.
/// FIQs stay masked. Both are compiler barriers (`mmu_armv5::irq`): no
/// memory access moves across the change of the mask.
pub fn set_irqs_enabled(on: bool) {
    if on {
        // SAFETY: called between exchange steps, outside any masked
        // section; the kernel's IRQ handler for SVC mode (`kernel_irq`)
        // only acknowledges the timer and counts.
        unsafe { irq::unmask_irq() };
    } else {
        let _ = irq::mask();
    }
}

/// Ticks `kernel_irq` took since the last call.
pub fn take_kernel_irqs() -> u32 {
    // SAFETY: single core; called with IRQs masked.
    unsafe { core::mem::replace(&mut *KIRQ.as_ptr(), 0) }
}

/// IRQ taken in SVC mode (`asm/vectors.s`): inside a kernel interrupt
/// window. Acknowledges the timer and counts the tick.
#[no_mangle]
pub extern "C" fn kernel_irq() {
    if timer::ack() {
        // SAFETY: IRQ mode, IRQs masked; the interrupted code reads the
        // counter only with IRQs masked.
        unsafe { *KIRQ.as_ptr() += 1 };
    }
}

/// `spm`'s interrupt control: masks IRQs and times every masked window.
#[derive(Default)]
pub struct Irq {
    t0: u32,
    /// Longest window so far, in counter ticks.
    pub longest: u32,
    /// Windows opened.
    pub windows: u32,
}

impl InterruptControl for Irq {
    fn disable(&mut self) -> bool {
        let was = !irq::mask().irq_masked();
        self.windows += 1;
        self.t0 = timer::now();
        was
    }

    fn restore(&mut self, was_enabled: bool) {
        let dt = timer::now().wrapping_sub(self.t0);
        self.longest = self.longest.max(dt);
        if was_enabled {
            // SAFETY: ends the window `disable` opened with IRQs enabled
            // before it (spm pairs the calls); the handler is `kernel_irq`.
            unsafe { irq::unmask_irq() };
        }
    }
}

/// The kernel side of `spm`'s [`Mappings`] over the process table and the strategy.
pub struct Maps<'a> {
    /// Processes (their page records).
    pub procs: &'a mut [Proc; MAX_PROCS],
    /// The strategy (MVAs, tables, domains).
    pub strategy: &'a Strategy,
    /// Kernel mapping records.
    pub kmaps: &'a mut [KMap; KMAPS],
    wp: &'a mut [Option<(*mut u32, AccessPermission)>; 8],
    root: *mut u32,
}

impl<'a> Maps<'a> {
    /// Reverse mappings over `procs` and `strategy`, with `t`'s kernel records.
    pub fn new(procs: &'a mut [Proc; MAX_PROCS], strategy: &'a Strategy, t: &'a mut Tcm) -> Self {
        Maps {
            procs,
            strategy,
            kmaps: &mut t.kmaps,
            wp: &mut t.wp,
            root: t.root,
        }
    }
}

/// One step of `x` over this kernel's frame table, mappings and CPU.
pub fn step(
    x: &mut Exchange,
    procs: &mut [Proc; MAX_PROCS],
    strategy: &Strategy,
    t: &mut Tcm,
    hw: &mut Hw,
    irq: &mut Irq,
) -> Result<spm::Progress, spm::ExchangeError> {
    let (table, tt) = split(t);
    let mut maps = Maps::new(procs, strategy, tt);
    // SAFETY: this kernel's frame table, mappings, CPU and interrupt mask
    // (see the module docs, "why `spm`'s unsafe calls are sound here").
    unsafe { x.step(table, &mut maps, hw, irq) }
}

/// Cancels `x` (see `spm::Exchange::cancel`): the pages exchanged.
pub fn cancel(
    x: &mut Exchange,
    procs: &mut [Proc; MAX_PROCS],
    strategy: &Strategy,
    t: &mut Tcm,
    hw: &mut Hw,
) -> Result<u32, spm::ExchangeError> {
    let (table, tt) = split(t);
    let mut maps = Maps::new(procs, strategy, tt);
    // SAFETY: as in `step`.
    unsafe { x.cancel(table, &mut maps, hw, &mut Irq::default()) }
}

/// Split borrows of a TCM state for an exchange step.
pub fn split(t: &mut Tcm) -> (&mut FrameTable<'static, 4>, &mut Tcm) {
    let p: *mut Tcm = t;
    // SAFETY: `Maps::new` uses only `kmaps`, `wp` and `root`, never `table`:
    // the two borrows are disjoint.
    unsafe { (&mut (*p).table, &mut *p) }
}

/// The second-level descriptor of `va` in user space `space`, and its MVA.
pub fn user_entry(
    strategy: &Strategy,
    root: *mut u32,
    space: usize,
    va: u32,
) -> Option<(*mut u32, u32)> {
    let id = fass::SpaceId(space as u16);
    let mva = dispatch!(strategy, s => fass::SwitchStrategy::mva_of(s, id, VirtAddr::new(va)))
        .ok()?
        .as_u32();
    let slot = (mva >> 20) as usize;
    let coarse = match strategy {
        Strategy::Fass(f) => {
            // SAFETY: `root` is the kernel's (the CPD's) 16 KiB table in the linear map.
            let e = unsafe { root.add(slot).read_volatile() };
            let dom = f.domain_of(id).ok()??;
            CoarseTableDesc::from_bits(e).filter(|c| c.domain == dom)?
        }
        Strategy::Table(t) => {
            let r = t.root_of(id).ok()?.as_u32();
            // SAFETY: the space's first-level table, pool memory in the linear map.
            let e = unsafe { (phys_to_virt(r) as *const u32).add(slot).read_volatile() };
            CoarseTableDesc::from_bits(e)?
        }
    };
    let l2 = phys_to_virt(coarse.table.start().as_u32()) as *mut u32;
    // SAFETY: a coarse table has 256 entries; the index is below 256.
    let e = unsafe { l2.add(((mva >> 12) & 0xFF) as usize) };
    Some((e, mva))
}

impl Maps<'_> {
    /// The page record and kernel mapping record of `w` now map `to`.
    fn retarget_records(&mut self, w: Option<Who>, to: u32) {
        let Some(w) = w else { return };
        if let Some(pg) = w
            .user
            .and_then(|(p, k, _)| record_mut(&mut self.procs[p], k))
        {
            pg.pa = to;
        }
        if let Some(m) = w.kmap.and_then(|k| self.kmaps.get_mut(k)) {
            m.pa = to;
        }
    }
}

/// A placeholder for arrays of mappings.
const NO_MAPPING: ReverseMapping = ReverseMapping {
    space: AddressSpace::Kernel,
    mva: ModifiedVirtAddr::new(0),
    writable: false,
    cached: false,
};

fn user_space(i: usize) -> AddressSpace {
    // Process indices are below `MAX_PROCS` (64), far inside spm's 12 bits.
    AddressSpace::User(spm::SpaceId::new(i as u16))
}

fn kind_index(kind: TcmKind) -> usize {
    match kind {
        TcmKind::Instruction => 0,
        TcmKind::Data => 1,
    }
}

impl Maps<'_> {
    /// Who maps frame `pa` and where its user descriptor is: from the two
    /// frames looked up last, else through the reverse index (O(1)).
    fn found(&self, pa: u32) -> Option<Found> {
        let (generation, hit) = {
            // SAFETY: `RINDEX`'s contract: the only reference, for this block.
            let r = unsafe { RINDEX.get_mut() };
            let g = r.generation;
            let hit = r
                .hot
                .iter()
                .flatten()
                .find(|h| h.pa == pa && h.generation == g)
                .copied();
            (g, hit)
        };
        if hit.is_some() {
            return hit;
        }
        let w = who(self.procs, pa)?;
        let entry = w
            .user
            .and_then(|(i, _, va)| user_entry(self.strategy, self.root, i, va));
        let f = Found {
            pa,
            generation,
            who: w,
            entry,
        };
        if w.user.is_none() || entry.is_some() {
            remember(f);
        }
        Some(f)
    }

    /// Every mapping of a frame: (space, descriptor, MVA).
    fn each(&self, found: Option<Found>, mut f: impl FnMut(AddressSpace, *mut u32, u32)) {
        let Some(w) = found else { return };
        if let Some((i, _, va)) = w.who.user {
            match w.entry {
                Some((e, mva)) => f(user_space(i), e, mva),
                None => defmt::error!("no descriptor for {=u32:#x} of process {=usize}", va, i),
            }
        }
        if let Some(k) = w.who.kmap.and_then(|k| self.kmaps.get(k)) {
            f(AddressSpace::Kernel, k.entry, k.va);
        }
    }

    /// The kernel mapping record of kernel virtual page `va`.
    fn kmap_at(&self, va: u32) -> Option<&KMap> {
        if va == self.kmaps[0].va {
            return Some(&self.kmaps[0]);
        }
        let i = (va.wrapping_sub(KTCM_VA) / 4096) as usize;
        self.kmaps.get(1 + i).filter(|k| k.va == va)
    }
}

/// Whether `space` may write through the small page `desc`.
fn writable(space: AddressSpace, desc: u32) -> bool {
    ap_of(desc).is_some_and(|ap| ap.allows_write(matches!(space, AddressSpace::Kernel)))
}

/// The descriptor's C bit: the caches may hold lines of the mapping.
fn cacheable(desc: u32) -> bool {
    CachePolicy::from_descriptor(desc).cacheable()
}

impl Mappings for Maps<'_> {
    fn generation(&self) -> Option<u32> {
        // User mappings are added and removed only with a `note_mapper`,
        // and never given write access except by `spm`; kernel mapping
        // records never change except through `swap`. A space's FCSE PID
        // (its MVAs) changes only through its own calls, and a process is
        // blocked in its exchange call until it ends (`State::InTcm`).
        // SAFETY: `RINDEX`'s contract: the only reference, for this block.
        Some(unsafe { RINDEX.get_mut() }.generation)
    }

    fn translate(&self, space: AddressSpace, va: VirtAddr) -> Option<Translation> {
        let page = va.as_u32() & !0xFFF;
        let (pa, entry) = match space {
            AddressSpace::Kernel => {
                let k = self.kmap_at(page)?;
                (k.pa, k.entry)
            }
            AddressSpace::User(s) => {
                let i = usize::from(s.get());
                self.procs.get(i).filter(|p| p.alive())?;
                let (e, mva) = user_entry(self.strategy, self.root, i, page)?;
                // SAFETY: a live second-level descriptor.
                let d = unsafe { e.read_volatile() };
                let pa = SmallPageDesc::word_frame(d).start().as_u32();
                // Only the process's own page records are pages here.
                let w = who(self.procs, pa)?;
                let (p, _, rva) = w.user?;
                if (p, rva) != (i, page) {
                    return None;
                }
                // An exchange asks next for this frame's mappings: keep
                // what was found.
                remember(Found {
                    pa,
                    // SAFETY: `RINDEX`'s contract: the only reference, for this block.
                    generation: unsafe { RINDEX.get_mut() }.generation,
                    who: w,
                    entry: Some((e, mva)),
                });
                (pa, e)
            }
        };
        // SAFETY: `entry` is a live second-level descriptor.
        let d = unsafe { entry.read_volatile() };
        if SmallPageDesc::from_bits(d).is_none_or(|s| s.frame.start().as_u32() != pa) {
            return None;
        }
        Some(Translation {
            page: PhysAddr::new(pa),
            size: PageSizeKind::Small,
            writable: writable(space, d),
        })
    }

    fn for_each_mapping(
        &self,
        page: PhysAddr,
        size: PageSizeKind,
        f: &mut dyn FnMut(&ReverseMapping),
    ) {
        let mut out = [NO_MAPPING; 2];
        let n = self.collect_mappings(page, size, &mut out);
        out[..n.min(2)].iter().for_each(f);
    }

    fn collect_mappings(
        &self,
        page: PhysAddr,
        size: PageSizeKind,
        out: &mut [ReverseMapping],
    ) -> usize {
        if size != PageSizeKind::Small {
            return 0;
        }
        let pa = page.as_u32();
        let found = {
            // SAFETY: `RINDEX`'s contract: the only reference, for this block.
            let r = unsafe { RINDEX.get_mut() };
            let g = r.generation;
            match r
                .hot
                .iter()
                .flatten()
                .find(|h| h.pa == pa && h.generation == g)
            {
                Some(h) => (h.who.user, h.who.kmap, h.entry),
                None => match self.found(pa) {
                    Some(f) => (f.who.user, f.who.kmap, f.entry),
                    None => return 0,
                },
            }
        };
        let (user, kmap, entry) = found;
        let mut n = 0;
        let mut put = |m: ReverseMapping| {
            if let Some(o) = out.get_mut(n) {
                *o = m;
            }
            n += 1;
        };
        if let Some((i, _, va)) = user {
            let space = user_space(i);
            // Unknown descriptor: reported writable and cacheable, so it is
            // never skipped by the protection or the maintenance (and the
            // error is logged there).
            put(match entry {
                Some((e, mva)) => {
                    // SAFETY: a live descriptor.
                    let d = unsafe { e.read_volatile() };
                    ReverseMapping {
                        space,
                        mva: ModifiedVirtAddr::new(mva),
                        writable: writable(space, d),
                        cached: cacheable(d),
                    }
                }
                None => ReverseMapping {
                    space,
                    mva: ModifiedVirtAddr::new(va),
                    writable: true,
                    cached: true,
                },
            });
        }
        if let Some(k) = kmap.and_then(|k| self.kmaps.get(k)) {
            // SAFETY: a live descriptor in a static table.
            let d = unsafe { k.entry.read_volatile() };
            put(ReverseMapping {
                space: AddressSpace::Kernel,
                mva: ModifiedVirtAddr::new(k.va),
                writable: writable(AddressSpace::Kernel, d),
                cached: cacheable(d),
            });
        }
        n
    }

    fn write_protect(&mut self, page: PhysAddr, size: PageSizeKind) {
        if size != PageSizeKind::Small {
            return;
        }
        // The descriptors: from the frames looked up last when possible
        // (this runs inside `spm`'s masked window).
        let (user, kmap) = match hot_descriptors(page.as_u32()) {
            Some(x) => x,
            None => match self.found(page.as_u32()) {
                Some(f) => (f.entry.map(|(e, _)| e), f.who.kmap),
                None => return,
            },
        };
        let kentry = kmap.and_then(|k| self.kmaps.get(k)).map(|k| k.entry);
        let mut n = self.wp.iter().take_while(|s| s.is_some()).count();
        for (e, kernel) in [(user, false), (kentry, true)] {
            let Some(e) = e else { continue };
            // SAFETY: a live descriptor.
            let d = unsafe { e.read_volatile() };
            let space = if kernel {
                AddressSpace::Kernel
            } else {
                user_space(0)
            };
            if !writable(space, d) {
                continue;
            }
            let Some(slot) = self.wp.get_mut(n) else {
                defmt::error!("write-protect records full");
                continue;
            };
            // Users keep read access; the kernel view becomes read-only (SCTLR.S).
            let ro = if kernel {
                AccessPermission::NoneOrRom
            } else {
                AccessPermission::PrivRwUserRo
            };
            let Some(ap) = ap_of(d) else { continue };
            // SAFETY: as above; `spm` invalidates the TLB entry.
            unsafe { e.write_volatile(SmallPageDesc::word_with_ap(d, ro)) };
            clean_line(e);
            *slot = Some((e, ap));
            n += 1;
        }
        drain();
    }

    fn restore_write(&mut self, page: PhysAddr, size: PageSizeKind) {
        if size != PageSizeKind::Small {
            return;
        }
        // The records are packed at the front of `wp`.
        let mut any = false;
        let mut i = 0;
        while let Some(&Some((e, ap))) = self.wp.get(i) {
            // SAFETY: a live descriptor recorded by `write_protect`.
            let d = unsafe { e.read_volatile() };
            if SmallPageDesc::word_frame(d).start() != page {
                i += 1;
                continue;
            }
            // SAFETY: as above; `spm` invalidates the TLB entry.
            unsafe { e.write_volatile(SmallPageDesc::word_with_ap(d, ap)) };
            clean_line(e);
            any = true;
            let last = self.wp.iter().take_while(|s| s.is_some()).count() - 1;
            self.wp[i] = self.wp[last];
            self.wp[last] = None;
        }
        if any {
            drain();
        }
    }

    /// The descriptors only (inside `spm`'s masked window); the records
    /// follow in [`Mappings::swapped`].
    #[inline(always)]
    fn swap(&mut self, a: PhysAddr, b: PhysAddr, size: PageSizeKind) {
        if size != PageSizeKind::Small {
            return;
        }
        let (fa, fb) = (Frame::<Size4KiB>::containing(a), Frame::containing(b));
        let (a, b) = (a.as_u32(), b.as_u32());
        let retarget = |e: *mut u32, to: Frame<Size4KiB>| {
            // SAFETY: a live descriptor; interrupts are masked (spm's contract).
            unsafe { e.write_volatile(SmallPageDesc::word_with_frame(e.read_volatile(), to)) };
            clean_line(e);
        };
        // Both frames were looked up when the exchange collected their
        // mappings: take the descriptors straight from those records.
        let fast = {
            // SAFETY: `RINDEX`'s contract: the only reference, for this block.
            let r = unsafe { RINDEX.get_mut() };
            let g = r.generation;
            let hit = |pa: u32| {
                r.hot
                    .iter()
                    .flatten()
                    .find(|h| h.generation == g && h.pa == pa)
            };
            match (hit(a), hit(b)) {
                (Some(ha), Some(hb)) if a != b => {
                    for (h, to) in [(ha, fb), (hb, fa)] {
                        if let Some((e, _)) = h.entry {
                            retarget(e, to);
                        }
                        if let Some(k) = h.who.kmap.and_then(|k| self.kmaps.get(k)) {
                            retarget(k.entry, to);
                        }
                    }
                    true
                }
                _ => false,
            }
        };
        if !fast {
            // Collect first: the lookups must see the descriptors unchanged.
            let mut es = [(core::ptr::null_mut::<u32>(), fa); 4];
            let mut n = 0;
            for (f, to) in [(self.found(a), fb), (self.found(b), fa)] {
                self.each(f, |_, e, _| {
                    if n < es.len() {
                        es[n] = (e, to);
                        n += 1;
                    }
                });
            }
            for &(e, to) in &es[..n] {
                retarget(e, to);
            }
        }
        drain();
    }

    /// The page records, kernel mapping records and reverse index follow
    /// the descriptors [`Mappings::swap`] changed (nothing reads them from
    /// an interrupt handler).
    #[inline(always)]
    fn swapped(&mut self, a: PhysAddr, b: PhysAddr, size: PageSizeKind) {
        if size != PageSizeKind::Small {
            return;
        }
        let (a, b) = (a.as_u32(), b.as_u32());
        let (ia, ib) = {
            // SAFETY: `RINDEX`'s contract: the only reference, for this block.
            let r = unsafe { RINDEX.get_mut() };
            let g = r.generation;
            let (mut ia, mut ib) = (None, None);
            for (i, h) in r.hot.iter().enumerate() {
                if let Some(h) = h.as_ref().filter(|h| h.generation == g) {
                    if h.pa == a {
                        ia = Some(i);
                    } else if h.pa == b {
                        ib = Some(i);
                    }
                }
            }
            (ia, ib)
        };
        let (wa, wb) = match (ia, ib) {
            (Some(ia), Some(ib)) if ia != ib => {
                // SAFETY: `RINDEX`'s contract: the only reference, for this block.
                let r = unsafe { RINDEX.get_mut() };
                (r.hot[ia].map(|h| h.who), r.hot[ib].map(|h| h.who))
            }
            _ => (self.found(a).map(|f| f.who), self.found(b).map(|f| f.who)),
        };
        self.retarget_records(wa, b);
        self.retarget_records(wb, a);
        // SAFETY: `RINDEX`'s contract: the only reference, for this block.
        let r = unsafe { RINDEX.get_mut() };
        if let (Some(i), Some(j)) = (wa.map(|w| w.slot), wb.map(|w| w.slot)) {
            r.user.swap(i, j);
            r.rec.swap(i, j);
            r.kmap.swap(i, j);
        }
        // What was known about `a` is now true of `b` (its mappings, in
        // `b`'s slot of the index) and vice versa.
        match (ia, ib) {
            (Some(ia), Some(ib)) if ia != ib => {
                let (sa, sb) = (r.hot[ia].map(|h| h.who.slot), r.hot[ib].map(|h| h.who.slot));
                if let (Some(h), Some(sb)) = (r.hot[ia].as_mut(), sb) {
                    h.pa = b;
                    h.who.slot = sb;
                }
                if let (Some(h), Some(sa)) = (r.hot[ib].as_mut(), sa) {
                    h.pa = a;
                    h.who.slot = sa;
                }
            }
            _ => r.hot = [None; 2],
        }
    }

    fn move_second_level(&mut self, _old: PhysAddr, _new: PhysAddr) {
        // Page tables are pinned in the frame table: never called.
        defmt::error!("spm moved a page table; the demo kernel pins them");
    }

    fn move_first_level(&mut self, _old: PhysAddr, _new: PhysAddr) {
        defmt::error!("spm moved a page directory; the demo kernel pins them");
    }
}

/// The request moving kernel page `target` into (or back from) the kernel view `resource`.
pub fn kernel_request(target: u32, resource: u32) -> ExchangeRequest {
    ExchangeRequest {
        caller: AddressSpace::Kernel,
        target_space: AddressSpace::Kernel,
        target: VirtAddr::new(target),
        resource_space: AddressSpace::Kernel,
        resource: VirtAddr::new(resource),
        size: PageSizeKind::Small,
        count: 1,
        rights: Rights::RX,
    }
}

/// The spm state code of `state` (syscall `TCM_STATE`): 0 undefined,
/// 1 resource, 2 user page, 3 kernel page.
pub fn state_code(state: FrameState) -> u32 {
    match state {
        FrameState::Undefined => 0,
        FrameState::Resource => 1,
        FrameState::User(_) => 2,
        FrameState::Kernel(_) => 3,
    }
}

/// The location code: 0 RAM, 1 ITCM, 2 DTCM, 3 device.
pub fn location_code(l: Location) -> u32 {
    match l {
        Location::Ram => 0,
        Location::Itcm => 1,
        Location::Dtcm => 2,
        Location::Device => 3,
    }
}
