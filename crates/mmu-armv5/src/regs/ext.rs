//! Typed register accessors for every [`Cp15`] backend.
//!
//! [`Cp15Ext`] is implemented for every `C: Cp15` (including unsized ones).
//! Each accessor is one [`Cp15::read`] or [`Cp15::write`] (the
//! [`SwitchRegs`] pair two) and is `#[inline]`, so with `HwCp15` a FASS
//! context switch (`set_switch_regs`, or `set_dacr` + `set_fcse_pid`)
//! compiles to two `MCR` instructions.

use super::backend::{Cp15, Cp15Reg};
use super::cache_type::CacheType;
use super::dacr::Dacr;
use super::far::Far;
use super::fcseidr::Fcseidr;
use super::fsr::Fsr;
use super::midr::Midr;
use super::sctlr::Sctlr;
use super::switch::SwitchRegs;
use super::tcm::{TcmRegion, TcmRegionError, TcmStatus};
use super::ttbr::Ttbr;
use crate::addr::FcsePid;

/// Typed access to the CP15 registers.
pub trait Cp15Ext: Cp15 {
    /// The main ID register.
    #[inline]
    fn midr(&self) -> Midr {
        Midr::from_bits(self.read(Cp15Reg::Midr))
    }

    /// The cache type register (decode with [`CacheType::decode`]).
    #[inline]
    fn cache_type(&self) -> CacheType {
        CacheType::from_bits(self.read(Cp15Reg::CacheType))
    }

    /// The TCM status register (ARM926EJ-S; reads 0 on CPUs without TCM).
    #[inline]
    fn tcm_status(&self) -> TcmStatus {
        TcmStatus::from_bits(self.read(Cp15Reg::TcmStatus))
    }

    /// The system control register.
    #[inline]
    fn sctlr(&self) -> Sctlr {
        Sctlr::from_bits(self.read(Cp15Reg::Sctlr))
    }

    /// Writes the system control register.
    ///
    /// # Safety
    /// Turning the MMU on or off, changing endianness, the vector base or the
    /// S/R protection bits changes how every following access is translated
    /// and checked: the caller ensures the code, stack and data in use stay
    /// reachable at the same addresses under the new setting (identity-mapped
    /// when toggling M), that the D-cache was cleaned before it is disabled,
    /// and (on XScale) executes CPWAIT before depending on the new value.
    #[inline]
    unsafe fn set_sctlr(&mut self, value: Sctlr) {
        // SAFETY: the caller upholds the SCTLR contract stated above.
        unsafe { self.write(Cp15Reg::Sctlr, value.bits()) }
    }

    /// The translation table base register.
    #[inline]
    fn ttbr(&self) -> Ttbr {
        Ttbr::from_bits(self.read(Cp15Reg::Ttbr))
    }

    /// Writes the translation table base register.
    ///
    /// # Safety
    /// `value` points at a valid first-level table that maps the code, stack
    /// and data in use, and stays valid while installed. The caller performs
    /// the TLB (and, for virtually cached memory, cache) maintenance the
    /// change of address space requires.
    #[inline]
    unsafe fn set_ttbr(&mut self, value: Ttbr) {
        // SAFETY: the caller upholds the TTBR contract stated above.
        unsafe { self.write(Cp15Reg::Ttbr, value.bits()) }
    }

    /// The domain access control register.
    #[inline]
    fn dacr(&self) -> Dacr {
        Dacr::from_bits(self.read(Cp15Reg::Dacr))
    }

    /// Writes the domain access control register. Takes effect at once.
    ///
    /// # Safety
    /// Domains with manager access skip permission checks, and no-access
    /// domains fault on every access: the caller ensures the running code can
    /// still reach what it needs, and that no domain is opened to a process
    /// that must not see its memory.
    #[inline]
    unsafe fn set_dacr(&mut self, value: Dacr) {
        // SAFETY: the caller upholds the DACR contract stated above.
        unsafe { self.write(Cp15Reg::Dacr, value.bits()) }
    }

    /// The data fault status register.
    #[inline]
    fn dfsr(&self) -> Fsr {
        Fsr::from_bits(self.read(Cp15Reg::Dfsr))
    }

    /// Writes the data fault status register (e.g. to clear it after handling an abort).
    #[inline]
    fn set_dfsr(&mut self, value: Fsr) {
        // SAFETY: the DFSR only reports faults; writing it changes no translation or memory.
        unsafe { self.write(Cp15Reg::Dfsr, value.bits()) }
    }

    /// The instruction (prefetch) fault status register.
    #[inline]
    fn ifsr(&self) -> Fsr {
        Fsr::from_bits(self.read(Cp15Reg::Ifsr))
    }

    /// Writes the instruction fault status register.
    #[inline]
    fn set_ifsr(&mut self, value: Fsr) {
        // SAFETY: the IFSR only reports faults; writing it changes no translation or memory.
        unsafe { self.write(Cp15Reg::Ifsr, value.bits()) }
    }

    /// The fault address register.
    #[inline]
    fn far(&self) -> Far {
        Far::from_bits(self.read(Cp15Reg::Far))
    }

    /// Writes the fault address register.
    #[inline]
    fn set_far(&mut self, value: Far) {
        // SAFETY: the FAR only reports faults; writing it changes no translation or memory.
        unsafe { self.write(Cp15Reg::Far, value.bits()) }
    }

    /// The FCSE process ID register.
    #[inline]
    fn fcseidr(&self) -> Fcseidr {
        Fcseidr::from_bits(self.read(Cp15Reg::Fcseidr))
    }

    /// The current FCSE PID.
    #[inline]
    fn fcse_pid(&self) -> FcsePid {
        self.fcseidr().pid()
    }

    /// Sets the FCSE PID: writes exactly `pid << 25` to FCSEIDR.
    ///
    /// # Safety
    /// Every following access below 32 MiB is relocated into `pid`'s window:
    /// the caller ensures the code, stack and data in use do not live below
    /// 32 MiB (or are mapped identically in the new window), that `pid` is
    /// within the CPU's limit (63 on StrongARM), and that the caches hold no
    /// lines another process could wrongly hit through the new MVAs.
    #[inline]
    unsafe fn set_fcse_pid(&mut self, pid: FcsePid) {
        // SAFETY: the caller upholds the FCSEIDR contract stated above.
        unsafe { self.write(Cp15Reg::Fcseidr, Fcseidr::new(pid).bits()) }
    }

    /// The DACR and the FCSE PID: what [`Cp15Ext::set_switch_regs`] writes.
    #[inline]
    fn switch_regs(&self) -> SwitchRegs {
        SwitchRegs::new(self.dacr(), self.fcse_pid())
    }

    /// Writes the DACR, then the FCSEIDR: the whole address-space switch of
    /// a FASS process (two `MCR`s with `HwCp15`, nothing in between).
    ///
    /// # Safety
    /// The contracts of [`Cp15Ext::set_dacr`] and [`Cp15Ext::set_fcse_pid`]
    /// for the pair, at every point from the first write on: `regs` keeps
    /// the domains of the running code and data open (the kernel's domain
    /// client), opens no domain to a space that must not see it, and its
    /// PID's window holds no cache lines the next space could wrongly hit.
    /// Typically `regs` is exactly what a full switch to the same space
    /// wrote, with no recycle, flush or mapping change since.
    #[inline(always)]
    unsafe fn set_switch_regs(&mut self, regs: SwitchRegs) {
        // SAFETY: the caller upholds both registers' contracts (above).
        unsafe {
            self.write(Cp15Reg::Dacr, regs.dacr().bits());
            self.write(Cp15Reg::Fcseidr, regs.fcseidr_bits());
        }
    }

    /// The data TCM region register (only on CPUs whose [`TcmStatus`] reports a DTCM).
    ///
    /// # Errors
    /// See [`TcmRegion::from_bits`].
    #[inline]
    fn dtcm_region(&self) -> Result<TcmRegion, TcmRegionError> {
        TcmRegion::from_bits(self.read(Cp15Reg::DtcmRegion))
    }

    /// Writes the data TCM region register.
    ///
    /// # Safety
    /// Enabling or moving the DTCM makes its address range refer to the TCM
    /// instead of whatever was there: the caller ensures nothing in use lives
    /// in the old or new range, the CPU has a DTCM (otherwise the `MCR` is an
    /// undefined instruction), and the D-cache holds no lines for the range.
    #[inline]
    unsafe fn set_dtcm_region(&mut self, value: TcmRegion) {
        // SAFETY: the caller upholds the TCM region contract stated above.
        unsafe { self.write(Cp15Reg::DtcmRegion, value.bits()) }
    }

    /// The instruction TCM region register (only on CPUs whose [`TcmStatus`] reports an ITCM).
    ///
    /// # Errors
    /// See [`TcmRegion::from_bits`].
    #[inline]
    fn itcm_region(&self) -> Result<TcmRegion, TcmRegionError> {
        TcmRegion::from_bits(self.read(Cp15Reg::ItcmRegion))
    }

    /// Writes the instruction TCM region register.
    ///
    /// # Safety
    /// As for [`Cp15Ext::set_dtcm_region`], for the ITCM and the I-cache.
    #[inline]
    unsafe fn set_itcm_region(&mut self, value: TcmRegion) {
        // SAFETY: the caller upholds the TCM region contract stated above.
        unsafe { self.write(Cp15Reg::ItcmRegion, value.bits()) }
    }
}

impl<C: Cp15 + ?Sized> Cp15Ext for C {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::addr::{Domain, PhysAddr};
    use crate::regs::dacr::DomainAccess;
    use crate::regs::mock::{Cp15Event, MockCp15};
    use crate::regs::tcm::TcmSize;
    use crate::regs::CpuKind;

    #[test]
    fn getters_decode_the_register_file() {
        let m = MockCp15::arm926();
        assert_eq!(m.midr().cpu_kind(), CpuKind::Arm926ejs);
        assert_eq!(m.cache_type(), CacheType::QEMU_ARM926);
        assert!(!m.tcm_status().dtcm_present());
        assert_eq!(m.sctlr().bits(), 0x0009_0078);
        assert_eq!(m.fcse_pid(), FcsePid::ZERO);
        let s = MockCp15::sa1110();
        assert_eq!(s.midr().cpu_kind(), CpuKind::Sa1110);
    }

    #[test]
    fn privileged_setters_write_exactly_one_register() {
        let mut m = MockCp15::arm926();
        let pid = FcsePid::new(9).unwrap();
        let dacr = Dacr::only(Domain::new(3).unwrap(), DomainAccess::Client);
        let ttbr = Ttbr::new(PhysAddr::new(0x0010_0000)).unwrap();
        let sctlr = m.sctlr().with_mmu(true).with_high_vectors(true);
        // SAFETY: mock backend; nothing runs under these settings.
        unsafe {
            m.set_dacr(dacr);
            m.set_fcse_pid(pid);
            m.set_ttbr(ttbr);
            m.set_sctlr(sctlr);
        }
        assert_eq!(
            m.events(),
            &[
                Cp15Event::Write(Cp15Reg::Dacr, dacr.bits()),
                Cp15Event::Write(Cp15Reg::Fcseidr, 9 << 25),
                Cp15Event::Write(Cp15Reg::Ttbr, 0x0010_0000),
                Cp15Event::Write(Cp15Reg::Sctlr, 0x0009_2079),
            ]
        );
        assert_eq!(m.dacr(), dacr);
        assert_eq!(m.fcse_pid(), pid);
        assert_eq!(m.ttbr(), ttbr);
        assert!(m.sctlr().mmu_enabled() && m.sctlr().high_vectors());
        assert_eq!(m.overflows(), 0);
    }

    #[test]
    fn fcse_write_is_exactly_pid_shifted_for_every_pid() {
        let mut m = MockCp15::arm926();
        for p in 0..=FcsePid::MAX {
            // SAFETY: mock backend.
            unsafe { m.set_fcse_pid(FcsePid::new(p).unwrap()) };
            assert_eq!(
                m.take_events().as_slice(),
                &[Cp15Event::Write(Cp15Reg::Fcseidr, u32::from(p) << 25)]
            );
            assert_eq!(m.register(Cp15Reg::Fcseidr), u32::from(p) << 25);
        }
    }

    #[test]
    fn fault_registers() {
        let mut m = MockCp15::arm926();
        m.set_register(Cp15Reg::Dfsr, 0x059);
        m.set_register(Cp15Reg::Ifsr, 0x00d);
        m.set_register(Cp15Reg::Far, 0x0A00_1234);
        assert_eq!(m.dfsr().fault().domain, Some(Domain::new(5).unwrap()));
        assert_eq!(m.ifsr().status(), 0xd);
        assert_eq!(m.far().va(FcsePid::new(5).unwrap()).as_u32(), 0x1234);
        m.set_dfsr(Fsr::from_bits(0));
        m.set_ifsr(Fsr::from_bits(0));
        m.set_far(Far::from_bits(0));
        assert_eq!(
            m.events(),
            &[
                Cp15Event::Write(Cp15Reg::Dfsr, 0),
                Cp15Event::Write(Cp15Reg::Ifsr, 0),
                Cp15Event::Write(Cp15Reg::Far, 0),
            ]
        );
        assert_eq!(m.dfsr().bits(), 0);
    }

    #[test]
    fn tcm_regions() {
        let mut m = MockCp15::arm926();
        m.set_register(Cp15Reg::TcmStatus, 0x0001_0001);
        m.set_register(Cp15Reg::DtcmRegion, 0b0110 << 2);
        m.set_register(Cp15Reg::ItcmRegion, 0b1111 << 2);
        assert!(m.tcm_status().dtcm_present() && m.tcm_status().itcm_present());
        let d = m.dtcm_region().unwrap();
        assert_eq!(d.size().bytes(), 32 * 1024);
        assert!(m.itcm_region().is_err());
        let moved = TcmRegion::new(PhysAddr::new(0xfffe_8000), d.size(), true).unwrap();
        // SAFETY: mock backend.
        unsafe { m.set_dtcm_region(moved) };
        assert_eq!(
            m.events(),
            &[Cp15Event::Write(
                Cp15Reg::DtcmRegion,
                0xfffe_8000 | (0b0110 << 2) | 1
            )]
        );
        assert_eq!(m.dtcm_region(), Ok(moved));
        let i = TcmRegion::new(PhysAddr::new(0xfffe_0000), TcmSize::NONE, false).unwrap();
        // SAFETY: mock backend.
        unsafe { m.set_itcm_region(i) };
        assert_eq!(m.register(Cp15Reg::ItcmRegion), 0xfffe_0000);
    }
}
