//! The selective scan's backward pass on the GPU, every sum in an order
//! fixed by the shapes and the GPU (whether gradient blocks take whole rows
//! follows its resident blocks: `whole_rows`), so that the gradients are
//! bitwise the same from run to run on one GPU; another model may group
//! them differently. The forward states are recomputed, never stored whole. Two
//! paths: the tile kernels (backward_tiles.rs, the default for
//! Mamba's layout with N 9 to 16 and at least 4096 rows: checkpoints every
//! 8 steps, then one gradient kernel), and here the lane kernels
//! (kernels/selective_backward.cuh, every other shape up to N = 64): three
//! kernels, the carries kernel keeping one state (and, when the gradient
//! blocks split rows into ranges, one reverse carry) per 16 steps of each
//! (row, state index), 1/16 of the (batch, dim, L, N) tensor.

use std::sync::{Arc, MutexGuard};

use cudarc::driver::{CudaFunction, CudaModule, LaunchConfig, PushKernelArg};
use scan_core::selective::backward::{check_dout, check_dout_len, SsmGrads};
use scan_core::selective::{SelectiveScan, SsmInput, SsmShape};
use scan_core::{Error, Result};

use super::backward_tiles::BackwardTileKernels;
use super::forward::{opt_in_dynamic_shared, with_limit, DeviceProjection, DeviceSelectiveScan};
use crate::blelloch::grid;
use crate::buffer::{driver_error, DeviceBuffer};
use crate::cuda::Cuda;
use crate::kernels::{keyed, lookup};
use crate::module::lock;
use crate::source::kernel_files;

/// The templates the kernels build on, then the kernels.
const SOURCES: [(&str, &str); 7] = [
    ("util.cuh", include_str!("../../kernels/util.cuh")),
    ("warp.cuh", include_str!("../../kernels/warp.cuh")),
    ("block.cuh", include_str!("../../kernels/block.cuh")),
    ("selective.cuh", include_str!("../../kernels/selective.cuh")),
    ("selective_tiles.cuh", include_str!("../../kernels/selective_tiles.cuh")),
    ("selective_backward.cuh", include_str!("../../kernels/selective_backward.cuh")),
    ("selective_backward_tiles.cuh", include_str!("../../kernels/selective_backward_tiles.cuh")),
];

/// Steps per checkpoint (`SSM_RUN` in the kernels).
const RUN: usize = 16;

/// Threads per block of the carries kernels: one warp (a chunk of 512
/// steps, no barrier per state), the default; or 128 (a chunk of 2048 steps,
/// as the forward's one-channel block scan), chosen by the environment
/// variable `SCAN_CUDA_SELECTIVE_BACKWARD_CARRIES=block` (`warp`: the default;
/// any other value keeps the default, with a warning on stderr). H200, 2026-12-02,
/// 8 x 1536 x 4096, N 16 (ncu): one warp 1.95 ms, 128 threads 2.07 ms; both
/// 122 registers, so both hold 16 warps per SM (25% occupancy).
const CARRY_WIDTHS: [u32; 2] = [32, 128];

/// The carries kernel's width: the environment's choice, else one warp.
fn carry_threads() -> u32 {
    let var = crate::env::TuningVar { name: "SCAN_CUDA_SELECTIVE_BACKWARD_CARRIES", takes: "warp or block" };
    var.read(|v| match v {
        "warp" => Some(32),
        "block" => Some(128),
        _ => None,
    })
    .unwrap_or(32)
}

fn carries_kernel_name(threads: u32) -> String {
    format!("selective_backward_carries_{threads}")
}

/// Warps per block of the gradient kernel, and channels per thread.
const GRAD_WARPS: u32 = 4;
const GRAD_CHANNELS_PER_THREAD: u32 = 4;

/// Runs (of 16 steps) per gradient block when rows are split into ranges:
/// the per-channel sums (dA, dD, d delta_bias, fixed dB and dC) leave one
/// partial per range.
const RANGE_RUNS: usize = 16;

/// Whether the gradient blocks take whole rows (the carries kernel then
/// skips its reverse scan, the gradient kernel carrying G along each row),
/// unless [`Tuning::selective_backward_whole_rows`](crate::Tuning::selective_backward_whole_rows)
/// says: when a block per (batch, chunk of channels) fills at least three
/// quarters of the GPU's resident blocks (`resident`); with fewer, SMs
/// would idle for longer than the reverse scan takes (8 x 1536 channels at
/// N = 16 make 384 blocks).
fn whole_rows(blocks: usize, resident: usize) -> bool {
    4 * blocks >= 3 * resident
}

/// The gradient kernels: (lanes per channel S, state indices per lane), as
/// the forward's lane-group kernel; N up to 64.
const GRAD_SHAPES: [(u32, u32); 7] = [(1, 1), (2, 1), (4, 1), (8, 1), (16, 1), (32, 1), (32, 2)];

/// The `__launch_bounds__` of the gradient kernel of lanes per channel
/// `s`: threads, and for all but S = 16 at least 2 blocks per SM (a register
/// budget of 255). Under ptxas' own choice N = 16 (Mamba's) fits 95
/// registers with no spill (asking for 3 or 4 blocks per SM spilled 8 and
/// 24 bytes in an earlier form), and the others spilled 16 to 64 bytes,
/// none at 2 blocks (NVRTC 12.9, sm_90).
fn grad_bounds(s: u32) -> String {
    let threads = 32 * GRAD_WARPS;
    if s == 16 {
        threads.to_string()
    } else {
        format!("{threads}, 2")
    }
}

/// The dynamic shared memory of a carries block of `threads`: the carried
/// values (two buffers) and A, then a chunk's checkpoints ([n][threads + 1]).
fn carry_shared_bytes(state: usize, threads: u32) -> usize {
    4 * (3 * state + state * (threads as usize + 1))
}

/// The dynamic shared memory of a gradient block (selective_backward.cuh's
/// layout): the slots' steps (a float4 each), the slots' sums of dB and dC
/// per step and state, each thread's per-channel sums (dA, fixed dB and
/// dC; dD, d delta_bias) and reverse carries G, and the run's B and C rows
/// (padded).
fn grad_shared_bytes((s, per_lane): (u32, u32), state: usize) -> usize {
    let threads = (32 * GRAD_WARPS) as usize;
    let slots = threads / s as usize;
    let cpt = GRAD_CHANNELS_PER_THREAD as usize;
    let floats = 2 * RUN * (slots * (per_lane * s) as usize + 1)
        + (4 * per_lane as usize + 2) * cpt * threads
        + 2 * state * (RUN + 1);
    slots * RUN * 16 + floats * 4
}

/// The largest state size the GPU backward takes.
pub const SELECTIVE_BACKWARD_MAX_STATE: usize = 64;

/// Threads per block of the partial sums.
const SUM_THREADS: u32 = 256;

fn grads_kernel_name((s, per_lane): (u32, u32)) -> String {
    format!("selective_backward_grads_{s}_{per_lane}")
}

fn source() -> String {
    let mut code = kernel_files(&SOURCES);
    for threads in CARRY_WIDTHS {
        let name = carries_kernel_name(threads);
        code.push_str(&format!(
            "extern \"C\" __global__ void __launch_bounds__({threads}) {name}(\n\
             \x20   const float* u, const float* delta, const float* A, const float* B, unsigned long long b_groups,\n\
             \x20   const float* C, unsigned long long c_groups, const float* z, const float* delta_bias, const float* x0,\n\
             \x20   const float* dout, float* xs, float* gs, float* dx0, unsigned long long dim, unsigned long long len,\n\
             \x20   unsigned long long state, int softplus) {{\n\
             \x20 scan::selective_backward_carries<{threads}>(u, delta, A, scan::SsmProjection{{B, b_groups}},\n\
             \x20     scan::SsmProjection{{C, c_groups}}, z, delta_bias, x0, dout, xs, gs, dx0, dim, len, state,\n\
             \x20     softplus != 0);\n\
             }}\n"
        ));
    }
    for shape in GRAD_SHAPES {
        let (s, per_lane) = shape;
        let name = grads_kernel_name(shape);
        let bounds = grad_bounds(s);
        code.push_str(&format!(
            "extern \"C\" __global__ void __launch_bounds__({bounds}) {name}(\n\
             \x20   const float* u, const float* delta, const float* A, const float* B, unsigned long long b_groups,\n\
             \x20   const float* C, unsigned long long c_groups, const float* D, const float* z,\n\
             \x20   const float* delta_bias, const float* dout, const float* xs, const float* gs, float* dx0,\n\
             \x20   float* du, float* ddelta, float* dz, float* part_b, float* part_c, float* part_a, float* part_d,\n\
             \x20   float* part_bias, unsigned long long dim, unsigned long long len, unsigned long long state,\n\
             \x20   unsigned long long span, unsigned long long range_runs, int softplus) {{\n\
             \x20 scan::selective_backward_grads<{s}, {per_lane}, {GRAD_WARPS}, {GRAD_CHANNELS_PER_THREAD}>(u, delta,\n\
             \x20     A, scan::SsmProjection{{B, b_groups}}, scan::SsmProjection{{C, c_groups}}, D, z, delta_bias, dout,\n\
             \x20     xs, gs, dx0, du, ddelta, dz, part_b, part_c, part_a, part_d, part_bias, dim, len, state, span,\n\
             \x20     range_runs, softplus != 0);\n\
             }}\n"
        ));
    }
    code.push_str(&super::backward_tiles::source());
    code.push_str(
        "extern \"C\" __global__ void selective_backward_sum_parts(const float* in, float* out,\n\
         \x20   unsigned long long outers, unsigned long long parts, unsigned long long inner) {\n\
         \x20 scan::selective_backward_sum_parts(in, out, outers, parts, inner);\n\
         }\n",
    );
    code
}

/// Compiles the selective-scan backward kernels for `arch` (e.g.
/// `"sm_90"`) with NVRTC and returns the CUBIN; needs libnvrtc, no GPU.
pub fn compile_selective_backward_for_arch(arch: &str) -> Result<Vec<u8>> {
    crate::nvrtc::compile_cubin(&source(), "selective_backward", arch)
}

/// ptxas' report (registers, spills) of the backward kernels for `arch`.
pub fn ptxas_report_selective_backward(arch: &str) -> Result<String> {
    crate::nvrtc::ptxas_report(&source(), "selective_backward", arch)
}

/// The executor's backward scratch, held while a call queues its launches.
pub(crate) type ScratchGuard<'a> = MutexGuard<'a, Option<DeviceBuffer<f32>>>;

/// The loaded kernels (the module must outlive the functions).
pub(crate) struct SelectiveBackwardKernels {
    _module: Arc<CudaModule>,
    carries: Vec<(u32, CudaFunction)>,
    /// The gradient kernels by shape, with the dynamic shared memory each
    /// was opted in to.
    grads: Vec<((u32, u32), CudaFunction, usize)>,
    sum_parts: CudaFunction,
    /// The tile kernels by warps: (checkpoints, gradients).
    pub(crate) tiles: Vec<(u32, BackwardTileKernels)>,
}

/// The gradient kernel's shape for `state`, if the GPU backward takes it.
fn grad_shape(state: usize) -> Option<(u32, u32)> {
    if state == 0 || state > SELECTIVE_BACKWARD_MAX_STATE {
        return None;
    }
    let s = state.next_power_of_two().min(32) as u32;
    let per_lane = state.div_ceil(s as usize) as u32;
    GRAD_SHAPES.into_iter().find(|&shape| shape == (s, per_lane.next_power_of_two()))
}

/// The gradient kernel for `state`, or why the GPU backward does not take it.
fn supported(state: usize) -> Result<(u32, u32)> {
    grad_shape(state).ok_or_else(|| {
        Error::Unsupported(format!(
            "the GPU selective-scan backward takes a state size N of 1 to {SELECTIVE_BACKWARD_MAX_STATE}; this one \
             has N = {state} (Cpu::selective_scan_backward takes any)"
        ))
    })
}

fn gcd(a: usize, b: usize) -> usize {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// The gradients of a selective scan on the device, made by
/// [`Cuda::run_selective_backward`]; [`DeviceSsmGrads::download`] copies
/// them to the host as [`SsmGrads`] (the optional ones where the forward's
/// argument was given).
#[derive(Debug)]
pub struct DeviceSsmGrads {
    /// dL/du, (batch, dim, L).
    pub du: DeviceBuffer<f32>,
    /// dL/ddelta, (batch, dim, L).
    pub ddelta: DeviceBuffer<f32>,
    /// dL/dA, (dim, N).
    pub da: DeviceBuffer<f32>,
    /// dL/dB, shaped like B.
    pub db: DeviceBuffer<f32>,
    /// dL/dC, shaped like C.
    pub dc: DeviceBuffer<f32>,
    /// dL/dD, (dim), when D was given.
    pub dd: Option<DeviceBuffer<f32>>,
    /// dL/dz, (batch, dim, L), when z was given.
    pub dz: Option<DeviceBuffer<f32>>,
    /// dL/d(delta_bias), (dim), when delta_bias was given.
    pub ddelta_bias: Option<DeviceBuffer<f32>>,
    /// dL/d(initial state), (batch, dim, N), when it was given.
    pub dinitial_state: Option<DeviceBuffer<f32>>,
}

impl DeviceSsmGrads {
    /// Copies every gradient to the host (waits for the device).
    pub fn download(&self) -> Result<SsmGrads> {
        self.download_with(DeviceBuffer::download)
    }

    /// The gradients, each buffer copied back by `download`.
    pub(crate) fn download_with(&self, download: impl Fn(&DeviceBuffer<f32>) -> Result<Vec<f32>>) -> Result<SsmGrads> {
        let optional = |b: &Option<DeviceBuffer<f32>>| b.as_ref().map(&download).transpose();
        Ok(SsmGrads {
            du: download(&self.du)?,
            ddelta: download(&self.ddelta)?,
            da: download(&self.da)?,
            db: download(&self.db)?,
            dc: download(&self.dc)?,
            dd: optional(&self.dd)?,
            dz: optional(&self.dz)?,
            ddelta_bias: optional(&self.ddelta_bias)?,
            dinitial_state: optional(&self.dinitial_state)?,
        })
    }
}

impl Cuda {
    /// Copies every gradient of `grads` to the host after the work queued
    /// on the stream, as [`DeviceSsmGrads::download`] does, but through the
    /// executor's staging buffers where they are large ([`Cuda::download`]);
    /// buffers of another stream than the executor's are an error here.
    pub fn download_grads(&self, grads: &DeviceSsmGrads) -> Result<SsmGrads> {
        grads.download_with(|b| self.download(b))
    }

    /// The backward pass of [`Cuda::selective_scan`], with mamba_ssm's
    /// semantics (`selective_scan_bwd`; [`scan_core::selective::backward`]
    /// has the formulas and the f64 reference): given dL/d`out` (`dout`,
    /// shaped like `out`), the gradients with respect to every argument,
    /// from and to host slices ([`Cuda::run_selective_backward`] keeps them
    /// on the device). The forward states are recomputed, and every sum
    /// (over channels for dB and dC, over batch and time for dA, dD and
    /// d delta_bias) is taken in a fixed order without atomics: the
    /// gradients are bitwise the same from run to run on the same GPU and
    /// build. bf16 and f16 activations are widened on the device, as for
    /// [`Cuda::selective_scan`]; the gradients are f32 whatever their type.
    ///
    /// Errors: the argument checks of [`Cuda::selective_scan`];
    /// [`Error::WrongShape`] for `dout`; [`Error::Unsupported`] for a state
    /// size N above [`SELECTIVE_BACKWARD_MAX_STATE`] (`scan::Device` then
    /// runs the CPU's backward).
    ///
    /// ```no_run
    /// # fn main() -> scan_core::Result<()> {
    /// use scan_core::selective::{Projection, SelectiveScan, SsmShape};
    /// let cuda = scan_cuda::Cuda::new()?;
    /// // One step, N = 1: out = C dt B u with dt = 0.5, B = C = 1: dL/du = 0.5.
    /// let shape = SsmShape { batch: 1, dim: 1, len: 1, state: 1 };
    /// let one = Projection::Fixed(&[1.0]);
    /// let args = SelectiveScan::new(shape, &[2.0], &[0.5], &[-1.0], one, one);
    /// let g = cuda.selective_scan_backward(&args, &[1.0])?;
    /// assert_eq!(g.du, [0.5]);
    /// # Ok(()) }
    /// ```
    pub fn selective_scan_backward<T: SsmInput>(&self, args: &SelectiveScan<'_, T>, dout: &[f32]) -> Result<SsmGrads> {
        check_dout(args, dout)?;
        supported(args.shape.state)?;
        let on_device = self.upload_selective(args)?;
        let dout = self.upload(dout)?;
        self.download_grads(&self.run_selective_backward(&on_device, &dout)?)
    }

    /// Which kernels [`Cuda::run_selective_backward`] takes for `s` (for
    /// tests and profiles): `"tiles of W warps"` (the tile kernels,
    /// [`Tuning::selective_backward_tiles`](crate::Tuning::selective_backward_tiles))
    /// or `"lanes"` (the carries and gradient kernels of lane groups).
    /// Errors: the argument checks of [`Cuda::run_selective`].
    pub fn selective_backward_kernel_name(&self, s: &DeviceSelectiveScan) -> Result<String> {
        self.check_selective(s)?;
        Ok(match self.backward_tiles_plan(s) {
            Some(warps) => format!("tiles of {warps} warps"),
            None => "lanes".into(),
        })
    }

    /// The backward pass of the selective scan `s` (its arguments; `out`
    /// and the last state are not read) for `dout` = dL/d`out` on the
    /// device: two or three kernels queued on the stream, then the partial
    /// sums (see [`Cuda::selective_scan_backward`]). Scratch, kept on the
    /// executor after the first call and grown (never shrunk) when a call
    /// needs more:
    /// - the tile kernels ([`Tuning::selective_backward_tiles`](crate::Tuning::selective_backward_tiles)):
    ///   checkpoints of batch x dim x ceil(L / 8) x 16 floats (x 8 for N up
    ///   to 8), and the partials of dB and dC, batch x N x L floats per 32
    ///   channels each (dim / 32 copies of one group's B); about 0.6 GB at
    ///   8 x 1536 x 4096 with N = 16;
    /// - the lane kernels: checkpoints of batch x dim x ceil(L / 16) x N
    ///   floats (twice that when the gradient blocks split rows into ranges
    ///   of 256 steps, for fewer channels than fill the GPU), and the
    ///   partials, for a varying B or C batch x N x L floats per chunk of
    ///   channels (a chunk is 512 / S channels sharing a group, S = N rounded
    ///   up to a power of two, at most 32: 32 at N = 16), else batch x
    ///   ranges x dim x N floats.
    ///
    /// Errors: the argument checks of [`Cuda::run_selective`];
    /// [`Error::WrongShape`] naming `dout` when it is not shaped like
    /// `out`; [`Error::Unsupported`] for N above
    /// [`SELECTIVE_BACKWARD_MAX_STATE`].
    pub fn run_selective_backward(&self, s: &DeviceSelectiveScan, dout: &DeviceBuffer<f32>) -> Result<DeviceSsmGrads> {
        self.check_selective(s)?;
        self.check_buffer(dout, "dout")?;
        check_dout_len(s.shape, dout.len())?;
        if let Some(warps) = self.backward_tiles_plan(s) {
            return self.run_selective_backward_tiles(s, dout, warps, None);
        }
        let SsmShape { batch, dim, len, state } = s.shape;
        let rows = batch * dim;
        let shape = supported(state)?;
        let runs = len.div_ceil(RUN);
        // Channels of a block share their group of B and of C.
        let per_group = |p: &DeviceProjection| p.groups.map_or(dim, |g| dim / g);
        let span = gcd(per_group(&s.b), per_group(&s.c));
        let slots = (32 * GRAD_WARPS / shape.0) as usize;
        let channels = slots * GRAD_CHANNELS_PER_THREAD as usize;
        let chunks = if rows == 0 { 0 } else { dim / span * span.div_ceil(channels) };
        let kernels = self.selective_backward_kernels()?;
        let (function, limit) = with_limit(&kernels.grads, &shape, "a selective backward gradient")?;
        let shared = grad_shared_bytes(shape, state);
        if shared > limit {
            return Err(Error::TooLarge {
                what: format!("N = {state} needs {shared} bytes of shared memory per block; this GPU has {limit}"),
            });
        }
        let whole = match self.tuning().selective_backward_whole_rows_setting() {
            Some(whole) => whole,
            None => {
                let sms = self
                    .context()
                    .attribute(cudarc::driver::sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
                    .map_err(|e| driver_error("SM count query", e))?;
                let per_sm = function
                    .occupancy_max_active_blocks_per_multiprocessor(32 * GRAD_WARPS, shared, None)
                    .map_err(|e| driver_error("occupancy query", e))?;
                whole_rows(batch * chunks, sms as usize * per_sm as usize)
            }
        };
        let range_runs = if whole { runs.max(1) } else { RANGE_RUNS };
        let ranges = runs.div_ceil(range_runs);
        let part_len = |p: &DeviceProjection| match p.groups {
            Some(_) => batch * chunks * state * len,
            None => batch * ranges * dim * state,
        };
        let (has_d, has_z) = (s.d.is_some(), s.z.is_some());
        let (has_bias, has_x0) = (s.delta_bias.is_some(), s.initial_state.is_some());
        // Scratch (`backward_scratch`): the checkpoints xs, the reverse
        // carries gs (ranges only), then the partials, each written before
        // it is read.
        let scratch_lens = [
            rows * runs * state,
            if whole { 0 } else { rows * runs * state },
            part_len(&s.b),
            part_len(&s.c),
            batch * ranges * dim * state,
            batch * ranges * dim,
            batch * ranges * dim,
        ];
        let (_scratch, [xs_ptr, gs_ptr, pb, pc, pa, pd, pbias]) = self.backward_scratch(scratch_lens)?;
        let stream = self.stream();
        let gs_ptr = if whole { 0 } else { gs_ptr };
        // Zero-filled: with no step (L = 0) the kernels write nothing.
        let mut dx0: DeviceBuffer<f32> = self.alloc(if has_x0 { rows * state } else { 0 })?;
        let mut du: DeviceBuffer<f32> = self.alloc_unwritten(rows * len)?;
        let mut ddelta: DeviceBuffer<f32> = self.alloc_unwritten(rows * len)?;
        let mut dz: DeviceBuffer<f32> = self.alloc_unwritten(if has_z { rows * len } else { 0 })?;

        if rows > 0 && len > 0 {
            let ptr = |x: &DeviceBuffer<f32>| x.device_ptr(stream);
            let opt = |x: &Option<DeviceBuffer<f32>>| x.as_ref().map_or(0, ptr);
            let (u, delta, a, b, c) = (ptr(&s.u), ptr(&s.delta), ptr(&s.a), ptr(&s.b.data), ptr(&s.c.data));
            let (d, z, bias, x0, dout) = (opt(&s.d), opt(&s.z), opt(&s.delta_bias), opt(&s.initial_state), ptr(dout));
            let (b_groups, c_groups) = (s.b.groups.unwrap_or(0) as u64, s.c.groups.unwrap_or(0) as u64);
            let softplus = i32::from(s.delta_softplus);
            let (dim64, len64, state64) = (dim as u64, len as u64, state as u64);
            let dx0_ptr = if has_x0 { dx0.device_ptr_mut(stream) } else { 0 };
            // dL/dx0 from the carries kernel's reverse scan, or from the
            // gradient kernel's carry along whole rows.
            let (carries_dx0, grads_dx0) = if whole { (0, dx0_ptr) } else { (dx0_ptr, 0) };
            let (du_ptr, ddelta_ptr) = (du.device_ptr_mut(stream), ddelta.device_ptr_mut(stream));
            let dz_ptr = if has_z { dz.device_ptr_mut(stream) } else { 0 };

            // 1. The checkpoints.
            let threads = carry_threads();
            let carries = keyed(&kernels.carries, &threads, "a selective backward carries")?;
            let mut launch = stream.launch_builder(carries);
            launch.arg(&u).arg(&delta).arg(&a).arg(&b).arg(&b_groups).arg(&c).arg(&c_groups);
            launch.arg(&z).arg(&bias).arg(&x0).arg(&dout).arg(&xs_ptr).arg(&gs_ptr).arg(&carries_dx0);
            launch.arg(&dim64).arg(&len64).arg(&state64).arg(&softplus);
            let cfg = LaunchConfig {
                grid_dim: (grid(rows)?, 1, 1),
                block_dim: (threads, 1, 1),
                shared_mem_bytes: carry_shared_bytes(state, threads) as u32,
            };
            // SAFETY: every pointer addresses a live device buffer of the
            // length the shape gives (checked by `validate` and above) or is
            // 0 for an absent option; xs and gs hold rows x runs x N floats
            // (gs 0: no reverse scan), dx0 rows x N when the initial state is
            // given; a block reads and writes only its row. Shared memory: `carry_shared_bytes`
            // (at most 34 KiB for N <= 64).
            unsafe { launch.launch(cfg) }.map_err(|e| driver_error("launch of the selective backward (carries)", e))?;

            // 2. The gradients and partials (shared memory opted in at load
            // for the largest N of this shape).
            let (span64, range_runs) = (span as u64, range_runs as u64);
            let mut launch = stream.launch_builder(function);
            launch.arg(&u).arg(&delta).arg(&a).arg(&b).arg(&b_groups).arg(&c).arg(&c_groups);
            launch.arg(&d).arg(&z).arg(&bias).arg(&dout).arg(&xs_ptr).arg(&gs_ptr).arg(&grads_dx0);
            launch.arg(&du_ptr).arg(&ddelta_ptr).arg(&dz_ptr).arg(&pb).arg(&pc).arg(&pa).arg(&pd).arg(&pbias);
            launch.arg(&dim64).arg(&len64).arg(&state64).arg(&span64).arg(&range_runs).arg(&softplus);
            let cfg = LaunchConfig {
                grid_dim: (grid(batch * chunks * ranges)?, 1, 1),
                block_dim: (32 * GRAD_WARPS, 1, 1),
                shared_mem_bytes: shared as u32,
            };
            // SAFETY: as above; the partials hold, for a varying projection,
            // batch x chunks x N x L floats (one per chunk of channels, step
            // and state index), else batch x ranges x dim x N; part_a the
            // latter, part_d and part_bias batch x ranges x dim. Shared
            // memory: what `grad_shared_bytes` counts (under 64 KiB, opted in
            // past 48).
            unsafe { launch.launch(cfg) }
                .map_err(|e| driver_error("launch of the selective backward (gradients)", e))?;
        }

        // 3. The partial sums, in index order (zeros where there are none).
        let sum = |parts: u64, outers: usize, count: usize, inner: usize| {
            // SAFETY: `parts` holds outers x count x inner floats (the
            // layouts above).
            unsafe { self.sum_backward_parts(&kernels, parts, outers, count, inner) }
        };
        let per_range = batch * ranges;
        let projection = |p: &DeviceProjection, parts: u64| match p.groups {
            Some(groups) => sum(parts, batch * groups, chunks / groups, state * len),
            None => sum(parts, 1, per_range, dim * state),
        };
        Ok(DeviceSsmGrads {
            db: projection(&s.b, pb)?,
            dc: projection(&s.c, pc)?,
            da: sum(pa, 1, per_range, dim * state)?,
            dd: if has_d { Some(sum(pd, 1, per_range, dim)?) } else { None },
            ddelta_bias: if has_bias { Some(sum(pbias, 1, per_range, dim)?) } else { None },
            dz: has_z.then_some(dz),
            dinitial_state: has_x0.then_some(dx0),
            du,
            ddelta,
        })
    }

    /// The executor's backward scratch, grown (never shrunk) to hold `lens`
    /// floats one part after another, each part starting on a 16-byte
    /// boundary, and the parts' device addresses. Allocating these 0.3-0.8
    /// GB per call cost more than a millisecond on the H200. The guard holds
    /// the scratch until the call's launches are queued: a later call's
    /// launches follow them on the executor's one stream, and a grown buffer
    /// frees the old one in stream order.
    pub(crate) fn backward_scratch<const K: usize>(&self, lens: [usize; K]) -> Result<(ScratchGuard<'_>, [u64; K])> {
        let lens = lens.map(|n| n.div_ceil(4) * 4);
        let total: usize = lens.iter().sum();
        let mut scratch = lock(&self.selective_scratch);
        if !scratch.as_ref().is_some_and(|b| b.len() >= total) {
            *scratch = None;
            *scratch = Some(self.alloc_unwritten::<f32>(total.max(1))?);
        }
        let base = scratch
            .as_mut()
            .ok_or_else(|| Error::Other("internal: no backward scratch".into()))?
            .device_ptr_mut(self.stream());
        let mut offset = 0;
        let parts = lens.map(|n| {
            let at = base + 4 * offset as u64;
            offset += n;
            at
        });
        Ok((scratch, parts))
    }

    /// A new buffer of outers x inner floats: `out[o][e]` = the sum over p <
    /// count of `parts[(o count + p) inner + e]`, p ascending (zeros where
    /// count is 0), queued on the stream.
    ///
    /// # Safety
    /// `parts` addresses outers x count x inner floats on this executor's
    /// device, written (by earlier launches on its stream) before it is read.
    pub(crate) unsafe fn sum_backward_parts(
        &self,
        kernels: &SelectiveBackwardKernels,
        parts: u64,
        outers: usize,
        count: usize,
        inner: usize,
    ) -> Result<DeviceBuffer<f32>> {
        let total = outers * inner;
        if count == 0 {
            return self.alloc(total);
        }
        let mut out: DeviceBuffer<f32> = self.alloc_unwritten(total)?;
        if total == 0 {
            return Ok(out);
        }
        let stream = self.stream();
        let (in_ptr, out_ptr) = (parts, out.device_ptr_mut(stream));
        let (outers, count, inner) = (outers as u64, count as u64, inner as u64);
        let mut launch = stream.launch_builder(&kernels.sum_parts);
        launch.arg(&in_ptr).arg(&out_ptr).arg(&outers).arg(&count).arg(&inner);
        let cfg = LaunchConfig {
            grid_dim: (grid(total.div_ceil(SUM_THREADS as usize))?, 1, 1),
            block_dim: (SUM_THREADS, 1, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: `parts` holds outers x count x inner floats (the caller's
        // promise) and `out` outers x inner.
        unsafe { launch.launch(cfg) }.map_err(|e| driver_error("launch of the selective backward (sums)", e))?;
        Ok(out)
    }

    /// The backward kernels, loaded once per executor.
    pub(crate) fn selective_backward_kernels(&self) -> Result<Arc<SelectiveBackwardKernels>> {
        let limit = crate::policy::shared_limit_per_block(self.capability());
        self.kernels_once(&self.selective_backward, source, "selective_backward", |module| {
            // Opted in once, at load, so that launches never change the
            // functions' attributes (two threads launching with different N
            // would race); a GPU that refuses keeps 48 KiB, and only the
            // launches that need more fail (`Error::TooLarge`), not the load.
            let grads = GRAD_SHAPES
                .into_iter()
                .map(|shape| {
                    let function = lookup(&module, &grads_kernel_name(shape))?;
                    let dynamic = opt_in_dynamic_shared(&function, limit)?;
                    Ok((shape, function, dynamic))
                })
                .collect::<Result<_>>()?;
            Ok(SelectiveBackwardKernels {
                tiles: super::backward_tiles::load(&module, limit)?,
                carries: CARRY_WIDTHS
                    .into_iter()
                    .map(|threads| Ok((threads, lookup(&module, &carries_kernel_name(threads))?)))
                    .collect::<Result<_>>()?,
                sum_parts: lookup(&module, "selective_backward_sum_parts")?,
                grads,
                _module: module,
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_state_size_up_to_the_limit_has_a_gradient_kernel() {
        for state in 1..=SELECTIVE_BACKWARD_MAX_STATE {
            let (s, per_lane) = grad_shape(state).unwrap_or_else(|| panic!("N = {state}"));
            assert!((s * per_lane) as usize >= state, "N = {state}: {s} x {per_lane}");
        }
        assert_eq!(grad_shape(0), None);
        assert_eq!(grad_shape(SELECTIVE_BACKWARD_MAX_STATE + 1), None);
    }

    #[test]
    fn every_gradient_block_fits_its_shared_memory() {
        for state in 1..=SELECTIVE_BACKWARD_MAX_STATE {
            let shape = grad_shape(state).unwrap();
            let bytes = grad_shared_bytes(shape, state);
            assert!(bytes <= 64 * 1024, "N = {state}, {shape:?}: {bytes} bytes");
            for threads in CARRY_WIDTHS {
                assert!(carry_shared_bytes(state, threads) <= 48 * 1024, "N = {state}: the carries block of {threads}");
            }
        }
        // S = 16, N = 16: 8 slots of 16 float4 steps, 2 x 16 x (8 x 16 + 1) sums,
        // 5 x 4 x 128 per-channel sums, 4 x 128 carries G, 2 x 16 x 17 B and C.
        assert_eq!(grad_shared_bytes((16, 1), 16), 8 * 16 * 16 + 4 * (2 * 16 * 129 + 2560 + 512 + 544));
    }

    #[test]
    fn the_span_divides_both_groupings() {
        assert_eq!(gcd(12, 8), 4);
        assert_eq!(gcd(1536, 1536), 1536);
        assert_eq!(gcd(3, 2), 1);
    }
}
