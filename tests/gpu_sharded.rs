//! Sharded scans (scan-cuda/src/sharded.rs): one sequence split into shards,
//! one per rank, against the sequential reference of the whole.
//!
//! * Several ranks on one GPU (`ShardGroup::on_one_gpu`): the algorithm
//!   across ranks (local scans, the totals in rank order, the carries) for
//!   every operator kind (16- and 32-byte non-commutative items, an item too
//!   large for the single-pass kernels), every spec, in place and into a
//!   poisoned output, shards of boundary lengths, empty shards included,
//!   and on both GPU algorithms.
//! * NCCL on the GPUs there are: `ShardGroup::nccl` over every device, and
//!   `NcclRank` with an id made in the process (one rank per GPU: NCCL
//!   refuses two ranks of one communicator on one GPU).
//!
//! Run on a GPU machine: `NCCL_NVLS_ENABLE=0 cargo test --test gpu_sharded --
//! --ignored` (NVLink multicast stays off: over several GPUs the NCCL test
//! refuses to start without it). The two-process example is
//! `examples/sharded.rs`.

#[path = "../scan-cuda/tests/support/mod.rs"]
mod support;

use std::fmt::Debug;

use scan::ops::{Add, MatMul2x2, Max};
use scan::{CudaOp, ScanSpec};
use scan_core::reference;
use scan_cuda::{Algorithm, Cuda, NcclId, NcclRank, ShardGroup, Tuning};
use scan_testing::Rng;
use support::gpu::{cuda, executors, max_len, poisoned, single_pass_tile};
use support::ops::AddU64x20;
use support::user_ops::AffineI32Counted;

/// Shard lengths around `Op`'s single-pass tile, with empty shards.
fn shard_lengths<Op: CudaOp>() -> Vec<usize> {
    let tile = single_pass_tile::<Op>().max(1024);
    let mut lengths = vec![0, 1, 2, 31, tile - 1, tile, tile + 1, 33 * tile + 7];
    lengths.retain(|&n| n <= max_len());
    lengths
}

/// Scans the concatenation of shards of `lengths` through `group`, in place
/// and into poisoned outputs, for every spec, against the reference.
fn check_shards<Op: CudaOp>(group: &ShardGroup, ctx: &str, lengths: &[usize], gen: &mut impl FnMut() -> Op::Item)
where
    Op::Item: PartialEq + Debug,
{
    let input: Vec<Vec<Op::Item>> = lengths.iter().map(|&n| (0..n).map(|_| gen()).collect()).collect();
    let whole: Vec<Op::Item> = input.concat();
    for spec in ScanSpec::ALL {
        let want = reference::scan::<Op>(&whole, spec);
        let upload = |shards: &[Vec<Op::Item>]| -> Vec<_> {
            shards.iter().enumerate().map(|(r, s)| group.rank(r).unwrap().upload(s).unwrap()).collect()
        };
        let mut in_place = upload(&input);
        group.scan_shards::<Op>(&mut in_place, spec).unwrap();
        compare(&group.gather(&in_place).unwrap(), &want, &format!("{ctx}, {lengths:?}, {spec:?}, in place"));

        let sources = upload(&input);
        let mut outputs = upload(&lengths.iter().map(|&n| poisoned::<Op::Item>(n)).collect::<Vec<_>>());
        group.scan_shards_into::<Op>(&sources, &mut outputs, spec).unwrap();
        compare(&group.gather(&outputs).unwrap(), &want, &format!("{ctx}, {lengths:?}, {spec:?}, into"));
        assert!(group.gather(&sources).unwrap() == whole, "{ctx}, {lengths:?}, {spec:?}: the input changed");
    }
}

fn compare<T: PartialEq + Debug>(got: &[T], want: &[T], ctx: &str) {
    assert_eq!(got.len(), want.len(), "{ctx}: length");
    if let Some(i) = (0..got.len()).find(|&i| got[i] != want[i]) {
        panic!("{ctx}: item {i} of {}: got {:?}, want {:?}", got.len(), got[i], want[i]);
    }
}

/// Random shard lengths for `ranks` ranks from `Op`'s boundary lengths, and
/// the fixed patterns: all empty but one, the first and the last empty.
fn layouts<Op: CudaOp>(rng: &mut Rng, ranks: usize) -> Vec<Vec<usize>> {
    let choices = shard_lengths::<Op>();
    let mut layouts: Vec<Vec<usize>> =
        (0..4).map(|_| (0..ranks).map(|_| choices[rng.next_u64() as usize % choices.len()]).collect()).collect();
    let some = choices[choices.len().saturating_sub(2)];
    let mut one = vec![0; ranks];
    one[ranks / 2] = some;
    layouts.push(one);
    let mut ends = vec![some; ranks];
    ends[0] = 0;
    ends[ranks - 1] = 0;
    layouts.push(ends);
    layouts.push(vec![0; ranks]);
    layouts
}

fn check_op<Op: CudaOp>(label: &str, mut gen: impl FnMut(&mut Rng) -> Op::Item)
where
    Op::Item: PartialEq + Debug,
{
    let mut rng = Rng::fresh(label);
    // Both algorithms, and the single-pass one under an adversarial schedule
    // (tiles claimed out of order, published late) inside each rank's scan.
    let adversarial = || cuda().with_tuning(Tuning::default().adversarial_schedule(0x5eed));
    let mut execs: Vec<(String, Box<dyn Fn() -> Cuda>)> =
        Algorithm::ALL.into_iter().map(|a| (a.to_string(), Box::new(move || cuda().with_algorithm(a)) as _)).collect();
    execs.push(("single-pass, adversarial schedule".into(), Box::new(adversarial)));
    for (name, exec) in execs {
        for ranks in [1, 2, 3, 5] {
            let group = ShardGroup::on_one_gpu(exec(), ranks).unwrap();
            for lengths in layouts::<Op>(&mut rng, ranks) {
                let mut g = || gen(&mut rng);
                check_shards::<Op>(&group, &format!("{label}, {name}, {ranks} ranks"), &lengths, &mut g);
            }
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn shards_on_one_gpu_match_the_reference_for_every_kind_of_operator() {
    check_op::<Add<u64>>("add u64", |r| r.next_u64() >> 8);
    check_op::<Max<i32>>("max i32", |r| r.next_u64() as i32);
    // Non-commutative: 16 bytes, 32 bytes, and a user's #[scan_op].
    check_op::<MatMul2x2<i32>>("matmul2x2 i32 (16 B)", scan_testing::unimodular_i32);
    check_op::<MatMul2x2<i64>>("matmul2x2 i64 (32 B)", scan_testing::unimodular_i64);
    check_op::<AffineI32Counted>("affine i32 counted (12 B)", |r| {
        (r.next_u64() as i32, r.next_u64() as i32, r.below(4) as u32)
    });
    // 160-byte items: the single-pass kernels refuse them, Blelloch runs.
    check_op::<AddU64x20>("add u64 x 20 (160 B)", |r| std::array::from_fn(|_| r.next_u64() >> 8));
}

/// Shards long enough that each block of the reduction folds several tiles
/// (more than 1024 tiles of 8 warps x 4 rows x 32 lanes: 1M 16-byte items,
/// 2M 8-byte ones), with uneven ranges per block, on both algorithms.
#[test]
#[ignore = "needs a CUDA GPU"]
fn long_shards_fold_many_tiles_per_reduction_block() {
    let mut rng = Rng::fresh("long shards");
    for exec in executors() {
        let label = format!("long, {}", exec.algorithm());
        let group = ShardGroup::on_one_gpu(exec, 3).unwrap();
        let lengths = [(3 << 20) + 7, (1 << 21) + 1, 1000];
        let lengths: Vec<usize> = lengths.into_iter().map(|n| n.min(max_len())).collect();
        let mut g = || scan_testing::unimodular_i32(&mut rng);
        check_shards::<MatMul2x2<i32>>(&group, &format!("{label}, matmul2x2 i32"), &lengths, &mut g);
        let lengths = [(5 << 20) + 3, 1, (5 << 20) + 11];
        let lengths: Vec<usize> = lengths.into_iter().map(|n| n.min(max_len())).collect();
        let mut g = || rng.next_u64();
        check_shards::<Add<u64>>(&group, &format!("{label}, add u64"), &lengths, &mut g);
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn rows_sharded_by_row_are_local_rows() {
    let group = ShardGroup::on_one_gpu(cuda(), 3).unwrap();
    let row_len = 1000;
    let mut rng = Rng::fresh("rows");
    let rows = [2usize, 0, 5];
    let input: Vec<Vec<u32>> =
        rows.iter().map(|&r| (0..r * row_len).map(|_| (rng.next_u64() % 100) as u32).collect()).collect();
    let mut shards: Vec<_> = input.iter().map(|s| group.rank(0).unwrap().upload(s).unwrap()).collect();
    group.scan_rows_shards::<Add<u32>>(&mut shards, row_len, ScanSpec::exclusive()).unwrap();
    for (shard, inp) in shards.iter().zip(&input) {
        let got = shard.download().unwrap();
        let want: Vec<u32> =
            inp.chunks(row_len).flat_map(|row| reference::scan::<Add<u32>>(row, ScanSpec::exclusive())).collect();
        assert_eq!(got, want);
    }
    // A shard that is not whole rows is an error, not a panic.
    let mut bad: Vec<_> = [3, 0, 0].iter().map(|&n| group.rank(0).unwrap().upload(&vec![1u32; n]).unwrap()).collect();
    let err = group.scan_rows_shards::<Add<u32>>(&mut bad, 2, ScanSpec::inclusive()).unwrap_err();
    assert!(matches!(&err, scan::Error::WrongShape { argument, .. } if argument == "shards[0]"), "{err}");
    assert!(err.to_string().contains("row_len = 2"), "{err}");
    let err = group.scan_rows_shards::<Add<u32>>(&mut bad, 0, ScanSpec::inclusive()).unwrap_err();
    assert!(matches!(err, scan::Error::WrongShape { .. }), "{err}");
    // A bad later shard: the good one before it is left as it was (it was
    // scanned before the bad one was seen).
    let mut later: Vec<_> = [4, 3, 0].iter().map(|&n| group.rank(0).unwrap().upload(&vec![1u32; n]).unwrap()).collect();
    let err = group.scan_rows_shards::<Add<u32>>(&mut later, 2, ScanSpec::inclusive()).unwrap_err();
    assert!(matches!(&err, scan::Error::WrongShape { argument, .. } if argument == "shards[1]"), "{err}");
    assert_eq!(later[0].download().unwrap(), vec![1u32; 4], "shard 0 changed by a failed call");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn wrong_shard_counts_and_devices_are_errors() {
    let group = ShardGroup::on_one_gpu(cuda(), 2).unwrap();
    let one = group.rank(0).unwrap();
    let mut shards = vec![one.upload(&[1u32, 2]).unwrap()];
    let err = group.scan_shards::<Add<u32>>(&mut shards, ScanSpec::inclusive()).unwrap_err();
    assert!(matches!(&err, scan::Error::WrongShape { argument, .. } if argument == "shards"), "{err}");
    let sources = vec![one.upload(&[1u32, 2]).unwrap(), one.upload(&[3u32]).unwrap()];
    let mut outputs = vec![one.upload(&[0u32, 0]).unwrap(), one.upload(&[0u32, 0]).unwrap()];
    let err = group.scan_shards_into::<Add<u32>>(&sources, &mut outputs, ScanSpec::inclusive()).unwrap_err();
    assert!(matches!(err, scan::Error::LengthMismatch { input: 1, output: 2 }), "{err}");
    let mut one_output = vec![one.upload(&[0u32, 0]).unwrap()];
    let err = group.scan_shards_into::<Add<u32>>(&sources, &mut one_output, ScanSpec::inclusive()).unwrap_err();
    assert!(matches!(&err, scan::Error::WrongShape { argument, .. } if argument == "outputs"), "{err}");
    assert!(ShardGroup::on_one_gpu(cuda(), 0).is_err());
    assert!(ShardGroup::on_one_gpu(cuda(), usize::MAX).is_err(), "more ranks than NCCL takes");
}

/// The number of CUDA devices, through a probe of each ordinal.
fn device_count() -> usize {
    (0..64).take_while(|&o| Cuda::with_device(o).is_ok()).count()
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn nccl_over_every_gpu_matches_the_reference() {
    let ordinals: Vec<usize> = (0..device_count()).collect();
    // One GPU has no NVLink to multicast over; several must not use it (on
    // shared hosts it can put the GPUs out of service). Set by the caller:
    // changing the environment here would race the other tests' threads.
    let nvls = std::env::var("NCCL_NVLS_ENABLE");
    assert!(
        ordinals.len() < 2 || nvls.as_deref() == Ok("0"),
        "NCCL over {} GPUs needs NCCL_NVLS_ENABLE=0 (got {nvls:?})",
        ordinals.len()
    );
    println!(
        "NCCL over {} GPU(s){}",
        ordinals.len(),
        if ordinals.len() < 2 { ": no carry across GPUs tested" } else { "" }
    );
    let group = ShardGroup::nccl(&ordinals).unwrap_or_else(|e| panic!("NCCL over GPUs {ordinals:?}: {e}"));
    assert_eq!(group.world_size(), ordinals.len());
    let mut rng = Rng::fresh("nccl");
    // Both ways of joining: reduce-then-scan (single-pass) and scan-then-carry
    // (Blelloch), through executors of the caller's.
    for algorithm in Algorithm::ALL {
        let execs = ordinals.iter().map(|&o| Cuda::with_device(o).unwrap().with_algorithm(algorithm)).collect();
        let group = ShardGroup::nccl_with(execs).unwrap();
        for lengths in layouts::<MatMul2x2<i32>>(&mut rng, ordinals.len()) {
            let mut g = || scan_testing::unimodular_i32(&mut rng);
            check_shards::<MatMul2x2<i32>>(&group, &format!("NCCL {algorithm} matmul2x2 i32"), &lengths, &mut g);
        }
    }
    let mut g = || rng.next_u64() >> 8;
    let lengths: Vec<usize> = (0..ordinals.len()).map(|r| if r % 2 == 0 { (1 << 20) + 3 } else { 1000 }).collect();
    check_shards::<Add<u64>>(&group, "NCCL add u64", &lengths, &mut g);
    // The host-slice form: split evenly.
    let input: Vec<u64> = (0..100_003).map(|i| i % 7).collect();
    let got = group.scan::<Add<u64>>(&input, ScanSpec::inclusive().reversed()).unwrap();
    assert_eq!(got, reference::scan::<Add<u64>>(&input, ScanSpec::inclusive().reversed()));
    // A device listed twice is refused before NCCL is asked.
    assert!(ShardGroup::nccl_with(vec![cuda(), cuda()]).is_err());
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn an_nccl_rank_of_one_scans_its_shard() {
    let id = NcclId::new().unwrap_or_else(|e| panic!("{e}"));
    let me = NcclRank::join(cuda(), 0, 1, &id).unwrap();
    // Shears that do not commute: [[1, 1], [0, 1]] and [[1, 0], [1, 1]].
    let input: Vec<[i32; 4]> = (0..70_001).map(|i| if i % 3 == 0 { [1, 1, 0, 1] } else { [1, 0, 1, 1] }).collect();
    for spec in ScanSpec::ALL {
        let mut shard = me.cuda().upload(&input).unwrap();
        me.scan_shard::<MatMul2x2<i32>>(&mut shard, spec).unwrap();
        assert_eq!(shard.download().unwrap(), reference::scan::<MatMul2x2<i32>>(&input, spec), "{spec:?}");
    }
    assert!(NcclRank::join(cuda(), 1, 1, &id).is_err(), "rank 1 of 1");
}
