//! The single-pass scan on the GPU (kernels/single_pass.cuh): one launch per
//! scan, with tile status that lives across calls.
//!
//! The tile status and the tile counter are allocated once per operator and
//! grown when a longer scan needs more tiles. They are never cleared between
//! scans: each launch gets a new epoch that its statuses carry (a status of an
//! earlier epoch reads as unpublished), and the kernel's last tile claimant
//! resets the counter. So a scan is one launch, with no initialisation pass and
//! no allocation; an input of one tile needs no status at all.

use std::sync::Arc;

use cudarc::driver::{CudaSlice, CudaStream, DevicePtr, LaunchConfig, PushKernelArg};
use scan_core::device::{DeviceScan, Operands};
use scan_core::{Error, Result, ScanOp, ScanSpec};

use crate::blelloch::grid;
use crate::buffer::driver_error;
use crate::kernels::Stage;
use crate::module::{lock, Module};
use crate::policy::SinglePassPolicy;
use crate::span::Span;

/// Epochs are 30 bits in a status code (`epoch << 2 | kind`).
const EPOCH_LIMIT: u32 = 1 << 30;

/// The most blocks a launch of rows of one tile has; they stride over the
/// rows past that (kernels/row_tiles.cuh).
const MAX_ROW_BLOCKS: usize = 1 << 30;

/// The blocks of rows of one tile under the adversarial schedule.
const ADVERSARIAL_ROW_BLOCKS: usize = 2;

/// Where each part of the status scratch starts, in bytes.
const COUNTER_BYTES: usize = 256;

/// The reusable tile status of one operator's single-pass kernels.
#[derive(Default)]
pub(crate) struct TileState {
    mem: Option<CudaSlice<u8>>,
    /// Tiles the scratch has room for.
    capacity: usize,
    /// The epoch of the last launch (0: none since the scratch was cleared).
    epoch: u32,
}

/// The device addresses one launch passes to the kernel.
struct StatusArgs {
    counter: u64,
    words: u64,
    aggregates: u64,
    prefixes: u64,
    epoch: u32,
}

fn align(n: usize) -> usize {
    n.next_multiple_of(256)
}

impl TileState {
    /// Scratch for `tiles` tiles and a fresh epoch for the next launch.
    fn next_launch(
        &mut self,
        stream: &Arc<CudaStream>,
        tiles: usize,
        policy: SinglePassPolicy,
        item_size: usize,
    ) -> Result<StatusArgs> {
        let words_per_tile = match policy.status {
            crate::policy::StatusLayout::Packed | crate::policy::StatusLayout::Tagged => {
                policy.status_bytes_per_tile(item_size)
            }
            crate::policy::StatusLayout::Split => 4,
        };
        let layout = |capacity: usize| {
            let words = COUNTER_BYTES;
            let aggregates = words + align(capacity * words_per_tile);
            let split = policy.status == crate::policy::StatusLayout::Split;
            let values = if split { align(capacity * item_size) } else { 0 };
            (words, aggregates, aggregates + values, aggregates + 2 * values)
        };
        if self.mem.is_none() || self.capacity < tiles {
            // Grow geometrically so that a run of growing scans allocates
            // a logarithmic number of times.
            let capacity = tiles.next_power_of_two().max(64);
            let (_, _, _, bytes) = layout(capacity);
            self.mem = None; // freed in stream order, after the launches that use it
            let mem = stream.alloc_zeros::<u8>(bytes).map_err(|e| driver_error("tile status allocation", e))?;
            self.mem = Some(mem);
            self.capacity = capacity;
            self.epoch = 0;
        }
        let mem = self.mem.as_mut().ok_or_else(|| Error::Other("internal: no tile status".into()))?;
        if self.epoch + 1 >= EPOCH_LIMIT {
            stream.memset_zeros(mem).map_err(|e| driver_error("tile status reset", e))?;
            self.epoch = 0;
        }
        self.epoch += 1;
        let (base, sync) = mem.device_ptr(stream);
        drop(sync);
        let (words, aggregates, prefixes, _) = layout(self.capacity);
        let split = policy.status == crate::policy::StatusLayout::Split;
        Ok(StatusArgs {
            counter: base,
            words: base + words as u64,
            aggregates: if split { base + aggregates as u64 } else { 0 },
            prefixes: if split { base + prefixes as u64 } else { 0 },
            epoch: self.epoch,
        })
    }

    /// Forgets the scratch (after a failed launch, whose counter and statuses
    /// are unknown): the next launch starts from a cleared one.
    fn reset(&mut self) {
        self.mem = None;
        self.capacity = 0;
        self.epoch = 0;
    }
}

/// The single-pass scan of one operator on one stream, as a [`DeviceScan`].
pub(crate) struct SinglePass<'a> {
    pub(crate) stream: &'a Arc<CudaStream>,
    pub(crate) module: &'a Module,
    pub(crate) policy: SinglePassPolicy,
    /// [`Tuning::adversarial_schedule`](crate::Tuning::adversarial_schedule)'s seed.
    pub(crate) chaos: u32,
    /// Joins this scan to the pieces before and after it (kernels/single_pass.cuh).
    pub(crate) carry: Carry,
    /// Whether a launch may be recorded into a CUDA graph: only inside
    /// [`Cuda::time_replayed`](crate::Cuda::time_replayed), whose repeated
    /// calls make replays safe (see [`refuse_recording`]).
    pub(crate) recordable: bool,
}

/// How a single-pass scan is split into independent scans (kernels/heads.cuh).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) enum Segments {
    /// One scan of everything.
    #[default]
    Whole,
    /// Rows of `row_len` items (>= 1), `stride` items (>= `row_len`) apart.
    Rows { row_len: u64, stride: u64 },
    /// Consecutive rows of `row_len` items, a whole number of the module's
    /// tiles each (kernels/heads.cuh, `TileRows`).
    TileRows { row_len: u64 },
    /// Rows of `row_len` items, `stride` apart, each at most one of the
    /// module's tiles and more than half of one: a block per row
    /// (kernels/row_tiles.cuh), no status.
    RowTiles { row_len: u64, stride: u64 },
    /// Segments starting where a byte of `flags` (one per item) is nonzero.
    Flags { flags: u64 },
    /// Segments starting where a bit of `bits` (64-bit words, `len / 64 +
    /// 2` of them, zero past `len`) is set; the word after them is the
    /// starts' check, and the kernel writes nothing unless it is 0
    /// (kernels/segments.cuh).
    Bits { bits: u64 },
    /// One scan of everything through a mapped module's maps: `src` is the
    /// first input array, these the second and third (0 when absent), and
    /// `dst` the output array (kernels/maps.cuh).
    Mapped { in1: u64, in2: u64 },
    /// Consecutive rows of `row_len` items through a mapped-rows module's
    /// maps, each on its own (`RowHeads`), the arrays as for `Mapped`.
    MappedRows { in1: u64, in2: u64, row_len: u64 },
    /// The same, rows of whole tiles (`TileRows`).
    MappedTileRows { in1: u64, in2: u64, row_len: u64 },
}

impl Segments {
    /// How rows of `row_len` items, `stride` apart, run on kernels of
    /// `tile` items: rows of one tile, or of more than half of one, a block
    /// each ([`Segments::RowTiles`]); consecutive rows of whole tiles on the
    /// plain code path ([`Segments::TileRows`]); others as
    /// [`Segments::Rows`], several short rows to a tile.
    pub(crate) fn for_rows(tile: usize, row_len: usize, stride: usize) -> Segments {
        if row_len <= tile && 2 * row_len > tile {
            Segments::RowTiles { row_len: row_len as u64, stride: stride as u64 }
        } else if stride == row_len && row_len % tile == 0 {
            Segments::TileRows { row_len: row_len as u64 }
        } else {
            Segments::Rows { row_len: row_len as u64, stride: stride as u64 }
        }
    }

    fn stage(self) -> Stage {
        match self {
            Segments::Whole => Stage::SinglePass,
            Segments::Rows { .. } => Stage::SinglePassRows,
            Segments::TileRows { .. } => Stage::SinglePassTileRows,
            Segments::RowTiles { .. } => Stage::SinglePassRowTiles,
            Segments::Flags { .. } => Stage::SinglePassFlags,
            Segments::Bits { .. } => Stage::SinglePassBits,
            Segments::Mapped { .. } => Stage::SinglePassMapped,
            Segments::MappedRows { .. } => Stage::SinglePassMappedRows,
            Segments::MappedTileRows { .. } => Stage::SinglePassMappedTileRows,
        }
    }
}

/// The threads and dynamic shared memory of one block of single-pass
/// `stage` (what its kernels are opted in to and launched with): the
/// scanning threads and the look-back warp with every slot, or, for rows of
/// one tile (kernels/row_tiles.cuh), the scanning threads alone with one
/// tile's slices.
pub(crate) fn block_shape(stage: Stage, policy: SinglePassPolicy, item_size: usize) -> (u32, usize) {
    match stage {
        Stage::SinglePassRowTiles => (policy.threads, policy.row_tile_shared_bytes(item_size)),
        _ => (policy.block_threads(), policy.dynamic_shared_bytes(item_size)),
    }
}

/// Device addresses of one item each (0: none): the total of everything
/// before the piece scanned, which the scan starts from, and where the
/// total including the piece goes.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Carry {
    pub(crate) from: u64,
    pub(crate) to: u64,
}

impl<Op: ScanOp> DeviceScan<Op> for SinglePass<'_> {
    type Buf = Span;

    fn len(&self, buf: &Span) -> usize {
        buf.len
    }

    fn scan(&self, operands: Operands<'_, Span>, spec: ScanSpec) -> Result<()> {
        let len = <Self as DeviceScan<Op>>::checked_len(self, &operands)?;
        // In place, the kernel gets the same address twice: each warp reads
        // its whole segment before it writes it (kernels/single_pass.cuh).
        let (src, dst) = match operands {
            Operands::InPlace(data) => (data.ptr, data.ptr),
            Operands::Into { src, dst } => (src.ptr, dst.ptr),
        };
        self.launch(src, dst, len, Segments::Whole, spec)
    }
}

impl SinglePass<'_> {
    /// Queues the scan of `len` scan positions from `src` to `dst` (the
    /// same address in place), split as `segments` says. The callers have
    /// checked that the buffers hold what `len` and `segments` address; the
    /// carry applies to [`Segments::Whole`] only.
    pub(crate) fn launch(&self, src: u64, dst: u64, len: usize, segments: Segments, spec: ScanSpec) -> Result<()> {
        if len == 0 {
            return Ok(());
        }
        let stage = segments.stage();
        let tiles = len.div_ceil(self.policy.tile());
        let blocks = if let Segments::RowTiles { row_len, .. } = segments {
            // A block per row, as many as a grid holds (the blocks stride
            // over the rows past that; kernels/row_tiles.cuh). Under the
            // adversarial schedule two blocks stride over all the rows, so
            // that tests reach the stride and the block-scan scratches'
            // alternation.
            let rows = len / row_len.max(1) as usize;
            rows.min(if self.chaos != 0 { ADVERSARIAL_ROW_BLOCKS } else { MAX_ROW_BLOCKS })
        } else {
            // A persistent grid: blocks take tiles from the counter until
            // none are left (kernels/single_pass.cuh).
            tiles.min(self.module.grid(stage).max(1) as usize)
        };
        let (threads, shared) = block_shape(stage, self.policy, self.module.item_size);
        let cfg = LaunchConfig {
            grid_dim: (grid(blocks)?, 1, 1),
            block_dim: (threads, 1, 1),
            shared_mem_bytes: u32::try_from(shared).map_err(|_| Error::TooLarge { what: "shared memory".into() })?,
        };
        let kernel = self
            .module
            .kernels
            .get(stage, spec)
            .ok_or_else(|| Error::Other("internal: the module has no single-pass kernels".into()))?;
        let len64 = len as u64;
        let (row_len, stride, flags) = match segments {
            Segments::Whole => (len64, len64, 0u64),
            Segments::Rows { row_len, stride } => (row_len, stride, 0),
            Segments::TileRows { row_len } => (row_len, row_len, 0),
            Segments::RowTiles { row_len, stride } => (row_len, stride, 0),
            Segments::Flags { flags } => (len64, len64, flags),
            Segments::Bits { bits } => (len64, len64, bits),
            // The mapped kernels read their second and third arrays there,
            // and the mapped rows' kernels their rows' length in the last.
            Segments::Mapped { in1, in2 } => (in1, in2, 0),
            Segments::MappedRows { in1, in2, row_len } | Segments::MappedTileRows { in1, in2, row_len } => {
                (in1, in2, row_len)
            }
        };
        let carry = match segments {
            Segments::Whole => self.carry,
            _ => Carry::default(),
        };
        let launch = |args: &StatusArgs| {
            let mut launch = self.stream.launch_builder(kernel);
            launch.arg(&src).arg(&dst).arg(&len64).arg(&carry.from).arg(&carry.to).arg(&args.counter);
            launch.arg(&args.words).arg(&args.aggregates).arg(&args.prefixes).arg(&args.epoch).arg(&self.chaos);
            launch.arg(&row_len).arg(&stride).arg(&flags);
            // SAFETY: `src` and `dst` address the items `len` and the
            // segments name (`len` items, or rows * stride - stride + row_len
            // for rows) of this module's item type (mapped: `len` items of
            // each input array's type and of the output type, in1 and in2
            // included when the maps read them) and stay live until the
            // stream has run the kernel (the caller's buffers, or scratch
            // freed in stream order); `flags` is 0, `len` flag bytes, or
            // for `Segments::Bits` `len / 64 + 2` words of bits and the
            // check word after them (rows.rs, heads_from_starts); the carry
            // addresses are 0 or one item each, likewise live; the status
            // arrays hold `tiles` tiles for this module's layout. The kernel
            // touches nothing else.
            unsafe { launch.launch(cfg) }.map(|_| ()).map_err(|e| driver_error("launch of the single-pass scan", e))
        };
        if tiles == 1 || matches!(segments, Segments::RowTiles { .. }) {
            // One tile has no predecessor and no successor, nor has a row
            // of one tile: no status.
            let none = StatusArgs { counter: 0, words: 0, aggregates: 0, prefixes: 0, epoch: 0 };
            return launch(&none);
        }
        if !self.recordable {
            refuse_recording(self.stream)?;
        }
        // Held until the launch is queued, so that epochs reach the stream in
        // the order they were handed out.
        let mut state = lock(&self.module.tile_state);
        let args = state.next_launch(self.stream, tiles, self.policy, self.module.item_size)?;
        launch(&args).inspect_err(|_| state.reset())
    }
}

/// An error if `stream` is recording a CUDA graph. A scan of more than one
/// tile tells its tiles' statuses from older ones by an epoch the host hands
/// out per launch; a graph replays the recorded epoch, so a replayed scan
/// could read the statuses its own previous replay left, with that replay's
/// values, before its predecessors publish theirs. (`Cuda::time_replayed`
/// records at least two calls of one size, each of which rewrites every
/// status, so that no replay meets its own epoch; a device-side epoch would
/// make any recording safe: DEVELOPERS.md.) The legacy default stream cannot
/// record at all.
fn refuse_recording(stream: &CudaStream) -> Result<()> {
    use cudarc::driver::sys::CUstreamCaptureStatus as Capture;
    if stream.cu_stream().is_null() {
        return Ok(());
    }
    match stream.capture_status().map_err(|e| driver_error("stream capture status", e))? {
        Capture::CU_STREAM_CAPTURE_STATUS_NONE => Ok(()),
        _ => Err(Error::Unsupported(
            "a single-pass scan of more than one tile cannot be recorded into a CUDA graph: its tile statuses \
             carry a per-launch number that a replay would repeat; record Algorithm::Blelloch scans instead, or \
             time repeated scans with Cuda::time_replayed"
                .into(),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::Family;
    use crate::source::ModuleSource;
    use crate::Tuning;
    use scan_core::ops::{Add, LinearRecurrence};

    /// The rows module's tile on the H200 (sm_90).
    fn rows_tile<Op: scan_core::CudaOp>() -> usize {
        let source = ModuleSource::family_of::<Op>(90, Tuning::default(), Family::Rows).unwrap();
        source.single_pass.unwrap().tile()
    }

    #[test]
    fn rows_of_one_tile_take_a_block_each_and_longer_whole_tiles_the_plain_code_path() {
        let tile = rows_tile::<Add<f32>>();
        assert_eq!(tile, 4096, "f32 rows of 4096 (the benchmark's) are one tile each");
        // More than half a tile, at most one: a block per row, strided or not.
        for (row_len, stride) in [(tile, tile), (tile - 1, tile - 1), (tile / 2 + 1, tile / 2 + 1), (tile, tile + 1)] {
            assert!(
                matches!(Segments::for_rows(tile, row_len, stride), Segments::RowTiles { .. }),
                "rows of {row_len}, stride {stride}"
            );
        }
        for row_len in [2 * tile, 3 * tile, 1 << 20] {
            assert!(
                matches!(Segments::for_rows(tile, row_len, row_len), Segments::TileRows { .. }),
                "rows of {row_len}"
            );
        }
        // Short rows, rows of more than a tile that are not whole tiles, or
        // strided: the segmented path.
        for (row_len, stride) in [(32, 32), (tile / 2, tile / 2), (tile + 1, tile + 1), (2 * tile, 2 * tile + 1)] {
            assert!(
                matches!(Segments::for_rows(tile, row_len, stride), Segments::Rows { .. }),
                "rows of {row_len}, stride {stride}"
            );
        }
        assert_eq!(rows_tile::<LinearRecurrence<f32>>(), 4096, "the recurrence's rows of 4096 too");
    }
}
