use scan::scan_op;

#[scan_op(identity = 0)]
fn add3(a: i32, b: i32, c: i32) -> i32 {
    a + b + c
}

fn main() {}
