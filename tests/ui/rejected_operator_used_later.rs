// A rejected operator is still used later: only the real errors are reported,
// not a cascade of "cannot find" errors at every use of the fn or its type.
use scan::{scan_op, Cpu, ScanSpec};

#[scan_op(identity = 0)]
fn sub(a: i32, b: i32) -> i32 {
    a - b
}

fn main() {
    let _ = sub(3, 2);
    let _ = Cpu::new().scan::<Sub>(&[1, 2, 3], ScanSpec::inclusive());
}
