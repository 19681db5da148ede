//! `spm::tcm::plan` and `spm::tcm::apply` against CP15s configured like real
//! ARM926EJ-S parts (QEMU has no TCM, so this is the only place real TCM
//! placement runs): 16 + 16 KiB and 32 + 32 KiB parts, DTCM-only parts,
//! size-0 TCM interfaces, disabled and enabled regions, and region registers
//! that refuse a placement. Every error of the plan and of its application
//! is reached here.

use core::cell::Cell;

use mmu_armv5::regs::{Cp15, Cp15Event, Cp15Op, Cp15Reg, MockCp15};
use mmu_armv5::PhysAddr;
use proptest::prelude::*;
use spm::tcm::{
    self, BoardTcm, Fallback, Mix, Overlap, PhysRange, TcmBank, TcmError, TcmKind, TcmLayout,
    TcmPlan, TcmSource,
};
use spm::{FrameDesc, FrameState, FrameTable, InitialUse, Location, PhysRegion, SectionSummary};

const ITCM_BASE: u32 = 0x2000_0000;
const DTCM_BASE: u32 = 0x2010_0000;
const CAPACITY: u32 = 256 << 10;
/// versatilepb-like: 256 MiB SDRAM window, the device MiBs, flash, PCI.
const AVOID: [PhysRange; 4] = [
    PhysRange::new(PhysAddr::new(0), 0x1000_0000),
    PhysRange::new(PhysAddr::new(0x1000_0000), 0x0020_0000),
    PhysRange::new(PhysAddr::new(0x3400_0000), 0x0400_0000),
    PhysRange::new(PhysAddr::new(0x4100_0000), 0x2f00_0000),
];

/// Region register size fields.
const S16K: u32 = 0b0101 << 2;
const S32K: u32 = 0b0110 << 2;
const S64K: u32 = 0b0111 << 2;
const S512K: u32 = 0b1010 << 2;
const BOTH: u32 = (1 << 16) | 1;
const DTCM_ONLY: u32 = 1 << 16;
const ITCM_ONLY: u32 = 1;

fn emulated() -> TcmLayout {
    TcmLayout {
        itcm: Some(
            TcmBank::board(TcmKind::Instruction, PhysAddr::new(0x07f0_0000), 32 << 10).unwrap(),
        ),
        dtcm: Some(TcmBank::board(TcmKind::Data, PhysAddr::new(0x07f0_8000), 32 << 10).unwrap()),
    }
}

fn board() -> BoardTcm<'static> {
    BoardTcm {
        itcm_base: PhysAddr::new(ITCM_BASE),
        dtcm_base: PhysAddr::new(DTCM_BASE),
        emulated: emulated(),
        avoid: &AVOID,
        capacity: CAPACITY,
        mix: Mix::PerKind,
    }
}

/// An ARM926EJ-S part: `MockCp15` with the TCM status and region registers
/// set, which also notes an access to the region register of a TCM the
/// status does not report (an undefined-instruction trap on QEMU and on a
/// part without that TCM), keeps the read-only size field on writes, and can
/// drop the writes to one region register or force bits in it (a register
/// that refuses a placement).
struct Part {
    cp15: MockCp15,
    trapped: Cell<bool>,
    refuse: Option<Cp15Reg>,
    base_mask: u32,
}

impl Part {
    fn new(status: u32, itcm: u32, dtcm: u32) -> Part {
        Part {
            cp15: MockCp15::arm926()
                .with_register(Cp15Reg::TcmStatus, status)
                .with_register(Cp15Reg::ItcmRegion, itcm)
                .with_register(Cp15Reg::DtcmRegion, dtcm),
            trapped: Cell::new(false),
            refuse: None,
            base_mask: !0,
        }
    }

    fn check(&self, reg: Cp15Reg) {
        let bit = match reg {
            Cp15Reg::DtcmRegion => 1 << 16,
            Cp15Reg::ItcmRegion => 1,
            _ => return,
        };
        if self.cp15.register(Cp15Reg::TcmStatus) & bit == 0 {
            self.trapped.set(true);
        }
    }

    fn writes(&self) -> Vec<(Cp15Reg, u32)> {
        self.cp15
            .events()
            .iter()
            .filter_map(|e| match *e {
                Cp15Event::Write(r, v) => Some((r, v)),
                _ => None,
            })
            .collect()
    }

    fn reg(&self, r: Cp15Reg) -> u32 {
        self.cp15.register(r)
    }
}

impl Cp15 for Part {
    fn read(&self, reg: Cp15Reg) -> u32 {
        self.check(reg);
        self.cp15.read(reg)
    }
    unsafe fn write(&mut self, reg: Cp15Reg, value: u32) {
        self.check(reg);
        let old = self.cp15.register(reg);
        let value = match reg {
            Cp15Reg::ItcmRegion | Cp15Reg::DtcmRegion if self.refuse == Some(reg) => old,
            // Size bits [5:2] are read-only; the base decodes through `base_mask`.
            Cp15Reg::ItcmRegion | Cp15Reg::DtcmRegion => {
                (value & 0xFFFF_F001 & self.base_mask) | (old & 0x3c)
            }
            _ => value,
        };
        // SAFETY: a mock.
        unsafe { self.cp15.write(reg, value) }
    }
    unsafe fn op(&mut self, op: Cp15Op, value: u32) {
        // SAFETY: a mock.
        unsafe { self.cp15.op(op, value) }
    }
    fn test_clean_invalidate_dcache(&mut self) -> bool {
        self.cp15.test_clean_invalidate_dcache()
    }
    fn test_clean_dcache(&mut self) -> bool {
        self.cp15.test_clean_dcache()
    }
}

fn plan_for(cpu: &Part, board: &BoardTcm<'_>) -> Result<TcmPlan, TcmError> {
    tcm::plan(tcm::discover(cpu)?, board)
}

/// Plans and applies; the layout in effect.
fn run(cpu: &mut Part, board: &BoardTcm<'_>) -> Result<(TcmPlan, TcmLayout), TcmError> {
    let plan = plan_for(cpu, board)?;
    // SAFETY: a mock; nothing lives anywhere.
    let layout = unsafe { tcm::apply(cpu, &plan) }?;
    Ok((plan, layout))
}

fn source(plan: &TcmPlan, kind: TcmKind) -> TcmSource {
    plan.get(kind).unwrap().source()
}

fn base_size(l: &TcmLayout, kind: TcmKind) -> (u32, u32) {
    let b = l.bank(kind).unwrap();
    (b.base().as_u32(), b.size())
}

#[test]
fn arm926_16k_16k_disabled_after_reset_is_placed_at_the_board_bases() {
    let mut cpu = Part::new(BOTH, S16K, S16K);
    let (plan, layout) = run(&mut cpu, &board()).unwrap();
    for kind in [TcmKind::Instruction, TcmKind::Data] {
        assert_eq!(
            source(&plan, kind),
            TcmSource::Placed {
                from: PhysAddr::new(0),
                was_enabled: false
            }
        );
    }
    assert!(plan.from_cpu());
    assert_eq!(
        base_size(&layout, TcmKind::Instruction),
        (ITCM_BASE, 16 << 10)
    );
    assert_eq!(base_size(&layout, TcmKind::Data), (DTCM_BASE, 16 << 10));
    assert!(layout.banks().all(|b| b.enabled() && !b.emulated()));
    assert_eq!(
        cpu.writes(),
        [
            (Cp15Reg::ItcmRegion, ITCM_BASE | S16K | 1),
            (Cp15Reg::DtcmRegion, DTCM_BASE | S16K | 1)
        ]
    );
    assert!(!cpu.trapped.get());
    // The frame table takes the placed banks as they are.
    let ram =
        PhysRegion::new(PhysAddr::new(0), 1 << 20, Location::Ram, InitialUse::Kernel).unwrap();
    let regions = [
        ram,
        layout.itcm.unwrap().region().unwrap(),
        layout.dtcm.unwrap().region().unwrap(),
    ];
    let mut frames = vec![FrameDesc::default(); FrameTable::<3>::frames_needed(&regions)];
    let mut sections = vec![SectionSummary::default(); FrameTable::<3>::sections_needed(&regions)];
    assert_eq!(frames.len(), 256 + 4 + 4);
    let table = FrameTable::<3>::new(&regions, &mut frames, &mut sections).unwrap();
    let pa = PhysAddr::new(DTCM_BASE + 0x3000);
    assert_eq!(table.desc(pa).unwrap().state(), FrameState::Resource);
    assert_eq!(table.region_of(pa).unwrap().location(), Location::Dtcm);
    assert!(table.desc(PhysAddr::new(DTCM_BASE + 0x4000)).is_err());
}

#[test]
fn arm926_32k_32k_enabled_at_linux_addresses_is_kept_without_a_write() {
    let mut cpu = Part::new(BOTH, 0xfffe_0000 | S32K | 1, 0xfffe_8000 | S32K | 1);
    let (plan, layout) = run(&mut cpu, &board()).unwrap();
    assert_eq!(source(&plan, TcmKind::Instruction), TcmSource::Kept);
    assert_eq!(source(&plan, TcmKind::Data), TcmSource::Kept);
    assert_eq!(
        base_size(&layout, TcmKind::Instruction),
        (0xfffe_0000, 32 << 10)
    );
    assert_eq!(base_size(&layout, TcmKind::Data), (0xfffe_8000, 32 << 10));
    assert!(cpu.writes().is_empty());
}

#[test]
fn an_enabled_tcm_over_ram_is_moved_and_a_disabled_one_in_a_hole_is_enabled_at_the_board_base() {
    // DTCM enabled at 0 hides RAM: moved. ITCM disabled at an address that
    // would be fine: placed (enabled) at the board's base.
    let mut cpu = Part::new(BOTH, 0x3000_0000 | S32K, S32K | 1);
    let (plan, layout) = run(&mut cpu, &board()).unwrap();
    assert_eq!(
        source(&plan, TcmKind::Data),
        TcmSource::Placed {
            from: PhysAddr::new(0),
            was_enabled: true
        }
    );
    assert_eq!(
        source(&plan, TcmKind::Instruction),
        TcmSource::Placed {
            from: PhysAddr::new(0x3000_0000),
            was_enabled: false
        }
    );
    assert_eq!(base_size(&layout, TcmKind::Data), (DTCM_BASE, 32 << 10));
    assert_eq!(cpu.reg(Cp15Reg::ItcmRegion), ITCM_BASE | S32K | 1);
    // Planned again, the banks are kept: applying is idempotent.
    cpu.cp15.clear();
    let (again, _) = run(&mut cpu, &board()).unwrap();
    assert!(again.banks().all(|p| p.source() == TcmSource::Kept));
    assert!(cpu.writes().is_empty());
}

#[test]
fn a_dtcm_only_part_mixes_per_kind_and_is_refused_under_never() {
    let mut cpu = Part::new(DTCM_ONLY, 0, S16K);
    let (plan, layout) = run(&mut cpu, &board()).unwrap();
    assert_eq!(
        source(&plan, TcmKind::Instruction),
        TcmSource::Board(Fallback::NotReported)
    );
    assert!(source(&plan, TcmKind::Data).is_cpu());
    assert_eq!(layout.itcm, emulated().itcm);
    assert_eq!(cpu.writes(), [(Cp15Reg::DtcmRegion, DTCM_BASE | S16K | 1)]);
    assert!(
        !cpu.trapped.get(),
        "the absent ITCM's register was accessed"
    );

    let never = BoardTcm {
        mix: Mix::Never,
        ..board()
    };
    let cpu = Part::new(DTCM_ONLY, 0, S16K);
    assert_eq!(
        plan_for(&cpu, &never),
        Err(TcmError::OnlyOneKind {
            reported: TcmKind::Data
        })
    );
    let cpu = Part::new(ITCM_ONLY, S16K, 0);
    assert_eq!(
        plan_for(&cpu, &never),
        Err(TcmError::OnlyOneKind {
            reported: TcmKind::Instruction
        })
    );
    assert!(!cpu.trapped.get());
    // Both real, or both absent: fine under `Never`.
    assert!(plan_for(&Part::new(BOTH, S16K, S16K), &never).is_ok());
    let none = plan_for(&Part::new(0, 0, 0), &never).unwrap();
    assert_eq!(none.layout(), emulated());
}

#[test]
fn size_zero_counts_as_absent() {
    let mut cpu = Part::new(BOTH, 0, 0x2000_0000 | 1);
    let (plan, layout) = run(&mut cpu, &board()).unwrap();
    assert!(plan
        .banks()
        .all(|p| p.source() == TcmSource::Board(Fallback::SizeZero)));
    assert_eq!(layout, emulated());
    assert!(!plan.from_cpu());
    assert!(cpu.writes().is_empty());
    // Without board banks, nothing at all.
    let bare = BoardTcm {
        emulated: TcmLayout::default(),
        ..board()
    };
    let plan = plan_for(&cpu, &bare).unwrap();
    assert_eq!(plan.layout(), TcmLayout::default());
    assert_eq!(plan.banks().count(), 0);
}

#[test]
fn qemu_arm926_takes_the_board_banks_and_never_touches_c9() {
    let mut cpu = Part::new(0, 0, 0);
    let (plan, layout) = run(&mut cpu, &board()).unwrap();
    assert_eq!(layout, emulated());
    assert_eq!(
        plan.banks().map(|p| p.source().name()).collect::<Vec<_>>(),
        ["board", "board"]
    );
    assert!(cpu.writes().is_empty());
    assert!(!cpu.trapped.get());
}

#[test]
fn a_region_register_that_refuses_the_placement_is_caught_by_the_read_back() {
    // The DTCM register drops the write: the ITCM before it stays placed.
    let mut cpu = Part::new(BOTH, S16K, S16K);
    cpu.refuse = Some(Cp15Reg::DtcmRegion);
    assert_eq!(
        run(&mut cpu, &board()),
        Err(TcmError::NotPlaced {
            kind: TcmKind::Data,
            wrote: DTCM_BASE | S16K | 1,
            read: S16K
        })
    );
    assert_eq!(cpu.reg(Cp15Reg::ItcmRegion), ITCM_BASE | S16K | 1);
    // A part that decodes fewer base bits (bit 29 stuck at 0).
    let mut cpu = Part::new(BOTH, S16K, S16K);
    cpu.base_mask = !(1 << 29);
    assert_eq!(
        run(&mut cpu, &board()),
        Err(TcmError::NotPlaced {
            kind: TcmKind::Instruction,
            wrote: ITCM_BASE | S16K | 1,
            read: S16K | 1
        })
    );
}

#[test]
fn banks_above_the_capacity_are_refused() {
    let cpu = Part::new(BOTH, S16K, S512K);
    assert_eq!(
        plan_for(&cpu, &board()),
        Err(TcmError::TooBig {
            kind: TcmKind::Data,
            size: 512 << 10,
            capacity: CAPACITY
        })
    );
    let small = BoardTcm {
        capacity: 16 << 10,
        ..board()
    };
    // The CPU's 16 KiB fit; the board's 32 KiB DTCM (used: size 0) do not.
    let cpu = Part::new(BOTH, S16K, 0);
    assert_eq!(
        plan_for(&cpu, &small),
        Err(TcmError::TooBig {
            kind: TcmKind::Data,
            size: 32 << 10,
            capacity: 16 << 10
        })
    );
}

#[test]
fn a_placement_base_not_aligned_to_the_size_is_refused() {
    let b = BoardTcm {
        itcm_base: PhysAddr::new(ITCM_BASE + 0x8000),
        ..board()
    };
    // 32 KiB fits at +32 KiB; 64 KiB does not.
    assert!(plan_for(&Part::new(BOTH, S32K, S32K), &b).is_ok());
    assert_eq!(
        plan_for(&Part::new(BOTH, S64K, S32K), &b),
        Err(TcmError::Misaligned {
            kind: TcmKind::Instruction,
            base: PhysAddr::new(ITCM_BASE + 0x8000),
            align: 64 << 10
        })
    );
}

#[test]
fn placements_over_ram_devices_or_the_other_bank_are_refused() {
    let into_ram = BoardTcm {
        dtcm_base: PhysAddr::new(0x07f0_0000),
        ..board()
    };
    assert_eq!(
        plan_for(&Part::new(BOTH, S16K, S16K), &into_ram),
        Err(TcmError::Overlaps {
            kind: TcmKind::Data,
            base: PhysAddr::new(0x07f0_0000),
            size: 16 << 10,
            with: Overlap::Avoided(AVOID[0])
        })
    );
    let into_flash = BoardTcm {
        itcm_base: PhysAddr::new(0x3400_0000),
        ..board()
    };
    assert_eq!(
        plan_for(&Part::new(BOTH, S16K, S16K), &into_flash),
        Err(TcmError::Overlaps {
            kind: TcmKind::Instruction,
            base: PhysAddr::new(0x3400_0000),
            size: 16 << 10,
            with: Overlap::Avoided(AVOID[2])
        })
    );
    let same = BoardTcm {
        dtcm_base: PhysAddr::new(ITCM_BASE),
        ..board()
    };
    let bank_clash = Err(TcmError::Overlaps {
        kind: TcmKind::Data,
        base: PhysAddr::new(ITCM_BASE),
        size: 16 << 10,
        with: Overlap::Bank(TcmKind::Instruction),
    });
    assert_eq!(plan_for(&Part::new(BOTH, S16K, S16K), &same), bank_clash);
    // A kept ITCM enabled where the board places the DTCM.
    let cpu = Part::new(BOTH, DTCM_BASE | S16K | 1, S16K);
    assert_eq!(
        plan_for(&cpu, &board()),
        Err(TcmError::Overlaps {
            kind: TcmKind::Data,
            base: PhysAddr::new(DTCM_BASE),
            size: 16 << 10,
            with: Overlap::Bank(TcmKind::Instruction),
        })
    );
    // A real DTCM placed over the board's emulated ITCM (mixed banks).
    let cpu = Part::new(DTCM_ONLY, 0, S16K);
    let over_emulated = BoardTcm {
        dtcm_base: PhysAddr::new(0x07f0_0000),
        avoid: &[],
        ..board()
    };
    assert_eq!(
        plan_for(&cpu, &over_emulated),
        Err(TcmError::Overlaps {
            kind: TcmKind::Data,
            base: PhysAddr::new(0x07f0_0000),
            size: 16 << 10,
            with: Overlap::Bank(TcmKind::Instruction),
        })
    );
}

#[test]
fn a_board_bank_in_the_wrong_slot_is_refused() {
    let swapped = BoardTcm {
        emulated: TcmLayout {
            itcm: emulated().dtcm,
            dtcm: emulated().itcm,
        },
        ..board()
    };
    assert_eq!(
        plan_for(&Part::new(0, 0, 0), &swapped),
        Err(TcmError::WrongSlot {
            slot: TcmKind::Instruction
        })
    );
}

#[test]
fn apply_checks_that_the_cpu_still_matches_the_plan() {
    let b = board();
    // A kept bank that moved since.
    let mut cpu = Part::new(BOTH, 0xfffe_0000 | S32K | 1, 0xfffe_8000 | S32K | 1);
    let plan = plan_for(&cpu, &b).unwrap();
    cpu.cp15
        .set_register(Cp15Reg::DtcmRegion, 0xfff0_0000 | S32K | 1);
    // SAFETY: a mock.
    let r = unsafe { tcm::apply(&mut cpu, &plan) };
    assert_eq!(
        r,
        Err(TcmError::Changed {
            kind: TcmKind::Data,
            expected: 0xfffe_8000 | S32K | 1,
            read: 0xfff0_0000 | S32K | 1
        })
    );
    // A kept bank whose register no longer decodes.
    cpu.cp15.set_register(Cp15Reg::DtcmRegion, 0b1111 << 2);
    // SAFETY: a mock.
    let r = unsafe { tcm::apply(&mut cpu, &plan) };
    assert!(
        matches!(
            r,
            Err(TcmError::Register {
                kind: TcmKind::Data,
                ..
            })
        ),
        "{r:?}"
    );
    // A kept TCM no longer reported.
    cpu.cp15.set_register(Cp15Reg::TcmStatus, ITCM_ONLY);
    // SAFETY: a mock.
    let r = unsafe { tcm::apply(&mut cpu, &plan) };
    assert_eq!(r, Err(TcmError::Absent(TcmKind::Data)));
    assert!(cpu.writes().is_empty());
    assert!(!cpu.trapped.get());

    // A placed bank whose size changed (another part than the plan's).
    let mut cpu = Part::new(BOTH, S16K, S16K);
    let plan = plan_for(&cpu, &b).unwrap();
    cpu.cp15.set_register(Cp15Reg::ItcmRegion, S32K);
    // SAFETY: a mock.
    let r = unsafe { tcm::apply(&mut cpu, &plan) };
    assert_eq!(
        r,
        Err(TcmError::Changed {
            kind: TcmKind::Instruction,
            expected: ITCM_BASE | S16K | 1,
            read: ITCM_BASE | S32K | 1
        })
    );
    // A placed TCM no longer reported: c9 untouched.
    let mut cpu = Part::new(BOTH, S16K, S16K);
    let plan = plan_for(&cpu, &b).unwrap();
    cpu.cp15.set_register(Cp15Reg::TcmStatus, 0);
    // SAFETY: a mock.
    let r = unsafe { tcm::apply(&mut cpu, &plan) };
    assert_eq!(r, Err(TcmError::Absent(TcmKind::Instruction)));
    assert!(!cpu.trapped.get());
}

#[test]
fn every_error_displays() {
    let errors = [
        TcmError::TooBig {
            kind: TcmKind::Data,
            size: 1 << 20,
            capacity: 1 << 18,
        },
        TcmError::Overlaps {
            kind: TcmKind::Data,
            base: PhysAddr::new(0),
            size: 4096,
            with: Overlap::Avoided(AVOID[0]),
        },
        TcmError::Overlaps {
            kind: TcmKind::Data,
            base: PhysAddr::new(0),
            size: 4096,
            with: Overlap::Bank(TcmKind::Instruction),
        },
        TcmError::OnlyOneKind {
            reported: TcmKind::Data,
        },
        TcmError::WrongSlot {
            slot: TcmKind::Data,
        },
        TcmError::Changed {
            kind: TcmKind::Data,
            expected: 1,
            read: 2,
        },
    ];
    for e in errors {
        let s = e.to_string();
        assert!(s.contains("TCM"), "{s}");
    }
}

fn size_field() -> impl Strategy<Value = u32> {
    prop_oneof![Just(0u32), 0b0011u32..=0b1011, 0u32..16].prop_map(|f| f << 2)
}

fn region_value() -> impl Strategy<Value = u32> {
    (any::<u32>(), size_field(), any::<bool>())
        .prop_map(|(base, size, on)| (base & 0xFFFF_F000) | size | u32::from(on))
}

fn base() -> impl Strategy<Value = u32> {
    prop_oneof![
        Just(ITCM_BASE),
        Just(DTCM_BASE),
        (0u32..4096).prop_map(|p| p << 20),
        any::<u32>().prop_map(|a| a & !0xFFF),
    ]
}

proptest! {
    /// Whatever the CPU reports and wherever the board wants the banks: no
    /// panic, c9 read only for reported TCMs, and a successful plan holds
    /// its promises. Applying it leaves the registers as the layout says,
    /// and a second plan over the result keeps everything without a write.
    #[test]
    fn plans_hold_their_promises(
        status in prop_oneof![Just(0u32), Just(ITCM_ONLY), Just(DTCM_ONLY), Just(BOTH), any::<u32>()],
        itcm in region_value(),
        dtcm in region_value(),
        ib in base(),
        db in base(),
        capacity in prop_oneof![Just(CAPACITY), Just(16u32 << 10), Just(1u32 << 20)],
        never in any::<bool>(),
    ) {
        let b = BoardTcm {
            itcm_base: PhysAddr::new(ib),
            dtcm_base: PhysAddr::new(db),
            capacity,
            mix: if never { Mix::Never } else { Mix::PerKind },
            ..board()
        };
        let mut cpu = Part::new(status, itcm, dtcm);
        let Ok(found) = tcm::discover(&cpu) else {
            prop_assert!(!cpu.trapped.get());
            return Ok(());
        };
        let Ok(plan) = tcm::plan(found, &b) else {
            prop_assert!(!cpu.trapped.get());
            return Ok(());
        };
        let banks: Vec<_> = plan.banks().collect();
        for p in &banks {
            let bank = p.bank();
            prop_assert!(bank.size() <= capacity);
            prop_assert!(bank.enabled());
            prop_assert_eq!(bank.emulated(), !p.source().is_cpu());
            if p.source().is_cpu() {
                prop_assert!(mmu_armv5::addr::Align::new(bank.size()).is_some_and(|a| bank.base().is_aligned(a)));
                prop_assert!(AVOID.iter().all(|a| !bank.overlaps(*a)));
            }
        }
        if let [a, d] = banks.as_slice() {
            prop_assert!(!a.bank().overlaps(d.bank().range()));
        }
        // SAFETY: a mock.
        let layout = unsafe { tcm::apply(&mut cpu, &plan) };
        prop_assert_eq!(layout, Ok(plan.layout()));
        prop_assert!(!cpu.trapped.get());
        for p in &banks {
            if let Some(r) = p.bank().register() {
                let reg = match p.bank().kind() {
                    TcmKind::Instruction => Cp15Reg::ItcmRegion,
                    TcmKind::Data => Cp15Reg::DtcmRegion,
                };
                prop_assert_eq!(cpu.reg(reg) & 0xFFFF_F03D, r.bits());
            }
        }
        cpu.cp15.clear();
        let again = plan_for(&cpu, &b);
        prop_assert_eq!(again.map(|p| p.layout()), Ok(plan.layout()));
        let moves = again.map_or(0, |p| p.banks().filter(|p| matches!(p.source(), TcmSource::Placed { .. })).count());
        prop_assert_eq!(moves, 0);
        prop_assert!(cpu.writes().is_empty());
    }
}
