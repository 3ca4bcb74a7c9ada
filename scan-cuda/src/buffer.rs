//! Device buffers of any `Copy` item, moved as bytes.

use std::mem::MaybeUninit;
use std::sync::Arc;

use cudarc::driver::{result, CudaSlice, CudaStream, DevicePtr, DevicePtrMut, DeviceRepr, ValidAsZeroBits};
use scan_core::{Error, Result};

/// An item as the driver sees it: its bytes.
///
/// Rust tuples and arrays are not `cudarc::DeviceRepr`, and the orphan rule
/// forbids implementing it for them; this wrapper has the item's layout
/// (`repr(transparent)`), and the kernels read it with the same layout (the
/// generated CUDA item is layout-identical and `static_assert`ed to be).
#[repr(transparent)]
#[derive(Clone, Copy, Debug)]
pub(crate) struct Raw<T>(T);

// SAFETY: a `Copy` item has no drop glue and no ownership; its bytes are
// copied to and from the device unchanged, and only ever interpreted there
// as the operator's layout-identical CUDA item.
unsafe impl<T: Copy> DeviceRepr for Raw<T> {}

// SAFETY: repr(transparent) over T: all-zero bytes are a valid Raw<T> exactly
// when they are a valid T.
unsafe impl<T: ValidAsZeroBits> ValidAsZeroBits for Raw<T> {}

pub(crate) fn raw<T>(items: &[T]) -> &[Raw<T>] {
    // SAFETY: Raw<T> is repr(transparent) over T: same size, alignment, layout.
    unsafe { &*(items as *const [T] as *const [Raw<T>]) }
}

pub(crate) fn raw_mut<T>(items: &mut [T]) -> &mut [Raw<T>] {
    // SAFETY: as in `raw`.
    unsafe { &mut *(items as *mut [T] as *mut [Raw<T>]) }
}

/// A new vector of `count` items, every byte of which `fill` writes with the
/// bytes of valid items of `T` (a download); a length the host cannot hold
/// is [`Error::TooLarge`], not an abort.
pub(crate) fn vec_written_by<T>(
    count: usize,
    fill: impl FnOnce(&mut [MaybeUninit<T>]) -> Result<()>,
) -> Result<Vec<T>> {
    let mut out: Vec<T> = Vec::new();
    out.try_reserve_exact(count)
        .map_err(|_| Error::TooLarge { what: format!("cannot allocate {count} items on the host") })?;
    if count > 0 {
        fill(&mut out.spare_capacity_mut()[..count])?;
        // SAFETY: `fill` succeeded, so it wrote all `count` items (its
        // contract), and nothing writes them after it returned.
        unsafe { out.set_len(count) };
    }
    Ok(out)
}

pub(crate) fn driver_error(during: &str, e: result::DriverError) -> Error {
    if e.0 == cudarc::driver::sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY {
        return Error::TooLarge {
            what: format!("the GPU ran out of memory during {during}; scan in smaller pieces or use the CPU backend"),
        };
    }
    Error::Driver { during: during.into(), message: e.to_string() }
}

/// `len` items of `T` in device memory.
///
/// Made by [`Cuda::upload`](crate::Cuda::upload) or
/// [`Cuda::alloc`](crate::Cuda::alloc); scanned in place by
/// [`Cuda::scan_device`](crate::Cuda::scan_device).
///
/// ```no_run
/// # fn main() -> scan_core::Result<()> {
/// use scan_core::{ops::Add, ScanSpec};
/// let cuda = scan_cuda::Cuda::new()?;
/// let mut buf = cuda.upload(&[1u32, 2, 3])?;
/// cuda.scan_device::<Add<u32>>(&mut buf, ScanSpec::inclusive())?;
/// assert_eq!(buf.download()?, [1, 3, 6]);
/// # Ok(()) }
/// ```
pub struct DeviceBuffer<T> {
    pub(crate) slice: CudaSlice<Raw<T>>,
}

impl<T> std::fmt::Debug for DeviceBuffer<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "DeviceBuffer<{}>({} items)", std::any::type_name::<T>(), self.slice.len())
    }
}

impl<T: Copy> DeviceBuffer<T> {
    /// Number of items.
    pub fn len(&self) -> usize {
        self.slice.len()
    }

    /// True when the buffer holds no items.
    pub fn is_empty(&self) -> bool {
        self.slice.len() == 0
    }

    /// Size in bytes.
    pub fn num_bytes(&self) -> usize {
        self.slice.num_bytes()
    }

    pub(crate) fn stream(&self) -> &Arc<CudaStream> {
        self.slice.stream()
    }

    /// Copies the items back to a new vector (waits for the device).
    pub fn download(&self) -> Result<Vec<T>> {
        self.download_prefix(self.len())
    }

    /// Copies the first `count` items (at most `len()`) back to a new
    /// vector (waits for the device).
    pub fn download_prefix(&self, count: usize) -> Result<Vec<T>> {
        if count > self.len() {
            return Err(Error::LengthMismatch { input: self.len(), output: count });
        }
        self.download_range(0, count)
    }

    /// The last item (waits for the device); None when empty.
    pub(crate) fn download_last(&self) -> Result<Option<T>> {
        match self.len() {
            0 => Ok(None),
            n => Ok(self.download_range(n - 1, 1)?.pop()),
        }
    }

    /// Items `start .. start + count` (within the buffer) in a new vector.
    fn download_range(&self, start: usize, count: usize) -> Result<Vec<T>> {
        vec_written_by(count, |spare| self.download_uninit(start, spare))
    }

    /// Items `start .. start + out.len()` (within the buffer) into `out`, by
    /// one driver copy; waits for it.
    pub(crate) fn download_uninit(&self, start: usize, out: &mut [MaybeUninit<T>]) -> Result<()> {
        if out.is_empty() {
            return Ok(());
        }
        // MaybeUninit<T> has T's layout.
        let dst: &mut [Raw<MaybeUninit<T>>] = raw_mut(out);
        let stream = self.stream().clone();
        // SAFETY: Raw<T> and Raw<MaybeUninit<T>> have the same size and layout.
        let src = unsafe { self.slice.transmute::<Raw<MaybeUninit<T>>>(self.len()) }
            .ok_or_else(|| Error::Other("internal: device buffer view has the wrong size".into()))?;
        let end = start + dst.len();
        stream.memcpy_dtoh(&src.slice(start..end), dst).map_err(|e| driver_error("download", e))?;
        stream.synchronize().map_err(|e| driver_error("download", e))
    }

    /// Copies the items into `out`, which must have the same length.
    pub fn download_into(&self, out: &mut [T]) -> Result<()> {
        if out.len() != self.len() {
            return Err(Error::LengthMismatch { input: self.len(), output: out.len() });
        }
        if self.is_empty() {
            return Ok(());
        }
        let stream = self.stream().clone();
        stream.memcpy_dtoh(&self.slice, raw_mut(out)).map_err(|e| driver_error("download", e))?;
        stream.synchronize().map_err(|e| driver_error("download", e))
    }

    /// Overwrites the items with `items` (same length).
    pub fn upload_from(&mut self, items: &[T]) -> Result<()> {
        if items.len() != self.len() {
            return Err(Error::LengthMismatch { input: items.len(), output: self.len() });
        }
        if self.is_empty() {
            return Ok(());
        }
        let stream = self.stream().clone();
        stream.memcpy_htod(raw(items), &mut self.slice).map_err(|e| driver_error("upload", e))?;
        stream.synchronize().map_err(|e| driver_error("upload", e))
    }

    /// Overwrites this buffer with the items of `src` (same length), on the
    /// device: reads and writes `num_bytes()` each, the copy that bandwidth
    /// figures are measured against. Does not wait for the device.
    pub fn copy_from(&mut self, src: &DeviceBuffer<T>) -> Result<()> {
        if src.len() != self.len() {
            return Err(Error::LengthMismatch { input: src.len(), output: self.len() });
        }
        if self.is_empty() {
            return Ok(());
        }
        let stream = self.stream().clone();
        stream.memcpy_dtod(&src.slice, &mut self.slice).map_err(|e| driver_error("device copy", e))
    }

    /// The device address of the first item, for launches on `stream` that
    /// only read the buffer.
    pub(crate) fn device_ptr(&self, stream: &CudaStream) -> u64 {
        let (ptr, _sync) = self.slice.device_ptr(stream);
        ptr
    }

    /// The device address of the first item, for launches on `stream` that
    /// write the buffer.
    pub(crate) fn device_ptr_mut(&mut self, stream: &CudaStream) -> u64 {
        let (ptr, _sync) = self.slice.device_ptr_mut(stream);
        ptr
    }
}
