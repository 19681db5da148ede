//! The physical memory map of each board, as plain constants: included by
//! the kernel (`board/mod.rs`) and by `build.rs`, which writes the
//! linker-script values (`board.ld`) from the same numbers, so the two
//! cannot disagree.
//!
//! Every board's RAM is mapped at [`KERNEL_VIRT_BASE`] (the kernel's
//! linear map) whatever its physical base: versatilepb's RAM is at 0,
//! collie's at `0xC000_0000`, connex's at `0xA000_0000`. The device MiBs
//! listed in [`Layout::devices`] are mapped one after the other from
//! [`DEVICE_VIRT`].

/// Virtual address of the kernel's linear map of RAM (far above the 32 MiB
/// FCSE window, below the devices).
pub const KERNEL_VIRT_BASE: u32 = 0xC000_0000;
/// Where the boards' device MiBs are mapped (one MiB each, in order).
pub const DEVICE_VIRT: u32 = 0xF000_0000;
/// Most device MiBs a board may list.
pub const MAX_DEVICES: usize = 4;

/// A board's physical memory map.
#[derive(Clone, Copy, Debug)]
pub struct Layout {
    /// The board's name, as `cargo xtask --board` spells it.
    pub name: &'static str,
    /// Physical address of RAM (MiB aligned).
    pub ram_phys: u32,
    /// RAM the kernel maps and uses, in MiB (at most what QEMU gives the board).
    pub ram_mib: u32,
    /// Physical address the kernel image is linked and loaded at.
    pub kernel_phys: u32,
    /// First of four physical MiBs the in-kernel tests map freely.
    pub scratch_phys: u32,
    /// The physical MiB backing the scenarios' shared segment 0.
    pub segment_phys: u32,
    /// First physical address of the user frame allocator.
    pub frames_phys: u32,
    /// One past the user frames (32 KiB + 32 KiB of RAM follow for the
    /// emulated TCM banks).
    pub frames_end: u32,
    /// Physical device MiBs mapped at [`DEVICE_VIRT`] + i MiB.
    pub devices: [u32; MAX_DEVICES],
    /// How many of [`Layout::devices`] are used.
    pub device_count: usize,
    /// Physical address of the free-running counter read by the trap path.
    pub counter_phys: u32,
}

impl Layout {
    /// The virtual address of device register `pa` (in one of the listed MiBs),
    /// or 0 when no listed MiB holds it.
    pub const fn device_va(&self, pa: u32) -> u32 {
        let mut i = 0;
        while i < self.device_count {
            if self.devices[i] == pa & 0xFFF0_0000 {
                return DEVICE_VIRT + ((i as u32) << 20) + (pa & 0x000F_FFFF);
            }
            i += 1;
        }
        0
    }

    /// `KERNEL_VIRT_BASE - ram_phys` (wrapping): virtual = physical + this.
    pub const fn virt_offset(&self) -> u32 {
        KERNEL_VIRT_BASE.wrapping_sub(self.ram_phys)
    }
}

/// `qemu-system-arm -M versatilepb -cpu arm926 -m 128M`.
pub const VERSATILEPB: Layout = Layout {
    name: "versatilepb",
    ram_phys: 0,
    ram_mib: 128,
    kernel_phys: 0x0010_0000,
    scratch_phys: 0x0400_0000,
    segment_phys: 0x0440_0000,
    frames_phys: 0x0460_0000,
    frames_end: 0x07F0_0000,
    // System registers (24 MHz counter) and SP804 timers, then the VIC and
    // the PL011 UART0.
    devices: [0x1000_0000, 0x1010_0000, 0, 0],
    device_count: 2,
    counter_phys: 0x1000_005C,
};

/// `qemu-system-arm -M collie` (StrongARM SA-1110; QEMU gives it 512 MiB
/// of SDRAM at `0xC000_0000`, the kernel uses 128 MiB).
pub const COLLIE: Layout = Layout {
    name: "collie",
    ram_phys: 0xC000_0000,
    ram_mib: 128,
    kernel_phys: 0xC010_0000,
    scratch_phys: 0xC400_0000,
    segment_phys: 0xC440_0000,
    frames_phys: 0xC460_0000,
    frames_end: 0xC7F0_0000,
    // Serial port 1 (the console), then the OS timer and the interrupt
    // controller.
    devices: [0x8000_0000, 0x9000_0000, 0, 0],
    device_count: 2,
    // OSCR, 3.6864 MHz.
    counter_phys: 0x9000_0010,
};

/// `qemu-system-arm -M connex` (XScale PXA255; 64 MiB of SDRAM at
/// `0xA000_0000`).
pub const CONNEX: Layout = Layout {
    name: "connex",
    ram_phys: 0xA000_0000,
    ram_mib: 64,
    kernel_phys: 0xA010_0000,
    scratch_phys: 0xA200_0000,
    segment_phys: 0xA240_0000,
    frames_phys: 0xA260_0000,
    frames_end: 0xA3F0_0000,
    // FFUART (the console), the OS timer, the interrupt controller.
    devices: [0x4010_0000, 0x40A0_0000, 0x40D0_0000, 0],
    device_count: 3,
    // OSCR, 3.6864 MHz.
    counter_phys: 0x40A0_0010,
};
