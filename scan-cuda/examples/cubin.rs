//! Writes the CUBIN of a built-in module, compiled by NVRTC as the backend
//! compiles it, so that its machine code can be read without a GPU:
//!
//! ```text
//! cargo run -p scan-cuda --example cubin -- selective sm_90 /tmp/selective.cubin
//! nvdisasm -c -fun selective_scan_fwd /tmp/selective.cubin | less
//! cargo run -p scan-cuda --example cubin -- linrec-f64 sm_90 /tmp/scan.cubin
//! cuobjdump -res-usage /tmp/scan.cubin   # registers and spills per kernel
//! ```
//!
//! `add-f32`, `linrec-f32`, `linrec-f64` and `matmul-f64` (4-, 8-, 16- and
//! 32-byte items) are the scan modules (single-pass and Blelloch kernels,
//! default policy) of those built-in operators; `bf16-sums` the fused-maps
//! module of bf16 sums accumulated in f32 (`WidenNarrow<bf16>`), and
//! `linrec-fused` the f32 recurrence's from a[] and b[] to h[] (`Recurrence`).
//!
//! (`nvdisasm` and `cuobjdump` come in the `nvidia-cuda-nvdisasm` and
//! `nvidia-cuda-cuobjdump` Python wheels; DEVELOPERS.md says how to count
//! a kernel's instructions with them.)

use std::process::ExitCode;

use scan_core::ops;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [module, arch, out] = args.as_slice() else {
        eprintln!("usage: cubin selective|selective-backward|compact|add-f32|linrec-f32|linrec-f64|matmul-f64|bf16-sums|linrec-fused ARCH OUT (ARCH e.g. sm_90)");
        return ExitCode::from(2);
    };
    let cubin = match module.as_str() {
        "selective" => scan_cuda::compile_selective_for_arch(arch),
        "selective-backward" => scan_cuda::compile_selective_backward_for_arch(arch),
        "compact" => scan_cuda::compile_compact_for_arch(arch),
        "add-f32" => scan_cuda::compile_for_arch::<ops::Add<f32>>(arch),
        "linrec-f32" => scan_cuda::compile_for_arch::<ops::LinearRecurrence<f32>>(arch),
        "linrec-f64" => scan_cuda::compile_for_arch::<ops::LinearRecurrence<f64>>(arch),
        "matmul-f64" => scan_cuda::compile_for_arch::<ops::MatMul2x2<f64>>(arch),
        "bf16-sums" => scan_cuda::compile_mapped_with::<
            ops::Add<f32>,
            scan_core::maps::WidenNarrow<scan_core::maps::bf16>,
            scan_cuda::DeviceBuffer<scan_core::maps::bf16>,
        >(arch, scan_cuda::Tuning::default()),
        "linrec-fused" => scan_cuda::compile_mapped_with::<
            ops::LinearRecurrence<f32>,
            scan_core::maps::Recurrence,
            (scan_cuda::DeviceBuffer<f32>, scan_cuda::DeviceBuffer<f32>),
        >(arch, scan_cuda::Tuning::default()),
        other => {
            eprintln!("unknown module {other:?}: see the usage");
            return ExitCode::from(2);
        }
    };
    match cubin
        .map_err(|e| e.to_string())
        .and_then(|c| std::fs::write(out, &c).map(|()| c.len()).map_err(|e| e.to_string()))
    {
        Ok(bytes) => {
            eprintln!("{module} for {arch}: {bytes} bytes in {out}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{module} for {arch}: {e}");
            ExitCode::FAILURE
        }
    }
}
