//! The plugin's state behind the FFI: safe, and driven by the tests the
//! same way QEMU drives it.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;

use armv5_sim::coherence::{Checker, Cpu, ViolationKind};

use crate::args::{Args, CpuPreset};
use crate::ram::HostMap;
use crate::trace::{Fetch, Mem, Tracer};
use crate::transit::{Kind, Samples, Stats as TStats, VECTORS};

/// First line of every report.
pub const REPORT_HEADER: &str = "cache-check report v1";

/// How QEMU is to watch one translated instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Watch {
    /// Counted inline when it starts (the count of instructions started,
    /// [`Plugin::block_exec`]), a callback per data access; its block has
    /// a callback when it starts ([`Plugin::block`]) (model on).
    Full,
    /// A callback when it starts (model off: user instructions and the
    /// exception vectors, where transits start and end).
    Start,
    /// Only counted, inline (model off: the kernel's other instructions).
    Inline,
}

/// One translated instruction, looked up by the index QEMU passes back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Insn {
    va: u32,
    pa: Option<u32>,
    insn: u32,
    size: u8,
}

/// The plugin.
#[derive(Debug)]
pub struct Plugin {
    args: Args,
    map: HostMap,
    insns: Vec<Insn>,
    known: HashMap<(u32, Option<u32>, u32), u32>,
    /// Translated blocks (model on): their instructions in order.
    blocks: Vec<Box<[Fetch]>>,
    known_blocks: HashMap<Box<[Fetch]>, u32>,
    /// The block running: its handle, the count of instructions started
    /// when it began, and how many of its instructions went to the tracer.
    running: Option<(u32, u64, usize)>,
    tracer: Tracer<Checker>,
    high: bool,
}

fn cpu(p: CpuPreset) -> Cpu {
    match p {
        CpuPreset::Arm926 => Cpu::Arm926,
        CpuPreset::Sa1110 => Cpu::Sa1110,
        CpuPreset::Pxa255 => Cpu::Pxa255,
    }
}

impl Plugin {
    /// A plugin for `args`.
    pub fn new(args: Args) -> Plugin {
        let mut checker = Checker::new(cpu(args.cpu));
        checker.set_assume_caches_on(args.assume_caches);
        Plugin {
            map: HostMap::new(args.ram_base, args.ram_size, args.kernel_base),
            insns: Vec::new(),
            known: HashMap::new(),
            blocks: Vec::new(),
            known_blocks: HashMap::new(),
            running: None,
            tracer: Tracer::new(
                checker,
                args.model,
                args.transits,
                args.kernel_base,
                args.ram_base,
                args.ram_size,
            ),
            args,
            high: false,
        }
    }

    /// The arguments.
    pub fn args(&self) -> &Args {
        &self.args
    }

    /// An instruction being translated: its virtual address, the host
    /// address of its bytes (`None` if QEMU gave none) and its bytes.
    /// Returns the handle its callbacks carry and how to watch it.
    pub fn translate(&mut self, va: u64, host: Option<u64>, bytes: &[u8]) -> (u32, Watch) {
        let va = va as u32;
        let high = va >= self.args.kernel_base;
        if high {
            self.high = true;
            // Model off, user instructions run uncounted: the kernel's
            // first high instruction is the next to run. Model on, every
            // instruction reaches the tracer, which sees it run (and a
            // block's translation comes before the previous block's
            // instructions reach the tracer).
            if !self.args.model {
                self.tracer.saw_high();
            }
        }
        let watch = if self.args.model {
            Watch::Full
        } else if self.args.transits && (va & !0x1F == VECTORS || (!high && self.high)) {
            // A user instruction (below the kernel, after boot) or a vector.
            Watch::Start
        } else {
            Watch::Inline
        };
        let mut w = [0u8; 4];
        let n = bytes.len().min(4);
        w[..n].copy_from_slice(&bytes[..n]);
        let insn = Insn {
            va,
            pa: self.map.translate(va, host),
            insn: u32::from_le_bytes(w),
            size: bytes.len().min(255) as u8,
        };
        let key = (insn.va, insn.pa, insn.insn);
        if let Some(&i) = self.known.get(&key) {
            return (i, watch);
        }
        let i = self.insns.len() as u32;
        self.insns.push(insn);
        self.known.insert(key, i);
        (i, watch)
    }

    /// A translated block (model on) of the instructions with handles
    /// `insns` (from [`Plugin::translate`], in order). Returns the handle
    /// its start callback carries.
    pub fn block(&mut self, insns: &[u32]) -> u32 {
        let fs: Box<[Fetch]> = insns
            .iter()
            .filter_map(|&i| self.insns.get(i as usize))
            .map(|x| Fetch {
                va: x.va,
                pa: x.pa,
                insn: x.insn,
                size: x.size,
            })
            .collect();
        if let Some(&b) = self.known_blocks.get(&fs) {
            return b;
        }
        let b = self.blocks.len() as u32;
        self.blocks.push(fs.clone());
        self.known_blocks.insert(fs, b);
        b
    }

    /// Hands the tracer the instructions of the running block that have
    /// started: `started` is QEMU's inline count of instructions started
    /// (each block instruction adds one as it starts), and a block's
    /// instructions start in order, so the first `started - base` did.
    /// With `accessing`, the last of them is making a data access.
    #[inline]
    fn catch_up(&mut self, started: u64, accessing: bool) {
        let Some((b, base, done)) = self.running else {
            return;
        };
        let Some(fs) = self.blocks.get(b as usize) else {
            return;
        };
        let n = usize::try_from(started.wrapping_sub(base))
            .unwrap_or(usize::MAX)
            .min(fs.len());
        if n > done {
            self.tracer.fetch_many(&fs[done..n], accessing);
            self.running = Some((b, base, n));
        }
    }

    /// The block with handle `b` starts; `started` instructions have
    /// started so far (QEMU's inline count).
    pub fn block_exec(&mut self, b: u32, started: u64) {
        self.catch_up(started, false);
        self.running = Some((b, started, 0));
    }

    /// A data access (model on) at `va` (physical `pa`, 2^`shift` bytes)
    /// by the running block's instruction that started last, `started`
    /// instructions having started.
    #[inline]
    pub fn block_mem(&mut self, va: u64, pa: u64, shift: u32, store: bool, io: bool, started: u64) {
        self.catch_up(started, true);
        self.mem(va, pa, shift, store, io);
    }

    /// The instruction with handle `i` starts; `inline` privileged    /// The instruction with handle `i` starts; `inline` privileged
    /// instructions have been counted inline so far.
    pub fn exec(&mut self, i: u32, inline: u64) {
        self.tracer.kernel_inline = inline;
        if let Some(x) = self.insns.get(i as usize) {
            self.tracer.fetch(Fetch {
                va: x.va,
                pa: x.pa,
                insn: x.insn,
                size: x.size,
            });
        }
    }

    /// A data access at `va` (physical `pa`, 2^`shift` bytes).
    #[inline]
    pub fn mem(&mut self, va: u64, pa: u64, shift: u32, store: bool, io: bool) {
        self.tracer.mem(Mem {
            va: va as u32,
            pa,
            size: 1u8 << shift.min(3),
            store,
            io,
        });
    }

    /// Total violations so far.
    pub fn violations(&self) -> u64 {
        self.tracer.sink.counts().total()
    }

    /// The report, machine-readable: one record per line, `key=value`
    /// words (the format `cargo xtask` parses; see the crate docs);
    /// `inline` privileged instructions were counted inline, `started`
    /// instructions of blocks started (model on, see [`Plugin::block_exec`]).
    pub fn report(&mut self, inline: u64, started: u64) -> String {
        self.catch_up(started, false);
        self.tracer.kernel_inline = inline;
        self.tracer.finish();
        let s = &self.tracer.stats;
        let c = &self.tracer.sink;
        let mut o = String::new();
        let _ = writeln!(o, "{REPORT_HEADER}");
        let _ = writeln!(
            o,
            "run cpu={} ram_base={:#x} ram_size={:#x} kernel_base={:#x} model={} transits={} assume_caches={}",
            self.args.cpu.name(),
            self.args.ram_base,
            self.args.ram_size,
            self.args.kernel_base,
            if self.args.model { "on" } else { "off" },
            if self.args.transits { "on" } else { "off" },
            if self.args.assume_caches { "on" } else { "off" },
        );
        let _ = writeln!(
            o,
            "stats insns={} privileged={} loads={} stores={} io={} markers={} marker_errors={} \
             reexecuted={} fetch_unknown_pa={} fetch_pa_checked={} fetch_pa_mismatches={} \
             fetch_linear={} fetch_linear_other={} data_linear={} data_linear_other={} \
             model_instructions={} cycles={} translated={}",
            s.insns + inline,
            s.privileged + inline,
            s.loads,
            s.stores,
            s.io,
            s.markers,
            s.marker_errors,
            s.reexecuted,
            s.fetch_unknown_pa,
            s.fetch_pa_checked,
            s.fetch_pa_mismatches,
            self.map.checked,
            self.map.mismatches,
            s.data_linear,
            s.data_linear_other,
            c.instructions(),
            c.cycles(),
            self.insns.len(),
        );
        let m = c.stats();
        let _ = writeln!(
            o,
            "model fetches={} loads={} stores={} io={} ifills={} dfills={} write_backs={} \
             uncached_reads={} uncached_writes={} tlb_misses={} markers={} sctlr={:#x} ttbr={:#x} \
             dacr={:#x} fcseidr={:#x} uncached_ranges={}",
            m.fetches,
            m.loads,
            m.stores,
            m.io,
            m.ifills,
            m.dfills,
            m.write_backs,
            m.uncached_reads,
            m.uncached_writes,
            m.tlb_misses,
            m.markers,
            c.registers()[0],
            c.registers()[1],
            c.registers()[2],
            c.registers()[3],
            c.uncached_ranges().len()
        );
        for (b, e) in c.uncached_ranges() {
            let _ = writeln!(o, "uncached begin={b:#010x} end={e:#010x}");
        }
        for (va, pa, host) in &self.map.first_mismatches {
            let _ = writeln!(
                o,
                "fetch_linear_other va={va:#010x} pa={pa:#010x} host={host:#x}"
            );
        }
        for (pc, e) in &s.first_marker_errors {
            let _ = writeln!(o, "marker_error pc={pc:#010x} error={e:?}");
        }
        let counts = c.counts();
        for k in ViolationKind::ALL {
            let _ = writeln!(o, "count kind={} n={}", k.name(), counts.of(k));
        }
        for v in c.violations().iter().take(self.args.first) {
            let _ = writeln!(
                o,
                "violation kind={} pc={:#010x} va={:#010x} mva={:#010x} pa={:#010x} mode={} space={} scenario={}",
                v.kind.name(),
                v.pc,
                v.va,
                v.mva,
                v.pa,
                if v.privileged { "svc" } else { "usr" },
                v.space,
                v.scenario
            );
        }
        if let Some(t) = self.tracer.transits.as_ref() {
            let _ = writeln!(o, "windows n={}", t.windows());
            // Every IPC transit of a window together, as kind `ipc_all`.
            let mut all: BTreeMap<Option<u32>, Samples> = BTreeMap::new();
            for ((w, kind), smp) in t.samples() {
                if matches!(kind, Kind::IpcHandoff | Kind::IpcQueued) {
                    let a = all.entry(*w).or_default();
                    a.insns.extend(&smp.insns);
                    a.cycles.extend(&smp.cycles);
                }
            }
            let merged = all.iter().map(|(w, s)| ((*w, "ipc_all"), s));
            let each = t.samples().iter().map(|((w, k), s)| ((*w, k.name()), s));
            for ((w, kind), smp) in each.chain(merged) {
                let (Some(i), Some(cy)) = (TStats::of(&smp.insns), TStats::of(&smp.cycles)) else {
                    continue;
                };
                let win = w.map_or_else(|| "none".to_string(), |w| w.to_string());
                let _ = writeln!(
                    o,
                    "transit window={win} kind={kind} n={} min={} median={} max={} mean={:.1} \
                     cycles_min={} cycles_median={} cycles_max={} cycles_mean={:.1}",
                    i.n, i.min, i.median, i.max, i.mean, cy.min, cy.median, cy.max, cy.mean
                );
            }
            for (w, tot) in t.totals() {
                let _ = writeln!(
                    o,
                    "window index={w} insns={} cycles={} switches={}",
                    tot.insns, tot.cycles, tot.switches
                );
            }
        }
        o
    }

    /// A few lines for QEMU's log (`qemu_plugin_outs`).
    pub fn summary(&self) -> String {
        let s = &self.tracer.stats;
        let c = &self.tracer.sink;
        let mut o = format!(
            "cache-check: {} instructions, {} loads, {} stores, {} markers, {} violations ({})\n",
            s.insns,
            s.loads,
            s.stores,
            s.markers,
            c.counts().total(),
            c.counts()
        );
        if let Some(t) = self.tracer.transits.as_ref() {
            let n: usize = t
                .samples()
                .iter()
                .filter(|((_, k), _)| *k != Kind::Mark)
                .map(|(_, s)| s.insns.len())
                .sum();
            let _ = writeln!(o, "cache-check: {n} transits in {} windows", t.windows());
        }
        o
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plugin(extra: &[&str]) -> Plugin {
        let mut a = vec!["cpu=arm926", "ram_base=0", "ram_size=0x8000000"];
        a.extend(extra);
        Plugin::new(crate::args::parse(a).unwrap())
    }

    #[test]
    fn translations_are_shared_and_the_report_has_every_record() {
        let mut p = plugin(&["transits=on"]);
        let host = 0x7000_0000_0000u64;
        let nop = 0xE1A0_0000u32.to_le_bytes();
        let (a, wa) = p.translate(0x0010_0000, Some(host + 0x10_0000), &nop);
        p.exec(a, 0);
        let (b, _) = p.translate(0xC010_0000, Some(host + 0x10_0000), &nop);
        assert_ne!(a, b);
        assert_eq!(wa, Watch::Full);
        assert_eq!(p.translate(0xC010_0000, Some(host + 0x10_0000), &nop).0, b);
        p.exec(b, 0);
        p.mem(0xC000_0100, 0x100, 2, true, false);
        p.exec(999, 0); // an unknown handle is ignored
        let r = p.report(0, 0);
        assert!(r.starts_with(REPORT_HEADER), "{r}");
        assert!(
            r.contains("stats insns=2 privileged=2 loads=0 stores=1 "),
            "{r}"
        );
        assert!(r.contains("fetch_linear=2 fetch_linear_other=0"), "{r}");
        assert!(r.contains("data_linear=1 data_linear_other=0"), "{r}");
        for k in ViolationKind::ALL {
            assert!(r.contains(&format!("count kind={} n=0", k.name())), "{r}");
        }
        assert!(r.contains("windows n=0"), "{r}");
        assert!(p.summary().contains("2 instructions"));
        assert_eq!(p.violations(), 0);
        assert_eq!(p.args().first, 20);
    }

    /// Drives `p` through two user instructions of two processes around a
    /// yield of `kernel` privileged instructions, the way QEMU would with
    /// the watch each translation asks for.
    fn yield_transit(p: &mut Plugin, kernel: u64) -> String {
        let host = 0x7000_0000_0000u64;
        let mut inline = 0;
        let mut run = |p: &mut Plugin, va: u32, pa: u64, insn: u32| {
            let (i, w) = p.translate(u64::from(va), Some(host + pa), &insn.to_le_bytes());
            match w {
                Watch::Inline => inline += 1,
                Watch::Start | Watch::Full => p.exec(i, inline),
            }
        };
        run(p, 0x0010_0000, 0x0010_0000, 0xE1A0_0000); // boot, MMU off
        run(p, 0xC010_0000, 0x0010_0000, 0xE1A0_0000);
        run(p, 0x8000, 0x0300_0000, 0xE3A0_7000); // mov r7, #0 (YIELD)
        run(p, 0x8004, 0x0300_0004, 0xEF00_0000); // svc #0
        run(p, 0xFFFF_0008, 0x0010_2008, 0xE59F_F018); // the SVC vector
        for k in 1..kernel {
            run(
                p,
                0xC010_1000 + 4 * k as u32,
                0x0010_1000 + 4 * k,
                0xE1A0_0000,
            );
        }
        run(p, 0x8008, 0x0400_0008, 0xE1A0_0000); // another process
        p.report(inline, 0)
    }

    #[test]
    fn inline_counting_gives_the_callbacks_figures() {
        let full = yield_transit(&mut plugin(&["transits=on"]), 181);
        let fast = yield_transit(&mut plugin(&["transits=on", "model=off"]), 181);
        let line = |r: &str| {
            r.lines()
                .find(|l| l.starts_with("transit window=none kind=yield"))
                .map(|l| l.split(" cycles_").next().unwrap_or("").to_string())
        };
        assert_eq!(
            line(&full),
            Some("transit window=none kind=yield n=1 min=181 median=181 max=181 mean=181.0".into())
        );
        assert_eq!(line(&full), line(&fast));
        assert!(fast.contains("stats insns=186 privileged=183 "), "{fast}");
        assert!(full.contains("stats insns=186 privileged=183 "), "{full}");
    }

    /// One guest run, as QEMU would report it with the model on: blocks
    /// of (va, pa, encoding), and per block how many instructions started
    /// and the data accesses (va, pa, store) of its instructions.
    type Run<'a> = &'a [(&'a [(u32, u32, u32)], usize, &'a [(usize, u32, u64, bool)])];

    /// The report of `run` through the block callbacks (`blocks`) or one
    /// callback per instruction.
    fn drive(run: Run<'_>, blocks: bool) -> String {
        let mut p = plugin(&[]);
        let host = 0x7000_0000_0000u64;
        let mut started = 0u64;
        for (insns, n, mems) in run {
            let hs: Vec<u32> = insns
                .iter()
                .map(|&(va, pa, w)| {
                    p.translate(u64::from(va), Some(host + u64::from(pa)), &w.to_le_bytes())
                        .0
                })
                .collect();
            let b = p.block(&hs);
            if blocks {
                p.block_exec(b, started);
            }
            for (k, &h) in hs.iter().enumerate().take(*n) {
                started += 1;
                if !blocks {
                    p.exec(h, 0);
                }
                for &(_, va, pa, store) in mems.iter().filter(|m| m.0 == k) {
                    if blocks {
                        p.block_mem(u64::from(va), pa, 2, store, false, started);
                    } else {
                        p.mem(u64::from(va), pa, 2, store, false);
                    }
                }
            }
        }
        p.report(0, started)
    }

    #[test]
    fn block_callbacks_give_the_per_instruction_figures() {
        const NOP: u32 = 0xE1A0_0000;
        const LDR: u32 = 0xE591_0000;
        const STR: u32 = 0xE581_0000;
        let seq = |va: u32, pa: u32, ws: &[u32]| -> Vec<(u32, u32, u32)> {
            ws.iter()
                .enumerate()
                .map(|(k, &w)| (va + 4 * k as u32, pa + 4 * k as u32, w))
                .collect()
        };
        // Boot code, then the kernel: a block across a line, one whose load
        // faults at its third instruction (the rest never starts), the
        // abort vector, a store the guest runs twice (started, abandoned,
        // then again alone), and code written by a store then run.
        let b0 = seq(0x0010_0000, 0x0010_0000, &[NOP; 3]);
        let b1 = seq(
            0xC010_0010,
            0x0010_0010,
            &[NOP, NOP, NOP, LDR, NOP, NOP, STR, NOP],
        );
        let b2 = seq(0xC010_0040, 0x0010_0040, &[NOP, LDR, NOP, NOP]);
        let b3 = seq(0xFFFF_0010, 0x0000_0010, &[NOP, NOP]);
        let b4 = seq(0xC010_0100, 0x0010_0100, &[NOP, STR]);
        let b5 = seq(0xC010_0104, 0x0010_0104, &[STR]);
        let b6 = seq(0xC010_0200, 0x0010_0200, &[NOP, NOP, NOP]);
        let run: Run<'_> = &[
            (&b0, 3, &[]),
            (
                &b1,
                8,
                &[
                    (3, 0xC020_0000, 0x20_0000, false),
                    (6, 0xC010_0204, 0x10_0204, true),
                ],
            ),
            (&b2, 2, &[]),
            (&b3, 2, &[]),
            (&b4, 2, &[]),
            (&b5, 1, &[(0, 0xC020_0010, 0x20_0010, true)]),
            (&b6, 3, &[]),
        ];
        let a = drive(run, false);
        let b = drive(run, true);
        assert_eq!(a, b);
        assert!(
            a.contains("stats insns=20 privileged=20 loads=1 stores=2 "),
            "{a}"
        );
        assert!(a.contains("reexecuted=1 "), "{a}");
    }
}
