//! `spm` on the `armv5-sim` model: a real page table in the model's memory,
//! write-back VIVT caches, FCSE address spaces, ITCM and DTCM regions.

mod common;

use common::ext::*;
use common::{Kernel, Storage, DEV, DTCM, ITCM};
use mmu_armv5::size::PageSizeKind;
use mmu_armv5::size::{Frame, FrameRange};
use mmu_armv5::{FaultKind, FaultLevel};
use proptest::prelude::*;
use spm::exchange::DEFAULT_CHUNK;
use spm::ops::{self, OpError};
use spm::{
    ExchangeError, ExchangeRequest, FrameError, FrameState, KernelUse, Mappings, Progress, Rights,
};

// ------------------------------------------------------------- preconditions

#[test]
fn every_precondition_is_a_typed_error_on_the_model() {
    use ExchangeError as E;
    let mut st = Storage::new();
    let mut k = Kernel::new(&mut st);
    let frames = [
        0x5000,
        0x6000,
        0x7000,
        ITCM,
        ITCM + 0x1000,
        ITCM + 0x2000,
        DTCM,
        0xd000,
        0x1_0000,
        0x2_0000,
    ];
    k.user_page(1, 0x8000, 0x5000, PageSizeKind::Small, true);
    k.user_page(1, 0x9000, 0x6000, PageSizeKind::Small, true);
    k.user_page(2, 0x8000, 0x7000, PageSizeKind::Small, true);
    k.maps
        .map(us(1), 0x10_0000, ITCM, PageSizeKind::Small, false);
    k.maps
        .map(us(1), 0x10_1000, ITCM + 0x1000, PageSizeKind::Small, false);
    k.maps
        .map(us(1), 0x20_0000, DTCM, PageSizeKind::Small, false);
    k.maps.map(us(1), 0x30_0000, DEV, PageSizeKind::Small, true);
    k.maps
        .map(us(1), 0x40_0000, 0x3f_0000, PageSizeKind::Small, false);
    let ok = req(us(1), 0x8000, 0x10_0000, 1, Rights::RX);
    let chk = |k: &mut Kernel, r: ExchangeRequest, chunk: u32, e: ExchangeError| {
        assert_eq!(k.begin(r, chunk).err(), Some(e), "{r:?}");
        assert!(!any_busy(k, &frames), "a refused exchange left frames busy");
    };
    chk(&mut k, ok, 48, E::BadChunk(48));
    chk(&mut k, ok, 16, E::BadChunk(16));
    chk(&mut k, ok, 8192, E::BadChunk(8192));
    chk(
        &mut k,
        ExchangeRequest { count: 0, ..ok },
        256,
        E::BadCount(0),
    );
    chk(
        &mut k,
        ExchangeRequest {
            count: 0x10_0000,
            ..ok
        },
        256,
        E::BadCount(0x10_0000),
    );
    chk(
        &mut k,
        ExchangeRequest {
            target: va(0x8800),
            ..ok
        },
        256,
        E::Misaligned(va(0x8800)),
    );
    chk(
        &mut k,
        ExchangeRequest {
            size: PageSizeKind::Large,
            ..ok
        },
        256,
        E::Misaligned(va(0x8000)),
    );
    chk(
        &mut k,
        ExchangeRequest {
            size: PageSizeKind::Tiny,
            ..ok
        },
        256,
        E::TinyPage(va(0x8000)),
    );
    chk(
        &mut k,
        ExchangeRequest {
            resource: va(0x9000),
            count: 2,
            ..ok
        },
        256,
        E::Overlap,
    );
    chk(
        &mut k,
        ExchangeRequest {
            target_space: us(2),
            ..ok
        },
        256,
        E::NotPermitted,
    );
    chk(
        &mut k,
        ExchangeRequest {
            target: va(0xa000),
            ..ok
        },
        256,
        E::NotMapped(va(0xa000)),
    );
    chk(
        &mut k,
        ExchangeRequest { count: 3, ..ok },
        256,
        E::NotMapped(va(0xa000)),
    );
    chk(
        &mut k,
        ExchangeRequest {
            resource: va(0x10_2000),
            ..ok
        },
        256,
        E::NotMapped(va(0x10_2000)),
    );
    // A task's page mapped by 1 KiB tiny pages (fine table).
    k.maps
        .map(us(1), 0x90_0000, 0x3e_0000, PageSizeKind::Tiny, true);
    chk(
        &mut k,
        ExchangeRequest {
            target: va(0x90_0000),
            ..ok
        },
        256,
        E::TinyPage(va(0x90_0000)),
    );
    // Resource range mapped with a different size.
    k.maps
        .map(us(1), 0x50_0000, 0x20_0000, PageSizeKind::Large, false);
    chk(
        &mut k,
        ExchangeRequest {
            resource: va(0x50_0000),
            ..ok
        },
        256,
        E::SizeMismatch {
            va: va(0x50_0000),
            mapped: PageSizeKind::Large,
        },
    );
    chk(
        &mut k,
        ExchangeRequest {
            resource: va(0x9000),
            ..ok
        },
        256,
        E::NotResource {
            frame: pa(0x6000),
            state: FrameState::User(sp(1)),
        },
    );
    // Code into DTCM.
    chk(
        &mut k,
        ExchangeRequest {
            resource: va(0x20_0000),
            ..ok
        },
        256,
        E::RightsExceeded {
            frame: pa(DTCM),
            needed: Rights::RX,
            max: Rights::RW,
        },
    );
    // Pinned (DMA) user page.
    k.table
        .init_range(
            Frame::from_start(pa(0x6000)).unwrap(),
            FrameState::User(sp(1)),
            false,
        )
        .unwrap();
    chk(
        &mut k,
        ExchangeRequest {
            target: va(0x9000),
            ..ok
        },
        256,
        E::NotMovable(pa(0x6000)),
    );
    chk(
        &mut k,
        ExchangeRequest {
            target: va(0x40_0000),
            ..ok
        },
        256,
        E::NotInUse {
            frame: pa(0x3f_0000),
            state: FrameState::Resource,
        },
    );
    chk(
        &mut k,
        ExchangeRequest {
            target: va(0x30_0000),
            ..ok
        },
        256,
        E::NotInUse {
            frame: pa(DEV),
            state: FrameState::Undefined,
        },
    );
    // Another task's page, mapped into ours.
    k.maps.map(us(1), 0xb000, 0x7000, PageSizeKind::Small, true);
    chk(
        &mut k,
        ExchangeRequest {
            target: va(0xb000),
            ..ok
        },
        256,
        E::NotOwner(pa(0x7000)),
    );
    // A kernel page, mapped into ours.
    k.table
        .init_range(
            Frame::from_start(pa(0xc000)).unwrap(),
            FrameState::Kernel(KernelUse::Plain),
            true,
        )
        .unwrap();
    k.maps
        .map(us(1), 0xc000, 0xc000, PageSizeKind::Small, false);
    chk(
        &mut k,
        ExchangeRequest {
            target: va(0xc000),
            ..ok
        },
        256,
        E::KernelOnly(pa(0xc000)),
    );
    // The same resource frame twice in the resource range.
    k.user_page(1, 0xd000, 0xd000, PageSizeKind::Small, true);
    k.user_page(1, 0xe000, 0xf000, PageSizeKind::Small, true);
    k.maps
        .map(us(1), 0x60_0000, ITCM + 0x2000, PageSizeKind::Small, false);
    k.maps
        .map(us(1), 0x60_1000, ITCM + 0x2000, PageSizeKind::Small, false);
    chk(
        &mut k,
        ExchangeRequest {
            target: va(0xd000),
            resource: va(0x60_0000),
            count: 2,
            ..ok
        },
        256,
        E::Aliased(pa(ITCM + 0x2000)),
    );
    // Page tables move only physically contiguous.
    for p in [0x1_0000, 0x1_2000] {
        k.table
            .init_range(
                Frame::from_start(pa(p)).unwrap(),
                FrameState::Kernel(KernelUse::PageTable),
                true,
            )
            .unwrap();
    }
    k.maps
        .map(K, 0xd001_0000, 0x1_0000, PageSizeKind::Small, true);
    k.maps
        .map(K, 0xd001_1000, 0x1_2000, PageSizeKind::Small, true);
    k.maps
        .map(K, 0xd100_0000, ITCM + 0x4000, PageSizeKind::Small, false);
    k.maps
        .map(K, 0xd100_1000, ITCM + 0x5000, PageSizeKind::Small, false);
    chk(
        &mut k,
        req(K, 0xd001_0000, 0xd100_0000, 2, Rights::RW),
        256,
        E::NotContiguous,
    );
    // A page directory moves whole.
    k.table
        .init_range(
            FrameRange::from_bytes(pa(0x2_0000), 0x4000).unwrap(),
            FrameState::Kernel(KernelUse::PageDirectory),
            true,
        )
        .unwrap();
    for i in 0..4 {
        k.maps.map(
            K,
            0xd002_0000 + i * 0x1000,
            0x2_0000 + i * 0x1000,
            PageSizeKind::Small,
            true,
        );
    }
    chk(
        &mut k,
        req(K, 0xd002_0000, 0xd100_0000, 2, Rights::RW),
        256,
        E::PartialDirectory,
    );
    // A frame the frame table does not describe.
    k.maps
        .map(us(1), 0x70_0000, 0x0800_0000, PageSizeKind::Small, true);
    chk(
        &mut k,
        ExchangeRequest {
            target: va(0x70_0000),
            ..ok
        },
        256,
        E::Frame(FrameError::NotDescribed(pa(0x0800_0000))),
    );
    // Busy: a frame of a running exchange.
    let mut x = k.begin(ok, DEFAULT_CHUNK).unwrap();
    assert_eq!(
        k.begin(
            ExchangeRequest {
                resource: va(0x10_1000),
                ..ok
            },
            256
        )
        .err(),
        Some(E::Busy(pa(0x5000)))
    );
    k.run(&mut x);
    assert_eq!(k.step(&mut x), Err(E::Finished));
    assert!(!any_busy(&k, &frames));
    // Changed: the resource mapping is removed under a running exchange.
    let r2 = ExchangeRequest {
        target: va(0x9000),
        resource: va(0x10_1000),
        ..ok
    };
    k.table
        .init_range(
            Frame::from_start(pa(0x6000)).unwrap(),
            FrameState::User(sp(1)),
            true,
        )
        .unwrap();
    let mut x = k.begin(r2, DEFAULT_CHUNK).unwrap();
    k.maps.unmap(us(1), 0x10_1000, PageSizeKind::Small);
    k.maps
        .map(us(1), 0x10_1000, ITCM + 0x3000, PageSizeKind::Small, false);
    assert_eq!(k.step(&mut x), Err(E::Changed(va(0x10_1000))));
    assert_eq!(k.step(&mut x), Err(E::Finished));
    // Every frame is released, the one whose mapping was removed too: the
    // exchange remembers the frames it began with.
    assert!(
        !any_busy(&k, &frames),
        "a failed exchange released its frames"
    );
    assert!(!k.table.desc(pa(ITCM + 0x1000)).unwrap().is_busy());
}

// ------------------------------------------------------------------ exchange

/// Into ITCM and back: the content is preserved byte for byte, although
/// every line of the page is dirty in the D-cache before the first exchange
/// and the RAM resource has dirty lines of its own before the second.
/// `remember`: the kernel reports a mapping generation, so the exchange
/// keeps each page's mappings between steps; otherwise it asks every step.
fn round_trip(seed: u8, chunk: u32, dirty_resource: bool, remember: bool) {
    let mut st = Storage::new();
    let mut k = Kernel::new(&mut st);
    if !remember {
        k.maps.generation = None;
    }
    k.user_page(1, 0x8000, 0x5000, PageSizeKind::Small, true);
    k.maps
        .map(us(1), 0x10_0000, ITCM, PageSizeKind::Small, true);
    k.fill(us(1), 0x8000, 0x1000, seed);
    assert!(k.dirty_lines() >= 128, "every line of the page is dirty");
    assert!(
        (0..0x1000).any(|i| k.phys(0x5000 + i) != content(i, seed)),
        "memory is stale before the exchange"
    );
    let r = req(us(1), 0x8000, 0x10_0000, 1, Rights::RW);
    let mut x = k.begin(r, chunk).unwrap();
    k.run(&mut x);
    assert_eq!(k.maps.translate(us(1), va(0x8000)).unwrap().page, pa(ITCM));
    assert_eq!(
        k.maps.translate(us(1), va(0x10_0000)).unwrap().page,
        pa(0x5000)
    );
    assert_eq!(k.state(ITCM), FrameState::User(sp(1)));
    for i in 0..0x1000 {
        assert_eq!(k.phys(ITCM + i), content(i, seed), "ITCM byte {i:#x}");
    }
    k.expect(us(1), 0x8000, 0x1000, seed);
    // Write access came back.
    k.store(us(1), 0x8000, content(0, seed)).unwrap();

    // Back into RAM: a fresh RAM resource whose lines are dirty with garbage.
    k.user_page(1, 0x20_0000, 0x9000, PageSizeKind::Small, true);
    if dirty_resource {
        k.fill(us(1), 0x20_0000, 0x1000, seed ^ 0xff);
    }
    ops::delete_user_page(&mut k.table, &k.maps, sp(1), va(0x20_0000)).unwrap();
    let back = req(us(1), 0x8000, 0x20_0000, 1, Rights::RW);
    let mut x = k.begin(back, chunk).unwrap();
    k.run(&mut x);
    assert_eq!(
        k.maps.translate(us(1), va(0x8000)).unwrap().page,
        pa(0x9000)
    );
    k.expect(us(1), 0x8000, 0x1000, seed);
    // And in memory, once the CPU's cache is cleaned.
    k.m.borrow_mut().clean_dcache_all();
    for i in 0..0x1000 {
        assert_eq!(k.phys(0x9000 + i), content(i, seed), "RAM byte {i:#x}");
    }
}

#[test]
fn content_survives_exchange_into_tcm_and_back_with_dirty_lines() {
    round_trip(0x3c, DEFAULT_CHUNK, true, true);
    round_trip(0x3c, DEFAULT_CHUNK, true, false);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]
    #[test]
    fn content_survives_for_every_chunk_size(
        seed: u8, chunk_log in 5u32..=12, dirty: bool, remember: bool
    ) {
        round_trip(seed, 1 << chunk_log, dirty, remember);
    }
}

#[test]
fn every_mapping_in_every_address_space_follows_the_page() {
    let mut st = Storage::new();
    let mut k = Kernel::new(&mut st);
    // Shared by task 1 (writable), task 2 (read-only, another FCSE PID and
    // so another MVA) and a kernel alias.
    k.user_page(1, 0x8000, 0x5000, PageSizeKind::Small, true);
    k.maps
        .map(us(2), 0x1_0000, 0x5000, PageSizeKind::Small, false);
    k.maps
        .map(K, 0xd000_5000, 0x5000, PageSizeKind::Small, true);
    k.maps
        .map(us(1), 0x10_0000, DTCM, PageSizeKind::Small, false);
    k.fill(us(1), 0x8000, 0x1000, 9);
    // Every alias has lines in the cache (task 2's and the kernel's are
    // stale: VIVT aliasing, written back by the exchange's clean).
    k.load(us(2), 0x1_0000).unwrap();
    k.load(K, 0xd000_5000).unwrap();
    let mut x = k
        .begin(req(us(1), 0x8000, 0x10_0000, 1, Rights::RW), 128)
        .unwrap();
    k.run(&mut x);
    for (space, v) in [(us(1), 0x8000), (us(2), 0x1_0000), (K, 0xd000_5000)] {
        assert_eq!(
            k.maps.translate(space, va(v)).unwrap().page,
            pa(DTCM),
            "{space:?}"
        );
        k.expect(space, v, 0x1000, 9);
        // The model's own walk agrees (with that space's PID).
        k.enter(space);
        let t =
            k.m.borrow()
                .probe(
                    va(v),
                    armv5_sim::AccessKind::Read,
                    armv5_sim::Privilege::Privileged,
                    4,
                )
                .unwrap();
        assert_eq!(t.pa, pa(DTCM));
    }
    // Write access came back to the mappings that had it, and only those.
    assert!(k.maps.translate(us(1), va(0x8000)).unwrap().writable);
    assert!(k.maps.translate(K, va(0xd000_5000)).unwrap().writable);
    assert!(!k.maps.translate(us(2), va(0x1_0000)).unwrap().writable);
    assert!(!k.maps.translate(us(1), va(0x10_0000)).unwrap().writable);
    assert!(k.store(us(2), 0x1_0000, 1).is_err());
    k.store(K, 0xd000_5000, 0x77).unwrap();
    assert_eq!(
        k.phys(DTCM),
        0x77,
        "TCM is never cached: the store is in TCM"
    );
}

#[test]
fn a_cpu_store_between_chunks_is_not_lost() {
    for remember in [true, false] {
        store_between_chunks(remember);
    }
}

fn store_between_chunks(remember: bool) {
    let mut st = Storage::new();
    let mut k = Kernel::new(&mut st);
    if !remember {
        k.maps.generation = None;
    }
    k.user_page(1, 0x8000, 0x5000, PageSizeKind::Small, true);
    k.maps
        .map(us(1), 0x10_0000, ITCM, PageSizeKind::Small, true);
    k.fill(us(1), 0x8000, 0x1000, 3);
    let mut x = k
        .begin(req(us(1), 0x8000, 0x10_0000, 1, Rights::RW), 256)
        .unwrap();
    // Protect, then half the copy.
    for _ in 0..9 {
        assert_eq!(k.step(&mut x), Ok(Progress::Pending));
    }
    assert!(k.irq.enabled(), "interrupts are on between steps");
    // Reads during the exchange work (and may fill lines from the old frame).
    k.expect(us(1), 0x8000, 0x100, 3);
    // The task stores into an already-copied chunk: a permission fault.
    let f = k.store(us(1), 0x8010, 0xee).unwrap_err();
    assert_eq!(f.kind, FaultKind::Permission(FaultLevel::Page));
    let frame = k.maps.translate(us(1), va(0x8010)).unwrap().page;
    assert!(x.protects(frame));
    // A store through the resource's mapping faults too: it would land in
    // the target's future content.
    assert!(k.store(us(1), 0x10_0000, 0xdd).is_err());
    assert!(x.protects(pa(ITCM)));
    // The fault handler finishes the page; the writes are retried.
    // SAFETY: as in `KernelExt::step`.
    let p = unsafe { x.finish_page(&mut k.table, &mut k.maps, &mut k.hw, &mut k.irq) };
    assert_eq!(p, Ok(Progress::Done));
    k.store(us(1), 0x8010, 0xee).unwrap();
    k.store(us(1), 0x10_0000, 0xdd).unwrap();
    for i in 0..0x1000 {
        let want = if i == 0x10 { 0xee } else { content(i, 3) };
        assert_eq!(k.load(us(1), 0x8000 + i).unwrap(), want, "byte {i:#x}");
        assert_eq!(k.phys(ITCM + i), want, "ITCM byte {i:#x}");
    }
    assert_eq!(k.load(us(1), 0x10_0000).unwrap(), 0xdd);
    // Nothing stale is written back over the old frame later.
    k.m.borrow_mut().clean_dcache_all();
    assert_eq!(k.phys(0x5000), 0xdd);
    for i in 1..0x1000 {
        assert_eq!(k.phys(0x5000 + i), content(i, 3), "old frame byte {i:#x}");
    }
    // Bounded blocking: no window holds more than one chunk's copy (64
    // words) plus its bookkeeping.
    assert!(
        k.irq
            .windows
            .iter()
            .all(|w| w.d_reads <= 64 && w.d_writes <= 64),
        "{:?}",
        k.irq.windows
    );
}

/// The kernel adds a mapping of the old frame between two steps (and says
/// so through its generation): the exchange collects the mappings again,
/// so the new alias follows the page and its TLB entry is invalidated at
/// the switch. With the stale list the alias would keep reading the old
/// frame through its TLB entry.
#[test]
fn a_mapping_added_between_steps_is_followed() {
    let mut st = Storage::new();
    let mut k = Kernel::new(&mut st);
    k.user_page(1, 0x8000, 0x5000, PageSizeKind::Small, true);
    k.maps
        .map(us(1), 0x10_0000, ITCM, PageSizeKind::Small, true);
    k.fill(us(1), 0x8000, 0x1000, 5);
    let mut x = k
        .begin(req(us(1), 0x8000, 0x10_0000, 1, Rights::RW), 1024)
        .unwrap();
    assert_eq!(k.step(&mut x), Ok(Progress::Pending)); // protect
    assert_eq!(k.step(&mut x), Ok(Progress::Pending)); // first chunk
                                                       // A read-only alias in task 2, used once (its TLB entry is filled).
    k.maps
        .map(us(2), 0x3000, 0x5000, PageSizeKind::Small, false);
    k.expect(us(2), 0x3000, 0x40, 5);
    k.run(&mut x);
    assert_eq!(k.maps.translate(us(2), va(0x3000)).unwrap().page, pa(ITCM));
    // The old frame gets other content and the page (now in ITCM, which
    // is never cached) a new byte: the alias sees the page, not the frame.
    for i in 0..0x40 {
        k.set_phys(0x5000 + i, 0xa5);
    }
    k.store(us(1), 0x8000, 0x77).unwrap();
    assert_eq!(k.phys(ITCM), 0x77);
    assert_eq!(k.load(us(2), 0x3000).unwrap(), 0x77);
    for i in 1..0x40 {
        assert_eq!(k.load(us(2), 0x3000 + i).unwrap(), content(i, 5), "{i:#x}");
    }
}

#[test]
fn read_only_exchange_copies_with_interrupts_on_and_swaps_masked() {
    let mut st = Storage::new();
    let mut k = Kernel::new(&mut st);
    k.user_page(1, 0x8000, 0x5000, PageSizeKind::Small, false);
    k.maps
        .map(us(1), 0x10_0000, ITCM, PageSizeKind::Small, false);
    for i in 0..0x1000 {
        k.set_phys(0x5000 + i, content(i, 1));
    }
    let mut x = k
        .begin(req(us(1), 0x8000, 0x10_0000, 1, Rights::RX), 256)
        .unwrap();
    k.run(&mut x);
    assert_eq!(k.maps.swaps.len(), 1);
    assert!(!k.maps.swaps[0].irq_enabled, "swap ran with interrupts on");
    // The switch is the only masked window: no protect, copy or restore window.
    assert_eq!(k.irq.windows.len(), 1);
    assert_eq!(k.irq.windows[0].d_reads, 0, "no copying in the window");
    assert_eq!(x.stats().masked_windows, 1);
    k.expect(us(1), 0x8000, 0x1000, 1);
    // A writable exchange also swaps masked.
    k.user_page(1, 0x9000, 0x6000, PageSizeKind::Small, true);
    k.maps
        .map(us(1), 0x10_1000, ITCM + 0x1000, PageSizeKind::Small, false);
    let mut x = k
        .begin(req(us(1), 0x9000, 0x10_1000, 1, Rights::RW), 256)
        .unwrap();
    k.run(&mut x);
    assert!(k.maps.swaps.iter().all(|s| !s.irq_enabled));
}

/// A writable page with a chunk of the page's size: two steps (protect and
/// copy; switch, flush and restore), one masked window per page side for
/// the protection and the restore plus the switch's, none with copying in
/// it, and the content and write access afterwards as with small chunks.
#[test]
fn a_page_sized_chunk_takes_two_steps_with_one_window_per_side() {
    let mut st = Storage::new();
    let mut k = Kernel::new(&mut st);
    k.user_page(1, 0x8000, 0x5000, PageSizeKind::Small, true);
    k.maps
        .map(us(1), 0x10_0000, ITCM, PageSizeKind::Small, true);
    k.fill(us(1), 0x8000, 0x1000, 7);
    let mut x = k
        .begin(req(us(1), 0x8000, 0x10_0000, 1, Rights::RW), 0x1000)
        .unwrap();
    assert_eq!(k.step(&mut x), Ok(Progress::Pending));
    assert!(k.irq.enabled(), "interrupts are on between steps");
    // Between the steps: copied, not switched, both pages protected.
    assert_eq!(x.stats().bytes_copied, 0x1000);
    assert!(k.store(us(1), 0x8000, 1).is_err());
    assert!(k.store(us(1), 0x10_0000, 1).is_err());
    assert_eq!(k.step(&mut x), Ok(Progress::Done));
    assert_eq!(x.stats().steps, 2);
    // Protect old, protect new, switch, restore new, restore old.
    assert_eq!(k.irq.windows.len(), 5, "{:?}", k.irq.windows);
    assert_eq!(x.stats().masked_windows, 5);
    assert!(
        k.irq
            .windows
            .iter()
            .all(|w| w.d_reads < 64 && w.d_writes < 64),
        "a window copied: {:?}",
        k.irq.windows
    );
    assert_eq!(k.maps.translate(us(1), va(0x8000)).unwrap().page, pa(ITCM));
    k.expect(us(1), 0x8000, 0x1000, 7);
    k.store(us(1), 0x8000, 0x55).unwrap();
    assert_eq!(k.phys(ITCM), 0x55);
    assert!(!k.table.desc(pa(ITCM)).unwrap().is_busy());
    assert!(!k.table.desc(pa(0x5000)).unwrap().is_busy());
}

#[test]
fn a_64k_large_page_moves_into_dtcm_and_back() {
    let mut st = Storage::new();
    let mut k = Kernel::new(&mut st);
    k.user_page(1, 0x4_0000, 0x4_0000, PageSizeKind::Large, true);
    k.maps
        .map(us(1), 0x10_0000, DTCM, PageSizeKind::Large, true);
    k.fill(us(1), 0x4_0000, 0x1_0000, 0x11);
    let mut r = req(us(1), 0x4_0000, 0x10_0000, 1, Rights::RW);
    r.size = PageSizeKind::Large;
    let mut x = k.begin(r, 1024).unwrap();
    k.run(&mut x);
    assert_eq!(x.stats().bytes_copied, 0x1_0000);
    let t = k.maps.translate(us(1), va(0x4_8000)).unwrap();
    assert_eq!((t.page, t.size), (pa(DTCM), PageSizeKind::Large));
    for f in 0..16 {
        assert_eq!(k.state(DTCM + f * 0x1000), FrameState::User(sp(1)));
    }
    k.expect(us(1), 0x4_0000, 0x1_0000, 0x11);
    // Back into the original RAM (kept as the owner's page at the resource address).
    let mut back = req(us(1), 0x4_0000, 0x10_0000, 1, Rights::RW);
    back.size = PageSizeKind::Large;
    ops::delete_user_page(&mut k.table, &k.maps, sp(1), va(0x10_0000)).unwrap();
    for f in 1..16 {
        // Every frame of the large page becomes a resource again.
        ops::delete_user_page(&mut k.table, &k.maps, sp(1), va(0x10_0000 + f * 0x1000)).unwrap();
    }
    let mut x = k.begin(back, 4096).unwrap();
    k.run(&mut x);
    assert_eq!(
        k.maps.translate(us(1), va(0x4_0000)).unwrap().page,
        pa(0x4_0000)
    );
    k.expect(us(1), 0x4_0000, 0x1_0000, 0x11);
}

#[test]
fn tiny_pages_are_refused_by_the_operations() {
    let mut st = Storage::new();
    let mut k = Kernel::new(&mut st);
    k.maps
        .map(us(1), 0x90_0000, 0x3e_0000, PageSizeKind::Tiny, true);
    // SAFETY: as in `KernelExt::step`.
    let r =
        unsafe { ops::create_user_page(&mut k.table, &k.maps, &mut k.hw, sp(1), va(0x90_0000)) };
    assert_eq!(r, Err(OpError::TinyPage(va(0x90_0000))));
    assert_eq!(k.state(0x3e_0000), FrameState::Resource);
}

#[test]
fn create_zeroes_a_resource_with_a_dirty_line_of_the_previous_owner() {
    let mut st = Storage::new();
    let mut k = Kernel::new(&mut st);
    k.user_page(1, 0x8000, 0x5000, PageSizeKind::Small, true);
    k.fill(us(1), 0x8000, 0x1000, 0xa5);
    assert!(k.dirty_lines() > 0);
    ops::delete_user_page(&mut k.table, &k.maps, sp(1), va(0x8000)).unwrap();
    // Task 2 gets the resource mapped and creates a user page from it.
    k.maps.map(us(2), 0x8000, 0x5000, PageSizeKind::Small, true);
    // SAFETY: as in `KernelExt::step`.
    unsafe { ops::create_user_page(&mut k.table, &k.maps, &mut k.hw, sp(2), va(0x8000)) }.unwrap();
    assert_eq!(k.state(0x5000), FrameState::User(sp(2)));
    // The old owner's dirty lines were discarded, not written back later.
    assert_eq!(k.dirty_lines(), 0);
    k.m.borrow_mut().clean_dcache_all();
    for i in 0..0x1000 {
        assert_eq!(k.phys(0x5000 + i), 0, "memory byte {i:#x}");
        assert_eq!(k.load(us(2), 0x8000 + i).unwrap(), 0, "task 2 byte {i:#x}");
        assert_eq!(
            k.load(us(1), 0x8000 + i).unwrap(),
            0,
            "old alias byte {i:#x}"
        );
    }
}
