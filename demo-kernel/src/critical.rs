//! `critical-section` implementation: mask IRQ and FIQ with `mmu_armv5::irq`.
//!
//! Single core, so masking interrupts is enough. The restore state is the
//! previous I and F bits; `release` puts exactly those back, so nested
//! sections restore the outermost state.

use mmu_armv5::irq::{self, IrqState};

struct IrqMask;
critical_section::set_impl!(IrqMask);

// SAFETY: `acquire` masks IRQ and FIQ and returns their previous state;
// `release` restores exactly that state, and `critical-section` releases
// in the reverse order of acquisition, as `irq::restore` requires.
unsafe impl critical_section::Impl for IrqMask {
    unsafe fn acquire() -> critical_section::RawRestoreState {
        irq::mask().bits()
    }

    unsafe fn release(restore: critical_section::RawRestoreState) {
        // SAFETY: `restore` came from the matching `acquire` (the caller's
        // contract), which ends the innermost masked section.
        unsafe { irq::restore(IrqState::from_bits(restore)) };
    }
}
