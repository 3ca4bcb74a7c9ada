//! Test support shared by every test suite and benchmark of the `scan`
//! workspace (a dev-dependency only, never published): a seeded random source
//! whose seed is printed, the boundary sizes every algorithm is tested on, and
//! a NaN-proof tolerance check.

#![warn(missing_docs)]

/// SplitMix64, seeded from `SCAN_SEED` or the clock (the seed is printed so
/// that a failure can be replayed). The same generator the law tests of
/// `#[scan_op(assume_associative)]` use.
pub use scan_core::__private::Rng;

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
/// use scan_testing::within;
/// assert!(within(1.0, 1.0 + 1e-9, 1e-6));
/// assert!(!within(f64::NAN, 1.0, 1e-6));
/// assert!(!within(1.0, 2.0, 1e-6));
/// ```
pub fn within(got: f64, want: f64, bound: f64) -> bool {
    (got - want).abs() <= bound
}
