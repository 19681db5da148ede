//! The fass manager and the classic strategies on the `armv5-sim` model:
//! create/destroy spaces, map/unmap private pages and shared segments,
//! full and lean switches, and user loads and stores whose faults are
//! resolved (fast path first under FASS), checked for isolation: every
//! load returns the last value stored at that physical word by a space
//! that maps it, and an access to anything the running space does not map
//! faults. The harness is `crates/fass/tests/common/mod.rs`, which the
//! crate's property tests drive too; this file only decodes the input (the
//! first byte picks the strategy).
#![no_main]

use libfuzzer_sys::arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;

#[path = "../../crates/fass/tests/common/mod.rs"]
mod common;

use common::{Op, Setup};

/// One operation, weighted as the property tests weight them.
fn op(u: &mut Unstructured<'_>, spaces: u16) -> Result<Op> {
    let s = u.int_in_range(0..=spaces - 1)?;
    Ok(match u.int_in_range(0..=43u8)? {
        0..=2 => Op::Create(s),
        3 => Op::Destroy(s),
        4..=7 => Op::MapLow(s, u.int_in_range(0..=7)?),
        8..=10 => Op::MapHigh(s, u.int_in_range(0..=11)?),
        11..=13 => Op::Unmap(s, u.arbitrary()?),
        14 => Op::MapSeg(s, u.int_in_range(0..=1)?, u.arbitrary()?),
        15 => Op::UnmapSeg(s, u.int_in_range(0..=1)?),
        16..=17 => Op::Switch(s, u.arbitrary()?),
        18..=23 => Op::SwitchLive(u.arbitrary()?, u.arbitrary()?),
        24..=33 => Op::Load(u.int_in_range(0..=31)?, u.arbitrary()?),
        _ => Op::Store(u.int_in_range(0..=31)?, u.arbitrary()?, u.arbitrary()?),
    })
}

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let Ok(i) = u.choose_index(Setup::ALL.len()) else {
        return;
    };
    let setup = Setup::ALL[i];
    let mut ops = Vec::new();
    while !u.is_empty() && ops.len() < 1000 {
        match op(&mut u, setup.spaces()) {
            Ok(o) => ops.push(o),
            Err(_) => break,
        }
    }
    if let Err(e) = common::run(setup, &ops) {
        panic!("{setup:?}: {e}");
    }
});
