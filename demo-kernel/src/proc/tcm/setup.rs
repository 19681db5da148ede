//! TCM set-up, once per boot: which banks, the frame table, and the kernel
//! mappings the TCM code in [`crate::proc::tcm`] relies on.
//!
//! # Which banks
//!
//! [`init`] reads what the CPU reports (`spm::tcm::discover`: the TCM status
//! register, and c9 only for a TCM it reports) and lets `spm::tcm::plan`
//! decide per kind with this board's [`BoardTcm`]:
//!
//! * **A part with TCM** (an ARM926EJ-S whose status register reports an
//!   ITCM/DTCM with a size above 0): the bank is used as real TCM. If the
//!   region register already has it enabled clear of RAM and devices it
//!   stays there; otherwise `spm::tcm::apply` moves it to
//!   [`REAL_ITCM_PHYS`] / [`REAL_DTCM_PHYS`] and enables it, reading the
//!   register back. Its size is the region register's (4 KiB to 1 MiB on the
//!   ARM926EJ-S); the kernel's tables hold up to [`MAX_BANK_SIZE`] per bank
//!   and a larger bank is refused (`TcmError::TooBig`) rather than half
//!   used. A placed TCM's content is undefined: every frame starts as a
//!   page resource, and `spm` zeroes a resource before a process gets it.
//! * **QEMU** (`arm926` has no TCM: status 0, c9 traps): the board's
//!   emulated banks, 32 KiB "ITCM" at [`BOARD_ITCM_PHYS`] and 32 KiB
//!   "DTCM" at [`BOARD_DTCM_PHYS`], ordinary RAM the user frame allocator
//!   never hands out. `apply` writes nothing.
//! * A part reporting only one kind (or one of size 0) gets the real bank
//!   of that kind and the emulated bank of the other (`Mix::PerKind`).
//!
//! The boot log names each bank's source (`cpu-kept`, `cpu-placed`,
//! `board`, `board-size0`); the `TCM` report line says `source=cpu` when
//! any bank is the CPU's. **Only the QEMU path runs here**: real placement
//! is exercised by `spm`'s host tests (`crates/spm/tests/tcm_plan.rs`,
//! MockCp15-based ARM926 parts), not by any QEMU run.
//!
//! # Placement on versatilepb
//!
//! QEMU 7.2's versatilepb maps RAM at 0 (up to 256 MiB), devices at
//! `0x1000_0000`..`0x101F_FFFF`, flash at `0x3400_0000`..`0x37FF_FFFF` and
//! the PCI windows from `0x4100_0000` (`info mtree`); `0x1020_0000` to
//! `0x33FF_FFFF` is empty. Real TCMs go there: the ITCM at `0x2000_0000`,
//! the DTCM at `0x2010_0000`, each MiB-aligned so every TCM size is aligned.
//! [`AVOID`] lists what a real TCM must never cover. A real board has to
//! check its own memory map.
//!
//! # Kernel mappings
//!
//! Built once, before any address space exists, so the per-table strategies
//! copy them into every space: SCTLR.S is set (AP=00 becomes privileged
//! read-only); the MiB holding the switch/IPC page `.text.kswitch` is
//! remapped with small pages (that page read-only); every frame of each bank
//! is mapped read-only at [`KTCM_VA`] and read/write at [`KTCM_RW_VA`]
//! (ITCM slot at +0, DTCM slot at +[`MAX_BANK_SIZE`]; slots past a bank's
//! size stay unmapped); all RAM is mapped uncached at [`PHYS_WINDOW`].
//!
//! The TCM windows are mapped uncached and unbuffered (C=0, B=0). On the
//! ARM926EJ-S a TCM access is served by the TCM interface, not by the caches
//! or the write buffer (ARM926EJ-S TRM, DDI 0198E, TCM interface): cached
//! attributes would buy nothing, and C=0 B=0 is also what the emulated
//! banks need, which are RAM that `spm` copies through these windows and
//! that must not sit in the D-cache behind them.

use crate::global::Global;
use mmu_armv5::descriptor::{
    AccessPermission, CachePolicy, CoarseTableDesc, L1Descriptor, L2Descriptor, SmallPageDesc,
    SubpageAp,
};
use mmu_armv5::maint::CacheMaintenance;
use mmu_armv5::regs::{Cp15Ext, HwCp15};
use mmu_armv5::size::{Frame, FrameRange, PageSizeKind};
use mmu_armv5::table::{MapAttrs, SizePolicy};
use mmu_armv5::{ModifiedVirtAddr, PhysAddr};
use spm::tcm::{self, BoardTcm, Mix, PhysRange, TcmBank, TcmKind, TcmLayout};
use spm::{
    FrameDesc, FrameState, FrameTable, InitialUse, KernelUse, Location, PhysRegion, SectionSummary,
};

use crate::mmu::{kernel_virt_offset, phys_to_virt, KERNEL_DOMAIN};
use crate::proc::frames::{FRAMES_END, FRAMES_PHYS};
use crate::proc::tcm::{
    install, kswitch_va, JobStats, KMap, KernelJob, Tcm, BANK_FRAMES, KMAPS, KTCM_RW_VA, KTCM_VA,
    MAX_BANK_SIZE, PHYS_WINDOW,
};

/// The board's emulated ITCM (32 KiB of RAM past the user frames).
pub const BOARD_ITCM_PHYS: u32 = FRAMES_END;
/// The board's emulated DTCM (32 KiB of RAM).
pub const BOARD_DTCM_PHYS: u32 = FRAMES_END + BOARD_BANK_SIZE;
/// Size of each emulated bank.
pub const BOARD_BANK_SIZE: u32 = 32 << 10;
/// Where a real ITCM is placed (a hole in versatilepb's map, see the module docs).
pub const REAL_ITCM_PHYS: u32 = 0x2000_0000;
/// Where a real DTCM is placed.
pub const REAL_DTCM_PHYS: u32 = 0x2010_0000;
/// What a real TCM must not cover: the board's (on versatilepb the SDRAM
/// window, the device MiBs, flash, the PCI windows).
pub const AVOID: [PhysRange; crate::board::TCM_AVOID.len()] = crate::board::TCM_AVOID;
/// Physical base of RAM (the board's).
const RAM_PHYS: u32 = crate::board::LAYOUT.ram_phys;
/// RAM the physical window covers.
const RAM_SIZE: u32 = crate::board::LAYOUT.ram_mib << 20;
/// Frame descriptions: RAM up to the emulated banks, then two banks of the largest size.
const FRAMES_NEEDED: usize = ((FRAMES_END - RAM_PHYS) / 4096) as usize + 2 * BANK_FRAMES;
/// Per-MiB summaries: RAM (one more where the two RAM regions share a MiB)
/// and one per bank (a bank is at most 1 MiB and aligned to its size).
const SECTIONS_MAX: usize = (FRAMES_END - RAM_PHYS).div_ceil(1 << 20) as usize + 1 + 2;

// Both bank slots of each view fit the one second-level table at KTCM_VA,
// and the board's banks fit the tables.
const _: () = assert!(KTCM_RW_VA - KTCM_VA >= 2 * MAX_BANK_SIZE);
const _: () = assert!(KTCM_RW_VA - KTCM_VA + 2 * MAX_BANK_SIZE <= 1 << 20);
const _: () = assert!(BOARD_BANK_SIZE <= MAX_BANK_SIZE);
const _: () = assert!(KMAPS < u8::MAX as usize);

#[repr(C, align(1024))]
struct L2Table([u32; 256]);

static KTEXT_L2: Global<L2Table> = Global::new(L2Table([0; 256]));
static KTCM_L2: Global<L2Table> = Global::new(L2Table([0; 256]));
static DESCS: Global<[FrameDesc; FRAMES_NEEDED]> =
    Global::new([FrameDesc::UNDEFINED; FRAMES_NEEDED]);
/// Storage of the per-MiB summaries.
static SECTIONS: Global<[SectionSummary; SECTIONS_MAX]> =
    Global::new([SectionSummary::EMPTY; SECTIONS_MAX]);

/// Why TCM could not be set up.
#[derive(Clone, Copy, defmt::Format)]
pub enum InitError {
    /// Discovery, the plan or its application, or the board's banks.
    Tcm(tcm::TcmError),
    /// A region.
    Region(spm::RegionError),
    /// The frame table.
    Frame(spm::FrameError),
    /// A misaligned or wrapping frame range.
    Range(mmu_armv5::AddrError),
    /// A kernel mapping.
    Table(mmu_armv5::table::TableError),
}

/// A small-page descriptor of `pa` with `ap` in all four subpages.
fn small(pa: u32, ap: AccessPermission, cache: CachePolicy) -> u32 {
    L2Descriptor::Small(SmallPageDesc {
        frame: Frame::containing(PhysAddr::new(pa)),
        ap: SubpageAp::uniform(ap),
        cache,
    })
    .to_bits()
}

fn table_pa<T>(t: &Global<T>) -> u32 {
    (t.as_ptr() as u32).wrapping_sub(kernel_virt_offset())
}

/// Sets up TCM once per boot (before the first process exists).
///
/// Only on a board with TCM ([`crate::board::HAS_TCM`]); the scenario
/// runner reports the TCM scenarios as not applicable elsewhere. Runs on
/// `kmain`'s CP15 owner `cp15`, lent by the scenario runner.
pub fn init(cp15: &mut HwCp15) -> Result<(), InitError> {
    if crate::proc::tcm::is_set_up() {
        return Ok(());
    }
    let found = tcm::discover(&*cp15).map_err(InitError::Tcm)?;
    let board = BoardTcm {
        itcm_base: PhysAddr::new(REAL_ITCM_PHYS),
        dtcm_base: PhysAddr::new(REAL_DTCM_PHYS),
        emulated: TcmLayout {
            itcm: Some(
                TcmBank::board(
                    TcmKind::Instruction,
                    PhysAddr::new(BOARD_ITCM_PHYS),
                    BOARD_BANK_SIZE,
                )
                .map_err(InitError::Tcm)?,
            ),
            dtcm: Some(
                TcmBank::board(
                    TcmKind::Data,
                    PhysAddr::new(BOARD_DTCM_PHYS),
                    BOARD_BANK_SIZE,
                )
                .map_err(InitError::Tcm)?,
            ),
        },
        avoid: &AVOID,
        capacity: MAX_BANK_SIZE,
        mix: Mix::PerKind,
    };
    let plan = tcm::plan(found, &board).map_err(InitError::Tcm)?;
    for p in plan.banks() {
        let b = p.bank();
        defmt::info!(
            "TCM bank {=str}: {=u32:#010x}, {=u32} KiB, source {=str}",
            match b.kind() {
                TcmKind::Instruction => "ITCM",
                TcmKind::Data => "DTCM",
            },
            b.base().as_u32(),
            b.size() / 1024,
            p.source().name()
        );
    }
    // SAFETY: a placed bank goes to REAL_ITCM_PHYS / REAL_DTCM_PHYS, which
    // the plan checked against AVOID (all RAM, devices, flash, PCI): nothing
    // of this kernel lives there and nothing ever mapped it, so no cache
    // line covers it. Kept banks are not written; emulated banks have no
    // register.
    let layout = unsafe { tcm::apply(&mut *cp15, &plan) }.map_err(InitError::Tcm)?;
    let from_cpu = plan.from_cpu();
    let (Some(itcm), Some(dtcm)) = (layout.itcm, layout.dtcm) else {
        let kind = if layout.itcm.is_none() {
            TcmKind::Instruction
        } else {
            TcmKind::Data
        };
        return Err(InitError::Tcm(tcm::TcmError::Absent(kind)));
    };
    let regions = [
        PhysRegion::new(
            PhysAddr::new(RAM_PHYS),
            FRAMES_PHYS - RAM_PHYS,
            Location::Ram,
            InitialUse::Kernel,
        )
        .map_err(InitError::Region)?,
        PhysRegion::new(
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
    let (descs, sections) = unsafe { (&mut *DESCS.as_ptr(), &mut *SECTIONS.as_ptr()) };
    let mut table = FrameTable::<4>::new(&regions, descs, sections).map_err(InitError::Frame)?;
    // Page tables never move: the pool and the two static tables are pinned.
    let (pool_pa, pool_len) = crate::mmu::pool_range();
    table
        .init_range(
            FrameRange::from_bytes(PhysAddr::new(pool_pa), pool_len).map_err(InitError::Range)?,
            FrameState::Kernel(KernelUse::PageTable),
            false,
        )
        .map_err(InitError::Frame)?;
    for t in [&KTEXT_L2, &KTCM_L2] {
        let pa = table_pa(t) & !0xFFF;
        table
            .init_range(
                Frame::from_start(PhysAddr::new(pa)).map_err(InitError::Range)?,
                FrameState::Kernel(KernelUse::PageTable),
                false,
            )
            .map_err(InitError::Frame)?;
    }

    // SCTLR.S: AP=00 becomes privileged read-only (no AP=00 mapping exists yet).
    let sctlr = cp15.sctlr().with_system_protection(true);
    // SAFETY: only the meaning of AP=00 changes, and nothing is mapped with it.
    unsafe { cp15.set_sctlr(sctlr) };
    crate::board::sctlr_written();

    let off = kernel_virt_offset();
    let ks = kswitch_va();
    let mib_va = ks & !0xF_FFFF;
    let mib_pa = mib_va - off;
    // SAFETY: the statics are only written here, before anything links them.
    let (text, tcmt) = unsafe { (&mut (*KTEXT_L2.as_ptr()).0, &mut (*KTCM_L2.as_ptr()).0) };
    for (i, e) in text.iter_mut().enumerate() {
        let va = mib_va + (i as u32) * 4096;
        let ap = if va == ks {
            AccessPermission::NoneOrRom
        } else {
            AccessPermission::PrivRw
        };
        *e = small(mib_pa + (i as u32) * 4096, ap, CachePolicy::WriteBack);
    }
    // C=0 B=0: see the module docs.
    for (k, bank) in [itcm, dtcm].iter().enumerate() {
        for i in 0..bank.size() / 4096 {
            let pa = bank.base().as_u32() + i * 4096;
            let slot = k * BANK_FRAMES + i as usize;
            tcmt[slot] = small(pa, AccessPermission::NoneOrRom, CachePolicy::Uncached);
            tcmt[((KTCM_RW_VA - KTCM_VA) >> 12) as usize + slot] =
                small(pa, AccessPermission::PrivRw, CachePolicy::Uncached);
        }
    }
    let mut m = crate::board::maint(&mut *cp15);
    for t in [&text[..], &tcmt[..]] {
        m.clean_dcache_range(ModifiedVirtAddr::new(t.as_ptr() as u32), 1024);
    }
    let link = |pa: u32| {
        L1Descriptor::Coarse(CoarseTableDesc {
            table: Frame::containing(PhysAddr::new(pa)),
            domain: KERNEL_DOMAIN,
            p: false,
        })
        .to_bits()
    };
    // SAFETY: the text table maps its MiB exactly as the section did (one
    // page read-only, nothing writes code); the TCM MiB was unmapped.
    unsafe {
        crate::mmu::write_entry(cp15, mib_va, link(table_pa(&KTEXT_L2)));
        crate::mmu::write_entry(cp15, KTCM_VA, link(table_pa(&KTCM_L2)));
    }
    crate::mmu::with_tables(|t, pool| {
        t.map(
            pool,
            ModifiedVirtAddr::new(PHYS_WINDOW),
            PhysAddr::new(RAM_PHYS),
            RAM_SIZE,
            MapAttrs::new(
                KERNEL_DOMAIN,
                AccessPermission::PrivRw,
                CachePolicy::Uncached,
            ),
            SizePolicy::Exactly(PageSizeKind::Section),
        )
        .map(|f| f.flush(&mut crate::board::maint(&mut *cp15), pool))
    })
    .map_err(InitError::Table)?;
    crate::cp15::flush_tlb(cp15);

    let mut kmaps = [KMap {
        va: ks,
        pa: ks - off,
        entry: core::ptr::addr_of_mut!(text[((ks - mib_va) >> 12) as usize]),
    }; KMAPS];
    // One record per slot; a slot past its bank's size maps nothing (its
    // entry stays a fault) and records no frame (`u32::MAX` is none).
    for i in 0..2 * BANK_FRAMES {
        let bank = if i < BANK_FRAMES { itcm } else { dtcm };
        let off = ((i % BANK_FRAMES) as u32) * 4096;
        kmaps[1 + i] = KMap {
            va: KTCM_VA + (i as u32) * 4096,
            pa: if off < bank.size() {
                bank.base().as_u32() + off
            } else {
                u32::MAX
            },
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
