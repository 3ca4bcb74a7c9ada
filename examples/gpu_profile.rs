//! One GPU scan, run a few times, for profilers (Nsight Compute) to look at:
//!
//! ```text
//! cargo run --release --example gpu_profile -- [f32-add|i32-add|linrec-f32|linrec-f64|linrec-fused|bf16-fused|f32-add-rows|f32-add-offsets|selective|selective-backward] [log2 n] [single-pass|blelloch]
//! ncu --launch-skip 2 --launch-count 1 -k regex:single_pass target/release/examples/gpu_profile f32-add 28
//! ```
//!
//! Inputs are pseudo-random (a Weyl sequence), the scan is inclusive, forward and out of
//! place between device buffers, three times. `f32-add-rows` scans rows of
//! 4096 items (2^n items in all) in one launch, `f32-add-offsets` segments
//! of 1 to 2000 items given by their starts. `linrec-fused` is the f32
//! recurrence through fused maps (a[], b[] -> h[]), `bf16-fused` bf16 sums
//! accumulated in f32 and written as bf16 (`WidenNarrow`). `selective` runs the
//! selective scan of issue 8/11's benchmark (batch 8, dim 1536, L 4096, N 16,
//! B and C varying, D, z, delta_bias, softplus; log2 n is ignored) three
//! times, `selective-backward` that and then its backward pass three times
//! (a third argument `tiles`, `whole` or `ranges` picks the kernels: the tile
//! kernels, the default at this shape, or the lane kernels with gradient
//! blocks over whole rows or ranges of 256 steps).

use scan::cuda::{Algorithm, Cuda, Tuning};
use scan::maps::{bf16, Recurrence, WidenNarrow};
use scan::ops::{Add, LinearRecurrence};
use scan::selective::{Projection, SelectiveScan, SsmShape};
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
        "selective" => selective(&cuda, false),
        "selective-backward" => {
            // A third argument picks the kernels.
            let lanes = Tuning::default().selective_backward_tiles(false);
            let form = match args.get(2).map(String::as_str) {
                Some("tiles") => Tuning::default().selective_backward_tiles(true),
                Some("whole") => lanes.selective_backward_whole_rows(true),
                Some("ranges") => lanes.selective_backward_whole_rows(false),
                _ => Tuning::default(),
            };
            selective(&Cuda::new()?.with_tuning(form), true)
        }
        "i32-add" => {
            run::<Add<i32>>(&cuda, &(0..n).map(|i| (u(i) * 2e9) as i32 - 1_000_000_000).collect::<Vec<_>>(), 1)
        }
        "linrec-f32" => {
            run::<LinearRecurrence<f32>>(&cuda, &(0..n).map(|i| (a(i) as f32, b(i) as f32)).collect::<Vec<_>>(), 1)
        }
        "linrec-fused" => {
            let da = cuda.upload(&(0..n).map(|i| a(i) as f32).collect::<Vec<_>>())?;
            let db = cuda.upload(&(0..n).map(|i| b(i) as f32).collect::<Vec<_>>())?;
            let mut h = cuda.alloc::<f32>(n)?;
            for _ in 0..3 {
                let ((), ms) = cuda.time(|| {
                    cuda.scan_mapped_device_into::<LinearRecurrence<f32>, Recurrence, _>(
                        (&da, &db),
                        &mut h,
                        ScanSpec::inclusive(),
                    )
                })?;
                println!("{n} items in {ms:.3} ms: {:.0} GB/s", 12.0 * n as f64 / (f64::from(ms) * 1e-3) / 1e9);
            }
            Ok(())
        }
        "bf16-fused" => {
            let x = cuda.upload(&(0..n).map(|i| bf16::from_f64(u(i))).collect::<Vec<_>>())?;
            let mut y = cuda.upload(&vec![bf16::ZERO; n])?;
            for _ in 0..3 {
                let ((), ms) = cuda.time(|| {
                    cuda.scan_mapped_device_into::<Add<f32>, WidenNarrow<bf16>, _>(&x, &mut y, ScanSpec::inclusive())
                })?;
                println!("{n} items in {ms:.3} ms: {:.0} GB/s", 4.0 * n as f64 / (f64::from(ms) * 1e-3) / 1e9);
            }
            Ok(())
        }
        "linrec-f64" => run::<LinearRecurrence<f64>>(&cuda, &(0..n).map(|i| (a(i), b(i))).collect::<Vec<_>>(), 1),
        "f32-add-rows" => run::<Add<f32>>(&cuda, &(0..n).map(|i| b(i) as f32).collect::<Vec<_>>(), (n / 4096).max(1)),
        "f32-add-offsets" => offsets(&cuda, &(0..n).map(|i| b(i) as f32).collect::<Vec<_>>()),
        _ => run::<Add<f32>>(&cuda, &(0..n).map(|i| b(i) as f32).collect::<Vec<_>>(), 1),
    }
}

/// Segments by offsets (7/11's case): lengths spread over 1..=2000 (a Weyl
/// sequence), three times.
fn offsets(cuda: &Cuda, x: &[f32]) -> scan::Result<()> {
    let mut starts = vec![0u64];
    let mut at = 0usize;
    for i in 1.. {
        at += 1 + ((i as f64 * 0.618_033_988_749_895).fract() * 2000.0) as usize;
        if at >= x.len() {
            break;
        }
        starts.push(at as u64);
    }
    let input = cuda.upload(x)?;
    let mut output = cuda.upload(x)?;
    let starts = cuda.upload(&starts)?;
    for _ in 0..3 {
        let ((), ms) = cuda
            .time(|| cuda.scan_segments_device_into::<Add<f32>>(&input, &mut output, &starts, ScanSpec::inclusive()))?;
        let gbps = 2.0 * std::mem::size_of_val(x) as f64 / (f64::from(ms) * 1e-3) / 1e9;
        println!("{} items by offsets in {ms:.3} ms: {gbps:.0} GB/s", x.len());
    }
    Ok(())
}

/// The selective scan of the 8/11 benchmark, three times (`backward`: then
/// its backward pass from an all-ones dout, three times).
fn selective(cuda: &Cuda, backward: bool) -> scan::Result<()> {
    let shape = SsmShape { batch: 8, dim: 1536, len: 4096, state: 16 };
    let SsmShape { batch, dim, len, state } = shape;
    let v = |n: usize, lo: f32, hi: f32, salt: usize| -> Vec<f32> {
        (0..n).map(|i| lo + (hi - lo) * ((i * 7 + salt) as f64 * 0.618_033_988_749_895).fract() as f32).collect()
    };
    let (u, delta, z) =
        (v(batch * dim * len, -1.0, 1.0, 1), v(batch * dim * len, -4.0, -1.0, 2), v(batch * dim * len, -2.0, 2.0, 3));
    let (a, d, bias) = (v(dim * state, -1.5, -0.5, 4), v(dim, -1.0, 1.0, 5), v(dim, -0.3, 0.3, 6));
    let (b, c) = (v(batch * state * len, -1.0, 1.0, 7), v(batch * state * len, -1.0, 1.0, 8));
    let args = SelectiveScan::new(
        shape,
        &u,
        &delta,
        &a,
        Projection::Varying { data: &b, groups: 1 },
        Projection::Varying { data: &c, groups: 1 },
    )
    .d(&d)
    .z(&z)
    .delta_bias(&bias)
    .delta_softplus(true);
    let mut on_device = cuda.upload_selective(&args)?;
    for _ in 0..3 {
        let ((), ms) = cuda.time(|| cuda.run_selective(&mut on_device))?;
        println!("selective scan {batch} x {dim} x {len}, N {state}: {ms:.3} ms");
    }
    if backward {
        let dout = cuda.upload(&vec![1.0f32; batch * dim * len])?;
        for _ in 0..3 {
            let (_, ms) = cuda.time(|| cuda.run_selective_backward(&on_device, &dout))?;
            println!("selective scan backward {batch} x {dim} x {len}, N {state}: {ms:.3} ms");
        }
    }
    Ok(())
}
