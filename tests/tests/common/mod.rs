//! Helpers the QEMU integration tests share (`mod common;` in each test
//! file): the outcome shown on a failure and the `key=value` fields of the
//! kernel's report lines.

// Each test file is its own crate and uses only some of these.
#![allow(dead_code)]

use std::collections::HashMap;

use tests::QemuOutcome;

/// How a boot ended, its log and QEMU's stderr: the message of a failed
/// assertion.
pub fn show(out: &QemuOutcome) -> String {
    format!(
        "ending {:?}\n{}\nstderr:\n{}",
        out.ending,
        out.log_text(),
        out.stderr
    )
}

/// The `key=value` words of `text` (other words ignored).
pub fn fields(text: &str) -> HashMap<String, String> {
    text.split_whitespace()
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// The value of `key` in `r` as an unsigned number, decimal or `0x` hex;
/// panics (a test failure naming the record) if it is missing or not one.
pub fn num(r: &HashMap<String, String>, key: &str) -> u64 {
    let v = r.get(key).unwrap_or_else(|| panic!("no {key} in {r:?}"));
    match v.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16),
        None => v.parse(),
    }
    .unwrap_or_else(|_| panic!("{key} is not a number in {r:?}"))
}

/// The value of `key` in `r` as a signed number, decimal (the kernel
/// prints -1 for "none", e.g. the VFP's owner) or `0x` hex (a bit set,
/// e.g. the VFP's `used_after`); panics as [`num`] does.
pub fn signed(r: &HashMap<String, String>, key: &str) -> i64 {
    let v = r.get(key).unwrap_or_else(|| panic!("no {key} in {r:?}"));
    match v.strip_prefix("0x") {
        Some(h) => i64::from_str_radix(h, 16),
        None => v.parse(),
    }
    .unwrap_or_else(|_| panic!("{key} is not a number in {r:?}"))
}
