//! The checks every benchmark result passes before its figure is reported,
//! shared by the CPU and GPU sections. Every comparison goes through
//! [`within`], which NaN never passes (unlike a test written `err > bound`).

use scan_testing::within;

/// The first index where `got` is not the inclusive sum of `x` (or where the
/// lengths differ), against an f64 evaluation, within the first-order bound
/// `depth(i) * eps32 * sum |x[..=i]|` of a summation in which item `i`'s
/// result passes through at most `depth(i)` f32 additions (`i + 1` for any
/// order of summation; less for a shallow tree).
pub fn bad_sum(x: &[f32], got: &[f32], depth: impl Fn(usize) -> f64) -> Option<usize> {
    if got.len() != x.len() {
        return Some(got.len().min(x.len()));
    }
    let (mut sum, mut abs) = (0.0f64, 0.0f64);
    (0..x.len()).find(|&i| {
        sum += f64::from(x[i]);
        abs += f64::from(x[i]).abs();
        !within(f64::from(got[i]), sum, depth(i) * f64::from(f32::EPSILON) * abs)
    })
}

/// The first index where `got`'s second component is not `h_t = a_t h_{t-1} + b_t`
/// (inclusive, `h_{-1} = 0`) of `x` (or where the lengths differ), against an
/// f64 evaluation, within `2 (t + 1) eps32 |h|_t`, where `|h|` runs the
/// recurrence on `|a|`, `|b|` (it bounds every product and sum of the
/// evaluation, whatever its order).
pub fn bad_recurrence(x: &[(f32, f32)], got: &[(f32, f32)]) -> Option<usize> {
    if got.len() != x.len() {
        return Some(got.len().min(x.len()));
    }
    let (mut h, mut habs) = (0.0f64, 0.0f64);
    (0..x.len()).find(|&t| {
        let (a, b) = (f64::from(x[t].0), f64::from(x[t].1));
        h = a * h + b;
        habs = a.abs() * habs + b.abs();
        !within(f64::from(got[t].1), h, 2.0 * (t as f64 + 1.0) * f64::from(f32::EPSILON) * habs)
    })
}

/// [`bad_recurrence`] for f64 pairs: against an f64 evaluation in the
/// sequential order, within `4 (t + 1) eps64 |h|_t` (both evaluations round).
pub fn bad_recurrence_f64(x: &[(f64, f64)], got: &[(f64, f64)]) -> Option<usize> {
    if got.len() != x.len() {
        return Some(got.len().min(x.len()));
    }
    let (mut h, mut habs) = (0.0f64, 0.0f64);
    (0..x.len()).find(|&t| {
        let (a, b) = x[t];
        h = a * h + b;
        habs = a.abs() * habs + b.abs();
        !within(got[t].1, h, 4.0 * (t as f64 + 1.0) * f64::EPSILON * habs)
    })
}
