//! Stream compaction on the GPU (`Cuda::compact`, `Cuda::compact_device_into`,
//! `Device::compact`) against `Iterator::filter`: items of 1 to 32 bytes
//! (each moved as the widest word that divides it), lengths around the
//! kernels' 4096-item tile, flags all off, all on, sparse, dense and
//! alternating; the device form writes only the kept prefix of its output;
//! bad lengths are errors that write nothing; blocks that stride over
//! several tiles (on grids of 1 and 3 blocks, and past 4096 tiles) compact
//! the same. Run on a GPU machine:
//! `cargo test --test gpu_compact -- --ignored`.

#[path = "../scan-cuda/tests/support/mod.rs"]
mod support;

use std::fmt::Debug;

use scan::Device;
use scan_core::Error;
use scan_cuda::{Cuda, Tuning};
use scan_testing::Rng;
use support::gpu::{cuda, max_len};

const TILE: usize = 4096;

fn lengths() -> Vec<usize> {
    let mut n = vec![0, 1, 31, 32, 33, TILE - 1, TILE, TILE + 1, 3 * TILE + 5, 257 * TILE - 3, (1 << 22) + 7];
    n.retain(|&n| n <= max_len());
    n
}

/// Flag patterns of `n` items: none, all, ~3%, ~70%, alternating.
fn patterns(rng: &mut Rng, n: usize) -> Vec<(&'static str, Vec<bool>)> {
    vec![
        ("none", vec![false; n]),
        ("all", vec![true; n]),
        ("sparse", rng.vec(n, |r| r.below(32) == 0)),
        ("dense", rng.vec(n, |r| r.below(10) < 7)),
        ("alternating", (0..n).map(|i| i % 2 == 1).collect()),
    ]
}

fn check<T: Copy + PartialEq + Debug + Send + Sync>(label: &str, gen: impl FnMut(&mut Rng) -> T, sentinel: T) {
    check_on(&cuda(), &lengths(), label, gen, sentinel);
}

/// [`check`] on `cuda`, at `lengths`.
fn check_on<T: Copy + PartialEq + Debug + Send + Sync>(
    cuda: &Cuda,
    lengths: &[usize],
    label: &str,
    mut gen: impl FnMut(&mut Rng) -> T,
    sentinel: T,
) {
    let mut rng = Rng::fresh(label);
    for &n in lengths {
        let values = rng.vec(n, &mut gen);
        for (pattern, keep) in patterns(&mut rng, n) {
            let ctx = format!("{label}, {n} items, flags {pattern}");
            let want: Vec<T> = values.iter().zip(&keep).filter(|&(_, &k)| k).map(|(&x, _)| x).collect();
            assert_eq!(cuda.compact(&values, &keep).unwrap(), want, "{ctx}: Cuda::compact");

            // On the device, into an output of sentinels one item longer than
            // needed: the kept items, then the sentinels untouched.
            let dev_values = cuda.upload(&values).unwrap();
            let dev_keep = cuda.upload(&keep).unwrap();
            let mut out = cuda.upload(&vec![sentinel; want.len() + 1]).unwrap();
            let kept = cuda.compact_device_into(&dev_values, &dev_keep, &mut out).unwrap();
            assert_eq!(kept, want.len(), "{ctx}: count");
            let got = out.download().unwrap();
            assert_eq!(got[..kept], want[..], "{ctx}: compact_device_into");
            assert_eq!(got[kept], sentinel, "{ctx}: wrote past the kept items");
            assert_eq!(dev_values.download().unwrap(), values, "{ctx}: the input changed");
        }
        eprintln!("[{label}] {n} items: every flag pattern matches Iterator::filter");
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn compaction_matches_filter_for_items_of_every_word_size() {
    check::<u8>("u8 (1 B)", |r| r.next_u64() as u8, 0xAB);
    check::<u16>("u16 (2 B)", |r| r.next_u64() as u16, 0xABCD);
    check::<[u8; 3]>("[u8; 3] (3 B, bytes)", |r| [r.next_u64() as u8, 1, 2], [9; 3]);
    check::<f32>("f32 (4 B)", |r| r.range_f64(-1.0, 1.0) as f32, f32::MAX);
    check::<u64>("u64 (8 B)", |r| r.next_u64(), u64::MAX);
    check::<[u32; 3]>("[u32; 3] (12 B, 4-byte words)", |r| [r.next_u64() as u32, 7, r.next_u64() as u32], [5; 3]);
    check::<(f64, f64)>("(f64, f64) (16 B)", |r| (r.unit_f64(), r.unit_f64()), (-1.0, -1.0));
    check::<[f64; 3]>("[f64; 3] (24 B, 8-byte words)", |r| [r.unit_f64(), 2.0, r.unit_f64()], [-1.0; 3]);
    check::<[u64; 4]>("[u64; 4] (32 B, 16-byte words)", |r| std::array::from_fn(|_| r.next_u64()), [0; 4]);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn bad_lengths_are_errors_that_write_nothing() {
    let cuda = cuda();
    let err = cuda.compact(&[1u32, 2, 3], &[true, false]).unwrap_err();
    assert_eq!(err.to_string(), "wrong shape: `keep` must be 3 items, one per item of `values`, found 2 items");
    let values = cuda.upload(&[1u32, 2, 3, 4]).unwrap();
    let keep = cuda.upload(&[true, true, false, true]).unwrap();
    // Three are kept; an output of two is too small, and stays as it was.
    let mut small = cuda.upload(&[7u32, 7]).unwrap();
    let err = cuda.compact_device_into(&values, &keep, &mut small).unwrap_err();
    assert!(matches!(err, Error::LengthMismatch { input: 3, output: 2 }), "{err}");
    assert_eq!(small.download().unwrap(), [7, 7]);
    let short_keep = cuda.upload(&[true]).unwrap();
    let mut out = cuda.upload(&[0u32; 4]).unwrap();
    assert!(matches!(
        cuda.compact_device_into(&values, &short_keep, &mut out),
        Err(Error::WrongShape { argument, .. }) if argument == "keep"
    ));
    assert_eq!(out.download().unwrap(), [0; 4]);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn the_device_facade_compacts_on_the_gpu_as_on_the_cpu() {
    let gpu = Device::auto();
    assert!(gpu.is_cuda(), "Device::auto() chose {gpu} on a GPU machine");
    let mut rng = Rng::fresh("device compact");
    let values: Vec<i32> = rng.vec(1_000_003.min(max_len()), |r| r.next_u64() as i32);
    let keep: Vec<bool> = values.iter().map(|&x| x % 3 == 0).collect();
    assert_eq!(gpu.compact(&values, &keep).unwrap(), Device::cpu().compact(&values, &keep).unwrap());
}

/// Past its grid's blocks (4096, compact.rs's MAX_BLOCKS, unless
/// `Tuning::compaction_blocks` says otherwise) each block strides over
/// several tiles, reusing its shared memory from one tile to the next; the
/// tests above stay below that. On grids of 1 and 3 blocks the lengths
/// above of more tiles than blocks stride (one-word items, the scatter's
/// fast path, and three-word ones, its general path), so compute-sanitizer's
/// racecheck sees the reuse at small sizes too; then once at the default
/// bound, past 4096 tiles.
#[test]
#[ignore = "needs a CUDA GPU"]
fn blocks_that_stride_over_several_tiles_compact_exactly() {
    for blocks in [1, 3] {
        let cuda = cuda().with_tuning(Tuning::default().compaction_blocks(blocks));
        check_on(&cuda, &lengths(), &format!("u32 (4 B) on {blocks} blocks"), |r| r.next_u64() as u32, u32::MAX);
        let triple = |r: &mut Rng| [r.next_u64() as u32, 7, r.next_u64() as u32];
        check_on(&cuda, &lengths(), &format!("[u32; 3] (12 B) on {blocks} blocks"), triple, [5; 3]);
    }
    let n = 4096 * TILE + 3 * TILE + 17;
    if n > max_len() {
        eprintln!("[strided] {n} items skipped: SCAN_TEST_MAX_LEN={}", max_len());
        return;
    }
    check_on(&cuda(), &[n], "u32 (4 B) past 4096 tiles", |r| r.next_u64() as u32, u32::MAX);
}

/// Zero-sized items: only the count is learned. (The scatter moved such
/// items as zero words of 16 bytes, reading and writing a word of each in
/// buffers of no bytes.) The executor works on afterwards.
#[test]
#[ignore = "needs a CUDA GPU"]
fn zero_sized_items_compact_to_their_count() {
    let cuda = cuda();
    let keep: Vec<bool> = (0..3 * TILE + 5).map(|i| i % 3 != 1).collect();
    let kept = keep.iter().filter(|&&k| k).count();
    assert_eq!(cuda.compact(&vec![(); keep.len()], &keep).unwrap().len(), kept);
    let values = cuda.upload(&vec![(); keep.len()]).unwrap();
    let flags = cuda.upload(&keep).unwrap();
    let mut out = cuda.upload(&vec![(); kept]).unwrap();
    assert_eq!(cuda.compact_device_into(&values, &flags, &mut out).unwrap(), kept);
    let mut short = cuda.upload(&vec![(); kept - 1]).unwrap();
    assert!(matches!(
        cuda.compact_device_into(&values, &flags, &mut short),
        Err(Error::LengthMismatch { input, output }) if input == kept && output == kept - 1
    ));
    assert_eq!(cuda.compact(&[1u32, 2, 3], &[true, false, true]).unwrap(), [1, 3]);
}
