//! Throughput of the coherence checker on a synthetic kernel-like stream
//! (run it: `cargo test --release -p armv5-sim --test coherence_check_speed
//! -- --ignored --nocapture`). The plugin's budget is at most 5x plain QEMU,
//! so the checker must take tens of millions of accesses per minute.

use armv5_sim::coherence::{Access, AccessKind, Checker, Cpu};
use mmu_armv5::marker::Key;
use std::time::Instant;

#[test]
#[ignore = "a measurement: run in release with --ignored --nocapture"]
fn accesses_per_second() {
    // A working set of 256 KiB misses the D-cache nearly always; 8 KiB
    // mostly hits, like a kernel's stack and hot data.
    for (cpu, set) in Cpu::ALL
        .into_iter()
        .flat_map(|c| [(c, 0x3FFFCu32), (c, 0x1FFC)])
    {
        let mut c = Checker::new(cpu);
        let k = |crn, crm, opc2| Key::Cp15 {
            read: false,
            crn,
            crm,
            opc2,
        };
        c.marker(k(2, 0, 0), 0x4000, 0);
        c.marker(k(1, 0, 0), 0x1005, 0);
        let n: u64 = 20_000_000;
        let mut x: u32 = 12345;
        let start = Instant::now();
        let mut pc = 0xC000_8000u32;
        for i in 0..n {
            // Fetches run through 8 KiB of code; every other instruction
            // loads or stores a word of a 256 KiB working set.
            pc = 0xC000_8000 + ((pc + 4 - 0xC000_8000) & 0x1FFF);
            c.access(&Access {
                pc,
                va: pc,
                pa: pc - 0xC000_0000,
                size: 4,
                kind: AccessKind::Fetch,
                io: false,
                privileged: true,
            });
            if i & 1 == 0 {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                let off = (x & set) | 0x10_0000;
                c.access(&Access {
                    pc,
                    va: 0xC000_0000 + off,
                    pa: off,
                    size: 4,
                    kind: if x & 0x100_0000 != 0 {
                        AccessKind::Store
                    } else {
                        AccessKind::Load
                    },
                    io: false,
                    privileged: true,
                });
            }
        }
        let s = start.elapsed().as_secs_f64();
        let accesses = n + n / 2;
        println!(
            "{} ({} KiB data): {} accesses in {:.2} s: {:.1} M accesses/s ({:.0} M/min), {} violations, {} modelled cycles",
            cpu.name(),
            (set + 4) >> 10,
            accesses,
            s,
            accesses as f64 / s / 1e6,
            accesses as f64 / s / 1e6 * 60.0,
            c.counts().total(),
            c.cycles()
        );
        assert_eq!(c.counts().total(), 0);
    }
}
