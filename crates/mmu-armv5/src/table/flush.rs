//! `#[must_use]` tokens for the maintenance a table change needs.
//!
//! A table write is not seen by the hardware until (1) the D-cache lines
//! holding the changed entries are cleaned and the write buffer drained (the
//! ARM926EJ-S walker reads memory, not the cache), and (2) any TLB entry
//! caching the old translation is invalidated. Mapping into invalid entries
//! needs no TLB maintenance (TLBs never hold faults); unmapping or changing
//! permissions does. Every mutating table operation returns a [`TableFlush`]
//! that records exactly that, and [`TableFlush::flush`] performs it.
//!
//! Before the MMU is on there is nothing to maintain: with an
//! [`MmuOff`] witness, [`TableFlush::discard_mmu_off`]
//! discharges a token safely.

use super::alloc::{AllocId, TableAlloc, TableKind};
use super::boot::MmuOff;
use super::raw::TableRef;
use super::TableError;
use crate::addr::{Align, ModifiedVirtAddr, PhysAddr};
use crate::maint::{line_step, CacheMaintenance, TrustedMaintenance};
use crate::regs::Cp15;

/// Largest number of per-entry TLB invalidations before the whole TLB is invalidated instead.
pub const MAX_TLB_ENTRY_OPS: u32 = 16;
const MAX_RANGES: usize = 8;
/// Separate chains of tables to free one token holds (see [`TableFlush::merge`]).
const MAX_CHAINS: usize = 4;

/// A range of MVAs whose TLB entries are invalidated one by one: an
/// invalidate-by-MVA every [`TlbPages::step`] bytes of
/// `[start, start + bytes)`.
///
/// The fields are private: [`TlbPages::new`] refuses an empty range and one
/// that passes 4 GiB, and the step is an [`Align`], never zero.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct TlbPages {
    start: ModifiedVirtAddr,
    bytes: u32,
    step: Align,
}

impl TlbPages {
    /// The range `[start, start + bytes)`, one invalidation per `step`; `None`
    /// if `bytes` is zero or the range passes the end of the address space.
    #[must_use]
    pub const fn new(start: ModifiedVirtAddr, bytes: u32, step: Align) -> Option<TlbPages> {
        if bytes == 0 || start.as_u32() as u64 + bytes as u64 > 1 << 32 {
            None
        } else {
            Some(TlbPages { start, bytes, step })
        }
    }

    /// First MVA.
    #[must_use]
    pub const fn start(self) -> ModifiedVirtAddr {
        self.start
    }

    /// Length of the range in bytes (never zero).
    #[must_use]
    pub const fn bytes(self) -> u32 {
        self.bytes
    }

    /// Distance between invalidations: the smallest page size changed.
    #[must_use]
    pub const fn step(self) -> Align {
        self.step
    }

    /// Number of invalidate-by-MVA operations.
    #[must_use]
    pub const fn entry_ops(self) -> u32 {
        self.bytes.div_ceil(self.step.bytes())
    }
}

/// Which TLB entries a change made stale.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum TlbInvalidate {
    /// None: only invalid entries were filled.
    None,
    /// One invalidate-by-MVA per page of a range.
    Pages(TlbPages),
    /// The whole TLB.
    All,
}

impl TlbInvalidate {
    /// The scope for `[start, start + len)` with pages of at least `step`
    /// bytes: per-entry invalidations if there are at most
    /// [`MAX_TLB_ENTRY_OPS`], the whole TLB otherwise. A `step` that is not a
    /// power of two is rounded down to one (finer invalidation still covers
    /// every page); a zero `step` or a range that wraps past 4 GiB asks for
    /// the whole TLB, an empty range for nothing.
    #[must_use]
    pub const fn for_range(start: ModifiedVirtAddr, len: u32, step: u32) -> TlbInvalidate {
        if len == 0 {
            return TlbInvalidate::None;
        }
        if step == 0 {
            return TlbInvalidate::All;
        }
        let Some(step) = Align::from_shift(31 - step.leading_zeros()) else {
            return TlbInvalidate::All;
        };
        match TlbPages::new(start, len, step) {
            Some(p) if p.entry_ops() <= MAX_TLB_ENTRY_OPS => TlbInvalidate::Pages(p),
            _ => TlbInvalidate::All,
        }
    }

    /// The smallest scope covering both.
    #[must_use]
    pub fn merge(self, other: TlbInvalidate) -> TlbInvalidate {
        match (self, other) {
            (TlbInvalidate::None, x) | (x, TlbInvalidate::None) => x,
            (TlbInvalidate::Pages(a), TlbInvalidate::Pages(b)) => {
                let s = a.start.as_u32().min(b.start.as_u32());
                let e1 = a.start.as_u32() as u64 + a.bytes as u64;
                let e2 = b.start.as_u32() as u64 + b.bytes as u64;
                let len = e1.max(e2) - s as u64;
                let step = if a.step.bytes() < b.step.bytes() {
                    a.step
                } else {
                    b.step
                };
                match u32::try_from(len)
                    .ok()
                    .and_then(|len| TlbPages::new(ModifiedVirtAddr::new(s), len, step))
                {
                    Some(p) if p.entry_ops() <= MAX_TLB_ENTRY_OPS => TlbInvalidate::Pages(p),
                    _ => TlbInvalidate::All,
                }
            }
            _ => TlbInvalidate::All,
        }
    }

    /// Number of per-entry operations, or `None` for a whole-TLB invalidate.
    #[must_use]
    pub fn entry_ops(self) -> Option<u32> {
        match self {
            TlbInvalidate::None => Some(0),
            TlbInvalidate::Pages(p) => Some(p.entry_ops()),
            TlbInvalidate::All => None,
        }
    }
}

/// A chain of tables waiting to be freed once the maintenance is done.
///
/// The tables are linked through their first entry: the word holds the next
/// table's address and kind with bits \[1:0\] clear, so it is a fault
/// descriptor to a walker that still reaches the table before the flush.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
struct FreeChain {
    head: TableRef,
    count: u32,
    /// The allocator the tables came from: they are freed into no other.
    owner: Option<AllocId>,
}

/// Bits \[3:2\] of a chain link: the kind of the next table (0: end of chain).
const fn link(next: Option<TableRef>) -> u32 {
    match next {
        None => 0,
        Some(t) => {
            let code = match t.kind {
                TableKind::Coarse => 1,
                TableKind::Fine => 2,
                TableKind::L1 => 3,
            };
            t.pa.as_u32() | code << 2
        }
    }
}

fn unlink(word: u32) -> Option<TableRef> {
    let kind = match (word >> 2) & 3 {
        1 => TableKind::Coarse,
        2 => TableKind::Fine,
        3 => TableKind::L1,
        _ => return None,
    };
    TableRef::new(kind, PhysAddr::new(word & !kind.align().mask())).ok()
}

/// The maintenance a table change needs before the hardware may see it, and
/// the tables that may be freed only after it.
///
/// A table the hardware walker could reach is never freed before the
/// maintenance that makes it unreachable: [`PageTable::unmap`] hands the
/// second-level tables it unlinks to this token, and [`TableFlush::flush`]
/// returns them to the allocator after cleaning the first-level entries and
/// invalidating the TLB. A token dropped without `flush` leaks those tables
/// (never frees them), which is safe.
///
/// [`PageTable::unmap`]: super::PageTable::unmap
#[must_use = "a table change is not seen by the hardware until flushed: call `flush` \
              (or `discard_mmu_off` while the MMU is off)"]
#[derive(Debug, PartialEq, Eq)]
pub struct TableFlush {
    tlb: TlbInvalidate,
    clean: heapless::Vec<(u32, u32), MAX_RANGES>,
    clean_all: bool,
    frees: heapless::Vec<FreeChain, MAX_CHAINS>,
    leaked: u32,
}

impl Default for TableFlush {
    fn default() -> Self {
        TableFlush::new()
    }
}

impl TableFlush {
    /// A token asking for nothing.
    pub const fn new() -> TableFlush {
        TableFlush {
            tlb: TlbInvalidate::None,
            clean: heapless::Vec::new(),
            clean_all: false,
            frees: heapless::Vec::new(),
            leaked: 0,
        }
    }

    /// Records that table memory at `[mva, mva + len)` changed.
    pub fn table_written(&mut self, mva: ModifiedVirtAddr, len: u32) {
        if self.clean_all || len == 0 {
            return;
        }
        let (s, e) = (mva.as_u32(), mva.as_u32().saturating_add(len));
        for r in self.clean.iter_mut() {
            let (rs, re) = (r.0, r.0.saturating_add(r.1));
            if s <= re && rs <= e {
                let ns = rs.min(s);
                *r = (ns, re.max(e) - ns);
                return;
            }
        }
        if self.clean.push((s, e - s)).is_err() {
            self.clean.clear();
            self.clean_all = true;
        }
    }

    /// Records that translations of `[start, start + len)` in pages of at least
    /// `step` bytes may be cached in the TLB and are now stale (see
    /// [`TlbInvalidate::for_range`] for how odd steps are treated).
    pub fn tlb_stale(&mut self, start: ModifiedVirtAddr, len: u32, step: u32) {
        self.tlb = self.tlb.merge(TlbInvalidate::for_range(start, len, step));
    }

    /// Records that the whole TLB must be invalidated.
    pub fn tlb_all(&mut self) {
        self.tlb = TlbInvalidate::All;
    }

    /// Hands `table` to the token: [`TableFlush::flush`] returns it to the
    /// allocator after the maintenance. Its first entry is overwritten with
    /// a fault descriptor that links the token's other tables.
    ///
    /// # Errors
    /// [`TableError::UnreachableTable`] if `alloc` cannot reach the table
    /// (then the token is unchanged).
    ///
    /// # Safety
    /// `table` came from `alloc.allocate(table.kind)` and is owned by the
    /// caller, who gives it up: it is not freed elsewhere and not handed to
    /// another token. Once this token's maintenance is done, no descriptor
    /// and no translation table base points at it any more. Until then
    /// nothing but the walker may use it.
    pub unsafe fn free_after_flush<A: TableAlloc + ?Sized>(
        &mut self,
        alloc: &A,
        table: TableRef,
    ) -> Result<(), TableError> {
        let owner = alloc.alloc_id();
        let same = self.frees.last().filter(|c| c.owner == owner);
        if same.is_none() && self.frees.is_full() {
            // No room for a chain of another allocator: leaked, as `merge`
            // does past its chains. Nothing is written.
            table.read(alloc, 0)?;
            self.leaked = self.leaked.saturating_add(1);
            return Ok(());
        }
        let next = same.map(|c| c.head);
        // SAFETY: the caller gives the table up to this token; entry 0 becomes
        // a fault descriptor (bits [1:0] clear), so a walker that still
        // reaches it before the maintenance finds a translation fault.
        unsafe { table.write(alloc, 0, link(next))? };
        match self.frees.last_mut().filter(|c| c.owner == owner) {
            Some(c) => {
                c.head = table;
                c.count += 1;
            }
            None => {
                // Cannot fail: checked above.
                let _ = self.frees.push(FreeChain {
                    head: table,
                    count: 1,
                    owner,
                });
            }
        }
        Ok(())
    }

    /// Checks that every table this token will free came from `alloc`.
    ///
    /// [`TableFlush::flush`] frees tables only into the allocator they came
    /// from, and leaks (never frees) the others; this says beforehand
    /// whether that would happen.
    ///
    /// # Errors
    /// [`TableError::WrongAllocator`] if a table came from another
    /// allocator (see [`AllocId`]).
    pub fn check_alloc<A: TableAlloc + ?Sized>(&self, alloc: &A) -> Result<(), TableError> {
        let id = alloc.alloc_id();
        if self.frees.iter().all(|c| c.owner == id) {
            Ok(())
        } else {
            Err(TableError::WrongAllocator)
        }
    }

    /// Combines two tokens into one covering both.
    ///
    /// Tables waiting to be freed are kept as separate chains (joining them
    /// needs the allocator); past four chains, the tables of the extra ones
    /// are leaked, never freed, and counted by [`TableFlush::leaked_tables`].
    pub fn merge(&mut self, other: TableFlush) {
        self.tlb = self.tlb.merge(other.tlb);
        if other.clean_all {
            self.clean.clear();
            self.clean_all = true;
        }
        for (s, l) in other.clean {
            self.table_written(ModifiedVirtAddr::new(s), l);
        }
        self.leaked = self.leaked.saturating_add(other.leaked);
        for c in other.frees {
            if let Err(c) = self.frees.push(c) {
                self.leaked = self.leaked.saturating_add(c.count);
            }
        }
    }

    /// The TLB maintenance this token will perform.
    #[must_use]
    pub fn tlb(&self) -> TlbInvalidate {
        self.tlb
    }

    /// The table-memory ranges whose D-cache lines this token will clean, as (mva, len)
    #[must_use]
    pub fn clean_ranges(&self) -> &[(u32, u32)] {
        &self.clean
    }

    /// Whether too many ranges changed and the whole D-cache will be cleaned.
    #[must_use]
    pub fn cleans_whole_dcache(&self) -> bool {
        self.clean_all
    }

    /// Number of tables [`TableFlush::flush`] will free after the maintenance.
    #[must_use]
    pub fn tables_to_free(&self) -> u32 {
        self.frees.iter().fold(0, |n, c| n.saturating_add(c.count))
    }

    /// Number of tables this token gave up on freeing (see [`TableFlush::merge`]).
    #[must_use]
    pub fn leaked_tables(&self) -> u32 {
        self.leaked
    }

    /// Performs the maintenance (clean the changed table lines and drain
    /// the write buffer, then invalidate the stale TLB entries), then frees
    /// the tables the change unlinked.
    ///
    /// Tables are freed only into the allocator they came from (compared
    /// by [`TableAlloc::alloc_id`]): given another, they are leaked, never
    /// freed (see [`TableFlush::check_alloc`]).
    ///
    /// `m` and `alloc` are the CPU's maintenance and the allocator of the
    /// table memory; use [`TableFlush::flush_on`] when one value is both.
    /// `m` is a [`TrustedMaintenance`]: the tables are freed on the word of
    /// its maintenance, so a `CacheMaintenance` that does nothing (a mock
    /// on the ARM target) cannot discharge a token; with such a one, do the
    /// maintenance yourself and use the `unsafe` [`TableFlush::ignore`] or
    /// [`TableFlush::ignore_and_free`].
    pub fn flush<M: TrustedMaintenance + ?Sized, A: TableAlloc + ?Sized>(
        self,
        m: &mut M,
        alloc: &mut A,
    ) {
        self.maintain(m);
        self.free_tables(alloc);
    }

    /// [`TableFlush::flush`] for a value that is both the maintenance and
    /// the allocator (a platform, or the `armv5-sim` machine).
    pub fn flush_on<S: TrustedMaintenance + TableAlloc + ?Sized>(self, sys: &mut S) {
        self.maintain(sys);
        self.free_tables(sys);
    }

    fn maintain<M: CacheMaintenance + ?Sized>(&self, m: &mut M) {
        if self.clean_all {
            m.clean_invalidate_dcache();
        } else if !self.clean.is_empty() {
            let line = line_step(M::DCACHE_LINE);
            for &(s, l) in &self.clean {
                let mut a = s & !(line - 1);
                let end = s.saturating_add(l);
                while a < end {
                    m.clean_dcache_line(ModifiedVirtAddr::new(a));
                    a = match a.checked_add(line) {
                        Some(n) => n,
                        None => break,
                    };
                }
            }
            m.drain_write_buffer();
        }
        match self.tlb {
            TlbInvalidate::None => {}
            TlbInvalidate::All => m.invalidate_tlb(),
            TlbInvalidate::Pages(p) => {
                let mut off = 0u32;
                while off < p.bytes {
                    m.invalidate_tlb_entry(ModifiedVirtAddr::new(
                        p.start.as_u32().wrapping_add(off),
                    ));
                    off = match off.checked_add(p.step.bytes()) {
                        Some(n) => n,
                        None => break,
                    };
                }
            }
        }
    }

    /// Returns every chained table to `alloc`. A link that does not decode
    /// to a reachable table ends its chain: the rest is leaked, never freed
    /// at a wrong address.
    ///
    /// A chain whose tables came from another allocator (another
    /// [`AllocId`]) is leaked: freeing it into `alloc` would release
    /// whatever `alloc` keeps at those addresses.
    fn free_tables<A: TableAlloc + ?Sized>(self, alloc: &mut A) {
        let id = alloc.alloc_id();
        for chain in self.frees {
            if chain.owner != id {
                continue;
            }
            let mut cur = Some(chain.head);
            for _ in 0..chain.count {
                let Some(t) = cur else { break };
                let Ok(word) = t.read(alloc, 0) else { break };
                // SAFETY: every chained table was given up to this token by
                // its owner (`free_after_flush`'s contract, or the mapper
                // unlinking a table it owns), and the maintenance above made
                // it unreachable by the walker and the TLB.
                unsafe { alloc.deallocate(t.kind, t.pa) };
                cur = unlink(word);
            }
        }
    }

    /// Discharges the token while the MMU is off: no maintenance, and the
    /// tables it carries go back to `alloc` at once.
    ///
    /// Safe because `mmu_off` proves that no walker reads the tables and
    /// that no TLB entry can be used before the MMU is switched on, which
    /// invalidates the TLB and the caches ([`MmuOff::enable_mmu`]): a table
    /// unlinked now is unreachable already.
    ///
    /// [`MmuOff::enable_mmu`]: super::MmuOff::enable_mmu
    pub fn discard_mmu_off<C: Cp15 + ?Sized, A: TableAlloc + ?Sized>(
        self,
        mmu_off: &MmuOff<'_, C>,
        alloc: &mut A,
    ) {
        let _ = mmu_off;
        self.free_tables(alloc);
    }

    /// Drops the token without doing the maintenance. Tables the token
    /// would have freed are leaked (never freed).
    ///
    /// # Safety
    /// The hardware must not depend on the change yet: the MMU is off, the
    /// table is not reachable from the translation table base, or the caller
    /// performs equivalent maintenance itself. (With the MMU off,
    /// [`TableFlush::discard_mmu_off`] does this safely.)
    pub unsafe fn ignore(self) {}

    /// Drops the token without doing the maintenance, and frees the tables
    /// it carries right away.
    ///
    /// # Safety
    /// As for [`TableFlush::ignore`], and the walker cannot reach the carried
    /// tables any more: it never could (the MMU is off, or they were never
    /// reachable from a loaded table), or the caller did the maintenance.
    pub unsafe fn ignore_and_free<A: TableAlloc + ?Sized>(self, alloc: &mut A) {
        self.free_tables(alloc);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::regs::{Cp15Event, Cp15Op, MockCp15};
    use proptest::prelude::*;

    fn p(s: u32, l: u32, st: Align) -> TlbInvalidate {
        TlbInvalidate::Pages(TlbPages::new(ModifiedVirtAddr::new(s), l, st).unwrap())
    }

    #[test]
    fn tlb_scopes_merge_and_escalate() {
        let k4 = Align::KIB_4;
        assert_eq!(
            TlbInvalidate::None.merge(p(0x1000, 0x1000, k4)),
            p(0x1000, 0x1000, k4)
        );
        assert_eq!(
            p(0x1000, 0x1000, k4).merge(p(0x3000, 0x1000, k4)),
            p(0x1000, 0x3000, k4)
        );
        assert_eq!(
            p(0, 0x1000, k4).merge(p(0x10_0000, 0x1000, k4)),
            TlbInvalidate::All
        );
        assert_eq!(p(0, 0x10_0000, Align::MIB_1).entry_ops(), Some(1));
    }

    /// Regression: `TlbInvalidate::Pages` had public fields, so a step of
    /// zero divided by zero in `entry_ops` and `merge`. The step is now an
    /// `Align` behind a checked constructor, and `for_range` (what
    /// `tlb_stale` uses) turns any `u32` step into a valid scope.
    #[test]
    fn odd_and_zero_steps_give_valid_scopes() {
        let a = ModifiedVirtAddr::new(0x4000);
        assert_eq!(TlbInvalidate::for_range(a, 0x1000, 0), TlbInvalidate::All);
        assert_eq!(TlbInvalidate::for_range(a, 0, 0x1000), TlbInvalidate::None);
        // 3000 rounds down to 2048: finer, still covering every page.
        assert_eq!(
            TlbInvalidate::for_range(a, 0x1000, 3000),
            p(0x4000, 0x1000, Align::new(2048).unwrap())
        );
        // Wrapping past 4 GiB: the whole TLB.
        assert_eq!(
            TlbInvalidate::for_range(ModifiedVirtAddr::new(0xFFFF_F000), 0x2000, 0x1000),
            TlbInvalidate::All
        );
        assert!(TlbPages::new(a, 0, Align::KIB_4).is_none());
        assert!(TlbPages::new(ModifiedVirtAddr::new(0xFFFF_F000), 0x1000, Align::KIB_4).is_some());
    }

    proptest! {
        #![proptest_config(crate::testing::proptest_config(256))]
        #[test]
        fn scopes_from_any_input_merge_and_flush_without_panicking(
            ranges in proptest::collection::vec((any::<u32>(), any::<u32>(), any::<u32>()), 1..4)
        ) {
            let mut f = TableFlush::new();
            for &(s, l, st) in &ranges {
                f.tlb_stale(ModifiedVirtAddr::new(s), l, st);
            }
            let ops = f.tlb().entry_ops();
            let mut a = crate::maint::Arm926::new(MockCp15::arm926());
            f.maintain(&mut a);
            // SAFETY: test token; its maintenance was just performed.
            unsafe { f.ignore() };
            let m = a.into_inner();
            let tlb_entry_ops = m
                .events()
                .iter()
                .filter(|e| matches!(e, Cp15Event::Op(Cp15Op::InvalidateTlbEntry, _)))
                .count() as u32;
            let all = m.events().contains(&Cp15Event::Op(Cp15Op::InvalidateTlb, 0));
            match ops {
                Some(n) => prop_assert!(n <= MAX_TLB_ENTRY_OPS && n == tlb_entry_ops && !all),
                None => prop_assert!(all && tlb_entry_ops == 0),
            }
        }
    }

    #[test]
    fn clean_ranges_coalesce_then_overflow_to_whole_cache() {
        let mut f = TableFlush::new();
        f.table_written(ModifiedVirtAddr::new(0x1000), 4);
        f.table_written(ModifiedVirtAddr::new(0x1004), 4);
        assert_eq!(f.clean_ranges(), &[(0x1000, 8)]);
        for i in 0..8 {
            f.table_written(ModifiedVirtAddr::new(0x10_0000 * (i + 1)), 4);
        }
        assert!(f.cleans_whole_dcache());
        // SAFETY: test token, no hardware involved.
        unsafe { f.ignore() };
    }
}
