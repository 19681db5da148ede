//! The error type every switching strategy returns.

use crate::domain::DomainError;
use crate::id::SpaceId;
use crate::kernel_table::KernelTableError;
use crate::layout::LayoutError;
use crate::pid::PidError;
use crate::segment::SegmentError;
use crate::space::SpaceError;
use core::fmt;
use mmu_armv5::table::TableError;
use mmu_armv5::{AddrError, VirtAddr};

/// An address-space operation that cannot be done.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum FassError {
    /// No space with this identifier exists.
    UnknownSpace(SpaceId),
    /// A space with this identifier already exists.
    SpaceExists(SpaceId),
    /// The identifier is beyond the table's capacity.
    SpaceIdOutOfRange(SpaceId),
    /// The address lies in the kernel or shared-segment region.
    NotPrivate(VirtAddr),
    /// PID allocation failed, or the PID mode forbids the change.
    Pid(PidError),
    /// Domain allocation failed.
    Domain(DomainError),
    /// The space's directory refused the change.
    Space(SpaceError),
    /// A shared-segment operation failed.
    Segment(SegmentError),
    /// A table access failed.
    Table(TableError),
    /// The kernel's table cannot be used.
    KernelTable(KernelTableError),
    /// An address, PID or domain value was refused by `mmu-armv5`.
    Addr(AddrError),
    /// The address-space layout cannot be used.
    Layout(LayoutError),
}

impl fmt::Display for FassError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            FassError::UnknownSpace(s) => write!(f, "no address space {}", s.0),
            FassError::SpaceExists(s) => write!(f, "address space {} already exists", s.0),
            FassError::SpaceIdOutOfRange(s) => write!(f, "address space id {} out of range", s.0),
            FassError::NotPrivate(va) => write!(f, "{va} is not in a private region"),
            FassError::Pid(e) => write!(f, "{e}"),
            FassError::Domain(e) => write!(f, "{e}"),
            FassError::Space(e) => write!(f, "{e}"),
            FassError::Segment(e) => write!(f, "{e}"),
            FassError::Table(e) => write!(f, "{e}"),
            FassError::KernelTable(e) => write!(f, "{e}"),
            FassError::Addr(e) => write!(f, "{e}"),
            FassError::Layout(e) => write!(f, "{e}"),
        }
    }
}

impl core::error::Error for FassError {}

macro_rules! from {
    ($($t:ident => $v:ident),*) => {$(
        impl From<$t> for FassError {
            fn from(e: $t) -> Self {
                FassError::$v(e)
            }
        }
    )*};
}

from!(PidError => Pid, DomainError => Domain, SpaceError => Space, SegmentError => Segment, TableError => Table, KernelTableError => KernelTable, AddrError => Addr, LayoutError => Layout);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::Region;

    fn domain(n: u8) -> Result<mmu_armv5::Domain, FassError> {
        Ok(mmu_armv5::Domain::new(n)?)
    }

    fn region(base: u32) -> Result<Region, FassError> {
        Ok(Region::new(base, 1 << 20)?)
    }

    #[test]
    fn the_lower_crates_errors_convert_with_question_mark() {
        assert_eq!(
            domain(16),
            Err(FassError::Addr(AddrError::DomainOutOfRange(16)))
        );
        assert!(domain(15).is_ok());
        assert!(matches!(region(0x1234), Err(FassError::Layout(_))));
        assert!(region(0x10_0000).is_ok());
    }
}
