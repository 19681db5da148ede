//! The demo: one FCSE relocation and one domain switch, narrated.

use mmu_armv5::regs::{Cp15Ext, Dacr, DomainAccess, HwCp15};
use mmu_armv5::{Domain, FcsePid};

use crate::mmu::{self, Ap};
use crate::probe::{probe_read, probe_write, Privilege};

/// Sets the FCSE PID `pid` (1 or 2 here, always valid).
fn set_pid(cp15: &mut HwCp15, pid: u32) {
    if let Ok(pid) = FcsePid::new(pid as u8) {
        // SAFETY: the kernel runs above 32 MiB, untouched by the FCSE; the
        // PID is restored at the end of the demo.
        unsafe { cp15.set_fcse_pid(pid) };
    }
}

/// Shows a process-private store through the FCSE and a domain turned off and on.
pub fn run(cp15: &mut HwCp15) {
    let saved = mmu::snapshot(cp15);
    let pa = mmu::scratch_phys();
    for pid in 1..=2u32 {
        let mva = (pid << 25) + 0x0010_0000;
        // SAFETY: each PID's MiB at 1 MiB maps its own scratch MiB; unused by the kernel.
        unsafe { mmu::write_entry(cp15, mva, mmu::section(pa + (pid << 20), 0, Ap::KernelOnly)) };
    }
    for pid in 1..=2u32 {
        set_pid(cp15, pid);
        // SAFETY: VA 0x00100000 relocates to this PID's scratch MiB.
        let r = unsafe { probe_write(0x0010_0000, 0x1000 + pid, Privilege::Kernel) };
        defmt::info!(
            "PID {=u32}: store {=u32:#x} at VA 0x00100000 -> {}",
            pid,
            0x1000 + pid,
            r.is_ok()
        );
    }
    for pid in 1..=2u32 {
        set_pid(cp15, pid);
        let v = probe_read(0x0010_0000, Privilege::Kernel);
        defmt::info!("PID {=u32}: load at VA 0x00100000 = {}", pid, v);
    }
    let d5 = Domain::from_low_bits(5);
    let kernel = Dacr::only(Domain::from_low_bits(0), DomainAccess::Client);
    // SAFETY: TEST MiB at 0x90000000 is unused by the kernel.
    unsafe { mmu::write_entry(cp15, 0x9000_0000, mmu::section(pa, 5, Ap::KernelOnly)) };
    for access in [DomainAccess::NoAccess, DomainAccess::Client] {
        // SAFETY: domain 0 (the kernel) stays client; restored below.
        unsafe { cp15.set_dacr(kernel.with(d5, access)) };
        defmt::info!(
            "domain 5 {}: load at 0x90000000 = {}",
            access,
            probe_read(0x9000_0000, Privilege::Kernel)
        );
    }
    mmu::restore(cp15, &saved);
    defmt::info!("demo done");
}
