//! The differential test of `mmu_armv5::translate` against QEMU's MMU.
//!
//! `mmu-difftest` generates seeded random mappings (sections, coarse and fine
//! tables, large/small/tiny pages, every AP value, random subpage
//! permissions, several domains) in the first 128 MiB of the kernel's live
//! page table, random DACR / FCSE PID / SCTLR.S,R states, and word loads and
//! stores from kernel mode (`LDR`/`STR`) and with user permissions
//! (`LDRT`/`STRT`). Every access really runs on the emulated MMU through a
//! probe; the outcome (value read, value landed in memory, or DFSR status,
//! domain and FAR) is compared with what `translate` predicted.
//!
//! QEMU 7.2 deviates from the ARM documents in two places, which the test
//! names and counts rather than hides ([`Deviations::QEMU_7_2`]): the FAR
//! holds the VA, not the MVA, under FCSE; and an invalid second-level entry
//! under a no-access domain is reported as a page domain fault where the
//! architecture gives a page translation fault. `translate` follows the
//! architecture. The same seed replayed on the `armv5-sim` model gives the
//! same digest (checked by the `tests/` integration test).

use mmu_armv5::maint::CacheMaintenance;
use mmu_armv5::regs::{Cp15Ext, Dacr, DomainAccess, HwCp15};
use mmu_armv5::table::{PageTable, TableFlush, TablePool};
use mmu_armv5::{FcsePid, ModifiedVirtAddr, PhysAddr, VirtAddr};
use mmu_difftest::{run, Config, Deviations, Observed, Report, Target, TestState};

use crate::cp15;
use crate::harness::TestError;
use crate::mmu::{self, POOL_BLOCKS};
use crate::probe::{probe_read, probe_write, Privilege, ProbeFault};

/// The default seed of the in-kernel run (printed; the integration test
/// replays it on the model). `test only=translate_matches_qemu seed=N`
/// runs another ([`set_seed`]).
pub const SEED: u64 = 0x5EED_2026;

static SEED_CHOSEN: crate::global::Global<u64> = crate::global::Global::new(SEED);

/// Makes `seed` the differential test's seed for this boot (`seed=N` on the
/// command line; before the tests run).
pub fn set_seed(seed: u64) {
    // SAFETY: one core, called once from `kmain` before any test reads it.
    unsafe { SEED_CHOSEN.set(seed) };
}

fn seed() -> u64 {
    // SAFETY: as in `set_seed`; only read after it.
    unsafe { SEED_CHOSEN.get() }
}

struct KernelTarget<'a> {
    table: &'a mut PageTable,
    pool: &'a mut TablePool<'static, POOL_BLOCKS>,
    /// The board's maintenance over the CP15 owner lent to the test.
    maint: crate::board::Maint<&'a mut HwCp15>,
    /// Between [`Target::set_state`] and [`Target::restore_state`]: the
    /// probes run, and every access is followed by its own maintenance
    /// (see [`KernelTarget::forget`]). Outside (the backing memory's
    /// initial fill), writes are left in the D-cache and `set_state`
    /// cleans the whole of it once.
    probing: bool,
}

impl KernelTarget<'_> {
    /// Cleans and invalidates the D-cache line of `mva` and drains the write
    /// buffer.
    fn forget_line(&mut self, mva: ModifiedVirtAddr) {
        self.maint.clean_invalidate_dcache_line(mva);
        self.maint.drain_write_buffer();
    }

    /// After a probe at `va` under the current FCSE PID: the line it may
    /// have cached is written back and dropped.
    ///
    /// The test maps the same backing words at several virtual addresses
    /// (random mappings, random cache policies) and reads and writes them
    /// through the kernel's linear map too: on a VIVT cache each alias has
    /// its own line. Every access of the test ([`Target::load`],
    /// [`Target::store`], [`Target::phys_read`], [`Target::phys_write`])
    /// while probing therefore leaves no line of the backing memory in the
    /// D-cache (and [`Target::set_state`] starts from none), so
    /// every later access, through any alias, reads RAM, which holds the
    /// newest data: what the comparison with `translate` assumes. (The
    /// probes only load and store: the I-cache never sees the backing memory.)
    fn forget(&mut self, va: VirtAddr) {
        let pid = self.maint.cp15_mut().fcse_pid();
        self.forget_line(va.to_mva(pid));
    }
}

fn observed<T>(r: Result<T, ProbeFault>, value: impl FnOnce(T) -> u32) -> Observed {
    match r {
        Ok(v) => Observed::Done(value(v)),
        Err(f) => Observed::Abort {
            fsr: f.dfsr,
            far: f.far,
        },
    }
}

fn kernel_dacr() -> Dacr {
    Dacr::only(mmu::KERNEL_DOMAIN, DomainAccess::Client)
}

impl Target for KernelTarget<'_> {
    type Alloc = TablePool<'static, POOL_BLOCKS>;

    fn table(&mut self) -> (&mut PageTable, &mut Self::Alloc) {
        (self.table, self.pool)
    }

    fn sync(&mut self, flush: TableFlush) {
        flush.flush(&mut self.maint, self.pool);
    }

    fn set_state(&mut self, s: &TestState) {
        let c = self.maint.cp15_mut();
        let sctlr = c
            .sctlr()
            .with_system_protection(s.system_protect)
            .with_rom_protection(s.rom_protect);
        // SAFETY: the generated DACR keeps the kernel's domain client; the
        // kernel lives above 32 MiB, so no PID relocates it; its own mappings
        // are AP=01, which S and R do not affect. `restore_state` undoes all three.
        unsafe {
            c.set_dacr(s.dacr);
            c.set_fcse_pid(s.pid);
            c.set_sctlr(sctlr);
        }
        crate::board::sctlr_written();
        cp15::flush_tlb(c);
        // What the test wrote through the linear map before (the backing
        // memory's pattern) reaches RAM, and no line of it stays cached.
        self.maint.clean_invalidate_dcache();
        self.probing = true;
    }

    fn restore_state(&mut self) {
        self.probing = false;
        let c = self.maint.cp15_mut();
        let sctlr = c
            .sctlr()
            .with_system_protection(false)
            .with_rom_protection(false);
        // SAFETY: the kernel's own configuration.
        unsafe {
            c.set_sctlr(sctlr);
            c.set_fcse_pid(FcsePid::ZERO);
            c.set_dacr(kernel_dacr());
        }
        crate::board::sctlr_written();
        cp15::flush_tlb(c);
    }

    fn load(&mut self, va: VirtAddr, privileged: bool) -> Observed {
        let p = if privileged {
            Privilege::Kernel
        } else {
            Privilege::User
        };
        let r = observed(probe_read(va.as_u32(), p), |v| v);
        self.forget(va);
        r
    }

    fn store(&mut self, va: VirtAddr, value: u32, privileged: bool) -> Observed {
        let p = if privileged {
            Privilege::Kernel
        } else {
            Privilege::User
        };
        // SAFETY: the test maps only the scratch backing memory in the first
        // 128 MiB of MVA space, which nothing else uses.
        let r = observed(unsafe { probe_write(va.as_u32(), value, p) }, |()| 0);
        self.forget(va);
        r
    }

    fn phys_read(&mut self, pa: PhysAddr) -> u32 {
        let va = mmu::phys_to_virt(pa.as_u32());
        // SAFETY: `pa` is inside the scratch backing memory, mapped by the
        // kernel's linear map; a plain word read.
        let v = unsafe { core::ptr::read_volatile(va as *const u32) };
        self.forget_line(ModifiedVirtAddr::new(va));
        v
    }

    fn phys_write(&mut self, pa: PhysAddr, value: u32) {
        let va = mmu::phys_to_virt(pa.as_u32());
        // SAFETY: as in `phys_read`; the backing memory belongs to the test.
        unsafe { core::ptr::write_volatile(va as *mut u32, value) };
        if self.probing {
            self.forget_line(ModifiedVirtAddr::new(va));
        }
    }

    fn deviations(&self) -> Deviations {
        Deviations::QEMU_7_2
    }
}

/// Runs the differential test with `seed` on the live page table, through
/// the CP15 owner `cp15`.
pub fn run_seed(cp15: &mut HwCp15, seed: u64) -> Result<Report, TestError> {
    let cfg = Config::standard(seed, PhysAddr::new(mmu::scratch_phys()), mmu::KERNEL_DOMAIN);
    mmu::with_tables(|table, pool| {
        let mut t = KernelTarget {
            table,
            pool,
            maint: crate::board::maint(cp15),
            probing: false,
        };
        run(&mut t, &cfg)
    })
    .map_err(|_| TestError::Failed {
        what: "differential test could not build its tables",
        line: line!(),
    })
}

kernel_test!(
    fn translate_matches_qemu(c) {
        let r = run_seed(c, seed())?;
        let c = r.counts;
        defmt::info!(
            "difftest: seed={=u64:#x} accesses={=u32} mismatches={=u32} deviations={=u32} digest={=u64:#x}",
            r.seed,
            r.accesses,
            r.mismatches,
            r.deviations,
            r.digest
        );
        defmt::info!(
            "difftest deviations on {=str}: far_is_va={=u32} (FAR holds the VA, not the MVA) domain_before_l2={=u32} (page domain fault where the architecture says page translation fault)",
            crate::board::NAME,
            r.far_is_va,
            r.domain_before_l2
        );
        defmt::info!(
            "difftest outcomes: loads={=u32} stores={=u32} translation(section/page)={=u32}/{=u32} domain={=u32}/{=u32} permission={=u32}/{=u32} other={=u32}",
            c.loads,
            c.stores,
            c.translation_section,
            c.translation_page,
            c.domain_section,
            c.domain_page,
            c.permission_section,
            c.permission_page,
            c.other
        );
        defmt::info!(
            "difftest coverage: user={=u32} relocated={=u32} mappings={=u32} overlaps-refused={=u32}",
            c.user,
            c.relocated,
            c.mappings,
            c.overlaps
        );
        if let Some(m) = r.first_mismatch {
            defmt::error!("first mismatch: {}", m);
        }
        check_eq!("mismatches", r.mismatches, 0);
        check!("at least 1,000 accesses", r.accesses >= 1000);
        Ok(())
    }
);
