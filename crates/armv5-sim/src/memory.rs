//! Physical memory: described regions backed by host memory.
//!
//! Each region's backing store is a `Vec<Cell<u32>>` allocated once (zeroed)
//! and never resized, so a pointer into it (handed out for page-table memory)
//! stays valid for the life of the machine, and writes through such a pointer
//! are interior mutation the model sees on its next read. Such pointers are
//! derived from the whole store, never from a reference to one word, so they
//! may address every word of a table. Words are little-endian.

use crate::config::{MemoryKind, MemoryRegion};
use crate::error::{ConfigError, MemError};
use std::cell::Cell;
use std::ptr::NonNull;

/// Access width.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Width {
    /// 8 bits.
    Byte,
    /// 16 bits.
    Half,
    /// 32 bits.
    Word,
}

impl Width {
    /// The width in bytes.
    #[inline]
    #[must_use]
    pub const fn bytes(self) -> u32 {
        match self {
            Width::Byte => 1,
            Width::Half => 2,
            Width::Word => 4,
        }
    }

    /// Mask of the value's bits.
    #[inline]
    pub(crate) const fn value_mask(self) -> u32 {
        match self {
            Width::Byte => 0xff,
            Width::Half => 0xffff,
            Width::Word => 0xffff_ffff,
        }
    }
}

/// Extracts a `width` value at byte address `addr` from the word holding it.
#[inline]
pub(crate) fn extract(word: u32, addr: u32, width: Width) -> u32 {
    (word >> (8 * (addr & 3))) & width.value_mask()
}

/// Merges a `width` value at byte address `addr` into the word holding it.
#[inline]
pub(crate) fn merge(word: u32, addr: u32, width: Width, value: u32) -> u32 {
    let shift = 8 * (addr & 3);
    let mask = width.value_mask() << shift;
    (word & !mask) | ((value << shift) & mask)
}

/// One region and its backing store.
pub(crate) struct Bank {
    pub(crate) region: MemoryRegion,
    words: Vec<Cell<u32>>,
}

impl std::fmt::Debug for Bank {
    /// The region only: the backing store can be hundreds of MiB.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bank")
            .field("region", &self.region)
            .finish()
    }
}

impl Bank {
    /// The word holding `pa`, if the bank has it.
    ///
    /// Reached through the store's raw pointer, not by indexing the `Vec`:
    /// indexing makes a reference to the whole store on every access, which
    /// Miri's Stacked Borrows checks word by word (an 8 MiB region made each
    /// access take about a second there).
    #[inline]
    fn word(&self, pa: u32) -> Option<&Cell<u32>> {
        let index = (pa.checked_sub(self.region.base.as_u32())? >> 2) as usize;
        if index >= self.words.len() {
            return None;
        }
        // SAFETY: `index` is in bounds of the store, whose buffer lives as
        // long as `self`; `Vec::as_ptr` makes no reference to the buffer,
        // and a shared `Cell` reference to one word aliases nothing unsound.
        Some(unsafe { &*self.words.as_ptr().add(index) })
    }
}

/// The physical address space.
#[derive(Debug, Default)]
pub(crate) struct PhysMemory {
    banks: Vec<Bank>,
    last: Cell<usize>,
}

impl PhysMemory {
    /// Adds a region after checking it.
    pub(crate) fn add(&mut self, region: MemoryRegion) -> Result<(), ConfigError> {
        region.validate()?;
        let (b, e) = (
            u64::from(region.base.as_u32()),
            u64::from(region.base.as_u32()) + u64::from(region.size),
        );
        for bank in &self.banks {
            let ob = u64::from(bank.region.base.as_u32());
            let oe = ob + u64::from(bank.region.size);
            if b < oe && ob < e {
                return Err(ConfigError::OverlappingRegions {
                    existing: bank.region.base.as_u32(),
                    added: region.base.as_u32(),
                });
            }
        }
        let words = zeroed_words(region.size / 4);
        self.banks.push(Bank { region, words });
        Ok(())
    }

    /// The regions, in the order they were added.
    pub(crate) fn regions(&self) -> impl Iterator<Item = &MemoryRegion> {
        self.banks.iter().map(|b| &b.region)
    }

    /// The bank holding `pa`, if any.
    #[inline]
    pub(crate) fn bank(&self, pa: u32) -> Option<&Bank> {
        let last = self.last.get();
        if let Some(b) = self.banks.get(last) {
            if b.region.contains(pa) {
                return Some(b);
            }
        }
        let i = self.banks.iter().position(|b| b.region.contains(pa))?;
        self.last.set(i);
        Some(&self.banks[i])
    }

    /// The region holding `pa`, if any.
    #[inline]
    pub(crate) fn region(&self, pa: u32) -> Option<&MemoryRegion> {
        self.bank(pa).map(|b| &b.region)
    }

    /// Reads the aligned word holding `pa`.
    #[inline]
    pub(crate) fn read_word(&self, pa: u32) -> Option<u32> {
        self.bank(pa).and_then(|b| b.word(pa)).map(Cell::get)
    }

    /// Writes the aligned word holding `pa`.
    #[inline]
    pub(crate) fn write_word(&self, pa: u32, value: u32) -> Option<()> {
        self.bank(pa).and_then(|b| b.word(pa)).map(|w| w.set(value))
    }

    /// Reads `width` bits at `pa` (aligned).
    pub(crate) fn read(&self, pa: u32, width: Width) -> Result<u32, MemError> {
        check(pa, width)?;
        self.read_word(pa)
            .map(|w| extract(w, pa, width))
            .ok_or(MemError::Unmapped(pa))
    }

    /// Writes `width` bits at `pa` (aligned).
    pub(crate) fn write(&self, pa: u32, width: Width, value: u32) -> Result<(), MemError> {
        check(pa, width)?;
        let w = self
            .bank(pa)
            .and_then(|b| b.word(pa))
            .ok_or(MemError::Unmapped(pa))?;
        w.set(merge(w.get(), pa, width, value));
        Ok(())
    }

    /// Zeroes the words of `[pa, pa + len)` that lie in the bank holding `pa`
    /// (one bank lookup, not one per word).
    pub(crate) fn zero(&self, pa: u32, len: u32) {
        let Some(b) = self.bank(pa) else { return };
        let first = ((pa - b.region.base.as_u32()) >> 2) as usize;
        let end = first.saturating_add((len / 4) as usize).min(b.words.len());
        for i in first..end {
            // SAFETY: `i` is below the store's length; as in `Bank::word`.
            unsafe { &*b.words.as_ptr().add(i) }.set(0);
        }
    }

    /// A stable pointer to the word at `pa` (aligned), if it is memory.
    ///
    /// The pointer is derived from the bank's whole store, so it may be used
    /// for every word from `pa` to the end of the region (a table's entries),
    /// not only the first.
    pub(crate) fn word_ptr(&self, pa: u32) -> Option<NonNull<u32>> {
        let b = self.bank(pa)?;
        let index = ((pa & !3) - b.region.base.as_u32()) >> 2;
        // In bounds: `bank` checked that the region contains `pa`.
        NonNull::new(b.words.as_ptr().wrapping_add(index as usize).cast_mut()).map(NonNull::cast)
    }

    /// Whether `[base, base + size)` lies inside one region.
    pub(crate) fn is_range(&self, base: u32, size: u32) -> bool {
        self.bank(base).is_some_and(|b| {
            u64::from(base) + u64::from(size)
                <= u64::from(b.region.base.as_u32()) + u64::from(b.region.size)
        })
    }

    /// Whether `[base, base + size)` lies inside one RAM region.
    pub(crate) fn is_ram_range(&self, base: u32, size: u32) -> bool {
        self.is_range(base, size)
            && self
                .bank(base)
                .is_some_and(|b| b.region.kind == MemoryKind::Ram)
    }
}

/// `n` zeroed words, allocated as zeroed memory in one step (filling a
/// `Vec<Cell<u32>>` word by word takes minutes for a 512 MiB region, and a
/// minute per MiB under Miri).
fn zeroed_words(n: u32) -> Vec<Cell<u32>> {
    let mut words = std::mem::ManuallyDrop::new(vec![0u32; n as usize]);
    let (ptr, len, cap) = (words.as_mut_ptr(), words.len(), words.capacity());
    // SAFETY: `Cell<u32>` has the same in-memory representation (size,
    // alignment, bit validity) as `u32`, so the allocation of a `Vec<u32>` is
    // a valid `Vec<Cell<u32>>` of the same length and capacity; the original
    // vector is never used or dropped again (`ManuallyDrop`).
    unsafe { Vec::from_raw_parts(ptr.cast::<Cell<u32>>(), len, cap) }
}

#[inline]
fn check(pa: u32, width: Width) -> Result<(), MemError> {
    if pa & (width.bytes() - 1) != 0 {
        Err(MemError::Misaligned {
            addr: pa,
            width: width.bytes(),
        })
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mmu_armv5::PhysAddr;

    fn ram(base: u32, size: u32) -> MemoryRegion {
        MemoryRegion {
            base: PhysAddr::new(base),
            size,
            kind: MemoryKind::Ram,
            latency: 0,
        }
    }

    #[test]
    fn overlap_and_alignment_are_rejected() {
        let mut m = PhysMemory::default();
        m.add(ram(0x1000, 0x2000)).unwrap();
        assert_eq!(
            m.add(ram(0x2c00, 0x400)),
            Err(ConfigError::OverlappingRegions {
                existing: 0x1000,
                added: 0x2c00
            })
        );
        assert!(m.add(ram(0x3000, 0x400)).is_ok());
        assert_eq!(
            m.add(ram(0x8100, 0x400)),
            Err(ConfigError::UnalignedRegion {
                base: 0x8100,
                size: 0x400
            })
        );
        assert_eq!(
            m.add(ram(0xFFFF_FC00, 0x800)),
            Err(ConfigError::RegionPastEnd {
                base: 0xFFFF_FC00,
                size: 0x800
            })
        );
        assert!(m.add(ram(0xFFFF_FC00, 0x400)).is_ok());
    }

    #[test]
    fn little_endian_sub_word_access() {
        let mut m = PhysMemory::default();
        m.add(ram(0, 0x400)).unwrap();
        m.write(0x10, Width::Word, 0x1122_3344).unwrap();
        assert_eq!(m.read(0x10, Width::Byte).unwrap(), 0x44);
        assert_eq!(m.read(0x13, Width::Byte).unwrap(), 0x11);
        assert_eq!(m.read(0x12, Width::Half).unwrap(), 0x1122);
        m.write(0x11, Width::Byte, 0xAB).unwrap();
        assert_eq!(m.read(0x10, Width::Word).unwrap(), 0x1122_AB44);
        assert_eq!(
            m.read(0x11, Width::Half),
            Err(MemError::Misaligned {
                addr: 0x11,
                width: 2
            })
        );
        assert_eq!(m.read(0x400, Width::Word), Err(MemError::Unmapped(0x400)));
    }

    #[test]
    fn word_pointer_writes_are_seen() {
        let mut m = PhysMemory::default();
        m.add(ram(0x4000, 0x4000)).unwrap();
        let p = m.word_ptr(0x4008).unwrap();
        // Adding another region must not move the first one's store.
        m.add(ram(0x10_0000, 0x400)).unwrap();
        // SAFETY: the pointer addresses a live `Cell<u32>` inside the bank,
        // which is never reallocated; nothing else borrows it right now.
        unsafe { p.as_ptr().write(0xDEAD_BEEF) };
        assert_eq!(m.read_word(0x4008), Some(0xDEAD_BEEF));
    }

    /// Regression (Miri, Stacked Borrows): the pointer was made from a
    /// reference to one `Cell<u32>`, so writing the table's other entries
    /// through it was undefined behaviour. It now derives from the whole
    /// store: every entry of a 16 KiB table is reachable through it.
    #[test]
    fn word_pointer_reaches_a_whole_table() {
        let mut m = PhysMemory::default();
        m.add(ram(0x4000, 0x8000)).unwrap();
        let p = m.word_ptr(0x4000).unwrap();
        for i in 0..4096 {
            // SAFETY: the bank holds 0x8000 bytes from 0x4000, so words
            // 0..4096 from its start are in bounds; nothing else borrows them.
            unsafe { p.as_ptr().add(i).write(i as u32) };
        }
        assert_eq!(m.read_word(0x4000 + 4 * 4095), Some(4095));
        assert_eq!(m.read_word(0x8000), Some(0), "the next word is untouched");
    }
}
