//! Fused input and output maps: a scan that reads its items from one or more
//! input arrays through a *lift* and writes its results through a
//! *project*, so that nothing in between is stored.
//!
//! The linear recurrence `h_t = a_t h_{t-1} + b_t` as a plain scan reads and
//! writes (a, b) pairs: 16 bytes per item each way for f32. Fused, it reads
//! `a` and `b` from their own arrays and writes only `h`: 12 bytes per item
//! in all ([`Recurrence`]). The same hook chooses the accumulation type:
//! [`Widen`] reads bf16 or f16 items, scans them in f32 and writes f32, and
//! [`WidenNarrow`] writes the input's type again, so a long sum of bf16
//! values does not stall where a bf16 accumulator would (at 256 for a sum of
//! ones).
//!
//! ```
//! use scan_core::maps::{reference, Recurrence};
//! use scan_core::{ops::LinearRecurrence, ScanSpec};
//! let (a, b) = ([0.5f32, 0.5, 0.5], [1.0f32, 1.0, 1.0]);
//! let h = reference::<LinearRecurrence<f32>, Recurrence, _>((&a[..], &b[..]), ScanSpec::inclusive()).unwrap();
//! assert_eq!(h, [1.0, 1.5, 1.75]);
//! ```
//!
//! Backends run the maps inside their scans (`scan_cpu::Cpu::scan_mapped`,
//! and on the GPU `scan_cuda::Cuda::scan_mapped` for maps that are also
//! [`CudaMaps`]); [`reference()`] is the sequential definition they are
//! tested against.

use std::marker::PhantomData;

pub use half::{bf16, f16};

use crate::{CudaOp, CudaSource, CudaType, Error, Result, ScanOp, ScanSpec};

/// The arrays a mapped scan reads, item `i` of each together: one slice, or
/// a tuple of two or three slices of one length.
pub trait Inputs: Sync {
    /// What one position of the inputs holds.
    type Item: Copy;
    /// The common length of the arrays, or [`Error::WrongShape`] naming the
    /// first array (`inputs.1`, `inputs.2`) whose length differs from the
    /// first one's.
    fn checked_len(&self) -> Result<usize>;
    /// Item `i` (below [`Inputs::checked_len`]).
    fn get(&self, i: usize) -> Self::Item;
}

impl<T: Copy + Sync> Inputs for &[T] {
    type Item = T;
    fn checked_len(&self) -> Result<usize> {
        Ok(<[T]>::len(self))
    }
    fn get(&self, i: usize) -> T {
        self[i]
    }
}

impl<A: Copy + Sync, B: Copy + Sync> Inputs for (&[A], &[B]) {
    type Item = (A, B);
    fn checked_len(&self) -> Result<usize> {
        Error::check_one_per("inputs.1", self.1.len(), "inputs.0", self.0.len())?;
        Ok(self.0.len())
    }
    fn get(&self, i: usize) -> (A, B) {
        (self.0[i], self.1[i])
    }
}

impl<A: Copy + Sync, B: Copy + Sync, C: Copy + Sync> Inputs for (&[A], &[B], &[C]) {
    type Item = (A, B, C);
    fn checked_len(&self) -> Result<usize> {
        Error::check_one_per("inputs.1", self.1.len(), "inputs.0", self.0.len())?;
        Error::check_one_per("inputs.2", self.2.len(), "inputs.0", self.0.len())?;
        Ok(self.0.len())
    }
    fn get(&self, i: usize) -> (A, B, C) {
        (self.0[i], self.1[i], self.2[i])
    }
}

/// How a scan of `Op` reads and writes: `lift` turns each input position
/// into an item, `project` turns each scanned item into an output.
///
/// Items are scanned exactly as in the unfused scan: for every `spec`, the
/// mapped scan's output is `project` of the plain scan of the lifted items.
pub trait Maps<Op: ScanOp> {
    /// What the lift reads at one position (a tuple for several arrays).
    type Input: Copy;
    /// What the project writes at one position.
    type Output: Copy + Send + Sync;
    /// An input position to an item.
    fn lift(x: Self::Input) -> Op::Item;
    /// A scanned item to an output.
    fn project(x: Op::Item) -> Self::Output;
}

/// [`Maps`] with CUDA source, so that the GPU's single-pass kernel runs them
/// inside the scan: each position's item lifted from the input arrays as it
/// is loaded, each result projected as it is stored.
///
/// [`CudaMaps::cuda_source`] declares a struct named `name`, which the kernel
/// templates use as `template <class M>`:
///
/// ```cuda
/// struct Name {
///   typedef ... Input;   // Maps::Input: a scalar, or a tuple with `make(...)`
///   typedef ... Item;    // the operator's item
///   typedef ... Output;  // Maps::Output
///   static __device__ __forceinline__ Item lift(Input x);
///   static __device__ __forceinline__ Output project(Item x);
/// };
/// ```
///
/// Both functions must compute exactly what [`Maps::lift`] and
/// [`Maps::project`] do (the GPU tests compare with [`reference()`]).
pub trait CudaMaps<Op: CudaOp>: Maps<Op, Input: CudaType, Output: CudaType> + 'static {
    /// The maps' CUDA declaration, after the operator's (which declares the
    /// item type): see the trait's docs.
    fn cuda_source() -> CudaSource;
}

/// The struct of [`CudaMaps::cuda_source`] from the bodies of `lift` (its
/// parameter is `x`) and `project` (likewise `x`): the declarations of the
/// input and output types, then the struct, under an include guard. The
/// operator's declaration must come first: `Item` is the operator's.
pub fn cuda_maps_source<Op: CudaOp, M: CudaMaps<Op>>(base: &str, lift: &str, project: &str) -> CudaSource {
    let op = Op::cuda_source().name;
    let name = crate::__private::op_name(
        base,
        &[<M::Input as CudaType>::c_name(), op.clone(), <M::Output as CudaType>::c_name()],
    );
    let mut code = String::new();
    <M::Input as CudaType>::c_decls(&mut code);
    <M::Output as CudaType>::c_decls(&mut code);
    code.push_str(&format!(
        "#ifndef SCAN_MAPS_{name}\n#define SCAN_MAPS_{name}\nstruct {name} {{\n\
         \x20 typedef {} Input;\n  typedef {op}::Item Item;\n  typedef {} Output;\n\
         \x20 static __device__ __forceinline__ Item lift(Input x) {{ {lift} }}\n\
         \x20 static __device__ __forceinline__ Output project(Item x) {{ {project} }}\n}};\n#endif\n",
        <M::Input as CudaType>::c_name(),
        <M::Output as CudaType>::c_name(),
    ));
    CudaSource { name, code }
}

/// The linear recurrence from `a` and `b` arrays to `h` alone:
/// `h_t = a_t h_{t-1} + b_t` (for [`LinearRecurrence`](crate::ops::LinearRecurrence)).
#[derive(Clone, Copy, Debug, Default)]
pub struct Recurrence;

impl Maps<crate::ops::LinearRecurrence<f32>> for Recurrence {
    type Input = (f32, f32);
    type Output = f32;
    fn lift(x: (f32, f32)) -> (f32, f32) {
        x
    }
    fn project(x: (f32, f32)) -> f32 {
        x.1
    }
}

impl Maps<crate::ops::LinearRecurrence<f64>> for Recurrence {
    type Input = (f64, f64);
    type Output = f64;
    fn lift(x: (f64, f64)) -> (f64, f64) {
        x
    }
    fn project(x: (f64, f64)) -> f64 {
        x.1
    }
}

impl CudaMaps<crate::ops::LinearRecurrence<f32>> for Recurrence {
    fn cuda_source() -> CudaSource {
        // Input and Item are both the (a, b) tuple: h is its field 1.
        cuda_maps_source::<crate::ops::LinearRecurrence<f32>, Self>("scan_maps_recurrence", "return x;", "return x.f1;")
    }
}

impl CudaMaps<crate::ops::LinearRecurrence<f64>> for Recurrence {
    fn cuda_source() -> CudaSource {
        cuda_maps_source::<crate::ops::LinearRecurrence<f64>, Self>("scan_maps_recurrence", "return x;", "return x.f1;")
    }
}

/// A half-precision type that converts to and from `f32` exactly (every
/// bf16 and f16 value is an f32; rounding back is round-to-nearest-even).
pub trait Half: Copy + Send + Sync + 'static {
    /// The exact f32 value.
    fn widen(self) -> f32;
    /// The nearest value (ties to even).
    fn narrow(x: f32) -> Self;
}

impl Half for bf16 {
    fn widen(self) -> f32 {
        self.to_f32()
    }
    fn narrow(x: f32) -> Self {
        bf16::from_f32(x)
    }
}

impl Half for f16 {
    fn widen(self) -> f32 {
        self.to_f32()
    }
    fn narrow(x: f32) -> Self {
        f16::from_f32(x)
    }
}

/// Reads `H` (bf16 or f16), scans in f32, writes f32: for any operator on
/// f32 items (`Add<f32>`, `Max<f32>`, a `#[scan_op]` on f32, ...).
#[derive(Clone, Copy, Debug, Default)]
pub struct Widen<H>(PhantomData<H>);

impl<H: Half, Op: ScanOp<Item = f32>> Maps<Op> for Widen<H> {
    type Input = H;
    type Output = f32;
    fn lift(x: H) -> f32 {
        x.widen()
    }
    fn project(x: f32) -> f32 {
        x
    }
}

impl<H: Half + CudaType, Op: CudaOp<Item = f32>> CudaMaps<Op> for Widen<H> {
    fn cuda_source() -> CudaSource {
        // scan_widen: the prelude's exact conversion (cuda_type.rs).
        cuda_maps_source::<Op, Self>("scan_maps_widen", "return scan_widen(x);", "return x;")
    }
}

/// Reads `H`, scans in f32, writes `H` (each result rounded once, at the
/// end, instead of at every step).
#[derive(Clone, Copy, Debug, Default)]
pub struct WidenNarrow<H>(PhantomData<H>);

impl<H: Half, Op: ScanOp<Item = f32>> Maps<Op> for WidenNarrow<H> {
    type Input = H;
    type Output = H;
    fn lift(x: H) -> f32 {
        x.widen()
    }
    fn project(x: f32) -> H {
        H::narrow(x)
    }
}

impl<H: Half + CudaType, Op: CudaOp<Item = f32>> CudaMaps<Op> for WidenNarrow<H> {
    fn cuda_source() -> CudaSource {
        // scan_narrow(v, H()) rounds to nearest, ties to even, as `half` does.
        cuda_maps_source::<Op, Self>(
            "scan_maps_widen_narrow",
            "return scan_widen(x);",
            "return scan_narrow(x, Output());",
        )
    }
}

/// The sequential definition of a mapped scan: lift every input position,
/// scan as `spec` says ([`crate::reference::scan`]), project every item.
/// [`Error::WrongShape`] when the input arrays differ in length.
pub fn reference<Op: ScanOp, M: Maps<Op>, I: Inputs<Item = M::Input>>(
    inputs: I,
    spec: ScanSpec,
) -> Result<Vec<M::Output>> {
    let n = inputs.checked_len()?;
    let lifted: Vec<Op::Item> = (0..n).map(|i| M::lift(inputs.get(i))).collect();
    Ok(crate::reference::scan::<Op>(&lifted, spec).into_iter().map(M::project).collect())
}

/// [`reference()`] of each row of a row-major `[rows, len / rows]` layout of
/// the inputs, each row on its own (the outputs in the same layout).
/// [`Error::WrongShape`] when the input arrays differ in length,
/// [`Error::BadShape`] when `rows` is 0 or does not divide the length.
///
/// ```
/// use scan_core::maps::{reference_rows, Recurrence};
/// use scan_core::{ops::LinearRecurrence, ScanSpec};
/// let (a, b) = ([0.5f32; 4], [1.0f32; 4]);
/// let h = reference_rows::<LinearRecurrence<f32>, Recurrence, _>((&a[..], &b[..]), 2, ScanSpec::inclusive())?;
/// assert_eq!(h, [1.0, 1.5, 1.0, 1.5]);
/// # Ok::<(), scan_core::Error>(())
/// ```
pub fn reference_rows<Op: ScanOp, M: Maps<Op>, I: Inputs<Item = M::Input>>(
    inputs: I,
    rows: usize,
    spec: ScanSpec,
) -> Result<Vec<M::Output>> {
    let n = inputs.checked_len()?;
    let row_len = crate::reference::row_len(n, rows)?;
    let lifted: Vec<Op::Item> = (0..n).map(|i| M::lift(inputs.get(i))).collect();
    // (Empty rows: no items, no chunks; `max(1)` only keeps `chunks` legal.)
    Ok(lifted.chunks(row_len.max(1)).flat_map(|row| crate::reference::scan::<Op>(row, spec)).map(M::project).collect())
}
