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

    /// Whether `combine` multiplies or divides `f32`, `bf16` or `f16`
    /// values: a hint, never a question of correctness. A long run of such
    /// products folded from the identity (factors in (0.5, 1): a cumulative
    /// product, the linear recurrence's decays) underflows and sticks on
    /// subnormals, which x86 cores multiply some twenty times slower; the
    /// CPU's tiled scan then reduces each chunk first and scans it from its
    /// prefix, where nothing sticks. `#[scan_op]` answers from the body (for
    /// a `T: CudaScalar`, from the type it is instantiated with; for a
    /// struct field, from its declared type), counting only products whose
    /// value can reach the result: not one inside a condition or a
    /// comparison, cast to an integer, or of literals alone. The default is
    /// `false`.
    ///
    /// ```
    /// use scan_core::{ops::{Add, LinearRecurrence, Mul}, ScanOp};
    ///
    /// assert!(LinearRecurrence::<f32>::multiplies_narrow_floats());
    /// assert!(!Mul::<f64>::multiplies_narrow_floats() && !Add::<f32>::multiplies_narrow_floats());
    /// ```
    fn multiplies_narrow_floats() -> bool {
        false
    }
}

/// Whether `T` is `f32`, `bf16` or `f16`: for the `multiplies_narrow_floats`
/// that `#[scan_op]` generates (through `__private`).
#[doc(hidden)]
pub fn is_narrow_float<T: 'static>() -> bool {
    use core::any::TypeId;
    let t = TypeId::of::<T>();
    t == TypeId::of::<f32>() || t == TypeId::of::<half::bf16>() || t == TypeId::of::<half::f16>()
}

/// [`is_narrow_float`] of the type a projection returns: the macro names a
/// struct field's type, which it never sees, as `|l: Struct| l.field`.
#[doc(hidden)]
pub fn is_narrow_float_field<S, T: 'static>(_field: fn(S) -> T) -> bool {
    is_narrow_float::<T>()
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
