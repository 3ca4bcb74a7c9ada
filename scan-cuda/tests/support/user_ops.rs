//! Operators a user writes with `#[scan_op]`: a mixed tuple and a
//! `#[repr(C)]` struct (see `ops::StatsOp`, hand-written: the macro's
//! `assume_associative` path does not build for structs yet).
#![allow(dead_code)]

use scan_macros::scan_op;

/// (count, sum) over a mixed-width tuple, wrapping integers.
#[scan_op(identity = (0u32, 0i64))]
pub fn count_and_sum(l: (u32, i64), r: (u32, i64)) -> (u32, i64) {
    (l.0 + r.0, l.1 + r.1)
}
