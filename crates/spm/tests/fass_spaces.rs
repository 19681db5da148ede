//! `spm::FassMappings`: page exchanges over `fass` address spaces, on a
//! recording ARM926EJ-S (`MockCp15`, one CPU shared by fass and `spm`)
//! with physical memory in host buffers.
//!
//! A frame mapped in two FASS spaces moves into DTCM and back: after each
//! exchange every space translates to the right frame, in fass's own
//! tables and in the CPD the MMU walks; the content is preserved; write
//! access is taken from every mapping for the copy and given back to
//! exactly those that had it; the maintenance is by MVA of each mapping,
//! never a whole-cache or whole-TLB flush. Then the refusals. Last, the
//! same exchange on the `armv5-sim` model, with both spaces' writes dirty
//! in its VIVT D-cache under their own MVAs: no write is lost.

use core::cell::RefCell;
use fass::{Cpd, DefaultPolicy, DomainSet, Fass, KernelTable, Layout, SegmentAccess, SegmentId};
use fass::{SegmentSpec, Split, SwitchStrategy};
use mmu_armv5::descriptor::{AccessPermission as Ap, CachePolicy, L1Descriptor, L1Encoding};
use mmu_armv5::descriptor::{L2Descriptor, SubpageAp};
use mmu_armv5::maint::Arm926;
use mmu_armv5::regs::{Cp15Event, Cp15Op, Far, Fsr, MockCp15};
use mmu_armv5::regs::{Sctlr, Ttbr};
use mmu_armv5::size::{Frame, Page, PageSizeKind, Size4KiB};
use mmu_armv5::table::{PoolBlock, TableKind, TablePool, TableRef};
use mmu_armv5::{Domain, ModifiedVirtAddr, PhysAddr, VirtAddr};
use spm::exchange::DEFAULT_CHUNK;
use spm::AddressSpace::{Kernel, User};
use spm::{ops, Exchange, ExchangeError, ExchangeRequest, FassMappings, FassMappingsError};
use spm::{FrameDesc, FrameState, FrameTable, Hw, InitialUse, Location, Mappings, PhysRegion};
use spm::{PhysWindows, Progress, RecordingIrq, Rights, SectionSummary, SharedCpu};
use spm::{SpaceId, Translation};

type Cpu = RefCell<Arm926<MockCp15>>;
type Sys<'c, 'm> = Split<SharedCpu<'c, Arm926<MockCp15>>, TablePool<'m, 16>>;
type F = Fass<DefaultPolicy, 16, 8, 4>;

/// The frame both spaces map at `VA`.
const SHARED: u32 = 0x5000;
/// A second RAM frame (the way back).
const BACK: u32 = 0x9000;
/// The DTCM (32 KiB).
const DTCM: u32 = 0x0300_0000;
const VA: u32 = 0x8000;
/// Space A's resource slots.
const RES: u32 = 0x0010_0000;
const RES_BACK: u32 = 0x0020_0000;
const A: SpaceId = SpaceId(1);
const B: SpaceId = SpaceId(2);

fn va(a: u32) -> VirtAddr {
    VirtAddr::new(a)
}

fn pa(a: u32) -> PhysAddr {
    PhysAddr::new(a)
}

/// The 4 KiB page at `a` (page-aligned).
fn pg(a: u32) -> Page<Size4KiB, VirtAddr> {
    Page::from_start(va(a)).unwrap()
}

/// The 4 KiB frame at `a` (page-aligned).
fn fr(a: u32) -> Frame<Size4KiB> {
    Frame::from_start(pa(a)).unwrap()
}

fn byte(i: u32) -> u8 {
    (i.wrapping_mul(29) ^ (i >> 4)) as u8
}

/// The platform (table memory and the shared CPU) and a FASS manager
/// whose kernel table maps one section of kernel RAM at 3 GiB.
fn platform<'c, 'm>(cpu: &'c Cpu, mem: &'m mut [PoolBlock; 16]) -> (Sys<'c, 'm>, F) {
    let pool = TablePool::new(mem, pa(0x0100_0000), ModifiedVirtAddr::new(0xC100_0000)).unwrap();
    let mut sys = Split::new(SharedCpu(cpu), pool);
    let root = TableRef::allocate(&mut sys, TableKind::L1).unwrap();
    // SAFETY: a fresh table no `PageTable` manages; a section, no table link.
    unsafe { root.write(&sys, 0xC00, 0x0000_0412) }.unwrap();
    // SAFETY: `MockCp15` only records register writes (see `KernelTable::new`).
    let kernel = unsafe {
        KernelTable::new(
            &sys,
            root.pa,
            L1Encoding::Arm9,
            &Layout::DEMO,
            Domain::default(),
        )
    }
    .unwrap();
    let f = F::new(Cpd::new(kernel), DomainSet::EMPTY, DefaultPolicy::default()).unwrap();
    (sys, f)
}

/// The frame the CPD (the table the MMU walks) maps `va` of `id` to,
/// once `id` has run and faulted its slot in.
fn walked(f: &mut F, sys: &mut Sys<'_, '_>, id: SpaceId, v: u32) -> Option<PhysAddr> {
    f.switch_to(sys, id).unwrap();
    let mva = f.mva_of(id, va(v)).unwrap();
    let slot = mva.l1_index();
    if f.domains().slot_owner(slot) != f.domain_of(id).unwrap() {
        let r = f.resolve(sys, Fsr::from_bits(0x005), Far::from_bits(v));
        assert!(matches!(r, Ok(fass::Resolution::Resolved { .. })), "{r:?}");
    }
    let L1Descriptor::Coarse(c) = f.cpd().entry(sys, slot).unwrap() else {
        return None;
    };
    let t = TableRef::new(TableKind::Coarse, c.table.start()).unwrap();
    let i = ((mva.as_u32() >> 12) & 0xFF) as usize;
    L2Descriptor::from_bits(t.read(sys, i).unwrap()).frame_start()
}

fn regions() -> [PhysRegion; 2] {
    [
        PhysRegion::new(pa(0), 64 << 10, Location::Ram, InitialUse::Kernel).unwrap(),
        PhysRegion::new(pa(DTCM), 32 << 10, Location::Dtcm, InitialUse::Resource).unwrap(),
    ]
}

fn page(t: Option<Translation>) -> Option<(PhysAddr, bool)> {
    t.map(|t| (t.page, t.writable))
}

/// The MVAs the events invalidated TLB entries at, and whether any event
/// flushed a whole cache or the whole TLB.
fn tlb_entries_and_full(events: &[Cp15Event]) -> (Vec<u32>, bool) {
    let mut at = Vec::new();
    let mut full = false;
    for e in events {
        match e {
            Cp15Event::Op(Cp15Op::InvalidateTlbEntry, a) => at.push(*a),
            Cp15Event::Op(
                Cp15Op::InvalidateTlb
                | Cp15Op::InvalidateDCache
                | Cp15Op::InvalidateICache
                | Cp15Op::InvalidateIdCache,
                _,
            ) => full = true,
            _ => {}
        }
    }
    at.sort_unstable();
    at.dedup();
    (at, full)
}

#[test]
fn a_frame_of_two_fass_spaces_moves_into_dtcm_and_back() {
    let cpu = RefCell::new(Arm926::new(MockCp15::arm926()));
    let mut mem = Box::new([PoolBlock::ZERO; 16]);
    let (mut sys, mut f) = platform(&cpu, &mut mem);
    let (rw, wb) = (Ap::ReadWrite, CachePolicy::WriteBack);
    for s in [A, B] {
        f.add_space(s).unwrap();
        f.map_page(&mut sys, s, pg(VA), fr(SHARED), rw, wb).unwrap();
    }
    // The DTCM frame is A's resource slot, mapped privileged-only.
    f.map_page(&mut sys, A, pg(RES), fr(DTCM), Ap::PrivRw, wb)
        .unwrap();
    // B's mapping is made read-only for everyone (`NoneOrRom` with S):
    // write protection then takes, and restore gives back, write access
    // of A's mapping and of the resource only.
    let b_ap = SubpageAp::uniform(Ap::NoneOrRom);
    f.set_page_ap(&mut sys, B, va(VA), b_ap).unwrap();

    let (mut ram, mut dtcm) = (vec![0u8; 64 << 10], vec![0u8; 32 << 10]);
    for i in 0..0x1000 {
        ram[(SHARED + i) as usize] = byte(i);
        dtcm[i as usize] = 0xEE;
    }
    let regions = regions();
    let mut frames = vec![FrameDesc::default(); FrameTable::<2>::frames_needed(&regions)];
    let mut sections = vec![SectionSummary::default(); FrameTable::<2>::sections_needed(&regions)];
    let mut table = FrameTable::<2>::new(&regions, &mut frames, &mut sections).unwrap();
    table
        .init_range(
            Frame::from_start(pa(SHARED)).unwrap(),
            FrameState::User(A),
            true,
        )
        .unwrap();
    let mut phys = PhysWindows::<2>::new();
    // SAFETY: each buffer stands for its physical range and is reached
    // only through `phys` while it lives.
    unsafe { phys.add(pa(0), 64 << 10, ram.as_mut_ptr()) }.unwrap();
    // SAFETY: as above.
    unsafe { phys.add(pa(DTCM), 32 << 10, dtcm.as_mut_ptr()) }.unwrap();
    let mut hw = Hw::new(SharedCpu(&cpu), phys);
    let mut irq = RecordingIrq::new();

    let mva = |f: &F, s, v| f.mva_of(s, va(v)).unwrap();
    let (a_mva, b_mva, res_mva) = (mva(&f, A, VA), mva(&f, B, VA), mva(&f, A, RES));
    let mut maps = FassMappings::new(&mut f, &mut sys);
    let g0 = maps.generation();
    let req = ExchangeRequest {
        caller: Kernel,
        target_space: User(A),
        target: va(VA),
        resource_space: User(A),
        resource: va(RES),
        size: PageSizeKind::Small,
        count: 1,
        rights: Rights::RW,
    };
    cpu.borrow_mut().cp15_mut().clear();
    let mut ex = Exchange::begin(&mut table, &maps, req, DEFAULT_CHUNK).unwrap();
    // SAFETY: the frame table, fass's tables and `hw` describe one
    // (recorded) machine and nothing else reaches the two frames.
    let first = unsafe { ex.step(&mut table, &mut maps, &mut hw, &mut irq) }.unwrap();
    assert_eq!(first, Progress::Pending);
    // Mid-exchange: every mapping of both frames is read-only, A's and the
    // resource remembered as writable (B's was not).
    for (s, v) in [(A, VA), (B, VA), (A, RES)] {
        assert_eq!(
            maps.translate(User(s), va(v)).map(|t| t.writable),
            Some(false)
        );
    }
    assert_eq!(maps.protected(), 2);
    assert!(ex.protects(pa(SHARED)));
    // SAFETY: as above.
    unsafe { ex.run(&mut table, &mut maps, &mut hw, &mut irq) }.unwrap();
    assert!(ex.is_done() && !irq.is_masked());
    assert_eq!(maps.take_error(), None);
    assert_eq!(maps.protected(), 0);
    // spm's own changes do not count as changes of the mappings.
    assert_eq!(maps.generation(), g0);

    // Both spaces reach DTCM at `VA`, with the rights they had; A's
    // resource slot leads to the old frame.
    assert_eq!(
        page(maps.translate(User(A), va(VA))),
        Some((pa(DTCM), true))
    );
    assert_eq!(
        page(maps.translate(User(B), va(VA))),
        Some((pa(DTCM), false))
    );
    let b = maps
        .fass()
        .translate(maps.platform(), B, va(VA))
        .unwrap()
        .unwrap();
    assert_eq!(b.ap, b_ap);
    assert_eq!(
        page(maps.translate(User(A), va(RES))),
        Some((pa(SHARED), true))
    );
    // The maintenance: TLB entries of exactly the three mappings, nothing
    // whole.
    let (tlb, full) = tlb_entries_and_full(cpu.borrow().cp15().events());
    let mut want = vec![a_mva.as_u32(), b_mva.as_u32(), res_mva.as_u32()];
    want.sort_unstable();
    assert_eq!((tlb, full), (want, false));
    // The page's lines were cleaned at each MVA of the old frame.
    for m in [a_mva, b_mva] {
        let clean = Cp15Event::Op(Cp15Op::CleanDCacheLine, m.as_u32());
        let clean_inv = Cp15Event::Op(Cp15Op::CleanInvalidateDCacheLine, m.as_u32());
        let ev = cpu.borrow();
        let ev = ev.cp15().events();
        assert!(ev.contains(&clean) || ev.contains(&clean_inv), "{m}");
    }
    let mut got = [0u8; 0x1000];
    hw.phys.read(pa(DTCM), &mut got).unwrap();
    assert!(got.iter().enumerate().all(|(i, &v)| v == byte(i as u32)));

    // The MMU's view: the CPD leads both spaces to DTCM.
    let (f, sys) = maps.edit();
    assert_eq!(walked(f, sys, A, VA), Some(pa(DTCM)));
    assert_eq!(walked(f, sys, B, VA), Some(pa(DTCM)));
    assert_eq!(walked(f, sys, A, RES), Some(pa(SHARED)));

    // Back into RAM: a fresh frame at A's second resource slot, made a
    // page resource through spm.
    table
        .init_range(
            Frame::from_start(pa(BACK)).unwrap(),
            FrameState::User(A),
            true,
        )
        .unwrap();
    let (f, sys) = maps.edit();
    f.map_page(sys, A, pg(RES_BACK), fr(BACK), rw, wb).unwrap();
    ops::delete_user_page(&mut table, &maps, A, va(RES_BACK)).unwrap();
    let back = ExchangeRequest {
        resource: va(RES_BACK),
        ..req
    };
    let mut ex = Exchange::begin(&mut table, &maps, back, 1024).unwrap();
    // SAFETY: as above.
    unsafe { ex.run(&mut table, &mut maps, &mut hw, &mut irq) }.unwrap();
    assert_eq!(maps.take_error(), None);
    for s in [A, B] {
        assert_eq!(maps.translate(User(s), va(VA)).unwrap().page, pa(BACK));
    }
    assert_eq!(
        page(maps.translate(User(A), va(RES_BACK))),
        Some((pa(DTCM), true))
    );
    let mut got = [0u8; 0x1000];
    hw.phys.read(pa(BACK), &mut got).unwrap();
    assert!(got.iter().enumerate().all(|(i, &v)| v == byte(i as u32)));
    let (f, sys) = maps.edit();
    assert_eq!(walked(f, sys, B, VA), Some(pa(BACK)));
    assert_eq!(walked(f, sys, A, VA), Some(pa(BACK)));
}

#[test]
fn what_fass_mappings_cannot_do_is_refused_and_reported() {
    let cpu = RefCell::new(Arm926::new(MockCp15::arm926()));
    let mut mem = Box::new([PoolBlock::ZERO; 16]);
    let (mut sys, mut f) = platform(&cpu, &mut mem);
    let (rw, wb) = (Ap::ReadWrite, CachePolicy::WriteBack);
    // Nine spaces map one frame: one more than `MAX_SITES`.
    for s in 1..=9 {
        f.add_space(SpaceId(s)).unwrap();
        f.map_page(&mut sys, SpaceId(s), pg(VA), fr(SHARED), rw, wb)
            .unwrap();
    }
    f.map_page(&mut sys, A, pg(RES), fr(DTCM), rw, wb).unwrap();
    let seg = SegmentSpec {
        base: va(0x8000_0000),
        pa: pa(0x0040_0000),
        size: 1 << 20,
        ap: rw,
        cache: wb,
    };
    f.create_segment(SegmentId(0), seg).unwrap();
    f.map_segment(&mut sys, A, SegmentId(0), seg.base, SegmentAccess::Client)
        .unwrap();
    let mut maps = FassMappings::new(&mut f, &mut sys);

    // The kernel's table is not fass's: nothing is reported there.
    assert_eq!(maps.translate(Kernel, va(0xC000_0000)), None);
    assert_eq!(maps.translate(User(SpaceId(12)), va(VA)), None);
    // All nine mappings are reported (walked: too many to remember).
    let mut n = 0;
    maps.for_each_mapping(pa(SHARED), PageSizeKind::Small, &mut |m| {
        assert!(m.writable && m.cached);
        n += 1;
    });
    assert_eq!(n, 9);
    // Write protection reaches all nine, and restores them.
    maps.write_protect(pa(SHARED), PageSizeKind::Small);
    assert_eq!(maps.protected(), 9);
    for s in 1..=9 {
        assert_eq!(
            maps.translate(User(SpaceId(s)), va(VA)).map(|t| t.writable),
            Some(false)
        );
    }
    maps.restore_write(pa(SHARED), PageSizeKind::Small);
    assert_eq!((maps.protected(), maps.take_error()), (0, None));
    for s in 1..=9 {
        assert_eq!(
            maps.translate(User(SpaceId(s)), va(VA)).map(|t| t.writable),
            Some(true)
        );
    }

    // A swap of a page with more mappings than it remembers changes
    // nothing and says so, with a new generation.
    let g = maps.generation();
    maps.swap(pa(SHARED), pa(DTCM), PageSizeKind::Small);
    assert_eq!(
        maps.take_error(),
        Some(FassMappingsError::TooManyMappings(pa(SHARED)))
    );
    assert_ne!(maps.generation(), g);
    for s in 1..=9 {
        assert_eq!(
            maps.translate(User(SpaceId(s)), va(VA)).unwrap().page,
            pa(SHARED)
        );
    }
    assert_eq!(maps.translate(User(A), va(RES)).unwrap().page, pa(DTCM));

    // A segment's section is reported, but not edited.
    let sect = pa(0x0040_0000);
    let t = maps.translate(User(A), va(0x8000_0000)).unwrap();
    assert_eq!((t.page, t.size), (sect, PageSizeKind::Section));
    let mut seen = Vec::new();
    maps.for_each_mapping(sect, PageSizeKind::Section, &mut |m| seen.push(m.space));
    assert_eq!(seen, [User(A)]);
    let g = maps.generation();
    maps.write_protect(sect, PageSizeKind::Section);
    assert_eq!(
        maps.take_error(),
        Some(FassMappingsError::Fass(fass::FassError::NotPrivate(va(
            0x8000_0000
        ))))
    );
    assert_ne!(maps.generation(), g);
    assert_eq!(maps.protected(), 0);
    assert!(maps.translate(User(A), va(0x8000_0000)).unwrap().writable);

    // Page tables cannot be moved under fass.
    maps.move_second_level(pa(0x0100_4000), pa(0x9000));
    assert_eq!(
        maps.take_error(),
        Some(FassMappingsError::TableMove(pa(0x0100_4000)))
    );

    // An exchange of a segment page as a small page is refused by spm
    // (its size), before anything is marked.
    let regions = regions();
    let mut frames = vec![FrameDesc::default(); FrameTable::<2>::frames_needed(&regions)];
    let mut sections = vec![SectionSummary::default(); FrameTable::<2>::sections_needed(&regions)];
    let mut table = FrameTable::<2>::new(&regions, &mut frames, &mut sections).unwrap();
    let req = ExchangeRequest {
        caller: Kernel,
        target_space: User(A),
        target: va(0x8000_0000),
        resource_space: User(A),
        resource: va(RES),
        size: PageSizeKind::Small,
        count: 1,
        rights: Rights::RW,
    };
    assert_eq!(
        Exchange::begin(&mut table, &maps, req, DEFAULT_CHUNK).err(),
        Some(ExchangeError::SizeMismatch {
            va: va(0x8000_0000),
            mapped: PageSizeKind::Section
        })
    );
}

// ------------------------------------------------ on the armv5-sim model

mod common;

use armv5_sim::{sctlr, Privilege, Width};
use fass::Resolution;

type ModelSys = Split<common::Hw, common::ModelTables>;
type ModelFass = Fass<DefaultPolicy, 8, 8, 4>;

/// A user access of space `id` (switched to first) on the model, with
/// fass resolving its CPD faults as a kernel's abort handler would: the
/// value loaded (or stored), or the fault status fass did not resolve.
fn user(
    f: &mut ModelFass,
    sys: &mut ModelSys,
    m: &common::Shared,
    id: SpaceId,
    v: u32,
    store: Option<u8>,
) -> Result<u8, u32> {
    f.switch_to(sys, id).unwrap();
    for _ in 0..4 {
        let r = match store {
            Some(b) => m
                .borrow_mut()
                .store(va(v), Width::Byte, u32::from(b), Privilege::User)
                .map(|()| u32::from(b)),
            None => m.borrow_mut().load(va(v), Width::Byte, Privilege::User),
        };
        match r {
            Ok(b) => return Ok(b as u8),
            Err(_) => {
                let (fsr, far) = (m.borrow().dfsr(), m.borrow().far());
                match f.resolve(sys, fsr, far) {
                    Ok(Resolution::Resolved { .. }) => continue,
                    _ => return Err(fsr.bits()),
                }
            }
        }
    }
    Err(u32::MAX)
}

/// Two FASS spaces on the model (write-back VIVT caches on) map one frame;
/// each writes half of it, so both halves are dirty in the D-cache under
/// two different MVAs when the exchange begins. The page moves into DTCM
/// with every byte: `spm` cleans the lines at every MVA `FassMappings`
/// reports, so a mapping left out would lose its half. A write between the
/// steps faults (permission) instead of racing the copy.
#[test]
fn both_spaces_dirty_halves_reach_dtcm_on_the_model() {
    const FRAME: u32 = 0x0010_0000;
    let m = common::machine();
    let hw = || common::Hw { m: m.clone() };
    let mut sys = Split::new(hw(), common::ModelTables(m.clone()));
    // The kernel's table: RAM, ITCM and DTCM (9 MiB) as uncached
    // privileged sections at `WINDOW`, through which `common::Hw` copies.
    let root = TableRef::allocate(&mut sys, TableKind::L1).unwrap();
    for s in 0..9 {
        // SAFETY: a fresh table no `PageTable` manages; sections, no link.
        unsafe {
            root.write(
                &sys,
                (common::WINDOW >> 20) as usize + s,
                ((s as u32) << 20) | 0x412,
            )
        }
        .unwrap();
    }
    // SAFETY: the model's registers are the model's; the table maps all
    // this test's kernel side uses (the window).
    let kernel = unsafe {
        KernelTable::new(
            &sys,
            root.pa,
            L1Encoding::Arm9,
            &Layout::DEMO,
            Domain::default(),
        )
    }
    .unwrap();
    {
        let mut mm = m.borrow_mut();
        mm.set_ttbr(Ttbr::new(root.pa).unwrap());
        mm.set_sctlr(Sctlr::from_bits(sctlr::M | sctlr::C | sctlr::I | sctlr::S));
    }
    let mut f =
        ModelFass::new(Cpd::new(kernel), DomainSet::EMPTY, DefaultPolicy::default()).unwrap();
    let (rw, wb) = (Ap::ReadWrite, CachePolicy::WriteBack);
    for s in [A, B] {
        f.add_space(s).unwrap();
        f.map_page(&mut sys, s, pg(VA), fr(FRAME), rw, wb).unwrap();
    }
    f.map_page(&mut sys, A, pg(RES), fr(common::DTCM), Ap::PrivRw, wb)
        .unwrap();
    // Each line read first (the D-cache allocates on reads only), then
    // written: dirty in the cache, stale in memory.
    let who = |i: u32| if i < 0x800 { A } else { B };
    for i in (0..0x1000).step_by(32) {
        user(&mut f, &mut sys, &m, who(i), VA + i, None).unwrap();
    }
    for i in 0..0x1000 {
        user(&mut f, &mut sys, &m, who(i), VA + i, Some(byte(i))).unwrap();
    }
    assert!(m.borrow().dcache_dirty_lines() >= 128);
    assert!(
        (0..0x1000)
            .any(|i| m.borrow().phys_read(pa(FRAME + i), Width::Byte).unwrap() as u8 != byte(i)),
        "memory is stale before the exchange"
    );

    let mut storage = common::Storage::new();
    let mut table = storage.table();
    table
        .init_range(
            Frame::from_start(pa(FRAME)).unwrap(),
            FrameState::User(A),
            true,
        )
        .unwrap();
    let mut hw = Hw::new(hw(), hw());
    let mut irq = RecordingIrq::new();
    let mut maps = FassMappings::new(&mut f, &mut sys);
    let req = ExchangeRequest {
        caller: Kernel,
        target_space: User(A),
        target: va(VA),
        resource_space: User(A),
        resource: va(RES),
        size: PageSizeKind::Small,
        count: 1,
        rights: Rights::RW,
    };
    let mut ex = Exchange::begin(&mut table, &maps, req, 1024).unwrap();
    // SAFETY: the model's frame table, fass's tables and the machine are
    // one consistent (simulated) system; nothing of this program moves.
    let first = unsafe { ex.step(&mut table, &mut maps, &mut hw, &mut irq) }.unwrap();
    assert_eq!(first, Progress::Pending);
    // B writes between the steps: a permission fault, which fass leaves
    // to the kernel (it waits for the exchange).
    let (fm, sm) = maps.edit();
    let fsr = user(fm, sm, &m, B, VA + 0x900, Some(0)).unwrap_err();
    assert_eq!(fsr & 0xF, 0xF, "page permission fault: {fsr:#x}");
    assert!(ex.protects(pa(FRAME)));
    // SAFETY: as above.
    unsafe { ex.run(&mut table, &mut maps, &mut hw, &mut irq) }.unwrap();
    assert!(ex.is_done() && !irq.is_masked());
    assert_eq!((maps.take_error(), maps.protected()), (None, 0));

    // Both spaces read every byte back, now from DTCM, and write again.
    let (fm, sm) = maps.edit();
    for s in [A, B] {
        for i in (0..0x1000).step_by(7) {
            assert_eq!(
                user(fm, sm, &m, s, VA + i, None),
                Ok(byte(i)),
                "{s:?} {i:#x}"
            );
        }
        assert_eq!(user(fm, sm, &m, s, VA, Some(byte(0))), Ok(byte(0)));
    }
    for s in [A, B] {
        assert_eq!(
            fm.translate(&*sm, s, va(VA)).unwrap().unwrap().pa,
            pa(common::DTCM)
        );
    }
    for i in 0..0x1000 {
        let got = m
            .borrow()
            .phys_read(pa(common::DTCM + i), Width::Byte)
            .unwrap() as u8;
        assert_eq!(got, byte(i), "DTCM byte {i:#x}");
    }
}
