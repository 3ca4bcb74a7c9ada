// A field named by a C++ keyword: the struct's CUDA declaration could not
// name the member, so NVRTC would fail at run time.
use scan::scan_item;

#[scan_item]
#[derive(Clone, Copy)]
#[repr(C)]
struct Order {
    new: f32,
    count: u32,
}

fn main() {}
