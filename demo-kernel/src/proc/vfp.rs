//! The VFP for user processes: detection at boot, and its registers
//! switched lazily (the default) or eagerly (`vfp=eager`, to compare).
//!
//! # Detection
//! [`detect`] reads FPSID once at boot with an undefined-instruction guard
//! (`asm/vfp.s`): QEMU's `arm926` (versatilepb) answers 0x41011090 (ARM,
//! VFPv2, the VFP9-S); the SA-1110 (collie) and the PXA255 (connex) have
//! none, the read is undefined, and the feature reports "not applicable".
//! The board's description ([`crate::board::HAS_VFP`]) is checked against
//! the probe; the probe decides. Only VFPv1/VFPv2 (16 double registers) is
//! used: a VFPv3's d16-d31 would not be switched, so it is refused.
//! ARMv5 has no CPACR: FPEXC.EN (bit 30) alone lets VFP instructions run;
//! it is clear whenever no process may use the registers.
//!
//! # Lazy switching (the seeds' scheme)
//! The VFP holds the registers of one process, its owner ([`Vfp::owner`]).
//! FPEXC.EN is set only while the owner runs. A switch away from it clears
//! EN; the owner's registers stay in the VFP. A switch back to the owner
//! sets EN again: no word moves. The first VFP instruction of any other
//! process traps as undefined ([`Kernel::vfp_undefined`]): the owner's 33
//! words (d0-d15, FPSCR) are saved into its context and the process's
//! loaded (zeros for a process that never used the VFP), it becomes the
//! owner, EN is set and the instruction runs again. A trap while EN is set
//! is a real undefined instruction (the process is killed as before): the
//! VFP was the process's already.
//!
//! # Eager switching (`vfp=eager`)
//! Every switch away from a process that has used the VFP saves its 33
//! words, every switch to one loads its own and sets EN; the others run
//! with EN clear. Only a process's first VFP instruction traps (and the
//! first after a switch to it that was not a lean one, below).
//!
//! # The switch paths
//! The assembly fast path (`asm/fastpath.s`) is not touched: no
//! instruction is added to it, so a switch between processes that do not
//! use the VFP costs what it cost before. The VFP's switches leave it by
//! the tests it makes anyway:
//! * away from the process with EN set: while EN is set the kernel runs
//!   with a dispatch table that sends every system call and interrupt to
//!   the Rust path ([`super::fastpath::svc_general_table`]), whose trap
//!   exit calls [`Kernel::vfp_after_trap`] (one flag test in
//!   `trap::trap_entry`, [`Vfp::watch`]): EN cleared (eager: the state
//!   saved), the mode's table back;
//! * to the owner (lazy) or to a process that used the VFP (eager): its
//!   switch record ([`super::kernel::Fast`]) is marked when it is switched
//!   away from ([`Kernel::vfp_mark`]: its generation with bit 0 cleared,
//!   never a generation), so the fast path's generation test sends the
//!   switch back to it to the Rust lean switch, which takes the mark off
//!   ([`Kernel::vfp_switch_in`], tested only when the generation does not
//!   match) and switches with the record; the trap's exit sets EN (eager:
//!   loads the state). After a switch that was not a lean one (a new
//!   generation), the process's first VFP instruction traps and is given
//!   the VFP then ([`Kernel::vfp_undefined`]).
//!
//! # Ends
//! A process that ends while owning the VFP leaves nothing: EN is cleared,
//! the owner dropped ([`Kernel::vfp_end`]), so the next process to use the
//! VFP gets its own registers loaded in full (zeros if it never used it),
//! never the dead one's; its saved context is zeroed for the slot's next
//! process.
//!
//! Not handled: the VFP9-S's bounces to support code (FPEXC.EX, for
//! denormals and exceptions with trap enables set) on real hardware; QEMU
//! computes everything itself. Such a bounce would arrive as an undefined
//! instruction with EN set and kill the process.

use super::kernel::Kernel;
use super::strategy::MAX_PROCS;
use crate::global::Global;

extern "C" {
    fn __vfp_probe_fpsid(out: *mut u32) -> u32;
    fn __vfp_set_fpexc(value: u32);
    fn __vfp_save(regs: *mut u32);
    fn __vfp_load(regs: *const u32);
}

/// FPEXC.EN: VFP instructions other than FPSID/FPEXC transfers may run.
pub const FPEXC_EN: u32 = 1 << 30;
/// Words of a process's VFP state: d0-d15 (32 words), then FPSCR.
pub const WORDS: usize = 33;

/// How the VFP's registers follow the processes (`vfp=` on the command
/// line).
#[derive(Clone, Copy, PartialEq, Eq, defmt::Format)]
pub enum Policy {
    /// Saved and loaded only when another process uses the VFP (default).
    Lazy,
    /// Saved and loaded on every switch away from and to a process that
    /// has used it.
    Eager,
}

impl Policy {
    /// Reads `lazy` or `eager`.
    pub fn parse(s: &str) -> Option<Policy> {
        match s {
            "lazy" => Some(Policy::Lazy),
            "eager" => Some(Policy::Eager),
            _ => None,
        }
    }

    /// The word of the command line and the reports.
    pub fn name(self) -> &'static str {
        match self {
            Policy::Lazy => "lazy",
            Policy::Eager => "eager",
        }
    }
}

/// What the boot probe found.
#[derive(Clone, Copy, PartialEq, Eq, defmt::Format)]
pub enum Found {
    /// Not probed yet.
    Unprobed,
    /// The FPSID read is undefined: no VFP.
    Absent,
    /// A VFP this kernel does not switch (FPSID given): not VFPv1/v2.
    Unsupported(u32),
    /// A VFPv1/VFPv2 with this FPSID: processes may use it.
    Present(u32),
}

/// The probe's result, written once by [`detect`] before any kernel
/// exists, read by [`Vfp::new`].
static FOUND: Global<Found> = Global::new(Found::Unprobed);

/// The policy of the next kernel ([`Vfp::new`]), set by the scenario
/// runner before it builds one.
static POLICY: Global<Policy> = Global::new(Policy::Lazy);

/// What the probe found (thread context).
pub fn found() -> Found {
    // SAFETY: a copy out of the cell; written only by `detect` at boot.
    unsafe { FOUND.get() }
}

/// Whether processes may use the VFP ([`Found::Present`]).
pub fn found_present() -> bool {
    matches!(found(), Found::Present(_))
}

/// Sets the policy of the kernels built from now on (thread context, no
/// kernel running).
pub fn set_policy(p: Policy) {
    // SAFETY: a copy into the cell; read only by `Vfp::new`, not now.
    unsafe { POLICY.set(p) }
}

/// Probes for a VFP (once, at boot, in SVC mode with interrupts masked),
/// reports it and leaves FPEXC.EN clear.
pub fn detect() -> Found {
    let mut fpsid = 0u32;
    // SAFETY: the guarded read of `asm/vfp.s`: it either reads FPSID (a
    // privileged read, allowed with EN clear) or traps as undefined, which
    // `__vfp_kernel_undef` skips while the probe is armed; it touches only
    // `fpsid` and the probe's flag.
    let read = unsafe { __vfp_probe_fpsid(&mut fpsid) } != 0;
    let found = if !read {
        Found::Absent
    } else if (fpsid >> 16) & 0xF <= 1 && fpsid & (1 << 23) == 0 {
        // FPSID.Arch 0 (VFPv1) or 1 (VFPv2), SW = 0 (a hardware VFP).
        Found::Present(fpsid)
    } else {
        Found::Unsupported(fpsid)
    };
    match found {
        Found::Present(f) => {
            // SAFETY: FPEXC is writable in a privileged mode with EN clear;
            // no process exists yet.
            unsafe { __vfp_set_fpexc(0) };
            defmt::info!(
                "VFP: FPSID={=u32:#010x} implementer={=u32:#04x} arch={=u32} part={=u32:#04x} variant={=u32} revision={=u32}",
                f,
                f >> 24,
                (f >> 16) & 0xF,
                (f >> 8) & 0xFF,
                (f >> 4) & 0xF,
                f & 0xF
            );
        }
        Found::Unsupported(f) => {
            defmt::warn!("VFP: FPSID={=u32:#010x} is not a VFPv1/v2: not used", f)
        }
        _ => defmt::info!(
            "VFP: not applicable on {=str} (the FPSID read is undefined: no VFP)",
            crate::board::NAME
        ),
    }
    let present = matches!(found, Found::Present(_));
    if present != crate::board::HAS_VFP {
        defmt::warn!(
            "VFP: the board's description says {=bool}, the FPSID probe {=bool}; the probe decides",
            crate::board::HAS_VFP,
            present
        );
    }
    // SAFETY: a copy into the cell, once at boot; no reader is running.
    unsafe { FOUND.set(found) };
    found
}

/// One process's VFP state: d0-d15 as 32 words (low word first), then
/// FPSCR.
#[repr(C, align(8))]
#[derive(Clone, Copy)]
pub struct VfpRegs {
    /// The words, in `__vfp_save` / `__vfp_load` order.
    pub w: [u32; WORDS],
}

impl VfpRegs {
    /// All zero: what a process that never used the VFP starts with.
    pub const ZERO: VfpRegs = VfpRegs { w: [0; WORDS] };
}

/// Counts of the VFP's work in one kernel's run.
#[derive(Clone, Copy, Default, defmt::Format)]
pub struct VfpCounters {
    /// Undefined-instruction traps that gave a process the VFP.
    pub traps: u32,
    /// Contexts saved (33 words each).
    pub saves: u32,
    /// Contexts loaded (33 words each).
    pub loads: u32,
    /// FPEXC writes that set EN.
    pub enables: u32,
    /// FPEXC writes that cleared EN.
    pub disables: u32,
    /// Owners dropped because they ended.
    pub dropped: u32,
}

/// The kernel's VFP state ([`Kernel::vfp`]).
pub struct Vfp {
    /// Whether processes may use the VFP ([`Found::Present`]).
    present: bool,
    /// Lazy or eager.
    pub policy: Policy,
    /// FPEXC.EN as last written: set only while `owner` runs.
    enabled: bool,
    /// The process whose registers the VFP holds (lazy: since its last
    /// use; eager: while it runs), if any.
    pub owner: Option<usize>,
    /// The processes that have used the VFP, a bit per slot.
    pub used: u64,
    /// Whether the end of the trap needs [`Kernel::vfp_after_trap`]: EN
    /// is set (the Rust path's dispatch table is installed, so that the
    /// switch away from the process goes through it), or a marked record
    /// was switched to ([`Kernel::vfp_switch_in`]).
    pub(super) watch: bool,
    /// The processes whose switch record [`Kernel::vfp_mark`] marked, a
    /// bit per slot.
    marked: u64,
    /// The mode's dispatch table, installed while `watch` is false.
    mode_table: *const u32,
    /// The saved states, by slot.
    regs: [VfpRegs; MAX_PROCS],
    /// What was done.
    pub counters: VfpCounters,
}

impl Vfp {
    /// The state of a new kernel whose mode's dispatch table is
    /// `mode_table`: no owner, EN clear, every context zero, the policy of
    /// [`set_policy`].
    pub fn new(mode_table: *const u32) -> Vfp {
        let present = matches!(found(), Found::Present(_));
        if present {
            // SAFETY: privileged, no process runs: nobody's registers are
            // in use.
            unsafe { __vfp_set_fpexc(0) };
        }
        Vfp {
            present,
            // SAFETY: a copy out of the cell (thread context).
            policy: unsafe { POLICY.get() },
            enabled: false,
            owner: None,
            used: 0,
            watch: false,
            marked: 0,
            mode_table,
            regs: [VfpRegs::ZERO; MAX_PROCS],
            counters: VfpCounters::default(),
        }
    }

    /// Writes FPEXC.EN.
    fn set_enabled(&mut self, on: bool) {
        // SAFETY: privileged; FPEXC may be written with EN either way.
        unsafe { __vfp_set_fpexc(if on { FPEXC_EN } else { 0 }) };
        self.enabled = on;
        if on {
            self.counters.enables += 1;
        } else {
            self.counters.disables += 1;
        }
    }

    /// Saves the VFP's registers into `slot`'s context (EN set).
    fn save(&mut self, slot: usize) {
        debug_assert!(self.enabled);
        let r = &mut self.regs[slot & (MAX_PROCS - 1)];
        // SAFETY: EN is set (the caller's state), `r` is 33 words, 8-byte
        // aligned, ours.
        unsafe { __vfp_save(r.w.as_mut_ptr()) };
        self.counters.saves += 1;
    }

    /// Loads `slot`'s context into the VFP's registers (EN set).
    fn load(&mut self, slot: usize) {
        debug_assert!(self.enabled);
        let r = &self.regs[slot & (MAX_PROCS - 1)];
        // SAFETY: as in `save`; only read.
        unsafe { __vfp_load(r.w.as_ptr()) };
        self.counters.loads += 1;
    }

    /// Whether `slot` has used the VFP.
    fn uses(&self, slot: usize) -> bool {
        self.used & (1u64 << (slot & (MAX_PROCS - 1))) != 0
    }
}

impl Kernel {
    /// Installs the dispatch table the VFP state asks for: the Rust
    /// path's while EN is set ([`Vfp::watch`]), else the mode's.
    fn vfp_table(&mut self) {
        let watch = self.vfp.enabled;
        self.vfp.watch = watch;
        self.svc_table = if watch {
            super::fastpath::svc_general_table()
        } else {
            self.vfp.mode_table
        };
    }

    /// Marks process `slot`'s switch record, if it is of the current
    /// generation, so that the switch back to it leaves the assembly fast
    /// path (whose generation test fails) for the Rust one, which gives
    /// it the VFP ([`Kernel::vfp_switch_in`]). The mark is the generation
    /// with bit 0 cleared: generations are odd, so a marked record never
    /// matches one, and it maps back to its own generation only.
    fn vfp_mark(&mut self, slot: usize) {
        let slot = slot & (MAX_PROCS - 1);
        let f = &mut self.procs[slot].fast;
        if f.gen == self.gen {
            f.gen ^= 1;
            self.vfp.marked |= 1u64 << slot;
        }
    }

    /// Called by the lean switch (`switch::switch_ready`) for `next`,
    /// whose record's generation is the current one with bit 0 cleared:
    /// if the VFP marked it ([`Kernel::vfp_mark`]), the mark is removed
    /// (`true`: switch with the record) and the end of the trap gives
    /// `next` the VFP ([`Kernel::vfp_after_trap`]); `false` otherwise.
    #[inline(never)]
    pub(super) fn vfp_switch_in(&mut self, next: usize) -> bool {
        let next = next & (MAX_PROCS - 1);
        let bit = 1u64 << next;
        if self.vfp.marked & bit == 0 {
            return false;
        }
        self.vfp.marked &= !bit;
        self.procs[next].fast.gen = self.gen;
        self.vfp.watch = true;
        true
    }

    /// An undefined instruction of the current process `cur`: `true` if
    /// it was the VFP's (the process now owns the VFP with EN set, and the
    /// instruction runs again), `false` if it is undefined (no VFP, or EN
    /// was set already: the VFP was the process's).
    pub(super) fn vfp_undefined(&mut self, cur: usize) -> bool {
        let v = &mut self.vfp;
        if !v.present || v.enabled {
            return false;
        }
        v.set_enabled(true);
        if v.owner != Some(cur) {
            if let Some(o) = v.owner {
                v.save(o);
            }
            v.load(cur);
            v.owner = Some(cur);
        }
        v.used |= 1u64 << (cur & (MAX_PROCS - 1));
        v.counters.traps += 1;
        self.vfp_table();
        true
    }

    /// At the end of a trap while [`Vfp::watch`] is set, the process to
    /// resume made current. Switched away from the process that had EN:
    /// EN cleared (eager: its state saved, no owner), and its record
    /// marked ([`Kernel::vfp_mark`]). Switched to the owner (lazy) or to a
    /// process that used the VFP (eager: its state loaded): EN set.
    #[inline(never)]
    pub(super) fn vfp_after_trap(&mut self) {
        let cur = self.current;
        let v = &mut self.vfp;
        if v.enabled && v.owner != cur {
            let away = v.owner;
            if v.policy == Policy::Eager {
                if let Some(o) = away {
                    v.save(o);
                }
                v.owner = None;
            }
            v.set_enabled(false);
            if let Some(o) = away {
                self.vfp_mark(o);
            }
        }
        let v = &mut self.vfp;
        if let (false, Some(c)) = (v.enabled, cur) {
            match v.policy {
                Policy::Lazy if v.owner == Some(c) => v.set_enabled(true),
                Policy::Eager if v.uses(c) => {
                    v.set_enabled(true);
                    v.load(c);
                    v.owner = Some(c);
                }
                _ => {}
            }
        }
        self.vfp_table();
    }

    /// Process `idx` ends: if it owns the VFP, EN is cleared and the owner
    /// dropped (its registers stay in the VFP but are loaded over in full
    /// before anyone runs a VFP instruction); its saved context is zeroed.
    pub(super) fn vfp_end(&mut self, idx: usize) {
        let v = &mut self.vfp;
        if !v.present {
            return;
        }
        let idx = idx & (MAX_PROCS - 1);
        if v.owner == Some(idx) {
            if v.enabled {
                v.set_enabled(false);
            }
            v.owner = None;
            v.counters.dropped += 1;
        }
        v.used &= !(1u64 << idx);
        v.marked &= !(1u64 << idx);
        v.regs[idx] = VfpRegs::ZERO;
        self.vfp_table();
    }
}

/// The VFP scenarios (`scenario=`), each run under every policy of
/// `vfp=` (on a board without a VFP: "not applicable"):
/// * `vfpleak`: four checkers ([`crate::abi::role::VFP_CHECK`]), two ping-ponging
///   with yields and two preempted while spinning: no VFP register value
///   crosses from one to another (each reads back exactly what it wrote,
///   zeros first);
/// * `vfpkill`: a process killed while owning the VFP with a secret in
///   every register, a checker that starts after it (it must read zeros),
///   and a process that never used the VFP running an undefined
///   instruction (given the VFP, then killed);
/// * `vfpyield0`, `vfpyield1`, `vfpyield2`: two processes yielding to
///   each other ([`crate::abi::role::VFP_YIELD`]), of which 0, 1 or 2 compute
///   with the VFP: `BENCH kind=yield_vfp<u>_<policy>` (`vfpyield`: the
///   three).
pub const SCENARIOS: [&str; 5] = ["vfpleak", "vfpkill", "vfpyield0", "vfpyield1", "vfpyield2"];

/// Whether `name` is a VFP scenario (or `vfpyield`: the three
/// `vfpyield<u>`, [`expand`]).
pub fn is_scenario(name: &str) -> bool {
    name == "vfpyield" || SCENARIOS.contains(&name)
}

/// The scenarios `name` stands for: `vfpyield` the three `vfpyield<u>`,
/// any other VFP scenario itself (none for another name).
pub fn expand(name: &str) -> &'static [&'static str] {
    if name == "vfpyield" {
        return &SCENARIOS[2..];
    }
    match SCENARIOS.iter().position(|s| *s == name) {
        Some(i) => &SCENARIOS[i..=i],
        None => &[],
    }
}

/// Spawns VFP scenario `name` with `rounds`.
pub fn spawn(k: &mut Kernel, name: &str, rounds: u32) -> Result<(), super::kernel::SpawnError> {
    use crate::abi::{role, vfp};
    match name {
        "vfpleak" => {
            for (who, flags) in [(0, 0), (1, 0), (2, vfp::SPIN), (3, vfp::SPIN)] {
                k.spawn(role::VFP_CHECK, [who, rounds, flags, 0, 0, 0, 0])?;
            }
        }
        "vfpkill" => {
            k.spawn(role::VFP_DIE, [0, 1, 0, 0, 0, 0, 0])?;
            k.spawn(role::VFP_CHECK, [1, rounds, vfp::WAIT, 0, 0, 0, 0])?;
            k.spawn(role::VFP_DIE, [2, 0, 0, 0, 0, 0, 0])?;
        }
        _ => {
            let users = match name {
                "vfpyield2" => 2,
                "vfpyield1" => 1,
                _ => 0,
            };
            for i in 0..2u32 {
                k.spawn(
                    role::VFP_YIELD,
                    [i, rounds, u32::from(i < users), 0, 0, 0, 0],
                )?;
            }
        }
    }
    Ok(())
}

/// The report of VFP scenario `name` in mode `m` after its run: the `VFP`
/// line (the policy, the counters, the owner and EN after the run) and,
/// for `vfpyield*`, the `BENCH` line: every kernel instruction of the
/// yields between the marks and of the VFP traps they cause
/// ([`Transit::VfpTrap`]), per yield.
pub fn report(k: &Kernel, name: &str, m: &str) {
    use super::clock::{self, Transit};
    let v = &k.vfp;
    let c = v.counters;
    defmt::info!(
        "VFP name={=str} mode={=str} policy={=str} traps={=u32} saves={=u32} loads={=u32} enables={=u32} disables={=u32} dropped={=u32} words={=u32} owner_after={=i32} enabled_after={=bool} used_after={=u64:#x}",
        name,
        m,
        v.policy.name(),
        c.traps,
        c.saves,
        c.loads,
        c.enables,
        c.disables,
        c.dropped,
        (c.saves + c.loads) * WORDS as u32,
        v.owner.map_or(-1, |o| o as i32),
        v.enabled,
        v.used
    );
    let yields = clock::sum(Some(Transit::Yield));
    if name.starts_with("vfpyield") && yields.n > 0 && k.marks.iter().all(Option::is_some) {
        let all = clock::sum(None);
        let traps = clock::sum(Some(Transit::VfpTrap));
        let kind = match (name, v.policy) {
            ("vfpyield2", Policy::Lazy) => "yield_vfp2_lazy",
            ("vfpyield2", Policy::Eager) => "yield_vfp2_eager",
            ("vfpyield1", Policy::Lazy) => "yield_vfp1_lazy",
            ("vfpyield1", Policy::Eager) => "yield_vfp1_eager",
            (_, Policy::Lazy) => "yield_vfp0_lazy",
            (_, Policy::Eager) => "yield_vfp0_eager",
        };
        let (switches, lean) = match k.marks {
            [Some(a), Some(b)] => (
                b.counters.switches - a.counters.switches,
                b.counters.lean_switches - a.counters.lean_switches,
            ),
            _ => (0, 0),
        };
        defmt::info!(
            "VFPYIELD name={=str} mode={=str} policy={=str} yields={=u32} yield_instr={=u64} vfp_traps={=u32} vfp_trap_instr={=u64} transits={=u32} transit_instr={=u64} switches={=u32} lean={=u32}",
            name,
            m,
            v.policy.name(),
            yields.n,
            yields.instructions,
            traps.n,
            traps.instructions,
            all.n,
            all.instructions,
            switches,
            lean
        );
        defmt::info!(
            "BENCH kind={=str} mode={=str} n=2 touch=0 value={=u64} unit=instructions",
            kind,
            m,
            (yields.instructions + traps.instructions) / u64::from(yields.n)
        );
    }
}
