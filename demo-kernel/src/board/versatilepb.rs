//! `qemu-system-arm -M versatilepb -cpu arm926`: ARM926EJ-S, PL011 UART0,
//! SP804 timer 0 on the PL190 VIC (line 4), the 24 MHz system counter.

use mmu_armv5::maint::Arm926;
use mmu_armv5::regs::{Cp15, Cp15Op, CpuKind};
use mmu_armv5::{ModifiedVirtAddr, PhysAddr};
use spm::tcm::PhysRange;

use super::device;
pub use super::map::VERSATILEPB as LAYOUT;

/// The board's name (`cargo xtask --board`).
pub const NAME: &str = "versatilepb";
/// MIDR of QEMU's `-cpu arm926` (ARM926EJ-S r0p5).
pub const EXPECTED_MIDR: u32 = 0x4106_9265;
/// The CPU family.
pub const CPU_KIND: CpuKind = CpuKind::Arm926ejs;
/// Whether the board's CPU has a VFP (checked against the FPSID probe,
/// `proc::vfp::detect`, which decides).
pub const HAS_VFP: bool = true;
/// Whether the TCM scenarios run (on the CPU's TCM or the board's emulated banks).
pub const HAS_TCM: bool = true;
/// Ticks of the 24 MHz counter per million instructions under `-icount
/// shift=10` (24.576 per instruction).
pub const COUNTER_TICKS_PER_MEGA_INSN: u64 = 24_576_000;
/// What a real TCM must not cover: the SDRAM window, the devices, flash.
pub const TCM_AVOID: [PhysRange; 4] = [
    PhysRange::new(PhysAddr::new(0), 0x1000_0000),
    PhysRange::new(PhysAddr::new(0x1000_0000), 0x0020_0000),
    PhysRange::new(PhysAddr::new(0x3400_0000), 0x0400_0000),
    PhysRange::new(PhysAddr::new(0x4100_0000), 0x2F00_0000),
];

/// Whether CP15 operation `op` on `value` starts a whole D-cache clean: never
/// on the ARM926 (its test-and-clean loop is counted where it ends).
#[inline(always)]
pub fn starts_dcache_clean(_op: Cp15Op, _value: u32) -> bool {
    false
}

/// Nothing to wait for after an SCTLR write on this CPU (CPWAIT is XScale's).
#[inline(always)]
pub fn sctlr_written() {}

/// Whether FCSEIDR bits \[24:0\] change the relocation (they must not):
/// QEMU 7.2 adds them to every relocated address on this board too
/// (measured by the `fcseidr_low_bits_as_the_board_does` test).
pub const QEMU_ADDS_FCSEIDR_LOW_BITS: bool = true;

/// The scenarios' default preemption period in microseconds: 10 ms: under `-icount shift=10` about 9,800 instructions, far more than a switch with a full flush (a few hundred).
pub const SLICE_US: u32 = 10_000;

/// The CPU's cache and TLB maintenance.
pub type Maint<C> = Arm926<C>;

/// The maintenance over `cp15`.
pub fn maint<C: Cp15>(cp15: C) -> Maint<C> {
    Arm926::new(cp15)
}

/// Cleans the D-cache line holding `mva` (a just-written descriptor), no
/// drain: the ARM926's by-word clean (`Arm926::clean_dcache_entry`).
#[inline(always)]
pub fn clean_dcache_entry<C: Cp15>(m: &mut Maint<C>, mva: ModifiedVirtAddr) {
    m.clean_dcache_entry(mva);
}

/// PL011 UART0 (transmit only, polled).
pub mod uart {
    use super::device;

    const BASE: u32 = device(0x101F_1000);
    const UARTDR: u32 = 0x00;
    const UARTFR: u32 = 0x18;
    /// Flag register: transmit FIFO full.
    const FR_TXFF: u32 = 1 << 5;

    /// Nothing to set up: QEMU's PL011 transmits from reset.
    pub fn init() {}

    /// Writes `bytes`, waiting while the transmit FIFO is full.
    pub fn write(bytes: &[u8]) {
        for &b in bytes {
            // SAFETY: UART0 is mapped as device memory at BASE by the boot
            // code and the kernel's table for the kernel's whole life; FR and
            // DR are 32-bit registers with no effect beyond the UART.
            unsafe {
                let fr = (BASE + UARTFR) as *const u32;
                while core::ptr::read_volatile(fr) & FR_TXFF != 0 {}
                core::ptr::write_volatile((BASE + UARTDR) as *mut u32, u32::from(b));
            }
        }
    }
}

/// SP804 timer 0 on the PL190 VIC, and the 24 MHz counter.
pub mod timer {
    use super::device;

    /// SP804 timer 0/1 block.
    const TIMER0: u32 = device(0x101E_2000);
    /// PL190 VIC.
    const VIC: u32 = device(0x1014_0000);
    /// The 24 MHz counter.
    const COUNTER: u32 = device(super::LAYOUT.counter_phys);
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

    fn write(addr: u32, v: u32) {
        // SAFETY: a device register in the kernel's device mapping.
        unsafe { (addr as *mut u32).write_volatile(v) }
    }

    fn read(addr: u32) -> u32 {
        // SAFETY: as in `write`.
        unsafe { (addr as *const u32).read_volatile() }
    }

    /// Starts timer 0 with a period of `us` microseconds (1 MHz) and routes it to IRQ.
    pub fn start(us: u32) {
        write(TIMER0 + CONTROL, 0);
        write(TIMER0 + INTCLR, 1);
        write(TIMER0 + LOAD, us.max(100));
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
        let pending =
            read(VIC + VIC_IRQ_STATUS) & (1 << TIMER_IRQ) != 0 && read(TIMER0 + MIS) & 1 != 0;
        if pending {
            write(TIMER0 + INTCLR, 1);
        }
        pending
    }

    /// The 24 MHz counter.
    pub fn now() -> u32 {
        read(COUNTER)
    }
}
