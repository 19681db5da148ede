//! The model's own table walk (`Machine::probe`, and the TLB path of
//! `load`/`store`/`fetch`) against `mmu_armv5::translate::translate` on
//! random raw tables: 0 mismatches over 100,000+ cases (a few hundred under
//! Miri).
//!
//! Tables are written as raw descriptor words (random bits, random types)
//! straight into the model's physical memory, so this does not depend on the
//! `mmu-armv5` mapper.

mod common;
use armv5_sim::{presets, sctlr, AccessKind, Machine, Privilege, Width};
use common::*;
use mmu_armv5::regs::Dacr;
use mmu_armv5::regs::Sctlr;
use mmu_armv5::regs::Ttbr;
use mmu_armv5::translate::{translate, Access, AccessType, MmuState};
use mmu_armv5::{FaultKind, FcsePid, PhysAddr, VirtAddr};

/// SplitMix64, so the test is deterministic without a dependency.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn u32(&mut self) -> u32 {
        (self.next() >> 32) as u32
    }
    fn below(&mut self, n: u32) -> u32 {
        (((self.next() >> 32) * u64::from(n)) >> 32) as u32
    }
}

/// A random second-level word; sometimes a large page replicated as the
/// manual requires (16x coarse, 64x fine), sometimes a small page replicated
/// 4x in a fine table, otherwise raw random bits.
fn fill_l2(m: &mut Machine, rng: &mut Rng, table: u32, entries: u32) {
    let mut i = 0;
    while i < entries {
        let word = rng.u32();
        let rep = match (word & 3, rng.below(2), entries) {
            (0b01, 0, 256) => 16,
            (0b01, 0, _) => 64,
            (0b10, 0, 1024) => 4,
            _ => 1,
        };
        let rep = rep.min(entries - i);
        for k in 0..rep {
            w(m, table + 4 * (i + k), word);
        }
        i += rep;
    }
}

#[test]
fn model_walk_agrees_with_translate() {
    let mut rng = Rng(0x5EED_2024);
    let mut m = machine(presets::arm926ejs());
    let mut cases = 0u64;
    let mut mismatches = Vec::new();
    let mut faults = 0u64;
    // Under Miri (which interprets every access) a token run of the same code.
    let batches = if cfg!(miri) { 2 } else { 1100 };
    for batch in 0..batches {
        let l1 = new_l1(&mut m);
        let mut tables = vec![(l1, 16 << 10)];
        let pid = FcsePid::new(rng.below(128) as u8).unwrap();
        // Eight populated 1 MiB slots around chosen VAs, half of them below 32 MiB.
        let mut vas = Vec::new();
        for k in 0..8 {
            let va = if k % 2 == 0 {
                rng.below(32) << 20
            } else {
                rng.u32() & 0xFFF0_0000
            };
            vas.push(va);
            let mva = VirtAddr::new(va).to_mva(pid).as_u32();
            let desc = match rng.below(4) {
                0 => rng.u32() & !3, // invalid: type 00 with garbage
                1 => (rng.u32() & !3) | 0b10,
                2 => {
                    let t = m.alloc_frames(1024).unwrap().as_u32();
                    tables.push((t, 1024));
                    fill_l2(&mut m, &mut rng, t, 256);
                    (rng.u32() & 0x3FF & !3) | t | 0b01
                }
                _ => {
                    let t = m.alloc_frames(4096).unwrap().as_u32();
                    tables.push((t, 4096));
                    fill_l2(&mut m, &mut rng, t, 1024);
                    (rng.u32() & 0xFFF & !3) | t | 0b11
                }
            };
            w(&mut m, armv5_sim::encode::l1_entry_addr(l1, mva), desc);
        }
        let s = rng.below(2) == 1;
        let r = rng.below(2) == 1;
        let a = rng.below(2) == 1;
        let dacr = Dacr::from_bits(rng.u32());
        m.set_ttbr(Ttbr::new(PhysAddr::new(l1)).unwrap());
        m.set_dacr(dacr);
        m.set_fcse_pid(pid);
        m.set_sctlr(
            Sctlr::from_bits(sctlr::M | sctlr::C | sctlr::I)
                .with_system_protection(s)
                .with_rom_protection(r)
                .with_alignment_check(a),
        );
        m.invalidate_tlb();
        let state = MmuState {
            ttb: PhysAddr::new(l1),
            dacr,
            pid,
            system_protect: s,
            rom_protect: r,
            alignment_check: a,
        };
        for _ in 0..100 {
            let va = if rng.below(10) == 0 {
                rng.u32()
            } else {
                vas[rng.below(8) as usize] | (rng.u32() & 0xF_FFFF)
            };
            let (kind, ty) = match rng.below(3) {
                0 => (AccessKind::Read, AccessType::Read),
                1 => (AccessKind::Write, AccessType::Write),
                _ => (AccessKind::Execute, AccessType::Execute),
            };
            let privileged = rng.below(2) == 1;
            let privilege = if privileged {
                Privilege::Privileged
            } else {
                Privilege::User
            };
            let (size, width) = match rng.below(3) {
                0 => (1, Width::Byte),
                1 => (2, Width::Half),
                _ => (4, Width::Word),
            };
            let access = Access {
                va: VirtAddr::new(va),
                kind: ty,
                privileged,
                size,
            };
            let want = translate(&m, &state, &access);
            let got = m.probe(VirtAddr::new(va), kind, privilege, size);
            cases += 1;
            let same = match (&want, &got) {
                (Ok(t), Ok(g)) => {
                    t.pa == g.pa
                        && t.mva == g.mva
                        && t.domain == g.mapping.domain
                        && t.size == g.mapping.size
                        && t.ap as u8 == g.mapping.ap(g.mva.as_u32())
                        && t.cache as u8
                            == (u8::from(g.mapping.cacheable) << 1) | u8::from(g.mapping.bufferable)
                }
                (Err(a), Err(b)) => a == b,
                _ => false,
            };
            if !same && mismatches.len() < 10 {
                mismatches.push(format!(
                    "batch {batch} va {va:#010x} {kind:?} priv {privileged} size {size}: translate {want:?} model {got:?}"
                ));
            }
            if want.is_err() {
                faults += 1;
            }
            // The CPU access path must raise the same fault: once through a
            // TLB miss (walk), once through the TLB hit it left. (The TLB is
            // flushed first: a large page's entry covers 64 KiB, and random
            // tables do not replicate every large-page descriptor, so an older
            // entry may rightly disagree with this MVA's own descriptor.)
            m.invalidate_tlb();
            for pass in ["walk", "tlb hit"] {
                let real = match kind {
                    AccessKind::Read => m.load(VirtAddr::new(va), width, privilege).map(|_| ()),
                    AccessKind::Write => m.store(VirtAddr::new(va), width, 0, privilege),
                    AccessKind::Execute => m.fetch(VirtAddr::new(va), privilege).map(|_| ()),
                };
                let real_same = match (&want, &real) {
                    (Ok(_), Ok(())) => true,
                    // Translated fine, but the PA is outside the model's RAM.
                    (Ok(_), Err(f)) => matches!(f.kind, FaultKind::ExternalAbort(_)),
                    (Err(a), Err(b)) => a == b,
                    (Err(_), Ok(())) => false,
                };
                if !real_same && mismatches.len() < 10 {
                    mismatches.push(format!(
                        "access path ({pass}), batch {batch} va {va:#010x} {kind:?}: translate {want:?} model {real:?}"
                    ));
                }
            }
        }
        for (t, size) in tables {
            m.free_frames(PhysAddr::new(t), size).unwrap();
        }
    }
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
    let least = if cfg!(miri) { 100 } else { 100_000 };
    assert!(cases >= least, "{cases} cases");
    // Both outcomes are well represented.
    assert!(
        faults > cases / 10 && faults < cases * 9 / 10,
        "{faults} faults of {cases}"
    );
}
