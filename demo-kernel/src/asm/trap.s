@ Traps from user mode and the way into and out of user mode.
@
@ Every exception taken in user mode (SVC, IRQ, prefetch/data abort,
@ undefined instruction) builds one trap frame on the SVC stack:
@   [0..52)  r0-r12   [52] sp_usr   [56] lr_usr   [60] pc to resume   [64] CPSR
@ (68 bytes, `trap::TrapFrame`, padded to FRAME_SIZE = 72 so that sp stays
@ 8-byte aligned as the AAPCS requires: with 68 the compiler's aligned
@ stack-slot arithmetic read values 4 bytes off), calls `trap_entry(frame, kind)` in SVC
@ mode with IRQ/FIQ masked, and returns to user mode from the frame, which
@ Rust may have replaced by another process's context (a switch).
@ Kinds: 1 undefined, 2 SVC, 3 prefetch abort, 4 data abort, 6 IRQ.

    .equ FRAME_SIZE, 72

@ Entered in IRQ/ABT/UND mode from user mode, lr = the pc to resume (already
@ adjusted), spsr = user CPSR. Moves to SVC mode and builds the frame there.
.macro USER_TRAP kind
    stmfd   sp!, {r0-r2}
    mov     r0, lr
    mrs     r1, spsr
    mov     r2, sp
    add     sp, sp, #12             @ the words stay readable below sp (IRQs masked)
    msr     cpsr_c, #0xD3           @ SVC mode, IRQ and FIQ masked
    sub     sp, sp, #FRAME_SIZE
    str     r0, [sp, #60]
    str     r1, [sp, #64]
    ldmia   r2, {r0-r2}
    stmia   sp, {r0-r12}
    add     r0, sp, #52
    stmia   r0, {r13, r14}^
    nop
    mov     r0, sp
    mov     r1, #\kind
    bl      trap_entry
    b       __return_to_user
.endm

    @ On the kernel page the TCM scenario moves into ITCM (`.text.kswitch`).
    .section .text.kswitch.trap, "ax"
    .arm

    .global __user_trap_undef
__user_trap_undef:
    USER_TRAP 1
    .global __user_trap_pabt
__user_trap_pabt:
    USER_TRAP 3
    .global __user_trap_dabt
__user_trap_dabt:
    USER_TRAP 4
    .global __user_trap_irq
__user_trap_irq:
    USER_TRAP 6

@ SVC from user mode: already in SVC mode, lr = next instruction.
    .global __user_trap_svc
__user_trap_svc:
    sub     sp, sp, #FRAME_SIZE
    stmia   sp, {r0-r12}
    add     r0, sp, #52
    stmia   r0, {r13, r14}^
    nop
    str     lr, [sp, #60]
    mrs     r1, spsr
    str     r1, [sp, #64]
    mov     r0, sp
    mov     r1, #2
    bl      trap_entry
    b       __return_to_user

@ SVC mode, sp = a trap frame: resume user mode from it.
    .global __return_to_user
__return_to_user:
    ldr     r0, [sp, #64]
    msr     spsr_cxsf, r0
    ldr     lr, [sp, #60]
    add     r0, sp, #52
    ldmia   r0, {r13, r14}^
    nop
    @ Time stamp of the return (24 MHz counter), three instructions before
    @ user mode: the end of the measured switch path (`kernel::SwitchClock`).
    ldr     r0, =0xF000005C
    ldr     r0, [r0]
    ldr     r1, =__ret_stamp
    str     r0, [r1]
    ldmia   sp, {r0-r12}
    add     sp, sp, #FRAME_SIZE
    movs    pc, lr

@ __sched_enter(ctx): saves the kernel's callee-saved registers, sp and lr
@ in ctx (10 words), lets `sched_first_frame(frame)` fill a trap frame with
@ the first process's context, and enters user mode. It "returns" when
@ `__sched_leave(ctx)` is called (from a trap, when no process is left).
    .global __sched_enter
__sched_enter:
    stmia   r0, {r4-r11, r13, r14}
    sub     sp, sp, #FRAME_SIZE
    mov     r0, sp
    bl      sched_first_frame
    b       __return_to_user

    .global __sched_leave
__sched_leave:
    ldmia   r0, {r4-r11, r13, r14}
    bx      lr
    .ltorg

    .section .data.ret_stamp, "aw"
    .align  2
    .global __ret_stamp
__ret_stamp:
    .word   0
