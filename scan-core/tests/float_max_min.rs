//! The float `Max`/`Min` operators against their definition: `f32::max` /
//! `f32::min` (a NaN operand is ignored), except that equal operands are
//! merged bitwise so that `(-0, +0)` gives `+0` for max and `-0` for min in
//! either order, as CUDA's `fmaxf`/`fminf` do.

use scan_core::ops::{Max, Min};
use scan_core::ScanOp;
use scan_testing::Rng;

fn specials() -> Vec<f32> {
    vec![0.0, -0.0, 1.0, -1.0, f32::NAN, -f32::NAN, f32::INFINITY, f32::NEG_INFINITY, f32::MIN_POSITIVE, 1e-45]
}

fn same(a: f32, b: f32) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

fn want_max(a: f32, b: f32) -> f32 {
    if a == b {
        f32::from_bits(a.to_bits() & b.to_bits())
    } else {
        a.max(b)
    }
}

fn want_min(a: f32, b: f32) -> f32 {
    if a == b {
        f32::from_bits(a.to_bits() | b.to_bits())
    } else {
        a.min(b)
    }
}

#[test]
fn max_and_min_follow_f32_max_min_with_zeros_ordered_like_fmaxf() {
    let mut rng = Rng::fresh("float max/min");
    let mut values = specials();
    values.extend(rng.vec(200, |r| f32::from_bits(r.next_u64() as u32)));
    values.extend(rng.vec(50, |r| r.below(5) as f32 - 2.0)); // equal pairs are common
    for &a in &values {
        for &b in &values {
            let (got, want) = (Max::<f32>::combine(a, b), want_max(a, b));
            assert!(same(got, want), "max({a:e}, {b:e}) = {got:e}, want {want:e}");
            let (got, want) = (Min::<f32>::combine(a, b), want_min(a, b));
            assert!(same(got, want), "min({a:e}, {b:e}) = {got:e}, want {want:e}");
            let (a64, b64) = (f64::from(a), f64::from(b));
            let got = Max::<f64>::combine(a64, b64);
            let want = if a64 == b64 { f64::from_bits(a64.to_bits() & b64.to_bits()) } else { a64.max(b64) };
            assert!(got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()), "max f64({a64}, {b64})");
        }
    }
    assert_eq!(Max::<f32>::combine(-0.0, 0.0).to_bits(), 0.0f32.to_bits());
    assert_eq!(Max::<f32>::combine(0.0, -0.0).to_bits(), 0.0f32.to_bits());
    assert_eq!(Min::<f32>::combine(0.0, -0.0).to_bits(), (-0.0f32).to_bits());
    assert_eq!(Max::<f32>::combine(f32::NAN, 1.0), 1.0);
    assert_eq!(Min::<f32>::combine(2.0, f32::NAN), 2.0);
}
