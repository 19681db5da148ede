//! Step 3: the kernel's table at boot, which becomes the caching page
//! directory (CPD) every process runs on.

use fass::{Cpd, DefaultPolicy, DomainSet, Fass, KernelTable, Layout, Platform};
use mmu_armv5::descriptor::{AccessPermission, CachePolicy};
use mmu_armv5::regs::{Cp15Ext, Dacr, DomainAccess, Ttbr};
use mmu_armv5::size::PageSizeKind;
use mmu_armv5::table::{MapAttrs, PageTable, SizePolicy};
use mmu_armv5::{ModifiedVirtAddr as Mva, PhysAddr};
use spm::tcm::TcmLayout;

use crate::board::{Board, KERNEL_DOMAIN};
use crate::{Error, MAX_SPACES, SEGMENTS, SPACE_SLOTS};

/// The address-space manager: FASS over the CPD, with the default victim
/// policy, up to [`MAX_SPACES`] spaces of [`SPACE_SLOTS`] MiB slots each and
/// [`SEGMENTS`] shared segments.
pub type Vm = Fass<DefaultPolicy, MAX_SPACES, SPACE_SLOTS, SEGMENTS>;

/// The exception vectors' address with SCTLR.V set (high vectors).
pub const VECTORS_VA: u32 = 0xFFFF_0000;

/// Builds the kernel's first-level table in the table memory `sys`
/// allocates from. It maps, all in [`KERNEL_DOMAIN`] and for the kernel
/// only: the kernel image with cached sections at `board.kernel_va`; the
/// vector page at [`VECTORS_VA`]; the board's devices (uncached sections);
/// the uncached physical window over the frames and the TCM banks;
/// `kernel_pages` (the kernel's movable pages, cached, 4 KiB each) from
/// `board.kernel_pages_va`; and every TCM frame, uncached, in the TCM
/// window. Each 4 KiB mapping gets its second-level table here: once the
/// table is the CPD, its kernel first-level entries never change
/// (`KernelTable::new`'s promise), only second-level entries do (an
/// exchange re-points them).
pub fn kernel_table<S: Platform + ?Sized>(
    sys: &mut S,
    board: &Board,
    banks: &TcmLayout,
    kernel_pages: &[PhysAddr],
) -> Result<PageTable, Error> {
    let (rw, wb, nc) = (
        AccessPermission::PrivRw,
        CachePolicy::WriteBack,
        CachePolicy::Uncached,
    );
    let (cached, uncached) = (
        MapAttrs::new(KERNEL_DOMAIN, rw, wb),
        MapAttrs::new(KERNEL_DOMAIN, rw, nc),
    );
    let section = SizePolicy::Exactly(PageSizeKind::Section);
    let page = SizePolicy::Exactly(PageSizeKind::Small);
    let mut t = PageTable::with_encoding(sys, board.encoding)?;
    let (image, len, at) = (
        board.kernel_ram.base(),
        board.kernel_ram.size(),
        board.kernel_va,
    );
    map(&mut t, sys, at, image, len, cached, section)?;
    map(&mut t, sys, VECTORS_VA, board.vectors, 4096, cached, page)?;
    for &(pa, va) in board.devices {
        map(&mut t, sys, va, pa, 1 << 20, uncached, section)?;
    }
    // The physical window: each MiB holding frames or a TCM bank, once.
    let frames = (board.frames.base(), board.frames.size());
    let tcm = banks.banks().map(|b| (b.base(), b.size()));
    for (base, len) in core::iter::once(frames).chain(tcm) {
        for mib in base.as_u32() >> 20..=(base.as_u32() + len - 1) >> 20 {
            let (pa, va) = (PhysAddr::new(mib << 20), board.phys_window_va + (mib << 20));
            if t.lookup(sys, Mva::new(va))?.is_none() {
                map(&mut t, sys, va, pa, 1 << 20, uncached, section)?;
            }
        }
    }
    for (i, &pa) in kernel_pages.iter().enumerate() {
        let va = board.kernel_pages_va + 4096 * i as u32;
        map(&mut t, sys, va, pa, 4096, cached, page)?;
    }
    for b in banks.banks() {
        let va = board.tcm_page_va(b.kind(), 0);
        map(&mut t, sys, va, b.base(), b.size(), uncached, page)?;
    }
    Ok(t)
}

/// Maps `[va, va + len)` to `[pa, pa + len)` in `table`, with the
/// maintenance the change needs (none that matters before the table is
/// loaded, but the same code serves later changes).
#[allow(clippy::too_many_arguments)]
fn map<S: Platform + ?Sized>(
    table: &mut PageTable,
    sys: &mut S,
    va: u32,
    pa: PhysAddr,
    len: u32,
    attrs: MapAttrs,
    size: SizePolicy,
) -> Result<(), Error> {
    table
        .map(sys, Mva::new(va), pa, len, attrs, size)?
        .flush_on(sys);
    Ok(())
}

/// Builds the kernel's table ([`kernel_table`]), vouches for it, makes it
/// the CPD of a fresh [`Vm`] and loads it: TTBR, a DACR opening the
/// kernel's domain only, SCTLR.S (so that `spm` can make a kernel mapping
/// read-only during an exchange).
///
/// # Safety
/// The board describes the machine: the kernel runs at `board.kernel_va`
/// (code, data, stacks inside `board.kernel_ram`), the table memory `sys`
/// allocates from is the board's table pool and is never freed or moved,
/// `board.vectors` holds the vectors, and no code but the returned [`Vm`]
/// writes TTBR, DACR or FCSEIDR from now on (`fass::KernelTable::new`). The
/// boot table in use until now maps the kernel image at the same addresses.
pub unsafe fn boot<S: Platform + ?Sized>(
    sys: &mut S,
    board: &Board,
    layout: &Layout,
    banks: &TcmLayout,
    kernel_pages: &[PhysAddr],
) -> Result<Vm, Error> {
    let root = kernel_table(sys, board, banks, kernel_pages)?.root();
    // SAFETY: the caller's promise: the table maps all the kernel uses, in
    // the kernel's domain, stays in the pool for good, and is the table the
    // CPU walks from the TTBR write below on.
    let kernel = unsafe { KernelTable::new(sys, root, board.encoding, layout, KERNEL_DOMAIN) }?;
    let mut cpd = Cpd::new(kernel);
    // SAFETY: the table pool is never freed nor moved (the caller's promise).
    unsafe { cpd.pin(sys) }?;
    let vm = Vm::new(cpd, DomainSet::EMPTY, DefaultPolicy::default())?;

    // AP = 00 becomes privileged read-only: what `spm` makes a kernel
    // mapping while it copies the page. No mapping uses AP = 00 yet.
    let sctlr = sys
        .sctlr()
        .with_system_protection(true)
        .with_rom_protection(false);
    let dacr = Dacr::only(KERNEL_DOMAIN, DomainAccess::Client);
    // SAFETY: the new table maps the kernel as the boot table did (the
    // caller's promise), only the meaning of AP = 00 changes, and the
    // kernel's domain stays open; the TLB is invalidated before anything
    // depends on the new table.
    unsafe {
        sys.set_sctlr(sctlr);
        sys.set_dacr(dacr);
        sys.set_ttbr(Ttbr::new(root)?);
    }
    sys.invalidate_tlb();
    Ok(vm)
}
