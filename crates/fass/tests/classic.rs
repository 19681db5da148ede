//! The classic strategies ([`TableSwitch`]: naive, FCSE guaranteed, FCSE
//! best effort) on the `armv5-sim` model, with write-back VIVT caches on
//! and every table the strategy allocates tracked:
//!
//! * own pages map and unmap (also at a MiB-aligned address, in a space that
//!   is not running, and above 32 MiB in a large best-effort space), and
//!   the second-level tables come back;
//! * a shared segment (1 MiB sections) maps and unmaps repeatedly, values
//!   written by one sharer are read by the other, and table memory returns
//!   to its baseline every round;
//! * a best-effort space that maps fixed pages above 32 MiB (including one
//!   in its own FCSE window) moves to PID 0 and keeps running: fetches,
//!   loads and stores return the right values and never fault, before and
//!   after switches, and the kernel's mappings stay reachable;
//! * destroying a space frees exactly the tables it allocated: never the
//!   kernel's second-level table its first-level entries were copied from.

use armv5_sim::{presets, sctlr, Machine, MemoryKind, MemoryRegion, Privilege, Width};
use fass::{
    ClassicKind, FassError, KernelTable, Layout, PidError, PidMode, SegmentAccess, SegmentId,
    SegmentSpec, SpaceId, SwitchStrategy, TableSwitch,
};
use mmu_armv5::descriptor::{AccessPermission, CachePolicy, L1Encoding};
use mmu_armv5::fault::{FaultKind, FaultLevel};
use mmu_armv5::maint::CacheMaintenance;
use mmu_armv5::regs::{Cp15, Cp15Op, Cp15Reg, Dacr, DomainAccess};
use mmu_armv5::regs::{Sctlr, Ttbr};
use mmu_armv5::size::{Frame, PageRange, PageSizeKind, Size4KiB};
use mmu_armv5::table::{
    AllocError, MapAttrs, PageTable, SizePolicy, TableAlloc, TableKind as HwTable, TableRef,
};
use mmu_armv5::{Domain, Fault, FcsePid, ModifiedVirtAddr, PhysAddr, VirtAddr};
use std::collections::BTreeMap;
use std::ptr::NonNull;

const PAGE: u32 = 4096;
const MIB: u32 = 1 << 20;
/// The kernel's section (its "code"): VA and PA.
const KERNEL_CODE: (u32, u32) = (0xC000_0000, 0x0030_0000);
/// The kernel's pages behind its own coarse table: VA and PA.
const KERNEL_PAGES: (u32, u32) = (0xC010_0000, 0x0038_0000);
/// Shared segments: base, PA, size.
const SEGS: [(u32, u32, u32); 2] = [
    (0x8000_0000, 0x0020_0000, MIB),
    (0x8020_0000, 0x0040_0000, 2 * MIB),
];
/// Private frames come from here.
const FRAMES: u32 = 0x0010_0000;

type Classic = TableSwitch<16, 2>;

fn d(n: u8) -> Domain {
    Domain::new(n).unwrap()
}

/// The model plus a ledger of every table allocated through it.
struct Sys {
    m: Machine,
    /// Live tables: PA -> kind.
    live: BTreeMap<u32, HwTable>,
    /// Tables freed that were not live (double frees, foreign tables).
    bad_frees: Vec<(HwTable, u32)>,
}

impl Cp15 for Sys {
    fn read(&self, reg: Cp15Reg) -> u32 {
        Cp15::read(&self.m, reg)
    }

    unsafe fn write(&mut self, reg: Cp15Reg, value: u32) {
        // SAFETY: same contract, same machine.
        unsafe { Cp15::write(&mut self.m, reg, value) }
    }

    unsafe fn op(&mut self, op: Cp15Op, value: u32) {
        // SAFETY: same contract, same machine.
        unsafe { Cp15::op(&mut self.m, op, value) }
    }

    fn test_clean_invalidate_dcache(&mut self) -> bool {
        Cp15::test_clean_invalidate_dcache(&mut self.m)
    }

    fn test_clean_dcache(&mut self) -> bool {
        Cp15::test_clean_dcache(&mut self.m)
    }
}

// SAFETY: every maintenance method forwards to the model machine, whose
// maintenance is trusted (its walker reads only its own memory).
unsafe impl mmu_armv5::maint::TrustedMaintenance for Sys {}

impl CacheMaintenance for Sys {
    const DCACHE_LINE: u32 = <Machine as CacheMaintenance>::DCACHE_LINE;

    fn clean_invalidate_dcache(&mut self) {
        CacheMaintenance::clean_invalidate_dcache(&mut self.m);
    }

    fn invalidate_icache(&mut self) {
        CacheMaintenance::invalidate_icache(&mut self.m);
    }

    fn clean_dcache_line(&mut self, mva: ModifiedVirtAddr) {
        CacheMaintenance::clean_dcache_line(&mut self.m, mva);
    }

    fn clean_invalidate_dcache_line(&mut self, mva: ModifiedVirtAddr) {
        CacheMaintenance::clean_invalidate_dcache_line(&mut self.m, mva);
    }

    unsafe fn invalidate_dcache_line(&mut self, mva: ModifiedVirtAddr) {
        // SAFETY: same contract, same machine.
        unsafe { CacheMaintenance::invalidate_dcache_line(&mut self.m, mva) }
    }

    fn invalidate_icache_line(&mut self, mva: ModifiedVirtAddr) {
        CacheMaintenance::invalidate_icache_line(&mut self.m, mva);
    }

    fn drain_write_buffer(&mut self) {
        CacheMaintenance::drain_write_buffer(&mut self.m);
    }

    fn invalidate_tlb(&mut self) {
        CacheMaintenance::invalidate_tlb(&mut self.m);
    }

    fn invalidate_tlb_entry(&mut self, mva: ModifiedVirtAddr) {
        CacheMaintenance::invalidate_tlb_entry(&mut self.m, mva);
    }

    fn clean_dcache_range(&mut self, mva: ModifiedVirtAddr, len: u32) {
        CacheMaintenance::clean_dcache_range(&mut self.m, mva, len);
    }
}

// SAFETY: every method forwards to the machine's implementation, which
// upholds the contract; the ledger only observes.
unsafe impl TableAlloc for Sys {
    fn allocate(&mut self, kind: HwTable) -> Result<PhysAddr, AllocError> {
        let pa = TableAlloc::allocate(&mut self.m, kind)?;
        assert_eq!(
            self.live.insert(pa.as_u32(), kind),
            None,
            "table {pa} handed out twice"
        );
        Ok(pa)
    }

    unsafe fn deallocate(&mut self, kind: HwTable, pa: PhysAddr) {
        if self.live.get(&pa.as_u32()) == Some(&kind) {
            self.live.remove(&pa.as_u32());
            // SAFETY: the caller's promise, for a table the machine handed out.
            unsafe { TableAlloc::deallocate(&mut self.m, kind, pa) };
        } else {
            // Never given back to the pool: a later allocation would hand
            // a table in use to a second owner.
            self.bad_frees.push((kind, pa.as_u32()));
        }
    }

    fn table_ptr(&self, kind: HwTable, pa: PhysAddr) -> Option<NonNull<u32>> {
        TableAlloc::table_ptr(&self.m, kind, pa)
    }

    fn table_mva(&self, pa: PhysAddr) -> ModifiedVirtAddr {
        TableAlloc::table_mva(&self.m, pa)
    }
}

/// The kernel: its first-level table, and the coarse table behind
/// [`KERNEL_PAGES`] that every space's table links (copied entries).
struct Kernel {
    root: PhysAddr,
    coarse: PhysAddr,
    coarse_words: Vec<u32>,
}

fn kernel_word(i: u32) -> u32 {
    0xE1A0_0000 | i
}

/// SA-1100 model with 2 KiB caches (frequent evictions and write-backs),
/// 16 MiB of RAM, tables from 8 MiB; the kernel's table holds a section and
/// a coarse table of four pages, filled with known words.
fn setup() -> (Sys, Kernel) {
    let mut cfg = presets::sa1100().config;
    cfg.dcache.size = 2 << 10;
    cfg.icache.size = 2 << 10;
    cfg.regions.push(MemoryRegion {
        base: PhysAddr::new(0),
        size: 16 << 20,
        kind: MemoryKind::Ram,
        latency: 0,
    });
    let mut m = Machine::new(cfg).unwrap();
    m.set_frame_pool(PhysAddr::new(0x0080_0000), 8 << 20)
        .unwrap();
    let mut sys = Sys {
        m,
        live: BTreeMap::new(),
        bad_frees: Vec::new(),
    };
    let root = TableRef::allocate(&mut sys, HwTable::L1).unwrap().pa;
    // SAFETY: a fresh table no other `PageTable` manages.
    let mut k = unsafe { PageTable::from_root(root, L1Encoding::Arm9) }.unwrap();
    let attrs = MapAttrs::new(d(0), AccessPermission::PrivRw, CachePolicy::WriteBack);
    let f = k
        .map(
            &mut sys,
            ModifiedVirtAddr::new(KERNEL_CODE.0),
            PhysAddr::new(KERNEL_CODE.1),
            MIB,
            attrs,
            SizePolicy::Exactly(PageSizeKind::Section),
        )
        .unwrap();
    f.flush_on(&mut sys);
    let f = k
        .map(
            &mut sys,
            ModifiedVirtAddr::new(KERNEL_PAGES.0),
            PhysAddr::new(KERNEL_PAGES.1),
            4 * PAGE,
            attrs,
            SizePolicy::Exactly(PageSizeKind::Small),
        )
        .unwrap();
    f.flush_on(&mut sys);
    for i in 0..64 {
        for base in [KERNEL_CODE.1, KERNEL_PAGES.1] {
            sys.m
                .phys_write(PhysAddr::new(base + i * 256), Width::Word, kernel_word(i))
                .unwrap();
        }
    }
    let (kind, coarse) = k
        .l1_entry(&sys, (KERNEL_PAGES.0 >> 20) as usize)
        .unwrap()
        .table()
        .unwrap();
    assert_eq!(kind, HwTable::Coarse);
    let t = TableRef::new(HwTable::Coarse, coarse).unwrap();
    let coarse_words = (0..256).map(|i| t.read(&sys, i).unwrap()).collect();
    sys.m.set_ttbr(Ttbr::new(root).unwrap());
    sys.m
        .set_dacr(Dacr::only(d(0), DomainAccess::Client).with(d(1), DomainAccess::Client));
    sys.m
        .set_sctlr(Sctlr::from_bits(sctlr::M | sctlr::C | sctlr::I));
    (
        sys,
        Kernel {
            root,
            coarse,
            coarse_words,
        },
    )
}

/// The kernel's table, checked against `layout` and vouched for.
fn kernel_table(sys: &Sys, k: &Kernel, layout: &Layout) -> KernelTable {
    // SAFETY: the model's register writes reach no host memory; the table
    // stays allocated in the machine for as long as it lives.
    unsafe { KernelTable::new(sys, k.root, L1Encoding::Arm9, layout, d(0)) }.unwrap()
}

fn strategy(sys: &Sys, kind: ClassicKind, k: &Kernel) -> Classic {
    TableSwitch::new(kind, d(1), kernel_table(sys, k, &Layout::DEMO))
}

const KINDS: [ClassicKind; 3] = [
    ClassicKind::Naive,
    ClassicKind::Fcse(PidMode::Guaranteed),
    ClassicKind::Fcse(PidMode::BestEffort),
];

/// The kernel's coarse table is still allocated, untouched, and reachable:
/// privileged loads and fetches through the current table return its words.
fn assert_kernel_intact(sys: &mut Sys, k: &Kernel, ctx: &str) {
    assert_eq!(
        sys.live.get(&k.coarse.as_u32()),
        Some(&HwTable::Coarse),
        "{ctx}: kernel coarse table freed"
    );
    assert!(sys.bad_frees.is_empty(), "{ctx}: {:x?}", sys.bad_frees);
    let t = TableRef::new(HwTable::Coarse, k.coarse).unwrap();
    let words: Vec<u32> = (0..256).map(|i| t.read(&*sys, i).unwrap()).collect();
    assert_eq!(words, k.coarse_words, "{ctx}: kernel coarse table changed");
    for i in [0u32, 17, 63] {
        for base in [KERNEL_CODE.0, KERNEL_PAGES.0] {
            let va = VirtAddr::new(base + i * 256);
            assert_eq!(
                sys.m.fetch(va, Privilege::Privileged),
                Ok(kernel_word(i)),
                "{ctx}: fetch {va}"
            );
            assert_eq!(
                sys.m.load(va, Width::Word, Privilege::Privileged),
                Ok(kernel_word(i)),
                "{ctx}: load {va}"
            );
        }
    }
}

/// The 4 KiB pages of `[va, va + len)`, which the test knows are valid.
fn pages(va: u32, len: u32) -> PageRange<Size4KiB, VirtAddr> {
    PageRange::from_bytes(VirtAddr::new(va), len).unwrap()
}

/// The 4 KiB frame at `pa`.
fn frame(pa: u32) -> Frame<Size4KiB> {
    Frame::from_start(PhysAddr::new(pa)).unwrap()
}

fn map(t: &mut Classic, sys: &mut Sys, s: u16, va: u32, pa: u32, len: u32) {
    t.map_pages(
        sys,
        SpaceId(s),
        pages(va, len),
        frame(pa),
        AccessPermission::ReadWrite,
        CachePolicy::WriteBack,
    )
    .unwrap_or_else(|e| panic!("map {va:#x} in {s}: {e:?}"));
}

fn user_load(sys: &mut Sys, va: u32) -> Result<u32, Fault> {
    sys.m.load(VirtAddr::new(va), Width::Word, Privilege::User)
}

fn user_store(sys: &mut Sys, va: u32, v: u32) -> Result<(), Fault> {
    sys.m
        .store(VirtAddr::new(va), Width::Word, v, Privilege::User)
}

fn is_translation(r: Result<u32, Fault>) -> bool {
    matches!(
        r,
        Err(Fault {
            kind: FaultKind::Translation(_),
            ..
        })
    )
}

/// A translation fault at `level`: a section-level one means the MiB has
/// no second-level table (any more).
fn is_translation_at(r: Result<u32, Fault>, level: FaultLevel) -> bool {
    matches!(r, Err(Fault { kind: FaultKind::Translation(l), .. }) if l == level)
}

fn seg_spec(g: usize) -> SegmentSpec {
    SegmentSpec {
        base: VirtAddr::new(SEGS[g].0),
        pa: PhysAddr::new(SEGS[g].1),
        size: SEGS[g].2,
        ap: AccessPermission::ReadWrite,
        cache: CachePolicy::WriteBack,
    }
}

#[test]
fn own_pages_map_and_unmap_and_their_tables_come_back() {
    for kind in KINDS {
        let (mut sys, k) = setup();
        let mut t = strategy(&sys, kind, &k);
        let baseline = sys.live.clone();
        for s in 0..2u16 {
            t.create_space(&mut sys, SpaceId(s)).unwrap();
        }
        let with_spaces = sys.live.clone();
        assert_eq!(with_spaces.len(), baseline.len() + 2, "{kind:?}: two L1s");
        // Code, stack and a MiB-aligned data page (the demo kernel's layout).
        let vas = [0x8000u32, 0x9000, 0x001F_E000, 0x001F_F000, 0x0030_0000];
        for s in 0..2u16 {
            for (i, va) in vas.iter().enumerate() {
                map(
                    &mut t,
                    &mut sys,
                    s,
                    *va,
                    FRAMES + (u32::from(s) * 8 + i as u32) * PAGE,
                    PAGE,
                );
            }
        }
        // Three coarse tables per space (MiBs 0, 1 and 3).
        assert_eq!(sys.live.len(), with_spaces.len() + 6, "{kind:?}");
        for s in 0..2u16 {
            t.switch_to(&mut sys, SpaceId(s)).unwrap();
            for (i, va) in vas.iter().enumerate() {
                user_store(&mut sys, *va, u32::from(s) << 16 | i as u32).unwrap();
            }
        }
        // Unmap in the running space (1) and in one that is not running (0).
        for s in [1u16, 0] {
            for va in vas {
                t.unmap_pages(&mut sys, SpaceId(s), pages(va, PAGE))
                    .unwrap_or_else(|e| panic!("{kind:?}: unmap {va:#x} of {s}: {e:?}"));
            }
        }
        assert_eq!(sys.live, with_spaces, "{kind:?}: coarse tables freed");
        // The values reached memory (purged before the unmap).
        for s in 0..2u32 {
            for i in 0..vas.len() as u32 {
                assert_eq!(
                    sys.m
                        .phys_read(PhysAddr::new(FRAMES + (s * 8 + i) * PAGE), Width::Word),
                    Ok(s << 16 | i),
                    "{kind:?}"
                );
            }
        }
        // Nothing of space 1 is reachable any more, and its MiBs have no
        // second-level table left.
        for va in vas {
            assert!(
                is_translation_at(user_load(&mut sys, va), FaultLevel::Section),
                "{kind:?}: {va:#x}"
            );
        }
        // Unmapping again: not mapped, nothing changes.
        let mva = t.mva_of(SpaceId(1), VirtAddr::new(0x8000)).unwrap();
        assert_eq!(
            t.unmap_pages(&mut sys, SpaceId(1), pages(0x8000, PAGE)),
            Err(FassError::Space(fass::space::SpaceError::NotMapped(mva)))
        );
        // A multi-page range, unmapped in two parts; the frames behind
        // are new, so loads see their contents.
        map(
            &mut t,
            &mut sys,
            1,
            0x0010_0000,
            FRAMES + 0x8_0000,
            4 * PAGE,
        );
        for p in 0..4u32 {
            sys.m
                .phys_write(
                    PhysAddr::new(FRAMES + 0x8_0000 + p * PAGE),
                    Width::Word,
                    0xA000 + p,
                )
                .unwrap();
        }
        for p in 0..4u32 {
            assert_eq!(user_load(&mut sys, 0x0010_0000 + p * PAGE), Ok(0xA000 + p));
        }
        t.unmap_pages(&mut sys, SpaceId(1), pages(0x0010_0000, 2 * PAGE))
            .unwrap();
        assert!(is_translation_at(
            user_load(&mut sys, 0x0010_0000),
            FaultLevel::Page
        ));
        assert_eq!(user_load(&mut sys, 0x0010_2000), Ok(0xA002));
        t.unmap_pages(&mut sys, SpaceId(1), pages(0x0010_2000, 2 * PAGE))
            .unwrap();
        assert_eq!(sys.live, with_spaces, "{kind:?}");
        assert_kernel_intact(&mut sys, &k, &format!("{kind:?}"));
        for s in 0..2u16 {
            t.destroy_space(&mut sys, SpaceId(s)).unwrap();
        }
        assert_eq!(sys.live, baseline, "{kind:?}");
        assert_kernel_intact(&mut sys, &k, &format!("{kind:?} after destroy"));
    }
}

#[test]
fn shared_segments_map_and_unmap_repeatedly_without_leaking_tables() {
    for kind in KINDS {
        let (mut sys, k) = setup();
        let mut t = strategy(&sys, kind, &k);
        for s in 0..3u16 {
            t.create_space(&mut sys, SpaceId(s)).unwrap();
        }
        // A private page each, so the spaces also have tables of their own.
        for s in 0..3u16 {
            map(
                &mut t,
                &mut sys,
                s,
                0x8000,
                FRAMES + u32::from(s) * PAGE,
                PAGE,
            );
        }
        for g in 0..2 {
            t.create_segment(SegmentId(g as u16), seg_spec(g)).unwrap();
        }
        let baseline = sys.live.clone();
        for round in 0..20u32 {
            for s in 0..3u16 {
                for g in 0..2u16 {
                    t.map_segment(
                        &mut sys,
                        SpaceId(s),
                        SegmentId(g),
                        VirtAddr::new(SEGS[usize::from(g)].0),
                        SegmentAccess::Client,
                    )
                    .unwrap_or_else(|e| panic!("{kind:?} round {round}: map {g} in {s}: {e:?}"));
                }
            }
            // Sections: no table memory.
            assert_eq!(sys.live, baseline, "{kind:?} round {round}");
            // Each sharer writes its word; the next one reads it.
            for s in 0..3u16 {
                t.switch_to(&mut sys, SpaceId(s)).unwrap();
                for (g, (base, _, size)) in SEGS.iter().enumerate() {
                    let va = base + size - 4 - 64 * u32::from(s);
                    if s > 0 {
                        let prev = va + 64;
                        assert_eq!(
                            user_load(&mut sys, prev),
                            Ok(round << 8 | u32::from(s - 1) << 4 | g as u32),
                            "{kind:?} round {round} space {s} seg {g}"
                        );
                    }
                    user_store(&mut sys, va, round << 8 | u32::from(s) << 4 | g as u32).unwrap();
                }
            }
            // Unmap from a space that is not running, then from the running one.
            for s in [0u16, 1, 2] {
                for g in 0..2u16 {
                    t.unmap_segment(&mut sys, SpaceId(s), SegmentId(g))
                        .unwrap_or_else(|e| {
                            panic!("{kind:?} round {round}: unmap {g} from {s}: {e:?}")
                        });
                }
            }
            assert!(
                is_translation(user_load(&mut sys, SEGS[0].0)),
                "{kind:?} round {round}"
            );
            assert_eq!(sys.live, baseline, "{kind:?} round {round}");
            // After the last sharer the caches were flushed: memory holds
            // every sharer's word.
            for (g, (_, pa, size)) in SEGS.iter().enumerate() {
                for s in 0..3u32 {
                    assert_eq!(
                        sys.m
                            .phys_read(PhysAddr::new(pa + size - 4 - 64 * s), Width::Word),
                        Ok(round << 8 | s << 4 | g as u32),
                        "{kind:?} round {round}"
                    );
                }
            }
        }
        // Unmapping what is not mapped is refused.
        assert!(matches!(
            t.unmap_segment(&mut sys, SpaceId(0), SegmentId(0)),
            Err(FassError::Segment(_))
        ));
        // Destroying a space with segments mapped unmaps them first.
        t.map_segment(
            &mut sys,
            SpaceId(2),
            SegmentId(1),
            VirtAddr::new(SEGS[1].0),
            SegmentAccess::Client,
        )
        .unwrap();
        t.destroy_space(&mut sys, SpaceId(2)).unwrap();
        t.destroy_segment(SegmentId(1)).unwrap();
        assert_kernel_intact(&mut sys, &k, &format!("{kind:?}"));
    }
}

/// Space 0's code (fetched) and data in its low window; checks all of it.
fn check_low(sys: &mut Sys, ctx: &str, data: u32) {
    for i in 0..4u32 {
        assert_eq!(
            sys.m.fetch(VirtAddr::new(0x8000 + i * 4), Privilege::User),
            Ok(0xE280_0000 | i),
            "{ctx}: fetch"
        );
    }
    assert_eq!(user_load(sys, 0x0030_0000), Ok(data), "{ctx}: data");
    assert_eq!(user_load(sys, 0x001F_F000), Ok(data ^ 1), "{ctx}: stack");
}

fn store_low(sys: &mut Sys, data: u32) {
    user_store(sys, 0x0030_0000, data).unwrap();
    user_store(sys, 0x001F_F000, data ^ 1).unwrap();
}

/// Code at 0x8000 (PA `FRAMES`), stack at 0x1F_F000, data at 0x30_0000.
fn low_space(t: &mut Classic, sys: &mut Sys, s: u16) {
    let base = FRAMES + u32::from(s) * 0x1_0000;
    for i in 0..4u32 {
        sys.m
            .phys_write(PhysAddr::new(base + i * 4), Width::Word, 0xE280_0000 | i)
            .unwrap();
    }
    t.create_space(sys, SpaceId(s)).unwrap();
    map(t, sys, s, 0x8000, base, PAGE);
    map(t, sys, s, 0x001F_F000, base + PAGE, PAGE);
    map(t, sys, s, 0x0030_0000, base + 2 * PAGE, PAGE);
}

#[test]
fn a_best_effort_space_growing_past_32_mib_keeps_running() {
    let (mut sys, k) = setup();
    let mut t = strategy(&sys, ClassicKind::Fcse(PidMode::BestEffort), &k);
    let baseline = sys.live.clone();
    low_space(&mut t, &mut sys, 0);
    low_space(&mut t, &mut sys, 1);
    let pid0 = t.pid_of(SpaceId(0)).unwrap();
    assert_eq!(pid0, FcsePid::new(63).unwrap());
    t.switch_to(&mut sys, SpaceId(1)).unwrap();
    store_low(&mut sys, 0x1111);
    t.switch_to(&mut sys, SpaceId(0)).unwrap();
    store_low(&mut sys, 0x5000);
    check_low(&mut sys, "before", 0x5000);
    let faults = sys.m.counters().total_faults();
    // A fixed page in another space's window, mapped while running: the
    // space moves to PID 0 (its entries from window 63 to window 0).
    let other = 0x0400_0000;
    map(&mut t, &mut sys, 0, other, FRAMES + 0x8000, PAGE);
    assert_eq!(t.pid_of(SpaceId(0)), Ok(FcsePid::ZERO));
    assert_eq!(sys.m.fcse_pid(), FcsePid::ZERO, "the running space's PID");
    assert_eq!(
        t.mva_of(SpaceId(0), VirtAddr::new(0x8000)),
        Ok(ModifiedVirtAddr::new(0x8000))
    );
    check_low(&mut sys, "grown", 0x5000);
    user_store(&mut sys, other, 0x0777).unwrap();
    // A fixed page in its own former window, at the MVA its code had.
    let own = 0x7E00_8000;
    map(&mut t, &mut sys, 0, own, FRAMES + 0x9000, PAGE);
    user_store(&mut sys, own, 0x0888).unwrap();
    check_low(&mut sys, "own window", 0x5000);
    assert_eq!(user_load(&mut sys, other), Ok(0x0777));
    assert_eq!(user_load(&mut sys, own), Ok(0x0888));
    assert_kernel_intact(&mut sys, &k, "grown");
    // Switch away and back a few times; both spaces keep their values.
    for round in 0..4u32 {
        t.switch_to(&mut sys, SpaceId(1)).unwrap();
        check_low(&mut sys, "space 1", 0x1111 + round);
        store_low(&mut sys, 0x1111 + round + 1);
        assert!(is_translation(user_load(&mut sys, other)));
        t.switch_to(&mut sys, SpaceId(0)).unwrap();
        check_low(&mut sys, "space 0", 0x5000 + round);
        assert_eq!(user_load(&mut sys, other), Ok(0x0777 + round));
        assert_eq!(user_load(&mut sys, own), Ok(0x0888 + round));
        store_low(&mut sys, 0x5000 + round + 1);
        user_store(&mut sys, other, 0x0777 + round + 1).unwrap();
        user_store(&mut sys, own, 0x0888 + round + 1).unwrap();
        assert_kernel_intact(&mut sys, &k, "round");
    }
    // Only the four deliberate accesses of space 1 to `other` faulted.
    assert_eq!(
        sys.m.counters().total_faults() - faults,
        4,
        "spurious faults"
    );
    // Space 1 grows while not running.
    map(&mut t, &mut sys, 1, 0x0600_0000, FRAMES + 0xA000, PAGE);
    assert_eq!(t.pid_of(SpaceId(1)), Ok(FcsePid::ZERO));
    t.switch_to(&mut sys, SpaceId(1)).unwrap();
    check_low(&mut sys, "space 1 grown", 0x1111 + 4);
    user_store(&mut sys, 0x0600_0000, 0x0999).unwrap();
    assert!(is_translation(user_load(&mut sys, other)));
    t.switch_to(&mut sys, SpaceId(0)).unwrap();
    check_low(&mut sys, "space 0 again", 0x5004);
    assert_eq!(user_load(&mut sys, other), Ok(0x077B));
    assert!(is_translation(user_load(&mut sys, 0x0600_0000)));
    // The large space's own pages unmap, low and high.
    for va in [own, other, 0x0030_0000] {
        t.unmap_pages(&mut sys, SpaceId(0), pages(va, PAGE))
            .unwrap();
        assert!(is_translation(user_load(&mut sys, va)), "{va:#x}");
    }
    assert_eq!(
        sys.m.phys_read(PhysAddr::new(FRAMES + 0x9000), Width::Word),
        Ok(0x088C)
    );
    for s in 0..2u16 {
        t.destroy_space(&mut sys, SpaceId(s)).unwrap();
    }
    assert_eq!(sys.live, baseline);
    assert_kernel_intact(&mut sys, &k, "destroyed");
}

#[test]
fn above_32_mib_is_refused_in_guaranteed_mode_and_plain_in_naive_mode() {
    let (mut sys, k) = setup();
    let mut t = strategy(&sys, ClassicKind::Fcse(PidMode::Guaranteed), &k);
    low_space(&mut t, &mut sys, 0);
    t.switch_to(&mut sys, SpaceId(0)).unwrap();
    store_low(&mut sys, 7);
    let before = sys.live.clone();
    assert_eq!(
        t.map_pages(
            &mut sys,
            SpaceId(0),
            pages(0x0400_0000, PAGE),
            frame(FRAMES + 0x8000),
            AccessPermission::ReadWrite,
            CachePolicy::WriteBack
        ),
        Err(FassError::Pid(PidError::LargeNotSupported))
    );
    assert_eq!(t.pid_of(SpaceId(0)), Ok(FcsePid::new(63).unwrap()));
    assert_eq!(sys.live, before);
    check_low(&mut sys, "guaranteed", 7);

    let (mut sys, k) = setup();
    let mut t = strategy(&sys, ClassicKind::Naive, &k);
    low_space(&mut t, &mut sys, 0);
    t.switch_to(&mut sys, SpaceId(0)).unwrap();
    store_low(&mut sys, 9);
    map(&mut t, &mut sys, 0, 0x0400_0000, FRAMES + 0x8000, PAGE);
    user_store(&mut sys, 0x0400_0000, 10).unwrap();
    check_low(&mut sys, "naive", 9);
    assert_eq!(user_load(&mut sys, 0x0400_0000), Ok(10));
    assert_eq!(sys.m.fcse_pid(), FcsePid::ZERO);
}

#[test]
fn destroy_frees_exactly_what_the_space_allocated_never_the_kernels_tables() {
    for kind in KINDS {
        let (mut sys, k) = setup();
        let mut t = strategy(&sys, kind, &k);
        t.create_segment(SegmentId(0), seg_spec(0)).unwrap();
        let baseline = sys.live.clone();
        for round in 0..3u32 {
            for s in 0..4u16 {
                low_space(&mut t, &mut sys, s);
            }
            t.map_segment(
                &mut sys,
                SpaceId(1),
                SegmentId(0),
                VirtAddr::new(SEGS[0].0),
                SegmentAccess::Client,
            )
            .unwrap();
            // Four L1 tables and three coarse tables each (MiBs 0, 1, 3).
            assert_eq!(sys.live.len(), baseline.len() + 4 * 4, "{kind:?}");
            for s in 0..4u16 {
                t.switch_to(&mut sys, SpaceId(s)).unwrap();
                store_low(&mut sys, round << 4 | u32::from(s));
                assert_kernel_intact(&mut sys, &k, &format!("{kind:?} space {s}"));
            }
            // Destroy one that is not running, then the running one.
            t.destroy_space(&mut sys, SpaceId(1)).unwrap();
            assert_kernel_intact(&mut sys, &k, &format!("{kind:?} round {round}"));
            t.destroy_space(&mut sys, SpaceId(3)).unwrap();
            assert_eq!(t.current(), None);
            assert_eq!(sys.m.ttbr().base(), k.root);
            assert_kernel_intact(&mut sys, &k, &format!("{kind:?} round {round}"));
            // Exactly the destroyed spaces' tables came back.
            assert_eq!(sys.live.len(), baseline.len() + 2 * 4, "{kind:?}");
            // New spaces reuse that memory; the survivors and the kernel
            // are unaffected.
            low_space(&mut t, &mut sys, 5);
            t.switch_to(&mut sys, SpaceId(5)).unwrap();
            store_low(&mut sys, 0x55);
            assert_kernel_intact(&mut sys, &k, &format!("{kind:?} reuse"));
            for s in [0u16, 2] {
                t.switch_to(&mut sys, SpaceId(s)).unwrap();
                check_low(
                    &mut sys,
                    &format!("{kind:?} survivor {s}"),
                    round << 4 | u32::from(s),
                );
            }
            for s in [0u16, 2, 5] {
                t.destroy_space(&mut sys, SpaceId(s)).unwrap();
            }
            assert_eq!(sys.live, baseline, "{kind:?} round {round}");
            assert_kernel_intact(&mut sys, &k, &format!("{kind:?} round {round} end"));
        }
    }
}

#[test]
fn a_failed_create_frees_its_table_but_not_the_kernels() {
    // Guaranteed mode with one PID: the second space cannot get one.
    let layout = Layout::new(
        FcsePid::new(1).unwrap(),
        FcsePid::new(1).unwrap(),
        fass::Region::new(0x8000_0000, 1 << 30).unwrap(),
        fass::Region::new(0xC000_0000, 1 << 30).unwrap(),
    )
    .unwrap();
    let (mut sys, k) = setup();
    let mut t: Classic = TableSwitch::new(
        ClassicKind::Fcse(PidMode::Guaranteed),
        d(1),
        kernel_table(&sys, &k, &layout),
    );
    t.create_space(&mut sys, SpaceId(0)).unwrap();
    let before = sys.live.clone();
    assert_eq!(
        t.create_space(&mut sys, SpaceId(1)),
        Err(FassError::Pid(PidError::Exhausted))
    );
    assert_eq!(sys.live, before);
    t.switch_to(&mut sys, SpaceId(0)).unwrap();
    assert_kernel_intact(&mut sys, &k, "after a failed create");
}
