use scan::scan_op;

#[scan_op(identity = 0.0)]
fn add_squares(a: f32, b: f32) -> f32 {
    (a.powi(2) + b.powi(2)).sqrt()
}

fn main() {}
