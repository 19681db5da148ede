//! The domain table: which of the 16 ARM domains tags which address space
//! or shared segment, which are dirty, and which caching-page-directory
//! (CPD) slots each one owns.
//!
//! This is mechanism only. Which domain to take back when none is free is a
//! [`VictimPolicy`]; what to flush after an
//! eviction is decided from the returned [`Eviction`].
//!
//! * Ownership: per domain [`DomainOwner::Free`], [`DomainOwner::Reserved`]
//!   (the kernel's domain and any others given at construction), or owned by
//!   an [`Owner`].
//! * Dirty state: a mask in DACR format ([`Dacr`]). A domain is dirty if its
//!   owner ran (or its segment was used) since the last full cache flush,
//!   so the VIVT caches may hold its lines. (A domain recycled without a
//!   flush is marked clean for its new owner: the lines its old owner left
//!   are tracked per FCSE window by [`crate::window`].) Marking the domains a space runs
//!   with dirty is one OR of the space's DACR value into the mask.
//! * CPD slots: one byte per slot says which domain owns it (4 KiB, O(1)
//!   on the fault path), with a count per domain. Per domain a [`SlotSet`]
//!   holds the first-level slots it *may* own: every slot it owns, and
//!   possibly slots another domain took over since (a slot moved on the
//!   fast fault path is only added to its new
//!   owner's set: one test, then nothing, when a collision goes back and
//!   forth). Evicting a domain visits that set and clears the slots it
//!   really owns (O(slots it owned since it was last evicted)).

use crate::id::{SegmentId, SpaceId};
use crate::layout::SLOT_COUNT;
use crate::policy::{VictimPolicy, VictimView};
use crate::slots::SlotSet;
use core::fmt;
use mmu_armv5::regs::{Dacr, DomainAccess};
use mmu_armv5::Domain;

/// A set of domains, bit `n` for domain `n`.
///
/// ```
/// use fass::DomainSet;
/// use mmu_armv5::regs::{Dacr, DomainAccess};
/// use mmu_armv5::Domain;
///
/// let (d0, d3) = (Domain::new(0)?, Domain::new(3)?);
/// let set = DomainSet::of(d0).with(d3);
/// assert_eq!((set.bits(), set.len(), set.first()), (0b1001, 2, Some(d0)));
/// assert!(set.contains(d3) && !set.without(d3).contains(d3));
/// // In DACR format: every member with the same access.
/// let dacr = set.to_dacr(DomainAccess::Client);
/// assert_eq!(dacr, Dacr::only(d0, DomainAccess::Client).with(d3, DomainAccess::Client));
/// assert_eq!(DomainSet::from_dacr(dacr), set);
/// # Ok::<(), mmu_armv5::AddrError>(())
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct DomainSet(u16);

impl DomainSet {
    /// No domain.
    pub const EMPTY: DomainSet = DomainSet(0);
    /// All sixteen.
    pub const ALL: DomainSet = DomainSet(0xFFFF);

    /// The set with bit `n` for domain `n`.
    #[must_use]
    pub const fn from_bits(bits: u16) -> DomainSet {
        DomainSet(bits)
    }

    /// The raw bits.
    #[must_use]
    pub const fn bits(self) -> u16 {
        self.0
    }

    /// The set holding only `d`.
    #[must_use]
    pub const fn of(d: Domain) -> DomainSet {
        DomainSet(1 << d.get())
    }

    /// This set with `d` added.
    #[must_use]
    pub const fn with(self, d: Domain) -> DomainSet {
        DomainSet(self.0 | 1 << d.get())
    }

    /// This set without `d`.
    #[must_use]
    pub const fn without(self, d: Domain) -> DomainSet {
        DomainSet(self.0 & !(1 << d.get()))
    }

    /// Whether `d` is a member.
    #[must_use]
    pub const fn contains(self, d: Domain) -> bool {
        self.0 & (1 << d.get()) != 0
    }

    /// Members of either.
    #[must_use]
    pub const fn union(self, o: DomainSet) -> DomainSet {
        DomainSet(self.0 | o.0)
    }

    /// Members of both.
    #[must_use]
    pub const fn intersection(self, o: DomainSet) -> DomainSet {
        DomainSet(self.0 & o.0)
    }

    /// Members of `self` not in `o`.
    #[must_use]
    pub const fn difference(self, o: DomainSet) -> DomainSet {
        DomainSet(self.0 & !o.0)
    }

    /// Whether the set is empty.
    #[must_use]
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// Number of members.
    #[must_use]
    pub const fn len(self) -> usize {
        self.0.count_ones() as usize
    }

    /// The lowest-numbered member.
    #[must_use]
    pub const fn first(self) -> Option<Domain> {
        if self.0 == 0 {
            None
        } else {
            Some(Domain::from_low_bits(self.0.trailing_zeros()))
        }
    }

    /// Members in increasing order (one step per member, not per domain).
    pub fn iter(self) -> impl Iterator<Item = Domain> {
        let mut rest = self;
        core::iter::from_fn(move || {
            let d = rest.first()?;
            rest = rest.without(d);
            Some(d)
        })
    }

    /// A DACR value granting `access` to every member, no access to the rest.
    #[must_use]
    pub fn to_dacr(self, access: DomainAccess) -> Dacr {
        let mut v = Dacr::NONE;
        for d in self.iter() {
            v = v.with(d, access);
        }
        v
    }

    /// The domains whose field in `dacr` is non-zero.
    #[must_use]
    pub fn from_dacr(dacr: Dacr) -> DomainSet {
        // Bit 2d or 2d+1 set: domain d. Fold each 2-bit field onto its low
        // bit, then gather the 16 low bits (a fixed sequence of shifts, no
        // loop over the domains: the victim choice reads this on every
        // recycle).
        let b = dacr.bits();
        let mut x = (b | (b >> 1)) & 0x5555_5555;
        x = (x | (x >> 1)) & 0x3333_3333;
        x = (x | (x >> 2)) & 0x0F0F_0F0F;
        x = (x | (x >> 4)) & 0x00FF_00FF;
        x = (x | (x >> 8)) & 0x0000_FFFF;
        DomainSet(x as u16)
    }
}

impl fmt::Debug for DomainSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.iter().map(|d| d.get())).finish()
    }
}

/// What a domain can be owned by.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Owner {
    /// An address space's private mappings.
    Space(SpaceId),
    /// A shared segment, mapped at the same address in every sharer.
    Segment(SegmentId),
}

/// The state of one domain.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum DomainOwner {
    /// Unused: can be allocated without evicting anything.
    Free,
    /// Never allocated nor evicted (the kernel's domain, and others set aside).
    Reserved,
    /// Tags the CPD slots of an owner.
    Owned(Owner),
}

/// A domain-table operation that cannot be done.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum DomainError {
    /// Every domain is reserved: nothing could ever be allocated.
    AllReserved,
    /// No free domain (use [`DomainTable::acquire`] to recycle one).
    Exhausted,
    /// Every domain is reserved, protected or free-but-unusable: no victim.
    NoVictim,
    /// The policy chose a domain that is reserved, protected or not owned.
    IneligibleVictim(Domain),
    /// The owner already has a domain.
    AlreadyOwned {
        /// The owner.
        owner: Owner,
        /// Its domain.
        domain: Domain,
    },
    /// The domain is free or reserved, not owned.
    NotOwned(Domain),
    /// A first-level slot index of 4096 or more.
    SlotOutOfRange(usize),
}

impl fmt::Display for DomainError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            DomainError::AllReserved => f.write_str("every domain is reserved"),
            DomainError::Exhausted => f.write_str("no free domain"),
            DomainError::NoVictim => f.write_str("no domain can be recycled"),
            DomainError::IneligibleVictim(d) => {
                write!(
                    f,
                    "policy chose domain {}, which cannot be recycled",
                    d.get()
                )
            }
            DomainError::AlreadyOwned { owner, domain } => {
                write!(f, "{owner:?} already owns domain {}", domain.get())
            }
            DomainError::NotOwned(d) => write!(f, "domain {} is not owned", d.get()),
            DomainError::SlotOutOfRange(s) => write!(f, "first-level slot {s} is out of range"),
        }
    }
}

impl core::error::Error for DomainError {}

/// What evicting a domain did, and what the caller must do next.
#[derive(Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[must_use = "a dirty eviction requires a cache flush"]
pub struct Eviction {
    /// The domain taken back.
    pub domain: Domain,
    /// Its owner until now.
    pub owner: Owner,
    /// Whether it was dirty: then the caller must clean+invalidate the
    /// D-cache, invalidate the I-cache and the TLB, and call
    /// [`DomainTable::mark_all_clean`]. A clean domain needs only a TLB
    /// invalidation once its CPD slots are cleared.
    pub was_dirty: bool,
    /// How many CPD slots it owned (each was passed to the caller's closure).
    pub slots: usize,
}

/// The result of [`DomainTable::acquire`].
#[derive(Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[must_use]
pub struct Acquired {
    /// The domain now owned by the new owner.
    pub domain: Domain,
    /// The eviction that made it available, if no domain was free.
    pub evicted: Option<Eviction>,
}

/// The sixteen domains' owners, dirty mask and CPD slot sets.
///
/// ```
/// use fass::domain::Owner;
/// use fass::{DefaultPolicy, DomainError, DomainOwner, DomainSet, DomainTable, SpaceId};
/// use mmu_armv5::regs::{Dacr, DomainAccess};
/// use mmu_armv5::Domain;
///
/// // Domain 0 is the kernel's; all but 1 and 2 are set aside, so two
/// // spaces use up the free ones.
/// let (d1, d2) = (Domain::new(1)?, Domain::new(2)?);
/// let reserved = DomainSet::ALL.without(d1).without(d2);
/// let mut table = DomainTable::new(Domain::new(0)?, reserved)?;
/// assert_eq!(table.free(), DomainSet::of(d1).with(d2));
///
/// let (a, b, c) = (Owner::Space(SpaceId(1)), Owner::Space(SpaceId(2)), Owner::Space(SpaceId(3)));
/// assert_eq!(table.allocate(a)?, d1);
/// assert_eq!(table.allocate(b)?, d2);
/// assert_eq!(table.allocate(c), Err(DomainError::Exhausted));
///
/// // A's entries sit in CPD slot 0x20, and A ran: its domain is dirty.
/// assert_eq!(table.claim_slot(d1, 0x20)?, None);
/// table.mark_dirty(Dacr::only(d1, DomainAccess::Client));
///
/// // C takes a domain back; B is running, so it is protected.
/// let mut cleared = Vec::new();
/// let got = table.acquire(c, DomainSet::of(d2), &mut DefaultPolicy::default(), |slot| cleared.push(slot))?;
/// assert_eq!(got.domain, d1);
/// let evicted = got.evicted.unwrap();
/// assert_eq!((evicted.owner, evicted.was_dirty, evicted.slots), (a, true, 1));
/// assert_eq!(cleared, [0x20]); // the caller clears these CPD slots
/// // A dirty eviction: the caller flushes the caches and the TLB, then:
/// table.mark_all_clean();
/// assert_eq!(table.owner(d1), DomainOwner::Owned(c));
/// assert_eq!(table.slot_owner(0x20), None);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// Laid out in declaration order (`repr(C)`): what the fast fault path
/// reads first.
#[derive(Clone)]
#[repr(C)]
pub struct DomainTable {
    dirty: Dacr,
    owners: [DomainOwner; Domain::COUNT],
    /// The domains `owners` says are owned (kept with every write to it).
    owned: DomainSet,
    /// The owned domains whose owner is a segment (kept with `owned`).
    seg_owned: DomainSet,
    /// The domains `owners` says are reserved (fixed at construction).
    reserved: DomainSet,
    /// Per CPD slot, the domain owning it ([`NO_OWNER`] if none): the
    /// truth, for O(1) [`DomainTable::slot_owner`] on the fault path.
    slot_owners: [u8; SLOT_COUNT],
    /// Per domain, how many slots it owns.
    counts: [u16; Domain::COUNT],
    /// Per domain, the slots it may own: a superset of those it owns.
    slots: [SlotSet; Domain::COUNT],
}

/// No domain owns the slot.
const NO_OWNER: u8 = u8::MAX;

impl fmt::Debug for DomainTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DomainTable")
            .field("owners", &self.owners)
            .field("dirty", &self.dirty)
            .finish_non_exhaustive()
    }
}

impl DomainTable {
    /// A table with `kernel` and every domain of `reserved` reserved, the rest free.
    ///
    /// `const`, so a kernel can keep the table in a `static`:
    ///
    /// ```
    /// use fass::{DomainSet, DomainTable};
    /// use mmu_armv5::Domain;
    ///
    /// const KERNEL: Domain = Domain::from_low_bits(0);
    /// static TABLE: DomainTable = match DomainTable::new(KERNEL, DomainSet::EMPTY) {
    ///     Ok(t) => t,
    ///     Err(_) => panic!("one domain reserved leaves fifteen"),
    /// };
    /// assert_eq!(TABLE.free().len(), 15);
    /// ```
    pub const fn new(kernel: Domain, reserved: DomainSet) -> Result<DomainTable, DomainError> {
        let reserved = reserved.with(kernel);
        if reserved.bits() == DomainSet::ALL.bits() {
            return Err(DomainError::AllReserved);
        }
        let mut owners = [DomainOwner::Free; Domain::COUNT];
        let mut i = 0;
        while i < Domain::COUNT {
            if reserved.bits() & (1 << i) != 0 {
                owners[i] = DomainOwner::Reserved;
            }
            i += 1;
        }
        Ok(DomainTable {
            owners,
            owned: DomainSet::EMPTY,
            seg_owned: DomainSet::EMPTY,
            reserved,
            dirty: Dacr::NONE,
            slots: [const { SlotSet::new() }; Domain::COUNT],
            counts: [0; Domain::COUNT],
            slot_owners: [NO_OWNER; SLOT_COUNT],
        })
    }

    fn state(&self, d: Domain) -> DomainOwner {
        self.owners
            .get(d.get() as usize)
            .copied()
            .unwrap_or(DomainOwner::Reserved)
    }

    /// The state of `d`.
    #[must_use]
    pub fn owner(&self, d: Domain) -> DomainOwner {
        self.state(d)
    }

    /// The domain `owner` holds, if any.
    #[must_use]
    pub fn find(&self, owner: Owner) -> Option<Domain> {
        // A straight pass over the 16 states (an owner's state is only ever
        // set together with its bit in `owned`), lowest domain first.
        let want = DomainOwner::Owned(owner);
        let i = self.owners.iter().position(|o| *o == want)?;
        Some(Domain::from_low_bits(i as u32))
    }

    /// Sets the state of `d` (never reserved), keeping the owned set in step.
    fn set_state(&mut self, d: Domain, state: DomainOwner) {
        debug_assert!(!self.reserved.contains(d) && state != DomainOwner::Reserved);
        if let Some(o) = self.owners.get_mut(d.get() as usize) {
            *o = state;
        }
        self.owned = match state {
            DomainOwner::Owned(_) => self.owned.with(d),
            _ => self.owned.without(d),
        };
        self.seg_owned = match state {
            DomainOwner::Owned(Owner::Segment(_)) => self.seg_owned.with(d),
            _ => self.seg_owned.without(d),
        };
    }

    /// The reserved domains.
    #[must_use]
    pub fn reserved(&self) -> DomainSet {
        self.reserved
    }

    /// The free domains.
    #[must_use]
    pub fn free(&self) -> DomainSet {
        DomainSet::ALL
            .difference(self.reserved)
            .difference(self.owned)
    }

    /// The owned domains.
    #[must_use]
    pub fn owned(&self) -> DomainSet {
        self.owned
    }

    /// The domains owned by a segment (O(1): kept with every change of owner).
    #[must_use]
    pub fn segment_owned(&self) -> DomainSet {
        self.seg_owned
    }

    /// Among `set`, the domain owning the fewest CPD slots, the lowest
    /// numbered on a tie; `None` if `set` is empty. Straight-line code over
    /// the 16 counts, each a key `count << 4 | domain` (or none, for a
    /// non-member) kept if below the least so far: about six instructions
    /// per domain, whatever the number of members (what
    /// [`FewestSlots`](crate::policy::FewestSlots) asks on every recycle).
    #[must_use]
    pub fn fewest_slots(&self, set: DomainSet) -> Option<Domain> {
        const _: () = assert!(Domain::COUNT == 16 && SLOT_COUNT < 1 << 27);
        let m = u32::from(set.bits());
        if m == 0 {
            return None;
        }
        let c = &self.counts;
        let mut best = u32::MAX;
        macro_rules! step {
            ($($i:literal)*) => {$(
                let k = if m & (1 << $i) != 0 {
                    (u32::from(c[$i]) << 4) | $i
                } else {
                    u32::MAX
                };
                best = best.min(k);
            )*};
        }
        step!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15);
        Some(Domain::from_low_bits(best & 15))
    }

    /// The dirty mask in DACR format (both bits of each dirty domain's field set).
    #[must_use]
    pub const fn dirty_mask(&self) -> Dacr {
        self.dirty
    }

    /// The dirty domains as a set.
    #[must_use]
    pub fn dirty(&self) -> DomainSet {
        DomainSet::from_dacr(self.dirty)
    }

    /// Whether `d` may have lines in the caches.
    #[must_use]
    pub const fn is_dirty(&self, d: Domain) -> bool {
        self.dirty.contains(d)
    }

    /// Marks every domain with a non-zero field in `dacr` dirty: one OR.
    /// Pass the DACR value a space runs with.
    pub fn mark_dirty(&mut self, dacr: Dacr) {
        self.dirty = self.dirty.union(dacr);
    }

    /// Marks `d` clean: call when whatever lines its previous owner left are
    /// accounted for elsewhere (a domain recycled without a flush under
    /// [`RecycleRule::ExclusiveWindows`](crate::manager::RecycleRule), whose
    /// lines [`crate::window::WindowLines`] tracks).
    pub fn mark_clean(&mut self, d: Domain) {
        self.dirty = self.dirty.with(d, DomainAccess::NoAccess);
    }

    /// Marks every domain clean: call after a full cache clean+invalidate.
    pub fn mark_all_clean(&mut self) {
        self.dirty = Dacr::NONE;
    }

    /// Takes a free domain for `owner`.
    pub fn allocate(&mut self, owner: Owner) -> Result<Domain, DomainError> {
        if let Some(domain) = self.find(owner) {
            return Err(DomainError::AlreadyOwned { owner, domain });
        }
        let d = self.free().first().ok_or(DomainError::Exhausted)?;
        self.set_state(d, DomainOwner::Owned(owner));
        Ok(d)
    }

    /// Takes a domain for `owner`: a free one if any, otherwise the victim
    /// `policy` picks among the owned domains that are neither reserved nor
    /// in `protect` (the current space's domains). The victim's CPD slots are
    /// passed to `clear_slot` (to be cleared in the CPD) before it changes hands.
    pub fn acquire<P: VictimPolicy + ?Sized>(
        &mut self,
        owner: Owner,
        protect: DomainSet,
        policy: &mut P,
        clear_slot: impl FnMut(usize),
    ) -> Result<Acquired, DomainError> {
        self.acquire_preferring(owner, protect, DomainSet::EMPTY, policy, clear_slot)
    }

    /// [`DomainTable::acquire`], telling the policy that the dirty domains
    /// of `flush_free` can be recycled without a cache flush too (see
    /// [`VictimView::with_flush_free`]). Whether the eviction flushes is
    /// still the caller's decision.
    pub fn acquire_preferring<P: VictimPolicy + ?Sized>(
        &mut self,
        owner: Owner,
        protect: DomainSet,
        flush_free: DomainSet,
        policy: &mut P,
        clear_slot: impl FnMut(usize),
    ) -> Result<Acquired, DomainError> {
        if let Some(domain) = self.find(owner) {
            return Err(DomainError::AlreadyOwned { owner, domain });
        }
        self.acquire_unowned(owner, protect, flush_free, policy, clear_slot)
    }

    /// [`DomainTable::acquire_preferring`] for an `owner` the caller knows
    /// holds no domain (checked in debug builds only): without the pass
    /// over the 16 owners that finds out.
    pub(crate) fn acquire_unowned<P: VictimPolicy + ?Sized>(
        &mut self,
        owner: Owner,
        protect: DomainSet,
        flush_free: DomainSet,
        policy: &mut P,
        clear_slot: impl FnMut(usize),
    ) -> Result<Acquired, DomainError> {
        debug_assert_eq!(self.find(owner), None, "the owner holds a domain");
        if let Some(domain) = self.free().first() {
            self.set_state(domain, DomainOwner::Owned(owner));
            policy.touch(domain);
            return Ok(Acquired {
                domain,
                evicted: None,
            });
        }
        let eligible = self.owned().difference(protect);
        if eligible.is_empty() {
            return Err(DomainError::NoVictim);
        }
        let choice = policy.choose(&VictimView::new(self, eligible).with_flush_free(flush_free));
        let victim = match choice {
            Some(v) if eligible.contains(v) => v,
            Some(v) => return Err(DomainError::IneligibleVictim(v)),
            None => return Err(DomainError::NoVictim),
        };
        let eviction = self.evict(victim, clear_slot)?;
        self.set_state(victim, DomainOwner::Owned(owner));
        policy.touch(victim);
        Ok(Acquired {
            domain: victim,
            evicted: Some(eviction),
        })
    }

    /// Takes `d` back from its owner, passing each CPD slot it owned to
    /// `clear_slot`, in increasing order (O(slots it owned since it was
    /// last evicted)). The domain becomes free; its dirty bit
    /// is left for the caller to resolve (see [`Eviction::was_dirty`]).
    pub fn evict(
        &mut self,
        d: Domain,
        clear_slot: impl FnMut(usize),
    ) -> Result<Eviction, DomainError> {
        let DomainOwner::Owned(owner) = self.state(d) else {
            return Err(DomainError::NotOwned(d));
        };
        let set = self
            .slots
            .get_mut(d.get() as usize)
            .ok_or(DomainError::NotOwned(d))?;
        let mut slots = 0;
        let owners = &mut self.slot_owners;
        let mut clear_slot = clear_slot;
        set.drain(|slot| {
            if let Some(o) = owners.get_mut(slot).filter(|o| **o == d.get()) {
                *o = NO_OWNER;
                slots += 1;
                clear_slot(slot);
            }
        });
        if let Some(c) = self.counts.get_mut(d.get() as usize) {
            *c = 0;
        }
        self.set_state(d, DomainOwner::Free);
        Ok(Eviction {
            domain: d,
            owner,
            was_dirty: self.is_dirty(d),
            slots,
        })
    }

    /// Releases the domain of `owner` (destroyed space, last unmap of a
    /// segment), like [`DomainTable::evict`]; `None` if it held none.
    pub fn release(&mut self, owner: Owner, clear_slot: impl FnMut(usize)) -> Option<Eviction> {
        let d = self.find(owner)?;
        self.evict(d, clear_slot).ok()
    }

    /// The fast fault path's [`DomainTable::claim_slot`]: CPD slot `slot`
    /// (taken modulo 4096), owned by `prev` (`None`: by nobody), is now
    /// tagged with `d`, which must be owned and differ from `prev`, and not
    /// own the slot already. No checks beyond debug assertions; O(1). The
    /// slot stays in `prev`'s set of slots it may own.
    #[inline(always)]
    pub(crate) fn move_slot(&mut self, prev: Option<Domain>, d: Domain, slot: usize) {
        let slot = slot % SLOT_COUNT;
        debug_assert!(matches!(self.state(d), DomainOwner::Owned(_)));
        debug_assert_eq!(prev, self.slot_owner(slot));
        debug_assert_ne!(prev, Some(d));
        let di = usize::from(d.get()) % Domain::COUNT;
        if let Some(p) = prev {
            self.counts[usize::from(p.get()) % Domain::COUNT] -= 1;
        }
        self.counts[di] += 1;
        let set = &mut self.slots[di];
        if !set.contains(slot) {
            set.insert_new(slot);
        }
        self.slot_owners[slot] = d.get();
    }

    /// Records that CPD slot `slot` is now tagged with `d`; returns the
    /// domain that owned it before, if another one did.
    #[inline]
    pub fn claim_slot(&mut self, d: Domain, slot: usize) -> Result<Option<Domain>, DomainError> {
        if slot >= SLOT_COUNT {
            return Err(DomainError::SlotOutOfRange(slot));
        }
        if !matches!(self.state(d), DomainOwner::Owned(_)) {
            return Err(DomainError::NotOwned(d));
        }
        let prev = self.slot_owner(slot);
        if prev == Some(d) {
            return Ok(None);
        }
        if let Some(p) = prev {
            if let Some(s) = self.slots.get_mut(p.get() as usize) {
                s.remove(slot);
            }
            if let Some(c) = self.counts.get_mut(p.get() as usize) {
                *c -= 1;
            }
        }
        if let Some(s) = self.slots.get_mut(d.get() as usize) {
            s.insert(slot);
        }
        if let Some(c) = self.counts.get_mut(d.get() as usize) {
            *c += 1;
        }
        if let Some(o) = self.slot_owners.get_mut(slot) {
            *o = d.get();
        }
        Ok(prev)
    }

    /// Records that CPD slot `slot` no longer belongs to `d`; returns whether it did.
    pub fn release_slot(&mut self, d: Domain, slot: usize) -> bool {
        if self.slot_owner(slot) != Some(d) {
            return false;
        }
        if let Some(o) = self.slot_owners.get_mut(slot) {
            *o = NO_OWNER;
        }
        if let Some(s) = self.slots.get_mut(d.get() as usize) {
            s.remove(slot);
        }
        if let Some(c) = self.counts.get_mut(d.get() as usize) {
            *c -= 1;
        }
        true
    }

    /// The domain owning CPD slot `slot`, if any (O(1)).
    #[must_use]
    #[inline]
    pub fn slot_owner(&self, slot: usize) -> Option<Domain> {
        match self.slot_owners.get(slot) {
            Some(&d) if d != NO_OWNER => Domain::new(d).ok(),
            _ => None,
        }
    }

    /// The CPD slots `d` owns, in increasing order (O(slots it owned
    /// since it was last evicted)).
    pub fn slots(&self, d: Domain) -> impl Iterator<Item = usize> + '_ {
        self.slots
            .get(d.get() as usize)
            .into_iter()
            .flat_map(SlotSet::iter)
            .filter(move |s| self.slot_owner(*s) == Some(d))
    }

    /// Number of CPD slots `d` owns (O(1)).
    #[must_use]
    pub fn slot_count(&self, d: Domain) -> usize {
        self.counts
            .get(d.get() as usize)
            .map_or(0, |c| usize::from(*c))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::{CleanFirstRoundRobin, FewestSlots};
    use proptest::prelude::*;
    use std::vec::Vec;

    fn d(n: u8) -> Domain {
        Domain::new(n).unwrap()
    }

    fn sp(n: u16) -> Owner {
        Owner::Space(SpaceId(n))
    }

    #[test]
    fn reserved_domains_are_never_allocated() {
        let mut t = DomainTable::new(d(0), DomainSet::of(d(15))).unwrap();
        let mut got = Vec::new();
        for i in 0..14 {
            got.push(t.allocate(sp(i)).unwrap().get());
        }
        assert_eq!(got, (1..15).collect::<Vec<u8>>());
        assert_eq!(t.allocate(sp(99)), Err(DomainError::Exhausted));
        assert_eq!(t.owner(d(0)), DomainOwner::Reserved);
        assert_eq!(t.owner(d(15)), DomainOwner::Reserved);
        assert_eq!(
            t.allocate(sp(3)),
            Err(DomainError::AlreadyOwned {
                owner: sp(3),
                domain: d(4)
            })
        );
        assert_eq!(
            DomainTable::new(d(0), DomainSet::ALL).unwrap_err(),
            DomainError::AllReserved
        );
    }

    #[test]
    fn dirty_mask_is_dacr_format_and_marking_is_an_or() {
        let mut t = DomainTable::new(d(0), DomainSet::EMPTY).unwrap();
        let dacr = Dacr::only(d(0), DomainAccess::Client)
            .with(d(3), DomainAccess::Client)
            .with(d(7), DomainAccess::Manager);
        t.mark_dirty(dacr);
        assert_eq!(t.dirty_mask(), dacr);
        assert_eq!(t.dirty(), DomainSet::of(d(0)).with(d(3)).with(d(7)));
        assert!(t.is_dirty(d(3)) && !t.is_dirty(d(4)));
        t.mark_all_clean();
        assert_eq!(t.dirty(), DomainSet::EMPTY);
    }

    #[test]
    fn slot_claims_move_ownership() {
        let mut t = DomainTable::new(d(0), DomainSet::EMPTY).unwrap();
        let a = t.allocate(sp(1)).unwrap();
        let b = t.allocate(sp(2)).unwrap();
        assert_eq!(t.claim_slot(a, 5), Ok(None));
        assert_eq!(t.claim_slot(a, 5), Ok(None));
        assert_eq!(t.claim_slot(b, 5), Ok(Some(a)));
        assert_eq!(t.slot_owner(5), Some(b));
        assert_eq!(t.slot_count(a), 0);
        assert_eq!(
            t.claim_slot(b, 4096),
            Err(DomainError::SlotOutOfRange(4096))
        );
        assert_eq!(t.claim_slot(d(9), 1), Err(DomainError::NotOwned(d(9))));
        assert_eq!(t.claim_slot(d(0), 1), Err(DomainError::NotOwned(d(0))));
        assert_eq!(t.claim_slot(b, 6), Ok(None));
        assert_eq!(t.slot_count(b), 2);
        assert!(t.release_slot(b, 5));
        assert!(!t.release_slot(b, 5));
        assert_eq!(t.slot_owner(5), None);
        assert_eq!(t.slot_count(b), 1);
        assert_eq!(t.slots(b).collect::<heapless::Vec<usize, 4>>(), [6]);
    }

    #[test]
    fn eviction_visits_exactly_the_owned_slots() {
        let mut t = DomainTable::new(d(0), DomainSet::EMPTY).unwrap();
        let a = t.allocate(sp(1)).unwrap();
        let b = t.allocate(sp(2)).unwrap();
        for s in [64, 65, 2048, 4095] {
            t.claim_slot(a, s).unwrap();
        }
        t.claim_slot(b, 100).unwrap();
        t.mark_dirty(Dacr::only(a, DomainAccess::Client));
        let mut seen = Vec::new();
        let e = t.evict(a, |s| seen.push(s)).unwrap();
        assert_eq!(seen, [64, 65, 2048, 4095]);
        assert_eq!(
            e,
            Eviction {
                domain: a,
                owner: sp(1),
                was_dirty: true,
                slots: 4
            }
        );
        assert_eq!(t.owner(a), DomainOwner::Free);
        assert_eq!(t.slot_owner(100), Some(b));
        assert_eq!(t.evict(a, |_| {}), Err(DomainError::NotOwned(a)));
        assert_eq!(t.evict(d(0), |_| {}), Err(DomainError::NotOwned(d(0))));
        let e = t.release(sp(2), |_| {}).unwrap();
        assert!(!e.was_dirty);
        assert_eq!(t.release(sp(2), |_| {}), None);
    }

    #[test]
    fn acquire_prefers_free_then_asks_the_policy() {
        let mut t = DomainTable::new(d(0), DomainSet::EMPTY).unwrap();
        let mut pol = FewestSlots;
        for i in 1..16u16 {
            let a = t
                .acquire(sp(i), DomainSet::EMPTY, &mut pol, |_| {})
                .unwrap();
            assert_eq!(a.evicted, None);
            for s in 0..usize::from(i) {
                t.claim_slot(a.domain, usize::from(i) * 32 + s).unwrap();
            }
        }
        // Domain 1 (one slot) is the fewest; protect it: domain 2 goes.
        let mut cleared = Vec::new();
        let a = t
            .acquire(sp(50), DomainSet::of(d(1)), &mut pol, |s| cleared.push(s))
            .unwrap();
        assert_eq!(a.domain, d(2));
        assert_eq!(cleared, [64, 65]);
        assert_eq!(a.evicted.unwrap().owner, sp(2));
        assert_eq!(t.owner(d(2)), DomainOwner::Owned(sp(50)));
        // Everything protected: no victim.
        let all_owned = t.owned();
        assert_eq!(
            t.acquire(sp(51), all_owned, &mut pol, |_| {}),
            Err(DomainError::NoVictim)
        );
    }

    struct Rogue(Domain);
    impl VictimPolicy for Rogue {
        fn choose(&mut self, _v: &VictimView<'_>) -> Option<Domain> {
            Some(self.0)
        }
    }

    #[test]
    fn an_ineligible_policy_choice_is_an_error_not_an_eviction() {
        let mut t = DomainTable::new(d(0), DomainSet::EMPTY).unwrap();
        for i in 1..16 {
            t.allocate(sp(i)).unwrap();
        }
        for bad in [d(0), d(5)] {
            let r = t.acquire(sp(99), DomainSet::of(d(5)), &mut Rogue(bad), |_| {});
            assert_eq!(r, Err(DomainError::IneligibleVictim(bad)));
        }
        assert_eq!(t.owner(d(5)), DomainOwner::Owned(sp(5)));
    }

    #[test]
    fn domain_set_dacr_round_trip() {
        let s = DomainSet::of(d(1)).with(d(15));
        let v = s.to_dacr(DomainAccess::Client);
        assert_eq!(v.bits(), (1 << 2) | (1 << 30));
        assert_eq!(DomainSet::from_dacr(v), s);
        assert_eq!(s.len(), 2);
        assert_eq!(s.first(), Some(d(1)));
        assert_eq!(s.without(d(1)).first(), Some(d(15)));
    }

    #[test]
    fn from_dacr_names_exactly_the_domains_with_a_non_zero_field() {
        // Every access value in every field, and mixed words (xorshift).
        let mut x: u32 = 0x2545_F491;
        let mut words = [0u32; 300];
        for (i, w) in words.iter_mut().enumerate() {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            *w = if i < 64 {
                ((i % 4) as u32) << (2 * (i / 4))
            } else {
                x
            };
        }
        for b in words {
            let dacr = Dacr::from_bits(b);
            let want = Domain::all()
                .filter(|d| (b >> (2 * d.get())) & 3 != 0)
                .fold(DomainSet::EMPTY, DomainSet::with);
            assert_eq!(DomainSet::from_dacr(dacr), want, "{b:#010x}");
        }
    }

    #[test]
    fn a_union_keeps_the_members_both_sets_have() {
        let a = DomainSet::EMPTY.with(d(2)).with(d(3));
        let b = DomainSet::EMPTY.with(d(3)).with(d(9));
        assert_eq!(
            a.union(b),
            DomainSet::EMPTY.with(d(2)).with(d(3)).with(d(9))
        );
        assert_eq!(a.union(a), a);
    }

    #[test]
    fn one_domain_is_marked_clean_the_others_stay_dirty() {
        let mut t = DomainTable::new(d(0), DomainSet::EMPTY).unwrap();
        t.mark_dirty(Dacr::only(d(4), DomainAccess::Client).with(d(5), DomainAccess::Manager));
        assert!(t.is_dirty(d(4)) && t.is_dirty(d(5)));
        t.mark_clean(d(4));
        assert!(!t.is_dirty(d(4)));
        assert!(t.is_dirty(d(5)));
        t.mark_all_clean();
        assert!(!t.is_dirty(d(5)));
    }

    #[test]
    fn sets_tables_and_errors_describe_themselves() {
        let s = DomainSet::EMPTY.with(d(1)).with(d(12));
        assert_eq!(std::format!("{s:?}"), "{1, 12}");
        let mut t = DomainTable::new(d(0), DomainSet::EMPTY).unwrap();
        t.allocate(sp(7)).unwrap();
        let dbg = std::format!("{t:?}");
        assert!(dbg.starts_with("DomainTable"), "{dbg}");
        assert!(dbg.contains("owners") && dbg.contains("dirty"), "{dbg}");
        let msgs = [
            (DomainError::AllReserved, "every domain is reserved"),
            (DomainError::Exhausted, "no free domain"),
            (DomainError::NoVictim, "no domain can be recycled"),
            (
                DomainError::IneligibleVictim(d(3)),
                "policy chose domain 3, which cannot be recycled",
            ),
            (DomainError::NotOwned(d(6)), "domain 6 is not owned"),
            (
                DomainError::SlotOutOfRange(4096),
                "first-level slot 4096 is out of range",
            ),
        ];
        for (e, m) in msgs {
            assert_eq!(std::format!("{e}"), m);
        }
        let e = DomainError::AlreadyOwned {
            owner: sp(7),
            domain: d(1),
        };
        assert!(
            std::format!("{e}").ends_with("already owns domain 1"),
            "{e}"
        );
    }

    #[test]
    fn a_set_iterates_its_members_in_increasing_order() {
        let s = DomainSet::EMPTY.with(d(15)).with(d(0)).with(d(7));
        assert_eq!(s.iter().collect::<Vec<_>>(), [d(0), d(7), d(15)]);
        assert_eq!(DomainSet::EMPTY.iter().count(), 0);
        assert_eq!(DomainSet::ALL.iter().count(), 16);
    }

    proptest! {
        #![proptest_config(crate::proptest_config())]
        /// Ownership bookkeeping: every slot has at most one owner, each
        /// domain's set is what the model says, eviction clears exactly it.
        #[test]
        fn slot_bookkeeping_matches_a_model(
            ops in proptest::collection::vec((0u8..5, 1u8..16, 0usize..4096), 1..400)
        ) {
            let mut t = DomainTable::new(d(0), DomainSet::EMPTY).unwrap();
            let mut model: std::collections::BTreeMap<usize, u8> = Default::default();
            let mut pol = CleanFirstRoundRobin::default();
            for (kind, dom, slot) in ops {
                let dd = d(dom);
                match kind {
                    0 => {
                        // Spaces and (now and then) segments.
                        let o = if slot % 3 == 0 {
                            Owner::Segment(SegmentId(u16::from(dom)))
                        } else {
                            sp(u16::from(dom))
                        };
                        let _ = t.allocate(o);
                    }
                    1 => {
                        if matches!(t.owner(dd), DomainOwner::Owned(_)) {
                            t.claim_slot(dd, slot).unwrap();
                            model.insert(slot, dom);
                        } else {
                            prop_assert!(t.claim_slot(dd, slot).is_err());
                        }
                    }
                    4 => {
                        // The fast path's move (its preconditions hold).
                        let slot = slot % 64;
                        let prev = t.slot_owner(slot);
                        if matches!(t.owner(dd), DomainOwner::Owned(_)) && prev != Some(dd) {
                            t.move_slot(prev, dd, slot);
                            model.insert(slot, dom);
                        }
                    }
                    2 => {
                        let mut seen = Vec::new();
                        if let Ok(e) = t.evict(dd, |s| seen.push(s)) {
                            let expect: Vec<usize> =
                                model.iter().filter(|(_, o)| **o == dom).map(|(s, _)| *s).collect();
                            prop_assert_eq!(&seen, &expect);
                            prop_assert_eq!(e.slots, expect.len());
                            model.retain(|_, o| *o != dom);
                        }
                    }
                    _ => {
                        let protect = DomainSet::of(dd);
                        let before = t.owned();
                        let mut seen = Vec::new();
                        if let Ok(a) = t.acquire(sp(1000 + slot as u16), protect, &mut pol, |s| seen.push(s)) {
                            prop_assert!(!protect.contains(a.domain) || !before.contains(a.domain));
                            prop_assert!(a.domain.get() != 0);
                            let victim = a.domain.get();
                            let expect: Vec<usize> =
                                model.iter().filter(|(_, o)| **o == victim).map(|(s, _)| *s).collect();
                            prop_assert_eq!(&seen, &expect);
                            model.retain(|_, o| *o != victim);
                        }
                    }
                }
                for s in [slot, slot ^ 1] {
                    prop_assert_eq!(t.slot_owner(s).map(|x| x.get()), model.get(&s).copied());
                }
                // The kept sets agree with the owner table.
                let recount = |f: &dyn Fn(DomainOwner) -> bool| {
                    Domain::all().filter(|x| f(t.owner(*x))).fold(DomainSet::EMPTY, DomainSet::with)
                };
                prop_assert_eq!(t.owned(), recount(&|o| matches!(o, DomainOwner::Owned(_))));
                prop_assert_eq!(t.free(), recount(&|o| o == DomainOwner::Free));
                prop_assert_eq!(t.reserved(), recount(&|o| o == DomainOwner::Reserved));
                prop_assert_eq!(
                    t.segment_owned(),
                    recount(&|o| matches!(o, DomainOwner::Owned(Owner::Segment(_))))
                );
                // The one-pass minimum is the first of the fewest-slot
                // members, on any set.
                let set = DomainSet::from_bits((slot as u16).wrapping_mul(40503));
                let naive = set.iter().min_by_key(|x| t.slot_count(*x));
                prop_assert_eq!(t.fewest_slots(set), naive);
            }
            for dom in 1..16u8 {
                let owned: Vec<usize> =
                    model.iter().filter(|(_, o)| **o == dom).map(|(s, _)| *s).collect();
                prop_assert_eq!(t.slot_count(d(dom)), owned.len());
                prop_assert_eq!(t.slots(d(dom)).collect::<Vec<_>>(), owned);
            }
        }
    }
}
