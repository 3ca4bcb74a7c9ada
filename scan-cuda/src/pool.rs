//! The freed device memory the executor keeps for its next allocations.
//!
//! cudarc allocates through the stream-ordered allocator (`cuMemAllocAsync`)
//! from the device's current memory pool. That pool's release threshold is 0
//! by default: at every synchronisation it hands all freed memory back to
//! the driver, and the next allocation maps it again. For a call that
//! allocates large outputs, such as the selective scan's backward (0.6 GB
//! at 8/11's shape) or the training forward's saved states (0.4 GB), the
//! re-mapping cost 0.37 ms per 0.4 GB on the H200: as much as the whole
//! forward. Keeping freed memory in the pool, as PyTorch's caching
//! allocator does, makes those allocations nearly free from the second call
//! on. [`Cuda::with_device`] raises the threshold to a quarter of the
//! device's memory (never lowering one the program set higher);
//! [`Cuda::set_retained_memory`] sets it.

use cudarc::driver::{result, sys, CudaContext};
use scan_core::Result;

use crate::buffer::driver_error;
use crate::cuda::Cuda;

/// The default: a quarter of the device's memory.
pub(crate) fn default_retained(total_bytes: usize) -> u64 {
    total_bytes as u64 / 4
}

/// The device's current memory pool, or `None` where the device has no
/// stream-ordered allocator (cudarc then allocates synchronously and frees
/// at once, and nothing is retained).
fn current_pool(ctx: &CudaContext) -> Result<Option<sys::CUmemoryPool>> {
    let supported = ctx
        .attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED)
        .map_err(|e| driver_error("memory pool support", e))?;
    if supported == 0 {
        return Ok(None);
    }
    ctx.bind_to_thread().map_err(|e| driver_error("binding the context", e))?;
    // SAFETY: the device of a live context.
    let pool = unsafe { result::device::get_mem_pool(ctx.cu_device()) }.map_err(|e| driver_error("memory pool", e))?;
    Ok(Some(pool))
}

fn get(pool: sys::CUmemoryPool, attribute: sys::CUmemPool_attribute) -> Result<u64> {
    let mut value = 0u64;
    // SAFETY: a pool of the device; both attributes read here are
    // cuuint64_t.
    unsafe { result::mem_pool::get_attribute(pool, attribute, (&mut value as *mut u64).cast()) }
        .map_err(|e| driver_error("reading a memory pool attribute", e))?;
    Ok(value)
}

fn set_threshold(pool: sys::CUmemoryPool, mut bytes: u64) -> Result<()> {
    let attribute = sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD;
    // SAFETY: a pool of the device; the release threshold is a cuuint64_t.
    unsafe { result::mem_pool::set_attribute(pool, attribute, (&mut bytes as *mut u64).cast()) }
        .map_err(|e| driver_error("setting the memory pool's release threshold", e))
}

/// Raises the release threshold of `ctx`'s device pool to `bytes` unless it
/// is higher already.
pub(crate) fn retain_at_least(ctx: &CudaContext, bytes: u64) -> Result<()> {
    let Some(pool) = current_pool(ctx)? else { return Ok(()) };
    if get(pool, sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD)? < bytes {
        set_threshold(pool, bytes)?;
    }
    Ok(())
}

/// Hands the pool's unused memory back to the driver (what the threshold
/// kept), so that `cuMemGetInfo` counts it free again; for an allocation
/// that would not fit otherwise. Frees still queued on a stream are not
/// released: synchronise first.
pub(crate) fn release_unused(ctx: &CudaContext) -> Result<()> {
    if let Some(pool) = current_pool(ctx)? {
        // SAFETY: a pool of the device.
        unsafe { result::mem_pool::trim_to(pool, 0) }.map_err(|e| driver_error("trimming the memory pool", e))?;
    }
    Ok(())
}

impl Cuda {
    /// Lets the device's memory pool keep up to `bytes` of freed memory for
    /// later allocations instead of returning it to the driver at each
    /// synchronisation (the pool's release threshold; the module doc of
    /// `pool.rs` says why). The default, set when the device is opened, is
    /// a quarter of the device's memory; `0` gives the driver's default
    /// (keep nothing). The pool is the device's, so the setting holds for
    /// every executor and library allocating from it in the process (hence
    /// `&self`). Memory allocated with plain `cuMemAlloc`, not from the
    /// pool, cannot use what the pool keeps.
    ///
    /// Errors: [`Error::Driver`](scan_core::Error::Driver) if the driver
    /// refuses the setting. On a device without a stream-ordered allocator
    /// it does nothing.
    ///
    /// ```no_run
    /// # fn main() -> scan_core::Result<()> {
    /// let cuda = scan_cuda::Cuda::new()?;
    /// cuda.set_retained_memory(1 << 30)?;
    /// assert_eq!(cuda.retained_memory()?, Some(1 << 30));
    /// # Ok(()) }
    /// ```
    pub fn set_retained_memory(&self, bytes: u64) -> Result<()> {
        match current_pool(self.context())? {
            Some(pool) => set_threshold(pool, bytes),
            None => Ok(()),
        }
    }

    /// The freed bytes the device's memory pool keeps (its release
    /// threshold), or `None` on a device without a stream-ordered
    /// allocator.
    pub fn retained_memory(&self) -> Result<Option<u64>> {
        current_pool(self.context())?
            .map(|pool| get(pool, sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD))
            .transpose()
    }

    /// The bytes the device's memory pool holds now, in use and kept, or
    /// `None` on a device without a stream-ordered allocator. Allocations
    /// and frees are stream-ordered: synchronise first for a settled figure.
    pub fn pool_reserved_memory(&self) -> Result<Option<u64>> {
        current_pool(self.context())?
            .map(|pool| get(pool, sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT))
            .transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_keeps_a_quarter_of_the_device() {
        assert_eq!(default_retained(141 << 30), (141u64 << 30) / 4);
        assert_eq!(default_retained(0), 0);
    }
}
