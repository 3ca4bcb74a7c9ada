//! Every operator of the workspace (built-ins, the `op_*` examples, the
//! operators of the tests) has its generated CUDA compiled by NVRTC for sm_90,
//! together with a kernel that calls `identity` and `combine`.
//!
//! Needs libnvrtc, not a GPU:
//! `LD_LIBRARY_PATH=.../nvidia/cuda_nvrtc/lib cargo test --test nvrtc -- --ignored`.
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
use scan::ops::*;
use scan::{CudaOp, CudaSource};

fn builtins() -> Vec<CudaSource> {
    let mut v = Vec::new();
    macro_rules! each {
        ($($op:ident: $($t:ty),*;)*) => {$($(v.push(<$op<$t> as CudaOp>::cuda_source());)*)*};
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
    v
}

fn everything() -> Vec<CudaSource> {
    let mut v = builtins();
    v.extend(macro_ops::cuda_sources());
    v.push(op_linear_recurrence::LinearRecurrence::cuda_source());
    v.push(op_logaddexp::LogAddExp::cuda_source());
    v.push(op_matmul2x2::MatMul2x2::cuda_source());
    v.push(op_segmented_sum::SegmentedSum::cuda_source());
    v
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

fn compile(src: &str) -> Result<(), String> {
    let opts = CompileOptions { arch: Some("compute_90"), ..Default::default() };
    match compile_ptx_with_opts(src, opts) {
        Ok(ptx) if ptx.to_src().contains(".entry") => Ok(()),
        Ok(_) => Err("NVRTC produced PTX without a kernel entry".to_string()),
        Err(CompileError::CompileError { log, .. }) => Err(log.to_string_lossy().into_owned()),
        Err(e) => Err(format!("{e:?}")),
    }
}

fn require_nvrtc() {
    // SAFETY: only tries to dlopen libnvrtc; cudarc's loader panics on first
    // use when it is absent, so ask before any NVRTC call.
    let present = unsafe { cudarc::nvrtc::sys::is_culib_present() };
    assert!(
        present,
        "libnvrtc cannot be loaded: `pip install nvidia-cuda-nvrtc-cu12` and put its nvidia/cuda_nvrtc/lib on LD_LIBRARY_PATH"
    );
}

#[test]
#[ignore = "needs libnvrtc"]
fn every_operator_compiles_for_sm_90() {
    require_nvrtc();
    let ops = everything();
    let mut failures = Vec::new();
    for op in &ops {
        let src = kernel(op);
        if let Err(log) = compile(&src) {
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
    eprintln!("{} operators compiled for compute_90", ops.len());
}

/// Declarations are guarded, so several operators (sharing the prelude and
/// item structs) can live in one NVRTC program, as in the backend's modules.
#[test]
#[ignore = "needs libnvrtc"]
fn all_operators_compile_together_in_one_program() {
    require_nvrtc();
    let all: String = everything().iter().map(kernel).collect();
    if let Err(log) = compile(&all) {
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
    let err = compile(&kernel(&bad)).expect_err("a source without identity/combine must not compile");
    assert!(err.contains("identity") || err.contains("combine"), "{err}");
}
