// (rustc's own unused_mut warning is not this case's subject, and its
// wording changes between compilers.)
#![allow(unused_mut)]

use scan::scan_op;

// One error at `mut`: the uses of `x` add nothing (the binding is refused,
// and its name is still known to the rest of the body).
#[scan_op(identity = 0)]
fn add(a: i32, b: i32) -> i32 {
    let mut x = a;
    x + b
}

fn main() {}
