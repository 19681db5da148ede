//! One error type for every step, so each can use `?` on the crates' own errors.

use core::fmt;

use fass::{FassError, KernelTableError, LayoutError};
use mmu_armv5::table::TableError;
use mmu_armv5::AddrError;
use spm::ops::OpError;
use spm::{ExchangeError, FrameError, PhysError, RegionError, TcmError};

/// Why a step failed: the error of the crate that refused, unchanged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Error {
    /// An address or a register value that does not fit (`mmu-armv5`).
    Addr(AddrError),
    /// The virtual address-space layout (`fass::Layout`).
    Layout(LayoutError),
    /// Building or changing a page table (`mmu-armv5`).
    Table(TableError),
    /// The kernel's table failed `fass::KernelTable`'s checks.
    KernelTable(KernelTableError),
    /// An address-space operation (`fass`).
    Fass(FassError),
    /// TCM discovery, planning or placement (`spm::tcm`).
    Tcm(TcmError),
    /// A physical region description (`spm`).
    Region(RegionError),
    /// The frame table (`spm`).
    Frame(FrameError),
    /// A page exchange (`spm`).
    Exchange(ExchangeError),
    /// A frame-state change (`spm::ops`).
    Op(OpError),
    /// A physical window (`spm::PhysWindows`).
    Phys(PhysError),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Addr(e) => write!(f, "address: {e}"),
            Error::Layout(e) => write!(f, "layout: {e}"),
            Error::Table(e) => write!(f, "page table: {e}"),
            Error::KernelTable(e) => write!(f, "kernel table: {e}"),
            Error::Fass(e) => write!(f, "address spaces: {e}"),
            Error::Tcm(e) => write!(f, "TCM: {e}"),
            Error::Region(e) => write!(f, "region: {e}"),
            Error::Frame(e) => write!(f, "frame table: {e}"),
            Error::Exchange(e) => write!(f, "exchange: {e}"),
            Error::Op(e) => write!(f, "frame state: {e}"),
            Error::Phys(e) => write!(f, "physical window: {e}"),
        }
    }
}

impl core::error::Error for Error {}

macro_rules! from {
    ($($variant:ident($ty:ty)),* $(,)?) => {
        $(impl From<$ty> for Error {
            fn from(e: $ty) -> Self {
                Error::$variant(e)
            }
        })*
    };
}

from!(
    Addr(AddrError),
    Layout(LayoutError),
    Table(TableError),
    KernelTable(KernelTableError),
    Fass(FassError),
    Tcm(TcmError),
    Region(RegionError),
    Frame(FrameError),
    Exchange(ExchangeError),
    Op(OpError),
    Phys(PhysError),
);
