//! CP15 registers.
mod backend;
mod dacr;
pub use backend::{Cp15, Cp15Op, Cp15Reg};
pub use dacr::{Dacr, DomainAccess, DACR};
