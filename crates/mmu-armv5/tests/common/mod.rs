//! Test doubles shared by the integration tests: the [`ledger`] allocator
//! and maintenance, the [`sequences`] of table operations checked against a
//! reference model (also driven by the `mapper` fuzz target, which includes
//! both files), and the proptest configuration.
#![allow(dead_code)]

pub mod ledger;
pub mod sequences;

pub use ledger::*;

/// Most proptest cases per property under Miri (it interprets every step).
pub const MIRI_CASES: u32 = 8;

/// Proptest configuration: `cases` cases natively; under Miri at most
/// [`MIRI_CASES`], without failure persistence (Miri isolates file access),
/// with the XorShift generator.
pub fn proptest_config(cases: u32) -> proptest::test_runner::Config {
    proptest_config_with(cases, MIRI_CASES)
}

/// As [`proptest_config`], with `miri` cases under Miri (for properties
/// whose cases each take seconds there).
pub fn proptest_config_with(cases: u32, miri: u32) -> proptest::test_runner::Config {
    if cfg!(miri) {
        proptest::test_runner::Config {
            cases: cases.min(miri),
            failure_persistence: None,
            // Interpreted, the default ChaCha generator costs more than
            // the code under test.
            rng_algorithm: proptest::test_runner::RngAlgorithm::XorShift,
            ..Default::default()
        }
    } else {
        proptest::test_runner::Config::with_cases(cases)
    }
}
