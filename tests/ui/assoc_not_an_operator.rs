//! A driver called with a type that is not a scan operator.
use scan::{reference, ScanSpec};

struct NotAnOp;

fn main() {
    let _ = reference::scan::<NotAnOp>(&[1, 2, 3], ScanSpec::inclusive());
}
