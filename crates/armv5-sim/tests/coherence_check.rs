//! The coherence checker: every violation kind from a scenario that makes
//! it, and the same scenario with the right maintenance, which makes none.

use armv5_sim::coherence::{Access, AccessKind, Checker, Cpu, ViolationKind};
use mmu_armv5::marker::{Event, Key};
use ViolationKind::*;

const TTBR: u32 = 0x4000;
/// The kernel's linear map: VA 0xC000_0000 + pa.
const KERNEL: u32 = 0xC000_0000;
const FRAME: u32 = 0x0010_0000;
const OTHER: u32 = 0x0020_0000;
/// A user VA (below 32 MiB: FCSE relocates it).
const USER: u32 = 0x0001_0000;

fn mcr(crn: u8, crm: u8, opc2: u8) -> Key {
    Key::Cp15 {
        read: false,
        crn,
        crm,
        opc2,
    }
}

fn mrc(crn: u8, crm: u8, opc2: u8) -> Key {
    Key::Cp15 {
        read: true,
        crn,
        crm,
        opc2,
    }
}

struct T(Checker);

impl T {
    /// MMU, D- and I-cache on, TTBR at 0x4000.
    fn on(cpu: Cpu) -> T {
        let mut c = Checker::new(cpu);
        c.marker(mcr(2, 0, 0), TTBR, 0);
        c.marker(mcr(3, 0, 0), 0x5555_5555, 0);
        c.marker(mcr(1, 0, 0), 0x1005, 0);
        T(c)
    }
    fn acc(&mut self, kind: AccessKind, va: u32, pa: u32, privileged: bool) {
        self.0.access(&Access {
            pc: 0x8000,
            va,
            pa,
            size: 4,
            kind,
            io: false,
            privileged,
        });
    }
    fn kload(&mut self, pa: u32) {
        self.acc(AccessKind::Load, KERNEL + pa, pa, true);
    }
    fn kstore(&mut self, pa: u32) {
        self.acc(AccessKind::Store, KERNEL + pa, pa, true);
    }
    /// A kernel write of a word whose line it read first (read-allocate:
    /// the store hits and leaves the line dirty).
    fn kwrite(&mut self, pa: u32) {
        self.kload(pa);
        self.kstore(pa);
    }
    fn uload(&mut self, va: u32, pa: u32) {
        self.acc(AccessKind::Load, va, pa, false);
    }
    fn ustore(&mut self, va: u32, pa: u32) {
        self.acc(AccessKind::Store, va, pa, false);
    }
    fn ufetch(&mut self, va: u32, pa: u32) {
        self.acc(AccessKind::Fetch, va, pa, false);
    }
    fn op(&mut self, key: Key, value: u32) {
        self.0.marker(key, value, 0x9000);
    }
    fn clean_line(&mut self, mva: u32) {
        self.op(mcr(7, 10, 1), mva);
    }
    fn inval_dline(&mut self, mva: u32) {
        self.op(mcr(7, 6, 1), mva);
    }
    fn clean_inval_all(&mut self) {
        self.op(mrc(7, 14, 3), 0);
    }
    fn tlb_all(&mut self) {
        self.op(mcr(8, 7, 0), 0);
    }
    fn only(&self, kind: ViolationKind, n: u64) {
        let c = self.0.counts();
        assert_eq!(c.of(kind), n, "{kind}: {c}");
        assert_eq!(c.total(), n, "only {kind}: {c}");
    }
    fn none(&self) {
        let c = self.0.counts();
        assert_eq!(c.total(), 0, "{c}: {:?}", self.0.violations());
    }
}

#[test]
fn stale_alias_on_a_switch_without_flush() {
    for flush in [false, true] {
        let mut t = T::on(Cpu::Arm926);
        // Space 1 reads its frame at USER.
        t.op(Key::Event(Event::Space), 1);
        t.uload(USER, FRAME);
        t.ustore(USER, FRAME);
        // Switch to space 2, same VA, another frame (no FCSE): the naive
        // switch must clean+invalidate the D-cache; the TLB goes either way.
        t.op(Key::Event(Event::Space), 2);
        if flush {
            t.clean_inval_all();
        }
        t.tlb_all();
        t.uload(USER, OTHER);
        if flush {
            t.none();
        } else {
            t.only(StaleAlias, 1);
            let v = t.0.violations()[0];
            assert_eq!(
                (v.va, v.mva, v.pa, v.space, v.privileged),
                (USER, USER, OTHER, 2, false)
            );
            // The homonym line was written back on the way: space 1's data
            // is in its frame.
            t.op(Key::Event(Event::Space), 1);
            t.tlb_all();
            t.uload(USER, FRAME);
            t.only(StaleAlias, 2);
        }
    }
}

#[test]
fn stale_alias_on_fetch_and_store() {
    for flush in [false, true] {
        let mut t = T::on(Cpu::Pxa255);
        t.ufetch(USER, FRAME);
        t.uload(USER + 0x100, FRAME + 0x100);
        t.tlb_all();
        if flush {
            t.op(mcr(7, 5, 0), 0);
            t.clean_inval_all();
        }
        t.ufetch(USER, OTHER);
        t.ustore(USER + 0x100, OTHER + 0x100);
        if flush {
            t.none();
        } else {
            t.only(StaleAlias, 2);
        }
    }
}

#[test]
fn stale_line_after_a_write_through_another_alias() {
    for invalidate in [false, true] {
        let mut t = T::on(Cpu::Arm926);
        t.kload(FRAME); // the kernel's line holds the frame's first words
        t.ustore(USER, FRAME); // the user writes through its alias (store miss: RAM)
        if invalidate {
            t.inval_dline(KERNEL + FRAME);
        }
        t.kload(FRAME);
        if invalidate {
            t.none();
        } else {
            t.only(StaleLine, 1);
        }
    }
}

#[test]
fn stale_ram_when_a_zeroed_frame_is_not_cleaned() {
    for clean in [false, true] {
        let mut t = T::on(Cpu::Sa1110);
        t.kwrite(FRAME); // Frames::alloc zeroes through the linear map
        if clean {
            t.clean_line(KERNEL + FRAME);
        }
        t.uload(USER, FRAME);
        if clean {
            t.none();
        } else {
            t.only(StaleRam, 1);
        }
    }
}

#[test]
fn stale_ram_when_an_old_line_is_written_back_over_newer_ram() {
    for early_clean in [false, true] {
        let mut t = T::on(Cpu::Arm926);
        t.kwrite(FRAME); // dirty half line: words 0..3
        if early_clean {
            // Clean+invalidate before the frame changes hands.
            t.op(mcr(7, 14, 1), KERNEL + FRAME);
        }
        t.ustore(USER + 4, FRAME + 4); // store miss: RAM has the newest word 1
        t.clean_line(KERNEL + FRAME); // writes the old word 1 back over it
        t.uload(USER + 4, FRAME + 4);
        if early_clean {
            t.none();
        } else {
            t.only(StaleRam, 1);
        }
    }
}

#[test]
fn uncached_reads_of_dirty_words_are_stale_ram() {
    let mut t = T::on(Cpu::Arm926);
    t.op(Key::Event(Event::UncachedBegin), 0xD000_0000);
    t.op(Key::Event(Event::UncachedEnd), 0xD010_0000);
    assert_eq!(t.0.uncached_ranges(), &[(0xD000_0000, 0xD010_0000)]);
    t.kwrite(FRAME);
    t.acc(AccessKind::Load, 0xD000_0000, FRAME, true);
    t.only(StaleRam, 1);
    t.clean_line(KERNEL + FRAME);
    t.acc(AccessKind::Load, 0xD000_0000, FRAME, true);
    t.only(StaleRam, 1);
}

#[test]
fn stale_fetch_of_code_written_through_the_dcache() {
    for maintain in [false, true] {
        let mut t = T::on(Cpu::Arm926);
        t.kwrite(FRAME); // the loader copies code through the linear map
        if maintain {
            t.clean_line(KERNEL + FRAME);
            t.op(mcr(7, 5, 0), 0);
        }
        t.ufetch(USER, FRAME);
        if maintain {
            t.none();
        } else {
            t.only(StaleFetch, 1);
        }
    }
}

#[test]
fn stale_fetch_from_an_icache_line_not_invalidated() {
    for invalidate in [false, true] {
        let mut t = T::on(Cpu::Sa1110);
        t.ufetch(USER, FRAME); // old code in the I-cache
        t.kwrite(FRAME); // new code
        t.clean_line(KERNEL + FRAME);
        if invalidate {
            // SA-1110 has no I line operation: whole I invalidate.
            t.op(mcr(7, 5, 0), 0);
        }
        t.ufetch(USER, FRAME);
        if invalidate {
            t.none();
        } else {
            t.only(StaleFetch, 1);
        }
    }
}

#[test]
fn stale_fetch_with_the_icache_line_operation_by_mva() {
    let mut t = T::on(Cpu::Arm926);
    t.ufetch(USER, FRAME);
    t.kwrite(FRAME);
    t.clean_line(KERNEL + FRAME);
    t.op(mcr(7, 5, 1), USER + 0x20); // the wrong line
    t.ufetch(USER, FRAME);
    t.only(StaleFetch, 1);
    t.kwrite(FRAME);
    t.clean_line(KERNEL + FRAME);
    t.op(mcr(7, 5, 1), USER); // the right one
    t.ufetch(USER, FRAME);
    t.only(StaleFetch, 1);
}

#[test]
fn stale_tlb_on_a_remap_without_invalidation() {
    for invalidate in [false, true] {
        let mut t = T::on(Cpu::Arm926);
        t.uload(USER, FRAME);
        // The kernel remaps USER to OTHER (clean caches around it).
        t.clean_inval_all();
        if invalidate {
            t.op(mcr(8, 7, 1), USER);
        }
        t.uload(USER, OTHER);
        if invalidate {
            t.none();
        } else {
            t.only(StaleTlb, 1);
            let v = t.0.violations()[0];
            assert_eq!((v.va, v.pa), (USER, OTHER));
        }
    }
}

#[test]
fn stale_tlb_on_a_fault_the_real_cpu_would_not_take() {
    for invalidate in [false, true] {
        let mut t = T::on(Cpu::Pxa255);
        t.uload(USER + 0x10, FRAME + 0x10);
        // Unmap, then the user touches the page: QEMU faults.
        if invalidate {
            t.op(mcr(8, 6, 1), USER);
        }
        t.op(mrc(5, 0, 0), 0x7); // DFSR: page translation fault
        t.op(mrc(6, 0, 0), USER + 0x20); // FAR
        if invalidate {
            t.none();
        } else {
            t.only(StaleTlb, 1);
        }
    }
    // A permission fault is no TLB question.
    let mut t = T::on(Cpu::Pxa255);
    t.uload(USER, FRAME);
    t.op(mrc(5, 0, 0), 0xF);
    t.op(mrc(6, 0, 0), USER);
    t.none();
}

#[test]
fn fcse_relocates_tlb_and_cache_lookups() {
    // Two spaces at the same VA, with different PIDs: no flush needed.
    let mut t = T::on(Cpu::Sa1110);
    t.op(mcr(13, 0, 0), 1 << 25);
    t.uload(USER, FRAME);
    t.ustore(USER, FRAME);
    t.op(mcr(13, 0, 0), 2 << 25);
    t.uload(USER, OTHER);
    t.ufetch(USER + 0x40, OTHER + 0x40);
    t.none();
    // The faulting address is relocated too.
    t.op(mrc(5, 0, 0), 0x5);
    t.op(mrc(6, 0, 0), USER);
    t.only(StaleTlb, 1);
    let v = t.0.violations()[0];
    assert_eq!((v.va, v.mva), (USER, USER + (2 << 25)));
}

#[test]
fn stale_walk_over_a_dirty_descriptor() {
    // The descriptor for MVA 0x0030_0000 lives at TTBR + 3 * 4.
    let desc = TTBR + 3 * 4;
    for clean in [false, true] {
        let mut t = T::on(Cpu::Arm926);
        t.kwrite(desc); // a PTE write through the cacheable linear map
        if clean {
            t.clean_line(KERNEL + desc);
        }
        t.uload(0x0030_0000, 0x0500_0000);
        if clean {
            t.none();
        } else {
            t.only(StaleWalk, 1);
            assert_eq!(t.0.violations()[0].pa, desc);
        }
    }
}

#[test]
fn incomplete_clean_is_reported_by_assert_clean() {
    let mut t = T::on(Cpu::Arm926);
    t.kwrite(FRAME);
    t.op(Key::Event(Event::AssertClean), 0);
    t.only(IncompleteClean, 1);
    assert_eq!(t.0.violations()[0].pa, FRAME);
    t.op(mrc(7, 10, 3), 0); // test and clean: the whole D-cache
    t.op(Key::Event(Event::AssertClean), 0);
    t.only(IncompleteClean, 1);
    assert_eq!(t.0.dirty_lines(), 0);
}

#[test]
fn sa1110_flush_region_read_cleans_only_when_it_covers_the_cache() {
    // SA-1110: 8 KiB D-cache, 8 sets of 32 ways, round-robin. Reading a
    // cache-sized flush region evicts every line; half of it does not.
    let flush = 0x0080_0000;
    for bytes in [4096u32, 8192] {
        let mut t = T::on(Cpu::Sa1110);
        for k in 0..64 {
            t.kwrite(FRAME + 32 * k);
        }
        for off in (0..bytes).step_by(32) {
            t.kload(flush + off);
        }
        t.op(Key::Event(Event::AssertClean), 0);
        if bytes == 8192 {
            t.none();
        } else {
            t.only(IncompleteClean, 1);
        }
    }
}

#[test]
fn set_way_operations_reach_the_named_line() {
    // ARM926, 16 KiB 4-way: set bits 11..5, way bits 31..30.
    let mut t = T::on(Cpu::Arm926);
    t.kwrite(FRAME + 0x40); // set 2
    for way in 0..4u32 {
        t.op(mcr(7, 10, 2), (way << 30) | (2 << 5));
    }
    t.op(Key::Event(Event::AssertClean), 0);
    t.none();
}

#[test]
fn xscale_line_allocate_holds_undefined_data() {
    let mut t = T::on(Cpu::Pxa255);
    t.uload(USER, FRAME); // the model TLB now maps USER
    t.op(mcr(7, 6, 0), 0);
    t.op(mcr(7, 2, 5), USER + 0x40);
    // Written in full before it is read: fine.
    t.ustore(USER + 0x40, FRAME + 0x40);
    t.uload(USER + 0x40, FRAME + 0x40);
    t.none();
    // Read before written: the line's contents are undefined.
    t.uload(USER + 0x44, FRAME + 0x44);
    t.only(StaleLine, 1);
}

#[test]
fn caches_off_never_violate() {
    let mut c = Checker::new(Cpu::Arm926);
    for k in 0..64u32 {
        for kind in [AccessKind::Store, AccessKind::Load, AccessKind::Fetch] {
            c.access(&Access {
                pc: 0,
                va: 0x1000 + 4 * (k % 9),
                pa: 0x1000 + 4 * (k % 9),
                size: 4,
                kind,
                io: false,
                privileged: true,
            });
        }
    }
    assert_eq!(c.counts().total(), 0);
    assert_eq!(c.instructions(), 64);
}

#[test]
fn io_accesses_are_not_modelled() {
    let mut t = T::on(Cpu::Arm926);
    t.0.access(&Access {
        pc: 0,
        va: 0xF000_0000,
        pa: 0x101F_1000,
        size: 4,
        kind: AccessKind::Store,
        io: true,
        privileged: true,
    });
    assert_eq!(t.0.stats().io, 1);
    assert_eq!(t.0.dirty_lines(), 0);
    t.none();
}

#[test]
fn violations_list_is_capped_and_counts_are_not() {
    let mut t = T::on(Cpu::Arm926);
    t.kwrite(FRAME);
    t.op(Key::Event(Event::UncachedBegin), 0xD000_0000);
    t.op(Key::Event(Event::UncachedEnd), 0xD010_0000);
    for _ in 0..1500 {
        t.acc(AccessKind::Load, 0xD000_0000, FRAME, true);
    }
    assert_eq!(t.0.counts().of(StaleRam), 1500);
    assert_eq!(t.0.violations().len(), armv5_sim::coherence::MAX_VIOLATIONS);
}

#[test]
fn scenario_and_space_tag_violations() {
    let mut t = T::on(Cpu::Arm926);
    t.op(Key::Event(Event::Scenario), 7);
    t.op(Key::Event(Event::Space), 3);
    t.op(Key::Event(Event::Omit), 2);
    t.kwrite(FRAME);
    t.uload(USER, FRAME);
    let v = t.0.violations()[0];
    assert_eq!((v.kind, v.scenario, v.space), (StaleRam, 7, 3));
    assert_eq!(t.0.omission(), 2);
    assert!(v
        .to_string()
        .starts_with("StaleRam pc=0x00008000 va=0x00010000"));
}

#[test]
fn whole_clean_costs_follow_the_dirty_lines() {
    let cost_of_clean = |dirty: u32| {
        let mut t = T::on(Cpu::Arm926);
        for k in 0..dirty {
            t.kwrite(FRAME + 32 * k);
        }
        let before = t.0.cycles();
        t.op(mrc(7, 14, 3), 0);
        t.0.cycles() - before
    };
    let m = armv5_sim::presets::arm926ejs().cost;
    assert_eq!(cost_of_clean(0), m.line_op);
    assert_eq!(cost_of_clean(10), 11 * m.line_op + 10 * m.write_back);
}

#[test]
fn cycles_count_fills_and_hits() {
    let m = armv5_sim::presets::pxa255().cost;
    let mut t = T::on(Cpu::Pxa255);
    let c0 = t.0.cycles();
    t.kload(FRAME); // TLB miss + line fill
    let c1 = t.0.cycles();
    assert_eq!(c1 - c0, m.access + m.tlb_miss + m.line_fill);
    t.kload(FRAME + 4); // hit
    assert_eq!(t.0.cycles() - c1, m.access);
    assert_eq!(t.0.stats().dfills, 1);
}

#[test]
fn fault_status_and_address_pair_in_either_order() {
    let mut t = T::on(Cpu::Arm926);
    t.uload(USER, FRAME);
    // A permission fault elsewhere leaves nothing pending ...
    t.op(mrc(5, 0, 0), 0xF);
    t.op(mrc(6, 0, 0), USER);
    t.none();
    // ... so FAR first, then a translation status, pairs with this FAR.
    t.op(mrc(6, 0, 0), USER + 4);
    t.op(mrc(5, 0, 0), 0x5);
    t.only(StaleTlb, 1);
}

#[test]
fn presets_build_and_bad_geometry_is_an_error() {
    for cpu in Cpu::ALL {
        let p = cpu.preset();
        assert!(Checker::from_preset(cpu, &p).is_ok(), "{}", cpu.name());
        let mut bad = p.clone();
        bad.config.dcache.line = 0;
        assert!(matches!(
            Checker::from_preset(cpu, &bad),
            Err(armv5_sim::ConfigError::BadLineSize { .. })
        ));
        let mut bad = p;
        bad.config.tlb = armv5_sim::TlbLayout::Unified(armv5_sim::TlbConfig {
            entries: 0,
            replacement: armv5_sim::TlbReplacement::RoundRobin,
        });
        assert!(Checker::from_preset(cpu, &bad).is_err());
    }
}

#[test]
fn arm926_follows_the_round_robin_bit() {
    // 16 KiB, 4 ways: lines 4 KiB apart share a set. With SCTLR.RR, four
    // more fills of the set evict the dirty line; AssertClean then holds.
    let mut t = T::on(Cpu::Arm926);
    t.op(mcr(1, 0, 0), 0x1005 | (1 << 14));
    t.kwrite(FRAME);
    for k in 1..=4 {
        t.kload(FRAME + k * 4096);
    }
    t.op(Key::Event(Event::AssertClean), 0);
    t.none();
    // The written-back word is in RAM: the user reads it.
    t.uload(USER, FRAME);
    t.none();
}

#[test]
fn caches_can_be_assumed_on_for_a_guest_that_leaves_them_off() {
    for assume in [false, true] {
        let mut c = Checker::new(Cpu::Arm926);
        c.set_assume_caches_on(assume);
        c.marker(mcr(2, 0, 0), TTBR, 0);
        c.marker(mcr(1, 0, 0), 0x1, 0); // MMU on, caches off
        let mut t = T(c);
        t.kwrite(FRAME);
        t.uload(USER, FRAME);
        if assume {
            t.only(StaleRam, 1);
        } else {
            t.none();
        }
    }
}

#[test]
fn invalidating_dirty_lines_loses_their_data() {
    // c7,c7,0 and c7,c6,0 discard dirty lines: the write never reaches RAM.
    for op in [mcr(7, 7, 0), mcr(7, 6, 0)] {
        let mut t = T::on(Cpu::Arm926);
        t.kwrite(FRAME);
        t.op(op, 0);
        t.kload(FRAME);
        t.only(StaleRam, 1);
    }
}

#[test]
fn split_tlbs_are_invalidated_side_by_side() {
    // SA-1110: separate I- and D-TLBs. A remapped code page whose D-TLB
    // entry alone was invalidated still fetches through the old I-TLB entry.
    for itlb_too in [false, true] {
        let mut t = T::on(Cpu::Sa1110);
        t.ufetch(USER, FRAME);
        t.op(mcr(8, 6, 1), USER);
        if itlb_too {
            t.op(mcr(8, 5, 0), 0);
        }
        t.op(mcr(7, 5, 0), 0);
        t.ufetch(USER, OTHER);
        if itlb_too {
            t.none();
        } else {
            t.only(StaleTlb, 1);
        }
    }
    // ARM926: one unified TLB, so the D form reaches the fetch side too.
    let mut t = T::on(Cpu::Arm926);
    t.ufetch(USER, FRAME);
    t.op(mcr(8, 6, 1), USER);
    t.op(mcr(7, 5, 0), 0);
    t.ufetch(USER, OTHER);
    t.none();
}

#[test]
fn clean_invalidate_by_set_way_writes_back_and_drops() {
    let mut t = T::on(Cpu::Arm926);
    t.kwrite(FRAME + 0x60); // set 3
    for way in 0..4u32 {
        t.op(mcr(7, 14, 2), (way << 30) | (3 << 5));
    }
    assert_eq!(t.0.dirty_lines(), 0);
    t.uload(USER + 0x60, FRAME + 0x60);
    t.none();
}
