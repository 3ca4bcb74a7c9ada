//! CUDA backend of `scan`: every [`CudaOp`](scan_core::CudaOp) operator on an
//! NVIDIA GPU, through cudarc and NVRTC.
//!
//! * [`Cuda`]: the executor. Opens a device without panicking, compiles each
//!   operator once for the device's architecture (cached in memory and on
//!   disk), and runs one of two [`Algorithm`]s, both implementations of
//!   `scan_core::device::DeviceScan` over device spans:
//!   - [`Algorithm::SinglePass`] (the default): one launch per scan, each
//!     block scanning a tile and chaining it to its predecessors with a
//!     decoupled look-back, so the data moves once, like a copy
//!     (`single_pass.rs`, `kernels/single_pass.cuh`);
//!   - [`Algorithm::Blelloch`]: the same multi-block driver as the CPU
//!     (`scan_core::blelloch::Driver`) with kernels for the blocks
//!     (`blelloch.rs`, `kernels/blelloch.cuh`).
//!
//!   Batched rows with [`Cuda::scan_rows`].
//! * [`ShardGroup`] and [`NcclRank`]: one sequence split across ranks (a GPU
//!   each, joined by NCCL, or several ranks on one GPU), scanned as one:
//!   each rank's total is all-gathered, one item per rank, and each rank
//!   scans from the totals before it (`sharded.rs`, `nccl.rs`).
//! * Policy apart from mechanism: [`SinglePassPolicy`] and [`BlellochPolicy`]
//!   shape the kernels per item size and architecture; [`Tuning`] overrides.
//! * [`DeviceBuffer`]: items of any `Copy` type in device memory.
//! * The kernels are templates in `scan-cuda/kernels/*.cuh`, written once
//!   against `template <class Op>` and layered as in CUB (thread, warp,
//!   block, device); an operator's module instantiates each for every
//!   (direction, kind), see [`module_source`] for what NVRTC sees.
//!
//! ```no_run
//! # fn main() -> scan_core::Result<()> {
//! use scan_core::{ops::Max, ScanSpec};
//! let cuda = scan_cuda::Cuda::new()?;
//! let running_max = cuda.scan::<Max<f32>>(&[1.0, 3.0, 2.0], ScanSpec::inclusive())?;
//! assert_eq!(running_max, [1.0, 3.0, 3.0]);
//! # Ok(()) }
//! ```
//!
//! # Finding libnvrtc and libcuda
//!
//! cudarc, built here with dynamic loading and CUDA 13.0's bindings, opens
//! the libraries by the names `libnvrtc.so`, `libnvrtc.so.13`,
//! `libnvrtc.so.12` (and older), `libcuda.so`, `libcuda.so.1` ... on the
//! loader's path, so CUDA 12.x and 13.x installs both serve (only the calls
//! that both have are made; drivers of either major version run it). Where
//! the loader finds none, the first call looks in `CUDA_HOME`, `CUDA_PATH`,
//! `/usr/local/cuda*`, `/opt/cuda` and the pip wheels (`nvidia/*/lib`) of
//! the Python on `PATH`, of an active virtualenv or conda environment and of
//! the usual system and user installs, and loads a match by its full path
//! (the loader then answers cudarc's open by the library's soname), so `pip
//! install nvidia-cuda-nvrtc-cu12` is enough. Otherwise [`Cuda::new`]
//! returns [`Error::CudaUnavailable`](scan_core::Error::CudaUnavailable)
//! listing every folder searched and any library of an unknown version
//! found. No environment variable is needed.

#![warn(missing_docs)]

mod blelloch;
mod buffer;
mod cache;
mod compact;
mod cuda;
mod discover;
mod env;
mod host;
mod kernels;
mod mapped;
mod module;
mod nccl;
mod nvrtc;
mod pinned;
mod policy;
mod pool;
mod rows;
mod selective;
mod sharded;
mod single_pass;
mod source;
mod span;
mod staging;
mod widen;

pub use buffer::DeviceBuffer;
pub use cache::default_dir as cache_dir;
pub use compact::compile_compact_for_arch;
pub use cuda::{
    compile_for_arch, compile_segmented_for_arch, compile_segmented_with, compile_with, module_source,
    ptxas_report_segmented_with, CompileStats, Cuda,
};
/// Items that [`Cuda::alloc`] can zero-fill (cudarc's marker trait).
pub use cudarc::driver::ValidAsZeroBits;
pub use host::{TransferRates, STAGED_TRANSFER_BYTES};
pub use mapped::{compile_mapped_with, ptxas_report_mapped, ptxas_report_mapped_rows, DeviceInputs, HostInputs};
pub use nccl::{nccl_version, NcclId};
pub use nvrtc::{is_available as nvrtc_available, version as nvrtc_version};
pub use policy::{
    Algorithm, BlellochPolicy, SinglePassPolicy, StatusLayout, Tuning, DETERMINISTIC_LOOKBACK,
    SINGLE_PASS_MAX_ITEM_BYTES,
};
pub use selective::{
    compile_selective_backward_for_arch, compile_selective_for_arch, ptxas_report_selective_backward, DeviceProjection,
    DeviceSelectiveScan, DeviceSsmGrads, SelectiveKernelChoice, SelectiveSaved, SELECTIVE_BACKWARD_MAX_STATE,
};
pub use sharded::{compile_shard_for_arch, ptxas_report_shard, NcclRank, ShardGroup};
pub use widen::compile_widen_for_arch;

/// The cudarc this crate is built with, for scanning your own `CudaSlice`s.
pub use cudarc;

// One executor can be shared between threads (launches go to its one stream).
const _: fn() = || {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<Cuda>();
    send_sync::<DeviceBuffer<(f32, f32)>>();
};
