use scan::scan_op;

// Every error of a body is reported at once: the unsupported method in the
// `let`, and the shift after it. The use of `x` adds nothing (its value is
// already reported).
#[scan_op(identity = 0)]
fn combine(a: i32, b: i32) -> i32 {
    let x = a.pow(2);
    (x + b) << 1
}

fn main() {}
