// A float literal for a struct field whose type the macro cannot see: the GPU
// source converts its f64 value to the field's type, rounding twice when the
// field is an f32, while rustc rounds the decimal once. This decimal lies
// next to the middle between two f32s, where the two roundings differ
// (1.0000001 on the CPU, 1.0 on the GPU): refused, with the fix.
use scan::maps::Maps;
use scan::{scan_item, scan_maps, scan_op};

#[scan_item]
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Weight {
    pub w: f32,
}

#[scan_op(identity = Weight { w: 0.0 }, name = WeightSum)]
pub fn weight_sum(l: Weight, r: Weight) -> Weight {
    Weight { w: l.w + r.w }
}

struct Unit;

#[scan_maps]
impl Maps<WeightSum> for Unit {
    type Input = f32;
    type Output = f32;
    fn lift(_x: f32) -> Weight {
        Weight { w: 1.0000000596046448 }
    }
    fn project(x: Weight) -> f32 {
        x.w
    }
}

fn main() {}
