//! The determinism documented on `scan_cpu::Algorithm`: which algorithms
//! give the same bits for every run and thread count, for floats and for
//! integers.

use scan_core::ops::{Add, Max};
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
