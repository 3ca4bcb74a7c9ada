//! Associative over the reals, but division by a variable is outside what
//! the checker proves: it asks for `assume_associative`.
use scan::scan_op;

#[scan_op(identity = f64::INFINITY)]
fn harmonic(a: f64, b: f64) -> f64 {
    a * b / (a + b)
}

fn main() {}
