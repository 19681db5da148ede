//! Benchmarks of the workspace (host only): modelled context-switch costs
//! of the three `fass` strategies on the `armv5-sim` model, the
//! domain-policy comparison, memory figures from the real types, and PNG
//! plots. `cargo xtask bench` runs the `bench-model` binary of this crate,
//! the criterion microbenchmarks in `benches/`, and the QEMU scenarios.
//!
//! Module map:
//! * [`model`]: the access stream and the runs on the model (figures are
//!   MODELLED: cycles from the presets' cost models, not measurements);
//! * [`path`]: the kernel path the model runs per switch and per abort,
//!   its length from the demo kernel's QEMU instruction counts;
//! * [`suite`]: the grid of runs behind each table;
//! * [`memory`]: bytes per space and per frame, from `size_of` of the real types;
//! * [`report`]: Markdown tables and the CSV;
//! * [`plot`]: the PNG figures (plotters, bitmap backend, an embedded font).
#![deny(missing_docs)]

pub mod memory;
pub mod model;
pub mod path;
pub mod plot;
pub mod report;
pub mod suite;

use std::fmt;

/// Why a benchmark could not run.
#[derive(Debug)]
pub enum BenchError {
    /// The model rejected its configuration.
    Config(armv5_sim::ConfigError),
    /// The model's memory rejected an access.
    Mem(armv5_sim::MemError),
    /// Table memory ran out.
    Alloc(mmu_armv5::table::AllocError),
    /// A table operation failed.
    Table(mmu_armv5::table::TableError),
    /// A strategy operation failed.
    Fass(fass::FassError),
    /// An access aborted that no strategy resolves.
    Fault {
        /// The virtual address.
        va: u32,
        /// The fault status.
        fsr: u32,
    },
    /// A benchmark was set up wrongly (message says how).
    Setup(&'static str),
    /// A table of kernel path lengths could not be used (message says why).
    KernelPath(String),
    /// A property the benchmarks assert does not hold (message says which).
    Check(String),
    /// Writing a result failed.
    Io(std::io::Error),
    /// Drawing a plot failed.
    Plot(String),
}

impl fmt::Display for BenchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BenchError::Config(e) => write!(f, "model configuration: {e:?}"),
            BenchError::Mem(e) => write!(f, "model memory: {e:?}"),
            BenchError::Alloc(e) => write!(f, "table memory: {e:?}"),
            BenchError::Table(e) => write!(f, "table: {e:?}"),
            BenchError::Fass(e) => write!(f, "fass: {e:?}"),
            BenchError::Fault { va, fsr } => {
                write!(f, "unexpected abort at {va:#010x} (FSR {fsr:#x})")
            }
            BenchError::Setup(m) => write!(f, "bad benchmark set-up: {m}"),
            BenchError::KernelPath(m) => write!(f, "kernel path lengths: {m}"),
            BenchError::Check(m) => write!(f, "check failed: {m}"),
            BenchError::Io(e) => write!(f, "i/o: {e}"),
            BenchError::Plot(m) => write!(f, "plot: {m}"),
        }
    }
}

impl std::error::Error for BenchError {}

impl From<armv5_sim::ConfigError> for BenchError {
    fn from(e: armv5_sim::ConfigError) -> Self {
        BenchError::Config(e)
    }
}
impl From<armv5_sim::MemError> for BenchError {
    fn from(e: armv5_sim::MemError) -> Self {
        BenchError::Mem(e)
    }
}
impl From<mmu_armv5::table::AllocError> for BenchError {
    fn from(e: mmu_armv5::table::AllocError) -> Self {
        BenchError::Alloc(e)
    }
}
impl From<mmu_armv5::table::TableError> for BenchError {
    fn from(e: mmu_armv5::table::TableError) -> Self {
        BenchError::Table(e)
    }
}
impl From<fass::FassError> for BenchError {
    fn from(e: fass::FassError) -> Self {
        BenchError::Fass(e)
    }
}
impl From<std::io::Error> for BenchError {
    fn from(e: std::io::Error) -> Self {
        BenchError::Io(e)
    }
}
