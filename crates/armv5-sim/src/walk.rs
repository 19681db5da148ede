//! The hardware table walk, written from the ARM Architecture Reference
//! Manual (ARMv5, DDI 0100, "Memory Management Unit": translation of
//! sections, coarse and fine tables, large, small and tiny pages).
//!
//! This walk is deliberately independent of `mmu_armv5::translate`: it reads
//! raw descriptor words from physical memory (the backing store, not the
//! D-cache, as the ARM926EJ-S walker does) and decodes the bits itself, so the
//! two can be checked against each other. It shares only `mmu_armv5`'s
//! vocabulary (page sizes as [`PageSizeKind`], domains, faults), whose
//! values that crate's own tests pin.
//!
//! The walk only finds a mapping or a translation fault. Domain and
//! permission checks happen on every access, against the current DACR and
//! SCTLR, in [`crate::protection`]: a TLB entry keeps its domain and AP bits,
//! so a DACR change takes effect without a TLB flush, as on hardware.

use crate::memory::PhysMemory;
use mmu_armv5::size::PageSizeKind;
use mmu_armv5::{Domain, Fault, FaultKind, FaultLevel};

/// A translation found by the walk: what a TLB entry holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TlbEntry {
    /// First MVA covered (aligned to `size`).
    pub mva_base: u32,
    /// Size covered.
    pub size: PageSizeKind,
    /// Physical base (aligned to `size`).
    pub pa_base: u32,
    /// The four access-permission fields, AP0 in bits \[1:0\] .. AP3 in bits
    /// \[7:6\]. Sections and tiny pages have one AP, copied to all four.
    pub aps: u8,
    /// The domain, from the first-level descriptor.
    pub domain: Domain,
    /// The C (cacheable) bit.
    pub cacheable: bool,
    /// The B (bufferable) bit.
    pub bufferable: bool,
}

impl TlbEntry {
    /// Whether the mapping covers `mva`.
    #[inline]
    #[must_use]
    pub const fn covers(&self, mva: u32) -> bool {
        mva & !(self.size.size() - 1) == self.mva_base
    }

    /// The physical address of `mva` (which the mapping covers).
    #[inline]
    #[must_use]
    pub const fn pa(&self, mva: u32) -> u32 {
        self.pa_base | (mva & (self.size.size() - 1))
    }

    /// The AP field that governs `mva`: for large pages `MVA[15:14]`
    /// selects AP0..AP3, for small pages `MVA[11:10]`.
    #[inline]
    #[must_use]
    pub const fn ap(&self, mva: u32) -> u8 {
        let sub = match self.size {
            PageSizeKind::Large => (mva >> 14) & 3,
            PageSizeKind::Small => (mva >> 10) & 3,
            _ => 0,
        };
        (self.aps >> (2 * sub)) & 3
    }
}

/// The result of one walk and what it cost.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Walk {
    /// The mapping, or the translation (or walk external-abort) fault.
    pub(crate) result: Result<TlbEntry, Fault>,
    /// Descriptor words read (1 or 2).
    pub(crate) reads: u32,
    /// Sum of the latencies of the regions read.
    pub(crate) bus_cycles: u64,
}

/// Walks the tables at translation table base `ttbr` for `mva`.
///
/// Faults: an invalid first-level descriptor gives a section translation
/// fault; an invalid second-level descriptor (or type `0b11` in a coarse
/// table, UNPREDICTABLE on ARMv5, a page translation fault in QEMU) gives a
/// page translation fault with the first-level descriptor's domain. A
/// descriptor address outside every region gives a translation external
/// abort at that level.
#[must_use]
pub(crate) fn walk(mem: &PhysMemory, ttbr: u32, mva: u32) -> Walk {
    let mut w = Walk {
        result: Err(Fault::without_domain(FaultKind::Translation(
            FaultLevel::Section,
        ))),
        reads: 0,
        bus_cycles: 0,
    };
    let l1_addr = (ttbr & 0xFFFF_C000) | ((mva >> 20) << 2);
    let Some(l1) = read(mem, l1_addr, &mut w) else {
        w.result = Err(Fault::without_domain(FaultKind::TranslationExternalAbort(
            FaultLevel::Section,
        )));
        return w;
    };
    let domain = Domain::from_low_bits(l1 >> 5);
    let (l2_addr, fine) = match l1 & 3 {
        0b00 => return w,
        0b10 => {
            let aps = ((l1 >> 10) & 3) as u8;
            w.result = Ok(TlbEntry {
                mva_base: mva & 0xFFF0_0000,
                size: PageSizeKind::Section,
                pa_base: l1 & 0xFFF0_0000,
                aps: aps * 0b0101_0101,
                domain,
                cacheable: l1 & 8 != 0,
                bufferable: l1 & 4 != 0,
            });
            return w;
        }
        0b01 => ((l1 & 0xFFFF_FC00) | ((mva >> 10) & 0x3FC), false),
        _ => ((l1 & 0xFFFF_F000) | ((mva >> 8) & 0xFFC), true),
    };
    let Some(l2) = read(mem, l2_addr, &mut w) else {
        w.result = Err(Fault::new(
            FaultKind::TranslationExternalAbort(FaultLevel::Page),
            domain,
        ));
        return w;
    };
    let cacheable = l2 & 8 != 0;
    let bufferable = l2 & 4 != 0;
    let (size, pa_base, aps) = match l2 & 3 {
        0b01 => (PageSizeKind::Large, l2 & 0xFFFF_0000, (l2 >> 4) as u8),
        0b10 => (PageSizeKind::Small, l2 & 0xFFFF_F000, (l2 >> 4) as u8),
        0b11 if fine => (
            PageSizeKind::Tiny,
            l2 & 0xFFFF_FC00,
            ((l2 >> 4) & 3) as u8 * 0b0101_0101,
        ),
        _ => {
            w.result = Err(Fault::new(FaultKind::Translation(FaultLevel::Page), domain));
            return w;
        }
    };
    w.result = Ok(TlbEntry {
        mva_base: mva & !(size.size() - 1),
        size,
        pa_base,
        aps,
        domain,
        cacheable,
        bufferable,
    });
    w
}

fn read(mem: &PhysMemory, pa: u32, w: &mut Walk) -> Option<u32> {
    let bank = mem.bank(pa)?;
    w.reads += 1;
    w.bus_cycles += u64::from(bank.region.latency);
    mem.read_word(pa)
}
