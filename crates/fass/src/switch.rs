//! Address-space switching strategies.
//!
//! [`SwitchStrategy`] is the one interface benchmarks drive. [`FassSwitch`]
//! implements FASS: the translation table base never changes (it points at
//! the [`Cpd`]); a switch loads the DACR (kernel domain + the space's own
//! domain) and the FCSE PID, recycling a domain first if the space has none.
//! In steady state a switch is exactly one DACR write and one FCSEIDR write.
//!
//! Fault resolution for FASS (lazy CPD fills and collisions) lives in
//! [`crate::resolve`]; this module holds the shared state and the switch.

use crate::cpd::Cpd;
use crate::domain::{DomainError, DomainSet, DomainTable, Eviction, Owner};
use crate::id::SpaceId;
use crate::layout::{Layout, RegionKind};
use crate::pid::{PidAllocator, PidContext, PidError, PidMode};
use crate::policy::VictimPolicy;
use crate::space::{SpaceDir, SpaceError, PAGE_SIZE};
use crate::stats::{Event, Stats};
use core::fmt;
use mmu_armv5::descriptor::{AccessPermission, CachePolicy};
use mmu_armv5::maint::CacheMaintenance;
use mmu_armv5::regs::{Cp15, Cp15Ext, Dacr, DomainAccess};
use mmu_armv5::table::{TableAlloc, TableError};
use mmu_armv5::{Domain, ModifiedVirtAddr, PhysAddr, VirtAddr};

/// An operation of the switching layer that cannot be done.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum FassError {
    /// No space with this identifier exists.
    UnknownSpace(SpaceId),
    /// A space with this identifier already exists.
    SpaceExists(SpaceId),
    /// The identifier is beyond the table's capacity.
    SpaceIdOutOfRange(SpaceId),
    /// The address lies in the kernel or shared-segment region.
    NotPrivate(VirtAddr),
    /// PID allocation failed.
    Pid(PidError),
    /// Domain allocation failed.
    Domain(DomainError),
    /// The space's directory refused the change.
    Space(SpaceError),
    /// A CPD access failed.
    Table(TableError),
}

impl fmt::Display for FassError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            FassError::UnknownSpace(s) => write!(f, "no address space {}", s.0),
            FassError::SpaceExists(s) => write!(f, "address space {} already exists", s.0),
            FassError::SpaceIdOutOfRange(s) => write!(f, "address space id {} out of range", s.0),
            FassError::NotPrivate(va) => write!(f, "{va} is not in a private region"),
            FassError::Pid(e) => write!(f, "{e}"),
            FassError::Domain(e) => write!(f, "{e}"),
            FassError::Space(e) => write!(f, "{e}"),
            FassError::Table(e) => write!(f, "{e}"),
        }
    }
}

impl core::error::Error for FassError {}

impl From<PidError> for FassError {
    fn from(e: PidError) -> Self {
        FassError::Pid(e)
    }
}
impl From<DomainError> for FassError {
    fn from(e: DomainError) -> Self {
        FassError::Domain(e)
    }
}
impl From<SpaceError> for FassError {
    fn from(e: SpaceError) -> Self {
        FassError::Space(e)
    }
}
impl From<TableError> for FassError {
    fn from(e: TableError) -> Self {
        FassError::Table(e)
    }
}

/// A way of switching address spaces, so benchmarks compare them on equal terms.
pub trait SwitchStrategy<H: Cp15 + CacheMaintenance, A: TableAlloc + ?Sized> {
    /// Makes `next` the running address space.
    fn switch_to(&mut self, hw: &mut H, alloc: &mut A, next: SpaceId) -> Result<(), FassError>;
    /// The counters so far.
    fn stats(&self) -> &Stats;
}

pub(crate) struct SpaceState<const SLOTS: usize> {
    pub(crate) pid: PidContext,
    pub(crate) dir: SpaceDir<SLOTS>,
    pub(crate) domain: Option<Domain>,
}

/// FASS: FCSE PIDs plus domains as address-space tags over one CPD.
///
/// `SPACES` bounds the space identifiers (`0..SPACES`), `SLOTS` the
/// first-level slots per space directory.
pub struct FassSwitch<P: VictimPolicy, const SPACES: usize, const SLOTS: usize> {
    pub(crate) layout: Layout,
    pub(crate) kernel: Domain,
    pub(crate) pids: PidAllocator,
    pub(crate) domains: DomainTable,
    pub(crate) policy: P,
    pub(crate) cpd: Cpd,
    pub(crate) stats: Stats,
    pub(crate) spaces: [Option<SpaceState<SLOTS>>; SPACES],
    pub(crate) current: Option<SpaceId>,
}

impl<P: VictimPolicy, const SPACES: usize, const SLOTS: usize> FassSwitch<P, SPACES, SLOTS> {
    /// FASS over the CPD `cpd` (already loaded in the translation table
    /// base), with `kernel` and `reserved` domains never handed out. PIDs
    /// are shared when they run out (collisions are caught by domains).
    pub fn new(
        layout: Layout,
        kernel: Domain,
        reserved: DomainSet,
        policy: P,
        cpd: Cpd,
    ) -> Result<Self, FassError> {
        Ok(FassSwitch {
            layout,
            kernel,
            pids: PidAllocator::new(&layout, PidMode::BestEffort),
            domains: DomainTable::new(kernel, reserved)?,
            policy,
            cpd,
            stats: Stats::ZERO,
            spaces: core::array::from_fn(|_| None),
            current: None,
        })
    }

    /// The counters so far.
    #[must_use]
    pub fn stats(&self) -> &Stats {
        &self.stats
    }

    /// The domain table (read-only).
    #[must_use]
    pub fn domains(&self) -> &DomainTable {
        &self.domains
    }

    /// The running space.
    #[must_use]
    pub fn current(&self) -> Option<SpaceId> {
        self.current
    }

    /// The FCSE PID of `id`.
    pub fn pid_of(&self, id: SpaceId) -> Result<mmu_armv5::FcsePid, FassError> {
        Ok(self.space(id)?.pid.pid())
    }

    /// The domain `id` holds now, if any.
    pub fn domain_of(&self, id: SpaceId) -> Result<Option<Domain>, FassError> {
        Ok(self.space(id)?.domain)
    }

    /// The DACR value `id` runs with if it holds `domain`.
    #[must_use]
    pub fn dacr_for(&self, domain: Domain) -> Dacr {
        Dacr::only(self.kernel, DomainAccess::Client).with(domain, DomainAccess::Client)
    }

    pub(crate) fn space(&self, id: SpaceId) -> Result<&SpaceState<SLOTS>, FassError> {
        self.spaces
            .get(usize::from(id.0))
            .and_then(Option::as_ref)
            .ok_or(FassError::UnknownSpace(id))
    }

    pub(crate) fn space_mut(&mut self, id: SpaceId) -> Result<&mut SpaceState<SLOTS>, FassError> {
        self.spaces
            .get_mut(usize::from(id.0))
            .and_then(Option::as_mut)
            .ok_or(FassError::UnknownSpace(id))
    }

    /// Creates an empty address space `id` with an FCSE PID (shared if none is free).
    pub fn create_space(&mut self, id: SpaceId) -> Result<(), FassError> {
        let entry = self
            .spaces
            .get_mut(usize::from(id.0))
            .ok_or(FassError::SpaceIdOutOfRange(id))?;
        if entry.is_some() {
            return Err(FassError::SpaceExists(id));
        }
        let a = self.pids.allocate(id)?;
        if a.shared {
            self.stats.record(Event::PidShared);
        }
        // Best-effort allocation never asks for a flush; FASS relies on domains anyway.
        let _ = a.flush;
        *entry = Some(SpaceState {
            pid: a.context,
            dir: SpaceDir::new(),
            domain: None,
        });
        Ok(())
    }

    /// After a full flush: every domain clean but those the running space uses.
    pub(crate) fn full_flush<H: CacheMaintenance>(&mut self, hw: &mut H) {
        hw.flush_all();
        self.domains.mark_all_clean();
        self.stats.record(Event::FullFlush);
        if let Some(d) = self
            .current
            .and_then(|c| self.space(c).ok())
            .and_then(|s| s.domain)
        {
            self.domains.mark_dirty(Dacr::only(d, DomainAccess::Client));
        }
    }

    /// Acts on an eviction whose CPD slots were already cleared.
    fn after_eviction<H: CacheMaintenance>(&mut self, hw: &mut H, e: &Eviction) {
        if let Owner::Space(s) = e.owner {
            if let Ok(st) = self.space_mut(s) {
                st.domain = None;
            }
        }
        if e.was_dirty {
            self.stats.record(Event::DomainRecycledDirty);
            self.full_flush(hw);
        } else {
            self.stats.record(Event::DomainRecycledClean);
            if e.slots > 0 {
                hw.invalidate_tlb();
                self.stats.record(Event::TlbOnlyInvalidation);
            }
        }
    }

    fn acquire_domain<H: CacheMaintenance, A: TableAlloc + ?Sized>(
        &mut self,
        hw: &mut H,
        alloc: &mut A,
        id: SpaceId,
    ) -> Result<Domain, FassError> {
        let protect = match self.current.filter(|c| *c != id) {
            Some(c) => match self.space(c)?.domain {
                Some(d) => DomainSet::of(d),
                None => DomainSet::EMPTY,
            },
            None => DomainSet::EMPTY,
        };
        let mut cpd_error = None;
        let cpd = &mut self.cpd;
        let acquired =
            self.domains
                .acquire(Owner::Space(id), protect, &mut self.policy, |slot| {
                    if let Err(e) = cpd.clear(alloc, hw, slot) {
                        cpd_error = Some(e);
                    }
                })?;
        if let Some(e) = cpd_error {
            return Err(FassError::Table(e));
        }
        match &acquired.evicted {
            Some(e) => self.after_eviction(hw, e),
            None => self.stats.record(Event::DomainAllocated),
        }
        self.space_mut(id)?.domain = Some(acquired.domain);
        Ok(acquired.domain)
    }

    fn check_private(&self, va: VirtAddr, mva: ModifiedVirtAddr) -> Result<(), FassError> {
        match self.layout.classify(mva) {
            RegionKind::Kernel | RegionKind::Shared => Err(FassError::NotPrivate(va)),
            _ => Ok(()),
        }
    }

    /// Writes a changed directory slot through to the CPD if the space owns it there.
    fn write_through<H: CacheMaintenance, A: TableAlloc + ?Sized>(
        &mut self,
        hw: &mut H,
        alloc: &A,
        id: SpaceId,
        slot: usize,
    ) -> Result<(), FassError> {
        let st = self.space(id)?;
        let Some(d) = st.domain else { return Ok(()) };
        if self.domains.slot_owner(slot) != Some(d) {
            return Ok(());
        }
        let desc = st.dir.entry(slot);
        if desc.is_valid() {
            self.cpd.write(alloc, hw, slot, desc.with_domain(d))?;
        } else {
            self.cpd.clear(alloc, hw, slot)?;
            self.domains.release_slot(d, slot);
        }
        hw.invalidate_tlb();
        self.stats.record(Event::TlbOnlyInvalidation);
        Ok(())
    }

    /// Maps the 4 KiB page at `va` of space `id` (inside or above its 32 MiB
    /// window, never in the kernel or shared region) to `pa`.
    #[allow(clippy::too_many_arguments)]
    pub fn map_page<H: CacheMaintenance, A: TableAlloc + ?Sized>(
        &mut self,
        hw: &mut H,
        alloc: &mut A,
        id: SpaceId,
        va: VirtAddr,
        pa: PhysAddr,
        ap: AccessPermission,
        cache: CachePolicy,
    ) -> Result<(), FassError> {
        let mva = va.to_mva(self.space(id)?.pid.pid());
        self.check_private(va, mva)?;
        let change = self.space_mut(id)?.dir.map(alloc, mva, pa, ap, cache)?;
        change.flush.flush(hw);
        if let Some(slot) = change.l1_changed {
            self.write_through(hw, alloc, id, slot)?;
        }
        Ok(())
    }

    /// Unmaps the 4 KiB page at `va` of space `id`: cleans and invalidates its
    /// cache lines (the VIVT caches know them by MVA), then removes it.
    pub fn unmap_page<H: CacheMaintenance, A: TableAlloc + ?Sized>(
        &mut self,
        hw: &mut H,
        alloc: &mut A,
        id: SpaceId,
        va: VirtAddr,
    ) -> Result<(), FassError> {
        let st = self.space(id)?;
        let mva = va.to_mva(st.pid.pid()).align_down(PAGE_SIZE);
        if st.dir.lookup(alloc, mva)?.is_none() {
            return Err(FassError::Space(SpaceError::NotMapped(mva)));
        }
        let line = H::DCACHE_LINE;
        let mut off = 0;
        while off < PAGE_SIZE {
            let a = ModifiedVirtAddr::new(mva.as_u32() + off);
            hw.clean_invalidate_dcache_line(a);
            hw.invalidate_icache_line(a);
            off += line;
        }
        hw.drain_write_buffer();
        let change = self.space_mut(id)?.dir.unmap(alloc, mva)?;
        change.flush.flush(hw);
        if let Some(slot) = change.l1_changed {
            self.write_through(hw, alloc, id, slot)?;
        }
        Ok(())
    }

    /// Destroys space `id`: takes back its domain (flushing if it is dirty,
    /// since its lines would otherwise outlive it), frees its tables and PID.
    pub fn destroy_space<H: CacheMaintenance, A: TableAlloc + ?Sized>(
        &mut self,
        hw: &mut H,
        alloc: &mut A,
        id: SpaceId,
    ) -> Result<(), FassError> {
        self.space(id)?;
        if self.current == Some(id) {
            self.current = None;
        }
        let mut cpd_error = None;
        let cpd = &mut self.cpd;
        let ev = self.domains.release(Owner::Space(id), |slot| {
            if let Err(e) = cpd.clear(alloc, hw, slot) {
                cpd_error = Some(e);
            }
        });
        if let Some(e) = cpd_error {
            return Err(FassError::Table(e));
        }
        if let Some(e) = ev {
            if e.was_dirty {
                self.full_flush(hw);
            } else if e.slots > 0 {
                hw.invalidate_tlb();
                self.stats.record(Event::TlbOnlyInvalidation);
            }
        }
        let Some(mut st) = self
            .spaces
            .get_mut(usize::from(id.0))
            .and_then(Option::take)
        else {
            return Err(FassError::UnknownSpace(id));
        };
        // SAFETY: the CPD slots pointing at this space's tables were cleared
        // above (every CPD copy of its entries is in its domain's slot set).
        unsafe { st.dir.release(alloc) };
        self.pids.release(st.pid)?;
        Ok(())
    }
}

impl<H, A, P, const SPACES: usize, const SLOTS: usize> SwitchStrategy<H, A>
    for FassSwitch<P, SPACES, SLOTS>
where
    H: Cp15 + CacheMaintenance,
    A: TableAlloc + ?Sized,
    P: VictimPolicy,
{
    fn switch_to(&mut self, hw: &mut H, alloc: &mut A, next: SpaceId) -> Result<(), FassError> {
        let (domain, pid) = {
            let st = self.space(next)?;
            (st.domain, st.pid.pid())
        };
        self.stats.record(Event::Switch);
        let d = match domain {
            Some(d) => d,
            None => self.acquire_domain(hw, alloc, next)?,
        };
        self.policy.touch(d);
        // Conservative, as Pistachio: a space that runs may fill the cache.
        self.domains.mark_dirty(Dacr::only(d, DomainAccess::Client));
        let dacr = self.dacr_for(d);
        // SAFETY: the kernel's domain stays client, so kernel code and data
        // (above 32 MiB by the layout, unaffected by the PID) stay reachable;
        // only `next`'s own domain is opened; the caches may hold other
        // spaces' lines at other MVAs only, or in domains `next` cannot use
        // (collisions are caught as domain faults).
        unsafe {
            hw.set_dacr(dacr);
            hw.set_fcse_pid(pid);
        }
        self.current = Some(next);
        Ok(())
    }

    fn stats(&self) -> &Stats {
        FassSwitch::stats(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpd::Cpd;
    use crate::layout::Region;
    use crate::policy::DefaultPolicy;
    use crate::resolve::{Flushed, Resolution};
    use crate::space::tests::pool;
    use mmu_armv5::maint::Arm926;
    use mmu_armv5::regs::{Cp15Event, Cp15Reg, MockCp15};
    use mmu_armv5::table::{TableKind, TableRef};
    use mmu_armv5::{Fault, FcsePid};
    use std::vec::Vec;

    type Hw = Arm926<MockCp15>;
    type Fass = FassSwitch<DefaultPolicy, 64, 40>;

    fn d(n: u8) -> Domain {
        Domain::new(n).unwrap()
    }

    fn setup(
        layout: Layout,
        reserved: DomainSet,
    ) -> (Fass, Hw, mmu_armv5::table::TablePool<'static, 64>) {
        let mut a = pool();
        let root = TableRef::allocate(&mut a, TableKind::L1).unwrap();
        let f = Fass::new(
            layout,
            d(0),
            reserved,
            DefaultPolicy::default(),
            Cpd::new(root.pa).unwrap(),
        )
        .unwrap();
        (f, Arm926::new(MockCp15::arm926()), a)
    }

    fn map(
        f: &mut Fass,
        hw: &mut Hw,
        a: &mut mmu_armv5::table::TablePool<'static, 64>,
        s: u16,
        va: u32,
        pa: u32,
    ) {
        f.map_page(
            hw,
            a,
            SpaceId(s),
            VirtAddr::new(va),
            PhysAddr::new(pa),
            AccessPermission::ReadWrite,
            CachePolicy::WriteBack,
        )
        .unwrap();
    }

    fn one_pid_layout() -> Layout {
        Layout::new(
            FcsePid::new(1).unwrap(),
            FcsePid::new(1).unwrap(),
            Region::new(0x8000_0000, 1 << 30).unwrap(),
            Region::new(0xC000_0000, 1 << 30).unwrap(),
        )
        .unwrap()
    }

    #[test]
    fn steady_state_switch_is_exactly_one_dacr_and_one_fcseidr_write() {
        let (mut f, mut hw, mut a) = setup(Layout::DEMO, DomainSet::EMPTY);
        let n = 15u16; // every free domain
        for s in 0..n {
            f.create_space(SpaceId(s)).unwrap();
            map(
                &mut f,
                &mut hw,
                &mut a,
                s,
                0x8000,
                0x0010_0000 + u32::from(s) * 0x1000,
            );
        }
        for s in 0..n {
            f.switch_to(&mut hw, &mut a, SpaceId(s)).unwrap();
            let r = f.resolve(&mut hw, &mut a, 0x005, 0x8000).unwrap();
            assert!(matches!(
                r,
                Resolution::Resolved {
                    flushed: Flushed::Nothing,
                    collided_with: None,
                    ..
                }
            ));
        }
        let before = *f.stats();
        for _round in 0..3 {
            for s in 0..n {
                hw.cp15_mut().clear();
                f.switch_to(&mut hw, &mut a, SpaceId(s)).unwrap();
                let dom = f.domain_of(SpaceId(s)).unwrap().unwrap();
                let pid = f.pid_of(SpaceId(s)).unwrap();
                assert_eq!(
                    hw.cp15().events(),
                    [
                        Cp15Event::Write(Cp15Reg::Dacr, f.dacr_for(dom).bits()),
                        Cp15Event::Write(Cp15Reg::Fcseidr, pid.fcseidr_value()),
                    ]
                );
                // No fault: the CPD still holds the space's slot.
                assert!(matches!(
                    f.resolve(&mut hw, &mut a, 0x005, 0x8000).unwrap(),
                    Resolution::NotFass(_)
                ));
            }
        }
        let delta = f.stats().since(&before);
        assert_eq!(delta.switches, 45);
        assert_eq!(delta.full_flushes, 0);
        assert_eq!(delta.tlb_only, 0);
        assert_eq!(delta.collisions, 0);
    }

    #[test]
    fn collisions_on_a_shared_pid_move_the_slot_and_flush_a_dirty_owner() {
        let (mut f, mut hw, mut a) = setup(one_pid_layout(), DomainSet::EMPTY);
        f.create_space(SpaceId(0)).unwrap();
        f.create_space(SpaceId(1)).unwrap();
        assert_eq!(f.stats().pid_shares, 1);
        map(&mut f, &mut hw, &mut a, 0, 0x8000, 0x0010_0000);
        map(&mut f, &mut hw, &mut a, 1, 0x8000, 0x0020_0000);
        f.switch_to(&mut hw, &mut a, SpaceId(0)).unwrap();
        let da = f.domain_of(SpaceId(0)).unwrap().unwrap();
        assert_eq!(
            f.resolve(&mut hw, &mut a, 0x005, 0x8000).unwrap(),
            Resolution::Resolved {
                slot: 0x20,
                collided_with: None,
                flushed: Flushed::Nothing
            }
        );
        f.switch_to(&mut hw, &mut a, SpaceId(1)).unwrap();
        let db = f.domain_of(SpaceId(1)).unwrap().unwrap();
        hw.cp15_mut().clear();
        // Hardware reports the MVA.
        let fsr = 0x009 | (u32::from(da.get()) << 4);
        assert_eq!(
            f.resolve(&mut hw, &mut a, fsr, 0x0200_8000).unwrap(),
            Resolution::Resolved {
                slot: 0x20,
                collided_with: Some(da),
                flushed: Flushed::Full
            }
        );
        let ev: Vec<_> = hw.cp15().events().to_vec();
        assert!(ev.contains(&Cp15Event::Op(mmu_armv5::regs::Cp15Op::InvalidateTlb, 0)));
        assert!(ev.contains(&Cp15Event::Op(mmu_armv5::regs::Cp15Op::InvalidateICache, 0)));
        assert_eq!(f.domains().slot_owner(0x20), Some(db));
        assert!(f.domains().is_dirty(db) && !f.domains().is_dirty(da));
        // QEMU reports the VA; A's domain is clean now: TLB only.
        f.switch_to(&mut hw, &mut a, SpaceId(0)).unwrap();
        // Switching marked A dirty; B ran since the flush too, so it is dirty.
        let fsr = 0x009 | (u32::from(db.get()) << 4);
        assert_eq!(
            f.resolve(&mut hw, &mut a, fsr, 0x8000).unwrap(),
            Resolution::Resolved {
                slot: 0x20,
                collided_with: Some(db),
                flushed: Flushed::Full
            }
        );
        let s = *f.stats();
        assert_eq!((s.collisions, s.full_flushes, s.cpd_fills), (2, 2, 3));
    }

    #[test]
    fn clean_previous_owner_costs_a_tlb_invalidation_only() {
        use mmu_armv5::regs::Cp15Op;
        let (mut f, mut hw, mut a) = setup(one_pid_layout(), DomainSet::EMPTY);
        for s in 0..3 {
            f.create_space(SpaceId(s)).unwrap();
            map(
                &mut f,
                &mut hw,
                &mut a,
                s,
                0x8000,
                0x0010_0000 + u32::from(s) * 0x1000,
            );
        }
        map(&mut f, &mut hw, &mut a, 2, 0x0030_0000, 0x0030_0000);
        f.switch_to(&mut hw, &mut a, SpaceId(2)).unwrap();
        let _ = f.resolve(&mut hw, &mut a, 0x005, 0x0030_0000).unwrap();
        f.switch_to(&mut hw, &mut a, SpaceId(0)).unwrap();
        let _ = f.resolve(&mut hw, &mut a, 0x005, 0x8000).unwrap();
        f.switch_to(&mut hw, &mut a, SpaceId(1)).unwrap();
        let d0 = f.domain_of(SpaceId(0)).unwrap();
        let d2 = f.domain_of(SpaceId(2)).unwrap();
        let r = f.resolve(&mut hw, &mut a, 0x009, 0x8000).unwrap();
        assert_eq!(
            r,
            Resolution::Resolved {
                slot: 0x20,
                collided_with: d0,
                flushed: Flushed::Full
            }
        );
        // After that flush only space 1's domain is dirty; 2 is clean and owns 0x23.
        assert!(!f.domains().is_dirty(d2.unwrap()));
        map(&mut f, &mut hw, &mut a, 1, 0x0030_0000, 0x0050_0000);
        let s0 = *f.stats();
        hw.cp15_mut().clear();
        let r = f.resolve(&mut hw, &mut a, 0x009, 0x0030_0000).unwrap();
        assert_eq!(
            r,
            Resolution::Resolved {
                slot: 0x23,
                collided_with: d2,
                flushed: Flushed::TlbOnly
            }
        );
        let ops: Vec<_> = hw
            .cp15()
            .events()
            .iter()
            .filter(|e| {
                !matches!(
                    e,
                    Cp15Event::Op(Cp15Op::CleanDCacheLine | Cp15Op::DrainWriteBuffer, _)
                )
            })
            .copied()
            .collect();
        assert_eq!(ops, [Cp15Event::Op(Cp15Op::InvalidateTlb, 0)]);
        let s1 = f.stats().since(&s0);
        assert_eq!((s1.full_flushes, s1.tlb_only, s1.collisions), (0, 1, 1));
    }

    #[test]
    fn running_out_of_domains_recycles_never_the_current_or_kernel() {
        // Only domains 1 and 2 can be handed out.
        let reserved = DomainSet::ALL.without(d(1)).without(d(2));
        let (mut f, mut hw, mut a) = setup(Layout::DEMO, reserved);
        for s in 0..3 {
            f.create_space(SpaceId(s)).unwrap();
        }
        f.switch_to(&mut hw, &mut a, SpaceId(0)).unwrap();
        f.switch_to(&mut hw, &mut a, SpaceId(1)).unwrap();
        f.switch_to(&mut hw, &mut a, SpaceId(2)).unwrap();
        // Space 1 was current: space 0's (dirty) domain was taken.
        assert_eq!(f.domain_of(SpaceId(0)).unwrap(), None);
        assert!(f.domain_of(SpaceId(1)).unwrap().is_some());
        let s = *f.stats();
        assert_eq!(
            (s.domain_allocs, s.recycles_dirty, s.full_flushes),
            (2, 1, 1)
        );
        if let Some(dom) = f.domain_of(SpaceId(2)).unwrap() {
            assert_ne!(dom, d(0));
        }
    }

    #[test]
    fn other_faults_are_not_fass_faults() {
        let (mut f, mut hw, mut a) = setup(Layout::DEMO, DomainSet::EMPTY);
        f.create_space(SpaceId(0)).unwrap();
        map(&mut f, &mut hw, &mut a, 0, 0x8000, 0x0010_0000);
        f.switch_to(&mut hw, &mut a, SpaceId(0)).unwrap();
        assert_eq!(
            f.resolve(&mut hw, &mut a, 0x00f, 0x8000).unwrap(),
            Resolution::NotFass(Fault::from_fsr(0x00f))
        );
        assert_eq!(
            f.resolve(&mut hw, &mut a, 0x005, 0x0100_0000).unwrap(),
            Resolution::NotFass(Fault::from_fsr(0x005))
        );
        assert_eq!(
            f.map_page(
                &mut hw,
                &mut a,
                SpaceId(0),
                VirtAddr::new(0xC000_0000),
                PhysAddr::new(0),
                AccessPermission::ReadWrite,
                CachePolicy::WriteBack
            ),
            Err(FassError::NotPrivate(VirtAddr::new(0xC000_0000)))
        );
        assert_eq!(
            f.create_space(SpaceId(0)),
            Err(FassError::SpaceExists(SpaceId(0)))
        );
        assert_eq!(
            f.create_space(SpaceId(64)),
            Err(FassError::SpaceIdOutOfRange(SpaceId(64)))
        );
        assert_eq!(
            SwitchStrategy::<Hw, _>::switch_to(&mut f, &mut hw, &mut a, SpaceId(9)),
            Err(FassError::UnknownSpace(SpaceId(9)))
        );
    }

    #[test]
    fn unmapping_the_last_page_of_an_owned_slot_clears_the_cpd_copy() {
        let (mut f, mut hw, mut a) = setup(Layout::DEMO, DomainSet::EMPTY);
        f.create_space(SpaceId(0)).unwrap();
        map(&mut f, &mut hw, &mut a, 0, 0x8000, 0x0010_0000);
        f.switch_to(&mut hw, &mut a, SpaceId(0)).unwrap();
        let _ = f.resolve(&mut hw, &mut a, 0x005, 0x8000).unwrap();
        let dom = f.domain_of(SpaceId(0)).unwrap().unwrap();
        let slot = VirtAddr::new(0x8000)
            .to_mva(f.pid_of(SpaceId(0)).unwrap())
            .l1_index();
        assert_eq!(f.domains().slot_owner(slot), Some(dom));
        f.unmap_page(&mut hw, &mut a, SpaceId(0), VirtAddr::new(0x8000))
            .unwrap();
        assert_eq!(f.domains().slot_owner(slot), None);
        assert!(!f.cpd.entry(&a, slot).unwrap().is_valid());
        f.destroy_space(&mut hw, &mut a, SpaceId(0)).unwrap();
        assert_eq!(
            f.domain_of(SpaceId(0)),
            Err(FassError::UnknownSpace(SpaceId(0)))
        );
    }
}
