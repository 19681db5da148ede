//! Sequences of every table operation on two [`PageTable`]s sharing one
//! [`ledger`](super::ledger) allocator, checked against a reference model:
//! the `mapper` property test and the `mapper` fuzz target drive
//! [`Sequence`] with their own generators.
//!
//! The model is, per table, a map from the first MVA of every page to its
//! frame and attributes. After every step:
//! * both tables hold exactly the model's mappings (outside the slots whose
//!   second-level table was shared, which are not modelled);
//! * no first-level entry of either table links a freed table;
//! * the operation freed nothing (only a flush frees, after its
//!   maintenance), and a flush freed exactly the tables its token carried.
//!
//! Each operation's outcome is predicted where the model decides it:
//! `unmap` and `protect` succeed exactly when the range is tiled by whole
//! mapped pages; `map` fails on an overlap, another domain's table or a
//! tiny page in a coarse table, and may only fail for want of table memory
//! when it needs a new table. A lookup compares [`PageTable::lookup`] with
//! the model and with [`translate`] (as a manager: the page's frame, size,
//! domain, permission and cache policy; with no domain access: a domain
//! fault at the page's level, or a translation fault where nothing is
//! mapped). At the end every token is flushed and both tables released:
//! the allocator then holds exactly the tables of dropped tokens and the
//! shared ones.
#![allow(dead_code)]

use super::ledger::{Event, Ledger, LedgerAlloc};
use mmu_armv5::descriptor::{AccessPermission as Ap, CachePolicy, L1Descriptor};
use mmu_armv5::fault::{FaultKind, FaultLevel};
use mmu_armv5::regs::Dacr;
use mmu_armv5::size::PageSizeKind;
use mmu_armv5::table::{MapAttrs, PageTable, PoolBlock, SizePolicy, TableError, TableFlush};
use mmu_armv5::translate::{translate, Access, AccessType, MmuState};
use mmu_armv5::{Domain, FcsePid, ModifiedVirtAddr as Mva, PhysAddr, VirtAddr};
use std::collections::{BTreeMap, BTreeSet};

/// First-level slots the sequences use (pages 0..4 of each size in each,
/// so operations often meet each other).
pub const SLOTS: u8 = 6;
/// Table memory: 8 blocks of 16 KiB.
pub const BLOCKS: usize = 8;

/// One operation. Every field is taken modulo its range, so any value is a
/// valid operation.
#[derive(Clone, Copy, Debug)]
pub enum Op {
    /// Map page `page` of size `size` in `slot` to the frame numbered
    /// `frame` of that size, with the attributes `attrs` picks.
    Map {
        t: usize,
        slot: u8,
        page: u8,
        size: u8,
        frame: u16,
        attrs: u8,
    },
    /// Unmap that page's range.
    Unmap {
        t: usize,
        slot: u8,
        page: u8,
        size: u8,
    },
    /// Change that range's permission and cache policy.
    Protect {
        t: usize,
        slot: u8,
        page: u8,
        size: u8,
        attrs: u8,
    },
    /// Write a fault (`what` 0), a section (1) or slot `from`'s entry (2)
    /// into `slot` with [`PageTable::set_l1_entry`].
    SetL1 {
        t: usize,
        slot: u8,
        what: u8,
        from: u8,
    },
    /// Share `count` slots from `first` of table 0 into table 1.
    Share { first: u8, count: u8 },
    /// Move entry `from` to slot `to`.
    Move { t: usize, from: u8, to: u8 },
    /// Look up the KiB `kib` of `slot`.
    Lookup { t: usize, slot: u8, kib: u16 },
    /// Flush the tokens merged so far.
    Flush,
    /// Use table `t` and the pending token with a second pool over the same
    /// physical base (issue 26, item 1): every operation is refused with
    /// [`TableError::WrongAllocator`], the token frees nothing into it.
    Foreign { t: usize, slot: u8 },
}

/// What happens to an operation's token.
#[derive(Clone, Copy, Debug)]
pub enum Mode {
    /// Flushed at once.
    Now,
    /// Merged into the pending token, flushed by [`Op::Flush`] or at the end.
    Later,
    /// Dropped: its tables leak, never freed early.
    Drop,
}

/// A page of the model.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Page {
    pub pa: u32,
    pub size: PageSizeKind,
    pub domain: Domain,
    pub ap: Ap,
    pub cache: CachePolicy,
}

/// The page size `size` selects.
pub fn kind(size: u8) -> PageSizeKind {
    [
        PageSizeKind::Tiny,
        PageSizeKind::Small,
        PageSizeKind::Large,
        PageSizeKind::Section,
    ][usize::from(size % 4)]
}

/// The MVA of page `page` of size `size` in `slot`.
pub fn at(slot: u8, page: u8, size: u8) -> u32 {
    let k = kind(size);
    let pages_per_mib = (1u32 << 20) >> k.shift();
    (u32::from(slot % SLOTS) << 20) | ((u32::from(page) % pages_per_mib) << k.shift())
}

/// Domain (1 or 2), permission and cache policy from one byte.
pub fn attrs_of(b: u8) -> (Domain, Ap, CachePolicy) {
    const APS: [Ap; 4] = [Ap::NoneOrRom, Ap::PrivRw, Ap::PrivRwUserRo, Ap::ReadWrite];
    const CACHES: [CachePolicy; 4] = [
        CachePolicy::Uncached,
        CachePolicy::Buffered,
        CachePolicy::WriteThrough,
        CachePolicy::WriteBack,
    ];
    (
        Domain::new(1 + (b & 1)).unwrap(),
        APS[usize::from(b >> 1 & 3)],
        CACHES[usize::from(b >> 3 & 3)],
    )
}

fn slot_of(mva: u32) -> u8 {
    (mva >> 20) as u8
}

macro_rules! ensure {
    ($cond:expr, $($fmt:tt)+) => {
        if !$cond {
            return Err(format!($($fmt)+));
        }
    };
}

/// Two tables, their allocator, the model and the bookkeeping of tokens.
pub struct Sequence<'m> {
    ledger: Ledger,
    a: LedgerAlloc<'m, BLOCKS>,
    tables: [PageTable; 2],
    model: [BTreeMap<u32, Page>; 2],
    /// Per table, the slots whose second-level table is fine (holds tiny pages).
    fine: [BTreeSet<u8>; 2],
    /// Slots whose second-level table was ever shared: not modelled.
    shared: BTreeSet<u8>,
    /// The second-level tables given up by sharing (never freed).
    shared_tables: BTreeSet<u32>,
    pending: TableFlush,
    /// Tables of dropped tokens.
    leaked: u32,
    /// Steps and lookups that found a mapping (for the callers' coverage checks).
    pub steps: u32,
    pub hits: u32,
}

impl<'m> Sequence<'m> {
    /// Two empty tables over `mem`.
    pub fn new(mem: &'m mut [PoolBlock; BLOCKS]) -> Sequence<'m> {
        let ledger = Ledger::default();
        let mut a = ledger.alloc(mem);
        let tables = [
            PageTable::new(&mut a).unwrap(),
            PageTable::new(&mut a).unwrap(),
        ];
        Sequence {
            ledger,
            a,
            tables,
            model: [BTreeMap::new(), BTreeMap::new()],
            fine: [BTreeSet::new(), BTreeSet::new()],
            shared: BTreeSet::new(),
            shared_tables: BTreeSet::new(),
            pending: TableFlush::new(),
            leaked: 0,
            steps: 0,
            hits: 0,
        }
    }

    /// The model's pages of table `t` in `[mva, mva + len)`.
    fn pages_in(&self, t: usize, mva: u32, len: u32) -> Vec<(u32, Page)> {
        let end = u64::from(mva) + u64::from(len);
        self.model[t]
            .iter()
            .filter(|(m, p)| {
                u64::from(**m) < end && u64::from(**m) + u64::from(p.size.size()) > u64::from(mva)
            })
            .map(|(m, p)| (*m, *p))
            .collect()
    }

    /// Whether `[mva, mva + len)` is tiled by whole pages of the model.
    fn tiled(&self, t: usize, mva: u32, len: u32) -> bool {
        let mut off = 0;
        while off < len {
            match self.model[t].get(&(mva + off)) {
                Some(p) if p.size.size() <= len - off => off += p.size.size(),
                _ => return false,
            }
        }
        true
    }

    /// The model's second-level pages in `slot` of table `t`.
    fn l2_pages(&self, t: usize, slot: u8) -> Vec<Page> {
        self.pages_in(t, u32::from(slot) << 20, 1 << 20)
            .into_iter()
            .map(|(_, p)| p)
            .filter(|p| p.size != PageSizeKind::Section)
            .collect()
    }

    /// [`Op::Foreign`].
    fn foreign(&mut self, t: usize, slot: u8) -> Result<(), String> {
        let mut m = super::ledger::mem::<1>();
        let mut b = mmu_armv5::table::TablePool::new(
            &mut m,
            PhysAddr::new(super::ledger::BASE),
            Mva::new(0xC400_0000),
        )
        .map_err(|e| e.to_string())?;
        let mva = Mva::new(u32::from(slot % SLOTS) << 20);
        let attrs = MapAttrs::new(
            Domain::new(1).unwrap(),
            Ap::ReadWrite,
            CachePolicy::WriteBack,
        );
        let wrong = Err(TableError::WrongAllocator);
        let tab = &mut self.tables[t];
        let map = tab.map(
            &mut b,
            mva,
            PhysAddr::new(0),
            0x1000,
            attrs,
            SizePolicy::Largest,
        );
        ensure!(
            map.as_ref().err() == Some(&TableError::WrongAllocator),
            "map with a foreign pool: {map:?}"
        );
        let unmap = tab.unmap(&mut b, mva, 0x1000);
        ensure!(
            unmap.as_ref().err() == Some(&TableError::WrongAllocator),
            "unmap with a foreign pool: {unmap:?}"
        );
        ensure!(
            tab.lookup(&b, mva).map(|_| ()) == wrong,
            "lookup with a foreign pool"
        );
        ensure!(
            tab.l1_entry(&b, 0).map(|_| ()) == wrong,
            "l1_entry with a foreign pool"
        );
        let carries = self.pending.tables_to_free() > 0;
        ensure!(
            self.pending.check_alloc(&b).is_err() == carries,
            "the pending token's tables are the ledger pool's"
        );
        let id = mmu_armv5::table::TableAlloc::alloc_id(&b);
        let ours = mmu_armv5::table::TableAlloc::alloc_id(&self.a);
        ensure!(id.is_some() && id != ours, "pools have their own ids");
        ensure!(b.free_units() == 16, "the foreign pool is untouched");
        Ok(())
    }

    /// Runs one operation and checks it.
    pub fn step(&mut self, op: Op, mode: Mode) -> Result<(), String> {
        self.steps += 1;
        self.ledger.clear_log();
        let r = match op {
            Op::Map {
                t,
                slot,
                page,
                size,
                frame,
                attrs,
            } => self.map(t % 2, slot, page, size, frame, attrs)?,
            Op::Unmap {
                t,
                slot,
                page,
                size,
            } => {
                let (t, k, mva) = (t % 2, kind(size), at(slot, page, size));
                let r = self.tables[t].unmap(&mut self.a, Mva::new(mva), k.size());
                if !self.shared.contains(&slot_of(mva)) {
                    let want = self.tiled(t, mva, k.size());
                    ensure!(r.is_ok() == want, "{op:?}: {r:?}, model says {want}");
                    if want {
                        self.model[t].retain(|&m, _| m < mva || m >= mva + k.size());
                        if self.l2_pages(t, slot_of(mva)).is_empty() {
                            self.fine[t].remove(&slot_of(mva));
                        }
                    }
                }
                Some(r)
            }
            Op::Protect {
                t,
                slot,
                page,
                size,
                attrs,
            } => {
                let (t, k, mva) = (t % 2, kind(size), at(slot, page, size));
                let (_, ap, cache) = attrs_of(attrs);
                let r = self.tables[t].protect(&mut self.a, Mva::new(mva), k.size(), ap, cache);
                if !self.shared.contains(&slot_of(mva)) {
                    let want = self.tiled(t, mva, k.size());
                    ensure!(r.is_ok() == want, "{op:?}: {r:?}, model says {want}");
                    if want {
                        for (m, _) in self.pages_in(t, mva, k.size()) {
                            let p = self.model[t].get_mut(&m).unwrap();
                            p.ap = ap;
                            p.cache = cache;
                        }
                    }
                }
                Some(r)
            }
            Op::SetL1 {
                t,
                slot,
                what,
                from,
            } => {
                let (t, slot, from) = (t % 2, slot % SLOTS, from % SLOTS);
                let desc = match what % 3 {
                    0 => L1Descriptor::FAULT,
                    1 => L1Descriptor::from_bits(0x0900_0000 | (1 << 5) | 0b10),
                    _ => self.tables[t].l1_entry(&self.a, usize::from(from)).unwrap(),
                };
                let r = self.tables[t].set_l1_entry(&self.a, usize::from(slot), desc);
                match &r {
                    Err(e) => ensure!(
                        desc.table().is_some()
                            && *e == TableError::TableLinkRefused(usize::from(slot)),
                        "{op:?}: {e:?} (only table links are refused)"
                    ),
                    Ok(_) => {
                        ensure!(desc.table().is_none(), "{op:?} installed a table link");
                        self.model[t].retain(|&m, _| slot_of(m) != slot);
                        self.fine[t].remove(&slot);
                        if let L1Descriptor::Section(s) = desc {
                            self.model[t].insert(
                                u32::from(slot) << 20,
                                Page {
                                    pa: s.frame.start().as_u32(),
                                    size: PageSizeKind::Section,
                                    domain: s.domain,
                                    ap: s.ap,
                                    cache: s.cache,
                                },
                            );
                        }
                    }
                }
                Some(r)
            }
            Op::Share { first, count } => {
                let first = first % SLOTS;
                let end = (first + 1 + count % 2).min(SLOTS);
                let (k, p) = self.tables.split_at_mut(1);
                let slots = usize::from(first)..usize::from(end);
                let r = k[0].share_l1_entries(&self.a, &mut p[0], slots.clone());
                if r.is_ok() {
                    for s in slots {
                        let slot = s as u8;
                        if let Some((_, pa)) = k[0].l1_entry(&self.a, s).unwrap().table() {
                            self.shared.insert(slot);
                            self.shared_tables.insert(pa.as_u32());
                        }
                        let copied: Vec<_> = self.model[0]
                            .iter()
                            .filter(|(m, _)| slot_of(**m) == slot)
                            .map(|(m, v)| (*m, *v))
                            .collect();
                        self.model[1].extend(copied);
                    }
                }
                Some(r)
            }
            Op::Move { t, from, to } => {
                let (t, from, to) = (t % 2, from % SLOTS, to % SLOTS);
                let r = self.tables[t].move_l1_entry(&self.a, usize::from(from), usize::from(to));
                if r.is_ok() && from != to {
                    let moved: Vec<_> = self.model[t]
                        .iter()
                        .filter(|(m, _)| slot_of(**m) == from)
                        .map(|(m, v)| (*m, *v))
                        .collect();
                    self.model[t].retain(|&m, _| slot_of(m) != from);
                    for (m, v) in moved {
                        self.model[t].insert((m & 0xF_FFFF) | (u32::from(to) << 20), v);
                    }
                    if self.fine[t].remove(&from) {
                        self.fine[t].insert(to);
                    }
                    if self.shared.contains(&from) {
                        self.shared.insert(to);
                    }
                }
                Some(r)
            }
            Op::Lookup { t, slot, kib } => {
                let mva = (u32::from(slot % SLOTS) << 20) | (u32::from(kib % 1024) << 10);
                self.lookup(t % 2, mva)?;
                None
            }
            Op::Flush => {
                let f = core::mem::take(&mut self.pending);
                self.flush(f)?;
                None
            }
            Op::Foreign { t, slot } => {
                self.foreign(t % 2, slot)?;
                None
            }
        };
        // Operations never free: only a flush does, after its maintenance.
        ensure!(
            matches!(op, Op::Flush)
                || !self
                    .ledger
                    .log()
                    .iter()
                    .any(|e| matches!(e, Event::Free(_))),
            "{op:?} freed a table before any maintenance"
        );
        if let Some(Ok(f)) = r {
            match mode {
                Mode::Now => self.flush(f)?,
                Mode::Later => self.pending.merge(f),
                Mode::Drop => {
                    self.leaked += f.tables_to_free();
                    drop(f);
                }
            }
        }
        self.check()
    }

    fn map(
        &mut self,
        t: usize,
        slot: u8,
        page: u8,
        size: u8,
        frame: u16,
        attrs: u8,
    ) -> Result<Option<Result<TableFlush, TableError>>, String> {
        let k = kind(size);
        let mva = at(slot, page, size);
        let slot = slot_of(mva);
        let pa = (u32::from(frame) << k.shift()) & !(k.size() - 1);
        let (domain, ap, cache) = attrs_of(attrs);
        let r = self.tables[t].map(
            &mut self.a,
            Mva::new(mva),
            PhysAddr::new(pa),
            k.size(),
            MapAttrs::new(domain, ap, cache),
            SizePolicy::Exactly(k),
        );
        if self.shared.contains(&slot) {
            return Ok(Some(r));
        }
        let l2 = self.l2_pages(t, slot);
        let section = k == PageSizeKind::Section;
        let why = if !self.pages_in(t, mva, k.size()).is_empty() {
            Some("overlap")
        } else if !section && l2.iter().any(|p| p.domain != domain) {
            Some("another domain's table")
        } else if k == PageSizeKind::Tiny && !l2.is_empty() && !self.fine[t].contains(&slot) {
            Some("tiny page in a coarse table")
        } else {
            None
        };
        match (&r, why) {
            (Err(_), Some(_)) => {}
            (Ok(_), None) => {
                self.model[t].insert(
                    mva,
                    Page {
                        pa,
                        size: k,
                        domain,
                        ap,
                        cache,
                    },
                );
                if k == PageSizeKind::Tiny && l2.is_empty() {
                    self.fine[t].insert(slot);
                }
            }
            (Err(TableError::OutOfTableMemory), None) if !section && l2.is_empty() => {}
            _ => {
                return Err(format!(
                    "map {k:?} at {mva:#x} in table {t}: {r:?}, model says {}",
                    why.unwrap_or("ok")
                ))
            }
        }
        Ok(Some(r))
    }

    /// Flushes `f` and checks it freed exactly its tables.
    fn flush(&mut self, f: TableFlush) -> Result<(), String> {
        let n = f.tables_to_free();
        self.ledger.clear_log();
        f.flush(&mut self.ledger.maint(), &mut self.a);
        let freed = self
            .ledger
            .log()
            .iter()
            .filter(|e| matches!(e, Event::Free(_)))
            .count();
        ensure!(
            freed as u32 == n,
            "a flush carrying {n} tables freed {freed}"
        );
        Ok(())
    }

    /// Compares one lookup with the model and with the software walk.
    fn lookup(&mut self, t: usize, mva: u32) -> Result<(), String> {
        let found = self.tables[t]
            .lookup(&self.a, Mva::new(mva))
            .map_err(|e| format!("lookup {mva:#x}: {e:?}"))?;
        self.hits += u32::from(found.is_some());
        if !self.shared.contains(&slot_of(mva)) {
            let want = self.model[t]
                .range(..=mva)
                .next_back()
                .filter(|(m, p)| mva - **m < p.size.size())
                .map(|(m, p)| (*m, *p));
            let got = found.map(|m| {
                (
                    m.mva.as_u32(),
                    Page {
                        pa: m.pa.as_u32(),
                        size: m.size,
                        domain: m.domain,
                        ap: m.ap.0[0],
                        cache: m.cache,
                    },
                )
            });
            ensure!(
                got == want,
                "lookup {mva:#x} in table {t}: {got:x?}, model {want:x?}"
            );
        }
        let state = |dacr| MmuState {
            ttb: self.tables[t].root(),
            dacr,
            pid: FcsePid::ZERO,
            system_protect: false,
            rom_protect: false,
            alignment_check: false,
        };
        let access = Access {
            va: VirtAddr::new(mva),
            kind: AccessType::Read,
            privileged: true,
            size: 4,
        };
        let managed = translate(&self.a, &state(Dacr::ALL_MANAGER), &access);
        let denied = translate(&self.a, &state(Dacr::NONE), &access);
        match found {
            Some(m) => {
                let sub = ((mva - m.mva.as_u32()) / (m.size.size() / 4).max(1)).min(3) as usize;
                let tr = managed.map_err(|f| format!("translate {mva:#x}: {f:?}, lookup {m:?}"))?;
                ensure!(
                    tr.pa.as_u32() == m.pa.as_u32() + (mva - m.mva.as_u32())
                        && tr.size == m.size
                        && tr.domain == m.domain
                        && tr.cache == m.cache
                        && tr.ap
                            == m.ap.0[if m.size == PageSizeKind::Section {
                                0
                            } else {
                                sub
                            }],
                    "translate {mva:#x}: {tr:?}, lookup {m:?}"
                );
                let level = if m.size == PageSizeKind::Section {
                    FaultLevel::Section
                } else {
                    FaultLevel::Page
                };
                ensure!(
                    denied.map_err(|f| (f.kind, f.domain))
                        == Err((FaultKind::Domain(level), Some(m.domain))),
                    "translate {mva:#x} without domain access: {denied:?}"
                );
            }
            None => ensure!(
                matches!(managed, Err(f) if matches!(f.kind, FaultKind::Translation(_))),
                "translate {mva:#x}: {managed:?}, lookup finds nothing"
            ),
        }
        Ok(())
    }

    /// The invariants after every step.
    fn check(&self) -> Result<(), String> {
        for (t, table) in self.tables.iter().enumerate() {
            // No first-level entry links a freed table.
            for s in 0..usize::from(SLOTS) {
                if let Some((_, pa)) = table.l1_entry(&self.a, s).unwrap().table() {
                    ensure!(
                        self.ledger.is_live(pa),
                        "table {t} slot {s} links freed {pa}"
                    );
                }
            }
            // The table holds exactly the model's mappings.
            let mut found = BTreeMap::new();
            for m in table.mappings(&self.a) {
                let m = m.map_err(|e| format!("table {t}: mappings: {e:?}"))?;
                if !self.shared.contains(&slot_of(m.mva.as_u32())) {
                    found.insert(
                        m.mva.as_u32(),
                        Page {
                            pa: m.pa.as_u32(),
                            size: m.size,
                            domain: m.domain,
                            ap: m.ap.0[0],
                            cache: m.cache,
                        },
                    );
                }
            }
            let want: BTreeMap<u32, Page> = self.model[t]
                .iter()
                .filter(|(m, _)| !self.shared.contains(&slot_of(**m)))
                .map(|(m, p)| (*m, *p))
                .collect();
            ensure!(found == want, "table {t}: {found:x?}\nmodel: {want:x?}");
        }
        Ok(())
    }

    /// Flushes what is pending, releases both tables and checks the table
    /// memory: exactly the tables of dropped tokens and the shared ones are
    /// left.
    pub fn finish(mut self) -> Result<(), String> {
        ensure!(
            self.pending.leaked_tables() == 0,
            "a merged token lost tables"
        );
        let f = core::mem::take(&mut self.pending);
        self.flush(f)?;
        let [k, p] = self.tables;
        // SAFETY: neither table was ever loaded.
        unsafe {
            p.release(&mut self.a)
                .map_err(|e| format!("release: {e:?}"))?;
            k.release(&mut self.a)
                .map_err(|e| format!("release: {e:?}"))?;
        }
        for &pa in &self.shared_tables {
            ensure!(
                self.ledger.is_live(PhysAddr::new(pa)),
                "shared table {pa:#x} freed"
            );
        }
        let live = self.ledger.live() as u32;
        let want = self.leaked + self.shared_tables.len() as u32;
        ensure!(
            live == want,
            "{live} tables left, want {want} (dropped tokens and shared)"
        );
        Ok(())
    }
}
