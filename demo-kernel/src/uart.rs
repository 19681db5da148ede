//! PL011 UART0 of versatilepb (transmit only, polled).

/// Virtual base address of UART0 (physical 0x101f_1000, mapped at
/// [`DEVICE_VIRT`](crate::mmu::DEVICE_VIRT) + offset by the boot code and by
/// the kernel's own page table).
const UART0_BASE: usize = 0xF01F_1000;
/// Data register offset.
const UARTDR: usize = 0x00;
/// Flag register offset.
const UARTFR: usize = 0x18;
/// Flag register: transmit FIFO full.
const FR_TXFF: u32 = 1 << 5;

/// Writes `bytes` to the UART, waiting while its transmit FIFO is full.
pub fn write(bytes: &[u8]) {
    for &b in bytes {
        // SAFETY: UART0 is mapped as device memory at UART0_BASE by the boot code
        // for the kernel's whole life; FR and DR are 32-bit registers whose
        // reads/writes have no effect beyond the UART itself.
        unsafe {
            let fr = (UART0_BASE + UARTFR) as *const u32;
            while core::ptr::read_volatile(fr) & FR_TXFF != 0 {}
            core::ptr::write_volatile((UART0_BASE + UARTDR) as *mut u32, u32::from(b));
        }
    }
}
