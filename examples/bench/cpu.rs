//! The CPU section: sequential loop, Blelloch and the tiled path against a
//! single-threaded `copy_from_slice` of the same bytes.

use std::cell::RefCell;

use scan::ops::{Add, LinearRecurrence, Max};
use scan::{Algorithm, Cpu, ScanOp, ScanSpec};
use scan_core::testing::Rng;

use crate::{median_times, Args, Row};

/// Runs every CPU case; returns a line about the machine and the table rows.
pub fn run(args: &Args) -> Result<(String, Vec<Row>), String> {
    let n = 1usize << args.size_log2;
    let cpu = Cpu::new();
    let about = format!(
        "CPU: {} threads available, tiled tile = {} f32 items; memcpy = one thread, `copy_from_slice`; \
         GB/s count input + output bytes.",
        cpu.threads(),
        scan_cpu::tile_len::<f32>()
    );
    let mut rng = Rng::fresh("bench");
    let mut rows = Vec::new();

    let x = rng.vec(n, |r| r.range_f64(-1.0, 1.0) as f32);
    rows.extend(case::<Add<f32>>("f32 add", &x, args.reps, |got| bad_sum(&x, got))?);
    drop(x);

    let x = rng.vec(n, |r| r.next_u64() as i32);
    let exact = scan::reference::scan::<Add<i32>>(&x, ScanSpec::inclusive());
    rows.extend(case::<Add<i32>>("i32 add", &x, args.reps, |got| (0..n).find(|&i| got[i] != exact[i]))?);
    drop((x, exact));

    let x = rng.vec(n, |r| r.range_f64(-1e6, 1e6) as f32);
    let exact = scan::reference::scan::<Max<f32>>(&x, ScanSpec::inclusive());
    rows.extend(case::<Max<f32>>("f32 max", &x, args.reps, |got| (0..n).find(|&i| got[i] != exact[i]))?);
    drop((x, exact));

    // Decays in (0.9, 1) keep h bounded and the check meaningful.
    let x = rng.vec(n, |r| (r.range_f64(0.9, 1.0) as f32, r.range_f64(-1.0, 1.0) as f32));
    let exact = recurrence_f64(&x);
    rows.extend(case::<LinearRecurrence<f32>>("linear recurrence (f32 pairs)", &x, args.reps, |got| {
        (0..n).find(|&i| (f64::from(got[i].1) - exact[i].0).abs() > exact[i].1)
    })?);
    Ok((about, rows))
}

/// Times memcpy and the three algorithms on `input` (inclusive, forward, out
/// of place into a preallocated output), then checks each algorithm's output
/// with `bad`, which returns the first wrong index.
fn case<Op: ScanOp>(
    name: &str,
    input: &[Op::Item],
    reps: usize,
    bad: impl Fn(&[Op::Item]) -> Option<usize>,
) -> Result<Vec<Row>, String> {
    let spec = ScanSpec::inclusive();
    let out = RefCell::new(vec![Op::identity(); input.len()]);
    let executors: Vec<Cpu> = Algorithm::ALL.iter().map(|&a| Cpu::new().with_algorithm(a)).collect();
    let failed = RefCell::new(None);
    let mut copy = || out.borrow_mut().copy_from_slice(input);
    let mut scans: Vec<_> = executors
        .iter()
        .map(|cpu| {
            let (out, failed) = (&out, &failed);
            move || {
                if let Err(e) = cpu.scan_into::<Op>(input, &mut out.borrow_mut(), spec) {
                    *failed.borrow_mut() = Some(e.to_string());
                }
            }
        })
        .collect();
    let mut methods: Vec<&mut dyn FnMut()> = vec![&mut copy];
    methods.extend(scans.iter_mut().map(|f| f as &mut dyn FnMut()));
    let times = median_times(reps, &mut methods);
    if let Some(e) = failed.into_inner() {
        return Err(format!("{name}: {e}"));
    }

    for cpu in &executors {
        let mut out = out.borrow_mut();
        out.fill(Op::identity());
        cpu.scan_into::<Op>(input, &mut out, spec).map_err(|e| e.to_string())?;
        if let Some(i) = bad(&out) {
            return Err(format!("{name}: {} scan is wrong at index {i}", cpu.algorithm()));
        }
    }

    let bytes = 2.0 * std::mem::size_of_val(input) as f64;
    let gbps: Vec<f64> = times.iter().map(|t| bytes / t.as_secs_f64() / 1e9).collect();
    let (copy_gbps, seq_gbps) = (gbps[0], gbps[1]);
    let mut rows = vec![Row {
        case: name.into(),
        method: "memcpy".into(),
        gbps: copy_gbps,
        vs_copy: 1.0,
        vs_sequential: copy_gbps / seq_gbps,
    }];
    for (cpu, &g) in executors.iter().zip(&gbps[1..]) {
        let method = format!("{} ({} threads)", cpu.algorithm(), cpu.threads());
        let method = if cpu.algorithm() == Algorithm::Sequential { "sequential loop".into() } else { method };
        rows.push(Row { case: name.into(), method, gbps: g, vs_copy: g / copy_gbps, vs_sequential: g / seq_gbps });
    }
    Ok(rows)
}

/// The first index where `got` is not the inclusive sum of `x` within the
/// rounding any summation order can make: `(i + 1) * eps32 * sum |x[..=i]|`,
/// against an f64 evaluation.
fn bad_sum(x: &[f32], got: &[f32]) -> Option<usize> {
    let (mut sum, mut abs) = (0.0f64, 0.0f64);
    (0..x.len()).find(|&i| {
        sum += f64::from(x[i]);
        abs += f64::from(x[i]).abs();
        (f64::from(got[i]) - sum).abs() > (i as f64 + 1.0) * f64::from(f32::EPSILON) * abs
    })
}

/// h_t and a rounding bound for it, in f64: `2 (t + 1) eps32 |h|_t`, where
/// `|h|` runs the recurrence on |a|, |b| (every product and sum of the
/// evaluation, whatever its order, is bounded by it).
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
