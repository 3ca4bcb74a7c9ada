//! `Device::auto()`: CUDA when it works, the CPU otherwise, and says which.

#[path = "../scan-cuda/tests/support/mod.rs"]
mod support;

use scan::ops::{LinearRecurrence, MatMul2x2};
use scan::{Device, ScanSpec};
use scan_testing::Rng;
type LinRecF32 = LinearRecurrence<f32>;

/// Runs everywhere: opening CUDA never panics; without it the error says why.
#[test]
fn opening_cuda_never_panics_and_auto_always_gives_a_device() {
    match scan::Cuda::new() {
        Ok(cuda) => eprintln!("CUDA: {cuda}"),
        Err(e) => {
            assert!(matches!(e, scan::Error::CudaUnavailable { .. }), "{e}");
            eprintln!("no CUDA here: {e}");
        }
    }
    let device = Device::auto();
    let shown = device.to_string();
    assert!(shown.starts_with(if device.is_cuda() { "CUDA" } else { "CPU" }), "{shown}");
    let x = [(0.5f32, 1.0f32), (0.5, 1.0), (0.5, 1.0)];
    let h = device.scan::<LinRecF32>(&x, ScanSpec::inclusive()).unwrap();
    assert_eq!(h.iter().map(|p| p.1).collect::<Vec<_>>(), [1.0, 1.5, 1.75]);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn auto_picks_cuda_on_a_gpu_machine() {
    let device = Device::auto();
    assert!(device.is_cuda(), "Device::auto() fell back: {device}");
    assert!(device.to_string().starts_with("CUDA: "), "{device}");
    let x: Vec<(f32, f32)> = (0..100_000).map(|i| ((i % 3) as f32 - 1.0, (i % 5) as f32)).collect();
    for spec in ScanSpec::ALL {
        let mut y = x.clone();
        device.scan_in_place::<LinRecF32>(&mut y, spec).unwrap();
        assert_eq!(y, scan::reference::scan::<LinRecF32>(&x, spec), "{spec:?}");
    }
}

/// `Device` scans an operator through a wrapper type of its own; a direct
/// `Cuda` call of the same operator (either one first) reuses that module
/// instead of loading a second (`CompileStats::modules` counts loads).
#[test]
#[ignore = "needs a CUDA GPU"]
fn device_and_cuda_share_an_operators_module() {
    let device = Device::cuda().unwrap_or_else(|e| panic!("this test needs a CUDA GPU: {e}"));
    let cuda = device.as_cuda().unwrap();
    // Small integers: every evaluation order gives the same floats.
    let x: Vec<(f32, f32)> = (0..100_000).map(|i| ((i % 3) as f32 - 1.0, (i % 5) as f32)).collect();
    let want = scan::reference::scan::<LinRecF32>(&x, ScanSpec::inclusive());
    let before = cuda.compile_stats().modules;
    assert_eq!(device.scan::<LinRecF32>(&x, ScanSpec::inclusive()).unwrap(), want);
    let loaded = cuda.compile_stats().modules;
    assert!(loaded > before, "the first scan loaded nothing: {}", cuda.compile_stats());
    assert_eq!(cuda.scan::<LinRecF32>(&x, ScanSpec::inclusive()).unwrap(), want);
    assert_eq!(cuda.compile_stats().modules, loaded, "{}", cuda.compile_stats());

    let m: Vec<[i64; 4]> = Rng::fresh("shared module").vec(50_000, scan_testing::unimodular_i64);
    let want = scan::reference::scan::<MatMul2x2<i64>>(&m, ScanSpec::exclusive());
    assert_eq!(cuda.scan::<MatMul2x2<i64>>(&m, ScanSpec::exclusive()).unwrap(), want);
    let loaded = cuda.compile_stats().modules;
    assert_eq!(device.scan::<MatMul2x2<i64>>(&m, ScanSpec::exclusive()).unwrap(), want);
    assert_eq!(cuda.compile_stats().modules, loaded, "{}", cuda.compile_stats());
}

/// Batched rows through `Device`, against `reference::scan_rows`, with a
/// non-commutative operator; bad shapes are errors.
fn rows_match_the_reference(device: &Device) {
    let mut rng = Rng::fresh("device rows");
    for (rows, row_len) in [(1, 0), (4, 1), (3, 1000), (5, 4099)] {
        let x: Vec<[i64; 4]> = rng.vec(rows * row_len, scan_testing::unimodular_i64);
        for spec in ScanSpec::ALL {
            let want = scan::reference::scan_rows::<MatMul2x2<i64>>(&x, rows, spec).unwrap();
            let mut out = vec![[i64::MIN; 4]; x.len()];
            device.scan_rows::<MatMul2x2<i64>>(&x, &mut out, rows, spec).unwrap();
            assert!(out == want, "{device}: {rows} x {row_len}, {spec:?}, scan_rows");
            let mut y = x.clone();
            device.scan_rows_in_place::<MatMul2x2<i64>>(&mut y, rows, spec).unwrap();
            assert!(y == want, "{device}: {rows} x {row_len}, {spec:?}, scan_rows_in_place");
        }
    }
    let mut y = [[1i64; 4]; 6];
    for rows in [0, 4] {
        let bad = device.scan_rows_in_place::<MatMul2x2<i64>>(&mut y, rows, ScanSpec::inclusive());
        assert!(matches!(bad, Err(scan::Error::BadShape { len: 6, rows: r }) if r == rows), "{bad:?}");
    }
}

#[test]
fn cpu_rows_match_the_reference() {
    rows_match_the_reference(&Device::cpu());
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn cuda_rows_match_the_reference() {
    let device = Device::cuda().unwrap_or_else(|e| panic!("this test needs a CUDA GPU: {e}"));
    rows_match_the_reference(&device);
}

/// An operator with no CUDA source: the last `Some` so far.
struct LastSome;
impl scan::ScanOp for LastSome {
    type Item = Option<u32>;
    fn identity() -> Option<u32> {
        None
    }
    fn combine(l: Option<u32>, r: Option<u32>) -> Option<u32> {
        r.or(l)
    }
}

#[test]
fn a_cpu_only_operator_runs_on_a_cpu_device() {
    let x = [Some(1), None, Some(3), None];
    let device = Device::cpu();
    assert_eq!(device.scan::<LastSome>(&x, ScanSpec::inclusive()).unwrap(), [Some(1), Some(1), Some(3), Some(3)]);
    let generic: &dyn scan::Scan<LastSome> = &device;
    assert_eq!(generic.scan(&x, ScanSpec::exclusive()).unwrap(), [None, Some(1), Some(1), Some(3)]);
    // What the device asks before sending an operator to a GPU:
    use scan::{CudaOp, ScanOp};
    assert!(LastSome::cuda_source_if_any().is_none());
    let built_in = <scan::ops::Add<u32> as ScanOp>::cuda_source_if_any().map(|s| s.name);
    assert_eq!(built_in, Some(<scan::ops::Add<u32> as CudaOp>::cuda_source().name));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_cpu_only_operator_sent_to_the_gpu_is_a_clear_error() {
    let device = Device::cuda().unwrap_or_else(|e| panic!("this test needs a CUDA GPU: {e}"));
    let mut x = vec![Some(1), None, Some(3)];
    let err = device.scan_in_place::<LastSome>(&mut x, ScanSpec::inclusive()).unwrap_err();
    assert!(matches!(err, scan::Error::NotCuda { .. }), "{err}");
    assert!(err.to_string().contains("LastSome"), "{err}");
    assert_eq!(x, [Some(1), None, Some(3)], "a rejected call modified its data");
    // An operator with CUDA source still runs there through the same calls.
    let sums = device.scan::<scan::ops::Add<u32>>(&[1, 2, 3], ScanSpec::inclusive()).unwrap();
    assert_eq!(sums, [1, 3, 6]);
}

/// Opening CUDA keeps freed memory in the device's pool (a quarter of the
/// device's memory by default), so a large buffer freed and allocated again
/// is not mapped anew; with nothing retained the pool gives it back at the
/// next synchronisation; what it keeps never makes an allocation fail.
/// (Other tests of this binary allocate far less than used here.)
#[test]
#[ignore = "needs a CUDA GPU"]
fn the_pool_keeps_freed_memory_for_the_next_allocations() {
    let cuda = scan::Cuda::new().expect("a CUDA GPU");
    let total = cuda.context().total_mem().unwrap() as u64;
    let kept = cuda.retained_memory().unwrap().expect("a stream-ordered allocator");
    assert!(kept >= total / 4, "kept {kept} of {total} bytes");
    let bytes: u64 = 256 << 20;
    let settled = |cuda: &scan::Cuda| {
        cuda.stream().synchronize().unwrap();
        cuda.pool_reserved_memory().unwrap().unwrap()
    };
    drop(cuda.alloc::<f32>(bytes as usize / 4).unwrap());
    let reserved = settled(&cuda);
    assert!(reserved >= bytes, "freed {bytes} bytes, the pool keeps {reserved}");

    cuda.set_retained_memory(0).unwrap();
    assert_eq!(cuda.retained_memory().unwrap(), Some(0));
    drop(cuda.alloc::<f32>(bytes as usize / 4).unwrap());
    let reserved = settled(&cuda);
    assert!(reserved < bytes, "nothing retained, yet the pool keeps {reserved} bytes");

    // What the pool keeps is not free to cuMemGetInfo: an allocation that
    // fits only with it is still made (the pool gives its memory back
    // first), not refused as too large.
    cuda.set_retained_memory(total).unwrap();
    let (free, _) = cuda.context().mem_get_info().unwrap();
    let big = free / 10 * 6 / 4;
    drop(cuda.alloc::<f32>(big).unwrap());
    let reserved = settled(&cuda);
    assert!(reserved >= 4 * big as u64, "the pool keeps {reserved} bytes of {}", 4 * big);
    let (free_now, _) = cuda.context().mem_get_info().unwrap();
    assert!(free_now < 4 * big, "{free_now} bytes free, {} kept", 4 * big);
    let again = cuda.alloc::<f32>(big).unwrap_or_else(|e| panic!("{} bytes again: {e}", 4 * big));
    assert_eq!(again.len(), big);
    drop(again);
    cuda.set_retained_memory(kept).unwrap();
    assert_eq!(cuda.retained_memory().unwrap(), Some(kept));
}
