//! Scans of host slices on the GPU, which travel in chunks through pinned
//! buffers, each chunk's scan starting from the running total of the chunks
//! before it (scan-cuda/src/staging.rs):
//!
//! * exact for every spec, out of place (the input unchanged, the output
//!   poisoned first) and in place, on lengths around the chunk boundaries and
//!   chunk sizes from one item to several tiles, with non-commutative items
//!   of 4 to 32 bytes, under the adversarial schedule too;
//! * the default chunking on an input of many chunks;
//! * operators without single-pass kernels take the unstaged path;
//! * one executor used from several threads at once, and from more rayon
//!   tasks than the global pool has workers;
//! * the link measurement, and its error on no bytes;
//! * `Cuda::upload`, `upload_into`, `Cuda::download`, `download_into` and `download_prefix`
//!   (staged from STAGED_TRANSFER_BYTES on) give back every byte, on sizes around that threshold and around the
//!   chunks and the slots' reuse, against the unstaged copies; a download
//!   waits for the kernels queued before it, an upload for those reading the
//!   buffer it overwrites (on the default stream and on one of its own);
//!   transfers and staged scans share one executor's buffers in either order.
//!
//! Run on a GPU machine: `cargo test --test gpu_host -- --ignored`.

#[path = "../scan-cuda/tests/support/mod.rs"]
mod support;

use std::fmt::Debug;

use scan::ops::{Add, LinearRecurrence, MatMul2x2};
use scan::{CudaOp, ScanSpec};
use scan_core::reference;
use scan_cuda::{Algorithm, Cuda, Tuning, STAGED_TRANSFER_BYTES};
use scan_testing::Rng;
use support::gpu::{cuda, max_len, poisoned, single_pass_tile, small_int};
use support::ops::AddU64x20;
use support::user_ops::QuaternionProduct;

/// Scans `input` from the host every way and compares with the reference.
fn check_host<Op: CudaOp>(cuda: &Cuda, ctx: &str, input: &[Op::Item])
where
    Op::Item: PartialEq + Debug,
{
    for spec in ScanSpec::ALL {
        let want = reference::scan::<Op>(input, spec);
        let pristine = input.to_vec();
        let mut out = poisoned::<Op::Item>(input.len());
        cuda.scan_into::<Op>(input, &mut out, spec).unwrap();
        if let Some(i) = (0..input.len()).find(|&i| out[i] != want[i]) {
            panic!("{ctx}, n = {}, {spec:?}, into: item {i}: got {:?}, want {:?}", input.len(), out[i], want[i]);
        }
        assert!(input == pristine, "{ctx}, {spec:?}: the input changed");
        let mut data = input.to_vec();
        cuda.scan_in_place::<Op>(&mut data, spec).unwrap();
        if let Some(i) = (0..input.len()).find(|&i| data[i] != want[i]) {
            panic!("{ctx}, n = {}, {spec:?}, in place: item {i}: got {:?}, want {:?}", input.len(), data[i], want[i]);
        }
        assert!(cuda.scan::<Op>(input, spec).unwrap() == want, "{ctx}, n = {}, {spec:?}: scan -> Vec", input.len());
    }
}

/// Chunks of `items` items each (and of one item, and of 1000), lengths
/// around 1, 2 and many chunks, and around the single-pass tile inside a
/// chunk.
fn chunked<Op: CudaOp>(label: &str, seed: u32, mut gen: impl FnMut(&mut Rng) -> Op::Item)
where
    Op::Item: PartialEq + Debug,
{
    let mut rng = Rng::fresh(label);
    let size = std::mem::size_of::<Op::Item>();
    let tile = single_pass_tile::<Op>();
    for chunk in [1, 7, 1000, tile - 1, tile + 1, 3 * tile] {
        let cuda = cuda().with_tuning(Tuning::default().host_chunk_bytes(chunk * size).adversarial_schedule(seed));
        assert_eq!(cuda.algorithm_for::<Op>().unwrap(), (Algorithm::SinglePass, None), "{label}");
        let mut lengths = vec![1, 2, chunk, chunk + 1, 2 * chunk - 1, 2 * chunk, 5 * chunk + 3];
        lengths.extend([tile + 1, 3 * tile + chunk]);
        lengths.retain(|&n| n <= max_len() && n <= 3000 * chunk);
        lengths.sort_unstable();
        lengths.dedup();
        for &n in &lengths {
            let input = rng.vec(n, &mut gen);
            check_host::<Op>(&cuda, &format!("{label}, chunks of {chunk}, seed {seed}"), &input);
        }
        eprintln!("[{label}] exact in chunks of {chunk} items, lengths {lengths:?}, seed {seed}");
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn host_scans_are_exact_across_chunk_boundaries() {
    for seed in [0, 7] {
        chunked::<Add<u32>>("add u32 (4 B)", seed, |r| r.next_u64() as u32);
        let lr = |r: &mut Rng| ((r.below(3) as f32 - 1.0), small_int(r) as f32);
        chunked::<LinearRecurrence<f32>>("linear recurrence f32 (8 B)", seed, lr);
        chunked::<MatMul2x2<i32>>("matmul2x2 i32 (16 B)", seed, scan_testing::unimodular_i32);
        chunked::<QuaternionProduct>("quaternion product (32 B)", seed, |r| {
            let mut q = [0.0; 4];
            q[r.below(4) as usize] = if r.below(2) == 0 { -1.0 } else { 1.0 };
            q
        });
    }
}

/// The default chunking (an eighth of the input, 4 to 16 MiB) on 96 MiB and
/// 200 MiB of items: 9 chunks of 12 MiB and 13 of 16 MiB, the last one short
/// (5 items; half a chunk); 64 MiB in place in 9 chunks of 8 MiB, the last of
/// one item.
#[test]
#[ignore = "needs a CUDA GPU"]
fn host_scans_with_the_default_chunks_are_exact() {
    let cuda = cuda();
    let mut rng = Rng::fresh("default chunks");
    for n in [(24 << 20) + 5, (50 << 20) + 3].into_iter().filter(|&n| n <= max_len()) {
        let x: Vec<u32> = rng.vec(n, |r| r.next_u64() as u32);
        for spec in [ScanSpec::inclusive(), ScanSpec::exclusive().reversed()] {
            let want = reference::scan::<Add<u32>>(&x, spec);
            assert!(cuda.scan::<Add<u32>>(&x, spec).unwrap() == want, "u32 add, n = {n}, {spec:?}");
        }
    }
    let m: Vec<[i32; 4]> = rng.vec((4 << 20) + 1, scan_testing::unimodular_i32);
    let mut data = m.clone();
    cuda.scan_in_place::<MatMul2x2<i32>>(&mut data, ScanSpec::inclusive()).unwrap();
    assert!(data == reference::scan::<MatMul2x2<i32>>(&m, ScanSpec::inclusive()), "matmul2x2, 64 MiB in place");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn operators_without_single_pass_kernels_scan_host_slices_unstaged() {
    let cuda = cuda().with_tuning(Tuning::default().host_chunk_bytes(1000));
    assert_eq!(cuda.algorithm_for::<AddU64x20>().unwrap().0, Algorithm::Blelloch);
    let mut rng = Rng::fresh("unstaged");
    let x: Vec<[u64; 20]> = rng.vec(3001, |r| std::array::from_fn(|_| r.next_u64()));
    check_host::<AddU64x20>(&cuda, "add u64x20 (160 B)", &x);
    let blelloch = cuda.with_algorithm(Algorithm::Blelloch);
    let y: Vec<u32> = rng.vec(100_003, |r| r.next_u64() as u32);
    check_host::<Add<u32>>(&blelloch, "add u32 on Blelloch", &y);
}

/// Staging buffers are per executor: concurrent calls take turns, each
/// result is its own.
#[test]
#[ignore = "needs a CUDA GPU"]
fn one_executor_scans_host_slices_from_several_threads() {
    let cuda = cuda().with_tuning(Tuning::default().host_chunk_bytes(4096));
    std::thread::scope(|s| {
        for t in 0..4u64 {
            let cuda = &cuda;
            s.spawn(move || {
                let mut rng = Rng::fresh(&format!("thread {t}"));
                for k in 0..20 {
                    let n = 1 + rng.below(300_000) as usize;
                    let x: Vec<u64> = rng.vec(n, |r| r.next_u64());
                    let spec = ScanSpec::ALL[k % 4];
                    let want = reference::scan::<Add<u64>>(&x, spec);
                    assert!(cuda.scan::<Add<u64>>(&x, spec).unwrap() == want, "thread {t}, scan {k}");
                }
            });
        }
    });
}

/// More scans on one executor from rayon tasks than the global pool has
/// workers: every worker is in a scan, all but one waiting for the staging
/// lock. The host copies ran on that pool, so the scan holding the lock
/// waited for its drain's copy and the copy for a worker: a deadlock
/// (staging.rs, `copy`). The calls run on a thread of their own, so that a
/// hang fails the test instead of stopping the suite.
#[test]
#[ignore = "needs a CUDA GPU"]
fn host_scans_from_every_worker_of_rayons_pool_finish() {
    use rayon::prelude::*;
    let cuda = std::sync::Arc::new(cuda());
    // 12 MiB: three chunks of 4 MiB, each copied in pieces.
    let x: Vec<u32> = Rng::fresh("rayon callers").vec(3 << 20, |r| r.next_u64() as u32);
    let want = reference::scan::<Add<u32>>(&x, ScanSpec::inclusive());
    let calls = 2 * rayon::current_num_threads();
    let (done_tx, done) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let exact = (0..calls)
            .into_par_iter()
            .all(|_| cuda.scan::<Add<u32>>(&x, ScanSpec::inclusive()).is_ok_and(|y| y == want));
        let _ = done_tx.send(exact);
    });
    let finished = done.recv_timeout(std::time::Duration::from_secs(300));
    assert_eq!(finished, Ok(true), "{calls} scans from rayon tasks: Err is a hang, false a wrong result");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn the_link_is_measured_and_no_bytes_is_an_error() {
    let cuda = cuda();
    let link = cuda.transfer_rates(64 << 20).unwrap();
    eprintln!("{link}");
    for rate in [link.host_to_device, link.device_to_host] {
        assert!(rate.is_finite() && rate > 0.1, "{link:?}");
    }
    let bound = link.bound_seconds(1 << 30, 1 << 30);
    assert!(bound > 0.0 && bound.is_finite(), "{bound}");
    let err = cuda.transfer_rates(0).unwrap_err();
    assert!(err.to_string().contains("at least one byte"), "{err}");
}

/// Round trips of `items` of 12 bytes (an item size that does not divide the
/// chunks) through every pair of upload and download, staged or not.
fn round_trips(cuda: &Cuda, ctx: &str, len: usize, rng: &mut Rng) {
    let items: Vec<[u32; 3]> = rng.vec(len, |r| [r.next_u64() as u32, r.next_u64() as u32, r.next_u64() as u32]);
    let bytes = len * 12;
    let staged = cuda.upload(&items).unwrap();
    let mut plain = cuda.alloc::<[u32; 3]>(len).unwrap();
    plain.upload_from(&items).unwrap();
    let mut into = cuda.alloc::<[u32; 3]>(len).unwrap();
    cuda.upload_into(&items, &mut into).unwrap();
    for (buf, how) in [(&staged, "Cuda::upload"), (&plain, "upload_from"), (&into, "Cuda::upload_into")] {
        let first_wrong = |got: &[[u32; 3]]| (0..len).find(|&i| got[i] != items[i]);
        let back = cuda.download(buf).unwrap();
        assert_eq!(back.len(), len);
        assert_eq!(first_wrong(&back), None, "{ctx}, {bytes} bytes, {how} then Cuda::download: first wrong item");
        let mut host = poisoned::<[u32; 3]>(len);
        cuda.download_into(buf, &mut host).unwrap();
        assert_eq!(first_wrong(&host), None, "{ctx}, {bytes} bytes, {how} then Cuda::download_into");
        assert_eq!(
            first_wrong(&buf.download().unwrap()),
            None,
            "{ctx}, {bytes} bytes, {how} then DeviceBuffer::download"
        );
        // A prefix: one item short of the whole, staged where it is large.
        let short = len.saturating_sub(1);
        let prefix = cuda.download_prefix(buf, short).unwrap();
        assert!(prefix[..] == items[..short], "{ctx}, {bytes} bytes, {how} then Cuda::download_prefix({short})");
    }
    if len > 0 {
        let err = cuda.upload_into(&items[1..], &mut into).unwrap_err();
        assert!(matches!(err, scan::Error::LengthMismatch { .. }), "{err}");
    }
    let err = cuda.download_prefix(&staged, len + 1).unwrap_err();
    assert!(matches!(err, scan::Error::LengthMismatch { .. }), "{err}");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn large_transfers_give_back_every_byte() {
    let mut rng = Rng::fresh("large transfers");
    let edge = STAGED_TRANSFER_BYTES / 12;
    // The default chunks: below, at and above the threshold (the staged
    // path starts where a whole item reaches it), and many chunks (more
    // than the four slots, so each is reused).
    let cuda = cuda();
    for len in [0, 1, edge - 1, edge, edge + 1, edge + 2, 5 * edge + 7, (96 << 20) / 12 + 5] {
        round_trips(&cuda, "default chunks", len, &mut rng);
    }
    // Tuned chunks of a size that splits items, many slot reuses.
    for chunk in [4099, 1 << 20, 3 << 20] {
        let tuned = support::gpu::cuda().with_tuning(Tuning::default().host_chunk_bytes(chunk));
        for len in [edge + 1, 3 * edge + 11] {
            round_trips(&tuned, &format!("chunks of {chunk} bytes"), len, &mut rng);
        }
    }
    // Wrong lengths are errors.
    let buf = cuda.upload(&[0u32; 4]).unwrap();
    let err = cuda.download_into(&buf, &mut [0u32; 3]).unwrap_err();
    assert!(err.to_string().contains('4') && err.to_string().contains('3'), "{err}");
}

/// The executors the ordering tests run on: the default stream, and a stream
/// of its own (so that the event the staged copies wait for is recorded on
/// a stream other than the legacy default one); both with the adversarial
/// schedule, whose late tiles make a scan slow enough for a copy that did
/// not wait for it to overtake it.
fn ordering_executors() -> Vec<(&'static str, Cuda)> {
    let slow = || cuda().with_tuning(Tuning::default().adversarial_schedule(0x5eed));
    vec![("the default stream", slow()), ("a stream of its own", slow().with_own_stream().unwrap())]
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_staged_download_waits_for_the_kernels_before_it() {
    for (which, cuda) in ordering_executors() {
        for log in [22, 26] {
            let n = 1usize << log;
            let mut buf = cuda.upload(&vec![1u32; n]).unwrap();
            // Queued: returns before the scan has run.
            cuda.scan_device::<Add<u32>>(&mut buf, ScanSpec::inclusive()).unwrap();
            let got = cuda.download(&buf).unwrap();
            let wrong = (0..n).find(|&i| got[i] != i as u32 + 1);
            assert_eq!(wrong, None, "{which}, 2^{log}: the first item not scanned");
            cuda.scan_device::<Add<u32>>(&mut buf, ScanSpec::exclusive()).unwrap();
            let mut into = vec![u32::MAX; n];
            cuda.download_into(&buf, &mut into).unwrap();
            // The exclusive scan of 1, 2, 3, ...: the triangular numbers.
            let wrong = (0..n).find(|&i| into[i] != ((i as u64 * (i as u64 + 1)) / 2) as u32);
            assert_eq!(wrong, None, "{which}, 2^{log}: the first item of the second scan wrong");
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_staged_upload_waits_for_the_kernels_reading_the_buffer() {
    for (which, cuda) in ordering_executors() {
        for log in [22, 26] {
            let n = 1usize << log;
            let mut buf = cuda.upload(&vec![1u32; n]).unwrap();
            let mut out = cuda.alloc::<u32>(n).unwrap();
            // Queued, reading `buf`; the upload overwrites it only after.
            cuda.scan_device_into::<Add<u32>>(&buf, &mut out, ScanSpec::inclusive()).unwrap();
            cuda.upload_into(&vec![2u32; n], &mut buf).unwrap();
            let got = cuda.download(&out).unwrap();
            let wrong = (0..n).find(|&i| got[i] != i as u32 + 1);
            assert_eq!(
                wrong, None,
                "{which}, 2^{log}: the scan read a 2 (the upload came first) at this item or before"
            );
            assert!(cuda.download(&buf).unwrap().iter().all(|&x| x == 2), "{which}, 2^{log}: the upload");
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn transfers_and_staged_scans_share_one_executors_buffers() {
    // A transfer first makes the slots without their device buffers; the
    // staged scan after it adds them; transfers after the scan reuse all.
    let mut rng = Rng::fresh("transfers and scans");
    let cuda = cuda();
    let edge = STAGED_TRANSFER_BYTES / 12;
    round_trips(&cuda, "before any scan", 3 * edge + 1, &mut rng);
    let x: Vec<u32> = rng.vec(3 << 22, |r| r.below(1000) as u32);
    let want = reference::scan::<Add<u32>>(&x, ScanSpec::inclusive());
    assert!(cuda.scan::<Add<u32>>(&x, ScanSpec::inclusive()).unwrap() == want, "the staged scan after a transfer");
    round_trips(&cuda, "after a scan", 5 * edge + 3, &mut rng);
    assert!(cuda.scan::<Add<u32>>(&x, ScanSpec::inclusive()).unwrap() == want, "the staged scan after more transfers");
    // Exactly at the threshold and one byte below it, in bytes.
    for len in [STAGED_TRANSFER_BYTES - 1, STAGED_TRANSFER_BYTES] {
        let bytes: Vec<u8> = rng.vec(len, |r| r.next_u64() as u8);
        let buf = cuda.upload(&bytes).unwrap();
        assert!(cuda.download(&buf).unwrap() == bytes, "{len} bytes, Cuda::upload then Cuda::download");
        assert!(buf.download().unwrap() == bytes, "{len} bytes, Cuda::upload then DeviceBuffer::download");
    }
}
