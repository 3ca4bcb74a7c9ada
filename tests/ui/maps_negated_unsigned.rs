// `-` on an unsigned value: Rust has none (E0600), and the translation that
// replaces a #[scan_maps] body negated with wrapping (`-5u32` ran as
// 4294967291). A seen u32 is refused by the macro; a struct field's u32,
// which the macro cannot see, by rustc through the translation's bound.
use scan::maps::Maps;
use scan::ops::Add;
use scan::{scan_item, scan_maps, scan_op};

#[scan_item]
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Count {
    pub n: u32,
}

#[scan_op(identity = Count { n: 0 }, name = CountOp)]
pub fn count(l: Count, r: Count) -> Count {
    Count { n: l.n + r.n }
}

struct Negate;

#[scan_maps]
impl Maps<Add<u32>> for Negate {
    type Input = u32;
    type Output = u32;
    fn lift(x: u32) -> u32 {
        -x
    }
    fn project(x: u32) -> u32 {
        x
    }
}

struct NegateField;

#[scan_maps]
impl Maps<CountOp> for NegateField {
    type Input = u32;
    type Output = u32;
    fn lift(x: u32) -> Count {
        Count { n: x }
    }
    fn project(x: Count) -> u32 {
        -x.n
    }
}

fn main() {}
