//! The single-pass kernels' launch shape for one item type: threads,
//! items per thread, tile status layout, look-back, stages.

use scan_core::{Error, Result};

use super::{shared_limit_per_block, shared_per_sm};

/// The largest item the single-pass kernels take: a thread keeps a few items
/// in registers through the look-back, and past this size they spill.
pub const SINGLE_PASS_MAX_ITEM_BYTES: usize = 128;

/// How a single-pass tile publishes its aggregate and prefix.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StatusLayout {
    /// Status and value in one 8- or 16-byte word, written and read by one
    /// access (items of up to 8 bytes; their default).
    Packed,
    /// A status array and separate value arrays, ordered by release/acquire
    /// (any item; the default past 32 bytes): a read is two dependent round
    /// trips, the code, then the value.
    Split,
    /// The item in 8-byte pieces, each in a 16-byte word beside the status
    /// (any item; the default for 9 to 32 bytes): a reader loads every word
    /// in one round trip and takes the value when all of them carry the
    /// same status (kernels/tile_status.cuh). Twice the value's bytes per
    /// tile.
    Tagged,
}

/// The launch shape of the single-pass kernels for one item type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SinglePassPolicy {
    /// Scanning threads per block (whole warps, 32 to 992); the block has
    /// one more warp, which looks back ([`SinglePassPolicy::block_threads`]).
    pub threads: u32,
    /// Consecutive items each thread scans in registers.
    pub items_per_thread: u32,
    /// How tiles publish their status.
    pub status: StatusLayout,
    /// Predecessor statuses each lane of the look-back warp reads per round
    /// trip: the window is `32 * lookback` tiles.
    pub lookback: u32,
    /// Blocks per SM the kernel's registers are capped for
    /// (`__launch_bounds__`): more blocks overlap more loads with look-backs,
    /// fewer registers per thread may spill.
    pub blocks_per_sm: u32,
    /// Tiles a block holds in shared memory: the one it scans and up to
    /// `stages - 1` waiting for their look-back, so that a look-back has `stages - 1`
    /// tiles' time to finish before the block waits for it (1: the block
    /// waits for each look-back). Each stage is a tile's worth of shared
    /// memory.
    pub stages: u32,
    /// Whether the scanning warps issue the loads of a tile before they
    /// store the previous tile of its slot (and rescan that tile in shared
    /// memory, a vector at a time, to keep registers free for the loads), so
    /// that the loads are in flight during the store; otherwise they store
    /// first, then claim and load.
    pub early_loads: bool,
    /// Whether plain scans group their look-backs the same way in every run
    /// (fixed groups of `32 * lookback` tiles, see `lookback_fixed` in
    /// kernels/lookback.cuh), so that float results are bitwise identical
    /// from run to run on the same GPU and build. Rows of whole tiles (the
    /// rows kernel's tile divides the row length) are covered: they take
    /// the plain code path, and each row starts afresh inside the fixed
    /// groups. Rows of more than half a tile and at most one are
    /// deterministic whatever this says (a block per row,
    /// kernels/row_tiles.cuh). Fused maps (kernels/maps.cuh) take the
    /// same fixed groups when this is set. Other rows and segments (flags,
    /// offsets) are not covered.
    /// On by default for plain scans and rows of 4-byte items
    /// ([`SinglePassPolicy::plain_default`]), and for fused maps in narrow
    /// slots or grouped runs where three stages fit
    /// ([`narrow_sums_for`](SinglePassPolicy::narrow_sums_for),
    /// [`grouped_maps_for`](SinglePassPolicy::grouped_maps_for)); off
    /// otherwise: [`Cuda::with_deterministic`](crate::Cuda::with_deterministic).
    pub deterministic: bool,
    /// Fused maps (kernels/maps.cuh): whether a whole, aligned segment's
    /// input arrays are staged as 16-byte vectors in the warp's slice and
    /// lifted there, when they fit it (their bytes per position at most the
    /// item's), after the previous tile's store (no early loads for these
    /// kernels). Off by default: the default fetches each array into
    /// registers a vector per group of positions before that store (after
    /// it when the inputs take more bytes than the items), and ran
    /// faster on the H200 (the fused recurrence 0.84 of copy against 0.73,
    /// bf16 sums 0.44 against 0.43): [`Tuning::staged_maps`](super::Tuning::staged_maps).
    pub staged_maps: bool,
    /// Fused maps from one array of narrow elements into an output of the
    /// same width, narrower than the items (bf16 sums accumulated in f32):
    /// the element's bytes when the slots hold the raw elements instead of
    /// the lifted items (kernels/narrow.cuh; the slots are sized for them),
    /// 0 otherwise. Set for the fused kernels that can
    /// ([`SinglePassPolicy::narrow_slots_for`]) unless
    /// [`Tuning::narrow_slots`](super::Tuning::narrow_slots) turns it off. H200, bf16 sums at 2^28 on
    /// the plain 4-byte shape (256 x 32, 3 blocks per SM, 2 stages): 3022
    /// GB/s (0.73 of copy) against 2693 (0.65) through item slots, in one
    /// run. The shared memory they free fits a third stage, which with
    /// fixed groups is their default shape
    /// ([`SinglePassPolicy::narrow_sums_for`]: 0.91 of copy).
    pub narrow_slots: u32,
    /// Fused maps whose input arrays and output move in groups of the same
    /// number of positions (the linear recurrence a[], b[] -> h[]: float4s
    /// of each): whether forward scans keep each lane's groups in the lane
    /// from load to store (kernels/grouped.cuh), scanning them in
    /// registers, instead of exchanging them through the item slot, which
    /// costs each position five trips through shared memory instead of two.
    /// Set for fused kernels unless [`Tuning::grouped_runs`](super::Tuning::grouped_runs) turns it off
    /// or narrow slots or staged maps are taken; the kernel uses it only
    /// where the maps allow (other kernels ignore it).
    pub grouped_runs: bool,
}

/// Look-back statuses per lane of a deterministic scan by default: groups of
/// 64 tiles. On the H200 (f32 add at 2^28, 32-item runs, two stages) groups
/// of 64 tiles ran at 0.80 of copy, 128 at 0.74 and 256 at 0.34: a wider
/// group waits longer for its last tile before the next group's prefix can
/// advance. 4-byte items take groups of 128 shorter tiles instead
/// ([`SinglePassPolicy::deterministic_for`]).
pub const DETERMINISTIC_LOOKBACK: u32 = 2;

impl SinglePassPolicy {
    /// The policy for items of `size` bytes on compute capability `arch`
    /// (e.g. 90 for the H100/H200), or why the single-pass kernels cannot run
    /// them.
    ///
    /// Each thread keeps a run of about 128 bytes (32 `f32`s; 256 bytes, 16
    /// f64 pairs or 8 quaternions, for items of 9 to 32 bytes), loaded with 16-byte
    /// vectors where the run length allows; 256 threads for small items,
    /// fewer for large ones so registers last; the
    /// look-back reads 32 predecessors per round trip; two stages, so a
    /// block scans the next tile while its look-back warp finds the prefix of
    /// the last one, and as many blocks per SM as their shared memory allows
    /// (measured on the H200: bench/gpu-h200-results.md); items of 1 to 8
    /// bytes (powers of two) issue a tile's loads before the store of the
    /// previous tile ([`SinglePassPolicy::early_loads`]).
    ///
    /// ```
    /// use scan_cuda::{SinglePassPolicy, StatusLayout};
    /// let p = SinglePassPolicy::for_item(4, 90).unwrap();
    /// assert_eq!((p.threads, p.items_per_thread, p.status), (256, 32, StatusLayout::Packed));
    /// assert!(p.early_loads && !SinglePassPolicy::for_item(32, 90).unwrap().early_loads);
    /// assert!(SinglePassPolicy::for_item(4, 61).is_err()); // no __nanosleep before sm_70
    /// ```
    pub fn for_item(size: usize, arch: u32) -> std::result::Result<SinglePassPolicy, String> {
        if arch < 70 {
            return Err(format!(
                "the single-pass kernels need compute capability 7.0 or newer (__nanosleep, acquire/release \
                 loads and stores); this GPU is {}.{}",
                arch / 10,
                arch % 10
            ));
        }
        let size = size.max(1);
        if size > SINGLE_PASS_MAX_ITEM_BYTES {
            return Err(format!(
                "items of {size} bytes exceed the single-pass kernels' {SINGLE_PASS_MAX_ITEM_BYTES}-byte limit \
                 (a thread keeps its items in registers)"
            ));
        }
        // Runs of 256 bytes for 9- to 32-byte items: 8 quaternions with 96
        // scanning threads and three blocks per SM ran at 0.64 of copy on
        // the H200, against 0.51 for 4 items x 128 threads; 16 f64 pairs
        // with 128 threads, two blocks per SM and no early loads at 0.71,
        // against 0.67 for 8 x 256 with early loads (bench
        // --gpu-policies-only, 2026-12-02; 12-byte items not timed).
        let run_bytes = if (9..=32).contains(&size) { 256 } else { 128 };
        let mut items = (run_bytes / size).clamp(1, 64);
        // Prefer a run that moves as whole 16-byte vectors, if that costs at
        // most half the run.
        if (items * size) % 16 != 0 {
            if let Some(n) = (items.div_ceil(2)..items).rev().find(|n| (n * size) % 16 == 0) {
                items = n;
            }
        }
        let threads = match size {
            0..=8 => 256,
            9..=16 => 128,
            17..=32 => 96,
            33..=64 => 128,
            _ => 64,
        };
        // A status read in one round trip for 9 to 32 bytes: on the H200 the
        // tagged layout took f64 pairs from 0.72 to 0.84 of copy and
        // quaternions from 0.64 to 0.76 against the split layout's two
        // dependent round trips (bench --gpu-policies-only --policy-items
        // 16,32, one call, 2026-12-02 seventh session). Wider items are
        // untimed with it and keep the split layout (a tagged status is
        // twice the item's bytes per tile). Every status access is one
        // 16-byte load or store for items of every kind, padded ones
        // included (scan-cuda/tests/sass.rs).
        let status = match size {
            0..=8 => StatusLayout::Packed,
            9..=32 => StatusLayout::Tagged,
            _ => StatusLayout::Split,
        };
        // Registers for up to 1024 resident threads (64 each) for items of
        // up to 8 bytes; 320 (two blocks of 128 + 32 threads) for 9 to 16
        // bytes (with 8-item runs of 256 threads one block ran at 0.57 of
        // copy and two at 0.67; H200, f64 pairs at 2^27); 384 (three
        // blocks of 96 + 32) for 17 to 32 bytes (quaternions: 0.64 of copy
        // with 8-item runs, against 0.51 for three blocks of 128 + 32 with
        // 4-item runs); 512 past that; as far as shared memory allows. A
        // window of 32 predecessors (wider windows measured slower). Policy
        // tables: bench/gpu-h200-results.md.
        let threads_per_sm = match size {
            0..=8 => 1024,
            9..=16 => 320,
            17..=32 => 384,
            _ => 512,
        };
        let mut policy = SinglePassPolicy {
            threads,
            items_per_thread: items as u32,
            status,
            lookback: 1,
            blocks_per_sm: 1,
            stages: 2,
            // Measured on the H200 (bench/gpu-h200-results.md): 0.83 -> 0.85
            // of copy for f32 add, 0.83 -> 0.88 for the f32 recurrence; 16
            // f64 pairs per thread 0.71 -> 0.68 and 32-byte items 0.57 ->
            // 0.51, whose loads need the registers the store uses.
            early_loads: size.is_power_of_two() && size <= 8,
            deterministic: false,
            staged_maps: false,
            narrow_slots: 0,
            grouped_runs: false,
        };
        // Smaller GPUs: one stage, then shorter runs, until a block fits.
        while policy.shared_bytes(size) > shared_limit_per_block(arch) {
            if policy.stages > 1 {
                policy.stages -= 1;
            } else if policy.items_per_thread > 1 {
                policy.items_per_thread /= 2;
            } else {
                return Err(format!("items of {size} bytes do not fit this GPU's shared memory"));
            }
        }
        policy.blocks_per_sm = policy.resident_blocks(size, arch, threads_per_sm);
        Ok(policy)
    }

    /// The policy plain scans of `size`-byte items run when no [`Tuning`](super::Tuning)
    /// sets their shape: [`for_item`](SinglePassPolicy::for_item)'s, made
    /// deterministic ([`deterministic_for`](SinglePassPolicy::deterministic_for))
    /// for 4-byte items, where that shape was also the fastest measured (f32
    /// add on the H200 at 2^28: 0.92 of copy against 0.84).
    ///
    /// ```
    /// use scan_cuda::SinglePassPolicy;
    /// assert!(SinglePassPolicy::plain_default(4, 90).unwrap().deterministic);
    /// assert!(!SinglePassPolicy::plain_default(8, 90).unwrap().deterministic);
    /// ```
    pub fn plain_default(size: usize, arch: u32) -> std::result::Result<SinglePassPolicy, String> {
        let policy = SinglePassPolicy::for_item(size, arch)?;
        Ok(if size == 4 { policy.deterministic_for(size, arch) } else { policy })
    }

    /// This plain-scan policy in the deterministic mode
    /// ([`SinglePassPolicy::deterministic`]): fixed groups of
    /// `32 * DETERMINISTIC_LOOKBACK` tiles, and for 4-byte items on the
    /// default 32-item runs, runs of 16 items in three stages with groups of
    /// 128 tiles, where the GPU has the shared memory for them. H200, f32
    /// add at 2^28 (bench `--gpu-policies-only`, one call): 3858 GB/s, 0.92
    /// of copy, against 3400 (0.81) for 32-item runs in groups of 64 and
    /// 3527 (0.84) for the default non-deterministic scan.
    ///
    /// ```
    /// use scan_cuda::SinglePassPolicy;
    /// let p = SinglePassPolicy::for_item(4, 90).unwrap().deterministic_for(4, 90);
    /// assert!(p.deterministic);
    /// assert_eq!((p.items_per_thread, p.stages, p.lookback), (16, 3, 4));
    /// ```
    pub fn deterministic_for(self, size: usize, arch: u32) -> SinglePassPolicy {
        let mut policy = SinglePassPolicy { deterministic: true, lookback: DETERMINISTIC_LOOKBACK, ..self };
        if size == 4 && self.items_per_thread == 32 {
            let short = SinglePassPolicy { items_per_thread: 16, stages: 3, lookback: 4, ..policy };
            if (short.shared_bytes(size) + 1024) * short.blocks_per_sm as usize <= shared_per_sm(arch) {
                policy = short;
            }
        }
        policy
    }

    /// The shape of fused maps that keep 2-byte elements in narrow slots and
    /// sum 4-byte items (bf16 or f16 in, f32 sums, bf16 or f16 out): this
    /// plain shape (256 x 32) in three stages and the deterministic look-back
    /// (fixed groups of 128 tiles), where the GPU has the shared memory for
    /// it. H200, bf16 sums at 2^28 (`SCAN_BENCH_FUSED_SWEEP=bf16 bench
    /// --gpu-fused-only`, 2026-12-03): 3679 GB/s, 0.91 of copy, against 2956
    /// (0.73) for two stages and the free look-back, 3289 (0.82) for three
    /// stages and the free look-back, and 0.61-0.70 for 16-item runs in
    /// fixed groups. The results are then bitwise the same from run to run
    /// as well.
    ///
    /// ```
    /// use scan_cuda::SinglePassPolicy;
    /// let p = SinglePassPolicy::for_item(4, 90).unwrap().narrow_sums_for(90);
    /// assert!(p.deterministic);
    /// assert_eq!((p.items_per_thread, p.stages, p.lookback), (32, 3, 4));
    /// ```
    pub fn narrow_sums_for(self, arch: u32) -> SinglePassPolicy {
        let shape = SinglePassPolicy { stages: 3, deterministic: true, lookback: 4, narrow_slots: 2, ..self };
        if (shape.shared_bytes(4) + 1024) * shape.blocks_per_sm as usize <= shared_per_sm(arch) {
            SinglePassPolicy { narrow_slots: self.narrow_slots, ..shape }
        } else {
            self
        }
    }

    /// The shape of fused maps that keep grouped runs
    /// ([`SinglePassPolicy::grouped_runs`], the f32 recurrence from a[] and
    /// b[]): this shape (fused maps' 256 x 16, two blocks per SM) in three
    /// stages, which fit two blocks now that a stage holds a run of items
    /// per thread and nothing else, and the deterministic look-back (fixed
    /// groups of 128 tiles), where the GPU has the shared memory for it
    /// (sm_86, sm_89, sm_90 and newer; sm_70, sm_75, sm_80 and sm_87 keep
    /// this shape and its free look-back, unless the deterministic mode is
    /// set). H200, the recurrence at 2^28 (`SCAN_BENCH_FUSED_SWEEP=recurrence
    /// bench --gpu-fused-only`, 2026-12-04, one call): 3980 GB/s, 0.94 of
    /// copy, against 3585 (0.85) for two stages and the free look-back, 3648
    /// (0.86) for three stages and the free look-back, 3307 (0.78) for
    /// groups of 64 tiles, and 1419 (0.34) for groups of 128 in two stages.
    /// The results are then bitwise the same from run to run as well.
    ///
    /// ```
    /// use scan_cuda::SinglePassPolicy;
    /// let p = SinglePassPolicy::for_item(8, 90).unwrap().for_maps(8, 8);
    /// let p = p.grouped_maps_for(8, 90);
    /// assert!(p.deterministic);
    /// assert_eq!((p.threads, p.items_per_thread, p.stages, p.lookback), (256, 16, 3, 4));
    /// ```
    pub fn grouped_maps_for(self, size: usize, arch: u32) -> SinglePassPolicy {
        let shape = SinglePassPolicy { stages: 3, deterministic: true, lookback: 4, grouped_runs: true, ..self };
        if (shape.shared_bytes(size) + 1024) * shape.blocks_per_sm as usize <= shared_per_sm(arch) {
            SinglePassPolicy { grouped_runs: self.grouped_runs, ..shape }
        } else {
            self
        }
    }

    /// The policy of the segmented kernels (rows, flags, offsets) derived
    /// from a plain scan's: runs of at most 16 items. They keep a head
    /// beside each value, and longer runs leave too few registers for the
    /// early loads: f32 rows of 65536 x 4096 on the H200 ran at 0.81 of copy
    /// with 16 items and early loads, 0.78 with 32 items without them and
    /// 0.71 with them (one run, bench/gpu-h200-results.md). Every f32 case
    /// measured again on 2026-12-02: 32 items without early loads were
    /// better on some (rows 256 x 2^20 0.74 against 0.69, offsets 0.76
    /// against 0.69), but the same shape spills 8 to 250 bytes per thread
    /// for 4-byte items whose operator is longer than an add (the bf16
    /// recurrence) and for 2-byte items at 32 (NVRTC, sm_90), and the
    /// policy sees only the item size: the segment kernels take them with a
    /// fallback ([`for_segment_heads`](SinglePassPolicy::for_segment_heads)).
    /// Rows of 4-byte items derive theirs from the deterministic shape (16
    /// items, three stages, fixed groups of 128 tiles): rows of whole tiles
    /// run the plain code path, where that shape ran fastest.
    pub fn for_segments(self) -> SinglePassPolicy {
        SinglePassPolicy { items_per_thread: self.items_per_thread.min(16), ..self }
    }

    /// The policy of the segment kernels (by head flags, by offsets) derived
    /// from a plain scan's: the plain 32-item runs where it has them (items
    /// of 3 or 4 bytes), without early loads, else
    /// [`for_segments`](SinglePassPolicy::for_segments)'s. H200, f32 add at
    /// 2^28 (bench/gpu-h200-results.md, 2026-12-02): by offsets 0.76 of copy
    /// against 0.69 for 16-item runs with early loads, by flags 0.70 against
    /// 0.66. The long runs spill for operators longer than an add (the bf16
    /// recurrence: 48 to 144 bytes of stack on sm_90): a module whose
    /// kernels use local memory is built again with `for_segments`' shape
    /// (`ModuleSource::family_of`).
    ///
    /// ```
    /// use scan_cuda::SinglePassPolicy;
    /// let f32_runs = SinglePassPolicy::for_item(4, 90).unwrap().for_segment_heads();
    /// assert_eq!((f32_runs.items_per_thread, f32_runs.early_loads), (32, false));
    /// let pairs = SinglePassPolicy::for_item(8, 90).unwrap();
    /// assert_eq!(pairs.for_segment_heads(), pairs.for_segments());
    /// ```
    pub fn for_segment_heads(self) -> SinglePassPolicy {
        if self.items_per_thread == 32 {
            SinglePassPolicy { early_loads: false, ..self }
        } else {
            self.for_segments()
        }
    }

    /// The bytes per position of narrow slots for fused maps with `arrays`
    /// input arrays of `input_bytes` per position, outputs of
    /// `output_bytes` and items of `item_bytes`, on this policy's runs: the
    /// input's when it is one array, as wide as the output, narrower than
    /// the items, and a run is whole 16-byte groups of it (what
    /// kernels/narrow.cuh takes); else 0.
    ///
    /// ```
    /// use scan_cuda::SinglePassPolicy;
    /// let p = SinglePassPolicy::for_item(4, 90).unwrap().for_maps(2, 4);
    /// assert_eq!(p.narrow_slots_for(1, 2, 2, 4), 2); // bf16 -> f32 -> bf16
    /// assert_eq!(p.narrow_slots_for(1, 2, 4, 4), 0); // bf16 -> f32 -> f32
    /// assert_eq!(p.narrow_slots_for(2, 8, 4, 8), 0); // a[], b[] -> h[]
    /// ```
    pub fn narrow_slots_for(self, arrays: usize, input_bytes: usize, output_bytes: usize, item_bytes: usize) -> u32 {
        let fits = arrays == 1
            && !self.staged_maps
            && input_bytes == output_bytes
            && input_bytes < item_bytes
            && input_bytes.is_power_of_two()
            && input_bytes <= 16
            && self.items_per_thread as usize % (16 / input_bytes) == 0;
        if fits {
            input_bytes as u32
        } else {
            0
        }
    }

    /// The policy of fused-map kernels (`Cuda::scan_mapped`) derived from a
    /// plain scan's, for maps that read `input_bytes` per position into
    /// items of `item_bytes`: runs of at most 32 items when the inputs are
    /// narrower than the items, else 16. Their early loads hold a run's
    /// inputs in registers beside the items, and the lift and project need
    /// more besides. bf16 sums in f32 (2 bytes in, 4-byte items) run at
    /// 0.62 of copy with the plain 4-byte shape (256 x 32, 2 stages) against
    /// 0.51 with 16-item runs and 3 stages (H200, 2^28, one call,
    /// bench/gpu-h200-results.md), and spill nothing; a u32 lift into u32
    /// sums spilled 14 bytes per thread at 32 (NVRTC, sm_90; the NVRTC tests
    /// check every built-in and declared map for spills). Where the runs
    /// shrink, a stage is added (in the same shared memory): plain f32 sums
    /// with 16-item runs ran at 0.75 of copy with 2 stages and 0.85 with 3,
    /// as with 32 and 2 (H200). A [`Tuning`](super::Tuning) that sets the items per thread
    /// or the stages applies to the plain policy instead, so that what it
    /// sets is what runs.
    pub fn for_maps(self, input_bytes: usize, item_bytes: usize) -> SinglePassPolicy {
        let longest = if input_bytes < item_bytes { 32 } else { 16 };
        if self.items_per_thread <= longest {
            return self;
        }
        SinglePassPolicy { items_per_thread: longest, stages: (self.stages + 1).min(4), ..self }
    }

    /// Blocks of this shape that fit one SM's shared memory, at most
    /// `threads_per_sm / threads` and at least 1.
    fn resident_blocks(self, size: usize, arch: u32, threads_per_sm: u32) -> u32 {
        let by_shared = shared_per_sm(arch) / (self.shared_bytes(size) + 1024);
        (threads_per_sm / self.block_threads()).min(by_shared as u32).max(1)
    }

    /// Threads per block: the scanning threads and the look-back warp.
    pub fn block_threads(self) -> u32 {
        // (Saturating: a tuning's threads are only checked by `validate`,
        // and shapes are derived from them before that.)
        self.threads.saturating_add(32)
    }

    /// The registers per thread the kernel's launch bounds allow
    /// (`blocks_per_sm` blocks in 64K registers, in steps of 8, at most 255).
    pub fn register_budget(self) -> u32 {
        (65536 / self.block_threads().saturating_mul(self.blocks_per_sm.max(1)) / 8 * 8).min(255)
    }

    /// Whether fused maps keep grouped runs ([`SinglePassPolicy::grouped_runs`],
    /// kernels/grouped.cuh) with this shape: input arrays whose widest
    /// element is `widest` bytes (`pow2`: every element size a power of
    /// two), outputs of `output_bytes` and items of `size` bytes. The inputs
    /// and the output must move in groups of the same number of positions
    /// (16 bytes of the widest input, 16 of outputs: the recurrence's
    /// float4s), and the run must fit in a third of the register budget
    /// (held through the scan beside everything else). NVRTC, sm_90: the f32
    /// recurrence's 16 x 8 bytes (32 registers of 112) spill nothing; 32
    /// f32 sums in 72 registers spilled 34 bytes, 16 f64 pairs 190.
    ///
    /// ```
    /// use scan_cuda::SinglePassPolicy;
    /// let p = SinglePassPolicy::for_item(8, 90).unwrap().for_maps(8, 8);
    /// assert!(p.grouped_runs_for(4, true, 4, 8), "f32 a[], b[] -> h[]: float4s in and out");
    /// assert!(!p.grouped_runs_for(8, true, 4, 8), "(f32, f32) pairs in, f32 out: 2 against 4");
    /// assert!(!p.grouped_runs_for(8, true, 8, 16), "f64 pairs: too many registers");
    /// ```
    pub fn grouped_runs_for(self, widest: usize, pow2: bool, output_bytes: usize, size: usize) -> bool {
        let items = self.items_per_thread as usize;
        // kernels/maps.cuh, GroupOf: 16 bytes' worth of positions, halved
        // until it divides the run; 1 for sizes that are not powers of two.
        let group_of = |bytes: usize, pow2: bool| {
            let mut v = if pow2 && (1..=16).contains(&bytes) { 16 / bytes } else { 1 };
            while v > 1 && items % v != 0 {
                v /= 2;
            }
            v
        };
        let v = group_of(widest, pow2);
        let registers = (items * size).div_ceil(4);
        v > 1
            && v == group_of(output_bytes, output_bytes.is_power_of_two())
            && (v * size) % 4 == 0
            && 3 * registers <= self.register_budget() as usize
    }

    /// Items one block (one tile) scans.
    pub fn tile(self) -> usize {
        self.threads as usize * self.items_per_thread as usize
    }

    /// Dynamic shared memory of one block for items of `size` bytes: per
    /// stage, a tile (the warps' exchange slices) and each scanning thread's
    /// prefix within it; at least what the kernel uses.
    pub fn dynamic_shared_bytes(self, size: usize) -> usize {
        let size = size.max(1);
        if self.grouped_runs {
            // A run of items per thread, nothing else (grouped.cuh).
            return self.stages as usize * self.threads as usize * self.items_per_thread as usize * size;
        }
        // A run of items, or of narrow elements (narrow.cuh).
        let slot = if self.narrow_slots > 0 { self.narrow_slots as usize } else { size };
        let run = self.items_per_thread as usize * slot;
        // One padding vector (at most 16 bytes) per run, see exchange.cuh.
        self.stages as usize * self.threads as usize * (run + 16 + size)
    }

    /// Dynamic shared memory of one block of the rows-of-one-tile kernel
    /// (kernels/row_tiles.cuh) for items of `size` bytes: one tile's
    /// exchange slices (at least what it uses), what its kernels are opted
    /// in to and launched with.
    pub fn row_tile_shared_bytes(self, size: usize) -> usize {
        let run = self.items_per_thread as usize * size.max(1);
        self.threads as usize * (run + 16)
    }

    /// All the shared memory of one block for items of `size` bytes: the
    /// buffers and the block scan, an upper bound of what the kernel uses.
    pub fn shared_bytes(self, size: usize) -> usize {
        let warps = self.threads as usize / 32;
        let slots = 2 * self.stages as usize + warps;
        self.dynamic_shared_bytes(size) + slots * size.max(1).next_multiple_of(16) + 8 * (self.stages as usize + 1)
    }

    /// Bytes of tile status per tile for items of `size` bytes.
    pub fn status_bytes_per_tile(self, size: usize) -> usize {
        match self.status {
            StatusLayout::Packed if size <= 4 => 8,
            StatusLayout::Packed => 16,
            StatusLayout::Split => 4 + 2 * size,
            StatusLayout::Tagged => 16 * size.max(1).div_ceil(8),
        }
    }

    /// Checks a policy (a default or an override) against the kernels'
    /// limits, for items of `size` bytes on compute capability `arch`.
    pub fn validate(self, size: usize, arch: u32) -> Result<SinglePassPolicy> {
        let bad = |what: String| Err(Error::BadTuning(what));
        if self.threads % 32 != 0 || !(32..=992).contains(&self.threads) {
            return bad(format!(
                "{} scanning threads per block: want a multiple of 32 from 32 to 992 (the look-back warp makes \
                 the block one warp larger)",
                self.threads
            ));
        }
        if !(1..=64).contains(&self.items_per_thread) {
            return bad(format!("{} items per thread: want 1 to 64", self.items_per_thread));
        }
        if !(1..=32).contains(&self.blocks_per_sm) || self.blocks_per_sm * self.block_threads() > 2048 {
            return bad(format!(
                "{} blocks of {} threads per SM: an SM holds 2048 threads",
                self.blocks_per_sm,
                self.block_threads()
            ));
        }
        if !(1..=4).contains(&self.stages) {
            return bad(format!("{} stages: want 1 to 4", self.stages));
        }
        if !(1..=8).contains(&self.lookback) {
            return bad(format!("{} look-back statuses per lane: want 1 to 8", self.lookback));
        }
        if self.status == StatusLayout::Packed && size > 8 {
            return bad(format!(
                "a packed tile status holds items of up to 8 bytes, not {size}; use StatusLayout::Split or \
                 StatusLayout::Tagged"
            ));
        }
        let (shared, limit) = (self.shared_bytes(size), shared_limit_per_block(arch));
        if shared > limit {
            return bad(format!(
                "{} stage(s) of {} threads x {} items of {size} bytes need {shared} bytes of shared memory per \
                 block; compute capability {}.{} allows {limit}",
                self.stages,
                self.threads,
                self.items_per_thread,
                arch / 10,
                arch % 10
            ));
        }
        Ok(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::{shared_limit_per_block, shared_per_sm, Tuning};

    #[test]
    fn absurd_tunings_are_errors_of_validate_not_panics_before_it() {
        let p = SinglePassPolicy::for_item(8, 90).unwrap();
        for tuning in [
            Tuning::default().threads(u32::MAX),
            Tuning::default().threads(u32::MAX - 31),
            Tuning::default().blocks_per_sm(1 << 27),
            Tuning::default().blocks_per_sm(u32::MAX).threads(u32::MAX),
        ] {
            let tuned = tuning.apply(p);
            // What the module's shape is derived from before validation.
            let _ = (tuned.register_budget(), tuned.grouped_runs_for(4, true, 4, 8), tuned.shared_bytes(8));
            assert!(matches!(tuned.validate(8, 90), Err(Error::BadTuning(_))), "{tuning:?}");
        }
    }

    #[test]
    fn huge_items_are_an_error_not_a_panic() {
        let why = SinglePassPolicy::for_item(1 << 20, 90).unwrap_err();
        assert!(why.contains("exceed"), "{why}");
    }

    #[test]
    fn every_default_single_pass_policy_is_valid() {
        for size in 1..=SINGLE_PASS_MAX_ITEM_BYTES {
            let p = SinglePassPolicy::for_item(size, 90).unwrap();
            p.validate(size, 90).unwrap_or_else(|e| panic!("size {size}: {p:?}: {e}"));
            assert!(
                p.blocks_per_sm as usize * (p.shared_bytes(size) + 1024) <= shared_per_sm(90),
                "size {size}: {p:?}"
            );
            assert_eq!(p.status == StatusLayout::Packed, size <= 8, "size {size}");
            assert!(p.items_per_thread as usize * size <= 256 || p.items_per_thread == 1, "size {size}: {p:?}");
            let segments = p.for_segments();
            segments.validate(size, 90).unwrap_or_else(|e| panic!("segments, size {size}: {segments:?}: {e}"));
            // The fused-map shape: its extra stage fits the shared memory of
            // the blocks per SM it keeps.
            // Inputs as wide as the items, and half as wide.
            for (input, longest) in [(size, 16), (size / 2, 32)] {
                let maps = p.for_maps(input, size);
                maps.validate(size, 90).unwrap_or_else(|e| panic!("maps, size {size}: {maps:?}: {e}"));
                assert!(
                    maps.blocks_per_sm as usize * (maps.shared_bytes(size) + 1024) <= shared_per_sm(90),
                    "maps, size {size}: {maps:?}"
                );
                if p.items_per_thread > longest {
                    assert_eq!(maps.items_per_thread, longest, "size {size}, {input}-byte inputs");
                    assert_eq!(maps.stages, (p.stages + 1).min(4), "size {size}: a stage for the shorter runs");
                } else {
                    assert_eq!(maps, p, "size {size}, {input}-byte inputs: short runs keep the plain shape");
                }
            }
        }
    }

    #[test]
    fn another_block_size_keeps_the_threads_per_sm() {
        for size in [4, 8, 16, 32] {
            let p = SinglePassPolicy::for_item(size, 90).unwrap();
            for threads in [32, 96, 128, 256, 512, 992] {
                let t = Tuning::default().threads(threads).items_per_thread(1).apply(p);
                let (budget, block) = (p.block_threads() * p.blocks_per_sm, t.block_threads());
                let resident = block * t.blocks_per_sm;
                assert!(resident <= budget.max(block) && resident + block > budget, "{size} B, {t:?}");
                if t.shared_bytes(size) <= shared_limit_per_block(90) {
                    t.validate(size, 90).unwrap_or_else(|e| panic!("{size} B, {t:?}: {e}"));
                }
            }
        }
    }

    #[test]
    fn a_deterministic_policy_reads_the_default_groups_unless_told_otherwise() {
        let p = SinglePassPolicy::for_item(4, 90).unwrap();
        assert!(!p.deterministic);
        let d = Tuning::default().deterministic(true).apply(p);
        assert!(d.deterministic && d.lookback == DETERMINISTIC_LOOKBACK);
        d.validate(4, 90).unwrap();
        let wide = Tuning::default().deterministic(true).lookback(4).apply(p);
        assert_ne!(DETERMINISTIC_LOOKBACK, 4);
        assert_eq!(wide.lookback, 4);
        assert_eq!(Tuning::default().deterministic(false).apply(p), p);
    }

    #[test]
    fn tagged_statuses_take_a_sixteen_byte_word_per_eight_byte_piece() {
        let p = Tuning::default().status(StatusLayout::Tagged).apply(SinglePassPolicy::for_item(16, 90).unwrap());
        for (size, bytes) in [(1, 16), (4, 16), (8, 16), (12, 32), (16, 32), (32, 64), (64, 128)] {
            assert_eq!(p.status_bytes_per_tile(size), bytes, "items of {size} bytes");
        }
        // Any item size takes it.
        for size in [4, 12, 16, 32] {
            p.validate(size, 90).unwrap();
        }
    }

    #[test]
    fn sixteen_byte_items_take_the_measured_shape() {
        // H200, f64 pairs at 2^27: 128 x 16, two blocks per SM, no early
        // loads 0.71 of copy, against 0.67 for 256 x 8 with early loads
        // (split statuses); tagged statuses 0.84.
        let p = SinglePassPolicy::for_item(16, 90).unwrap();
        assert_eq!((p.threads, p.items_per_thread, p.blocks_per_sm, p.stages), (128, 16, 2, 2));
        assert_eq!((p.status, p.early_loads, p.lookback), (StatusLayout::Tagged, false, 1));
        // Quaternions (32 bytes) too; wider items keep split statuses.
        assert_eq!(SinglePassPolicy::for_item(32, 90).unwrap().status, StatusLayout::Tagged);
        assert_eq!(SinglePassPolicy::for_item(64, 90).unwrap().status, StatusLayout::Split);
        p.validate(16, 90).unwrap();
        // 12-byte items: whole 16-byte vectors per run (20 items).
        assert_eq!(SinglePassPolicy::for_item(12, 90).unwrap().items_per_thread, 20);
    }

    #[test]
    fn bad_overrides_are_errors() {
        let p = SinglePassPolicy::for_item(16, 90).unwrap();
        assert!(matches!(
            Tuning::default().status(StatusLayout::Packed).apply(p).validate(16, 90),
            Err(Error::BadTuning(_))
        ));
        assert!(matches!(Tuning::default().threads(100).apply(p).validate(16, 90), Err(Error::BadTuning(_))));
        assert!(matches!(Tuning::default().items_per_thread(0).apply(p).validate(16, 90), Err(Error::BadTuning(_))));
        assert!(matches!(
            Tuning::default().threads(1024).items_per_thread(64).apply(p).validate(16, 90),
            Err(Error::BadTuning(_))
        ));
    }
}
