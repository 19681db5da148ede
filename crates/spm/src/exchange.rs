//! Page exchange: move `count` pages at a target address into page
//! resources (e.g. TCM) at a resource address, transparently to the program.
//!
//! Afterwards the target addresses are backed by the new frames, holding the
//! old content, and the resource addresses by the old frames.
//!
//! # Bounded blocking
//! The Fiasco implementation copied a whole page with interrupts off
//! (up to ~58k cycles). Here an [`Exchange`] is a resumable state machine:
//! every [`Exchange::step`] does one bounded piece of work, and interrupts
//! are masked only inside a step, never across steps. Per page:
//!
//! 1. **Protect** (masked, one window per page and side): if any mapping of
//!    the old page *or of the new page* is writable, remove write access
//!    from all mappings of both and invalidate their TLB entries. From now
//!    on a write to either page faults instead of racing the copy (a write
//!    through the resource's mapping would otherwise land in the target's
//!    future content). A write between two of these windows reaches a page
//!    before its copy, as one before a single window would.
//! 2. **Copy**, one chunk per step, interrupts enabled: clean the chunk's
//!    D-cache lines at every address the old page is mapped at (a VIVT
//!    cache holds the newest data), discard the chunk's lines at every
//!    address of the new page (a dirty line of the resource, written back
//!    later, would overwrite the copy), then copy the chunk. Nothing can
//!    write either page now (step 1, or no mapping was ever writable), so
//!    the copy needs no masked window; reads go on and may refill clean
//!    lines, which step 4 removes.
//! 3. **Switch** (always masked): swap the mappings of old and new page,
//!    invalidate their TLB entries, re-point first-level entries at moved
//!    page tables and the translation table base at a moved page directory.
//!    [`Mappings::swap`] is therefore never observed half done, by an
//!    interrupt handler or by a CPU access through a TLB entry of the old
//!    mappings. Then, unmasked, the bookkeeping nothing but this step can
//!    see: the kernel's records ([`Mappings::swapped`]) and the frame table.
//! 4. **Flush**, one chunk per step: clean and invalidate D-cache lines and
//!    invalidate I-cache lines at every address of both pages, so no line
//!    filled before the switch survives (still no writes possible).
//! 5. **Restore** (masked, one window per page and side): give write access
//!    back, invalidate TLB entries; then clear the frames' busy flags.
//!
//! A step does at most one chunk of copying or of flushing: the short
//! phases join the chunk next to them (1 the first copy chunk, 3 the first
//! flush chunk, 5 the last flush chunk), so a page takes
//! `2 * (page size / chunk)` steps, two with a chunk of the page's size.
//! Each masked window holds one page side of 1 or 5, or the switch.
//!
//! When no mapping of either page is writable, 1 and 5 are skipped and
//! only the switch masks interrupts: the copies are identical throughout.
//!
//! # What `spm` checks at every step
//! Between two steps the kernel runs, and whatever it does there, an
//! exchange never acts on what it checked in an earlier step. At the start
//! of every step (before any copy, switch, flush or restore):
//!
//! * **The frame table** is the one [`Exchange::begin`] marked the frames
//!   in (its storage and regions, compared in O(1)); another table is
//!   [`ExchangeError::WrongTable`], and nothing is changed (the exchange
//!   can be stepped or cancelled with its own table afterwards).
//! * **The frames** of the current page (every 4 KiB frame of it, both
//!   sides; of every page for a page directory) are still busy and in the
//!   state the exchange put or found them in: the first frame of each side
//!   exactly as recorded, the others busy with the same state. A frame
//!   that was freed, handed to another space or changed fails this. The
//!   crate's own calls cannot change a busy frame: [`crate::ops`] refuses
//!   with `Busy`, [`FrameTable::init_range`] with
//!   [`FrameError::Busy`], a table rebuilt over the storage
//!   ([`FrameTable::new`]) with [`FrameError::StorageBusy`], and a second
//!   [`Exchange::begin`] with [`ExchangeError::Busy`]; so no other
//!   exchange can put the frames back into the state this one expects.
//!   These checks run at every step, the first of each page included
//!   (`Start`, where the page's frames are checked against what `begin`
//!   left before anything is protected or copied).
//! * **The mappings**: while [`Mappings::generation`] returns the value
//!   under which the current page was last checked, nothing was mapped,
//!   unmapped, re-pointed or given write access (the fast path: one
//!   compare). Otherwise (and at every step if the kernel reports `None`)
//!   the target and resource addresses of the page are translated again
//!   and must lead to exactly the frames the exchange began with (old at
//!   the target and new at the resource before the switch, the other way
//!   round after it), with the requested size; the mappings of both
//!   frames are collected again; and before the switch none of them may
//!   be writable (a write would be lost in the copy).
//! * At the start of each page the page's frames are the ones
//!   [`Exchange::begin`] translated (remembered for every page), busy, the
//!   old one a movable page the caller may move, the new one a page
//!   resource.
//!
//! Any difference is [`ExchangeError::Changed`] with the address whose
//! mapping or frame changed; the exchange then stops and releases what it
//! still holds (see [`Exchange::cancel`]): no step ever copies into,
//! swaps the mappings of, or flushes on behalf of a frame that is no
//! longer the one it began with, so the switch never redirects anybody
//! else's mapping, and a target unmapped mid-exchange never ends in
//! [`Progress::Done`].
//!
//! # What the kernel guarantees between steps
//! `spm` detects the changes above; it cannot undo them. A kernel keeps
//! its own records consistent by not making them:
//!
//! * it does not free, unmap or re-map a busy frame or the addresses of a
//!   running exchange, nor change its state (`spm`'s [`crate::ops`] refuse
//!   busy frames; the kernel's own paths, such as a process exit, call
//!   [`Exchange::cancel`] first);
//! * [`Mappings::generation`], when it returns `Some`, changes whenever a
//!   mapping is added, removed, re-pointed, given write access or gets
//!   another MVA, except through `spm`'s own calls: a kernel whose
//!   generation lies defeats the fast path's check;
//! * no interrupt handler changes mappings (the checks run before a step's
//!   masked window, not inside it);
//! * a writer that faults on a protected page waits (see below); a process
//!   that started an exchange does not run its own code until the call
//!   ends (the kernel blocks it: a replayed call would let it act between
//!   the steps of its own exchange).
//!
//! # Write faults during an exchange
//! A write to a protected page faults. The kernel's fault handler asks
//! [`Exchange::protects`]; if it returns true, the write must not be
//! emulated: the writer waits until the page is finished (or the handler
//! drives [`Exchange::finish_page`] itself) and then retries, which lands
//! in the new frame. No write is lost, because none can happen between the
//! clean of a line and the switch.
//!
//! # Safety
//! [`Exchange::step`] (and [`Exchange::run`], [`Exchange::finish_page`],
//! [`Exchange::cancel`]) copy physical memory into page resources, discard
//! their cache lines, rewrite page-table entries through [`Mappings`] and,
//! moving a page directory, load the translation table base. What makes
//! that sound is what the kernel tells `spm`: that a page resource holds
//! nothing anyone needs, that [`Mappings`] reports every mapping there is,
//! that `hw` is this CPU's. `spm` cannot check these claims, so these
//! calls are `unsafe fn`s whose `# Safety` sections name them, and the
//! traits stay safe to implement (an implementation is only trusted by a
//! caller that says so in its `unsafe` block). [`Exchange::begin`] only
//! marks frames busy and stays safe. See the crate docs.

use crate::frame::{FrameDesc, FrameError, FrameSlot, FrameState, FrameTable, KernelUse, TableId};
use crate::irq::InterruptControl;
use crate::lines::LineMaintenance;
use crate::mappings::{AddressSpace, Mappings, ReverseMapping};
use crate::phys::PhysMemory;
use crate::region::{Rights, FRAME_SIZE};
use core::fmt;
use mmu_armv5::addr::Align;
use mmu_armv5::regs::{Cp15, Cp15Reg};
use mmu_armv5::size::PageSizeKind;
use mmu_armv5::{ModifiedVirtAddr, PhysAddr, VirtAddr};

/// Size of a first-level table (page directory): 16 KiB.
const DIRECTORY_SIZE: u32 = 16 << 10;

/// The most pages an exchange moves whose frames are not physically
/// contiguous on both sides: an exchange remembers the frames of every
/// page it began with, in O(1) for contiguous ranges and in a list of this
/// length otherwise ([`ExchangeError::Scattered`]).
pub const MAX_SCATTERED: u32 = 8;

/// What to exchange.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ExchangeRequest {
    /// Who asks. A task may only exchange its own pages for resources in its
    /// own space; the kernel may exchange anything movable.
    pub caller: AddressSpace,
    /// The address space of the pages to move.
    pub target_space: AddressSpace,
    /// First virtual address of the pages to move (the old pages).
    pub target: VirtAddr,
    /// The address space the page resources are mapped in.
    pub resource_space: AddressSpace,
    /// First virtual address of the page resources (the new pages).
    pub resource: VirtAddr,
    /// The size both ranges are mapped with.
    pub size: PageSizeKind,
    /// Number of pages.
    pub count: u32,
    /// The rights the content needs (`X` for code): the new frames' maximum
    /// rights must cover them, so code is never moved into DTCM.
    pub rights: Rights,
}

/// Why an exchange was refused or stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum ExchangeError {
    /// `count` is zero, or the range wraps past 4 GiB.
    BadCount(u32),
    /// A chunk size that is not a power of two between the cache line and 4 KiB.
    BadChunk(u32),
    /// An address is not aligned to the page size.
    Misaligned(VirtAddr),
    /// The old and new virtual ranges overlap.
    Overlap,
    /// A task asked to exchange pages outside its own address space.
    NotPermitted,
    /// A page of either range is not mapped.
    NotMapped(VirtAddr),
    /// The request, or a page of either range, uses 1 KiB tiny pages, which
    /// are never exchanged (see [the `mappings` module](crate::mappings#tiny-pages)).
    TinyPage(VirtAddr),
    /// A page is mapped with another size than requested.
    SizeMismatch {
        /// The address.
        va: VirtAddr,
        /// The size it is mapped with.
        mapped: PageSizeKind,
    },
    /// A new page is not a page resource.
    NotResource {
        /// The frame.
        frame: PhysAddr,
        /// Its state.
        state: FrameState,
    },
    /// The new frame's maximum rights do not cover the content's rights
    /// (e.g. code into DTCM).
    RightsExceeded {
        /// The frame.
        frame: PhysAddr,
        /// Rights the content needs.
        needed: Rights,
        /// Rights the frame can ever have.
        max: Rights,
    },
    /// An old page is not movable (device, DMA, pinned).
    NotMovable(PhysAddr),
    /// An old page is neither a user nor a kernel page.
    NotInUse {
        /// The frame.
        frame: PhysAddr,
        /// Its state.
        state: FrameState,
    },
    /// An old user page does not belong to the calling task.
    NotOwner(PhysAddr),
    /// A task asked to move a kernel page.
    KernelOnly(PhysAddr),
    /// Page tables or a page directory are moved but a range is not
    /// physically contiguous.
    NotContiguous,
    /// More than [`MAX_SCATTERED`] pages whose frames are not physically
    /// contiguous on both sides (the count asked for).
    Scattered(u32),
    /// A page directory must be moved whole (16 KiB, 16 KiB aligned on both
    /// sides) and alone.
    PartialDirectory,
    /// A frame is already part of an exchange.
    Busy(PhysAddr),
    /// The same frame appears twice in one range.
    Aliased(PhysAddr),
    /// The frame table does not describe a frame.
    Frame(FrameError),
    /// Between two steps the mapping of this address or the frame behind it
    /// changed (unmapped, mapped elsewhere, given write access, frame freed,
    /// handed on or changed in state): see the module docs for what is
    /// checked. The exchange stopped and released what it still held
    /// ([`Exchange::cancel`]'s rules): the pages before the current one
    /// stay exchanged, a page whose switch was done is finished, the
    /// others keep their frames; frames that are no longer the exchange's
    /// are left alone.
    Changed(VirtAddr),
    /// [`Exchange::step`] or [`Exchange::cancel`] with another frame table
    /// than [`Exchange::begin`]'s. Nothing was done; the exchange goes on
    /// with its own table.
    WrongTable,
    /// [`Exchange::step`] after the exchange finished, failed or was cancelled.
    Finished,
}

impl fmt::Display for ExchangeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use ExchangeError as E;
        match *self {
            E::BadCount(c) => write!(f, "page count {c} is zero or the range wraps"),
            E::BadChunk(c) => write!(f, "chunk size {c} is not a power of two in line..=4096"),
            E::Misaligned(va) => write!(f, "{va} is not aligned to the page size"),
            E::Overlap => f.write_str("old and new ranges overlap"),
            E::NotPermitted => f.write_str("a task may only exchange pages in its own space"),
            E::NotMapped(va) => write!(f, "{va} is not mapped"),
            E::TinyPage(va) => write!(f, "{va}: 1 KiB tiny pages are not exchanged"),
            E::SizeMismatch { va, mapped } => write!(f, "{va} is mapped as {mapped:?}"),
            E::NotResource { frame, state } => {
                write!(f, "new frame {frame} is {state:?}, not a page resource")
            }
            E::RightsExceeded { frame, needed, max } => write!(
                f,
                "frame {frame} can have at most {max:?}, content needs {needed:?}"
            ),
            E::NotMovable(pa) => write!(f, "frame {pa} is not movable"),
            E::NotInUse { frame, state } => write!(f, "old frame {frame} is {state:?}"),
            E::NotOwner(pa) => write!(f, "frame {pa} belongs to another task"),
            E::KernelOnly(pa) => write!(f, "only the kernel may move kernel frame {pa}"),
            E::NotContiguous => {
                f.write_str("page tables move only in physically contiguous ranges")
            }
            E::Scattered(n) => write!(
                f,
                "{n} pages whose frames are not contiguous (at most {MAX_SCATTERED})"
            ),
            E::PartialDirectory => f.write_str("a page directory moves whole and alone"),
            E::Busy(pa) => write!(f, "frame {pa} is already being exchanged"),
            E::Aliased(pa) => write!(f, "frame {pa} appears twice in one range"),
            E::Frame(e) => write!(f, "{e}"),
            E::Changed(va) => write!(f, "the mapping of {va} changed during the exchange"),
            E::WrongTable => f.write_str("the exchange was begun in another frame table"),
            E::Finished => f.write_str("the exchange has finished"),
        }
    }
}

impl core::error::Error for ExchangeError {}

impl From<FrameError> for ExchangeError {
    fn from(e: FrameError) -> Self {
        ExchangeError::Frame(e)
    }
}

/// What a step achieved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Progress {
    /// More steps are needed.
    Pending,
    /// Every page is exchanged.
    Done,
}

/// Counts of the work an exchange's steps did, in operations: one per cache
/// or TLB maintenance operation, per 32-bit word copied, per [`Mappings`]
/// call (but [`Mappings::generation`], a counter read) and per register
/// write. `begin`'s checks are not counted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ExchangeStats {
    /// Steps taken.
    pub steps: u32,
    /// Interrupts-masked windows opened.
    pub masked_windows: u32,
    /// Operations in the longest interrupts-masked window.
    pub longest_masked_ops: u32,
    /// Operations in total.
    pub total_ops: u32,
    /// Bytes copied.
    pub bytes_copied: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Start,
    Copy(u32),
    Switch,
    Flush(u32),
    Restore,
    Done,
    /// Failed or cancelled: nothing more is done.
    Over,
}

impl Phase {
    /// Whether the current page's mappings are swapped.
    fn switched(self) -> bool {
        matches!(self, Phase::Flush(_) | Phase::Restore)
    }
}

/// The frames of every page, as [`Exchange::begin`] translated them: both
/// ranges physically contiguous (computed), or listed.
#[derive(Clone, Copy, Debug)]
struct PageFrames {
    contiguous: bool,
    list: [(PhysAddr, PhysAddr); MAX_SCATTERED as usize],
}

impl PageFrames {
    /// (old, new) frame of page `i` of `size`.
    #[inline(always)]
    fn of(&self, i: u32, size: PageSizeKind) -> (PhysAddr, PhysAddr) {
        let (o, n) = self.list[0];
        if self.contiguous {
            let step = i.wrapping_mul(size.size());
            (offset(o, step), offset(n, step))
        } else {
            self.list
                .get(i as usize)
                .copied()
                .unwrap_or((PhysAddr::ZERO, PhysAddr::ZERO))
        }
    }
}

/// A page exchange in progress. Created by [`Exchange::begin`], which checks
/// every precondition before anything changes and marks the frames busy;
/// driven by [`Exchange::step`] to [`Progress::Done`], or ended early by
/// [`Exchange::cancel`].
///
/// The exchange holds no references: the kernel keeps it wherever it likes
/// and passes the frame table, mappings and hardware to each step.
///
/// **Dropping a begun exchange** that is neither done nor cancelled leaves
/// its frames busy for ever (and, once its first step ran, write-protected
/// until a step or cancel gives write access back): no one can change or
/// exchange them again. `spm` cannot release them on drop (the exchange
/// holds no reference to the frame table), hence `#[must_use]`: finish it
/// or call [`Exchange::cancel`]. It is not `Clone`: a copy would hold the
/// same busy frames.
///
/// The round trip: a task's writable page moved into DTCM step by step,
/// and back. After an exchange the old frame (now mapped at the resource
/// address) is still the task's page (`User(task)`): it holds a copy of
/// the task's data until the kernel gives it back as a resource with
/// [`ops::change_state`](crate::ops::change_state) (`Set(Resource)` at the
/// resource address, as the kernel), which the way back needs. With the
/// ready-made pieces: [`crate::TableMappings`] over one page table (the
/// task at FCSE PID 1), [`crate::Hw`] over a recording ARM926EJ-S and host
/// buffers standing for RAM and DTCM (the crate docs walk through the
/// same adoption; `tests/common/mod.rs` has a fuller kernel over the
/// `armv5-sim` model):
///
/// ```
/// use mmu_armv5::descriptor::{AccessPermission, CachePolicy};
/// use mmu_armv5::maint::Arm926;
/// use mmu_armv5::regs::MockCp15;
/// use mmu_armv5::size::{Frame, PageSizeKind};
/// use mmu_armv5::table::{MapAttrs, PageTable, PoolBlock, SizePolicy, TablePool};
/// use mmu_armv5::{Domain, FcsePid, ModifiedVirtAddr, PhysAddr, VirtAddr};
/// use spm::exchange::DEFAULT_CHUNK;
/// use spm::{AddressSpace, Exchange, ExchangeRequest, FrameDesc, FrameState, FrameTable, Hw};
/// use spm::{InitialUse, Location, Mappings, PhysRegion, PhysWindows, Progress};
/// use spm::{RecordingIrq, Rights, SectionSummary, SpaceId, TableMappings};
/// use spm::ops::{self, StateRequest};
///
/// let ram = PhysRegion::new(PhysAddr::new(0), 64 << 10, Location::Ram, InitialUse::Kernel)?;
/// let dtcm = PhysRegion::new(PhysAddr::new(0x0300_0000), 32 << 10, Location::Dtcm, InitialUse::Resource)?;
/// let mut frames = [FrameDesc::default(); 16 + 8];
/// let mut sections = [SectionSummary::default(); 2];
/// let mut table = FrameTable::<2>::new(&[ram, dtcm], &mut frames, &mut sections)?;
///
/// // Task 1's page at VA 0x8000 lives in RAM frame 0x5000; the kernel
/// // maps the first DTCM frame at 0xC300_0000.
/// let task = SpaceId(1);
/// let me = AddressSpace::User(task);
/// table.init_range(Frame::from_start(PhysAddr::new(0x5000))?, FrameState::User(task), true)?;
/// let mut mem = Box::new([PoolBlock::ZERO; 2]);
/// let mut pool = TablePool::new(&mut *mem, PhysAddr::new(0x0100_0000), ModifiedVirtAddr::new(0xC100_0000))?;
/// let mut pt = PageTable::new(&mut pool)?;
/// let mut maps = TableMappings::<_, _, 2>::new(&mut pool, Arm926::new(MockCp15::arm926()));
/// maps.add(AddressSpace::Kernel, FcsePid::ZERO, &mut pt)?;
/// maps.add_sharing(me, FcsePid::new(1)?, AddressSpace::Kernel)?;
/// for (space, va, pa, ap) in [
///     (me, 0x8000, 0x5000, AccessPermission::ReadWrite),
///     (AddressSpace::Kernel, 0xC300_0000, 0x0300_0000, AccessPermission::PrivRw),
/// ] {
///     let attrs = MapAttrs::new(Domain::from_low_bits(0), ap, CachePolicy::WriteBack);
///     let e = maps.edit(space).unwrap();
///     let mva = VirtAddr::new(va).to_mva(e.pid);
///     e.table.map(e.alloc, mva, PhysAddr::new(pa), 0x1000, attrs, SizePolicy::Largest)?.flush(e.maint, e.alloc);
/// }
/// let (mut ram, mut dtcm) = (vec![0u8; 64 << 10], vec![0u8; 32 << 10]);
/// ram[0x5123] = 42;
/// let mut phys = PhysWindows::<2>::new();
/// // SAFETY: each buffer stands for its physical range and is reached only through `phys`.
/// unsafe { phys.add(PhysAddr::new(0), 64 << 10, ram.as_mut_ptr()) }?;
/// // SAFETY: as above.
/// unsafe { phys.add(PhysAddr::new(0x0300_0000), 32 << 10, dtcm.as_mut_ptr()) }?;
/// let mut hw = Hw::new(Arm926::new(MockCp15::arm926()), phys);
/// let mut irq = RecordingIrq::new();
///
/// let req = ExchangeRequest {
///     caller: AddressSpace::Kernel,
///     target_space: me,
///     target: VirtAddr::new(0x8000),
///     resource_space: AddressSpace::Kernel,
///     resource: VirtAddr::new(0xC300_0000),
///     size: PageSizeKind::Small,
///     count: 1,
///     rights: Rights::RW, // data: DTCM allows it (code would need ITCM)
/// };
/// let mut ex = Exchange::begin(&mut table, &maps, req, DEFAULT_CHUNK)?;
/// assert!(table.desc(PhysAddr::new(0x5000))?.is_busy());
/// // SAFETY: the frame table, the page table and `hw` describe one
/// // (simulated) machine, and nothing else reaches these frames.
/// let first = unsafe { ex.step(&mut table, &mut maps, &mut hw, &mut irq) }?;
/// // The first step write-protected the page (a write now faults, and the
/// // fault handler waits: `protects`) and copied one chunk.
/// assert_eq!(first, Progress::Pending);
/// assert!(!maps.translate(me, VirtAddr::new(0x8000)).unwrap().writable);
/// assert!(ex.protects(PhysAddr::new(0x5000)) && !irq.is_masked());
/// // SAFETY: as above.
/// unsafe { ex.run(&mut table, &mut maps, &mut hw, &mut irq) }?;
///
/// assert!(ex.is_done());
/// // The task's page is in DTCM now, with its content and write access.
/// let t = maps.translate(me, VirtAddr::new(0x8123)).unwrap();
/// assert_eq!((t.page, t.writable), (PhysAddr::new(0x0300_0000), true));
/// let mut byte = [0];
/// hw.phys.read(PhysAddr::new(0x0300_0123), &mut byte)?;
/// assert_eq!(byte, [42]);
/// assert_eq!(table.desc(PhysAddr::new(0x0300_0000))?.state(), FrameState::User(task));
/// // The old frame is mapped at the resource address instead, and stays
/// // the task's page until the kernel gives it back.
/// let r = maps.translate(AddressSpace::Kernel, VirtAddr::new(0xC300_0000)).unwrap();
/// assert_eq!(r.page, PhysAddr::new(0x5000));
/// assert_eq!(table.desc(PhysAddr::new(0x5000))?.state(), FrameState::User(task));
/// assert_eq!(table.busy_frames(), 0);
/// // Interrupts were masked only inside steps, 256 bytes of copying at most each.
/// assert!(!irq.is_masked() && irq.windows() >= 1);
/// assert_eq!(ex.stats().bytes_copied, 4096);
///
/// // And back to RAM. The old frame is still the task's page, so a second
/// // exchange would refuse it (`NotResource`): the kernel, which maps it
/// // at the resource address, first gives it back as a resource.
/// let back = ExchangeRequest { rights: Rights::RW, ..req };
/// assert!(matches!(
///     Exchange::begin(&mut table, &maps, back, DEFAULT_CHUNK),
///     Err(spm::ExchangeError::NotResource { .. })
/// ));
/// let kernel_va = VirtAddr::new(0xC300_0000);
/// // SAFETY: as above (the frame table, the mappings and `hw` are one machine).
/// unsafe { ops::change_state(&mut table, &maps, &mut hw, AddressSpace::Kernel, kernel_va, StateRequest::Set(FrameState::Resource)) }?;
/// let mut ex = Exchange::begin(&mut table, &maps, back, DEFAULT_CHUNK)?;
/// // SAFETY: as above.
/// unsafe { ex.run(&mut table, &mut maps, &mut hw, &mut irq) }?;
/// assert!(ex.is_done());
/// let t = maps.translate(me, VirtAddr::new(0x8123)).unwrap();
/// assert_eq!((t.page, t.writable), (PhysAddr::new(0x5000), true));
/// hw.phys.read(PhysAddr::new(0x5123), &mut byte)?;
/// assert_eq!(byte, [42]);
/// // The DTCM frame, at the resource address again, is given back the same way.
/// // SAFETY: as above.
/// unsafe { ops::change_state(&mut table, &maps, &mut hw, AddressSpace::Kernel, kernel_va, StateRequest::Set(FrameState::Resource)) }?;
/// assert_eq!(table.desc(PhysAddr::new(0x0300_0000))?.state(), FrameState::Resource);
/// assert_eq!(table.desc(PhysAddr::new(0x5000))?.state(), FrameState::User(task));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[must_use = "a begun exchange holds its frames busy until it is run to the end or cancelled"]
#[derive(Debug)]
pub struct Exchange {
    req: ExchangeRequest,
    chunk: u32,
    /// The frame table `begin` marked the frames in.
    table: TableId,
    /// The frames of every page, as translated by `begin`.
    pages: PageFrames,
    /// A page directory moves: protection and busy flags hold across all
    /// pages, and the translation table base moves with the last one.
    hold: bool,
    page: u32,
    old: PhysAddr,
    new: PhysAddr,
    protected: bool,
    phase: Phase,
    /// Pages completely exchanged when the exchange ended early.
    exchanged: u32,
    stats: ExchangeStats,
    /// The mappings of the current page's two frames.
    known: Known,
    /// [`Mappings::generation`] when `begin` translated the pages.
    begin_gen: Option<u64>,
    /// [`Mappings::generation`] when the current page's mappings were last
    /// checked (`None`: check at the next step).
    checked: Option<u64>,
    /// Where the frame table describes the current page's first old and
    /// new frame (found once, at its start).
    at: [FrameSlot; 2],
    /// Their descriptions as this exchange left them.
    expect: [FrameDesc; 2],
}

/// Mappings remembered per frame of the current page.
const KNOWN: usize = 4;

const NO_MAPPING: ReverseMapping = ReverseMapping {
    space: AddressSpace::Kernel,
    mva: ModifiedVirtAddr::new(0),
    writable: false,
    cached: true,
};

/// The mappings of the current page's old frame and new frame, collected
/// once per page instead of once per step. Valid while
/// [`Mappings::generation`] returns `gen`; collected again when it changes.
/// `gen == None`: not remembered (the kernel does not track a generation, a
/// frame has more than [`KNOWN`] mappings, or a page directory moves),
/// every use asks the kernel.
///
/// Changed in place (it is a few hundred bytes): list `slot[side]` holds
/// side `side` (0 the old frame, 1 the new frame); the switch swaps the
/// two indices instead of the lists.
#[derive(Clone, Copy, Debug)]
struct Known {
    gen: Option<u64>,
    list: [[ReverseMapping; KNOWN]; 2],
    n: [u8; 2],
    slot: [u8; 2],
}

impl Known {
    const NONE: Known = Known {
        gen: None,
        list: [[NO_MAPPING; KNOWN]; 2],
        n: [0; 2],
        slot: [0, 1],
    };

    /// Forgets the lists.
    fn clear(&mut self) {
        self.gen = None;
        self.n = [0; 2];
        self.slot = [0, 1];
    }

    /// Asks the kernel for the mappings of `old` and `new`, to be valid
    /// while its generation is `gen` ([`Mappings::generation`] now);
    /// returns the number of calls. Inlined: once per page, on the step
    /// path.
    #[inline(always)]
    fn collect<M: Mappings + ?Sized>(
        &mut self,
        maps: &M,
        gen: Option<u64>,
        old: PhysAddr,
        new: PhysAddr,
        size: PageSizeKind,
    ) -> u32 {
        self.slot = [0, 1];
        self.gen = gen;
        if gen.is_none() {
            self.n = [0; 2];
            return 0;
        }
        let a = maps.collect_mappings(old, size, &mut self.list[0]);
        let b = maps.collect_mappings(new, size, &mut self.list[1]);
        self.n = [a.min(KNOWN) as u8, b.min(KNOWN) as u8];
        if a > KNOWN || b > KNOWN {
            self.gen = None;
        }
        2
    }

    /// The remembered mappings of side `side` (0 old frame, 1 new frame).
    #[inline]
    fn of(&self, side: usize) -> &[ReverseMapping] {
        // `slot` holds 0 and 1, `n` at most KNOWN: the masks only spare
        // the bounds checks.
        let s = usize::from(self.slot[side & 1]) & 1;
        &self.list[s][..usize::from(self.n[s]).min(KNOWN)]
    }

    /// Every mapping of the old frame now maps the new one and vice versa.
    fn swap_sides(&mut self) {
        self.slot.swap(0, 1);
    }
}

/// The default chunk: 256 bytes (8 cache lines, 64 words) per step.
pub const DEFAULT_CHUNK: u32 = 256;

impl Exchange {
    /// Checks every precondition of `req` and marks the frames busy.
    /// `chunk` is the number of bytes copied (or flushed) per step.
    ///
    /// Safe: it reads the mappings and the frame table and sets busy flags,
    /// nothing else. The exchange is bound to `table` (see
    /// [`ExchangeError::WrongTable`]) and remembers the frames of every page.
    pub fn begin<const R: usize, M: Mappings + ?Sized>(
        table: &mut FrameTable<'_, R>,
        maps: &M,
        req: ExchangeRequest,
        chunk: u32,
    ) -> Result<Exchange, ExchangeError> {
        if !chunk.is_power_of_two() || !(32..=FRAME_SIZE).contains(&chunk) {
            return Err(ExchangeError::BadChunk(chunk));
        }
        if req.size == PageSizeKind::Tiny {
            return Err(ExchangeError::TinyPage(req.target));
        }
        let size = req.size.size();
        let len = req
            .count
            .checked_mul(size)
            .filter(|_| req.count > 0)
            .ok_or(ExchangeError::BadCount(req.count))?;
        for va in [req.target, req.resource] {
            if !Align::new(size).is_some_and(|a| va.is_aligned(a)) {
                return Err(ExchangeError::Misaligned(va));
            }
            if va.as_u32().checked_add(len - 1).is_none() {
                return Err(ExchangeError::BadCount(req.count));
            }
        }
        if let AddressSpace::User(me) = req.caller {
            let own = AddressSpace::User(me);
            if req.target_space != own || req.resource_space != own {
                return Err(ExchangeError::NotPermitted);
            }
        }
        if req.target_space == req.resource_space {
            let (a, b) = (req.target.as_u32() as u64, req.resource.as_u32() as u64);
            if a < b + len as u64 && b < a + len as u64 {
                return Err(ExchangeError::Overlap);
            }
        }

        // Pass 1: read-only checks of every page and frame.
        let mut tables = false;
        let mut directory = false;
        let mut pages = PageFrames {
            contiguous: true,
            list: [(PhysAddr::ZERO, PhysAddr::ZERO); MAX_SCATTERED as usize],
        };
        let mut first = (PhysAddr::ZERO, PhysAddr::ZERO);
        for i in 0..req.count {
            let (old, new) = translate_pair(maps, &req, i)?;
            if i == 0 {
                first = (old, new);
            } else if old.as_u32() != first.0.as_u32().wrapping_add(i * size)
                || new.as_u32() != first.1.as_u32().wrapping_add(i * size)
            {
                pages.contiguous = false;
            }
            if let Some(p) = pages.list.get_mut(i as usize) {
                *p = (old, new);
            }
            for f in 0..req.size.small_pages() {
                let (o, n) = (frame_at(old, f), frame_at(new, f));
                let oi = table.info(o)?;
                let ni = table.info(n)?;
                check_old(&req, o, oi.desc)?;
                match oi.desc.state() {
                    FrameState::Kernel(KernelUse::PageTable) => tables = true,
                    FrameState::Kernel(KernelUse::PageDirectory) => directory = true,
                    _ => {}
                }
                if !ni.desc.is_resource() {
                    return Err(ExchangeError::NotResource {
                        frame: n,
                        state: ni.desc.state(),
                    });
                }
                if !ni.max_rights.contains(req.rights) {
                    return Err(ExchangeError::RightsExceeded {
                        frame: n,
                        needed: req.rights,
                        max: ni.max_rights,
                    });
                }
                if ni.desc.is_busy() {
                    return Err(ExchangeError::Busy(n));
                }
            }
        }
        if (tables || directory) && !pages.contiguous {
            return Err(ExchangeError::NotContiguous);
        }
        if !pages.contiguous && req.count > MAX_SCATTERED {
            return Err(ExchangeError::Scattered(req.count));
        }
        if directory {
            let whole = len == DIRECTORY_SIZE
                && first.0.is_aligned(Align::KIB_16)
                && first.1.is_aligned(Align::KIB_16);
            let mut only = true;
            for f in 0..DIRECTORY_SIZE / FRAME_SIZE {
                if whole {
                    let s = table.desc(frame_at(first.0, f))?.state();
                    only &= s == FrameState::Kernel(KernelUse::PageDirectory);
                }
            }
            if !whole || !only {
                return Err(ExchangeError::PartialDirectory);
            }
        }

        // Pass 2: mark busy, catching a frame that appears twice.
        let at = [table.locate(first.0)?, table.locate(first.1)?];
        mark(table, &pages, req.size, req.count)?;
        Ok(Exchange {
            begin_gen: maps.generation(),
            checked: None,
            table: table.id(),
            pages,
            at,
            expect: [table.desc_at(at[0]), table.desc_at(at[1])],
            req,
            chunk,
            hold: directory,
            page: 0,
            old: first.0,
            new: first.1,
            protected: false,
            phase: Phase::Start,
            exchanged: 0,
            stats: ExchangeStats::default(),
            known: Known::NONE,
        })
    }

    /// The request this exchange carries out.
    #[must_use]
    pub fn request(&self) -> &ExchangeRequest {
        &self.req
    }

    /// Whether every page has been exchanged.
    #[must_use]
    pub fn is_done(&self) -> bool {
        self.phase == Phase::Done
    }

    /// Whether the exchange is over: done, failed or cancelled (a step
    /// answers [`ExchangeError::Finished`]; its frames are released).
    #[must_use]
    pub fn is_over(&self) -> bool {
        matches!(self.phase, Phase::Done | Phase::Over)
    }

    /// The work done so far.
    #[must_use]
    pub fn stats(&self) -> ExchangeStats {
        self.stats
    }

    /// Whether a write fault on `frame` was caused by this exchange's write
    /// protection. If so the writer must wait for the current page to finish
    /// (or call [`Exchange::finish_page`]) and retry; the write then lands in
    /// the new frame.
    #[must_use]
    pub fn protects(&self, frame: PhysAddr) -> bool {
        if !self.protected || matches!(self.phase, Phase::Start | Phase::Done | Phase::Over) {
            return false;
        }
        let size = self.req.size.size();
        let within = |base: PhysAddr, len: u32| {
            frame.as_u32() >= base.as_u32() && frame.as_u32() - base.as_u32() < len
        };
        if self.hold {
            let (o, n) = self.pages.of(0, self.req.size);
            let len = size * self.req.count;
            within(o, len) || within(n, len)
        } else {
            within(self.old, size) || within(self.new, size)
        }
    }

    /// Runs steps until the current page is finished (bounded by one page's
    /// remaining work): what a write-fault handler does instead of waiting.
    ///
    /// # Safety
    /// As [`Exchange::step`].
    pub unsafe fn finish_page<const R: usize, M, H, I>(
        &mut self,
        table: &mut FrameTable<'_, R>,
        maps: &mut M,
        hw: &mut H,
        irq: &mut I,
    ) -> Result<Progress, ExchangeError>
    where
        M: Mappings + ?Sized,
        H: PhysMemory + LineMaintenance + Cp15 + ?Sized,
        I: InterruptControl + ?Sized,
    {
        let page = self.page;
        loop {
            // SAFETY: the caller's promises, as for `step`.
            let p = unsafe { self.step(table, maps, hw, irq) }?;
            if p == Progress::Done || self.page != page {
                return Ok(p);
            }
        }
    }

    /// Runs every remaining step.
    ///
    /// # Safety
    /// As [`Exchange::step`].
    pub unsafe fn run<const R: usize, M, H, I>(
        &mut self,
        table: &mut FrameTable<'_, R>,
        maps: &mut M,
        hw: &mut H,
        irq: &mut I,
    ) -> Result<(), ExchangeError>
    where
        M: Mappings + ?Sized,
        H: PhysMemory + LineMaintenance + Cp15 + ?Sized,
        I: InterruptControl + ?Sized,
    {
        // SAFETY: the caller's promises, as for `step`.
        while unsafe { self.step(table, maps, hw, irq) }? == Progress::Pending {}
        Ok(())
    }

    /// Does one bounded piece of work, after checking that nothing it
    /// relies on changed since the last step (module docs). Interrupts are
    /// masked at most inside this call, never across calls.
    ///
    /// On an error other than [`ExchangeError::WrongTable`] (and
    /// [`ExchangeError::Finished`]) the exchange is over: it released what
    /// it still held as [`Exchange::cancel`] does, and further steps answer
    /// [`ExchangeError::Finished`].
    ///
    /// # Safety
    /// The caller vouches for what `spm` acts on and cannot check:
    /// * `table` describes memory truthfully: a frame it calls a page
    ///   resource holds nothing anyone needs, and no frame of the exchange
    ///   is memory the program reaches through Rust references (only
    ///   through MMU mappings and `hw`): a step copies into it and
    ///   discards its cache lines;
    /// * `maps` is the kernel's page tables: [`Mappings::translate`],
    ///   [`Mappings::for_each_mapping`] and [`Mappings::collect_mappings`]
    ///   report every mapping of a frame, in every address space, as the
    ///   MMU walks it; its changing methods do what their docs say; and
    ///   [`Mappings::generation`] changes as documented there (a step
    ///   that sees the generation unchanged trusts the mappings it checked);
    /// * `hw` is the CPU those mappings are used on: its caches, TLB and
    ///   translation table base (loaded when a page directory moves), and
    ///   [`PhysMemory`] acting on physical memory;
    /// * `irq` masks that CPU's interrupts, and no interrupt handler
    ///   changes mappings.
    pub unsafe fn step<const R: usize, M, H, I>(
        &mut self,
        table: &mut FrameTable<'_, R>,
        maps: &mut M,
        hw: &mut H,
        irq: &mut I,
    ) -> Result<Progress, ExchangeError>
    where
        M: Mappings + ?Sized,
        H: PhysMemory + LineMaintenance + Cp15 + ?Sized,
        I: InterruptControl + ?Sized,
    {
        if self.is_over() {
            return Err(ExchangeError::Finished);
        }
        if table.id() != self.table {
            return Err(ExchangeError::WrongTable);
        }
        let r = self.step_inner(table, maps, hw, irq);
        if r.is_err() && !self.is_over() {
            self.exchanged = self.abort(table, maps, hw, irq);
            self.phase = Phase::Over;
        }
        r
    }

    /// Ends the exchange early and releases its frames; returns how many
    /// pages (from the first) are exchanged, i.e. have their target
    /// mapping the new frame.
    ///
    /// What happens to the current page depends on how far it got:
    /// * **not started** (before the first step, or between pages):
    ///   nothing to undo;
    /// * **protected, copying, or copied and not switched**: write access
    ///   goes back to the mappings that had it (TLB entries invalidated,
    ///   one masked window per side), both frames are released. The target
    ///   keeps its old frame and content; the resource holds part of a copy
    ///   of it (a page resource holds nothing anyone relies on);
    /// * **switched** (flushing or restoring): the page is finished first:
    ///   the rest of its flush, then its restore. It counts as exchanged.
    ///
    /// The pages after the current one are released untouched; the pages
    /// before it stay exchanged. A **page directory** moves all or
    /// nothing: cancelled before the switch of its last page (the one that
    /// moves the translation table base), every page already switched is
    /// switched back (masked, TLB entries invalidated, states back, then
    /// its lines flushed at both frames' addresses as after a switch),
    /// write access is given back and all its frames are released: 0 pages.
    /// After that switch it is finished: all of it.
    ///
    /// Frames that are no longer this exchange's (freed, handed on,
    /// changed: see the module docs) are left alone. Cancelling an
    /// exchange that is over does nothing and answers its count again.
    /// With another frame table: [`ExchangeError::WrongTable`], nothing
    /// done. The work is bounded by one page's remaining flush (for a
    /// directory, plus one switch-back per page).
    ///
    /// # Safety
    /// As [`Exchange::step`].
    pub unsafe fn cancel<const R: usize, M, H, I>(
        &mut self,
        table: &mut FrameTable<'_, R>,
        maps: &mut M,
        hw: &mut H,
        irq: &mut I,
    ) -> Result<u32, ExchangeError>
    where
        M: Mappings + ?Sized,
        H: PhysMemory + LineMaintenance + Cp15 + ?Sized,
        I: InterruptControl + ?Sized,
    {
        match self.phase {
            Phase::Done => return Ok(self.req.count),
            Phase::Over => return Ok(self.exchanged),
            _ => {}
        }
        if table.id() != self.table {
            return Err(ExchangeError::WrongTable);
        }
        self.exchanged = self.abort(table, maps, hw, irq);
        self.phase = Phase::Over;
        Ok(self.exchanged)
    }

    fn step_inner<const R: usize, M, H, I>(
        &mut self,
        table: &mut FrameTable<'_, R>,
        maps: &mut M,
        hw: &mut H,
        irq: &mut I,
    ) -> Result<Progress, ExchangeError>
    where
        M: Mappings + ?Sized,
        H: PhysMemory + LineMaintenance + Cp15 + ?Sized,
        I: InterruptControl + ?Sized,
    {
        self.stats.steps += 1;
        let gen = maps.generation();
        // At `Start` the page's frames are checked by `start` itself
        // (against what `begin` recorded for the first page, busy and in
        // their state for the others): `self.at` and `self.expect` still
        // name the previous page's frames there.
        if self.phase != Phase::Start && !self.unchanged(table, gen) {
            // What the earlier steps of this page relied on, in full.
            self.check_frames(table)?;
            self.stats.total_ops += self.check_mappings(maps, gen)?;
        }
        // A step does at most one chunk of copying or flushing; the cheap
        // phases around them (start, switch, restore) join the chunk next
        // to them instead of taking a step of their own. Written as one
        // pass through the phases in their order rather than a loop over a
        // `match`: a phase only ever moves to the next one, so each is
        // visited at most once per step, and straight-line code keeps the
        // compiler from hoisting every phase's addresses into stack slots
        // at the top of a loop (about 45 instructions per step on the
        // ARM926).
        if matches!(self.phase, Phase::Done | Phase::Over) {
            return Err(ExchangeError::Finished);
        }
        if self.phase == Phase::Start {
            self.start(table, maps, hw, irq, gen)?;
            self.phase = Phase::Copy(0);
        }
        if let Phase::Copy(off) = self.phase {
            self.copy_chunk(maps, hw, off);
            let next = off + self.chunk;
            self.phase = if next >= self.req.size.size() {
                Phase::Switch
            } else {
                Phase::Copy(next)
            };
            return Ok(Progress::Pending);
        }
        if self.phase == Phase::Switch {
            self.switch(table, maps, hw, irq)?;
            self.phase = Phase::Flush(0);
        }
        if let Phase::Flush(off) = self.phase {
            self.flush_chunk(maps, hw, off);
            let next = off + self.chunk;
            if next < self.req.size.size() {
                self.phase = Phase::Flush(next);
                return Ok(Progress::Pending);
            }
            self.phase = Phase::Restore;
        }
        // Only `Restore` is left.
        debug_assert_eq!(self.phase, Phase::Restore);
        self.restore(table, maps, hw, irq, true);
        self.page += 1;
        Ok(if self.page == self.req.count {
            self.phase = Phase::Done;
            Progress::Done
        } else {
            self.phase = Phase::Start;
            Progress::Pending
        })
    }

    /// The address of side `side` (0 the old frame, 1 the new frame) of
    /// the current page: the target's before the switch, the resource's
    /// after it for the old frame, and the other way round.
    fn changed(&self, side: usize) -> ExchangeError {
        let at_target = (side == 0) != self.phase.switched();
        ExchangeError::Changed(if at_target {
            self.target_va(self.page)
        } else {
            self.resource_va(self.page)
        })
    }

    /// Whether side `side`'s first frame is as this exchange left it.
    fn owns<const R: usize>(&self, table: &FrameTable<'_, R>, side: usize) -> bool {
        table.desc_at(self.at[side]) == self.expect[side]
    }

    /// The fast path of the checks at the start of a step: a small page
    /// whose two frames are exactly as this exchange left them, and a
    /// mapping generation equal to the one its mappings were checked under.
    #[inline(always)]
    fn unchanged<const R: usize>(&self, table: &FrameTable<'_, R>, gen: Option<u64>) -> bool {
        gen.is_some()
            && gen == self.checked
            && self.req.size == PageSizeKind::Small
            && !self.hold
            && self.owns(table, 0)
            && self.owns(table, 1)
    }

    /// Every frame of the current page (of every page for a directory) is
    /// still busy and as this exchange left it.
    #[cold]
    #[inline(never)]
    fn check_frames<const R: usize>(&self, table: &FrameTable<'_, R>) -> Result<(), ExchangeError> {
        for side in 0..2 {
            if !self.owns(table, side) {
                return Err(self.changed(side));
            }
        }
        let n = self.req.size.small_pages();
        for (side, base) in [(0, self.old), (1, self.new)] {
            if !run_consistent(table, base, n, self.expect[side]) {
                return Err(self.changed(side));
            }
        }
        if self.hold {
            self.check_held(table)?;
        }
        Ok(())
    }

    /// Whether page `i` of a directory move is switched now.
    fn held_switched(&self, i: u32) -> bool {
        i < self.page || (i == self.page && self.phase.switched())
    }

    /// Whether frame `pa`, side `side` of directory page `i`, is busy and
    /// in the state this exchange gives it (`switched`: the page is).
    fn held_ok<const R: usize>(
        table: &FrameTable<'_, R>,
        pa: PhysAddr,
        side: usize,
        switched: bool,
    ) -> bool {
        let want = if (side == 0) != switched {
            FrameState::Kernel(KernelUse::PageDirectory)
        } else {
            FrameState::Resource
        };
        table
            .desc(pa)
            .is_ok_and(|d| d.is_busy() && d.state() == want)
    }

    /// A page directory's frames, all held from the first page to the last.
    #[cold]
    #[inline(never)]
    fn check_held<const R: usize>(&self, table: &FrameTable<'_, R>) -> Result<(), ExchangeError> {
        let size = self.req.size;
        for i in 0..self.req.count {
            let sw = self.held_switched(i);
            let (o, n) = self.pages.of(i, size);
            for f in 0..size.small_pages() {
                if !Self::held_ok(table, frame_at(o, f), 0, sw) {
                    return Err(ExchangeError::Changed(if sw {
                        self.resource_va(i)
                    } else {
                        self.target_va(i)
                    }));
                }
                if !Self::held_ok(table, frame_at(n, f), 1, sw) {
                    return Err(ExchangeError::Changed(if sw {
                        self.target_va(i)
                    } else {
                        self.resource_va(i)
                    }));
                }
            }
        }
        Ok(())
    }

    /// Unless the kernel's mapping generation is the one the current page
    /// was last checked under: the page's addresses still lead to its
    /// frames (every page's, for a directory), its frames' mappings are
    /// collected again, and before the switch none of them is writable.
    /// Returns the number of [`Mappings`] calls.
    #[cold]
    #[inline(never)]
    fn check_mappings<M: Mappings + ?Sized>(
        &mut self,
        maps: &M,
        gen: Option<u64>,
    ) -> Result<u32, ExchangeError> {
        if gen.is_some() && gen == self.checked {
            return Ok(0);
        }
        let size = self.req.size;
        let mut ops = 0;
        let pages = if self.hold {
            0..self.req.count
        } else {
            self.page..self.page + 1
        };
        for i in pages.clone() {
            let (o, n) = self.pages.of(i, size);
            let (t, r) = if self.held_switched(i) {
                (n, o)
            } else {
                (o, n)
            };
            let (tt, rr) = translate_pair(maps, &self.req, i).map_err(as_changed)?;
            ops += 2;
            if tt != t {
                return Err(ExchangeError::Changed(self.target_va(i)));
            }
            if rr != r {
                return Err(ExchangeError::Changed(self.resource_va(i)));
            }
        }
        if !self.hold {
            ops += self.known.collect(maps, gen, self.old, self.new, size);
        }
        if matches!(self.phase, Phase::Copy(_) | Phase::Switch) {
            // A writable mapping now would let a write miss the copy.
            let mut writable = false;
            if !self.hold && self.known.gen.is_some() {
                writable = self
                    .known
                    .of(0)
                    .iter()
                    .chain(self.known.of(1))
                    .any(|m| m.writable);
            } else {
                for i in pages {
                    let (o, n) = self.pages.of(i, size);
                    maps.for_each_mapping(o, size, &mut |m| writable |= m.writable);
                    maps.for_each_mapping(n, size, &mut |m| writable |= m.writable);
                    ops += 2;
                }
            }
            if writable {
                return Err(ExchangeError::Changed(self.target_va(self.page)));
            }
        }
        self.checked = gen;
        Ok(ops)
    }

    /// Start of a page: checks that its addresses lead to the frames
    /// `begin` found (unless nothing was mapped or unmapped since) and that
    /// those are busy and as `begin` left them, collects their mappings and
    /// write-protects both pages if any mapping is writable. `gen` is the
    /// kernel's mapping generation now.
    fn start<const R: usize, M, H, I>(
        &mut self,
        table: &mut FrameTable<'_, R>,
        maps: &mut M,
        hw: &mut H,
        irq: &mut I,
        gen: Option<u64>,
    ) -> Result<(), ExchangeError>
    where
        M: Mappings + ?Sized,
        H: PhysMemory + LineMaintenance + Cp15 + ?Sized,
        I: InterruptControl + ?Sized,
    {
        let size = self.req.size;
        let (old, new) = self.pages.of(self.page, size);
        let tva = || ExchangeError::Changed(self.target_va(self.page));
        let rva = || ExchangeError::Changed(self.resource_va(self.page));
        let translated = gen.is_none() || gen != self.begin_gen;
        if translated {
            let (t, r) = translate_pair(maps, &self.req, self.page).map_err(as_changed)?;
            if t != old {
                return Err(tva());
            }
            if r != new {
                return Err(rva());
            }
        }
        let at = if self.page == 0 {
            self.at
        } else {
            [table.locate(old)?, table.locate(new)?]
        };
        let (d0, d1) = (table.desc_at(at[0]), table.desc_at(at[1]));
        if self.page == 0 {
            // Exactly as `begin` left them.
            if d0 != self.expect[0] {
                return Err(tva());
            }
            if d1 != self.expect[1] {
                return Err(rva());
            }
        } else {
            if !d0.is_busy() || check_old(&self.req, old, d0.with_busy(false)).is_err() {
                return Err(tva());
            }
            if !d1.is_busy() || !d1.is_resource() {
                return Err(rva());
            }
        }
        let n = size.small_pages();
        if n > 1 && !run_consistent(table, old, n, d0) {
            return Err(tva());
        }
        if n > 1 && !run_consistent(table, new, n, d1) {
            return Err(rva());
        }
        if translated {
            self.stats.total_ops += 2;
        }
        self.at = at;
        self.expect = [d0, d1];
        self.old = old;
        self.new = new;
        if self.hold {
            self.check_held(table)?;
        }
        self.checked = gen;
        if !self.hold {
            // One page, both sides: from the lists just collected when the
            // kernel keeps them, else asking it.
            self.stats.total_ops += self.known.collect(maps, gen, old, new, size);
            let writable = if self.known.gen.is_some() {
                self.known.of(0).iter().any(|m| m.writable)
                    || self.known.of(1).iter().any(|m| m.writable)
            } else {
                let mut w = false;
                maps.for_each_mapping(old, size, &mut |m| w |= m.writable);
                maps.for_each_mapping(new, size, &mut |m| w |= m.writable);
                self.stats.total_ops += 2;
                w
            };
            self.protected = writable;
            if writable {
                // Both sides: a write through a writable mapping of the
                // new page (the resource) would land in memory that is
                // about to become the target's content. One window per
                // side: a write that still reaches a page not yet
                // protected comes before its copy, just as one before a
                // single window would.
                self.set_protection(maps, hw, irq, 0, old, true);
                self.set_protection(maps, hw, irq, 1, new, true);
            }
        } else if self.page == 0 {
            // A directory is protected whole, before its first page is
            // copied (its mappings are asked for every time).
            self.known.clear();
            let pages = self.req.count;
            let mut writable = false;
            for i in 0..pages {
                let (o, n) = self.pages.of(i, size);
                for p in [o, n] {
                    maps.for_each_mapping(p, size, &mut |m| writable |= m.writable);
                }
                self.stats.total_ops += 2;
            }
            self.protected = writable;
            if writable {
                for i in 0..pages {
                    let (o, n) = self.pages.of(i, size);
                    self.set_protection(maps, hw, irq, 0, o, true);
                    self.set_protection(maps, hw, irq, 1, n, true);
                }
            }
        } else {
            self.known.clear();
        }
        Ok(())
    }

    /// Write-protects `page` (side `side`, see [`Exchange::each`]) or gives
    /// its write access back (`protect` false), in one masked window, and
    /// invalidates its mappings' TLB entries.
    fn set_protection<M, H, I>(
        &mut self,
        maps: &mut M,
        hw: &mut H,
        irq: &mut I,
        side: usize,
        page: PhysAddr,
        protect: bool,
    ) where
        M: Mappings + ?Sized,
        H: LineMaintenance + ?Sized,
        I: InterruptControl + ?Sized,
    {
        let mut w = Window::open(irq);
        if protect {
            maps.write_protect(page, self.req.size);
        } else {
            maps.restore_write(page, self.req.size);
        }
        w.ops += 1;
        w.ops += self.invalidate_tlb(maps, hw, side, page);
        w.close(irq, &mut self.stats);
    }

    /// Copies the chunk at `off`, with interrupts enabled: no mapping of
    /// either page is writable now (protected by the start, or never
    /// writable, and checked at the start of this step), so the chunk
    /// cannot change under the copy and nothing needs the copy to be
    /// atomic. Reads may go on and fill clean lines; the flush after the
    /// switch removes them.
    #[inline(always)]
    fn copy_chunk<M, H>(&mut self, maps: &M, hw: &mut H, off: u32)
    where
        M: Mappings + ?Sized,
        H: PhysMemory + LineMaintenance + ?Sized,
    {
        let mut ops = 0;
        let lines = self.chunk / H::DCACHE_LINE;
        // Clean the chunk at every cacheable address the old page
        // is mapped at.
        let mut calls = self.each(maps, 0, self.old, |m| {
            if m.cached {
                hw.clean_dcache_lines(at(m.mva, off), self.chunk);
                ops += lines;
            }
        });
        // Discard the new page's lines of the chunk (a page resource
        // holds nothing anyone relies on): a dirty one, written back
        // after the copy, would overwrite the copied data.
        calls += self.each(maps, 1, self.new, |m| {
            if m.cached {
                // SAFETY: the new page is a page resource this exchange
                // holds (checked at the start of this step) and is
                // overwriting: its cached data is garbage (the `step`
                // caller's promise on the frame table), no mapping of it
                // is writable (checked likewise), and these are exactly
                // its mappings (the caller's promise on `Mappings`).
                unsafe { hw.invalidate_dcache_lines(at(m.mva, off), self.chunk) };
                ops += lines;
            }
        });
        hw.drain_write_buffer();
        hw.copy(offset(self.new, off), offset(self.old, off), self.chunk);
        self.stats.total_ops += calls + ops + 1 + self.chunk / 4;
        self.stats.bytes_copied += self.chunk;
    }

    /// Flushes the chunk at `off` at every cacheable address of both pages
    /// (after the switch), so no line filled before it survives.
    #[inline(always)]
    fn flush_chunk<M, H>(&mut self, maps: &M, hw: &mut H, off: u32)
    where
        M: Mappings + ?Sized,
        H: LineMaintenance + ?Sized,
    {
        self.flush_chunk_of(maps, hw, [self.old, self.new], off);
    }

    /// [`Exchange::flush_chunk`] of the frames `pages` (old, new) of any
    /// page of this exchange.
    #[inline(always)]
    fn flush_chunk_of<M, H>(&mut self, maps: &M, hw: &mut H, pages: [PhysAddr; 2], off: u32)
    where
        M: Mappings + ?Sized,
        H: LineMaintenance + ?Sized,
    {
        let mut ops = 0;
        let lines = self.chunk / H::DCACHE_LINE;
        let chunk = self.chunk;
        let mut flush = |m: &ReverseMapping| {
            if m.cached {
                hw.flush_lines(at(m.mva, off), chunk);
                ops += 2 * lines;
            }
        };
        // The two sides one after the other rather than in a loop over
        // them, as in `step_inner`: no addresses hoisted into stack slots.
        let calls =
            self.each(maps, 0, pages[0], &mut flush) + self.each(maps, 1, pages[1], &mut flush);
        ops += calls;
        hw.drain_write_buffer();
        self.stats.total_ops += ops + 1;
    }

    /// Clears the busy flags of side `side`'s frames of the current page,
    /// whose first frame is still as this exchange left it, of those that
    /// are too.
    #[inline(always)]
    fn release_side<const R: usize>(&self, table: &mut FrameTable<'_, R>, side: usize) {
        table.set_busy_at(self.at[side], false);
        let base = if side == 0 { self.old } else { self.new };
        for f in 1..self.req.size.small_pages() {
            let p = frame_at(base, f);
            if let Ok(d) = table.desc(p) {
                if consistent(self.expect[side], d) {
                    let _ = table.set(p, d.with_busy(false));
                }
            }
        }
    }

    /// End of a page: gives write access back (masked) and releases the
    /// frames this exchange holds (for a directory, all of them, after the
    /// last page). Only frames that are still the exchange's are touched
    /// (`verified`: the step checked them at its start).
    #[inline(always)]
    fn restore<const R: usize, M, H, I>(
        &mut self,
        table: &mut FrameTable<'_, R>,
        maps: &mut M,
        hw: &mut H,
        irq: &mut I,
        verified: bool,
    ) where
        M: Mappings + ?Sized,
        H: LineMaintenance + ?Sized,
        I: InterruptControl + ?Sized,
    {
        let last = self.page + 1 == self.req.count;
        if !self.hold {
            // Verified at the start of the step on the normal path; an
            // abort may find a side changed.
            let own = if verified {
                [true; 2]
            } else {
                [self.owns(table, 0), self.owns(table, 1)]
            };
            if self.protected {
                // The write memory moved with the mappings: the target's
                // mappings now map the new frames, the resource's the old
                // ones. One window per side, as for the protection: a
                // writer that still faults on a page not yet given back
                // waits and retries.
                if own[1] {
                    self.set_protection(maps, hw, irq, 1, self.new, false);
                }
                if own[0] {
                    self.set_protection(maps, hw, irq, 0, self.old, false);
                }
            }
            if own[1] {
                self.release_side(table, 1);
            }
            if own[0] {
                self.release_side(table, 0);
            }
            self.protected = false;
        } else if last {
            // A directory's pages are released together, after the TTB moved.
            self.release_held(table, maps, hw, irq);
        }
        self.known.clear();
    }

    /// A directory's end: write access back and every frame released
    /// (those in the state the pages' switches left them in).
    #[cold]
    #[inline(never)]
    fn release_held<const R: usize, M, H, I>(
        &mut self,
        table: &mut FrameTable<'_, R>,
        maps: &mut M,
        hw: &mut H,
        irq: &mut I,
    ) where
        M: Mappings + ?Sized,
        H: LineMaintenance + ?Sized,
        I: InterruptControl + ?Sized,
    {
        let size = self.req.size;
        for i in 0..self.req.count {
            let sw = self.held_switched(i);
            let (o, n) = self.pages.of(i, size);
            let own = [
                Self::held_ok(table, o, 0, sw),
                Self::held_ok(table, n, 1, sw),
            ];
            if self.protected {
                if own[1] {
                    self.set_protection(maps, hw, irq, 1, n, false);
                }
                if own[0] {
                    self.set_protection(maps, hw, irq, 0, o, false);
                }
            }
            for (side, base) in [(0, o), (1, n)] {
                for f in 0..size.small_pages() {
                    let p = frame_at(base, f);
                    if Self::held_ok(table, p, side, sw) {
                        if let Ok(d) = table.desc(p) {
                            let _ = table.set(p, d.with_busy(false));
                        }
                    }
                }
            }
        }
        self.protected = false;
    }

    /// Stops the exchange: finishes a switched page, gives write access
    /// back, releases the frames still held (see [`Exchange::cancel`]);
    /// returns the number of pages exchanged.
    #[cold]
    #[inline(never)]
    fn abort<const R: usize, M, H, I>(
        &mut self,
        table: &mut FrameTable<'_, R>,
        maps: &mut M,
        hw: &mut H,
        irq: &mut I,
    ) -> u32
    where
        M: Mappings + ?Sized,
        H: PhysMemory + LineMaintenance + Cp15 + ?Sized,
        I: InterruptControl + ?Sized,
    {
        // Remembered mappings are used only if nothing changed since.
        let gen = maps.generation();
        if gen.is_none() || gen != self.known.gen {
            self.known.clear();
        }
        let size = self.req.size;
        if self.hold {
            return self.abort_directory(table, maps, hw, irq);
        }
        let mut done = self.page;
        let mut from = self.page;
        match self.phase {
            Phase::Flush(_) | Phase::Restore => {
                // Switched: the page is finished (flush, then restore).
                let mut off = match self.phase {
                    Phase::Flush(o) => o,
                    _ => size.size(),
                };
                while off < size.size() {
                    self.flush_chunk(maps, hw, off);
                    off += self.chunk;
                }
                self.restore(table, maps, hw, irq, false);
                done += 1;
                from = done;
            }
            Phase::Copy(_) | Phase::Switch => {
                // Not switched: write access back, both frames released.
                self.restore(table, maps, hw, irq, false);
                from += 1;
            }
            Phase::Start | Phase::Done | Phase::Over => {}
        }
        for i in from..self.req.count {
            self.release_untouched(table, i);
        }
        self.protected = false;
        self.known.clear();
        done
    }

    /// Clears the busy flags of page `i`, not started: of its frames that
    /// are busy and what `begin` found (an old page the caller may move, a
    /// page resource).
    #[cold]
    #[inline(never)]
    fn release_untouched<const R: usize>(&self, table: &mut FrameTable<'_, R>, i: u32) {
        let size = self.req.size;
        let (o, n) = self.pages.of(i, size);
        for f in 0..size.small_pages() {
            for (side, p) in [(0, frame_at(o, f)), (1, frame_at(n, f))] {
                let Ok(d) = table.desc(p) else { continue };
                let ours = d.is_busy()
                    && if side == 0 {
                        check_old(&self.req, p, d.with_busy(false)).is_ok()
                    } else {
                        d.is_resource()
                    };
                if ours {
                    let _ = table.set(p, d.with_busy(false));
                }
            }
        }
    }

    /// [`Exchange::abort`] of a page directory: all or nothing.
    #[cold]
    #[inline(never)]
    fn abort_directory<const R: usize, M, H, I>(
        &mut self,
        table: &mut FrameTable<'_, R>,
        maps: &mut M,
        hw: &mut H,
        irq: &mut I,
    ) -> u32
    where
        M: Mappings + ?Sized,
        H: PhysMemory + LineMaintenance + Cp15 + ?Sized,
        I: InterruptControl + ?Sized,
    {
        let size = self.req.size;
        let count = self.req.count;
        if self.phase == Phase::Start && self.page == 0 {
            // Not begun: nothing protected.
            for i in 0..count {
                self.release_untouched(table, i);
            }
            return 0;
        }
        if self.page + 1 == count && self.phase.switched() {
            // The translation table base moved: finish.
            let mut off = match self.phase {
                Phase::Flush(o) => o,
                _ => size.size(),
            };
            while off < size.size() {
                self.flush_chunk(maps, hw, off);
                off += self.chunk;
            }
            self.release_held(table, maps, hw, irq);
            return count;
        }
        // Switch back every switched page whose frames are still held.
        for i in (0..count).rev() {
            if !self.held_switched(i) {
                continue;
            }
            let (o, n) = self.pages.of(i, size);
            let ours = (0..size.small_pages()).all(|f| {
                Self::held_ok(table, frame_at(o, f), 0, true)
                    && Self::held_ok(table, frame_at(n, f), 1, true)
            });
            if !ours {
                continue;
            }
            let mut w = Window::open(irq);
            maps.swap(o, n, size);
            w.ops += 1;
            for p in [o, n] {
                maps.for_each_mapping(p, size, &mut |m| {
                    hw.invalidate_tlb_entry(m.mva);
                    w.ops += 1;
                });
                w.ops += 1;
            }
            w.close(irq, &mut self.stats);
            maps.swapped(o, n, size);
            self.stats.total_ops += 1;
            for f in 0..size.small_pages() {
                if let (Ok(o_at), Ok(n_at)) =
                    (table.locate(frame_at(o, f)), table.locate(frame_at(n, f)))
                {
                    move_state(table, n_at, o_at);
                }
            }
            // As after a switch: lines filled since the page's switch are
            // tagged with the frame its addresses no longer map; a write
            // hitting one would be written back there. Still
            // write-protected, so nothing dirties a line meanwhile.
            let mut off = 0;
            while off < size.size() {
                self.flush_chunk_of(maps, hw, [o, n], off);
                off += self.chunk;
            }
        }
        // Every page is as before its switch now.
        self.page = 0;
        self.phase = Phase::Copy(0);
        self.release_held(table, maps, hw, irq);
        0
    }

    /// Calls `f` for every mapping of `page`, which is side `side` (0 the
    /// old frame, 1 the new frame) of the current page or, in a directory
    /// move, a frame of another of its pages: from the remembered lists
    /// when they are valid, else from the kernel.
    #[inline(always)]
    fn each<M: Mappings + ?Sized, F: FnMut(&ReverseMapping)>(
        &self,
        maps: &M,
        side: usize,
        page: PhysAddr,
        mut f: F,
    ) -> u32 {
        let current = if side == 0 { self.old } else { self.new };
        if self.known.gen.is_some() && page == current {
            for m in self.known.of(side) {
                f(m);
            }
            0
        } else {
            maps.for_each_mapping(page, self.req.size, &mut f);
            1
        }
    }

    /// Invalidates the TLB entries of every mapping of `page` (see
    /// [`Exchange::each`]); returns the number of operations. Inlined: it
    /// runs inside the masked windows.
    #[inline(always)]
    fn invalidate_tlb<M, H>(&self, maps: &M, hw: &mut H, side: usize, page: PhysAddr) -> u32
    where
        M: Mappings + ?Sized,
        H: LineMaintenance + ?Sized,
    {
        let mut n = 0;
        let calls = self.each(maps, side, page, |m: &ReverseMapping| {
            // One entry covers a whole small page, large page or section.
            hw.invalidate_tlb_entry(m.mva);
            n += 1;
        });
        n + calls
    }

    /// The switch: mappings, tables and TTB in one masked window, then the
    /// bookkeeping ([`Mappings::swapped`], the frame table). The frames and
    /// mappings were checked at the start of this step.
    fn switch<const R: usize, M, H, I>(
        &mut self,
        table: &mut FrameTable<'_, R>,
        maps: &mut M,
        hw: &mut H,
        irq: &mut I,
    ) -> Result<(), ExchangeError>
    where
        M: Mappings + ?Sized,
        H: PhysMemory + LineMaintenance + Cp15 + ?Sized,
        I: InterruptControl + ?Sized,
    {
        let size = self.req.size;
        // Everything that can fail, before anything changes.
        let mut tables = table.desc_at(self.at[0]).is_page_table();
        for f in 1..size.small_pages() {
            let o_at = table.locate(frame_at(self.old, f))?;
            table.locate(frame_at(self.new, f))?;
            tables |= table.desc_at(o_at).is_page_table();
        }

        // Always masked, also for read-only pages: the swap is many
        // page-table writes, and until the TLB entries are invalidated a
        // writer through a stale entry of the resource mapping would write
        // into the page that just became the target's. No interrupt
        // handler, and no CPU access through a TLB entry of the old
        // mappings, may observe the mappings half swapped. Only what the
        // MMU reads is in the window: the frame table and the kernel's
        // records are borrowed by this step, so nothing else sees them
        // before they are updated below.
        let mut w = Window::open(irq);
        w.ops += 1;
        maps.swap(self.old, self.new, size);
        // Every mapping of the old frame now maps the new one and vice versa.
        self.known.swap_sides();
        w.ops += self.invalidate_tlb(maps, hw, 1, self.new);
        w.ops += self.invalidate_tlb(maps, hw, 0, self.old);
        if self.hold && self.page + 1 == self.req.count {
            // Every frame of the directory now holds an identical copy.
            let (base_old, base_new) = self.pages.of(0, size);
            maps.move_first_level(base_old, base_new);
            let ttbr = hw.read(Cp15Reg::Ttbr);
            w.ops += 1;
            if ttbr & !(DIRECTORY_SIZE - 1) == base_old.as_u32() {
                // SAFETY: all four frames of the directory hold an identical
                // copy at `base_new` (copied while write-protected, and the
                // old frames stay busy until now, checked at the start of
                // this step, so no entry changed); interrupts are masked,
                // and the whole TLB is invalidated after. `hw` is the CPU
                // whose TTB this is (the `step` caller's promise).
                unsafe {
                    hw.write(
                        Cp15Reg::Ttbr,
                        base_new.as_u32() | (ttbr & (DIRECTORY_SIZE - 1)),
                    )
                };
                hw.invalidate_tlb();
                w.ops += 2;
            }
        }
        if tables {
            for f in 0..size.small_pages() {
                let (o, n) = (frame_at(self.old, f), frame_at(self.new, f));
                if table.desc(o).is_ok_and(|d| d.is_page_table()) {
                    maps.move_second_level(o, n);
                    w.ops += 1;
                }
            }
        }
        w.close(irq, &mut self.stats);

        maps.swapped(self.old, self.new, size);
        self.stats.total_ops += 1;
        move_state(table, self.at[0], self.at[1]);
        for f in 1..size.small_pages() {
            if let (Ok(o_at), Ok(n_at)) = (
                table.locate(frame_at(self.old, f)),
                table.locate(frame_at(self.new, f)),
            ) {
                move_state(table, o_at, n_at);
            }
        }
        self.expect = [table.desc_at(self.at[0]), table.desc_at(self.at[1])];
        Ok(())
    }

    fn target_va(&self, i: u32) -> VirtAddr {
        VirtAddr::new(self.req.target.as_u32() + i * self.req.size.size())
    }

    fn resource_va(&self, i: u32) -> VirtAddr {
        VirtAddr::new(self.req.resource.as_u32() + i * self.req.size.size())
    }
}

/// An interrupts-masked window that counts its operations.
struct Window {
    was: bool,
    ops: u32,
}

impl Window {
    fn open<I: InterruptControl + ?Sized>(irq: &mut I) -> Window {
        Window {
            was: irq.disable(),
            ops: 0,
        }
    }

    fn close<I: InterruptControl + ?Sized>(self, irq: &mut I, stats: &mut ExchangeStats) {
        irq.restore(self.was);
        stats.masked_windows += 1;
        stats.total_ops += self.ops;
        stats.longest_masked_ops = stats.longest_masked_ops.max(self.ops);
    }
}

/// The content's state moves from the old frame at `o_at` to the new one
/// at `n_at`; each frame keeps its own movability. An old kernel frame
/// becomes a resource at once (no kernel data stays mapped as a user
/// page); an old user page stays the owner's user page (thesis 4.4.2.3).
fn move_state<const R: usize>(table: &mut FrameTable<'_, R>, o_at: FrameSlot, n_at: FrameSlot) {
    let (od, nd) = (table.desc_at(o_at), table.desc_at(n_at));
    table.set_at(n_at, nd.with_state_of(od));
    if od.is_kernel() {
        table.set_at(o_at, od.with_state_of(FrameDesc::RESOURCE));
    }
}

/// Whether `d`, a frame of the same page and side as the one described by
/// `first`, is busy and holds the same kind of content: the same state, or
/// a kernel page of either use (a kernel page may mix plain frames and
/// page tables).
fn consistent(first: FrameDesc, d: FrameDesc) -> bool {
    d.is_busy() && (d.state() == first.state() || (first.is_kernel() && d.is_kernel()))
}

/// Whether frames 1..n from `base` are [`consistent`] with `first`.
fn run_consistent<const R: usize>(
    table: &FrameTable<'_, R>,
    base: PhysAddr,
    n: u32,
    first: FrameDesc,
) -> bool {
    match table.run(base, n) {
        Some(ds) => ds.iter().skip(1).all(|&d| consistent(first, d)),
        None => (1..n).all(|f| {
            table
                .desc(frame_at(base, f))
                .is_ok_and(|d| consistent(first, d))
        }),
    }
}

fn frame_at(base: PhysAddr, f: u32) -> PhysAddr {
    PhysAddr::new(base.as_u32().wrapping_add(f * FRAME_SIZE))
}

fn offset(base: PhysAddr, off: u32) -> PhysAddr {
    PhysAddr::new(base.as_u32().wrapping_add(off))
}

/// `mva + off`.
fn at(mva: ModifiedVirtAddr, off: u32) -> ModifiedVirtAddr {
    ModifiedVirtAddr::new(mva.as_u32().wrapping_add(off))
}

/// A translation that no longer works, as the change it is.
fn as_changed(e: ExchangeError) -> ExchangeError {
    match e {
        ExchangeError::NotMapped(va)
        | ExchangeError::TinyPage(va)
        | ExchangeError::SizeMismatch { va, .. } => ExchangeError::Changed(va),
        e => e,
    }
}

/// Translates page `i` of both ranges to (old page, new page).
fn translate_pair<M: Mappings + ?Sized>(
    maps: &M,
    req: &ExchangeRequest,
    i: u32,
) -> Result<(PhysAddr, PhysAddr), ExchangeError> {
    let step = i * req.size.size();
    let one = |space, base: VirtAddr| {
        let va = VirtAddr::new(base.as_u32() + step);
        let t = maps
            .translate(space, va)
            .ok_or(ExchangeError::NotMapped(va))?;
        if t.size == PageSizeKind::Tiny {
            return Err(ExchangeError::TinyPage(va));
        }
        if t.size != req.size {
            return Err(ExchangeError::SizeMismatch { va, mapped: t.size });
        }
        Ok(t.page)
    };
    Ok((
        one(req.target_space, req.target)?,
        one(req.resource_space, req.resource)?,
    ))
}

/// Checks an old frame against the request's caller.
fn check_old(req: &ExchangeRequest, frame: PhysAddr, d: FrameDesc) -> Result<(), ExchangeError> {
    match (d.state(), req.caller) {
        (s @ (FrameState::Undefined | FrameState::Resource), _) => {
            return Err(ExchangeError::NotInUse { frame, state: s })
        }
        (FrameState::Kernel(_), AddressSpace::User(_)) => {
            return Err(ExchangeError::KernelOnly(frame))
        }
        (FrameState::User(o), AddressSpace::User(me)) if o != me => {
            return Err(ExchangeError::NotOwner(frame))
        }
        _ => {}
    }
    if !d.is_movable() {
        return Err(ExchangeError::NotMovable(frame));
    }
    if d.is_busy() {
        return Err(ExchangeError::Busy(frame));
    }
    Ok(())
}

/// Marks every frame of every page busy; a frame already busy is an alias
/// (the same frame twice) and everything marked so far is cleared again.
fn mark<const R: usize>(
    table: &mut FrameTable<'_, R>,
    pages: &PageFrames,
    size: PageSizeKind,
    count: u32,
) -> Result<(), ExchangeError> {
    let frames = |i: u32| {
        let (o, n) = pages.of(i, size);
        (0..size.small_pages()).flat_map(move |f| [frame_at(o, f), frame_at(n, f)])
    };
    let mut marked = 0usize;
    let mut failed = None;
    'all: for i in 0..count {
        for pa in frames(i) {
            let d = match table.desc(pa) {
                Ok(d) => d,
                Err(e) => {
                    failed = Some(ExchangeError::Frame(e));
                    break 'all;
                }
            };
            if d.is_busy() {
                failed = Some(ExchangeError::Aliased(pa));
                break 'all;
            }
            let _ = table.set(pa, d.with_busy(true));
            marked += 1;
        }
    }
    let Some(e) = failed else { return Ok(()) };
    // Roll back exactly the frames marked, in the same order.
    for pa in (0..count).flat_map(frames).take(marked) {
        if let Ok(d) = table.desc(pa) {
            let _ = table.set(pa, d.with_busy(false));
        }
    }
    Err(e)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::{Maps, Ops};

    /// `n` kernel mappings of the frame at `pa`, at `va`, `va + 4 KiB`, ...
    fn mapped(maps: &mut Maps, pa: u32, va: u32, n: u32) {
        for i in 0..n {
            maps.map(
                AddressSpace::Kernel,
                va + i * 0x1000,
                pa,
                PageSizeKind::Small,
                i == 0,
            );
        }
    }

    fn mvas(list: &[ReverseMapping]) -> std::vec::Vec<u32> {
        list.iter().map(|m| m.mva.as_u32()).collect()
    }

    /// The remembered lists: both sides collected with two calls, swapped
    /// by the switch, forgotten by `clear` and when a side has more
    /// mappings than fit (then every use asks the kernel).
    #[test]
    fn known_mappings_are_collected_swapped_and_forgotten() {
        let (old, new) = (PhysAddr::new(0x5000), PhysAddr::new(0x9000));
        let mut maps = Maps::new(Ops::default());
        mapped(&mut maps, 0x5000, 0xc000_0000, 2);
        mapped(&mut maps, 0x9000, 0xd000_0000, KNOWN as u32);
        let mut k = Known::NONE;
        assert_eq!(k.collect(&maps, Some(7), old, new, PageSizeKind::Small), 2);
        assert_eq!(k.gen, Some(7));
        assert_eq!(mvas(k.of(0)), [0xc000_0000, 0xc000_1000]);
        assert_eq!(
            mvas(k.of(1)),
            [0xd000_0000, 0xd000_1000, 0xd000_2000, 0xd000_3000]
        );
        assert!(k.of(0)[0].writable && !k.of(0)[1].writable);
        k.swap_sides();
        assert_eq!(mvas(k.of(1)), [0xc000_0000, 0xc000_1000]);
        assert_eq!(mvas(k.of(0)).len(), KNOWN);
        k.swap_sides();
        assert_eq!(mvas(k.of(0)), [0xc000_0000, 0xc000_1000]);
        k.clear();
        assert_eq!((k.gen, k.of(0).len(), k.of(1).len()), (None, 0, 0));

        // A kernel that keeps no generation: nothing is asked or kept.
        assert_eq!(k.collect(&maps, None, old, new, PageSizeKind::Small), 0);
        assert_eq!((k.gen, k.of(0).len(), k.of(1).len()), (None, 0, 0));

        // One mapping more than fits, on either side: not remembered.
        for (side, page) in [(0, old), (1, new)] {
            let mut maps = Maps::new(Ops::default());
            mapped(&mut maps, 0x5000, 0xc000_0000, 1);
            mapped(&mut maps, 0x9000, 0xd000_0000, 1);
            mapped(&mut maps, page.as_u32(), 0xe000_0000, KNOWN as u32);
            let mut k = Known::NONE;
            assert_eq!(k.collect(&maps, Some(1), old, new, PageSizeKind::Small), 2);
            assert_eq!(k.gen, None, "side {side} has {} mappings", KNOWN + 1);
        }
        // Exactly as many as fit: remembered.
        let mut maps = Maps::new(Ops::default());
        mapped(&mut maps, 0x5000, 0xc000_0000, KNOWN as u32);
        mapped(&mut maps, 0x9000, 0xd000_0000, KNOWN as u32);
        let mut k = Known::NONE;
        k.collect(&maps, Some(1), old, new, PageSizeKind::Small);
        assert_eq!(
            (k.gen, k.of(0).len(), k.of(1).len()),
            (Some(1), KNOWN, KNOWN)
        );
    }

    /// Every error has its own message naming what is wrong.
    #[test]
    fn errors_display_what_went_wrong() {
        use std::string::ToString;
        let e = ExchangeError::Scattered(9).to_string();
        assert!(e.contains('9') && e.contains("not contiguous"), "{e}");
        assert!(!ExchangeError::Overlap.to_string().is_empty());
        assert_ne!(
            ExchangeError::Overlap.to_string(),
            ExchangeError::PartialDirectory.to_string()
        );
    }
}
