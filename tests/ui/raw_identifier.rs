// A raw identifier in the body: the generated code names bindings by their
// text, so the macro asks for another name instead of panicking.
use scan::scan_op;

#[scan_op(identity = 0)]
fn sum(l: i32, r: i32) -> i32 {
    let r#in = l + r;
    r#in
}

fn main() {}
