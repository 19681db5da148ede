//! TCM set-up, once per boot: where the banks are, the frame table, and
//! the kernel mappings the TCM code in [`super::tcm`] relies on.
//!
//! [`init`] asks the CPU (`spm::tcm::discover`, which reads the TCM status
//! register and touches c9 only for a TCM it reports). QEMU's `arm926`
//! reports none, so the board's description is used: 32 KiB "ITCM" at
//! [`ITCM_PHYS`] and 32 KiB "DTCM" at [`DTCM_PHYS`], ordinary RAM the user
//! frame allocator never hands out. It then builds the frame table (all RAM
//! and both banks), sets SCTLR.S, remaps the switch page's MiB with small
//! pages, maps every TCM frame at [`KTCM_VA`] (read-only) and
//! [`KTCM_RW_VA`] (read/write), maps all RAM uncached at [`PHYS_WINDOW`],
//! and installs the state ([`super::tcm::tcm`]).

use core::cell::UnsafeCell;

use mmu_armv5::maint::CacheMaintenance;
use mmu_armv5::regs::{Cp15, Cp15Reg};
use mmu_armv5::table::{MapAttrs, SizePolicy};
use mmu_armv5::{ModifiedVirtAddr, PhysAddr};
use spm::tcm::{self, TcmBank, TcmKind, TcmLayout};
use spm::{
    FrameDesc, FrameState, FrameTable, InitialUse, KernelUse, Location, Region, SectionSummary,
};

use super::frames::{FRAMES_END, FRAMES_PHYS};
use super::tcm::{
    install, kswitch_va, JobStats, KMap, KernelJob, Tcm, BANK_FRAMES, BANK_SIZE, DTCM_PHYS,
    ITCM_PHYS, KMAPS, KTCM_RW_VA, KTCM_VA, PHYS_WINDOW,
};
use crate::mmu::{kernel_virt_offset, phys_to_virt, KERNEL_DOMAIN};

/// RAM the physical window covers.
const RAM_SIZE: u32 = 128 << 20;
const FRAMES_NEEDED: usize = ((DTCM_PHYS + BANK_SIZE) / 4096) as usize;
const SECTIONS_MAX: usize = 130;

#[repr(C, align(1024))]
struct L2Table([u32; 256]);

struct Global<T>(UnsafeCell<T>);
// SAFETY: one core; written only by `init`, once, before anything else
// refers to the storage (the frame table and the MMU keep it afterwards).
unsafe impl<T> Sync for Global<T> {}

static KTEXT_L2: Global<L2Table> = Global(UnsafeCell::new(L2Table([0; 256])));
static KTCM_L2: Global<L2Table> = Global(UnsafeCell::new(L2Table([0; 256])));
static DESCS: Global<[FrameDesc; FRAMES_NEEDED]> =
    Global(UnsafeCell::new([FrameDesc::UNDEFINED; FRAMES_NEEDED]));
/// Storage of the per-MiB summaries (`SectionSummary` is a transparent `u32`, 0 by default).
static SECTIONS: Global<[u32; SECTIONS_MAX]> = Global(UnsafeCell::new([0; SECTIONS_MAX]));

/// Why TCM could not be set up.
#[derive(Clone, Copy, defmt::Format)]
pub enum InitError {
    /// Discovery or the board's banks.
    Tcm(tcm::TcmError),
    /// A region.
    Region(spm::RegionError),
    /// The frame table.
    Frame(spm::FrameError),
    /// A kernel mapping.
    Table(mmu_armv5::table::TableError),
}

const AP_SHIFT: u32 = 4;
const SMALL: u32 = 0b10;
const CB_WRITE_BACK: u32 = 0b11 << 2;

/// A small-page descriptor of `pa` with `ap` in all four subpages and C/B bits `cb`.
fn small(pa: u32, ap: u32, cb: u32) -> u32 {
    (pa & !0xFFF) | ((ap * 0x55) << AP_SHIFT) | cb | SMALL
}

fn table_pa<T>(t: &Global<T>) -> u32 {
    (t.0.get() as u32).wrapping_sub(kernel_virt_offset())
}

/// Sets up TCM once per boot (before the first process exists).
pub fn init() -> Result<(), InitError> {
    if super::tcm::tcm().is_some() {
        return Ok(());
    }
    let found = tcm::discover(&crate::cp15::hw()).map_err(InitError::Tcm)?;
    let board = TcmLayout {
        itcm: Some(
            TcmBank::board(TcmKind::Instruction, PhysAddr::new(ITCM_PHYS), BANK_SIZE)
                .map_err(InitError::Tcm)?,
        ),
        dtcm: Some(
            TcmBank::board(TcmKind::Data, PhysAddr::new(DTCM_PHYS), BANK_SIZE)
                .map_err(InitError::Tcm)?,
        ),
    };
    let from_cpu = found.banks().any(|b| !b.emulated());
    let layout = found.or_board(board);
    let (Some(itcm), Some(dtcm)) = (layout.itcm, layout.dtcm) else {
        return Err(InitError::Tcm(tcm::TcmError::Absent(TcmKind::Instruction)));
    };
    if from_cpu {
        // A real TCM lies outside the RAM this kernel's windows and frame
        // table are laid out for; the demo only drives the board's banks.
        defmt::warn!("the CPU reports TCM: the demo kernel uses the board's emulated banks only");
    }
    let (itcm, dtcm) = if from_cpu {
        (board.itcm.unwrap_or(itcm), board.dtcm.unwrap_or(dtcm))
    } else {
        (itcm, dtcm)
    };
    let regions = [
        Region::new(
            PhysAddr::new(0),
            FRAMES_PHYS,
            Location::Ram,
            InitialUse::Kernel,
        )
        .map_err(InitError::Region)?,
        Region::new(
            PhysAddr::new(FRAMES_PHYS),
            FRAMES_END - FRAMES_PHYS,
            Location::Ram,
            InitialUse::Undefined,
        )
        .map_err(InitError::Region)?,
        itcm.region().map_err(InitError::Region)?,
        dtcm.region().map_err(InitError::Region)?,
    ];
    // SAFETY: `init` runs once (checked above); the table keeps the only
    // references to this storage for the rest of the boot.
    // `SectionSummary` is `repr(transparent)` over `u32`: same layout.
    let (descs, sections) = unsafe {
        (
            &mut *DESCS.0.get(),
            &mut *SECTIONS.0.get().cast::<[SectionSummary; SECTIONS_MAX]>(),
        )
    };
    let mut table = FrameTable::<4>::new(&regions, descs, sections).map_err(InitError::Frame)?;
    // Page tables never move: the pool and the two static tables are pinned.
    let (pool_pa, pool_len) = crate::mmu::pool_range();
    table
        .init_range(
            PhysAddr::new(pool_pa),
            pool_len,
            FrameState::Kernel(KernelUse::PageTable),
            false,
        )
        .map_err(InitError::Frame)?;
    for t in [&KTEXT_L2, &KTCM_L2] {
        let pa = table_pa(t) & !0xFFF;
        table
            .init_range(
                PhysAddr::new(pa),
                4096,
                FrameState::Kernel(KernelUse::PageTable),
                false,
            )
            .map_err(InitError::Frame)?;
    }

    // SCTLR.S: AP=00 becomes privileged read-only (no AP=00 mapping exists yet).
    let mut c = crate::cp15::hw();
    let sctlr = c.read(Cp15Reg::Sctlr);
    // SAFETY: only the meaning of AP=00 changes, and nothing is mapped with it.
    unsafe { c.write(Cp15Reg::Sctlr, sctlr | (1 << 8)) };

    let off = kernel_virt_offset();
    let ks = kswitch_va();
    let mib_va = ks & !0xF_FFFF;
    let mib_pa = mib_va - off;
    // SAFETY: the statics are only written here, before anything links them.
    let (text, tcmt) = unsafe { (&mut (*KTEXT_L2.0.get()).0, &mut (*KTCM_L2.0.get()).0) };
    for (i, e) in text.iter_mut().enumerate() {
        let va = mib_va + (i as u32) * 4096;
        let ap = if va == ks { 0 } else { 1 };
        *e = small(mib_pa + (i as u32) * 4096, ap, CB_WRITE_BACK);
    }
    for i in 0..BANK_FRAMES as u32 {
        for (k, bank) in [itcm, dtcm].iter().enumerate() {
            let pa = bank.base().as_u32() + i * 4096;
            let slot = (k as u32 * BANK_FRAMES as u32 + i) as usize;
            tcmt[slot] = small(pa, 0, 0);
            tcmt[((KTCM_RW_VA - KTCM_VA) >> 12) as usize + slot] = small(pa, 1, 0);
        }
    }
    let mut m = crate::mmu::maint();
    for t in [&text[..], &tcmt[..]] {
        m.clean_dcache_range(ModifiedVirtAddr::new(t.as_ptr() as u32), 1024);
    }
    let link = |pa: u32| pa | (u32::from(KERNEL_DOMAIN.get()) << 5) | 0x10 | 0b01;
    // SAFETY: the text table maps its MiB exactly as the section did (one
    // page read-only, nothing writes code); the TCM MiB was unmapped.
    unsafe {
        crate::mmu::set_entry(mib_va, link(table_pa(&KTEXT_L2)));
        crate::mmu::set_entry(KTCM_VA, link(table_pa(&KTCM_L2)));
    }
    crate::mmu::with_tables(|t, pool| {
        t.map(
            pool,
            ModifiedVirtAddr::new(PHYS_WINDOW),
            PhysAddr::new(0),
            RAM_SIZE,
            MapAttrs::new(
                KERNEL_DOMAIN,
                mmu_armv5::descriptor::AccessPermission::PrivRw,
                mmu_armv5::descriptor::CachePolicy::Uncached,
            ),
            SizePolicy::Exactly(mmu_armv5::size::PageSizeKind::Section),
        )
        .map(|f| f.flush(&mut crate::mmu::maint()))
    })
    .map_err(InitError::Table)?;
    crate::cp15::invalidate_tlb();

    let mut kmaps = [KMap {
        va: ks,
        pa: ks - off,
        entry: core::ptr::addr_of_mut!(text[((ks - mib_va) >> 12) as usize]),
    }; KMAPS];
    for i in 0..2 * BANK_FRAMES {
        let base = if i < BANK_FRAMES { itcm } else { dtcm }.base().as_u32();
        kmaps[1 + i] = KMap {
            va: KTCM_VA + (i as u32) * 4096,
            pa: base + ((i % BANK_FRAMES) as u32) * 4096,
            entry: core::ptr::addr_of_mut!(tcmt[i]),
        };
    }
    let root = phys_to_virt(crate::mmu::with_tables(|t, _| t.root().as_u32())) as *mut u32;
    install(
        Tcm {
            table,
            layout: TcmLayout {
                itcm: Some(itcm),
                dtcm: Some(dtcm),
            },
            from_cpu,
            used: [0; 2],
            kmaps,
            wp: [None; 8],
            root,
            job: KernelJob::Idle,
            job_stats: JobStats::default(),
            job_error: None,
        },
        ks - off,
    );
    Ok(())
}
