//! The isolation harness shared by the model tests (`model.rs`, which
//! generates operation sequences with proptest) and the `fass` fuzz target
//! (which includes this file and decodes them from its input): the model
//! machine, the strategies under test on it, the operations, the
//! reference model of what every space may see, and [`run`], which plays a
//! sequence and checks every access against the reference.
//!
//! Write-back VIVT caches are on, so a missing flush shows up as a wrong
//! value, a missing TLB invalidation as an access that should fault and
//! does not. Every load must return the last value stored at that physical
//! word (by the space, or by any sharer of a segment); an access to
//! anything the running space does not map must fault and is never served.
#![allow(dead_code)]

use armv5_sim::{encode, presets, sctlr, Machine, MemoryKind, MemoryRegion, Privilege, Width};
use fass::policy::CleanFirstRoundRobin;
use fass::{
    ClassicKind, Cpd, DomainSet, Fass, FassError, KernelTable, Layout, PidError, PidMode,
    RecycleRule, Resolution, SegmentAccess, SegmentError, SegmentId, SegmentSpec, SpaceId,
    SwitchStrategy, TableSwitch,
};
use mmu_armv5::descriptor::{AccessPermission, CachePolicy, L1Encoding};
use mmu_armv5::regs::{Dacr, DomainAccess, Far, Fsr};
use mmu_armv5::regs::{Sctlr, Ttbr};
use mmu_armv5::size::{Frame, Page, PageRange, Size4KiB};
use mmu_armv5::table::{TableKind as HwTable, TableRef};
use mmu_armv5::{Domain, FcsePid, PhysAddr, VirtAddr};
use std::collections::{BTreeMap, HashMap, VecDeque};

pub const PAGE: u32 = 4096;
pub const FRAMES_END: u32 = 0x0008_0000;
pub const SEG_BASE: [u32; 2] = [0x8000_0000, 0x8010_0000];
pub const SEG_PA: [u32; 2] = [0x0010_0000, 0x0020_0000];
pub const MIB: u32 = 1 << 20;

/// The 4 KiB pages of `[va, va + len)`, which the test knows are valid.
pub fn pages(va: u32, len: u32) -> PageRange<Size4KiB, VirtAddr> {
    PageRange::from_bytes(VirtAddr::new(va), len).unwrap()
}

/// The 4 KiB page at `va`.
pub fn page(va: u32) -> Page<Size4KiB, VirtAddr> {
    Page::from_start(VirtAddr::new(va)).unwrap()
}

/// The 4 KiB frame at `pa`.
pub fn frame(pa: u32) -> Frame<Size4KiB> {
    Frame::from_start(PhysAddr::new(pa)).unwrap()
}

pub fn d(n: u8) -> Domain {
    Domain::new(n).unwrap()
}

/// SA-1100 model with small caches (so evictions and write-backs happen
/// often): 3 MiB of RAM; private frames below 512 KiB, tables up to
/// 1 MiB, two 1 MiB segments above.
pub fn machine() -> Machine {
    let mut cfg = presets::sa1100().config;
    cfg.dcache.size = 2 << 10;
    cfg.icache.size = 2 << 10;
    cfg.regions.push(MemoryRegion {
        base: PhysAddr::new(0),
        size: 3 << 20,
        kind: MemoryKind::Ram,
        latency: 0,
    });
    let mut m = Machine::new(cfg).unwrap();
    m.set_frame_pool(PhysAddr::new(0x0008_0000), 512 << 10)
        .unwrap();
    m
}

pub fn small_layout(last_pid: u8) -> Layout {
    Layout::new(
        FcsePid::new(1).unwrap(),
        FcsePid::new(last_pid).unwrap(),
        fass::Region::new(0x8000_0000, 1 << 30).unwrap(),
        fass::Region::new(0xC000_0000, 1 << 30).unwrap(),
    )
    .unwrap()
}

/// Round-robin victims: the deterministic scenarios below name the domain
/// that gets recycled, which depends on the policy.
pub type FassModel = Fass<CleanFirstRoundRobin, 64, 16, 4>;
pub type Classic = TableSwitch<64, 4>;

pub fn fass_on(m: &mut Machine, layout: Layout) -> FassModel {
    fass_with(m, layout, RecycleRule::default())
}

/// The kernel's table on the model: a fresh first-level table with one
/// section of kernel RAM (the start of the kernel region, PA 0, kernel
/// only, domain 0), loaded in the TTBR, vouched for.
pub fn kernel_table(m: &mut Machine, layout: &Layout) -> KernelTable {
    let root = TableRef::allocate(m, HwTable::L1).unwrap();
    // SAFETY: a fresh first-level table no `PageTable` manages: the entry
    // is a section, no table link.
    unsafe {
        root.write(
            m,
            layout.kernel().slots().start,
            encode::section(0, 1, 0, true, true),
        )
    }
    .unwrap();
    m.set_ttbr(Ttbr::new(root.pa).unwrap());
    // SAFETY: the model's register writes reach no host memory; the table
    // stays allocated in the machine for as long as it lives.
    unsafe { KernelTable::new(&*m, root.pa, L1Encoding::Arm9, layout, d(0)) }.unwrap()
}

pub fn fass_with(m: &mut Machine, layout: Layout, rule: RecycleRule) -> FassModel {
    let table = kernel_table(m, &layout);
    m.set_dacr(Dacr::only(d(0), DomainAccess::Client));
    m.set_sctlr(Sctlr::from_bits(sctlr::M | sctlr::C | sctlr::I));
    let mut cpd = Cpd::new(table);
    // SAFETY: the model's RAM banks are heap memory that stays put when the
    // machine moves, and every test keeps its machine beside its manager
    // for as long as the manager is used; the CPD is never freed.
    unsafe { cpd.pin(&*m) }.unwrap();
    Fass::new(cpd, DomainSet::EMPTY, CleanFirstRoundRobin::default())
        .unwrap()
        .with_recycle_rule(rule)
}

pub fn classic_on(m: &mut Machine, kind: ClassicKind, layout: Layout) -> Classic {
    let table = kernel_table(m, &layout);
    m.set_dacr(Dacr::only(d(0), DomainAccess::Client).with(d(1), DomainAccess::Client));
    m.set_sctlr(Sctlr::from_bits(sctlr::M | sctlr::C | sctlr::I));
    TableSwitch::new(kind, d(1), table)
}

pub fn seg_spec(g: usize) -> SegmentSpec {
    SegmentSpec {
        base: VirtAddr::new(SEG_BASE[g]),
        pa: PhysAddr::new(SEG_PA[g]),
        size: MIB,
        ap: AccessPermission::ReadWrite,
        cache: CachePolicy::WriteBack,
    }
}

#[derive(Clone, Debug)]
pub enum Op {
    Create(u16),
    Destroy(u16),
    MapLow(u16, u8),
    MapHigh(u16, u8),
    Unmap(u16, u8),
    MapSeg(u16, u8, bool),
    UnmapSeg(u16, u8),
    /// Switch to the space: with `true`, through its precomputed switch
    /// when it holds a valid one (the lean path a kernel takes whenever it
    /// can), else (and with `false`) the full way.
    Switch(u16, bool),
    /// Switch to the n-th live space (mod their number), so that with many
    /// space ids most switches still run something and domains recycle.
    SwitchLive(u8, bool),
    Load(u8, u16),
    Store(u8, u16, u32),
}

/// The reference model.
#[derive(Default)]
pub struct Reference {
    /// Per space: VA -> frame, and which segments it maps.
    spaces: HashMap<u16, (BTreeMap<u32, u32>, [bool; 2])>,
    /// Last value stored at each physical word (RAM starts zeroed).
    mem: HashMap<u32, u32>,
    free: VecDeque<u32>,
    current: Option<u16>,
}

/// A fast fault path tried before [`SwitchStrategy::resolve`] (`None`:
/// not taken, resolve generally).
pub type Fast<T> = fn(&mut T, &mut Machine, Fsr, Far) -> Option<Resolution>;

pub fn no_fast<T>(_: &mut T, _: &mut Machine, _: Fsr, _: Far) -> Option<Resolution> {
    None
}

pub fn fass_fast(f: &mut FassModel, m: &mut Machine, fsr: Fsr, far: Far) -> Option<Resolution> {
    f.resolve_fast(m, fsr, far)
}

pub struct Harness<T: SwitchStrategy> {
    describe: fn(&T, &Machine, u16, u32) -> String,
    fast: Fast<T>,
    /// Faults the fast path resolved.
    fast_hits: u64,
    /// Switches made through a precomputed record.
    lean_switches: u64,
    m: Machine,
    t: T,
    r: Reference,
    /// High windows fixed pages go to (PID windows in use, so they collide).
    windows: [u32; 3],
    guaranteed: bool,
}

pub fn low_va(i: u8) -> u32 {
    u32::from(i / 4) * MIB + u32::from(i % 4) * PAGE + 0x8000
}

pub fn high_va(windows: &[u32; 3], i: u8) -> u32 {
    // Offsets equal to the low pages', so they hit the same MVAs as the
    // low pages of the spaces whose PID is that window.
    (windows[usize::from(i % 3)] << 25) + low_va(i / 3 * 2)
}

impl<T: SwitchStrategy> Harness<T> {
    fn mva(&self, s: u16, va: u32) -> u32 {
        self.t
            .mva_of(SpaceId(s), VirtAddr::new(va))
            .unwrap()
            .as_u32()
    }

    /// The page of space `s` the CPU reaches at `va` now: the one whose
    /// current MVA is `va`'s (a fixed page in the space's own FCSE window
    /// aliases its low page at the same offset).
    fn alias(&self, s: u16, va: u32) -> Option<(u32, u32)> {
        let m = self.mva(s, va) & !(PAGE - 1);
        let (pages, _) = self.r.spaces.get(&s)?;
        pages
            .iter()
            .find(|(v, _)| self.mva(s, **v) == m)
            .map(|(v, p)| (*v, *p))
    }

    fn candidate(&self, a: u8) -> u32 {
        match a {
            0..=7 => low_va(a),
            8..=19 => high_va(&self.windows, a - 8),
            20..=25 => SEG_BASE[usize::from(a % 2)] + u32::from(a - 20) * 0x2_0000,
            // Unmapped-by-anyone addresses in the low window.
            _ => 0x0100_0000 + u32::from(a) * PAGE,
        }
    }

    /// What the reference says an access to `va` by the running space hits.
    fn expect(&self, va: u32) -> Option<u32> {
        let s = self.r.current?;
        let (_, segs) = self.r.spaces.get(&s)?;
        if let Some((_, pa)) = self.alias(s, va) {
            return Some(pa + (va & (PAGE - 1)));
        }
        for g in 0..2 {
            if segs[g] && va >= SEG_BASE[g] && va < SEG_BASE[g] + MIB {
                return Some(SEG_PA[g] + (va - SEG_BASE[g]));
            }
        }
        None
    }

    /// Runs an access, resolving FASS faults (at most a few retries).
    fn access(&mut self, va: u32, store: Option<u32>) -> Result<u32, u32> {
        for _ in 0..4 {
            let r = match store {
                Some(v) => self
                    .m
                    .store(VirtAddr::new(va), Width::Word, v, Privilege::User)
                    .map(|()| v),
                None => self.m.load(VirtAddr::new(va), Width::Word, Privilege::User),
            };
            match r {
                Ok(v) => return Ok(v),
                Err(_) => {
                    let (fsr, far) = (self.m.dfsr(), self.m.far());
                    let fast = (self.fast)(&mut self.t, &mut self.m, fsr, far);
                    self.fast_hits += u64::from(fast.is_some());
                    let r = match fast {
                        Some(r) => r,
                        None => self.t.resolve(&mut self.m, fsr, far).unwrap(),
                    };
                    match r {
                        Resolution::Resolved { .. } => continue,
                        Resolution::NotFass(_) => return Err(fsr.bits()),
                    }
                }
            }
        }
        Err(u32::MAX)
    }

    fn step(&mut self, op: &Op) -> Result<(), String> {
        match *op {
            Op::Create(s) => {
                let r = self.t.create_space(&mut self.m, SpaceId(s));
                if self.r.spaces.contains_key(&s) {
                    check(
                        r == Err(FassError::SpaceExists(SpaceId(s))),
                        "create twice",
                        &r,
                    )?;
                } else if r == Err(FassError::Pid(PidError::Exhausted)) && self.guaranteed {
                } else {
                    check(r.is_ok(), "create", &r)?;
                    self.r.spaces.insert(s, (BTreeMap::new(), [false; 2]));
                }
            }
            Op::Destroy(s) => {
                let r = self.t.destroy_space(&mut self.m, SpaceId(s));
                match self.r.spaces.remove(&s) {
                    Some((pages, _)) => {
                        check(r.is_ok(), "destroy", &r)?;
                        // Reused first: lines a destroyed space may have
                        // left must be gone before its frames are.
                        for pa in pages.values() {
                            self.r.free.push_front(*pa);
                        }
                        if self.r.current == Some(s) {
                            self.r.current = None;
                        }
                    }
                    None => check(r == Err(FassError::UnknownSpace(SpaceId(s))), "destroy", &r)?,
                }
            }
            Op::MapLow(s, i) => self.map(s, low_va(i))?,
            Op::MapHigh(s, i) => self.map(s, high_va(&self.windows, i))?,
            Op::Unmap(s, i) => {
                let Some((mapped, _)) = self.r.spaces.get(&s) else {
                    let r = self
                        .t
                        .unmap_pages(&mut self.m, SpaceId(s), pages(0x8000, PAGE));
                    return check(r == Err(FassError::UnknownSpace(SpaceId(s))), "unmap", &r);
                };
                if mapped.is_empty() {
                    let r = self
                        .t
                        .unmap_pages(&mut self.m, SpaceId(s), pages(low_va(i % 8), PAGE));
                    return check(matches!(r, Err(FassError::Space(_))), "unmap unmapped", &r);
                }
                let (va, pa) = mapped
                    .iter()
                    .nth(usize::from(i) % mapped.len())
                    .map(|(v, p)| (*v, *p))
                    .unwrap();
                let r = self.t.unmap_pages(&mut self.m, SpaceId(s), pages(va, PAGE));
                check(r.is_ok(), "unmap", &r)?;
                self.r.spaces.get_mut(&s).unwrap().0.remove(&va);
                self.r.free.push_back(pa);
            }
            Op::MapSeg(s, g, wrong) => {
                let at = SEG_BASE[usize::from(g)] + if wrong { MIB * 4 } else { 0 };
                let r = self.t.map_segment(
                    &mut self.m,
                    SpaceId(s),
                    SegmentId(u16::from(g)),
                    VirtAddr::new(at),
                    SegmentAccess::Client,
                );
                match self.r.spaces.get_mut(&s) {
                    None => check(r == Err(FassError::UnknownSpace(SpaceId(s))), "mapseg", &r)?,
                    Some(_) if wrong => check(
                        matches!(
                            r,
                            Err(FassError::Segment(SegmentError::WrongAddress { .. }))
                        ),
                        "mapseg elsewhere",
                        &r,
                    )?,
                    Some((_, segs)) if segs[usize::from(g)] => check(
                        matches!(
                            r,
                            Err(FassError::Segment(SegmentError::AlreadyMapped { .. }))
                        ),
                        "mapseg twice",
                        &r,
                    )?,
                    Some((_, segs)) => {
                        check(r.is_ok(), "mapseg", &r)?;
                        segs[usize::from(g)] = true;
                    }
                }
            }
            Op::UnmapSeg(s, g) => {
                let r = self
                    .t
                    .unmap_segment(&mut self.m, SpaceId(s), SegmentId(u16::from(g)));
                match self.r.spaces.get_mut(&s) {
                    None => check(
                        r == Err(FassError::UnknownSpace(SpaceId(s))),
                        "unmapseg",
                        &r,
                    )?,
                    Some((_, segs)) if segs[usize::from(g)] => {
                        check(r.is_ok(), "unmapseg", &r)?;
                        segs[usize::from(g)] = false;
                    }
                    Some(_) => check(
                        matches!(r, Err(FassError::Segment(SegmentError::NotMapped { .. }))),
                        "unmapseg unmapped",
                        &r,
                    )?,
                }
            }
            Op::SwitchLive(n, lean) => {
                if self.r.spaces.is_empty() {
                    return Ok(());
                }
                let mut live: Vec<u16> = self.r.spaces.keys().copied().collect();
                live.sort_unstable();
                let s = live[usize::from(n) % live.len()];
                return self.step(&Op::Switch(s, lean));
            }
            Op::Switch(s, lean) => {
                let running = self.t.current() == Some(SpaceId(s));
                let r = if lean && self.t.switch_lean(&mut self.m, SpaceId(s)).is_ok() {
                    self.lean_switches += u64::from(!running);
                    Ok(())
                } else {
                    self.t.switch_to(&mut self.m, SpaceId(s))
                };
                if self.r.spaces.contains_key(&s) {
                    check(r.is_ok(), "switch", &r)?;
                    self.r.current = Some(s);
                } else {
                    check(r == Err(FassError::UnknownSpace(SpaceId(s))), "switch", &r)?;
                }
            }
            Op::Load(a, o) | Op::Store(a, o, _) => {
                if self.r.current.is_none() {
                    return Ok(());
                }
                if matches!(op, Op::Store(..)) {
                    // Read first: the SA-1100 does not allocate on a write
                    // miss, so this makes the store dirty a cached line.
                    self.step(&Op::Load(a, o))?;
                }
                // Few lines per page, so loads and stores meet in the cache.
                let va = self.candidate(a) + (u32::from(o) % 24) * 4;
                let store = match *op {
                    Op::Store(_, _, v) => Some(v),
                    _ => None,
                };
                let want = self.expect(va);
                let got = self.access(va, store);
                match (want, got) {
                    (Some(pa), Ok(v)) => match store {
                        Some(v) => {
                            self.r.mem.insert(pa, v);
                        }
                        None => {
                            let w = self.r.mem.get(&pa).copied().unwrap_or(0);
                            if v != w {
                                return Err(format!(
                                    "space {:?} load {va:#x} (pa {pa:#x}) = {v:#x}, last stored {w:#x}",
                                    self.r.current
                                ));
                            }
                        }
                    },
                    (Some(pa), Err(fsr)) => {
                        let mva = self.mva(self.r.current.unwrap(), va);
                        let l1a = self.m.ttbr().base().as_u32() | ((mva >> 20) * 4);
                        let l1 = self.m.phys_read(PhysAddr::new(l1a), Width::Word).unwrap();
                        let l2 = self
                            .m
                            .phys_read(
                                PhysAddr::new((l1 & !0x3FF) | (((mva >> 12) & 0xFF) * 4)),
                                Width::Word,
                            )
                            .unwrap_or(0xDEAD);
                        return Err(format!(
                            "space {:?} access {va:#x} (mva {mva:#x}, pa {pa:#x}) faulted, fsr {fsr:#x}; l1 {l1:#x} l2 {l2:#x}; {}; pages {:x?}",
                            self.r.current,
                            (self.describe)(&self.t, &self.m, self.r.current.unwrap(), mva),
                            self.r.spaces.get(&self.r.current.unwrap()).map(|p| &p.0)
                        ));
                    }
                    (None, Ok(v)) => {
                        return Err(format!(
                        "space {:?} access {va:#x} not mapped but served ({v:#x}, store {store:?})",
                        self.r.current
                    ))
                    }
                    (None, Err(_)) => {}
                }
            }
        }
        Ok(())
    }

    /// Gives every word the accesses can reach (the first 24 words of each
    /// private frame and of each segment page used) a value of its own, so
    /// that a hit on another frame's line (a homonym) reads a wrong value
    /// even where neither frame was stored to.
    fn seed_memory(&mut self) {
        let pattern = |pa: u32| pa.wrapping_mul(0x9E37_79B1) ^ 0x5A5A_0001;
        let segs = (20..26u32).map(|a| SEG_PA[(a % 2) as usize] + (a - 20) * 0x2_0000);
        let frames = (1..FRAMES_END / PAGE).map(|f| f * PAGE);
        for base in frames.chain(segs) {
            for w in 0..24 {
                let pa = base + w * 4;
                self.m
                    .phys_write(PhysAddr::new(pa), Width::Word, pattern(pa))
                    .unwrap();
                self.r.mem.insert(pa, pattern(pa));
            }
        }
    }

    fn map(&mut self, s: u16, va: u32) -> Result<(), String> {
        let Some(pa) = self.r.free.pop_front() else {
            return Ok(());
        };
        let r = self.t.map_pages(
            &mut self.m,
            SpaceId(s),
            pages(va, PAGE),
            frame(pa),
            AccessPermission::ReadWrite,
            CachePolicy::WriteBack,
        );
        if !self.r.spaces.contains_key(&s) {
            self.r.free.push_front(pa);
            return check(r == Err(FassError::UnknownSpace(SpaceId(s))), "map", &r);
        }
        if va >= 32 << 20 && self.guaranteed {
            self.r.free.push_front(pa);
            return check(
                r == Err(FassError::Pid(PidError::LargeNotSupported)),
                "map above 32 MiB, guaranteed",
                &r,
            );
        }
        // Aliasing is judged with the MVAs after the call (a best-effort
        // space may have grown large and moved to PID 0).
        if self.alias(s, va).is_some() {
            self.r.free.push_front(pa);
            return check(
                matches!(
                    r,
                    Err(FassError::Space(fass::space::SpaceError::AlreadyMapped(_)))
                ),
                "map over a mapped MVA",
                &r,
            );
        }
        check(r.is_ok(), "map", &r)?;
        self.r.spaces.get_mut(&s).unwrap().0.insert(va, pa);
        Ok(())
    }
}

pub fn check<E: std::fmt::Debug>(ok: bool, what: &str, r: &Result<(), E>) -> Result<(), String> {
    if ok {
        Ok(())
    } else {
        Err(format!("{what}: unexpected {r:?}"))
    }
}

pub fn describe_fass(f: &FassModel, m: &Machine, s: u16, mva: u32) -> String {
    let slot = (mva >> 20) as usize;
    format!(
        "domain {:?} pid {:?} slot owner {:?} cpd {:?} dacr {:?} window {:?}",
        f.domain_of(SpaceId(s)),
        f.pid_of(SpaceId(s)),
        f.domains().slot_owner(slot),
        f.cpd().entry(m, slot),
        m.dacr(),
        fass::window::window_of_slot(slot).map(|w| f.window_lines().leftover(w)),
    )
}

/// A strategy under test, with the number of space ids its sequences use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Setup {
    /// FASS with the default rule (window-exclusive spaces' dirty domains
    /// recycled without a flush), 64 space ids, 15 free domains (two
    /// segments pin two while mapped), 63 PIDs top-down; fixed pages in
    /// windows 63..61 collide with the first spaces' low pages; the fast
    /// fault path tried first.
    FassExclusive,
    /// FASS with the conservative rule (every dirty recycling flushes).
    FassConservative,
    /// Best-effort FCSE: 4 PIDs for 12 spaces (PIDs shared, spaces growing large).
    FcseBestEffort,
    /// Guaranteed FCSE: 8 PIDs for 12 spaces (creation refused when out).
    FcseGuaranteed,
    /// Per-space tables, flushed at every switch.
    Naive,
}

impl Setup {
    /// Every setup.
    pub const ALL: [Setup; 5] = [
        Setup::FassExclusive,
        Setup::FassConservative,
        Setup::FcseBestEffort,
        Setup::FcseGuaranteed,
        Setup::Naive,
    ];

    /// The space ids its sequences use (`0..spaces`).
    pub fn spaces(self) -> u16 {
        match self {
            Setup::FassExclusive | Setup::FassConservative => 64,
            _ => 12,
        }
    }
}

/// What sequences exercised (the tests check their runs reach what they claim to).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Totals {
    pub switches: u64,
    /// Switches made through a precomputed record.
    pub lean_switches: u64,
    pub full_flushes: u64,
    pub collisions_and_pid_shares: u64,
    pub write_backs: u64,
    /// Dirty domains of window-exclusive spaces recycled without a flush.
    pub recycles_exclusive: u64,
    /// Flushes the window guard made.
    pub window_flushes: u64,
    /// Faults the fast path resolved.
    pub fast_hits: u64,
}

impl std::ops::AddAssign for Totals {
    fn add_assign(&mut self, o: Totals) {
        self.switches += o.switches;
        self.lean_switches += o.lean_switches;
        self.full_flushes += o.full_flushes;
        self.collisions_and_pid_shares += o.collisions_and_pid_shares;
        self.write_backs += o.write_backs;
        self.recycles_exclusive += o.recycles_exclusive;
        self.window_flushes += o.window_flushes;
        self.fast_hits += o.fast_hits;
    }
}

fn no_describe<T>(_: &T, _: &Machine, _: u16, _: u32) -> String {
    String::new()
}

/// Plays `ops` on a fresh machine under `setup`, checking every step.
pub fn run(setup: Setup, ops: &[Op]) -> Result<Totals, String> {
    match setup {
        Setup::FassExclusive => run_with(
            ops,
            |m| (fass_on(m, Layout::DEMO), [63, 62, 61], false),
            describe_fass,
            fass_fast,
        ),
        Setup::FassConservative => run_with(
            ops,
            |m| {
                (
                    fass_with(m, Layout::DEMO, RecycleRule::Conservative),
                    [63, 62, 61],
                    false,
                )
            },
            describe_fass,
            no_fast,
        ),
        Setup::FcseBestEffort => run_with(
            ops,
            |m| {
                (
                    classic_on(m, ClassicKind::Fcse(PidMode::BestEffort), small_layout(4)),
                    [4, 3, 2],
                    false,
                )
            },
            no_describe,
            no_fast,
        ),
        Setup::FcseGuaranteed => run_with(
            ops,
            |m| {
                (
                    classic_on(m, ClassicKind::Fcse(PidMode::Guaranteed), small_layout(8)),
                    [8, 7, 6],
                    true,
                )
            },
            no_describe,
            no_fast,
        ),
        Setup::Naive => run_with(
            ops,
            |m| {
                (
                    classic_on(m, ClassicKind::Naive, small_layout(8)),
                    [8, 7, 6],
                    false,
                )
            },
            no_describe,
            no_fast,
        ),
    }
}

fn run_with<T: SwitchStrategy>(
    ops: &[Op],
    make: impl Fn(&mut Machine) -> (T, [u32; 3], bool),
    describe: fn(&T, &Machine, u16, u32) -> String,
    fast: Fast<T>,
) -> Result<Totals, String> {
    let mut m = machine();
    let (mut t, windows, guaranteed) = make(&mut m);
    for g in 0..2 {
        t.create_segment(SegmentId(g as u16), seg_spec(g))
            .map_err(|e| format!("segment {g}: {e:?}"))?;
    }
    let mut h = Harness {
        describe,
        fast,
        fast_hits: 0,
        lean_switches: 0,
        m,
        t,
        r: Reference {
            free: (1..FRAMES_END / PAGE).map(|f| f * PAGE).collect(),
            ..Reference::default()
        },
        windows,
        guaranteed,
    };
    h.seed_memory();
    for (i, o) in ops.iter().enumerate() {
        h.step(o).map_err(|e| format!("op {i} {o:?}: {e}"))?;
    }
    let s = h.t.stats();
    Ok(Totals {
        switches: s.switches,
        lean_switches: h.lean_switches,
        full_flushes: s.full_flushes,
        collisions_and_pid_shares: s.collisions + s.pid_shares,
        write_backs: h.m.counters().write_backs,
        recycles_exclusive: s.recycles_exclusive,
        window_flushes: s.window_flushes,
        fast_hits: h.fast_hits,
    })
}
