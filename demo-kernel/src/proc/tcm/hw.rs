//! This CPU as `spm` drives it: [`Hw`] is the CPU side of `spm`'s traits
//! ([`PhysMemory`], [`LineMaintenance`], [`CacheMaintenance`], [`Cp15`]),
//! with physical copies through the kernel's uncached windows (the TCM
//! read/write view at [`KTCM_RW_VA`], all RAM at [`PHYS_WINDOW`]); plus the
//! descriptor line clean and write-buffer drain `spm`'s mapping callbacks
//! (`super::maps`) use.

use core::marker::PhantomData;
use mmu_armv5::maint::{CacheMaintenance, LineOp, LineRange, RangeMaintenance};
use mmu_armv5::regs::{Cp15, Cp15Op, Cp15Reg, HwCp15};
use mmu_armv5::{ModifiedVirtAddr, PhysAddr};
use spm::{LineMaintenance, PhysMemory};

use super::maps::RINDEX;
use super::{KTCM_RW_VA, MAX_BANK_SIZE, PHYS_WINDOW};
use crate::board::Maint;
use crate::proc::platform::{counting_on, CountingCp15};

/// Cleans the D-cache line holding the descriptor at `p` (no drain), so
/// the table walker sees it.
#[inline(always)]
pub(super) fn clean_line(p: *mut u32) {
    // SAFETY: called by `spm`'s mapping callbacks in a TCM call or job of
    // the installed kernel, whose `Hw` holds the kernel's handle and is not
    // in use meanwhile (`kernel::trap_cp15`); dropped on return.
    let mut m = crate::board::maint(unsafe { crate::proc::kernel::trap_cp15() });
    crate::board::clean_dcache_entry(&mut m, ModifiedVirtAddr::new(p as u32));
}

/// Drains the write buffer.
#[inline(always)]
pub(super) fn drain() {
    // SAFETY: as in `clean_line`.
    crate::board::maint(unsafe { crate::proc::kernel::trap_cp15() }).drain_write_buffer();
}

/// The platform `spm` drives: the counting CP15, ARM926 maintenance, and
/// physical copies through the uncached windows; for as long as it lives
/// it borrows the kernel's CP15 handle mutably and stands in for it.
pub(super) struct Hw<'c>(Maint<CountingCp15>, PhantomData<&'c mut HwCp15>);

impl<'c> Hw<'c> {
    /// The hardware, over the kernel's CP15 handle `cp15`.
    pub(super) fn new(cp15: &'c mut HwCp15) -> Hw<'c> {
        let _ = cp15; // held by the lifetime
                      // SAFETY: a zero-sized stand-in for `cp15`, which the returned
                      // value borrows mutably for as long as it holds the stand-in:
                      // the two are never used at once.
        let c = unsafe { HwCp15::new() };
        Hw(counting_on(c), PhantomData)
    }
}

/// The kernel's uncached read/write view of physical address `pa`: the TCM
/// window for a bank's frames, else the RAM window.
fn window(pa: u32) -> *mut u32 {
    // SAFETY: `RINDEX`'s contract: the only reference, for this block.
    for (k, &(base, size)) in unsafe { RINDEX.get_mut() }.banks.iter().enumerate() {
        let off = pa.wrapping_sub(base);
        if off < size {
            return (KTCM_RW_VA + k as u32 * MAX_BANK_SIZE + off) as *mut u32;
        }
    }
    (PHYS_WINDOW + pa.wrapping_sub(crate::board::LAYOUT.ram_phys)) as *mut u32
}

/// `$pairs` copies of an eight-word `LDMIA`/`STMIA` pair (32 bytes), as one
/// assembler string. Written out rather than with `.rept`: LLVM sizes
/// inline assembly by its statements, and an unexpanded `.rept` makes it
/// misplace literal pools (out-of-range fixups).
macro_rules! ldm_stm {
    (1) => {
        concat!(
            "ldmia {s}!, {{r3, r4, r5, r7, r8, r9, r10, r12}}\n",
            "stmia {d}!, {{r3, r4, r5, r7, r8, r9, r10, r12}}\n"
        )
    };
    (2) => {
        concat!(ldm_stm!(1), ldm_stm!(1))
    };
    (4) => {
        concat!(ldm_stm!(2), ldm_stm!(2))
    };
    (8) => {
        concat!(ldm_stm!(4), ldm_stm!(4))
    };
    (16) => {
        concat!(ldm_stm!(8), ldm_stm!(8))
    };
    (32) => {
        concat!(ldm_stm!(16), ldm_stm!(16))
    };
}

/// Copies `len` bytes from `s` to `d` (word-aligned pointers into the
/// kernel's uncached windows), `$pairs` eight-word `LDM`/`STM` pairs per
/// loop iteration; `len` is a non-zero multiple of `$pairs * 32`.
macro_rules! copy_loop {
    ($s:ident, $d:ident, $len:ident, $pairs:tt) => {
        // SAFETY: `spm` passes frame-internal ranges of described RAM or
        // TCM; both windows are uncached kernel read/write mappings, the
        // pointers word aligned and `$len` a non-zero multiple of the bytes
        // per iteration; only the named registers are changed.
        unsafe {
            core::arch::asm!(
                "2:",
                ldm_stm!($pairs),
                "cmp {s}, {end}",
                "bne 2b",
                s = inout(reg) $s => _,
                d = inout(reg) $d => _,
                end = in(reg) ($s as u32).wrapping_add($len),
                out("r3") _, out("r4") _, out("r5") _, out("r7") _,
                out("r8") _, out("r9") _, out("r10") _, out("r12") _,
                options(nostack)
            )
        }
    };
}

impl PhysMemory for Hw<'_> {
    fn copy(&mut self, dst: PhysAddr, src: PhysAddr, len: u32) {
        let (d, s) = (window(dst.as_u32()), window(src.as_u32()));
        // A 4 KiB chunk (the kernel's `CHUNK`) is four iterations of 32
        // pairs: 256 `LDM`/`STM` and 8 loop instructions (with 8 pairs per
        // iteration the loop was 32 of 288). 256 bytes of code.
        if len == 0 {
        } else if len.is_multiple_of(1024) {
            copy_loop!(s, d, len, 32);
        } else if len.is_multiple_of(256) {
            copy_loop!(s, d, len, 8);
        } else if len.is_multiple_of(128) {
            copy_loop!(s, d, len, 4);
        } else if len.is_multiple_of(64) {
            copy_loop!(s, d, len, 2);
        } else {
            for i in 0..(len / 4) as usize {
                // SAFETY: `spm` passes frame-internal ranges of described RAM
                // or TCM; both windows are uncached kernel read/write mappings.
                unsafe { d.add(i).write_volatile(s.add(i).read_volatile()) };
            }
        }
    }

    fn zero(&mut self, dst: PhysAddr, len: u32) {
        let d = window(dst.as_u32());
        for i in 0..(len / 4) as usize {
            // SAFETY: as in `copy`.
            unsafe { d.add(i).write_volatile(0) };
        }
    }
}

/// `[mva, mva + len)` as whole lines.
#[inline(always)]
fn lines(mva: ModifiedVirtAddr, len: u32) -> LineRange {
    // SAFETY: `mva` is line aligned and `len` a multiple of the line in
    // every call `spm` makes, and no range crosses a 4 KiB frame
    // (`LineMaintenance`'s promise), so the range is whole lines below 4 GiB.
    unsafe { LineRange::new_unchecked(mva, len) }
}

/// One unrolled `MCR` loop per range (`mmu_armv5`'s [`RangeMaintenance`]
/// for the ARM926EJ-S: sixteen lines per loop iteration for a 4 KiB chunk).
impl LineMaintenance for Hw<'_> {
    fn clean_dcache_lines(&mut self, mva: ModifiedVirtAddr, len: u32) {
        self.0.clean_dcache_lines(lines(mva, len));
    }

    unsafe fn invalidate_dcache_lines(&mut self, mva: ModifiedVirtAddr, len: u32) {
        // SAFETY: forwarded; the caller upholds the contract for the range.
        unsafe { self.0.invalidate_dcache_lines(lines(mva, len)) };
    }

    /// Cleans and invalidates the range's D-cache lines one by one, and
    /// invalidates the whole I-cache with one `MCR` instead of each of the
    /// range's I-cache lines (the trait allows more than the range).
    ///
    /// Trade-off: per line, a 4 KiB page is 128 more `MCR`s and `ADD`s in
    /// every flush of every cacheable mapping; the whole invalidate costs
    /// one instruction, and afterwards every process refills the I-cache
    /// lines it still needs (at most the I-cache's size, 4 KiB on QEMU's
    /// ARM926, 4-128 KiB on silicon), once, spread over its next fetches
    /// and never inside a masked window. Exchanges are rare next to
    /// instruction fetches, so the refills cost less than the `MCR` loop
    /// for I-caches up to a few times the page size; a kernel with a large
    /// I-cache and frequent exchanges would go back to the line loop.
    fn flush_lines(&mut self, mva: ModifiedVirtAddr, len: u32) {
        self.0.clean_invalidate_dcache_lines(lines(mva, len));
        // The whole I-cache in one operation (counted with the strategies'
        // I-cache invalidations, so `RESULT iflush` stays exact).
        self.0.invalidate_icache();
    }
}

impl CacheMaintenance for Hw<'_> {
    const DCACHE_LINE: u32 = <Maint<CountingCp15> as CacheMaintenance>::DCACHE_LINE;
    fn clean_invalidate_dcache(&mut self) {
        self.0.clean_invalidate_dcache()
    }
    fn invalidate_icache(&mut self) {
        self.0.invalidate_icache()
    }
    fn clean_dcache_line(&mut self, mva: ModifiedVirtAddr) {
        self.0.clean_dcache_line(mva)
    }
    fn clean_invalidate_dcache_line(&mut self, mva: ModifiedVirtAddr) {
        self.0.clean_invalidate_dcache_line(mva)
    }
    unsafe fn invalidate_dcache_line(&mut self, mva: ModifiedVirtAddr) {
        // SAFETY: forwarded; the caller upholds the contract.
        unsafe { self.0.invalidate_dcache_line(mva) }
    }
    fn invalidate_icache_line(&mut self, mva: ModifiedVirtAddr) {
        self.0.invalidate_icache_line(mva)
    }
    fn drain_write_buffer(&mut self) {
        self.0.drain_write_buffer()
    }
    fn invalidate_tlb(&mut self) {
        self.0.invalidate_tlb()
    }
    /// One `MCR`, counted in the platform's `tlb_entries` like every other
    /// TLB entry invalidation (the kernel's reported counters are exact).
    #[inline(always)]
    fn invalidate_tlb_entry(&mut self, mva: ModifiedVirtAddr) {
        self.0.invalidate_tlb_entry(mva)
    }
}

impl Cp15 for Hw<'_> {
    fn read(&self, reg: Cp15Reg) -> u32 {
        self.0.read(reg)
    }
    unsafe fn write(&mut self, reg: Cp15Reg, value: u32) {
        // SAFETY: forwarded; the caller upholds the contract.
        unsafe { self.0.write(reg, value) }
    }
    unsafe fn op(&mut self, op: Cp15Op, value: u32) {
        // SAFETY: forwarded; the caller upholds the contract.
        unsafe { self.0.op(op, value) }
    }
    unsafe fn op_lines(&mut self, op: LineOp, range: LineRange) {
        // SAFETY: forwarded; the caller upholds the contract.
        unsafe { self.0.op_lines(op, range) }
    }
    fn test_clean_invalidate_dcache(&mut self) -> bool {
        self.0.test_clean_invalidate_dcache()
    }
    fn test_clean_dcache(&mut self) -> bool {
        self.0.test_clean_dcache()
    }
}
