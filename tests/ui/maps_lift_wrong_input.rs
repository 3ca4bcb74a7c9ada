// lift must take the impl's `Input`: here it takes one f32 where Input is a pair.
use scan::maps::Maps;
use scan::ops::LinearRecurrence;
use scan::scan_maps;

struct HOnly;

#[scan_maps]
impl Maps<LinearRecurrence<f32>> for HOnly {
    type Input = (f32, f32);
    type Output = f32;
    fn lift(x: f32) -> (f32, f32) {
        (1.0, x)
    }
    fn project(x: (f32, f32)) -> f32 {
        x.1
    }
}

fn main() {}
