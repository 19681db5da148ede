//! The kernel's first-level table, checked and vouched for: the one promise
//! every strategy's register writes rest on.
//!
//! A strategy writes the translation registers (TTBR, DACR, FCSEIDR) from
//! safe methods. That is sound only if the kernel stays mapped whatever it
//! writes: the kernel lives outside the FCSE-relocated 32 MiB (checked by
//! [`Layout::new`]), every table the strategy loads holds the kernel's
//! mappings, and the kernel's entries are in a domain every DACR the
//! strategy writes keeps open. A [`KernelTable`] is the kernel's own table
//! with the checkable part of that checked:
//!
//! * the table is a 16 KiB-aligned first-level table the allocator reaches;
//! * it maps something inside the layout's kernel region (an empty kernel
//!   table is refused: a space table copied from it would map no kernel);
//! * it maps nothing outside the kernel region (a table built from the
//!   kernel region alone would lack those mappings; as a CPD, a stale entry
//!   there would be opened to whichever space later holds its domain);
//! * every kernel entry is in the kernel's domain.
//!
//! What cannot be checked (that these entries map *all* the memory the
//! kernel uses, and that the table is the one the CPU walks) is the caller's
//! promise, made by calling the `unsafe` [`KernelTable::new`], in the style of
//! `x86_64`'s `OffsetPageTable::new`. The witness is a `Copy` handle (the
//! table's address, encoding, domain and layout; it owns nothing) and every
//! strategy is built from one ([`Cpd::new`](crate::Cpd::new) for FASS,
//! [`TableSwitch::new`](crate::TableSwitch::new) for the classic ones), so
//! every strategy is built on a vouched-for table. One vouch covers every
//! strategy built from it or its copies: its contract (promise 3) is stated
//! for all of them together, and says how the CPU passes from one to the
//! next ([`KernelTable::hand_over`]).
//!
//! # The boot hand-off
//! Boot code builds the kernel's table with the MMU off, with an identity
//! map of the code that switches the MMU on. That map lies outside the
//! kernel region, so `KernelTable::new` refuses the table until it is
//! gone: switch the MMU on, move the pool to the memory's kernel address,
//! unmap the identity map and flush, then vouch once. (On a host the
//! "kernel address" of the pool's memory is the one it had.) Any number of
//! strategies are then built from the one witness: below a FASS manager,
//! then, once it has no space left and [`KernelTable::hand_over`] put the
//! CPU back to the kernel's state, a naive table-switching one.
//!
//! ```
//! use fass::{
//!     ClassicKind, Cpd, DefaultPolicy, DomainSet, Fass, KernelTable, KernelTableError, Layout,
//!     Resolution, SpaceId, Split, SwitchStrategy, TableSwitch,
//! };
//! use mmu_armv5::descriptor::{AccessPermission, CachePolicy, L1Encoding};
//! use mmu_armv5::maint::Arm926;
//! use mmu_armv5::regs::{Cp15Ext, Dacr, DomainAccess, Far, Fsr, MockCp15, Ttbr};
//! use mmu_armv5::size::{Frame, PageRange, PageSizeKind};
//! use mmu_armv5::table::{MapAttrs, MmuOff, PageTable, PoolBlock, SizePolicy, TablePool};
//! use mmu_armv5::{Domain, ModifiedVirtAddr as Mva, PhysAddr, VirtAddr};
//!
//! let mut cp15 = MockCp15::arm926(); // after reset: the MMU is off
//! let mut mem = Box::new([PoolBlock::ZERO; 8]);
//! // With the MMU off the pool reaches its memory at its physical address.
//! let mut pool = TablePool::new(&mut *mem, PhysAddr::new(0x0010_0000), Mva::new(0x0010_0000))?;
//! let off = MmuOff::new(&mut cp15)?;
//! let domain = Domain::new(0)?;
//! let ram = MapAttrs::new(domain, AccessPermission::PrivRw, CachePolicy::WriteBack);
//! let section = SizePolicy::Exactly(PageSizeKind::Section);
//! let mut kt = PageTable::new(&mut pool)?;
//! // The identity map the boot code runs from, and the kernel at 3 GiB.
//! kt.map(&mut pool, Mva::new(0), PhysAddr::new(0), 1 << 20, ram, section)?
//!     .discard_mmu_off(&off, &mut pool);
//! kt.map(&mut pool, Mva::new(0xC000_0000), PhysAddr::new(0), 8 << 20, ram, section)?
//!     .discard_mmu_off(&off, &mut pool);
//! let sctlr = off.sctlr().with_dcache(true).with_icache(true);
//! // SAFETY: a mock records the writes. On hardware: the code running this
//! // is identity mapped, its stack and data too (`enable_mmu`'s contract).
//! let cp15 = unsafe { off.enable_mmu(Ttbr::new(kt.root())?, Dacr::only(domain, DomainAccess::Client), sctlr) };
//!
//! // Still there: the identity map is outside the kernel region.
//! // SAFETY: as below; refused anyway.
//! let early = unsafe { KernelTable::new(&pool, kt.root(), L1Encoding::Arm9, &Layout::DEMO, domain) };
//! assert_eq!(early.err(), Some(KernelTableError::OutsideRegion { slot: 0 }));
//!
//! // The kernel runs at 3 GiB now: the pool moves to the memory's kernel
//! // address (a kernel's static seen at its link address; on a host, the
//! // address it had), then the identity map goes, flushed.
//! let kernel_va = pool.memory();
//! // SAFETY: `kernel_va` is the pool's memory, reached by nothing else.
//! unsafe { pool.relocate(kernel_va, Mva::new(0xC010_0000)) };
//! let mut cpu = Arm926::new(cp15);
//! kt.unmap(&mut pool, Mva::new(0), 1 << 20)?.flush(&mut cpu, &mut pool);
//!
//! // Vouched for once; strategies are built on it.
//! // SAFETY: a mock records the register writes. On hardware: the table
//! // maps all the kernel uses and is the one the CPU walks.
//! let table = unsafe { KernelTable::new(&pool, kt.root(), L1Encoding::Arm9, &Layout::DEMO, domain) }?;
//! let mut sys = Split::new(cpu, pool);
//!
//! // FASS: the kernel table is the CPD, loaded in the TTBR for good.
//! let mut fass: Fass<DefaultPolicy, 4, 4, 2> =
//!     Fass::new(Cpd::new(table), DomainSet::EMPTY, DefaultPolicy::default())?;
//! let a = SpaceId(1);
//! let pages = PageRange::from_bytes(VirtAddr::new(0x8000), 0x1000)?;
//! let frame = Frame::from_start(PhysAddr::new(0x0030_0000))?;
//! fass.add_space(a)?;
//! fass.map_pages(&mut sys, a, pages, frame, AccessPermission::ReadWrite, CachePolicy::WriteBack)?;
//! SwitchStrategy::switch_to(&mut fass, &mut sys, a)?;
//! let r = fass.resolve(&mut sys, Fsr::from_bits(0x005), Far::from_bits(0x8000))?;
//! assert!(matches!(r, Resolution::Resolved { .. }));
//! // The CPD now links `a`'s table, outside the kernel region.
//! let slot = fass.mva_of(a, VirtAddr::new(0x8000))?.l1_index() as u16;
//! assert_eq!(table.check(&sys), Err(KernelTableError::OutsideRegion { slot }));
//! // Hand-over (promise 3): the FASS manager keeps no space, which takes
//! // its entries out of the CPD; then the CPU goes back to the kernel's
//! // own state (kernel domain only, PID 0, this table, caches and TLB
//! // flushed), which is refused while the CPD holds a space's entry.
//! let user = Domain::new(1)?; // the naive strategy's user domain, opened
//! assert_eq!(table.hand_over(&mut sys, Some(user)), Err(KernelTableError::OutsideRegion { slot }));
//! fass.destroy_space(&mut sys, a)?;
//! table.hand_over(&mut sys, Some(user))?;
//! assert_eq!((sys.fcse_pid(), sys.ttbr().base()), (mmu_armv5::FcsePid::ZERO, table.root()));
//!
//! // The naive strategy from the same witness: no second vouch.
//! let mut naive: TableSwitch<4, 2> = TableSwitch::new(ClassicKind::Naive, user, table);
//! let b = SpaceId(2);
//! naive.create_space(&mut sys, b)?;
//! naive.map_pages(&mut sys, b, pages, frame, AccessPermission::ReadWrite, CachePolicy::WriteBack)?;
//! naive.switch_to(&mut sys, b)?;
//! assert_ne!(sys.ttbr().base(), table.root(), "b's own table is loaded");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use crate::layout::{Layout, SLOT_COUNT};
use crate::platform::Platform;
use core::fmt;
use mmu_armv5::descriptor::{L1Descriptor, L1Encoding};
use mmu_armv5::regs::{Cp15Ext, Dacr, DomainAccess, Ttbr};
use mmu_armv5::table::{TableAlloc, TableError, TableKind, TableRef};
use mmu_armv5::{Domain, FcsePid, PhysAddr};

/// A kernel table that cannot be used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum KernelTableError {
    /// The root is not a first-level table the allocator reaches.
    Table(TableError),
    /// No valid entry inside the layout's kernel region: nothing of the
    /// kernel would stay mapped.
    Empty,
    /// A valid entry in first-level slot `slot`, outside the kernel region.
    OutsideRegion {
        /// The slot (its address's top 12 bits).
        slot: u16,
    },
    /// A kernel entry in another domain than the kernel's.
    WrongDomain {
        /// The slot.
        slot: u16,
        /// The entry's domain.
        domain: Domain,
    },
}

impl fmt::Display for KernelTableError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            KernelTableError::Table(e) => write!(f, "kernel table: {e}"),
            KernelTableError::Empty => {
                f.write_str("the kernel table maps nothing in the kernel region")
            }
            KernelTableError::OutsideRegion { slot } => write!(
                f,
                "the kernel table maps slot {slot:#x}, outside the kernel region"
            ),
            KernelTableError::WrongDomain { slot, domain } => write!(
                f,
                "kernel entry {slot:#x} is in domain {}, not the kernel's",
                domain.get()
            ),
        }
    }
}

impl core::error::Error for KernelTableError {}

impl From<TableError> for KernelTableError {
    fn from(e: TableError) -> Self {
        KernelTableError::Table(e)
    }
}

/// The kernel's first-level table, checked against a [`Layout`] and vouched
/// for by the caller of [`KernelTable::new`] (see the [module docs](self)).
///
/// `Copy`: a handle (address, encoding, domain, layout) that owns nothing,
/// so one vouch serves any number of strategies, e.g. to compare FASS with
/// the classic strategies on one CPU. What they rely on (the table's
/// memory and kernel entries, the CPU's translation registers) is covered
/// for all of them by the one contract of [`KernelTable::new`], whose
/// promise 3 says how the CPU passes from one strategy to another: each
/// strategy trusts its own idea of what is loaded (which table, which
/// domains open, which PID, which lines and TLB entries can be stale), so a
/// strategy is used only once the one before it has no space left and
/// [`KernelTable::hand_over`] put the CPU back to the kernel's state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KernelTable {
    table: TableRef,
    encoding: L1Encoding,
    domain: Domain,
    layout: Layout,
}

impl KernelTable {
    /// Checks the first-level table at `root` (entries in `encoding`)
    /// against `layout` and the kernel's domain `domain`: see the
    /// [module docs](self) for what is checked, and the errors.
    ///
    /// # Safety
    /// Every strategy built on the result or on a copy of it (the
    /// *strategies* below; a strategy *lives* from its construction to its
    /// drop) writes the CPU's translation registers from safe methods,
    /// trusting that:
    /// 1. the table's entries inside `layout.kernel()` map all memory the
    ///    kernel uses (code, data, stacks, table memory, devices, vectors)
    ///    and grant user mode nothing every process may not share, and that
    ///    these first-level entries do not change while a strategy lives
    ///    (the second-level tables they link may: every table a strategy
    ///    builds links the same ones);
    /// 2. the table's memory is what `alloc`, and every platform later passed
    ///    to a strategy, reach at `root`, and it is neither freed nor moved
    ///    while a strategy lives; for FASS it is the table in the
    ///    translation table base from now on (the caching page directory);
    ///    for the classic strategies it is loaded when no space runs;
    /// 3. while a strategy lives, no code but the strategies and
    ///    [`KernelTable::hand_over`] writes this CPU's TTBR, DACR or
    ///    FCSEIDR, except to put back what the strategy in use last wrote;
    ///    and the strategies are used one at a time: once a strategy wrote
    ///    the registers, another is passed this CPU (any method taking a
    ///    platform) only after the first has no space left (each destroyed)
    ///    and [`KernelTable::hand_over`] put the CPU back to the kernel's
    ///    own state.
    ///
    /// On a backend whose register writes cannot reach the host's memory
    /// (`MockCp15`, the `armv5-sim` model) nothing the strategy writes can
    /// break the host's memory safety, so the promise is kept as far as
    /// soundness goes; breaking it there only makes the model's answers
    /// wrong.
    pub unsafe fn new<A: TableAlloc + ?Sized>(
        alloc: &A,
        root: PhysAddr,
        encoding: L1Encoding,
        layout: &Layout,
        domain: Domain,
    ) -> Result<KernelTable, KernelTableError> {
        let table = TableRef::new(TableKind::L1, root)?;
        check(alloc, table, layout, domain)?;
        Ok(KernelTable {
            table,
            encoding,
            domain,
            layout: *layout,
        })
    }

    /// Runs the checks of [`KernelTable::new`] again on the table as it is
    /// now, through `alloc`: `Ok` when it maps only the kernel region, all
    /// in the kernel's domain. A FASS strategy's CPD is this table, with the
    /// entries of its spaces outside the kernel region: once it has no space
    /// left, this passes again.
    ///
    /// # Errors
    /// As for [`KernelTable::new`].
    pub fn check<A: TableAlloc + ?Sized>(&self, alloc: &A) -> Result<(), KernelTableError> {
        check(alloc, self.table, &self.layout, self.domain)
    }

    /// Puts the CPU back to the kernel's own state, for the next strategy
    /// built from this table (promise 3 of [`KernelTable::new`]): checks
    /// the table ([`KernelTable::check`]: a FASS strategy must have no
    /// space left in its CPD), cleans and invalidates the D-cache and
    /// invalidates the I-cache (no strategy's lines survive into the next
    /// one's, which knows nothing of them), writes a DACR opening the
    /// kernel's domain and `user` (client), FCSE PID 0 and this table's
    /// TTBR, and invalidates the TLB. Each strategy assumes the registers
    /// are what it last wrote (the naive one, that FCSEIDR holds 0): this
    /// is the state every strategy starts from.
    ///
    /// `user`: the domain the next strategy maps its spaces in if it is a
    /// classic one ([`TableSwitch`](crate::TableSwitch) writes no DACR and
    /// expects its user domain open); `None` before a FASS strategy, which
    /// writes the DACR on every switch.
    ///
    /// Safe: the state written is the one the vouch covers (this table maps
    /// all the kernel uses, in the kernel's domain, above the FCSE-relocated
    /// 32 MiB). A strategy still running a space when this is called only
    /// sees that space's next user access fault (its domain closed, or its
    /// table no longer loaded), which its abort path hands back.
    ///
    /// # Errors
    /// As for [`KernelTable::check`]; nothing is written then.
    pub fn hand_over<S: Platform + ?Sized>(
        &self,
        sys: &mut S,
        user: Option<Domain>,
    ) -> Result<(), KernelTableError> {
        self.check(&*sys)?;
        let ttbr = Ttbr::new(self.table.pa).map_err(TableError::from)?;
        sys.clean_invalidate_dcache();
        sys.invalidate_icache();
        let mut dacr = Dacr::only(self.domain, DomainAccess::Client);
        if let Some(d) = user {
            dacr = dacr.with(d, DomainAccess::Client);
        }
        // SAFETY: the kernel's domain stays open (a user domain opened
        // besides tags no entry of this table) and PID 0 relocates
        // nothing the kernel uses (it runs above 32 MiB, `Layout::new`);
        // this table maps all the kernel uses, is in the allocator and
        // stays there (the vouch's promises 1 and 2), and holds only kernel
        // entries (checked above); the caches hold no line of any space
        // (cleaned and invalidated above), and the TLB is invalidated before
        // the kernel returns to any user code.
        unsafe {
            sys.set_dacr(dacr);
            sys.set_fcse_pid(FcsePid::ZERO);
            sys.set_ttbr(ttbr);
        }
        sys.invalidate_tlb();
        Ok(())
    }

    /// The table's physical address.
    #[must_use]
    pub const fn root(&self) -> PhysAddr {
        self.table.pa
    }

    /// The table, for reading its entries.
    #[must_use]
    pub const fn table(&self) -> TableRef {
        self.table
    }

    /// The first-level encoding of its entries (and of every entry a
    /// strategy built on it writes).
    #[must_use]
    pub const fn encoding(&self) -> L1Encoding {
        self.encoding
    }

    /// The kernel's domain.
    #[must_use]
    pub const fn domain(&self) -> Domain {
        self.domain
    }

    /// The layout it was checked against, which the strategy built on it uses.
    #[must_use]
    pub const fn layout(&self) -> &Layout {
        &self.layout
    }
}

/// The checks of [`KernelTable::new`] on the table at `table`.
fn check<A: TableAlloc + ?Sized>(
    alloc: &A,
    table: TableRef,
    layout: &Layout,
    domain: Domain,
) -> Result<(), KernelTableError> {
    let kernel = layout.kernel();
    let mut mapped = false;
    for slot in 0..SLOT_COUNT {
        let d = L1Descriptor::from_bits(table.read(alloc, slot)?);
        let Some(dom) = d.domain() else { continue };
        // `slot` < 4096 fits in u16.
        let s = slot as u16;
        if !kernel.contains_slot(slot) {
            return Err(KernelTableError::OutsideRegion { slot: s });
        }
        if dom != domain {
            return Err(KernelTableError::WrongDomain {
                slot: s,
                domain: dom,
            });
        }
        mapped = true;
    }
    if !mapped {
        return Err(KernelTableError::Empty);
    }
    Ok(())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::layout::Region;
    use crate::space::tests::{mem, pool};
    use mmu_armv5::descriptor::{AccessPermission, CachePolicy, SectionDesc, Tex};
    use mmu_armv5::size::Frame;
    use mmu_armv5::FcsePid;

    /// A kernel section (1 MiB at `va`, of RAM from 0) in domain `d`.
    fn section(d: Domain) -> L1Descriptor {
        L1Descriptor::Section(SectionDesc {
            frame: Frame::containing(PhysAddr::new(0)),
            ap: AccessPermission::PrivRw,
            cache: CachePolicy::WriteBack,
            domain: d,
            p: false,
            tex: Tex::default(),
        })
    }

    /// Writes a section or fault entry into a test table.
    fn put<A: TableAlloc + ?Sized>(a: &A, root: TableRef, slot: usize, bits: u32) {
        // SAFETY: a test table no `PageTable` manages; sections and fault
        // entries only, no table links.
        unsafe { root.write(a, slot, bits) }.unwrap();
    }

    /// A fresh first-level table from `alloc` mapping one kernel section at
    /// the start of `layout`'s kernel region in domain 0, vouched for.
    pub(crate) fn kernel_table<A: TableAlloc + ?Sized>(
        alloc: &mut A,
        layout: &Layout,
    ) -> KernelTable {
        let root = TableRef::allocate(alloc, TableKind::L1).unwrap();
        let slot = layout.kernel().slots().start;
        put(&*alloc, root, slot, section(Domain::default()).to_bits());
        // SAFETY: host tests drive `MockCp15` or the model, whose register
        // writes reach no host memory; the table stays in the allocator.
        unsafe { KernelTable::new(alloc, root.pa, L1Encoding::Arm9, layout, Domain::default()) }
            .unwrap()
    }

    #[test]
    fn empty_partial_or_foreign_kernel_tables_are_refused() {
        let mut m = mem();
        let mut a = pool(&mut m);
        let layout = Layout::DEMO;
        let d0 = Domain::default();
        let root = TableRef::allocate(&mut a, TableKind::L1).unwrap();
        let check = |a: &TablePoolT<'_>, root: PhysAddr| vouch(a, root, &layout);
        // Empty: a table copied from it would map no kernel.
        assert_eq!(check(&a, root.pa), Err(KernelTableError::Empty));
        // A kernel mapping below the kernel region: copies of the region
        // would lack it.
        put(&a, root, 0x900, section(d0).to_bits());
        let k = layout.kernel().slots().start;
        put(&a, root, k, section(d0).to_bits());
        assert_eq!(
            check(&a, root.pa),
            Err(KernelTableError::OutsideRegion { slot: 0x900 })
        );
        put(&a, root, 0x900, 0);
        assert!(check(&a, root.pa).is_ok());
        // A kernel entry in a domain a switch would close.
        let d5 = Domain::new(5).unwrap();
        put(&a, root, k + 7, section(d5).to_bits());
        assert_eq!(
            check(&a, root.pa),
            Err(KernelTableError::WrongDomain {
                slot: (k + 7) as u16,
                domain: d5
            })
        );
        // Not a first-level table of this allocator.
        assert_eq!(
            check(&a, PhysAddr::new(0x0100_1000)),
            Err(KernelTableError::Table(TableError::MisalignedTable(
                PhysAddr::new(0x0100_1000)
            )))
        );
        assert!(matches!(
            check(&a, PhysAddr::new(0x4000_0000)),
            Err(KernelTableError::Table(_))
        ));
        // The layout decides what the kernel region is.
        put(&a, root, k + 7, 0);
        let high = Layout::new(
            FcsePid::new(1).unwrap(),
            FcsePid::new(63).unwrap(),
            Region::new(0x8000_0000, 1 << 30).unwrap(),
            Region::new(0xE000_0000, 512 << 20).unwrap(),
        )
        .unwrap();
        assert_eq!(
            vouch(&a, root.pa, &high),
            Err(KernelTableError::OutsideRegion { slot: k as u16 })
        );
    }

    type TablePoolT<'m> = mmu_armv5::table::TablePool<'m, 64>;

    fn vouch(
        a: &TablePoolT<'_>,
        root: PhysAddr,
        layout: &Layout,
    ) -> Result<KernelTable, KernelTableError> {
        // SAFETY: a host test on a plain pool; nothing loads the table.
        unsafe { KernelTable::new(a, root, L1Encoding::Arm9, layout, Domain::default()) }
    }
}
