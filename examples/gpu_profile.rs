//! One GPU scan, run a few times, for profilers (Nsight Compute) to look at:
//!
//! ```text
//! cargo run --release --example gpu_profile -- [f32-add|i32-add|linrec-f32|linrec-f64] [log2 n] [single-pass|blelloch]
//! ncu --launch-skip 2 --launch-count 1 -k regex:single_pass target/release/examples/gpu_profile f32-add 28
//! ```
//!
//! Inputs are random (never zeros), the scan is inclusive, forward and out of
//! place between device buffers, three times.

use scan::cuda::{Algorithm, Cuda};
use scan::ops::{Add, LinearRecurrence};
use scan::{CudaOp, ScanSpec};
use scan_core::testing::Rng;

fn run<Op: CudaOp>(cuda: &Cuda, x: &[Op::Item]) -> scan::Result<()> {
    let input = cuda.upload(x)?;
    let mut output = cuda.upload(x)?;
    for _ in 0..3 {
        let ((), ms) = cuda.time(|| cuda.scan_device_into::<Op>(&input, &mut output, ScanSpec::inclusive()))?;
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
    let mut rng = Rng::new(7);
    let n = 1usize << log;
    match case {
        "i32-add" => run::<Add<i32>>(&cuda, &rng.vec(n, |r| r.next_u64() as i32)),
        "linrec-f32" => run::<LinearRecurrence<f32>>(
            &cuda,
            &rng.vec(n, |r| (r.range_f64(0.9, 1.0) as f32, r.range_f64(-1.0, 1.0) as f32)),
        ),
        "linrec-f64" => {
            run::<LinearRecurrence<f64>>(&cuda, &rng.vec(n, |r| (r.range_f64(0.9, 1.0), r.range_f64(-1.0, 1.0))))
        }
        _ => run::<Add<f32>>(&cuda, &rng.vec(n, |r| r.range_f64(-1.0, 1.0) as f32)),
    }
}
