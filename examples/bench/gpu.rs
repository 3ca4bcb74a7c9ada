//! The GPU section: both GPU algorithms (single-pass and Blelloch) against a
//! device-to-device copy of the same bytes, timed with CUDA events in the same
//! run, on the cases of DESIGN.md's performance table; the latency of a small
//! scan; f32 add over sizes 2^12 to 2^30 (a CSV for the plot); and, with
//! `--gpu-policies`, a sweep of single-pass tile shapes.
//!
//! Every scan is inclusive, forward and out of place between two device
//! buffers (`Cuda::scan_device_into`: the input is read, every output item is
//! written, nothing is copied first). A timed region is one call between two
//! events: the launch and the kernel, as torch.cumsum is timed beside it
//! (bench/peers.py). GB/s count the bytes a scan must read and write: input +
//! output items (for the f32 recurrence, the whole (a, b) pair in and out: 16 B
//! per item). Before timing, each algorithm scans into a poisoned output and
//! every item is checked, exactly (f32 sums and recurrences run on small
//! integers, exact whatever the grouping: check.rs), and the input must come
//! back unchanged.

use std::fmt::Write as _;
use std::time::Instant;

use scan::{scan_op, CudaOp, ScanSpec};
use scan_cuda::{Algorithm, Cuda, DeviceBuffer, SinglePassPolicy, StatusLayout, Tuning};
use scan_testing::Rng;

use crate::against_copy::CALLS;
use crate::check::{bad_recurrence, bad_sum, sign, step};
use crate::{Args, Row};

use scan::ops::{Add, LinearRecurrence, Max};

/// The Hamilton product of quaternions (w, x, y, z): a 32-byte,
/// non-commutative item.
#[scan_op(identity = [1.0, 0.0, 0.0, 0.0])]
fn quaternion_product(l: [f64; 4], r: [f64; 4]) -> [f64; 4] {
    [
        l[0] * r[0] - l[1] * r[1] - l[2] * r[2] - l[3] * r[3],
        l[0] * r[1] + l[1] * r[0] + l[2] * r[3] - l[3] * r[2],
        l[0] * r[2] - l[1] * r[3] + l[2] * r[0] + l[3] * r[1],
        l[0] * r[3] + l[1] * r[2] - l[2] * r[1] + l[3] * r[0],
    ]
}

/// What the GPU section reports besides the table rows.
pub struct Report {
    pub about: String,
    pub rows: Vec<Row>,
    /// Extra sections (latency, policy sweep), already formatted.
    pub notes: String,
}

/// Runs every GPU case.
pub fn run(args: &Args) -> Result<Report, String> {
    let executors: Vec<Cuda> = Algorithm::ALL
        .into_iter()
        .map(|a| Cuda::new().map(|c| c.with_algorithm(a)))
        .collect::<Result<_, _>>()
        .map_err(|e| e.to_string())?;
    let cuda = &executors[0];
    let mut rng = Rng::fresh("gpu bench");
    let mut rows = Vec::new();
    let mut notes = String::new();
    if args.gpu_policies_only {
        policies(&mut rng, args, &mut notes)?;
        let about = format!(
            "GPU: {cuda}: single-pass policies only, one call between two CUDA events, median of {}",
            args.reps
        );
        return Ok(Report { about, rows, notes });
    }
    if args.gpu_selective_only {
        let (r, note) = crate::gpu_selective::run(cuda, args.reps)?;
        let about =
            format!("GPU: {cuda}: the selective scan only, one call between two CUDA events (counts in the notes)");
        return Ok(Report { about, rows: r, notes: note });
    }
    if args.gpu_fused_only {
        let mut rows = Vec::new();
        // SCAN_BENCH_FUSED_LOGS=28 (say) for one size: device time is short.
        let logs: Vec<u32> = std::env::var("SCAN_BENCH_FUSED_LOGS")
            .ok()
            .map(|v| v.split(',').filter_map(|s| s.trim().parse().ok()).collect())
            .unwrap_or_else(|| vec![24, 28]);
        for log in logs {
            rows.extend(crate::gpu_fused::run(cuda, log, args.reps)?);
        }
        // By rows: whole tiles (the plain path) and not (segments), 2^28
        // items each. (Skipped with SCAN_BENCH_FUSED_ROWS=0.)
        if std::env::var("SCAN_BENCH_FUSED_ROWS").as_deref() != Ok("0") {
            for (count, row_len) in [(65536, 4096), (262_144, 1024)] {
                rows.extend(crate::gpu_fused::by_rows(cuda, count, row_len, args.reps)?);
            }
        }
        if let Ok(sweep) = std::env::var("SCAN_BENCH_FUSED_SWEEP") {
            rows.extend(crate::gpu_fused::sweep(28, args.reps, Some(sweep.as_str()))?);
        }
        let about = format!(
            "GPU: {cuda}: fused maps only, single-pass, one call between two CUDA events (back to back: {CALLS} calls), \
             median of {}",
            args.reps
        );
        return Ok(Report { about, rows, notes });
    }
    if args.gpu_rows_only {
        // SCAN_BENCH_ROWS_SWEEP=1 adds tile shapes for one case; =only times them alone.
        let sweep = std::env::var("SCAN_BENCH_ROWS_SWEEP").ok();
        if sweep.as_deref() != Some("only") {
            rows = crate::gpu_rows::run(cuda, args.reps)?;
        }
        if sweep.is_some() {
            rows.extend(crate::gpu_rows::sweep(args.reps)?);
        }
        let about = format!(
            "GPU: {cuda}: rows and segments only, single-pass, one call between two CUDA events, median of {}",
            args.reps
        );
        return Ok(Report { about, rows, notes });
    }
    if args.gpu_latency_only {
        latency(cuda, &mut rng, args, &mut notes)?;
        let about = format!("GPU: {cuda}: time per call only (f32 add 2^16 and 2^24; counts in the notes)");
        return Ok(Report { about, rows, notes });
    }
    if args.gpu_host_only {
        host(&mut rng, args, &mut notes)?;
        let about = format!("GPU: {cuda}: scans of host slices only (counts in the notes)");
        return Ok(Report { about, rows, notes });
    }

    // f32 add also with the deterministic look-back (issue 9/11).
    let with_deterministic: Vec<Cuda> = Algorithm::ALL
        .into_iter()
        .map(|a| Cuda::new().map(|c| c.with_algorithm(a)))
        .chain([Cuda::new().map(|c| c.with_deterministic(true)), Cuda::new().map(|c| c.with_deterministic(false))])
        .collect::<Result<_, _>>()
        .map_err(|e| e.to_string())?;
    // f32 sums and recurrences of small integers: every grouping exact, every
    // result checked exactly (check.rs).
    for log in [24u32, 28] {
        let n = 1usize << log;
        let x = rng.vec(n, step);
        rows.extend(case::<Add<f32>>(&with_deterministic, &format!("f32 add 2^{log}"), &x, args.reps, |got| {
            bad_sum(&x, got)
        })?);
    }
    let n = 1usize << 28;
    let x = rng.vec(n, |r| r.next_u64() as i32);
    let want = scan::reference::scan::<Add<i32>>(&x, ScanSpec::inclusive());
    rows.extend(case::<Add<i32>>(&executors, "i32 add 2^28", &x, args.reps, |got| {
        (0..n).find(|&i| got[i] != want[i])
    })?);
    drop((x, want));
    let x = rng.vec(n, |r| r.range_f64(-1e6, 1e6) as f32);
    let want = scan::reference::scan::<Max<f32>>(&x, ScanSpec::inclusive());
    rows.extend(case::<Max<f32>>(&executors, "f32 max 2^28", &x, args.reps, |got| {
        (0..n).find(|&i| got[i] != want[i])
    })?);
    drop((x, want));
    let x = rng.vec(n, |r| (sign(r), step(r)));
    rows.extend(case::<LinearRecurrence<f32>>(
        &executors,
        "linear recurrence f32 pairs (8 B items) 2^28",
        &x,
        args.reps,
        |got| bad_recurrence(&x, got),
    )?);
    drop(x);
    let x = rng.vec(n, |r| (f64::from(sign(r)), f64::from(step(r))));
    rows.extend(case::<LinearRecurrence<f64>>(
        &executors,
        "linear recurrence f64 pairs (16 B items) 2^28",
        &x,
        args.reps,
        |got| bad_recurrence(&x, got),
    )?);
    drop(x);
    // Signed unit quaternions: a group under the product, so exact.
    let n = 1usize << 27;
    let x = rng.vec(n, |r| {
        let mut q = [0.0; 4];
        q[r.below(4) as usize] = if r.below(2) == 0 { -1.0 } else { 1.0 };
        q
    });
    let want = scan::reference::scan::<QuaternionProduct>(&x, ScanSpec::inclusive());
    rows.extend(case::<QuaternionProduct>(
        &executors,
        "quaternion product f64 (32 B items) 2^27",
        &x,
        args.reps,
        |got| (0..n).find(|&i| got[i] != want[i]),
    )?);
    drop((x, want));

    if !args.gpu_scans_only {
        rows.extend(crate::gpu_fused::run(cuda, 28, args.reps)?);
        rows.extend(crate::gpu_rows::run(cuda, args.reps)?);
        let (r, note) = crate::gpu_selective::run(cuda, args.reps)?;
        rows.extend(r);
        notes.push_str(&note);
    }
    latency(cuda, &mut rng, args, &mut notes)?;
    sweep(cuda, &mut rng, args, &mut notes)?;
    if !args.gpu_scans_only {
        host(&mut rng, args, &mut notes)?;
    }
    if args.gpu_policies {
        policies(&mut rng, args, &mut notes)?;
    }

    let about = format!(
        "GPU: {cuda}, NVRTC {}.{}; single-pass = decoupled look-back, one launch (default policy for f32: {:?}); \
         Blelloch = multi-block (scan tiles + totals, scan totals, add prefixes); inclusive forward, out of place; \
         copy = device-to-device memcpy of the same bytes; one call between two CUDA events, median of {reps} \
         (fused maps' back to back: {CALLS} calls between two events, median of {reps}); replayed rows: {calls} calls \
         in a CUDA graph, median of {reps} replays; the sections below say their own counts; {}",
        cuda.nvrtc_version().0,
        cuda.nvrtc_version().1,
        SinglePassPolicy::plain_default(4, 90).map_err(|e| e.to_string())?,
        cuda.compile_stats(),
        reps = args.reps,
        calls = args.reps.max(2),
    );
    Ok(Report { about, rows, notes })
}

fn median(mut v: Vec<f32>) -> f32 {
    v.sort_by(f32::total_cmp);
    v[v.len() / 2]
}

fn err(name: &str) -> impl Fn(scan::Error) -> String + '_ {
    move |e| format!("{name}: {e}")
}

/// Scans `pristine` into a poisoned `work` on `cuda`, checks every item with
/// `bad` and that the input is unchanged.
fn checked<Op: CudaOp>(
    cuda: &Cuda,
    name: &str,
    input: &[Op::Item],
    pristine: &DeviceBuffer<Op::Item>,
    work: &mut DeviceBuffer<Op::Item>,
    bad: &impl Fn(&[Op::Item]) -> Option<usize>,
) -> Result<(), String>
where
    Op::Item: PartialEq,
{
    let mut poison = Vec::<Op::Item>::with_capacity(input.len());
    // SAFETY: the capacity holds input.len() items, all of whose bytes are
    // written; 0xA5 repeated is a valid item of every case (floats and
    // integers and aggregates of them).
    unsafe {
        std::ptr::write_bytes(poison.as_mut_ptr(), 0xA5, input.len());
        poison.set_len(input.len());
    }
    *work = cuda.upload(&poison).map_err(err(name))?;
    cuda.scan_device_into::<Op>(pristine, work, ScanSpec::inclusive()).map_err(err(name))?;
    if let Some(i) = bad(&work.download().map_err(err(name))?) {
        return Err(format!("{name}: the GPU {} scan is wrong at index {i}", cuda.algorithm()));
    }
    // The inputs hold no NaN (drawn from ranges), so `!=` sees any change.
    if pristine.download().map_err(err(name))? != input {
        return Err(format!("{name}: the GPU {} scan changed its input", cuda.algorithm()));
    }
    Ok(())
}

/// Times a device copy and each executor's scan of `input`, interleaved,
/// `reps` times after the checked warm-up.
fn case<Op: CudaOp>(
    executors: &[Cuda],
    name: &str,
    input: &[Op::Item],
    reps: usize,
    bad: impl Fn(&[Op::Item]) -> Option<usize>,
) -> Result<Vec<Row>, String>
where
    Op::Item: PartialEq,
{
    let cuda = &executors[0];
    let pristine = cuda.upload(input).map_err(err(name))?;
    // A buffer of the right length whatever the item type; poisoned before use.
    let mut work: DeviceBuffer<Op::Item> = cuda.upload(input).map_err(err(name))?;
    for e in executors {
        e.prepare::<Op>().map_err(err(name))?;
        checked::<Op>(e, name, input, &pristine, &mut work, &bad)?;
    }
    let spec = ScanSpec::inclusive();
    let mut copy_ms = Vec::with_capacity(reps);
    let mut scan_ms = vec![Vec::with_capacity(reps); executors.len()];
    for _ in 0..reps {
        copy_ms.push(cuda.time(|| work.copy_from(&pristine)).map_err(err(name))?.1);
        for (e, ms) in executors.iter().zip(&mut scan_ms) {
            ms.push(e.time(|| e.scan_device_into::<Op>(&pristine, &mut work, spec)).map_err(err(name))?.1);
        }
    }
    let bytes = 2.0 * std::mem::size_of_val(input) as f64;
    let gbps = |ms: f32| bytes / (f64::from(ms) * 1e-3) / 1e9;
    let copy = gbps(median(copy_ms));
    let mut rows = vec![Row {
        case: name.into(),
        method: "GPU device copy".into(),
        gbps: copy,
        vs_copy: 1.0,
        vs_sequential: f64::NAN,
    }];
    for (e, ms) in executors.iter().zip(scan_ms) {
        let g = gbps(median(ms));
        rows.push(Row {
            case: name.into(),
            method: match e.tuning().deterministic_setting() {
                Some(true) => format!("GPU {} deterministic", e.algorithm()),
                Some(false) => format!("GPU {}, free look-back", e.algorithm()),
                None => format!("GPU {}", e.algorithm()),
            },
            gbps: g,
            vs_copy: g / copy,
            vs_sequential: f64::NAN,
        });
    }
    rows.extend(replayed_case::<Op>(cuda, name, input, reps, copy, &bad)?);
    // As they come, so that a run cut short still shows them.
    for r in &rows {
        eprintln!("| {} | {} | {:.1} | {:.2} |", r.case, r.method, r.gbps, r.vs_copy);
    }
    Ok(rows)
}

/// Milliseconds per call of `Op`'s inclusive scan of `input` and of a copy
/// of its bytes on `cuda` (an executor with a stream of its own), each
/// `calls` calls recorded in a CUDA graph, the median of `replays` replays
/// (`Cuda::time_replayed`: device time with no host cost between calls, as
/// bench/peers.py times torch.cumsum replayed); the scan is checked before
/// and after its replays.
fn replayed_ms<Op: CudaOp>(
    cuda: &Cuda,
    name: &str,
    input: &[Op::Item],
    calls: usize,
    replays: usize,
    bad: &impl Fn(&[Op::Item]) -> Option<usize>,
) -> Result<(f32, f32), String>
where
    Op::Item: PartialEq,
{
    let pristine = cuda.upload(input).map_err(err(name))?;
    let mut work: DeviceBuffer<Op::Item> = cuda.upload(input).map_err(err(name))?;
    checked::<Op>(cuda, name, input, &pristine, &mut work, bad)?;
    let spec = ScanSpec::inclusive();
    let scan_ms = cuda
        .time_replayed(calls, replays, || cuda.scan_device_into::<Op>(&pristine, &mut work, spec))
        .map_err(err(name))?;
    if let Some(i) = bad(&work.download().map_err(err(name))?) {
        return Err(format!("{name}: the replayed GPU {} scans are wrong at index {i}", cuda.algorithm()));
    }
    let copy_ms = cuda.time_replayed(calls, replays, || work.copy_from(&pristine)).map_err(err(name))?;
    Ok((scan_ms, copy_ms))
}

/// The first executor's scan and a copy as [`case`] times them, but replayed
/// ([`replayed_ms`]: `reps` calls, the median of `reps` replays) on a twin
/// executor with a stream of its own. Both rows' x copy is against
/// `one_call_copy`, the GB/s of [`case`]'s one-call copy in the same run: a
/// copy recorded in a graph runs as a memcpy node on a copy engine, slower
/// than the copy a call runs (2.43 TB/s against about 2.93 at 2^28 in a 5/11
/// table of bench/gpu-h200-results.md), and as the baseline it put replayed
/// scans at 1.07-1.23 of copy. The replayed copy is still shown, labelled.
fn replayed_case<Op: CudaOp>(
    like: &Cuda,
    name: &str,
    input: &[Op::Item],
    reps: usize,
    one_call_copy: f64,
    bad: &impl Fn(&[Op::Item]) -> Option<usize>,
) -> Result<Vec<Row>, String>
where
    Op::Item: PartialEq,
{
    let cuda = own_stream()?.with_algorithm(like.algorithm()).with_tuning(like.tuning());
    let calls = reps.max(2);
    let (scan_ms, copy_ms) = replayed_ms::<Op>(&cuda, name, input, calls, reps, bad)?;
    let bytes = 2.0 * std::mem::size_of_val(input) as f64;
    let gbps = |ms: f32| bytes / (f64::from(ms) * 1e-3) / 1e9;
    let (copy, scan) = (gbps(copy_ms), gbps(scan_ms));
    let row = |method: String, gbps: f64| Row {
        case: name.into(),
        method,
        gbps,
        vs_copy: gbps / one_call_copy,
        vs_sequential: f64::NAN,
    };
    Ok(vec![
        row(
            "GPU device copy, replayed (a memcpy node: a copy engine; x copy: against the one-call copy, not a baseline)"
                .into(),
            copy,
        ),
        row(
            format!(
                "GPU {}, replayed ({calls} calls in a CUDA graph, median of {reps} replays; x copy: against the \
                 one-call device copy)",
                cuda.algorithm()
            ),
            scan,
        ),
    ])
}

/// The time per call of f32 add at 2^16 (latency) and 2^24 (where launch
/// costs are still a tenth of the call), and of a device copy of the same
/// bytes, measured three ways, as bench/peers.py measures torch.cumsum
/// beside them: one call between two events (median of 1000 at 2^16, of
/// `reps` at 2^24); back to back (`calls` calls between one pair of events,
/// so the events' own cost and the launch latency overlap the previous
/// call's kernel; median of `reps` such runs), the time per call a loop of
/// scans sees; and replayed (`calls` calls recorded in a CUDA graph, the
/// graph replayed between two events, median of `reps` replays: no host cost
/// at all, on an executor with a stream of its own, `Cuda::time_replayed`).
fn latency(cuda: &Cuda, rng: &mut Rng, args: &Args, notes: &mut String) -> Result<(), String> {
    let _ = writeln!(
        notes,
        "\n## Time per call: f32 add of 2^16 and 2^24 items, one call, back to back and replayed\n\n\
         one call: between two events, median of 1000 (2^16) or of {reps} (2^24); back to back: 1000 (2^16) or 100 \
         (2^24) calls between two events, per call, median of {reps} such runs; replayed: the same calls recorded in a \
         CUDA graph, one replay between two events, per call, median of {reps} replays (the copy's replayed column is a \
         memcpy node in the graph, \
         run by a copy engine, slower than the copy a call runs: not the replayed scans' baseline)\n\n\
         | n | method | us per call (one call) | us per call (back to back) | us per call (replayed) | GB/s (one call) \
         | GB/s (back to back) | GB/s (replayed) |\n\
         |---|---|---:|---:|---:|---:|---:|---:|",
        reps = args.reps
    );
    // The default executor, then any tile shapes named by
    // SCAN_BENCH_LATENCY_SHAPES (for tuning the policy at these sizes).
    let mut executors = vec![(format!("GPU {}", cuda.algorithm()), None)];
    for (label, tuning) in latency_shapes()? {
        executors.push((label, Some(own_stream()?.with_tuning(tuning))));
    }
    // The default executor's scans replayed from a graph: the same tuning
    // on a stream of its own (a graph cannot record the default stream).
    let replayer = own_stream()?.with_algorithm(cuda.algorithm()).with_tuning(cuda.tuning());
    for (log, single_reps, calls) in [(16u32, 1000usize, 1000usize), (24, args.reps, 100)] {
        let name = &format!("f32 add 2^{log} time per call");
        let x = rng.vec(1 << log, step);
        let pristine = cuda.upload(&x).map_err(err(name))?;
        let mut work = cuda.upload(&x).map_err(err(name))?;
        let one_call = |f: &mut dyn FnMut() -> scan::Result<()>| one_call_us(cuda, name, single_reps, f);
        let back_to_back = |f: &mut dyn FnMut() -> scan::Result<()>| back_to_back_us(cuda, name, calls, args.reps, f);
        let gbps = |us: f32| 8.0 * x.len() as f64 / (f64::from(us) * 1e-6) / 1e9;
        let mut lines = Vec::new();
        // The default executor's replayed copy, timed with its replayed scan.
        let mut copy_replayed = f32::NAN;
        for (method, tuned) in &executors {
            // Buffers of the default executor's context: a tuned executor
            // opens its own, with copies of the input.
            let times = match tuned {
                None => {
                    let bad = |got: &[f32]| bad_sum(&x, got);
                    checked::<Add<f32>>(cuda, name, &x, &pristine, &mut work, &bad)?;
                    let mut scan = || cuda.scan_device_into::<Add<f32>>(&pristine, &mut work, ScanSpec::inclusive());
                    let (scan_ms, copy_ms) = replayed_ms::<Add<f32>>(&replayer, name, &x, calls, args.reps, &bad)?;
                    copy_replayed = copy_ms * 1e3;
                    (one_call(&mut scan)?, back_to_back(&mut scan)?, scan_ms * 1e3)
                }
                Some(other) => tuned_latency(other, name, &x, single_reps, calls, args.reps)?,
            };
            lines.push((method.clone(), times));
        }
        let mut copy = || work.copy_from(&pristine);
        let copies = (one_call(&mut copy)?, back_to_back(&mut copy)?, copy_replayed);
        // (Its replayed figure is a memcpy node in the graph, run by a copy
        // engine: slower than the copy a call runs, so not the baseline of
        // the replayed scans.)
        lines.push(("GPU device copy (replayed: a memcpy node, on a copy engine)".into(), copies));
        for (method, (one, b2b, replay)) in lines {
            let line = format!(
                "| 2^{log} | {method} | {one:.2} | {b2b:.2} | {replay:.2} | {:.0} | {:.0} | {:.0} |",
                gbps(one),
                gbps(b2b),
                gbps(replay)
            );
            eprintln!("{line}");
            let _ = writeln!(notes, "{line}");
        }
    }
    Ok(())
}

/// `SCAN_BENCH_LATENCY_SHAPES`: tile shapes for [`latency`], each
/// `threads:items:lookback:blocks_per_sm:stages:early(0/1):deterministic(0/1)`,
/// separated by commas.
fn latency_shapes() -> Result<Vec<(String, Tuning)>, String> {
    let Ok(list) = std::env::var("SCAN_BENCH_LATENCY_SHAPES") else {
        return Ok(Vec::new());
    };
    list.split(',')
        .filter(|s| !s.trim().is_empty())
        .map(|s| {
            let v: Vec<u32> = s
                .split(':')
                .map(|p| p.trim().parse::<u32>())
                .collect::<Result<_, _>>()
                .map_err(|e| format!("SCAN_BENCH_LATENCY_SHAPES: {s:?}: {e}"))?;
            let [threads, items, lookback, blocks, stages, early, deterministic] = v[..] else {
                return Err(format!("SCAN_BENCH_LATENCY_SHAPES: {s:?}: want 7 numbers"));
            };
            let tuning = Tuning::default()
                .threads(threads)
                .items_per_thread(items)
                .lookback(lookback)
                .blocks_per_sm(blocks)
                .stages(stages)
                .early_loads(early != 0)
                .deterministic(deterministic != 0);
            let mode = if deterministic != 0 { "deterministic" } else { "free" };
            let early = if early != 0 { ", early loads" } else { "" };
            let label =
                format!("{threads} x {items}, {lookback}/lane, {blocks} blocks/SM, {stages} stages{early}, {mode}");
            Ok((label, tuning))
        })
        .collect()
}

/// A new executor with a stream of its own (`Cuda::with_own_stream`).
fn own_stream() -> Result<Cuda, String> {
    Cuda::new().and_then(Cuda::with_own_stream).map_err(|e| e.to_string())
}

/// One call, back to back and replayed (as [`latency`]: medians of `runs`
/// runs and replays) of f32 add on `cuda` (an executor with a stream of its
/// own), after a checked call.
fn tuned_latency(
    cuda: &Cuda,
    name: &str,
    x: &[f32],
    single_reps: usize,
    calls: usize,
    runs: usize,
) -> Result<(f32, f32, f32), String> {
    let pristine = cuda.upload(x).map_err(err(name))?;
    let mut work = cuda.upload(x).map_err(err(name))?;
    let bad = |got: &[f32]| bad_sum(x, got);
    checked::<Add<f32>>(cuda, name, x, &pristine, &mut work, &bad)?;
    let mut scan = || cuda.scan_device_into::<Add<f32>>(&pristine, &mut work, ScanSpec::inclusive());
    let one = one_call_us(cuda, name, single_reps, &mut scan)?;
    let b2b = back_to_back_us(cuda, name, calls, runs, &mut scan)?;
    Ok((one, b2b, replayed_ms::<Add<f32>>(cuda, name, x, calls, runs, &bad)?.0 * 1e3))
}

/// Microseconds per call of `work`, one call between two events: the median
/// of `reps`.
fn one_call_us(
    cuda: &Cuda,
    name: &str,
    reps: usize,
    work: &mut dyn FnMut() -> scan::Result<()>,
) -> Result<f32, String> {
    let mut us = Vec::new();
    for _ in 0..reps {
        us.push(cuda.time(&mut *work).map_err(err(name))?.1 * 1e3);
    }
    Ok(median(us))
}

/// Microseconds per call of `work`, `calls` calls back to back between two
/// events: the median of `runs` such runs.
fn back_to_back_us(
    cuda: &Cuda,
    name: &str,
    calls: usize,
    runs: usize,
    work: &mut dyn FnMut() -> scan::Result<()>,
) -> Result<f32, String> {
    let mut per_call = Vec::new();
    for _ in 0..runs {
        let ((), ms) = cuda
            .time(|| {
                for _ in 0..calls {
                    work()?;
                }
                Ok(())
            })
            .map_err(err(name))?;
        per_call.push(ms * 1e3 / calls as f32);
    }
    Ok(median(per_call))
}

/// f32 add from a host `Vec` into a host `Vec` (the staged path: chunks
/// through pinned buffers, copies and scans overlapped) against the pinned
/// link's bound measured in the same run, for the default chunking and
/// fixed chunk sizes; and for comparison a whole upload, the scan and a
/// whole download, by unstaged driver copies (pageable memory) and by
/// `Cuda::upload`/`Cuda::download` (staged, but not overlapped with the scan).
fn host(rng: &mut Rng, args: &Args, notes: &mut String) -> Result<(), String> {
    let _ = writeln!(
        notes,
        "\n## f32 add from a host Vec to a host Vec, against the pinned link\n\n\
         bound = input bytes / pinned host->device rate + output bytes / pinned device->host rate, both measured \
         after the checked call (fastest of 3 copies of the same bytes); x bound = bound time / scan time (above 1: the copies \
         in and out overlapped). Median of {} calls after a checked one.\n\n\
         | n | link (GB/s h2d / d2h) | method | ms | GB/s (in + out) | x bound |\n|---|---|---|---:|---:|---:|",
        args.reps
    );
    let mib = |m: usize| m << 20;
    for log in [24u32, 28] {
        let name = format!("host 2^{log}");
        let n = 1usize << log;
        let x = rng.vec(n, step);
        let mut out = vec![0f32; n];
        let bytes = std::mem::size_of_val(x.as_slice());
        let mut methods: Vec<(String, Option<usize>)> =
            vec![("staged, default chunks (1/8 of the input, 4 to 16 MiB)".into(), None)];
        methods.extend([1, 4, 8, 16, 32].map(|m| (format!("staged, {m} MiB chunks"), Some(mib(m)))));
        methods.push(("unstaged (pageable copies)".into(), Some(0)));
        methods.push(("Cuda::upload, scan, Cuda::download (staged copies, one after another)".into(), Some(1)));
        for (method, chunk) in methods {
            let cuda = Cuda::new().map_err(err(&name))?;
            let cuda = match chunk {
                Some(0 | 1) | None => cuda,
                Some(b) => cuda.with_tuning(scan_cuda::Tuning::default().host_chunk_bytes(b)),
            };
            let run = |out: &mut [f32]| -> Result<(), String> {
                if chunk == Some(0) {
                    // (The output allocated, not uploaded: one copy in, one out.)
                    let mut dev_in = cuda.alloc::<f32>(x.len()).map_err(err(&name))?;
                    dev_in.upload_from(&x).map_err(err(&name))?;
                    let mut dev_out = cuda.alloc::<f32>(x.len()).map_err(err(&name))?;
                    cuda.scan_device_into::<Add<f32>>(&dev_in, &mut dev_out, ScanSpec::inclusive())
                        .map_err(err(&name))?;
                    dev_out.download_into(out).map_err(err(&name))
                } else if chunk == Some(1) {
                    let dev_in = cuda.upload(&x).map_err(err(&name))?;
                    let mut dev_out = cuda.alloc::<f32>(x.len()).map_err(err(&name))?;
                    cuda.scan_device_into::<Add<f32>>(&dev_in, &mut dev_out, ScanSpec::inclusive())
                        .map_err(err(&name))?;
                    cuda.download_into(&dev_out, out).map_err(err(&name))
                } else {
                    cuda.scan_into::<Add<f32>>(&x, out, ScanSpec::inclusive()).map_err(err(&name))
                }
            };
            run(&mut out)?;
            // (The output zeroed first: an unwritten zero fails the exact check.)
            if let Some(i) = bad_sum(&x, &out) {
                return Err(format!("{name}, {method}: wrong at index {i}"));
            }
            // The link after the checked run, on a warm context: measured
            // first, the 2^24 default row once saw 22.8 GB/s host to device
            // against 55 for every other row, and a bound that flattered the
            // scan (x bound 1.26).
            let link = cuda.transfer_rates(bytes).map_err(err(&name))?;
            let bound = link.bound_seconds(bytes, bytes);
            let mut times = Vec::new();
            for _ in 0..args.reps {
                let start = Instant::now();
                run(&mut out)?;
                times.push(start.elapsed().as_secs_f32() * 1e3);
            }
            let ms = median(times);
            let _ = writeln!(
                notes,
                "| 2^{log} | {:.1} / {:.1} | {method} | {ms:.2} | {:.1} | {:.2} |",
                link.host_to_device,
                link.device_to_host,
                2.0 * bytes as f64 / (f64::from(ms) * 1e-3) / 1e9,
                bound * 1e3 / f64::from(ms)
            );
        }
    }
    Ok(())
}

/// Calls per method in the size sweep up to 2^20 items, where a call takes
/// microseconds (`--reps` above).
const SWEEP_SMALL_REPS: usize = 200;

/// f32 add over 2^12 to 2^30 items, single-pass against the copy; written to
/// `--sweep-out` as CSV for bench/plot.py and summarised in the notes.
fn sweep(cuda: &Cuda, rng: &mut Rng, args: &Args, notes: &mut String) -> Result<(), String> {
    let mut csv = String::from("n,method,gbps\n");
    let _ = writeln!(
        notes,
        "\n## f32 add by size (single-pass vs device copy)\n\n\
         one call between two events, interleaved with the copy: median of {SWEEP_SMALL_REPS} up to 2^20, of {} \
         above\n\n| n | copy GB/s | single-pass GB/s | x copy |\n|---|---:|---:|---:|",
        args.reps
    );
    for log in (12..=30).step_by(2) {
        let name = format!("sweep 2^{log}");
        let n = 1usize << log;
        let x = rng.vec(n, step);
        let pristine = cuda.upload(&x).map_err(err(&name))?;
        let mut work = cuda.upload(&x).map_err(err(&name))?;
        checked::<Add<f32>>(cuda, &name, &x, &pristine, &mut work, &|got| bad_sum(&x, got))?;
        let reps = if log <= 20 { SWEEP_SMALL_REPS } else { args.reps };
        let (mut copy_ms, mut scan_ms) = (Vec::new(), Vec::new());
        for _ in 0..reps {
            copy_ms.push(cuda.time(|| work.copy_from(&pristine)).map_err(err(&name))?.1);
            let spec = ScanSpec::inclusive();
            scan_ms.push(
                cuda.time(|| cuda.scan_device_into::<Add<f32>>(&pristine, &mut work, spec)).map_err(err(&name))?.1,
            );
        }
        let bytes = 8.0 * n as f64;
        let (copy, scan) = (bytes / f64::from(median(copy_ms)) / 1e6, bytes / f64::from(median(scan_ms)) / 1e6);
        let _ = writeln!(csv, "{n},device copy,{copy:.1}\n{n},scan single-pass,{scan:.1}");
        let _ = writeln!(notes, "| 2^{log} | {copy:.0} | {scan:.0} | {:.2} |", scan / copy);
    }
    std::fs::write(&args.sweep_out, csv).map_err(|e| format!("cannot write {}: {e}", args.sweep_out))?;
    Ok(())
}

/// Single-pass tile shapes, look-back windows, register budgets and status
/// layouts around each default policy: the data behind the defaults.
/// A single-pass tile shape of the policy sweep: (scanning threads, items
/// per thread, look-back statuses per lane, blocks per SM, stages, status
/// layout, early loads: a tile's loads issued before the store of the
/// slot's previous tile).
type Shape = (u32, u32, u32, u32, u32, Option<StatusLayout>, bool);

fn policies(rng: &mut Rng, args: &Args, notes: &mut String) -> Result<(), String> {
    let _ = writeln!(
        notes,
        "\n## Single-pass policies (threads x items per thread, look-back statuses per lane, blocks per SM, stages, status)\n\n\
         one call between two events, interleaved with the copy, median of {}\n\n\
         | case | policy | GB/s | x copy |\n|---|---|---:|---:|",
        args.reps
    );
    const EL: bool = true;
    let tuning = |(threads, items, lookback, blocks, stages, status, early): Shape| {
        let t = Tuning::default()
            .threads(threads)
            .items_per_thread(items)
            .lookback(lookback)
            .blocks_per_sm(blocks)
            .stages(stages)
            .early_loads(early);
        status.map_or(t, |s| t.status(s))
    };
    // Shapes of the free look-back, then shapes of the deterministic one.
    let with_modes = |free: &[Shape], deterministic: &[Shape]| -> Vec<(Shape, bool)> {
        free.iter().map(|&s| (s, false)).chain(deterministic.iter().map(|&s| (s, true))).collect()
    };
    let mode = |shape: Shape, deterministic: bool| {
        if deterministic {
            tuning(shape).deterministic(true)
        } else {
            tuning(shape)
        }
    };
    let label = |deterministic: bool| if deterministic { " deterministic" } else { "" };
    let mut row = |case: &str, shape: Shape, r: (f64, f64)| {
        let (threads, items, lookback, blocks, stages, status, early) = shape;
        let status = status.map_or("default".to_string(), |s| format!("{s:?}"));
        let early = if early { ", early loads" } else { "" };
        let line = format!(
            "| {case} | {threads} x {items}, {lookback}/lane, {blocks} blocks/SM, {stages} stage(s), {status}{early} \
             | {:.0} | {:.2} |",
            r.0, r.1
        );
        // Also on stderr as it comes, so a later failure keeps the rows.
        eprintln!("{line}");
        let _ = writeln!(notes, "{line}");
    };

    if !args.policy_f32_sizes.is_empty() {
        return f32_policies_by_size(rng, args, &mut row, &tuning);
    }
    let n = 1usize << 28;
    let sizes = &args.policy_items;
    // Small integers, as the main cases: every result checked exactly (check.rs).
    let x = if sizes.contains(&4) { rng.vec(n, step) } else { Vec::new() };
    // f32 add at 2^28 (the earlier sweeps: bench/gpu-h200-results.md) and at
    // 2^24, where each block scans only about five tiles and its last
    // tile's look-back and store (about a tile's time) show: shorter tiles.
    let f32_shapes: [(u32, &[Shape]); 2] = [
        (28, &[(256, 32, 1, 3, 2, None, EL), (256, 16, 1, 3, 2, None, EL), (256, 16, 1, 3, 3, None, EL)]),
        (
            24,
            &[
                (256, 32, 1, 3, 2, None, EL),
                (256, 16, 1, 3, 2, None, EL),
                (256, 16, 1, 3, 3, None, EL),
                (256, 8, 1, 3, 2, None, EL),
                (128, 16, 1, 4, 2, None, EL),
            ],
        ),
    ];
    for (log, shapes) in f32_shapes.into_iter().filter(|_| sizes.contains(&4)) {
        let x = &x[..1 << log];
        for &shape in shapes {
            let r = tuned::<Add<f32>>(tuning(shape), "f32 add", x, args.reps, &|got| bad_sum(x, got))?;
            row(&format!("f32 add 2^{log}"), shape, r);
        }
    }

    if sizes.contains(&4) {
        // The segmented kernels on f32 (rows, offsets, flags: the f32 cases
        // of `--gpu-rows-only`): 32-item runs with and without early loads
        // (without: the flags' and offsets' default, for_segment_heads), and
        // 16-item runs with them, in 2 and in 3 stages (3 is the rows'
        // default, the plain deterministic shape's: rows of two or more
        // whole tiles run the plain code path; rows of one tile, 65536 x
        // 4096 and 4096 x 4096, run row_tiles.cuh, where stages and early
        // loads do not apply). A Tuning's shape runs the free look-back.
        // The recurrence rows (8-byte items, 16 per thread either way) are
        // left out.
        let segmented_shapes: [Shape; 4] = [
            (256, 32, 1, 3, 2, None, false),
            (256, 32, 1, 3, 2, None, EL),
            (256, 16, 1, 3, 2, None, EL),
            (256, 16, 1, 3, 3, None, EL),
        ];
        for shape in segmented_shapes {
            let cuda = Cuda::new().map_err(|e| e.to_string())?.with_tuning(tuning(shape));
            let f32_cases = |r: &crate::Row| !r.method.contains("copy") && !r.case.contains("linear recurrence");
            for r in crate::gpu_rows::run(&cuda, args.reps)?.into_iter().filter(f32_cases) {
                row(&r.case, shape, (r.gbps, r.vs_copy));
            }
        }
        // The deterministic mode's fixed groups, 32 x lookback tiles wide
        // (the tuning takes 1 to 8 statuses per lane), on the default tile
        // and on 16-item runs with three stages (as fast as the default
        // without determinism).
        let deterministic_shapes: [Shape; 7] = [
            (256, 32, 2, 3, 2, None, EL),
            (256, 32, 3, 3, 2, None, EL),
            (256, 16, 3, 3, 3, None, EL),
            (256, 16, 4, 3, 3, None, EL),
            (256, 16, 5, 3, 3, None, EL),
            (256, 16, 6, 3, 3, None, EL),
            (256, 16, 8, 3, 3, None, EL),
        ];
        for shape in deterministic_shapes {
            let lookback = shape.2 as usize;
            let t = tuning(shape).deterministic(true);
            let r = tuned::<Add<f32>>(t, "f32 add deterministic", &x, args.reps, &|got| bad_sum(&x, got))?;
            let groups = format!("f32 add 2^28 deterministic, groups of {} tiles", 32 * lookback);
            row(&groups, shape, r);
        }
        // The deterministic mode as `Cuda::with_deterministic` shapes it
        // (SinglePassPolicy::deterministic_for), at 2^28 and 2^24; and the
        // non-deterministic look-back reading 2 and 4 statuses per lane on
        // the same 16-item runs.
        let shape = default_f32_shape()?;
        for log in [28, 24] {
            let x = &x[..1 << log];
            let t = Tuning::default().deterministic(true);
            let r = tuned::<Add<f32>>(t, "f32 add deterministic", x, args.reps, &|got| bad_sum(x, got))?;
            row(&format!("f32 add 2^{log} deterministic, the default"), shape, r);
        }
        for lookback in [2, 4] {
            let shape: Shape = (256, 16, lookback, 3, 3, None, EL);
            let r = tuned::<Add<f32>>(tuning(shape), "f32 add", &x, args.reps, &|got| bad_sum(&x, got))?;
            row("f32 add 2^28, wider look-back window", shape, r);
        }
    }
    drop(x);

    let x = if sizes.contains(&8) { rng.vec(n, |r| (sign(r), step(r))) } else { Vec::new() };
    let shapes: &[Shape] = if sizes.contains(&8) {
        &[
            (256, 16, 1, 3, 2, None, false),
            (256, 16, 1, 3, 2, None, EL),
            (256, 16, 1, 2, 2, None, EL),
            (128, 16, 1, 4, 2, None, EL),
        ]
    } else {
        &[]
    };
    // The deterministic look-back on 8-byte items (4-byte items run fastest
    // with it: 0.92 of copy; is it so here too?).
    let deterministic: &[Shape] = if sizes.contains(&8) {
        &[
            (256, 16, 2, 3, 2, None, EL),
            (256, 16, 4, 3, 2, None, EL),
            (256, 8, 4, 3, 3, None, EL),
            (256, 8, 8, 3, 3, None, EL),
        ]
    } else {
        &[]
    };
    for (shape, det) in with_modes(shapes, deterministic) {
        let r = tuned::<LinearRecurrence<f32>>(mode(shape, det), "linear recurrence f32", &x, args.reps, &|got| {
            bad_recurrence(&x, got)
        })?;
        row(&format!("linear recurrence f32 2^28{}", label(det)), shape, r);
    }
    drop(x);

    let n = 1usize << 27;
    let x = if sizes.contains(&16) { rng.vec(n, |r| (f64::from(sign(r)), f64::from(step(r)))) } else { Vec::new() };
    // 16-byte items. Measured on the H200 (bench/gpu-h200-results.md): one
    // block per SM (167 registers) 0.57-0.61 of copy with 2-4 slots, two
    // blocks 0.67 (the default now, the first shape); more bytes in flight
    // per SM next.
    // 128 x 16 without early loads ran at 0.71 (2026-12-02); longer runs and
    // a third stage did not help (0.67-0.71, the sixth session). The tagged
    // status (one round trip per status read, where the split one takes
    // two) took it to 0.84 (the default now) and 256 x 8 with early loads
    // to 0.86 (seventh session); split statuses for comparison.
    const TAGGED: Option<StatusLayout> = Some(StatusLayout::Tagged);
    const SPLIT: Option<StatusLayout> = Some(StatusLayout::Split);
    let shapes: &[Shape] = if sizes.contains(&16) {
        &[(128, 16, 1, 2, 2, None, false), (128, 16, 1, 2, 2, SPLIT, false), (256, 8, 1, 2, 2, TAGGED, EL)]
    } else {
        &[]
    };
    // Fixed groups on split statuses ran at 0.27-0.46 of copy (2026-12-02):
    // each of a group's statuses was two dependent round trips; tagged
    // (the default now), 0.72.
    let deterministic: &[Shape] = if sizes.contains(&16) { &[(128, 16, 4, 2, 2, None, false)] } else { &[] };
    for (shape, det) in with_modes(shapes, deterministic) {
        let r = tuned::<LinearRecurrence<f64>>(mode(shape, det), "linear recurrence f64", &x, args.reps, &|got| {
            bad_recurrence(&x, got)
        })?;
        row(&format!("linear recurrence f64 2^27{}", label(det)), shape, r);
    }
    drop(x);
    if !sizes.contains(&32) {
        return Ok(());
    }
    let x = rng.vec(n, |r| {
        let mut q = [0.0; 4];
        q[r.below(4) as usize] = if r.below(2) == 0 { -1.0 } else { 1.0 };
        q
    });
    let want = scan::reference::scan::<QuaternionProduct>(&x, ScanSpec::inclusive());
    // 128 x 4 with 3 blocks per SM (the default) was the best of 2-4 slots,
    // 64-256 threads and 2-4 items (0.51 of copy); longer runs next.
    // 96 x 8 with three blocks per SM (the default) 0.64 with split
    // statuses, 0.76 tagged (the default now; 128 x 8 0.74, 64 x 16 0.72).
    let shapes = [(96, 8, 1, 3, 2, None, false), (96, 8, 1, 3, 2, SPLIT, false)];
    let deterministic = [(96, 8, 4, 3, 2, None, false)];
    for (shape, det) in with_modes(&shapes, &deterministic) {
        let r = tuned::<QuaternionProduct>(mode(shape, det), "quaternion", &x, args.reps, &|got| {
            (0..n).find(|&i| got[i] != want[i])
        })?;
        row(&format!("quaternion product 2^27{}", label(det)), shape, r);
    }
    Ok(())
}

/// sm_90's default shape for 4-byte items, deterministic look-back (the
/// default for floats), as the tables print it.
fn default_f32_shape() -> Result<Shape, String> {
    let policy = SinglePassPolicy::for_item(4, 90).map_err(|e| e.to_string())?.deterministic_for(4, 90);
    Ok((policy.threads, policy.items_per_thread, policy.lookback, policy.blocks_per_sm, policy.stages, None, true))
}

/// `--policy-f32-sizes`: f32 add's tile shapes at the sizes asked for,
/// small and middle sizes in mind (2^20 and 2^22 ran at 0.60-0.67 of copy on
/// an H100, 2026-12-06, where 2^24 and up run at 0.91-0.99), against the
/// default (deterministic) shape: the deterministic look-back in fewer
/// stages and narrower fixed groups, then the free look-back with shorter
/// tiles and more blocks an SM. A shape the GPU cannot run is a row saying
/// so.
fn f32_policies_by_size(
    rng: &mut Rng,
    args: &Args,
    row: &mut impl FnMut(&str, Shape, (f64, f64)),
    tuning: &impl Fn(Shape) -> Tuning,
) -> Result<(), String> {
    let largest = args.policy_f32_sizes.iter().copied().max().unwrap_or(10);
    let all = rng.vec(1usize << largest, step);
    // (shape, deterministic): the deterministic look-back (the default's
    // fixed groups are 32 x lookback tiles) in fewer stages and narrower
    // groups, then the free look-back; the first H100 sweep (2026-12-06)
    // found the free look-back in two stages 17% ahead of the default at
    // 2^22 and 14% behind it at 2^24.
    let shapes: [(Shape, bool); 10] = [
        ((256, 16, 4, 3, 2, None, true), true),
        ((256, 16, 4, 3, 1, None, true), true),
        ((256, 16, 2, 3, 3, None, true), true),
        ((256, 16, 2, 3, 2, None, true), true),
        ((256, 16, 1, 3, 2, None, true), true),
        ((256, 16, 1, 3, 3, None, true), false),
        ((256, 16, 1, 3, 2, None, true), false),
        ((256, 16, 1, 3, 1, None, true), false),
        ((256, 8, 1, 4, 2, None, true), false),
        ((128, 16, 1, 4, 2, None, true), false),
    ];
    for &log in &args.policy_f32_sizes {
        let x = &all[..1 << log];
        let case = format!("f32 add 2^{log}");
        let r = tuned::<Add<f32>>(Tuning::default(), "f32 add", x, args.reps, &|got| bad_sum(x, got))?;
        row(&format!("{case}, the default (deterministic, sm_90's shape)"), default_f32_shape()?, r);
        for &(shape, deterministic) in &shapes {
            let (t, label) =
                if deterministic { (tuning(shape).deterministic(true), " deterministic") } else { (tuning(shape), "") };
            match tuned::<Add<f32>>(t, "f32 add", x, args.reps, &|got| bad_sum(x, got)) {
                Ok(r) => row(&format!("{case}{label}"), shape, r),
                Err(e) => eprintln!("| {case}{label} | {shape:?} | not run: {e} | |"),
            }
        }
    }
    Ok(())
}

/// (GB/s, ratio to copy) of the single-pass scan with `tuning`.
fn tuned<Op: CudaOp>(
    tuning: Tuning,
    name: &str,
    input: &[Op::Item],
    reps: usize,
    bad: &impl Fn(&[Op::Item]) -> Option<usize>,
) -> Result<(f64, f64), String>
where
    Op::Item: PartialEq,
{
    let cuda = Cuda::new().map_err(|e| e.to_string())?.with_tuning(tuning);
    let rows = case::<Op>(std::slice::from_ref(&cuda), name, input, reps, bad)?;
    Ok((rows[1].gbps, rows[1].vs_copy))
}
