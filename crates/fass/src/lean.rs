//! Precomputed ("lean") switches: per space, the register values a switch
//! to it writes and the maintenance it needs, valid for one generation.
//!
//! Every strategy keeps, per space, the [`LeanSwitch`] its last full
//! [`switch_to`](crate::SwitchStrategy::switch_to) made, stamped with the
//! strategy's generation. [`switch_lean`](crate::SwitchStrategy::switch_lean)
//! applies it: a check of the stamp against the generation, then a few
//! register writes with the record's maintenance, and the bookkeeping a full
//! switch would do, nothing looked up. The mechanisms differ, not the code
//! effort:
//!
//! | strategy | a lean switch writes | maintenance |
//! |---|---|---|
//! | [`Fass`](crate::Fass) | DACR, FCSEIDR | none |
//! | [`TableSwitch`], FCSE | TTBR, FCSEIDR | TLB invalidation |
//! | [`TableSwitch`], naive | TTBR | D-cache clean+invalidate, I-cache and TLB invalidation |
//!
//! A record is stale once the generation moved on, and a space has none
//! before its first full switch or while a switch to it needs more than
//! the record holds (FASS: a domain to acquire; FCSE: a flush the PID
//! allocator decides, or a space larger than 32 MiB). Then `switch_lean`
//! answers [`StaleSwitch`] and the caller switches with `switch_to`, which
//! records a fresh one. The records stay inside the strategy, so a record
//! can only be applied by the strategy that made it, to the space it was
//! made for.
//!
//! The generation changes exactly on the events that can make a record
//! wrong, and on nothing else:
//! * FASS ([`Fass::generation`](crate::Fass::generation)): a domain taken
//!   back (recycled) or released, a segment mapped or unmapped (a DACR
//!   changes), a full flush that cleans an owned domain (a lean switch
//!   does not mark its domains dirty again; the running space's record is
//!   carried over to the new generation, its domains stay dirty);
//! * FCSE ([`PidAllocator::generation`](crate::PidAllocator::generation)):
//!   a PID's last user replaced (a PID shared or reused, a space moved to
//!   PID 0), a finished flush that cleans a PID (the running space's record
//!   carried over), a large space's windows reaching further into the
//!   cache, shared writes noted;
//! * naive: never.
//!
//! A destroyed space's record is dropped with it (under FCSE and naive
//! that is all destroying does to the records: no other record rested on
//! the space); creating spaces, mapping and unmapping pages, resolving
//! faults without a full flush, and switches leave the generation alone.
//! A switch to the running space makes its record afresh.
//!
//! ```
//! use fass::{Cpd, DefaultPolicy, DomainSet, Fass, KernelTable, Layout, LeanKind, SpaceId, Split,
//!            StaleSwitch, SwitchStrategy};
//! use mmu_armv5::descriptor::L1Encoding;
//! use mmu_armv5::maint::Arm926;
//! use mmu_armv5::regs::{Cp15Event, Cp15Reg, MockCp15};
//! use mmu_armv5::table::{PoolBlock, TableKind, TablePool, TableRef};
//! use mmu_armv5::{Domain, ModifiedVirtAddr, PhysAddr};
//!
//! let mut mem = Box::new([PoolBlock::ZERO; 4]);
//! let pool = TablePool::new(&mut *mem, PhysAddr::new(0x0100_0000), ModifiedVirtAddr::new(0xC100_0000)).unwrap();
//! let mut sys = Split::new(Arm926::new(MockCp15::arm926()), pool);
//! // The kernel's table: one kernel-only section at 3 GiB, domain 0.
//! // The kernel's RAM at 3 GiB, one section, built through the mapper.
//! let mut kt = mmu_armv5::table::PageTable::new(&mut sys).unwrap();
//! let ram = mmu_armv5::table::MapAttrs::new(mmu_armv5::Domain::default(), mmu_armv5::descriptor::AccessPermission::PrivRw, mmu_armv5::descriptor::CachePolicy::WriteBack);
//! let (at, to) = (mmu_armv5::ModifiedVirtAddr::new(0xC000_0000), mmu_armv5::PhysAddr::new(0));
//! kt.map(&mut sys, at, to, 1 << 20, ram, mmu_armv5::table::SizePolicy::Largest).unwrap().flush_on(&mut sys);
//! // SAFETY: `MockCp15` only records register writes (see `KernelTable::new`).
//! let table = unsafe { KernelTable::new(&sys, kt.root(), L1Encoding::Arm9, &Layout::DEMO, Domain::default()) }.unwrap();
//! let mut fass: Fass<DefaultPolicy, 4, 8, 1> =
//!     Fass::new(Cpd::new(table), DomainSet::EMPTY, DefaultPolicy::default()).unwrap();
//! let (a, b) = (SpaceId(1), SpaceId(2));
//! fass.add_space(a).unwrap();
//! fass.add_space(b).unwrap();
//!
//! // No record before the first full switch.
//! assert_eq!(fass.switch_lean(&mut sys, a), Err(StaleSwitch));
//! fass.switch_to(&mut sys, a).unwrap();
//! fass.switch_to(&mut sys, b).unwrap();
//!
//! // Back to `a` through its record: its DACR and FCSEIDR, nothing else.
//! let rec = fass.lean_switch(a).unwrap();
//! assert_eq!(rec.kind(), LeanKind::Fass);
//! sys.hw.cp15_mut().clear();
//! fass.switch_lean(&mut sys, a).unwrap();
//! assert_eq!(
//!     sys.hw.cp15().events(),
//!     [
//!         Cp15Event::Write(Cp15Reg::Dacr, rec.dacr().unwrap().bits()),
//!         Cp15Event::Write(Cp15Reg::Fcseidr, rec.fcse_pid().unwrap().fcseidr_value()),
//!     ]
//! );
//! assert_eq!(fass.current(), Some(a));
//!
//! // Destroying `a` gives its domain back, which changes the generation:
//! // every record is stale, and the caller goes the full way, which records
//! // `b` afresh.
//! fass.destroy_space(&mut sys, a).unwrap();
//! assert_eq!(fass.switch_lean(&mut sys, b), Err(StaleSwitch));
//! fass.switch_to(&mut sys, b).unwrap();
//! assert_eq!(fass.lean_switch(b).unwrap().generation(), fass.generation());
//! ```

use crate::classic::TableSwitch;
use crate::id::SpaceId;
use core::fmt;
use mmu_armv5::regs::{Dacr, Ttbr};
use mmu_armv5::{Domain, FcsePid};

/// Which strategy made a [`LeanSwitch`], and so what applying it does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[repr(u8)]
pub enum LeanKind {
    /// FASS: DACR and FCSEIDR writes, no maintenance.
    Fass,
    /// Per-space tables with FCSE PIDs: TTBR write, TLB invalidation,
    /// FCSEIDR write.
    Fcse,
    /// Per-space tables, no FCSE: D-cache clean+invalidate, I-cache
    /// invalidation, TTBR write, TLB invalidation.
    Naive,
}

/// The maintenance a [`LeanSwitch`] performs around its register writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Maintenance {
    /// None (FASS).
    Nothing,
    /// The whole TLB invalidated after the TTBR write (FCSE).
    InvalidateTlb,
    /// The D-cache cleaned and invalidated and the I-cache invalidated
    /// before the TTBR write, the TLB invalidated after it (naive).
    FlushCachesAndTlb,
}

/// A space's precomputed switch: the register values and maintenance of a
/// switch to it, valid while its strategy's generation is
/// [`LeanSwitch::generation`]. See the [module docs](self).
///
/// Made and applied by the strategy only (the fields are private); what
/// [`SwitchStrategy::lean_switch`](crate::SwitchStrategy::lean_switch)
/// returns is a copy to look at. 16 bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[must_use = "a precomputed switch does nothing by itself: SwitchStrategy::switch_lean applies it"]
#[repr(C)]
pub struct LeanSwitch {
    pub(crate) gen: u64,
    /// DACR value (FASS) or TTBR value (the others).
    pub(crate) reg: u32,
    pub(crate) pid: FcsePid,
    /// FASS: the space's domain's number; 0 otherwise.
    pub(crate) domain: u8,
    pub(crate) kind: LeanKind,
}

impl LeanSwitch {
    /// A FASS record: `dacr` and `pid`, the space holding `domain`.
    pub(crate) const fn fass(gen: u64, dacr: Dacr, pid: FcsePid, domain: Domain) -> LeanSwitch {
        LeanSwitch {
            gen,
            reg: dacr.bits(),
            pid,
            domain: domain.get(),
            kind: LeanKind::Fass,
        }
    }

    /// A per-table record: `ttbr` and, for [`LeanKind::Fcse`], `pid`.
    pub(crate) const fn table(gen: u64, kind: LeanKind, ttbr: Ttbr, pid: FcsePid) -> LeanSwitch {
        LeanSwitch {
            gen,
            reg: ttbr.bits(),
            pid,
            domain: 0,
            kind,
        }
    }

    /// The generation the record is valid in.
    pub const fn generation(&self) -> u64 {
        self.gen
    }

    /// Which strategy made it.
    pub const fn kind(&self) -> LeanKind {
        self.kind
    }

    /// The DACR value it writes (FASS only).
    pub const fn dacr(&self) -> Option<Dacr> {
        match self.kind {
            LeanKind::Fass => Some(Dacr::from_bits(self.reg)),
            _ => None,
        }
    }

    /// The TTBR value it writes (per-table strategies only).
    pub const fn ttbr(&self) -> Option<Ttbr> {
        match self.kind {
            LeanKind::Fass => None,
            _ => Some(Ttbr::from_bits(self.reg)),
        }
    }

    /// The FCSE PID it writes to FCSEIDR (not naive, which never writes it).
    pub const fn fcse_pid(&self) -> Option<FcsePid> {
        match self.kind {
            LeanKind::Naive => None,
            _ => Some(self.pid),
        }
    }

    /// The maintenance it performs.
    pub const fn maintenance(&self) -> Maintenance {
        match self.kind {
            LeanKind::Fass => Maintenance::Nothing,
            LeanKind::Fcse => Maintenance::InvalidateTlb,
            LeanKind::Naive => Maintenance::FlushCachesAndTlb,
        }
    }
}

/// Lean switches a kernel made itself with a per-table strategy's records,
/// to hand back to the strategy ([`TableSwitch::settle_lean`]): how many,
/// and the record of the last one, which went to [`AppliedLean::space`].
///
/// A kernel whose switch path cannot call into the strategy (an assembly
/// fast path) keeps, per process, the [`LeanSwitch::ttbr`] and
/// [`LeanSwitch::fcse_pid`] of its record with the record's
/// [`generation`](LeanSwitch::generation), and while that is the strategy's
/// generation switches by writing them with the record's
/// [`maintenance`](LeanSwitch::maintenance) itself. The strategy's
/// bookkeeping of those switches (its counters, the PID allocator's epoch
/// and running space, the running space) is then owed: the kernel makes
/// this token from the last switch's record ([`LeanSwitch::applied`]) and
/// settles it before its next call into the strategy, which then counts and
/// records exactly what as many [`switch_lean`](crate::SwitchStrategy::switch_lean)
/// calls would have.
///
/// ```
/// # use fass::{ClassicKind, KernelTable, Layout, Split, SpaceId, SwitchStrategy, TableSwitch};
/// # use mmu_armv5::descriptor::L1Encoding;
/// # use mmu_armv5::maint::{Arm926, CacheMaintenance};
/// # use mmu_armv5::regs::{Cp15Ext, MockCp15};
/// # use mmu_armv5::table::{PoolBlock, TableKind, TablePool, TableRef};
/// # use mmu_armv5::{Domain, ModifiedVirtAddr, PhysAddr};
/// # let mut mem = Box::new([PoolBlock::ZERO; 8]);
/// # let pool = TablePool::new(&mut *mem, PhysAddr::new(0x0100_0000), ModifiedVirtAddr::new(0xC100_0000)).unwrap();
/// # let mut sys = Split::new(Arm926::new(MockCp15::arm926()), pool);
/// # // The kernel's RAM at 3 GiB, one section, built through the mapper.
/// # let mut kt = mmu_armv5::table::PageTable::new(&mut sys).unwrap();
/// # let ram = mmu_armv5::table::MapAttrs::new(mmu_armv5::Domain::default(), mmu_armv5::descriptor::AccessPermission::PrivRw, mmu_armv5::descriptor::CachePolicy::WriteBack);
/// # let (at, to) = (mmu_armv5::ModifiedVirtAddr::new(0xC000_0000), mmu_armv5::PhysAddr::new(0));
/// # kt.map(&mut sys, at, to, 1 << 20, ram, mmu_armv5::table::SizePolicy::Largest).unwrap().flush_on(&mut sys);
/// # // SAFETY: `MockCp15` only records register writes (see `KernelTable::new`).
/// # let kernel = unsafe { KernelTable::new(&sys, kt.root(), L1Encoding::Arm9, &Layout::DEMO, Domain::default()) }.unwrap();
/// let mut naive: TableSwitch<4, 1> = TableSwitch::new(ClassicKind::Naive, Domain::new(1)?, kernel);
/// let (a, b) = (SpaceId(0), SpaceId(1));
/// for s in [a, b] {
///     naive.create_space(&mut sys, s)?;
///     naive.switch_to(&mut sys, s)?;
/// }
/// let before = naive.stats();
/// // The kernel switches b -> a -> b -> a itself with the records it kept.
/// for s in [a, b, a] {
///     let rec = naive.lean_switch(s).unwrap();
///     sys.clean_invalidate_dcache();
///     sys.invalidate_icache();
///     // SAFETY: the space's own table (the mock only records the write).
///     unsafe { sys.set_ttbr(rec.ttbr().unwrap()) };
///     sys.invalidate_tlb();
/// }
/// // Before its next call into the strategy it settles them.
/// let owed = naive.lean_switch(a).unwrap().applied(a, 3);
/// // SAFETY: the CPU runs `a`, switched to with its record's writes and
/// // maintenance, three lean switches in all since the last settle.
/// unsafe { naive.settle_lean(owed) }?;
/// assert_eq!(naive.current(), Some(a));
/// let d = naive.stats().since(&before);
/// assert_eq!((d.switches, d.full_flushes), (3, 3));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[must_use = "the strategy is owed these switches' bookkeeping: hand them back with TableSwitch::settle_lean"]
pub struct AppliedLean {
    rec: LeanSwitch,
    space: SpaceId,
    times: u32,
}

impl LeanSwitch {
    /// `times` lean switches a kernel made itself with records of this
    /// record's generation since it last settled, the last of them with
    /// this record, to `space` (whose record it is): the token to settle.
    pub const fn applied(self, space: SpaceId, times: u32) -> AppliedLean {
        AppliedLean {
            rec: self,
            space,
            times,
        }
    }
}

impl AppliedLean {
    /// The space the last of the switches went to (the running one).
    pub const fn space(&self) -> SpaceId {
        self.space
    }

    /// How many switches.
    pub const fn times(&self) -> u32 {
        self.times
    }

    /// The record of the last switch.
    pub const fn record(&self) -> LeanSwitch {
        self.rec
    }
}

impl<const SPACES: usize, const SEGMENTS: usize> TableSwitch<SPACES, SEGMENTS> {
    /// Takes back the bookkeeping of lean switches a kernel made itself
    /// ([`AppliedLean`]): counts them as `times`
    /// [`switch_lean`](crate::SwitchStrategy::switch_lean) calls would
    /// (switches; naive: full flushes; FCSE: TLB-only invalidations and the
    /// PID allocator's epoch, [`PidAllocator::switched_lean`]) and makes
    /// the space of the last one the running one. No switch (`times` 0):
    /// nothing. Nothing touches the hardware.
    ///
    /// Errors ([`StaleSwitch`], nothing changed): the token's record is not
    /// the space's record of the current generation (the generation moved
    /// on since, the space is gone, or the record is another strategy's).
    ///
    /// # Safety
    /// The CPU runs `a.space()` now, and since the last settle (or full
    /// switch) exactly `a.times()` switches were made, each by writing a
    /// record of this strategy valid at that time with the record's
    /// maintenance ([`LeanSwitch::maintenance`]), with no call into the
    /// strategy in between. The PID allocator's flush bookkeeping follows
    /// this claim: a false one can let a later switch skip a flush another
    /// space's lines needed.
    ///
    /// [`PidAllocator::switched_lean`]: crate::PidAllocator::switched_lean
    pub unsafe fn settle_lean(&mut self, a: AppliedLean) -> Result<(), StaleSwitch> {
        if a.times == 0 {
            return Ok(());
        }
        let rec = valid(&self.lean, a.space.0, self.pids.generation()).ok_or(StaleSwitch)?;
        if rec != a.rec {
            return Err(StaleSwitch);
        }
        let n = u64::from(a.times);
        match rec.kind {
            LeanKind::Naive => {
                self.stats.full_flushes = self.stats.full_flushes.wrapping_add(n);
            }
            LeanKind::Fcse => {
                self.stats.tlb_only = self.stats.tlb_only.wrapping_add(n);
                self.pids.switched_lean_times(a.space, rec.pid, n);
            }
            LeanKind::Fass => return Err(StaleSwitch),
        }
        self.stats.switches = self.stats.switches.wrapping_add(n);
        self.current = Some(a.space);
        Ok(())
    }
}

/// No precomputed switch to apply: none recorded for the space, or one of
/// an earlier generation. Switch with
/// [`SwitchStrategy::switch_to`](crate::SwitchStrategy::switch_to), which
/// records a fresh one. Nothing was written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct StaleSwitch;

impl fmt::Display for StaleSwitch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("no precomputed switch of the current generation")
    }
}

impl core::error::Error for StaleSwitch {}

/// Per space, its record (`None`: none yet, or the space is gone).
pub(crate) type LeanTable<const SPACES: usize> = [Option<LeanSwitch>; SPACES];

/// The valid record of space `id` in `table`, in generation `gen`.
#[inline(always)]
pub(crate) fn valid<const SPACES: usize>(
    table: &LeanTable<SPACES>,
    id: u16,
    gen: u64,
) -> Option<LeanSwitch> {
    match table.get(usize::from(id)) {
        Some(Some(r)) if r.gen == gen => Some(*r),
        _ => None,
    }
}

/// Sets space `id`'s record in `table` (`None`: drops it).
#[inline]
pub(crate) fn set<const SPACES: usize>(
    table: &mut LeanTable<SPACES>,
    id: SpaceId,
    rec: Option<LeanSwitch>,
) {
    if let Some(r) = table.get_mut(usize::from(id.0)) {
        *r = rec;
    }
}

/// After an event that changed the generation from `old` to `new` but left
/// the running space's record right: the record of `running`, if it was
/// valid in `old`, stamped valid in `new`.
pub(crate) fn carry<const SPACES: usize>(
    table: &mut LeanTable<SPACES>,
    running: Option<SpaceId>,
    old: u64,
    new: u64,
) {
    let Some(c) = running else { return };
    if let Some(Some(r)) = table.get_mut(usize::from(c.0)) {
        if r.gen == old {
            r.gen = new;
        }
    }
}

#[cfg(test)]
mod tests;
