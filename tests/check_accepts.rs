//! Operators the associativity checker must accept without `assume_associative`
//! (DESIGN.md §2): each is declared here with `#[scan_op]` alone, so this file
//! compiling is the acceptance; the tests then check that the generated
//! operators really satisfy both laws on random inputs (exactly: the inputs are
//! small integers, on which float arithmetic is exact) and scan like direct loops.
// The fns are the definitions; the tests use the generated operator types.
#![allow(dead_code)]

use scan::{reference, scan_op, Cpu, ScanOp, ScanSpec};
use scan_testing::{boundary_sizes, Rng};

#[scan_op(identity = 0.0)]
fn add(a: f64, b: f64) -> f64 {
    a + b
}

#[scan_op(identity = 1)]
fn mul(a: i64, b: i64) -> i64 {
    a.wrapping_mul(b)
}

#[scan_op(identity = f32::NEG_INFINITY)]
fn max(a: f32, b: f32) -> f32 {
    a.max(b)
}

#[scan_op(identity = u32::MAX)]
fn min(a: u32, b: u32) -> u32 {
    a.min(b)
}

#[scan_op(identity = u32::MAX)]
fn and(a: u32, b: u32) -> u32 {
    a & b
}

#[scan_op(identity = 0)]
fn or(a: u64, b: u64) -> u64 {
    a | b
}

#[scan_op(identity = 0)]
fn xor(a: i32, b: i32) -> i32 {
    a ^ b
}

/// h_t = a_t h_{t-1} + b_t.
#[scan_op(identity = (1.0, 0.0))]
fn linear_recurrence(l: (f64, f64), r: (f64, f64)) -> (f64, f64) {
    (l.0 * r.0, r.0 * l.1 + r.1)
}

#[scan_op(identity = [1, 0, 0, 1])]
fn mat_mul_2x2(l: [i64; 4], r: [i64; 4]) -> [i64; 4] {
    [l[0] * r[0] + l[1] * r[2], l[0] * r[1] + l[1] * r[3], l[2] * r[0] + l[3] * r[2], l[2] * r[1] + l[3] * r[3]]
}

/// (flag, value): a nonzero flag on the right starts a new segment. A branch,
/// decided by splitting on the flag.
#[scan_op(identity = (0, 0))]
fn segmented_sum(l: (u32, i64), r: (u32, i64)) -> (u32, i64) {
    (l.0 | r.0, if r.0 != 0 { r.1 } else { l.1 + r.1 })
}

/// Max-plus "best prefix" on (best, total): an element x enters as (x, x).
#[scan_op(identity = (f64::NEG_INFINITY, 0.0))]
fn best_prefix(l: (f64, f64), r: (f64, f64)) -> (f64, f64) {
    (l.0.max(l.1 + r.0), l.1 + r.1)
}

/// Both laws on `cases` random triples, compared exactly.
fn laws<Op: ScanOp>(rng: &mut Rng, cases: usize, mut gen: impl FnMut(&mut Rng) -> Op::Item)
where
    Op::Item: PartialEq + std::fmt::Debug,
{
    let e = Op::identity();
    for _ in 0..cases {
        let (a, b, c) = (gen(rng), gen(rng), gen(rng));
        let (l, r) = (Op::combine(Op::combine(a, b), c), Op::combine(a, Op::combine(b, c)));
        assert_eq!(l, r, "associativity: a = {a:?}, b = {b:?}, c = {c:?}");
        assert_eq!(Op::combine(e, a), a, "left identity: a = {a:?}");
        assert_eq!(Op::combine(a, e), a, "right identity: a = {a:?}");
    }
}

fn small(r: &mut Rng) -> i64 {
    r.below(21) as i64 - 10
}

#[test]
fn accepted_operators_satisfy_both_laws_on_random_inputs() {
    let mut rng = Rng::fresh("accepted_operators_satisfy_both_laws");
    let n = 2000;
    laws::<Add>(&mut rng, n, |r| small(r) as f64);
    laws::<Mul>(&mut rng, n, |r| r.next_u64() as i64);
    laws::<Max>(&mut rng, n, |r| small(r) as f32);
    laws::<Min>(&mut rng, n, |r| r.next_u64() as u32);
    laws::<And>(&mut rng, n, |r| r.next_u64() as u32);
    laws::<Or>(&mut rng, n, |r| r.next_u64());
    laws::<Xor>(&mut rng, n, |r| r.next_u64() as i32);
    laws::<LinearRecurrence>(&mut rng, n, |r| (small(r) as f64, small(r) as f64));
    laws::<MatMul2x2>(&mut rng, n, |r| [0; 4].map(|_: i64| r.next_u64() as i64));
    laws::<SegmentedSum>(&mut rng, n, |r| (r.below(3) as u32 * (r.below(2) as u32), small(r)));
    laws::<BestPrefix>(&mut rng, n, |r| {
        let x = small(r) as f64;
        (x.max(small(r) as f64), x)
    });
}

#[test]
fn segmented_sum_and_best_prefix_scan_like_direct_loops() {
    let mut rng = Rng::fresh("segmented_sum_and_best_prefix_scan");
    let cpu = Cpu::new();
    for n in boundary_sizes(256) {
        let items: Vec<(u32, i64)> = rng.vec(n, |r| ((r.below(5) == 0) as u32 * 7, small(r)));
        let got = cpu.scan::<SegmentedSum>(&items, ScanSpec::inclusive()).expect("cpu scan");
        assert_eq!(got, reference::scan::<SegmentedSum>(&items, ScanSpec::inclusive()), "n = {n}");
        let mut run = 0i64;
        for (i, &(f, v)) in items.iter().enumerate() {
            run = if f != 0 { v } else { run + v };
            assert_eq!(got[i].1, run, "segmented sum, n = {n}, i = {i}");
        }

        // Small integers: every prefix sum is exact in f64.
        let xs: Vec<f64> = rng.vec(n, |r| small(r) as f64);
        let items: Vec<(f64, f64)> = xs.iter().map(|&x| (x, x)).collect();
        let got = cpu.scan::<BestPrefix>(&items, ScanSpec::inclusive()).expect("cpu scan");
        let (mut sum, mut best) = (0.0f64, f64::NEG_INFINITY);
        for (i, x) in xs.iter().enumerate() {
            sum += x;
            best = best.max(sum);
            assert_eq!(got[i], (best, sum), "best prefix, n = {n}, i = {i}");
        }
    }
}
