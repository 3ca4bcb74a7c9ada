//! Mamba's selective scan on the GPU (kernels/selective.cuh and
//! selective_tiles.cuh): one module for the executor, compiled on first use,
//! whatever the shapes. It holds three kernels: a chunked block scan (a block
//! per K channels, 2048 steps per chunk, the states carried between chunks in
//! shared memory), a lane-group kernel (a group of lanes per row, about four
//! state indices per lane, each running its recurrences along L), and a tile
//! kernel (a block per 32 channels of one batch, a warp per four state
//! indices, a lane per channel: B and C the same across each warp); see
//! [`LANE_KERNEL_MIN_ROWS`], [`TILE_KERNEL_MIN_ROWS`] and
//! [`LANE_KERNEL_LONG_MIN_ROWS`] for the choice.
//!
//! [`Cuda::selective_scan`] takes host slices, as `Cpu::selective_scan`
//! does; [`Cuda::upload_selective`] and [`Cuda::run_selective`] keep the
//! arguments and results on the device, for callers whose data lives there
//! and for timing the kernel alone.

use std::sync::Arc;

use cudarc::driver::{CudaFunction, CudaModule, LaunchConfig, PushKernelArg};
use scan_core::selective::{Projection, SelectiveScan, SsmInput, SsmLengths, SsmOutput, SsmShape};
use scan_core::{Error, Result};

use crate::blelloch::grid;
use crate::buffer::{driver_error, DeviceBuffer};
use crate::cuda::Cuda;
use crate::kernels::{keyed, lookup};
use crate::source::kernel_files;

/// Threads per block of the chunked block scan.
const THREADS: u32 = 128;

/// The templates the kernel builds on, then the kernel.
const SOURCES: [(&str, &str); 5] = [
    ("util.cuh", include_str!("../../kernels/util.cuh")),
    ("warp.cuh", include_str!("../../kernels/warp.cuh")),
    ("block.cuh", include_str!("../../kernels/block.cuh")),
    ("selective.cuh", include_str!("../../kernels/selective.cuh")),
    ("selective_tiles.cuh", include_str!("../../kernels/selective_tiles.cuh")),
];

/// Warps per block of the lane-group kernel.
const LANE_WARPS: u32 = 4;

/// A lane-group kernel's shape: S lanes per row, `per_lane` state indices
/// per lane, blocks of `steps` steps (kernels/selective.cuh,
/// `selective_scan_lanes<S, P, T, WARPS, IDLE>`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct LaneShape {
    lanes: u32,
    per_lane: u32,
    steps: u32,
}

impl LaneShape {
    const fn new(lanes: u32, per_lane: u32, steps: u32) -> LaneShape {
        LaneShape { lanes, per_lane, steps }
    }

    /// The shape for N = `state`: about four states per lane (so that a warp
    /// holds 32 / S rows, which share their B and C loads), N rounded up to
    /// a power of two, blocks of 8 steps or S; None past N = 256.
    fn for_state(state: usize) -> Option<LaneShape> {
        let lanes = state.max(1).div_ceil(4).next_power_of_two().min(32) as u32;
        let per_lane = state.max(1).div_ceil(lanes as usize).next_power_of_two() as u32;
        let shape = LaneShape::new(lanes, per_lane, lanes.max(8));
        LANE_SHAPES.contains(&shape).then_some(shape)
    }

    /// `SxPxT`, e.g. `4x4x8`.
    fn parse(v: &str) -> Option<LaneShape> {
        let [lanes, per_lane, steps] = three_numbers(v)?;
        Some(LaneShape::new(lanes, per_lane, steps))
    }

    /// The state indices it holds, S x P (in usize: a shape from the
    /// environment or a `Tuning` may be any u32s).
    fn holds(self) -> usize {
        self.lanes as usize * self.per_lane as usize
    }

    /// This shape if it holds N = `state` (whether it is compiled is the
    /// caller's check, on the kernel).
    fn holding(self, state: usize) -> Option<LaneShape> {
        (self.holds() >= state).then_some(self)
    }

    /// Whether some N takes this shape with fewer states than it holds (not
    /// for N = 1 and 2). Each shape takes a run of N ending at S x P, so N =
    /// S x P - 1 is the one to ask about (checked against every N in a test).
    fn takes_idle(self) -> bool {
        let holds = self.holds();
        holds > 1 && LaneShape::for_state(holds - 1) == Some(self)
    }

    /// Rows per warp.
    fn rows_per_warp(self) -> usize {
        32 / self.lanes as usize
    }
}

/// `AxBxC`: three numbers (a kernel shape's name).
fn three_numbers(v: &str) -> Option<[u32; 3]> {
    let mut parts = v.split('x').map(|p| p.trim().parse::<u32>().ok());
    let numbers = [parts.next()??, parts.next()??, parts.next()??];
    parts.next().is_none().then_some(numbers)
}

/// The lane-group kernels: [`LaneShape::for_state`]'s for every N up to 256,
/// each with and without idle states. (Other shapes of N = 16 were timed
/// through [`SelectiveKernelChoice::LaneShape`] and dropped: at batch 8, dim
/// 1536, L 4096 on the H200, with a quarter-warp on one lane of 8 rows, 4 x 4
/// x 8 took 0.719-0.735 ms (0.695-0.707 since with 122 registers), 4 x 4 x 16
/// 1.120-1.143, 8 x 2 x 8 1.077; before that layout 4 x 4 x 8 1.129, 2 x 8 x 8
/// 1.238; bench/gpu-h200-results.md.)
const LANE_SHAPES: [LaneShape; 9] = [
    LaneShape::new(1, 1, 8),
    LaneShape::new(1, 2, 8),
    LaneShape::new(1, 4, 8),
    LaneShape::new(2, 4, 8),
    LaneShape::new(4, 4, 8),
    LaneShape::new(8, 4, 8),
    LaneShape::new(16, 4, 16),
    LaneShape::new(32, 4, 32),
    LaneShape::new(32, 8, 32),
];

/// The lane-group kernels compiled with two rows per lane (and every state
/// live: N = S x states per lane).
const LANE_PAIR_SHAPES: [LaneShape; 1] = [LaneShape::new(4, 4, 8)];

/// Auto takes the lane-group kernel for at least this many rows of at most
/// [`LANE_KERNEL_MAX_LEN`] steps (when B and C vary and N <= 256). Measured
/// on the H200 (bench/gpu-h200-results.md, 2026-12-03; N = 16 unless said,
/// lane kernel against warp2, the chunked kernel Auto takes otherwise):
/// 65536 rows of 8 steps 0.037 ms against 0.321, of 64 steps 0.126 against
/// 0.330, of 128 steps 0.220 against 0.334, of 192 steps 0.316 against
/// 0.341, of 256 steps 0.409 against 0.257 (since the lanes of a row are 8
/// apart and the kernel takes 122 registers: 0.210 against 0.252, and see
/// [`LANE_KERNEL_LONG_MIN_ROWS`] for longer rows); 8192 rows of 128 steps
/// 0.054 against 0.073; 2048 rows of
/// 64 steps 0.037 against 0.044 and of 32 steps 0.030 against 0.040;
/// 262144 rows of 4 steps with N = 4 0.052 against 0.478; 65536 rows of 16
/// steps with N = 64 0.197 against 1.054. The chunked kernels take whole
/// chunks of 256 steps (warp2) or more, so short rows leave most of their
/// lanes idle; the lane kernel is bound by its L1 data pipe past that (84%
/// of peak at L 4096: every lane needs B and C of each of its (step,
/// state) pairs in its registers).
/// Fewer rows than 2048 are not measured and keep the chunked kernels; so
/// does N past 64 (S = 32, blocks of 32 steps: those kernels spill, 400-700
/// bytes per thread under NVRTC for sm_90, and are not timed; they run when
/// asked for, `SelectiveKernelChoice::Lanes`).
const LANE_KERNEL_MIN_ROWS: usize = 2048;
const LANE_KERNEL_MAX_LEN: usize = 192;
const LANE_KERNEL_MAX_STATE: usize = 64;

/// Auto also takes the lane-group kernel for rows of any length, when they
/// are at least this many and take the 4 x 4 x 8 shape (N 9 to 16). Measured
/// on the H200 with N = 16 (bench/gpu-h200-results.md, tenth session), lane
/// kernel against warp2 in the same call: 12288 rows of 4096 steps
/// 0.695-0.707 ms against 0.752-0.764; 65536 rows of 256 steps 0.210
/// against 0.252, of 512 steps 0.413 against 0.483. Fewer rows of 4096
/// steps (eleventh session, one call, median of 9): 2048 rows 0.563 ms
/// against 0.223, 4096 rows 0.595 against 0.263, 8192 rows 0.638 against
/// 0.494, and 12288 rows 0.695 against 0.737 (a warp holds 8 rows: with
/// fewer rows than the GPU has warp slots for, the lane kernel's time hardly
/// shrinks), so the crossover lies between 8192 and 12288 rows and those
/// keep warp2; so do other N at L past 192 (not timed).
const LANE_KERNEL_LONG_MIN_ROWS: usize = 12288;
const LANE_KERNEL_LONG_SHAPE: LaneShape = LaneShape::new(4, 4, 8);

/// The chunked block-scan kernels: (channels per block K, steps per
/// thread, threads per block, blocks per SM to fit in registers). K x steps
/// is 16 (channel, step) pairs per thread. K = 1 serves every shape (a chunk
/// of 2048 steps, as mamba_ssm's kernel for long sequences); K > 1 reads B
/// and C once for K channels and needs both to vary. The register bounds:
/// K = 2 at 4 blocks of 128 per SM fits in 128 registers with no spill in
/// its loop (168 registers and 3 blocks per SM unbounded; 5 blocks spill
/// and ran slower); the others would spill in their loops. A block of one
/// warp needs no barrier per state.
const CHUNKED_SHAPES: [ChunkedShape; 4] = [
    ChunkedShape { k: 1, items: 16, threads: THREADS, min_blocks: None },
    ChunkedShape { k: 2, items: 8, threads: THREADS, min_blocks: Some(4) },
    ChunkedShape { k: 4, items: 4, threads: THREADS, min_blocks: None },
    ChunkedShape { k: 2, items: 8, threads: 32, min_blocks: Some(16) },
];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct ChunkedShape {
    k: u32,
    items: u32,
    threads: u32,
    min_blocks: Option<u32>,
}

/// The chunked kernel takes 2 channels per one-warp block by default when B
/// and C both vary and pairs of channels share them, and rows are at least
/// this many: on the H200 at batch 8, dim 1536, L 4096, N 16 it took 0.733
/// ms against 0.767 for 2 channels per 128-thread block, 1.255 for one
/// channel and 1.090 for four (bench/gpu-h200-results.md). Halving the
/// blocks costs parallelism when rows are few; where that starts to matter
/// is not measured yet.
const CHANNEL_PAIRS_MIN_ROWS: usize = 2048;

/// A tile kernel (kernels/selective_tiles.cuh, `selective_scan_tiles<G,
/// YS>`): a block of `warps` (G) warps owns 32 channels of one batch and
/// group, warp g runs states 4 g .. 4 g + 3 of all 32, so B and C are the
/// same across each warp; `min_blocks`, a register bound (blocks per SM),
/// if any; `y_steps` (YS), the steps whose outputs a lane keeps in
/// registers before storing them (4, 8, 16 or 32).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct TileKernel {
    warps: u32,
    min_blocks: Option<u32>,
    y_steps: u32,
}

impl TileKernel {
    /// Channels per block.
    const ROWS: usize = 32;
    /// Steps per tile.
    const STEPS: usize = 32;

    const fn new(warps: u32, min_blocks: Option<u32>, y_steps: u32) -> TileKernel {
        TileKernel { warps, min_blocks, y_steps }
    }

    /// Every tile kernel the module holds: the defaults, and other shapes of
    /// N = 16 for timing them.
    fn all() -> impl Iterator<Item = TileKernel> {
        TILE_DEFAULTS.into_iter().chain(TILE_OTHERS)
    }

    /// The default kernel for N = `state`, if one holds it.
    fn for_state(state: usize) -> Option<TileKernel> {
        TILE_DEFAULTS.into_iter().find(|k| state <= k.states())
    }

    /// The states it holds.
    fn states(self) -> usize {
        4 * self.warps as usize
    }

    /// Its shared memory (dynamic), as `SsmTiles<G>::Shared`: the steps (dt,
    /// dt u) of its rows, B and C of its states, a partial y per warp.
    fn shared_bytes(self) -> usize {
        tiles_shared_bytes(self.warps)
    }

    fn name(self) -> String {
        let bound = self.min_blocks.map_or(String::new(), |b| format!("_{b}"));
        format!("selective_scan_tiles_{}_{}{bound}", self.warps, self.y_steps)
    }

    fn template(self) -> String {
        format!("selective_scan_tiles<{}, {}>", self.warps, self.y_steps)
    }
}

/// Whether every run of `k` consecutive channels of `s` shares a batch and a
/// group of B and C (both varying): the K channels of a chunked block, the
/// two rows of a lane pair, the 32 of a tile block (forward and backward).
pub(crate) fn runs_share(s: &DeviceSelectiveScan, k: usize) -> bool {
    let dim = s.shape.dim;
    let shares = |groups: Option<usize>| groups.is_some_and(|g| g > 0 && dim % g == 0 && (dim / g) % k == 0);
    k > 0 && dim % k == 0 && shares(s.b.groups) && shares(s.c.groups)
}

/// The shared memory (dynamic) of a tile kernel of `warps` warps (G), as
/// `SsmTiles<G>::Shared`: the steps (dt, dt u) of its 32 rows, B and C of
/// its 4 G states, a partial y per warp; the backward's checkpoint kernel
/// has the same.
pub(crate) fn tiles_shared_bytes(warps: u32) -> usize {
    let (rows, steps, warps) = (TileKernel::ROWS, TileKernel::STEPS, warps as usize);
    let floats = rows * (2 * steps + 4) + steps * 2 * 4 * warps + warps * rows * (steps + 4);
    4 * floats
}

/// Auto takes the tile kernel for at least this many rows longer than
/// [`LANE_KERNEL_MAX_LEN`] with N past [`TILE_KERNEL_MIN_STATE`] (at most
/// 16), when B and C vary and every 32 channels share them. Measured on the
/// H200 with N = 16 (bench/gpu-h200-results.md, fourteenth session), tile
/// kernel against the lane kernel and warp2 in the same call: batch 8, dim
/// 1536, L 4096 0.413-0.428 ms against 0.698-0.724 and 0.760; 8192 rows of
/// 4096 steps 0.325 against 0.654 and 0.504; 4096 rows 0.263 against 0.603
/// and 0.283; 65536 rows of 256 steps 0.167 against 0.231 and 0.269; 32768
/// of 512 0.165 against 0.223 and 0.270. Fewer rows are not measured (a
/// block per 32 rows: 4096 rows are one block per SM) and keep warp2.
const TILE_KERNEL_MIN_ROWS: usize = 4096;
const TILE_KERNEL_MIN_STATE: usize = 8;

/// The tile kernels Auto and `Tiles` take, by N: at N = 16, outputs kept
/// over 16 steps under a 3-block register bound (0.409-0.429 ms at batch 8,
/// dim 1536, L 4096 against 0.413-0.427 for 4 steps unbounded, and 0.240
/// against 0.263 at 4096 rows: more loads in flight where warps are few).
const TILE_DEFAULTS: [TileKernel; 2] = [TileKernel::new(2, None, 4), TileKernel::new(4, Some(3), 16)];
/// The register bound (blocks per SM) and the steps of y kept in registers
/// of the default tile kernel of `warps` warps, which the training forward
/// (backward_tiles.rs) copies.
pub(crate) fn tile_default_shape(warps: u32) -> Option<(Option<u32>, u32)> {
    TILE_DEFAULTS.into_iter().find(|k| k.warps == warps).map(|k| (k.min_blocks, k.y_steps))
}

/// Other tile kernels of N = 16, for timing ([`SelectiveKernelChoice::TileShape`]).
const TILE_OTHERS: [TileKernel; 2] = [TileKernel::new(4, None, 4), TileKernel::new(4, Some(3), 8)];

/// A chunked kernel: its shape, and whether B and whether C vary (each of
/// the four forms is compiled for K = 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Chunked {
    shape: ChunkedShape,
    vary_b: bool,
    vary_c: bool,
}

impl Chunked {
    /// Every chunked kernel the module holds.
    fn all() -> impl Iterator<Item = Chunked> {
        let forms = [(false, false), (false, true), (true, false), (true, true)];
        let single = forms.into_iter().map(|(vary_b, vary_c)| Chunked { shape: CHUNKED_SHAPES[0], vary_b, vary_c });
        let shared = CHUNKED_SHAPES.into_iter().skip(1).map(|shape| Chunked { shape, vary_b: true, vary_c: true });
        single.chain(shared)
    }

    fn name(self) -> String {
        let form = |vary: bool| if vary { 'v' } else { 'f' };
        let ChunkedShape { k, threads, .. } = self.shape;
        format!("selective_scan_chunked_{k}_{threads}_{}{}", form(self.vary_b), form(self.vary_c))
    }

    fn template(self) -> String {
        let ChunkedShape { k, items, threads, .. } = self.shape;
        format!("selective_scan_chunked<{threads}, {items}, {k}, {}, {}>", self.vary_b, self.vary_c)
    }
}

/// Which GPU selective-scan kernel runs ([`Tuning::selective_kernel`](crate::Tuning::selective_kernel);
/// the environment variable `SCAN_CUDA_SELECTIVE_KERNEL=auto|block|lanes|lanes2|channels2|channels4|warp2|tiles|lanes:SxPxT|tiles:GxBxY`
/// does the same for programs that do not set it; see
/// [`SelectiveKernelChoice::parse`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum SelectiveKernelChoice {
    /// The default: the lane-group kernel for many short rows; the tile
    /// kernel for at least 4096 longer rows at N 9 to 16 where B and C
    /// allow it ([`Tiles`](SelectiveKernelChoice::Tiles)); the lane-group
    /// kernel for very many rows of any length at N 9 to 16 otherwise (at
    /// least 12288 rows: Mamba's batch 8 x dim 1536); else the chunked
    /// block scan (two channels per one-warp block where B and C allow it
    /// and rows are many).
    #[default]
    Auto,
    /// The chunked block scan, one block per (batch, channel) row.
    Block,
    /// The lane-group kernel, when N (at most 256), the forms of B and C
    /// (both varying) and N x L (below 2^32: the kernel's offsets are 32-bit)
    /// allow it; else the block scan.
    Lanes,
    /// The chunked block scan for K = 2 or 4 channels per block, which read
    /// B and C once for K channels: when B and C both vary and K divides the
    /// channels of a group (else the block scan). Auto takes K = 2 where it
    /// can for many rows.
    Channels(u32),
    /// The same with one warp per block (K = 2): no barrier per state, a
    /// chunk of 256 steps; when B and C allow it, as for `Channels`.
    ChannelsPerWarp(u32),
    /// The lane-group kernel with two rows per lane sharing their B and C
    /// registers (N = 16 only, dim and each group's channels even), else
    /// `Lanes`.
    LanePairs,
    /// The lane-group kernel of one compiled shape, for timing them: S lanes
    /// per row, state indices per lane, steps per block (`LaneShape(4, 4,
    /// 8)` is N = 16's default). A shape that is not compiled, or that holds
    /// fewer states than N, falls back to `Lanes`.
    LaneShape(u32, u32, u32),
    /// The tile kernel: 32 channels per block, a warp per 4 states, B and C
    /// read once per warp (N at most 16, B and C varying, dim and each
    /// group's channels multiples of 32), else `Auto`'s choice.
    Tiles,
    /// The tile kernel of one compiled shape, for timing them: warps per
    /// block, blocks per SM of its register bound (0: none), and steps of
    /// outputs kept in registers. A shape that is not compiled, or that
    /// holds fewer states than N, falls back to `Tiles`.
    TileShape(u32, u32, u32),
}

impl SelectiveKernelChoice {
    fn from_env() -> Option<SelectiveKernelChoice> {
        crate::env::TuningVar {
            name: "SCAN_CUDA_SELECTIVE_KERNEL",
            takes: "auto, block, lanes, lanes2, channels2, channels4, warp2, tiles, lanes:SxPxT or tiles:GxBxY",
        }
        .read(SelectiveKernelChoice::parse)
    }

    /// A choice by the name `SCAN_CUDA_SELECTIVE_KERNEL` takes: `auto`,
    /// `block`, `lanes`, `lanes2`, `channels2`, `channels4`, `warp2`, `tiles`, `lanes:SxPxT`
    /// for [`SelectiveKernelChoice::LaneShape`], or `tiles:GxBxY` for
    /// [`SelectiveKernelChoice::TileShape`]. (A value of the variable that
    /// this does not parse is ignored, with a warning on stderr the first time:
    /// `Auto` runs.)
    ///
    /// ```
    /// use scan_cuda::SelectiveKernelChoice;
    /// assert_eq!(SelectiveKernelChoice::parse("warp2"), Some(SelectiveKernelChoice::ChannelsPerWarp(2)));
    /// assert_eq!(SelectiveKernelChoice::parse("lanes:4x4x8"), Some(SelectiveKernelChoice::LaneShape(4, 4, 8)));
    /// assert_eq!(SelectiveKernelChoice::parse("tiles:4x3x16"), Some(SelectiveKernelChoice::TileShape(4, 3, 16)));
    /// assert_eq!(SelectiveKernelChoice::parse("fast"), None);
    /// ```
    pub fn parse(name: &str) -> Option<SelectiveKernelChoice> {
        Some(match name {
            "auto" => SelectiveKernelChoice::Auto,
            "block" => SelectiveKernelChoice::Block,
            "lanes" => SelectiveKernelChoice::Lanes,
            "lanes2" => SelectiveKernelChoice::LanePairs,
            "channels2" => SelectiveKernelChoice::Channels(2),
            "channels4" => SelectiveKernelChoice::Channels(4),
            "warp2" => SelectiveKernelChoice::ChannelsPerWarp(2),
            "tiles" => SelectiveKernelChoice::Tiles,
            other if other.starts_with("tiles:") => {
                let [warps, bound, y_steps] = three_numbers(&other["tiles:".len()..])?;
                SelectiveKernelChoice::TileShape(warps, bound, y_steps)
            }
            other => {
                let shape = LaneShape::parse(other.strip_prefix("lanes:")?)?;
                SelectiveKernelChoice::LaneShape(shape.lanes, shape.per_lane, shape.steps)
            }
        })
    }
}

/// A lane-group kernel: its shape, whether it skips states past N (N below
/// S x states per lane), and whether each lane runs two rows (consecutive
/// channels sharing B and C) on one set of B and C registers. B and C vary
/// (the fixed forms run the chunked kernel).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct LaneKernel {
    shape: LaneShape,
    idle: bool,
    pairs: bool,
}

impl LaneKernel {
    /// Every lane-group kernel the module holds.
    fn all() -> impl Iterator<Item = LaneKernel> {
        let single = LANE_SHAPES.into_iter().flat_map(move |shape| {
            [false, true].into_iter().filter(move |&idle| !idle || shape.takes_idle()).map(move |idle| LaneKernel {
                shape,
                idle,
                pairs: false,
            })
        });
        let pairs = LANE_PAIR_SHAPES.into_iter().map(|shape| LaneKernel { shape, idle: false, pairs: true });
        single.chain(pairs)
    }

    fn name(self) -> String {
        let LaneShape { lanes, per_lane, steps } = self.shape;
        let idle = if self.idle { "_idle" } else { "" };
        let pairs = if self.pairs { "_pairs" } else { "" };
        format!("selective_scan_lanes_{lanes}_{per_lane}_{steps}{idle}{pairs}")
    }

    fn template(self) -> String {
        let LaneShape { lanes, per_lane, steps } = self.shape;
        let rows = if self.pairs { 2 } else { 1 };
        format!("selective_scan_lanes<{lanes}, {per_lane}, {steps}, {LANE_WARPS}, {}, {rows}>", self.idle)
    }

    /// Rows per warp.
    fn rows_per_warp(self) -> usize {
        self.shape.rows_per_warp() * if self.pairs { 2 } else { 1 }
    }
}

/// The kernel a run takes.
#[derive(Clone, Copy)]
enum Plan {
    /// The chunked block scan, K channels per block.
    Chunked(Chunked),
    Lanes(LaneKernel),
    Tiles(TileKernel),
}

/// The loaded kernels (the module must outlive the functions).
pub(crate) struct SelectiveKernel {
    _module: Arc<CudaModule>,
    /// Each chunked kernel with the dynamic shared memory it may take
    /// (opted in once at load, past 48 KiB, so that launches never change
    /// the function's attributes: two threads launching with different N
    /// would race).
    chunked: Vec<(Chunked, CudaFunction, usize)>,
    lanes: Vec<(LaneKernel, CudaFunction)>,
    /// Each tile kernel with the dynamic shared memory it may take.
    tiles: Vec<(TileKernel, CudaFunction, usize)>,
}

/// An `extern "C"` kernel `name` of `threads` threads (and at least
/// `min_blocks` of them per SM, when given: a register budget) that calls
/// the template instance `template` (every selective-scan kernel takes the
/// same arguments).
fn kernel_wrapper(name: &str, threads: u32, min_blocks: Option<u32>, template: &str) -> String {
    let bounds = match min_blocks {
        Some(blocks) => format!("{threads}, {blocks}"),
        None => threads.to_string(),
    };
    format!(
        "extern \"C\" __global__ void __launch_bounds__({bounds}) {name}(\n\
         \x20   const float* u, const float* delta, const float* A, const float* B, unsigned long long b_groups,\n\
         \x20   const float* C, unsigned long long c_groups, const float* D, const float* z, const float* delta_bias,\n\
         \x20   const float* x0, float* out, float* last, unsigned long long batch, unsigned long long dim,\n\
         \x20   unsigned long long len, unsigned long long state, int softplus) {{\n\
         \x20 scan::{template}(u, delta, A, scan::SsmProjection{{B, b_groups}},\n\
         \x20     scan::SsmProjection{{C, c_groups}}, D, z, delta_bias, x0, out, last, batch, dim, len, state, softplus != 0);\n\
         }}\n"
    )
}

fn source() -> String {
    let mut code = kernel_files(&SOURCES);
    for kernel in Chunked::all() {
        code.push_str(&kernel_wrapper(
            &kernel.name(),
            kernel.shape.threads,
            kernel.shape.min_blocks,
            &kernel.template(),
        ));
    }
    for kernel in LaneKernel::all() {
        code.push_str(&kernel_wrapper(&kernel.name(), 32 * LANE_WARPS, None, &kernel.template()));
    }
    for kernel in TileKernel::all() {
        code.push_str(&kernel_wrapper(&kernel.name(), 32 * kernel.warps, kernel.min_blocks, &kernel.template()));
    }
    code
}

/// B or C on the device: varying (batch, groups, N, L), or fixed (dim, N).
#[derive(Debug)]
pub struct DeviceProjection {
    /// The values.
    pub data: DeviceBuffer<f32>,
    /// Groups of channels sharing one projection; `None` for the fixed form.
    pub groups: Option<usize>,
}

/// A selective scan's arguments and results on the device (see
/// [`SelectiveScan`] for their meaning and layouts): made by
/// [`Cuda::upload_selective`], run by [`Cuda::run_selective`], read back by
/// [`DeviceSelectiveScan::download`]. The fields are public so that data
/// already on the device can be copied in (`DeviceBuffer::copy_from`); the
/// lengths are checked again at every run.
#[derive(Debug)]
pub struct DeviceSelectiveScan {
    /// The sizes.
    pub shape: SsmShape,
    /// (batch, dim, L).
    pub u: DeviceBuffer<f32>,
    /// (batch, dim, L), before bias and softplus.
    pub delta: DeviceBuffer<f32>,
    /// (dim, N).
    pub a: DeviceBuffer<f32>,
    /// The input projection.
    pub b: DeviceProjection,
    /// The output projection.
    pub c: DeviceProjection,
    /// (dim).
    pub d: Option<DeviceBuffer<f32>>,
    /// (batch, dim, L).
    pub z: Option<DeviceBuffer<f32>>,
    /// (dim).
    pub delta_bias: Option<DeviceBuffer<f32>>,
    /// Whether delta (with its bias) goes through a softplus.
    pub delta_softplus: bool,
    /// (batch, dim, N); zero if absent.
    pub initial_state: Option<DeviceBuffer<f32>>,
    /// The result, (batch, dim, L).
    pub out: DeviceBuffer<f32>,
    /// The state after the last step, (batch, dim, N), if asked for.
    pub last_state: Option<DeviceBuffer<f32>>,
}

impl DeviceSelectiveScan {
    /// Copies `out` (and the last state, if kept) to the host; waits for the
    /// run.
    pub fn download(&self) -> Result<SsmOutput> {
        self.download_with(DeviceBuffer::download)
    }

    /// The results, each buffer copied back by `download`.
    pub(crate) fn download_with(&self, download: impl Fn(&DeviceBuffer<f32>) -> Result<Vec<f32>>) -> Result<SsmOutput> {
        let last_state = self.last_state.as_ref().map(&download).transpose()?;
        Ok(SsmOutput { out: download(&self.out)?, last_state })
    }

    /// The same checks as [`SelectiveScan::validate`], on the device
    /// buffers' lengths (the fields are public and may have changed), and
    /// the results' lengths.
    pub(crate) fn validate(&self) -> Result<()> {
        let len = |b: &Option<DeviceBuffer<f32>>| b.as_ref().map(DeviceBuffer::len);
        self.shape.check(&SsmLengths {
            u: self.u.len(),
            delta: self.delta.len(),
            a: self.a.len(),
            b: (self.b.data.len(), self.b.groups),
            c: (self.c.data.len(), self.c.groups),
            d: len(&self.d),
            z: len(&self.z),
            delta_bias: len(&self.delta_bias),
            initial_state: len(&self.initial_state),
        })?;
        let rows = self.shape.batch * self.shape.dim;
        Error::check_lengths(rows * self.shape.len, self.out.len())?;
        if let Some(last) = &self.last_state {
            Error::check_lengths(rows * self.shape.state, last.len())?;
        }
        Ok(())
    }
}

impl Cuda {
    /// Checks `s`'s arguments ([`DeviceSelectiveScan::validate`]) and that
    /// every buffer of it belongs to this executor's context (a buffer of
    /// another device would be a faulting launch, not an error).
    pub(crate) fn check_selective(&self, s: &DeviceSelectiveScan) -> Result<()> {
        s.validate()?;
        for (buffer, name) in
            [(&s.u, "u"), (&s.delta, "delta"), (&s.a, "a"), (&s.b.data, "b"), (&s.c.data, "c"), (&s.out, "out")]
        {
            self.check_buffer(buffer, name)?;
        }
        let optional = [
            (&s.d, "d"),
            (&s.z, "z"),
            (&s.delta_bias, "delta_bias"),
            (&s.initial_state, "initial_state"),
            (&s.last_state, "last_state"),
        ];
        for (buffer, name) in optional.into_iter().filter_map(|(b, n)| b.as_ref().map(|b| (b, n))) {
            self.check_buffer(buffer, name)?;
        }
        Ok(())
    }

    /// Mamba's selective scan (`selective_scan_fn` of mamba_ssm; see
    /// [`scan_core::selective`]) on the GPU, from and to host slices: the
    /// arguments are checked ([`Error::WrongShape`] names the argument and
    /// both shapes), uploaded, scanned by one kernel launch, and the results
    /// downloaded.
    ///
    /// Growing states (A dt > 0, which Mamba's A = -exp(A_log) never gives)
    /// past f32's range: the kernels for long rows combine a thread's run of
    /// steps into one decay, e^(A Σdt), which overflows to infinity where
    /// A Σdt passes about 88.7. A state that is zero there stays exact; a
    /// nonzero one that the decay would bring back into range (1e-30 times
    /// e^89.4) comes out infinite, where the CPU, stepping one at a time,
    /// gives the finite value.
    ///
    /// ```no_run
    /// # fn main() -> scan_core::Result<()> {
    /// use scan_core::selective::{Projection, SelectiveScan, SsmShape};
    /// let cuda = scan_cuda::Cuda::new()?;
    /// let shape = SsmShape { batch: 1, dim: 1, len: 2, state: 1 };
    /// let b = Projection::Fixed(&[1.0]);
    /// let args = SelectiveScan::new(shape, &[1.0, 1.0], &[1.0, 1.0], &[0.0], b, b).return_last_state(true);
    /// let r = cuda.selective_scan(&args)?;
    /// // A = 0 keeps the state: x = 1, then 2.
    /// assert_eq!(r.out, [1.0, 2.0]);
    /// assert_eq!(r.last_state, Some(vec![2.0]));
    /// # Ok(()) }
    /// ```
    pub fn selective_scan<T: SsmInput>(&self, args: &SelectiveScan<'_, T>) -> Result<SsmOutput> {
        let mut on_device = self.upload_selective(args)?;
        self.run_selective(&mut on_device)?;
        self.download_selective(&on_device)
    }

    /// [`Cuda::selective_scan`] into the vectors of `output`, which are
    /// resized to the results' lengths (`last_state` becomes `None` unless
    /// `args` asks for it): for a loop that scans step after step, whose
    /// results then land in host memory written before instead of new
    /// vectors, whose first touch of each page costs more than the
    /// copy itself (on an H100 host the 201 MB `out` of 8/11's shape took
    /// 4.5 ms into a reused vector and 29.5 ms into a new one). After an
    /// error, `output`'s contents are unspecified (the arguments' checks
    /// fail before it is touched).
    ///
    /// ```no_run
    /// # fn main() -> scan_core::Result<()> {
    /// use scan_core::selective::{Projection, SelectiveScan, SsmOutput, SsmShape};
    /// let cuda = scan_cuda::Cuda::new()?;
    /// let shape = SsmShape { batch: 1, dim: 1, len: 2, state: 1 };
    /// let b = Projection::Fixed(&[1.0]);
    /// let mut output = SsmOutput { out: Vec::new(), last_state: None };
    /// for step in 0..3 {
    ///     let u = [step as f32, 1.0];
    ///     let args = SelectiveScan::new(shape, &u, &[1.0, 1.0], &[0.0], b, b);
    ///     cuda.selective_scan_into(&args, &mut output)?;
    ///     assert_eq!(output.out, [step as f32, step as f32 + 1.0]);
    /// }
    /// # Ok(()) }
    /// ```
    pub fn selective_scan_into<T: SsmInput>(&self, args: &SelectiveScan<'_, T>, output: &mut SsmOutput) -> Result<()> {
        let mut on_device = self.upload_selective(args)?;
        self.run_selective(&mut on_device)?;
        let fit = |v: &mut Vec<f32>, len: usize| -> Result<()> {
            v.truncate(len);
            v.try_reserve_exact(len - v.len())
                .map_err(|_| Error::TooLarge { what: format!("cannot allocate {len} results on the host") })?;
            v.resize(len, 0.0);
            Ok(())
        };
        fit(&mut output.out, on_device.out.len())?;
        self.download_into(&on_device.out, &mut output.out)?;
        match &on_device.last_state {
            Some(last) => {
                let kept = output.last_state.get_or_insert_with(Vec::new);
                fit(kept, last.len())?;
                self.download_into(last, kept)
            }
            None => {
                output.last_state = None;
                Ok(())
            }
        }
    }

    /// Checks `args` and copies them to the device, with room for the
    /// results (and the last state when `args` asks for it). bf16 and f16
    /// activations (`u`, `delta`, `z`, `B`, `C`) are copied at their own
    /// width and widened to f32 on the device ([`Cuda::widen_to_f32`]):
    /// half the bytes of their f32 values cross the bus, and the host makes
    /// no f32 copy of them.
    pub fn upload_selective<T: SsmInput>(&self, args: &SelectiveScan<'_, T>) -> Result<DeviceSelectiveScan> {
        args.validate()?;
        let SsmShape { batch, dim, len, state } = args.shape;
        let rows = batch * dim;
        let projection = |p: Projection<'_, T>| -> Result<DeviceProjection> {
            Ok(match p {
                Projection::Varying { data, groups } => {
                    DeviceProjection { data: self.upload_widened(data)?, groups: Some(groups) }
                }
                Projection::Fixed(data) => DeviceProjection { data: self.upload_widened(data)?, groups: None },
            })
        };
        let optional = |x: Option<&[f32]>| x.map(|x| self.upload(x)).transpose();
        Ok(DeviceSelectiveScan {
            shape: args.shape,
            u: self.upload_widened(args.u)?,
            delta: self.upload_widened(args.delta)?,
            a: self.upload(args.a)?,
            b: projection(args.b)?,
            c: projection(args.c)?,
            d: optional(args.d)?,
            z: args.z.map(|z| self.upload_widened(z)).transpose()?,
            delta_bias: optional(args.delta_bias)?,
            delta_softplus: args.delta_softplus,
            initial_state: optional(args.initial_state)?,
            out: self.alloc(rows * len)?,
            last_state: if args.return_last_state { Some(self.alloc(rows * state)?) } else { None },
        })
    }

    /// Copies the results of `s` (`out`, and the last state if kept) to the
    /// host after the work queued on the stream, as
    /// [`DeviceSelectiveScan::download`] does, but through the executor's
    /// staging buffers where they are large ([`Cuda::download`]); buffers of
    /// another stream than the executor's are an error here.
    pub fn download_selective(&self, s: &DeviceSelectiveScan) -> Result<SsmOutput> {
        s.download_with(|b| self.download(b))
    }

    /// Runs the selective scan of `s` on the device, writing `s.out` (and
    /// `s.last_state`): one launch, queued on the stream (see [`Cuda`] on
    /// when failures show).
    pub fn run_selective(&self, s: &mut DeviceSelectiveScan) -> Result<()> {
        self.check_selective(s)?;
        let SsmShape { batch, dim, len, state } = s.shape;
        let rows = batch * dim;
        if rows == 0 {
            return Ok(());
        }
        if len == 0 {
            // No step: no output, and the last state is the starting one (or
            // zeros), with no launch: a grid of a block per row could pass
            // CUDA's limit for rows that hold nothing (the CPU returns at
            // once too).
            if let Some(last) = s.last_state.as_mut() {
                match &s.initial_state {
                    Some(x0) => last.copy_from(x0)?,
                    None => self.stream().memset_zeros(&mut last.slice).map_err(|e| driver_error("zero fill", e))?,
                }
            }
            return Ok(());
        }
        let kernel = self.selective_kernel()?;
        let stream = self.stream();
        let ptr = |b: &DeviceBuffer<f32>| b.device_ptr(stream);
        let optional = |b: &Option<DeviceBuffer<f32>>| b.as_ref().map_or(0, ptr);
        let (u, delta, a) = (ptr(&s.u), ptr(&s.delta), ptr(&s.a));
        let (b, c) = (ptr(&s.b.data), ptr(&s.c.data));
        let (b_groups, c_groups) = (s.b.groups.unwrap_or(0) as u64, s.c.groups.unwrap_or(0) as u64);
        let (d, z, bias, x0) = (optional(&s.d), optional(&s.z), optional(&s.delta_bias), optional(&s.initial_state));
        let out = s.out.device_ptr_mut(stream);
        let last = s.last_state.as_mut().map_or(0, |l| l.device_ptr_mut(stream));
        let (batch, dim, len, state) = (batch as u64, dim as u64, len as u64, state as u64);
        let softplus = i32::from(s.delta_softplus);
        let (function, cfg) = match self.selective_plan(s) {
            Plan::Lanes(chosen) => {
                let function = keyed(&kernel.lanes, &chosen, "a lane-group")?;
                let blocks = rows.div_ceil(chosen.rows_per_warp()).div_ceil(LANE_WARPS as usize);
                let block = (32 * LANE_WARPS, 1, 1);
                (function, LaunchConfig { grid_dim: (grid(blocks)?, 1, 1), block_dim: block, shared_mem_bytes: 0 })
            }
            Plan::Tiles(chosen) => {
                let (function, dynamic_limit) = with_limit(&kernel.tiles, &chosen, "a tile")?;
                let bytes = chosen.shared_bytes();
                if bytes > dynamic_limit {
                    return Err(Error::TooLarge {
                        what: format!(
                            "the selective scan's tile kernel needs {bytes} bytes of shared memory; this GPU gives it \
                             {dynamic_limit}"
                        ),
                    });
                }
                let blocks = rows / TileKernel::ROWS;
                let block = (32 * chosen.warps, 1, 1);
                let shared_mem_bytes = bytes as u32;
                (function, LaunchConfig { grid_dim: (grid(blocks)?, 1, 1), block_dim: block, shared_mem_bytes })
            }
            Plan::Chunked(chosen) => {
                let (function, dynamic_limit) = with_limit(&kernel.chunked, &chosen, "a chunked block-scan")?;
                (function, self.block_launch(dynamic_limit, rows / chosen.shape.k as usize, state, chosen.shape)?)
            }
        };
        let mut launch = stream.launch_builder(function);
        launch.arg(&u).arg(&delta).arg(&a).arg(&b).arg(&b_groups).arg(&c).arg(&c_groups);
        launch.arg(&d).arg(&z).arg(&bias).arg(&x0).arg(&out).arg(&last);
        launch.arg(&batch).arg(&dim).arg(&len).arg(&state).arg(&softplus);
        // SAFETY: every pointer addresses a live device buffer whose length
        // `validate` checked against the shape (or is 0 for an absent
        // option); either kernel reads and writes only within those shapes
        // (lanes past the last row read row 0 and write nothing).
        unsafe { launch.launch(cfg) }.map_err(|e| driver_error("launch of the selective scan", e))?;
        Ok(())
    }

    /// The name of the kernel that [`Cuda::run_selective`] launches for `s`
    /// (the tuning's or the environment's choice where the shape allows it,
    /// else Auto's): for tests, benchmarks and logs, not a stable interface.
    ///
    /// ```no_run
    /// # fn main() -> scan_core::Result<()> {
    /// # let (u, delta, a, b, c) = (vec![0.0f32; 32], vec![0.0f32; 32], vec![-1.0f32; 16], vec![0.0f32; 16], vec![0.0f32; 16]);
    /// use scan_core::selective::{Projection, SelectiveScan, SsmShape};
    /// use scan_cuda::Cuda;
    /// let cuda = Cuda::new()?;
    /// let shape = SsmShape { batch: 1, dim: 32, len: 1, state: 16 };
    /// let args = SelectiveScan::new(
    ///     shape,
    ///     &u,
    ///     &delta,
    ///     &a[..],
    ///     Projection::Varying { data: &b, groups: 1 },
    ///     Projection::Varying { data: &c, groups: 1 },
    /// );
    /// let on_device = cuda.upload_selective(&args)?;
    /// println!("{}", cuda.selective_kernel_name(&on_device));
    /// # Ok(())
    /// # }
    /// ```
    pub fn selective_kernel_name(&self, s: &DeviceSelectiveScan) -> String {
        match self.selective_plan(s) {
            Plan::Chunked(k) => k.name(),
            Plan::Lanes(k) => k.name(),
            Plan::Tiles(k) => k.name(),
        }
    }

    /// Which kernel runs `s`: the tuning's choice, else the environment's,
    /// else by shape; a choice the shape does not allow falls back to the
    /// block scan.
    fn selective_plan(&self, s: &DeviceSelectiveScan) -> Plan {
        let SsmShape { batch, dim, len, state } = s.shape;
        // (Saturating: `selective_kernel_name` takes fields not yet checked.)
        let rows = batch.saturating_mul(dim);
        let choice = match self.tuning().selective() {
            SelectiveKernelChoice::Auto => SelectiveKernelChoice::from_env().unwrap_or_default(),
            chosen => chosen,
        };
        let (vary_b, vary_c) = (s.b.groups.is_some(), s.c.groups.is_some());
        // A lane-group kernel of `shape`, if compiled: B and C vary, and N L
        // fits the kernel's 32-bit offsets.
        let lane_kernel = |shape: LaneShape| {
            let kernel = LaneKernel { shape, idle: state < shape.holds(), pairs: false };
            let fits = vary_b && vary_c && state.checked_mul(len).is_some_and(|n| n <= u32::MAX as usize);
            (fits && LaneKernel::all().any(|k| k == kernel)).then_some(kernel)
        };
        let lanes = LaneShape::for_state(state).and_then(lane_kernel);
        let single = Plan::Chunked(Chunked { shape: CHUNKED_SHAPES[0], vary_b, vary_c });
        let runs_share = |k: usize| runs_share(s, k);
        // The tile kernel: B and C vary and each block's 32 channels share them.
        let tiles = TileKernel::for_state(state).filter(|_| runs_share(TileKernel::ROWS)).map(Plan::Tiles);
        let tile_shape = |g: u32, b: u32, y: u32| {
            let kernel = TileKernel::new(g, (b > 0).then_some(b), y);
            let compiled = TileKernel::all().any(|k| k == kernel);
            (compiled && state <= kernel.states() && runs_share(TileKernel::ROWS)).then_some(Plan::Tiles(kernel))
        };
        let shared = |k: u32, threads: u32| {
            let shape = CHUNKED_SHAPES.into_iter().find(|c| c.k == k && c.threads == threads);
            shape
                .filter(|_| runs_share(k as usize))
                .map(|shape| Plan::Chunked(Chunked { shape, vary_b: true, vary_c: true }))
        };
        let auto = || match lanes {
            Some(kernel)
                if rows >= LANE_KERNEL_MIN_ROWS && len <= LANE_KERNEL_MAX_LEN && state <= LANE_KERNEL_MAX_STATE =>
            {
                Plan::Lanes(kernel)
            }
            _ if rows >= TILE_KERNEL_MIN_ROWS && state > TILE_KERNEL_MIN_STATE && tiles.is_some() => {
                tiles.unwrap_or(single)
            }
            Some(kernel) if rows >= LANE_KERNEL_LONG_MIN_ROWS && kernel.shape == LANE_KERNEL_LONG_SHAPE => {
                Plan::Lanes(kernel)
            }
            _ if rows >= CHANNEL_PAIRS_MIN_ROWS => shared(2, 32).unwrap_or(single),
            _ => single,
        };
        match choice {
            SelectiveKernelChoice::Auto => auto(),
            SelectiveKernelChoice::Block => single,
            SelectiveKernelChoice::Lanes => lanes.map_or(single, Plan::Lanes),
            SelectiveKernelChoice::LanePairs => {
                // Two rows per lane: both in one batch and one group of B and C.
                let pairs = lanes.map(|k| LaneKernel { pairs: true, ..k });
                let compiled = |k: &LaneKernel| LaneKernel::all().any(|c| c == *k);
                pairs.filter(|k| runs_share(2) && compiled(k)).or(lanes).map_or(single, Plan::Lanes)
            }
            SelectiveKernelChoice::LaneShape(s, p, t) => {
                LaneShape::new(s, p, t).holding(state).and_then(lane_kernel).or(lanes).map_or(single, Plan::Lanes)
            }
            SelectiveKernelChoice::Channels(k) => shared(k, THREADS).unwrap_or(single),
            SelectiveKernelChoice::ChannelsPerWarp(k) => shared(k, 32).unwrap_or(single),
            SelectiveKernelChoice::Tiles => tiles.unwrap_or_else(auto),
            SelectiveKernelChoice::TileShape(g, b, y) => tile_shape(g, b, y).or(tiles).unwrap_or_else(auto),
        }
    }

    /// The launch of a chunked block-scan kernel (`k` channels per block)
    /// over `blocks` blocks: the carried states (two buffers) and A (one) in
    /// shared memory, at most `dynamic_limit` bytes (what the kernel was
    /// opted in to at load).
    fn block_launch(
        &self,
        dynamic_limit: usize,
        blocks: usize,
        state: u64,
        shape: ChunkedShape,
    ) -> Result<LaunchConfig> {
        let k = shape.k;
        let bytes = 3 * u64::from(k) * state * 4;
        let shared = u32::try_from(bytes).map_err(|_| Error::TooLarge { what: "state size".into() })?;
        if shared as usize > dynamic_limit {
            return Err(Error::TooLarge {
                what: format!(
                    "a state of {state} (N) for {k} channel(s) per block needs {shared} bytes of shared memory; this \
                     GPU gives the kernel {dynamic_limit}"
                ),
            });
        }
        Ok(LaunchConfig { grid_dim: (grid(blocks)?, 1, 1), block_dim: (shape.threads, 1, 1), shared_mem_bytes: shared })
    }

    /// The selective-scan kernel, loaded once per executor.
    fn selective_kernel(&self) -> Result<Arc<SelectiveKernel>> {
        self.kernels_once(&self.selective, source, "selective_scan", |module| {
            let limit = crate::policy::shared_limit_per_block(self.capability());
            // Each kernel with the dynamic shared memory it is opted in to.
            let opted_in = |name: String| -> Result<(CudaFunction, usize)> {
                let function = lookup(&module, &name)?;
                let dynamic = opt_in_dynamic_shared(&function, limit)?;
                Ok((function, dynamic))
            };
            let chunked =
                Chunked::all().map(|c| opted_in(c.name()).map(|(f, limit)| (c, f, limit))).collect::<Result<_>>()?;
            let lanes = LaneKernel::all().map(|k| Ok((k, lookup(&module, &k.name())?))).collect::<Result<_>>()?;
            let tiles =
                TileKernel::all().map(|k| opted_in(k.name()).map(|(f, limit)| (k, f, limit))).collect::<Result<_>>()?;
            Ok(SelectiveKernel { _module: module, chunked, lanes, tiles })
        })
    }
}

/// The kernel keyed `key` in `list` and the dynamic shared memory it was
/// opted in to (`what` names the family in the internal error of a kernel
/// missing from the module).
pub(crate) fn with_limit<'a, K: PartialEq>(
    list: &'a [(K, CudaFunction, usize)],
    key: &K,
    what: &str,
) -> Result<(&'a CudaFunction, usize)> {
    list.iter()
        .find(|(k, _, _)| k == key)
        .map(|(_, f, limit)| (f, *limit))
        .ok_or_else(|| Error::Other(format!("internal: {what} kernel is missing")))
}

/// Lets `function` take all the dynamic shared memory a block may have
/// (`limit` less its static shared memory) and returns that amount. Raising
/// the cap changes no launch that asks for less: it is a permission, not a
/// reservation. Without the opt-in a block has 48 KiB, static and dynamic
/// together; a GPU that refuses the opt-in (an architecture whose entry in
/// `shared_limit_per_block` is wrong) keeps that cap, so that only the
/// launches that need more fail, with a clear error (`block_launch`), not
/// the load.
pub(crate) fn opt_in_dynamic_shared(function: &CudaFunction, limit: usize) -> Result<usize> {
    use cudarc::driver::sys::CUfunction_attribute as Attribute;
    let fixed = function
        .get_attribute(Attribute::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)
        .map_err(|e| driver_error("shared memory query", e))?;
    let fixed = usize::try_from(fixed).unwrap_or(0);
    let without_opt_in = (48 * 1024usize).saturating_sub(fixed);
    let wanted = limit.saturating_sub(fixed);
    if wanted > without_opt_in {
        let asked = i32::try_from(wanted).unwrap_or(i32::MAX);
        match function.set_attribute(Attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, asked) {
            Ok(()) => return Ok(wanted),
            // A refusal (more than this GPU allows); other errors are errors.
            Err(e) if e.0 == cudarc::driver::sys::CUresult::CUDA_ERROR_INVALID_VALUE => {}
            Err(e) => return Err(driver_error("opting in to shared memory", e)),
        }
    }
    Ok(without_opt_in)
}

/// Compiles the selective-scan kernel for `arch` (e.g. `"sm_90"`) with NVRTC
/// and returns the CUBIN; needs libnvrtc, no GPU.
pub fn compile_selective_for_arch(arch: &str) -> Result<Vec<u8>> {
    crate::nvrtc::compile_cubin(&source(), "selective_scan", arch)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The lane kernels compiled: every N up to 256 finds its shape, with
    /// idle states exactly where N is below what the shape holds, and idle
    /// variants only for shapes some N needs them for.
    #[test]
    fn every_state_size_finds_a_compiled_lane_kernel() {
        let compiled: Vec<LaneKernel> = LaneKernel::all().collect();
        for n in 1..=256usize {
            let shape = LaneShape::for_state(n).unwrap_or_else(|| panic!("N = {n} has no lane shape"));
            let holds = shape.holds();
            assert!(holds >= n && holds < 2 * n.max(2), "N = {n}: {shape:?}");
            let kernel = LaneKernel { shape, idle: n < holds, pairs: false };
            assert!(compiled.contains(&kernel), "N = {n}: {kernel:?} is not compiled");
        }
        for kernel in compiled.iter().filter(|k| k.idle) {
            let holds = kernel.shape.holds();
            assert!(
                (1..holds).any(|n| LaneShape::for_state(n) == Some(kernel.shape)),
                "{kernel:?} is compiled for no N"
            );
        }
        assert_eq!(LaneShape::for_state(257), None);
    }
}
