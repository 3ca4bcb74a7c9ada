//! Overrides of the policies (single-pass shapes, the selective kernels' forms, host chunk sizes), for
//! tuning experiments and tests.

use super::{SinglePassPolicy, StatusLayout, DETERMINISTIC_LOOKBACK};

/// Overrides of the single-pass policy, for tuning experiments and tests;
/// what is not set comes from [`SinglePassPolicy::for_item`] (for rows, flags
/// and offsets: its [`for_segments`](SinglePassPolicy::for_segments)). A
/// Tuning that sets any shape starts from `for_item` as it is; one that sets
/// none runs [`SinglePassPolicy::plain_default`] (deterministic for 4-byte
/// items) unless it sets [`deterministic`](Tuning::deterministic). Set on an
/// executor with [`Cuda::with_tuning`](crate::Cuda::with_tuning), which
/// replaces the executor's tuning, its deterministic setting included.
///
/// ```
/// use scan_cuda::{StatusLayout, Tuning};
/// let t = Tuning::default().threads(512).items_per_thread(8).status(StatusLayout::Split);
/// let p = t.apply(scan_cuda::SinglePassPolicy::for_item(4, 90).unwrap());
/// assert_eq!((p.threads, p.items_per_thread, p.status), (512, 8, StatusLayout::Split));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Tuning {
    threads: Option<u32>,
    items_per_thread: Option<u32>,
    status: Option<StatusLayout>,
    lookback: Option<u32>,
    blocks_per_sm: Option<u32>,
    stages: Option<u32>,
    early_loads: Option<bool>,
    deterministic: Option<bool>,
    staged_maps: Option<bool>,
    narrow_slots: Option<bool>,
    grouped_runs: Option<bool>,
    selective: crate::selective::SelectiveKernelChoice,
    selective_backward_whole_rows: Option<bool>,
    selective_backward_tiles: Option<bool>,
    selective_backward_rotated_states: Option<bool>,
    selective_backward_narrow_steps: Option<bool>,
    selective_backward_pipelined_sums: Option<bool>,
    selective_backward_short_sums: Option<bool>,
    adversarial_seed: u32,
    host_chunk_bytes: Option<usize>,
    compaction_blocks: Option<usize>,
}

impl Tuning {
    /// Threads per block.
    pub fn threads(mut self, threads: u32) -> Self {
        self.threads = Some(threads);
        self
    }

    /// Items each thread scans.
    pub fn items_per_thread(mut self, items: u32) -> Self {
        self.items_per_thread = Some(items);
        self
    }

    /// The tile status layout.
    pub fn status(mut self, status: StatusLayout) -> Self {
        self.status = Some(status);
        self
    }

    /// Predecessor statuses each look-back lane reads per round trip (the
    /// window is 32 times that).
    pub fn lookback(mut self, per_lane: u32) -> Self {
        self.lookback = Some(per_lane);
        self
    }

    /// Blocks per SM to cap registers for.
    pub fn blocks_per_sm(mut self, blocks: u32) -> Self {
        self.blocks_per_sm = Some(blocks);
        self
    }

    /// Stages (tiles a block holds at once, see
    /// [`SinglePassPolicy::stages`]).
    pub fn stages(mut self, stages: u32) -> Self {
        self.stages = Some(stages);
        self
    }

    /// Whether to issue a tile's loads before the store of the previous one
    /// (see [`SinglePassPolicy::early_loads`]). Fused maps whose input
    /// arrays take more bytes per position than the items load after the
    /// store whatever this says (kernels/maps.cuh, `FETCHES_EARLY`).
    pub fn early_loads(mut self, early: bool) -> Self {
        self.early_loads = Some(early);
        self
    }

    /// Whether plain scans, consecutive rows of whole tiles and fused maps
    /// are run-to-run deterministic (see
    /// [`SinglePassPolicy::deterministic`]); without a
    /// [`lookback`](Tuning::lookback), a deterministic policy reads
    /// [`DETERMINISTIC_LOOKBACK`] statuses per lane (4 for 4-byte items:
    /// [`SinglePassPolicy::deterministic_for`]). A mode, not a shape: items
    /// the single-pass kernels cannot take still fall back to Blelloch.
    pub fn deterministic(mut self, deterministic: bool) -> Self {
        self.deterministic = Some(deterministic);
        self
    }

    /// Whether fused maps stage whole segments of their input arrays as
    /// vectors (see [`SinglePassPolicy::staged_maps`]). Staged maps take no
    /// grouped runs, so the f32 recurrence leaves its default fixed groups
    /// for the free look-back unless [`Tuning::deterministic`] is set.
    pub fn staged_maps(mut self, staged: bool) -> Self {
        self.staged_maps = Some(staged);
        self
    }

    /// Whether fused maps that can keep narrow elements in their slots do
    /// (see [`SinglePassPolicy::narrow_slots`]; on by default). Off, bf16
    /// and f16 sums leave their default fixed groups for the free look-back
    /// unless [`Tuning::deterministic`] is set.
    pub fn narrow_slots(mut self, narrow: bool) -> Self {
        self.narrow_slots = Some(narrow);
        self
    }

    /// [`Tuning::narrow_slots`] as set.
    pub(crate) fn narrow_slots_setting(self) -> Option<bool> {
        self.narrow_slots
    }

    /// Whether fused maps whose inputs and output move in the same groups
    /// keep each lane's groups in the lane (see
    /// [`SinglePassPolicy::grouped_runs`]; on by default). Off, the f32
    /// recurrence leaves its default fixed groups for the free look-back
    /// unless [`Tuning::deterministic`] is set.
    pub fn grouped_runs(mut self, grouped: bool) -> Self {
        self.grouped_runs = Some(grouped);
        self
    }

    /// [`Tuning::grouped_runs`] as set.
    pub(crate) fn grouped_runs_setting(self) -> Option<bool> {
        self.grouped_runs
    }

    /// [`Tuning::lookback`] as set.
    pub(crate) fn lookback_setting(self) -> Option<u32> {
        self.lookback
    }

    /// Whether [`Tuning::deterministic`] is set on.
    pub fn is_deterministic(self) -> bool {
        self.deterministic == Some(true)
    }

    /// [`Tuning::deterministic`] as set: `None` when left to the policy
    /// (deterministic for plain scans and rows of whole tiles of 4-byte
    /// items, and for fused maps in narrow slots or grouped runs where three
    /// stages fit).
    pub fn deterministic_setting(self) -> Option<bool> {
        self.deterministic
    }

    /// Which GPU selective-scan kernel runs (for measurements and tests;
    /// the default chooses by shape).
    pub fn selective_kernel(mut self, choice: crate::selective::SelectiveKernelChoice) -> Self {
        self.selective = choice;
        self
    }

    /// The selective-scan kernel choice set by [`Tuning::selective_kernel`].
    pub fn selective(self) -> crate::selective::SelectiveKernelChoice {
        self.selective
    }

    /// Whether the selective-scan backward's gradient blocks take whole rows
    /// (`true`: the gradient kernel carries the reverse state G along each
    /// row and the carries kernel skips its reverse scan) or ranges of 256
    /// steps (`false`: G from the carries kernel at each range's end). The
    /// default takes whole rows when there are channels enough to fill the
    /// GPU (for measurements and tests; the gradients agree within rounding).
    pub fn selective_backward_whole_rows(mut self, whole: bool) -> Self {
        self.selective_backward_whole_rows = Some(whole);
        self
    }

    /// [`Tuning::selective_backward_whole_rows`] as set.
    pub(crate) fn selective_backward_whole_rows_setting(self) -> Option<bool> {
        self.selective_backward_whole_rows
    }

    /// Whether the selective-scan backward runs its tile kernels (`true`:
    /// where they apply, as the forward's tile kernel: N at most 16, B and C
    /// varying and shared by every 32 channels) or its lane kernels
    /// (`false`). The default takes the tiles for at least 4096 rows and N
    /// past 8 (for measurements and tests; the gradients agree within
    /// rounding).
    pub fn selective_backward_tiles(mut self, tiles: bool) -> Self {
        self.selective_backward_tiles = Some(tiles);
        self
    }

    /// [`Tuning::selective_backward_tiles`] as set.
    pub(crate) fn selective_backward_tiles_setting(self) -> Option<bool> {
        self.selective_backward_tiles
    }

    /// Whether the selective backward's tile gradient kernel gives the upper
    /// half of each warp its 4 states in the order 2, 3, 0, 1 (`true`), so
    /// that the first stage of its sums over rows needs no select (96
    /// instructions a step instead of 110, sm_90 SASS), at 2 KiB more shared
    /// memory a block. On by default: on the H200 (8/11's shape, both forms
    /// alternating in one process, 60 calls each) the whole backward took
    /// 1.909 ms rotated against 1.923 in order (medians; min 1.891 / 1.903);
    /// after the twenty-first session's bank-conflict fix 1.769-1.779 against
    /// 1.814-1.824 (2026-12-05, three runs). Narrow steps
    /// ([`Tuning::selective_backward_narrow_steps`]) apply to this form.
    pub fn selective_backward_rotated_states(mut self, rotated: bool) -> Self {
        self.selective_backward_rotated_states = Some(rotated);
        self
    }

    /// [`Tuning::selective_backward_rotated_states`] as set.
    pub(crate) fn selective_backward_rotated_states_setting(self) -> Option<bool> {
        self.selective_backward_rotated_states
    }

    /// Whether the selective backward's rotated tile gradient kernel also
    /// keeps each step's (dt, dt u) as a float2 and dy as a float in shared
    /// memory (`true`), so that its scan loads 8 bytes a lane going forward
    /// and 12 going back instead of 16 and 16 (the shared-memory pipe is
    /// that kernel's busiest unit), at 6.4 KiB more shared memory a block.
    /// Ignored with the states in order. On by default where it fits: on the
    /// H200 (8/11's shape, both forms alternating in one process, 60 calls
    /// each, four runs in two calls) the whole backward took 1.739-1.793 ms
    /// with narrow steps against 1.766-1.821 without (-1.5% every time; the
    /// gradient kernel under ncu 1.36 against 1.39 ms).
    pub fn selective_backward_narrow_steps(mut self, narrow: bool) -> Self {
        self.selective_backward_narrow_steps = Some(narrow);
        self
    }

    /// [`Tuning::selective_backward_narrow_steps`] as set.
    pub(crate) fn selective_backward_narrow_steps_setting(self) -> Option<bool> {
        self.selective_backward_narrow_steps
    }

    /// Whether the selective backward's rotated tile gradient kernel with
    /// narrow steps spreads each step's sums over rows (dB's and dC's, a
    /// warp reduce-scatter of 9 shuffles) over five steps, one stage a step
    /// (`true`), so that the last five shuffles' results are first needed a
    /// step later instead of a few instructions later: a warp's shuffles keep their
    /// order in the machine code, so the plain form waits on each of a
    /// step's last five in turn (the adds waiting on shuffles were 34% of
    /// that kernel's stall samples on the H200). The same additions in the
    /// same order: the same bits. On by default (with the short sums: see
    /// [`Tuning::selective_backward_short_sums`] for the figures); ignored
    /// with the states in order or without narrow steps.
    pub fn selective_backward_pipelined_sums(mut self, piped: bool) -> Self {
        self.selective_backward_pipelined_sums = Some(piped);
        self
    }

    /// [`Tuning::selective_backward_pipelined_sums`] as set.
    pub(crate) fn selective_backward_pipelined_sums_setting(self) -> Option<bool> {
        self.selective_backward_pipelined_sums
    }

    /// Whether the selective backward's rotated tile gradient kernel with
    /// narrow steps stops each step's sums over rows (dB's and dC's warp
    /// reduce-scatter) after three of its five stages (`true`): every lane
    /// then stores its sum over 8 rows, and the finish adds a value's four
    /// in the order the last two stages would have (the same bits). Two
    /// shuffles and two adds a step fewer, and two fewer links in the chain
    /// of shuffles each step waits on, for one 16-byte shared load and three
    /// adds per 4 steps in the finish and 10 KiB more shared memory a
    /// block (N 9 to 16; 6 KiB at N up to 8). Combines with
    /// [`Tuning::selective_backward_pipelined_sums`] (three stages in the
    /// pipeline then). On by default where the GPU gives the block its
    /// shared memory; ignored with the states in order or without narrow
    /// steps. H100 (2026-12-05), 8/11's shape, the whole backward, each
    /// form alternating with the plain sums in one process, medians of 60
    /// calls, two runs: pipelined and short 1.641 and 1.598 ms against
    /// 1.843 and 1.793 (-11%); pipelined alone 1.641 and 1.657 against 1.796
    /// and 1.810 (-9%); short alone 1.743 and 1.752 against 1.797 and 1.806
    /// (-3%). Nsight Compute: the gradient kernel 1.36 -> 1.16 ms, issue
    /// slots busy 54 -> 63%, stall samples on the short scoreboard halved.
    pub fn selective_backward_short_sums(mut self, short: bool) -> Self {
        self.selective_backward_short_sums = Some(short);
        self
    }

    /// [`Tuning::selective_backward_short_sums`] as set.
    pub(crate) fn selective_backward_short_sums_setting(self) -> Option<bool> {
        self.selective_backward_short_sums
    }

    /// The chunk size, in bytes, of scans of host slices (which travel to
    /// the GPU and back in chunks through pinned buffers, see
    /// [`Cuda::scan_into`](crate::Cuda::scan_into)) and of large transfers
    /// ([`Cuda::upload`](crate::Cuda::upload),
    /// [`Cuda::download`](crate::Cuda::download)), instead of one chosen
    /// by the input's size (an eighth of it, held between 4 and 16 MiB).
    /// Rounded down to whole items for scans, at least one, and at most the
    /// input; transfers are cut in bytes, at least 4 KiB. Small chunks make
    /// tests cross many chunk boundaries.
    pub fn host_chunk_bytes(mut self, bytes: usize) -> Self {
        self.host_chunk_bytes = Some(bytes.max(1));
        self
    }

    /// The chunk size set by [`Tuning::host_chunk_bytes`], if any.
    pub fn host_chunk(self) -> Option<usize> {
        self.host_chunk_bytes
    }

    /// The most blocks of stream compaction's grids (`Cuda::compact`),
    /// instead of 4096; each block strides over the tiles of 4096 items past
    /// them, reusing its shared memory. Small grids make tests stride at
    /// small sizes. At least one.
    pub fn compaction_blocks(mut self, blocks: usize) -> Self {
        self.compaction_blocks = Some(blocks.max(1));
        self
    }

    /// The grid bound set by [`Tuning::compaction_blocks`], if any.
    pub fn compaction_grid(self) -> Option<usize> {
        self.compaction_blocks
    }

    /// A debugging mode for tests: with a seed other than 0, blocks claim
    /// their tiles in an order unrelated to their index and publish their
    /// status late, at pseudo-random, sometimes skipping the aggregate, so
    /// that the look-back meets every mix of statuses; rows of one tile
    /// (a block per row otherwise) run on two blocks that stride over the
    /// rows. Results must not change; only speed does.
    pub fn adversarial_schedule(mut self, seed: u32) -> Self {
        self.adversarial_seed = seed;
        self
    }

    /// The seed of [`Tuning::adversarial_schedule`] (0: off).
    pub fn adversarial_seed(self) -> u32 {
        self.adversarial_seed
    }

    /// `policy` with these overrides applied. Another block size without a
    /// `blocks_per_sm` keeps the policy's threads per SM.
    pub fn apply(self, policy: SinglePassPolicy) -> SinglePassPolicy {
        let threads = self.threads.unwrap_or(policy.threads);
        let same_threads_per_sm =
            (policy.block_threads().saturating_mul(policy.blocks_per_sm) / threads.saturating_add(32)).max(1);
        SinglePassPolicy {
            threads,
            items_per_thread: self.items_per_thread.unwrap_or(policy.items_per_thread),
            status: self.status.unwrap_or(policy.status),
            lookback: self.lookback.unwrap_or(match self.deterministic {
                Some(true) if !policy.deterministic => DETERMINISTIC_LOOKBACK,
                _ => policy.lookback,
            }),
            blocks_per_sm: self.blocks_per_sm.unwrap_or(same_threads_per_sm),
            stages: self.stages.unwrap_or(policy.stages),
            early_loads: self.early_loads.unwrap_or(policy.early_loads),
            deterministic: self.deterministic.unwrap_or(policy.deterministic),
            staged_maps: self.staged_maps.unwrap_or(policy.staged_maps),
            narrow_slots: if self.narrow_slots == Some(false) { 0 } else { policy.narrow_slots },
            grouped_runs: self.grouped_runs != Some(false) && policy.grouped_runs,
        }
    }

    /// The launch-shape overrides alone (what a module is built for).
    pub(crate) fn shape(self) -> Tuning {
        Tuning {
            adversarial_seed: 0,
            host_chunk_bytes: None,
            compaction_blocks: None,
            selective: Default::default(),
            ..self
        }
    }

    /// True when the run length or the stages are set: the fused-map
    /// kernels then take them as set (`SinglePassPolicy::for_maps` sets
    /// both otherwise).
    pub(crate) fn sets_run_shape(self) -> bool {
        self.items_per_thread.is_some() || self.stages.is_some()
    }

    /// True when an override of the kernels' shape is set, the
    /// deterministic mode aside (a mode every item takes: items without
    /// single-pass kernels fall back to Blelloch with it as without).
    pub(crate) fn overrides_launch_shape(self) -> bool {
        Tuning { deterministic: None, ..self }.overrides_shape()
    }

    /// True when a launch-shape override is set (the module must be built
    /// for it).
    pub fn overrides_shape(self) -> bool {
        self.threads.is_some()
            || self.items_per_thread.is_some()
            || self.status.is_some()
            || self.lookback.is_some()
            || self.blocks_per_sm.is_some()
            || self.stages.is_some()
            || self.early_loads.is_some()
            || self.deterministic.is_some()
        // (Not `staged_maps`, `narrow_slots` or `grouped_runs`: they concern fused maps
        // alone, and a shape override here would also change the executor's
        // plain scans, which would lose their deterministic default and their
        // Blelloch fallback. `Tuning::shape` still tells modules built with
        // them apart.)
    }
}
