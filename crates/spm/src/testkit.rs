//! Host test doubles: physical memory behind a write-back VIVT D-cache and an
//! MVA-tagged TLB, page mappings with reverse lookup, and interrupt control
//! that records every masked window.
//!
//! The cache keeps, per line, the physical address it was filled from and
//! writes dirty data back there: so a line filled before a remap and not
//! invalidated afterwards loses writes, as on the ARM926EJ-S.

use crate::irq::InterruptControl;
use crate::mappings::{AddressSpace, Mappings, ReverseMapping, Translation};
use crate::phys::PhysMemory;
use core::cell::Cell;
use mmu_armv5::maint::CacheMaintenance;
use mmu_armv5::regs::{Cp15, Cp15Op, Cp15Reg};
use mmu_armv5::size::PageSizeKind;
use mmu_armv5::{FcsePid, ModifiedVirtAddr, PhysAddr, VirtAddr};
use std::collections::HashMap;
use std::rc::Rc;
use std::vec::Vec;

const LINE: u32 = 32;

/// Shared operation counter.
pub type Ops = Rc<Cell<u32>>;

#[derive(Clone)]
struct Line {
    pa: u32,
    data: [u8; LINE as usize],
    dirty: bool,
}

/// Memory + D-cache + TLB + TTBR.
pub struct Hw {
    mem: HashMap<u32, u8>,
    dcache: HashMap<u32, Line>,
    tlb: HashMap<u32, (u32, bool)>,
    pub ttbr: u32,
    pub ops: Ops,
}

/// A CPU access that faulted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CpuFault {
    /// No mapping.
    Translation,
    /// Write to a read-only mapping; the frame it maps.
    Permission(PhysAddr),
}

impl Hw {
    pub fn new(ops: Ops) -> Hw {
        Hw {
            mem: HashMap::new(),
            dcache: HashMap::new(),
            tlb: HashMap::new(),
            ttbr: 0,
            ops,
        }
    }

    fn tick(&self, n: u32) {
        self.ops.set(self.ops.get() + n);
    }

    /// Whether the D-cache holds the line of `mva`.
    pub fn cached(&self, mva: ModifiedVirtAddr) -> bool {
        self.dcache.contains_key(&(mva.as_u32() & !(LINE - 1)))
    }

    /// Physical backdoor read.
    pub fn phys(&self, pa: u32) -> u8 {
        self.mem.get(&pa).copied().unwrap_or(0)
    }

    fn lookup(
        &mut self,
        maps: &Maps,
        space: AddressSpace,
        va: u32,
    ) -> Result<(u32, u32, bool), CpuFault> {
        let mva = maps.mva(space, va).as_u32();
        let page = mva & !0xfff;
        let (pa_page, w) = match self.tlb.get(&page) {
            Some(e) => *e,
            None => {
                let t = maps
                    .walk(space, VirtAddr::new(va))
                    .ok_or(CpuFault::Translation)?;
                let off = va & (t.size.size() - 1) & !0xfff;
                let e = (t.page.as_u32() + off, t.writable);
                self.tlb.insert(page, e);
                e
            }
        };
        Ok((mva, pa_page | (va & 0xfff), w))
    }

    /// A CPU store of one byte through the MMU and the D-cache
    /// (write-back on hit, no allocation on a miss).
    pub fn store(
        &mut self,
        maps: &Maps,
        space: AddressSpace,
        va: u32,
        v: u8,
    ) -> Result<(), CpuFault> {
        let (mva, pa, w) = self.lookup(maps, space, va)?;
        if !w {
            return Err(CpuFault::Permission(PhysAddr::new(pa & !0xfff)));
        }
        match self.dcache.get_mut(&(mva & !(LINE - 1))) {
            Some(l) => {
                l.data[(mva & (LINE - 1)) as usize] = v;
                l.dirty = true;
            }
            None => {
                self.mem.insert(pa, v);
            }
        }
        Ok(())
    }

    /// A CPU load of one byte (allocates a line on a miss).
    pub fn load(&mut self, maps: &Maps, space: AddressSpace, va: u32) -> Result<u8, CpuFault> {
        let (mva, pa, _) = self.lookup(maps, space, va)?;
        let tag = mva & !(LINE - 1);
        if !self.dcache.contains_key(&tag) {
            let base = pa & !(LINE - 1);
            let mut data = [0u8; LINE as usize];
            for (i, d) in data.iter_mut().enumerate() {
                *d = self.phys(base + i as u32);
            }
            self.dcache.insert(
                tag,
                Line {
                    pa: base,
                    data,
                    dirty: false,
                },
            );
        }
        Ok(self.dcache[&tag].data[(mva & (LINE - 1)) as usize])
    }

    fn clean(&mut self, mva: u32) {
        if let Some(l) = self.dcache.get_mut(&(mva & !(LINE - 1))) {
            if l.dirty {
                l.dirty = false;
                let (pa, data) = (l.pa, l.data);
                for (i, d) in data.iter().enumerate() {
                    self.mem.insert(pa + i as u32, *d);
                }
            }
        }
    }
}

impl PhysMemory for Hw {
    fn copy(&mut self, dst: PhysAddr, src: PhysAddr, len: u32) {
        assert_eq!(dst.as_u32() & !0xfff, (dst.as_u32() + len - 1) & !0xfff);
        for i in 0..len {
            let v = self.phys(src.as_u32() + i);
            self.mem.insert(dst.as_u32() + i, v);
        }
        self.tick(len / 4);
    }

    fn zero(&mut self, dst: PhysAddr, len: u32) {
        for i in 0..len {
            self.mem.insert(dst.as_u32() + i, 0);
        }
        self.tick(len / 4);
    }
}

impl crate::lines::LineMaintenance for Hw {}

impl CacheMaintenance for Hw {
    const DCACHE_LINE: u32 = LINE;

    fn clean_invalidate_dcache(&mut self) {
        let tags: Vec<u32> = self.dcache.keys().copied().collect();
        for t in tags {
            self.clean(t);
        }
        self.dcache.clear();
        self.tick(1);
    }
    fn invalidate_icache(&mut self) {
        self.tick(1);
    }
    fn clean_dcache_line(&mut self, mva: ModifiedVirtAddr) {
        self.clean(mva.as_u32());
        self.tick(1);
    }
    fn clean_invalidate_dcache_line(&mut self, mva: ModifiedVirtAddr) {
        self.clean(mva.as_u32());
        self.dcache.remove(&(mva.as_u32() & !(LINE - 1)));
        self.tick(1);
    }
    unsafe fn invalidate_dcache_line(&mut self, mva: ModifiedVirtAddr) {
        self.dcache.remove(&(mva.as_u32() & !(LINE - 1)));
        self.tick(1);
    }
    fn invalidate_icache_line(&mut self, _mva: ModifiedVirtAddr) {
        self.tick(1);
    }
    fn drain_write_buffer(&mut self) {
        self.tick(1);
    }
    fn invalidate_tlb(&mut self) {
        self.tlb.clear();
        self.tick(1);
    }
    fn invalidate_tlb_entry(&mut self, mva: ModifiedVirtAddr) {
        self.tlb.remove(&(mva.as_u32() & !0xfff));
        self.tick(1);
    }
}

impl Cp15 for Hw {
    fn read(&self, reg: Cp15Reg) -> u32 {
        if reg == Cp15Reg::Ttbr {
            self.ttbr
        } else {
            0
        }
    }
    unsafe fn write(&mut self, reg: Cp15Reg, value: u32) {
        if reg == Cp15Reg::Ttbr {
            self.ttbr = value;
        }
        self.tick(1);
    }
    unsafe fn op(&mut self, _op: Cp15Op, _value: u32) {
        self.tick(1);
    }
    fn test_clean_invalidate_dcache(&mut self) -> bool {
        self.clean_invalidate_dcache();
        true
    }
    fn test_clean_dcache(&mut self) -> bool {
        let tags: Vec<u32> = self.dcache.keys().copied().collect();
        for t in tags {
            self.clean(t);
        }
        true
    }
}

#[derive(Clone, Copy, Debug)]
struct Entry {
    space: AddressSpace,
    va: u32,
    pa: u32,
    size: PageSizeKind,
    writable: bool,
    saved: bool,
}

/// Page mappings of every address space, with reverse lookup.
pub struct Maps {
    entries: Vec<Entry>,
    /// First-level entries pointing at second-level tables: (index, table PA).
    pub l1: Vec<(u32, u32)>,
    /// Page directories of address spaces.
    pub dirs: Vec<(AddressSpace, u32)>,
    /// What [`Mappings::generation`] reports (`Some`, counting `map` calls,
    /// unless a test sets `None`).
    pub generation: Option<u64>,
    /// Calls of [`Mappings::for_each_mapping`] so far.
    pub walks: Cell<u32>,
    ops: Ops,
}

impl Maps {
    pub fn new(ops: Ops) -> Maps {
        Maps {
            entries: Vec::new(),
            l1: Vec::new(),
            dirs: Vec::new(),
            generation: Some(0),
            walks: Cell::new(0),
            ops,
        }
    }

    pub fn map(
        &mut self,
        space: AddressSpace,
        va: u32,
        pa: u32,
        size: PageSizeKind,
        writable: bool,
    ) {
        self.generation = self.generation.map(|g| g + 1);
        self.entries.push(Entry {
            space,
            va,
            pa,
            size,
            writable,
            saved: false,
        });
    }

    /// The MVA of `va` in `space`: user space `n` runs with FCSE PID `n`.
    pub fn mva(&self, space: AddressSpace, va: u32) -> ModifiedVirtAddr {
        match space {
            AddressSpace::Kernel => ModifiedVirtAddr::new(va),
            AddressSpace::User(id) => {
                VirtAddr::new(va).to_mva(FcsePid::new((id.get() & 127) as u8).expect("pid"))
            }
        }
    }

    fn tick(&self) {
        self.ops.set(self.ops.get() + 1);
    }

    /// What the MMU finds for `va` in `space` (no kernel call: not
    /// counted).
    pub fn walk(&self, space: AddressSpace, va: VirtAddr) -> Option<Translation> {
        let va = va.as_u32();
        self.entries
            .iter()
            .find(|e| e.space == space && va >= e.va && va - e.va < e.size.size())
            .map(|e| Translation {
                page: PhysAddr::new(e.pa),
                size: e.size,
                writable: e.writable,
            })
    }
}

impl Mappings for Maps {
    fn generation(&self) -> Option<u64> {
        self.generation
    }

    fn translate(&self, space: AddressSpace, va: VirtAddr) -> Option<Translation> {
        self.tick();
        self.walk(space, va)
    }

    fn for_each_mapping(
        &self,
        page: PhysAddr,
        size: PageSizeKind,
        f: &mut dyn FnMut(&ReverseMapping),
    ) {
        self.tick();
        self.walks.set(self.walks.get() + 1);
        for e in self
            .entries
            .iter()
            .filter(|e| e.pa == page.as_u32() && e.size == size)
        {
            f(&ReverseMapping {
                space: e.space,
                mva: self.mva(e.space, e.va),
                writable: e.writable,
                cached: true,
            });
        }
    }

    fn write_protect(&mut self, page: PhysAddr, size: PageSizeKind) {
        self.tick();
        for e in self
            .entries
            .iter_mut()
            .filter(|e| e.pa == page.as_u32() && e.size == size)
        {
            e.saved = e.writable;
            e.writable = false;
        }
    }

    fn restore_write(&mut self, page: PhysAddr, size: PageSizeKind) {
        self.tick();
        for e in self
            .entries
            .iter_mut()
            .filter(|e| e.pa == page.as_u32() && e.size == size)
        {
            e.writable |= e.saved;
            e.saved = false;
        }
    }

    fn swapped(&mut self, _a: PhysAddr, _b: PhysAddr, _size: PageSizeKind) {
        self.tick();
    }

    fn swap(&mut self, a: PhysAddr, b: PhysAddr, size: PageSizeKind) {
        self.tick();
        for e in self.entries.iter_mut().filter(|e| e.size == size) {
            if e.pa == a.as_u32() {
                e.pa = b.as_u32();
            } else if e.pa == b.as_u32() {
                e.pa = a.as_u32();
            }
        }
    }

    fn move_second_level(&mut self, old: PhysAddr, new: PhysAddr) {
        self.tick();
        for (_, t) in self.l1.iter_mut() {
            if *t & !0xfff == old.as_u32() {
                *t = new.as_u32() | (*t & 0xfff);
            }
        }
    }

    fn move_first_level(&mut self, old: PhysAddr, new: PhysAddr) {
        self.tick();
        for (_, d) in self.dirs.iter_mut() {
            if *d == old.as_u32() {
                *d = new.as_u32();
            }
        }
    }
}

/// Interrupt control that records the operation count of every masked window.
pub struct Irq {
    enabled: bool,
    start: u32,
    ops: Ops,
    pub windows: Vec<u32>,
}

impl Irq {
    pub fn new(ops: Ops) -> Irq {
        Irq {
            enabled: true,
            start: 0,
            ops,
            windows: Vec::new(),
        }
    }
}

impl InterruptControl for Irq {
    fn disable(&mut self) -> bool {
        let was = self.enabled;
        if was {
            self.start = self.ops.get();
        }
        self.enabled = false;
        was
    }

    fn restore(&mut self, was: bool) {
        if was && !self.enabled {
            self.windows.push(self.ops.get() - self.start);
            self.enabled = true;
        }
    }
}
