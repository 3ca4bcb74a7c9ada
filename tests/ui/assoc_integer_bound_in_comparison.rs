// A comparison with `i32::MIN`: the checker took it as -inf, so `a > i32::MIN`
// held for every `a` and the operator was proven a sum, but at `a = MIN` it
// is false: (-2147483647 ∘ -1) ∘ 1 = 1 and -2147483647 ∘ (-1 ∘ 1) =
// -2147483647. (`if a > b { a } else { b }` stays provable: it is `max`.)
use scan::scan_op;

#[scan_op(identity = 0)]
fn sum_unless_min(a: i32, b: i32) -> i32 {
    if a > i32::MIN {
        a + b
    } else {
        b
    }
}

fn main() {}
