//! CPU/GPU parity of generated operators: `combine` and `identity` evaluated
//! by the generated CUDA on a GPU give the same values as the generated Rust,
//! on random inputs mixed with the edge cases (integer overflow, NaN, ±0,
//! ±inf, subnormals) where the two could drift apart.
//!
//! Exact (same value, sign of zero, NaN-ness) for arithmetic, max/min, casts
//! and fma; `exp`/`ln_1p` (log-add-exp) within a stated ulp bound.
//! Needs a CUDA GPU (and libnvrtc); run with `--ignored`.

mod macro_ops;

#[allow(dead_code)]
#[path = "../examples/op_logaddexp.rs"]
mod op_logaddexp;

use std::fmt::Debug;

use cudarc::driver::{CudaContext, LaunchConfig, PushKernelArg};
use cudarc::nvrtc::{compile_ptx_with_opts, CompileOptions};
use macro_ops::*;
use scan::ops::{Add, BestPrefix, LinearRecurrence as Lr, MatMul2x2, Max, Min, Mul, SegmentedAdd};
use scan::CudaOp;
use scan_testing::Rng;

/// Random values with a good share of edge cases.
trait Sample: Sized {
    fn sample(rng: &mut Rng) -> Self;
}

macro_rules! int_sample {
    ($($t:ty),*) => {$(impl Sample for $t {
        fn sample(rng: &mut Rng) -> Self {
            match rng.below(4) {
                0 => [<$t>::MIN, <$t>::MAX, 0, 1, <$t>::MAX - 1][rng.below(5) as usize],
                1 => rng.below(100) as $t,
                _ => rng.next_u64() as $t,
            }
        }
    })*};
}
int_sample!(i32, u32, i64, u64);

macro_rules! float_sample {
    ($($t:ty),*) => {$(impl Sample for $t {
        fn sample(rng: &mut Rng) -> Self {
            match rng.below(5) {
                0 => [<$t>::NAN, <$t>::INFINITY, <$t>::NEG_INFINITY, 0.0, -0.0, <$t>::MAX, <$t>::MIN_POSITIVE,
                      <$t>::MIN_POSITIVE / 4.0, 1.0, -1.0][rng.below(10) as usize],
                1 => rng.range_f64(-1e30, 1e30) as $t,
                _ => rng.range_f64(-4.0, 4.0) as $t,
            }
        }
    })*};
}
float_sample!(f32, f64);

// Half-precision values: any bit pattern (subnormals and NaNs among them)
// half the time, else small values whose sums round.
macro_rules! half_sample {
    ($($t:ty),*) => {$(impl Sample for $t {
        fn sample(rng: &mut Rng) -> Self {
            if rng.below(2) == 0 {
                <$t>::from_bits(rng.next_u64() as u16)
            } else {
                <$t>::from_f64(rng.range_f64(-4.0, 4.0))
            }
        }
    })*};
}
half_sample!(scan::maps::bf16, scan::maps::f16);

impl Sample for bool {
    fn sample(rng: &mut Rng) -> Self {
        rng.below(2) == 1
    }
}
impl<A: Sample, B: Sample> Sample for (A, B) {
    fn sample(rng: &mut Rng) -> Self {
        (A::sample(rng), B::sample(rng))
    }
}
impl<T: Sample, const N: usize> Sample for [T; N] {
    fn sample(rng: &mut Rng) -> Self {
        std::array::from_fn(|_| T::sample(rng))
    }
}
impl Sample for Tally {
    fn sample(rng: &mut Rng) -> Self {
        Tally { sum: f64::sample(rng), count: u32::sample(rng) }
    }
}

impl Sample for Headed {
    fn sample(rng: &mut Rng) -> Self {
        Headed { value: i64::sample(rng), head: bool::sample(rng) }
    }
}

impl Sample for Triple {
    fn sample(rng: &mut Rng) -> Self {
        Triple { x: i32::sample(rng), y: i32::sample(rng), z: i32::sample(rng) }
    }
}

/// Same value: Debug prints floats exactly (shortest round-trip, sign of
/// zero), and every NaN as `NaN`.
fn same<T: Debug>(a: &T, b: &T) -> bool {
    format!("{a:?}") == format!("{b:?}")
}

fn bytes_of<T: Copy>(items: &[T]) -> Vec<u8> {
    // SAFETY: `T: Copy` items are plain data; their bytes (padding included,
    // whatever it holds) are only copied to the device and never read as T there
    // except through the layout-identical C++ struct.
    unsafe { std::slice::from_raw_parts(items.as_ptr().cast::<u8>(), std::mem::size_of_val(items)) }.to_vec()
}

fn items_of<T: Copy>(bytes: &[u8]) -> Vec<T> {
    let size = std::mem::size_of::<T>();
    assert_eq!(bytes.len() % size, 0);
    // SAFETY: the kernel wrote whole `Op::Item`s, layout-identical to `T`
    // (static_assert'ed in the generated source), and every bit pattern the
    // GPU produced for the fields is a valid value of the field's type (bools are
    // written by the generated code as 0/1).
    (0..bytes.len() / size)
        .map(|i| unsafe { std::ptr::read_unaligned(bytes[i * size..].as_ptr().cast::<T>()) })
        .collect()
}

struct Gpu {
    ctx: std::sync::Arc<CudaContext>,
}

impl Gpu {
    fn new() -> Gpu {
        // SAFETY: only dlopen probes; cudarc panics on first use otherwise.
        let (driver, nvrtc) =
            unsafe { (cudarc::driver::sys::is_culib_present(), cudarc::nvrtc::sys::is_culib_present()) };
        assert!(driver && nvrtc, "needs the CUDA driver (present: {driver}) and libnvrtc (present: {nvrtc})");
        Gpu { ctx: CudaContext::new(0).expect("a CUDA GPU") }
    }

    /// Runs `combine(a[i], b[i])` and `identity()` on the GPU and compares
    /// with the CPU with `eq`.
    fn check<Op: CudaOp>(&self, rng: &mut Rng, eq: impl Fn(&Op::Item, &Op::Item) -> bool) -> Result<(), String>
    where
        Op::Item: Sample + Debug,
    {
        let n = 4096;
        let a: Vec<Op::Item> = (0..n).map(|_| Op::Item::sample(rng)).collect();
        let b: Vec<Op::Item> = (0..n).map(|_| Op::Item::sample(rng)).collect();
        let src = Op::cuda_source();
        let name = &src.name;
        let code = format!(
            "{}\nextern \"C\" __global__ void parity({name}::Item* out, const {name}::Item* a, const {name}::Item* b, unsigned n) {{\n  \
             unsigned i = blockIdx.x * blockDim.x + threadIdx.x;\n  \
             if (i < n) out[i] = {name}::combine(a[i], b[i]);\n  if (i == n) out[i] = {name}::identity();\n}}\n",
            src.code
        );
        let ptx = compile_ptx_with_opts(&code, CompileOptions { arch: Some("compute_90"), ..Default::default() })
            .unwrap_or_else(|e| panic!("{name}: {e:?}"));
        let module = self.ctx.load_module(ptx).expect("load module");
        let f = module.load_function("parity").expect("kernel");
        let stream = self.ctx.default_stream();
        let size = std::mem::size_of::<Op::Item>();
        let (da, db) = (stream.clone_htod(&bytes_of(&a)).unwrap(), stream.clone_htod(&bytes_of(&b)).unwrap());
        let mut out = stream.alloc_zeros::<u8>((n + 1) * size).unwrap();
        let count = n as u32;
        let mut launch = stream.launch_builder(&f);
        launch.arg(&mut out).arg(&da).arg(&db).arg(&count);
        // SAFETY: the kernel's parameters are three Item pointers (sized for
        // n + 1, n, n items) and the count, in this order.
        unsafe { launch.launch(LaunchConfig::for_num_elems(count + 1)) }.expect("launch");
        let got: Vec<Op::Item> = items_of(&stream.clone_dtoh(&out).unwrap());
        if !same(&got[n], &Op::identity()) {
            return Err(format!("{name}: identity {:?} on the GPU, {:?} on the CPU", got[n], Op::identity()));
        }
        let mut bad = 0;
        for i in 0..n {
            let want = Op::combine(a[i], b[i]);
            if !eq(&got[i], &want) {
                if bad < 5 {
                    eprintln!("{name}: combine({:?}, {:?}) = {:?} on the GPU, {want:?} on the CPU", a[i], b[i], got[i]);
                }
                bad += 1;
            }
        }
        if bad > 0 {
            return Err(format!("{name}: {bad} of {n} results differ"));
        }
        eprintln!("{name}: {n} combines agree on CPU and GPU");
        Ok(())
    }
}

/// Within 8 ulp of 1 or of the result, whichever is larger: `log1p(exp(-d))`
/// is at most ln 2, so its few-ulp error is absolute, not relative to a result
/// that cancellation can bring close to zero.
/// Infinities must match exactly (the bound would be infinite there and
/// pass any finite result).
fn close(got: &f64, want: &f64) -> bool {
    same(got, want) || (want.is_finite() && (got - want).abs() <= 8.0 * f64::EPSILON * want.abs().max(1.0))
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn generated_cuda_computes_what_the_cpu_computes() {
    let gpu = Gpu::new();
    let mut rng = Rng::fresh("gpu_parity");
    let results = vec![
        // Built-ins: wrapping integers, NaN-ignoring max/min, non-contracted floats.
        gpu.check::<Add<i32>>(&mut rng, same),
        gpu.check::<Add<u64>>(&mut rng, same),
        gpu.check::<Mul<i64>>(&mut rng, same),
        gpu.check::<Add<f32>>(&mut rng, same),
        gpu.check::<Mul<f64>>(&mut rng, same),
        gpu.check::<Max<f32>>(&mut rng, same),
        gpu.check::<Min<f64>>(&mut rng, same),
        gpu.check::<Max<i64>>(&mut rng, same),
        gpu.check::<Lr<f32>>(&mut rng, same),
        gpu.check::<MatMul2x2<f32>>(&mut rng, same),
        gpu.check::<MatMul2x2<i32>>(&mut rng, same),
        gpu.check::<SegmentedAdd<i32>>(&mut rng, same),
        gpu.check::<BestPrefix<f64>>(&mut rng, same),
        // Half precision: each operation the f32 one, narrowed once (from
        // sm_80 by the hardware conversion: the same value, subnormals
        // included; NaN payloads may differ, which Debug does not show).
        gpu.check::<Add<scan::maps::bf16>>(&mut rng, same),
        gpu.check::<Max<scan::maps::bf16>>(&mut rng, same),
        gpu.check::<Add<scan::maps::f16>>(&mut rng, same),
        // Operators of the tests: casts, lets, branches, struct items, generics, fma.
        gpu.check::<CountMax>(&mut rng, same),
        gpu.check::<Min3>(&mut rng, same),
        gpu.check::<CountSum>(&mut rng, same),
        // `!` on a bool field: logical in the generated CUDA.
        gpu.check::<HeadedSum>(&mut rng, same),
        gpu.check::<ExtentI32>(&mut rng, same),
        gpu.check::<TripleSum>(&mut rng, same),
        gpu.check::<PairSum<u32>>(&mut rng, same),
        gpu.check::<FusedRecurrence>(&mut rng, same),
        gpu.check::<AddInF64>(&mut rng, same),
        gpu.check::<MaxClamped>(&mut rng, same),
        gpu.check::<SumI32>(&mut rng, same),
        gpu.check::<ScaledTally>(&mut rng, same),
        gpu.check::<CountedSegments>(&mut rng, same),
        gpu.check::<SumBf16>(&mut rng, same),
        gpu.check::<MaxAndSumF16>(&mut rng, same),
        // Structs inside a tuple and an array: their C++ layout must be
        // rustc's (padding after the struct's u32, the tuple's order).
        gpu.check::<TallyAndSum>(&mut rng, same),
        gpu.check::<TwoTallies>(&mut rng, same),
        // exp/log1p are not correctly rounded on either side (CUDA documents
        // 1-2 ulp for double exp/log1p): compared with `close`.
        gpu.check::<op_logaddexp::LogAddExp>(&mut rng, close),
    ];
    let failures: Vec<String> = results.into_iter().filter_map(Result::err).collect();
    assert!(failures.is_empty(), "CPU/GPU parity failures:\n{}", failures.join("\n"));
}
