//! The model benchmarks: the real `fass` strategies driven on the
//! `armv5-sim` machine by a synthetic, documented access stream.
//!
//! Every figure this module produces is **modelled**: the machine counts
//! events (accesses, TLB walks, line fills, write-backs, maintenance
//! operations, CP15 writes, aborts) and a preset's
//! [`CostModel`](armv5_sim::cost::CostModel) turns them into cycles.
//! Nothing here is a measurement of a CPU.
//!
//! # The access stream
//!
//! Memory (physical): RAM 0..16 MiB. The kernel is one 1 MiB write-back
//! section at VA `0xC000_0000` → PA 0, domain 0, privileged read/write, in
//! the boot first-level table (the CPD under FASS; copied into every
//! per-space table by the classic strategies). Space `s` owns six 4 KiB
//! frames at PA `0x0010_0000 + s * 0x6000`: one text page, four data pages,
//! one stack page, mapped write-back, read/write, with 4 KiB pages:
//!
//! | VA | what | first-level slot |
//! |---|---|---|
//! | `0x0000_8000` | text | 0 |
//! | `0x0010_0000`..`0x0010_4000` | private data (16 KiB) | 1 |
//! | `0x01FF_F000` | stack | 31 |
//!
//! One *turn* (the scheduler passes the CPU from `prev` to `next`) runs the
//! workload's [`KernelPath`] (its length is the real kernel's, from the
//! QEMU instruction counts: [`crate::path`]):
//!
//! 1. kernel entry: the first half of the path's instructions, privileged
//!    sequential fetches from `0xC001_0000`; then half of its data
//!    accesses as word stores: the first 16 save `prev`'s registers at
//!    `0xC008_0000 + prev * 64`, the rest go to the kernel stack
//!    (`0xC009_0000`, [`KERNEL_STACK_BYTES`], sequential words, wrapping);
//! 2. the strategy's `switch_to(next)` (its CP15 writes, cache and TLB
//!    maintenance act on the model; the Rust code itself is not fetched);
//! 3. kernel exit: the rest of the instructions, continuing step 1's code;
//!    the rest of the data accesses as word loads: the kernel stack words
//!    in reverse order (pops), then up to 16 loads restoring `next`'s
//!    registers;
//! 4. the process's pass (user mode): [`USER_INSNS`] sequential fetches
//!    from its text page; for every 32-byte line of the first `touch` bytes
//!    of its data, one word load and one word store (read-modify-write of
//!    word 0 of the line; no write-allocate, so the load brings the line in
//!    and the store dirties it); 4 word stores and 4 word loads at
//!    `0x01FF_FF00` (the system-call stub's stack frame).
//!
//! An abort in step 4 runs the fault path: the path's fault instructions,
//! privileged fetches from `0xC002_0000`, and its fault data accesses on the
//! kernel stack (half stores, then the same words loaded), then the
//! strategy's `resolve` (CPD fill or collision under FASS), then the access
//! is retried. Any other abort is an error.
//!
//! Patterns: a *ring* runs spaces `0, 1, …, N-1, 0, …` (lmbench `lat_ctx`);
//! *IPC* runs a server (space 0) and `N` clients as `c1, S, c2, S, …, cN, S`
//! (one round trip = a client turn plus a server turn, both doing the pass).
//! Every run first does [`Workload::warmup_rounds`] rounds, then measures
//! [`Workload::rounds`] rounds.
//!
//! The *baseline* of a configuration is the same stream with one space
//! (`switch_to` of the running space does nothing): the cost of the kernel
//! path and the pass without an address-space change. *Overhead per switch*
//! is cycles per switch minus the baseline's cycles per turn, as lmbench
//! subtracts the cost of touching the data.

use crate::path::KernelPath;
use crate::BenchError;
use armv5_sim::presets::{self, Preset};
use armv5_sim::{encode, sctlr, Counters, Machine, MemoryKind, MemoryRegion, Privilege, Width};
use fass::policy::{CleanFirstLru, CleanFirstRandom, CleanFirstRoundRobin, FewestSlots};
use fass::{
    ClassicKind, Cpd, DomainSet, Fass, FassError, KernelTable, Layout, PidMode, RecycleRule,
    Resolution, SpaceId, Stats, SwitchStrategy, TableSwitch, VictimPolicy,
};
use mmu_armv5::descriptor::{AccessPermission, CachePolicy, L1Encoding};
use mmu_armv5::regs::{Dacr, DomainAccess};
use mmu_armv5::regs::{Far, Sctlr, Ttbr};
use mmu_armv5::size::{Frame, PageRange};
use mmu_armv5::table::{TableAlloc, TableKind as HwTable, TableRef};
use mmu_armv5::{Domain, PhysAddr, VirtAddr};
use std::any::TypeId;
use std::fmt;

/// User instructions fetched per pass.
pub const USER_INSNS: u32 = 64;
/// Bytes of kernel stack the kernel path's data accesses cycle through.
pub const KERNEL_STACK_BYTES: u32 = 1024;
/// Largest number of spaces a run may use (ring N or IPC N + 1).
pub const MAX_SPACES: u16 = 72;

const KERNEL_VA: u32 = 0xC000_0000;
const KERNEL_TEXT: u32 = 0xC001_0000;
const FAULT_TEXT: u32 = 0xC002_0000;
const TCB_BASE: u32 = 0xC008_0000;
const KERNEL_STACK: u32 = 0xC009_0000;
const TEXT_VA: u32 = 0x0000_8000;
const DATA_VA: u32 = 0x0010_0000;
const STACK_VA: u32 = 0x01FF_F000;
const FRAME_BASE: u32 = 0x0010_0000;
const FRAMES_PER_SPACE: u32 = 6;
const PAGE: u32 = 4096;
/// Largest `touch` the stream supports (four data pages).
pub const MAX_TOUCH: u32 = 4 * PAGE;
const RAM: u32 = 16 << 20;
const TABLE_POOL: u32 = 8 << 20;

/// A CPU preset of the model.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Cpu {
    /// StrongARM SA-1100 ([`presets::sa1100`]).
    Sa1100,
    /// ARM926EJ-S ([`presets::arm926ejs`]).
    Arm926,
}

impl Cpu {
    /// Both presets, SA-1100 first.
    pub const ALL: [Cpu; 2] = [Cpu::Sa1100, Cpu::Arm926];

    /// The preset.
    #[must_use]
    pub fn preset(self) -> Preset {
        match self {
            Cpu::Sa1100 => presets::sa1100(),
            Cpu::Arm926 => presets::arm926ejs(),
        }
    }

    /// A short name, with the demo kernel's board whose CPU the preset
    /// models (its QEMU instruction counts are the ones to read beside it).
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Cpu::Sa1100 => "SA-1100 (collie)",
            Cpu::Arm926 => "ARM926EJ-S (versatilepb)",
        }
    }
}

/// A domain-recycling policy of `fass::policy`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum PolicyKind {
    /// [`CleanFirstRoundRobin`] (Pistachio's victim choice; the baseline of
    /// the policy comparison under [`Rule::Conservative`]).
    RoundRobin,
    /// [`CleanFirstRandom`] with its default seed.
    Random,
    /// [`FewestSlots`].
    FewestSlots,
    /// [`CleanFirstLru`].
    Lru,
}

impl PolicyKind {
    /// Every policy.
    pub const ALL: [PolicyKind; 4] = [
        PolicyKind::RoundRobin,
        PolicyKind::Random,
        PolicyKind::FewestSlots,
        PolicyKind::Lru,
    ];

    /// The policy `fass::DefaultPolicy` names (found by type, so the
    /// benchmarks follow the library when its default changes); `None` if
    /// it is none of [`PolicyKind::ALL`].
    #[must_use]
    pub fn default_of_fass() -> Option<PolicyKind> {
        let d = TypeId::of::<fass::DefaultPolicy>();
        PolicyKind::ALL.into_iter().find(|p| p.type_id() == d)
    }

    fn type_id(self) -> TypeId {
        match self {
            PolicyKind::RoundRobin => TypeId::of::<CleanFirstRoundRobin>(),
            PolicyKind::Random => TypeId::of::<CleanFirstRandom>(),
            PolicyKind::FewestSlots => TypeId::of::<FewestSlots>(),
            PolicyKind::Lru => TypeId::of::<CleanFirstLru>(),
        }
    }

    /// A short name.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            PolicyKind::RoundRobin => "clean-first round-robin",
            PolicyKind::Random => "clean-first random",
            PolicyKind::FewestSlots => "clean-first fewest-slots",
            PolicyKind::Lru => "clean-first LRU",
        }
    }

    /// A one-word key.
    #[must_use]
    pub const fn key(self) -> &'static str {
        match self {
            PolicyKind::RoundRobin => "rr",
            PolicyKind::Random => "random",
            PolicyKind::FewestSlots => "fewest",
            PolicyKind::Lru => "lru",
        }
    }
}

/// A domain-recycling rule of `fass` ([`RecycleRule`]), ordered so that it
/// can be part of a result key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Rule {
    /// [`RecycleRule::ExclusiveWindows`] (the default of `Fass::new`): the
    /// dirty domain of a window-exclusive space is recycled without a flush.
    Exclusive,
    /// [`RecycleRule::Conservative`] (Pistachio; Wiggins et al., ACSAC 2003): recycling any
    /// dirty domain costs a full flush.
    Conservative,
}

impl Rule {
    /// Both rules, the default (exclusive windows) first.
    pub const ALL: [Rule; 2] = [Rule::Exclusive, Rule::Conservative];

    /// The rule `Fass::new` uses (`RecycleRule::default()`).
    #[must_use]
    pub fn default_of_fass() -> Rule {
        Rule::of(RecycleRule::default())
    }

    /// The bench name of a `fass` rule.
    #[must_use]
    pub const fn of(r: RecycleRule) -> Rule {
        match r {
            RecycleRule::ExclusiveWindows => Rule::Exclusive,
            RecycleRule::Conservative => Rule::Conservative,
        }
    }

    /// The `fass` rule.
    #[must_use]
    pub const fn recycle_rule(self) -> RecycleRule {
        match self {
            Rule::Exclusive => RecycleRule::ExclusiveWindows,
            Rule::Conservative => RecycleRule::Conservative,
        }
    }

    /// A short name.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Rule::Exclusive => "exclusive windows",
            Rule::Conservative => "conservative",
        }
    }

    /// A one-word key.
    #[must_use]
    pub const fn key(self) -> &'static str {
        match self {
            Rule::Exclusive => "excl",
            Rule::Conservative => "cons",
        }
    }
}

/// A switching strategy of `fass`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Mode {
    /// [`TableSwitch`] with [`ClassicKind::Naive`]: full flush every switch.
    Naive,
    /// [`TableSwitch`] with FCSE PIDs, best-effort mode (as guaranteed
    /// while the spaces fit the 63 PIDs of [`Layout::DEMO`]).
    Fcse,
    /// [`Fass`] with a victim policy and a recycling rule.
    Fass(PolicyKind, Rule),
}

impl Mode {
    /// A short key (`naive`, `fcse`, `fass-rr-excl`, `fass-rr-cons`, …).
    #[must_use]
    pub fn key(self) -> String {
        match self {
            Mode::Naive => "naive".into(),
            Mode::Fcse => "fcse".into(),
            Mode::Fass(p, r) => format!("fass-{}-{}", p.key(), r.key()),
        }
    }

    /// The recycling rule, for FASS modes.
    #[must_use]
    pub fn rule(self) -> Option<Rule> {
        match self {
            Mode::Fass(_, r) => Some(r),
            _ => None,
        }
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Mode::Naive => f.write_str("naive"),
            Mode::Fcse => f.write_str("FCSE-only"),
            Mode::Fass(p, r) => write!(f, "FASS ({}, {})", p.name(), r.name()),
        }
    }
}

/// Which processes run in which order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Pattern {
    /// Token ring of N spaces.
    Ring,
    /// A server and N clients.
    Ipc,
}

impl Pattern {
    /// A short name.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Pattern::Ring => "ring",
            Pattern::Ipc => "ipc",
        }
    }
}

/// One benchmark configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Workload {
    /// The CPU preset.
    pub cpu: Cpu,
    /// The strategy.
    pub mode: Mode,
    /// The pattern.
    pub pattern: Pattern,
    /// Ring size, or number of IPC clients.
    pub n: u16,
    /// Bytes of private data touched per pass (multiple of 32, at most [`MAX_TOUCH`]).
    pub touch: u32,
    /// Unmeasured rounds first.
    pub warmup_rounds: u32,
    /// Measured rounds.
    pub rounds: u32,
    /// The kernel path of every switch and abort.
    pub path: KernelPath,
}

impl Workload {
    /// Number of spaces the workload creates.
    #[must_use]
    pub fn spaces(&self) -> u16 {
        match self.pattern {
            Pattern::Ring => self.n,
            Pattern::Ipc => self.n + 1,
        }
    }

    /// The order of one round.
    fn round(&self) -> Vec<u16> {
        match self.pattern {
            Pattern::Ring => (0..self.n).collect(),
            Pattern::Ipc => (1..=self.n).flat_map(|c| [c, 0]).collect(),
        }
    }
}

/// What a measured run counted.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// The configuration.
    pub workload: Workload,
    /// Turns run in the measured rounds.
    pub turns: u64,
    /// Switches the strategy counted in the measured rounds.
    pub switches: u64,
    /// The model's counters over the measured rounds.
    pub counters: Counters,
    /// The strategy's statistics over the measured rounds.
    pub stats: Stats,
    /// Modelled cycles of the measured rounds.
    pub cycles: u64,
}

impl Outcome {
    fn per_switch(&self, x: u64) -> f64 {
        if self.switches == 0 {
            x as f64 / self.turns.max(1) as f64
        } else {
            x as f64 / self.switches as f64
        }
    }

    /// Modelled cycles per switch (per turn when nothing switched).
    #[must_use]
    pub fn cycles_per_switch(&self) -> f64 {
        self.per_switch(self.cycles)
    }

    /// TLB misses (table walks) per switch.
    #[must_use]
    pub fn tlb_misses_per_switch(&self) -> f64 {
        self.per_switch(self.counters.tlb_misses())
    }

    /// I- and D-cache line fills (cache misses that allocate) per switch.
    #[must_use]
    pub fn cache_misses_per_switch(&self) -> f64 {
        self.per_switch(self.counters.line_fills())
    }

    /// Dirty lines written back per switch.
    #[must_use]
    pub fn write_backs_per_switch(&self) -> f64 {
        self.per_switch(self.counters.write_backs)
    }

    /// Full flushes (strategy statistics) per 1,000 switches.
    #[must_use]
    pub fn flushes_per_thousand(&self) -> f64 {
        self.per_switch(self.stats.full_flushes) * 1000.0
    }

    /// Whole-TLB and single-entry TLB invalidations the model saw, per switch.
    #[must_use]
    pub fn tlb_invalidations_per_switch(&self) -> f64 {
        self.per_switch(self.counters.tlb_invalidate_all + self.counters.tlb_invalidate_entry)
    }

    /// Whole-cache maintenance operations the model saw, per switch.
    #[must_use]
    pub fn cache_flush_ops_per_switch(&self) -> f64 {
        self.per_switch(self.counters.cache_whole_ops)
    }
}

/// The kernel's table for a benchmark: a fresh first-level table from
/// `alloc` with the kernel's one write-back section at 0xC000_0000 (PA 0,
/// domain 0, privileged read/write), checked against the demo layout and
/// vouched for.
pub fn kernel_table<A: TableAlloc + ?Sized>(alloc: &mut A) -> Result<KernelTable, BenchError> {
    let root = TableRef::allocate(alloc, HwTable::L1)?;
    // SAFETY: a fresh first-level table no `PageTable` manages: the entry
    // is a section, no table link.
    unsafe {
        root.write(
            alloc,
            (KERNEL_VA >> 20) as usize,
            encode::section(0, 1, 0, true, true),
        )?
    };
    // SAFETY: the benchmarks drive the model or `MockCp15`, whose register
    // writes reach no host memory; the table stays in `alloc`'s memory.
    unsafe { KernelTable::new(alloc, root.pa, L1Encoding::Arm9, &Layout::DEMO, dom(0)?) }
        .map_err(|e| BenchError::Fass(e.into()))
}

fn machine(cpu: Cpu) -> Result<(Machine, KernelTable), BenchError> {
    let mut cfg = cpu.preset().config;
    cfg.regions.push(MemoryRegion {
        base: PhysAddr::new(0),
        size: RAM,
        kind: MemoryKind::Ram,
        latency: 0,
    });
    let mut m = Machine::new(cfg)?;
    m.set_frame_pool(PhysAddr::new(RAM - TABLE_POOL), TABLE_POOL)?;
    let kernel = kernel_table(&mut m)?;
    m.set_ttbr(
        Ttbr::new(kernel.root())
            .map_err(|_| BenchError::Setup("kernel table not 16 KiB aligned"))?,
    );
    m.set_sctlr(Sctlr::from_bits(sctlr::M | sctlr::C | sctlr::I));
    Ok((m, kernel))
}

fn dom(n: u8) -> Result<Domain, BenchError> {
    Domain::new(n).map_err(|_| BenchError::Setup("domain number"))
}

type FassOf<P> = Fass<P, { MAX_SPACES as usize }, 8, 1>;
type Classic = TableSwitch<{ MAX_SPACES as usize }, 1>;

/// Runs `w` on a fresh machine and returns what the measured rounds counted.
pub fn run(w: &Workload) -> Result<Outcome, BenchError> {
    if w.spaces() == 0
        || w.spaces() > MAX_SPACES
        || w.touch > MAX_TOUCH
        || !w.touch.is_multiple_of(32)
        || !w.path.fits()
    {
        return Err(BenchError::Setup("workload out of range"));
    }
    let (mut m, table) = machine(w.cpu)?;
    let kernel = table.domain();
    match w.mode {
        Mode::Naive | Mode::Fcse => {
            let kind = if w.mode == Mode::Naive {
                ClassicKind::Naive
            } else {
                ClassicKind::Fcse(PidMode::BestEffort)
            };
            m.set_dacr(
                Dacr::only(kernel, DomainAccess::Client).with(dom(1)?, DomainAccess::Client),
            );
            let mut t = Classic::new(kind, dom(1)?, table);
            drive(&mut m, &mut t, w)
        }
        Mode::Fass(p, rule) => {
            m.set_dacr(Dacr::only(kernel, DomainAccess::Client));
            let cpd = Cpd::new(table);
            match p {
                PolicyKind::RoundRobin => {
                    run_fass(&mut m, CleanFirstRoundRobin::default(), rule, cpd, w)
                }
                PolicyKind::Random => run_fass(&mut m, CleanFirstRandom::default(), rule, cpd, w),
                PolicyKind::FewestSlots => run_fass(&mut m, FewestSlots, rule, cpd, w),
                PolicyKind::Lru => run_fass(&mut m, CleanFirstLru::default(), rule, cpd, w),
            }
        }
    }
}

fn run_fass<P: VictimPolicy>(
    m: &mut Machine,
    policy: P,
    rule: Rule,
    cpd: Cpd,
    w: &Workload,
) -> Result<Outcome, BenchError> {
    let mut f: FassOf<P> =
        Fass::new(cpd, DomainSet::EMPTY, policy)?.with_recycle_rule(rule.recycle_rule());
    drive(m, &mut f, w)
}

/// Keeps the generic parameter of [`VictimPolicy`] in the public docs honest:
/// every policy the benchmarks name implements it.
#[allow(dead_code)]
fn _policies_are_victim_policies() {
    fn is<P: VictimPolicy>() {}
    is::<CleanFirstRoundRobin>();
    is::<CleanFirstRandom>();
    is::<FewestSlots>();
    is::<CleanFirstLru>();
}

fn drive<T: SwitchStrategy>(
    m: &mut Machine,
    t: &mut T,
    w: &Workload,
) -> Result<Outcome, BenchError> {
    let cost = w.cpu.preset().cost;
    for s in 0..w.spaces() {
        let id = SpaceId(s);
        t.create_space(m, id)?;
        let base = FRAME_BASE + u32::from(s) * FRAMES_PER_SPACE * PAGE;
        let maps = [
            (TEXT_VA, base, PAGE),
            (DATA_VA, base + PAGE, 4 * PAGE),
            (STACK_VA, base + 5 * PAGE, PAGE),
        ];
        for (va, pa, len) in maps {
            let pages = PageRange::from_bytes(VirtAddr::new(va), len).map_err(FassError::from)?;
            let frame = Frame::from_start(PhysAddr::new(pa)).map_err(FassError::from)?;
            t.map_pages(
                m,
                id,
                pages,
                frame,
                AccessPermission::ReadWrite,
                CachePolicy::WriteBack,
            )?;
        }
    }
    let order = w.round();
    let mut prev = *order.last().unwrap_or(&0);
    for _ in 0..w.warmup_rounds {
        for &s in &order {
            turn(m, t, prev, s, w.touch, &w.path)?;
            prev = s;
        }
    }
    let (c0, s0) = (m.counters().clone(), t.stats());
    let mut turns = 0u64;
    for _ in 0..w.rounds {
        for &s in &order {
            turn(m, t, prev, s, w.touch, &w.path)?;
            prev = s;
            turns += 1;
        }
    }
    let counters = m.counters() - &c0;
    let stats = t.stats().since(&s0);
    Ok(Outcome {
        workload: *w,
        turns,
        switches: stats.switches,
        cycles: cost.cycles(&counters),
        counters,
        stats,
    })
}

fn kernel_fetches(m: &mut Machine, at: u32, insns: u32) -> Result<(), BenchError> {
    for i in 0..insns {
        let va = at + 4 * i;
        m.fetch(VirtAddr::new(va), Privilege::Privileged)
            .map_err(|_| BenchError::Fault {
                va,
                fsr: m.ifsr().bits(),
            })?;
    }
    Ok(())
}

fn tcb(s: u16) -> u32 {
    TCB_BASE + u32::from(s) * 64
}

/// The kernel stack word of the `i`-th stack access.
fn stack_word(i: u32) -> u32 {
    KERNEL_STACK + 4 * (i % (KERNEL_STACK_BYTES / 4))
}

fn kernel_store(m: &mut Machine, va: u32, x: u32) -> Result<(), BenchError> {
    m.store(VirtAddr::new(va), Width::Word, x, Privilege::Privileged)
        .map_err(|_| BenchError::Fault {
            va,
            fsr: m.dfsr().bits(),
        })
}

fn kernel_load(m: &mut Machine, va: u32) -> Result<(), BenchError> {
    m.load(VirtAddr::new(va), Width::Word, Privilege::Privileged)
        .map(|_| ())
        .map_err(|_| BenchError::Fault {
            va,
            fsr: m.dfsr().bits(),
        })
}

/// `n` stores to the kernel stack, then the same words loaded back in
/// reverse order (a push and a pop).
fn stack_traffic(m: &mut Machine, stores: u32, loads: u32) -> Result<(), BenchError> {
    for i in 0..stores {
        kernel_store(m, stack_word(i), i)?;
    }
    for i in (0..loads).rev() {
        kernel_load(m, stack_word(i))?;
    }
    Ok(())
}

#[derive(Clone, Copy)]
enum Access {
    Fetch,
    Load,
    Store(u32),
}

/// One user access, resolving the aborts the strategy caused.
fn user<T: SwitchStrategy>(
    m: &mut Machine,
    t: &mut T,
    va: u32,
    a: Access,
    path: &KernelPath,
) -> Result<u32, BenchError> {
    // A pass touches at most 3 slots; more than 8 resolutions for one
    // access means the strategy is not making progress.
    for _ in 0..8 {
        let v = VirtAddr::new(va);
        let r = match a {
            Access::Fetch => m.fetch(v, Privilege::User),
            Access::Load => m.load(v, Width::Word, Privilege::User),
            Access::Store(x) => m.store(v, Width::Word, x, Privilege::User).map(|()| x),
        };
        match r {
            Ok(x) => return Ok(x),
            Err(_) => {
                let fsr = match a {
                    Access::Fetch => m.ifsr(),
                    _ => m.dfsr(),
                };
                // ARMv5 has no IFAR: the handler knows the faulting PC.
                let far = match a {
                    Access::Fetch => Far::from_bits(va),
                    _ => m.far(),
                };
                kernel_fetches(m, FAULT_TEXT, path.fault_insns)?;
                let stores = path.fault_accesses / 2;
                stack_traffic(m, stores, path.fault_accesses - stores)?;
                match t.resolve(m, fsr, far)? {
                    Resolution::Resolved { .. } => {}
                    Resolution::NotFass(_) => {
                        return Err(BenchError::Fault {
                            va,
                            fsr: fsr.bits(),
                        })
                    }
                }
            }
        }
    }
    Err(BenchError::Fault {
        va,
        fsr: m.dfsr().bits(),
    })
}

/// One turn: kernel path, switch, kernel exit, the process's pass.
fn turn<T: SwitchStrategy>(
    m: &mut Machine,
    t: &mut T,
    prev: u16,
    next: u16,
    touch: u32,
    path: &KernelPath,
) -> Result<(), BenchError> {
    let entry = path.switch_insns / 2;
    let stores = path.switch_accesses / 2;
    let loads = path.switch_accesses - stores;
    let (tcb_stores, tcb_loads) = (stores.min(16), loads.min(16));
    kernel_fetches(m, KERNEL_TEXT, entry)?;
    for i in 0..tcb_stores {
        kernel_store(m, tcb(prev) + 4 * i, i)?;
    }
    for i in 0..stores - tcb_stores {
        kernel_store(m, stack_word(i), i)?;
    }
    t.switch_to(m, SpaceId(next))?;
    kernel_fetches(m, KERNEL_TEXT + 4 * entry, path.switch_insns - entry)?;
    for i in (0..loads - tcb_loads).rev() {
        kernel_load(m, stack_word(i))?;
    }
    for i in 0..tcb_loads {
        kernel_load(m, tcb(next) + 4 * i)?;
    }
    for i in 0..USER_INSNS {
        user(m, t, TEXT_VA + 4 * i, Access::Fetch, path)?;
    }
    for off in (0..touch).step_by(32) {
        let va = DATA_VA + off;
        let v = user(m, t, va, Access::Load, path)?;
        user(m, t, va, Access::Store(v.wrapping_add(1)), path)?;
    }
    let sp = STACK_VA + 0xF00;
    for i in 0..4 {
        user(m, t, sp + 4 * i, Access::Store(i), path)?;
    }
    for i in 0..4 {
        user(m, t, sp + 4 * i, Access::Load, path)?;
    }
    Ok(())
}

/// The baseline of `w`: the same stream with a ring of one space.
#[must_use]
pub fn baseline_of(w: &Workload) -> Workload {
    Workload {
        pattern: Pattern::Ring,
        n: 1,
        ..*w
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(mode: Mode, pattern: Pattern, n: u16, touch: u32) -> Workload {
        Workload {
            cpu: Cpu::Sa1100,
            mode,
            pattern,
            n,
            touch,
            warmup_rounds: 2,
            rounds: 3,
            path: KernelPath::of(80, 64),
        }
    }

    #[test]
    fn fass_ring_within_free_domains_never_flushes() {
        for n in [2u16, 8, 15] {
            for rule in Rule::ALL {
                let o = run(&w(
                    Mode::Fass(PolicyKind::RoundRobin, rule),
                    Pattern::Ring,
                    n,
                    1024,
                ))
                .unwrap();
                assert_eq!(o.switches, u64::from(n) * 3);
                assert_eq!(o.counters.cache_whole_ops, 0, "{}", o.counters);
                assert_eq!(o.tlb_invalidations_per_switch(), 0.0);
                assert_eq!(o.stats.full_flushes, 0);
            }
        }
    }

    #[test]
    fn rules_differ_beyond_the_free_domains() {
        let o = |rule| {
            run(&w(
                Mode::Fass(PolicyKind::RoundRobin, rule),
                Pattern::Ring,
                20,
                1024,
            ))
            .unwrap()
        };
        let (e, c) = (o(Rule::Exclusive), o(Rule::Conservative));
        assert_eq!(e.stats.full_flushes, 0);
        assert!(e.stats.recycles_exclusive > 0);
        assert!(c.stats.full_flushes > 0);
        assert_eq!(c.stats.recycles_exclusive, 0);
    }

    #[test]
    fn naive_flushes_every_switch_and_costs_more() {
        let n = run(&w(Mode::Naive, Pattern::Ring, 2, 0)).unwrap();
        let f = run(&w(
            Mode::Fass(PolicyKind::RoundRobin, Rule::Exclusive),
            Pattern::Ring,
            2,
            0,
        ))
        .unwrap();
        assert_eq!(n.stats.full_flushes, n.switches);
        assert!(n.cycles_per_switch() > 5.0 * f.cycles_per_switch());
    }

    #[test]
    fn ipc_counts_two_switches_per_round_trip() {
        let o = run(&w(Mode::Fcse, Pattern::Ipc, 4, 0)).unwrap();
        assert_eq!(o.switches, 4 * 2 * 3);
        assert_eq!(o.turns, o.switches);
    }

    #[test]
    fn baseline_has_no_switch() {
        let b = run(&baseline_of(&w(Mode::Naive, Pattern::Ipc, 4, 4096))).unwrap();
        assert_eq!(b.switches, 0);
        assert_eq!(b.turns, 3);
        assert_eq!(b.counters.cache_whole_ops, 0);
    }

    #[test]
    fn every_turn_runs_the_workload_kernel_path() {
        let short = w(Mode::Fcse, Pattern::Ring, 2, 0);
        let long = Workload {
            path: KernelPath::of(1600, 64),
            ..short
        };
        let (a, b) = (run(&short).unwrap(), run(&long).unwrap());
        assert_eq!(a.turns, b.turns);
        // Fetches: the path's instructions plus the user pass, per turn.
        assert_eq!(a.counters.i_fetches, a.turns * u64::from(80 + USER_INSNS));
        assert_eq!(b.counters.i_fetches, b.turns * u64::from(1600 + USER_INSNS));
        // Data: the path's accesses (0.4 per instruction, half each way)
        // plus the pass's 4 stores and 4 loads.
        assert_eq!(b.counters.d_writes, b.turns * (320 + 4));
        assert_eq!(b.counters.d_reads, b.turns * (320 + 4));
        assert!(b.cycles_per_switch() > a.cycles_per_switch());
    }

    #[test]
    fn the_fault_path_runs_on_every_abort() {
        // FASS at 20 spaces recycles domains: refill aborts in every round.
        let fass = Mode::Fass(PolicyKind::RoundRobin, Rule::Exclusive);
        let base = w(fass, Pattern::Ring, 20, 0);
        let long = Workload {
            path: KernelPath::of(80, 1000),
            ..base
        };
        let (a, b) = (run(&base).unwrap(), run(&long).unwrap());
        let aborts = a.counters.faults.iter().sum::<u64>();
        assert!(aborts > 0);
        assert_eq!(aborts, b.counters.faults.iter().sum::<u64>());
        assert_eq!(
            b.counters.i_fetches - a.counters.i_fetches,
            aborts * (1000 - 64)
        );
    }

    #[test]
    fn out_of_range_workloads_are_refused() {
        let too_long = Workload {
            path: KernelPath::of(crate::path::MAX_PATH_INSNS + 1, 64),
            ..w(Mode::Naive, Pattern::Ring, 2, 0)
        };
        assert!(matches!(run(&too_long), Err(BenchError::Setup(_))));
        assert!(run(&w(Mode::Naive, Pattern::Ring, 0, 0)).is_err());
        assert!(run(&w(Mode::Naive, Pattern::Ring, 2, MAX_TOUCH + 32)).is_err());
        assert!(run(&w(Mode::Naive, Pattern::Ipc, MAX_SPACES, 0)).is_err());
    }
}
