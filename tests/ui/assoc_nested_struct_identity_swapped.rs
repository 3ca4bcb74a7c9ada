// A wrong identity written with a nested struct's fields out of order: the
// checker compared the nested fields by position (the identity's order
// against the body's by name), so `Q { y: 1.0, x: 0.0 }` (j, not 1) was
// proven an identity of the split-complex product.
use scan::{scan_item, scan_op};

#[scan_item]
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Q {
    pub x: f64,
    pub y: f64,
}

#[scan_item]
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct P {
    pub inner: Q,
}

#[scan_op(identity = P { inner: Q { y: 1.0, x: 0.0 } })]
fn split(l: P, r: P) -> P {
    P {
        inner: Q {
            x: l.inner.x * r.inner.x + l.inner.y * r.inner.y,
            y: l.inner.x * r.inner.y + l.inner.y * r.inner.x,
        },
    }
}

fn main() {}
