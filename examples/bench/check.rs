//! The checks every benchmark result passes before its figure is reported,
//! shared by the CPU and GPU sections.
//!
//! The f32 sums and linear recurrences are timed on data whose every grouping
//! is exact, and their results are compared exactly: a bound on rounding
//! (`depth * eps * sum |x|`) grows with the prefix, and at the timed sizes
//! (2^24 to 2^30) it let an all-zero or unwritten output pass at most
//! indices. Sums are of [`step`]s, small integers: every contiguous sub-sum
//! of a random walk of 2^28 of them (2^30 in the GPU sweep) stays far below
//! 2^24 (its typical size is sqrt(2n), about 23000 at 2^28 and 46000 at
//! 2^30), so every partial sum any order of summation forms is an integer
//! that f32 holds exactly, and the result is the exact prefix sum. If a
//! partial sum ever did pass 2^24 and round, the exact check would fail
//! loudly, not pass falsely. Recurrences `h_t = a_t h_{t-1} + b_t` take
//! decays `a` in {-1, 1} ([`sign`]) and steps `b`: every product of a's is
//! +-1, and every h over a range of steps is a sum of +-b's, a walk like the
//! sums' (b is symmetric and independent of the signs), so both components
//! are exact integers whatever the grouping. (No `a = 0`: the products
//! would be 0 from the first zero on, and their check would test little.)
//! The data's values do not change the timing (no subnormals either way),
//! and the byte counts are the item sizes'.
//!
//! The references are evaluated in f64, exact on these integers; `!=` fails
//! on NaN.

use scan_testing::Rng;

/// A step of the summed data: uniform in {-2, -1, 0, 1, 2}.
pub fn step(r: &mut Rng) -> f32 {
    r.below(5) as f32 - 2.0
}

/// A decay of the recurrences: -1 or 1, each with probability 1/2.
pub fn sign(r: &mut Rng) -> f32 {
    if r.below(2) == 0 {
        -1.0
    } else {
        1.0
    }
}

/// The first index where `got` is not exactly the inclusive sum of `x` (or
/// where the lengths differ).
pub fn bad_sum(x: &[f32], got: &[f32]) -> Option<usize> {
    if got.len() != x.len() {
        return Some(got.len().min(x.len()));
    }
    let mut sum = 0.0f64;
    (0..x.len()).find(|&i| {
        sum += f64::from(x[i]);
        f64::from(got[i]) != sum
    })
}

/// The inclusive `(a_0 ... a_t, h_t)` of `h_t = a_t h_{t-1} + b_t`
/// (`h_{-1} = 0`) of the pairs `(a_t, b_t)`, in f64.
fn recurrence(x: impl Iterator<Item = (f64, f64)>) -> impl Iterator<Item = (f64, f64)> {
    x.scan((1.0f64, 0.0f64), |(p, h), (a, b)| {
        (*p, *h) = (*p * a, a * *h + b);
        Some((*p, *h))
    })
}

/// The first index where `got` is not exactly the inclusive linear
/// recurrence of `x`, in either component (or where the lengths differ).
pub fn bad_recurrence<T: Copy + Into<f64>>(x: &[(T, T)], got: &[(T, T)]) -> Option<usize> {
    if got.len() != x.len() {
        return Some(got.len().min(x.len()));
    }
    recurrence(x.iter().map(|&(a, b)| (a.into(), b.into())))
        .zip(got)
        .position(|(want, &(a, h))| (a.into(), h.into()) != want)
}

/// The first index where `h` is not exactly `h_t = a_t h_{t-1} + b_t` (the
/// fused recurrences, which write h alone; or where the lengths differ).
pub fn bad_recurrence_h(a: &[f32], b: &[f32], h: &[f32]) -> Option<usize> {
    if a.len() != b.len() || h.len() != a.len() {
        return Some(h.len().min(a.len()).min(b.len()));
    }
    recurrence(a.iter().zip(b).map(|(&a, &b)| (f64::from(a), f64::from(b))))
        .zip(h)
        .position(|((_, want), &h)| f64::from(h) != want)
}
