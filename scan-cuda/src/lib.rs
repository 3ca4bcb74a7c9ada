//! CUDA backend of `scan`: every [`CudaOp`](scan_core::CudaOp) operator on an
//! NVIDIA GPU, through cudarc and NVRTC.
//!
//! * [`Cuda`]: the executor. Opens a device without panicking, compiles each
//!   operator once for the device's architecture (cached in memory and on
//!   disk), and runs the same multi-block Blelloch driver as the CPU
//!   (`scan_core::blelloch::scan_in_place`) with kernels for the blocks.
//! * [`DeviceBuffer`]: items of any `Copy` type in device memory.
//! * The kernels are templates in `scan-cuda/kernels/*.cu`, written once
//!   against `template <class Op>`; see [`module_source`] for what NVRTC sees.
//!
//! ```no_run
//! # fn main() -> scan_core::Result<()> {
//! use scan_core::{ops::Max, ScanSpec};
//! let cuda = scan_cuda::Cuda::new()?;
//! let running_max = cuda.scan::<Max<f32>>(&[1.0, 3.0, 2.0], ScanSpec::inclusive())?;
//! assert_eq!(running_max, [1.0, 3.0, 3.0]);
//! # Ok(()) }
//! ```

mod backend;
mod buffer;
mod cache;
mod cuda;
mod nvrtc;
mod policy;
mod source;

pub use buffer::DeviceBuffer;
pub use cache::default_dir as cache_dir;
pub use cuda::{compile_for_arch, module_source, CompileStats, Cuda};
pub use nvrtc::{is_available as nvrtc_available, version as nvrtc_version};
pub use policy::Policy;

/// The cudarc this crate is built with, for scanning your own `CudaSlice`s.
pub use cudarc;

// One executor can be shared between threads (launches go to its one stream).
const _: fn() = || {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<Cuda>();
    send_sync::<DeviceBuffer<(f32, f32)>>();
};
