//! The hazards of VIVT caches and untagged TLBs. Each test fails if the
//! model does not reproduce the hazard.

mod common;
use armv5_sim::{encode, presets, Privilege, Width};
use common::*;
use mmu_armv5::regs::Ttbr;
use mmu_armv5::regs::{Dacr, DomainAccess};
use mmu_armv5::PhysAddr;
use mmu_armv5::{Domain, FaultKind, FaultLevel, FcsePid, ModifiedVirtAddr, VirtAddr};

const VA: u32 = 0x0010_0000;
const FRAME_A: u32 = 0x0020_0000;
const FRAME_B: u32 = 0x0030_0000;

fn load(m: &mut armv5_sim::Machine, va: u32) -> u32 {
    m.load(VirtAddr::new(va), Width::Word, Privilege::User)
        .unwrap()
}

#[test]
fn homonym_without_flush_returns_the_other_spaces_data() {
    for p in presets::all() {
        let mut m = machine(p);
        w(&mut m, FRAME_A + 0x40, 0xAAAA_AAAA);
        w(&mut m, FRAME_B + 0x40, 0xBBBB_BBBB);
        let a = new_l1(&mut m);
        let b = new_l1(&mut m);
        map(&mut m, a, VA, encode::section(FRAME_A, 3, 0, true, true));
        map(&mut m, b, VA, encode::section(FRAME_B, 3, 0, true, true));
        enable(&mut m, a);
        assert_eq!(load(&mut m, VA + 0x40), 0xAAAA_AAAA);
        // Switch address space: new tables, TLB flushed, caches NOT flushed.
        m.set_ttbr(Ttbr::new(PhysAddr::new(b)).unwrap());
        m.invalidate_tlb();
        let got = load(&mut m, VA + 0x40);
        assert_eq!(got, 0xAAAA_AAAA, "homonym must hit space A's line");
        assert_eq!(r(&m, FRAME_B + 0x40), 0xBBBB_BBBB);
        // After the flush a naive kernel does, the right data appears.
        m.clean_invalidate_dcache_all();
        assert_eq!(load(&mut m, VA + 0x40), 0xBBBB_BBBB);
    }
}

#[test]
fn homonym_with_distinct_fcse_pids_returns_the_right_data() {
    for p in presets::all() {
        let mut m = machine(p);
        w(&mut m, FRAME_A + 0x40, 0xAAAA_AAAA);
        w(&mut m, FRAME_B + 0x40, 0xBBBB_BBBB);
        // One table: PID 1's window maps VA to frame A, PID 2's to frame B.
        let l1 = new_l1(&mut m);
        let (p1, p2) = (FcsePid::new(1).unwrap(), FcsePid::new(2).unwrap());
        let mva1 = VirtAddr::new(VA).to_mva(p1).as_u32();
        let mva2 = VirtAddr::new(VA).to_mva(p2).as_u32();
        map(&mut m, l1, mva1, encode::section(FRAME_A, 3, 1, true, true));
        map(&mut m, l1, mva2, encode::section(FRAME_B, 3, 2, true, true));
        enable(&mut m, l1);
        m.set_fcse_pid(p1);
        assert_eq!(load(&mut m, VA + 0x40), 0xAAAA_AAAA);
        // Switch: PID only. No TLB or cache maintenance at all.
        let before = m.counters().clone();
        m.set_fcse_pid(p2);
        assert_eq!(load(&mut m, VA + 0x40), 0xBBBB_BBBB);
        m.set_fcse_pid(p1);
        assert_eq!(load(&mut m, VA + 0x40), 0xAAAA_AAAA);
        let d = m.counters() - &before;
        assert_eq!(d.tlb_invalidate_all + d.cache_whole_ops, 0);
        assert_eq!(d.fcseidr_writes, 2);
        assert_eq!(d.dcache_read_hits, 1, "PID 1's line survived PID 2's run");
    }
}

#[test]
fn synonym_in_write_back_cache_reads_stale_data() {
    for p in presets::all() {
        let mut m = machine(p);
        let l1 = new_l1(&mut m);
        // Two VAs, one frame, write-back. The aliases differ in MVA bits that
        // index every preset's cache, so they occupy different lines.
        let (va1, va2) = (0x0040_0000, 0x0050_0000 + 0x20);
        map(&mut m, l1, va1, encode::section(FRAME_A, 3, 0, true, true));
        map(
            &mut m,
            l1,
            va2 & 0xFFF0_0000,
            encode::section(FRAME_A, 3, 0, true, true),
        );
        enable(&mut m, l1);
        w(&mut m, FRAME_A + 0x20, 1);
        assert_eq!(load(&mut m, va1 + 0x20), 1);
        assert_eq!(load(&mut m, va2), 1);
        m.store(VirtAddr::new(va1 + 0x20), Width::Word, 5, Privilege::User)
            .unwrap();
        assert_eq!(load(&mut m, va1 + 0x20), 5);
        assert_eq!(load(&mut m, va2), 1, "the synonym's line is stale");
        // Clean the writer's line, invalidate the reader's: coherent again.
        m.clean_dcache_mva(ModifiedVirtAddr::new(va1 + 0x20));
        m.invalidate_dcache_mva(ModifiedVirtAddr::new(va2));
        assert_eq!(load(&mut m, va2), 5);
    }
}

#[test]
fn invalidating_a_dirty_line_without_clean_loses_the_write() {
    for p in presets::all() {
        let mut m = machine(p);
        let l1 = new_l1(&mut m);
        map(&mut m, l1, VA, encode::section(FRAME_A, 3, 0, true, true));
        enable(&mut m, l1);
        let va = VA + 0x80;
        assert_eq!(load(&mut m, va), 0);
        m.store(VirtAddr::new(va), Width::Word, 9, Privilege::User)
            .unwrap();
        assert_eq!(m.dcache_dirty_lines(), 1);
        m.invalidate_dcache_mva(ModifiedVirtAddr::new(va));
        assert_eq!(load(&mut m, va), 0, "the write was lost");
        assert_eq!(r(&m, FRAME_A + 0x80), 0);
        // The same with clean + invalidate keeps it.
        m.store(VirtAddr::new(va), Width::Word, 9, Privilege::User)
            .unwrap();
        assert_eq!(
            r(&m, FRAME_A + 0x80),
            0,
            "write-back: memory not yet updated"
        );
        m.clean_invalidate_dcache_mva(ModifiedVirtAddr::new(va));
        assert_eq!(r(&m, FRAME_A + 0x80), 9);
        assert_eq!(load(&mut m, va), 9);
    }
}

#[test]
fn write_through_updates_memory_at_once() {
    let mut m = machine(presets::arm926ejs());
    let l1 = new_l1(&mut m);
    map(&mut m, l1, VA, encode::section(FRAME_A, 3, 0, true, false));
    enable(&mut m, l1);
    assert_eq!(load(&mut m, VA), 0);
    m.store(VirtAddr::new(VA), Width::Word, 3, Privilege::User)
        .unwrap();
    assert_eq!(r(&m, FRAME_A), 3);
    assert_eq!(m.dcache_dirty_lines(), 0);
    assert_eq!(m.counters().write_throughs, 1);
    // A discarding invalidate now loses nothing.
    m.invalidate_dcache_all();
    assert_eq!(load(&mut m, VA), 3);
}

#[test]
fn table_change_without_tlb_invalidate_uses_the_stale_entry() {
    for p in presets::all() {
        let mut m = machine(p);
        w(&mut m, FRAME_A, 0xAAAA_AAAA);
        w(&mut m, FRAME_B, 0xBBBB_BBBB);
        let l1 = new_l1(&mut m);
        // Uncached, so only the TLB can be stale.
        map(&mut m, l1, VA, encode::section(FRAME_A, 3, 0, false, false));
        enable(&mut m, l1);
        assert_eq!(load(&mut m, VA), 0xAAAA_AAAA);
        map(&mut m, l1, VA, encode::section(FRAME_B, 3, 0, false, false));
        assert_eq!(load(&mut m, VA), 0xAAAA_AAAA, "stale TLB entry");
        // Even unmapping keeps translating until the entry goes.
        w(&mut m, armv5_sim::encode::l1_entry_addr(l1, VA), 0);
        assert_eq!(load(&mut m, VA), 0xAAAA_AAAA);
        map(&mut m, l1, VA, encode::section(FRAME_B, 3, 0, false, false));
        m.invalidate_tlb_entry(ModifiedVirtAddr::new(VA));
        assert_eq!(load(&mut m, VA), 0xBBBB_BBBB);
    }
}

#[test]
fn dacr_change_takes_effect_without_tlb_flush() {
    for p in presets::all() {
        let mut m = machine(p);
        let l1 = new_l1(&mut m);
        map(&mut m, l1, VA, encode::section(FRAME_A, 0, 3, false, false)); // AP=00
        enable(&mut m, l1);
        let d3 = Domain::new(3).unwrap();
        m.set_dacr(Dacr::only(d3, DomainAccess::Manager));
        assert!(m
            .load(VirtAddr::new(VA), Width::Word, Privilege::User)
            .is_ok());
        let before = m.counters().clone();
        m.set_dacr(Dacr::only(d3, DomainAccess::NoAccess));
        let f = m
            .load(VirtAddr::new(VA), Width::Word, Privilege::User)
            .unwrap_err();
        assert_eq!(f.kind, FaultKind::Domain(FaultLevel::Section));
        assert_eq!(f.domain, Some(d3));
        assert_eq!(m.dfsr().bits(), 0x39);
        m.set_dacr(Dacr::only(d3, DomainAccess::Client));
        let f = m
            .load(VirtAddr::new(VA), Width::Word, Privilege::User)
            .unwrap_err();
        assert_eq!(f.kind, FaultKind::Permission(FaultLevel::Section));
        m.set_dacr(Dacr::only(d3, DomainAccess::Reserved));
        let f = m
            .load(VirtAddr::new(VA), Width::Word, Privilege::User)
            .unwrap_err();
        assert_eq!(f.kind, FaultKind::Domain(FaultLevel::Section));
        let d = m.counters() - &before;
        assert_eq!(d.tlb_invalidate_all + d.tlb_invalidate_entry, 0);
        assert_eq!(d.dtlb_misses, 0, "every check used the cached TLB entry");
        assert_eq!(d.dtlb_hits, 3);
    }
}
