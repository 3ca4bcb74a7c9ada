//! `max(a, b) + 1` adds one per combine, so the grouping matters.
use scan::scan_op;

#[scan_op(identity = f32::NEG_INFINITY)]
fn max_plus_one(a: f32, b: f32) -> f32 {
    a.max(b) + 1.0
}

fn main() {}
