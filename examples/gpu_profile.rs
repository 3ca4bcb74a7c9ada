//! One GPU scan, run a few times, for profilers (Nsight Compute) to look at:
//!
//! ```text
//! cargo run --release --example gpu_profile -- [f32-add|i32-add|linrec-f32|linrec-f64|f32-add-rows] [log2 n] [single-pass|blelloch]
//! ncu --launch-skip 2 --launch-count 1 -k regex:single_pass target/release/examples/gpu_profile f32-add 28
//! ```
//!
//! Inputs are pseudo-random (a Weyl sequence), the scan is inclusive, forward and out of
//! place between device buffers, three times. `f32-add-rows` scans rows of
//! 4096 items (2^n items in all) in one launch.

use scan::cuda::{Algorithm, Cuda};
use scan::ops::{Add, LinearRecurrence};
use scan::{CudaOp, ScanSpec};

fn run<Op: CudaOp>(cuda: &Cuda, x: &[Op::Item], rows: usize) -> scan::Result<()> {
    let input = cuda.upload(x)?;
    let mut output = cuda.upload(x)?;
    for _ in 0..3 {
        let ((), ms) =
            cuda.time(|| cuda.scan_rows_device_into::<Op>(&input, &mut output, rows, ScanSpec::inclusive()))?;
        let gbps = 2.0 * std::mem::size_of_val(x) as f64 / (f64::from(ms) * 1e-3) / 1e9;
        println!("{} items in {ms:.3} ms: {gbps:.0} GB/s", x.len());
    }
    Ok(())
}

fn main() -> scan::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let case = args.first().map_or("f32-add", |s| s.as_str());
    let log: u32 = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(28);
    let algorithm = match args.get(2).map(|s| s.as_str()) {
        Some("blelloch") => Algorithm::Blelloch,
        _ => Algorithm::SinglePass,
    };
    let cuda = Cuda::new()?.with_algorithm(algorithm);
    println!("{cuda}: {case} 2^{log}, {algorithm}");
    let n = 1usize << log;
    // Deterministic, well-spread data: u(i) in [0, 1) (never a run of zeros).
    let u = |i: usize| (i as f64 * 0.618_033_988_749_895).fract();
    let a = |i: usize| 0.9 + 0.1 * u(i);
    let b = |i: usize| 2.0 * u(7 * i + 3) - 1.0;
    match case {
        "i32-add" => {
            run::<Add<i32>>(&cuda, &(0..n).map(|i| (u(i) * 2e9) as i32 - 1_000_000_000).collect::<Vec<_>>(), 1)
        }
        "linrec-f32" => {
            run::<LinearRecurrence<f32>>(&cuda, &(0..n).map(|i| (a(i) as f32, b(i) as f32)).collect::<Vec<_>>(), 1)
        }
        "linrec-f64" => run::<LinearRecurrence<f64>>(&cuda, &(0..n).map(|i| (a(i), b(i))).collect::<Vec<_>>(), 1),
        "f32-add-rows" => run::<Add<f32>>(&cuda, &(0..n).map(|i| b(i) as f32).collect::<Vec<_>>(), (n / 4096).max(1)),
        _ => run::<Add<f32>>(&cuda, &(0..n).map(|i| b(i) as f32).collect::<Vec<_>>(), 1),
    }
}
