// An integer best prefix whose identity puts `i32::MIN` into a sum: the
// checker used to take `l.0 + i32::MIN` as -inf and prove the identity, but
// the sum wraps (`-1 + i32::MIN` is `i32::MAX`), so scans came out wrong.
use scan::scan_op;

#[scan_op(identity = (0, i32::MIN))]
fn best_prefix(l: (i32, i32), r: (i32, i32)) -> (i32, i32) {
    (l.0 + r.0, l.1.max(l.0 + r.1))
}

fn main() {}
