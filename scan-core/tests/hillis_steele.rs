//! Hillis and Steele's scan against the reference (every kind and direction,
//! a non-commutative operator among the cases), and its cost against
//! Blelloch's, counted with an operator that counts its own combines.

use std::cell::Cell;

use scan_core::blelloch::block;
use scan_core::ops::{Add, LinearRecurrence, MatMul2x2};
use scan_core::{hillis_steele, reference, ScanOp, ScanSpec};
use scan_testing::{boundary_sizes, Rng};

fn check<Op: ScanOp>(label: &str, mut gen: impl FnMut(&mut Rng) -> Op::Item)
where
    Op::Item: PartialEq + std::fmt::Debug,
{
    let mut rng = Rng::fresh(label);
    for n in boundary_sizes(64) {
        let x = rng.vec(n, &mut gen);
        for spec in ScanSpec::ALL {
            let mut got = x.clone();
            hillis_steele::scan_block::<Op>(&mut got, spec);
            assert_eq!(got, reference::scan::<Op>(&x, spec), "{label}: n = {n}, {spec:?}");
        }
    }
}

#[test]
fn hillis_steele_equals_the_reference_for_every_kind_and_direction() {
    check::<Add<u32>>("hillis-steele add u32", |r| r.next_u64() as u32);
    // Determinant 1, so the prefixes never collapse to the zero matrix.
    check::<MatMul2x2<i64>>("hillis-steele matmul2x2 i64", scan_testing::unimodular_i64);
    // a in {-1, 0, 1}, small integer b: exact in floating point, non-commutative.
    check::<LinearRecurrence<f64>>("hillis-steele linear recurrence f64", |r| {
        (r.below(3) as f64 - 1.0, r.below(17) as f64 - 8.0)
    });
}

thread_local! {
    static COMBINES: Cell<usize> = const { Cell::new(0) };
}

/// Addition that counts how often it is applied (per thread, so tests running
/// in parallel do not mix their counts).
struct CountedAdd;

impl ScanOp for CountedAdd {
    type Item = u64;
    fn identity() -> u64 {
        0
    }
    fn combine(l: u64, r: u64) -> u64 {
        COMBINES.with(|c| c.set(c.get() + 1));
        l.wrapping_add(r)
    }
}

fn combines(f: impl FnOnce()) -> usize {
    COMBINES.with(|c| c.set(0));
    f();
    COMBINES.with(|c| c.get())
}

#[test]
fn hillis_steele_does_about_n_log_n_combines_and_blelloch_about_2n() {
    for log in [3u32, 10, 16] {
        let n = 1usize << log;
        let x: Vec<u64> = (1..=n as u64).collect();
        let hs = combines(|| {
            let mut y = x.clone();
            hillis_steele::scan_block::<CountedAdd>(&mut y, ScanSpec::inclusive());
        });
        // Step d combines n - d items: n log2 n - (n - 1) in all.
        assert_eq!(hs, n * log as usize - (n - 1), "Hillis-Steele, n = {n}");
        let bl = combines(|| {
            let mut y = x.clone();
            block::up_sweep::<CountedAdd>(&mut y).unwrap();
            block::down_sweep::<CountedAdd>(&mut y).unwrap();
        });
        // Up-sweep n - 1, down-sweep n - 1.
        assert_eq!(bl, 2 * (n - 1), "Blelloch, n = {n}");
        eprintln!("n = 2^{log}: Hillis-Steele {hs} combines, Blelloch {bl} ({:.1}x)", hs as f64 / bl as f64);
    }
}

/// Zero-sized items are all the one value of their type: no combines (as in
/// Blelloch's block scan), where n log n of them took 2.8 s at 2^24 items and
/// never ended at 2^64.
#[test]
fn zero_sized_items_take_no_combines() {
    struct CountedUnit;
    impl ScanOp for CountedUnit {
        type Item = ();
        fn identity() {}
        fn combine((): (), (): ()) {
            COMBINES.with(|c| c.set(c.get() + 1));
        }
    }
    for spec in ScanSpec::ALL {
        let mut units = vec![(); 1 << 40];
        assert_eq!(combines(|| hillis_steele::scan_block::<CountedUnit>(&mut units, spec)), 0, "{spec:?}");
    }
}
