//! The target interface and the run loop.

use crate::outcome::{
    abort_matches, expected_abort, Counts, Deviations, Digest, Mismatch, Observed, Report,
};
use crate::rng::Rng;
use mmu_armv5::descriptor::{
    AccessPermission, CachePolicy, L1Descriptor, L2Descriptor, LargePageDesc, SmallPageDesc,
    SubpageAp, Tex,
};
use mmu_armv5::regs::{Dacr, DomainAccess};
use mmu_armv5::size::{Frame, PageSizeKind};
use mmu_armv5::table::{
    write_l2_page, MapAttrs, PageTable, SizePolicy, TableAlloc, TableError, TableFlush, TableRef,
};
use mmu_armv5::translate::{translate, Access, AccessType, MmuState};
use mmu_armv5::{Domain, FcsePid, ModifiedVirtAddr, PhysAddr, VirtAddr};

const MIB: u32 = 1 << 20;
const MAX_MAPS: usize = 64;

/// The MMU state of one group of accesses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct TestState {
    /// DACR to load (the target's own domain is always client).
    pub dacr: Dacr,
    /// FCSE PID to load.
    pub pid: FcsePid,
    /// SCTLR.S to set.
    pub system_protect: bool,
    /// SCTLR.R to set.
    pub rom_protect: bool,
}

/// What the runner needs from an MMU under test.
///
/// The target owns a live page table (the one its MMU walks) whose first
/// `Config::test_slots` MiB of MVA space are free for the test, and a
/// `Config::backing_len` region of physical memory at `Config::backing`.
pub trait Target {
    /// The table allocator of the live page table.
    type Alloc: TableAlloc;
    /// The live page table and its allocator.
    fn table(&mut self) -> (&mut PageTable, &mut Self::Alloc);
    /// Performs a table change's maintenance (cache clean, TLB invalidate).
    fn sync(&mut self, flush: TableFlush);
    /// Loads DACR, FCSE PID and the S/R bits for the following accesses.
    fn set_state(&mut self, state: &TestState);
    /// Restores the target's own DACR, PID and SCTLR after a group.
    fn restore_state(&mut self);
    /// A word load at `va` (`LDR`, or `LDRT` when not privileged).
    fn load(&mut self, va: VirtAddr, privileged: bool) -> Observed;
    /// A word store at `va` (`STR`, or `STRT` when not privileged).
    fn store(&mut self, va: VirtAddr, value: u32, privileged: bool) -> Observed;
    /// Reads a physical word, bypassing the test's translation.
    fn phys_read(&mut self, pa: PhysAddr) -> u32;
    /// Writes a physical word, bypassing the test's translation.
    fn phys_write(&mut self, pa: PhysAddr, value: u32);
    /// The target's known deviations from the architecture.
    fn deviations(&self) -> Deviations;
}

/// Parameters of a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Config {
    /// Seed of every random choice.
    pub seed: u64,
    /// Rounds; each maps afresh and unmaps at the end.
    pub rounds: u32,
    /// Mapping attempts per round (overlapping ones are refused and counted).
    pub maps_per_round: u32,
    /// MMU states per round.
    pub states_per_round: u32,
    /// Accesses per state.
    pub accesses_per_state: u32,
    /// Physical memory the mappings point into (1 MiB aligned).
    pub backing: PhysAddr,
    /// Its length (a multiple of 1 MiB).
    pub backing_len: u32,
    /// MiB slots of MVA space, from 0, the test may map.
    pub test_slots: u32,
    /// Largest FCSE PID used (its window must lie inside the test slots).
    pub max_pid: u8,
    /// The target's own domain: always client, never used for test mappings.
    pub kernel_domain: Domain,
}

impl Config {
    /// The demo kernel's configuration for `seed`: about 1,500 accesses.
    #[must_use]
    pub const fn standard(seed: u64, backing: PhysAddr, kernel_domain: Domain) -> Config {
        Config {
            seed,
            rounds: 6,
            maps_per_round: 24,
            states_per_round: 4,
            accesses_per_state: 64,
            backing,
            backing_len: 4 * MIB,
            test_slots: 128,
            max_pid: 3,
            kernel_domain,
        }
    }

    fn check(&self) -> Result<(), TableError> {
        let ok = self.backing.is_aligned(mmu_armv5::addr::Align::MIB_1)
            && self.backing_len >= MIB
            && self.backing_len.is_multiple_of(MIB)
            && self.test_slots >= 1
            && self.test_slots <= 4096
            && ((self.max_pid as u32 + 1) << 5) <= self.test_slots.max(32)
            && self
                .backing
                .as_u32()
                .checked_add(self.backing_len)
                .is_some();
        if ok {
            Ok(())
        } else {
            Err(TableError::BadLength(self.backing_len))
        }
    }
}

/// The word the backing memory holds at `pa` when untouched.
#[must_use]
pub fn pattern(pa: u32) -> u32 {
    pa.rotate_left(13) ^ 0x5A5A_A5A5
}

struct Gen {
    rng: Rng,
    cfg: Config,
}

impl Gen {
    fn domain(&mut self) -> Domain {
        loop {
            let d = Domain::from_low_bits(self.rng.below(16));
            if d != self.cfg.kernel_domain {
                return d;
            }
        }
    }

    fn map(&mut self) -> (u32, u32, u32, MapAttrs, SizePolicy) {
        let r = self.rng.below(100);
        let (kind, policy) = match r {
            0..=19 => (
                PageSizeKind::Section,
                SizePolicy::Exactly(PageSizeKind::Section),
            ),
            20..=39 => (
                PageSizeKind::Large,
                SizePolicy::Exactly(PageSizeKind::Large),
            ),
            40..=69 => (
                PageSizeKind::Small,
                SizePolicy::Exactly(PageSizeKind::Small),
            ),
            70..=84 => (PageSizeKind::Tiny, SizePolicy::Exactly(PageSizeKind::Tiny)),
            _ => (PageSizeKind::Tiny, SizePolicy::Largest),
        };
        let size = kind.size();
        let count = if kind == PageSizeKind::Section {
            1
        } else {
            1 + self.rng.below(4)
        };
        let len = size * count;
        let slot = self.rng.below(self.cfg.test_slots);
        let within = self.rng.below(MIB / size) * size;
        let mva = (slot << 20) + within;
        let pa_units = (self.cfg.backing_len - len) / size + 1;
        let pa = self.cfg.backing.as_u32() + self.rng.below(pa_units) * size;
        let attrs = MapAttrs::new(
            self.domain(),
            AccessPermission::from_bits(self.rng.below(4)),
            CachePolicy::from_descriptor(self.rng.below(4) << 2),
        );
        (mva, pa, len, attrs, policy)
    }

    fn state(&mut self) -> TestState {
        let mut dacr = Dacr::NONE;
        for d in Domain::all() {
            let a = if d == self.cfg.kernel_domain {
                DomainAccess::Client
            } else {
                DomainAccess::from_bits(self.rng.below(4))
            };
            dacr = dacr.with(d, a);
        }
        TestState {
            dacr,
            pid: FcsePid::new(self.rng.below(self.cfg.max_pid as u32 + 1) as u8)
                .unwrap_or(FcsePid::ZERO),
            system_protect: self.rng.chance(50),
            rom_protect: self.rng.chance(50),
        }
    }

    fn access(&mut self, maps: &[(u32, u32)], pid: FcsePid) -> (u32, bool, bool) {
        let va = if !maps.is_empty() && self.rng.chance(75) {
            let (mva, len) = maps[self.rng.below(maps.len() as u32) as usize];
            let m = mva + self.rng.below(len / 4) * 4;
            // Reach the process's own window by its low address most of the time.
            if pid.get() != 0 && (m >> 25) == pid.get() as u32 && self.rng.chance(70) {
                m & ((1 << 25) - 1)
            } else {
                m
            }
        } else {
            self.rng.below(self.cfg.test_slots << 18) * 4
        };
        (va, self.rng.chance(50), self.rng.chance(50))
    }
}

/// Runs the differential test on `target`.
///
/// Errors only for a bad configuration or a table operation that fails for
/// a reason other than an overlap (e.g. no table memory).
pub fn run<T: Target>(target: &mut T, cfg: &Config) -> Result<Report, TableError> {
    cfg.check()?;
    let dev = target.deviations();
    let mut g = Gen {
        rng: Rng::new(cfg.seed),
        cfg: *cfg,
    };
    let mut counts = Counts::default();
    let mut digest = Digest::new();
    let mut report = Report {
        seed: cfg.seed,
        ..Report::default()
    };
    let mut a = 0u32;
    while a < cfg.backing_len {
        let pa = cfg.backing.as_u32() + a;
        target.phys_write(PhysAddr::new(pa), pattern(pa));
        a += 4;
    }
    let mut index = 0u32;
    for _ in 0..cfg.rounds {
        let mut maps: heapless::Vec<(u32, u32), MAX_MAPS> = heapless::Vec::new();
        for _ in 0..cfg.maps_per_round {
            let (mva, pa, len, attrs, policy) = g.map();
            let subpages = g.rng.chance(30);
            let sub = SubpageAp([
                AccessPermission::from_bits(g.rng.below(4)),
                AccessPermission::from_bits(g.rng.below(4)),
                AccessPermission::from_bits(g.rng.below(4)),
                AccessPermission::from_bits(g.rng.below(4)),
            ]);
            let (table, alloc) = target.table();
            match table.map(
                alloc,
                ModifiedVirtAddr::new(mva),
                PhysAddr::new(pa),
                len,
                attrs,
                policy,
            ) {
                Ok(mut flush) => {
                    if subpages {
                        rewrite_subpages(table, alloc, mva, sub, &mut flush)?;
                    }
                    target.sync(flush);
                    counts.mappings += 1;
                    if maps.push((mva, len)).is_err() {
                        break;
                    }
                }
                Err(
                    TableError::AlreadyMapped(_)
                    | TableError::DomainMismatch { .. }
                    | TableError::TinyPageInCoarseTable(_),
                ) => counts.overlaps += 1,
                Err(e) => return Err(e),
            }
        }
        for _ in 0..cfg.states_per_round {
            let st = g.state();
            target.set_state(&st);
            let mmu = {
                let (table, _) = target.table();
                MmuState {
                    ttb: table.root(),
                    dacr: st.dacr,
                    pid: st.pid,
                    system_protect: st.system_protect,
                    rom_protect: st.rom_protect,
                    alignment_check: false,
                }
            };
            for _ in 0..cfg.accesses_per_state {
                let (va, write, privileged) = g.access(&maps, st.pid);
                let value = g.rng.next_u32();
                let access = Access {
                    va: VirtAddr::new(va),
                    kind: if write {
                        AccessType::Write
                    } else {
                        AccessType::Read
                    },
                    privileged,
                    size: 4,
                };
                let (table, alloc) = target.table();
                let predicted = translate(&*alloc, &mmu, &access);
                let mva = access.va.to_mva(st.pid).as_u32();
                let l1_denies = match table.l1_entry(&*alloc, (mva >> 20) as usize) {
                    Ok(d @ (L1Descriptor::Coarse(_) | L1Descriptor::Fine(_))) => {
                        d.domain().is_some_and(|dom| {
                            matches!(
                                st.dacr.get(dom),
                                DomainAccess::NoAccess | DomainAccess::Reserved
                            )
                        })
                    }
                    _ => false,
                };
                let observed = if write {
                    target.store(access.va, value, privileged)
                } else {
                    target.load(access.va, privileged)
                };
                counts.user += (!privileged) as u32;
                counts.relocated += (st.pid.get() != 0) as u32;
                let (ok, expected) = match predicted {
                    Ok(tr) => {
                        let pa = tr.pa.as_u32();
                        if write {
                            counts.stores += 1;
                            let landed = target.phys_read(tr.pa);
                            target.phys_write(tr.pa, pattern(pa));
                            digest.word(2);
                            (
                                observed == Observed::Done(0) && landed == value,
                                Observed::Done(0),
                            )
                        } else {
                            counts.loads += 1;
                            digest.word(1);
                            digest.word(pattern(pa));
                            (
                                observed == Observed::Done(pattern(pa)),
                                Observed::Done(pattern(pa)),
                            )
                        }
                    }
                    Err(arch) => {
                        counts.record_fault(arch.kind);
                        let (exp, far, deviated) = expected_abort(arch, va, mva, l1_denies, dev);
                        report.deviations += deviated.any() as u32;
                        report.far_is_va += deviated.far_is_va as u32;
                        report.domain_before_l2 += deviated.domain_before_l2 as u32;
                        let ok = match observed {
                            Observed::Abort { fsr, far: f } => abort_matches(exp, far, fsr, f),
                            Observed::Done(_) => false,
                        };
                        digest.word(3);
                        digest.word(arch.fsr());
                        digest.word(mva);
                        (
                            ok,
                            Observed::Abort {
                                fsr: exp.fsr(),
                                far,
                            },
                        )
                    }
                };
                if !ok {
                    report.mismatches += 1;
                    digest.word(0xBAD0_0000 | index);
                    if report.first_mismatch.is_none() {
                        report.first_mismatch = Some(Mismatch {
                            index,
                            va,
                            write,
                            privileged,
                            expected,
                            observed,
                        });
                    }
                }
                index += 1;
            }
            target.restore_state();
        }
        for &(mva, len) in maps.iter().rev() {
            let (table, alloc) = target.table();
            let flush = table.unmap(alloc, ModifiedVirtAddr::new(mva), len)?;
            target.sync(flush);
        }
    }
    report.accesses = index;
    report.counts = counts;
    report.digest = digest.0;
    Ok(report)
}

/// Gives the first large or small page of a new mapping four random subpage permissions.
fn rewrite_subpages<A: TableAlloc>(
    table: &PageTable,
    alloc: &A,
    mva: u32,
    sub: SubpageAp,
    flush: &mut TableFlush,
) -> Result<(), TableError> {
    let Some((kind, tpa)) = table.l1_entry(alloc, (mva >> 20) as usize)?.table() else {
        return Ok(());
    };
    let Some(m) = table.lookup(alloc, ModifiedVirtAddr::new(mva))? else {
        return Ok(());
    };
    let desc = match m.size {
        PageSizeKind::Large => L2Descriptor::Large(LargePageDesc {
            frame: Frame::containing(m.pa),
            ap: sub,
            cache: m.cache,
            tex: Tex::ZERO,
        }),
        PageSizeKind::Small => L2Descriptor::Small(SmallPageDesc {
            frame: Frame::containing(m.pa),
            ap: sub,
            cache: m.cache,
        }),
        _ => return Ok(()),
    };
    // SAFETY: a second-level table of `table`, rewritten in place with a
    // page descriptor; no first-level link changes.
    unsafe { write_l2_page(alloc, TableRef::new(kind, tpa)?, m.mva, desc, flush)? };
    flush.tlb_stale(m.mva, m.size.size(), m.size.size());
    Ok(())
}
