//! TCM discovery and placement on the ARM926EJ-S.
//!
//! The register layouts are `mmu_armv5::regs`'s: [`TcmStatus`] (`c0, 0, c0, 2`:
//! which TCMs exist) and [`TcmRegion`] (`c9, 0, c1, 0` DTCM, `c9, 0, c1, 1`
//! ITCM: base, read-only size, enable), read and written through
//! [`Cp15Ext`]. This module only decides what to do with them.
//!
//! QEMU's `arm926` has no TCM: the status register reads 0 and the region
//! registers trap as undefined instructions. So [`discover`] and [`place`]
//! read the status register first and never touch c9 for a TCM it does not
//! report. A board can then describe an emulated TCM (ordinary RAM the
//! kernel treats as TCM, as the Fiasco thesis did) with [`TcmBank::board`].
//!
//! # Which banks a kernel uses: [`plan`] and [`apply`]
//!
//! [`plan`] is the decision, pure and testable on any host: from what
//! [`discover`] found and what the board states ([`BoardTcm`]: where real
//! TCMs go, its emulated banks, the physical ranges a TCM must stay clear
//! of, the largest bank the caller's tables hold), it picks per kind
//!
//! 1. a TCM the CPU reports with a size above 0: kept where it is if it is
//!    already enabled at an address clear of the board's ranges
//!    ([`TcmSource::Kept`]), otherwise moved to the board's base for that
//!    kind and enabled ([`TcmSource::Placed`]);
//! 2. otherwise the board's emulated bank ([`TcmSource::Board`], saying
//!    whether the CPU reports no such TCM or one of size 0);
//! 3. otherwise nothing (the kind is absent from the plan).
//!
//! Sizes come from the region register (4 KiB to 1 MiB on the ARM926EJ-S)
//! and must fit the caller's capacity ([`TcmError::TooBig`]); a placement
//! must be aligned to the bank's size ([`TcmError::Misaligned`]) and clear
//! of the board's ranges and of the other bank ([`TcmError::Overlaps`]);
//! [`Mix::Never`] refuses a CPU that reports only one usable kind
//! ([`TcmError::OnlyOneKind`]). [`apply`] then writes the plan's placements
//! through [`Cp15Ext`] ([`place`], with its read-back check) and checks
//! that kept banks are still where the plan found them; it never touches
//! c9 for an emulated bank.
//!
//! On QEMU (no TCM reported) the plan is the board's emulated banks and
//! [`apply`] writes nothing; real placement is exercised only by host tests
//! against `MockCp15` and test doubles of the region registers.

use crate::region::{InitialUse, Location, PhysRegion, RegionError};
use core::fmt;
use mmu_armv5::addr::Align;
use mmu_armv5::regs::{self, Cp15, Cp15Ext, TcmRegion, TcmSize, TcmStatus};
use mmu_armv5::PhysAddr;

/// Which of the two tightly-coupled memories.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum TcmKind {
    /// Instruction TCM (region register `c9, 0, c1, 1`).
    Instruction,
    /// Data TCM (region register `c9, 0, c1, 0`).
    Data,
}

impl TcmKind {
    /// Whether `status` reports this TCM.
    #[must_use]
    pub const fn present(self, status: TcmStatus) -> bool {
        match self {
            TcmKind::Instruction => status.itcm_present(),
            TcmKind::Data => status.dtcm_present(),
        }
    }

    /// The frame-table location of this TCM.
    #[must_use]
    pub const fn location(self) -> Location {
        match self {
            TcmKind::Instruction => Location::Itcm,
            TcmKind::Data => Location::Dtcm,
        }
    }

    /// Reads this TCM's region register. Only call it when
    /// [`TcmKind::present`] holds: on a CPU without the TCM the read traps.
    fn read_region<C: Cp15 + ?Sized>(self, cp15: &C) -> Result<TcmRegion, TcmError> {
        let r = match self {
            TcmKind::Instruction => cp15.itcm_region(),
            TcmKind::Data => cp15.dtcm_region(),
        };
        r.map_err(|error| TcmError::Register { kind: self, error })
    }
}

/// A TCM discovery, placement or description that failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum TcmError {
    /// The CPU reports no such TCM (status register bit clear); its region
    /// register was not touched.
    Absent(TcmKind),
    /// The region register holds a value [`TcmRegion::from_bits`] refuses
    /// (a reserved size encoding, or a base not aligned to the size).
    Register {
        /// Which TCM.
        kind: TcmKind,
        /// Why the value is invalid.
        error: regs::TcmRegionError,
    },
    /// A requested base not aligned to the TCM size (or to 4 KiB).
    Misaligned {
        /// Which TCM.
        kind: TcmKind,
        /// The requested base.
        base: PhysAddr,
        /// The required alignment.
        align: u32,
    },
    /// A board-described size that is not 4 KiB..=1 MiB and a power of two.
    BadBoardSize {
        /// Which TCM.
        kind: TcmKind,
        /// The size given.
        size: u32,
    },
    /// The region would wrap past the end of the address space.
    Wraps {
        /// Which TCM.
        kind: TcmKind,
        /// The requested base.
        base: PhysAddr,
    },
    /// The region register did not take the written base and enable bit.
    NotPlaced {
        /// Which TCM.
        kind: TcmKind,
        /// The value written.
        wrote: u32,
        /// The value read back.
        read: u32,
    },
    /// A bank larger than the caller's tables hold ([`BoardTcm::capacity`]).
    TooBig {
        /// Which TCM.
        kind: TcmKind,
        /// Its size in bytes.
        size: u32,
        /// The largest bank the caller holds.
        capacity: u32,
    },
    /// A bank would overlap memory the board keeps TCM away from, or the other bank.
    Overlaps {
        /// Which TCM.
        kind: TcmKind,
        /// Its (planned) base.
        base: PhysAddr,
        /// Its size in bytes.
        size: u32,
        /// What it would overlap.
        with: Overlap,
    },
    /// Under [`Mix::Never`], the CPU reports a usable TCM of only this kind.
    OnlyOneKind {
        /// The kind the CPU reports (with a size above 0).
        reported: TcmKind,
    },
    /// A board bank given for the other kind (an ITCM bank in the DTCM slot
    /// of [`BoardTcm::emulated`], or the reverse).
    WrongSlot {
        /// The slot it was given in.
        slot: TcmKind,
    },
    /// A bank the plan keeps no longer reads back as the plan found it.
    Changed {
        /// Which TCM.
        kind: TcmKind,
        /// The region register value the plan expects.
        expected: u32,
        /// The value read.
        read: u32,
    },
}

/// What a planned TCM bank would overlap ([`TcmError::Overlaps`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Overlap {
    /// One of the board's ranges ([`BoardTcm::avoid`]): RAM, devices, flash...
    Avoided(PhysRange),
    /// The bank of this kind.
    Bank(TcmKind),
}

impl fmt::Display for TcmError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            TcmError::Absent(k) => write!(f, "the CPU reports no {k:?} TCM"),
            TcmError::Register { kind, error } => {
                write!(f, "{kind:?} TCM region register: {error}")
            }
            TcmError::Misaligned { kind, base, align } => {
                write!(f, "{kind:?} TCM base {base} is not aligned to {align:#x}")
            }
            TcmError::BadBoardSize { kind, size } => write!(
                f,
                "{kind:?} TCM size {size:#x} is not a power of two from 4 KiB to 1 MiB"
            ),
            TcmError::Wraps { kind, base } => {
                write!(f, "{kind:?} TCM at {base} wraps past 4 GiB")
            }
            TcmError::NotPlaced { kind, wrote, read } => write!(
                f,
                "{kind:?} TCM region register read {read:#010x} after writing {wrote:#010x}"
            ),
            TcmError::TooBig {
                kind,
                size,
                capacity,
            } => write!(
                f,
                "{kind:?} TCM of {size:#x} bytes exceeds the capacity of {capacity:#x}"
            ),
            TcmError::Overlaps {
                kind,
                base,
                size,
                with,
            } => {
                write!(f, "{kind:?} TCM at {base} ({size:#x} bytes) overlaps ")?;
                match with {
                    Overlap::Avoided(r) => {
                        write!(f, "{} ({:#x} bytes)", r.base(), r.size())
                    }
                    Overlap::Bank(k) => write!(f, "the {k:?} TCM"),
                }
            }
            TcmError::OnlyOneKind { reported } => write!(
                f,
                "the CPU reports only a {reported:?} TCM and the board allows no mix"
            ),
            TcmError::WrongSlot { slot } => {
                write!(
                    f,
                    "the board's {slot:?} TCM slot holds a bank of the other kind"
                )
            }
            TcmError::Changed {
                kind,
                expected,
                read,
            } => write!(
                f,
                "{kind:?} TCM region register reads {read:#010x}, the plan expects {expected:#010x}"
            ),
        }
    }
}

impl core::error::Error for TcmError {}

/// One tightly-coupled memory: where it is, how big, whether enabled.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct TcmBank {
    kind: TcmKind,
    base: PhysAddr,
    size: u32,
    enabled: bool,
    emulated: bool,
}

impl TcmBank {
    /// The bank a decoded region register describes.
    #[must_use]
    pub const fn from_region(kind: TcmKind, region: TcmRegion) -> TcmBank {
        TcmBank {
            kind,
            base: region.base(),
            size: region.size().bytes(),
            enabled: region.enabled(),
            emulated: false,
        }
    }

    /// A board-described TCM for a CPU that reports none (e.g. QEMU): `size`
    /// bytes of ordinary memory at `base` that the kernel manages as TCM.
    pub const fn board(kind: TcmKind, base: PhysAddr, size: u32) -> Result<TcmBank, TcmError> {
        if !size.is_power_of_two() || size < 4096 || size > (1 << 20) {
            return Err(TcmError::BadBoardSize { kind, size });
        }
        let aligned = match Align::new(size) {
            Some(a) => base.is_aligned(a),
            None => false,
        };
        if !aligned {
            return Err(TcmError::Misaligned {
                kind,
                base,
                align: size,
            });
        }
        if base.as_u32().checked_add(size - 1).is_none() {
            return Err(TcmError::Wraps { kind, base });
        }
        Ok(TcmBank {
            kind,
            base,
            size,
            enabled: true,
            emulated: true,
        })
    }

    /// Which TCM.
    #[must_use]
    pub const fn kind(&self) -> TcmKind {
        self.kind
    }

    /// Physical base address.
    #[must_use]
    pub const fn base(&self) -> PhysAddr {
        self.base
    }

    /// Size in bytes (0 if the core has the TCM interface but no memory).
    #[must_use]
    pub const fn size(&self) -> u32 {
        self.size
    }

    /// Whether the region is enabled.
    #[must_use]
    pub const fn enabled(&self) -> bool {
        self.enabled
    }

    /// Whether this is a board-described emulation rather than real TCM.
    #[must_use]
    pub const fn emulated(&self) -> bool {
        self.emulated
    }

    /// The region register value of this bank (`None` for an emulated
    /// bank, which has no register, or a size without an encoding).
    #[must_use]
    pub fn register(&self) -> Option<TcmRegion> {
        if self.emulated {
            return None;
        }
        TcmRegion::new(self.base, TcmSize::from_bytes(self.size)?, self.enabled).ok()
    }

    /// Whether this bank shares an address with `other`.
    #[must_use]
    pub const fn overlaps(&self, other: PhysRange) -> bool {
        self.range().overlaps(other)
    }

    /// The physical range of this bank.
    #[must_use]
    pub const fn range(&self) -> PhysRange {
        PhysRange::new(self.base, self.size)
    }

    /// The frame-table region of this TCM: all frames start as page resources.
    pub const fn region(&self) -> Result<PhysRegion, RegionError> {
        PhysRegion::new(
            self.base,
            self.size,
            self.kind.location(),
            InitialUse::Resource,
        )
    }
}

/// The TCMs a system has, from the CPU or from the board.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct TcmLayout {
    /// The instruction TCM, if any.
    pub itcm: Option<TcmBank>,
    /// The data TCM, if any.
    pub dtcm: Option<TcmBank>,
}

impl TcmLayout {
    /// This layout, with `board` filling in each TCM the CPU does not have
    /// (or has with size zero). A real TCM always wins over a board description.
    #[must_use]
    pub fn or_board(self, board: TcmLayout) -> TcmLayout {
        let pick = |hw: Option<TcmBank>, b: Option<TcmBank>| match hw {
            Some(h) if h.size > 0 => Some(h),
            _ => b,
        };
        TcmLayout {
            itcm: pick(self.itcm, board.itcm),
            dtcm: pick(self.dtcm, board.dtcm),
        }
    }

    /// The two banks, for iteration.
    pub fn banks(&self) -> impl Iterator<Item = TcmBank> {
        self.itcm.into_iter().chain(self.dtcm)
    }

    /// The bank of `kind`, if any.
    #[must_use]
    pub const fn bank(&self, kind: TcmKind) -> Option<TcmBank> {
        match kind {
            TcmKind::Instruction => self.itcm,
            TcmKind::Data => self.dtcm,
        }
    }
}

/// Reads which TCMs the CPU has and where they are. Touches a region
/// register only for a TCM the status register reports.
pub fn discover<C: Cp15 + ?Sized>(cp15: &C) -> Result<TcmLayout, TcmError> {
    let status = cp15.tcm_status();
    let read = |kind: TcmKind| -> Result<Option<TcmBank>, TcmError> {
        if !kind.present(status) {
            return Ok(None);
        }
        Ok(Some(TcmBank::from_region(kind, kind.read_region(cp15)?)))
    };
    Ok(TcmLayout {
        itcm: read(TcmKind::Instruction)?,
        dtcm: read(TcmKind::Data)?,
    })
}

/// Moves a hardware TCM to `base` and enables it, then reads the register
/// back to check. Fails with [`TcmError::Absent`] (without touching c9) if the
/// CPU does not report the TCM.
///
/// # Safety
/// Enabling a TCM at `base` hides whatever memory was visible there: nothing
/// in use (code, stack, tables, DMA buffers) may live in `[base, base + size)`,
/// and no dirty D-cache line may cover it. The TCM's content is undefined
/// until written.
pub unsafe fn place<C: Cp15 + ?Sized>(
    cp15: &mut C,
    kind: TcmKind,
    base: PhysAddr,
) -> Result<TcmBank, TcmError> {
    if !kind.present(cp15.tcm_status()) {
        return Err(TcmError::Absent(kind));
    }
    // The size field is read-only: the new value keeps the size read.
    let current = kind.read_region(cp15)?;
    let wanted = match TcmRegion::new(base, current.size(), true) {
        Ok(r) => r,
        Err(regs::TcmRegionError::Misaligned { align, .. }) => {
            return Err(TcmError::Misaligned { kind, base, align })
        }
        Err(error) => return Err(TcmError::Register { kind, error }),
    };
    let size = current.size().bytes();
    if size > 0 && base.as_u32().checked_add(size - 1).is_none() {
        return Err(TcmError::Wraps { kind, base });
    }
    // SAFETY: the caller guarantees nothing in use lives at the new TCM range
    // and no dirty line covers it; the TCM was reported present, so the MCR
    // does not trap.
    unsafe {
        match kind {
            TcmKind::Instruction => cp15.set_itcm_region(wanted),
            TcmKind::Data => cp15.set_dtcm_region(wanted),
        }
    }
    let read = kind.read_region(cp15).map_err(|_| TcmError::NotPlaced {
        kind,
        wrote: wanted.bits(),
        read: match kind {
            TcmKind::Instruction => cp15.read(regs::Cp15Reg::ItcmRegion),
            TcmKind::Data => cp15.read(regs::Cp15Reg::DtcmRegion),
        },
    })?;
    if read != wanted {
        return Err(TcmError::NotPlaced {
            kind,
            wrote: wanted.bits(),
            read: read.bits(),
        });
    }
    Ok(TcmBank::from_region(kind, read))
}

/// A physical address range: `size` bytes from `base` (at most to the end
/// of the 32-bit address space; larger sizes are clipped there).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct PhysRange {
    base: PhysAddr,
    size: u32,
}

impl PhysRange {
    /// `size` bytes from `base`.
    #[must_use]
    pub const fn new(base: PhysAddr, size: u32) -> PhysRange {
        PhysRange { base, size }
    }

    /// The first address.
    #[must_use]
    pub const fn base(&self) -> PhysAddr {
        self.base
    }

    /// The size in bytes.
    #[must_use]
    pub const fn size(&self) -> u32 {
        self.size
    }

    /// One past the last address, as a 64-bit value (clipped to 4 GiB).
    const fn end(&self) -> u64 {
        let e = self.base.as_u32() as u64 + self.size as u64;
        if e > 1 << 32 {
            1 << 32
        } else {
            e
        }
    }

    /// Whether the two ranges share an address (empty ranges share none).
    #[must_use]
    pub const fn overlaps(&self, other: PhysRange) -> bool {
        self.size > 0
            && other.size > 0
            && (self.base.as_u32() as u64) < other.end()
            && (other.base.as_u32() as u64) < self.end()
    }
}

/// Whether a kernel may use a real TCM of one kind beside an emulated bank
/// of the other ([`BoardTcm::mix`]).
///
/// A part that reports only a 16 KiB DTCM (disabled at 0 after reset):
///
/// ```
/// use mmu_armv5::regs::{Cp15Reg, MockCp15};
/// use mmu_armv5::PhysAddr;
/// use spm::tcm::{self, BoardTcm, Fallback, Mix, PhysRange, TcmBank, TcmError, TcmKind, TcmLayout, TcmSource};
///
/// let cpu = MockCp15::arm926()
///     .with_register(Cp15Reg::TcmStatus, 1 << 16) // DTCM only
///     .with_register(Cp15Reg::DtcmRegion, 0b0101 << 2); // 16 KiB, off
/// let ram = [PhysRange::new(PhysAddr::new(0), 128 << 20)];
/// let mut board = BoardTcm {
///     itcm_base: PhysAddr::new(0x2000_0000),
///     dtcm_base: PhysAddr::new(0x2010_0000),
///     emulated: TcmLayout {
///         itcm: Some(TcmBank::board(TcmKind::Instruction, PhysAddr::new(0x07f0_0000), 32 << 10)?),
///         dtcm: Some(TcmBank::board(TcmKind::Data, PhysAddr::new(0x07f0_8000), 32 << 10)?),
///     },
///     avoid: &ram,
///     capacity: 256 << 10,
///     mix: Mix::PerKind,
/// };
/// let found = tcm::discover(&cpu)?;
/// assert!(found.itcm.is_none());
///
/// // Per kind: the CPU's DTCM, placed at the board's base, and the board's ITCM.
/// let plan = tcm::plan(found, &board)?;
/// assert_eq!(plan.get(TcmKind::Data).unwrap().source().name(), "cpu-placed");
/// let i = plan.get(TcmKind::Instruction).unwrap();
/// assert_eq!(i.source(), TcmSource::Board(Fallback::NotReported));
/// assert_eq!(i.bank(), board.emulated.itcm.unwrap());
///
/// // Never mixed: refused, naming the one kind the CPU reports.
/// board.mix = Mix::Never;
/// assert_eq!(tcm::plan(found, &board), Err(TcmError::OnlyOneKind { reported: TcmKind::Data }));
/// # Ok::<(), TcmError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Mix {
    /// Each kind on its own: a CPU that reports only a DTCM gets that DTCM
    /// and the board's emulated ITCM.
    PerKind,
    /// Both banks real or both emulated: a CPU that reports a usable TCM of
    /// only one kind is an error ([`TcmError::OnlyOneKind`]).
    Never,
}

/// What the board says about TCM, for [`plan`].
#[derive(Clone, Copy, Debug)]
pub struct BoardTcm<'a> {
    /// Where a CPU-reported ITCM goes when it is not already enabled at an
    /// acceptable address: a physical hole (no RAM, no device), aligned to
    /// the ITCM's size (a 1 MiB-aligned base fits every size).
    pub itcm_base: PhysAddr,
    /// The same for the DTCM.
    pub dtcm_base: PhysAddr,
    /// The emulated banks ([`TcmBank::board`]) used for a kind the CPU does
    /// not report, or reports with size 0.
    pub emulated: TcmLayout,
    /// Physical ranges a real TCM must not overlap (RAM, devices, flash, bus
    /// windows). Emulated banks are RAM by design and are not checked
    /// against them.
    pub avoid: &'a [PhysRange],
    /// The largest bank, in bytes, the caller's tables hold per kind (frame
    /// descriptions, kernel windows, allocation bitmaps).
    pub capacity: u32,
    /// Whether real and emulated banks may be mixed.
    pub mix: Mix,
}

impl BoardTcm<'_> {
    const fn place_base(&self, kind: TcmKind) -> PhysAddr {
        match kind {
            TcmKind::Instruction => self.itcm_base,
            TcmKind::Data => self.dtcm_base,
        }
    }
}

/// Why a kind's bank is emulated ([`TcmSource::Board`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Fallback {
    /// The TCM status register reports no such TCM (QEMU's `arm926`).
    NotReported,
    /// The CPU has the TCM interface but its region register says size 0.
    SizeZero,
}

/// Where a planned bank comes from, and what [`apply`] does for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum TcmSource {
    /// The CPU's TCM, already enabled at an acceptable address: left alone
    /// ([`apply`] only reads its register back).
    Kept,
    /// The CPU's TCM, moved to the board's base and enabled by [`apply`].
    Placed {
        /// The base the region register held.
        from: PhysAddr,
        /// Whether it was enabled there.
        was_enabled: bool,
    },
    /// The board's emulated bank (ordinary RAM); c9 is never touched.
    Board(Fallback),
}

impl TcmSource {
    /// Whether the bank is the CPU's TCM.
    #[must_use]
    pub const fn is_cpu(self) -> bool {
        !matches!(self, TcmSource::Board(_))
    }

    /// A short name for logs: `cpu-kept`, `cpu-placed`, `board` (the CPU
    /// reports none) or `board-size0`.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            TcmSource::Kept => "cpu-kept",
            TcmSource::Placed { .. } => "cpu-placed",
            TcmSource::Board(Fallback::NotReported) => "board",
            TcmSource::Board(Fallback::SizeZero) => "board-size0",
        }
    }
}

/// One bank of a [`TcmPlan`]: the bank as it will be, and where it comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct PlannedBank {
    bank: TcmBank,
    source: TcmSource,
}

impl PlannedBank {
    /// The bank once [`apply`] ran (enabled, at its final base).
    #[must_use]
    pub const fn bank(&self) -> TcmBank {
        self.bank
    }

    /// Where it comes from.
    #[must_use]
    pub const fn source(&self) -> TcmSource {
        self.source
    }
}

/// The banks a system will use, as [`plan`] decided them. Only [`plan`]
/// makes one, so every plan holds its checks: each bank fits the capacity,
/// real banks are aligned to their size and clear of the board's ranges,
/// and the two banks are disjoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct TcmPlan {
    itcm: Option<PlannedBank>,
    dtcm: Option<PlannedBank>,
}

impl TcmPlan {
    /// The planned bank of `kind`, if any.
    #[must_use]
    pub const fn get(&self, kind: TcmKind) -> Option<PlannedBank> {
        match kind {
            TcmKind::Instruction => self.itcm,
            TcmKind::Data => self.dtcm,
        }
    }

    /// The planned banks, ITCM first.
    pub fn banks(&self) -> impl Iterator<Item = PlannedBank> {
        self.itcm.into_iter().chain(self.dtcm)
    }

    /// The layout once [`apply`] ran.
    #[must_use]
    pub fn layout(&self) -> TcmLayout {
        TcmLayout {
            itcm: self.itcm.map(|p| p.bank),
            dtcm: self.dtcm.map(|p| p.bank),
        }
    }

    /// Whether any bank is the CPU's TCM.
    #[must_use]
    pub fn from_cpu(&self) -> bool {
        self.banks().any(|p| p.source.is_cpu())
    }
}

/// A CPU-reported bank worth using: present with a size above 0.
fn usable(found: Option<TcmBank>) -> Option<TcmBank> {
    found.filter(|b| b.size > 0 && !b.emulated)
}

/// The board's bank for `kind`, checked against the capacity.
fn board_bank(kind: TcmKind, board: &BoardTcm<'_>) -> Result<Option<TcmBank>, TcmError> {
    let Some(b) = board.emulated.bank(kind) else {
        return Ok(None);
    };
    if b.kind != kind {
        return Err(TcmError::WrongSlot { slot: kind });
    }
    if b.size > board.capacity {
        return Err(TcmError::TooBig {
            kind,
            size: b.size,
            capacity: board.capacity,
        });
    }
    Ok(Some(b))
}

/// The first board range `r` overlaps.
fn avoided(r: PhysRange, board: &BoardTcm<'_>) -> Option<PhysRange> {
    board.avoid.iter().copied().find(|a| r.overlaps(*a))
}

/// The decision for one kind.
fn plan_kind(
    kind: TcmKind,
    found: Option<TcmBank>,
    board: &BoardTcm<'_>,
) -> Result<Option<PlannedBank>, TcmError> {
    let Some(hw) = usable(found) else {
        let why = match found {
            Some(_) => Fallback::SizeZero,
            None => Fallback::NotReported,
        };
        return Ok(board_bank(kind, board)?.map(|bank| PlannedBank {
            bank,
            source: TcmSource::Board(why),
        }));
    };
    if hw.size > board.capacity {
        return Err(TcmError::TooBig {
            kind,
            size: hw.size,
            capacity: board.capacity,
        });
    }
    if hw.enabled && avoided(hw.range(), board).is_none() {
        return Ok(Some(PlannedBank {
            bank: hw,
            source: TcmSource::Kept,
        }));
    }
    let base = board.place_base(kind);
    // Sizes are powers of two from 4 KiB (the register's encodings).
    if !Align::new(hw.size).is_some_and(|a| base.is_aligned(a)) {
        return Err(TcmError::Misaligned {
            kind,
            base,
            align: hw.size,
        });
    }
    // An aligned base of a power-of-two size never wraps past 4 GiB.
    let bank = TcmBank {
        base,
        enabled: true,
        ..hw
    };
    if let Some(a) = avoided(bank.range(), board) {
        return Err(TcmError::Overlaps {
            kind,
            base,
            size: hw.size,
            with: Overlap::Avoided(a),
        });
    }
    Ok(Some(PlannedBank {
        bank,
        source: TcmSource::Placed {
            from: hw.base,
            was_enabled: hw.enabled,
        },
    }))
}

/// Decides which TCM banks to use: per kind, the CPU's TCM when it reports
/// one with a size above 0 (kept if already enabled clear of
/// [`BoardTcm::avoid`], else placed at the board's base), otherwise the
/// board's emulated bank, otherwise none. Pure: reads no register. See the
/// [module docs](self) for the rules.
///
/// # Errors
/// [`TcmError::TooBig`] for a bank above [`BoardTcm::capacity`];
/// [`TcmError::Misaligned`] for a placement base not aligned to the bank's
/// size; [`TcmError::Overlaps`] for a real bank meeting a board range, or
/// two banks meeting each other; [`TcmError::OnlyOneKind`] under
/// [`Mix::Never`]; [`TcmError::WrongSlot`] for a board bank in the other
/// kind's slot.
///
/// # Example
///
/// An ARM926EJ-S with 16 KiB ITCM and 16 KiB DTCM, both disabled at 0 after
/// reset, on a board with RAM at 0 and a hole at `0x2000_0000`:
///
/// ```
/// use mmu_armv5::regs::{Cp15Reg, MockCp15};
/// use mmu_armv5::PhysAddr;
/// use spm::tcm::{self, BoardTcm, Mix, PhysRange, TcmBank, TcmKind, TcmLayout, TcmSource};
///
/// let mut cpu = MockCp15::arm926()
///     .with_register(Cp15Reg::TcmStatus, (1 << 16) | 1)
///     .with_register(Cp15Reg::ItcmRegion, 0b0101 << 2) // 16 KiB, off
///     .with_register(Cp15Reg::DtcmRegion, 0b0101 << 2);
/// let ram = [PhysRange::new(PhysAddr::new(0), 128 << 20)];
/// let board = BoardTcm {
///     itcm_base: PhysAddr::new(0x2000_0000),
///     dtcm_base: PhysAddr::new(0x2010_0000),
///     emulated: TcmLayout {
///         itcm: Some(TcmBank::board(TcmKind::Instruction, PhysAddr::new(0x07f0_0000), 32 << 10)?),
///         dtcm: Some(TcmBank::board(TcmKind::Data, PhysAddr::new(0x07f0_8000), 32 << 10)?),
///     },
///     avoid: &ram,
///     capacity: 256 << 10,
///     mix: Mix::PerKind,
/// };
/// let plan = tcm::plan(tcm::discover(&cpu)?, &board)?;
/// let d = plan.get(TcmKind::Data).unwrap();
/// assert!(matches!(d.source(), TcmSource::Placed { was_enabled: false, .. }));
/// assert_eq!((d.bank().base(), d.bank().size()), (PhysAddr::new(0x2010_0000), 16 << 10));
///
/// // SAFETY: a mock; nothing lives at the new addresses.
/// let layout = unsafe { tcm::apply(&mut cpu, &plan) }?;
/// assert_eq!(layout, plan.layout());
/// assert_eq!(cpu.register(Cp15Reg::DtcmRegion), 0x2010_0000 | (0b0101 << 2) | 1);
///
/// // QEMU's arm926 reports no TCM: the board's banks, and no c9 access.
/// let qemu = tcm::plan(tcm::discover(&MockCp15::arm926())?, &board)?;
/// assert_eq!(qemu.layout(), board.emulated);
/// assert!(!qemu.from_cpu());
/// # Ok::<(), spm::TcmError>(())
/// ```
pub fn plan(found: TcmLayout, board: &BoardTcm<'_>) -> Result<TcmPlan, TcmError> {
    if board.mix == Mix::Never {
        match (usable(found.itcm), usable(found.dtcm)) {
            (Some(_), None) => {
                return Err(TcmError::OnlyOneKind {
                    reported: TcmKind::Instruction,
                })
            }
            (None, Some(_)) => {
                return Err(TcmError::OnlyOneKind {
                    reported: TcmKind::Data,
                })
            }
            _ => {}
        }
    }
    let itcm = plan_kind(TcmKind::Instruction, found.itcm, board)?;
    let dtcm = plan_kind(TcmKind::Data, found.dtcm, board)?;
    if let (Some(i), Some(d)) = (itcm, dtcm) {
        if d.bank.overlaps(i.bank.range()) {
            return Err(TcmError::Overlaps {
                kind: TcmKind::Data,
                base: d.bank.base,
                size: d.bank.size,
                with: Overlap::Bank(TcmKind::Instruction),
            });
        }
    }
    Ok(TcmPlan { itcm, dtcm })
}

/// Carries out `plan`: moves and enables each [`TcmSource::Placed`] bank
/// through [`place`] (which reads the register back), checks that each
/// [`TcmSource::Kept`] bank still reads as planned, and leaves c9 alone for
/// emulated banks. Returns the layout now in effect ([`TcmPlan::layout`]).
///
/// # Errors
/// [`TcmError::Absent`] if a planned real TCM is no longer reported;
/// [`TcmError::Register`] for a region register that does not decode;
/// [`TcmError::NotPlaced`] if a region register did not take the new base
/// and enable bit; [`TcmError::Changed`] if a kept bank (or a placed one's
/// size) no longer matches the plan. Banks before the failing one stay as
/// applied.
///
/// # Safety
/// As for [`place`], for every placed bank: nothing in use (code, stack,
/// tables, DMA buffers) may live in its new range, and no dirty D-cache
/// line may cover it; the content of a placed TCM is undefined until
/// written.
pub unsafe fn apply<C: Cp15 + ?Sized>(cp15: &mut C, plan: &TcmPlan) -> Result<TcmLayout, TcmError> {
    for p in plan.banks() {
        let kind = p.bank.kind;
        let expected = p.bank.register().map_or(0, TcmRegion::bits);
        let now = match p.source {
            TcmSource::Board(_) => continue,
            // SAFETY: the caller's contract covers every placed bank's range.
            TcmSource::Placed { .. } => unsafe { place(cp15, kind, p.bank.base) }?,
            TcmSource::Kept => {
                if !kind.present(cp15.tcm_status()) {
                    return Err(TcmError::Absent(kind));
                }
                TcmBank::from_region(kind, kind.read_region(cp15)?)
            }
        };
        if now != p.bank {
            return Err(TcmError::Changed {
                kind,
                expected,
                read: now.register().map_or(0, TcmRegion::bits),
            });
        }
    }
    Ok(plan.layout())
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::cell::Cell;
    use mmu_armv5::regs::{Cp15Op, Cp15Reg};
    use proptest::prelude::*;

    /// A CP15 with only the TCM registers; accessing an absent TCM's region
    /// register is an undefined-instruction trap, as on QEMU.
    struct TcmCp15 {
        status: u32,
        dtcm: u32,
        itcm: u32,
        trapped: Cell<bool>,
        ignore_writes: bool,
    }

    impl TcmCp15 {
        fn new(status: u32, dtcm: u32, itcm: u32) -> Self {
            TcmCp15 {
                status,
                dtcm,
                itcm,
                trapped: Cell::new(false),
                ignore_writes: false,
            }
        }
        fn check(&self, reg: Cp15Reg) {
            let bit = match reg {
                Cp15Reg::DtcmRegion => 1 << 16,
                Cp15Reg::ItcmRegion => 1,
                _ => return,
            };
            if self.status & bit == 0 {
                self.trapped.set(true);
            }
        }
    }

    impl Cp15 for TcmCp15 {
        fn read(&self, reg: Cp15Reg) -> u32 {
            self.check(reg);
            match reg {
                Cp15Reg::TcmStatus => self.status,
                Cp15Reg::DtcmRegion => self.dtcm,
                Cp15Reg::ItcmRegion => self.itcm,
                _ => 0,
            }
        }
        unsafe fn write(&mut self, reg: Cp15Reg, value: u32) {
            self.check(reg);
            if self.ignore_writes {
                return;
            }
            let keep = |old: u32| (value & !0x3c) | (old & 0x3c);
            match reg {
                Cp15Reg::DtcmRegion => self.dtcm = keep(self.dtcm),
                Cp15Reg::ItcmRegion => self.itcm = keep(self.itcm),
                _ => {}
            }
        }
        unsafe fn op(&mut self, _op: Cp15Op, _value: u32) {}
        fn test_clean_invalidate_dcache(&mut self) -> bool {
            true
        }
        fn test_clean_dcache(&mut self) -> bool {
            true
        }
    }

    #[test]
    fn qemu_arm926_reports_none_and_c9_is_never_touched() {
        let mut cpu = TcmCp15::new(0, 0, 0);
        assert_eq!(discover(&cpu), Ok(TcmLayout::default()));
        // SAFETY: test double; nothing lives anywhere.
        let r = unsafe { place(&mut cpu, TcmKind::Data, PhysAddr::new(0xfffe_8000)) };
        assert_eq!(r, Err(TcmError::Absent(TcmKind::Data)));
        assert!(!cpu.trapped.get(), "a region register was accessed");
        // The board then describes an emulated TCM, as the thesis did under QEMU.
        let board = TcmLayout {
            itcm: Some(
                TcmBank::board(TcmKind::Instruction, PhysAddr::new(0x0300_0000), 0x8000).unwrap(),
            ),
            dtcm: Some(TcmBank::board(TcmKind::Data, PhysAddr::new(0x0300_8000), 0x8000).unwrap()),
        };
        let l = discover(&cpu).unwrap().or_board(board);
        assert_eq!(l, board);
        let d = l.dtcm.unwrap();
        assert!(d.emulated());
        let region = d.region().unwrap();
        assert_eq!(region.location(), Location::Dtcm);
        assert_eq!(region.frames(), 8);
    }

    #[test]
    fn arm926_with_tcm_is_decoded_and_placed() {
        // 32 KiB DTCM and 16 KiB ITCM, both disabled at address 0.
        let mut cpu = TcmCp15::new((1 << 16) | 1, 0b0110 << 2, 0b0101 << 2);
        let l = discover(&cpu).unwrap();
        assert_eq!(l.dtcm.unwrap().size(), 32 << 10);
        assert_eq!(l.itcm.unwrap().size(), 16 << 10);
        assert!(!l.dtcm.unwrap().enabled());
        // SAFETY: test double.
        let d = unsafe { place(&mut cpu, TcmKind::Data, PhysAddr::new(0xfffe_8000)) }.unwrap();
        assert_eq!(d.base(), PhysAddr::new(0xfffe_8000));
        assert!(d.enabled() && !d.emulated());
        assert_eq!(cpu.dtcm, 0xfffe_8000 | (0b0110 << 2) | 1);
        // SAFETY: test double.
        let e = unsafe { place(&mut cpu, TcmKind::Instruction, PhysAddr::new(0xfffe_2000)) };
        assert_eq!(
            e,
            Err(TcmError::Misaligned {
                kind: TcmKind::Instruction,
                base: PhysAddr::new(0xfffe_2000),
                align: 16 << 10
            })
        );
        // A hardware TCM wins over the board's description.
        let board = TcmLayout {
            dtcm: Some(TcmBank::board(TcmKind::Data, PhysAddr::new(0x0300_0000), 0x1000).unwrap()),
            itcm: None,
        };
        assert_eq!(discover(&cpu).unwrap().or_board(board).dtcm, Some(d));
        cpu.ignore_writes = true;
        // SAFETY: test double.
        let e = unsafe { place(&mut cpu, TcmKind::Instruction, PhysAddr::new(0xfffe_0000)) };
        assert!(matches!(e, Err(TcmError::NotPlaced { .. })));
        assert!(!cpu.trapped.get());
    }

    #[test]
    fn reserved_sizes_and_bad_board_regions_are_errors() {
        let cpu = TcmCp15::new(1 << 16, 0b1100 << 2, 0);
        assert_eq!(
            discover(&cpu),
            Err(TcmError::Register {
                kind: TcmKind::Data,
                error: regs::TcmRegionError::ReservedSize(0b1100)
            })
        );
        assert!(!cpu.trapped.get());
        assert_eq!(
            TcmBank::board(TcmKind::Data, PhysAddr::new(0), 0x3000),
            Err(TcmError::BadBoardSize {
                kind: TcmKind::Data,
                size: 0x3000
            })
        );
        assert_eq!(
            TcmBank::board(TcmKind::Data, PhysAddr::new(0x1000), 0x2000),
            Err(TcmError::Misaligned {
                kind: TcmKind::Data,
                base: PhysAddr::new(0x1000),
                align: 0x2000
            })
        );
        assert_eq!(
            TcmBank::board(TcmKind::Data, PhysAddr::new(0xfff0_0000), 1 << 20).map(|b| b.size()),
            Ok(1 << 20)
        );
    }

    #[test]
    fn the_armv5_sim_model_reports_its_tcm_regions() {
        use armv5_sim::{presets, Machine, MemoryKind, MemoryRegion};
        let mut cfg = presets::arm926ejs().config;
        for (base, size, kind) in [
            (0, 1 << 20, MemoryKind::Ram),
            (0x0010_0000, 16 << 10, MemoryKind::Itcm),
            (0x0010_8000, 32 << 10, MemoryKind::Dtcm),
        ] {
            cfg.regions.push(MemoryRegion {
                base: PhysAddr::new(base),
                size,
                kind,
                latency: 0,
            });
        }
        let mut m = Machine::new(cfg).unwrap();
        let l = discover(&m).unwrap();
        let (i, d) = (l.itcm.unwrap(), l.dtcm.unwrap());
        assert_eq!((i.base().as_u32(), i.size()), (0x0010_0000, 16 << 10));
        assert_eq!((d.base().as_u32(), d.size()), (0x0010_8000, 32 << 10));
        assert!(i.enabled() && !i.emulated());
        assert_eq!(d.region().unwrap().frames(), 8);
        // Placement goes through the typed setter and reads back.
        // SAFETY: model; nothing lives at the new address.
        let moved = unsafe { place(&mut m, TcmKind::Data, PhysAddr::new(0x0020_0000)) }.unwrap();
        assert_eq!(moved.base().as_u32(), 0x0020_0000);
        assert_eq!(moved.size(), 32 << 10);
        assert_eq!(discover(&m).unwrap().dtcm, Some(moved));
        // A model without TCM regions reports none.
        let mut cfg = presets::arm926ejs().config;
        cfg.regions.push(MemoryRegion {
            base: PhysAddr::new(0),
            size: 1 << 20,
            kind: MemoryKind::Ram,
            latency: 0,
        });
        assert_eq!(
            discover(&Machine::new(cfg).unwrap()),
            Ok(TcmLayout::default())
        );
    }

    proptest! {
        #![proptest_config(crate::proptest_config())]
        /// Whatever the registers hold: c9 is read only for a TCM the status
        /// reports, and the result is exactly the typed decoding.
        #[test]
        fn discovery_follows_the_status_and_the_typed_decoding(
            status in any::<u32>(), dtcm in any::<u32>(), itcm in any::<u32>()
        ) {
            let cpu = TcmCp15::new(status, dtcm, itcm);
            let got = discover(&cpu);
            prop_assert!(!cpu.trapped.get());
            let st = TcmStatus::from_bits(status);
            let expect = |present: bool, kind: TcmKind, raw: u32| {
                if !present {
                    return Ok(None);
                }
                TcmRegion::from_bits(raw)
                    .map(|r| Some(TcmBank::from_region(kind, r)))
                    .map_err(|error| TcmError::Register { kind, error })
            };
            let want = (|| {
                Ok(TcmLayout {
                    itcm: expect(st.itcm_present(), TcmKind::Instruction, itcm)?,
                    dtcm: expect(st.dtcm_present(), TcmKind::Data, dtcm)?,
                })
            })();
            prop_assert_eq!(got, want);
        }
    }
}
