//! The GPU selective scan (issue 8/11's case): batch 8, dim 1536, L 4096,
//! N 16, B and C varying (one group), with D and z, f32. The arguments are
//! uploaded once; the timed region is one `Cuda::run_selective` between two
//! events. Reported against two bounds measured or derived in the same run:
//! the memory floor (the bytes of u, delta, z, B and C read plus out written,
//! over the same-run device copy rate) and the exp bound (N exps per step, at
//! 16 per SM per clock, the SFU rate of sm_80/sm_90). Before timing, the
//! result is checked against the CPU's (itself tested against the f64
//! reference) within mamba_ssm's f32 tolerances. Then the backward pass
//! (`Cuda::run_selective_backward`, output allocation included) for a
//! random dL/dout, timed the same way, with its ratio to the forward (9/11's
//! bar: at most 3x) and its largest difference from the CPU's f64 backward.
//!
//! For choosing between kernels: `SCAN_BENCH_SELECTIVE_SHAPE=batch,dim,L,N`
//! runs another shape (every option as above), and
//! `SCAN_BENCH_SELECTIVE_KERNELS=auto,warp2,lanes,...` also times the
//! forward on each kernel named (`SCAN_CUDA_SELECTIVE_KERNEL`'s values),
//! each checked against the CPU first.

use scan::selective::backward::SsmGrads;
use scan::selective::{Projection, SelectiveScan, SsmShape};
use scan::Cpu;
use scan_cuda::cudarc::driver::sys::CUdevice_attribute;
use scan_cuda::{Cuda, DeviceSelectiveScan, SELECTIVE_BACKWARD_MAX_STATE};
use scan_testing::Rng;

use crate::against_copy::{against_copy, CALLS};
use crate::Row;

fn median(mut v: Vec<f32>) -> f32 {
    v.sort_by(f32::total_cmp);
    v[v.len() / 2]
}

/// The first index where `got` is outside mamba_ssm's f32 tolerances of `want`.
fn first_outside(got: &[f32], want: &[f32]) -> Option<usize> {
    (0..want.len()).find(|&i| !scan_testing::within_mamba_tolerance(f64::from(got[i]), f64::from(want[i])))
}

/// `SCAN_BENCH_SELECTIVE_SHAPE=batch,dim,L,N`: another shape than the
/// issue's (for choosing between the kernels).
fn shape_from_env() -> Result<Option<SsmShape>, String> {
    let Ok(v) = std::env::var("SCAN_BENCH_SELECTIVE_SHAPE") else {
        return Ok(None);
    };
    let n: Vec<usize> = v
        .split(',')
        .map(|p| p.trim().parse::<usize>())
        .collect::<Result<_, _>>()
        .map_err(|e| format!("SCAN_BENCH_SELECTIVE_SHAPE={v}: {e}"))?;
    let [batch, dim, len, state] = n[..] else {
        return Err(format!("SCAN_BENCH_SELECTIVE_SHAPE={v}: want batch,dim,L,N"));
    };
    // Every size at least 1, and the largest array's items within reach.
    let items = [batch, dim, len, state]
        .iter()
        .try_fold(1usize, |acc, &x| if x == 0 { None } else { acc.checked_mul(x) })
        .filter(|&n| n <= 1 << 34);
    if items.is_none() {
        return Err(format!("SCAN_BENCH_SELECTIVE_SHAPE={v}: want sizes of at least 1, at most 2^34 items in all"));
    }
    Ok(Some(SsmShape { batch, dim, len, state }))
}

/// The forward on each kernel that `SCAN_BENCH_SELECTIVE_KERNELS` names
/// (`SCAN_CUDA_SELECTIVE_KERNEL`'s values, comma-separated), each on its own
/// executor, checked against the CPU's result `want`, then timed: a table of
/// milliseconds and ratios to the floor (empty without the variable).
fn other_kernels(args: &SelectiveScan<'_>, want: &[f32], reps: usize, floor_ms: f64) -> Result<String, String> {
    let Ok(list) = std::env::var("SCAN_BENCH_SELECTIVE_KERNELS") else {
        return Ok(String::new());
    };
    let mut table = String::from("\n| kernel (forward) | ms | / floor |\n|---|---:|---:|\n");
    for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        let choice = scan_cuda::SelectiveKernelChoice::parse(name)
            .ok_or_else(|| format!("SCAN_BENCH_SELECTIVE_KERNELS: unknown kernel {name:?}"))?;
        let e = |e: scan::Error| format!("selective scan, kernel {name}: {e}");
        let cuda = Cuda::new().map_err(e)?.with_tuning(scan_cuda::Tuning::default().selective_kernel(choice));
        let mut on_device = cuda.upload_selective(args).map_err(e)?;
        cuda.run_selective(&mut on_device).map_err(e)?;
        let got = on_device.download().map_err(e)?;
        if let Some(i) = first_outside(&got.out, want) {
            return Err(format!("selective scan, kernel {name}: GPU out[{i}] = {}, CPU {}", got.out[i], want[i]));
        }
        let mut ms = Vec::new();
        for _ in 0..reps {
            ms.push(cuda.time(|| cuda.run_selective(&mut on_device)).map_err(e)?.1);
        }
        let ms = f64::from(median(ms));
        let line = format!("| {name} | {ms:.3} | {:.2} |", ms / floor_ms);
        eprintln!("{line}");
        table.push_str(&line);
        table.push('\n');
    }
    Ok(table)
}

/// The gradients the bench compares, named: (name, GPU's, CPU's).
fn gradient_pairs<'a>(gpu: &'a SsmGrads, cpu: &'a SsmGrads) -> [(&'static str, &'a [f32], &'a [f32]); 5] {
    [
        ("du", &gpu.du, &cpu.du),
        ("ddelta", &gpu.ddelta, &cpu.ddelta),
        ("dA", &gpu.da, &cpu.da),
        ("dB", &gpu.db, &cpu.db),
        ("dC", &gpu.dc, &cpu.dc),
    ]
}

/// How many of `got` lie outside mamba_ssm's f32 tolerances of `want`.
fn outside_tolerance(got: &[f32], want: &[f32]) -> usize {
    got.iter().zip(want).filter(|(g, w)| !scan_testing::within_mamba_tolerance(f64::from(**g), f64::from(**w))).count()
}

/// The output of the forward's tile kernel (the one the training forward
/// extends) for `on_device`'s arguments, written to `on_device.out`.
fn tile_forward_out(on_device: &mut DeviceSelectiveScan) -> Result<Vec<f32>, String> {
    let e = |e: scan::Error| format!("selective scan (tiles): {e}");
    let tuning = scan_cuda::Tuning::default().selective_kernel(scan_cuda::SelectiveKernelChoice::Tiles);
    let tiles = Cuda::new().map_err(e)?.with_tuning(tuning);
    tiles.run_selective(on_device).map_err(e)?;
    on_device.out.download().map_err(e)
}

/// The backward's rows of the note (checked once against the CPU's f64
/// backward, then timed), or a line saying why it did not run: the GPU
/// backward takes N up to [`SELECTIVE_BACKWARD_MAX_STATE`], and the forward's
/// figures still print past it.
fn backward(
    cuda: &Cuda,
    args: &SelectiveScan<'_>,
    on_device: &mut DeviceSelectiveScan,
    rng: &mut Rng,
    reps: usize,
    scan_ms: f64,
    copy_rate: f64,
) -> Result<String, String> {
    let e = |e: scan::Error| format!("selective scan backward: {e}");
    let SsmShape { batch, dim, len, state } = args.shape;
    if state > SELECTIVE_BACKWARD_MAX_STATE {
        return Ok(format!(
            "\nGPU backward not run: it takes N up to {SELECTIVE_BACKWARD_MAX_STATE}, this shape has {state}.\n"
        ));
    }
    let w = rng.vec(batch * dim * len, |r| r.range_f64(-1.0, 1.0) as f32);
    let dout = cuda.upload(&w).map_err(e)?;
    let grads = cuda.run_selective_backward(on_device, &dout).map_err(e)?.download().map_err(e)?;
    let cpu_grads = Cpu::new().selective_scan_backward(args, &w).map_err(e)?;
    let mut outside = Vec::new();
    for (name, got, want) in gradient_pairs(&grads, &cpu_grads) {
        let bad = outside_tolerance(got, want);
        let worst = got.iter().zip(want.iter()).map(|(g, w)| (g - w).abs() / (1.0 + w.abs())).fold(0.0f32, f32::max);
        outside.push(format!("{name}: {bad} of {} outside, largest |diff| / (1 + |cpu|) {worst:.2e}", got.len()));
    }
    let time = |cuda: &Cuda| -> Result<f64, String> {
        let mut ms = Vec::new();
        for _ in 0..reps {
            ms.push(cuda.time(|| cuda.run_selective_backward(on_device, &dout).map(drop)).map_err(e)?.1);
        }
        Ok(f64::from(median(ms)))
    };
    let backward_ms = time(cuda)?;
    // The same with the device's pool keeping no freed memory (the driver's
    // default; scan-cuda/src/pool.rs): the outputs mapped anew each call.
    let kept = cuda.retained_memory().map_err(e)?;
    cuda.set_retained_memory(0).map_err(e)?;
    let unretained_ms = time(cuda);
    cuda.set_retained_memory(kept.unwrap_or(0)).map_err(e)?;
    let unretained_ms = unretained_ms?;
    // The tile kernels where they apply, and both forms of the lane
    // kernels' gradient blocks (whole rows, G carried along them; ranges of
    // 256 steps, G from the carries kernel's reverse scan), each checked
    // against the CPU first.
    let mut forms = String::new();
    let tuning = scan_cuda::Tuning::default();
    for (tuning, name) in [
        (tuning.selective_backward_tiles(true), "tiles of 32 channels (where they apply)"),
        (tuning.selective_backward_tiles(false).selective_backward_whole_rows(true), "lanes, whole rows"),
        (tuning.selective_backward_tiles(false).selective_backward_whole_rows(false), "lanes, ranges of 256 steps"),
    ] {
        let tuned = Cuda::new().map_err(e)?.with_tuning(tuning);
        let g = tuned.run_selective_backward(on_device, &dout).map_err(e)?.download().map_err(e)?;
        let bad: usize = gradient_pairs(&g, &cpu_grads).iter().map(|(_, got, want)| outside_tolerance(got, want)).sum();
        let ms = time(&tuned)?;
        forms.push_str(&format!(
            "| GPU backward, {name} ({bad} values outside the tolerances) | {ms:.3} |\n| ... / forward | {:.2} |\n",
            ms / scan_ms
        ));
    }
    // A training step: the forward that saves the states for the backward
    // (where it runs by tiles), then the backward from them; both timed
    // with what they allocate (the saved states; the gradients).
    let saved = cuda.run_selective_saving(on_device).map_err(e)?;
    let saved_out = on_device.download().map_err(e)?;
    let same_out = saved_out.out == tile_forward_out(on_device)?;
    let from_saved = cuda.run_selective_backward_saved(on_device, &dout, &saved).map_err(e)?.download().map_err(e)?;
    let same_grads = from_saved == grads;
    let mut reused = cuda.run_selective_saving(on_device).map_err(e)?;
    let (mut saving_ms, mut into_ms, mut from_saved_ms) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..reps {
        saving_ms.push(cuda.time(|| cuda.run_selective_saving(on_device).map(drop)).map_err(e)?.1);
        into_ms.push(cuda.time(|| cuda.run_selective_saving_into(on_device, &mut reused)).map_err(e)?.1);
        from_saved_ms
            .push(cuda.time(|| cuda.run_selective_backward_saved(on_device, &dout, &saved).map(drop)).map_err(e)?.1);
    }
    let [saving_ms, into_ms, from_saved_ms] = [saving_ms, into_ms, from_saved_ms].map(|t| f64::from(median(t)));
    let yes = |b: bool| if b { "yes" } else { "NO" };
    let training = format!(
        "| training forward (run_selective_saving: {} MB of states saved, allocated each call) | {saving_ms:.3} |\n\
         | ... / forward | {:.2} |\n\
         | training forward into the states of the step before (run_selective_saving_into, no allocation) | {into_ms:.3} |\n\
         | ... / forward | {:.2} |\n\
         | GPU backward from the saved states (run_selective_backward_saved; gradients bitwise those of \
         run_selective_backward: {}; out bitwise the tile forward's: {}) | {from_saved_ms:.3} |\n\
         | ... / forward | {:.2} |\n\
         | training step (forward into saved states + backward from them) / (forward + backward) | {:.2} |\n",
        saved.bytes() / 1_000_000,
        saving_ms / scan_ms,
        into_ms / scan_ms,
        yes(same_grads),
        yes(same_out),
        from_saved_ms / scan_ms,
        (into_ms + from_saved_ms) / (scan_ms + backward_ms),
    );
    let backward_bytes = 4 * (7 * batch * dim * len + 4 * batch * state * len);
    let backward_floor_ms = backward_bytes as f64 / copy_rate * 1e3;
    Ok(format!(
        "| GPU backward (one run_selective_backward, its outputs allocated, median of {reps}) | {backward_ms:.3} |\n\
         | backward / forward (bar: at most 3) | {:.2} |\n\
         | GPU backward, the pool keeping no freed memory (retained {} MB by default here) | {unretained_ms:.3} |\n\
         {forms}\
         {training}\
         | backward memory floor: {:.1} MB of u, delta, z, dout, B, C in, du, ddelta, dz, dB, dC out | {backward_floor_ms:.3} |\n\n\
         Backward against the CPU's f64 backward (mamba_ssm's f32 tolerances): {}.\n",
        backward_ms / scan_ms,
        kept.unwrap_or(0) / 1_000_000,
        backward_bytes as f64 / 1e6,
        outside.join("; "),
    ))
}

/// `Cuda::selective_scan` from and to host slices (upload, one launch,
/// download; what `Device::selective_scan` runs on a GPU), wall clock: the
/// f32 arguments, and their activations rounded to bf16, widened on the
/// device (this crate's path) or on the host first (the path before
/// 2026-12-07), which must give the same bits. A table (markdown).
fn host_slices(cuda: &Cuda, args: &SelectiveScan<'_>, reps: usize) -> Result<String, String> {
    use scan::maps::bf16;
    use std::time::Instant;
    let e = |e: scan::Error| format!("selective scan from host slices: {e}");
    let bf = |v: &[f32]| v.iter().map(|&x| bf16::from_f32(x)).collect::<Vec<_>>();
    let (u, delta, b, c) = (bf(args.u), bf(args.delta), bf(args.b.data()), bf(args.c.data()));
    let z = args.z.map(bf);
    let groups = |p: Projection<'_>| match p {
        Projection::Varying { groups, .. } => Some(groups),
        Projection::Fixed(_) => None,
    };
    let projection = |data, groups: Option<usize>| match groups {
        Some(groups) => Projection::Varying { data, groups },
        None => Projection::Fixed(data),
    };
    let mut half = SelectiveScan::new(
        args.shape,
        &u,
        &delta,
        args.a,
        projection(&b[..], groups(args.b)),
        projection(&c[..], groups(args.c)),
    )
    .delta_softplus(args.delta_softplus);
    half.d = args.d;
    half.z = z.as_deref();
    half.delta_bias = args.delta_bias;
    half.initial_state = args.initial_state;
    if cuda.selective_scan(&half).map_err(e)? != cuda.selective_scan(&half.widened().args()).map_err(e)? {
        return Err("selective scan: bf16 activations widened on the device and on the host differ".into());
    }
    let time = |call: &mut dyn FnMut() -> scan::Result<()>| -> Result<f64, String> {
        let mut ms = Vec::with_capacity(reps);
        for _ in 0..reps {
            let started = Instant::now();
            call().map_err(e)?;
            ms.push(started.elapsed().as_secs_f32() * 1e3);
        }
        Ok(f64::from(median(ms)))
    };
    let f32_ms = time(&mut || cuda.selective_scan(args).map(drop))?;
    let mut output = cuda.selective_scan(args).map_err(e)?;
    let into_ms = time(&mut || cuda.selective_scan_into(args, &mut output))?;
    let device_ms = time(&mut || cuda.selective_scan(&half).map(drop))?;
    let host_ms = time(&mut || cuda.selective_scan(&half.widened().args()).map(drop))?;
    let widen_ms = time(&mut || {
        drop(half.widened());
        Ok(())
    })?;
    // Where the f32 call's time goes: its three parts, and the same bytes
    // copied by the unstaged driver copies (pageable memory) for comparison.
    let mut on_device = cuda.upload_selective(args).map_err(e)?;
    let upload_ms = time(&mut || cuda.upload_selective(args).map(drop))?;
    let run_ms = time(&mut || {
        cuda.run_selective(&mut on_device)?;
        cuda.synchronize()
    })?;
    let download_ms = time(&mut || cuda.download_selective(&on_device).map(drop))?;
    let plain_download_ms = time(&mut || on_device.download().map(drop))?;
    // The output alone into host memory touched before (the same Vec each
    // time), against the new Vec of each call above: what the first touch
    // of fresh pages costs.
    let mut reused = vec![0f32; on_device.out.len()];
    let reused_ms = time(&mut || cuda.download_into(&on_device.out, &mut reused))?;
    let reused_plain_ms = time(&mut || on_device.out.download_into(&mut reused))?;
    // The activations into the buffers made above, both ways.
    let mut upload_activations = |staged: bool| -> scan::Result<()> {
        let s = &mut on_device;
        let mut pairs: Vec<(&[f32], &mut scan_cuda::DeviceBuffer<f32>)> = vec![
            (args.u, &mut s.u),
            (args.delta, &mut s.delta),
            (args.b.data(), &mut s.b.data),
            (args.c.data(), &mut s.c.data),
        ];
        if let (Some(z), Some(dev)) = (args.z, s.z.as_mut()) {
            pairs.push((z, dev));
        }
        for (host, dev) in pairs {
            if staged {
                cuda.upload_into(host, dev)?;
            } else {
                dev.upload_from(host)?;
            }
        }
        Ok(())
    };
    let staged_upload_ms = time(&mut || upload_activations(true))?;
    let plain_upload_ms = time(&mut || upload_activations(false))?;
    let activations = |width: usize| {
        let lens = [u.len(), delta.len(), b.len(), c.len(), z.as_ref().map_or(0, Vec::len)];
        (width * lens.iter().sum::<usize>()) as f64 / 1e6
    };
    Ok(format!(
        "\n| from and to host slices (`Cuda::selective_scan`: upload, one launch, download; wall clock, median of {reps}) | ms |\n|---|---:|\n\
         | f32 activations ({:.0} MB of them uploaded) | {f32_ms:.1} |\n\
         | the same into one reused `SsmOutput` (`Cuda::selective_scan_into`) | {into_ms:.1} |\n\
         | bf16 activations, uploaded as bf16 ({:.0} MB) and widened on the device | {device_ms:.1} |\n\
         | bf16 activations widened on the host first (before 2026-12-07; {:.0} MB uploaded) | {host_ms:.1} |\n\
         | of which the host's widening alone | {widen_ms:.1} |\n\
         | f32, its parts: `upload_selective` (checks, allocations, staged copies of {staged} MiB and larger) | {upload_ms:.1} |\n\
         | f32, its parts: `run_selective`, waited for | {run_ms:.2} |\n\
         | f32, its parts: `download_selective` (staged, {:.0} MB) | {download_ms:.1} |\n\
         | the activations alone into those buffers, staged (`Cuda::upload_into`) | {staged_upload_ms:.1} |\n\
         | the same by unstaged driver copies (`DeviceBuffer::upload_from`) | {plain_upload_ms:.1} |\n\
         | the same results by an unstaged driver copy (`DeviceSelectiveScan::download`) | {plain_download_ms:.1} |\n\
         | `out` alone into one Vec touched before, staged (`Cuda::download_into`) | {reused_ms:.1} |\n\
         | the same by an unstaged driver copy (`DeviceBuffer::download_into`) | {reused_plain_ms:.1} |\n",
        activations(4),
        activations(2),
        activations(4),
        on_device.out.num_bytes() as f64 / 1e6,
        staged = scan::cuda::STAGED_TRANSFER_BYTES >> 20,
    ))
}

/// Runs the case; returns the rows and a note with the bounds.
pub fn run(cuda: &Cuda, reps: usize) -> Result<(Vec<Row>, String), String> {
    let e = |e: scan::Error| format!("selective scan: {e}");
    let shape = shape_from_env()?.unwrap_or(SsmShape { batch: 8, dim: 1536, len: 4096, state: 16 });
    let SsmShape { batch, dim, len, state } = shape;
    let mut rng = Rng::fresh("bench selective");
    let mut v = |n: usize, lo: f64, hi: f64| rng.vec(n, |r| r.range_f64(lo, hi) as f32);
    let (u, delta, z) =
        (v(batch * dim * len, -1.0, 1.0), v(batch * dim * len, -4.0, -1.0), v(batch * dim * len, -2.0, 2.0));
    let (a, d, bias) = (v(dim * state, -1.5, -0.5), v(dim, -1.0, 1.0), v(dim, -0.3, 0.3));
    let (b, c) = (v(batch * state * len, -1.0, 1.0), v(batch * state * len, -1.0, 1.0));
    let args = SelectiveScan::new(
        shape,
        &u,
        &delta,
        &a,
        Projection::Varying { data: &b, groups: 1 },
        Projection::Varying { data: &c, groups: 1 },
    )
    .d(&d)
    .z(&z)
    .delta_bias(&bias)
    .delta_softplus(true);

    let mut on_device = cuda.upload_selective(&args).map_err(e)?;
    cuda.run_selective(&mut on_device).map_err(e)?;
    let got = on_device.download().map_err(e)?;
    let want = Cpu::new().selective_scan(&args).map_err(e)?;
    if let Some(i) = first_outside(&got.out, &want.out) {
        return Err(format!("selective scan: GPU out[{i}] = {}, CPU {}", got.out[i], want.out[i]));
    }

    // The floor's bytes, and a device copy of as many bytes for the rate;
    // one call between two events and back to back.
    let floor_bytes = 4 * (4 * batch * dim * len + 2 * batch * state * len);
    let timed = against_copy(cuda, floor_bytes, reps, || cuda.run_selective(&mut on_device)).map_err(e)?;
    let (copy_ms, scan_ms, copies_ms, scans_ms) = (timed.copy_ms, timed.call_ms, timed.copies_ms, timed.calls_ms);
    // The copy moved floor_bytes (half read, half written).
    let copy_rate = floor_bytes as f64 / (copy_ms * 1e-3);
    let floor_ms = floor_bytes as f64 / copy_rate * 1e3;
    let kernels = other_kernels(&args, &want.out, reps, floor_ms)?;

    let host_slices = host_slices(cuda, &args, reps)?;
    let backward = backward(cuda, &args, &mut on_device, &mut rng, reps, scan_ms, copy_rate)?;
    let attribute = |a| cuda.context().attribute(a).map_err(|x| format!("device attribute: {x}"));
    let sms = attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)? as f64;
    let khz = attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_CLOCK_RATE)? as f64;
    let exps = (batch * dim * len * state) as f64;
    let exp_ms = exps / (sms * 16.0 * khz * 1e3) * 1e3;
    let name = format!("selective scan {batch} x {dim} x {len}, N {state}, D + z + softplus");
    let kernel = cuda.selective_kernel_name(&on_device);
    let gbps = floor_bytes as f64 / (scan_ms * 1e-3) / 1e9;
    let note = format!(
        "\n#### Selective scan, {batch} x {dim} x {len}, N {state}, B/C varying, D, z, delta_bias + softplus (f32)\n\n\
         | measure | ms |\n|---|---:|\n\
         | GPU selective scan (one run_selective, kernel {kernel}, median of {reps}) | {scan_ms:.3} |\n\
         | memory floor: {:.1} MB of u, delta, z, B, C in + out, at the same-run copy rate ({:.0} GB/s) | {floor_ms:.3} |\n\
         | exp bound: {exps:.3e} exps at 16 per SM per clock ({sms} SMs, {:.0} MHz) | {exp_ms:.3} |\n\
         | time / floor | {:.2} |\n\
         | GPU selective scan back to back ({CALLS} calls between two events, per call, median of {reps}) | {scans_ms:.3} |\n\
         | memory floor at the copy's back-to-back rate ({:.0} GB/s) | {copies_ms:.3} |\n\
         | time / floor, both back to back | {:.2} |\n\
         {host_slices}{backward}{kernels}",
        floor_bytes as f64 / 1e6,
        copy_rate / 1e9,
        khz / 1e3,
        scan_ms / floor_ms,
        floor_bytes as f64 / (copies_ms * 1e-3) / 1e9,
        scans_ms / copies_ms,
    );
    let rows = vec![
        Row {
            case: name.clone(),
            method: "GPU device copy (floor bytes)".into(),
            gbps: copy_rate / 1e9,
            vs_copy: 1.0,
            vs_sequential: f64::NAN,
        },
        Row {
            case: name,
            method: "GPU selective scan".into(),
            gbps,
            vs_copy: gbps / (copy_rate / 1e9),
            vs_sequential: f64::NAN,
        },
    ];
    Ok((rows, note))
}
