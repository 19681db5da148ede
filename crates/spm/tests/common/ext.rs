//! Shorthands and a test-kernel extension shared by the model tests.
#![allow(dead_code)]

use super::Kernel;
use mmu_armv5::size::FrameRange;
use mmu_armv5::size::PageSizeKind;
use mmu_armv5::{PhysAddr, VirtAddr};
use spm::{
    AddressSpace, Exchange, ExchangeError, ExchangeRequest, FrameState, Progress, Rights, SpaceId,
};

pub const K: AddressSpace = AddressSpace::Kernel;

pub fn sp(n: u16) -> SpaceId {
    SpaceId(n)
}
pub fn us(n: u16) -> AddressSpace {
    AddressSpace::User(sp(n))
}
pub fn pa(a: u32) -> PhysAddr {
    PhysAddr::new(a)
}
pub fn va(a: u32) -> VirtAddr {
    VirtAddr::new(a)
}
pub fn content(i: u32, seed: u8) -> u8 {
    seed.wrapping_add((i.wrapping_mul(7) ^ (i >> 8)) as u8)
}

pub fn req(
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

pub trait KernelExt {
    fn user_page(&mut self, space: u16, v: u32, p: u32, size: PageSizeKind, writable: bool);
    fn begin(&mut self, r: ExchangeRequest, chunk: u32) -> Result<Exchange, ExchangeError>;
    fn step(&mut self, x: &mut Exchange) -> Result<Progress, ExchangeError>;
    fn run(&mut self, x: &mut Exchange);
    fn cancel(&mut self, x: &mut Exchange) -> Result<u32, ExchangeError>;
    fn fill(&mut self, space: AddressSpace, v: u32, len: u32, seed: u8);
    fn expect(&mut self, space: AddressSpace, v: u32, len: u32, seed: u8);
    fn state(&self, p: u32) -> FrameState;
}

impl KernelExt for Kernel<'_> {
    fn user_page(&mut self, space: u16, v: u32, p: u32, size: PageSizeKind, writable: bool) {
        self.table
            .init_range(
                FrameRange::from_bytes(pa(p), size.size()).unwrap(),
                FrameState::User(sp(space)),
                true,
            )
            .unwrap();
        self.maps.map(us(space), v, p, size, writable);
    }
    fn begin(&mut self, r: ExchangeRequest, chunk: u32) -> Result<Exchange, ExchangeError> {
        Exchange::begin(&mut self.table, &self.maps, r, chunk)
    }
    fn step(&mut self, x: &mut Exchange) -> Result<Progress, ExchangeError> {
        // SAFETY: the model's frame table, mappings and machine are one
        // consistent (simulated) system: nothing the exchange writes is
        // memory of this program.
        unsafe { x.step(&mut self.table, &mut self.maps, &mut self.hw, &mut self.irq) }
    }
    fn run(&mut self, x: &mut Exchange) {
        // SAFETY: as in `step`.
        unsafe { x.run(&mut self.table, &mut self.maps, &mut self.hw, &mut self.irq) }.unwrap();
        assert!(self.irq.enabled());
    }
    fn cancel(&mut self, x: &mut Exchange) -> Result<u32, ExchangeError> {
        // SAFETY: as in `step`.
        unsafe { x.cancel(&mut self.table, &mut self.maps, &mut self.hw, &mut self.irq) }
    }
    /// Reads every line first (no write-allocate), then writes: every line
    /// of the range ends up dirty in the D-cache, memory stale.
    fn fill(&mut self, space: AddressSpace, v: u32, len: u32, seed: u8) {
        for i in (0..len).step_by(32) {
            self.load(space, v + i).unwrap();
        }
        for i in 0..len {
            self.store(space, v + i, content(i, seed)).unwrap();
        }
    }
    fn expect(&mut self, space: AddressSpace, v: u32, len: u32, seed: u8) {
        for i in 0..len {
            assert_eq!(
                self.load(space, v + i).unwrap(),
                content(i, seed),
                "{space:?} {:#x}",
                v + i
            );
        }
    }
    fn state(&self, p: u32) -> FrameState {
        self.table.desc(pa(p)).unwrap().state()
    }
}

pub fn any_busy(k: &Kernel, frames: &[u32]) -> bool {
    frames
        .iter()
        .any(|&p| k.table.desc(pa(p)).unwrap().is_busy())
}
