//! Host microbenchmarks (criterion) of the data structures on the switch
//! and fault paths. Host time, not ARM time: they compare implementations
//! and catch regressions, nothing more.
//!
//! * `domain/allocate_free`: allocating a free domain and releasing it;
//! * `domain/acquire_recycle/<policy>`: taking a domain when all 15 are
//!   owned (victim choice + eviction of its CPD slots) for each policy;
//! * `cpd/fill_on_fault`: `Fass::resolve` of a section fault in an empty
//!   CPD slot (on the armv5-sim model, whose CP15 effects are included);
//! * `pid/allocate_release/<mode>`: allocating and releasing a PID with 62
//!   taken (guaranteed) and with all 63 taken (best effort: sharing);
//! * `frame/lookup` and `frame/state_change`: `FrameTable::info` of a frame
//!   and a checked state change of one frame (`check_transition` +
//!   `init_range` of one frame, as `spm` exposes it).

use armv5_sim::{presets, sctlr, Machine, MemoryKind, MemoryRegion};
use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use fass::domain::Owner;
use fass::policy::{CleanFirstLru, CleanFirstRandom, CleanFirstRoundRobin, FewestSlots};
use fass::{
    Cpd, DefaultPolicy, DomainSet, DomainTable, Fass, Layout, PidAllocator, PidMode, SpaceId,
    SwitchStrategy, VictimPolicy,
};
use mmu_armv5::descriptor::{AccessPermission, CachePolicy};
use mmu_armv5::regs::{Dacr, DomainAccess};
use mmu_armv5::regs::{Far, Fsr};
use mmu_armv5::regs::{Sctlr, Ttbr};
use mmu_armv5::size::{Frame, PageRange};
use mmu_armv5::{Domain, PhysAddr, VirtAddr};
use spm::{AddressSpace, FrameDesc, FrameState, FrameTable, InitialUse, Location, PhysRegion};
use std::hint::black_box;

fn kernel() -> Domain {
    Domain::new(0).expect("domain 0")
}

/// A domain table with every free domain owned, each with 3 CPD slots.
fn full_table() -> DomainTable {
    let mut t = DomainTable::new(kernel(), DomainSet::EMPTY).expect("domain table");
    for i in 1..16u16 {
        let d = t.allocate(Owner::Space(SpaceId(i))).expect("free domain");
        for s in 0..3 {
            t.claim_slot(d, usize::from(i) * 32 + s).expect("slot");
        }
    }
    t
}

fn recycle<P: VictimPolicy>(c: &mut Criterion, name: &str, mut policy: P) {
    c.bench_function(&format!("domain/acquire_recycle/{name}"), |b| {
        b.iter_batched_ref(
            full_table,
            |t| {
                let _ = black_box(
                    t.acquire(
                        Owner::Space(SpaceId(100)),
                        DomainSet::EMPTY,
                        &mut policy,
                        |slot| {
                            black_box(slot);
                        },
                    )
                    .expect("victim"),
                );
            },
            BatchSize::SmallInput,
        );
    });
}

fn domains(c: &mut Criterion) {
    c.bench_function("domain/allocate_free", |b| {
        let mut t = DomainTable::new(kernel(), DomainSet::EMPTY).expect("domain table");
        b.iter(|| {
            let d = t.allocate(Owner::Space(SpaceId(1))).expect("free domain");
            black_box(d);
            black_box(t.release(Owner::Space(SpaceId(1)), |s| {
                black_box(s);
            }));
        });
    });
    recycle(c, "rr", CleanFirstRoundRobin::default());
    recycle(c, "random", CleanFirstRandom::default());
    recycle(c, "fewest", FewestSlots);
    recycle(c, "lru", CleanFirstLru::default());
}

type F = Fass<DefaultPolicy, 4, 8, 1>;

fn fass_ready() -> (Machine, F) {
    let mut cfg = presets::arm926ejs().config;
    cfg.regions.push(MemoryRegion {
        base: PhysAddr::new(0),
        size: 2 << 20,
        kind: MemoryKind::Ram,
        latency: 0,
    });
    let mut m = Machine::new(cfg).expect("model");
    m.set_frame_pool(PhysAddr::new(1 << 20), 1 << 20)
        .expect("frame pool");
    let table = bench::model::kernel_table(&mut m).expect("CPD");
    m.set_ttbr(Ttbr::new(table.root()).unwrap());
    m.set_dacr(Dacr::only(kernel(), DomainAccess::Client));
    m.set_sctlr(Sctlr::from_bits(sctlr::M | sctlr::C | sctlr::I));
    let mut f = F::new(Cpd::new(table), DomainSet::EMPTY, DefaultPolicy::default()).expect("fass");
    f.add_space(SpaceId(1)).expect("space");
    f.map_pages(
        &mut m,
        SpaceId(1),
        PageRange::from_bytes(VirtAddr::new(0x8000), 0x1000).expect("pages"),
        Frame::from_start(PhysAddr::new(0x8000)).expect("frame"),
        AccessPermission::ReadWrite,
        CachePolicy::WriteBack,
    )
    .expect("map");
    SwitchStrategy::switch_to(&mut f, &mut m, SpaceId(1)).expect("switch");
    (m, f)
}

fn cpd(c: &mut Criterion) {
    c.bench_function("cpd/fill_on_fault", |b| {
        b.iter_batched_ref(
            fass_ready,
            |(m, f)| {
                // Section translation fault (status 0x5) at the space's page.
                let _ = black_box(
                    f.resolve(m, Fsr::from_bits(0x5), Far::from_bits(0x8000))
                        .expect("resolve"),
                );
            },
            BatchSize::PerIteration,
        );
    });
}

fn pids(c: &mut Criterion) {
    for (name, mode, taken) in [
        ("guaranteed", PidMode::Guaranteed, 62u16),
        ("best_effort_shared", PidMode::BestEffort, 63),
    ] {
        let mut a = PidAllocator::new(&Layout::DEMO, mode);
        for s in 0..taken {
            let _ = a.allocate(SpaceId(s)).expect("pid");
        }
        c.bench_function(&format!("pid/allocate_release/{name}"), |b| {
            b.iter(|| {
                let got = a.allocate(SpaceId(500)).expect("pid");
                a.release(black_box(got.context)).expect("release");
            });
        });
    }
}

fn frames(c: &mut Criterion) {
    let ram = PhysRegion::new(
        PhysAddr::new(0),
        128 << 20,
        Location::Ram,
        InitialUse::Resource,
    )
    .expect("RAM");
    let regions = [ram];
    let mut fr = vec![FrameDesc::default(); FrameTable::<1>::frames_needed(&regions)];
    let mut se = vec![spm::SectionSummary::default(); FrameTable::<1>::sections_needed(&regions)];
    let mut t = FrameTable::<1>::new(&regions, &mut fr, &mut se).expect("frame table");
    let pa = PhysAddr::new(0x0123_4000);
    c.bench_function("frame/lookup", |b| {
        b.iter(|| black_box(t.info(black_box(pa)).expect("described")));
    });
    let me = SpaceId(7);
    c.bench_function("frame/state_change", |b| {
        let mut to_user = true;
        b.iter(|| {
            let from = t.desc(pa).expect("described").state();
            let to = if to_user {
                FrameState::User(me)
            } else {
                FrameState::Resource
            };
            spm::ops::check_transition(AddressSpace::Kernel, pa, from, to).expect("allowed");
            t.init_range(Frame::from_start(pa).unwrap(), to, true)
                .expect("set");
            to_user = !to_user;
        });
    });
}

criterion_group!(benches, domains, cpd, pids, frames);
criterion_main!(benches);
