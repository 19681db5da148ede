//! Just enough ARM (A32) decoding to follow two user registers from the
//! outside: the plugin API of QEMU 7.2 shows no register values, but the
//! demo kernel's system-call ABI puts the call number in r7 and the first
//! argument in r0, and the user program sets both with `MOV Rd, #imm`
//! before its `SVC #0`. Every executed user instruction goes through
//! [`effect`]: one that certainly leaves the register alone keeps the
//! tracked value, a `MOV`/`MVN` immediate sets it, anything else that may
//! write it makes it unknown. Unknown is always safe: a transit whose call
//! number is unknown is filed as such, never guessed. A register saved by
//! `PUSH` and restored by the `POP` that matches it (the same list, `pc`
//! for `lr`: a callee's prologue and epilogue) gets back the value it had
//! at the `PUSH` ([`Regs::step`]): the compiler keeps the call number in
//! r7, callee-saved, across a call (the token ring's touch loop), and the
//! callee's `POP` restores it. The plugin sees a conditional instruction
//! whether or not its condition passes; [`Regs`] tells which from the
//! addresses executed next where they say it (a `POPEQ` followed by
//! `MOVEQ pc, lr`, ARMv4's return), and otherwise keeps only what both
//! outcomes agree on.

/// What one instruction does to a register.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Effect {
    /// The register is not written.
    Keep,
    /// The register certainly holds this value afterwards.
    Set(u32),
    /// The register may have been written with an unknown value.
    Clobber,
}

fn bits(x: u32, hi: u32, lo: u32) -> u32 {
    (x >> lo) & ((1 << (hi - lo + 1)) - 1)
}

/// The effect of the ARM instruction `insn` on register `r` (0..=14).
///
/// Thumb code is not decoded: callers treat a 2-byte instruction as
/// clobbering every tracked register.
pub fn effect(insn: u32, r: u32) -> Effect {
    let cond = insn >> 28;
    let rd = bits(insn, 15, 12);
    let rn = bits(insn, 19, 16);
    let writes = |hit: bool| if hit { Effect::Clobber } else { Effect::Keep };
    if cond == 0xF {
        // Unconditional space: BLX <imm> writes LR; PLD and the rest write
        // no general register.
        return writes(bits(insn, 27, 25) == 0b101 && r == 14);
    }
    let conditional = cond != 0xE;
    match bits(insn, 27, 25) {
        0b000 | 0b001 => {
            let imm = bits(insn, 25, 25) == 1;
            let op = bits(insn, 24, 21);
            let s = bits(insn, 20, 20) == 1;
            if !imm && bits(insn, 4, 4) == 1 && bits(insn, 7, 7) == 1 {
                // Multiplies, SWP and the extra loads and stores.
                if bits(insn, 6, 5) == 0 {
                    if bits(insn, 24, 23) == 0b00 {
                        // MUL/MLA: Rd in 19:16.
                        return writes(rn == r);
                    }
                    if bits(insn, 24, 23) == 0b01 {
                        // UMULL and friends: RdHi 19:16, RdLo 15:12.
                        return writes(rn == r || rd == r);
                    }
                    // SWP/SWPB.
                    return writes(rd == r);
                }
                let load = bits(insn, 20, 20) == 1;
                let wback = bits(insn, 24, 24) == 0 || bits(insn, 21, 21) == 1;
                // LDRD (L = 0, op 10) loads Rd and Rd + 1.
                let ldrd = !load && bits(insn, 6, 5) == 0b10;
                return writes(
                    (load && rd == r) || (ldrd && (rd == r || rd + 1 == r)) || (wback && rn == r),
                );
            }
            if (8..=11).contains(&op) && !s {
                // Miscellaneous: MRS, MSR, BX, BLX, CLZ, saturating adds,
                // DSP multiplies. MSR and BX write no general register.
                if imm {
                    // MSR immediate (op 9, 11) writes no general register;
                    // op 8 and 10 (MOVW/MOVT from ARMv6T2 on) would write Rd.
                    return if op == 9 || op == 11 {
                        Effect::Keep
                    } else {
                        writes(rd == r)
                    };
                }
                let low = bits(insn, 7, 4);
                return match (bits(insn, 22, 21), low) {
                    (_, 0b0000) if bits(insn, 21, 21) == 0 => writes(rd == r), // MRS
                    (0b01, 0b0001) => Effect::Keep,                            // BX
                    (0b01, 0b0011) => writes(r == 14),                         // BLX reg
                    (0b01 | 0b11, 0b0000) => Effect::Keep,                     // MSR reg
                    (0b11, 0b0001) => writes(rd == r),                         // CLZ
                    (0b01, 0b0111) => Effect::Keep,                            // BKPT
                    (0b00 | 0b11, 0b1000..=0b1111) => writes(rn == r || rd == r), // SMLAxy, SMULxy
                    (0b01 | 0b10, 0b1000..=0b1111) => writes(rn == r || rd == r),
                    _ => writes(rd == r), // QADD and friends
                };
            }
            if (8..=11).contains(&op) {
                return Effect::Keep; // TST, TEQ, CMP, CMN
            }
            if rd != r {
                return Effect::Keep;
            }
            if imm && !conditional && (op == 0b1101 || op == 0b1111) {
                let rot = bits(insn, 11, 8) * 2;
                let v = bits(insn, 7, 0).rotate_right(rot);
                return Effect::Set(if op == 0b1101 { v } else { !v });
            }
            Effect::Clobber
        }
        0b010 | 0b011 => {
            if bits(insn, 27, 25) == 0b011 && bits(insn, 4, 4) == 1 {
                // Media instructions (ARMv6) or undefined: assume the worst.
                return writes(rd == r || rn == r);
            }
            let load = bits(insn, 20, 20) == 1;
            let wback = bits(insn, 24, 24) == 0 || bits(insn, 21, 21) == 1;
            writes((load && rd == r) || (wback && rn == r))
        }
        0b100 => {
            let load = bits(insn, 20, 20) == 1;
            let wback = bits(insn, 21, 21) == 1;
            writes((load && insn & (1 << r) != 0) || (wback && rn == r))
        }
        0b101 => writes(bits(insn, 24, 24) == 1 && r == 14),
        0b110 => writes(bits(insn, 21, 21) == 1 && rn == r), // LDC/STC writeback
        _ => {
            // SWI, CDP, MCR, MRC: only MRC writes a general register.
            let mrc = bits(insn, 24, 24) == 0 && bits(insn, 20, 20) == 1 && bits(insn, 4, 4) == 1;
            writes(mrc && rd == r)
        }
    }
}

/// Whether `insn` is `SVC` (`SWI`).
pub fn is_svc(insn: u32) -> bool {
    bits(insn, 27, 24) == 0xF && insn >> 28 != 0xF
}

/// Whether the ARM instruction `insn` may access data memory (loads,
/// stores, `LDM`/`STM`, `SWP`, `LDC`/`STC`).
pub fn is_memory(insn: u32) -> bool {
    if insn >> 28 == 0xF {
        return false;
    }
    match bits(insn, 27, 25) {
        0b010 => true,
        0b011 => bits(insn, 4, 4) == 0,
        0b100 | 0b110 => true,
        0b000 => {
            bits(insn, 7, 7) == 1
                && bits(insn, 4, 4) == 1
                && (bits(insn, 6, 5) != 0 || bits(insn, 24, 23) == 0b10)
        }
        _ => false,
    }
}

/// The `PUSH`es not popped yet, innermost last: their register lists and
/// the values of r0 and r7 they saved.
#[derive(Clone, Copy, Debug, Default, Eq)]
struct Stack {
    pushed: [(u16, Option<u32>, Option<u32>); PUSH_DEPTH],
    /// How many of `pushed` are valid.
    depth: u8,
}

impl PartialEq for Stack {
    /// The same pushes (what lies past `depth` is stale).
    fn eq(&self, other: &Stack) -> bool {
        self.live() == other.live()
    }
}

impl Stack {
    fn live(&self) -> &[(u16, Option<u32>, Option<u32>)] {
        &self.pushed[..usize::from(self.depth)]
    }
}

/// What [`Regs`] knows after an instruction: r0, r7 and the pushes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct State {
    r0: Option<u32>,
    r7: Option<u32>,
    stack: Stack,
}

impl State {
    /// What is known in both `self` and `other`: a register that differs
    /// becomes unknown, pushes that differ are forgotten.
    fn meet(self, other: State) -> State {
        let same = |a: Option<u32>, b: Option<u32>| if a == b { a } else { None };
        State {
            r0: same(self.r0, other.r0),
            r7: same(self.r7, other.r7),
            stack: if self.stack == other.stack {
                self.stack
            } else {
                Stack::default()
            },
        }
    }
}

/// A conditional instruction at `at` whose execution is not known yet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Pending {
    /// Its physical address.
    at: u32,
    /// Its condition field.
    cond: u32,
    /// Whether the instruction at `at + 4` was a same-condition write of
    /// `pc` (then the next address tells).
    paired: bool,
    /// The state if it did not execute.
    skipped: State,
    /// The state if it executed (and, if `paired`, the jump too).
    ran: State,
    /// The state if it executed, before the jump.
    ran_first: State,
}

/// Two registers followed through a process's instruction stream: r0 (the
/// first system-call argument) and r7 (the call number).
///
/// The plugin sees every instruction about to execute, a conditional one
/// whether its condition passes or not. A conditional instruction that
/// changes what is known (a `POPEQ` of r7, a `MOVNE r7, #1`) is held
/// pending with both outcomes, and resolved by the addresses that follow
/// ([`Regs::step`]): when the next instruction, at `A + 4`, is a write of
/// `pc` under the same condition (`MOVcc pc, Rm`, `BXcc Rm` or a `POPcc`
/// with `pc`: the flags are the same for both, since neither changes
/// them), the two ran together or not at all, and the address after tells
/// which: `A + 8` means neither ran, any other address means both did
/// (the jump went elsewhere: its target is a return address, and `A + 8`
/// would be the return address of a call made at `A + 4`, where the
/// return itself is). In every other case (a different next instruction,
/// an unknown or non-contiguous physical address, `A + 8` across a 1 KiB
/// boundary, where a tiny page could map it elsewhere) the outcomes are
/// met: a register on which they disagree becomes unknown. Never guessed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Regs {
    /// r0 if known.
    pub r0: Option<u32>,
    /// r7 if known.
    pub r7: Option<u32>,
    stack: Stack,
    pending: Option<Pending>,
}

/// The `PUSH`es [`Regs`] remembers; an older one is forgotten (its `POP`
/// then restores nothing).
const PUSH_DEPTH: usize = 8;
/// `lr` and `pc` in a register list.
const LR: u16 = 1 << 14;
/// `pc` in a register list.
const PC: u16 = 1 << 15;
/// The smallest page (ARMv5 tiny page): two addresses in the same one are
/// physically as far apart as virtually.
const TINY_PAGE: u32 = 1 << 10;

/// The register list of `insn` if it is `PUSH` (`STMDB sp!`, or `STR Rt,
/// [sp, #-4]!`) or `POP` (`LDMIA sp!`, or `LDR Rt, [sp], #4`), under any
/// condition: (list, whether a pop).
fn push_pop(insn: u32) -> Option<(u16, bool)> {
    if insn >> 28 == 0xF {
        return None;
    }
    match insn & 0x0FFF_0000 {
        0x092D_0000 => Some((insn as u16, false)),
        0x08BD_0000 => Some((insn as u16, true)),
        0x052D_0000 if insn & 0xFFF == 4 => Some((1 << bits(insn, 15, 12), false)),
        0x049D_0000 if insn & 0xFFF == 4 => Some((1 << bits(insn, 15, 12), true)),
        _ => None,
    }
}

/// Whether `insn`, if its condition passes, certainly writes `pc` with a
/// register or a popped word and changes no flag: `MOV pc, Rm` (Rm not
/// `pc`), `BX Rm`, `POP {..., pc}`.
fn jumps(insn: u32) -> bool {
    let mov_pc = insn & 0x0FFF_FFF0 == 0x01A0_F000 && insn & 0xF != 0xF;
    let bx = insn & 0x0FFF_FFF0 == 0x012F_FF10;
    let pop_pc = matches!(push_pop(insn), Some((list, true)) if list & PC != 0);
    mov_pc || bx || pop_pc
}

impl State {
    /// Applies the ARM instruction `insn` (its condition passed).
    fn apply(mut self, insn: u32) -> State {
        let (r0, r7) = (self.r0, self.r7);
        for (r, slot) in [(0, &mut self.r0), (7, &mut self.r7)] {
            match effect(insn, r) {
                Effect::Keep => {}
                Effect::Set(v) => *slot = Some(v),
                Effect::Clobber => *slot = None,
            }
        }
        let st = &mut self.stack;
        match push_pop(insn) {
            Some((list, false)) => {
                if usize::from(st.depth) == PUSH_DEPTH {
                    st.pushed.copy_within(1.., 0);
                    st.depth -= 1;
                }
                st.pushed[usize::from(st.depth)] = (list, r0, r7);
                st.depth += 1;
            }
            Some((list, true)) if st.depth > 0 => {
                st.depth -= 1;
                let (pushed, s0, s7) = st.pushed[usize::from(st.depth)];
                let matches = list == pushed || (pushed & LR != 0 && list == (pushed & !LR) | PC);
                if matches {
                    for (r, slot, saved) in [(0, &mut self.r0, s0), (7, &mut self.r7, s7)] {
                        if list & (1 << r) != 0 {
                            *slot = saved;
                        }
                    }
                } else {
                    st.depth = 0; // out of step: remember no push
                }
            }
            _ => {}
        }
        self
    }
}

/// `insn` with its condition field made "always".
fn always(insn: u32) -> u32 {
    (insn & 0x0FFF_FFFF) | 0xE000_0000
}

impl Regs {
    fn state(&self) -> State {
        State {
            r0: self.r0,
            r7: self.r7,
            stack: self.stack,
        }
    }

    fn set(&mut self, s: State) {
        (self.r0, self.r7, self.stack) = (s.r0, s.r7, s.stack);
    }

    /// Holds `p` pending; meanwhile only what both outcomes agree on is
    /// known.
    fn hold(&mut self, p: Pending) {
        self.set(p.skipped.meet(p.ran));
        self.pending = Some(p);
    }

    /// Whether an executed conditional instruction is held pending (its
    /// effect not known until the addresses that follow are seen).
    pub fn is_pending(&self) -> bool {
        self.pending.is_some()
    }

    /// Applies one executed instruction at physical address `pa` (`None`:
    /// unknown), with encoding `insn` of `size` bytes.
    pub fn step(&mut self, pa: Option<u32>, insn: u32, size: usize) {
        if let Some(p) = self.pending.take() {
            let at = |k: u32| pa == Some(p.at.wrapping_add(k));
            if !p.paired && at(0) {
                // An abort re-executes the instruction: it did not complete.
                self.set(p.skipped);
            } else if !p.paired
                && at(4)
                && size == 4
                && insn >> 28 == p.cond
                && jumps(insn)
                && p.at % TINY_PAGE <= TINY_PAGE - 12
            {
                // A same-condition jump: the next address will tell.
                self.hold(Pending {
                    paired: true,
                    ran: p.ran.apply(always(insn)),
                    ran_first: p.ran,
                    ..p
                });
                return;
            } else if p.paired && at(4) {
                // The jump (a `POP`) aborted and re-executes: its condition,
                // and so the first one's, passed.
                self.set(p.ran_first);
            } else if p.paired && at(8) {
                self.set(p.skipped);
            } else if p.paired && pa.is_some() {
                self.set(p.ran);
            } else {
                self.set(p.skipped.meet(p.ran));
            }
        }
        if size != 4 {
            *self = Regs::default();
            return;
        }
        let cond = insn >> 28;
        let before = self.state();
        if cond >= 0xE {
            self.set(before.apply(insn));
            return;
        }
        let ran = before.apply(always(insn));
        match pa {
            // No difference to what is known: nothing to wait for.
            _ if ran == before => {}
            Some(at) => self.hold(Pending {
                at,
                cond,
                paired: false,
                skipped: before,
                ran,
                ran_first: ran,
            }),
            None => self.set(before.meet(ran)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Encodings checked against GNU as (arm-none-eabi) listings.
    const MOV_R7_12: u32 = 0xE3A0_700C; // mov r7, #12
    const MOV_R0_0: u32 = 0xE3A0_0000; // mov r0, #0
    const MOV_R7_ROT: u32 = 0xE3A0_7C01; // mov r7, #256
    const MVN_R7_0: u32 = 0xE3E0_7000; // mvn r7, #0
    const MOVNE_R7_1: u32 = 0x13A0_7001; // movne r7, #1
    const ADD_R7: u32 = 0xE287_7001; // add r7, r7, #1
    const MOV_R7_R1: u32 = 0xE1A0_7001; // mov r7, r1
    const CMP_R7: u32 = 0xE357_0001; // cmp r7, #1
    const LDR_R7: u32 = 0xE591_7000; // ldr r7, [r1]
    const STR_R7: u32 = 0xE581_7000; // str r7, [r1]
    const LDR_WB_R7: u32 = 0xE5B7_1004; // ldr r1, [r7, #4]!
    const POP_R4_R7: u32 = 0xE8BD_00F0; // pop {r4-r7}
    const PUSH_R4_R7: u32 = 0xE92D_00F0; // push {r4-r7}
    const BL: u32 = 0xEB00_0010; // bl
    const SVC0: u32 = 0xEF00_0000; // svc #0
    const LDRD_R6: u32 = 0xE1C1_60D0; // ldrd r6, r7, [r1]
    const MUL_R7: u32 = 0xE007_0291; // mul r7, r1, r2
    const MRC_R7: u32 = 0xEE11_7F10; // mrc p15, 0, r7, c1, c0, 0
    const MCR_R7: u32 = 0xEE01_7F10; // mcr p15, 0, r7, c1, c0, 0

    #[test]
    fn immediates_set_and_other_writes_clobber() {
        assert_eq!(effect(MOV_R7_12, 7), Effect::Set(12));
        assert_eq!(effect(MOV_R7_12, 0), Effect::Keep);
        assert_eq!(effect(MOV_R0_0, 0), Effect::Set(0));
        assert_eq!(effect(MOV_R7_ROT, 7), Effect::Set(256));
        assert_eq!(effect(MVN_R7_0, 7), Effect::Set(u32::MAX));
        assert_eq!(effect(MOVNE_R7_1, 7), Effect::Clobber);
        for w in [
            ADD_R7, MOV_R7_R1, LDR_R7, LDR_WB_R7, POP_R4_R7, LDRD_R6, MUL_R7, MRC_R7,
        ] {
            assert_eq!(effect(w, 7), Effect::Clobber, "{w:#010x}");
        }
        for w in [CMP_R7, STR_R7, PUSH_R4_R7, SVC0, MCR_R7] {
            assert_eq!(effect(w, 7), Effect::Keep, "{w:#010x}");
        }
        assert_eq!(effect(BL, 14), Effect::Clobber);
        assert_eq!(effect(BL, 7), Effect::Keep);
    }

    #[test]
    fn svc_and_memory_classes() {
        assert!(is_svc(SVC0));
        assert!(!is_svc(MCR_R7) && !is_svc(0xFF00_0000));
        for w in [
            LDR_R7,
            STR_R7,
            POP_R4_R7,
            PUSH_R4_R7,
            LDRD_R6,
            0xE101_2093, /* swp */
        ] {
            assert!(is_memory(w), "{w:#010x}");
        }
        for w in [MOV_R7_12, ADD_R7, MUL_R7, MRC_R7, SVC0, BL] {
            assert!(!is_memory(w), "{w:#010x}");
        }
    }

    #[test]
    fn regs_follow_a_call_sequence() {
        let mut r = Regs::default();
        for w in [MOV_R0_0, MOV_R7_12, SVC0] {
            r.step(None, w, 4);
        }
        assert_eq!((r.r0, r.r7), (Some(0), Some(12)));
        r.step(None, ADD_R7, 4);
        assert_eq!(r.r7, None);
        r.step(None, MOV_R7_12, 4);
        r.step(None, 0x4770, 2); // Thumb: forget everything
        assert_eq!(r, Regs::default());
    }

    #[test]
    fn a_callees_pop_restores_what_its_push_saved() {
        const PUSH: u32 = 0xE92D_48F0; // push {r4-r7, r11, lr}
        const POP: u32 = 0xE8BD_88F0; // pop {r4-r7, r11, pc}
        const POP_OTHER: u32 = 0xE8BD_80F0; // pop {r4-r7, pc}
        const POPNE: u32 = 0x18BD_88F0; // popne {r4-r7, r11, pc}
        const EOR_R7: u32 = 0xE025_7003; // eor r7, r5, r3
        const PUSH_R7: u32 = 0xE52D_7004; // str r7, [sp, #-4]!
        const POP_R7: u32 = 0xE49D_7004; // ldr r7, [sp], #4
        let mut r = Regs::default();
        for w in [MOV_R7_12, BL, PUSH, EOR_R7] {
            r.step(None, w, 4);
        }
        assert_eq!(r.r7, None);
        // Nested: an inner push and pop of r7 alone.
        for w in [PUSH_R7, MOV_R7_ROT, POP_R7] {
            r.step(None, w, 4);
        }
        assert_eq!(r.r7, None, "the inner pop restores the unknown value");
        r.step(None, POP, 4);
        assert_eq!(r.r7, Some(12));
        // A pop that does not match its push restores nothing.
        for w in [PUSH, EOR_R7, POP_OTHER] {
            r.step(None, w, 4);
        }
        assert_eq!(r.r7, None);
        // A conditional pop may not run: every push is forgotten.
        for w in [MOV_R7_12, PUSH, POPNE, EOR_R7, POP] {
            r.step(None, w, 4);
        }
        assert_eq!(r.r7, None);
        // The first pushes are forgotten past the depth.
        r.step(None, MOV_R7_12, 4);
        r.step(None, PUSH, 4);
        for _ in 0..PUSH_DEPTH {
            r.step(None, PUSH_R7, 4);
        }
        r.step(None, EOR_R7, 4);
        for _ in 0..PUSH_DEPTH {
            r.step(None, POP_R7, 4);
        }
        r.step(None, POP, 4);
        assert_eq!(r.r7, None);
    }

    // ARMv4's return from the touch loop (collie's user program), and the
    // callee around it.
    const PUSH_LR: u32 = 0xE92D_48F0; // push {r4-r7, r11, lr}
    const POPEQ_LR: u32 = 0x08BD_48F0; // popeq {r4-r7, r11, lr}
    const MOVEQ_PC_LR: u32 = 0x01A0_F00E; // moveq pc, lr
    const MOVNE_PC_LR: u32 = 0x11A0_F00E; // movne pc, lr
    const BXEQ_LR: u32 = 0x012F_FF1E; // bxeq lr
    const POP_PC: u32 = 0xE8BD_88F0; // pop {r4-r7, r11, pc}
    const EOR_R7: u32 = 0xE025_7003; // eor r7, r5, r3
    const NOP: u32 = 0xE1A0_0000; // mov r0, r0
    /// The caller (at 0x8000) and the callee (at `0x9000 + off`), up to
    /// the callee's `POPEQ` at `at`, its `MOVEQ pc, lr` or `BXEQ lr` at
    /// `at + 4` (`ret`).
    fn to_popeq(at: u32, ret: u32) -> Regs {
        let mut r = Regs::default();
        r.step(Some(0x8000), MOV_R7_12, 4);
        r.step(Some(0x8004), BL, 4);
        r.step(Some(at - 8), PUSH_LR, 4);
        r.step(Some(at - 4), EOR_R7, 4);
        assert_eq!(r.r7, None);
        r.step(Some(at), POPEQ_LR, 4);
        assert!(r.is_pending());
        r.step(Some(at + 4), ret, 4);
        assert!(r.is_pending());
        r
    }

    #[test]
    fn a_conditional_pop_and_return_that_ran() {
        for ret in [MOVEQ_PC_LR, BXEQ_LR] {
            let mut r = to_popeq(0x9010, ret);
            r.step(Some(0x8008), NOP, 4); // back in the caller
            assert!(!r.is_pending());
            assert_eq!(r.r7, Some(12), "{ret:#010x}");
            assert_eq!(r.stack, Stack::default(), "the push was popped");
        }
    }

    #[test]
    fn a_conditional_pop_and_return_that_did_not_run() {
        for ret in [MOVEQ_PC_LR, BXEQ_LR] {
            let mut r = to_popeq(0x9010, ret);
            r.step(Some(0x9018), NOP, 4); // at + 8: the loop goes on
            assert!(!r.is_pending());
            assert_eq!(r.r7, None, "still the callee's r7");
            r.step(Some(0x901C), POP_PC, 4); // the push is still there
            assert_eq!(r.r7, Some(12));
        }
    }

    #[test]
    fn an_abort_reexecutes_the_pop_or_the_jump() {
        let mut r = Regs::default();
        for (pa, w) in [(0x8000, MOV_R7_12), (0x8004, BL), (0x9000, PUSH_LR)] {
            r.step(Some(pa), w, 4);
        }
        r.step(Some(0x9004), EOR_R7, 4);
        r.step(Some(0x9008), POPEQ_LR, 4);
        r.step(Some(0x9008), POPEQ_LR, 4); // the data abort's re-execution
        r.step(Some(0x900C), MOVEQ_PC_LR, 4);
        r.step(Some(0x8008), NOP, 4);
        assert_eq!(r.r7, Some(12));
        // A `POPEQ {..., pc}` as the jump, aborting once.
        const POPEQ_PC: u32 = 0x08BD_8000; // popeq {pc}
        let mut r = to_popeq(0x9010, POPEQ_PC);
        r.step(Some(0x9014), POPEQ_PC, 4);
        r.step(Some(0x8008), NOP, 4);
        assert_eq!(r.r7, Some(12));
    }

    #[test]
    fn a_conditional_pop_that_cannot_be_told_leaves_r7_unknown() {
        // The outcomes disagree on r7 (12 or the callee's) whatever comes
        // next; where the addresses do not tell, it is unknown.
        let cases: [(u32, u32, Option<u32>); 5] = [
            (0x9010, NOP, Some(0x9018)),         // not a jump
            (0x9010, MOVNE_PC_LR, Some(0x8008)), // another condition
            (0x9010, MOVEQ_PC_LR, None),         // the next address unknown
            (0x93F8, MOVEQ_PC_LR, Some(0x9400)), // at + 8 in another tiny page
            (0x93F8, MOVEQ_PC_LR, Some(0x8008)),
        ];
        for (at, second, next) in cases {
            let mut r = Regs::default();
            r.step(Some(0x8000), MOV_R7_12, 4);
            r.step(Some(0x8004), BL, 4);
            r.step(Some(at - 8), PUSH_LR, 4);
            r.step(Some(at - 4), EOR_R7, 4);
            r.step(Some(at), POPEQ_LR, 4);
            r.step(Some(at + 4), second, 4);
            r.step(next, NOP, 4);
            assert!(!r.is_pending());
            assert_eq!(r.r7, None, "{at:#x} {second:#010x} {next:?}");
            assert_eq!(r.stack, Stack::default(), "the pushes are forgotten");
        }
        // The second instruction not at `at + 4`, or the pop's address
        // unknown.
        let mut r = to_popeq(0x9010, MOVEQ_PC_LR);
        r.step(Some(0x8008), NOP, 4);
        assert_eq!(r.r7, Some(12));
        let mut r = Regs::default();
        r.step(None, MOV_R7_12, 4);
        r.step(None, PUSH_LR, 4);
        r.step(None, EOR_R7, 4);
        r.step(None, POPEQ_LR, 4);
        assert!(!r.is_pending());
        r.step(None, MOVEQ_PC_LR, 4);
        r.step(Some(0x8008), NOP, 4);
        assert_eq!(r.r7, None);
    }

    #[test]
    fn a_conditional_move_that_changes_nothing_is_not_held() {
        let mut r = Regs::default();
        r.step(Some(0x8000), MOV_R7_12, 4);
        r.step(Some(0x8004), 0x03A0_700C, 4); // moveq r7, #12
        assert!(!r.is_pending());
        assert_eq!(r.r7, Some(12));
        r.step(Some(0x8008), MOVNE_R7_1, 4);
        assert!(r.is_pending());
        assert_eq!(r.r7, None);
        r.step(Some(0x800C), 0x1A00_0000, 4); // bne: cannot tell
        assert_eq!(r.r7, None);
        assert!(!r.is_pending());
    }
}
