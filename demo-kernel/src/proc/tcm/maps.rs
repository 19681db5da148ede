//! Reverse mappings ([`Maps`]): every user mapping of a frame is one
//! of the kernel's page records (image, stack, `MAP` pages, TCM resource
//! pages), in exactly one space (user pages are private; shared segments
//! are 1 MiB sections and never exchanged); kernel mappings are the
//! records in [`Tcm::kmaps`]. Descriptors are found kernel-side:
//! per-table strategies through `TableSwitch::root_of`; FASS through the
//! CPD entry of the page's MVA (`mva_of`), accepted only if it carries the
//! space's domain (`domain_of`): FASS exposes no per-space directory, so
//! the kernel first makes the caller's slots present in the CPD by
//! touching them (a resolved fault, [`crate::proc::kernel::Kernel::touch`]).
//! The CPD copy and the space's own directory share the second-level
//! table, so one descriptor write changes both. The linear map and the
//! physical window are physical views, not mappings in this sense.
//!
//! The reverse index ([`note_mapper`]) answers who maps a frame in O(1);
//! [`Maps`] is the kernel side of `spm`'s [`Mappings`] over it, the process
//! table and the strategy.
//!
//! # Why not `spm::SpaceMappings`
//! `spm`'s ready-made adapter covers every strategy this kernel runs
//! (`Fass`, `TableSwitch` naive and FCSE) and a kernel `PageTable`, and
//! takes a kernel's reverse index through its `FrameIndex` hook
//! (`SpaceMappings::with_index`: "where is frame F mapped", asked before
//! walking, and "the mappings of A and B swapped", called from
//! [`Mappings::swapped`]): [`RIndex`] and the record updates of
//! [`Mappings::swapped`] here are exactly those two answers. What keeps
//! this kernel on its own `Mappings` is the masked window and its tables:
//! * **Edits in the masked window.** `swap` here is two or four direct
//!   descriptor writes with a line clean each, found from the two frames
//!   looked up last (`tcm_window`: 258 instructions, goal 300). The
//!   adapter checks every remembered site with the strategy's `translate`
//!   and edits it with the strategy's per-page edit (directory search,
//!   table read, TLB flush token). Measured: adding only that check (one
//!   `Fass::translate` per user site of the two frames, two per swap in
//!   that scenario, reached through `mmu::with_tables`) to this `swap`
//!   took `tcm_window` from 258 to 763 and `tcm` from 2,541 to 3,029
//!   (`cargo xtask run --measure --icount 10 --append "scenario=tcm
//!   mode=fass"`), before any edit; `mmu::with_tables` alone accounts for
//!   67 of that (325), so about 219 instructions per `Fass::translate`.
//! * **The kernel's mappings** of TCM frames and of the switch page live in
//!   two static second-level tables outside the table pool (no strategy
//!   ever frees them, see `tcm`'s module docs): `PageTable::lookup` reaches
//!   second-level tables through the pool's `TableAlloc`, which does not
//!   know them, so the adapter's kernel space cannot see these mappings.
//!   [`KMap`] records hold their descriptors instead.

use mmu_armv5::descriptor::{AccessPermission, CachePolicy, CoarseTableDesc, SmallPageDesc};
use mmu_armv5::size::{Frame, PageSizeKind, Size4KiB};
use mmu_armv5::{ModifiedVirtAddr, PhysAddr, VirtAddr};
use spm::{AddressSpace, Mappings, ReverseMapping, Translation};

use super::hw::{clean_line, drain};
use super::{KMap, Tcm, BANK_FRAMES, KMAPS, KTCM_VA, RES_SLOTS};
use crate::global::Global;
use crate::mmu::phys_to_virt;
use crate::proc::frames::{FRAMES_END, FRAMES_PHYS};
use crate::proc::kernel::{Page, Proc, KERNEL_PAGES, USER_PAGES};
use crate::proc::strategy::{dispatch, Strategy, MAX_PROCS};

/// RAM frames the user frame allocator hands out.
const RAM_FRAMES: usize = ((FRAMES_END - FRAMES_PHYS) / 4096) as usize;
/// Frames with kernel mapping records: every TCM frame, then the switch
/// page's home frame.
const KFRAMES: usize = 2 * BANK_FRAMES + 1;
/// Frames in the reverse index: user RAM, then the [`KFRAMES`].
const RFRAMES: usize = RAM_FRAMES + KFRAMES;

/// The reverse index: for every frame `spm` may exchange, who maps it and
/// where its record is, answered in O(1) (user pages are private: at most
/// one user mapping per frame; kernel mappings exist only for TCM frames
/// and the switch page).
pub(super) struct RIndex {
    /// The process that maps the frame (index + 1; 0 none).
    user: [u8; RFRAMES],
    /// Its page record (index into `kernel_pages ++ user_pages ++
    /// res_pages`, + 1; 0 not known yet: found on first use).
    rec: [u8; RFRAMES],
    /// The kernel mapping record (index into [`Tcm::kmaps`], + 1; 0 none):
    /// TCM frames and the switch page's home frame at first, any frame
    /// after exchanges (a record follows its mapping's frame).
    kmap: [u8; RFRAMES],
    /// Bank bases and sizes ([ITCM, DTCM]), the switch page's home frame.
    pub(super) banks: [(u32, u32); 2],
    home: u32,
    /// Bumped whenever a user mapping is added or removed
    /// ([`Mappings::generation`]).
    generation: u64,
    /// The last two frames looked up ([`Maps::found`]): an exchange asks
    /// about the same two frames at every phase.
    hot: [Option<Found>; 2],
    /// Which of `hot` is replaced next.
    hot_next: usize,
}

/// The reverse index. Touched with IRQs masked (or from `kernel_irq`,
/// which never touches it) on one core; every user takes the reference for
/// one short expression or block that calls no other user of it, and never
/// holds two.
pub(super) static RINDEX: Global<RIndex> = Global::new(RIndex {
    user: [0; RFRAMES],
    rec: [0; RFRAMES],
    kmap: [0; RFRAMES],
    banks: [(0, 0); 2],
    home: u32::MAX,
    generation: 0,
    hot: [None; 2],
    hot_next: 0,
});

impl RIndex {
    /// The slot among the [`KFRAMES`] of `pa`, if it has one.
    #[inline(always)]
    fn kslot(&self, pa: u32) -> Option<usize> {
        for (k, &(base, size)) in self.banks.iter().enumerate() {
            let off = pa.wrapping_sub(base);
            if off < size {
                return Some(k * BANK_FRAMES + (off / 4096) as usize);
            }
        }
        (pa == self.home).then_some(2 * BANK_FRAMES)
    }

    /// The reverse-index slot of `pa`, if it has one.
    #[inline(always)]
    fn slot(&self, pa: u32) -> Option<usize> {
        let i = (pa.wrapping_sub(FRAMES_PHYS) / 4096) as usize;
        if i < RAM_FRAMES {
            return Some(i);
        }
        self.kslot(pa).map(|k| RAM_FRAMES + k)
    }
}

/// Indexes the kernel mapping records of `t`, the state [`super::install`]
/// makes this boot's (`home`: the switch page's frame).
pub(super) fn index(t: &Tcm, home: u32) {
    // SAFETY: `RINDEX`'s contract: the only reference, for this block.
    let r = unsafe { RINDEX.get_mut() };
    r.banks =
        [t.layout.itcm, t.layout.dtcm].map(|b| b.map_or((0, 0), |b| (b.base().as_u32(), b.size())));
    r.home = home;
    for (j, k) in t.kmaps.iter().enumerate() {
        if let Some(i) = r.slot(k.pa) {
            r.kmap[i] = j as u8 + 1;
        }
    }
}

/// Records that process `proc` maps frame `pa` (user pages are private:
/// one mapper per frame), or that nobody does.
pub(super) fn note_mapper(pa: u32, proc: Option<usize>) {
    // SAFETY: `RINDEX`'s contract: the only reference, for this block.
    let r = unsafe { RINDEX.get_mut() };
    r.generation = r.generation.wrapping_add(1);
    r.hot = [None; 2];
    if let Some(i) = r.slot(pa) {
        r.user[i] = proc.map_or(0, |p| p as u8 + 1);
        r.rec[i] = 0;
    }
}

/// Page record `k` of `p` (`kernel_pages ++ user_pages ++ res_pages`).
fn record(p: &Proc, k: usize) -> Option<&Page> {
    let (nk, nu) = (p.kernel_pages.len(), p.user_pages.len());
    if k < nk {
        p.kernel_pages[k].as_ref()
    } else if k < nk + nu {
        p.user_pages[k - nk].as_ref()
    } else {
        p.res_pages.get(k - nk - nu)?.as_ref()
    }
}

/// [`record`], mutably.
fn record_mut(p: &mut Proc, k: usize) -> Option<&mut Page> {
    let (nk, nu) = (p.kernel_pages.len(), p.user_pages.len());
    if k < nk {
        p.kernel_pages[k].as_mut()
    } else if k < nk + nu {
        p.user_pages[k - nk].as_mut()
    } else {
        p.res_pages.get_mut(k - nk - nu)?.as_mut()
    }
}

/// Who maps a frame: its reverse-index slot, its user mapping (process,
/// page record index, virtual address) and its kernel mapping record.
#[derive(Clone, Copy)]
struct Who {
    slot: usize,
    user: Option<(usize, usize, u32)>,
    kmap: Option<usize>,
}

/// A frame's mappings as looked up once: who maps it and the descriptor
/// and MVA of its user mapping. Valid while the generation it was found
/// under is current and no swap moved the frame's mappings (a swap forgets
/// every [`Found`]): second-level tables never move (pinned), so a user
/// descriptor stays where it is while the mapping exists, also when FASS
/// takes the space's slot out of the CPD.
#[derive(Clone, Copy)]
struct Found {
    pa: u32,
    generation: u64,
    who: Who,
    entry: Option<(*mut u32, u32)>,
}

/// The user descriptor and kernel mapping record of `pa` if it is among
/// the frames looked up last (and still current).
fn hot_descriptors(pa: u32) -> Option<(Option<*mut u32>, Option<usize>)> {
    // SAFETY: `RINDEX`'s contract: the only reference, for this block.
    let r = unsafe { RINDEX.get_mut() };
    let g = r.generation;
    let h = r
        .hot
        .iter()
        .flatten()
        .find(|h| h.pa == pa && h.generation == g)?;
    Some((h.entry.map(|(e, _)| e), h.who.kmap))
}

/// Keeps `f` among the two frames looked up last.
fn remember(f: Found) {
    // SAFETY: `RINDEX`'s contract: the only reference, for this block.
    let r = unsafe { RINDEX.get_mut() };
    if let Some(h) = r.hot.iter_mut().flatten().find(|h| h.pa == f.pa) {
        *h = f;
        return;
    }
    r.hot[r.hot_next] = Some(f);
    r.hot_next ^= 1;
}

/// Who maps `pa`, from the reverse index (a page record is searched once,
/// then remembered).
fn who(procs: &[Proc; MAX_PROCS], pa: u32) -> Option<Who> {
    // SAFETY: `RINDEX`'s contract: the only reference, for this block.
    let r = unsafe { RINDEX.get_mut() };
    let slot = r.slot(pa)?;
    let kmap = r.kmap[slot].checked_sub(1).map(usize::from);
    let user = r.user[slot]
        .checked_sub(1)
        .map(usize::from)
        .and_then(|w| Some((w, procs.get(w).filter(|p| p.alive())?)))
        .and_then(|(w, p)| {
            if let Some(k) = r.rec[slot].checked_sub(1).map(usize::from) {
                if let Some(pg) = record(p, k).filter(|pg| pg.pa == pa) {
                    return Some((w, k, pg.va));
                }
            }
            let k = (0..RECORDS).find(|&k| record(p, k).is_some_and(|pg| pg.pa == pa))?;
            r.rec[slot] = k as u8 + 1;
            Some((w, k, record(p, k)?.va))
        });
    Some(Who { slot, user, kmap })
}

/// Records per process (`kernel_pages ++ user_pages ++ res_pages`).
const RECORDS: usize = KERNEL_PAGES + USER_PAGES + RES_SLOTS;

/// The access permission of the first 1 KiB of the small page `desc`
/// (the kernel maps every page with one permission for all four).
#[inline(always)]
fn ap_of(desc: u32) -> Option<AccessPermission> {
    SmallPageDesc::from_bits(desc).map(|s| s.ap.get(0))
}

/// The kernel side of `spm`'s [`Mappings`] over the process table and the strategy.
pub(super) struct Maps<'a> {
    /// Processes (their page records).
    pub(super) procs: &'a mut [Proc; MAX_PROCS],
    /// The strategy (MVAs, tables, domains).
    pub(super) strategy: &'a Strategy,
    /// Kernel mapping records.
    pub(super) kmaps: &'a mut [KMap; KMAPS],
    wp: &'a mut [Option<(*mut u32, AccessPermission)>; 8],
    root: *mut u32,
}

impl<'a> Maps<'a> {
    /// Reverse mappings over `procs` and `strategy`, with `t`'s kernel records.
    pub(super) fn new(
        procs: &'a mut [Proc; MAX_PROCS],
        strategy: &'a Strategy,
        t: &'a mut Tcm,
    ) -> Self {
        Maps {
            procs,
            strategy,
            kmaps: &mut t.kmaps,
            wp: &mut t.wp,
            root: t.root,
        }
    }
}

/// The second-level descriptor of `va` in user space `space`, and its MVA.
pub(super) fn user_entry(
    strategy: &Strategy,
    root: *mut u32,
    space: usize,
    va: u32,
) -> Option<(*mut u32, u32)> {
    let id = fass::SpaceId(space as u16);
    let mva = dispatch!(strategy, s => fass::SwitchStrategy::mva_of(s, id, VirtAddr::new(va)))
        .ok()?
        .as_u32();
    let slot = (mva >> 20) as usize;
    let coarse = match strategy {
        Strategy::Fass(f) => {
            // SAFETY: `root` is the kernel's (the CPD's) 16 KiB table in the linear map.
            let e = unsafe { root.add(slot).read_volatile() };
            let dom = f.domain_of(id).ok()??;
            CoarseTableDesc::from_bits(e).filter(|c| c.domain == dom)?
        }
        Strategy::Table(t) => {
            let r = t.root_of(id).ok()?.as_u32();
            // SAFETY: the space's first-level table, pool memory in the linear map.
            let e = unsafe { (phys_to_virt(r) as *const u32).add(slot).read_volatile() };
            CoarseTableDesc::from_bits(e)?
        }
    };
    let l2 = phys_to_virt(coarse.table.start().as_u32()) as *mut u32;
    // SAFETY: a coarse table has 256 entries; the index is below 256.
    let e = unsafe { l2.add(((mva >> 12) & 0xFF) as usize) };
    Some((e, mva))
}

impl Maps<'_> {
    /// The page record and kernel mapping record of `w` now map `to`.
    fn retarget_records(&mut self, w: Option<Who>, to: u32) {
        let Some(w) = w else { return };
        if let Some(pg) = w
            .user
            .and_then(|(p, k, _)| record_mut(&mut self.procs[p], k))
        {
            pg.pa = to;
        }
        if let Some(m) = w.kmap.and_then(|k| self.kmaps.get_mut(k)) {
            m.pa = to;
        }
    }
}

/// A placeholder for arrays of mappings.
const NO_MAPPING: ReverseMapping = ReverseMapping {
    space: AddressSpace::Kernel,
    mva: ModifiedVirtAddr::new(0),
    writable: false,
    cached: false,
};

fn user_space(i: usize) -> AddressSpace {
    // Process indices are below `MAX_PROCS` (64), far inside spm's 12 bits.
    AddressSpace::User(spm::SpaceId::new(i as u16))
}

impl Maps<'_> {
    /// Who maps frame `pa` and where its user descriptor is: from the two
    /// frames looked up last, else through the reverse index (O(1)).
    fn found(&self, pa: u32) -> Option<Found> {
        let (generation, hit) = {
            // SAFETY: `RINDEX`'s contract: the only reference, for this block.
            let r = unsafe { RINDEX.get_mut() };
            let g = r.generation;
            let hit = r
                .hot
                .iter()
                .flatten()
                .find(|h| h.pa == pa && h.generation == g)
                .copied();
            (g, hit)
        };
        if hit.is_some() {
            return hit;
        }
        let w = who(self.procs, pa)?;
        let entry = w
            .user
            .and_then(|(i, _, va)| user_entry(self.strategy, self.root, i, va));
        let f = Found {
            pa,
            generation,
            who: w,
            entry,
        };
        if w.user.is_none() || entry.is_some() {
            remember(f);
        }
        Some(f)
    }

    /// Every mapping of a frame: (space, descriptor, MVA).
    fn each(&self, found: Option<Found>, mut f: impl FnMut(AddressSpace, *mut u32, u32)) {
        let Some(w) = found else { return };
        if let Some((i, _, va)) = w.who.user {
            match w.entry {
                Some((e, mva)) => f(user_space(i), e, mva),
                None => defmt::error!("no descriptor for {=u32:#x} of process {=usize}", va, i),
            }
        }
        if let Some(k) = w.who.kmap.and_then(|k| self.kmaps.get(k)) {
            f(AddressSpace::Kernel, k.entry, k.va);
        }
    }

    /// The kernel mapping record of kernel virtual page `va`.
    fn kmap_at(&self, va: u32) -> Option<&KMap> {
        if va == self.kmaps[0].va {
            return Some(&self.kmaps[0]);
        }
        let i = (va.wrapping_sub(KTCM_VA) / 4096) as usize;
        self.kmaps.get(1 + i).filter(|k| k.va == va)
    }
}

/// Whether `space` may write through the small page `desc`.
fn writable(space: AddressSpace, desc: u32) -> bool {
    ap_of(desc).is_some_and(|ap| ap.allows_write(matches!(space, AddressSpace::Kernel)))
}

/// The descriptor's C bit: the caches may hold lines of the mapping.
fn cacheable(desc: u32) -> bool {
    CachePolicy::from_descriptor(desc).cacheable()
}

impl Mappings for Maps<'_> {
    fn generation(&self) -> Option<u64> {
        // User mappings are added and removed only with a `note_mapper`,
        // and never given write access except by `spm`; kernel mapping
        // records never change except through `swap`. A space's FCSE PID
        // (its MVAs) changes only through its own calls, and a process is
        // blocked in its exchange call until it ends (`State::InTcm`).
        // SAFETY: `RINDEX`'s contract: the only reference, for this block.
        Some(unsafe { RINDEX.get_mut() }.generation)
    }

    fn translate(&self, space: AddressSpace, va: VirtAddr) -> Option<Translation> {
        let page = va.as_u32() & !0xFFF;
        let (pa, entry) = match space {
            AddressSpace::Kernel => {
                let k = self.kmap_at(page)?;
                (k.pa, k.entry)
            }
            AddressSpace::User(s) => {
                let i = usize::from(s.get());
                self.procs.get(i).filter(|p| p.alive())?;
                let (e, mva) = user_entry(self.strategy, self.root, i, page)?;
                // SAFETY: a live second-level descriptor.
                let d = unsafe { e.read_volatile() };
                let pa = SmallPageDesc::word_frame(d).start().as_u32();
                // Only the process's own page records are pages here.
                let w = who(self.procs, pa)?;
                let (p, _, rva) = w.user?;
                if (p, rva) != (i, page) {
                    return None;
                }
                // An exchange asks next for this frame's mappings: keep
                // what was found.
                remember(Found {
                    pa,
                    // SAFETY: `RINDEX`'s contract: the only reference, for this block.
                    generation: unsafe { RINDEX.get_mut() }.generation,
                    who: w,
                    entry: Some((e, mva)),
                });
                (pa, e)
            }
        };
        // SAFETY: `entry` is a live second-level descriptor.
        let d = unsafe { entry.read_volatile() };
        if SmallPageDesc::from_bits(d).is_none_or(|s| s.frame.start().as_u32() != pa) {
            return None;
        }
        Some(Translation {
            page: PhysAddr::new(pa),
            size: PageSizeKind::Small,
            writable: writable(space, d),
        })
    }

    fn for_each_mapping(
        &self,
        page: PhysAddr,
        size: PageSizeKind,
        f: &mut dyn FnMut(&ReverseMapping),
    ) {
        let mut out = [NO_MAPPING; 2];
        let n = self.collect_mappings(page, size, &mut out);
        out[..n.min(2)].iter().for_each(f);
    }

    fn collect_mappings(
        &self,
        page: PhysAddr,
        size: PageSizeKind,
        out: &mut [ReverseMapping],
    ) -> usize {
        if size != PageSizeKind::Small {
            return 0;
        }
        let pa = page.as_u32();
        let found = {
            // SAFETY: `RINDEX`'s contract: the only reference, for this block.
            let r = unsafe { RINDEX.get_mut() };
            let g = r.generation;
            match r
                .hot
                .iter()
                .flatten()
                .find(|h| h.pa == pa && h.generation == g)
            {
                Some(h) => (h.who.user, h.who.kmap, h.entry),
                None => match self.found(pa) {
                    Some(f) => (f.who.user, f.who.kmap, f.entry),
                    None => return 0,
                },
            }
        };
        let (user, kmap, entry) = found;
        let mut n = 0;
        let mut put = |m: ReverseMapping| {
            if let Some(o) = out.get_mut(n) {
                *o = m;
            }
            n += 1;
        };
        if let Some((i, _, va)) = user {
            let space = user_space(i);
            // Unknown descriptor: reported writable and cacheable, so it is
            // never skipped by the protection or the maintenance (and the
            // error is logged there).
            put(match entry {
                Some((e, mva)) => {
                    // SAFETY: a live descriptor.
                    let d = unsafe { e.read_volatile() };
                    ReverseMapping {
                        space,
                        mva: ModifiedVirtAddr::new(mva),
                        writable: writable(space, d),
                        cached: cacheable(d),
                    }
                }
                None => ReverseMapping {
                    space,
                    mva: ModifiedVirtAddr::new(va),
                    writable: true,
                    cached: true,
                },
            });
        }
        if let Some(k) = kmap.and_then(|k| self.kmaps.get(k)) {
            // SAFETY: a live descriptor in a static table.
            let d = unsafe { k.entry.read_volatile() };
            put(ReverseMapping {
                space: AddressSpace::Kernel,
                mva: ModifiedVirtAddr::new(k.va),
                writable: writable(AddressSpace::Kernel, d),
                cached: cacheable(d),
            });
        }
        n
    }

    fn write_protect(&mut self, page: PhysAddr, size: PageSizeKind) {
        if size != PageSizeKind::Small {
            return;
        }
        // The descriptors: from the frames looked up last when possible
        // (this runs inside `spm`'s masked window).
        let (user, kmap) = match hot_descriptors(page.as_u32()) {
            Some(x) => x,
            None => match self.found(page.as_u32()) {
                Some(f) => (f.entry.map(|(e, _)| e), f.who.kmap),
                None => return,
            },
        };
        let kentry = kmap.and_then(|k| self.kmaps.get(k)).map(|k| k.entry);
        let mut n = self.wp.iter().take_while(|s| s.is_some()).count();
        for (e, kernel) in [(user, false), (kentry, true)] {
            let Some(e) = e else { continue };
            // SAFETY: a live descriptor.
            let d = unsafe { e.read_volatile() };
            let space = if kernel {
                AddressSpace::Kernel
            } else {
                user_space(0)
            };
            if !writable(space, d) {
                continue;
            }
            let Some(slot) = self.wp.get_mut(n) else {
                defmt::error!("write-protect records full");
                continue;
            };
            // Users keep read access; the kernel view becomes read-only (SCTLR.S).
            let ro = if kernel {
                AccessPermission::NoneOrRom
            } else {
                AccessPermission::PrivRwUserRo
            };
            let Some(ap) = ap_of(d) else { continue };
            // SAFETY: as above; `spm` invalidates the TLB entry.
            unsafe { e.write_volatile(SmallPageDesc::word_with_ap(d, ro)) };
            clean_line(e);
            *slot = Some((e, ap));
            n += 1;
        }
        drain();
    }

    fn restore_write(&mut self, page: PhysAddr, size: PageSizeKind) {
        if size != PageSizeKind::Small {
            return;
        }
        // The records are packed at the front of `wp`.
        let mut any = false;
        let mut i = 0;
        while let Some(&Some((e, ap))) = self.wp.get(i) {
            // SAFETY: a live descriptor recorded by `write_protect`.
            let d = unsafe { e.read_volatile() };
            if SmallPageDesc::word_frame(d).start() != page {
                i += 1;
                continue;
            }
            // SAFETY: as above; `spm` invalidates the TLB entry.
            unsafe { e.write_volatile(SmallPageDesc::word_with_ap(d, ap)) };
            clean_line(e);
            any = true;
            let last = self.wp.iter().take_while(|s| s.is_some()).count() - 1;
            self.wp[i] = self.wp[last];
            self.wp[last] = None;
        }
        if any {
            drain();
        }
    }

    /// The descriptors only (inside `spm`'s masked window); the records
    /// follow in [`Mappings::swapped`].
    #[inline(always)]
    fn swap(&mut self, a: PhysAddr, b: PhysAddr, size: PageSizeKind) {
        if size != PageSizeKind::Small {
            return;
        }
        let (fa, fb) = (Frame::<Size4KiB>::containing(a), Frame::containing(b));
        let (a, b) = (a.as_u32(), b.as_u32());
        let retarget = |e: *mut u32, to: Frame<Size4KiB>| {
            // SAFETY: a live descriptor; interrupts are masked (spm's contract).
            unsafe { e.write_volatile(SmallPageDesc::word_with_frame(e.read_volatile(), to)) };
            clean_line(e);
        };
        // Both frames were looked up when the exchange collected their
        // mappings: take the descriptors straight from those records.
        let fast = {
            // SAFETY: `RINDEX`'s contract: the only reference, for this block.
            let r = unsafe { RINDEX.get_mut() };
            let g = r.generation;
            let hit = |pa: u32| {
                r.hot
                    .iter()
                    .flatten()
                    .find(|h| h.generation == g && h.pa == pa)
            };
            match (hit(a), hit(b)) {
                (Some(ha), Some(hb)) if a != b => {
                    for (h, to) in [(ha, fb), (hb, fa)] {
                        if let Some((e, _)) = h.entry {
                            retarget(e, to);
                        }
                        if let Some(k) = h.who.kmap.and_then(|k| self.kmaps.get(k)) {
                            retarget(k.entry, to);
                        }
                    }
                    true
                }
                _ => false,
            }
        };
        if !fast {
            // Collect first: the lookups must see the descriptors unchanged.
            let mut es = [(core::ptr::null_mut::<u32>(), fa); 4];
            let mut n = 0;
            for (f, to) in [(self.found(a), fb), (self.found(b), fa)] {
                self.each(f, |_, e, _| {
                    if n < es.len() {
                        es[n] = (e, to);
                        n += 1;
                    }
                });
            }
            for &(e, to) in &es[..n] {
                retarget(e, to);
            }
        }
        drain();
    }

    /// The page records, kernel mapping records and reverse index follow
    /// the descriptors [`Mappings::swap`] changed (nothing reads them from
    /// an interrupt handler).
    #[inline(always)]
    fn swapped(&mut self, a: PhysAddr, b: PhysAddr, size: PageSizeKind) {
        if size != PageSizeKind::Small {
            return;
        }
        let (a, b) = (a.as_u32(), b.as_u32());
        let (ia, ib) = {
            // SAFETY: `RINDEX`'s contract: the only reference, for this block.
            let r = unsafe { RINDEX.get_mut() };
            let g = r.generation;
            let (mut ia, mut ib) = (None, None);
            for (i, h) in r.hot.iter().enumerate() {
                if let Some(h) = h.as_ref().filter(|h| h.generation == g) {
                    if h.pa == a {
                        ia = Some(i);
                    } else if h.pa == b {
                        ib = Some(i);
                    }
                }
            }
            (ia, ib)
        };
        let (wa, wb) = match (ia, ib) {
            (Some(ia), Some(ib)) if ia != ib => {
                // SAFETY: `RINDEX`'s contract: the only reference, for this block.
                let r = unsafe { RINDEX.get_mut() };
                (r.hot[ia].map(|h| h.who), r.hot[ib].map(|h| h.who))
            }
            _ => (self.found(a).map(|f| f.who), self.found(b).map(|f| f.who)),
        };
        self.retarget_records(wa, b);
        self.retarget_records(wb, a);
        // SAFETY: `RINDEX`'s contract: the only reference, for this block.
        let r = unsafe { RINDEX.get_mut() };
        if let (Some(i), Some(j)) = (wa.map(|w| w.slot), wb.map(|w| w.slot)) {
            r.user.swap(i, j);
            r.rec.swap(i, j);
            r.kmap.swap(i, j);
        }
        // What was known about `a` is now true of `b` (its mappings, in
        // `b`'s slot of the index) and vice versa.
        match (ia, ib) {
            (Some(ia), Some(ib)) if ia != ib => {
                let (sa, sb) = (r.hot[ia].map(|h| h.who.slot), r.hot[ib].map(|h| h.who.slot));
                if let (Some(h), Some(sb)) = (r.hot[ia].as_mut(), sb) {
                    h.pa = b;
                    h.who.slot = sb;
                }
                if let (Some(h), Some(sa)) = (r.hot[ib].as_mut(), sa) {
                    h.pa = a;
                    h.who.slot = sa;
                }
            }
            _ => r.hot = [None; 2],
        }
    }

    fn move_second_level(&mut self, _old: PhysAddr, _new: PhysAddr) {
        // Page tables are pinned in the frame table: never called.
        defmt::error!("spm moved a page table; the demo kernel pins them");
    }

    fn move_first_level(&mut self, _old: PhysAddr, _new: PhysAddr) {
        defmt::error!("spm moved a page directory; the demo kernel pins them");
    }
}
