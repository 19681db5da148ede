//! What a kernel may do between two steps of an exchange, on the
//! `armv5-sim` model: unmap or re-map either address, free a frame and hand
//! it to another space, change a frame's state, give write access back,
//! start a second exchange, step with another frame table, cancel. Each
//! case checks that the exchange notices (`Changed`, `WrongTable`), never
//! acts on stale state (no swap that redirects someone else's mapping, no
//! copy into a frame it no longer holds, no write lost) and leaves its
//! frames released and writable as before.

mod common;

use common::ext::*;
use common::{Kernel, Storage, DTCM, ITCM, RAM, RAM_SIZE};
use mmu_armv5::size::Frame;
use mmu_armv5::size::PageSizeKind;
use spm::ops::{self, OpError};
use spm::{
    Exchange, ExchangeError, FrameDesc, FrameError, FrameState, FrameTable, InitialUse, KernelUse,
    Location, Mappings, PhysRegion, Progress, Rights, SectionSummary, MAX_SCATTERED,
};

const TARGET: u32 = 0x8000;
const OLD: u32 = 0x5000;
const RES: u32 = 0x10_0000;
const SEED: u8 = 0x3c;

/// Task 1's writable page at `TARGET` (frame `OLD`, every line dirty) and
/// an ITCM resource at `RES`; the exchange begun with 256-byte chunks.
fn begun(k: &mut Kernel<'_>, remember: bool) -> Exchange {
    if !remember {
        k.maps.generation = None;
    }
    k.user_page(1, TARGET, OLD, PageSizeKind::Small, true);
    k.maps.map(us(1), RES, ITCM, PageSizeKind::Small, false);
    k.fill(us(1), TARGET, 0x1000, SEED);
    k.begin(req(us(1), TARGET, RES, 1, Rights::RW), 256)
        .unwrap()
}

fn maps_to(k: &Kernel<'_>, space: spm::AddressSpace, v: u32) -> Option<u32> {
    k.maps.translate(space, va(v)).map(|t| t.page.as_u32())
}

/// Nothing of an exchange is left: its frames are not busy, the target
/// maps `target_frame` with its content and is writable again.
fn released(k: &mut Kernel<'_>, target_frame: u32) {
    assert!(!any_busy(k, &[OLD, ITCM]), "frames left busy");
    assert_eq!(maps_to(k, us(1), TARGET), Some(target_frame));
    k.expect(us(1), TARGET, 0x1000, SEED);
    assert!(k.maps.translate(us(1), va(TARGET)).unwrap().writable);
    k.store(us(1), TARGET + 1, 0x11).unwrap();
}

#[test]
fn the_target_unmapped_between_steps_is_changed() {
    for remember in [true, false] {
        let mut st = Storage::new();
        let mut k = Kernel::new(&mut st);
        let mut x = begun(&mut k, remember);
        assert_eq!(k.step(&mut x), Ok(Progress::Pending));
        k.maps.unmap(us(1), TARGET, PageSizeKind::Small);
        assert_eq!(k.step(&mut x), Err(ExchangeError::Changed(va(TARGET))));
        assert_eq!(k.step(&mut x), Err(ExchangeError::Finished));
        assert!(k.maps.swaps.is_empty(), "swapped after the target left");
        assert_eq!(maps_to(&k, us(1), RES), Some(ITCM));
        assert_eq!(k.state(ITCM), FrameState::Resource);
        assert!(!any_busy(&k, &[OLD, ITCM]));
    }
}

/// The breach: the old frame is freed and handed to another space
/// mid-exchange; the switch must not move that space's mapping.
#[test]
fn a_frame_under_an_exchange_is_handed_on_only_once_released() {
    for remember in [true, false] {
        let mut st = Storage::new();
        let mut k = Kernel::new(&mut st);
        let mut x = begun(&mut k, remember);
        assert_eq!(k.step(&mut x), Ok(Progress::Pending));
        // The kernel unmaps the target and tries to hand its frame to
        // task 2: refused while the exchange holds it (issue 26, item 3;
        // it used to clear the busy flag).
        k.maps.unmap(us(1), TARGET, PageSizeKind::Small);
        assert_eq!(
            k.table.init_range(
                Frame::from_start(pa(OLD)).unwrap(),
                FrameState::User(sp(2)),
                true
            ),
            Err(FrameError::Busy(pa(OLD)))
        );
        let mut r = Ok(Progress::Pending);
        while r == Ok(Progress::Pending) {
            r = k.step(&mut x);
        }
        assert_eq!(r, Err(ExchangeError::Changed(va(TARGET))));
        assert!(k.maps.swaps.is_empty());
        // Released: now task 2 gets it and keeps a secret in it.
        k.user_page(2, 0x3000, OLD, PageSizeKind::Small, true);
        k.fill(us(2), 0x3000, 0x1000, 0x77);
        assert_eq!(maps_to(&k, us(2), 0x3000), Some(OLD));
        k.expect(us(2), 0x3000, 0x1000, 0x77);
        k.store(us(2), 0x3000, 0x78).unwrap();
        assert_eq!(k.state(OLD), FrameState::User(sp(2)));
        assert_eq!(maps_to(&k, us(1), RES), Some(ITCM));
        assert!(!any_busy(&k, &[OLD, ITCM]));
    }
}

#[test]
fn the_target_re_mapped_to_another_frame_is_changed() {
    let mut st = Storage::new();
    let mut k = Kernel::new(&mut st);
    let mut x = begun(&mut k, true);
    assert_eq!(k.step(&mut x), Ok(Progress::Pending));
    k.maps.unmap(us(1), TARGET, PageSizeKind::Small);
    k.user_page(1, TARGET, 0x7000, PageSizeKind::Small, true);
    k.fill(us(1), TARGET, 0x1000, 0x42);
    assert_eq!(k.step(&mut x), Err(ExchangeError::Changed(va(TARGET))));
    assert!(k.maps.swaps.is_empty());
    assert_eq!(maps_to(&k, us(1), TARGET), Some(0x7000));
    k.expect(us(1), TARGET, 0x1000, 0x42);
    assert!(!any_busy(&k, &[OLD, ITCM, 0x7000]));
}

/// Once switched, the content lives in the new frame: a target unmapped
/// then leaves it unreachable, which is `Changed`, never `Done`.
#[test]
fn a_target_unmapped_after_the_switch_never_ends_done() {
    for remember in [true, false] {
        let mut st = Storage::new();
        let mut k = Kernel::new(&mut st);
        let mut x = begun(&mut k, remember);
        // 16 copy steps, then the switch with the first flush chunk.
        for _ in 0..17 {
            assert_eq!(k.step(&mut x), Ok(Progress::Pending));
        }
        assert_eq!(k.maps.swaps.len(), 1);
        assert_eq!(maps_to(&k, us(1), TARGET), Some(ITCM));
        k.maps.unmap(us(1), TARGET, PageSizeKind::Small);
        assert_eq!(k.step(&mut x), Err(ExchangeError::Changed(va(TARGET))));
        assert!(!x.is_done());
        assert_eq!(k.step(&mut x), Err(ExchangeError::Finished));
        // The resource holds the old frame; both are released.
        assert_eq!(maps_to(&k, us(1), RES), Some(OLD));
        assert!(!any_busy(&k, &[OLD, ITCM]));
    }
}

#[test]
fn a_state_change_behind_the_exchange_is_refused() {
    let mut st = Storage::new();
    let mut k = Kernel::new(&mut st);
    let mut x = begun(&mut k, true);
    // spm's own operations refuse busy frames.
    assert_eq!(
        ops::delete_user_page(&mut k.table, &k.maps, sp(1), va(TARGET)),
        Err(OpError::Busy(pa(OLD)))
    );
    // SAFETY: the model is one consistent simulated system.
    let r = unsafe { ops::create_user_page(&mut k.table, &k.maps, &mut k.hw, sp(1), va(RES)) };
    assert_eq!(r, Err(OpError::Busy(pa(ITCM))));
    assert_eq!(k.step(&mut x), Ok(Progress::Pending));
    // The kernel's boot-time setter is refused too (issue 26, item 3: it
    // made the resource frame a kernel page behind the exchange's back).
    assert_eq!(
        k.table.init_range(
            Frame::from_start(pa(ITCM)).unwrap(),
            FrameState::Kernel(KernelUse::Plain),
            true,
        ),
        Err(FrameError::Busy(pa(ITCM)))
    );
    assert_eq!(k.state(ITCM), FrameState::Resource);
    let mut r = Ok(Progress::Pending);
    while r == Ok(Progress::Pending) {
        r = k.step(&mut x);
    }
    assert_eq!(r, Ok(Progress::Done));
    assert!(!any_busy(&k, &[OLD, ITCM]));
    k.expect(us(1), TARGET, 0x1000, SEED);
}

#[test]
fn a_second_exchange_gets_the_frames_of_a_failed_one() {
    let mut st = Storage::new();
    let mut k = Kernel::new(&mut st);
    let mut x1 = begun(&mut k, true);
    k.user_page(1, 0x9000, 0x6000, PageSizeKind::Small, true);
    k.fill(us(1), 0x9000, 0x1000, 0x21);
    // While it runs, its frames are not anyone else's.
    assert_eq!(
        k.begin(req(us(1), TARGET, 0x20_0000, 1, Rights::RW), 256)
            .err(),
        Some(ExchangeError::NotMapped(va(0x20_0000)))
    );
    k.maps
        .map(us(1), 0x20_0000, ITCM + 0x1000, PageSizeKind::Small, false);
    assert_eq!(
        k.begin(req(us(1), TARGET, 0x20_0000, 1, Rights::RW), 256)
            .err(),
        Some(ExchangeError::Busy(pa(OLD)))
    );
    assert_eq!(
        k.begin(req(us(1), 0x9000, RES, 1, Rights::RW), 256).err(),
        Some(ExchangeError::Busy(pa(ITCM)))
    );
    assert_eq!(k.step(&mut x1), Ok(Progress::Pending));
    // It fails: its resource address is re-mapped elsewhere.
    k.maps.unmap(us(1), RES, PageSizeKind::Small);
    k.maps
        .map(us(1), RES, ITCM + 0x2000, PageSizeKind::Small, false);
    assert_eq!(k.step(&mut x1), Err(ExchangeError::Changed(va(RES))));
    // Its frames, the one no longer mapped included, are free for the next.
    k.maps
        .map(us(1), 0x30_0000, ITCM, PageSizeKind::Small, false);
    let mut x2 = k
        .begin(req(us(1), TARGET, 0x30_0000, 1, Rights::RW), 256)
        .unwrap();
    // And two exchanges interleave step by step.
    let mut x3 = k
        .begin(req(us(1), 0x9000, 0x20_0000, 1, Rights::RW), 512)
        .unwrap();
    let (mut d2, mut d3) = (false, false);
    while !(d2 && d3) {
        if !d2 {
            d2 = k.step(&mut x2) == Ok(Progress::Done);
        }
        if !d3 {
            d3 = k.step(&mut x3) == Ok(Progress::Done);
        }
    }
    assert_eq!(maps_to(&k, us(1), TARGET), Some(ITCM));
    assert_eq!(maps_to(&k, us(1), 0x9000), Some(ITCM + 0x1000));
    k.expect(us(1), TARGET, 0x1000, SEED);
    k.expect(us(1), 0x9000, 0x1000, 0x21);
    assert!(!any_busy(
        &k,
        &[OLD, 0x6000, ITCM, ITCM + 0x1000, ITCM + 0x2000]
    ));
}

/// The kernel gives write access back mid-copy (and says so through its
/// generation): a write to a chunk already copied would be lost by the
/// switch.
#[test]
fn write_access_given_back_mid_copy_is_changed() {
    for remember in [true, false] {
        let mut st = Storage::new();
        let mut k = Kernel::new(&mut st);
        let mut x = begun(&mut k, remember);
        assert_eq!(k.step(&mut x), Ok(Progress::Pending));
        assert!(k.store(us(1), TARGET + 0x10, 0xee).is_err(), "protected");
        k.maps
            .set_page_writable(us(1), TARGET, PageSizeKind::Small, true);
        k.store(us(1), TARGET + 0x10, 0xee).unwrap();
        assert_eq!(k.step(&mut x), Err(ExchangeError::Changed(va(TARGET))));
        assert!(k.maps.swaps.is_empty());
        assert_eq!(maps_to(&k, us(1), TARGET), Some(OLD));
        assert_eq!(
            k.load(us(1), TARGET + 0x10).unwrap(),
            0xee,
            "the write was lost"
        );
        assert!(!any_busy(&k, &[OLD, ITCM]));
    }
}

/// A frame of a 64 KiB resource cannot be handed to another space
/// mid-copy (it used to be, and then the copy had to notice).
#[test]
fn a_frame_of_a_large_page_cannot_be_handed_on_mid_copy() {
    let mut st = Storage::new();
    let mut k = Kernel::new(&mut st);
    k.user_page(1, 0x4_0000, 0x4_0000, PageSizeKind::Large, true);
    k.maps.map(us(1), RES, DTCM, PageSizeKind::Large, false);
    k.fill(us(1), 0x4_0000, 0x1_0000, 0x11);
    let mut r = req(us(1), 0x4_0000, RES, 1, Rights::RW);
    r.size = PageSizeKind::Large;
    let mut x = k.begin(r, 1024).unwrap();
    assert_eq!(k.step(&mut x), Ok(Progress::Pending));
    let victim = DTCM + 0x5000;
    assert_eq!(
        k.table.init_range(
            Frame::from_start(pa(victim)).unwrap(),
            FrameState::User(sp(2)),
            true,
        ),
        Err(FrameError::Busy(pa(victim)))
    );
    assert_eq!(k.state(victim), FrameState::Resource);
    let mut r = Ok(Progress::Pending);
    while r == Ok(Progress::Pending) {
        r = k.step(&mut x);
    }
    assert_eq!(r, Ok(Progress::Done));
    assert_eq!(maps_to(&k, us(1), 0x4_0000), Some(DTCM));
    k.expect(us(1), 0x4_0000, 0x1_0000, 0x11);
    // Every frame of both pages released.
    for f in 0..16 {
        assert!(!k.table.desc(pa(0x4_0000 + f * 0x1000)).unwrap().is_busy());
        assert!(!k.table.desc(pa(DTCM + f * 0x1000)).unwrap().is_busy());
    }
}

/// Page 1's address is re-mapped, before its start, to a frame another
/// exchange holds (busy, the same owner): not the frame `begin` found.
#[test]
fn a_later_page_re_mapped_to_another_exchanges_frame_is_changed() {
    let mut st = Storage::new();
    let mut k = Kernel::new(&mut st);
    // Two pages, not contiguous: 0x5000 and 0x7000.
    k.user_page(1, TARGET, OLD, PageSizeKind::Small, true);
    k.user_page(1, TARGET + 0x1000, 0x7000, PageSizeKind::Small, true);
    k.maps.map(us(1), RES, ITCM, PageSizeKind::Small, false);
    k.maps.map(
        us(1),
        RES + 0x1000,
        ITCM + 0x1000,
        PageSizeKind::Small,
        false,
    );
    k.fill(us(1), TARGET, 0x2000, SEED);
    let mut x = k
        .begin(req(us(1), TARGET, RES, 2, Rights::RW), 4096)
        .unwrap();
    // Another exchange holds 0x6000.
    k.user_page(1, 0xa000, 0x6000, PageSizeKind::Small, true);
    k.maps
        .map(us(1), 0x20_0000, ITCM + 0x2000, PageSizeKind::Small, false);
    let mut y = k
        .begin(req(us(1), 0xa000, 0x20_0000, 1, Rights::RW), 4096)
        .unwrap();
    // Page 0 moves (two steps).
    assert_eq!(k.step(&mut x), Ok(Progress::Pending));
    assert_eq!(k.step(&mut x), Ok(Progress::Pending));
    assert_eq!(maps_to(&k, us(1), TARGET), Some(ITCM));
    k.maps.unmap(us(1), TARGET + 0x1000, PageSizeKind::Small);
    k.maps
        .map(us(1), TARGET + 0x1000, 0x6000, PageSizeKind::Small, true);
    assert_eq!(
        k.step(&mut x),
        Err(ExchangeError::Changed(va(TARGET + 0x1000)))
    );
    assert_eq!(k.cancel(&mut x), Ok(1), "page 0 stays exchanged");
    // The other exchange still has its frame, and completes.
    assert!(k.table.desc(pa(0x6000)).unwrap().is_busy());
    k.run(&mut y);
    assert_eq!(maps_to(&k, us(1), 0xa000), Some(ITCM + 0x2000));
    assert!(!any_busy(
        &k,
        &[OLD, 0x6000, 0x7000, ITCM, ITCM + 0x1000, ITCM + 0x2000]
    ));
    // More scattered pages than an exchange remembers.
    let mut big = req(us(1), 0x50_0000, 0x60_0000, MAX_SCATTERED + 1, Rights::RW);
    big.count = MAX_SCATTERED + 1;
    for i in 0..=MAX_SCATTERED {
        k.user_page(
            1,
            0x50_0000 + i * 0x1000,
            0x20_0000 + i * 0x2000,
            PageSizeKind::Small,
            true,
        );
        k.maps.map(
            us(1),
            0x60_0000 + i * 0x1000,
            0x30_0000 + i * 0x1000,
            PageSizeKind::Small,
            false,
        );
    }
    assert_eq!(
        k.begin(big, 4096).err(),
        Some(ExchangeError::Scattered(MAX_SCATTERED + 1))
    );
}

/// A table with the same kinds of regions but other storage: a step or a
/// cancel with it is refused and changes nothing there; the exchange goes
/// on with its own table.
#[test]
fn a_step_with_another_frame_table_is_refused() {
    let mut st = Storage::new();
    let mut k = Kernel::new(&mut st);
    let mut x = begun(&mut k, true);
    assert_eq!(k.step(&mut x), Ok(Progress::Pending));
    // Smaller (its descriptions end before this exchange's slots) and
    // larger (they exist, describing other frames).
    let small =
        [PhysRegion::new(pa(ITCM), 32 << 10, Location::Itcm, InitialUse::Resource).unwrap()];
    let large = [
        PhysRegion::new(pa(RAM), RAM_SIZE * 2, Location::Ram, InitialUse::Resource).unwrap(),
        PhysRegion::new(
            pa(0x4000_0000),
            64 << 10,
            Location::Dtcm,
            InitialUse::Resource,
        )
        .unwrap(),
    ];
    for regions in [&small[..], &large[..]] {
        let mut f = vec![FrameDesc::default(); FrameTable::<4>::frames_needed(regions)];
        let mut s = vec![SectionSummary::default(); FrameTable::<4>::sections_needed(regions)];
        let mut other = FrameTable::<4>::new(regions, &mut f, &mut s).unwrap();
        // SAFETY: the model is one consistent simulated system.
        let r = unsafe { x.step(&mut other, &mut k.maps, &mut k.hw, &mut k.irq) };
        assert_eq!(r, Err(ExchangeError::WrongTable));
        // SAFETY: as above.
        let r = unsafe { x.cancel(&mut other, &mut k.maps, &mut k.hw, &mut k.irq) };
        assert_eq!(r, Err(ExchangeError::WrongTable));
        assert_eq!(other.busy_frames(), 0);
        assert!(k.table.desc(pa(OLD)).unwrap().is_busy());
    }
    // The same regions in other storage are another table too.
    let mut other_st = Storage::new();
    let mut same = other_st.table();
    // SAFETY: as above.
    let r = unsafe { x.step(&mut same, &mut k.maps, &mut k.hw, &mut k.irq) };
    assert_eq!(r, Err(ExchangeError::WrongTable));
    k.run(&mut x);
    assert_eq!(maps_to(&k, us(1), TARGET), Some(ITCM));
    k.expect(us(1), TARGET, 0x1000, SEED);
}

/// `cancel` in every phase: what the target maps afterwards, its content
/// and write access, and that both frames are free again.
#[test]
fn cancel_returns_both_frames_in_every_phase() {
    // (steps before the cancel, pages it reports exchanged, target frame)
    for (steps, exchanged, frame) in [
        (0, 0, OLD),
        (1, 0, OLD),
        (9, 0, OLD),
        (16, 0, OLD),
        (17, 1, ITCM),
        (25, 1, ITCM),
        (32, 1, ITCM),
    ] {
        let mut st = Storage::new();
        let mut k = Kernel::new(&mut st);
        let mut x = begun(&mut k, true);
        for _ in 0..steps {
            k.step(&mut x).unwrap();
        }
        assert_eq!(k.cancel(&mut x), Ok(exchanged), "after {steps} steps");
        assert!(x.is_over());
        released(&mut k, frame);
        let other = if frame == OLD { ITCM } else { OLD };
        assert_eq!(maps_to(&k, us(1), RES), Some(other));
        assert!(!k.maps.translate(us(1), va(RES)).unwrap().writable);
        assert_eq!(k.step(&mut x), Err(ExchangeError::Finished));
        assert_eq!(k.cancel(&mut x), Ok(exchanged));
        assert!(k.irq.enabled());
    }
}
