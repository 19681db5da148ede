//! The page-table mapper: map/unmap/protect/set_l1_entry/share/move/lookup/
//! flush sequences on two `PageTable`s over one host table pool (and
//! attempts through a second pool over the same base, all refused), checked
//! against a reference model, against `mmu_armv5::translate` and for the
//! table memory (no leak, no double free, nothing freed before its flush).
//! The checks are `crates/mmu-armv5/tests/common/sequences.rs`, which the
//! crate's property test drives too; this file only decodes the input.
#![no_main]

use libfuzzer_sys::arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;

#[path = "../../crates/mmu-armv5/tests/common/ledger.rs"]
mod ledger;
#[path = "../../crates/mmu-armv5/tests/common/sequences.rs"]
mod sequences;

use sequences::{Mode, Op, Sequence, BLOCKS};

fn op(u: &mut Unstructured<'_>) -> Result<(Op, Mode)> {
    let t = usize::from(u.arbitrary::<bool>()?);
    let op = match u.int_in_range(0..=8u8)? {
        0 => Op::Map {
            t,
            slot: u.arbitrary()?,
            page: u.arbitrary()?,
            size: u.arbitrary()?,
            frame: u.arbitrary()?,
            attrs: u.arbitrary()?,
        },
        1 => Op::Unmap {
            t,
            slot: u.arbitrary()?,
            page: u.arbitrary()?,
            size: u.arbitrary()?,
        },
        2 => Op::Protect {
            t,
            slot: u.arbitrary()?,
            page: u.arbitrary()?,
            size: u.arbitrary()?,
            attrs: u.arbitrary()?,
        },
        3 => Op::SetL1 {
            t,
            slot: u.arbitrary()?,
            what: u.arbitrary()?,
            from: u.arbitrary()?,
        },
        4 => Op::Share {
            first: u.arbitrary()?,
            count: u.arbitrary()?,
        },
        5 => Op::Move {
            t,
            from: u.arbitrary()?,
            to: u.arbitrary()?,
        },
        6 => Op::Lookup {
            t,
            slot: u.arbitrary()?,
            kib: u.arbitrary()?,
        },
        7 => Op::Flush,
        _ => Op::Foreign {
            t,
            slot: u.arbitrary()?,
        },
    };
    let mode = match u.int_in_range(0..=5u8)? {
        0..=2 => Mode::Now,
        3 | 4 => Mode::Later,
        _ => Mode::Drop,
    };
    Ok((op, mode))
}

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let mut mem = ledger::mem::<BLOCKS>();
    let mut s = Sequence::new(&mut mem);
    while !u.is_empty() {
        let Ok((op, mode)) = op(&mut u) else { break };
        if let Err(e) = s.step(op, mode) {
            panic!("step {}: {e}", s.steps);
        }
    }
    if let Err(e) = s.finish() {
        panic!("{e}");
    }
});
