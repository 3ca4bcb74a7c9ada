//! Fused maps on the GPU (issue 8/11): the f32 linear recurrence read from
//! `a[]` and `b[]` and written to `h[]` alone (`scan_core::maps::Recurrence`,
//! 12 bytes per item), against a device copy of the same bytes timed in the
//! same run (the plain scan of (a, b) pairs, 16 bytes each way, is the
//! "linear recurrence f32 pairs" case of the main bench). Before timing,
//! every h is checked against an f64 evaluation, from a poisoned output, and
//! the inputs are checked unchanged.

use scan::maps::Recurrence;
use scan::ops::LinearRecurrence;
use scan::ScanSpec;
use scan_cuda::{Cuda, DeviceBuffer};
use scan_testing::{within, Rng};

use crate::Row;

fn err(name: &str) -> impl Fn(scan::Error) -> String + '_ {
    move |e| format!("{name}: {e}")
}

fn median(mut v: Vec<f32>) -> f32 {
    v.sort_by(f32::total_cmp);
    v[v.len() / 2]
}

/// The first t where `h` is not `a_t h_{t-1} + b_t` within the bound of
/// check.rs's `bad_recurrence`.
fn bad_h(a: &[f32], b: &[f32], h: &[f32]) -> Option<usize> {
    let (mut want, mut habs) = (0.0f64, 0.0f64);
    (0..a.len()).find(|&t| {
        let (at, bt) = (f64::from(a[t]), f64::from(b[t]));
        want = at * want + bt;
        habs = at.abs() * habs + bt.abs();
        !within(f64::from(h[t]), want, 2.0 * (t as f64 + 1.0) * f64::from(f32::EPSILON) * habs)
    })
}

/// The fused recurrence over `2^log` items, with positions loaded item by
/// item (the default) and staged as vectors (`Tuning::staged_maps`); `reps`
/// timed calls each, interleaved with the copy.
pub fn run(cuda: &Cuda, log: u32, reps: usize) -> Result<Vec<Row>, String> {
    let staged = Cuda::new().map_err(|e| e.to_string())?.with_tuning(scan_cuda::Tuning::default().staged_maps(true));
    let mut rows = one(cuda, log, reps, "GPU single-pass, fused maps")?;
    rows.extend(one(&staged, log, reps, "GPU single-pass, fused maps, staged loads")?.into_iter().skip(1));
    Ok(rows)
}

fn one(cuda: &Cuda, log: u32, reps: usize, method: &str) -> Result<Vec<Row>, String> {
    let name = format!("linear recurrence f32 fused, a[] b[] -> h[] (12 B/item) 2^{log}");
    let n = 1usize << log;
    let mut rng = Rng::fresh(&name);
    // Decays in (0.9, 1) keep h bounded and the check meaningful.
    let a = rng.vec(n, |r| r.range_f64(0.9, 1.0) as f32);
    let b = rng.vec(n, |r| r.range_f64(-1.0, 1.0) as f32);
    let (da, db) = (cuda.upload(&a).map_err(err(&name))?, cuda.upload(&b).map_err(err(&name))?);
    let mut h: DeviceBuffer<f32> = cuda.upload(&vec![f32::NAN; n]).map_err(err(&name))?;
    let spec = ScanSpec::inclusive();
    let scan = |h: &mut DeviceBuffer<f32>| {
        cuda.scan_mapped_device_into::<LinearRecurrence<f32>, Recurrence, _>((&da, &db), h, spec)
    };
    scan(&mut h).map_err(err(&name))?;
    if let Some(t) = bad_h(&a, &b, &h.download().map_err(err(&name))?) {
        return Err(format!("{name}: the fused scan is wrong at index {t}"));
    }
    if da.download().map_err(err(&name))? != a || db.download().map_err(err(&name))? != b {
        return Err(format!("{name}: the fused scan changed an input"));
    }
    drop((a, b));
    // The copy moves the same bytes: 12 n in all, as 6 n read and written.
    let src: DeviceBuffer<u16> = cuda.alloc(3 * n).map_err(err(&name))?;
    let mut dst: DeviceBuffer<u16> = cuda.alloc(3 * n).map_err(err(&name))?;
    let (mut copy_ms, mut scan_ms) = (Vec::with_capacity(reps), Vec::with_capacity(reps));
    for _ in 0..reps {
        copy_ms.push(cuda.time(|| dst.copy_from(&src)).map_err(err(&name))?.1);
        scan_ms.push(cuda.time(|| scan(&mut h)).map_err(err(&name))?.1);
    }
    let bytes = 12.0 * n as f64;
    let copy = bytes / f64::from(median(copy_ms)) / 1e6;
    let fused = bytes / f64::from(median(scan_ms)) / 1e6;
    let row = |method: &str, gbps: f64| Row {
        case: name.clone(),
        method: method.to_string(),
        gbps,
        vs_copy: gbps / copy,
        vs_sequential: f64::NAN,
    };
    Ok(vec![row("GPU device copy", copy), row(method, fused)])
}
