//! `qemu-system-arm -M collie`: StrongARM SA-1110 (MIDR 0x6901b119), serial
//! port 1 at 0x8001_0000 (SA-11x0 UART), the OS timer at 0x9000_0000 and
//! the interrupt controller at 0x9005_0000. Address 0 is flash (the kernel
//! uses high vectors on every board). No TCM. The D-cache is cleaned by
//! reading a reserved region (no test-and-clean on the SA-1110: QEMU traps
//! those as undefined instructions).

use mmu_armv5::maint::{CacheMaintenance, CleanRegion, FlushRead, Sa1100, VolatileFlushRead};
use mmu_armv5::regs::{Cp15, Cp15Op, CpuKind};
use mmu_armv5::ModifiedVirtAddr;
use spm::tcm::PhysRange;

use super::device;
pub use super::map::COLLIE as LAYOUT;
use super::ostimer::{self, OsTimer};

/// The board's name (`cargo xtask --board`).
pub const NAME: &str = "collie";
/// MIDR of QEMU's SA-1110 (`sa1110-b5`... as QEMU 7.2 reports it).
pub const EXPECTED_MIDR: u32 = 0x6901_B119;
/// The CPU family.
pub const CPU_KIND: CpuKind = CpuKind::Sa1110;
/// Whether the board's CPU has a VFP (the SA-1110 has none; checked against the FPSID
/// probe, `proc::vfp::detect`, which decides).
pub const HAS_VFP: bool = false;
/// No TCM: the TCM scenarios and tests report "not applicable".
pub const HAS_TCM: bool = false;
/// OSCR ticks per million instructions under `-icount shift=10`.
pub const COUNTER_TICKS_PER_MEGA_INSN: u64 = ostimer::TICKS_PER_MEGA_INSN;
/// What a TCM must not cover (none is ever placed on this board).
pub const TCM_AVOID: [PhysRange; 0] = [];

/// SA-1110 D-cache size.
const DCACHE_SIZE: u32 = 8 << 10;

/// The clean region: two D-cache sizes of kernel memory nothing else touches.
#[repr(C, align(8192))]
struct Region([u8; 2 * DCACHE_SIZE as usize]);
static CLEAN: crate::global::Global<Region> =
    crate::global::Global::new(Region([0; 2 * DCACHE_SIZE as usize]));

/// Nothing to wait for after an SCTLR write on this CPU (CPWAIT is XScale's).
#[inline(always)]
pub fn sctlr_written() {}

/// Whether CP15 operation `op` on `value` starts a whole D-cache clean:
/// never (the SA-1110 cleans by reading; [`CountingFlushRead`] counts it).
#[inline(always)]
pub fn starts_dcache_clean(_op: Cp15Op, _value: u32) -> bool {
    false
}

/// Volatile reads of the clean region that count each whole clean (the
/// read of a half's first line) in the scenarios' D-cache flush counter.
pub struct CountingFlushRead(VolatileFlushRead);

impl FlushRead for CountingFlushRead {
    #[inline]
    fn read_line(&mut self, mva: ModifiedVirtAddr) {
        if mva.as_u32().is_multiple_of(DCACHE_SIZE) {
            crate::proc::platform::note_dcache_flush();
        }
        self.0.read_line(mva);
    }
}

/// Whether FCSEIDR bits \[24:0\] change the relocation (they must not):
/// QEMU 7.2 adds them to every relocated address here.
pub const QEMU_ADDS_FCSEIDR_LOW_BITS: bool = true;

/// The scenarios' default preemption period in microseconds: 10 ms, as on versatilepb: a switch with a full flush (reading the 8 KiB clean region) costs about 2,400 instructions.
pub const SLICE_US: u32 = 10_000;

/// The CPU's cache and TLB maintenance.
pub type Maint<C> = Sa1100<C, CountingFlushRead>;

/// The maintenance over `cp15`, cleaning by reading the kernel's clean region.
///
/// Always inlined: the fault fast path builds one per abort, and as a call
/// (with the region's checks and the stores of the unused value) it was
/// about 10 instructions of that path.
#[inline(always)]
pub fn maint<C: Cp15>(cp15: C) -> Maint<C> {
    let base = ModifiedVirtAddr::new(CLEAN.as_ptr() as u32);
    let Ok(region) = CleanRegion::new(base, DCACHE_SIZE, 32) else {
        // The static's alignment and size make this unreachable.
        panic!("clean region misplaced");
    };
    // SAFETY: CLEAN is in the kernel's cacheable linear map (above 32 MiB,
    // never relocated by the FCSE), in every address space, and nothing
    // but these reads uses it; its size is twice the 8 KiB D-cache.
    unsafe { Sa1100::new(cp15, CountingFlushRead(VolatileFlushRead::new()), region) }
}

/// Cleans the D-cache line holding `mva` (a just-written descriptor), no drain.
#[inline(always)]
pub fn clean_dcache_entry<C: Cp15>(m: &mut Maint<C>, mva: ModifiedVirtAddr) {
    m.clean_dcache_line(mva);
}

/// SA-11x0 serial port 1 (transmit only, polled).
pub mod uart {
    use super::device;

    const BASE: u32 = device(0x8001_0000);
    const UTCR1: u32 = 0x04;
    const UTCR2: u32 = 0x08;
    const UTDR: u32 = 0x14;
    const UTSR1: u32 = 0x20;
    /// UTSR1: transmit FIFO not full.
    const TNF: u32 = 1 << 2;

    /// Sets the fastest baud rate (divisor 0: 230,400 baud), so the log costs
    /// little virtual time; QEMU enables the transmitter at reset.
    pub fn init() {
        // SAFETY: UTCR1/UTCR2 are the UART's baud-rate divisor registers.
        unsafe {
            core::ptr::write_volatile((BASE + UTCR1) as *mut u32, 0);
            core::ptr::write_volatile((BASE + UTCR2) as *mut u32, 0);
        }
    }

    /// Writes `bytes`, waiting while the transmit FIFO is full.
    pub fn write(bytes: &[u8]) {
        for &b in bytes {
            // SAFETY: the UART is mapped as device memory at BASE for the
            // kernel's whole life; UTSR1 and UTDR have no effect beyond it.
            unsafe {
                while core::ptr::read_volatile((BASE + UTSR1) as *const u32) & TNF == 0 {}
                core::ptr::write_volatile((BASE + UTDR) as *mut u32, u32::from(b));
            }
        }
    }
}

ostimer::os_timer_module!("SA-1110", 0x9000_0000, 0x9005_0000);
