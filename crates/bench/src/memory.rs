//! Memory figures, from `size_of` of the real types and from table memory
//! counted while the real strategies create a space.
//!
//! * directory bytes of a 32 MiB space: `size_of::<fass::space::SpaceDir<32>>()`
//!   (32 first-level slots cover a 32 MiB FCSE window);
//! * per-space bookkeeping of a strategy: `size_of` of the strategy with 65
//!   space entries minus with 64 (the marginal bytes of one more space);
//! * table memory of a space: the bytes a counting [`TableAlloc`] wrapper
//!   sees allocated (minus freed) while the strategy creates one space and
//!   maps the model stream's three regions (text, data, stack: three
//!   first-level slots);
//! * frame description bytes: `spm`'s [`FrameTable::overhead_bytes`] over
//!   [`FrameTable::frame_count`] for 128 MiB of RAM, which includes the
//!   per-MiB section summaries.

use crate::BenchError;
use core::ptr::NonNull;
use fass::policy::DefaultPolicy;
use fass::space::SpaceDir;
use fass::{Cpd, DomainSet, Fass, FassError, PidMode, SpaceId, Split, SwitchStrategy, TableSwitch};
use mmu_armv5::descriptor::{AccessPermission, CachePolicy};
use mmu_armv5::maint::Arm926;
use mmu_armv5::regs::MockCp15;
use mmu_armv5::size::{Frame, PageRange};
use mmu_armv5::table::{AllocError, PoolBlock, TableAlloc, TableKind, TablePool};
use mmu_armv5::{Domain, ModifiedVirtAddr, PhysAddr, VirtAddr};
use spm::{FrameDesc, FrameTable, InitialUse, Location, PhysRegion, SectionSummary};

/// A [`TableAlloc`] that counts the bytes it hands out.
pub struct Counting<A> {
    inner: A,
    /// Bytes allocated minus bytes freed.
    pub bytes: i64,
}

// SAFETY: every method forwards to `inner`, whose implementation upholds the
// contract; the wrapper only counts.
unsafe impl<A: TableAlloc> TableAlloc for Counting<A> {
    fn allocate(&mut self, kind: TableKind) -> Result<PhysAddr, AllocError> {
        let pa = self.inner.allocate(kind)?;
        self.bytes += i64::from(kind.size());
        Ok(pa)
    }

    unsafe fn deallocate(&mut self, kind: TableKind, pa: PhysAddr) {
        self.bytes -= i64::from(kind.size());
        // SAFETY: the caller upholds the contract for the same allocator.
        unsafe { self.inner.deallocate(kind, pa) }
    }

    fn table_ptr(&self, kind: TableKind, pa: PhysAddr) -> Option<NonNull<u32>> {
        self.inner.table_ptr(kind, pa)
    }

    fn table_mva(&self, pa: PhysAddr) -> ModifiedVirtAddr {
        self.inner.table_mva(pa)
    }
}

/// The memory figures.
#[derive(Clone, Debug, PartialEq)]
pub struct Memory {
    /// `size_of::<SpaceDir<32>>()`.
    pub space_dir_32mib: usize,
    /// A hardware first-level table (`TableKind::L1.size()`).
    pub hw_l1_table: u32,
    /// Marginal bookkeeping bytes per space in `Fass` (SLOTS = 32).
    pub fass_per_space: usize,
    /// Marginal bookkeeping bytes per space in `TableSwitch`.
    pub classic_per_space: usize,
    /// Table bytes allocated for one space of the model stream, per mode
    /// (naive, FCSE-only, FASS).
    pub tables_per_space: [i64; 3],
    /// Table bytes FASS allocates once (the CPD).
    pub fass_shared_tables: i64,
    /// `size_of::<FrameDesc>()`.
    pub frame_desc: usize,
    /// `size_of::<SectionSummary>()`.
    pub section_summary: usize,
    /// Frame-table bytes per 4 KiB frame for 128 MiB of RAM, including section summaries.
    pub frame_table_per_frame: f64,
}

impl Memory {
    /// Total kernel bytes per process: bookkeeping plus table memory, per
    /// mode (naive, FCSE-only, FASS; FASS without its share of the CPD).
    #[must_use]
    pub fn per_process(&self) -> [i64; 3] {
        let c = self.classic_per_space as i64;
        let f = self.fass_per_space as i64;
        [
            c + self.tables_per_space[0],
            c + self.tables_per_space[1],
            f + self.tables_per_space[2],
        ]
    }
}

type Sys<'m> = Split<Arm926<MockCp15>, Counting<TablePool<'m, 8>>>;

fn sys(mem: &mut [PoolBlock; 8]) -> Result<Sys<'_>, BenchError> {
    let pool = TablePool::new(
        mem,
        PhysAddr::new(0x0100_0000),
        ModifiedVirtAddr::new(0xC100_0000),
    )
    .map_err(|_| BenchError::Setup("table pool"))?;
    Ok(Split::new(
        Arm926::new(MockCp15::arm926()),
        Counting {
            inner: pool,
            bytes: 0,
        },
    ))
}

/// Creates space 1 and maps the model stream's regions; returns the table bytes.
fn space_tables<T: SwitchStrategy>(s: &mut Sys<'_>, t: &mut T) -> Result<i64, BenchError> {
    let before = s.tables.bytes;
    let id = SpaceId(1);
    t.create_space(s, id)?;
    for (va, pa, len) in [
        (0x8000, 0x0030_0000, 0x1000),
        (0x0010_0000, 0x0030_1000, 0x4000),
        (0x01FF_F000, 0x0030_5000, 0x1000),
    ] {
        let pages = PageRange::from_bytes(VirtAddr::new(va), len).map_err(FassError::from)?;
        let frame = Frame::from_start(PhysAddr::new(pa)).map_err(FassError::from)?;
        t.map_pages(
            s,
            id,
            pages,
            frame,
            AccessPermission::ReadWrite,
            CachePolicy::WriteBack,
        )?;
    }
    Ok(s.tables.bytes - before)
}

fn domain(n: u8) -> Result<Domain, BenchError> {
    Domain::new(n).map_err(|_| BenchError::Setup("domain number"))
}

/// Measures every figure.
pub fn measure() -> Result<Memory, BenchError> {
    let mut tables = [0i64; 3];
    let mut mem = Box::new([PoolBlock::ZERO; 8]);
    for (i, kind) in [
        fass::ClassicKind::Naive,
        fass::ClassicKind::Fcse(PidMode::Guaranteed),
    ]
    .into_iter()
    .enumerate()
    {
        let mut s = sys(&mut mem)?;
        let kernel = crate::model::kernel_table(&mut s)?;
        let mut t: TableSwitch<8, 1> = TableSwitch::new(kind, domain(1)?, kernel);
        tables[i] = space_tables(&mut s, &mut t)?;
    }
    let mut s = sys(&mut mem)?;
    let kernel = crate::model::kernel_table(&mut s)?;
    let fass_shared_tables = s.tables.bytes;
    let mut f: Fass<DefaultPolicy, 8, 32, 1> =
        Fass::new(Cpd::new(kernel), DomainSet::EMPTY, DefaultPolicy::default())?;
    tables[2] = space_tables(&mut s, &mut f)?;

    let ram = PhysRegion::new(
        PhysAddr::new(0),
        128 << 20,
        Location::Ram,
        InitialUse::Resource,
    )
    .map_err(|_| BenchError::Setup("RAM region"))?;
    let regions = [ram];
    let mut frames = vec![FrameDesc::default(); FrameTable::<1>::frames_needed(&regions)];
    let mut sections = vec![SectionSummary::default(); FrameTable::<1>::sections_needed(&regions)];
    let ft = FrameTable::<1>::new(&regions, &mut frames, &mut sections)
        .map_err(|_| BenchError::Setup("frame table"))?;
    let frame_table_per_frame = ft.overhead_bytes() as f64 / ft.frame_count() as f64;

    Ok(Memory {
        space_dir_32mib: size_of::<SpaceDir<32>>(),
        hw_l1_table: TableKind::L1.size(),
        fass_per_space: size_of::<Fass<DefaultPolicy, 65, 32, 1>>()
            - size_of::<Fass<DefaultPolicy, 64, 32, 1>>(),
        classic_per_space: size_of::<TableSwitch<65, 1>>() - size_of::<TableSwitch<64, 1>>(),
        tables_per_space: tables,
        fass_shared_tables,
        frame_desc: size_of::<FrameDesc>(),
        section_summary: size_of::<SectionSummary>(),
        frame_table_per_frame,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_are_plausible() {
        let m = measure().unwrap();
        assert!(m.space_dir_32mib > 0 && m.space_dir_32mib <= 1024, "{m:?}");
        assert_eq!(m.hw_l1_table, 16 << 10);
        // Naive and FCSE: an own first-level table plus coarse tables.
        assert!(m.tables_per_space[0] >= 16 << 10, "{m:?}");
        assert!(m.tables_per_space[2] < 16 << 10, "{m:?}");
        assert_eq!(m.fass_shared_tables, 16 << 10);
        assert!(m.frame_table_per_frame <= 4.0);
    }
}
