//! The error type every switching strategy returns.

use crate::domain::DomainError;
use crate::id::SpaceId;
use crate::kernel_table::KernelTableError;
use crate::pid::PidError;
use crate::segment::SegmentError;
use crate::space::SpaceError;
use core::fmt;
use mmu_armv5::table::TableError;
use mmu_armv5::VirtAddr;

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
    /// A range length of zero or not a multiple of 4 KiB, or a range
    /// reaching past 4 GiB.
    BadLength(u32),
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
}

impl fmt::Display for FassError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            FassError::UnknownSpace(s) => write!(f, "no address space {}", s.0),
            FassError::SpaceExists(s) => write!(f, "address space {} already exists", s.0),
            FassError::SpaceIdOutOfRange(s) => write!(f, "address space id {} out of range", s.0),
            FassError::NotPrivate(va) => write!(f, "{va} is not in a private region"),
            FassError::BadLength(l) => write!(f, "bad range length {l:#x}"),
            FassError::Pid(e) => write!(f, "{e}"),
            FassError::Domain(e) => write!(f, "{e}"),
            FassError::Space(e) => write!(f, "{e}"),
            FassError::Segment(e) => write!(f, "{e}"),
            FassError::Table(e) => write!(f, "{e}"),
            FassError::KernelTable(e) => write!(f, "{e}"),
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

from!(PidError => Pid, DomainError => Domain, SpaceError => Space, SegmentError => Segment, TableError => Table, KernelTableError => KernelTable);
