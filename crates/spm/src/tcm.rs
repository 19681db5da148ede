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

use crate::region::{InitialUse, Location, Region, RegionError};
use core::fmt;
use mmu_armv5::regs::{self, Cp15, Cp15Ext, TcmRegion, TcmStatus};
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
        error: regs::TcmError,
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
        if !base.is_aligned(size) {
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

    /// The frame-table region of this TCM: all frames start as page resources.
    pub const fn region(&self) -> Result<Region, RegionError> {
        Region::new(
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
        Err(regs::TcmError::Misaligned { align, .. }) => {
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
                error: regs::TcmError::ReservedSize(0b1100)
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
        use armv5_sim::{presets, Machine, Region as SimRegion, RegionKind};
        let mut cfg = presets::arm926ejs().config;
        for (base, size, kind) in [
            (0, 1 << 20, RegionKind::Ram),
            (0x0010_0000, 16 << 10, RegionKind::Itcm),
            (0x0010_8000, 32 << 10, RegionKind::Dtcm),
        ] {
            cfg.regions.push(SimRegion {
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
        cfg.regions.push(SimRegion {
            base: PhysAddr::new(0),
            size: 1 << 20,
            kind: RegionKind::Ram,
            latency: 0,
        });
        assert_eq!(
            discover(&Machine::new(cfg).unwrap()),
            Ok(TcmLayout::default())
        );
    }

    proptest! {
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
