//! The determinism documented on `scan_cpu::Algorithm`: which algorithms
//! give the same bits for every run and thread count, for floats and for
//! integers; and the fused maps' (`Cpu::scan_mapped`, `scan_mapped_rows`):
//! the same bits from run to run for one thread count.

use scan_core::maps::{bf16, Recurrence, Widen};
use scan_core::ops::{Add, LinearRecurrence, Max};
use scan_core::ScanSpec;
use scan_cpu::{tile_len, Algorithm, Cpu};
use scan_testing::Rng;

/// The distinct results of `runs` runs on each thread count in `threads`.
fn distinct<T: Copy + PartialEq>(
    algorithm: Algorithm,
    threads: &[usize],
    runs: usize,
    scan: impl Fn(&Cpu) -> Vec<T>,
) -> usize {
    let mut seen: Vec<Vec<T>> = Vec::new();
    for &t in threads {
        let cpu = Cpu::new().with_algorithm(algorithm).with_threads(t);
        for _ in 0..runs {
            let out = scan(&cpu);
            if !seen.contains(&out) {
                seen.push(out);
            }
        }
    }
    seen.len()
}

#[test]
fn floats_are_identical_across_runs_and_threads_where_documented() {
    let mut rng = Rng::fresh("determinism");
    let tile = tile_len::<f32>();
    let threads: Vec<usize> = (1..=8).collect();
    let bits = |cpu: &Cpu, x: &[f32]| -> Vec<u32> {
        cpu.scan::<Add<f32>>(x, ScanSpec::inclusive()).unwrap().iter().map(|v| v.to_bits()).collect()
    };
    // Every algorithm on an input of fewer than 8 tiles (one Tiled worker).
    let small: Vec<f32> = rng.vec(6 * tile + 5, |r| r.range_f64(-1.0, 1.0) as f32); // 7 tiles
    for algorithm in Algorithm::ALL {
        assert_eq!(distinct(algorithm, &threads, 3, |cpu| bits(cpu, &small)), 1, "{algorithm}, {} items", small.len());
    }
    // Every algorithm on a large input, 1 to 8 threads: many tiles, so several Tiled workers
    // whose look-backs stop at different tiles from run to run (before the
    // look-back combined forward, this gave 3 distinct results).
    let large: Vec<f32> = rng.vec(64 * tile + 3, |r| r.range_f64(-1.0, 1.0) as f32);
    for algorithm in Algorithm::ALL {
        assert_eq!(distinct(algorithm, &threads, 3, |cpu| bits(cpu, &large)), 1, "{algorithm}, {} items", large.len());
    }
    // Tiled on 16 threads over 512 tiles, against one thread, a few times.
    let many: Vec<f32> = rng.vec(512 * tile + 7, |r| r.range_f64(-1.0, 1.0) as f32);
    assert_eq!(distinct(Algorithm::Tiled, &[1, 16], 4, |cpu| bits(cpu, &many)), 1, "tiled, {} items", many.len());
}

#[test]
fn exact_operators_are_identical_on_every_algorithm_run_and_thread_count() {
    let mut rng = Rng::fresh("determinism exact");
    let tile = tile_len::<u32>();
    let x: Vec<u32> = rng.vec(64 * tile + 3, |r| r.next_u64() as u32);
    let y: Vec<f32> = rng.vec(64 * tile + 3, |r| r.range_f64(-1e6, 1e6) as f32);
    let threads = [1, 2, 3, 4, 8];
    let mut results = Vec::new();
    for algorithm in Algorithm::ALL {
        assert_eq!(distinct(algorithm, &threads, 2, |cpu| cpu.scan::<Add<u32>>(&x, ScanSpec::inclusive()).unwrap()), 1);
        let max = |cpu: &Cpu| {
            cpu.scan::<Max<f32>>(&y, ScanSpec::inclusive()).unwrap().iter().map(|v| v.to_bits()).collect::<Vec<_>>()
        };
        assert_eq!(distinct(algorithm, &threads, 2, max), 1, "{algorithm}: f32 max");
        results.push(Cpu::new().with_algorithm(algorithm).scan::<Add<u32>>(&x, ScanSpec::inclusive()).unwrap());
    }
    assert!(results.windows(2).all(|w| w[0] == w[1]), "the algorithms disagree on u32 add");
}

/// `Algorithm::Tiled`'s documented short case: an input under 128 items is
/// one tile of one chain, so its floats are the sequential fold's bits, for
/// every spec, in place and out of place, on any thread count; and rows of
/// such inputs, each row the fold of its own items.
#[test]
fn short_tiled_scans_are_the_sequential_fold_bit_for_bit() {
    let mut rng = Rng::fresh("short tiled");
    let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
    let fold = Cpu::new().with_algorithm(Algorithm::Sequential);
    for len in [1, 2, 15, 16, 17, 100, 127] {
        let x: Vec<f32> = rng.vec(len, |r| (r.range_f64(-1.0, 1.0) * 1e3) as f32);
        for spec in ScanSpec::ALL {
            let want = bits(&fold.scan::<Add<f32>>(&x, spec).unwrap());
            for threads in [1, 2, 4] {
                let cpu = Cpu::new().with_algorithm(Algorithm::Tiled).with_threads(threads);
                assert_eq!(bits(&cpu.scan::<Add<f32>>(&x, spec).unwrap()), want, "len {len} {spec:?}");
                let mut data = x.clone();
                cpu.scan_in_place::<Add<f32>>(&mut data, spec).unwrap();
                assert_eq!(bits(&data), want, "in place, len {len} {spec:?}");
            }
        }
        // 3000 rows of `len`: each row's bits are its own fold's.
        let rows: Vec<f32> = rng.vec(3000 * len, |r| (r.range_f64(-1.0, 1.0) * 1e3) as f32);
        let mut out = vec![0.0f32; rows.len()];
        Cpu::new().with_threads(2).scan_rows::<Add<f32>>(&rows, &mut out, 3000, ScanSpec::inclusive()).unwrap();
        for (r, got) in rows.chunks_exact(len).zip(out.chunks_exact(len)) {
            assert_eq!(bits(got), bits(&fold.scan::<Add<f32>>(r, ScanSpec::inclusive()).unwrap()), "rows of {len}");
        }
    }
}

fn f32_bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|f| f.to_bits()).collect()
}

/// README's table, `Tiled`: identical for every thread count, for every
/// spec and call form (the test above runs inclusive forward scans only):
/// out of place and in place, rows (a few long rows each on every thread,
/// many short ones a share per thread) and segments, on 1 to 16 threads
/// over up to 40 tiles (so up to 10 workers, whose look-backs stop where
/// the schedule takes them).
#[test]
fn tiled_floats_are_identical_for_every_spec_call_and_thread_count() {
    let mut rng = Rng::fresh("determinism tiled specs");
    let tile = tile_len::<f32>();
    let x: Vec<f32> = rng.vec(40 * tile + 3, |r| r.range_f64(-1.0, 1.0) as f32);
    // 2 rows of 2^18 + 77 items (1 MiB each: split over the threads), and
    // 90 rows of 1001 items; segments of the same lengths plus an empty one.
    let long = (1 << 18) + 77;
    let rows_x: Vec<f32> = rng.vec(2 * long, |r| r.range_f64(-1.0, 1.0) as f32);
    let short_x: Vec<f32> = rng.vec(90 * 1001, |r| r.range_f64(-1.0, 1.0) as f32);
    let starts = [0, 3 * tile + 5, 3 * tile + 5, 20 * tile];
    for spec in ScanSpec::ALL {
        let run = |threads: usize| {
            let cpu = Cpu::new().with_algorithm(Algorithm::Tiled).with_threads(threads);
            let scanned = f32_bits(&cpu.scan::<Add<f32>>(&x, spec).unwrap());
            let mut in_place = x.clone();
            cpu.scan_in_place::<Add<f32>>(&mut in_place, spec).unwrap();
            let mut long_rows = vec![0.0; rows_x.len()];
            cpu.scan_rows::<Add<f32>>(&rows_x, &mut long_rows, 2, spec).unwrap();
            let mut short_rows = short_x.clone();
            cpu.scan_rows_in_place::<Add<f32>>(&mut short_rows, 90, spec).unwrap();
            let mut segments = vec![0.0; x.len()];
            cpu.scan_segments::<Add<f32>>(&x, &mut segments, &starts, spec).unwrap();
            [scanned, f32_bits(&in_place), f32_bits(&long_rows), f32_bits(&short_rows), f32_bits(&segments)]
        };
        let one = run(1);
        assert!(one[0] == one[1], "{spec:?}: in place differs from out of place");
        for threads in [1, 2, 3, 5, 8, 16] {
            let got = run(threads);
            for (k, what) in ["scan", "in place", "long rows", "short rows", "segments"].iter().enumerate() {
                assert!(got[k] == one[k], "{spec:?}, {threads} threads: {what} differs from 1 thread");
            }
        }
    }
}

/// README's table, fused maps: identical from run to run for one thread
/// count (several runs on 2, 3 and 7 threads: the pieces' threads finish
/// in any order), and the same as on one thread where the input is one
/// piece: under 2^16 items, and each row of `scan_mapped_rows` under 2^16
/// items or with at least 4 rows a thread. Float data whose grouping
/// shows: recurrence decays in (0.5, 1), bf16 sums of signed values.
#[test]
fn fused_maps_are_identical_run_to_run_for_one_thread_count() {
    let mut rng = Rng::fresh("determinism fused maps");
    let run = |a: &[f32], b: &[f32], h: &[bf16], rows: usize, threads: usize, spec: ScanSpec| {
        let cpu = Cpu::new().with_threads(threads);
        let n = a.len();
        let (mut o1, mut o2) = (vec![0.0f32; n], vec![0.0f32; n]);
        if rows == 0 {
            cpu.scan_mapped::<LinearRecurrence<f32>, Recurrence, _>((a, b), &mut o1, spec).unwrap();
            cpu.scan_mapped::<Add<f32>, Widen<bf16>, _>(h, &mut o2, spec).unwrap();
        } else {
            cpu.scan_mapped_rows::<LinearRecurrence<f32>, Recurrence, _>((a, b), &mut o1, rows, spec).unwrap();
            cpu.scan_mapped_rows::<Add<f32>, Widen<bf16>, _>(h, &mut o2, rows, spec).unwrap();
        }
        (f32_bits(&o1), f32_bits(&o2))
    };
    // (rows, items): rows 0 is one whole scan_mapped.
    for (rows, n) in
        [(0, 65535), (0, 65536), (0, 200_003), (0, 1 << 20), (3, 3 * 65535), (2, 2 * 70_000), (16, 16 * 70_000)]
    {
        let a: Vec<f32> = rng.vec(n, |r| r.range_f64(0.5, 1.0) as f32);
        let b: Vec<f32> = rng.vec(n, |r| r.range_f64(-1.0, 1.0) as f32);
        let h: Vec<bf16> = rng.vec(n, |r| bf16::from_f32(r.range_f64(-1.0, 1.0) as f32));
        let row_len = n.checked_div(rows).unwrap_or(n); // (rows 0: the whole input)
        for spec in ScanSpec::ALL {
            let one = run(&a, &b, &h, rows, 1, spec);
            for threads in [2, 3, 7] {
                let first = run(&a, &b, &h, rows, threads, spec);
                for round in 0..3 {
                    let again = run(&a, &b, &h, rows, threads, spec);
                    assert!(again == first, "{rows} rows, {n} items, {spec:?}, {threads} threads: run {round} differs");
                }
                if row_len < 1 << 16 || (rows > 0 && rows >= 4 * threads) {
                    assert!(first == one, "{rows} rows, {n} items, {spec:?}, {threads} threads: one piece a row");
                }
            }
        }
    }
}
