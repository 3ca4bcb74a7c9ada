// An alias of a scalar looks like a struct to the macro: the error says so.
use scan::scan_op;

type Real = f32;

#[scan_op(identity = 0.0)]
fn add(a: Real, b: Real) -> Real {
    a + b
}

fn main() {}
