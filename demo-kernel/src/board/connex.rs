//! `qemu-system-arm -M connex`: XScale PXA255 (MIDR 0x69052d00), the FFUART
//! at 0x4010_0000 (16550-style, registers 4 bytes apart), the OS timer at
//! 0x40A0_0000 and the interrupt controller at 0x40D0_0000. QEMU ignores
//! `-kernel` here: the ELF comes through `-device loader` over an empty
//! pflash. No TCM. The D-cache is cleaned by allocating lines in a reserved
//! region; SCTLR writes are followed by CPWAIT.

use mmu_armv5::maint::{CacheMaintenance, CleanRegion, XScale};
use mmu_armv5::regs::{Cp15, Cp15Op, CpuKind};
use mmu_armv5::ModifiedVirtAddr;
use spm::tcm::PhysRange;

use super::device;
pub use super::map::CONNEX as LAYOUT;
use super::ostimer::{self, OsTimer};

/// The board's name (`cargo xtask --board`).
pub const NAME: &str = "connex";
/// MIDR of QEMU's PXA255.
pub const EXPECTED_MIDR: u32 = 0x6905_2D00;
/// The CPU family.
pub const CPU_KIND: CpuKind = CpuKind::XScale;
/// No TCM: the TCM scenarios and tests report "not applicable".
pub const HAS_TCM: bool = false;
/// OSCR ticks per million instructions under `-icount shift=10`.
pub const COUNTER_TICKS_PER_MEGA_INSN: u64 = ostimer::TICKS_PER_MEGA_INSN;
/// What a TCM must not cover (none is ever placed on this board).
pub const TCM_AVOID: [PhysRange; 0] = [];

core::arch::global_asm!(
    crate::marker::asm_with_markers!("src/asm/cpwait.s"),
    options(raw)
);

extern "C" {
    fn __cpwait();
}

/// CPWAIT: call after an SCTLR write, before depending on the new setting.
#[inline(always)]
pub fn sctlr_written() {
    // SAFETY: `__cpwait` reads TTBR into r0 (caller-saved) and branches to
    // the next instruction; it touches nothing else.
    unsafe { __cpwait() }
}

/// Whether CP15 operation `op` on `value` starts a whole D-cache clean: the
/// first line allocation of a half of the clean region.
#[inline(always)]
pub fn starts_dcache_clean(op: Cp15Op, value: u32) -> bool {
    op == Cp15Op::AllocateDCacheLine && value.is_multiple_of(DCACHE_SIZE)
}

/// PXA255 D-cache size.
const DCACHE_SIZE: u32 = 32 << 10;

/// The clean region: two D-cache sizes of kernel memory nothing else touches.
#[repr(C, align(32768))]
struct Region([u8; 2 * DCACHE_SIZE as usize]);
static CLEAN: crate::global::Global<Region> =
    crate::global::Global::new(Region([0; 2 * DCACHE_SIZE as usize]));

/// Whether FCSEIDR bits \[24:0\] change the relocation (they must not):
/// QEMU 7.2 adds them to every relocated address here.
pub const QEMU_ADDS_FCSEIDR_LOW_BITS: bool = true;

/// The scenarios' default preemption period in microseconds: 20 ms, about
/// 19,500 instructions under `-icount shift=10`. Bounded on both sides:
/// * below: a switch with a full flush allocates 1,024 lines of the clean
///   region, about 9,500 instructions; with 10 ms a ring of 64 under
///   FCSE-only (its 64th space shares a PID and is flushed for) never
///   finishes, with 20 ms it does (`scenario=ring mode=naive,fcse,fass n=64`);
/// * above: the measured window of `preempt` opens at the first `MARK 0`,
///   after the first process's two warm-up rounds (about 27,000
///   instructions at touch 0). The slice must be shorter, so that every
///   process has run, and has its FASS switch record, before the window:
///   with 40 ms the first process marked before any other had run, and the
///   window held n - 1 cold first switches (about 640 instructions each,
///   through the Rust path), so `preempt` read 163 / 197 / 202 at
///   n = 2 / 8 / 14 (FASS) instead of 115 (and FCSE-only 277 / 308 / 313
///   instead of 232); at touch 4 KiB the longer rounds hid it.
pub const SLICE_US: u32 = 20_000;

/// The CPU's cache and TLB maintenance.
pub type Maint<C> = XScale<C>;

/// The maintenance over `cp15`, cleaning by line allocation in the kernel's clean region.
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
    // SAFETY: CLEAN is in the kernel's cacheable write-back linear map
    // (above 32 MiB) in every address space, and nothing else reads or
    // writes it; its size is twice the 32 KiB D-cache.
    unsafe { XScale::new(cp15, region) }
}

/// Cleans the D-cache line holding `mva` (a just-written descriptor), no drain.
#[inline(always)]
pub fn clean_dcache_entry<C: Cp15>(m: &mut Maint<C>, mva: ModifiedVirtAddr) {
    m.clean_dcache_line(mva);
}

/// The FFUART (transmit only, polled).
pub mod uart {
    use super::device;

    const BASE: u32 = device(0x4010_0000);
    const THR: u32 = 0x00;
    const LSR: u32 = 0x14;
    /// LSR: transmit holding register empty.
    const THRE: u32 = 1 << 5;

    /// Nothing to set up: QEMU's 16550 model transmits from reset.
    pub fn init() {}

    /// Writes `bytes`, waiting while the transmit holding register is full.
    pub fn write(bytes: &[u8]) {
        for &b in bytes {
            // SAFETY: the UART is mapped as device memory at BASE for the
            // kernel's whole life; LSR and THR have no effect beyond it.
            unsafe {
                while core::ptr::read_volatile((BASE + LSR) as *const u32) & THRE == 0 {}
                core::ptr::write_volatile((BASE + THR) as *mut u32, u32::from(b));
            }
        }
    }
}

ostimer::os_timer_module!("PXA255", 0x40A0_0000, 0x40D0_0000);
