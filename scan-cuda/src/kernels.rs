//! The kernels of one operator's module, as a table keyed by (stage,
//! direction, kind): one place names every instantiation, for the source
//! (source.rs) and for the lookups after loading.

use std::collections::HashMap;
use std::sync::Arc;

use cudarc::driver::{CudaFunction, CudaModule};
use scan_core::{Direction, Kind, Result, ScanSpec};

use crate::buffer::driver_error;

/// One kernel template, instantiated for every (direction, kind).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Stage {
    /// The single-pass scan (kernels/single_pass.cuh).
    SinglePass,
    /// The single-pass scan of rows, each on its own (heads.cuh, `RowHeads`).
    SinglePassRows,
    /// The single-pass scan of consecutive rows of whole tiles (heads.cuh,
    /// `TileRows`), two or more each: the plain code path, a row's first
    /// tile not looking back.
    SinglePassTileRows,
    /// Rows of at most one tile each, a block per row (kernels/row_tiles.cuh):
    /// no tile counter, status or look-back. It takes the single-pass
    /// kernels' arguments and tile shape, so it launches like them.
    SinglePassRowTiles,
    /// The single-pass scan of segments marked by head flags (`FlagHeads`).
    SinglePassFlags,
    /// Head flags from segment starts, checking them (kernels/segments.cuh);
    /// one kernel, whatever the direction and kind.
    SegmentFlags,
    /// The single-pass scan of segments marked by head bits (`BitHeads`).
    SinglePassBits,
    /// The single-pass scan of one sequence through fused maps: items lifted
    /// from input arrays, results projected (kernels/maps.cuh).
    SinglePassMapped,
    /// Consecutive rows, each on its own, through fused maps (`RowHeads`
    /// with the maps' input and output; item slots).
    SinglePassMappedRows,
    /// Consecutive rows of whole tiles through fused maps (`TileRows`: the
    /// plain code path, a row's first tile not looking back).
    SinglePassMappedTileRows,
    /// Head bits from segment starts, checking them (segments.cuh); one
    /// kernel, whatever the direction and kind.
    SegmentBits,
    /// Blelloch pass 1: scan tiles, emit their totals (kernels/blelloch.cuh).
    BlellochScanTiles,
    /// Blelloch pass 2: add each tile's prefix (kernels/propagate.cuh); the
    /// kind does not change it, so both kinds name one kernel.
    BlellochAddPrefixes,
}

impl Stage {
    /// The single-pass stages: one kernel signature; one sequence, five
    /// segmentations (rows, rows of whole tiles, rows of one tile, flags,
    /// bits) and the fused maps, of one sequence or of rows.
    pub(crate) const SINGLE_PASS: [Stage; 9] = [
        Stage::SinglePass,
        Stage::SinglePassRows,
        Stage::SinglePassTileRows,
        Stage::SinglePassRowTiles,
        Stage::SinglePassFlags,
        Stage::SinglePassBits,
        Stage::SinglePassMapped,
        Stage::SinglePassMappedRows,
        Stage::SinglePassMappedTileRows,
    ];

    /// The `extern "C"` name of this stage's kernel for `direction` and `kind`.
    pub(crate) fn kernel_name(self, direction: Direction, kind: Kind) -> String {
        let dir = match direction {
            Direction::Forward => "forward",
            Direction::Reverse => "reverse",
        };
        let kind = match kind {
            Kind::Inclusive => "inclusive",
            Kind::Exclusive => "exclusive",
        };
        match self {
            Stage::SinglePass => format!("single_pass_{dir}_{kind}"),
            Stage::SinglePassRows => format!("single_pass_rows_{dir}_{kind}"),
            Stage::SinglePassTileRows => format!("single_pass_tile_rows_{dir}_{kind}"),
            Stage::SinglePassRowTiles => format!("single_pass_row_tiles_{dir}_{kind}"),
            Stage::SinglePassFlags => format!("single_pass_flags_{dir}_{kind}"),
            Stage::SegmentFlags => "segment_flags".to_string(),
            Stage::SinglePassBits => format!("single_pass_bits_{dir}_{kind}"),
            Stage::SinglePassMapped => format!("single_pass_mapped_{dir}_{kind}"),
            Stage::SinglePassMappedRows => format!("single_pass_mapped_rows_{dir}_{kind}"),
            Stage::SinglePassMappedTileRows => format!("single_pass_mapped_tile_rows_{dir}_{kind}"),
            Stage::SegmentBits => "segment_bits".to_string(),
            Stage::BlellochScanTiles => format!("blelloch_scan_tiles_{dir}_{kind}"),
            Stage::BlellochAddPrefixes => format!("blelloch_add_prefixes_{dir}"),
        }
    }
}

/// The kernels an operator's module is compiled with. A scan of one sequence
/// needs only [`Family::Whole`]; rows and segments are separate modules,
/// compiled when first used, so that a plain scan does not wait for NVRTC
/// to build kernels it never runs (each single-pass stage costs about as
/// much NVRTC time as the rest of a module).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Family {
    /// The single-pass and Blelloch scans of one sequence.
    Whole,
    /// The single-pass scan of rows.
    Rows,
    /// The single-pass scan of flagged segments, and the flags from starts.
    Flags,
    /// The single-pass scan of segments given by their starts, as head bits.
    Offsets,
    /// The single-pass scan through one set of fused maps (a module per
    /// operator, maps and input arrays: `ModuleSource::mapped_of`).
    Mapped,
    /// Rows through one set of fused maps as segments
    /// (`ModuleSource::mapped_of` with this family), compiled when first
    /// used, as rows are.
    MappedRows,
    /// Consecutive rows of whole tiles through one set of fused maps: the
    /// plain mapped kernel's code path and policy (narrow slots, grouped
    /// runs, fixed groups), each row's first tile starting afresh.
    MappedTileRows,
}

impl Family {
    /// Whether this family scans segments (rows, flags, offsets): rows with
    /// [`SinglePassPolicy::for_segments`](crate::SinglePassPolicy::for_segments)'
    /// shape (of the deterministic one for 4-byte items), flags and offsets
    /// with [`SinglePassPolicy::for_segment_heads`](crate::SinglePassPolicy::for_segment_heads)'.
    pub(crate) fn is_segmented(self) -> bool {
        matches!(self, Family::Rows | Family::Flags | Family::Offsets)
    }

    /// The stages of this family; `single_pass` says whether the operator
    /// has single-pass kernels at all.
    pub(crate) fn stages(self, single_pass: bool) -> Vec<Stage> {
        match (self, single_pass) {
            (Family::Whole, true) => vec![Stage::BlellochScanTiles, Stage::BlellochAddPrefixes, Stage::SinglePass],
            (Family::Whole, false) => vec![Stage::BlellochScanTiles, Stage::BlellochAddPrefixes],
            (Family::Rows, true) => vec![Stage::SinglePassRows, Stage::SinglePassTileRows, Stage::SinglePassRowTiles],
            (Family::Flags, true) => vec![Stage::SegmentFlags, Stage::SinglePassFlags],
            (Family::Offsets, true) => vec![Stage::SegmentBits, Stage::SinglePassBits],
            (Family::Mapped, true) => vec![Stage::SinglePassMapped],
            (Family::MappedRows, true) => vec![Stage::SinglePassMappedRows],
            (Family::MappedTileRows, true) => vec![Stage::SinglePassMappedTileRows],
            // Fused maps run on the single-pass kernels only (Cuda::scan_mapped).
            (Family::Mapped | Family::MappedRows | Family::MappedTileRows, false) => Vec::new(),
            // Without single-pass kernels rows and segments run Blelloch's
            // scans one by one; starts still become flags to find them.
            (Family::Rows, false) => Vec::new(),
            (Family::Flags, false) => vec![Stage::SegmentFlags],
            // (Blelloch finds segments from the flags of Family::Flags.)
            (Family::Offsets, false) => Vec::new(),
        }
    }
}

/// Every (direction, kind) pair with the matching flags, in a fixed order.
pub(crate) fn variants() -> impl Iterator<Item = (Direction, Kind)> {
    ScanSpec::ALL.into_iter().map(|s| (s.direction, s.kind))
}

/// The loaded kernels of one module.
pub(crate) struct KernelTable {
    _module: Arc<CudaModule>,
    functions: HashMap<(Stage, Direction, Kind), CudaFunction>,
}

/// The kernel `name` of `module`.
pub(crate) fn lookup(module: &Arc<CudaModule>, name: &str) -> Result<CudaFunction> {
    module.load_function(name).map_err(|e| driver_error(&format!("kernel lookup ({name})"), e))
}

/// The kernel filed under `key` in `table` (a module's kernels by shape);
/// missing is an internal error naming `what`.
pub(crate) fn keyed<'a, K: PartialEq>(table: &'a [(K, CudaFunction)], key: &K, what: &str) -> Result<&'a CudaFunction> {
    table
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, f)| f)
        .ok_or_else(|| scan_core::Error::Other(format!("internal: {what} kernel is missing")))
}

impl KernelTable {
    /// Looks up every (direction, kind) instantiation of `stages` in `module`.
    pub(crate) fn load(module: Arc<CudaModule>, stages: &[Stage]) -> Result<KernelTable> {
        let mut functions = HashMap::new();
        for &stage in stages {
            for (direction, kind) in variants() {
                let name = stage.kernel_name(direction, kind);
                let f = lookup(&module, &name)?;
                functions.insert((stage, direction, kind), f);
            }
        }
        Ok(KernelTable { _module: module, functions })
    }

    /// The kernel of `stage` for `spec`, if the module has that stage.
    pub(crate) fn get(&self, stage: Stage, spec: ScanSpec) -> Option<&CudaFunction> {
        self.functions.get(&(stage, spec.direction, spec.kind))
    }
}
