//! A software table walk that predicts what the hardware does with an access.
//!
//! [`translate`] takes the translation tables, the MMU state (translation
//! table base, DACR, FCSE PID, SCTLR S/R/A bits) and one access, and returns
//! either the physical address with the page's attributes, or the exact
//! [`Fault`] the hardware raises, in the architecture's priority order:
//!
//! 1. alignment (data accesses, when SCTLR.A is set);
//! 2. first-level descriptor invalid: translation fault (section);
//! 3. section: domain fault, then permission fault (section);
//! 4. coarse/fine table: second-level descriptor invalid (or `0b11` in a
//!    coarse table): translation fault (page); then domain fault, then
//!    permission fault (page).
//!
//! Domains are checked against the DACR given, on every access: a DACR change
//! needs no TLB maintenance. QEMU 7.2 checks the domain of a coarse or fine
//! entry before it reads the second-level entry, so an invalid page in a
//! no-access domain shows there as a domain fault; this function gives the
//! architectural translation fault.

use crate::addr::{Domain, FcsePid, ModifiedVirtAddr, PhysAddr, VirtAddr};
use crate::descriptor::{
    AccessPermission, CachePolicy, L1Descriptor, L2Descriptor, ProtectionBits,
};
use crate::fault::{Fault, FaultKind, FaultLevel};
use crate::regs::{Dacr, DomainAccess};
use crate::size::PageSizeKind;
use crate::table::{TableAlloc, TableKind, TableRef};

/// What an access does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum AccessType {
    /// A data load.
    Read,
    /// A data store.
    Write,
    /// An instruction fetch (needs read permission: ARMv5 has no execute-never).
    Execute,
}

/// The MMU state that decides a translation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct MmuState {
    /// Physical address of the L1 table (TTBR).
    pub ttb: PhysAddr,
    /// Domain access control.
    pub dacr: Dacr,
    /// Current FCSE PID.
    pub pid: FcsePid,
    /// SCTLR.S.
    pub system_protect: bool,
    /// SCTLR.R.
    pub rom_protect: bool,
    /// SCTLR.A: alignment checking of data accesses.
    pub alignment_check: bool,
}

impl MmuState {
    /// The S and R bits.
    #[must_use]
    pub const fn protection(&self) -> ProtectionBits {
        ProtectionBits {
            system: self.system_protect,
            rom: self.rom_protect,
        }
    }
}

/// One memory access.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Access {
    /// The address the program issued.
    pub va: VirtAddr,
    /// Load, store or fetch.
    pub kind: AccessType,
    /// Made in a privileged mode (an `LDRT`/`STRT` from a privileged mode is not).
    pub privileged: bool,
    /// Size in bytes (1, 2 or 4); used for the alignment check.
    pub size: u32,
}

/// A successful translation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Translated {
    /// The physical address accessed.
    pub pa: PhysAddr,
    /// The modified virtual address (after FCSE relocation).
    pub mva: ModifiedVirtAddr,
    /// Size of the page (or section) that mapped it.
    pub size: PageSizeKind,
    /// The domain the access was checked in.
    pub domain: Domain,
    /// The access permission that applied (the subpage's, for pages).
    pub ap: AccessPermission,
    /// C and B bits.
    pub cache: CachePolicy,
}

fn permits(ap: AccessPermission, access: &Access, prot: ProtectionBits) -> bool {
    match access.kind {
        AccessType::Write => ap.allows_write(access.privileged),
        AccessType::Read | AccessType::Execute => ap.allows_read(access.privileged, prot),
    }
}

/// Checks domain then permission for a valid descriptor.
fn check(
    dacr: Dacr,
    domain: Domain,
    ap: AccessPermission,
    level: FaultLevel,
    access: &Access,
    prot: ProtectionBits,
) -> Result<(), Fault> {
    match dacr.get(domain) {
        DomainAccess::NoAccess | DomainAccess::Reserved => {
            Err(Fault::new(FaultKind::Domain(level), domain))
        }
        DomainAccess::Manager => Ok(()),
        DomainAccess::Client => {
            if permits(ap, access, prot) {
                Ok(())
            } else {
                Err(Fault::new(FaultKind::Permission(level), domain))
            }
        }
    }
}

/// Walks the tables for `access` as the hardware would.
///
/// A table the allocator cannot reach yields an external abort on
/// translation (first or second level), which is what a walk into
/// non-existent memory raises on hardware.
///
/// ```
/// use mmu_armv5::descriptor::{AccessPermission, CachePolicy};
/// use mmu_armv5::fault::{Fault, FaultKind, FaultLevel};
/// use mmu_armv5::maint::Arm926;
/// use mmu_armv5::regs::{Dacr, DomainAccess, MockCp15};
/// use mmu_armv5::size::PageSizeKind;
/// use mmu_armv5::table::{MapAttrs, PageTable, PoolBlock, SizePolicy, TablePool};
/// use mmu_armv5::translate::{translate, Access, AccessType, MmuState};
/// use mmu_armv5::{Domain, FcsePid, ModifiedVirtAddr, PhysAddr, VirtAddr};
///
/// let mut mem = Box::new([PoolBlock::ZERO; 2]);
/// let mut pool = TablePool::new(&mut *mem, PhysAddr::new(0x0100_0000), ModifiedVirtAddr::new(0xC100_0000))?;
/// let mut pt = PageTable::new(&mut pool)?;
///
/// // A process at FCSE PID 3 with one read-only (for user mode) page at VA
/// // 0x8000: tables are indexed by MVA, so map the relocated address.
/// let (user, pid) = (Domain::new(1)?, FcsePid::new(3)?);
/// let attrs = MapAttrs::new(user, AccessPermission::PrivRwUserRo, CachePolicy::WriteBack);
/// pt.map(&mut pool, VirtAddr::new(0x8000).to_mva(pid), PhysAddr::new(0x0050_0000), 0x1000, attrs, SizePolicy::Largest)?
///     .flush(&mut Arm926::new(MockCp15::arm926()), &mut pool);
///
/// let mut state = MmuState {
///     ttb: pt.root(),
///     dacr: Dacr::only(user, DomainAccess::Client),
///     pid,
///     system_protect: false,
///     rom_protect: false,
///     alignment_check: true,
/// };
/// let access = |va, kind| Access { va: VirtAddr::new(va), kind, privileged: false, size: 4 };
///
/// let t = translate(&pool, &state, &access(0x8010, AccessType::Read)).unwrap();
/// assert_eq!((t.pa, t.mva, t.size), (PhysAddr::new(0x0050_0010), ModifiedVirtAddr::new(0x0600_8010), PageSizeKind::Small));
/// // The exact fault the hardware raises, in the architecture's order.
/// let write = translate(&pool, &state, &access(0x8010, AccessType::Write));
/// assert_eq!(write, Err(Fault::new(FaultKind::Permission(FaultLevel::Page), user)));
/// let unaligned = translate(&pool, &state, &access(0x8012, AccessType::Read));
/// assert_eq!(unaligned, Err(Fault::without_domain(FaultKind::Alignment)));
/// let unmapped = translate(&pool, &state, &access(0x0010_0000, AccessType::Read));
/// assert_eq!(unmapped.unwrap_err().kind, FaultKind::Translation(FaultLevel::Section));
/// // Closing the domain needs no table change: the DACR is checked on every access.
/// state.dacr = Dacr::NONE;
/// let closed = translate(&pool, &state, &access(0x8010, AccessType::Read));
/// assert_eq!(closed, Err(Fault::new(FaultKind::Domain(FaultLevel::Page), user)));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn translate<A: TableAlloc + ?Sized>(
    tables: &A,
    state: &MmuState,
    access: &Access,
) -> Result<Translated, Fault> {
    let va = access.va.as_u32();
    if state.alignment_check
        && access.kind != AccessType::Execute
        && access.size.is_power_of_two()
        && va & (access.size - 1) != 0
    {
        return Err(Fault::without_domain(FaultKind::Alignment));
    }
    let mva = access.va.to_mva(state.pid);
    let m = mva.as_u32();
    let prot = state.protection();
    let l1 = TableRef::new(TableKind::L1, state.ttb)
        .and_then(|t| t.read(tables, (m >> 20) as usize))
        .map_err(|_| {
            Fault::without_domain(FaultKind::TranslationExternalAbort(FaultLevel::Section))
        })?;
    let l1 = L1Descriptor::from_bits(l1);
    let (kind, tpa, domain) = match l1 {
        L1Descriptor::Fault { .. } => {
            return Err(Fault::without_domain(FaultKind::Translation(
                FaultLevel::Section,
            )))
        }
        L1Descriptor::Section(s) => {
            check(
                state.dacr,
                s.domain,
                s.ap,
                FaultLevel::Section,
                access,
                prot,
            )?;
            return Ok(Translated {
                pa: PhysAddr::new(s.frame.start().as_u32() | (m & 0x000F_FFFF)),
                mva,
                size: PageSizeKind::Section,
                domain: s.domain,
                ap: s.ap,
                cache: s.cache,
            });
        }
        L1Descriptor::Coarse(c) => (TableKind::Coarse, c.table.start(), c.domain),
        L1Descriptor::Fine(f) => (TableKind::Fine, f.table.start(), f.domain),
    };
    let index = match kind {
        TableKind::Fine => (m >> 10) & 0x3FF,
        _ => (m >> 12) & 0xFF,
    } as usize;
    let l2 = TableRef::new(kind, tpa)
        .and_then(|t| t.read(tables, index))
        .map_err(|_| {
            Fault::new(
                FaultKind::TranslationExternalAbort(FaultLevel::Page),
                domain,
            )
        })?;
    let page_fault = Fault::new(FaultKind::Translation(FaultLevel::Page), domain);
    let (base, size, ap, cache) = match L2Descriptor::from_bits(l2) {
        L2Descriptor::Fault { .. } => return Err(page_fault),
        L2Descriptor::Tiny(_) if kind == TableKind::Coarse => return Err(page_fault),
        L2Descriptor::Large(l) => (
            l.frame.start(),
            PageSizeKind::Large,
            l.ap.get((m >> 14) as usize),
            l.cache,
        ),
        L2Descriptor::Small(s) => (
            s.frame.start(),
            PageSizeKind::Small,
            s.ap.get((m >> 10) as usize),
            s.cache,
        ),
        L2Descriptor::Tiny(t) => (t.frame.start(), PageSizeKind::Tiny, t.ap, t.cache),
    };
    check(state.dacr, domain, ap, FaultLevel::Page, access, prot)?;
    Ok(Translated {
        pa: PhysAddr::new(base.as_u32() | (m & (size.size() - 1))),
        mva,
        size,
        domain,
        ap,
        cache,
    })
}
