//! Table operations: sizes chosen, errors, all-or-nothing behaviour, flush tokens.

use mmu_armv5::addr::Align;
use mmu_armv5::descriptor::{AccessPermission as Ap, CachePolicy, L1Descriptor, SubpageAp};
use mmu_armv5::maint::Arm926;
use mmu_armv5::regs::MockCp15;
use mmu_armv5::size::PageSizeKind;
use mmu_armv5::table::{
    MapAttrs, PageTable, PoolBlock, SizePolicy, TableAlloc, TableError, TableKind, TablePool,
    TlbInvalidate, TlbPages,
};
use mmu_armv5::{AddrError, Domain, ModifiedVirtAddr as Mva, PhysAddr};

mod common;
use common::{mem, Event, Ledger, BASE};

fn pool<const N: usize>(m: &mut [PoolBlock; N]) -> TablePool<'_, N> {
    TablePool::new(m, PhysAddr::new(BASE), Mva::new(0xC400_0000)).unwrap()
}

fn maint() -> Arm926<MockCp15> {
    Arm926::new(MockCp15::arm926())
}

fn attrs(d: u8) -> MapAttrs {
    MapAttrs::new(
        Domain::new(d).unwrap(),
        Ap::ReadWrite,
        CachePolicy::WriteBack,
    )
}

fn sizes(t: &PageTable, p: &impl TableAlloc) -> Vec<(u32, PageSizeKind, u32)> {
    t.mappings(p)
        .map(|m| m.unwrap())
        .map(|m| (m.mva.as_u32(), m.size, m.pa.as_u32()))
        .collect()
}

/// Maps and drops the flush token (host tests: no hardware walker reads
/// these tables).
fn map_now(
    t: &mut PageTable,
    p: &mut impl TableAlloc,
    mva: Mva,
    pa: PhysAddr,
    len: u32,
    a: MapAttrs,
    policy: SizePolicy,
) {
    let f = t.map(p, mva, pa, len, a, policy).unwrap();
    // SAFETY: host test, no hardware walker.
    unsafe { f.ignore() };
}

#[test]
fn largest_policy_picks_sections_large_small_and_tiny_pages() {
    let mut m = mem::<8>();
    let mut p = pool(&mut m);
    let mut t = PageTable::new(&mut p).unwrap();
    // 1 MiB + 64 KiB + 4 KiB + 1 KiB, all aligned alike.
    let len = (1 << 20) + (64 << 10) + (4 << 10) + (1 << 10);
    let f = t
        .map(
            &mut p,
            Mva::new(0x0010_0000),
            PhysAddr::new(0x0020_0000),
            len,
            attrs(1),
            SizePolicy::Largest,
        )
        .unwrap();
    assert_eq!(
        f.tlb(),
        TlbInvalidate::None,
        "filling invalid entries needs no TLB maintenance"
    );
    assert!(
        !f.clean_ranges().is_empty(),
        "but the table writes must be cleaned"
    );
    // SAFETY: host test, no hardware walker.
    unsafe { f.ignore() };
    assert_eq!(
        sizes(&t, &p),
        vec![
            (0x0010_0000, PageSizeKind::Section, 0x0020_0000),
            (0x0020_0000, PageSizeKind::Large, 0x0030_0000),
            (0x0021_0000, PageSizeKind::Small, 0x0031_0000),
            (0x0021_1000, PageSizeKind::Tiny, 0x0031_1000),
        ]
    );
    // The MiB that needed a tiny page got a fine table (which also holds the large and small pages).
    assert!(matches!(t.l1_entry(&p, 2).unwrap(), L1Descriptor::Fine(_)));
}

#[test]
fn misaligned_inputs_are_typed_errors() {
    let mut m = mem::<2>();
    let mut p = pool(&mut m);
    let mut t = PageTable::new(&mut p).unwrap();
    let e = t.map(
        &mut p,
        Mva::new(0x1200),
        PhysAddr::new(0),
        0x1000,
        attrs(0),
        SizePolicy::Largest,
    );
    assert_eq!(
        e,
        Err(TableError::Misaligned(AddrError::Misaligned {
            addr: 0x1200,
            align: 0x400
        }))
    );
    let e = t.map(
        &mut p,
        Mva::new(0x1000),
        PhysAddr::new(0x800),
        0x1000,
        attrs(0),
        SizePolicy::Exactly(PageSizeKind::Small),
    );
    assert_eq!(
        e,
        Err(TableError::Misaligned(AddrError::Misaligned {
            addr: 0x800,
            align: 0x1000
        }))
    );
    let e = t.map(
        &mut p,
        Mva::new(0x1000),
        PhysAddr::new(0),
        0x1100,
        attrs(0),
        SizePolicy::Largest,
    );
    assert_eq!(e, Err(TableError::BadLength(0x1100)));
    let e = t.map(
        &mut p,
        Mva::new(0x1000),
        PhysAddr::new(0),
        0,
        attrs(0),
        SizePolicy::Largest,
    );
    assert_eq!(e, Err(TableError::EmptyRange));
    let e = t.map(
        &mut p,
        Mva::new(0xFFFF_F000),
        PhysAddr::new(0),
        0x2000,
        attrs(0),
        SizePolicy::Largest,
    );
    assert_eq!(e, Err(TableError::AddressOverflow));
    assert_eq!(sizes(&t, &p), vec![], "nothing mapped by failed calls");
}

#[test]
fn overlaps_domains_and_table_kinds_are_checked_before_any_write() {
    let mut m = mem::<4>();
    let mut p = pool(&mut m);
    let mut t = PageTable::new(&mut p).unwrap();
    map_now(
        &mut t,
        &mut p,
        Mva::new(0x0010_2000),
        PhysAddr::new(0x9000),
        0x1000,
        attrs(3),
        SizePolicy::Largest,
    );
    // Overlap with an existing page: nothing of the new range gets mapped.
    let e = t.map(
        &mut p,
        Mva::new(0x0010_0000),
        PhysAddr::new(0),
        0x4000,
        attrs(3),
        SizePolicy::Largest,
    );
    assert_eq!(e, Err(TableError::AlreadyMapped(Mva::new(0x0010_2000))));
    assert_eq!(sizes(&t, &p).len(), 1);
    // Same MiB, other domain.
    let e = t.map(
        &mut p,
        Mva::new(0x0010_8000),
        PhysAddr::new(0),
        0x1000,
        attrs(4),
        SizePolicy::Largest,
    );
    assert_eq!(
        e,
        Err(TableError::DomainMismatch {
            mva: Mva::new(0x0010_8000),
            existing: Domain::new(3).unwrap()
        })
    );
    // A section over a MiB that has a table.
    let e = t.map(
        &mut p,
        Mva::new(0x0010_0000),
        PhysAddr::new(0),
        1 << 20,
        attrs(3),
        SizePolicy::Largest,
    );
    assert_eq!(e, Err(TableError::AlreadyMapped(Mva::new(0x0010_0000))));
    // Tiny page in a MiB with a coarse table.
    let e = t.map(
        &mut p,
        Mva::new(0x0010_8400),
        PhysAddr::new(0x400),
        0x400,
        attrs(3),
        SizePolicy::Largest,
    );
    assert_eq!(
        e,
        Err(TableError::TinyPageInCoarseTable(Mva::new(0x0010_8400)))
    );
}

#[test]
fn running_out_of_table_memory_undoes_the_partial_map() {
    let mut m = mem::<2>();
    let mut p = pool(&mut m);
    let mut t = PageTable::new(&mut p).unwrap();
    // One block left = 16 coarse tables; ask for 17 MiB of small pages.
    let free = p.free_units();
    let e = t.map(
        &mut p,
        Mva::new(0x0100_0000),
        PhysAddr::new(0),
        17 << 20,
        attrs(1),
        SizePolicy::Exactly(PageSizeKind::Small),
    );
    assert_eq!(e, Err(TableError::OutOfTableMemory));
    assert_eq!(
        p.free_units(),
        free,
        "every table allocated by the failed call was freed"
    );
    assert_eq!(sizes(&t, &p), vec![]);
}

#[test]
fn unmap_needs_whole_pages_and_frees_empty_tables() {
    let mut m = mem::<2>();
    let mut p = pool(&mut m);
    let mut t = PageTable::new(&mut p).unwrap();
    let free = p.free_units();
    map_now(
        &mut t,
        &mut p,
        Mva::new(0x0200_0000),
        PhysAddr::new(0x0500_0000),
        0x11000,
        attrs(2),
        SizePolicy::Largest,
    );
    assert_eq!(p.free_units(), free - 1, "one coarse table");
    assert_eq!(
        t.unmap(&mut p, Mva::new(0x0200_0000), 0x1000),
        Err(TableError::PartialPage(Mva::new(0x0200_0000)))
    );
    assert_eq!(
        t.unmap(&mut p, Mva::new(0x0201_0000), 0x2000),
        Err(TableError::NotMapped(Mva::new(0x0201_1000)))
    );
    let f = t.unmap(&mut p, Mva::new(0x0201_0000), 0x1000).unwrap();
    assert_eq!(
        f.tlb(),
        TlbInvalidate::Pages(TlbPages::new(Mva::new(0x0201_0000), 0x1000, Align::KIB_4).unwrap()),
        "exactly the unmapped page's TLB entry"
    );
    assert_eq!(f.tables_to_free(), 0);
    f.flush(&mut maint(), &mut p);
    assert_eq!(p.free_units(), free - 1, "table still holds the large page");
    let f = t.unmap(&mut p, Mva::new(0x0200_0000), 0x10000).unwrap();
    assert_eq!(t.l1_entry(&p, 0x20).unwrap(), L1Descriptor::FAULT);
    assert_eq!(p.free_units(), free - 1, "not freed before the flush");
    assert_eq!(f.tables_to_free(), 1);
    f.flush(&mut maint(), &mut p);
    assert_eq!(p.free_units(), free, "empty table freed by the flush");
}

#[test]
fn protect_rewrites_permissions_and_invalidates() {
    let mut m = mem::<2>();
    let mut p = pool(&mut m);
    let mut t = PageTable::new(&mut p).unwrap();
    map_now(
        &mut t,
        &mut p,
        Mva::new(0x0300_0000),
        PhysAddr::new(0x0300_0000),
        (1 << 20) + 0x1000,
        attrs(2),
        SizePolicy::Largest,
    );
    let f = t
        .protect(
            &mut p,
            Mva::new(0x0300_0000),
            (1 << 20) + 0x1000,
            Ap::PrivRwUserRo,
            CachePolicy::WriteThrough,
        )
        .unwrap();
    assert_eq!(
        f.tlb(),
        TlbInvalidate::All,
        "a section plus a page: more than 16 entry invalidates"
    );
    // SAFETY: host test.
    unsafe { f.ignore() };
    for m in t.mappings(&p) {
        let m = m.unwrap();
        assert_eq!(m.ap, SubpageAp::uniform(Ap::PrivRwUserRo));
        assert_eq!(m.cache, CachePolicy::WriteThrough);
    }
}

#[test]
fn release_returns_every_table() {
    let mut m = mem::<4>();
    let mut p = pool(&mut m);
    let free = p.free_units();
    let mut t = PageTable::new(&mut p).unwrap();
    map_now(
        &mut t,
        &mut p,
        Mva::new(0x0),
        PhysAddr::new(0),
        0x0030_0400,
        attrs(0),
        SizePolicy::Largest,
    );
    assert!(p.free_units() < free);
    // SAFETY: the table was never installed anywhere.
    unsafe { t.release(&mut p).unwrap() };
    assert_eq!(p.free_units(), free);
    let _ = TableKind::Fine;
}

fn small(
    t: &mut PageTable,
    a: &mut impl TableAlloc,
    mva: u32,
    pa: u32,
) -> mmu_armv5::table::TableFlush {
    t.map(
        a,
        Mva::new(mva),
        PhysAddr::new(pa),
        0x1000,
        attrs(1),
        SizePolicy::Exactly(PageSizeKind::Small),
    )
    .unwrap()
}

/// Regression: `unmap` freed an emptied second-level table at once, while
/// the walker could still reach it through the uncleaned first-level entry
/// or cached translations, and dropping the token was safe. The table is now
/// freed by `flush`, after the first-level line is cleaned and the TLB
/// invalidated; a dropped token leaks it.
#[test]
fn an_unlinked_table_is_freed_only_after_its_maintenance() {
    let mut mem = mem::<8>();
    let ledger = Ledger::default();
    let mut a = ledger.alloc(&mut mem);
    let mut t = PageTable::new(&mut a).unwrap();
    small(&mut t, &mut a, 0x0060_0000, 0x0100_0000).flush(&mut ledger.maint(), &mut a);
    let table = t.l1_entry(&a, 6).unwrap().table().unwrap();
    assert!(t.owns_l2_table(6));
    let f = t.unmap(&mut a, Mva::new(0x0060_0000), 0x1000).unwrap();
    assert!(ledger.is_live(table.1), "still allocated after unmap");
    ledger.clear_log();
    f.flush(&mut ledger.maint(), &mut a);
    let log = ledger.log();
    let freed = log
        .iter()
        .position(|e| *e == Event::Free(table.1))
        .expect("freed by the flush");
    let l1_line = t.root_table().entry_mva(&a, 6).as_u32() & !31;
    let cleaned = log
        .iter()
        .position(|e| *e == Event::Clean(l1_line))
        .unwrap();
    let drained = log.iter().position(|e| *e == Event::Drain).unwrap();
    let invalidated = log
        .iter()
        .position(|e| matches!(e, Event::TlbEntry(0x0060_0000) | Event::TlbAll))
        .unwrap();
    assert!(
        cleaned < drained && drained < freed && invalidated < freed,
        "{log:?}"
    );

    // A dropped token leaks the table instead of freeing it.
    small(&mut t, &mut a, 0x0060_0000, 0x0100_0000).flush(&mut ledger.maint(), &mut a);
    let table = t.l1_entry(&a, 6).unwrap().table().unwrap();
    drop(t.unmap(&mut a, Mva::new(0x0060_0000), 0x1000).unwrap());
    assert!(ledger.is_live(table.1), "leaked, never freed");
    assert_eq!(t.l1_entry(&a, 6).unwrap(), L1Descriptor::FAULT);
}

/// Regression: `set_l1_entry` linked slot 7 to slot 6's coarse table; `unmap`
/// of slot 6 freed it while slot 7 still pointed at it, a later `map` reused
/// it, `lookup(0x0070_0000)` returned the new mapping's PA, and `release`
/// freed it twice. Safe code can no longer link a table twice.
#[test]
fn a_table_cannot_be_linked_twice_by_safe_code() {
    let mut mem = mem::<8>();
    let ledger = Ledger::default();
    let mut a = ledger.alloc(&mut mem);
    let mut t = PageTable::new(&mut a).unwrap();
    small(&mut t, &mut a, 0x0060_0000, 0x0100_0000).flush(&mut ledger.maint(), &mut a);
    let link = t.l1_entry(&a, 6).unwrap();
    assert_eq!(
        t.set_l1_entry(&a, 7, link),
        Err(TableError::TableLinkRefused(7))
    );
    t.unmap(&mut a, Mva::new(0x0060_0000), 0x1000)
        .unwrap()
        .flush(&mut ledger.maint(), &mut a);
    small(&mut t, &mut a, 0x0080_0000, 0x0200_0000).flush(&mut ledger.maint(), &mut a);
    assert_eq!(t.lookup(&a, Mva::new(0x0070_0000)), Ok(None));
    // SAFETY: the table was never loaded.
    unsafe { t.release(&mut a).unwrap() };
    assert_eq!(ledger.live(), 0, "every table freed exactly once");
}

/// Overwriting an owned table's slot with a section frees the table through
/// the token; the unchecked variant hands it to the caller instead.
#[test]
fn replacing_a_table_link_frees_or_returns_the_old_table() {
    let mut mem = mem::<8>();
    let ledger = Ledger::default();
    let mut a = ledger.alloc(&mut mem);
    let mut t = PageTable::new(&mut a).unwrap();
    small(&mut t, &mut a, 0x0060_0000, 0x0100_0000).flush(&mut ledger.maint(), &mut a);
    let (_, old) = t.l1_entry(&a, 6).unwrap().table().unwrap();
    let f = t.set_l1_entry(&a, 6, L1Descriptor::FAULT).unwrap();
    assert_eq!(f.tlb(), TlbInvalidate::All, "pages of any size were cached");
    assert_eq!(f.tables_to_free(), 1);
    assert!(ledger.is_live(old));
    f.flush(&mut ledger.maint(), &mut a);
    assert!(!ledger.is_live(old));

    small(&mut t, &mut a, 0x0060_0000, 0x0100_0000).flush(&mut ledger.maint(), &mut a);
    let (kind, old) = t.l1_entry(&a, 6).unwrap().table().unwrap();
    // SAFETY: a fault descriptor links nothing.
    let (f, given) = unsafe {
        t.set_l1_entry_unchecked(&a, 6, L1Descriptor::FAULT)
            .unwrap()
    };
    assert_eq!(f.tables_to_free(), 0);
    f.flush(&mut ledger.maint(), &mut a);
    let given = given.expect("the old table is the caller's now");
    assert_eq!((given.kind, given.pa), (kind, old));
    assert!(ledger.is_live(old));
    // SAFETY: unlinked and flushed above; the caller owns it.
    unsafe { a.deallocate(given.kind, given.pa) };
    // SAFETY: never loaded.
    unsafe { t.release(&mut a).unwrap() };
    assert_eq!(ledger.live(), 0);
}

/// Shared first-level entries: the owner gives the tables up, so neither
/// table frees them, whatever either unmaps.
#[test]
fn shared_tables_are_never_freed_by_either_table() {
    let mut mem = mem::<8>();
    let ledger = Ledger::default();
    let mut a = ledger.alloc(&mut mem);
    let mut kernel = PageTable::new(&mut a).unwrap();
    small(&mut kernel, &mut a, 0x0060_0000, 0x0100_0000).flush(&mut ledger.maint(), &mut a);
    let (_, shared) = kernel.l1_entry(&a, 6).unwrap().table().unwrap();
    let mut process = PageTable::new(&mut a).unwrap();
    kernel
        .share_l1_entries(&a, &mut process, 4..8)
        .unwrap()
        .flush(&mut ledger.maint(), &mut a);
    assert!(!kernel.owns_l2_table(6) && !process.owns_l2_table(6));
    assert_eq!(
        process
            .lookup(&a, Mva::new(0x0060_0000))
            .unwrap()
            .map(|m| m.pa),
        Some(PhysAddr::new(0x0100_0000))
    );
    // Sharing again into a table that has the entry already is refused.
    assert_eq!(
        kernel.share_l1_entries(&a, &mut process, 6..7),
        Err(TableError::AlreadyMapped(Mva::new(0x0060_0000)))
    );
    for t in [&mut process, &mut kernel] {
        let f = t.unmap(&mut a, Mva::new(0x0060_0000), 0x1000);
        if let Ok(f) = f {
            assert_eq!(f.tables_to_free(), 0);
            f.flush(&mut ledger.maint(), &mut a);
        }
    }
    assert!(ledger.is_live(shared));
    assert_eq!(
        kernel.l1_entry(&a, 6).unwrap().table().map(|t| t.1),
        Some(shared)
    );
    // SAFETY: neither table was loaded.
    unsafe {
        process.release(&mut a).unwrap();
        kernel.release(&mut a).unwrap();
    }
    assert_eq!(ledger.live(), 1, "only the shared table remains");
    assert!(ledger.is_live(shared));
}

#[test]
fn moving_an_entry_moves_its_ownership() {
    let mut mem = mem::<8>();
    let ledger = Ledger::default();
    let mut a = ledger.alloc(&mut mem);
    let mut t = PageTable::new(&mut a).unwrap();
    small(&mut t, &mut a, 0x0A00_0000, 0x0100_0000).flush(&mut ledger.maint(), &mut a);
    assert_eq!(
        t.move_l1_entry(&a, 0xA0, 0xA0).map(|f| f.tables_to_free()),
        Err(TableError::AlreadyMapped(Mva::new(0x0A00_0000)))
    );
    let f = t.move_l1_entry(&a, 0xA0, 0).unwrap();
    assert_eq!(f.tlb(), TlbInvalidate::All);
    f.flush(&mut ledger.maint(), &mut a);
    assert!(t.owns_l2_table(0) && !t.owns_l2_table(0xA0));
    assert_eq!(
        t.lookup(&a, Mva::new(0)).unwrap().map(|m| m.pa),
        Some(PhysAddr::new(0x0100_0000))
    );
    t.unmap(&mut a, Mva::new(0), 0x1000)
        .unwrap()
        .flush(&mut ledger.maint(), &mut a);
    // SAFETY: never loaded.
    unsafe { t.release(&mut a).unwrap() };
    assert_eq!(ledger.live(), 0);
}

/// A table adopted with `from_root` owns nothing it did not allocate.
#[test]
fn adopted_tables_are_never_freed() {
    let mut mem = mem::<8>();
    let ledger = Ledger::default();
    let mut a = ledger.alloc(&mut mem);
    let mut boot = PageTable::new(&mut a).unwrap();
    small(&mut boot, &mut a, 0x0060_0000, 0x0100_0000).flush(&mut ledger.maint(), &mut a);
    // SAFETY: `boot` is not used again until `adopted` is released.
    let mut adopted = unsafe { PageTable::from_root(boot.root(), boot.encoding()) }.unwrap();
    assert!(!adopted.owns_l2_table(6));
    let f = adopted
        .unmap(&mut a, Mva::new(0x0060_0000), 0x1000)
        .unwrap();
    assert_eq!(f.tables_to_free(), 0);
    f.flush(&mut ledger.maint(), &mut a);
    let live = ledger.live();
    // SAFETY: never loaded.
    unsafe { adopted.release(&mut a).unwrap() };
    assert_eq!(
        ledger.live(),
        live,
        "neither the root nor the boot table's tables"
    );
    // SAFETY: never loaded.
    unsafe { boot.release(&mut a).unwrap() };
    assert_eq!(ledger.live(), 0);
}

mod sequences {
    //! Random sequences of every table operation on two tables sharing one
    //! allocator, against a reference model of the mappings and the
    //! software walk ([`common::sequences`], which the `mapper` fuzz target
    //! drives too). The ledger allocator panics on a double free; after
    //! every step no first-level entry of either table may link a freed
    //! table; tokens are flushed at once, merged and flushed later, or
    //! dropped.

    use super::*;
    use common::proptest_config_with;
    use common::sequences::{Mode, Op, Sequence, SLOTS};
    use proptest::prelude::*;

    fn op() -> impl Strategy<Value = Op> {
        let t = 0..2usize;
        let slot = 0..SLOTS;
        prop_oneof![
            4 => (t.clone(), slot.clone(), 0..4u8, 0..4u8, any::<u16>(), any::<u8>())
                .prop_map(|(t, slot, page, size, frame, attrs)| Op::Map { t, slot, page, size, frame, attrs }),
            3 => (t.clone(), slot.clone(), 0..4u8, 0..4u8)
                .prop_map(|(t, slot, page, size)| Op::Unmap { t, slot, page, size }),
            1 => (t.clone(), slot.clone(), 0..4u8, 0..4u8, any::<u8>())
                .prop_map(|(t, slot, page, size, attrs)| Op::Protect { t, slot, page, size, attrs }),
            1 => (t.clone(), slot.clone(), 0..3u8, 0..SLOTS)
                .prop_map(|(t, slot, what, from)| Op::SetL1 { t, slot, what, from }),
            1 => (0..SLOTS, 0..2u8).prop_map(|(first, count)| Op::Share { first, count }),
            1 => (t.clone(), slot.clone(), slot.clone()).prop_map(|(t, from, to)| Op::Move { t, from, to }),
            2 => (t.clone(), slot.clone(), any::<u16>()).prop_map(|(t, slot, kib)| Op::Lookup { t, slot, kib }),
            1 => Just(Op::Flush),
            1 => (t, slot).prop_map(|(t, slot)| Op::Foreign { t, slot }),
        ]
    }

    fn mode() -> impl Strategy<Value = Mode> {
        prop_oneof![3 => Just(Mode::Now), 2 => Just(Mode::Later), 1 => Just(Mode::Drop)]
    }

    proptest! {
        #![proptest_config(proptest_config_with(256, 2))]

        #[test]
        fn table_operations_never_free_a_linked_table(
            steps in prop::collection::vec((op(), mode()), 1..if cfg!(miri) { 8 } else { 60 }),
        ) {
            let mut mem = mem::<{ common::sequences::BLOCKS }>();
            let mut s = Sequence::new(&mut mem);
            for (i, (op, mode)) in steps.into_iter().enumerate() {
                s.step(op, mode).map_err(|e| TestCaseError::fail(format!("step {i}: {e}")))?;
            }
            s.finish().map_err(TestCaseError::fail)?;
        }
    }
}

/// A table's debug output names its root, encoding and how many
/// second-level tables it owns.
#[test]
fn debug_output_counts_owned_tables() {
    let mut m = mem::<4>();
    let mut p = pool(&mut m);
    let mut t = PageTable::new(&mut p).unwrap();
    map_now(
        &mut t,
        &mut p,
        Mva::new(0x0),
        PhysAddr::new(0),
        0x0020_1000,
        attrs(0),
        SizePolicy::Largest,
    );
    let text = format!("{t:?}");
    assert!(text.starts_with("PageTable { root: "), "{text}");
    assert!(text.contains("owns_root: true"), "{text}");
    assert!(text.ends_with("owned_tables: 1 }"), "{text}");
}

/// One call that needs several second-level tables of mixed kinds (a
/// coarse one, then a fine one; or several fine ones) allocates them all
/// before writing and links each as the kind it was allocated.
#[test]
fn one_map_links_tables_of_mixed_kinds() {
    let mut m = mem::<4>();
    let mut p = pool(&mut m);
    let mut t = PageTable::new(&mut p).unwrap();
    // MiB 3 in 64 KiB pages (a coarse table), then one tiny page in MiB 4.
    map_now(
        &mut t,
        &mut p,
        Mva::new(0x0030_0000),
        PhysAddr::new(0x0081_0000),
        0x0010_0400,
        attrs(2),
        SizePolicy::Largest,
    );
    // Tiny pages over MiB 6 and half of MiB 7: two fine tables.
    map_now(
        &mut t,
        &mut p,
        Mva::new(0x0060_0000),
        PhysAddr::new(0x00a0_0000),
        0x0018_0000,
        attrs(2),
        SizePolicy::Exactly(PageSizeKind::Tiny),
    );
    assert!(matches!(
        t.l1_entry(&p, 3).unwrap(),
        L1Descriptor::Coarse(_)
    ));
    for slot in [4, 6, 7] {
        assert!(
            matches!(t.l1_entry(&p, slot).unwrap(), L1Descriptor::Fine(_)),
            "slot {slot}"
        );
    }
    for (mva, size, pa) in [
        (0x0030_0000, PageSizeKind::Large, 0x0081_0000),
        (0x003f_fffc, PageSizeKind::Large, 0x0090_fffc),
        (0x0040_03ff, PageSizeKind::Tiny, 0x0091_03ff),
        (0x0060_0000, PageSizeKind::Tiny, 0x00a0_0000),
        (0x0070_0c00, PageSizeKind::Tiny, 0x00b0_0c00),
        (0x0077_ffff, PageSizeKind::Tiny, 0x00b7_ffff),
    ] {
        let found = t.lookup(&p, Mva::new(mva)).unwrap().unwrap();
        assert_eq!(found.size, size, "{mva:#x}");
        assert_eq!(
            found.pa.as_u32() + (mva - found.mva.as_u32()),
            pa,
            "{mva:#x}"
        );
    }
    assert_eq!(t.lookup(&p, Mva::new(0x0040_0400)).unwrap(), None);
    assert_eq!(t.lookup(&p, Mva::new(0x0078_0000)).unwrap(), None);
}

/// A range may end exactly at 4 GiB, virtually and physically; one byte
/// further is an overflow. A length that is not a multiple of the exact
/// size asked for is refused whole, before anything is mapped.
#[test]
fn ranges_end_at_four_gib_and_exact_sizes_divide_the_length() {
    let mut m = mem::<4>();
    let mut p = pool(&mut m);
    let mut t = PageTable::new(&mut p).unwrap();
    let map = |t: &mut PageTable, p: &mut TablePool<'_, 4>, mva: u32, pa: u32, len, policy| {
        t.map(p, Mva::new(mva), PhysAddr::new(pa), len, attrs(3), policy)
            // SAFETY: host test, no hardware walker.
            .map(|f| unsafe { f.ignore() })
    };
    let small = SizePolicy::Exactly(PageSizeKind::Small);
    assert_eq!(
        map(&mut t, &mut p, 0xfff0_0000, 0x10_0000, 0x10_0000, small),
        Ok(())
    );
    assert_eq!(
        map(&mut t, &mut p, 0x10_0000, 0xfff0_0000, 0x10_0000, small),
        Ok(())
    );
    assert_eq!(
        map(&mut t, &mut p, 0xffef_f000, 0x30_0000, 0x10_2000, small),
        Err(TableError::AddressOverflow)
    );
    assert_eq!(
        map(&mut t, &mut p, 0x30_0000, 0xffef_f000, 0x10_2000, small),
        Err(TableError::AddressOverflow)
    );
    assert_eq!(
        map(&mut t, &mut p, 0x40_0000, 0x40_0000, 0x1400, small),
        Err(TableError::BadLength(0x1400))
    );
    assert_eq!(t.lookup(&p, Mva::new(0x40_0000)).unwrap(), None);
}

/// Overwriting a section invalidates the one TLB entry of its MiB (at its
/// own address), not the whole TLB; past the last slot nothing is owned.
#[test]
fn replacing_a_section_invalidates_its_one_entry() {
    let mut mem = mem::<8>();
    let ledger = Ledger::default();
    let mut a = ledger.alloc(&mut mem);
    let mut t = PageTable::new(&mut a).unwrap();
    for index in [5usize, 0xc01, 4095] {
        let section = t
            .map(
                &mut a,
                Mva::new((index as u32) << 20),
                PhysAddr::new(0x0300_0000),
                1 << 20,
                attrs(1),
                SizePolicy::Exactly(PageSizeKind::Section),
            )
            .unwrap();
        section.flush(&mut ledger.maint(), &mut a);
        let f = t.set_l1_entry(&a, index, L1Descriptor::FAULT).unwrap();
        let start = Mva::new((index as u32) << 20);
        assert_eq!(
            f.tlb(),
            TlbInvalidate::Pages(TlbPages::new(start, 1 << 20, Align::MIB_1).unwrap()),
            "slot {index:#x}"
        );
        f.flush(&mut ledger.maint(), &mut a);
    }
    assert!(!t.owns_l2_table(4096) && !t.owns_l2_table(usize::MAX));
    // SAFETY: never loaded.
    unsafe { t.release(&mut a).unwrap() };
}

/// The kernel's entries up to the last slot (0xC000_0000 to 4 GiB) can be
/// shared into a process table; a range past slot 4095 is refused.
#[test]
fn sharing_reaches_the_last_slot() {
    let mut mem = mem::<8>();
    let ledger = Ledger::default();
    let mut a = ledger.alloc(&mut mem);
    let mut kernel = PageTable::new(&mut a).unwrap();
    let mut process = PageTable::new(&mut a).unwrap();
    small(&mut kernel, &mut a, 0xfff0_0000, 0x0100_0000).flush(&mut ledger.maint(), &mut a);
    kernel
        .share_l1_entries(&a, &mut process, 0xc00..4096)
        .unwrap()
        .flush(&mut ledger.maint(), &mut a);
    assert_eq!(
        process
            .lookup(&a, Mva::new(0xfff0_0000))
            .unwrap()
            .map(|m| m.pa),
        Some(PhysAddr::new(0x0100_0000))
    );
    assert_eq!(
        kernel.share_l1_entries(&a, &mut process, 4000..4097).err(),
        Some(TableError::IndexOutOfRange(4097))
    );
    // SAFETY: never loaded; the shared table is freed by neither.
    unsafe { process.release(&mut a).unwrap() };
    // SAFETY: as above.
    unsafe { kernel.release(&mut a).unwrap() };
}

/// Unmapping a 64 KiB page clears its sixteen coarse entries and asks for
/// exactly those 64 bytes of table to be cleaned; a table that still maps
/// something stays.
#[test]
fn unmap_cleans_exactly_the_entries_it_cleared() {
    let mut m = mem::<4>();
    let mut p = pool(&mut m);
    let mut t = PageTable::new(&mut p).unwrap();
    for (mva, pa, len) in [
        (0x0050_0000, 0x0080_0000, 0x1_0000),
        (0x0051_0000, 0x0090_0000, 0x1000),
    ] {
        map_now(
            &mut t,
            &mut p,
            Mva::new(mva),
            PhysAddr::new(pa),
            len,
            attrs(1),
            SizePolicy::Largest,
        );
    }
    let (_, table) = t.l1_entry(&p, 5).unwrap().table().unwrap();
    let table_mva = 0xC400_0000 + (table.as_u32() - BASE);
    let f = t.unmap(&mut p, Mva::new(0x0050_0000), 0x1_0000).unwrap();
    assert_eq!(f.clean_ranges(), &[(table_mva, 64)]);
    assert_eq!(f.tables_to_free(), 0);
    // SAFETY: as above.
    unsafe { f.ignore() };
    assert!(t.lookup(&p, Mva::new(0x0051_0000)).unwrap().is_some());
}

/// One unmap over several MiBs frees every table it empties, not only the
/// last one.
#[test]
fn unmap_frees_every_table_it_empties() {
    let mut m = mem::<4>();
    let mut p = pool(&mut m);
    let mut t = PageTable::new(&mut p).unwrap();
    let free = p.free_units();
    map_now(
        &mut t,
        &mut p,
        Mva::new(0x0030_0000),
        PhysAddr::new(0x0080_0000),
        0x0030_0000,
        attrs(1),
        SizePolicy::Exactly(PageSizeKind::Small),
    );
    let f = t.unmap(&mut p, Mva::new(0x0030_0000), 0x0030_0000).unwrap();
    assert_eq!(f.tables_to_free(), 3);
    f.flush(&mut maint(), &mut p);
    assert_eq!(p.free_units(), free);
    for slot in 3..6 {
        assert_eq!(t.l1_entry(&p, slot).unwrap(), L1Descriptor::FAULT);
    }
}

/// `protect` changes AP and C/B only: the XScale TEX bits of a large or a
/// tiny page stay as they were.
#[test]
fn protect_keeps_the_tex_bits() {
    use mmu_armv5::descriptor::{L2Descriptor, Tex};
    use mmu_armv5::table::TableRef;
    let mut m = mem::<4>();
    let mut p = pool(&mut m);
    let mut t = PageTable::new(&mut p).unwrap();
    let tex = Tex::new(5).unwrap();
    let a = MapAttrs { tex, ..attrs(1) };
    for (mva, pa, len, kind) in [
        (0x0050_0000, 0x0080_0000, 0x1_0000, PageSizeKind::Large),
        (0x0060_0000, 0x0090_0000, 0x400, PageSizeKind::Tiny),
    ] {
        map_now(
            &mut t,
            &mut p,
            Mva::new(mva),
            PhysAddr::new(pa),
            len,
            a,
            SizePolicy::Exactly(kind),
        );
        let f = t
            .protect(
                &mut p,
                Mva::new(mva),
                len,
                Ap::PrivRwUserRo,
                CachePolicy::WriteThrough,
            )
            .unwrap();
        // SAFETY: as above.
        unsafe { f.ignore() };
        let (k, tpa) = t
            .l1_entry(&p, (mva >> 20) as usize)
            .unwrap()
            .table()
            .unwrap();
        let word = TableRef::new(k, tpa).unwrap().read(&p, 0).unwrap();
        let kept = match L2Descriptor::from_bits(word) {
            L2Descriptor::Large(l) => (l.tex, l.cache),
            L2Descriptor::Tiny(d) => (d.tex, d.cache),
            other => panic!("{other:?}"),
        };
        assert_eq!(kept, (tex, CachePolicy::WriteThrough), "{kind:?}");
    }
}

/// The iterator skips empty entries before, between and after pages, in
/// coarse and fine tables alike.
#[test]
fn mappings_skip_empty_entries() {
    let mut m = mem::<4>();
    let mut p = pool(&mut m);
    let mut t = PageTable::new(&mut p).unwrap();
    for (mva, pa, len, kind) in [
        (0x0050_3000, 0x0080_0000, 0x1000, PageSizeKind::Small),
        (0x0050_8000, 0x0081_0000, 0x1000, PageSizeKind::Small),
        (0x0060_0c00, 0x0090_0000, 0x400, PageSizeKind::Tiny),
    ] {
        map_now(
            &mut t,
            &mut p,
            Mva::new(mva),
            PhysAddr::new(pa),
            len,
            attrs(1),
            SizePolicy::Exactly(kind),
        );
    }
    assert_eq!(
        sizes(&t, &p),
        vec![
            (0x0050_3000, PageSizeKind::Small, 0x0080_0000),
            (0x0050_8000, PageSizeKind::Small, 0x0081_0000),
            (0x0060_0c00, PageSizeKind::Tiny, 0x0090_0000),
        ]
    );
}

/// A table pool that reaches the table at `deny` once (when it is
/// allocated and cleared) and never again: an allocator breaking its
/// contract after handing the table out.
struct Denying<'a, const N: usize> {
    pool: TablePool<'a, N>,
    deny: Option<PhysAddr>,
    reached: core::cell::Cell<u32>,
}

// SAFETY: every call goes to a conforming `TablePool`, except that
// `table_ptr` answers `None` for one table after its first use: the trait
// allows `None` for memory the allocator cannot reach, and callers must
// handle it.
unsafe impl<const N: usize> TableAlloc for Denying<'_, N> {
    fn allocate(&mut self, kind: TableKind) -> Result<PhysAddr, mmu_armv5::table::AllocError> {
        self.pool.allocate(kind)
    }
    unsafe fn deallocate(&mut self, kind: TableKind, pa: PhysAddr) {
        // SAFETY: the caller's promise, passed on.
        unsafe { self.pool.deallocate(kind, pa) }
    }
    fn table_ptr(&self, kind: TableKind, pa: PhysAddr) -> Option<core::ptr::NonNull<u32>> {
        if self.deny == Some(pa) {
            self.reached.set(self.reached.get() + 1);
            if self.reached.get() > 1 {
                return None;
            }
        }
        self.pool.table_ptr(kind, pa)
    }
    fn table_mva(&self, pa: PhysAddr) -> Mva {
        self.pool.table_mva(pa)
    }
}

/// A map that fails half-way (its second new table, allocated and cleared
/// with the first before anything was written, cannot be reached when its
/// MiB is filled) takes back the pages it wrote: nothing is mapped after.
#[test]
fn a_map_failing_half_way_takes_back_what_it_wrote() {
    let mut m = mem::<4>();
    let mut a = Denying {
        pool: pool(&mut m),
        deny: None,
        reached: Default::default(),
    };
    let mut t = PageTable::new(&mut a).unwrap();
    // The pool hands out the same tables again: learn the second's address.
    let first = a.pool.allocate(TableKind::Coarse).unwrap();
    let second = a.pool.allocate(TableKind::Coarse).unwrap();
    // SAFETY: just allocated, never linked.
    unsafe {
        a.pool.deallocate(TableKind::Coarse, second);
        a.pool.deallocate(TableKind::Coarse, first);
    }
    a.deny = Some(second);
    let r = t.map(
        &mut a,
        Mva::new(0x0030_0000),
        PhysAddr::new(0x0080_0000),
        0x0020_0000,
        attrs(1),
        SizePolicy::Exactly(PageSizeKind::Small),
    );
    assert!(r.is_err(), "{r:?}");
    assert!(a.reached.get() > 1, "failed before the second MiB");
    a.deny = None;
    for mva in [0x0030_0000, 0x003f_f000, 0x0040_0000] {
        assert_eq!(t.lookup(&a, Mva::new(mva)).unwrap(), None, "{mva:#x}");
    }
}

/// A range that ends inside a page is refused whole, for unmap and
/// protect alike.
#[test]
fn a_range_ending_inside_a_page_is_refused() {
    let mut m = mem::<4>();
    let mut p = pool(&mut m);
    let mut t = PageTable::new(&mut p).unwrap();
    map_now(
        &mut t,
        &mut p,
        Mva::new(0x0050_0000),
        PhysAddr::new(0x0080_0000),
        0x1_1000,
        attrs(1),
        SizePolicy::Largest,
    );
    let partial = Err(TableError::PartialPage(Mva::new(0x0050_0000)));
    assert_eq!(
        t.unmap(&mut p, Mva::new(0x0050_0000), 0x1000).map(|_| ()),
        partial
    );
    assert_eq!(
        t.protect(
            &mut p,
            Mva::new(0x0050_0000),
            0x8000,
            Ap::PrivRw,
            CachePolicy::WriteBack
        )
        .map(|_| ()),
        partial
    );
    assert!(t.lookup(&p, Mva::new(0x0051_0000)).unwrap().is_some());
    assert_eq!(
        t.lookup(&p, Mva::new(0x0050_0000)).unwrap().map(|m| m.size),
        Some(PageSizeKind::Large)
    );
    // Fifteen 4 KiB pages, then a 64 KiB one the range ends inside.
    for (mva, pa, len) in [
        (0x0060_1000, 0x0090_1000, 0xf000),
        (0x0061_0000, 0x00a0_0000, 0x1_0000),
    ] {
        map_now(
            &mut t,
            &mut p,
            Mva::new(mva),
            PhysAddr::new(pa),
            len,
            attrs(1),
            SizePolicy::Largest,
        );
    }
    assert_eq!(
        t.unmap(&mut p, Mva::new(0x0060_1000), 0x1_0000).map(|_| ()),
        Err(TableError::PartialPage(Mva::new(0x0061_0000)))
    );
    assert!(t.lookup(&p, Mva::new(0x0060_1000)).unwrap().is_some());
}

/// Regression (issue 26, item 1): two pools built (safely) over one
/// physical base. A flush token of pool A's table flushed with pool B freed
/// into B a coarse table that B's table `u` still linked; the next table of
/// B took that memory and `t.map(&mut b)` wrote into `u`'s table. Tables
/// and tokens now carry their pool's `AllocId`: a table refuses another
/// pool, and a token frees nothing into it.
#[test]
fn tables_and_tokens_stay_with_their_pool() {
    let (mut ma, mut mb) = (mem::<4>(), mem::<4>());
    let mut a = pool(&mut ma);
    let mut b = pool(&mut mb);
    assert_ne!(a.alloc_id(), b.alloc_id());
    let mut t = PageTable::new(&mut a).unwrap();
    let mut u = PageTable::new(&mut b).unwrap();
    assert_eq!(t.root(), u.root(), "one physical base: the same addresses");
    let small = SizePolicy::Exactly(PageSizeKind::Small);
    for (pt, p) in [(&mut t, &mut a), (&mut u, &mut b)] {
        map_now(
            pt,
            p,
            Mva::new(0x10_0000),
            PhysAddr::new(0x40_0000),
            0x1000,
            attrs(0),
            small,
        );
    }
    let free_b = b.free_units();
    // The token's coarse table is A's: flushed with B it is not freed there.
    let f = t.unmap(&mut a, Mva::new(0x10_0000), 0x1000).unwrap();
    assert_eq!(f.tables_to_free(), 1);
    assert_eq!(f.check_alloc(&b), Err(TableError::WrongAllocator));
    assert_eq!(f.check_alloc(&a), Ok(()));
    f.flush(&mut maint(), &mut b);
    assert_eq!(b.free_units(), free_b, "nothing freed into B");
    let u_entry = u.lookup(&b, Mva::new(0x10_0000)).unwrap();
    assert!(u_entry.is_some(), "u's table is intact");
    // A's table refuses B for every operation, reads included.
    let attrs0 = attrs(0);
    assert_eq!(
        t.map(
            &mut b,
            Mva::new(0x20_0000),
            PhysAddr::new(0),
            0x1000,
            attrs0,
            small
        )
        .err(),
        Some(TableError::WrongAllocator)
    );
    assert_eq!(
        t.unmap(&mut b, Mva::new(0x10_0000), 0x1000).err(),
        Some(TableError::WrongAllocator)
    );
    assert_eq!(t.lookup(&b, Mva::new(0)), Err(TableError::WrongAllocator));
    assert_eq!(t.l1_entry(&b, 0), Err(TableError::WrongAllocator));
    assert_eq!(
        u.share_from(&b, &mut t, Mva::new(0xC000_0000), 1 << 20)
            .err(),
        Some(TableError::WrongAllocator)
    );
    assert_eq!(u.lookup(&b, Mva::new(0x10_0000)).unwrap(), u_entry);
}

/// Regression (issue 26, item 1): a pool dropped and a new one built over
/// the same memory knows none of the old tables; the old table must not
/// be used with it (the new pool would hand its memory out again).
#[test]
fn a_new_pool_over_the_same_memory_refuses_the_old_tables() {
    let mut m = mem::<2>();
    let mut t = {
        let mut a = pool(&mut m);
        PageTable::new(&mut a).unwrap()
    };
    let mut b = pool(&mut m);
    let small = SizePolicy::Exactly(PageSizeKind::Small);
    assert_eq!(
        t.map(
            &mut b,
            Mva::new(0),
            PhysAddr::new(0),
            0x1000,
            attrs(0),
            small
        )
        .err(),
        Some(TableError::WrongAllocator)
    );
    let u = PageTable::new(&mut b).unwrap();
    assert_eq!(u.root(), t.root(), "B hands the same memory out again");
    assert!(
        u.mappings(&b).next().is_none(),
        "and t did not write into it"
    );
}
