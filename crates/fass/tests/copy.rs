//! The copy between address spaces (`SwitchStrategy::copy_between`) on the
//! `armv5-sim` model, with write-back VIVT caches on: a missing clean or
//! invalidation of an alias shows up as a wrong byte.
//!
//! * Property, per strategy (FASS, FASS with more spaces than domains,
//!   guaranteed and best-effort FCSE, naive): random sequences of user
//!   stores, switches and copies between random spaces, offsets and lengths
//!   (some over a read-only page, unmapped memory or overlapping). Every
//!   copy's outcome is the one a reference predicts (the typed error of
//!   the first bad byte, or success); after each one the receiver, switched
//!   to, reads exactly the bytes the sender held, and at the end every
//!   space reads exactly what the reference says for every byte it maps:
//!   a refused copy changed nothing, a done one nothing but its
//!   destination.
//! * FASS copies from window to window with no cache or TLB maintenance,
//!   no flush and the DACR as it was; the classic strategies through the
//!   linear map.
//! * Each check made to fail: a copy memory that skips a byte, a strategy
//!   without the alias maintenance (the stale byte is caught).

mod common;

use armv5_sim::{Machine, Privilege, Width};
use common::*;
use fass::{
    ClassicKind, CopyEnd, CopyError, CopyFault, CopyMemory, CopyPath, Layout, PidMode, Resolution,
    SpaceId, SwitchStrategy, MAX_COPY_LEN,
};
use mmu_armv5::descriptor::{AccessPermission, CachePolicy};
use mmu_armv5::maint::CacheMaintenance;
use mmu_armv5::{ModifiedVirtAddr, PhysAddr, VirtAddr};
use proptest::prelude::*;
use proptest::test_runner::{Config as PtConfig, TestCaseError, TestRunner};
use std::collections::HashMap;

/// First user page of every space.
const BASE: u32 = 0x0001_0000;
/// Read-write pages per space, from `BASE`.
const RW_PAGES: u32 = 4;
/// Then one read-only page; nothing after it.
const RO: u32 = BASE + RW_PAGES * PAGE;
const END: u32 = RO + PAGE;

/// The model's memory as the kernel reaches it: its linear map is the one
/// kernel section (`kernel_table`: the kernel region's first MiB is PA 0).
struct SimMem {
    kernel_base: u32,
    /// Test of the test: skip the byte at this offset of every copy.
    skip: Option<u32>,
}

// SAFETY: the model's memory is the machine's own heap banks, which no
// Rust reference outside the machine reaches; the alias is the section
// `kernel_table` maps for privileged access in the kernel's domain.
unsafe impl CopyMemory<Machine> for SimMem {
    fn kernel_alias(&self, pa: PhysAddr) -> Option<ModifiedVirtAddr> {
        (pa.as_u32() < MIB).then(|| ModifiedVirtAddr::new(self.kernel_base + pa.as_u32()))
    }

    unsafe fn copy(
        &mut self,
        m: &mut Machine,
        dst: ModifiedVirtAddr,
        src: ModifiedVirtAddr,
        len: u32,
    ) -> Result<(), CopyFault> {
        for i in 0..len {
            if self.skip == Some(i) {
                continue;
            }
            let s = VirtAddr::new(src.as_u32() + i);
            let d = VirtAddr::new(dst.as_u32() + i);
            let v = m
                .load(s, Width::Byte, Privilege::Privileged)
                .map_err(|_| CopyFault(ModifiedVirtAddr::new(s.as_u32())))?;
            m.store(d, Width::Byte, v, Privilege::Privileged)
                .map_err(|_| CopyFault(ModifiedVirtAddr::new(d.as_u32())))?;
        }
        Ok(())
    }
}

#[derive(Clone, Copy, Debug)]
enum Kind {
    Fass,
    Fcse(PidMode),
    Naive,
}

#[derive(Clone, Debug)]
enum Op {
    /// Switch to space n.
    Switch(u16),
    /// The running space stores a word at `BASE + off` (word aligned).
    Store(u16, u32),
    /// Copy `len` bytes from (space, BASE - 2 KiB + off) to (space, ...).
    Copy(u16, u32, u16, u32, u32),
}

fn op(spaces: u16) -> impl Strategy<Value = Op> {
    let s = 0..spaces;
    let off = 0..(END - BASE + 0x1000);
    prop_oneof![
        2 => s.clone().prop_map(Op::Switch),
        4 => (0..(END - BASE) / 4, any::<u16>()).prop_map(|(o, v)| Op::Store(v, o * 4)),
        4 => (s.clone(), off.clone(), s, off, prop_oneof![0..64u32, 0..4200u32, 4000..9000u32])
            .prop_map(|(a, x, b, y, n)| Op::Copy(a, x, b, y, n)),
    ]
}

/// The test's world: the machine, the strategy, and the reference bytes.
struct World<T: SwitchStrategy> {
    m: Machine,
    t: T,
    mem: SimMem,
    /// Per space, the frame of each page from `BASE`.
    frames: Vec<Vec<u32>>,
    /// Reference: every user frame byte (RAM starts zeroed).
    bytes: HashMap<u32, u8>,
    current: Option<u16>,
    windows: u32,
}

impl<T: SwitchStrategy> World<T> {
    fn new(mut m: Machine, mut t: T, spaces: u16) -> World<T> {
        let mut frames = Vec::new();
        let mut next = PAGE; // frame 0 stays unused
        for s in 0..spaces {
            t.create_space(&mut m, SpaceId(s)).unwrap();
            let mut f = Vec::new();
            for p in 0..=RW_PAGES {
                let ap = if p < RW_PAGES {
                    AccessPermission::ReadWrite
                } else {
                    AccessPermission::PrivRwUserRo
                };
                t.map_pages(
                    &mut m,
                    SpaceId(s),
                    pages(BASE + p * PAGE, PAGE),
                    frame(next),
                    ap,
                    CachePolicy::WriteBack,
                )
                .unwrap();
                f.push(next);
                next += PAGE;
            }
            frames.push(f);
        }
        assert!(next <= FRAMES_END);
        World {
            m,
            t,
            mem: SimMem {
                kernel_base: Layout::DEMO.kernel().base(),
                skip: None,
            },
            frames,
            bytes: HashMap::new(),
            current: None,
            windows: 0,
        }
    }

    fn switch(&mut self, s: u16) {
        self.t.switch_to(&mut self.m, SpaceId(s)).unwrap();
        self.current = Some(s);
    }

    /// A user access of the running space, resolving strategy faults.
    fn user(&mut self, va: u32, width: Width, store: Option<u32>) -> Result<u32, String> {
        for _ in 0..4 {
            let va_ = VirtAddr::new(va);
            let r = match store {
                Some(v) => self.m.store(va_, width, v, Privilege::User).map(|()| v),
                None => self.m.load(va_, width, Privilege::User),
            };
            match r {
                Ok(v) => return Ok(v),
                Err(_) => {
                    let (fsr, far) = (self.m.dfsr(), self.m.far());
                    match self
                        .t
                        .resolve(&mut self.m, fsr, far)
                        .map_err(|e| format!("{e}"))?
                    {
                        Resolution::Resolved { .. } => {}
                        Resolution::NotFass(f) => {
                            return Err(format!("fault {f:?} at {va:#x}"));
                        }
                    }
                }
            }
        }
        Err(format!("no progress at {va:#x}"))
    }

    /// The physical byte of `va` of space `s`, if mapped.
    fn pa(&self, s: u16, va: u32) -> Option<u32> {
        if !(BASE..END).contains(&va) {
            return None;
        }
        let off = va - BASE;
        Some(self.frames[usize::from(s)][(off / PAGE) as usize] + off % PAGE)
    }

    /// What the reference says a copy does.
    fn expect(&self, a: u16, x: u32, b: u16, y: u32, n: u32) -> Result<(), CopyError> {
        let (sa, sb) = (SpaceId(a), SpaceId(b));
        if n > MAX_COPY_LEN {
            return Err(CopyError::TooLong(n));
        }
        for i in 0..n {
            if self.pa(a, x + i).is_none() {
                return Err(CopyError::Unmapped(sa, VirtAddr::new(x + i)));
            }
        }
        for i in 0..n {
            let va = y + i;
            if self.pa(b, va).is_none() {
                return Err(CopyError::Unmapped(sb, VirtAddr::new(va)));
            }
            if va >= RO {
                return Err(CopyError::ReadOnly(sb, VirtAddr::new(va)));
            }
        }
        let src: Vec<u32> = (0..n).filter_map(|i| self.pa(a, x + i)).collect();
        if (0..n)
            .filter_map(|i| self.pa(b, y + i))
            .any(|p| src.contains(&p))
        {
            return Err(CopyError::Overlap);
        }
        Ok(())
    }

    fn step(&mut self, op: &Op, fass: bool) -> Result<(), String> {
        match *op {
            Op::Switch(s) => self.switch(s),
            Op::Store(v, off) => {
                let Some(s) = self.current else { return Ok(()) };
                let va = BASE + off;
                if va >= RO {
                    // Read-only for the user: must fault, change nothing.
                    if self.user(va, Width::Word, Some(u32::from(v))).is_ok() {
                        return Err(format!("store to the read-only page {va:#x} done"));
                    }
                    return Ok(());
                }
                let word = (u32::from(v) * 0x0001_0001) ^ off;
                self.user(va, Width::Word, Some(word))?;
                let pa = self.pa(s, va).unwrap();
                for (k, b) in word.to_le_bytes().into_iter().enumerate() {
                    self.bytes.insert(pa + k as u32, b);
                }
            }
            Op::Copy(a, x, b, y, n) => {
                let (x, y) = (BASE - 0x800 + x, BASE - 0x800 + y);
                let want = self.expect(a, x, b, y, n);
                let before = self.m.counters().clone();
                let dacr = self.m.dacr();
                let got = self.t.copy_between(
                    &mut self.m,
                    &mut self.mem,
                    CopyEnd::new(SpaceId(a), x),
                    CopyEnd::new(SpaceId(b), y),
                    n,
                );
                let c = self.m.counters() - &before;
                if self.m.dacr() != dacr {
                    return Err("DACR not restored".into());
                }
                match (want, got) {
                    (Err(w), Err(g)) if w == g => {
                        // Refused before anything: no byte, no line touched.
                        if c.d_writes != 0 || c.cache_line_ops != 0 || c.cache_whole_ops != 0 {
                            return Err(format!("refused copy {w:?} touched memory: {c}"));
                        }
                        return Ok(());
                    }
                    (Ok(()), Ok(path)) => {
                        let expected_path = if n == 0 {
                            CopyPath::Empty
                        } else if fass {
                            CopyPath::Windows
                        } else {
                            CopyPath::LinearMap
                        };
                        if path != expected_path {
                            return Err(format!("path {path:?}, want {expected_path:?}"));
                        }
                        if path == CopyPath::Windows {
                            self.windows += 1;
                        }
                    }
                    (w, g) => return Err(format!("copy {op:?}: want {w:?}, got {g:?}")),
                }
                let src: Vec<u8> = (0..n)
                    .map(|i| {
                        let pa = self.pa(a, x + i).unwrap();
                        self.bytes.get(&pa).copied().unwrap_or(0)
                    })
                    .collect();
                for (i, v) in src.iter().enumerate() {
                    let pa = self.pa(b, y + i as u32).unwrap();
                    self.bytes.insert(pa, *v);
                }
                // The receiver reads what the sender held.
                self.switch(b);
                for (i, v) in src.iter().enumerate() {
                    let got = self.user(y + i as u32, Width::Byte, None)?;
                    if got != u32::from(*v) {
                        return Err(format!(
                            "receiver {b} reads {got:#x} at {:#x}, sender held {v:#x}",
                            y + i as u32
                        ));
                    }
                }
            }
        }
        Ok(())
    }

    /// Every space reads what the reference says, every mapped word.
    fn check_all(&mut self) -> Result<(), String> {
        for s in 0..self.frames.len() as u16 {
            self.switch(s);
            for va in (BASE..END).step_by(4) {
                let got = self.user(va, Width::Word, None)?;
                let pa = self.pa(s, va).unwrap();
                let want = u32::from_le_bytes(core::array::from_fn(|k| {
                    self.bytes.get(&(pa + k as u32)).copied().unwrap_or(0)
                }));
                if got != want {
                    return Err(format!(
                        "space {s} reads {got:#x} at {va:#x}, want {want:#x}"
                    ));
                }
            }
        }
        Ok(())
    }
}

fn run_kind(kind: Kind, spaces: u16, ops: &[Op], skip: Option<u32>) -> Result<u32, String> {
    let mut m = machine();
    match kind {
        Kind::Fass => {
            let f = fass_on(&mut m, Layout::DEMO);
            run(World::new(m, f, spaces), ops, true, skip)
        }
        Kind::Fcse(mode) => {
            let t = classic_on(&mut m, ClassicKind::Fcse(mode), Layout::DEMO);
            run(World::new(m, t, spaces), ops, false, skip)
        }
        Kind::Naive => {
            let t = classic_on(&mut m, ClassicKind::Naive, Layout::DEMO);
            run(World::new(m, t, spaces), ops, false, skip)
        }
    }
}

fn run<T: SwitchStrategy>(
    mut w: World<T>,
    ops: &[Op],
    fass: bool,
    skip: Option<u32>,
) -> Result<u32, String> {
    w.mem.skip = skip;
    for op in ops {
        w.step(op, fass)?;
    }
    w.check_all()?;
    Ok(w.windows)
}

fn property(kind: Kind, spaces: u16, cases: u32) {
    let mut runner = TestRunner::new(PtConfig {
        cases,
        failure_persistence: None,
        max_shrink_iters: 100,
        rng_algorithm: proptest::test_runner::RngAlgorithm::XorShift,
        ..PtConfig::default()
    });
    let windows = std::cell::Cell::new(0);
    runner
        .run(&proptest::collection::vec(op(spaces), 40), |ops| {
            let n = run_kind(kind, spaces, &ops, None).map_err(TestCaseError::fail)?;
            windows.set(windows.get() + n);
            Ok(())
        })
        .unwrap_or_else(|e| panic!("{kind:?}: {e}"));
    if matches!(kind, Kind::Fass) {
        assert!(windows.get() > 0, "no copy took the window path");
    }
}

#[test]
fn fass_receiver_reads_what_the_sender_wrote() {
    property(Kind::Fass, 4, 64);
}

#[test]
fn fass_copies_with_more_spaces_than_domains() {
    // 18 spaces, 15 free domains: copies to and from spaces whose domain was
    // recycled take one back first.
    property(Kind::Fass, 18, 32);
}

#[test]
fn fcse_receiver_reads_what_the_sender_wrote() {
    property(Kind::Fcse(PidMode::Guaranteed), 4, 48);
    property(Kind::Fcse(PidMode::BestEffort), 4, 32);
}

#[test]
fn naive_receiver_reads_what_the_sender_wrote() {
    property(Kind::Naive, 4, 48);
}

/// Space 0 writes a pattern into its first page, space 1 runs: the copy.
fn ping<T: SwitchStrategy>(w: &mut World<T>) {
    w.switch(0);
    for i in 0..64u32 {
        w.step(&Op::Store(i as u16 + 1, i * 4), true).unwrap();
    }
    w.switch(1);
}

#[test]
fn fass_window_copy_needs_no_maintenance_once_the_cpd_holds_both() {
    let mut m = machine();
    let f = fass_on(&mut m, Layout::DEMO);
    let mut w = World::new(m, f, 2);
    ping(&mut w);
    let from = CopyEnd::new(SpaceId(0), BASE);
    let to = CopyEnd::new(SpaceId(1), BASE + 0x100);
    // The first copy may fill the CPD; the second needs nothing.
    w.t.copy_between(&mut w.m, &mut w.mem, from, to, 256)
        .unwrap();
    let (c0, s0) = (w.m.counters().clone(), w.t.stats());
    let dacr = w.m.dacr();
    assert_eq!(
        w.t.copy_between(&mut w.m, &mut w.mem, from, to, 256),
        Ok(CopyPath::Windows)
    );
    let c = w.m.counters() - &c0;
    assert_eq!(
        (
            c.cache_line_ops,
            c.cache_whole_ops,
            c.tlb_invalidate_all,
            c.tlb_invalidate_entry
        ),
        (0, 0, 0, 0),
        "{c}"
    );
    // Two DACR writes (open, restore) and nothing else of the registers.
    assert_eq!((c.dacr_writes, c.fcseidr_writes, c.ttbr_writes), (2, 0, 0));
    assert_eq!(w.m.dacr(), dacr);
    assert_eq!(w.t.stats().since(&s0).full_flushes, 0);
    // Space 1 reads it.
    for i in 0..64u32 {
        let got = w.user(BASE + 0x100 + i * 4, Width::Word, None).unwrap();
        let want = ((i + 1) * 0x0001_0001) ^ (i * 4);
        assert_eq!(got, want);
    }
}

#[test]
fn classic_copies_maintain_the_aliases() {
    for kind in [ClassicKind::Fcse(PidMode::Guaranteed), ClassicKind::Naive] {
        let mut m = machine();
        let t = classic_on(&mut m, kind, Layout::DEMO);
        let mut w = World::new(m, t, 2);
        ping(&mut w);
        let c0 = w.m.counters().clone();
        // Through the harness: the path checked (linear map), the
        // reference updated, the receiver's bytes checked.
        w.step(&Op::Copy(0, 0x800, 1, 0x800, 256), false)
            .unwrap_or_else(|e| panic!("{kind:?}: {e}"));
        let c = w.m.counters() - &c0;
        assert!(c.cache_line_ops > 0, "{kind:?}: {c}");
        assert_eq!(c.cache_whole_ops, 0, "{kind:?}: no whole-cache flush");
        w.check_all().unwrap_or_else(|e| panic!("{kind:?}: {e}"));
    }
}

#[test]
fn typed_errors_before_any_write() {
    let mut m = machine();
    let f = fass_on(&mut m, Layout::DEMO);
    let mut w = World::new(m, f, 2);
    let (a, b) = (SpaceId(0), SpaceId(1));
    let mut copy = |x: CopyEnd, y: CopyEnd, n: u32| {
        let c0 = w.m.counters().clone();
        let r = w.t.copy_between(&mut w.m, &mut w.mem, x, y, n);
        let c = w.m.counters() - &c0;
        if r.is_err() {
            assert_eq!((c.d_writes, c.cache_line_ops), (0, 0), "{r:?}: {c}");
        }
        r
    };
    let e = |s, va| CopyEnd::new(s, va);
    assert_eq!(
        copy(e(a, BASE), e(b, BASE), MAX_COPY_LEN + 1),
        Err(CopyError::TooLong(MAX_COPY_LEN + 1))
    );
    assert_eq!(
        copy(e(a, 0xFFFF_FF00), e(b, BASE), 0x200),
        Err(CopyError::Wraps(a, VirtAddr::new(0xFFFF_FF00)))
    );
    // Unmapped halfway: the first bad byte is named.
    assert_eq!(
        copy(e(a, END - 0x10), e(b, BASE), 0x20),
        Err(CopyError::Unmapped(a, VirtAddr::new(END)))
    );
    assert_eq!(
        copy(e(a, BASE), e(b, RO - 4), 8),
        Err(CopyError::ReadOnly(b, VirtAddr::new(RO)))
    );
    // The kernel's memory, either side.
    let k = Layout::DEMO.kernel().base();
    assert_eq!(
        copy(e(a, k), e(b, BASE), 4),
        Err(CopyError::NotUser(a, VirtAddr::new(k)))
    );
    assert_eq!(
        copy(e(a, BASE), e(b, k), 4),
        Err(CopyError::NotUser(b, VirtAddr::new(k)))
    );
    // Another space's window is no address of this one: unmapped.
    let other = w_mva_probe();
    assert_eq!(
        copy(e(a, BASE), e(b, other), 4),
        Err(CopyError::Unmapped(b, VirtAddr::new(other)))
    );
    assert_eq!(
        copy(e(a, BASE), e(a, BASE + 8), 16),
        Err(CopyError::Overlap)
    );
    assert_eq!(
        copy(e(a, BASE), e(SpaceId(9), BASE), 16),
        Err(CopyError::Fass(fass::FassError::UnknownSpace(SpaceId(9))))
    );
    // The read-only page is a fine source.
    assert_eq!(copy(e(a, RO), e(b, BASE), 16), Ok(CopyPath::Windows));
}

/// An address in the FCSE window of PID 1 (above 32 MiB): no space maps it.
fn w_mva_probe() -> u32 {
    0x0200_0000 + BASE
}

#[test]
fn a_copy_memory_that_drops_a_byte_is_caught() {
    // The property's own check fails when the copy is wrong.
    let ops = [
        Op::Switch(0),
        Op::Store(7, 0),
        Op::Copy(0, 0x800, 1, 0x800, 4),
    ];
    for kind in [Kind::Fass, Kind::Fcse(PidMode::Guaranteed), Kind::Naive] {
        assert!(run_kind(kind, 2, &ops, None).is_ok(), "{kind:?}");
        let e = run_kind(kind, 2, &ops, Some(0)).unwrap_err();
        assert!(e.contains("receiver 1 reads"), "{kind:?}: {e}");
    }
}

#[test]
fn without_the_clean_the_linear_map_reads_stale_bytes() {
    // What the maintenance is for: the sender's store sits dirty in the
    // D-cache under its user alias; a read through the kernel alias
    // without cleaning it first returns the old byte.
    let mut m = machine();
    let t = classic_on(&mut m, ClassicKind::Fcse(PidMode::Guaranteed), Layout::DEMO);
    let mut w = World::new(m, t, 2);
    w.switch(0);
    // Bring the line in (a load allocates), then dirty it.
    w.user(BASE, Width::Word, None).unwrap();
    w.user(BASE, Width::Word, Some(0xAABB_CCDD)).unwrap();
    let pa = w.pa(0, BASE).unwrap();
    let alias = ModifiedVirtAddr::new(Layout::DEMO.kernel().base() + pa);
    // Read through the alias as a copy would without the clean.
    let v =
        w.m.load(
            VirtAddr::new(alias.as_u32()),
            Width::Word,
            Privilege::Privileged,
        )
        .unwrap();
    assert_ne!(v, 0xAABB_CCDD, "the model must show the stale alias");
    // The copy's rule: no kernel-alias line is left in the cache.
    w.m.clean_invalidate_dcache_line(alias);
    // With the strategy's copy it arrives.
    assert_eq!(
        w.t.copy_between(
            &mut w.m,
            &mut w.mem,
            CopyEnd::new(SpaceId(0), BASE),
            CopyEnd::new(SpaceId(1), BASE),
            4
        ),
        Ok(CopyPath::LinearMap)
    );
    w.switch(1);
    assert_eq!(w.user(BASE, Width::Word, None), Ok(0xAABB_CCDD));
}

#[test]
fn each_1_kib_subpage_is_checked() {
    use mmu_armv5::descriptor::SubpageAp;
    let ap = |v: [AccessPermission; 4]| SubpageAp(v);
    let (rw, ro, kern) = (
        AccessPermission::ReadWrite,
        AccessPermission::PrivRwUserRo,
        AccessPermission::PrivRw,
    );
    let mut m = machine();
    let f = fass_on(&mut m, Layout::DEMO);
    let mut w = World::new(m, f, 2);
    // Space 1's second page: subpage 2 read-only for the user; space 0's
    // second page: subpage 3 the kernel's only.
    let (a, b) = (SpaceId(0), SpaceId(1));
    w.t.set_page_ap(
        &mut w.m,
        b,
        VirtAddr::new(BASE + PAGE),
        ap([rw, rw, ro, rw]),
    )
    .unwrap();
    w.t.set_page_ap(
        &mut w.m,
        a,
        VirtAddr::new(BASE + PAGE),
        ap([rw, rw, rw, kern]),
    )
    .unwrap();
    let e = CopyEnd::new;
    let mut copy = |x: CopyEnd, y: CopyEnd, n: u32| {
        let c0 = w.m.counters().clone();
        let r = w.t.copy_between(&mut w.m, &mut w.mem, x, y, n);
        if r.is_err() {
            let c = w.m.counters() - &c0;
            assert_eq!((c.d_writes, c.cache_line_ops), (0, 0), "{r:?}: {c}");
        }
        r
    };
    // Into subpages 0 and 1 of space 1's page: fine; reaching subpage 2:
    // refused at its first byte.
    assert_eq!(
        copy(e(a, BASE), e(b, BASE + PAGE), 0x800),
        Ok(CopyPath::Windows)
    );
    assert_eq!(
        copy(e(a, BASE), e(b, BASE + PAGE + 0x7F0), 0x20),
        Err(CopyError::ReadOnly(b, VirtAddr::new(BASE + PAGE + 0x800)))
    );
    // Past it, subpage 3 is writable again.
    assert_eq!(
        copy(e(a, BASE), e(b, BASE + PAGE + 0xC00), 0x400),
        Ok(CopyPath::Windows)
    );
    // A source subpage the user may not read.
    assert_eq!(
        copy(e(a, BASE + PAGE + 0xBF0), e(b, BASE), 0x20),
        Err(CopyError::NotReadable(
            a,
            VirtAddr::new(BASE + PAGE + 0xC00)
        ))
    );
    // A read-only subpage is a fine source.
    assert_eq!(
        copy(e(b, BASE + PAGE + 0x800), e(a, BASE), 0x400),
        Ok(CopyPath::Windows)
    );
}
