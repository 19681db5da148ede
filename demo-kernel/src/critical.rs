//! `critical-section` implementation: mask IRQ and FIQ in the CPSR.
//!
//! Single core, so masking interrupts is enough. The restore state is the
//! whole previous CPSR; only its control byte (mode and mask bits) is written
//! back, and the mode never changes inside a critical section.

/// CPSR I and F bits.
const CPSR_IF: u32 = 0xC0;

struct IrqMask;
critical_section::set_impl!(IrqMask);

// SAFETY: `acquire` masks IRQ and FIQ and returns the previous CPSR; `release`
// restores exactly that control byte, so nesting restores the outermost state.
unsafe impl critical_section::Impl for IrqMask {
    unsafe fn acquire() -> critical_section::RawRestoreState {
        let cpsr: u32;
        // SAFETY: reads the CPSR and sets its I/F bits; no memory is touched.
        unsafe {
            core::arch::asm!(
                "mrs {cpsr}, cpsr",
                "orr {tmp}, {cpsr}, #{if_bits}",
                "msr cpsr_c, {tmp}",
                cpsr = out(reg) cpsr,
                tmp = out(reg) _,
                if_bits = const CPSR_IF,
                options(nostack, preserves_flags),
            );
        }
        cpsr
    }

    unsafe fn release(restore: critical_section::RawRestoreState) {
        // SAFETY: writes back the control byte saved by `acquire` (same mode).
        unsafe {
            core::arch::asm!("msr cpsr_c, {0}", in(reg) restore, options(nostack, preserves_flags));
        }
    }
}
