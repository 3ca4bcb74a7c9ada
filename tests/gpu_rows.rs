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
use scan_core::{Error, ScanSpec};
use scan_cuda::{Algorithm, Tuning};
use scan_testing::Rng;
use support::gpu::{check_many, cuda, exact, executors, small_int};
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
    check_many::<MatMul2x2<i32>>(
        &cuda,
        "matmul2x2 i32 (16 B)",
        LIMIT,
        |r| std::array::from_fn(|_| r.next_u64() as i32),
        exact,
    );
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
        // Heads of the wrong length; strides that overlap or overrun.
        assert!(matches!(
            cuda.scan_flagged::<AddU32>(&input, &mut out, &[true; 5], spec),
            Err(Error::LengthMismatch { .. })
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
