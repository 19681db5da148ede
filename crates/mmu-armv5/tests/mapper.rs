//! Table operations: sizes chosen, errors, all-or-nothing behaviour, flush tokens.

use mmu_armv5::descriptor::{AccessPermission as Ap, CachePolicy, L1Descriptor, SubpageAp};
use mmu_armv5::size::PageSizeKind;
use mmu_armv5::table::{
    MapAttrs, PageTable, PoolBlock, SizePolicy, TableAlloc, TableError, TableKind, TablePool,
    TlbInvalidate,
};
use mmu_armv5::{AddrError, Domain, ModifiedVirtAddr as Mva, PhysAddr};

const BASE: u32 = 0x0400_0000;

fn mem<const N: usize>() -> Box<[PoolBlock; N]> {
    // Built on the heap, block by block, to keep large pools off the stack.
    let v: Vec<PoolBlock> = (0..N).map(|_| PoolBlock::ZERO).collect();
    v.into_boxed_slice().try_into().ok().unwrap()
}

fn pool<const N: usize>(m: &mut [PoolBlock; N]) -> TablePool<'_, N> {
    TablePool::new(m, PhysAddr::new(BASE), Mva::new(0xC400_0000)).unwrap()
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
    let ok = t
        .map(
            &mut p,
            Mva::new(0x0010_2000),
            PhysAddr::new(0x9000),
            0x1000,
            attrs(3),
            SizePolicy::Largest,
        )
        .unwrap();
    // SAFETY: host test.
    unsafe { ok.ignore() };
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
    let f = t
        .map(
            &mut p,
            Mva::new(0x0200_0000),
            PhysAddr::new(0x0500_0000),
            0x11000,
            attrs(2),
            SizePolicy::Largest,
        )
        .unwrap();
    // SAFETY: host test.
    unsafe { f.ignore() };
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
        TlbInvalidate::Pages {
            start: Mva::new(0x0201_0000),
            len: 0x1000,
            step: 0x1000
        },
        "exactly the unmapped page's TLB entry"
    );
    // SAFETY: host test.
    unsafe { f.ignore() };
    assert_eq!(p.free_units(), free - 1, "table still holds the large page");
    let f = t.unmap(&mut p, Mva::new(0x0200_0000), 0x10000).unwrap();
    // SAFETY: host test.
    unsafe { f.ignore() };
    assert_eq!(p.free_units(), free, "empty table freed");
    assert_eq!(t.l1_entry(&p, 0x20).unwrap(), L1Descriptor::FAULT);
}

#[test]
fn protect_rewrites_permissions_and_invalidates() {
    let mut m = mem::<2>();
    let mut p = pool(&mut m);
    let mut t = PageTable::new(&mut p).unwrap();
    let f = t
        .map(
            &mut p,
            Mva::new(0x0300_0000),
            PhysAddr::new(0x0300_0000),
            (1 << 20) + 0x1000,
            attrs(2),
            SizePolicy::Largest,
        )
        .unwrap();
    // SAFETY: host test.
    unsafe { f.ignore() };
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
    let f = t
        .map(
            &mut p,
            Mva::new(0x0),
            PhysAddr::new(0),
            0x0030_0400,
            attrs(0),
            SizePolicy::Largest,
        )
        .unwrap();
    // SAFETY: host test.
    unsafe { f.ignore() };
    assert!(p.free_units() < free);
    // SAFETY: the table was never installed anywhere.
    unsafe { t.release(&mut p).unwrap() };
    assert_eq!(p.free_units(), free);
    let _ = TableKind::Fine;
}
