//! What a board tells the kernel: its memory map, where the kernel's tables
//! live, and what it says about TCM. Everything else in this crate is
//! generic over the CPU; a port fills in one [`Board`].

use mmu_armv5::descriptor::L1Encoding;
use mmu_armv5::Domain;
use mmu_armv5::{ModifiedVirtAddr, PhysAddr};
use spm::tcm::{BoardTcm, Mix, PhysRange, TcmBank, TcmKind, TcmLayout};

/// The kernel's domain: every kernel mapping is in it, and every DACR the
/// kernel or `fass` writes keeps it open (client).
pub const KERNEL_DOMAIN: Domain = Domain::from_low_bits(0);

/// The largest TCM bank the kernel's TCM window holds per kind.
pub const TCM_CAPACITY: u32 = 256 << 10;

/// A board's memory map, as the kernel uses it.
///
/// Physical memory falls into three parts: the kernel image (mapped once,
/// with sections, never moved), the frames the kernel hands out as pages
/// (never mapped by sections, so a page can move into TCM), and TCM.
#[derive(Clone, Copy, Debug)]
pub struct Board {
    /// RAM holding the kernel image: code, data, stacks and the table pool.
    /// Mapped with cached sections at [`Board::kernel_va`].
    pub kernel_ram: PhysRange,
    /// The virtual address the kernel image runs at, inside the layout's
    /// kernel region and 1 MiB aligned.
    pub kernel_va: u32,
    /// The 4 KiB page holding the exception vectors (inside
    /// [`Board::kernel_ram`]), mapped at `0xFFFF_0000` (high vectors).
    pub vectors: PhysAddr,
    /// Device MiBs the kernel uses (console, timer, interrupt controller):
    /// physical base and kernel virtual address, 1 MiB aligned, mapped
    /// uncached.
    pub devices: &'static [(PhysAddr, u32)],
    /// The table pool (`mmu_armv5::table::TablePool`): its physical
    /// address, 16 KiB aligned, inside [`Board::kernel_ram`].
    pub table_pool: PhysAddr,
    /// The table pool's virtual address (the D-cache knows its lines by it).
    pub table_pool_va: ModifiedVirtAddr,
    /// Bytes of table memory ([`crate::POOL_BLOCKS`] blocks of 16 KiB).
    pub table_pool_size: u32,
    /// RAM for pages: processes' pages and kernel pages that may move.
    pub frames: PhysRange,
    /// The uncached physical window: physical address `p` of the frames and
    /// of TCM is reached at `phys_window_va + p` (1 MiB sections). Only
    /// physical copies (`spm::PhysMemory`) use it.
    pub phys_window_va: u32,
    /// Where the kernel maps its own movable pages (4 KiB pages, one
    /// second-level table, built at boot).
    pub kernel_pages_va: u32,
    /// Where the kernel maps the TCM frames (4 KiB pages, uncached): ITCM
    /// from here, DTCM from `tcm_va + 512 KiB`.
    pub tcm_va: u32,
    /// TCM: where a CPU-reported bank goes, the board's emulated banks, the
    /// ranges a real bank must avoid.
    pub tcm: BoardTcm<'static>,
    /// How first-level entries are encoded: `Arm9` (ARM926EJ-S, StrongARM)
    /// or `XScale`.
    pub encoding: L1Encoding,
}

const fn bank(kind: TcmKind, base: u32, size: u32) -> TcmBank {
    match TcmBank::board(kind, PhysAddr::new(base), size) {
        Ok(b) => b,
        Err(_) => panic!("a board TCM bank is aligned to its size"),
    }
}

/// Physical ranges a real TCM must not overlap on [`EXAMPLE`]: its RAM and
/// its devices.
const AVOID: [PhysRange; 2] = [
    PhysRange::new(PhysAddr::new(0), 2 << 20),
    PhysRange::new(PhysAddr::new(0x1000_0000), 0x0020_0000),
];

/// A small versatilepb-like board with an ARM926EJ-S: 2 MiB of RAM at
/// physical 0 (the first MiB the kernel image, the second its frames and
/// two emulated 32 KiB TCM banks at its top), devices at 0x1000_0000.
/// The host tests run it on a `MockCp15`; the ARM build links it.
pub const EXAMPLE: Board = Board {
    kernel_ram: PhysRange::new(PhysAddr::new(0), 1 << 20),
    kernel_va: 0xC000_0000,
    vectors: PhysAddr::new(0x0000_0000),
    devices: &[(PhysAddr::new(0x1010_0000), 0xE010_0000)],
    table_pool: PhysAddr::new(0x0008_0000),
    table_pool_va: ModifiedVirtAddr::new(0xC008_0000),
    table_pool_size: (crate::POOL_BLOCKS as u32) << 14,
    frames: PhysRange::new(PhysAddr::new(0x0010_0000), 0x000F_0000),
    phys_window_va: 0xD000_0000,
    kernel_pages_va: 0xC800_0000,
    tcm_va: 0xC810_0000,
    tcm: BoardTcm {
        itcm_base: PhysAddr::new(0x2000_0000),
        dtcm_base: PhysAddr::new(0x2010_0000),
        emulated: TcmLayout {
            itcm: Some(bank(TcmKind::Instruction, 0x001F_0000, 32 << 10)),
            dtcm: Some(bank(TcmKind::Data, 0x001F_8000, 32 << 10)),
        },
        avoid: &AVOID,
        capacity: TCM_CAPACITY,
        mix: Mix::PerKind,
    },
    encoding: L1Encoding::Arm9,
};

impl Board {
    /// The kernel virtual address of TCM frame `offset` bytes into the
    /// bank of `kind`, in the TCM window.
    #[must_use]
    pub const fn tcm_page_va(&self, kind: TcmKind, offset: u32) -> u32 {
        match kind {
            TcmKind::Instruction => self.tcm_va + offset,
            TcmKind::Data => self.tcm_va + (512 << 10) + offset,
        }
    }
}
