//! Interrupt masking, provided by the kernel.
//!
//! The exchange keeps interrupts off only around single bounded steps (one
//! chunk copy, one mapping switch), through this trait. On the target it
//! masks IRQ and FIQ in the CPSR; host tests use a double that records every
//! window.

/// Masks and unmasks interrupts.
pub trait InterruptControl {
    /// Masks interrupts; returns whether they were enabled before.
    fn disable(&mut self) -> bool;
    /// Restores the state [`InterruptControl::disable`] returned.
    fn restore(&mut self, was_enabled: bool);
}

/// Interrupt control lent by exclusive reference.
impl<T: InterruptControl + ?Sized> InterruptControl for &mut T {
    #[inline]
    fn disable(&mut self) -> bool {
        (**self).disable()
    }
    #[inline]
    fn restore(&mut self, was_enabled: bool) {
        (**self).restore(was_enabled);
    }
}

/// Runs `f` with interrupts masked, restoring the previous state afterwards.
pub fn without_interrupts<I: InterruptControl + ?Sized, R>(
    irq: &mut I,
    f: impl FnOnce() -> R,
) -> R {
    let was = irq.disable();
    let r = f();
    irq.restore(was);
    r
}
