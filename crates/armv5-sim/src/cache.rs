//! A virtually indexed, virtually tagged cache.
//!
//! Lines are indexed and tagged by MVA only, with a valid and a dirty bit and
//! the physical address of the line (kept for write-back, as the ARM926EJ-S
//! and StrongARM keep it). Nothing ties a line to the mapping it was filled
//! through, so the real hazards of VIVT caches follow: a homonym (same MVA,
//! another frame) hits the other space's data; a synonym (two MVAs, one frame)
//! in a write-back cache reads stale memory; invalidating a dirty line loses
//! the write.

use crate::config::{CacheConfig, Replacement};
use crate::counters::Counters;
use crate::memory::PhysMemory;
use crate::rng::Rng;

/// Bit 0 of a tag: the line is valid.
const VALID: u32 = 1;

/// One cache.
#[derive(Clone, Debug)]
pub(crate) struct Cache {
    sets: u32,
    ways: u32,
    line: u32,
    line_shift: u32,
    words_per_line: u32,
    /// Line MVA with bit 0 set when valid (lines are at least 8 bytes, so
    /// bit 0 of a line address is free); 0 when invalid.
    tag: Vec<u32>,
    pa: Vec<u32>,
    dirty: Vec<bool>,
    data: Vec<u32>,
    stamp: Vec<u64>,
    clock: u64,
    rr: Vec<u32>,
    policy: Replacement,
    rng: Rng,
    dirty_count: usize,
    last: usize,
    /// Lookup shortcut: for each line-number hash, the line that last held
    /// it. A stale hint is harmless: the tag is always compared.
    hint: Vec<u32>,
}

impl Cache {
    /// An empty (all invalid) cache of the given geometry (already validated,
    /// so `lines` and `sets` are powers of two, at least 1).
    pub(crate) fn new(cfg: CacheConfig, seed: u64) -> Cache {
        let lines = cfg.lines().unwrap_or(1) as usize;
        let sets = cfg.sets().unwrap_or(1);
        Cache {
            sets,
            ways: cfg.ways,
            line: cfg.line,
            line_shift: cfg.line.trailing_zeros(),
            words_per_line: cfg.line / 4,
            tag: vec![0; lines],
            pa: vec![0; lines],
            dirty: vec![false; lines],
            data: vec![0; lines * (cfg.line / 4) as usize],
            stamp: vec![0; lines],
            clock: 0,
            rr: vec![0; sets as usize],
            policy: cfg.replacement,
            rng: Rng::new(seed),
            dirty_count: 0,
            last: 0,
            hint: vec![0; lines],
        }
    }

    /// Line length in bytes.
    #[inline]
    pub(crate) fn line_size(&self) -> u32 {
        self.line
    }

    /// Number of lines.
    #[inline]
    pub(crate) fn lines(&self) -> usize {
        self.tag.len()
    }

    #[inline]
    fn valid(&self, i: usize) -> bool {
        self.tag[i] & VALID != 0
    }

    /// Number of dirty lines.
    #[inline]
    pub(crate) fn dirty_lines(&self) -> usize {
        self.dirty_count
    }

    #[inline]
    fn hint_slot(&self, mva: u32) -> usize {
        (mva >> self.line_shift) as usize & (self.hint.len() - 1)
    }

    #[inline]
    fn set_of(&self, mva: u32) -> usize {
        ((mva >> self.line_shift) & (self.sets - 1)) as usize
    }

    /// Finds the line holding `mva` without touching replacement state.
    #[inline]
    pub(crate) fn find(&self, mva: u32) -> Option<usize> {
        let key = (mva & !(self.line - 1)) | VALID;
        if self.tag[self.last] == key {
            return Some(self.last);
        }
        let h = self.hint[self.hint_slot(mva)] as usize;
        if self.tag[h] == key {
            return Some(h);
        }
        let base = self.set_of(mva) * self.ways as usize;
        self.tag[base..base + self.ways as usize]
            .iter()
            .position(|&t| t == key)
            .map(|w| base + w)
    }

    /// Finds the line holding `mva` as a CPU access does (updates LRU state).
    #[inline]
    pub(crate) fn lookup(&mut self, mva: u32) -> Option<usize> {
        let i = self.find(mva)?;
        self.last = i;
        let slot = self.hint_slot(mva);
        self.hint[slot] = i as u32;
        if self.policy == Replacement::Lru {
            self.clock += 1;
            self.stamp[i] = self.clock;
        }
        Some(i)
    }

    #[inline]
    fn word_index(&self, i: usize, mva: u32) -> usize {
        i * self.words_per_line as usize + ((mva >> 2) & (self.words_per_line - 1)) as usize
    }

    /// The word of line `i` holding `mva`.
    #[inline]
    pub(crate) fn word(&self, i: usize, mva: u32) -> u32 {
        self.data[self.word_index(i, mva)]
    }

    /// Replaces the word of line `i` holding `mva`; marks the line dirty if asked.
    #[inline]
    pub(crate) fn set_word(&mut self, i: usize, mva: u32, value: u32, make_dirty: bool) {
        let w = self.word_index(i, mva);
        self.data[w] = value;
        if make_dirty && !self.dirty[i] {
            self.dirty[i] = true;
            self.dirty_count += 1;
        }
    }

    fn victim(&mut self, mva: u32) -> usize {
        let set = self.set_of(mva);
        let base = set * self.ways as usize;
        if let Some(i) = (base..base + self.ways as usize).find(|&i| !self.valid(i)) {
            return i;
        }
        match self.policy {
            Replacement::RoundRobin => {
                let w = self.rr[set];
                self.rr[set] = (w + 1) & (self.ways - 1);
                base + w as usize
            }
            Replacement::Random => base + self.rng.below(self.ways) as usize,
            Replacement::Lru => (base..base + self.ways as usize)
                .min_by_key(|&i| self.stamp[i])
                .unwrap_or(base),
        }
    }

    /// Allocates a line for `mva` backed by physical line `pa_line`, evicting
    /// (and writing back, if dirty) a victim. With `fill`, the line's data is
    /// read from memory; without (XScale line allocate), it is zeroed.
    pub(crate) fn allocate(
        &mut self,
        mva: u32,
        pa_line: u32,
        fill: bool,
        mem: &PhysMemory,
        c: &mut Counters,
    ) -> usize {
        let i = self.victim(mva);
        if self.valid(i) && self.dirty[i] {
            self.write_back(i, mem, c);
        }
        let wpl = self.words_per_line as usize;
        for k in 0..wpl {
            self.data[i * wpl + k] = if fill {
                mem.read_word(pa_line + 4 * k as u32).unwrap_or(0)
            } else {
                0
            };
        }
        self.tag[i] = (mva & !(self.line - 1)) | VALID;
        self.pa[i] = pa_line;
        self.dirty[i] = false;
        self.last = i;
        let slot = self.hint_slot(mva);
        self.hint[slot] = i as u32;
        self.clock += 1;
        self.stamp[i] = self.clock;
        i
    }

    /// Writes line `i` back to its physical address and marks it clean.
    fn write_back(&mut self, i: usize, mem: &PhysMemory, c: &mut Counters) {
        let wpl = self.words_per_line as usize;
        let pa = self.pa[i];
        for k in 0..wpl {
            // The line was filled from (or allocated over) this memory, and
            // regions are never removed, so the write lands.
            let _ = mem.write_word(pa + 4 * k as u32, self.data[i * wpl + k]);
        }
        c.write_backs += 1;
        c.bus_cycles += mem.region(pa).map_or(0, |r| u64::from(r.latency));
        self.dirty[i] = false;
        self.dirty_count -= 1;
    }

    /// Cleans line `i` if dirty, then invalidates it if asked; discarding a
    /// dirty line without `clean` loses its data.
    fn maintain(
        &mut self,
        i: usize,
        clean: bool,
        invalidate: bool,
        mem: &PhysMemory,
        c: &mut Counters,
    ) {
        if self.valid(i) && self.dirty[i] {
            if clean {
                self.write_back(i, mem, c);
            } else if invalidate {
                self.dirty[i] = false;
                self.dirty_count -= 1;
            }
        }
        if invalidate {
            self.tag[i] = 0;
        }
    }

    /// Clean and/or invalidate the line holding `mva`, if present.
    pub(crate) fn line_op(
        &mut self,
        mva: u32,
        clean: bool,
        invalidate: bool,
        mem: &PhysMemory,
        c: &mut Counters,
    ) {
        c.cache_line_ops += 1;
        if let Some(i) = self.find(mva) {
            self.maintain(i, clean, invalidate, mem, c);
        }
    }

    /// Clean and/or invalidate every line; visits every line.
    pub(crate) fn whole_op(
        &mut self,
        clean: bool,
        invalidate: bool,
        mem: &PhysMemory,
        c: &mut Counters,
    ) {
        c.cache_whole_ops += 1;
        if clean {
            c.clean_lines_visited += self.lines() as u64;
        }
        for i in 0..self.lines() {
            self.maintain(i, clean, invalidate, mem, c);
        }
    }

    /// Cleans (and invalidates, if asked) the first dirty line; returns whether one was found.
    pub(crate) fn clean_one_dirty(
        &mut self,
        invalidate: bool,
        mem: &PhysMemory,
        c: &mut Counters,
    ) -> bool {
        if self.dirty_count == 0 {
            return false;
        }
        match (0..self.lines()).find(|&i| self.valid(i) && self.dirty[i]) {
            Some(i) => {
                self.maintain(i, true, invalidate, mem, c);
                true
            }
            None => false,
        }
    }

    /// Number of valid lines.
    pub(crate) fn valid_lines(&self) -> usize {
        self.tag.iter().filter(|&&t| t & VALID != 0).count()
    }
}
