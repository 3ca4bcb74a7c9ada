// A fn already named in CamelCase (or in a script without case, such as
// `加`) has itself as its CamelCase: the generated unit struct `MaxPlus`,
// which is also a value, would clash with the fn (rustc's E0428 at the
// attribute). The macro asks for `name = ...` instead.
use scan::scan_op;

#[allow(non_snake_case)]
#[scan_op(identity = i64::MIN)]
fn MaxPlus(l: i64, r: i64) -> i64 {
    l.max(r)
}

fn main() {}
