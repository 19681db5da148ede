@ Traps from user mode and the way into and out of user mode.
@
@ Every process's user registers live in its own trap frame, inside its
@ process record (`kernel::TrapFrame`, `Proc::ctx`):
@   [0..52)  r0-r12   [52] sp_usr   [56] lr_usr   [60] pc to resume   [64] CPSR
@ `__cur_frame` points at the running process's frame. Every exception taken
@ in user mode (SVC, IRQ, prefetch/data abort, undefined instruction) saves
@ the user registers straight into `*__cur_frame`, then calls
@ `trap_entry(kind)` in SVC mode with IRQ/FIQ masked, on the SVC stack as it
@ was when user mode was entered (nothing is pushed on it, so it keeps the
@ 8-byte alignment `__sched_enter` checked). `trap_entry` returns the frame
@ of the process to resume; `__return_to_user` makes it current and
@ returns to user mode from it. A context switch is therefore a different
@ pointer: no registers are copied between frames. A data abort tries the
@ fast path first (`__user_trap_dabt`), which resumes the same process
@ without `trap_entry`.
@ Kinds: 1 undefined, 2 SVC, 3 prefetch abort, 4 data abort, 6 IRQ.

@ Saves the user registers into *__cur_frame; on exit r0 = the frame,
@ r1 = \kind, lr = the pc to resume (the mode's own lr, less 4 if `adjust`),
@ SPSR = user CPSR. Entered in the trap's mode from `asm/vectors.s`, with
@ the user's r0 just below this mode's stack.
@ In the measuring build only (`MEASURE`, the kernel's `measure` feature,
@ which `cargo xtask bench` enables; the shipped kernel has none of it): the
@ board's counter (`__board_counter`) is read into `__in_stamp` (the start
@ of the measured transit, `clock::TRANSIT_ENTRY_INSTRUCTIONS`) at the 10th
@ instruction from the vector on every path (vector, four in
@ `asm/vectors.s`, five here), with the frame, \kind and the user's r7
@ (the call number of an SVC) beside it in one store: what
@ `clock::return_accounting` files the transit by, after it.
.macro SAVE_USER kind, adjust
    ldr     r0, =__cur_frame
    ldr     r0, [r0]
    stmib   r0, {r1-r14}^           @ r1-r12, sp_usr, lr_usr
    .if MEASURE
    ldr     r2, =__board_counter    @ (no banked register right after STM^)
    ldr     r2, [r2]                @ t_in
    mov     r1, #\kind
    ldr     r3, =__in_frame
    stmia   r3, {r0, r1, r2, r7}    @ __in_frame, __in_kind, __in_stamp, __in_call
    .else
    mov     r1, #\kind              @ (no banked register right after STM^)
    .endif
    ldr     r2, [sp, #-4]
    str     r2, [r0]
    .if \adjust
    sub     lr, lr, #4
    .endif
    str     lr, [r0, #60]
    mrs     r2, spsr
    str     r2, [r0, #64]
.endm

@ An abort from user mode, in abort mode with the user's r0 just below the
@ abort stack: saves r0-r12, sp_usr and lr_usr into *__cur_frame (r0 = the
@ frame on exit) and reads the board's counter into r5 (saved: free; 0
@ in the shipped build, which reads no counter).
.macro SAVE_ABORT
    ldr     r0, =__cur_frame
    ldr     r0, [r0]
    stmib   r0, {r1-r14}^           @ r1-r12, sp_usr, lr_usr
    .if MEASURE
    ldr     r2, =__board_counter    @ (no banked register right after STM^)
    ldr     r5, [r2]
    .else
    mov     r5, #0                  @ (no banked register right after STM^)
    .endif
    ldr     r2, [sp, #-4]
    str     r2, [r0]
.endm

@ Measuring build only: the return's stamp after its accounting, into
@ `__out_stamp`, five instructions before user mode
@ (`clock::RETURN_GAP_INSTRUCTIONS`): the next entry stamp tells from it
@ whether a user instruction ran in between. Clobbers r2 and r3.
.macro OUT_STAMP
    ldr     r2, =__board_counter
    ldr     r2, [r2]
    ldr     r3, =__out_stamp
    str     r2, [r3]
.endm

@ Entered in IRQ/ABT/UND mode from user mode, lr = the exception's (the pc
@ to resume + 4), spsr = user CPSR.
.macro USER_TRAP kind
    SAVE_USER \kind, 1
    msr     cpsr_c, #0xD3           @ SVC mode, IRQ and FIQ masked
    mov     r0, r1
    bl      trap_entry
    b       __return_to_user
.endm

    @ On the kernel page the TCM scenario moves into ITCM (`.text.kswitch`).
    .section .text.kswitch.trap, "ax"
    .arm

    .global __user_trap_undef
__user_trap_undef:
    USER_TRAP 1
@ IRQ from user mode: the assembly fast path (`__irq_fast`,
@ `asm/fastpath.s`) takes the timer's preemption; it comes back to
@ `__irq_general` having changed nothing for any other interrupt.
    .global __user_trap_irq
__user_trap_irq:
    SAVE_USER 6, 1
    msr     cpsr_c, #0xD3           @ SVC mode, IRQ and FIQ masked
    b       __irq_fast
    .global __irq_general
__irq_general:
    mov     r0, #6
    bl      trap_entry
    b       __return_to_user

@ The abort stubs are off the switch page (`.text.kswitch`, one page that
@ the TCM scenario moves into ITCM, full): an abort is not a switch.
    .section .text.trap_abort, "ax"
    .arm

@ Data abort from user mode, entered from `__exc_dabt` (`asm/vectors.s`) in
@ abort mode with the user's r0 just below the abort stack, lr = the
@ aborting instruction, SPSR = user CPSR. Saves r0-r12, sp_usr and lr_usr
@ into *__cur_frame, reads the board's counter (the start of the measured
@ fault path, `clock::FaultClock`: the 11th instruction from the vector)
@ and calls `trap_dabt()` in SVC mode, IRQ/FIQ masked, with the frame in
@ r4 and the stamp in r5 (the user's r4-r12 are in the frame: they are
@ free; `trap_dabt` preserves them as any callee). A non-zero answer: the
@ fault was resolved on the fast path (`trap::Kernel::dabt_fast`), which
@ touched neither the user's banked registers nor abort mode's lr and
@ SPSR, so the access is retried straight from abort mode
@ (`__return_fast`). Zero: it declined; `trap_dabt_declined(stamp)`
@ stamps the general path's entry, the pc to resume and the user CPSR
@ complete the frame and `trap_entry(4)` takes the abort the general way.
    .global __user_trap_dabt
__user_trap_dabt:
    SAVE_ABORT
    msr     cpsr_c, #0xD3           @ SVC mode, IRQ and FIQ masked
    mov     r4, r0
    bl      trap_dabt
    cmp     r0, #0
    beq     __dabt_general
@ The fast path's return in SVC mode, r0 = the answer (non-zero), r4 = the
@ current frame, r5 = the abort's stamp: the time stamp three
@ instructions before user mode (the end of the measured fast fault path,
@ `clock::FaultClock`), the accounting outside the measured window
@ (`fast_abort_return(answer, t_out, stamp)`), then back to abort mode,
@ whose lr and SPSR still hold the return; r0-r12 from the frame (sp_usr
@ and lr_usr were never changed).
__return_fast:
    .if MEASURE
    ldr     r2, =__board_counter
    ldr     r1, [r2]
    mov     r2, r5
    bl      fast_abort_return
    OUT_STAMP                       @ five instructions before user mode
    .endif
    msr     cpsr_c, #0xD7           @ abort mode, IRQ and FIQ masked
    ldmia   r4, {r0-r12}
    movs    pc, lr
@ An abort the fast path declined, r1 = its kind (3 prefetch, 4 data; a
@ data abort sets it at `__dabt_general`, off the fast path): the pc to
@ resume and the user CPSR complete the frame, and `trap_entry` takes the
@ abort the general way.
__dabt_general:
    mov     r0, r5
    bl      trap_dabt_declined
    mov     r1, #4                  @ (off the fast path)
__abort_general:
    msr     cpsr_c, #0xD7
    ldr     r0, =__cur_frame
    ldr     r0, [r0]
    str     lr, [r0, #60]
    mrs     r2, spsr
    str     r2, [r0, #64]
    msr     cpsr_c, #0xD3
    mov     r0, r1
    bl      trap_entry
    b       __return_to_user

@ Prefetch abort from user mode, entered from `__exc_pabt` (`asm/vectors.s`)
@ in abort mode with the user's r0 just below the abort stack, lr = the
@ aborting instruction + 4, SPSR = user CPSR. As the data abort: r0-r12,
@ sp_usr and lr_usr saved into *__cur_frame, the counter read (the 10th
@ instruction from the vector, as every transit's), lr set to the
@ instruction to retry, then `trap_pabt(stamp, pc)` in SVC mode, IRQ/FIQ
@ masked, the frame in r4 and the stamp in r5: non-zero means resolved on
@ the fast path (`trap::Kernel::pabt_fast`), and the fetch is retried
@ through `__return_fast`; zero, the general path.
    .global __user_trap_pabt
__user_trap_pabt:
    SAVE_ABORT
    sub     lr, lr, #4              @ the instruction to fetch again
    mov     r4, r0
    mov     r0, r5
    mov     r1, lr
    msr     cpsr_c, #0xD3           @ SVC mode, IRQ and FIQ masked
    bl      trap_pabt
    mov     r1, #3                  @ (the general path's kind)
    cmp     r0, #0
    beq     __abort_general
    b       __return_fast

    .section .text.kswitch.trap, "ax"
    .arm

@ SVC from user mode: already in SVC mode, lr = next instruction. The
@ assembly fast path (`__svc_fast`, `asm/fastpath.s`) takes the commonest
@ calls; it comes back to `__svc_general` having changed nothing for any
@ other call, which then goes through `trap_entry`.
    .global __user_trap_svc
__user_trap_svc:
    SAVE_USER 2, 0
    b       __svc_fast
    .global __svc_general
__svc_general:
    mov     r0, #2
    bl      trap_entry
    @ fall through

@ SVC mode, r0 = the trap frame of the process to run: make it current and
@ resume user mode from it. The shipped build (no `MEASURE`) has no
@ accounting: nine instructions from here to user mode.
    .global __return_to_user
__return_to_user:
    ldr     r1, =__cur_frame
    str     r0, [r1]
    ldr     r2, [r0, #64]
    msr     spsr_cxsf, r2
    .if MEASURE == 0
    ldr     lr, [r0, #60]           @ (before the LDM^: no banked register after it)
    add     r2, r0, #52
    ldmia   r2, {r13, r14}^         @ sp_usr, lr_usr
    ldmia   r0, {r0-r12}
    movs    pc, lr
    .else
    add     r2, r0, #52
    ldmia   r2, {r13, r14}^         @ sp_usr, lr_usr
    ldr     r2, =__board_counter    @ (no banked register right after LDM^)
    @ Time stamp of the return (the board's counter, at the virtual address
    @ `__board_counter` from the generated `board.ld`), three instructions
    @ before user mode: the end of every measured transit, switch tail and
    @ general fault path (`clock::TRANSIT_TAIL_INSTRUCTIONS`).
    ldr     r2, [r2]
    @ Accounting, outside the measured window: `return_accounting(t_out,
    @ frame)` classifies and files the transit, the switch tail and a
    @ general fault resolution (`clock.rs`). r4 keeps the frame
    @ (callee-saved); the call clobbers lr, which is loaded after it.
    mov     r4, r0
    mov     r0, r2
    mov     r1, r4
    bl      return_accounting
    OUT_STAMP                       @ five instructions before user mode
    ldr     lr, [r4, #60]
    ldmia   r4, {r0-r12}
    movs    pc, lr
    .endif

@ __sched_enter(ctx): saves the kernel's callee-saved registers, sp and lr
@ in ctx (10 words), lets `sched_first_frame()` pick the first process and
@ return its frame, and enters user mode. It "returns" when
@ `__sched_leave(ctx)` is called (from a trap, when no process is left).
@ The SVC sp it leaves is the one every trap from user mode runs on: it
@ must be 8-byte aligned (AAPCS), which is checked here once.
    .global __sched_enter
__sched_enter:
    stmia   r0, {r4-r11, r13, r14}
    tst     sp, #7
    bne     1f
    bl      sched_first_frame
    b       __return_to_user
1:  mov     r0, sp
    bl      misaligned_svc_stack

    .global __sched_leave
__sched_leave:
    ldmia   r0, {r4-r11, r13, r14}
    mov     pc, lr                  @ (no BX: StrongARM is ARMv4 without Thumb)
    .ltorg

    .section .data.trap_words, "aw"
    .align  2
    .global __cur_frame
__cur_frame:
    .word   0
    .if MEASURE
    @ The transit's entry (`clock.rs`), written by `SAVE_USER` in one
    @ STMIA, in this order: the frame of the process that trapped, the
    @ trap's kind, the entry stamp, the user's r7.
    .global __in_frame
__in_frame:
    .word   0
    .global __in_kind
__in_kind:
    .word   0
    .global __in_stamp
__in_stamp:
    .word   0
    .global __in_call
__in_call:
    .word   0
    @ The last return's stamp after its accounting (`clock.rs`).
    .global __out_stamp
__out_stamp:
    .word   0
    .endif
