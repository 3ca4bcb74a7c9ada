//! The Blelloch block scan and the multi-block driver against the reference,
//! for every kind and direction, with blocks so small (2 to 4 items) that
//! every size exercises several levels of recursion and a ragged last block;
//! blocks of 1 item cannot make progress and must be an error (`SliceBackend`
//! itself takes at least 2).
//! Operators: exact ones (wrapping integers, signed-permutation matrices and
//! ±1 recurrences in floating point), always including non-commutative ones.

use scan_core::blelloch::{block, scan_in_place, BlockBackend, SliceBackend};
use scan_core::ops::{Add, LinearRecurrence, MatMul2x2, Max};
use scan_core::{reference, ScanOp, ScanSpec};
use scan_testing::{boundary_sizes, Rng};

/// 0..=70 (every ragged tail for blocks up to 4, up to 4 levels), then a few
/// larger boundary sizes.
fn sizes() -> Vec<usize> {
    let mut s: Vec<usize> = (0..=70).collect();
    s.extend([127, 128, 129, 1000, 4097]);
    s
}

/// Runs the driver on `x` with blocks of 2, 3 and 4 items (and 5 and 8), for
/// every kind and direction, and compares with the reference exactly.
fn check_driver<Op>(x: &[Op::Item])
where
    Op: ScanOp,
    Op::Item: PartialEq + std::fmt::Debug,
{
    for block_len in [2, 3, 4, 5, 8] {
        let backend = SliceBackend::new(block_len);
        for spec in ScanSpec::ALL {
            let mut got = x.to_vec();
            scan_in_place::<Op, _>(&backend, &mut got[..], x.len(), spec).expect("host scratch fits");
            let want = reference::scan::<Op>(x, spec);
            assert!(got == want, "block {block_len}, n {}, {spec:?}:\n got {got:?}\nwant {want:?}", x.len());
        }
    }
}

#[test]
fn the_driver_with_tiny_blocks_equals_the_reference_for_wrapping_addition() {
    let mut rng = Rng::fresh("driver add i64");
    for n in sizes() {
        let x = rng.vec(n, |r| r.next_u64() as i64);
        check_driver::<Add<i64>>(&x);
    }
}

#[test]
fn the_driver_with_tiny_blocks_equals_the_reference_for_integer_matrices() {
    let mut rng = Rng::fresh("driver matmul2x2 i32");
    for n in sizes() {
        // Determinant 1: random entries reach the zero matrix within some
        // 100-200 factors, and every later prefix would then be 0.
        let x = rng.vec(n, scan_testing::unimodular_i32);
        check_driver::<MatMul2x2<i32>>(&x);
    }
}

#[test]
fn the_driver_with_tiny_blocks_equals_the_reference_for_float_operators_on_exact_data() {
    let mut rng = Rng::fresh("driver floats");
    for n in sizes() {
        // a = ±1, b small integers: exact in any association, not commutative.
        let x = rng.vec(n, |r| (if r.below(2) == 0 { 1.0f64 } else { -1.0 }, r.below(9) as f64 - 4.0));
        check_driver::<LinearRecurrence<f64>>(&x);
        // Signed permutation matrices: a non-commutative group, exact in f32.
        let x = rng.vec(n, |r| {
            let s = |r: &mut Rng| if r.below(2) == 0 { 1.0f32 } else { -1.0 };
            if r.below(2) == 0 {
                [s(r), 0.0, 0.0, s(r)]
            } else {
                [0.0, s(r), s(r), 0.0]
            }
        });
        check_driver::<MatMul2x2<f32>>(&x);
        let x = rng.vec(n, |r| r.range_f64(-1e3, 1e3) as f32);
        check_driver::<Max<f32>>(&x);
    }
}

/// A backend that says its blocks hold one item (the `SliceBackend` below it
/// does the work): the driver cannot reduce its totals.
struct OneItemBlocks(SliceBackend<u64>);

impl BlockBackend<Add<u64>> for OneItemBlocks {
    type Buf = [u64];
    type Scratch = Vec<u64>;
    fn block_len(&self) -> usize {
        1
    }
    fn buf_len(&self, buf: &[u64]) -> usize {
        buf.len()
    }
    fn alloc(&self, len: usize) -> scan_core::Result<Vec<u64>> {
        BlockBackend::<Add<u64>>::alloc(&self.0, len)
    }
    fn scan_blocks(
        &self,
        src: Option<&[u64]>,
        dst: &mut [u64],
        len: usize,
        spec: ScanSpec,
        totals: Option<&mut [u64]>,
    ) -> scan_core::Result<()> {
        // Called for at most one item (the driver refuses more): the
        // two-item backend's one block is the same.
        BlockBackend::<Add<u64>>::scan_blocks(&self.0, src, dst, len, spec, totals)
    }
    fn add_prefixes(&self, data: &mut [u64], len: usize, spec: ScanSpec, prefixes: &[u64]) -> scan_core::Result<()> {
        BlockBackend::<Add<u64>>::add_prefixes(&self.0, data, len, spec, prefixes)
    }
}

#[test]
fn blocks_of_one_item_are_an_error_past_one_item_not_a_stack_overflow() {
    let backend = OneItemBlocks(SliceBackend::new(2));
    for spec in ScanSpec::ALL {
        for n in [0usize, 1] {
            let mut x: Vec<u64> = (1..=n as u64).collect();
            scan_in_place::<Add<u64>, _>(&backend, &mut x[..], n, spec).unwrap();
            assert_eq!(x, reference::scan::<Add<u64>>(&(1..=n as u64).collect::<Vec<_>>(), spec));
        }
        let mut x = [1u64, 2, 3];
        let err = scan_in_place::<Add<u64>, _>(&backend, &mut x[..], 3, spec);
        assert!(matches!(err, Err(scan_core::Error::BadTuning(_))), "{spec:?}: {err:?}");
        assert_eq!(x, [1, 2, 3], "{spec:?}: a rejected scan must not touch the data");
    }
    // `SliceBackend::new` takes blocks of at least 2 items: 0 and 1 scan.
    for block_len in [0, 1] {
        for spec in ScanSpec::ALL {
            let mut x = [1u64, 2, 3, 4, 5];
            scan_in_place::<Add<u64>, _>(&SliceBackend::new(block_len), &mut x[..], 5, spec).unwrap();
            assert_eq!(x[..], reference::scan::<Add<u64>>(&[1, 2, 3, 4, 5], spec)[..], "{block_len}, {spec:?}");
        }
    }
}

#[test]
fn the_driver_scans_only_the_first_len_items() {
    let backend = SliceBackend::new(2);
    for spec in ScanSpec::ALL {
        let mut x = [1u64, 2, 3, 4, 5, 6, 7, 100, 200];
        scan_in_place::<Add<u64>, _>(&backend, &mut x[..], 7, spec).unwrap();
        assert_eq!(&x[..7], &reference::scan::<Add<u64>>(&[1, 2, 3, 4, 5, 6, 7], spec)[..], "{spec:?}");
        assert_eq!(&x[7..], &[100, 200], "{spec:?}: wrote past len");
    }
}

#[test]
fn one_block_of_any_length_equals_the_reference_and_returns_the_total() {
    let mut rng = Rng::fresh("block");
    let mut scratch = Vec::new();
    for n in boundary_sizes(64).into_iter().filter(|&n| n <= 5000) {
        // Determinant 1: the prefixes never collapse to the zero matrix.
        let x: Vec<[i32; 4]> = rng.vec(n, scan_testing::unimodular_i32);
        for spec in ScanSpec::ALL {
            let mut got = x.clone();
            let total = block::scan_block::<MatMul2x2<i32>>(&mut got, spec, &mut scratch);
            let mut want = x.clone();
            let want_total = reference::scan_in_place::<MatMul2x2<i32>>(&mut want, spec);
            assert_eq!(got, want, "n {n}, {spec:?}");
            assert_eq!(total, want_total, "total, n {n}, {spec:?}");
        }
    }
}

#[test]
fn the_sweeps_use_exactly_2_n_minus_1_combines() {
    // Work efficiency: n - 1 combines up, n - 1 down (the root's clear is not
    // a combine), for every power of two.
    use std::cell::Cell;
    thread_local!(static COMBINES: Cell<usize> = const { Cell::new(0) });
    struct Counting;
    impl ScanOp for Counting {
        type Item = u64;
        fn identity() -> u64 {
            0
        }
        fn combine(a: u64, b: u64) -> u64 {
            COMBINES.with(|c| c.set(c.get() + 1));
            a.wrapping_add(b)
        }
    }
    for log in 0..12 {
        let n = 1usize << log;
        let mut tree: Vec<u64> = (1..=n as u64).collect();
        COMBINES.with(|c| c.set(0));
        block::up_sweep::<Counting>(&mut tree).unwrap();
        block::down_sweep::<Counting>(&mut tree).unwrap();
        assert_eq!(COMBINES.with(Cell::get), 2 * (n - 1), "n = {n}");
        let want: Vec<u64> = (0..n as u64).map(|i| i * (i + 1) / 2).collect();
        assert_eq!(tree, want, "n = {n}: the sweeps leave the exclusive scan");
    }
}

/// The monoid on `()`: zero-sized items.
struct Unit;

impl ScanOp for Unit {
    type Item = ();
    fn identity() {}
    fn combine((): (), (): ()) {}
}

/// `usize::MAX` zero-sized items: no power of two holds them (the block scan
/// overflowed computing one) and no loop over them ends; both levels return
/// at once.
#[test]
fn zero_sized_items_of_any_count_are_scanned_at_once() {
    let mut x = vec![(); usize::MAX];
    for spec in ScanSpec::ALL {
        block::scan_block::<Unit>(&mut x, spec, &mut Vec::new());
        scan_in_place::<Unit, _>(&SliceBackend::new(1024), &mut x[..], usize::MAX, spec).unwrap();
        let mut small = [(); 5];
        block::scan_block::<Unit>(&mut small, spec, &mut Vec::new());
    }
}
