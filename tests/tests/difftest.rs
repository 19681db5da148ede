//! The in-QEMU differential test, replayed on the `armv5-sim` model.
//!
//! The kernel runs `mmu-difftest` with a fixed seed on QEMU's MMU and prints
//! the digest of every outcome (in architectural form). The same seed on the
//! model must give the same digest: same mappings, same values read, same
//! faults, same addresses, access for access.

use mmu_difftest::sim::SimTarget;
use tests::{boot, Ending, TIMEOUT};

fn field<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    line.split_whitespace()
        .find_map(|w| w.strip_prefix(key).and_then(|v| v.strip_prefix('=')))
}

fn hex(s: &str) -> u64 {
    u64::from_str_radix(s.trim_start_matches("0x"), 16).unwrap_or_else(|e| panic!("{s}: {e}"))
}

#[test]
fn qemu_and_the_model_give_the_same_outcomes_for_the_same_seed() {
    let out = boot(Some("test only=translate_matches_qemu"), TIMEOUT);
    let log = out.log_text();
    assert_eq!(out.ending, Ending::Exited(0), "{log}\n{}", out.stderr);
    let line = log
        .lines()
        .find(|l| l.contains("difftest: seed="))
        .unwrap_or_else(|| panic!("no difftest summary in:\n{log}"));
    let seed = hex(field(line, "seed").expect("seed"));
    let digest = hex(field(line, "digest").expect("digest"));
    let accesses: u32 = field(line, "accesses")
        .expect("accesses")
        .parse()
        .expect("number");
    let mismatches: u32 = field(line, "mismatches")
        .expect("mismatches")
        .parse()
        .expect("number");
    assert_eq!(mismatches, 0, "{log}");
    assert!(accesses >= 1000, "{log}");

    let mut model = SimTarget::new().expect("model");
    let r = mmu_difftest::run(&mut model, &SimTarget::config(seed)).expect("replay");
    assert_eq!(
        r.mismatches, 0,
        "model: first mismatch {:?}",
        r.first_mismatch
    );
    assert_eq!(r.accesses, accesses, "same number of accesses");
    assert_eq!(
        r.digest, digest,
        "QEMU and the model disagree on some outcome for seed {seed:#x}"
    );
    assert_eq!(r.deviations, 0, "the model follows the architecture");
}
