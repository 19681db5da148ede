//! The steps on the `armv5-sim` model of an ARM926EJ-S, whose write-back
//! VIVT caches and TLBs the recording mock does not have: two processes
//! store different values at the same virtual address, run in turn through
//! the scheduler's switch (the lean one once warm), and each reads back its
//! own value, through the caches, never the other's. The model is a
//! `fass::Platform` itself (its frame pool is the table allocator), and a
//! process's abort hands the model's typed `dfsr()`/`far()` to the handler.

use armv5_sim::{presets, Machine, MemoryKind, MemoryRegion, Privilege, Width};
use embed_example::{boot, data_abort, layout, plan_tcm, switch, AbortAction, Vm, EXAMPLE};
use fass::SpaceId;
use mmu_armv5::descriptor::{AccessPermission, CachePolicy};
use mmu_armv5::regs::Sctlr;
use mmu_armv5::size::{Frame, PageRange};
use mmu_armv5::{PhysAddr, VirtAddr};

const VA: u32 = 0x8000;

/// The board's 2 MiB of RAM at 0 on the model, its table pool as the
/// model's frame pool, the MMU and caches on (the boot table's job on
/// hardware; nothing is accessed before `boot` loads the kernel's table).
fn machine() -> Machine {
    let mut cfg = presets::arm926ejs().config;
    cfg.regions.push(MemoryRegion {
        base: PhysAddr::new(0),
        size: 2 << 20,
        kind: MemoryKind::Ram,
        latency: 0,
    });
    let mut m = Machine::new(cfg).unwrap();
    m.set_frame_pool(EXAMPLE.table_pool, EXAMPLE.table_pool_size)
        .unwrap();
    m.set_sctlr(
        Sctlr::from_bits(0)
            .with_mmu(true)
            .with_dcache(true)
            .with_icache(true),
    );
    m
}

/// A user access by the running process; an abort goes to the handler
/// with the model's DFSR and FAR, and a resolved one is retried.
fn user(m: &mut Machine, vm: &mut Vm, va: u32, store: Option<u32>) -> u32 {
    for _ in 0..2 {
        let v = VirtAddr::new(va);
        let r = match store {
            Some(x) => m.store(v, Width::Word, x, Privilege::User).map(|()| x),
            None => m.load(v, Width::Word, Privilege::User),
        };
        if let Ok(x) = r {
            return x;
        }
        // The model sets DFSR and FAR as the CPU does; the handler reads
        // them through `Cp15Ext` (the same typed values as `m.dfsr()`).
        let fsr = m.dfsr();
        assert!(fsr.is_lazy_fill_candidate(), "{fsr:?}");
        match data_abort(vm, m).unwrap() {
            AbortAction::Retry => {}
            AbortAction::Fault(f) => panic!("unexpected fault {f:?}"),
        }
    }
    panic!("a fault resolved by fass faulted again");
}

#[test]
fn two_processes_at_one_address_keep_their_own_values_through_the_caches() {
    let mut m = machine();
    let layout = layout().unwrap();
    // SAFETY: the model: register writes reach no host memory.
    let banks = unsafe { plan_tcm(&mut m, &EXAMPLE) }.unwrap();
    // SAFETY: as above; the model's frame pool stays for its life.
    let mut vm = unsafe { boot(&mut m, &EXAMPLE, &layout, &banks, &[]) }.unwrap();
    let (ap, wb) = (AccessPermission::ReadWrite, CachePolicy::WriteBack);
    let page = PageRange::from_bytes(VirtAddr::new(VA), 0x1000).unwrap();
    let spaces = [(SpaceId(1), 0x0010_1000), (SpaceId(2), 0x0010_2000)];
    for (id, pa) in spaces {
        vm.add_space(id).unwrap();
        let frame = Frame::from_start(PhysAddr::new(pa)).unwrap();
        vm.map_pages(&mut m, id, page, frame, ap, wb).unwrap();
    }
    for (id, pa) in spaces {
        switch(&mut vm, &mut m, id).unwrap();
        // A read fills the line (the model, like the ARM926EJ-S, does not
        // allocate on a write miss), the store dirties it.
        assert_eq!(user(&mut m, &mut vm, VA, None), 0);
        user(&mut m, &mut vm, VA, Some(pa));
    }
    // Write-back: the values sit in the D-cache, not yet in memory.
    assert!(m.dcache_dirty_lines() >= 2);
    let flushes = m.counters().tlb_invalidate_all;
    for _ in 0..3 {
        for (id, pa) in spaces {
            switch(&mut vm, &mut m, id).unwrap();
            assert_eq!(user(&mut m, &mut vm, VA, None), pa, "{id:?}");
        }
    }
    // Warm switches are the lean ones: no cache clean or TLB flush.
    assert_eq!(m.counters().tlb_invalidate_all, flushes);
    // Each value reaches its own frame when the cache is cleaned.
    m.clean_dcache_all();
    for (_, pa) in spaces {
        assert_eq!(m.phys_read(PhysAddr::new(pa), Width::Word), Ok(pa));
    }
}
