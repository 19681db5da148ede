//! The QEMU side: the plugin API version 1 of QEMU 7.2
//! (`include/qemu/qemu-plugin.h`), declared here function by function,
//! and the callbacks that hand every event to [`crate::plugin::Plugin`].
//!
//! QEMU resolves the `qemu_plugin_*` functions in its own executable when
//! it loads the library; the plugin exports `qemu_plugin_version` and
//! `qemu_plugin_install`. This module is left out of test builds (a test
//! executable would need QEMU's symbols to link).
#![allow(unsafe_code)]

use std::cell::UnsafeCell;
use std::ffi::{c_char, c_int, c_uint, c_void, CStr, CString};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use crate::plugin::{Plugin, Watch};

type PluginId = u64;
type MemInfo = u32;

/// `qemu_info_t`.
#[repr(C)]
pub struct QemuInfo {
    target_name: *const c_char,
    version_min: c_int,
    version_cur: c_int,
    system_emulation: bool,
    smp_vcpus: c_int,
    max_vcpus: c_int,
}

/// `struct qemu_plugin_tb` (opaque).
#[repr(C)]
pub struct Tb {
    _opaque: [u8; 0],
}

/// `struct qemu_plugin_insn` (opaque).
#[repr(C)]
pub struct Insn {
    _opaque: [u8; 0],
}

/// `struct qemu_plugin_hwaddr` (opaque).
#[repr(C)]
pub struct HwAddr {
    _opaque: [u8; 0],
}

/// `QEMU_PLUGIN_CB_NO_REGS`.
const CB_NO_REGS: c_int = 0;
/// `QEMU_PLUGIN_MEM_RW`.
const MEM_RW: c_int = 3;
/// `QEMU_PLUGIN_INLINE_ADD_U64`.
const INLINE_ADD_U64: c_int = 0;

/// Privileged instructions counted inline by QEMU's generated code.
static INLINE: AtomicU64 = AtomicU64::new(0);
/// Instructions of watched blocks started, counted inline (model on).
static STARTED: AtomicU64 = AtomicU64::new(0);

extern "C" {
    fn qemu_plugin_register_vcpu_tb_trans_cb(id: PluginId, cb: extern "C" fn(PluginId, *mut Tb));
    fn qemu_plugin_register_atexit_cb(
        id: PluginId,
        cb: extern "C" fn(PluginId, *mut c_void),
        userdata: *mut c_void,
    );
    fn qemu_plugin_tb_n_insns(tb: *const Tb) -> usize;
    fn qemu_plugin_register_vcpu_tb_exec_cb(
        tb: *mut Tb,
        cb: extern "C" fn(c_uint, *mut c_void),
        flags: c_int,
        userdata: *mut c_void,
    );
    fn qemu_plugin_tb_get_insn(tb: *const Tb, idx: usize) -> *mut Insn;
    fn qemu_plugin_insn_data(insn: *const Insn) -> *const c_void;
    fn qemu_plugin_insn_size(insn: *const Insn) -> usize;
    fn qemu_plugin_insn_vaddr(insn: *const Insn) -> u64;
    fn qemu_plugin_insn_haddr(insn: *const Insn) -> *mut c_void;
    fn qemu_plugin_register_vcpu_insn_exec_cb(
        insn: *mut Insn,
        cb: extern "C" fn(c_uint, *mut c_void),
        flags: c_int,
        userdata: *mut c_void,
    );
    fn qemu_plugin_register_vcpu_insn_exec_inline(
        insn: *mut Insn,
        op: c_int,
        ptr: *mut c_void,
        imm: u64,
    );
    fn qemu_plugin_register_vcpu_mem_cb(
        insn: *mut Insn,
        cb: extern "C" fn(c_uint, MemInfo, u64, *mut c_void),
        flags: c_int,
        rw: c_int,
        userdata: *mut c_void,
    );
    fn qemu_plugin_mem_size_shift(info: MemInfo) -> c_uint;
    fn qemu_plugin_mem_is_store(info: MemInfo) -> bool;
    fn qemu_plugin_get_hwaddr(info: MemInfo, vaddr: u64) -> *mut HwAddr;
    fn qemu_plugin_hwaddr_is_io(haddr: *const HwAddr) -> bool;
    fn qemu_plugin_hwaddr_phys_addr(haddr: *const HwAddr) -> u64;
    fn qemu_plugin_outs(string: *const c_char);
}

/// The plugin API version this library was written against.
#[no_mangle]
pub static qemu_plugin_version: c_int = 1;

/// The plugin's state behind a spin lock. Not `std::sync::Mutex`: its
/// poison check reads a thread-local on every unlock, which in a shared
/// library costs a call to `__tls_get_addr`, and the lock is taken once
/// per data access and once per block (measured, when it was taken twice
/// per instruction: a quarter of the plugin's time).
/// Callbacks come from the one vCPU thread; only the exit callback may
/// come from another.
struct Shared {
    busy: AtomicBool,
    plugin: UnsafeCell<Option<Plugin>>,
}

// SAFETY: `plugin` is only reached through `with`, which holds `busy`.
unsafe impl Sync for Shared {}

static SHARED: Shared = Shared {
    busy: AtomicBool::new(false),
    plugin: UnsafeCell::new(None),
};

/// Runs `f` on the plugin state, exclusively.
fn with<R>(f: impl FnOnce(&mut Option<Plugin>) -> R) -> R {
    while SHARED
        .busy
        .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
        .is_err()
    {
        std::hint::spin_loop();
    }
    // SAFETY: `busy` was false and is now ours: no other reference to the
    // state exists until we release it below (`f` cannot reach `SHARED`:
    // the callbacks do not nest).
    let r = f(unsafe { &mut *SHARED.plugin.get() });
    SHARED.busy.store(false, Ordering::Release);
    r
}

fn outs(s: &str) {
    if let Ok(c) = CString::new(s) {
        // SAFETY: `c` is a NUL-terminated string that outlives the call;
        // QEMU copies it into its log.
        unsafe { qemu_plugin_outs(c.as_ptr()) };
    }
}

/// Called by QEMU when it loads the plugin.
///
/// # Safety
/// QEMU's contract: `info` points to a valid `qemu_info_t` for the call,
/// `argv` to `argc` NUL-terminated strings that live as long as the plugin.
#[no_mangle]
pub unsafe extern "C" fn qemu_plugin_install(
    id: PluginId,
    info: *const QemuInfo,
    argc: c_int,
    argv: *const *const c_char,
) -> c_int {
    // SAFETY: QEMU passes a valid `qemu_info_t` (or we refuse a null one).
    let Some(info) = (unsafe { info.as_ref() }) else {
        eprintln!("cache-check: no qemu_info_t");
        return -1;
    };
    if !info.system_emulation || info.smp_vcpus != 1 {
        eprintln!("cache-check: needs system emulation with one vCPU");
        return -1;
    }
    let mut words = Vec::new();
    for i in 0..usize::try_from(argc).unwrap_or(0) {
        // SAFETY: `argv` holds `argc` pointers to NUL-terminated strings.
        let s = unsafe { CStr::from_ptr(*argv.add(i)) };
        match s.to_str() {
            Ok(w) => words.push(w.to_string()),
            Err(_) => {
                eprintln!("cache-check: argument {i} is not UTF-8");
                return -1;
            }
        }
    }
    let args = match crate::args::parse(words.iter().map(String::as_str)) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("cache-check: {e}");
            return -1;
        }
    };
    with(|p| *p = Some(Plugin::new(args)));
    // SAFETY: registering callbacks with the id QEMU gave us; the callbacks
    // are `extern "C"` functions with the API's signatures.
    unsafe {
        qemu_plugin_register_vcpu_tb_trans_cb(id, tb_trans);
        qemu_plugin_register_atexit_cb(id, at_exit, std::ptr::null_mut());
    }
    0
}

extern "C" fn tb_trans(_id: PluginId, tb: *mut Tb) {
    with(|p| {
        if let Some(p) = p.as_mut() {
            translate(p, tb);
        }
    });
}

fn translate(p: &mut Plugin, tb: *mut Tb) {
    // SAFETY: `tb` is valid for the duration of this callback.
    let n = unsafe { qemu_plugin_tb_n_insns(tb) };
    let mut handles = Vec::with_capacity(n);
    for i in 0..n {
        // SAFETY: `i` < the block's instruction count; the handle and the
        // data it points to are valid during this callback, `size` bytes.
        let (insn, va, host, bytes) = unsafe {
            let insn = qemu_plugin_tb_get_insn(tb, i);
            let size = qemu_plugin_insn_size(insn);
            let data = qemu_plugin_insn_data(insn).cast::<u8>();
            let bytes = if data.is_null() {
                &[][..]
            } else {
                std::slice::from_raw_parts(data, size)
            };
            let host = qemu_plugin_insn_haddr(insn);
            (insn, qemu_plugin_insn_vaddr(insn), host, bytes)
        };
        let host = (!host.is_null()).then_some(host as u64);
        let (handle, watch) = p.translate(va, host, bytes);
        handles.push(handle);
        let handle = handle as usize as *mut c_void;
        // SAFETY: `insn` is this callback's handle; the user data is an
        // index, never dereferenced; the inline counter is a static that
        // only the vCPU thread writes (QEMU's generated code) and reads
        // (our callbacks).
        unsafe {
            match watch {
                Watch::Full => {
                    qemu_plugin_register_vcpu_insn_exec_inline(
                        insn,
                        INLINE_ADD_U64,
                        STARTED.as_ptr().cast(),
                        1,
                    );
                    qemu_plugin_register_vcpu_mem_cb(insn, mem_access, CB_NO_REGS, MEM_RW, handle);
                }
                Watch::Start => {
                    qemu_plugin_register_vcpu_insn_exec_cb(insn, insn_exec, CB_NO_REGS, handle);
                }
                Watch::Inline => {
                    qemu_plugin_register_vcpu_insn_exec_inline(
                        insn,
                        INLINE_ADD_U64,
                        INLINE.as_ptr().cast(),
                        1,
                    );
                }
            }
        }
    }
    if p.args().model && n > 0 {
        let b = p.block(&handles) as usize as *mut c_void;
        // SAFETY: `tb` is this callback's block; the user data is an
        // index, never dereferenced. QEMU runs block callbacks before the
        // first instruction's inline count.
        unsafe { qemu_plugin_register_vcpu_tb_exec_cb(tb, block_exec, CB_NO_REGS, b) };
    }
}

extern "C" fn block_exec(_vcpu: c_uint, userdata: *mut c_void) {
    let started = STARTED.load(Ordering::Relaxed);
    with(|p| {
        if let Some(p) = p.as_mut() {
            p.block_exec(userdata as usize as u32, started);
        }
    });
}

extern "C" fn insn_exec(_vcpu: c_uint, userdata: *mut c_void) {
    let inline = INLINE.load(Ordering::Relaxed);
    with(|p| {
        if let Some(p) = p.as_mut() {
            p.exec(userdata as usize as u32, inline);
        }
    });
}

extern "C" fn mem_access(_vcpu: c_uint, info: MemInfo, vaddr: u64, _userdata: *mut c_void) {
    // SAFETY: `info` and `vaddr` are this callback's; the hwaddr handle is
    // used only within it, after a null check.
    let (pa, io, shift, store) = unsafe {
        let h = qemu_plugin_get_hwaddr(info, vaddr);
        let (pa, io) = if h.is_null() {
            (vaddr, true)
        } else {
            (qemu_plugin_hwaddr_phys_addr(h), qemu_plugin_hwaddr_is_io(h))
        };
        (
            pa,
            io,
            qemu_plugin_mem_size_shift(info),
            qemu_plugin_mem_is_store(info),
        )
    };
    let started = STARTED.load(Ordering::Relaxed);
    with(|p| {
        if let Some(p) = p.as_mut() {
            p.block_mem(vaddr, pa, shift, store, io, started);
        }
    });
}

extern "C" fn at_exit(_id: PluginId, _userdata: *mut c_void) {
    let inline = INLINE.load(Ordering::Relaxed);
    let started = STARTED.load(Ordering::Relaxed);
    let done = with(|p| {
        let p = p.as_mut()?;
        Some((p.report(inline, started), p.args().out.clone(), p.summary()))
    });
    let Some((report, out, summary)) = done else {
        return;
    };
    if let Some(path) = out {
        if let Err(e) = std::fs::write(&path, &report) {
            eprintln!("cache-check: writing {path}: {e}");
        }
    }
    outs(&summary);
}
