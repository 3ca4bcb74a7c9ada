//! The GPU's `BlockBackend`: the same multi-block driver as the CPU
//! (`scan_core::blelloch::{scan_into, scan_in_place}`), with blocks scanned by
//! kernels.

use std::borrow::{Borrow, BorrowMut};

use cudarc::driver::{CudaSlice, DevicePtr, LaunchConfig, PushKernelArg};
use scan_core::blelloch::BlockBackend;
use scan_core::{Error, Result, ScanOp, ScanSpec};

use crate::buffer::driver_error;
use crate::cuda::{Cuda, Module};

/// Items in device memory, by address: the driver's buffer type.
///
/// Kernels are launched with raw addresses; every launch of one scan goes to
/// the executor's one stream, so stream order is the only ordering needed.
#[derive(Debug)]
pub(crate) struct Span {
    pub(crate) ptr: u64,
    pub(crate) len: usize,
}

/// Scratch for block totals; freed in stream order when dropped.
pub(crate) struct Scratch {
    _mem: Option<CudaSlice<u8>>,
    span: Span,
}

impl Borrow<Span> for Scratch {
    fn borrow(&self) -> &Span {
        &self.span
    }
}

impl BorrowMut<Span> for Scratch {
    fn borrow_mut(&mut self) -> &mut Span {
        &mut self.span
    }
}

pub(crate) struct GpuBackend<'a> {
    pub(crate) cuda: &'a Cuda,
    pub(crate) module: &'a Module,
}

impl GpuBackend<'_> {
    fn config(&self, blocks: usize, shared_mem_bytes: u32) -> Result<LaunchConfig> {
        let grid = u32::try_from(blocks).ok().filter(|&g| g <= i32::MAX as u32).ok_or_else(|| Error::TooLarge {
            what: format!("{blocks} blocks exceed the CUDA grid limit; scan in pieces"),
        })?;
        Ok(LaunchConfig { grid_dim: (grid, 1, 1), block_dim: (self.module.policy.threads, 1, 1), shared_mem_bytes })
    }
}

impl<Op: ScanOp> BlockBackend<Op> for GpuBackend<'_> {
    type Buf = Span;
    type Scratch = Scratch;

    fn block_len(&self) -> usize {
        self.module.policy.tile()
    }

    fn buf_len(&self, buf: &Span) -> usize {
        buf.len
    }

    fn alloc(&self, len: usize) -> Result<Scratch> {
        let size = self.module.item_size;
        let bytes = len.checked_mul(size).ok_or_else(|| Error::TooLarge { what: format!("{len} items of scratch") })?;
        if bytes == 0 {
            return Ok(Scratch { _mem: None, span: Span { ptr: 0, len } });
        }
        let stream = self.cuda.stream();
        // SAFETY: the contents are unspecified by contract; the kernels write
        // every total before it is read.
        let mem = unsafe { stream.alloc::<u8>(bytes) }.map_err(|e| driver_error("scratch allocation", e))?;
        let (ptr, _sync) = mem.device_ptr(stream);
        drop(_sync);
        Ok(Scratch { _mem: Some(mem), span: Span { ptr, len } })
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
        let blocks = len.div_ceil(self.module.policy.tile());
        let cfg = self.config(blocks, self.module.shared_bytes)?;
        let totals_ptr: u64 = match totals {
            Some(t) => {
                debug_assert!(t.len >= blocks);
                t.ptr
            }
            None => 0,
        };
        // In place, the kernel gets the same address twice: it reads each
        // tile completely before writing it (see kernels/block_scan.cu).
        let src_ptr = src.map_or(dst.ptr, |s| s.ptr);
        let (len64, inclusive) = (len as u64, spec.is_inclusive() as i32);
        let stream = self.cuda.stream();
        let mut launch = stream.launch_builder(&self.module.scan_blocks[spec.is_reverse() as usize]);
        launch.arg(&src_ptr).arg(&dst.ptr).arg(&len64).arg(&totals_ptr).arg(&inclusive);
        // SAFETY: `src` and `dst` address at least `len` items and `totals`
        // (if not null) `blocks` items of this module's item type, live until
        // the stream has run the kernel; the kernel reads `src` and writes
        // `dst` and `totals` only within those bounds.
        unsafe { launch.launch(cfg) }.map_err(|e| driver_error("launch of scan_blocks", e))?;
        Ok(())
    }

    fn add_prefixes(&self, data: &mut Span, len: usize, spec: ScanSpec, prefixes: &Span) -> Result<()> {
        // Tile 0's prefix is the identity: the launch covers tiles 1.. only.
        let blocks = len.div_ceil(self.module.policy.tile());
        if blocks <= 1 {
            return Ok(());
        }
        debug_assert!(len <= data.len && prefixes.len >= blocks);
        let cfg = self.config(blocks - 1, 0)?;
        let len64 = len as u64;
        let stream = self.cuda.stream();
        let mut launch = stream.launch_builder(&self.module.add_prefixes[spec.is_reverse() as usize]);
        launch.arg(&data.ptr).arg(&len64).arg(&prefixes.ptr);
        // SAFETY: as in scan_blocks; `prefixes` holds one item per tile.
        unsafe { launch.launch(cfg) }.map_err(|e| driver_error("launch of add_prefixes", e))?;
        Ok(())
    }
}
