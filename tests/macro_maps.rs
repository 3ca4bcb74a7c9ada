//! `#[scan_maps]`: fused maps declared as plain fns, run on the CPU
//! (`Cpu::scan_mapped`) against `scan::maps::reference` and their generated
//! CUDA source compiled by NVRTC with the single-pass kernel (`--ignored`,
//! needs libnvrtc). `tests/gpu_maps.rs` runs them on the GPU.

mod macro_maps_ops;

use macro_maps_ops::{
    Alternate, Ema, GatedInput, SeenSoFar, SumInF64, Uniform, WeightedMean, WeightedSums, WrapAround,
};
use scan::maps::{reference, CudaMaps};
use scan::ops::{Add, LinearRecurrence};
use scan::{Cpu, ScanSpec};
use scan_testing::Rng;

#[test]
fn declared_maps_run_on_the_cpu_as_the_reference_defines() {
    let mut rng = Rng::fresh("macro maps");
    for n in [0, 1, 2, 7, 1000, 100_003] {
        let alpha: Vec<f32> = (0..n).map(|_| rng.range_f64(0.5, 1.0) as f32).collect();
        let x: Vec<f32> = (0..n).map(|_| rng.range_f64(-1.0, 1.0) as f32).collect();
        let g: Vec<f32> = (0..n).map(|_| rng.below(2) as f32).collect();
        let k: Vec<f32> = (0..n).map(|_| rng.below(17) as f32 - 8.0).collect();
        for threads in [1, 3] {
            let cpu = Cpu::new().with_threads(threads);
            for spec in ScanSpec::ALL {
                let mut got = vec![f32::NAN; n];
                cpu.scan_mapped::<LinearRecurrence<f32>, Ema, _>((&alpha[..], &x[..]), &mut got, spec).unwrap();
                let want = reference::<LinearRecurrence<f32>, Ema, _>((&alpha[..], &x[..]), spec).unwrap();
                close(&got, &want, n, &format!("ema, n {n}, {threads} threads, {spec:?}"));

                let mut got = vec![f32::NAN; n];
                let three = (&alpha[..], &x[..], &g[..]);
                cpu.scan_mapped::<LinearRecurrence<f32>, GatedInput, _>(three, &mut got, spec).unwrap();
                let want = reference::<LinearRecurrence<f32>, GatedInput, _>(three, spec).unwrap();
                close(&got, &want, n, &format!("gated, n {n}, {threads} threads, {spec:?}"));

                let mut got = vec![f32::NAN; n];
                cpu.scan_mapped::<Add<f64>, SumInF64, _>(&x[..], &mut got, spec).unwrap();
                let want = reference::<Add<f64>, SumInF64, _>(&x[..], spec).unwrap();
                close(&got, &want, n, &format!("f64 sums, n {n}, {threads} threads, {spec:?}"));

                // Small integers: exact in any grouping (the errors of
                // h_t = x_t - h_{t-1} never decay, unlike the ema's).
                let mut got = vec![f32::NAN; n];
                cpu.scan_mapped::<LinearRecurrence<f32>, Alternate, _>(&k[..], &mut got, spec).unwrap();
                let want = reference::<LinearRecurrence<f32>, Alternate, _>(&k[..], spec).unwrap();
                assert!(got == want, "alternating sums, n {n}, {threads} threads, {spec:?}");
            }
        }
    }
}

/// Within a few f32 roundings of the reference (the threads group the
/// recurrence differently), scaled by the running magnitude.
fn close(got: &[f32], want: &[f32], n: usize, what: &str) {
    assert_eq!(got.len(), n, "{what}");
    let scale = want.iter().fold(1.0f32, |m, w| m.max(w.abs()));
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!((g - w).abs() <= 64.0 * f32::EPSILON * scale, "{what}: item {i}: got {g}, want {w}");
    }
}

/// The translation runs, not the fn as written: `WrapAround::lift` is
/// `x + u32::MAX`, which overflows (a panic in this debug build) as written
/// and wraps to `x - 1` translated, as on the GPU.
#[test]
fn lift_and_project_are_the_translated_bodies() {
    use scan::maps::Maps;
    assert_eq!(<WrapAround as Maps<Add<u32>>>::lift(1), 0);
    assert_eq!(<WrapAround as Maps<Add<u32>>>::lift(0), u32::MAX);
    let x = [5u32, 0, 7];
    let mut got = [0u32; 3];
    Cpu::new().scan_mapped::<Add<u32>, WrapAround, _>(&x[..], &mut got, ScanSpec::inclusive()).unwrap();
    assert_eq!(got, [4, 4u32.wrapping_add(u32::MAX), 9]);
}

/// The CUDA source holds the translated bodies (the printer's spelling).
#[test]
fn the_cuda_source_declares_both_functions_with_their_bodies() {
    let src = <Ema as CudaMaps<LinearRecurrence<f32>>>::cuda_source();
    assert!(src.code.contains("static __device__ __forceinline__ Item lift(Input x)"), "{}", src.code);
    assert!(src.code.contains("static __device__ __forceinline__ Output project(Item x)"), "{}", src.code);
    assert!(src.code.contains("scan_mul(scan_sub(1.0f, v_alpha), v_value)"), "{}", src.code);
    assert!(src.code.contains("return x.f1;"), "{}", src.code);
    assert!(src.name.contains("Ema"), "{}", src.name);
    let wrap = <WrapAround as CudaMaps<Add<u32>>>::cuda_source();
    assert!(wrap.code.contains("scan_add(x, 4294967295u)"), "{}", wrap.code);
    // A struct literal's scratch is not `x` (the input it reads), and a
    // field bound with a type annotation divides as that type.
    let mean = <WeightedMean as CudaMaps<WeightedSums>>::cuda_source();
    assert!(mean.code.contains("scan_made_.sum = scan_mul(x.f0, x.f1);"), "{}", mean.code);
    assert!(mean.code.contains("scan_div(v_sum, scan_add(v_weight, 1.0f))"), "{}", mean.code);
    // `^` and `!` on bool fields the maps cannot see: the prelude's bool
    // overloads (C++'s `bool ^ bool` is an int, whose `~` is never false).
    let uniform = <Uniform as CudaMaps<SeenSoFar>>::cuda_source();
    assert!(uniform.code.contains("auto v_mixed = scan_xor(x.any, x.all);"), "{}", uniform.code);
    assert!(uniform.code.contains("scan_and(scan_not(v_mixed), v_small)"), "{}", uniform.code);
    assert!(uniform.code.contains("auto v_small = scan_and("), "{}", uniform.code);
}

/// A struct item built by a struct literal in `lift` (its fields read the
/// input), and float fields divided through annotated bindings, on the CPU
/// against the reference; small integers and weights of 1 or 2 keep every
/// partial sum exact.
#[test]
fn a_struct_literal_lift_and_annotated_fields_run_as_written() {
    let mut rng = Rng::fresh("macro maps struct literal");
    for n in [1, 2, 1000, 100_003] {
        let x: Vec<f32> = (0..n).map(|_| rng.below(17) as f32 - 8.0).collect();
        let w: Vec<f32> = (0..n).map(|_| 1.0 + rng.below(2) as f32).collect();
        for spec in ScanSpec::ALL {
            let mut got = vec![f32::NAN; n];
            Cpu::new().scan_mapped::<WeightedSums, WeightedMean, _>((&x[..], &w[..]), &mut got, spec).unwrap();
            let want = reference::<WeightedSums, WeightedMean, _>((&x[..], &w[..]), spec).unwrap();
            assert!(got == want, "n {n}, {spec:?}");
            let v: Vec<u32> = (0..n).map(|_| rng.below(8) as u32).collect();
            let mut got = vec![u32::MAX; n];
            Cpu::new().scan_mapped::<SeenSoFar, Uniform, _>(&v[..], &mut got, spec).unwrap();
            assert!(got == reference::<SeenSoFar, Uniform, _>(&v[..], spec).unwrap(), "uniform, n {n}, {spec:?}");
        }
    }
}

/// The generated maps compile with the single-pass kernel (sm_90 CUBINs),
/// whose kernels keep to their registers (no stack frame, no spills).
#[test]
#[ignore = "needs libnvrtc"]
fn declared_maps_compile_with_the_single_pass_kernel() {
    use scan::cuda::{ptxas_report_mapped as report, DeviceBuffer, Tuning};
    type B = DeviceBuffer<f32>;
    for t in [Tuning::default(), Tuning::default().staged_maps(true)] {
        let reports = [
            ("Ema", report::<LinearRecurrence<f32>, Ema, (B, B)>("sm_90", t).unwrap()),
            ("GatedInput", report::<LinearRecurrence<f32>, GatedInput, (B, B, B)>("sm_90", t).unwrap()),
            ("SumInF64", report::<Add<f64>, SumInF64, B>("sm_90", t).unwrap()),
            ("Alternate", report::<LinearRecurrence<f32>, Alternate, B>("sm_90", t).unwrap()),
            ("WrapAround", report::<Add<u32>, WrapAround, DeviceBuffer<u32>>("sm_90", t).unwrap()),
            ("WeightedMean", report::<WeightedSums, WeightedMean, (B, B)>("sm_90", t).unwrap()),
            ("Uniform", report::<SeenSoFar, Uniform, DeviceBuffer<u32>>("sm_90", t).unwrap()),
        ];
        for (what, report) in reports {
            assert!(report.contains("Function properties for single_pass_mapped"), "{what}: no ptxas report");
            let spills = scan_testing::kernels_that_spill(&report, "single_pass_mapped");
            assert!(spills.is_empty(), "{what} ({t:?}): {spills:?}");
        }
    }
}
