//! The virtual address-space layout: which FCSE PID windows are in use,
//! where shared segments live and where the kernel lives.
//!
//! Everything is counted in first-level slots of 1 MiB, the granularity at
//! which the caching page directory tags entries with domains. A [`Layout`]
//! can only be built from disjoint, 1 MiB-aligned, non-empty regions.

use core::fmt;
use core::ops::Range;
use mmu_armv5::addr::{AddrError, FCSE_PID_SHIFT, FCSE_WINDOW_SIZE};
use mmu_armv5::{FcsePid, ModifiedVirtAddr, VirtAddr};

/// Size of one first-level slot: 1 MiB.
pub const SLOT_SIZE: u32 = 1 << SLOT_SHIFT;
/// log2 of [`SLOT_SIZE`].
pub const SLOT_SHIFT: u32 = 20;
/// Number of first-level slots in the 4 GiB address space.
pub const SLOT_COUNT: usize = 4096;
/// First-level slots per FCSE window (32 MiB / 1 MiB).
pub const SLOTS_PER_WINDOW: usize = (FCSE_WINDOW_SIZE >> SLOT_SHIFT) as usize;

/// A layout that cannot be used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum LayoutError {
    /// A region's base or size is not a multiple of 1 MiB.
    Misaligned(AddrError),
    /// A region of size zero.
    Empty,
    /// A region reaching past 4 GiB.
    PastEnd {
        /// First slot of the region.
        first_slot: u16,
        /// Its length in slots.
        slots: u32,
    },
    /// The PID range is empty (`first > last`).
    EmptyPidRange {
        /// The requested first PID.
        first: u8,
        /// The requested last PID.
        last: u8,
    },
    /// PID 0 is not relocated: it is kept for address spaces larger than
    /// 32 MiB and for the kernel, never handed out as a window.
    PidZero,
    /// Two regions overlap.
    Overlap {
        /// The first of the two.
        a: RegionKind,
        /// The second.
        b: RegionKind,
    },
    /// The kernel or shared region reaches into the low 32 MiB, which the
    /// FCSE relocates into the running process's window: the kernel would
    /// move with every FCSEIDR write, and a segment would sit at a
    /// different address in every sharer.
    Relocated(RegionKind),
}

impl fmt::Display for LayoutError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            LayoutError::Misaligned(e) => write!(f, "region not 1 MiB aligned: {e}"),
            LayoutError::Empty => f.write_str("region of size zero"),
            LayoutError::PastEnd { first_slot, slots } => write!(
                f,
                "region of {slots} MiB at slot {first_slot} reaches past 4 GiB"
            ),
            LayoutError::EmptyPidRange { first, last } => {
                write!(f, "PID range {first}..={last} is empty")
            }
            LayoutError::PidZero => f.write_str("PID 0 cannot be a window of the layout"),
            LayoutError::Overlap { a, b } => write!(f, "{a:?} region overlaps {b:?} region"),
            LayoutError::Relocated(k) => {
                write!(f, "{k:?} region reaches into the FCSE-relocated low 32 MiB")
            }
        }
    }
}

impl core::error::Error for LayoutError {}

/// A non-empty, 1 MiB-aligned range of virtual (or modified virtual) addresses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Region {
    first_slot: u16,
    slots: u16,
}

impl Region {
    /// The region `[base, base + size)`; both must be multiples of 1 MiB,
    /// `size` non-zero, and the end at most 4 GiB. `const`, so a kernel's
    /// layout can be checked at compile time (see [`Layout::new`]).
    pub const fn new(base: u32, size: u64) -> Result<Region, LayoutError> {
        if let Err(e) = mmu_armv5::addr::check_aligned(base, mmu_armv5::addr::Align::MIB_1) {
            return Err(LayoutError::Misaligned(e));
        }
        if !size.is_multiple_of(SLOT_SIZE as u64) {
            return Err(LayoutError::Misaligned(AddrError::Misaligned {
                addr: size as u32,
                align: SLOT_SIZE,
            }));
        }
        let slots = size >> SLOT_SHIFT;
        Region::from_slots((base >> SLOT_SHIFT) as usize, slots)
    }

    /// The region of `slots` first-level slots starting at slot `first`.
    pub const fn from_slots(first: usize, slots: u64) -> Result<Region, LayoutError> {
        if slots == 0 {
            return Err(LayoutError::Empty);
        }
        if first as u64 + slots > SLOT_COUNT as u64 {
            // Saturated to the error's field widths.
            let first_slot = if first > u16::MAX as usize {
                u16::MAX
            } else {
                first as u16
            };
            let slots = if slots > u32::MAX as u64 {
                u32::MAX
            } else {
                slots as u32
            };
            return Err(LayoutError::PastEnd { first_slot, slots });
        }
        Ok(Region {
            first_slot: first as u16,
            slots: slots as u16,
        })
    }

    /// The 32 MiB window of `pid`, as modified virtual addresses.
    #[must_use]
    pub const fn window(pid: FcsePid) -> Region {
        Region {
            first_slot: (pid.fcseidr_value() >> SLOT_SHIFT) as u16,
            slots: SLOTS_PER_WINDOW as u16,
        }
    }

    /// First address of the region.
    #[must_use]
    pub const fn base(self) -> u32 {
        (self.first_slot as u32) << SLOT_SHIFT
    }

    /// Size in bytes (up to 4 GiB, hence `u64`).
    #[must_use]
    pub const fn size(self) -> u64 {
        (self.slots as u64) << SLOT_SHIFT
    }

    /// The first-level slots the region covers.
    #[must_use]
    pub const fn slots(self) -> Range<usize> {
        self.first_slot as usize..self.first_slot as usize + self.slots as usize
    }

    /// Whether the address (virtual or modified virtual) lies in the region.
    #[must_use]
    pub const fn contains(self, addr: u32) -> bool {
        self.contains_slot((addr >> SLOT_SHIFT) as usize)
    }

    /// Whether first-level slot `slot` lies in the region.
    #[must_use]
    pub const fn contains_slot(self, slot: usize) -> bool {
        slot >= self.first_slot as usize && slot < self.first_slot as usize + self.slots as usize
    }

    /// Whether `[base, base + size)` lies entirely inside the region.
    #[must_use]
    pub const fn contains_range(self, base: u32, size: u64) -> bool {
        let start = base as u64;
        let r = self.base() as u64;
        start >= r && start + size <= r + self.size()
    }

    /// Whether the two regions share at least one slot.
    #[must_use]
    pub const fn overlaps(self, other: Region) -> bool {
        let (a0, a1) = (
            self.first_slot as u32,
            self.first_slot as u32 + self.slots as u32,
        );
        let (b0, b1) = (
            other.first_slot as u32,
            other.first_slot as u32 + other.slots as u32,
        );
        a0 < b1 && b0 < a1
    }
}

/// What a first-level slot is used for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum RegionKind {
    /// The FCSE window of the PID (a modified virtual address range).
    PidWindow(FcsePid),
    /// The shared-segment region.
    Shared,
    /// The kernel region.
    Kernel,
    /// The low 32 MiB every process sees before relocation (PID 0's window).
    Low,
    /// Nothing the layout assigns.
    Unassigned,
}

/// A validated layout of the virtual address space.
///
/// * PID windows `first_pid..=last_pid`, each 32 MiB at `pid << 25`;
/// * the shared-segment region (segments sit at the same address in every
///   sharer);
/// * the kernel region.
///
/// All three are 1 MiB aligned and pairwise disjoint, and none reaches into
/// the low 32 MiB the FCSE relocates (PID 0's window, [`RegionKind::Low`]):
/// a kernel there would be relocated by every switch's FCSEIDR write.
///
/// ```
/// use fass::{Layout, LayoutError, Region, RegionKind};
/// use mmu_armv5::{FcsePid, ModifiedVirtAddr as Mva};
///
/// let (p1, p63) = (FcsePid::new(1)?, FcsePid::new(63)?);
/// let shared = Region::new(0x8000_0000, 1 << 30)?;
/// let kernel = Region::new(0xC000_0000, 1 << 30)?;
/// let layout = Layout::new(p1, p63, shared, kernel)?;
/// assert_eq!(layout, Layout::DEMO);
/// assert_eq!(layout.pid_count(), 63);
/// assert_eq!(layout.classify(Mva::new(0x0A00_8000)), RegionKind::PidWindow(FcsePid::new(5)?));
/// assert_eq!(layout.classify(Mva::new(0xC000_8000)), RegionKind::Kernel);
/// assert_eq!(layout.classify(Mva::new(0x0000_8000)), RegionKind::Low);
///
/// // A kernel in the low 32 MiB would move with every FCSEIDR write.
/// let low = Region::new(0, 16 << 20)?;
/// assert_eq!(Layout::new(p1, p63, shared, low), Err(LayoutError::Relocated(RegionKind::Kernel)));
/// // Windows 1..=63 reach 2 GiB: a shared region below that overlaps them.
/// let under = Region::new(0x7000_0000, 1 << 20)?;
/// assert!(matches!(Layout::new(p1, p63, under, kernel), Err(LayoutError::Overlap { .. })));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Layout {
    first_pid: FcsePid,
    last_pid: FcsePid,
    shared: Region,
    kernel: Region,
}

impl Layout {
    /// The demo layout: PIDs 1..=63 (32 MiB to 2 GiB), shared segments
    /// 2 GiB to 3 GiB, kernel from 3 GiB.
    pub const DEMO: Layout = Layout {
        // Checked against `Layout::new` by the `demo_layout_is_valid_and_as_specified` test.
        first_pid: match FcsePid::new(1) {
            Ok(p) => p,
            Err(_) => FcsePid::ZERO,
        },
        last_pid: match FcsePid::new(63) {
            Ok(p) => p,
            Err(_) => FcsePid::ZERO,
        },
        shared: Region {
            first_slot: 2048,
            slots: 1024,
        },
        kernel: Region {
            first_slot: 3072,
            slots: 1024,
        },
    };

    /// Builds a layout, checking that every part is non-empty, that the
    /// kernel and shared regions lie above the FCSE-relocated 32 MiB, and
    /// that the PID windows, the shared region and the kernel region are
    /// disjoint.
    ///
    /// `const`, so a kernel can check its layout at compile time:
    ///
    /// ```
    /// use fass::{Layout, Region};
    /// use mmu_armv5::FcsePid;
    ///
    /// /// PIDs 1..=15 (32 MiB to 512 MiB), segments at 1 GiB, the kernel from 3 GiB.
    /// const LAYOUT: Layout = match (
    ///     FcsePid::new(1),
    ///     FcsePid::new(15),
    ///     Region::new(0x4000_0000, 1 << 30),
    ///     Region::new(0xC000_0000, 1 << 30),
    /// ) {
    ///     (Ok(first), Ok(last), Ok(shared), Ok(kernel)) => {
    ///         match Layout::new(first, last, shared, kernel) {
    ///             Ok(l) => l,
    ///             Err(_) => panic!("the regions overlap"),
    ///         }
    ///     }
    ///     _ => panic!("a PID or region is malformed"),
    /// };
    /// assert_eq!(LAYOUT.pid_count(), 15);
    /// assert_eq!(LAYOUT.kernel().slots(), 3072..4096);
    /// ```
    pub const fn new(
        first_pid: FcsePid,
        last_pid: FcsePid,
        shared: Region,
        kernel: Region,
    ) -> Result<Layout, LayoutError> {
        if first_pid.get() == 0 {
            return Err(LayoutError::PidZero);
        }
        if first_pid.get() > last_pid.get() {
            return Err(LayoutError::EmptyPidRange {
                first: first_pid.get(),
                last: last_pid.get(),
            });
        }
        let low = Region {
            first_slot: 0,
            slots: SLOTS_PER_WINDOW as u16,
        };
        if kernel.overlaps(low) {
            return Err(LayoutError::Relocated(RegionKind::Kernel));
        }
        if shared.overlaps(low) {
            return Err(LayoutError::Relocated(RegionKind::Shared));
        }
        let windows = Self::windows_of(first_pid, last_pid);
        if windows.overlaps(shared) {
            return Err(LayoutError::Overlap {
                a: RegionKind::PidWindow(Self::first_window_in(first_pid, last_pid, shared)),
                b: RegionKind::Shared,
            });
        }
        if windows.overlaps(kernel) {
            return Err(LayoutError::Overlap {
                a: RegionKind::PidWindow(Self::first_window_in(first_pid, last_pid, kernel)),
                b: RegionKind::Kernel,
            });
        }
        if shared.overlaps(kernel) {
            return Err(LayoutError::Overlap {
                a: RegionKind::Shared,
                b: RegionKind::Kernel,
            });
        }
        Ok(Layout {
            first_pid,
            last_pid,
            shared,
            kernel,
        })
    }

    /// The first PID in `first..=last` whose window overlaps `r` (`first`
    /// if none does), to name the collision.
    const fn first_window_in(first: FcsePid, last: FcsePid, r: Region) -> FcsePid {
        let mut p = first.get();
        while p <= last.get() {
            if let Ok(pid) = FcsePid::new(p) {
                if Region::window(pid).overlaps(r) {
                    return pid;
                }
            }
            p += 1;
        }
        first
    }

    const fn windows_of(first: FcsePid, last: FcsePid) -> Region {
        let first_slot = (first.fcseidr_value() >> SLOT_SHIFT) as u16;
        let count = (last.get() - first.get() + 1) as u16 * SLOTS_PER_WINDOW as u16;
        Region {
            first_slot,
            slots: count,
        }
    }

    /// The lowest PID handed out.
    #[must_use]
    pub const fn first_pid(&self) -> FcsePid {
        self.first_pid
    }

    /// The highest PID handed out.
    #[must_use]
    pub const fn last_pid(&self) -> FcsePid {
        self.last_pid
    }

    /// Number of PIDs (windows) in the layout.
    #[must_use]
    pub const fn pid_count(&self) -> usize {
        (self.last_pid.get() - self.first_pid.get()) as usize + 1
    }

    /// Whether `pid` is one of the layout's windows.
    #[must_use]
    pub fn has_pid(&self, pid: FcsePid) -> bool {
        pid >= self.first_pid && pid <= self.last_pid
    }

    /// All PID windows together, as one modified-virtual region.
    #[must_use]
    pub fn pid_windows(&self) -> Region {
        Self::windows_of(self.first_pid, self.last_pid)
    }

    /// The shared-segment region.
    #[must_use]
    pub const fn shared(&self) -> Region {
        self.shared
    }

    /// The kernel region.
    #[must_use]
    pub const fn kernel(&self) -> Region {
        self.kernel
    }

    /// What the modified virtual address `mva` belongs to.
    #[must_use]
    pub fn classify(&self, mva: ModifiedVirtAddr) -> RegionKind {
        let a = mva.as_u32();
        if self.kernel.contains(a) {
            RegionKind::Kernel
        } else if self.shared.contains(a) {
            RegionKind::Shared
        } else if a < FCSE_WINDOW_SIZE {
            RegionKind::Low
        } else {
            match FcsePid::new((a >> FCSE_PID_SHIFT) as u8) {
                Ok(pid) if self.has_pid(pid) => RegionKind::PidWindow(pid),
                _ => RegionKind::Unassigned,
            }
        }
    }

    /// Whether `va` lies in the private low 32 MiB every process is relocated from.
    #[must_use]
    pub const fn is_private_low(va: VirtAddr) -> bool {
        va.as_u32() < FCSE_WINDOW_SIZE
    }
}

impl Default for Layout {
    fn default() -> Layout {
        Layout::DEMO
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const MIB: u32 = 1 << 20;
    const GIB: u64 = 1 << 30;

    fn pid(p: u8) -> FcsePid {
        FcsePid::new(p).unwrap()
    }

    #[test]
    fn demo_layout_is_valid_and_as_specified() {
        let d = Layout::new(
            pid(1),
            pid(63),
            Region::new(0x8000_0000, GIB).unwrap(),
            Region::new(0xC000_0000, GIB).unwrap(),
        )
        .unwrap();
        assert_eq!(d, Layout::DEMO);
        assert_eq!(Layout::default(), Layout::DEMO);
        assert_eq!(d.pid_windows().base(), 32 * MIB);
        assert_eq!(d.pid_windows().size(), 2 * GIB - 32 * u64::from(MIB));
        assert_eq!(d.pid_count(), 63);
        assert_eq!(d.kernel().slots(), 3072..4096);
        assert_eq!(d.shared().slots(), 2048..3072);
    }

    #[test]
    fn classification() {
        let d = Layout::DEMO;
        let c = |a: u32| d.classify(ModifiedVirtAddr::new(a));
        assert_eq!(c(0x0000_8000), RegionKind::Low);
        assert_eq!(c(0x0200_0000), RegionKind::PidWindow(pid(1)));
        assert_eq!(c(0x7FFF_FFFF), RegionKind::PidWindow(pid(63)));
        assert_eq!(c(0x8000_0000), RegionKind::Shared);
        assert_eq!(c(0xBFFF_FFFF), RegionKind::Shared);
        assert_eq!(c(0xC000_0000), RegionKind::Kernel);
        assert_eq!(c(0xFFFF_FFFF), RegionKind::Kernel);
        let small = Layout::new(
            pid(1),
            pid(3),
            Region::new(0x8000_0000, GIB).unwrap(),
            Region::new(0xC000_0000, GIB).unwrap(),
        )
        .unwrap();
        assert_eq!(
            small.classify(ModifiedVirtAddr::new(0x0800_0000)),
            RegionKind::Unassigned
        );
    }

    #[test]
    fn region_errors() {
        assert_eq!(
            Region::new(0x8000_1000, GIB),
            Err(LayoutError::Misaligned(AddrError::Misaligned {
                addr: 0x8000_1000,
                align: MIB
            }))
        );
        assert!(matches!(
            Region::new(0x8000_0000, u64::from(MIB) + 4),
            Err(LayoutError::Misaligned(_))
        ));
        assert_eq!(Region::new(0x8000_0000, 0), Err(LayoutError::Empty));
        assert_eq!(
            Region::new(0xC000_0000, 2 * GIB),
            Err(LayoutError::PastEnd {
                first_slot: 3072,
                slots: 2048
            })
        );
        assert!(Region::new(0, 4 * GIB).is_ok());
    }

    #[test]
    fn layout_errors() {
        let shared = Region::new(0x8000_0000, GIB).unwrap();
        let kernel = Region::new(0xC000_0000, GIB).unwrap();
        assert_eq!(
            Layout::new(pid(0), pid(63), shared, kernel),
            Err(LayoutError::PidZero)
        );
        assert_eq!(
            Layout::new(pid(5), pid(4), shared, kernel),
            Err(LayoutError::EmptyPidRange { first: 5, last: 4 })
        );
        // PID 64 starts at 2 GiB: collides with the shared region.
        assert_eq!(
            Layout::new(pid(1), pid(95), shared, kernel),
            Err(LayoutError::Overlap {
                a: RegionKind::PidWindow(pid(64)),
                b: RegionKind::Shared
            })
        );
        let overlapping_kernel = Region::new(0xB000_0000, GIB + 256 * u64::from(MIB)).unwrap();
        assert_eq!(
            Layout::new(pid(1), pid(63), shared, overlapping_kernel),
            Err(LayoutError::Overlap {
                a: RegionKind::Shared,
                b: RegionKind::Kernel
            })
        );
        // Linux's split: 95 PIDs below a 3 GiB kernel, shared region elsewhere is impossible,
        // but with a small shared region above the kernel it validates.
        let k = Region::new(0xC000_0000, 512 * u64::from(MIB)).unwrap();
        let s = Region::new(0xE000_0000, 512 * u64::from(MIB)).unwrap();
        assert!(Layout::new(pid(1), pid(95), s, k).is_ok());
    }

    #[test]
    fn kernel_and_shared_regions_must_lie_above_the_relocated_32_mib() {
        let shared = Region::new(0x8000_0000, GIB).unwrap();
        let kernel = Region::new(0xC000_0000, GIB).unwrap();
        // A kernel at 16 MiB: every FCSEIDR write would relocate it.
        let low_kernel = Region::new(16 * MIB, u64::from(MIB)).unwrap();
        assert_eq!(
            Layout::new(pid(2), pid(63), shared, low_kernel),
            Err(LayoutError::Relocated(RegionKind::Kernel))
        );
        // Straddling the 32 MiB boundary is relocated too.
        let straddling = Region::new(31 * MIB, 2 * u64::from(MIB)).unwrap();
        assert_eq!(
            Layout::new(pid(2), pid(63), shared, straddling),
            Err(LayoutError::Relocated(RegionKind::Kernel))
        );
        assert_eq!(
            Layout::new(
                pid(2),
                pid(63),
                Region::new(0, u64::from(MIB)).unwrap(),
                kernel
            ),
            Err(LayoutError::Relocated(RegionKind::Shared))
        );
        // Right above it is fine.
        let k = Region::new(32 * MIB, u64::from(MIB)).unwrap();
        assert!(Layout::new(pid(2), pid(63), shared, k).is_ok());
    }

    proptest! {
        #![proptest_config(crate::proptest_config())]
        #[test]
        fn overlap_is_symmetric_and_matches_slot_sets(
            a0 in 0usize..4096, an in 1u64..200, b0 in 0usize..4096, bn in 1u64..200
        ) {
            let (Ok(a), Ok(b)) = (Region::from_slots(a0, an), Region::from_slots(b0, bn)) else {
                return Ok(());
            };
            let shared_slot = a.slots().any(|s| b.contains_slot(s));
            prop_assert_eq!(a.overlaps(b), shared_slot);
            prop_assert_eq!(b.overlaps(a), shared_slot);
        }

        #[test]
        fn valid_layouts_are_disjoint(
            first in 1u8..128, len in 0u8..128, s0 in 0usize..4096, sn in 1u64..1024,
            k0 in 0usize..4096, kn in 1u64..1024
        ) {
            let last = first.saturating_add(len).min(127);
            let (Ok(s), Ok(k)) = (Region::from_slots(s0, sn), Region::from_slots(k0, kn)) else {
                return Ok(());
            };
            if let Ok(l) = Layout::new(pid(first), pid(last), s, k) {
                prop_assert!(l.kernel().slots().start >= SLOTS_PER_WINDOW);
                prop_assert!(l.shared().slots().start >= SLOTS_PER_WINDOW);
                for slot in 0..SLOT_COUNT {
                    let owners = [l.pid_windows(), l.shared(), l.kernel()]
                        .iter()
                        .filter(|r| r.contains_slot(slot))
                        .count();
                    prop_assert!(owners <= 1, "slot {} in {} regions", slot, owners);
                }
            } else {
                let low = |r: Region| r.slots().start < SLOTS_PER_WINDOW;
                prop_assert!(
                    l_overlaps(first, last, s, k) || low(s) || low(k),
                    "rejected a disjoint layout above 32 MiB"
                );
            }
        }
    }

    fn l_overlaps(first: u8, last: u8, s: Region, k: Region) -> bool {
        let w = Layout::windows_of(pid(first), pid(last));
        w.overlaps(s) || w.overlaps(k) || s.overlaps(k)
    }
}
