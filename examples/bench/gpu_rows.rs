//! The GPU's many-scan calls (issue 7/11's cases): rows of f32 add and of the
//! f32 linear recurrence in one launch, and segmented f32 add by offsets and
//! by head flags, each against a device copy of the same bytes timed in the
//! same run (bench/peers.py times torch.cumsum(dim=-1) and Triton on the same
//! shapes). GB/s count the values in and out (the offsets or flags a
//! segmented scan also reads are not counted, as the bar says).
//! Before timing, every output item is checked against the reference, from a
//! poisoned output. Data are small integers, so f32 sums and the recurrence
//! (a in {-1, 0, 1}) are exact whatever the order of combination.

use scan::ops::{Add, LinearRecurrence};
use scan::{CudaOp, ScanSpec};
use scan_cuda::{Cuda, DeviceBuffer, Tuning};
use scan_testing::Rng;

use crate::Row;

fn err(name: &str) -> impl Fn(scan::Error) -> String + '_ {
    move |e| format!("{name}: {e}")
}

fn median(mut v: Vec<f32>) -> f32 {
    v.sort_by(f32::total_cmp);
    v[v.len() / 2]
}

pub(crate) fn small(r: &mut Rng) -> f32 {
    r.below(17) as f32 - 8.0
}

/// Checks `scan` against `want` from a poisoned output, then times it and a
/// copy of the same bytes, interleaved, `reps` times.
fn timed<T: Copy + PartialEq + std::fmt::Debug>(
    cuda: &Cuda,
    name: &str,
    input: &DeviceBuffer<T>,
    want: &[T],
    reps: usize,
    mut scan: impl FnMut(&mut DeviceBuffer<T>) -> scan::Result<()>,
) -> Result<Vec<Row>, String> {
    let mut out = cuda.upload(&vec![want[0]; want.len()]).map_err(err(name))?;
    // Poison: every byte 0xA5, a value no scan here produces.
    let mut poison = Vec::<T>::with_capacity(want.len());
    // SAFETY: every byte of the capacity is written; 0xA5 repeated is a valid
    // f32 and (f32, f32).
    unsafe {
        std::ptr::write_bytes(poison.as_mut_ptr(), 0xA5, want.len());
        poison.set_len(want.len());
    }
    out.upload_from(&poison).map_err(err(name))?;
    scan(&mut out).map_err(err(name))?;
    let got = out.download().map_err(err(name))?;
    if let Some(i) = (0..want.len()).find(|&i| got[i] != want[i]) {
        return Err(format!("{name}: wrong at {i}: {:?} != {:?}", got[i], want[i]));
    }
    let (mut copy_ms, mut scan_ms) = (Vec::new(), Vec::new());
    for _ in 0..reps {
        copy_ms.push(cuda.time(|| out.copy_from(input)).map_err(err(name))?.1);
        scan_ms.push(cuda.time(|| scan(&mut out)).map_err(err(name))?.1);
    }
    let bytes = 2.0 * std::mem::size_of_val(want) as f64;
    let gbps = |ms: f32| bytes / (f64::from(ms) * 1e-3) / 1e9;
    let (copy, ours) = (gbps(median(copy_ms)), gbps(median(scan_ms)));
    Ok(vec![
        Row { case: name.into(), method: "GPU device copy".into(), gbps: copy, vs_copy: 1.0, vs_sequential: f64::NAN },
        Row {
            case: name.into(),
            method: "GPU single-pass".into(),
            gbps: ours,
            vs_copy: ours / copy,
            vs_sequential: f64::NAN,
        },
    ])
}

pub(crate) fn rows_case<Op: CudaOp>(
    cuda: &Cuda,
    name: &str,
    rows: usize,
    len: usize,
    reps: usize,
    gen: impl FnMut(&mut Rng) -> Op::Item,
) -> Result<Vec<Row>, String>
where
    Op::Item: PartialEq + std::fmt::Debug,
{
    let mut rng = Rng::fresh(name);
    let x = rng.vec(rows * len, gen);
    let want = scan::reference::scan_rows::<Op>(&x, rows, ScanSpec::inclusive()).map_err(err(name))?;
    let input = cuda.upload(&x).map_err(err(name))?;
    drop(x);
    timed(cuda, name, &input, &want, reps, |out| {
        cuda.scan_rows_device_into::<Op>(&input, out, rows, ScanSpec::inclusive())
    })
}

/// Runs the cases; `reps` timed calls each. `SCAN_BENCH_ROWS_CASES=segments`
/// runs the segmented cases alone (a short device call).
pub fn run(cuda: &Cuda, reps: usize) -> Result<Vec<Row>, String> {
    let mut rows = Vec::new();
    if std::env::var("SCAN_BENCH_ROWS_CASES").as_deref() != Ok("segments") {
        for (r, l) in [(65536, 4096), (256, 1 << 20), (4096, 4096), (1 << 20, 32)] {
            let name = format!("f32 add rows {r} x {l}");
            rows.extend(rows_case::<Add<f32>>(cuda, &name, r, l, reps, small)?);
        }
        let lr = |r: &mut Rng| (r.below(3) as f32 - 1.0, small(r));
        rows.extend(rows_case::<LinearRecurrence<f32>>(
            cuda,
            "linear recurrence f32 pairs rows 65536 x 4096",
            65536,
            4096,
            reps,
            lr,
        )?);
    }

    // Segmented f32 add, 2^28 items, segment lengths uniform in [1, 2000].
    let n = 1usize << 28;
    let name = "f32 add segments 2^28, lengths 1..=2000";
    let mut rng = Rng::fresh(name);
    let x = rng.vec(n, small);
    let mut starts = vec![0usize];
    while *starts.last().unwrap_or(&0) < n {
        let next = starts.last().unwrap_or(&0) + 1 + rng.below(2000) as usize;
        starts.push(next.min(n));
    }
    let want = scan::reference::scan_segments::<Add<f32>>(&x, &starts, ScanSpec::inclusive()).map_err(err(name))?;
    let input = cuda.upload(&x).map_err(err(name))?;
    let mut heads = vec![false; n];
    for &s in starts.iter().filter(|&&s| s < n) {
        heads[s] = true;
    }
    drop(x);
    let dev_starts = cuda.upload(&starts.iter().map(|&s| s as u64).collect::<Vec<_>>()).map_err(err(name))?;
    let dev_heads = cuda.upload(&heads).map_err(err(name))?;
    drop(heads);
    rows.extend(timed(cuda, &format!("{name}, by offsets"), &input, &want, reps, |out| {
        cuda.scan_segments_device_into::<Add<f32>>(&input, out, &dev_starts, ScanSpec::inclusive())
    })?);
    rows.extend(timed(cuda, &format!("{name}, by head flags"), &input, &want, reps, |out| {
        cuda.scan_flagged_device_into::<Add<f32>>(&input, out, &dev_heads, ScanSpec::inclusive())
    })?);
    Ok(rows)
}

/// f32 rows of 65536 x 4096 under other tile shapes of the rows kernels,
/// the default first (`SCAN_BENCH_ROWS_SWEEP=1` with `--gpu-rows-only`): rows
/// of one tile run a block each (kernels/row_tiles.cuh) in 4096-item tiles of
/// several shapes; 2048-item tiles make them rows of two whole tiles, the
/// single-pass path they took before (0.93 of copy on the H200; the bar is
/// 4.0 TB/s, about 0.96). Rows of 3000 compare partial rows of one tile with
/// the segmented path that 2048-item tiles give them.
pub fn sweep(reps: usize) -> Result<Vec<Row>, String> {
    // (row length, scanning threads, items per thread; None: the default).
    let shapes: [(usize, Option<(u32, u32)>); 6] = [
        (4096, None),
        (4096, Some((128, 32))),
        (4096, Some((512, 8))),
        (4096, Some((256, 8))),
        (3000, None),
        (3000, Some((256, 8))),
    ];
    let mut rows = Vec::new();
    for (row_len, shape) in shapes {
        let (tuning, label) = match shape {
            None => (Tuning::default(), "default shape".to_string()),
            Some((threads, items)) => {
                (Tuning::default().threads(threads).items_per_thread(items), format!("{threads} x {items}"))
            }
        };
        let cuda = Cuda::new().map_err(|e| e.to_string())?.with_tuning(tuning);
        let name = format!("f32 add rows 65536 x {row_len}, {label}");
        rows.extend(rows_case::<Add<f32>>(&cuda, &name, 65536, row_len, reps, small)?);
    }
    Ok(rows)
}
