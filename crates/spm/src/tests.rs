//! Behaviour tests on the host doubles, for what the `armv5-sim` model
//! tests (`tests/model.rs`) do not cover: the permission rules of the page
//! operations, kernel pages, and moving page tables and page directories.

use crate::exchange::{Exchange, ExchangeError, ExchangeRequest, Progress, DEFAULT_CHUNK};
use crate::frame::{FrameDesc, FrameError, FrameState, FrameTable, KernelUse, SectionSummary};
use crate::mappings::AddressSpace;
use crate::ops::{self, OpError, StateRequest};
use crate::region::{InitialUse, Location, PhysRegion, Rights};
use crate::testkit::{CpuFault, Hw, Irq, Maps, Ops};
use mmu_armv5::size::PageSizeKind;
use mmu_armv5::size::{Frame, FrameRange};
use mmu_armv5::{PhysAddr, SpaceId, VirtAddr};
use std::vec;
use std::vec::Vec;

const ITCM: u32 = 0x0300_0000;
const DTCM: u32 = 0x0300_8000;
const DEV: u32 = 0x1010_0000;
const K: AddressSpace = AddressSpace::Kernel;

fn sp(n: u16) -> SpaceId {
    SpaceId(n)
}
fn us(n: u16) -> AddressSpace {
    AddressSpace::User(sp(n))
}
fn pa(a: u32) -> PhysAddr {
    PhysAddr::new(a)
}
fn va(a: u32) -> VirtAddr {
    VirtAddr::new(a)
}

/// [`ops::change_state`] on the host doubles.
fn change_state(
    table: &mut FrameTable<'_, 4>,
    maps: &Maps,
    hw: &mut Hw,
    actor: AddressSpace,
    va: VirtAddr,
    request: StateRequest,
) -> Result<FrameState, OpError> {
    // SAFETY: the host doubles simulate memory, caches and mappings; the
    // frame table describes that simulated memory only.
    unsafe { ops::change_state(table, maps, hw, actor, va, request) }
}

/// [`ops::create_user_page`] on the host doubles.
fn create_user_page(
    table: &mut FrameTable<'_, 4>,
    maps: &Maps,
    hw: &mut Hw,
    caller: SpaceId,
    va: VirtAddr,
) -> Result<PhysAddr, OpError> {
    // SAFETY: as in `change_state`.
    unsafe { ops::create_user_page(table, maps, hw, caller, va) }
}

fn regions() -> [PhysRegion; 4] {
    [
        PhysRegion::new(pa(0), 4 << 20, Location::Ram, InitialUse::Resource).unwrap(),
        PhysRegion::new(pa(ITCM), 0x8000, Location::Itcm, InitialUse::Resource).unwrap(),
        PhysRegion::new(pa(DTCM), 0x8000, Location::Dtcm, InitialUse::Resource).unwrap(),
        PhysRegion::new(pa(DEV), 0x1000, Location::Device, InitialUse::Undefined).unwrap(),
    ]
}

/// Frame-table storage owned by a test (nothing leaked).
struct Storage {
    frames: Vec<FrameDesc>,
    sections: Vec<SectionSummary>,
}

impl Storage {
    fn new() -> Storage {
        let r = regions();
        Storage {
            frames: vec![FrameDesc::default(); FrameTable::<4>::frames_needed(&r)],
            sections: vec![SectionSummary::default(); FrameTable::<4>::sections_needed(&r)],
        }
    }
}

struct World<'a> {
    table: FrameTable<'a, 4>,
    maps: Maps,
    hw: Hw,
    irq: Irq,
}

fn world(st: &mut Storage) -> World<'_> {
    let ops: Ops = Default::default();
    World {
        table: FrameTable::new(&regions(), &mut st.frames, &mut st.sections).unwrap(),
        maps: Maps::new(ops.clone()),
        hw: Hw::new(ops.clone()),
        irq: Irq::new(ops),
    }
}

impl World<'_> {
    fn user_page(&mut self, space: u16, v: u32, p: u32, writable: bool) {
        self.table
            .init_range(
                Frame::from_start(pa(p)).unwrap(),
                FrameState::User(sp(space)),
                true,
            )
            .unwrap();
        self.maps
            .map(us(space), v, p, PageSizeKind::Small, writable);
    }
    fn state(&self, p: u32) -> FrameState {
        self.table.desc(pa(p)).unwrap().state()
    }
    fn req(
        &self,
        caller: AddressSpace,
        target: u32,
        resource: u32,
        count: u32,
        rights: Rights,
    ) -> ExchangeRequest {
        ExchangeRequest {
            caller,
            target_space: caller,
            target: va(target),
            resource_space: caller,
            resource: va(resource),
            size: PageSizeKind::Small,
            count,
            rights,
        }
    }
    fn begin(&mut self, r: ExchangeRequest) -> Result<Exchange, ExchangeError> {
        Exchange::begin(&mut self.table, &self.maps, r, DEFAULT_CHUNK)
    }
    fn run(&mut self, x: &mut Exchange) {
        self.try_run(x).unwrap();
    }
    fn try_run(&mut self, x: &mut Exchange) -> Result<(), ExchangeError> {
        // SAFETY: as in `change_state`.
        unsafe { x.run(&mut self.table, &mut self.maps, &mut self.hw, &mut self.irq) }
    }
    fn step(&mut self, x: &mut Exchange) -> Result<Progress, ExchangeError> {
        // SAFETY: as in `change_state`.
        unsafe { x.step(&mut self.table, &mut self.maps, &mut self.hw, &mut self.irq) }
    }
    fn cancel(&mut self, x: &mut Exchange) -> Result<u32, ExchangeError> {
        // SAFETY: as in `change_state`.
        unsafe { x.cancel(&mut self.table, &mut self.maps, &mut self.hw, &mut self.irq) }
    }
    fn fill(&mut self, space: AddressSpace, v: u32, len: u32, seed: u8) {
        for i in 0..len {
            self.hw
                .store(&self.maps, space, v + i, seed.wrapping_add((i * 7) as u8))
                .unwrap();
        }
    }
    fn any_busy(&self) -> bool {
        [
            0u32,
            0x1000,
            0x2000,
            0x10_0000,
            ITCM,
            ITCM + 0x1000,
            DTCM,
            DTCM + 0x1000,
        ]
        .iter()
        .any(|&p| self.table.desc(pa(p)).unwrap().is_busy())
    }
}

// ---------------------------------------------------------------- operations

#[test]
fn operation_permissions() {
    let mut st = Storage::new();
    let mut w = world(&mut st);
    w.user_page(1, 0x8000, 0x5000, true);
    w.maps.map(us(2), 0x8000, 0x5000, PageSizeKind::Small, true);
    // Only the owner deletes.
    assert_eq!(
        ops::delete_user_page(&mut w.table, &w.maps, sp(2), va(0x8000)),
        Err(OpError::NotOwner {
            frame: pa(0x5000),
            state: FrameState::User(sp(1))
        })
    );
    // Create needs a resource.
    assert_eq!(
        create_user_page(&mut w.table, &w.maps, &mut w.hw, sp(1), va(0x8000)),
        Err(OpError::NotResource {
            frame: pa(0x5000),
            state: FrameState::User(sp(1))
        })
    );
    assert_eq!(
        create_user_page(&mut w.table, &w.maps, &mut w.hw, sp(1), va(0x9000)),
        Err(OpError::NotMapped(va(0x9000)))
    );
    // Query works for anyone with a mapping.
    let q = change_state(
        &mut w.table,
        &w.maps,
        &mut w.hw,
        us(2),
        va(0x8123),
        StateRequest::Query,
    );
    assert_eq!(q, Ok(FrameState::User(sp(1))));
    // Kernel pages are the kernel's.
    w.table
        .init_range(
            Frame::from_start(pa(0x6000)).unwrap(),
            FrameState::Kernel(KernelUse::Plain),
            true,
        )
        .unwrap();
    w.maps
        .map(us(1), 0xa000, 0x6000, PageSizeKind::Small, false);
    w.maps
        .map(K, 0xc000_6000, 0x6000, PageSizeKind::Small, true);
    assert_eq!(
        change_state(
            &mut w.table,
            &w.maps,
            &mut w.hw,
            us(1),
            va(0xa000),
            StateRequest::Set(FrameState::Resource)
        ),
        Err(OpError::KernelOnly(pa(0x6000)))
    );
    // A task cannot mark its page as a page table.
    assert_eq!(
        change_state(
            &mut w.table,
            &w.maps,
            &mut w.hw,
            us(1),
            va(0x8000),
            StateRequest::Set(FrameState::Kernel(KernelUse::PageTable))
        ),
        Err(OpError::KernelOnly(pa(0x5000)))
    );
    // Nobody turns a kernel page straight into a user page.
    assert_eq!(
        change_state(
            &mut w.table,
            &w.maps,
            &mut w.hw,
            K,
            va(0xc000_6000),
            StateRequest::Set(FrameState::User(sp(1)))
        ),
        Err(OpError::Transition {
            from: FrameState::Kernel(KernelUse::Plain),
            to: FrameState::User(sp(1))
        })
    );
    // ... nor a user page to another owner.
    assert_eq!(
        change_state(
            &mut w.table,
            &w.maps,
            &mut w.hw,
            us(1),
            va(0x8000),
            StateRequest::Set(FrameState::User(sp(2)))
        ),
        Err(OpError::Transition {
            from: FrameState::User(sp(1)),
            to: FrameState::User(sp(2))
        })
    );
    // Undefined (device) frames never change.
    w.maps.map(K, 0xd000_0000, DEV, PageSizeKind::Small, true);
    assert_eq!(
        change_state(
            &mut w.table,
            &w.maps,
            &mut w.hw,
            K,
            va(0xd000_0000),
            StateRequest::Set(FrameState::Resource)
        ),
        Err(OpError::Transition {
            from: FrameState::Undefined,
            to: FrameState::Resource
        })
    );
    // The kernel may free its page and reuse it as a page table.
    let k = |w: &mut World, s| {
        change_state(
            &mut w.table,
            &w.maps,
            &mut w.hw,
            K,
            va(0xc000_6000),
            StateRequest::Set(s),
        )
    };
    assert_eq!(k(&mut w, FrameState::Resource), Ok(FrameState::Resource));
    assert_eq!(
        k(&mut w, FrameState::Kernel(KernelUse::PageTable)),
        Ok(FrameState::Kernel(KernelUse::PageTable))
    );
    // Nothing changed by the refused calls.
    assert_eq!(w.state(0x5000), FrameState::User(sp(1)));
    // The owner deletes.
    ops::delete_user_page(&mut w.table, &w.maps, sp(1), va(0x8000)).unwrap();
    assert_eq!(w.state(0x5000), FrameState::Resource);
}

/// An owner the frame table cannot record (above 12 bits) is refused with
/// a typed error before anything changes: the resource is neither zeroed
/// nor handed out, and no other owner's number is stored instead.
#[test]
fn owners_the_table_cannot_record_are_refused() {
    let mut st = Storage::new();
    let mut w = world(&mut st);
    let big = sp(0x1001); // 0x001 once truncated to 12 bits
    let err = OpError::Frame(FrameError::SpaceIdOutOfRange(big));
    w.maps
        .map(us(0x1001), 0x8000, 0x5000, PageSizeKind::Small, true);
    w.maps
        .map(K, 0xc000_5000, 0x5000, PageSizeKind::Small, true);
    w.hw.store(&w.maps, K, 0xc000_5123, 42).unwrap();
    assert_eq!(
        create_user_page(&mut w.table, &w.maps, &mut w.hw, big, va(0x8000)),
        Err(err)
    );
    let set = StateRequest::Set(FrameState::User(big));
    assert_eq!(
        change_state(&mut w.table, &w.maps, &mut w.hw, K, va(0xc000_5000), set),
        Err(err)
    );
    assert_eq!(
        change_state(
            &mut w.table,
            &w.maps,
            &mut w.hw,
            us(0x1001),
            va(0x8000),
            set
        ),
        Err(err)
    );
    assert_eq!(w.state(0x5000), FrameState::Resource);
    assert_eq!(w.hw.phys(0x5123), 42, "not zeroed");
    // The largest owner that fits is recorded as it is.
    let top = sp(crate::frame::MAX_SPACE_ID);
    w.maps
        .map(us(top.0), 0x9000, 0x6000, PageSizeKind::Small, true);
    create_user_page(&mut w.table, &w.maps, &mut w.hw, top, va(0x9000)).unwrap();
    assert_eq!(w.state(0x6000), FrameState::User(top));
}

#[test]
fn frames_in_an_exchange_can_only_be_queried() {
    let mut st = Storage::new();
    let mut w = world(&mut st);
    w.user_page(1, 0x8000, 0x5000, true);
    w.maps
        .map(us(1), 0x10_0000, ITCM, PageSizeKind::Small, false);
    let r = w.req(us(1), 0x8000, 0x10_0000, 1, Rights::RW);
    let mut x = w.begin(r).unwrap();
    assert_eq!(
        ops::delete_user_page(&mut w.table, &w.maps, sp(1), va(0x8000)),
        Err(OpError::Busy(pa(0x5000)))
    );
    assert_eq!(
        create_user_page(&mut w.table, &w.maps, &mut w.hw, sp(1), va(0x10_0000)),
        Err(OpError::Busy(pa(ITCM)))
    );
    assert_eq!(w.begin(r).err(), Some(ExchangeError::Busy(pa(0x5000))));
    w.run(&mut x);
    assert!(x.is_done());
    assert_eq!(w.step(&mut x), Err(ExchangeError::Finished));
    assert!(!w.any_busy());
}

/// Regression (issue 26, item 3): `init_range` cleared the busy flags of
/// frames under an exchange, so a second `begin` on the same frames was
/// accepted and the first exchange's next step found its frames exactly as
/// it expected (busy, same state). `init_range` refuses busy frames now,
/// changing none of the range, and the second `begin` stays refused.
#[test]
fn init_range_refuses_frames_under_an_exchange() {
    let mut st = Storage::new();
    let mut w = world(&mut st);
    w.user_page(1, 0x8000, 0x5000, true);
    w.maps
        .map(us(1), 0x10_0000, ITCM, PageSizeKind::Small, false);
    let r = w.req(us(1), 0x8000, 0x10_0000, 1, Rights::RW);
    let mut x = w.begin(r).unwrap();
    let before = w.table.desc(pa(0x4000)).unwrap();
    assert_eq!(
        w.table.init_range(
            FrameRange::from_bytes(pa(0x4000), 0x2000).unwrap(),
            FrameState::User(sp(1)),
            true
        ),
        Err(FrameError::Busy(pa(0x5000)))
    );
    assert_eq!(w.table.desc(pa(0x4000)).unwrap(), before, "nothing changed");
    assert_eq!(
        w.table.init_range(
            Frame::from_start(pa(ITCM)).unwrap(),
            FrameState::Resource,
            true
        ),
        Err(FrameError::Busy(pa(ITCM)))
    );
    assert!(w.table.desc(pa(0x5000)).unwrap().is_busy());
    assert_eq!(w.begin(r).err(), Some(ExchangeError::Busy(pa(0x5000))));
    w.run(&mut x);
    assert!(x.is_done() && !w.any_busy());
    // Once the exchange is over the frames are the kernel's to set again.
    w.table
        .init_range(
            Frame::from_start(pa(0x5000)).unwrap(),
            FrameState::Resource,
            true,
        )
        .unwrap();
}

/// Regression (issue 26, rebuilding the frame table mid-exchange): an
/// exchange does not borrow its table between steps, so the table could be
/// dropped and built again over the same storage and regions (the same
/// table to the exchange), every busy flag cleared; a second `begin` on the
/// same frames was then accepted and the first exchange's next step found
/// its frames as it expected. `FrameTable::new` refuses storage holding a
/// busy description and changes nothing.
#[test]
fn rebuilding_the_table_under_an_exchange_is_refused() {
    let mut st = Storage::new();
    let (maps, hw, irq, x, r) = {
        let mut w = world(&mut st);
        w.user_page(1, 0x8000, 0x5000, true);
        w.maps
            .map(us(1), 0x10_0000, ITCM, PageSizeKind::Small, false);
        let r = w.req(us(1), 0x8000, 0x10_0000, 1, Rights::RW);
        let mut x = w.begin(r).unwrap();
        assert_eq!(w.step(&mut x), Ok(Progress::Pending));
        let World { maps, hw, irq, .. } = w;
        (maps, hw, irq, x, r)
    };
    let before = st.frames.clone();
    let busy = st.frames.iter().position(|d| d.is_busy());
    assert_eq!(busy, Some(5), "frame 0x5000 is busy");
    assert_eq!(
        FrameTable::<4>::new(&regions(), &mut st.frames, &mut st.sections).err(),
        Some(FrameError::StorageBusy(5))
    );
    assert_eq!(st.frames, before, "the storage is unchanged");
    // Storage whose busy flags are gone (the exchange's own table dropped
    // with it: the exchange is stranded, as the caller chose) builds again.
    let _ = (maps, hw, irq, x, r);
    st.frames.iter_mut().for_each(|d| *d = d.with_busy(false));
    assert!(FrameTable::<4>::new(&regions(), &mut st.frames, &mut st.sections).is_ok());
}

// ------------------------------------------------------------------ exchange

fn content(i: u32, seed: u8) -> u8 {
    seed.wrapping_add((i * 7) as u8)
}

impl World<'_> {
    fn maps_translate(&self, space: AddressSpace, v: u32) -> u32 {
        use crate::mappings::Mappings;
        self.maps.translate(space, va(v)).unwrap().page.as_u32()
    }
}

/// Two kernel pages, frames 0x5000 and 0x6000, mapped at 0xc000_5000.
fn kernel_pages(w: &mut World<'_>) {
    w.table
        .init_range(
            FrameRange::from_bytes(pa(0x5000), 0x2000).unwrap(),
            FrameState::Kernel(KernelUse::Plain),
            true,
        )
        .unwrap();
    w.maps
        .map(K, 0xc000_5000, 0x5000, PageSizeKind::Small, true);
    w.maps
        .map(K, 0xc000_6000, 0x6000, PageSizeKind::Small, true);
}

#[test]
fn kernel_code_moves_into_itcm_and_back() {
    let mut st = Storage::new();
    let mut w = world(&mut st);
    kernel_pages(&mut w);
    w.maps.map(K, 0xc100_0000, ITCM, PageSizeKind::Small, false);
    w.maps
        .map(K, 0xc100_1000, ITCM + 0x1000, PageSizeKind::Small, false);
    w.fill(K, 0xc000_5000, 0x2000, 11);
    let mut x = w
        .begin(w.req(K, 0xc000_5000, 0xc100_0000, 2, Rights::RWX))
        .unwrap();
    w.run(&mut x);
    assert_eq!(w.state(ITCM), FrameState::Kernel(KernelUse::Plain));
    assert_eq!(w.state(ITCM + 0x1000), FrameState::Kernel(KernelUse::Plain));
    // Old kernel frames are resources at once.
    assert_eq!(w.state(0x5000), FrameState::Resource);
    assert_eq!(w.state(0x6000), FrameState::Resource);
    for i in 0..0x2000 {
        assert_eq!(
            w.hw.load(&w.maps, K, 0xc000_5000 + i).unwrap(),
            content(i, 11)
        );
    }
    // And back into RAM.
    let mut x = w
        .begin(w.req(K, 0xc000_5000, 0xc100_0000, 2, Rights::RWX))
        .unwrap();
    w.run(&mut x);
    assert_eq!(w.maps_translate(K, 0xc000_6000), 0x6000);
    assert_eq!(w.state(ITCM), FrameState::Resource);
    for i in 0..0x2000 {
        assert_eq!(
            w.hw.load(&w.maps, K, 0xc000_5000 + i).unwrap(),
            content(i, 11)
        );
    }
}

#[test]
fn moved_page_tables_and_directories_are_re_pointed() {
    let mut st = Storage::new();
    let mut w = world(&mut st);
    // A frame of second-level tables, referenced by two first-level entries.
    w.table
        .init_range(
            Frame::from_start(pa(0x1_0000)).unwrap(),
            FrameState::Kernel(KernelUse::PageTable),
            true,
        )
        .unwrap();
    w.maps
        .map(K, 0xc001_0000, 0x1_0000, PageSizeKind::Small, true);
    w.maps.l1 = vec![(0x300, 0x1_0400), (0x301, 0x1_0c00), (0x302, 0x2_0000)];
    w.maps.map(K, 0xc100_0000, DTCM, PageSizeKind::Small, false);
    let mut x = w
        .begin(w.req(K, 0xc001_0000, 0xc100_0000, 1, Rights::RW))
        .unwrap();
    w.run(&mut x);
    assert_eq!(
        w.maps.l1,
        vec![
            (0x300, DTCM + 0x400),
            (0x301, DTCM + 0xc00),
            (0x302, 0x2_0000)
        ]
    );
    assert_eq!(w.state(DTCM), FrameState::Kernel(KernelUse::PageTable));

    // The active page directory moves whole; the TTB follows.
    directory_frames(&mut w);
    w.fill(K, 0xc002_0000, 0x4000, 13);
    w.maps.dirs = vec![(us(1), 0x2_0000), (us(2), 0x3_0000)];
    w.hw.ttbr = 0x2_0000 | 0x18;
    let mut x = w
        .begin(w.req(K, 0xc002_0000, 0xc200_0000, 4, Rights::RW))
        .unwrap();
    // While the directory moves, all of it stays protected and busy.
    for _ in 0..0x1000 / DEFAULT_CHUNK + 3 {
        w.step(&mut x).unwrap();
    }
    assert_eq!(
        w.hw.ttbr,
        0x2_0000 | 0x18,
        "TTB moved before the whole directory was copied"
    );
    assert!(w.table.desc(pa(0x2_0000)).unwrap().is_busy());
    assert!(matches!(
        w.hw.store(&w.maps, K, 0xc002_3000, 1),
        Err(CpuFault::Permission(_))
    ));
    // Every frame of both directories is protected, nothing beyond.
    for (base, what) in [(0x2_0000, "old"), (ITCM + 0x4000, "new")] {
        for off in [0, 0x1000, 0x2fff, 0x3ffc] {
            assert!(x.protects(pa(base + off)), "{what} + {off:#x}");
        }
        assert!(!x.protects(pa(base + 0x4000)), "{what} + 16 KiB");
        assert!(!x.protects(pa(base - 4)), "{what} - 4");
    }
    w.run(&mut x);
    assert_eq!(w.hw.ttbr, (ITCM + 0x4000) | 0x18);
    assert_eq!(w.maps.dirs, vec![(us(1), ITCM + 0x4000), (us(2), 0x3_0000)]);
    for i in 0..0x4000 {
        assert_eq!(w.hw.phys(ITCM + 0x4000 + i), content(i, 13));
    }
    assert!(!w.table.desc(pa(0x2_0000)).unwrap().is_busy());
    w.hw.store(&w.maps, K, 0xc002_3000, 1).unwrap();
}

/// A page directory moves all or nothing: cancelled before its last
/// switch (with 0, 2 or 3 of its 4 pages switched, the third mid-flush),
/// they are switched back, the TTB never moved, the directory's frames are
/// kernel pages again and writable, nothing busy. Cancelled after the last
/// switch (the TTB moved), it is finished.
#[test]
fn a_cancelled_directory_move_is_switched_back_or_finished() {
    // A page is 8 steps with 1 KiB chunks: 4 copy chunks, then the switch
    // with 4 flush chunks. (Kept small: the lib tests also run under Miri.)
    let chunk = 1024;
    let page = 2 * (0x1000 / chunk);
    let cases = [
        (0, 0),
        (1, 0),
        (2 * page, 0),
        (2 * page + page / 2 + 1, 0),
        (3 * page + page / 2 + 1, 4),
    ];
    // Under Miri (slow on the byte-wise host doubles): the two that matter.
    let cases = if cfg!(miri) { &cases[3..] } else { &cases[..] };
    for &(steps, exchanged) in cases {
        let mut st = Storage::new();
        let mut w = world(&mut st);
        directory_frames(&mut w);
        // Every 61st byte of the directory (a sample is enough here).
        for i in (0..0x4000).step_by(61) {
            w.hw.store(&w.maps, K, 0xc002_0000 + i, content(i, 13))
                .unwrap();
        }
        w.maps.dirs = vec![(us(1), 0x2_0000)];
        w.hw.ttbr = 0x2_0000 | 0x18;
        let r = w.req(K, 0xc002_0000, 0xc200_0000, 4, Rights::RW);
        let mut x = Exchange::begin(&mut w.table, &w.maps, r, chunk).unwrap();
        for _ in 0..steps {
            assert_eq!(w.step(&mut x), Ok(Progress::Pending));
        }
        assert_eq!(w.cancel(&mut x), Ok(exchanged), "after {steps} steps");
        let (home, away) = if exchanged == 0 {
            (0x2_0000, ITCM + 0x4000)
        } else {
            (ITCM + 0x4000, 0x2_0000)
        };
        assert_eq!(w.hw.ttbr, home | 0x18);
        assert_eq!(w.maps.dirs, vec![(us(1), home)]);
        for i in 0..4 {
            assert_eq!(
                w.maps_translate(K, 0xc002_0000 + i * 0x1000),
                home + i * 0x1000
            );
            assert_eq!(
                w.maps_translate(K, 0xc200_0000 + i * 0x1000),
                away + i * 0x1000
            );
            assert_eq!(
                w.state(home + i * 0x1000),
                FrameState::Kernel(KernelUse::PageDirectory)
            );
            assert_eq!(w.state(away + i * 0x1000), FrameState::Resource);
            assert!(!w.table.desc(pa(home + i * 0x1000)).unwrap().is_busy());
            assert!(!w.table.desc(pa(away + i * 0x1000)).unwrap().is_busy());
        }
        for i in (0..0x4000).step_by(61) {
            assert_eq!(
                w.hw.load(&w.maps, K, 0xc002_0000 + i).unwrap(),
                content(i, 13)
            );
        }
        w.hw.store(&w.maps, K, 0xc002_3000, 1).unwrap();
        assert_eq!(w.step(&mut x), Err(ExchangeError::Finished));
    }
}

/// Dropping a begun exchange is what `#[must_use]` warns about: its
/// frames stay busy (nothing can release them without the exchange).
#[test]
fn a_dropped_exchange_leaves_its_frames_busy() {
    let mut st = Storage::new();
    let mut w = world(&mut st);
    w.user_page(1, 0x8000, 0x5000, true);
    w.maps
        .map(us(1), 0x10_0000, ITCM, PageSizeKind::Small, false);
    let x = w
        .begin(w.req(us(1), 0x8000, 0x10_0000, 1, Rights::RW))
        .unwrap();
    drop(x);
    assert!(w.table.desc(pa(0x5000)).unwrap().is_busy());
    assert_eq!(w.table.busy_frames(), 2);
}

// --------------------------------------------------------- begin's checks

/// The address checks of `begin` at their limits: a range may end exactly
/// at 4 GiB, two ranges of one space may touch but not overlap.
#[test]
fn ranges_may_end_at_four_gib_and_touch() {
    let mut st = Storage::new();
    let mut w = world(&mut st);
    w.table
        .init_range(
            FrameRange::from_bytes(pa(0x5000), 0x2000).unwrap(),
            FrameState::Kernel(KernelUse::Plain),
            true,
        )
        .unwrap();
    w.maps
        .map(K, 0xffff_f000, 0x5000, PageSizeKind::Small, true);
    w.maps.map(K, 0xc100_0000, ITCM, PageSizeKind::Small, false);
    // The last page of the address space: its range ends at 4 GiB.
    let x = w.begin(w.req(K, 0xffff_f000, 0xc100_0000, 1, Rights::RW));
    assert!(x.is_ok(), "{:?}", x.err());
    let mut x = x.unwrap();
    w.run(&mut x);
    // One page further does not fit.
    assert_eq!(
        w.begin(w.req(K, 0xffff_f000, 0xc100_0000, 2, Rights::RW))
            .err(),
        Some(ExchangeError::BadCount(2))
    );

    // Touching ranges in one space, either way round.
    let mut st = Storage::new();
    let mut w = world(&mut st);
    kernel_pages(&mut w);
    w.maps.map(K, 0xc000_4000, ITCM, PageSizeKind::Small, false);
    w.maps
        .map(K, 0xc000_7000, ITCM + 0x1000, PageSizeKind::Small, false);
    // The target right after the resource, and right before it.
    for (t, r) in [(0xc000_5000, 0xc000_4000), (0xc000_6000, 0xc000_7000)] {
        let mut x = w.begin(w.req(K, t, r, 1, Rights::RW)).unwrap();
        assert_eq!(w.cancel(&mut x), Ok(0));
        assert!(!w.any_busy());
    }
    // One page more on either side overlaps.
    for (t, r) in [(0xc000_5000, 0xc000_4000), (0xc000_6000, 0xc000_5000)] {
        let req = w.req(K, t, r, 2, Rights::RW);
        assert_eq!(w.begin(req).err(), Some(ExchangeError::Overlap));
    }
}

/// Pages whose frames are not contiguous: at most `MAX_SCATTERED` of them
/// in one exchange.
#[test]
fn at_most_max_scattered_pages_are_scattered() {
    use crate::exchange::MAX_SCATTERED;
    let mut st = Storage::new();
    let mut w = world(&mut st);
    let n = MAX_SCATTERED + 1;
    for i in 0..n {
        // Every other frame: never contiguous.
        w.user_page(1, 0x10_0000 + i * 0x1000, 0x20_0000 + i * 0x2000, true);
        w.maps.map(
            us(1),
            0x20_0000 + i * 0x1000,
            0x30_0000 + i * 0x1000,
            PageSizeKind::Small,
            false,
        );
    }
    let r = w.req(us(1), 0x10_0000, 0x20_0000, n, Rights::RW);
    assert_eq!(w.begin(r).err(), Some(ExchangeError::Scattered(n)));
    assert!(!w.any_busy());
    let r = w.req(us(1), 0x10_0000, 0x20_0000, MAX_SCATTERED, Rights::RW);
    let mut x = w.begin(r).unwrap();
    w.fill(us(1), 0x10_0000, MAX_SCATTERED * 0x1000, 5);
    w.run(&mut x);
    for i in 0..MAX_SCATTERED {
        assert_eq!(
            w.maps_translate(us(1), 0x10_0000 + i * 0x1000),
            0x30_0000 + i * 0x1000
        );
    }
    for i in (0..MAX_SCATTERED * 0x1000).step_by(0x3ff) {
        assert_eq!(
            w.hw.load(&w.maps, us(1), 0x10_0000 + i).unwrap(),
            content(i, 5)
        );
    }
}

/// A page directory moves whole: 16 KiB of which every frame is a
/// directory frame. Three directory frames and a plain kernel page are
/// refused, and nothing is left busy.
#[test]
fn a_directory_with_a_foreign_frame_is_refused() {
    let mut st = Storage::new();
    let mut w = world(&mut st);
    directory_frames(&mut w);
    w.table
        .init_range(
            Frame::from_start(pa(0x2_3000)).unwrap(),
            FrameState::Kernel(KernelUse::Plain),
            true,
        )
        .unwrap();
    let r = w.req(K, 0xc002_0000, 0xc200_0000, 4, Rights::RW);
    assert_eq!(w.begin(r).err(), Some(ExchangeError::PartialDirectory));
    assert!(!w.table.desc(pa(0x2_0000)).unwrap().is_busy());
    // The same four frames, all directory frames: accepted.
    w.table
        .init_range(
            Frame::from_start(pa(0x2_3000)).unwrap(),
            FrameState::Kernel(KernelUse::PageDirectory),
            true,
        )
        .unwrap();
    let mut x = w.begin(r).unwrap();
    w.run(&mut x);
    assert_eq!(
        w.state(ITCM + 0x7000),
        FrameState::Kernel(KernelUse::PageDirectory)
    );
}

/// `protects` answers for the frames of the page being copied while its
/// mappings are write-protected, and for nothing else, never before the
/// first step or after the last.
#[test]
fn protects_names_exactly_the_frames_of_the_protected_page() {
    let mut st = Storage::new();
    let mut w = world(&mut st);
    w.user_page(1, 0x8000, 0x5000, true);
    w.maps
        .map(us(1), 0x10_0000, ITCM + 0x1000, PageSizeKind::Small, false);
    let mut x = w
        .begin(w.req(us(1), 0x8000, 0x10_0000, 1, Rights::RW))
        .unwrap();
    let frames = [
        0x4fff,
        0x5000,
        0x5ffc,
        0x6000,
        ITCM,
        ITCM + 0x1000,
        ITCM + 0x1ffc,
        ITCM + 0x2000,
    ];
    assert!(
        frames.iter().all(|&f| !x.protects(pa(f))),
        "before the first step"
    );
    w.step(&mut x).unwrap();
    let now: Vec<bool> = frames.iter().map(|&f| x.protects(pa(f))).collect();
    assert_eq!(now, [false, true, true, false, false, true, true, false]);
    w.run(&mut x);
    assert!(
        frames.iter().all(|&f| !x.protects(pa(f))),
        "after the last step"
    );

    // Nothing writable mapped: nothing protected, nothing to wait for.
    let mut st = Storage::new();
    let mut w = world(&mut st);
    w.user_page(1, 0x8000, 0x5000, false);
    w.maps
        .map(us(1), 0x10_0000, ITCM + 0x1000, PageSizeKind::Small, false);
    let mut x = w
        .begin(w.req(us(1), 0x8000, 0x10_0000, 1, Rights::RW))
        .unwrap();
    w.step(&mut x).unwrap();
    assert!(!x.protects(pa(0x5000)) && !x.protects(pa(ITCM + 0x1000)));
}

/// A step after the kernel changed its mappings checks them again, and
/// counts exactly the calls it made: two translations and one collection
/// of each side's mappings.
#[test]
fn a_recheck_counts_its_kernel_calls() {
    let mut totals = vec![];
    for change in [false, true] {
        let mut st = Storage::new();
        let mut w = world(&mut st);
        w.user_page(1, 0x8000, 0x5000, true);
        w.maps
            .map(us(1), 0x10_0000, ITCM, PageSizeKind::Small, false);
        let mut x = w
            .begin(w.req(us(1), 0x8000, 0x10_0000, 1, Rights::RW))
            .unwrap();
        w.step(&mut x).unwrap();
        if change {
            // Unrelated to the exchange, but a new generation.
            w.maps.map(us(2), 0x8000, 0x7000, PageSizeKind::Small, true);
        }
        w.run(&mut x);
        totals.push(x.stats().total_ops);
    }
    assert_eq!(totals[1], totals[0] + 4, "{totals:?}");
}

impl World<'_> {
    fn finish_page(&mut self, x: &mut Exchange) -> Result<Progress, ExchangeError> {
        // SAFETY: as in `change_state`.
        unsafe { x.finish_page(&mut self.table, &mut self.maps, &mut self.hw, &mut self.irq) }
    }
}

/// The frames of a later page are checked when it starts: both still
/// busy, the old one still what the caller may move, the new one still a
/// page resource. Nothing in the safe API can change a busy frame; a
/// kernel bug that does is refused, not acted on.
#[test]
fn a_later_page_whose_frames_changed_is_refused() {
    type Corrupt = fn(FrameDesc) -> FrameDesc;
    let cases: [(u32, Corrupt, u32); 3] = [
        (0x6000, |d| d.with_busy(false), 0x9000),
        (ITCM + 0x1000, |d| d.with_busy(false), 0x10_1000),
        (
            ITCM + 0x1000,
            |d| d.with_state_of(FrameDesc::kernel(KernelUse::Plain)),
            0x10_1000,
        ),
    ];
    for (frame, corrupt, at) in cases {
        let mut st = Storage::new();
        let mut w = world(&mut st);
        w.user_page(1, 0x8000, 0x5000, true);
        w.user_page(1, 0x9000, 0x6000, true);
        w.maps
            .map(us(1), 0x10_0000, ITCM, PageSizeKind::Small, false);
        w.maps
            .map(us(1), 0x10_1000, ITCM + 0x1000, PageSizeKind::Small, false);
        let mut x = w
            .begin(w.req(us(1), 0x8000, 0x10_0000, 2, Rights::RW))
            .unwrap();
        assert_eq!(w.finish_page(&mut x), Ok(Progress::Pending));
        let d = w.table.desc(pa(frame)).unwrap();
        w.table.set(pa(frame), corrupt(d)).unwrap();
        assert_eq!(w.step(&mut x), Err(ExchangeError::Changed(va(at))));
    }
}

/// A directory move re-checks every frame of the directory at every step:
/// one that lost its busy flag or its state is refused.
#[test]
fn a_held_directory_frame_that_changed_is_refused() {
    type Corrupt = fn(FrameDesc) -> FrameDesc;
    let cases: [(u32, Corrupt); 3] = [
        (0x2_3000, |d| d.with_busy(false)),
        (0x2_3000, |d| {
            d.with_state_of(FrameDesc::kernel(KernelUse::Plain))
        }),
        (ITCM + 0x7000, |d| d.with_busy(false)),
    ];
    for (frame, corrupt) in cases {
        let mut st = Storage::new();
        let mut w = world(&mut st);
        directory_frames(&mut w);
        let mut x = w
            .begin(w.req(K, 0xc002_0000, 0xc200_0000, 4, Rights::RW))
            .unwrap();
        w.step(&mut x).unwrap();
        w.step(&mut x).unwrap();
        let d = w.table.desc(pa(frame)).unwrap();
        w.table.set(pa(frame), corrupt(d)).unwrap();
        assert!(
            matches!(w.step(&mut x), Err(ExchangeError::Changed(_))),
            "{frame:#x}"
        );
    }
}

/// Without a mapping generation every step checks the mappings again (two
/// translations and one walk of each side's mappings) and its copy asks
/// for each side's mappings instead of using the remembered lists: six
/// kernel calls more than a step of the same exchange under an unchanged
/// generation.
#[test]
fn without_a_generation_a_step_costs_its_recheck() {
    let mut per_step = vec![];
    for generation in [Some(0), None] {
        let mut st = Storage::new();
        let mut w = world(&mut st);
        w.maps.generation = generation;
        w.user_page(1, 0x8000, 0x5000, true);
        w.maps
            .map(us(1), 0x10_0000, ITCM, PageSizeKind::Small, false);
        let mut x = w
            .begin(w.req(us(1), 0x8000, 0x10_0000, 1, Rights::RW))
            .unwrap();
        w.step(&mut x).unwrap();
        let before = x.stats().total_ops;
        w.step(&mut x).unwrap();
        per_step.push(x.stats().total_ops - before);
    }
    assert_eq!(per_step[1], per_step[0] + 6, "{per_step:?}");
}

/// A large page's sixteen frames are checked as a run when its first step
/// starts: a frame in the middle that changed since `begin` (lost its busy
/// flag, or became a kernel page) is refused on either side.
#[test]
fn a_large_page_with_a_changed_frame_is_refused() {
    type Corrupt = fn(FrameDesc) -> FrameDesc;
    let unbusy: Corrupt = |d| d.with_busy(false);
    let kernel: Corrupt = |d| d.with_state_of(FrameDesc::kernel(KernelUse::Plain));
    for (frame, at, corrupt) in [
        (0x10_3000, 0x1_0000, unbusy),
        (0x20_5000, 0x50_0000, unbusy),
        (0x10_3000, 0x1_0000, kernel),
        (0x20_5000, 0x50_0000, kernel),
    ] {
        let mut st = Storage::new();
        let mut w = world(&mut st);
        w.table
            .init_range(
                FrameRange::from_bytes(pa(0x10_0000), 0x1_0000).unwrap(),
                FrameState::User(sp(1)),
                true,
            )
            .unwrap();
        w.maps
            .map(us(1), 0x1_0000, 0x10_0000, PageSizeKind::Large, true);
        w.maps
            .map(us(1), 0x50_0000, 0x20_0000, PageSizeKind::Large, false);
        let mut r = w.req(us(1), 0x1_0000, 0x50_0000, 1, Rights::RW);
        r.size = PageSizeKind::Large;
        let mut x = w.begin(r).unwrap();
        let d = w.table.desc(pa(frame)).unwrap();
        w.table.set(pa(frame), corrupt(d)).unwrap();
        assert_eq!(w.step(&mut x), Err(ExchangeError::Changed(va(at))));
    }
}

/// Runs `x` step by step and checks its own count of the work against
/// the doubles' count of the calls they received: in total, per masked
/// window and the number of windows.
fn run_counted(w: &mut World<'_>, x: &mut Exchange, cancel_after: Option<u32>, what: &str) {
    let (ops0, windows0) = (w.hw.ops.get(), w.irq.windows.len());
    let mut steps = 0;
    loop {
        if cancel_after == Some(steps) {
            w.cancel(x).unwrap();
            break;
        }
        steps += 1;
        if w.step(x).unwrap() == Progress::Done {
            break;
        }
    }
    let windows = &w.irq.windows[windows0..];
    let s = x.stats();
    assert_eq!(s.total_ops, w.hw.ops.get() - ops0, "total: {what}");
    assert_eq!(s.masked_windows as usize, windows.len(), "windows: {what}");
    assert_eq!(
        s.longest_masked_ops,
        windows.iter().copied().max().unwrap_or(0),
        "longest window of {windows:?}: {what}"
    );
}

/// `ExchangeStats` counts exactly the calls the kernel and the hardware
/// receive (the doubles count them too), with and without a mapping
/// generation, for every chunk size, read-only and writable pages, a page
/// mapped twice, two pages, a large page, page tables and a whole page
/// directory, and a cancelled exchange.
#[test]
fn the_statistics_count_every_call() {
    for generation in [Some(0), None] {
        let cases = [(true, 32), (true, 256), (false, 256), (true, 0x1000)];
        for ((writable, chunk), (count, cancel)) in cases
            .into_iter()
            .flat_map(|c| [(c, (1, None)), (c, (2, None)), (c, (2, Some(9)))])
        {
            let mut st = Storage::new();
            let mut w = world(&mut st);
            w.maps.generation = generation;
            w.user_page(1, 0x8000, 0x5000, writable);
            w.user_page(1, 0x9000, 0x6000, true);
            w.maps
                .map(us(2), 0x7000, 0x5000, PageSizeKind::Small, false);
            w.maps
                .map(us(1), 0x10_0000, ITCM, PageSizeKind::Small, false);
            w.maps
                .map(us(1), 0x10_1000, ITCM + 0x1000, PageSizeKind::Small, false);
            let r = w.req(us(1), 0x8000, 0x10_0000, count, Rights::RW);
            let mut x = Exchange::begin(&mut w.table, &w.maps, r, chunk).unwrap();
            let what = std::format!("{generation:?} {writable} {chunk} {count} {cancel:?}");
            run_counted(&mut w, &mut x, cancel, &what);
        }
        // A large page.
        let mut st = Storage::new();
        let mut w = world(&mut st);
        w.maps.generation = generation;
        w.table
            .init_range(
                FrameRange::from_bytes(pa(0x10_0000), 0x1_0000).unwrap(),
                FrameState::User(sp(1)),
                true,
            )
            .unwrap();
        w.maps
            .map(us(1), 0x1_0000, 0x10_0000, PageSizeKind::Large, true);
        w.maps
            .map(us(1), 0x50_0000, 0x20_0000, PageSizeKind::Large, false);
        let mut r = w.req(us(1), 0x1_0000, 0x50_0000, 1, Rights::RW);
        r.size = PageSizeKind::Large;
        let mut x = w.begin(r).unwrap();
        run_counted(&mut w, &mut x, None, "large page");
        // Page tables, then the page directory, moved and cancelled.
        for cancel in [None, Some(3)] {
            let mut st = Storage::new();
            let mut w = world(&mut st);
            w.maps.generation = generation;
            w.table
                .init_range(
                    Frame::from_start(pa(0x1_0000)).unwrap(),
                    FrameState::Kernel(KernelUse::PageTable),
                    true,
                )
                .unwrap();
            w.maps
                .map(K, 0xc001_0000, 0x1_0000, PageSizeKind::Small, true);
            w.maps.l1 = vec![(0x300, 0x1_0400)];
            w.maps.map(K, 0xc100_0000, DTCM, PageSizeKind::Small, false);
            let mut x = w
                .begin(w.req(K, 0xc001_0000, 0xc100_0000, 1, Rights::RW))
                .unwrap();
            run_counted(&mut w, &mut x, cancel, "page tables");
            directory_frames(&mut w);
            w.maps.dirs = vec![(us(1), 0x2_0000)];
            w.hw.ttbr = 0x2_0000;
            let mut x = w
                .begin(w.req(K, 0xc002_0000, 0xc200_0000, 4, Rights::RW))
                .unwrap();
            run_counted(&mut w, &mut x, cancel.map(|_| 40), "directory");
        }
    }
}

/// A RAM page read during its copy (clean lines filled from the old frame
/// at the target's addresses) and written after the exchange: the write
/// reaches the new frame, whether the exchange ran to its end or was
/// cancelled during its flush. Without the flush after the switch, the
/// store would hit a line still tagged with the old frame and be written
/// back there: a lost write.
#[test]
fn lines_filled_during_the_copy_never_take_a_later_write() {
    use mmu_armv5::maint::CacheMaintenance;
    // Steps before the cancel: 0x1000 / 256 = 16 copy steps, then the
    // switch joins the first flush chunk; 17 and 20 are in the flush.
    for cancel_after in [None, Some(17), Some(20)] {
        let mut st = Storage::new();
        let mut w = world(&mut st);
        w.user_page(1, 0x8000, 0x5000, true);
        w.maps
            .map(us(1), 0x20_0000, 0x30_0000, PageSizeKind::Small, false);
        w.fill(us(1), 0x8000, 0x1000, 9);
        w.hw.clean_invalidate_dcache();
        let mut x = w
            .begin(w.req(us(1), 0x8000, 0x20_0000, 1, Rights::RW))
            .unwrap();
        let mut steps = 0;
        loop {
            if cancel_after == Some(steps) {
                w.cancel(&mut x).unwrap();
                break;
            }
            steps += 1;
            // Reads go on during the copy: every line of the page filled.
            for off in (0..0x1000).step_by(32) {
                let _ = w.hw.load(&w.maps, us(1), 0x8000 + off);
                let _ = w.hw.load(&w.maps, us(1), 0x20_0000 + off);
            }
            if w.step(&mut x).unwrap() == Progress::Done {
                break;
            }
        }
        assert_eq!(
            w.maps_translate(us(1), 0x8000),
            0x30_0000,
            "{cancel_after:?}"
        );
        for off in (0..0x1000).step_by(32) {
            w.hw.store(&w.maps, us(1), 0x8000 + off, 0xab).unwrap();
        }
        w.hw.clean_invalidate_dcache();
        for off in (0..0x1000).step_by(32) {
            assert_eq!(
                w.hw.phys(0x30_0000 + off),
                0xab,
                "{cancel_after:?} {off:#x}"
            );
            assert_eq!(
                w.hw.phys(0x5000 + off),
                content(off, 9),
                "{cancel_after:?} {off:#x}"
            );
        }
    }
}

/// A cancel uses the mapping lists its page collected only while the
/// kernel's generation is unchanged; after a change it asks again.
#[test]
fn a_cancel_asks_for_the_mappings_again_only_after_a_change() {
    for change in [false, true] {
        let mut st = Storage::new();
        let mut w = world(&mut st);
        w.user_page(1, 0x8000, 0x5000, true);
        w.maps
            .map(us(1), 0x20_0000, 0x30_0000, PageSizeKind::Small, false);
        let mut x = w
            .begin(w.req(us(1), 0x8000, 0x20_0000, 1, Rights::RW))
            .unwrap();
        for _ in 0..18 {
            w.step(&mut x).unwrap();
        }
        if change {
            w.maps
                .map(us(2), 0x4000, 0x6000, PageSizeKind::Small, false);
        }
        let walks = w.maps.walks.get();
        w.cancel(&mut x).unwrap();
        assert_eq!(w.maps.walks.get() > walks, change, "change {change}");
    }
}

/// Cancelled before a later page started, the exchange releases that
/// page's frames only if they are still what it holds: a frame whose
/// state changed under it (a kernel bug) stays busy.
#[test]
fn a_cancel_releases_only_untouched_frames_it_holds() {
    let mut st = Storage::new();
    let mut w = world(&mut st);
    w.user_page(1, 0x8000, 0x5000, true);
    w.user_page(1, 0x9000, 0x6000, true);
    w.maps
        .map(us(1), 0x10_0000, ITCM, PageSizeKind::Small, false);
    w.maps
        .map(us(1), 0x10_1000, ITCM + 0x1000, PageSizeKind::Small, false);
    let mut x = w
        .begin(w.req(us(1), 0x8000, 0x10_0000, 2, Rights::RW))
        .unwrap();
    w.step(&mut x).unwrap();
    let d = w.table.desc(pa(0x6000)).unwrap();
    let foreign = d.with_state_of(FrameDesc::kernel(KernelUse::Plain));
    w.table.set(pa(0x6000), foreign).unwrap();
    w.cancel(&mut x).unwrap();
    assert_eq!(w.table.desc(pa(0x6000)).unwrap(), foreign);
    assert!(!w.table.desc(pa(ITCM + 0x1000)).unwrap().is_busy());
    assert!(!w.table.desc(pa(0x5000)).unwrap().is_busy());
}

/// A page directory four pages long, kernel-mapped at 0xc002_0000 (frames
/// 0x2_0000..) with its ITCM resource at 0xc200_0000.
fn directory_frames(w: &mut World<'_>) {
    w.table
        .init_range(
            FrameRange::from_bytes(pa(0x2_0000), 0x4000).unwrap(),
            FrameState::Kernel(KernelUse::PageDirectory),
            true,
        )
        .unwrap();
    for i in 0..4 {
        w.maps.map(
            K,
            0xc002_0000 + i * 0x1000,
            0x2_0000 + i * 0x1000,
            PageSizeKind::Small,
            true,
        );
        w.maps.map(
            K,
            0xc200_0000 + i * 0x1000,
            ITCM + 0x4000 + i * 0x1000,
            PageSizeKind::Small,
            false,
        );
    }
}

/// [`directory_frames`], `seed` in the directory, the directory of task 1
/// and the TTB's; the request that moves it.
fn directory_world(w: &mut World<'_>, seed: u8) -> ExchangeRequest {
    directory_frames(w);
    w.fill(K, 0xc002_0000, 0x4000, seed);
    w.maps.dirs = vec![(us(1), 0x2_0000)];
    w.hw.ttbr = 0x2_0000 | 0x18;
    w.req(K, 0xc002_0000, 0xc200_0000, 4, Rights::RW)
}

/// A directory move cancelled after some pages were switched, with those
/// pages read in between (lines filled from the new frames at the target's
/// addresses): switched back, a later write to them reaches the old frames.
#[test]
fn a_directory_switched_back_keeps_later_writes() {
    use mmu_armv5::maint::CacheMaintenance;
    for pages in [1, 2] {
        let mut st = Storage::new();
        let mut w = world(&mut st);
        let r = directory_world(&mut w, 21);
        w.hw.clean_invalidate_dcache();
        let mut x = w.begin(r).unwrap();
        for _ in 0..pages {
            w.finish_page(&mut x).unwrap();
        }
        for off in (0..0x4000).step_by(32) {
            w.hw.load(&w.maps, K, 0xc002_0000 + off).unwrap();
        }
        assert_eq!(w.cancel(&mut x), Ok(0));
        assert_eq!(w.maps_translate(K, 0xc002_0000), 0x2_0000);
        for off in (0..0x4000).step_by(32) {
            w.hw.store(&w.maps, K, 0xc002_0000 + off, 0x5a).unwrap();
        }
        w.hw.clean_invalidate_dcache();
        for off in (0..0x4000).step_by(32) {
            assert_eq!(w.hw.phys(0x2_0000 + off), 0x5a, "{pages} pages, {off:#x}");
        }
    }
}

/// Cancelled after its last switch (the TTB moved), a directory move is
/// finished, its flush included: a later write reaches the new frames.
#[test]
fn a_directory_cancelled_after_its_last_switch_is_finished() {
    use mmu_armv5::maint::CacheMaintenance;
    for extra in [0, 3] {
        let mut st = Storage::new();
        let mut w = world(&mut st);
        let r = directory_world(&mut w, 22);
        w.hw.clean_invalidate_dcache();
        let mut x = w.begin(r).unwrap();
        while w.hw.ttbr == 0x2_0000 | 0x18 {
            for off in (0..0x4000).step_by(32) {
                w.hw.load(&w.maps, K, 0xc002_0000 + off).unwrap();
            }
            w.step(&mut x).unwrap();
        }
        for _ in 0..extra {
            w.step(&mut x).unwrap();
        }
        assert_eq!(w.cancel(&mut x), Ok(4));
        assert_eq!(w.hw.ttbr, (ITCM + 0x4000) | 0x18);
        for off in (0..0x4000).step_by(32) {
            w.hw.store(&w.maps, K, 0xc002_0000 + off, 0xa6).unwrap();
        }
        w.hw.clean_invalidate_dcache();
        for off in (0..0x4000).step_by(32) {
            assert_eq!(w.hw.phys(ITCM + 0x4000 + off), 0xa6, "{extra} {off:#x}");
            assert_eq!(
                w.hw.phys(0x2_0000 + off),
                content(off, 22),
                "{extra} {off:#x}"
            );
        }
        assert!(!w.any_busy());
    }
}

/// With a mapping generation, a page's mappings are asked for once per
/// side when it starts; every later use (copy, switch, flush, restore)
/// takes the remembered lists.
#[test]
fn remembered_mappings_are_asked_for_once_per_page_side() {
    let mut st = Storage::new();
    let mut w = world(&mut st);
    w.user_page(1, 0x8000, 0x5000, true);
    w.user_page(1, 0x9000, 0x6000, true);
    w.maps
        .map(us(1), 0x10_0000, ITCM, PageSizeKind::Small, false);
    w.maps
        .map(us(1), 0x10_1000, ITCM + 0x1000, PageSizeKind::Small, false);
    let mut x = w
        .begin(w.req(us(1), 0x8000, 0x10_0000, 2, Rights::RW))
        .unwrap();
    let walks = w.maps.walks.get();
    w.run(&mut x);
    assert_eq!(w.maps.walks.get() - walks, 4);
}

/// A large kernel page of which one frame holds second-level tables (the
/// others plain kernel pages): the first-level entries pointing into that
/// frame follow it, wherever it lies in the page.
#[test]
fn a_large_page_moves_the_tables_in_any_of_its_frames() {
    for table_frame in [0u32, 2] {
        let mut st = Storage::new();
        let mut w = world(&mut st);
        w.table
            .init_range(
                FrameRange::from_bytes(pa(0x10_0000), 0x1_0000).unwrap(),
                FrameState::Kernel(KernelUse::Plain),
                true,
            )
            .unwrap();
        let t = 0x10_0000 + table_frame * 0x1000;
        w.table
            .init_range(
                Frame::from_start(pa(t)).unwrap(),
                FrameState::Kernel(KernelUse::PageTable),
                true,
            )
            .unwrap();
        w.maps
            .map(K, 0xc010_0000, 0x10_0000, PageSizeKind::Large, true);
        w.maps
            .map(K, 0xc050_0000, 0x20_0000, PageSizeKind::Large, false);
        w.maps.l1 = vec![(0x300, t + 0x400), (0x301, 0x2_0000)];
        let mut r = w.req(K, 0xc010_0000, 0xc050_0000, 1, Rights::RW);
        r.size = PageSizeKind::Large;
        let mut x = w.begin(r).unwrap();
        w.run(&mut x);
        let moved = 0x20_0000 + table_frame * 0x1000;
        assert_eq!(w.maps.l1, vec![(0x300, moved + 0x400), (0x301, 0x2_0000)]);
        assert_eq!(w.state(moved), FrameState::Kernel(KernelUse::PageTable));
    }
}

/// A directory move cancelled with a switched page whose frame changed
/// under it (a kernel bug): that page is left as it is, the others are
/// switched back.
#[test]
fn a_directory_cancel_leaves_a_changed_page_alone() {
    let mut st = Storage::new();
    let mut w = world(&mut st);
    let r = directory_world(&mut w, 23);
    let mut x = w.begin(r).unwrap();
    w.finish_page(&mut x).unwrap();
    w.finish_page(&mut x).unwrap();
    // Page 1's new frame (switched: it holds the directory page now).
    let f = ITCM + 0x5000;
    let d = w.table.desc(pa(f)).unwrap();
    w.table
        .set(pa(f), d.with_state_of(FrameDesc::kernel(KernelUse::Plain)))
        .unwrap();
    assert_eq!(w.cancel(&mut x), Ok(0));
    assert_eq!(w.maps_translate(K, 0xc002_0000), 0x2_0000);
    assert_eq!(w.maps_translate(K, 0xc002_1000), ITCM + 0x5000);
}

impl World<'_> {
    /// Loads every line of `[v, v + len)` in `space` into the D-cache.
    fn load_lines(&mut self, space: AddressSpace, v: u32, len: u32) {
        for off in (0..len).step_by(32) {
            self.hw.load(&self.maps, space, v + off).unwrap();
        }
    }
    /// Whether every line of `[v, v + len)` in `space` is still cached.
    fn all_cached(&self, space: AddressSpace, v: u32, len: u32) -> bool {
        (0..len)
            .step_by(32)
            .all(|off| self.hw.cached(self.maps.mva(space, v + off)))
    }
}

/// An exchange's cache maintenance stays inside its pages: the lines of
/// the pages next to the target and the resource are still cached after
/// it ran, or was cancelled in its copy or in its flush.
#[test]
fn maintenance_stays_inside_the_exchanged_pages() {
    for cancel_after in [None, Some(3), Some(17), Some(20)] {
        let mut st = Storage::new();
        let mut w = world(&mut st);
        w.user_page(1, 0x8000, 0x5000, true);
        w.user_page(1, 0x9000, 0x6000, true);
        w.maps
            .map(us(1), 0x20_0000, 0x30_0000, PageSizeKind::Small, false);
        w.maps
            .map(us(1), 0x20_1000, 0x30_1000, PageSizeKind::Small, false);
        let mut x = w
            .begin(w.req(us(1), 0x8000, 0x20_0000, 1, Rights::RW))
            .unwrap();
        w.load_lines(us(1), 0x9000, 0x1000);
        w.load_lines(us(1), 0x20_1000, 0x1000);
        let mut steps = 0;
        loop {
            if cancel_after == Some(steps) {
                w.cancel(&mut x).unwrap();
                break;
            }
            steps += 1;
            if w.step(&mut x).unwrap() == Progress::Done {
                break;
            }
        }
        assert!(w.all_cached(us(1), 0x9000, 0x1000), "{cancel_after:?}");
        assert!(w.all_cached(us(1), 0x20_1000, 0x1000), "{cancel_after:?}");
    }
}

/// The same for a page directory: finished by a cancel after its last
/// switch, the page after it keeps its lines; switched back by a cancel
/// after two pages, the pages never switched keep theirs.
#[test]
fn directory_maintenance_stays_inside_the_switched_pages() {
    // Cancelled after the last switch.
    let mut st = Storage::new();
    let mut w = world(&mut st);
    let r = directory_world(&mut w, 31);
    w.table
        .init_range(
            Frame::from_start(pa(0x2_4000)).unwrap(),
            FrameState::Kernel(KernelUse::Plain),
            true,
        )
        .unwrap();
    w.maps
        .map(K, 0xc002_4000, 0x2_4000, PageSizeKind::Small, true);
    let mut x = w.begin(r).unwrap();
    while w.hw.ttbr == 0x2_0000 | 0x18 {
        w.step(&mut x).unwrap();
    }
    w.load_lines(K, 0xc002_4000, 0x1000);
    assert_eq!(w.cancel(&mut x), Ok(4));
    assert!(w.all_cached(K, 0xc002_4000, 0x1000));

    // Cancelled after two of the four pages: pages 2 and 3 were never
    // switched, their lines stay.
    let mut st = Storage::new();
    let mut w = world(&mut st);
    let r = directory_world(&mut w, 32);
    let mut x = w.begin(r).unwrap();
    w.finish_page(&mut x).unwrap();
    w.finish_page(&mut x).unwrap();
    w.load_lines(K, 0xc002_2000, 0x2000);
    assert_eq!(w.cancel(&mut x), Ok(0));
    assert!(w.all_cached(K, 0xc002_2000, 0x2000));
}

/// A cancel during a page's flush counts that page as exchanged; one
/// during its copy does not.
#[test]
fn a_cancel_counts_the_switched_page() {
    for (steps, exchanged) in [(3, 0), (17, 1), (20, 1)] {
        let mut st = Storage::new();
        let mut w = world(&mut st);
        w.user_page(1, 0x8000, 0x5000, true);
        w.user_page(1, 0x9000, 0x6000, true);
        w.maps
            .map(us(1), 0x10_0000, ITCM, PageSizeKind::Small, false);
        w.maps
            .map(us(1), 0x10_1000, ITCM + 0x1000, PageSizeKind::Small, false);
        let mut x = w
            .begin(w.req(us(1), 0x8000, 0x10_0000, 2, Rights::RW))
            .unwrap();
        for _ in 0..steps {
            w.step(&mut x).unwrap();
        }
        assert_eq!(w.cancel(&mut x), Ok(exchanged), "after {steps} steps");
        assert!(!w.any_busy());
    }
}

/// A cancel leaves a frame of the current page alone once it is no
/// longer as the exchange left it (here a resource pinned under it, a
/// kernel bug): still busy afterwards, not released as if untouched.
#[test]
fn a_cancel_leaves_a_changed_frame_of_the_current_page_busy() {
    for steps in [3, 20] {
        let mut st = Storage::new();
        let mut w = world(&mut st);
        w.user_page(1, 0x8000, 0x5000, true);
        w.maps
            .map(us(1), 0x10_0000, ITCM, PageSizeKind::Small, false);
        let mut x = w
            .begin(w.req(us(1), 0x8000, 0x10_0000, 1, Rights::RW))
            .unwrap();
        for _ in 0..steps {
            w.step(&mut x).unwrap();
        }
        // The frame holding the resource side now.
        let f = if steps < 17 { ITCM } else { 0x5000 };
        let d = w.table.desc(pa(f)).unwrap();
        let pinned = d.with_movable(false);
        w.table.set(pa(f), pinned).unwrap();
        w.cancel(&mut x).unwrap();
        assert_eq!(w.table.desc(pa(f)).unwrap(), pinned, "after {steps} steps");
    }
}
