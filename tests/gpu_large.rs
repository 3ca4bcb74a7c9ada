//! Past 2^31 items: 64-bit indexing end to end, on both GPU algorithms (u32
//! add, 2^31 + 123 items, 8.6 GB on the device twice: input and a poisoned
//! output that the out-of-place scan must overwrite item by item; the input
//! must not change).

#[path = "../scan-cuda/tests/support/mod.rs"]
mod support;

use scan::ops::Add;
use scan_core::ScanSpec;
use scan_testing::Rng;
use support::gpu::executors;
type AddU32 = Add<u32>;

#[test]
#[ignore = "needs a CUDA GPU"]
fn u32_add_past_two_to_the_31_items_matches_the_reference() {
    let n = (1usize << 31) + 123;
    let mut rng = Rng::fresh("u32 add 2^31+123");
    let mut input = Vec::with_capacity(n);
    while input.len() < n {
        let r = rng.next_u64();
        input.push(r as u32);
        if input.len() < n {
            input.push((r >> 32) as u32);
        }
    }
    for cuda in executors() {
        let dev_in = cuda.upload(&input).unwrap();
        for spec in [ScanSpec::inclusive(), ScanSpec::exclusive().reversed()] {
            // A fresh, zeroed output per spec: an item the kernels missed
            // reads 0, not the other spec's result.
            let mut dev_out = cuda.alloc::<u32>(n).unwrap();
            let ((), ms) = cuda.time(|| cuda.scan_device_into::<AddU32>(&dev_in, &mut dev_out, spec)).unwrap();
            eprintln!("{}, {spec:?}: {n} items in {ms:.2} ms on the device", cuda.algorithm());
            let got = dev_out.download().unwrap();
            // The reference, streamed: no third 8.6 GB vector.
            let mut acc = 0u32;
            let mut check = |i: usize| {
                let next = acc.wrapping_add(input[i]);
                let want = if spec.is_inclusive() { next } else { acc };
                assert_eq!(got[i], want, "{}, {spec:?}: item {i}", cuda.algorithm());
                acc = next;
            };
            if spec.is_reverse() {
                (0..n).rev().for_each(&mut check);
            } else {
                (0..n).for_each(&mut check);
            }
        }
        let kept = dev_in.download().unwrap();
        if let Some(i) = (0..n).find(|&i| kept[i] != input[i]) {
            panic!("{}: the input buffer changed at item {i}: {} != {}", cuda.algorithm(), kept[i], input[i]);
        }
    }
}
