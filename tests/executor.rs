//! The `Scan` trait: one generic check, written once, run on every executor
//! (`Cpu` with each algorithm and thread count, `Device::cpu()`, and on a GPU
//! `Cuda` and `Device::cuda()`), against `scan::reference` on lengths around
//! the CPU tiles, the Blelloch blocks and the GPU single-pass tile (rows and
//! segments by starts, CSR offsets and head flags included), with the
//! non-commutative 2x2 matrix product among the operators. Executors are
//! used through `&dyn Scan<Op>` too: the trait is object-safe.

use std::fmt::Debug;

use scan::ops::{Add, MatMul2x2, Max, Seg, Segmented};
use scan::{reference, Algorithm, Cpu, Cuda, Device, Error, Scan, ScanOp, ScanSpec};
use scan_testing::Rng;

/// Every call of the trait on `x`, every kind and direction, rows included,
/// and the two shape errors.
fn check<Op: ScanOp>(executor: &dyn Scan<Op>, label: &str, x: &[Op::Item])
where
    Op::Item: PartialEq + Debug,
{
    let n = x.len();
    for spec in ScanSpec::ALL {
        let want = reference::scan::<Op>(x, spec);
        assert_eq!(executor.scan(x, spec).unwrap(), want, "{label}: scan, n {n}, {spec:?}");
        let mut out: Vec<Op::Item> = x.iter().rev().copied().collect();
        executor.scan_into(x, &mut out, spec).unwrap();
        assert_eq!(out, want, "{label}: scan_into, n {n}, {spec:?}");
        let mut data = x.to_vec();
        executor.scan_in_place(&mut data, spec).unwrap();
        assert_eq!(data, want, "{label}: scan_in_place, n {n}, {spec:?}");
        for rows in [1, 2, 3, 7].into_iter().filter(|&r| n % r == 0) {
            let want = reference::scan_rows::<Op>(x, rows, spec).unwrap();
            let mut out: Vec<Op::Item> = x.iter().rev().copied().collect();
            executor.scan_rows(x, &mut out, rows, spec).unwrap();
            assert_eq!(out, want, "{label}: scan_rows, n {n}, {rows} rows, {spec:?}");
            let mut data = x.to_vec();
            executor.scan_rows_in_place(&mut data, rows, spec).unwrap();
            assert_eq!(data, want, "{label}: scan_rows_in_place, n {n}, {rows} rows, {spec:?}");
        }
    }
    // Strided rows: a column block (stride past the row) and a padded layout.
    for (rows, row_len, stride) in [(3, n / 3, n / 3), (2, n / 4, n / 2), (4, n / 8, n / 4 + 1), (1, n, n + 5)] {
        let spec = ScanSpec::exclusive();
        let want = reference::scan_rows_strided::<Op>(x, rows, row_len, stride, spec);
        let mut out = x.to_vec();
        let got = executor.scan_rows_strided(x, &mut out, rows, row_len, stride, spec);
        match want {
            Ok(want) => {
                got.unwrap();
                assert_eq!(out, want, "{label}: strided rows {rows} x {row_len} / {stride}, n {n}");
            }
            Err(e) => {
                assert!(matches!(got, Err(Error::BadStride { .. })), "{label}: {e}, but {got:?}");
                assert_eq!(out, x, "{label}: a rejected strided call modified its output");
            }
        }
    }
    if n >= 2 {
        let mut out = x.to_vec();
        let err = executor.scan_rows_strided(x, &mut out, 2, 2, 1, ScanSpec::inclusive()).unwrap_err();
        assert!(matches!(err, Error::BadStride { .. }), "{label}: overlapping rows: {err}");
        let err = executor.scan_rows_strided(x, &mut out, 2, 1, n, ScanSpec::inclusive()).unwrap_err();
        assert!(matches!(err, Error::BadStride { .. }), "{label}: past the end: {err}");
    }

    // Segments: a few long ones, many short ones (empty ones among them), as
    // bare starts and as CSR offsets, and by head flags.
    let mut rng = Rng::new(n as u64);
    for per in [n / 3 + 1, 5] {
        let mut starts: Vec<usize> = (0..n / per + 2).map(|_| rng.below(n as u64 + 1) as usize).collect();
        starts.sort_unstable();
        let mut csr = vec![0];
        csr.extend(&starts);
        csr.push(n);
        for starts in [&starts, &csr] {
            let spec = ScanSpec::exclusive().reversed();
            let want = reference::scan_segments::<Op>(x, starts, spec).unwrap();
            let mut out: Vec<Op::Item> = x.iter().rev().copied().collect();
            executor.scan_segments(x, &mut out, starts, spec).unwrap();
            assert_eq!(out, want, "{label}: scan_segments, n {n}, {} starts", starts.len());
            let mut data = x.to_vec();
            executor.scan_segments_in_place(&mut data, starts, ScanSpec::inclusive()).unwrap();
            assert_eq!(data, reference::scan_segments::<Op>(x, starts, ScanSpec::inclusive()).unwrap(), "{label}");
        }
        let mut heads = vec![false; n];
        starts.iter().filter(|&&s| s < n).for_each(|&s| heads[s] = true);
        let mut out = x.to_vec();
        executor.scan_flagged(x, &mut out, &heads, ScanSpec::inclusive()).unwrap();
        assert_eq!(out, reference::scan_segments::<Op>(x, &starts, ScanSpec::inclusive()).unwrap(), "{label}: flags");
    }
    let mut data = x.to_vec();
    let err = executor.scan_segments_in_place(&mut data, &[n + 1], ScanSpec::inclusive()).unwrap_err();
    assert!(matches!(err, Error::BadSegments { index: 0, .. }), "{label}: {err}");
    if n >= 2 {
        let err = executor.scan_segments_in_place(&mut data, &[1, 0], ScanSpec::inclusive()).unwrap_err();
        assert!(matches!(err, Error::BadSegments { index: 1, start: 0, previous: 1, .. }), "{label}: {err}");
    }
    assert_eq!(data, x, "{label}: a rejected segmented call modified its data");
    let err = executor.scan_flagged_in_place(&mut data, &vec![false; n + 1], ScanSpec::inclusive()).unwrap_err();
    assert!(matches!(&err, Error::WrongShape { argument, .. } if argument == "heads"), "{label}: {err}");

    let mut short = vec![Op::identity(); n + 1];
    let err = executor.scan_into(x, &mut short, ScanSpec::inclusive()).unwrap_err();
    assert!(matches!(err, Error::LengthMismatch { .. }), "{label}: {err}");
    let mut data = x.to_vec();
    let err = executor.scan_rows_in_place(&mut data, 0, ScanSpec::inclusive()).unwrap_err();
    assert!(matches!(err, Error::BadShape { .. }), "{label}: {err}");
    assert_eq!(data, x, "{label}: a rejected call modified its data");
}

/// The operators, on random data of every length in `lengths`, on every
/// executor of `executors`.
fn check_executors<E>(executors: &[(String, E)], lengths: &[usize])
where
    E: Scan<Add<u32>> + Scan<Max<f32>> + Scan<MatMul2x2<i32>>,
{
    let mut rng = Rng::fresh("executors");
    for &n in lengths {
        let add: Vec<u32> = rng.vec(n, |r| r.next_u64() as u32);
        let max: Vec<f32> = rng.vec(n, |r| r.range_f64(-1e6, 1e6) as f32);
        // (Determinant 1: random small entries multiply to the zero matrix
        // within some tens of items, after which every order gives zeros.)
        let mat: Vec<[i32; 4]> = rng.vec(n, scan_testing::unimodular_i32);
        for (label, e) in executors {
            check::<Add<u32>>(e, &format!("{label}, add u32"), &add);
            check::<Max<f32>>(e, &format!("{label}, max f32"), &max);
            check::<MatMul2x2<i32>>(e, &format!("{label}, matmul2x2 i32"), &mat);
        }
    }
}

fn lengths(tiles: &[usize]) -> Vec<usize> {
    let mut n = vec![0, 1, 2, 3, 31, 32, 33, 1000];
    for &t in tiles {
        n.extend([t - 1, t, t + 1, 3 * t + 7]);
    }
    n.sort_unstable();
    n.dedup();
    n
}

#[test]
fn generic_code_runs_on_every_cpu_executor() {
    let mut cpus: Vec<(String, Cpu)> = Algorithm::ALL
        .into_iter()
        .map(|a| {
            let cpu = Cpu::new().with_algorithm(a);
            (format!("{cpu}"), cpu)
        })
        .collect();
    cpus.push(("Cpu, 3 threads".into(), Cpu::new().with_threads(3)));
    let tiles = [scan_cpu::tile_len::<u32>(), scan_cpu::tile_len::<[i32; 4]>(), scan_cpu::BLELLOCH_BLOCK_LEN];
    check_executors(&cpus, &lengths(&tiles));
    check_executors(&[("Device::cpu()".to_string(), Device::cpu())], &lengths(&tiles));

    // The lifted monoid (20-byte, non-commutative items) through every CPU
    // driver, against the reference driver; that a scan of the pairs is a
    // segmented scan of the values is scan-core's unit test.
    let mut rng = Rng::fresh("segmented pairs on the CPU");
    for n in lengths(&[scan_cpu::tile_len::<Seg<[i32; 4]>>(), scan_cpu::BLELLOCH_BLOCK_LEN]) {
        let pairs: Vec<Seg<[i32; 4]>> =
            rng.vec(n, |r| Seg { head: r.below(9) == 0, value: std::array::from_fn(|_| r.below(5) as i32 - 2) });
        for (label, cpu) in &cpus {
            check::<Segmented<MatMul2x2<i32>>>(cpu, &format!("{label}, segmented matmul2x2, n {n}"), &pairs);
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn generic_code_runs_on_the_gpu_executors() {
    let cuda = Cuda::new().expect("CUDA");
    // Around the single-pass tile of 4-byte items (256 x 32) and of 16-byte ones.
    let lengths = lengths(&[8192, 2048]);
    check_executors(&[("Cuda".to_string(), cuda)], &lengths);
    let device = Device::cuda().expect("CUDA");
    assert!(device.is_cuda());
    check_executors(&[("Device::cuda()".to_string(), device)], &lengths);

    // The lifted monoid (20-byte, non-commutative items) through the GPU's
    // drivers, against the reference driver.
    let cuda = Cuda::new().expect("CUDA");
    let mut rng = Rng::fresh("segmented pairs on the GPU");
    for n in lengths {
        let pairs: Vec<Seg<[i32; 4]>> =
            rng.vec(n, |r| Seg { head: r.below(9) == 0, value: std::array::from_fn(|_| r.below(5) as i32 - 2) });
        check::<Segmented<MatMul2x2<i32>>>(&cuda, &format!("Cuda, segmented matmul2x2, n {n}"), &pairs);
    }
}
