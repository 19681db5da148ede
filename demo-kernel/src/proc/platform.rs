//! The [`fass::Platform`] the process subsystem runs on: the real CP15
//! wrapped in a counter of the maintenance it performs ([`CountingCp15`]),
//! the board CPU's maintenance over it ([`crate::board::Maint`]), and the kernel's table pool.
//!
//! The counters are what the scenarios report as "cache flushes" and "TLB
//! invalidations": they count what reached the coprocessor, whichever
//! strategy (or the kernel itself) asked for it.

use crate::global::Global;

use mmu_armv5::maint::{LineOp, LineRange};
use mmu_armv5::regs::{Cp15, Cp15Op, Cp15Reg, HwCp15};
use mmu_armv5::table::TablePool;

use crate::board::Maint;
use crate::mmu::POOL_BLOCKS;

/// What reached CP15 through the platform since boot (the kernel's lean
/// FASS switches write the DACR and FCSEIDR directly and are counted by the
/// kernel: `Counters::lean_switches`).
#[derive(Clone, Copy, Default, PartialEq, Eq, defmt::Format)]
pub struct HwCounts {
    /// Whole D-cache clean+invalidate passes completed (test-and-clean loops
    /// ending clean, or flush-region cleans started: [`note_dcache_flush`]).
    pub dcache_flushes: u32,
    /// Whole I-cache invalidations.
    pub icache_flushes: u32,
    /// Whole-TLB invalidations.
    pub tlb_flushes: u32,
    /// Single TLB entry invalidations.
    pub tlb_entries: u32,
    /// DACR writes.
    pub dacr_writes: u32,
    /// TTBR writes.
    pub ttbr_writes: u32,
    /// FCSEIDR writes.
    pub pid_writes: u32,
}

impl HwCounts {
    /// Counter-wise `self - earlier`.
    pub fn since(&self, e: &HwCounts) -> HwCounts {
        HwCounts {
            dcache_flushes: self.dcache_flushes.wrapping_sub(e.dcache_flushes),
            icache_flushes: self.icache_flushes.wrapping_sub(e.icache_flushes),
            tlb_flushes: self.tlb_flushes.wrapping_sub(e.tlb_flushes),
            tlb_entries: self.tlb_entries.wrapping_sub(e.tlb_entries),
            dacr_writes: self.dacr_writes.wrapping_sub(e.dacr_writes),
            ttbr_writes: self.ttbr_writes.wrapping_sub(e.ttbr_writes),
            pid_writes: self.pid_writes.wrapping_sub(e.pid_writes),
        }
    }
}

static COUNTS: Global<HwCounts> = Global::new(HwCounts {
    dcache_flushes: 0,
    icache_flushes: 0,
    tlb_flushes: 0,
    tlb_entries: 0,
    dacr_writes: 0,
    ttbr_writes: 0,
    pid_writes: 0,
});

fn bump(f: impl FnOnce(&mut HwCounts)) {
    // SAFETY: single core, never re-entered (IRQs masked in the kernel);
    // `f` only counts.
    unsafe { COUNTS.with(f) };
}

/// Counts one whole D-cache clean+invalidate done without test-and-clean
/// (the flush-region cleans of the SA-1110 and the XScale, reported by the
/// board when it starts one).
pub fn note_dcache_flush() {
    bump(|c| c.dcache_flushes += 1);
}

/// The counters so far.
pub fn counts() -> HwCounts {
    // SAFETY: as in `bump`; a copy.
    unsafe { COUNTS.get() }
}

/// The real CP15 (`C`: the kernel's [`HwCp15`] owner or a borrow of it),
/// counting maintenance and context registers.
pub struct CountingCp15<C = HwCp15>(C);

impl<C: Cp15> Cp15 for CountingCp15<C> {
    fn read(&self, reg: Cp15Reg) -> u32 {
        self.0.read(reg)
    }

    unsafe fn write(&mut self, reg: Cp15Reg, value: u32) {
        bump(|c| match reg {
            Cp15Reg::Dacr => c.dacr_writes += 1,
            Cp15Reg::Ttbr => c.ttbr_writes += 1,
            Cp15Reg::Fcseidr => c.pid_writes += 1,
            _ => {}
        });
        // SAFETY: the caller upholds `Cp15::write`'s contract.
        unsafe { self.0.write(reg, value) }
    }

    unsafe fn op(&mut self, op: Cp15Op, value: u32) {
        if crate::marker::tlb_omitted_now()
            && matches!(
                op,
                Cp15Op::InvalidateTlb
                    | Cp15Op::InvalidateTlbEntry
                    | Cp15Op::InvalidateITlb
                    | Cp15Op::InvalidateITlbEntry
                    | Cp15Op::InvalidateDTlb
                    | Cp15Op::InvalidateDTlbEntry
            )
        {
            return;
        }
        if crate::board::starts_dcache_clean(op, value) {
            note_dcache_flush();
        }
        bump(|c| match op {
            Cp15Op::InvalidateTlb => c.tlb_flushes += 1,
            Cp15Op::InvalidateTlbEntry => c.tlb_entries += 1,
            Cp15Op::InvalidateICache | Cp15Op::InvalidateIdCache => c.icache_flushes += 1,
            _ => {}
        });
        // SAFETY: as for `write`.
        unsafe { self.0.op(op, value) };
        if let Some(va) = qemu_tlb_alias(&self.0, op, value) {
            // SAFETY: a TLB entry invalidation only drops a cached
            // translation (as for `write`).
            unsafe { self.0.op(op, va) };
        }
    }

    /// Straight to the hardware's unrolled loop (line operations are not
    /// counted, as in [`CountingCp15::op`]).
    #[inline(always)]
    unsafe fn op_lines(&mut self, op: LineOp, range: LineRange) {
        // SAFETY: as for `write`.
        unsafe { self.0.op_lines(op, range) }
    }

    fn test_clean_invalidate_dcache(&mut self) -> bool {
        let clean = self.0.test_clean_invalidate_dcache();
        if clean {
            bump(|c| c.dcache_flushes += 1);
        }
        clean
    }

    fn test_clean_dcache(&mut self) -> bool {
        self.0.test_clean_dcache()
    }
}

/// The address QEMU keys the TLB entry of `value` by, when that is not
/// `value` itself: for a single-entry TLB invalidation (`op`) of a
/// modified virtual address in the current FCSE PID's 32 MiB slot, the
/// unrelocated virtual address below 32 MiB.
///
/// ARM926EJ-S, SA-1110 and PXA255 tag TLB entries with the MVA, so
/// invalidating the MVA is what the ARM ARM asks. QEMU's TLB instead holds
/// translations of the VA before the FCSE relocation (it flushes the
/// whole TLB whenever FCSEIDR changes, see `fcse_write` in QEMU's
/// `target/arm/helper.c`) and invalidates by MVA at the MVA as given:
/// the entry of the current process's page at `va` (MVA `va + pid * 32
/// MiB`) survives. The second invalidation at the VA removes it; on real
/// hardware it drops at most an entry of PID 0's slot, which is only a
/// refill later.
fn qemu_tlb_alias(cp15: &impl Cp15, op: Cp15Op, value: u32) -> Option<u32> {
    if !matches!(
        op,
        Cp15Op::InvalidateTlbEntry | Cp15Op::InvalidateDTlbEntry | Cp15Op::InvalidateITlbEntry
    ) {
        return None;
    }
    let pid = cp15.read(Cp15Reg::Fcseidr) >> 25;
    (pid != 0 && value >> 25 == pid).then_some(value & 0x01FF_FFFF)
}

/// Invalidates the TLB entry of `mva` through `cp15`, counted, with the
/// emulator's alias ([`qemu_tlb_alias`]): for the kernel's own maintenance
/// outside a strategy.
pub fn invalidate_tlb_entry_on(cp15: &mut HwCp15, mva: mmu_armv5::ModifiedVirtAddr) {
    mmu_armv5::maint::CacheMaintenance::invalidate_tlb_entry(&mut counting_on(cp15), mva);
}

/// The board CPU's maintenance over `cp15` (the kernel's handle, by value
/// or borrowed), counted.
pub fn counting_on<C: Cp15>(cp15: C) -> Maint<CountingCp15<C>> {
    crate::board::maint(CountingCp15(cp15))
}

/// The platform every strategy operation runs on.
pub type Sys<'a> = fass::Split<Maint<CountingCp15>, &'a mut TablePool<'static, POOL_BLOCKS>>;

/// Runs `f` on the platform: the kernel's table pool and `cp15`, counted.
pub fn with_sys<R>(cp15: &mut HwCp15, f: impl FnOnce(&mut Sys<'_>) -> R) -> R {
    let _ = cp15; // borrowed for the call: the stand-in below replaces it
                  // SAFETY: a by-value stand-in for `cp15`, which this call borrows
                  // mutably: it lives only in `sys`, dropped before the call returns, so
                  // the owner and it are never used at once. (Zero-sized, unlike the
                  // borrow, it keeps a pointer out of the platform: `&mut HwCp15` here
                  // measured 3 more instructions per flushing fault, `kind=fault_flush`.)
    let stand_in = unsafe { HwCp15::new() };
    crate::mmu::with_tables(|_, pool| {
        let mut sys = fass::Split::new(crate::board::maint(CountingCp15(stand_in)), pool);
        f(&mut sys)
    })
}
