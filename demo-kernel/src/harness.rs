//! In-kernel test harness.
//!
//! [`kernel_test!`] defines a test function and places a `&'static TestCase`
//! in the `.kernel_tests` linker section; `kernel.ld` brackets that section
//! with `__kernel_tests_start`/`__kernel_tests_end`. [`run`] runs the tests
//! in source order (file, then line), each between an MMU [`snapshot`] and
//! [`restore`](crate::mmu::restore), logs `test NAME ... ok` or
//! `test NAME ... FAILED: <error>`, then `kernel tests: N passed, M failed`.
//!
//! Tests marked `manual` run only when named with `only=NAME`: the harness's
//! self-checks that fail, panic, abort or hang on purpose, so the host side
//! can prove such runs are reported as failures.
//!
//! [`snapshot`]: crate::mmu::snapshot

use crate::mmu;

/// Why a test failed.
#[derive(Clone, Copy, PartialEq, Eq, defmt::Format)]
pub enum TestError {
    /// `what` was `actual`, expected `expected`.
    Mismatch {
        /// What was compared.
        what: &'static str,
        /// The value the test wanted.
        expected: u32,
        /// The value it got.
        actual: u32,
        /// Source line of the check.
        line: u32,
    },
    /// A condition did not hold.
    Failed {
        /// The condition or its description.
        what: &'static str,
        /// Source line of the check.
        line: u32,
    },
}

/// One registered test.
pub struct TestCase {
    /// The test function's name.
    pub name: &'static str,
    /// Source file and line (the run order).
    pub file: &'static str,
    /// Source line.
    pub line: u32,
    /// Runs only when named by `only=NAME`.
    pub manual: bool,
    /// The test, given the kernel's CP15 owner.
    pub func: fn(&mut mmu_armv5::regs::HwCp15) -> Result<(), TestError>,
}

/// Defines an in-kernel test: `kernel_test!(fn name() { ... Ok(()) })`, or
/// `kernel_test!(manual fn name() { ... })` for one that runs only on request;
/// `fn name(cp15) { ... }` names the kernel's CP15 owner (`&mut HwCp15`),
/// lent to the test by [`run`].
macro_rules! kernel_test {
    (@register $name:ident, $manual:expr) => {
        const _: () = {
            #[used]
            #[link_section = ".kernel_tests"]
            static CASE: &$crate::harness::TestCase = &$crate::harness::TestCase {
                name: stringify!($name),
                file: file!(),
                line: line!(),
                manual: $manual,
                func: $name,
            };
        };
    };
    ($(#[$m:meta])* manual fn $name:ident() $body:block) => {
        kernel_test!($(#[$m])* manual fn $name(_) $body);
    };
    ($(#[$m:meta])* manual fn $name:ident($c:tt) $body:block) => {
        $(#[$m])*
        fn $name($c: &mut mmu_armv5::regs::HwCp15) -> Result<(), $crate::harness::TestError> $body
        kernel_test!(@register $name, true);
    };
    ($(#[$m:meta])* fn $name:ident() $body:block) => {
        kernel_test!($(#[$m])* fn $name(_) $body);
    };
    ($(#[$m:meta])* fn $name:ident($c:tt) $body:block) => {
        $(#[$m])*
        fn $name($c: &mut mmu_armv5::regs::HwCp15) -> Result<(), $crate::harness::TestError> $body
        kernel_test!(@register $name, false);
    };
}

/// Fails the test with [`TestError::Mismatch`] unless `actual == expected` (both `u32`).
macro_rules! check_eq {
    ($what:literal, $actual:expr, $expected:expr) => {{
        let (actual, expected): (u32, u32) = ($actual, $expected);
        if actual != expected {
            return Err($crate::harness::TestError::Mismatch {
                what: $what,
                expected,
                actual,
                line: line!(),
            });
        }
    }};
}

/// Fails the test with [`TestError::Failed`] unless `cond` holds.
macro_rules! check {
    ($what:literal, $cond:expr) => {{
        if !$cond {
            return Err($crate::harness::TestError::Failed {
                what: $what,
                line: line!(),
            });
        }
    }};
}

extern "C" {
    static __kernel_tests_start: u8;
    static __kernel_tests_end: u8;
}

/// Every registered test, in link order.
fn registered() -> &'static [&'static TestCase] {
    // SAFETY: the linker script places only `&'static TestCase` values (from
    // `kernel_test!`) between the two symbols, word aligned.
    unsafe {
        let start = core::ptr::addr_of!(__kernel_tests_start);
        let end = core::ptr::addr_of!(__kernel_tests_end);
        let n = (end as usize - start as usize) / core::mem::size_of::<&TestCase>();
        core::slice::from_raw_parts(start.cast::<&'static TestCase>(), n)
    }
}

/// Source-order key of a test.
fn key(t: &TestCase) -> (&'static str, u32) {
    (t.file, t.line)
}

/// The test after `prev` in source order (no allocation: a linear scan).
fn next_after(all: &[&'static TestCase], prev: Option<&TestCase>) -> Option<&'static TestCase> {
    all.iter()
        .copied()
        .filter(|t| prev.is_none_or(|p| key(t) > key(p)))
        .min_by(|a, b| key(a).cmp(&key(b)))
}

/// Reports the start of test `name` to the cache check
/// ([`Event::Scenario`](mmu_armv5::marker::Event::Scenario), numbered from
/// 1 in the order the tests run, the number logged with the name).
fn scenario_marker(name: &str) {
    #[cfg(feature = "cache-check")]
    {
        static NEXT: crate::global::Global<u32> = crate::global::Global::new(0);
        // SAFETY: thread context, single core, not re-entered.
        let n = unsafe {
            NEXT.with(|n| {
                *n += 1;
                *n
            })
        };
        defmt::info!("cache-check: scenario {=u32} is test {=str}", n, name);
        crate::marker::event(mmu_armv5::marker::Event::Scenario, n);
    }
    #[cfg(not(feature = "cache-check"))]
    let _ = name;
}

/// Runs the tests (all non-manual ones, or just `only`), lending each the
/// kernel's CP15 owner `cp15`. Returns whether the run passed: at least one
/// test ran and none failed.
pub fn run(cp15: &mut mmu_armv5::regs::HwCp15, only: Option<&str>) -> bool {
    let all = registered();
    if let Some(name) = only {
        if !all.iter().any(|t| t.name == name) {
            defmt::error!("no kernel test named {=str}", name);
            return false;
        }
    }
    defmt::info!("running kernel tests ({=usize} registered)", all.len());
    let (mut passed, mut failed) = (0u32, 0u32);
    let mut prev = None;
    while let Some(t) = next_after(all, prev) {
        prev = Some(t);
        let selected = match only {
            Some(name) => t.name == name,
            None => !t.manual,
        };
        if !selected {
            continue;
        }
        defmt::info!("test {=str} ...", t.name);
        scenario_marker(t.name);
        let saved = mmu::snapshot(cp15);
        let result = (t.func)(cp15);
        mmu::restore(cp15, &saved);
        match result {
            Ok(()) => {
                passed += 1;
                defmt::info!("test {=str} ... ok", t.name);
            }
            Err(e) => {
                failed += 1;
                defmt::error!("test {=str} ... FAILED: {} ({=str})", t.name, e, t.file);
            }
        }
    }
    defmt::info!("kernel tests: {=u32} passed, {=u32} failed", passed, failed);
    passed > 0 && failed == 0
}
