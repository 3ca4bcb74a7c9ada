//! `#[scan_op]`: turns an associative Rust fn into a scan operator (a monoid,
//! `scan_core::ScanOp`) with generated CUDA source (`scan_core::CudaOp`), and
//! `#[scan_item]`, which gives a `#[repr(C)]` struct its CUDA declaration.
//!
//! The steps live in modules named for them: `attr` (the arguments), `ast`
//! (the fn), `lower` (body -> `ir`), `valid` (signature, identity, laws via
//! `check`), `expand` (Rust items), `rust` and `cuda` (the two printers of the
//! IR). See the `scan` crate's docs for the supported subset.

mod ast;
mod attr;
mod check;
mod cuda;
mod expand;
// The IR is shared with the checker, which reads parts the printers do not.
#[allow(dead_code)]
mod ir;
mod item;
mod lower;
mod rust;
mod valid;

use proc_macro::TokenStream;

/// Turns an associative fn into a scan operator.
///
/// ```
/// use scan_core::{reference, CudaOp, ScanOp, ScanSpec};
/// use scan_macros::scan_op;
///
/// /// h_t = a_t * h_{t-1} + b_t, as a monoid on (a, b) pairs.
/// #[scan_op(identity = (1.0, 0.0))]
/// fn linear_recurrence(l: (f32, f32), r: (f32, f32)) -> (f32, f32) {
///     (l.0 * r.0, r.0 * l.1 + r.1)
/// }
///
/// // The fn is kept; `LinearRecurrence` is the operator.
/// let h = reference::scan::<LinearRecurrence>(&[(0.5, 1.0), (0.5, 1.0)], ScanSpec::inclusive());
/// assert_eq!(h[1].1, 1.5);
/// // Its CUDA C++ (see `scan_core::CudaSource` for the shape):
/// let cuda = LinearRecurrence::cuda_source();
/// assert!(cuda.code.contains("static __device__ __forceinline__ Item combine(Item l, Item r)"));
/// ```
///
/// # What it generates
/// `#[scan_op(identity = EXPR)]` on `fn name(l: T, r: T) -> T` keeps the fn
/// and adds `struct Name` (CamelCase, the fn's visibility and docs)
/// implementing `scan_core::ScanOp` (`Item = T`, `identity()` is `EXPR`) and
/// `scan_core::CudaOp`. A generic fn (`fn add<T: scan::CudaScalar>(a: T, b: T)
/// -> T`) gives a generic `struct Add<T>`, with one CUDA struct per `T`
/// (`typedef float T;` inside). Type parameters must be `CudaScalar`s; their
/// consts `T::ZERO`, `T::ONE`, `T::LOWEST` (`-inf` / `MIN`) and `T::HIGHEST`
/// serve as identities.
///
/// `ScanOp::combine` runs a translation of the body, the same tree the CUDA
/// source is printed from: integer `+ - *` and negation **wrap** in every build
/// profile (as on the GPU; the kept fn itself still panics on overflow in debug
/// builds), `max`/`min` ignore a NaN operand like `f32::max` (CUDA `fmaxf`).
/// Float `+ - * /` use CUDA's `_rn` intrinsics, so NVRTC never fuses them into
/// an FMA the CPU does not do; float-to-integer casts saturate like `as`.
///
/// # Items
/// `i32 u32 i64 u64 f32 f64 bool`, a type parameter, tuples (up to 6) and
/// arrays `[T; N]` of them, and `#[repr(C)]` structs annotated with
/// [`macro@scan_item`]. The CUDA declaration of a tuple is computed from the
/// Rust layout at run time (fields in offset order, explicit padding,
/// `static_assert` on size and alignment).
///
/// # The body: a small subset of Rust
/// `let` bindings (names, or tuple patterns), arithmetic `+ - * / %`,
/// comparisons, `& | ^ !`, `&& ||`, `if`/`else` (both branches), tuple, array
/// (`[x; N]` too) and struct construction, `.0`/`.field`/`[k]` with a constant
/// `k`, literals, the consts `MIN MAX` of the integers and `INFINITY
/// NEG_INFINITY MIN MAX EPSILON MIN_POSITIVE NAN` of the floats, `as` casts
/// between scalars, and the methods `max min` (numbers), `abs exp ln ln_1p
/// exp_m1 sqrt mul_add` (f32/f64) and `wrapping_add wrapping_sub wrapping_mul`.
/// Anything else (loops, references, closures, macros, calls, `match`,
/// `return`, assignment, shifts, user consts, other methods) is a compile error
/// at that token listing what is supported.
///
/// # Checking: what `#[scan_op]` proves
/// Both monoid laws, `combine(combine(a, b), c) == combine(a, combine(b, c))`
/// and `combine(e, a) == a == combine(a, e)`, are checked at compile time,
/// **over the reals** (integers: over the unbounded integers). Floating-point
/// rounding and integer wrap-around are not violations: float `+` is accepted
/// although `(a + b) + c` and `a + (b + c)` round differently.
///
/// **Proven symbolically, no opt-in.** Both sides are evaluated on symbolic
/// operands, one variable per scalar component (`a.0`, `b[2]`, `c.sum`), into
/// normal forms that are compared component by component:
/// * `+ - *`, negation, `mul_add`, division by a constant: polynomials with
///   exact rational coefficients (integer arithmetic as a ring);
/// * `max`, `min`, `abs`: max-of-min forms with `+` distributing over them
///   (max-plus), with `±inf` (`max(-inf, a) = a`; integer `MIN`/`MAX` act as
///   `∓inf`, unsigned `MAX` as all ones under `& | ^`);
/// * `& | ^ !` on integers and booleans: the Boolean-ring normal form;
/// * `if`/`else` on flag tests (`r.0 != 0`, a `bool`, `&&`, `||`) and linear
///   comparisons (`l.1 > r.1`): each consistent case on its own;
/// * `let`, tuples, arrays, structs, casts that keep the value.
///
/// Equal forms: accepted (the built-ins, the linear recurrence, 2x2 matrix
/// products, the flag-segmented sum, the max-plus best prefix, ...). Different
/// forms: a search over small exact inputs (all 0/1 combinations first) finds
/// a counterexample, and the error shows both forms and it:
///
/// ```text
/// error: `sub` is not associative: (a ∘ b) ∘ c = a - b - c, but a ∘ (b ∘ c) = a - b + c
///        e.g. a = 0, b = 0, c = 1 gives -1 vs 1
/// ```
///
/// ```compile_fail
/// use scan_macros::scan_op;
/// #[scan_op(identity = 0.0)]
/// fn sub(a: f32, b: f32) -> f32 { a - b }
/// ```
///
/// **Sampled.** Bodies outside that fragment (division by a variable, `%`,
/// `exp`, `ln`, `sqrt`, float-to-integer casts, non-linear comparisons), and
/// the rare forms the checker cannot show equal, are evaluated in `f64` on a
/// few thousand deterministic inputs: every 0/1 combination, then {0, 1, -1,
/// 2}, then a mix of small integers, fractions, negatives and magnitudes from
/// 1e-6 to 1e8 (moderate ones only for `exp`/`ln` bodies), with a relative
/// tolerance of 1e-9 (1e-6 with `exp`/`ln`). A difference is rechecked in exact
/// arithmetic when the body allows it, so rounding is never reported. A
/// violation is an error with its counterexample, opt-in or not. No violation
/// is not a proof: the error asks for `assume_associative` and says what put
/// the body outside the fragment.
///
/// **`assume_associative`** is the author's statement that both laws hold over
/// the reals. The operator is accepted if sampling found no violation, and a
/// `#[cfg(test)] #[test] fn __scan_op_laws_of_<name>` is generated in the
/// user's crate: both laws on 1000 random inputs through `ScanOp` (f32 within
/// a relative 1e-3, f64 within 1e-9, integers exactly; inputs giving NaN are
/// skipped but most must give a value). A generic operator has no concrete
/// type to test and gets none.
///
/// ```
/// use scan_core::{reference, ScanSpec};
/// use scan_macros::scan_op;
///
/// /// ln(e^a + e^b): associative over the reals, but `exp`/`ln` are sampled, not proven.
/// #[scan_op(identity = f64::NEG_INFINITY, assume_associative)]
/// fn log_add_exp(a: f64, b: f64) -> f64 {
///     (a.exp() + b.exp()).ln()
/// }
///
/// let out = reference::scan::<LogAddExp>(&[0.0, 0.0], ScanSpec::inclusive());
/// assert!((out[1] - 2f64.ln()).abs() < 1e-12);
/// ```
///
/// The check costs well under a millisecond per built-in operator.
///
/// # Gaps
/// Integer `/` and `%` by zero panic on the CPU and are undefined on the GPU;
/// unsuffixed float literals in a `let` need a type (`let k: f32 = 2.0;`).
#[proc_macro_attribute]
pub fn scan_op(args: TokenStream, item: TokenStream) -> TokenStream {
    expand::scan_op(args.into(), item.into()).into()
}

/// Implements `scan_core::CudaType` for a `#[repr(C)]` struct with named
/// fields, so that it can be the item of a `#[scan_op]` operator: its CUDA
/// declaration has the Rust field offsets, size and alignment (checked by
/// `static_assert`).
///
/// ```
/// use scan_core::{CudaOp, ScanOp};
/// use scan_macros::{scan_item, scan_op};
///
/// #[scan_item]
/// #[repr(C)]
/// #[derive(Clone, Copy, Debug, PartialEq)]
/// pub struct Stats { pub sum: f64, pub count: u32 }
///
/// // Field types are invisible to the macro: the checker samples the body.
/// #[scan_op(identity = Stats { sum: 0.0, count: 0 }, assume_associative)]
/// fn merge(l: Stats, r: Stats) -> Stats {
///     Stats { sum: l.sum + r.sum, count: l.count + r.count }
/// }
///
/// assert_eq!(Merge::combine(Stats { sum: 1.5, count: 1 }, Stats { sum: 2.0, count: 2 }), Stats { sum: 3.5, count: 3 });
/// assert!(Merge::cuda_source().code.contains("static_assert(sizeof(Stats) == 16"));
/// ```
#[proc_macro_attribute]
pub fn scan_item(args: TokenStream, item: TokenStream) -> TokenStream {
    item::scan_item(args.into(), item.into()).into()
}
