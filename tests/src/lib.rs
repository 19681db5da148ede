//! QEMU integration tests: helpers shared by the files in `tests/tests/`.
//!
//! [`kernel`] builds the demo kernel once per test binary (through
//! `xtask::cargo::build_kernel`, so plain `cargo test -p tests` works on a
//! fresh machine), and [`boot`] runs it under QEMU with a time limit and
//! returns the exit status and the decoded defmt log.

use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Duration;

pub use xtask::board::Board;
pub use xtask::qemu::{Ending, QemuOutcome};

/// Time limit of a QEMU run that is expected to finish.
pub const TIMEOUT: Duration = Duration::from_secs(60);

/// The kernel ELF, built on first use.
pub fn kernel() -> PathBuf {
    kernel_for(Board::default())
}

/// The kernel ELF for `board`, built on first use, one build at a time
/// (versatilepb and connex share cargo's output path, which is copied per
/// board right after each build).
pub fn kernel_for(board: Board) -> PathBuf {
    static BUILT: Mutex<Vec<(Board, PathBuf)>> = Mutex::new(Vec::new());
    let mut built = BUILT.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, p)) = built.iter().find(|(b, _)| *b == board) {
        return p.clone();
    }
    match xtask::cargo::build_kernel_for(board) {
        Ok(p) => {
            built.push((board, p.clone()));
            p
        }
        Err(e) => panic!("building the demo kernel for {} failed: {e}", board.name()),
    }
}

/// The measuring build of the kernel for versatilepb (feature `measure`:
/// the `BENCH`, `TRANSITS` and `SWITCHPATH` lines), built on first use.
pub fn measuring_kernel() -> PathBuf {
    static BUILT: Mutex<Option<PathBuf>> = Mutex::new(None);
    let mut built = BUILT.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(p) = built.as_ref() {
        return p.clone();
    }
    match xtask::cargo::build_measuring_kernel_for(Board::default()) {
        Ok(p) => {
            *built = Some(p.clone());
            p
        }
        Err(e) => panic!("building the measuring demo kernel failed: {e}"),
    }
}

/// Boots the kernel built for `board` with command line `append`.
pub fn boot_on(board: Board, append: Option<&str>, timeout: Duration) -> QemuOutcome {
    let elf = kernel_for(board);
    match xtask::qemu::boot_on(board, &elf, timeout, append, false) {
        Ok(out) => out,
        Err(e) => panic!("QEMU run on {} failed to start: {e}", board.name()),
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
