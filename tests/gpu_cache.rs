//! The module cache across "process starts" (fresh executors): a cold start
//! compiles and writes the disk cache, a warm start reads it and compiles
//! nothing, a corrupt entry is recompiled. One test in this binary because it
//! sets `SCAN_CUDA_CACHE_DIR`.

#[path = "../scan-cuda/tests/support/mod.rs"]
mod support;

use scan::ops::LinearRecurrence;
use scan_core::{reference, ScanSpec};
use scan_cuda::Cuda;
use support::gpu::cuda;
type LinRecF32 = LinearRecurrence<f32>;

fn scan_is_right(cuda: &Cuda) {
    let x: Vec<(f32, f32)> = (0..10_000).map(|i| ((i % 3) as f32 - 1.0, (i % 7) as f32)).collect();
    assert_eq!(
        cuda.scan::<LinRecF32>(&x, ScanSpec::inclusive()).unwrap(),
        reference::scan::<LinRecF32>(&x, ScanSpec::inclusive())
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn the_second_start_reads_the_disk_cache_and_a_corrupt_entry_is_recompiled() {
    let dir = std::env::temp_dir().join(format!("scan-cuda-cache-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::env::set_var("SCAN_CUDA_CACHE_DIR", &dir);

    let cold = cuda();
    assert_eq!(cold.cache_dir(), Some(dir.as_path()));
    cold.prepare::<LinRecF32>().unwrap();
    let stats = cold.compile_stats();
    eprintln!("cold start: {stats}");
    assert_eq!((stats.modules, stats.compiled, stats.disk_hits, stats.disk_write_failures), (1, 1, 0, 0));
    scan_is_right(&cold);
    let entries: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(entries.len(), 1, "{entries:?}");

    let warm = cuda();
    warm.prepare::<LinRecF32>().unwrap();
    let stats = warm.compile_stats();
    eprintln!("warm start: {stats}");
    assert_eq!((stats.modules, stats.compiled, stats.disk_hits), (1, 0, 1));
    assert_eq!(stats.nvrtc_time, std::time::Duration::ZERO);
    scan_is_right(&warm);

    let mut bytes = std::fs::read(&entries[0]).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0xff;
    std::fs::write(&entries[0], &bytes).unwrap();
    let after_corruption = cuda();
    after_corruption.prepare::<LinRecF32>().unwrap();
    let stats = after_corruption.compile_stats();
    eprintln!("after corruption: {stats}");
    assert_eq!((stats.compiled, stats.disk_hits), (1, 0));
    scan_is_right(&after_corruption);

    let again = cuda();
    again.prepare::<LinRecF32>().unwrap();
    assert_eq!(again.compile_stats().disk_hits, 1, "the recompiled entry was written back");
    let _ = std::fs::remove_dir_all(&dir);
}
