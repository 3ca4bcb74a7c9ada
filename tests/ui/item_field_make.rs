// `make` is the constructor every generated CUDA struct has.
use scan::scan_item;

#[scan_item]
#[derive(Clone, Copy)]
#[repr(C)]
struct Car {
    make: u32,
    year: u32,
}

fn main() {}
