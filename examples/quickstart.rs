//! The first thing to run: scans 2^24 pseudo-random items (or 2^N: pass N)
//! on the best backend this machine has (a CUDA GPU if one works, the CPU
//! otherwise), checks every result against an f64 evaluation, and says how
//! fast it went.
//!
//! On a GPU it gives two rates, because they answer different questions:
//! from a host `Vec` to a host `Vec` (bound by the host link: beside it, the
//! link's own rates with pinned memory, measured in the same run), and on
//! data already in device memory (beside it, a device copy of the same bytes).
//!
//! ```text
//! cargo run --release --example quickstart [-- 28]
//! ```

use std::process::ExitCode;
use std::time::{Duration, Instant};

use scan::ops::{Add, LinearRecurrence};
use scan::{Cuda, CudaOp, Device, ScanSpec};

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), String> {
    let n = 1usize << log2_of_args(std::env::args().skip(1))?;
    let device = Device::auto();
    println!("backend: {device}");
    // Deterministic, well-spread data: u(i) in [0, 1).
    let u = |i: usize| (i as f64 * 0.618_033_988_749_895).fract();

    // Prefix sums of floats in [-1, 1).
    let x: Vec<f32> = (0..n).map(|i| (2.0 * u(i) - 1.0) as f32).collect();
    let (out, time) = timed_scan::<Add<f32>>(&device, &x)?;
    let (worst, bound) = check_sum(&x, &out)?;
    report("f32 add (prefix sums)", &x, time, worst, bound);
    drop(out);
    if let Some(cuda) = device.as_cuda() {
        gpu_rates::<Add<f32>>(cuda, &x, time, |out| check_sum(&x, out))?;
    }
    drop(x);

    // h_t = a_t * h_{t-1} + b_t: the recurrence of state-space models.
    let ab: Vec<(f32, f32)> = (0..n).map(|i| ((0.9 + 0.1 * u(i)) as f32, (2.0 * u(7 * i + 3) - 1.0) as f32)).collect();
    let (out, time) = timed_scan::<LinearRecurrence<f32>>(&device, &ab)?;
    let (worst, bound) = check_recurrence(&ab, &out)?;
    report("linear recurrence h_t = a_t h_(t-1) + b_t", &ab, time, worst, bound);
    drop(out);
    if let Some(cuda) = device.as_cuda() {
        gpu_rates::<LinearRecurrence<f32>>(cuda, &ab, time, |out| check_recurrence(&ab, out))?;
    }

    // Kernels are compiled once per operator and cached on disk: a second
    // start reads the cache instead of running NVRTC.
    if let Some(cuda) = device.as_cuda() {
        let cache = cuda.cache_dir().map_or("none".into(), |d| d.display().to_string());
        println!("GPU kernels: {} (disk cache: {cache})", cuda.compile_stats());
    }
    Ok(())
}

/// The log2 of the item count: the one argument, 1 to 30, or 24 without one.
fn log2_of_args(mut args: impl Iterator<Item = String>) -> Result<u32, String> {
    let log2 = match args.next() {
        None => 24,
        Some(a) => a
            .parse::<u32>()
            .ok()
            .filter(|n| (1..=30).contains(n))
            .ok_or(format!("the argument is the log2 of the item count, 1 to 30 (got {a:?})"))?,
    };
    match args.next() {
        None => Ok(log2),
        Some(extra) => Err(format!("one argument at most, the log2 of the item count (got {extra:?} after it)")),
    }
}

/// An inclusive forward scan into a preallocated output: one untimed run
/// (first touches, compilation on a GPU), then the fastest of ten (a scan
/// from host memory shares the host's memory and cores with everything
/// else running there).
fn timed_scan<Op: CudaOp>(device: &Device, input: &[Op::Item]) -> Result<(Vec<Op::Item>, Duration), String> {
    let mut out = vec![Op::identity(); input.len()];
    let mut best = Duration::MAX;
    for run in 0..11 {
        let start = Instant::now();
        device.scan_into::<Op>(input, &mut out, ScanSpec::inclusive()).map_err(|e| e.to_string())?;
        if run > 0 {
            best = best.min(start.elapsed());
        }
    }
    Ok((out, best))
}

/// The GPU's two figures for `input`: the host-to-host `time` against the
/// pinned link's bound, and the scan of device-resident data against a
/// device copy, both measured now; the device-resident scan's result is
/// checked by `check` too (it takes another path than the host scan's
/// chunks).
fn gpu_rates<Op: CudaOp>(
    cuda: &Cuda,
    input: &[Op::Item],
    time: Duration,
    check: impl Fn(&[Op::Item]) -> Result<(f64, f64), String>,
) -> Result<(), String> {
    let err = |e: scan::Error| e.to_string();
    let bytes = std::mem::size_of_val(input);
    let link = cuda.transfer_rates(bytes).map_err(err)?;
    let bound = link.bound_seconds(bytes, bytes);
    println!(
        "  host Vec -> host Vec: {:.2} ms; the pinned link needs {:.2} ms for these bytes ({link}): {:.2} of the \
         link's bound",
        time.as_secs_f64() * 1e3,
        bound * 1e3,
        bound / time.as_secs_f64()
    );
    let dev_in = cuda.upload(input).map_err(err)?;
    let mut dev_out = cuda.upload(input).map_err(err)?;
    let (mut scan_ms, mut copy_ms) = (Vec::new(), Vec::new());
    for _ in 0..11 {
        scan_ms.push(
            cuda.time(|| cuda.scan_device_into::<Op>(&dev_in, &mut dev_out, ScanSpec::inclusive())).map_err(err)?.1,
        );
        copy_ms.push(cuda.time(|| dev_out.copy_from(&dev_in)).map_err(err)?.1);
    }
    let (scan, copy) = (median(scan_ms), median(copy_ms));
    // (The loop ended on the copy: scan once more to check what it writes.)
    cuda.scan_device_into::<Op>(&dev_in, &mut dev_out, ScanSpec::inclusive()).map_err(err)?;
    let (worst, _) = check(&dev_out.download().map_err(err)?)?;
    let gbps = |ms: f32| 2.0 * bytes as f64 / (f64::from(ms) * 1e-3) / 1e9;
    println!(
        "  on the device (DeviceBuffer in and out): {:.3} ms = {:.0} GB/s; a device copy of the same bytes: {:.0} GB/s \
         ({:.2} of copy); checked, worst error {worst:.2} u·Σ|terms|",
        scan,
        gbps(scan),
        gbps(copy),
        copy / scan
    );
    Ok(())
}

fn median(mut v: Vec<f32>) -> f32 {
    v.sort_by(f32::total_cmp);
    v[v.len() / 2]
}

/// `worst`: the largest error seen, in units of the rounding scale `u · Σ|terms|`
/// at that item; `bound`: the most any evaluation order may make there, in the same units.
fn report<T>(what: &str, input: &[T], time: Duration, worst: f64, bound: f64) {
    let bytes = 2 * std::mem::size_of_val(input);
    println!(
        "{what}: {} items, inclusive scan in {:.2} ms = {:.1} GB/s (input + output bytes)\n  \
         checked every item against an f64 evaluation: worst error {worst:.2} u·Σ|terms| \
         (the bound for any evaluation order there: {bound:.0})",
        input.len(),
        time.as_secs_f64() * 1e3,
        bytes as f64 / time.as_secs_f64() / 1e9,
    );
}

/// Checks `got` against the f64 prefix sums of `x`: an error if any item is
/// off by more than the rounding any summation order can make (`(i + 1) u`
/// times the sum of |x| so far); else the worst error, see [`report`].
fn check_sum(x: &[f32], got: &[f32]) -> Result<(f64, f64), String> {
    let u = f64::from(f32::EPSILON) / 2.0;
    let (mut sum, mut abs, mut worst, mut worst_bound) = (0.0f64, 0.0f64, 0.0f64, 0.0f64);
    for (i, (&v, &g)) in x.iter().zip(got).enumerate() {
        sum += f64::from(v);
        abs += f64::from(v).abs();
        let (err, bound) = ((f64::from(g) - sum).abs(), (i + 1) as f64 * u * abs);
        if err.is_nan() || err > bound {
            return Err(format!("f32 add is wrong at {i}: got {g}, want {sum} (bound {bound:e})"));
        }
        let scale = u * abs;
        if scale > 0.0 && err / scale > worst {
            (worst, worst_bound) = (err / scale, bound / scale);
        }
    }
    Ok((worst, worst_bound))
}

/// The same for `h` of the recurrence: the bound is `2 (t + 1) u` times the
/// recurrence run on |a|, |b| (each term rounds at most twice per step).
fn check_recurrence(ab: &[(f32, f32)], got: &[(f32, f32)]) -> Result<(f64, f64), String> {
    let u = f64::from(f32::EPSILON) / 2.0;
    let (mut h, mut h_abs, mut worst, mut worst_bound) = (0.0f64, 0.0f64, 0.0f64, 0.0f64);
    for (t, (&(a, b), &(_, g))) in ab.iter().zip(got).enumerate() {
        h = f64::from(a) * h + f64::from(b);
        h_abs = f64::from(a).abs() * h_abs + f64::from(b).abs();
        let (err, bound) = ((f64::from(g) - h).abs(), 2.0 * (t + 1) as f64 * u * h_abs);
        if err.is_nan() || err > bound {
            return Err(format!("the recurrence is wrong at {t}: got {g}, want {h} (bound {bound:e})"));
        }
        let scale = u * h_abs;
        if scale > 0.0 && err / scale > worst {
            (worst, worst_bound) = (err / scale, bound / scale);
        }
    }
    Ok((worst, worst_bound))
}

#[cfg(test)]
mod tests {
    use super::log2_of_args;

    fn args(a: &[&str]) -> impl Iterator<Item = String> {
        a.iter().map(|s| s.to_string()).collect::<Vec<_>>().into_iter()
    }

    #[test]
    fn the_argument_is_one_log2_from_1_to_30() {
        assert_eq!(log2_of_args(args(&[])), Ok(24));
        assert_eq!(log2_of_args(args(&["28"])), Ok(28));
        for bad in ["0", "31", "abc", "-1", "--help"] {
            assert!(log2_of_args(args(&[bad])).unwrap_err().contains("1 to 30"), "{bad}");
        }
        // A second argument was ignored: `quickstart 4 extra` scanned 2^4 items.
        assert!(log2_of_args(args(&["4", "extra"])).unwrap_err().contains("\"extra\""));
    }
}
