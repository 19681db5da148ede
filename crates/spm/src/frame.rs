//! The frame table: one two-byte description per 4 KiB physical frame, plus
//! a four-byte summary per 1 MiB, over caller-provided storage.
//!
//! The Fiasco design (D. Molka, "Support for on-chip memory in Fiasco",
//! TU Dresden, 2007) spent 36 bytes per frame: a properties word,
//! a pointer to sub-page descriptions, three kernel mapping addresses and
//! four page-directory back-pointers. Here:
//!
//! * location and maximum rights never change at run time, so they live in
//!   the [`PhysRegion`], not the frame;
//! * the reverse mappings (kernel aliases, page-directory back-pointers)
//!   belong to whoever owns the page tables: they are asked through the
//!   [`Mappings`](crate::mappings::Mappings) trait instead of being copied
//!   into every frame;
//! * only user pages need an owner and only kernel pages can be page tables,
//!   so the two share one 12-bit field.
//!
//! What is left fits a `u16`:
//!
//! ```text
//!  15                         4   3      2       1   0
//! +----------------------------+------+--------+-------+
//! | owner (user) / use (kernel)| busy | pinned | state |
//! +----------------------------+------+--------+-------+
//! ```
//!
//! A [`SectionSummary`] per 1 MiB slot of each region counts the described,
//! free and pinned frames in it, so a 1 MiB operation can be refused in O(1).

use crate::region::{InitialUse, Location, PhysRegion, Rights, FRAME_SIZE, SECTION_SIZE};
use core::fmt;
use mmu_armv5::size::{FrameRange, Size4KiB};
use mmu_armv5::{PhysAddr, SpaceId};

/// Largest address-space number a frame can record as its owner: the
/// owner field of a [`FrameDesc`] has 12 bits.
pub const MAX_SPACE_ID: u16 = 0x0fff;

/// What a kernel page holds, as far as moving it is concerned.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum KernelUse {
    /// Kernel code or data.
    Plain,
    /// Second-level (coarse or fine) page tables: moving the frame means
    /// updating the first-level entries that point into it.
    PageTable,
    /// Part of a 16 KiB first-level table (page directory): it moves only as
    /// a whole, and moving the active one updates the translation table base.
    PageDirectory,
}

/// The state of a frame: what it is used for, and by whom.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum FrameState {
    /// Not usable memory (hole, device, firmware).
    Undefined,
    /// Free: may replace a page in an exchange, or become a user page.
    Resource,
    /// A page of the given address space.
    User(SpaceId),
    /// A kernel page.
    Kernel(KernelUse),
}

const STATE_MASK: u16 = 0b11;
const PINNED: u16 = 1 << 2;
const BUSY: u16 = 1 << 3;
/// The flag bits, `PINNED` and `BUSY` (neither state nor payload).
const FLAGS: u16 = 0b1100;
const PAYLOAD_SHIFT: u16 = 4;

/// The per-frame description: state, owner or kernel use, movability and a
/// busy flag (part of an exchange in progress). Two bytes.
///
/// ```
/// use mmu_armv5::SpaceId;
/// use spm::{FrameDesc, FrameError, FrameState, KernelUse};
///
/// let task = SpaceId(4095);
/// // The owner, a movable and a busy bit in two bytes.
/// let d = FrameDesc::new(FrameState::User(task))?.with_movable(false);
/// assert_eq!(d.state(), FrameState::User(task));
/// assert!(!d.is_movable() && !d.is_busy() && !d.is_resource());
/// assert!(FrameDesc::RESOURCE.is_resource());
/// // A new state keeps the flags; an owner that does not fit is refused.
/// let freed = d.with_state(FrameState::Resource)?;
/// assert!(freed.is_resource() && !freed.is_movable());
/// assert_eq!(
///     d.with_state(FrameState::User(SpaceId(4096))),
///     Err(FrameError::SpaceIdOutOfRange(SpaceId(4096)))
/// );
/// assert!(FrameDesc::kernel(KernelUse::PageTable).is_page_table());
/// # Ok::<(), FrameError>(())
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[repr(transparent)]
pub struct FrameDesc(u16);

impl FrameDesc {
    /// An undefined, movable, idle frame (all bits zero).
    pub const UNDEFINED: FrameDesc = FrameDesc(0);

    /// A movable, idle page resource.
    pub const RESOURCE: FrameDesc = FrameDesc(1);

    /// A description of a movable, idle frame in `state`, or
    /// [`FrameError::SpaceIdOutOfRange`] for a user page whose owner is
    /// above [`MAX_SPACE_ID`] (the owner field has 12 bits; nothing is
    /// truncated). [`FrameDesc::UNDEFINED`], [`FrameDesc::RESOURCE`] and
    /// [`FrameDesc::kernel`] build the states that cannot fail.
    ///
    /// ```
    /// use mmu_armv5::SpaceId;
    /// use spm::{FrameDesc, FrameError, FrameState, MAX_SPACE_ID};
    ///
    /// let d = FrameDesc::new(FrameState::User(SpaceId(MAX_SPACE_ID)))?;
    /// assert_eq!(d.state(), FrameState::User(SpaceId(4095)));
    /// assert_eq!(
    ///     FrameDesc::new(FrameState::User(SpaceId(4096))),
    ///     Err(FrameError::SpaceIdOutOfRange(SpaceId(4096)))
    /// );
    /// assert_eq!(FrameDesc::new(FrameState::Resource)?, FrameDesc::RESOURCE);
    /// # Ok::<(), FrameError>(())
    /// ```
    pub const fn new(state: FrameState) -> Result<FrameDesc, FrameError> {
        let bits = match state {
            FrameState::Undefined => 0,
            FrameState::Resource => 1,
            FrameState::User(owner) => {
                if owner.0 > MAX_SPACE_ID {
                    return Err(FrameError::SpaceIdOutOfRange(owner));
                }
                2 | (owner.0 << PAYLOAD_SHIFT)
            }
            FrameState::Kernel(usage) => return Ok(FrameDesc::kernel(usage)),
        };
        Ok(FrameDesc(bits))
    }

    /// A description of a movable, idle kernel page of the given use.
    #[must_use]
    pub const fn kernel(usage: KernelUse) -> FrameDesc {
        // State 3; the use (0, 1, 2) in the payload from bit 4.
        FrameDesc(match usage {
            KernelUse::Plain => 0x03,
            KernelUse::PageTable => 0x13,
            KernelUse::PageDirectory => 0x23,
        })
    }

    /// The frame's state.
    #[must_use]
    pub const fn state(self) -> FrameState {
        let payload = self.0 >> PAYLOAD_SHIFT;
        match self.0 & STATE_MASK {
            0 => FrameState::Undefined,
            1 => FrameState::Resource,
            2 => FrameState::User(SpaceId(payload)),
            _ => FrameState::Kernel(match payload {
                1 => KernelUse::PageTable,
                2 => KernelUse::PageDirectory,
                _ => KernelUse::Plain,
            }),
        }
    }

    /// This description with a new state; movability and busy flag kept.
    /// Fails as [`FrameDesc::new`] does: for an owner above
    /// [`MAX_SPACE_ID`]. [`FrameDesc::with_state_of`] takes the state of an
    /// existing description instead, and cannot fail.
    pub const fn with_state(self, state: FrameState) -> Result<FrameDesc, FrameError> {
        match FrameDesc::new(state) {
            Ok(d) => Ok(FrameDesc(d.0 | (self.0 & FLAGS))),
            Err(e) => Err(e),
        }
    }

    /// Whether the frame may be moved by an exchange.
    #[must_use]
    pub const fn is_movable(self) -> bool {
        self.0 & PINNED == 0
    }

    /// This description with the movable flag set or cleared.
    #[must_use]
    pub const fn with_movable(self, movable: bool) -> FrameDesc {
        if movable {
            FrameDesc(self.0 & !PINNED)
        } else {
            FrameDesc(self.0 | PINNED)
        }
    }

    /// Whether an exchange in progress involves this frame.
    #[must_use]
    pub const fn is_busy(self) -> bool {
        self.0 & BUSY != 0
    }

    /// This description with the busy flag set or cleared.
    #[must_use]
    pub const fn with_busy(self, busy: bool) -> FrameDesc {
        if busy {
            FrameDesc(self.0 | BUSY)
        } else {
            FrameDesc(self.0 & !BUSY)
        }
    }

    /// Whether the frame holds second-level page tables
    /// (`Kernel(PageTable)`), without decoding the state.
    #[must_use]
    pub const fn is_page_table(self) -> bool {
        self.0 & !FLAGS == FrameDesc::kernel(KernelUse::PageTable).0
    }

    /// This description with `content`'s state (and owner or kernel use);
    /// movability and busy flag kept. [`FrameDesc::with_state`] without
    /// decoding the state, and without its check: a description's owner
    /// always fits.
    #[must_use]
    pub const fn with_state_of(self, content: FrameDesc) -> FrameDesc {
        FrameDesc((content.0 & !FLAGS) | (self.0 & FLAGS))
    }

    /// Whether the frame is a kernel page of any use.
    #[must_use]
    pub(crate) const fn is_kernel(self) -> bool {
        self.0 & STATE_MASK == 3
    }

    /// Whether the frame is a page resource.
    #[must_use]
    pub const fn is_resource(self) -> bool {
        self.0 & STATE_MASK == 1
    }

    /// The raw packed value.
    #[must_use]
    pub const fn bits(self) -> u16 {
        self.0
    }
}

impl fmt::Debug for FrameDesc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "FrameDesc({:?}{}{})",
            self.state(),
            if self.is_movable() { "" } else { ", pinned" },
            if self.is_busy() { ", busy" } else { "" }
        )
    }
}

const COUNT_BITS: u32 = 9;
const COUNT_MASK: u32 = (1 << COUNT_BITS) - 1;

/// Per-1 MiB summary: how many frames of the slot are described, free
/// (page resources) and pinned. Four bytes.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[repr(transparent)]
pub struct SectionSummary(u32);

impl SectionSummary {
    /// The summary of a slot nobody described yet (all counts zero), for
    /// the storage a kernel hands to [`FrameTable::new`] (which fills it
    /// in): `static SECTIONS: [SectionSummary; N] = [SectionSummary::EMPTY; N];`.
    pub const EMPTY: SectionSummary = SectionSummary(0);

    /// Frames of this 1 MiB slot that the table describes (256 when a region
    /// covers the whole slot).
    #[must_use]
    pub const fn described(self) -> u32 {
        self.0 & COUNT_MASK
    }

    /// Described frames that are page resources.
    #[must_use]
    pub const fn resources(self) -> u32 {
        (self.0 >> COUNT_BITS) & COUNT_MASK
    }

    /// Described frames that are not movable.
    #[must_use]
    pub const fn pinned(self) -> u32 {
        (self.0 >> (2 * COUNT_BITS)) & COUNT_MASK
    }

    /// Whether the whole 1 MiB is described and free: usable as a section resource.
    #[must_use]
    pub const fn is_free_section(self) -> bool {
        self.described() == SECTION_SIZE / FRAME_SIZE && self.resources() == self.described()
    }

    /// Whether the whole 1 MiB is described and movable.
    #[must_use]
    pub const fn is_movable_section(self) -> bool {
        self.described() == SECTION_SIZE / FRAME_SIZE && self.pinned() == 0
    }

    const fn pack(described: u32, resources: u32, pinned: u32) -> SectionSummary {
        SectionSummary(
            (described & COUNT_MASK)
                | ((resources & COUNT_MASK) << COUNT_BITS)
                | ((pinned & COUNT_MASK) << (2 * COUNT_BITS)),
        )
    }

    /// Adjusts the counts for a frame changing from `old` to `new`.
    const fn update(self, old: FrameDesc, new: FrameDesc) -> SectionSummary {
        let r = self.resources() + new.is_resource() as u32 - old.is_resource() as u32;
        let p = self.pinned() + !new.is_movable() as u32 - !old.is_movable() as u32;
        SectionSummary::pack(self.described(), r, p)
    }
}

impl fmt::Debug for SectionSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "SectionSummary(described {}, free {}, pinned {})",
            self.described(),
            self.resources(),
            self.pinned()
        )
    }
}

/// A frame-table lookup or set-up that failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum FrameError {
    /// No described region contains the address.
    NotDescribed(PhysAddr),
    /// Two regions overlap.
    RegionsOverlap(PhysAddr, PhysAddr),
    /// More regions than the table's capacity `R`.
    TooManyRegions(usize),
    /// The frame storage slice is too short.
    FrameStorage {
        /// Descriptions needed.
        needed: usize,
        /// Descriptions provided.
        given: usize,
    },
    /// The section-summary storage slice is too short.
    SectionStorage {
        /// Summaries needed.
        needed: usize,
        /// Summaries provided.
        given: usize,
    },
    /// A user page's owner above [`MAX_SPACE_ID`], which a [`FrameDesc`]
    /// cannot record.
    SpaceIdOutOfRange(SpaceId),
    /// The frame is part of an exchange in progress (its busy flag is
    /// set): only the exchange changes it, until it ends or is cancelled.
    Busy(PhysAddr),
    /// [`FrameTable::new`] was given frame storage that holds a busy
    /// description (at this index): the storage of a table with an
    /// exchange in progress. Rebuilding over it would clear the busy flags,
    /// so a second exchange could begin on the same frames; end or cancel
    /// the exchange first.
    StorageBusy(usize),
}

impl fmt::Display for FrameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            FrameError::NotDescribed(pa) => write!(f, "no described region contains {pa}"),
            FrameError::RegionsOverlap(a, b) => write!(f, "regions at {a} and {b} overlap"),
            FrameError::TooManyRegions(n) => write!(f, "{n} regions exceed the table's capacity"),
            FrameError::FrameStorage { needed, given } => {
                write!(
                    f,
                    "frame storage holds {given} descriptions, {needed} needed"
                )
            }
            FrameError::SectionStorage { needed, given } => {
                write!(
                    f,
                    "section storage holds {given} summaries, {needed} needed"
                )
            }
            FrameError::SpaceIdOutOfRange(id) => {
                write!(f, "address space {} is above {MAX_SPACE_ID}", id.0)
            }
            FrameError::Busy(pa) => write!(f, "frame {pa} is part of an exchange in progress"),
            FrameError::StorageBusy(i) => write!(
                f,
                "frame storage entry {i} is busy: an exchange on the table is in progress"
            ),
        }
    }
}

impl core::error::Error for FrameError {}

/// Everything known about one frame: its description and its region's fixed properties.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct FrameInfo {
    /// The per-frame description.
    pub desc: FrameDesc,
    /// Where the frame is.
    pub location: Location,
    /// The largest rights the frame may ever have.
    pub max_rights: Rights,
}

/// Where one frame's description and its section summary are stored
/// ([`FrameTable::locate`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct FrameSlot {
    frame: usize,
    section: usize,
}

/// What tells one frame table from another ([`FrameTable::id`]): the
/// address of its description storage, and a digest of its length and
/// regions. Two live tables never share their storage (each holds it
/// `&mut`), so two tables in use at the same time always differ; a table
/// rebuilt later over the same storage with the same regions is the same
/// table to an exchange (which then finds its frames no longer busy).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TableId {
    frames: usize,
    /// The regions' digest, with the storage length mixed in.
    regions: u32,
}

#[derive(Clone, Copy, Debug)]
struct Slot {
    region: PhysRegion,
    first_frame: usize,
    first_section: usize,
}

/// Frame descriptions of up to `R` regions over caller-provided storage.
///
/// Lookup by physical address scans the (at most `R`) regions and indexes
/// the frame directly: O(R), independent of the amount of memory.
///
/// ```
/// use mmu_armv5::{size::FrameRange, PhysAddr};
/// use spm::{FrameDesc, FrameError, FrameState, FrameTable, InitialUse, KernelUse, Location};
/// use spm::{PhysRegion, Rights, SectionSummary};
///
/// // 2 MiB of RAM, the kernel image in its first 64 KiB; an 8 KiB DTCM; a UART.
/// let regions = [
///     PhysRegion::new(PhysAddr::new(0), 2 << 20, Location::Ram, InitialUse::Resource)?,
///     PhysRegion::new(PhysAddr::new(0x0300_0000), 8 << 10, Location::Dtcm, InitialUse::Resource)?,
///     PhysRegion::new(PhysAddr::new(0x101F_1000), 0x1000, Location::Device, InitialUse::Undefined)?,
/// ];
/// // Storage sized by the table: two bytes per frame, four per MiB touched.
/// assert_eq!(FrameTable::<3>::frames_needed(&regions), 512 + 2 + 1);
/// assert_eq!(FrameTable::<3>::sections_needed(&regions), 2 + 1 + 1);
/// let mut frames = [FrameDesc::default(); 515];
/// let mut sections = [SectionSummary::default(); 4];
/// let mut table = FrameTable::<3>::new(&regions, &mut frames, &mut sections)?;
/// assert_eq!(table.overhead_bytes(), 515 * 2 + 4 * 4);
///
/// // Boot: the kernel image is pinned kernel memory.
/// table.init_range(FrameRange::from_bytes(PhysAddr::new(0), 64 << 10)?, FrameState::Kernel(KernelUse::Plain), false)?;
/// let k = table.desc(PhysAddr::new(0x8000))?;
/// assert_eq!((k.state(), k.is_movable()), (FrameState::Kernel(KernelUse::Plain), false));
///
/// // Per-MiB summaries: the first MiB is no longer free, the second is.
/// let (first, second) = (table.section(PhysAddr::new(0))?, table.section(PhysAddr::new(0x0010_0000))?);
/// assert_eq!((first.described(), first.resources(), first.pinned()), (256, 240, 16));
/// assert!(!first.is_free_section() && second.is_free_section());
///
/// // Lookups give the region's fixed properties too.
/// let d = table.info(PhysAddr::new(0x0300_1abc))?;
/// assert_eq!((d.location, d.max_rights, d.desc.state()), (Location::Dtcm, Rights::RW, FrameState::Resource));
/// assert!(!table.desc(PhysAddr::new(0x101F_1000))?.is_movable());
/// assert_eq!(table.desc(PhysAddr::new(0x0400_0000)), Err(FrameError::NotDescribed(PhysAddr::new(0x0400_0000))));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct FrameTable<'a, const R: usize> {
    slots: heapless::Vec<Slot, R>,
    frames: &'a mut [FrameDesc],
    sections: &'a mut [SectionSummary],
    /// A digest of the regions, part of [`FrameTable::id`].
    regions: u32,
}

impl<'a, const R: usize> FrameTable<'a, R> {
    /// Number of [`FrameDesc`]s the storage for `regions` needs.
    ///
    /// `const`, so a kernel can size its storage statically from a `const`
    /// region list (see [`FrameTable::sections_needed`]).
    #[must_use]
    pub const fn frames_needed(regions: &[PhysRegion]) -> usize {
        let mut n = 0;
        let mut i = 0;
        while i < regions.len() {
            n += regions[i].frames() as usize;
            i += 1;
        }
        n
    }

    /// Number of [`SectionSummary`]s the storage for `regions` needs.
    ///
    /// ```
    /// use mmu_armv5::PhysAddr;
    /// use spm::frame::{FrameDesc, FrameTable, SectionSummary};
    /// use spm::{InitialUse, Location, PhysRegion};
    ///
    /// const RAM: PhysRegion = match PhysRegion::new(
    ///     PhysAddr::new(0x0010_0000),
    ///     0x0020_0000,
    ///     Location::Ram,
    ///     InitialUse::Kernel,
    /// ) {
    ///     Ok(r) => r,
    ///     Err(_) => panic!("2 MiB at 1 MiB is a valid region"),
    /// };
    /// const FRAMES: usize = FrameTable::<1>::frames_needed(&[RAM]);
    /// const SECTIONS: usize = FrameTable::<1>::sections_needed(&[RAM]);
    /// // Storage sized at compile time, for a `static` of the kernel's.
    /// let storage = ([FrameDesc::UNDEFINED; FRAMES], [SectionSummary::EMPTY; SECTIONS]);
    /// assert_eq!((storage.0.len(), storage.1.len()), (512, 2));
    /// ```
    #[must_use]
    pub const fn sections_needed(regions: &[PhysRegion]) -> usize {
        let mut n = 0;
        let mut i = 0;
        while i < regions.len() {
            n += regions[i].sections() as usize;
            i += 1;
        }
        n
    }

    /// Builds the table for `regions` in the given storage, every frame in its
    /// region's initial state.
    ///
    /// Storage that holds a busy description (the storage of an earlier
    /// table whose exchange is still in progress: an [`Exchange`] does not
    /// borrow the table between steps) is refused with
    /// [`FrameError::StorageBusy`] and left unchanged: a rebuild would clear
    /// the busy flags, and a second exchange could then begin on the same
    /// frames and put them back into the state the first one expects (the
    /// same storage and regions are the same table to it). Fresh storage
    /// (`FrameDesc::default()`, or zeroed) holds no busy description.
    ///
    /// [`Exchange`]: crate::Exchange
    pub fn new(
        regions: &[PhysRegion],
        frames: &'a mut [FrameDesc],
        sections: &'a mut [SectionSummary],
    ) -> Result<Self, FrameError> {
        if regions.len() > R {
            return Err(FrameError::TooManyRegions(regions.len()));
        }
        for (i, a) in regions.iter().enumerate() {
            for b in regions.iter().skip(i + 1) {
                if a.overlaps(b) {
                    return Err(FrameError::RegionsOverlap(a.base(), b.base()));
                }
            }
        }
        let needed = Self::frames_needed(regions);
        if frames.len() < needed {
            return Err(FrameError::FrameStorage {
                needed,
                given: frames.len(),
            });
        }
        let needed_s = Self::sections_needed(regions);
        if sections.len() < needed_s {
            return Err(FrameError::SectionStorage {
                needed: needed_s,
                given: sections.len(),
            });
        }
        if let Some(i) = frames.iter().position(|d| d.is_busy()) {
            return Err(FrameError::StorageBusy(i));
        }
        let mut slots = heapless::Vec::new();
        let (mut f0, mut s0) = (0usize, 0usize);
        for r in regions {
            let desc = match r.initial() {
                InitialUse::Undefined => FrameDesc::UNDEFINED,
                InitialUse::Resource => FrameDesc::RESOURCE,
                InitialUse::Kernel => FrameDesc::kernel(KernelUse::Plain),
            }
            .with_movable(r.movable());
            let n = r.frames() as usize;
            frames.iter_mut().skip(f0).take(n).for_each(|d| *d = desc);
            // Count the frames of each 1 MiB slot the region covers.
            let first_mib = r.base().as_u32() >> 20;
            for (k, s) in sections
                .iter_mut()
                .skip(s0)
                .take(r.sections() as usize)
                .enumerate()
            {
                let mib = (first_mib + k as u32) << 20;
                let lo = mib.max(r.base().as_u32());
                let hi = mib.saturating_add(SECTION_SIZE - 1).min(r.last());
                let described = (hi - lo) / FRAME_SIZE + 1;
                *s = SectionSummary::pack(
                    described,
                    if desc.is_resource() { described } else { 0 },
                    if desc.is_movable() { 0 } else { described },
                );
            }
            // Cannot fail: regions.len() <= R was checked.
            let _ = slots.push(Slot {
                region: *r,
                first_frame: f0,
                first_section: s0,
            });
            f0 += n;
            s0 += r.sections() as usize;
        }
        // FNV-1a over the storage length and every region's base, size,
        // location and movability.
        let mut digest: u32 = (0x811c_9dc5 ^ frames.len() as u32).wrapping_mul(0x0100_0193);
        for r in regions {
            for w in [
                r.base().as_u32(),
                r.size(),
                r.location() as u32,
                u32::from(r.movable()),
            ] {
                digest = (digest ^ w).wrapping_mul(0x0100_0193);
            }
        }
        Ok(FrameTable {
            slots,
            frames,
            sections,
            regions: digest,
        })
    }

    /// This table's identity, which an exchange compares at every step
    /// (see [`TableId`]): two words and a digest, no search.
    #[inline]
    pub(crate) fn id(&self) -> TableId {
        TableId {
            frames: self.frames.as_ptr().addr(),
            regions: self.regions,
        }
    }

    /// The described regions.
    pub fn regions(&self) -> impl Iterator<Item = &PhysRegion> {
        self.slots.iter().map(|s| &s.region)
    }

    /// Number of described frames.
    #[must_use]
    pub fn frame_count(&self) -> usize {
        self.slots.iter().map(|s| s.region.frames() as usize).sum()
    }

    /// Number of described frames marked busy (part of an exchange in
    /// progress). O(frames): for checks and reports, not fast paths.
    #[must_use]
    pub fn busy_frames(&self) -> usize {
        let n = self.frame_count().min(self.frames.len());
        self.frames[..n].iter().filter(|d| d.is_busy()).count()
    }

    /// Bytes of frame descriptions and section summaries in use.
    #[must_use]
    pub fn overhead_bytes(&self) -> usize {
        self.frame_count() * core::mem::size_of::<FrameDesc>()
            + Self::sections_needed_slots(&self.slots) * core::mem::size_of::<SectionSummary>()
    }

    fn sections_needed_slots(slots: &[Slot]) -> usize {
        slots.iter().map(|s| s.region.sections() as usize).sum()
    }

    fn slot(&self, pa: PhysAddr) -> Result<&Slot, FrameError> {
        self.slots
            .iter()
            .find(|s| s.region.contains(pa))
            .ok_or(FrameError::NotDescribed(pa))
    }

    /// (frame index, section index) of `pa`.
    fn index(&self, pa: PhysAddr) -> Result<(usize, usize), FrameError> {
        let s = self.slot(pa)?;
        let off = pa.as_u32() - s.region.base().as_u32();
        let sec = (pa.as_u32() >> 20) - (s.region.base().as_u32() >> 20);
        Ok((
            s.first_frame + (off / FRAME_SIZE) as usize,
            s.first_section + sec as usize,
        ))
    }

    /// The region containing `pa`.
    pub fn region_of(&self, pa: PhysAddr) -> Result<&PhysRegion, FrameError> {
        self.slot(pa).map(|s| &s.region)
    }

    /// The description of the frame containing `pa`.
    pub fn desc(&self, pa: PhysAddr) -> Result<FrameDesc, FrameError> {
        let (i, _) = self.index(pa)?;
        self.frames
            .get(i)
            .copied()
            .ok_or(FrameError::NotDescribed(pa))
    }

    /// The description of the frame containing `pa`, with its location and maximum rights.
    pub fn info(&self, pa: PhysAddr) -> Result<FrameInfo, FrameError> {
        let s = self.slot(pa)?;
        Ok(FrameInfo {
            desc: self.desc(pa)?,
            location: s.region.location(),
            max_rights: s.region.max_rights(),
        })
    }

    /// The summary of the 1 MiB slot containing `pa` (of `pa`'s region).
    pub fn section(&self, pa: PhysAddr) -> Result<SectionSummary, FrameError> {
        let (_, si) = self.index(pa)?;
        self.sections
            .get(si)
            .copied()
            .ok_or(FrameError::NotDescribed(pa))
    }

    /// Replaces the description of the frame containing `pa`, keeping the
    /// section summary in step. This is the mechanism under the checked
    /// operations of [`ops`](crate::ops); it checks no permissions itself.
    pub(crate) fn set(&mut self, pa: PhysAddr, desc: FrameDesc) -> Result<FrameDesc, FrameError> {
        let (fi, si) = self.index(pa)?;
        let slot = self
            .frames
            .get_mut(fi)
            .ok_or(FrameError::NotDescribed(pa))?;
        let old = *slot;
        *slot = desc;
        if let Some(s) = self.sections.get_mut(si) {
            *s = s.update(old, desc);
        }
        Ok(old)
    }

    /// Where the description of the frame containing `pa` is stored: a
    /// handle for [`FrameTable::desc_at`] and [`FrameTable::set_at`], which
    /// skip the search of the regions. Valid for the table's lifetime (the
    /// regions never change).
    pub(crate) fn locate(&self, pa: PhysAddr) -> Result<FrameSlot, FrameError> {
        let (frame, section) = self.index(pa)?;
        if frame >= self.frames.len() {
            return Err(FrameError::NotDescribed(pa));
        }
        Ok(FrameSlot { frame, section })
    }

    /// The description stored at `at` ([`FrameTable::locate`] of this
    /// table). A slot this table has not handed out reads as
    /// [`FrameDesc::UNDEFINED`] (never busy), never a panic.
    #[inline]
    pub(crate) fn desc_at(&self, at: FrameSlot) -> FrameDesc {
        self.frames
            .get(at.frame)
            .copied()
            .unwrap_or(FrameDesc::UNDEFINED)
    }

    /// The descriptions of the `n` frames from `pa` on, if they lie in one
    /// region (then they are stored one after the other): a page's frames
    /// checked without a search per frame. `None` if any is not described
    /// or the run crosses a region's end.
    pub(crate) fn run(&self, pa: PhysAddr, n: u32) -> Option<&[FrameDesc]> {
        let s = self.slot(pa).ok()?;
        let last = pa
            .as_u32()
            .checked_add((n.checked_sub(1)?).checked_mul(FRAME_SIZE)?)?;
        if last > s.region.last() {
            return None;
        }
        let first =
            s.first_frame + ((pa.as_u32() - s.region.base().as_u32()) / FRAME_SIZE) as usize;
        self.frames.get(first..first.checked_add(n as usize)?)
    }

    /// [`FrameTable::set`] at a located frame (nothing for a slot this
    /// table has not handed out).
    pub(crate) fn set_at(&mut self, at: FrameSlot, desc: FrameDesc) {
        let Some(d) = self.frames.get_mut(at.frame) else {
            return;
        };
        let old = core::mem::replace(d, desc);
        // The summary counts resources and pinned frames only.
        if old.is_resource() != desc.is_resource() || old.is_movable() != desc.is_movable() {
            if let Some(s) = self.sections.get_mut(at.section) {
                *s = s.update(old, desc);
            }
        }
    }

    /// Sets or clears the busy flag of a located frame (no summary counts
    /// the flag).
    pub(crate) fn set_busy_at(&mut self, at: FrameSlot, busy: bool) {
        if let Some(d) = self.frames.get_mut(at.frame) {
            *d = d.with_busy(busy);
        }
    }

    /// Boot-time set-up, by the kernel: puts every frame of `frames` (a
    /// [`FrameRange`], or one [`Frame`](mmu_armv5::size::Frame)) into `state` with the given
    /// movability (e.g. the kernel image as kernel pages, a DMA pool as
    /// pinned, user memory handed to sigma0). Not an operation for address
    /// spaces: it checks no ownership. A range not wholly described fails
    /// with [`FrameError::NotDescribed`], one with a frame under an
    /// exchange in progress with [`FrameError::Busy`] (clearing the busy
    /// flag would let a second exchange begin on the same frames), and
    /// either changes nothing.
    pub fn init_range(
        &mut self,
        frames: impl Into<FrameRange<Size4KiB>>,
        state: FrameState,
        movable: bool,
    ) -> Result<(), FrameError> {
        let frames = frames.into();
        // Check first, so a failure changes nothing.
        for f in frames {
            let (i, _) = self.index(f.start())?;
            if self.frames.get(i).is_some_and(|d| d.is_busy()) {
                return Err(FrameError::Busy(f.start()));
            }
        }
        let desc = FrameDesc::new(state)?.with_movable(movable);
        for f in frames {
            self.set(f.start(), desc)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mmu_armv5::size::Frame;
    use proptest::prelude::*;
    use std::vec;

    #[test]
    fn descriptions_are_at_most_four_bytes_per_frame() {
        assert!(core::mem::size_of::<FrameDesc>() <= 4);
        assert_eq!(core::mem::size_of::<FrameDesc>(), 2);
        assert_eq!(core::mem::size_of::<SectionSummary>(), 4);
        // Including the per-MiB summary, the whole table stays under 4 bytes per frame.
        let regions = [PhysRegion::new(
            PhysAddr::new(0),
            128 << 20,
            Location::Ram,
            InitialUse::Resource,
        )
        .unwrap()];
        let mut f = vec![FrameDesc::default(); FrameTable::<1>::frames_needed(&regions)];
        let mut s = vec![SectionSummary::default(); FrameTable::<1>::sections_needed(&regions)];
        let t = FrameTable::<1>::new(&regions, &mut f, &mut s).unwrap();
        assert!(t.overhead_bytes() <= 4 * t.frame_count());
        assert_eq!(t.overhead_bytes(), 32768 * 2 + 128 * 4);
    }

    fn any_state() -> impl Strategy<Value = FrameState> {
        prop_oneof![
            Just(FrameState::Undefined),
            Just(FrameState::Resource),
            (0..=MAX_SPACE_ID).prop_map(|s| FrameState::User(SpaceId(s))),
            Just(FrameState::Kernel(KernelUse::Plain)),
            Just(FrameState::Kernel(KernelUse::PageTable)),
            Just(FrameState::Kernel(KernelUse::PageDirectory)),
        ]
    }

    proptest! {
        #![proptest_config(crate::proptest_config())]
        #[test]
        fn packing_round_trips(state in any_state(), movable: bool, busy: bool) {
            let d = FrameDesc::new(state).unwrap().with_movable(movable).with_busy(busy);
            prop_assert_eq!(d.state(), state);
            prop_assert_eq!(d.is_movable(), movable);
            prop_assert_eq!(d.is_busy(), busy);
            prop_assert_eq!(d.is_resource(), state == FrameState::Resource);
            let s2 = FrameState::Kernel(KernelUse::PageTable);
            let d2 = d.with_state(s2).unwrap();
            prop_assert_eq!(d2.state(), s2);
            prop_assert_eq!(d2.is_movable(), movable);
            prop_assert_eq!(d2.is_busy(), busy);
        }
    }

    proptest! {
        #![proptest_config(crate::proptest_config())]
        /// An owner above the 12-bit field is refused, never truncated,
        /// whatever the description it would replace.
        #[test]
        fn owners_above_twelve_bits_are_refused(
            id in (MAX_SPACE_ID + 1)..=u16::MAX,
            base in any_state(),
            movable: bool,
            busy: bool,
        ) {
            let user = FrameState::User(SpaceId(id));
            let err = Err(FrameError::SpaceIdOutOfRange(SpaceId(id)));
            prop_assert_eq!(FrameDesc::new(user), err);
            let d = FrameDesc::new(base).unwrap().with_movable(movable).with_busy(busy);
            prop_assert_eq!(d.with_state(user), err);
        }
    }

    /// The owner field holds 0..=4095; the table refuses a larger owner
    /// before changing any frame.
    #[test]
    fn owners_are_limited_to_twelve_bits() {
        let top = FrameState::User(SpaceId(MAX_SPACE_ID));
        assert_eq!(FrameDesc::new(top).unwrap().state(), top);
        let over = FrameState::User(SpaceId(MAX_SPACE_ID + 1));
        let err = FrameError::SpaceIdOutOfRange(SpaceId(4096));
        assert_eq!(FrameDesc::new(over), Err(err));
        assert_eq!(FrameDesc::RESOURCE.with_state(over), Err(err));
        assert_eq!(std::format!("{err}"), "address space 4096 is above 4095");
        let regions = layout();
        let mut f = vec![FrameDesc::default(); FrameTable::<4>::frames_needed(&regions)];
        let mut s = vec![SectionSummary::default(); FrameTable::<4>::sections_needed(&regions)];
        let mut t = FrameTable::<4>::new(&regions, &mut f, &mut s).unwrap();
        let itcm = PhysAddr::new(0xfffe_0000);
        let before = (t.desc(itcm).unwrap(), t.section(itcm).unwrap());
        assert_eq!(
            t.init_range(FrameRange::from_bytes(itcm, 0x2000).unwrap(), over, true),
            Err(err)
        );
        assert_eq!((t.desc(itcm).unwrap(), t.section(itcm).unwrap()), before);
        t.init_range(FrameRange::from_bytes(itcm, 0x2000).unwrap(), top, true)
            .unwrap();
        assert_eq!(t.desc(itcm).unwrap().state(), top);
    }

    /// The constants and the kernel constructor are what `new` builds.
    #[test]
    fn infallible_constructors_match_new() {
        assert_eq!(
            FrameDesc::new(FrameState::Undefined),
            Ok(FrameDesc::UNDEFINED)
        );
        assert_eq!(
            FrameDesc::new(FrameState::Resource),
            Ok(FrameDesc::RESOURCE)
        );
        assert_eq!(FrameDesc::UNDEFINED, FrameDesc::default());
        for k in [
            KernelUse::Plain,
            KernelUse::PageTable,
            KernelUse::PageDirectory,
        ] {
            assert_eq!(
                FrameDesc::new(FrameState::Kernel(k)),
                Ok(FrameDesc::kernel(k))
            );
            assert_eq!(FrameDesc::kernel(k).state(), FrameState::Kernel(k));
        }
    }

    fn layout() -> [PhysRegion; 4] {
        let p = PhysAddr::new;
        [
            PhysRegion::new(p(0), 4 << 20, Location::Ram, InitialUse::Kernel).unwrap(),
            PhysRegion::new(p(0xfffe_0000), 0x8000, Location::Itcm, InitialUse::Resource).unwrap(),
            PhysRegion::new(p(0xfffe_8000), 0x8000, Location::Dtcm, InitialUse::Resource).unwrap(),
            PhysRegion::new(
                p(0x1010_0000),
                0x1000,
                Location::Device,
                InitialUse::Undefined,
            )
            .unwrap(),
        ]
    }

    #[test]
    fn lookup_gives_region_properties() {
        let regions = layout();
        let mut f = vec![FrameDesc::default(); FrameTable::<4>::frames_needed(&regions)];
        let mut s = vec![SectionSummary::default(); FrameTable::<4>::sections_needed(&regions)];
        let t = FrameTable::<4>::new(&regions, &mut f, &mut s).unwrap();
        let i = t.info(PhysAddr::new(0xfffe_9abc)).unwrap();
        assert_eq!(i.location, Location::Dtcm);
        assert_eq!(i.max_rights, Rights::RW);
        assert!(i.desc.is_resource());
        let d = t.info(PhysAddr::new(0x1010_0000)).unwrap();
        assert_eq!(d.location, Location::Device);
        assert!(!d.desc.is_movable());
        assert_eq!(
            t.desc(PhysAddr::new(0x0040_0000)),
            Err(FrameError::NotDescribed(PhysAddr::new(0x0040_0000)))
        );
        assert_eq!(t.frame_count(), 1024 + 8 + 8 + 1);
        let sec = t.section(PhysAddr::new(0xfffe_0000)).unwrap();
        assert_eq!((sec.described(), sec.resources(), sec.pinned()), (8, 8, 0));
        assert!(!sec.is_free_section());
    }

    #[test]
    fn set_up_errors() {
        let regions = layout();
        let mut f = vec![FrameDesc::default(); 10];
        let mut s = vec![SectionSummary::default(); 10];
        assert_eq!(
            FrameTable::<4>::new(&regions, &mut f, &mut s).err(),
            Some(FrameError::FrameStorage {
                needed: 1041,
                given: 10
            })
        );
        assert_eq!(
            FrameTable::<3>::new(&regions, &mut f, &mut s).err(),
            Some(FrameError::TooManyRegions(4))
        );
        let mut f = vec![FrameDesc::default(); 2000];
        let mut s0 = vec![SectionSummary::default(); 2];
        assert_eq!(
            FrameTable::<4>::new(&regions, &mut f, &mut s0).err(),
            Some(FrameError::SectionStorage {
                needed: 7,
                given: 2
            })
        );
        let p = PhysAddr::new;
        let overlapping = [
            PhysRegion::new(p(0), 0x2000, Location::Ram, InitialUse::Kernel).unwrap(),
            PhysRegion::new(p(0x1000), 0x2000, Location::Ram, InitialUse::Kernel).unwrap(),
        ];
        assert_eq!(
            FrameTable::<4>::new(&overlapping, &mut f, &mut s).err(),
            Some(FrameError::RegionsOverlap(p(0), p(0x1000)))
        );
    }

    #[test]
    fn a_frame_moving_between_resource_and_user_moves_one_count() {
        let regions = layout();
        let mut f = vec![FrameDesc::default(); FrameTable::<4>::frames_needed(&regions)];
        let mut s = vec![SectionSummary::default(); FrameTable::<4>::sections_needed(&regions)];
        let mut t = FrameTable::<4>::new(&regions, &mut f, &mut s).unwrap();
        let mib1 = PhysAddr::new(0x0010_0000);
        t.init_range(
            FrameRange::from_bytes(mib1, SECTION_SIZE).unwrap(),
            FrameState::Resource,
            true,
        )
        .unwrap();
        let frame = PhysAddr::new(0x0010_5000);
        let counts = |t: &FrameTable<'_, 4>| {
            let s = t.section(mib1).unwrap();
            (s.described(), s.resources(), s.pinned())
        };
        assert_eq!(counts(&t), (256, 256, 0));
        // Resource -> user (what an exchange does to the resource frame).
        let d = t.desc(frame).unwrap();
        let user = FrameState::User(SpaceId(3));
        t.set(frame, d.with_state(user).unwrap()).unwrap();
        assert_eq!(counts(&t), (256, 255, 0));
        // Pinned user page: the pinned count follows the movable flag.
        t.set(frame, t.desc(frame).unwrap().with_movable(false))
            .unwrap();
        assert_eq!(counts(&t), (256, 255, 1));
        // Back to a movable resource (the old frame after an exchange).
        let back = t
            .desc(frame)
            .unwrap()
            .with_state(FrameState::Resource)
            .unwrap();
        t.set(frame, back.with_movable(true)).unwrap();
        assert_eq!(counts(&t), (256, 256, 0));
        // The busy flag is no count.
        let at = t.locate(frame).unwrap();
        t.set_busy_at(at, true);
        assert_eq!(counts(&t), (256, 256, 0));
        t.set_busy_at(at, false);
        // Through the located path too.
        t.set_at(at, t.desc_at(at).with_state(user).unwrap());
        assert_eq!(counts(&t), (256, 255, 0));
    }

    #[test]
    fn summaries_follow_changes() {
        let regions = layout();
        let mut f = vec![FrameDesc::default(); FrameTable::<4>::frames_needed(&regions)];
        let mut s = vec![SectionSummary::default(); FrameTable::<4>::sections_needed(&regions)];
        let mut t = FrameTable::<4>::new(&regions, &mut f, &mut s).unwrap();
        let mib1 = PhysAddr::new(0x0010_0000);
        assert!(t.section(mib1).unwrap().is_movable_section());
        t.init_range(
            FrameRange::from_bytes(mib1, SECTION_SIZE).unwrap(),
            FrameState::Resource,
            true,
        )
        .unwrap();
        assert!(t.section(mib1).unwrap().is_free_section());
        t.init_range(
            FrameRange::from_bytes(PhysAddr::new(0x0010_3000), 0x2000).unwrap(),
            FrameState::Kernel(KernelUse::Plain),
            false,
        )
        .unwrap();
        let sec = t.section(mib1).unwrap();
        assert_eq!((sec.resources(), sec.pinned()), (254, 2));
        assert!(!sec.is_free_section() && !sec.is_movable_section());
        // Other slots untouched.
        assert_eq!(t.section(PhysAddr::new(0)).unwrap().resources(), 0);
        // A range leaving the region changes nothing.
        assert_eq!(
            t.init_range(
                FrameRange::from_bytes(PhysAddr::new(0x003f_f000), 0x2000).unwrap(),
                FrameState::Resource,
                true
            ),
            Err(FrameError::NotDescribed(PhysAddr::new(0x0040_0000)))
        );
        assert!(!t.desc(PhysAddr::new(0x003f_f000)).unwrap().is_resource());
        // A misaligned frame cannot be named at all.
        assert!(Frame::<Size4KiB>::from_start(PhysAddr::new(0x0000_0800)).is_err());
    }

    #[test]
    fn located_updates_keep_flags_and_summaries() {
        let regions = layout();
        let mut f = vec![FrameDesc::default(); FrameTable::<4>::frames_needed(&regions)];
        let mut s = vec![SectionSummary::default(); FrameTable::<4>::sections_needed(&regions)];
        let mut t = FrameTable::<4>::new(&regions, &mut f, &mut s).unwrap();
        let mib1 = PhysAddr::new(0x0010_0000);
        t.init_range(
            FrameRange::from_bytes(mib1, SECTION_SIZE).unwrap(),
            FrameState::Resource,
            true,
        )
        .unwrap();
        let (a, b) = (PhysAddr::new(0x0010_1000), PhysAddr::new(0x0010_2000));
        t.init_range(
            Frame::from_start(a).unwrap(),
            FrameState::Kernel(KernelUse::PageTable),
            false,
        )
        .unwrap();
        let (la, lb) = (t.locate(a).unwrap(), t.locate(b).unwrap());
        assert_eq!(t.desc_at(la), t.desc(a).unwrap());
        assert!(t.desc_at(la).is_page_table());
        assert!(t.desc_at(la).with_busy(true).is_page_table());
        assert!(!FrameDesc::kernel(KernelUse::Plain).is_page_table());
        // The busy flag is no count of the summary.
        let before = t.section(mib1).unwrap();
        t.set_busy_at(lb, true);
        assert!(t.desc(b).unwrap().is_busy());
        assert_eq!(t.section(mib1).unwrap(), before);
        // The content's state moves; the frame keeps its own flags.
        let moved = t.desc_at(lb).with_state_of(t.desc_at(la));
        assert_eq!(moved.state(), FrameState::Kernel(KernelUse::PageTable));
        assert!(moved.is_busy() && moved.is_movable());
        t.set_at(lb, moved);
        let sec = t.section(mib1).unwrap();
        assert_eq!((sec.resources(), sec.pinned()), (254, 1));
        t.set_busy_at(lb, false);
        assert_eq!(t.desc(b).unwrap(), moved.with_busy(false));
        assert!(FrameDesc::kernel(KernelUse::Plain).is_kernel());
        assert!(!FrameDesc::RESOURCE.is_kernel());
    }

    /// The packed layout, bit by bit, as the module documentation draws it.
    #[test]
    fn descriptions_pack_to_the_documented_bits() {
        assert_eq!(FLAGS, PINNED | BUSY);
        let user = |n| FrameState::User(SpaceId(n));
        let k = FrameState::Kernel;
        let cases = [
            (FrameState::Undefined, 0x0000),
            (FrameState::Resource, 0x0001),
            (user(0), 0x0002),
            (user(0xabc), 0xabc2),
            (user(MAX_SPACE_ID), 0xfff2),
            (k(KernelUse::Plain), 0x0003),
            (k(KernelUse::PageTable), 0x0013),
            (k(KernelUse::PageDirectory), 0x0023),
        ];
        for (state, bits) in cases {
            let d = FrameDesc::new(state).unwrap();
            assert_eq!(d.bits(), bits, "{state:?}");
            assert_eq!(d.with_movable(false).bits(), bits | 0x4, "{state:?} pinned");
            assert_eq!(d.with_busy(true).bits(), bits | 0x8, "{state:?} busy");
            let both = d.with_movable(false).with_busy(true);
            assert_eq!(both.bits(), bits | 0xc, "{state:?} both");
            // Clearing a flag clears that flag only.
            assert_eq!(both.with_movable(true).bits(), bits | 0x8);
            assert_eq!(both.with_busy(false).bits(), bits | 0x4);
            // Setting a flag twice changes nothing.
            assert_eq!(both.with_movable(false).with_busy(true), both);
            assert_eq!(d.with_movable(true).with_busy(false), d);
            // A new state keeps the flags and drops the old payload.
            let other = FrameDesc::new(user(0x123)).unwrap().with_busy(true);
            assert_eq!(both.with_state(user(0x123)).unwrap().bits(), 0x1232 | 0xc);
            assert_eq!(d.with_state(user(0x123)), FrameDesc::new(user(0x123)));
            // `with_state_of` is `with_state` without decoding.
            assert_eq!(Ok(both.with_state_of(other)), both.with_state(user(0x123)));
            assert_eq!(d.with_state_of(d.with_busy(true)), d);
            assert_eq!(d.is_page_table(), state == k(KernelUse::PageTable));
            assert_eq!(both.is_page_table(), state == k(KernelUse::PageTable));
            assert_eq!(d.is_kernel(), matches!(state, FrameState::Kernel(_)));
            assert_eq!(both.is_resource(), state == FrameState::Resource);
        }
        // An unknown kernel use decodes as plain.
        assert_eq!(FrameDesc(0x0033).state(), k(KernelUse::Plain));
    }

    #[test]
    fn descriptions_and_summaries_print_their_fields() {
        use std::format;
        let d = FrameDesc::RESOURCE;
        assert_eq!(format!("{d:?}"), "FrameDesc(Resource)");
        let d = d.with_movable(false).with_busy(true);
        assert_eq!(format!("{d:?}"), "FrameDesc(Resource, pinned, busy)");
        let s = SectionSummary::pack(256, 255, 3);
        assert_eq!(
            format!("{s:?}"),
            "SectionSummary(described 256, free 255, pinned 3)"
        );
        let e = FrameError::FrameStorage {
            needed: 7,
            given: 2,
        };
        assert_eq!(
            format!("{e}"),
            "frame storage holds 2 descriptions, 7 needed"
        );
    }

    /// The three counts use nine bits each, side by side.
    #[test]
    fn summaries_pack_three_nine_bit_counts() {
        let s = SectionSummary::pack(256, 256, 256);
        assert_eq!(s.0, 256 | (256 << 9) | (256 << 18));
        assert_eq!((s.described(), s.resources(), s.pinned()), (256, 256, 256));
        let s = SectionSummary::pack(1, 2, 3);
        assert_eq!(s.0, 1 | (2 << 9) | (3 << 18));
        assert!(SectionSummary::pack(256, 256, 0).is_free_section());
        assert!(!SectionSummary::pack(255, 255, 0).is_free_section());
        assert!(!SectionSummary::pack(256, 255, 0).is_free_section());
        assert!(SectionSummary::pack(256, 0, 0).is_movable_section());
        assert!(!SectionSummary::pack(256, 0, 1).is_movable_section());
        assert!(!SectionSummary::pack(128, 0, 0).is_movable_section());
    }

    /// `run`: the descriptions of consecutive frames of one region, or
    /// `None` when any lies outside it.
    #[test]
    fn runs_stay_inside_one_region() {
        let regions = layout();
        let mut f = vec![FrameDesc::default(); FrameTable::<4>::frames_needed(&regions)];
        let mut s = vec![SectionSummary::default(); FrameTable::<4>::sections_needed(&regions)];
        let mut t = FrameTable::<4>::new(&regions, &mut f, &mut s).unwrap();
        let p = PhysAddr::new;
        t.init_range(
            Frame::from_start(p(0xfffe_9000)).unwrap(),
            FrameState::Resource,
            false,
        )
        .unwrap();
        // DTCM: 8 frames from 0xfffe_8000; the second one is pinned.
        let run = t.run(p(0xfffe_8000), 8).unwrap();
        assert_eq!(run.len(), 8);
        assert!(run[0].is_movable() && !run[1].is_movable() && run[2].is_movable());
        assert_eq!(t.run(p(0xfffe_9000), 7).unwrap().len(), 7);
        assert!(!t.run(p(0xfffe_9000), 1).unwrap()[0].is_movable());
        assert_eq!(t.run(p(0xfffe_9000), 8), None, "past the region's end");
        assert_eq!(t.run(p(0xfffe_f000), 1).unwrap().len(), 1);
        assert_eq!(t.run(p(0xfffe_f000), 2), None);
        assert_eq!(t.run(p(0xfffe_8000), 0), None);
        assert_eq!(t.run(p(0x0040_0000), 1), None, "not described");
        assert_eq!(t.run(p(0xffff_f000), u32::MAX), None);
        // The first region starts at frame 0 of the storage, the others after it.
        assert_eq!(
            t.run(p(0x3ff000), 1).unwrap()[0],
            t.desc(p(0x3ff000)).unwrap()
        );
    }

    /// `set_at` keeps the summary in step for every kind of change, and
    /// ignores a slot the table never handed out.
    #[test]
    fn located_sets_count_resources_and_pins() {
        let regions = layout();
        let mut f = vec![FrameDesc::default(); FrameTable::<4>::frames_needed(&regions)];
        let mut s = vec![SectionSummary::default(); FrameTable::<4>::sections_needed(&regions)];
        let mut t = FrameTable::<4>::new(&regions, &mut f, &mut s).unwrap();
        let frame = PhysAddr::new(0xfffe_1000);
        let at = t.locate(frame).unwrap();
        let counts = |t: &FrameTable<'_, 4>| {
            let s = t.section(frame).unwrap();
            (s.resources(), s.pinned())
        };
        assert_eq!(counts(&t), (8, 0));
        let d = t.desc_at(at);
        let user = FrameState::User(SpaceId(1));
        t.set_at(at, d.with_state(user).unwrap());
        assert_eq!(counts(&t), (7, 0));
        t.set_at(at, t.desc_at(at).with_movable(false));
        assert_eq!(counts(&t), (7, 1));
        t.set_at(
            at,
            t.desc_at(at)
                .with_state_of(FrameDesc::RESOURCE)
                .with_movable(true),
        );
        assert_eq!(counts(&t), (8, 0));
        // Resource and pinned at once.
        t.set_at(at, FrameDesc::RESOURCE.with_movable(false));
        assert_eq!(counts(&t), (8, 1));
        t.set_at(at, FrameDesc::new(user).unwrap().with_movable(true));
        assert_eq!(counts(&t), (7, 0));
        // A user frame changing owner: no count moves.
        t.set_at(at, FrameDesc::new(FrameState::User(SpaceId(2))).unwrap());
        assert_eq!(counts(&t), (7, 0));
        assert_eq!(t.desc_at(at).state(), FrameState::User(SpaceId(2)));
        let before = (t.desc(frame).unwrap(), counts(&t));
        t.set_at(
            FrameSlot {
                frame: usize::MAX,
                section: 0,
            },
            FrameDesc::RESOURCE,
        );
        assert_eq!((t.desc(frame).unwrap(), counts(&t)), before);
        assert_eq!(
            t.desc_at(FrameSlot {
                frame: usize::MAX,
                section: 0
            }),
            FrameDesc::UNDEFINED
        );
    }
}
