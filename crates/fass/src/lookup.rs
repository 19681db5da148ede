//! Per-space lookups and per-page edits: what a space maps at an address,
//! which spaces map a frame, and changing one page's access permissions or
//! frame in place, for [`Fass`] and the classic [`TableSwitch`] alike.
//!
//! These are what a page exchange (`spm`'s, moving a page into TCM) needs
//! from the address-space manager: find every mapping of a frame, take
//! write access away and give it back, point the mappings at another frame.
//!
//! # What an edit changes, and its maintenance
//! Only private 4 KiB pages are edited (the only pages these managers map
//! per page). Under FASS a space's second-level tables are the tables the
//! CPD entry of its slot links to (see [`crate::space`]), so rewriting the
//! page descriptor there is the whole change: the CPD's first-level entry
//! is unchanged and stays consistent, whether the space owns its slot in
//! the CPD now or not. Each edit then cleans the descriptor's table line
//! (the walker reads memory) and invalidates the TLB entry of the page's
//! MVA (`va` relocated by the space's FCSE PID): any space's entry at that
//! MVA, which is harmless for a space that meets this one at the same MVA.
//! The classic strategies edit the space's own [`PageTable`] with the same
//! maintenance.
//!
//! Cache lines are tagged by MVA and checked against the TLB's permissions
//! on every access, so [`Fass::set_page_ap`] needs no cache maintenance.
//! [`Fass::retarget_page`] does, since the page's lines hold the old
//! frame's data under the MVA the new frame will be reached at: with
//! [`PageLines::Purge`] it cleans and invalidates them (D-cache and
//! I-cache, by MVA, then drains the write buffer) before the descriptor
//! changes, as an unmap does; [`PageLines::LeaveToCaller`] leaves them to
//! a caller that does that itself around the change (`spm`'s exchange
//! cleans the lines before and flushes them after its switch). Both methods
//! do their maintenance themselves, like [`Fass::map_pages`]; nothing is
//! left to a token.
//!
//! # Shared segments, and the kernel
//! A shared segment is one physically contiguous run of 1 MiB sections,
//! mapped at the same address with the same permissions in every sharer
//! (and under FASS through one CPD entry for all of them): a single 4 KiB
//! page of it cannot be pointed elsewhere, and a permission change would
//! change every sharer. The edits refuse addresses in the shared region,
//! and in the kernel region, with [`FassError::NotPrivate`], as
//! [`Fass::unmap_pages`] does. The lookups report a segment's section for
//! a space that maps the segment ([`PageMapping::segment`]).
//!
//! # Cost
//! [`Fass::translate`] is one directory search and one table read.
//! [`Fass::for_each_mapping_of`] has no reverse index to consult: it reads
//! every entry of every second-level table of every space (256 per slot in
//! use), which is what a caller keeping no index of its own pays per call.
//!
//! [`PageTable`]: mmu_armv5::table::PageTable
//! [`Fass::map_pages`]: crate::Fass::map_pages
//! [`Fass::unmap_pages`]: crate::Fass::unmap_pages

use crate::classic::TableSwitch;
use crate::error::FassError;
use crate::id::{SegmentId, SpaceId};
use crate::layout::{Layout, RegionKind, SLOT_SHIFT};
use crate::manager::{purge_page, Fass};
use crate::platform::Platform;
use crate::policy::VictimPolicy;
use crate::space::{SpaceError, PAGE_SIZE};
use mmu_armv5::addr::Align;
use mmu_armv5::descriptor::{CachePolicy, L1Descriptor, L2Descriptor, SmallPageDesc, SubpageAp};
use mmu_armv5::size::{Frame, PageSizeKind};
use mmu_armv5::table::{write_l2_page, TableAlloc, TableFlush, TableRef};
use mmu_armv5::{FcsePid, ModifiedVirtAddr, PhysAddr, VirtAddr};

/// One page a space maps, as the manager's tables hold it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct PageMapping {
    /// First modified virtual address of the page (its address relocated
    /// by the space's FCSE PID): what the caches and the TLB know it by.
    pub mva: ModifiedVirtAddr,
    /// First physical address of the page.
    pub pa: PhysAddr,
    /// The page size: [`PageSizeKind::Small`] for a private page,
    /// [`PageSizeKind::Section`] for a shared segment's.
    pub size: PageSizeKind,
    /// Access permission per 1 KiB subpage (uniform as mapped; an edit
    /// may set them one by one).
    pub ap: SubpageAp,
    /// C and B bits.
    pub cache: CachePolicy,
    /// The shared segment the page belongs to (never edited per page), or
    /// `None` for a private page.
    pub segment: Option<SegmentId>,
}

impl PageMapping {
    /// Whether privileged code may write through some subpage (an access
    /// permission other than `NoneOrRom`).
    #[must_use]
    pub fn writable(&self) -> bool {
        self.ap
            .0
            .iter()
            .any(|&a| a != mmu_armv5::descriptor::AccessPermission::NoneOrRom)
    }
}

/// What [`Fass::retarget_page`] (and [`TableSwitch::retarget_page`]) does
/// with the page's cache lines.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum PageLines {
    /// Clean and invalidate the page's D-cache lines and invalidate its
    /// I-cache lines by MVA, then drain the write buffer, before the
    /// descriptor changes: no line of the old frame survives under the MVA.
    Purge,
    /// Leave the lines alone: the caller cleans them before the change and
    /// invalidates them after it (as `spm`'s exchange does for every
    /// mapping of both pages). Otherwise a line of the old frame is read
    /// through the new mapping, and a dirty one is written back over the
    /// old frame's next user.
    LeaveToCaller,
}

/// The page of `mva` in a second-level table: the table, the descriptor's
/// index and the small-page descriptor.
type Located = (TableRef, usize, SmallPageDesc);

/// The edit a per-page change makes.
#[derive(Clone, Copy)]
enum Edit {
    Ap(SubpageAp),
    Frame(PhysAddr, PageLines),
}

/// The small page at `mva` in the second-level table of the directory
/// word `word` (its slot's), if it maps one.
fn locate_in<A: TableAlloc + ?Sized>(
    alloc: &A,
    word: u32,
    mva: ModifiedVirtAddr,
) -> Result<Option<Located>, FassError> {
    let Some((kind, tpa)) = L1Descriptor::from_bits(word).table() else {
        return Ok(None);
    };
    let table = TableRef::new(kind, tpa)?;
    let idx = ((mva.as_u32() >> 12) & 0xFF) as usize;
    match L2Descriptor::from_bits(table.read(alloc, idx)?) {
        L2Descriptor::Small(d) => Ok(Some((table, idx, d))),
        _ => Ok(None),
    }
}

fn private_mapping(mva: ModifiedVirtAddr, d: &SmallPageDesc) -> PageMapping {
    PageMapping {
        mva: mva.align_down(Align::KIB_4),
        pa: d.frame.start(),
        size: PageSizeKind::Small,
        ap: d.ap,
        cache: d.cache,
        segment: None,
    }
}

/// Checks an edit of the page at `va` of a space at `pid` (page address,
/// new frame, a private region) and returns the page's MVA.
fn check_edit(
    layout: &Layout,
    pid: FcsePid,
    va: VirtAddr,
    edit: Edit,
) -> Result<ModifiedVirtAddr, FassError> {
    let mva = va.to_mva(pid);
    if !va.as_u32().is_multiple_of(PAGE_SIZE) {
        return Err(FassError::Space(SpaceError::Misaligned(va.as_u32())));
    }
    if let Edit::Frame(pa, _) = edit {
        if !pa.as_u32().is_multiple_of(PAGE_SIZE) {
            return Err(FassError::Space(SpaceError::Misaligned(pa.as_u32())));
        }
    }
    if matches!(
        layout.classify(mva),
        RegionKind::Kernel | RegionKind::Shared
    ) {
        return Err(FassError::NotPrivate(va));
    }
    Ok(mva)
}

impl<P: VictimPolicy, const SPACES: usize, const SLOTS: usize, const SEGMENTS: usize>
    Fass<P, SPACES, SLOTS, SEGMENTS>
{
    /// The spaces that exist, in identifier order.
    pub fn space_ids(&self) -> impl Iterator<Item = SpaceId> + '_ {
        self.spaces
            .iter()
            .enumerate()
            .filter(|(_, s)| s.is_some())
            .map(|(i, _)| SpaceId(i as u16))
    }

    /// What space `id` maps at `va` (any address inside the page): a
    /// private page, a section of a shared segment the space maps, or
    /// `None`. Table memory is read through `alloc` (the platform).
    ///
    /// # Errors
    /// [`FassError::UnknownSpace`]; [`FassError::NotPrivate`] for an
    /// address in the kernel region (the kernel's table is not a space's);
    /// [`FassError::Table`] if a table cannot be read.
    pub fn translate<A: TableAlloc + ?Sized>(
        &self,
        alloc: &A,
        id: SpaceId,
        va: VirtAddr,
    ) -> Result<Option<PageMapping>, FassError> {
        self.translate_dir(alloc, id, va).map(|(m, _)| m)
    }

    /// [`Fass::translate`], with the space-directory word of a private
    /// page's slot (the coarse-table entry, domain 0; 0 for a segment's
    /// section or an unmapped page): the word the copy's window set-up
    /// fills the CPD slot from, so that it does not search the directory
    /// a second time.
    pub(crate) fn translate_dir<A: TableAlloc + ?Sized>(
        &self,
        alloc: &A,
        id: SpaceId,
        va: VirtAddr,
    ) -> Result<(Option<PageMapping>, u32), FassError> {
        let st = self.space(id)?;
        let mva = va.to_mva(st.pid.pid());
        match self.layout.classify(mva) {
            RegionKind::Kernel => return Err(FassError::NotPrivate(va)),
            RegionKind::Shared => {
                return Ok((self.segment_page(mva, |g| st.segs.contains(g)), 0));
            }
            _ => {}
        }
        let Some(word) = st.dir.raw(mva.l1_index()) else {
            return Ok((None, 0));
        };
        let mapping = locate_in(alloc, word, mva)?.map(|(_, _, d)| private_mapping(mva, &d));
        Ok((mapping, word))
    }

    /// The section of the segment at `mva` if `maps(segment)`.
    fn segment_page(
        &self,
        mva: ModifiedVirtAddr,
        maps: impl Fn(SegmentId) -> bool,
    ) -> Option<PageMapping> {
        let slot = mva.l1_index();
        let (g, seg) = self.segments.at_slot(slot)?;
        if !maps(g) {
            return None;
        }
        let spec = seg.spec();
        let first = seg.slots().start;
        Some(PageMapping {
            mva: ModifiedVirtAddr::new((slot as u32) << SLOT_SHIFT),
            pa: PhysAddr::new(spec.pa.as_u32() + (((slot - first) as u32) << SLOT_SHIFT)),
            size: PageSizeKind::Section,
            ap: SubpageAp::uniform(spec.ap),
            cache: spec.cache,
            segment: Some(g),
        })
    }

    /// The private page of space `id` at `mva`, if mapped.
    fn locate<A: TableAlloc + ?Sized>(
        &self,
        alloc: &A,
        id: SpaceId,
        mva: ModifiedVirtAddr,
    ) -> Result<Option<Located>, FassError> {
        match self.space(id)?.dir.raw(mva.l1_index()) {
            Some(word) => locate_in(alloc, word, mva),
            None => Ok(None),
        }
    }

    /// Calls `f` with every private page of space `id`, in no particular
    /// order (slot by slot, ascending within a slot).
    ///
    /// # Errors
    /// [`FassError::UnknownSpace`]; [`FassError::Table`] if a table cannot
    /// be read.
    pub fn for_each_page<A: TableAlloc + ?Sized>(
        &self,
        alloc: &A,
        id: SpaceId,
        mut f: impl FnMut(PageMapping),
    ) -> Result<(), FassError> {
        let st = self.space(id)?;
        for slot in st.dir.slots() {
            let Some((kind, tpa)) = st.dir.entry(slot).table() else {
                continue;
            };
            let table = TableRef::new(kind, tpa)?;
            for idx in 0..256u32 {
                if let L2Descriptor::Small(d) =
                    L2Descriptor::from_bits(table.read(alloc, idx as usize)?)
                {
                    let mva = ModifiedVirtAddr::new(((slot as u32) << SLOT_SHIFT) | (idx << 12));
                    f(private_mapping(mva, &d));
                }
            }
        }
        Ok(())
    }

    /// Calls `f` with every mapping of the frame at `pa` (any address
    /// inside it): every private page of every space that maps it, and for
    /// each space that maps a shared segment holding it, the segment's
    /// section. Reads every second-level table of every space (see the
    /// [module docs](self#cost)).
    ///
    /// # Errors
    /// [`FassError::Table`] if a table cannot be read (`f` may have been
    /// called for some mappings).
    pub fn for_each_mapping_of<A: TableAlloc + ?Sized>(
        &self,
        alloc: &A,
        pa: PhysAddr,
        mut f: impl FnMut(SpaceId, PageMapping),
    ) -> Result<(), FassError> {
        let frame = pa.as_u32() & !(PAGE_SIZE - 1);
        for id in self.space_ids() {
            self.for_each_page(alloc, id, |m| {
                if m.pa.as_u32() == frame {
                    f(id, m);
                }
            })?;
            let segs = self.space(id)?.segs;
            for g in segs.iter() {
                let Ok(seg) = self.segments.get(g) else {
                    continue;
                };
                let spec = seg.spec();
                let off = frame.wrapping_sub(spec.pa.as_u32());
                if off < spec.size {
                    let mva = ModifiedVirtAddr::new(spec.base.as_u32() + off);
                    if let Some(m) = self.segment_page(mva, |s| s == g) {
                        f(id, m);
                    }
                }
            }
        }
        Ok(())
    }

    /// Sets the access permissions of space `id`'s private page at `va`
    /// (4 KiB aligned) to `ap`, keeping its frame and cache policy, and
    /// returns the page as it was. Cleans the descriptor's table line and
    /// invalidates the page's TLB entry (see the [module docs](self)).
    ///
    /// # Errors
    /// [`FassError::UnknownSpace`]; [`SpaceError::Misaligned`];
    /// [`FassError::NotPrivate`] in the kernel or shared region (a segment
    /// page is not edited per page); [`SpaceError::NotMapped`];
    /// [`FassError::Table`]. Nothing is changed then.
    pub fn set_page_ap<S: Platform + ?Sized>(
        &mut self,
        sys: &mut S,
        id: SpaceId,
        va: VirtAddr,
        ap: SubpageAp,
    ) -> Result<PageMapping, FassError> {
        self.edit_page(sys, id, va, Edit::Ap(ap))
    }

    /// Points space `id`'s private page at `va` (4 KiB aligned) at the
    /// frame starting at `pa`, keeping its permissions and cache policy,
    /// and returns the page as it was. With [`PageLines::Purge`] the page's
    /// cache lines are cleaned and invalidated by MVA first; then the
    /// descriptor's table line is cleaned and the page's TLB entry
    /// invalidated (see the [module docs](self)).
    ///
    /// # Errors
    /// As [`Fass::set_page_ap`], and [`SpaceError::Misaligned`] for `pa`.
    /// Nothing is changed then.
    pub fn retarget_page<S: Platform + ?Sized>(
        &mut self,
        sys: &mut S,
        id: SpaceId,
        va: VirtAddr,
        pa: PhysAddr,
        lines: PageLines,
    ) -> Result<PageMapping, FassError> {
        self.edit_page(sys, id, va, Edit::Frame(pa, lines))
    }

    fn edit_page<S: Platform + ?Sized>(
        &mut self,
        sys: &mut S,
        id: SpaceId,
        va: VirtAddr,
        edit: Edit,
    ) -> Result<PageMapping, FassError> {
        let mva = check_edit(&self.layout, self.space(id)?.pid.pid(), va, edit)?;
        let (table, _, old) = self
            .locate(&*sys, id, mva)?
            .ok_or(FassError::Space(SpaceError::NotMapped(mva)))?;
        apply(sys, table, mva, old, edit)?;
        Ok(private_mapping(mva, &old))
    }
}

/// Rewrites the small-page descriptor `old` of `mva` in `table` as `edit`
/// says, with its maintenance.
fn apply<S: Platform + ?Sized>(
    sys: &mut S,
    table: TableRef,
    mva: ModifiedVirtAddr,
    old: SmallPageDesc,
    edit: Edit,
) -> Result<(), FassError> {
    let new = match edit {
        Edit::Ap(ap) => SmallPageDesc { ap, ..old },
        Edit::Frame(pa, lines) => {
            if lines == PageLines::Purge {
                purge_page(sys, mva);
            }
            SmallPageDesc {
                frame: Frame::containing(pa),
                ..old
            }
        }
    };
    let mut flush = TableFlush::new();
    // SAFETY: a second-level table the space's own directory links (never
    // one handed to a token to be freed: that happens only when a slot
    // empties, and this page is mapped); one small-page descriptor is
    // rewritten in place, no first-level link changes.
    unsafe { write_l2_page(&*sys, table, mva, L2Descriptor::Small(new), &mut flush)? };
    flush.tlb_stale(mva, PAGE_SIZE, PAGE_SIZE);
    flush.flush_on(sys);
    Ok(())
}

impl<const SPACES: usize, const SEGMENTS: usize> TableSwitch<SPACES, SEGMENTS> {
    /// The spaces that exist, in identifier order.
    pub fn space_ids(&self) -> impl Iterator<Item = SpaceId> + '_ {
        self.spaces
            .iter()
            .enumerate()
            .filter(|(_, s)| s.is_some())
            .map(|(i, _)| SpaceId(i as u16))
    }

    /// What space `id` maps at `va`, as [`Fass::translate`].
    ///
    /// # Errors
    /// As [`Fass::translate`].
    pub fn translate<A: TableAlloc + ?Sized>(
        &self,
        alloc: &A,
        id: SpaceId,
        va: VirtAddr,
    ) -> Result<Option<PageMapping>, FassError> {
        let st = self.space(id)?;
        let mva = va.to_mva(st.pid());
        let kind = self.layout.classify(mva);
        if kind == RegionKind::Kernel {
            return Err(FassError::NotPrivate(va));
        }
        let Some(m) = st.table.lookup(alloc, mva)? else {
            return Ok(None);
        };
        let segment = match kind {
            RegionKind::Shared => self
                .segments
                .at_slot(mva.l1_index())
                .map(|(g, _)| g)
                .filter(|&g| st.segs.contains(g)),
            _ => None,
        };
        Ok(Some(PageMapping {
            mva: m.mva,
            pa: m.pa,
            size: m.size,
            ap: m.ap,
            cache: m.cache,
            segment,
        }))
    }

    /// Calls `f` with every private page of space `id` (not the kernel's
    /// entries or segments copied into its table), in MVA order.
    ///
    /// # Errors
    /// [`FassError::UnknownSpace`]; [`FassError::Table`].
    pub fn for_each_page<A: TableAlloc + ?Sized>(
        &self,
        alloc: &A,
        id: SpaceId,
        mut f: impl FnMut(PageMapping),
    ) -> Result<(), FassError> {
        let st = self.space(id)?;
        for m in st.table.mappings(alloc) {
            let m = m?;
            if !matches!(
                self.layout.classify(m.mva),
                RegionKind::Kernel | RegionKind::Shared
            ) {
                f(PageMapping {
                    mva: m.mva,
                    pa: m.pa,
                    size: m.size,
                    ap: m.ap,
                    cache: m.cache,
                    segment: None,
                });
            }
        }
        Ok(())
    }

    /// Calls `f` with every private page of every space that maps the
    /// frame at `pa` (any address inside it), and every segment section
    /// holding it, once per sharer. Walks every space's table.
    ///
    /// # Errors
    /// [`FassError::Table`].
    pub fn for_each_mapping_of<A: TableAlloc + ?Sized>(
        &self,
        alloc: &A,
        pa: PhysAddr,
        mut f: impl FnMut(SpaceId, PageMapping),
    ) -> Result<(), FassError> {
        let frame = pa.as_u32() & !(PAGE_SIZE - 1);
        for id in self.space_ids() {
            self.for_each_page(alloc, id, |m| {
                if m.pa.as_u32() == frame {
                    f(id, m);
                }
            })?;
            for g in self.space(id)?.segs.iter() {
                let Ok(seg) = self.segments.get(g) else {
                    continue;
                };
                let spec = seg.spec();
                let off = frame.wrapping_sub(spec.pa.as_u32());
                if off < spec.size {
                    let va = VirtAddr::new(spec.base.as_u32() + off);
                    if let Some(m) = self.translate(alloc, id, va)? {
                        f(id, m);
                    }
                }
            }
        }
        Ok(())
    }

    /// Sets the access permissions of space `id`'s private page at `va`,
    /// as [`Fass::set_page_ap`], in the space's own table.
    ///
    /// # Errors
    /// As [`Fass::set_page_ap`].
    pub fn set_page_ap<S: Platform + ?Sized>(
        &mut self,
        sys: &mut S,
        id: SpaceId,
        va: VirtAddr,
        ap: SubpageAp,
    ) -> Result<PageMapping, FassError> {
        self.edit_page(sys, id, va, Edit::Ap(ap))
    }

    /// Points space `id`'s private page at `va` at the frame at `pa`, as
    /// [`Fass::retarget_page`], in the space's own table.
    ///
    /// # Errors
    /// As [`Fass::retarget_page`].
    pub fn retarget_page<S: Platform + ?Sized>(
        &mut self,
        sys: &mut S,
        id: SpaceId,
        va: VirtAddr,
        pa: PhysAddr,
        lines: PageLines,
    ) -> Result<PageMapping, FassError> {
        self.edit_page(sys, id, va, Edit::Frame(pa, lines))
    }

    fn edit_page<S: Platform + ?Sized>(
        &mut self,
        sys: &mut S,
        id: SpaceId,
        va: VirtAddr,
        edit: Edit,
    ) -> Result<PageMapping, FassError> {
        let mva = check_edit(&self.layout, self.space(id)?.pid(), va, edit)?;
        let st = self.space(id)?;
        let not_mapped = FassError::Space(SpaceError::NotMapped(mva));
        let m = st.table.lookup(&*sys, mva)?.ok_or(not_mapped)?;
        if m.size != PageSizeKind::Small {
            // These strategies map private pages as small pages only.
            return Err(not_mapped);
        }
        let old = PageMapping {
            mva: m.mva,
            pa: m.pa,
            size: m.size,
            ap: m.ap,
            cache: m.cache,
            segment: None,
        };
        let st = self.space_mut(id)?;
        let flush = match edit {
            Edit::Ap(ap) => st.table.set_page_ap(&*sys, mva, ap)?,
            Edit::Frame(pa, lines) => {
                if lines == PageLines::Purge {
                    purge_page(sys, mva);
                }
                st.table.retarget_page(&*sys, mva, pa)?
            }
        };
        flush.flush_on(sys);
        Ok(old)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classic::ClassicKind;
    use crate::pid::PidMode;
    use crate::segment::{SegmentAccess, SegmentSpec};
    use crate::space::tests::mem;
    use crate::switch::tests::{classic, setup, Sys, F};
    use crate::switch::SwitchStrategy;
    use crate::{domain::DomainSet, layout::Layout};
    use mmu_armv5::descriptor::{AccessPermission as Ap, L1Descriptor};
    use mmu_armv5::regs::{Cp15Event, Cp15Op, Far, Fsr};
    use mmu_armv5::size::{Frame, Page, PageRange};
    use std::vec::Vec;

    const VA: u32 = 0x8000;
    const FRAME: u32 = 0x0030_0000;
    const OTHER: u32 = 0x0031_0000;
    const SEG: u32 = 0x8000_0000;
    const SEG_PA: u32 = 0x0040_0000;

    fn va(a: u32) -> VirtAddr {
        VirtAddr::new(a)
    }

    fn pa(a: u32) -> PhysAddr {
        PhysAddr::new(a)
    }

    fn rw() -> SubpageAp {
        SubpageAp::uniform(Ap::ReadWrite)
    }

    fn ro() -> SubpageAp {
        SubpageAp::uniform(Ap::NoneOrRom)
    }

    /// Spaces 1 and 2 map `FRAME` at `VA` (read/write, write-back); space 1
    /// also maps segment 0 (1 MiB at `SEG`, read-only for users).
    fn two_spaces(f: &mut F, sys: &mut Sys<'_>) {
        for s in [1, 2] {
            f.add_space(SpaceId(s)).unwrap();
            f.map_page(
                sys,
                SpaceId(s),
                Page::from_start(va(VA)).unwrap(),
                Frame::from_start(pa(FRAME)).unwrap(),
                Ap::ReadWrite,
                CachePolicy::WriteBack,
            )
            .unwrap();
        }
        let spec = SegmentSpec {
            base: va(SEG),
            pa: pa(SEG_PA),
            size: 1 << 20,
            ap: Ap::PrivRwUserRo,
            cache: CachePolicy::WriteThrough,
        };
        f.create_segment(SegmentId(0), spec).unwrap();
        f.map_segment(
            sys,
            SpaceId(1),
            SegmentId(0),
            va(SEG),
            SegmentAccess::Client,
        )
        .unwrap();
    }

    /// The frame a first-level entry `l1` leads `mva` to, read from
    /// table memory as the walker does.
    fn walk(sys: &Sys<'_>, l1: L1Descriptor, mva: ModifiedVirtAddr) -> Option<PhysAddr> {
        let (kind, tpa) = l1.table()?;
        let t = TableRef::new(kind, tpa).unwrap();
        let i = ((mva.as_u32() >> 12) & 0xFF) as usize;
        L2Descriptor::from_bits(t.read(sys, i).unwrap()).frame_start()
    }

    /// The frame the CPD maps at `mva` now.
    fn cpd_frame(f: &F, sys: &Sys<'_>, mva: ModifiedVirtAddr) -> Option<PhysAddr> {
        walk(sys, f.cpd().entry(sys, mva.l1_index()).unwrap(), mva)
    }

    #[test]
    fn translate_reports_private_pages_segments_and_nothing_else() {
        let mut mem = mem();
        let (mut f, mut sys) = setup(&mut mem, Layout::DEMO, DomainSet::EMPTY);
        two_spaces(&mut f, &mut sys);
        let (a, b) = (SpaceId(1), SpaceId(2));
        let page = f.translate(&sys, a, va(VA + 0x123)).unwrap().unwrap();
        assert_eq!(
            page,
            PageMapping {
                mva: f.mva_of(a, va(VA)).unwrap(),
                pa: pa(FRAME),
                size: PageSizeKind::Small,
                ap: rw(),
                cache: CachePolicy::WriteBack,
                segment: None,
            }
        );
        assert!(page.writable());
        // B's page is the same frame at its own MVA.
        let pb = f.translate(&sys, b, va(VA)).unwrap().unwrap();
        assert_eq!((pb.pa, pb.mva), (pa(FRAME), f.mva_of(b, va(VA)).unwrap()));
        assert_ne!(pb.mva, page.mva);
        assert_eq!(f.translate(&sys, a, va(VA + 0x1000)).unwrap(), None);
        // The segment: a section, for its sharer only.
        let s = f.translate(&sys, a, va(SEG + 0x5432)).unwrap().unwrap();
        assert_eq!(
            (s.pa, s.mva, s.size, s.segment, s.ap, s.cache),
            (
                pa(SEG_PA),
                ModifiedVirtAddr::new(SEG),
                PageSizeKind::Section,
                Some(SegmentId(0)),
                SubpageAp::uniform(Ap::PrivRwUserRo),
                CachePolicy::WriteThrough
            )
        );
        assert_eq!(f.translate(&sys, b, va(SEG)).unwrap(), None);
        assert_eq!(
            f.translate(&sys, a, va(0xC000_0000)),
            Err(FassError::NotPrivate(va(0xC000_0000)))
        );
        assert_eq!(
            f.translate(&sys, SpaceId(3), va(VA)),
            Err(FassError::UnknownSpace(SpaceId(3)))
        );
    }

    #[test]
    fn every_mapping_of_a_frame_is_found_in_every_space() {
        let mut mem = mem();
        let (mut f, mut sys) = setup(&mut mem, Layout::DEMO, DomainSet::EMPTY);
        two_spaces(&mut f, &mut sys);
        let mut seen = Vec::new();
        f.for_each_mapping_of(&sys, pa(FRAME + 0x80), |s, m| seen.push((s, m.mva)))
            .unwrap();
        let mva = |s| f.mva_of(SpaceId(s), va(VA)).unwrap();
        assert_eq!(seen, [(SpaceId(1), mva(1)), (SpaceId(2), mva(2))]);
        seen.clear();
        f.for_each_mapping_of(&sys, pa(SEG_PA + 0x3000), |s, m| seen.push((s, m.mva)))
            .unwrap();
        assert_eq!(seen, [(SpaceId(1), ModifiedVirtAddr::new(SEG))]);
        seen.clear();
        f.for_each_mapping_of(&sys, pa(OTHER), |s, m| seen.push((s, m.mva)))
            .unwrap();
        assert_eq!(seen, []);
    }

    /// The maintenance of one descriptor rewrite: its table line cleaned,
    /// the write buffer drained, the page's TLB entry invalidated.
    fn descriptor_maintenance(f: &F, sys: &Sys<'_>, id: SpaceId) -> Vec<Cp15Event> {
        let mva = f.mva_of(id, va(VA)).unwrap();
        let (t, idx, _) = f.locate(sys, id, mva).unwrap().unwrap();
        let line = t.entry_mva(sys, idx).as_u32() & !31;
        std::vec![
            Cp15Event::Op(Cp15Op::CleanDCacheLine, line),
            Cp15Event::Op(Cp15Op::DrainWriteBuffer, 0),
            Cp15Event::Op(Cp15Op::InvalidateTlbEntry, mva.as_u32()),
        ]
    }

    #[test]
    fn a_permission_change_rewrites_one_descriptor_and_its_tlb_entry() {
        let mut mem = mem();
        let (mut f, mut sys) = setup(&mut mem, Layout::DEMO, DomainSet::EMPTY);
        two_spaces(&mut f, &mut sys);
        let a = SpaceId(1);
        let want = descriptor_maintenance(&f, &sys, a);
        sys.hw.cp15_mut().clear();
        let was = f.set_page_ap(&mut sys, a, va(VA), ro()).unwrap();
        assert_eq!(sys.hw.cp15().events(), want);
        assert_eq!(was.ap, rw());
        let now = f.translate(&sys, a, va(VA)).unwrap().unwrap();
        assert_eq!(now, PageMapping { ap: ro(), ..was });
        assert!(!now.writable());
        // The other space's mapping of the frame is untouched.
        let b = f.translate(&sys, SpaceId(2), va(VA)).unwrap().unwrap();
        assert_eq!(b.ap, rw());
        // And back.
        f.set_page_ap(&mut sys, a, va(VA), was.ap).unwrap();
        assert_eq!(f.translate(&sys, a, va(VA)).unwrap(), Some(was));
    }

    #[test]
    fn a_retarget_purges_the_lines_only_when_asked_and_the_cpd_follows() {
        let mut mem = mem();
        let (mut f, mut sys) = setup(&mut mem, Layout::DEMO, DomainSet::EMPTY);
        two_spaces(&mut f, &mut sys);
        let a = SpaceId(1);
        let mva = f.mva_of(a, va(VA)).unwrap();
        // A runs and its slot is filled: the CPD links A's table.
        f.switch_to(&mut sys, a).unwrap();
        let fill = f
            .resolve(&mut sys, Fsr::from_bits(0x005), Far::from_bits(VA))
            .unwrap();
        assert!(
            matches!(fill, crate::Resolution::Resolved { .. }),
            "{fill:?}"
        );
        assert_eq!(cpd_frame(&f, &sys, mva), Some(pa(FRAME)));

        let table = descriptor_maintenance(&f, &sys, a);
        sys.hw.cp15_mut().clear();
        let was = f
            .retarget_page(&mut sys, a, va(VA), pa(OTHER), PageLines::LeaveToCaller)
            .unwrap();
        assert_eq!(sys.hw.cp15().events(), table);
        assert_eq!(was.pa, pa(FRAME));
        assert_eq!(
            f.translate(&sys, a, va(VA)).unwrap(),
            Some(PageMapping {
                pa: pa(OTHER),
                ..was
            })
        );
        assert_eq!(cpd_frame(&f, &sys, mva), Some(pa(OTHER)));

        // Purge: every line of the page by MVA (D clean+invalidate, I
        // invalidate), a drain, then the descriptor's maintenance.
        sys.hw.cp15_mut().clear();
        f.retarget_page(&mut sys, a, va(VA), pa(FRAME), PageLines::Purge)
            .unwrap();
        let ev = sys.hw.cp15().events();
        let lines = (PAGE_SIZE / 32) as usize;
        assert_eq!(ev.len(), 2 * lines + 1 + table.len());
        for (i, pair) in ev[..2 * lines].chunks(2).enumerate() {
            let l = mva.as_u32() + 32 * i as u32;
            assert_eq!(
                pair,
                [
                    Cp15Event::Op(Cp15Op::CleanInvalidateDCacheLine, l),
                    Cp15Event::Op(Cp15Op::InvalidateICacheLine, l),
                ]
            );
        }
        assert_eq!(ev[2 * lines], Cp15Event::Op(Cp15Op::DrainWriteBuffer, 0));
        assert_eq!(ev[2 * lines + 1..], table[..]);
        assert_eq!(cpd_frame(&f, &sys, mva), Some(pa(FRAME)));
        // B's mapping never moved.
        let b = f.translate(&sys, SpaceId(2), va(VA)).unwrap().unwrap();
        assert_eq!(b.pa, pa(FRAME));
    }

    #[test]
    fn edits_refuse_what_they_cannot_change_and_change_nothing() {
        let mut mem = mem();
        let (mut f, mut sys) = setup(&mut mem, Layout::DEMO, DomainSet::EMPTY);
        two_spaces(&mut f, &mut sys);
        let a = SpaceId(1);
        let mva = |v| f.mva_of(a, va(v)).unwrap();
        let not_mapped = FassError::Space(SpaceError::NotMapped(mva(VA + 0x1000)));
        let cases = [
            (SpaceId(7), VA, FRAME, FassError::UnknownSpace(SpaceId(7))),
            (
                a,
                VA + 4,
                FRAME,
                FassError::Space(SpaceError::Misaligned(VA + 4)),
            ),
            (
                a,
                VA,
                OTHER + 8,
                FassError::Space(SpaceError::Misaligned(OTHER + 8)),
            ),
            (a, VA + 0x1000, OTHER, not_mapped),
            (a, SEG, OTHER, FassError::NotPrivate(va(SEG))),
            (
                a,
                0xC000_0000,
                OTHER,
                FassError::NotPrivate(va(0xC000_0000)),
            ),
        ];
        let before = f.translate(&sys, a, va(VA)).unwrap();
        sys.hw.cp15_mut().clear();
        for (id, v, p, want) in cases {
            let r = f.retarget_page(&mut sys, id, va(v), pa(p), PageLines::Purge);
            assert_eq!(r, Err(want), "retarget {v:#x} -> {p:#x}");
            if p == FRAME || p == OTHER {
                assert_eq!(
                    f.set_page_ap(&mut sys, id, va(v), ro()),
                    Err(want),
                    "ap {v:#x}"
                );
            }
        }
        assert_eq!(sys.hw.cp15().events(), []);
        assert_eq!(f.translate(&sys, a, va(VA)).unwrap(), before);
        assert_eq!(
            f.translate(&sys, a, va(SEG)).unwrap().map(|m| m.pa),
            Some(pa(SEG_PA))
        );
    }

    #[test]
    fn the_classic_strategies_look_up_and_edit_the_same_way() {
        for kind in [ClassicKind::Fcse(PidMode::Guaranteed), ClassicKind::Naive] {
            let mut mem = mem();
            let (mut t, mut sys) = classic(&mut mem, kind);
            let (a, b) = (SpaceId(1), SpaceId(2));
            for s in [a, b] {
                t.create_space(&mut sys, s).unwrap();
                t.map_pages(
                    &mut sys,
                    s,
                    PageRange::from(Page::from_start(va(VA)).unwrap()),
                    Frame::from_start(pa(FRAME)).unwrap(),
                    Ap::ReadWrite,
                    CachePolicy::WriteBack,
                )
                .unwrap();
            }
            let mut seen = Vec::new();
            t.for_each_mapping_of(&sys, pa(FRAME), |s, m| seen.push((s, m.mva)))
                .unwrap();
            let (ma, mb) = (t.mva_of(a, va(VA)).unwrap(), t.mva_of(b, va(VA)).unwrap());
            assert_eq!(seen, [(a, ma), (b, mb)], "{kind:?}");
            let was = t.set_page_ap(&mut sys, a, va(VA), ro()).unwrap();
            assert_eq!(
                (was.pa, was.ap, was.size),
                (pa(FRAME), rw(), PageSizeKind::Small)
            );
            sys.hw.cp15_mut().clear();
            let was = t
                .retarget_page(&mut sys, a, va(VA), pa(OTHER), PageLines::LeaveToCaller)
                .unwrap();
            // No line maintenance at the page; its TLB entry invalidated.
            let ev = sys.hw.cp15().events();
            assert!(ev.contains(&Cp15Event::Op(Cp15Op::InvalidateTlbEntry, ma.as_u32())));
            assert!(!ev.iter().any(|e| matches!(
                e,
                Cp15Event::Op(
                    Cp15Op::CleanInvalidateDCacheLine | Cp15Op::InvalidateICacheLine,
                    _
                )
            )));
            let now = t.translate(&sys, a, va(VA)).unwrap().unwrap();
            assert_eq!(
                now,
                PageMapping {
                    pa: pa(OTHER),
                    ap: ro(),
                    ..was
                }
            );
            // The hardware table of the space says the same.
            let root =
                TableRef::new(mmu_armv5::table::TableKind::L1, t.root_of(a).unwrap()).unwrap();
            let l1 = L1Descriptor::from_bits(root.read(&sys, ma.l1_index()).unwrap());
            assert_eq!(walk(&sys, l1, ma), Some(pa(OTHER)));
            assert_eq!(
                t.translate(&sys, b, va(VA)).unwrap().map(|m| m.pa),
                Some(pa(FRAME))
            );
            assert_eq!(
                t.set_page_ap(&mut sys, a, va(VA + 0x1000), ro()),
                Err(FassError::Space(SpaceError::NotMapped(
                    t.mva_of(a, va(VA + 0x1000)).unwrap()
                )))
            );
        }
    }
}
