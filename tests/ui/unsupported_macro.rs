use scan::scan_op;

#[scan_op(identity = 0)]
fn add(a: i32, b: i32) -> i32 {
    a + dbg!(b)
}

fn main() {}
