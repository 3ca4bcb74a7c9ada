use scan::scan_op;

#[scan_op(identity = 0.0)]
fn add(a: f32, b: f32) -> f64 {
    (a + b) as f64
}

fn main() {}
