//! Step 8: another strategy from the same vouch (per-space tables, naive or
//! with FCSE PIDs), e.g. to compare it with FASS on the same board.

use fass::{ClassicKind, FassError, Platform, SpaceId, TableSwitch};
use mmu_armv5::Domain;

use crate::{Error, Vm, MAX_SPACES, SEGMENTS};

/// A classic strategy: one first-level table per space (copying the
/// kernel's entries), loaded on every switch.
pub type Classic = TableSwitch<MAX_SPACES, SEGMENTS>;

/// The domain of every user mapping under a [`Classic`] strategy (one
/// table per space: the domain tags nothing, the tables separate spaces).
pub const CLASSIC_USER_DOMAIN: Domain = Domain::from_low_bits(1);

/// Hands the CPU from the FASS manager `vm` to a classic strategy of `kind`
/// built on the same vouched-for kernel table: no second `unsafe`.
///
/// `fass::KernelTable` is a `Copy` handle and one vouch covers every
/// strategy built from it, used one at a time (its promise 3): the one in
/// use hands over once it keeps no address space. So every space of `vm`
/// is destroyed first (which takes its entries out of the CPD, the kernel
/// table), then `KernelTable::hand_over` puts the CPU back to the kernel's
/// own state (PID 0, the kernel table, caches and TLB flushed), with the
/// kernel's domain and the classic strategy's user domain open: the
/// classic strategies write no DACR.
pub fn hand_over<S: Platform + ?Sized>(
    mut vm: Vm,
    sys: &mut S,
    kind: ClassicKind,
) -> Result<Classic, Error> {
    for id in 0..MAX_SPACES as u16 {
        match vm.destroy_space(sys, SpaceId(id)) {
            Ok(()) | Err(FassError::UnknownSpace(_)) => {}
            Err(e) => return Err(e.into()),
        }
    }
    let kernel = *vm.cpd().kernel();
    kernel.hand_over(sys, Some(CLASSIC_USER_DOMAIN))?;
    Ok(TableSwitch::new(kind, CLASSIC_USER_DOMAIN, kernel))
}
