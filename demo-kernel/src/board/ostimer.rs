//! The OS timer of the SA-1110 and the PXA255 (the same block in both, and
//! in QEMU the same model, `pxa25x-timer`): a free-running 3.6864 MHz
//! counter OSCR and match register OSMR0, whose match raises line 26 of the
//! interrupt controller (ICIP/ICMR at the same offsets on both chips).
//! Preemption reloads OSMR0 from OSCR at every tick.

/// Register addresses of one board's OS timer and interrupt controller (virtual).
pub struct OsTimer {
    /// OS timer block (OSMR0 at offset 0).
    pub timer: u32,
    /// Interrupt controller (ICIP at offset 0).
    pub icu: u32,
}

const OSMR0: u32 = 0x00;
const OSCR: u32 = 0x10;
const OSSR: u32 = 0x14;
const OIER: u32 = 0x1C;
const ICIP: u32 = 0x00;
const ICMR: u32 = 0x04;
const ICLR: u32 = 0x08;
/// OS timer match 0's interrupt line (SA-1110 and PXA255 alike).
const OST0_IRQ: u32 = 26;
/// OSCR ticks per second.
pub const OSCR_HZ: u64 = 3_686_400;
/// OSCR ticks per million instructions under `-icount shift=10`
/// (3.6864 MHz x 1.024 us = 3.7748736 per instruction).
pub const TICKS_PER_MEGA_INSN: u64 = 3_774_874;

static PERIOD: crate::global::Global<u32> = crate::global::Global::new(0);

fn write(addr: u32, v: u32) {
    // SAFETY: a device register in the kernel's device mapping.
    unsafe { (addr as *mut u32).write_volatile(v) }
}

fn read(addr: u32) -> u32 {
    // SAFETY: as in `write`.
    unsafe { (addr as *const u32).read_volatile() }
}

fn period() -> u32 {
    // SAFETY: single core; written only by `start` with interrupts masked.
    unsafe { *PERIOD.as_ptr() }
}

impl OsTimer {
    /// Starts match 0 with a period of `us` microseconds and routes it to IRQ.
    pub fn start(&self, us: u32) {
        let ticks = (u64::from(us.max(100)) * OSCR_HZ / 1_000_000) as u32;
        // SAFETY: as in `period`.
        unsafe { *PERIOD.as_ptr() = ticks };
        write(self.timer + OIER, read(self.timer + OIER) & !1);
        write(self.timer + OSSR, 1);
        write(
            self.timer + OSMR0,
            read(self.timer + OSCR).wrapping_add(ticks),
        );
        write(self.icu + ICLR, read(self.icu + ICLR) & !(1 << OST0_IRQ));
        write(self.icu + ICMR, read(self.icu + ICMR) | (1 << OST0_IRQ));
        write(self.timer + OIER, read(self.timer + OIER) | 1);
    }

    /// Stops match 0's interrupt and masks its line.
    pub fn stop(&self) {
        write(self.timer + OIER, read(self.timer + OIER) & !1);
        write(self.timer + OSSR, 1);
        write(self.icu + ICMR, read(self.icu + ICMR) & !(1 << OST0_IRQ));
    }

    /// Acknowledges a pending match 0 and arms the next one; `true` if the
    /// timer raised the IRQ.
    pub fn ack(&self) -> bool {
        let pending =
            read(self.icu + ICIP) & (1 << OST0_IRQ) != 0 && read(self.timer + OSSR) & 1 != 0;
        if pending {
            write(
                self.timer + OSMR0,
                read(self.timer + OSCR).wrapping_add(period()),
            );
            write(self.timer + OSSR, 1);
        }
        pending
    }

    /// The free-running counter OSCR.
    pub fn now(&self) -> u32 {
        read(self.timer + OSCR)
    }
}

/// A board's `timer` module (`board::timer`: start, stop, ack, now) over
/// its OS timer and interrupt controller at the given physical addresses
/// (`$chip` names the chip in the module's docs). collie and connex have
/// the same block at different addresses, so one definition serves both.
macro_rules! os_timer_module {
    ($chip:literal, $timer:expr, $icu:expr) => {
        #[doc = concat!("The OS timer's match 0 on the ", $chip, " interrupt controller, and OSCR.")]
        pub mod timer {
            use super::{device, OsTimer};

            const T: OsTimer = OsTimer {
                timer: device($timer),
                icu: device($icu),
            };

            /// Starts the preemption tick, every `us` microseconds.
            pub fn start(us: u32) {
                T.start(us);
            }

            /// Stops it.
            pub fn stop() {
                T.stop();
            }

            /// Acknowledges a pending tick; `true` if the timer raised the IRQ.
            pub fn ack() -> bool {
                T.ack()
            }

            /// OSCR (3.6864 MHz).
            pub fn now() -> u32 {
                T.now()
            }
        }
    };
}
pub(super) use os_timer_module;
