//! `spm::SpaceMappings` over every `fass` switch strategy (FASS, the naive
//! per-space tables, per-space tables with FCSE PIDs) plus the kernel's own
//! table, on the `armv5-sim` model with its VIVT caches on.
//!
//! For each strategy the same round trip: task A's page, dirty in the
//! D-cache, moves into a DTCM frame that only the kernel's table maps (a
//! kernel page, the way a kernel keeps its TCM windows), then back into
//! RAM. Every byte survives both ways, including a write A made while the
//! page was in TCM; task B, which maps its own frame at the same address,
//! never sees A's data nor loses its own (isolation); the kernel's page
//! ends where it started. Then the refusals: bad requests are typed errors
//! before anything changes, and a kernel section is never edited.

mod common;

use armv5_sim::{sctlr, Privilege, Width};
use fass::{ClassicKind, Cpd, DefaultPolicy, DomainSet, Fass, KernelTable, Layout, PidMode};
use fass::{Platform, Resolution, SpaceId, Split, SwitchStrategy, TableSwitch};
use mmu_armv5::descriptor::{AccessPermission as Ap, CachePolicy, L1Encoding};
use mmu_armv5::regs::{Cp15Ext, Dacr, DomainAccess, Far, Fsr, Sctlr, Ttbr};
use mmu_armv5::size::{Frame, Page, PageRange, PageSizeKind, Size4KiB};
use mmu_armv5::table::{MapAttrs, PageTable, SizePolicy};
use mmu_armv5::{Domain, ModifiedVirtAddr, PhysAddr, VirtAddr};
use spm::ops::{self, StateRequest};
use spm::AddressSpace::{Kernel, User};
use spm::{AddressSpace, FrameIndex, Mappings, RecordingIrq, Rights, SpaceMappings, SpaceTables};
use spm::{Exchange, ExchangeError, ExchangeRequest, FassMappingsError, FrameState, Hw};
use spm::{ReverseMapping, WalkTables};
use std::cell::Cell;
use std::collections::HashMap;

/// Task A's page and task B's, at the same address in each space.
const VA: u32 = 0x8000;
const FRAME_A: u32 = 0x0010_0000;
const FRAME_B: u32 = 0x0011_0000;
/// The kernel's page of the DTCM frame (a small page of its own table).
const KRES: u32 = 0xE000_0000;
const A: SpaceId = SpaceId(1);
const B: SpaceId = SpaceId(2);

fn va(a: u32) -> VirtAddr {
    VirtAddr::new(a)
}
fn pa(a: u32) -> PhysAddr {
    PhysAddr::new(a)
}
fn a_byte(i: u32) -> u8 {
    (i.wrapping_mul(29) ^ (i >> 4)) as u8
}
fn b_byte(i: u32) -> u8 {
    !(i as u8)
}

type Sys = Split<common::Hw, common::ModelTables>;

/// The machine, its platform and the kernel's table: the physical window
/// (uncached sections, through which `common::Hw` copies) and `KRES`, a
/// cached small page of the DTCM's first frame. The MMU runs on it, with
/// the caches and SCTLR.S on.
fn kernel() -> (common::Shared, Sys, PageTable, KernelTable) {
    let m = common::machine();
    let mut sys = Split::new(common::Hw { m: m.clone() }, common::ModelTables(m.clone()));
    let mut kt = PageTable::new(&mut sys).unwrap();
    let attrs = |c| MapAttrs::new(Domain::default(), Ap::PrivRw, c);
    let window = ModifiedVirtAddr::new(common::WINDOW);
    kt.map(
        &mut sys,
        window,
        pa(0),
        9 << 20,
        attrs(CachePolicy::Uncached),
        SizePolicy::Largest,
    )
    .unwrap()
    .flush_on(&mut sys);
    let kres = ModifiedVirtAddr::new(KRES);
    kt.map(
        &mut sys,
        kres,
        pa(common::DTCM),
        0x1000,
        attrs(CachePolicy::WriteBack),
        SizePolicy::Largest,
    )
    .unwrap()
    .flush_on(&mut sys);
    {
        let mut mm = m.borrow_mut();
        mm.set_ttbr(Ttbr::new(kt.root()).unwrap());
        mm.set_sctlr(Sctlr::from_bits(sctlr::M | sctlr::C | sctlr::I | sctlr::S));
    }
    // SAFETY: the model's registers are the model's; the table maps all
    // the kernel side of these tests uses (the window and `KRES`).
    let k = unsafe {
        KernelTable::new(
            &sys,
            kt.root(),
            L1Encoding::Arm9,
            &Layout::DEMO,
            Domain::default(),
        )
    }
    .unwrap();
    (m, sys, kt, k)
}

/// A user access of space `id` (switched to first) on the model, with the
/// strategy resolving the faults it caused as a kernel's abort handler
/// would: the byte loaded (or stored), or the fault status not resolved.
fn user<T: SwitchStrategy, S: Platform + Cp15Ext>(
    t: &mut T,
    sys: &mut S,
    m: &common::Shared,
    id: SpaceId,
    v: u32,
    store: Option<u8>,
) -> Result<u8, Fsr> {
    t.switch_to(sys, id).unwrap();
    for _ in 0..4 {
        let r = match store {
            Some(b) => m
                .borrow_mut()
                .store(va(v), Width::Byte, u32::from(b), Privilege::User)
                .map(|()| u32::from(b)),
            None => m.borrow_mut().load(va(v), Width::Byte, Privilege::User),
        };
        if let Ok(b) = r {
            return Ok(b as u8);
        }
        let (fsr, far): (Fsr, Far) = (sys.dfsr(), sys.far());
        match t.resolve(sys, fsr, far) {
            Ok(Resolution::Resolved { .. }) => continue,
            _ => return Err(fsr),
        }
    }
    Err(Fsr::from_bits(u32::MAX))
}

fn pages(a: u32) -> PageRange<Size4KiB, VirtAddr> {
    Page::from_start(va(a)).unwrap().into()
}

/// The round trip on strategy `t` (built over the kernel table `k`).
/// `user_domain`: the domain the classic strategies map tasks in, which
/// the kernel keeps client in the DACR (FASS writes the DACR itself).
fn round_trip<T: SpaceTables, I: FrameIndex>(
    user_domain: Option<Domain>,
    index: I,
    make: impl FnOnce(KernelTable) -> T,
) {
    let (m, mut sys, mut kt, k) = kernel();
    if let Some(d) = user_domain {
        let dacr =
            Dacr::only(Domain::default(), DomainAccess::Client).with(d, DomainAccess::Client);
        // SAFETY: the model's register; both domains' tables are valid.
        unsafe { sys.set_dacr(dacr) };
    }
    let mut t = make(k);
    let (rw, wb) = (Ap::ReadWrite, CachePolicy::WriteBack);
    for (s, f) in [(A, FRAME_A), (B, FRAME_B)] {
        t.create_space(&mut sys, s).unwrap();
        t.map_pages(
            &mut sys,
            s,
            pages(VA),
            Frame::from_start(pa(f)).unwrap(),
            rw,
            wb,
        )
        .unwrap();
    }
    // Each line read first (the D-cache allocates on reads only), then
    // written: A's page dirty in the cache, stale in memory.
    for i in (0..0x1000).step_by(32) {
        user(&mut t, &mut sys, &m, A, VA + i, None).unwrap();
    }
    for i in 0..0x1000 {
        user(&mut t, &mut sys, &m, A, VA + i, Some(a_byte(i))).unwrap();
        user(&mut t, &mut sys, &m, B, VA + i, Some(b_byte(i))).unwrap();
    }

    let mut storage = common::Storage::new();
    let mut table = storage.table();
    for (f, s) in [(FRAME_A, A), (FRAME_B, B)] {
        table
            .init_range(Frame::from_start(pa(f)).unwrap(), FrameState::User(s), true)
            .unwrap();
    }
    let hw = || common::Hw { m: m.clone() };
    let (mut hw, mut irq) = (Hw::new(hw(), hw()), RecordingIrq::new());

    // The whole round trip: in, the kernel gives the old frame back as a
    // resource, back, the kernel gives the TCM frame back.
    let mut maps = SpaceMappings::new(&mut t, &mut sys)
        .with_kernel(&mut kt)
        .with_index(index);
    let req = ExchangeRequest {
        caller: Kernel,
        target_space: User(A),
        target: va(VA),
        resource_space: Kernel,
        resource: va(KRES),
        size: PageSizeKind::Small,
        count: 1,
        rights: Rights::RW,
    };
    let g0 = maps.generation();
    let mut ex = Exchange::begin(&mut table, &maps, req, 1024).unwrap();
    // SAFETY: the model's frame table, the strategy's tables, the kernel's
    // table and the machine are one consistent (simulated) system; nothing
    // of this program moves.
    unsafe { ex.run(&mut table, &mut maps, &mut hw, &mut irq) }.unwrap();
    assert!(ex.is_done() && !irq.is_masked());
    assert_eq!((maps.take_error(), maps.protected()), (None, 0));
    // spm's own changes are no change of the mappings; the kernel's are.
    assert_eq!(maps.generation(), g0);
    assert!(maps.edit_kernel().is_some());
    assert!(maps.generation() > g0);
    let at = |maps: &SpaceMappings<'_, T, Sys, I>, s, v| maps.translate(s, va(v)).map(|t| t.page);
    assert_eq!(at(&maps, User(A), VA), Some(pa(common::DTCM)));
    assert_eq!(at(&maps, User(B), VA), Some(pa(FRAME_B)));
    assert_eq!(at(&maps, Kernel, KRES), Some(pa(FRAME_A)));
    assert_eq!(
        table.desc(pa(common::DTCM)).unwrap().state(),
        FrameState::User(A)
    );

    // A reads its page from TCM and writes one byte there; B still reads
    // its own.
    let (tm, sm) = maps.edit();
    for i in (0..0x1000).step_by(5) {
        assert_eq!(user(tm, sm, &m, A, VA + i, None), Ok(a_byte(i)), "A {i:#x}");
        assert_eq!(user(tm, sm, &m, B, VA + i, None), Ok(b_byte(i)), "B {i:#x}");
    }
    user(tm, sm, &m, A, VA + 0x123, Some(0x5A)).unwrap();
    let got = m
        .borrow()
        .phys_read(pa(common::DTCM + 7), Width::Byte)
        .unwrap();
    assert_eq!(got as u8, a_byte(7), "the copy reached DTCM itself");

    // Back: the old frame, at the kernel's page now, becomes a resource.
    assert!(matches!(
        Exchange::begin(&mut table, &maps, req, 1024),
        Err(ExchangeError::NotResource { .. })
    ));
    let to_resource = StateRequest::Set(FrameState::Resource);
    // SAFETY: as above.
    unsafe { ops::change_state(&mut table, &maps, &mut hw, Kernel, va(KRES), to_resource) }
        .unwrap();
    let mut ex = Exchange::begin(&mut table, &maps, req, 1024).unwrap();
    // SAFETY: as above.
    unsafe { ex.run(&mut table, &mut maps, &mut hw, &mut irq) }.unwrap();
    assert!(ex.is_done());
    assert_eq!(maps.take_error(), None);
    assert_eq!(at(&maps, User(A), VA), Some(pa(FRAME_A)));
    assert_eq!(at(&maps, Kernel, KRES), Some(pa(common::DTCM)));
    // SAFETY: as above.
    unsafe { ops::change_state(&mut table, &maps, &mut hw, Kernel, va(KRES), to_resource) }
        .unwrap();
    assert_eq!(
        table.desc(pa(common::DTCM)).unwrap().state(),
        FrameState::Resource
    );
    assert_eq!(
        table.desc(pa(FRAME_A)).unwrap().state(),
        FrameState::User(A)
    );
    assert_eq!(table.busy_frames(), 0);

    // Every byte is back in RAM, the one written in TCM too; B untouched.
    let (tm, sm) = maps.edit();
    for i in 0..0x1000 {
        let want = if i == 0x123 { 0x5A } else { a_byte(i) };
        assert_eq!(user(tm, sm, &m, A, VA + i, None), Ok(want), "A {i:#x}");
        assert_eq!(user(tm, sm, &m, B, VA + i, None), Ok(b_byte(i)), "B {i:#x}");
    }
    assert_eq!(user(tm, sm, &m, A, VA, Some(1)), Ok(1), "writable again");

    // Refusals, typed and before anything changes.
    let unmapped = ExchangeRequest {
        target: va(0x0004_0000),
        ..req
    };
    assert_eq!(
        Exchange::begin(&mut table, &maps, unmapped, 1024).err(),
        Some(ExchangeError::NotMapped(va(0x0004_0000)))
    );
    let misaligned = ExchangeRequest {
        target: va(VA + 4),
        ..req
    };
    assert_eq!(
        Exchange::begin(&mut table, &maps, misaligned, 1024).err(),
        Some(ExchangeError::Misaligned(va(VA + 4)))
    );
    // B's page is not a resource A's exchange may take.
    let foreign = ExchangeRequest {
        resource_space: User(B),
        resource: va(VA),
        ..req
    };
    assert!(matches!(
        Exchange::begin(&mut table, &maps, foreign, 1024),
        Err(ExchangeError::NotResource { .. })
    ));
    assert_eq!(table.busy_frames(), 0);
    // The kernel's sections (the window) are reported, never edited.
    let w = maps.translate(Kernel, va(common::WINDOW)).unwrap();
    assert_eq!((w.page, w.size), (pa(0), PageSizeKind::Section));
    maps.write_protect(pa(0), PageSizeKind::Section);
    assert_eq!(
        maps.take_error(),
        Some(FassMappingsError::KernelSection(ModifiedVirtAddr::new(
            common::WINDOW
        )))
    );
    assert!(maps.translate(Kernel, va(common::WINDOW)).unwrap().writable);
}

#[test]
fn round_trip_through_tcm_on_fass() {
    round_trip(None, WalkTables, |k| {
        Fass::<DefaultPolicy, 8, 8, 4>::new(Cpd::new(k), DomainSet::EMPTY, DefaultPolicy::default())
            .unwrap()
    });
}

#[test]
fn round_trip_through_tcm_on_naive_tables() {
    let user = Domain::new(1).unwrap();
    round_trip(Some(user), WalkTables, |k| {
        TableSwitch::<8, 2>::new(ClassicKind::Naive, user, k)
    });
}

#[test]
fn round_trip_through_tcm_on_tables_with_fcse_pids() {
    let user = Domain::new(1).unwrap();
    round_trip(Some(user), WalkTables, |k| {
        TableSwitch::<8, 2>::new(ClassicKind::Fcse(PidMode::Guaranteed), user, k)
    });
}

/// A kernel's reverse index as the tests keep it: the sites of each frame
/// it covers, how often it was asked, the swaps it was told of, and a
/// generation the test advances.
#[derive(Default)]
struct RecIndex {
    sites: HashMap<PhysAddr, Vec<(AddressSpace, VirtAddr)>>,
    asked: Cell<usize>,
    moves: Vec<(PhysAddr, PhysAddr)>,
    generation: Cell<u64>,
}

impl RecIndex {
    /// Task A's frame (and a stale claim that B maps it too), B's frame,
    /// and the DTCM frame at the kernel's page.
    fn of_the_round_trip() -> Self {
        let mut r = RecIndex::default();
        r.sites
            .insert(pa(FRAME_A), vec![(User(A), va(VA)), (User(B), va(VA))]);
        r.sites.insert(pa(FRAME_B), vec![(User(B), va(VA))]);
        r.sites.insert(pa(common::DTCM), vec![(Kernel, va(KRES))]);
        r
    }
}

impl FrameIndex for RecIndex {
    fn sites_of(
        &self,
        page: PhysAddr,
        size: PageSizeKind,
        f: &mut dyn FnMut(AddressSpace, VirtAddr),
    ) -> bool {
        let Some(v) = self
            .sites
            .get(&page)
            .filter(|_| size == PageSizeKind::Small)
        else {
            return false;
        };
        self.asked.set(self.asked.get() + 1);
        v.iter().for_each(|&(s, a)| f(s, a));
        true
    }
    fn generation(&self) -> u64 {
        self.generation.get()
    }
    fn moved(&mut self, a: PhysAddr, b: PhysAddr, size: PageSizeKind) {
        assert_eq!(size, PageSizeKind::Small);
        self.moves.push((a, b));
        let sa = self.sites.remove(&a).unwrap_or_default();
        let sb = self.sites.remove(&b).unwrap_or_default();
        self.sites.insert(a, sb);
        self.sites.insert(b, sa);
    }
}

fn fass_8(k: KernelTable) -> Fass<DefaultPolicy, 8, 8, 4> {
    Fass::new(Cpd::new(k), DomainSet::EMPTY, DefaultPolicy::default()).unwrap()
}

/// The same round trip with the kernel's reverse index asked instead of a
/// walk, on each strategy: its stale site is dropped (B keeps its own
/// frame), and its records follow both swaps.
#[test]
fn round_trip_with_a_reverse_index_on_each_strategy() {
    let user = Domain::new(1).unwrap();
    let check = |idx: RecIndex| {
        assert!(idx.asked.get() > 0, "the index was asked");
        assert_eq!(idx.moves.len(), 2, "told of both swaps");
        let (a, d) = (pa(FRAME_A), pa(common::DTCM));
        for m in &idx.moves {
            assert!(*m == (a, d) || *m == (d, a), "{m:?}");
        }
        assert_eq!(idx.sites[&a][0], (User(A), va(VA)));
        assert_eq!(idx.sites[&d], [(Kernel, va(KRES))]);
    };
    let mut idx = RecIndex::of_the_round_trip();
    round_trip(None, &mut idx, fass_8);
    check(idx);
    let mut idx = RecIndex::of_the_round_trip();
    round_trip(Some(user), &mut idx, |k| {
        TableSwitch::<8, 2>::new(ClassicKind::Naive, user, k)
    });
    check(idx);
    let mut idx = RecIndex::of_the_round_trip();
    round_trip(Some(user), &mut idx, |k| {
        TableSwitch::<8, 2>::new(ClassicKind::Fcse(PidMode::Guaranteed), user, k)
    });
    check(idx);
}

/// Task A's frame mapped, on FASS, for the index tests below.
fn one_task() -> (common::Shared, Sys, PageTable, Fass<DefaultPolicy, 8, 8, 4>) {
    let (m, mut sys, kt, k) = kernel();
    let mut t = fass_8(k);
    t.create_space(&mut sys, A).unwrap();
    let frame = Frame::from_start(pa(FRAME_A)).unwrap();
    t.map_pages(
        &mut sys,
        A,
        pages(VA),
        frame,
        Ap::ReadWrite,
        CachePolicy::WriteBack,
    )
    .unwrap();
    (m, sys, kt, t)
}

fn spaces_of<M: Mappings>(maps: &M, page: u32) -> Vec<AddressSpace> {
    let mut seen = Vec::new();
    maps.for_each_mapping(pa(page), PageSizeKind::Small, &mut |m: &ReverseMapping| {
        seen.push(m.space)
    });
    seen
}

/// A page the index covers is answered by the index alone (a mapping it
/// leaves out is not found), one it does not cover is walked, and the
/// index's generation is part of the adapter's.
#[test]
fn the_index_is_trusted_where_it_covers_and_counts_in_the_generation() {
    let (_m, mut sys, mut kt, mut t) = one_task();
    let mut idx = RecIndex::default();
    // The index knows A's frame, and believes nobody maps the DTCM frame.
    idx.sites.insert(pa(FRAME_A), vec![(User(A), va(VA))]);
    idx.sites.insert(pa(common::DTCM), vec![]);
    let maps = SpaceMappings::new(&mut t, &mut sys)
        .with_kernel(&mut kt)
        .with_index(&mut idx);
    assert_eq!(spaces_of(&maps, FRAME_A), [User(A)]);
    assert_eq!(spaces_of(&maps, common::DTCM), []);
    // The window's first section: not covered, walked.
    let mut n = 0;
    maps.for_each_mapping(pa(0), PageSizeKind::Section, &mut |m| {
        assert_eq!(m.space, Kernel);
        n += 1;
    });
    assert_eq!(n, 1);
    let g = maps.generation().unwrap();
    maps.index()
        .generation
        .set(maps.index().generation.get() + 1);
    assert_eq!(maps.generation(), Some(g + 1));
    drop(maps);
    let asked = idx.asked.get();
    assert!(asked >= 2);

    // The same machine without the index: the kernel's page is found.
    let maps = SpaceMappings::new(&mut t, &mut sys).with_kernel(&mut kt);
    assert_eq!(spaces_of(&maps, common::DTCM), [Kernel]);
}

/// Between a swap and its `swapped`, the index still has the two pages'
/// mappings under their old frames: the adapter asks for both, so each
/// page's mappings are found where they are now; `swapped` tells the
/// index, which then answers alone.
#[test]
fn between_swap_and_swapped_both_pages_are_asked() {
    let (_m, mut sys, mut kt, mut t) = one_task();
    let mut idx = RecIndex::of_the_round_trip();
    let mut maps = SpaceMappings::new(&mut t, &mut sys)
        .with_kernel(&mut kt)
        .with_index(&mut idx);
    let (a, d) = (pa(FRAME_A), pa(common::DTCM));
    maps.swap(a, d, PageSizeKind::Small);
    // A third page asked pushes one of the two out of the adapter's memory
    // of the last two pages: the index answers for it.
    assert_eq!(spaces_of(&maps, FRAME_B), []);
    assert_eq!(spaces_of(&maps, FRAME_A), [Kernel]);
    assert_eq!(spaces_of(&maps, common::DTCM), [User(A)]);
    assert!(maps.index().moves.is_empty());
    maps.swapped(a, d, PageSizeKind::Small);
    assert_eq!(maps.index().moves, [(a, d)]);
    assert_eq!(spaces_of(&maps, FRAME_B), []);
    assert_eq!(spaces_of(&maps, FRAME_A), [Kernel]);
    assert_eq!(spaces_of(&maps, common::DTCM), [User(A)]);
    assert_eq!(maps.take_error(), None);
}
