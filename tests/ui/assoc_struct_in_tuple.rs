//! A struct inside a tuple: the checker knows its fields from the identity
//! and finds that subtracting counts is not associative.
use scan::{scan_item, scan_op};

#[scan_item]
#[repr(C)]
#[derive(Clone, Copy)]
struct Tally {
    sum: f64,
    count: u32,
}

#[scan_op(identity = (Tally { sum: 0.0, count: 0 }, 0))]
fn tally(l: (Tally, i32), r: (Tally, i32)) -> (Tally, i32) {
    (Tally { sum: l.0.sum + r.0.sum, count: l.0.count - r.0.count }, l.1 + r.1)
}

fn main() {}
