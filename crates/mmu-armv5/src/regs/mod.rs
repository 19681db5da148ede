//! CP15 registers as value types, and the backends that read and write them.
//!
//! * One file per register, each a plain value type over the raw bits with
//!   `tock-registers` field definitions for field-level access:
//!   [`Midr`] (with [`CpuKind`]), [`CacheType`], [`TcmStatus`] and
//!   [`TcmRegion`], [`Sctlr`], [`Ttbr`], [`Dacr`], [`Fsr`] (DFSR and IFSR),
//!   [`Far`] and [`Fcseidr`]. Each field's offset and width are written
//!   once, in the register's `register_bitfields!` table (in [`fields`]:
//!   [`fields::SCTLR`], [`fields::DACR`], ...); the value types' `const fn`
//!   accessors read them from those field constants, and `as_register()`
//!   gives the same value as a `tock-registers`
//!   [`LocalRegisterCopy`](tock_registers::LocalRegisterCopy). Use the
//!   value types' accessors; the field tables are for `tock-registers`
//!   code.
//! * [`Cp15`]: the backend trait (one read, one write, one maintenance
//!   operation, one line operation over a range of lines, the ARM926
//!   test-and-clean loops).
//! * [`Cp15Ext`]: typed accessors for every backend. Setters that change
//!   what memory the CPU sees are `unsafe fn` with their contract spelled out;
//!   [`SwitchRegs`] is the DACR and FCSEIDR pair of a FASS switch, written
//!   back to back by [`Cp15Ext::set_switch_regs`].
//! * Backends: `HwCp15` (`MRC`/`MCR`, only built for bare-metal ARM) and
//!   [`MockCp15`] (a register file and an event log, every target).
mod backend;
mod cache_type;
mod dacr;
mod ext;
mod far;
mod fcseidr;
pub(crate) mod field;
mod fsr;
#[cfg(all(target_arch = "arm", target_os = "none"))]
mod hw;
mod midr;
mod mock;
mod sctlr;
mod switch;
mod tcm;
mod ttbr;

pub use backend::{Cp15, Cp15Op, Cp15Reg};
pub use cache_type::{
    CacheClass, CacheGeometry, CacheInfo, CacheSide, CacheType, CacheTypeError, CleanMethod,
    Lockdown,
};
pub use dacr::{Dacr, DomainAccess};
pub use ext::Cp15Ext;
pub use far::Far;
pub use fcseidr::Fcseidr;
pub use fsr::Fsr;
#[cfg(all(target_arch = "arm", target_os = "none", feature = "cache-check"))]
pub(crate) use hw::emit as hw_emit;
#[cfg(all(target_arch = "arm", target_os = "none"))]
#[cfg_attr(docsrs, doc(cfg(all(target_arch = "arm", target_os = "none"))))]
pub use hw::HwCp15;
pub use midr::{Architecture, CpuKind, Midr, IMPLEMENTER_ARM, IMPLEMENTER_DEC, IMPLEMENTER_INTEL};
pub use mock::{Cp15Event, MockCp15, DIRTY_FOREVER, MOCK_LOG_CAPACITY};
pub use sctlr::Sctlr;
pub use switch::SwitchRegs;
pub use tcm::{TcmRegion, TcmRegionError, TcmSize, TcmStatus};
pub use ttbr::Ttbr;

/// The `tock-registers` field tables of the registers (`register_bitfields!`
/// output: one module per register, one per field, one per field value).
///
/// The value types ([`Sctlr`], [`Dacr`], [`Fsr`], ...) read and write every
/// field through typed accessors, and `as_register()` gives their value as
/// a `tock-registers` `LocalRegisterCopy` over these tables for code that
/// wants field-level access the `tock-registers` way. Kept in this module
/// (their names are also re-exported at [`regs`](self)'s root, hidden from
/// the docs) so that several hundred generated items stay out of the API's
/// way.
pub mod fields {
    pub use super::cache_type::{CACHE_SIZE, CTR};
    pub use super::dacr::DACR;
    pub use super::fcseidr::FCSEIDR;
    pub use super::fsr::FSR;
    pub use super::midr::MIDR;
    pub use super::sctlr::SCTLR;
    pub use super::tcm::{TCM_REGION, TCM_STATUS};
    pub use super::ttbr::TTBR;
}

#[doc(hidden)]
pub use fields::{CACHE_SIZE, CTR, DACR, FCSEIDR, FSR, MIDR, SCTLR, TCM_REGION, TCM_STATUS, TTBR};
