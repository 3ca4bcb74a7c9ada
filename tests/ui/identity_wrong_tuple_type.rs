use scan::scan_op;

#[scan_op(identity = (1.0, 0))]
fn linear_recurrence(l: (f32, f32), r: (f32, f32)) -> (f32, f32) {
    (l.0 * r.0, r.0 * l.1 + r.1)
}

fn main() {}
