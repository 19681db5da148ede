//! In-kernel tests of the CPU and MMU behaviour the workspace relies on.
//!
//! Each runs between an MMU snapshot and restore (see [`crate::harness`]), so
//! tests may change the first-level table, DACR and FCSEIDR freely. Physical
//! scratch memory for new mappings comes from [`mmu::scratch_phys`].

use mmu_armv5::regs::{Cp15, Cp15Ext, Cp15Reg, Dacr, DomainAccess, HwCp15};
use mmu_armv5::{Domain, FaultKind, FaultLevel, FcsePid};

use crate::cp15;
use crate::harness::TestError;
use crate::mmu::{self, Ap};
use crate::probe::{probe_read, probe_write, Privilege};

/// A virtual MiB no boot mapping covers.
const UNMAPPED_VA: u32 = 0x8000_0000;
/// A virtual MiB the tests map onto scratch RAM.
const TEST_VA: u32 = 0x9000_0000;

fn domain(n: u8) -> Domain {
    Domain::from_low_bits(u32::from(n))
}

/// The DACR the kernel needs (domain 0 client) plus domain `d` set to `access`.
fn dacr_with(d: u8, access: DomainAccess) -> u32 {
    Dacr::only(domain(0), DomainAccess::Client)
        .with(domain(d), access)
        .bits()
}

/// Writes the DACR.
fn set_dacr(c: &mut HwCp15, v: u32) {
    // SAFETY: every value the tests use keeps domain 0 (the kernel) client;
    // the harness restores the original afterwards.
    unsafe { c.set_dacr(Dacr::from_bits(v)) }
}

/// Sets the FCSE PID (writes `pid << 25`).
fn set_pid(c: &mut HwCp15, pid: u8) -> Result<(), TestError> {
    let Ok(pid) = FcsePid::new(pid) else {
        return Err(TestError::Failed {
            what: "FCSE PID out of range",
            line: line!(),
        });
    };
    // SAFETY: the kernel runs at 0xC0000000+, which the FCSE never relocates;
    // the harness restores the PID afterwards.
    unsafe { c.set_fcse_pid(pid) };
    Ok(())
}

/// Cleans the D-cache lines of `len` bytes the test wrote at kernel virtual
/// address `va` (the linear map is write-back) and drains the write buffer,
/// so that the table walker and uncached aliases see them in RAM.
fn clean_to_ram(c: &mut HwCp15, va: u32, len: u32) {
    use mmu_armv5::maint::CacheMaintenance;
    crate::board::maint(c).clean_dcache_range(mmu_armv5::ModifiedVirtAddr::new(va), len);
}

kernel_test!(
    fn midr_is_the_boards(c) {
        check_eq!("MIDR", c.midr().bits(), crate::board::EXPECTED_MIDR);
        check!("CPU kind", c.midr().cpu_kind() == crate::board::CPU_KIND);
        Ok(())
    }
);

kernel_test!(
    fn dacr_write_reads_back(c) {
        for access in [
            DomainAccess::NoAccess,
            DomainAccess::Client,
            DomainAccess::Reserved,
            DomainAccess::Manager,
        ] {
            let v = dacr_with(15, access) | dacr_with(7, DomainAccess::Manager);
            set_dacr(c, v);
            check_eq!("DACR read back", c.dacr().bits(), v);
        }
        Ok(())
    }
);

kernel_test!(
    fn unmapped_probe_is_section_translation_fault() {
        check_eq!("L1 entry of the unmapped MiB", mmu::entry(UNMAPPED_VA), 0);
        let va = UNMAPPED_VA + 0x1234;
        match probe_read(va, Privilege::Kernel) {
            Ok(_) => check!("probe of an unmapped VA faults", false),
            Err(f) => {
                check_eq!("DFSR status", f.dfsr & 0xF, 0x5);
                check!(
                    "fault kind",
                    f.kind() == FaultKind::Translation(FaultLevel::Section)
                );
                check_eq!("FAR", f.far, va);
            }
        }
        // A store faults the same way and changes nothing.
        // SAFETY: the target is unmapped; the store cannot succeed.
        let w = unsafe { probe_write(va, 0xDEAD_BEEF, Privilege::Kernel) };
        check!("store to an unmapped VA faults", w.is_err());
        Ok(())
    }
);

/// A word in the kernel's own (privileged-only) data.
static KERNEL_WORD: u32 = 0x5EC2_E7A5;

kernel_test!(
    fn user_probe_of_kernel_page_is_permission_fault() {
        let va = core::ptr::addr_of!(KERNEL_WORD) as u32;
        check_eq!(
            "kernel read",
            probe_read(va, Privilege::Kernel).unwrap_or(0),
            0x5EC2_E7A5
        );
        match probe_read(va, Privilege::User) {
            Ok(_) => check!("LDRT of a kernel-only page faults", false),
            Err(f) => {
                // Section permission fault in domain 0.
                check_eq!("DFSR", f.dfsr & 0xFF, 0x00D);
                check!(
                    "fault kind",
                    f.kind() == FaultKind::Permission(FaultLevel::Section)
                );
                check_eq!("FAR", f.far, va);
            }
        }
        Ok(())
    }
);

kernel_test!(
    fn domains_gate_a_section(c) {
        let pa = mmu::scratch_phys();
        // SAFETY: TEST_VA is unused by the kernel; `pa` is scratch RAM.
        unsafe { mmu::write_entry(c, TEST_VA, mmu::section(pa, 5, Ap::KernelOnly)) };

        set_dacr(c, dacr_with(5, DomainAccess::NoAccess));
        match probe_read(TEST_VA, Privilege::Kernel) {
            Ok(_) => check!("no-access domain faults", false),
            Err(f) => {
                check_eq!(
                    "DFSR (section domain fault, domain 5)",
                    f.dfsr & 0xFF,
                    0x059
                );
                check!("fault domain", f.domain() == domain(5));
            }
        }

        set_dacr(c, dacr_with(5, DomainAccess::Manager));
        // SAFETY: the store goes to scratch RAM.
        let w = unsafe { probe_write(TEST_VA, 0x0000_D005, Privilege::User) };
        check!("manager domain ignores AP (user store succeeds)", w.is_ok());

        set_dacr(c, dacr_with(5, DomainAccess::Client));
        match probe_read(TEST_VA, Privilege::User) {
            Ok(_) => check!("client domain checks AP", false),
            Err(f) => check_eq!(
                "DFSR (section permission fault, domain 5)",
                f.dfsr & 0xFF,
                0x05D
            ),
        }
        check_eq!(
            "kernel read in client domain",
            probe_read(TEST_VA, Privilege::Kernel).unwrap_or(0),
            0xD005
        );
        // The same physical word through the kernel's linear map.
        // SAFETY: scratch RAM, mapped by the linear map, not referenced elsewhere.
        let linear = unsafe { core::ptr::read_volatile(mmu::phys_to_virt(pa) as *const u32) };
        check_eq!("linear-map read", linear, 0xD005);
        Ok(())
    }
);

kernel_test!(
    fn fcse_relocates_low_addresses(c) {
        const PID: u32 = 3;
        const LOW_VA: u32 = 0x0150_0000;
        let mva = PID * 0x0200_0000 + LOW_VA;
        let pa = mmu::scratch_phys() + 0x0010_0000;
        check_eq!("L1 entry of the MVA", mmu::entry(mva), 0);
        check_eq!("L1 entry of the low VA", mmu::entry(LOW_VA), 0);
        // SAFETY: the MVA's MiB is unused by the kernel; `pa` is scratch RAM.
        unsafe { mmu::write_entry(c, mva, mmu::section(pa, 0, Ap::KernelOnly)) };

        set_pid(c, PID as u8)?;
        check_eq!("FCSEIDR", c.fcseidr().bits(), PID << 25);
        // SAFETY: relocated to `mva`, i.e. scratch RAM.
        let w = unsafe { probe_write(LOW_VA + 8, 0xF0CE_0003, Privilege::Kernel) };
        check!("store through the relocated VA", w.is_ok());
        check_eq!(
            "load through the relocated VA",
            probe_read(LOW_VA + 8, Privilege::Kernel).unwrap_or(0),
            0xF0CE_0003
        );
        check_eq!(
            "VA at/above 32 MiB is not relocated",
            probe_read(mva + 8, Privilege::Kernel).unwrap_or(0),
            0xF0CE_0003
        );

        set_pid(c, 0)?;
        check_eq!(
            "load of the MVA with PID 0",
            probe_read(mva + 8, Privilege::Kernel).unwrap_or(0),
            0xF0CE_0003
        );
        match probe_read(LOW_VA + 8, Privilege::Kernel) {
            Ok(_) => check!("the low VA is unmapped with PID 0", false),
            Err(f) => {
                check_eq!("DFSR status", f.dfsr & 0xF, 0x5);
                check_eq!("FAR", f.far, LOW_VA + 8);
            }
        }
        // SAFETY: scratch RAM through the linear map.
        let linear = unsafe { core::ptr::read_volatile(mmu::phys_to_virt(pa + 8) as *const u32) };
        check_eq!("linear-map read", linear, 0xF0CE_0003);
        Ok(())
    }
);

kernel_test!(
    fn tlb_entry_invalidation_under_fcse(c) {
        // A low VA used under PID 2 through a user small page (as the
        // processes' pages are; user loads, so QEMU's user TLB holds no
        // section that would widen its flush of one page), then its descriptor pointed at another frame and the TLB
        // entry invalidated by MVA, as every strategy does on an unmap.
        // The architecture tags TLB entries with the MVA, so that drops the
        // old translation; QEMU keys its TLB by the unrelocated VA and
        // keeps it (named and counted). The kernel's own invalidation
        // (`proc::platform`) must drop it on every board: a stale entry
        // once let a process write a frame the kernel had freed.
        use mmu_armv5::descriptor::{
            AccessPermission, CachePolicy, CoarseTableDesc, L1Descriptor, L2Descriptor,
            SmallPageDesc, SubpageAp,
        };
        use mmu_armv5::size::Frame;
        use mmu_armv5::{ModifiedVirtAddr, PhysAddr};
        const PID: u32 = 2;
        const LOW_VA: u32 = 0x0170_0000;
        let mva = PID * 0x0200_0000 + LOW_VA;
        let table = mmu::scratch_phys() + 0x0040_0000;
        let old = table + 0x1000;
        let new = table + 0x2000;
        let small = |pa: u32| {
            L2Descriptor::Small(SmallPageDesc {
                frame: Frame::containing(PhysAddr::new(pa)),
                ap: SubpageAp::uniform(AccessPermission::ReadWrite),
                cache: CachePolicy::Uncached,
            })
            .to_bits()
        };
        let l2 = mmu::phys_to_virt(table) as *mut u32;
        // SAFETY: scratch RAM through the linear map, not referenced
        // elsewhere: a coarse table (256 entries) and two frames.
        unsafe {
            for i in 0..256 {
                l2.add(i).write_volatile(0);
            }
            l2.write_volatile(small(old));
            core::ptr::write_volatile(mmu::phys_to_virt(old) as *mut u32, 0x01D0_01D0);
            core::ptr::write_volatile(mmu::phys_to_virt(new) as *mut u32, 0x0E30_0E30);
        }
        // Written through the kernel's (write-back) linear map; the walker
        // and the uncached user page read RAM.
        clean_to_ram(c, l2 as u32, 1024);
        clean_to_ram(c, mmu::phys_to_virt(old), 4);
        clean_to_ram(c, mmu::phys_to_virt(new), 4);
        let link = L1Descriptor::Coarse(CoarseTableDesc {
            table: Frame::containing(PhysAddr::new(table)),
            domain: domain(0),
            p: false,
        });
        check_eq!("L1 entry of the MVA", mmu::entry(mva), 0);
        // SAFETY: the MVA's MiB is unused by the kernel; the table is scratch RAM.
        unsafe { mmu::write_entry(c, mva, link.to_bits()) };
        set_pid(c, PID as u8)?;
        check_eq!(
            "load through the old page",
            probe_read(LOW_VA, Privilege::User).unwrap_or(0),
            0x01D0_01D0
        );
        // SAFETY: scratch RAM as above; the TLB entry is invalidated right below.
        unsafe { l2.write_volatile(small(new)) };
        let mut m = crate::board::maint(&mut *c);
        crate::board::clean_dcache_entry(&mut m, ModifiedVirtAddr::new(l2 as u32));
        mmu_armv5::maint::CacheMaintenance::drain_write_buffer(&mut m);
        let mva = ModifiedVirtAddr::new(mva);
        // As every strategy's unmap does: the lines cached under the MVA
        // belong to the old frame (the page is uncached here, but the check
        // models every page outside the declared windows as cacheable).
        mmu_armv5::maint::CacheMaintenance::clean_invalidate_dcache_line(&mut m, mva);
        mmu_armv5::maint::CacheMaintenance::invalidate_tlb_entry(&mut m, mva);
        let by_mva = probe_read(LOW_VA, Privilege::User).unwrap_or(0);
        // Where QEMU kept the stale entry (the deviation counted below),
        // that load cached the old frame under the MVA again: drop it, or
        // the next load would hit it (a line of another frame).
        mmu_armv5::maint::CacheMaintenance::clean_invalidate_dcache_line(
            &mut crate::board::maint(&mut *c),
            mva,
        );
        crate::proc::platform::invalidate_tlb_entry_on(c, mva);
        let by_kernel = probe_read(LOW_VA, Privilege::User).unwrap_or(0);
        set_pid(c, 0)?;
        check!(
            "after the invalidation by MVA: the old or the new frame",
            by_mva == 0x01D0_01D0 || by_mva == 0x0E30_0E30
        );
        let kept = by_mva == 0x01D0_01D0;
        defmt::info!(
            "deviation tlb_entry_kept_at_va on {=str}: {=u32} (invalidation by MVA {=str})",
            crate::board::NAME,
            u32::from(kept),
            if kept {
                "kept the entry of the unrelocated VA: QEMU deviation"
            } else {
                "dropped the entry, as the architecture says"
            }
        );
        check_eq!(
            "load after the kernel's invalidation: the new page",
            by_kernel,
            0x0E30_0E30
        );
        Ok(())
    }
);

kernel_test!(
    fn section_access_permissions(c) {
        let pa = mmu::scratch_phys() + 0x0020_0000;
        // SAFETY: TEST_VA is unused by the kernel; `pa` is scratch RAM.
        unsafe { mmu::write_entry(c, TEST_VA, mmu::section(pa, 0, Ap::UserRead)) };
        // SAFETY: stores go to scratch RAM.
        let w = unsafe { probe_write(TEST_VA + 4, 0x0A11_0002, Privilege::Kernel) };
        check!("AP=10: kernel store succeeds", w.is_ok());
        check_eq!(
            "AP=10: user load",
            probe_read(TEST_VA + 4, Privilege::User).unwrap_or(0),
            0x0A11_0002
        );
        // SAFETY: as above.
        match unsafe { probe_write(TEST_VA + 4, 0, Privilege::User) } {
            Ok(()) => check!("AP=10: user store faults", false),
            Err(f) => {
                check_eq!(
                    "DFSR (section permission fault, domain 0)",
                    f.dfsr & 0xFF,
                    0x00D
                );
                check_eq!("FAR", f.far, TEST_VA + 4);
            }
        }
        // SAFETY: as above.
        unsafe { mmu::write_entry(c, TEST_VA, mmu::section(pa, 0, Ap::Full)) };
        // SAFETY: as above.
        let w = unsafe { probe_write(TEST_VA + 4, 0x0A11_0003, Privilege::User) };
        check!("AP=11: user store succeeds", w.is_ok());
        check_eq!(
            "AP=11: kernel load",
            probe_read(TEST_VA + 4, Privilege::Kernel).unwrap_or(0),
            0x0A11_0003
        );
        Ok(())
    }
);

kernel_test!(
    fn fcseidr_low_bits_as_the_board_does(c) {
        // FCSEIDR written with low bits set (PID 1, plus 4 KiB): the
        // architecture ignores bits [24:0]; QEMU 7.2 adds them to every
        // relocated address (seen on versatilepb, collie and connex) (a deviation the kernel avoids by
        // always writing exactly pid << 25). Named and counted here.
        const LOW_VA: u32 = 0x0010_0000;
        const LOW_BITS: u32 = 0x1000;
        let mva = 0x0200_0000 + LOW_VA;
        let pa = mmu::scratch_phys() + 0x0030_0000;
        check_eq!("L1 entry of the MVA", mmu::entry(mva), 0);
        // SAFETY: scratch RAM through the linear map, not referenced elsewhere.
        unsafe {
            core::ptr::write_volatile(mmu::phys_to_virt(pa) as *mut u32, 0xF0CE_0A00);
            core::ptr::write_volatile(mmu::phys_to_virt(pa + LOW_BITS) as *mut u32, 0xF0CE_0B00);
        }
        // SAFETY: the MVA's MiB is unused by the kernel; `pa` is scratch RAM.
        unsafe { mmu::write_entry(c, mva, mmu::section(pa, 0, Ap::KernelOnly)) };
        // SAFETY: only addresses below 32 MiB are relocated, where the kernel
        // has nothing; the harness restores FCSEIDR afterwards.
        unsafe { c.write(Cp15Reg::Fcseidr, (1 << 25) | LOW_BITS) };
        cp15::flush_tlb(c);
        let seen = probe_read(LOW_VA, Privilege::Kernel);
        set_pid(c, 0)?;
        let added = match seen {
            Ok(0xF0CE_0A00) => false,
            Ok(0xF0CE_0B00) => true,
            _ => {
                check!("the relocated load reads one of the two words", false);
                false
            }
        };
        defmt::info!(
            "deviation fcseidr_low_bits_added on {=str}: {=u32} (FCSEIDR bits [24:0] {=str})",
            crate::board::NAME,
            u32::from(added),
            if added {
                "added to the MVA: QEMU deviation"
            } else {
                "ignored, as the architecture says"
            }
        );
        check!(
            "low bits added (or not) as QEMU does on this board",
            added == crate::board::QEMU_ADDS_FCSEIDR_LOW_BITS
        );
        Ok(())
    }
);

// Harness self-checks: each must make the run fail. Run only with `only=NAME`.

kernel_test!(manual fn selfcheck_fails() {
    check_eq!("a value that is wrong on purpose", 1, 2);
    Ok(())
});

kernel_test!(manual fn selfcheck_panics() {
    panic!("on purpose")
});

kernel_test!(manual fn selfcheck_hangs() {
    loop {
        core::hint::spin_loop();
    }
});

kernel_test!(manual fn selfcheck_unexpected_abort() {
    // SAFETY: not safe at all: an unmapped load outside a probe, on purpose,
    // to show the abort handler reports it and fails the run.
    let v = unsafe { core::ptr::read_volatile(UNMAPPED_VA as *const u32) };
    check_eq!("unreachable", v, 0);
    Ok(())
});
