//! `scan`: parallel scans (prefix sums) over any associative operator, on the
//! CPU and on NVIDIA GPUs.
//!
//! ```
//! use scan::{ops::Add, reference, ScanSpec};
//! assert_eq!(reference::scan::<Add<i32>>(&[1, 2, 3], ScanSpec::inclusive()), [1, 3, 6]);
//! ```

#![warn(missing_docs)]

pub use scan_core::{
    blelloch, ops, reference, CudaOp, CudaSource, Direction, Error, Kind, Result, Scan, ScanOp, ScanSpec,
};
pub use scan_cpu::{Algorithm, Cpu};
/// The CUDA backend crate (its `cudarc` re-export included).
pub use scan_cuda as cuda;
pub use scan_cuda::{CompileStats, Cuda, DeviceBuffer};

mod device;
pub use device::Device;
pub use scan_core::{CudaFloat, CudaScalar, CudaType};
// The facade's `scan_op`/`scan_item` generate code that names `::scan::__core`,
// so a user crate needs only `scan` as a dependency.
#[doc(hidden)]
pub use scan_core as __core;
pub use scan_macros::{facade_scan_item as scan_item, facade_scan_op as scan_op};

/// Compiles and runs every Rust block of the README as a doc test
/// (`cargo test --doc -p scan`); blocks that need a GPU are `no_run`.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
