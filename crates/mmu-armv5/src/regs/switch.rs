//! [`SwitchRegs`]: the DACR and FCSEIDR values that make an address space
//! current under Fast Address-Space Switching, written together by
//! [`Cp15Ext::set_switch_regs`](super::Cp15Ext::set_switch_regs).

use super::dacr::Dacr;
use super::fcseidr::Fcseidr;
use crate::addr::FcsePid;

/// The two register values of a FASS context switch: the DACR that opens
/// the next space's domains, and its FCSE PID as the FCSEIDR value.
///
/// Both are kept encoded, exactly as written (the FCSEIDR value is
/// `pid << 25`), so that a switch to a precomputed value is two loads and
/// two `MCR`s, with no arithmetic in between.
///
/// ```
/// use mmu_armv5::regs::{Cp15Event, Cp15Ext, Cp15Reg, Dacr, DomainAccess, MockCp15, SwitchRegs};
/// use mmu_armv5::{Domain, FcsePid};
///
/// let pid = FcsePid::new(3).unwrap();
/// let dacr = Dacr::only(Domain::new(4).unwrap(), DomainAccess::Client);
/// let regs = SwitchRegs::new(dacr, pid);
/// assert_eq!((regs.dacr(), regs.pid()), (dacr, pid));
///
/// let mut cp15 = MockCp15::arm926(); // on bare-metal ARM: `HwCp15`
/// // SAFETY: the mock only records; on hardware the caller upholds the
/// // contract of `set_switch_regs`.
/// unsafe { cp15.set_switch_regs(regs) };
/// assert_eq!(
///     cp15.events(),
///     &[Cp15Event::Write(Cp15Reg::Dacr, dacr.bits()), Cp15Event::Write(Cp15Reg::Fcseidr, 3 << 25)]
/// );
/// assert_eq!(cp15.switch_regs(), regs);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[repr(C)]
pub struct SwitchRegs {
    dacr: Dacr,
    /// Always `Fcseidr::new(pid).bits()` for some PID.
    fcseidr: u32,
}

impl SwitchRegs {
    /// Every domain no access, PID 0: a placeholder that opens nothing.
    pub const NONE: SwitchRegs = SwitchRegs::new(Dacr::NONE, FcsePid::ZERO);

    /// The values for a space whose domains `dacr` opens and whose PID is `pid`.
    #[inline]
    #[must_use]
    pub const fn new(dacr: Dacr, pid: FcsePid) -> SwitchRegs {
        SwitchRegs {
            dacr,
            fcseidr: pid.fcseidr_value(),
        }
    }

    /// The DACR value.
    #[inline(always)]
    #[must_use]
    pub const fn dacr(self) -> Dacr {
        self.dacr
    }

    /// The FCSEIDR value (`pid << 25`).
    #[inline(always)]
    #[must_use]
    pub const fn fcseidr(self) -> Fcseidr {
        Fcseidr::from_bits(self.fcseidr)
    }

    /// The FCSE PID.
    #[inline]
    #[must_use]
    pub const fn pid(self) -> FcsePid {
        self.fcseidr().pid()
    }

    /// The FCSEIDR value as written: exactly `pid << 25`.
    #[inline(always)]
    #[must_use]
    pub const fn fcseidr_bits(self) -> u32 {
        self.fcseidr
    }
}

impl Default for SwitchRegs {
    fn default() -> SwitchRegs {
        SwitchRegs::NONE
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::addr::Domain;
    use crate::regs::{Cp15Event, Cp15Ext, Cp15Reg, DomainAccess, MockCp15};

    #[test]
    fn the_values_are_kept_encoded_for_every_pid() {
        let dacr = Dacr::only(Domain::new(7).unwrap(), DomainAccess::Client);
        for p in 0..=FcsePid::MAX {
            let pid = FcsePid::new(p).unwrap();
            let r = SwitchRegs::new(dacr, pid);
            assert_eq!(r.fcseidr_bits(), u32::from(p) << 25);
            assert_eq!(r.fcseidr(), Fcseidr::new(pid));
            assert_eq!((r.dacr(), r.pid()), (dacr, pid));
        }
        assert_eq!(SwitchRegs::default(), SwitchRegs::NONE);
        assert_eq!(SwitchRegs::NONE.dacr(), Dacr::NONE);
        assert_eq!(SwitchRegs::NONE.fcseidr_bits(), 0);
    }

    #[test]
    fn a_switch_writes_the_dacr_then_the_fcseidr_and_reads_back() {
        let mut m = MockCp15::arm926();
        let regs = SwitchRegs::new(
            Dacr::only(Domain::new(2).unwrap(), DomainAccess::Client)
                .with(Domain::new(0).unwrap(), DomainAccess::Client),
            FcsePid::new(127).unwrap(),
        );
        // SAFETY: mock backend; nothing runs under these settings.
        unsafe { m.set_switch_regs(regs) };
        assert_eq!(
            m.events(),
            &[
                Cp15Event::Write(Cp15Reg::Dacr, regs.dacr().bits()),
                Cp15Event::Write(Cp15Reg::Fcseidr, 127 << 25),
            ]
        );
        assert_eq!(m.switch_regs(), regs);
        // A stray low bit in the register is not part of the value read back.
        m.set_register(Cp15Reg::Fcseidr, (5 << 25) | 1);
        assert_eq!(m.switch_regs().fcseidr_bits(), 5 << 25);
    }
}
