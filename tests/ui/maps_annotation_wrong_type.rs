// An annotation pins a field's type for the macro (which never reads the
// struct), so it must be right: `n` is a u32 here, and the translation that
// replaces the body keeps the annotation, so rustc says so (an f32 `/` on
// u32 values would panic on the CPU when the divisor is 0); a name in
// parentheses is one name too.
use scan::maps::Maps;
use scan::{scan_item, scan_maps, scan_op};

#[scan_item]
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Counts {
    pub n: u32,
    pub d: u32,
}

#[scan_op(identity = Counts { n: 0, d: 0 }, name = CountsOp)]
pub fn counts(l: Counts, r: Counts) -> Counts {
    Counts { n: l.n + r.n, d: l.d + r.d }
}

struct Ratio;

#[scan_maps]
impl Maps<CountsOp> for Ratio {
    type Input = u32;
    type Output = f32;
    fn lift(x: u32) -> Counts {
        Counts { n: x, d: 1 }
    }
    fn project(x: Counts) -> f32 {
        let n: f32 = x.n;
        let (d): f32 = x.d;
        n / d
    }
}

fn main() {}
