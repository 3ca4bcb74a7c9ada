//! Mamba's selective scan on the GPU, a file per part:
//!
//! - `forward.rs`: the forward pass (`Cuda::selective_scan`,
//!   `run_selective`) and its three kernels (chunked block scan, lane
//!   groups, tiles of 32 channels), with the choice between them;
//! - `saved.rs`: the training forward that also saves the states before
//!   every 8 steps, and the backward that starts from them;
//! - `backward.rs`: the backward pass (`Cuda::selective_scan_backward`,
//!   `run_selective_backward`), its fixed-order sums, and the lane kernels
//!   that serve every shape up to N = 64;
//! - `backward_tiles.rs`: the backward's tile kernels (checkpoints, then
//!   one gradient kernel), the default for Mamba's layout.
//!
//! The kernels themselves are the templates in `kernels/selective*.cuh`.

mod backward;
mod backward_tiles;
mod forward;
mod saved;

pub(crate) use backward::SelectiveBackwardKernels;
pub use backward::{
    compile_selective_backward_for_arch, ptxas_report_selective_backward, DeviceSsmGrads, SELECTIVE_BACKWARD_MAX_STATE,
};
pub(crate) use forward::SelectiveKernel;
pub use forward::{compile_selective_for_arch, DeviceProjection, DeviceSelectiveScan, SelectiveKernelChoice};
pub use saved::SelectiveSaved;
