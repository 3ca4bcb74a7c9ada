//! Many scans in one launch on the GPU: rows (consecutive and strided) and
//! segments (by starts and by head flags), from host slices and on device
//! buffers, for every operator kind (non-commutative 8-, 16- and 32-byte
//! items among them), on both GPU algorithms, against the reference item by
//! item; outputs poisoned first; the single-pass kernels also under the
//! adversarial schedule; bad shapes and offsets are errors that write
//! nothing; and rows past 2^31 items. Run on a GPU machine:
//! `cargo test --test gpu_rows -- --ignored`.

#[path = "../scan-cuda/tests/support/mod.rs"]
mod support;

use scan::ops::{Add, LinearRecurrence, MatMul2x2, Max};
use scan_core::reference;
use scan_core::{Error, ScanSpec};
use scan_cuda::{Algorithm, Tuning};
use scan_testing::Rng;
use support::gpu::{
    check_many, cuda, exact, executors, poisoned, random_starts, segment_heads_tile, segmented_tile, small_int, POISON,
};
use support::ops::AddF64x8;
use support::user_ops::{CountAndSum, QuaternionProduct};

const LIMIT: usize = 1 << 22;

#[test]
#[ignore = "needs a CUDA GPU"]
fn rows_and_segments_of_small_items_match_the_reference() {
    let cuda = executors();
    check_many::<Add<u32>>(&cuda, "add u32", LIMIT, |r| r.next_u64() as u32, exact);
    check_many::<Add<f32>>(&cuda, "add f32", LIMIT, |r| small_int(r) as f32, exact);
    check_many::<Max<f32>>(&cuda, "max f32", LIMIT, |r| r.range_f64(-1e6, 1e6) as f32, exact);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn rows_and_segments_of_non_commutative_operators_match_the_reference() {
    let cuda = executors();
    // a in {-1, 0, 1}, b small integers: h stays an exact integer.
    let lr = |r: &mut Rng| (r.below(3) as f64 - 1.0, small_int(r));
    check_many::<LinearRecurrence<f32>>(
        &cuda,
        "linear recurrence f32 (8 B)",
        LIMIT,
        |r| {
            let (a, b) = lr(r);
            (a as f32, b as f32)
        },
        exact,
    );
    check_many::<LinearRecurrence<f64>>(&cuda, "linear recurrence f64 (16 B)", LIMIT, lr, exact);
    check_many::<QuaternionProduct>(
        &cuda,
        "quaternion product f64 (32 B)",
        LIMIT / 2,
        |r| {
            let mut q = [0.0; 4];
            q[r.below(4) as usize] = if r.below(2) == 0 { -1.0 } else { 1.0 };
            q
        },
        exact,
    );
    check_many::<MatMul2x2<i32>>(&cuda, "matmul2x2 i32 (16 B)", LIMIT, scan_testing::unimodular_i32, exact);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn rows_and_segments_of_struct_and_wide_items_match_the_reference() {
    let cuda = executors();
    check_many::<CountAndSum>(
        &cuda,
        "user tuple (u32, i64)",
        LIMIT,
        |r| (r.below(4) as u32, r.next_u64() as i64),
        exact,
    );
    check_many::<AddF64x8>(&cuda, "[f64; 8] (64 B)", LIMIT / 4, |r| std::array::from_fn(|_| small_int(r)), exact);
}

/// Tiles publish late and out of order, and some never publish their
/// aggregate: no deadlock, the same results.
#[test]
#[ignore = "needs a CUDA GPU"]
fn rows_and_segments_survive_the_adversarial_schedule() {
    for seed in [1, 0x5eed] {
        let cuda =
            [cuda().with_algorithm(Algorithm::SinglePass).with_tuning(Tuning::default().adversarial_schedule(seed))];
        check_many::<Add<u32>>(&cuda, "adversarial add u32", 1 << 20, |r| r.next_u64() as u32, exact);
        let lr = |r: &mut Rng| (r.below(3) as f64 - 1.0, small_int(r));
        check_many::<LinearRecurrence<f64>>(&cuda, "adversarial linear recurrence f64", 1 << 20, lr, exact);
    }
}

/// Consecutive rows of whole tiles (kernels/heads.cuh, `TileRows`) whose
/// look-backs cross the deterministic look-back's fixed groups (128 tiles
/// for f32, 64 for 8-byte items) and the free look-back's windows: rows of
/// 2 to 300 tiles, starting inside groups and spanning several, and 1000
/// rows of one tile (row_tiles.cuh: a block per row, and under the
/// adversarial schedule two blocks striding over them), under the
/// adversarial schedule too; exact against the reference (a non-commutative
/// operator among them), and float rows bitwise identical on every schedule
/// (the rows module's deterministic default for 4-byte items).
#[test]
#[ignore = "needs a CUDA GPU"]
fn rows_of_whole_tiles_cross_look_back_groups_exactly_and_deterministically() {
    let tile = segmented_tile::<Add<f32>>();
    assert_eq!(tile, segmented_tile::<LinearRecurrence<f32>>(), "one tile for both operators' rows");
    let shapes = [(64, 2), (200, 3), (3, 200), (5, 129), (2, 300), (1000, 1)];
    let mut rng = Rng::fresh("rows of whole tiles");
    let seeds = [0, 1, 0x5eed];
    for (rows, tiles) in shapes {
        let len = rows * tiles * tile;
        let ints: Vec<f32> = rng.vec(len, |r| small_int(r) as f32);
        let lr: Vec<(f32, f32)> = rng.vec(len, |r| (r.below(3) as f32 - 1.0, small_int(r) as f32));
        let floats: Vec<f32> = rng.vec(len, |r| r.range_f64(-1.0, 1.0) as f32);
        for spec in ScanSpec::ALL {
            let want = reference::scan_rows::<Add<f32>>(&ints, rows, spec).unwrap();
            let want_lr = reference::scan_rows::<LinearRecurrence<f32>>(&lr, rows, spec).unwrap();
            let mut first_bits: Option<Vec<u32>> = None;
            for seed in seeds {
                for deterministic in [None, Some(false), Some(true)] {
                    let mut tuning = Tuning::default().adversarial_schedule(seed);
                    if let Some(d) = deterministic {
                        tuning = tuning.deterministic(d);
                    }
                    let cuda = cuda().with_algorithm(Algorithm::SinglePass).with_tuning(tuning);
                    let ctx = format!("{rows} rows of {tiles} tiles, {spec:?}, seed {seed}, {deterministic:?}");
                    let mut out = poisoned::<f32>(len);
                    cuda.scan_rows::<Add<f32>>(&ints, &mut out, rows, spec).unwrap();
                    if let Some(i) = (0..len).find(|&i| out[i] != want[i]) {
                        panic!("add f32, {ctx}: item {i}: {} against {}", out[i], want[i]);
                    }
                    let mut out_lr = poisoned::<(f32, f32)>(len);
                    cuda.scan_rows::<LinearRecurrence<f32>>(&lr, &mut out_lr, rows, spec).unwrap();
                    if let Some(i) = (0..len).find(|&i| out_lr[i] != want_lr[i]) {
                        panic!("linear recurrence f32, {ctx}: item {i}: {:?} against {:?}", out_lr[i], want_lr[i]);
                    }
                    // The default (deterministic) shape: the same bits on every schedule.
                    if deterministic.is_none() {
                        let mut out = poisoned::<f32>(len);
                        cuda.scan_rows::<Add<f32>>(&floats, &mut out, rows, spec).unwrap();
                        let bits: Vec<u32> = out.iter().map(|x| x.to_bits()).collect();
                        match &first_bits {
                            None => first_bits = Some(bits),
                            Some(b) => assert!(b == &bits, "float rows differ between schedules: {ctx}"),
                        }
                    }
                }
            }
        }
        eprintln!("{rows} rows of {tiles} whole tiles: exact, and float rows bitwise identical on 3 schedules");
    }
}

/// The README's determinism table says float rows of at most 4096 items give
/// the same bits from run to run "strided or not, whatever the mode" (a block
/// per row of 2049 to 4096, row_tiles.cuh, with no look-back; shorter rows
/// span at most two tiles, heads.cuh). The consecutive case of the longer
/// rows is tested above; this tests the strided one, and rows of at most half a tile,
/// consecutive and strided: strides that leave every row but the
/// first unaligned, float data that rounds, three schedules (two striding
/// blocks under the adversarial one) and the three look-back modes, every
/// spec, each compared with the first run bit for bit, and the padding
/// between rows left as it was.
#[test]
#[ignore = "needs a CUDA GPU"]
fn strided_float_rows_of_one_tile_are_bitwise_the_same_on_every_schedule_and_mode() {
    let tile = segmented_tile::<Add<f32>>();
    // Rows of one tile (a block each), then rows of at most half a tile
    // (several a tile, heads.cuh): a row spans at most two tiles, and the
    // look-back of its second stops at the previous tile, which holds the
    // row's head, so that its value is that tile's alone, whatever the
    // look-back met (a select, not an arithmetic mask): fixed as well.
    let shapes = [
        (300, tile / 2 + 1, tile + 1),
        (64, tile - 3, tile + 9),
        (33, tile, tile + 4),
        (5, 3000, 3001),
        (3000, 1000, 1000),
        (2000, 700, 713),
        (700, tile / 2, tile / 2 + 5),
    ];
    let mut rng = Rng::fresh("strided float rows of one tile");
    for (rows, len, stride) in shapes {
        let n = (rows - 1) * stride + len + 3;
        let floats: Vec<f32> = rng.vec(n, |r| r.range_f64(-1.0, 1.0) as f32);
        let in_a_row = |i: usize| i / stride < rows && i % stride < len;
        let poison = u32::from_ne_bytes([POISON; 4]);
        for spec in ScanSpec::ALL {
            let mut first_bits: Option<Vec<u32>> = None;
            for seed in [None, Some(1), Some(0x5eed)] {
                for deterministic in [None, Some(false), Some(true)] {
                    let mut tuning = Tuning::default();
                    if let Some(seed) = seed {
                        tuning = tuning.adversarial_schedule(seed);
                    }
                    if let Some(d) = deterministic {
                        tuning = tuning.deterministic(d);
                    }
                    let cuda = cuda().with_algorithm(Algorithm::SinglePass).with_tuning(tuning);
                    let ctx =
                        format!("{rows} rows of {len}, stride {stride}, {spec:?}, seed {seed:?}, {deterministic:?}");
                    let mut out = poisoned::<f32>(n);
                    cuda.scan_rows_strided::<Add<f32>>(&floats, &mut out, rows, len, stride, spec).unwrap();
                    if let Some(i) = (0..n).find(|&i| !in_a_row(i) && out[i].to_bits() != poison) {
                        panic!("{ctx}: padding item {i} was written ({})", out[i]);
                    }
                    let bits: Vec<u32> = out.iter().map(|x| x.to_bits()).collect();
                    match &first_bits {
                        None => first_bits = Some(bits),
                        Some(b) => {
                            if let Some(i) = (0..n).find(|&i| b[i] != bits[i]) {
                                panic!(
                                    "{ctx}: item {i} differs from the first run's bits ({:#x} against {:#x})",
                                    bits[i], b[i]
                                );
                            }
                        }
                    }
                }
            }
        }
        eprintln!("{rows} float rows of {len}, stride {stride}: the same bits on 3 schedules x 3 modes x 4 specs");
    }
}

/// Segments by offsets take 32-item runs for f32 and the shorter runs where
/// the long ones spill (the bf16 recurrence, 4-byte items too), as the
/// driver reports the kernels' local memory; both are exact.
#[test]
#[ignore = "needs a CUDA GPU"]
fn segment_kernels_fall_back_to_shorter_runs_where_long_runs_spill() {
    let cuda = cuda().with_algorithm(Algorithm::SinglePass);
    let f32_policy = cuda.offsets_policy::<Add<f32>>().unwrap().expect("single-pass kernels");
    assert_eq!((f32_policy.items_per_thread, f32_policy.early_loads), (32, false), "f32: {f32_policy:?}");
    type LrBf16 = LinearRecurrence<scan_core::maps::bf16>;
    let bf16_policy = cuda.offsets_policy::<LrBf16>().unwrap().expect("single-pass kernels");
    assert_eq!(bf16_policy.items_per_thread, 16, "the bf16 recurrence spills at 32: {bf16_policy:?}");
    let mut rng = Rng::fresh("segment fallback");
    let n = 3 << 20;
    let starts = random_starts(&mut rng, n, 1 << 16);
    let one = scan_core::maps::bf16::from_f32(1.0);
    let lr: Vec<(scan_core::maps::bf16, scan_core::maps::bf16)> = rng.vec(n, |r| {
        let b = scan_core::maps::bf16::from_f32(r.below(3) as f32 - 1.0);
        (if r.below(8) == 0 { scan_core::maps::bf16::from_f32(0.0) } else { one }, b)
    });
    for spec in ScanSpec::ALL {
        let want = reference::scan_segments::<LrBf16>(&lr, &starts, spec).unwrap();
        let mut out = poisoned(n);
        cuda.scan_segments::<LrBf16>(&lr, &mut out, &starts, spec).unwrap();
        if let Some(i) = (0..n).find(|&i| out[i] != want[i]) {
            panic!("bf16 recurrence segments, {spec:?}: item {i}: {:?} against {:?}", out[i], want[i]);
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn bad_shapes_and_offsets_are_errors_that_write_nothing() {
    type AddU32 = Add<u32>;
    let spec = ScanSpec::inclusive();
    for cuda in executors() {
        let input = [1u32, 2, 3, 4, 5, 6];
        let mut out = [7u32; 6];
        // Starts that decrease, or pass the end.
        for starts in [&[0, 3, 2][..], &[0, 7], &[4, 1]] {
            assert!(matches!(
                cuda.scan_segments::<AddU32>(&input, &mut out, starts, spec),
                Err(Error::BadSegments { .. })
            ));
            let mut data = input;
            assert!(matches!(
                cuda.scan_segments_in_place::<AddU32>(&mut data, starts, spec),
                Err(Error::BadSegments { .. })
            ));
            assert_eq!(data, input, "{starts:?}: a rejected call changed the data");
            let dev_in = cuda.upload(&input).unwrap();
            let mut dev_out = cuda.upload(&out).unwrap();
            let dev_starts = cuda.upload(&starts.iter().map(|&s| s as u64).collect::<Vec<_>>()).unwrap();
            let got = cuda.scan_segments_device_into::<AddU32>(&dev_in, &mut dev_out, &dev_starts, spec);
            match got {
                Err(Error::BadSegments { index, .. }) => assert!(index < starts.len()),
                other => panic!("{starts:?}: device starts gave {other:?}"),
            }
            assert_eq!(dev_out.download().unwrap(), out, "{starts:?}: a rejected device call wrote");
        }
        assert_eq!(out, [7; 6], "a rejected call wrote");
        // Device starts over several tiles, found bad after the single-pass
        // scan is queued (it reads the check itself and writes nothing), in
        // every direction and kind, for 4-byte items and for 16-byte ones
        // (split status); good starts on the same buffers then scan.
        let n = 5 * segment_heads_tile::<AddU32>() + 3;
        let long: Vec<u32> = (0..n as u32).collect();
        let pairs: Vec<(f64, f64)> = (0..n).map(|i| ((i % 3) as f64 - 1.0, (i % 7) as f64)).collect();
        let third = n as u64 / 3;
        let bad = [vec![0, 2 * third, third], vec![0, 1, n as u64 + 1], vec![third, 0, 1]];
        let good = [0, third, 2 * third];
        for spec in ScanSpec::ALL {
            rejects_bad_device_starts::<AddU32>(&cuda, &long, &bad, &good, spec);
            rejects_bad_device_starts::<LinearRecurrence<f64>>(&cuda, &pairs, &bad, &good, spec);
        }
        // Heads of the wrong length; strides that overlap or overrun.
        assert!(matches!(
            cuda.scan_flagged::<AddU32>(&input, &mut out, &[true; 5], spec),
            Err(Error::WrongShape { argument, .. }) if argument == "heads"
        ));
        for (rows, len, stride) in [(2, 3, 2), (2, 3, 4), (3, 2, 3)] {
            assert!(
                matches!(
                    cuda.scan_rows_strided::<AddU32>(&input, &mut out, rows, len, stride, spec),
                    Err(Error::BadStride { .. })
                ),
                "{rows} rows of {len}, stride {stride}"
            );
        }
        let dev_in = cuda.upload(&input).unwrap();
        let mut dev_out = cuda.upload(&out).unwrap();
        assert!(matches!(
            cuda.scan_rows_device_into::<AddU32>(&dev_in, &mut dev_out, 4, spec),
            Err(Error::BadShape { len: 6, rows: 4 })
        ));
        assert_eq!(out, [7; 6], "a rejected call wrote");
        assert_eq!(dev_out.download().unwrap(), out, "a rejected device call wrote");
    }
}

/// Device `starts` that are bad (the first bad one at index 1 when the
/// starts begin above 0, else 2) are errors that leave the output as it was;
/// `good` starts then scan as the reference does.
fn rejects_bad_device_starts<Op: scan::CudaOp>(
    cuda: &scan_cuda::Cuda,
    input: &[Op::Item],
    bad: &[Vec<u64>],
    good: &[u64],
    spec: ScanSpec,
) where
    Op::Item: PartialEq + std::fmt::Debug,
{
    let name = std::any::type_name::<Op>();
    let n = input.len();
    let dev_in = cuda.upload(input).unwrap();
    // (Not `poisoned`: its floats may be NaNs, and the check compares.)
    let poison: Vec<Op::Item> = input.iter().rev().copied().collect();
    let mut dev_out = cuda.upload(&poison).unwrap();
    for starts in bad {
        let dev_starts = cuda.upload(starts).unwrap();
        let got = cuda.scan_segments_device_into::<Op>(&dev_in, &mut dev_out, &dev_starts, spec);
        let want = if starts[0] > 0 { 1 } else { 2 };
        assert!(
            matches!(got, Err(Error::BadSegments { index, .. }) if index == want),
            "{name}, {spec:?}, {starts:?} over {n} items: {got:?}"
        );
        assert!(dev_out.download().unwrap() == poison, "{name}, {spec:?}, {starts:?}: a rejected device call wrote");
    }
    let dev_starts = cuda.upload(good).unwrap();
    cuda.scan_segments_device_into::<Op>(&dev_in, &mut dev_out, &dev_starts, spec).unwrap();
    let starts: Vec<usize> = good.iter().map(|&s| s as usize).collect();
    let want = reference::scan_segments::<Op>(input, &starts, spec).unwrap();
    assert!(dev_out.download().unwrap() == want, "{name}, {spec:?}: good starts after rejected ones");
}

/// Rows past 2^31 items in all (two rows of 2^30 + 3 u32 ones, in place on
/// the device): 64-bit positions and row starts.
#[test]
#[ignore = "needs a CUDA GPU"]
fn rows_past_two_to_the_31_items_in_all() {
    let cuda = cuda();
    let row_len = (1usize << 30) + 3;
    let mut buf = cuda.upload(&vec![1u32; 2 * row_len]).unwrap();
    for spec in [ScanSpec::inclusive(), ScanSpec::exclusive().reversed()] {
        let mut fresh = cuda.upload(&vec![1u32; 2 * row_len]).unwrap();
        std::mem::swap(&mut buf, &mut fresh);
        drop(fresh);
        let ((), ms) = cuda.time(|| cuda.scan_rows_device::<Add<u32>>(&mut buf, 2, spec)).unwrap();
        eprintln!("2 rows of {row_len} u32, {spec:?}: {ms:.2} ms on the device");
        let got = buf.download().unwrap();
        for (i, &x) in got.iter().enumerate() {
            let j = i % row_len;
            let want = match (spec.is_inclusive(), spec.is_reverse()) {
                (true, false) => j + 1,
                (false, true) => row_len - 1 - j,
                _ => unreachable!(),
            };
            assert_eq!(x as usize, want, "{spec:?}: item {i}");
        }
    }
}

/// The executor keeps the head bits of segments by offsets between calls:
/// calls of shrinking and growing lengths (stale bits of a longer call left
/// past a shorter one), a rejected call in between (its check word set),
/// and every good call exact, on one executor.
#[test]
#[ignore = "needs a CUDA GPU"]
fn segment_bits_are_reused_across_calls_of_any_length() {
    let cuda = cuda();
    let mut rng = Rng::fresh("segment bits reuse");
    for (round, n) in [200_003usize, 1000, 70_001, 3, 64, 65, 300_000, 129].into_iter().enumerate() {
        let x: Vec<u32> = rng.vec(n, |r| r.below(1000) as u32);
        let mut starts = vec![0usize];
        while *starts.last().unwrap() < n {
            let next = starts.last().unwrap() + rng.below(300) as usize;
            starts.push(next.min(n));
        }
        let dev_in = cuda.upload(&x).unwrap();
        let mut dev_out = cuda.upload(&vec![7u32; n]).unwrap();
        if round % 2 == 1 {
            // Not increasing at index 1: rejected, nothing written.
            let bad = cuda.upload(&[1u64, 0, n as u64]).unwrap();
            let got = cuda.scan_segments_device_into::<Add<u32>>(&dev_in, &mut dev_out, &bad, ScanSpec::inclusive());
            assert!(matches!(got, Err(Error::BadSegments { index: 1, .. })), "n = {n}: {got:?}");
            assert!(dev_out.download().unwrap() == vec![7u32; n], "n = {n}: a rejected call wrote");
        }
        for spec in ScanSpec::ALL {
            let dev_starts = cuda.upload(&starts.iter().map(|&s| s as u64).collect::<Vec<_>>()).unwrap();
            cuda.scan_segments_device_into::<Add<u32>>(&dev_in, &mut dev_out, &dev_starts, spec).unwrap();
            let want = reference::scan_segments::<Add<u32>>(&x, &starts, spec).unwrap();
            assert!(dev_out.download().unwrap() == want, "n = {n}, round {round}, {spec:?}");
        }
    }
}
