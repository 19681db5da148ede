//! The few raw CP15 accesses the kernel itself needs.
//!
//! Reads are plain `MRC`s. Writes are `unsafe`: they change what memory the
//! running kernel sees.

macro_rules! mrc {
    ($crn:literal, $opc1:literal, $crm:literal, $opc2:literal) => {{
        let v: u32;
        // SAFETY: an `MRC` from an ARM926EJ-S CP15 register that exists and
        // has no read side effects.
        unsafe {
            core::arch::asm!(
                concat!("mrc p15, ", $opc1, ", {0}, c", $crn, ", c", $crm, ", ", $opc2),
                out(reg) v,
                options(nomem, nostack, preserves_flags),
            );
        }
        v
    }};
}

macro_rules! mcr {
    ($crn:literal, $opc1:literal, $crm:literal, $opc2:literal, $v:expr) => {
        core::arch::asm!(
            concat!("mcr p15, ", $opc1, ", {0}, c", $crn, ", c", $crm, ", ", $opc2),
            in(reg) $v,
            options(nostack, preserves_flags),
        )
    };
}

/// Main ID register.
pub fn midr() -> u32 {
    mrc!(0, 0, 0, 0)
}

/// Cache type register.
pub fn cache_type() -> u32 {
    mrc!(0, 0, 0, 1)
}

/// TCM status register (ARM926EJ-S).
pub fn tcm_status() -> u32 {
    mrc!(0, 0, 0, 2)
}

/// System control register.
pub fn sctlr() -> u32 {
    mrc!(1, 0, 0, 0)
}

/// Translation table base register.
pub fn ttbr() -> u32 {
    mrc!(2, 0, 0, 0)
}

/// Domain access control register.
pub fn dacr() -> u32 {
    mrc!(3, 0, 0, 0)
}

/// FCSE process ID register.
pub fn fcseidr() -> u32 {
    mrc!(13, 0, 0, 0)
}

/// Data fault status register.
pub fn dfsr() -> u32 {
    mrc!(5, 0, 0, 0)
}

/// Instruction fault status register.
pub fn ifsr() -> u32 {
    mrc!(5, 0, 0, 1)
}

/// Fault address register.
pub fn far() -> u32 {
    mrc!(6, 0, 0, 0)
}

/// Writes the DACR.
///
/// # Safety
/// Domain 0 (the kernel's own mappings) must stay client or manager.
pub unsafe fn set_dacr(v: u32) {
    // SAFETY: contract forwarded to the caller.
    unsafe { mcr!(3, 0, 0, 0, v) }
}

/// Writes the FCSE PID register (`pid << 25`).
///
/// # Safety
/// Relocates every access below 32 MiB; the kernel runs above it, but the
/// caller must not rely on low addresses keeping their meaning.
pub unsafe fn set_fcseidr(v: u32) {
    // SAFETY: contract forwarded to the caller; the kernel lives at 0xC0000000+.
    unsafe { mcr!(13, 0, 0, 0, v) }
}

/// Writes the system control register.
///
/// # Safety
/// The new value must keep the MMU on, high vectors on, and the kernel's mappings valid.
pub unsafe fn set_sctlr(v: u32) {
    // SAFETY: contract forwarded to the caller.
    unsafe { mcr!(1, 0, 0, 0, v) }
}

/// Drains the write buffer, then invalidates the whole TLB.
pub fn invalidate_tlb() {
    // SAFETY: TLB invalidation and write-buffer drain lose no data.
    unsafe {
        mcr!(7, 0, 10, 4, 0u32);
        mcr!(8, 0, 7, 0, 0u32);
    }
}
