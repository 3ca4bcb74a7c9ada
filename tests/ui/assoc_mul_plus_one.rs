//! `a * b + 1` is not associative (nor is 1 its identity).
use scan::scan_op;

#[scan_op(identity = 1)]
fn mul_plus_one(a: i32, b: i32) -> i32 {
    a * b + 1
}

fn main() {}
