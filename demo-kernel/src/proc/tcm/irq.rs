//! Bounded windows: [`Irq`] masks IRQs around `spm`'s masked steps
//! and times each window with the 24 MHz counter; between steps the
//! system call opens an interrupt window (`kernel_irq` takes the tick).

use mmu_armv5::irq;
use spm::InterruptControl;

use crate::global::Global;
use crate::proc::timer;

/// Ticks taken by `kernel_irq` since the last [`take_kernel_irqs`].
static KIRQ: Global<u32> = Global::new(0);

/// Enables (or masks again) IRQs in SVC mode around an exchange step: a
/// tick is then taken by `kernel_irq` whenever `spm` has not masked it.
/// FIQs stay masked. Both are compiler barriers (`mmu_armv5::irq`): no
/// memory access moves across the change of the mask.
pub(super) fn set_irqs_enabled(on: bool) {
    if on {
        // SAFETY: called between exchange steps, outside any masked
        // section; the kernel's IRQ handler for SVC mode (`kernel_irq`)
        // only acknowledges the timer and counts.
        unsafe { irq::unmask_irq() };
    } else {
        let _ = irq::mask();
    }
}

/// Ticks `kernel_irq` took since the last call.
pub(super) fn take_kernel_irqs() -> u32 {
    // SAFETY: single core; called with IRQs masked.
    unsafe { core::mem::replace(&mut *KIRQ.as_ptr(), 0) }
}

/// IRQ taken in SVC mode (`asm/vectors.s`): inside a kernel interrupt
/// window. Acknowledges the timer and counts the tick.
#[no_mangle]
pub extern "C" fn kernel_irq() {
    if timer::ack() {
        // SAFETY: IRQ mode, IRQs masked; the interrupted code reads the
        // counter only with IRQs masked.
        unsafe { *KIRQ.as_ptr() += 1 };
    }
}

/// `spm`'s interrupt control: masks IRQs and times every masked window.
#[derive(Default)]
pub(super) struct Irq {
    t0: u32,
    /// Longest window so far, in counter ticks.
    pub(super) longest: u32,
    /// Windows opened.
    pub(super) windows: u32,
}

impl InterruptControl for Irq {
    fn disable(&mut self) -> bool {
        let was = !irq::mask().irq_masked();
        self.windows += 1;
        self.t0 = timer::now();
        was
    }

    fn restore(&mut self, was_enabled: bool) {
        let dt = timer::now().wrapping_sub(self.t0);
        self.longest = self.longest.max(dt);
        if was_enabled {
            // SAFETY: ends the window `disable` opened with IRQs enabled
            // before it (spm pairs the calls); the handler is `kernel_irq`.
            unsafe { irq::unmask_irq() };
        }
    }
}
