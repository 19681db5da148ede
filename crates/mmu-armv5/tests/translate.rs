//! The software walk: every fault kind, subpages, S/R bits, FCSE, and a
//! property test against a reference model of what was mapped.

use mmu_armv5::descriptor::{
    AccessPermission as Ap, CachePolicy, L2Descriptor, SmallPageDesc, SubpageAp,
};
use mmu_armv5::regs::{Dacr, DomainAccess};
use mmu_armv5::size::{Frame, PageSizeKind};
use mmu_armv5::table::{write_l2_page, MapAttrs, PageTable, SizePolicy, TableFlush, TablePool};
use mmu_armv5::translate::{translate, Access, AccessType, MmuState};
use mmu_armv5::{
    Domain, FaultKind, FaultLevel, FcsePid, ModifiedVirtAddr as Mva, PhysAddr, VirtAddr,
};
use proptest::prelude::*;
use std::collections::BTreeMap;

mod common;
use common::mem;

fn d(n: u8) -> Domain {
    Domain::new(n).unwrap()
}

fn state(t: &PageTable, dacr: Dacr) -> MmuState {
    MmuState {
        ttb: t.root(),
        dacr,
        pid: FcsePid::ZERO,
        system_protect: false,
        rom_protect: false,
        alignment_check: false,
    }
}

fn acc(va: u32, kind: AccessType, privileged: bool) -> Access {
    Access {
        va: VirtAddr::new(va),
        kind,
        privileged,
        size: 4,
    }
}

#[allow(clippy::too_many_arguments)]
fn map(
    t: &mut PageTable,
    p: &mut TablePool<'_, 8>,
    mva: u32,
    pa: u32,
    len: u32,
    dom: u8,
    ap: Ap,
    pol: SizePolicy,
) {
    let f = t
        .map(
            p,
            Mva::new(mva),
            PhysAddr::new(pa),
            len,
            MapAttrs::new(d(dom), ap, CachePolicy::WriteBack),
            pol,
        )
        .unwrap();
    // SAFETY: host test, no hardware walker.
    unsafe { f.ignore() };
}

#[test]
fn every_fault_kind_in_priority_order() {
    let mut m = mem::<8>();
    let mut p = TablePool::new(&mut m, PhysAddr::new(0x0800_0000), Mva::new(0xC800_0000)).unwrap();
    let mut t = PageTable::new(&mut p).unwrap();
    map(
        &mut t,
        &mut p,
        0x0010_0000,
        0x0100_0000,
        1 << 20,
        1,
        Ap::PrivRw,
        SizePolicy::Largest,
    );
    map(
        &mut t,
        &mut p,
        0x0020_0000,
        0x0200_0000,
        0x1000,
        2,
        Ap::PrivRwUserRo,
        SizePolicy::Largest,
    );
    let client = Dacr::ALL_CLIENT;
    let s = state(&t, client);
    use AccessType::*;

    // Translation, section level: no domain reported.
    let f = translate(&p, &s, &acc(0x0030_0000, Read, true)).unwrap_err();
    assert_eq!(
        (f.kind, f.domain),
        (FaultKind::Translation(FaultLevel::Section), None)
    );
    // Translation, page level: the L1 entry's domain is reported.
    let f = translate(&p, &s, &acc(0x0020_1000, Read, true)).unwrap_err();
    assert_eq!(
        (f.kind, f.domain),
        (FaultKind::Translation(FaultLevel::Page), Some(d(2)))
    );
    assert_eq!(f.fsr(), 0x027);
    // Permission, section: user access to a privileged-only section.
    let f = translate(&p, &s, &acc(0x0010_0000, Read, false)).unwrap_err();
    assert_eq!(
        (f.kind, f.domain),
        (FaultKind::Permission(FaultLevel::Section), Some(d(1)))
    );
    assert_eq!(f.fsr(), 0x01d);
    // Permission, page: user write to a user read-only page.
    let f = translate(&p, &s, &acc(0x0020_0000, Write, false)).unwrap_err();
    assert_eq!(
        (f.kind, f.domain),
        (FaultKind::Permission(FaultLevel::Page), Some(d(2)))
    );
    // Domain beats permission: no access in domain 1, section.
    let s2 = state(&t, client.with(d(1), DomainAccess::NoAccess));
    let f = translate(&p, &s2, &acc(0x0010_0000, Read, false)).unwrap_err();
    assert_eq!(
        (f.kind, f.domain),
        (FaultKind::Domain(FaultLevel::Section), Some(d(1)))
    );
    assert_eq!(f.fsr(), 0x019);
    // Reserved behaves as no access; page level.
    let s3 = state(&t, client.with(d(2), DomainAccess::Reserved));
    let f = translate(&p, &s3, &acc(0x0020_0000, Read, true)).unwrap_err();
    assert_eq!(
        (f.kind, f.domain),
        (FaultKind::Domain(FaultLevel::Page), Some(d(2)))
    );
    // ...but an invalid page in that domain is a translation fault (architecture; QEMU says domain).
    let f = translate(&p, &s3, &acc(0x0020_1000, Read, true)).unwrap_err();
    assert_eq!(f.kind, FaultKind::Translation(FaultLevel::Page));
    // Manager ignores AP.
    let s4 = state(&t, client.with(d(1), DomainAccess::Manager));
    let ok = translate(&p, &s4, &acc(0x0010_0004, Write, false)).unwrap();
    assert_eq!(ok.pa, PhysAddr::new(0x0100_0004));
    // Alignment comes first, only with SCTLR.A, only for data.
    let mut s5 = state(&t, Dacr::NONE);
    s5.alignment_check = true;
    let f = translate(
        &p,
        &s5,
        &Access {
            va: VirtAddr::new(0x0030_0002),
            kind: Read,
            privileged: true,
            size: 4,
        },
    )
    .unwrap_err();
    assert_eq!((f.kind, f.domain), (FaultKind::Alignment, None));
    let f = translate(
        &p,
        &s5,
        &Access {
            va: VirtAddr::new(0x0030_0002),
            kind: Execute,
            privileged: true,
            size: 4,
        },
    )
    .unwrap_err();
    assert_eq!(f.kind, FaultKind::Translation(FaultLevel::Section));
    // An L1 table the allocator cannot reach: external abort on translation.
    let mut s6 = state(&t, client);
    s6.ttb = PhysAddr::new(0x1000_0000);
    let f = translate(&p, &s6, &acc(0, Read, true)).unwrap_err();
    assert_eq!(
        f.kind,
        FaultKind::TranslationExternalAbort(FaultLevel::Section)
    );
}

#[test]
fn alignment_large_page_quarters_and_tiny_entries_of_coarse_tables() {
    use mmu_armv5::descriptor::{LargePageDesc, Tex, TinyPageDesc};
    let mut m = mem::<8>();
    let mut p = TablePool::new(&mut m, PhysAddr::new(0x0800_0000), Mva::new(0xC800_0000)).unwrap();
    let mut t = PageTable::new(&mut p).unwrap();
    map(
        &mut t,
        &mut p,
        0x0040_0000,
        0x0300_0000,
        0x1000,
        4,
        Ap::ReadWrite,
        SizePolicy::Largest,
    );
    let mut s = state(&t, Dacr::ALL_CLIENT);
    s.alignment_check = true;
    let sized = |va: u32, size: u32| Access {
        va: VirtAddr::new(va),
        kind: AccessType::Read,
        privileged: false,
        size,
    };
    // Aligned accesses pass the alignment check, misaligned ones do not.
    assert!(translate(&p, &s, &sized(0x0040_0004, 4)).is_ok());
    assert!(translate(&p, &s, &sized(0x0040_0002, 2)).is_ok());
    assert!(translate(&p, &s, &sized(0x0040_0001, 1)).is_ok());
    for (va, size) in [(0x0040_0001, 2), (0x0040_0002, 4)] {
        let f = translate(&p, &s, &sized(va, size)).unwrap_err();
        assert_eq!(f.kind, FaultKind::Alignment, "{va:#x} size {size}");
    }
    s.alignment_check = false;
    // A large page (64 KiB, sixteen entries) at 0x0041_0000 whose four
    // 16 KiB quarters have their own AP (VA[15:14]), and a tiny-page entry,
    // which a coarse table cannot hold, at 0x0042_0000.
    let (kind, tpa) = t.l1_entry(&p, 4).unwrap().table().unwrap();
    let table = mmu_armv5::table::TableRef::new(kind, tpa).unwrap();
    let large = L2Descriptor::Large(LargePageDesc {
        frame: Frame::from_start(PhysAddr::new(0x0310_0000)).unwrap(),
        ap: SubpageAp([Ap::ReadWrite, Ap::PrivRwUserRo, Ap::PrivRw, Ap::NoneOrRom]),
        cache: CachePolicy::Uncached,
        tex: Tex::ZERO,
    });
    let tiny = L2Descriptor::Tiny(TinyPageDesc {
        frame: Frame::from_start(PhysAddr::new(0x0320_0000)).unwrap(),
        ap: Ap::ReadWrite,
        cache: CachePolicy::Uncached,
        tex: Tex::ZERO,
    });
    for i in 0x10..0x20 {
        // SAFETY: entries of this test's own table that link no table.
        unsafe { table.write(&p, i, large.to_bits()).unwrap() };
    }
    // SAFETY: as above.
    unsafe { table.write(&p, 0x20, tiny.to_bits()).unwrap() };
    let user = |va: u32, kind| translate(&p, &s, &acc(va, kind, false));
    let ok = user(0x0041_4abc, AccessType::Read).unwrap();
    assert_eq!(
        (ok.size, ok.pa, ok.ap),
        (
            PageSizeKind::Large,
            PhysAddr::new(0x0310_4abc),
            Ap::PrivRwUserRo
        )
    );
    assert!(user(0x0041_0000, AccessType::Write).is_ok());
    assert!(user(0x0041_4000, AccessType::Write).is_err());
    assert!(user(0x0041_8000, AccessType::Read).is_err());
    let f = user(0x0042_0000, AccessType::Read).unwrap_err();
    assert_eq!(f.kind, FaultKind::Translation(FaultLevel::Page));
}

#[test]
fn subpages_select_by_va_bits() {
    let mut m = mem::<8>();
    let mut p = TablePool::new(&mut m, PhysAddr::new(0x0800_0000), Mva::new(0xC800_0000)).unwrap();
    let mut t = PageTable::new(&mut p).unwrap();
    map(
        &mut t,
        &mut p,
        0x0040_0000,
        0x0300_0000,
        0x1000,
        4,
        Ap::ReadWrite,
        SizePolicy::Largest,
    );
    // Rewrite the small page with four different subpage permissions.
    let (kind, tpa) = t.l1_entry(&p, 4).unwrap().table().unwrap();
    let table = mmu_armv5::table::TableRef::new(kind, tpa).unwrap();
    let desc = L2Descriptor::Small(SmallPageDesc {
        frame: Frame::from_start(PhysAddr::new(0x0300_0000)).unwrap(),
        ap: SubpageAp([Ap::ReadWrite, Ap::PrivRwUserRo, Ap::PrivRw, Ap::NoneOrRom]),
        cache: CachePolicy::Uncached,
    });
    let mut f = TableFlush::new();
    // SAFETY: a page descriptor rewritten in place in the table's own
    // second-level table; no first-level link changes.
    unsafe { write_l2_page(&p, table, Mva::new(0x0040_0000), desc, &mut f).unwrap() };
    // SAFETY: host test.
    unsafe { f.ignore() };
    let s = state(&t, Dacr::ALL_CLIENT);
    let w = |va| translate(&p, &s, &acc(va, AccessType::Write, false)).map(|t| t.ap);
    let r = |va| translate(&p, &s, &acc(va, AccessType::Read, false)).map(|t| t.ap);
    assert_eq!(w(0x0040_0000), Ok(Ap::ReadWrite));
    assert_eq!(r(0x0040_0400), Ok(Ap::PrivRwUserRo));
    assert!(w(0x0040_0400).is_err());
    assert!(r(0x0040_0800).is_err());
    assert!(r(0x0040_0C00).is_err());
    // S and R bits give AP=00 its meaning.
    let mut s_r = s;
    s_r.rom_protect = true;
    assert!(translate(&p, &s_r, &acc(0x0040_0C00, AccessType::Read, false)).is_ok());
    assert!(translate(&p, &s_r, &acc(0x0040_0C00, AccessType::Write, true)).is_err());
    let mut s_s = s;
    s_s.system_protect = true;
    assert!(translate(&p, &s_s, &acc(0x0040_0C00, AccessType::Read, true)).is_ok());
    assert!(translate(&p, &s_s, &acc(0x0040_0C00, AccessType::Read, false)).is_err());
}

#[test]
fn fcse_relocates_low_addresses_only() {
    let mut m = mem::<8>();
    let mut p = TablePool::new(&mut m, PhysAddr::new(0x0800_0000), Mva::new(0xC800_0000)).unwrap();
    let mut t = PageTable::new(&mut p).unwrap();
    // PID 3's window starts at 96 MiB.
    map(
        &mut t,
        &mut p,
        0x0600_8000,
        0x0123_4000,
        0x1000,
        5,
        Ap::ReadWrite,
        SizePolicy::Largest,
    );
    let mut s = state(&t, Dacr::ALL_CLIENT);
    assert!(translate(&p, &s, &acc(0x8000, AccessType::Read, false)).is_err());
    s.pid = FcsePid::new(3).unwrap();
    let ok = translate(&p, &s, &acc(0x8010, AccessType::Read, false)).unwrap();
    assert_eq!(
        (ok.mva, ok.pa, ok.size),
        (
            Mva::new(0x0600_8010),
            PhysAddr::new(0x0123_4010),
            PageSizeKind::Small
        )
    );
    // The same window reached by its MVA directly (above 32 MiB: not relocated).
    assert_eq!(
        translate(&p, &s, &acc(0x0600_8010, AccessType::Read, false))
            .unwrap()
            .pa,
        ok.pa
    );
}

#[derive(Debug, Clone)]
struct Op {
    mva: u32,
    pa: u32,
    units: u32,
    dom: u8,
    ap: u8,
    exact: Option<PageSizeKind>,
}

fn arb_op() -> impl Strategy<Value = Op> {
    let sizes = prop_oneof![
        Just(None),
        Just(Some(PageSizeKind::Tiny)),
        Just(Some(PageSizeKind::Small)),
        Just(Some(PageSizeKind::Large)),
        Just(Some(PageSizeKind::Section)),
    ];
    (
        0u32..8 * 1024,
        0u32..32 * 1024,
        1u32..if cfg!(miri) { 96 } else { 2048 },
        0u8..4,
        0u8..4,
        sizes,
    )
        .prop_map(|(mu, pu, units, dom, ap, exact)| {
            let align = exact.map_or(1, |k| k.size() >> 10);
            let mva = (mu / align * align) << 10;
            let pa = (pu / align * align) << 10;
            let units = units.div_ceil(align) * align;
            Op {
                mva,
                pa,
                units,
                dom,
                ap,
                exact,
            }
        })
}

proptest! {
    #![proptest_config(common::proptest_config_with(64, 3))]
    /// Map random ranges (over 8 MiB, so they collide); keep a 1 KiB-granular
    /// reference of what succeeded; then every address translates as the
    /// reference says, and unmapped ones fault.
    #[test]
    fn translate_agrees_with_what_was_mapped(ops in proptest::collection::vec(arb_op(), 1..if cfg!(miri) { 4 } else { 12 }), probes in proptest::collection::vec((0u32..8 << 20, any::<bool>(), any::<bool>()), if cfg!(miri) { 16 } else { 64 })) {
        let mut m = mem::<8>();
        let mut p = TablePool::new(&mut m, PhysAddr::new(0x0800_0000), Mva::new(0xC800_0000)).unwrap();
        let mut t = PageTable::new(&mut p).unwrap();
        let mut reference: BTreeMap<u32, (u32, u8, u8)> = BTreeMap::new();
        for op in &ops {
            let len = op.units << 10;
            if op.mva.checked_add(len).is_none_or(|e| e > 8 << 20) { continue; }
            let policy = op.exact.map_or(SizePolicy::Largest, SizePolicy::Exactly);
            let attrs = MapAttrs::new(d(op.dom), Ap::from_bits(op.ap as u32), CachePolicy::WriteBack);
            if let Ok(f) = t.map(&mut p, Mva::new(op.mva), PhysAddr::new(op.pa), len, attrs, policy) {
                // SAFETY: host test.
                unsafe { f.ignore() };
                for u in 0..op.units {
                    let k = op.mva + (u << 10);
                    prop_assert!(reference.insert(k, (op.pa + (u << 10), op.dom, op.ap)).is_none(), "mapped twice");
                }
            }
        }
        let s = state(&t, Dacr::ALL_MANAGER);
        for (va, write, privileged) in probes {
            let kind = if write { AccessType::Write } else { AccessType::Read };
            let r = translate(&p, &s, &acc(va & !3, kind, privileged));
            match reference.get(&(va & !0x3FF)) {
                Some(&(pa, dom, _)) => {
                    let tr = r.unwrap();
                    prop_assert_eq!(tr.pa.as_u32(), pa | (va & 0x3FC));
                    prop_assert_eq!(tr.domain, d(dom));
                }
                None => prop_assert!(matches!(r.unwrap_err().kind, FaultKind::Translation(_))),
            }
        }
        // Client mode: permissions as the AP table says.
        let s = state(&t, Dacr::ALL_CLIENT);
        for (&k, &(_, _, ap)) in reference.iter().step_by(97) {
            let ap = Ap::from_bits(ap as u32);
            let user_w = translate(&p, &s, &acc(k, AccessType::Write, false)).is_ok();
            prop_assert_eq!(user_w, ap == Ap::ReadWrite);
        }
    }
}
