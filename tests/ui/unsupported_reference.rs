use scan::scan_op;

#[scan_op(identity = 0.0)]
fn add(a: f64, b: f64) -> f64 {
    let x = &a;
    *x + b
}

fn main() {}
