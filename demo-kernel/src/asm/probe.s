@ Probe instructions: exactly one memory access each. A data abort raised by
@ one of the instructions between __probe_insns_start and __probe_insns_end
@ while a probe is armed is absorbed by the abort handler (vectors.s), which
@ records DFSR/FAR and resumes at the next instruction.
@ AAPCS: r0 = address, r1 = value to store; loads return the word in r0.
@ LDRT/STRT perform the access with user-mode permissions from SVC mode.

    .section .text.probe, "ax"
    .arm
    .balign 4
    .global __probe_insns_start
    .global __probe_insns_end
    .global __probe_ldr
    .global __probe_ldrt
    .global __probe_str
    .global __probe_strt
__probe_insns_start:
__probe_ldr:
    ldr     r0, [r0]
    mov     pc, lr                  @ (no BX: StrongARM is ARMv4 without Thumb)
__probe_ldrt:
    ldrt    r0, [r0]
    mov     pc, lr                  @ (no BX: StrongARM is ARMv4 without Thumb)
__probe_str:
    str     r1, [r0]
    mov     pc, lr                  @ (no BX: StrongARM is ARMv4 without Thumb)
__probe_strt:
    strt    r1, [r0]
    mov     pc, lr                  @ (no BX: StrongARM is ARMv4 without Thumb)
__probe_insns_end:
