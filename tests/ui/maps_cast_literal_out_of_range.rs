// An unsuffixed literal cast to an integer type is of that type, as rustc
// types it: `3000000000 as i64` is 3000000000 (the translation had typed it
// i32 and wrapped it to -1294967296), and `3000000000 as i32` is out of range.
use scan::maps::Maps;
use scan::ops::Add;
use scan::scan_maps;

struct Offset;

#[scan_maps]
impl Maps<Add<i64>> for Offset {
    type Input = i64;
    type Output = i64;
    fn lift(x: i64) -> i64 {
        x + 3000000000 as i64 + (3000000000 as i32) as i64
    }
    fn project(x: i64) -> i64 {
        x
    }
}

fn main() {}
