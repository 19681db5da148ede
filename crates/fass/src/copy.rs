//! Copying between address spaces (long IPC): `len` bytes from space A at
//! `a` to space B at `b`, by every strategy, behind
//! [`SwitchStrategy::copy_between`](crate::SwitchStrategy::copy_between).
//!
//! # What is checked, before any byte is written
//! The whole of both ranges is looked up in the strategy's own tables
//! first: a range that wraps past 4 GiB ([`CopyError::Wraps`]), is longer
//! than [`MAX_COPY_LEN`] ([`CopyError::TooLong`]), reaches into the kernel
//! region ([`CopyError::NotUser`]) or a page its space does not map
//! ([`CopyError::Unmapped`]), a source page user mode may not read
//! ([`CopyError::NotReadable`]), a destination page (any 1 KiB subpage the
//! range touches) user mode may not write ([`CopyError::ReadOnly`]), or
//! source and destination sharing a physical byte ([`CopyError::Overlap`],
//! also across two spaces that map the same frame) is refused with nothing
//! changed: no byte written, no cache line touched. (FASS may have taken a
//! domain for a space that held none, or filled the CPD, before an
//! [`CopyError::Fault`]; neither changes what any space reads.) Then the
//! copy runs to its end: the kernel's [`CopyMemory`] cannot fail halfway
//! on ranges the tables say are mapped. A length of 0 copies nothing.
//!
//! # How each strategy copies
//! * [`Fass`] ([`CopyPath::Windows`]): straight from A's FCSE window to
//!   B's, through the MVAs (`va + pid * 32 MiB`) the kernel reaches both
//!   spaces by under any running space. First both spaces hold a domain
//!   (taken, or recycled, as a switch would) and every CPD slot the two
//!   ranges touch holds its space's entry tagged with its domain (filled
//!   as the fault path fills them, with the same flush decisions); then the
//!   DACR opens both domains (client: the kernel's accesses are checked
//!   against the pages' permissions), the bytes are copied, and the DACR is
//!   put back. No temporary mapping, no cache maintenance: every line the
//!   copy reads or writes is tagged with an MVA of its own space's window,
//!   the same lines that space's own accesses use. Both domains are marked
//!   dirty (the copy left lines of both in the caches).
//!   When that is impossible, FASS copies as the classic strategies
//!   do ([`CopyPath::LinearMap`]): a range in a shared segment, a range
//!   whose MVAs lie below 32 MiB (a space at PID 0, whose addresses the
//!   running PID would relocate), two ranges needing the same CPD slot for
//!   two different spaces, or a domain lost while the other space took one.
//! * [`TableSwitch`] ([`CopyPath::LinearMap`]): through the kernel's linear
//!   map of the frames ([`CopyMemory::kernel_alias`]), which every space's
//!   table holds. The caches are virtually indexed and tagged, so the
//!   kernel alias and the users' aliases are different lines of the same
//!   bytes, kept coherent by hand: before the copy, the source's user
//!   alias is cleaned (its newest bytes may be dirty in the cache) and the
//!   destination's user alias cleaned and invalidated (its line must not
//!   hide the new bytes, and its dirty bytes beside the range must reach
//!   memory first); after the copy, both kernel aliases are cleaned and
//!   invalidated (the destination's new bytes reach memory, and no line of
//!   either alias stays behind to be read stale by a later copy), and the
//!   write buffer drained. Under [`ClassicKind::Fcse`] both user aliases
//!   are maintained by their MVAs (each space's lines stay in the cache
//!   across switches). Under [`ClassicKind::Naive`] only the running
//!   space's: every switch cleaned and invalidated the whole cache, so a
//!   space that does not run has no line in it.
//!
//! The copy leaves no line of a kernel alias in the D-cache; a kernel that
//! writes user frames through its linear map elsewhere must do the same.
//! No I-cache maintenance is done: the destination is data, as for a
//! `memcpy`.
//!
//! [`Fass`]: crate::Fass
//! [`TableSwitch`]: crate::TableSwitch
//! [`ClassicKind::Fcse`]: crate::ClassicKind::Fcse
//! [`ClassicKind::Naive`]: crate::ClassicKind::Naive

use crate::classic::{ClassicKind, TableSwitch};
use crate::error::FassError;
use crate::id::SpaceId;
use crate::lookup::PageMapping;
use crate::manager::Fass;
use crate::platform::Platform;
use crate::policy::VictimPolicy;
use crate::resolve::coarse_entry;
use core::fmt;
use mmu_armv5::addr::FCSE_WINDOW_SIZE;
use mmu_armv5::descriptor::AccessPermission;
use mmu_armv5::maint::CacheMaintenance;
use mmu_armv5::regs::{Cp15Ext, DomainAccess};
use mmu_armv5::size::PageSizeKind;
use mmu_armv5::{Domain, ModifiedVirtAddr, PhysAddr, VirtAddr};

/// The longest copy (16 KiB): it bounds the pages looked up per copy (the
/// plan lives on the stack, five pieces a side) and the time the copy runs
/// with the DACR open.
pub const MAX_COPY_LEN: u32 = 16 * 1024;

/// Pieces of one range: at most one per 4 KiB page it touches.
const MAX_PIECES: usize = (MAX_COPY_LEN / 4096) as usize + 1;

/// The memory a copy between spaces reads and writes, as the kernel
/// reaches it: raw loads and stores on hardware, the model's privileged
/// loads and stores in host tests. `S` is the platform the strategy runs
/// on; it is lent to [`CopyMemory::copy`] so that an implementation
/// reaching memory through the platform (a model machine) can.
///
/// # Safety
/// [`CopyMemory::kernel_alias`] must return, for every frame it answers
/// for, an address in the kernel region at which privileged code reaches
/// that frame (read and write, in the kernel's domain) under every
/// translation a strategy loads, and never an address of memory Rust code
/// holds a reference to: the strategies write through it.
pub unsafe trait CopyMemory<S: ?Sized> {
    /// The address at which the kernel reaches the byte at physical
    /// address `pa` through its linear map, or `None` if it does not map
    /// it there. Asked once per 4 KiB piece; the answer must hold for the
    /// rest of that 4 KiB frame.
    fn kernel_alias(&self, pa: PhysAddr) -> Option<ModifiedVirtAddr>;

    /// Copies `len` bytes from `src` to `dst` with privileged loads and
    /// stores under the current translation (no FCSE relocation applies:
    /// both are at or above 32 MiB). The ranges do not overlap.
    ///
    /// # Errors
    /// [`CopyFault`] if an access aborted (an implementation that can
    /// catch aborts reports them; on hardware the caller's checks make
    /// them impossible).
    ///
    /// # Safety
    /// Both ranges must be mapped for privileged access under the current
    /// translation (the DACR, the TTBR and the CPD or table entries as
    /// they are now), `dst` writable, and neither may be memory Rust code
    /// holds a reference to.
    unsafe fn copy(
        &mut self,
        sys: &mut S,
        dst: ModifiedVirtAddr,
        src: ModifiedVirtAddr,
        len: u32,
    ) -> Result<(), CopyFault>;
}

/// An access of [`CopyMemory::copy`] aborted, at this address.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct CopyFault(pub ModifiedVirtAddr);

/// Why a copy between spaces was refused (or, [`CopyError::Fault`],
/// stopped).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum CopyError {
    /// Longer than [`MAX_COPY_LEN`].
    TooLong(u32),
    /// The range of this space starting at this address wraps past 4 GiB.
    Wraps(SpaceId, VirtAddr),
    /// This address of the range is in the kernel region.
    NotUser(SpaceId, VirtAddr),
    /// The space maps no page at this address of the range.
    Unmapped(SpaceId, VirtAddr),
    /// User mode may not read the source at this address.
    NotReadable(SpaceId, VirtAddr),
    /// User mode may not write the destination at this address.
    ReadOnly(SpaceId, VirtAddr),
    /// Source and destination share physical memory.
    Overlap,
    /// The kernel has no linear-map address for this frame.
    NoKernelAlias(PhysAddr),
    /// An access aborted during the copy (bytes before it were copied).
    Fault(ModifiedVirtAddr),
    /// A strategy operation failed (an unknown space, a table or domain
    /// error while preparing the CPD).
    Fass(FassError),
}

impl From<FassError> for CopyError {
    fn from(e: FassError) -> Self {
        CopyError::Fass(e)
    }
}

impl fmt::Display for CopyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            CopyError::TooLong(n) => write!(f, "copy of {n} bytes, more than {MAX_COPY_LEN}"),
            CopyError::Wraps(s, va) => write!(f, "range of space {} at {va} wraps", s.0),
            CopyError::NotUser(s, va) => write!(f, "{va} of space {} is the kernel's", s.0),
            CopyError::Unmapped(s, va) => write!(f, "{va} of space {} is not mapped", s.0),
            CopyError::NotReadable(s, va) => write!(f, "{va} of space {} is not readable", s.0),
            CopyError::ReadOnly(s, va) => write!(f, "{va} of space {} is not writable", s.0),
            CopyError::Overlap => write!(f, "source and destination overlap"),
            CopyError::NoKernelAlias(pa) => write!(f, "no kernel alias of {pa}"),
            CopyError::Fault(a) => write!(f, "copy aborted at {a}"),
            CopyError::Fass(e) => write!(f, "{e}"),
        }
    }
}

impl core::error::Error for CopyError {}

/// How a copy was made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum CopyPath {
    /// Nothing to copy (length 0).
    Empty,
    /// FASS: from one FCSE window to the other, both domains open.
    Windows,
    /// Through the kernel's linear map, with the user aliases' maintenance.
    LinearMap,
}

/// One end of a copy: a space and an address in it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct CopyEnd {
    /// The space.
    pub space: SpaceId,
    /// The first byte's virtual address in it.
    pub va: VirtAddr,
}

impl CopyEnd {
    /// `va` of `space`.
    pub const fn new(space: SpaceId, va: u32) -> CopyEnd {
        CopyEnd {
            space,
            va: VirtAddr::new(va),
        }
    }
}

/// A run of a range inside one page (or one section).
#[derive(Clone, Copy)]
struct Piece {
    /// Its first byte's MVA in its space.
    mva: u32,
    /// Its first byte's physical address.
    pa: u32,
    /// Bytes.
    len: u32,
    /// In a shared segment.
    segment: bool,
    /// FASS: its slot's word in its space's directory (a coarse-table
    /// entry, domain 0), as the look-up found it; 0 when the strategy has
    /// none (a segment, the classic strategies).
    dir: u32,
}

/// A range looked up: its pieces in order (not zeroed first: a
/// `heapless::Vec`).
struct Span {
    pieces: heapless::Vec<Piece, MAX_PIECES>,
}

impl Span {
    const fn new() -> Span {
        Span {
            pieces: heapless::Vec::new(),
        }
    }

    fn pieces(&self) -> &[Piece] {
        &self.pieces
    }
}

/// Whether user mode may write (`write`) or read through `ap`.
fn user_may(ap: AccessPermission, write: bool) -> bool {
    match ap {
        AccessPermission::ReadWrite => true,
        AccessPermission::PrivRwUserRo => !write,
        AccessPermission::NoneOrRom | AccessPermission::PrivRw => false,
    }
}

/// Looks up `[end.va, end.va + len)` through `translate` (the page's
/// mapping and its slot's directory word, 0 if none), checking user read
/// (or write) access to every 1 KiB subpage it touches.
fn span(
    out: &mut Span,
    end: CopyEnd,
    len: u32,
    write: bool,
    translate: impl Fn(VirtAddr) -> Result<(Option<PageMapping>, u32), FassError>,
) -> Result<(), CopyError> {
    let CopyEnd { space, va } = end;
    out.pieces.clear();
    let mut at = va.as_u32();
    let mut left = len;
    while left > 0 {
        let here = VirtAddr::new(at);
        let (m, dir) = match translate(here) {
            Ok((Some(m), dir)) => (m, dir),
            Ok((None, _)) => return Err(CopyError::Unmapped(space, here)),
            Err(FassError::NotPrivate(_)) => return Err(CopyError::NotUser(space, here)),
            Err(e) => return Err(e.into()),
        };
        let size = match m.size {
            PageSizeKind::Section => 1 << 20,
            PageSizeKind::Large => 64 << 10,
            _ => 4 << 10,
        };
        // The byte's MVA from the page's (the page holds it).
        let off = at & (size - 1);
        let n = (size - off).min(left);
        // Every 1 KiB subpage touched. A page whose subpages share one
        // permission (anything but a small page, and most small pages) is
        // checked once, at its first byte touched: the same answer and the
        // same first refused byte as the walk over its subpages.
        let [ap0, ap1, ap2, ap3] = m.ap.0;
        let uniform = m.size != PageSizeKind::Small || (ap0 == ap1 && ap0 == ap2 && ap0 == ap3);
        let mut sub = off;
        while sub < off + n {
            let ap = if uniform {
                ap0
            } else {
                m.ap.0[((sub >> 10) & 3) as usize]
            };
            if !user_may(ap, write) {
                let bad = VirtAddr::new(at + (sub - off));
                return Err(if write {
                    CopyError::ReadOnly(space, bad)
                } else {
                    CopyError::NotReadable(space, bad)
                });
            }
            if uniform {
                break;
            }
            sub = (sub & !0x3FF) + 0x400;
        }
        // Pieces never cross a 4 KiB frame, so that a linear-map alias is
        // asked for once per piece.
        let mut done = 0;
        while done < n {
            let mva = m.mva.as_u32() + off + done;
            let k = (4096 - (mva & 0xFFF)).min(n - done);
            out.pieces
                .push(Piece {
                    mva,
                    pa: m.pa.as_u32() + off + done,
                    len: k,
                    segment: m.segment.is_some(),
                    dir,
                })
                .map_err(|_| CopyError::TooLong(len))?;
            done += k;
        }
        at = at.wrapping_add(n);
        left -= n;
    }
    Ok(())
}

/// The checks every strategy makes first: length, wrapping, both ranges
/// looked up with their access rights, no shared physical byte.
fn plan(
    src: &mut Span,
    dst: &mut Span,
    from: CopyEnd,
    to: CopyEnd,
    len: u32,
    translate: impl Fn(SpaceId, VirtAddr) -> Result<(Option<PageMapping>, u32), FassError>,
) -> Result<(), CopyError> {
    if len > MAX_COPY_LEN {
        return Err(CopyError::TooLong(len));
    }
    for e in [from, to] {
        if e.va.as_u32().checked_add(len).is_none() {
            return Err(CopyError::Wraps(e.space, e.va));
        }
    }
    span(src, from, len, false, |va| translate(from.space, va))?;
    span(dst, to, len, true, |va| translate(to.space, va))?;
    for s in src.pieces() {
        for d in dst.pieces() {
            if s.pa < d.pa + d.len && d.pa < s.pa + s.len {
                return Err(CopyError::Overlap);
            }
        }
    }
    Ok(())
}

/// Calls `f(dst, src, n)` for the runs the two spans' pieces cut the copy
/// into (each inside one piece of either side), in order.
fn runs(
    src: &Span,
    dst: &Span,
    mut f: impl FnMut(&Piece, u32, &Piece, u32, u32) -> Result<(), CopyError>,
) -> Result<(), CopyError> {
    let (mut i, mut io) = (0, 0);
    let (mut j, mut jo) = (0, 0);
    while let (Some(s), Some(d)) = (src.pieces().get(i), dst.pieces().get(j)) {
        let n = (s.len - io).min(d.len - jo);
        f(s, io, d, jo, n)?;
        io += n;
        jo += n;
        if io == s.len {
            i += 1;
            io = 0;
        }
        if jo == d.len {
            j += 1;
            jo = 0;
        }
    }
    Ok(())
}

/// Applies `op` to every D-cache line of `[mva, mva + len)`.
fn each_line<S: CacheMaintenance + ?Sized>(
    sys: &mut S,
    mva: u32,
    len: u32,
    op: fn(&mut S, ModifiedVirtAddr),
) {
    let line = S::DCACHE_LINE.max(4);
    let mut a = mva & !(line - 1);
    while a < mva + len {
        op(sys, ModifiedVirtAddr::new(a));
        a += line;
    }
}

/// The kernel's linear-map address of piece `p`'s first byte.
fn alias<S: ?Sized, M: CopyMemory<S> + ?Sized>(mem: &M, p: &Piece) -> Result<u32, CopyError> {
    mem.kernel_alias(PhysAddr::new(p.pa & !0xFFF))
        .map(|a| a.as_u32() + (p.pa & 0xFFF))
        .ok_or(CopyError::NoKernelAlias(PhysAddr::new(p.pa)))
}

/// The copy through the kernel's linear map with the maintenance of the
/// user aliases (see the [module docs](self)); `maintain_src` and
/// `maintain_dst` say whose user aliases may have lines in the cache.
fn copy_linear<S: Platform + ?Sized, M: CopyMemory<S> + ?Sized>(
    sys: &mut S,
    mem: &mut M,
    src: &Span,
    dst: &Span,
    maintain_src: bool,
    maintain_dst: bool,
) -> Result<CopyPath, CopyError> {
    // Every alias first, so that a frame the kernel does not map is
    // refused before anything is touched.
    for p in src.pieces().iter().chain(dst.pieces()) {
        alias(&*mem, p)?;
    }
    if maintain_src {
        for p in src.pieces() {
            each_line(sys, p.mva, p.len, S::clean_dcache_line);
        }
    }
    if maintain_dst {
        for p in dst.pieces() {
            each_line(sys, p.mva, p.len, S::clean_invalidate_dcache_line);
        }
    }
    sys.drain_write_buffer();
    let result = runs(src, dst, |s, so, d, do_, n| {
        let from = ModifiedVirtAddr::new(alias(&*mem, s)? + so);
        let to = ModifiedVirtAddr::new(alias(&*mem, d)? + do_);
        // SAFETY: both are the kernel's linear-map addresses of frames the
        // spaces' tables map (to user mode: never the kernel's own memory),
        // which `CopyMemory`'s contract makes reachable by privileged code
        // under every translation; the physical ranges do not overlap
        // (`plan`), each run stays inside one 4 KiB frame of each side.
        unsafe { mem.copy(sys, to, from, n) }.map_err(|f| CopyError::Fault(f.0))
    });
    // Even after a fault: whatever was copied reaches memory, no kernel
    // alias line stays.
    for (p, a) in src
        .pieces()
        .iter()
        .chain(dst.pieces())
        .filter_map(|p| alias(&*mem, p).ok().map(|a| (p, a)))
    {
        each_line(sys, a, p.len, S::clean_invalidate_dcache_line);
    }
    sys.drain_write_buffer();
    result.map(|()| CopyPath::LinearMap)
}

impl<const SPACES: usize, const SEGMENTS: usize> TableSwitch<SPACES, SEGMENTS> {
    /// Copies `len` bytes from `from` to `to` through the kernel's linear
    /// map (see the [module docs](self)).
    ///
    /// # Errors
    /// See [`CopyError`]; every error but [`CopyError::Fault`] is decided
    /// before anything is written.
    pub fn copy_between<S: Platform + ?Sized, M: CopyMemory<S> + ?Sized>(
        &mut self,
        sys: &mut S,
        mem: &mut M,
        from: CopyEnd,
        to: CopyEnd,
        len: u32,
    ) -> Result<CopyPath, CopyError> {
        let (mut src, mut dst) = (Span::new(), Span::new());
        plan(&mut src, &mut dst, from, to, len, |id, va| {
            self.translate(&*sys, id, va).map(|m| (m, 0))
        })?;
        if len == 0 {
            return Ok(CopyPath::Empty);
        }
        let (ms, md) = match self.kind {
            ClassicKind::Fcse(_) => (true, true),
            ClassicKind::Naive => (
                self.current == Some(from.space),
                self.current == Some(to.space),
            ),
        };
        copy_linear(sys, mem, &src, &dst, ms, md)
    }
}

impl<P: VictimPolicy, const SPACES: usize, const SLOTS: usize, const SEGMENTS: usize>
    Fass<P, SPACES, SLOTS, SEGMENTS>
{
    /// Copies `len` bytes from `from` to `to`, from one FCSE window to the
    /// other with both domains open, or (when that cannot be done) through
    /// the kernel's linear map (see the [module docs](self)).
    ///
    /// # Errors
    /// See [`CopyError`]; every error but [`CopyError::Fault`] and a
    /// [`CopyError::Fass`] from preparing the CPD is decided before
    /// anything is written.
    pub fn copy_between<S: Platform + ?Sized, M: CopyMemory<S> + ?Sized>(
        &mut self,
        sys: &mut S,
        mem: &mut M,
        from: CopyEnd,
        to: CopyEnd,
        len: u32,
    ) -> Result<CopyPath, CopyError> {
        let (mut src, mut dst) = (Span::new(), Span::new());
        // The look-up hands over each page's directory word too, which
        // the window set-up fills the CPD slot from (one directory search
        // per page, not two).
        plan(&mut src, &mut dst, from, to, len, |id, va| {
            self.translate_dir(&*sys, id, va)
        })?;
        if len == 0 {
            return Ok(CopyPath::Empty);
        }
        if let Some((da, db)) = self.open_windows(sys, from.space, &src, to.space, &dst)? {
            let old = sys.dacr();
            let open = old
                .with(da, DomainAccess::Client)
                .with(db, DomainAccess::Client);
            // Both spaces' lines may be in the caches from now on.
            self.domains.mark_dirty(
                mmu_armv5::regs::Dacr::only(da, DomainAccess::Client)
                    .with(db, DomainAccess::Client),
            );
            // SAFETY: the kernel's domain stays as it was (client), so the
            // kernel keeps running; two more user domains become client for
            // the kernel's copy below, and the old value is written back
            // before returning. User mode does not run in between.
            unsafe { sys.set_dacr(open) };
            let result = runs(&src, &dst, |s, so, d, do_, n| {
                // SAFETY: both MVAs are in their spaces' FCSE windows at or
                // above 32 MiB (so not relocated), their CPD slots hold
                // their spaces' entries in domains the DACR now opens
                // (`open_windows`), the pages are mapped (`plan`), the
                // destination writable, and they are user frames, never
                // memory of the kernel's; the physical ranges do not
                // overlap.
                unsafe {
                    mem.copy(
                        sys,
                        ModifiedVirtAddr::new(d.mva + do_),
                        ModifiedVirtAddr::new(s.mva + so),
                        n,
                    )
                }
                .map_err(|f| CopyError::Fault(f.0))
            });
            // SAFETY: the value read above, the running space's.
            unsafe { sys.set_dacr(old) };
            return result.map(|()| CopyPath::Windows);
        }
        // Lines of any space may be at the user aliases' MVAs (spaces keep
        // their lines across switches): maintain both.
        copy_linear(sys, mem, &src, &dst, true, true)
    }

    /// Makes both ranges reachable through their windows: a domain for
    /// each space, each touched CPD slot holding its space's entry.
    /// Their domains, or `None` (nothing needs undoing) if the window path
    /// cannot be taken.
    fn open_windows<S: Platform + ?Sized>(
        &mut self,
        sys: &mut S,
        a: SpaceId,
        src: &Span,
        b: SpaceId,
        dst: &Span,
    ) -> Result<Option<(Domain, Domain)>, CopyError> {
        let usable = |p: &Piece| !p.segment && p.mva >= FCSE_WINDOW_SIZE;
        if !src.pieces().iter().all(usable) || !dst.pieces().iter().all(usable) {
            return Ok(None);
        }
        // Two spaces wanting one slot: the CPD holds one entry per slot.
        if a != b {
            for s in src.pieces() {
                if dst.pieces().iter().any(|d| d.mva >> 20 == s.mva >> 20) {
                    return Ok(None);
                }
            }
        }
        for id in [a, b] {
            if self.space(id)?.domain.is_none() {
                self.acquire_domain(sys, crate::domain::Owner::Space(id), true)?;
            }
        }
        let (Some(da), Some(db)) = (self.space(a)?.domain, self.space(b)?.domain) else {
            // Taking b's domain recycled a's.
            return Ok(None);
        };
        // One side, then the other (a call each rather than a loop over an
        // array of the two: no copy of the tuple per turn).
        if !self.fill_window(sys, a, da, src)? || !self.fill_window(sys, b, db, dst)? {
            return Ok(None);
        }
        Ok(Some((da, db)))
    }

    /// Makes every CPD slot `span` touches hold space `id`'s entry tagged
    /// with its domain `d` ([`Fass::open_windows`], one side); `false`
    /// (the window path cannot be taken, nothing needs undoing) if a slot
    /// the span touches holds no coarse table in the space's directory.
    /// The directory words are the look-up's (`Piece::dir`): no space's
    /// directory changes between the look-up and this (taking a domain
    /// and filling the CPD leave the directories alone).
    fn fill_window<S: Platform + ?Sized>(
        &mut self,
        sys: &mut S,
        id: SpaceId,
        d: Domain,
        span: &Span,
    ) -> Result<bool, CopyError> {
        let mut last = usize::MAX;
        for p in span.pieces() {
            let slot = (p.mva >> 20) as usize;
            if slot == last {
                continue;
            }
            last = slot;
            let word = p.dir;
            if word & 3 != 0b01 {
                // Mapped (`plan` found the page) yet no coarse table in
                // the directory: cannot be; take the other path.
                return Ok(false);
            }
            let want = coarse_entry(word, d, self.cpd.encoding());
            // Through the pinned address when there is one (no table
            // lookup), else through the platform.
            let now = match self.cpd.read_pinned(slot) {
                Some(w) => w,
                None => self.cpd.raw(&*sys, slot).map_err(FassError::from)?,
            };
            if now != want {
                let _ = self.fill(sys, slot, d, want, Some(id))?;
            }
        }
        Ok(true)
    }
}
