//! What the single-pass scan promises beyond matching the reference
//! (tests/gpu_scan.rs does that for both algorithms):
//!
//! * exact results whatever the order in which blocks start and publish (an
//!   adversarial schedule: tiles claimed out of block order, statuses
//!   published late and at random, aggregates skipped);
//! * tile status reused across scans of growing and shrinking lengths, queued
//!   back to back without a wait;
//! * every status layout and several tile shapes (`Tuning`), and a clear
//!   error for a shape the kernels cannot run;
//! * run-to-run determinism as documented: integers always bitwise identical;
//!   floats identical on Blelloch and (by default) for 4-byte items on
//!   single-pass, within the rounding bound otherwise;
//! * items too large for it fall back to Blelloch, with the reason.
//!
//! Run on a GPU machine: `cargo test --test gpu_single_pass -- --ignored`.

#[path = "../scan-cuda/tests/support/mod.rs"]
mod support;

use std::fmt::Debug;

use scan::ops::{Add, LinearRecurrence, MatMul2x2};
use scan::{CudaOp, ScanSpec};
use scan_core::reference;
use scan_cuda::{Algorithm, Cuda, SinglePassPolicy, StatusLayout, Tuning};
use scan_testing::{within, Rng};
use support::gpu::{cuda, free_lookback_tile, max_len, poisoned, single_pass_tile, small_int};
use support::ops::{AddF64x8, AddU64x20};
use support::user_ops::{AffineI32Counted, QuaternionProduct};

/// Scans `input` on the device into a poisoned output and in place, every
/// spec, and compares both with the reference; the input must not change.
fn check_device<Op: CudaOp>(cuda: &Cuda, ctx: &str, input: &[Op::Item])
where
    Op::Item: PartialEq + Debug,
{
    for spec in ScanSpec::ALL {
        let want = reference::scan::<Op>(input, spec);
        let dev_in = cuda.upload(input).unwrap();
        let mut dev_out = cuda.upload(&poisoned::<Op::Item>(input.len())).unwrap();
        cuda.scan_device_into::<Op>(&dev_in, &mut dev_out, spec).unwrap();
        let got = dev_out.download().unwrap();
        if let Some(i) = (0..input.len()).find(|&i| got[i] != want[i]) {
            panic!("{ctx}, n = {}, {spec:?}, into: item {i}: got {:?}, want {:?}", input.len(), got[i], want[i]);
        }
        assert!(dev_in.download().unwrap() == input, "{ctx}, {spec:?}: the input changed");
        let mut buf = cuda.upload(input).unwrap();
        cuda.scan_device::<Op>(&mut buf, spec).unwrap();
        let got = buf.download().unwrap();
        if let Some(i) = (0..input.len()).find(|&i| got[i] != want[i]) {
            panic!("{ctx}, n = {}, {spec:?}, in place: item {i}: got {:?}, want {:?}", input.len(), got[i], want[i]);
        }
    }
}

/// Lengths around one tile, a look-back window (32 tiles) and many windows.
fn lengths(tile: usize) -> Vec<usize> {
    let mut n = vec![1, tile - 1, tile + 1, 3 * tile + 5, 32 * tile, 40 * tile + 7, 200 * tile + 3];
    n.retain(|&n| n <= max_len());
    n
}

fn adversarial<Op: CudaOp>(label: &str, status: Option<StatusLayout>, mut gen: impl FnMut(&mut Rng) -> Op::Item)
where
    Op::Item: PartialEq + Debug,
{
    let mut rng = Rng::fresh(label);
    let (tile, free_tile) = (single_pass_tile::<Op>(), free_lookback_tile::<Op>());
    // The default shape, and one-warp tiles of one item, so that each block
    // of the persistent grid runs thousands of tiles through 3 slots.
    // Both load schedules (early loads or not) of each.
    let tiny = Tuning::default().threads(32).items_per_thread(1).stages(3);
    let size = std::mem::size_of::<Op::Item>();
    let early = !SinglePassPolicy::for_item(size, 90).is_ok_and(|p| p.early_loads);
    let other = Tuning::default().early_loads(early);
    let tiny_lengths = vec![32 * 1000 + 7, 32 * 20_000 + 1];
    // The default (deterministic for 4-byte items), the free look-back asked
    // for, and the other load schedule (a shape: the free look-back).
    let shapes = [
        (Tuning::default(), lengths(tile)),
        (Tuning::default().deterministic(false), lengths(free_tile)),
        (other, lengths(free_tile)),
        (tiny.early_loads(true), tiny_lengths.clone()),
        (tiny.early_loads(false), tiny_lengths),
    ];
    for (shape, lengths) in shapes {
        for seed in [1u32, 0xC0FFEE] {
            let mut tuning = shape.adversarial_schedule(seed);
            if let Some(layout) = status {
                tuning = tuning.status(layout);
            }
            let cuda = cuda().with_tuning(tuning);
            assert_eq!(cuda.algorithm_for::<Op>().unwrap(), (Algorithm::SinglePass, None), "{label}");
            for &n in lengths.iter().filter(|&&n| n <= max_len()) {
                let input = rng.vec(n, &mut gen);
                check_device::<Op>(&cuda, &format!("{label}, {shape:?}, adversarial seed {seed}"), &input);
            }
        }
        eprintln!("[{label}] exact under the adversarial schedule, {shape:?}, lengths {lengths:?}");
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn an_adversarial_schedule_neither_deadlocks_nor_changes_results() {
    adversarial::<Add<u32>>("add u32 (4 B, packed)", None, |r| r.next_u64() as u32);
    adversarial::<Add<u32>>("add u32 (4 B, split)", Some(StatusLayout::Split), |r| r.next_u64() as u32);
    let lr = |r: &mut Rng| ((r.below(3) as f32 - 1.0), small_int(r) as f32);
    adversarial::<LinearRecurrence<f32>>("linear recurrence f32 (8 B, packed)", None, lr);
    adversarial::<LinearRecurrence<f32>>("linear recurrence f32 (8 B, split)", Some(StatusLayout::Split), lr);
    adversarial::<AffineI32Counted>("affine i32 counted (12 B, tagged)", None, |r| {
        (r.next_u64() as i32, r.next_u64() as i32, r.below(4) as u32)
    });
    adversarial::<AffineI32Counted>("affine i32 counted (12 B, split)", Some(StatusLayout::Split), |r| {
        (r.next_u64() as i32, r.next_u64() as i32, r.below(4) as u32)
    });
    adversarial::<MatMul2x2<i32>>("matmul2x2 i32 (16 B, tagged)", None, scan_testing::unimodular_i32);
    adversarial::<MatMul2x2<i32>>(
        "matmul2x2 i32 (16 B, split)",
        Some(StatusLayout::Split),
        scan_testing::unimodular_i32,
    );
    adversarial::<Add<u32>>("add u32 (4 B, tagged)", Some(StatusLayout::Tagged), |r| r.next_u64() as u32);
    adversarial::<QuaternionProduct>("quaternion product (32 B, tagged)", None, |r| {
        let mut q = [0.0; 4];
        q[r.below(4) as usize] = if r.below(2) == 0 { -1.0 } else { 1.0 };
        q
    });
    adversarial::<AddF64x8>("add f64x8 (64 B)", None, |r| std::array::from_fn(|_| small_int(r)));
}

/// Hundreds of scans of lengths that grow and shrink (so the tile status
/// holds statuses of earlier, longer scans), queued without a wait in
/// between, each into its own output; then every output is checked.
#[test]
#[ignore = "needs a CUDA GPU"]
fn tile_status_is_reused_across_back_to_back_scans_of_any_length() {
    let cuda = cuda();
    let mut rng = Rng::fresh("tile status reuse");
    let tile = single_pass_tile::<Add<u64>>();
    let mut runs = Vec::new();
    for k in 0..300 {
        let tiles = match k % 3 {
            0 => 1 + rng.below(4) as usize,
            1 => 30 + rng.below(70) as usize,
            _ => 1 + rng.below(300) as usize,
        };
        let n = (tiles * tile - rng.below(tile as u64) as usize).min(max_len());
        let spec = ScanSpec::ALL[k % 4];
        let input: Vec<u64> = rng.vec(n, |r| r.next_u64());
        let dev_in = cuda.upload(&input).unwrap();
        let mut dev_out = cuda.alloc::<u64>(n).unwrap();
        cuda.scan_device_into::<Add<u64>>(&dev_in, &mut dev_out, spec).unwrap();
        runs.push((input, spec, dev_in, dev_out));
    }
    for (k, (input, spec, _, dev_out)) in runs.iter().enumerate() {
        let want = reference::scan::<Add<u64>>(input, *spec);
        assert!(dev_out.download().unwrap() == want, "scan {k} ({} items, {spec:?}) is wrong", input.len());
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn every_status_layout_and_tile_shape_is_exact() {
    let mut rng = Rng::fresh("tile shapes");
    let mut failed = Vec::new();
    // (threads, items per thread of 4 bytes, look-back statuses per lane,
    // stages, status layout); 16-byte items take a quarter of the
    // items.
    // (early: a tile's loads issued before the store of the slot's previous
    // tile). No layout set: packed statuses for u32, tagged for the 16-byte
    // matrices. Tagged u32 statuses came out wrong on the H200 until every
    // half of a status word took part in the read (kernels/tile_status.cuh,
    // every_half_loaded): the shapes of 256 x 16 and 96 x 8 below.
    let shapes = [
        (512, 16, 4, 2, None, false),
        (128, 24, 1, 1, None, false),
        (96, 3, 2, 3, None, false),
        (992, 4, 8, 2, Some(StatusLayout::Split), false),
        (32, 1, 1, 4, None, false),
        (128, 64, 3, 1, None, false),
        (256, 32, 1, 2, None, true),
        (96, 3, 2, 3, None, true),
        (128, 16, 1, 4, Some(StatusLayout::Split), true),
        (256, 16, 2, 2, Some(StatusLayout::Tagged), false),
        (256, 16, 1, 2, Some(StatusLayout::Tagged), false),
        (256, 16, 1, 2, Some(StatusLayout::Split), false),
        (96, 8, 1, 3, Some(StatusLayout::Tagged), true),
        (32, 1, 1, 3, None, true),
        (128, 64, 3, 1, None, true),
    ];
    for (threads, items, lookback, stages, status, early) in shapes {
        let tuning = |items: u32| {
            let t = Tuning::default()
                .threads(threads)
                .items_per_thread(items)
                .lookback(lookback)
                .stages(stages)
                .early_loads(early);
            status.map_or(t, |s| t.status(s))
        };
        let (small, large) = (cuda().with_tuning(tuning(items)), cuda().with_tuning(tuning((items / 4).max(1))));
        for n in [1, 1000, 100_003, (1 << 22) + 1].into_iter().filter(|&n| n <= max_len()) {
            let x: Vec<u32> = rng.vec(n, |r| r.next_u64() as u32);
            let m: Vec<[i32; 4]> = rng.vec(n / 4 + 1, scan_testing::unimodular_i32);
            // Every shape runs, so that a failure names all the shapes that fail.
            let run = |f: &dyn Fn()| std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).err();
            let failures = [
                run(&|| check_device::<Add<u32>>(&small, &format!("add u32 {:?}", small.tuning()), &x)),
                run(&|| check_device::<MatMul2x2<i32>>(&large, &format!("matmul2x2 i32 {:?}", large.tuning()), &m)),
            ];
            failed.extend(failures.into_iter().flatten().map(|e| panic_message(&*e)));
        }
    }
    assert!(failed.is_empty(), "{} failures:\n{}", failed.len(), failed.join("\n"));
}

fn panic_message(e: &(dyn std::any::Any + Send)) -> String {
    e.downcast_ref::<String>().cloned().or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string())).unwrap_or_default()
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_tuning_the_kernels_cannot_run_is_an_error_not_a_panic() {
    let cuda = cuda().with_tuning(Tuning::default().threads(992).items_per_thread(64));
    let err = cuda.scan::<Add<f32>>(&[1.0, 2.0], ScanSpec::inclusive()).unwrap_err();
    assert!(matches!(err, scan::Error::BadTuning(_)), "{err}");
    eprintln!("{err}");
}

/// The documented determinism: integer scans are bitwise identical from run to
/// run on both algorithms, and so are Blelloch's float scans (its grouping is
/// fixed by the length and the policy) and, by default, the single-pass f32
/// scans (4-byte items take the deterministic look-back). Other single-pass
/// float scans (and f32 with `with_deterministic(false)`) group by which
/// predecessor's prefix a tile finds ready, so they may vary in the last bits:
/// each run is checked against the rounding bound instead (tests/gpu_scan.rs).
#[test]
#[ignore = "needs a CUDA GPU"]
fn integer_scans_are_run_to_run_identical_and_float_scans_as_documented() {
    let mut rng = Rng::fresh("determinism");
    let n = ((1usize << 22) + 3).min(max_len());
    let ints: Vec<u32> = rng.vec(n, |r| r.next_u64() as u32);
    let mats: Vec<[i64; 4]> = rng.vec(n / 8, scan_testing::unimodular_i64);
    let floats: Vec<f32> = rng.vec(n, |r| r.range_f64(-1.0, 1.0) as f32);
    for algorithm in Algorithm::ALL {
        let cuda = cuda().with_algorithm(algorithm);
        let (di, dm, df) = (cuda.upload(&ints).unwrap(), cuda.upload(&mats).unwrap(), cuda.upload(&floats).unwrap());
        let (mut oi, mut om, mut of) =
            (cuda.alloc::<u32>(n).unwrap(), cuda.alloc::<[i64; 4]>(mats.len()).unwrap(), cuda.alloc::<f32>(n).unwrap());
        let (want_i, want_m) = (
            reference::scan::<Add<u32>>(&ints, ScanSpec::inclusive()),
            reference::scan::<MatMul2x2<i64>>(&mats, ScanSpec::inclusive()),
        );
        let mut float_results: Vec<Vec<u32>> = Vec::new();
        for run in 0..50 {
            cuda.scan_device_into::<Add<u32>>(&di, &mut oi, ScanSpec::inclusive()).unwrap();
            cuda.scan_device_into::<MatMul2x2<i64>>(&dm, &mut om, ScanSpec::inclusive()).unwrap();
            cuda.scan_device_into::<Add<f32>>(&df, &mut of, ScanSpec::inclusive()).unwrap();
            assert!(oi.download().unwrap() == want_i, "{algorithm}: run {run} of u32 add differs");
            assert!(om.download().unwrap() == want_m, "{algorithm}: run {run} of i64 matmul2x2 differs");
            let bits: Vec<u32> = of.download().unwrap().iter().map(|f| f.to_bits()).collect();
            if !float_results.contains(&bits) {
                float_results.push(bits);
            }
        }
        eprintln!("{algorithm}: 50 runs, integers identical, {} distinct f32 add results", float_results.len());
        // Blelloch's grouping is fixed; so is the single-pass one of 4-byte
        // items, which take the deterministic look-back by default.
        assert_eq!(float_results.len(), 1, "{algorithm}: f32 add must be run-to-run identical by default");
        // The other kinds and directions (exclusive, reverse: other kernels'
        // instantiations of the same grouping), 10 runs each.
        for spec in ScanSpec::ALL.into_iter().filter(|&s| s != ScanSpec::inclusive()) {
            let mut first: Option<Vec<u32>> = None;
            for run in 0..10 {
                cuda.scan_device_into::<Add<f32>>(&df, &mut of, spec).unwrap();
                let bits: Vec<u32> = of.download().unwrap().iter().map(|f| f.to_bits()).collect();
                match &first {
                    None => first = Some(bits),
                    Some(want) => assert!(bits == *want, "{algorithm}, {spec:?}: run {run} of f32 add differs"),
                }
            }
        }
    }
}

/// `Cuda::with_deterministic(true)`: 50 f32 add scans of 2^28 items give the
/// bits of the first, on five executors that perturb the schedule (the
/// adversarial schedule: blocks claiming in scrambled order, random pauses
/// before publishing, under several seeds; and register budgets of 1 to 3
/// blocks per SM), ten runs each; so do a float linear recurrence (not
/// commutative) and a scan from host memory (chunks joined by carries). The
/// first result is checked against an f64 evaluation, so that "identical"
/// is not "identically wrong".
#[test]
#[ignore = "needs a CUDA GPU"]
fn deterministic_float_scans_are_bitwise_identical_whatever_the_schedule() {
    let mut rng = Rng::fresh("deterministic look-back");
    let n = (1usize << 28).min(max_len());
    let x: Vec<f32> = rng.vec(n, |r| r.range_f64(-1.0, 1.0) as f32);
    let lr: Vec<(f32, f32)> = rng.vec(n / 4, |r| (r.range_f64(0.9, 1.0) as f32, r.range_f64(-1.0, 1.0) as f32));
    let base = cuda().with_deterministic(true);
    let t = base.tuning();
    // Each executor with its own buffers (its own stream).
    let executors: Vec<Cuda> = vec![
        cuda().with_tuning(t),
        cuda().with_tuning(t.adversarial_schedule(1)),
        cuda().with_tuning(t.blocks_per_sm(1)),
        cuda().with_tuning(t.blocks_per_sm(2).adversarial_schedule(0xC0FFEE)),
        cuda().with_tuning(t.blocks_per_sm(3).adversarial_schedule(77)),
    ];
    let (dx, dlr) = (base.upload(&x).unwrap(), base.upload(&lr).unwrap());
    let (mut ox, mut olr) = (base.alloc::<f32>(n).unwrap(), base.alloc::<(f32, f32)>(lr.len()).unwrap());
    base.scan_device_into::<Add<f32>>(&dx, &mut ox, ScanSpec::inclusive()).unwrap();
    base.scan_device_into::<LinearRecurrence<f32>>(&dlr, &mut olr, ScanSpec::inclusive()).unwrap();
    let (want_x, want_lr) = (ox.download().unwrap(), olr.download().unwrap());
    drop((dx, dlr, ox, olr));
    // Within the rounding of any grouping: |error| <= (i + 1) eps sum|x| (a
    // loose bound, but one a wrong prefix breaks).
    let (mut exact, mut magnitude) = (0.0f64, 0.0f64);
    for (i, &v) in x.iter().enumerate() {
        exact += f64::from(v);
        magnitude += f64::from(v).abs();
        let bound = (i + 1) as f64 * f64::from(f32::EPSILON) * magnitude;
        assert!((f64::from(want_x[i]) - exact).abs() <= bound, "item {i}: {} against {exact}", want_x[i]);
    }
    let same = |a: &[f32], b: &[f32]| a.iter().zip(b).all(|(a, b)| a.to_bits() == b.to_bits());
    let m = n.min(1 << 24);
    let want_host = base.scan::<Add<f32>>(&x[..m], ScanSpec::inclusive()).unwrap();
    for (e, cuda) in executors.iter().enumerate() {
        let (dx, dlr) = (cuda.upload(&x).unwrap(), cuda.upload(&lr).unwrap());
        let (mut ox, mut olr) = (cuda.alloc::<f32>(n).unwrap(), cuda.alloc::<(f32, f32)>(lr.len()).unwrap());
        for run in 0..10 {
            cuda.scan_device_into::<Add<f32>>(&dx, &mut ox, ScanSpec::inclusive()).unwrap();
            assert!(same(&ox.download().unwrap(), &want_x), "f32 add, executor {e} run {run}: {:?}", cuda.tuning());
        }
        cuda.scan_device_into::<LinearRecurrence<f32>>(&dlr, &mut olr, ScanSpec::inclusive()).unwrap();
        let got = olr.download().unwrap();
        assert!(
            got.iter().zip(&want_lr).all(|(a, b)| a.0.to_bits() == b.0.to_bits() && a.1.to_bits() == b.1.to_bits()),
            "linear recurrence f32, executor {e}: {:?}",
            cuda.tuning()
        );
        // From host slices (chunks joined by carries, so another grouping
        // than one launch's): the same bits on every executor.
        let host = cuda.scan::<Add<f32>>(&x[..m], ScanSpec::inclusive()).unwrap();
        assert!(same(&host, &want_host), "host scan, executor {e}: {:?}", cuda.tuning());
    }
    eprintln!("deterministic: 50 f32 add scans of {n} items bitwise identical under perturbed schedules");
}

/// `with_deterministic(true)` for items other than 4 bytes (fixed groups of
/// 64 tiles): f64 sums (8 bytes), the f64 recurrence (16, not commutative)
/// and the quaternion product (32, not commutative), every kind and
/// direction, give the same bits on three executors (the default schedule,
/// an adversarial one, one block per SM), and the first result is close to
/// the sequential fold, so that "identical" is not "identically wrong".
#[test]
#[ignore = "needs a CUDA GPU"]
fn the_deterministic_mode_holds_for_wider_items_in_every_direction() {
    let mut rng = Rng::fresh("deterministic wide items");
    let n = ((1usize << 21) + 5).min(max_len());
    let sums: Vec<f64> = rng.vec(n, |r| r.range_f64(-1.0, 1.0));
    let recurrence: Vec<(f64, f64)> = rng.vec(n, |r| (r.range_f64(0.9, 1.0), r.range_f64(-1.0, 1.0)));
    // Unit quaternions: their products stay of norm 1.
    let quaternions: Vec<[f64; 4]> = rng.vec(n / 4, |r| {
        let q = [0; 4].map(|_| r.range_f64(-1.0, 1.0));
        let norm = q.iter().map(|v| v * v).sum::<f64>().sqrt().max(1e-3);
        q.map(|v| v / norm)
    });
    same_bits_on_every_schedule::<Add<f64>>("f64 add", &sums, |v| vec![*v]);
    same_bits_on_every_schedule::<LinearRecurrence<f64>>("f64 recurrence", &recurrence, |v| vec![v.0, v.1]);
    same_bits_on_every_schedule::<QuaternionProduct>("quaternion product", &quaternions, |v| v.to_vec());
}

/// Scans `input` with every spec on three deterministic executors and checks
/// that each gives the first one's bits, and that the first is within 1e-6
/// (relative, past 1) of the sequential fold in every component.
fn same_bits_on_every_schedule<Op: CudaOp>(what: &str, input: &[Op::Item], parts: impl Fn(&Op::Item) -> Vec<f64>) {
    let t = Tuning::default().deterministic(true);
    let executors = [
        cuda().with_tuning(t),
        cuda().with_tuning(t.adversarial_schedule(0xD1CE)),
        cuda().with_tuning(t.blocks_per_sm(1)),
    ];
    let flat = |items: &[Op::Item]| items.iter().flat_map(&parts).collect::<Vec<f64>>();
    for spec in ScanSpec::ALL {
        let want = flat(&reference::scan::<Op>(input, spec));
        let mut first: Option<Vec<u64>> = None;
        for (e, cuda) in executors.iter().enumerate() {
            let dx = cuda.upload(input).unwrap();
            let mut out = cuda.upload(&poisoned::<Op::Item>(input.len())).unwrap();
            cuda.scan_device_into::<Op>(&dx, &mut out, spec).unwrap();
            let got = flat(&out.download().unwrap());
            let bits: Vec<u64> = got.iter().map(|v| v.to_bits()).collect();
            match &first {
                None => {
                    if let Some(i) = (0..got.len()).find(|&i| !within(got[i], want[i], 1e-6 * want[i].abs().max(1.0))) {
                        panic!("{what}, {spec:?}: component {i} is {}, the sequential fold {}", got[i], want[i]);
                    }
                    first = Some(bits);
                }
                Some(bits0) => assert!(bits == *bits0, "{what}, {spec:?}: executor {e} ({:?}) differs", cuda.tuning()),
            }
        }
    }
    eprintln!("{what}: {} items, every spec, the same bits on 3 schedules", input.len());
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn items_too_large_for_the_single_pass_kernels_fall_back_to_blelloch() {
    let cuda = cuda();
    let (algorithm, why) = cuda.algorithm_for::<AddU64x20>().unwrap();
    assert_eq!(algorithm, Algorithm::Blelloch);
    let why = why.expect("a fallback says why");
    assert!(why.contains("160 bytes"), "{why}");
    let mut rng = Rng::fresh("fallback");
    let x: Vec<[u64; 20]> = rng.vec(5000, |r| std::array::from_fn(|_| r.next_u64()));
    check_device::<AddU64x20>(&cuda, "add u64x20 (160 B)", &x);
    assert_eq!(cuda.algorithm_for::<Add<u32>>().unwrap(), (Algorithm::SinglePass, None));
}
