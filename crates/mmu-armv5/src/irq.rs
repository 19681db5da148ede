//! Masking IRQ and FIQ: the one interrupt-masking primitive of the workspace.
//!
//! On bare-metal ARM (`cfg(all(target_arch = "arm", target_os = "none"))`)
//! [`mask`] sets the CPSR's I and F bits with `MRS`/`MSR` and returns what
//! they were; [`restore`] puts exactly those two bits back. Neither `asm!`
//! block is `nomem`: each is a compiler barrier, so no memory access moves
//! across the change of the interrupt mask. In user mode the `MSR` leaves the
//! mask bits unchanged (as the architecture specifies), so masking is a
//! privileged operation in effect.
//!
//! Elsewhere (host tests) the functions act on a simulated, process-wide
//! pair of I/F bits, so code using them runs and its nesting can be checked.
//!
//! [`without_interrupts`] is the safe closure form: it masks, runs the
//! closure and restores, so masks nest and unwind in order.
//!
//! [`unmask_irq`] opens an interrupt window in a kernel that keeps FIQ
//! masked throughout: it clears only the I bit (a window is closed again
//! with [`mask`]).
//!
//! ```
//! use mmu_armv5::irq;
//!
//! let seen = irq::without_interrupts(|| irq::current());
//! assert!(seen.irq_masked() && seen.fiq_masked());
//! ```

/// The CPSR's I (bit 7) and F (bit 6) bits.
const IF_BITS: u32 = 0xC0;
/// The CPSR's I bit alone.
const I_BIT: u32 = 0x80;

/// The state of the IRQ and FIQ masks: the CPSR's I and F bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[repr(transparent)]
pub struct IrqState(u32);

impl IrqState {
    /// Both interrupts enabled (I = F = 0).
    pub const ENABLED: IrqState = IrqState(0);
    /// Both interrupts masked (I = F = 1).
    pub const MASKED: IrqState = IrqState(IF_BITS);

    /// The state held by bits 7 (I) and 6 (F) of `bits`, e.g. a saved CPSR;
    /// every other bit is ignored.
    #[inline]
    #[must_use]
    pub const fn from_bits(bits: u32) -> IrqState {
        IrqState(bits & IF_BITS)
    }

    /// The I and F bits in their CPSR positions (every other bit zero).
    #[inline]
    #[must_use]
    pub const fn bits(self) -> u32 {
        self.0
    }

    /// Whether IRQs are masked (I = 1).
    #[inline]
    #[must_use]
    pub const fn irq_masked(self) -> bool {
        self.0 & (1 << 7) != 0
    }

    /// Whether FIQs are masked (F = 1).
    #[inline]
    #[must_use]
    pub const fn fiq_masked(self) -> bool {
        self.0 & (1 << 6) != 0
    }
}

/// Masks IRQ and FIQ and returns their previous state, for [`restore`].
///
/// Masking cannot break anything (at worst interrupts stay masked), hence
/// safe; ending the masked section with [`restore`] is what needs care.
#[inline(always)]
#[must_use = "pass the previous state to `restore` to end the masked section"]
pub fn mask() -> IrqState {
    backend::mask()
}

/// Sets the IRQ and FIQ masks to `state`, leaving every other CPSR bit alone.
///
/// # Safety
/// `state` came from the [`mask`] call that began the masked section being
/// ended, and masked sections end in the reverse order they began: code
/// that relies on interrupts being masked (a critical section handing out
/// access to data an interrupt handler also uses) must not be running
/// inside a section this call unmasks.
#[inline(always)]
pub unsafe fn restore(state: IrqState) {
    backend::restore(state);
}

/// Unmasks IRQ and leaves FIQ as it is; returns the previous state.
///
/// For a kernel that opens interrupt windows in privileged code while FIQ
/// stays masked: one instruction shorter than [`restore`] with a state that
/// has only F set, and it needs no state at hand.
///
/// # Safety
/// From here on an IRQ handler can run at any instruction: the caller is
/// not inside a masked section that relies on IRQs staying masked (one
/// begun by [`mask`] that the caller does not end here, such as a critical
/// section another part of the program holds), and whatever the handler
/// touches is in a state it may see.
#[inline(always)]
pub unsafe fn unmask_irq() -> IrqState {
    backend::unmask_irq()
}

/// The current state of the IRQ and FIQ masks.
#[inline(always)]
#[must_use]
pub fn current() -> IrqState {
    backend::current()
}

/// Runs `f` with IRQ and FIQ masked, then puts the masks back as they were.
#[inline(always)]
pub fn without_interrupts<R>(f: impl FnOnce() -> R) -> R {
    let prev = mask();
    let r = f();
    // SAFETY: `prev` is the state this call's own `mask` returned, and every
    // section `f` began has ended by now (closures nest).
    unsafe { restore(prev) };
    r
}

#[cfg(all(target_arch = "arm", target_os = "none"))]
mod backend {
    use super::{IrqState, IF_BITS, I_BIT};
    use core::arch::asm;

    #[inline(always)]
    pub(super) fn mask() -> IrqState {
        let cpsr: u32;
        // SAFETY: reads the CPSR and sets its I and F bits; the mode and the
        // other control bits are written back unchanged. Not `nomem`: the
        // compiler must not move memory accesses across the mask change.
        unsafe {
            asm!(
                "mrs {cpsr}, cpsr",
                "orr {tmp}, {cpsr}, #{if_bits}",
                "msr cpsr_c, {tmp}",
                cpsr = out(reg) cpsr,
                tmp = out(reg) _,
                if_bits = const IF_BITS,
                options(nostack, preserves_flags),
            );
        }
        IrqState::from_bits(cpsr)
    }

    #[inline(always)]
    pub(super) fn restore(state: IrqState) {
        // SAFETY: replaces only the I and F bits of the CPSR (the mode and
        // the other control bits are written back as read); the caller of
        // `super::restore` vouches for unmasking. Not `nomem`: a compiler
        // barrier like `mask`.
        unsafe {
            asm!(
                "mrs {tmp}, cpsr",
                "bic {tmp}, {tmp}, #{if_bits}",
                "orr {tmp}, {tmp}, {state}",
                "msr cpsr_c, {tmp}",
                tmp = out(reg) _,
                state = in(reg) state.bits(),
                if_bits = const IF_BITS,
                options(nostack, preserves_flags),
            );
        }
    }

    #[inline(always)]
    pub(super) fn unmask_irq() -> IrqState {
        let cpsr: u32;
        // SAFETY: clears only the I bit of the CPSR (the mode, F and the
        // other control bits are written back as read); the caller of
        // `super::unmask_irq` vouches for unmasking. Not `nomem`: a compiler
        // barrier like `mask`.
        unsafe {
            asm!(
                "mrs {cpsr}, cpsr",
                "bic {tmp}, {cpsr}, #{i_bit}",
                "msr cpsr_c, {tmp}",
                cpsr = out(reg) cpsr,
                tmp = out(reg) _,
                i_bit = const I_BIT,
                options(nostack, preserves_flags),
            );
        }
        IrqState::from_bits(cpsr)
    }

    #[inline(always)]
    pub(super) fn current() -> IrqState {
        let cpsr: u32;
        // SAFETY: reading the CPSR has no side effect.
        unsafe { asm!("mrs {0}, cpsr", out(reg) cpsr, options(nomem, nostack, preserves_flags)) };
        IrqState::from_bits(cpsr)
    }
}

/// Host stand-in: one simulated pair of I/F bits for the whole process.
#[cfg(not(all(target_arch = "arm", target_os = "none")))]
mod backend {
    use super::{IrqState, I_BIT};
    use core::sync::atomic::{AtomicU32, Ordering};

    static BITS: AtomicU32 = AtomicU32::new(0);

    pub(super) fn mask() -> IrqState {
        IrqState::from_bits(BITS.swap(IrqState::MASKED.bits(), Ordering::SeqCst))
    }

    pub(super) fn restore(state: IrqState) {
        BITS.store(state.bits(), Ordering::SeqCst);
    }

    pub(super) fn unmask_irq() -> IrqState {
        IrqState::from_bits(BITS.fetch_and(!I_BIT, Ordering::SeqCst))
    }

    pub(super) fn current() -> IrqState {
        IrqState::from_bits(BITS.load(Ordering::SeqCst))
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Serialises the tests that use the process-wide simulated masks.
    pub(crate) static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());

    #[test]
    fn masks_nest_and_restore_exactly() {
        let _serial = LOCK.lock().unwrap_or_else(|e| e.into_inner());
        assert_eq!(current(), IrqState::ENABLED);
        let outer = mask();
        assert_eq!(outer, IrqState::ENABLED);
        assert_eq!(current(), IrqState::MASKED);
        let inner = without_interrupts(|| {
            assert_eq!(current(), IrqState::MASKED);
            42
        });
        assert_eq!(inner, 42);
        assert_eq!(
            current(),
            IrqState::MASKED,
            "the inner section kept the outer mask"
        );
        // SAFETY: ends the section begun above; nothing relies on it.
        unsafe { restore(outer) };
        assert_eq!(current(), IrqState::ENABLED);
        assert_eq!(IrqState::from_bits(0x6000_01D3), IrqState::MASKED);
        assert!(IrqState::from_bits(0x80).irq_masked() && !IrqState::from_bits(0x80).fiq_masked());
    }

    #[test]
    fn an_interrupt_window_clears_only_the_i_bit() {
        let _serial = LOCK.lock().unwrap_or_else(|e| e.into_inner());
        let outer = mask();
        // SAFETY: nothing relies on the simulated masks here.
        let before = unsafe { unmask_irq() };
        assert_eq!(before, IrqState::MASKED);
        let open = current();
        assert!(!open.irq_masked() && open.fiq_masked(), "FIQ stays masked");
        let closed = mask();
        assert_eq!(closed, open);
        assert_eq!(current(), IrqState::MASKED);
        // SAFETY: ends the section begun above.
        unsafe { restore(outer) };
        assert_eq!(current(), IrqState::ENABLED);
        // SAFETY: as above.
        assert_eq!(unsafe { unmask_irq() }, IrqState::ENABLED);
        assert_eq!(current(), IrqState::ENABLED);
    }
}
