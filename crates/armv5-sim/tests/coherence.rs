//! Property: with one mapping per frame (no aliases), the cached machine is
//! invisible: every load returns the last value stored, and after a full
//! clean physical memory holds exactly what a flat memory would.

mod common;
use armv5_sim::{encode, presets, Privilege, Width};
use common::*;
use mmu_armv5::maint::CacheMaintenance;
use mmu_armv5::VirtAddr;
use proptest::prelude::*;
use std::collections::HashMap;

#[derive(Clone, Debug)]
enum Op {
    Load(u32, Width),
    Store(u32, Width, u32),
    CleanLine(u32),
    CleanAll,
    Fetch(u32),
}

fn op() -> impl Strategy<Value = Op> {
    // Offsets inside a 64 KiB window: enough to overflow the 8 KiB D-cache.
    let off = 0u32..0x1_0000;
    prop_oneof![
        4 => (off.clone(), 0..3u8).prop_map(|(o, w)| Op::Load(o, width(w))),
        4 => (off.clone(), 0..3u8, any::<u32>()).prop_map(|(o, w, v)| Op::Store(o, width(w), v)),
        1 => off.clone().prop_map(Op::CleanLine),
        1 => Just(Op::CleanAll),
        1 => off.prop_map(Op::Fetch),
    ]
}

fn width(w: u8) -> Width {
    match w {
        0 => Width::Byte,
        1 => Width::Half,
        _ => Width::Word,
    }
}

proptest! {
    #![proptest_config(proptest_config_with(200, 4))]
    #[test]
    fn cached_machine_behaves_like_flat_memory(
        ops in prop::collection::vec(op(), 1..scaled(400) as usize),
        write_back in any::<bool>(),
    ) {
        let mut m = machine(presets::sa1100());
        let l1 = new_l1(&mut m);
        let (va, pa) = (0x0010_0000u32, 0x0020_0000u32);
        map(&mut m, l1, va, encode::section(pa, 3, 0, true, write_back));
        enable(&mut m, l1);
        let mut flat: HashMap<u32, u8> = HashMap::new();
        let byte = |f: &HashMap<u32, u8>, a: u32| u32::from(*f.get(&a).unwrap_or(&0));
        for o in ops {
            match o {
                Op::Load(off, w) => {
                    let a = off & !(w.bytes() - 1);
                    let got = m.load(VirtAddr::new(va + a), w, Privilege::User).unwrap();
                    let want = (0..w.bytes()).fold(0, |acc, k| acc | byte(&flat, a + k) << (8 * k));
                    prop_assert_eq!(got, want);
                }
                Op::Store(off, w, v) => {
                    let a = off & !(w.bytes() - 1);
                    m.store(VirtAddr::new(va + a), w, v, Privilege::User).unwrap();
                    for k in 0..w.bytes() {
                        flat.insert(a + k, (v >> (8 * k)) as u8);
                    }
                }
                Op::CleanLine(off) => m.clean_dcache_mva(mmu_armv5::ModifiedVirtAddr::new(va + off)),
                Op::CleanAll => CacheMaintenance::clean_invalidate_dcache(&mut m),
                Op::Fetch(off) => {
                    // The I-cache is not coherent with the D-cache; a fetch
                    // must at least never fault or disturb data.
                    m.fetch(VirtAddr::new(va + off), Privilege::User).unwrap();
                }
            }
        }
        m.clean_dcache_all();
        for (a, b) in &flat {
            let word = r(&m, pa + (a & !3));
            prop_assert_eq!((word >> (8 * (a & 3))) & 0xff, u32::from(*b));
        }
        prop_assert_eq!(m.dcache_dirty_lines(), 0);
    }
}
