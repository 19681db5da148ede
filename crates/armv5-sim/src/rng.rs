//! A small seeded pseudo-random generator (SplitMix64) for replacement policies.
//!
//! The model needs reproducible randomness only: the same seed gives the same
//! sequence on every host, so the same program gives the same counters.

/// SplitMix64 state.
#[derive(Clone, Debug)]
pub(crate) struct Rng(u64);

impl Rng {
    /// A generator seeded with `seed`.
    pub(crate) fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// The next 64 random bits.
    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A value in `0..n` (`n` > 0).
    pub(crate) fn below(&mut self, n: u32) -> u32 {
        (((self.next_u64() >> 32) * u64::from(n)) >> 32) as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_sequence_and_in_range() {
        let mut a = Rng::new(7);
        let mut b = Rng::new(7);
        let mut c = Rng::new(8);
        let sa: Vec<u32> = (0..64).map(|_| a.below(32)).collect();
        let sb: Vec<u32> = (0..64).map(|_| b.below(32)).collect();
        let sc: Vec<u32> = (0..64).map(|_| c.below(32)).collect();
        assert_eq!(sa, sb);
        assert_ne!(sa, sc);
        assert!(sa.iter().all(|&v| v < 32));
        // Every value of a small range shows up.
        let mut seen = [false; 4];
        for _ in 0..200 {
            seen[a.below(4) as usize] = true;
        }
        assert!(seen.iter().all(|&s| s));
    }
}
