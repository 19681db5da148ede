@ copy_words(dst r0, src r1, len r2): copies len bytes, all three a multiple
@ of 4 (the caller checks), the ranges apart. Eight words per `ldmia`/
@ `stmia` pair, then word by word. ARMv4 (no `bx`): returns with `ldmfd`.
@ The kernel's long-IPC copy and the user program's plain copy (the
@ benchmark's baseline) assemble this same file.
    .section .text.copy_words, "ax"
    .arm
    .align 2
    .global copy_words
    .type copy_words, %function
copy_words:
    stmfd   sp!, {r4-r10, lr}
    subs    r2, r2, #32
    blo     2f
1:  ldmia   r1!, {r3-r10}
    stmia   r0!, {r3-r10}
    subs    r2, r2, #32
    bhs     1b
2:  adds    r2, r2, #32
    beq     4f
3:  ldr     r3, [r1], #4
    str     r3, [r0], #4
    subs    r2, r2, #4
    bne     3b
4:  ldmfd   sp!, {r4-r10, pc}
    .size copy_words, . - copy_words
