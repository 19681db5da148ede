//! Behaviour tests of the operations and the exchange on the host doubles.

use crate::exchange::{Exchange, ExchangeError, ExchangeRequest, Progress, DEFAULT_CHUNK};
use crate::frame::{FrameDesc, FrameState, FrameTable, KernelUse, SectionSummary, SpaceId};
use crate::mappings::{AddressSpace, PageSize};
use crate::ops::{self, OpError, StateRequest};
use crate::region::{InitialUse, Location, Region, Rights};
use crate::testkit::{CpuFault, Hw, Irq, Maps, Ops};
use mmu_armv5::{PhysAddr, VirtAddr};
use proptest::prelude::*;
use std::boxed::Box;
use std::vec;

const ITCM: u32 = 0x0300_0000;
const DTCM: u32 = 0x0300_8000;
const DEV: u32 = 0x1010_0000;
const K: AddressSpace = AddressSpace::Kernel;

fn sp(n: u16) -> SpaceId {
    SpaceId::new(n).unwrap()
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

struct World {
    table: FrameTable<'static, 4>,
    maps: Maps,
    hw: Hw,
    irq: Irq,
}

fn world() -> World {
    let regions = [
        Region::new(pa(0), 4 << 20, Location::Ram, InitialUse::Resource).unwrap(),
        Region::new(pa(ITCM), 0x8000, Location::Itcm, InitialUse::Resource).unwrap(),
        Region::new(pa(DTCM), 0x8000, Location::Dtcm, InitialUse::Resource).unwrap(),
        Region::new(pa(DEV), 0x1000, Location::Device, InitialUse::Undefined).unwrap(),
    ];
    let f = Box::leak(
        vec![FrameDesc::default(); FrameTable::<4>::frames_needed(&regions)].into_boxed_slice(),
    );
    let s = Box::leak(
        vec![SectionSummary::default(); FrameTable::<4>::sections_needed(&regions)]
            .into_boxed_slice(),
    );
    let ops: Ops = Default::default();
    World {
        table: FrameTable::new(&regions, f, s).unwrap(),
        maps: Maps::new(ops.clone()),
        hw: Hw::new(ops.clone()),
        irq: Irq::new(ops),
    }
}

impl World {
    fn user_page(&mut self, space: u16, v: u32, p: u32, writable: bool) {
        self.table
            .init_range(pa(p), 0x1000, FrameState::User(sp(space)), true)
            .unwrap();
        self.maps.map(us(space), v, p, PageSize::Small, writable);
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
            size: PageSize::Small,
            count,
            rights,
        }
    }
    fn begin(&mut self, r: ExchangeRequest) -> Result<Exchange, ExchangeError> {
        Exchange::begin(&mut self.table, &self.maps, r, DEFAULT_CHUNK)
    }
    fn run(&mut self, x: &mut Exchange) {
        x.run(&mut self.table, &mut self.maps, &mut self.hw, &mut self.irq)
            .unwrap();
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
fn create_zeroes_a_resource_that_held_old_data() {
    let mut w = world();
    // A previous owner left data in memory and a dirty line in the cache.
    w.user_page(1, 0x8000, 0x5000, true);
    w.hw.load(&w.maps, us(1), 0x8000).unwrap();
    w.fill(us(1), 0x8000, 0x1000, 0xa5);
    assert!(w.hw.dirty_lines() > 0);
    ops::delete_user_page(&mut w.table, &w.maps, sp(1), va(0x8000)).unwrap();
    assert_eq!(w.state(0x5000), FrameState::Resource);
    // Space 2 receives the resource and creates a user page from it.
    w.maps.map(us(2), 0x8000, 0x5000, PageSize::Small, true);
    let f = ops::create_user_page(&mut w.table, &w.maps, &mut w.hw, sp(2), va(0x8000)).unwrap();
    assert_eq!(f, pa(0x5000));
    assert_eq!(w.state(0x5000), FrameState::User(sp(2)));
    for i in 0..0x1000 {
        assert_eq!(
            w.hw.load(&w.maps, us(2), 0x8000 + i).unwrap(),
            0,
            "byte {i}"
        );
        assert_eq!(
            w.hw.load(&w.maps, us(1), 0x8000 + i).unwrap(),
            0,
            "old alias byte {i}"
        );
    }
    // The old owner's dirty line was discarded, not written back over the zeroes.
    assert_eq!(w.hw.dirty_lines(), 0);
    for i in 0..0x1000 {
        assert_eq!(w.hw.phys(0x5000 + i), 0);
    }
}

#[test]
fn operation_permissions() {
    let mut w = world();
    w.user_page(1, 0x8000, 0x5000, true);
    w.maps.map(us(2), 0x8000, 0x5000, PageSize::Small, true);
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
        ops::create_user_page(&mut w.table, &w.maps, &mut w.hw, sp(1), va(0x8000)),
        Err(OpError::NotResource {
            frame: pa(0x5000),
            state: FrameState::User(sp(1))
        })
    );
    assert_eq!(
        ops::create_user_page(&mut w.table, &w.maps, &mut w.hw, sp(1), va(0x9000)),
        Err(OpError::NotMapped(va(0x9000)))
    );
    // Query works for anyone with a mapping.
    let q = ops::change_state(
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
            pa(0x6000),
            0x1000,
            FrameState::Kernel(KernelUse::Plain),
            true,
        )
        .unwrap();
    w.maps.map(us(1), 0xa000, 0x6000, PageSize::Small, false);
    w.maps.map(K, 0xc000_6000, 0x6000, PageSize::Small, true);
    assert_eq!(
        ops::change_state(
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
        ops::change_state(
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
        ops::change_state(
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
        ops::change_state(
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
    w.maps.map(K, 0xd000_0000, DEV, PageSize::Small, true);
    assert_eq!(
        ops::change_state(
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
        ops::change_state(
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

#[test]
fn frames_in_an_exchange_can_only_be_queried() {
    let mut w = world();
    w.user_page(1, 0x8000, 0x5000, true);
    w.maps.map(us(1), 0x10_0000, ITCM, PageSize::Small, false);
    let r = w.req(us(1), 0x8000, 0x10_0000, 1, Rights::RW);
    let mut x = w.begin(r).unwrap();
    assert_eq!(
        ops::delete_user_page(&mut w.table, &w.maps, sp(1), va(0x8000)),
        Err(OpError::Busy(pa(0x5000)))
    );
    assert_eq!(
        ops::create_user_page(&mut w.table, &w.maps, &mut w.hw, sp(1), va(0x10_0000)),
        Err(OpError::Busy(pa(ITCM)))
    );
    assert_eq!(w.begin(r).err(), Some(ExchangeError::Busy(pa(0x5000))));
    w.run(&mut x);
    assert!(x.is_done());
    assert_eq!(
        x.step(&mut w.table, &mut w.maps, &mut w.hw, &mut w.irq),
        Err(ExchangeError::Finished)
    );
    assert!(!w.any_busy());
}

// ------------------------------------------------------------- preconditions

#[test]
fn every_precondition_is_a_distinct_error() {
    use ExchangeError as E;
    let mut w = world();
    w.user_page(1, 0x8000, 0x5000, true);
    w.user_page(1, 0x9000, 0x6000, true);
    w.user_page(2, 0x8000, 0x7000, true);
    w.maps.map(us(1), 0x10_0000, ITCM, PageSize::Small, false);
    w.maps
        .map(us(1), 0x10_1000, ITCM + 0x1000, PageSize::Small, false);
    w.maps.map(us(1), 0x20_0000, DTCM, PageSize::Small, false);
    w.maps.map(us(1), 0x30_0000, DEV, PageSize::Small, true);
    w.maps
        .map(us(1), 0x40_0000, 0x3f_0000, PageSize::Small, false);
    let ok = w.req(us(1), 0x8000, 0x10_0000, 1, Rights::RX);
    let chk = |w: &mut World, r: ExchangeRequest, chunk: u32, e: ExchangeError| {
        assert_eq!(
            Exchange::begin(&mut w.table, &w.maps, r, chunk).err(),
            Some(e),
            "{r:?}"
        );
        assert!(!w.any_busy(), "a refused exchange left frames busy");
    };
    chk(&mut w, ok, 48, E::BadChunk(48));
    chk(&mut w, ok, 8192, E::BadChunk(8192));
    chk(
        &mut w,
        ExchangeRequest { count: 0, ..ok },
        256,
        E::BadCount(0),
    );
    chk(
        &mut w,
        ExchangeRequest {
            target: va(0x8800),
            ..ok
        },
        256,
        E::Misaligned(va(0x8800)),
    );
    chk(
        &mut w,
        ExchangeRequest {
            resource: va(0x10_0000),
            size: PageSize::Large,
            ..ok
        },
        256,
        E::Misaligned(va(0x8000)),
    );
    chk(
        &mut w,
        ExchangeRequest {
            resource: va(0x9000),
            count: 2,
            ..ok
        },
        256,
        E::Overlap,
    );
    chk(
        &mut w,
        ExchangeRequest {
            target_space: us(2),
            ..ok
        },
        256,
        E::NotPermitted,
    );
    chk(
        &mut w,
        ExchangeRequest {
            target: va(0xa000),
            ..ok
        },
        256,
        E::NotMapped(va(0xa000)),
    );
    chk(
        &mut w,
        ExchangeRequest { count: 3, ..ok },
        256,
        E::NotMapped(va(0xa000)),
    );
    chk(
        &mut w,
        ExchangeRequest {
            resource: va(0x10_2000),
            ..ok
        },
        256,
        E::NotMapped(va(0x10_2000)),
    );
    // Resource range mapped with a different size.
    w.maps
        .map(us(1), 0x50_0000, 0x20_0000, PageSize::Large, false);
    chk(
        &mut w,
        ExchangeRequest {
            resource: va(0x50_0000),
            ..ok
        },
        256,
        E::SizeMismatch {
            va: va(0x50_0000),
            mapped: PageSize::Large,
        },
    );
    // New page not a resource: the caller's other user page.
    chk(
        &mut w,
        ExchangeRequest {
            resource: va(0x9000),
            ..ok
        },
        256,
        E::NotResource {
            frame: pa(0x6000),
            state: FrameState::User(sp(1)),
        },
    );
    // Code into DTCM.
    chk(
        &mut w,
        ExchangeRequest {
            resource: va(0x20_0000),
            ..ok
        },
        256,
        E::RightsExceeded {
            frame: pa(DTCM),
            needed: Rights::RX,
            max: Rights::RW,
        },
    );
    // Data into DTCM is fine (checked below by running it).
    // Old page not movable: pinned (DMA) user page.
    w.table
        .init_range(pa(0x6000), 0x1000, FrameState::User(sp(1)), false)
        .unwrap();
    chk(
        &mut w,
        ExchangeRequest {
            target: va(0x9000),
            ..ok
        },
        256,
        E::NotMovable(pa(0x6000)),
    );
    // Old page is a resource / undefined.
    chk(
        &mut w,
        ExchangeRequest {
            target: va(0x40_0000),
            resource: va(0x10_0000),
            ..ok
        },
        256,
        E::NotInUse {
            frame: pa(0x3f_0000),
            state: FrameState::Resource,
        },
    );
    chk(
        &mut w,
        ExchangeRequest {
            target: va(0x30_0000),
            ..ok
        },
        256,
        E::NotInUse {
            frame: pa(DEV),
            state: FrameState::Undefined,
        },
    );
    // Another task's page, mapped into ours.
    w.maps.map(us(1), 0xb000, 0x7000, PageSize::Small, true);
    chk(
        &mut w,
        ExchangeRequest {
            target: va(0xb000),
            ..ok
        },
        256,
        E::NotOwner(pa(0x7000)),
    );
    // A kernel page, mapped into ours.
    w.table
        .init_range(
            pa(0xc000),
            0x1000,
            FrameState::Kernel(KernelUse::Plain),
            true,
        )
        .unwrap();
    w.maps.map(us(1), 0xc000, 0xc000, PageSize::Small, false);
    chk(
        &mut w,
        ExchangeRequest {
            target: va(0xc000),
            ..ok
        },
        256,
        E::KernelOnly(pa(0xc000)),
    );
    // The same resource frame twice in the resource range.
    w.user_page(1, 0xd000, 0xd000, true);
    w.maps
        .map(us(1), 0x60_0000, ITCM + 0x2000, PageSize::Small, false);
    w.maps
        .map(us(1), 0x60_1000, ITCM + 0x2000, PageSize::Small, false);
    w.user_page(1, 0xe000, 0xf000, true);
    chk(
        &mut w,
        ExchangeRequest {
            target: va(0xd000),
            resource: va(0x60_0000),
            count: 2,
            ..ok
        },
        256,
        E::Aliased(pa(ITCM + 0x2000)),
    );
    // Page tables: physically contiguous ranges only.
    w.table
        .init_range(
            pa(0x1_0000),
            0x1000,
            FrameState::Kernel(KernelUse::PageTable),
            true,
        )
        .unwrap();
    w.table
        .init_range(
            pa(0x1_2000),
            0x1000,
            FrameState::Kernel(KernelUse::PageTable),
            true,
        )
        .unwrap();
    w.maps.map(K, 0xc001_0000, 0x1_0000, PageSize::Small, true);
    w.maps.map(K, 0xc001_1000, 0x1_2000, PageSize::Small, true);
    w.maps
        .map(K, 0xc100_0000, ITCM + 0x4000, PageSize::Small, false);
    w.maps
        .map(K, 0xc100_1000, ITCM + 0x5000, PageSize::Small, false);
    let kr = w.req(K, 0xc001_0000, 0xc100_0000, 2, Rights::RW);
    chk(&mut w, kr, 256, E::NotContiguous);
    // Page directory: whole, 16 KiB aligned, alone.
    w.table
        .init_range(
            pa(0x2_0000),
            0x4000,
            FrameState::Kernel(KernelUse::PageDirectory),
            true,
        )
        .unwrap();
    for i in 0..4 {
        w.maps.map(
            K,
            0xc002_0000 + i * 0x1000,
            0x2_0000 + i * 0x1000,
            PageSize::Small,
            true,
        );
    }
    let dr = w.req(K, 0xc002_0000, 0xc100_0000, 2, Rights::RW);
    chk(&mut w, dr, 256, E::PartialDirectory);
    // Undescribed frames.
    w.maps
        .map(us(1), 0x70_0000, 0x0800_0000, PageSize::Small, true);
    chk(
        &mut w,
        ExchangeRequest {
            target: va(0x70_0000),
            ..ok
        },
        256,
        E::Frame(crate::frame::FrameError::NotDescribed(pa(0x0800_0000))),
    );
    // And the valid request still goes through.
    let mut x = w.begin(ok).unwrap();
    w.run(&mut x);
}

// ------------------------------------------------------------------ exchange

fn content(i: u32, seed: u8) -> u8 {
    seed.wrapping_add((i * 7) as u8)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]
    #[test]
    fn content_survives_exchange_and_exchange_back(seed: u8, chunk_log in 5u32..=12, dirty_upto in 0u32..0x1000) {
        let mut w = world();
        w.user_page(1, 0x8000, 0x5000, true);
        w.maps.map(us(1), 0x10_0000, DTCM, PageSize::Small, false);
        // Memory holds one version, the cache a newer one for part of the page.
        for i in 0..0x1000 { w.hw.set_phys(0x5000 + i, 0xee); }
        for i in 0..0x1000 { w.hw.load(&w.maps, us(1), 0x8000 + i).unwrap(); }
        w.fill(us(1), 0x8000, 0x1000, seed);
        let _ = dirty_upto;
        let chunk = 1 << chunk_log;
        let r = w.req(us(1), 0x8000, 0x10_0000, 1, Rights::RW);
        let mut x = Exchange::begin(&mut w.table, &w.maps, r, chunk).unwrap();
        w.run(&mut x);
        // The target now lives in the DTCM, byte for byte.
        prop_assert_eq!(w.maps_translate(us(1), 0x8000), DTCM);
        prop_assert_eq!(w.maps_translate(us(1), 0x10_0000), 0x5000);
        for i in 0..0x1000 {
            prop_assert_eq!(w.hw.phys(DTCM + i), content(i, seed));
            prop_assert_eq!(w.hw.load(&w.maps, us(1), 0x8000 + i).unwrap(), content(i, seed));
        }
        prop_assert_eq!(w.state(DTCM), FrameState::User(sp(1)));
        prop_assert_eq!(w.state(0x5000), FrameState::User(sp(1)));
        // Exchange back: the old frame must be a resource again first.
        ops::delete_user_page(&mut w.table, &w.maps, sp(1), va(0x10_0000)).unwrap();
        let r = w.req(us(1), 0x8000, 0x10_0000, 1, Rights::RW);
        let mut x = Exchange::begin(&mut w.table, &w.maps, r, chunk).unwrap();
        w.run(&mut x);
        prop_assert_eq!(w.maps_translate(us(1), 0x8000), 0x5000);
        for i in 0..0x1000 {
            prop_assert_eq!(w.hw.load(&w.maps, us(1), 0x8000 + i).unwrap(), content(i, seed));
        }
        // No masked window ever approaches a page copy (1024 words).
        let longest = w.irq.windows.iter().copied().max().unwrap_or(0);
        prop_assert!(longest <= chunk / 4 + 8, "longest window {} ops", longest);
        prop_assert_eq!(x.stats().longest_masked_ops, w.irq.windows.iter().copied().max().unwrap());
    }
}

impl World {
    fn maps_translate(&self, space: AddressSpace, v: u32) -> u32 {
        use crate::mappings::Mappings;
        self.maps.translate(space, va(v)).unwrap().page.as_u32()
    }
}

#[test]
fn every_mapping_in_every_space_follows_the_page() {
    let mut w = world();
    // Shared by tasks 1 and 2 (different FCSE PIDs, so different MVAs) and a kernel alias.
    w.user_page(1, 0x8000, 0x5000, true);
    w.maps.map(us(2), 0x4000, 0x5000, PageSize::Small, true);
    w.maps.map(K, 0xc000_5000, 0x5000, PageSize::Small, false);
    w.maps.map(us(1), 0x10_0000, ITCM, PageSize::Small, false);
    w.fill(us(2), 0x4000, 0x1000, 3);
    // Lines of every alias are in the cache before the exchange.
    for i in (0..0x1000).step_by(32) {
        w.hw.load(&w.maps, us(1), 0x8000 + i).unwrap();
        w.hw.load(&w.maps, K, 0xc000_5000 + i).unwrap();
    }
    let mut x = w
        .begin(w.req(us(1), 0x8000, 0x10_0000, 1, Rights::RW))
        .unwrap();
    w.run(&mut x);
    assert_eq!(w.maps_translate(us(1), 0x8000), ITCM);
    assert_eq!(w.maps_translate(us(2), 0x4000), ITCM);
    assert_eq!(w.maps_translate(K, 0xc000_5000), ITCM);
    for i in 0..0x1000 {
        assert_eq!(
            w.hw.load(&w.maps, us(1), 0x8000 + i).unwrap(),
            content(i, 3)
        );
        assert_eq!(
            w.hw.load(&w.maps, K, 0xc000_5000 + i).unwrap(),
            content(i, 3)
        );
    }
    // Write access came back to the mappings that had it, and only those.
    w.hw.store(&w.maps, us(2), 0x4010, 0x77).unwrap();
    assert_eq!(
        w.hw.store(&w.maps, K, 0xc000_5010, 1),
        Err(CpuFault::Permission(pa(ITCM)))
    );
    // (Task 1 reads it only after its own alias is flushed: shared writable
    // pages at different MVAs are the VIVT alias problem, not the exchange's.)
    assert_eq!(w.hw.load(&w.maps, us(2), 0x4010).unwrap(), 0x77);
    assert_eq!(w.hw.phys(ITCM + 0x10), 0x77);
    assert_eq!(w.hw.phys(0x5010), content(0x10, 3));
}

#[test]
fn a_write_during_a_chunked_exchange_is_not_lost() {
    let mut w = world();
    w.user_page(1, 0x8000, 0x5000, true);
    w.maps.map(us(1), 0x10_0000, DTCM, PageSize::Small, false);
    w.fill(us(1), 0x8000, 0x1000, 9);
    let mut x = w
        .begin(w.req(us(1), 0x8000, 0x10_0000, 1, Rights::RW))
        .unwrap();
    // Copy half the page, then "an interrupt handler writes" into a chunk
    // that was already copied.
    for _ in 0..9 {
        assert_eq!(
            x.step(&mut w.table, &mut w.maps, &mut w.hw, &mut w.irq),
            Ok(Progress::Pending)
        );
        assert!(w.irq.enabled(), "interrupts stay masked across steps");
    }
    assert!(x.stats().bytes_copied >= 0x400);
    // Reads still work during the exchange, and fill lines from the old frame.
    for i in 0..0x40 {
        assert_eq!(
            w.hw.load(&w.maps, us(1), 0x8000 + i).unwrap(),
            content(i, 9)
        );
    }
    let fault = w.hw.store(&w.maps, us(1), 0x8004, 0x42);
    let CpuFault::Permission(frame) = fault.unwrap_err() else {
        panic!("expected a permission fault")
    };
    assert!(x.protects(frame));
    // The fault handler finishes the page, then the write is retried.
    x.finish_page(&mut w.table, &mut w.maps, &mut w.hw, &mut w.irq)
        .unwrap();
    assert!(x.is_done());
    w.hw.store(&w.maps, us(1), 0x8004, 0x42).unwrap();
    // Reads during the exchange may have filled lines from the old frame:
    // flushing the cache must not write anything back to the old frame.
    w.hw.clean_all();
    assert_eq!(w.hw.phys(DTCM + 4), 0x42);
    assert_eq!(w.hw.load(&w.maps, us(1), 0x8004).unwrap(), 0x42);
    for i in (0..0x1000).filter(|&i| i != 4) {
        assert_eq!(w.hw.phys(DTCM + i), content(i, 9));
    }
    // Bounded blocking: no masked window holds more than one chunk's copy.
    let longest = w.irq.windows.iter().copied().max().unwrap();
    assert!(
        longest <= DEFAULT_CHUNK / 4 + 4,
        "longest masked window: {longest} ops"
    );
    assert!(w.irq.windows.len() >= 0x1000 / DEFAULT_CHUNK as usize);
}

#[test]
fn read_only_pages_never_mask_interrupts() {
    let mut w = world();
    w.user_page(1, 0x8000, 0x5000, false);
    for i in 0..0x1000 {
        w.hw.set_phys(0x5000 + i, content(i, 5));
    }
    w.maps.map(us(1), 0x10_0000, ITCM, PageSize::Small, false);
    let mut x = w
        .begin(w.req(us(1), 0x8000, 0x10_0000, 1, Rights::RX))
        .unwrap();
    w.run(&mut x);
    assert!(w.irq.windows.is_empty(), "{:?}", w.irq.windows);
    assert_eq!(x.stats().masked_windows, 0);
    for i in 0..0x1000 {
        assert_eq!(
            w.hw.load(&w.maps, us(1), 0x8000 + i).unwrap(),
            content(i, 5)
        );
    }
}

#[test]
fn kernel_code_moves_into_itcm_and_back() {
    let mut w = world();
    w.table
        .init_range(
            pa(0x5000),
            0x2000,
            FrameState::Kernel(KernelUse::Plain),
            true,
        )
        .unwrap();
    w.maps.map(K, 0xc000_5000, 0x5000, PageSize::Small, true);
    w.maps.map(K, 0xc000_6000, 0x6000, PageSize::Small, true);
    w.maps.map(K, 0xc100_0000, ITCM, PageSize::Small, false);
    w.maps
        .map(K, 0xc100_1000, ITCM + 0x1000, PageSize::Small, false);
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
    let mut w = world();
    // A frame of second-level tables, referenced by two first-level entries.
    w.table
        .init_range(
            pa(0x1_0000),
            0x1000,
            FrameState::Kernel(KernelUse::PageTable),
            true,
        )
        .unwrap();
    w.maps.map(K, 0xc001_0000, 0x1_0000, PageSize::Small, true);
    w.maps.l1 = vec![(0x300, 0x1_0400), (0x301, 0x1_0c00), (0x302, 0x2_0000)];
    w.maps.map(K, 0xc100_0000, DTCM, PageSize::Small, false);
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
    w.table
        .init_range(
            pa(0x2_0000),
            0x4000,
            FrameState::Kernel(KernelUse::PageDirectory),
            true,
        )
        .unwrap();
    for i in 0..4 {
        w.maps.map(
            K,
            0xc002_0000 + i * 0x1000,
            0x2_0000 + i * 0x1000,
            PageSize::Small,
            true,
        );
        w.maps.map(
            K,
            0xc200_0000 + i * 0x1000,
            ITCM + 0x4000 + i * 0x1000,
            PageSize::Small,
            false,
        );
    }
    w.fill(K, 0xc002_0000, 0x4000, 13);
    w.maps.dirs = vec![(us(1), 0x2_0000), (us(2), 0x3_0000)];
    w.hw.ttbr = 0x2_0000 | 0x18;
    let mut x = w
        .begin(w.req(K, 0xc002_0000, 0xc200_0000, 4, Rights::RW))
        .unwrap();
    // While the directory moves, all of it stays protected and busy.
    for _ in 0..0x1000 / DEFAULT_CHUNK + 3 {
        x.step(&mut w.table, &mut w.maps, &mut w.hw, &mut w.irq)
            .unwrap();
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
    w.run(&mut x);
    assert_eq!(w.hw.ttbr, (ITCM + 0x4000) | 0x18);
    assert_eq!(w.maps.dirs, vec![(us(1), ITCM + 0x4000), (us(2), 0x3_0000)]);
    for i in 0..0x4000 {
        assert_eq!(w.hw.phys(ITCM + 0x4000 + i), content(i, 13));
    }
    assert!(!w.table.desc(pa(0x2_0000)).unwrap().is_busy());
    w.hw.store(&w.maps, K, 0xc002_3000, 1).unwrap();
}
