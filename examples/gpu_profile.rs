//! One GPU scan, run a few times, for profilers (Nsight Compute) to look at:
//!
//! ```text
//! cargo run --release --example gpu_profile -- [f32-add|i32-add|linrec-f32|linrec-f64|linrec-fused|bf16-fused|f32-add-rows|f32-add-offsets|selective|selective-backward|selective-backward-ab|selective-backward-narrow-ab|selective-backward-piped-ab|selective-backward-short-ab|selective-backward-piped-short-ab|linrec-fused-ab] [log2 n] [single-pass|blelloch]
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
//! blocks over whole rows or ranges of 256 steps). `selective-backward-ab`
//! times the tile backward with its states in order and rotated
//! (`Tuning::selective_backward_rotated_states`), alternating in one process
//! (20 rounds of 3 calls each), and prints each one's median
//! (`selective-backward-narrow-ab`: the rotated kernel with and without
//! `Tuning::selective_backward_narrow_steps`; `selective-backward-piped-ab`:
//! the rotated kernel with narrow steps, with and without
//! `Tuning::selective_backward_pipelined_sums`; `selective-backward-short-ab`
//! and `selective-backward-piped-short-ab`: that kernel plain against
//! `Tuning::selective_backward_short_sums`, alone and with the pipelined
//! sums);
//! `linrec-fused-ab` the fused recurrence with grouped runs and through item
//! slots (`Tuning::grouped_runs`), alternating with a copy of its bytes.

use scan::cuda::{Algorithm, Cuda, Tuning};
use scan::maps::{bf16, Recurrence, WidenNarrow};
use scan::ops::{Add, LinearRecurrence};
use scan::selective::{Projection, SelectiveScan, SsmShape};
use scan::{CudaOp, ScanSpec};

fn run<Op: CudaOp>(cuda: &Cuda, x: &[Op::Item], rows: usize) -> scan::Result<()> {
    let input = cuda.upload(x)?;
    let mut output = cuda.upload(x)?;
    // A first call outside the events: it compiles or loads the kernels.
    cuda.scan_rows_device_into::<Op>(&input, &mut output, rows, ScanSpec::inclusive())?;
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
        "selective-backward-ab" => selective_backward_ab(Ab::Rotated),
        "selective-backward-narrow-ab" => selective_backward_ab(Ab::Narrow),
        "selective-backward-piped-ab" => selective_backward_ab(Ab::Piped),
        "selective-backward-short-ab" => selective_backward_ab(Ab::Short),
        "selective-backward-piped-short-ab" => selective_backward_ab(Ab::PipedShort),
        "linrec-fused-ab" => linrec_fused_ab(n),
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

/// The fused f32 recurrence a[], b[] -> h[] over `n` items with grouped runs
/// (the default) and through item slots (`Tuning::grouped_runs(false)`),
/// alternating with a device copy of the same 12 bytes per item: each one's
/// median of 60 calls, in GB/s and against the copy.
fn linrec_fused_ab(n: usize) -> scan::Result<()> {
    let grouped = Cuda::new()?; // (also uploads and copies)
    let slots = Cuda::new()?.with_tuning(Tuning::default().grouped_runs(false));
    // SCAN_AB_SHAPE=threads,items,blocks,stages adds that shape.
    let shape: Option<Vec<u32>> = std::env::var("SCAN_AB_SHAPE")
        .ok()
        .map(|v| v.split(',').filter_map(|x| x.trim().parse().ok()).collect())
        .filter(|v: &Vec<u32>| v.len() == 4);
    let mut cases = vec![("grouped runs".to_string(), Cuda::new()?), ("item slots".to_string(), slots)];
    if let Some(v) = shape {
        let t = Tuning::default().threads(v[0]).items_per_thread(v[1]).blocks_per_sm(v[2]).stages(v[3]);
        cases.push((format!("{} x {}, {} blocks/SM, {} stages", v[0], v[1], v[2], v[3]), Cuda::new()?.with_tuning(t)));
    }
    let a = grouped.upload(&(0..n).map(|i| 0.5 + 0.5 * ((i * 7 % 11) as f32 / 11.0)).collect::<Vec<_>>())?;
    let b = grouped.upload(&(0..n).map(|i| (i % 13) as f32 - 6.0).collect::<Vec<_>>())?;
    let mut h = grouped.alloc::<f32>(n)?;
    let (src, mut dst) = (grouped.alloc::<u8>(6 * n)?, grouped.alloc::<u8>(6 * n)?);
    let mut times = vec![Vec::new(); cases.len() + 1];
    for round in 0..21 {
        for _ in 0..3 {
            let ((), ms) = grouped.time(|| dst.copy_from(&src))?;
            if round > 0 {
                times[0].push(ms);
            }
        }
        for (i, (_, cuda)) in cases.iter().enumerate() {
            for _ in 0..3 {
                let ((), ms) = cuda.time(|| {
                    cuda.scan_mapped_device_into::<LinearRecurrence<f32>, Recurrence, _>(
                        (&a, &b),
                        &mut h,
                        ScanSpec::inclusive(),
                    )
                })?;
                // Round 0 loads the modules.
                if round > 0 {
                    times[i + 1].push(ms);
                }
            }
        }
    }
    let medians: Vec<f32> = times
        .into_iter()
        .map(|mut t| {
            t.sort_by(f32::total_cmp);
            t[t.len() / 2]
        })
        .collect();
    let gbps = |ms: f32| 12.0 * n as f64 / (f64::from(ms) * 1e-3) / 1e9;
    println!("device copy of 12 B/item x {n}: median {:.3} ms, {:.0} GB/s", medians[0], gbps(medians[0]));
    for ((name, _), ms) in cases.iter().zip(&medians[1..]) {
        println!(
            "fused recurrence, {name}: median {ms:.3} ms, {:.0} GB/s, {:.3} of copy (60 calls)",
            gbps(*ms),
            medians[0] / ms
        );
    }
    Ok(())
}

/// Which two forms of the tile backward `selective_backward_ab` times.
#[derive(Clone, Copy)]
enum Ab {
    /// States in order against rotated (wide steps).
    Rotated,
    /// Rotated, wide steps against narrow.
    Narrow,
    /// Rotated with narrow steps, plain sums over rows against pipelined.
    Piped,
    /// Rotated with narrow steps, plain sums over rows against short.
    Short,
    /// Rotated with narrow steps, plain sums over rows against pipelined
    /// and short.
    PipedShort,
}

/// The tile backward of the 8/11 benchmark's shape in two forms,
/// alternating: each one's median of 60 calls.
fn selective_backward_ab(ab: Ab) -> scan::Result<()> {
    let tuning = Tuning::default().selective_backward_tiles(true);
    let rotated = tuning.selective_backward_rotated_states(true);
    let narrow = rotated.selective_backward_narrow_steps(true);
    // The narrow kernel's plain sums over rows (pipelined and short are the default).
    let plain = narrow.selective_backward_pipelined_sums(false).selective_backward_short_sums(false);
    let (first, second, names) = match ab {
        Ab::Rotated => (
            tuning.selective_backward_rotated_states(false),
            rotated.selective_backward_narrow_steps(false),
            ["states in order", "states rotated"],
        ),
        Ab::Narrow => {
            (rotated.selective_backward_narrow_steps(false), plain, ["rotated, wide steps", "rotated, narrow steps"])
        }
        Ab::Piped => (
            plain,
            plain.selective_backward_pipelined_sums(true),
            ["narrow, plain sums over rows", "narrow, pipelined sums over rows"],
        ),
        Ab::Short => (
            plain,
            plain.selective_backward_short_sums(true),
            ["narrow, plain sums over rows", "narrow, short sums over rows"],
        ),
        Ab::PipedShort => (
            plain,
            plain.selective_backward_pipelined_sums(true).selective_backward_short_sums(true),
            ["narrow, plain sums over rows", "narrow, pipelined short sums over rows"],
        ),
    };
    let (first, second) = (Cuda::new()?.with_tuning(first), Cuda::new()?.with_tuning(second));
    let args = selective_args();
    let on_device = first.upload_selective(&args.scan())?;
    let dout = first.upload(&vec![1.0f32; args.shape.batch * args.shape.dim * args.shape.len])?;
    let mut times = [Vec::new(), Vec::new()];
    for round in 0..21 {
        for (i, cuda) in [&first, &second].into_iter().enumerate() {
            for _ in 0..3 {
                let (_, ms) = cuda.time(|| cuda.run_selective_backward(&on_device, &dout))?;
                // Round 0 loads the modules.
                if round > 0 {
                    times[i].push(ms);
                }
            }
        }
    }
    for (name, mut t) in names.into_iter().zip(times) {
        t.sort_by(f32::total_cmp);
        let (median, min, max) = (t[t.len() / 2], t[0], t[t.len() - 1]);
        println!("tile backward, {name}: median {median:.3} ms, min {min:.3}, max {max:.3} ({} calls)", t.len());
    }
    Ok(())
}

/// The selective scan of the 8/11 benchmark, three times (`backward`: then
/// its backward pass from an all-ones dout, three times).
fn selective(cuda: &Cuda, backward: bool) -> scan::Result<()> {
    let args = selective_args();
    let SsmShape { batch, dim, len, state } = args.shape;
    let mut on_device = cuda.upload_selective(&args.scan())?;
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

/// The arguments of the 8/11 benchmark's selective scan (batch 8, dim 1536,
/// L 4096, N 16; B and C varying, D, z, delta_bias, softplus), owned.
struct SelectiveArgs {
    shape: SsmShape,
    u: Vec<f32>,
    delta: Vec<f32>,
    z: Vec<f32>,
    a: Vec<f32>,
    d: Vec<f32>,
    bias: Vec<f32>,
    b: Vec<f32>,
    c: Vec<f32>,
}

fn selective_args() -> SelectiveArgs {
    let shape = SsmShape { batch: 8, dim: 1536, len: 4096, state: 16 };
    let SsmShape { batch, dim, len, state } = shape;
    let v = |n: usize, lo: f32, hi: f32, salt: usize| -> Vec<f32> {
        (0..n).map(|i| lo + (hi - lo) * ((i * 7 + salt) as f64 * 0.618_033_988_749_895).fract() as f32).collect()
    };
    SelectiveArgs {
        shape,
        u: v(batch * dim * len, -1.0, 1.0, 1),
        delta: v(batch * dim * len, -4.0, -1.0, 2),
        z: v(batch * dim * len, -2.0, 2.0, 3),
        a: v(dim * state, -1.5, -0.5, 4),
        d: v(dim, -1.0, 1.0, 5),
        bias: v(dim, -0.3, 0.3, 6),
        b: v(batch * state * len, -1.0, 1.0, 7),
        c: v(batch * state * len, -1.0, 1.0, 8),
    }
}

impl SelectiveArgs {
    fn scan(&self) -> SelectiveScan<'_> {
        SelectiveScan::new(
            self.shape,
            &self.u,
            &self.delta,
            &self.a,
            Projection::Varying { data: &self.b, groups: 1 },
            Projection::Varying { data: &self.c, groups: 1 },
        )
        .d(&self.d)
        .z(&self.z)
        .delta_bias(&self.bias)
        .delta_softplus(true)
    }
}
