// A field whose type is zero-sized without showing it (an alias of `[u32; 0]`):
// the struct has no bytes, which a constant assertion reports at compile time.
use scan::scan_item;

pub type NoWords = [u32; 0];

#[scan_item]
#[repr(C)]
#[derive(Clone, Copy)]
pub struct OnlyNothing {
    pub words: NoWords,
}

fn main() {}
