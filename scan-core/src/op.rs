//! The monoid contract.

/// An associative `combine` with a two-sided `identity`: a monoid.
///
/// `combine(left, right)`: `left` is the earlier element. Scans never reorder
/// operands, so non-commutative operators (the linear recurrence, matrix
/// products) are first-class. Implementations must satisfy, over the reals,
///
/// * `combine(combine(a, b), c) == combine(a, combine(b, c))`
/// * `combine(identity(), a) == a == combine(a, identity())`
///
/// Write operators with `#[scan_op]`, which checks both laws at compile time;
/// a hand-written impl is trusted.
///
/// ```
/// use scan_core::{reference, ScanOp, ScanSpec};
///
/// /// Keeps the later of two non-empty values: associative, not commutative.
/// struct Last;
/// impl ScanOp for Last {
///     type Item = Option<u32>;
///     fn identity() -> Option<u32> { None }
///     fn combine(l: Option<u32>, r: Option<u32>) -> Option<u32> { r.or(l) }
/// }
///
/// let out = reference::scan::<Last>(&[Some(1), None, Some(3)], ScanSpec::inclusive());
/// assert_eq!(out, [Some(1), Some(1), Some(3)]);
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a scan operator",
    label = "not a scan operator",
    note = "annotate an associative fn with #[scan_op(identity = ...)]; it generates the operator type"
)]
pub trait ScanOp: 'static {
    /// The element type the operator combines.
    type Item: Copy + Send + Sync + 'static;
    /// The two-sided identity: `combine(identity(), x) == x == combine(x, identity())`.
    fn identity() -> Self::Item;
    /// Combines an earlier element (`left`) with a later one (`right`).
    fn combine(left: Self::Item, right: Self::Item) -> Self::Item;

    /// The operator's [`CudaOp::cuda_source`] when it has one, so that an
    /// executor that may run on either side (the facade's `Device`) can take
    /// any `ScanOp` and say clearly when the GPU cannot run it. `#[scan_op]`
    /// operators return `Some`; the default is `None`. A hand-written
    /// [`CudaOp`] should return `Some(Self::cuda_source())`.
    fn cuda_source_if_any() -> Option<CudaSource> {
        None
    }
}

/// The same operator as CUDA C++, implemented by `#[scan_op]` beside [`ScanOp`].
///
/// A generic operator's source depends on its type parameters, so this is a
/// function, not a constant.
#[diagnostic::on_unimplemented(
    message = "`{Self}` has no CUDA source",
    label = "not a CUDA scan operator",
    note = "annotate an associative fn with #[scan_op(identity = ...)]; it generates the CUDA source too"
)]
pub trait CudaOp: ScanOp {
    /// The operator's CUDA declaration; see [`CudaSource`].
    fn cuda_source() -> CudaSource;
}

/// CUDA C++ for one operator.
///
/// `code` declares a struct named `name` with a nested `Item` type and two
/// static device functions, which kernel templates use as `template <class Op>`:
///
/// ```cuda
/// struct Name {
///   typedef ... Item;                       // layout-identical to the Rust item
///   static __device__ __forceinline__ Item identity();
///   static __device__ __forceinline__ Item combine(Item l, Item r);
/// };
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CudaSource {
    /// The C++ name of the operator struct (unique per instantiation).
    pub name: String,
    /// The declarations: helper structs first, then the operator struct.
    pub code: String,
}
