use scan::scan_op;

#[scan_op(identity = 0)]
fn add(a: f32, b: f32) -> f32 {
    a + b
}

fn main() {}
