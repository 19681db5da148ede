//! Giving a table the kernel's first-level entries:
//! [`PageTable::share_from`] and [`PageTable::share_from_root`].
//!
//! Every process table of a kernel with one table per address space holds
//! the kernel's mappings: the same first-level entries, linking the same
//! second-level tables. These calls copy them for a whole 1 MiB-aligned
//! range at once, check the range first, and write nothing if any slot of
//! the new table already holds a different entry.

use super::flush::TableFlush;
use super::mapper::PageTable;
use super::raw::TableRef;
use super::{TableAlloc, TableError, TableKind};
use crate::addr::{check_aligned, Align, ModifiedVirtAddr, PhysAddr};
use crate::descriptor::L1Descriptor;
use core::ops::Range;

const MIB: u32 = 1 << 20;

/// The first-level slots of `[mva, mva + len)`: 1 MiB aligned, not empty,
/// not past 4 GiB.
fn slots_of(mva: ModifiedVirtAddr, len: u32) -> Result<Range<usize>, TableError> {
    check_aligned(mva.as_u32(), Align::MIB_1)?;
    if len == 0 {
        return Err(TableError::EmptyRange);
    }
    if !len.is_multiple_of(MIB) {
        return Err(TableError::BadLength(len));
    }
    let end = u64::from(mva.as_u32()) + u64::from(len);
    if end > 1 << 32 {
        return Err(TableError::AddressOverflow);
    }
    Ok(mva.l1_index()..(end >> 20) as usize)
}

/// Checks that every valid source entry in `slots` meets a fault or the
/// same entry in `into`.
fn check_free<A: TableAlloc + ?Sized>(
    into: &PageTable,
    alloc: &A,
    slots: Range<usize>,
    source: impl Fn(usize) -> Result<L1Descriptor, TableError>,
) -> Result<(), TableError> {
    for i in slots {
        let s = source(i)?;
        if !s.is_valid() {
            continue;
        }
        let d = into.l1_entry(alloc, i)?;
        if d.is_valid() && d != s {
            return Err(TableError::AlreadyMapped(ModifiedVirtAddr::new(
                (i as u32) << 20,
            )));
        }
    }
    Ok(())
}

impl PageTable {
    /// Gives this table `kernel`'s first-level entries for
    /// `[mva, mva + len)`: every valid entry there is copied into the same
    /// slot here (in this table's encoding), in one call.
    ///
    /// * A slot where this table already holds the same entry is left
    ///   alone, so sharing again after the kernel mapped more copies only
    ///   the new entries.
    /// * A slot where `kernel` holds a fault is left alone here too.
    /// * The second-level tables the copied entries link become shared, as
    ///   with [`PageTable::share_l1_entries`]: `kernel` gives up their
    ///   ownership (hence `&mut`), so neither table ever frees them and
    ///   they stay valid for as long as any table links them. Later changes
    ///   inside them show in both tables; first-level changes do not.
    ///
    /// Both tables are in `alloc`'s memory. The token asks for the D-cache
    /// clean of the entries written and no TLB maintenance (only faults are
    /// replaced), so it may be flushed while this table is live; before the
    /// MMU is on, discard it with
    /// [`TableFlush::discard_mmu_off`].
    ///
    /// ```
    /// use mmu_armv5::descriptor::{AccessPermission, CachePolicy};
    /// use mmu_armv5::size::PageSizeKind;
    /// use mmu_armv5::table::{MapAttrs, PageTable, PoolBlock, SizePolicy, TableError, TablePool, TlbInvalidate};
    /// use mmu_armv5::{Domain, ModifiedVirtAddr as Mva, PhysAddr};
    /// # use mmu_armv5::regs::MockCp15;
    /// # use mmu_armv5::table::MmuOff;
    ///
    /// # let mut mem = Box::new([PoolBlock::ZERO; 2]);
    /// # let mut pool = TablePool::new(&mut *mem, PhysAddr::new(0x0010_0000), Mva::new(0x0010_0000))?;
    /// # let mut cp15 = MockCp15::arm926();
    /// # let off = MmuOff::new(&mut cp15)?;
    /// let attrs = MapAttrs::new(Domain::new(0)?, AccessPermission::PrivRw, CachePolicy::WriteBack);
    /// let section = SizePolicy::Exactly(PageSizeKind::Section);
    /// let mut kernel = PageTable::new(&mut pool)?;
    /// kernel.map(&mut pool, Mva::new(0xC000_0000), PhysAddr::new(0), 2 << 20, attrs, section)?
    ///     .discard_mmu_off(&off, &mut pool);
    ///
    /// let mut process = PageTable::new(&mut pool)?;
    /// let top = (Mva::new(0xC000_0000), 0x4000_0000);
    /// let f = process.share_from(&pool, &mut kernel, top.0, top.1)?;
    /// assert_eq!(f.tlb(), TlbInvalidate::None);
    /// f.discard_mmu_off(&off, &mut pool);
    ///
    /// // The kernel maps another MiB: sharing again copies just that one.
    /// kernel.map(&mut pool, Mva::new(0xC020_0000), PhysAddr::new(2 << 20), 1 << 20, attrs, section)?
    ///     .discard_mmu_off(&off, &mut pool);
    /// let f = process.share_from(&pool, &mut kernel, top.0, top.1)?;
    /// assert_eq!(f.clean_ranges().len(), 1);
    /// f.discard_mmu_off(&off, &mut pool);
    /// assert_eq!(process.l1_entry(&pool, 0xC02)?, kernel.l1_entry(&pool, 0xC02)?);
    ///
    /// // A slot the process maps differently is refused; nothing is written.
    /// process.map(&mut pool, Mva::new(0xC030_0000), PhysAddr::new(9 << 20), 1 << 20, attrs, section)?
    ///     .discard_mmu_off(&off, &mut pool);
    /// kernel.map(&mut pool, Mva::new(0xC030_0000), PhysAddr::new(3 << 20), 1 << 20, attrs, section)?
    ///     .discard_mmu_off(&off, &mut pool);
    /// assert_eq!(
    ///     process.share_from(&pool, &mut kernel, top.0, top.1),
    ///     Err(TableError::AlreadyMapped(Mva::new(0xC030_0000)))
    /// );
    /// // The range must be whole MiBs.
    /// assert!(process.share_from(&pool, &mut kernel, Mva::new(0xC000_1000), 1 << 20).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// Nothing is written on error.
    /// * [`TableError::Misaligned`]: `mva` is not 1 MiB aligned;
    /// * [`TableError::EmptyRange`], [`TableError::BadLength`] (not a
    ///   multiple of 1 MiB), [`TableError::AddressOverflow`] (past 4 GiB);
    /// * [`TableError::AlreadyMapped`]: the first slot where this table
    ///   holds a valid entry other than `kernel`'s;
    /// * [`TableError::UnreachableTable`]: `alloc` cannot reach a table.
    ///   (After the checks nothing can fail with an allocator that keeps
    ///   its contract. If one fails anyway, the entries copied so far stay
    ///   without their clean: each replaced a fault, so the walker sees the
    ///   fault or the shared entry, never a stale translation.)
    ///
    /// [`TableFlush::discard_mmu_off`]: super::TableFlush::discard_mmu_off
    pub fn share_from<A: TableAlloc + ?Sized>(
        &mut self,
        alloc: &A,
        kernel: &mut PageTable,
        mva: ModifiedVirtAddr,
        len: u32,
    ) -> Result<TableFlush, TableError> {
        self.check_alloc(alloc)?;
        kernel.check_alloc(alloc)?;
        let slots = slots_of(mva, len)?;
        check_free(self, alloc, slots.clone(), |i| kernel.l1_entry(alloc, i))?;
        let mut flush = TableFlush::new();
        // `share_l1_entries` refuses a slot both tables map, even
        // identically: copy the runs between such slots.
        let mut run = slots.start;
        for i in slots.clone() {
            if kernel.l1_entry(alloc, i)?.is_valid() && self.l1_entry(alloc, i)?.is_valid() {
                if run < i {
                    flush.merge(kernel.share_l1_entries(alloc, self, run..i)?);
                }
                run = i + 1;
            }
        }
        if run < slots.end {
            flush.merge(kernel.share_l1_entries(alloc, self, run..slots.end)?);
        }
        Ok(flush)
    }

    /// [`PageTable::share_from`] from a first-level table that no
    /// `PageTable` value stands for here: the one at `root` (for example
    /// the kernel's boot table, vouched for once). Every valid entry of it
    /// in `[mva, mva + len)` is copied into the same slot of this table,
    /// unless this table holds the same entry there already. This table
    /// never frees what the copied entries link.
    ///
    /// # Errors
    /// As for [`PageTable::share_from`], and
    /// [`TableError::MisalignedTable`] if `root` is not 16 KiB aligned,
    /// [`TableError::UnreachableTable`] if `alloc` cannot reach it.
    ///
    /// # Safety
    /// As for [`PageTable::set_l1_entry_unchecked`], for every entry
    /// copied: a second-level table it links stays a valid table (not
    /// freed, not reused) for as long as this table links it and until the
    /// maintenance after unlinking it is done, and is not a table another
    /// slot of this `PageTable` owns. A kernel that never frees the
    /// second-level tables of its own mappings while process tables exist
    /// keeps this.
    pub unsafe fn share_from_root<A: TableAlloc + ?Sized>(
        &mut self,
        alloc: &A,
        root: PhysAddr,
        mva: ModifiedVirtAddr,
        len: u32,
    ) -> Result<TableFlush, TableError> {
        self.check_alloc(alloc)?;
        let slots = slots_of(mva, len)?;
        let source = TableRef::new(TableKind::L1, root)?;
        let read = |i| source.read(alloc, i).map(L1Descriptor::from_bits);
        check_free(self, alloc, slots.clone(), read)?;
        let mut flush = TableFlush::new();
        for i in slots {
            let s = read(i)?;
            if s.is_valid() && !self.l1_entry(alloc, i)?.is_valid() {
                // SAFETY: the caller's contract, for the table `s` links.
                // The slot held a fault, so it linked no table to hand back.
                let (f, _none) = unsafe { self.set_l1_entry_unchecked(alloc, i, s)? };
                flush.merge(f);
            }
        }
        Ok(flush)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::addr::{AddrError, Domain};
    use crate::descriptor::{AccessPermission, CachePolicy, L1Encoding};
    use crate::regs::MockCp15;
    use crate::size::PageSizeKind;
    use crate::table::{MapAttrs, MmuOff, PoolBlock, SizePolicy, TablePool, TlbInvalidate};
    use proptest::prelude::*;
    use std::boxed::Box;

    type Pool<'m> = TablePool<'m, 4>;

    fn mem() -> Box<[PoolBlock; 4]> {
        Box::new([
            PoolBlock::ZERO,
            PoolBlock::ZERO,
            PoolBlock::ZERO,
            PoolBlock::ZERO,
        ])
    }

    fn pool(mem: &mut [PoolBlock; 4]) -> Pool<'_> {
        TablePool::new(
            mem,
            PhysAddr::new(0x0010_0000),
            ModifiedVirtAddr::new(0xC010_0000),
        )
        .unwrap()
    }

    fn attrs(d: u8) -> MapAttrs {
        MapAttrs::new(
            Domain::new(d).unwrap(),
            AccessPermission::PrivRw,
            CachePolicy::WriteBack,
        )
    }

    /// Maps `[mva, mva + len)` to `pa` and discards the token (MMU off).
    fn map(t: &mut PageTable, p: &mut Pool<'_>, mva: u32, pa: u32, len: u32, policy: SizePolicy) {
        let mut cp15 = MockCp15::arm926();
        let off = MmuOff::new(&mut cp15).unwrap();
        t.map(
            p,
            ModifiedVirtAddr::new(mva),
            PhysAddr::new(pa),
            len,
            attrs(0),
            policy,
        )
        .unwrap()
        .discard_mmu_off(&off, p);
    }

    const SECTION: SizePolicy = SizePolicy::Exactly(PageSizeKind::Section);

    /// The raw word of every first-level slot. Under Miri (which looks
    /// for undefined behaviour, not wrong answers) only the slots the tests
    /// map and the ends of the table are read; the others read as zero.
    fn words(t: &PageTable, p: &Pool<'_>) -> std::vec::Vec<u32> {
        let sampled = |i: usize| !cfg!(miri) || i < 2 || (0xBFF..0xC08).contains(&i) || i > 0xFFD;
        (0..4096)
            .map(|i| {
                if sampled(i) {
                    t.root_table().read(p, i).unwrap()
                } else {
                    0
                }
            })
            .collect()
    }

    /// A kernel with sections at 0xC000_0000 (2 MiB) and 0xC040_0000, and a
    /// coarse table at 0xC030_0000.
    fn kernel(p: &mut Pool<'_>) -> PageTable {
        let mut k = PageTable::new(p).unwrap();
        map(&mut k, p, 0xC000_0000, 0, 2 << 20, SECTION);
        map(&mut k, p, 0xC040_0000, 4 << 20, 1 << 20, SECTION);
        map(
            &mut k,
            p,
            0xC030_0000,
            0x0090_0000,
            0x1000,
            SizePolicy::Largest,
        );
        k
    }

    fn mva(a: u32) -> ModifiedVirtAddr {
        ModifiedVirtAddr::new(a)
    }

    #[test]
    fn copies_exactly_the_valid_entries_of_the_range() {
        let mut m = mem();
        let mut p = pool(&mut m);
        let mut k = kernel(&mut p);
        // Also something outside the range, which must not be copied.
        map(&mut k, &mut p, 0x0000_0000, 0, 1 << 20, SECTION);
        let mut t = PageTable::new(&mut p).unwrap();
        let before = words(&t, &p);
        let f = t
            .share_from(&p, &mut k, mva(0xC000_0000), 0x4000_0000)
            .unwrap();
        assert_eq!(f.tlb(), TlbInvalidate::None);
        assert_eq!(f.tables_to_free(), 0);
        let (kw, tw) = (words(&k, &p), words(&t, &p));
        for i in 0..4096 {
            let want = if i >= 0xC00 { kw[i] } else { before[i] };
            assert_eq!(tw[i], want, "slot {i:#x}");
        }
        assert_eq!(tw[0], 0, "the identity map below 3 GiB is not shared");
        // The clean covers the four entries written (slots C00, C01, C03, C04).
        let root = p.table_mva(t.root());
        for slot in [0xC00u32, 0xC01, 0xC03, 0xC04] {
            let at = root.as_u32() + 4 * slot;
            assert!(
                f.clean_ranges()
                    .iter()
                    .any(|&(s, l)| s <= at && at + 4 <= s + l),
                "slot {slot:#x} cleaned"
            );
        }
        // The coarse table is shared: the kernel no longer owns it, so
        // unmapping its page leaves it linked instead of freeing it.
        assert!(!k.owns_l2_table(0xC03) && !t.owns_l2_table(0xC03));
        let u = k.unmap(&mut p, mva(0xC030_0000), 0x1000).unwrap();
        assert_eq!(u.tables_to_free(), 0);
        // SAFETY: test tables, never loaded.
        unsafe { u.ignore() };
        assert_eq!(
            t.l1_entry(&p, 0xC03).unwrap(),
            k.l1_entry(&p, 0xC03).unwrap()
        );
    }

    #[test]
    fn sharing_again_copies_only_new_entries_and_keeps_the_tables_own() {
        let mut m = mem();
        let mut p = pool(&mut m);
        let mut k = kernel(&mut p);
        let mut t = PageTable::new(&mut p).unwrap();
        // The process's own mapping where the kernel has nothing.
        map(&mut t, &mut p, 0xC050_0000, 0x0300_0000, 1 << 20, SECTION);
        let own = t.l1_entry(&p, 0xC05).unwrap();
        let f = t.share_from(&p, &mut k, mva(0xC000_0000), 8 << 20).unwrap();
        // SAFETY: test tables, never loaded.
        unsafe { f.ignore() };
        let f = t.share_from(&p, &mut k, mva(0xC000_0000), 8 << 20).unwrap();
        assert!(f.clean_ranges().is_empty(), "nothing new to copy");
        assert_eq!(f.tlb(), TlbInvalidate::None);
        // SAFETY: as above.
        unsafe { f.ignore() };
        assert_eq!(t.l1_entry(&p, 0xC05).unwrap(), own);
        // One more kernel section, after one the tables already share.
        map(&mut k, &mut p, 0xC060_0000, 6 << 20, 1 << 20, SECTION);
        let f = t.share_from(&p, &mut k, mva(0xC000_0000), 8 << 20).unwrap();
        let root = p.table_mva(t.root()).as_u32();
        assert_eq!(f.clean_ranges(), &[(root + 4 * 0xC06, 4)]);
        // SAFETY: as above.
        unsafe { f.ignore() };
        assert_eq!(words(&t, &p)[0xC06], words(&k, &p)[0xC06]);
    }

    #[test]
    fn bad_ranges_are_typed_errors() {
        let mut m = mem();
        let mut p = pool(&mut m);
        let mut k = kernel(&mut p);
        let mut t = PageTable::new(&mut p).unwrap();
        let mut share = |a: u32, len: u32| t.share_from(&p, &mut k, mva(a), len).err();
        assert_eq!(
            share(0xC000_1000, 1 << 20),
            Some(TableError::Misaligned(AddrError::Misaligned {
                addr: 0xC000_1000,
                align: 1 << 20
            }))
        );
        assert_eq!(share(0xC000_0000, 0), Some(TableError::EmptyRange));
        assert_eq!(
            share(0xC000_0000, 0x1000),
            Some(TableError::BadLength(0x1000))
        );
        assert_eq!(
            share(0xFFF0_0000, 2 << 20),
            Some(TableError::AddressOverflow)
        );
        // The very last MiB is in range, and so is all but it.
        assert_eq!(share(0xFFF0_0000, 1 << 20), None);
        if !cfg!(miri) {
            assert_eq!(share(0, 0xFFF0_0000), None);
        }
    }

    #[test]
    fn a_different_entry_refuses_the_whole_range() {
        let mut m = mem();
        let mut p = pool(&mut m);
        let mut k = kernel(&mut p);
        let mut t = PageTable::new(&mut p).unwrap();
        // Slot C04: a section to other memory than the kernel's.
        map(&mut t, &mut p, 0xC040_0000, 0x0700_0000, 1 << 20, SECTION);
        let before = words(&t, &p);
        assert_eq!(
            t.share_from(&p, &mut k, mva(0xC000_0000), 0x4000_0000)
                .err(),
            Some(TableError::AlreadyMapped(mva(0xC040_0000)))
        );
        assert_eq!(words(&t, &p), before, "nothing written, not even C00");
        assert!(k.owns_l2_table(0xC03), "the kernel keeps its table");
        // Another domain is a different entry too.
        let mut u = PageTable::new(&mut p).unwrap();
        let f = u
            .map(
                &mut p,
                mva(0xC000_0000),
                PhysAddr::new(0),
                1 << 20,
                attrs(1),
                SECTION,
            )
            .unwrap();
        // SAFETY: test tables, never loaded.
        unsafe { f.ignore() };
        assert_eq!(
            u.share_from(&p, &mut k, mva(0xC000_0000), 1 << 20).err(),
            Some(TableError::AlreadyMapped(mva(0xC000_0000)))
        );
    }

    #[test]
    fn entries_are_rewritten_in_the_receiving_tables_encoding() {
        let mut m = mem();
        let mut p = pool(&mut m);
        let mut k = kernel(&mut p);
        let mut x = PageTable::with_encoding(&mut p, L1Encoding::XScale).unwrap();
        let f = x.share_from(&p, &mut k, mva(0xC000_0000), 8 << 20).unwrap();
        // SAFETY: test tables, never loaded.
        unsafe { f.ignore() };
        let (kw, xw) = (words(&k, &p), words(&x, &p));
        for slot in [0xC00, 0xC01, 0xC03, 0xC04] {
            assert_eq!(kw[slot] & (1 << 4), 1 << 4);
            assert_eq!(xw[slot], kw[slot] & !(1 << 4), "slot {slot:#x}");
        }
        // Sharing back is a no-op: the decoded entries are the same.
        let f = x.share_from(&p, &mut k, mva(0xC000_0000), 8 << 20).unwrap();
        assert!(f.clean_ranges().is_empty());
        // SAFETY: as above.
        unsafe { f.ignore() };
    }

    #[test]
    fn sharing_from_a_raw_root() {
        let mut m = mem();
        let mut p = pool(&mut m);
        let k = kernel(&mut p);
        let mut t = PageTable::new(&mut p).unwrap();
        // Another first-level table, mapping only slot C07.
        let mut k2 = PageTable::new(&mut p).unwrap();
        map(&mut k2, &mut p, 0xC070_0000, 0x0800_0000, 1 << 20, SECTION);
        // SAFETY: the kernel's tables outlive `t` in this test and none is
        // one `t` owns.
        let share = |t: &mut PageTable, root: u32, a: u32, len: u32| unsafe {
            t.share_from_root(&p, PhysAddr::new(root), mva(a), len)
        };
        let root = k.root().as_u32();
        assert_eq!(
            share(&mut t, root + 0x1000, 0xC000_0000, 1 << 20).err(),
            Some(TableError::MisalignedTable(PhysAddr::new(root + 0x1000)))
        );
        assert_eq!(
            share(&mut t, 0x4000_0000, 0xC000_0000, 1 << 20).err(),
            Some(TableError::UnreachableTable(PhysAddr::new(0x4000_0000)))
        );
        assert_eq!(
            share(&mut t, root, 0xC000_0000, 3).err(),
            Some(TableError::BadLength(3))
        );
        let f = share(&mut t, root, 0xC000_0000, 0x4000_0000).unwrap();
        assert_eq!(f.tlb(), TlbInvalidate::None);
        // SAFETY: test tables, never loaded.
        unsafe { f.ignore() };
        let (kw, tw) = (words(&k, &p), words(&t, &p));
        assert_eq!(tw[0xC00..], kw[0xC00..]);
        assert!(tw[..0xC00].iter().all(|&w| w == 0));
        // The kernel still owns its coarse table; `t` does not.
        assert!(k.owns_l2_table(0xC03) && !t.owns_l2_table(0xC03));
        // Again: nothing to do. A conflicting slot: refused.
        let f = share(&mut t, root, 0xC000_0000, 0x4000_0000).unwrap();
        assert!(f.clean_ranges().is_empty());
        // SAFETY: as above.
        unsafe { f.ignore() };
        let f = t
            .set_l1_entry(&p, 0xC07, k.l1_entry(&p, 0xC00).unwrap())
            .unwrap();
        // SAFETY: as above.
        unsafe { f.ignore() };
        assert_eq!(
            share(&mut t, k2.root().as_u32(), 0xC000_0000, 0x4000_0000).err(),
            Some(TableError::AlreadyMapped(mva(0xC070_0000)))
        );
    }

    proptest! {
        // Two cases under Miri: each reads thousands of table entries.
        #![proptest_config(crate::testing::proptest_config(if cfg!(miri) { 2 } else { 64 }))]
        /// Any range: a typed error or the exact copy, never a panic.
        #[test]
        fn any_range_errors_or_copies_exactly(start in any::<u32>(), len in any::<u32>(), mib in any::<bool>()) {
            let (start, len) = if mib { (start & !0xF_FFFF, len & !0xF_FFFF) } else { (start, len) };
            let mut m = mem();
            let mut p = pool(&mut m);
            let mut k = kernel(&mut p);
            let mut t = PageTable::new(&mut p).unwrap();
            let before = words(&t, &p);
            match t.share_from(&p, &mut k, mva(start), len) {
                Ok(f) => {
                    // SAFETY: test tables, never loaded.
                    unsafe { f.ignore() };
                    let end = u64::from(start) + u64::from(len);
                    let (kw, tw) = (words(&k, &p), words(&t, &p));
                    for i in 0..4096usize {
                        let inside = (i as u64) << 20 >= u64::from(start) && ((i as u64) << 20) < end;
                        prop_assert_eq!(tw[i], if inside { kw[i] } else { before[i] });
                    }
                }
                Err(_) => prop_assert_eq!(words(&t, &p), before),
            }
        }
    }
}
