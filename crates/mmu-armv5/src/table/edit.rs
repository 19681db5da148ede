//! In-place edits of one mapped page: new access permissions, or a new
//! frame with every other attribute kept.
//!
//! [`PageTable::protect`] changes a whole range to one permission and cache
//! policy; these change exactly one page, keep what they are not asked to
//! change (subpage permissions, cache policy, TEX, domain, P bit, frame), and
//! never allocate or free a table. They are what a page exchange needs: take
//! write access away from one mapping and give back exactly what it had,
//! and point a mapping at another frame.
//!
//! Like every table change they return a [`TableFlush`]: the page's table
//! lines to clean and its TLB entry to invalidate.

use super::alloc::{TableAlloc, TableKind};
use super::flush::TableFlush;
use super::mapper::{write_l2_page, PageTable};
use super::raw::TableRef;
use super::TableError;
use crate::addr::{ModifiedVirtAddr, PhysAddr};
use crate::descriptor::{
    L1Descriptor, L2Descriptor, LargePageDesc, SectionDesc, SmallPageDesc, SubpageAp, TinyPageDesc,
};
use crate::size::{Frame, PageSizeKind};

/// The index of the entry for `mva` in a second-level table of `kind`.
fn l2_index(kind: TableKind, mva: ModifiedVirtAddr) -> usize {
    match kind {
        TableKind::Fine => ((mva.as_u32() >> 10) & 0x3FF) as usize,
        _ => ((mva.as_u32() >> 12) & 0xFF) as usize,
    }
}

impl PageTable {
    /// Sets the access permissions of the page mapped at `mva` (any address
    /// inside it) to `ap`, keeping its frame, cache policy, TEX and domain.
    ///
    /// A small or large page takes all four subpage permissions; a section
    /// or tiny page has one permission and takes `ap`'s first
    /// (`ap.get(0)`). Returns the token: the changed entries' lines and
    /// the page's TLB entry.
    ///
    /// # Errors
    /// [`TableError::NotMapped`] if no page maps `mva`; a table `alloc`
    /// cannot reach.
    pub fn set_page_ap<A: TableAlloc + ?Sized>(
        &mut self,
        alloc: &A,
        mva: ModifiedVirtAddr,
        ap: SubpageAp,
    ) -> Result<TableFlush, TableError> {
        self.check_alloc(alloc)?;
        self.edit_page(alloc, mva, |e| match e {
            Entry::Section(s) => Ok(Entry::Section(SectionDesc { ap: ap.get(0), ..s })),
            Entry::Page(L2Descriptor::Large(l)) => {
                Ok(Entry::Page(L2Descriptor::Large(LargePageDesc { ap, ..l })))
            }
            Entry::Page(L2Descriptor::Small(s)) => {
                Ok(Entry::Page(L2Descriptor::Small(SmallPageDesc { ap, ..s })))
            }
            Entry::Page(L2Descriptor::Tiny(t)) => {
                Ok(Entry::Page(L2Descriptor::Tiny(TinyPageDesc {
                    ap: ap.get(0),
                    ..t
                })))
            }
            Entry::Page(L2Descriptor::Fault { .. }) => Err(TableError::NotMapped(mva)),
        })
    }

    /// Points the page mapped at `mva` (any address inside it) at the frame
    /// starting at `pa`, keeping its size, permissions, cache policy, TEX
    /// and domain. Returns the token: the changed entries' lines and the
    /// page's TLB entry.
    ///
    /// # Errors
    /// [`TableError::NotMapped`] if no page maps `mva`;
    /// [`TableError::Misaligned`] if `pa` is not aligned to the page's
    /// size; a table `alloc` cannot reach. Nothing is changed then.
    pub fn retarget_page<A: TableAlloc + ?Sized>(
        &mut self,
        alloc: &A,
        mva: ModifiedVirtAddr,
        pa: PhysAddr,
    ) -> Result<TableFlush, TableError> {
        self.check_alloc(alloc)?;
        self.edit_page(alloc, mva, |e| match e {
            Entry::Section(s) => Ok(Entry::Section(SectionDesc {
                frame: Frame::from_start(pa)?,
                ..s
            })),
            Entry::Page(L2Descriptor::Large(l)) => {
                Ok(Entry::Page(L2Descriptor::Large(LargePageDesc {
                    frame: Frame::from_start(pa)?,
                    ..l
                })))
            }
            Entry::Page(L2Descriptor::Small(s)) => {
                Ok(Entry::Page(L2Descriptor::Small(SmallPageDesc {
                    frame: Frame::from_start(pa)?,
                    ..s
                })))
            }
            Entry::Page(L2Descriptor::Tiny(t)) => {
                Ok(Entry::Page(L2Descriptor::Tiny(TinyPageDesc {
                    frame: Frame::from_start(pa)?,
                    ..t
                })))
            }
            Entry::Page(L2Descriptor::Fault { .. }) => Err(TableError::NotMapped(mva)),
        })
    }

    /// Reads the descriptor of the page mapped at `mva`, lets `change`
    /// rewrite it (same kind and size), and writes it back.
    fn edit_page<A: TableAlloc + ?Sized>(
        &mut self,
        alloc: &A,
        mva: ModifiedVirtAddr,
        change: impl FnOnce(Entry) -> Result<Entry, TableError>,
    ) -> Result<TableFlush, TableError> {
        // `lookup` decides what is mapped (it knows that a `0b11` word in a
        // coarse table is a fault, not a tiny page).
        let page = self.lookup(alloc, mva)?.ok_or(TableError::NotMapped(mva))?;
        let slot = mva.l1_index();
        let l1 = self.l1_entry(alloc, slot)?;
        match (l1, page.size) {
            (L1Descriptor::Section(s), PageSizeKind::Section) => match change(Entry::Section(s))? {
                // A section stays a section: `set_l1_entry` records its
                // line and its TLB entry (the old entry was valid).
                Entry::Section(new) => self.set_l1_entry(alloc, slot, L1Descriptor::Section(new)),
                Entry::Page(_) => Err(TableError::NotMapped(mva)),
            },
            _ => {
                let (kind, tpa) = l1.table().ok_or(TableError::NotMapped(mva))?;
                let table = TableRef::new(kind, tpa)?;
                let old = L2Descriptor::from_bits(table.read(alloc, l2_index(kind, mva))?);
                let new = match change(Entry::Page(old))? {
                    Entry::Page(d) if d.size() == Some(page.size) => d,
                    _ => return Err(TableError::NotMapped(mva)),
                };
                let mut flush = TableFlush::new();
                // SAFETY: a second-level table linked from this table's
                // first-level entry (so not one handed to a token to be
                // freed); one page descriptor of the same size is rewritten
                // in place, no first-level link changes.
                unsafe { write_l2_page(alloc, table, page.mva, new, &mut flush)? };
                let size = page.size.size();
                flush.tlb_stale(page.mva, size, size);
                Ok(flush)
            }
        }
    }
}

/// The descriptor of one mapped page, as [`PageTable::edit_page`] hands it over.
enum Entry {
    Section(SectionDesc),
    Page(L2Descriptor),
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::addr::Domain;
    use crate::descriptor::{AccessPermission as Ap, CachePolicy, Tex};
    use crate::table::{MapAttrs, PoolBlock, SizePolicy, TablePool, TlbInvalidate};
    use std::boxed::Box;

    const MIB: u32 = 1 << 20;

    fn mva(a: u32) -> ModifiedVirtAddr {
        ModifiedVirtAddr::new(a)
    }

    fn pa(a: u32) -> PhysAddr {
        PhysAddr::new(a)
    }

    /// A table with one page of each size, every one with TEX 1 (where a
    /// descriptor has TEX), write-through, domain 3, read/write.
    fn setup(mem: &mut [PoolBlock; 2]) -> (TablePool<'_, 2>, PageTable) {
        let mut pool = TablePool::new(mem, pa(0x0100_0000), mva(0xC100_0000)).unwrap();
        let mut pt = PageTable::new(&mut pool).unwrap();
        let attrs = MapAttrs {
            domain: Domain::new(3).unwrap(),
            ap: Ap::ReadWrite,
            cache: CachePolicy::WriteThrough,
            tex: Tex::new(1).unwrap(),
        };
        for (v, p, size) in [
            (0x0010_0000, 0x0050_0000, PageSizeKind::Section),
            (0x0020_0000, 0x0060_0000, PageSizeKind::Large),
            (0x0020_1000 + 0xF000, 0x0061_0000, PageSizeKind::Small),
            (0x0030_0000, 0x0070_0400, PageSizeKind::Tiny),
        ] {
            let f = pt
                .map(
                    &mut pool,
                    mva(v),
                    pa(p),
                    size.size(),
                    attrs,
                    SizePolicy::Exactly(size),
                )
                .unwrap();
            // SAFETY: host memory; no MMU walks it.
            unsafe { f.ignore() };
        }
        (pool, pt)
    }

    #[test]
    fn set_page_ap_changes_only_the_permissions_of_one_page() {
        let mut mem = Box::new([PoolBlock::ZERO, PoolBlock::ZERO]);
        let (pool, mut pt) = setup(&mut mem);
        let before: std::vec::Vec<_> = pt.mappings(&pool).map(Result::unwrap).collect();
        let mixed = SubpageAp([Ap::PrivRw, Ap::ReadWrite, Ap::NoneOrRom, Ap::PrivRwUserRo]);
        for (at, size) in [
            (0x0010_0123, PageSizeKind::Section),
            (0x0020_8000, PageSizeKind::Large),
            (0x0021_0FFF, PageSizeKind::Small),
            (0x0030_0010, PageSizeKind::Tiny),
        ] {
            let f = pt.set_page_ap(&pool, mva(at), mixed).unwrap();
            let m = pt.lookup(&pool, mva(at)).unwrap().unwrap();
            let old = before.iter().find(|o| o.mva == m.mva).unwrap();
            let want = match size {
                PageSizeKind::Large | PageSizeKind::Small => mixed,
                _ => SubpageAp::uniform(Ap::PrivRw),
            };
            assert_eq!(m, crate::table::Mapping { ap: want, ..*old }, "{size:?}");
            // The page's own TLB entry, and its lines.
            let TlbInvalidate::Pages(p) = f.tlb() else {
                panic!("{size:?}: {:?}", f.tlb())
            };
            assert_eq!((p.start(), p.bytes()), (m.mva, size.size()));
            assert!(!f.clean_ranges().is_empty());
            // SAFETY: host memory; no MMU walks it.
            unsafe { f.ignore() };
        }
        // Nothing else changed: TEX and the other pages are intact.
        let after: std::vec::Vec<_> = pt.mappings(&pool).map(Result::unwrap).collect();
        assert_eq!(after.len(), before.len());
        let l1 = pt.l1_entry(&pool, 1).unwrap();
        let L1Descriptor::Section(s) = l1 else {
            panic!("{l1:?}")
        };
        assert_eq!((s.tex.get(), s.domain.get()), (1, 3));
    }

    #[test]
    fn retarget_page_keeps_every_attribute() {
        let mut mem = Box::new([PoolBlock::ZERO, PoolBlock::ZERO]);
        let (pool, mut pt) = setup(&mut mem);
        for (at, to) in [
            (0x0010_0000, 0x0090_0000),
            (0x0020_0000, 0x00A0_0000),
            (0x0021_0000, 0x00B0_3000),
            (0x0030_0000, 0x00C0_0C00),
        ] {
            let old = pt.lookup(&pool, mva(at)).unwrap().unwrap();
            let f = pt.retarget_page(&pool, mva(at), pa(to)).unwrap();
            // SAFETY: host memory; no MMU walks it.
            unsafe { f.ignore() };
            let new = pt.lookup(&pool, mva(at)).unwrap().unwrap();
            assert_eq!(new, crate::table::Mapping { pa: pa(to), ..old });
        }
        // Every replica of the large page moved (a walk through any of its
        // 16 coarse entries finds the new frame).
        let l = pt.lookup(&pool, mva(0x0020_F004)).unwrap().unwrap();
        assert_eq!(l.pa, pa(0x00A0_0000));
        let L1Descriptor::Section(s) = pt.l1_entry(&pool, 1).unwrap() else {
            panic!("section")
        };
        assert_eq!(s.tex.get(), 1);
    }

    #[test]
    fn refusals_change_nothing() {
        let mut mem = Box::new([PoolBlock::ZERO, PoolBlock::ZERO]);
        let (pool, mut pt) = setup(&mut mem);
        let before: std::vec::Vec<_> = pt.mappings(&pool).map(Result::unwrap).collect();
        let ap = SubpageAp::uniform(Ap::NoneOrRom);
        for at in [0, 0x0020_2000 + 0x10_0000, 0x0030_0400, 5 * MIB] {
            assert_eq!(
                pt.set_page_ap(&pool, mva(at), ap),
                Err(TableError::NotMapped(mva(at)))
            );
            assert_eq!(
                pt.retarget_page(&pool, mva(at), pa(0)),
                Err(TableError::NotMapped(mva(at)))
            );
        }
        for (at, to) in [
            (0x0010_0000, 0x0090_1000),
            (0x0020_0000, 0x00A0_1000),
            (0x0021_0000, 0x00B0_0400),
            (0x0030_0000, 0x00C0_0C10),
        ] {
            assert!(matches!(
                pt.retarget_page(&pool, mva(at), pa(to)),
                Err(TableError::Misaligned(_))
            ));
        }
        let after: std::vec::Vec<_> = pt.mappings(&pool).map(Result::unwrap).collect();
        assert_eq!(after, before);
    }
}
