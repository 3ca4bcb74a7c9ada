//! `Device::auto()`: CUDA when it works, the CPU otherwise, and says which.

#[path = "../scan-cuda/tests/support/mod.rs"]
mod support;

use scan::ops::LinearRecurrence;
use scan::{Device, ScanSpec};
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
