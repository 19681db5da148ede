//! The checker proper: CP15 state from markers, the access paths, the
//! violation record and the modelled cycles.

use super::types::{Access, AccessKind, Counts, Cpu, Violation, ViolationKind};
use super::vcache::{VCache, UNKNOWN_PA};
use super::versions::Versions;
use super::vtlb::{Lookup, VTlb};
use super::MAX_VIOLATIONS;
use crate::config::{Replacement, TlbLayout};
use crate::cost::CostModel;
use crate::error::{CacheSide, ConfigError};
use crate::presets::Preset;
use mmu_armv5::marker::{Event, Key};

/// SCTLR bits the checker follows.
const SCTLR_M: u32 = 1 << 0;
const SCTLR_C: u32 = 1 << 2;
const SCTLR_I: u32 = 1 << 12;
const SCTLR_RR: u32 = 1 << 14;

/// FCSE: addresses below 32 MiB are relocated by the PID.
const FCSE_LIMIT: u32 = 32 << 20;
const FCSE_MASK: u32 = 0xFE00_0000;

/// Event counts of the model, for reports and the cost (all modelled).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Instruction fetches.
    pub fetches: u64,
    /// Data loads.
    pub loads: u64,
    /// Data stores.
    pub stores: u64,
    /// Accesses QEMU flagged as device memory.
    pub io: u64,
    /// I-cache line fills.
    pub ifills: u64,
    /// D-cache line fills.
    pub dfills: u64,
    /// D-cache lines written back (eviction or clean).
    pub write_backs: u64,
    /// Uncached reads and fetches (RAM, caches off or uncached range).
    pub uncached_reads: u64,
    /// Uncached writes and store misses (write-buffered).
    pub uncached_writes: u64,
    /// Model-TLB misses (table walks).
    pub tlb_misses: u64,
    /// Markers applied.
    pub markers: u64,
}

/// Replays a guest's accesses and CP15 operations through a version model
/// of the CPU's caches and TLB. See the [module docs](super).
#[derive(Clone, Debug)]
pub struct Checker {
    cpu: Cpu,
    cost: CostModel,
    follow_rr: bool,
    assume_caches_on: bool,
    sctlr: u32,
    ttbr: u32,
    dacr: u32,
    fcse: u32,
    icache: VCache,
    dcache: VCache,
    /// The instruction TLB (`None` when the TLB is unified).
    itlb: Option<VTlb>,
    /// The data (or unified) TLB.
    dtlb: VTlb,
    mem: Versions,
    uncached: Vec<(u32, u32)>,
    uncached_begin: Option<u32>,
    space: u32,
    scenario: u32,
    omit: u32,
    /// A DFSR read not yet paired with a FAR read.
    dfsr: Option<u32>,
    /// A FAR read (value, pc) not yet paired with a DFSR read.
    far: Option<(u32, u32)>,
    violations: Vec<Violation>,
    counts: Counts,
    cycles: u64,
    stats: Stats,
}

/// Which cache an access goes through.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Side {
    I,
    D,
}

impl Checker {
    /// A checker for `cpu` with its preset (see [`Cpu::preset`]), in the
    /// reset state: MMU and caches off, caches and TLBs empty, every word of
    /// RAM at version 0.
    #[must_use]
    pub fn new(cpu: Cpu) -> Checker {
        // The built-in presets are valid (a test checks them).
        Checker::build(cpu, &cpu.preset())
    }

    /// A checker for `cpu` with another geometry or cost model (what-ifs).
    ///
    /// # Errors
    /// The [`ConfigError`] of a cache or TLB geometry the model cannot build.
    pub fn from_preset(cpu: Cpu, preset: &Preset) -> Result<Checker, ConfigError> {
        preset.config.icache.validate(CacheSide::Instruction)?;
        preset.config.dcache.validate(CacheSide::Data)?;
        match preset.config.tlb {
            TlbLayout::Split { itlb, dtlb } => {
                itlb.validate()?;
                dtlb.validate()?;
            }
            TlbLayout::Unified(t) => t.validate()?,
        }
        Ok(Checker::build(cpu, preset))
    }

    fn build(cpu: Cpu, preset: &Preset) -> Checker {
        let (icache, dcache, tlb) = (
            preset.config.icache,
            preset.config.dcache,
            preset.config.tlb,
        );
        // The ARM926EJ-S picks random or round-robin replacement by
        // SCTLR.RR (bit 14) [ARM926 TRM §4.1]; the others are round-robin.
        let follow_rr = cpu == Cpu::Arm926
            && icache.replacement != Replacement::Lru
            && dcache.replacement != Replacement::Lru;
        let (itlb, dtlb) = match tlb {
            TlbLayout::Split { itlb, dtlb } => (Some(VTlb::new(itlb, 1)), VTlb::new(dtlb, 2)),
            TlbLayout::Unified(t) => (None, VTlb::new(t, 2)),
        };
        Checker {
            cpu,
            cost: preset.cost,
            follow_rr,
            assume_caches_on: false,
            sctlr: 0,
            ttbr: 0,
            dacr: 0,
            fcse: 0,
            icache: VCache::new(icache, 3),
            dcache: VCache::new(dcache, 4),
            itlb,
            dtlb,
            mem: Versions::new(),
            uncached: Vec::new(),
            uncached_begin: None,
            space: 0,
            scenario: 0,
            omit: 0,
            dfsr: None,
            far: None,
            violations: Vec::new(),
            counts: Counts::default(),
            cycles: 0,
            stats: Stats::default(),
        }
    }

    /// A what-if: with `on`, the I- and D-cache cache whenever the MMU is
    /// on, whatever SCTLR.C and .I say. For a guest that runs with its
    /// caches off (coherent, and slow, on hardware): the check then shows
    /// what the same code would do with them on. Off by default.
    pub fn set_assume_caches_on(&mut self, on: bool) {
        self.assume_caches_on = on;
    }

    /// Whether [`Checker::set_assume_caches_on`] is in force.
    #[must_use]
    pub fn assumes_caches_on(&self) -> bool {
        self.assume_caches_on
    }

    /// The modelled CPU.
    #[must_use]
    pub fn cpu(&self) -> Cpu {
        self.cpu
    }

    /// The cost model in use.
    #[must_use]
    pub fn cost_model(&self) -> &CostModel {
        &self.cost
    }

    /// The first [`MAX_VIOLATIONS`] violations, in order.
    #[must_use]
    pub fn violations(&self) -> &[Violation] {
        &self.violations
    }

    /// Violation counts per kind (never capped).
    #[must_use]
    pub fn counts(&self) -> Counts {
        self.counts
    }

    /// Modelled cycles so far (a running total).
    #[must_use]
    pub fn cycles(&self) -> u64 {
        self.cycles
    }

    /// Instructions (fetches) so far (a running total).
    #[must_use]
    pub fn instructions(&self) -> u64 {
        self.stats.fetches
    }

    /// Event counts of the model.
    #[must_use]
    pub fn stats(&self) -> Stats {
        self.stats
    }

    /// The omission the guest announced ([`Event::Omit`]; 0: none).
    #[must_use]
    pub fn omission(&self) -> u32 {
        self.omit
    }

    /// The running address space ([`Event::Space`]).
    #[must_use]
    pub fn space(&self) -> u32 {
        self.space
    }

    /// The running scenario ([`Event::Scenario`]).
    #[must_use]
    pub fn scenario(&self) -> u32 {
        self.scenario
    }

    /// D-cache lines holding a dirty half now.
    #[must_use]
    pub fn dirty_lines(&self) -> usize {
        self.dcache.dirty_lines()
    }

    /// Valid entries of the instruction TLB (0 when unified) and of the data
    /// (or unified) TLB.
    #[must_use]
    pub fn tlb_entries(&self) -> (usize, usize) {
        (
            self.itlb.as_ref().map_or(0, VTlb::valid_entries),
            self.dtlb.valid_entries(),
        )
    }

    /// The VA ranges declared uncached so far (`[begin, end)`).
    #[must_use]
    pub fn uncached_ranges(&self) -> &[(u32, u32)] {
        &self.uncached
    }

    /// Bytes of host memory the version map holds.
    #[must_use]
    pub fn memory_bytes(&self) -> usize {
        self.mem.bytes()
    }

    /// The last SCTLR, TTBR, DACR and FCSEIDR values the markers reported.
    #[must_use]
    pub fn registers(&self) -> [u32; 4] {
        [self.sctlr, self.ttbr, self.dacr, self.fcse]
    }

    #[inline(always)]
    fn mva(&self, va: u32) -> u32 {
        if va < FCSE_LIMIT {
            va.wrapping_add(self.fcse)
        } else {
            va
        }
    }

    #[inline(always)]
    fn in_uncached(&self, va: u32) -> bool {
        self.uncached.iter().any(|&(b, e)| va >= b && va < e)
    }

    #[cold]
    #[inline(never)]
    fn report(
        &mut self,
        kind: ViolationKind,
        pc: u32,
        va: u32,
        mva: u32,
        pa: u32,
        privileged: bool,
    ) {
        self.counts.by_kind[kind.index()] += 1;
        if self.violations.len() < MAX_VIOLATIONS {
            self.violations.push(Violation {
                kind,
                pc,
                va,
                mva,
                pa,
                privileged,
                space: self.space,
                scenario: self.scenario,
            });
        }
    }

    /// One fetch, load or store, in program order with [`Checker::marker`].
    pub fn access(&mut self, a: &Access) {
        self.cycles += self.cost.access;
        match a.kind {
            AccessKind::Fetch => self.stats.fetches += 1,
            AccessKind::Load => self.stats.loads += 1,
            AccessKind::Store => self.stats.stores += 1,
        }
        let mva = self.mva(a.va);
        let mmu = self.sctlr & SCTLR_M != 0;
        if mmu {
            self.translate(a, mva);
        }
        if a.io {
            self.stats.io += 1;
            if a.kind == AccessKind::Store {
                self.cycles += self.cost.uncached_write;
            } else {
                self.cycles += self.cost.uncached_read;
            }
            return;
        }
        let cached = match a.kind {
            AccessKind::Fetch => self.sctlr & SCTLR_I != 0 || (mmu && self.assume_caches_on),
            _ => mmu && (self.sctlr & SCTLR_C != 0 || self.assume_caches_on),
        } && !self.in_uncached(a.va);
        // Words touched: ARMv5 aligns word accesses down (an unaligned LDR
        // reads the aligned word and rotates); 8-byte accesses are two words.
        let n = if a.size > 4 {
            u32::from(a.size).div_ceil(4)
        } else {
            1
        };
        for k in 0..n {
            let off = 4 * k;
            // The model works on words (it masks the low bits); reports
            // keep the address as accessed.
            let pa = a.pa.wrapping_add(off);
            let wmva = mva.wrapping_add(off);
            let wva = a.va.wrapping_add(off);
            match (a.kind, cached) {
                (AccessKind::Fetch, true) => self.cached_read(a, Side::I, wva, wmva, pa),
                (AccessKind::Load, true) => self.cached_read(a, Side::D, wva, wmva, pa),
                (AccessKind::Store, true) => self.cached_store(a, wva, wmva, pa),
                (AccessKind::Store, false) => self.uncached_store(pa),
                (_, false) => self.uncached_read(a, wva, wmva, pa),
            }
        }
    }

    /// `n` instruction fetches, one after the other with nothing between
    /// them: `first`, then `first.size` bytes further each time (each
    /// fetch's `pc` is its `va`). The same as `n` calls of
    /// [`Checker::access`], cheaper: after a fetch, those that follow in
    /// the same cache line skip the TLB (the entry the first one used
    /// translates the whole line with the same offset: a hit that changes
    /// nothing) and the line search (the line the first one hit or
    /// filled); each still checks its own word and counts its own cycles.
    pub fn fetches(&mut self, first: &Access, n: u32) {
        let step = u32::from(first.size.max(1));
        let line_mask = self.icache.line_mask();
        let mut k = 0;
        while k < n {
            let at = |k: u32| {
                let off = k.wrapping_mul(step);
                (first.va.wrapping_add(off), first.pa.wrapping_add(off))
            };
            let (va, pa) = at(k);
            let a = Access {
                pc: va,
                va,
                pa,
                kind: AccessKind::Fetch,
                ..*first
            };
            self.access(&a);
            k += 1;
            if a.io || a.size > 4 {
                continue;
            }
            let line = self.mva(va) & !line_mask;
            let pa_line = pa & !line_mask;
            // `access` asks the uncached ranges once per word: take the
            // shortcut only if the answer is the same for the whole line.
            let line_va = va & !line_mask;
            let inside = |x: u32| x.wrapping_sub(line_va).wrapping_sub(1) < line_mask;
            if self.uncached.iter().any(|&(b, e)| inside(b) || inside(e)) {
                continue;
            }
            let mmu = self.sctlr & SCTLR_M != 0;
            let cached = (self.sctlr & SCTLR_I != 0 || (mmu && self.assume_caches_on))
                && !self.in_uncached(va);
            while k < n {
                let (va, pa) = at(k);
                let mva = self.mva(va);
                if mva & !line_mask != line || pa & !line_mask != pa_line {
                    break;
                }
                let a = Access {
                    pc: va,
                    va,
                    pa,
                    ..a
                };
                if cached {
                    let Some(i) = self.icache.last_holding(mva, pa_line) else {
                        break;
                    };
                    self.cycles += self.cost.access;
                    self.stats.fetches += 1;
                    let newest = self.mem.newest(pa);
                    if self.icache.version(i, mva) != newest {
                        self.icache.set_version(i, mva, newest, false);
                        self.report(ViolationKind::StaleFetch, va, va, mva, pa, a.privileged);
                    }
                } else {
                    self.cycles += self.cost.access;
                    self.stats.fetches += 1;
                    self.uncached_read(&a, va, mva, pa);
                }
                k += 1;
            }
        }
    }

    /// The TLB side of an access with the MMU on.
    #[inline(always)]
    fn translate(&mut self, a: &Access, mva: u32) {
        let tlb = match (a.kind, self.itlb.as_mut()) {
            (AccessKind::Fetch, Some(i)) => i,
            _ => &mut self.dtlb,
        };
        match tlb.access(mva, a.pa, a.kind == AccessKind::Fetch) {
            Lookup::Hit => {}
            Lookup::Stale(_) => {
                self.report(ViolationKind::StaleTlb, a.pc, a.va, mva, a.pa, a.privileged);
            }
            Lookup::Miss => {
                self.stats.tlb_misses += 1;
                self.cycles += self.cost.tlb_miss;
                // The walk reads the first-level descriptor from memory.
                let desc = (self.ttbr & !0x3FFF) | ((mva >> 20) << 2);
                if !self.mem.ram_is_newest(desc) {
                    self.report(
                        ViolationKind::StaleWalk,
                        a.pc,
                        a.va,
                        mva,
                        desc,
                        a.privileged,
                    );
                    let v = self.mem.newest(desc);
                    self.mem.set_ram(desc, v);
                }
            }
        }
    }

    fn stale_kind(a: &Access, otherwise: ViolationKind) -> ViolationKind {
        if a.kind == AccessKind::Fetch {
            ViolationKind::StaleFetch
        } else {
            otherwise
        }
    }

    #[inline]
    fn cache(&mut self, side: Side) -> &mut VCache {
        match side {
            Side::I => &mut self.icache,
            Side::D => &mut self.dcache,
        }
    }

    #[inline]
    fn parts(&mut self, side: Side) -> (&mut VCache, &mut Versions) {
        match side {
            Side::I => (&mut self.icache, &mut self.mem),
            Side::D => (&mut self.dcache, &mut self.mem),
        }
    }

    /// A read (load or fetch) of the word at `pa` through the I- or D-cache.
    #[inline(always)]
    fn cached_read(&mut self, a: &Access, side: Side, va: u32, mva: u32, pa: u32) {
        let pa_line = pa & !self.cache(side).line_mask();
        let mut quiet = false;
        if let Some(i) = self.cache(side).find(mva) {
            let lpa = self.cache(side).line_pa(i);
            if lpa == UNKNOWN_PA {
                self.cache(side).adopt(i, pa_line);
            } else if lpa != pa_line {
                // A homonym: the line belongs to another frame. Report, then
                // put the line back where it belongs and refill quietly.
                let (cache, mem) = self.parts(side);
                let wb = cache.maintain(i, true, true, mem).lines;
                self.stats.write_backs += wb;
                self.cycles += wb * self.cost.write_back;
                self.report(ViolationKind::StaleAlias, a.pc, va, mva, pa, a.privileged);
                quiet = true;
            }
            if !quiet {
                let newest = self.mem.newest(pa);
                let cache = self.cache(side);
                if cache.version(i, mva) != newest {
                    cache.set_version(i, mva, newest, false);
                    let kind = Self::stale_kind(a, ViolationKind::StaleLine);
                    self.report(kind, a.pc, va, mva, pa, a.privileged);
                }
                return;
            }
        }
        // A miss: allocate on read.
        let (cache, mem) = self.parts(side);
        let (i, wb) = cache.allocate(mva, pa_line, true, mem);
        match side {
            Side::I => self.stats.ifills += 1,
            Side::D => self.stats.dfills += 1,
        }
        self.stats.write_backs += wb.lines;
        self.cycles += self.cost.line_fill + wb.lines * self.cost.write_back;
        let newest = self.mem.newest(pa);
        let cache = self.cache(side);
        if cache.version(i, mva) != newest {
            cache.set_version(i, mva, newest, false);
            if !quiet {
                let kind = Self::stale_kind(a, ViolationKind::StaleRam);
                self.report(kind, a.pc, va, mva, pa, a.privileged);
            }
        }
    }

    /// A store of the word at `pa` with the D-cache on: write-back on a hit,
    /// to RAM (write buffer) on a miss (no write allocate).
    #[inline(always)]
    fn cached_store(&mut self, a: &Access, va: u32, mva: u32, pa: u32) {
        let pa_line = pa & !self.dcache.line_mask();
        if let Some(i) = self.dcache.find(mva) {
            let lpa = self.dcache.line_pa(i);
            if lpa == UNKNOWN_PA {
                self.dcache.adopt(i, pa_line);
            }
            if lpa == UNKNOWN_PA || lpa == pa_line {
                let v = self.mem.store(pa);
                self.dcache.set_version(i, mva, v, true);
                return;
            }
            // A homonym: on hardware the store lands in another frame's line.
            let wb = self.dcache.maintain(i, true, true, &mut self.mem).lines;
            self.stats.write_backs += wb;
            self.cycles += wb * self.cost.write_back;
            self.report(ViolationKind::StaleAlias, a.pc, va, mva, pa, a.privileged);
        }
        self.uncached_store(pa);
    }

    #[inline(always)]
    fn uncached_store(&mut self, pa: u32) {
        self.stats.uncached_writes += 1;
        self.cycles += self.cost.uncached_write;
        let v = self.mem.store(pa);
        self.mem.set_ram(pa, v);
    }

    #[inline(always)]
    fn uncached_read(&mut self, a: &Access, va: u32, mva: u32, pa: u32) {
        self.stats.uncached_reads += 1;
        self.cycles += self.cost.uncached_read;
        if !self.mem.ram_is_newest(pa) {
            let kind = Self::stale_kind(a, ViolationKind::StaleRam);
            self.report(kind, a.pc, va, mva, pa, a.privileged);
        }
    }

    /// One decoded marker: `key` with `value`, issued by the instruction at
    /// `pc`, in program order with [`Checker::access`].
    pub fn marker(&mut self, key: Key, value: u32, pc: u32) {
        self.stats.markers += 1;
        match key {
            Key::Event(e) => self.event(e, value, pc),
            Key::Cp15 {
                read,
                crn,
                crm,
                opc2,
            } => self.cp15(read, crn, crm, opc2, value, pc),
        }
    }

    fn event(&mut self, e: Event, value: u32, pc: u32) {
        match e {
            Event::UncachedBegin => self.uncached_begin = Some(value),
            Event::UncachedEnd => {
                if let Some(b) = self.uncached_begin.take() {
                    if b < value && !self.uncached.contains(&(b, value)) {
                        self.uncached.push((b, value));
                    }
                }
            }
            Event::Space => self.space = value,
            Event::Scenario => self.scenario = value,
            Event::Omit => self.omit = value,
            Event::AssertClean => {
                if let Some(i) = self.dcache.first_dirty() {
                    let mva = self.dcache.line_mva(i);
                    let pa = self.dcache.line_pa(i);
                    self.report(ViolationKind::IncompleteClean, pc, mva, mva, pa, true);
                }
            }
        }
    }

    fn whole_dclean(&mut self, invalidate: bool) {
        let n = self.dcache.whole(true, invalidate, &mut self.mem);
        self.stats.write_backs += n;
        // A test-and-clean loop: one operation per dirty line, plus the last.
        self.cycles += (n + 1) * self.cost.line_op + n * self.cost.write_back;
    }

    fn dline(&mut self, line: Option<usize>, clean: bool, invalidate: bool) {
        self.cycles += self.cost.line_op;
        if let Some(i) = line {
            let n = self
                .dcache
                .maintain(i, clean, invalidate, &mut self.mem)
                .lines;
            self.stats.write_backs += n;
            self.cycles += n * self.cost.write_back;
        }
    }

    fn cp15(&mut self, read: bool, crn: u8, crm: u8, opc2: u8, value: u32, pc: u32) {
        match (crn, crm, opc2, read) {
            (1, 0, 0, _) => {
                self.sctlr = value;
                if self.follow_rr {
                    let p = if value & SCTLR_RR != 0 {
                        Replacement::RoundRobin
                    } else {
                        Replacement::Random
                    };
                    self.icache.set_policy(p);
                    self.dcache.set_policy(p);
                }
            }
            (2, 0, 0, _) => self.ttbr = value,
            (3, 0, 0, _) => self.dacr = value,
            (13, 0, 0, _) => self.fcse = value & FCSE_MASK,
            // DFSR and FAR reads, paired in either order: after a
            // translation fault, check the faulting address.
            (5, 0, 0, true) => {
                self.cycles += self.cost.fault;
                match self.far.take() {
                    Some((far, far_pc)) => self.fault_address(value, far, far_pc),
                    None => self.dfsr = Some(value),
                }
            }
            (5, 0, 1, true) => self.cycles += self.cost.fault,
            (6, 0, 0, true) => match self.dfsr.take() {
                Some(dfsr) => self.fault_address(dfsr, value, pc),
                None => self.far = Some((value, pc)),
            },
            (7, ..) => self.cache_op(read, crm, opc2, value),
            (8, ..) if !read => self.tlb_op(crm, opc2, value),
            _ => {}
        }
        if !read && matches!(crn, 1 | 2 | 3 | 13) {
            self.cycles += self.cost.cp15_write;
        }
    }

    /// A DFSR/FAR pair: after a translation fault, the real CPU would not
    /// have faulted if its TLB still held the page.
    fn fault_address(&mut self, dfsr: u32, far: u32, pc: u32) {
        // Translation faults: section 0x5, page 0x7.
        if !matches!(dfsr & 0xF, 0x5 | 0x7) {
            return;
        }
        // QEMU reports the VA (a deviation: the TRMs say the MVA); a FAR
        // at or above 32 MiB is the same either way.
        let mva = self.mva(far);
        if let Some(pa) = self.dtlb.translate(mva) {
            self.report(ViolationKind::StaleTlb, pc, far, mva, pa, true);
            self.dtlb.invalidate_mva(mva);
        }
    }

    fn cache_op(&mut self, read: bool, crm: u8, opc2: u8, value: u32) {
        match (read, crm, opc2) {
            (false, 7, 0) => {
                self.cycles += 2 * self.cost.whole_cache_op;
                self.icache.whole(false, true, &mut self.mem);
                self.dcache.whole(false, true, &mut self.mem);
            }
            (false, 5, 0) => {
                self.cycles += self.cost.whole_cache_op;
                self.icache.whole(false, true, &mut self.mem);
            }
            (false, 5, 1) => {
                self.cycles += self.cost.line_op;
                if let Some(i) = self.icache.find(value) {
                    self.icache.maintain(i, false, true, &mut self.mem);
                }
            }
            (false, 5, 2) => {
                self.cycles += self.cost.line_op;
                let i = self.icache.line_of_set_way(value);
                if i < self.icache.lines() {
                    self.icache.maintain(i, false, true, &mut self.mem);
                }
            }
            (false, 6, 0) => {
                self.cycles += self.cost.whole_cache_op;
                self.dcache.whole(false, true, &mut self.mem);
            }
            (false, 6 | 10 | 14, 1) => {
                let line = self.dcache.find(value);
                self.dline(line, crm != 6, crm != 10);
            }
            (false, 6 | 10 | 14, 2) => {
                let i = self.dcache.line_of_set_way(value);
                let line = (i < self.dcache.lines()).then_some(i);
                self.dline(line, crm != 6, crm != 10);
            }
            (false, 10, 4) => self.cycles += self.cost.drain,
            // Test and clean (+ invalidate), reported once for the whole loop.
            (true, 10, 3) => self.whole_dclean(false),
            (true, 14, 3) => self.whole_dclean(true),
            // XScale line allocate: a line without a fill, data undefined.
            (false, 2, 5) => {
                self.cycles += self.cost.line_op;
                if self.dcache.find(value).is_none() {
                    let pa = self
                        .dtlb
                        .translate(value)
                        .map_or(UNKNOWN_PA, |p| p & !self.dcache.line_mask());
                    let (_, wb) = self.dcache.allocate(value, pa, false, &mut self.mem);
                    self.stats.write_backs += wb.lines;
                    self.cycles += wb.lines * self.cost.write_back;
                }
            }
            _ => {}
        }
    }

    fn tlb_op(&mut self, crm: u8, opc2: u8, value: u32) {
        self.cycles += self.cost.tlb_invalidate;
        let all = opc2 == 0;
        let (i, d) = match crm {
            5 => (true, false),
            6 => (false, true),
            7 => (true, true),
            _ => return,
        };
        let apply = |t: &mut VTlb| {
            if all {
                t.invalidate_all();
            } else if opc2 == 1 {
                t.invalidate_mva(value);
            }
        };
        match self.itlb.as_mut() {
            Some(itlb) => {
                if i {
                    apply(itlb);
                }
                if d {
                    apply(&mut self.dtlb);
                }
            }
            // Unified: the I and D forms act on the one TLB.
            None => apply(&mut self.dtlb),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;

    fn cp15(crn: u8, crm: u8, opc2: u8) -> Key {
        Key::Cp15 {
            read: false,
            crn,
            crm,
            opc2,
        }
    }

    /// `fetches` must leave the checker exactly as one `access` per
    /// instruction does, whatever happened before: random code runs
    /// (crossing lines and pages, aliases, FCSE, I-cache on and off,
    /// uncached ranges cutting lines) between random stores, cache and
    /// TLB operations.
    #[test]
    fn a_run_of_fetches_is_the_same_as_one_access_each() {
        for cpu in Cpu::ALL {
            let mut rng = Rng::new(7);
            let mut one = Checker::new(cpu);
            let mut run = Checker::new(cpu);
            // Under Miri (which looks for undefined behaviour, not wrong
            // answers) a few hundred steps take every path of the run.
            let steps = if cfg!(miri) { 100 } else { 20_000u32 };
            for step in 0..steps {
                let r = rng.below(100);
                // Code in 16 KiB at two virtual aliases, with or without FCSE.
                let off = rng.below(0x4000) & !3;
                let va = match rng.below(3) {
                    0 => 0xC010_0000 + off,
                    1 => 0x0001_0000 + off,
                    _ => 0x0002_0000 + off,
                };
                let pa = 0x0010_0000 + off;
                let privileged = va >= 0xC000_0000;
                if r < 40 {
                    let n = 1 + rng.below(12);
                    let size = if rng.below(8) == 0 { 2 } else { 4 };
                    let a = Access {
                        pc: va,
                        va,
                        pa,
                        size,
                        kind: AccessKind::Fetch,
                        io: false,
                        privileged,
                    };
                    run.fetches(&a, n);
                    for k in 0..n {
                        let o = k * u32::from(size);
                        one.access(&Access {
                            pc: va + o,
                            va: va + o,
                            pa: pa + o,
                            ..a
                        });
                    }
                } else if r < 80 {
                    let a = Access {
                        pc: 0xC000_8000,
                        va,
                        pa,
                        size: 4,
                        kind: if r < 60 {
                            AccessKind::Store
                        } else {
                            AccessKind::Load
                        },
                        io: false,
                        privileged,
                    };
                    one.access(&a);
                    run.access(&a);
                } else {
                    let (key, value) = match r {
                        80..=83 => (
                            cp15(1, 0, 0),
                            [0x1005, 0x0005, 0x1001, 0x0][rng.below(4) as usize],
                        ),
                        84..=85 => (cp15(13, 0, 0), rng.below(4) << 25),
                        86..=87 => (cp15(7, 5, 0), 0),
                        88..=89 => (cp15(7, 10, 1), va),
                        90..=91 => (cp15(8, 7, 0), 0),
                        92 => (cp15(7, 5, 1), va),
                        93 => (Key::Event(Event::UncachedBegin), va + rng.below(64)),
                        94 => (Key::Event(Event::UncachedEnd), va + 64 + rng.below(64)),
                        95..=96 => (cp15(2, 0, 0), 0x4000 * (1 + rng.below(2))),
                        _ => (cp15(7, 14, 2), rng.next_u64() as u32),
                    };
                    one.marker(key, value, 0xC000_8000);
                    run.marker(key, value, 0xC000_8000);
                }
                assert_eq!(one.stats(), run.stats(), "{cpu:?} step {step}");
                assert_eq!(one.cycles(), run.cycles(), "{cpu:?} step {step}");
                assert_eq!(one.counts(), run.counts(), "{cpu:?} step {step}");
            }
            assert_eq!(one.violations(), run.violations());
            // The stream is rich enough to make stale fetches (natively).
            assert!(
                cfg!(miri) || one.counts().of(ViolationKind::StaleFetch) > 0,
                "{cpu:?}: {}",
                one.counts()
            );
        }
    }
}
