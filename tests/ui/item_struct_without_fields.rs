// A #[scan_item] struct of no fields: zero bytes in Rust, and C++ has no
// zero-sized structs (NVRTC refused its size assertion, at run time).
use scan::scan_item;

#[scan_item]
#[repr(C)]
#[derive(Clone, Copy)]
pub struct Nothing {}

fn main() {}
