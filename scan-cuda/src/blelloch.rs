//! The GPU's `BlockBackend`: the same multi-block driver as the CPU
//! (`scan_core::blelloch::Driver`), with tiles scanned and prefixes added by
//! the Blelloch kernels of the operator's module.

use std::sync::Arc;

use cudarc::driver::{CudaStream, LaunchConfig, PushKernelArg};
use scan_core::blelloch::BlockBackend;
use scan_core::{Error, Result, ScanOp, ScanSpec};

use crate::buffer::driver_error;
use crate::kernels::Stage;
use crate::module::Module;
use crate::span::{Scratch, Span};

/// Tiles scanned by kernels on one stream.
pub(crate) struct GpuBlocks<'a> {
    pub(crate) stream: &'a Arc<CudaStream>,
    pub(crate) module: &'a Module,
}

/// A grid of `blocks` blocks, or [`Error::TooLarge`] past CUDA's limit.
pub(crate) fn grid(blocks: usize) -> Result<u32> {
    u32::try_from(blocks)
        .ok()
        .filter(|&g| g <= i32::MAX as u32)
        .ok_or_else(|| Error::TooLarge { what: format!("{blocks} blocks exceed the CUDA grid limit; scan in pieces") })
}

impl<Op: ScanOp> BlockBackend<Op> for GpuBlocks<'_> {
    type Buf = Span;
    type Scratch = Scratch;

    fn block_len(&self) -> usize {
        self.module.blelloch.tile()
    }

    fn buf_len(&self, buf: &Span) -> usize {
        buf.len
    }

    fn alloc(&self, len: usize) -> Result<Scratch> {
        Scratch::alloc(self.stream, len, self.module.item_size)
    }

    fn scan_blocks(
        &self,
        src: Option<&Span>,
        dst: &mut Span,
        len: usize,
        spec: ScanSpec,
        totals: Option<&mut Span>,
    ) -> Result<()> {
        if len == 0 {
            return Ok(());
        }
        debug_assert!(len <= dst.len && src.map_or(true, |s| len <= s.len));
        let policy = self.module.blelloch;
        let blocks = len.div_ceil(policy.tile());
        let cfg = LaunchConfig {
            grid_dim: (grid(blocks)?, 1, 1),
            block_dim: (policy.threads, 1, 1),
            shared_mem_bytes: self.module.blelloch_shared_bytes,
        };
        let totals_ptr: u64 = match totals {
            Some(t) => {
                debug_assert!(t.len >= blocks);
                t.ptr
            }
            None => 0,
        };
        // In place, the kernel gets the same address twice: it reads each
        // tile completely before writing it (see kernels/blelloch.cuh).
        let src_ptr = src.map_or(dst.ptr, |s| s.ptr);
        let len64 = len as u64;
        let kernel = self.module.kernels.get(Stage::BlellochScanTiles, spec).ok_or_else(missing)?;
        let mut launch = self.stream.launch_builder(kernel);
        launch.arg(&src_ptr).arg(&dst.ptr).arg(&len64).arg(&totals_ptr);
        // SAFETY: `src` and `dst` address at least `len` items and `totals`
        // (if not null) `blocks` items of this module's item type, live until
        // the stream has run the kernel; the kernel reads `src` and writes
        // `dst` and `totals` only within those bounds.
        unsafe { launch.launch(cfg) }.map_err(|e| driver_error("launch of blelloch_scan_tiles", e))?;
        Ok(())
    }

    fn add_prefixes(&self, data: &mut Span, len: usize, spec: ScanSpec, prefixes: &Span) -> Result<()> {
        // Tile 0's prefix is the identity: the launch covers tiles 1.. only.
        let policy = self.module.blelloch;
        let blocks = len.div_ceil(policy.tile());
        if blocks <= 1 {
            return Ok(());
        }
        debug_assert!(len <= data.len && prefixes.len >= blocks);
        let cfg = LaunchConfig {
            grid_dim: (grid(blocks - 1)?, 1, 1),
            block_dim: (policy.threads, 1, 1),
            shared_mem_bytes: 0,
        };
        let len64 = len as u64;
        let kernel = self.module.kernels.get(Stage::BlellochAddPrefixes, spec).ok_or_else(missing)?;
        let mut launch = self.stream.launch_builder(kernel);
        launch.arg(&data.ptr).arg(&len64).arg(&prefixes.ptr);
        // SAFETY: as in scan_blocks; `prefixes` holds one item per tile.
        unsafe { launch.launch(cfg) }.map_err(|e| driver_error("launch of blelloch_add_prefixes", e))?;
        Ok(())
    }
}

fn missing() -> Error {
    Error::Other("internal: the module has no Blelloch kernels".into())
}
