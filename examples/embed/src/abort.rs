//! Step 6: the abort handlers, which let `fass` resolve the faults it causes.

use fass::{Platform, Resolution};
use mmu_armv5::regs::{Cp15Ext, Far, Fsr};
use mmu_armv5::Fault;

use crate::{Error, Vm};

/// What the trap code does after an abort.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AbortAction {
    /// `fass` filled or re-tagged a CPD entry: return to the faulting
    /// instruction and run it again.
    Retry,
    /// A real fault of the process (unmapped, permission, alignment): the
    /// kernel's own policy (signal, kill, grow the stack, ...).
    Fault(Fault),
}

/// The data abort handler, called from the abort vector with the faulting
/// process still current: DFSR and FAR say what and where.
pub fn data_abort<S: Platform + ?Sized>(vm: &mut Vm, sys: &mut S) -> Result<AbortAction, Error> {
    let (fsr, far) = (sys.dfsr(), sys.far());
    resolve(vm, sys, fsr, far)
}

/// The prefetch abort handler: IFSR says what, and the faulting
/// instruction's address (the abort's `lr - 4`) is where (ARMv5 has no IFAR).
pub fn prefetch_abort<S: Platform + ?Sized>(
    vm: &mut Vm,
    sys: &mut S,
    pc: u32,
) -> Result<AbortAction, Error> {
    let fsr = sys.ifsr();
    resolve(vm, sys, fsr, Far::from_bits(pc))
}

/// First the fast path (a fill, or a collision with a clean domain: no
/// flush, no table allocator), then the general one (shared segments,
/// collisions that flush); anything else is the process's own fault.
fn resolve<S: Platform + ?Sized>(
    vm: &mut Vm,
    sys: &mut S,
    fsr: Fsr,
    far: Far,
) -> Result<AbortAction, Error> {
    let resolution = match vm.resolve_fast(sys, fsr, far) {
        Some(r) => r,
        None => vm.resolve(sys, fsr, far)?,
    };
    Ok(match resolution {
        Resolution::Resolved { .. } => AbortAction::Retry,
        Resolution::NotFass(fault) => AbortAction::Fault(fault),
    })
}
