// Struct fields that are a tuple and an array, compared: Rust compares them,
// the generated C++ has no `==` or `<` for them (NVRTC refused the source
// when a GPU scan was built). The translation's bound makes rustc say so.
use scan::maps::Maps;
use scan::ops::Add;
use scan::{scan_item, scan_maps};

#[scan_item]
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Keyed {
    pub key: (u32, u32),
    pub other: (u32, u32),
    pub arr: [f32; 2],
}

struct SameKey;

#[scan_maps]
impl Maps<Add<u32>> for SameKey {
    type Input = Keyed;
    type Output = u32;
    fn lift(x: Keyed) -> u32 {
        if x.key == x.other {
            1
        } else {
            0
        }
    }
    fn project(x: u32) -> u32 {
        x
    }
}

struct Smaller;

#[scan_maps]
impl Maps<Add<u32>> for Smaller {
    type Input = Keyed;
    type Output = u32;
    fn lift(x: Keyed) -> u32 {
        let k = x.arr;
        if k < x.arr {
            1
        } else {
            0
        }
    }
    fn project(x: u32) -> u32 {
        x
    }
}

fn main() {}
