//! The rest of the `Cpu` contract: batched rows, bad input, thread counts,
//! the non-temporal output path, and a panicking operator.

mod support;

use scan_core::ops::{Add, LinearRecurrence, MatMul2x2};
use scan_core::{reference, Error, ScanOp, ScanSpec};
use scan_cpu::{tile_len, Algorithm, Cpu, STREAM_MIN_BYTES};
use scan_testing::Rng;

use support::{for_each_scan_on, Check};

fn all_cpus() -> Vec<Cpu> {
    Algorithm::ALL.iter().map(|&a| Cpu::new().with_algorithm(a)).collect()
}

fn random_matrices(rng: &mut Rng, n: usize) -> Vec<[i32; 4]> {
    rng.vec(n, scan_testing::unimodular_i32)
}

// ---------------------------------------------------------------- batched rows

/// Checks `scan_rows` and `scan_rows_in_place` of every algorithm against
/// `reference::scan_rows` for one shape.
fn check_rows<Op: ScanOp>(x: &[Op::Item], rows: usize)
where
    Op::Item: PartialEq + std::fmt::Debug,
{
    for spec in ScanSpec::ALL {
        let want = reference::scan_rows::<Op>(x, rows, spec).expect("valid shape");
        for cpu in all_cpus() {
            let mut out: Vec<Op::Item> = x.iter().rev().copied().collect();
            cpu.scan_rows::<Op>(x, &mut out, rows, spec).unwrap();
            assert!(out == want, "{cpu} scan_rows: {rows} rows of {}, {spec:?}", x.len() / rows);
            let mut data = x.to_vec();
            cpu.scan_rows_in_place::<Op>(&mut data, rows, spec).unwrap();
            assert!(data == want, "{cpu} scan_rows_in_place: {rows} rows of {}, {spec:?}", x.len() / rows);
        }
    }
}

#[test]
fn each_row_is_scanned_independently_for_many_short_rows() {
    let mut rng = Rng::fresh("rows: many short");
    for (rows, len) in [(1, 1000), (2, 3), (3, 33), (7, 1), (64, 100), (1000, 9), (5, 0)] {
        let x = random_matrices(&mut rng, rows * len);
        check_rows::<MatMul2x2<i32>>(&x, rows);
    }
}

#[test]
fn each_row_is_scanned_independently_for_few_long_rows() {
    // Rows of a few tiles and rows past 1 MiB, which are split over threads.
    let mut rng = Rng::fresh("rows: few long");
    let long = (1 << 20) / 4 + 3;
    for (rows, len) in [(2, 3 * tile_len::<i32>() + 1), (3, long), (1, long)] {
        let x = rng.vec(rows * len, |r| r.next_u64() as i32);
        check_rows::<Add<i32>>(&x, rows);
    }
}

#[test]
fn zero_rows_and_rows_that_do_not_divide_the_length_are_bad_shapes() {
    let cpu = Cpu::new();
    let x = [1, 2, 3, 4, 5, 6];
    let mut out = [0; 6];
    for rows in [0, 4, 5, 7] {
        let err = cpu.scan_rows::<Add<i32>>(&x, &mut out, rows, ScanSpec::inclusive());
        assert!(matches!(err, Err(Error::BadShape { len: 6, rows: r }) if r == rows), "rows {rows}: {err:?}");
        let mut data = x;
        let err = cpu.scan_rows_in_place::<Add<i32>>(&mut data, rows, ScanSpec::inclusive());
        assert!(matches!(err, Err(Error::BadShape { len: 6, rows: r }) if r == rows), "rows {rows}: {err:?}");
        assert_eq!(data, x, "a rejected in-place call must not touch the data");
    }
    assert_eq!(out, [0; 6], "a rejected call must not touch the output");
    // An empty buffer is any number of empty rows, but never zero rows.
    assert!(cpu.scan_rows_in_place::<Add<i32>>(&mut [], 3, ScanSpec::inclusive()).is_ok());
    assert!(matches!(
        cpu.scan_rows_in_place::<Add<i32>>(&mut [], 0, ScanSpec::inclusive()),
        Err(Error::BadShape { len: 0, rows: 0 })
    ));
}

// ---------------------------------------------------------------- bad input

#[test]
fn an_output_of_another_length_is_a_length_mismatch_and_is_left_alone() {
    for cpu in all_cpus() {
        let x = [1u64, 2, 3];
        for out_len in [0, 2, 4] {
            let mut out = vec![7u64; out_len];
            let err = cpu.scan_into::<Add<u64>>(&x, &mut out, ScanSpec::inclusive());
            assert!(
                matches!(err, Err(Error::LengthMismatch { input: 3, output }) if output == out_len),
                "{cpu}: {err:?}"
            );
            assert!(out.iter().all(|&v| v == 7), "{cpu}: the output was written");
            let err = cpu.scan_rows::<Add<u64>>(&x, &mut out, 1, ScanSpec::inclusive());
            assert!(matches!(err, Err(Error::LengthMismatch { input: 3, .. })), "{cpu}: {err:?}");
        }
    }
}

#[test]
fn empty_input_gives_an_empty_result() {
    for cpu in all_cpus() {
        for spec in ScanSpec::ALL {
            assert_eq!(cpu.scan::<Add<i32>>(&[], spec).unwrap(), Vec::<i32>::new());
            cpu.scan_into::<Add<i32>>(&[], &mut [], spec).unwrap();
            cpu.scan_in_place::<Add<i32>>(&mut [], spec).unwrap();
        }
    }
}

/// The monoid on `()`: zero-sized items.
struct Unit;

impl ScanOp for Unit {
    type Item = ();
    fn identity() {}
    fn combine((): (), (): ()) {}
}

/// `()` in and out, as fused maps.
struct Same;

impl scan_core::maps::Maps<Unit> for Same {
    type Input = ();
    type Output = ();
    fn lift((): ()) {}
    fn project((): ()) {}
}

/// `usize::MAX` zero-sized items: each algorithm returns at once (the fold
/// would not end; the tiled path used to abort, asking for tile slots past
/// memory), with every item the one value of `()`; so do rows of them, as
/// many as items, strided rows and fused maps, whose bad shapes are still
/// refused.
#[test]
fn zero_sized_items_of_any_count_are_scanned_at_once() {
    for cpu in all_cpus() {
        for spec in ScanSpec::ALL {
            let x = vec![(); usize::MAX];
            assert_eq!(cpu.scan::<Unit>(&x, spec).unwrap().len(), usize::MAX);
            let mut out = vec![(); usize::MAX];
            cpu.scan_into::<Unit>(&x, &mut out, spec).unwrap();
            cpu.scan_in_place::<Unit>(&mut out, spec).unwrap();
            assert_eq!(cpu.scan::<Unit>(&x[..3], spec).unwrap(), [(), (), ()]);
            // As many rows as items (usize::MAX is odd: no rows of 2).
            cpu.scan_rows::<Unit>(&x, &mut out, usize::MAX, spec).unwrap();
            cpu.scan_rows_in_place::<Unit>(&mut out, usize::MAX, spec).unwrap();
            assert!(matches!(cpu.scan_rows_in_place::<Unit>(&mut out, 2, spec), Err(Error::BadShape { .. })));
            // Every other item, as rows of one.
            cpu.scan_rows_strided::<Unit>(&x, &mut out, 1 << 63, 1, 2, spec).unwrap();
            let past = cpu.scan_rows_strided::<Unit>(&x, &mut out, 1 << 63, 2, 2, spec);
            assert!(matches!(past, Err(Error::BadStride { .. })), "{past:?}");
            // Fused maps, whole and in rows.
            cpu.scan_mapped::<Unit, Same, _>(&x[..], &mut out, spec).unwrap();
            cpu.scan_mapped_rows::<Unit, Same, _>(&x[..], &mut out, usize::MAX, spec).unwrap();
            let odd = cpu.scan_mapped_rows::<Unit, Same, _>(&x[..], &mut out, 2, spec);
            assert!(matches!(odd, Err(Error::BadShape { .. })), "{odd:?}");
        }
    }
}

// ---------------------------------------------------------------- threads

#[test]
fn every_thread_count_gives_the_reference_result() {
    // More threads than cores (3, 8) makes workers wait on each other's tiles.
    let mut rng = Rng::fresh("thread counts");
    let n = 20 * tile_len::<[i32; 4]>() + 11;
    let x = random_matrices(&mut rng, n);
    for threads in [1, 2, 3, 8] {
        let cpus: Vec<Cpu> = all_cpus().into_iter().map(|c| c.with_threads(threads)).collect();
        for_each_scan_on::<MatMul2x2<i32>>(&cpus, &x, false, Check::Exact);
    }
}

// ---------------------------------------------------------------- non-temporal output

#[test]
fn large_outputs_written_with_streaming_stores_are_exact_at_any_alignment() {
    // Past STREAM_MIN_BYTES the tiled path writes through non-temporal stores
    // from a staging buffer; offset outputs exercise the unaligned head and tail.
    let mut rng = Rng::fresh("streaming stores");
    let n = STREAM_MIN_BYTES / 4 + 12345;
    let x = rng.vec(n + 3, |r| r.next_u64() as i32);
    let cpu = Cpu::new();
    for spec in ScanSpec::ALL {
        for offset in [0, 1, 3] {
            let input = &x[offset..offset + n];
            let want = reference::scan::<Add<i32>>(input, spec);
            let mut out = vec![0; n + 3];
            cpu.scan_into::<Add<i32>>(input, &mut out[offset..offset + n], spec).unwrap();
            assert!(out[offset..offset + n] == want[..], "offset {offset}, {spec:?}");
            assert!(out[..offset].iter().chain(&out[offset + n..]).all(|&v| v == 0), "wrote outside the output");
            let mut data = input.to_vec();
            cpu.scan_in_place::<Add<i32>>(&mut data, spec).unwrap();
            assert!(data == want, "in place, offset {offset}, {spec:?}");
        }
    }
    // A non-commutative pair type through the same path.
    let n = STREAM_MIN_BYTES / 8 + 777;
    let x = rng.vec(n, |r| (if r.below(2) == 0 { 1.0f32 } else { -1.0 }, r.below(9) as f32 - 4.0));
    for spec in ScanSpec::ALL {
        assert!(
            cpu.scan::<LinearRecurrence<f32>>(&x, spec).unwrap() == reference::scan::<LinearRecurrence<f32>>(&x, spec)
        );
    }
}

// ---------------------------------------------------------------- a panicking operator

/// Addition that panics on one poisoned value.
struct Touchy;
impl ScanOp for Touchy {
    type Item = u32;
    fn identity() -> u32 {
        0
    }
    fn combine(a: u32, b: u32) -> u32 {
        assert!(b != u32::MAX, "poisoned item");
        a.wrapping_add(b)
    }
}

#[test]
fn a_panicking_operator_panics_the_call_instead_of_hanging_it() {
    // The poisoned item sits in a late tile; the workers waiting for that tile
    // must give up rather than wait forever.
    let n = 40 * tile_len::<u32>();
    let mut x = vec![1u32; n];
    x[n - tile_len::<u32>() * 5 / 2] = u32::MAX;
    for cpu in all_cpus() {
        let cpu = cpu.with_threads(3);
        let result = std::panic::catch_unwind(|| cpu.scan::<Touchy>(&x, ScanSpec::inclusive()));
        assert!(result.is_err(), "{cpu}: the operator's panic was lost");
    }
}
