//! A correct operator compiles without warnings: this file denies every
//! warning, and its twelve private operators are reached only through their
//! generated types (their fns are never called). `name = ...` picks a type's
//! name where the CamelCase one is taken.
#![deny(warnings)]

use scan::{reference, scan_item, scan_op, ScanSpec};

#[scan_op(identity = 0)]
fn plus(a: i32, b: i32) -> i32 {
    a + b
}

#[scan_op(identity = 1.0)]
fn times(a: f64, b: f64) -> f64 {
    a * b
}

#[scan_op(identity = f32::NEG_INFINITY)]
fn biggest(a: f32, b: f32) -> f32 {
    a.max(b)
}

#[scan_op(identity = u64::MAX)]
fn smallest(a: u64, b: u64) -> u64 {
    a.min(b)
}

#[scan_op(identity = (1.0, 0.0))]
fn recurrence(l: (f32, f32), r: (f32, f32)) -> (f32, f32) {
    (l.0 * r.0, r.0 * l.1 + r.1)
}

#[scan_op(identity = [1, 0, 0, 1])]
fn product(l: [i64; 4], r: [i64; 4]) -> [i64; 4] {
    [l[0] * r[0] + l[1] * r[2], l[0] * r[1] + l[1] * r[3], l[2] * r[0] + l[3] * r[2], l[2] * r[1] + l[3] * r[3]]
}

#[scan_op(identity = 0u32)]
fn either(a: u32, b: u32) -> u32 {
    a | b
}

#[scan_op(identity = T::ZERO)]
fn generic_sum<T: scan::CudaScalar>(a: T, b: T) -> T {
    a + b
}

#[scan_op(identity = (false, 0))]
fn segments(l: (bool, i64), r: (bool, i64)) -> (bool, i64) {
    (l.0 || r.0, if r.0 { r.1 } else { l.1 + r.1 })
}

#[scan_item]
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
struct WStats {
    weight: f64,
    total: f64,
}

// `w_stats` alone would generate `WStats`, the struct's own name.
#[scan_op(identity = WStats { weight: 0.0, total: 0.0 }, name = MergeWStats)]
fn w_stats(l: WStats, r: WStats) -> WStats {
    WStats { weight: l.weight + r.weight, total: l.total + r.total }
}

/// Products of struct fields and of a type parameter: their
/// `multiplies_narrow_floats` checks the types when the program runs (a
/// closure per field, `is_narrow_float::<T>()`), here with an operand
/// named `L`.
#[scan_item]
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
struct Scales {
    a: f32,
    b: f64,
    n: u32,
}

#[scan_op(identity = Scales { a: 1.0, b: 1.0, n: 1 })]
#[allow(non_snake_case)] // the fn's own names; the generated code adds no warning
fn scale_all(L: Scales, R: Scales) -> Scales {
    Scales { a: L.a * R.a, b: L.b * R.b, n: L.n * R.n }
}

#[scan_op(identity = T::ONE)]
fn generic_product<T: scan::CudaScalar>(a: T, b: T) -> T {
    a * b
}

/// Fused maps too: a 2-array lift with a `let`, a widening project.
struct MovingAverage;

#[scan::scan_maps]
impl scan::maps::Maps<Recurrence> for MovingAverage {
    type Input = (f32, f32);
    type Output = f64;
    fn lift(x: (f32, f32)) -> (f32, f32) {
        let (alpha, value) = x;
        (alpha, (1.0 - alpha) * value)
    }
    fn project(x: (f32, f32)) -> f64 {
        x.1 as f64
    }
}

#[test]
fn declared_maps_compile_without_warnings() {
    let (alpha, x) = ([0.5f32, 0.5], [2.0f32, 2.0]);
    let h = scan::maps::reference::<Recurrence, MovingAverage, _>((&alpha[..], &x[..]), ScanSpec::inclusive());
    assert_eq!(h.unwrap(), [1.0, 1.5]);
}

#[test]
fn twelve_operators_reached_only_through_their_types_compile_without_warnings() {
    let inc = ScanSpec::inclusive();
    assert_eq!(reference::scan::<Plus>(&[1, 2, 3], inc), [1, 3, 6]);
    assert_eq!(reference::scan::<Times>(&[2.0, 3.0], inc), [2.0, 6.0]);
    assert_eq!(reference::scan::<Biggest>(&[1.0, 3.0, 2.0], inc), [1.0, 3.0, 3.0]);
    assert_eq!(reference::scan::<Smallest>(&[5, 3, 4], inc), [5, 3, 3]);
    assert_eq!(reference::scan::<Recurrence>(&[(0.5, 1.0), (0.5, 1.0)], inc)[1].1, 1.5);
    assert_eq!(reference::scan::<Product>(&[[1, 1, 1, 0]; 10], inc)[9][1], 55);
    assert_eq!(reference::scan::<Either>(&[1, 2, 4], inc), [1, 3, 7]);
    assert_eq!(reference::scan::<GenericSum<u32>>(&[1, 2], inc), [1, 3]);
    assert_eq!(
        reference::scan::<Segments>(&[(true, 1), (false, 2), (true, 5)], inc),
        [(true, 1), (true, 3), (true, 5)]
    );
    let s = reference::scan::<MergeWStats>(&[WStats { weight: 1.0, total: 2.0 }; 2], inc);
    assert_eq!(s[1], WStats { weight: 2.0, total: 4.0 });
    let x = Scales { a: 2.0, b: 3.0, n: 4 };
    assert_eq!(reference::scan::<ScaleAll>(&[x; 2], inc)[1], Scales { a: 4.0, b: 9.0, n: 16 });
    assert_eq!(reference::scan::<GenericProduct<i64>>(&[2, 3], inc), [2, 6]);
    use scan::ScanOp;
    assert!(ScaleAll::multiplies_narrow_floats() && GenericProduct::<f32>::multiplies_narrow_floats());
    assert!(!GenericProduct::<i64>::multiplies_narrow_floats());
}
