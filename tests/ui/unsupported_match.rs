use scan::scan_op;

#[scan_op(identity = 0)]
fn pick(a: i64, b: i64) -> i64 {
    match b {
        0 => a,
        _ => b,
    }
}

fn main() {}
