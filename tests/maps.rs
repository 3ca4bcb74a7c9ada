//! Fused input and output maps on the CPU (`Cpu::scan_mapped`) against their
//! sequential definition (`scan::maps::reference`): the linear recurrence from
//! separate `a` and `b` arrays to `h` alone (non-commutative), and bf16/f16
//! inputs scanned in f32; every (kind, direction), sizes around the
//! per-thread piece, one and several threads, outputs poisoned first. Also:
//! bf16 and f16 convert to f32 and back exactly, 2^24 bf16 ones sum to 2^24
//! in f32 (where a bf16 accumulator stalls at 256), and inputs or outputs of
//! different lengths are errors that write nothing. Rows (`Cpu::scan_mapped_rows`)
//! against `scan::maps::reference_rows`, many short rows and a few long
//! ones, and bad shapes.

use scan::maps::{bf16, f16, reference, reference_rows, Half, Recurrence, Widen, WidenNarrow};
use scan::ops::{Add, LinearRecurrence, Max};
use scan::{Cpu, Error, ScanSpec};
use scan_testing::Rng;

/// Around the size where the CPU starts cutting the input into pieces
/// (2^15 items per piece) and around several pieces.
const SIZES: [usize; 12] = [0, 1, 2, 7, 1000, 32767, 32768, 32769, 65535, 65536, 65537, 200_003];

fn executors() -> [Cpu; 3] {
    [Cpu::new().with_threads(1), Cpu::new().with_threads(2), Cpu::new().with_threads(4)]
}

#[test]
fn the_fused_recurrence_matches_its_definition() {
    let mut rng = Rng::fresh("maps recurrence");
    for n in SIZES {
        // a in {-1, 0, 1}, b small integers: h stays an exact integer.
        let a = rng.vec(n, |r| r.below(3) as f32 - 1.0);
        let b = rng.vec(n, |r| r.below(17) as f32 - 8.0);
        for spec in ScanSpec::ALL {
            let want = reference::<LinearRecurrence<f32>, Recurrence, _>((&a[..], &b[..]), spec).unwrap();
            for cpu in executors() {
                let mut h = vec![f32::NAN; n];
                cpu.scan_mapped::<LinearRecurrence<f32>, Recurrence, _>((&a[..], &b[..]), &mut h, spec).unwrap();
                assert_eq!(h, want, "n = {n}, {spec:?}, {} threads", cpu.threads());
            }
        }
    }
}

#[test]
fn half_inputs_scan_in_f32() {
    let mut rng = Rng::fresh("maps half");
    for n in SIZES {
        let x: Vec<bf16> = rng.vec(n, |r| bf16::from_f32(r.below(17) as f32 - 8.0));
        let y: Vec<f16> = rng.vec(n, |r| f16::from_f32(r.range_f64(-100.0, 100.0) as f32));
        for spec in ScanSpec::ALL {
            for cpu in executors() {
                let ctx = format!("n = {n}, {spec:?}, {} threads", cpu.threads());
                let mut out = vec![f32::NAN; n];
                cpu.scan_mapped::<Add<f32>, Widen<bf16>, _>(&x[..], &mut out, spec).unwrap();
                assert_eq!(out, reference::<Add<f32>, Widen<bf16>, _>(&x[..], spec).unwrap(), "{ctx}");
                let mut out = vec![f16::NAN; n];
                cpu.scan_mapped::<Max<f32>, WidenNarrow<f16>, _>(&y[..], &mut out, spec).unwrap();
                let want = reference::<Max<f32>, WidenNarrow<f16>, _>(&y[..], spec).unwrap();
                assert!(out.iter().zip(&want).all(|(g, w)| g.to_bits() == w.to_bits()), "{ctx}");
            }
        }
    }
}

#[test]
fn half_values_convert_to_f32_and_back_exactly() {
    for bits in 0..=u16::MAX {
        let b = bf16::from_bits(bits);
        if !b.is_nan() {
            assert_eq!(bf16::narrow(b.widen()).to_bits(), bits, "bf16 {bits:#06x}");
        }
        let h = f16::from_bits(bits);
        if !h.is_nan() {
            assert_eq!(f16::narrow(h.widen()).to_bits(), bits, "f16 {bits:#06x}");
        }
    }
    // Rounding to nearest, ties to even: 1 + 2^-8 is halfway between two
    // bf16 values (7 fraction bits) and rounds to the even one, 1.
    assert_eq!(bf16::narrow(1.0 + 2f32.powi(-8)), bf16::ONE);
}

#[test]
fn two_to_the_24_bf16_ones_sum_exactly_in_f32() {
    let n = 1usize << 24;
    let ones = vec![bf16::ONE; n];
    // A bf16 accumulator stalls: 256 + 1 rounds back to 256.
    let stalled = ones.iter().fold(bf16::ZERO, |acc, &x| acc + x);
    assert_eq!(stalled.to_f32(), 256.0);
    let mut sums = vec![0.0f32; n];
    Cpu::new().scan_mapped::<Add<f32>, Widen<bf16>, _>(&ones[..], &mut sums, ScanSpec::inclusive()).unwrap();
    assert_eq!(sums[n - 1], n as f32);
    assert!(sums.iter().enumerate().all(|(i, &s)| s == (i + 1) as f32));
}

#[test]
fn different_lengths_are_errors_that_write_nothing() {
    let cpu = Cpu::new();
    let (a, b) = ([1.0f32; 4], [1.0f32; 3]);
    let mut h = [7.0f32; 4];
    let got = cpu.scan_mapped::<LinearRecurrence<f32>, Recurrence, _>((&a[..], &b[..]), &mut h, ScanSpec::inclusive());
    let message = got.expect_err("a short second array").to_string();
    assert_eq!(message, "wrong shape: `inputs.1` must be 4 items, one per item of inputs.0, found 3 items");
    let got =
        cpu.scan_mapped::<LinearRecurrence<f32>, Recurrence, _>((&a[..], &a[..]), &mut h[..3], ScanSpec::inclusive());
    assert!(matches!(got, Err(Error::LengthMismatch { input: 4, output: 3 })), "{got:?}");
    assert_eq!(h, [7.0; 4]);
}

/// Rows of the fused recurrence, each starting afresh: many short rows (a
/// block of rows per thread, each row in one pass), rows around the length
/// where a few rows are split over the threads (2^16), and a few long rows
/// cut into pieces; every (kind, direction), 1, 2 and 4 threads, outputs
/// poisoned first.
#[test]
fn fused_rows_match_their_definition() {
    let mut rng = Rng::fresh("maps rows");
    let shapes: [(usize, usize); 10] =
        [(1, 1), (1, 1000), (3, 1), (7, 5), (1000, 7), (4096, 33), (2, 65535), (3, 65536), (2, 65537), (3, 200_003)];
    for (rows, row_len) in shapes {
        let n = rows * row_len;
        let a = rng.vec(n, |r| r.below(3) as f32 - 1.0);
        let b = rng.vec(n, |r| r.below(17) as f32 - 8.0);
        for spec in ScanSpec::ALL {
            let want = reference_rows::<LinearRecurrence<f32>, Recurrence, _>((&a[..], &b[..]), rows, spec).unwrap();
            // Each row is the plain mapped scan of its positions.
            let first =
                reference::<LinearRecurrence<f32>, Recurrence, _>((&a[..row_len], &b[..row_len]), spec).unwrap();
            assert_eq!(want[..row_len], first[..], "the reference's first row, {rows} x {row_len}, {spec:?}");
            for cpu in executors() {
                let mut h = vec![f32::NAN; n];
                cpu.scan_mapped_rows::<LinearRecurrence<f32>, Recurrence, _>((&a[..], &b[..]), &mut h, rows, spec)
                    .unwrap();
                assert_eq!(h, want, "{rows} x {row_len}, {spec:?}, {} threads", cpu.threads());
            }
        }
    }
}

#[test]
fn bad_row_shapes_are_errors_that_write_nothing() {
    let cpu = Cpu::new();
    let (a, b) = ([1.0f32; 6], [1.0f32; 6]);
    let mut h = [7.0f32; 6];
    for rows in [0, 4, 7] {
        let got = cpu.scan_mapped_rows::<LinearRecurrence<f32>, Recurrence, _>(
            (&a[..], &b[..]),
            &mut h,
            rows,
            ScanSpec::inclusive(),
        );
        assert!(matches!(got, Err(Error::BadShape { len: 6, rows: r }) if r == rows), "{rows} rows: {got:?}");
    }
    let got = cpu.scan_mapped_rows::<LinearRecurrence<f32>, Recurrence, _>(
        (&a[..], &b[..5]),
        &mut h,
        2,
        ScanSpec::inclusive(),
    );
    assert!(matches!(&got, Err(Error::WrongShape { argument, .. }) if argument == "inputs.1"), "{got:?}");
    let got = cpu.scan_mapped_rows::<LinearRecurrence<f32>, Recurrence, _>(
        (&a[..], &b[..]),
        &mut h[..4],
        2,
        ScanSpec::inclusive(),
    );
    assert!(matches!(got, Err(Error::LengthMismatch { .. })), "{got:?}");
    assert_eq!(h, [7.0; 6]);
    // No rows of nothing: zero items in any number of rows is nothing to do.
    let got = cpu.scan_mapped_rows::<LinearRecurrence<f32>, Recurrence, _>(
        (&a[..0], &b[..0]),
        &mut h[..0],
        3,
        ScanSpec::inclusive(),
    );
    assert!(got.is_ok(), "{got:?}");
}
