//! CP15 registers as value types, and the backends that read and write them.
//!
//! * One file per register, each a plain value type over the raw bits with
//!   `tock-registers` field definitions for field-level access:
//!   [`Midr`] (with [`CpuKind`]), [`CacheType`], [`TcmStatus`] and
//!   [`TcmRegion`], [`Sctlr`], [`Ttbr`], [`Dacr`], [`Fsr`] (DFSR and IFSR),
//!   [`Far`] and [`Fcseidr`]. Each field's offset and width are written
//!   once, in the register's `register_bitfields!` table ([`SCTLR`],
//!   [`DACR`], ...); the value types' `const fn` accessors read them from
//!   those field constants, and `as_register()` gives the same value as a
//!   `tock-registers` [`LocalRegisterCopy`](tock_registers::LocalRegisterCopy).
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
    Lockdown, CACHE_SIZE, CTR,
};
pub use dacr::{Dacr, DomainAccess, DACR};
pub use ext::Cp15Ext;
pub use far::Far;
pub use fcseidr::{Fcseidr, FCSEIDR};
pub use fsr::{Fsr, FSR};
#[cfg(all(target_arch = "arm", target_os = "none", feature = "cache-check"))]
pub(crate) use hw::emit as hw_emit;
#[cfg(all(target_arch = "arm", target_os = "none"))]
pub use hw::HwCp15;
pub use midr::{
    Architecture, CpuKind, Midr, IMPLEMENTER_ARM, IMPLEMENTER_DEC, IMPLEMENTER_INTEL, MIDR,
};
pub use mock::{Cp15Event, MockCp15, DIRTY_FOREVER, MOCK_LOG_CAPACITY};
pub use sctlr::{Sctlr, SCTLR};
pub use switch::SwitchRegs;
pub use tcm::{TcmRegion, TcmRegionError, TcmSize, TcmStatus, TCM_REGION, TCM_STATUS};
pub use ttbr::{Ttbr, TTBR};
