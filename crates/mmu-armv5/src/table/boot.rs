//! Building translation tables at boot, before the MMU is on.
//!
//! Every table change returns a `#[must_use]` [`TableFlush`]: the D-cache
//! clean and TLB invalidation the hardware walker needs to see it. Before
//! the MMU is switched on there is no walker to satisfy: with SCTLR.M clear
//! the CPU translates nothing, and every data access is non-cacheable and
//! non-bufferable (ARM Architecture Reference Manual, DDI 0100, "Enabling and
//! disabling the MMU"), so table writes reach memory directly. An [`MmuOff`]
//! is the proof of that state, and a token is discharged with it by the safe
//! [`TableFlush::discard_mmu_off`] instead of the `unsafe`
//! [`TableFlush::ignore`].
//!
//! The witness is obtained by reading SCTLR through a [`TrustedCp15`]
//! backend ([`MmuOff::new`], safe) or by the caller's promise
//! ([`MmuOff::new_unchecked`], `unsafe`, any backend). It holds the
//! backend's exclusive borrow, so the only way to turn the MMU on, an
//! `unsafe` SCTLR write through that backend, is out of reach while the
//! witness lives; [`MmuOff::enable_mmu`] does it at the end, consuming the
//! witness, after the cache and TLB invalidation that makes the tables built
//! meanwhile the only thing the walker sees.
//!
//! ```
//! use mmu_armv5::descriptor::{AccessPermission, CachePolicy};
//! use mmu_armv5::regs::{Cp15Ext, Dacr, DomainAccess, MockCp15, Ttbr};
//! use mmu_armv5::size::PageSizeKind;
//! use mmu_armv5::table::{MapAttrs, MmuOff, PageTable, PoolBlock, SizePolicy, TablePool};
//! use mmu_armv5::{Domain, ModifiedVirtAddr as Mva, PhysAddr};
//!
//! // QEMU's ARM926EJ-S after reset: SCTLR.M is clear.
//! let mut cp15 = MockCp15::arm926();
//! // Table memory (a static array in a kernel). With the MMU off it is
//! // reached at its physical address.
//! let mut mem = Box::new([PoolBlock::ZERO; 3]);
//! let mut pool = TablePool::new(&mut *mem, PhysAddr::new(0x0010_0000), Mva::new(0x0010_0000))?;
//!
//! let off = MmuOff::new(&mut cp15)?;
//! let kernel_domain = Domain::new(0)?;
//! let ram = MapAttrs::new(kernel_domain, AccessPermission::PrivRw, CachePolicy::WriteBack);
//! let device = MapAttrs::new(kernel_domain, AccessPermission::PrivRw, CachePolicy::Uncached);
//! let sections = SizePolicy::Exactly(PageSizeKind::Section);
//!
//! let mut kernel = PageTable::new(&mut pool)?;
//! // The boot code's identity map, the RAM's linear map at 3 GiB (sections)
//! // and one device page (a small page in a coarse table).
//! kernel
//!     .map(&mut pool, Mva::new(0), PhysAddr::new(0), 1 << 20, ram, sections)?
//!     .discard_mmu_off(&off, &mut pool);
//! kernel
//!     .map(&mut pool, Mva::new(0xC000_0000), PhysAddr::new(0), 8 << 20, ram, sections)?
//!     .discard_mmu_off(&off, &mut pool);
//! kernel
//!     .map(&mut pool, Mva::new(0xF000_0000), PhysAddr::new(0x1010_0000), 0x1000, device, SizePolicy::Largest)?
//!     .discard_mmu_off(&off, &mut pool);
//!
//! // A process table gets every kernel entry of the top GiB in one call
//! // (not the identity map below it).
//! let mut process = PageTable::new(&mut pool)?;
//! process
//!     .share_from(&pool, &mut kernel, Mva::new(0xC000_0000), 0x4000_0000)?
//!     .discard_mmu_off(&off, &mut pool);
//! assert_eq!(process.l1_entry(&pool, 0xC07)?, kernel.l1_entry(&pool, 0xC07)?);
//! assert_eq!(process.l1_entry(&pool, 0xF00)?, kernel.l1_entry(&pool, 0xF00)?);
//! assert!(!process.l1_entry(&pool, 0)?.is_valid());
//!
//! // The end of boot: the MMU goes on with the kernel's table.
//! let ttbr = Ttbr::new(kernel.root())?;
//! let dacr = Dacr::only(kernel_domain, DomainAccess::Client);
//! let sctlr = off.sctlr().with_dcache(true).with_icache(true);
//! // SAFETY: a mock only records the writes. On hardware the caller
//! // upholds `enable_mmu`'s contract: the code running it is identity
//! // mapped (slot 0 above), the stack and data are mapped, and so on.
//! let cp15 = unsafe { off.enable_mmu(ttbr, dacr, sctlr) };
//! assert!(cp15.sctlr().mmu_enabled());
//! // From now on changes need their maintenance: no more witness.
//! assert!(MmuOff::new(cp15).is_err());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! [`TableFlush`]: super::TableFlush
//! [`TableFlush::discard_mmu_off`]: super::TableFlush::discard_mmu_off
//! [`TableFlush::ignore`]: super::TableFlush::ignore

use crate::maint::{Arm926, FlushRead, Sa1100, XScale};
use crate::regs::{Cp15, Cp15Ext, Cp15Op, Dacr, Sctlr, Ttbr};
use core::fmt;

/// A CP15 backend whose report of the MMU's state can be relied on: what
/// [`MmuOff::new`] needs to hand out its witness without an `unsafe` promise.
///
/// [`Cp15`] is a safe trait, so nothing stops an implementation from
/// answering SCTLR reads with a made-up value, or from standing for no CPU
/// at all; a witness built on such an answer would let safe code skip
/// maintenance the hardware needs. This marker is the implementer's
/// promise that it does not.
///
/// Implemented for `HwCp15` (on bare-metal ARM), for [`MockCp15`] on every
/// other target (where no ARMv5 MMU walks the program's memory), and for
/// the maintenance wrappers [`Arm926`], [`XScale`] and [`Sa1100`] around a
/// trusted backend.
///
/// # Safety
/// Wherever the implementation can be used, it promises:
/// * [`Cp15::read`] of [`Cp15Reg::Sctlr`](crate::regs::Cp15Reg::Sctlr)
///   returns, as it is, the SCTLR of the CPU running the program: the one
///   whose MMU walks every translation table the program builds (bit 0,
///   M, set exactly when that MMU is on);
/// * while a value is exclusively borrowed, that SCTLR is written only
///   through it: no other handle to the same CP15 exists or is used (for
///   `HwCp15`, what its constructor's contract already requires);
/// * every [`Cp15::op`] and register write it is asked for reaches that
///   CPU's CP15 as asked, so maintenance built on it
///   ([`TrustedMaintenance`](crate::maint::TrustedMaintenance)) is done.
///
/// A backend that reaches no hardware keeps this only where no MMU walks
/// the program's memory as ARMv5 tables (a host, a model whose walker reads
/// only its own memory): a mock on bare-metal ARM would vouch for an MMU
/// it does not control, so [`MockCp15`] does not implement the trait there.
///
/// [`MockCp15`]: crate::regs::MockCp15
pub unsafe trait TrustedCp15: Cp15 {}

// SAFETY: a `&mut T` reads the SCTLR `T` reads, and while the reference is
// exclusively borrowed so is `T`: no other handle writes that SCTLR.
unsafe impl<T: TrustedCp15 + ?Sized> TrustedCp15 for &mut T {}

// SAFETY: `HwCp15` reads the running CPU's SCTLR with `MRC`, and its
// constructor's contract makes it the only owner of CP15 state changes.
#[cfg(all(target_arch = "arm", target_os = "none"))]
#[cfg_attr(docsrs, doc(cfg(all(target_arch = "arm", target_os = "none"))))]
unsafe impl TrustedCp15 for crate::regs::HwCp15 {}

// SAFETY: off bare-metal ARM no ARMv5 MMU walks this program's memory, so
// no table built here is ever walked and skipping its maintenance cannot
// affect memory safety, whatever the mock's SCTLR says.
#[cfg(not(all(target_arch = "arm", target_os = "none")))]
#[cfg_attr(docsrs, doc(cfg(not(all(target_arch = "arm", target_os = "none")))))]
unsafe impl TrustedCp15 for crate::regs::MockCp15 {}

// SAFETY: `Arm926` forwards every read and write to the backend it owns
// (`delegate_cp15!`), which is trusted; the backend is reached only through
// the wrapper, so an exclusive borrow of the wrapper is one of the backend.
unsafe impl<C: TrustedCp15> TrustedCp15 for Arm926<C> {}

// SAFETY: as for `Arm926`.
unsafe impl<C: TrustedCp15> TrustedCp15 for XScale<C> {}

// SAFETY: as for `Arm926`; the flush-region reader touches no CP15 register.
unsafe impl<C: TrustedCp15, R: FlushRead> TrustedCp15 for Sa1100<C, R> {}

/// The MMU was on when an [`MmuOff`] was asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct MmuOn {
    /// The SCTLR value read (its M bit is set).
    pub sctlr: Sctlr,
}

impl fmt::Display for MmuOn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the MMU is on (SCTLR {:#010x}): table changes need their maintenance",
            self.sctlr.bits()
        )
    }
}

impl core::error::Error for MmuOn {}

/// Proof that the MMU of this CPU is off, so table changes need no cache or
/// TLB maintenance yet (see the [module documentation](self)).
///
/// Holds the CP15 backend's exclusive borrow: while it lives, the MMU
/// cannot be switched on through that backend. Discharge flush tokens with
/// [`TableFlush::discard_mmu_off`](super::TableFlush::discard_mmu_off);
/// switch the MMU on with [`MmuOff::enable_mmu`], or give the backend back
/// with [`MmuOff::into_inner`].
///
/// The witness covers the walker of the CPU running the program, whose
/// CP15 it borrows: ARMv5 systems have one. Neither `Clone` nor `Copy`.
pub struct MmuOff<'a, C: Cp15 + ?Sized> {
    cp15: &'a mut C,
}

impl<C: Cp15 + ?Sized> fmt::Debug for MmuOff<'_, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MmuOff")
            .field("sctlr", &self.sctlr())
            .finish_non_exhaustive()
    }
}

impl<'a, C: TrustedCp15 + ?Sized> MmuOff<'a, C> {
    /// The witness, if SCTLR.M reads clear.
    ///
    /// # Errors
    /// [`MmuOn`] if the MMU is on (then `cp15` is free again).
    pub fn new(cp15: &'a mut C) -> Result<MmuOff<'a, C>, MmuOn> {
        let sctlr = cp15.sctlr();
        if sctlr.mmu_enabled() {
            Err(MmuOn { sctlr })
        } else {
            Ok(MmuOff { cp15 })
        }
    }
}

impl<'a, C: Cp15 + ?Sized> MmuOff<'a, C> {
    /// The witness on the caller's word, for any backend (no register is read).
    ///
    /// # Safety
    /// The MMU of the CPU running the program (the one that walks the tables
    /// whose tokens are discharged with the witness) is off, and stays off
    /// while the witness lives: nothing turns it on but a write through
    /// `cp15` (which [`MmuOff::enable_mmu`] makes), so `cp15` is that CPU's
    /// CP15. A backend for which this can be checked should implement
    /// [`TrustedCp15`] and use [`MmuOff::new`].
    #[must_use]
    pub const unsafe fn new_unchecked(cp15: &'a mut C) -> MmuOff<'a, C> {
        MmuOff { cp15 }
    }

    /// The current SCTLR value (M clear), for building the value
    /// [`MmuOff::enable_mmu`] writes.
    #[must_use]
    pub fn sctlr(&self) -> Sctlr {
        self.cp15.sctlr()
    }

    /// The backend, for reading registers (the MIDR to tell the CPU, say).
    /// Writes need `&mut` and are out of reach while the witness lives.
    #[must_use]
    pub fn cp15(&self) -> &C {
        self.cp15
    }

    /// Gives the backend back, the MMU still off. The witness is gone:
    /// changes made from now on need their maintenance again.
    #[must_use]
    pub fn into_inner(self) -> &'a mut C {
        self.cp15
    }

    /// Switches the MMU on, consuming the witness, and gives the backend
    /// back. In order:
    ///
    /// 1. invalidates the I- and D-caches and the whole TLB, which may hold
    ///    lines and translations from before the MMU was last turned off
    ///    (the maintenance the discarded tokens skipped is part of this);
    /// 2. drains the write buffer;
    /// 3. writes `ttbr` and `dacr`;
    /// 4. writes `sctlr` with M (bit 0) set; its other bits (caches, high
    ///    vectors, S and R) are the caller's choice.
    ///
    /// # Safety
    /// As for [`Cp15Ext::set_ttbr`], [`Cp15Ext::set_dacr`] and
    /// [`Cp15Ext::set_sctlr`]:
    /// * the first-level table at `ttbr` is a valid table that stays valid
    ///   (not freed, not reused) while installed, and maps the code, stack
    ///   and data in use; the code executing this call and the instruction
    ///   after it at their current (physical) addresses, since the CPU
    ///   fetches the next instruction through the new translation;
    /// * `dacr` opens those mappings' domains and no domain the running
    ///   code must not reach;
    /// * the FCSE PID (FCSEIDR, zero after reset) is the one the tables
    ///   were built for;
    /// * the D-cache holds no dirty line (it was cleaned before the MMU
    ///   was last turned off, or has not been enabled since reset): step 1
    ///   discards its contents;
    /// * on XScale the caller executes CPWAIT before depending on the new
    ///   setting.
    pub unsafe fn enable_mmu(self, ttbr: Ttbr, dacr: Dacr, sctlr: Sctlr) -> &'a mut C {
        let cp15 = self.cp15;
        // SAFETY: the caller promises the D-cache holds no dirty line, so
        // invalidating it loses nothing; invalidating the I-cache and the
        // TLB never loses data. `c7, c7, 0`, `c8, c7, 0` and `c7, c10, 4`
        // exist on ARM926EJ-S, XScale and StrongARM.
        unsafe {
            cp15.op(Cp15Op::InvalidateIdCache, 0);
            cp15.op(Cp15Op::InvalidateTlb, 0);
            cp15.op(Cp15Op::DrainWriteBuffer, 0);
        }
        // SAFETY: the caller upholds the TTBR, DACR and SCTLR contracts
        // stated above; the MMU is still off for the first two writes, so
        // they change nothing the running code sees until the third.
        unsafe {
            cp15.set_ttbr(ttbr);
            cp15.set_dacr(dacr);
            cp15.set_sctlr(sctlr.with_mmu(true));
        }
        cp15
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::addr::{Domain, ModifiedVirtAddr, PhysAddr};
    use crate::descriptor::{AccessPermission, CachePolicy};
    use crate::maint::CleanRegion;
    use crate::regs::{Cp15Event, Cp15Reg, DomainAccess, MockCp15};
    use crate::table::{MapAttrs, PageTable, PoolBlock, SizePolicy, TablePool};
    use std::boxed::Box;

    fn attrs() -> MapAttrs {
        MapAttrs::new(
            Domain::new(0).unwrap(),
            AccessPermission::PrivRw,
            CachePolicy::WriteBack,
        )
    }

    #[test]
    fn witness_refused_while_the_mmu_is_on() {
        let on = MockCp15::arm926().with_register(Cp15Reg::Sctlr, 0x0009_0079);
        let mut cp15 = on.clone();
        assert_eq!(
            MmuOff::new(&mut cp15).err(),
            Some(MmuOn {
                sctlr: Sctlr::from_bits(0x0009_0079)
            })
        );
        // Only the M bit matters.
        let mut all_but_m = MockCp15::new().with_register(Cp15Reg::Sctlr, !1);
        assert!(MmuOff::new(&mut all_but_m).is_ok());
        // Through a maintenance wrapper too; nothing is written either way.
        let mut cpu = Arm926::new(on);
        assert!(MmuOff::new(&mut cpu).is_err());
        assert!(cpu.cp15().events().is_empty());
    }

    #[test]
    fn witness_through_every_maintenance_wrapper() {
        let region = CleanRegion::new(ModifiedVirtAddr::new(0xE000_0000), 32 * 1024, 32).unwrap();
        let mut a = Arm926::new(MockCp15::arm926());
        assert!(MmuOff::new(&mut a).is_ok());
        // SAFETY: a mock backend; the clean region is never read.
        let mut x = unsafe { XScale::new(MockCp15::pxa255(), region) };
        assert!(MmuOff::new(&mut x).is_ok());
        // SAFETY: as above.
        let mut s = unsafe { Sa1100::new(MockCp15::sa1110(), |_: ModifiedVirtAddr| {}, region) };
        let off = MmuOff::new(&mut s).unwrap();
        assert_eq!(off.sctlr().bits(), 0x70);
        assert_eq!(off.cp15().cp15().midr().bits(), 0x6901_b119);
    }

    #[test]
    fn enable_mmu_invalidates_then_loads_then_turns_on() {
        let mut cp15 = MockCp15::arm926();
        let off = MmuOff::new(&mut cp15).unwrap();
        let ttbr = Ttbr::new(PhysAddr::new(0x0010_4000)).unwrap();
        let dacr = Dacr::only(Domain::new(0).unwrap(), DomainAccess::Client);
        let sctlr = off.sctlr().with_icache(true);
        // SAFETY: a mock backend; nothing runs under the new setting.
        let cp15 = unsafe { off.enable_mmu(ttbr, dacr, sctlr) };
        assert_eq!(
            cp15.events(),
            &[
                Cp15Event::Op(Cp15Op::InvalidateIdCache, 0),
                Cp15Event::Op(Cp15Op::InvalidateTlb, 0),
                Cp15Event::Op(Cp15Op::DrainWriteBuffer, 0),
                Cp15Event::Write(Cp15Reg::Ttbr, 0x0010_4000),
                Cp15Event::Write(Cp15Reg::Dacr, 1),
                Cp15Event::Write(Cp15Reg::Sctlr, 0x0009_1079),
            ]
        );
        assert!(cp15.sctlr().mmu_enabled());
        assert!(MmuOff::new(cp15).is_err());
    }

    #[test]
    fn into_inner_gives_the_backend_back_unchanged() {
        let mut cp15 = MockCp15::arm926();
        let off = MmuOff::new(&mut cp15).unwrap();
        // SAFETY: a mock; nothing runs under the change.
        unsafe { off.into_inner().set_dacr(Dacr::ALL_CLIENT) };
        assert_eq!(cp15.dacr(), Dacr::ALL_CLIENT);
        // SAFETY: the mock's MMU is off and nothing else writes its SCTLR.
        let off = unsafe { MmuOff::new_unchecked(&mut cp15) };
        assert!(!off.sctlr().mmu_enabled());
    }

    /// Tokens discharged with the witness do no maintenance and free the
    /// tables they carry at once.
    #[test]
    fn discarded_tokens_do_no_maintenance_and_free_their_tables() {
        let mut mem = Box::new([PoolBlock::ZERO; 2]);
        let mut pool = TablePool::new(
            &mut mem,
            PhysAddr::new(0x0010_0000),
            ModifiedVirtAddr::new(0x0010_0000),
        )
        .unwrap();
        let mut cp15 = MockCp15::arm926();
        let off = MmuOff::new(&mut cp15).unwrap();
        let mut t = PageTable::new(&mut pool).unwrap();
        let free = pool.free_units();
        let at = ModifiedVirtAddr::new(0x0040_0000);
        let f = t
            .map(
                &mut pool,
                at,
                PhysAddr::new(0x0080_0000),
                0x2000,
                attrs(),
                SizePolicy::Largest,
            )
            .unwrap();
        assert!(!f.clean_ranges().is_empty());
        f.discard_mmu_off(&off, &mut pool);
        assert_eq!(pool.free_units(), free - 1, "one coarse table");
        let f = t.unmap(&mut pool, at, 0x2000).unwrap();
        assert_eq!(f.tables_to_free(), 1);
        f.discard_mmu_off(&off, &mut pool);
        assert_eq!(pool.free_units(), free, "the coarse table is back");
        assert_eq!(t.lookup(&pool, at), Ok(None));
        assert!(cp15.events().is_empty(), "no maintenance at all");
    }
}
