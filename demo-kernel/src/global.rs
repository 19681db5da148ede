//! The one cell type of the kernel's statics.
//!
//! The kernel runs on one core and never takes an interrupt in a privileged
//! mode except in the TCM exchange's bounded interrupt windows, whose handler
//! touches only its own flag: a static is never accessed from two contexts
//! at once. [`Global`] states that contract once; each static says in its
//! own docs who touches it and when, and every access is an `unsafe` call
//! whose `// SAFETY:` comment says why no other access to the same cell is
//! alive.
//!
//! Access is scoped: [`Global::with`] lends the value to a closure (the
//! reference cannot escape it), [`Global::get_mut`] returns a reference
//! bounded by the borrow of the static, for a caller that must hold it
//! across code a closure cannot contain, [`Global::get`] and
//! [`Global::set`] copy a value out or in. No function of the kernel hands
//! out a `&'static mut` to a static; the kernel and the TCM state are
//! reached through the `unsafe` accessors `proc::kernel::installed` and
//! `proc::tcm::state`, each caller stating its `// SAFETY:`.

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

    /// The value's address (for assembly and for raw copies). Reading or
    /// writing through it is `unsafe`: the caller must know that no
    /// reference to the value is alive.
    pub const fn as_ptr(&self) -> *mut T {
        self.0.get()
    }

    /// Runs `f` on the value.
    ///
    /// # Safety
    /// No other reference to the value is alive during the call, and `f`
    /// does not access this cell again (no re-entry, no interrupt handler
    /// that touches it).
    #[inline(always)]
    pub unsafe fn with<R>(&self, f: impl FnOnce(&mut T) -> R) -> R {
        // SAFETY: the caller's contract: this is the only reference.
        f(unsafe { &mut *self.0.get() })
    }

    /// The value, mutably.
    ///
    /// # Safety
    /// While the returned reference is alive, no other reference to the
    /// value exists and the cell is not accessed in any other way (the
    /// caller holds it for a bounded stretch of code, never two at once).
    #[inline(always)]
    #[allow(clippy::mut_from_ref)]
    pub unsafe fn get_mut(&self) -> &mut T {
        // SAFETY: the caller's contract.
        unsafe { &mut *self.0.get() }
    }

    /// A copy of the value.
    ///
    /// # Safety
    /// No mutable reference to the value is alive.
    #[inline(always)]
    pub unsafe fn get(&self) -> T
    where
        T: Copy,
    {
        // SAFETY: the caller's contract: nothing writes the value meanwhile.
        unsafe { *self.0.get() }
    }

    /// Replaces the value (dropping the old one in place).
    ///
    /// # Safety
    /// No reference to the value is alive.
    #[inline(always)]
    pub unsafe fn set(&self, value: T) {
        // SAFETY: the caller's contract: this is the only access.
        unsafe { *self.0.get() = value };
    }
}
