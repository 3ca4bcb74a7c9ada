// An item of no scalars (zero bytes): an error at the array's length.
use scan::scan_op;

#[scan_op(identity = [])]
fn nothing(l: [i32; 0], _r: [i32; 0]) -> [i32; 0] {
    l
}

fn main() {}
