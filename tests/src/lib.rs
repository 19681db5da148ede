//! QEMU integration tests: helpers shared by the files in `tests/tests/`.
//!
//! [`kernel`] builds the demo kernel once per test binary (through
//! `xtask::cargo::build_kernel`, so plain `cargo test -p tests` works on a
//! fresh machine), and [`boot`] runs it under QEMU with a time limit and
//! returns the exit status and the decoded defmt log.

use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::Duration;

pub use xtask::qemu::{Ending, QemuOutcome};

/// Time limit of a QEMU run that is expected to finish.
pub const TIMEOUT: Duration = Duration::from_secs(60);

/// The kernel ELF, built on first use.
pub fn kernel() -> PathBuf {
    static ELF: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    match ELF.get_or_init(|| xtask::cargo::build_kernel().map_err(|e| e.to_string())) {
        Ok(p) => p.clone(),
        Err(e) => panic!("building the demo kernel failed: {e}"),
    }
}

/// Boots the kernel with command line `append` and time limit `timeout`.
pub fn boot(append: Option<&str>, timeout: Duration) -> QemuOutcome {
    let elf = kernel();
    match xtask::qemu::boot(&elf, timeout, append, false) {
        Ok(out) => out,
        Err(e) => panic!("QEMU run failed to start: {e}"),
    }
}
