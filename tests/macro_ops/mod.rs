//! Operators declared in the tests, shared by `macro_*.rs` and `nvrtc.rs` (so
//! that every one of them also has its CUDA source compiled).
#![allow(dead_code)]

use scan::maps::{bf16, f16};
use scan::{scan_item, scan_op, CudaOp};

/// The DESIGN example: h_t = a_t * h_{t-1} + b_t on (a, b) pairs.
#[scan_op(identity = (1.0, 0.0))]
pub fn linear_recurrence(l: (f32, f32), r: (f32, f32)) -> (f32, f32) {
    (l.0 * r.0, r.0 * l.1 + r.1)
}

#[scan_op(identity = f32::NEG_INFINITY)]
pub fn max_f32(a: f32, b: f32) -> f32 {
    a.max(b)
}

/// bf16 and f16 in signatures: operators and max/min on the operands, the
/// `half` crate's arithmetic on the CPU (9/11).
#[scan_op(identity = bf16::ZERO)]
pub fn sum_bf16(a: bf16, b: bf16) -> bf16 {
    a + b
}

#[scan_op(identity = (f16::NEG_INFINITY, f16::ZERO))]
pub fn max_and_sum_f16(l: (f16, f16), r: (f16, f16)) -> (f16, f16) {
    (l.0.max(r.0), l.1 + r.1)
}

/// Integer arithmetic written with plain `+ *`: wraps in every profile.
#[scan_op(identity = 0)]
pub fn sum_i32(a: i32, b: i32) -> i32 {
    a + b
}

#[scan_op(identity = 1u64)]
pub fn product_u64(a: u64, b: u64) -> u64 {
    a.wrapping_mul(b)
}

/// Affine maps x -> a*x + b composed left to right, with lets and destructuring.
#[scan_op(identity = (1.0, 0.0))]
pub fn affine_f64(l: (f64, f64), r: (f64, f64)) -> (f64, f64) {
    let (a1, b1) = l;
    let (a2, b2) = r;
    let a = a1 * a2;
    (a, a2 * b1 + b2)
}

/// Count and maximum, with an if/else and a comparison (a case split on a
/// linear comparison: proven by the checker).
#[scan_op(identity = (0, i64::MIN))]
pub fn count_max(l: (u32, i64), r: (u32, i64)) -> (u32, i64) {
    (l.0 + r.0, if l.1 > r.1 { l.1 } else { r.1 })
}

/// A 3-element array (component-wise min), with a cast and abs inside a let.
#[scan_op(identity = [f32::INFINITY; 3])]
pub fn min3(l: [f32; 3], r: [f32; 3]) -> [f32; 3] {
    [l[0].min(r[0]), l[1].min(r[1]), l[2].min(r[2])]
}

/// A user struct item (`#[repr(C)]` + `#[scan_item]`): mean/variance-free
/// "count and sum" with a mixed-size layout.
#[scan_item]
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Tally {
    pub sum: f64,
    pub count: u32,
}

// Field-wise sums of a struct item: proven by the checker.
#[scan_op(identity = Tally { sum: 0.0, count: 0 })]
pub fn count_sum(l: Tally, r: Tally) -> Tally {
    Tally { count: l.count + r.count, sum: l.sum + r.sum }
}

/// The same struct spelled `self::Tally` in the signature and the identity
/// and `Tally` in the body: one type to rustc, and now to the macro too (it
/// said "expected self::Tally, found Tally").
#[scan_op(identity = self::Tally { sum: 0.0, count: 0 })]
pub fn count_sum_by_path(l: self::Tally, r: self::Tally) -> self::Tally {
    Tally { count: l.count + r.count, sum: l.sum + r.sum }
}

/// Structs inside a tuple and an array: the identity's literals name their
/// fields, which the checker needs (it once knew them only for a struct at
/// the top of the item, and rejected these).
#[scan_op(identity = (Tally { sum: 0.0, count: 0 }, 0))]
pub fn tally_and_sum(l: (Tally, i32), r: (Tally, i32)) -> (Tally, i32) {
    (Tally { sum: l.0.sum + r.0.sum, count: l.0.count + r.0.count }, l.1 + r.1)
}

#[scan_op(identity = [Tally { sum: 0.0, count: 0 }; 2])]
pub fn two_tallies(l: [Tally; 2], r: [Tally; 2]) -> [Tally; 2] {
    [
        Tally { count: l[0].count + r[0].count, sum: l[0].sum + r[0].sum },
        Tally { sum: l[1].sum + r[1].sum, count: l[1].count + r[1].count },
    ]
}

/// The same with the opt-in: its generated laws test builds the tuple's
/// struct, every field named (it did not compile before).
#[scan_op(identity = (Tally { sum: 0.0, count: 0 }, 0), assume_associative)]
pub fn tally_and_sum_assumed(l: (Tally, i32), r: (Tally, i32)) -> (Tally, i32) {
    (Tally { sum: l.0.sum + r.0.sum, count: l.0.count + r.0.count }, l.1 + r.1)
}

/// A struct item with a bool field: a segmented sum, whose `!` on the flag
/// must be logical in CUDA (`~` on a C++ bool is never false).
#[scan_item]
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Headed {
    pub value: i64,
    pub head: bool,
}

#[scan_op(identity = Headed { value: 0, head: false })]
pub fn headed_sum(l: Headed, r: Headed) -> Headed {
    Headed { value: if !r.head { l.value + r.value } else { r.value }, head: l.head || r.head }
}

/// A generic operator: one definition, one CUDA instantiation per `T`.
#[scan_op(identity = (T::ZERO, T::ZERO))]
pub fn pair_sum<T: scan::CudaScalar>(l: (T, T), r: (T, T)) -> (T, T) {
    (l.0 + r.0, l.1 + r.1)
}

/// The linear recurrence with a fused multiply-add: `mul_add` rounds once, on
/// the CPU (`f64::mul_add`) and the GPU (`fma`) alike.
#[scan_op(identity = (1.0, 0.0))]
pub fn fused_recurrence(l: (f64, f64), r: (f64, f64)) -> (f64, f64) {
    (l.0 * r.0, r.0.mul_add(l.1, r.1))
}

/// An f32 sum accumulated in f64: casts both ways.
#[scan_op(identity = 0.0, assume_associative)]
pub fn add_in_f64(a: f32, b: f32) -> f32 {
    ((a as f64) + (b as f64)) as f32
}

/// The maximum of two `u32`s, decided through `f64` casts, `abs` and a
/// nested `if`.
#[scan_op(identity = 0)]
pub fn max_clamped(a: u32, b: u32) -> u32 {
    let fa = a as f64;
    let fb = b as f64;
    if fa.abs() > fb.abs() {
        a
    } else if fa < fb {
        b
    } else {
        a.max(b)
    }
}

/// Struct fields next to unsuffixed literals (their type is invisible to the
/// macro: the CUDA side casts the literal to `decltype` of the field).
#[scan_op(identity = Tally { sum: 0.0, count: 0 }, assume_associative)]
// The `* 1` are the point: unsuffixed literals against struct fields.
#[allow(clippy::identity_op)]
pub fn scaled_tally(l: Tally, r: Tally) -> Tally {
    Tally { sum: l.sum * 1.0 + r.sum, count: l.count + r.count * 1 }
}

/// `let` inside an `if` branch (an immediately invoked lambda in CUDA, so
/// the branch not taken is not evaluated): a segmented f64 sum whose flag is
/// a count of segment starts.
#[scan_op(identity = (0, 0.0))]
pub fn counted_segments(l: (u32, f64), r: (u32, f64)) -> (u32, f64) {
    if r.0 > 0 {
        let n = l.0 + r.0;
        (n, r.1)
    } else {
        let n = l.0;
        (n, l.1 + r.1)
    }
}

/// Least and greatest, through `let`s named in Greek: Rust takes any Unicode
/// word as a name, NVRTC only ASCII ones (the CUDA spells these in hex).
#[scan_op(identity = (i32::MAX, i32::MIN))]
pub fn extent_i32(l: (i32, i32), r: (i32, i32)) -> (i32, i32) {
    let ελάχιστο = l.0.min(r.0);
    let μέγιστο = l.1.max(r.1);
    (ελάχιστο, μέγιστο)
}

/// Three integers aligned to 16 bytes (`repr(C, align(16))`): the CUDA
/// declaration must raise the alignment too (NVRTC checks it by
/// `static_assert`), and the item is 16 bytes, not 12.
#[scan_item]
#[derive(Clone, Copy, Debug, PartialEq)]
#[repr(C, align(16))]
pub struct Triple {
    pub x: i32,
    pub y: i32,
    pub z: i32,
}

#[scan_op(identity = Triple { x: 0, y: 0, z: 0 })]
pub fn triple_sum(l: Triple, r: Triple) -> Triple {
    Triple { x: l.x + r.x, y: l.y + r.y, z: l.z + r.z }
}

/// Operators named in Greek, of one length: their C++ names spell the
/// letters' code points, so they do not both become `..._________`
/// (tests/nvrtc.rs compiles every operator together in one program).
#[scan_op(identity = 0)]
pub fn άθροισμα(a: i64, b: i64) -> i64 {
    a + b
}

#[scan_op(identity = 1)]
pub fn γινόμενο(a: i64, b: i64) -> i64 {
    a.wrapping_mul(b)
}

/// A generic operator with the opt-in: its generated laws test runs at `T = f64`.
#[scan_op(identity = T::LOWEST, assume_associative)]
pub fn max_of<T: scan::CudaScalar>(a: T, b: T) -> T {
    a.max(b)
}

/// Something done once per operator type (a generic fn cannot be passed as a
/// value, so the list below calls this for each type).
pub trait EachOp {
    fn op<Op: CudaOp>(&mut self);
}

/// Calls `f.op::<Op>()` for every operator above (each generic one at a few types).
pub fn each_op(f: &mut impl EachOp) {
    f.op::<LinearRecurrence>();
    f.op::<MaxF32>();
    f.op::<SumI32>();
    f.op::<ProductU64>();
    f.op::<AffineF64>();
    f.op::<CountMax>();
    f.op::<Min3>();
    f.op::<CountSum>();
    f.op::<CountSumByPath>();
    f.op::<HeadedSum>();
    f.op::<ExtentI32>();
    f.op::<TripleSum>();
    f.op::<Άθροισμα>();
    f.op::<Γινόμενο>();
    f.op::<PairSum<f32>>();
    f.op::<PairSum<i64>>();
    f.op::<PairSum<u32>>();
    f.op::<FusedRecurrence>();
    f.op::<AddInF64>();
    f.op::<MaxClamped>();
    f.op::<ScaledTally>();
    f.op::<CountedSegments>();
    f.op::<MaxOf<f32>>();
    f.op::<MaxOf<u64>>();
    f.op::<SumBf16>();
    f.op::<MaxAndSumF16>();
    f.op::<TallyAndSum>();
    f.op::<TwoTallies>();
    f.op::<TallyAndSumAssumed>();
}

/// Every operator above, as its CUDA source, for the NVRTC test.
pub fn cuda_sources() -> Vec<scan::CudaSource> {
    struct Sources(Vec<scan::CudaSource>);
    impl EachOp for Sources {
        fn op<Op: CudaOp>(&mut self) {
            self.0.push(Op::cuda_source());
        }
    }
    let mut v = Sources(Vec::new());
    each_op(&mut v);
    v.0
}
