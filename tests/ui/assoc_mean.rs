//! The mean of two is not associative: `(a + b) / 2` weighs `c` double.
use scan::scan_op;

#[scan_op(identity = 0.0)]
fn mean(a: f32, b: f32) -> f32 {
    (a + b) / 2.0
}

fn main() {}
