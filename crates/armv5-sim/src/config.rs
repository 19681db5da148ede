//! Machine configuration: cache and TLB geometry, memory regions, identity.

use crate::error::{CacheSide, ConfigError};
use mmu_armv5::PhysAddr;

/// The shortest D-cache line the model accepts: the
/// [`CacheMaintenance::DCACHE_LINE`](mmu_armv5::maint::CacheMaintenance::DCACHE_LINE)
/// the machine reports (32 bytes). Code that cleans ranges steps by that
/// length; a shorter real line would leave lines between the steps
/// uncleaned.
pub const MIN_DCACHE_LINE: u32 = 32;

/// The largest cache the model builds (1 MiB; the CPUs it models have at
/// most 128 KiB).
pub const MAX_CACHE_SIZE: u32 = 1 << 20;

/// Cache line replacement policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Replacement {
    /// A victim pointer per set that advances on every allocation.
    RoundRobin,
    /// A victim drawn from the machine's seeded generator.
    Random,
    /// The least recently used line of the set.
    Lru,
}

/// TLB replacement policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TlbReplacement {
    /// A victim pointer that advances on every allocation.
    RoundRobin,
    /// A victim drawn from the machine's seeded generator.
    Random,
}

/// Geometry and policy of one cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CacheConfig {
    /// Capacity in bytes (a power of two, at most [`MAX_CACHE_SIZE`]).
    pub size: u32,
    /// Associativity (a power of two, at most `size / line`).
    pub ways: u32,
    /// Line length in bytes (a power of two in 8..=256; at least
    /// [`MIN_DCACHE_LINE`] for the D-cache).
    pub line: u32,
    /// Which line a miss evicts.
    pub replacement: Replacement,
}

impl CacheConfig {
    /// Number of lines (`size / line`), or `None` if `line` is zero.
    #[must_use]
    pub const fn lines(&self) -> Option<u32> {
        self.size.checked_div(self.line)
    }

    /// Number of sets (`lines / ways`), or `None` if `line` or `ways` is zero.
    #[must_use]
    pub const fn sets(&self) -> Option<u32> {
        match self.lines() {
            Some(l) => l.checked_div(self.ways),
            None => None,
        }
    }

    /// Checks the geometry.
    pub fn validate(&self, side: CacheSide) -> Result<(), ConfigError> {
        if !self.size.is_power_of_two() {
            return Err(ConfigError::CacheSizeNotPowerOfTwo {
                side,
                size: self.size,
            });
        }
        if self.size > MAX_CACHE_SIZE {
            return Err(ConfigError::CacheTooLarge {
                side,
                size: self.size,
            });
        }
        if !self.line.is_power_of_two() || !(8..=256).contains(&self.line) {
            return Err(ConfigError::BadLineSize {
                side,
                line: self.line,
            });
        }
        if side == CacheSide::Data && self.line < MIN_DCACHE_LINE {
            return Err(ConfigError::DcacheLineTooShort { line: self.line });
        }
        if !self.ways.is_power_of_two() {
            return Err(ConfigError::WaysNotPowerOfTwo {
                side,
                ways: self.ways,
            });
        }
        let lines = self.size / self.line;
        if self.ways > lines || lines == 0 {
            return Err(ConfigError::WaysExceedLines {
                side,
                ways: self.ways,
                lines,
            });
        }
        Ok(())
    }
}

/// Size and policy of one TLB (modelled fully associative).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TlbConfig {
    /// Number of entries (1..=4096).
    pub entries: u32,
    /// Which entry a miss replaces.
    pub replacement: TlbReplacement,
}

impl TlbConfig {
    /// Checks the entry count.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.entries == 0 || self.entries > 4096 {
            Err(ConfigError::BadTlbEntries(self.entries))
        } else {
            Ok(())
        }
    }
}

/// Whether instruction fetches and data accesses share one TLB.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TlbLayout {
    /// Separate instruction and data TLBs (SA-1100, XScale).
    Split {
        /// The instruction TLB.
        itlb: TlbConfig,
        /// The data TLB.
        dtlb: TlbConfig,
    },
    /// One TLB for both (the ARM926EJ-S main TLB).
    Unified(TlbConfig),
}

/// What a physical region is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MemoryKind {
    /// Ordinary memory: cacheable where the page's C bit says so.
    Ram,
    /// Device memory: never cached, whatever the page says.
    Device,
    /// Instruction tightly-coupled memory: never cached.
    Itcm,
    /// Data tightly-coupled memory: never cached.
    Dtcm,
}

/// A described region of physical memory, backed by host memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemoryRegion {
    /// First physical address (a multiple of 1 KiB).
    pub base: PhysAddr,
    /// Size in bytes (a non-zero multiple of 1 KiB, at most 512 MiB).
    pub size: u32,
    /// What the region is.
    pub kind: MemoryKind,
    /// Cycles per bus transaction with this region (one uncached access, one
    /// line fill, one line write-back, one table-walk read), added to
    /// [`Counters::bus_cycles`](crate::Counters::bus_cycles).
    pub latency: u32,
}

impl MemoryRegion {
    /// Checks alignment and size.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let base = self.base.as_u32();
        if self.size == 0 {
            return Err(ConfigError::EmptyRegion { base });
        }
        if !base.is_multiple_of(1024) || !self.size.is_multiple_of(1024) {
            return Err(ConfigError::UnalignedRegion {
                base,
                size: self.size,
            });
        }
        if u64::from(base) + u64::from(self.size) > 1 << 32 {
            return Err(ConfigError::RegionPastEnd {
                base,
                size: self.size,
            });
        }
        if self.size > 512 << 20 {
            return Err(ConfigError::RegionTooLarge { size: self.size });
        }
        Ok(())
    }

    /// Whether `pa` lies in the region.
    #[must_use]
    pub const fn contains(&self, pa: u32) -> bool {
        pa.wrapping_sub(self.base.as_u32()) < self.size
    }
}

/// Everything needed to build a [`Machine`](crate::Machine).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// A name for reports (e.g. the preset's CPU).
    pub name: &'static str,
    /// Main ID register value (read-only CP15 c0).
    pub midr: u32,
    /// Cache type register value (read-only CP15 c0, opc2 1).
    pub cache_type: u32,
    /// Largest FCSE PID the CPU implements (127, or 63 on the SA-1100).
    pub fcse_pid_max: u8,
    /// The instruction cache.
    pub icache: CacheConfig,
    /// The data cache.
    pub dcache: CacheConfig,
    /// The TLB(s).
    pub tlb: TlbLayout,
    /// Seed of every random replacement decision.
    pub seed: u64,
    /// Physical memory regions present at construction.
    pub regions: Vec<MemoryRegion>,
    /// What [`TableAlloc::table_mva`](mmu_armv5::table::TableAlloc::table_mva)
    /// reports: a table at physical `pa` is seen by the program at MVA
    /// `pa + table_mva_offset` (wrapping). Zero for an identity-mapped kernel.
    pub table_mva_offset: u32,
}

impl Config {
    /// Checks every part of the configuration except region overlap (checked
    /// when the regions are added).
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.fcse_pid_max > 127 {
            return Err(ConfigError::BadPidLimit(self.fcse_pid_max));
        }
        self.icache.validate(CacheSide::Instruction)?;
        self.dcache.validate(CacheSide::Data)?;
        match self.tlb {
            TlbLayout::Split { itlb, dtlb } => {
                itlb.validate()?;
                dtlb.validate()?;
            }
            TlbLayout::Unified(t) => t.validate()?,
        }
        for r in &self.regions {
            r.validate()?;
        }
        Ok(())
    }
}
