@ Start-up: runs at the physical load address with the MMU off.
@
@ Builds the first-level translation table (1 MiB sections):
@   - identity map of the MiB holding this code (needed across the MMU switch-on);
@   - the board's RAM (__ram_mib MiB from __ram_phys) again at
@     __ram_phys + KERNEL_VIRT_OFFSET (0xC0000000 on every board), where the
@     kernel is linked;
@   - the board's device MiBs (__board_dev0.., __board_dev_count of them:
@     console UART, timer, interrupt controller) one after the other from
@     DEVICE_VIRT (0xF0000000), in the kernel's region, out of every FCSE window;
@   - 0xFFF00000 through a coarse table whose only entry maps the high-vector
@     page 0xFFFF0000 onto the physical page of `.vectors`.
@   - with the feature `cache-check`, the marker window: 16 uncached
@     sections from 0xE0000000 onto the first 16 RAM MiBs (`MARKER_WINDOW`).
@ All in domain 0 (client), AP=01 (privileged read/write, no user access).
@ Then sets DACR, TTBR and FCSEIDR, enables the MMU with high vectors, and
@ jumps to `_start_high` (linked high). The D- and I-caches stay off here
@ (SCTLR.C and SCTLR.I cleared): `mmu::init` turns them on once the
@ kernel's own table, with its final attributes, is live.

    .equ SECT_DEVICE, 0x412          @ AP=01, domain 0, bit 4, section, C=B=0
    .equ SECT_RAM,    0x41E          @ as above, C=B=1 (write-back, once the caches are on)
    .equ COARSE,      0x011          @ domain 0, bit 4, coarse table
    .equ SMALL_RAM,   0x55E          @ AP0..AP3=01, C=B=1, small page
    .equ SCTLR_M,     0x0001
    .equ SCTLR_A,     0x0002
    .equ SCTLR_C,     0x0004
    .equ SCTLR_S,     0x0100
    .equ SCTLR_R,     0x0200
    .equ SCTLR_I,     0x1000
    .equ SCTLR_V,     0x2000

    .section .boot.text, "ax"
    .arm
    .global _start
_start:
    msr     cpsr_c, #0xD3           @ SVC mode, IRQ and FIQ masked

    ldr     r7, =__kernel_virt_offset
    ldr     r4, =__l1_table
    sub     r4, r4, r7              @ r4 = physical address of the L1 table
    ldr     r5, =__vectors_l2
    sub     r5, r5, r7              @ r5 = physical address of the coarse table

    @ Zero the L1 table (16 KiB) and the coarse table (1 KiB).
    mov     r0, #0
    mov     r1, r4
    add     r2, r4, #0x4000
1:  str     r0, [r1], #4
    cmp     r1, r2
    blo     1b
    mov     r1, r5
    add     r2, r5, #0x400
1:  str     r0, [r1], #4
    cmp     r1, r2
    blo     1b

    ldr     r6, =SECT_RAM

    @ Identity section for the MiB this code runs from.
    adr     r0, _start
    mov     r0, r0, lsr #20
    orr     r1, r6, r0, lsl #20
    str     r1, [r4, r0, lsl #2]

    @ RAM at __ram_phys + KERNEL_VIRT_OFFSET: __ram_mib sections from __ram_phys.
    ldr     r0, =__ram_phys
    ldr     r2, =__ram_mib
    add     r3, r0, r7               @ the linear map's virtual base
    add     r3, r4, r3, lsr #18      @ &L1[base >> 20]
    mov     r8, #0
1:  add     r1, r0, r8, lsl #20
    orr     r1, r1, r6
    str     r1, [r3, r8, lsl #2]
    add     r8, r8, #1
    cmp     r8, r2
    blo     1b

    @ The board's device MiBs at DEVICE_VIRT, one after the other.
    adr     r0, board_devices
    ldr     r3, =__board_dev_count
    ldr     r2, =(0xF00 * 4)
    ldr     r6, =SECT_DEVICE
1:  subs    r3, r3, #1
    blo     2f
    ldr     r1, [r0], #4
    orr     r1, r1, r6
    str     r1, [r4, r2]
    add     r2, r2, #4
    b       1b
2:
    MARKER_WINDOW r4                @ cache-check builds only (`marker.rs`)

    @ High vectors: L1[0xFFF] -> coarse table; coarse[0xF0] -> vector page.
    orr     r1, r5, #COARSE
    ldr     r2, =(0xFFF * 4)
    str     r1, [r4, r2]
    ldr     r1, =__vectors_start
    sub     r1, r1, r7
    ldr     r2, =SMALL_RAM
    orr     r1, r1, r2
    str     r1, [r5, #(0xF0 * 4)]

    mov     r0, #0
    mcr     p15, 0, r0, c7, c7, 0   @ invalidate I and D caches
    mcr     p15, 0, r0, c7, c10, 4  @ drain write buffer
    mcr     p15, 0, r0, c8, c7, 0   @ invalidate TLBs
    mcr     p15, 0, r0, c13, c0, 0  @ FCSE PID 0
    mov     r0, #1                  @ domain 0: client, all others: no access
    mcr     p15, 0, r0, c3, c0, 0
    mcr     p15, 0, r4, c2, c0, 0   @ TTBR

    mrc     p15, 0, r0, c1, c0, 0
    bic     r0, r0, #(SCTLR_A | SCTLR_C)
    bic     r0, r0, #(SCTLR_S | SCTLR_R)
    bic     r0, r0, #SCTLR_I
    orr     r0, r0, #SCTLR_M
    orr     r0, r0, #SCTLR_V
    mcr     p15, 0, r0, c1, c0, 0
    @ CPWAIT (harmless on ARM926, needed on XScale).
    mrc     p15, 0, r0, c2, c0, 0
    mov     r0, r0
    sub     pc, pc, #4
    MARK_MRC r1, r0, 2, 0, 0        @ the TTBR just read (MMU on by now)

    ldr     pc, =_start_high
    .ltorg

@ The board's device MiBs (physical, from the generated `board.ld`).
board_devices:
    .word   __board_dev0, __board_dev1, __board_dev2, __board_dev3

@ Runs at the high virtual address with the MMU on.
    .section .text._start_high, "ax"
    .arm
    .global _start_high
_start_high:
    msr     cpsr_c, #0xD1           @ FIQ
    ldr     sp, =__fiq_stack_top
    msr     cpsr_c, #0xD2           @ IRQ
    ldr     sp, =__irq_stack_top
    msr     cpsr_c, #0xD7           @ abort
    ldr     sp, =__abt_stack_top
    msr     cpsr_c, #0xDB           @ undefined
    ldr     sp, =__und_stack_top
    msr     cpsr_c, #0xDF           @ system (shares the user registers)
    ldr     sp, =__sys_stack_top
    msr     cpsr_c, #0xD3           @ back to SVC
    ldr     sp, =__svc_stack_top

    @ Zero .bss.
    ldr     r0, =__sbss
    ldr     r1, =__ebss
    mov     r2, #0
1:  cmp     r0, r1
    strlo   r2, [r0], #4
    blo     1b

    mov     fp, #0
    mov     lr, #0
    bl      kmain
2:  b       2b
    .ltorg
