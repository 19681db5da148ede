//! System-call wrappers (`SVC #0`, number in r7, see [`crate::abi`]).

use crate::abi::nr;

/// Issues system call `nr` with arguments r0-r3; returns r0-r3.
#[inline(always)]
pub fn syscall(nr: u32, a: [u32; 4]) -> [u32; 4] {
    let (r0, r1, r2, r3);
    // SAFETY: `SVC #0` traps into the kernel, which checks every argument
    // and returns in r0-r3; no memory of ours is touched except what a call
    // documents (buffers we pass).
    unsafe {
        core::arch::asm!(
            "svc #0",
            inout("r0") a[0] => r0,
            inout("r1") a[1] => r1,
            inout("r2") a[2] => r2,
            inout("r3") a[3] => r3,
            in("r7") nr,
            options(nostack),
        );
    }
    [r0, r1, r2, r3]
}

/// Whether a returned r0 is an error code.
pub fn is_err(r0: u32) -> bool {
    (r0 as i32) < 0
}

/// Ends the process with `code`.
pub fn exit(code: u32) -> ! {
    syscall(nr::EXIT, [code, 0, 0, 0]);
    loop {
        core::hint::spin_loop();
    }
}

/// Gives up the CPU.
pub fn yield_now() {
    syscall(nr::YIELD, [0; 4]);
}

/// Sends `w` to `dest`; returns r0.
pub fn send(dest: u32, w: [u32; 3]) -> u32 {
    syscall(nr::SEND, [dest, w[0], w[1], w[2]])[0]
}

/// Receives: (sender or error, words).
pub fn recv() -> (u32, [u32; 3]) {
    let r = syscall(nr::RECV, [0; 4]);
    (r[0], [r[1], r[2], r[3]])
}

/// Calls `dest` with `w`: (status, reply words).
pub fn call(dest: u32, w: [u32; 3]) -> (u32, [u32; 3]) {
    let r = syscall(nr::CALL, [dest, w[0], w[1], w[2]]);
    (r[0], [r[1], r[2], r[3]])
}

/// Replies `w` to `dest`; returns r0.
pub fn reply(dest: u32, w: [u32; 3]) -> u32 {
    syscall(nr::REPLY, [dest, w[0], w[1], w[2]])[0]
}

/// Replies `w` to `dest`, then receives: (sender or error, words).
pub fn reply_wait(dest: u32, w: [u32; 3]) -> (u32, [u32; 3]) {
    let r = syscall(nr::REPLY_WAIT, [dest, w[0], w[1], w[2]]);
    (r[0], [r[1], r[2], r[3]])
}

/// Sends `w` to `dest`, then receives, in one call: (sender or error,
/// words).
pub fn send_recv(dest: u32, w: [u32; 3]) -> (u32, [u32; 3]) {
    let r = syscall(nr::SEND_RECV, [dest, w[0], w[1], w[2]]);
    (r[0], [r[1], r[2], r[3]])
}

/// Maps `len` bytes of private zeroed pages at `va` with protection `prot`.
pub fn map(va: u32, len: u32, prot: u32) -> u32 {
    syscall(nr::MAP, [va, len, prot, 0])[0]
}

/// Maps shared segment `id`; returns its address.
pub fn seg_map(id: u32) -> Option<u32> {
    let r = syscall(nr::SEG_MAP, [id, 0, 0, 0]);
    (r[0] == 0).then_some(r[1])
}

/// Unmaps shared segment `id`.
pub fn seg_unmap(id: u32) -> u32 {
    syscall(nr::SEG_UNMAP, [id, 0, 0, 0])[0]
}

/// Prints `s` through the kernel.
pub fn print(s: &[u8]) -> u32 {
    syscall(nr::PRINT, [s.as_ptr() as u32, s.len() as u32, 0, 0])[0]
}

/// Measurement mark `k`.
pub fn mark(k: u32) {
    syscall(nr::MARK, [k, 0, 0, 0]);
}

/// Loads the 4096 bytes at `src` as the code page at `va` (`LOAD_CODE`).
pub fn load_code(va: u32, src: u32) -> u32 {
    syscall(nr::LOAD_CODE, [va, src, 0, 0])[0]
}
