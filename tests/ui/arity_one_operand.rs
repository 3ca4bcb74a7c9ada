use scan::scan_op;

#[scan_op(identity = 0.0)]
fn negate(a: f32) -> f32 {
    -a
}

fn main() {}
