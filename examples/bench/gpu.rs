//! The GPU section: the multi-block Blelloch scan on the device against a
//! device-to-device copy of the same bytes, timed with CUDA events in the
//! same run. Sizes 2^24 and 2^28 (and `--size-log2` if it differs).
//!
//! Every scan is inclusive, forward and in place on a device buffer that is
//! refilled from the input (untimed) before each repetition; the timed region
//! is one `Cuda::scan_device` call, launches and scratch allocation included.
//! GB/s count the bytes a scan must read and write: input + output items
//! (for the recurrence, the whole (a, b) pair in and out: 16 B per item).

use scan::{CudaOp, ScanSpec};
use scan_core::testing::Rng;
use scan_cuda::{Cuda, DeviceBuffer};

use crate::{Args, Row};

use scan::ops::{Add, LinearRecurrence, Max};

/// Runs every GPU case; returns a line about the device and the table rows.
pub fn run(args: &Args) -> Result<(String, Vec<Row>), String> {
    let cuda = Cuda::new().map_err(|e| e.to_string())?;
    let mut logs = vec![24u32, 28];
    if !logs.contains(&args.size_log2) {
        logs.push(args.size_log2);
    }
    let mut rng = Rng::fresh("gpu bench");
    let mut rows = Vec::new();
    for &log in &logs {
        let n = 1usize << log;
        let x = rng.vec(n, |r| r.range_f64(-1.0, 1.0) as f32);
        rows.extend(case::<Add<f32>>(&cuda, &format!("f32 add 2^{log}"), &x, args.reps, |got| bad_sum(&x, got))?);
        drop(x);
        let x = rng.vec(n, |r| r.range_f64(-1e6, 1e6) as f32);
        let want = scan::reference::scan::<Max<f32>>(&x, ScanSpec::inclusive());
        rows.extend(case::<Max<f32>>(&cuda, &format!("f32 max 2^{log}"), &x, args.reps, |got| {
            (0..n).find(|&i| got[i] != want[i])
        })?);
        drop((x, want));
        let x = rng.vec(n, |r| (r.range_f64(0.9, 1.0) as f32, r.range_f64(-1.0, 1.0) as f32));
        let want = recurrence_f64(&x);
        rows.extend(case::<LinearRecurrence<f32>>(
            &cuda,
            &format!("linear recurrence f32 2^{log}"),
            &x,
            args.reps,
            |got| (0..n).find(|&i| (f64::from(got[i].1) - want[i].0).abs() > want[i].1),
        )?);
    }
    let about = format!(
        "GPU: {cuda}, NVRTC {}.{}; Blelloch multi-block (scan tiles + totals, scan totals, add prefixes), \
         inclusive forward in place; copy = device-to-device memcpy of the same bytes; CUDA events; {}",
        cuda.nvrtc_version().0,
        cuda.nvrtc_version().1,
        cuda.compile_stats()
    );
    Ok((about, rows))
}

fn median(mut v: Vec<f32>) -> f32 {
    v.sort_by(f32::total_cmp);
    v[v.len() / 2]
}

fn case<Op: CudaOp>(
    cuda: &Cuda,
    name: &str,
    input: &[Op::Item],
    reps: usize,
    bad: impl Fn(&[Op::Item]) -> Option<usize>,
) -> Result<Vec<Row>, String> {
    let err = |e: scan::Error| format!("{name}: {e}");
    cuda.prepare::<Op>().map_err(err)?;
    let pristine = cuda.upload(input).map_err(err)?;
    let mut work: DeviceBuffer<Op::Item> = cuda.alloc(input.len()).map_err(err)?;
    let spec = ScanSpec::inclusive();

    // Warm-up and check.
    work.poison(0xA5).map_err(err)?;
    work.copy_from(&pristine).map_err(err)?;
    cuda.scan_device::<Op>(&mut work, spec).map_err(err)?;
    if let Some(i) = bad(&work.download().map_err(err)?) {
        return Err(format!("{name}: the GPU scan is wrong at index {i}"));
    }

    let (mut copy_ms, mut scan_ms) = (Vec::with_capacity(reps), Vec::with_capacity(reps));
    for _ in 0..reps {
        let ((), ms) = cuda.time(|| work.copy_from(&pristine)).map_err(err)?;
        copy_ms.push(ms);
        let ((), ms) = cuda.time(|| cuda.scan_device::<Op>(&mut work, spec)).map_err(err)?;
        scan_ms.push(ms);
    }
    let bytes = 2.0 * std::mem::size_of_val(input) as f64;
    let gbps = |ms: f32| bytes / (f64::from(ms) * 1e-3) / 1e9;
    let (copy, scan) = (gbps(median(copy_ms)), gbps(median(scan_ms)));
    Ok(vec![
        Row { case: name.into(), method: "GPU device copy".into(), gbps: copy, vs_copy: 1.0, vs_sequential: f64::NAN },
        Row {
            case: name.into(),
            method: "GPU Blelloch multi-block".into(),
            gbps: scan,
            vs_copy: scan / copy,
            vs_sequential: f64::NAN,
        },
    ])
}

/// The first index where `got` is not the inclusive sum of `x` within
/// `64 * eps32 * sum |x[..=i]|` (the GPU's combination tree is far shallower
/// than 64 levels at these sizes), against an f64 evaluation.
fn bad_sum(x: &[f32], got: &[f32]) -> Option<usize> {
    let (mut sum, mut abs) = (0.0f64, 0.0f64);
    (0..x.len()).find(|&i| {
        sum += f64::from(x[i]);
        abs += f64::from(x[i]).abs();
        let err = (f64::from(got[i]) - sum).abs();
        // NaN never passes.
        err.is_nan() || err > 64.0 * f64::from(f32::EPSILON) * abs
    })
}

/// h_t and a rounding bound for it, in f64: `2 (t + 1) eps32 |h|_t`, where
/// `|h|` runs the recurrence on |a|, |b|.
fn recurrence_f64(x: &[(f32, f32)]) -> Vec<(f64, f64)> {
    let (mut h, mut habs) = (0.0f64, 0.0f64);
    x.iter()
        .enumerate()
        .map(|(t, &(a, b))| {
            h = f64::from(a) * h + f64::from(b);
            habs = f64::from(a).abs() * habs + f64::from(b).abs();
            (h, 2.0 * (t as f64 + 1.0) * f64::from(f32::EPSILON) * habs)
        })
        .collect()
}
