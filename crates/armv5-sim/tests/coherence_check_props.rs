//! Properties of the coherence checker over random access streams: one
//! alias needs no maintenance; two aliases need clean+invalidate at every
//! switch, and leaving out the clean (or everything) is reported.

use armv5_sim::coherence::{Access, AccessKind, Checker, Cpu, ViolationKind};
use mmu_armv5::marker::Key;
use proptest::prelude::*;

/// The frames under test: 16 KiB (more than the SA-1110's 8 KiB D-cache and
/// as much as the ARM926 preset's, so lines get evicted and written back).
const PA: u32 = 0x0100_0000;
const BYTES: u32 = 16 << 10;
/// Two synonyms of PA: a user alias (below 32 MiB) and a kernel one.
const ALIAS: [u32; 2] = [0x0040_0000, 0xC100_0000];
/// Another frame range, for homonyms at ALIAS[0].
const PA2: u32 = 0x0200_0000;

fn mcr(crn: u8, crm: u8, opc2: u8) -> Key {
    Key::Cp15 {
        read: false,
        crn,
        crm,
        opc2,
    }
}

fn on(cpu: Cpu) -> Checker {
    let mut c = Checker::new(cpu);
    c.marker(mcr(2, 0, 0), 0x4000, 0);
    c.marker(mcr(1, 0, 0), 0x1005, 0);
    c
}

#[derive(Clone, Copy, Debug)]
struct Op {
    store: bool,
    off: u32,
    size: u8,
}

fn op() -> impl Strategy<Value = Op> {
    (
        any::<bool>(),
        0..BYTES / 8,
        prop_oneof![Just(1u8), Just(2), Just(4), Just(8)],
    )
        .prop_map(|(store, k, size)| Op {
            store,
            off: 8 * k,
            size,
        })
}

fn cpu() -> impl Strategy<Value = Cpu> {
    prop_oneof![Just(Cpu::Arm926), Just(Cpu::Sa1110), Just(Cpu::Pxa255)]
}

fn run(c: &mut Checker, va: u32, pa: u32, o: Op) {
    c.access(&Access {
        pc: 0x8000,
        va: va + o.off,
        pa: pa + o.off,
        size: o.size,
        kind: if o.store {
            AccessKind::Store
        } else {
            AccessKind::Load
        },
        io: false,
        privileged: va >= 0xC000_0000,
    });
}

/// What the switch between aliases does to the D-cache lines of `va`.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Switch {
    CleanInvalidate,
    InvalidateOnly,
    Nothing,
}

/// Line operations by MVA over the region at `va` (every CPU has them).
fn switch(c: &mut Checker, va: u32, how: Switch) {
    for line in (0..BYTES).step_by(32) {
        if how == Switch::CleanInvalidate {
            c.marker(mcr(7, 10, 1), va + line, 0);
        }
        if how != Switch::Nothing {
            c.marker(mcr(7, 6, 1), va + line, 0);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    #[cfg_attr(miri, ignore)]
    fn one_alias_needs_no_maintenance(cpu in cpu(), ops in prop::collection::vec(op(), 1..400), alias in 0usize..2) {
        let mut c = on(cpu);
        for o in ops {
            run(&mut c, ALIAS[alias], PA, o);
        }
        prop_assert_eq!(c.counts().total(), 0, "{:?}", c.violations());
    }

    #[test]
    #[cfg_attr(miri, ignore)]
    fn synonyms_with_clean_and_invalidate_at_each_switch_are_coherent(
        cpu in cpu(),
        segments in prop::collection::vec(prop::collection::vec(op(), 1..60), 1..6),
        word in 0..BYTES / 4,
    ) {
        let mut c = on(cpu);
        let mut cur = 0;
        for seg in &segments {
            for &o in seg {
                run(&mut c, ALIAS[cur], PA, o);
            }
            switch(&mut c, ALIAS[cur], Switch::CleanInvalidate);
            cur ^= 1;
        }
        prop_assert_eq!(c.counts().total(), 0, "{:?}", c.violations());

        // The same end with the clean left out: the word written last
        // (dirty in the line) is lost, and the other alias reads stale RAM.
        let x = Op { store: false, off: 4 * word, size: 4 };
        run(&mut c, ALIAS[cur], PA, x);
        run(&mut c, ALIAS[cur], PA, Op { store: true, ..x });
        switch(&mut c, ALIAS[cur], Switch::InvalidateOnly);
        run(&mut c, ALIAS[cur ^ 1], PA, x);
        let n = c.counts();
        prop_assert!(n.of(ViolationKind::StaleRam) >= 1, "{}", n);
        prop_assert_eq!(n.total(), n.of(ViolationKind::StaleRam) + n.of(ViolationKind::StaleAlias));
    }

    #[test]
    #[cfg_attr(miri, ignore)]
    fn homonyms_need_a_flush_at_each_switch(
        cpu in cpu(),
        segments in prop::collection::vec(prop::collection::vec(op(), 1..60), 2..6),
        word in 0..BYTES / 4,
        flush in any::<bool>(),
    ) {
        // Two spaces at the same VA (no FCSE) on different frames; the TLB
        // is flushed at each switch either way.
        let mut c = on(cpu);
        let frames = [PA, PA2];
        let mut cur = 0;
        let x = Op { store: false, off: 4 * word, size: 4 };
        for seg in &segments {
            for &o in seg {
                run(&mut c, ALIAS[0], frames[cur], o);
            }
            run(&mut c, ALIAS[0], frames[cur], x);
            switch(&mut c, ALIAS[0], if flush { Switch::CleanInvalidate } else { Switch::Nothing });
            c.marker(mcr(8, 7, 0), 0, 0);
            cur ^= 1;
        }
        run(&mut c, ALIAS[0], frames[cur], x);
        let n = c.counts();
        if flush {
            prop_assert_eq!(n.total(), 0, "{:?}", c.violations());
        } else {
            prop_assert!(n.of(ViolationKind::StaleAlias) >= 1, "{}", n);
        }
    }
}
