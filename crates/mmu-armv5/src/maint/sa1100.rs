//! StrongARM SA-1100/SA-1110 cache, write-buffer and TLB maintenance.
//!
//! The SA-1100 has neither test-and-clean nor line allocation: the whole
//! D-cache is cleaned by *reading* one cache size (8 KiB) of a reserved
//! [`CleanRegion`], one word per line, which evicts (writing back) every
//! line; successive cleans alternate between the region's halves, and the
//! write buffer is drained afterwards (Linux's `v4wb` scheme). The reads go
//! through a [`FlushRead`], so the sequence is testable on the host. If the
//! kernel maps anything mini-data-cacheable, a second, 512-byte region for
//! the mini-cache can be given with [`Sa1100::with_minicache`].
//!
//! Missing operations are widened, never narrowed: "clean and invalidate D
//! line" is clean (`c7, c10, 1`) then invalidate (`c7, c6, 1`), with IRQ and
//! FIQ masked in between (see [`crate::irq`]); "invalidate
//! I line" invalidates the whole I-cache; "invalidate TLB entry" invalidates
//! the D-TLB entry (`c8, c6, 1`) and the whole I-TLB (`c8, c5, 0`).

use super::clean_region::CleanRegion;
use crate::addr::ModifiedVirtAddr;
use crate::maint::CacheMaintenance;
use crate::regs::{Cp15, Cp15Op};

/// Performs the memory reads that clean an SA-1100 D-cache.
pub trait FlushRead {
    /// Reads (and discards) the word at `mva`, through the D-cache.
    fn read_line(&mut self, mva: ModifiedVirtAddr);
}

impl<F: FnMut(ModifiedVirtAddr)> FlushRead for F {
    #[inline]
    fn read_line(&mut self, mva: ModifiedVirtAddr) {
        self(mva)
    }
}

/// A [`FlushRead`] doing real volatile loads: for the kernel on hardware.
#[derive(Debug)]
pub struct VolatileFlushRead {
    _private: (),
}

impl VolatileFlushRead {
    /// The real thing.
    ///
    /// # Safety
    /// Every address later passed to [`FlushRead::read_line`] is mapped
    /// readable in the current address space with FCSE relocation not
    /// applying (at or above 32 MiB), so the load cannot fault.
    #[inline]
    #[must_use]
    pub const unsafe fn new() -> VolatileFlushRead {
        VolatileFlushRead { _private: () }
    }
}

impl FlushRead for VolatileFlushRead {
    #[inline]
    fn read_line(&mut self, mva: ModifiedVirtAddr) {
        let p = mva.as_u32() as usize as *const u32;
        // SAFETY: the constructor's contract makes every flush address mapped
        // and readable; the value is discarded, only the cache fill matters.
        let _ = unsafe { core::ptr::read_volatile(p) };
    }
}

/// SA-1100/SA-1110 maintenance over a [`Cp15`] backend and a flush region.
///
/// Also implements [`Cp15`] by delegation.
#[derive(Debug)]
pub struct Sa1100<C: Cp15, R: FlushRead> {
    cp15: C,
    reader: R,
    region: CleanRegion,
    minicache: Option<CleanRegion>,
    next_half: u32,
}

impl<C: Cp15, R: FlushRead> Sa1100<C, R> {
    /// D-cache line length: 32 bytes.
    pub const LINE: u32 = 32;

    /// Wraps a backend, the reader and the flush region.
    ///
    /// # Safety
    /// For as long as this value is used, both halves of `region` are mapped
    /// cacheable (write-back) at those MVAs and `reader` can read them; no
    /// one writes there, so reading it never makes a line dirty.
    /// `region.cache_size()` is at least the D-cache size (8 KiB).
    #[inline]
    pub const unsafe fn new(cp15: C, reader: R, region: CleanRegion) -> Sa1100<C, R> {
        Sa1100 {
            cp15,
            reader,
            region,
            minicache: None,
            next_half: 0,
        }
    }

    /// Also cleans the mini-data cache by reading the first half of `region`
    /// (whose cache size is the mini-cache's, 512 bytes).
    ///
    /// # Safety
    /// As for [`Sa1100::new`], and `region` is mapped mini-data-cacheable.
    #[inline]
    #[must_use]
    pub const unsafe fn with_minicache(mut self, region: CleanRegion) -> Sa1100<C, R> {
        self.minicache = Some(region);
        self
    }

    /// The backend.
    #[inline]
    pub const fn cp15(&self) -> &C {
        &self.cp15
    }

    /// The backend, mutably.
    #[inline]
    pub fn cp15_mut(&mut self) -> &mut C {
        &mut self.cp15
    }

    /// The flush reader.
    #[inline]
    pub const fn reader(&self) -> &R {
        &self.reader
    }

    /// Unwraps the backend and the reader.
    #[inline]
    pub fn into_parts(self) -> (C, R) {
        (self.cp15, self.reader)
    }

    #[inline]
    fn line(mva: ModifiedVirtAddr) -> u32 {
        mva.as_u32() & !(Self::LINE - 1)
    }

    #[inline]
    fn safe_op(&mut self, op: Cp15Op, value: u32) {
        // SAFETY: callers pass only operations that lose no data (clean,
        // I-cache and TLB invalidation, drain), or a D-line invalidate right
        // after cleaning that same line.
        unsafe { self.cp15.op(op, value) }
    }

    fn read_block(&mut self, start: u32, len: u32) {
        let mut off = 0;
        while off < len {
            self.reader.read_line(ModifiedVirtAddr::new(start + off));
            off += Self::LINE;
        }
    }
}

impl<C: Cp15, R: FlushRead> CacheMaintenance for Sa1100<C, R> {
    const DCACHE_LINE: u32 = 32;

    fn clean_invalidate_dcache(&mut self) {
        let start = self.region.half(self.next_half).as_u32();
        self.next_half ^= 1;
        self.read_block(start, self.region.cache_size());
        if let Some(mini) = self.minicache {
            self.read_block(mini.base().as_u32(), mini.cache_size());
        }
        self.drain_write_buffer();
        // No CP15 operation did the clean: claim it to the cache check.
        super::note(
            crate::marker::Key::Event(crate::marker::Event::AssertClean),
            0,
        );
    }

    #[inline]
    fn invalidate_icache(&mut self) {
        self.safe_op(Cp15Op::InvalidateICache, 0);
    }

    #[inline]
    fn clean_dcache_line(&mut self, mva: ModifiedVirtAddr) {
        self.safe_op(Cp15Op::CleanDCacheLine, Self::line(mva));
    }

    #[inline]
    fn clean_invalidate_dcache_line(&mut self, mva: ModifiedVirtAddr) {
        let l = Self::line(mva);
        // Interrupts masked: a handler writing the line between the clean
        // and the invalidate would lose that write.
        crate::irq::without_interrupts(|| {
            self.safe_op(Cp15Op::CleanDCacheLine, l);
            self.safe_op(Cp15Op::InvalidateDCacheLine, l);
        });
    }

    #[inline]
    unsafe fn invalidate_dcache_line(&mut self, mva: ModifiedVirtAddr) {
        // SAFETY: the caller guarantees the line holds no data it needs.
        unsafe { self.cp15.op(Cp15Op::InvalidateDCacheLine, Self::line(mva)) }
    }

    #[inline]
    fn invalidate_icache_line(&mut self, _mva: ModifiedVirtAddr) {
        // No single-line I-cache operation on the SA-1100.
        self.safe_op(Cp15Op::InvalidateICache, 0);
    }

    #[inline]
    fn drain_write_buffer(&mut self) {
        self.safe_op(Cp15Op::DrainWriteBuffer, 0);
    }

    #[inline]
    fn invalidate_tlb(&mut self) {
        self.safe_op(Cp15Op::InvalidateTlb, 0);
    }

    #[inline]
    fn invalidate_tlb_entry(&mut self, mva: ModifiedVirtAddr) {
        self.safe_op(Cp15Op::InvalidateDTlbEntry, mva.as_u32() & !0x3ff);
        self.safe_op(Cp15Op::InvalidateITlb, 0);
    }
}

delegate_cp15!([C: Cp15, R: FlushRead] Sa1100<C, R>, cp15);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::regs::Cp15Reg;
    use crate::regs::{Cp15Event, MockCp15};
    use std::vec::Vec;

    #[derive(Default)]
    struct Recorder(Vec<u32>);

    impl FlushRead for Recorder {
        fn read_line(&mut self, mva: ModifiedVirtAddr) {
            self.0.push(mva.as_u32());
        }
    }

    fn sa(size: u32) -> Sa1100<MockCp15, Recorder> {
        let r = CleanRegion::new(ModifiedVirtAddr::new(0xE000_0000), size, 32).unwrap();
        // SAFETY: mock backend and recording reader; nothing is read.
        unsafe { Sa1100::new(MockCp15::sa1110(), Recorder::default(), r) }
    }

    #[test]
    fn whole_clean_reads_one_cache_size_alternating_halves_then_drains() {
        let mut h = sa(8 * 1024);
        h.clean_invalidate_dcache();
        h.clean_invalidate_dcache();
        let (m, r) = h.into_parts();
        let first: Vec<u32> = (0..256).map(|i| 0xE000_0000 + 32 * i).collect();
        let second: Vec<u32> = (0..256).map(|i| 0xE000_2000 + 32 * i).collect();
        assert_eq!(r.0.len(), 512);
        assert_eq!(&r.0[..256], first.as_slice());
        assert_eq!(&r.0[256..], second.as_slice());
        // Only drains reach CP15: no test-and-clean (undefined on SA-1100), no invalidate.
        assert_eq!(
            m.events(),
            &[
                Cp15Event::Op(Cp15Op::DrainWriteBuffer, 0),
                Cp15Event::Op(Cp15Op::DrainWriteBuffer, 0)
            ]
        );
    }

    #[test]
    fn minicache_is_read_after_the_main_cache() {
        let mini = CleanRegion::new(ModifiedVirtAddr::new(0xE100_0000), 512, 32).unwrap();
        // SAFETY: mock backend and recording reader.
        let mut h = unsafe { sa(256).with_minicache(mini) };
        h.clean_invalidate_dcache();
        let r = &h.reader().0;
        assert_eq!(r.len(), 8 + 16);
        assert_eq!(r[7], 0xE000_00E0);
        assert_eq!(r[8], 0xE100_0000);
        assert_eq!(r[23], 0xE100_01E0);
    }

    #[test]
    fn closures_are_readers() {
        let mut n = 0u32;
        let r = CleanRegion::new(ModifiedVirtAddr::new(0xE000_0000), 256, 32).unwrap();
        // SAFETY: mock backend; the closure reads nothing.
        let mut h = unsafe { Sa1100::new(MockCp15::sa1110(), |_| n += 1, r) };
        h.clean_invalidate_dcache();
        drop(h);
        assert_eq!(n, 8);
    }

    #[test]
    fn missing_operations_are_widened() {
        let mut h = sa(256);
        h.clean_invalidate_dcache_line(ModifiedVirtAddr::new(0x1234));
        h.invalidate_icache_line(ModifiedVirtAddr::new(0x8000));
        h.invalidate_tlb_entry(ModifiedVirtAddr::new(0xC000_17FF));
        assert_eq!(
            h.cp15().events(),
            &[
                Cp15Event::Op(Cp15Op::CleanDCacheLine, 0x1220),
                Cp15Event::Op(Cp15Op::InvalidateDCacheLine, 0x1220),
                Cp15Event::Op(Cp15Op::InvalidateICache, 0),
                Cp15Event::Op(Cp15Op::InvalidateDTlbEntry, 0xC000_1400),
                Cp15Event::Op(Cp15Op::InvalidateITlb, 0),
            ]
        );
        assert_eq!(h.read(Cp15Reg::Midr), 0x6901_b119);
    }
}
