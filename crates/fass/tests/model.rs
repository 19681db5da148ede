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

mod common;

use armv5_sim::{Machine, Privilege, Width};
use common::*;
use fass::policy::CleanFirstRoundRobin;
use fass::{
    Cpd, DomainSet, Fass, Flushed, Layout, RecycleRule, Resolution, SpaceId, SwitchStrategy,
};
use mmu_armv5::descriptor::{AccessPermission, CachePolicy};
use mmu_armv5::regs::{Far, Fsr};
use mmu_armv5::{FcsePid, VirtAddr};
use proptest::prelude::*;
use proptest::test_runner::{Config as PtConfig, TestCaseError, TestRunner};

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

fn cases(default: u32) -> u32 {
    std::env::var("FASS_PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Runs the isolation property for `setup` (`FASS_PROPTEST_CASES` or
/// `default_cases` sequences of 500 operations) and returns what the
/// sequences exercised.
fn run_isolation(name: &str, default_cases: u32, setup: Setup) -> Totals {
    let mut runner = TestRunner::new(PtConfig {
        cases: cases(default_cases),
        failure_persistence: None,
        max_shrink_iters: 200,
        // ChaCha in a debug build costs more than the model itself.
        rng_algorithm: proptest::test_runner::RngAlgorithm::XorShift,
        ..PtConfig::default()
    });
    let totals = std::cell::Cell::new(Totals::default());
    let result = runner.run(&proptest::collection::vec(op(setup.spaces()), 500), |ops| {
        let t = run(setup, &ops).map_err(TestCaseError::fail)?;
        let mut sum = totals.get();
        sum += t;
        totals.set(sum);
        Ok(())
    });
    if let Err(e) = result {
        panic!("{name}: {e}");
    }
    let t = totals.get();
    // The runs must exercise what they claim to: lean switches mixed in.
    assert!(
        t.switches > 0 && t.write_backs > 0 && t.lean_switches > 0,
        "{name}: {t:?}"
    );
    eprintln!("{name}: {t:?}");
    t
}

#[test]
fn fass_isolation_more_spaces_than_domains() {
    // Default rule: window-exclusive spaces' dirty domains are recycled
    // without a flush, and the fixed pages in their windows must be caught
    // by the window guard.
    assert_eq!(
        fass_on(&mut machine(), Layout::DEMO).recycle_rule(),
        RecycleRule::ExclusiveWindows
    );
    let t = run_isolation("fass, exclusive windows", 2000, Setup::FassExclusive);
    // The runs reach both the unflushed recycling and its guard, and the
    // fast fault path (the general one takes what it declines).
    assert!(
        t.recycles_exclusive > 0 && t.window_flushes > 0 && t.fast_hits > 0,
        "{t:?}"
    );
}

#[test]
fn fass_isolation_conservative_rule() {
    let t = run_isolation("fass, conservative", 500, Setup::FassConservative);
    // Nothing is ever left in a window, so the guard never fires.
    assert_eq!(
        (t.recycles_exclusive, t.window_flushes, t.fast_hits),
        (0, 0, 0),
        "{t:?}"
    );
}

#[test]
fn fcse_best_effort_isolation_more_spaces_than_pids() {
    run_isolation("fcse best effort", 2000, Setup::FcseBestEffort);
}

#[test]
fn fcse_guaranteed_and_naive_isolation() {
    run_isolation("fcse guaranteed", 500, Setup::FcseGuaranteed);
    run_isolation("naive", 500, Setup::Naive);
}

/// A ring of `n` spaces, each touching two pages per turn.
fn ring(n: u16, rounds: u32, rule: RecycleRule) -> (armv5_sim::Counters, fass::Stats, u32) {
    let mut m = machine();
    let mut f = fass_with(&mut m, Layout::DEMO, rule);
    for s in 0..n {
        f.add_space(SpaceId(s)).unwrap();
        for p in 0..2u32 {
            let pa = (u32::from(s) * 2 + p + 1) * PAGE;
            f.map_page(
                &mut m,
                SpaceId(s),
                page(0x8000 + p * MIB),
                frame(pa),
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
    let (c0, s0) = (m.counters().clone(), f.stats());
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
        f.add_space(SpaceId(s)).unwrap();
        f.map_page(
            &mut m,
            SpaceId(s),
            page(0x8000),
            frame((u32::from(s) + 1) * PAGE),
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
        page(mva),
        frame(0x0004_0000),
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
    let before = f.stats();
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
    let before = f.stats();
    f.destroy_space(&mut m, SpaceId(0)).unwrap();
    let destroy = f.stats().since(&before);
    f.map_page(
        &mut m,
        SpaceId(16),
        page(0x0010_0000),
        frame(PAGE),
        AccessPermission::ReadWrite,
        CachePolicy::WriteBack,
    )
    .unwrap();
    f.switch_to(&mut m, SpaceId(16)).unwrap();
    assert_eq!(access(&mut m, &mut f, 0x0010_0000, None), 0x0BAD_CAFE);
    assert_eq!(destroy.full_flushes, 1, "{destroy:?}");
    assert!(!f.window_lines().any());
    // A space given the dead space's PID finds nothing of it either.
    f.add_space(SpaceId(0)).unwrap();
    assert_eq!(f.pid_of(SpaceId(0)).unwrap(), pid);
    f.map_page(
        &mut m,
        SpaceId(0),
        page(0x8000),
        frame(0x0004_0000),
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
                log.push((r, quick.is_some(), far.bits()));
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
        // The fault paths are what is compared: every slot filled lazily.
        f.set_eager_relink(false);
        for s in 0..2u16 {
            for (i, va) in fixed.iter().enumerate() {
                f.map_page(
                    &mut m,
                    SpaceId(s),
                    page(*va),
                    frame(0x0004_0000 + (u32::from(s) * 2 + i as u32) * PAGE),
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
            f.stats(),
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
    f.add_space(SpaceId(0)).unwrap();
    f.map_page(
        &mut m,
        SpaceId(0),
        page(0x8000),
        frame(PAGE),
        AccessPermission::ReadWrite,
        CachePolicy::WriteBack,
    )
    .unwrap();
    f.switch_to(&mut m, SpaceId(0)).unwrap();
    let far = 0x8000;
    assert_eq!(
        f.resolve_fast(&mut m, Fsr::from_bits(0x005), Far::from_bits(far)),
        None
    );
    assert!(matches!(
        f.resolve(&mut m, Fsr::from_bits(0x005), Far::from_bits(far))
            .unwrap(),
        Resolution::Resolved {
            flushed: Flushed::Nothing,
            ..
        }
    ));
}

/// The fast path takes both forms of a fault address below 32 MiB that a
/// core may report with a non-zero PID (the modified address, or, as QEMU
/// does, the unmodified one: `resolve_fast` relocates it), and an address
/// at 32 MiB or above as it is (never relocated).
#[test]
fn the_fast_path_relocates_low_fault_addresses_by_the_running_pid() {
    let mut m = machine();
    let mut f = fass_on(&mut m, Layout::DEMO);
    // The fast path's own fills are what is tested.
    f.set_eager_relink(false);
    let map = |f: &mut FassModel, m: &mut Machine, s: u16, va: u32, pa: u32| {
        f.map_page(
            m,
            SpaceId(s),
            page(va),
            frame(pa),
            AccessPermission::ReadWrite,
            CachePolicy::WriteBack,
        )
        .unwrap();
    };
    // Three spaces: the last one runs at a PID of 2 or more.
    for s in 0..3 {
        f.add_space(SpaceId(s)).unwrap();
    }
    let s = 2;
    let pid = u32::from(f.pid_of(SpaceId(s)).unwrap().get());
    assert!(pid >= 2, "PID {pid}");
    map(&mut f, &mut m, s, 0x8000, PAGE);
    map(&mut f, &mut m, s, 0x0010_0000, 2 * PAGE);
    // At 32 MiB: outside every relocation.
    map(&mut f, &mut m, s, 0x0200_0000, 3 * PAGE);
    f.switch_to(&mut m, SpaceId(s)).unwrap();
    let resolved = |r: Option<Resolution>, slot: usize| {
        assert!(
            matches!(
                r,
                Some(Resolution::Resolved {
                    slot: got,
                    flushed: Flushed::Nothing,
                    ..
                }) if got == slot
            ),
            "{r:?}, slot {slot:#x}"
        );
    };
    let slot = |mva: u32| (mva >> 20) as usize;
    // The unmodified address (a translation fault, FS 0x5) ...
    let r = f.resolve_fast(&mut m, Fsr::from_bits(0x005), Far::from_bits(0x8000));
    resolved(r, slot(pid << 25 | 0x8000));
    // ... and the modified one.
    let r = f.resolve_fast(
        &mut m,
        Fsr::from_bits(0x005),
        Far::from_bits(pid << 25 | 0x0010_0000),
    );
    resolved(r, slot(pid << 25 | 0x0010_0000));
    let r = f.resolve_fast(&mut m, Fsr::from_bits(0x005), Far::from_bits(0x0200_0000));
    resolved(r, slot(0x0200_0000));
    // Each slot now holds the space's entry: the loads go through.
    for va in [0x8000, 0x0010_0000, 0x0200_0000] {
        assert_eq!(access(&mut m, &mut f, va, None), 0, "{va:#x}");
    }
}

/// The fast path keeps each space's last directory entry at hand; a
/// directory change (an unmap that frees the slot's table, a map that
/// gives the slot a new one) must drop it: otherwise the next fast fault
/// of that space in that slot writes the old table's entry into the CPD,
/// and the space reaches another slot's table (here: the page of the
/// slot above, which took the freed table over).
#[test]
fn the_fast_path_follows_a_directory_change_of_its_space() {
    let v = 61 << 25 | 0x8000;
    let w = v + 0x10_0000;
    // Each turn's first collision (X) is with a dirty domain and flushes,
    // which leaves V's collision clean: the fast path's.
    let x = v + 0x20_0000;
    let (mut m, mut f) = spaces_with_low_page(2, RecycleRule::ExclusiveWindows);
    let map = |f: &mut FassModel, m: &mut Machine, s: u16, va: u32, pa: u32| {
        f.map_page(
            m,
            SpaceId(s),
            page(va),
            frame(pa),
            AccessPermission::ReadWrite,
            CachePolicy::WriteBack,
        )
        .unwrap();
    };
    map(&mut f, &mut m, 0, v, 0x0004_0000);
    map(&mut f, &mut m, 1, v, 0x0004_0000 + PAGE);
    map(&mut f, &mut m, 0, x, 0x0004_0000 + 4 * PAGE);
    map(&mut f, &mut m, 1, x, 0x0004_0000 + 5 * PAGE);
    let mut log = Vec::new();
    // Both spaces collide on V's slot, the fast path resolving every
    // collision with a clean domain.
    for turn in 0..4u16 {
        f.switch_to(&mut m, SpaceId(turn % 2)).unwrap();
        access_logged(&mut m, &mut f, x, true, &mut log);
        access_logged(&mut m, &mut f, v, true, &mut log);
    }
    assert!(
        log.iter().filter(|(_, quick, _)| *quick).count() >= 2,
        "{log:?}"
    );
    // Space 0's slot loses its table and gets a new one; W (the slot
    // above) is mapped in between and takes the freed table.
    f.unmap_page(&mut m, SpaceId(0), page(v)).unwrap();
    map(&mut f, &mut m, 0, w, 0x0004_0000 + 2 * PAGE);
    map(&mut f, &mut m, 0, v, 0x0004_0000 + 3 * PAGE);
    f.switch_to(&mut m, SpaceId(0)).unwrap();
    access(&mut m, &mut f, w, Some(0x5EC0_00D1));
    let fast_before = log.iter().filter(|(_, quick, _)| *quick).count();
    for turn in 1..5u16 {
        f.switch_to(&mut m, SpaceId(turn % 2)).unwrap();
        let value = 0x1000 + u32::from(turn);
        access_logged(&mut m, &mut f, x, true, &mut log);
        access_logged(&mut m, &mut f, v, true, &mut log);
        access(&mut m, &mut f, v, Some(value));
        assert_eq!(access(&mut m, &mut f, v, None), value);
    }
    assert!(
        log.iter().filter(|(_, quick, _)| *quick).count() > fast_before,
        "{log:?}"
    );
    f.switch_to(&mut m, SpaceId(0)).unwrap();
    assert_eq!(access(&mut m, &mut f, w, None), 0x5EC0_00D1);
    assert_eq!(access(&mut m, &mut f, v, None), 0x1004);
}

/// Issue 26, item 9: the model's register accessors have the names and
/// the typed values of `Cp15Ext`, so with the trait in scope a user reads
/// the abort registers either way, gets the same `Fsr`/`Far`, and hands
/// them to `resolve` (no `from_bits`, no borrow of the machine held across
/// the call); the model's safe setters and the trait's `unsafe` ones take
/// the same `Ttbr`/`Sctlr` and have the same effect.
#[test]
fn typed_abort_registers_feed_resolve_through_either_name() {
    use mmu_armv5::regs::Cp15Ext;
    let mut m = machine();
    let mut f = fass_on(&mut m, Layout::DEMO);
    // The lazy fill is what is tested.
    f.set_eager_relink(false);
    f.add_space(SpaceId(0)).unwrap();
    f.map_page(
        &mut m,
        SpaceId(0),
        page(0x8000),
        frame(PAGE),
        AccessPermission::ReadWrite,
        CachePolicy::WriteBack,
    )
    .unwrap();
    f.switch_to(&mut m, SpaceId(0)).unwrap();
    // The first user access faults: the CPD slot is empty.
    assert!(m
        .load(VirtAddr::new(0x8000), Width::Word, Privilege::User)
        .is_err());
    let (fsr, far) = (m.dfsr(), m.far());
    let (tfsr, tfar): (Fsr, Far) = (Cp15Ext::dfsr(&m), Cp15Ext::far(&m));
    assert_eq!((fsr, far), (tfsr, tfar));
    assert!(fsr.is_lazy_fill_candidate(), "{fsr:?}");
    let pid = f.pid_of(SpaceId(0)).unwrap();
    assert_eq!(far.va(pid), VirtAddr::new(0x8000));
    assert!(matches!(
        f.resolve(&mut m, fsr, far).unwrap(),
        Resolution::Resolved { .. }
    ));
    assert!(m
        .load(VirtAddr::new(0x8000), Width::Word, Privilege::User)
        .is_ok());
    // A generic abort handler (any `Cp15Ext` backend) sees the same values.
    fn regs<C: Cp15Ext>(c: &C) -> (Fsr, Far, mmu_armv5::regs::Ttbr) {
        (c.dfsr(), c.far(), c.ttbr())
    }
    assert_eq!(regs(&m), (m.dfsr(), m.far(), m.ttbr()));
    // One name per write: the model's safe setter and the trait's.
    let (ttbr, sctlr) = (m.ttbr(), m.sctlr());
    let writes = m.counters().ttbr_writes;
    m.set_ttbr(ttbr);
    // SAFETY: the model; the same table and control bits are written back.
    unsafe {
        Cp15Ext::set_ttbr(&mut m, ttbr);
        Cp15Ext::set_sctlr(&mut m, sctlr);
    }
    m.set_sctlr(sctlr);
    assert_eq!(m.counters().ttbr_writes, writes + 2);
    assert_eq!((m.ttbr(), m.sctlr()), (ttbr, sctlr));
    assert_eq!(m.fcse_pid(), pid);
}

/// A ring of more spaces than domains: past the first 15 switches, a
/// space switched to that holds no domain gets a recycled one. With eager
/// re-linking (the default) it finds its two slots in the CPD already and
/// never faults after the first lap (on which the first 15 take free
/// domains and fill lazily); without it each slot costs a fault. Either way every space reads back only what it stored (its
/// domain's lines were left in its own window) and the CPD ends the same.
#[test]
fn eager_relink_spares_the_refill_faults_and_changes_nothing_else() {
    let run = |eager: bool| {
        let (mut m, mut f) = spaces_with_low_page(20, RecycleRule::ExclusiveWindows);
        f.set_eager_relink(eager);
        assert_eq!(f.eager_relink(), eager);
        for s in 0..20u16 {
            f.map_page(
                &mut m,
                SpaceId(s),
                page(0x0010_8000),
                frame(0x0004_0000 + u32::from(s) * PAGE),
                AccessPermission::ReadWrite,
                CachePolicy::WriteBack,
            )
            .unwrap();
        }
        let mut faults = 0u32;
        let mut seen = Vec::new();
        for round in 0..3u32 {
            for s in 0..20u16 {
                f.switch_to(&mut m, SpaceId(s)).unwrap();
                for va in [0x8000, 0x0010_8000] {
                    let before = f.stats().cpd_fills + f.stats().collisions;
                    let want = round << 16 | u32::from(s) << 4 | (va >> 20);
                    if round > 0 {
                        // What this space stored in the round before.
                        let had = access(&mut m, &mut f, va, None);
                        seen.push(had == (round - 1) << 16 | (want & 0xFFFF));
                    }
                    access(&mut m, &mut f, va, Some(want));
                    if round > 0 {
                        faults +=
                            u32::try_from(f.stats().cpd_fills + f.stats().collisions - before)
                                .unwrap();
                    }
                }
            }
        }
        let cpd: Vec<_> = (0..64).map(|slot| f.cpd().raw(&m, slot).unwrap()).collect();
        (faults, seen, cpd, f.stats().full_flushes)
    };
    let (eager_faults, eager_seen, eager_cpd, eager_flushes) = run(true);
    let (lazy_faults, lazy_seen, lazy_cpd, lazy_flushes) = run(false);
    assert!(eager_seen.iter().all(|ok| *ok), "{eager_seen:?}");
    assert!(lazy_seen.iter().all(|ok| *ok), "{lazy_seen:?}");
    assert_eq!(eager_faults, 0, "eager re-link left faults");
    // Lazily, every space that lost its domain since it last ran faults
    // on both slots: at least the 5 beyond the 15 domains, per lap.
    assert!(lazy_faults >= 2 * 5 * 2, "{lazy_faults}");
    assert_eq!(eager_cpd, lazy_cpd);
    assert_eq!(eager_flushes, lazy_flushes);
}
