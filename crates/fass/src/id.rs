//! Identifiers of address spaces and shared segments.
//!
//! The crate never allocates them: the kernel names its address spaces and
//! segments and passes the names in. An identifier may be reused after the
//! object it named is destroyed; every table in this crate forgets an
//! identifier when its object is released, so reuse is safe.

use core::fmt;

/// Names one address space: the same type as `spm`'s, defined in
/// [`mmu_armv5::space`] so a kernel passes one name to both crates.
pub use mmu_armv5::SpaceId;

/// Names one shared segment.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct SegmentId(pub u16);

impl fmt::Debug for SegmentId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Segment({})", self.0)
    }
}
