//! `spm::TableMappings` and `spm::Hw` on the `armv5-sim` model: the
//! model's walker reads the tables `TableMappings` changes, its VIVT
//! D-cache holds the task's dirty lines, and its permission checks see
//! the write protection.

mod common;

use armv5_sim::{sctlr, Privilege, Width};
use common::{machine, Shared, Storage, DTCM, WINDOW};
use mmu_armv5::descriptor::{AccessPermission, CachePolicy};
use mmu_armv5::regs::Dacr;
use mmu_armv5::regs::{Sctlr, Ttbr};
use mmu_armv5::size::Frame;
use mmu_armv5::size::PageSizeKind;
use mmu_armv5::table::{AllocError, MapAttrs, PageTable, SizePolicy, TableAlloc, TableKind};
use mmu_armv5::{Domain, FaultKind, FaultLevel, FcsePid, ModifiedVirtAddr, PhysAddr, VirtAddr};
use spm::exchange::DEFAULT_CHUNK;
use spm::{
    AddressSpace, Exchange, ExchangeRequest, FrameState, Hw, Mappings, Progress, RecordingIrq,
    Rights, SpaceId, TableMappings,
};
use std::ptr::NonNull;

/// The test kernel's machine handle (maintenance, CP15, physical copies
/// through its uncached window) as table memory too: a kernel has one
/// CPU and one memory and no `RefCell`; the model is one value, so the
/// roles share it here.
struct Sim(common::Hw);

// SAFETY: every method forwards to the model's own `TableAlloc`, which
// upholds the contract; its pointers stay valid while the machine lives,
// which the `Rc` keeps alive at least as long as this handle.
unsafe impl TableAlloc for Sim {
    fn allocate(&mut self, kind: TableKind) -> Result<PhysAddr, AllocError> {
        TableAlloc::allocate(&mut *self.0.m.borrow_mut(), kind)
    }
    unsafe fn deallocate(&mut self, kind: TableKind, pa: PhysAddr) {
        // SAFETY: the caller's promise, for the same machine.
        unsafe { TableAlloc::deallocate(&mut *self.0.m.borrow_mut(), kind, pa) }
    }
    fn table_ptr(&self, kind: TableKind, pa: PhysAddr) -> Option<NonNull<u32>> {
        TableAlloc::table_ptr(&*self.0.m.borrow(), kind, pa)
    }
    fn table_mva(&self, pa: PhysAddr) -> ModifiedVirtAddr {
        TableAlloc::table_mva(&*self.0.m.borrow(), pa)
    }
}

const TASK_VA: u32 = 0x8000;
const TASK_FRAME: u32 = 0x0010_0000;
const KERNEL_DTCM: u32 = 0xC300_0000;

fn byte(i: u32) -> u8 {
    (i.wrapping_mul(13) ^ (i >> 5)) as u8
}

#[test]
fn a_dirty_task_page_moves_into_dtcm_through_page_tables() {
    let m = machine();
    let hw = || common::Hw { m: m.clone() };
    let mut storage = Storage::new();
    let mut table = storage.table();
    let task = SpaceId(1);
    let me = AddressSpace::User(task);
    table
        .init_range(
            Frame::from_start(PhysAddr::new(TASK_FRAME)).unwrap(),
            FrameState::User(task),
            true,
        )
        .unwrap();

    let mut alloc = Sim(hw());
    let mut pt = PageTable::new(&mut alloc).unwrap();
    let mut maps = TableMappings::<_, _, 2>::new(&mut alloc, hw());
    maps.add(AddressSpace::Kernel, FcsePid::ZERO, &mut pt)
        .unwrap();
    maps.add_sharing(me, FcsePid::new(1).unwrap(), AddressSpace::Kernel)
        .unwrap();
    // The task's page, the kernel's DTCM alias, and the kernel's
    // uncached window on physical memory through which `common::Hw`
    // copies (sections: not mappings of a small page, and never cached).
    let (rw, kernel_rw) = (AccessPermission::ReadWrite, AccessPermission::PrivRw);
    let cached = CachePolicy::WriteBack;
    for (space, va, pa, len, ap, cache) in [
        (me, TASK_VA, TASK_FRAME, 0x1000, rw, cached),
        (
            AddressSpace::Kernel,
            KERNEL_DTCM,
            DTCM,
            0x1000,
            kernel_rw,
            cached,
        ),
        (
            AddressSpace::Kernel,
            WINDOW,
            0,
            16 << 20,
            kernel_rw,
            CachePolicy::Buffered,
        ),
    ] {
        let attrs = MapAttrs::new(Domain::from_low_bits(0), ap, cache);
        let e = maps.edit(space).unwrap();
        let at = VirtAddr::new(va).to_mva(e.pid);
        e.table
            .map(
                e.alloc,
                at,
                PhysAddr::new(pa),
                len,
                attrs,
                SizePolicy::Largest,
            )
            .unwrap()
            .flush(e.maint, e.alloc);
    }
    {
        let mut mm = m.borrow_mut();
        mm.set_ttbr(Ttbr::new(maps.table(me).unwrap().root()).unwrap());
        mm.set_dacr(Dacr::ALL_CLIENT);
        // S: `NoneOrRom` (write protection) is privileged read-only.
        mm.set_sctlr(Sctlr::from_bits(sctlr::M | sctlr::C | sctlr::I | sctlr::S));
    }
    let user = |m: &Shared| {
        m.borrow_mut().set_fcse_pid(FcsePid::new(1).unwrap());
    };
    // The task fills its page: every line ends up dirty in the D-cache,
    // memory stale.
    user(&m);
    for i in (0..0x1000).step_by(32) {
        m.borrow_mut()
            .load(VirtAddr::new(TASK_VA + i), Width::Byte, Privilege::User)
            .unwrap();
    }
    for i in 0..0x1000 {
        m.borrow_mut()
            .store(
                VirtAddr::new(TASK_VA + i),
                Width::Byte,
                u32::from(byte(i)),
                Privilege::User,
            )
            .unwrap();
    }
    assert!(m.borrow().dcache_dirty_lines() > 0);

    let mut hw = Hw::new(hw(), hw());
    let mut irq = RecordingIrq::new();
    let req = ExchangeRequest {
        caller: AddressSpace::Kernel,
        target_space: me,
        target: VirtAddr::new(TASK_VA),
        resource_space: AddressSpace::Kernel,
        resource: VirtAddr::new(KERNEL_DTCM),
        size: PageSizeKind::Small,
        count: 1,
        rights: Rights::RW,
    };
    let mut ex = Exchange::begin(&mut table, &maps, req, DEFAULT_CHUNK).unwrap();
    // SAFETY: the model's frame table, tables and machine are one
    // consistent (simulated) system; nothing of this program is moved.
    let first = unsafe { ex.step(&mut table, &mut maps, &mut hw, &mut irq) }.unwrap();
    assert_eq!(first, Progress::Pending);
    // Mid-exchange the task's writes fault (the model's walker reads the
    // protected descriptor); its reads fault too (S: AP=00 is privileged
    // only), and the kernel can still read through its DTCM alias.
    user(&m);
    let w = m
        .borrow_mut()
        .store(VirtAddr::new(TASK_VA), Width::Byte, 0, Privilege::User)
        .unwrap_err();
    assert_eq!(w.kind, FaultKind::Permission(FaultLevel::Page));
    assert!(ex.protects(PhysAddr::new(TASK_FRAME)));
    m.borrow_mut().set_fcse_pid(FcsePid::ZERO);
    m.borrow_mut()
        .load(
            VirtAddr::new(KERNEL_DTCM),
            Width::Word,
            Privilege::Privileged,
        )
        .unwrap();
    // SAFETY: as above.
    unsafe { ex.run(&mut table, &mut maps, &mut hw, &mut irq) }.unwrap();
    assert!(ex.is_done() && !irq.is_masked());
    assert_eq!(maps.take_error(), None);
    assert_eq!(maps.protected(), 0);

    // The task reads its content back through the caches, now from DTCM,
    // and can write again.
    user(&m);
    for i in 0..0x1000 {
        let v = m
            .borrow_mut()
            .load(VirtAddr::new(TASK_VA + i), Width::Byte, Privilege::User)
            .unwrap();
        assert_eq!(v as u8, byte(i), "{i:#x}");
    }
    m.borrow_mut()
        .store(VirtAddr::new(TASK_VA), Width::Byte, 7, Privilege::User)
        .unwrap();
    for i in [0, 0x123, 0xFFF] {
        let v = m
            .borrow()
            .phys_read(PhysAddr::new(DTCM + i), Width::Byte)
            .unwrap();
        if i != 0 {
            assert_eq!(v as u8, byte(i), "DTCM {i:#x}");
        }
    }
    let t = maps.translate(me, VirtAddr::new(TASK_VA)).unwrap();
    assert_eq!((t.page, t.writable), (PhysAddr::new(DTCM), true));
    let k = maps
        .translate(AddressSpace::Kernel, VirtAddr::new(KERNEL_DTCM))
        .unwrap();
    assert_eq!((k.page, k.writable), (PhysAddr::new(TASK_FRAME), true));
    assert_eq!(
        table.desc(PhysAddr::new(DTCM)).unwrap().state(),
        FrameState::User(task)
    );
    assert_eq!(table.busy_frames(), 0);
}
