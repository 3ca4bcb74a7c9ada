// The macro lowers the types as written: `Self::Input` names one it cannot see.
use scan::maps::Maps;
use scan::ops::Add;
use scan::scan_maps;

struct Same;

#[scan_maps]
impl Maps<Add<f32>> for Same {
    type Input = f32;
    type Output = f32;
    fn lift(x: Self::Input) -> f32 {
        x
    }
    fn project(x: f32) -> f32 {
        x
    }
}

fn main() {}
