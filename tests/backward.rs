//! The backward pass of the linear recurrence (`scan::backward`) against a
//! direct f64 loop and against finite differences, on every CPU algorithm
//! and (on a GPU machine) on the GPU; lengths around the CPU tile and the
//! GPU single-pass tile; mismatched lengths are errors.

#[path = "../scan-cuda/tests/support/mod.rs"]
mod support;

use scan::backward::linear_recurrence_backward;
use scan::ops::LinearRecurrence;
use scan::{Algorithm, Cpu, Error, Scan, ScanSpec};
use scan_testing::Rng;

/// `(h, da, db)` by the definition, in f64: forward loop, then the adjoint loop.
fn direct(a: &[f64], b: &[f64], dh: &[f64]) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let n = a.len();
    let mut h = vec![0.0; n];
    let mut prev = 0.0;
    for t in 0..n {
        prev = a[t] * prev + b[t];
        h[t] = prev;
    }
    let (mut da, mut db) = (vec![0.0; n], vec![0.0; n]);
    let mut g = 0.0;
    for t in (0..n).rev() {
        g = dh[t] + if t + 1 < n { a[t + 1] * g } else { 0.0 };
        db[t] = g;
        da[t] = if t == 0 { 0.0 } else { g * h[t - 1] };
    }
    (h, da, db)
}

fn check<E: Scan<LinearRecurrence<f32>> + ?Sized>(executor: &E, label: &str, n: usize, rng: &mut Rng) {
    let a: Vec<f32> = rng.vec(n, |r| r.range_f64(0.5, 1.0) as f32);
    let b: Vec<f32> = rng.vec(n, |r| r.range_f64(-1.0, 1.0) as f32);
    let dh: Vec<f32> = rng.vec(n, |r| r.range_f64(-1.0, 1.0) as f32);
    let ab: Vec<(f32, f32)> = a.iter().copied().zip(b.iter().copied()).collect();
    let h: Vec<f32> = executor.scan(&ab, ScanSpec::inclusive()).unwrap().iter().map(|p| p.1).collect();
    let (da, db) = linear_recurrence_backward(executor, &a, &h, &dh).unwrap();
    let wide = |x: &[f32]| x.iter().map(|&v| f64::from(v)).collect::<Vec<_>>();
    let (_, want_da, want_db) = direct(&wide(&a), &wide(&b), &wide(&dh));
    // g sums decaying terms (a < 1): errors stay at a few f32 roundings of its size.
    for (name, got, want) in [("da", &da, &want_da), ("db", &db, &want_db)] {
        if let Some(t) = (0..n).find(|&t| (f64::from(got[t]) - want[t]).abs() > 1e-4 * (1.0 + want[t].abs())) {
            panic!("{label}, n = {n}: {name}[{t}] = {}, want {}", got[t], want[t]);
        }
    }
}

#[test]
fn the_backward_pass_matches_the_adjoint_loop_on_every_cpu_algorithm() {
    let mut rng = Rng::fresh("backward");
    let tile = scan_cpu::tile_len::<(f32, f32)>();
    for algorithm in [Algorithm::Sequential, Algorithm::Blelloch, Algorithm::Tiled] {
        let cpu = Cpu::new().with_algorithm(algorithm);
        for n in [0, 1, 2, 7, tile - 1, tile, tile + 1, 5 * tile + 3] {
            check(&cpu, &format!("{algorithm:?}"), n, &mut rng);
        }
    }
}

/// The gradient is the derivative: a central difference of L = <dh, h> in
/// each input, in f64, agrees with it.
#[test]
fn the_gradients_are_the_derivatives_of_the_loss() {
    let mut rng = Rng::fresh("backward finite differences");
    let n = 12;
    let a: Vec<f64> = rng.vec(n, |r| r.range_f64(0.5, 1.0));
    let b: Vec<f64> = rng.vec(n, |r| r.range_f64(-1.0, 1.0));
    let dh: Vec<f64> = rng.vec(n, |r| r.range_f64(-1.0, 1.0));
    let loss = |a: &[f64], b: &[f64]| -> f64 { direct(a, b, &dh).0.iter().zip(&dh).map(|(h, g)| h * g).sum() };
    let ab: Vec<(f64, f64)> = a.iter().copied().zip(b.iter().copied()).collect();
    let cpu = Cpu::new();
    let h: Vec<f64> =
        cpu.scan::<LinearRecurrence<f64>>(&ab, ScanSpec::inclusive()).unwrap().iter().map(|p| p.1).collect();
    let (da, db) = linear_recurrence_backward(&cpu, &a, &h, &dh).unwrap();
    let eps = 1e-6;
    for t in 0..n {
        let bump = |x: &[f64], d: f64| -> Vec<f64> {
            x.iter().enumerate().map(|(i, &v)| if i == t { v + d } else { v }).collect()
        };
        let fd_a = (loss(&bump(&a, eps), &b) - loss(&bump(&a, -eps), &b)) / (2.0 * eps);
        let fd_b = (loss(&a, &bump(&b, eps)) - loss(&a, &bump(&b, -eps))) / (2.0 * eps);
        assert!((fd_a - da[t]).abs() < 1e-6, "da[{t}] = {}, finite difference {fd_a}", da[t]);
        assert!((fd_b - db[t]).abs() < 1e-6, "db[{t}] = {}, finite difference {fd_b}", db[t]);
    }
}

#[test]
fn mismatched_lengths_are_errors() {
    let cpu = Cpu::new();
    let err = linear_recurrence_backward(&cpu, &[1.0f32; 3], &[1.0; 2], &[1.0; 3]).unwrap_err();
    assert_eq!(err.to_string(), "wrong shape: `h` must be 3 items, one per item of `a`, found 2 items");
    let err = linear_recurrence_backward(&cpu, &[1.0f32; 3], &[1.0; 3], &[1.0; 4]).unwrap_err();
    assert!(matches!(&err, Error::WrongShape { argument, .. } if argument == "dh"), "{err}");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn the_backward_pass_runs_on_the_gpu() {
    let mut rng = Rng::fresh("backward gpu");
    let cuda = support::gpu::cuda();
    for n in [1, 2, 4095, 4097, 1 << 20] {
        check(&cuda, "GPU", n, &mut rng);
    }
}
