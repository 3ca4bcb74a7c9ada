// One #[scan_maps] impl per type: the CUDA source is printed per type.
use scan::maps::Maps;
use scan::ops::Add;
use scan::scan_maps;

struct Same<T>(T);

#[scan_maps]
impl<T: Copy> Maps<Add<f32>> for Same<T> {
    type Input = f32;
    type Output = f32;
    fn lift(x: f32) -> f32 {
        x
    }
    fn project(x: f32) -> f32 {
        x
    }
}

fn main() {}
