//! What a process does, by role (see [`crate::abi::role`]). Each role
//! returns the number of its checks that failed.

use core::ptr::{read_volatile, write_volatile};

use crate::abi::{err, fault, nr, prot, role, COLLIDE_VA, DATA_VA, PAGE, PRINT_MAX, STATS_WORDS};
use crate::sys::{self, syscall};

/// Runs `role` with its arguments.
pub fn run(r: u32, a: [u32; 7]) -> u32 {
    match r {
        role::RING => ring(a[0], a[1], a[2], a[3], a[4], a[5]),
        role::SERVER => server(a[0], a[1], a[2]),
        role::CLIENT => client(a[0], a[1], a[2]),
        role::COLLIDER => collider(a[0], a[1], a[2], a[3]),
        role::SHARER => sharer(a[0], a[1], a[2]),
        role::FAULTER => faulter(a[0]),
        role::FUZZER => fuzzer(a[0], a[1]),
        role::BADCALLS => badcalls(),
        role::WORKER => worker(a[0]),
        role::TCM => tcm(a[0]),
        role::TCMOPS => tcm_ops(),
        role::VICTIM => crate::hostile::victim(a[0]),
        role::ATTACKER => crate::hostile::attacker(a[0], a[1], a[2], a[3]),
        role::YIELDER => turns(a[0], a[1], a[2], false),
        role::SPINNER => turns(a[0], a[1], a[2], true),
        role::SENDRECV => send_recv_check(a[0]),
        role::FRESH => crate::omission::fresh_pages(a[0]),
        role::CODELOAD => crate::omission::code_reload(a[0]),
        role::RECYCLE => crate::omission::recycled_pages(a[0], a[1], a[2], a[3], a[4]),
        role::LONGIPC => crate::longipc::ping_pong(a[0], a[1], a[2], a[3], a[4] != 0),
        role::LONGBAD => crate::longipc::refusals(a[0], a[1], a[2], a[3]),
        _ => crate::vfp::run(r, a).unwrap_or(0xBAD0),
    }
}

fn pattern(who: u32, pass: u32, word: u32) -> u32 {
    (who << 24) ^ (pass << 12) ^ word ^ 0x5A5A_0000
}

/// Writes this pass's pattern over the first `words` words at `DATA_VA`,
/// checking the previous pass's first; returns mismatches.
fn touch(who: u32, pass: u32, words: u32) -> u32 {
    let buf = DATA_VA as *mut u32;
    let mut bad = 0;
    for w in 0..words {
        // SAFETY: `DATA_VA` maps `words * 4` bytes of our own read/write pages.
        unsafe {
            let p = buf.add(w as usize);
            if pass > 0 && read_volatile(p) != pattern(who, pass - 1, w) {
                bad += 1;
            }
            write_volatile(p, pattern(who, pass, w));
        }
    }
    bad
}

fn map_data(bytes: u32) -> u32 {
    if bytes == 0 {
        return 0;
    }
    let len = bytes.div_ceil(PAGE) * PAGE;
    u32::from(sys::is_err(sys::map(DATA_VA, len, prot::RW)))
}

/// Token ring member (lmbench `lat_ctx`): every received token must equal
/// the number of hops so far and come from the previous member. A pass is
/// one `SEND_RECV` (send the token on, then wait for the next one, in one
/// call, as L4's `lat_ctx` would): member 0 starts each lap with it, the
/// others receive once and then pass each token on with it, so the next
/// member always waits in `RECV` when the token reaches it (a direct
/// hand-off, a one-way IPC, even in a ring of 2).
fn ring(i: u32, n: u32, passes: u32, touch_bytes: u32, next: u32, prev: u32) -> u32 {
    let mut bad = map_data(touch_bytes) * 1000;
    let words = touch_bytes / 4;
    // A last lap of the token tells everyone the measurement is over, so no
    // member exits (and gives back its domain) inside it.
    const DONE: u32 = u32::MAX;
    if i == 0 {
        for k in 0..passes {
            if k == 1 {
                sys::mark(0);
            }
            let (from, w) = sys::send_recv(next, [k * n + 1, 0, 0]);
            if from != prev || w[0] != (k + 1) * n {
                bad += 1;
            }
            bad += touch(i, k, words);
        }
        sys::mark(1);
        let (from, w) = sys::send_recv(next, [DONE, 0, 0]);
        if from != prev || w[0] != DONE {
            bad += 1;
        }
    } else {
        let (mut from, mut w) = sys::recv();
        for k in 0..passes {
            if from != prev || w[0] != k * n + i {
                bad += 1;
            }
            bad += touch(i, k, words);
            (from, w) = sys::send_recv(next, [w[0].wrapping_add(1), 0, 0]);
        }
        if from != prev || w[0] != DONE {
            bad += 1;
        }
        if sys::send(next, [DONE, 0, 0]) != 0 {
            bad += 1;
        }
    }
    bad
}

/// IPC server: answers `clients * rounds` calls with `w0 + 1`, `!w1`, then
/// releases clients `first_client..first_client + clients`.
fn server(clients: u32, rounds: u32, first_client: u32) -> u32 {
    let mut bad = 0;
    let total = clients * rounds;
    let (mut from, mut w) = sys::recv();
    for k in 0..total {
        if sys::is_err(from) {
            bad += 1;
            (from, w) = sys::recv();
            continue;
        }
        if k == clients {
            sys::mark(0);
        }
        let answer = [w[0].wrapping_add(1), !w[1], w[2]];
        if k + 1 == total {
            if sys::reply(from, answer) != 0 {
                bad += 1;
            }
        } else {
            (from, w) = sys::reply_wait(from, answer);
        }
    }
    sys::mark(1);
    // Release the clients only now, so none exits inside the measurement.
    for c in 0..clients {
        if sys::send(first_client + c, [u32::MAX, 0, 0]) != 0 {
            bad += 1;
        }
    }
    bad
}

/// IPC client: `rounds` calls, each reply checked.
fn client(server: u32, rounds: u32, idx: u32) -> u32 {
    let mut bad = 0;
    for k in 0..rounds {
        let x = k * 1000 + idx;
        let (st, w) = sys::call(server, [x, x ^ 0x1234, idx]);
        if st != 0 || w[0] != x + 1 || w[1] != !(x ^ 0x1234) || w[2] != idx {
            bad += 1;
        }
    }
    let (from, w) = sys::recv();
    if from != server || w[0] != u32::MAX {
        bad += 1;
    }
    bad
}

/// Maps a page at the fixed address `va` (the same in every collider), and
/// one at `va2` too unless it is 0; each round writes `value + k` patterns
/// into them (`va` first), yields, and checks they still read its own data
/// (`va` first).
///
/// Under FASS two colliders taking turns collide on both slots each turn:
/// the first access finds the other's slot in a dirty domain (a full
/// flush, after which the other's domain is clean, as it has not run
/// since), the second finds the other's other slot in that now clean
/// domain: resolved with a TLB invalidation only, without a flush.
fn collider(va: u32, value: u32, rounds: u32, va2: u32) -> u32 {
    let pages: &[u32] = if va2 != 0 { &[va, va2] } else { &[va] };
    for &a in pages {
        if sys::is_err(sys::map(a, PAGE, prot::RW)) {
            return 1000;
        }
    }
    let mut bad = 0;
    for k in 0..rounds {
        for (i, &a) in pages.iter().enumerate() {
            let p = a as *mut u32;
            for w in 0..16 {
                let v = value.wrapping_add(k) ^ w as u32 ^ ((i as u32) << 8);
                // SAFETY: our own read/write page at `a`.
                unsafe { write_volatile(p.add(w), v) };
            }
        }
        sys::yield_now();
        for (i, &a) in pages.iter().enumerate() {
            let p = a as *const u32;
            for w in 0..16 {
                let v = value.wrapping_add(k) ^ w as u32 ^ ((i as u32) << 8);
                // SAFETY: as above.
                if unsafe { read_volatile(p.add(w)) } != v {
                    bad += 1;
                }
            }
        }
    }
    bad
}

/// Takes turns with the other sharers on segment 0: word 0 is the turn,
/// word 1 the value the previous writer left (must equal the turn).
fn sharer(i: u32, n: u32, rounds: u32) -> u32 {
    let Some(base) = sys::seg_map(0) else {
        return 1000;
    };
    let turn_p = base as *mut u32;
    // SAFETY: the segment is mapped read/write at `base` (1 MiB).
    let val_p = unsafe { turn_p.add(1) };
    let mut bad = 0;
    let mut mine = 0;
    loop {
        // SAFETY: segment words, shared by design.
        let turn = unsafe { read_volatile(turn_p) };
        if turn >= rounds * n {
            break;
        }
        if turn % n == i {
            // SAFETY: as above.
            unsafe {
                if read_volatile(val_p) != turn {
                    bad += 1;
                }
                write_volatile(val_p, turn + 1);
                write_volatile(turn_p, turn + 1);
            }
            mine += 1;
            // Steady state: from the second lap to the last write (nobody
            // has unmapped or exited before the last write).
            if turn + 1 == n + 1 {
                sys::mark(0);
            }
            if turn + 1 == rounds * n {
                sys::mark(1);
            }
        }
        sys::yield_now();
    }
    if mine != rounds {
        bad += 1;
    }
    if sys::seg_unmap(0) != 0 {
        bad += 1;
    }
    bad
}

/// Commits fault `kind`; the kernel must kill us before the exit.
fn faulter(kind: u32) -> u32 {
    // SAFETY (all arms): these accesses are wrong on purpose; the MMU stops
    // each one and the kernel ends the process.
    unsafe {
        match kind {
            fault::KERNEL_READ => {
                read_volatile(0xC000_0000 as *const u32);
            }
            fault::OTHER_WINDOW => {
                read_volatile(0x0200_8000 as *const u32);
            }
            fault::UNMAPPED => {
                read_volatile(0x00E0_0000 as *const u32);
            }
            fault::EXEC_DATA => {
                let va = 0x0050_0000;
                if sys::is_err(sys::map(va, PAGE, prot::NONE)) {
                    return 1000;
                }
                let f: extern "C" fn() = core::mem::transmute(va as usize);
                f();
            }
            fault::WRITE_TEXT => {
                write_volatile(0x8000 as *mut u32, 0);
            }
            _ => return 2000,
        }
    }
    0xF00D
}

fn xorshift(s: &mut u32) -> u32 {
    *s ^= *s << 13;
    *s ^= *s >> 17;
    *s ^= *s << 5;
    *s
}

/// `calls` random system calls (never `EXIT`, `RECV` or `LRECV`, which
/// would end or block the fuzzer) with arguments drawn from interesting
/// values.
fn fuzzer(seed: u32, calls: u32) -> u32 {
    let mut s = seed | 1;
    let interesting = [
        0,
        1,
        4,
        0x1000,
        0x8000,
        0x0001_FFFC,
        DATA_VA,
        COLLIDE_VA,
        0x01FF_F000,
        0x0200_8000,
        0x8000_0000,
        0xC000_0000,
        0xC010_0000,
        0xF01F_1000,
        0xFFFF_0000,
        0xFFFF_FFFC,
        0xFFFF_FFFF,
        0x7FFF_FFFF,
        PRINT_MAX,
        PRINT_MAX + 1,
    ];
    let mut errors = 0u32;
    for _ in 0..calls {
        let r = xorshift(&mut s);
        let mut number = if r & 0xF00 == 0 {
            r
        } else {
            r % (nr::COUNT + 4)
        };
        if number == nr::EXIT || number == nr::RECV || number == nr::LRECV {
            number = nr::YIELD;
        }
        let mut args = [0u32; 4];
        for a in &mut args {
            let r = xorshift(&mut s);
            *a = match r % 3 {
                0 => interesting[(r >> 8) as usize % interesting.len()],
                1 => r >> (r % 32),
                _ => (r & 0x01FF_F000) | (r >> 30),
            };
        }
        if sys::is_err(syscall(number, args)[0]) {
            errors += 1;
        }
    }
    let _ = errors;
    0
}

/// `SEND_RECV` checker, process `i` of three consecutive ones (A = 0, B,
/// C); A returns a bit mask of the checks that failed, B and C the number
/// of theirs.
///
/// 1. Refusals: a process that does not exist, and A itself.
/// 2. Hand-off: B announces itself with `SEND_RECV`, so it waits in `RECV`
///    once A has the announcement; A's `SEND_RECV` to it hands over, and
///    B's answer (a `SEND`) finds A waiting in `RECV`.
/// 3. Queued, then a queued sender: A releases C, which yields before it
///    receives, so A's `SEND_RECV` to C is queued; B's `SEND` to A queues
///    too (A is not in `RECV`). When C receives, A's send is done and its
///    receive takes B's message; C's answer then comes last.
fn send_recv_check(i: u32) -> u32 {
    const READY: u32 = 0x5EAD;
    const GO: u32 = 0x60;
    let me = syscall(nr::GETID, [0; 4])[0];
    let first = me - i;
    let (a, b, c) = (first, first + 1, first + 2);
    let mut bad = 0;
    match i {
        0 => {
            // Out of range, the first slot past the end, a free slot
            // (three processes), itself.
            let refused = [
                (999, err::ESRCH),
                (64, err::ESRCH),
                (63, err::ESRCH),
                (a, err::EDEADLK),
            ];
            for (bit, (dest, want)) in refused.into_iter().enumerate() {
                if sys::send_recv(dest, [1, 2, 3]).0 as i32 != want {
                    bad |= 1 << bit;
                }
            }
            if sys::recv() != (b, [READY, 0, 0]) {
                bad |= 1 << 4;
            }
            if sys::send_recv(b, [1, 2, 3]) != (b, [4, 5, 6]) {
                bad |= 1 << 5;
            }
            if sys::send(c, [GO, 0, 0]) != 0 {
                bad |= 1 << 6;
            }
            if sys::send_recv(c, [8, 0, 0]) != (b, [7, 0, 0]) {
                bad |= 1 << 7;
            }
            if sys::recv() != (c, [9, 0, 0]) {
                bad |= 1 << 8;
            }
        }
        1 => {
            if sys::send_recv(a, [READY, 0, 0]) != (a, [1, 2, 3]) {
                bad += 1;
            }
            if sys::send(a, [4, 5, 6]) != 0 {
                bad += 1;
            }
            if sys::send(a, [7, 0, 0]) != 0 {
                bad += 1;
            }
        }
        _ => {
            if sys::recv() != (a, [GO, 0, 0]) {
                bad += 1;
            }
            for _ in 0..4 {
                sys::yield_now();
            }
            if sys::recv() != (a, [8, 0, 0]) {
                bad += 1;
            }
            if sys::send(a, [9, 0, 0]) != 0 {
                bad += 1;
            }
        }
    }
    bad
}

/// Invalid calls with the error each must return; returns a bit mask of the
/// cases that went wrong (0 = all as expected).
fn badcalls() -> u32 {
    let me = syscall(nr::GETID, [0; 4])[0];
    let cases: [(u32, [u32; 4], i32); 22] = [
        (999, [0; 4], err::ENOSYS),
        (0xFFFF_FFFF, [1, 2, 3, 4], err::ENOSYS),
        (nr::PRINT, [0xC000_0000, 16, 0, 0], err::EFAULT),
        (nr::PRINT, [0x8000, 0x7FFF_FFFF, 0, 0], err::EINVAL),
        (nr::PRINT, [0xFFFF_FFF0, 64, 0, 0], err::EINVAL),
        (nr::PRINT, [0x00E0_0000, 8, 0, 0], err::EFAULT),
        (nr::STATS, [0xC000_1000, 32, 0, 0], err::EFAULT),
        (nr::STATS, [0x8000, 32, 0, 0], err::EFAULT),
        (nr::STATS, [DATA_VA + 2, 32, 0, 0], err::EINVAL),
        (nr::MAP, [0xC000_0000, PAGE, prot::RW, 0], err::EINVAL),
        (nr::MAP, [0x8000_0000, PAGE, prot::RW, 0], err::EINVAL),
        (nr::MAP, [DATA_VA + 1, PAGE, prot::RW, 0], err::EINVAL),
        (nr::MAP, [DATA_VA, 0x1000_0000, prot::RW, 0], err::EINVAL),
        (nr::MAP, [DATA_VA, PAGE, 7, 0], err::EINVAL),
        (nr::UNMAP, [0x8000, PAGE, 0, 0], err::EPERM),
        (nr::UNMAP, [0x0060_0000, PAGE, 0, 0], err::EINVAL),
        (nr::SEND, [999, 1, 2, 3], err::ESRCH),
        (nr::SEND, [me, 1, 2, 3], err::EDEADLK),
        (nr::SEND_RECV, [999, 1, 2, 3], err::ESRCH),
        (nr::SEND_RECV, [me, 1, 2, 3], err::EDEADLK),
        (nr::SEG_MAP, [77, 0, 0, 0], err::EINVAL),
        (nr::SEG_UNMAP, [0, 0, 0, 0], err::EINVAL),
    ];
    // Bit i set: case i returned something else.
    let mut bad = 0;
    for (i, (number, args, want)) in cases.into_iter().enumerate() {
        if syscall(number, args)[0] as i32 != want {
            bad |= 1 << i;
        }
    }
    // The valid forms work.
    if sys::map(DATA_VA, PAGE, prot::RW) != 0 {
        bad |= 1 << 24;
    }
    let mut stats = [0u32; STATS_WORDS];
    if syscall(nr::STATS, [stats.as_mut_ptr() as u32, 32, 0, 0])[0] != 0 || stats[6] != me {
        bad |= 1 << 25;
    }
    if sys::print(b"badcalls: all invalid calls refused") != 0 {
        bad |= 1 << 26;
    }
    if syscall(nr::UNMAP, [DATA_VA, PAGE, 0, 0])[0] != 0 {
        bad |= 1 << 27;
    }
    bad
}

/// Computes, yields, and checks its own arithmetic and stack.
fn worker(iters: u32) -> u32 {
    let mut sum: u32 = 0;
    for k in 1..=iters {
        sum = sum.wrapping_add(k);
        if k % 64 == 0 {
            sys::yield_now();
        }
    }
    u32::from(sum != iters.wrapping_mul(iters.wrapping_add(1)) / 2)
}

/// A hot function kept on its own code page, exchanged into ITCM by the kernel.
#[inline(never)]
#[link_section = ".hot_text"]
fn hot(x: u32) -> u32 {
    x.wrapping_mul(2_654_435_761).rotate_left(7) ^ 0x9E37_79B9
}

/// TCM user: its hot code page goes into ITCM and its data page into DTCM
/// while it computes; results must not change. Code into DTCM is refused.
fn tcm(rounds: u32) -> u32 {
    let mut bad = map_data(PAGE) * 1000;
    let code_page = (hot as *const () as u32) & !(PAGE - 1);
    let mut reference = 0u32;
    for k in 0..rounds {
        reference = hot(reference ^ k);
    }
    let exchange = |va: u32, kind: u32| syscall(nr::TCM_EXCHANGE, [va, kind, 0, 0])[0];
    let release = |va: u32| syscall(nr::TCM_RELEASE, [va, 0, 0, 0])[0];
    if exchange(code_page, 1) as i32 != err::EINVAL {
        bad += 1;
    }
    let state = |va: u32| syscall(nr::TCM_STATE, [va, 0, 0, 0])[0];
    // Own user pages in RAM (state 2, location 0) before.
    if state(code_page) != 2 || state(DATA_VA) != 2 {
        bad += 1000;
    }
    if exchange(code_page, 0) != 0 || exchange(DATA_VA, 1) != 0 {
        bad += 100;
    }
    // Now in ITCM (location 1) and DTCM (location 2), still our user pages.
    if state(code_page) != 2 | (1 << 4) || state(DATA_VA) != 2 | (2 << 4) {
        bad += 10_000;
    }
    let mut acc = 0u32;
    for k in 0..rounds {
        acc = hot(acc ^ k);
        // SAFETY: our own data page (now in DTCM).
        unsafe { write_volatile((DATA_VA as *mut u32).add((k % 1024) as usize), acc) };
        if k % 32 == 0 {
            sys::yield_now();
        }
    }
    // SAFETY: as above.
    if acc != reference
        || unsafe { read_volatile((DATA_VA as *const u32).add(((rounds - 1) % 1024) as usize)) }
            != acc
    {
        bad += 1;
    }
    if release(code_page) != 0 || release(DATA_VA) != 0 {
        bad += 10;
    }
    if state(code_page) != 2 || state(DATA_VA) != 2 {
        bad += 100_000;
    }
    // SAFETY: as above (back in ordinary RAM).
    if unsafe { read_volatile((DATA_VA as *const u32).add(((rounds - 1) % 1024) as usize)) } != acc
    {
        bad += 1;
    }
    bad
}

/// Where [`tcm_ops`] creates its pages.
const OPS_VA: u32 = 0x0040_0000;

/// `spm`'s page operations (11 error returns on purpose): a created DTCM page reads as zero though its
/// frame held our old data; a page that is no longer ours cannot be
/// deleted; illegal state changes are refused; deletes give every frame back.
fn tcm_ops() -> u32 {
    let create = |va: u32, kind: u32| syscall(nr::TCM_CREATE, [va, kind, 0, 0])[0] as i32;
    let delete = |va: u32| syscall(nr::TCM_DELETE, [va, 0, 0, 0])[0] as i32;
    let set = |va: u32, s: u32| syscall(nr::TCM_SET_STATE, [va, s, 0, 0])[0] as i32;
    let state = |va: u32| syscall(nr::TCM_STATE, [va, 0, 0, 0])[0];
    let words = |va: u32| va as *mut u32;
    let (a, b, c) = (OPS_VA, OPS_VA + PAGE, OPS_VA + 2 * PAGE);
    let mut bad = map_data(PAGE) * 1000;
    // Old data in a DTCM frame: our data page goes into DTCM, is written
    // there and comes back; the DTCM frame is a free page resource again,
    // the pattern still in it.
    if syscall(nr::TCM_EXCHANGE, [DATA_VA, 1, 0, 0])[0] != 0 {
        bad += 1;
    }
    for w in 0..1024 {
        // SAFETY: our own read/write data page (in DTCM now).
        unsafe { write_volatile(words(DATA_VA).add(w), 0xA5A5_0000 | w as u32) };
    }
    if syscall(nr::TCM_RELEASE, [DATA_VA, 0, 0, 0])[0] != 0 {
        bad += 1 << 1;
    }
    // A DTCM page from that resource (the bank's lowest free frame): zero.
    if create(a, 2) != 0 || state(a) != 2 | (2 << 4) {
        bad += 1 << 2;
    }
    // SAFETY: the page just created at `a`, read/write.
    if (0..1024).any(|w| unsafe { read_volatile(words(a).add(w)) } != 0) {
        bad += 1 << 3;
    }
    // SAFETY: as above.
    unsafe { write_volatile(words(a), 0x1234_5678) };
    // RAM and ITCM pages.
    if create(b, 0) != 0 || state(b) != 2 || create(c, 1) != 0 || state(c) != 2 | (1 << 4) {
        bad += 1 << 4;
    }
    // Checked like MAP: mapped already, misaligned, kernel space, bad kind.
    if create(a, 2) != err::EBUSY
        || create(a + 4, 2) != err::EINVAL
        || create(0xC000_0000, 2) != err::EINVAL
        || create(OPS_VA + 3 * PAGE, 7) != err::EINVAL
    {
        bad += 1 << 5;
    }
    // Illegal state changes: to undefined (no one), to a kernel page (the
    // kernel only), our image (the kernel's record).
    let code_page = (tcm_ops as *const () as u32) & !(PAGE - 1);
    if set(a, 0) != err::ESTATE || set(a, 3) != err::EPERM || set(code_page, 1) != err::EPERM {
        bad += 1 << 6;
    }
    // Unchanged by the refusals; our own page again is allowed.
    // SAFETY: as above.
    if set(a, 2) != 2 || unsafe { read_volatile(words(a)) } != 0x1234_5678 {
        bad += 1 << 7;
    }
    // Giving it up as a resource while it stays mapped read/write here is
    // refused (`TCM_DELETE` gives a page up): still our page, unchanged.
    if set(a, 1) != err::EPERM || state(a) != 2 | (2 << 4) {
        bad += 1 << 8;
    }
    // SAFETY: as above.
    if set(a, 2) != 2 || unsafe { read_volatile(words(a)) } != 0x1234_5678 {
        bad += 1 << 9;
    }
    // Not mapped; the image.
    if delete(OPS_VA + 3 * PAGE) != err::EFAULT || delete(code_page) != err::EPERM {
        bad += 1 << 10;
    }
    if delete(a) != 0 || delete(b) != 0 || delete(c) != 0 {
        bad += 1 << 11;
    }
    if state(a) != err::EFAULT as u32 {
        bad += 1 << 12;
    }
    bad
}

/// Yield (`spin` false) and preemption (`spin` true) benchmarks: `rounds`
/// measured rounds after two warm-up rounds; each touches `touch_bytes`
/// and yields, or spins about a timer slice without a system call.
fn turns(i: u32, rounds: u32, touch_bytes: u32, spin: bool) -> u32 {
    if map_data(touch_bytes) != 0 {
        return 1000;
    }
    let words = touch_bytes / 4;
    let mut bad = 0;
    for k in 0..rounds + 2 {
        if k == 2 {
            sys::mark(0);
        }
        bad += touch(i, k, words);
        if spin {
            let mut x = 0u32;
            for _ in 0..2500 {
                // SAFETY: a local; volatile only to keep the loop.
                unsafe { write_volatile(&mut x, read_volatile(&x).wrapping_add(1)) };
            }
        } else {
            sys::yield_now();
        }
    }
    sys::mark(1);
    bad
}
