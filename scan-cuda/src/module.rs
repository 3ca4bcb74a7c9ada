//! One operator's loaded module: its kernel table, the policies it was built
//! for, and the single-pass tile status it reuses across scans.

use std::sync::{Arc, Mutex, MutexGuard};

use cudarc::driver::CudaContext;
use cudarc::nvrtc::Ptx;
use scan_core::{Error, Result};

use crate::buffer::driver_error;
use crate::kernels::KernelTable;
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
    pub(crate) tile_state: Mutex<TileState>,
}

impl Module {
    /// Loads `cubin`, compiled from `source`, into `ctx`.
    pub(crate) fn load(ctx: &Arc<CudaContext>, source: &ModuleSource, cubin: Vec<u8>) -> Result<Module> {
        let module = ctx.load_module(Ptx::from_binary(cubin)).map_err(|e| driver_error("module load", e))?;
        let shared = source.blelloch.shared_bytes(source.item_size);
        Ok(Module {
            kernels: KernelTable::load(module, &source.stages())?,
            item_size: source.item_size,
            single_pass: source.single_pass.clone(),
            blelloch: source.blelloch,
            blelloch_shared_bytes: u32::try_from(shared)
                .map_err(|_| Error::TooLarge { what: "shared memory".into() })?,
            tile_state: Mutex::new(TileState::default()),
        })
    }
}

impl Module {
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
