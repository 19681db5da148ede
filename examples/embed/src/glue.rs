//! Glue between this kernel and `spm`'s page exchange: what a kernel writes
//! by hand today. Ready-made adapters (a `Mappings` over `mmu-armv5` page
//! tables, one value joining the CPU, physical memory and interrupt
//! masking) are to replace this module; only step 7 ([`crate::exchange`]),
//! the hardware bring-up (`hw`) and the tests use it.
//!
//! * [`KernelMaps`]: `spm::Mappings` over the kernel's own table (the CPD),
//!   kernel mappings only;
//! * [`ExchangeHw`]: the CPU and physical memory as the exchange's `hw`;
//! * [`PhysWindows`]: `spm::PhysMemory` through the board's uncached
//!   physical window;
//! * [`CpuIrq`]: `spm::InterruptControl` over the CPSR's I and F bits.
//!
//! `spm` takes the mappings and the hardware as two `&mut` values, and both
//! need the CPU: the hardware for cache and TLB maintenance, the mappings
//! to clean the table lines they write. So the two share it through a
//! `RefCell`; every borrow ends within one call, and `spm` never calls one
//! from inside the other.

use core::cell::RefCell;
use core::sync::atomic::{compiler_fence, Ordering};

use fass::{KernelTable, Region};
use mmu_armv5::descriptor::{AccessPermission, L2Descriptor, LargePageDesc, SmallPageDesc};
use mmu_armv5::irq::{self, IrqState};
use mmu_armv5::maint::CacheMaintenance;
use mmu_armv5::regs::{Cp15, Cp15Op, Cp15Reg};
use mmu_armv5::size::{Frame, PageSizeKind};
use mmu_armv5::table::TableRef;
use mmu_armv5::table::{self, write_l2_page, PageTable, TableAlloc, TableFlush, TableKind};
use mmu_armv5::{ModifiedVirtAddr as Mva, PhysAddr, VirtAddr};
use spm::{AddressSpace, InterruptControl, LineMaintenance, Mappings, ReverseMapping};
use spm::{PhysMemory, Translation};

use crate::Error;

/// Mappings whose write access one exchange takes away at most at once.
const TAKEN: usize = 8;

/// The CPU shared by [`KernelMaps`] and [`ExchangeHw`] during an exchange.
pub type SharedCpu<'c, H> = RefCell<&'c mut H>;

/// `spm::Mappings` over the kernel's first-level table (the CPD) and the
/// second-level tables it links: the mappings in the layout's kernel
/// region, 4 KiB and 64 KiB pages.
///
/// What it does not report, and why that is sound here:
/// * user mappings: a frame `spm` moves for the kernel is a kernel page or
///   a page resource in the frame table, and no process maps those (the
///   kernel maps only frames it recorded as the process's, step 4);
/// * the physical window's sections: uncached (no cache lines to clean),
///   only [`PhysWindows`] writes through it, and it must keep mapping each
///   frame at its own address, so it is never swapped;
/// * sections of the kernel image: not movable (pinned in the frame
///   table), and rewriting a kernel first-level entry would break the
///   promise made to `fass::KernelTable::new`.
///
/// Table lines it writes are cleaned and the TLB entries invalidated here,
/// through the shared CPU.
pub struct KernelMaps<'a, 'c, A: ?Sized, H> {
    table: PageTable,
    kernel: Region,
    tables: &'a mut A,
    cpu: &'a SharedCpu<'c, H>,
    /// Mappings `write_protect` took write access from, with their AP.
    taken: [Option<(Mva, AccessPermission)>; TAKEN],
}

impl<'a, 'c, A: TableAlloc + ?Sized, H: CacheMaintenance> KernelMaps<'a, 'c, A, H> {
    /// The mappings of `kernel`'s table (the one `fass` keeps as its CPD),
    /// in the table memory `tables`.
    pub fn new(
        kernel: &KernelTable,
        tables: &'a mut A,
        cpu: &'a SharedCpu<'c, H>,
    ) -> Result<Self, Error> {
        Ok(KernelMaps {
            // SAFETY: this is the only `PageTable` on the kernel's root
            // (`fass` writes the CPD's user slots directly and frees no
            // kernel table).
            table: unsafe { PageTable::from_root(kernel.root(), kernel.encoding()) }?,
            kernel: kernel.layout().kernel(),
            tables,
            cpu,
            taken: [None; TAKEN],
        })
    }

    /// Calls `f` with each kernel mapping of the `size` page at `page`.
    fn each(&self, page: PhysAddr, size: PageSizeKind, mut f: impl FnMut(&table::Mapping)) {
        if !moved(size) {
            return;
        }
        for m in self.table.mappings(&*self.tables) {
            // The kernel's tables all come from the pool: every one reads.
            let m = m.expect("a kernel page table the pool cannot read");
            if m.pa == page && m.size == size && self.kernel.contains(m.mva.as_u32()) {
                f(&m);
            }
        }
    }

    /// Up to 4 kernel mappings of the page (an exchange remembers 4).
    fn collect(&self, page: PhysAddr, size: PageSizeKind) -> ([Option<table::Mapping>; 4], usize) {
        let mut out = [None; 4];
        let mut n = 0;
        self.each(page, size, |m| {
            if let Some(o) = out.get_mut(n) {
                *o = Some(*m);
            }
            n += 1;
        });
        assert!(
            n <= out.len(),
            "more kernel mappings of one page than the glue keeps"
        );
        (out, n)
    }

    /// Cleans the table lines a change wrote, drains the write buffer and
    /// invalidates the TLB entries it names.
    fn finish(&mut self, f: TableFlush) {
        f.flush(&mut **self.cpu.borrow_mut(), &mut *self.tables);
    }

    /// Gives the mapping at `mva` (`size` bytes) access permission `ap`.
    fn set_ap(&mut self, m: &table::Mapping, ap: AccessPermission) {
        let len = m.size.size();
        let f = self
            .table
            .protect(&mut *self.tables, m.mva, len, ap, m.cache);
        self.finish(f.expect("a kernel page changes permission"));
    }

    /// Points the page mapped at `mva` at frame `to`, every other bit kept.
    fn retarget(&mut self, mva: Mva, to: PhysAddr) {
        let tables = &*self.tables;
        let l1 = self
            .table
            .l1_entry(tables, mva.l1_index())
            .expect("kernel slot");
        let (kind, pa) = l1.table().expect("a 4 KiB or 64 KiB kernel page");
        let t = TableRef::new(kind, pa).expect("a second-level table");
        let index = match kind {
            TableKind::Fine => (mva.as_u32() >> 10) & 0x3FF,
            _ => (mva.as_u32() >> 12) & 0xFF,
        };
        let old = L2Descriptor::from_bits(t.read(tables, index as usize).expect("entry"));
        let new = match old {
            L2Descriptor::Small(d) => L2Descriptor::Small(SmallPageDesc {
                frame: Frame::containing(to),
                ..d
            }),
            L2Descriptor::Large(d) => L2Descriptor::Large(LargePageDesc {
                frame: Frame::containing(to),
                ..d
            }),
            _ => unreachable!("only 4 KiB and 64 KiB pages are reported"),
        };
        let mut f = TableFlush::new();
        // SAFETY: a second-level table the kernel's table links (built at
        // boot, never freed); one page descriptor is rewritten in place and
        // no first-level link changes.
        unsafe { write_l2_page(tables, t, mva, new, &mut f) }.expect("a kernel page descriptor");
        self.finish(f);
    }
}

/// Whether this glue moves pages of `size`: 4 KiB and 64 KiB ones
/// (sections and tiny pages never, see [`KernelMaps`]).
fn moved(size: PageSizeKind) -> bool {
    matches!(size, PageSizeKind::Small | PageSizeKind::Large)
}

/// With SCTLR.S set (step 3), AP = 00 is privileged read-only and every
/// other value lets the kernel write.
fn writable(m: &table::Mapping) -> bool {
    m.ap.0.iter().any(|&ap| ap != AccessPermission::NoneOrRom)
}

/// A table's (forward) mapping as an entry of the page's reverse map.
fn to_spm(m: &table::Mapping) -> ReverseMapping {
    ReverseMapping {
        space: AddressSpace::Kernel,
        mva: m.mva,
        writable: writable(m),
        cached: m.cache.cacheable(),
    }
}

impl<A: TableAlloc + ?Sized, H: CacheMaintenance> Mappings for KernelMaps<'_, '_, A, H> {
    fn translate(&self, space: AddressSpace, va: VirtAddr) -> Option<Translation> {
        if space != AddressSpace::Kernel || !self.kernel.contains(va.as_u32()) {
            return None;
        }
        let m = self
            .table
            .lookup(&*self.tables, Mva::new(va.as_u32()))
            .ok()??;
        // Sections and tiny pages are never moved (see the type's docs).
        if !moved(m.size) {
            return None;
        }
        Some(Translation {
            page: m.pa,
            size: m.size,
            writable: writable(&m),
        })
    }

    fn for_each_mapping(
        &self,
        page: PhysAddr,
        size: PageSizeKind,
        f: &mut dyn FnMut(&ReverseMapping),
    ) {
        self.each(page, size, |m| f(&to_spm(m)));
    }

    fn write_protect(&mut self, page: PhysAddr, size: PageSizeKind) {
        let (found, _) = self.collect(page, size);
        for m in found.iter().flatten().filter(|m| writable(m)) {
            let slot = self.taken.iter().position(Option::is_none);
            let slot = slot.expect("more write-protected mappings than the glue keeps");
            self.taken[slot] = Some((m.mva, m.ap.0[0]));
            self.set_ap(m, AccessPermission::NoneOrRom);
        }
    }

    fn restore_write(&mut self, page: PhysAddr, size: PageSizeKind) {
        let (found, _) = self.collect(page, size);
        for m in found.iter().flatten() {
            let i = self
                .taken
                .iter()
                .position(|t| t.is_some_and(|(at, _)| at == m.mva));
            if let Some((_, ap)) = i.and_then(|i| self.taken[i].take()) {
                self.set_ap(m, ap);
            }
        }
    }

    fn swap(&mut self, a: PhysAddr, b: PhysAddr, size: PageSizeKind) {
        // Both lists first: the lookups must see the descriptors unchanged.
        let (of_a, _) = self.collect(a, size);
        let (of_b, _) = self.collect(b, size);
        for (list, to) in [(of_a, b), (of_b, a)] {
            for m in list.iter().flatten() {
                self.retarget(m.mva, to);
            }
        }
    }

    fn move_second_level(&mut self, _old: PhysAddr, _new: PhysAddr) {
        unreachable!("page tables are pinned in the frame table: spm never moves them");
    }

    fn move_first_level(&mut self, _old: PhysAddr, _new: PhysAddr) {
        unreachable!("the kernel's table is pinned in the frame table: spm never moves it");
    }
}

/// The exchange's `hw`: the shared CPU (CP15, cache and TLB maintenance)
/// and physical memory.
pub struct ExchangeHw<'a, 'c, H, P: ?Sized> {
    cpu: &'a SharedCpu<'c, H>,
    mem: &'a mut P,
}

impl<'a, 'c, H, P: ?Sized> ExchangeHw<'a, 'c, H, P> {
    /// Joins the shared CPU and physical memory.
    pub fn new(cpu: &'a SharedCpu<'c, H>, mem: &'a mut P) -> Self {
        ExchangeHw { cpu, mem }
    }
}

impl<H: Cp15, P: ?Sized> Cp15 for ExchangeHw<'_, '_, H, P> {
    fn read(&self, reg: Cp15Reg) -> u32 {
        self.cpu.borrow().read(reg)
    }
    unsafe fn write(&mut self, reg: Cp15Reg, value: u32) {
        // SAFETY: the caller's contract for this CPU, which is the shared one.
        unsafe { self.cpu.borrow_mut().write(reg, value) }
    }
    unsafe fn op(&mut self, op: Cp15Op, value: u32) {
        // SAFETY: as for `write`.
        unsafe { self.cpu.borrow_mut().op(op, value) }
    }
    fn test_clean_invalidate_dcache(&mut self) -> bool {
        self.cpu.borrow_mut().test_clean_invalidate_dcache()
    }
    fn test_clean_dcache(&mut self) -> bool {
        self.cpu.borrow_mut().test_clean_dcache()
    }
}

impl<H: CacheMaintenance, P: ?Sized> CacheMaintenance for ExchangeHw<'_, '_, H, P> {
    const DCACHE_LINE: u32 = H::DCACHE_LINE;
    fn clean_invalidate_dcache(&mut self) {
        self.cpu.borrow_mut().clean_invalidate_dcache();
    }
    fn invalidate_icache(&mut self) {
        self.cpu.borrow_mut().invalidate_icache();
    }
    fn clean_dcache_line(&mut self, mva: Mva) {
        self.cpu.borrow_mut().clean_dcache_line(mva);
    }
    fn clean_invalidate_dcache_line(&mut self, mva: Mva) {
        self.cpu.borrow_mut().clean_invalidate_dcache_line(mva);
    }
    unsafe fn invalidate_dcache_line(&mut self, mva: Mva) {
        // SAFETY: the caller's promise for the same cache.
        unsafe { self.cpu.borrow_mut().invalidate_dcache_line(mva) }
    }
    fn invalidate_icache_line(&mut self, mva: Mva) {
        self.cpu.borrow_mut().invalidate_icache_line(mva);
    }
    fn drain_write_buffer(&mut self) {
        self.cpu.borrow_mut().drain_write_buffer();
    }
    fn invalidate_tlb(&mut self) {
        self.cpu.borrow_mut().invalidate_tlb();
    }
    fn invalidate_tlb_entry(&mut self, mva: Mva) {
        self.cpu.borrow_mut().invalidate_tlb_entry(mva);
    }
    fn clean_dcache_range(&mut self, mva: Mva, len: u32) {
        self.cpu.borrow_mut().clean_dcache_range(mva, len);
    }
    fn flush_all(&mut self) {
        self.cpu.borrow_mut().flush_all();
    }
}

/// Line maintenance one line at a time (`spm`'s provided methods).
impl<H: CacheMaintenance, P: ?Sized> LineMaintenance for ExchangeHw<'_, '_, H, P> {}

impl<H, P: PhysMemory + ?Sized> PhysMemory for ExchangeHw<'_, '_, H, P> {
    fn copy(&mut self, dst: PhysAddr, src: PhysAddr, len: u32) {
        self.mem.copy(dst, src, len);
    }
    fn zero(&mut self, dst: PhysAddr, len: u32) {
        self.mem.zero(dst, len);
    }
}

/// One physical range and where the kernel reaches it.
#[derive(Clone, Copy, Debug)]
struct Window {
    pa: u32,
    len: u32,
    at: *mut u8,
}

/// Physical memory reached through windows: on the hardware the board's
/// uncached physical window (`board.phys_window_va + pa`), on the host
/// plain buffers standing in for RAM and TCM. Accesses outside every
/// window panic: `spm` copies only frames the frame table describes, and
/// the windows cover the frames and the TCM banks.
#[derive(Debug, Default)]
pub struct PhysWindows {
    windows: [Option<Window>; 3],
}

impl PhysWindows {
    /// No windows yet.
    #[must_use]
    pub const fn new() -> PhysWindows {
        PhysWindows { windows: [None; 3] }
    }

    /// Adds a window: physical `[pa, pa + len)` is reached at `at`.
    /// Returns `false` (nothing added) when all three are in use.
    ///
    /// # Safety
    /// `[at, at + len)` is valid for reads and writes while this value
    /// lives; writes through it reach memory without a cache in between
    /// (uncached, or the caller's host buffer); and no Rust reference
    /// covers that memory (only MMU mappings of its pages and this window
    /// reach it), so a copy never changes memory the program holds a
    /// reference to.
    pub unsafe fn add(&mut self, pa: PhysAddr, len: u32, at: *mut u8) -> bool {
        match self.windows.iter_mut().find(|w| w.is_none()) {
            Some(w) => {
                *w = Some(Window {
                    pa: pa.as_u32(),
                    len,
                    at,
                });
                true
            }
            None => false,
        }
    }

    /// Where `[pa, pa + len)` is reached, if one window holds all of it.
    fn at(&self, pa: PhysAddr, len: u32) -> Option<*mut u8> {
        let pa = pa.as_u32();
        self.windows.iter().flatten().find_map(|w| {
            let off = pa.checked_sub(w.pa)?;
            // `off + len <= w.len`, without overflow.
            (len <= w.len && off <= w.len - len).then(|| w.at.wrapping_add(off as usize))
        })
    }

    fn expect(&self, pa: PhysAddr, len: u32) -> *mut u8 {
        match self.at(pa, len) {
            Some(p) => p,
            None => panic!("physical {pa} (+{len:#x}) is outside the physical windows"),
        }
    }

    /// Reads physical memory at `pa` into `out` (for a kernel's own use,
    /// and for tests).
    pub fn read(&self, pa: PhysAddr, out: &mut [u8]) {
        let p = self.expect(pa, out.len() as u32);
        // SAFETY: inside one window (`add`'s contract: valid, no reference
        // covers it); `out` is the caller's own buffer, not window memory.
        unsafe { core::ptr::copy_nonoverlapping(p, out.as_mut_ptr(), out.len()) };
    }

    /// Writes `data` to physical memory at `pa`.
    pub fn write(&mut self, pa: PhysAddr, data: &[u8]) {
        let p = self.expect(pa, data.len() as u32);
        // SAFETY: as in `read`.
        unsafe { core::ptr::copy_nonoverlapping(data.as_ptr(), p, data.len()) };
        compiler_fence(Ordering::SeqCst);
    }
}

impl PhysMemory for PhysWindows {
    fn copy(&mut self, dst: PhysAddr, src: PhysAddr, len: u32) {
        let (d, s) = (self.expect(dst, len), self.expect(src, len));
        // SAFETY: both ranges inside windows (`add`'s contract); `spm` never
        // copies a frame onto itself, and ranges never cross a frame.
        unsafe { core::ptr::copy_nonoverlapping(s, d, len as usize) };
        // The copy is done before anything that follows (the mapping
        // switch writes descriptors with volatile stores).
        compiler_fence(Ordering::SeqCst);
    }

    fn zero(&mut self, dst: PhysAddr, len: u32) {
        let d = self.expect(dst, len);
        // SAFETY: inside a window (`add`'s contract).
        unsafe { core::ptr::write_bytes(d, 0, len as usize) };
        compiler_fence(Ordering::SeqCst);
    }
}

/// `spm::InterruptControl` over the CPSR's I and F bits
/// (`mmu_armv5::irq`; on the host, its simulated bits).
///
/// `restore` puts back exactly the I and F bits the matching `disable`
/// found, so an FIQ left masked stays masked.
#[derive(Debug)]
pub struct CpuIrq {
    saved: [IrqState; 4],
    depth: usize,
}

impl CpuIrq {
    /// Interrupt masking for this CPU.
    ///
    /// # Safety
    /// Runs in a privileged mode, and every `disable` is followed by its
    /// `restore` with no other masked section of the kernel begun between
    /// them and still open (as the exchange does: each masked window opens
    /// and closes within one step).
    #[must_use]
    pub const unsafe fn new() -> CpuIrq {
        CpuIrq {
            saved: [IrqState::ENABLED; 4],
            depth: 0,
        }
    }
}

impl InterruptControl for CpuIrq {
    fn disable(&mut self) -> bool {
        let prev = irq::mask();
        let slot = self.saved.get_mut(self.depth);
        *slot.expect("interrupt-masked windows nest at most four deep") = prev;
        self.depth += 1;
        !prev.irq_masked()
    }

    fn restore(&mut self, _was_enabled: bool) {
        let Some(depth) = self.depth.checked_sub(1) else {
            return;
        };
        self.depth = depth;
        // SAFETY: the state the matching `disable` found, restored in
        // nesting order (`new`'s contract).
        unsafe { irq::restore(self.saved[depth]) };
    }
}
