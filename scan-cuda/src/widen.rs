//! bf16 and f16 values widened to f32 on the device (kernels/widen.cuh),
//! exactly. The selective scan's kernels read f32: half-precision
//! activations are uploaded at their own width (half the bytes of f32 over
//! PCIe, and no f32 copy of them on the host) and widened here. One small
//! module for the executor, compiled on first use.

use std::sync::Arc;

use cudarc::driver::{CudaFunction, CudaModule, LaunchConfig, PushKernelArg};
use scan_core::selective::{SsmFormat, SsmInput};
use scan_core::Result;

use crate::blelloch::grid;
use crate::buffer::{driver_error, DeviceBuffer};
use crate::cuda::Cuda;
use crate::kernels::lookup;
use crate::source::kernel_files;

const THREADS: u32 = 256;

/// Blocks of the grid-stride loop at most: a few waves of any GPU.
const MAX_BLOCKS: usize = 2048;

const SOURCES: [(&str, &str); 2] =
    [("util.cuh", include_str!("../kernels/util.cuh")), ("widen.cuh", include_str!("../kernels/widen.cuh"))];

const BF16: &str = "widen_bf16";
const F16: &str = "widen_f16";

/// The loaded kernels (the module must outlive the functions).
pub(crate) struct WidenKernels {
    _module: Arc<CudaModule>,
    bf16: CudaFunction,
    f16: CudaFunction,
}

fn source() -> String {
    let mut code = kernel_files(&SOURCES);
    for (name, is_bf16) in [(BF16, true), (F16, false)] {
        code.push_str(&format!(
            "extern \"C\" __global__ void __launch_bounds__({THREADS}) {name}(\n\
             \x20   const unsigned short* src, float* dst, unsigned long long n) {{\n\
             \x20 scan::widen_halves<{is_bf16}>(src, dst, n);\n\
             }}\n"
        ));
    }
    code
}

impl Cuda {
    /// `values` as f32s in a new device buffer, converted on the device:
    /// bf16 and f16 exactly (every value, subnormals and infinities
    /// included; a NaN stays a NaN), f32 copied. For filling a
    /// [`DeviceSelectiveScan`](crate::DeviceSelectiveScan), whose kernels
    /// read f32, from half-precision activations already on the device
    /// ([`Cuda::upload_selective`] does this for host slices). Queued on the
    /// executor's stream, like a launch.
    ///
    /// ```no_run
    /// # fn main() -> scan_core::Result<()> {
    /// use scan_core::maps::bf16;
    /// let cuda = scan_cuda::Cuda::new()?;
    /// let halves = cuda.upload(&[bf16::from_f32(1.5), bf16::MIN_POSITIVE_SUBNORMAL])?;
    /// let wide = cuda.widen_to_f32(&halves)?;
    /// assert_eq!(wide.download()?, [1.5, bf16::MIN_POSITIVE_SUBNORMAL.to_f32()]);
    /// # Ok(()) }
    /// ```
    pub fn widen_to_f32<T: SsmInput>(&self, values: &DeviceBuffer<T>) -> Result<DeviceBuffer<f32>> {
        self.check_buffer(values, "values")?;
        // Every item is written: by the copy or by the kernel.
        let mut wide = self.alloc_unwritten::<f32>(values.len())?;
        if values.is_empty() {
            return Ok(wide);
        }
        let stream = self.stream();
        let src = values.device_ptr(stream);
        let dst = wide.device_ptr_mut(stream);
        let bf16 = match T::FORMAT {
            SsmFormat::F32 => {
                // SAFETY: the source's items are f32s (`T::FORMAT`): as many
                // bytes as the destination holds.
                unsafe { cudarc::driver::result::memcpy_dtod_async(dst, src, values.num_bytes(), stream.cu_stream()) }
                    .map_err(|e| driver_error("device copy", e))?;
                return Ok(wide);
            }
            SsmFormat::Bf16 => true,
            SsmFormat::F16 => false,
        };
        let kernels = self.widen_kernels()?;
        let function = if bf16 { &kernels.bf16 } else { &kernels.f16 };
        let n = values.len() as u64;
        let blocks = grid(values.len().div_ceil(4 * THREADS as usize).min(MAX_BLOCKS))?;
        let cfg = LaunchConfig { grid_dim: (blocks, 1, 1), block_dim: (THREADS, 1, 1), shared_mem_bytes: 0 };
        let mut launch = stream.launch_builder(function);
        launch.arg(&src).arg(&dst).arg(&n);
        // SAFETY: `values` holds `n` 2-byte items (`T::FORMAT` is bf16 or
        // f16) and `wide` `n` f32s; the kernel reads and writes only those.
        unsafe { launch.launch(cfg) }.map_err(|e| driver_error("launch of the widening", e))?;
        Ok(wide)
    }

    /// `values` on the device as f32s: uploaded as they are when they are
    /// f32s, else at their own width and widened there.
    pub(crate) fn upload_widened<T: SsmInput>(&self, values: &[T]) -> Result<DeviceBuffer<f32>> {
        match T::as_f32(values) {
            Some(values) => self.upload(values),
            None => self.widen_to_f32(&self.upload(values)?),
        }
    }

    /// The widening kernels, loaded once per executor.
    fn widen_kernels(&self) -> Result<Arc<WidenKernels>> {
        self.kernels_once(&self.widen, source, "widen", |module| {
            let bf16 = lookup(&module, BF16)?;
            let f16 = lookup(&module, F16)?;
            Ok(WidenKernels { _module: module, bf16, f16 })
        })
    }
}

/// Compiles the widening kernels for `arch` (e.g. `"sm_90"`) with NVRTC and
/// returns the CUBIN; needs libnvrtc, no GPU.
pub fn compile_widen_for_arch(arch: &str) -> Result<Vec<u8>> {
    crate::nvrtc::compile_cubin(&source(), "widen", arch)
}
