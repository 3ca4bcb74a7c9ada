use scan::scan_op;

#[scan_op]
fn add(a: f32, b: f32) -> f32 {
    a + b
}

fn main() {}
