// `usize` is no item scalar (the GPU's is not the host's): said at the type,
// not as "expected `usize`, found an integer" at the identity.
use scan::scan_op;

#[scan_op(identity = 0)]
fn add(a: usize, b: usize) -> usize {
    a + b
}

fn main() {}
