//! The steps end to end on the board [`EXAMPLE`] with a recording
//! ARM926EJ-S (`MockCp15`): the kernel boots, two processes run at the same
//! virtual address, their faults fill the CPD, the scheduler switches
//! between them, and a process's page moves into DTCM and back. Every access is walked
//! through the tables with `mmu_armv5::translate` as the CPU's registers
//! stand (TTBR, DACR, FCSEIDR, SCTLR), so the checks are what the MMU would
//! do, not what the code under test says about itself.

use embed_example::{
    boot, data_abort, dtcm_slot, exchange_page, frame_table, hand_over, layout, plan_tcm, spawn,
    switch, AbortAction, Board, Vm, CLASSIC_USER_DOMAIN, EXAMPLE, KERNEL_DOMAIN, PHYS_WINDOWS,
    POOL_BLOCKS, VECTORS_VA,
};
use fass::{ClassicKind, PidMode, SwitchStrategy};
use fass::{SpaceId, Split};
use mmu_armv5::descriptor::{AccessPermission, CachePolicy};
use mmu_armv5::descriptor::{L1Descriptor, L1Encoding};
use mmu_armv5::maint::Arm926;
use mmu_armv5::regs::{Cp15Event, Cp15Ext, Cp15Reg, Dacr, DomainAccess, Far, Fsr, MockCp15};
use mmu_armv5::size::{Frame, PageRange};
use mmu_armv5::table::{PoolBlock, TablePool, TableRef};
use mmu_armv5::translate::{translate, Access, AccessType, MmuState, Translated};
use mmu_armv5::{Fault, FaultKind, PhysAddr, VirtAddr};
use spm::tcm::{TcmKind, TcmLayout};
use spm::{FrameDesc, FrameState, PhysWindows, SectionSummary};

type Sys<'m> = Split<Arm926<MockCp15>, TablePool<'m, POOL_BLOCKS>>;

/// The kernel's movable page (its scheduler's hot data, say): the first frame.
const HOT: PhysAddr = PhysAddr::new(0x0010_0000);
/// Two pages for process A, two for process B, handed out by the kernel.
const A_PAGES: PhysAddr = PhysAddr::new(0x0010_1000);
const B_PAGES: PhysAddr = PhysAddr::new(0x0010_3000);
/// Both processes use the same virtual address.
const VA: u32 = 0x8000;
const A: SpaceId = SpaceId(1);
/// A's resource slot, where the kernel maps a DTCM frame for an exchange.
const SLOT: u32 = 0x0010_0000;
const B: SpaceId = SpaceId(2);

/// The host's stand-ins for the board's memory: table memory, and the
/// frames plus the emulated TCM banks (physical 1 MiB to 2 MiB).
fn memory() -> (Box<[PoolBlock; POOL_BLOCKS]>, Vec<u8>) {
    (Box::new([PoolBlock::ZERO; POOL_BLOCKS]), vec![0; 1 << 20])
}

/// The physical windows over `ram`, as `hw::phys_windows` sets them up on
/// the board (the frames, then each bank).
fn windows(ram: &mut [u8], board: &Board, banks: &TcmLayout) -> PhysWindows<PHYS_WINDOWS> {
    let base = ram.as_mut_ptr();
    let mut w = PhysWindows::new();
    let ranges = banks.banks().map(|b| (b.base(), b.size()));
    for (pa, len) in [(board.frames.base(), board.frames.size())]
        .into_iter()
        .chain(ranges)
    {
        let offset = (pa.as_u32() - 0x0010_0000) as usize;
        assert!(offset + len as usize <= ram.len());
        // SAFETY: inside `ram`, which outlives the windows and is not
        // otherwise used while they are.
        unsafe { w.add(pa, len, base.wrapping_add(offset)) }.unwrap();
    }
    w
}

/// Steps 1 to 3 on a mock CPU (`cpu`), with `pool` as the board's table pool.
fn bring_up(pool: &mut [PoolBlock; POOL_BLOCKS], cpu: MockCp15) -> (Sys<'_>, Vm, TcmLayout) {
    let layout = layout().unwrap();
    let tables = TablePool::new(pool, EXAMPLE.table_pool, EXAMPLE.table_pool_va).unwrap();
    let mut sys = Split::new(Arm926::new(cpu), tables);
    // SAFETY: a mock CPU: register writes are recorded, nothing else.
    let banks = unsafe { plan_tcm(&mut sys, &EXAMPLE) }.unwrap();
    // SAFETY: as above; the pool outlives the manager.
    let vm = unsafe { boot(&mut sys, &EXAMPLE, &layout, &banks, &[HOT]) }.unwrap();
    (sys, vm, banks)
}

/// What the MMU does for an access, with the registers as they are now.
fn walk(sys: &Sys<'_>, va: u32, kind: AccessType, privileged: bool) -> Result<Translated, Fault> {
    let sctlr = sys.sctlr();
    let state = MmuState {
        ttb: sys.ttbr().base(),
        dacr: sys.dacr(),
        pid: sys.fcse_pid(),
        system_protect: sctlr.system_protection(),
        rom_protect: sctlr.rom_protection(),
        alignment_check: false,
    };
    let access = Access {
        va: VirtAddr::new(va),
        kind,
        privileged,
        size: 4,
    };
    translate(sys, &state, &access)
}

/// A user access by the running process: on a fault the CPU sets DFSR and
/// FAR (the VA, as QEMU does) and enters the abort handler, which either
/// resolves it (the access is retried) or hands it back.
fn user_access(sys: &mut Sys<'_>, vm: &mut Vm, va: u32) -> Result<Translated, Fault> {
    access(sys, vm, va, AccessType::Write, false)
}

/// An access by the running process (`privileged`: by the kernel on its
/// behalf), faults resolved as in [`user_access`].
fn access(
    sys: &mut Sys<'_>,
    vm: &mut Vm,
    va: u32,
    kind: AccessType,
    privileged: bool,
) -> Result<Translated, Fault> {
    for _ in 0..2 {
        let fault = match walk(sys, va, kind, privileged) {
            Ok(t) => return Ok(t),
            Err(f) => f,
        };
        sys.set_dfsr(Fsr::from_fault(fault));
        sys.set_far(Far::from_bits(va));
        match data_abort(vm, sys).unwrap() {
            AbortAction::Retry => {}
            AbortAction::Fault(f) => return Err(f),
        }
    }
    panic!("a fault resolved by fass faulted again");
}

/// The CPD's first-level entry for `va` of the running process.
fn cpd_entry(sys: &Sys<'_>, vm: &Vm, va: u32) -> L1Descriptor {
    let slot = VirtAddr::new(va).to_mva(sys.fcse_pid()).l1_index();
    let root = TableRef::new(mmu_armv5::table::TableKind::L1, vm.cpd().root()).unwrap();
    L1Descriptor::from_bits(root.read(sys, slot).unwrap())
}

#[test]
fn boot_loads_the_cpd_with_only_the_kernels_domain_open() {
    let (mut pool, _) = memory();
    let (sys, vm, banks) = bring_up(&mut pool, MockCp15::arm926());
    assert_eq!(sys.ttbr().base(), vm.cpd().root());
    assert_eq!(sys.dacr(), Dacr::only(KERNEL_DOMAIN, DomainAccess::Client));
    assert!(sys.sctlr().system_protection() && !sys.sctlr().rom_protection());
    // QEMU's ARM926 (and this mock) reports no TCM: the board's banks.
    assert_eq!(banks, EXAMPLE.tcm.emulated);
    assert_eq!(
        sys.hw.cp15().register(Cp15Reg::DtcmRegion),
        0,
        "no TCM register written"
    );

    let read = |va| walk(&sys, va, AccessType::Read, true).map(|t| (t.pa, t.domain));
    assert_eq!(
        read(EXAMPLE.kernel_va + 0x1234),
        Ok((PhysAddr::new(0x1234), KERNEL_DOMAIN))
    );
    assert_eq!(read(VECTORS_VA).map(|t| t.0), Ok(EXAMPLE.vectors));
    assert_eq!(read(EXAMPLE.kernel_pages_va).map(|t| t.0), Ok(HOT));
    let dtcm = EXAMPLE.tcm.emulated.dtcm.unwrap().base();
    assert_eq!(
        read(EXAMPLE.tcm_page_va(TcmKind::Data, 0)).map(|t| t.0),
        Ok(dtcm)
    );
    assert_eq!(
        read(EXAMPLE.phys_window_va + dtcm.as_u32()).map(|t| t.0),
        Ok(dtcm)
    );
    // User mode reaches none of it.
    let user = walk(&sys, EXAMPLE.kernel_pages_va, AccessType::Read, false);
    assert!(matches!(user.unwrap_err().kind, FaultKind::Permission(_)));
}

#[test]
fn faults_fill_the_cpd_with_the_spaces_domain_and_switches_open_only_it() {
    let (mut pool, _) = memory();
    let (mut sys, mut vm, banks) = bring_up(&mut pool, MockCp15::arm926());
    let (mut descs, mut sections) = (
        vec![FrameDesc::default(); 1024],
        vec![SectionSummary::default(); 8],
    );
    let mut frames = frame_table(&EXAMPLE, &banks, &[HOT], &mut descs, &mut sections).unwrap();
    let va = VirtAddr::new(VA);
    spawn(&mut vm, &mut sys, &mut frames, A, va, A_PAGES, 0x2000).unwrap();
    spawn(&mut vm, &mut sys, &mut frames, B, va, B_PAGES, 0x2000).unwrap();
    let owner = frames.desc(A_PAGES).unwrap().state();
    assert_eq!(owner, FrameState::User(A));

    // A runs: its domain and the kernel's are open, nothing else.
    switch(&mut vm, &mut sys, A).unwrap();
    let da = vm.domain_of(A).unwrap().unwrap();
    let open = Dacr::only(KERNEL_DOMAIN, DomainAccess::Client).with(da, DomainAccess::Client);
    assert_eq!(sys.dacr(), open);
    assert_eq!(sys.fcse_pid(), vm.pid_of(A).unwrap());
    // Its first touch faults (empty CPD slot); the abort handler fills the
    // slot with A's entry, tagged with A's domain; the retry lands in A's page.
    assert!(!cpd_entry(&sys, &vm, VA).is_valid());
    let t = user_access(&mut sys, &mut vm, VA + 0x10).unwrap();
    assert_eq!(
        (t.pa, t.domain),
        (PhysAddr::new(A_PAGES.as_u32() + 0x10), da)
    );
    assert_eq!(cpd_entry(&sys, &vm, VA).domain(), Some(da));

    // B runs: A's domain is closed, B gets its own domain, and the same VA
    // leads to B's page through B's own CPD slot (another FCSE window).
    switch(&mut vm, &mut sys, B).unwrap();
    let db = vm.domain_of(B).unwrap().unwrap();
    assert_ne!(db, da);
    assert_eq!(sys.dacr().get(da), DomainAccess::NoAccess);
    assert_eq!(sys.dacr().get(db), DomainAccess::Client);
    let t = user_access(&mut sys, &mut vm, VA).unwrap();
    assert_eq!((t.pa, t.domain), (B_PAGES, db));
    assert_eq!(cpd_entry(&sys, &vm, VA).domain(), Some(db));
    // A's entry is still in the CPD, and B cannot reach it: walking A's
    // modified virtual address from B is a domain fault.
    let a_mva = va.to_mva(vm.pid_of(A).unwrap()).as_u32();
    let from_b = walk(&sys, a_mva, AccessType::Read, false).unwrap_err();
    assert_eq!(
        (from_b.kind, from_b.domain),
        (FaultKind::Domain(mmu_armv5::FaultLevel::Page), Some(da))
    );
    // A page nobody mapped is B's own fault, handed back, not resolved.
    let wild = user_access(&mut sys, &mut vm, 0x0010_0000).unwrap_err();
    assert!(matches!(wild.kind, FaultKind::Translation(_)));

    // Back to A: the precomputed switch, two register writes, no flush.
    sys.hw.cp15_mut().clear();
    switch(&mut vm, &mut sys, A).unwrap();
    let pid = vm.pid_of(A).unwrap();
    assert_eq!(
        sys.hw.cp15().events(),
        [
            Cp15Event::Write(Cp15Reg::Dacr, open.bits()),
            Cp15Event::Write(Cp15Reg::Fcseidr, pid.fcseidr_value()),
        ]
    );
    // And A still finds its page without a fault.
    assert_eq!(walk(&sys, VA, AccessType::Read, false).unwrap().pa, A_PAGES);
}

#[test]
fn a_task_page_moves_into_dtcm_and_back_with_its_content() {
    let (mut pool, mut ram) = memory();
    let (mut sys, mut vm, banks) = bring_up(&mut pool, MockCp15::arm926());
    // From here on only the windows reach `ram`.
    let mut phys = windows(&mut ram, &EXAMPLE, &banks);
    let (mut descs, mut sections) = (
        vec![FrameDesc::default(); 1024],
        vec![SectionSummary::default(); 8],
    );
    let mut frames = frame_table(&EXAMPLE, &banks, &[HOT], &mut descs, &mut sections).unwrap();
    spawn(
        &mut vm,
        &mut sys,
        &mut frames,
        A,
        VirtAddr::new(VA),
        A_PAGES,
        0x2000,
    )
    .unwrap();
    let data: Vec<u8> = (0..4096u32).map(|i| (i * 7 + 3) as u8).collect();
    phys.write(A_PAGES, &data).unwrap();
    let dtcm = banks.dtcm.unwrap().base();
    assert_eq!(frames.desc(dtcm).unwrap().state(), FrameState::Resource);
    let at = dtcm_slot(&mut vm, &mut sys, A, VirtAddr::new(SLOT), dtcm).unwrap();
    // A runs and has touched its page: the CPD links its table.
    switch(&mut vm, &mut sys, A).unwrap();
    assert_eq!(user_access(&mut sys, &mut vm, VA).unwrap().pa, A_PAGES);

    // Into DTCM: A's page is the DTCM frame, writable, with its content.
    let Split { hw, tables } = &mut sys;
    // SAFETY: a mock CPU; the frame table describes the host's stand-ins,
    // which only the windows reach; only A maps either frame.
    let stats = unsafe {
        exchange_page(
            &mut vm,
            tables,
            hw,
            &mut phys,
            &mut frames,
            at,
            VirtAddr::new(VA),
        )
    }
    .unwrap();
    assert_eq!(stats.bytes_copied, 4096);
    assert_eq!(
        user_access(&mut sys, &mut vm, VA + 4).unwrap().pa,
        PhysAddr::new(dtcm.as_u32() + 4)
    );
    let mut seen = vec![0; 4096];
    phys.read(dtcm, &mut seen).unwrap();
    assert_eq!(seen, data);
    // The old RAM frame is at the slot (privileged only), a resource again.
    let slot = access(&mut sys, &mut vm, SLOT, AccessType::Read, true);
    assert_eq!(slot.unwrap().pa, A_PAGES);
    let user = access(&mut sys, &mut vm, SLOT, AccessType::Read, false);
    assert!(matches!(user.unwrap_err().kind, FaultKind::Permission(_)));
    assert_eq!(frames.desc(dtcm).unwrap().state(), FrameState::User(A));
    assert_eq!(frames.desc(A_PAGES).unwrap().state(), FrameState::Resource);

    // The task writes while it runs from DTCM (here: straight into the bank).
    phys.write(PhysAddr::new(dtcm.as_u32() + 8), &[0xEE])
        .unwrap();
    // And back: the same call, the page is in its RAM frame again.
    let Split { hw, tables } = &mut sys;
    // SAFETY: as above.
    unsafe {
        exchange_page(
            &mut vm,
            tables,
            hw,
            &mut phys,
            &mut frames,
            at,
            VirtAddr::new(VA),
        )
    }
    .unwrap();
    assert_eq!(user_access(&mut sys, &mut vm, VA).unwrap().pa, A_PAGES);
    phys.read(A_PAGES, &mut seen).unwrap();
    assert_eq!((seen[8], &seen[..8]), (0xEE, &data[..8]));
    let slot = access(&mut sys, &mut vm, SLOT, AccessType::Read, true);
    assert_eq!(slot.unwrap().pa, dtcm);
    assert_eq!(frames.desc(A_PAGES).unwrap().state(), FrameState::User(A));
    assert_eq!(frames.desc(dtcm).unwrap().state(), FrameState::Resource);
    assert_eq!(frames.busy_frames(), 0);
    // Every copy the exchanges made landed inside a window.
    assert_eq!(phys.misses(), 0);
}

#[test]
fn the_same_vouch_serves_a_classic_strategy_after_fass() {
    for kind in [ClassicKind::Naive, ClassicKind::Fcse(PidMode::Guaranteed)] {
        let (mut pool, _) = memory();
        let (mut sys, mut vm, banks) = bring_up(&mut pool, MockCp15::arm926());
        let (mut descs, mut sections) = (
            vec![FrameDesc::default(); 1024],
            vec![SectionSummary::default(); 8],
        );
        let mut frames = frame_table(&EXAMPLE, &banks, &[HOT], &mut descs, &mut sections).unwrap();
        spawn(
            &mut vm,
            &mut sys,
            &mut frames,
            A,
            VirtAddr::new(VA),
            A_PAGES,
            0x2000,
        )
        .unwrap();
        switch(&mut vm, &mut sys, A).unwrap();
        assert_eq!(user_access(&mut sys, &mut vm, VA).unwrap().pa, A_PAGES);
        let kernel = *vm.cpd().kernel();
        assert!(kernel.check(&sys).is_err(), "the CPD holds A's entry");

        let mut classic = hand_over(vm, &mut sys, kind).unwrap();
        assert_eq!(kernel.check(&sys), Ok(()));
        assert_eq!(sys.ttbr().base(), kernel.root());
        assert_eq!(sys.fcse_pid(), mmu_armv5::FcsePid::ZERO);
        let open = Dacr::only(KERNEL_DOMAIN, DomainAccess::Client);
        assert_eq!(
            sys.dacr(),
            open.with(CLASSIC_USER_DOMAIN, DomainAccess::Client)
        );
        classic.create_space(&mut sys, B).unwrap();
        let pages = PageRange::from_bytes(VirtAddr::new(VA), 0x2000).unwrap();
        let first = Frame::from_start(B_PAGES).unwrap();
        let (ap, wb) = (AccessPermission::ReadWrite, CachePolicy::WriteBack);
        classic
            .map_pages(&mut sys, B, pages, first, ap, wb)
            .unwrap();
        classic.switch_to(&mut sys, B).unwrap();
        // B's own table is loaded: the kernel's entries, B's pages, no fault.
        assert_ne!(sys.ttbr().base(), kernel.root());
        let t = walk(&sys, VA + 0x1004, AccessType::Write, false).unwrap();
        assert_eq!(
            (t.pa, t.domain),
            (
                PhysAddr::new(B_PAGES.as_u32() + 0x1004),
                CLASSIC_USER_DOMAIN
            )
        );
        let k = walk(&sys, EXAMPLE.kernel_va, AccessType::Read, true).unwrap();
        assert_eq!(k.domain, KERNEL_DOMAIN);
    }
}

#[test]
fn a_cpu_reported_tcm_is_placed_where_the_board_says_and_mapped() {
    // An ARM926EJ-S with 16 KiB of ITCM and DTCM, both off at 0 after reset.
    let cpu = MockCp15::arm926()
        .with_register(Cp15Reg::TcmStatus, (1 << 16) | 1)
        .with_register(Cp15Reg::ItcmRegion, 0b0101 << 2)
        .with_register(Cp15Reg::DtcmRegion, 0b0101 << 2);
    let (mut pool, _) = memory();
    let (sys, _vm, banks) = bring_up(&mut pool, cpu);
    let dtcm = banks.dtcm.unwrap();
    assert_eq!(
        (dtcm.base(), dtcm.size()),
        (EXAMPLE.tcm.dtcm_base, 16 << 10)
    );
    let region = sys.hw.cp15().register(Cp15Reg::DtcmRegion);
    assert_eq!(region, EXAMPLE.tcm.dtcm_base.as_u32() | (0b0101 << 2) | 1);
    // Mapped in the TCM window and reachable through the physical window.
    let read = |va| walk(&sys, va, AccessType::Read, true).map(|t| t.pa);
    assert_eq!(
        read(EXAMPLE.tcm_page_va(TcmKind::Data, 0x3000)),
        Ok(PhysAddr::new(0x2010_3000))
    );
    assert_eq!(
        read(EXAMPLE.phys_window_va + 0x2010_3000),
        Ok(PhysAddr::new(0x2010_3000))
    );
    assert!(matches!(EXAMPLE.encoding, L1Encoding::Arm9));
}
