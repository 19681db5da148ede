//! CP15 state and operations: the [`Cp15`] and [`CacheMaintenance`]
//! implementations of the [`Machine`], and the same effects as safe inherent
//! methods.
//!
//! The register accessors have the names and the typed values of
//! [`Cp15Ext`](mmu_armv5::regs::Cp15Ext) (`sctlr`/`set_sctlr` take and give a
//! [`Sctlr`], `ttbr`/`set_ttbr` a [`Ttbr`], `dfsr`/`ifsr` an
//! [`Fsr`](mmu_armv5::regs::Fsr), `far` a [`Far`](mmu_armv5::regs::Far),
//! `fcse_pid`/`set_fcse_pid` an [`FcsePid`]): one name per operation, so
//! calling either form on a `Machine` gives the same value. The inherent
//! setters are safe because a write to the model cannot break the host
//! program; through `Cp15Ext` they are `unsafe`, as on hardware.

use crate::config::{MemoryKind, MemoryRegion};
use crate::machine::Machine;
use mmu_armv5::maint::CacheMaintenance;
use mmu_armv5::regs::{Cp15, Cp15Op, Cp15Reg, Dacr, Sctlr, Ttbr};
use mmu_armv5::{FcsePid, ModifiedVirtAddr};

/// SCTLR (CP15 c1) bits the model acts on.
pub mod sctlr {
    /// M: MMU enable.
    pub const M: u32 = 1 << 0;
    /// A: alignment fault checking.
    pub const A: u32 = 1 << 1;
    /// C: D-cache enable.
    pub const C: u32 = 1 << 2;
    /// W: write buffer enable (stored, no effect in the model).
    pub const W: u32 = 1 << 3;
    /// S: system protection (AP = 00 gives privileged read).
    pub const S: u32 = 1 << 8;
    /// R: ROM protection (AP = 00 gives read for all).
    pub const R: u32 = 1 << 9;
    /// I: I-cache enable.
    pub const I: u32 = 1 << 12;
    /// V: high exception vectors (stored, no effect in the model).
    pub const V: u32 = 1 << 13;
    /// RR: round-robin replacement (stored; the configured policy applies).
    pub const RR: u32 = 1 << 14;
}

/// The writable CP15 state.
#[derive(Clone, Debug, Default)]
pub(crate) struct Regs {
    pub(crate) sctlr: u32,
    pub(crate) ttbr: u32,
    pub(crate) dacr: Dacr,
    /// Masked to the PID bits.
    pub(crate) fcseidr: u32,
    pub(crate) dfsr: u32,
    pub(crate) ifsr: u32,
    pub(crate) far: u32,
    pub(crate) dtcm_region: u32,
    pub(crate) itcm_region: u32,
    pub(crate) tcm_status: u32,
}

/// ARM926EJ-S TCM region register value for `r` (base, size code, enable).
fn tcm_region_value(r: &MemoryRegion) -> u32 {
    let code = if r.size.is_power_of_two() && (4096..=1 << 20).contains(&r.size) {
        r.size.trailing_zeros() - 9
    } else {
        0
    };
    (r.base.as_u32() & 0xFFFF_F000) | (code << 2) | 1
}

impl Regs {
    /// Describes TCM regions in the TCM status and region registers
    /// (status bit 16: DTCM present, bit 0: ITCM present).
    pub(crate) fn reset_tcm_regions<'a>(
        &mut self,
        regions: impl Iterator<Item = &'a MemoryRegion>,
    ) {
        self.tcm_status = 0;
        for r in regions {
            match r.kind {
                MemoryKind::Dtcm => {
                    self.tcm_status |= 1 << 16;
                    self.dtcm_region = tcm_region_value(r);
                }
                MemoryKind::Itcm => {
                    self.tcm_status |= 1;
                    self.itcm_region = tcm_region_value(r);
                }
                _ => {}
            }
        }
    }
}

impl Machine {
    /// Writes SCTLR (MMU, caches, alignment, S/R, vectors). Turning a cache
    /// off does not clean or invalidate it, as on hardware.
    /// Safe here, unlike [`Cp15Ext::set_sctlr`](mmu_armv5::regs::Cp15Ext::set_sctlr)
    /// (same name, same value, same effect on the model).
    pub fn set_sctlr(&mut self, value: Sctlr) {
        self.counters.sctlr_writes += 1;
        self.regs.sctlr = value.bits();
    }

    /// Writes TTBR. The TLB is not flushed. Safe here, unlike
    /// [`Cp15Ext::set_ttbr`](mmu_armv5::regs::Cp15Ext::set_ttbr) (same name,
    /// same value, same effect on the model).
    pub fn set_ttbr(&mut self, value: Ttbr) {
        self.counters.ttbr_writes += 1;
        self.regs.ttbr = value.bits();
    }

    /// Writes DACR. Takes effect on the next access; no TLB flush needed.
    pub fn set_dacr(&mut self, dacr: Dacr) {
        self.counters.dacr_writes += 1;
        self.regs.dacr = dacr;
    }

    /// Writes FCSEIDR. Only bits \[31:25\] are the PID (bits above the CPU's
    /// PID limit and below bit 25 are ignored).
    pub(crate) fn set_fcseidr(&mut self, value: u32) {
        self.counters.fcseidr_writes += 1;
        self.regs.fcseidr = value & (u32::from(self.config.fcse_pid_max) << 25);
    }

    /// Sets the FCSE PID (writes FCSEIDR with `pid << 25`; PID bits above
    /// the CPU's limit are ignored, as on hardware). Safe here, unlike
    /// [`Cp15Ext::set_fcse_pid`](mmu_armv5::regs::Cp15Ext::set_fcse_pid).
    pub fn set_fcse_pid(&mut self, pid: FcsePid) {
        self.set_fcseidr(pid.fcseidr_value());
    }

    fn tlb_op(&mut self, which: &[usize], mva: Option<u32>) {
        for &t in which {
            if let Some(tlb) = self.tlbs.get_mut(t) {
                match mva {
                    Some(a) => {
                        tlb.invalidate_mva(a);
                    }
                    None => tlb.invalidate_all(),
                }
            }
        }
        match mva {
            Some(_) => self.counters.tlb_invalidate_entry += 1,
            None => self.counters.tlb_invalidate_all += 1,
        }
    }

    /// Invalidates every TLB entry (I and D).
    pub fn invalidate_tlb(&mut self) {
        self.tlb_op(&[0, 1], None);
    }

    /// Invalidates the I-TLB (the unified TLB, if there is one).
    pub fn invalidate_itlb(&mut self) {
        self.tlb_op(&[0], None);
    }

    /// Invalidates the D-TLB (the unified TLB, if there is one).
    pub fn invalidate_dtlb(&mut self) {
        let t = if self.tlbs.len() == 1 { 0 } else { 1 };
        self.tlb_op(&[t], None);
    }

    /// Invalidates the I- and D-TLB entries covering `mva`.
    pub fn invalidate_tlb_entry(&mut self, mva: ModifiedVirtAddr) {
        self.tlb_op(&[0, 1], Some(mva.as_u32()));
    }

    /// Invalidates the I-TLB entries covering `mva`.
    pub fn invalidate_itlb_entry(&mut self, mva: ModifiedVirtAddr) {
        self.tlb_op(&[0], Some(mva.as_u32()));
    }

    /// Invalidates the D-TLB entries covering `mva`.
    pub fn invalidate_dtlb_entry(&mut self, mva: ModifiedVirtAddr) {
        let t = if self.tlbs.len() == 1 { 0 } else { 1 };
        self.tlb_op(&[t], Some(mva.as_u32()));
    }

    /// Invalidates the whole I-cache.
    pub fn invalidate_icache_all(&mut self) {
        self.icache
            .whole_op(false, true, &self.mem, &mut self.counters);
    }

    /// Invalidates the whole D-cache, DISCARDING dirty lines (writes are lost).
    pub fn invalidate_dcache_all(&mut self) {
        self.dcache
            .whole_op(false, true, &self.mem, &mut self.counters);
    }

    /// Cleans the whole D-cache (lines stay valid). Cost: every line visited,
    /// every dirty line written back.
    pub fn clean_dcache_all(&mut self) {
        self.dcache
            .whole_op(true, false, &self.mem, &mut self.counters);
    }

    /// Cleans and invalidates the whole D-cache (no write-buffer drain).
    pub fn clean_invalidate_dcache_all(&mut self) {
        self.dcache
            .whole_op(true, true, &self.mem, &mut self.counters);
    }

    /// Invalidates the I-cache line holding `mva`.
    pub fn invalidate_icache_mva(&mut self, mva: ModifiedVirtAddr) {
        self.icache
            .line_op(mva.as_u32(), false, true, &self.mem, &mut self.counters);
    }

    /// Cleans the D-cache line holding `mva`.
    pub fn clean_dcache_mva(&mut self, mva: ModifiedVirtAddr) {
        self.dcache
            .line_op(mva.as_u32(), true, false, &self.mem, &mut self.counters);
    }

    /// Cleans and invalidates the D-cache line holding `mva`.
    pub fn clean_invalidate_dcache_mva(&mut self, mva: ModifiedVirtAddr) {
        self.dcache
            .line_op(mva.as_u32(), true, true, &self.mem, &mut self.counters);
    }

    /// Invalidates the D-cache line holding `mva`, DISCARDING it if dirty.
    pub fn invalidate_dcache_mva(&mut self, mva: ModifiedVirtAddr) {
        self.dcache
            .line_op(mva.as_u32(), false, true, &self.mem, &mut self.counters);
    }

    /// Drains the write buffer (counted; buffered data is not modelled).
    pub fn drain_write_buffer(&mut self) {
        self.counters.write_buffer_drains += 1;
    }

    /// XScale "allocate line": claims a D-cache line for `mva` without a
    /// line fill (contents zero, clean), evicting a victim. Translated as a
    /// privileged write; a fault or an address outside RAM makes it a no-op.
    pub fn allocate_dcache_line(&mut self, mva: ModifiedVirtAddr) {
        self.counters.cache_line_ops += 1;
        let mva = mva.as_u32() & !(self.dcache.line_size() - 1);
        if self.dcache.find(mva).is_some() {
            return;
        }
        let Ok(t) = self.probe(
            mmu_armv5::VirtAddr::new(mva),
            crate::AccessKind::Write,
            crate::Privilege::Privileged,
            4,
        ) else {
            return;
        };
        let pa = t.pa.as_u32();
        if self.mem.region(pa).map(|r| r.kind) == Some(MemoryKind::Ram) {
            self.dcache
                .allocate(mva, pa, false, &self.mem, &mut self.counters);
        }
    }

    /// ARM926EJ-S test-and-clean (`invalidate == false`) or
    /// test-clean-and-invalidate: cleans (and invalidates) one dirty line
    /// and returns whether the D-cache is now clean. Test-clean-and-invalidate
    /// invalidates the whole D-cache once no dirty line remains.
    pub fn test_clean(&mut self, invalidate: bool) -> bool {
        self.counters.test_clean_ops += 1;
        self.dcache
            .clean_one_dirty(invalidate, &self.mem, &mut self.counters);
        let clean = self.dcache.dirty_lines() == 0;
        if clean && invalidate {
            self.dcache
                .whole_op(false, true, &self.mem, &mut self.counters);
        }
        clean
    }
}

impl Cp15 for Machine {
    fn read(&self, reg: Cp15Reg) -> u32 {
        let r = &self.regs;
        match reg {
            Cp15Reg::Midr => self.config.midr,
            Cp15Reg::CacheType => self.config.cache_type,
            Cp15Reg::TcmStatus => r.tcm_status,
            Cp15Reg::Sctlr => r.sctlr,
            Cp15Reg::Ttbr => r.ttbr,
            Cp15Reg::Dacr => r.dacr.bits(),
            Cp15Reg::Dfsr => r.dfsr,
            Cp15Reg::Ifsr => r.ifsr,
            Cp15Reg::Far => r.far,
            Cp15Reg::DtcmRegion => r.dtcm_region,
            Cp15Reg::ItcmRegion => r.itcm_region,
            Cp15Reg::Fcseidr => r.fcseidr,
        }
    }

    unsafe fn write(&mut self, reg: Cp15Reg, value: u32) {
        match reg {
            Cp15Reg::Midr | Cp15Reg::CacheType | Cp15Reg::TcmStatus => {}
            Cp15Reg::Sctlr => self.set_sctlr(Sctlr::from_bits(value)),
            Cp15Reg::Ttbr => self.set_ttbr(Ttbr::from_bits(value)),
            Cp15Reg::Dacr => self.set_dacr(Dacr::from_bits(value)),
            Cp15Reg::Dfsr => self.regs.dfsr = value,
            Cp15Reg::Ifsr => self.regs.ifsr = value,
            Cp15Reg::Far => self.regs.far = value,
            Cp15Reg::DtcmRegion => self.regs.dtcm_region = value,
            Cp15Reg::ItcmRegion => self.regs.itcm_region = value,
            Cp15Reg::Fcseidr => self.set_fcseidr(value),
        }
    }

    unsafe fn op(&mut self, op: Cp15Op, value: u32) {
        let mva = ModifiedVirtAddr::new(value);
        match op {
            Cp15Op::InvalidateIdCache => {
                self.invalidate_icache_all();
                self.invalidate_dcache_all();
            }
            Cp15Op::InvalidateICache => self.invalidate_icache_all(),
            Cp15Op::InvalidateICacheLine => self.invalidate_icache_mva(mva),
            Cp15Op::InvalidateDCache => self.invalidate_dcache_all(),
            Cp15Op::InvalidateDCacheLine => self.invalidate_dcache_mva(mva),
            Cp15Op::CleanDCacheLine => self.clean_dcache_mva(mva),
            Cp15Op::CleanInvalidateDCacheLine => self.clean_invalidate_dcache_mva(mva),
            Cp15Op::DrainWriteBuffer => Machine::drain_write_buffer(self),
            Cp15Op::AllocateDCacheLine => self.allocate_dcache_line(mva),
            Cp15Op::InvalidateTlb => Machine::invalidate_tlb(self),
            Cp15Op::InvalidateTlbEntry => Machine::invalidate_tlb_entry(self, mva),
            Cp15Op::InvalidateITlb => self.invalidate_itlb(),
            Cp15Op::InvalidateITlbEntry => self.invalidate_itlb_entry(mva),
            Cp15Op::InvalidateDTlb => self.invalidate_dtlb(),
            Cp15Op::InvalidateDTlbEntry => self.invalidate_dtlb_entry(mva),
        }
    }

    fn test_clean_invalidate_dcache(&mut self) -> bool {
        self.test_clean(true)
    }

    fn test_clean_dcache(&mut self) -> bool {
        self.test_clean(false)
    }
}

// SAFETY: the model's walker reads only the model's memory, and each
// method performs the named operation on the model's caches and TLB.
unsafe impl mmu_armv5::maint::TrustedMaintenance for Machine {}

impl CacheMaintenance for Machine {
    /// 32 bytes, the line length of every preset. The model's own line length
    /// may differ; [`CacheMaintenance::clean_dcache_range`] is overridden to
    /// step by the configured D-cache line.
    const DCACHE_LINE: u32 = 32;

    fn clean_invalidate_dcache(&mut self) {
        self.clean_invalidate_dcache_all();
        Machine::drain_write_buffer(self);
    }

    fn invalidate_icache(&mut self) {
        self.invalidate_icache_all();
    }

    fn clean_dcache_line(&mut self, mva: ModifiedVirtAddr) {
        self.clean_dcache_mva(mva);
    }

    fn clean_invalidate_dcache_line(&mut self, mva: ModifiedVirtAddr) {
        self.clean_invalidate_dcache_mva(mva);
    }

    unsafe fn invalidate_dcache_line(&mut self, mva: ModifiedVirtAddr) {
        self.invalidate_dcache_mva(mva);
    }

    fn invalidate_icache_line(&mut self, mva: ModifiedVirtAddr) {
        self.invalidate_icache_mva(mva);
    }

    fn drain_write_buffer(&mut self) {
        Machine::drain_write_buffer(self);
    }

    fn invalidate_tlb(&mut self) {
        Machine::invalidate_tlb(self);
    }

    fn invalidate_tlb_entry(&mut self, mva: ModifiedVirtAddr) {
        Machine::invalidate_tlb_entry(self, mva);
    }

    fn clean_dcache_range(&mut self, mva: ModifiedVirtAddr, len: u32) {
        let line = self.dcache.line_size();
        let start = mva.as_u32() & !(line - 1);
        let end = u64::from(mva.as_u32()) + u64::from(len);
        let mut a = u64::from(start);
        while a < end {
            self.clean_dcache_mva(ModifiedVirtAddr::new(a as u32));
            a += u64::from(line);
        }
        Machine::drain_write_buffer(self);
    }
}
