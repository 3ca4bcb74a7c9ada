use scan::scan_op;

#[scan_op(identity = 0, commutative)]
fn add(a: i32, b: i32) -> i32 {
    a + b
}

fn main() {}
