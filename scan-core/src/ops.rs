//! Built-in operators, declared with `#[scan_op]` like any user operator.
//!
//! Each fn below is the operator's definition; `#[scan_op]` keeps it and adds
//! the type of the same name in CamelCase (`add` -> [`Add<T>`]) implementing
//! [`ScanOp`](crate::ScanOp) and [`CudaOp`](crate::CudaOp). Integer arithmetic
//! wraps (in every build profile, as on the GPU); float `Max`/`Min` ignore NaN
//! like `f32::max`/`f32::min` (and CUDA's `fmaxf`/`fminf`), with `-inf`/`+inf`
//! identities.
//!
//! ```
//! use scan_core::{ops::{Add, LinearRecurrence}, reference, CudaOp, ScanSpec};
//!
//! assert_eq!(reference::scan::<Add<u32>>(&[1, 2, 3], ScanSpec::inclusive()), [1, 3, 6]);
//! // h_t = a_t h_{t-1} + b_t with h_{-1} = 0: h = 1, 2*1+1 = 3, 3*3+0 = 9.
//! let h = reference::scan::<LinearRecurrence<f64>>(&[(1.0, 1.0), (2.0, 1.0), (3.0, 0.0)], ScanSpec::inclusive());
//! assert_eq!(h.iter().map(|p| p.1).collect::<Vec<_>>(), [1.0, 3.0, 9.0]);
//! // The CUDA struct is named after the Rust path and the type argument.
//! assert_eq!(LinearRecurrence::<f32>::cuda_source().name, "scan_core_ops_LinearRecurrence_float");
//! ```

use core::ops::{BitAnd, BitOr, BitXor, Not};

use scan_macros::scan_op;

use crate::{CudaFloat, CudaScalar};

pub use crate::segmented::{Seg, Segmented};

/// Addition: `a + b` (wrapping for integers), identity 0.
#[scan_op(identity = T::ZERO)]
pub fn add<T: CudaScalar>(a: T, b: T) -> T {
    a + b
}

/// Multiplication: `a * b` (wrapping for integers), identity 1.
#[scan_op(identity = T::ONE)]
pub fn mul<T: CudaScalar>(a: T, b: T) -> T {
    a * b
}

/// Maximum, identity the lowest value (`-inf` for floats); a NaN operand is ignored.
#[scan_op(identity = T::LOWEST)]
pub fn max<T: CudaScalar>(a: T, b: T) -> T {
    a.max(b)
}

/// Minimum, identity the highest value (`+inf` for floats); a NaN operand is ignored.
#[scan_op(identity = T::HIGHEST)]
pub fn min<T: CudaScalar>(a: T, b: T) -> T {
    a.min(b)
}

/// Bitwise and of integers, identity all ones.
#[scan_op(identity = !T::ZERO)]
pub fn and<T: CudaScalar + BitAnd<Output = T> + Not<Output = T>>(a: T, b: T) -> T {
    a & b
}

/// Bitwise or of integers, identity 0.
#[scan_op(identity = T::ZERO)]
pub fn or<T: CudaScalar + BitOr<Output = T>>(a: T, b: T) -> T {
    a | b
}

/// Bitwise exclusive or of integers, identity 0.
#[scan_op(identity = T::ZERO)]
pub fn xor<T: CudaScalar + BitXor<Output = T>>(a: T, b: T) -> T {
    a ^ b
}

/// The first-order linear recurrence `h_t = a_t * h_{t-1} + b_t` as a monoid
/// on `(a, b)` pairs: `(l.0 * r.0, r.0 * l.1 + r.1)`, identity `(1, 0)`.
/// An inclusive scan leaves `h_t` (from `h_{-1} = 0`) in the second component.
/// Not commutative.
#[scan_op(identity = (T::ONE, T::ZERO))]
pub fn linear_recurrence<T: CudaFloat>(l: (T, T), r: (T, T)) -> (T, T) {
    (l.0 * r.0, r.0 * l.1 + r.1)
}

/// The 2x2 matrix product `l · r` on row-major `[m00, m01, m10, m11]`
/// (wrapping for integers), identity the unit matrix. Not commutative.
#[scan_op(identity = [T::ONE, T::ZERO, T::ZERO, T::ONE])]
pub fn mat_mul_2x2<T: CudaScalar>(l: [T; 4], r: [T; 4]) -> [T; 4] {
    [l[0] * r[0] + l[1] * r[2], l[0] * r[1] + l[1] * r[3], l[2] * r[0] + l[3] * r[2], l[2] * r[1] + l[3] * r[3]]
}

/// Segmented sum on `(starts_segment, value)` pairs: the sum restarts at every
/// element whose flag is set. Identity `(false, 0)`. Not commutative.
/// (The checker proves both laws: it splits cases on the flags.)
#[scan_op(identity = (false, T::ZERO))]
pub fn segmented_add<T: CudaScalar>(l: (bool, T), r: (bool, T)) -> (bool, T) {
    (l.0 | r.0, if r.0 { r.1 } else { l.1 + r.1 })
}

/// The best prefix sum in max-plus form, on `(sum, best)` pairs: an element
/// `x` enters as `(x, x)`; an inclusive scan leaves in `.1` the largest prefix
/// sum seen so far. Identity `(0, -inf)`. Not commutative.
#[scan_op(identity = (T::ZERO, T::LOWEST))]
pub fn best_prefix<T: CudaFloat>(l: (T, T), r: (T, T)) -> (T, T) {
    (l.0 + r.0, l.1.max(l.0 + r.1))
}
