@ The assembly fast path of the commonest system calls: YIELD, SEND and
@ CALL to a receiver waiting in RECV, REPLY and REPLY_WAIT to a caller
@ waiting for the reply; the common queued cases of a busy server: a CALL
@ to a server that is running or preempted (the caller queued, the next
@ ready process runs), a RECV with no sender queued (the caller blocks),
@ a REPLY_WAIT that takes the next queued caller at once (no switch); and
@ of the timer's preemption (`__irq_fast`,
@ its contract at `__irq_preempt_*` below: the same registers, entered
@ from `__user_trap_irq` after SAVE_USER, falling back to `__irq_general`
@ before the tick and to `fast_irq_decide` after it). Assembled by `proc/fastpath.rs` (global_asm!
@ with operands: every name in single braces below is an offset, a
@ constant or the kernel's symbol computed there from the Rust types,
@ with the layout checks; literal braces, as in register lists, are
@ therefore doubled).
@
@ Contract.
@ Entered by `b __svc_fast` from `__user_trap_svc` (`asm/trap.s`) right
@ after `SAVE_USER`: SVC mode, IRQ/FIQ masked, the user's r0-r14, pc and
@ CPSR saved in the current process's frame (`*__cur_frame`), the entry
@ stamp taken. Registers: r0 = that frame (= the process's record:
@ `Proc::ctx` is its first field), r7 = the user's r7, the system-call
@ number (never changed by SAVE_USER); everything else is free (the
@ frame holds the user's values), sp is the SVC stack and stays as it is.
@ `__svc_fast` loads the kernel's head for the handlers (LOAD_HEAD: r4 =
@ the kernel, r1 = cur, r2/r3 = the ready set, r9 = `Kernel::gen`); a
@ handler may use them until it calls into Rust.
@ Nothing is pushed: no call is made.
@ Either it does the whole call and switches (`__fast_switch`, then
@ `__return_to_user` with r0 = the next frame) or, before it has written anything, it
@ branches to `__svc_general`, which takes the call through `trap_entry`
@ (Rust) exactly as if the fast path did not exist: no receiver waiting,
@ a bad argument, a process that is not ready, a sender queued on a
@ REPLY_WAIT other than a lone caller's CALL, a SEND to a busy receiver,
@ a switch record of an older generation, the caller alone.
@ What it relies on from the Rust side (checked where it can be, in
@ `proc/fastpath.rs`):
@ * `kernel::KERNEL` holds the running kernel at the static's address and
@   `Kernel::current` is `Some(cur)` while user mode runs (`Option<usize>`:
@   tag word then value, checked), cur = the frame's slot;
@ * the ready set (`sched::ReadySet`) is two words, slot i at bit i & 31
@   of word i >> 5, holding exactly the runnable processes (`set_state`);
@   the state's tag is the first byte of `State` (`repr(u8)`), `Reply`'s
@   `from` the halfword after it;
@ * `Proc::fast` is the process's switch record: `gen` equal to
@   `Kernel::gen` means its values are still right (every change that
@   could make them wrong moves `Kernel::gen`; gen 0 never matches). FASS:
@   the DACR and FCSEIDR `fass` last wrote for the process (no recycle,
@   release, flush, segment or space change since). Naive and FCSE-only:
@   the TTBR and FCSEIDR of the strategy's own precomputed switch
@   (`fass::LeanSwitch`, valid while the strategy's generation stays),
@   whose maintenance the switch does here: FCSE-only a TLB invalidation,
@   naive the cache clean+invalidate (`fast_flush_caches`, the one call
@   into Rust, the board CPU's whole-cache method) and a TLB invalidation;
@ * IPC links (`ipc::Links`) are slot numbers as bytes, 255 = none.
@ It does what the Rust short path (`Kernel::svc_fast` and
@ `Kernel::switch_ready`'s lean branch) does, field for field: the same
@ counters, states, ready bits, links, delivered registers, switch
@ registers and switch-tail stamp. `fass`'s idea of the running space
@ (and, per-table, its counters of the switches: `fass::AppliedLean`) is
@ brought up to date later (`Kernel::sync`), as after the Rust lean
@ switch; the register writes and TLB invalidations are counted by
@ `Counters::lean_switches` (`Kernel::mark_now`).

@ Ordinary kernel text, not the switch page (`.text.kswitch`, which the
@ TCM scenario moves into ITCM): that page is full with `trap_entry`.
    .if {v5te} == 0
    @ Bit index of 2^i from (2^i * 0x077CB531) >> 27 (a de Bruijn sequence).
    .section .rodata.fastpath, "a"
__fast_debruijn:
    .byte   0, 1, 28, 2, 29, 14, 24, 3, 30, 22, 20, 15, 25, 17, 4, 8
    .byte   31, 27, 13, 23, 21, 19, 16, 7, 26, 12, 18, 6, 11, 5, 10, 9
    .endif

    .section .text.fastpath, "ax"
    .arm
@ The board's free-running counter (at the virtual address
@ `__board_counter` from the generated `board.ld`) into \rd: the one
@ place this file reads it (the switch tail's start, `clock::SwitchClock`).
@ Measuring build only (`{measure}`, the kernel's `measure` feature): the
@ shipped kernel reads no counter and files no transit.
.macro READ_COUNTER rd
    .if {measure}
    ldr     \rd, =__board_counter
    ldr     \rd, [\rd]
    .endif
.endm

@ The kernel's head: `Kernel` is `repr(C)` with the lean path's fields
@ first, so that `current`'s value, the ready set's two words, `gen` and
@ `svc_table` are the five words from offset 4 on (the layout of today;
@ the two macros below check it and fall back to single loads and stores
@ if it changes). LOAD_HEAD reads them with one LDMIB: r1 = cur,
@ r2 and r3 = the ready set's low and high words, r9 = gen, and with
@ \table = 1 r12 = this mode's dispatch table. Every handler is entered
@ with them (from `__svc_fast`); the IRQ handler reloads them after its
@ call into Rust.
.macro LOAD_HEAD table
    .if ({k_cur} == 4) && ({k_ready} == 8) && ({k_gen} == 16) && ({k_svc_table} == 20)
    .if \table
    ldmib   r4, {{r1, r2, r3, r9, r12}}
    .else
    ldmib   r4, {{r1, r2, r3, r9}}
    .endif
    .else
    ldr     r1, [r4, #{k_cur}]
    LOAD_PAIR r2, r3, r4, {k_ready}
    ldr     r9, [r4, #{k_gen}]
    .if \table
    ldr     r12, [r4, #{k_svc_table}]
    .endif
    .endif
.endm
@ The ready set \ra, \rb back, \rc = cur (`current`'s value, unchanged):
@ with the head layout one STMIB that rewrites cur with itself.
.macro STORE_READY rc, ra, rb
    .if ({k_cur} == 4) && ({k_ready} == 8) && ({k_gen} == 16) && ({k_svc_table} == 20)
    stmib   r4, {{\rc, \ra, \rb}}
    .else
    STORE_PAIR \ra, \rb, r4, {k_ready}
    .endif
.endm

@ The CPU's instruction set: `{v5te}` is 1 on ARMv5TE (ARM926EJ-S,
@ XScale), 0 on ARMv4 (StrongARM SA-1110), which has no CLZ, LDRD or
@ STRD. These three macros are the only places that differ.
@ Two consecutive words at [\base, #\off] into \ra, \rb (IRQs are
@ masked, so two loads are as good as one LDRD). With \rp (ARMv4 only):
@ rp = base + off and one LDMIA, for a STORE_PAIR with the same \rp
@ after it (an ADD, an LDM and an STM instead of four transfers).
.macro LOAD_PAIR ra, rb, base, off, rp
    .if {v5te}
    ldrd    \ra, \rb, [\base, #\off]
    .else
    .ifb \rp
    ldr     \ra, [\base, #\off]
    ldr     \rb, [\base, #(\off + 4)]
    .else
    add     \rp, \base, #\off
    ldmia   \rp, {{\ra, \rb}}
    .endif
    .endif
.endm
@ \ra, \rb into two consecutive words at [\base, #\off] (with \rp: the
@ address LOAD_PAIR left there, ARMv4 only).
.macro STORE_PAIR ra, rb, base, off, rp
    .if {v5te}
    strd    \ra, \rb, [\base, #\off]
    .else
    .ifb \rp
    str     \ra, [\base, #\off]
    str     \rb, [\base, #(\off + 4)]
    .else
    stmia   \rp, {{\ra, \rb}}
    .endif
    .endif
.endm
@ \rd = \add + the index of the one bit set in \rs (a power of two).
@ Clobbers \rs; on ARMv4 also r8 and r11 (a de Bruijn multiply and a
@ 32-byte table lookup instead of CLZ).
.macro BIT_INDEX rd, rs, add
    .if {v5te}
    clz     \rs, \rs
    rsb     \rd, \rs, #(31 + \add)
    .else
    ldr     r8, =0x077CB531
    mul     r11, \rs, r8
    ldr     r8, =__fast_debruijn
    ldrb    \rd, [r8, r11, lsr #27]
    .if \add
    add     \rd, \rd, #\add
    .endif
    .endif
.endm

@ The entry (after the macros it uses).
    .global __svc_fast
__svc_fast:
    ldr     r4, ={kernel}                 @ the kernel
    LOAD_HEAD 1                           @ r1-r3, r9 and the dispatch table r12
    cmp     r7, #{svc_table_len}
    ldrlo   pc, [r12, r7, lsl #2]
    b       __svc_general

@ The last check before a handler commits, r6 = next, r10 + pr_* = its
@ record, r0 = cur's frame: next's record is of this generation
@ (`Proc::fast`; applied in SWITCH_REGS), in every mode. \gen: a register
@ holding `Kernel::gen` (from LOAD_HEAD), or blank to load it here.
.macro RECORD_SWITCH m, fail=__svc_general, gen
    ldr     r8, [r10, #{pr_gen}]
    .ifb \gen
    ldr     r9, [r4, #{k_gen}]
    cmp     r8, r9
    .else
    cmp     r8, \gen                      @ `Kernel::gen`, from LOAD_HEAD
    .endif
    bne     \fail                         @ no record of this generation
.endm

@ The switch itself, from next's record (r10 + pr_*), and the switch
@ tail's stamp (`clock::SwitchClock`, taken before it). FASS: DACR and
@ FCSEIDR. FCSE-only: TTBR, the whole TLB invalidated, FCSEIDR. Naive:
@ the caches cleaned and invalidated (`fast_flush_caches`: a call, which
@ keeps r4-r11 (AAPCS) and needs the SVC stack 8-byte aligned, as it is:
@ nothing pushed; r0-r3, r12 and lr are free here), TTBR, the whole TLB
@ invalidated. The same CP15 operations, in the same order, as
@ `fass`'s switch of the strategy (`TableSwitch::switch_lean`). With the
@ feature `cache-check` each is preceded by its marker (`asm/marker.s`,
@ scratch r8) and the new space (r6) is reported after them.
@ Clobbers r0-r3, r8, r9 (and, naive, r12 and lr).
.macro SWITCH_REGS m
    .ifc \m, fass
    ldr     r2, [r10, #{pr_dacr}]
    ldr     r3, [r10, #{pr_fcseidr}]
    READ_COUNTER r9                       @ the switch tail's start (measuring)
    MARK_MCR r8, r2, 3, 0, 0
    mcr     p15, 0, r2, c3, c0, 0         @ DACR
    MARK_MCR r8, r3, 13, 0, 0
    mcr     p15, 0, r3, c13, c0, 0        @ FCSEIDR
    .else
    READ_COUNTER r9                       @ the switch tail's start (measuring)
    .ifc \m, naive
    bl      fast_flush_caches             @ D-cache clean+invalidate, I-cache
    .endif
    ldr     r2, [r10, #{pr_ttbr}]
    mov     r1, #0
    MARK_MCR r8, r2, 2, 0, 0
    mcr     p15, 0, r2, c2, c0, 0         @ TTBR
    MARK_MCR r8, r1, 8, 7, 0
    mcr     p15, 0, r1, c8, c7, 0         @ invalidate the TLB
    .ifc \m, fcse
    ldr     r3, [r10, #{pr_fcseidr}]
    MARK_MCR r8, r3, 13, 0, 0
    mcr     p15, 0, r3, c13, c0, 0        @ FCSEIDR
    .endif
    .endif
    MARK_EVENT r8, r6, 3                  @ cache check: space r6 runs
    .if {measure}
    mov     r8, #1
    STORE_PAIR r8, r9, r4, {k_t0_tag}     @ Some(t0)
    .endif
.endm

@ SEND, CALL and SEND_RECV: r5 = cur, r6 = dest = the caller's r0, r10 +
@ pr_* = dest's record; taken here only if dest waits in RECV, else
@ \notrecv with r8 = dest's state tag (default: the Rust path, before
@ anything is written; no such slot: ESRCH; not in RECV: dead, busy, or
@ cur itself).
.macro DEST_IN_RECV notrecv=__svc_general
    ldr     r5, [r4, #{k_cur}]            @ cur
    ldr     r6, [r0]
    cmp     r6, #{max_procs}
    bhs     __svc_general                 @ no such slot: ESRCH (Rust)
    ldr     r10, ={proc_size}
    mla     r10, r6, r10, r4
    ldrb    r8, [r10, #{pr_state}]
    cmp     r8, #{st_recv}
    bne     \notrecv                      @ not in RECV (r8 = its state)
.endm

@ The message to dest (r6, r10 + pr_*) from cur (r5, its frame r0):
@ dest's r0 = cur, r1-r3 = cur's r1-r3, counted, dest's state Ready (its
@ ready bit is the handler's). Clobbers r8, r9, r11, r12.
.macro DELIVER
    ldmib   r0, {{r8, r9, r12}}
    add     r11, r10, #{k_procs}
    stmia   r11, {{r5, r8, r9, r12}}
    ldr     r8, [r4, #{k_messages}]
    add     r8, r8, #1
    str     r8, [r4, #{k_messages}]
    mov     r8, #{st_ready}
    strb    r8, [r10, #{pr_state}]
.endm

@ For a caller that blocks (a queued CALL, a RECV with no sender queued):
@ the first ready slot after cur (r1) in the ready set r2/r3 from which
@ cur has been taken out, round robin as YIELD's pick
@ (`ReadySet::next_after`, the scheduler's choice after a blocking call):
@ r6 = next, r10 + pr_* = its record, which is ready (not in a TCM call)
@ and of this generation (r9 = `Kernel::gen`); \stale if it is ready but
@ its record is of an older generation (r6, r10 set: only the switch needs
@ the Rust path); else \fail. Writes nothing; clobbers r8, r11, r12.
.macro PICK_AFTER_CUR m, fail, stale
    mvn     r8, #1
    ands    r12, r2, r8, lsl r1           @ low word above cur (none if cur >= 32)
    bne     72f
    orrs    r12, r3, r1, lsr #5
    bne     75f                           @ a high word, or cur in it
    movs    r12, r2                       @ wrapped: the lowest slot
    beq     \fail                         @ nobody ready
72: rsb     r8, r12, #0                   @ lowest bit of the low word r12
    and     r12, r12, r8
    BIT_INDEX r6, r12, 0
74: ldr     r10, ={proc_size}
    mla     r10, r6, r10, r4              @ r10 + pr_*: next's record
    ldrb    r8, [r10, #{pr_state}]
    cmp     r8, #{st_ready}
    bne     \fail                         @ in a TCM call: the scheduler continues it
    RECORD_SWITCH \m, \stale, r9
    b       76f
75: subs    r11, r1, #32
    movlo   r12, r3                       @ cur < 32: the high word is above it
    andhs   r12, r3, r8, lsl r11          @ cur >= 32: high word above cur
    cmp     r12, #0
    bne     73f
    movs    r12, r2                       @ wrapped
    bne     72b
    movs    r12, r3
    beq     \fail
73: rsb     r8, r12, #0                   @ lowest bit of the high word r12
    and     r12, r12, r8
    BIT_INDEX r6, r12, 32
    b       74b
76:
.endm

@ The queued CALL decided (below, label 80): cur waits in
@ State::Call {{ dest = r7, msg = its r1-r3 }}, out of the ready set
@ (r2/r3 without it, r1 = cur), at the tail of dest's send queue (lr +
@ pr_*: dest's record; `Kernel::enqueue_sender`: a running process is in
@ no list, its next is none already). r5 = cur. Clobbers r8, r9, r11, r12.
.macro COMMIT_CALL
    ldmib   r0, {{r8, r11, r12}}
    add     r9, r0, #{p_call_msg}
    stmia   r9, {{r8, r11, r12}}
    mov     r8, #{st_call}
    strb    r8, [r0, #{p_state}]
    strh    r7, [r0, #{p_call_dest}]
    STORE_READY r1, r2, r3
    ldrb    r8, [lr, #{pr_link_send_tail}]
    strb    r5, [lr, #{pr_link_send_tail}]
    cmp     r8, #{link_none}
    strbeq  r5, [lr, #{pr_link_send_head}]
    beq     86f
    ldr     r9, ={proc_size}
    mla     r9, r8, r9, r4
    strb    r5, [r9, #{pr_link_next}]     @ after the old tail
86:
.endm

@ The handlers of one mode (`fass`, `fcse` or `naive`): YIELD, SEND/CALL,
@ RECV, REPLY/REPLY_WAIT, and their switch.
.macro HANDLERS m
@ YIELD: the first ready slot after cur, round robin (`ReadySet::next_after`).
    .global __svc_yield_\m
@ From LOAD_HEAD: r1 = cur, r2/r3 = the ready set, r9 = gen.
__svc_yield_\m:
    mvn     r8, #1
    ands    r12, r2, r8, lsl r1           @ low word above cur (none if cur >= 32)
    bne     2f
    orrs    r12, r3, r1, lsr #5
    bne     5f                            @ a high word, or cur in it
    movs    r12, r2                       @ wrapped: the lowest slot
    beq     __svc_general
2:  rsb     r8, r12, #0                   @ lowest bit of the low word r12
    and     r12, r12, r8
    BIT_INDEX r6, r12, 0
4:  cmp     r6, r1
    beq     __svc_general                 @ cur alone: no switch (Rust)
    ldr     r10, ={proc_size}
    mla     r10, r6, r10, r4              @ r10 + pr_*: next's record
    ldrb    r8, [r10, #{pr_state}]
    cmp     r8, #{st_ready}
    bne     __svc_general                 @ in a TCM call: the scheduler continues it
    RECORD_SWITCH \m, gen=r9
    mov     r8, #0
    str     r8, [r0]                      @ YIELD returns 0
    b       __fast_switch_\m
5:  subs    r11, r1, #32
    movlo   r12, r3                       @ cur < 32: the high word is above it
    andhs   r12, r3, r8, lsl r11          @ cur >= 32: high word above cur
    cmp     r12, #0
    bne     3f
    movs    r12, r2                       @ wrapped
    bne     2b
    movs    r12, r3
    beq     __svc_general
3:  rsb     r8, r12, #0                   @ lowest bit of the high word r12
    and     r12, r12, r8
    BIT_INDEX r6, r12, 32
    b       4b

@ SEND / CALL to dest = the caller's r0, taken here if dest waits in
@ RECV (`Kernel::ipc_send`'s hand-off), and a CALL to a dest that is
@ ready (running or preempted: a server busy with another caller) at 80
@ below (queued); anything else the Rust path.
    .global __svc_send_\m
__svc_send_\m:
    DEST_IN_RECV 80f
    RECORD_SWITCH \m, gen=r9
    DELIVER
    @ dest into the ready set (a shift by 32 or more gives 0); r2, r3
    @ and r1 = cur from LOAD_HEAD still (no call was made).
    mov     r8, #1
    orr     r2, r2, r8, lsl r6
    subs    r9, r6, #32
    orrhs   r3, r3, r8, lsl r9
    cmp     r7, #{nr_call}
    beq     20f
    @ SEND: cur stays ready and gets 0.
    STORE_READY r1, r2, r3
    mov     r8, #0
    str     r8, [r0]
    b       __fast_switch_\m
    @ CALL: cur out of the ready set, waiting for dest's reply
    @ (`State::Reply {{ from: dest }}`), first in dest's reply list.
20: bic     r2, r2, r8, lsl r5
    subs    r9, r5, #32
    bichs   r3, r3, r8, lsl r9
    STORE_READY r1, r2, r3
    mov     r8, #{st_reply}
    strb    r8, [r0, #{p_state}]
    strh    r6, [r0, #{p_reply_from}]
    @ (A running process is in no list: its next and prev are none
    @ already; `ipc.rs` clears them on every dequeue and unlink.)
    ldrb    r9, [r10, #{pr_link_reply_head}]
    cmp     r9, #{link_none}
    bne     22f                           @ another caller waits already
21: strb    r5, [r10, #{pr_link_reply_head}]
    b       __fast_switch_\m
22: strb    r9, [r0, #{p_link_next}]
    ldr     r8, ={proc_size}
    mla     r8, r9, r8, r4
    strb    r5, [r8, #{pr_link_prev}]
    b       21b

@ SEND_RECV to dest = the caller's r0, taken here only if dest waits in
@ RECV and no sender is queued on cur (`Kernel::ipc_send_recv`'s
@ hand-off, then `Kernel::ipc_recv` without a sender): dest gets the
@ message and runs, cur waits in RECV (its r0-r3 are written by the
@ message it receives). A one-way transit.
    .global __svc_send_recv_\m
__svc_send_recv_\m:
    DEST_IN_RECV
    ldrb    r8, [r0, #{p_link_send_head}]
    cmp     r8, #{link_none}
    bne     __svc_general                 @ a sender queued on cur (Rust)
    RECORD_SWITCH \m, gen=r9
    DELIVER
    mov     r8, #{st_recv}
    strb    r8, [r0, #{p_state}]
    @ dest into the ready set, cur out of it (a shift by 32 or more gives
    @ 0); r2, r3 and r1 = cur from LOAD_HEAD still.
    mov     r8, #1
    orr     r2, r2, r8, lsl r6
    subs    r9, r6, #32
    orrhs   r3, r3, r8, lsl r9
    bic     r2, r2, r8, lsl r5
    subs    r9, r5, #32
    bichs   r3, r3, r8, lsl r9
    STORE_READY r1, r2, r3
    b       __fast_switch_\m

@ REPLY / REPLY_WAIT to the caller = cur's r0, which must wait for cur's
@ reply (`Kernel::ipc_reply`); REPLY_WAIT only if no sender is queued on
@ cur (then cur waits in RECV: `Kernel::ipc_recv` without a sender).
    .global __svc_reply_\m
__svc_reply_\m:
    ldr     r5, [r4, #{k_cur}]            @ cur
    ldr     r6, [r0]
    cmp     r6, #{max_procs}
    bhs     __svc_general                 @ ESRCH (Rust)
    ldr     r10, ={proc_size}
    mla     r10, r6, r10, r4
    add     r11, r10, #{k_procs}          @ the caller's record
    ldrb    r8, [r11, #{p_state}]
    cmp     r8, #{st_reply}
    bne     __svc_general                 @ not waiting for a reply: ESRCH (Rust)
    ldrh    r8, [r11, #{p_reply_from}]
    cmp     r8, r5
    bne     __svc_general                 @ waiting for another server: ESRCH (Rust)
    cmp     r7, #{nr_reply_wait}
    bne     31f
    ldrb    r8, [r0, #{p_link_send_head}]
    cmp     r8, #{link_none}
    bne     50f                           @ REPLY_WAIT with a sender queued
31: RECORD_SWITCH \m, gen=r9
    @ The caller into the ready set; REPLY returns 0, REPLY_WAIT takes
    @ cur out of it, waiting in RECV. r2, r3 and r1 = cur from
    @ LOAD_HEAD still (no call was made).
    mov     r8, #1
    orr     r2, r2, r8, lsl r6
    subs    r9, r6, #32
    orrhs   r3, r3, r8, lsl r9
    cmp     r7, #{nr_reply_wait}
    beq     35f
    mov     r8, #0
    str     r8, [r0]                      @ REPLY returns 0
    b       36f
35: bic     r2, r2, r8, lsl r5            @ REPLY_WAIT: cur waits in RECV
    subs    r9, r5, #32
    bichs   r3, r3, r8, lsl r9
    mov     r8, #{st_recv}
    strb    r8, [r0, #{p_state}]
36:
    STORE_READY r1, r2, r3
    @ The caller out of cur's reply list (`Kernel::unlink_reply`); the
    @ common case, the only caller waiting, without a neighbour to fix.
    ldrb    r2, [r11, #{p_link_next}]
    ldrb    r3, [r11, #{p_link_prev}]
    cmp     r3, #{link_none}
    bne     38f                           @ not the first in the list
    strb    r2, [r0, #{p_link_reply_head}]
    cmp     r2, #{link_none}
    bne     39f                           @ not the last in the list
37:
    @ The reply: the caller's r0 = 0, r1-r3 = cur's r1-r3; it is ready.
    ldmib   r0, {{r8, r9, r12}}
    mov     r1, #0
    stmia   r11, {{r1, r8, r9, r12}}
    mov     r8, #{st_ready}
    strb    r8, [r11, #{p_state}]
    LOAD_PAIR r2, r3, r4, {k_round_trips}, r1 @ round_trips, messages
    add     r2, r2, #1
    add     r3, r3, #1
    STORE_PAIR r2, r3, r4, {k_round_trips}, r1

@ The switch (`Kernel::switch_ready`'s lean branch) and the counters
@ common to every fast call. r0 = cur's frame, r4 = the kernel, r6 =
@ next, r10 + pr_* = next's record.
__fast_switch_\m:
    ldr     r8, [r0, #{p_syscalls}]
    add     r8, r8, #1
    str     r8, [r0, #{p_syscalls}]
    add     r8, r4, #{k_counters}
    ldmia   r8, {{r1, r2, r3}}            @ switches, lean_switches, syscalls
    add     r1, r1, #1
    add     r2, r2, #1
    add     r3, r3, #1
    stmia   r8, {{r1, r2, r3}}
95: SWITCH_REGS \m
    str     r6, [r4, #{k_cur}]
    add     r0, r10, #{k_procs}
    b       __return_to_user

@ The same for a preemption: no system call to count.
__fast_switch_irq_\m:
    add     r8, r4, #{k_counters}
    ldmia   r8, {{r1, r2}}                @ switches, lean_switches
    add     r1, r1, #1
    add     r2, r2, #1
    stmia   r8, {{r1, r2}}
    b       95b

@ Timer IRQ from user mode (`Kernel::irq_fast`), entered from
@ `__irq_fast` with r0 = cur's frame (pc and CPSR saved), r4 = the kernel,
@ in SVC mode: the tick (`fast_irq_tick`: acknowledge, count, the kernel
@ job's step) in Rust, then round robin as YIELD's pick; a preemption
@ that cannot be switched here is decided by `fast_irq_decide` (Rust),
@ which continues after the tick.
    .global __irq_preempt_\m
__irq_preempt_\m:
    mov     r11, r0
    bl      fast_irq_tick
    cmp     r0, #0
    mov     r0, r11
    beq     __irq_general                 @ not the timer: nothing done (Rust)
    LOAD_HEAD 0                           @ after the tick: r1 = cur, r2/r3, r9 = gen
    mvn     r8, #1
    ands    r12, r2, r8, lsl r1
    bne     62f
    orrs    r12, r3, r1, lsr #5
    bne     65f
    movs    r12, r2
    beq     69f
62: rsb     r8, r12, #0
    and     r12, r12, r8
    BIT_INDEX r6, r12, 0
64: cmp     r6, r1
    beq     69f                           @ cur alone: no preemption
    ldr     r10, ={proc_size}
    mla     r10, r6, r10, r4
    ldrb    r8, [r10, #{pr_state}]
    cmp     r8, #{st_ready}
    bne     69f
    RECORD_SWITCH \m, 69f, r9
    ldr     r8, [r4, #{k_preemptions}]
    add     r8, r8, #1
    str     r8, [r4, #{k_preemptions}]
    b       __fast_switch_irq_\m
65: subs    r11, r1, #32
    movlo   r12, r3
    andhs   r12, r3, r8, lsl r11
    cmp     r12, #0
    bne     63f
    movs    r12, r2
    bne     62b
    movs    r12, r3
    beq     69f
63: rsb     r8, r12, #0
    and     r12, r12, r8
    BIT_INDEX r6, r12, 32
    b       64b
69: bl      fast_irq_decide
    b       __return_to_user

    @ The caller has neighbours in the list: link them to each other and
    @ clear its own links (the common case above leaves them both none).
38: ldr     r8, ={proc_size}
    mla     r8, r3, r8, r4
    strb    r2, [r8, #{pr_link_next}]
    cmp     r2, #{link_none}
    beq     40f
39: ldr     r8, ={proc_size}
    mla     r8, r2, r8, r4
    strb    r3, [r8, #{pr_link_prev}]
40: mov     r8, #{link_none}
    strb    r8, [r11, #{p_link_next}]
    strb    r8, [r11, #{p_link_prev}]
    b       37b

@ REPLY_WAIT with a sender queued on cur (`Kernel::ipc_reply`, then
@ `Kernel::ipc_recv` serving the first queued sender): no switch, cur
@ goes on with the next message. Taken here when that sender is in CALL
@ and the caller replied to is alone in cur's reply list (a server
@ answering its callers one at a time); anything else the Rust path,
@ before anything is written. From above: r0 = cur's frame, r1 = r5 =
@ cur, r2/r3 = the ready set, r6 = the caller, r11 = its record, r8 = j,
@ the first sender queued on cur.
50: ldr     r12, ={proc_size}
    mla     r12, r8, r12, r4              @ r12 + pr_*: j's record
    ldrb    r9, [r12, #{pr_state}]
    cmp     r9, #{st_call}
    bne     __svc_general                 @ SEND, SEND_RECV, long: Rust
    ldrb    r9, [r11, #{p_link_next}]
    ldrb    r7, [r11, #{p_link_prev}]
    and     r9, r9, r7
    cmp     r9, #{link_none}
    bne     __svc_general                 @ other callers wait too: Rust
    @ The reply: the caller into the ready set (cur stays in it), its r0 =
    @ 0, r1-r3 = cur's r1-r3, ready. It was alone in cur's reply list
    @ (next and prev none): the list is empty now.
    mov     r9, #1
    orr     r2, r2, r9, lsl r6
    subs    r7, r6, #32
    orrhs   r3, r3, r9, lsl r7
    STORE_READY r1, r2, r3
    ldmib   r0, {{r2, r3, r7}}
    mov     r1, #0
    stmia   r11, {{r1, r2, r3, r7}}
    mov     r7, #{st_ready}
    strb    r7, [r11, #{p_state}]
    @ j off cur's send queue (`Kernel::dequeue_sender`).
    ldrb    r7, [r12, #{pr_link_next}]
    strb    r7, [r0, #{p_link_send_head}]
    cmp     r7, #{link_none}
    strbeq  r7, [r0, #{p_link_send_tail}]
    @ j's message to cur: r0 = j, r1-r3 = its r1-r3 (`Kernel::deliver`).
    add     r9, r12, #{pr_call_msg}
    ldmia   r9, {{r2, r3, r7}}
    mov     r1, r8
    stmia   r0, {{r1, r2, r3, r7}}
    @ j waits for cur's reply (`Kernel::await_reply`), alone in cur's
    @ reply list: its next and prev none, State::Reply {{ from: cur }}.
    mov     r7, #{link_none}
    strb    r7, [r12, #{pr_link_next}]
    strb    r7, [r12, #{pr_link_prev}]
    strb    r8, [r0, #{p_link_reply_head}]
    mov     r7, #{st_reply}
    strb    r7, [r12, #{pr_state}]
    strh    r5, [r12, #{pr_reply_from}]
    @ Counted: one round trip, two messages (the reply and j's), one
    @ system call of cur's; no switch.
    LOAD_PAIR r2, r3, r4, {k_round_trips}, r1
    add     r2, r2, #1
    add     r3, r3, #2
    STORE_PAIR r2, r3, r4, {k_round_trips}, r1
    ldr     r8, [r0, #{p_syscalls}]
    add     r8, r8, #1
    str     r8, [r0, #{p_syscalls}]
    ldr     r8, [r4, #{k_syscalls}]
    add     r8, r8, #1
    str     r8, [r4, #{k_syscalls}]
    b       __return_to_user              @ r0 = cur's frame: cur goes on

@ CALL to a dest that is ready (`Kernel::ipc_send`'s queueing, then the
@ scheduler's round robin, `Kernel::finish`): cur waits in CALL at the
@ tail of dest's send queue and the first ready process after cur runs
@ (YIELD's pick, over the ready set without cur). Everything is decided
@ before anything is written: SEND, a dest in any other state, cur
@ itself or no other ready process go to the Rust path; a next whose
@ record is of an older generation to `fast_blocked_switch` once the
@ call is done (87). From DEST_IN_RECV: r5 = cur, r6 = dest, r8 = its
@ state, r10 + pr_* = its record; r1 = cur, r2/r3, r9 from LOAD_HEAD.
80: cmp     r7, #{nr_call}
    bne     __svc_general                 @ SEND: Rust
    cmp     r8, #{st_ready}
    bne     __svc_general                 @ dest blocked, dead, in a TCM call: Rust
    cmp     r6, r5
    beq     __svc_general                 @ cur itself: EDEADLK (Rust)
    mov     r7, r6                        @ r7 = dest
    mov     lr, r10                       @ lr + pr_*: dest's record
    @ cur out of the ready set (in registers: stored once decided).
    mov     r8, #1
    bic     r2, r2, r8, lsl r5
    subs    r11, r5, #32
    bichs   r3, r3, r8, lsl r11
    PICK_AFTER_CUR \m, __svc_general, 87f
    COMMIT_CALL
    b       __fast_switch_\m
@ The same with next's record of an older generation: the call is done
@ here, the switch (a full one) by `fast_blocked_switch` (Rust), without
@ the general path's decision. Also the blocking RECV's (below).
87: COMMIT_CALL
88: ldr     r8, [r0, #{p_syscalls}]       @ counted as `Kernel::count_syscall`
    add     r8, r8, #1
    str     r8, [r0, #{p_syscalls}]
    ldr     r8, [r4, #{k_syscalls}]
    add     r8, r8, #1
    str     r8, [r4, #{k_syscalls}]
    mov     r0, r6
    bl      fast_blocked_switch           @ the SVC stack as at entry: aligned
    b       __return_to_user

@ RECV with no sender queued on cur (`Kernel::ipc_recv` finding none,
@ then the scheduler's round robin): cur waits in RECV, out of the ready
@ set, and the first ready process after it runs. A sender queued (the
@ message is taken at once) or no ready process to run: the Rust path,
@ before anything is written; a next whose record is of an older
@ generation: `fast_blocked_switch` once cur is blocked (89).
    .global __svc_recv_\m
__svc_recv_\m:
    ldrb    r8, [r0, #{p_link_send_head}]
    cmp     r8, #{link_none}
    bne     __svc_general                 @ a sender queued: Rust
    mov     r8, #1
    bic     r2, r2, r8, lsl r1            @ cur out of the ready set (r1 = cur)
    subs    r11, r1, #32
    bichs   r3, r3, r8, lsl r11
    PICK_AFTER_CUR \m, __svc_general, 89f
    mov     r8, #{st_recv}
    strb    r8, [r0, #{p_state}]
    STORE_READY r1, r2, r3
    b       __fast_switch_\m
89: mov     r8, #{st_recv}                @ next's record is old: as 87 above
    strb    r8, [r0, #{p_state}]
    STORE_READY r1, r2, r3
    b       88b
    .ltorg
.endm

    HANDLERS fass
    HANDLERS fcse
    HANDLERS naive

@ IRQ from user mode, from `__user_trap_irq` (`asm/trap.s`) after
@ `SAVE_USER` (pc and CPSR saved) in SVC mode, r0 = cur's frame: this
@ mode's IRQ handler, the entry after the system calls in its table.
    .global __irq_fast
__irq_fast:
    ldr     r4, ={kernel}
    ldr     r8, [r4, #{k_svc_table}]
    ldr     pc, [r8, #{irq_entry}]
