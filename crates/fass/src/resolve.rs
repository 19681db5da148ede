//! FASS fault resolution: lazy CPD fills and collisions.
//!
//! A section translation fault or section domain fault on a slot the
//! current space's own directory maps is a FASS fault: the CPD slot is
//! empty (fill it) or tagged with another domain (a collision: move the
//! slot, retag it; flush caches and TLB if the previous owner's domain is
//! dirty, otherwise invalidate the TLB only). Anything else is handed back
//! to the kernel decoded.
//!
//! The fault address may be the MVA (hardware) or the VA (QEMU, under
//! FCSE): an address below 32 MiB is taken as a VA of the current PID.

use crate::policy::VictimPolicy;
use crate::stats::Event;
use crate::switch::{FassError, FassSwitch};
use mmu_armv5::addr::FCSE_WINDOW_SIZE;
use mmu_armv5::maint::CacheMaintenance;
use mmu_armv5::regs::{Dacr, DomainAccess};
use mmu_armv5::table::TableAlloc;
use mmu_armv5::{Domain, Fault, FaultKind, FaultLevel, ModifiedVirtAddr, VirtAddr};

/// What resolving a FASS fault flushed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Flushed {
    /// Nothing: an empty CPD slot was filled.
    Nothing,
    /// The TLB only: the slot's previous owner was clean.
    TlbOnly,
    /// D-cache clean+invalidate, I-cache and TLB invalidation: the previous owner was dirty.
    Full,
}

/// The outcome of [`FassSwitch::resolve`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[must_use]
pub enum Resolution {
    /// The CPD now holds the current space's entry; retry the access.
    Resolved {
        /// The first-level slot filled.
        slot: usize,
        /// The domain that owned it before, on a collision.
        collided_with: Option<Domain>,
        /// What was flushed.
        flushed: Flushed,
    },
    /// Not a FASS fault: the kernel handles it.
    NotFass(Fault),
}

impl<P: VictimPolicy, const SPACES: usize, const SLOTS: usize> FassSwitch<P, SPACES, SLOTS> {
    /// Resolves a data or prefetch abort with status `fsr` at fault address `far`.
    pub fn resolve<H: CacheMaintenance, A: TableAlloc + ?Sized>(
        &mut self,
        hw: &mut H,
        alloc: &mut A,
        fsr: u32,
        far: u32,
    ) -> Result<Resolution, FassError> {
        let fault = Fault::from_fsr(fsr);
        if !matches!(
            fault.kind,
            FaultKind::Translation(FaultLevel::Section) | FaultKind::Domain(FaultLevel::Section)
        ) {
            return Ok(Resolution::NotFass(fault));
        }
        let Some(cur) = self.current else {
            return Ok(Resolution::NotFass(fault));
        };
        let st = self.space(cur)?;
        let mva = if far < FCSE_WINDOW_SIZE {
            VirtAddr::new(far).to_mva(st.pid.pid())
        } else {
            ModifiedVirtAddr::new(far)
        };
        let slot = mva.l1_index();
        let desc = st.dir.entry(slot);
        let Some(d) = st.domain else {
            return Ok(Resolution::NotFass(fault));
        };
        if !desc.is_valid() {
            return Ok(Resolution::NotFass(fault));
        }
        let want = desc.with_domain(d);
        if self.cpd.entry(alloc, slot)? == want {
            return Ok(Resolution::NotFass(fault));
        }
        let prev = self.domains.slot_owner(slot).filter(|o| *o != d);
        let flushed = match prev {
            None => Flushed::Nothing,
            Some(o) => {
                self.stats.record(Event::Collision);
                self.domains.release_slot(o, slot);
                // Write the new entry before flushing, so no walk can
                // refetch the old one after the TLB invalidation.
                self.cpd.write(alloc, hw, slot, want)?;
                if self.domains.is_dirty(o) {
                    self.full_flush(hw);
                    Flushed::Full
                } else {
                    hw.invalidate_tlb();
                    self.stats.record(Event::TlbOnlyInvalidation);
                    Flushed::TlbOnly
                }
            }
        };
        if flushed == Flushed::Nothing {
            self.cpd.write(alloc, hw, slot, want)?;
        }
        self.domains.claim_slot(d, slot)?;
        self.domains.mark_dirty(Dacr::only(d, DomainAccess::Client));
        self.stats.record(Event::CpdFill);
        Ok(Resolution::Resolved {
            slot,
            collided_with: prev,
            flushed,
        })
    }
}
