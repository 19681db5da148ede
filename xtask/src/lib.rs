//! Build pipeline of the workspace, as a library (for `cargo xtask` and for
//! the QEMU integration tests in `tests/`).
//!
//! * [`cli`]: the `cargo xtask` command line;
//! * [`setup`]: installs what a fresh machine lacks (`rust-src`, QEMU);
//! * [`bench`](mod@bench): `cargo xtask bench` (model, microbenchmarks, QEMU instruction counts);
//! * [`board`](mod@board): the QEMU boards (target, flags, QEMU arguments);
//! * [`cachecheck`]: the cache-check plugin's runs (`run --cache-check`, the stage, the overhead);
//! * [`cargo`]: host and ARM cargo invocations, artifact paths;
//! * [`defmt_log`]: decoding the kernel's defmt stream;
//! * [`edge`]: the check that the demo kernel leaves CP15 access to `mmu-armv5`;
//! * [`embed`]: the embedding example's stage and the porting guide's snippet check;
//! * [`fuzz`]: `cargo xtask fuzz` (the cargo-fuzz targets under `fuzz/`);
//! * [`miri`]: the Miri stage of `cargo xtask test`;
//! * [`mutants`]: `cargo xtask mutants` (cargo-mutants runs and scores);
//! * [`outside`]: benchmark figures counted from outside the kernel (the plugin's transits);
//! * [`qemu`]: booting the kernel with a timeout and collecting its log;
//! * [`stages`]: the checks `cargo xtask test` runs, in order.

pub mod bench;
pub mod board;
pub mod cachecheck;
pub mod cargo;
pub mod cli;
pub mod defmt_log;
pub mod demo;
pub mod edge;
pub mod embed;
pub mod fuzz;
pub mod miri;
pub mod mutants;
pub mod outside;
pub mod qemu;
pub mod setup;
pub mod stages;

use std::fmt;
use std::path::PathBuf;

/// Why a step of the pipeline failed.
#[derive(Debug)]
pub enum Error {
    /// A command could not be started.
    Spawn {
        /// The command, for the message.
        command: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// A command ran and failed.
    CommandFailed {
        /// The command, for the message.
        command: String,
        /// Its exit status.
        status: std::process::ExitStatus,
    },
    /// Something needed is missing and cannot be installed from here.
    Missing(String),
    /// Reading or writing a file failed.
    Io {
        /// What was being done.
        what: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// The kernel ELF has no usable defmt table.
    Defmt(String),
    /// Bad command-line usage.
    Usage(String),
    /// A check ran but its result is wrong (message explains).
    Check(String),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Spawn { command, source } => write!(f, "cannot run `{command}`: {source}"),
            Error::CommandFailed { command, status } => write!(f, "`{command}` failed ({status})"),
            Error::Missing(m) => write!(f, "{m}"),
            Error::Io { what, source } => write!(f, "{what}: {source}"),
            Error::Defmt(m) => write!(f, "defmt: {m}"),
            Error::Usage(m) => write!(f, "{m}"),
            Error::Check(m) => write!(f, "{m}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Spawn { source, .. } | Error::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// Result of a pipeline step.
pub type Result<T> = std::result::Result<T, Error>;

/// The workspace root (the parent of this crate's directory).
pub fn repo_root() -> PathBuf {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    manifest.parent().map(PathBuf::from).unwrap_or(manifest)
}
