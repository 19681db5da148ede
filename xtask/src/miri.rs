//! The Miri stage: the library crates' unit tests and a chosen set of their
//! model-backed integration tests under Miri (Stacked Borrows, the default
//! model), on the nightly toolchain, which xtask installs with the `miri`
//! and `rust-src` components when missing.
//!
//! Tests that run millions of simulated accesses are too slow under Miri;
//! they shrink their case counts under `cfg(miri)` (see each test), so the
//! whole stage takes a few minutes on two cores.

use crate::cargo::run_checked;
use crate::setup::{ensure_toolchain, toolchain_cargo, NIGHTLY};
use crate::Result;

/// One `cargo miri test` invocation: a package and the test targets of it.
#[derive(Clone, Copy, Debug)]
pub struct MiriRun {
    /// The package.
    pub package: &'static str,
    /// Arguments selecting its test targets (`--lib`, `--test NAME`).
    pub targets: &'static [&'static str],
}

/// Everything the stage runs, in order.
pub const RUNS: &[MiriRun] = &[
    MiriRun {
        package: "mmu-armv5",
        targets: &["--lib"],
    },
    MiriRun {
        package: "fass",
        targets: &["--lib"],
    },
    MiriRun {
        package: "spm",
        targets: &["--lib"],
    },
];

/// `MIRIFLAGS` of every run: proptest reads the working directory for its
/// failure persistence, which Miri's isolation forbids.
pub const MIRIFLAGS: &str = "-Zmiri-disable-isolation";

/// Runs [`RUNS`] under Miri; the first failure stops the stage.
pub fn run() -> Result<()> {
    ensure_toolchain(NIGHTLY, &["miri", "rust-src"])?;
    run_checked(toolchain_cargo(NIGHTLY).args(["miri", "setup"]))?;
    for r in RUNS {
        let mut cmd = toolchain_cargo(NIGHTLY);
        cmd.args(["miri", "test", "-p", r.package])
            .args(r.targets)
            .env("MIRIFLAGS", MIRIFLAGS)
            .env("PROPTEST_CASES", PROPTEST_CASES);
        run_checked(&mut cmd)?;
    }
    Ok(())
}

/// Cases of every property test that takes proptest's default
/// configuration (`PROPTEST_CASES`): a Miri run is about a thousand times
/// slower than a native one, and finding undefined behaviour needs the code
/// paths, not the input space.
pub const PROPTEST_CASES: &str = "8";
