//! The event stream of one guest CPU, in execution order: instruction
//! fetches and data accesses go to the cache model, marker accesses to the
//! marker decoder, instructions to the transit counter.

use armv5_sim::coherence::{Access, AccessKind, Checker};
use mmu_armv5::marker::{self, DecodeError, Decoder, Key};

use crate::insn;
use crate::transit::Counter;

/// Where the accesses go: the coherence checker, or a recorder in tests.
pub trait Sink {
    /// One fetch, load or store, in execution order.
    fn access(&mut self, a: &Access);
    /// `n` fetches in a row, nothing between them: `first`, then
    /// `first.size` bytes further each time (each one's `pc` its `va`).
    fn fetches(&mut self, first: &Access, n: u32) {
        let step = u32::from(first.size);
        for k in 0..n {
            let off = k.wrapping_mul(step);
            let va = first.va.wrapping_add(off);
            self.access(&Access {
                pc: va,
                va,
                pa: first.pa.wrapping_add(off),
                ..*first
            });
        }
    }
    /// One decoded marker, at the instruction `pc` that completed it.
    fn marker(&mut self, key: Key, value: u32, pc: u32);
    /// The modelled cycles so far.
    fn cycles(&self) -> u64;
}

impl Sink for Checker {
    fn access(&mut self, a: &Access) {
        Checker::access(self, a);
    }
    fn fetches(&mut self, first: &Access, n: u32) {
        Checker::fetches(self, first, n);
    }
    fn marker(&mut self, key: Key, value: u32, pc: u32) {
        Checker::marker(self, key, value, pc);
    }
    fn cycles(&self) -> u64 {
        Checker::cycles(self)
    }
}

/// One executed instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Fetch {
    /// Its virtual address.
    pub va: u32,
    /// Its physical address (`None`: not in RAM, see [`crate::ram`]).
    pub pa: Option<u32>,
    /// Its encoding (the first four bytes, little-endian).
    pub insn: u32,
    /// Its size in bytes (4 for ARM, 2 for Thumb).
    pub size: u8,
}

impl Fetch {
    /// The fetch as the checker's access, at physical address `pa`.
    #[inline]
    fn access(&self, pa: u32, privileged: bool) -> Access {
        Access {
            pc: self.va,
            va: self.va,
            pa,
            size: self.size,
            kind: AccessKind::Fetch,
            io: false,
            privileged,
        }
    }
}

/// One data access of the instruction last fetched.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mem {
    /// Virtual address.
    pub va: u32,
    /// Physical address, as QEMU gives it.
    pub pa: u64,
    /// Bytes.
    pub size: u8,
    /// A store (else a load).
    pub store: bool,
    /// Device memory.
    pub io: bool,
}

/// Counts of what went through the tracer.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Instructions executed (after dropping re-executions).
    pub insns: u64,
    /// Privileged instructions among them.
    pub privileged: u64,
    /// Fetches with no physical address (not RAM), not given to the model.
    pub fetch_unknown_pa: u64,
    /// Loads given to the model.
    pub loads: u64,
    /// Stores given to the model.
    pub stores: u64,
    /// Device accesses among them.
    pub io: u64,
    /// Complete markers.
    pub markers: u64,
    /// Marker accesses that broke the protocol.
    pub marker_errors: u64,
    /// The first few of them, with the PC.
    pub first_marker_errors: Vec<(u32, DecodeError)>,
    /// Instructions QEMU started twice (`-icount` re-executes an I/O
    /// access's instruction alone); the first start is dropped.
    pub reexecuted: u64,
    /// Data accesses to the kernel's linear map.
    pub data_linear: u64,
    /// Those whose physical address was not the linear map's (pages the
    /// kernel maps elsewhere, such as an emulated TCM bank; informative).
    pub data_linear_other: u64,
    /// Fetches whose physical address (from the host address) was checked
    /// against QEMU's own translation of a data access in the same 1 KiB
    /// block by the same instruction (PC-relative literal loads).
    pub fetch_pa_checked: u64,
    /// Checked fetches whose physical address disagreed.
    pub fetch_pa_mismatches: u64,
}

/// The stream's state.
#[derive(Debug)]
pub struct Tracer<S> {
    /// The model (or recorder).
    pub sink: S,
    model: bool,
    /// The transit counter, if counting.
    pub transits: Option<Counter>,
    kernel_base: u32,
    ram_base: u32,
    ram_size: u32,
    high: bool,
    decoder: Decoder,
    pending: Option<(Fetch, u64, bool)>,
    /// Privileged instructions QEMU counted inline, without a callback
    /// (the plugin's fast transit mode; 0 otherwise).
    pub kernel_inline: u64,
    pc: u32,
    pc_pa: Option<u32>,
    privileged: bool,
    /// What went through.
    pub stats: Stats,
}

const FIRST_ERRORS: usize = 8;

impl<S: Sink> Tracer<S> {
    /// A tracer feeding `sink` (nothing if `model` is false), counting
    /// transits if `transits`.
    pub fn new(
        sink: S,
        model: bool,
        transits: bool,
        kernel_base: u32,
        ram_base: u32,
        ram_size: u32,
    ) -> Self {
        Tracer {
            sink,
            model,
            transits: transits.then(Counter::new),
            kernel_base,
            ram_base,
            ram_size,
            high: false,
            decoder: Decoder::new(),
            pending: None,
            kernel_inline: 0,
            pc: 0,
            pc_pa: None,
            privileged: true,
            stats: Stats::default(),
        }
    }

    /// Whether an instruction at `va` runs privileged: every instruction
    /// until the kernel first runs at its linear map (the boot code at its
    /// physical address, MMU off), then every one at or above
    /// `kernel_base` (the kernel, its vectors and devices; user code lives
    /// below 32 MiB).
    #[inline]
    fn privileged_at(&mut self, va: u32) -> bool {
        if va >= self.kernel_base {
            self.high = true;
        }
        va >= self.kernel_base || !self.high
    }

    /// Tells the tracer the kernel has run at its linear map (the plugin
    /// calls it when it translates such an instruction, which then runs
    /// before any other).
    pub fn saw_high(&mut self) {
        self.high = true;
    }

    /// An instruction about to execute.
    pub fn fetch(&mut self, f: Fetch) {
        if let Some((p, k, privileged)) = self.pending.take() {
            if p.va == f.va && p.size == 4 && insn::is_memory(p.insn) {
                // Started, then abandoned before its access: QEMU runs it again.
                self.stats.reexecuted += 1;
            } else {
                self.deliver(p, k, privileged);
            }
        }
        let k = self.kernel_inline + self.stats.privileged;
        let privileged = self.privileged_at(f.va);
        self.pending = Some((f, k, privileged));
    }

    /// Instructions started one after the other with nothing between
    /// them (a prefix of a translation block): the same as [`Tracer::fetch`]
    /// for each, but the model gets each run of consecutive instructions
    /// at once ([`Sink::fetches`]). With `accessing`, the last one is
    /// making a data access ([`Tracer::mem`] comes next): it cannot be a
    /// start abandoned for a re-execution, so it goes with the rest
    /// instead of staying pending. With transits counted, one by one.
    pub fn fetch_many(&mut self, fs: &[Fetch], accessing: bool) {
        let Some((first, rest)) = fs.split_first() else {
            return;
        };
        self.fetch(*first);
        if self.transits.is_some() {
            for f in rest {
                self.fetch(*f);
            }
            return;
        }
        let (run_on, last) = match (accessing, rest.split_last()) {
            (true, _) => (rest, None),
            (false, Some((last, middle))) => (middle, Some(last)),
            (false, None) => return,
        };
        // The pending instruction (`first`) and the others up to the last
        // are each followed by another fetch at another address:
        // delivered; the last one stays pending, as `fetch` leaves it,
        // unless it is accessing data.
        let Some((p, _, privileged)) = self.pending.take() else {
            return;
        };
        let mut run = (p, privileged, 1u32);
        for f in run_on {
            let privileged = self.privileged_at(f.va);
            let (r, rp, n) = run;
            let step = u32::from(r.size);
            let next_va = r.va.wrapping_add(n.wrapping_mul(step));
            let next_pa = r.pa.map(|pa| pa.wrapping_add(n.wrapping_mul(step)));
            if f.va == next_va
                && f.pa.is_some()
                && f.pa == next_pa
                && f.size == r.size
                && privileged == rp
            {
                run.2 += 1;
            } else {
                self.deliver_run(run.0, run.1, run.2);
                run = (*f, privileged, 1);
            }
        }
        self.deliver_run(run.0, run.1, run.2);
        if let Some(last) = last {
            let k = self.kernel_inline + self.stats.privileged;
            let privileged = self.privileged_at(last.va);
            self.pending = Some((*last, k, privileged));
        }
    }

    /// Delivers `n` consecutive instructions from `f` (`n` is 1 unless
    /// `f.pa` is known), as `n` calls of `deliver` without transits.
    fn deliver_run(&mut self, f: Fetch, privileged: bool, n: u32) {
        if n == 1 || self.transits.is_some() {
            let step = u32::from(f.size);
            for k in 0..n {
                let off = k.wrapping_mul(step);
                let g = Fetch {
                    va: f.va.wrapping_add(off),
                    pa: f.pa.map(|pa| pa.wrapping_add(off)),
                    ..f
                };
                self.deliver(g, 0, privileged);
            }
            return;
        }
        let Some(pa) = f.pa else {
            return;
        };
        let last = n.wrapping_sub(1).wrapping_mul(u32::from(f.size));
        self.pc = f.va.wrapping_add(last);
        self.pc_pa = Some(pa.wrapping_add(last));
        self.privileged = privileged;
        self.stats.insns += u64::from(n);
        if privileged {
            self.stats.privileged += u64::from(n);
        }
        if self.model {
            self.sink.fetches(&f.access(pa, privileged), n);
        }
    }

    #[inline]
    fn deliver(&mut self, f: Fetch, k: u64, privileged: bool) {
        self.pc = f.va;
        self.pc_pa = f.pa;
        self.privileged = privileged;
        self.stats.insns += 1;
        self.stats.privileged += u64::from(privileged);
        if let Some(t) = self.transits.as_mut() {
            let cycles = self.sink.cycles();
            if privileged {
                t.kernel(f.va, cycles, k);
            } else {
                t.user(f.pa, f.insn, usize::from(f.size), cycles, k);
            }
        }
        match f.pa {
            Some(pa) if self.model => self.sink.access(&f.access(pa, privileged)),
            Some(_) => {}
            None => self.stats.fetch_unknown_pa += 1,
        }
    }

    /// A data access of the instruction last fetched.
    #[inline]
    pub fn mem(&mut self, m: Mem) {
        if let Some((p, k, privileged)) = self.pending.take() {
            self.deliver(p, k, privileged);
        }
        if marker::in_window(m.va) {
            match self.decoder.feed(m.va) {
                Ok(Some((key, value))) => {
                    self.stats.markers += 1;
                    if self.model {
                        self.sink.marker(key, value, self.pc);
                    }
                }
                Ok(None) => {}
                Err(e) => {
                    self.stats.marker_errors += 1;
                    if self.stats.first_marker_errors.len() < FIRST_ERRORS {
                        self.stats.first_marker_errors.push((self.pc, e));
                    }
                }
            }
            return;
        }
        let lin = m.va.wrapping_sub(self.kernel_base);
        if !m.io && m.va >= self.kernel_base && lin < self.ram_size && self.high {
            self.stats.data_linear += 1;
            if m.pa != u64::from(self.ram_base.wrapping_add(lin)) {
                self.stats.data_linear_other += 1;
            }
        }
        if let (Some(pc_pa), false) = (self.pc_pa, m.io) {
            if (m.va ^ self.pc) < 0x400 {
                self.stats.fetch_pa_checked += 1;
                let want = pc_pa.wrapping_add(m.va.wrapping_sub(self.pc));
                if m.pa != u64::from(want) {
                    self.stats.fetch_pa_mismatches += 1;
                }
            }
        }
        if m.store {
            self.stats.stores += 1;
        } else {
            self.stats.loads += 1;
        }
        self.stats.io += u64::from(m.io);
        if self.model {
            self.sink.access(&Access {
                pc: self.pc,
                va: m.va,
                pa: m.pa as u32,
                size: m.size,
                kind: if m.store {
                    AccessKind::Store
                } else {
                    AccessKind::Load
                },
                io: m.io || m.pa > u64::from(u32::MAX),
                privileged: self.privileged,
            });
        }
    }

    /// Delivers the last instruction (at exit).
    pub fn finish(&mut self) {
        if let Some((p, k, privileged)) = self.pending.take() {
            self.deliver(p, k, privileged);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transit::Kind;

    #[derive(Default)]
    struct Rec {
        accesses: Vec<Access>,
        markers: Vec<(Key, u32, u32)>,
    }

    impl Sink for Rec {
        fn access(&mut self, a: &Access) {
            self.accesses.push(*a);
        }
        fn marker(&mut self, key: Key, value: u32, pc: u32) {
            self.markers.push((key, value, pc));
        }
        fn cycles(&self) -> u64 {
            self.accesses.len() as u64
        }
    }

    const LDR: u32 = 0xE591_0000; // ldr r0, [r1]
    const LDRB: u32 = 0xE5D1_0000; // ldrb r0, [r1]
    const NOP: u32 = 0xE1A0_0000;

    fn f(va: u32, pa: Option<u32>, insn: u32) -> Fetch {
        Fetch {
            va,
            pa,
            insn,
            size: 4,
        }
    }

    fn ld(va: u32, pa: u64) -> Mem {
        Mem {
            va,
            pa,
            size: 4,
            store: false,
            io: false,
        }
    }

    #[test]
    fn markers_go_to_the_decoder_and_the_rest_to_the_model() {
        let mut t = Tracer::new(Rec::default(), true, false, 0xC000_0000, 0, 128 << 20);
        // Boot at the physical address: privileged although low.
        t.fetch(f(0x0010_0000, Some(0x0010_0000), NOP));
        t.fetch(f(0xC010_0004, Some(0x0010_0004), LDR));
        t.mem(ld(0xC020_0000, 0x0020_0000));
        let key = Key::Cp15 {
            read: false,
            crn: 3,
            crm: 0,
            opc2: 0,
        };
        t.fetch(f(0xC010_0008, Some(0x0010_0008), LDRB));
        t.mem(ld(marker::first(key, 0x5555_0001), 0x0800_0000));
        t.fetch(f(0xC010_000C, Some(0x0010_000C), LDRB));
        t.mem(ld(marker::second(0x5555_0001), 0x0800_0000));
        // User code now: not privileged.
        t.fetch(f(0x8000, Some(0x0300_0000), NOP));
        t.finish();
        let r = &t.sink;
        assert_eq!(r.markers, [(key, 0x5555_0001, 0xC010_000C)]);
        let kinds: Vec<_> = r
            .accesses
            .iter()
            .map(|a| (a.kind, a.va, a.privileged))
            .collect();
        assert_eq!(
            kinds,
            [
                (AccessKind::Fetch, 0x0010_0000, true),
                (AccessKind::Fetch, 0xC010_0004, true),
                (AccessKind::Load, 0xC020_0000, true),
                (AccessKind::Fetch, 0xC010_0008, true),
                (AccessKind::Fetch, 0xC010_000C, true),
                (AccessKind::Fetch, 0x8000, false),
            ]
        );
        assert_eq!(r.accesses[2].pc, 0xC010_0004);
        assert_eq!((t.stats.markers, t.stats.marker_errors), (1, 0));
        assert_eq!((t.stats.data_linear, t.stats.data_linear_other), (1, 0));
        assert_eq!((t.stats.insns, t.stats.privileged), (5, 4));
    }

    #[test]
    fn broken_markers_and_wrong_physical_addresses_are_counted() {
        let mut t = Tracer::new(Rec::default(), true, false, 0xC000_0000, 0, 128 << 20);
        t.fetch(f(0xC010_0000, Some(0x0010_0000), LDRB));
        t.mem(ld(marker::second(1), 0));
        t.fetch(f(0xC010_0004, Some(0x0010_0004), LDR));
        t.mem(ld(0xC000_1000, 0x0000_2000));
        assert_eq!(t.stats.marker_errors, 1);
        assert_eq!(t.stats.first_marker_errors[0].0, 0xC010_0000);
        assert_eq!((t.stats.data_linear, t.stats.data_linear_other), (1, 1));
        // A literal load next to its instruction checks the fetch's
        // physical address: right, then wrong.
        t.fetch(f(0xC010_0008, Some(0x0010_0008), LDR));
        t.mem(ld(0xC010_0020, 0x0010_0020));
        t.fetch(f(0xC010_000C, Some(0x0070_000C), LDR));
        t.mem(ld(0xC010_0020, 0x0010_0020));
        assert_eq!(
            (t.stats.fetch_pa_checked, t.stats.fetch_pa_mismatches),
            (2, 1)
        );
        // Unknown physical address: counted, not modelled.
        t.fetch(f(0xC010_0008, None, NOP));
        t.finish();
        assert_eq!(t.stats.fetch_unknown_pa, 1);
        assert!(t.sink.markers.is_empty());
    }

    #[test]
    fn an_abandoned_io_instruction_counts_once() {
        let mut t = Tracer::new(Rec::default(), true, true, 0xC000_0000, 0, 128 << 20);
        t.fetch(f(0xC010_0000, Some(0x0010_0000), NOP));
        t.fetch(f(0xC010_0004, Some(0x0010_0004), LDR));
        t.fetch(f(0xC010_0004, Some(0x0010_0004), LDR));
        t.mem(Mem {
            io: true,
            ..ld(0xF000_1000, 0x101F_1000)
        });
        // A non-memory instruction repeated (a branch to itself) is not dropped.
        t.fetch(f(0xC010_0008, Some(0x0010_0008), 0xEAFF_FFFE));
        t.fetch(f(0xC010_0008, Some(0x0010_0008), 0xEAFF_FFFE));
        t.finish();
        assert_eq!(t.stats.reexecuted, 1);
        assert_eq!(t.stats.insns, 4);
        assert_eq!(t.stats.io, 1);
    }

    #[test]
    fn transits_see_user_and_kernel_instructions() {
        let mut t = Tracer::new(Rec::default(), true, true, 0xC000_0000, 0, 128 << 20);
        t.fetch(f(0xC010_0000, Some(0x0010_0000), NOP));
        t.fetch(f(0x8000, Some(0x0300_0000), 0xE3A0_7000)); // mov r7, #0 (YIELD)
        t.fetch(f(0x8004, Some(0x0300_0004), 0xEF00_0000));
        for k in 0..3 {
            t.fetch(f(0xFFFF_0008 + 0x100 * k, Some(0x0010_1000), NOP));
        }
        t.fetch(f(0x8000, Some(0x0400_0000), NOP));
        t.finish();
        let c = t.transits.as_ref().unwrap();
        let s = &c.samples()[&(None, Kind::Yield)];
        assert_eq!(s.insns, [3]);
        // The recorder's "cycles" count accesses: three kernel fetches.
        assert_eq!(s.cycles, [3]);
    }
}
