//! The selective scan's backward by tiles of 32 channels
//! (kernels/selective_backward_tiles.cuh), the layout of the forward's tile
//! kernel: the forward in checkpoint mode writes the states before every 8
//! steps, then one kernel walks each block's rows from the last tile to the
//! first with the reverse carry in registers, and the partial sums of
//! backward.rs add dB, dC, dA, dD and d delta_bias in a fixed
//! order. It takes N up to 16 with B and C varying and shared by every 32
//! channels (Mamba's layout), as the forward's tile kernel does; the lane
//! kernels take the rest.

use cudarc::driver::{CudaFunction, CudaModule, CudaStream, LaunchConfig, PushKernelArg};
use scan_core::selective::SsmShape;
use scan_core::{Error, Result};

use super::backward::{DeviceSsmGrads, SelectiveBackwardKernels};
use super::forward::{opt_in_dynamic_shared, runs_share, tile_default_shape, tiles_shared_bytes, DeviceSelectiveScan};
use crate::blelloch::grid;
use crate::buffer::{driver_error, DeviceBuffer};
use crate::cuda::Cuda;
use crate::kernels::lookup;

/// Warps per block (G: states 4 G, so N up to 8 or 16).
const WARPS: [u32; 2] = [2, 4];
/// Channels per block.
const ROWS: usize = 32;
/// Steps per tile of the gradient kernel.
const STEPS: usize = 16;
/// Steps per checkpoint (`SSM_CHECK`).
const CHECK: usize = 8;
/// The default takes the tile kernels from this many rows (batch x dim),
/// with N past `MIN_STATE`, as the forward's tile kernel (which also wants
/// rows longer than 192 steps; the backward takes any length, though it was
/// timed at L = 4096 only): with fewer rows, a block per 32 channels leaves
/// SMs idle; the blocks of 2 warps (N up to 8) are tested but not timed.
const MIN_ROWS: usize = 4096;
const MIN_STATE: usize = 8;

/// The gradient kernel's register bound, blocks per SM: 3 of 4 warps (168
/// registers a thread: unbounded, ptxas took 224, two blocks per SM, and
/// 8/11's shape has 2.9 blocks per SM to place); 4 of 2 warps (255: at 6
/// blocks, 170, it spilled 36 bytes).
fn gradient_blocks_per_sm(warps: u32) -> u32 {
    if warps == 4 {
        3
    } else {
        4
    }
}

/// The kernels of `warps` warps: the backward's two, and the training
/// forward (the forward's tile kernel that also saves the checkpoints).
pub(crate) struct BackwardTileKernels {
    checkpoints: CudaFunction,
    gradients: CudaFunction,
    /// The gradient kernel with the upper half-warp's states rotated
    /// (`ROT`), and the dynamic shared memory it is opted in to.
    gradients_rotated: (CudaFunction, usize),
    /// The rotated kernel with the narrow copies of each step (`NARROW`),
    /// with its sums over rows plain, pipelined across steps (`PIPE`), cut
    /// short after three stages (`SHORT`) or both, by [`narrow_index`]; each
    /// with its opt-in.
    gradients_narrow: [(CudaFunction, usize); 4],
    saving: CudaFunction,
}

fn checkpoints_name(warps: u32) -> String {
    format!("selective_checkpoints_tiles_{warps}")
}

/// A form of the gradient kernel (`selective_backward_tiles<G, ROT, NARROW,
/// PIPE, SHORT>`): `piped` and `short` each need `narrow`, which needs
/// `rotated`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Form {
    rotated: bool,
    narrow: bool,
    piped: bool,
    short: bool,
}

impl Form {
    const fn new(rotated: bool, narrow: bool, piped: bool, short: bool) -> Form {
        Form {
            rotated,
            narrow: rotated && narrow,
            piped: rotated && narrow && piped,
            short: rotated && narrow && short,
        }
    }

    fn name(self, warps: u32) -> String {
        let flag = |on: bool, s: &'static str| if on { s } else { "" };
        format!(
            "selective_backward_tiles_{warps}{}{}{}{}",
            flag(self.rotated, "_rot"),
            flag(self.narrow, "_narrow"),
            flag(self.piped, "_piped"),
            flag(self.short, "_short")
        )
    }
}

/// Every form: states in order, rotated, and rotated with narrow steps with
/// each of its four ways of summing over rows.
const FORMS: [Form; 6] = [
    Form::new(false, false, false, false),
    Form::new(true, false, false, false),
    Form::new(true, true, false, false),
    Form::new(true, true, true, false),
    Form::new(true, true, false, true),
    Form::new(true, true, true, true),
];

/// The place of a narrow form in `BackwardTileKernels::gradients_narrow`.
fn narrow_index(piped: bool, short: bool) -> usize {
    usize::from(piped) + 2 * usize::from(short)
}

fn saving_name(warps: u32) -> String {
    format!("selective_forward_saving_tiles_{warps}")
}

/// The gradient kernel's shared memory, as `SsmBackTiles<G>::Shared`: a
/// float4 per (row, step) (stride 17), B and C per step, three partial sums
/// per (warp, row, step) (rows of 16 floats, their quads rotated), the
/// block's dB and dC per step, and two float4 per (row, 4 steps) unit;
/// with `narrow` (rotated only), a float2 and a float per (row, step) in
/// rows of 17; with `short` (narrow only), 4 partial dB and dC sums per
/// (step, state) in steps of `2 (16 N' + 16)` floats (N' = 4 G).
fn gradients_shared_bytes(warps: u32, rotated: bool, narrow: bool, short: bool) -> usize {
    let states = 4 * warps as usize;
    // A thread's (row, 4 steps) units: two float4 each.
    let gates = 16 * 2 * ROWS * STEPS / 4;
    // With the states rotated, B and C again with their chunks' halves swapped.
    let bc_rot = 4 * if rotated { STEPS * 2 * states } else { 4 };
    let narrow = rotated && narrow;
    let short = if narrow && short { 4 * STEPS * 2 * (4 * states + 16) } else { 0 };
    let narrow = if narrow { 12 * ROWS * (STEPS + 1) } else { 0 };
    16 * ROWS * (STEPS + 1)
        + 4 * (2 * STEPS * 2 * states + 3 * warps as usize * ROWS * STEPS)
        + gates
        + bc_rot
        + narrow
        + short
}

/// The kernels' instantiations.
pub(crate) fn source() -> String {
    let mut code = String::new();
    for g in WARPS {
        let (checkpoints, saving) = (checkpoints_name(g), saving_name(g));
        let threads = 32 * g;
        let per_sm = gradient_blocks_per_sm(g);
        // The training forward: the forward's default tile kernel of G warps
        // (its register bound and y steps), saving the checkpoints as well.
        let (bound, y_steps) = tile_default_shape(g).unwrap_or((None, 4));
        let saving_bounds = bound.map_or(threads.to_string(), |b| format!("{threads}, {b}"));
        code.push_str(&format!(
            "extern \"C\" __global__ void __launch_bounds__({saving_bounds}) {saving}(\n\
             \x20   const float* u, const float* delta, const float* A, const float* B, unsigned long long b_groups,\n\
             \x20   const float* C, unsigned long long c_groups, const float* D, const float* z, const float* delta_bias,\n\
             \x20   const float* x0, float* out, float* last, float* checkpoints, unsigned long long dim,\n\
             \x20   unsigned long long len, unsigned long long state, int softplus) {{\n\
             \x20 scan::ssm_tiles_forward<{g}, {y_steps}, true, true>(u, delta, A, scan::SsmProjection{{B, b_groups}},\n\
             \x20     scan::SsmProjection{{C, c_groups}}, D, z, delta_bias, x0, out, last, checkpoints, dim, len, state,\n\
             \x20     softplus != 0);\n\
             }}\n"
        ));
        code.push_str(&format!(
            "extern \"C\" __global__ void __launch_bounds__({threads}) {checkpoints}(\n\
             \x20   const float* u, const float* delta, const float* A, const float* B, unsigned long long b_groups,\n\
             \x20   const float* delta_bias, const float* x0, float* checkpoints, unsigned long long dim,\n\
             \x20   unsigned long long len, unsigned long long state, int softplus) {{\n\
             \x20 const scan::SsmProjection b{{B, b_groups}};\n\
             \x20 scan::ssm_tiles_forward<{g}, 4, false, true>(u, delta, A, b, b, nullptr, nullptr, delta_bias, x0, nullptr,\n\
             \x20     nullptr, checkpoints, dim, len, state, softplus != 0);\n\
             }}\n"
        ));
        for form in FORMS {
            let gradients = form.name(g);
            let Form { rotated, narrow, piped, short } = form;
            code.push_str(&format!(
                "extern \"C\" __global__ void __launch_bounds__({threads}, {per_sm}) {gradients}(\n\
             \x20   const float* u, const float* delta, const float* A, const float* B, unsigned long long b_groups,\n\
             \x20   const float* C, unsigned long long c_groups, const float* D, const float* z,\n\
             \x20   const float* delta_bias, const float* dout, const float* checkpoints, float* dx0, float* du,\n\
             \x20   float* ddelta, float* dz, float* part_b, float* part_c, float* part_a, float* part_d,\n\
             \x20   float* part_bias, unsigned long long dim, unsigned long long len, unsigned long long state,\n\
             \x20   int softplus) {{\n\
             \x20 scan::selective_backward_tiles<{g}, {rotated}, {narrow}, {piped}, {short}>(u, delta, A,\n\
             \x20     scan::SsmProjection{{B, b_groups}},\n\
             \x20     scan::SsmProjection{{C, c_groups}}, D, z, delta_bias, dout, checkpoints, dx0, du, ddelta, dz,\n\
             \x20     part_b, part_c, part_a, part_d, part_bias, dim, len, state, softplus != 0);\n\
             }}\n"
            ));
        }
    }
    code
}

/// Looks the kernels up in the backward's module; the rotated gradient
/// kernels opt in to up to `limit` bytes of dynamic shared memory.
pub(crate) fn load(module: &std::sync::Arc<CudaModule>, limit: usize) -> Result<Vec<(u32, BackwardTileKernels)>> {
    WARPS
        .into_iter()
        .map(|g| {
            let opted_in = |form: Form| -> Result<(CudaFunction, usize)> {
                let function = lookup(module, &form.name(g))?;
                let limit = opt_in_dynamic_shared(&function, limit)?;
                Ok((function, limit))
            };
            let narrow = |piped, short| opted_in(Form::new(true, true, piped, short));
            let kernels = BackwardTileKernels {
                checkpoints: lookup(module, &checkpoints_name(g))?,
                gradients: lookup(module, &Form::new(false, false, false, false).name(g))?,
                gradients_rotated: opted_in(Form::new(true, false, false, false))?,
                // In `narrow_index` order.
                gradients_narrow: [
                    narrow(false, false)?,
                    narrow(true, false)?,
                    narrow(false, true)?,
                    narrow(true, true)?,
                ],
                saving: lookup(module, &saving_name(g))?,
            };
            Ok((g, kernels))
        })
        .collect()
}

/// The checkpoints' floats: rows x ceil(L / 8) x 4 G.
pub(crate) fn checkpoints_len(shape: SsmShape, warps: u32) -> usize {
    shape.batch * shape.dim * shape.len.div_ceil(CHECK) * 4 * warps as usize
}

/// The warps per block for N = `state`, if the tile kernels hold it.
fn warps_for(state: usize) -> Option<u32> {
    WARPS.into_iter().find(|&g| state >= 1 && state <= 4 * g as usize)
}

/// The kernels of `warps` warps in the loaded module.
fn tile_kernels(kernels: &SelectiveBackwardKernels, warps: u32) -> Result<&BackwardTileKernels> {
    kernels
        .tiles
        .iter()
        .find_map(|(g, k)| (*g == warps).then_some(k))
        .ok_or_else(|| Error::Other(format!("internal: no selective backward tile kernels of {warps} warps")))
}

/// The inputs' device addresses (0 for an absent option) and the sizes, as
/// every tile kernel takes them: the training forward, the checkpoints and
/// the gradients.
#[derive(Clone, Copy)]
struct TileArgs {
    u: u64,
    delta: u64,
    a: u64,
    b: u64,
    b_groups: u64,
    c: u64,
    c_groups: u64,
    d: u64,
    z: u64,
    bias: u64,
    x0: u64,
    dim64: u64,
    len64: u64,
    state64: u64,
    softplus: i32,
}

impl TileArgs {
    fn new(s: &DeviceSelectiveScan, stream: &CudaStream) -> Result<Self> {
        let (Some(b_groups), Some(c_groups)) = (s.b.groups, s.c.groups) else {
            return Err(Error::Other("internal: the tile kernels take varying B and C only".into()));
        };
        let ptr = |x: &DeviceBuffer<f32>| x.device_ptr(stream);
        let opt = |x: &Option<DeviceBuffer<f32>>| x.as_ref().map_or(0, ptr);
        let SsmShape { dim, len, state, .. } = s.shape;
        Ok(TileArgs {
            u: ptr(&s.u),
            delta: ptr(&s.delta),
            a: ptr(&s.a),
            b: ptr(&s.b.data),
            b_groups: b_groups as u64,
            c: ptr(&s.c.data),
            c_groups: c_groups as u64,
            d: opt(&s.d),
            z: opt(&s.z),
            bias: opt(&s.delta_bias),
            x0: opt(&s.initial_state),
            dim64: dim as u64,
            len64: len as u64,
            state64: state as u64,
            softplus: i32::from(s.delta_softplus),
        })
    }
}

impl Cuda {
    /// The warps per block of the tile backward if it runs for `s`: N at
    /// most 16, B and C varying and shared by every 32 channels (each
    /// block's), and the tuning's choice ([`crate::Tuning::selective_backward_tiles`];
    /// by default at least 4096 rows and N past 8).
    pub(crate) fn backward_tiles_plan(&self, s: &DeviceSelectiveScan) -> Option<u32> {
        let SsmShape { batch, dim, state, .. } = s.shape;
        let fits = runs_share(s, ROWS);
        let default = batch * dim >= MIN_ROWS && state > MIN_STATE;
        let wanted = self.tuning().selective_backward_tiles_setting().unwrap_or(default);
        warps_for(state).filter(|_| fits && wanted)
    }

    /// The training forward of `s` by tiles of `warps` warps (from
    /// [`Cuda::backward_tiles_plan`]): the output and the last state as
    /// [`Cuda::run_selective`] writes them, and the checkpoints of the
    /// backward's first kernel into `checkpoints` (of `checkpoints_len`).
    pub(crate) fn run_selective_forward_saving(
        &self,
        s: &mut DeviceSelectiveScan,
        warps: u32,
        checkpoints: &mut DeviceBuffer<f32>,
    ) -> Result<()> {
        let SsmShape { batch, dim, len, .. } = s.shape;
        let rows = batch * dim;
        Error::check_lengths(checkpoints_len(s.shape, warps), checkpoints.len())?;
        if rows == 0 || len == 0 {
            // Nothing to save; the forward writes the last state (the
            // initial one, or zeros).
            return self.run_selective(s);
        }
        let kernels = self.selective_backward_kernels()?;
        let tile = tile_kernels(&kernels, warps)?;
        let stream = self.stream();
        let TileArgs { u, delta, a, b, b_groups, c, c_groups, d, z, bias, x0, dim64, len64, state64, softplus } =
            TileArgs::new(s, stream)?;
        let out = s.out.device_ptr_mut(stream);
        let last = s.last_state.as_mut().map_or(0, |l| l.device_ptr_mut(stream));
        let checks = checkpoints.device_ptr_mut(stream);
        let mut launch = stream.launch_builder(&tile.saving);
        launch.arg(&u).arg(&delta).arg(&a).arg(&b).arg(&b_groups).arg(&c).arg(&c_groups);
        launch.arg(&d).arg(&z).arg(&bias).arg(&x0).arg(&out).arg(&last).arg(&checks);
        launch.arg(&dim64).arg(&len64).arg(&state64).arg(&softplus);
        let cfg = LaunchConfig {
            grid_dim: (grid(rows / ROWS)?, 1, 1),
            block_dim: (32 * warps, 1, 1),
            shared_mem_bytes: tiles_shared_bytes(warps) as u32,
        };
        // SAFETY: every pointer addresses a live device buffer whose length
        // `validate` (the caller's) checked against the shape, or is 0 for an
        // absent option; `checkpoints` holds rows x ceil(L / 8) x 4 G floats
        // (checked above); a block reads its 32 rows (one batch and group:
        // checked by the plan) and writes their outputs, last states and
        // checkpoints. Shared memory: the forward tile kernel's (under 48
        // KiB).
        unsafe { launch.launch(cfg) }.map_err(|e| driver_error("launch of the training forward", e))?;
        Ok(())
    }

    /// [`Cuda::run_selective_backward`] by tiles (see the module's doc):
    /// `warps` from [`Cuda::backward_tiles_plan`]; `saved`, the checkpoints
    /// of [`Cuda::run_selective_saving`], replaces the first kernel. Scratch,
    /// kept on the executor as the lane kernels' is: the checkpoints (unless
    /// saved), rows x ceil(L / 8) x 4 G floats, and the partials of dB and dC, batch x dim / 32 x N x L
    /// floats each (dim / 32 / groups copies of B's size).
    pub(crate) fn run_selective_backward_tiles(
        &self,
        s: &DeviceSelectiveScan,
        dout: &DeviceBuffer<f32>,
        warps: u32,
        saved: Option<&DeviceBuffer<f32>>,
    ) -> Result<DeviceSsmGrads> {
        let SsmShape { batch, dim, len, state } = s.shape;
        let rows = batch * dim;
        let chunks = dim / ROWS;
        let kernels = self.selective_backward_kernels()?;
        let tile = tile_kernels(&kernels, warps)?;
        let args = TileArgs::new(s, self.stream())?;
        let (b_groups, c_groups) = (args.b_groups as usize, args.c_groups as usize);
        // The checkpoints, the partials of dB, dC, dA, dD and d delta_bias.
        let checkpoint_len = checkpoints_len(s.shape, warps);
        if let Some(saved) = saved {
            Error::check_lengths(checkpoint_len, saved.len())?;
        }
        let scratch_lens = [
            if saved.is_some() { 0 } else { checkpoint_len },
            batch * chunks * state * len,
            batch * chunks * state * len,
            rows * state,
            rows,
            rows,
        ];
        let (_scratch, [checks, pb, pc, pa, pd, pbias]) = self.backward_scratch(scratch_lens)?;
        let stream = self.stream();
        let (has_d, has_z) = (s.d.is_some(), s.z.is_some());
        let (has_bias, has_x0) = (s.delta_bias.is_some(), s.initial_state.is_some());
        let mut dx0: DeviceBuffer<f32> = self.alloc(if has_x0 { rows * state } else { 0 })?;
        let mut du: DeviceBuffer<f32> = self.alloc_unwritten(rows * len)?;
        let mut ddelta: DeviceBuffer<f32> = self.alloc_unwritten(rows * len)?;
        let mut dz: DeviceBuffer<f32> = self.alloc_unwritten(if has_z { rows * len } else { 0 })?;

        if rows > 0 && len > 0 {
            let TileArgs { u, delta, a, b, b_groups, c, c_groups, d, z, bias, x0, dim64, len64, state64, softplus } =
                args;
            let dout = dout.device_ptr(stream);
            let dx0_ptr = if has_x0 { dx0.device_ptr_mut(stream) } else { 0 };
            let (du_ptr, ddelta_ptr) = (du.device_ptr_mut(stream), ddelta.device_ptr_mut(stream));
            let dz_ptr = if has_z { dz.device_ptr_mut(stream) } else { 0 };
            let blocks = grid(rows / ROWS)?;

            // 1. The checkpoints, unless the training forward saved them.
            let checks = saved.map_or(checks, |c| c.device_ptr(stream));
            if saved.is_none() {
                let mut launch = stream.launch_builder(&tile.checkpoints);
                launch.arg(&u).arg(&delta).arg(&a).arg(&b).arg(&b_groups).arg(&bias).arg(&x0).arg(&checks);
                launch.arg(&dim64).arg(&len64).arg(&state64).arg(&softplus);
                let shared = tiles_shared_bytes(warps) as u32;
                let cfg =
                    LaunchConfig { grid_dim: (blocks, 1, 1), block_dim: (32 * warps, 1, 1), shared_mem_bytes: shared };
                // SAFETY: every pointer addresses a live device buffer of the
                // length the shape gives (checked by `validate`) or is 0 for
                // an absent option; `checks` holds rows x ceil(L / 8) x 4 G
                // floats; a block reads its 32 rows (one batch and group:
                // checked by the plan) and writes its own checkpoints. Shared
                // memory: the forward tile kernel's (under 48 KiB).
                unsafe { launch.launch(cfg) }
                    .map_err(|e| driver_error("launch of the selective backward (checkpoints)", e))?;
            }

            // 2. The gradients and partials.
            // Rotated by default where the GPU gives it its shared memory
            // (else in order, which needs 2 KiB less); when asked for, an
            // error if it does not fit.
            // The narrow copies likewise, for the rotated kernel only.
            let asked = self.tuning().selective_backward_rotated_states_setting();
            let rotated =
                asked.unwrap_or(gradients_shared_bytes(warps, true, false, false) <= tile.gradients_rotated.1);
            let asked_narrow = self.tuning().selective_backward_narrow_steps_setting();
            let plain_narrow = &tile.gradients_narrow[narrow_index(false, false)];
            let narrow =
                rotated && asked_narrow.unwrap_or(gradients_shared_bytes(warps, true, true, false) <= plain_narrow.1);
            // Pipelined and short sums over rows: by default with narrow
            // steps (the rotated kernel only), unless turned off (H100,
            // 8/11's shape: the backward 1.60 against 1.80 ms plain).
            let piped = narrow && self.tuning().selective_backward_pipelined_sums_setting() != Some(false);
            // The short sums' 10 KiB more where the GPU gives them.
            let short_fits =
                gradients_shared_bytes(warps, true, true, true) <= tile.gradients_narrow[narrow_index(piped, true)].1;
            let short = narrow && self.tuning().selective_backward_short_sums_setting().unwrap_or(short_fits);
            let shared = gradients_shared_bytes(warps, rotated, narrow, short);
            let function = if rotated {
                let (function, limit) =
                    if narrow { &tile.gradients_narrow[narrow_index(piped, short)] } else { &tile.gradients_rotated };
                if shared > *limit {
                    let form = match (narrow, piped, short) {
                        (false, ..) => "",
                        (true, false, false) => " with narrow steps",
                        (true, true, false) => " with narrow steps and pipelined sums",
                        (true, false, true) => " with narrow steps and short sums",
                        (true, true, true) => " with narrow steps and pipelined short sums",
                    };
                    return Err(Error::TooLarge {
                        what: format!(
                            "the selective backward's rotated tile kernel{form} needs {shared} bytes of shared \
                             memory; this GPU gives it {limit}"
                        ),
                    });
                }
                function
            } else {
                &tile.gradients
            };
            let mut launch = stream.launch_builder(function);
            launch.arg(&u).arg(&delta).arg(&a).arg(&b).arg(&b_groups).arg(&c).arg(&c_groups);
            launch.arg(&d).arg(&z).arg(&bias).arg(&dout).arg(&checks).arg(&dx0_ptr);
            launch.arg(&du_ptr).arg(&ddelta_ptr).arg(&dz_ptr).arg(&pb).arg(&pc).arg(&pa).arg(&pd).arg(&pbias);
            launch.arg(&dim64).arg(&len64).arg(&state64).arg(&softplus);
            let cfg = LaunchConfig {
                grid_dim: (blocks, 1, 1),
                block_dim: (32 * warps, 1, 1),
                shared_mem_bytes: shared as u32,
            };
            // SAFETY: as above; the partials hold batch x dim / 32 x N x L
            // floats each (dB, dC), rows x N (dA) and rows (dD, d
            // delta_bias); dx0 rows x N when the initial state is given.
            // Shared memory: `gradients_shared_bytes` (under 48 KiB, or
            // opted in for the rotated kernel: checked above).
            unsafe { launch.launch(cfg) }
                .map_err(|e| driver_error("launch of the selective backward (tile gradients)", e))?;
        }

        // 3. The partial sums: dB and dC over each group's blocks, the rest
        // over the batch.
        // SAFETY (each call): the partials' layouts above, written by the
        // gradient kernel before these launches on the same stream.
        let sum = |parts: u64, outers: usize, count: usize, inner: usize| unsafe {
            self.sum_backward_parts(&kernels, parts, outers, count, inner)
        };
        let parts = if rows > 0 && len > 0 { batch } else { 0 };
        Ok(DeviceSsmGrads {
            db: sum(pb, batch * b_groups, if parts > 0 { chunks / b_groups } else { 0 }, state * len)?,
            dc: sum(pc, batch * c_groups, if parts > 0 { chunks / c_groups } else { 0 }, state * len)?,
            da: sum(pa, 1, parts, dim * state)?,
            dd: if has_d { Some(sum(pd, 1, parts, dim)?) } else { None },
            ddelta_bias: if has_bias { Some(sum(pbias, 1, parts, dim)?) } else { None },
            dz: has_z.then_some(dz),
            dinitial_state: has_x0.then_some(dx0),
            du,
            ddelta,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gradient_blocks_fit_in_the_default_shared_memory() {
        // G = 4: 32 x 17 float4 steps, 16 x 32 B and C, 3 x 4 x 32 x 16
        // partial sums, 16 x 32 block sums, 2 x 128 float4 gates.
        assert_eq!(
            gradients_shared_bytes(4, false, false, false),
            16 * 32 * 17 + 4 * (512 + 6144 + 512) + 16 * 256 + 16
        );
        assert_eq!(gradients_shared_bytes(4, false, true, true), gradients_shared_bytes(4, false, false, false));
        assert_eq!(
            gradients_shared_bytes(4, true, false, false),
            16 * 32 * 17 + 4 * (512 + 6144 + 512) + 16 * 256 + 2048
        );
        assert_eq!(gradients_shared_bytes(4, true, false, true), gradients_shared_bytes(4, true, false, false));
        // The narrow copies: a float2 and a float per (row, step), rows of 17.
        let narrow = gradients_shared_bytes(4, true, true, false);
        assert_eq!(narrow, gradients_shared_bytes(4, true, false, false) + 12 * 32 * 17);
        // The short sums: 16 steps of 2 kinds x (16 states x 4 partials + 16).
        assert_eq!(gradients_shared_bytes(4, true, true, true), narrow + 4 * 16 * 2 * 80);
        assert_eq!(
            gradients_shared_bytes(2, true, true, true),
            gradients_shared_bytes(2, true, true, false) + 4 * 16 * 2 * 48
        );
        for g in WARPS {
            assert!(gradients_shared_bytes(g, false, false, false) <= 48 * 1024, "G = {g}");
            assert!(tiles_shared_bytes(g) <= 48 * 1024, "G = {g}");
        }
    }

    #[test]
    fn every_state_size_up_to_16_has_tile_kernels() {
        assert_eq!(warps_for(0), None);
        assert_eq!(warps_for(1), Some(2));
        assert_eq!(warps_for(8), Some(2));
        assert_eq!(warps_for(9), Some(4));
        assert_eq!(warps_for(16), Some(4));
        assert_eq!(warps_for(17), None);
    }
}
