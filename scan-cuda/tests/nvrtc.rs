//! NVRTC-only checks (no GPU needed): every kernel template instantiates for
//! every operator shape, and a compile failure is an `Error::Compile` with the
//! log and the source.
//!
//! `pip install --user nvidia-cuda-nvrtc-cu12 && cargo test -p scan-cuda --test nvrtc -- --ignored`
//! (libnvrtc is found in the wheel without `LD_LIBRARY_PATH`).

mod support;

use scan_core::ops::*;
use scan_core::{CudaOp, CudaSource, Error, ScanOp};
use scan_cuda::{StatusLayout, Tuning};
use support::ops::*;
use support::user_ops::{AffineI32Counted, Compose, CountAndSum, QuaternionProduct};

/// The architectures the kernels must build for: Hopper (the H200) and one
/// older generation, so that nothing Hopper-only slips in unnoticed.
const ARCHS: [&str; 2] = ["sm_90", "sm_80"];

fn assert_compiles<Op: CudaOp>() {
    for arch in ARCHS {
        match scan_cuda::compile_for_arch::<Op>(arch) {
            Ok(cubin) => assert!(cubin.starts_with(b"\x7fELF"), "{}: not an ELF cubin", std::any::type_name::<Op>()),
            Err(e) => panic!("{} for {arch}: {e}", std::any::type_name::<Op>()),
        }
    }
}

macro_rules! for_scalars {
    ($check:ident, [$($op:ident),*], $types:tt) => {$( for_scalars!(@one $check, $op, $types); )*};
    (@one $check:ident, $op:ident, [$($t:ty),*]) => {$( $check::<$op<$t>>(); )*};
}

#[test]
#[ignore = "needs libnvrtc"]
fn every_template_instantiates_for_every_built_in_operator() {
    for_scalars!(assert_compiles, [Add, Mul, Max, Min, MatMul2x2, SegmentedAdd], [i32, u32, i64, u64, f32, f64]);
    for_scalars!(assert_compiles, [And, Or, Xor], [i32, u32, i64, u64]);
    for_scalars!(assert_compiles, [LinearRecurrence, BestPrefix], [f32, f64]);
}

/// bf16 and f16 items (2 bytes: the kernels move them as 16-bit words) and
/// pairs of them, through the prelude's half-precision helpers.
#[test]
#[ignore = "needs libnvrtc"]
fn every_template_instantiates_for_half_precision_items() {
    use scan_core::maps::{bf16, f16};
    // (Each module of 2-byte items takes NVRTC about 8 s here: a few.)
    for_scalars!(assert_compiles, [Add, Max, LinearRecurrence], [bf16, f16]);
    scan_cuda::compile_segmented_for_arch::<Add<bf16>>("sm_90").unwrap_or_else(|e| panic!("rows, bf16: {e}"));
}

#[test]
#[ignore = "needs libnvrtc"]
fn every_template_instantiates_for_user_tuple_and_struct_operators() {
    assert_compiles::<CountAndSum>();
    assert_compiles::<Compose>();
    assert_compiles::<AffineI32Counted>();
    assert_compiles::<QuaternionProduct>();
}

#[test]
#[ignore = "needs libnvrtc"]
fn every_template_instantiates_for_every_hand_written_test_operator() {
    assert_compiles::<AddU32>();
    assert_compiles::<AddI64>();
    assert_compiles::<AddF32>();
    assert_compiles::<AddF64>();
    assert_compiles::<MulF32>();
    assert_compiles::<MaxF32>();
    assert_compiles::<MinI32>();
    assert_compiles::<LinRecF32>();
    assert_compiles::<LinRecF64>();
    assert_compiles::<MatMulI32>();
    assert_compiles::<MatMulF32>();
    assert_compiles::<StatsOp>();
    assert_compiles::<SegSumU64>();
    assert_compiles::<AddF64x8>();
}

/// The rows and segments kernels (separate modules, compiled on first use)
/// for one operator of every item shape: 4, 8, 16, 32 and 64 bytes, and a
/// generated struct; sm_90 only (each costs several seconds of NVRTC).
#[test]
#[ignore = "needs libnvrtc"]
fn the_rows_and_segments_kernels_build_for_every_item_shape() {
    fn check_with<Op: CudaOp>(tuning: scan_cuda::Tuning) {
        let cubins = scan_cuda::compile_segmented_with::<Op>("sm_90", tuning)
            .unwrap_or_else(|e| panic!("{}, {tuning:?}: {e}", std::any::type_name::<Op>()));
        // Flags and offsets of 4-byte items carry a fallback with shorter runs.
        let fallbacks = if std::mem::size_of::<Op::Item>() == 4 && !tuning.overrides_shape() { 2 } else { 0 };
        assert_eq!(
            cubins.len(),
            3 + fallbacks,
            "{}: rows, flagged segments and offsets modules, and their fallbacks",
            std::any::type_name::<Op>()
        );
        assert!(cubins.iter().all(|c| c.starts_with(b"\x7fELF")));
    }
    fn check<Op: CudaOp>() {
        check_with::<Op>(scan_cuda::Tuning::default());
    }
    // The other load schedule of the single-pass kernel (early loads).
    let early = scan_cuda::SinglePassPolicy::for_item(4, 90).unwrap().early_loads;
    check_with::<Add<f32>>(scan_cuda::Tuning::default().early_loads(!early).deterministic(true));
    check_with::<QuaternionProduct>(scan_cuda::Tuning::default().early_loads(!early));
    check::<Add<f32>>();
    check::<LinearRecurrence<f32>>();
    check::<LinearRecurrence<f64>>();
    check::<QuaternionProduct>();
    check::<AddF64x8>();
    check::<CountAndSum>();
}

/// The rows and segment kernels in the shapes that run on the H200 (sm_90)
/// spill nothing: the deterministic rows shape of 4-byte items, the segment
/// kernels' 32-item runs where they fit (f32) and their fallback where they
/// do not (the bf16 recurrence, whose long runs must spill for the fallback
/// to be what runs: its flags and offsets kernels), and 16 f64 pairs per
/// thread; rows of one tile (a block each) among them.
#[test]
#[ignore = "needs libnvrtc"]
fn the_segmented_kernels_that_run_do_not_spill() {
    fn check<Op: CudaOp>() -> String {
        let name = std::any::type_name::<Op>();
        let report = scan_cuda::ptxas_report_segmented_with::<Op>("sm_90", Tuning::default())
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        for kernel in [
            "single_pass_tile_rows_forward_inclusive",
            "single_pass_row_tiles_reverse_exclusive",
            "single_pass_bits_reverse_exclusive",
        ] {
            assert!(report.contains(kernel), "{name}: no {kernel} in\n{report}");
        }
        let spills = scan_testing::kernels_that_spill(&report, "single_pass");
        assert!(spills.is_empty(), "{name}: {}", spills.join("\n"));
        eprintln!("{name}:\n{report}");
        report
    }
    check::<Add<f32>>();
    check::<LinearRecurrence<f32>>();
    check::<LinearRecurrence<f64>>();
    check::<MatMul2x2<i32>>();
    // The bf16 recurrence: its long runs, forced by a Tuning (no fallback
    // then), spill; the build that runs by default (the fallback) does not.
    type LrBf16 = LinearRecurrence<scan_core::maps::bf16>;
    let long = scan_cuda::SinglePassPolicy::for_item(4, 90).unwrap().for_segment_heads();
    let forced = Tuning::default().items_per_thread(long.items_per_thread).early_loads(long.early_loads);
    let report = scan_cuda::ptxas_report_segmented_with::<LrBf16>("sm_90", forced).unwrap();
    assert!(
        !scan_testing::kernels_that_spill(&report, "single_pass_bits").is_empty(),
        "the bf16 recurrence's long runs no longer spill: the fallback is not exercised"
    );
    let report = scan_cuda::ptxas_report_segmented_with::<LrBf16>("sm_90", Tuning::default()).unwrap();
    for kernels in ["single_pass_bits", "single_pass_flags"] {
        let spills = scan_testing::kernels_that_spill(&report, kernels);
        assert!(spills.is_empty(), "the bf16 recurrence's fallback: {}", spills.join("\n"));
    }
    // (Its rows kernel, `single_pass_rows_*_exclusive`, spills 16 bytes at
    // 16-item runs: DEVELOPERS.md, not covered here.)
}

/// Rows of one tile (kernels/row_tiles.cuh, a block per row, launch bounds
/// of 1024 threads per SM for items of up to 8 bytes whose run is at most
/// 128 bytes) spill nothing:
/// every item shape of the tests in its default shape, and f32 in the tile
/// shapes the rows bench times (`SCAN_BENCH_ROWS_SWEEP`).
#[test]
#[ignore = "needs libnvrtc"]
fn rows_of_one_tile_spill_nothing_in_any_shape_that_runs() {
    fn check<Op: CudaOp>(tuning: Tuning) {
        let name = std::any::type_name::<Op>();
        let report = scan_cuda::ptxas_report_segmented_with::<Op>("sm_90", tuning)
            .unwrap_or_else(|e| panic!("{name}, {tuning:?}: {e}"));
        assert!(report.contains("single_pass_row_tiles_reverse_exclusive"), "{name}: no row tiles kernel");
        let spills = scan_testing::kernels_that_spill(&report, "single_pass_row_tiles");
        assert!(spills.is_empty(), "{name}, {tuning:?}: {}", spills.join("\n"));
    }
    check::<AddF64x8>(Tuning::default());
    check::<CountAndSum>(Tuning::default());
    check::<QuaternionProduct>(Tuning::default());
    check::<LinearRecurrence<scan_core::maps::bf16>>(Tuning::default());
    for (threads, items) in [(128, 32), (512, 8)] {
        check::<Add<f32>>(Tuning::default().threads(threads).items_per_thread(items));
    }
}

/// The stream-compaction kernels (one module for every item type), for both
/// architectures.
#[test]
#[ignore = "needs libnvrtc"]
fn the_compaction_kernels_build() {
    for arch in ARCHS {
        let cubin = scan_cuda::compile_compact_for_arch(arch).unwrap_or_else(|e| panic!("{arch}: {e}"));
        assert!(cubin.starts_with(b"\x7fELF"), "{arch}: not an ELF cubin");
    }
}

/// The kernels widening bf16/f16 to f32 on the device (kernels/widen.cuh),
/// for both architectures.
#[test]
#[ignore = "needs libnvrtc"]
fn the_widening_kernels_build() {
    for arch in ARCHS {
        let cubin = scan_cuda::compile_widen_for_arch(arch).unwrap_or_else(|e| panic!("{arch}: {e}"));
        assert!(cubin.starts_with(b"\x7fELF"), "{arch}: not an ELF cubin");
    }
}

/// The joins of sharded scans (kernels/shard.cuh, kernels/reduce.cuh), for
/// scalars, 16- and 32-byte non-commutative items, a user's struct and an
/// item too large for the single-pass kernels, without spills on sm_90.
#[test]
#[ignore = "needs libnvrtc"]
fn the_shard_kernels_build_for_every_item_shape() {
    fn check<Op: CudaOp>() {
        let name = std::any::type_name::<Op>();
        for arch in ARCHS {
            let cubin =
                scan_cuda::compile_shard_for_arch::<Op>(arch).unwrap_or_else(|e| panic!("{name} for {arch}: {e}"));
            assert!(cubin.starts_with(b"\x7fELF"));
        }
        let report = scan_cuda::ptxas_report_shard::<Op>("sm_90").unwrap();
        let spills = scan_testing::kernels_that_spill(&report, "shard");
        assert!(spills.is_empty(), "{name}: {}", spills.join("\n"));
    }
    check::<Add<f32>>();
    check::<Add<u64>>();
    check::<MatMul2x2<i32>>();
    check::<MatMul2x2<i64>>();
    check::<AffineI32Counted>();
    check::<QuaternionProduct>();
    check::<AddU64x20>();
    check::<Add<scan_core::maps::bf16>>();
}

/// The selective-scan kernel (one module for every shape), for both
/// architectures.
#[test]
#[ignore = "needs libnvrtc"]
fn the_selective_scan_kernel_builds() {
    for arch in ARCHS {
        let cubin = scan_cuda::compile_selective_for_arch(arch).unwrap_or_else(|e| panic!("{arch}: {e}"));
        assert!(cubin.starts_with(b"\x7fELF"), "{arch}: not an ELF cubin");
    }
}

/// The selective scan's backward kernels, for both architectures; on sm_90
/// (the H200) ptxas reports no spill in any of them (a spill in the
/// gradient kernel's loop over a run's steps costs more than the loop),
/// except a few values of the tile gradient kernel under its 3-block
/// register bound: at most 64 bytes of spill stores. (Its SASS, read on
/// 2026-12-03: the spilled values are per-tile ones, loaded once a tile
/// before and after the barriers, none inside the step loops; unbounded,
/// ptxas takes 224 registers, 2 blocks per SM.)
#[test]
#[ignore = "needs libnvrtc"]
fn the_selective_backward_kernels_build_without_spills() {
    for arch in ARCHS {
        let cubin = scan_cuda::compile_selective_backward_for_arch(arch).unwrap_or_else(|e| panic!("{arch}: {e}"));
        assert!(cubin.starts_with(b"\x7fELF"), "{arch}: not an ELF cubin");
    }
    let report = scan_cuda::ptxas_report_selective_backward("sm_90").unwrap();
    for kernel in [
        "selective_backward_grads_16_1",
        "selective_backward_carries_128",
        "selective_backward_carries_32",
        "selective_backward_tiles_4",
        "selective_backward_tiles_2",
        "selective_checkpoints_tiles_4",
        "selective_checkpoints_tiles_2",
    ] {
        assert!(report.contains(&format!("Function properties for {kernel}")), "{kernel}: {report}");
    }
    let mut spills = scan_testing::kernels_that_spill(&report, "selective_backward");
    spills.extend(scan_testing::kernels_that_spill(&report, "selective_checkpoints"));
    spills.retain(|line| !(line.starts_with("selective_backward_tiles_") && spill_store_bytes(line) <= 64));
    assert!(spills.is_empty(), "{}", spills.join("\n"));
}

/// The spill stores of a ptxas line ("... 12 bytes spill stores, ...").
fn spill_store_bytes(line: &str) -> u64 {
    line.split(',')
        .find(|part| part.contains("spill stores"))
        .and_then(|part| part.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(u64::MAX)
}

/// Needs no NVRTC: the source is assembled on the host.
#[test]
fn the_module_source_holds_the_operator_both_kernels_and_layout_checks() {
    let code = scan_cuda::module_source::<LinRecF32>().unwrap();
    for needle in [
        "struct LinRecF32",
        "blelloch_scan_tiles_forward_inclusive(",
        "blelloch_scan_tiles_reverse_exclusive(",
        "blelloch_add_prefixes_reverse(",
        "single_pass_forward_inclusive(",
        "single_pass_reverse_exclusive(",
        "scan::PackedStatus<LinRecF32::Item>",
        "static_assert(sizeof(LinRecF32::Item) == 8",
        // Pass 1 reads a separate input; in place the host passes one address
        // twice, so neither pointer may be `__restrict__`.
        "const LinRecF32::Item* src, LinRecF32::Item* dst, unsigned long long len",
    ] {
        assert!(code.contains(needle), "missing {needle:?} in\n{code}");
    }
    assert!(!code.contains("__restrict__"), "in-place scans alias src and dst:\n{code}");
}

/// Declares an item of the wrong size: the layout check must stop it.
struct WrongSize;
impl ScanOp for WrongSize {
    type Item = u64;
    fn identity() -> u64 {
        0
    }
    fn combine(l: u64, r: u64) -> u64 {
        l + r
    }
}
impl CudaOp for WrongSize {
    fn cuda_source() -> CudaSource {
        CudaSource {
            name: "WrongSize".into(),
            code: "struct WrongSize { typedef unsigned int Item;
  static __device__ __forceinline__ Item identity() { return 0; }
  static __device__ __forceinline__ Item combine(Item l, Item r) { return l + r; } };"
                .into(),
        }
    }
}

/// Calls a function that does not exist in CUDA.
struct Broken;
impl ScanOp for Broken {
    type Item = f32;
    fn identity() -> f32 {
        0.0
    }
    fn combine(l: f32, r: f32) -> f32 {
        l + r
    }
}
impl CudaOp for Broken {
    fn cuda_source() -> CudaSource {
        CudaSource {
            name: "Broken".into(),
            code: "struct Broken { typedef float Item;
  static __device__ __forceinline__ Item identity() { return 0.0f; }
  static __device__ __forceinline__ Item combine(Item l, Item r) { return no_such_function(l, r); } };"
                .into(),
        }
    }
}

/// The monoid on `()`: zero-sized items, which no kernel can move.
struct Unit;
impl ScanOp for Unit {
    type Item = ();
    fn identity() {}
    fn combine((): (), (): ()) {}
}
impl CudaOp for Unit {
    fn cuda_source() -> CudaSource {
        CudaSource {
            name: "Unit".into(),
            code: "struct Unit { struct Item {};
  static __device__ __forceinline__ Item identity() { return Item{}; }
  static __device__ __forceinline__ Item combine(Item, Item) { return Item{}; } };"
                .into(),
        }
    }
}

/// Zero-sized items are refused with an error saying so before any source
/// is built (no NVRTC needed): the shard kernels' source divided by the
/// item's size and panicked (found by the thirty-fifth session's review),
/// and the scan modules' failed in NVRTC on a layout check that did not
/// name the cause.
#[test]
fn zero_sized_items_are_refused_before_any_source_is_built() {
    let refused = |what: &str, result: scan_core::Result<()>| match result {
        Err(Error::Unsupported(message)) => {
            assert!(message.contains("zero-sized") && message.contains("Unit"), "{what}: {message}")
        }
        other => panic!("{what}: expected Error::Unsupported, got {other:?}"),
    };
    refused("module_source", scan_cuda::module_source::<Unit>().map(drop));
    refused("compile_for_arch", scan_cuda::compile_for_arch::<Unit>("sm_90").map(drop));
    refused("compile_segmented_for_arch", scan_cuda::compile_segmented_for_arch::<Unit>("sm_90").map(drop));
    refused("compile_shard_for_arch", scan_cuda::compile_shard_for_arch::<Unit>("sm_90").map(drop));
    refused("ptxas_report_shard", scan_cuda::ptxas_report_shard::<Unit>("sm_90").map(drop));
}

/// An architecture that is not one (a NUL in it, no "sm_" prefix) is an
/// error saying so, from every compile helper, not a panic reported as a
/// missing NVRTC function.
#[test]
#[ignore = "needs libnvrtc"]
fn a_malformed_architecture_is_an_error_naming_it() {
    for arch in ["sm_90\0", "90", ""] {
        let results = [
            scan_cuda::compile_for_arch::<Add<f32>>(arch).map(|_| ()),
            scan_cuda::compile_compact_for_arch(arch).map(|_| ()),
            scan_cuda::compile_widen_for_arch(arch).map(|_| ()),
            scan_cuda::compile_selective_backward_for_arch(arch).map(|_| ()),
        ];
        for result in results {
            assert!(
                matches!(&result, Err(Error::Other(why)) if why.contains("not an architecture")),
                "{arch:?}: {result:?}"
            );
        }
    }
}

#[test]
#[ignore = "needs libnvrtc"]
fn a_compile_error_carries_the_nvrtc_log_and_the_source() {
    match scan_cuda::compile_for_arch::<Broken>("sm_90") {
        Err(Error::Compile { op, log, code }) => {
            assert_eq!(op, "Broken");
            assert!(log.contains("no_such_function"), "log: {log}");
            assert!(code.contains("struct Broken"), "code: {code}");
        }
        other => panic!("expected Error::Compile, got {other:?}"),
    }
}

#[test]
#[ignore = "needs libnvrtc"]
fn an_item_whose_cuda_layout_differs_from_rust_is_rejected_at_compile_time() {
    match scan_cuda::compile_for_arch::<WrongSize>("sm_90") {
        Err(Error::Compile { log, .. }) => assert!(log.contains("not 8 bytes like the Rust item"), "log: {log}"),
        other => panic!("expected Error::Compile, got {other:?}"),
    }
}

/// Every status layout and a few tile shapes the tests and the benchmark run
/// (`Tuning`), for items of 4, 8, 16 and 64 bytes, build for sm_90.
#[test]
#[ignore = "needs libnvrtc"]
fn the_single_pass_kernels_build_for_every_status_layout_and_tuned_shape() {
    fn build<Op: CudaOp>(tunings: &[Tuning]) {
        for &t in tunings {
            match scan_cuda::compile_with::<Op>("sm_90", t) {
                Ok(cubin) => assert!(cubin.starts_with(b"\x7fELF")),
                Err(e) => panic!("{} with {t:?}: {e}", std::any::type_name::<Op>()),
            }
        }
    }
    let split = Tuning::default().status(StatusLayout::Split);
    let shapes = [
        Tuning::default().threads(512).items_per_thread(16),
        Tuning::default().threads(256).items_per_thread(32),
        Tuning::default().threads(128).items_per_thread(24),
        Tuning::default().threads(992).items_per_thread(4),
        Tuning::default().threads(96).items_per_thread(3).lookback(2),
        Tuning::default().threads(128).items_per_thread(64).lookback(3),
        Tuning::default().threads(256).items_per_thread(32).lookback(1),
        Tuning::default().threads(256).items_per_thread(32).lookback(8),
        Tuning::default().threads(32).items_per_thread(1).stages(3),
        Tuning::default().threads(256).items_per_thread(16).stages(1),
    ];
    build::<AddF32>(&[split]);
    build::<AddF32>(&shapes);
    build::<LinRecF32>(&[split, Tuning::default().items_per_thread(16)]);
    build::<AddF64x8>(&[Tuning::default().threads(64).items_per_thread(2)]);
    // Lifted operators: a 4-byte item in an 8-byte pair, and a 16-byte one.
    build::<Segmented<Add<f32>>>(&[Tuning::default()]);
    build::<Segmented<MatMul2x2<i32>>>(&[Tuning::default(), split]);
    // The tagged layout: pieces of 8 bytes (4-, 12-, 16- and 64-byte items).
    let tagged = Tuning::default().status(StatusLayout::Tagged);
    build::<AddF32>(&[tagged]);
    build::<MatMulI32>(&[tagged, tagged.deterministic(true)]);
    build::<StatsOp>(&[tagged]);
    build::<AddF64x8>(&[Tuning::default().threads(64).items_per_thread(2).status(StatusLayout::Tagged)]);
    // The shapes tests/gpu_single_pass.rs runs (4-byte items, and 16-byte
    // items with a quarter of the items).
    for (threads, items, lookback, stages, split) in [
        (512, 16, 4, 2, false),
        (128, 24, 1, 1, false),
        (96, 3, 2, 3, false),
        (992, 4, 8, 2, true),
        (32, 1, 1, 4, false),
        (128, 64, 3, 1, false),
    ] {
        let tuning = |items: u32| {
            let t = Tuning::default().threads(threads).items_per_thread(items).lookback(lookback).stages(stages);
            if split {
                t.status(StatusLayout::Split)
            } else {
                t
            }
        };
        build::<AddU32>(&[tuning(items)]);
        build::<MatMulI32>(&[tuning((items / 4).max(1))]);
    }
    build::<StatsOp>(&[Tuning::default().threads(512).items_per_thread(3)]);
}

#[test]
fn a_tuning_the_kernels_cannot_run_is_an_error() {
    let packed_16_bytes = scan_cuda::compile_with::<StatsOp>("sm_90", Tuning::default().status(StatusLayout::Packed));
    assert!(matches!(packed_16_bytes, Err(Error::BadTuning(_))), "{packed_16_bytes:?}");
    let too_big = scan_cuda::compile_with::<AddF64x8>("sm_90", Tuning::default().threads(992).items_per_thread(8));
    assert!(matches!(too_big, Err(Error::BadTuning(_))), "{too_big:?}");
}
