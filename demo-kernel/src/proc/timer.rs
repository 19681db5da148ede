//! The preemption timer and the free-running counter used to count
//! instructions under `-icount`: the board's ([`crate::board::timer`]).

/// Starts the preemption tick with a period of `us` microseconds.
pub fn start(us: u32) {
    crate::board::timer::start(us);
}

/// Stops the preemption tick and masks its interrupt line.
pub fn stop() {
    crate::board::timer::stop();
}

/// Acknowledges a pending timer interrupt; `true` if the timer raised the IRQ.
pub fn ack() -> bool {
    crate::board::timer::ack()
}

/// The board's free-running counter.
pub fn now() -> u32 {
    crate::board::timer::now()
}

/// Instructions in `ticks` of the counter under `-icount shift=10`.
pub fn ticks_to_instructions(ticks: u64) -> u64 {
    crate::board::ticks_to_instructions(ticks)
}
