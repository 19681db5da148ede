//! Every public constructor, decoder and table operation of the crate, fed
//! arbitrary values: a value or a typed error, never a panic (overflow,
//! division, indexing), on the host with overflow checks on.

mod common;
use common::{mem, proptest_config, proptest_config_with, Ledger};
use mmu_armv5::addr::{check_aligned, Align};
use mmu_armv5::descriptor::{AccessPermission, CachePolicy, L1Descriptor, L2Descriptor, Tex};
use mmu_armv5::maint::CleanRegion;
use mmu_armv5::regs::{
    CacheGeometry, CacheType, Dacr, Far, Fcseidr, Fsr, Midr, Sctlr, TcmRegion, TcmSize, TcmStatus,
    Ttbr,
};
use mmu_armv5::size::PageSizeKind;
use mmu_armv5::table::{
    MapAttrs, PageTable, SizePolicy, TableFlush, TableKind, TablePool, TableRef, TlbInvalidate,
    TlbPages,
};
use mmu_armv5::translate::{translate, Access, AccessType, MmuState};
use mmu_armv5::{Domain, Fault, FcsePid, ModifiedVirtAddr as Mva, PhysAddr, VirtAddr};
use proptest::prelude::*;

fn size() -> impl Strategy<Value = SizePolicy> {
    prop_oneof![
        Just(SizePolicy::Largest),
        (0..4usize).prop_map(|i| SizePolicy::Exactly(PageSizeKind::LARGEST_FIRST[i])),
    ]
}

#[derive(Clone, Debug)]
enum TableOp {
    Map(u32, u32, u32, u8, SizePolicy),
    Unmap(u32, u32),
    Protect(u32, u32),
    Set(usize, u32),
    Move(usize, usize),
    Share(usize, usize),
    Lookup(u32),
    Translate(u32, u32),
}

fn table_op() -> impl Strategy<Value = TableOp> {
    // Lengths up to 16 MiB keep the host run short; addresses are arbitrary.
    let len = prop_oneof![Just(0u32), 0u32..1 << 24, Just(u32::MAX)];
    let index = prop_oneof![0usize..4100, any::<usize>()];
    prop_oneof![
        (any::<u32>(), any::<u32>(), len.clone(), any::<u8>(), size())
            .prop_map(|(m, p, l, d, s)| TableOp::Map(m, p, l, d, s)),
        (any::<u32>(), len.clone()).prop_map(|(m, l)| TableOp::Unmap(m, l)),
        (any::<u32>(), len).prop_map(|(m, l)| TableOp::Protect(m, l)),
        (index.clone(), any::<u32>()).prop_map(|(i, w)| TableOp::Set(i, w)),
        (index.clone(), index.clone()).prop_map(|(a, b)| TableOp::Move(a, b)),
        (index.clone(), index).prop_map(|(a, b)| TableOp::Share(a, b)),
        any::<u32>().prop_map(TableOp::Lookup),
        (any::<u32>(), any::<u32>()).prop_map(|(va, dacr)| TableOp::Translate(va, dacr)),
    ]
}

proptest! {
    #![proptest_config(proptest_config(512))]

    #[test]
    fn constructors_and_decoders_never_panic(a in any::<u32>(), b in any::<u32>(), c in any::<u32>(), n in any::<u8>(), m in any::<u8>()) {
        let _ = Align::new(a).map(|al| (check_aligned(b, al), VirtAddr::new(b).align_up(al), al.shift()));
        let _ = Align::from_shift(a);
        let _ = (FcsePid::new(n), FcsePid::with_limit(n, m), Domain::new(n), Tex::new(n));
        let _ = CacheGeometry::new(a, b, c).map(|g| g.sets());
        let _ = CacheType::from_bits(a).decode();
        let _ = (TcmSize::from_field(n), TcmSize::from_bytes(a), TcmStatus::from_bits(a));
        if let Ok(s) = TcmSize::from_field(n) {
            let _ = TcmRegion::new(PhysAddr::new(a), s, b & 1 != 0);
        }
        let _ = TcmRegion::from_bits(a).map(|r| r.size().bytes());
        let _ = (Ttbr::new(PhysAddr::new(a)), Ttbr::from_bits(a).base());
        let _ = (Sctlr::from_bits(a), Fcseidr::from_bits(a).pid(), Midr::from_bits(a).cpu_kind());
        let _ = (Fsr::from_bits(a).fault(), Far::from_bits(a), Fault::from_fsr(a), Dacr::from_bits(a));
        let _ = CleanRegion::new(Mva::new(a), b, c).map(|r| (r.half(0), r.half(1)));
        let d1 = L1Descriptor::from_bits(a);
        let _ = (d1.to_bits(), d1.to_bits_xscale(), d1.table(), d1.domain());
        let d2 = L2Descriptor::from_bits(a);
        let _ = (d2.to_bits(), d2.size(), d2.frame_start());
        let _ = AccessPermission::from_bits(a);
        let step = Align::from_shift(c % 32).unwrap();
        let _ = TlbPages::new(Mva::new(a), b, step).map(|p| p.entry_ops());
        let t = TlbInvalidate::for_range(Mva::new(a), b, c);
        let _ = (t.entry_ops(), t.merge(TlbInvalidate::for_range(Mva::new(b), c, a)));
        let mut f = TableFlush::new();
        f.table_written(Mva::new(a), b);
        f.tlb_stale(Mva::new(b), c, a);
        let _ = TableRef::new(TableKind::Coarse, PhysAddr::new(a));
        // SAFETY: nothing to maintain: no hardware.
        unsafe { f.ignore() };
    }

    #[test]
    fn pools_accept_or_refuse_any_base(phys in any::<u32>(), mva in any::<u32>()) {
        let mut m = mem::<2>();
        if let Ok(mut p) = TablePool::new(&mut m, PhysAddr::new(phys), Mva::new(mva)) {
            use mmu_armv5::table::TableAlloc;
            let l1 = p.allocate(TableKind::L1);
            prop_assert!(l1.is_ok());
            let _ = p.table_ptr(TableKind::Fine, PhysAddr::new(mva));
        }
    }

}

proptest! {
    #![proptest_config(proptest_config_with(512, 3))]

    #[test]
    fn table_operations_take_any_arguments(ops in prop::collection::vec(table_op(), 1..if cfg!(miri) { 5 } else { 24 })) {
        let mut memory = mem::<8>();
        let ledger = Ledger::default();
        let mut a = ledger.alloc(&mut memory);
        let mut t = PageTable::new(&mut a).unwrap();
        let mut other = PageTable::new(&mut a).unwrap();
        let attrs = |d: u8| MapAttrs::new(
            Domain::from_low_bits(u32::from(d)),
            AccessPermission::ReadWrite,
            CachePolicy::WriteBack,
        );
        let mut m = ledger.maint();
        for op in ops {
            let r = match op {
                TableOp::Map(mva, pa, len, d, s) =>
                    t.map(&mut a, Mva::new(mva), PhysAddr::new(pa), len, attrs(d), s),
                TableOp::Unmap(mva, len) => t.unmap(&mut a, Mva::new(mva), len),
                TableOp::Protect(mva, len) => t.protect(
                    &mut a, Mva::new(mva), len, AccessPermission::PrivRw, CachePolicy::Uncached),
                TableOp::Set(i, w) => t.set_l1_entry(&a, i, L1Descriptor::from_bits(w)),
                TableOp::Move(x, y) => t.move_l1_entry(&a, x, y),
                TableOp::Share(x, y) => t.share_l1_entries(&a, &mut other, x..y),
                TableOp::Lookup(mva) => {
                    let _ = t.lookup(&a, Mva::new(mva));
                    continue;
                }
                TableOp::Translate(va, dacr) => {
                    let state = MmuState {
                        ttb: t.root(),
                        dacr: Dacr::from_bits(dacr),
                        pid: FcsePid::ZERO,
                        system_protect: va & 1 != 0,
                        rom_protect: va & 2 != 0,
                        alignment_check: va & 4 != 0,
                    };
                    let access = Access { va: VirtAddr::new(va), kind: AccessType::Read, privileged: false, size: dacr };
                    let _ = translate(&a, &state, &access);
                    continue;
                }
            };
            if let Ok(f) = r {
                f.flush(&mut m, &mut a);
            }
        }
        let _ = t.mappings(&a).count();
        // SAFETY: never loaded.
        unsafe {
            other.release(&mut a).unwrap();
            t.release(&mut a).unwrap();
        }
    }
}
