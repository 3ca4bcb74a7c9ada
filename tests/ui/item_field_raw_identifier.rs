// `r#type` would be written as it is into the CUDA declaration.
use scan::scan_item;

#[scan_item]
#[derive(Clone, Copy)]
#[repr(C)]
struct Token {
    r#type: u32,
}

fn main() {}
