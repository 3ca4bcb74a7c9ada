use scan::scan_op;

#[scan_op(identity = 0)]
fn add(a: i64, b: i64) -> i64 {
    return a + b;
}

fn main() {}
