use scan::scan_op;

#[scan_op(identity = 0.0)]
fn add(a: f32, b: f64) -> f32 {
    a + b as f32
}

fn main() {}
