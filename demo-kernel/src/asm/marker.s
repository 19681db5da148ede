@ Marker accesses for the cache-check QEMU plugin (feature `cache-check`;
@ without it `src/marker.rs` defines these macros empty). The protocol is
@ `mmu_armv5::marker`: two byte loads from the marker window at
@ 0xE0000000, back to back, whose addresses carry a 13-bit key and a
@ 32-bit value:
@   first  = 0xE0000000 | key << 10 | value >> 22
@   second = 0xE0800000 | (value & 0x3FFFFF)
@ issued right before an MCR (the value written) and right after an MRC
@ (the value read), with no other memory access in between. Every macro
@ clobbers only \t (which must differ from \v) and keeps the flags; it
@ needs the MMU on (the window is mapped in the boot and kernel tables).
@ Arguments are plain numbers (CRn 3, not c3), written without spaces.

@ The two loads for raw key \key and the value in \v.
.macro MARK_KEY t, v, key
    mov     \t, \v, lsr #22
    orr     \t, \t, #0xE0000000
    orr     \t, \t, #(((\key)&0xFF)<<10)
    orr     \t, \t, #(((\key)>>8)<<18)
    ldrb    \t, [\t]
    mov     \t, \v, lsl #10
    mov     \t, \t, lsr #10
    orr     \t, \t, #0xE0000000
    orr     \t, \t, #0x00800000
    ldrb    \t, [\t]
.endm
@ Before `MCR p15, 0, \v, c\crn, c\crm, \opc2`.
.macro MARK_MCR t, v, crn, crm, opc2
    MARK_KEY \t, \v, (((\crn)<<7)|((\crm)<<3)|(\opc2))
.endm
@ After `MRC p15, 0, \v, c\crn, c\crm, \opc2`.
.macro MARK_MRC t, v, crn, crm, opc2
    MARK_KEY \t, \v, ((1<<11)|((\crn)<<7)|((\crm)<<3)|(\opc2))
.endm
@ The pseudo event numbered \event (`mmu_armv5::marker::Event`) with the
@ value in \v: 3 = Space (the running address space, a process slot).
.macro MARK_EVENT t, v, event
    MARK_KEY \t, \v, ((1<<12)|(\event))
.endm
@ The marker window in the boot table whose physical address is in \l1
@ (MMU off): 16 sections from 0xE0000000 onto the first 16 RAM MiBs,
@ domain 0, AP=01 (kernel only: ARMv5 has no privileged read-only AP
@ without SCTLR.S), uncached (C=B=0). Clobbers r0, r2, r3.
.macro MARKER_WINDOW l1
    ldr     r0, =__ram_phys
    orr     r0, r0, #0x12
    orr     r0, r0, #0x400
    ldr     r2, =(0xE00*4)
    add     r2, \l1, r2
    mov     r3, #16
1:  str     r0, [r2], #4
    add     r0, r0, #0x100000
    subs    r3, r3, #1
    bne     1b
.endm
