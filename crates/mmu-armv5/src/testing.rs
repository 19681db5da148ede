//! Test configuration shared by the unit tests.

/// Most proptest cases per property under Miri (it interprets every step).
pub(crate) const MIRI_CASES: u32 = 8;

/// Proptest configuration: `cases` cases natively; under Miri at most
/// [`MIRI_CASES`], without failure persistence (Miri isolates file access).
pub(crate) fn proptest_config(cases: u32) -> proptest::test_runner::Config {
    if cfg!(miri) {
        proptest::test_runner::Config {
            cases: cases.min(MIRI_CASES),
            failure_persistence: None,
            ..Default::default()
        }
    } else {
        proptest::test_runner::Config::with_cases(cases)
    }
}
