//! Differential GPU tests: every operator shape, every (kind, direction), in
//! place and not, on both GPU algorithms (single-pass and Blelloch), on sizes
//! around every tile and look-back window boundary and past `tile^2` (three
//! Blelloch driver levels), against the sequential reference item by item. The
//! out-of-place device scan writes into an output poisoned first (nothing is
//! copied over it), so an item the kernels skip fails; its input must come
//! back unchanged. Batched rows too. Run on a GPU machine:
//! `cargo test --test gpu_scan -- --ignored`.

#[path = "../scan-cuda/tests/support/mod.rs"]
mod support;

use scan::ops::{Add, BestPrefix, LinearRecurrence, MatMul2x2, Max, Min, Mul, SegmentedAdd, Xor};
use scan_core::{reference, ScanSpec};
use scan_cuda::{Algorithm, SinglePassPolicy};
use scan_testing::Rng;
use support::gpu::{check_op, check_rows, cuda, exact, executors, small_int};
use support::ops::{AddF64x8, SegSumU64, Stats, StatsOp};
use support::user_ops::{Affine, AffineI32Counted, Compose, CountAndSum, QuaternionProduct};

type AddF32 = Add<f32>;
type AddF64 = Add<f64>;
type AddU32 = Add<u32>;
type LinRecF32 = LinearRecurrence<f32>;
type LinRecF64 = LinearRecurrence<f64>;

#[test]
#[ignore = "needs a CUDA GPU"]
fn integer_operators_match_the_reference_exactly() {
    let cuda = executors();
    check_op::<Add<u32>>(&cuda, "add u32", |r| r.next_u64() as u32, exact);
    check_op::<Add<i64>>(&cuda, "add i64", |r| r.next_u64() as i64, exact);
    check_op::<Mul<u64>>(&cuda, "mul u64", |r| r.next_u64() | 1, exact);
    check_op::<Min<i32>>(&cuda, "min i32", |r| r.next_u64() as i32, exact);
    check_op::<Max<u64>>(&cuda, "max u64", |r| r.next_u64(), exact);
    check_op::<Xor<u32>>(&cuda, "xor u32", |r| r.next_u64() as u32, exact);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn float_operators_on_exactly_representable_data_match_exactly() {
    let cuda = executors();
    check_op::<Add<f32>>(&cuda, "add f32", |r| small_int(r) as f32, exact);
    check_op::<Add<f64>>(&cuda, "add f64", small_int, exact);
    check_op::<Mul<f32>>(&cuda, "mul f32", |r| if r.below(2) == 0 { -1.0 } else { 1.0 }, exact);
    check_op::<Min<f64>>(&cuda, "min f64", |r| r.range_f64(-1e6, 1e6), exact);
    // Max ignores NaN like f32::max / fmaxf: sprinkle some in.
    check_op::<Max<f32>>(
        &cuda,
        "max f32",
        |r| if r.below(100) == 0 { f32::NAN } else { r.range_f64(-1e6, 1e6) as f32 },
        exact,
    );
}

/// bf16 and f16 items (2 bytes), through the prelude's half-precision
/// helpers: max/min of random values, products of ±1, and sums of -1, 0, 1
/// kept within ±64 (exact integers in both types, so exact in every order).
#[test]
#[ignore = "needs a CUDA GPU"]
fn half_precision_items_match_the_reference_exactly() {
    use scan::maps::{bf16, f16};
    let cuda = executors();
    let nan_or = |r: &mut Rng| if r.below(100) == 0 { bf16::NAN } else { bf16::from_f64(r.range_f64(-1e3, 1e3)) };
    check_op::<Max<bf16>>(&cuda, "max bf16", nan_or, exact);
    check_op::<Min<f16>>(&cuda, "min f16", |r| f16::from_f64(r.range_f64(-1e3, 1e3)), exact);
    check_op::<Mul<bf16>>(&cuda, "mul bf16", |r| if r.below(2) == 0 { -bf16::ONE } else { bf16::ONE }, exact);
    let mut rng = Rng::fresh("add bf16/f16");
    for n in [1, 1000, (1 << 16) + 3, (1 << 22) + 1] {
        let mut sum = 0i32;
        let steps: Vec<f32> = (0..n)
            .map(|_| {
                let step = if sum.abs() >= 64 { -sum.signum() } else { rng.below(3) as i32 - 1 };
                sum += step;
                step as f32
            })
            .collect();
        let x: Vec<bf16> = steps.iter().map(|&v| bf16::from_f32(v)).collect();
        let y: Vec<f16> = steps.iter().map(|&v| f16::from_f32(v)).collect();
        for e in &cuda {
            for spec in ScanSpec::ALL {
                let got = e.scan::<Add<bf16>>(&x, spec).unwrap();
                assert!(got == reference::scan::<Add<bf16>>(&x, spec), "add bf16, n {n}, {spec:?}, {}", e.algorithm());
                let got = e.scan::<Add<f16>>(&y, spec).unwrap();
                assert!(got == reference::scan::<Add<f16>>(&y, spec), "add f16, n {n}, {spec:?}, {}", e.algorithm());
            }
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn non_commutative_operators_match_exactly() {
    let cuda = executors();
    // a in {-1, 0, 1}, b small integers: h stays an exact integer.
    let lr = |r: &mut Rng| (r.below(3) as f64 - 1.0, small_int(r));
    check_op::<LinRecF32>(
        &cuda,
        "linear recurrence f32",
        |r| {
            let (a, b) = lr(r);
            (a as f32, b as f32)
        },
        exact,
    );
    check_op::<LinRecF64>(&cuda, "linear recurrence f64", lr, exact);
    check_op::<MatMul2x2<i32>>(&cuda, "matmul2x2 i32", scan_testing::unimodular_i32, exact);
    // Signed permutation matrices: closed under product, exact, non-commutative.
    check_op::<MatMul2x2<f32>>(
        &cuda,
        "matmul2x2 f32",
        |r| {
            let (s, t) = (if r.below(2) == 0 { -1.0 } else { 1.0 }, if r.below(2) == 0 { -1.0 } else { 1.0 });
            if r.below(2) == 0 {
                [s, 0.0, 0.0, t]
            } else {
                [0.0, s, t, 0.0]
            }
        },
        exact,
    );
    check_op::<SegmentedAdd<u64>>(&cuda, "segmented add u64", |r| (r.below(10) == 0, r.next_u64()), exact);
    // 12 bytes: a wrapping affine map with a step count.
    check_op::<AffineI32Counted>(
        &cuda,
        "affine i32 counted (12 B)",
        |r| (r.next_u64() as i32, r.next_u64() as i32, r.below(4) as u32),
        exact,
    );
    // 32 bytes: wrapping 2x2 products, and quaternion products of the group
    // {±1, ±i, ±j, ±k} (closed, exact, non-commutative).
    check_op::<MatMul2x2<i64>>(&cuda, "matmul2x2 i64 (32 B)", scan_testing::unimodular_i64, exact);
    check_op::<QuaternionProduct>(
        &cuda,
        "quaternion product f64 (32 B)",
        |r| {
            let mut q = [0.0; 4];
            q[r.below(4) as usize] = if r.below(2) == 0 { -1.0 } else { 1.0 };
            q
        },
        exact,
    );
    check_op::<BestPrefix<f64>>(
        &cuda,
        "best prefix f64",
        |r| {
            let x = small_int(r);
            (x, x)
        },
        exact,
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn user_tuple_and_struct_operators_match_exactly() {
    let cuda = executors();
    check_op::<CountAndSum>(&cuda, "user tuple (u32, i64)", |r| (r.below(4) as u32, r.next_u64() as i64), exact);
    // scale in {-1, 0, 1}, small integer shifts: exact, non-commutative.
    check_op::<Compose>(
        &cuda,
        "user struct Affine",
        |r| Affine { scale: r.below(3) as f64 - 1.0, shift: small_int(r) },
        exact,
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn hand_written_struct_tuple_and_large_items_match_exactly() {
    let cuda = executors();
    check_op::<StatsOp>(
        &cuda,
        "repr(C) struct",
        |r| Stats { count: 1 + r.below(3) as u32, last: r.next_u64() as i32, sum: small_int(r) },
        exact,
    );
    // The hand-written CUDA item assumes this layout of the Rust tuple.
    let layout =
        (std::mem::offset_of!((u8, u64), 0), std::mem::offset_of!((u8, u64), 1), std::mem::size_of::<(u8, u64)>());
    assert_eq!(layout, (0, 8, 16), "rustc laid out (u8, u64) differently: fix SegSumU64's CUDA item");
    check_op::<SegSumU64>(&cuda, "segmented sum (u8, u64)", |r| ((r.below(10) == 0) as u8, r.next_u64()), exact);
    check_op::<AddF64x8>(&cuda, "[f64; 8]", |r| std::array::from_fn(|_| small_int(r)), exact);
}

/// How many roundings an item's sum passes through at most on `algorithm`,
/// for `n` f32s. Blelloch: its combination tree is at most ~40 deep at these
/// sizes. Single-pass: a tile's inclusive prefix is a nearer one combined
/// with aggregates (a lane's run of `lookback`, a warp reduction of 5 levels,
/// the window chain and the tile's own: `lookback + 7`), and that chain can be
/// as long as the tiles; then the block layers: run, warp scan (5), warp
/// totals, tile prefix.
fn rounding_depth(algorithm: Algorithm, n: usize) -> f64 {
    match algorithm {
        Algorithm::Blelloch => 64.0,
        Algorithm::SinglePass => {
            let p = SinglePassPolicy::for_item(4, 90).unwrap();
            let tiles = n.div_ceil(p.tile());
            let within = p.items_per_thread as usize + 5 + p.threads as usize / 32 + 3;
            (tiles * (p.lookback as usize + 7) + within) as f64
        }
    }
}

/// `gamma_m = m u / (1 - m u)`, u = 2^-24: the relative error of a product
/// of m f32 factors in any association (Higham, Accuracy and Stability, §3.1).
fn gamma_f32(m: usize) -> f64 {
    let mu = m as f64 * f32::EPSILON as f64 / 2.0;
    assert!(mu < 0.5, "{m} roundings: no useful bound");
    mu / (1.0 - mu)
}

/// Real-valued data: rounding differs from the sequential order, so compare
/// with an f64 evaluation. Bound: |gpu - exact| <= depth * eps_f32 * sum |x|
/// over the prefix, each level of the combination adding at most one rounding
/// of a partial sum (see `rounding_depth`).
#[test]
#[ignore = "needs a CUDA GPU"]
fn f32_add_on_real_data_is_within_the_rounding_bound() {
    f32_sums_are_within_the_rounding_bound("add f32 real", -1.0);
}

/// The same bound on non-negative data (uniform in [0, 1)), where `sum |x|`
/// is the prefix itself: `depth * eps_f32` is then a relative bound, and it
/// is asserted under 1% of every nonzero prefix (at most 0.2% here: 2049
/// single-pass tiles give a depth of some 16400), so that a dropped carry
/// or tile cannot hide under it as it can under the signed data's `sum |x|`.
/// The f64 prefix is off the exact one by some 2^24 * 2^-53 relative, far
/// below the bound.
#[test]
#[ignore = "needs a CUDA GPU"]
fn f32_add_on_non_negative_data_is_within_a_relative_rounding_bound() {
    f32_sums_are_within_the_rounding_bound("add f32 non-negative", 0.0);
}

/// f32 sums of data uniform in [`low`, 1) on both algorithms, every spec,
/// against the f64 evaluation within `depth * eps_f32 * sum |x|`; where the
/// data are non-negative, that bound must also be under 1% of the prefix.
fn f32_sums_are_within_the_rounding_bound(seed: &str, low: f64) {
    for cuda in executors() {
        let mut rng = Rng::fresh(seed);
        for n in [4097, (1 << 20) + 7, (1 << 24) + 3] {
            let depth = rounding_depth(cuda.algorithm(), n);
            let x: Vec<f32> = rng.vec(n, |r| r.range_f64(low, 1.0) as f32);
            let x64: Vec<f64> = x.iter().map(|&v| v as f64).collect();
            let abs: Vec<f64> = x.iter().map(|&v| v.abs() as f64).collect();
            for spec in ScanSpec::ALL {
                let got = cuda.scan::<AddF32>(&x, spec).unwrap();
                let want = reference::scan::<AddF64>(&x64, spec);
                let mass = reference::scan::<AddF64>(&abs, spec);
                for i in 0..n {
                    let bound = depth * f32::EPSILON as f64 * mass[i] + 1e-30;
                    assert!(
                        low < 0.0 || want[i] == 0.0 || bound < 0.01 * want[i],
                        "{}: n = {n}, {spec:?}, i = {i}: the bound {bound} is no check on the prefix {}",
                        cuda.algorithm(),
                        want[i]
                    );
                    let err = (got[i] as f64 - want[i]).abs();
                    assert!(
                        err <= bound,
                        "{}: n = {n}, {spec:?}, i = {i}: got {}, want {}, err {err} > {bound}",
                        cuda.algorithm(),
                        got[i],
                        want[i]
                    );
                }
            }
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn linear_recurrence_f32_on_real_data_is_close_to_f64() {
    for cuda in executors() {
        let mut rng = Rng::fresh("linear recurrence f32 real");
        let n = (1 << 22) + 5;
        let ab: Vec<(f32, f32)> = rng.vec(n, |r| (r.range_f64(-0.99, 0.99) as f32, r.range_f64(-1.0, 1.0) as f32));
        let ab64: Vec<(f64, f64)> = ab.iter().map(|&(a, b)| (a as f64, b as f64)).collect();
        for spec in ScanSpec::ALL {
            let got = cuda.scan::<LinRecF32>(&ab, spec).unwrap();
            let want = reference::scan::<LinRecF64>(&ab64, spec);
            // |a| < 1 makes the recurrence contractive: |h| < 100 and rounding
            // errors are damped, so a fixed bound on h (the second component) holds.
            // The product of the a's (the first): any association rounds
            // each of its m factors at most m times (gamma_m relative), and a
            // product that underflows adds at most one unit of the smallest
            // normal f32 per rounding (flushed to zero or not). The products
            // underflow within some 100 items of each end, past which the
            // check is that they stay near 0.
            for i in 0..n {
                let m = if spec.is_inclusive() { 1 } else { 0 } + if spec.is_reverse() { n - 1 - i } else { i };
                let bound_a = gamma_f32(m) * want[i].0.abs() + 2.0 * m as f64 * f32::MIN_POSITIVE as f64;
                let err_a = (got[i].0 as f64 - want[i].0).abs();
                let err = (got[i].1 as f64 - want[i].1).abs();
                assert!(
                    err_a <= bound_a && err <= 1e-3 * (1.0 + want[i].1.abs()),
                    "{}: {spec:?}, i = {i}: got {:?}, want {:?} (a within {bound_a})",
                    cuda.algorithm(),
                    got[i],
                    want[i]
                );
            }
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_users_own_cudarc_slice_is_scanned_in_place() {
    let cuda = cuda();
    let mut rng = Rng::fresh("cudarc slice");
    let x: Vec<u32> = rng.vec(100_003, |r| r.next_u64() as u32);
    let mut slice = cuda.stream().clone_htod(&x).unwrap();
    cuda.scan_slice::<AddU32>(&mut slice, ScanSpec::exclusive().reversed()).unwrap();
    let got = cuda.stream().clone_dtoh(&slice).unwrap();
    assert_eq!(got, reference::scan::<AddU32>(&x, ScanSpec::exclusive().reversed()));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn bad_sizes_are_errors_not_panics() {
    let cuda = cuda();
    let mut out = [0u32; 3];
    assert!(matches!(
        cuda.scan_into::<AddU32>(&[1, 2], &mut out, ScanSpec::inclusive()),
        Err(scan_core::Error::LengthMismatch { input: 2, output: 3 })
    ));
    assert!(matches!(cuda.alloc::<u64>(usize::MAX / 4), Err(scan_core::Error::TooLarge { .. })));
    // More than any GPU has (1 TiB).
    assert!(matches!(cuda.alloc::<u8>(1 << 40), Err(scan_core::Error::TooLarge { .. })));
    assert_eq!(cuda.scan::<AddU32>(&[], ScanSpec::inclusive()).unwrap(), Vec::<u32>::new());
    let mut empty = cuda.upload::<u32>(&[]).unwrap();
    cuda.scan_device::<AddU32>(&mut empty, ScanSpec::inclusive()).unwrap();
    assert!(empty.download().unwrap().is_empty());
    let (dev_in, mut dev_out) = (cuda.upload(&[1u32, 2]).unwrap(), cuda.alloc::<u32>(3).unwrap());
    assert!(matches!(
        cuda.scan_device_into::<AddU32>(&dev_in, &mut dev_out, ScanSpec::inclusive()),
        Err(scan_core::Error::LengthMismatch { input: 2, output: 3 })
    ));
    let mut six = [1u32, 2, 3, 4, 5, 6];
    let mut out = [0u32; 6];
    for rows in [0, 4, 7] {
        assert!(matches!(
            cuda.scan_rows::<AddU32>(&six, &mut out, rows, ScanSpec::inclusive()),
            Err(scan_core::Error::BadShape { len: 6, rows: r }) if r == rows
        ));
        assert!(matches!(
            cuda.scan_rows_in_place::<AddU32>(&mut six, rows, ScanSpec::inclusive()),
            Err(scan_core::Error::BadShape { len: 6, rows: r }) if r == rows
        ));
    }
    assert_eq!(six, [1, 2, 3, 4, 5, 6], "a rejected shape left the data alone");
    assert!(matches!(
        cuda.scan_rows::<AddU32>(&six, &mut out[..5], 2, ScanSpec::inclusive()),
        Err(scan_core::Error::LengthMismatch { input: 6, output: 5 })
    ));
}

/// `alloc` zero-fills: a fresh buffer downloads as all-zero items, bools included.
#[test]
#[ignore = "needs a CUDA GPU"]
fn a_fresh_buffer_is_zero_filled() {
    let cuda = cuda();
    for n in [1, 1000, (1 << 20) + 3] {
        let buf = cuda.alloc::<(bool, f32, u64)>(n).unwrap();
        let got = buf.download().unwrap();
        assert_eq!(got.len(), n);
        assert!(got.iter().all(|&x| x == (false, 0.0, 0)), "n = {n}: a non-zero item");
    }
}

/// Batched rows: every row scanned on its own, against `reference::scan_rows`,
/// with non-commutative operators.
#[test]
#[ignore = "needs a CUDA GPU"]
fn batched_rows_match_the_reference() {
    let cuda = executors();
    check_rows::<Add<u32>>(&cuda, "rows add u32", 0xDEAD_BEEF, |r| r.next_u64() as u32, exact);
    let lr = |r: &mut Rng| (r.below(3) as f64 - 1.0, small_int(r));
    check_rows::<LinRecF64>(&cuda, "rows linear recurrence f64", (f64::NAN, f64::NAN), lr, exact);
    check_rows::<MatMul2x2<i32>>(&cuda, "rows matmul2x2 i32", [i32::MIN; 4], scan_testing::unimodular_i32, exact);
}

/// An executor on a stream of its own scans like the default one, and scans
/// recorded in a CUDA graph and replayed (`Cuda::time_replayed`) come out
/// exact, on both algorithms, with a non-commutative operator and sizes of
/// one tile and of many (the single-pass scan's tile statuses are reused
/// from replay to replay). The default stream cannot be recorded, and fewer
/// than two calls are refused: both are errors, not panics.
#[test]
#[ignore = "needs a CUDA GPU"]
fn an_own_stream_executor_scans_and_its_replayed_scans_are_exact() {
    let mut rng = Rng::fresh("own stream replays");
    for algorithm in Algorithm::ALL {
        let cuda = cuda().with_own_stream().unwrap().with_algorithm(algorithm);
        for n in [1, 1000, 300_001] {
            let x: Vec<[i32; 4]> = rng.vec(n, scan_testing::unimodular_i32);
            let want = reference::scan::<MatMul2x2<i32>>(&x, ScanSpec::inclusive());
            let input = cuda.upload(&x).unwrap();
            let mut out = cuda.upload(&vec![[i32::MIN; 4]; n]).unwrap();
            cuda.scan_device_into::<MatMul2x2<i32>>(&input, &mut out, ScanSpec::inclusive()).unwrap();
            assert!(out.download().unwrap() == want, "{algorithm}, n = {n}: own stream");
            out = cuda.upload(&vec![[i32::MIN; 4]; n]).unwrap();
            let ms = cuda
                .time_replayed(3, 2, || {
                    cuda.scan_device_into::<MatMul2x2<i32>>(&input, &mut out, ScanSpec::inclusive())
                })
                .unwrap();
            assert!(ms > 0.0, "{algorithm}, n = {n}: {ms} ms per replayed call");
            assert!(out.download().unwrap() == want, "{algorithm}, n = {n}: replayed");
            assert!(input.download().unwrap() == x, "{algorithm}, n = {n}: the input changed");
        }
        let refused = cuda.time_replayed(1, 1, || Ok(()));
        assert!(matches!(refused, Err(scan::Error::Other(_))), "{refused:?}");
    }
    let default = cuda();
    let refused = default.time_replayed(2, 1, || Ok(()));
    assert!(matches!(refused, Err(scan::Error::Unsupported(_))), "{refused:?}");
    // A buffer made before the switch lives on the default stream, whose
    // copies and free would not wait for the own stream's scans: refused,
    // unchanged. The executor's scratch (made on the default stream by a
    // scan of many tiles) was dropped at the switch: a larger scan then
    // grows it on the own stream, exact.
    let x: Vec<u32> = (0..300_001u32).map(|i| i.wrapping_mul(2_654_435_761)).collect();
    let mut early = default.upload(&x).unwrap();
    default.scan_device::<AddU32>(&mut early, ScanSpec::inclusive()).unwrap();
    let scanned = early.download().unwrap();
    let own = default.with_own_stream().unwrap();
    let err = own.scan_device::<AddU32>(&mut early, ScanSpec::inclusive()).unwrap_err();
    assert!(err.to_string().contains("another CUDA stream"), "{err}");
    assert!(early.download().unwrap() == scanned, "a refused scan changed the buffer");
    let larger: Vec<u32> = (0..3_000_001u32).map(|i| i.wrapping_mul(2_654_435_761)).collect();
    let mut buf = own.upload(&larger).unwrap();
    own.scan_device::<AddU32>(&mut buf, ScanSpec::inclusive()).unwrap();
    assert!(buf.download().unwrap() == reference::scan::<AddU32>(&larger, ScanSpec::inclusive()));
}

/// A graph the user records on an executor's own stream: a single-pass scan
/// of more than one tile refuses to be recorded (a replay would repeat its
/// tile-status epoch and could read its previous replay's statuses), with an
/// error and nothing queued; a scan of one tile needs no statuses and
/// records, and its replays are exact; the stream works as before after.
#[test]
#[ignore = "needs a CUDA GPU"]
fn a_recording_refuses_multi_tile_single_pass_scans_and_takes_one_tile_scans() {
    use scan::cuda::cudarc::driver::sys::{CUgraphInstantiate_flags, CUstreamCaptureMode};
    let cuda = cuda().with_own_stream().unwrap();
    let mode = CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL;
    let many: Vec<u32> = (0..300_001u32).map(|i| i.wrapping_mul(2_654_435_761)).collect();
    let want = reference::scan::<AddU32>(&many, ScanSpec::inclusive());
    let input = cuda.upload(&many).unwrap();
    let mut out = cuda.alloc::<u32>(many.len()).unwrap();
    cuda.scan_device_into::<AddU32>(&input, &mut out, ScanSpec::inclusive()).unwrap();
    cuda.stream().begin_capture(mode).unwrap();
    let refused = cuda.scan_device_into::<AddU32>(&input, &mut out, ScanSpec::inclusive());
    let graph = cuda.stream().end_capture(CUgraphInstantiate_flags(0));
    assert!(matches!(refused, Err(scan::Error::Unsupported(_))), "{refused:?}");
    assert!(graph.is_ok(), "the capture ended cleanly: {:?}", graph.err());
    out = cuda.alloc::<u32>(many.len()).unwrap();
    cuda.scan_device_into::<AddU32>(&input, &mut out, ScanSpec::inclusive()).unwrap();
    assert!(out.download().unwrap() == want, "after the refused recording");

    let one: Vec<u32> = many[..100].to_vec();
    let input = cuda.upload(&one).unwrap();
    let mut out = cuda.alloc::<u32>(one.len()).unwrap();
    cuda.scan_device_into::<AddU32>(&input, &mut out, ScanSpec::inclusive()).unwrap();
    out = cuda.alloc::<u32>(one.len()).unwrap();
    cuda.stream().begin_capture(mode).unwrap();
    let recorded = cuda.scan_device_into::<AddU32>(&input, &mut out, ScanSpec::inclusive());
    let graph = cuda.stream().end_capture(CUgraphInstantiate_flags(0)).unwrap().expect("a graph of one launch");
    recorded.unwrap();
    for _ in 0..3 {
        graph.launch().unwrap();
    }
    cuda.synchronize().unwrap();
    assert_eq!(out.download().unwrap(), reference::scan::<AddU32>(&one, ScanSpec::inclusive()), "one tile, replayed");
}
