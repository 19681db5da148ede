@ Exception vectors, copied nowhere: the boot code maps this page at 0xFFFF0000
@ (SCTLR.V = 1). Each entry loads an absolute handler address from the table
@ that follows, so the page works at any virtual address.

    .section .vectors, "ax"
    .arm
    .global __vectors
__vectors:
    ldr     pc, [pc, #24]           @ 0x00 reset
    ldr     pc, [pc, #24]           @ 0x04 undefined instruction
    ldr     pc, [pc, #24]           @ 0x08 SVC
    ldr     pc, [pc, #24]           @ 0x0C prefetch abort
    ldr     pc, [pc, #24]           @ 0x10 data abort
    ldr     pc, [pc, #24]           @ 0x14 reserved
    ldr     pc, [pc, #24]           @ 0x18 IRQ
    ldr     pc, [pc, #24]           @ 0x1C FIQ
    .word   __exc_reset
    .word   __exc_undef
    .word   __exc_svc
    .word   __exc_pabt
    .word   __exc_dabt
    .word   __exc_reserved
    .word   __exc_irq
    .word   __exc_fiq

@ Handlers. An exception taken in user mode goes to the trap path
@ (`asm/trap.s`). In the kernel, every exception except a data abort raised
@ by a probe instruction is fatal: r0 = kind (see `vectors::ExceptionKind`), r1 = SPSR,
@ r2 = address of the instruction concerned, then `unexpected_exception`
@ (Rust, never returns) reports it and exits QEMU with a failure status.

    .section .text.vectors, "ax"
    .arm
__exc_reset:
    mov     r0, #0
    mrs     r1, cpsr
    mov     r2, #0
    b       __exc_fatal
@ Undefined instruction, SVC, prefetch abort and IRQ test the mode they came
@ from the same way: the user's r0 is saved just below this mode's stack
@ (IRQs masked), then SPSR.M[3:0] = 0 means user mode (0x10, no other) and
@ the trap path (`asm/trap.s`) takes over with lr as the exception left it
@ (the stubs adjust it). Every user trap reads the counter at the same
@ instruction from the vector (`SAVE_USER`).
__exc_undef:
    str     r0, [sp, #-4]
    mrs     r0, spsr
    tst     r0, #0xF
    beq     __user_trap_undef
    mov     r0, #1
    sub     r2, lr, #4
    b       1f
__exc_svc:
    str     r0, [sp, #-4]
    mrs     r0, spsr
    tst     r0, #0xF
    beq     __user_trap_svc
    mov     r0, #2
    sub     r2, lr, #4
    b       1f
__exc_pabt:
    str     r0, [sp, #-4]
    mrs     r0, spsr
    tst     r0, #0xF
    beq     __user_trap_pabt
    mov     r0, #3
    sub     r2, lr, #4
    b       1f
__exc_reserved:
    mov     r0, #5
    mov     r2, #0
    b       1f
__exc_irq:
    str     r0, [sp, #-4]
    mrs     r0, spsr
    tst     r0, #0xF
    beq     __user_trap_irq
    and     r0, r0, #0x1F
    cmp     r0, #0x13
    ldr     r0, [sp, #-4]           @ (flags kept)
    bne     4f
    @ From SVC mode: the kernel opened an interrupt window (a TCM exchange
    @ between two bounded steps). `kernel_irq` acknowledges the tick and
    @ flags it; the interrupted code decides whether to yield.
    sub     lr, lr, #4
    stmfd   sp!, {r0-r3, r12, lr}
    bl      kernel_irq
    ldmfd   sp!, {r0-r3, r12, lr}
    movs    pc, lr
4:  mov     r0, #6
    sub     r2, lr, #4
    b       1f
__exc_fiq:
    mov     r0, #7
    sub     r2, lr, #4
1:  mrs     r1, spsr
__exc_fatal:
    bl      unexpected_exception
2:  b       2b

@ Data abort. From user mode: `__user_trap_dabt` (`asm/trap.s`), with the
@ user's r0 saved just below the abort stack. In the kernel: if a probe is
@ armed and the aborting instruction is one of the
@ probe instructions (between __probe_insns_start and __probe_insns_end),
@ record DFSR and FAR in __probe_state, disarm, and resume at the next
@ instruction. Otherwise the abort is fatal.
@ __probe_state layout (see probe.rs): armed, faulted, dfsr, far.
__exc_dabt:
    sub     lr, lr, #8              @ address of the aborting instruction
    str     r0, [sp, #-4]           @ below the abort stack (IRQs masked)
    mrs     r0, spsr
    tst     r0, #0xF                @ M[3:0] = 0: user mode (0x10), no other
    beq     __user_trap_dabt        @ from user mode: retried or the process dies
    ldr     r0, [sp, #-4]
    stmfd   sp!, {r0-r3}
    ldr     r0, =__probe_state
    ldr     r1, [r0]
    cmp     r1, #0
    beq     3f
    ldr     r2, =__probe_insns_start
    cmp     lr, r2
    blo     3f
    ldr     r2, =__probe_insns_end
    cmp     lr, r2
    bhs     3f
    mrc     p15, 0, r1, c5, c0, 0   @ DFSR
    MARK_MRC r3, r1, 5, 0, 0
    mrc     p15, 0, r2, c6, c0, 0   @ FAR
    MARK_MRC r3, r2, 6, 0, 0
    str     r1, [r0, #8]
    str     r2, [r0, #12]
    mov     r1, #1
    str     r1, [r0, #4]            @ faulted
    mov     r1, #0
    str     r1, [r0]                @ disarmed
    ldmfd   sp!, {r0-r3}
    add     lr, lr, #4
    movs    pc, lr                  @ resume after the probe instruction
3:  ldmfd   sp!, {r0-r3}
    mov     r0, #4
    mrs     r1, spsr
    mov     r2, lr
    b       __exc_fatal
    .ltorg
