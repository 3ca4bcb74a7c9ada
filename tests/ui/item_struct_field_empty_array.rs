// A field of no items: C++ refuses arrays of length 0 (NVRTC reported it
// when a GPU scan was built); the error is at the length.
use scan::scan_item;

#[scan_item]
#[repr(C)]
#[derive(Clone, Copy)]
pub struct Padded {
    pub value: f32,
    pub none: [u32; 0],
}

fn main() {}
