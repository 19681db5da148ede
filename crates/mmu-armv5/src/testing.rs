//! Test configuration shared by the unit tests.

/// Most proptest cases per property under Miri (it interprets every step).
pub(crate) const MIRI_CASES: u32 = 8;

/// Proptest configuration: `cases` cases natively; under Miri at most
/// [`MIRI_CASES`], without failure persistence (Miri isolates file access),
/// with the XorShift generator.
pub(crate) fn proptest_config(cases: u32) -> proptest::test_runner::Config {
    if cfg!(miri) {
        proptest::test_runner::Config {
            cases: cases.min(MIRI_CASES),
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
