//! A small test kernel for `spm` on the `armv5-sim` model (shared by the
//! model tests and the `overhead` example).
//!
//! * The machine is an ARM926EJ-S preset with 8 MiB of RAM at 0, a 32 KiB
//!   ITCM and a 64 KiB DTCM, MMU and both caches on, S bit set (so kernel
//!   pages can be read-only), every domain a client.
//! * One real [`PageTable`] in the model's memory serves every address
//!   space through the FCSE: task `n` runs with PID `n`, so its virtual
//!   addresses below 32 MiB are distinct MVAs; the kernel uses addresses
//!   above 32 MiB, which are not relocated.
//! * [`Maps`] implements [`Mappings`] over that table: reverse mappings come
//!   from a registry of mapped pages, checked against the live descriptors.
//! * [`Hw`] is the machine for `spm` (cache maintenance, CP15) plus
//!   [`PhysMemory`], which copies and zeroes through an uncached kernel
//!   window of physical memory at [`WINDOW`] with the model's CPU, so the
//!   copies are counted like any other access.
//! * [`Irq`] records, for every interrupts-masked window, the model's
//!   counters spent inside it.
#![allow(dead_code)]

pub mod ext;

use armv5_sim::{
    presets, sctlr, CostModel, Counters, Machine, MemoryKind, MemoryRegion, Privilege, Width,
};
use mmu_armv5::descriptor::{AccessPermission, CachePolicy, L1Descriptor};
use mmu_armv5::maint::CacheMaintenance;
use mmu_armv5::regs::{Cp15, Cp15Op, Cp15Reg, Dacr};
use mmu_armv5::regs::{Sctlr, Ttbr};
use mmu_armv5::size::{Frame, PageSizeKind};
use mmu_armv5::table::{MapAttrs, Mapping, PageTable, SizePolicy, TableFlush};
use mmu_armv5::{Domain, FcsePid, ModifiedVirtAddr, PhysAddr, VirtAddr};
use spm::{
    AddressSpace, FrameDesc, FrameTable, InitialUse, InterruptControl, Location, Mappings,
    PhysMemory, PhysRegion, ReverseMapping, SectionSummary, SpaceId, Translation,
};
use std::cell::{Cell, RefCell};
use std::rc::Rc;

/// RAM: 8 MiB at 0.
pub const RAM: u32 = 0;
/// RAM size.
pub const RAM_SIZE: u32 = 8 << 20;
/// Table memory handed to the model's frame pool.
pub const POOL: u32 = 0x0060_0000;
/// ITCM: 32 KiB.
pub const ITCM: u32 = 0x0080_0000;
/// DTCM: 64 KiB, 64 KiB aligned (room for one large page).
pub const DTCM: u32 = 0x0081_0000;
/// The kernel's uncached window of physical memory: VA `WINDOW + pa`.
pub const WINDOW: u32 = 0xC000_0000;

/// The machine, shared by the `spm` roles (mappings, hardware, interrupts).
pub type Shared = Rc<RefCell<Machine>>;

/// The model's table memory (its frame pool), for fass's platform
/// (`fass::Split`).
pub struct ModelTables(pub Shared);

// SAFETY: every method forwards to the model's own `TableAlloc`, which
// upholds the contract; its pointers stay valid while the machine lives,
// which the `Rc` keeps alive at least as long as this handle.
unsafe impl mmu_armv5::table::TableAlloc for ModelTables {
    fn allocate(
        &mut self,
        kind: mmu_armv5::table::TableKind,
    ) -> Result<PhysAddr, mmu_armv5::table::AllocError> {
        mmu_armv5::table::TableAlloc::allocate(&mut *self.0.borrow_mut(), kind)
    }
    unsafe fn deallocate(&mut self, kind: mmu_armv5::table::TableKind, pa: PhysAddr) {
        // SAFETY: the caller's promise, for the same machine.
        unsafe { mmu_armv5::table::TableAlloc::deallocate(&mut *self.0.borrow_mut(), kind, pa) }
    }
    fn table_ptr(
        &self,
        kind: mmu_armv5::table::TableKind,
        pa: PhysAddr,
    ) -> Option<core::ptr::NonNull<u32>> {
        mmu_armv5::table::TableAlloc::table_ptr(&*self.0.borrow(), kind, pa)
    }
    fn table_mva(&self, pa: PhysAddr) -> ModifiedVirtAddr {
        mmu_armv5::table::TableAlloc::table_mva(&*self.0.borrow(), pa)
    }
}

/// Builds the machine and the frame table's regions.
pub fn machine() -> Shared {
    let mut cfg = presets::arm926ejs().config;
    for (base, size, kind) in [
        (RAM, RAM_SIZE, MemoryKind::Ram),
        (ITCM, 32 << 10, MemoryKind::Itcm),
        (DTCM, 64 << 10, MemoryKind::Dtcm),
    ] {
        cfg.regions.push(MemoryRegion {
            base: PhysAddr::new(base),
            size,
            kind,
            latency: 0,
        });
    }
    let mut m = Machine::new(cfg).expect("config");
    m.set_frame_pool(PhysAddr::new(POOL), 2 << 20)
        .expect("pool");
    Rc::new(RefCell::new(m))
}

/// A device frame the frame table describes (never accessed).
pub const DEV: u32 = 0x1010_0000;

/// The `spm` regions of the model: RAM (resources), ITCM, DTCM, one device page.
pub fn regions() -> [PhysRegion; 4] {
    [
        PhysRegion::new(
            PhysAddr::new(RAM),
            RAM_SIZE,
            Location::Ram,
            InitialUse::Resource,
        )
        .unwrap(),
        PhysRegion::new(
            PhysAddr::new(ITCM),
            32 << 10,
            Location::Itcm,
            InitialUse::Resource,
        )
        .unwrap(),
        PhysRegion::new(
            PhysAddr::new(DTCM),
            64 << 10,
            Location::Dtcm,
            InitialUse::Resource,
        )
        .unwrap(),
        PhysRegion::new(
            PhysAddr::new(DEV),
            0x1000,
            Location::Device,
            InitialUse::Undefined,
        )
        .unwrap(),
    ]
}

/// Storage for a frame table over [`regions`], owned by the test (so
/// nothing is leaked: Miri reports leaks).
pub struct Storage {
    frames: Vec<FrameDesc>,
    sections: Vec<SectionSummary>,
}

impl Storage {
    /// Enough descriptions and summaries for [`regions`].
    pub fn new() -> Storage {
        let r = regions();
        Storage {
            frames: vec![FrameDesc::default(); FrameTable::<4>::frames_needed(&r)],
            sections: vec![SectionSummary::default(); FrameTable::<4>::sections_needed(&r)],
        }
    }

    /// A frame table over [`regions`] in this storage, every frame in its
    /// initial state.
    pub fn table(&mut self) -> FrameTable<'_, 4> {
        FrameTable::new(&regions(), &mut self.frames, &mut self.sections).unwrap()
    }
}

impl Default for Storage {
    fn default() -> Self {
        Storage::new()
    }
}

/// Performs the part of a table flush the [`Mappings`] contract leaves to
/// the implementation: clean the changed table lines and drain. Returns the
/// number of descriptor words written (the model does not count them).
fn clean_table_lines(m: &mut Machine, f: TableFlush) -> u64 {
    let mut words = 0;
    for &(s, l) in f.clean_ranges() {
        words += u64::from(l / 4);
        let mut a = s & !31;
        while a < s + l {
            m.clean_dcache_mva(ModifiedVirtAddr::new(a));
            a += 32;
        }
    }
    m.drain_write_buffer();
    // SAFETY: the `Mappings` contract: `spm` invalidates the TLB entries of
    // every mapping it changes through this implementation.
    unsafe { f.ignore() };
    words
}

/// The MVA of `va` in `space`.
pub fn mva(space: AddressSpace, va: u32) -> ModifiedVirtAddr {
    match space {
        AddressSpace::Kernel => ModifiedVirtAddr::new(va),
        AddressSpace::User(id) => VirtAddr::new(va).to_mva(pid(id)),
    }
}

/// The FCSE PID of a task.
pub fn pid(id: SpaceId) -> FcsePid {
    FcsePid::new(id.get() as u8).expect("task ids are FCSE PIDs (1..=127)")
}

fn ap_for(space: AddressSpace, writable: bool) -> AccessPermission {
    match (space, writable) {
        (AddressSpace::Kernel, true) => AccessPermission::PrivRw,
        // With SCTLR.S: privileged read-only, user none.
        (AddressSpace::Kernel, false) => AccessPermission::NoneOrRom,
        (AddressSpace::User(_), true) => AccessPermission::ReadWrite,
        (AddressSpace::User(_), false) => AccessPermission::PrivRwUserRo,
    }
}

fn writable(space: AddressSpace, ap: AccessPermission) -> bool {
    match space {
        AddressSpace::Kernel => ap != AccessPermission::NoneOrRom,
        AddressSpace::User(_) => ap == AccessPermission::ReadWrite,
    }
}

/// What [`Maps`] saw when `spm` called it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SwapCall {
    /// Whether interrupts were enabled during the call.
    pub irq_enabled: bool,
}

/// Reverse mappings and page-table changes over one real page table.
pub struct Maps {
    m: Shared,
    irq_on: Rc<Cell<bool>>,
    pt: PageTable,
    /// Every mapped page: (space, va, size).
    pages: Vec<(AddressSpace, u32, PageSizeKind)>,
    /// MVAs whose write access `write_protect` took.
    saved: Vec<u32>,
    /// Every `swap` call.
    pub swaps: Vec<SwapCall>,
    /// What [`Mappings::generation`] reports: `Some`, counting every
    /// `map` and `unmap` (so an exchange remembers mappings between steps),
    /// or `None` (set by a test: the exchange asks for every step).
    pub generation: Option<u64>,
    /// Descriptor words written (not counted by the model).
    pub table_words: u64,
}

impl Maps {
    fn lookup(&self, mva: ModifiedVirtAddr) -> Option<Mapping> {
        let m = self.m.borrow();
        self.pt.lookup(&*m, mva).expect("table")
    }

    fn mapping_of(
        &self,
        space: AddressSpace,
        va: u32,
        size: PageSizeKind,
    ) -> Option<(ReverseMapping, PhysAddr)> {
        let at = mva(space, va);
        let l = self.lookup(at)?;
        (l.size == size).then_some((
            ReverseMapping {
                space,
                mva: at,
                writable: writable(space, l.ap.0[0]),
                cached: true,
            },
            l.pa,
        ))
    }

    fn mappings_of(&self, page: PhysAddr, size: PageSizeKind) -> Vec<ReverseMapping> {
        self.pages
            .iter()
            .filter(|&&(_, _, z)| z == size)
            .filter_map(|&(s, v, z)| self.mapping_of(s, v, z))
            .filter(|(_, pa)| *pa == page)
            .map(|(m, _)| m)
            .collect()
    }

    /// Maps `size` bytes at `va` in `space` to `pa`, write-back cached.
    pub fn map(&mut self, space: AddressSpace, va: u32, pa: u32, size: PageSizeKind, w: bool) {
        let attrs = MapAttrs::new(
            Domain::from_low_bits(0),
            ap_for(space, w),
            CachePolicy::WriteBack,
        );
        let mut m = self.m.borrow_mut();
        let f = self
            .pt
            .map(
                &mut *m,
                mva(space, va),
                PhysAddr::new(pa),
                size.size(),
                attrs,
                SizePolicy::Exactly(size),
            )
            .expect("map");
        f.flush_on(&mut *m);
        self.pages.push((space, va, size));
        self.generation = self.generation.map(|g| g + 1);
    }

    /// Removes the mapping of the page at `va` in `space`.
    pub fn unmap(&mut self, space: AddressSpace, va: u32, size: PageSizeKind) {
        let mut m = self.m.borrow_mut();
        let f = self
            .pt
            .unmap(&mut *m, mva(space, va), size.size())
            .expect("unmap");
        f.flush_on(&mut *m);
        self.pages.retain(|&(s, v, _)| (s, v) != (space, va));
        self.generation = self.generation.map(|g| g + 1);
    }

    /// Gives the page at `va` in `space` write access or takes it away, as
    /// a kernel's `mprotect` would: the descriptor, its TLB entry, and a
    /// new generation.
    pub fn set_page_writable(&mut self, space: AddressSpace, va: u32, size: PageSizeKind, w: bool) {
        let at = mva(space, va);
        self.set_writable(space, at, size, w);
        CacheMaintenance::invalidate_tlb_entry(&mut *self.m.borrow_mut(), at);
        self.generation = self.generation.map(|g| g + 1);
    }

    /// Changes the AP of the page at `mva` (clean table lines only).
    fn set_writable(
        &mut self,
        space: AddressSpace,
        at: ModifiedVirtAddr,
        size: PageSizeKind,
        w: bool,
    ) {
        let mut m = self.m.borrow_mut();
        let f = self
            .pt
            .protect(
                &mut *m,
                at,
                size.size(),
                ap_for(space, w),
                CachePolicy::WriteBack,
            )
            .expect("protect");
        self.table_words += clean_table_lines(&mut m, f);
    }

    /// Points the page at `at` at `pa`, keeping every other bit.
    fn retarget(&mut self, at: ModifiedVirtAddr, pa: PhysAddr) {
        let mut m = self.m.borrow_mut();
        let f = self.pt.retarget_page(&*m, at, pa).expect("retarget");
        self.table_words += clean_table_lines(&mut m, f);
    }
}

impl Mappings for Maps {
    fn generation(&self) -> Option<u64> {
        self.generation
    }

    fn translate(&self, space: AddressSpace, va: VirtAddr) -> Option<Translation> {
        let l = self.lookup(mva(space, va.as_u32()))?;
        Some(Translation {
            page: l.pa,
            size: l.size,
            writable: writable(space, l.ap.0[0]),
        })
    }

    fn for_each_mapping(
        &self,
        page: PhysAddr,
        size: PageSizeKind,
        f: &mut dyn FnMut(&ReverseMapping),
    ) {
        // Collected first: the callback drives the machine.
        for m in self.mappings_of(page, size) {
            f(&m);
        }
    }

    fn write_protect(&mut self, page: PhysAddr, size: PageSizeKind) {
        for m in self.mappings_of(page, size) {
            if m.writable {
                self.saved.push(m.mva.as_u32());
                self.set_writable(m.space, m.mva, size, false);
            }
        }
    }

    fn restore_write(&mut self, page: PhysAddr, size: PageSizeKind) {
        for m in self.mappings_of(page, size) {
            if let Some(i) = self.saved.iter().position(|&s| s == m.mva.as_u32()) {
                self.saved.swap_remove(i);
                self.set_writable(m.space, m.mva, size, true);
            }
        }
    }

    fn swap(&mut self, a: PhysAddr, b: PhysAddr, size: PageSizeKind) {
        self.swaps.push(SwapCall {
            irq_enabled: self.irq_on.get(),
        });
        let (ma, mb) = (self.mappings_of(a, size), self.mappings_of(b, size));
        for m in ma {
            self.retarget(m.mva, b);
        }
        for m in mb {
            self.retarget(m.mva, a);
        }
    }

    fn move_second_level(&mut self, old: PhysAddr, new: PhysAddr) {
        let mut m = self.m.borrow_mut();
        for slot in 0..4096 {
            let l1 = self.pt.l1_entry(&*m, slot).expect("l1");
            let d = match l1 {
                L1Descriptor::Coarse(c) if c.table.start().as_u32() & !0xfff == old.as_u32() => {
                    let off = c.table.start().as_u32() & 0xfff;
                    L1Descriptor::Coarse(mmu_armv5::descriptor::CoarseTableDesc {
                        table: Frame::containing(PhysAddr::new(new.as_u32() + off)),
                        ..c
                    })
                }
                _ => continue,
            };
            // SAFETY: the exchange moved the table to `new`, a frame the
            // frame table keeps as a page table for as long as it is
            // linked; the old frame (returned here, no longer the page
            // table's) is the exchange's to reuse.
            let (f, _old) = unsafe { self.pt.set_l1_entry_unchecked(&*m, slot, d) }.expect("l1");
            self.table_words += clean_table_lines(&mut m, f);
        }
    }

    fn move_first_level(&mut self, _old: PhysAddr, new: PhysAddr) {
        // SAFETY: the exchange moved the first-level table to `new`; the
        // old handle, replaced here, was the only one managing it.
        self.pt = unsafe { PageTable::from_root(new, Default::default()) }.expect("root");
    }
}

/// The machine as `spm`'s hardware: maintenance and CP15 forwarded, physical
/// copies through the uncached kernel window.
pub struct Hw {
    /// The machine.
    pub m: Shared,
}

impl Hw {
    fn word(&self, pa: u32) -> VirtAddr {
        VirtAddr::new(WINDOW + pa)
    }
}

impl PhysMemory for Hw {
    fn copy(&mut self, dst: PhysAddr, src: PhysAddr, len: u32) {
        let mut m = self.m.borrow_mut();
        for off in (0..len).step_by(4) {
            let v = m
                .load(
                    self.word(src.as_u32() + off),
                    Width::Word,
                    Privilege::Privileged,
                )
                .expect("window read");
            m.store(
                self.word(dst.as_u32() + off),
                Width::Word,
                v,
                Privilege::Privileged,
            )
            .expect("window write");
        }
    }

    fn zero(&mut self, dst: PhysAddr, len: u32) {
        let mut m = self.m.borrow_mut();
        for off in (0..len).step_by(4) {
            m.store(
                self.word(dst.as_u32() + off),
                Width::Word,
                0,
                Privilege::Privileged,
            )
            .expect("window write");
        }
    }
}

impl spm::LineMaintenance for Hw {}

// SAFETY: every method forwards to the model machine, whose maintenance is
// trusted (its walker reads only its own memory).
unsafe impl mmu_armv5::maint::TrustedMaintenance for Hw {}

impl CacheMaintenance for Hw {
    const DCACHE_LINE: u32 = 32;
    fn clean_invalidate_dcache(&mut self) {
        CacheMaintenance::clean_invalidate_dcache(&mut *self.m.borrow_mut())
    }
    fn invalidate_icache(&mut self) {
        CacheMaintenance::invalidate_icache(&mut *self.m.borrow_mut())
    }
    fn clean_dcache_line(&mut self, mva: ModifiedVirtAddr) {
        CacheMaintenance::clean_dcache_line(&mut *self.m.borrow_mut(), mva)
    }
    fn clean_invalidate_dcache_line(&mut self, mva: ModifiedVirtAddr) {
        CacheMaintenance::clean_invalidate_dcache_line(&mut *self.m.borrow_mut(), mva)
    }
    unsafe fn invalidate_dcache_line(&mut self, mva: ModifiedVirtAddr) {
        // SAFETY: forwarded; the caller upholds the same contract.
        unsafe { CacheMaintenance::invalidate_dcache_line(&mut *self.m.borrow_mut(), mva) }
    }
    fn invalidate_icache_line(&mut self, mva: ModifiedVirtAddr) {
        CacheMaintenance::invalidate_icache_line(&mut *self.m.borrow_mut(), mva)
    }
    fn drain_write_buffer(&mut self) {
        CacheMaintenance::drain_write_buffer(&mut *self.m.borrow_mut())
    }
    fn invalidate_tlb(&mut self) {
        CacheMaintenance::invalidate_tlb(&mut *self.m.borrow_mut())
    }
    fn invalidate_tlb_entry(&mut self, mva: ModifiedVirtAddr) {
        CacheMaintenance::invalidate_tlb_entry(&mut *self.m.borrow_mut(), mva)
    }
}

impl Cp15 for Hw {
    fn read(&self, reg: Cp15Reg) -> u32 {
        Cp15::read(&*self.m.borrow(), reg)
    }
    unsafe fn write(&mut self, reg: Cp15Reg, value: u32) {
        // SAFETY: forwarded; the caller upholds the same contract.
        unsafe { Cp15::write(&mut *self.m.borrow_mut(), reg, value) }
    }
    unsafe fn op(&mut self, op: Cp15Op, value: u32) {
        // SAFETY: forwarded; the caller upholds the same contract.
        unsafe { Cp15::op(&mut *self.m.borrow_mut(), op, value) }
    }
    fn test_clean_invalidate_dcache(&mut self) -> bool {
        Cp15::test_clean_invalidate_dcache(&mut *self.m.borrow_mut())
    }
    fn test_clean_dcache(&mut self) -> bool {
        Cp15::test_clean_dcache(&mut *self.m.borrow_mut())
    }
}

/// Interrupt control that records the model's counters inside every masked window.
pub struct Irq {
    m: Shared,
    on: Rc<Cell<bool>>,
    start: Counters,
    /// Counters spent inside each masked window, in order.
    pub windows: Vec<Counters>,
}

impl Irq {
    /// Whether interrupts are enabled.
    pub fn enabled(&self) -> bool {
        self.on.get()
    }

    /// The modelled cycles of the longest window.
    pub fn longest(&self, cost: &CostModel) -> u64 {
        self.windows
            .iter()
            .map(|c| cost.cycles(c))
            .max()
            .unwrap_or(0)
    }
}

impl InterruptControl for Irq {
    fn disable(&mut self) -> bool {
        let was = self.on.get();
        if was {
            self.start = self.m.borrow().counters().clone();
        }
        self.on.set(false);
        was
    }

    fn restore(&mut self, was: bool) {
        if was && !self.on.get() {
            let now = self.m.borrow().counters().clone();
            self.windows.push(&now - &self.start);
            self.on.set(true);
        }
    }
}

/// The whole test kernel, its frame table in the test's [`Storage`].
pub struct Kernel<'a> {
    /// The machine.
    pub m: Shared,
    /// The frame table.
    pub table: FrameTable<'a, 4>,
    /// Mappings.
    pub maps: Maps,
    /// Hardware.
    pub hw: Hw,
    /// Interrupt control.
    pub irq: Irq,
}

impl<'a> Kernel<'a> {
    /// A booted kernel: page table live, window mapped, MMU, caches and S
    /// on; its frame table in `storage`.
    pub fn new(storage: &'a mut Storage) -> Kernel<'a> {
        let m = machine();
        let on = Rc::new(Cell::new(true));
        let pt = PageTable::new(&mut *m.borrow_mut()).expect("table");
        let mut maps = Maps {
            m: m.clone(),
            irq_on: on.clone(),
            pt,
            pages: Vec::new(),
            saved: Vec::new(),
            swaps: Vec::new(),
            generation: Some(0),
            table_words: 0,
        };
        // The uncached window: 16 sections over RAM and the TCMs. Not
        // registered as a mapping: it never holds cache lines.
        {
            let attrs = MapAttrs::new(
                Domain::from_low_bits(0),
                AccessPermission::PrivRw,
                CachePolicy::Buffered,
            );
            let mut mm = m.borrow_mut();
            let f = maps
                .pt
                .map(
                    &mut *mm,
                    ModifiedVirtAddr::new(WINDOW),
                    PhysAddr::new(0),
                    16 << 20,
                    attrs,
                    SizePolicy::Exactly(PageSizeKind::Section),
                )
                .expect("window");
            f.flush_on(&mut *mm);
            mm.set_ttbr(Ttbr::new(maps.pt.root()).unwrap());
            mm.set_dacr(Dacr::ALL_CLIENT);
            mm.set_sctlr(Sctlr::from_bits(sctlr::M | sctlr::C | sctlr::I | sctlr::S));
        }
        Kernel {
            table: storage.table(),
            hw: Hw { m: m.clone() },
            irq: Irq {
                m: m.clone(),
                on,
                start: Counters::default(),
                windows: Vec::new(),
            },
            maps,
            m,
        }
    }

    /// Runs as `space` (sets the FCSE PID for a task).
    pub fn enter(&mut self, space: AddressSpace) {
        let p = match space {
            AddressSpace::Kernel => FcsePid::ZERO,
            AddressSpace::User(id) => pid(id),
        };
        self.m.borrow_mut().set_fcse_pid(p);
    }

    fn privilege(space: AddressSpace) -> Privilege {
        match space {
            AddressSpace::Kernel => Privilege::Privileged,
            AddressSpace::User(_) => Privilege::User,
        }
    }

    /// A CPU byte load in `space`.
    pub fn load(&mut self, space: AddressSpace, va: u32) -> Result<u8, mmu_armv5::Fault> {
        self.enter(space);
        let v = self
            .m
            .borrow_mut()
            .load(VirtAddr::new(va), Width::Byte, Self::privilege(space));
        v.map(|v| v as u8)
    }

    /// A CPU byte store in `space`.
    pub fn store(&mut self, space: AddressSpace, va: u32, v: u8) -> Result<(), mmu_armv5::Fault> {
        self.enter(space);
        let r = self.m.borrow_mut().store(
            VirtAddr::new(va),
            Width::Byte,
            u32::from(v),
            Self::privilege(space),
        );
        r
    }

    /// A physical byte, bypassing caches.
    pub fn phys(&self, pa: u32) -> u8 {
        self.m
            .borrow()
            .phys_read(PhysAddr::new(pa), Width::Byte)
            .expect("phys") as u8
    }

    /// Writes a physical byte, bypassing caches.
    pub fn set_phys(&mut self, pa: u32, v: u8) {
        self.m
            .borrow_mut()
            .phys_write(PhysAddr::new(pa), Width::Byte, u32::from(v))
            .expect("phys");
    }

    /// Dirty D-cache lines.
    pub fn dirty_lines(&self) -> usize {
        self.m.borrow().dcache_dirty_lines()
    }

    /// The model's counters so far.
    pub fn counters(&self) -> Counters {
        self.m.borrow().counters().clone()
    }
}
