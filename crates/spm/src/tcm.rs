//! TCM discovery and placement on the ARM926EJ-S.
//!
//! * The TCM status register (`c0, 0, c0, 2`) says which TCMs exist:
//!   bit 16 a DTCM, bit 0 an ITCM.
//! * The region registers (`c9, 0, c1, 0` DTCM, `c9, 0, c1, 1` ITCM) hold the
//!   base in bits \[31:12\], the (read-only) size in bits \[5:2\] and the
//!   enable bit 0. Size `0b0000` is none, `0b0011` 4 KiB, doubling up to
//!   `0b1011` = 1 MiB; the other encodings are reserved.
//!
//! QEMU's `arm926` has no TCM: the status register reads 0 and the region
//! registers trap as undefined instructions. So [`discover`] and [`place`]
//! read the status register first and never touch c9 for a TCM it does not
//! report. A board can then describe an emulated TCM (ordinary RAM the
//! kernel treats as TCM, as the Fiasco thesis did) with [`TcmBank::board`].

use crate::region::{InitialUse, Location, Region, RegionError};
use core::fmt;
use mmu_armv5::regs::{Cp15, Cp15Reg};
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
    /// The region register of this TCM.
    #[must_use]
    pub const fn region_register(self) -> Cp15Reg {
        match self {
            TcmKind::Instruction => Cp15Reg::ItcmRegion,
            TcmKind::Data => Cp15Reg::DtcmRegion,
        }
    }

    /// The status-register bit that reports this TCM.
    #[must_use]
    pub const fn status_bit(self) -> u32 {
        match self {
            TcmKind::Instruction => 1,
            TcmKind::Data => 1 << 16,
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
}

/// A TCM discovery, placement or description that failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum TcmError {
    /// The CPU reports no such TCM (status register bit clear); its region
    /// register was not touched.
    Absent(TcmKind),
    /// The region register reports a reserved size encoding.
    ReservedSize {
        /// Which TCM.
        kind: TcmKind,
        /// The four-bit size field.
        field: u8,
    },
    /// A base not aligned to the TCM size (or to 4 KiB).
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
            TcmError::ReservedSize { kind, field } => {
                write!(f, "{kind:?} TCM reports reserved size field {field:#06b}")
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

/// Decodes a four-bit size field into bytes: 0 for none, 4 KiB..=1 MiB, or
/// `None` for a reserved encoding.
#[must_use]
pub const fn decode_size(field: u8) -> Option<u32> {
    match field {
        0 => Some(0),
        0b0011..=0b1011 => Some(1 << (field as u32 + 9)),
        _ => None,
    }
}

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
    /// Decodes a region register value read for `kind`.
    pub const fn from_register(kind: TcmKind, raw: u32) -> Result<TcmBank, TcmError> {
        let field = ((raw >> 2) & 0xf) as u8;
        let size = match decode_size(field) {
            Some(s) => s,
            None => return Err(TcmError::ReservedSize { kind, field }),
        };
        let base = PhysAddr::new(raw & 0xffff_f000);
        if size > 4096 && !base.is_aligned(size) {
            return Err(TcmError::Misaligned {
                kind,
                base,
                align: size,
            });
        }
        Ok(TcmBank {
            kind,
            base,
            size,
            enabled: raw & 1 != 0,
            emulated: false,
        })
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
    let status = cp15.read(Cp15Reg::TcmStatus);
    let read = |kind: TcmKind| -> Result<Option<TcmBank>, TcmError> {
        if status & kind.status_bit() == 0 {
            return Ok(None);
        }
        TcmBank::from_register(kind, cp15.read(kind.region_register())).map(Some)
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
    if cp15.read(Cp15Reg::TcmStatus) & kind.status_bit() == 0 {
        return Err(TcmError::Absent(kind));
    }
    let reg = kind.region_register();
    let current = TcmBank::from_register(kind, cp15.read(reg))?;
    let align = if current.size > 4096 {
        current.size
    } else {
        4096
    };
    if !base.is_aligned(align) {
        return Err(TcmError::Misaligned { kind, base, align });
    }
    if current.size > 0 && base.as_u32().checked_add(current.size - 1).is_none() {
        return Err(TcmError::Wraps { kind, base });
    }
    // Size bits [5:2] are read-only; write them back as read.
    let wrote = base.as_u32() | (current_size_bits(current.size)) | 1;
    // SAFETY: the caller guarantees nothing in use lives at the new TCM range;
    // the register was reported present, so the write does not trap.
    unsafe { cp15.write(reg, wrote) };
    let read = cp15.read(reg);
    if read & 0xffff_f03d != wrote {
        return Err(TcmError::NotPlaced { kind, wrote, read });
    }
    TcmBank::from_register(kind, read)
}

/// The size field for a decoded size.
const fn current_size_bits(size: u32) -> u32 {
    if size == 0 {
        0
    } else {
        (size.trailing_zeros() - 9) << 2
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::cell::Cell;
    use mmu_armv5::regs::Cp15Op;
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
            Err(TcmError::ReservedSize {
                kind: TcmKind::Data,
                field: 0b1100
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
    }

    #[test]
    fn size_field_table() {
        assert_eq!(decode_size(0), Some(0));
        assert_eq!(decode_size(0b0011), Some(4 << 10));
        assert_eq!(decode_size(0b0110), Some(32 << 10));
        assert_eq!(decode_size(0b1011), Some(1 << 20));
        for f in [1u8, 2, 12, 13, 14, 15] {
            assert_eq!(decode_size(f), None);
        }
    }

    proptest! {
        #[test]
        fn any_register_value_decodes_or_errors(raw in any::<u32>()) {
            match TcmBank::from_register(TcmKind::Data, raw) {
                Ok(b) => {
                    prop_assert_eq!(b.base().as_u32(), raw & 0xffff_f000);
                    prop_assert_eq!(b.enabled(), raw & 1 != 0);
                    prop_assert_eq!(current_size_bits(b.size()), raw & 0x3c);
                }
                Err(TcmError::ReservedSize { field, .. }) => {
                    prop_assert!(decode_size(field).is_none());
                }
                Err(TcmError::Misaligned { align, .. }) => {
                    prop_assert!(raw & 0xffff_f000 & (align - 1) != 0);
                }
                Err(e) => prop_assert!(false, "unexpected {e:?}"),
            }
        }
    }
}
