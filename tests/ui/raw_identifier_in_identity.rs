// A raw identifier in the identity (a field named `r#type`): the generated
// law test names fields by their text, so the macro asks for another name
// instead of panicking.
use scan::scan_op;

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Keyed {
    pub r#type: u32,
    pub key: f32,
}

#[scan_op(identity = (Keyed { r#type: 0, key: 0.0 }, f32::NEG_INFINITY), assume_associative)]
fn last_max(l: (Keyed, f32), r: (Keyed, f32)) -> (Keyed, f32) {
    if l.1 > r.1 { l } else { r }
}

fn main() {}
