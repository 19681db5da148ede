@ XScale CPWAIT (connex only): waits until a CP15 write has taken effect.
@ Read any CP15 register, use the result, then branch to the next
@ instruction (the Intel XScale Core Developer's Manual's sequence); QEMU
@ otherwise applies an SCTLR write one step late.

    .section .text.cpwait, "ax"
    .arm
    .balign 4
    .global __cpwait
__cpwait:
    mrc     p15, 0, r0, c2, c0, 0
    mov     r0, r0
    sub     pc, pc, #4
    MARK_MRC r12, r0, 2, 0, 0       @ cache-check builds: the TTBR read
    mov     pc, lr
