//! Items in device memory, by address: the buffer type of the GPU's
//! algorithms, and owned scratch of the same shape.

use std::borrow::{Borrow, BorrowMut};
use std::sync::Arc;

use cudarc::driver::{CudaSlice, CudaStream, DevicePtr};
use scan_core::{Error, Result};

use crate::buffer::driver_error;

/// `len` items of the operator's item type at device address `ptr`.
///
/// Kernels are launched with raw addresses; every launch of one executor goes
/// to its one stream, so stream order is the only ordering needed.
#[derive(Debug)]
pub(crate) struct Span {
    pub(crate) ptr: u64,
    pub(crate) len: usize,
}

/// Device scratch; freed in stream order when dropped.
pub(crate) struct Scratch {
    _mem: Option<CudaSlice<u8>>,
    span: Span,
}

impl Scratch {
    /// `len` items of `item_size` bytes, contents unspecified.
    pub(crate) fn alloc(stream: &Arc<CudaStream>, len: usize, item_size: usize) -> Result<Scratch> {
        let bytes =
            len.checked_mul(item_size).ok_or_else(|| Error::TooLarge { what: format!("{len} items of scratch") })?;
        if bytes == 0 {
            return Ok(Scratch { _mem: None, span: Span { ptr: 0, len } });
        }
        // SAFETY: the contents are unspecified by contract; users write before
        // they read.
        let mem = unsafe { stream.alloc::<u8>(bytes) }.map_err(|e| driver_error("scratch allocation", e))?;
        let (ptr, sync) = mem.device_ptr(stream);
        drop(sync);
        Ok(Scratch { _mem: Some(mem), span: Span { ptr, len } })
    }
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
