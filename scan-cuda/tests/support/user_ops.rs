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
