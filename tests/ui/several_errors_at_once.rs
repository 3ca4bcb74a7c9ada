use scan::scan_op;

// Every problem is reported, not only the first: the operand types differ
// and the identity is missing.
#[scan_op]
fn add(a: f32, b: f64) -> f32 {
    a + b as f32
}

fn main() {}
