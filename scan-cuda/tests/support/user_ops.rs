//! Operators a user writes with `#[scan_op]`: a mixed tuple and a
//! `#[repr(C)]` `#[scan_item]` struct (non-commutative).
#![allow(dead_code)]

use scan_macros::{scan_item, scan_op};

/// (count, sum) over a mixed-width tuple, wrapping integers.
#[scan_op(identity = (0u32, 0i64))]
pub fn count_and_sum(l: (u32, i64), r: (u32, i64)) -> (u32, i64) {
    (l.0 + r.0, l.1 + r.1)
}

/// An affine map x -> scale * x + shift.
#[scan_item]
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Affine {
    pub scale: f64,
    pub shift: f64,
}

/// Composition of affine maps, "first l, then r" (not commutative). The macro
/// does not see struct field types, so the laws are sampled: `assume_associative`.
#[scan_op(identity = Affine { scale: 1.0, shift: 0.0 }, assume_associative)]
pub fn compose(l: Affine, r: Affine) -> Affine {
    Affine { scale: l.scale * r.scale, shift: r.scale * l.shift + r.shift }
}

/// An affine map of wrapping `i32`s with a step count: 12 bytes, not
/// commutative, exact.
#[scan_op(identity = (1i32, 0i32, 0u32))]
pub fn affine_i32_counted(l: (i32, i32, u32), r: (i32, i32, u32)) -> (i32, i32, u32) {
    (l.0 * r.0, r.0 * l.1 + r.1, l.2 + r.2)
}

/// The Hamilton product of quaternions (w, x, y, z): 32 bytes, not
/// commutative. Exact on the signed unit quaternions ±1, ±i, ±j, ±k (a group
/// under the product).
#[scan_op(identity = [1.0, 0.0, 0.0, 0.0])]
pub fn quaternion_product(l: [f64; 4], r: [f64; 4]) -> [f64; 4] {
    [
        l[0] * r[0] - l[1] * r[1] - l[2] * r[2] - l[3] * r[3],
        l[0] * r[1] + l[1] * r[0] + l[2] * r[3] - l[3] * r[2],
        l[0] * r[2] - l[1] * r[3] + l[2] * r[0] + l[3] * r[1],
        l[0] * r[3] + l[1] * r[2] - l[2] * r[1] + l[3] * r[0],
    ]
}
