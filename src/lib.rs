//! `scan`: parallel scans (prefix sums) over any associative operator, on the
//! CPU and on NVIDIA GPUs.
//!
//! ```
//! use scan::{ops::Add, reference, ScanSpec};
//! assert_eq!(reference::scan::<Add<i32>>(&[1, 2, 3], ScanSpec::inclusive()), [1, 3, 6]);
//! ```

pub use scan_core::{blelloch, ops, reference, CudaOp, CudaSource, Direction, Error, Kind, Result, ScanOp, ScanSpec};
pub use scan_cpu::{Algorithm, Cpu};
pub use scan_cuda::{CompileStats, Cuda, DeviceBuffer};

mod device;
pub use device::Device;
pub use scan_core::{CudaFloat, CudaScalar, CudaType};
pub use scan_macros::{scan_item, scan_op};
