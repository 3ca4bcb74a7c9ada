// The kernels keep items in shared memory aligned to 16 bytes.
use scan::scan_item;

#[scan_item]
#[derive(Clone, Copy)]
#[repr(C, align(32))]
struct Wide {
    a: f64,
    b: f64,
}

fn main() {}
