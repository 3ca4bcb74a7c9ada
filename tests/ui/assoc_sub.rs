//! `a - b` is not associative.
use scan::scan_op;

#[scan_op(identity = 0.0)]
fn sub(a: f32, b: f32) -> f32 {
    a - b
}

fn main() {}
