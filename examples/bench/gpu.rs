//! The GPU section: the multi-block Blelloch scan on the device against a
//! device-to-device copy of the same bytes, timed with CUDA events in the
//! same run. Sizes 2^24 and 2^28 (and `--size-log2` if it differs).
//!
//! Every scan is inclusive, forward and out of place between two device
//! buffers (`Cuda::scan_device_into`: the input is read, every output item is
//! written, nothing is copied first); the timed region is one such call,
//! launches and scratch allocation included. GB/s count the bytes a scan must
//! read and write: input + output items (for the recurrence, the whole (a, b)
//! pair in and out: 16 B per item). Before timing, each case scans into a
//! poisoned output and checks every item, and that the input is unchanged.

use scan::{CudaOp, ScanSpec};
use scan_core::testing::Rng;
use scan_cuda::{Cuda, DeviceBuffer, Policy};

use crate::check::{bad_recurrence, bad_sum};
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
        let depth = tree_depth(n)?;
        rows.extend(case::<Add<f32>>(&cuda, &format!("f32 add 2^{log}"), &x, args.reps, |got| {
            bad_sum(&x, got, |_| depth)
        })?);
        drop(x);
        let x = rng.vec(n, |r| r.range_f64(-1e6, 1e6) as f32);
        let want = scan::reference::scan::<Max<f32>>(&x, ScanSpec::inclusive());
        rows.extend(case::<Max<f32>>(&cuda, &format!("f32 max 2^{log}"), &x, args.reps, |got| {
            (0..n).find(|&i| got[i] != want[i])
        })?);
        drop((x, want));
        let x = rng.vec(n, |r| (r.range_f64(0.9, 1.0) as f32, r.range_f64(-1.0, 1.0) as f32));
        rows.extend(case::<LinearRecurrence<f32>>(
            &cuda,
            &format!("linear recurrence f32 2^{log}"),
            &x,
            args.reps,
            |got| bad_recurrence(&x, got),
        )?);
    }
    let about = format!(
        "GPU: {cuda}, NVRTC {}.{}; Blelloch multi-block (scan tiles + totals, scan totals, add prefixes), \
         inclusive forward, out of place; copy = device-to-device memcpy of the same bytes; CUDA events; {}",
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
) -> Result<Vec<Row>, String>
where
    Op::Item: PartialEq,
{
    let err = |e: scan::Error| format!("{name}: {e}");
    cuda.prepare::<Op>().map_err(err)?;
    let pristine = cuda.upload(input).map_err(err)?;
    // A buffer of the right length whatever the item type; poisoned below.
    let mut work: DeviceBuffer<Op::Item> = cuda.upload(input).map_err(err)?;
    let spec = ScanSpec::inclusive();

    // Warm-up and check: every output item must be written by the scan.
    // SAFETY: 0xA5 repeated is a valid f32 (every case's items are f32s).
    unsafe { work.poison(0xA5) }.map_err(err)?;
    cuda.scan_device_into::<Op>(&pristine, &mut work, spec).map_err(err)?;
    if let Some(i) = bad(&work.download().map_err(err)?) {
        return Err(format!("{name}: the GPU scan is wrong at index {i}"));
    }
    // The inputs hold no NaN (drawn from ranges), so `!=` sees any change.
    if pristine.download().map_err(err)? != input {
        return Err(format!("{name}: the GPU scan changed its input"));
    }

    let (mut copy_ms, mut scan_ms) = (Vec::with_capacity(reps), Vec::with_capacity(reps));
    for _ in 0..reps {
        let ((), ms) = cuda.time(|| work.copy_from(&pristine)).map_err(err)?;
        copy_ms.push(ms);
        let ((), ms) = cuda.time(|| cuda.scan_device_into::<Op>(&pristine, &mut work, spec)).map_err(err)?;
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

/// How many f32 additions an item's result passes through at most in the
/// GPU scan of `n` f32 items: per driver level, the run reduce and rescan
/// (2K) and the up- and down-sweep of the block's `2 * threads` run totals
/// (2 log2(2 threads)), plus one for that level's `add_prefixes`.
fn tree_depth(n: usize) -> Result<f64, String> {
    let policy = Policy::for_item_size(4).map_err(|e| e.to_string())?;
    let (tile, mut levels, mut len) = (policy.tile(), 1u32, n);
    while len > tile {
        len = len.div_ceil(tile);
        levels += 1;
    }
    let per_level = 2 * policy.items_per_run + 2 * (2 * policy.threads).ilog2() + 1;
    Ok(f64::from(levels * per_level))
}
