//! `add` is associative, but 1 is not its identity.
use scan::scan_op;

#[scan_op(identity = 1)]
fn add(a: i32, b: i32) -> i32 {
    a + b
}

fn main() {}
