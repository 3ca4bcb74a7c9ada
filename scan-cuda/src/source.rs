//! The CUDA source of one operator's module: operator declaration + kernel
//! templates + one `extern "C"` instantiation per (stage, direction, kind).

use std::fmt::Write as _;

use scan_core::maps::CudaMaps;
use scan_core::{CudaOp, CudaSource, Error, Kind, Result};

use crate::kernels::{variants, Family, Stage};
use crate::policy::{BlellochPolicy, SinglePassPolicy, StatusLayout, Tuning};

/// Refuses `Op` when its items are zero-sized, before any source is built:
/// such an item has no bytes for a kernel to move (every one is the one
/// value of its type, which the CPU backend returns at once), and the
/// kernels' shapes divide by the item's size.
pub(crate) fn items_have_bytes<Op: CudaOp>() -> Result<()> {
    if std::mem::size_of::<Op::Item>() == 0 {
        return Err(Error::Unsupported(format!(
            "zero-sized items on the GPU: `{}` scans `{}`, which has no bytes to move (every item is the one \
             value of its type; the CPU backend returns such scans at once)",
            std::any::type_name::<Op>(),
            std::any::type_name::<Op::Item>()
        )));
    }
    Ok(())
}

/// Kernel template files, each under a banner naming it, in order: the
/// start of every generated module.
pub(crate) fn kernel_files(files: &[(&str, &str)]) -> String {
    let mut code = String::new();
    for (file, text) in files {
        let _ = write!(code, "// ---- kernels/{file} ----\n{text}\n");
    }
    code
}

/// The kernel templates, layered as in CUB (thread, warp, block, device), in
/// the order they build on each other.
const TEMPLATES: [(&str, &str); 16] = [
    ("util.cuh", include_str!("../kernels/util.cuh")),
    ("thread.cuh", include_str!("../kernels/thread.cuh")),
    ("warp.cuh", include_str!("../kernels/warp.cuh")),
    ("block.cuh", include_str!("../kernels/block.cuh")),
    ("exchange.cuh", include_str!("../kernels/exchange.cuh")),
    ("heads.cuh", include_str!("../kernels/heads.cuh")),
    ("tile_status.cuh", include_str!("../kernels/tile_status.cuh")),
    ("lookback.cuh", include_str!("../kernels/lookback.cuh")),
    ("maps.cuh", include_str!("../kernels/maps.cuh")),
    ("narrow.cuh", include_str!("../kernels/narrow.cuh")),
    ("grouped.cuh", include_str!("../kernels/grouped.cuh")),
    ("single_pass.cuh", include_str!("../kernels/single_pass.cuh")),
    ("row_tiles.cuh", include_str!("../kernels/row_tiles.cuh")),
    ("blelloch.cuh", include_str!("../kernels/blelloch.cuh")),
    ("propagate.cuh", include_str!("../kernels/propagate.cuh")),
    ("segments.cuh", include_str!("../kernels/segments.cuh")),
];

/// The fused maps of a [`Family::Mapped`] module: their declaration, and the
/// CUDA types of the input arrays (one to three, in order).
pub(crate) struct MapsSource {
    pub(crate) source: CudaSource,
    pub(crate) arrays: Vec<String>,
}

/// What fused maps read and write per position, for their policy.
#[derive(Clone, Copy, Debug)]
pub(crate) struct MapsShape {
    /// Bytes read per position, over all input arrays.
    pub(crate) input_bytes: usize,
    /// Input arrays.
    pub(crate) arrays: usize,
    /// Bytes written per position.
    pub(crate) output_bytes: usize,
    /// The widest input array's element, in bytes.
    pub(crate) widest: usize,
    /// Whether every input array's element size is a power of two.
    pub(crate) pow2: bool,
}

impl MapsShape {
    /// What `M` reads and writes, from arrays of elements of `sizes` bytes.
    fn of<Op: CudaOp, M: CudaMaps<Op>>(sizes: &[usize]) -> MapsShape {
        MapsShape {
            input_bytes: std::mem::size_of::<M::Input>(),
            arrays: sizes.len(),
            output_bytes: std::mem::size_of::<M::Output>(),
            widest: sizes.iter().copied().max().unwrap_or(0),
            pow2: sizes.iter().all(|s| s.is_power_of_two()),
        }
    }

    /// One array of `input_bytes`-byte elements into outputs as wide.
    #[cfg(test)]
    fn one(input_bytes: usize) -> MapsShape {
        MapsShape {
            input_bytes,
            arrays: 1,
            output_bytes: input_bytes,
            widest: input_bytes,
            pow2: input_bytes.is_power_of_two(),
        }
    }
}

/// Everything the compiler sees for one operator, and what the host needs to
/// launch it. Two equal sources make the same module (the executor loads it
/// once for both).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ModuleSource {
    /// The operator's C++ name (for error messages).
    pub op_name: String,
    /// The full translation unit.
    pub code: String,
    /// Size of one item in bytes, on both sides.
    pub item_size: usize,
    /// The single-pass kernels' shape, or why the module has none (then scans
    /// fall back to Blelloch).
    pub single_pass: std::result::Result<SinglePassPolicy, String>,
    /// The Blelloch kernels' shape.
    pub blelloch: BlellochPolicy,
    /// Which kernels the code instantiates.
    pub(crate) family: Family,
    /// The same kernels in a shape that needs fewer registers, built instead
    /// when this one's kernels use local memory (they spilled): the segment
    /// kernels' long runs ([`SinglePassPolicy::for_segment_heads`]).
    pub(crate) fallback: Option<Box<ModuleSource>>,
}

impl ModuleSource {
    /// The module of `Op` for compute capability `arch` (e.g. 90): its
    /// declaration, the templates, and instantiations for `Op::Item`'s size.
    /// Fails when the item is too large for any kernel, or when `tuning` asks
    /// for a shape the kernels cannot run.
    pub fn of<Op: CudaOp>(arch: u32, tuning: Tuning) -> Result<ModuleSource> {
        Self::family_of::<Op>(arch, tuning, Family::Whole)
    }

    /// [`ModuleSource::of`] for the kernels of `family`.
    /// The segment kernels (flags, offsets) of 4-byte items take long runs,
    /// which spill for some operators: such a source carries a
    /// [`fallback`](ModuleSource::fallback) with shorter runs.
    pub(crate) fn family_of<Op: CudaOp>(arch: u32, tuning: Tuning, family: Family) -> Result<ModuleSource> {
        items_have_bytes::<Op>()?;
        let (size, align) = (std::mem::size_of::<Op::Item>(), std::mem::align_of::<Op::Item>());
        let build = |short_runs: bool| -> Result<ModuleSource> {
            let (single_pass, blelloch) = Self::policies::<Op>(arch, tuning, family, None, short_runs)?;
            Ok(Self::assemble(&Op::cuda_source(), (size, align), single_pass, blelloch, family, None, tuning))
        };
        let mut source = build(false)?;
        // (A shape a Tuning sets is the shape that runs: no fallback.)
        if matches!(family, Family::Flags | Family::Offsets) && !tuning.overrides_launch_shape() {
            let short = build(true)?;
            if short.single_pass != source.single_pass {
                source.fallback = Some(Box::new(short));
            }
        }
        Ok(source)
    }

    /// The module of `Op` scanned through the maps `M` from the input arrays
    /// `arrays` (their CUDA types, one to three; `sizes`, their elements'
    /// bytes): the single-pass kernel alone ([`Family::Mapped`]), or its
    /// kernels of rows ([`Family::MappedRows`], [`Family::MappedTileRows`]).
    pub(crate) fn mapped_of<Op: CudaOp, M: CudaMaps<Op>>(
        arch: u32,
        tuning: Tuning,
        arrays: &[String],
        sizes: &[usize],
        family: Family,
    ) -> Result<ModuleSource> {
        items_have_bytes::<Op>()?;
        let maps = MapsShape::of::<Op, M>(sizes);
        let (single_pass, blelloch) = Self::policies::<Op>(arch, tuning, family, Some(maps), false)?;
        let (size, align) = (std::mem::size_of::<Op::Item>(), std::mem::align_of::<Op::Item>());
        let maps = MapsSource { source: M::cuda_source(), arrays: arrays.to_vec() };
        Ok(Self::assemble(&Op::cuda_source(), (size, align), single_pass, blelloch, family, Some(&maps), tuning))
    }

    /// The single-pass policy of `family`'s module of `Op` through the maps
    /// `M` from arrays of elements of `sizes` bytes, without building the
    /// module (`None`: no single-pass kernels).
    pub(crate) fn mapped_policy<Op: CudaOp, M: CudaMaps<Op>>(
        arch: u32,
        tuning: Tuning,
        sizes: &[usize],
        family: Family,
    ) -> Result<Option<SinglePassPolicy>> {
        let (single_pass, _) = Self::policies::<Op>(arch, tuning, family, Some(MapsShape::of::<Op, M>(sizes)), false)?;
        Ok(single_pass.ok())
    }

    /// The single-pass policy (or why there is none) and the Blelloch
    /// policy of `Op`'s kernels of `family`; `maps` is what fused maps read
    /// and write per position ([`Family::Mapped`]: their runs, and whether
    /// their slots hold narrow elements); `short_runs` asks the segment kernels
    /// (flags, offsets) for [`SinglePassPolicy::for_segments`]' runs instead
    /// of [`SinglePassPolicy::for_segment_heads`]' (which spilled).
    fn policies<Op: CudaOp>(
        arch: u32,
        tuning: Tuning,
        family: Family,
        maps: Option<MapsShape>,
        short_runs: bool,
    ) -> Result<(std::result::Result<SinglePassPolicy, String>, BlellochPolicy)> {
        let size = std::mem::size_of::<Op::Item>();
        let blelloch = BlellochPolicy::for_item_size(size)?;
        // Plain scans (not fused maps) of 4-byte items take the deterministic look-back unless
        // told otherwise: on the H200 it is also their fastest shape (f32 add
        // at 2^28: 0.92 of copy against 0.84, SinglePassPolicy::deterministic_for).
        // A Tuning that sets a shape gets that shape on `for_item`'s, as it did
        // before this default.
        // Rows take it too: their kernel for rows of whole tiles is the plain
        // one, and its fixed groups look back no further than a row's start.
        let default_deterministic =
            size == 4 && matches!(family, Family::Whole | Family::Rows) && !tuning.overrides_shape();
        let deterministic = tuning.deterministic_setting().unwrap_or(default_deterministic);
        // Fused maps: narrow slots where the maps allow them (before the
        // shape is checked: they take less shared memory).
        let finish = |mut p: SinglePassPolicy| -> Result<SinglePassPolicy> {
            // (Rows through maps as segments keep item slots: their
            // segmented kernel has neither narrow slots nor grouped runs.
            // Rows of whole tiles take the plain path, and its slots.)
            let whole_maps = maps.filter(|_| matches!(family, Family::Mapped | Family::MappedTileRows));
            if family == Family::MappedRows {
                p.narrow_slots = 0; // (whatever a shape function set)
            }
            if let Some(m) = whole_maps.filter(|_| tuning.narrow_slots_setting() != Some(false)) {
                p.narrow_slots = p.narrow_slots_for(m.arrays, m.input_bytes, m.output_bytes, size);
            }
            // Grouped runs where the maps allow them and no other slot
            // layout is taken (the kernel checks the first at compile time).
            p.grouped_runs = tuning.grouped_runs_setting() != Some(false)
                && p.narrow_slots == 0
                && !p.staged_maps
                && whole_maps.is_some_and(|m| p.grouped_runs_for(m.widest, m.pow2, m.output_bytes, size));
            p.validate(size, arch)
        };
        let single_pass = match SinglePassPolicy::for_item(size, arch) {
            Ok(p) if family == Family::Rows => {
                let p = if deterministic { p.deterministic_for(size, arch) } else { p };
                Ok(finish(tuning.apply(p.for_segments()))?)
            }
            // Segments by flags or offsets: long runs, unless they spilled.
            Ok(p) if family.is_segmented() && short_runs => Ok(finish(tuning.apply(p.for_segments()))?),
            Ok(p) if family.is_segmented() => Ok(finish(tuning.apply(p.for_segment_heads()))?),
            // Rows through maps: the fused runs, at most 16 items
            // (SinglePassPolicy::for_segments; bf16 sums in item slots
            // spilled 4-8 bytes at 32), item slots.
            Ok(p) if family == Family::MappedRows && !tuning.sets_run_shape() => {
                Ok(finish(tuning.apply(p.for_maps(maps.map_or(size, |m| m.input_bytes), size).for_segments()))?)
            }
            Ok(p) if matches!(family, Family::Mapped | Family::MappedTileRows) && !tuning.sets_run_shape() => {
                let p = p.for_maps(maps.map_or(size, |m| m.input_bytes), size);
                let mapped = finish(tuning.apply(p))?;
                // bf16 or f16 sums in narrow slots: three stages and fixed
                // groups (SinglePassPolicy::narrow_sums_for), unless a Tuning
                // sets a shape or the free look-back.
                if mapped.narrow_slots == 2 && size == 4 && !tuning.overrides_shape() {
                    Ok(finish(tuning.apply(p.narrow_sums_for(arch)))?)
                } else if mapped.grouped_runs && !tuning.overrides_shape() {
                    // Grouped runs (the f32 recurrence from a[] and b[]):
                    // three stages and fixed groups
                    // (SinglePassPolicy::grouped_maps_for), unless a Tuning
                    // sets a shape or the free look-back.
                    Ok(finish(tuning.apply(p.grouped_maps_for(size, arch)))?)
                } else {
                    Ok(mapped)
                }
            }
            Ok(p) if deterministic => Ok(finish(tuning.apply(p.deterministic_for(size, arch)))?),
            Ok(p) => Ok(finish(tuning.apply(p))?),
            // The deterministic mode is no shape: without single-pass kernels
            // it falls back to Blelloch like the default.
            Err(why) if tuning.overrides_launch_shape() => return Err(scan_core::Error::BadTuning(why)),
            Err(why) => Err(why),
        };
        Ok((single_pass, blelloch))
    }

    /// The stages this module instantiates.
    pub(crate) fn stages(&self) -> Vec<Stage> {
        self.family.stages(self.single_pass.is_ok())
    }

    fn assemble(
        op: &CudaSource,
        (size, align): (usize, usize),
        single_pass: std::result::Result<SinglePassPolicy, String>,
        blelloch: BlellochPolicy,
        family: Family,
        maps: Option<&MapsSource>,
        tuning: Tuning,
    ) -> ModuleSource {
        let kernels = family.stages(single_pass.is_ok());
        let name = &op.name;
        let mut code = format!("// ---- operator `{name}` ----\n{}\n\n", op.code);
        if let Some(m) = maps {
            let _ = write!(code, "// ---- maps `{}` ----\n{}\n\n", m.source.name, m.source.code);
        }
        code.push_str(&kernel_files(&TEMPLATES));
        let _ = write!(
            code,
            "// ---- instantiations ----\n\
             // The Rust item and the CUDA item must have one layout: bytes move unchanged.\n\
             static_assert(sizeof({name}::Item) == {size}, \"the CUDA item of `{name}` is not {size} bytes like the Rust item\");\n\
             static_assert(alignof({name}::Item) <= {align}, \"the CUDA item of `{name}` is more aligned than the Rust item\");\n"
        );
        let item = format!("{name}::Item");
        // Blelloch: at least 1024 resident threads per SM caps registers at 64,
        // so that enough loads are in flight to keep memory busy.
        let (threads, k) = (blelloch.threads, blelloch.items_per_run);
        let min_blocks = (1024 / threads).max(1);
        for (direction, kind) in variants().filter(|_| kernels.contains(&Stage::BlellochScanTiles)) {
            let reverse = direction == scan_core::Direction::Reverse;
            let inclusive = kind == Kind::Inclusive;
            let scan = Stage::BlellochScanTiles.kernel_name(direction, kind);
            let _ = write!(
                code,
                "extern \"C\" __global__ void __launch_bounds__({threads}, {min_blocks}) {scan}(\n\
                 \x20   const {item}* src, {item}* dst, unsigned long long len, {item}* totals) {{\n\
                 \x20 scan::scan_tile<{name}, {threads}, {k}, {reverse}, {inclusive}>(src, dst, len, totals);\n\
                 }}\n"
            );
            if inclusive {
                let add = Stage::BlellochAddPrefixes.kernel_name(direction, kind);
                let _ = write!(
                    code,
                    "extern \"C\" __global__ void __launch_bounds__({threads}, {min_blocks}) {add}(\n\
                     \x20   {item}* data, unsigned long long len, const {item}* prefixes) {{\n\
                     \x20 scan::add_prefixes<{name}, {threads}, {k}, {reverse}>(data, len, prefixes);\n\
                     }}\n"
                );
            }
        }
        if kernels.contains(&Stage::SegmentFlags) {
            let _ = write!(
                code,
                "extern \"C\" __global__ void {}(const unsigned long long* starts, unsigned long long count,\n\
                 \x20   unsigned long long len, unsigned char* flags, unsigned long long* check) {{\n\
                 \x20 scan::segment_flags(starts, count, len, flags, check);\n\
                 }}\n",
                Stage::SegmentFlags.kernel_name(scan_core::Direction::Forward, Kind::Inclusive)
            );
        }
        if kernels.contains(&Stage::SegmentBits) {
            let _ = write!(
                code,
                "extern \"C\" __global__ void {}(const unsigned long long* starts, unsigned long long count,\n\
                 \x20   unsigned long long len, unsigned* bits, unsigned long long* check) {{\n\
                 \x20 scan::segment_bits(starts, count, len, bits, check);\n\
                 }}\n",
                Stage::SegmentBits.kernel_name(scan_core::Direction::Forward, Kind::Inclusive)
            );
        }
        if let Ok(p) = single_pass {
            let (threads, items, min_blocks) = (p.threads, p.items_per_thread, p.blocks_per_sm);
            let block_threads = p.block_threads();
            let stages = p.stages;
            let status = match p.status {
                StatusLayout::Packed => format!("scan::PackedStatus<{item}>"),
                StatusLayout::Split => format!("scan::SplitStatus<{item}>"),
                StatusLayout::Tagged => format!("scan::TaggedStatus<{item}>"),
            };
            for stage in Stage::SINGLE_PASS.into_iter().filter(|s| kernels.contains(s)) {
                // Every single-pass kernel takes the same arguments; each
                // reads the segment description it needs (heads.cuh).
                // Rows of whole tiles take the plain code path, and the
                // deterministic look-back when the policy asks for it.
                let segmented = matches!(
                    stage,
                    Stage::SinglePassRows
                        | Stage::SinglePassFlags
                        | Stage::SinglePassBits
                        | Stage::SinglePassMappedRows
                );
                // Where items come from and go (kernels/maps.cuh). The mapped
                // kernels' input arrays 2 and 3 take the arguments that
                // describe rows elsewhere, and their rows' length the flags'
                // (SinglePass::launch).
                let mapped_rows = matches!(stage, Stage::SinglePassMappedRows | Stage::SinglePassMappedTileRows);
                let mapped = maps.filter(|_| stage == Stage::SinglePassMapped || mapped_rows);
                let last_param = if mapped_rows { "unsigned long long row_len" } else { "const unsigned char* flags" };
                // Segmented kernels rescan in shared memory too
                // (exchange.cuh, scan_run_in_place_heads): with their runs
                // rescanned in registers, f32 rows of 32 items spilled under
                // early loads (0.65 of copy on the H200, 0.77 without).
                // Mapped kernels fetch their input arrays' vectors
                // (maps.cuh, LiftedIn::fetch) where plain ones fetch the
                // items'; staged maps load through the slice, after the store.
                // Rows through maps as segments load after the store: the
                // heads beside the held inputs spilled the f32 recurrence's
                // reverse kernel 12 bytes (NVRTC, sm_90).
                let early =
                    p.early_loads && !(mapped.is_some() && p.staged_maps) && stage != Stage::SinglePassMappedRows;
                let deterministic = p.deterministic && !segmented;
                // A deterministic policy's `lookback` sizes its fixed groups
                // (32 x lookback tiles); the free look-back of the segmented
                // kernels in the same module (rows that are not whole tiles)
                // reads one status per lane, the window measured fastest,
                // unless a Tuning sets it.
                let lookback =
                    if p.deterministic && !deterministic { tuning.lookback_setting().unwrap_or(1) } else { p.lookback };
                let (in_type, out_type, row_params, src, dst) = match mapped {
                    Some(m) => {
                        let a = |k: usize| m.arrays.get(k).unwrap_or(&m.arrays[0]).as_str();
                        let maps = &m.source.name;
                        (
                            a(0).to_string(),
                            format!("{maps}::Output"),
                            format!("const {}* in1, const {}* in2", a(1), a(2)),
                            format!(
                                "scan::LiftedIn<{maps}, {}, {}, {}, {}, {}, {}, {}>{{src, in1, in2}}",
                                m.arrays.len(),
                                p.staged_maps,
                                a(0),
                                a(1),
                                a(2),
                                p.narrow_slots > 0,
                                p.grouped_runs
                            ),
                            format!("scan::ProjectedOut<{maps}>{{dst}}"),
                        )
                    }
                    None => (
                        item.clone(),
                        item.clone(),
                        "unsigned long long row_len, unsigned long long stride".to_string(),
                        format!("scan::ItemsIn<{item}>{{src}}"),
                        format!("scan::ItemsOut<{item}>{{dst}}"),
                    ),
                };
                let heads = match stage {
                    Stage::SinglePassRows => "scan::RowHeads{len, row_len, stride}",
                    Stage::SinglePassTileRows | Stage::SinglePassMappedTileRows => "scan::TileRows{len, row_len}",
                    Stage::SinglePassMappedRows => "scan::RowHeads{len, row_len, row_len}",
                    Stage::SinglePassFlags => "scan::FlagHeads{len, flags}",
                    // The same pointer argument: the bits are 64-bit words.
                    Stage::SinglePassBits => "scan::BitHeads{len, (const unsigned long long*)flags}",
                    _ => "scan::NoHeads{len}",
                };
                for (direction, kind) in variants() {
                    let reverse = direction == scan_core::Direction::Reverse;
                    let inclusive = kind == Kind::Inclusive;
                    let kernel = stage.kernel_name(direction, kind);
                    let (bounds, body) = if stage == Stage::SinglePassRowTiles {
                        // A block per row, the scanning threads alone, and
                        // blocks enough per SM to keep loads in flight
                        // (row_tiles.cuh): at least 1024 threads (at most
                        // 64 registers each, like Blelloch's) for items of
                        // up to 8 bytes whose run fits in half of them (f32:
                        // 63 registers, f32 pairs 64, no spill); longer runs
                        // and wider items keep the policy's budget (16 f64
                        // pairs spilled 450 bytes under 64, two 64-byte
                        // items 140 to 310).
                        let row_blocks = if size <= 8 && items as usize * size <= 128 {
                            (1024 / threads).max(min_blocks)
                        } else {
                            min_blocks
                        };
                        (
                            format!("{threads}, {row_blocks}"),
                            format!(
                                "extern __shared__ __align__(16) unsigned char slices[];\n\
                                 \x20 scan::row_tiles<{name}, {threads}, {items}, {reverse}, {inclusive}>(\n\
                                 \x20     src, dst, len / row_len, row_len, stride, slices);"
                            ),
                        )
                    } else {
                        (
                            format!("{block_threads}, {min_blocks}"),
                            format!(
                                "extern __shared__ __align__(16) unsigned char slots[];\n\
                                 \x20 scan::single_pass<{name}, {threads}, {items}, {lookback}, {stages}, {early}, {deterministic}, {reverse}, {inclusive}>(\n\
                                 \x20     {src}, {dst}, len, carry_in, carry_out, counter, {status}::make(words, aggregates, prefixes), epoch, chaos,\n\
                                 \x20     {heads}, slots);"
                            ),
                        )
                    };
                    let _ = write!(
                        code,
                        "extern \"C\" __global__ void __launch_bounds__({bounds}) {kernel}(\n\
                         \x20   const {in_type}* src, {out_type}* dst, unsigned long long len, const {item}* carry_in,\n\
                         \x20   {item}* carry_out, unsigned long long* counter,\n\
                         \x20   void* words, void* aggregates, void* prefixes, unsigned epoch, unsigned chaos,\n\
                         \x20   {row_params}, {last_param}) {{\n\
                         \x20 {body}\n\
                         }}\n"
                    );
                }
            }
        }
        ModuleSource { op_name: name.clone(), code, item_size: size, single_pass, blelloch, family, fallback: None }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use scan_core::ops::Add;

    #[test]
    fn rows_through_maps_keep_item_slots_and_short_runs() {
        let policy = |maps: MapsShape, tuning| {
            ModuleSource::policies::<Add<f32>>(90, tuning, Family::MappedRows, Some(maps), false).unwrap().0.unwrap()
        };
        let plain = SinglePassPolicy::for_item(4, 90).unwrap();
        for maps in [MapsShape::one(4), MapsShape::one(2)] {
            let p = policy(maps, Tuning::default());
            assert_eq!(p, plain.for_maps(maps.input_bytes, 4).for_segments(), "{maps:?}");
            assert!(p.narrow_slots == 0 && !p.grouped_runs && p.items_per_thread <= 16, "{maps:?}: {p:?}");
        }
        assert!(policy(MapsShape::one(4), Tuning::default().deterministic(true)).deterministic);
        assert_eq!(Family::MappedRows.stages(true), [Stage::SinglePassMappedRows]);
        // Rows of whole tiles: the plain mapped kernel's policy (grouped
        // runs, fixed groups), in a module of their own.
        assert_eq!(Family::MappedTileRows.stages(true), [Stage::SinglePassMappedTileRows]);
        for maps in [MapsShape::one(4), MapsShape::one(2)] {
            let of = |family| {
                ModuleSource::policies::<Add<f32>>(90, Tuning::default(), family, Some(maps), false).unwrap().0.unwrap()
            };
            assert_eq!(of(Family::MappedTileRows), of(Family::Mapped), "{maps:?}");
        }
    }

    #[test]
    fn fused_map_kernels_take_their_own_shape_unless_tuned() {
        // One array in, of `input_bytes`, outputs as wide.
        let one = MapsShape::one;
        let policy = |family, maps: Option<MapsShape>, tuning| {
            ModuleSource::policies::<Add<f32>>(90, tuning, family, maps, false).unwrap().0.unwrap()
        };
        let plain = SinglePassPolicy::for_item(4, 90).unwrap();
        // f32 in: shorter runs (the early loads hold them); bf16 in: the plain shape.
        let maps = policy(Family::Mapped, Some(one(4)), Tuning::default());
        let grouped = SinglePassPolicy { grouped_runs: true, ..plain.for_maps(4, 4).grouped_maps_for(4, 90) };
        assert_eq!(maps, grouped, "f32 in and out: grouped runs, three stages, fixed groups");
        assert_eq!((maps.stages, maps.deterministic, maps.lookback), (3, true, 4));
        let free = policy(Family::Mapped, Some(one(4)), Tuning::default().deterministic(false));
        assert_eq!(free, SinglePassPolicy { grouped_runs: true, ..plain.for_maps(4, 4) }, "told: the free look-back");
        assert!(!plain.grouped_runs, "grouped runs are for fused maps");
        let ungrouped = policy(Family::Mapped, Some(one(4)), Tuning::default().grouped_runs(false));
        assert_eq!(ungrouped, plain.for_maps(4, 4), "item slots when told");
        let staged = policy(Family::Mapped, Some(one(4)), Tuning::default().staged_maps(true));
        assert!(!staged.grouped_runs, "staged maps go through the item slot");
        assert_ne!(maps, plain, "4-byte inputs into 4-byte items: shorter runs for fused maps");
        // bf16 in and out: the plain runs, in narrow slots (unless told not
        // to), three stages and fixed groups.
        let bf16 = policy(Family::Mapped, Some(one(2)), Tuning::default());
        let narrow = SinglePassPolicy { narrow_slots: 2, ..plain.narrow_sums_for(90) };
        assert_eq!(bf16, narrow, "2-byte inputs: the plain runs, three stages, deterministic");
        assert_eq!((bf16.items_per_thread, bf16.stages, bf16.deterministic), (plain.items_per_thread, 3, true));
        assert!(bf16.dynamic_shared_bytes(4) < plain.dynamic_shared_bytes(4));
        // The free look-back when told, on the plain two stages.
        let free = policy(Family::Mapped, Some(one(2)), Tuning::default().deterministic(false));
        assert_eq!(free, SinglePassPolicy { narrow_slots: 2, ..plain }, "told: the free look-back");
        let items = policy(Family::Mapped, Some(one(2)), Tuning::default().narrow_slots(false));
        assert_eq!(items, plain, "item slots when told (32 f32 sums: too many registers for grouped runs)");
        // Runs that are not whole 16-byte groups of bf16: item slots.
        let odd = policy(Family::Mapped, Some(one(2)), Tuning::default().items_per_thread(12));
        assert_eq!((odd.items_per_thread, odd.narrow_slots), (12, 0));
        // A maps-only knob is no shape override: plain scans keep their defaults.
        assert!(!Tuning::default().narrow_slots(false).overrides_shape());
        assert!(!Tuning::default().staged_maps(true).overrides_shape());
        assert!(!Tuning::default().grouped_runs(false).overrides_shape());
        let widen = MapsShape { output_bytes: 4, ..MapsShape::one(2) };
        assert_eq!(policy(Family::Mapped, Some(widen), Tuning::default()).narrow_slots, 0, "bf16 in, f32 out");
        let unknown = policy(Family::Mapped, None, Tuning::default());
        assert_eq!(unknown, plain.for_maps(4, 4), "unknown inputs: shorter runs, item slots");
        // Runs set by a Tuning are the runs that run, with the stages as they were.
        let tuned = Tuning::default().items_per_thread(32);
        let maps = policy(Family::Mapped, Some(one(4)), tuned);
        assert_eq!((maps.items_per_thread, maps.stages), (32, plain.stages));
    }

    #[test]
    fn plain_scans_of_four_byte_items_are_deterministic_unless_told_otherwise() {
        let whole =
            |tuning| ModuleSource::policies::<Add<f32>>(90, tuning, Family::Whole, None, false).unwrap().0.unwrap();
        let base = SinglePassPolicy::for_item(4, 90).unwrap();
        assert_eq!(whole(Tuning::default()), base.deterministic_for(4, 90));
        assert_eq!(whole(Tuning::default().deterministic(true)), base.deterministic_for(4, 90));
        assert_eq!(whole(Tuning::default().deterministic(false)), base);
        let wide =
            ModuleSource::policies::<Add<f64>>(90, Tuning::default(), Family::Whole, None, false).unwrap().0.unwrap();
        assert!(!wide.deterministic, "8-byte items: the free look-back");
        let rows =
            |tuning| ModuleSource::policies::<Add<f32>>(90, tuning, Family::Rows, None, false).unwrap().0.unwrap();
        assert_eq!(
            rows(Tuning::default()),
            base.deterministic_for(4, 90).for_segments(),
            "rows of whole tiles: fixed groups"
        );
        assert!(!rows(Tuning::default().deterministic(false)).deterministic);
        let flags =
            ModuleSource::policies::<Add<f32>>(90, Tuning::default(), Family::Flags, None, false).unwrap().0.unwrap();
        assert!(!flags.deterministic, "segments by flags or offsets: not covered");
        // A shape set by a Tuning applies to for_item's policy, free look-back.
        let tuned = whole(Tuning::default().items_per_thread(32).lookback(1));
        assert_eq!(tuned, Tuning::default().items_per_thread(32).lookback(1).apply(base));
        assert!(!tuned.deterministic);
        assert_eq!(whole(Tuning::default()), SinglePassPolicy::plain_default(4, 90).unwrap());
        // The mode on an item or GPU without single-pass kernels: Blelloch, no error.
        for mode in [true, false] {
            let old_gpu = ModuleSource::policies::<Add<f32>>(
                61,
                Tuning::default().deterministic(mode),
                Family::Whole,
                None,
                false,
            );
            assert!(old_gpu.unwrap().0.is_err(), "sm_61, deterministic({mode}): the Blelloch fallback");
        }
    }

    /// The instantiation of kernel `name` in `code`: its template arguments.
    fn instantiation<'a>(code: &'a str, name: &str) -> &'a str {
        let at = code.find(&format!(" {name}(")).unwrap_or_else(|| panic!("no {name}"));
        let args = code[at..].find("scan::single_pass<").unwrap() + at;
        &code[args..args + code[args..].find(">(").unwrap()]
    }

    #[test]
    fn rows_modules_take_the_fixed_groups_for_whole_tiles_and_one_status_per_lane_elsewhere() {
        let code = |tuning| ModuleSource::family_of::<Add<f32>>(90, tuning, Family::Rows).unwrap().code;
        // (threads, items, look-back statuses per lane, stages, early loads, deterministic, reverse, inclusive)
        let default = code(Tuning::default());
        let tile_rows = instantiation(&default, "single_pass_tile_rows_forward_inclusive");
        assert!(tile_rows.ends_with(", 256, 16, 4, 3, true, true, false, true"), "{tile_rows}");
        let rows = instantiation(&default, "single_pass_rows_forward_inclusive");
        assert!(rows.ends_with(", 256, 16, 1, 3, true, false, false, true"), "{rows}");
        // A look-back width a Tuning sets is the width both run.
        let tuned = code(Tuning::default().deterministic(true).lookback(2));
        let rows = instantiation(&tuned, "single_pass_rows_forward_inclusive");
        assert!(rows.ends_with(", 2, 3, true, false, false, true"), "{rows}");
        let tile_rows = instantiation(&tuned, "single_pass_tile_rows_forward_inclusive");
        assert!(tile_rows.ends_with(", 2, 3, true, true, false, true"), "{tile_rows}");
    }

    #[test]
    fn segment_kernels_take_long_runs_with_a_fallback_where_the_items_have_them() {
        let base = SinglePassPolicy::for_item(4, 90).unwrap();
        for family in [Family::Flags, Family::Offsets] {
            let source = ModuleSource::family_of::<Add<f32>>(90, Tuning::default(), family).unwrap();
            assert_eq!(source.single_pass, Ok(base.for_segment_heads()), "{family:?}");
            let fallback = source.fallback.as_ref().expect("4-byte items: a fallback with shorter runs");
            assert_eq!(fallback.single_pass, Ok(base.for_segments()), "{family:?}");
            assert!(fallback.fallback.is_none());
            // Runs a Tuning sets are the runs that run: no fallback then.
            let tuned =
                ModuleSource::family_of::<Add<f32>>(90, Tuning::default().items_per_thread(32), family).unwrap();
            assert!(tuned.fallback.is_none(), "{family:?}: a tuned shape has no fallback");
        }
        // 8-byte items have 16-item runs already; rows keep theirs.
        let pairs = ModuleSource::family_of::<Add<f64>>(90, Tuning::default(), Family::Offsets).unwrap();
        assert!(pairs.fallback.is_none());
        assert!(ModuleSource::family_of::<Add<f32>>(90, Tuning::default(), Family::Rows).unwrap().fallback.is_none());
    }

    #[test]
    fn fused_maps_take_fixed_groups_by_default_where_three_stages_fit_the_sm() {
        // What README's determinism table says of fused maps on each GPU:
        // the f32 recurrence from a[] and b[] (grouped runs of 8-byte items,
        // two blocks per SM where plain scans fit two) and bf16 sums (narrow
        // slots) take fixed groups only where three stages fit, else the
        // free look-back.
        use scan_core::maps::{bf16, Recurrence, WidenNarrow};
        use scan_core::ops::LinearRecurrence;
        let deterministic = |arch, tuning| {
            let recurrence =
                ModuleSource::mapped_policy::<LinearRecurrence<f32>, Recurrence>(arch, tuning, &[4, 4], Family::Mapped);
            let bf16 = ModuleSource::mapped_policy::<Add<f32>, WidenNarrow<bf16>>(arch, tuning, &[2], Family::Mapped);
            (recurrence.unwrap().unwrap().deterministic, bf16.unwrap().unwrap().deterministic)
        };
        let by_default: Vec<_> = [70, 75, 80, 86, 87, 89, 90, 100, 120]
            .into_iter()
            .map(|arch| (arch, deterministic(arch, Tuning::default())))
            .collect();
        assert_eq!(
            by_default,
            [
                (70, (false, true)),
                (75, (false, true)),
                (80, (false, true)),
                (86, (true, true)),
                (87, (false, true)),
                (89, (true, true)),
                (90, (true, true)),
                (100, (true, true)),
                (120, (true, true)),
            ]
        );
        // The mode, when set, holds on every GPU; tunings of the fused maps'
        // slots leave the fixed-group shapes, and with them the default.
        for arch in [70, 75, 80, 86, 90] {
            assert_eq!(deterministic(arch, Tuning::default().deterministic(true)), (true, true), "sm_{arch}");
        }
        assert!(!deterministic(90, Tuning::default().grouped_runs(false)).0);
        assert!(!deterministic(90, Tuning::default().staged_maps(true)).0);
        assert!(!deterministic(90, Tuning::default().narrow_slots(false)).1);
    }
}
