//! The CPU backend through the facade (`scan::Cpu`, `scan::Device::cpu()`):
//! every algorithm, kind, direction and call form against `scan::reference`,
//! on sizes around the tiled path's tiles and the Blelloch blocks and past
//! 2^20, with fresh random data (seed printed). Operators: the
//! non-commutative 2x2 matrix product (wrapping i32, exact), the linear
//! recurrence on exactly representable data (a = ±1, small integer b: any
//! evaluation order is exact), wrapping i32 addition and f32 max with NaNs.
//! The full per-operator suite with float error bounds is in scan-cpu/tests.

use scan::ops::{Add, LinearRecurrence, MatMul2x2, Max};
use scan::{reference, Algorithm, Cpu, Device, Error, ScanOp, ScanSpec};
use scan_testing::Rng;

fn sizes<T>() -> Vec<usize> {
    let mut s = vec![0, 1, 2, 3, 7, 8, 9, 31, 32, 33, 1000, (1 << 20) + 7];
    for t in [scan_cpu::tile_len::<T>(), scan_cpu::BLELLOCH_BLOCK_LEN] {
        s.extend([t - 1, t, t + 1, 8 * t + 5]);
    }
    s.sort_unstable();
    s.dedup();
    s
}

/// Every algorithm, kind, direction and call form on `x`, compared with the
/// reference by `same`.
fn check_all<Op: ScanOp>(x: &[Op::Item], same: impl Fn(&[Op::Item], &[Op::Item]) -> bool) {
    for spec in ScanSpec::ALL {
        let want = reference::scan::<Op>(x, spec);
        for algorithm in Algorithm::ALL {
            let cpu = Cpu::new().with_algorithm(algorithm);
            let n = x.len();
            assert!(same(&cpu.scan::<Op>(x, spec).unwrap(), &want), "{cpu} scan, n {n}, {spec:?}");
            let mut out: Vec<Op::Item> = x.iter().rev().copied().collect();
            cpu.scan_into::<Op>(x, &mut out, spec).unwrap();
            assert!(same(&out, &want), "{cpu} scan_into, n {n}, {spec:?}");
            let mut data = x.to_vec();
            cpu.scan_in_place::<Op>(&mut data, spec).unwrap();
            assert!(same(&data, &want), "{cpu} scan_in_place, n {n}, {spec:?}");
        }
    }
}

#[test]
fn the_matrix_product_is_exact_on_every_algorithm_and_size() {
    let mut rng = Rng::fresh("facade matmul2x2 i32");
    for n in sizes::<[i32; 4]>() {
        let x: Vec<[i32; 4]> = rng.vec(n, scan_testing::unimodular_i32);
        check_all::<MatMul2x2<i32>>(&x, |a, b| a == b);
    }
}

#[test]
fn the_linear_recurrence_is_exact_on_exactly_representable_data() {
    let mut rng = Rng::fresh("facade linear recurrence f32");
    for n in sizes::<(f32, f32)>() {
        let x = rng.vec(n, |r| (if r.below(2) == 0 { 1.0f32 } else { -1.0 }, r.below(9) as f32 - 4.0));
        check_all::<LinearRecurrence<f32>>(&x, |a, b| a == b);
    }
}

#[test]
fn wrapping_addition_and_float_max_with_nans_match_the_reference() {
    let mut rng = Rng::fresh("facade add i32 / max f32");
    for n in sizes::<i32>() {
        let x = rng.vec(n, |r| r.next_u64() as i32);
        check_all::<Add<i32>>(&x, |a, b| a == b);
        let x = rng.vec(n, |r| if r.below(10) == 0 { f32::NAN } else { r.range_f64(-1e3, 1e3) as f32 });
        // As long, and equal or both NaN at every index (a NaN result where
        // the reference has none fails; `zip` alone would stop at the shorter).
        check_all::<Max<f32>>(&x, |a, b| {
            a.len() == b.len() && a.iter().zip(b).all(|(p, q)| p == q || (p.is_nan() && q.is_nan()))
        });
    }
}

#[test]
fn the_cpu_device_gives_the_cpu_results_and_errors() {
    let mut rng = Rng::fresh("facade device cpu");
    let device = Device::cpu();
    assert!(!device.is_cuda());
    let x: Vec<[i32; 4]> = rng.vec(100_003, scan_testing::unimodular_i32);
    for spec in ScanSpec::ALL {
        let want = reference::scan::<MatMul2x2<i32>>(&x, spec);
        assert!(device.scan::<MatMul2x2<i32>>(&x, spec).unwrap() == want, "{spec:?}");
        let mut data = x.clone();
        device.scan_in_place::<MatMul2x2<i32>>(&mut data, spec).unwrap();
        assert!(data == want, "in place, {spec:?}");
    }
    let mut short = vec![[0; 4]; 3];
    let err = device.scan_into::<MatMul2x2<i32>>(&x, &mut short, ScanSpec::inclusive());
    assert!(matches!(err, Err(Error::LengthMismatch { input: 100_003, output: 3 })), "{err:?}");
}

#[test]
fn batched_rows_and_bad_shapes_through_the_facade() {
    let mut rng = Rng::fresh("facade rows");
    let cpu = Cpu::new();
    let (rows, len) = (37, 1001);
    let x: Vec<[i32; 4]> = rng.vec(rows * len, scan_testing::unimodular_i32);
    for spec in ScanSpec::ALL {
        let want = reference::scan_rows::<MatMul2x2<i32>>(&x, rows, spec).unwrap();
        let mut out = vec![[0; 4]; x.len()];
        cpu.scan_rows::<MatMul2x2<i32>>(&x, &mut out, rows, spec).unwrap();
        assert!(out == want, "{spec:?}");
    }
    let mut out = vec![[0; 4]; x.len()];
    for bad_rows in [0, 2, 38] {
        let err = cpu.scan_rows::<MatMul2x2<i32>>(&x, &mut out, bad_rows, ScanSpec::inclusive());
        assert!(matches!(err, Err(Error::BadShape { rows, .. }) if rows == bad_rows), "{bad_rows}: {err:?}");
    }
}

/// Inputs at the edges of what the calls take are answers or errors, never
/// panics: a thread count of `usize::MAX` (the executor uses what the work
/// allows), strided rows of no items however many, and a selective scan of
/// L = 0 whose state (batch, dim, N) could not be held.
#[test]
fn absurd_thread_counts_empty_rows_and_unholdable_states_are_not_panics() {
    use scan::maps::{bf16, Widen};
    use scan::selective::{Projection, SelectiveScan, SsmShape};

    let x: Vec<i64> = (1..=64).collect();
    let spec = ScanSpec::inclusive();
    for algorithm in Algorithm::ALL {
        let cpu = Cpu::new().with_algorithm(algorithm).with_threads(usize::MAX);
        let what = format!("{algorithm:?}");
        assert_eq!(cpu.scan::<Add<i64>>(&x, spec).unwrap(), reference::scan::<Add<i64>>(&x, spec), "{what}");
        let mut out = vec![0; 64];
        cpu.scan_rows::<Add<i64>>(&x, &mut out, 4, spec).unwrap();
        assert_eq!(out, reference::scan_rows::<Add<i64>>(&x, 4, spec).unwrap(), "{what}");
        cpu.scan_segments::<Add<i64>>(&x, &mut out, &[0, 10, 10, 40], spec).unwrap();
        assert_eq!(out, reference::scan_segments::<Add<i64>>(&x, &[0, 10, 10, 40], spec).unwrap(), "{what}");
        let flags: Vec<bool> = (0..64).map(|i| i % 7 == 0).collect();
        cpu.scan_flagged::<Add<i64>>(&x, &mut out, &flags, spec).unwrap();
        assert_eq!(out[7], 8, "{what}: a head restarts the sum");
        // (The items between rows keep the output's values: start from x.)
        out.copy_from_slice(&x);
        cpu.scan_rows_strided::<Add<i64>>(&x, &mut out, 3, 5, 20, spec).unwrap();
        assert_eq!(out, reference::scan_rows_strided::<Add<i64>>(&x, 3, 5, 20, spec).unwrap(), "{what}");
        let halves: Vec<bf16> = (0..64).map(|i| bf16::from_f32(i as f32)).collect();
        let mut sums = vec![0.0f32; 64];
        cpu.scan_mapped_rows::<Add<f32>, Widen<bf16>, _>(&halves[..], &mut sums, 2, spec).unwrap();
        assert_eq!((sums[31], sums[63]), (496.0, 1520.0), "{what}: two rows of 32");
        cpu.scan_mapped::<Add<f32>, Widen<bf16>, _>(&halves[..], &mut sums, spec).unwrap();
        assert_eq!(sums[63], 2016.0, "{what}");
        assert_eq!(cpu.compact(&x, &flags).unwrap(), [1, 8, 15, 22, 29, 36, 43, 50, 57, 64], "{what}");
    }

    // Rows of no items: nothing to scan, whatever their count and stride.
    let cpu = Cpu::new();
    let mut out: Vec<i64> = vec![];
    cpu.scan_rows_strided::<Add<i64>>(&[], &mut out, usize::MAX, 0, 0, spec).unwrap();
    assert!(reference::strided_rows(0, usize::MAX, 0, 0).unwrap().is_empty());
    let mut kept = x.clone();
    cpu.scan_rows_strided::<Add<i64>>(&x, &mut kept, 65, 0, 1, spec).unwrap();
    assert_eq!(kept, x, "rows of no items leave the output as it was");
    // (Rows starting past the end do not fit, empty or not.)
    let err = cpu.scan_rows_strided::<Add<i64>>(&x, &mut kept, usize::MAX, 0, 1, spec);
    assert!(matches!(err, Err(Error::BadStride { .. })), "{err:?}");

    // L = 0: no argument bounds batch x dim x N, so the shape check does.
    let a = [-1.0f32; 4];
    let shape = SsmShape { batch: 1 << 62, dim: 1, len: 0, state: 4 };
    let args = SelectiveScan::new(shape, &[], &[], &a, Projection::Fixed(&a), Projection::Fixed(&a));
    assert!(matches!(args.validate(), Err(Error::TooLarge { .. })), "{:?}", args.validate());
    assert!(matches!(cpu.selective_scan(&args), Err(Error::TooLarge { .. })));
    assert!(matches!(cpu.selective_scan_backward(&args, &[]), Err(Error::TooLarge { .. })));
    assert!(matches!(scan::selective::reference(&args.return_last_state(true)), Err(Error::TooLarge { .. })));
    // Addressable but not allocatable (2^61 bytes of state): the calls that
    // would allocate it say so; those that need nothing answer at once.
    let shape = SsmShape { batch: 1 << 59, dim: 1, len: 0, state: 1 };
    let args = SelectiveScan::new(shape, &[], &[], &a[..1], Projection::Fixed(&a[..1]), Projection::Fixed(&a[..1]));
    assert!(args.validate().is_ok());
    let with_last = args.return_last_state(true);
    assert!(matches!(cpu.selective_scan(&with_last), Err(Error::TooLarge { .. })));
    assert!(matches!(scan::selective::reference(&with_last), Err(Error::TooLarge { .. })));
    // (The saving forward keeps nothing without steps: it no longer lists
    // 2^56 blocks of rows to refuse them.)
    let (saved_out, saved) = cpu.selective_scan_saving(&args).unwrap();
    assert!(saved_out.out.is_empty() && saved_out.last_state.is_none());
    assert!(cpu.selective_scan_backward_saved(&args, &saved, &[]).unwrap().du.is_empty());
    let forward = cpu.selective_scan(&args).unwrap();
    assert!(forward.out.is_empty() && forward.last_state.is_none());
    assert!(scan::selective::reference(&args).unwrap().0.is_empty());
    for grads in [cpu.selective_scan_backward(&args, &[]), scan::selective::backward::reference_backward(&args, &[])] {
        let grads = grads.unwrap();
        assert!(grads.du.is_empty() && grads.da == [0.0] && grads.db == [0.0] && grads.dinitial_state.is_none());
    }
    let huge = SsmShape { batch: 1 << 32, dim: 1 << 32, len: 1, state: 1 };
    let err = scan::selective::backward::check_dout_len(huge, 0);
    assert!(matches!(err, Err(Error::WrongShape { .. })), "{err:?}");
    // A shape that fits is still a scan: the last state is the initial one.
    let init = [0.5f32; 8];
    let small = SsmShape { batch: 2, dim: 1, len: 0, state: 4 };
    let args = SelectiveScan::new(small, &[], &[], &a, Projection::Fixed(&a), Projection::Fixed(&a))
        .initial_state(&init)
        .return_last_state(true);
    assert_eq!(cpu.selective_scan(&args).unwrap().last_state.unwrap(), init);
}
