// The generated type is named after the fn in CamelCase; `_2x2_mul` would
// give `2x2Mul`, which is no identifier: an error at the fn's name asking
// for `name = ...`, not a panic of the macro.
use scan::scan_op;

#[scan_op(identity = 0)]
fn _2x2_mul(l: i32, r: i32) -> i32 {
    l + r
}

fn main() {}
