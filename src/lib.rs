//! `scan`: parallel scans (prefix sums) over any associative operator, on the
//! CPU and on NVIDIA GPUs.
//!
//! # A first scan
//!
//! A scan combines every prefix of a sequence: the inclusive scan of
//! `[1, 2, 3]` under addition is `[1, 3, 6]`, the exclusive one `[0, 1, 3]`.
//! An executor runs it: [`Cpu`] (threads), [`Cuda`] (a GPU), or [`Device`],
//! which takes the GPU when CUDA works and the CPU otherwise.
//!
//! ```
//! use scan::{ops::Add, Cpu, ScanSpec};
//! # fn main() -> scan::Result<()> {
//! let cpu = Cpu::new();
//! assert_eq!(cpu.scan::<Add<u32>>(&[1, 2, 3], ScanSpec::inclusive())?, [1, 3, 6]);
//! assert_eq!(cpu.scan::<Add<u32>>(&[1, 2, 3], ScanSpec::exclusive().reversed())?, [5, 3, 0]);
//! # Ok(()) }
//! ```
//!
//! Every executor has the same calls (`scan`, `scan_into`, `scan_in_place`,
//! `scan_rows`, `scan_rows_in_place`), gathered in the [`Scan`] trait for
//! code that takes any executor. The built-in operators are in [`ops`]
//! (add, mul, max, min, and/or/xor, the linear recurrence, the 2x2 matrix
//! product).
//!
//! # Writing an operator
//!
//! A plain fn of two operands under [`macro@scan_op`], with its identity, becomes
//! an operator type named in CamelCase, for the CPU ([`ScanOp`]) and, as
//! generated CUDA C++, for the GPU ([`CudaOp`]):
//!
//! ```
//! use scan::{scan_op, Cpu, ScanSpec};
//!
//! /// h_t = a_t * h_{t-1} + b_t, as a monoid on (a, b) pairs.
//! #[scan_op(identity = (1.0, 0.0))]
//! fn linear_recurrence(l: (f32, f32), r: (f32, f32)) -> (f32, f32) {
//!     (l.0 * r.0, r.0 * l.1 + r.1)
//! }
//!
//! # fn main() -> scan::Result<()> {
//! let h = Cpu::new().scan::<LinearRecurrence>(&[(0.5, 1.0); 3], ScanSpec::inclusive())?;
//! assert_eq!(h[2].1, 1.75);
//! # Ok(()) }
//! ```
//!
//! Items are scalars (`i32 u32 i64 u64 f32 f64 bool bf16 f16`), tuples, arrays and
//! `#[repr(C)]` structs declared with [`macro@scan_item`]; the body is a small
//! subset of Rust that has the same meaning on the CPU and the GPU.
//!
//! # What the checker proves
//!
//! A scan regroups `combine` calls, so an operator that is not associative
//! gives silently wrong results. `#[scan_op]` checks at compile time that
//! `(a ∘ b) ∘ c == a ∘ (b ∘ c)` and `e ∘ a == a == a ∘ e` over the reals (the
//! unbounded integers for integer types): a proof for sums, products,
//! max/min, bitwise operators, the linear recurrence, matrix products and
//! flag-segmented sums; a compile error with a counterexample for an operator
//! that breaks a law (`a - b`, a wrong identity); and, for bodies outside what
//! it can decide, an error asking for `assume_associative`, which generates a
//! randomized test of both laws instead. Rounding is not a violation: `f32`
//! addition is accepted.
//!
//! # The GPU
//!
//! [`Cuda`] compiles each operator once, at run time, with NVRTC, and scans in
//! one pass (a decoupled look-back) or with Blelloch's multi-block algorithm.
//! Data can stay on the device ([`DeviceBuffer`], `Cuda::scan_device`), or go
//! through host slices. Without a driver, a GPU or libnvrtc, `Cuda::new()`
//! returns an error saying which; [`Device::auto()`] then runs on the CPU.
//!
//! ```no_run
//! use scan::{ops::Add, Cuda, ScanSpec};
//! # fn main() -> scan::Result<()> {
//! let cuda = Cuda::new()?;
//! let mut x = cuda.upload(&vec![1.0f32; 1 << 20])?;
//! cuda.scan_device::<Add<f32>>(&mut x, ScanSpec::inclusive())?;
//! assert_eq!(x.download()?[1023], 1024.0);
//! # Ok(()) }
//! ```
//!
//! # Rows and segments
//!
//! `scan_rows` scans each row of a row-major `[rows, len / rows]` buffer on
//! its own; `scan_segments` each segment of a ragged batch (by its starts or
//! CSR offsets), `scan_flagged` each run that a head flag starts. The same
//! calls on every executor:
//!
//! ```
//! use scan::{ops::Add, Device, ScanSpec};
//! # fn main() -> scan::Result<()> {
//! let mut out = [0; 6];
//! Device::cpu().scan_rows::<Add<i32>>(&[1, 2, 3, 4, 5, 6], &mut out, 2, ScanSpec::inclusive())?;
//! assert_eq!(out, [1, 3, 6, 4, 9, 15]);
//! # Ok(()) }
//! ```
//!
//! Stream compaction, the scan's classic use, is `compact`: the items whose
//! flag is set, in order (on the GPU: each tile's kept items counted, the
//! counts scanned, each tile's kept items placed).
//!
//! ```
//! # fn main() -> scan::Result<()> {
//! let kept = scan::Device::cpu().compact(&[3, 1, 4, 1, 5], &[true, false, true, false, true])?;
//! assert_eq!(kept, [3, 4, 5]);
//! # Ok(()) }
//! ```
//!
//! # Errors
//!
//! Every fallible call returns [`Error`]; bad input is an error, never a
//! panic, and leaves the caller's data as it was (unless the call says "in
//! place" and succeeds):
//!
//! ```
//! use scan::{ops::Add, Cpu, Error, ScanSpec};
//! let mut out = [0u32; 2];
//! let err = Cpu::new().scan_into::<Add<u32>>(&[1, 2, 3], &mut out, ScanSpec::inclusive()).unwrap_err();
//! assert!(matches!(err, Error::LengthMismatch { input: 3, output: 2 }));
//! ```
//!
//! The others: `WrongShape` (an argument that does not match the others:
//! head or `keep` flags not one per item, a mapped scan's second input
//! array, a selective-scan array), `BadShape` (a row count that does not
//! divide the length), `BadStride` (strided rows that overlap or overrun),
//! `BadSegments` (starts or offsets out of order or past the end),
//! `TooLarge`, `BadTuning`, `Unsupported` (what a backend cannot run, e.g.
//! zero-sized items on the GPU), `Other` (e.g. a device buffer of another
//! executor's context); for the GPU `CudaUnavailable`, `NotCuda` (an
//! operator without CUDA source sent to a GPU `Device`), `Driver` and
//! `Compile` (with the NVRTC log and the generated source); for sharded
//! scans `NcclUnavailable` and `Nccl`. Each message says what was wrong and
//! what to pass instead:
//!
//! ```
//! use scan::{ops::Add, Cpu, ScanSpec};
//! let mut out = [0u32; 3];
//! let err = Cpu::new().scan_flagged::<Add<u32>>(&[1, 2, 3], &mut out, &[true, false], ScanSpec::inclusive());
//! assert_eq!(
//!     err.unwrap_err().to_string(),
//!     "wrong shape: `heads` must be 3 items, one per item of the input, found 2 items"
//! );
//! ```

#![warn(missing_docs)]

pub use scan_core::{
    backward, blelloch, maps, ops, reference, selective, CudaOp, CudaSource, Direction, Error, Kind, Result, Scan,
    ScanOp, ScanSpec,
};
pub use scan_cpu::{Algorithm, Cpu, SelectiveCheckpoints};
/// The CUDA backend crate (its `cudarc` re-export included).
pub use scan_cuda as cuda;
pub use scan_cuda::{CompileStats, Cuda, DeviceBuffer};

mod device;
pub use device::{Device, SavedForward};
pub use scan_core::{CudaFloat, CudaScalar, CudaType};
// The facade's `scan_op`/`scan_item` generate code that names `::scan::__core`,
// so a user crate needs only `scan` as a dependency.
#[doc(hidden)]
pub use scan_core as __core;
pub use scan_macros::{facade_scan_item as scan_item, facade_scan_maps as scan_maps, facade_scan_op as scan_op};

/// Compiles and runs every Rust block of the README as a doc test
/// (`cargo test --doc -p scan`); blocks that need a GPU are `no_run`.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
