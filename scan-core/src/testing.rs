//! Test support shared by every backend's test suite: a seeded random source
//! whose seed is printed, and the boundary sizes every algorithm is tested on.
//!
//! Not a stable API; it is public so that the backends' tests and benchmarks
//! use one generator and one definition of "sizes around every boundary".

use std::time::{SystemTime, UNIX_EPOCH};

/// SplitMix64: small, fast and good enough to generate test data.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator with a fixed seed.
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    /// A fresh generator: the seed comes from `SCAN_SEED` if set, else the
    /// clock; it is printed so that a failure can be replayed.
    pub fn fresh(label: &str) -> Self {
        let seed = std::env::var("SCAN_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| {
            SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(0x5eed)
        });
        eprintln!("[{label}] random seed {seed} (replay with SCAN_SEED={seed})");
        Rng(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `[0, 1)`.
    pub fn unit_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform in `[lo, hi)`.
    pub fn range_f64(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.unit_f64()
    }

    /// Uniform in `[0, n)`; `n` must be positive.
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }

    /// `len` values from `gen`.
    pub fn vec<T>(&mut self, len: usize, mut gen: impl FnMut(&mut Rng) -> T) -> Vec<T> {
        (0..len).map(|_| gen(self)).collect()
    }
}

/// Sizes around every boundary of an algorithm whose tile or block holds
/// `tile` items: 0, 1, 2, 3, 7, 8, 9, 31..=33, tile-1..=tile+1, 1000,
/// 2·tile±1, and non-powers of two. Sorted, without duplicates.
pub fn boundary_sizes(tile: usize) -> Vec<usize> {
    let mut sizes = vec![0, 1, 2, 3, 7, 8, 9, 31, 32, 33, 1000, 4097];
    for t in [tile, 2 * tile, tile * tile.min(64)] {
        sizes.extend([t.saturating_sub(1), t, t + 1]);
    }
    sizes.sort_unstable();
    sizes.dedup();
    sizes
}

/// True when `got` is within `bound` of `want`. NaN anywhere (or an infinite
/// difference) is never within: a comparison written `err > bound` would let
/// NaN pass, this one cannot.
///
/// ```
/// use scan_core::testing::within;
/// assert!(within(1.0, 1.0 + 1e-9, 1e-6));
/// assert!(!within(f64::NAN, 1.0, 1e-6));
/// assert!(!within(1.0, 2.0, 1e-6));
/// ```
pub fn within(got: f64, want: f64, bound: f64) -> bool {
    (got - want).abs() <= bound
}
