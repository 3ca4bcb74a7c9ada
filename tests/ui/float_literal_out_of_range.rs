// An f32 literal past f32::MAX rounds to infinity: an error at the literal
// (rustc rejects it as well), not a panic of the macro.
use scan::scan_op;

#[scan_op(identity = 0.0)]
fn add_huge(l: f32, r: f32) -> f32 {
    l + r + 1e39
}

fn main() {}
