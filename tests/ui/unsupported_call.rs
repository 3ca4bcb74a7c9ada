use scan::scan_op;

fn helper(x: f32) -> f32 {
    x
}

#[scan_op(identity = 0.0)]
fn add(a: f32, b: f32) -> f32 {
    helper(a) + b
}

fn main() {}
