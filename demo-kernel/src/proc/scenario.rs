//! The workloads the command line selects (`scenario=`), each run under
//! every mode in `mode=`, and their machine-readable reports.
//!
//! Every scenario boots a fresh [`Kernel`] (a fresh strategy), spawns its
//! processes, runs them until none can run, then prints (measure first,
//! print afterwards):
//! * `PROC id=.. role=.. exit=code code=..` or `exit=killed trap=.. fault=..`;
//! * `RESULT name=.. mode=.. ...` with every counter of the run;
//! * `STEADY ...` with the counters between the `MARK 0` and `MARK 1` the
//!   workload set (ring, ipc), and a `BENCH ...` line;
//! * `BASELINE ...`: frames, table memory, domains, PIDs and user entries
//!   of the kernel table, before and after.

use super::clock::{self, FaultClock, Transit};
use super::kernel::{self, Exit, Kernel, Mark, State};
use super::strategy::{SwitchMode, MAX_PROCS};
use super::timer::ticks_to_instructions;
use crate::abi::{self, role};
use mmu_armv5::descriptor::L1Descriptor;
use mmu_armv5::regs::HwCp15;
use mmu_armv5::{FaultKind, FaultLevel};

/// Physical MiB backing shared segment 0 (the board's).
const SEGMENT_PHYS: u32 = crate::board::LAYOUT.segment_phys;

/// Scenario parameters from the command line.
#[derive(Clone, Copy)]
pub struct Params {
    /// Comma-separated scenario names.
    pub scenarios: &'static str,
    /// Comma-separated modes (default: all three).
    pub modes: &'static str,
    /// Comma-separated process counts (ring: members, ipc: clients).
    pub ns: &'static str,
    /// Bytes each ring member touches per pass.
    pub touch: u32,
    /// Ring passes.
    pub passes: u32,
    /// Rounds of ipc/collide/share/tcm.
    pub rounds: u32,
    /// Fuzzer seed.
    pub seed: u32,
    /// Fuzzer calls.
    pub calls: u32,
    /// Timer period in 1 MHz ticks (default: the board's [`crate::board::SLICE_US`]).
    pub slice: u32,
    /// Comma-separated VFP policies ([`super::vfp::Policy`], default
    /// `lazy`): the VFP scenarios run under each, the others under the
    /// first.
    pub vfp: &'static str,
}

impl Params {
    /// The defaults.
    pub const DEFAULT: Params = Params {
        scenarios: "",
        modes: "naive,fcse,fass",
        ns: "4",
        touch: 0,
        passes: 20,
        rounds: 20,
        seed: 12345,
        calls: 10_000,
        slice: crate::board::SLICE_US,
        vfp: "lazy",
    };
}

fn fault_name(fsr: u32) -> (&'static str, &'static str) {
    let level = |l: FaultLevel| match l {
        FaultLevel::Section => "section",
        FaultLevel::Page => "page",
    };
    match FaultKind::from_status(fsr) {
        FaultKind::Translation(l) => ("translation", level(l)),
        FaultKind::Domain(l) => ("domain", level(l)),
        FaultKind::Permission(l) => ("permission", level(l)),
        FaultKind::Alignment => ("alignment", "none"),
        _ => ("other", "none"),
    }
}

/// Counts that must come back after a scenario.
#[derive(Clone, Copy)]
struct Baseline {
    frames: usize,
    pool: usize,
    user_entries: usize,
    /// TCM frames in use.
    tcm: u32,
    /// Frames the frame table marks busy (part of an exchange).
    busy: usize,
    /// Write-protect records the kernel's `Mappings` holds.
    wp: usize,
}

fn user_l1_entries() -> usize {
    (0..0xC00u32)
        .filter(|i| L1Descriptor::from_bits(crate::mmu::entry(i << 20)).is_valid())
        .count()
}

fn baseline() -> Baseline {
    // SAFETY: thread context, no process runs; the reference ends with
    // this function, which reaches no other user of the TCM state.
    let t = unsafe { super::tcm::state() };
    Baseline {
        frames: kernel::frames().free(),
        pool: crate::mmu::with_tables(|_, p| p.free_units()),
        user_entries: user_l1_entries(),
        tcm: t.as_ref().map_or(0, |t| t.in_use()),
        busy: t.as_ref().map_or(0, |t| t.table.busy_frames()),
        wp: t.map_or(0, |t| t.protect_records()),
    }
}

/// The two colliders of `collide` and `fault`: different data (patterns
/// `0x1111_0000` and `0x2222_0000`) at the same two fixed pages.
fn spawn_colliders(k: &mut Kernel, p: &Params) -> Result<(), kernel::SpawnError> {
    for pattern in [0x1111_0000, 0x2222_0000] {
        k.spawn(
            role::COLLIDER,
            [
                abi::COLLIDE_VA,
                pattern,
                p.rounds,
                abi::COLLIDE_VA2,
                0,
                0,
                0,
            ],
        )?;
    }
    Ok(())
}

/// The hostile scenario: a victim (process 0) with secret pages, and
/// attackers ([`abi::attack`]) that interleave TCM exchanges preempted in
/// ARM and Thumb state with unmap, exit, re-map, faults and the page
/// operations. The attacks that end their process mid-exchange have a
/// watcher that reports them done to the victim.
fn spawn_hostile(k: &mut Kernel, p: &Params) -> Result<(), kernel::SpawnError> {
    use abi::attack as a;
    let dying = [a::THUMB_EXIT, a::THUMB_FAULT];
    let kinds = [
        a::THUMB_UNMAP,
        a::THUMB_EXIT,
        a::THUMB_REMAP,
        a::THUMB_OPS,
        a::THUMB_FAULT,
        a::ARM_PREEMPT,
        a::UNMAP_IN_TCM,
    ];
    // Every attacker, or its watcher, sends one DONE.
    let victim = k.spawn(role::VICTIM, [kinds.len() as u32, 0, 0, 0, 0, 0, 0])? as u32;
    for kind in kinds {
        let id = k.spawn(role::ATTACKER, [kind, victim, p.rounds, 0, 0, 0, 0])?;
        if dying.contains(&kind) {
            k.spawn(role::ATTACKER, [a::WATCH, victim, 0, id as u32, 0, 0, 0])?;
        }
    }
    Ok(())
}

/// What a scenario spawns.
fn spawn_all(k: &mut Kernel, name: &str, n: u32, p: &Params) -> Result<(), kernel::SpawnError> {
    match name {
        "ring" => {
            for i in 0..n {
                let next = (i + 1) % n;
                let prev = (i + n - 1) % n;
                k.spawn(role::RING, [i, n, p.passes, p.touch, next, prev, 0])?;
            }
        }
        // `n` counts every process, the server included.
        "ipc" => {
            let clients = n.saturating_sub(1).max(1);
            k.spawn(role::SERVER, [clients, p.rounds, 1, 0, 0, 0, 0])?;
            for i in 0..clients {
                k.spawn(role::CLIENT, [0, p.rounds, i, 0, 0, 0, 0])?;
            }
        }
        "yield" | "preempt" => {
            let r = if name == "yield" {
                role::YIELDER
            } else {
                role::SPINNER
            };
            for i in 0..n {
                k.spawn(r, [i, p.rounds, p.touch, 0, 0, 0, 0])?;
            }
        }
        "collide" => {
            k.spawn(role::WORKER, [2000, 0, 0, 0, 0, 0, 0])?;
            spawn_colliders(k, p)?;
        }
        "share" => {
            if let Err(e) = k.define_segment(0, abi::SEGMENT_VA, SEGMENT_PHYS) {
                defmt::error!("cannot define segment 0: {}", e);
            }
            for i in 0..3 {
                k.spawn(role::SHARER, [i, 3, p.rounds, 0, 0, 0, 0])?;
            }
        }
        "faults" => {
            k.spawn(role::WORKER, [3000, 0, 0, 0, 0, 0, 0])?;
            for kind in [
                abi::fault::KERNEL_READ,
                abi::fault::OTHER_WINDOW,
                abi::fault::UNMAPPED,
                abi::fault::EXEC_DATA,
                abi::fault::WRITE_TEXT,
            ] {
                k.spawn(role::FAULTER, [kind, 0, 0, 0, 0, 0, 0])?;
            }
            k.spawn(role::WORKER, [3000, 0, 0, 0, 0, 0, 0])?;
        }
        "badcalls" => {
            if let Err(e) = k.define_segment(0, abi::SEGMENT_VA, SEGMENT_PHYS) {
                defmt::error!("cannot define segment 0: {}", e);
            }
            k.spawn(role::BADCALLS, [0; 7])?;
            k.spawn(role::WORKER, [1000, 0, 0, 0, 0, 0, 0])?;
        }
        // Two colliders on two fixed pages each (see the collider role):
        // under FASS every turn has one collision resolved with a full
        // flush and one without (the other's domain is clean after the
        // first). `clock::FaultClock` times both kinds from the
        // data-abort vector to the return to user mode that retries the
        // access; the report prints `FAULT` and `BENCH kind=fault` (no
        // flush) and `BENCH kind=fault_flush` (full flush) lines.
        "fault" => {
            spawn_colliders(k, p)?;
        }
        "tcm" => {
            k.spawn(role::TCM, [p.rounds.max(64) * 8, 0, 0, 0, 0, 0, 0])?;
            // IPC traffic through the switch/IPC page while it moves.
            k.spawn(role::SERVER, [2, p.rounds * 4, 2, 0, 0, 0, 0])?;
            for i in 0..2 {
                k.spawn(role::CLIENT, [1, p.rounds * 4, i, 0, 0, 0, 0])?;
            }
            k.spawn(role::WORKER, [40_000, 0, 0, 0, 0, 0, 0])?;
            k.start_kernel_job();
        }
        "tcmops" => {
            k.spawn(role::TCMOPS, [0; 7])?;
        }
        // Three processes checking `SEND_RECV` (see the role).
        "sendrecv" => {
            for i in 0..3 {
                k.spawn(role::SENDRECV, [i, 0, 0, 0, 0, 0, 0])?;
            }
        }
        "hostile" => spawn_hostile(k, p)?,
        "reuse" => super::omission::frame_reuse(k)?,
        "codeload" => super::omission::code_reload(k, p.rounds)?,
        "recycle" => super::omission::domain_recycle(k, p.rounds)?,
        // Two processes in a long-IPC ping-pong of `touch` bytes (0: 64,
        // 1024 and 4096 in turn), every message checked.
        "longipc" => {
            k.spawn(role::LONGIPC, [0, 1, p.rounds, p.touch, 1, 0, 0])?;
            k.spawn(role::LONGIPC, [1, 0, p.rounds, p.touch, 1, 0, 0])?;
        }
        // Long IPC's refusals: the receiver (0), a receiver that exits
        // while the prober waits on it (1), the prober (2), given an
        // address in the receiver's FCSE window (or, naive, one no process
        // maps).
        "longbad" => {
            let r = k.spawn(role::LONGBAD, [1, 2, 0, 0, 0, 0, 0])?;
            k.spawn(role::LONGBAD, [2, 0, 0, 0, 0, 0, 0])?;
            let other = super::strategy::dispatch!(&k.strategy, s => fass::SwitchStrategy::mva_of(
                s,
                fass::SpaceId(r as u16),
                mmu_armv5::VirtAddr::new(0x8000)
            ))
            .map(|a| a.as_u32())
            .ok()
            .filter(|&a| a >= 32 << 20)
            .unwrap_or(0x07E0_8000);
            k.spawn(role::LONGBAD, [0, r as u32, 1, other, 0, 0, 0])?;
        }
        _ if super::vfp::is_scenario(name) => super::vfp::spawn(k, name, p.rounds)?,
        "fuzz" => {
            if let Err(e) = k.define_segment(0, abi::SEGMENT_VA, SEGMENT_PHYS) {
                defmt::error!("cannot define segment 0: {}", e);
            }
            k.spawn(role::FUZZER, [p.seed, p.calls, 0, 0, 0, 0, 0])?;
            k.spawn(role::WORKER, [5000, 0, 0, 0, 0, 0, 0])?;
        }
        _ => {}
    }
    Ok(())
}

/// Whether the scenario needs TCM (the CPU's or the board's emulated banks).
fn needs_tcm(name: &str) -> bool {
    matches!(name, "tcm" | "tcmops" | "hostile")
}

/// Whether the scenario takes a process count.
fn takes_n(name: &str) -> bool {
    matches!(name, "ring" | "ipc" | "yield" | "preempt")
}

const KNOWN: [&str; 20] = [
    "ring", "ipc", "collide", "share", "faults", "badcalls", "fuzz", "fault", "tcm", "tcmops",
    "hostile", "yield", "preempt", "sendrecv", "kstate", "longipc", "longbad", "reuse", "codeload",
    "recycle",
];

/// Reports the start of one scenario run to the cache check
/// ([`Event::Scenario`](mmu_armv5::marker::Event::Scenario), numbered from
/// 1 in the order the runs start, the number logged with the run).
fn scenario_marker(cp15: &HwCp15, name: &str, mode: &str, n: u32) {
    #[cfg(feature = "cache-check")]
    {
        static NEXT: crate::global::Global<u32> = crate::global::Global::new(0);
        // SAFETY: thread context, single core, not re-entered.
        let i = unsafe {
            NEXT.with(|i| {
                *i += 1;
                *i
            })
        };
        defmt::info!(
            "cache-check: scenario {=u32} is {=str} mode {=str} n={=u32}",
            i,
            name,
            mode,
            n
        );
        cp15.marker(mmu_armv5::marker::Event::Scenario, i);
    }
    #[cfg(not(feature = "cache-check"))]
    let _ = (cp15, name, mode, n);
}

/// Runs every scenario of `p` under every mode, each kernel over the CP15
/// owner `cp15` ([`kernel::Lease`]); `false` if one could not be set up.
pub fn run(cp15: &mut HwCp15, p: &Params) -> bool {
    let mut ok = true;
    let mut policies = [super::vfp::Policy::Lazy; 2];
    let mut n_policies = 0;
    for word in p.vfp.split(',').filter(|s| !s.is_empty()) {
        match super::vfp::Policy::parse(word) {
            Some(pol) if n_policies < policies.len() => {
                policies[n_policies] = pol;
                n_policies += 1;
            }
            _ => {
                defmt::error!("vfp={=str}: not a list of lazy, eager", p.vfp);
                return false;
            }
        }
    }
    let policies = &policies[..n_policies.max(1)];
    if crate::board::HAS_TCM {
        if let Err(e) = super::tcm::setup::init(cp15) {
            defmt::error!("cannot set up TCM: {}", e);
            return false;
        }
    }
    for mode_name in p.modes.split(',').filter(|s| !s.is_empty()) {
        let Some(mode) = SwitchMode::parse(mode_name) else {
            defmt::error!("unknown mode {=str}", mode_name);
            ok = false;
            continue;
        };
        for name in p.scenarios.split(',').filter(|s| !s.is_empty()) {
            if super::vfp::is_scenario(name) {
                if !super::vfp::found_present() {
                    defmt::info!(
                        "scenario {=str} mode {=str}: not applicable on {=str} (no VFP)",
                        name,
                        mode_name,
                        crate::board::NAME
                    );
                    continue;
                }
                for &sub in super::vfp::expand(name) {
                    for &pol in policies {
                        super::vfp::set_policy(pol);
                        ok &= run_one(cp15, sub, mode, 0, p);
                    }
                }
                super::vfp::set_policy(policies[0]);
                continue;
            }
            super::vfp::set_policy(policies[0]);
            if !KNOWN.contains(&name) {
                defmt::error!("unknown scenario {=str}", name);
                ok = false;
                continue;
            }
            if needs_tcm(name) && !crate::board::HAS_TCM {
                defmt::info!(
                    "scenario {=str} mode {=str}: not applicable on {=str} (no TCM)",
                    name,
                    mode_name,
                    crate::board::NAME
                );
                continue;
            }
            if takes_n(name) {
                for n in p.ns.split(',').filter_map(|s| s.parse::<u32>().ok()) {
                    ok &= run_one(cp15, name, mode, n, p);
                }
            } else {
                // The long-IPC ping-pong always has two processes.
                let n = if name == "longipc" { 2 } else { 0 };
                ok &= run_one(cp15, name, mode, n, p);
            }
        }
    }
    ok
}

fn run_one(cp15: &mut HwCp15, name: &str, mode: SwitchMode, n: u32, p: &Params) -> bool {
    let m = mode.name();
    scenario_marker(cp15, name, m, n);
    let before = baseline();
    // Uninstalls the kernel when dropped, on every path out of here.
    let _lease = match kernel::Lease::install(cp15, mode) {
        Ok(l) => l,
        Err(e) => {
            defmt::error!("cannot set up mode {=str}: {}", m, e);
            return false;
        }
    };
    // SAFETY: thread context; this reference ends before `Kernel::run`
    // below, which takes its own.
    let Some(k) = (unsafe { kernel::installed() }) else {
        return false;
    };
    super::syscall::clear_laps();
    let domains_before = k.strategy.free_domains();
    if name == "kstate" {
        // The kernel's own bookkeeping, no process run (`kstate`).
        let ok = super::kstate::run(k, m);
        for i in 0..MAX_PROCS {
            k.end(i, Exit::Code(0));
        }
        teardown();
        return ok;
    }
    let setup = spawn_all(k, name, n, p);
    let procs = k.procs.iter().filter(|p| p.alive()).count();
    if let Err(e) = setup {
        // A ring larger than the mode can hold (FCSE-only guaranteed: 63
        // PIDs) is a limit of the mode, reported as such; anything else fails.
        let limit = matches!(
            e,
            kernel::SpawnError::Strategy(fass::FassError::Pid(_)) | kernel::SpawnError::TableFull
        );
        if limit {
            defmt::info!(
                "LIMIT name={=str} mode={=str} n={=u32} spawned={=usize} error={}",
                name,
                m,
                n,
                procs,
                e
            );
        } else {
            defmt::error!("scenario {=str} mode {=str}: spawn failed: {}", name, m, e);
        }
        for i in 0..MAX_PROCS {
            k.end(i, Exit::Code(0));
        }
        teardown();
        return limit;
    }
    if (n as usize) > MAX_PROCS {
        return false;
    }
    let start = k.mark_now();
    // The TCM scenario's kernel job advances on timer ticks: a short slice
    // keeps it well inside the processes' run time. The hostile scenario's
    // exchanges are to be preempted between their steps.
    Kernel::run(match name {
        "tcm" => p.slice.min(1000),
        "hostile" => p.slice.min(1000),
        _ => p.slice,
    });
    // SAFETY: thread context after `Kernel::run` returned: the only
    // reference until `teardown`, which takes its own after this one's
    // last use.
    let Some(k) = (unsafe { kernel::installed() }) else {
        return false;
    };
    let end = k.mark_now();
    if name == "tcm" {
        k.finish_kernel_job();
    }
    report(k, name, m, n, p, procs, &start, &end);
    if name == "tcm" {
        report_tcm(k, m);
    }
    if super::vfp::is_scenario(name) {
        super::vfp::report(k, name, m);
    }
    if name == "hostile" {
        let [arm, thumb] = k.tcm_preempted;
        defmt::info!(
            "HOSTILE mode={=str} preempted_arm={=u32} preempted_thumb={=u32}",
            m,
            arm,
            thumb
        );
    }
    if name == "tcmops" {
        // SAFETY: thread context, no process runs; the reference ends with
        // this block, which only reads it.
        if let Some(t) = unsafe { super::tcm::state() } {
            defmt::info!(
                "TCMOPS mode={=str} itcm={=u32:#010x} dtcm={=u32:#010x} tcm_frames_in_use={=u32}",
                m,
                t.layout.itcm.map_or(0, |b| b.base().as_u32()),
                t.layout.dtcm.map_or(0, |b| b.base().as_u32()),
                t.in_use()
            );
        }
    }
    if name == "fault" && clock::MEASURING {
        let c = k.fault_clock;
        let (free, full) = (FaultClock::FLUSH_FREE, FaultClock::FLUSHED);
        let instr = |t: u64| ticks_to_instructions(t);
        defmt::info!(
            "FAULT mode={=str} resolved={=u32} flushed={=u32} flush_free={=u32} ticks={=u64} max_instr={=u64} flushed_ticks={=u64} flushed_max_instr={=u64}",
            m,
            c.n[free] + c.n[full],
            c.n[full],
            c.n[free],
            c.ticks[free],
            instr(u64::from(c.max[free])),
            c.ticks[full],
            instr(u64::from(c.max[full]))
        );
        // From the data-abort vector to the return to user mode that
        // retries the access (`clock::FaultClock`).
        if c.n[free] > 0 {
            defmt::info!(
                "BENCH kind=fault mode={=str} n=2 touch=0 value={=u64} unit=instructions",
                m,
                clock::div_round(instr(c.ticks[free]), u64::from(c.n[free]))
            );
        }
        if c.n[full] > 0 {
            defmt::info!(
                "BENCH kind=fault_flush mode={=str} n=2 touch=0 value={=u64} unit=instructions",
                m,
                clock::div_round(instr(c.ticks[full]), u64::from(c.n[full]))
            );
        }
    }
    let domains_after = k.strategy.free_domains();
    let pids_after = k.strategy.pids_in_use();
    let live = k.procs.iter().filter(|q| q.alive()).count();
    // Exchanges still in progress: a process's, and the kernel's own job.
    let exchanges = usize::from(k.pending.is_some())
        // SAFETY: thread context, no process runs; read within this
        // expression only.
        + usize::from(unsafe { super::tcm::state() }.is_some_and(|t| {
            !matches!(
                t.job,
                super::tcm::KernelJob::Idle | super::tcm::KernelJob::Done
            )
        }));
    teardown();
    let after = baseline();
    defmt::info!(
        "BASELINE name={=str} mode={=str} n={=u32} frames_before={=usize} frames_after={=usize} pool_before={=usize} pool_after={=usize} domains_before={=usize} domains_after={=usize} pids_after={=usize} live={=usize} user_l1_before={=usize} user_l1_after={=usize} tcm_before={=u32} tcm_after={=u32} busy_before={=usize} busy_after={=usize} wp_before={=usize} wp_after={=usize} exchanges_after={=usize}",
        name,
        m,
        n,
        before.frames,
        after.frames,
        before.pool,
        after.pool,
        domains_before.unwrap_or(0),
        domains_after.unwrap_or(0),
        pids_after.unwrap_or(0),
        live,
        before.user_entries,
        after.user_entries,
        before.tcm,
        after.tcm,
        before.busy,
        after.busy,
        before.wp,
        after.wp,
        exchanges
    );
    true
}

/// The TCM scenario's report: the user exchanges and the kernel page's trip.
fn report_tcm(k: &Kernel, m: &str) {
    // SAFETY: thread context, no process runs; the reference ends with
    // this function, which only reads it.
    let Some(t) = (unsafe { super::tcm::state() }) else {
        return;
    };
    let j = t.job_stats;
    let mut ticks = 0u64;
    let mut longest = 0u32;
    for (call, x) in k.xtimes.iter().flatten() {
        defmt::info!(
            "TCMX mode={=str} call={=u32} instr={=u64} steps={=u32} windows={=u32} longest_window_instr={=u64} preempted={=u32}",
            m,
            *call,
            ticks_to_instructions(u64::from(x.ticks)),
            x.steps,
            x.windows,
            ticks_to_instructions(u64::from(x.longest)),
            x.preempted
        );
        longest = longest.max(x.longest);
    }
    let exchanges = k.xtimes.iter().flatten().count();
    if let Some((_, first)) = k.xtimes.iter().flatten().next() {
        ticks = u64::from(first.ticks);
    }
    let (itcm, dtcm) = (t.layout.itcm, t.layout.dtcm);
    defmt::info!(
        "TCM mode={=str} source={=str} itcm={=u32:#010x} itcm_size={=u32} dtcm={=u32:#010x} dtcm_size={=u32} user_exchanges={=usize} kernel_out={=u32} kernel_back={=u32} kernel_seen_in_itcm={=bool} kernel_ticks_in_itcm={=u32} kernel_switches_in_itcm={=u32} kernel_late={=bool} kernel_error={=bool} kernel_page_home={=bool} kernel_window_instr={=u64} tcm_frames_in_use={=u32}",
        m,
        if t.from_cpu { "cpu" } else { "board" },
        itcm.map_or(0, |b| b.base().as_u32()),
        itcm.map_or(0, |b| b.size()),
        dtcm.map_or(0, |b| b.base().as_u32()),
        dtcm.map_or(0, |b| b.size()),
        exchanges,
        j.out,
        j.back,
        j.seen_in_itcm,
        j.ticks_in_itcm,
        j.switches_in_itcm,
        j.finished_late,
        t.job_error.is_some(),
        t.kswitch_frame() == super::tcm::kswitch_va() - crate::mmu::kernel_virt_offset(),
        ticks_to_instructions(u64::from(j.longest_window)),
        t.in_use()
    );
    if let Some(e) = t.job_error {
        defmt::error!("kernel page exchange failed: {}", e);
    }
    if exchanges > 0 && super::clock::MEASURING {
        defmt::info!(
            "BENCH kind=tcm mode={=str} n=1 touch=4096 value={=u64} unit=instructions",
            m,
            ticks_to_instructions(ticks)
        );
        defmt::info!(
            "BENCH kind=tcm_window mode={=str} n=1 touch=4096 value={=u64} unit=instructions",
            m,
            ticks_to_instructions(u64::from(longest))
        );
    }
}

/// Removes the scenario's segments and the kernel.
fn teardown() {
    // SAFETY: thread context, no process runs; the reference ends before
    // `uninstall`.
    if let Some(k) = unsafe { kernel::installed() } {
        for id in 0..k.segments.len() {
            if k.segments[id].take().is_some() {
                let r = super::strategy::dispatch!(&mut k.strategy, s => fass::SwitchStrategy::destroy_segment(s, fass::SegmentId(id as u16)));
                if let Err(e) = r {
                    defmt::error!("destroying segment {=usize} failed: {}", id, e);
                }
            }
        }
    }
    kernel::uninstall();
}

/// The long-IPC figures: the hand-offs (vector to `movs`, the copy
/// included) and the plain copy of the same size in one space (the laps
/// that copied less the empty ones, [`super::syscall::laps`]).
fn report_long(m: &str, touch: u32, ipc: clock::Sum, bench: &dyn Fn(&str, u64)) {
    let [(ct, cn), (et, en)] = super::syscall::laps().sums;
    let copy = if cn > 0 && en > 0 {
        let per = |t: u64, n: u32| ticks_to_instructions(t) / u64::from(n);
        Some(per(ct, cn).saturating_sub(per(et, en)))
    } else {
        None
    };
    defmt::info!(
        "LONGIPC mode={=str} touch={=u32} handoffs={=u32} ipc_instr={=u64} laps={=u32} copy_instr={=u64}",
        m,
        touch,
        ipc.n,
        ipc.mean(),
        cn,
        copy.unwrap_or(0)
    );
    if ipc.n > 0 {
        bench("long_ipc", ipc.mean());
    }
    if let Some(c) = copy {
        bench("long_copy", c);
    }
}

#[allow(clippy::too_many_arguments)]
fn report(
    k: &Kernel,
    name: &str,
    m: &str,
    n: u32,
    p: &Params,
    procs: usize,
    start: &Mark,
    end: &Mark,
) {
    let mut exited_ok = 0u32;
    let mut failed = 0u32;
    let mut killed = 0u32;
    let mut deadlocked = 0u32;
    for (id, q) in k.procs.iter().enumerate() {
        if q.state == State::Free {
            continue;
        }
        match q.exit {
            Some(Exit::Code(code)) => {
                if code == 0 {
                    exited_ok += 1;
                } else {
                    failed += 1;
                }
                defmt::info!(
                    "PROC id={=usize} role={=u32} exit=code code={=u32} syscalls={=u32} errors={=u32}",
                    id,
                    q.role,
                    code,
                    q.syscalls,
                    q.errors
                );
            }
            Some(Exit::Killed { trap, fsr, addr }) => {
                killed += 1;
                let (fault, level) = if trap == kernel::TrapKind::Undefined {
                    ("undefined", "none")
                } else {
                    fault_name(fsr)
                };
                defmt::info!(
                    "PROC id={=usize} role={=u32} exit=killed trap={=str} fault={=str} level={=str} fsr={=u32:#05x} addr={=u32:#010x}",
                    id,
                    q.role,
                    trap.name(),
                    fault,
                    level,
                    fsr,
                    addr
                );
            }
            Some(Exit::Deadlock) | Some(Exit::SwitchFailed) | None => {
                deadlocked += 1;
                defmt::info!("PROC id={=usize} role={=u32} exit=stuck", id, q.role);
            }
        }
    }
    let hw = end.hw.since(&start.hw);
    let st = end.stats.since(&start.stats);
    let c = &end.counters;
    defmt::info!(
        "RESULT name={=str} mode={=str} n={=u32} touch={=u32} procs={=usize} exited_ok={=u32} failed={=u32} killed={=u32} stuck={=u32} switches={=u32} dflush={=u32} iflush={=u32} tlb={=u32} tlb_entries={=u32} dacr={=u32} ttbr={=u32} pidw={=u32} domain_faults={=u32} flush_free_collisions={=u32} fills={=u32} copy_faults={=u32} collisions={=u64} recycles={=u64} full_flushes={=u64} tlb_only={=u64} syscalls={=u32} irqs={=u32} preemptions={=u32} round_trips={=u32} messages={=u32}",
        name,
        m,
        n,
        p.touch,
        procs,
        exited_ok,
        failed,
        killed,
        deadlocked,
        c.switches,
        hw.dcache_flushes,
        hw.icache_flushes,
        hw.tlb_flushes,
        hw.tlb_entries,
        hw.dacr_writes,
        hw.ttbr_writes,
        hw.pid_writes,
        c.domain_faults,
        c.flush_free_collisions,
        c.fills,
        c.copy_faults,
        st.collisions,
        st.recycles_clean + st.recycles_dirty + st.recycles_exclusive,
        st.full_flushes,
        st.tlb_only,
        c.syscalls,
        c.irqs,
        c.preemptions,
        c.round_trips,
        c.messages
    );
    let measured = matches!(
        name,
        "ring" | "ipc" | "share" | "yield" | "preempt" | "longipc"
    );
    if let (true, [Some(a), Some(b)]) = (measured, k.marks) {
        let hw = b.hw.since(&a.hw);
        let st = b.stats.since(&a.stats);
        let switches = b.counters.switches - a.counters.switches;
        let trips = b.counters.round_trips - a.counters.round_trips;
        let ticks = u64::from(b.ticks.wrapping_sub(a.ticks));
        let instr = ticks_to_instructions(ticks);
        defmt::info!(
            "STEADY name={=str} mode={=str} n={=u32} touch={=u32} switches={=u32} dflush={=u32} tlb={=u32} tlb_entries={=u32} recycles={=u64} domain_faults={=u32} collisions={=u64} round_trips={=u32} seg_domains={=u32} ticks={=u64} instr={=u64}",
            name,
            m,
            n,
            p.touch,
            switches,
            hw.dcache_flushes,
            hw.tlb_flushes,
            hw.tlb_entries,
            st.recycles_clean + st.recycles_dirty + st.recycles_exclusive,
            b.counters.domain_faults - a.counters.domain_faults,
            st.collisions,
            trips,
            b.seg_domains,
            ticks,
            instr
        );
        if clock::MEASURING {
            report_measured(k, name, m, n, p, switches, trips, instr);
        }
    }
}

/// The measuring build's lines of a measured scenario (`SWITCHPATH`,
/// `TRANSITS`, `BENCH`; [`super::clock`]): `switches` and `trips` between
/// the marks, `instr` the window's instructions.
#[allow(clippy::too_many_arguments)]
fn report_measured(
    k: &Kernel,
    name: &str,
    m: &str,
    n: u32,
    p: &Params,
    switches: u32,
    trips: u32,
    instr: u64,
) {
    use clock::div_round;
    let c = k.clock;
    let path = |t: u64| ticks_to_instructions(t);
    defmt::info!(
        "SWITCHPATH name={=str} mode={=str} n={=u32} touch={=u32} measured={=u32} lean={=u32} mean={=u64} min={=u64} max={=u64} round_per_switch={=u64}",
        name,
        m,
        n,
        p.touch,
        c.n,
        k.marks[1].map_or(0, |b| b.counters.lean_switches)
            - k.marks[0].map_or(0, |a| a.counters.lean_switches),
        div_round(path(c.ticks), u64::from(c.n)),
        path(u64::from(c.min)),
        path(u64::from(c.max)),
        div_round(instr, u64::from(switches))
    );
    // Transits, vector to `movs` ([`super::clock`]); `min`/`max` where the
    // figure is one transit's.
    let bench = |kind: &str, value: u64, range: Option<(u64, u64)>| {
        match range {
        Some((lo, hi)) => defmt::info!(
            "BENCH kind={=str} mode={=str} n={=u32} touch={=u32} value={=u64} unit=instructions min={=u64} max={=u64}",
            kind,
            m,
            n,
            p.touch,
            value,
            lo,
            hi
        ),
        None => defmt::info!(
            "BENCH kind={=str} mode={=str} n={=u32} touch={=u32} value={=u64} unit=instructions",
            kind,
            m,
            n,
            p.touch,
            value
        ),
    }
    };
    let t = |k| clock::sum(Some(k));
    let total = clock::sum(None);
    // Every IPC transit: the hand-offs (the fast path's and the Rust short
    // path's) and the rest (queued, blocked, served from a queue).
    let handoff = t(Transit::IpcOneway)
        .plus(t(Transit::IpcCall))
        .plus(t(Transit::IpcReply));
    let ipc = handoff.plus(t(Transit::IpcQueued));
    defmt::info!(
        "TRANSITS name={=str} mode={=str} n={=u32} touch={=u32} all={=u32} all_instr={=u64} yield={=u32} oneway={=u32} call={=u32} reply={=u32} queued={=u32} preempt={=u32} fault={=u32} fault_instr={=u64} other={=u32} ipc={=u32} ipc_instr={=u64} ipc_handoff_pct={=u64}",
        name,
        m,
        n,
        p.touch,
        total.n,
        total.instructions,
        t(Transit::Yield).n,
        t(Transit::IpcOneway).n,
        t(Transit::IpcCall).n,
        t(Transit::IpcReply).n,
        t(Transit::IpcQueued).n,
        t(Transit::Preempt).n,
        t(Transit::Fault).n,
        t(Transit::Fault).instructions,
        t(Transit::Other).n,
        ipc.n,
        ipc.instructions,
        div_round(100 * u64::from(handoff.n), u64::from(ipc.n))
    );
    let range = |s: clock::Sum| Some((s.min, s.max));
    match name {
        "ring" => {
            if switches > 0 {
                // Every kernel instruction of the window (every transit,
                // the refill and collision faults included) per switch.
                bench(
                    "ring",
                    div_round(total.instructions, u64::from(switches)),
                    None,
                );
            }
            if ipc.n > 0 {
                bench("ipc_oneway", ipc.mean(), range(ipc));
            }
            if c.n > 0 {
                // From the scheduler's decision to the return to user mode.
                bench(
                    "switch_tail",
                    div_round(path(c.ticks), u64::from(c.n)),
                    Some((path(u64::from(c.min)), path(u64::from(c.max)))),
                );
            }
        }
        // Every IPC transit of the window per completed round trip.
        "ipc" if trips > 0 && ipc.n > 0 => bench(
            "ipc_roundtrip",
            div_round(ipc.instructions, u64::from(trips)),
            None,
        ),
        "yield" if t(Transit::Yield).n > 0 => {
            bench("yield", t(Transit::Yield).mean(), range(t(Transit::Yield)))
        }
        "preempt" if t(Transit::Preempt).n > 0 => bench(
            "preempt",
            t(Transit::Preempt).mean(),
            range(t(Transit::Preempt)),
        ),
        "longipc" => report_long(m, p.touch, t(Transit::LongIpc), &|kind: &str, v| {
            bench(kind, v, None)
        }),
        _ => {}
    }
}
