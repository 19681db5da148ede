//! Done-means tests on the `armv5-sim` model (write-back VIVT caches on, so
//! a missing flush shows up as a wrong value, a missing TLB invalidation as
//! an access that should fault and does not).
//!
//! * Isolation property: random sequences of create/destroy space, map and
//!   unmap private pages inside and above the 32 MiB window (fixed pages in
//!   other spaces' windows, so CPD collisions happen), map/unmap shared
//!   segments, switches (half of them lean: through the space's
//!   precomputed switch whenever it holds a valid one, as a kernel would;
//!   the other half, and every stale one, full), and user-mode loads and
//!   stores checked against a reference: every load returns the last value
//!   stored at that physical
//!   word (by the space, or by any sharer of a segment); an access to
//!   anything the running space does not map faults and is never served.
//!   Run for FASS with more spaces than domains, and for the best-effort
//!   FCSE strategy with more spaces than PIDs. `FASS_PROPTEST_CASES`
//!   overrides the number of sequences (default 2,000 for
//!   FASS, 500 for best-effort FCSE, 150 each for guaranteed FCSE and naive).
//! * A ring of spaces switched round-robin: after warm-up, for N up to the
//!   number of free domains, zero cache flushes and zero TLB invalidations
//!   per switch on the model's own counters; beyond, recycling is counted.

use armv5_sim::{encode, presets, sctlr, Machine, Privilege, Region, RegionKind, Width};
use fass::policy::CleanFirstRoundRobin;
use fass::{
    Cpd, DomainSet, Fass, FassError, Flushed, KernelTable, Layout, PidError, PidMode, RecycleRule,
    Resolution, SegmentAccess, SegmentError, SegmentId, SegmentSpec, SpaceId, SwitchStrategy,
    TableKind, TableSwitch,
};
use mmu_armv5::descriptor::{AccessPermission, CachePolicy, L1Encoding};
use mmu_armv5::regs::{Dacr, DomainAccess};
use mmu_armv5::table::{TableKind as HwTable, TableRef};
use mmu_armv5::{Domain, FcsePid, PhysAddr, VirtAddr};
use proptest::prelude::*;
use proptest::test_runner::{Config as PtConfig, TestCaseError, TestRunner};
use std::collections::{BTreeMap, HashMap, VecDeque};

const PAGE: u32 = 4096;
const FRAMES_END: u32 = 0x0008_0000;
const SEG_BASE: [u32; 2] = [0x8000_0000, 0x8010_0000];
const SEG_PA: [u32; 2] = [0x0010_0000, 0x0020_0000];
const MIB: u32 = 1 << 20;

fn d(n: u8) -> Domain {
    Domain::new(n).unwrap()
}

/// SA-1100 model with small caches (so evictions and write-backs happen
/// often): 3 MiB of RAM; private frames below 512 KiB, tables up to
/// 1 MiB, two 1 MiB segments above.
fn machine() -> Machine {
    let mut cfg = presets::sa1100().config;
    cfg.dcache.size = 2 << 10;
    cfg.icache.size = 2 << 10;
    cfg.regions.push(Region {
        base: PhysAddr::new(0),
        size: 3 << 20,
        kind: RegionKind::Ram,
        latency: 0,
    });
    let mut m = Machine::new(cfg).unwrap();
    m.set_frame_pool(PhysAddr::new(0x0008_0000), 512 << 10)
        .unwrap();
    m
}

fn small_layout(last_pid: u8) -> Layout {
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
type FassModel = Fass<CleanFirstRoundRobin, 64, 16, 4>;
type Classic = TableSwitch<64, 4>;

fn fass_on(m: &mut Machine, layout: Layout) -> FassModel {
    fass_with(m, layout, RecycleRule::default())
}

/// The kernel's table on the model: a fresh first-level table with one
/// section of kernel RAM (the start of the kernel region, PA 0, kernel
/// only, domain 0), loaded in the TTBR, vouched for.
fn kernel_table(m: &mut Machine, layout: &Layout) -> KernelTable {
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
    m.set_ttbr(root.pa.as_u32());
    // SAFETY: the model's register writes reach no host memory; the table
    // stays allocated in the machine for as long as it lives.
    unsafe { KernelTable::new(&*m, root.pa, L1Encoding::Arm9, layout, d(0)) }.unwrap()
}

fn fass_with(m: &mut Machine, layout: Layout, rule: RecycleRule) -> FassModel {
    let table = kernel_table(m, &layout);
    m.set_dacr(Dacr::only(d(0), DomainAccess::Client));
    m.set_sctlr(sctlr::M | sctlr::C | sctlr::I);
    let mut cpd = Cpd::new(table);
    // SAFETY: the model's RAM banks are heap memory that stays put when the
    // machine moves, and every test keeps its machine beside its manager
    // for as long as the manager is used; the CPD is never freed.
    unsafe { cpd.pin(&*m) }.unwrap();
    Fass::new(cpd, DomainSet::EMPTY, CleanFirstRoundRobin::default())
        .unwrap()
        .with_recycle_rule(rule)
}

fn classic_on(m: &mut Machine, kind: TableKind, layout: Layout) -> Classic {
    let table = kernel_table(m, &layout);
    m.set_dacr(Dacr::only(d(0), DomainAccess::Client).with(d(1), DomainAccess::Client));
    m.set_sctlr(sctlr::M | sctlr::C | sctlr::I);
    TableSwitch::new(kind, d(1), table)
}

fn seg_spec(g: usize) -> SegmentSpec {
    SegmentSpec {
        base: VirtAddr::new(SEG_BASE[g]),
        pa: PhysAddr::new(SEG_PA[g]),
        size: MIB,
        ap: AccessPermission::ReadWrite,
        cache: CachePolicy::WriteBack,
    }
}

#[derive(Clone, Debug)]
enum Op {
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

fn op(spaces: u16) -> impl Strategy<Value = Op> {
    let s = 0..spaces;
    prop_oneof![
        3 => s.clone().prop_map(Op::Create),
        1 => s.clone().prop_map(Op::Destroy),
        4 => (s.clone(), 0..8u8).prop_map(|(s, i)| Op::MapLow(s, i)),
        3 => (s.clone(), 0..12u8).prop_map(|(s, i)| Op::MapHigh(s, i)),
        3 => (s.clone(), any::<u8>()).prop_map(|(s, i)| Op::Unmap(s, i)),
        1 => (s.clone(), 0..2u8, any::<bool>()).prop_map(|(s, g, w)| Op::MapSeg(s, g, w)),
        1 => (s.clone(), 0..2u8).prop_map(|(s, g)| Op::UnmapSeg(s, g)),
        2 => (s, any::<bool>()).prop_map(|(s, l)| Op::Switch(s, l)),
        6 => (any::<u8>(), any::<bool>()).prop_map(|(n, l)| Op::SwitchLive(n, l)),
        10 => (0..32u8, any::<u16>()).prop_map(|(a, o)| Op::Load(a, o)),
        10 => (0..32u8, any::<u16>(), any::<u32>()).prop_map(|(a, o, v)| Op::Store(a, o, v)),
    ]
}

/// The reference model.
#[derive(Default)]
struct Reference {
    /// Per space: VA -> frame, and which segments it maps.
    spaces: HashMap<u16, (BTreeMap<u32, u32>, [bool; 2])>,
    /// Last value stored at each physical word (RAM starts zeroed).
    mem: HashMap<u32, u32>,
    free: VecDeque<u32>,
    current: Option<u16>,
}

/// A fast fault path tried before [`SwitchStrategy::resolve`] (`None`:
/// not taken, resolve generally).
type Fast<T> = fn(&mut T, &mut Machine, u32, u32) -> Option<Resolution>;

fn no_fast<T>(_: &mut T, _: &mut Machine, _: u32, _: u32) -> Option<Resolution> {
    None
}

fn fass_fast(f: &mut FassModel, m: &mut Machine, fsr: u32, far: u32) -> Option<Resolution> {
    f.resolve_fast(m, fsr, far)
}

struct Harness<T: SwitchStrategy> {
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

fn low_va(i: u8) -> u32 {
    u32::from(i / 4) * MIB + u32::from(i % 4) * PAGE + 0x8000
}

fn high_va(windows: &[u32; 3], i: u8) -> u32 {
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
                        Resolution::NotFass(_) => return Err(fsr),
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
                let Some((pages, _)) = self.r.spaces.get(&s) else {
                    let r =
                        self.t
                            .unmap_pages(&mut self.m, SpaceId(s), VirtAddr::new(0x8000), PAGE);
                    return check(r == Err(FassError::UnknownSpace(SpaceId(s))), "unmap", &r);
                };
                if pages.is_empty() {
                    let r = self.t.unmap_pages(
                        &mut self.m,
                        SpaceId(s),
                        VirtAddr::new(low_va(i % 8)),
                        PAGE,
                    );
                    return check(matches!(r, Err(FassError::Space(_))), "unmap unmapped", &r);
                }
                let (va, pa) = pages
                    .iter()
                    .nth(usize::from(i) % pages.len())
                    .map(|(v, p)| (*v, *p))
                    .unwrap();
                let r = self
                    .t
                    .unmap_pages(&mut self.m, SpaceId(s), VirtAddr::new(va), PAGE);
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
                        let l1a = (self.m.ttbr() & !0x3FFF) | ((mva >> 20) * 4);
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
            VirtAddr::new(va),
            PhysAddr::new(pa),
            PAGE,
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

fn check<E: std::fmt::Debug>(ok: bool, what: &str, r: &Result<(), E>) -> Result<(), String> {
    if ok {
        Ok(())
    } else {
        Err(format!("{what}: unexpected {r:?}"))
    }
}

fn cases(default: u32) -> u32 {
    std::env::var("FASS_PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn run_isolation<T: SwitchStrategy>(
    name: &str,
    default_cases: u32,
    spaces: u16,
    make: impl Fn(&mut Machine) -> (T, [u32; 3], bool),
    describe: fn(&T, &Machine, u16, u32) -> String,
    fast: Fast<T>,
) -> [u64; 8] {
    let mut runner = TestRunner::new(PtConfig {
        cases: cases(default_cases),
        failure_persistence: None,
        max_shrink_iters: 200,
        // ChaCha in a debug build costs more than the model itself.
        rng_algorithm: proptest::test_runner::RngAlgorithm::XorShift,
        ..PtConfig::default()
    });
    let totals = std::cell::Cell::new([0u64; 8]);
    let result = runner.run(&proptest::collection::vec(op(spaces), 500), |ops| {
        let mut m = machine();
        let (mut t, windows, guaranteed) = make(&mut m);
        for g in 0..2 {
            t.create_segment(SegmentId(g as u16), seg_spec(g)).unwrap();
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
            h.step(o)
                .map_err(|e| TestCaseError::fail(format!("op {i} {o:?}: {e}")))?;
        }
        let s = h.t.stats();
        let mut t = totals.get();
        t[0] += s.switches;
        t[1] += s.full_flushes;
        t[2] += s.collisions + s.pid_shares;
        t[3] += h.m.counters().write_backs;
        t[4] += s.recycles_exclusive;
        t[5] += s.window_flushes;
        t[6] += h.fast_hits;
        t[7] += h.lean_switches;
        totals.set(t);
        Ok(())
    });
    if let Err(e) = result {
        panic!("{name}: {e}");
    }
    let totals = totals.get();
    // The runs must exercise what they claim to: lean switches mixed in.
    assert!(
        totals[0] > 0 && totals[3] > 0 && totals[7] > 0,
        "{name}: {totals:?}"
    );
    eprintln!(
        "{name}: switches {} (lean {}) full flushes {} collisions+pid shares {} write-backs {} \
         unflushed exclusive recycles {} window-guard flushes {} fast-path resolutions {}",
        totals[0], totals[7], totals[1], totals[2], totals[3], totals[4], totals[5], totals[6]
    );
    totals
}

fn describe_fass(f: &FassModel, m: &Machine, s: u16, mva: u32) -> String {
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

#[test]
fn fass_isolation_more_spaces_than_domains() {
    // 64 space ids, 15 free domains (two segments pin two while mapped);
    // 63 PIDs top-down, fixed pages in windows 63..61 collide with the
    // first spaces' low pages. Default rule: window-exclusive spaces' dirty
    // domains are recycled without a flush, and the fixed pages in their
    // windows must be caught by the window guard.
    assert_eq!(
        fass_on(&mut machine(), Layout::DEMO).recycle_rule(),
        RecycleRule::ExclusiveWindows
    );
    let t = run_isolation(
        "fass, exclusive windows",
        2000,
        64,
        |m| (fass_on(m, Layout::DEMO), [63, 62, 61], false),
        describe_fass,
        fass_fast,
    );
    // The runs reach both the unflushed recycling and its guard, and the
    // fast fault path (the general one takes what it declines).
    assert!(t[4] > 0 && t[5] > 0 && t[6] > 0, "{t:?}");
}

#[test]
fn fass_isolation_conservative_rule() {
    let t = run_isolation(
        "fass, conservative",
        500,
        64,
        |m| {
            (
                fass_with(m, Layout::DEMO, RecycleRule::Conservative),
                [63, 62, 61],
                false,
            )
        },
        describe_fass,
        no_fast,
    );
    // Nothing is ever left in a window, so the guard never fires.
    assert_eq!((t[4], t[5], t[6]), (0, 0, 0), "{t:?}");
}

#[test]
fn fcse_best_effort_isolation_more_spaces_than_pids() {
    // 4 PIDs for 12 spaces: PIDs shared, spaces growing large.
    run_isolation(
        "fcse best effort",
        2000,
        12,
        |m| {
            (
                classic_on(m, TableKind::Fcse(PidMode::BestEffort), small_layout(4)),
                [4, 3, 2],
                false,
            )
        },
        |_, _, _, _| String::new(),
        no_fast,
    );
}

#[test]
fn fcse_guaranteed_and_naive_isolation() {
    run_isolation(
        "fcse guaranteed",
        500,
        12,
        |m| {
            (
                classic_on(m, TableKind::Fcse(PidMode::Guaranteed), small_layout(8)),
                [8, 7, 6],
                true,
            )
        },
        |_, _, _, _| String::new(),
        no_fast,
    );
    run_isolation(
        "naive",
        500,
        12,
        |m| {
            (
                classic_on(m, TableKind::Naive, small_layout(8)),
                [8, 7, 6],
                false,
            )
        },
        |_, _, _, _| String::new(),
        no_fast,
    );
}

/// A ring of `n` spaces, each touching two pages per turn.
fn ring(n: u16, rounds: u32, rule: RecycleRule) -> (armv5_sim::Counters, fass::Stats, u32) {
    let mut m = machine();
    let mut f = fass_with(&mut m, Layout::DEMO, rule);
    for s in 0..n {
        f.create_space(SpaceId(s)).unwrap();
        for p in 0..2u32 {
            let pa = (u32::from(s) * 2 + p + 1) * PAGE;
            f.map_page(
                &mut m,
                SpaceId(s),
                VirtAddr::new(0x8000 + p * MIB),
                PhysAddr::new(pa),
                AccessPermission::ReadWrite,
                CachePolicy::WriteBack,
            )
            .unwrap();
        }
    }
    let turn = |m: &mut Machine, f: &mut FassModel, s: u16, round: u32| {
        SwitchStrategy::switch_to(f, m, SpaceId(s)).unwrap();
        for p in 0..2u32 {
            let va = VirtAddr::new(0x8000 + p * MIB);
            let v = round * 1000 + u32::from(s);
            loop {
                match m.store(va, Width::Word, v, Privilege::User) {
                    Ok(()) => break,
                    Err(_) => {
                        let (fsr, far) = (m.dfsr(), m.far());
                        assert!(matches!(
                            f.resolve(m, fsr, far).unwrap(),
                            Resolution::Resolved { .. }
                        ));
                    }
                }
            }
            if round > 0 {
                // The value of this space's previous turn was still there.
                assert_eq!(m.load(va, Width::Word, Privilege::User), Ok(v));
            }
        }
    };
    for s in 0..n {
        turn(&mut m, &mut f, s, 0);
    }
    turn(&mut m, &mut f, 0, 0);
    let (c0, s0) = (m.counters().clone(), *f.stats());
    let mut switches = 0;
    for round in 1..=rounds {
        for s in 1..n {
            turn(&mut m, &mut f, s, round);
            switches += 1;
        }
        turn(&mut m, &mut f, 0, round);
        switches += 1;
    }
    (m.counters() - &c0, f.stats().since(&s0), switches)
}

#[test]
fn ring_within_free_domains_switches_without_flush_or_tlb_invalidation() {
    for (n, rule) in [2u16, 8, 15]
        .into_iter()
        .flat_map(|n| [RecycleRule::Conservative, RecycleRule::ExclusiveWindows].map(|r| (n, r)))
    {
        let (c, s, switches) = ring(n, 5, rule);
        assert_eq!(s.switches, u64::from(switches));
        assert_eq!(switches, u32::from(n) * 5);
        assert_eq!(c.cache_whole_ops, 0, "n={n}: {c}");
        assert_eq!(
            c.tlb_invalidate_all + c.tlb_invalidate_entry,
            0,
            "n={n}: {c}"
        );
        assert_eq!(c.total_faults(), 0, "n={n}: {c}");
        assert_eq!(c.dacr_writes, u64::from(switches));
        assert_eq!(c.fcseidr_writes, u64::from(switches));
        assert_eq!(
            (
                s.full_flushes,
                s.tlb_only,
                s.recycles_clean + s.recycles_dirty + s.recycles_exclusive
            ),
            (0, 0, 0)
        );
    }
}

#[test]
fn ring_beyond_free_domains_recycles_and_counts_it() {
    let (c, s, switches) = ring(20, 5, RecycleRule::Conservative);
    assert_eq!(switches, 100);
    // Every switch to a space without a domain recycles one (dirty: every
    // space ran since the last flush, so round-robin recycling flushes).
    assert!(s.recycles_dirty + s.recycles_clean >= 5 * 5, "{s:?}");
    assert_eq!(s.full_flushes, s.recycles_dirty, "{s:?}");
    assert_eq!(s.recycles_exclusive, 0, "{s:?}");
    // Each flush is one whole D clean+invalidate and one I invalidate on the model.
    assert_eq!(c.cache_whole_ops, 2 * s.full_flushes, "{c}");
    assert!(c.tlb_invalidate_all >= s.full_flushes);
}

#[test]
fn ring_beyond_free_domains_of_exclusive_spaces_recycles_without_flushing() {
    // Every space maps only inside its own window at a PID of its own:
    // each recycling clears the slots and invalidates the TLB, nothing
    // else, and every value a space stored on its previous turn is still
    // read back (from the lines it left, or from memory).
    let (c, s, switches) = ring(20, 5, RecycleRule::ExclusiveWindows);
    assert_eq!(switches, 100);
    assert!(s.recycles_exclusive >= 5 * 5, "{s:?}");
    assert_eq!(
        (
            s.full_flushes,
            s.recycles_dirty,
            s.window_flushes,
            s.collisions
        ),
        (0, 0, 0, 0),
        "{s:?}"
    );
    assert_eq!(c.cache_whole_ops, 0, "{c}");
    // One TLB invalidation per recycling (each victim owned two slots).
    assert_eq!(s.tlb_only, s.recycles_exclusive + s.recycles_clean, "{s:?}");
    assert_eq!(c.tlb_invalidate_all, s.tlb_only, "{c}");
}

/// Builds `n` spaces on the model, each with one low page at 0x8000
/// (PIDs 63, 62, ... top-down), under `rule`.
fn spaces_with_low_page(n: u16, rule: RecycleRule) -> (Machine, FassModel) {
    let mut m = machine();
    let mut f = fass_with(&mut m, Layout::DEMO, rule);
    for s in 0..n {
        f.create_space(SpaceId(s)).unwrap();
        f.map_page(
            &mut m,
            SpaceId(s),
            VirtAddr::new(0x8000),
            PhysAddr::new((u32::from(s) + 1) * PAGE),
            AccessPermission::ReadWrite,
            CachePolicy::WriteBack,
        )
        .unwrap();
    }
    (m, f)
}

/// Runs an access of the current space, resolving FASS faults.
fn access(m: &mut Machine, f: &mut FassModel, va: u32, store: Option<u32>) -> u32 {
    for _ in 0..4 {
        let r = match store {
            Some(v) => m
                .store(VirtAddr::new(va), Width::Word, v, Privilege::User)
                .map(|()| v),
            None => m.load(VirtAddr::new(va), Width::Word, Privilege::User),
        };
        match r {
            Ok(v) => return v,
            Err(_) => {
                let (fsr, far) = (m.dfsr(), m.far());
                assert!(matches!(
                    f.resolve(m, fsr, far).unwrap(),
                    Resolution::Resolved { .. }
                ));
            }
        }
    }
    panic!("access {va:#x} kept faulting");
}

#[test]
fn a_fixed_page_in_a_recycled_exclusive_window_never_sees_the_lines_left_there() {
    // Space 0 (PID 63) stores at its low page, so a dirty line sits at MVA
    // 0x7E00_8000. Space 16 maps a fixed page at that very MVA. Spaces 1..=15
    // run, so space 0's dirty domain is recycled without a flush; then space
    // 16 reads its page: it must see its own frame (zero), not space 0's line.
    let (mut m, mut f) = spaces_with_low_page(17, RecycleRule::ExclusiveWindows);
    let mva = 63 << 25 | 0x8000;
    f.map_page(
        &mut m,
        SpaceId(16),
        VirtAddr::new(mva),
        PhysAddr::new(0x0004_0000),
        AccessPermission::ReadWrite,
        CachePolicy::WriteBack,
    )
    .unwrap();
    assert!(!f.is_window_exclusive(SpaceId(16)).unwrap());
    f.switch_to(&mut m, SpaceId(0)).unwrap();
    assert_eq!(access(&mut m, &mut f, 0x8000, None), 0);
    access(&mut m, &mut f, 0x8000, Some(0xA0A0_A0A0));
    for s in 1..=15 {
        f.switch_to(&mut m, SpaceId(s)).unwrap();
    }
    assert_eq!(f.domain_of(SpaceId(0)).unwrap(), None);
    assert_eq!(f.stats().recycles_exclusive, 1);
    assert_eq!(f.stats().full_flushes, 0);
    assert!(f.window_lines().may_hold(FcsePid::new(63).unwrap()));
    f.switch_to(&mut m, SpaceId(16)).unwrap();
    let before = *f.stats();
    assert_eq!(
        access(&mut m, &mut f, mva, None),
        0,
        "stale line of space 0"
    );
    let d = f.stats().since(&before);
    assert_eq!(
        (d.full_flushes, d.window_flushes, d.collisions),
        (1, 1, 1),
        "{d:?}"
    );
    // Space 0 reads its own value back (written back by the flush).
    f.switch_to(&mut m, SpaceId(0)).unwrap();
    assert_eq!(access(&mut m, &mut f, 0x8000, None), 0xA0A0_A0A0);
}

#[test]
fn destroying_a_space_whose_recycled_lines_may_be_cached_flushes_before_its_frame_is_reused() {
    // Space 0 (PID 63) stores at its low page (frame 0x1000); its dirty
    // domain is recycled without a flush, so the line stays. When space 0 is
    // destroyed, its frame goes to space 16 at another MVA: space 16 must
    // read the value space 0 stored (written back by the destroy's flush),
    // and no later write-back may overwrite what space 16 stores.
    let (mut m, mut f) = spaces_with_low_page(17, RecycleRule::ExclusiveWindows);
    f.switch_to(&mut m, SpaceId(0)).unwrap();
    assert_eq!(access(&mut m, &mut f, 0x8000, None), 0);
    access(&mut m, &mut f, 0x8000, Some(0x0BAD_CAFE));
    for s in 1..=15 {
        f.switch_to(&mut m, SpaceId(s)).unwrap();
    }
    assert_eq!(f.domain_of(SpaceId(0)).unwrap(), None);
    let pid = f.pid_of(SpaceId(0)).unwrap();
    assert_eq!(
        f.window_lines().leftover(pid),
        fass::Leftover::One(SpaceId(0))
    );
    let before = *f.stats();
    f.destroy_space(&mut m, SpaceId(0)).unwrap();
    let destroy = f.stats().since(&before);
    f.map_page(
        &mut m,
        SpaceId(16),
        VirtAddr::new(0x0010_0000),
        PhysAddr::new(PAGE),
        AccessPermission::ReadWrite,
        CachePolicy::WriteBack,
    )
    .unwrap();
    f.switch_to(&mut m, SpaceId(16)).unwrap();
    assert_eq!(access(&mut m, &mut f, 0x0010_0000, None), 0x0BAD_CAFE);
    assert_eq!(destroy.full_flushes, 1, "{destroy:?}");
    assert!(!f.window_lines().any());
    // A space given the dead space's PID finds nothing of it either.
    f.create_space(SpaceId(0)).unwrap();
    assert_eq!(f.pid_of(SpaceId(0)).unwrap(), pid);
    f.map_page(
        &mut m,
        SpaceId(0),
        VirtAddr::new(0x8000),
        PhysAddr::new(0x0004_0000),
        AccessPermission::ReadWrite,
        CachePolicy::WriteBack,
    )
    .unwrap();
    f.switch_to(&mut m, SpaceId(0)).unwrap();
    assert_eq!(access(&mut m, &mut f, 0x8000, None), 0);
}

/// Runs an access of the current space like [`access`], trying
/// [`Fass::resolve_fast`] first if `fast`; logs every resolution and
/// whether the fast path gave it.
fn access_logged(
    m: &mut Machine,
    f: &mut FassModel,
    va: u32,
    fast: bool,
    log: &mut Vec<(Resolution, bool, u32)>,
) -> u32 {
    for _ in 0..4 {
        match m.load(VirtAddr::new(va), Width::Word, Privilege::User) {
            Ok(v) => return v,
            Err(_) => {
                let (fsr, far) = (m.dfsr(), m.far());
                let gen = f.generation();
                let quick = if fast {
                    f.resolve_fast(m, fsr, far)
                } else {
                    None
                };
                if quick.is_some() {
                    assert_eq!(f.generation(), gen, "the fast path changed the generation");
                }
                let r = match quick {
                    Some(r) => r,
                    None => f.resolve(m, fsr, far).unwrap(),
                };
                assert!(matches!(r, Resolution::Resolved { .. }), "{r:?}");
                log.push((r, quick.is_some(), far));
            }
        }
    }
    panic!("access {va:#x} kept faulting");
}

#[test]
fn the_fast_fault_path_does_what_the_general_one_does_or_declines() {
    // Spaces 0 and 1 (PIDs 63, 62) map two fixed pages each at the same
    // MVAs in window 61: each turn collides twice, first with a dirty
    // domain (a flush: the fast path declines), then with the domain that
    // flush cleaned (TLB only: the fast path resolves it).
    let fixed = [61 << 25 | 0x8000, 61 << 25 | 0x10_8000];
    let run = |fast: bool| {
        let (mut m, mut f) = spaces_with_low_page(2, RecycleRule::ExclusiveWindows);
        for s in 0..2u16 {
            for (i, va) in fixed.iter().enumerate() {
                f.map_page(
                    &mut m,
                    SpaceId(s),
                    VirtAddr::new(*va),
                    PhysAddr::new(0x0004_0000 + (u32::from(s) * 2 + i as u32) * PAGE),
                    AccessPermission::ReadWrite,
                    CachePolicy::WriteBack,
                )
                .unwrap();
            }
        }
        let mut log = Vec::new();
        let mut seen = Vec::new();
        for turn in 0..6u16 {
            f.switch_to(&mut m, SpaceId(turn % 2)).unwrap();
            seen.push(access_logged(&mut m, &mut f, 0x8000, fast, &mut log));
            for va in fixed {
                seen.push(access_logged(&mut m, &mut f, va, fast, &mut log));
            }
        }
        let slots: Vec<_> = fixed
            .iter()
            .map(|va| {
                let slot = (*va >> 20) as usize;
                (f.cpd().raw(&m, slot).unwrap(), f.domains().slot_owner(slot))
            })
            .collect();
        (
            log,
            seen,
            *f.stats(),
            f.generation(),
            slots,
            m.counters().clone(),
        )
    };
    let (fast_log, fast_seen, fast_stats, fast_gen, fast_slots, fast_hw) = run(true);
    let (gen_log, gen_seen, gen_stats, gen_gen, gen_slots, gen_hw) = run(false);
    let strip =
        |l: &[(Resolution, bool, u32)]| l.iter().map(|(r, _, a)| (*r, *a)).collect::<Vec<_>>();
    assert_eq!(strip(&fast_log), strip(&gen_log));
    assert_eq!(fast_seen, gen_seen);
    assert_eq!(fast_stats, gen_stats);
    assert_eq!(fast_gen, gen_gen);
    assert_eq!(fast_slots, gen_slots);
    assert_eq!(fast_hw, gen_hw);
    // Every kind occurred, and the fast path took exactly the flush-free ones.
    let flushed = |r: &Resolution| match r {
        Resolution::Resolved { flushed, .. } => Some(*flushed),
        Resolution::NotFass(_) => None,
    };
    for (r, quick, _) in &fast_log {
        assert_eq!(*quick, flushed(r) != Some(Flushed::Full), "{r:?}");
    }
    for kind in [Flushed::Nothing, Flushed::TlbOnly, Flushed::Full] {
        assert!(
            fast_log.iter().any(|(r, _, _)| flushed(r) == Some(kind)),
            "{kind:?}: {fast_log:?}"
        );
    }
}

#[test]
fn the_fast_fault_path_needs_a_pinned_cpd() {
    let mut m = machine();
    let cpd = Cpd::new(kernel_table(&mut m, &Layout::DEMO));
    assert!(!cpd.is_pinned());
    assert_eq!(cpd.read_pinned(0), None);
    let mut f: FassModel =
        Fass::new(cpd, DomainSet::EMPTY, CleanFirstRoundRobin::default()).unwrap();
    f.create_space(SpaceId(0)).unwrap();
    f.map_page(
        &mut m,
        SpaceId(0),
        VirtAddr::new(0x8000),
        PhysAddr::new(PAGE),
        AccessPermission::ReadWrite,
        CachePolicy::WriteBack,
    )
    .unwrap();
    f.switch_to(&mut m, SpaceId(0)).unwrap();
    let far = 0x8000;
    assert_eq!(f.resolve_fast(&mut m, 0x005, far), None);
    assert!(matches!(
        f.resolve(&mut m, 0x005, far).unwrap(),
        Resolution::Resolved {
            flushed: Flushed::Nothing,
            ..
        }
    ));
}
