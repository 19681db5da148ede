//! The machine: memory, TLBs, caches and CP15 state, and memory accesses as
//! the CPU makes them.

use crate::cache::Cache;
use crate::config::{Config, MemoryKind, MemoryRegion, TlbLayout};
use crate::counters::Counters;
use crate::cp15::{sctlr, Regs};
use crate::error::{ConfigError, MemError};
use crate::frames::FramePool;
use crate::memory::{extract, merge, PhysMemory, Width};
use crate::protection::{self, AccessKind, Privilege};
use crate::tlb::Tlb;
use crate::walk::{walk, TlbEntry};
use mmu_armv5::regs::{Dacr, Far, Fsr, Sctlr, Ttbr};
use mmu_armv5::size::PageSizeKind;
use mmu_armv5::{
    Domain, Fault, FaultKind, FaultLevel, FcsePid, ModifiedVirtAddr, PhysAddr, VirtAddr,
};

/// Instruction or data side.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Side {
    Instruction,
    Data,
}

/// Where an access goes after translation and checks.
#[derive(Clone, Copy, Debug)]
struct Resolved {
    mva: u32,
    pa: u32,
    cacheable: bool,
    bufferable: bool,
    level: FaultLevel,
    domain: Domain,
}

/// A successful side-effect-free translation (see [`Machine::probe`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Probe {
    /// The modified virtual address.
    pub mva: ModifiedVirtAddr,
    /// The physical address.
    pub pa: PhysAddr,
    /// The mapping the walk found (size, domain, APs, C/B).
    pub mapping: TlbEntry,
}

/// The modelled CPU memory system.
///
/// Implements [`mmu_armv5::regs::Cp15`],
/// [`mmu_armv5::maint::CacheMaintenance`] and
/// [`mmu_armv5::table::TableAlloc`], as does `&mut Machine`, so code written
/// against those traits runs on it unchanged; the inherent methods give the
/// same effects without `unsafe` (nothing the model does can harm the host).
#[derive(Debug)]
pub struct Machine {
    pub(crate) config: Config,
    pub(crate) mem: PhysMemory,
    /// `[I, D]` for split TLBs, `[unified]` otherwise.
    pub(crate) tlbs: Vec<Tlb>,
    pub(crate) icache: Cache,
    pub(crate) dcache: Cache,
    pub(crate) regs: Regs,
    pub(crate) counters: Counters,
    pub(crate) pool: FramePool,
}

impl Machine {
    /// Builds a machine: MMU and caches off, every register zero but the
    /// identification registers, caches and TLBs empty.
    pub fn new(config: Config) -> Result<Machine, ConfigError> {
        config.validate()?;
        let mut mem = PhysMemory::default();
        for r in &config.regions {
            mem.add(*r)?;
        }
        let seed = config.seed;
        let tlbs = match config.tlb {
            TlbLayout::Split { itlb, dtlb } => {
                vec![Tlb::new(itlb, seed ^ 0x1111), Tlb::new(dtlb, seed ^ 0x2222)]
            }
            TlbLayout::Unified(t) => vec![Tlb::new(t, seed ^ 0x3333)],
        };
        let mut m = Machine {
            icache: Cache::new(config.icache, seed ^ 0x4444),
            dcache: Cache::new(config.dcache, seed ^ 0x5555),
            config,
            mem,
            tlbs,
            regs: Regs::default(),
            counters: Counters::default(),
            pool: FramePool::default(),
        };
        m.regs.reset_tcm_regions(m.mem.regions());
        Ok(m)
    }

    /// The configuration the machine was built from (regions added later not included).
    #[must_use]
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Adds a physical region.
    pub fn add_region(&mut self, region: MemoryRegion) -> Result<(), ConfigError> {
        self.mem.add(region)?;
        self.regs.reset_tcm_regions(self.mem.regions());
        Ok(())
    }

    /// Every region, in the order added.
    pub fn regions(&self) -> impl Iterator<Item = MemoryRegion> + '_ {
        self.mem.regions().copied()
    }

    /// The counters so far.
    #[must_use]
    pub fn counters(&self) -> &Counters {
        &self.counters
    }

    /// Reads physical memory, bypassing caches and TLBs (what DMA or a
    /// debugger sees). `pa` must be aligned to `width`.
    pub fn phys_read(&self, pa: PhysAddr, width: Width) -> Result<u32, MemError> {
        self.mem.read(pa.as_u32(), width)
    }

    /// Writes physical memory, bypassing caches and TLBs (what DMA does; a
    /// cached copy of the line is NOT updated). `pa` must be aligned to `width`.
    pub fn phys_write(&mut self, pa: PhysAddr, width: Width, value: u32) -> Result<(), MemError> {
        self.mem.write(pa.as_u32(), width, value)
    }

    /// The MVA of `va` under the current FCSE PID.
    #[inline]
    #[must_use]
    pub fn mva(&self, va: VirtAddr) -> ModifiedVirtAddr {
        va.to_mva(self.fcse_pid())
    }

    /// The current FCSE PID (as [`Cp15Ext::fcse_pid`](mmu_armv5::regs::Cp15Ext::fcse_pid)).
    #[inline]
    #[must_use]
    pub fn fcse_pid(&self) -> FcsePid {
        // FCSEIDR is stored masked to the PID bits, so this cannot fail.
        FcsePid::new((self.regs.fcseidr >> 25) as u8).unwrap_or(FcsePid::ZERO)
    }

    #[inline]
    fn mva_of(&self, va: u32) -> u32 {
        if va < 1 << 25 {
            va | self.regs.fcseidr
        } else {
            va
        }
    }

    /// Translates `va` for an access of `kind` by `privilege` and `size`
    /// bytes with the model's own walk and the current CP15 state, without
    /// touching TLBs, caches, counters or fault registers.
    ///
    /// With the MMU off, the result is the flat mapping `pa = mva`.
    pub fn probe(
        &self,
        va: VirtAddr,
        kind: AccessKind,
        privilege: Privilege,
        size: u32,
    ) -> Result<Probe, Fault> {
        let va = va.as_u32();
        let mva = self.mva_of(va);
        if kind != AccessKind::Execute
            && self.regs.sctlr & sctlr::A != 0
            && size.is_power_of_two()
            && va & (size - 1) != 0
        {
            return Err(Fault::without_domain(FaultKind::Alignment));
        }
        if self.regs.sctlr & sctlr::M == 0 {
            return Ok(Probe {
                mva: ModifiedVirtAddr::new(mva),
                pa: PhysAddr::new(mva),
                mapping: flat(mva),
            });
        }
        let m = walk(&self.mem, self.regs.ttbr, mva).result?;
        self.check(&m, mva, privilege, kind)?;
        Ok(Probe {
            mva: ModifiedVirtAddr::new(mva),
            pa: PhysAddr::new(m.pa(mva)),
            mapping: m,
        })
    }

    #[inline]
    fn check(
        &self,
        m: &TlbEntry,
        mva: u32,
        privilege: Privilege,
        kind: AccessKind,
    ) -> Result<(), Fault> {
        protection::check(
            m,
            mva,
            self.regs.dacr,
            self.regs.sctlr & sctlr::S != 0,
            self.regs.sctlr & sctlr::R != 0,
            privilege,
            kind,
        )
    }

    /// Records a fault: data aborts set DFSR and FAR (the MVA, as hardware
    /// does), prefetch aborts set IFSR.
    fn abort(&mut self, side: Side, fault: Fault, mva: u32) -> Fault {
        self.counters.faults[fault.kind.status() as usize] += 1;
        match side {
            Side::Data => {
                self.regs.dfsr = fault.fsr();
                self.regs.far = mva;
            }
            Side::Instruction => self.regs.ifsr = fault.fsr(),
        }
        fault
    }

    #[inline]
    fn resolve(
        &mut self,
        va: u32,
        side: Side,
        privilege: Privilege,
        kind: AccessKind,
    ) -> Result<Resolved, Fault> {
        let mva = self.mva_of(va);
        if self.regs.sctlr & sctlr::M == 0 {
            return Ok(Resolved {
                mva,
                pa: mva,
                // With the MMU off the I-cache (if enabled) caches everything;
                // the D-cache caches nothing (ARM926EJ-S behaviour).
                cacheable: side == Side::Instruction,
                bufferable: false,
                level: FaultLevel::Section,
                domain: Domain::from_low_bits(0),
            });
        }
        let t = if self.tlbs.len() == 1 || side == Side::Instruction {
            0
        } else {
            1
        };
        let m = match self.tlbs[t].lookup(mva) {
            Some(m) => {
                match side {
                    Side::Instruction => self.counters.itlb_hits += 1,
                    Side::Data => self.counters.dtlb_hits += 1,
                }
                m
            }
            None => {
                match side {
                    Side::Instruction => self.counters.itlb_misses += 1,
                    Side::Data => self.counters.dtlb_misses += 1,
                }
                let w = walk(&self.mem, self.regs.ttbr, mva);
                self.counters.walk_reads += u64::from(w.reads);
                self.counters.bus_cycles += w.bus_cycles;
                match w.result {
                    Ok(m) => {
                        self.tlbs[t].insert(m);
                        m
                    }
                    Err(f) => return Err(self.abort(side, f, mva)),
                }
            }
        };
        if let Err(f) = self.check(&m, mva, privilege, kind) {
            return Err(self.abort(side, f, mva));
        }
        Ok(Resolved {
            mva,
            pa: m.pa(mva),
            cacheable: m.cacheable,
            bufferable: m.bufferable,
            level: m.size.fault_level(),
            domain: m.domain,
        })
    }

    /// Loads `width` bits from `va` as the CPU does in `privilege` mode.
    ///
    /// Order: alignment check (if SCTLR.A), FCSE relocation, TLB (walk on a
    /// miss), domain and permission check against the current DACR, then the
    /// D-cache (C=1 pages in RAM with SCTLR.C set) or memory. A fault sets
    /// DFSR and FAR (= MVA) and is returned. Without SCTLR.A a misaligned
    /// word load returns the aligned word rotated (ARMv5 `LDR`); misaligned
    /// halfwords read the aligned halfword.
    pub fn load(&mut self, va: VirtAddr, width: Width, privilege: Privilege) -> Result<u32, Fault> {
        self.counters.d_reads += 1;
        let va = va.as_u32();
        let size = width.bytes();
        if va & (size - 1) != 0 && self.regs.sctlr & sctlr::A != 0 {
            let mva = self.mva_of(va);
            return Err(self.abort(Side::Data, Fault::without_domain(FaultKind::Alignment), mva));
        }
        let r = self.resolve(va, Side::Data, privilege, AccessKind::Read)?;
        let word = self.read_data_word(&r)?;
        Ok(match width {
            Width::Word => word.rotate_right(8 * (va & 3)),
            _ => extract(word, r.pa & !(size - 1), width),
        })
    }

    /// Stores the low `width` bits of `value` at `va` as the CPU does.
    ///
    /// A write hit updates the line (and marks it dirty in a write-back page,
    /// C=1 B=1, or also writes memory in a write-through page, C=1 B=0); a
    /// write miss goes to memory without allocating (ARM926EJ-S). Without
    /// SCTLR.A a misaligned store writes the aligned location.
    pub fn store(
        &mut self,
        va: VirtAddr,
        width: Width,
        value: u32,
        privilege: Privilege,
    ) -> Result<(), Fault> {
        self.counters.d_writes += 1;
        let va = va.as_u32();
        let size = width.bytes();
        if va & (size - 1) != 0 && self.regs.sctlr & sctlr::A != 0 {
            let mva = self.mva_of(va);
            return Err(self.abort(Side::Data, Fault::without_domain(FaultKind::Alignment), mva));
        }
        let r = self.resolve(va, Side::Data, privilege, AccessKind::Write)?;
        let pa = r.pa & !(size - 1);
        let mva = r.mva & !(size - 1);
        let Some(region) = self.mem.region(pa).copied() else {
            return Err(self.external_abort(&r));
        };
        let latency = u64::from(region.latency);
        if self.dcache_on(&r, region.kind) {
            if let Some(i) = self.dcache.lookup(mva) {
                self.counters.dcache_write_hits += 1;
                let word = merge(self.dcache.word(i, mva), pa, width, value);
                self.dcache.set_word(i, mva, word, r.bufferable);
                if !r.bufferable {
                    self.counters.write_throughs += 1;
                    self.counters.bus_cycles += latency;
                    let _ = self.mem.write(pa, width, value);
                }
                return Ok(());
            }
            self.counters.dcache_write_misses += 1;
        }
        self.count_uncached(region.kind, latency, true);
        // The region was found above, and `pa` is aligned to `width`.
        let _ = self.mem.write(pa, width, value);
        Ok(())
    }

    /// Fetches the instruction word at `va` (aligned down to 4) as the CPU
    /// does: I-TLB (or unified TLB), read permission, I-cache (C=1 pages in
    /// RAM with SCTLR.I set). A fault sets IFSR (prefetch abort) and is returned.
    pub fn fetch(&mut self, va: VirtAddr, privilege: Privilege) -> Result<u32, Fault> {
        self.counters.i_fetches += 1;
        let va = va.as_u32() & !3;
        let r = self.resolve(va, Side::Instruction, privilege, AccessKind::Execute)?;
        let pa = r.pa;
        let Some(region) = self.mem.region(pa).copied() else {
            let f = Fault::new(FaultKind::ExternalAbort(r.level), r.domain);
            return Err(self.abort(Side::Instruction, f, r.mva));
        };
        let latency = u64::from(region.latency);
        if region.kind == MemoryKind::Ram && r.cacheable && self.regs.sctlr & sctlr::I != 0 {
            if let Some(i) = self.icache.lookup(r.mva) {
                self.counters.icache_hits += 1;
                return Ok(self.icache.word(i, r.mva));
            }
            self.counters.icache_misses += 1;
            self.counters.icache_line_fills += 1;
            self.counters.bus_cycles += latency;
            let line = self.icache.line_size();
            let i =
                self.icache
                    .allocate(r.mva, pa & !(line - 1), true, &self.mem, &mut self.counters);
            return Ok(self.icache.word(i, r.mva));
        }
        self.count_uncached(region.kind, latency, false);
        Ok(self.mem.read_word(pa).unwrap_or(0))
    }

    #[inline]
    fn dcache_on(&self, r: &Resolved, kind: MemoryKind) -> bool {
        kind == MemoryKind::Ram && r.cacheable && self.regs.sctlr & sctlr::C != 0
    }

    #[inline]
    fn count_uncached(&mut self, kind: MemoryKind, latency: u64, write: bool) {
        if write {
            self.counters.uncached_writes += 1;
        } else {
            self.counters.uncached_reads += 1;
        }
        self.counters.bus_cycles += latency;
        if matches!(kind, MemoryKind::Itcm | MemoryKind::Dtcm) {
            self.counters.tcm_accesses += 1;
        }
    }

    fn external_abort(&mut self, r: &Resolved) -> Fault {
        let f = Fault::new(FaultKind::ExternalAbort(r.level), r.domain);
        self.abort(Side::Data, f, r.mva)
    }

    #[inline]
    fn read_data_word(&mut self, r: &Resolved) -> Result<u32, Fault> {
        let pa = r.pa & !3;
        let mva = r.mva & !3;
        let Some(region) = self.mem.region(pa).copied() else {
            return Err(self.external_abort(r));
        };
        let latency = u64::from(region.latency);
        if self.dcache_on(r, region.kind) {
            if let Some(i) = self.dcache.lookup(mva) {
                self.counters.dcache_read_hits += 1;
                return Ok(self.dcache.word(i, mva));
            }
            self.counters.dcache_read_misses += 1;
            self.counters.dcache_line_fills += 1;
            self.counters.bus_cycles += latency;
            let line = self.dcache.line_size();
            let i =
                self.dcache
                    .allocate(mva, pa & !(line - 1), true, &self.mem, &mut self.counters);
            return Ok(self.dcache.word(i, mva));
        }
        self.count_uncached(region.kind, latency, false);
        Ok(self.mem.read_word(pa).unwrap_or(0))
    }

    /// Current SCTLR value (as [`Cp15Ext::sctlr`](mmu_armv5::regs::Cp15Ext::sctlr)).
    #[must_use]
    pub fn sctlr(&self) -> Sctlr {
        Sctlr::from_bits(self.regs.sctlr)
    }

    /// Current TTBR value (as [`Cp15Ext::ttbr`](mmu_armv5::regs::Cp15Ext::ttbr)).
    #[must_use]
    pub fn ttbr(&self) -> Ttbr {
        Ttbr::from_bits(self.regs.ttbr)
    }

    /// Current DACR value (as [`Cp15Ext::dacr`](mmu_armv5::regs::Cp15Ext::dacr)).
    #[must_use]
    pub fn dacr(&self) -> Dacr {
        self.regs.dacr
    }

    /// Data fault status register (as [`Cp15Ext::dfsr`](mmu_armv5::regs::Cp15Ext::dfsr)).
    #[must_use]
    pub fn dfsr(&self) -> Fsr {
        Fsr::from_bits(self.regs.dfsr)
    }

    /// Instruction fault status register (as [`Cp15Ext::ifsr`](mmu_armv5::regs::Cp15Ext::ifsr)).
    #[must_use]
    pub fn ifsr(&self) -> Fsr {
        Fsr::from_bits(self.regs.ifsr)
    }

    /// Fault address register, the MVA of the last data abort (as
    /// [`Cp15Ext::far`](mmu_armv5::regs::Cp15Ext::far)).
    #[must_use]
    pub fn far(&self) -> Far {
        Far::from_bits(self.regs.far)
    }

    /// Number of dirty D-cache lines.
    #[must_use]
    pub fn dcache_dirty_lines(&self) -> usize {
        self.dcache.dirty_lines()
    }

    /// Number of valid D-cache lines.
    #[must_use]
    pub fn dcache_valid_lines(&self) -> usize {
        self.dcache.valid_lines()
    }

    /// Number of valid I-cache lines.
    #[must_use]
    pub fn icache_valid_lines(&self) -> usize {
        self.icache.valid_lines()
    }

    /// Number of valid TLB entries (I and D together).
    #[must_use]
    pub fn tlb_valid_entries(&self) -> usize {
        self.tlbs.iter().map(Tlb::valid_entries).sum()
    }
}

fn flat(mva: u32) -> TlbEntry {
    TlbEntry {
        mva_base: mva & 0xFFF0_0000,
        size: PageSizeKind::Section,
        pa_base: mva & 0xFFF0_0000,
        aps: 0xff,
        domain: Domain::from_low_bits(0),
        cacheable: false,
        bufferable: false,
    }
}
