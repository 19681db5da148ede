//! Boots the demo kernel in QEMU and checks what it reports.

use std::time::Duration;

use tests::{boot, Ending, QemuOutcome, TIMEOUT};

fn show(out: &QemuOutcome) -> String {
    format!(
        "ending {:?}\n{}\nstderr:\n{}",
        out.ending,
        out.log_text(),
        out.stderr
    )
}

#[test]
fn demo_boots_identifies_the_cpu_and_exits_zero() {
    let out = boot(None, TIMEOUT);
    assert_eq!(out.ending, Ending::Exited(0), "{}", show(&out));
    assert!(
        out.has_line("CPU identified as ARM926EJ-S"),
        "{}",
        show(&out)
    );
    assert!(out.has_line("MIDR 0x41069265"), "{}", show(&out));
    assert!(
        out.has_line("TCM status 0x00000000: DTCM absent, ITCM absent"),
        "{}",
        show(&out)
    );
    // The FCSE gives each PID its own copy of VA 0x00100000.
    assert!(
        out.has_line("PID 1: load at VA 0x00100000 = Ok(4097)"),
        "{}",
        show(&out)
    );
    assert!(
        out.has_line("PID 2: load at VA 0x00100000 = Ok(4098)"),
        "{}",
        show(&out)
    );
    assert!(out.has_line("demo done"), "{}", show(&out));
    assert_eq!(out.malformed, 0, "{}", show(&out));
}

#[test]
fn kernel_tests_all_pass() {
    let out = boot(Some("test"), TIMEOUT);
    assert_eq!(out.ending, Ending::Exited(0), "{}", show(&out));
    let passed =
        xtask::stages::kernel_test_verdict(&out).unwrap_or_else(|e| panic!("{e}\n{}", show(&out)));
    assert!(passed >= 7, "{}", show(&out));
    for name in [
        "midr_is_the_boards",
        "dacr_write_reads_back",
        "unmapped_probe_is_section_translation_fault",
        "user_probe_of_kernel_page_is_permission_fault",
        "domains_gate_a_section",
        "fcse_relocates_low_addresses",
    ] {
        assert!(
            out.has_line(&format!("test {name} ... ok")),
            "{name}\n{}",
            show(&out)
        );
    }
    // Manual self-checks do not run by default.
    assert!(!out.has_line("selfcheck_"), "{}", show(&out));
}

#[test]
fn one_test_can_be_selected() {
    let out = boot(Some("test only=fcse_relocates_low_addresses"), TIMEOUT);
    assert_eq!(out.ending, Ending::Exited(0), "{}", show(&out));
    assert!(
        out.has_line("kernel tests: 1 passed, 0 failed"),
        "{}",
        show(&out)
    );
}

#[test]
fn failing_test_fails_the_run() {
    let out = boot(Some("test only=selfcheck_fails"), TIMEOUT);
    assert_eq!(out.ending, Ending::Exited(1), "{}", show(&out));
    assert!(
        out.has_line("test selfcheck_fails ... FAILED"),
        "{}",
        show(&out)
    );
    assert!(
        out.has_line("kernel tests: 0 passed, 1 failed"),
        "{}",
        show(&out)
    );
    assert!(xtask::stages::kernel_test_verdict(&out).is_err());
}

#[test]
fn panic_exits_101_with_the_message() {
    let out = boot(Some("test only=selfcheck_panics"), TIMEOUT);
    assert_eq!(out.ending, Ending::Exited(101), "{}", show(&out));
    assert!(out.has_line("on purpose"), "{}", show(&out));
    assert!(xtask::stages::kernel_test_verdict(&out).is_err());
}

#[test]
fn unexpected_abort_is_reported_with_dfsr_and_far() {
    let out = boot(Some("test only=selfcheck_unexpected_abort"), TIMEOUT);
    assert_eq!(out.ending, Ending::Exited(3), "{}", show(&out));
    assert!(out.has_line("unexpected data abort"), "{}", show(&out));
    assert!(out.has_line("DFSR=0x005 FAR=0x80000000"), "{}", show(&out));
}

#[test]
fn hanging_test_times_out_and_keeps_the_log() {
    let out = boot(Some("test only=selfcheck_hangs"), Duration::from_secs(3));
    assert_eq!(out.ending, Ending::TimedOut, "{}", show(&out));
    assert!(out.has_line("test selfcheck_hangs ..."), "{}", show(&out));
    assert!(xtask::stages::kernel_test_verdict(&out).is_err());
}

#[test]
fn unknown_test_name_fails() {
    let out = boot(Some("test only=no_such_test"), TIMEOUT);
    assert_ne!(out.ending, Ending::Exited(0), "{}", show(&out));
    assert!(
        out.has_line("no kernel test named no_such_test"),
        "{}",
        show(&out)
    );
}
