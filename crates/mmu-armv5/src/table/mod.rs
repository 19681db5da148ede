//! Translation tables.
pub mod alloc;
pub use alloc::{AllocError, TableAlloc, TableKind};
