//! [`TableMappings`] against the [`Mappings`] contract, over real tables
//! in host memory, and one exchange through it.

use super::*;
use crate::exchange::DEFAULT_CHUNK;
use crate::hw::{Hw, PhysWindows, RecordingIrq};
use crate::{
    Exchange, ExchangeRequest, FrameDesc, FrameState, FrameTable, InitialUse, Location, PhysRegion,
    Rights, SectionSummary,
};
use mmu_armv5::descriptor::{AccessPermission as Ap, CachePolicy};
use mmu_armv5::maint::Arm926;
use mmu_armv5::regs::{Cp15Event, Cp15Op, MockCp15};
use mmu_armv5::size::Frame;
use mmu_armv5::table::{MapAttrs, PoolBlock, SizePolicy, TablePool};
use mmu_armv5::Domain;
use std::boxed::Box;
use std::vec;
use std::vec::Vec;

const BLOCKS: usize = 6;
type Pool<'m> = TablePool<'m, BLOCKS>;
type Maps<'t, 'm> = TableMappings<'t, Pool<'m>, Arm926<MockCp15>, 4>;

fn pa(a: u32) -> PhysAddr {
    PhysAddr::new(a)
}

fn mva(a: u32) -> ModifiedVirtAddr {
    ModifiedVirtAddr::new(a)
}

fn va(a: u32) -> VirtAddr {
    VirtAddr::new(a)
}

fn pid(n: u8) -> FcsePid {
    FcsePid::new(n).unwrap()
}

/// User space `n` (its FCSE PID is `n` too).
fn user(n: u16) -> AddressSpace {
    AddressSpace::User(crate::SpaceId(n))
}

const K: AddressSpace = AddressSpace::Kernel;

fn cpu() -> Arm926<MockCp15> {
    Arm926::new(MockCp15::arm926())
}

fn mem() -> Box<[PoolBlock; BLOCKS]> {
    Box::new([PoolBlock::ZERO; BLOCKS])
}

fn pool(m: &mut [PoolBlock; BLOCKS]) -> Pool<'_> {
    TablePool::new(m, pa(0x0100_0000), mva(0xC100_0000)).unwrap()
}

fn map(pt: &mut PageTable, pool: &mut Pool, at: u32, to: u32, size: PageSizeKind, ap: Ap) {
    let attrs = MapAttrs::new(Domain::new(0).unwrap(), ap, CachePolicy::WriteBack);
    pt.map(
        pool,
        mva(at),
        pa(to),
        size.size(),
        attrs,
        SizePolicy::Exactly(size),
    )
    .unwrap()
    .flush(&mut cpu(), pool);
}

/// Page P (RAM 0x5000) and page Q (TCM 0x0300_0000), mapped by:
/// * the kernel table (kernel, PID 0; task 1, PID 1, shares it):
///   task 1 VA 0x8000 -> P read/write (MVA 0x0200_8000), kernel
///   0xC000_5000 -> P privileged read/write, 0xC300_0000 -> Q
///   privileged read/write, a section 0xD000_0000 -> 0;
/// * task 2's table (PID 2): VA 0x9000 -> P user read-only (MVA
///   0x0400_9000), and the kernel's 0xC00 and 0xD00 slots shared (the
///   second-level table of 0xC00 linked, the section copied).
fn world(pool: &mut Pool) -> (PageTable, PageTable) {
    let mut k = PageTable::new(pool).unwrap();
    let mut t2 = PageTable::new(pool).unwrap();
    let small = PageSizeKind::Small;
    map(&mut k, pool, 0x0200_8000, 0x5000, small, Ap::ReadWrite);
    map(&mut k, pool, 0xC000_5000, 0x5000, small, Ap::PrivRw);
    map(&mut k, pool, 0xC300_0000, 0x0300_0000, small, Ap::PrivRw);
    map(
        &mut k,
        pool,
        0xD000_0000,
        0,
        PageSizeKind::Section,
        Ap::PrivRw,
    );
    map(&mut t2, pool, 0x0400_9000, 0x5000, small, Ap::PrivRwUserRo);
    for slots in [0xC00..0xC01, 0xD00..0xD01] {
        k.share_l1_entries(pool, &mut t2, slots)
            .unwrap()
            .flush(&mut cpu(), pool);
    }
    (k, t2)
}

fn register<'t, 'm>(
    pool: &'t mut Pool<'m>,
    k: &'t mut PageTable,
    t2: &'t mut PageTable,
) -> Maps<'t, 'm> {
    let mut maps = Maps::new(pool, cpu());
    maps.add(K, FcsePid::ZERO, k).unwrap();
    maps.add_sharing(user(1), pid(1), K).unwrap();
    maps.add(user(2), pid(2), t2).unwrap();
    maps
}

fn mappings<M: Mappings>(maps: &M, page: u32, size: PageSizeKind) -> Vec<ReverseMapping> {
    let mut v = Vec::new();
    maps.for_each_mapping(pa(page), size, &mut |m| v.push(*m));
    v
}

fn m(space: AddressSpace, at: u32, writable: bool) -> ReverseMapping {
    ReverseMapping {
        space,
        mva: mva(at),
        writable,
        cached: true,
    }
}

/// The permissions of the page at `at` in table `t`.
fn ap_at(maps: &Maps, space: AddressSpace, at: u32) -> SubpageAp {
    maps.table(space)
        .unwrap()
        .lookup(maps.alloc(), mva(at))
        .unwrap()
        .unwrap()
        .ap
}

#[test]
fn registration_is_checked() {
    let mut mem = mem();
    let mut pool = pool(&mut mem);
    let (mut k, mut t2) = world(&mut pool);
    // SAFETY: no other `PageTable` manages this root (never written).
    let mut spare = unsafe { PageTable::from_root(pa(0x0900_0000), Default::default()) }.unwrap();
    let mut maps = TableMappings::<_, _, 2>::new(&mut pool, cpu());
    assert_eq!(
        maps.add_sharing(user(1), pid(1), K),
        Err(TablesError::UnknownSpace(K))
    );
    maps.add(K, FcsePid::ZERO, &mut k).unwrap();
    assert_eq!(
        maps.add_sharing(K, pid(3), K),
        Err(TablesError::Duplicate(K))
    );
    // A table the allocator cannot reach is refused up front.
    assert_eq!(
        maps.add(user(3), pid(3), &mut spare),
        Err(TablesError::Table(TableError::UnreachableTable(pa(
            0x0900_0000
        ))))
    );
    maps.add(user(2), pid(2), &mut t2).unwrap();
    assert_eq!(maps.add_sharing(user(1), pid(1), K), Err(TablesError::Full));
    assert!(
        maps.translate(user(1), va(0x8000)).is_none(),
        "not registered"
    );
}

#[test]
fn translate_relocates_by_each_spaces_pid() {
    let mut mem = mem();
    let mut pool = pool(&mut mem);
    let (mut k, mut t2) = world(&mut pool);
    let maps = register(&mut pool, &mut k, &mut t2);
    let t = |s, a| maps.translate(s, va(a));
    let small = |page, writable| {
        Some(Translation {
            page: pa(page),
            size: PageSizeKind::Small,
            writable,
        })
    };
    assert_eq!(t(user(1), 0x8123), small(0x5000, true));
    assert_eq!(
        t(user(2), 0x9FFF),
        small(0x5000, true),
        "privileged code may write"
    );
    assert_eq!(t(user(1), 0x9000), None, "task 2's page is not task 1's");
    assert_eq!(t(K, 0xC000_5004), small(0x5000, true));
    assert_eq!(t(user(2), 0xC300_0000), None, "slot 0xC03 is not shared");
    // Addresses above 32 MiB are not relocated: the shared kernel slots.
    assert_eq!(t(user(2), 0xC000_5000), small(0x5000, true));
    assert_eq!(
        t(user(2), 0xD00F_3456),
        Some(Translation {
            page: pa(0),
            size: PageSizeKind::Section,
            writable: true
        })
    );
    assert_eq!(
        t(K, 0x0200_8000),
        small(0x5000, true),
        "the kernel sees MVAs"
    );
}

#[test]
fn every_mapping_of_a_page_is_reported_once_per_descriptor() {
    let mut mem = mem();
    let mut pool = pool(&mut mem);
    let (mut k, mut t2) = world(&mut pool);
    let maps = register(&mut pool, &mut k, &mut t2);
    // Three spaces map P; the kernel's alias is one descriptor in a
    // second-level table both tables link: reported once.
    assert_eq!(
        mappings(&maps, 0x5000, PageSizeKind::Small),
        [
            m(user(1), 0x0200_8000, true),
            m(K, 0xC000_5000, true),
            m(user(2), 0x0400_9000, true),
        ]
    );
    // Asked again (remembered now): the same.
    assert_eq!(mappings(&maps, 0x5000, PageSizeKind::Small).len(), 3);
    // The section is copied into both first-level tables: two descriptors.
    assert_eq!(
        mappings(&maps, 0, PageSizeKind::Section),
        [m(K, 0xD000_0000, true), m(user(2), 0xD000_0000, true)]
    );
    // Sizes must match; unmapped pages have none.
    assert!(mappings(&maps, 0x5000, PageSizeKind::Large).is_empty());
    assert!(mappings(&maps, 0x6000, PageSizeKind::Small).is_empty());
    let mut out = [NO_MAPPING; 2];
    assert_eq!(
        maps.collect_mappings(pa(0x5000), PageSizeKind::Small, &mut out),
        3
    );
    assert_eq!(out[1], m(K, 0xC000_5000, true));
}

const NO_MAPPING: ReverseMapping = ReverseMapping {
    space: AddressSpace::Kernel,
    mva: ModifiedVirtAddr::new(0),
    writable: false,
    cached: false,
};

#[test]
fn write_protection_is_restored_exactly() {
    let mut mem = mem();
    let mut pool = pool(&mut mem);
    let (mut k, mut t2) = world(&mut pool);
    // Task 1's page gets mixed subpage permissions, one of them none.
    let mixed = SubpageAp([Ap::ReadWrite, Ap::NoneOrRom, Ap::PrivRwUserRo, Ap::PrivRw]);
    k.set_page_ap(&pool, mva(0x0200_8000), mixed)
        .unwrap()
        .flush(&mut cpu(), &mut pool);
    let mut maps = register(&mut pool, &mut k, &mut t2);
    let gen = maps.generation();
    let before = [
        (user(1), 0x0200_8000),
        (K, 0xC000_5000),
        (user(2), 0x0400_9000),
    ]
    .map(|(s, a)| ap_at(&maps, s, a));
    assert_eq!(before[0], mixed);

    maps.write_protect(pa(0x5000), PageSizeKind::Small);
    assert_eq!(maps.protected(), 3);
    assert!(mappings(&maps, 0x5000, PageSizeKind::Small)
        .iter()
        .all(|m| !m.writable));
    assert!(!maps.translate(user(2), va(0x9000)).unwrap().writable);
    // Protecting again remembers nothing more (nothing is writable).
    maps.write_protect(pa(0x5000), PageSizeKind::Small);
    assert_eq!(maps.protected(), 3);
    // Other pages are untouched.
    assert_eq!(ap_at(&maps, K, 0xC300_0000), SubpageAp::uniform(Ap::PrivRw));

    maps.restore_write(pa(0x5000), PageSizeKind::Small);
    let after = [
        (user(1), 0x0200_8000),
        (K, 0xC000_5000),
        (user(2), 0x0400_9000),
    ]
    .map(|(s, a)| ap_at(&maps, s, a));
    assert_eq!(after, before);
    assert_eq!(maps.protected(), 0);
    assert_eq!(
        maps.generation(),
        gen,
        "spm's own changes keep the generation"
    );
    assert_eq!(maps.take_error(), None);
}

#[test]
fn restore_keeps_what_the_kernel_changed_meanwhile() {
    let mut mem = mem();
    let mut pool = pool(&mut mem);
    let (mut k, mut t2) = world(&mut pool);
    let mut maps = register(&mut pool, &mut k, &mut t2);
    maps.write_protect(pa(0x5000), PageSizeKind::Small);
    // The kernel makes task 1's page user read-only meanwhile.
    let gen = maps.generation();
    let e = maps.edit(user(1)).unwrap();
    let ro = SubpageAp::uniform(Ap::PrivRwUserRo);
    e.table
        .set_page_ap(e.alloc, mva(0x0200_8000), ro)
        .unwrap()
        .flush(e.maint, e.alloc);
    assert_ne!(maps.generation(), gen);
    maps.restore_write(pa(0x5000), PageSizeKind::Small);
    assert_eq!(
        ap_at(&maps, user(1), 0x0200_8000),
        ro,
        "the kernel's change stays"
    );
    assert_eq!(ap_at(&maps, K, 0xC000_5000), SubpageAp::uniform(Ap::PrivRw));
    assert_eq!(maps.protected(), 0);
}

#[test]
fn swap_exchanges_frames_and_carries_rights_and_protection() {
    let mut mem = mem();
    let mut pool = pool(&mut mem);
    let (mut k, mut t2) = world(&mut pool);
    let mut maps = register(&mut pool, &mut k, &mut t2);
    let (p, q) = (pa(0x5000), pa(0x0300_0000));
    let (mp, mq) = (
        mappings(&maps, 0x5000, PageSizeKind::Small),
        mappings(&maps, 0x0300_0000, PageSizeKind::Small),
    );
    maps.write_protect(p, PageSizeKind::Small);
    maps.write_protect(q, PageSizeKind::Small);
    assert_eq!(maps.protected(), 4);
    let gen = maps.generation();
    maps.swap(p, q, PageSizeKind::Small);
    maps.swapped(p, q, PageSizeKind::Small);
    assert_eq!(maps.generation(), gen);
    // Every mapping of P now maps Q and vice versa (write-protected still).
    let strip =
        |v: Vec<ReverseMapping>| v.into_iter().map(|m| (m.space, m.mva)).collect::<Vec<_>>();
    assert_eq!(
        strip(mappings(&maps, 0x0300_0000, PageSizeKind::Small)),
        strip(mp.clone())
    );
    assert_eq!(
        strip(mappings(&maps, 0x5000, PageSizeKind::Small)),
        strip(mq.clone())
    );
    assert_eq!(maps.translate(user(1), va(0x8000)).unwrap().page, q);
    assert_eq!(maps.translate(K, va(0xC300_0000)).unwrap().page, p);
    // Restoring by the new frames gives each mapping its own rights back.
    maps.restore_write(q, PageSizeKind::Small);
    maps.restore_write(p, PageSizeKind::Small);
    assert_eq!(mappings(&maps, 0x0300_0000, PageSizeKind::Small), mp);
    assert_eq!(mappings(&maps, 0x5000, PageSizeKind::Small), mq);
    assert_eq!(
        ap_at(&maps, user(2), 0x0400_9000),
        SubpageAp::uniform(Ap::PrivRwUserRo)
    );
    assert_eq!(maps.protected(), 0);
    // And back, walking this time (a new generation forgets the walks).
    maps.bump_generation();
    maps.swap(q, p, PageSizeKind::Small);
    assert_eq!(maps.translate(user(1), va(0x8000)).unwrap().page, p);
    assert_eq!(maps.translate(user(2), va(0x9000)).unwrap().page, p);
    assert_eq!(maps.translate(K, va(0xC300_0000)).unwrap().page, q);
    assert_eq!(maps.take_error(), None);
}

#[test]
fn the_generation_counts_the_kernels_changes() {
    let mut mem = mem();
    let mut pool = pool(&mut mem);
    let (mut k, mut t2) = world(&mut pool);
    let mut maps = register(&mut pool, &mut k, &mut t2);
    let g0 = maps.generation().unwrap();
    assert!(maps.edit(user(7)).is_none());
    assert_eq!(maps.generation(), Some(g0), "nothing opened");
    {
        let e = maps.edit(user(2)).unwrap();
        assert_eq!(e.pid, pid(2));
        let at = va(0xA000).to_mva(e.pid);
        let attrs = MapAttrs::new(
            Domain::new(0).unwrap(),
            Ap::ReadWrite,
            CachePolicy::WriteBack,
        );
        e.table
            .map(e.alloc, at, pa(0x5000), 0x1000, attrs, SizePolicy::Largest)
            .unwrap()
            .flush(e.maint, e.alloc);
    }
    let g1 = maps.generation().unwrap();
    assert_ne!(g1, g0);
    // The new mapping is seen at once (what was remembered is forgotten).
    assert_eq!(mappings(&maps, 0x5000, PageSizeKind::Small).len(), 4);
    maps.bump_generation();
    assert_ne!(maps.generation(), Some(g1));
}

/// Regression (issue 26, item 4): the generation was a wrapping `u32`, so
/// 2^32 changes brought it back to a value an exchange trusts. It is a
/// `u64` now: past 2^32 - 1 it goes on to 2^32, not to 0.
#[test]
fn the_generation_does_not_come_back_after_2_pow_32_changes() {
    let mut mem = mem();
    let mut pool = pool(&mut mem);
    let (mut k, mut t2) = world(&mut pool);
    let mut maps = register(&mut pool, &mut k, &mut t2);
    let g0 = maps.generation().unwrap();
    maps.generation = g0 + u64::from(u32::MAX);
    maps.bump_generation();
    let g = maps.generation().unwrap();
    assert_eq!(g, g0 + (1 << 32));
    assert_ne!(g as u32 as u64, g, "the value needs more than 32 bits");
}

#[test]
fn protection_past_its_memory_leaves_the_rest_writable_and_says_so() {
    let mut mem = mem();
    let mut pool = pool(&mut mem);
    let mut k = PageTable::new(&mut pool).unwrap();
    // One frame at 20 addresses: more than MEMO_SITES and MAX_PROTECTED.
    for i in 0..20 {
        map(
            &mut k,
            &mut pool,
            0xC000_0000 + i * 0x1000,
            0x5000,
            PageSizeKind::Small,
            Ap::PrivRw,
        );
    }
    map(
        &mut k,
        &mut pool,
        0xC010_0000,
        0x6000,
        PageSizeKind::Small,
        Ap::PrivRw,
    );
    let mut maps = TableMappings::<_, _, 1>::new(&mut pool, cpu());
    maps.add(K, FcsePid::ZERO, &mut k).unwrap();
    assert_eq!(mappings(&maps, 0x5000, PageSizeKind::Small).len(), 20);
    let gen = maps.generation();
    maps.write_protect(pa(0x5000), PageSizeKind::Small);
    assert_eq!(maps.protected(), MAX_PROTECTED);
    assert_eq!(maps.take_error(), Some(TablesError::ProtectFull));
    assert_ne!(maps.generation(), gen, "the exchange must look again");
    let writable = mappings(&maps, 0x5000, PageSizeKind::Small)
        .iter()
        .filter(|m| m.writable)
        .count();
    assert_eq!(writable, 20 - MAX_PROTECTED);
    // Swapping 20 descriptors in batches moves each exactly once.
    maps.swap(pa(0x5000), pa(0x6000), PageSizeKind::Small);
    assert_eq!(mappings(&maps, 0x6000, PageSizeKind::Small).len(), 20);
    assert_eq!(
        mappings(&maps, 0x5000, PageSizeKind::Small),
        [m(K, 0xC010_0000, true)]
    );
    maps.restore_write(pa(0x6000), PageSizeKind::Small);
    assert_eq!(maps.protected(), 0);
    assert!(mappings(&maps, 0x6000, PageSizeKind::Small)
        .iter()
        .all(|m| m.writable));
}

#[test]
fn moved_tables_are_relinked_where_the_allocator_reaches_them() {
    let mut mem = mem();
    let mut pool = pool(&mut mem);
    let (mut k, mut t2) = world(&mut pool);
    let l2 = k.l1_entry(&pool, 0xC00).unwrap().table().unwrap();
    let root = k.root();
    // "Move" the 4 KiB frame holding the shared second-level table to the
    // last pool block (free), as an exchange would: copy, then re-link.
    let (old, new) = (pa(l2.1.as_u32() & !0xFFF), pa(0x0100_0000 + 5 * 0x4000));
    let from = mmu_armv5::table::TableRef::new(TableKind::Fine, old).unwrap();
    let to = mmu_armv5::table::TableRef::new(TableKind::Fine, new).unwrap();
    for i in 0..1024 {
        let w = from.read(&pool, i).unwrap();
        // SAFETY: the last pool block is allocated to nothing (three
        // tables and two second-level tables use the first blocks).
        unsafe { to.write(&pool, i, w).unwrap() };
    }
    let mut maps = register(&mut pool, &mut k, &mut t2);
    maps.move_second_level(old, new);
    assert_eq!(maps.take_error(), None);
    let moved = pa(new.as_u32() | (l2.1.as_u32() & 0xFFF));
    for s in [K, user(2)] {
        let link = maps
            .table(s)
            .unwrap()
            .l1_entry(maps.alloc(), 0xC00)
            .unwrap();
        assert_eq!(link.table(), Some((l2.0, moved)), "{s:?}");
        assert_eq!(maps.translate(s, va(0xC000_5000)).unwrap().page, pa(0x5000));
    }
    // A frame outside the pool: refused, nothing re-linked.
    maps.move_second_level(new, pa(0x0800_0000));
    assert_eq!(
        maps.take_error(),
        Some(TablesError::Table(TableError::UnreachableTable(pa(
            0x0800_0000 | (l2.1.as_u32() & 0xFFF)
        ))))
    );
    maps.move_first_level(root, pa(0x0800_0000));
    assert_eq!(
        maps.take_error(),
        Some(TablesError::Table(TableError::UnreachableTable(pa(
            0x0800_0000
        ))))
    );
    assert_eq!(maps.table(K).unwrap().root(), root);
}

/// Physical memory for the exchange: 64 KiB of RAM at 0, a 32 KiB DTCM at
/// 0x0300_0000.
struct Phys {
    ram: Vec<u8>,
    dtcm: Vec<u8>,
}

impl Phys {
    fn new() -> Phys {
        Phys {
            ram: vec![0; 64 << 10],
            dtcm: vec![0; 32 << 10],
        }
    }

    fn windows(&mut self) -> PhysWindows<2> {
        let mut w = PhysWindows::new();
        // SAFETY: both buffers outlive the windows and are used only
        // through them while they live.
        unsafe {
            w.add(pa(0), 64 << 10, self.ram.as_mut_ptr()).unwrap();
            w.add(pa(0x0300_0000), 32 << 10, self.dtcm.as_mut_ptr())
                .unwrap();
        }
        w
    }
}

#[test]
fn an_exchange_runs_through_the_tables() {
    let mut mem = mem();
    let mut pool = pool(&mut mem);
    let (mut k, mut t2) = world(&mut pool);
    let ram = PhysRegion::new(pa(0), 64 << 10, Location::Ram, InitialUse::Kernel).unwrap();
    let dtcm = PhysRegion::new(
        pa(0x0300_0000),
        32 << 10,
        Location::Dtcm,
        InitialUse::Resource,
    )
    .unwrap();
    let mut frames = [FrameDesc::default(); 16 + 8];
    let mut sections = [SectionSummary::default(); 2];
    let mut table = FrameTable::<2>::new(&[ram, dtcm], &mut frames, &mut sections).unwrap();
    let owner = crate::SpaceId(1);
    table
        .init_range(
            Frame::from_start(pa(0x5000)).unwrap(),
            FrameState::User(owner),
            true,
        )
        .unwrap();
    let mut phys = Phys::new();
    let mut hw = Hw::new(cpu(), phys.windows());
    let data: Vec<u8> = (0..=255).cycle().take(4096).collect();
    hw.phys.write(pa(0x5000), &data).unwrap();
    let mut irq = RecordingIrq::new();
    let mut maps = register(&mut pool, &mut k, &mut t2);

    let req = ExchangeRequest {
        caller: K,
        target_space: user(1),
        target: va(0x8000),
        resource_space: K,
        resource: va(0xC300_0000),
        size: PageSizeKind::Small,
        count: 1,
        rights: Rights::RW,
    };
    let mut ex = Exchange::begin(&mut table, &maps, req, DEFAULT_CHUNK).unwrap();
    // SAFETY: host memory and tables that describe only each other.
    unsafe { ex.run(&mut table, &mut maps, &mut hw, &mut irq) }.unwrap();
    assert!(ex.is_done());
    assert_eq!(maps.take_error(), None);

    // Every mapping of the task's page (in three spaces, two tables) now
    // leads to DTCM, with its own rights; the kernel's DTCM alias to RAM.
    for (s, a) in [(user(1), 0x8000), (user(2), 0x9000), (K, 0xC000_5000)] {
        let t = maps.translate(s, va(a)).unwrap();
        assert_eq!((t.page, t.writable), (pa(0x0300_0000), true), "{s:?}");
    }
    assert_eq!(
        ap_at(&maps, user(2), 0x0400_9000),
        SubpageAp::uniform(Ap::PrivRwUserRo)
    );
    assert_eq!(maps.translate(K, va(0xC300_0000)).unwrap().page, pa(0x5000));
    let mut got = vec![0; 4096];
    hw.phys.read(pa(0x0300_0000), &mut got).unwrap();
    assert_eq!(got, data);
    assert_eq!(hw.phys.misses(), 0);
    assert_eq!(
        table.desc(pa(0x0300_0000)).unwrap().state(),
        FrameState::User(owner)
    );
    assert_eq!(table.busy_frames(), 0);
    assert!(!irq.is_masked() && irq.windows() >= 3);
    assert_eq!(maps.protected(), 0);
    // The CPU's maintenance went to the MVAs the tables hold: the TLB
    // entries of the protected mappings, the old page's lines at its three
    // addresses, the resource's at its one (the first events logged).
    let ops = hw.cpu.cp15().events();
    let op = |o: Cp15Op, a: u32| ops.contains(&Cp15Event::Op(o, a));
    for a in [0x0200_8000, 0xC000_5000, 0x0400_9000] {
        assert!(op(Cp15Op::InvalidateTlbEntry, a), "{a:#x}");
        assert!(op(Cp15Op::CleanDCacheLine, a), "{a:#x}");
    }
    assert!(op(Cp15Op::InvalidateDCacheLine, 0xC300_0000));
}
