//! One operator's loaded module: its kernel table, the policies it was built
//! for, and the single-pass tile status it reuses across scans.

use std::sync::{Arc, Mutex, MutexGuard};

use cudarc::driver::sys::{CUdevice_attribute, CUfunction_attribute};
use cudarc::driver::CudaContext;
use cudarc::nvrtc::Ptx;
use scan_core::{Error, Result};

use crate::buffer::driver_error;
use crate::kernels::{variants, KernelTable, Stage};
use crate::policy::{Algorithm, BlellochPolicy, SinglePassPolicy};
use crate::single_pass::TileState;
use crate::source::ModuleSource;

pub(crate) struct Module {
    pub(crate) kernels: KernelTable,
    pub(crate) item_size: usize,
    /// The single-pass shape, or why this operator falls back to Blelloch.
    pub(crate) single_pass: std::result::Result<SinglePassPolicy, String>,
    pub(crate) blelloch: BlellochPolicy,
    pub(crate) blelloch_shared_bytes: u32,
    /// The persistent grid of each single-pass stage the module has: as
    /// many blocks as the whole GPU holds at once (the segmented kernels may
    /// hold fewer than the plain one).
    pub(crate) single_pass_grid: Vec<(Stage, u32)>,
    pub(crate) tile_state: Mutex<TileState>,
}

impl Module {
    /// Loads `cubin`, compiled from `source`, into `ctx`.
    pub(crate) fn load(ctx: &Arc<CudaContext>, source: &ModuleSource, cubin: Vec<u8>) -> Result<Module> {
        let module = ctx.load_module(Ptx::from_binary(cubin)).map_err(|e| driver_error("module load", e))?;
        let shared = source.blelloch.shared_bytes(source.item_size);
        let kernels = KernelTable::load(module, &source.stages())?;
        let mut single_pass_grid = Vec::new();
        if let Ok(policy) = &source.single_pass {
            for stage in source.stages().into_iter().filter(|s| Stage::SINGLE_PASS.contains(s)) {
                single_pass_grid.push((stage, persistent_grid(ctx, &kernels, stage, policy, source.item_size)?));
            }
        }
        Ok(Module {
            kernels,
            single_pass_grid,
            item_size: source.item_size,
            single_pass: source.single_pass.clone(),
            blelloch: source.blelloch,
            blelloch_shared_bytes: u32::try_from(shared)
                .map_err(|_| Error::TooLarge { what: "shared memory".into() })?,
            tile_state: Mutex::new(TileState::default()),
        })
    }
}

/// Lets the single-pass kernels of `stage` use their slots' dynamic shared
/// memory (past the 48 KiB default, an opt-in) and returns how many of their
/// blocks the GPU holds at once. Rows of one tile (kernels/row_tiles.cuh)
/// launch blocks of the scanning threads alone with one tile's slices; the
/// count is theirs then, though their launches take a block per row.
fn persistent_grid(
    ctx: &Arc<CudaContext>,
    kernels: &KernelTable,
    stage: Stage,
    policy: &SinglePassPolicy,
    item_size: usize,
) -> Result<u32> {
    let (threads, bytes) = crate::single_pass::block_shape(stage, *policy, item_size);
    let dynamic = i32::try_from(bytes).map_err(|_| Error::TooLarge { what: "shared memory".into() })?;
    let sms = ctx
        .attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
        .map_err(|e| driver_error("SM count query", e))?;
    let mut per_sm = u32::MAX;
    for (direction, kind) in variants() {
        let spec = scan_core::ScanSpec { direction, kind };
        let f = kernels
            .get(stage, spec)
            .ok_or_else(|| Error::Other("internal: the module has no single-pass kernels".into()))?;
        f.set_attribute(CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, dynamic)
            .map_err(|e| driver_error(&format!("opting in to {bytes} bytes of shared memory"), e))?;
        let blocks = f
            .occupancy_max_active_blocks_per_multiprocessor(threads, bytes, None)
            .map_err(|e| driver_error("occupancy query", e))?;
        per_sm = per_sm.min(blocks);
    }
    if per_sm == 0 {
        return Err(Error::BadTuning(format!(
            "no block of the single-pass kernels fits an SM ({threads} threads, {bytes} bytes of shared memory)"
        )));
    }
    Ok(per_sm * sms.max(1) as u32)
}

impl Module {
    /// Whether any single-pass kernel of the module uses local memory per
    /// thread (a stack frame: registers spilled), as the driver reports it.
    /// Any stack frame counts, also one an operator needs whatever the run
    /// length (a call that is not inlined): such an operator takes the
    /// shorter runs, which cost it a second module build (counted as such
    /// in `CompileStats`) and no correctness.
    pub(crate) fn spills(&self) -> Result<bool> {
        for (stage, _) in &self.single_pass_grid {
            for (direction, kind) in variants() {
                let spec = scan_core::ScanSpec { direction, kind };
                if let Some(f) = self.kernels.get(*stage, spec) {
                    let bytes = f.local_size_bytes().map_err(|e| driver_error("local memory query", e))?;
                    if bytes > 0 {
                        return Ok(true);
                    }
                }
            }
        }
        Ok(false)
    }

    /// The persistent grid of single-pass `stage` (0 if the module lacks it).
    pub(crate) fn grid(&self, stage: Stage) -> u32 {
        self.single_pass_grid.iter().find(|(s, _)| *s == stage).map_or(0, |&(_, g)| g)
    }

    /// What a scan asked to run with `algorithm` runs with: the single-pass
    /// policy, or `Err(why)` when it runs Blelloch (asked for, or the
    /// fallback with its reason).
    pub(crate) fn plan(&self, algorithm: Algorithm) -> std::result::Result<SinglePassPolicy, Option<&str>> {
        match (algorithm, &self.single_pass) {
            (Algorithm::SinglePass, Ok(policy)) => Ok(*policy),
            (Algorithm::SinglePass, Err(why)) => Err(Some(why)),
            (Algorithm::Blelloch, _) => Err(None),
        }
    }
}

/// Locks `m`; a panic while holding these locks leaves plain data behind, so
/// keep going.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}
