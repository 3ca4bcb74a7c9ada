// The same best prefix on a struct: the macro never sees the struct's
// declaration, so it took `total` (an untyped `0` in the identity) for a
// field that might be a float and `l.total + r.best` for a float sum with
// -inf. rustc makes both operands of `+` one type, and the identity shows
// `best` is an `i32`, so the sum wraps and the identity is refused.
use scan::{scan_item, scan_op};

#[scan_item]
#[derive(Clone, Copy, Debug, PartialEq)]
#[repr(C)]
pub struct Best {
    pub total: i32,
    pub best: i32,
}

#[scan_op(identity = Best { total: 0, best: i32::MIN })]
fn best_prefix(l: Best, r: Best) -> Best {
    Best { total: l.total + r.total, best: l.best.max(l.total + r.best) }
}

fn main() {}
