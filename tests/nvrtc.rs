//! Every operator of the workspace (built-ins, the `op_*` examples, the
//! operators of the tests) through NVRTC, twice:
//!
//! * its whole scan module, the real kernel templates instantiated for it
//!   (`scan::cuda::compile_for_arch`, as the backend builds it), to an sm_90
//!   CUBIN;
//! * its generated source alone, with a small probe kernel that calls
//!   `identity` and `combine`, to compute_90 PTX: one program per operator,
//!   then all of them in one program (the declarations are guarded).
//!
//! Needs libnvrtc, not a GPU: `pip install --user nvidia-cuda-nvrtc-cu12 &&
//! cargo test --test nvrtc -- --ignored` (found without `LD_LIBRARY_PATH`).
//! A missing libnvrtc is a failure, never a silent pass.

mod macro_ops;

// The operators of the `op_*` examples (their `main`s go unused here).
#[allow(dead_code)]
#[path = "../examples/op_linear_recurrence.rs"]
mod op_linear_recurrence;
#[allow(dead_code)]
#[path = "../examples/op_logaddexp.rs"]
mod op_logaddexp;
#[allow(dead_code)]
#[path = "../examples/op_matmul2x2.rs"]
mod op_matmul2x2;
#[allow(dead_code)]
#[path = "../examples/op_segmented_sum.rs"]
mod op_segmented_sum;

use cudarc::nvrtc::{compile_ptx_with_opts, CompileError, CompileOptions};
use macro_ops::EachOp;
use scan::ops::*;
use scan::{CudaOp, CudaSource};

/// Calls `f.op::<Op>()` for every operator of the workspace: the built-ins at
/// every type they take, the operators of the tests and of the examples.
fn each_op(f: &mut impl EachOp) {
    macro_rules! each {
        ($($op:ident: $($t:ty),*;)*) => {$($(f.op::<$op<$t>>();)*)*};
    }
    each! {
        Add: i32, u32, i64, u64, f32, f64;
        Mul: i32, u32, i64, u64, f32, f64;
        Max: i32, u32, i64, u64, f32, f64;
        Min: i32, u32, i64, u64, f32, f64;
        And: i32, u32, i64, u64;
        Or: i32, u32, i64, u64;
        Xor: i32, u32, i64, u64;
        LinearRecurrence: f32, f64;
        MatMul2x2: i32, u32, i64, u64, f32, f64;
        SegmentedAdd: i32, u32, i64, u64, f32, f64;
        BestPrefix: f32, f64;
    }
    macro_ops::each_op(f);
    f.op::<op_linear_recurrence::LinearRecurrence>();
    f.op::<op_logaddexp::LogAddExp>();
    f.op::<op_matmul2x2::MatMul2x2>();
    f.op::<op_segmented_sum::SegmentedSum>();
}

fn everything() -> Vec<CudaSource> {
    struct Sources(Vec<CudaSource>);
    impl EachOp for Sources {
        fn op<Op: CudaOp>(&mut self) {
            self.0.push(Op::cuda_source());
        }
    }
    let mut v = Sources(Vec::new());
    each_op(&mut v);
    v.0
}

const PROBE: &str = r#"
#ifndef SCAN_PROBE
#define SCAN_PROBE
template <class Op>
__device__ void scan_probe(typename Op::Item* out, const typename Op::Item* in, unsigned n) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    typename Op::Item prev = i > 0 ? in[i - 1] : Op::identity();
    out[i] = Op::combine(Op::combine(Op::identity(), prev), in[i]);
  }
}
#endif
"#;

fn kernel(op: &CudaSource) -> String {
    let n = &op.name;
    format!(
        "{}{PROBE}extern \"C\" __global__ void probe_{n}({n}::Item* out, const {n}::Item* in, unsigned n) {{ scan_probe<{n}>(out, in, n); }}\n",
        op.code
    )
}

fn compile_ptx(src: &str) -> Result<(), String> {
    let opts = CompileOptions { arch: Some("compute_90"), ..Default::default() };
    match compile_ptx_with_opts(src, opts) {
        Ok(ptx) if ptx.to_src().contains(".entry") => Ok(()),
        Ok(_) => Err("NVRTC produced PTX without a kernel entry".to_string()),
        Err(CompileError::CompileError { log, .. }) => Err(log.to_string_lossy().into_owned()),
        Err(e) => Err(format!("{e:?}")),
    }
}

fn require_nvrtc() {
    // cudarc's loader panics on first use when libnvrtc is absent, so ask
    // first; scan_cuda's check also looks beyond the loader's path (a CUDA
    // toolkit folder, a pip wheel) and loads what it finds.
    if let Err(e) = scan::cuda::nvrtc_version() {
        panic!("libnvrtc cannot be loaded: {e}");
    }
}

/// Compiles every operator's module, instantiated with `tuning`, to an
/// sm_90 CUBIN, and fails with every error if any does not compile.
fn every_module_compiles(tuning: scan::cuda::Tuning, what: &str) {
    require_nvrtc();
    struct Modules {
        tuning: scan::cuda::Tuning,
        compiled: usize,
        bytes: usize,
        failures: Vec<String>,
    }
    impl EachOp for Modules {
        fn op<Op: CudaOp>(&mut self) {
            match scan::cuda::compile_with::<Op>("sm_90", self.tuning) {
                Ok(cubin) if !cubin.is_empty() => {
                    self.compiled += 1;
                    self.bytes += cubin.len();
                }
                Ok(_) => self.failures.push(format!("{}: NVRTC returned an empty CUBIN", Op::cuda_source().name)),
                Err(e) => self.failures.push(format!("{}: {e}", Op::cuda_source().name)),
            }
        }
    }
    let mut m = Modules { tuning, compiled: 0, bytes: 0, failures: Vec::new() };
    each_op(&mut m);
    assert!(
        m.failures.is_empty(),
        "{} of {} operator modules ({what}) failed to compile:\n{}",
        m.failures.len(),
        m.compiled + m.failures.len(),
        m.failures.join("\n")
    );
    assert_eq!(m.compiled, everything().len());
    eprintln!("{} operator modules ({what}) compiled to sm_90 CUBINs ({} bytes in all)", m.compiled, m.bytes);
}

/// The module the backend loads (operator + `kernels/*.cu` + the `extern "C"`
/// instantiations) compiles to an sm_90 CUBIN for every operator.
#[test]
#[ignore = "needs libnvrtc"]
fn every_operator_module_compiles_to_an_sm_90_cubin() {
    every_module_compiles(scan::cuda::Tuning::default(), "default policies");
}

/// The same with the single-pass kernel's other load schedule (early loads
/// where the default has them off, and the other way round) and the
/// deterministic look-back.
#[test]
#[ignore = "needs libnvrtc"]
fn every_operator_module_compiles_with_the_other_load_schedule_and_a_deterministic_look_back() {
    let early = scan::cuda::SinglePassPolicy::for_item(4, 90).unwrap().early_loads;
    let tuning = scan::cuda::Tuning::default().early_loads(!early).deterministic(true);
    every_module_compiles(tuning, if early { "late loads, deterministic" } else { "early loads, deterministic" });
}

/// The generated source alone, in a probe kernel, compiles to compute_90 PTX
/// with a kernel entry for every operator.
#[test]
#[ignore = "needs libnvrtc"]
fn every_operator_source_compiles_to_compute_90_ptx() {
    require_nvrtc();
    let ops = everything();
    let mut failures = Vec::new();
    for op in &ops {
        let src = kernel(op);
        if let Err(log) = compile_ptx(&src) {
            failures.push(format!("== {} ==\n{log}\n-- source --\n{src}", op.name));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} operators failed to compile:\n{}",
        failures.len(),
        ops.len(),
        failures.join("\n")
    );
    eprintln!("{} operator sources compiled to compute_90 PTX", ops.len());
}

/// Declarations are guarded, so several operators (sharing the prelude and
/// item structs) can live in one NVRTC program, as in the backend's modules.
#[test]
#[ignore = "needs libnvrtc"]
fn all_operators_compile_together_in_one_program() {
    require_nvrtc();
    let all: String = everything().iter().map(kernel).collect();
    if let Err(log) = compile_ptx(&all) {
        panic!("{log}");
    }
}

/// Operator names are unique per instantiation (one struct per name in a module).
#[test]
fn operator_names_are_unique() {
    let ops = everything();
    let mut names: Vec<&str> = ops.iter().map(|o| o.name.as_str()).collect();
    names.sort();
    let before = names.len();
    names.dedup();
    assert_eq!(before, names.len(), "duplicate operator names: {names:?}");
}

/// A source that is not valid C++ is reported with NVRTC's log, so the test
/// above would fail on a bad generated operator.
#[test]
#[ignore = "needs libnvrtc"]
fn broken_source_is_reported_with_the_log() {
    require_nvrtc();
    let bad = CudaSource { name: "Bad".into(), code: "struct Bad { typedef float Item; };".into() };
    let err = compile_ptx(&kernel(&bad)).expect_err("a source without identity/combine must not compile");
    assert!(err.contains("identity") || err.contains("combine"), "{err}");
}

/// The fused-maps module (kernels/maps.cuh) compiles for every built-in map,
/// from one, two and three arrays... as far as the built-ins read them: the
/// recurrence from `a` and `b` arrays (f32 and f64) and from one array of
/// pairs, bf16 and f16 widened into f32 sums and maxima, with the default
/// policy (grouped runs where the maps allow), the deterministic look-back,
/// staged loads (`Tuning::staged_maps`), item slots (`Tuning::narrow_slots(false)`,
/// `Tuning::grouped_runs(false)`), and the narrow-slot maps on
/// other tile shapes; the kernels keep to their registers (ptxas reports no stack frame and
/// no spills: the early loads hold a run's inputs across a store).
#[test]
#[ignore = "needs libnvrtc"]
fn fused_maps_modules_compile_to_sm_90_cubins() {
    use scan::cuda::{ptxas_report_mapped as report, DeviceBuffer, Tuning};
    use scan::maps::{bf16, f16, Recurrence, Widen, WidenNarrow};
    require_nvrtc();
    type Two<T> = (DeviceBuffer<T>, DeviceBuffer<T>);
    let mut failures = Vec::new();
    // One module's ptxas report: present, and no fused kernel spills.
    let mut check = |what: &str, tuning: Tuning, r: scan::Result<String>| match r {
        Ok(report) if !report.contains("Function properties for single_pass_mapped") => {
            failures.push(format!("{what} ({tuning:?}): no ptxas report of the fused kernels"))
        }
        Ok(report) => {
            let spills = scan_testing::kernels_that_spill(&report, "single_pass_mapped");
            failures.extend(spills.into_iter().map(|s| format!("{what} ({tuning:?}): {s}")));
        }
        Err(e) => failures.push(format!("{what} ({tuning:?}): {e}")),
    };
    for tuning in [
        Tuning::default(),
        Tuning::default().deterministic(true),
        Tuning::default().staged_maps(true),
        Tuning::default().narrow_slots(false),
        Tuning::default().grouped_runs(false),
    ] {
        let results = [
            ("recurrence f32, a[] b[]", report::<LinearRecurrence<f32>, Recurrence, Two<f32>>("sm_90", tuning)),
            ("recurrence f64, a[] b[]", report::<LinearRecurrence<f64>, Recurrence, Two<f64>>("sm_90", tuning)),
            (
                "recurrence f32, one array of pairs",
                report::<LinearRecurrence<f32>, Recurrence, DeviceBuffer<(f32, f32)>>("sm_90", tuning),
            ),
            ("bf16 -> f32 sum", report::<Add<f32>, Widen<bf16>, DeviceBuffer<bf16>>("sm_90", tuning)),
            ("bf16 -> f32 -> bf16 sum", report::<Add<f32>, WidenNarrow<bf16>, DeviceBuffer<bf16>>("sm_90", tuning)),
            ("f16 -> f32 -> f16 max", report::<Max<f32>, WidenNarrow<f16>, DeviceBuffer<f16>>("sm_90", tuning)),
        ];
        for (what, r) in results {
            check(what, tuning, r);
        }
    }
    // Narrow slots (kernels/narrow.cuh) on other shapes: runs of 8 (no
    // padding: one vector per run), 16 and 64, three stages, no early loads
    // (the load path of whole segments).
    for tuning in [
        Tuning::default().items_per_thread(8),
        Tuning::default().items_per_thread(16).stages(3),
        Tuning::default().items_per_thread(64).blocks_per_sm(2),
        Tuning::default().stages(3),
        Tuning::default().early_loads(false),
    ] {
        let results = [
            ("bf16 -> f32 -> bf16 sum", report::<Add<f32>, WidenNarrow<bf16>, DeviceBuffer<bf16>>("sm_90", tuning)),
            ("f16 -> f32 -> f16 max", report::<Max<f32>, WidenNarrow<f16>, DeviceBuffer<f16>>("sm_90", tuning)),
        ];
        for (what, r) in results {
            check(what, tuning, r);
        }
    }
    // Rows through the maps (both kernels: rows as segments, rows of whole
    // tiles), default and the deterministic look-back.
    for tuning in [Tuning::default(), Tuning::default().deterministic(true)] {
        use scan::cuda::ptxas_report_mapped_rows as rows;
        let results = [
            ("rows, recurrence f32, a[] b[]", rows::<LinearRecurrence<f32>, Recurrence, Two<f32>>("sm_90", tuning)),
            ("rows, recurrence f64, a[] b[]", rows::<LinearRecurrence<f64>, Recurrence, Two<f64>>("sm_90", tuning)),
            ("rows, bf16 -> f32 -> bf16 sum", rows::<Add<f32>, WidenNarrow<bf16>, DeviceBuffer<bf16>>("sm_90", tuning)),
        ];
        for (what, r) in results {
            match r {
                Ok(report)
                    if !report.contains("Function properties for single_pass_mapped_rows")
                        || !report.contains("Function properties for single_pass_mapped_tile_rows") =>
                {
                    failures.push(format!("{what} ({tuning:?}): no ptxas report of the rows kernels"))
                }
                Ok(report) => {
                    let spills = scan_testing::kernels_that_spill(&report, "single_pass_mapped");
                    failures.extend(spills.into_iter().map(|s| format!("{what} ({tuning:?}): {s}")));
                }
                Err(e) => failures.push(format!("{what} ({tuning:?}): {e}")),
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
