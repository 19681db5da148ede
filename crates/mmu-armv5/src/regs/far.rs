//! FAR: the fault address register (`c6, 0, c0, 0`).
//!
//! The ARM TRMs say the FAR holds the modified virtual address of a data
//! abort. QEMU 7.2 stores the original virtual address instead. [`Far::va`]
//! gives the right virtual address for both (see its docs).

use crate::addr::{FcsePid, ModifiedVirtAddr, VirtAddr};
use core::fmt;

/// A FAR value.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[repr(transparent)]
pub struct Far(u32);

impl Far {
    /// A value from the raw register bits.
    #[inline]
    #[must_use]
    pub const fn from_bits(bits: u32) -> Far {
        Far(bits)
    }

    /// The raw register value.
    #[inline]
    #[must_use]
    pub const fn bits(self) -> u32 {
        self.0
    }

    /// The address as the architecture defines it: an MVA.
    #[inline]
    #[must_use]
    pub const fn mva(self) -> ModifiedVirtAddr {
        ModifiedVirtAddr::new(self.0)
    }

    /// The faulting virtual address of the process that ran with `pid`.
    ///
    /// Works whether the FAR holds the MVA (hardware) or the VA (QEMU): an
    /// address in `pid`'s relocation window is folded back below 32 MiB, and
    /// any other address (including a VA below 32 MiB as QEMU reports it) is
    /// its own VA.
    #[inline]
    #[must_use]
    pub const fn va(self, pid: FcsePid) -> VirtAddr {
        self.mva().to_va(pid)
    }
}

impl fmt::Debug for Far {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Far({:#010x})", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn va_from_hardware_mva_and_from_qemu_va_agree() {
        let pid = FcsePid::new(3).unwrap();
        let va = VirtAddr::new(0x0001_2344);
        let hw = Far::from_bits(va.to_mva(pid).as_u32());
        let qemu = Far::from_bits(va.as_u32());
        assert_eq!(hw.bits(), 0x0601_2344);
        assert_eq!(hw.va(pid), va);
        assert_eq!(qemu.va(pid), va);
        // Above 32 MiB nothing is relocated.
        assert_eq!(Far::from_bits(0xC000_0010).va(pid).as_u32(), 0xC000_0010);
        assert_eq!(hw.mva().as_u32(), 0x0601_2344);
    }
}
