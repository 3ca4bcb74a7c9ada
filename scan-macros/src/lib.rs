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
/// # Checking
/// The laws (associativity, two-sided identity) are checked at compile time
/// over the reals; bodies outside the symbolic fragment (division, `exp`/`ln`,
/// branches, struct fields) need `#[scan_op(identity = ..., assume_associative)]`,
/// which also generates a property test.
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
