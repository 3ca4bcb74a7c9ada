//! `2 * a + b` weighs earlier elements by powers of two: not associative.
use scan::scan_op;

#[scan_op(identity = 0)]
fn two_a_plus_b(a: i64, b: i64) -> i64 {
    2 * a + b
}

fn main() {}
