//! The records, and every strategy's lean path on the recording mock.

use super::*;
use crate::switch::tests::{frame, page, pages};
use mmu_armv5::regs::{Far, Fsr};

#[test]
fn a_record_is_sixteen_bytes_and_an_absent_one_costs_nothing_more() {
    assert_eq!(core::mem::size_of::<LeanSwitch>(), 16);
    assert_eq!(core::mem::size_of::<Option<LeanSwitch>>(), 16);
}

#[test]
fn accessors_follow_the_kind() {
    let pid = FcsePid::new(5).unwrap();
    let d = Domain::new(3).unwrap();
    let dacr = Dacr::from_bits(0x41);
    let f = LeanSwitch::fass(7, dacr, pid, d);
    assert_eq!(
        (f.dacr(), f.ttbr(), f.fcse_pid(), f.maintenance()),
        (Some(dacr), None, Some(pid), Maintenance::Nothing)
    );
    let ttbr = Ttbr::from_bits(0x0100_4000);
    let c = LeanSwitch::table(7, LeanKind::Fcse, ttbr, pid);
    assert_eq!(
        (c.dacr(), c.ttbr(), c.fcse_pid(), c.maintenance()),
        (None, Some(ttbr), Some(pid), Maintenance::InvalidateTlb)
    );
    let n = LeanSwitch::table(7, LeanKind::Naive, ttbr, FcsePid::ZERO);
    assert_eq!(
        (n.dacr(), n.ttbr(), n.fcse_pid(), n.maintenance()),
        (None, Some(ttbr), None, Maintenance::FlushCachesAndTlb)
    );
    let t: LeanTable<2> = [Some(f), None];
    assert_eq!(valid(&t, 0, 7), Some(f));
    assert_eq!(valid(&t, 0, 8), None);
    assert_eq!(valid(&t, 1, 7), None);
    assert_eq!(valid(&t, 9, 7), None);
}

use crate::classic::ClassicKind as Kind;
use crate::domain::DomainSet;
use crate::id::{SegmentId, SpaceId};
use crate::layout::{Layout, Region};
use crate::pid::PidMode;
use crate::resolve::Resolution;
use crate::segment::{SegmentAccess, SegmentSpec};
use crate::space::tests::{mem as table_mem, Mem};
use crate::switch::tests::{classic, classic_in, d, map, map_table, setup, Sys, F};
use crate::SwitchStrategy;
use mmu_armv5::descriptor::{AccessPermission, CachePolicy};
use mmu_armv5::regs::{Cp15Event, Cp15Op, Cp15Reg};
use mmu_armv5::{PhysAddr, VirtAddr};
use proptest::prelude::*;
use std::format;
use std::string::{String, ToString};
use std::vec::Vec;

fn events(sys: &Sys<'_>) -> Vec<Cp15Event> {
    sys.hw.cp15().events().to_vec()
}

/// FASS with `n` spaces, each mapping a low page, switched to (full) and
/// faulted in once.
fn fass_ring(mem: &mut Mem, n: u16) -> (F, Sys<'_>) {
    let (mut f, mut sys) = setup(mem, Layout::DEMO, DomainSet::EMPTY);
    for s in 0..n {
        f.add_space(SpaceId(s)).unwrap();
        map(
            &mut f,
            &mut sys,
            s,
            0x8000,
            0x0010_0000 + u32::from(s) * 0x1000,
        );
    }
    for s in 0..n {
        assert_eq!(f.switch_lean(&mut sys, SpaceId(s)), Err(StaleSwitch));
        f.switch_to(&mut sys, SpaceId(s)).unwrap();
        assert!(matches!(
            f.resolve(&mut sys, Fsr::from_bits(0x005), Far::from_bits(0x8000))
                .unwrap(),
            Resolution::Resolved { .. }
        ));
    }
    (f, sys)
}

#[test]
fn a_lean_fass_switch_writes_the_dacr_and_the_fcseidr_only() {
    let mut mem = table_mem();
    let (mut f, mut sys) = fass_ring(&mut mem, 3);
    let (gen, before) = (f.generation(), f.stats());
    for _round in 0..2 {
        for s in 0..3 {
            let id = SpaceId(s);
            sys.hw.cp15_mut().clear();
            f.switch_lean(&mut sys, id).unwrap();
            let dom = f.domain_of(id).unwrap().unwrap();
            assert_eq!(
                events(&sys),
                [
                    Cp15Event::Write(Cp15Reg::Dacr, f.dacr_of(id, dom).unwrap().bits()),
                    Cp15Event::Write(Cp15Reg::Fcseidr, f.pid_of(id).unwrap().fcseidr_value()),
                ]
            );
            // The manager follows: the space runs, its slot needs no fill.
            assert_eq!(f.current(), Some(id));
            assert!(f.runs(id));
            assert!(matches!(
                f.resolve(&mut sys, Fsr::from_bits(0x005), Far::from_bits(0x8000))
                    .unwrap(),
                Resolution::NotFass(_)
            ));
        }
    }
    let delta = f.stats().since(&before);
    assert_eq!(
        (delta.switches, delta.full_flushes, delta.tlb_only),
        (6, 0, 0)
    );
    assert_eq!(f.generation(), gen);
    // To the running space: nothing.
    sys.hw.cp15_mut().clear();
    f.switch_lean(&mut sys, SpaceId(2)).unwrap();
    assert!(events(&sys).is_empty());
    assert_eq!(f.stats().since(&before).switches, 6);
}

#[test]
fn a_lean_fcse_switch_is_ttbr_tlb_and_fcseidr() {
    for mode in [PidMode::Guaranteed, PidMode::BestEffort] {
        let mut mem = table_mem();
        let (mut t, mut sys) = classic(&mut mem, Kind::Fcse(mode));
        for s in 0..3 {
            t.create_space(&mut sys, SpaceId(s)).unwrap();
            assert_eq!(t.switch_lean(&mut sys, SpaceId(s)), Err(StaleSwitch));
            t.switch_to(&mut sys, SpaceId(s)).unwrap();
        }
        let (gen, before) = (t.generation(), t.stats());
        for s in [0u16, 1, 2, 0, 2, 1] {
            let id = SpaceId(s);
            sys.hw.cp15_mut().clear();
            let rec = t.lean_switch(id).unwrap();
            t.switch_lean(&mut sys, id).unwrap();
            assert_eq!(
                events(&sys),
                [
                    Cp15Event::Write(Cp15Reg::Ttbr, t.root_of(id).unwrap().as_u32()),
                    Cp15Event::Op(Cp15Op::InvalidateTlb, 0),
                    Cp15Event::Write(Cp15Reg::Fcseidr, t.pid_of(id).unwrap().fcseidr_value()),
                ],
                "{mode:?}"
            );
            assert_eq!(rec.maintenance(), Maintenance::InvalidateTlb);
            assert_eq!(t.current(), Some(id));
        }
        let delta = t.stats().since(&before);
        assert_eq!(
            (delta.switches, delta.tlb_only, delta.full_flushes),
            (6, 6, 0)
        );
        assert_eq!(t.generation(), gen);
    }
}

#[test]
fn a_lean_naive_switch_still_flushes_everything() {
    let mut mem = table_mem();
    let (mut t, mut sys) = classic(&mut mem, Kind::Naive);
    for s in 0..2 {
        t.create_space(&mut sys, SpaceId(s)).unwrap();
        t.switch_to(&mut sys, SpaceId(s)).unwrap();
    }
    let before = t.stats();
    for s in [0u16, 1, 0] {
        sys.hw.cp15_mut().clear();
        t.switch_lean(&mut sys, SpaceId(s)).unwrap();
        assert_eq!(
            events(&sys),
            [
                Cp15Event::TestClean {
                    invalidate: true,
                    clean: true
                },
                Cp15Event::Op(Cp15Op::DrainWriteBuffer, 0),
                Cp15Event::Op(Cp15Op::InvalidateICache, 0),
                Cp15Event::Write(Cp15Reg::Ttbr, t.root_of(SpaceId(s)).unwrap().as_u32()),
                Cp15Event::Op(Cp15Op::InvalidateTlb, 0),
            ]
        );
    }
    let delta = t.stats().since(&before);
    assert_eq!((delta.switches, delta.full_flushes), (3, 3));
    // A destroyed space's record goes with it, also when its id comes back.
    t.destroy_space(&mut sys, SpaceId(1)).unwrap();
    assert_eq!(t.switch_lean(&mut sys, SpaceId(1)), Err(StaleSwitch));
    t.create_space(&mut sys, SpaceId(1)).unwrap();
    assert_eq!(t.lean_switch(SpaceId(1)), None);
    assert_eq!(t.switch_lean(&mut sys, SpaceId(1)), Err(StaleSwitch));
    assert_eq!(t.switch_lean(&mut sys, SpaceId(200)), Err(StaleSwitch));
}

fn seg_spec(g: u16) -> SegmentSpec {
    SegmentSpec {
        base: VirtAddr::new(0x8000_0000 + u32::from(g) * (1 << 20)),
        pa: PhysAddr::new(0x0040_0000 + u32::from(g) * (1 << 20)),
        size: 1 << 20,
        ap: AccessPermission::ReadWrite,
        cache: CachePolicy::WriteBack,
    }
}

/// Asserts that `op` changes `f`'s generation (or not) as `bumps` says.
fn gen_change(
    f: &mut F,
    sys: &mut Sys<'_>,
    bumps: bool,
    what: &str,
    op: impl FnOnce(&mut F, &mut Sys<'_>),
) {
    let g = f.generation();
    op(f, sys);
    assert_eq!(f.generation() != g, bumps, "{what}");
}

#[test]
fn the_fass_generation_changes_exactly_on_the_events_that_stale_a_record() {
    let mut mem = table_mem();
    // Two usable domains: the third space recycles.
    let reserved = DomainSet::ALL.without(d(1)).without(d(2));
    let (f, mut sys) = setup(&mut mem, Layout::DEMO, reserved);
    let mut f = f.with_recycle_rule(crate::RecycleRule::Conservative);
    f.create_segment(SegmentId(0), seg_spec(0)).unwrap();
    let sw = |f: &mut F, sys: &mut Sys<'_>, s: u16| f.switch_to(sys, SpaceId(s)).unwrap();
    gen_change(&mut f, &mut sys, false, "create", |f, _| {
        f.add_space(SpaceId(0)).unwrap();
        f.add_space(SpaceId(1)).unwrap();
        f.add_space(SpaceId(2)).unwrap();
    });
    gen_change(&mut f, &mut sys, false, "map", |f, sys| {
        map(f, sys, 0, 0x8000, 0x0010_0000)
    });
    gen_change(
        &mut f,
        &mut sys,
        false,
        "switch with a free domain",
        |f, sys| sw(f, sys, 0),
    );
    gen_change(&mut f, &mut sys, false, "fill", |f, sys| {
        let _ = f
            .resolve(sys, Fsr::from_bits(0x005), Far::from_bits(0x8000))
            .unwrap();
    });
    gen_change(&mut f, &mut sys, false, "switch", |f, sys| sw(f, sys, 1));
    gen_change(&mut f, &mut sys, false, "lean switch", |f, sys| {
        f.switch_lean(sys, SpaceId(0)).unwrap();
    });
    gen_change(&mut f, &mut sys, false, "unmap", |f, sys| {
        f.unmap_page(sys, SpaceId(0), page(0x8000)).unwrap();
    });
    gen_change(&mut f, &mut sys, true, "recycle", |f, sys| sw(f, sys, 2));
    gen_change(&mut f, &mut sys, true, "segment mapped", |f, sys| {
        f.map_segment(
            sys,
            SpaceId(2),
            SegmentId(0),
            seg_spec(0).base,
            SegmentAccess::Client,
        )
        .unwrap();
    });
    gen_change(&mut f, &mut sys, true, "segment unmapped", |f, sys| {
        f.unmap_segment(sys, SpaceId(2), SegmentId(0)).unwrap();
    });
    // Space 0 lost its domain to the segment, space 1 to space 2.
    assert_eq!(f.domain_of(SpaceId(0)).unwrap(), None);
    assert_eq!(f.domain_of(SpaceId(1)).unwrap(), None);
    gen_change(
        &mut f,
        &mut sys,
        false,
        "destroy without a domain",
        |f, sys| {
            f.destroy_space(sys, SpaceId(0)).unwrap();
        },
    );
    f.add_space(SpaceId(3)).unwrap();
    gen_change(
        &mut f,
        &mut sys,
        false,
        "switches with a free domain",
        |f, sys| {
            sw(f, sys, 3);
            sw(f, sys, 2);
        },
    );
    assert!(f.lean_switch(SpaceId(3)).is_some());
    gen_change(&mut f, &mut sys, true, "release", |f, sys| {
        f.destroy_space(sys, SpaceId(3)).unwrap();
    });
    // A full flush cleaning another space's domain stales its record; the
    // running space's record is carried over.
    gen_change(
        &mut f,
        &mut sys,
        false,
        "switches with a free domain",
        |f, sys| {
            sw(f, sys, 1);
            sw(f, sys, 2);
        },
    );
    assert!(f.lean_switch(SpaceId(1)).is_some());
    gen_change(
        &mut f,
        &mut sys,
        true,
        "flush cleaning a domain",
        |f, sys| f.full_flush(sys),
    );
    assert_eq!(f.lean_switch(SpaceId(1)), None);
    assert_eq!(
        f.lean_switch(SpaceId(2)).unwrap().generation(),
        f.generation()
    );
    gen_change(
        &mut f,
        &mut sys,
        false,
        "flush cleaning nothing",
        |f, sys| f.full_flush(sys),
    );
    sys.hw.cp15_mut().clear();
    assert_eq!(f.switch_lean(&mut sys, SpaceId(1)), Err(StaleSwitch));
    assert!(events(&sys).is_empty());
    f.switch_lean(&mut sys, SpaceId(2)).unwrap();
}

#[test]
fn the_running_spaces_record_survives_what_leaves_it_right() {
    // FASS: a switch to the running space makes its stale record afresh.
    let mut mem = table_mem();
    let (mut f, mut sys) = fass_ring(&mut mem, 2);
    f.create_segment(SegmentId(0), seg_spec(0)).unwrap();
    f.map_segment(
        &mut sys,
        SpaceId(1),
        SegmentId(0),
        seg_spec(0).base,
        SegmentAccess::Client,
    )
    .unwrap();
    assert_eq!(f.lean_switch(SpaceId(1)), None);
    sys.hw.cp15_mut().clear();
    f.switch_to(&mut sys, SpaceId(1)).unwrap();
    assert!(events(&sys).is_empty());
    let rec = f.lean_switch(SpaceId(1)).unwrap();
    let dom = f.domain_of(SpaceId(1)).unwrap().unwrap();
    assert_eq!(rec.dacr(), Some(f.dacr_of(SpaceId(1), dom).unwrap()));
    f.switch_to(&mut sys, SpaceId(0)).unwrap();
    f.switch_lean(&mut sys, SpaceId(1)).unwrap();

    // FCSE guaranteed: a new space handed the dirty PID of a destroyed one
    // costs a flush, which cleans every PID but the running space's: only
    // the running space's record is carried over.
    let mut mem = table_mem();
    let (mut t, mut sys) = classic_in(&mut mem, Kind::Fcse(PidMode::Guaranteed), pids(3));
    for s in 0..3 {
        t.create_space(&mut sys, SpaceId(s)).unwrap();
        t.switch_to(&mut sys, SpaceId(s)).unwrap();
    }
    t.destroy_space(&mut sys, SpaceId(0)).unwrap();
    let before = t.stats();
    t.create_space(&mut sys, SpaceId(3)).unwrap();
    assert_eq!(t.stats().since(&before).full_flushes, 1);
    assert_eq!(t.lean_switch(SpaceId(1)), None);
    assert_eq!(
        t.lean_switch(SpaceId(2)).unwrap().generation(),
        t.generation()
    );
    t.switch_to(&mut sys, SpaceId(1)).unwrap();
    t.switch_lean(&mut sys, SpaceId(2)).unwrap();
}

fn tgen_change(
    t: &mut TableSwitch<8, 2>,
    sys: &mut Sys<'_>,
    bumps: bool,
    what: &str,
    op: impl FnOnce(&mut TableSwitch<8, 2>, &mut Sys<'_>),
) {
    let g = t.generation();
    op(t, sys);
    assert_eq!(t.generation() != g, bumps, "{what}");
}

use crate::classic::TableSwitch;

/// The demo layout with PIDs `1..=last` only.
fn pids(last: u8) -> Layout {
    Layout::new(
        FcsePid::new(1).unwrap(),
        FcsePid::new(last).unwrap(),
        Region::new(0x8000_0000, 1 << 30).unwrap(),
        Region::new(0xC000_0000, 1 << 30).unwrap(),
    )
    .unwrap()
}

#[test]
fn the_fcse_generation_changes_exactly_on_the_events_that_stale_a_record() {
    let mut mem = table_mem();
    let (mut t, mut sys) = classic_in(&mut mem, Kind::Fcse(PidMode::BestEffort), pids(2));
    let sw = |t: &mut TableSwitch<8, 2>, sys: &mut Sys<'_>, s: u16| {
        t.switch_to(sys, SpaceId(s)).unwrap()
    };
    tgen_change(&mut t, &mut sys, false, "create (PIDs 2, 1)", |t, sys| {
        t.create_space(sys, SpaceId(0)).unwrap();
        t.create_space(sys, SpaceId(1)).unwrap();
    });
    tgen_change(&mut t, &mut sys, false, "first switches", |t, sys| {
        sw(t, sys, 0);
        sw(t, sys, 1);
    });
    tgen_change(&mut t, &mut sys, false, "steady switches", |t, sys| {
        sw(t, sys, 0);
        t.switch_lean(sys, SpaceId(1)).unwrap();
        t.switch_lean(sys, SpaceId(0)).unwrap();
    });
    tgen_change(&mut t, &mut sys, false, "map, unmap", |t, sys| {
        map_table(t, sys, 0, 0x8000);
        t.unmap_pages(sys, SpaceId(0), pages(0x8000, 0x1000))
            .unwrap();
    });
    tgen_change(
        &mut t,
        &mut sys,
        false,
        "a third space shares PID 2",
        |t, sys| {
            t.create_space(sys, SpaceId(2)).unwrap();
        },
    );
    assert_eq!(t.pid_of(SpaceId(2)).unwrap(), t.pid_of(SpaceId(0)).unwrap());
    assert!(t.lean_switch(SpaceId(0)).is_some());
    // Space 2 runs at PID 2: its last user changes (and the flush that
    // takes space 0's lines out cleans PID 2 for space 2, PID 1 too).
    tgen_change(
        &mut t,
        &mut sys,
        true,
        "a PID's last user replaced",
        |t, sys| sw(t, sys, 2),
    );
    assert_eq!(t.lean_switch(SpaceId(0)), None);
    assert!(t.lean_switch(SpaceId(2)).is_some());
    sys.hw.cp15_mut().clear();
    assert_eq!(t.switch_lean(&mut sys, SpaceId(0)), Err(StaleSwitch));
    assert!(events(&sys).is_empty());
    // Back to 0 the full way: a flush (PID 2 reused).
    let before = t.stats();
    sw(&mut t, &mut sys, 0);
    assert_eq!(t.stats().since(&before).full_flushes, 1);
    tgen_change(
        &mut t,
        &mut sys,
        true,
        "grow large (PID 2 -> 0)",
        |t, sys| {
            map_table(t, sys, 0, 0x0400_0000);
        },
    );
    assert_eq!(t.lean_switch(SpaceId(0)), None);
    sw(&mut t, &mut sys, 1);
    // Large spaces switch the full way only.
    sw(&mut t, &mut sys, 0);
    assert_eq!(t.lean_switch(SpaceId(0)), None);
    tgen_change(
        &mut t,
        &mut sys,
        false,
        "release (the record goes with the space)",
        |t, sys| {
            t.destroy_space(sys, SpaceId(2)).unwrap();
        },
    );
    assert_eq!(t.lean_switch(SpaceId(2)), None);
    t.create_space(&mut sys, SpaceId(3)).unwrap();
    assert_eq!(t.pid_of(SpaceId(3)).unwrap(), FcsePid::new(2).unwrap());
    tgen_change(
        &mut t,
        &mut sys,
        true,
        "a released PID's next user runs",
        |t, sys| {
            sw(t, sys, 3);
        },
    );
    tgen_change(
        &mut t,
        &mut sys,
        false,
        "release of a space that never ran",
        |t, sys| {
            t.create_space(sys, SpaceId(4)).unwrap();
            t.destroy_space(sys, SpaceId(4)).unwrap();
        },
    );
}

#[test]
fn the_naive_generation_never_changes() {
    let mut mem = table_mem();
    let (mut t, mut sys) = classic(&mut mem, Kind::Naive);
    tgen_change(&mut t, &mut sys, false, "everything", |t, sys| {
        for s in 0..3 {
            t.create_space(sys, SpaceId(s)).unwrap();
            map_table(t, sys, s, 0x8000);
            map_table(t, sys, s, 0x0400_0000);
            t.switch_to(sys, SpaceId(s)).unwrap();
        }
        t.destroy_space(sys, SpaceId(1)).unwrap();
        t.switch_lean(sys, SpaceId(0)).unwrap();
    });
}

/// One step of the lean-versus-full comparison.
#[derive(Clone, Debug)]
enum Op {
    Create(u16),
    Destroy(u16),
    /// A page in the space's window (`i` picks the address).
    MapLow(u16, u8),
    /// A fixed page above 32 MiB, in the windows of PIDs 1 or 2.
    MapHigh(u16, u8),
    Unmap(u16, u8),
    MapSeg(u16, u16),
    UnmapSeg(u16, u16),
    Switch(u16),
    /// A translation fault of the running space at address `i` picks.
    Fault(u8),
}

const SPACES: u16 = 7;

/// Longest op sequence (Miri interprets every op of every case).
const MAX_OPS: usize = if cfg!(miri) { 12 } else { 120 };

fn op() -> impl Strategy<Value = Op> {
    let s = 0..SPACES;
    prop_oneof![
        2 => s.clone().prop_map(Op::Create),
        1 => s.clone().prop_map(Op::Destroy),
        2 => (s.clone(), any::<u8>()).prop_map(|(s, i)| Op::MapLow(s, i)),
        1 => (s.clone(), any::<u8>()).prop_map(|(s, i)| Op::MapHigh(s, i)),
        1 => (s.clone(), any::<u8>()).prop_map(|(s, i)| Op::Unmap(s, i)),
        1 => (s.clone(), 0..2u16).prop_map(|(s, g)| Op::MapSeg(s, g)),
        1 => (s.clone(), 0..2u16).prop_map(|(s, g)| Op::UnmapSeg(s, g)),
        8 => s.prop_map(Op::Switch),
        3 => any::<u8>().prop_map(Op::Fault),
    ]
}

fn low(i: u8) -> u32 {
    0x8000 + u32::from(i % 4) * 0x1000 + u32::from(i / 4 % 3) * (1 << 20)
}

fn high(i: u8) -> u32 {
    ((1 + u32::from(i % 2)) << 25) + low(i / 2)
}

/// Runs `op` on `t`; with `lean`, a switch goes through the precomputed
/// record when there is a valid one. Returns the outcome (for comparison)
/// and whether a lean switch was made.
fn run_op<T: SwitchStrategy>(t: &mut T, sys: &mut Sys<'_>, op: &Op, lean: bool) -> (String, bool) {
    let page = |s: u16, va: u32| {
        (
            SpaceId(s),
            VirtAddr::new(va),
            PhysAddr::new(0x0030_0000 + (u32::from(s) << 16) + (va >> 12 & 0xF) * 0x1000),
        )
    };
    let r = match *op {
        Op::Create(s) => format!("{:?}", t.create_space(sys, SpaceId(s))),
        Op::Destroy(s) => format!("{:?}", t.destroy_space(sys, SpaceId(s))),
        Op::MapLow(s, i) | Op::MapHigh(s, i) => {
            let va = if matches!(op, Op::MapLow(..)) {
                low(i)
            } else {
                high(i)
            };
            let (id, va, pa) = page(s, va);
            let r = t.map_pages(
                sys,
                id,
                pages(va.as_u32(), 0x1000),
                frame(pa.as_u32()),
                AccessPermission::ReadWrite,
                CachePolicy::WriteBack,
            );
            format!("{r:?}")
        }
        Op::Unmap(s, i) => format!(
            "{:?}",
            t.unmap_pages(sys, SpaceId(s), pages(low(i), 0x1000))
        ),
        Op::MapSeg(s, g) => format!(
            "{:?}",
            t.map_segment(
                sys,
                SpaceId(s),
                SegmentId(g),
                seg_spec(g).base,
                SegmentAccess::Client
            )
        ),
        Op::UnmapSeg(s, g) => format!("{:?}", t.unmap_segment(sys, SpaceId(s), SegmentId(g))),
        Op::Switch(s) => {
            let running = t.current() == Some(SpaceId(s));
            if lean && t.switch_lean(sys, SpaceId(s)).is_ok() {
                return ("Ok(())".to_string(), !running);
            }
            format!("{:?}", t.switch_to(sys, SpaceId(s)))
        }
        Op::Fault(i) => {
            let far = if i % 2 == 0 { low(i / 2) } else { high(i / 2) };
            format!(
                "{:?}",
                t.resolve(sys, Fsr::from_bits(0x007), Far::from_bits(far))
            )
        }
    };
    (r, false)
}

/// Drives `full` with full switches only and `lean` with lean switches
/// whenever valid, through the same ops: every op must give the same
/// answer, the same CP15 traffic and the same counters. Returns the lean
/// switches made.
fn lean_matches_full<T: SwitchStrategy>(
    ops: &[Op],
    make: for<'m> fn(&'m mut Mem) -> (T, Sys<'m>),
) -> Result<u32, TestCaseError> {
    let (mut m1, mut m2) = (table_mem(), table_mem());
    let (mut full, mut s1) = make(&mut m1);
    let (mut lean, mut s2) = make(&mut m2);
    for g in 0..2 {
        let _ = full.create_segment(SegmentId(g), seg_spec(g));
        let _ = lean.create_segment(SegmentId(g), seg_spec(g));
    }
    let mut leans = 0;
    for (n, op) in ops.iter().enumerate() {
        s1.hw.cp15_mut().clear();
        s2.hw.cp15_mut().clear();
        let (a, _) = run_op(&mut full, &mut s1, op, false);
        let before = lean.generation();
        let rec = if let Op::Switch(s) = op {
            lean.lean_switch(SpaceId(*s))
        } else {
            None
        };
        let (b, took) = run_op(&mut lean, &mut s2, op, true);
        leans += u32::from(took);
        prop_assert_eq!(&a, &b, "op {} {:?}: answers", n, op);
        prop_assert_eq!(
            s1.hw.cp15().events(),
            s2.hw.cp15().events(),
            "op {} {:?} (lean record {:?}, generation {})",
            n,
            op,
            rec,
            before
        );
        prop_assert_eq!(s1.hw.cp15().overflows(), 0);
        prop_assert_eq!(full.stats(), lean.stats(), "op {} {:?}: counters", n, op);
        prop_assert_eq!(full.current(), lean.current());
        prop_assert_eq!(full.generation(), lean.generation());
    }
    Ok(leans)
}

fn make_fass(mem: &mut Mem) -> (F, Sys<'_>) {
    // Three usable domains for up to seven spaces and two segments:
    // recycling, and collisions between the fixed pages and windows 1, 2.
    let reserved = DomainSet::ALL.without(d(1)).without(d(2)).without(d(3));
    setup(mem, pids(3), reserved)
}

fn make_naive(mem: &mut Mem) -> (TableSwitch<8, 2>, Sys<'_>) {
    classic_in(mem, Kind::Naive, pids(2))
}

fn make_guaranteed(mem: &mut Mem) -> (TableSwitch<8, 2>, Sys<'_>) {
    classic_in(mem, Kind::Fcse(PidMode::Guaranteed), pids(2))
}

fn make_best_effort(mem: &mut Mem) -> (TableSwitch<8, 2>, Sys<'_>) {
    classic_in(mem, Kind::Fcse(PidMode::BestEffort), pids(2))
}

/// A kernel's own application of `rec` (what an assembly switch path does
/// with the values it kept): the record's maintenance and register writes.
fn apply_outside(sys: &mut Sys<'_>, rec: &LeanSwitch) {
    use mmu_armv5::maint::CacheMaintenance;
    use mmu_armv5::regs::Cp15Ext;
    let ttbr = rec.ttbr().unwrap();
    if rec.maintenance() == Maintenance::FlushCachesAndTlb {
        sys.clean_invalidate_dcache();
        sys.invalidate_icache();
    }
    // SAFETY: the mock only records the writes.
    unsafe { sys.set_ttbr(ttbr) };
    sys.invalidate_tlb();
    if let Some(pid) = rec.fcse_pid() {
        // SAFETY: as above.
        unsafe { sys.set_fcse_pid(pid) };
    }
}

/// Drives `full` with full switches only and `kern` as a kernel with its
/// own switch path does: a switch to another space with a valid record is
/// applied outside the strategy ([`apply_outside`]) and owed, and the owed
/// switches are settled ([`TableSwitch::settle_lean`]) before any other
/// call into the strategy. Every op must give the same CP15 traffic; after
/// each settle both strategies must agree on everything (counters,
/// running space, generation, the PID allocator's epoch). Returns the
/// switches made outside.
fn settled_matches_full(
    ops: &[Op],
    make: for<'m> fn(&'m mut Mem) -> (TableSwitch<8, 2>, Sys<'m>),
) -> Result<u32, TestCaseError> {
    let (mut m1, mut m2) = (table_mem(), table_mem());
    let (mut full, mut s1) = make(&mut m1);
    let (mut kern, mut s2) = make(&mut m2);
    for g in 0..2 {
        let _ = full.create_segment(SegmentId(g), seg_spec(g));
        let _ = kern.create_segment(SegmentId(g), seg_spec(g));
    }
    // The kernel's idea of the running space, and what it owes.
    let mut running = None;
    let mut owed = 0u32;
    let mut outside = 0;
    for (n, op) in ops.iter().enumerate() {
        s1.hw.cp15_mut().clear();
        s2.hw.cp15_mut().clear();
        let was = (full.stats(), full.current(), full.pids().epoch());
        let (a, _) = run_op(&mut full, &mut s1, op, false);
        let rec = match *op {
            Op::Switch(s) if running != Some(SpaceId(s)) => kern.lean_switch(SpaceId(s)),
            _ => None,
        };
        if let (Op::Switch(s), Some(rec)) = (op, rec) {
            apply_outside(&mut s2, &rec);
            running = Some(SpaceId(*s));
            owed += 1;
            outside += 1;
            prop_assert_eq!(&a, "Ok(())", "op {} {:?}", n, op);
        } else {
            if let (Some(r), true) = (running, owed > 0) {
                let token = kern.lean_switch(r).unwrap().applied(r, owed);
                // SAFETY: `r` runs, switched to by `owed` applications of
                // valid records since the last settle.
                prop_assert_eq!(unsafe { kern.settle_lean(token) }, Ok(()));
                owed = 0;
            }
            let is = (kern.stats(), kern.current(), kern.pids().epoch());
            prop_assert_eq!(was, is, "op {} {:?}: settled", n, op);
            let (b, _) = run_op(&mut kern, &mut s2, op, false);
            prop_assert_eq!(&a, &b, "op {} {:?}: answers", n, op);
            running = kern.current();
            prop_assert_eq!(full.stats(), kern.stats(), "op {} {:?}: counters", n, op);
            prop_assert_eq!(full.current(), kern.current());
            prop_assert_eq!(full.pids().epoch(), kern.pids().epoch());
        }
        prop_assert_eq!(
            s1.hw.cp15().events(),
            s2.hw.cp15().events(),
            "op {} {:?} (record {:?})",
            n,
            op,
            rec
        );
        prop_assert_eq!(full.generation(), kern.generation());
    }
    Ok(outside)
}

#[test]
fn settling_owed_switches_counts_them_and_refuses_a_stale_token() {
    let mut mem = table_mem();
    let (mut t, mut sys) = classic(&mut mem, Kind::Fcse(PidMode::Guaranteed));
    for s in 0..3 {
        t.create_space(&mut sys, SpaceId(s)).unwrap();
        t.switch_to(&mut sys, SpaceId(s)).unwrap();
    }
    let (before, epoch) = (t.stats(), t.pids().epoch());
    let rec = t.lean_switch(SpaceId(1)).unwrap();
    // No switch owed: nothing happens.
    // SAFETY: no switch claimed.
    unsafe { t.settle_lean(rec.applied(SpaceId(1), 0)) }.unwrap();
    assert_eq!((t.current(), t.stats()), (Some(SpaceId(2)), before));
    // A record under another space's name is refused, nothing changes.
    let wrong = rec.applied(SpaceId(0), 2);
    // SAFETY: refused before anything is recorded.
    assert_eq!(unsafe { t.settle_lean(wrong) }, Err(StaleSwitch));
    assert_eq!((t.current(), t.stats()), (Some(SpaceId(2)), before));
    // Five switches, the last to space 1.
    let token = rec.applied(SpaceId(1), 5);
    assert_eq!(
        (token.space(), token.times(), token.record()),
        (SpaceId(1), 5, rec)
    );
    // SAFETY: the claim is what the test pretends the kernel did.
    unsafe { t.settle_lean(token) }.unwrap();
    let d = t.stats().since(&before);
    assert_eq!((d.switches, d.tlb_only, d.full_flushes), (5, 5, 0));
    assert_eq!(
        (t.current(), t.pids().epoch()),
        (Some(SpaceId(1)), epoch + 5)
    );
    // Destroying space 0 takes its record: a token of it is stale.
    let rec0 = t.lean_switch(SpaceId(0)).unwrap();
    t.destroy_space(&mut sys, SpaceId(0)).unwrap();
    // SAFETY: refused before anything is recorded.
    let r = unsafe { t.settle_lean(rec0.applied(SpaceId(0), 1)) };
    assert_eq!(r, Err(StaleSwitch));
    // A FASS record is not a table strategy's.
    let f = LeanSwitch::fass(
        t.generation(),
        Dacr::from_bits(1),
        FcsePid::ZERO,
        Domain::new(1).unwrap(),
    );
    // SAFETY: refused before anything is recorded.
    let r = unsafe { t.settle_lean(f.applied(SpaceId(1), 1)) };
    assert_eq!(r, Err(StaleSwitch));
    assert_eq!(t.stats().since(&before).switches, 5);
}

#[test]
fn settled_switches_match_full_ones_in_a_ring() {
    let mut ops = Vec::new();
    for s in 0..3 {
        ops.push(Op::Create(s));
        ops.push(Op::MapLow(s, s as u8));
    }
    for round in 0..6u16 {
        for s in 0..3 {
            ops.push(Op::Switch(s));
            ops.push(Op::Switch(s));
        }
        if round % 2 == 1 {
            ops.push(Op::Fault(round as u8));
        }
    }
    // The first switch to each space is full; the other 15 go outside.
    // (FCSE with a PID per space; in `pids(2)` three spaces share two PIDs,
    // and a switch to a shared PID has no record.)
    fn guaranteed(mem: &mut Mem) -> (TableSwitch<8, 2>, Sys<'_>) {
        classic(mem, Kind::Fcse(PidMode::Guaranteed))
    }
    fn best_effort(mem: &mut Mem) -> (TableSwitch<8, 2>, Sys<'_>) {
        classic(mem, Kind::Fcse(PidMode::BestEffort))
    }
    for make in [make_naive, guaranteed, best_effort] {
        assert_eq!(settled_matches_full(&ops, make).unwrap(), 15);
    }
    // Sharing: fewer records, the same agreement.
    let shared = settled_matches_full(&ops, make_best_effort).unwrap();
    assert_eq!(shared, lean_matches_full(&ops, make_best_effort).unwrap());
}

proptest! {
    // Under Miri one case: every case builds eight strategies.
    #![proptest_config(proptest::test_runner::Config {
        cases: if cfg!(miri) { 1 } else { crate::proptest_config().cases },
        ..crate::proptest_config()
    })]

    /// Whenever a space's record is valid, applying it does exactly what
    /// a full switch would: same writes, same maintenance, same counters,
    /// same state afterwards (every later op agrees too).
    #[test]
    fn a_lean_switch_does_what_the_full_switch_would(
        ops in proptest::collection::vec(op(), 1..MAX_OPS)
    ) {
        lean_matches_full(&ops, make_fass)?;
        lean_matches_full(&ops, make_naive)?;
        lean_matches_full(&ops, make_guaranteed)?;
        lean_matches_full(&ops, make_best_effort)?;
    }

    /// Switches a kernel applies itself from the records and settles
    /// before its next call into the strategy leave the strategy exactly
    /// where full switches would.
    #[test]
    fn settled_switches_do_what_full_switches_would(
        ops in proptest::collection::vec(op(), 1..MAX_OPS)
    ) {
        settled_matches_full(&ops, make_naive)?;
        settled_matches_full(&ops, make_guaranteed)?;
        settled_matches_full(&ops, make_best_effort)?;
    }
}

#[test]
fn the_comparison_sees_lean_switches_of_every_strategy() {
    // Two spaces in turn, 16 switches; halfway, one maps a segment (a new
    // DACR under FASS: the generation changes once, both records go stale).
    // Every switch but the first to each space (and, under FASS, the first
    // after the segment) is lean.
    let mut ops = Vec::new();
    for s in 0..2 {
        ops.push(Op::Create(s));
        ops.push(Op::MapLow(s, s as u8));
    }
    for round in 0..8u16 {
        for s in 0..2 {
            ops.push(Op::Switch(s));
            ops.push(Op::Fault(2 * s as u8));
        }
        if round == 3 {
            ops.push(Op::MapSeg(1, 0));
        }
    }
    assert_eq!(lean_matches_full(&ops, make_fass).unwrap(), 12);
    assert_eq!(lean_matches_full(&ops, make_naive).unwrap(), 14);
    assert_eq!(lean_matches_full(&ops, make_guaranteed).unwrap(), 14);
    assert_eq!(lean_matches_full(&ops, make_best_effort).unwrap(), 14);
}
