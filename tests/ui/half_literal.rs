// bf16 and f16 have no literal syntax in Rust: the macro says so at the literal.
use scan::maps::bf16;
use scan::scan_op;

#[scan_op(identity = bf16::ZERO)]
fn plus_one(a: bf16, b: bf16) -> bf16 {
    a + b + 1.0
}

fn main() {}
