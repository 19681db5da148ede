//! Addresses, FCSE process IDs and domains.
//!
//! ARMv5 distinguishes three kinds of address:
//!
//! * [`VirtAddr`]: the address a program issues.
//! * [`ModifiedVirtAddr`] (MVA): the virtual address after Fast Context-Switch
//!   Extension relocation. Every address below 32 MiB is relocated by
//!   `pid << 25`; the caches, the TLB and the page tables all see MVAs.
//! * [`PhysAddr`]: the address on the bus after translation.
//!
//! The VA -> MVA and MVA -> VA conversions live here and nowhere else:
//! [`VirtAddr::to_mva`] and [`ModifiedVirtAddr::to_va`].

use crate::regs::FCSEIDR;
use core::fmt;

/// Size of one FCSE relocation window: 32 MiB.
pub const FCSE_WINDOW_SIZE: u32 = 1 << FCSE_PID_SHIFT;
/// The FCSE PID occupies bits \[31:25\] of FCSEIDR; the relocation is `pid << 25`.
///
/// The offset of the PID field in [`FCSEIDR`], where it is defined.
pub const FCSE_PID_SHIFT: u32 = FCSEIDR::PID.shift as u32;

/// An address that failed a check.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum AddrError {
    /// The value does not fit in 32 bits.
    OutOfRange(u64),
    /// The address is not a multiple of the required alignment.
    Misaligned {
        /// The offending address.
        addr: u32,
        /// The required alignment in bytes (a power of two).
        align: u32,
    },
    /// An FCSE PID above the CPU's limit (127, or 63 on the SA-1100).
    PidOutOfRange {
        /// The offending PID.
        pid: u8,
        /// The largest PID the CPU accepts.
        max: u8,
    },
    /// A domain number above 15.
    DomainOutOfRange(u8),
    /// An alignment that is not a power of two (zero included).
    BadAlignment(u32),
    /// A page or frame range of no pages (a length or count of zero, or an
    /// end not after the start).
    EmptyRange,
    /// A byte length that is not a whole number of pages.
    PartialPage {
        /// The offending length in bytes.
        len: u32,
        /// The page size in bytes.
        size: u32,
    },
    /// A range that would reach past 4 GiB.
    RangeWraps {
        /// The range's first address.
        start: u32,
        /// The number of pages asked for.
        count: u32,
    },
}

impl fmt::Display for AddrError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            AddrError::OutOfRange(v) => write!(f, "address {v:#x} does not fit in 32 bits"),
            AddrError::Misaligned { addr, align } => {
                write!(f, "address {addr:#010x} is not aligned to {align:#x}")
            }
            AddrError::PidOutOfRange { pid, max } => {
                write!(f, "FCSE PID {pid} is above the limit {max}")
            }
            AddrError::DomainOutOfRange(d) => write!(f, "domain {d} is above 15"),
            AddrError::BadAlignment(a) => write!(f, "alignment {a:#x} is not a power of two"),
            AddrError::EmptyRange => write!(f, "empty page range"),
            AddrError::PartialPage { len, size } => {
                write!(
                    f,
                    "length {len:#x} is not a multiple of the page size {size:#x}"
                )
            }
            AddrError::RangeWraps { start, count } => {
                write!(f, "{count} pages from {start:#010x} reach past 4 GiB")
            }
        }
    }
}

impl core::error::Error for AddrError {}

/// A power-of-two alignment in bytes (1 B to 2 GiB).
///
/// Every alignment helper of this crate takes an `Align`, so a zero or a
/// non-power-of-two alignment is refused once, where the value is made
/// ([`Align::new`] returns `None`), instead of panicking or giving a wrong
/// answer in the arithmetic.
///
/// ```
/// use mmu_armv5::addr::{Align, PhysAddr};
///
/// let page = Align::new(4096).unwrap();
/// assert_eq!(page, Align::KIB_4);
/// assert!(Align::new(0).is_none() && Align::new(3000).is_none());
/// assert!(PhysAddr::new(0x3000).is_aligned(page));
/// assert_eq!(PhysAddr::new(0x3456).align_down(page), PhysAddr::new(0x3000));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[repr(transparent)]
pub struct Align(u32);

impl Align {
    /// 4 bytes: a word.
    pub const WORD: Align = Align(4);
    /// 1 KiB: a tiny page, a coarse table.
    pub const KIB_1: Align = Align(1 << 10);
    /// 4 KiB: a small page, a fine table.
    pub const KIB_4: Align = Align(1 << 12);
    /// 16 KiB: a first-level table.
    pub const KIB_16: Align = Align(1 << 14);
    /// 64 KiB: a large page.
    pub const KIB_64: Align = Align(1 << 16);
    /// 1 MiB: a section.
    pub const MIB_1: Align = Align(1 << 20);
    /// 32 MiB: one FCSE window.
    pub const FCSE_WINDOW: Align = Align(FCSE_WINDOW_SIZE);

    /// `bytes` as an alignment, or `None` unless it is a power of two.
    #[inline]
    #[must_use]
    pub const fn new(bytes: u32) -> Option<Align> {
        if bytes.is_power_of_two() {
            Some(Align(bytes))
        } else {
            None
        }
    }

    /// The alignment `1 << shift`, or `None` if `shift` is 32 or more.
    #[inline]
    #[must_use]
    pub const fn from_shift(shift: u32) -> Option<Align> {
        if shift < 32 {
            Some(Align(1 << shift))
        } else {
            None
        }
    }

    /// The alignment in bytes (a power of two).
    #[inline]
    #[must_use]
    pub const fn bytes(self) -> u32 {
        self.0
    }

    /// log2 of the alignment.
    #[inline]
    #[must_use]
    pub const fn shift(self) -> u32 {
        self.0.trailing_zeros()
    }

    /// The low bits an aligned value has clear: `bytes() - 1`.
    #[inline]
    #[must_use]
    pub const fn mask(self) -> u32 {
        self.0 - 1
    }

    /// Whether `value` is a multiple of the alignment.
    #[inline]
    #[must_use]
    pub const fn divides(self, value: u32) -> bool {
        value & self.mask() == 0
    }
}

impl TryFrom<u32> for Align {
    type Error = AddrError;

    fn try_from(bytes: u32) -> Result<Align, AddrError> {
        Align::new(bytes).ok_or(AddrError::BadAlignment(bytes))
    }
}

/// Returns `Ok(addr)` if `addr` is a multiple of `align`.
#[inline]
pub const fn check_aligned(addr: u32, align: Align) -> Result<u32, AddrError> {
    if align.divides(addr) {
        Ok(addr)
    } else {
        Err(AddrError::Misaligned {
            addr,
            align: align.bytes(),
        })
    }
}

macro_rules! address_type {
    ($(#[$doc:meta])* $name:ident, $short:literal) => {
        $(#[$doc])*
        #[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
        #[cfg_attr(feature = "defmt", derive(defmt::Format))]
        #[repr(transparent)]
        pub struct $name(u32);

        impl $name {
            /// The address zero.
            pub const ZERO: Self = Self(0);

            /// Creates an address. Every 32-bit value is a valid address.
            #[inline]
            #[must_use]
            pub const fn new(addr: u32) -> Self {
                Self(addr)
            }

            /// Creates an address from a wider value, failing if it does not fit in 32 bits.
            #[inline]
            pub const fn try_new(addr: u64) -> Result<Self, AddrError> {
                if addr > u32::MAX as u64 {
                    Err(AddrError::OutOfRange(addr))
                } else {
                    Ok(Self(addr as u32))
                }
            }

            /// Creates an address that must be aligned to `align`.
            #[inline]
            pub const fn new_aligned(addr: u32, align: Align) -> Result<Self, AddrError> {
                match check_aligned(addr, align) {
                    Ok(a) => Ok(Self(a)),
                    Err(e) => Err(e),
                }
            }

            /// The raw 32-bit value.
            #[inline]
            #[must_use]
            pub const fn as_u32(self) -> u32 {
                self.0
            }

            /// Whether the address is a multiple of `align`.
            #[inline]
            #[must_use]
            pub const fn is_aligned(self, align: Align) -> bool {
                align.divides(self.0)
            }

            /// Rounds down to a multiple of `align`.
            #[inline]
            #[must_use]
            pub const fn align_down(self, align: Align) -> Self {
                Self(self.0 & !align.mask())
            }

            /// Rounds up to a multiple of `align`, or `None` past 4 GiB.
            #[inline]
            #[must_use]
            pub const fn align_up(self, align: Align) -> Option<Self> {
                match self.0.checked_add(align.mask()) {
                    Some(v) => Some(Self(v & !align.mask())),
                    None => None,
                }
            }

            /// Adds a byte offset, or `None` on overflow past 4 GiB.
            #[inline]
            #[must_use]
            pub const fn checked_add(self, offset: u32) -> Option<Self> {
                match self.0.checked_add(offset) {
                    Some(v) => Some(Self(v)),
                    None => None,
                }
            }

            /// Subtracts a byte offset, or `None` on underflow.
            #[inline]
            #[must_use]
            pub const fn checked_sub(self, offset: u32) -> Option<Self> {
                match self.0.checked_sub(offset) {
                    Some(v) => Some(Self(v)),
                    None => None,
                }
            }

            /// The first-level table index (bits \[31:20\]): which 1 MiB slot the address is in.
            #[inline]
            #[must_use]
            pub const fn l1_index(self) -> usize {
                (self.0 >> 20) as usize
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, concat!($short, "({:#010x})"), self.0)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{:#010x}", self.0)
            }
        }

        impl From<$name> for u32 {
            #[inline]
            fn from(a: $name) -> u32 {
                a.0
            }
        }
    };
}

address_type!(
    /// A virtual address, as issued by the program, before FCSE relocation.
    ///
    /// ```
    /// use mmu_armv5::addr::Align;
    /// use mmu_armv5::VirtAddr;
    ///
    /// let va = VirtAddr::new(0x0012_3456);
    /// assert_eq!(va.l1_index(), 1); // the second MiB
    /// assert_eq!(va.align_down(Align::KIB_4), VirtAddr::new(0x0012_3000));
    /// assert_eq!(va.align_up(Align::KIB_4), Some(VirtAddr::new(0x0012_4000)));
    /// assert_eq!(VirtAddr::new(0xFFFF_F000).checked_add(0x1000), None);
    /// assert_eq!(format!("{va:?} {va}"), "VA(0x00123456) 0x00123456");
    /// ```
    VirtAddr,
    "VA"
);
address_type!(
    /// A modified virtual address: a [`VirtAddr`] after FCSE relocation.
    ///
    /// Caches, TLBs and page tables are indexed by MVA. Obtain one with
    /// [`VirtAddr::to_mva`].
    ModifiedVirtAddr,
    "MVA"
);
address_type!(
    /// A physical address.
    ///
    /// ```
    /// use mmu_armv5::addr::{AddrError, Align};
    /// use mmu_armv5::PhysAddr;
    ///
    /// // A first-level table must sit on a 16 KiB boundary.
    /// let l1 = PhysAddr::new_aligned(0x0000_4000, Align::KIB_16).unwrap();
    /// assert_eq!(u32::from(l1), 0x4000);
    /// assert_eq!(
    ///     PhysAddr::new_aligned(0x0000_5000, Align::KIB_16),
    ///     Err(AddrError::Misaligned { addr: 0x5000, align: 0x4000 })
    /// );
    /// // Wider values are checked, not truncated.
    /// assert_eq!(PhysAddr::try_new(1 << 32), Err(AddrError::OutOfRange(1 << 32)));
    /// assert_eq!(PhysAddr::try_new(0xFFFF_FFFF), Ok(PhysAddr::new(u32::MAX)));
    /// ```
    PhysAddr,
    "PA"
);

impl VirtAddr {
    /// Relocates the address by the FCSE PID: `va < 32 MiB ? va + pid * 32 MiB : va`.
    ///
    /// This is the one place that implements the FCSE relocation.
    ///
    /// ```
    /// use mmu_armv5::{FcsePid, ModifiedVirtAddr, VirtAddr};
    ///
    /// let pid = FcsePid::new(5).unwrap();
    /// // Below 32 MiB: moved into PID 5's window, 5 * 32 MiB up.
    /// let mva = VirtAddr::new(0x0000_8000).to_mva(pid);
    /// assert_eq!(mva, ModifiedVirtAddr::new(0x0A00_8000));
    /// assert_eq!(mva.window(), 5);
    /// // At or above 32 MiB (the kernel, shared regions): unchanged.
    /// assert_eq!(VirtAddr::new(0xC000_0000).to_mva(pid).as_u32(), 0xC000_0000);
    /// // PID 0 relocates nothing.
    /// assert_eq!(VirtAddr::new(0x8000).to_mva(FcsePid::ZERO).as_u32(), 0x8000);
    /// ```
    #[inline]
    #[must_use]
    pub const fn to_mva(self, pid: FcsePid) -> ModifiedVirtAddr {
        if self.0 < FCSE_WINDOW_SIZE {
            ModifiedVirtAddr(self.0 | ((pid.0 as u32) << FCSE_PID_SHIFT))
        } else {
            ModifiedVirtAddr(self.0)
        }
    }
}

impl ModifiedVirtAddr {
    /// Undoes FCSE relocation for the process running with `pid`.
    ///
    /// An MVA inside `pid`'s window maps back to the low address the program
    /// used (`mva - pid * 32 MiB`); any other MVA is its own VA. (A program
    /// can also reach its own window by its relocated address directly; both
    /// name the same MVA, and this returns the low form.) With PID 0 the MVA
    /// is the VA.
    ///
    /// ```
    /// use mmu_armv5::{FcsePid, ModifiedVirtAddr, VirtAddr};
    ///
    /// let pid = FcsePid::new(5).unwrap();
    /// let va = VirtAddr::new(0x0000_8000);
    /// assert_eq!(va.to_mva(pid).to_va(pid), va);
    /// // Another window's MVA is not this process's low address.
    /// let other = ModifiedVirtAddr::new(0x0C00_8000); // window 6
    /// assert_eq!(other.to_va(pid), VirtAddr::new(0x0C00_8000));
    /// ```
    #[inline]
    #[must_use]
    pub const fn to_va(self, pid: FcsePid) -> VirtAddr {
        if pid.0 != 0 && (self.0 >> FCSE_PID_SHIFT) == pid.0 as u32 {
            VirtAddr(self.0 & (FCSE_WINDOW_SIZE - 1))
        } else {
            VirtAddr(self.0)
        }
    }

    /// The FCSE window (0..=127) this MVA lies in.
    #[inline]
    #[must_use]
    pub const fn window(self) -> u8 {
        (self.0 >> FCSE_PID_SHIFT) as u8
    }
}

/// A Fast Context-Switch Extension process ID.
///
/// Seven bits (0..=127) on ARM926EJ-S and XScale; six (0..=63) on the
/// StrongARM SA-1100/SA-1110. Use [`FcsePid::new`] for the former and
/// [`FcsePid::with_limit`] with [`FcsePid::MAX_SA1100`] for the latter.
///
/// ```
/// use mmu_armv5::{AddrError, FcsePid, ModifiedVirtAddr};
///
/// let pid = FcsePid::new(127).unwrap();
/// assert_eq!(pid.get(), 127);
/// assert_eq!(pid.fcseidr_value(), 127 << 25);
/// assert_eq!(pid.window_base(), ModifiedVirtAddr::new(0xFE00_0000));
/// assert_eq!(FcsePid::new(128), Err(AddrError::PidOutOfRange { pid: 128, max: 127 }));
/// // The SA-1100's FCSE has six bits.
/// assert!(FcsePid::with_limit(63, FcsePid::MAX_SA1100).is_ok());
/// assert_eq!(
///     FcsePid::with_limit(64, FcsePid::MAX_SA1100),
///     Err(AddrError::PidOutOfRange { pid: 64, max: 63 })
/// );
/// ```
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[repr(transparent)]
pub struct FcsePid(u8);

impl FcsePid {
    /// PID 0: no relocation.
    pub const ZERO: Self = Self(0);
    /// The largest PID of a seven-bit FCSE (ARM926EJ-S, XScale): the
    /// largest value of the PID field of [`FCSEIDR`].
    pub const MAX: u8 = FCSEIDR::PID.mask as u8;
    /// The largest PID on the StrongARM SA-1100, whose FCSE has six bits.
    pub const MAX_SA1100: u8 = 63;

    /// Creates a PID in 0..=127.
    #[inline]
    pub const fn new(pid: u8) -> Result<Self, AddrError> {
        Self::with_limit(pid, Self::MAX)
    }

    /// Creates a PID in `0..=max`, for CPUs with fewer PID bits.
    #[inline]
    pub const fn with_limit(pid: u8, max: u8) -> Result<Self, AddrError> {
        if pid > max || pid > Self::MAX {
            Err(AddrError::PidOutOfRange { pid, max })
        } else {
            Ok(Self(pid))
        }
    }

    /// The PID number.
    #[inline]
    #[must_use]
    pub const fn get(self) -> u8 {
        self.0
    }

    /// The value of the FCSEIDR register for this PID: exactly `pid << 25`.
    #[inline]
    #[must_use]
    pub const fn fcseidr_value(self) -> u32 {
        (self.0 as u32) << FCSE_PID_SHIFT
    }

    /// The first MVA of this PID's window.
    #[inline]
    #[must_use]
    pub const fn window_base(self) -> ModifiedVirtAddr {
        ModifiedVirtAddr(self.fcseidr_value())
    }
}

impl fmt::Debug for FcsePid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Pid({})", self.0)
    }
}

/// One of the sixteen ARM memory domains.
///
/// ```
/// use mmu_armv5::{AddrError, Domain};
///
/// let d = Domain::new(15).unwrap();
/// assert_eq!(d.get(), 15);
/// assert_eq!(Domain::new(16), Err(AddrError::DomainOutOfRange(16)));
/// // Hardware fields (descriptor bits [8:5], FSR bits [7:4]) decode without a check.
/// assert_eq!(Domain::from_low_bits(0x3a), Domain::new(10).unwrap());
/// assert_eq!(Domain::all().count(), Domain::COUNT);
/// ```
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[repr(transparent)]
pub struct Domain(u8);

impl Domain {
    /// Number of domains.
    pub const COUNT: usize = 16;

    /// Creates a domain number in 0..=15.
    #[inline]
    pub const fn new(d: u8) -> Result<Self, AddrError> {
        if d < 16 {
            Ok(Self(d))
        } else {
            Err(AddrError::DomainOutOfRange(d))
        }
    }

    /// Domain from the low four bits of `bits` (used when decoding hardware fields).
    #[inline]
    #[must_use]
    pub const fn from_low_bits(bits: u32) -> Self {
        Self((bits & 0xf) as u8)
    }

    /// The domain number.
    #[inline]
    #[must_use]
    pub const fn get(self) -> u8 {
        self.0
    }

    /// Iterator over all sixteen domains, in order.
    pub fn all() -> impl Iterator<Item = Domain> {
        (0..16u8).map(Domain)
    }
}

impl fmt::Debug for Domain {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "D{}", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mva_relocates_only_below_32_mib() {
        let pid = FcsePid::new(5).unwrap();
        assert_eq!(VirtAddr::new(0x8000).to_mva(pid).as_u32(), 0x0A00_8000);
        assert_eq!(VirtAddr::new(0x01FF_FFFF).to_mva(pid).as_u32(), 0x0BFF_FFFF);
        assert_eq!(VirtAddr::new(0x0200_0000).to_mva(pid).as_u32(), 0x0200_0000);
        assert_eq!(VirtAddr::new(0xC000_0000).to_mva(pid).as_u32(), 0xC000_0000);
        assert_eq!(VirtAddr::new(0x8000).to_mva(FcsePid::ZERO).as_u32(), 0x8000);
    }

    #[test]
    fn mva_round_trips_for_the_running_pid() {
        for p in [0u8, 1, 63, 127] {
            let pid = FcsePid::new(p).unwrap();
            for va in [
                0u32,
                0x8000,
                0x01FF_FFFC,
                0x0200_0000,
                0x8000_0000,
                0xFFFF_0000,
            ] {
                let va = VirtAddr::new(va);
                let mva = va.to_mva(pid);
                if va.as_u32() >= FCSE_WINDOW_SIZE && p != 0 && mva.window() == p {
                    // The program named its own window directly: same MVA as the low form.
                    assert_eq!(mva.to_va(pid).as_u32(), va.as_u32() - pid.fcseidr_value());
                } else {
                    assert_eq!(mva.to_va(pid), va, "pid {p} va {va:?}");
                }
            }
        }
        // Another PID's window is not folded back.
        let p1 = FcsePid::new(1).unwrap();
        assert_eq!(
            ModifiedVirtAddr::new(0x0400_1000).to_va(p1).as_u32(),
            0x0400_1000
        );
    }

    #[test]
    fn pid_and_domain_limits_are_typed_errors() {
        assert!(FcsePid::new(127).is_ok());
        assert_eq!(
            FcsePid::new(128),
            Err(AddrError::PidOutOfRange { pid: 128, max: 127 })
        );
        assert_eq!(
            FcsePid::with_limit(64, FcsePid::MAX_SA1100),
            Err(AddrError::PidOutOfRange { pid: 64, max: 63 })
        );
        assert_eq!(FcsePid::new(3).unwrap().fcseidr_value(), 3 << 25);
        assert!(Domain::new(15).is_ok());
        assert_eq!(Domain::new(16), Err(AddrError::DomainOutOfRange(16)));
    }

    #[test]
    fn alignment_helpers() {
        let page = Align::KIB_4;
        assert_eq!(
            PhysAddr::new_aligned(0x1234, page),
            Err(AddrError::Misaligned {
                addr: 0x1234,
                align: 0x1000
            })
        );
        assert_eq!(VirtAddr::new(0x1234).align_down(page).as_u32(), 0x1000);
        assert_eq!(
            VirtAddr::new(0x1234).align_up(page).unwrap().as_u32(),
            0x2000
        );
        assert_eq!(VirtAddr::new(0xFFFF_F001).align_up(page), None);
        assert_eq!(
            PhysAddr::try_new(1 << 32),
            Err(AddrError::OutOfRange(1 << 32))
        );
    }

    /// Regression: the helpers took a raw `u32`, panicked (subtract with
    /// overflow) on 0 and answered wrongly for 3 or 3000. An alignment is now
    /// an `Align`, which only powers of two can be.
    #[test]
    fn alignments_that_are_not_powers_of_two_are_refused() {
        for bad in [0u32, 3, 3000, 0x1_8000, u32::MAX] {
            assert_eq!(Align::new(bad), None);
            assert_eq!(Align::try_from(bad), Err(AddrError::BadAlignment(bad)));
        }
        assert_eq!(Align::from_shift(32), None);
        assert_eq!(Align::from_shift(31).map(Align::bytes), Some(1 << 31));
        assert_eq!(Align::new(1 << 20), Some(Align::MIB_1));
        assert_eq!(Align::KIB_16.shift(), 14);
    }

    proptest::proptest! {
        #![proptest_config(crate::testing::proptest_config(256))]
        #[test]
        fn alignment_helpers_agree_with_integer_arithmetic(
            addr in proptest::prelude::any::<u32>(),
            shift in 0u32..32,
        ) {
            let a = Align::from_shift(shift).unwrap();
            let n = u64::from(a.bytes());
            let v = VirtAddr::new(addr);
            proptest::prop_assert_eq!(v.is_aligned(a), u64::from(addr) % n == 0);
            proptest::prop_assert_eq!(
                u64::from(v.align_down(a).as_u32()),
                u64::from(addr) / n * n
            );
            let up = u64::from(addr).div_ceil(n) * n;
            proptest::prop_assert_eq!(
                v.align_up(a).map(|x| u64::from(x.as_u32())),
                (up <= u64::from(u32::MAX)).then_some(up)
            );
            proptest::prop_assert_eq!(check_aligned(addr, a).is_ok(), v.is_aligned(a));
        }
    }
}
