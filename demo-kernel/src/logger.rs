//! `defmt` global logger over the PL011 UART (rzcobs frames).
//!
//! A frame is written inside a critical section. If a frame is started while
//! another is open (only possible when a fatal exception or a panic
//! interrupts logging), the open frame is abandoned: a zero byte ends it on
//! the wire (the host decoder drops it as malformed and resynchronises) and
//! the new frame starts clean, so fatal reports always get out.

use core::cell::UnsafeCell;

use crate::uart;

#[defmt::global_logger]
struct Logger;

struct State {
    encoder: defmt::Encoder,
    taken: bool,
    restore: critical_section::RestoreState,
}

struct StateCell(UnsafeCell<State>);

// SAFETY: single core; the state is only touched between `acquire` (which
// masks interrupts) and `release`.
unsafe impl Sync for StateCell {}

static STATE: StateCell = StateCell(UnsafeCell::new(State {
    encoder: defmt::Encoder::new(),
    taken: false,
    restore: critical_section::RestoreState::invalid(),
}));

fn state() -> *mut State {
    STATE.0.get()
}

// SAFETY: `acquire`/`release` bracket each frame inside a critical section;
// `write` and `flush` are only called by defmt between them.
unsafe impl defmt::Logger for Logger {
    fn acquire() {
        // SAFETY: paired with `critical_section::release` in `release`.
        let restore = unsafe { critical_section::acquire() };
        // SAFETY: interrupts are masked; nothing else holds a reference.
        let s = unsafe { &mut *state() };
        if s.taken {
            // A frame was interrupted by a fatal path: terminate it.
            uart::write(&[0]);
            s.encoder = defmt::Encoder::new();
        } else {
            s.restore = restore;
        }
        s.taken = true;
        s.encoder.start_frame(uart::write);
    }

    unsafe fn flush() {}

    unsafe fn release() {
        // SAFETY: called by defmt after `acquire`, interrupts masked.
        let s = unsafe { &mut *state() };
        s.encoder.end_frame(uart::write);
        s.taken = false;
        let restore = s.restore;
        // SAFETY: the state saved by the matching `acquire`.
        unsafe { critical_section::release(restore) };
    }

    unsafe fn write(bytes: &[u8]) {
        // SAFETY: called by defmt between `acquire` and `release`.
        let s = unsafe { &mut *state() };
        s.encoder.write(bytes, uart::write);
    }
}
