//! Ending the QEMU run: ARM semihosting `SYS_EXIT_EXTENDED`, and the panic
//! handler that ends it with [`EXIT_PANIC`].

/// Every test passed, or the demo ran to its end.
pub const EXIT_OK: u8 = 0;
/// At least one in-kernel test failed (or none ran).
pub const EXIT_TEST_FAILED: u8 = 1;
/// The command line could not be read or named an unknown test.
pub const EXIT_USAGE: u8 = 2;
/// An exception the kernel does not handle (see [`crate::vectors`]).
pub const EXIT_EXCEPTION: u8 = 3;
/// The kernel could not set itself up (e.g. build its page table).
pub const EXIT_SETUP: u8 = 4;
/// A Rust panic.
pub const EXIT_PANIC: u8 = 101;

/// `SYS_EXIT_EXTENDED`.
const SYS_EXIT_EXTENDED: u32 = 0x20;
/// `ADP_Stopped_ApplicationExit`.
const ADP_STOPPED_APPLICATION_EXIT: u32 = 0x20026;

/// Issues a semihosting call: `SVC 0x123456` in ARM state with `op` in r0
/// and `arg` in r1; returns r0.
///
/// # Safety
/// `arg` must be what operation `op` expects (usually the address of a
/// parameter block that stays valid, and writable where the operation
/// writes, for the duration of the call).
pub unsafe fn semihosting(op: u32, arg: u32) -> u32 {
    let ret: u32;
    // SAFETY: the caller guarantees `arg` is valid for `op`; QEMU handles the
    // trap and returns to the next instruction. Should the call reach the
    // SVC vector instead (semihosting disabled) it is reported as fatal there.
    unsafe {
        core::arch::asm!(
            "svc 0x123456",
            inout("r0") op => ret,
            in("r1") arg,
            out("lr") _,
            options(nostack),
        );
    }
    ret
}

/// Ends the QEMU run with exit status `code`.
pub fn exit(code: u8) -> ! {
    let block: [u32; 2] = [ADP_STOPPED_APPLICATION_EXIT, u32::from(code)];
    // SAFETY: `block` is the two-word parameter block SYS_EXIT_EXTENDED reads,
    // alive across the call.
    unsafe {
        semihosting(SYS_EXIT_EXTENDED, block.as_ptr() as u32);
    }
    // Only reached without semihosting: park the CPU (the host's timeout ends the run).
    loop {
        core::hint::spin_loop();
    }
}

#[panic_handler]
fn panic(info: &core::panic::PanicInfo) -> ! {
    defmt::error!("panic: {}", defmt::Display2Format(info));
    exit(EXIT_PANIC)
}
