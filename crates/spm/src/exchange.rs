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
//! # Write faults during an exchange
//! A write to a protected page faults. The kernel's fault handler asks
//! [`Exchange::protects`]; if it returns true, the write must not be
//! emulated: the writer waits until the page is finished (or the handler
//! drives [`Exchange::finish_page`] itself) and then retries, which lands
//! in the new frame. No write is lost, because none can happen between the
//! clean of a line and the switch.

use crate::frame::{FrameDesc, FrameError, FrameSlot, FrameState, FrameTable, KernelUse};
use crate::irq::InterruptControl;
use crate::lines::LineMaintenance;
use crate::mappings::{AddressSpace, Mapping, Mappings, PageSize};
use crate::phys::PhysMemory;
use crate::region::{Rights, FRAME_SIZE};
use core::fmt;
use mmu_armv5::addr::Align;
use mmu_armv5::regs::{Cp15, Cp15Reg};
use mmu_armv5::{ModifiedVirtAddr, PhysAddr, VirtAddr};

/// Size of a first-level table (page directory): 16 KiB.
const DIRECTORY_SIZE: u32 = 16 << 10;

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
    pub size: PageSize,
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
    /// are never exchanged (see [`PageSize`]).
    TinyPage(VirtAddr),
    /// A page is mapped with another size than requested.
    SizeMismatch {
        /// The address.
        va: VirtAddr,
        /// The size it is mapped with.
        mapped: PageSize,
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
    /// A page directory must be moved whole (16 KiB, 16 KiB aligned on both
    /// sides) and alone.
    PartialDirectory,
    /// A frame is already part of an exchange.
    Busy(PhysAddr),
    /// The same frame appears twice in one range.
    Aliased(PhysAddr),
    /// The frame table does not describe a frame.
    Frame(FrameError),
    /// The mappings changed under a running exchange (page no longer maps
    /// the frame that was validated). The pages before it are exchanged; the
    /// busy flags of the pages not yet exchanged are cleared where their
    /// addresses still lead to the validated frames. A frame whose mapping
    /// was removed cannot be found again and stays busy: a kernel must not
    /// unmap or remap a frame the frame table marks busy.
    Changed(VirtAddr),
    /// [`Exchange::step`] after the exchange finished or failed.
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
            E::PartialDirectory => f.write_str("a page directory moves whole and alone"),
            E::Busy(pa) => write!(f, "frame {pa} is already being exchanged"),
            E::Aliased(pa) => write!(f, "frame {pa} appears twice in one range"),
            E::Frame(e) => write!(f, "{e}"),
            E::Changed(va) => write!(f, "the mapping of {va} changed during the exchange"),
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

/// Counts of the work an exchange did, in operations: one per cache or TLB
/// maintenance operation, per 32-bit word copied, per [`Mappings`] call and
/// per register write.
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
    Failed,
}

/// A page exchange in progress. Created by [`Exchange::begin`], which checks
/// every precondition before anything changes; driven by [`Exchange::step`].
///
/// The exchange holds no references: the kernel keeps it wherever it likes
/// and passes the frame table, mappings and hardware to each step.
#[derive(Clone, Debug)]
pub struct Exchange {
    req: ExchangeRequest,
    chunk: u32,
    /// Old and new page of page 0.
    first: (PhysAddr, PhysAddr),
    /// A page directory moves: protection and busy flags hold across all
    /// pages, and the translation table base moves with the last one.
    hold: bool,
    page: u32,
    old: PhysAddr,
    new: PhysAddr,
    protected: bool,
    phase: Phase,
    stats: ExchangeStats,
    /// The mappings of the current page's two frames.
    known: Known,
    /// [`Mappings::generation`] when `begin` translated the pages.
    begin_gen: Option<u32>,
    /// Where the frame table describes the current page's first old and
    /// new frame (found once, at its start).
    at: [FrameSlot; 2],
}

/// Mappings remembered per frame of the current page.
const KNOWN: usize = 4;

const NO_MAPPING: Mapping = Mapping {
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
    gen: Option<u32>,
    list: [[Mapping; KNOWN]; 2],
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
    /// returns the number of calls.
    fn collect<M: Mappings + ?Sized>(
        &mut self,
        maps: &M,
        gen: Option<u32>,
        old: PhysAddr,
        new: PhysAddr,
        size: PageSize,
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
    fn of(&self, side: usize) -> &[Mapping] {
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
    pub fn begin<const R: usize, M: Mappings + ?Sized>(
        table: &mut FrameTable<'_, R>,
        maps: &M,
        req: ExchangeRequest,
        chunk: u32,
    ) -> Result<Exchange, ExchangeError> {
        if !chunk.is_power_of_two() || !(32..=FRAME_SIZE).contains(&chunk) {
            return Err(ExchangeError::BadChunk(chunk));
        }
        if req.size == PageSize::Tiny {
            return Err(ExchangeError::TinyPage(req.target));
        }
        let size = req.size.bytes();
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
        let mut first = (PhysAddr::ZERO, PhysAddr::ZERO);
        let mut contiguous = true;
        for i in 0..req.count {
            let (old, new) = translate_pair(maps, &req, i)?;
            if i == 0 {
                first = (old, new);
            } else if old.as_u32() != first.0.as_u32().wrapping_add(i * size)
                || new.as_u32() != first.1.as_u32().wrapping_add(i * size)
            {
                contiguous = false;
            }
            for f in 0..req.size.frames() {
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
        if (tables || directory) && !contiguous {
            return Err(ExchangeError::NotContiguous);
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
        mark(table, maps, &req, req.count, true)?;
        let at = [table.locate(first.0)?, table.locate(first.1)?];
        Ok(Exchange {
            begin_gen: maps.generation(),
            at,
            req,
            chunk,
            first,
            hold: directory,
            page: 0,
            old: PhysAddr::ZERO,
            new: PhysAddr::ZERO,
            protected: false,
            phase: Phase::Start,
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
        if !self.protected || matches!(self.phase, Phase::Start | Phase::Done | Phase::Failed) {
            return false;
        }
        let size = self.req.size.bytes();
        let within = |base: PhysAddr, len: u32| {
            frame.as_u32() >= base.as_u32() && frame.as_u32() - base.as_u32() < len
        };
        if self.hold {
            let len = size * self.req.count;
            within(self.first.0, len) || within(self.first.1, len)
        } else {
            within(self.old, size) || within(self.new, size)
        }
    }

    /// Runs steps until the current page is finished (bounded by one page's
    /// remaining work): what a write-fault handler does instead of waiting.
    pub fn finish_page<const R: usize, M, H, I>(
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
            let p = self.step(table, maps, hw, irq)?;
            if p == Progress::Done || self.page != page {
                return Ok(p);
            }
        }
    }

    /// Runs every remaining step.
    pub fn run<const R: usize, M, H, I>(
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
        while self.step(table, maps, hw, irq)? == Progress::Pending {}
        Ok(())
    }

    /// Does one bounded piece of work. Interrupts are masked at most inside
    /// this call, never across calls.
    pub fn step<const R: usize, M, H, I>(
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
        let r = self.step_inner(table, maps, hw, irq);
        if r.is_err() && !matches!(self.phase, Phase::Done | Phase::Failed) {
            // Release the frames of the pages not yet exchanged.
            let from = if self.hold { 0 } else { self.page };
            self.phase = Phase::Failed;
            let _ = mark_range(table, maps, &self.req, from, self.req.count, false);
        }
        r
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
        if self.known.gen.is_some() && gen != self.known.gen {
            // The kernel changed mappings since they were collected.
            let (old, new, size) = (self.old, self.new, self.req.size);
            self.stats.total_ops += self.known.collect(maps, gen, old, new, size);
        }
        // A step does at most one chunk of copying or flushing; the cheap
        // phases around them (start, switch, restore) join the chunk next
        // to them instead of taking a step of their own.
        loop {
            match self.phase {
                Phase::Done | Phase::Failed => return Err(ExchangeError::Finished),
                Phase::Start => {
                    self.start(table, maps, hw, irq, gen)?;
                    self.phase = Phase::Copy(0);
                }
                Phase::Copy(off) => {
                    self.copy_chunk(maps, hw, off);
                    let next = off + self.chunk;
                    self.phase = if next >= self.req.size.bytes() {
                        Phase::Switch
                    } else {
                        Phase::Copy(next)
                    };
                    break;
                }
                Phase::Switch => {
                    self.switch(table, maps, hw, irq)?;
                    self.phase = Phase::Flush(0);
                }
                Phase::Flush(off) => {
                    self.flush_chunk(maps, hw, off);
                    let next = off + self.chunk;
                    if next < self.req.size.bytes() {
                        self.phase = Phase::Flush(next);
                        break;
                    }
                    self.phase = Phase::Restore;
                }
                Phase::Restore => {
                    self.restore(table, maps, hw, irq);
                    self.page += 1;
                    self.phase = if self.page == self.req.count {
                        Phase::Done
                    } else {
                        Phase::Start
                    };
                    break;
                }
            }
        }
        Ok(if self.phase == Phase::Done {
            Progress::Done
        } else {
            Progress::Pending
        })
    }

    /// Start of a page: finds its frames (checking they are the validated,
    /// busy ones), collects their mappings and write-protects both pages
    /// if any mapping is writable. `gen` is the kernel's mapping generation
    /// now.
    fn start<const R: usize, M, H, I>(
        &mut self,
        table: &mut FrameTable<'_, R>,
        maps: &mut M,
        hw: &mut H,
        irq: &mut I,
        gen: Option<u32>,
    ) -> Result<(), ExchangeError>
    where
        M: Mappings + ?Sized,
        H: PhysMemory + LineMaintenance + Cp15 + ?Sized,
        I: InterruptControl + ?Sized,
    {
        let size = self.req.size;
        // Page 0 was translated by `begin`; while no mapping was added or
        // removed since (same generation) it still leads to those frames.
        let (old, new) = if self.page == 0 && gen.is_some() && gen == self.begin_gen {
            self.first
        } else {
            translate_pair(maps, &self.req, self.page)?
        };
        // The validated frames are busy; anything else means the
        // mappings changed since `begin`.
        let at = if (old, new) == self.first {
            self.at
        } else {
            [table.locate(old)?, table.locate(new)?]
        };
        if !table.desc_at(at[0]).is_busy() {
            return Err(ExchangeError::Changed(self.target_va(self.page)));
        }
        if !table.desc_at(at[1]).is_busy() {
            return Err(ExchangeError::Changed(self.resource_va(self.page)));
        }
        self.at = at;
        self.old = old;
        self.new = new;
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
                for base in [old, new] {
                    let p = frame_at(base, i * size.frames());
                    maps.for_each_mapping(p, size, &mut |m| writable |= m.writable);
                }
            }
            self.protected = writable;
            if writable {
                for i in 0..pages {
                    for (side, base) in [old, new].into_iter().enumerate() {
                        self.set_protection(
                            maps,
                            hw,
                            irq,
                            side,
                            frame_at(base, i * size.frames()),
                            true,
                        );
                    }
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
    /// writable), so the chunk cannot change under the copy and nothing
    /// needs the copy to be atomic. Reads may go on and fill clean lines;
    /// the flush after the switch removes them.
    fn copy_chunk<M, H>(&mut self, maps: &M, hw: &mut H, off: u32)
    where
        M: Mappings + ?Sized,
        H: PhysMemory + LineMaintenance + ?Sized,
    {
        let mut ops = 0;
        let lines = self.chunk / H::DCACHE_LINE;
        // Clean the chunk at every cacheable address the old page
        // is mapped at.
        self.each(maps, 0, self.old, |m| {
            if m.cached {
                hw.clean_dcache_lines(at(m.mva, off), self.chunk);
                ops += lines;
            }
        });
        // Discard the new page's lines of the chunk (a page resource
        // holds nothing anyone relies on): a dirty one, written back
        // after the copy, would overwrite the copied data.
        self.each(maps, 1, self.new, |m| {
            if m.cached {
                // SAFETY: the new page is a page resource being
                // overwritten by this exchange; its cached data is
                // garbage by definition, and no mapping of it is
                // writable (protected above when any was).
                unsafe { hw.invalidate_dcache_lines(at(m.mva, off), self.chunk) };
                ops += lines;
            }
        });
        hw.drain_write_buffer();
        hw.copy(offset(self.new, off), offset(self.old, off), self.chunk);
        self.stats.total_ops += ops + 1 + self.chunk / 4;
        self.stats.bytes_copied += self.chunk;
    }

    /// Flushes the chunk at `off` at every cacheable address of both pages
    /// (after the switch), so no line filled before it survives.
    fn flush_chunk<M, H>(&mut self, maps: &M, hw: &mut H, off: u32)
    where
        M: Mappings + ?Sized,
        H: LineMaintenance + ?Sized,
    {
        let mut ops = 0;
        let lines = self.chunk / H::DCACHE_LINE;
        for (side, page) in [self.old, self.new].into_iter().enumerate() {
            self.each(maps, side, page, |m| {
                if m.cached {
                    hw.flush_lines(at(m.mva, off), self.chunk);
                    ops += 2 * lines;
                }
            });
        }
        hw.drain_write_buffer();
        self.stats.total_ops += ops + 1;
    }

    /// End of a page: gives write access back (masked) and releases the
    /// frames this exchange holds (for a directory, all of them, after the
    /// last page).
    fn restore<const R: usize, M, H, I>(
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
        let last = self.page + 1 == self.req.count;
        if !self.hold || last {
            // A directory's pages are released together, after the TTB moved.
            let (first_page, new0, old0) = if self.hold {
                (0, self.first.1, self.first.0)
            } else {
                (self.page, self.new, self.old)
            };
            let pages = self.page + 1 - first_page;
            if self.protected {
                // The write memory moved with the mappings: the
                // target's mappings now map the new frames, the
                // resource's the old ones. One window per page and side,
                // as for the protection: a writer that still faults on a
                // page not yet given back waits and retries.
                for i in 0..pages {
                    self.set_protection(maps, hw, irq, 1, frame_at(new0, i * size.frames()), false);
                    self.set_protection(maps, hw, irq, 0, frame_at(old0, i * size.frames()), false);
                }
            }
            // Release the frames this exchange holds: no address lookup,
            // the frames are known (a directory is contiguous).
            if self.hold {
                for base in [old0, new0] {
                    for f in 0..pages * size.frames() {
                        let p = frame_at(base, f);
                        if let Ok(d) = table.desc(p) {
                            let _ = table.set(p, d.with_busy(false));
                        }
                    }
                }
            } else {
                table.set_busy_at(self.at[0], false);
                table.set_busy_at(self.at[1], false);
                for f in 1..size.frames() {
                    for p in [frame_at(old0, f), frame_at(new0, f)] {
                        if let Ok(d) = table.desc(p) {
                            let _ = table.set(p, d.with_busy(false));
                        }
                    }
                }
            }
            self.protected = false;
        }
        self.known.clear();
    }

    /// Calls `f` for every mapping of `page`, which is side `side` (0 the
    /// old frame, 1 the new frame) of the current page or, in a directory
    /// move, a frame of another of its pages: from the remembered lists
    /// when they are valid, else from the kernel.
    fn each<M: Mappings + ?Sized, F: FnMut(&Mapping)>(
        &self,
        maps: &M,
        side: usize,
        page: PhysAddr,
        mut f: F,
    ) {
        let current = if side == 0 { self.old } else { self.new };
        if self.known.gen.is_some() && page == current {
            for m in self.known.of(side) {
                f(m);
            }
        } else {
            maps.for_each_mapping(page, self.req.size, &mut f);
        }
    }

    /// Invalidates the TLB entries of every mapping of `page` (see
    /// [`Exchange::each`]); returns the number of operations.
    fn invalidate_tlb<M, H>(&self, maps: &M, hw: &mut H, side: usize, page: PhysAddr) -> u32
    where
        M: Mappings + ?Sized,
        H: LineMaintenance + ?Sized,
    {
        let mut n = 0;
        self.each(maps, side, page, |m: &Mapping| {
            // One entry covers a whole small page, large page or section.
            hw.invalidate_tlb_entry(m.mva);
            n += 1;
        });
        n
    }

    /// The switch: mappings, tables and TTB in one masked window, then the
    /// bookkeeping ([`Mappings::swapped`], the frame table).
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
        for f in 1..size.frames() {
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
            let (base_old, base_new) = self.first;
            maps.move_first_level(base_old, base_new);
            let ttbr = hw.read(Cp15Reg::Ttbr);
            w.ops += 2;
            if ttbr & !(DIRECTORY_SIZE - 1) == base_old.as_u32() {
                // SAFETY: all four frames of the directory hold an identical
                // copy at `base_new` (copied while write-protected, and the old
                // frames stay busy until now, so no entry changed); interrupts
                // are masked, and the whole TLB is invalidated after.
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
            for f in 0..size.frames() {
                let (o, n) = (frame_at(self.old, f), frame_at(self.new, f));
                if table.desc(o)?.state() == FrameState::Kernel(KernelUse::PageTable) {
                    maps.move_second_level(o, n);
                    w.ops += 1;
                }
            }
        }
        w.close(irq, &mut self.stats);

        maps.swapped(self.old, self.new, size);
        self.stats.total_ops += 1;
        move_state(table, self.at[0], self.at[1]);
        for f in 1..size.frames() {
            let o_at = table.locate(frame_at(self.old, f))?;
            let n_at = table.locate(frame_at(self.new, f))?;
            move_state(table, o_at, n_at);
        }
        Ok(())
    }

    fn target_va(&self, i: u32) -> VirtAddr {
        VirtAddr::new(self.req.target.as_u32() + i * self.req.size.bytes())
    }

    fn resource_va(&self, i: u32) -> VirtAddr {
        VirtAddr::new(self.req.resource.as_u32() + i * self.req.size.bytes())
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
        table.set_at(o_at, od.with_state(FrameState::Resource));
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

/// Translates page `i` of both ranges to (old page, new page).
fn translate_pair<M: Mappings + ?Sized>(
    maps: &M,
    req: &ExchangeRequest,
    i: u32,
) -> Result<(PhysAddr, PhysAddr), ExchangeError> {
    let step = i * req.size.bytes();
    let one = |space, base: VirtAddr| {
        let va = VirtAddr::new(base.as_u32() + step);
        let t = maps
            .translate(space, va)
            .ok_or(ExchangeError::NotMapped(va))?;
        if t.size == PageSize::Tiny {
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

/// Sets or clears the busy flag of every frame of pages `0..upto`; when
/// setting, a frame already busy is an alias and everything is rolled back.
fn mark<const R: usize, M: Mappings + ?Sized>(
    table: &mut FrameTable<'_, R>,
    maps: &M,
    req: &ExchangeRequest,
    upto: u32,
    busy: bool,
) -> Result<(), ExchangeError> {
    for i in 0..upto {
        let (old, new) = translate_pair(maps, req, i)?;
        for f in 0..req.size.frames() {
            for (k, pa) in [frame_at(old, f), frame_at(new, f)].into_iter().enumerate() {
                let d = table.desc(pa)?;
                if busy && d.is_busy() {
                    // Roll back: pages before i, and page i up to this frame.
                    let _ = mark(table, maps, req, i, false);
                    for g in 0..=f {
                        for (k2, b) in [old, new].into_iter().enumerate() {
                            if g == f && k2 >= k {
                                continue;
                            }
                            let p = frame_at(b, g);
                            if let Ok(d) = table.desc(p) {
                                let _ = table.set(p, d.with_busy(false));
                            }
                        }
                    }
                    return Err(ExchangeError::Aliased(pa));
                }
                table.set(pa, d.with_busy(busy))?;
            }
        }
    }
    Ok(())
}

/// Sets or clears the busy flags of pages `from..to` (release, or after a failure).
fn mark_range<const R: usize, M: Mappings + ?Sized>(
    table: &mut FrameTable<'_, R>,
    maps: &M,
    req: &ExchangeRequest,
    from: u32,
    to: u32,
    busy: bool,
) -> Result<(), ExchangeError> {
    for i in from..to {
        // A page whose mapping changed cannot be found again; skip it.
        let Ok((old, new)) = translate_pair(maps, req, i) else {
            continue;
        };
        for f in 0..req.size.frames() {
            for pa in [frame_at(old, f), frame_at(new, f)] {
                if let Ok(d) = table.desc(pa) {
                    table.set(pa, d.with_busy(busy))?;
                }
            }
        }
    }
    Ok(())
}
