// The bodies use #[scan_op]'s subset: `sin` has no lowering (the GPU would
// compute something else), so it is rejected at the call.
use scan::maps::Maps;
use scan::ops::Add;
use scan::scan_maps;

struct Sines;

#[scan_maps]
impl Maps<Add<f32>> for Sines {
    type Input = f32;
    type Output = f32;
    fn lift(x: f32) -> f32 {
        x.sin()
    }
    fn project(x: f32) -> f32 {
        x
    }
}

fn main() {}
