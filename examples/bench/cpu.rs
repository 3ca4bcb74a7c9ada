//! The CPU section: a hand-written sequential loop, the executor's Blelloch
//! and tiled algorithms, and a single-threaded `copy_from_slice` of the same
//! bytes. The sequential baseline is the plain loop a user would write
//! (`acc += x`, `acc = acc.max(x)`, ...), not the library's generic one.

use std::cell::RefCell;

use scan::ops::{Add, LinearRecurrence, Max};
use scan::{Algorithm, Cpu, ScanOp, ScanSpec};
use scan_testing::Rng;

use crate::check::{bad_recurrence, bad_recurrence_h, bad_sum, sign, step};
use crate::{median_times, Args, Row};

/// Runs every CPU case; returns a line about the machine and the table rows.
pub fn run(args: &Args) -> Result<(String, Vec<Row>), String> {
    let n = 1usize << args.size_log2;
    let cpu = Cpu::new();
    // Other processes skew every figure (the ratios less than the GB/s): say how busy the machine was.
    let load = std::fs::read_to_string("/proc/loadavg")
        .map_or("unknown".into(), |l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "));
    let about = format!(
        "CPU: 2^{} items per case, {} threads available, load average {load} at start; tiled tile = {} f32 items; \
         memcpy = `copy_from_slice` on one thread and split over the threads; x memcpy = against the \
         copy on as many threads (one for the sequential loop); \
         GB/s count input + output bytes; each method the median of {} calls after a warm-up, the methods \
         interleaved (the selective scan's f64 references: median of {REFERENCE_REPS}).",
        args.size_log2,
        cpu.threads(),
        scan_cpu::tile_len::<f32>(),
        args.reps
    );
    if args.cpu_rows_only {
        return Ok((about, batched_rows(args.reps)?));
    }
    if args.cpu_selective_only {
        return Ok((about, selective_scan(args.reps)?));
    }
    let mut rng = Rng::fresh("bench");
    let mut rows = Vec::new();

    // Small integers: every grouping exact, every result checked exactly (check.rs).
    let x = rng.vec(n, step);
    let seq = |x: &[f32], out: &mut [f32]| {
        let mut acc = 0.0f32;
        for (o, &v) in out.iter_mut().zip(x) {
            acc += v;
            *o = acc;
        }
    };
    rows.extend(case::<Add<f32>>("f32 add", &x, args.reps, seq, |got| bad_sum(&x, got))?);
    drop(x);

    let x = rng.vec(n, |r| r.next_u64() as i32);
    let exact = scan::reference::scan::<Add<i32>>(&x, ScanSpec::inclusive());
    let seq = |x: &[i32], out: &mut [i32]| {
        let mut acc = 0i32;
        for (o, &v) in out.iter_mut().zip(x) {
            acc = acc.wrapping_add(v);
            *o = acc;
        }
    };
    rows.extend(case::<Add<i32>>("i32 add", &x, args.reps, seq, |got| (0..n).find(|&i| got[i] != exact[i]))?);
    drop((x, exact));

    let x = rng.vec(n, |r| r.range_f64(-1e6, 1e6) as f32);
    let exact = scan::reference::scan::<Max<f32>>(&x, ScanSpec::inclusive());
    let seq = |x: &[f32], out: &mut [f32]| {
        let mut acc = f32::NEG_INFINITY;
        for (o, &v) in out.iter_mut().zip(x) {
            acc = acc.max(v);
            *o = acc;
        }
    };
    rows.extend(case::<Max<f32>>("f32 max", &x, args.reps, seq, |got| (0..n).find(|&i| got[i] != exact[i]))?);
    drop((x, exact));

    // Decays of -1 or 1 and small integer steps: both components exact (check.rs).
    let x = rng.vec(n, |r| (sign(r), step(r)));
    let seq = |x: &[(f32, f32)], out: &mut [(f32, f32)]| {
        let (mut a, mut h) = (1.0f32, 0.0f32);
        for (o, &(xa, xb)) in out.iter_mut().zip(x) {
            (a, h) = (a * xa, xa * h + xb);
            *o = (a, h);
        }
    };
    rows.extend(case::<LinearRecurrence<f32>>("linear recurrence (f32 pairs)", &x, args.reps, seq, |got| {
        bad_recurrence(&x, got)
    })?);
    rows.extend(fused_recurrence(&x, args.reps)?);
    drop(x);
    rows.extend(batched_rows(args.reps)?);
    rows.extend(selective_scan(args.reps)?);
    Ok((about, rows))
}

/// Batched rows (7/11's CPU cases): f32 add over 4096 rows of 4096 and over
/// 2^20 rows of 16, each row scanned independently (`Cpu::scan_rows`).
/// Many rows go to the threads in contiguous shares, each row on one thread.
fn batched_rows(reps: usize) -> Result<Vec<Row>, String> {
    let mut rng = Rng::fresh("bench rows");
    let mut out = Vec::new();
    for (rows, row_len) in [(4096usize, 4096usize), (1 << 20, 16)] {
        let x = rng.vec(rows * row_len, step);
        let name = format!("f32 add rows {rows} x {row_len}");
        let seq = |x: &[f32], out: &mut [f32]| {
            for (row, o) in x.chunks_exact(row_len).zip(out.chunks_exact_mut(row_len)) {
                let mut acc = 0.0f32;
                for (o, &v) in o.iter_mut().zip(row) {
                    acc += v;
                    *o = acc;
                }
            }
        };
        let bad = |got: &[f32]| {
            x.chunks_exact(row_len)
                .zip(got.chunks_exact(row_len))
                .enumerate()
                .find_map(|(r, (x, g))| bad_sum(x, g).map(|i| r * row_len + i))
        };
        let scan = |cpu: &Cpu, x: &[f32], o: &mut [f32]| cpu.scan_rows::<Add<f32>>(x, o, rows, ScanSpec::inclusive());
        out.extend(case_with::<Add<f32>>(&name, &x, reps, seq, scan, bad)?);
    }
    Ok(out)
}

/// Times memcpy, the hand-written loop `seq` and the Blelloch and tiled
/// executors on `input` (inclusive, forward, out of place into a preallocated
/// output), then checks every scan's output with `bad`, which returns the
/// first wrong index.
fn case<Op: ScanOp>(
    name: &str,
    input: &[Op::Item],
    reps: usize,
    seq: impl Fn(&[Op::Item], &mut [Op::Item]),
    bad: impl Fn(&[Op::Item]) -> Option<usize>,
) -> Result<Vec<Row>, String> {
    let scan = |cpu: &Cpu, x: &[Op::Item], out: &mut [Op::Item]| cpu.scan_into::<Op>(x, out, ScanSpec::inclusive());
    case_with::<Op>(name, input, reps, seq, scan, bad)
}

/// [`case`] for any scan call of the executors: `scan(cpu, input, output)`.
fn case_with<Op: ScanOp>(
    name: &str,
    input: &[Op::Item],
    reps: usize,
    seq: impl Fn(&[Op::Item], &mut [Op::Item]),
    scan: impl Fn(&Cpu, &[Op::Item], &mut [Op::Item]) -> scan::Result<()>,
    bad: impl Fn(&[Op::Item]) -> Option<usize>,
) -> Result<Vec<Row>, String> {
    let out = RefCell::new(vec![Op::identity(); input.len()]);
    let executors = [Algorithm::Blelloch, Algorithm::Tiled].map(|a| Cpu::new().with_algorithm(a));
    let failed = RefCell::new(None);
    let mut copy = || out.borrow_mut().copy_from_slice(input);
    // The same copy split over the executor's threads: a scan moves the same
    // bytes, so this is about the most any scan can reach on this machine.
    let threads = executors[1].threads();
    let mut copy_threads = || copy_split(&mut out.borrow_mut(), input, threads);
    let mut sequential = || seq(input, &mut out.borrow_mut());
    let mut scans: Vec<_> = executors
        .iter()
        .map(|cpu| {
            let (out, failed, scan) = (&out, &failed, &scan);
            move || {
                if let Err(e) = scan(cpu, input, &mut out.borrow_mut()) {
                    *failed.borrow_mut() = Some(e.to_string());
                }
            }
        })
        .collect();
    let mut methods: Vec<&mut dyn FnMut()> = vec![&mut copy, &mut copy_threads, &mut sequential];
    methods.extend(scans.iter_mut().map(|f| f as &mut dyn FnMut()));
    let times = median_times(reps, &mut methods);
    if let Some(e) = failed.into_inner() {
        return Err(format!("{name}: {e}"));
    }

    let mut out = out.into_inner();
    out.fill(Op::identity());
    seq(input, &mut out);
    if let Some(i) = bad(&out) {
        return Err(format!("{name}: the sequential loop is wrong at index {i}"));
    }
    for cpu in &executors {
        out.fill(Op::identity());
        scan(cpu, input, &mut out).map_err(|e| e.to_string())?;
        if let Some(i) = bad(&out) {
            return Err(format!("{name}: {} scan is wrong at index {i}", cpu.algorithm()));
        }
    }

    let bytes = 2.0 * std::mem::size_of_val(input) as f64;
    let gbps: Vec<f64> = times.iter().map(|t| bytes / t.as_secs_f64() / 1e9).collect();
    let (copy_gbps, copy_threads_gbps, seq_gbps) = (gbps[0], gbps[1], gbps[2]);
    let copies = CopyRates { one: copy_gbps, all: copy_threads_gbps };
    let row = |method: String, g: f64, threads: usize| Row {
        case: name.into(),
        method,
        gbps: g,
        vs_copy: g / copies.on(threads),
        vs_sequential: g / seq_gbps,
    };
    let mut rows = vec![
        row("memcpy".into(), copy_gbps, 1),
        row(format!("memcpy ({threads} threads)"), copy_threads_gbps, threads),
        row("sequential loop".into(), seq_gbps, 1),
    ];
    for (cpu, &g) in executors.iter().zip(&gbps[3..]) {
        rows.push(row(format!("{} ({} threads)", cpu.algorithm(), cpu.threads()), g, cpu.threads()));
    }
    Ok(rows)
}

/// The same recurrence fused (`Cpu::scan_mapped` with `maps::Recurrence`):
/// `a` and `b` from their own arrays, `h` alone out, 12 bytes per item
/// against the pairs scan's 16; against a copy of `a` and `b` (16 bytes per
/// item) on one thread and on the executor's threads, and the hand-written
/// loop over the same arrays. GB/s count each method's own bytes; x memcpy
/// is against the copy on as many threads.
fn fused_recurrence(pairs: &[(f32, f32)], reps: usize) -> Result<Vec<Row>, String> {
    use scan::maps::Recurrence;
    let name = "linear recurrence fused (a[], b[] -> h[])";
    let (a, b): (Vec<f32>, Vec<f32>) = pairs.iter().copied().unzip();
    let n = a.len();
    let (h, copy_a, copy_b) =
        (RefCell::new(vec![0.0f32; n]), RefCell::new(vec![0.0f32; n]), RefCell::new(vec![0.0f32; n]));
    let cpu = Cpu::new();
    let failed = RefCell::new(None);
    let mut copy = || {
        copy_a.borrow_mut().copy_from_slice(&a);
        copy_b.borrow_mut().copy_from_slice(&b);
    };
    let threads = cpu.threads();
    let mut copy_threads = || {
        let chunk = n.div_ceil(threads).max(1);
        let (mut ca, mut cb) = (copy_a.borrow_mut(), copy_b.borrow_mut());
        std::thread::scope(|s| {
            for (((oa, ia), ob), ib) in
                ca.chunks_mut(chunk).zip(a.chunks(chunk)).zip(cb.chunks_mut(chunk)).zip(b.chunks(chunk))
            {
                s.spawn(move || {
                    oa.copy_from_slice(ia);
                    ob.copy_from_slice(ib);
                });
            }
        });
    };
    let mut sequential = || {
        let mut acc = 0.0f32;
        for ((o, &x), &y) in h.borrow_mut().iter_mut().zip(&a).zip(&b) {
            acc = x * acc + y;
            *o = acc;
        }
    };
    let mut fused = || {
        let got = cpu.scan_mapped::<LinearRecurrence<f32>, Recurrence, _>(
            (&a[..], &b[..]),
            &mut h.borrow_mut(),
            ScanSpec::inclusive(),
        );
        if let Err(e) = got {
            *failed.borrow_mut() = Some(e.to_string());
        }
    };
    let times = median_times(reps, &mut [&mut copy, &mut copy_threads, &mut sequential, &mut fused]);
    if let Some(e) = failed.into_inner() {
        return Err(format!("{name}: {e}"));
    }
    if let Some(i) = bad_recurrence_h(&a, &b, &h.into_inner()) {
        return Err(format!("{name}: wrong at index {i}"));
    }
    let gbps = |bytes: usize, t: std::time::Duration| bytes as f64 / t.as_secs_f64() / 1e9;
    let (copy_gbps, copy_threads_gbps) = (gbps(16 * n, times[0]), gbps(16 * n, times[1]));
    let (seq_gbps, fused_gbps) = (gbps(12 * n, times[2]), gbps(12 * n, times[3]));
    let copies = CopyRates { one: copy_gbps, all: copy_threads_gbps };
    let row = |method: String, g: f64, threads: usize| Row {
        case: name.into(),
        method,
        gbps: g,
        vs_copy: g / copies.on(threads),
        vs_sequential: g / seq_gbps,
    };
    Ok(vec![
        row("memcpy of a and b (16 B/item)".into(), copy_gbps, 1),
        row(format!("memcpy of a and b ({threads} threads)"), copy_threads_gbps, threads),
        row("sequential loop (12 B/item)".into(), seq_gbps, 1),
        row(format!("scan_mapped ({threads} threads, 12 B/item)"), fused_gbps, threads),
    ])
}

/// Timed calls of the selective scan's f64 references (sequential, slow).
const REFERENCE_REPS: usize = 3;

/// Mamba's selective scan at batch 1, dim 256, L 4096, N 16, and on few
/// long rows, batch 1, dim 8, L 65536 (one block of rows, which both passes
/// cut into ranges of steps): [`selective_scan_at`].
fn selective_scan(reps: usize) -> Result<Vec<Row>, String> {
    use scan::selective::SsmShape;
    let mut rows = selective_scan_at(SsmShape { batch: 1, dim: 256, len: 4096, state: 16 }, reps)?;
    rows.extend(selective_scan_at(SsmShape { batch: 1, dim: 8, len: 65536, state: 16 }, reps)?);
    Ok(rows)
}

/// `src` copied into `dst` (of one length) in `threads` contiguous parts,
/// each on a thread of its own.
fn copy_split<T: Copy + Send + Sync>(dst: &mut [T], src: &[T], threads: usize) {
    let chunk = src.len().div_ceil(threads).max(1);
    std::thread::scope(|s| {
        for (o, i) in dst.chunks_mut(chunk).zip(src.chunks(chunk)) {
            s.spawn(move || o.copy_from_slice(i));
        }
    });
}

/// A copy's GB/s on one thread and on all the executor's: each method is
/// compared with the copy on as many threads (a scan on all threads against
/// one thread's copy would look several times better than it is).
struct CopyRates {
    one: f64,
    all: f64,
}

impl CopyRates {
    fn on(&self, threads: usize) -> f64 {
        if threads > 1 {
            self.all
        } else {
            self.one
        }
    }

    /// Copies of `bytes` bytes in all (half read, half written), on one
    /// thread and on `threads`: the copy columns of cases that count their
    /// own bytes.
    fn measure(bytes: usize, threads: usize, reps: usize) -> CopyRates {
        let src = vec![1u8; bytes / 2];
        let dst = RefCell::new(vec![0u8; bytes / 2]);
        let mut one = || dst.borrow_mut().copy_from_slice(&src);
        let mut split = || copy_split(&mut dst.borrow_mut(), &src, threads);
        let times = median_times(reps, &mut [&mut one, &mut split]);
        let gbps = |t: std::time::Duration| (bytes / 2 * 2) as f64 / t.as_secs_f64() / 1e9;
        CopyRates { one: gbps(times[0]), all: gbps(times[1]) }
    }
}

/// The selective scan of `shape` (B and C varying, D, z, delta bias and
/// softplus): this executor on all threads and on one, against the
/// sequential f64 reference (the x sequential column: its time, median of
/// [`REFERENCE_REPS`] after a first call, over theirs), then its backward
/// ([`selective_backward`]). GB/s count u, delta, z, B, C read and out
/// written; x memcpy is against a copy of as many bytes on as many threads.
fn selective_scan_at(shape: scan::selective::SsmShape, reps: usize) -> Result<Vec<Row>, String> {
    use scan::selective::{reference, Projection, SelectiveScan};
    let mut rng = Rng::fresh("bench selective scan");
    // (B and C vary: (batch, 1 group, N, L).)
    let (bdl, nl, dn) =
        (shape.batch * shape.dim * shape.len, shape.batch * shape.state * shape.len, shape.dim * shape.state);
    let mut v = |n: usize, lo: f64, hi: f64| rng.vec(n, |r| r.range_f64(lo, hi) as f32);
    let (u, delta, z) = (v(bdl, -1.0, 1.0), v(bdl, -3.0, 0.0), v(bdl, -2.0, 2.0));
    let (b, c, a) = (v(nl, -1.0, 1.0), v(nl, -1.0, 1.0), v(dn, -4.0, -0.5));
    let (d, bias) = (v(shape.dim, -1.0, 1.0), v(shape.dim, -0.5, 0.5));
    let vary = |data| Projection::Varying { data, groups: 1 };
    let args = SelectiveScan::new(shape, &u, &delta, &a, vary(&b), vary(&c))
        .d(&d)
        .z(&z)
        .delta_bias(&bias)
        .delta_softplus(true);
    let name = format!("selective scan {}x{}x{}, N {}", shape.batch, shape.dim, shape.len, shape.state);
    let err = |e: scan::Error| format!("{name}: {e}");
    let (want, _) = reference(&args).map_err(err)?;
    let reference_time = median_times(REFERENCE_REPS, &mut [&mut || drop(reference(&args))])[0];
    let executors = [Cpu::new(), Cpu::new().with_threads(1)];
    let mut rows = Vec::new();
    let mut forward_times = [std::time::Duration::ZERO; 2];
    let bytes = 4.0 * (3 * bdl + 2 * nl + bdl) as f64;
    let copies = CopyRates::measure(bytes as usize, executors[0].threads(), reps);
    for cpu in executors {
        let got = cpu.selective_scan(&args).map_err(err)?;
        if let Some(i) =
            (0..want.len()).find(|&i| !scan_testing::within_mamba_tolerance(f64::from(got.out[i]), want[i]))
        {
            return Err(format!("{name}: out[{i}] = {}, the reference {}", got.out[i], want[i]));
        }
        let mut run = || {
            let _ = cpu.selective_scan(&args);
        };
        let time = median_times(reps, &mut [&mut run])[0];
        forward_times[rows.len()] = time;
        rows.push(Row {
            case: name.clone(),
            method: format!("Cpu::selective_scan ({} threads, {:.1} ms)", cpu.threads(), time.as_secs_f64() * 1e3),
            gbps: bytes / time.as_secs_f64() / 1e9,
            vs_copy: bytes / time.as_secs_f64() / 1e9 / copies.on(cpu.threads()),
            vs_sequential: reference_time.as_secs_f64() / time.as_secs_f64(),
        });
    }
    rows.push(Row {
        case: name.clone(),
        method: format!(
            "f64 reference, sequential ({:.1} ms, median of {REFERENCE_REPS})",
            reference_time.as_secs_f64() * 1e3
        ),
        gbps: bytes / reference_time.as_secs_f64() / 1e9,
        vs_copy: bytes / reference_time.as_secs_f64() / 1e9 / copies.one,
        vs_sequential: 1.0,
    });
    rows.extend(selective_backward(&args, forward_times, reps)?);
    Ok(rows)
}

/// The selective scan's backward on the same arguments: this executor on
/// all threads and on one (time, and its ratio to the forward on as many
/// threads), plain and from the states a `selective_scan_saving` forward
/// kept, against the f64 reference backward (the x sequential column).
/// GB/s count what the forward reads plus dout read and du, ddelta, dz
/// written.
fn selective_backward(
    args: &scan::selective::SelectiveScan<'_>,
    forward_times: [std::time::Duration; 2],
    reps: usize,
) -> Result<Vec<Row>, String> {
    use scan::selective::backward::reference_backward;
    let shape = args.shape;
    let name = format!("selective scan backward {}x{}x{}, N {}", shape.batch, shape.dim, shape.len, shape.state);
    let err = |e: scan::Error| format!("{name}: {e}");
    let bdl = shape.batch * shape.dim * shape.len;
    let dout = Rng::fresh("bench selective backward").vec(bdl, |r| r.range_f64(-1.0, 1.0) as f32);
    let want = reference_backward(args, &dout).map_err(err)?;
    let reference_time = median_times(REFERENCE_REPS, &mut [&mut || drop(reference_backward(args, &dout))])[0];
    let bytes = 4.0 * (3 * bdl + 2 * shape.batch * shape.state * shape.len + bdl + 3 * bdl) as f64;
    let copies = CopyRates::measure(bytes as usize, Cpu::new().threads(), reps);
    let mut rows = Vec::new();
    for (cpu, forward) in [Cpu::new(), Cpu::new().with_threads(1)].into_iter().zip(forward_times) {
        let got = cpu.selective_scan_backward(args, &dout).map_err(err)?;
        for (what, x, y) in
            [("du", &got.du, &want.du), ("ddelta", &got.ddelta, &want.ddelta), ("dB", &got.db, &want.db)]
        {
            if let Some(i) =
                (0..y.len()).find(|&i| !scan_testing::within_mamba_tolerance(f64::from(x[i]), f64::from(y[i])))
            {
                return Err(format!("{name}: {what}[{i}] = {}, the reference {}", x[i], y[i]));
            }
        }
        let (_, saved) = cpu.selective_scan_saving(args).map_err(err)?;
        if cpu.selective_scan_backward_saved(args, &saved, &dout).map_err(err)? != got {
            return Err(format!("{name}: the backward from the saved states differs from the plain one"));
        }
        let mut plain = || {
            let _ = cpu.selective_scan_backward(args, &dout);
        };
        let mut from_saved = || {
            let _ = cpu.selective_scan_backward_saved(args, &saved, &dout);
        };
        let times = median_times(reps, &mut [&mut plain, &mut from_saved]);
        for (time, how) in times.into_iter().zip(["selective_scan_backward", "selective_scan_backward_saved"]) {
            rows.push(Row {
                case: name.clone(),
                method: format!(
                    "Cpu::{how} ({} threads, {:.1} ms, {:.2}x the forward)",
                    cpu.threads(),
                    time.as_secs_f64() * 1e3,
                    time.as_secs_f64() / forward.as_secs_f64()
                ),
                gbps: bytes / time.as_secs_f64() / 1e9,
                vs_copy: bytes / time.as_secs_f64() / 1e9 / copies.on(cpu.threads()),
                vs_sequential: reference_time.as_secs_f64() / time.as_secs_f64(),
            });
        }
    }
    rows.push(Row {
        case: name.clone(),
        method: format!(
            "f64 reference backward, sequential ({:.1} ms, median of {REFERENCE_REPS})",
            reference_time.as_secs_f64() * 1e3
        ),
        gbps: bytes / reference_time.as_secs_f64() / 1e9,
        vs_copy: bytes / reference_time.as_secs_f64() / 1e9 / copies.one,
        vs_sequential: 1.0,
    });
    Ok(rows)
}
