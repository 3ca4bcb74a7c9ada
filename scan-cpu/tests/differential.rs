//! Every (algorithm, operator, kind, direction, in place or not) against
//! `scan_core::reference`, on sizes around every boundary of the tiled path
//! and of the Blelloch blocks, with fresh random data (seed printed; replay
//! with `SCAN_SEED=...`).
//!
//! Integers are compared exactly. Floats are compared two ways:
//! * data whose every partial result is exactly representable (small
//!   integers; ±1 decays; signed permutation matrices): any association of
//!   the operator gives the exact answer, so the result must equal the
//!   reference bit for bit; this catches any misplaced or missing item;
//! * general random data, against an f64 evaluation of the same scan, within
//!   the worst-case rounding of *any* association order (bounds stated at
//!   each check). NaN never passes. On signed data these bounds are loose
//!   (Σ|x| dwarfs a prefix), so f32 sums are also checked on non-negative
//!   data, where the same bound is under 1% of every prefix.

mod support;

use scan_core::ops::{Add, LinearRecurrence, MatMul2x2, Max, Min, Mul};
use scan_core::ScanOp;
use scan_testing::Rng;

use scan_cpu::{Algorithm, Cpu};
use support::{for_each_scan, for_each_scan_on, sizes, Check, BIG};

/// `γ_n = n u / (1 - n u)`: the relative error bound of any evaluation in
/// which every term passes through at most `n` roundings of unit `u`
/// (Higham, Accuracy and Stability, §3.1). Infinite once `n u >= 1`.
fn gamma(n: usize, u: f64) -> f64 {
    let nu = n as f64 * u;
    if nu >= 1.0 {
        f64::INFINITY
    } else {
        nu / (1.0 - nu)
    }
}

const U32: f64 = f32::EPSILON as f64 / 2.0;
const U64: f64 = f64::EPSILON / 2.0;

/// Sizes for an operator: the boundary sizes, and `BIG` when `big`.
fn sizes_for<Op: ScanOp>(big: bool) -> Vec<usize> {
    let mut s = sizes::<Op::Item>();
    if big {
        s.push(BIG);
    }
    s
}

// ---------------------------------------------------------------- integers

#[test]
fn add_i32_wraps_exactly_like_the_reference() {
    let mut rng = Rng::fresh("add i32");
    for n in sizes_for::<Add<i32>>(true) {
        // Full-range values: almost every prefix overflows.
        let x = rng.vec(n, |r| r.next_u64() as i32);
        for_each_scan::<Add<i32>>(&x, n == BIG, Check::Exact);
    }
}

#[test]
fn add_u64_wraps_exactly_like_the_reference() {
    let mut rng = Rng::fresh("add u64");
    for n in sizes_for::<Add<u64>>(true) {
        let x = rng.vec(n, |r| r.next_u64());
        for_each_scan::<Add<u64>>(&x, n == BIG, Check::Exact);
    }
}

#[test]
fn mul_i32_wraps_exactly_like_the_reference() {
    let mut rng = Rng::fresh("mul i32");
    for n in sizes_for::<Mul<i32>>(false) {
        // Odd factors, so that products never collapse to 0 (with one even
        // factor in 16 they did within some hundreds of items, and every
        // tile past that scanned to zeros whatever its carry).
        let x = rng.vec(n, |r| (r.next_u64() as i32) | 1);
        for_each_scan::<Mul<i32>>(&x, false, Check::Exact);
    }
}

#[test]
fn max_and_min_i64_equal_the_reference() {
    let mut rng = Rng::fresh("max/min i64");
    for n in sizes_for::<Max<i64>>(false) {
        let x = rng.vec(n, |r| r.next_u64() as i64);
        for_each_scan::<Max<i64>>(&x, false, Check::Exact);
        for_each_scan::<Min<i64>>(&x, false, Check::Exact);
    }
}

#[test]
fn matmul2x2_i32_wraps_exactly_like_the_reference() {
    // Non-commutative and exact: any reordering of operands shows (the
    // matrices have determinant 1, so their products never reach zero).
    let mut rng = Rng::fresh("matmul2x2 i32");
    for n in sizes_for::<MatMul2x2<i32>>(true) {
        let x = rng.vec(n, scan_testing::unimodular_i32);
        for_each_scan::<MatMul2x2<i32>>(&x, n == BIG, Check::Exact);
    }
}

// ---------------------------------------------------------------- float max / min

/// Values with NaNs, infinities and both zeros mixed in.
fn awkward_f32(r: &mut Rng) -> f32 {
    match r.below(20) {
        0 => f32::NAN,
        1 => f32::INFINITY,
        2 => f32::NEG_INFINITY,
        3 => 0.0,
        4 => -0.0,
        _ => r.range_f64(-1e3, 1e3) as f32,
    }
}

/// The scan with `f32::max` / `f32::min` written out, independently of the
/// operator definitions: the semantics the operators promise.
fn std_scan(x: &[f32], spec: scan_core::ScanSpec, f: fn(f32, f32) -> f32, identity: f32) -> Vec<f32> {
    let mut out = vec![0.0; x.len()];
    let mut acc = identity;
    let order: Vec<usize> = if spec.is_reverse() { (0..x.len()).rev().collect() } else { (0..x.len()).collect() };
    for i in order {
        let next = f(acc, x[i]);
        out[i] = if spec.is_inclusive() { next } else { acc };
        acc = next;
    }
    out
}

#[test]
fn max_and_min_f32_follow_f32_max_and_min_with_nan_inputs() {
    let mut rng = Rng::fresh("max/min f32");
    for n in sizes_for::<Max<f32>>(true) {
        let x = rng.vec(n, awkward_f32);
        let same = |want: &[f32], got: &[f32]| {
            // ±0 compare equal: f32::max may return either zero for (0, -0).
            want.iter().zip(got).position(|(w, g)| !(w == g || (w.is_nan() && g.is_nan())))
        };
        for_each_scan::<Max<f32>>(
            &x,
            n == BIG,
            Check::Custom(&|spec, got| same(&std_scan(&x, spec, f32::max, f32::NEG_INFINITY), got)),
        );
        for_each_scan::<Min<f32>>(
            &x,
            n == BIG,
            Check::Custom(&|spec, got| same(&std_scan(&x, spec, f32::min, f32::INFINITY), got)),
        );
    }
}

/// Bit for bit against the reference, which merges ties bitwise (`(-0, +0)`
/// gives +0 for max, -0 for min): the tiled path's accumulating form of
/// max/min (kernel/accumulate.rs) must agree with `combine` on every zero.
#[test]
fn max_and_min_f32_and_f64_equal_the_reference_bit_for_bit_zeros_included() {
    fn check<Op: ScanOp>(x: &[Op::Item], big: bool, bits: fn(&Op::Item) -> u64)
    where
        Op::Item: PartialEq + std::fmt::Debug,
    {
        let differs = |spec, got: &[Op::Item]| {
            let want = scan_core::reference::scan::<Op>(x, spec);
            want.iter().zip(got).position(|(w, g)| bits(w) != bits(g))
        };
        for_each_scan::<Op>(x, big, Check::Custom(&differs));
        // The tiled look-back on more threads than this machine may have.
        let tiled = [1, 3, 8].map(|t| Cpu::new().with_algorithm(Algorithm::Tiled).with_threads(t));
        for_each_scan_on::<Op>(&tiled, x, big, Check::Custom(&differs));
    }
    // Values at or below zero for max (at or above for min), so that the
    // running results sit on ±0 and every kind of tie occurs.
    let zeros = |r: &mut Rng, sign: f32| [0.0, -0.0, f32::NAN, sign, sign * f32::INFINITY][r.below(5) as usize];
    let mut rng = Rng::fresh("max/min bitwise");
    for n in sizes_for::<Max<f32>>(true) {
        let below = rng.vec(n, |r| zeros(r, -1.0));
        let above = rng.vec(n, |r| zeros(r, 1.0));
        check::<Max<f32>>(&below, n == BIG, |v| u64::from(v.to_bits()));
        check::<Min<f32>>(&above, n == BIG, |v| u64::from(v.to_bits()));
        let wide = |x: &[f32]| x.iter().map(|&v| f64::from(v)).collect::<Vec<f64>>();
        check::<Max<f64>>(&wide(&below), n == BIG, |v| v.to_bits());
        check::<Min<f64>>(&wide(&above), n == BIG, |v| v.to_bits());
    }
}

// ---------------------------------------------------------------- bf16 / f16

/// bf16 and f16 items: max/min of random values are exact in any order;
/// sums of -1, 0 and 1 kept within ±64 are exact integers in both types
/// (bf16 holds every integer up to 256), so every order gives the
/// reference's bits.
#[test]
fn half_precision_items_equal_the_reference() {
    use scan_core::maps::{bf16, f16};
    let mut rng = Rng::fresh("bf16/f16");
    for n in sizes_for::<Max<bf16>>(true) {
        let x = rng.vec(n, |r| bf16::from_f64(r.range_f64(-1e3, 1e3)));
        for_each_scan::<Max<bf16>>(&x, n == BIG, Check::Exact);
        for_each_scan::<Min<bf16>>(&x, n == BIG, Check::Exact);
        let x: Vec<f16> = x.iter().map(|v| f16::from_f32(v.to_f32())).collect();
        for_each_scan::<Max<f16>>(&x, n == BIG, Check::Exact);
        let mut sum = 0i32;
        let steps: Vec<i32> = (0..n)
            .map(|_| {
                let step = if sum.abs() >= 64 { -sum.signum() } else { rng.below(3) as i32 - 1 };
                sum += step;
                step
            })
            .collect();
        let x: Vec<bf16> = steps.iter().map(|&v| bf16::from_f32(v as f32)).collect();
        for_each_scan::<Add<bf16>>(&x, n == BIG, Check::Exact);
        let x: Vec<f16> = steps.iter().map(|&v| f16::from_f32(v as f32)).collect();
        for_each_scan::<Add<f16>>(&x, n == BIG, Check::Exact);
    }
}

// ---------------------------------------------------------------- float add

/// Integers in [-4, 4]: every partial sum of up to 2^21 of them is an integer
/// below 2^24 in magnitude, exact in f32, so every order gives the same result.
fn small_int_f32(r: &mut Rng) -> f32 {
    r.below(9) as f32 - 4.0
}

#[test]
fn add_f32_is_exact_on_exactly_representable_sums() {
    let mut rng = Rng::fresh("add f32 exact");
    for n in sizes_for::<Add<f32>>(true) {
        let x = rng.vec(n, small_int_f32);
        for_each_scan::<Add<f32>>(&x, n == BIG, Check::Exact);
    }
}

/// In scan order, each index with the f64 sum of the same items (in scan
/// order) and its bound `γ_{k} · Σ|x|` for the `k` items summed so far: any
/// order of `k` additions rounds each term at most `k - 1` times. `extra` adds
/// the f64 evaluation's own error, for f64 data.
fn sum_bounds<T: Copy + Into<f64>>(
    x: &[T],
    spec: scan_core::ScanSpec,
    u: f64,
    extra: f64,
) -> impl Iterator<Item = (usize, f64, f64)> + '_ {
    let n = x.len();
    let order = (0..n).map(move |k| if spec.is_reverse() { n - 1 - k } else { k });
    order.enumerate().scan((0.0f64, 0.0f64), move |(sum, abs), (k, i)| {
        let (before, before_abs) = (*sum, *abs);
        *sum += x[i].into();
        *abs += x[i].into().abs();
        let (want, bound_abs, terms) = if spec.is_inclusive() { (*sum, *abs, k + 1) } else { (before, before_abs, k) };
        Some((i, want, (gamma(terms, u) + extra * terms as f64) * bound_abs))
    })
}

/// The first index where `got` is off the f64 sum by more than its
/// [`sum_bounds`] bound.
fn bad_sum<T: Copy + Into<f64>>(x: &[T], spec: scan_core::ScanSpec, got: &[T], u: f64, extra: f64) -> Option<usize> {
    sum_bounds(x, spec, u, extra)
        .find(|&(i, want, bound)| {
            let g: f64 = got[i].into();
            g.is_nan() || (g - want).abs() > bound
        })
        .map(|(i, _, _)| i)
}

#[test]
fn add_f32_is_within_the_summation_bound_of_an_f64_evaluation() {
    let mut rng = Rng::fresh("add f32 random");
    for n in sizes_for::<Add<f32>>(true) {
        let x = rng.vec(n, |r| r.range_f64(-1.0, 1.0) as f32);
        // Bound: γ_k(2^-24) Σ|x| (see `bad_sum`); the f64 sum's own error is
        // below 2^-29 of that and is covered by γ's slack. Honest for any
        // order, but on signed data Σ|x| dwarfs the prefix (a random walk):
        // the case below is where the bound bites.
        for_each_scan::<Add<f32>>(&x, n == BIG, Check::Custom(&|spec, got| bad_sum(&x, spec, got, U32, 0.0)));
    }
}

/// The longest f32 sum whose bound γ_k(2^-24) is below 1%: k u < 0.0099.
/// Past 10 tiles of f32 (`tile_len::<f32>()` = 15488), so the tiled path
/// carries prefixes into an eleventh tile.
const RELATIVE_MAX: usize = 166_000;

#[test]
fn add_f32_on_non_negative_data_is_within_a_relative_bound() {
    let mut rng = Rng::fresh("add f32 non-negative");
    assert!(RELATIVE_MAX > 10 * scan_cpu::tile_len::<f32>());
    let mut sizes: Vec<usize> = sizes_for::<Add<f32>>(false).into_iter().filter(|&n| n < RELATIVE_MAX).collect();
    sizes.push(RELATIVE_MAX);
    for n in sizes {
        // Non-negative: Σ|x| is the prefix itself, so `bad_sum`'s bound
        // γ_k Σ|x| is a relative one, under 1% at every index here (a
        // dropped carry or item is off by far more).
        let x = rng.vec(n, |r| r.range_f64(0.0, 1.0) as f32);
        for spec in scan_core::ScanSpec::ALL {
            for (i, want, bound) in sum_bounds(&x, spec, U32, 0.0) {
                assert!(want == 0.0 || bound < 0.01 * want, "n {n}, {spec:?}, i {i}: bound {bound} vs prefix {want}");
            }
        }
        for_each_scan::<Add<f32>>(&x, false, Check::Custom(&|spec, got| bad_sum(&x, spec, got, U32, 0.0)));
    }
}

#[test]
fn add_f64_is_exact_on_integers_and_within_bound_on_random_data() {
    let mut rng = Rng::fresh("add f64");
    for n in sizes_for::<Add<f64>>(true) {
        // Integers below 2^31: every partial sum of up to 2^21 of them is an
        // integer below 2^52, exact in f64, so every order gives the same result.
        let x = rng.vec(n, |r| (r.next_u64() >> 33) as f64 - (1u64 << 30) as f64);
        for_each_scan::<Add<f64>>(&x, n == BIG, Check::Exact);
        let x = rng.vec(n, |r| r.range_f64(-1.0, 1.0));
        // Both our result and the f64 reference are off the real sum by at
        // most γ_k(2^-53) Σ|x|: allow twice that.
        for_each_scan::<Add<f64>>(&x, n == BIG, Check::Custom(&|spec, got| bad_sum(&x, spec, got, U64, 2.0 * U64)));
    }
}

// ---------------------------------------------------------------- linear recurrence

#[test]
fn linear_recurrence_is_exact_on_sign_flips_and_small_integers() {
    // a = ±1, b in [-4, 4]: every combination is an integer pair below 2^24,
    // exact in f32 and f64, and the operator is still not commutative.
    let mut rng = Rng::fresh("linear recurrence exact");
    for n in sizes_for::<LinearRecurrence<f32>>(true) {
        let x = rng.vec(n, |r| (if r.below(2) == 0 { 1.0f32 } else { -1.0 }, small_int_f32(r)));
        for_each_scan::<LinearRecurrence<f32>>(&x, n == BIG, Check::Exact);
        let x: Vec<(f64, f64)> = x.iter().map(|&(a, b)| (f64::from(a), f64::from(b))).collect();
        for_each_scan::<LinearRecurrence<f64>>(&x, n == BIG, Check::Exact);
    }
}

/// The first index where the `(a, b)` scan `got` is off an f64 evaluation by
/// more than the rounding any association order can make.
///
/// Bound: every result is a sum over the items `j` combined so far of
/// `(Π a_k over the later items k) · b_j`, and in any association each such
/// term passes through at most `2m` roundings for `m` items (one product and
/// one sum per combine), so `|err| ≤ γ_{2m} · H` with `H` the same recurrence
/// run on `|a|`, `|b|`; likewise the `a` product is within `γ_m |Π a|`.
/// Subnormal products add an absolute error of at most one subnormal unit per
/// rounding, hence the `tiny` term. `extra` covers the f64 evaluation itself.
fn bad_recurrence<T: Copy + Into<f64>>(
    x: &[(T, T)],
    spec: scan_core::ScanSpec,
    got: &[(T, T)],
    u: f64,
    tiny: f64,
    extra: f64,
) -> Option<usize> {
    let order: Vec<usize> = if spec.is_reverse() { (0..x.len()).rev().collect() } else { (0..x.len()).collect() };
    let (mut a, mut h, mut h_abs) = (1.0f64, 0.0f64, 0.0f64);
    for (k, i) in order.into_iter().enumerate() {
        let before = (a, h, h_abs, k);
        let (xa, xb): (f64, f64) = (x[i].0.into(), x[i].1.into());
        a *= xa;
        h = xa * h + xb;
        h_abs = xa.abs() * h_abs + xb.abs();
        let (wa, wh, wh_abs, m) = if spec.is_inclusive() { (a, h, h_abs, k + 1) } else { before };
        let (ga, gh): (f64, f64) = (got[i].0.into(), got[i].1.into());
        let slack = tiny * 2.0 * m as f64;
        let bound_a = (gamma(m, u) + extra * m as f64) * wa.abs() + slack;
        let bound_h = (gamma(2 * m, u) + 2.0 * extra * m as f64) * wh_abs + slack;
        if ga.is_nan() || gh.is_nan() || (ga - wa).abs() > bound_a || (gh - wh).abs() > bound_h {
            return Some(i);
        }
    }
    None
}

#[test]
fn linear_recurrence_f32_is_within_bound_of_an_f64_evaluation() {
    let mut rng = Rng::fresh("linear recurrence f32 random");
    for n in sizes_for::<LinearRecurrence<f32>>(true) {
        // |a| in [0.5, 1): products shrink (and reach subnormals on long runs).
        let x = rng.vec(n, |r| {
            let a = r.range_f64(0.5, 1.0) as f32;
            (if r.below(2) == 0 { a } else { -a }, r.range_f64(-1.0, 1.0) as f32)
        });
        let tiny = f64::from(f32::from_bits(1)); // the smallest subnormal f32
        for_each_scan::<LinearRecurrence<f32>>(
            &x,
            n == BIG,
            Check::Custom(&|spec, got| bad_recurrence(&x, spec, got, U32, tiny, 0.0)),
        );
    }
}

#[test]
fn linear_recurrence_f64_is_within_bound_of_the_reference_evaluation() {
    let mut rng = Rng::fresh("linear recurrence f64 random");
    for n in sizes_for::<LinearRecurrence<f64>>(false) {
        let x = rng.vec(n, |r| (r.range_f64(-1.0, 1.0), r.range_f64(-1.0, 1.0)));
        let tiny = f64::from_bits(1);
        // Both sides carry f64 rounding: `extra` doubles the allowance.
        for_each_scan::<LinearRecurrence<f64>>(
            &x,
            false,
            Check::Custom(&|spec, got| bad_recurrence(&x, spec, got, U64, 2.0 * tiny, U64)),
        );
    }
}

// ---------------------------------------------------------------- 2x2 matrices, f64

/// A random signed permutation matrix: products stay signed permutations, so
/// every association is exact; the group is not commutative.
fn signed_permutation(r: &mut Rng) -> [f64; 4] {
    let s = |r: &mut Rng| if r.below(2) == 0 { 1.0 } else { -1.0 };
    if r.below(2) == 0 {
        [s(r), 0.0, 0.0, s(r)]
    } else {
        [0.0, s(r), s(r), 0.0]
    }
}

#[test]
fn matmul2x2_f64_is_exact_on_signed_permutations() {
    let mut rng = Rng::fresh("matmul2x2 f64 exact");
    for n in sizes_for::<MatMul2x2<f64>>(true) {
        let x = rng.vec(n, signed_permutation);
        for_each_scan::<MatMul2x2<f64>>(&x, n == BIG, Check::Exact);
    }
}

// ---------------------------------------------------------------- f32 products
// (the tiled path reduces each tile before scanning it from its prefix for
// these: kernel::reduces_first)

#[test]
fn matmul2x2_f32_is_exact_on_signed_permutations() {
    let mut rng = Rng::fresh("matmul2x2 f32 exact");
    for n in sizes_for::<MatMul2x2<f32>>(true) {
        let x: Vec<[f32; 4]> = rng.vec(n, |r| signed_permutation(r).map(|v| v as f32));
        for_each_scan::<MatMul2x2<f32>>(&x, n == BIG, Check::Exact);
    }
}

#[test]
fn mul_f32_is_exact_on_signs_and_within_bound_on_decays() {
    let mut rng = Rng::fresh("mul f32");
    for n in sizes_for::<Mul<f32>>(true) {
        let x = rng.vec(n, |r| if r.below(2) == 0 { 1.0f32 } else { -1.0 });
        for_each_scan::<Mul<f32>>(&x, n == BIG, Check::Exact);
        // Factors in [0.5, 1): the product underflows within a few hundred
        // items and then sits in the subnormals or at 0. Any association
        // rounds each result's m factors m times (γ_m relative), and
        // subnormal products add at most one subnormal unit per rounding.
        let x = rng.vec(n, |r| r.range_f64(0.5, 1.0) as f32);
        let tiny = f64::from(f32::from_bits(1));
        let check = |spec: scan_core::ScanSpec, got: &[f32]| {
            let order: Vec<usize> = if spec.is_reverse() { (0..n).rev().collect() } else { (0..n).collect() };
            let mut want = 1.0f64;
            order.into_iter().enumerate().find_map(|(k, i)| {
                let before = want;
                want *= f64::from(x[i]);
                let (w, m) = if spec.is_inclusive() { (want, k + 1) } else { (before, k) };
                let g = f64::from(got[i]);
                (g.is_nan() || (g - w).abs() > gamma(m, U32) * w + tiny * 2.0 * m as f64).then_some(i)
            })
        };
        for_each_scan::<Mul<f32>>(&x, n == BIG, Check::Custom(&check));
    }
}

#[test]
fn matmul2x2_f64_of_rotations_is_within_bound_of_the_reference() {
    // Products of rotations stay rotations. One product of two matrices with
    // errors E_l, E_r has error E_l r + l E_r + (rounding ≤ γ_2 per entry, as
    // |l0 r0| + |l1 r2| ≤ 1 by Cauchy-Schwarz, so ≤ 2γ_2 in 2-norm), and
    // orthogonal factors do not amplify E: after the m - 1 products behind a
    // result, ‖E‖ ≤ 2γ_2 m, for ours and for the reference alike. Allowed:
    // 8γ_2 m, twice their sum, for the rounded (not exactly orthogonal) inputs.
    let mut rng = Rng::fresh("matmul2x2 f64 rotations");
    for n in sizes_for::<MatMul2x2<f64>>(false) {
        let x = rng.vec(n, |r| {
            let t = r.range_f64(-3.2, 3.2);
            [t.cos(), -t.sin(), t.sin(), t.cos()]
        });
        let check = |spec: scan_core::ScanSpec, got: &[[f64; 4]]| {
            let want = scan_core::reference::scan::<MatMul2x2<f64>>(&x, spec);
            (0..n).find(|&i| {
                let m = if spec.is_reverse() { n - i } else { i + 1 };
                let bound = 8.0 * gamma(2, U64) * m as f64;
                (0..4).any(|e| got[i][e].is_nan() || (got[i][e] - want[i][e]).abs() > bound)
            })
        };
        for_each_scan::<MatMul2x2<f64>>(&x, false, Check::Custom(&check));
    }
}
