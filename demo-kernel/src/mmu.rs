//! The kernel's live first-level translation table, built by `asm/boot.s`.
//!
//! Tests map and unmap 1 MiB sections here; the harness saves and restores
//! the whole table around each test. Addresses of linker-script symbols give
//! the layout (see `kernel.ld`).

use core::cell::UnsafeCell;

use mmu_armv5::regs::{Cp15, Cp15Ext, Cp15Reg};

use crate::cp15::{self, hw};

extern "C" {
    static __l1_table: u32;
    static __kernel_virt_offset: u8;
    static __scratch_phys: u8;
}

/// Entries in a first-level table.
pub const L1_ENTRIES: usize = 4096;

/// Section descriptor: type bits and the ARM926 "should be one" bit 4.
const SECTION: u32 = 0b10 | (1 << 4);

/// Access permissions of a section (AP field, with SCTLR.S = SCTLR.R = 0).
#[derive(Clone, Copy, PartialEq, Eq, defmt::Format)]
#[repr(u32)]
pub enum Ap {
    /// `01`: privileged read/write, user none.
    KernelOnly = 1,
    /// `10`: privileged read/write, user read-only.
    UserRead = 2,
    /// `11`: read/write for both.
    Full = 3,
}

/// A section descriptor: `pa` (1 MiB aligned) in `domain` with `ap`, uncached.
pub const fn section(pa: u32, domain: u8, ap: Ap) -> u32 {
    (pa & 0xFFF0_0000) | ((ap as u32) << 10) | (((domain & 0xF) as u32) << 5) | SECTION
}

/// Virtual address offset of the kernel's linear map of RAM (0xC000_0000).
pub fn kernel_virt_offset() -> u32 {
    core::ptr::addr_of!(__kernel_virt_offset) as u32
}

/// First physical MiB that tests may map freely.
pub fn scratch_phys() -> u32 {
    core::ptr::addr_of!(__scratch_phys) as u32
}

/// The kernel's linear-map virtual address of physical address `pa`.
pub fn phys_to_virt(pa: u32) -> u32 {
    pa.wrapping_add(kernel_virt_offset())
}

fn table() -> *mut u32 {
    core::ptr::addr_of!(__l1_table).cast_mut()
}

/// The first-level entry for the MiB at `va`.
pub fn entry(va: u32) -> u32 {
    // SAFETY: `va >> 20` < 4096 indexes inside the 16 KiB table.
    unsafe { table().add((va >> 20) as usize).read_volatile() }
}

/// Replaces the first-level entry for the MiB at `va` and invalidates the TLB.
///
/// # Safety
/// Must not unmap or change anything the kernel uses (its linear map at
/// [`kernel_virt_offset`], the device MiBs, the vector page, the boot MiB).
pub unsafe fn set_entry(va: u32, desc: u32) {
    // SAFETY: in bounds as in `entry`; the caller vouches for the mapping.
    unsafe { table().add((va >> 20) as usize).write_volatile(desc) };
    cp15::invalidate_tlb();
}

/// A copy of the whole first-level table plus DACR, FCSEIDR and SCTLR.
pub struct Snapshot {
    dacr: u32,
    fcseidr: u32,
    sctlr: u32,
}

struct Backup(UnsafeCell<[u32; L1_ENTRIES]>);
// SAFETY: single core; only `snapshot`/`restore` touch it, never concurrently.
unsafe impl Sync for Backup {}
static BACKUP: Backup = Backup(UnsafeCell::new([0; L1_ENTRIES]));

/// Saves the MMU state that tests may change.
pub fn snapshot() -> Snapshot {
    // SAFETY: copies 4096 words from the live table into the private backup.
    unsafe { core::ptr::copy_nonoverlapping(table(), BACKUP.0.get().cast::<u32>(), L1_ENTRIES) };
    Snapshot {
        dacr: hw().dacr().bits(),
        fcseidr: hw().fcseidr().bits(),
        sctlr: hw().sctlr().bits(),
    }
}

/// Puts back the state saved by [`snapshot`] and invalidates the TLB.
pub fn restore(s: &Snapshot) {
    // SAFETY: the values were the kernel's own working configuration when saved.
    unsafe {
        let mut c = hw();
        c.write(Cp15Reg::Fcseidr, s.fcseidr);
        c.write(Cp15Reg::Dacr, s.dacr);
        c.write(Cp15Reg::Sctlr, s.sctlr);
        core::ptr::copy_nonoverlapping(BACKUP.0.get().cast::<u32>(), table(), L1_ENTRIES);
    }
    cp15::invalidate_tlb();
}
