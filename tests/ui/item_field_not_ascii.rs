// NVRTC reads identifiers of ASCII only.
use scan::scan_item;

#[scan_item]
#[derive(Clone, Copy)]
#[repr(C)]
struct Box3 {
    größe: f32,
}

fn main() {}
