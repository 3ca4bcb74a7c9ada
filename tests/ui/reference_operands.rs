use scan::scan_op;

#[scan_op(identity = 0.0)]
fn add(a: &f64, b: &f64) -> f64 {
    a + b
}

fn main() {}
