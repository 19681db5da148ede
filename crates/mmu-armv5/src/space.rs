//! The name of an address space, shared by every crate of the stack.
//!
//! The hardware has no notion of an address space: it has FCSE PIDs and
//! domains, which `fass` hands out *per address space*, and frames that
//! `spm` records *as owned by* an address space. [`SpaceId`] is the
//! kernel's name for the space in both, so the two crates (and the kernel
//! between them) speak of the same thing with the same type.
//!
//! Every `u16` is a valid name. Where a name is stored in fewer bits, the
//! store checks it: `spm` packs the owner of a user frame into 12 bits and
//! refuses a larger name with a typed error rather than truncating it.

use core::fmt;

/// Names one address space: a number the kernel chooses and passes in.
///
/// Neither this crate nor `fass` nor `spm` allocates names; a name may be
/// reused once every table that knew it has released the space.
///
/// ```
/// use mmu_armv5::SpaceId;
///
/// let a = SpaceId(7);
/// assert_eq!(a, SpaceId::new(7));
/// assert_eq!((a.0, a.get()), (7, 7));
/// assert_eq!(format!("{a:?}"), "Space(7)");
/// assert!(SpaceId(1) < SpaceId(2));
/// assert_eq!(SpaceId::default(), SpaceId(0));
/// ```
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[repr(transparent)]
pub struct SpaceId(pub u16);

impl SpaceId {
    /// The space named `id` (every `u16` is a name; the same as `SpaceId(id)`).
    #[inline]
    #[must_use]
    pub const fn new(id: u16) -> SpaceId {
        SpaceId(id)
    }

    /// The number (the same as `.0`).
    #[inline]
    #[must_use]
    pub const fn get(self) -> u16 {
        self.0
    }
}

impl fmt::Debug for SpaceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Space({})", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::format;

    #[test]
    fn the_constructor_and_the_field_agree() {
        for n in [0, 1, 0x0fff, 0x1000, u16::MAX] {
            let id = SpaceId::new(n);
            assert_eq!(id, SpaceId(n));
            assert_eq!(id.get(), n);
            assert_eq!(id.0, n);
        }
        const MAX: SpaceId = SpaceId::new(u16::MAX);
        assert_eq!(MAX.get(), u16::MAX);
    }

    #[test]
    fn debug_prints_the_number() {
        assert_eq!(format!("{:?}", SpaceId(0)), "Space(0)");
        assert_eq!(format!("{:?}", SpaceId(4096)), "Space(4096)");
    }
}
