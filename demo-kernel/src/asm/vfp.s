@ The VFP's registers (`proc/vfp.rs`): the guarded FPSID read that detects
@ it, FPEXC, and the save and load of a process's 33 words (d0-d15, then
@ FPSCR). ARMv5 has no CPACR: on the ARM926EJ-S with a VFP9-S, CP10/CP11
@ are reachable in privileged modes and FPEXC.EN (bit 30) alone decides
@ whether a VFP instruction other than FMRX/FMXR of FPSID/FPEXC runs or
@ traps as undefined (in user mode, every VFP instruction traps while EN is
@ clear). Only FPSID and FPEXC are read or written with EN clear; d0-d15
@ and FPSCR only with EN set (the callers' contract, `proc/vfp.rs`).

    .section .text.vfp, "ax"
    .arm
    .fpu vfp

@ u32 __vfp_probe_fpsid(u32 *out): reads FPSID into *out and returns 1, or
@ returns 0 (and leaves *out) if the read is undefined (no VFP: SA-1110,
@ PXA255). The read is guarded by `__vfp_probe_armed`: the kernel-mode
@ undefined-instruction handler (`__vfp_kernel_undef` below) skips exactly
@ this instruction while it is armed and disarms it.
    .global __vfp_probe_fpsid
__vfp_probe_fpsid:
    ldr     r2, =__vfp_probe_armed
    mov     r3, #1
    str     r3, [r2]
    mov     r1, #0
    .global __vfp_probe_insn
__vfp_probe_insn:
    vmrs    r1, fpsid
    ldr     r3, [r2]                @ still armed: the read did not trap
    cmp     r3, #0
    strne   r1, [r0]
    mov     r0, r3
    mov     r3, #0
    str     r3, [r2]
    mov     pc, lr

@ Undefined instruction in a privileged mode, from `__exc_undef`
@ (`asm/vectors.s`) in undefined mode, lr = the instruction + 4, the
@ interrupted r0 just below the undefined stack. The probe's instruction
@ while armed: disarmed, resumed after it. Anything else is fatal, as
@ before: r0 = 1 (undefined), r1 = SPSR, r2 = the instruction,
@ `unexpected_exception`.
    .global __vfp_kernel_undef
__vfp_kernel_undef:
    ldr     r0, [sp, #-4]           @ the interrupted r0 back
    stmfd   sp!, {r0-r3}
    ldr     r1, =__vfp_probe_armed
    ldr     r2, [r1]
    cmp     r2, #0
    beq     1f
    ldr     r2, =__vfp_probe_insn
    sub     r3, lr, #4
    cmp     r2, r3
    bne     1f
    mov     r2, #0
    str     r2, [r1]                @ disarmed: the probe sees the trap
    ldmfd   sp!, {r0-r3}
    movs    pc, lr                  @ after the probe instruction
1:  ldmfd   sp!, {r0-r3}
    mov     r0, #1
    mrs     r1, spsr
    sub     r2, lr, #4
    bl      unexpected_exception
2:  b       2b

@ u32 __vfp_fpexc(void): FPEXC.
    .global __vfp_fpexc
__vfp_fpexc:
    vmrs    r0, fpexc
    mov     pc, lr

@ void __vfp_set_fpexc(u32): FPEXC = r0.
    .global __vfp_set_fpexc
__vfp_set_fpexc:
    vmsr    fpexc, r0
    mov     pc, lr

@ void __vfp_save(u32 *regs): d0-d15 into regs[0..32], FPSCR into
@ regs[32]. FPEXC.EN must be set.
    .global __vfp_save
__vfp_save:
    vstmia  r0!, {d0-d15}
    vmrs    r1, fpscr
    str     r1, [r0]
    mov     pc, lr

@ void __vfp_load(const u32 *regs): d0-d15 from regs[0..32], FPSCR from
@ regs[32]. FPEXC.EN must be set.
    .global __vfp_load
__vfp_load:
    vldmia  r0!, {d0-d15}
    ldr     r1, [r0]
    vmsr    fpscr, r1
    mov     pc, lr
    .ltorg

    .section .data.vfp_words, "aw"
    .align  2
@ Non-zero while `__vfp_probe_fpsid` runs its read.
__vfp_probe_armed:
    .word   0
