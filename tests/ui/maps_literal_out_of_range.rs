// A literal past its type's range: rustc refuses it (`overflowing_literals`,
// denied by default), and the translation that replaces a #[scan_maps] body
// must not wrap it instead (`x + 4294967296` ran as `x + 0`).
use scan::maps::Maps;
use scan::ops::Add;
use scan::scan_maps;

struct Shift;

#[scan_maps]
impl Maps<Add<u32>> for Shift {
    type Input = u32;
    type Output = u32;
    fn lift(x: u32) -> u32 {
        x + 4294967296
    }
    fn project(x: u32) -> u32 {
        x
    }
}

fn main() {}
