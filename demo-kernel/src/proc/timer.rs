//! The preemption timer (SP804 timer 0 on the PL190 VIC, IRQ 4) and the
//! 24 MHz reference counter used to count instructions under `-icount`.

use crate::mmu::DEVICE_VIRT;

/// SP804 timer 0/1 block (physical 0x101E_2000).
const TIMER0: u32 = DEVICE_VIRT + 0x001E_2000;
/// PL190 VIC (physical 0x1014_0000).
const VIC: u32 = DEVICE_VIRT + 0x0014_0000;
/// The versatilepb 24 MHz counter (physical 0x1000_005C).
pub(super) const COUNTER_24MHZ: u32 = DEVICE_VIRT + 0x5C;
/// The timer's VIC line.
const TIMER_IRQ: u32 = 4;

const LOAD: u32 = 0x00;
const CONTROL: u32 = 0x08;
const INTCLR: u32 = 0x0C;
const MIS: u32 = 0x14;
const VIC_IRQ_STATUS: u32 = 0x00;
const VIC_INT_SELECT: u32 = 0x0C;
const VIC_INT_ENABLE: u32 = 0x10;
const VIC_INT_EN_CLEAR: u32 = 0x14;

/// Control: enable, periodic, interrupt enable, 32-bit, prescale 1.
const CTRL_RUN: u32 = 0x80 | 0x40 | 0x20 | 0x02;

fn reg(addr: u32) -> *mut u32 {
    addr as *mut u32
}

fn write(addr: u32, v: u32) {
    // SAFETY: a device register in the kernel's device mapping.
    unsafe { reg(addr).write_volatile(v) }
}

fn read(addr: u32) -> u32 {
    // SAFETY: as in `write`.
    unsafe { reg(addr).read_volatile() }
}

/// Starts timer 0 with a period of `ticks` (1 MHz) and routes it to IRQ.
pub fn start(ticks: u32) {
    write(TIMER0 + CONTROL, 0);
    write(TIMER0 + INTCLR, 1);
    write(TIMER0 + LOAD, ticks.max(100));
    write(
        VIC + VIC_INT_SELECT,
        read(VIC + VIC_INT_SELECT) & !(1 << TIMER_IRQ),
    );
    write(VIC + VIC_INT_ENABLE, 1 << TIMER_IRQ);
    write(TIMER0 + CONTROL, CTRL_RUN);
}

/// Stops timer 0 and masks its VIC line.
pub fn stop() {
    write(TIMER0 + CONTROL, 0);
    write(TIMER0 + INTCLR, 1);
    write(VIC + VIC_INT_EN_CLEAR, 1 << TIMER_IRQ);
}

/// Acknowledges a pending timer interrupt; `true` if the timer raised the IRQ.
pub fn ack() -> bool {
    let pending = read(VIC + VIC_IRQ_STATUS) & (1 << TIMER_IRQ) != 0 && read(TIMER0 + MIS) & 1 != 0;
    if pending {
        write(TIMER0 + INTCLR, 1);
    }
    pending
}

/// The 24 MHz counter.
pub fn now() -> u32 {
    read(COUNTER_24MHZ)
}

/// Instructions in `ticks` of the 24 MHz counter under `-icount shift=10`
/// (24.576 ticks per instruction, see the facts file).
pub fn ticks_to_instructions(ticks: u64) -> u64 {
    ticks * 1000 / 24_576
}
