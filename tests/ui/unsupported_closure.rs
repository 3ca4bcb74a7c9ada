use scan::scan_op;

#[scan_op(identity = 0)]
fn add(a: u32, b: u32) -> u32 {
    let f = |x: u32| x + b;
    f(a)
}

fn main() {}
