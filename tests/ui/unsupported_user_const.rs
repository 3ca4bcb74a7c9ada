use scan::scan_op;

const SCALE: f32 = 2.0;

#[scan_op(identity = 0.0)]
fn add(a: f32, b: f32) -> f32 {
    a + b * SCALE
}

fn main() {}
