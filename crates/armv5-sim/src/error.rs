//! Typed errors: bad configuration and bad physical accesses.

use std::fmt;

pub use mmu_armv5::regs::CacheSide;

/// A configuration the model cannot represent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConfigError {
    /// Cache size is zero or not a power of two.
    CacheSizeNotPowerOfTwo {
        /// Which cache.
        side: CacheSide,
        /// The size in bytes.
        size: u32,
    },
    /// Line size is not a power of two in 8..=256 bytes.
    BadLineSize {
        /// Which cache.
        side: CacheSide,
        /// The line size in bytes.
        line: u32,
    },
    /// A cache larger than [`MAX_CACHE_SIZE`](crate::config::MAX_CACHE_SIZE).
    CacheTooLarge {
        /// Which cache.
        side: CacheSide,
        /// The size in bytes.
        size: u32,
    },
    /// A D-cache line shorter than [`MIN_DCACHE_LINE`](crate::config::MIN_DCACHE_LINE).
    DcacheLineTooShort {
        /// The line size in bytes.
        line: u32,
    },
    /// Associativity is zero or not a power of two.
    WaysNotPowerOfTwo {
        /// Which cache.
        side: CacheSide,
        /// The number of ways.
        ways: u32,
    },
    /// More ways than the cache has lines.
    WaysExceedLines {
        /// Which cache.
        side: CacheSide,
        /// The number of ways.
        ways: u32,
        /// The number of lines (size / line size).
        lines: u32,
    },
    /// A TLB with no entries, or with more than 4096.
    BadTlbEntries(u32),
    /// A region of size zero.
    EmptyRegion {
        /// Its base address.
        base: u32,
    },
    /// A region whose base or size is not a multiple of 1 KiB.
    UnalignedRegion {
        /// Its base address.
        base: u32,
        /// Its size.
        size: u32,
    },
    /// A region that extends past 4 GiB.
    RegionPastEnd {
        /// Its base address.
        base: u32,
        /// Its size.
        size: u32,
    },
    /// A region larger than the model backs (512 MiB).
    RegionTooLarge {
        /// Its size.
        size: u32,
    },
    /// Two regions overlap.
    OverlappingRegions {
        /// Base of the region already present.
        existing: u32,
        /// Base of the region being added.
        added: u32,
    },
    /// The frame pool is not entirely inside one RAM region, or not 1 KiB aligned.
    BadPool {
        /// Pool base.
        base: u32,
        /// Pool size.
        size: u32,
    },
    /// An FCSE PID limit above 127.
    BadPidLimit(u8),
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            ConfigError::CacheSizeNotPowerOfTwo { side, size } => {
                write!(f, "{side} size {size} is not a non-zero power of two")
            }
            ConfigError::BadLineSize { side, line } => {
                write!(
                    f,
                    "{side} line size {line} is not a power of two in 8..=256"
                )
            }
            ConfigError::CacheTooLarge { side, size } => {
                write!(f, "{side} size {size:#x} exceeds the model's 1 MiB limit")
            }
            ConfigError::DcacheLineTooShort { line } => write!(
                f,
                "D-cache line size {line} is below the 32 bytes cache maintenance steps by"
            ),
            ConfigError::WaysNotPowerOfTwo { side, ways } => {
                write!(
                    f,
                    "{side} associativity {ways} is not a non-zero power of two"
                )
            }
            ConfigError::WaysExceedLines { side, ways, lines } => {
                write!(f, "{side} has {ways} ways but only {lines} lines")
            }
            ConfigError::BadTlbEntries(n) => write!(f, "TLB entry count {n} is not in 1..=4096"),
            ConfigError::EmptyRegion { base } => write!(f, "region at {base:#010x} is empty"),
            ConfigError::UnalignedRegion { base, size } => write!(
                f,
                "region at {base:#010x} size {size:#x} is not 1 KiB aligned"
            ),
            ConfigError::RegionPastEnd { base, size } => write!(
                f,
                "region at {base:#010x} size {size:#x} extends past 4 GiB"
            ),
            ConfigError::RegionTooLarge { size } => {
                write!(f, "region size {size:#x} exceeds the model's 512 MiB limit")
            }
            ConfigError::OverlappingRegions { existing, added } => write!(
                f,
                "region at {added:#010x} overlaps the region at {existing:#010x}"
            ),
            ConfigError::BadPool { base, size } => write!(
                f,
                "frame pool {base:#010x}+{size:#x} is not a 1 KiB aligned part of one RAM region"
            ),
            ConfigError::BadPidLimit(p) => write!(f, "FCSE PID limit {p} is above 127"),
        }
    }
}

impl std::error::Error for ConfigError {}

/// A physical (backdoor) access or frame-pool call the model cannot perform.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemError {
    /// No region contains the address.
    Unmapped(u32),
    /// [`Machine::free_frames`](crate::Machine::free_frames) of frames the
    /// pool did not hand out (or already took back) with that size.
    NotAllocated {
        /// The address given.
        addr: u32,
        /// The size given.
        size: u32,
    },
    /// The address is not aligned to the access width.
    Misaligned {
        /// The address.
        addr: u32,
        /// The access width in bytes.
        width: u32,
    },
}

impl fmt::Display for MemError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            MemError::Unmapped(a) => write!(f, "no memory region at physical {a:#010x}"),
            MemError::NotAllocated { addr, size } => write!(
                f,
                "{size:#x} bytes at physical {addr:#010x} were not allocated from the frame pool"
            ),
            MemError::Misaligned { addr, width } => {
                write!(f, "physical {addr:#010x} is not aligned to {width} bytes")
            }
        }
    }
}

impl std::error::Error for MemError {}
