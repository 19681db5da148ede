//! [`CleanRegion`]: a reserved address range whose only use is to push
//! dirty lines out of a D-cache that has no "clean everything" operation.
//!
//! XScale allocates lines in it (`c7, c2, 5`); the StrongARM SA-1100 reads
//! it. Either way, touching one cache-sized block of fresh addresses evicts
//! (writing back) every line the cache held. The region is two cache sizes
//! long and successive cleans alternate between its halves, so the lines the
//! previous clean left behind are evicted too (the scheme Linux uses for
//! both CPUs).

use crate::addr::ModifiedVirtAddr;
use core::fmt;

/// Why a clean region description is not usable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum CleanRegionError {
    /// The cache size is not a power of two of at least one line.
    BadCacheSize(u32),
    /// The base is not aligned to the cache size.
    Misaligned {
        /// The base address.
        base: u32,
        /// The required alignment in bytes.
        align: u32,
    },
    /// The region (two cache sizes) would run past the end of the address space.
    Overflow {
        /// The base address.
        base: u32,
        /// The region length in bytes.
        len: u32,
    },
}

impl fmt::Display for CleanRegionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            CleanRegionError::BadCacheSize(s) => {
                write!(
                    f,
                    "cache size {s:#x} is not a power of two of at least one line"
                )
            }
            CleanRegionError::Misaligned { base, align } => {
                write!(
                    f,
                    "clean region base {base:#010x} is not aligned to {align:#x}"
                )
            }
            CleanRegionError::Overflow { base, len } => write!(
                f,
                "clean region of {len:#x} bytes at {base:#010x} passes the end of the address space"
            ),
        }
    }
}

impl core::error::Error for CleanRegionError {}

/// A reserved region of `2 * cache_size` bytes at a cache-size-aligned MVA.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct CleanRegion {
    base: ModifiedVirtAddr,
    cache_size: u32,
}

impl CleanRegion {
    /// Describes the region at `base` for a D-cache of `cache_size` bytes
    /// with `line`-byte lines (both powers of two).
    ///
    /// # Errors
    /// See [`CleanRegionError`].
    pub const fn new(
        base: ModifiedVirtAddr,
        cache_size: u32,
        line: u32,
    ) -> Result<CleanRegion, CleanRegionError> {
        if !cache_size.is_power_of_two() || !line.is_power_of_two() || cache_size < line {
            return Err(CleanRegionError::BadCacheSize(cache_size));
        }
        let b = base.as_u32();
        if b & (cache_size - 1) != 0 {
            return Err(CleanRegionError::Misaligned {
                base: b,
                align: cache_size,
            });
        }
        let len = match cache_size.checked_mul(2) {
            Some(l) => l,
            None => {
                return Err(CleanRegionError::Overflow {
                    base: b,
                    len: u32::MAX,
                })
            }
        };
        // The last byte must be addressable: base + len - 1 <= u32::MAX.
        if b.checked_add(len - 1).is_none() {
            return Err(CleanRegionError::Overflow { base: b, len });
        }
        Ok(CleanRegion { base, cache_size })
    }

    /// The first address of the region.
    #[inline]
    #[must_use]
    pub const fn base(self) -> ModifiedVirtAddr {
        self.base
    }

    /// The D-cache size the region was made for (the region is twice as long).
    #[inline]
    #[must_use]
    pub const fn cache_size(self) -> u32 {
        self.cache_size
    }

    /// The first address of half `which` (0 or 1; any other value is taken mod 2).
    #[inline]
    #[must_use]
    pub const fn half(self, which: u32) -> ModifiedVirtAddr {
        ModifiedVirtAddr::new(self.base.as_u32() + (which & 1) * self.cache_size)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn valid_region_and_halves() {
        let r = CleanRegion::new(ModifiedVirtAddr::new(0xE000_0000), 32 * 1024, 32).unwrap();
        assert_eq!(r.half(0).as_u32(), 0xE000_0000);
        assert_eq!(r.half(1).as_u32(), 0xE000_8000);
        assert_eq!(r.half(3), r.half(1));
        assert_eq!(r.cache_size(), 0x8000);
        // Ends exactly at the top of the address space.
        assert!(CleanRegion::new(ModifiedVirtAddr::new(0xFFFF_C000), 0x2000, 32).is_ok());
    }

    #[test]
    fn errors() {
        let b = ModifiedVirtAddr::new(0xE000_0000);
        assert_eq!(
            CleanRegion::new(b, 3000, 32),
            Err(CleanRegionError::BadCacheSize(3000))
        );
        assert_eq!(
            CleanRegion::new(b, 16, 32),
            Err(CleanRegionError::BadCacheSize(16))
        );
        assert_eq!(
            CleanRegion::new(ModifiedVirtAddr::new(0xE000_1000), 0x8000, 32),
            Err(CleanRegionError::Misaligned {
                base: 0xE000_1000,
                align: 0x8000
            })
        );
        assert_eq!(
            CleanRegion::new(ModifiedVirtAddr::new(0xFFFF_8000), 0x8000, 32),
            Err(CleanRegionError::Overflow {
                base: 0xFFFF_8000,
                len: 0x10000
            })
        );
        assert_eq!(
            CleanRegion::new(ModifiedVirtAddr::ZERO, 1 << 31, 32),
            Err(CleanRegionError::Overflow {
                base: 0,
                len: u32::MAX
            })
        );
    }
}
