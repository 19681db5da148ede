//! The one cell type of the kernel's statics.
//!
//! The kernel runs on one core and never takes an interrupt in a privileged
//! mode except in the TCM exchange's bounded interrupt windows, whose handler
//! touches only its own flag: a static is never accessed from two contexts
//! at once. [`Global`] states that contract once; each static says in its
//! own docs who touches it and when, and every access is an `unsafe` block
//! saying why no other access to the same cell is alive.

use core::cell::UnsafeCell;

/// A kernel static: a value touched only under the module contract above.
#[repr(transparent)]
pub struct Global<T>(UnsafeCell<T>);

// SAFETY: one core, and no two accesses to one cell at once (the module
// contract): no data race is possible.
unsafe impl<T> Sync for Global<T> {}

impl<T> Global<T> {
    /// A cell holding `value`.
    pub const fn new(value: T) -> Self {
        Global(UnsafeCell::new(value))
    }

    /// The value's address. Reading or writing through it is `unsafe`: the
    /// caller must know that no reference to the value is alive.
    pub const fn as_ptr(&self) -> *mut T {
        self.0.get()
    }
}
