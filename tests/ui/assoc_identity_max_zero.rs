//! `0.0` is not the identity of `f32` max: `max(0, -1)` is 0. Use `f32::NEG_INFINITY`.
use scan::scan_op;

#[scan_op(identity = 0.0)]
fn max(a: f32, b: f32) -> f32 {
    a.max(b)
}

fn main() {}
