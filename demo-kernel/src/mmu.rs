//! The kernel's translation tables, built with `mmu_armv5`.
//!
//! `asm/boot.s` switches the MMU on with a minimal table (sections, built in
//! assembly). [`init`] then builds the kernel's real table with
//! [`mmu_armv5::table::PageTable`] over a [`TablePool`] of kernel memory:
//!
//! | virtual | physical | mapping |
//! |---|---|---|
//! | `0xC000_0000` + the board's RAM | the board's RAM | sections, domain 0, AP=01 (kernel only), write-back |
//! | [`DEVICE_VIRT`] + 1 MiB per device MiB | the board's device MiBs | sections, domain 0, AP=01, uncached (devices) |
//! | `0xE000_0000` + 16 MiB (feature `cache-check` only) | the first 16 RAM MiBs | sections, domain 0, AP=01, uncached (the marker window) |
//! | `0xFFFF_0000` | the `.vectors` page | a small page in the boot code's coarse table (high vectors) |
//!
//! and loads it into the TTBR. The boot-time identity mapping of the start-up
//! code is gone from then on; everything below 3 GiB is free for tests and
//! processes. Tests map and unmap here through [`with_tables`] (the
//! `mmu_armv5` mapper) or raw first-level entries ([`write_entry`]); the harness
//! saves and restores the first-level table around each test.

use crate::global::Global;
use core::cell::RefCell;

use mmu_armv5::descriptor::{
    AccessPermission, CachePolicy, CoarseTableDesc, L1Descriptor, SectionDesc, Tex,
};
use mmu_armv5::maint::CacheMaintenance;
use mmu_armv5::regs::{Cp15Ext, HwCp15, Sctlr, SwitchRegs, Ttbr};
use mmu_armv5::size::{Frame, PageSizeKind};
use mmu_armv5::table::{MapAttrs, PageTable, PoolBlock, SizePolicy, TableError, TablePool};
use mmu_armv5::{Domain, ModifiedVirtAddr, PhysAddr};

use crate::cp15;

extern "C" {
    static __kernel_virt_offset: u8;
    static __ram_phys: u8;
    static __ram_mib: u8;
    static __scratch_phys: u8;
    static __vectors_start: u8;
    static __vectors_l2: u8;
}

/// Entries in a first-level table.
pub const L1_ENTRIES: usize = 4096;
/// Where the board's device MiBs are mapped (one after the other).
pub const DEVICE_VIRT: u32 = crate::board::map::DEVICE_VIRT;
const HIGH_VECTORS: u32 = 0xFFFF_0000;
/// The kernel's domain.
pub const KERNEL_DOMAIN: Domain = Domain::from_low_bits(0);
/// Blocks of table memory (16 KiB each): the kernel's L1 table, one L1 table
/// per process under the per-table switching strategies, and coarse tables.
pub const POOL_BLOCKS: usize = 96;
/// One past the highest user address a process may map privately (the
/// shared-segment region starts here, then the kernel's).
pub const USER_TOP: u32 = 0x8000_0000;

/// Access permissions of a test section (AP field, with SCTLR.S = SCTLR.R = 0).
#[derive(Clone, Copy, PartialEq, Eq, defmt::Format)]
pub enum Ap {
    /// `01`: privileged read/write, user none.
    KernelOnly,
    /// `10`: privileged read/write, user read-only.
    UserRead,
    /// `11`: read/write for both.
    Full,
}

/// An uncached section descriptor: `pa` (rounded down to 1 MiB) in `domain` with `ap`.
pub fn section(pa: u32, domain: u8, ap: Ap) -> u32 {
    L1Descriptor::Section(SectionDesc {
        frame: Frame::containing(PhysAddr::new(pa)),
        ap: match ap {
            Ap::KernelOnly => AccessPermission::PrivRw,
            Ap::UserRead => AccessPermission::PrivRwUserRo,
            Ap::Full => AccessPermission::ReadWrite,
        },
        cache: CachePolicy::Uncached,
        domain: Domain::from_low_bits(u32::from(domain)),
        p: false,
        tex: Tex::ZERO,
    })
    .to_bits()
}

fn symbol(s: &u8) -> u32 {
    core::ptr::from_ref(s) as u32
}

/// Virtual address offset of the kernel's linear map of RAM (0xC000_0000
/// less the board's RAM base).
pub fn kernel_virt_offset() -> u32 {
    // SAFETY: a linker-script symbol; only its address is used.
    symbol(unsafe { &__kernel_virt_offset })
}

/// First physical MiB that tests may map freely (4 MiB from there).
pub fn scratch_phys() -> u32 {
    // SAFETY: a linker-script symbol; only its address is used.
    symbol(unsafe { &__scratch_phys })
}

/// The kernel's linear-map virtual address of physical address `pa`.
pub fn phys_to_virt(pa: u32) -> u32 {
    pa.wrapping_add(kernel_virt_offset())
}

/// The kernel's page table and the pool its tables come from.
pub struct KernelTables {
    /// The live table (its root is in the TTBR).
    pub table: PageTable,
    /// Table memory.
    pub pool: TablePool<'static, POOL_BLOCKS>,
}

/// The kernel tables, borrowed through a `RefCell` (checked at run time,
/// unlike [`Global`]).
struct TablesCell(RefCell<Option<KernelTables>>);
// SAFETY: one core; the tables are only touched from thread context with
// interrupts masked (the kernel never takes interrupts while testing).
unsafe impl Sync for TablesCell {}
static TABLES: TablesCell = TablesCell(RefCell::new(None));

static POOL_MEM: Global<[PoolBlock; POOL_BLOCKS]> = Global::new([PoolBlock::ZERO; POOL_BLOCKS]);

/// Physical address and length of the table pool's memory.
pub fn pool_range() -> (u32, u32) {
    let va = POOL_MEM.as_ptr() as u32;
    (
        va.wrapping_sub(kernel_virt_offset()),
        (POOL_BLOCKS * core::mem::size_of::<PoolBlock>()) as u32,
    )
}

/// Runs `f` on the kernel's page table and its pool.
///
/// # Panics
/// If called before [`init`] or re-entered from `f` (both kernel bugs).
pub fn with_tables<R>(
    f: impl FnOnce(&mut PageTable, &mut TablePool<'static, POOL_BLOCKS>) -> R,
) -> R {
    let mut g = TABLES.0.borrow_mut();
    let t = g.as_mut().expect("mmu::init has run");
    f(&mut t.table, &mut t.pool)
}

/// Builds the kernel's page table with `mmu_armv5` and switches the TTBR
/// to it, through `cp15`.
pub fn init(cp15: &mut HwCp15) -> Result<(), TableError> {
    let offset = kernel_virt_offset();
    // SAFETY: `init` runs once, before anything else refers to POOL_MEM, and
    // the pool keeps the only reference for the rest of the kernel's life.
    let mem = unsafe { POOL_MEM.get_mut() };
    let va = core::ptr::from_mut(mem) as u32;
    let mut pool = TablePool::new(mem, PhysAddr::new(va - offset), ModifiedVirtAddr::new(va))?;
    let mut table = PageTable::new(&mut pool)?;
    let mut m = crate::board::maint(&mut *cp15);

    let kernel = |cache| MapAttrs::new(KERNEL_DOMAIN, AccessPermission::PrivRw, cache);
    // SAFETY: linker-script symbols; only their addresses are used.
    let (ram, ram_mib, vectors) = unsafe {
        (
            symbol(&__ram_phys),
            symbol(&__ram_mib),
            symbol(&__vectors_start),
        )
    };
    let section = SizePolicy::Exactly(PageSizeKind::Section);
    table
        .map(
            &mut pool,
            ModifiedVirtAddr::new(ram.wrapping_add(offset)),
            PhysAddr::new(ram),
            ram_mib << 20,
            kernel(CachePolicy::WriteBack),
            section,
        )?
        .flush(&mut m, &mut pool);
    let board = crate::board::LAYOUT;
    for (i, &pa) in board.devices[..board.device_count].iter().enumerate() {
        table
            .map(
                &mut pool,
                ModifiedVirtAddr::new(DEVICE_VIRT + ((i as u32) << 20)),
                PhysAddr::new(pa),
                1 << 20,
                kernel(CachePolicy::Uncached),
                section,
            )?
            .flush(&mut m, &mut pool);
    }
    // The cache check's marker window (`mmu_armv5::marker`): kernel-only,
    // uncached, onto the first RAM MiBs (the loads' results are discarded),
    // as the boot table maps it, so markers work in every address space
    // that shares the kernel's entries.
    #[cfg(feature = "cache-check")]
    table
        .map(
            &mut pool,
            ModifiedVirtAddr::new(mmu_armv5::marker::WINDOW_BASE),
            PhysAddr::new(ram),
            mmu_armv5::marker::WINDOW_SIZE,
            kernel(CachePolicy::Uncached),
            section,
        )?
        .flush(&mut m, &mut pool);
    // The high-vector page: the boot code's coarse table (outside the pool,
    // already mapping the `.vectors` page) is linked, not a pool table. The
    // per-table switching strategies copy the kernel's first-level entries
    // into every address space and free the second-level tables a dying
    // space links; a table outside the pool cannot be freed or reused.
    // SAFETY: linker-script symbol; only its address is used.
    let vectors_l2 = symbol(unsafe { &__vectors_l2 }) - offset;
    let _ = vectors;
    let l1 = (table.root().as_u32() + offset) as *mut u32;
    let link = L1Descriptor::Coarse(CoarseTableDesc {
        table: Frame::containing(PhysAddr::new(vectors_l2)),
        domain: KERNEL_DOMAIN,
        p: false,
    });
    // SAFETY: `HIGH_VECTORS >> 20` indexes the new 16 KiB table (in the
    // linear map); the entry is a coarse-table link in domain 0 (bit 4 set,
    // as boot.s writes it) to the boot table that maps the vector page.
    unsafe {
        l1.add((HIGH_VECTORS >> 20) as usize)
            .write_volatile(link.to_bits())
    };
    // The table walker reads memory, not the D-cache.
    clean_table(cp15, l1 as u32 + (HIGH_VECTORS >> 20) * 4, 4);
    let ttbr = Ttbr::new(table.root())?;
    // SAFETY: the new table maps everything the kernel uses (its image and
    // stacks in the RAM linear map, the devices, the vector page) exactly as
    // the boot table does, so execution continues unchanged; the TLB is
    // invalidated right after.
    unsafe { cp15.set_ttbr(ttbr) };
    cp15::flush_tlb(cp15);
    enable_caches(cp15);
    *TABLES.0.borrow_mut() = Some(KernelTables { table, pool });
    defmt::info!(
        "kernel page table at PA {=u32:#010x} built with mmu-armv5 ({=usize} KiB of table memory free)",
        ttbr.base().as_u32(),
        with_tables(|_, p| p.free_units())
    );
    Ok(())
}

/// Turns the D- and I-caches on (SCTLR.C and SCTLR.I) through `cp15`.
///
/// Runs once, from [`init`], when the kernel's own table is live: the RAM
/// linear map write-back, the devices and the marker window uncached, so
/// from here on every RAM access goes through the caches and every device
/// access bypasses them. `asm/boot.s` enters with both caches off (the boot
/// table's attributes are not the kernel's); before they come on, both
/// caches are invalidated (contents left from before reset or from a boot
/// loader are not trusted) and the write buffer is drained. With the D-cache
/// off nothing can be dirty, so the clean in `clean_invalidate_dcache` has
/// nothing to write back: it only invalidates.
fn enable_caches(cp15: &mut HwCp15) {
    {
        let mut m = crate::board::maint(&mut *cp15);
        m.clean_invalidate_dcache();
        m.invalidate_icache();
        m.drain_write_buffer();
    }
    let sctlr = cp15.sctlr().with_dcache(true).with_icache(true);
    // SAFETY: only the cache enables change. Every mapping of the live table
    // has the attributes its memory needs (write-back RAM, uncached devices
    // and marker window), and both caches were just invalidated, so no load
    // or fetch can hit a line left from before.
    unsafe { cp15.set_sctlr(sctlr) };
    crate::board::sctlr_written();
    defmt::info!(
        "caches on: SCTLR {=u32:#010x} (C={=bool}, I={=bool})",
        cp15.sctlr().bits(),
        cp15.sctlr().dcache_enabled(),
        cp15.sctlr().icache_enabled()
    );
}

fn l1() -> *mut u32 {
    let root = with_tables(|t, _| t.root().as_u32());
    phys_to_virt(root) as *mut u32
}

/// The first-level entry for the MiB at `va`.
pub fn entry(va: u32) -> u32 {
    // SAFETY: `va >> 20` < 4096 indexes inside the live 16 KiB table, which
    // the kernel's linear map covers.
    unsafe { l1().add((va >> 20) as usize).read_volatile() }
}

/// Replaces the first-level entry for the MiB at `va`, cleans it to RAM (the
/// table walker does not read the D-cache) and invalidates the TLB, through
/// `cp15`.
///
/// Caches are not maintained for the MiB itself: a caller that changes what
/// an address space sees at `va` (a new frame, another alias of a cached
/// frame) cleans and invalidates what it cached there before.
///
/// # Safety
/// Must not unmap or change anything the kernel uses (its linear map at
/// [`kernel_virt_offset`], the device MiBs, the vector page).
pub unsafe fn write_entry(cp15: &mut HwCp15, va: u32, desc: u32) {
    let e = l1().wrapping_add((va >> 20) as usize);
    // SAFETY: in bounds as in `entry`; the caller vouches for the mapping.
    unsafe { e.write_volatile(desc) };
    clean_table(cp15, e as u32, 4);
    cp15::flush_tlb(cp15);
}

/// Cleans the D-cache lines of `len` bytes of translation table at `va`
/// (in the linear map) and drains the write buffer: the hardware table
/// walker reads memory, so a descriptor still dirty in a write-back
/// D-cache would be walked stale (found by the cache check).
fn clean_table(cp15: &mut HwCp15, va: u32, len: u32) {
    crate::board::maint(&mut *cp15).clean_dcache_range(ModifiedVirtAddr::new(va), len);
}

/// DACR, FCSEIDR and SCTLR as saved by [`snapshot`], with the first-level table.
pub struct Snapshot {
    regs: SwitchRegs,
    sctlr: Sctlr,
}

static BACKUP: Global<[u32; L1_ENTRIES]> = Global::new([0; L1_ENTRIES]);

/// Saves the MMU state that tests may change (registers read through `cp15`).
pub fn snapshot(cp15: &HwCp15) -> Snapshot {
    // SAFETY: copies 4096 words from the live table into the private backup.
    unsafe { core::ptr::copy_nonoverlapping(l1(), BACKUP.as_ptr().cast::<u32>(), L1_ENTRIES) };
    Snapshot {
        regs: cp15.switch_regs(),
        sctlr: cp15.sctlr(),
    }
}

/// Puts back the state saved by [`snapshot`] through `cp15`, with the
/// maintenance real caches need: the test may have left data in the D-cache
/// under its own mappings (cleaned and invalidated, with the I-cache, before
/// those mappings go), and the table copied back is cleaned to RAM before
/// the TLB is invalidated.
pub fn restore(cp15: &mut HwCp15, s: &Snapshot) {
    let table = l1();
    // Lines the test cached under its mappings, and TLB entries for them,
    // must not outlive the table they came from.
    crate::board::maint(&mut *cp15).flush_all();
    // SAFETY: the values were the kernel's own working configuration when saved.
    unsafe {
        cp15.set_fcse_pid(s.regs.pid());
        cp15.set_dacr(s.regs.dacr());
        cp15.set_sctlr(s.sctlr);
        core::ptr::copy_nonoverlapping(BACKUP.as_ptr().cast::<u32>(), table, L1_ENTRIES);
    }
    crate::board::sctlr_written();
    clean_table(cp15, table as u32, (L1_ENTRIES * 4) as u32);
    cp15::flush_tlb(cp15);
}
