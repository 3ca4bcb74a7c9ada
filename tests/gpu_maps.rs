//! Fused maps on the GPU (`Cuda::scan_mapped`, `scan_mapped_device_into`):
//! the single-pass kernel lifting items from one to three input arrays and
//! projecting results, against `scan::maps::reference`, item by item, on
//! sizes around every single-pass boundary, every (kind, direction), into
//! outputs poisoned first, with the inputs checked unchanged afterwards; the
//! deterministic look-back and an adversarial schedule too. The recurrence
//! is not commutative. Run on a GPU machine:
//! `cargo test --test gpu_maps -- --ignored`.

#[path = "../scan-cuda/tests/support/mod.rs"]
mod support;

mod macro_maps_ops;

use macro_maps_ops::{
    Alternate, Ema, GatedInput, SeenSoFar, SumInF64, Uniform, WeightedMean, WeightedSums, WrapAround,
};
use scan::maps::{self, bf16, f16, CudaMaps, Recurrence, Widen, WidenNarrow};
use scan::ops::{Add, LinearRecurrence, Max};
use scan::{CudaOp, Error, ScanSpec};
use scan_cuda::{Algorithm, Cuda, DeviceBuffer, HostInputs, Tuning};
use scan_testing::{boundary_sizes, Rng};
use support::gpu::{cuda, mapped_rows_tile, mapped_tile, max_len, poisoned};

/// Sizes around one and two tiles of the fused-map kernels, one look-back
/// window (32 tiles) and two, and a large odd size; and sizes 2, 4 and 6
/// past a multiple of 8, so that a reverse scan's whole segments start at
/// every alignment (their groups of positions move as vectors only when
/// aligned, else item by item). `input_bytes`: what the maps read per
/// position (the tile depends on it).
fn sizes<Op: CudaOp>(input_bytes: usize) -> Vec<usize> {
    let tile = mapped_tile::<Op>(input_bytes);
    let mut sizes = boundary_sizes(tile);
    sizes.extend([3 * tile + 2, 3 * tile + 4, 3 * tile + 6]);
    for t in [32 * tile, 64 * tile] {
        sizes.extend([t - 1, t, t + 1]);
    }
    sizes.push((1 << 22) + 7);
    sizes.retain(|&n| n <= max_len());
    sizes.sort_unstable();
    sizes.dedup();
    sizes
}

/// Checks `M` over the host arrays `input` (of `n` positions) on `cuda`, for
/// every spec: the host API, and the device API into a poisoned output, each
/// item against the reference.
fn check<Op, M, I>(cuda: &Cuda, what: &str, n: usize, input: I)
where
    Op: CudaOp,
    M: CudaMaps<Op>,
    M::Output: PartialEq + std::fmt::Debug,
    I: HostInputs<Item = M::Input> + Copy,
{
    let device = input.upload(cuda).unwrap();
    for spec in ScanSpec::ALL {
        let want = maps::reference::<Op, M, _>(input, spec).unwrap();
        let mut got = poisoned::<M::Output>(n);
        cuda.scan_mapped::<Op, M, _>(input, &mut got, spec).unwrap_or_else(|e| panic!("{what}, n {n}, {spec:?}: {e}"));
        assert_same(&got, &want, &format!("{what}, host API, n {n}, {spec:?}"));

        let mut out = cuda.upload(&poisoned::<M::Output>(n)).unwrap();
        cuda.scan_mapped_device_into::<Op, M, _>(&device, &mut out, spec).unwrap();
        assert_same(&out.download().unwrap(), &want, &format!("{what}, device API, n {n}, {spec:?}"));
    }
}

fn assert_same<T: PartialEq + std::fmt::Debug>(got: &[T], want: &[T], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    if let Some(i) = got.iter().zip(want).position(|(g, w)| g != w) {
        let count = got.iter().zip(want).filter(|(g, w)| g != w).count();
        panic!("{what}: {count} mismatches; first at {i}: got {:?}, want {:?}", got[i], want[i]);
    }
}

/// The executors the maps run on, each with the largest size it takes: the
/// default single-pass scan, the deterministic look-back, staged loads
/// (`Tuning::staged_maps`: whole segments' arrays as vectors, lifted in
/// shared memory), item slots where narrow slots or grouped runs are the
/// default, no early
/// loads, and an adversarial schedule (blocks claim out of order
/// and publish late, so the look-back meets every mix of statuses) on sizes
/// up to 33 tiles.
fn executors<Op: CudaOp>(input_bytes: usize) -> Vec<(Cuda, usize)> {
    let chaos = Tuning::default().adversarial_schedule(0x5eed);
    vec![
        (cuda(), usize::MAX),
        (cuda().with_tuning(Tuning::default().deterministic(true)), usize::MAX),
        (cuda().with_tuning(Tuning::default().staged_maps(true)), usize::MAX),
        // Maps that take narrow slots (kernels/narrow.cuh) by default,
        // through item slots instead.
        (cuda().with_tuning(Tuning::default().narrow_slots(false)), usize::MAX),
        // Maps that keep grouped runs (kernels/grouped.cuh) by default
        // (forward scans whose inputs and output move in the same groups:
        // the f32 recurrence from a[] and b[]), through item slots instead.
        (cuda().with_tuning(Tuning::default().grouped_runs(false)), usize::MAX),
        // No early loads: whole segments load after the store (narrow
        // slots: the one place their vector path is taken then).
        (cuda().with_tuning(Tuning::default().early_loads(false)), usize::MAX),
        (cuda().with_tuning(chaos), 33 * mapped_tile::<Op>(input_bytes) + 1),
    ]
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn the_recurrence_from_a_and_b_arrays_matches_the_reference() {
    for (cuda, largest) in executors::<LinearRecurrence<f32>>(8) {
        let mut rng = Rng::fresh("fused recurrence");
        for n in sizes::<LinearRecurrence<f32>>(8).into_iter().filter(|&n| n <= largest) {
            // a in {-1, 0, 1} and small integer b: every h is an exact
            // integer, so any grouping gives the reference's bits.
            let a: Vec<f32> = (0..n).map(|_| rng.below(3) as f32 - 1.0).collect();
            let b: Vec<f32> = (0..n).map(|_| rng.below(201) as f32 - 100.0).collect();
            check::<LinearRecurrence<f32>, Recurrence, _>(&cuda, "recurrence f32", n, (&a[..], &b[..]));
            // One array of (a, b) pairs, projected to h alone.
            let ab: Vec<(f32, f32)> = a.iter().copied().zip(b.iter().copied()).collect();
            check::<LinearRecurrence<f32>, Recurrence, _>(&cuda, "recurrence from pairs", n, &ab[..]);
        }
        for n in sizes::<LinearRecurrence<f64>>(16).into_iter().filter(|&n| n <= largest) {
            let a: Vec<f64> = (0..n).map(|_| rng.below(3) as f64 - 1.0).collect();
            let b: Vec<f64> = (0..n).map(|_| rng.below(201) as f64 - 100.0).collect();
            check::<LinearRecurrence<f64>, Recurrence, _>(&cuda, "recurrence f64", n, (&a[..], &b[..]));
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn the_device_inputs_are_left_unchanged() {
    let cuda = cuda();
    let mut rng = Rng::fresh("fused inputs unchanged");
    let n = 33 * mapped_tile::<LinearRecurrence<f32>>(8) + 5;
    let a: Vec<f32> = (0..n).map(|_| rng.below(3) as f32 - 1.0).collect();
    let b: Vec<f32> = (0..n).map(|_| rng.below(9) as f32).collect();
    let (da, db) = (cuda.upload(&a).unwrap(), cuda.upload(&b).unwrap());
    let mut h = cuda.upload(&poisoned::<f32>(n)).unwrap();
    for spec in ScanSpec::ALL {
        cuda.scan_mapped_device_into::<LinearRecurrence<f32>, Recurrence, _>((&da, &db), &mut h, spec).unwrap();
        assert!(da.download().unwrap() == a && db.download().unwrap() == b, "{spec:?}: an input changed");
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn half_precision_inputs_accumulate_in_f32() {
    for (cuda, largest) in executors::<Add<f32>>(2) {
        let mut rng = Rng::fresh("fused widen");
        for n in sizes::<Add<f32>>(2).into_iter().filter(|&n| n <= largest) {
            let x: Vec<bf16> = (0..n).map(|_| bf16::from_f32(rng.below(5) as f32 - 2.0)).collect();
            check::<Add<f32>, Widen<bf16>, _>(&cuda, "bf16 -> f32 sums", n, &x[..]);
            // Small integers: every f32 sum is exact, whatever the grouping,
            // and so is its bf16 rounding.
            check::<Add<f32>, WidenNarrow<bf16>, _>(&cuda, "bf16 -> f32 sums -> bf16", n, &x[..]);
            let y: Vec<f16> = (0..n).map(|_| f16::from_f64(rng.range_f64(-6e4, 6e4))).collect();
            check::<Max<f32>, WidenNarrow<f16>, _>(&cuda, "f16 maxima", n, &y[..]);
        }
    }
    // 2^24 bf16 ones sum to 2^24 in f32, where a bf16 sum stops at 256
    // (unless sizes are capped, as under compute-sanitizer).
    if max_len() >= 1 << 24 {
        let ones = vec![bf16::ONE; 1 << 24];
        let mut sums = vec![0.0f32; 1 << 24];
        cuda().scan_mapped::<Add<f32>, Widen<bf16>, _>(&ones[..], &mut sums, ScanSpec::inclusive()).unwrap();
        assert_eq!(sums[(1 << 24) - 1], (1u32 << 24) as f32);
    }
}

/// bf16 and f16 sums in narrow slots take the deterministic look-back's
/// fixed groups by default (`SinglePassPolicy::narrow_sums_for`): sums of
/// values whose f32 roundings depend on the grouping give the same bits on
/// every run, over several groups of 128 tiles, under the default schedule
/// and an adversarial one.
#[test]
#[ignore = "needs a CUDA GPU"]
fn bf16_sums_are_bitwise_the_same_from_run_to_run() {
    // bf16 in [0, 1); f16 in [0, 1/64), so that the sums stay under f16's
    // largest finite value (65504) over 3 x 128 tiles.
    half_sums_are_bitwise_the_same_from_run_to_run::<bf16>("bf16", 1.0);
    half_sums_are_bitwise_the_same_from_run_to_run::<f16>("f16", 1.0 / 64.0);
}

fn half_sums_are_bitwise_the_same_from_run_to_run<H>(what: &str, top: f64)
where
    H: maps::Half + scan::CudaType,
    WidenNarrow<H>: CudaMaps<Add<f32>, Input = H, Output = H>,
{
    let mut rng = Rng::fresh(&format!("{what} sums determinism"));
    let tile = mapped_tile::<Add<f32>>(2);
    let chaos = cuda().with_tuning(Tuning::default().adversarial_schedule(0x5eed));
    for (cuda, n, runs) in [(cuda(), 3 * 128 * tile + 4321, 20), (chaos, 140 * tile + 7, 3)] {
        let n = n.min(max_len());
        let x: Vec<H> = (0..n).map(|_| H::narrow(rng.range_f64(0.0, top) as f32)).collect();
        let dx = cuda.upload(&x).unwrap();
        let mut y = cuda.upload(&poisoned::<H>(n)).unwrap();
        let mut first: Option<Vec<u32>> = None;
        for run in 0..runs {
            cuda.scan_mapped_device_into::<Add<f32>, WidenNarrow<H>, _>(&dx, &mut y, ScanSpec::inclusive()).unwrap();
            // Widening is exact and one to one (no NaNs here): the f32 bits
            // tell the 2-byte values apart.
            let bits: Vec<u32> = y.download().unwrap().iter().map(|v| v.widen().to_bits()).collect();
            match &first {
                None => {
                    // The sums themselves, every one within the narrow
                    // type's rounding (bf16: a relative 2^-8; the f32 sums'
                    // own errors are far smaller) of the exact prefix sum.
                    let mut exact = 0.0f64;
                    for (i, (v, b)) in x.iter().zip(&bits).enumerate() {
                        exact += f64::from(v.widen());
                        let got = f64::from(f32::from_bits(*b));
                        assert!(
                            (got - exact).abs() <= exact / 128.0,
                            "{what}, n = {n}: sum {i} is {got}, want {exact}"
                        );
                    }
                    first = Some(bits);
                }
                Some(want) => assert!(bits == *want, "{what}, n = {n}, run {run}: the sums changed"),
            }
        }
    }
}

/// The f32 recurrence from a[] and b[] keeps grouped runs and takes the
/// deterministic look-back's fixed groups by default
/// (`SinglePassPolicy::grouped_maps_for`): values whose f32 roundings depend
/// on the grouping give the same bits on every run, forward and reverse,
/// over several groups of 128 tiles, under the default schedule and an
/// adversarial one.
#[test]
#[ignore = "needs a CUDA GPU"]
fn the_fused_recurrence_is_bitwise_the_same_from_run_to_run() {
    let mut rng = Rng::fresh("fused recurrence determinism");
    let tile = mapped_tile::<LinearRecurrence<f32>>(8);
    let chaos = cuda().with_tuning(Tuning::default().adversarial_schedule(0x5eed));
    for (cuda, n, runs) in [(cuda(), 3 * 128 * tile + 4321, 20), (chaos, 140 * tile + 7, 3)] {
        let n = n.min(max_len());
        let a: Vec<f32> = (0..n).map(|_| rng.range_f64(0.9, 1.0) as f32).collect();
        let b: Vec<f32> = (0..n).map(|_| rng.range_f64(-1.0, 1.0) as f32).collect();
        let inputs = (cuda.upload(&a).unwrap(), cuda.upload(&b).unwrap());
        let mut h = cuda.upload(&poisoned::<f32>(n)).unwrap();
        for spec in [ScanSpec::inclusive(), ScanSpec::inclusive().reversed()] {
            let mut first: Option<Vec<u32>> = None;
            for run in 0..runs {
                cuda.scan_mapped_device_into::<LinearRecurrence<f32>, Recurrence, _>(&inputs, &mut h, spec).unwrap();
                let bits: Vec<u32> = h.download().unwrap().iter().map(|v| v.to_bits()).collect();
                match &first {
                    None => {
                        // The values themselves, against the f64 reference.
                        let want = maps::reference::<LinearRecurrence<f64>, Recurrence, _>(
                            (
                                &a.iter().map(|&x| f64::from(x)).collect::<Vec<_>>()[..],
                                &b.iter().map(|&x| f64::from(x)).collect::<Vec<_>>()[..],
                            ),
                            spec,
                        )
                        .unwrap();
                        for (t, (&got, &w)) in bits.iter().zip(&want).enumerate() {
                            let got = f64::from(f32::from_bits(got));
                            assert!(
                                (got - w).abs() <= 1e-4 * (1.0 + w.abs()),
                                "n = {n}, {spec:?}, h[{t}] = {got}, want {w}"
                            );
                        }
                        first = Some(bits);
                    }
                    Some(want) => assert!(bits == *want, "n = {n}, {spec:?}, run {run}: the results changed"),
                }
            }
        }
    }
}

/// Maps declared with `#[scan_maps]` (tests/macro_maps_ops): from two and
/// three arrays, into another item type (f32 summed in f64), and from one
/// array into a non-commutative operator's wider items. The data
/// keep every value an exact integer, so any grouping gives the reference.
#[test]
#[ignore = "needs a CUDA GPU"]
fn declared_maps_match_the_reference() {
    for (cuda, largest) in executors::<LinearRecurrence<f32>>(8) {
        let mut rng = Rng::fresh("declared maps");
        for n in sizes::<LinearRecurrence<f32>>(8).into_iter().filter(|&n| n <= largest) {
            let alpha: Vec<f32> = (0..n).map(|_| rng.below(2) as f32).collect();
            let x: Vec<f32> = (0..n).map(|_| rng.below(17) as f32 - 8.0).collect();
            check::<LinearRecurrence<f32>, Ema, _>(&cuda, "ema", n, (&alpha[..], &x[..]));
            let a: Vec<f32> = (0..n).map(|_| rng.below(3) as f32 - 1.0).collect();
            let g: Vec<f32> = (0..n).map(|_| rng.below(2) as f32).collect();
            check::<LinearRecurrence<f32>, GatedInput, _>(&cuda, "gated input", n, (&a[..], &x[..], &g[..]));
        }
        for n in sizes::<Add<f64>>(4).into_iter().filter(|&n| n <= largest) {
            let x: Vec<f32> = (0..n).map(|_| rng.below(17) as f32 - 8.0).collect();
            check::<Add<f64>, SumInF64, _>(&cuda, "f32 summed in f64", n, &x[..]);
            // Non-commutative through narrow slots: h_t = x_t - h_{t-1},
            // small integers, exact in any grouping.
            check::<LinearRecurrence<f32>, Alternate, _>(&cuda, "alternating sums", n, &x[..]);
            // A struct literal's lift (its fields read the input) and
            // annotated float fields divided in project; weights 1 or 2.
            let w: Vec<f32> = (0..n).map(|_| 1.0 + rng.below(2) as f32).collect();
            check::<WeightedSums, WeightedMean, _>(&cuda, "weighted mean", n, (&x[..], &w[..]));
        }
        // Integer arithmetic wraps in the translation, on both sides.
        for n in sizes::<Add<u32>>(4).into_iter().filter(|&n| n <= largest) {
            let x: Vec<u32> = (0..n).map(|_| rng.next_u64() as u32).collect();
            check::<Add<u32>, WrapAround, _>(&cuda, "u32 wrapping lift", n, &x[..]);
            // `^` and `!` on bool fields the maps' CUDA does not see.
            let v: Vec<u32> = (0..n).map(|_| rng.below(8) as u32).collect();
            check::<SeenSoFar, Uniform, _>(&cuda, "bool fields through ^ and !", n, &v[..]);
        }
    }
}

/// Rows through the maps (`Cuda::scan_mapped_rows`, one launch for all
/// rows): rows of whole tiles of the fused kernels (`TileRows`), rows around
/// one tile and many short rows (`RowHeads`), one row (the plain mapped
/// scan), against `scan::maps::reference_rows` item by item, for every spec,
/// host and device API, into poisoned outputs; on the default schedule, the
/// deterministic look-back and an adversarial schedule.
#[test]
#[ignore = "needs a CUDA GPU"]
fn fused_rows_match_the_reference() {
    let tile = mapped_rows_tile::<LinearRecurrence<f32>>(8);
    let shapes = [
        (1, 3 * tile + 5),
        (2, tile),
        (3, 2 * tile),
        (2, 40 * tile),
        (5, tile - 1),
        (7, tile + 1),
        (1000, 7),
        (33, 3 * tile + 5),
        (4096, 33),
    ];
    let chaos = Tuning::default().adversarial_schedule(0x5eed);
    let executors = [cuda(), cuda().with_tuning(Tuning::default().deterministic(true)), cuda().with_tuning(chaos)];
    let mut rng = Rng::fresh("fused rows");
    for cuda in &executors {
        for (rows, row_len) in shapes {
            let n = rows * row_len;
            if n > max_len() {
                continue;
            }
            // Exact integers in any grouping, as above.
            let a: Vec<f32> = (0..n).map(|_| rng.below(3) as f32 - 1.0).collect();
            let b: Vec<f32> = (0..n).map(|_| rng.below(201) as f32 - 100.0).collect();
            let device = (cuda.upload(&a).unwrap(), cuda.upload(&b).unwrap());
            for spec in ScanSpec::ALL {
                let what = format!("{rows} rows of {row_len}, {spec:?}");
                let want =
                    maps::reference_rows::<LinearRecurrence<f32>, Recurrence, _>((&a[..], &b[..]), rows, spec).unwrap();
                let mut got = poisoned::<f32>(n);
                cuda.scan_mapped_rows::<LinearRecurrence<f32>, Recurrence, _>((&a[..], &b[..]), &mut got, rows, spec)
                    .unwrap_or_else(|e| panic!("{what}: {e}"));
                assert_same(&got, &want, &format!("{what}, host API"));
                let mut out = cuda.upload(&poisoned::<f32>(n)).unwrap();
                cuda.scan_mapped_rows_device_into::<LinearRecurrence<f32>, Recurrence, _>(
                    &device, &mut out, rows, spec,
                )
                .unwrap();
                assert_same(&out.download().unwrap(), &want, &format!("{what}, device API"));
            }
            assert_same(&device.0.download().unwrap(), &a, "a[] unchanged");
            assert_same(&device.1.download().unwrap(), &b, "b[] unchanged");
        }
        // bf16 sums in f32 by rows (item slots, unlike the whole scan's
        // narrow slots), exact on small integers: rows as segments and rows
        // of whole tiles.
        let bf16_tile = mapped_rows_tile::<Add<f32>>(2);
        for (rows, row_len) in [(6, 2 * bf16_tile + 3), (4, 2 * bf16_tile)] {
            let x: Vec<bf16> = (0..rows * row_len).map(|_| bf16::from_f32(rng.below(9) as f32 - 4.0)).collect();
            for spec in ScanSpec::ALL {
                let want = maps::reference_rows::<Add<f32>, WidenNarrow<bf16>, _>(&x[..], rows, spec).unwrap();
                let mut got = poisoned::<bf16>(x.len());
                cuda.scan_mapped_rows::<Add<f32>, WidenNarrow<bf16>, _>(&x[..], &mut got, rows, spec).unwrap();
                assert_same(&got, &want, &format!("bf16 sums, {rows} rows of {row_len}, {spec:?}"));
            }
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn bad_mapped_rows_are_errors_that_write_nothing() {
    let cuda = cuda();
    let (a, b) = (vec![1.0f32; 6], vec![1.0f32; 6]);
    let spec = ScanSpec::inclusive();
    type Lr = LinearRecurrence<f32>;
    // Host API.
    let mut h = vec![7.0f32; 6];
    for rows in [0, 4] {
        let got = cuda.scan_mapped_rows::<Lr, Recurrence, _>((&a[..], &b[..]), &mut h, rows, spec);
        assert!(matches!(got, Err(Error::BadShape { len: 6, .. })), "{rows} rows: {got:?}");
    }
    let got = cuda.scan_mapped_rows::<Lr, Recurrence, _>((&a[..], &b[..5]), &mut h, 2, spec);
    assert!(matches!(&got, Err(Error::WrongShape { argument, .. }) if argument == "inputs.1"), "{got:?}");
    let got = cuda.scan_mapped_rows::<Lr, Recurrence, _>((&a[..], &b[..]), &mut h[..4], 2, spec);
    assert!(matches!(got, Err(Error::LengthMismatch { .. })), "{got:?}");
    assert_eq!(h, vec![7.0; 6]);
    // Device API: the output keeps its bytes.
    let inputs = (cuda.upload(&a).unwrap(), cuda.upload(&b).unwrap());
    let mut out = cuda.upload(&[7.0f32; 6]).unwrap();
    let got = cuda.scan_mapped_rows_device_into::<Lr, Recurrence, _>(&inputs, &mut out, 4, spec);
    assert!(matches!(got, Err(Error::BadShape { len: 6, rows: 4 })), "{got:?}");
    let mut short = cuda.upload(&[7.0f32; 4]).unwrap();
    let got = cuda.scan_mapped_rows_device_into::<Lr, Recurrence, _>(&inputs, &mut short, 2, spec);
    assert!(matches!(got, Err(Error::LengthMismatch { .. })), "{got:?}");
    // Blelloch executors have no maps.
    let blelloch = support::gpu::cuda().with_algorithm(Algorithm::Blelloch);
    let got = blelloch.scan_mapped_rows::<Lr, Recurrence, _>((&a[..], &b[..]), &mut h, 2, spec);
    assert!(matches!(got, Err(Error::Unsupported(_))), "{got:?}");
    assert_eq!(out.download().unwrap(), vec![7.0; 6]);
    assert_eq!(short.download().unwrap(), vec![7.0; 4]);
    assert_eq!(h, vec![7.0; 6]);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn bad_mapped_calls_are_errors() {
    let cuda = cuda();
    let (a, b) = (vec![1.0f32; 10], vec![1.0f32; 9]);
    let mut h = vec![0.0f32; 10];
    let r = cuda.scan_mapped::<LinearRecurrence<f32>, Recurrence, _>((&a[..], &b[..]), &mut h, ScanSpec::inclusive());
    assert!(matches!(&r, Err(Error::WrongShape { argument, .. }) if argument == "inputs.1"), "{r:?}");
    let r =
        cuda.scan_mapped::<LinearRecurrence<f32>, Recurrence, _>((&a[..], &a[..]), &mut h[..3], ScanSpec::inclusive());
    assert!(matches!(r, Err(Error::LengthMismatch { input: 10, output: 3 })), "{r:?}");
    // The device form checks the same.
    let (da, db): (DeviceBuffer<f32>, DeviceBuffer<f32>) = (cuda.upload(&a).unwrap(), cuda.upload(&b).unwrap());
    let mut dh = cuda.upload(&h).unwrap();
    let r = cuda.scan_mapped_device_into::<LinearRecurrence<f32>, Recurrence, _>(
        (&da, &db),
        &mut dh,
        ScanSpec::inclusive(),
    );
    assert!(matches!(&r, Err(Error::WrongShape { argument, .. }) if argument == "inputs.1"), "{r:?}");
    // Blelloch's kernels have no maps: a clear error, the output untouched.
    let blelloch = support::gpu::cuda().with_algorithm(Algorithm::Blelloch);
    let r =
        blelloch.scan_mapped::<LinearRecurrence<f32>, Recurrence, _>((&a[..], &a[..]), &mut h, ScanSpec::inclusive());
    assert!(matches!(r, Err(Error::Unsupported(_))), "{r:?}");
    assert!(h.iter().all(|&x| x == 0.0));
    // The same answer for an empty input: it does not depend on the length.
    let r = blelloch.scan_mapped::<LinearRecurrence<f32>, Recurrence, _>(
        (&[][..], &[][..]),
        &mut [],
        ScanSpec::inclusive(),
    );
    assert!(matches!(r, Err(Error::Unsupported(_))), "{r:?}");
    // Empty inputs are no work.
    let mut none: [f32; 0] = [];
    cuda.scan_mapped::<LinearRecurrence<f32>, Recurrence, _>((&[][..], &[][..]), &mut none, ScanSpec::inclusive())
        .unwrap();
}
