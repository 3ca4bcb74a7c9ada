//! Fused maps on the GPU (issue 8/11): the f32 linear recurrence read from
//! `a[]` and `b[]` and written to `h[]` alone (`scan_core::maps::Recurrence`,
//! 12 bytes per item), against a device copy of the same bytes timed in the
//! same run (the plain scan of (a, b) pairs, 8 bytes each way, 16 per item, is the
//! "linear recurrence f32 pairs" case of the main bench). Before timing,
//! every h is checked exactly against an f64 evaluation (a in {-1, 1}, b
//! small integers: exact whatever the grouping, check.rs), from a poisoned
//! output, and the inputs are checked unchanged.
//!
//! Also mixed precision (issue 9/11): bf16 in, f32 sums, bf16 out
//! (`scan_core::maps::WidenNarrow`), 4 bytes per item, with the largest
//! relative error against the exact prefix sums in the method column
//! (bench/peers.py --half-only times torch.cumsum on the same data).

use scan::maps::{bf16, Recurrence, WidenNarrow};
use scan::ops::{Add, LinearRecurrence};
use scan::ScanSpec;
use scan_cuda::{Cuda, DeviceBuffer};
use scan_testing::Rng;

use crate::against_copy::{against_copy, AgainstCopy, CALLS};
use crate::check::{bad_recurrence_h, sign, step};
use crate::Row;

fn err(name: &str) -> impl Fn(scan::Error) -> String + '_ {
    move |e| format!("{name}: {e}")
}

/// The fused recurrence and the bf16 sums over `2^log` items, with
/// positions fetched into registers (the default) and staged as vectors
/// (`Tuning::staged_maps`), the recurrence also through item slots instead
/// of grouped runs (`Tuning::grouped_runs(false)`) and the bf16 sums
/// through item slots instead of narrow ones (`Tuning::narrow_slots(false)`);
/// `reps` timed calls each, interleaved with the copy.
pub fn run(cuda: &Cuda, log: u32, reps: usize) -> Result<Vec<Row>, String> {
    let tuned = |t: scan_cuda::Tuning| Cuda::new().map(|c| c.with_tuning(t)).map_err(|e| e.to_string());
    let staged = tuned(scan_cuda::Tuning::default().staged_maps(true))?;
    let item_slots = tuned(scan_cuda::Tuning::default().narrow_slots(false))?;
    let ungrouped = tuned(scan_cuda::Tuning::default().grouped_runs(false))?;
    let mut rows = one(cuda, log, reps, "GPU single-pass, fused maps")?;
    rows.extend(one(&ungrouped, log, reps, "GPU single-pass, fused maps, item slots")?.into_iter().skip(1));
    rows.extend(one(&staged, log, reps, "GPU single-pass, fused maps, staged loads")?.into_iter().skip(1));
    rows.extend(bf16_sums(cuda, log, reps, "GPU single-pass, fused maps")?);
    rows.extend(bf16_sums(&item_slots, log, reps, "GPU single-pass, fused maps, item slots")?.into_iter().skip(1));
    rows.extend(bf16_sums(&staged, log, reps, "GPU single-pass, fused maps, staged loads")?.into_iter().skip(1));
    Ok(rows)
}

/// Tile shapes for the fused kernels at 2^`log` (`SCAN_BENCH_FUSED_SWEEP=1`
/// with `--gpu-fused-only`; `=bf16`: the bf16 sums' shapes alone, free and
/// deterministic look-back; `=recurrence`: the recurrence's alone): (threads, items
/// per thread, blocks per SM, stages) for the recurrence (8-byte items) and
/// for the bf16 sums (4-byte items). A shape that does not fit (or fails) is
/// reported on stderr and skipped: the other shapes still run.
pub fn sweep(log: u32, reps: usize, only: Option<&str>) -> Result<Vec<Row>, String> {
    type Shape = (u32, u32, u32, u32);
    // With grouped runs (kernels/grouped.cuh, the default where they fit
    // the registers) a stage takes a run of items per thread and nothing
    // else: 32 KiB at 256 x 16, so three stages fit two blocks per SM.
    let recurrence: [Shape; 7] = [
        (256, 16, 2, 2),
        (256, 16, 2, 3),
        (128, 16, 4, 2),
        (128, 16, 4, 3),
        (192, 16, 3, 3),
        (256, 8, 3, 4),
        (256, 8, 2, 3),
    ];
    // 64-item runs: a bf16 sum moves half the bytes of an f32 one per item,
    // so a tile's fixed costs (look-back, barriers) weigh twice as much per
    // byte; longer runs halve them again.
    // With narrow slots (kernels/narrow.cuh) a stage of 256 x 32 bf16
    // positions takes 21 KiB of shared memory instead of 37: more stages,
    // blocks or longer runs fit. (The default: 256 x 32, 3 blocks per SM, 2
    // stages.)
    let sums: [Shape; 13] = [
        (256, 32, 3, 3),
        (256, 32, 3, 4),
        (256, 32, 4, 2),
        (256, 32, 4, 3),
        (256, 64, 2, 2),
        (256, 64, 2, 3),
        (256, 64, 3, 2),
        (128, 32, 6, 2),
        (512, 32, 2, 2),
        (256, 16, 4, 4),
        (128, 64, 4, 2),
        (128, 64, 5, 2),
        (512, 32, 2, 3),
    ];
    // The deterministic look-back (groups of 32 x lookback tiles), which
    // runs plain f32 sums at 0.92 of copy with 16-item runs in 3 stages.
    let deterministic: [(Shape, u32, bool); 12] = [
        ((256, 16, 2, 2), 4, true),
        ((256, 16, 2, 2), 2, true),
        ((256, 16, 2, 2), 3, true),
        ((256, 16, 2, 3), 2, true),
        ((256, 16, 2, 3), 4, true),
        ((256, 16, 3, 3), 4, false),
        ((256, 16, 3, 3), 6, false),
        ((256, 16, 4, 3), 4, false),
        ((256, 32, 3, 2), 2, false),
        ((256, 32, 3, 3), 4, false),
        ((256, 32, 3, 2), 4, false),
        ((256, 64, 2, 2), 2, false),
    ];
    // (shape, deterministic statuses per lane, the recurrence or the sums)
    let cases = recurrence
        .into_iter()
        .map(|shape| (shape, None, true))
        .chain(sums.into_iter().map(|shape| (shape, None, false)))
        .chain(deterministic.into_iter().map(|(shape, lookback, recurrence)| (shape, Some(lookback), recurrence)))
        .filter(|&(_, _, recurrence)| match only {
            Some("bf16") => !recurrence,
            Some("recurrence") => recurrence,
            _ => true,
        });
    let mut rows = Vec::new();
    for ((threads, items, blocks, stages), lookback, recurrence) in cases {
        let mut tuning =
            scan_cuda::Tuning::default().threads(threads).items_per_thread(items).blocks_per_sm(blocks).stages(stages);
        let mut method = format!("fused maps, {threads} x {items}, {blocks} blocks/SM, {stages} stages");
        if let Some(lookback) = lookback {
            tuning = tuning.deterministic(true).lookback(lookback);
            method.push_str(&format!(", deterministic groups of {} tiles", 32 * lookback));
        }
        let cuda = Cuda::new().map_err(|e| e.to_string())?.with_tuning(tuning);
        let r = if recurrence { one(&cuda, log, reps, &method) } else { bf16_sums(&cuda, log, reps, &method) };
        match r {
            Ok(r) => {
                // As each shape finishes, so that a run cut short still
                // tells what it measured.
                for row in r.iter().skip(1) {
                    eprintln!("{}: {}: {:.1} GB/s, {:.2} of copy", row.case, row.method, row.gbps, row.vs_copy);
                }
                rows.extend(r.into_iter().skip(1));
            }
            Err(e) => eprintln!("{method}: {e}"),
        }
    }
    Ok(rows)
}

/// The inputs of the bf16 sums, as bench/peers.py builds them: the Weyl
/// sequence frac(i x 0.618...) in [0, 1), rounded to f32 and then to bf16
/// (the same two roundings on both sides), so that every prefix sum is
/// positive and its relative error means something.
fn weyl_bf16(n: usize) -> Vec<bf16> {
    (0..n).map(|i| bf16::from_f32((i as f64 * 0.618_033_988_749_895).fract() as f32)).collect()
}

/// The largest |got - exact| / exact over positions 1024 and up (the
/// sums in f64: exact but for roundings far below the bf16 result's).
fn max_relative_error(x: &[bf16], got: &[bf16]) -> f64 {
    let mut exact = 0.0f64;
    let mut worst = 0.0f64;
    for (i, (xi, gi)) in x.iter().zip(got).enumerate() {
        exact += xi.to_f64();
        if i >= 1024 {
            let e = (gi.to_f64() - exact).abs() / exact;
            // A NaN result is the worst error, not one that f64::max skips.
            worst = if e.is_nan() { f64::INFINITY } else { worst.max(e) };
        }
    }
    worst
}

/// Inclusive sums of `2^log` bf16 items accumulated in f32 and written as
/// bf16, against a copy of 4 bytes per item in the same run.
fn bf16_sums(cuda: &Cuda, log: u32, reps: usize, method: &str) -> Result<Vec<Row>, String> {
    let name = format!("bf16 add, f32 sums, bf16 out (4 B/item) 2^{log}");
    let n = 1usize << log;
    let x = weyl_bf16(n);
    let dx = cuda.upload(&x).map_err(err(&name))?;
    let mut y: DeviceBuffer<bf16> = cuda.upload(&vec![bf16::NAN; n]).map_err(err(&name))?;
    let spec = ScanSpec::inclusive();
    let scan =
        |y: &mut DeviceBuffer<bf16>| cuda.scan_mapped_device_into::<Add<f32>, WidenNarrow<bf16>, _>(&dx, y, spec);
    scan(&mut y).map_err(err(&name))?;
    let worst = max_relative_error(&x, &y.download().map_err(err(&name))?);
    // bf16 rounds to 2^-8 relative at worst (8 significant bits); f32 sums
    // add far less at these sizes.
    if worst > 2.0f64.powi(-7) {
        return Err(format!("{name}: relative error {worst:.3e}, above 2^-7"));
    }
    if dx.download().map_err(err(&name))? != x {
        return Err(format!("{name}: the scan changed its input"));
    }
    drop(x);
    let rates = against_copy(cuda, 4 * n, reps, || scan(&mut y)).map_err(err(&name))?;
    Ok(rows_of(&rates, &name, method, &format!(" (max relative error {worst:.2e})")))
}

/// The copy's row, the scan's one-call row (`detail` appended to its method)
/// and its back-to-back row, each against its own copy rate.
fn rows_of(rates: &AgainstCopy, case: &str, method: &str, detail: &str) -> Vec<Row> {
    let row = |method: String, ms: f64, copy_ms: f64| Row {
        case: case.to_string(),
        method,
        gbps: rates.gbps(ms),
        vs_copy: copy_ms / ms,
        vs_sequential: f64::NAN,
    };
    vec![
        row("GPU device copy".to_string(), rates.copy_ms, rates.copy_ms),
        row(format!("{method}{detail}"), rates.call_ms, rates.copy_ms),
        row(
            format!("{method}, back to back ({CALLS} calls per two events; the copy too)"),
            rates.calls_ms,
            rates.copies_ms,
        ),
    ]
}

fn one(cuda: &Cuda, log: u32, reps: usize, method: &str) -> Result<Vec<Row>, String> {
    let name = format!("linear recurrence f32 fused, a[] b[] -> h[] (12 B/item) 2^{log}");
    recurrence(cuda, &name, 1, 1 << log, reps, method)
}

/// The fused recurrence by rows (`Cuda::scan_mapped_rows`, each row on its
/// own), `rows` x `row_len`: rows of whole tiles take the plain code path,
/// others are segments.
pub fn by_rows(cuda: &Cuda, rows: usize, row_len: usize, reps: usize) -> Result<Vec<Row>, String> {
    let name = format!("linear recurrence f32 fused by rows, a[] b[] -> h[] (12 B/item) {rows} x {row_len}");
    recurrence(cuda, &name, rows, row_len, reps, "GPU single-pass, fused maps by rows")
}

/// The fused recurrence over `rows` rows of `row_len` (one row: the plain
/// mapped scan), every row checked exactly against an f64 evaluation and the inputs
/// checked unchanged first, then timed against a copy of 12 bytes an item.
fn recurrence(
    cuda: &Cuda,
    name: &str,
    rows: usize,
    row_len: usize,
    reps: usize,
    method: &str,
) -> Result<Vec<Row>, String> {
    let n = rows * row_len;
    let mut rng = Rng::fresh(name);
    // Decays of -1 or 1 and small integer steps: every h exact (check.rs).
    let a = rng.vec(n, sign);
    let b = rng.vec(n, step);
    let (da, db) = (cuda.upload(&a).map_err(err(name))?, cuda.upload(&b).map_err(err(name))?);
    let mut h: DeviceBuffer<f32> = cuda.upload(&vec![f32::NAN; n]).map_err(err(name))?;
    let spec = ScanSpec::inclusive();
    let scan = |h: &mut DeviceBuffer<f32>| {
        if rows == 1 {
            cuda.scan_mapped_device_into::<LinearRecurrence<f32>, Recurrence, _>((&da, &db), h, spec)
        } else {
            cuda.scan_mapped_rows_device_into::<LinearRecurrence<f32>, Recurrence, _>((&da, &db), h, rows, spec)
        }
    };
    scan(&mut h).map_err(err(name))?;
    let got = h.download().map_err(err(name))?;
    for r in 0..rows {
        let row = r * row_len..(r + 1) * row_len;
        if let Some(t) = bad_recurrence_h(&a[row.clone()], &b[row.clone()], &got[row]) {
            return Err(format!("{name}: row {r} is wrong at {t}"));
        }
    }
    if da.download().map_err(err(name))? != a || db.download().map_err(err(name))? != b {
        return Err(format!("{name}: the fused scan changed an input"));
    }
    drop((a, b, got));
    let rates = against_copy(cuda, 12 * n, reps, || scan(&mut h)).map_err(err(name))?;
    Ok(rows_of(&rates, name, method, ""))
}
