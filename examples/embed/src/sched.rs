//! Step 5: the switch the scheduler makes.

use fass::{Platform, SpaceId, SwitchStrategy};

use crate::{Error, Vm};

/// Makes `next` the running address space, as the scheduler's last step
/// before returning to user mode.
///
/// The common case is the precomputed switch (`switch_lean`): `next` kept
/// its domain since its last full switch, so the switch is one DACR write
/// and one FCSEIDR write, no cache or TLB maintenance. Otherwise (its first
/// run, or its domain was recycled) `switch_to` decides: it may recycle a
/// domain, flush if the recycled one is dirty, and records a new
/// precomputed switch.
pub fn switch<S: Platform + ?Sized>(vm: &mut Vm, sys: &mut S, next: SpaceId) -> Result<(), Error> {
    if vm.switch_lean(sys, next).is_ok() {
        return Ok(());
    }
    vm.switch_to(sys, next)?;
    Ok(())
}
