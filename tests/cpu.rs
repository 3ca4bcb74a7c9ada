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
        let x: Vec<[i32; 4]> = rng.vec(n, |r| std::array::from_fn(|_| r.next_u64() as i32));
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
        // Equal, or both NaN (a NaN result where the reference has none fails).
        check_all::<Max<f32>>(&x, |a, b| a.iter().zip(b).all(|(p, q)| p == q || (p.is_nan() && q.is_nan())));
    }
}

#[test]
fn the_cpu_device_gives_the_cpu_results_and_errors() {
    let mut rng = Rng::fresh("facade device cpu");
    let device = Device::cpu();
    assert!(!device.is_cuda());
    let x: Vec<[i32; 4]> = rng.vec(100_003, |r| std::array::from_fn(|_| r.next_u64() as i32));
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
    let x: Vec<[i32; 4]> = rng.vec(rows * len, |r| std::array::from_fn(|_| r.next_u64() as i32));
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
