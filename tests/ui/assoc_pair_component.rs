//! The first component is a sum, but the second multiplies by the right
//! operand's first component, which is itself a sum after a combine.
use scan::scan_op;

#[scan_op(identity = (0.0, 1.0))]
fn pair(l: (f32, f32), r: (f32, f32)) -> (f32, f32) {
    (l.0 + r.0, l.1 * r.0)
}

fn main() {}
