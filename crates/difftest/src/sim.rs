//! A [`Target`] over the `armv5-sim` model: the replay of the demo kernel's
//! in-QEMU differential test on the model (feature `sim`, host only).

extern crate std;

use crate::{Config, Deviations, Observed, Target, TestState};
use armv5_sim::{presets, sctlr, Machine, MemoryKind, MemoryRegion, Privilege, Width};
use mmu_armv5::regs::{Sctlr, Ttbr};
use mmu_armv5::table::{PageTable, TableError, TableFlush};
use mmu_armv5::{Domain, PhysAddr, VirtAddr};

/// Where the model keeps the backing memory the test maps (as in the demo kernel).
pub const BACKING: PhysAddr = PhysAddr::new(0x0400_0000);
/// The kernel's domain in the demo kernel, reserved here too.
pub const KERNEL_DOMAIN: u8 = 0;

/// The model with a live page table, MMU on, caches off (the test is about
/// translation; the cache hazards have their own tests in `armv5-sim`).
pub struct SimTarget {
    machine: Machine,
    table: PageTable,
}

impl SimTarget {
    /// An ARM926EJ-S model with 128 MiB of RAM at 0, tables from 80 MiB.
    pub fn new() -> Result<SimTarget, TableError> {
        let mut cfg = presets::arm926ejs().config;
        cfg.regions.push(MemoryRegion {
            base: PhysAddr::new(0),
            size: 128 << 20,
            kind: MemoryKind::Ram,
            latency: 0,
        });
        let mut machine = Machine::new(cfg).map_err(|_| TableError::OutOfTableMemory)?;
        machine
            .set_frame_pool(PhysAddr::new(0x0500_0000), 16 << 20)
            .map_err(|_| TableError::OutOfTableMemory)?;
        let table = PageTable::new(&mut machine)?;
        machine.set_ttbr(Ttbr::new(table.root()).unwrap());
        machine.set_sctlr(Sctlr::from_bits(sctlr::M));
        Ok(SimTarget { machine, table })
    }

    /// The model, for inspecting counters.
    pub fn machine(&self) -> &Machine {
        &self.machine
    }

    /// The standard configuration the demo kernel uses for `seed`.
    #[must_use]
    pub fn config(seed: u64) -> Config {
        Config::standard(seed, BACKING, Domain::from_low_bits(KERNEL_DOMAIN as u32))
    }
}

impl Target for SimTarget {
    type Alloc = Machine;

    fn table(&mut self) -> (&mut PageTable, &mut Machine) {
        (&mut self.table, &mut self.machine)
    }

    fn sync(&mut self, flush: TableFlush) {
        flush.flush_on(&mut self.machine);
    }

    fn set_state(&mut self, state: &TestState) {
        self.machine.set_dacr(state.dacr);
        self.machine.set_fcse_pid(state.pid);
        let mut s = sctlr::M;
        if state.system_protect {
            s |= sctlr::S;
        }
        if state.rom_protect {
            s |= sctlr::R;
        }
        self.machine.set_sctlr(Sctlr::from_bits(s));
        // QEMU flushes its TLB on these writes; hardware does not need to
        // (TLB entries keep their domain), but S/R changes do need it.
        self.machine.invalidate_tlb();
    }

    fn restore_state(&mut self) {
        self.machine.set_sctlr(Sctlr::from_bits(sctlr::M));
        self.machine.set_fcse_pid(mmu_armv5::FcsePid::ZERO);
        self.machine.invalidate_tlb();
    }

    fn load(&mut self, va: VirtAddr, privileged: bool) -> Observed {
        let p = if privileged {
            Privilege::Privileged
        } else {
            Privilege::User
        };
        match self.machine.load(va, Width::Word, p) {
            Ok(v) => Observed::Done(v),
            Err(_) => Observed::Abort {
                fsr: self.machine.dfsr().bits(),
                far: self.machine.far().bits(),
            },
        }
    }

    fn store(&mut self, va: VirtAddr, value: u32, privileged: bool) -> Observed {
        let p = if privileged {
            Privilege::Privileged
        } else {
            Privilege::User
        };
        match self.machine.store(va, Width::Word, value, p) {
            Ok(()) => Observed::Done(0),
            Err(_) => Observed::Abort {
                fsr: self.machine.dfsr().bits(),
                far: self.machine.far().bits(),
            },
        }
    }

    fn phys_read(&mut self, pa: PhysAddr) -> u32 {
        self.machine
            .phys_read(pa, Width::Word)
            .unwrap_or(0xDEAD_DEAD)
    }

    fn phys_write(&mut self, pa: PhysAddr, value: u32) {
        // The backing region is RAM inside the model; a failure would show as a mismatch.
        let _ = self.machine.phys_write(pa, Width::Word, value);
    }

    fn deviations(&self) -> Deviations {
        Deviations::ARCHITECTURE
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run;

    #[test]
    fn the_model_agrees_with_translate_on_many_seeds() {
        for seed in [1u64, 2, 3, 0x5EED, 0xC0FFEE] {
            let mut t = SimTarget::new().unwrap();
            let r = run(&mut t, &SimTarget::config(seed)).unwrap();
            assert_eq!(
                r.mismatches, 0,
                "seed {seed:#x}: first mismatch {:?}",
                r.first_mismatch
            );
            assert!(r.accesses >= 1000);
            let c = r.counts;
            for (name, n) in [
                ("loads", c.loads),
                ("stores", c.stores),
                ("translation section", c.translation_section),
                ("translation page", c.translation_page),
                ("domain section", c.domain_section),
                ("domain page", c.domain_page),
                ("permission section", c.permission_section),
                ("permission page", c.permission_page),
                ("user", c.user),
                ("relocated", c.relocated),
            ] {
                assert!(n > 0, "seed {seed:#x}: no {name} outcome covered: {c:?}");
            }
            // Deterministic: the same seed gives the same digest.
            let mut t2 = SimTarget::new().unwrap();
            assert_eq!(
                run(&mut t2, &SimTarget::config(seed)).unwrap().digest,
                r.digest
            );
        }
    }
}
