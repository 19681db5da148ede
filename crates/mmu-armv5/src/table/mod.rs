//! Translation tables: memory, entries, a mapper and flush tokens.
//!
//! * [`alloc`]: the [`TableAlloc`] trait through which table memory is obtained;
//! * [`pool`]: [`TablePool`], a `no_std` allocator over caller-provided memory;
//! * [`raw`]: [`TableRef`], bounds-checked volatile entry access;
//! * [`mapper`]: [`PageTable`], map/unmap/protect/lookup/iterate;
//! * `edit`: one page's entry changed in place, every other attribute kept
//!   ([`PageTable::set_page_ap`], [`PageTable::retarget_page`]);
//! * [`flush`]: [`TableFlush`], the `#[must_use]` maintenance token, which
//!   also frees the tables a change unlinked once the maintenance is done;
//! * [`boot`]: [`MmuOff`], the witness that the MMU is off, with which boot
//!   code discharges tokens safely and finally switches the MMU on.
//!
//! [`PageTable::share_from`] gives a new table the kernel's first-level
//! entries in one call.

pub mod alloc;
pub mod boot;
mod edit;
pub mod flush;
pub mod mapper;
pub mod pool;
pub mod raw;
mod share;

pub use alloc::{AllocError, AllocId, TableAlloc, TableKind};
pub use boot::{MmuOff, MmuOn, TrustedCp15};
pub use flush::{TableFlush, TlbInvalidate, TlbPages, MAX_TLB_ENTRY_OPS};
pub use mapper::{write_l2_page, MapAttrs, Mapping, MappingIter, PageTable, SizePolicy};
pub use pool::{PoolBlock, TablePool};
pub use raw::TableRef;

use crate::addr::{AddrError, Domain, ModifiedVirtAddr, PhysAddr};
use core::fmt;

/// What can go wrong in a table operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum TableError {
    /// An address is not aligned as the operation requires.
    Misaligned(AddrError),
    /// A length of zero.
    EmptyRange,
    /// A length that is not a multiple of 1 KiB, or of the requested page size.
    BadLength(u32),
    /// The range wraps past the end of the 32-bit address space.
    AddressOverflow,
    /// Part of the range is already mapped.
    AlreadyMapped(ModifiedVirtAddr),
    /// Part of the range is not mapped.
    NotMapped(ModifiedVirtAddr),
    /// A page at this address lies only partly inside the range.
    PartialPage(ModifiedVirtAddr),
    /// The MiB already has a second-level table of another domain.
    DomainMismatch {
        /// Where the conflict is.
        mva: ModifiedVirtAddr,
        /// The domain of the existing first-level entry.
        existing: Domain,
    },
    /// A tiny page was asked for in a MiB that has a coarse table.
    TinyPageInCoarseTable(ModifiedVirtAddr),
    /// The allocator has no table memory left.
    OutOfTableMemory,
    /// A descriptor points at memory the allocator cannot reach.
    UnreachableTable(PhysAddr),
    /// A table address that is not aligned to its table size.
    MisalignedTable(PhysAddr),
    /// A table index beyond the table's entries.
    IndexOutOfRange(usize),
    /// [`PageTable::set_l1_entry`] was given a coarse or fine table link for
    /// this slot: only the mapper, the sharing calls
    /// ([`PageTable::share_l1_entries`], [`PageTable::share_from`] and the
    /// `unsafe` [`PageTable::share_from_root`]) and the `unsafe`
    /// [`PageTable::set_l1_entry_unchecked`] install table links.
    TableLinkRefused(usize),
    /// A first-level table where a second-level one is needed.
    NotSecondLevel(PhysAddr),
    /// A table used with an allocator other than the one it was built with
    /// (see [`AllocId`]): nothing was read or written.
    WrongAllocator,
    /// No [`AllocId`] could be taken for a new allocator
    /// ([`AllocId::fresh`]).
    NoAllocatorId,
}

impl From<AddrError> for TableError {
    fn from(e: AddrError) -> Self {
        TableError::Misaligned(e)
    }
}

impl fmt::Display for TableError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            TableError::Misaligned(e) => write!(f, "{e}"),
            TableError::EmptyRange => f.write_str("empty range"),
            TableError::BadLength(l) => {
                write!(f, "length {l:#x} is not a multiple of the page size")
            }
            TableError::AddressOverflow => f.write_str("range wraps past 4 GiB"),
            TableError::AlreadyMapped(a) => write!(f, "{a} is already mapped"),
            TableError::NotMapped(a) => write!(f, "{a} is not mapped"),
            TableError::PartialPage(a) => write!(f, "the page at {a} is only partly in the range"),
            TableError::DomainMismatch { mva, existing } => {
                write!(f, "{mva} lies in a MiB of domain {}", existing.get())
            }
            TableError::TinyPageInCoarseTable(a) => {
                write!(
                    f,
                    "tiny page at {a} needs a fine table, the MiB has a coarse one"
                )
            }
            TableError::OutOfTableMemory => f.write_str("no table memory left"),
            TableError::UnreachableTable(pa) => write!(f, "table at {pa} is not reachable"),
            TableError::MisalignedTable(pa) => write!(f, "table address {pa} is misaligned"),
            TableError::IndexOutOfRange(i) => write!(f, "table index {i} out of range"),
            TableError::TableLinkRefused(i) => write!(
                f,
                "slot {i}: a second-level table link needs the mapper or a sharing call"
            ),
            TableError::WrongAllocator => {
                f.write_str("the table belongs to another table allocator")
            }
            TableError::NoAllocatorId => f.write_str("no allocator id could be taken"),
            TableError::NotSecondLevel(pa) => {
                write!(
                    f,
                    "table at {pa} is a first-level table, not a second-level one"
                )
            }
        }
    }
}

impl core::error::Error for TableError {}
