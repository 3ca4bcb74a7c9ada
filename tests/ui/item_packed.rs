// A packed struct puts fields at offsets the GPU cannot read them from.
use scan::scan_item;

#[scan_item]
#[derive(Clone, Copy)]
#[repr(C, packed)]
struct Sample {
    tag: u32,
    value: f64,
}

fn main() {}
