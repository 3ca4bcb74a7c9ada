//! Outside the symbolic fragment (`exp`, `ln`), and not associative:
//! sampling finds a counterexample even with `assume_associative`.
use scan::scan_op;

#[scan_op(identity = 0.0, assume_associative)]
fn soft(a: f64, b: f64) -> f64 {
    (a.exp() + b).ln()
}

fn main() {}
