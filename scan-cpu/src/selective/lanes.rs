//! Eight f32 lanes, one channel (row) of a block each, and the few
//! operations the selective scan's kernels need on them, written as plain
//! loops over arrays so that the compiler vectorizes them (eight lanes one
//! AVX2 register, two SSE ones) and every build computes the same values:
//! no fused multiply-adds (Rust never contracts `a * b + c`), no
//! reassociation.

/// One value per lane.
pub(crate) type Lanes = [f32; LANES];

/// Lanes in a [`Lanes`]: the rows of a block.
pub(crate) const LANES: usize = 8;

/// `log2(e)`: `exp(x) = exp2(x log2(e))`.
pub(crate) const LOG2E: f32 = std::f32::consts::LOG2_E;

#[inline(always)]
pub(crate) fn splat(v: f32) -> Lanes {
    [v; LANES]
}

#[inline(always)]
pub(crate) fn mul(a: Lanes, b: Lanes) -> Lanes {
    std::array::from_fn(|j| a[j] * b[j])
}

#[inline(always)]
pub(crate) fn add(a: Lanes, b: Lanes) -> Lanes {
    std::array::from_fn(|j| a[j] + b[j])
}

/// `a * b + c`, rounded twice (see the module docs).
#[inline(always)]
pub(crate) fn mul_add(a: Lanes, b: Lanes, c: Lanes) -> Lanes {
    std::array::from_fn(|j| a[j] * b[j] + c[j])
}

/// `2^x` per lane, to about 2 units in the last place: `x = i + f` with `i`
/// the nearest integer and `|f| <= 1/2`, `2 * 2^f` by its Taylor polynomial
/// of degree 7 (remainder under 6e-9 relative; the coefficients doubled,
/// which scales every rounding exactly), `2^(i - 1)` put in the exponent.
/// The power of two split as `2 * 2^(i - 1)` keeps the top finite: for `x`
/// in [127.5, 128), `i = 128` and `2^i` alone would be infinity (the
/// exponent 128 is infinity's) although `2^x = 2^f 2^128 < f32::MAX`
/// (`2^f < 1`): the result is at most `f32::MAX` below 128, infinity from
/// 128 up. `x` is clamped to [-126, 128] first: at `i = -126` the factor's
/// biased exponent is 0, which is 0.0, so `2^x` below `2^-125.5` (1.7e-38,
/// the bottom of the normal floats) is 0 (as the GPU's ex2.approx.ftz;
/// the selective scan's decays multiply states, where such values and 0
/// are the same, and a 0 decay keeps the states out of subnormals), and so
/// is -infinity. NaN stays NaN.
#[inline(always)]
pub(crate) fn exp2(x: Lanes) -> Lanes {
    // 1.5 * 2^23: adding and subtracting it rounds to the nearest integer
    // (|x| < 2^22), with no rounding instruction (SSE2 has none).
    const ROUND: f32 = 12_582_912.0;
    // 2 (ln 2)^k / k!, k = 7 down to 1 (then 2): doubling is exact.
    const C: [f32; 7] = [
        2.0 * 1.525_273_4e-5,
        2.0 * 1.540_353e-4,
        2.0 * 1.333_355_8e-3,
        2.0 * 9.618_129e-3,
        2.0 * 5.550_411e-2,
        2.0 * 2.402_265e-1,
        2.0 * 6.931_472e-1,
    ];
    std::array::from_fn(|j| {
        // Comparisons, not f32::max/min: those would turn NaN into the bound.
        let x = x[j];
        let x = if x < -126.0 { -126.0 } else { x };
        let x = if x > 128.0 { 128.0 } else { x };
        let shifted = x + ROUND;
        let i = shifted - ROUND;
        let f = x - i;
        let mut p = C[0];
        for c in &C[1..] {
            p = p * f + c;
        }
        p = p * f + 2.0;
        // i's bits are the low bits of `shifted`'s (not `i as i32`, which
        // checks for NaN lane by lane); for NaN p is NaN already. The
        // biased exponent of 2^(i - 1): i - 1 + 127, from 0 (0.0) to 254.
        let biased = shifted.to_bits().wrapping_sub(ROUND.to_bits()).wrapping_add(126);
        p * f32::from_bits(biased << 23)
    })
}

/// `exp(x)` per lane, as [`exp2`] of `x log2(e)`.
#[inline(always)]
pub(crate) fn exp(x: Lanes) -> Lanes {
    exp2(mul(x, splat(LOG2E)))
}

/// `ln(1 + w)` per lane for `w` in [0, 1], to a few units in the last
/// place: `2 atanh(s)` by its series to `s^9`, with `s = w / (2 + w)` up to
/// `w = sqrt(2) - 1`, and past it `ln 2 + 2 atanh(s)` with
/// `s = (w - 1) / (w + 3)` (`(1 + w) / 2` in place of `1 + w`): `|s| <=
/// 0.172` either way, and no cancellation for small `w`.
#[inline(always)]
pub(crate) fn ln_1p_unit(w: Lanes) -> Lanes {
    const SPLIT: f32 = std::f32::consts::SQRT_2 - 1.0;
    // Both forms in every lane, then a select: branches per lane would
    // keep the compiler from vectorizing.
    let low: Lanes = std::array::from_fn(|j| w[j] / (2.0 + w[j]));
    let high: Lanes = std::array::from_fn(|j| (w[j] - 1.0) / (w[j] + 3.0));
    let s: Lanes = std::array::from_fn(|j| if w[j] > SPLIT { high[j] } else { low[j] });
    let base: Lanes = std::array::from_fn(|j| if w[j] > SPLIT { std::f32::consts::LN_2 } else { 0.0 });
    std::array::from_fn(|j| {
        let s2 = s[j] * s[j];
        let p = (((s2 * (1.0 / 9.0) + 1.0 / 7.0) * s2 + 1.0 / 5.0) * s2 + 1.0 / 3.0) * s2;
        base[j] + (2.0 * s[j] + 2.0 * s[j] * p)
    })
}

/// mamba_ssm's softplus per lane: `x` past 20, else `ln(1 + exp(x))`, as
/// `max(x, 0) + ln(1 + exp(-|x|))`.
#[inline(always)]
pub(crate) fn softplus(x: Lanes) -> Lanes {
    let tail = ln_1p_unit(exp(std::array::from_fn(|j| f32::from_bits(x[j].to_bits() | 0x8000_0000))));
    let relu: Lanes = std::array::from_fn(|j| if x[j] > 0.0 { x[j] } else { 0.0 });
    let near: Lanes = std::array::from_fn(|j| relu[j] + tail[j]);
    std::array::from_fn(|j| if x[j] > 20.0 { x[j] } else { near[j] })
}

/// `1 / (1 + exp(-x))` per lane.
#[inline(always)]
pub(crate) fn sigmoid(x: Lanes) -> Lanes {
    let e = exp(std::array::from_fn(|j| -x[j]));
    std::array::from_fn(|j| 1.0 / (1.0 + e[j]))
}

/// The sum of the lanes, in a fixed order.
#[inline(always)]
pub(crate) fn sum(v: Lanes) -> f32 {
    let h: [f32; 4] = std::array::from_fn(|j| v[j] + v[j + 4]);
    (h[0] + h[2]) + (h[1] + h[3])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exp2_is_within_two_ulps_of_f64_and_keeps_nan() {
        let mut worst = 0.0f64;
        let mut x = -125.4f32;
        while x <= 127.9 {
            let xs: Lanes = std::array::from_fn(|j| x + j as f32 * 1.3e-3);
            let got = exp2(xs);
            for j in 0..LANES {
                let want = 2f64.powf(f64::from(xs[j]));
                let ulp = f64::from(f32::EPSILON) * want;
                worst = worst.max((f64::from(got[j]) - want).abs() / ulp);
            }
            x += 0.0117;
        }
        assert!(worst <= 2.0, "worst error {worst} ulps");
        assert_eq!(exp2(splat(0.0)), splat(1.0));
        assert_eq!(exp2(splat(-1000.0))[0], 0.0);
        assert_eq!(exp2(splat(127.0))[0], 2f32.powi(127));
        assert!(exp2(splat(127.4))[0].is_finite());
        assert_eq!(exp2(splat(200.0))[0], f32::INFINITY);
        assert_eq!(exp2(splat(f32::INFINITY))[0], f32::INFINITY);
        assert_eq!(exp2(splat(f32::NEG_INFINITY))[0], 0.0);
        assert!(exp2(splat(f32::NAN))[0].is_nan());
    }

    /// Every `x` in [-150, 128) by a dense sweep, and every f32 in [127.5,
    /// 128) and in [-150, -125]: within 2 ulps of `2^x` where that is at
    /// least `2^-125.5` (finite up to the last f32 below 128, where `2^128`
    /// in the exponent gave infinity from 127.5 up), 0 below (not 2^-126,
    /// garbage or NaN).
    #[test]
    fn exp2_is_finite_below_128_and_zero_below_the_normal_floats() {
        let check = |xs: Lanes, worst: &mut f64| {
            let got = exp2(xs);
            for j in 0..LANES {
                let want = 2f64.powf(f64::from(xs[j]));
                let (g, x) = (got[j], xs[j]);
                assert!(g.is_finite() && g >= 0.0, "exp2({x}) = {g}, 2^x = {want:e}");
                if x > -125.5 {
                    assert!(g >= f32::MIN_POSITIVE, "exp2({x}) = {g}, 2^x = {want:e}");
                    *worst = worst.max((f64::from(g) - want).abs() / (f64::from(f32::EPSILON) * want));
                } else {
                    assert_eq!(g, 0.0, "exp2({x}), 2^x = {want:e}");
                }
            }
        };
        let mut worst = 0.0f64;
        let mut x = -150.0f64;
        while x < 128.0 {
            let xs: Lanes = std::array::from_fn(|j| (x + j as f64 * 1.1e-4).min(127.999) as f32);
            check(xs, &mut worst);
            x += 9.7e-4;
        }
        // Every f32 of [127.5, 128), and of [-150, -125] (from -125 down:
        // the bits of negative floats grow with the magnitude).
        for (start, keep) in [(127.5f32, (|x: f32| x < 128.0) as fn(f32) -> bool), (-125.0, |x| x >= -150.0)] {
            let mut bits = start.to_bits();
            loop {
                let xs: Lanes = std::array::from_fn(|j| f32::from_bits(bits + j as u32));
                if !xs.iter().all(|&x| keep(x)) {
                    break;
                }
                check(xs, &mut worst);
                bits += LANES as u32;
            }
        }
        assert!(worst <= 2.0, "worst error {worst} ulps");
        let below_128 = f32::from_bits(128f32.to_bits() - 1);
        let top = exp2(splat(below_128))[0];
        assert!(top.is_finite() && f64::from(top) > 0.999_99 * f64::from(f32::MAX), "{top}");
        assert_eq!(exp2(splat(128.0))[0], f32::INFINITY);
        assert_eq!(exp2(splat(-125.0))[0], 2f32.powi(-125));
        assert_eq!(exp2(splat(-126.0))[0], 0.0);
        // exp near 88.5, where f32 holds e^x (e^88.72 is f32::MAX).
        for v in [88.3f32, 88.5, 88.7] {
            let got = exp(splat(v))[0];
            let want = f64::from(v).exp();
            assert!(got.is_finite() && (f64::from(got) - want).abs() < 1e-4 * want, "exp({v}) = {got}, e^x = {want:e}");
        }
    }

    #[test]
    fn softplus_and_sigmoid_match_f64() {
        let mut worst = (0.0f64, 0.0f64);
        let mut x = -30.0f32;
        while x < 30.0 {
            let xs: Lanes = std::array::from_fn(|j| x + j as f32 * 1.7e-3);
            let (sp, sg) = (softplus(xs), sigmoid(xs));
            for j in 0..LANES {
                let v = f64::from(xs[j]);
                let want_sp = if v > 20.0 { v } else { v.exp().ln_1p() };
                let want_sg = 1.0 / (1.0 + (-v).exp());
                // Relative to 1 + |x|: x log2(e) is rounded to f32 before
                // the exponential, an error of |x| ulps in its exponent.
                let rel = |got: f32, want: f64| (f64::from(got) - want).abs() / want.abs() / (1.0 + v.abs());
                worst.0 = worst.0.max(rel(sp[j], want_sp));
                worst.1 = worst.1.max(rel(sg[j], want_sg));
            }
            x += 0.0131;
        }
        assert!(
            worst.0 < 2e-7 && worst.1 < 2e-7,
            "relative errors over 1 + |x|: softplus {}, sigmoid {}",
            worst.0,
            worst.1
        );
        assert!(softplus(splat(f32::NAN))[0].is_nan() && sigmoid(splat(f32::NAN))[0].is_nan());
    }
}
