//! Built-in operators.
//!
//! Integer arithmetic wraps (in every build profile, as on the GPU); float
//! `Max`/`Min` ignore NaN like `f32::max`/`f32::min` (and CUDA's `fmaxf`/`fminf`),
//! with `-inf`/`+inf` identities.

use std::marker::PhantomData;

use crate::ScanOp;

/// Addition: `a + b` (wrapping for integers), identity 0.
pub struct Add<T>(PhantomData<T>);
/// Multiplication: `a * b` (wrapping for integers), identity 1.
pub struct Mul<T>(PhantomData<T>);
/// Maximum, identity the lowest value (`-inf` for floats).
pub struct Max<T>(PhantomData<T>);
/// Minimum, identity the highest value (`+inf` for floats).
pub struct Min<T>(PhantomData<T>);
/// The first-order linear recurrence `h_t = a_t * h_{t-1} + b_t` as a monoid
/// on `(a, b)` pairs: `(l.0 * r.0, r.0 * l.1 + r.1)`, identity `(1, 0)`.
/// An inclusive scan leaves `h_t` (from `h_{-1} = 0`) in the second component.
/// Not commutative.
pub struct LinearRecurrence<T>(PhantomData<T>);
/// The 2x2 matrix product `l · r` on row-major `[m00, m01, m10, m11]`
/// (wrapping for integers), identity the unit matrix. Not commutative.
pub struct MatMul2x2<T>(PhantomData<T>);

macro_rules! int_ops {
    ($($t:ty),*) => {$(
        impl ScanOp for Add<$t> {
            type Item = $t;
            fn identity() -> $t { 0 }
            fn combine(a: $t, b: $t) -> $t { a.wrapping_add(b) }
        }
        impl ScanOp for Mul<$t> {
            type Item = $t;
            fn identity() -> $t { 1 }
            fn combine(a: $t, b: $t) -> $t { a.wrapping_mul(b) }
        }
        impl ScanOp for Max<$t> {
            type Item = $t;
            fn identity() -> $t { <$t>::MIN }
            fn combine(a: $t, b: $t) -> $t { a.max(b) }
        }
        impl ScanOp for Min<$t> {
            type Item = $t;
            fn identity() -> $t { <$t>::MAX }
            fn combine(a: $t, b: $t) -> $t { a.min(b) }
        }
        impl ScanOp for MatMul2x2<$t> {
            type Item = [$t; 4];
            fn identity() -> [$t; 4] { [1, 0, 0, 1] }
            fn combine(l: [$t; 4], r: [$t; 4]) -> [$t; 4] {
                [
                    l[0].wrapping_mul(r[0]).wrapping_add(l[1].wrapping_mul(r[2])),
                    l[0].wrapping_mul(r[1]).wrapping_add(l[1].wrapping_mul(r[3])),
                    l[2].wrapping_mul(r[0]).wrapping_add(l[3].wrapping_mul(r[2])),
                    l[2].wrapping_mul(r[1]).wrapping_add(l[3].wrapping_mul(r[3])),
                ]
            }
        }
    )*};
}
int_ops!(i32, u32, i64, u64);

macro_rules! float_ops {
    ($($t:ty),*) => {$(
        impl ScanOp for Add<$t> {
            type Item = $t;
            fn identity() -> $t { 0.0 }
            fn combine(a: $t, b: $t) -> $t { a + b }
        }
        impl ScanOp for Mul<$t> {
            type Item = $t;
            fn identity() -> $t { 1.0 }
            fn combine(a: $t, b: $t) -> $t { a * b }
        }
        impl ScanOp for Max<$t> {
            type Item = $t;
            fn identity() -> $t { <$t>::NEG_INFINITY }
            fn combine(a: $t, b: $t) -> $t { a.max(b) }
        }
        impl ScanOp for Min<$t> {
            type Item = $t;
            fn identity() -> $t { <$t>::INFINITY }
            fn combine(a: $t, b: $t) -> $t { a.min(b) }
        }
        impl ScanOp for LinearRecurrence<$t> {
            type Item = ($t, $t);
            fn identity() -> ($t, $t) { (1.0, 0.0) }
            fn combine(l: ($t, $t), r: ($t, $t)) -> ($t, $t) { (l.0 * r.0, r.0 * l.1 + r.1) }
        }
        impl ScanOp for MatMul2x2<$t> {
            type Item = [$t; 4];
            fn identity() -> [$t; 4] { [1.0, 0.0, 0.0, 1.0] }
            fn combine(l: [$t; 4], r: [$t; 4]) -> [$t; 4] {
                [
                    l[0] * r[0] + l[1] * r[2],
                    l[0] * r[1] + l[1] * r[3],
                    l[2] * r[0] + l[3] * r[2],
                    l[2] * r[1] + l[3] * r[3],
                ]
            }
        }
    )*};
}
float_ops!(f32, f64);
