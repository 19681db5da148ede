//! A VIVT cache whose lines hold word versions instead of data.
//!
//! Lines are tagged by MVA only and keep the physical line address they were
//! filled from (for write-back, as the ARM926EJ-S, SA-1110 and XScale keep
//! it), two dirty bits (one per half line, as the three CPUs have) and one
//! version per word.

use super::versions::{Versions, GARBAGE};
use crate::config::{CacheConfig, Replacement};
use crate::rng::Rng;

/// Bit 0 of a tag: the line is valid.
const VALID: u32 = 1;

/// The physical line address of a line allocated without a translation
/// (XScale line allocate on a model-TLB miss): adopted by the first access.
pub(crate) const UNKNOWN_PA: u32 = 1;

/// One cache of versions.
#[derive(Clone, Debug)]
pub(crate) struct VCache {
    sets: u32,
    ways: u32,
    line_shift: u32,
    wpl: usize,
    tag: Vec<u32>,
    pa: Vec<u32>,
    /// Bit 0: first half dirty; bit 1: second half dirty.
    dirty: Vec<u8>,
    ver: Vec<u32>,
    rr: Vec<u32>,
    stamp: Vec<u64>,
    clock: u64,
    policy: Replacement,
    rng: Rng,
    dirty_lines: usize,
    last: usize,
}

/// What a write-back did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct WriteBack {
    /// Lines written back (at least one dirty half).
    pub(crate) lines: u64,
}

impl VCache {
    /// An empty cache of a validated geometry.
    pub(crate) fn new(cfg: CacheConfig, seed: u64) -> VCache {
        let lines = cfg.lines().unwrap_or(1).max(1) as usize;
        let sets = cfg.sets().unwrap_or(1).max(1);
        let wpl = (cfg.line / 4).max(2) as usize;
        VCache {
            sets,
            ways: cfg.ways.max(1),
            line_shift: cfg.line.trailing_zeros(),
            wpl,
            tag: vec![0; lines],
            pa: vec![0; lines],
            dirty: vec![0; lines],
            ver: vec![0; lines * wpl],
            rr: vec![0; sets as usize],
            stamp: vec![0; lines],
            clock: 0,
            policy: cfg.replacement,
            rng: Rng::new(seed),
            dirty_lines: 0,
            last: 0,
        }
    }

    /// Changes the replacement policy (the ARM926EJ-S's SCTLR.RR).
    pub(crate) fn set_policy(&mut self, policy: Replacement) {
        self.policy = policy;
    }

    /// Mask of the offset within a line.
    #[inline(always)]
    pub(crate) fn line_mask(&self) -> u32 {
        (1 << self.line_shift) - 1
    }

    /// Number of lines.
    pub(crate) fn lines(&self) -> usize {
        self.tag.len()
    }

    /// Number of lines with a dirty half.
    pub(crate) fn dirty_lines(&self) -> usize {
        self.dirty_lines
    }

    #[inline(always)]
    fn set_of(&self, mva: u32) -> usize {
        ((mva >> self.line_shift) & (self.sets - 1)) as usize
    }

    #[inline(always)]
    fn word_of(&self, mva: u32) -> usize {
        ((mva >> 2) as usize) & (self.wpl - 1)
    }

    #[inline(always)]
    fn half_bit(&self, word: usize) -> u8 {
        if word < self.wpl / 2 {
            1
        } else {
            2
        }
    }

    /// The line holding `mva`, if any.
    #[inline(always)]
    pub(crate) fn find(&mut self, mva: u32) -> Option<usize> {
        let key = (mva & !self.line_mask()) | VALID;
        if self.tag[self.last] == key {
            return Some(self.last);
        }
        let base = self.set_of(mva) * self.ways as usize;
        let i = base
            + self.tag[base..base + self.ways as usize]
                .iter()
                .position(|&t| t == key)?;
        self.last = i;
        if self.policy == Replacement::Lru {
            self.clock += 1;
            self.stamp[i] = self.clock;
        }
        Some(i)
    }

    /// The line last found or filled, if it holds `mva` and was filled
    /// from `pa_line` (no side effect: not even the LRU stamp).
    #[inline]
    pub(crate) fn last_holding(&self, mva: u32, pa_line: u32) -> Option<usize> {
        let key = (mva & !self.line_mask()) | VALID;
        (self.tag[self.last] == key && self.pa[self.last] == pa_line).then_some(self.last)
    }

    /// Physical line address of line `i`.
    #[inline(always)]
    pub(crate) fn line_pa(&self, i: usize) -> u32 {
        self.pa[i]
    }

    /// MVA of line `i` (valid lines only).
    pub(crate) fn line_mva(&self, i: usize) -> u32 {
        self.tag[i] & !VALID
    }

    /// Gives line `i` (allocated with [`UNKNOWN_PA`]) its physical address.
    pub(crate) fn adopt(&mut self, i: usize, pa_line: u32) {
        self.pa[i] = pa_line;
    }

    /// Version of the word of line `i` at `mva`.
    #[inline(always)]
    pub(crate) fn version(&self, i: usize, mva: u32) -> u32 {
        self.ver[i * self.wpl + self.word_of(mva)]
    }

    /// Sets the version of the word of line `i` at `mva`, marking its half
    /// dirty if asked.
    #[inline(always)]
    pub(crate) fn set_version(&mut self, i: usize, mva: u32, v: u32, make_dirty: bool) {
        let w = self.word_of(mva);
        self.ver[i * self.wpl + w] = v;
        if make_dirty {
            if self.dirty[i] == 0 {
                self.dirty_lines += 1;
            }
            self.dirty[i] |= self.half_bit(w);
        }
    }

    fn victim(&mut self, mva: u32) -> usize {
        let set = self.set_of(mva);
        let base = set * self.ways as usize;
        let way = match self.policy {
            // Per-set pointer to the way after the last one filled, whether
            // or not invalid ways exist (XScale manual §6.2.4).
            Replacement::RoundRobin => {
                let w = self.rr[set];
                self.rr[set] = (w + 1) & (self.ways - 1);
                w as usize
            }
            Replacement::Random => self.rng.below(self.ways) as usize,
            Replacement::Lru => (0..self.ways as usize)
                .min_by_key(|&w| {
                    if self.tag[base + w] & VALID == 0 {
                        0
                    } else {
                        self.stamp[base + w]
                    }
                })
                .unwrap_or(0),
        };
        base + way
    }

    /// Writes the dirty halves of line `i` back to RAM and marks it clean.
    pub(crate) fn write_back(&mut self, i: usize, mem: &mut Versions) -> WriteBack {
        if self.tag[i] & VALID == 0 || self.dirty[i] == 0 {
            return WriteBack::default();
        }
        for w in 0..self.wpl {
            if self.dirty[i] & self.half_bit(w) != 0 {
                let v = self.ver[i * self.wpl + w];
                mem.set_ram(self.pa[i] + 4 * w as u32, v);
            }
        }
        self.dirty[i] = 0;
        self.dirty_lines -= 1;
        WriteBack { lines: 1 }
    }

    /// Allocates a line for `mva` backed by physical line `pa_line`, writing
    /// back the victim if dirty; with `fill`, the words take RAM's versions,
    /// without (line allocate) they are [`GARBAGE`]. Returns the line and
    /// whether a victim was written back.
    pub(crate) fn allocate(
        &mut self,
        mva: u32,
        pa_line: u32,
        fill: bool,
        mem: &mut Versions,
    ) -> (usize, WriteBack) {
        let i = self.victim(mva);
        let wb = self.write_back(i, mem);
        for w in 0..self.wpl {
            self.ver[i * self.wpl + w] = if fill && pa_line != UNKNOWN_PA {
                mem.ram(pa_line + 4 * w as u32)
            } else {
                GARBAGE
            };
        }
        self.tag[i] = (mva & !self.line_mask()) | VALID;
        self.pa[i] = pa_line;
        self.last = i;
        self.clock += 1;
        self.stamp[i] = self.clock;
        (i, wb)
    }

    /// Cleans line `i` if asked, then invalidates it if asked. Invalidating
    /// a dirty line without a clean discards its versions.
    pub(crate) fn maintain(
        &mut self,
        i: usize,
        clean: bool,
        invalidate: bool,
        mem: &mut Versions,
    ) -> WriteBack {
        let wb = if clean {
            self.write_back(i, mem)
        } else {
            WriteBack::default()
        };
        if invalidate {
            if self.dirty[i] != 0 {
                self.dirty[i] = 0;
                self.dirty_lines -= 1;
            }
            self.tag[i] = 0;
        }
        wb
    }

    /// The line a set/way operand names (`way` in the top bits, set index
    /// above the line offset, as the ARM926EJ-S's c7 set/way format).
    pub(crate) fn line_of_set_way(&self, value: u32) -> usize {
        let way = if self.ways > 1 {
            (value >> (32 - self.ways.trailing_zeros())) as usize
        } else {
            0
        };
        let set = ((value >> self.line_shift) & (self.sets - 1)) as usize;
        set * self.ways as usize + way
    }

    /// Cleans and/or invalidates every line; returns the lines written back.
    pub(crate) fn whole(&mut self, clean: bool, invalidate: bool, mem: &mut Versions) -> u64 {
        if !clean && !invalidate {
            return 0;
        }
        let mut n = 0;
        if clean && self.dirty_lines > 0 {
            for i in 0..self.lines() {
                n += self.write_back(i, mem).lines;
            }
        }
        if invalidate {
            self.tag.iter_mut().for_each(|t| *t = 0);
            self.dirty.iter_mut().for_each(|d| *d = 0);
            self.dirty_lines = 0;
        }
        n
    }

    /// The first dirty line, if any.
    pub(crate) fn first_dirty(&self) -> Option<usize> {
        if self.dirty_lines == 0 {
            return None;
        }
        (0..self.lines()).find(|&i| self.tag[i] & VALID != 0 && self.dirty[i] != 0)
    }
}
