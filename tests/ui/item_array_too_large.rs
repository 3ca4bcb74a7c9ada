// An item of 2^20 scalars: the checker would evaluate the operator on
// thousands of them, and a GPU thread holds several: an error at the type.
use scan::scan_op;

#[scan_op(identity = [0; 1048576])]
fn firsts(l: [i32; 1048576], r: [i32; 1048576]) -> [i32; 1048576] {
    if l[0] >= r[0] { l } else { r }
}

fn main() {}
