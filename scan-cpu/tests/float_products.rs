//! The tiled path's other tile order (reduce each chunk, then scan it from
//! its prefix: `kernel::reduces_first`), taken for products of f32, bf16
//! and f16 (`ScanOp::multiplies_narrow_floats`), here the built-in ones:
//! `Mul`, `LinearRecurrence` and `MatMul2x2` on data whose every partial
//! result is exact (signs, decays in {-1, 0, 1} with small integers, signed
//! permutation matrices), so that any misplaced item shows, on sizes around
//! 1, 2, 8 and 13 tiles and past the streaming threshold, every kind and
//! direction, 1 to 3 threads, out of place over a stale output, into an
//! unaligned output and in place; and the f32 recurrence's bits the same for
//! every thread count. (Written by a helper reviewing the change; the 8-lane
//! AVX2 chains with seeds run on 4-byte items: the f32 products and the half
//! pairs.)

use std::fmt::Debug;

use scan_core::maps::{bf16, f16};
use scan_core::ops::{LinearRecurrence, MatMul2x2, Mul};
use scan_core::{reference, ScanOp, ScanSpec};
use scan_cpu::{tile_len, Algorithm, Cpu, STREAM_MIN_BYTES};
use scan_testing::Rng;

fn sizes<T>() -> Vec<usize> {
    let t = tile_len::<T>();
    let mut s = vec![0, 1, 2, 7, 8, 9, 127, 128, 129, 135, 136, 1000];
    s.extend([t - 1, t, t + 1, t + 7, t + 127, t + 128, 2 * t - 1, 2 * t + 3, 8 * t + 5, 13 * t + 1029]);
    // Past the streaming threshold (non-temporal stores from a staging buffer).
    let big = STREAM_MIN_BYTES / std::mem::size_of::<T>();
    s.extend([big + 12345, big + 7]);
    s.sort_unstable();
    s.dedup();
    s
}

fn exact<Op: ScanOp>(x: &[Op::Item], eq: fn(&Op::Item, &Op::Item) -> bool)
where
    Op::Item: Debug,
{
    let n = x.len();
    for spec in ScanSpec::ALL {
        let want = reference::scan::<Op>(x, spec);
        for threads in [1, 2, 3] {
            let cpu = Cpu::new().with_algorithm(Algorithm::Tiled).with_threads(threads);
            let check = |what: &str, got: &[Op::Item]| {
                if let Some(i) = (0..n).find(|&i| !eq(&got[i], &want[i])) {
                    panic!("{what} n={n} threads={threads} {spec:?}: at {i} got {:?} want {:?}", got[i], want[i]);
                }
            };
            check("scan", &cpu.scan::<Op>(x, spec).unwrap());
            let mut out: Vec<Op::Item> = x.iter().rev().copied().collect();
            cpu.scan_into::<Op>(x, &mut out, spec).unwrap();
            check("scan_into", &out);
            let mut data = x.to_vec();
            cpu.scan_in_place::<Op>(&mut data, spec).unwrap();
            check("in place", &data);
            // An output one item off its allocation's alignment.
            if n > 0 {
                let mut buf: Vec<Op::Item> = vec![x[0]; n + 1];
                cpu.scan_into::<Op>(x, &mut buf[1..], spec).unwrap();
                check("scan_into offset 1", &buf[1..]);
            }
        }
    }
}

fn sign(r: &mut Rng) -> f32 {
    if r.below(2) == 0 {
        1.0
    } else {
        -1.0
    }
}

fn perm(r: &mut Rng) -> [f32; 4] {
    let s = [sign(r), sign(r)];
    if r.below(2) == 0 {
        [s[0], 0.0, 0.0, s[1]]
    } else {
        [0.0, s[0], s[1], 0.0]
    }
}

fn bits_eq_f32(a: &f32, b: &f32) -> bool {
    a.to_bits() == b.to_bits()
}

#[test]
fn mul_products_of_signs_exact() {
    let mut rng = Rng::fresh("review mul");
    for n in sizes::<f32>() {
        let x = rng.vec(n, sign);
        exact::<Mul<f32>>(&x, bits_eq_f32);
    }
    for n in sizes::<bf16>() {
        let x: Vec<bf16> = rng.vec(n, |r| bf16::from_f32(sign(r)));
        exact::<Mul<bf16>>(&x, |a, b| a.to_bits() == b.to_bits());
        let x: Vec<f16> = rng.vec(n, |r| f16::from_f32(sign(r)));
        exact::<Mul<f16>>(&x, |a, b| a.to_bits() == b.to_bits());
    }
}

#[test]
fn recurrence_exact_small_integers() {
    let mut rng = Rng::fresh("review rec");
    // decays in {-1, 0, 1} (0 resets), b in -2..=2: h stays small.
    let gen = |r: &mut Rng| {
        let a = match r.below(16) {
            0 => 0.0f32,
            k if k < 9 => 1.0,
            _ => -1.0,
        };
        (a, r.below(5) as f32 - 2.0)
    };
    for n in sizes::<(f32, f32)>() {
        let x = rng.vec(n, gen);
        exact::<LinearRecurrence<f32>>(&x, |a, b| a == b);
    }
    for n in sizes::<(bf16, bf16)>() {
        let x: Vec<(bf16, bf16)> = rng.vec(n, |r| {
            let (a, b) = gen(r);
            (bf16::from_f32(a), bf16::from_f32(b))
        });
        exact::<LinearRecurrence<bf16>>(&x, |a, b| a == b);
        let x: Vec<(f16, f16)> = rng.vec(n, |r| {
            let (a, b) = gen(r);
            (f16::from_f32(a), f16::from_f32(b))
        });
        exact::<LinearRecurrence<f16>>(&x, |a, b| a == b);
    }
}

#[test]
fn matmul_signed_permutations_exact() {
    let mut rng = Rng::fresh("review mm");
    for n in sizes::<[f32; 4]>() {
        let x = rng.vec(n, perm);
        exact::<MatMul2x2<f32>>(&x, |a, b| a == b);
    }
    for n in sizes::<[f16; 4]>() {
        let x: Vec<[f16; 4]> = rng.vec(n, |r| perm(r).map(f16::from_f32));
        exact::<MatMul2x2<f16>>(&x, |a, b| a == b);
        let x: Vec<[bf16; 4]> = rng.vec(n, |r| perm(r).map(bf16::from_f32));
        exact::<MatMul2x2<bf16>>(&x, |a, b| a == b);
    }
}

/// Same bits for every thread count, streaming and not, in place and not.
#[test]
fn recurrence_f32_bitwise_deterministic_across_threads() {
    let mut rng = Rng::fresh("review det");
    for n in [3 * tile_len::<(f32, f32)>() + 99, STREAM_MIN_BYTES / 8 + 4321] {
        let x = rng.vec(n, |r| (r.range_f64(0.5, 1.0) as f32, r.range_f64(-1.0, 1.0) as f32));
        for spec in ScanSpec::ALL {
            let bits = |v: &[(f32, f32)]| v.iter().map(|p| (p.0.to_bits(), p.1.to_bits())).collect::<Vec<_>>();
            let first = bits(&Cpu::new().with_threads(1).scan::<LinearRecurrence<f32>>(&x, spec).unwrap());
            for threads in [2, 3, 4, 7] {
                let cpu = Cpu::new().with_threads(threads);
                assert!(bits(&cpu.scan::<LinearRecurrence<f32>>(&x, spec).unwrap()) == first, "{threads} {spec:?}");
                let mut d = x.clone();
                cpu.scan_in_place::<LinearRecurrence<f32>>(&mut d, spec).unwrap();
                assert!(bits(&d) == first, "in place {threads} {spec:?}");
            }
        }
    }
}
