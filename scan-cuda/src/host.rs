//! Scans of host slices and large transfers, staged through pinned memory
//! (staging.rs), and the measurement of the host link that bounds them.

use std::mem::MaybeUninit;

use cudarc::driver::sys;
use scan_core::device::{DeviceScan, Operands};
use scan_core::{CudaOp, Direction, Error, Result, ScanSpec};

use crate::buffer::{driver_error, vec_written_by, DeviceBuffer};
use crate::cuda::Cuda;
use crate::module::lock;
use crate::pinned::{DeviceBytes, Pinned};
use crate::single_pass::SinglePass;
use crate::span::Span;
use crate::staging::{ChunkPolicy, HostBytes, Staging};

/// The host <-> device link measured with page-locked memory: the rate a
/// transfer from or to a host slice can at best reach.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TransferRates {
    /// Bytes moved per call.
    pub bytes: usize,
    /// Host to device, GB/s (10^9 bytes per second).
    pub host_to_device: f64,
    /// Device to host, GB/s.
    pub device_to_host: f64,
}

impl TransferRates {
    /// The least time, in seconds, to move `bytes_in` to the device and
    /// `bytes_out` back one after the other at these rates: the bound a
    /// scan of a host slice is measured against (its copies may overlap,
    /// so it can beat it).
    pub fn bound_seconds(&self, bytes_in: usize, bytes_out: usize) -> f64 {
        bytes_in as f64 / (self.host_to_device * 1e9) + bytes_out as f64 / (self.device_to_host * 1e9)
    }
}

impl std::fmt::Display for TransferRates {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "pinned host->device {:.1} GB/s, device->host {:.1} GB/s", self.host_to_device, self.device_to_host)
    }
}

/// Transfers of at least this many bytes go through the staging buffers
/// ([`Cuda::upload`], [`Cuda::download`]); smaller ones are one driver copy
/// from or to the pageable slice, which the driver stages itself (at about
/// 8 GB/s on an H200 host), where the staged copies end no sooner.
pub const STAGED_TRANSFER_BYTES: usize = 4 << 20;

/// Whether a transfer of `bytes` goes through the staging buffers.
fn staged(bytes: usize) -> bool {
    bytes >= STAGED_TRANSFER_BYTES
}

/// The bytes of `items`, to be written.
fn uninit_bytes<T>(items: &mut [MaybeUninit<T>]) -> &mut [MaybeUninit<u8>] {
    // SAFETY: any memory may be viewed as MaybeUninit<u8>, and any bytes
    // written into a MaybeUninit<T> leave it a valid MaybeUninit<T>.
    unsafe { std::slice::from_raw_parts_mut(items.as_mut_ptr().cast(), std::mem::size_of_val(items)) }
}

/// The bytes of `items`, padding included.
fn bytes_of<T: Copy>(items: &[T]) -> &[MaybeUninit<u8>] {
    // SAFETY: any memory may be viewed as MaybeUninit<u8>, for as long as the borrow.
    unsafe { std::slice::from_raw_parts(items.as_ptr().cast(), std::mem::size_of_val(items)) }
}

/// The bytes of `items`, to be overwritten with the bytes of valid items.
fn bytes_of_mut<T: Copy>(items: &mut [T]) -> &mut [MaybeUninit<u8>] {
    // SAFETY: as in `bytes_of`; callers write only bytes of items of `T`
    // (the scan results the GPU computed from such items).
    unsafe { std::slice::from_raw_parts_mut(items.as_mut_ptr().cast(), std::mem::size_of_val(items)) }
}

impl Cuda {
    /// Scans host items from `src` into `dst` (same length), or `dst` in
    /// place: staged through pinned buffers, chunk by chunk, when `Op` has
    /// single-pass kernels (which carry a running total from chunk to
    /// chunk); otherwise one upload, the scan, one download.
    pub(crate) fn scan_host<Op: CudaOp>(
        &self,
        src: Option<&[Op::Item]>,
        dst: &mut [Op::Item],
        spec: ScanSpec,
    ) -> Result<()> {
        if let Some(src) = src {
            Error::check_lengths(src.len(), dst.len())?;
        }
        if dst.is_empty() {
            return Ok(());
        }
        let module = self.module::<Op>()?;
        let Ok(policy) = module.plan(self.algorithm()) else {
            return self.scan_host_unstaged::<Op>(src, dst, spec);
        };
        let operands = match src {
            Some(src) => HostBytes::Into { src: bytes_of(src), dst: bytes_of_mut(dst) },
            None => HostBytes::InPlace(bytes_of_mut(dst)),
        };
        let chaos = self.tuning().adversarial_seed();
        let stream = self.stream();
        let mut scan_chunk = |src: u64, dst: u64, len: usize, carry| {
            let chunk = SinglePass { stream, module: &module, policy, chaos, carry, recordable: false };
            let operands = Operands::Into { src: &Span { ptr: src, len }, dst: &mut Span { ptr: dst, len } };
            DeviceScan::<Op>::scan(&chunk, operands, spec)
        };
        let item_size = std::mem::size_of::<Op::Item>();
        let reverse = spec.direction == Direction::Reverse;
        let policy = self.chunk_policy();
        self.with_staging(|staging| {
            staging.run(operands, item_size, reverse, policy, stream.cu_stream(), &mut scan_chunk)
        })
    }

    /// How host transfers are cut into chunks (`Tuning::host_chunk_bytes`).
    fn chunk_policy(&self) -> ChunkPolicy {
        match self.tuning().host_chunk() {
            Some(bytes) => ChunkPolicy::fixed(bytes),
            None => ChunkPolicy::default(),
        }
    }

    /// Runs `transfer` with the executor's staging buffers (made on first
    /// use), which one call at a time holds: staged scans and transfers on
    /// one executor from several threads take turns.
    fn with_staging<R>(&self, transfer: impl FnOnce(&mut Staging) -> Result<R>) -> Result<R> {
        let mut staging = lock(&self.staging);
        let staging = match &mut *staging {
            Some(staging) => staging,
            empty => empty.insert(Staging::new(self.context())?),
        };
        transfer(staging)
    }

    /// Overwrites a device buffer of this executor with `items` (the same
    /// length), after the work queued on the executor's stream; complete
    /// when this returns. Staged like [`upload`](Cuda::upload), where
    /// [`DeviceBuffer::upload_from`] is one driver copy from pageable memory:
    /// the call for a buffer reused step after step.
    ///
    /// ```no_run
    /// # fn main() -> scan_core::Result<()> {
    /// let cuda = scan_cuda::Cuda::new()?;
    /// let mut buf = cuda.alloc::<f32>(1 << 24)?;
    /// for step in 0..3 {
    ///     cuda.upload_into(&vec![step as f32; 1 << 24], &mut buf)?;
    /// }
    /// assert_eq!(cuda.download(&buf)?[0], 2.0);
    /// # Ok(()) }
    /// ```
    pub fn upload_into<T: Copy>(&self, items: &[T], buf: &mut DeviceBuffer<T>) -> Result<()> {
        self.check_buffer(buf, "buf")?;
        Error::check_lengths(items.len(), buf.len())?;
        let bytes = bytes_of(items);
        if !staged(bytes.len()) {
            return buf.upload_from(items);
        }
        let dst = buf.device_ptr_mut(self.stream());
        let after = self.stream().cu_stream();
        self.with_staging(|staging| staging.upload(bytes, dst, after, self.chunk_policy()))
    }

    /// Copies a device buffer of this executor back to a new vector, after
    /// the work queued on the executor's stream; waits for the copy.
    /// Buffers of [`STAGED_TRANSFER_BYTES`] or more travel in chunks through
    /// the executor's page-locked staging buffers (those of
    /// [`scan_into`](Cuda::scan_into)), at about the host link's speed,
    /// where [`DeviceBuffer::download`] is one driver copy to pageable
    /// memory.
    ///
    /// ```no_run
    /// # fn main() -> scan_core::Result<()> {
    /// let cuda = scan_cuda::Cuda::new()?;
    /// let buf = cuda.upload(&vec![1.5f32; 1 << 24])?;
    /// assert_eq!(cuda.download(&buf)?, vec![1.5f32; 1 << 24]);
    /// # Ok(()) }
    /// ```
    pub fn download<T: Copy>(&self, buf: &DeviceBuffer<T>) -> Result<Vec<T>> {
        self.download_prefix(buf, buf.len())
    }

    /// The first `count` items of a device buffer of this executor (at most
    /// its length) in a new vector, staged as [`download`](Cuda::download) is.
    pub fn download_prefix<T: Copy>(&self, buf: &DeviceBuffer<T>, count: usize) -> Result<Vec<T>> {
        self.check_buffer(buf, "buf")?;
        if count > buf.len() {
            return Err(Error::LengthMismatch { input: buf.len(), output: count });
        }
        vec_written_by(count, |spare| self.download_checked(buf, spare))
    }

    /// The first `out.len()` items of a device buffer of this executor (at
    /// most its length) into `out`, staged where large; waits for the copy.
    pub(crate) fn download_uninit<T: Copy>(&self, buf: &DeviceBuffer<T>, out: &mut [MaybeUninit<T>]) -> Result<()> {
        self.check_buffer(buf, "buf")?;
        if out.len() > buf.len() {
            return Err(Error::LengthMismatch { input: buf.len(), output: out.len() });
        }
        self.download_checked(buf, out)
    }

    /// Copies a device buffer of this executor into `out` (the same
    /// length), staged as [`download`](Cuda::download) is.
    pub fn download_into<T: Copy>(&self, buf: &DeviceBuffer<T>, out: &mut [T]) -> Result<()> {
        self.check_buffer(buf, "buf")?;
        Error::check_lengths(buf.len(), out.len())?;
        // SAFETY: MaybeUninit<T> has T's layout, and the download writes only
        // the bytes of the buffer's items of `T` into it.
        let out = unsafe { &mut *(out as *mut [T] as *mut [MaybeUninit<T>]) };
        self.download_checked(buf, out)
    }

    /// The first `out.len()` items of `buf` into `out`, after the work
    /// queued on the executor's stream: through the staging buffers where
    /// large, else one driver copy. The caller checked the buffer and the
    /// length.
    fn download_checked<T: Copy>(&self, buf: &DeviceBuffer<T>, out: &mut [MaybeUninit<T>]) -> Result<()> {
        if !staged(std::mem::size_of_val(out)) {
            return buf.download_uninit(0, out);
        }
        let src = buf.device_ptr(self.stream());
        let after = self.stream().cu_stream();
        self.with_staging(|staging| staging.download(src, uninit_bytes(out), after, self.chunk_policy()))
    }

    /// [`scan_host`](Cuda::scan_host) without staging: upload the whole
    /// input, scan, download.
    fn scan_host_unstaged<Op: CudaOp>(
        &self,
        src: Option<&[Op::Item]>,
        dst: &mut [Op::Item],
        spec: ScanSpec,
    ) -> Result<()> {
        match src {
            Some(src) => {
                let dev_in = self.upload(src)?;
                // Every item is written by the out-of-place scan before the download.
                let mut dev_out = self.alloc_unwritten::<Op::Item>(src.len())?;
                self.scan_device_into::<Op>(&dev_in, &mut dev_out, spec)?;
                self.download_into(&dev_out, dst)
            }
            None => {
                let mut buf = self.upload(dst)?;
                self.scan_device::<Op>(&mut buf, spec)?;
                self.download_into(&buf, dst)
            }
        }
    }

    /// Measures the host link: one copy of `bytes` from page-locked host
    /// memory to the device and one back, each timed with CUDA events, the
    /// faster of three per direction (after one untimed pair). Allocates
    /// `bytes` of pinned host memory and of device memory for the call.
    ///
    /// ```no_run
    /// # fn main() -> scan_core::Result<()> {
    /// let cuda = scan_cuda::Cuda::new()?;
    /// let link = cuda.transfer_rates(256 << 20)?;
    /// println!("{link}; 1 GiB each way takes at least {:.1} ms", link.bound_seconds(1 << 30, 1 << 30) * 1e3);
    /// # Ok(()) }
    /// ```
    pub fn transfer_rates(&self, bytes: usize) -> Result<TransferRates> {
        if bytes == 0 {
            return Err(Error::Other("a transfer rate needs at least one byte to move".into()));
        }
        let host = Pinned::new(self.context(), bytes)?;
        let device = DeviceBytes::new(self.context(), bytes)?;
        let stream = self.stream().cu_stream();
        let (mut to_device, mut to_host) = (f32::MAX, f32::MAX);
        for run in 0..4 {
            // SAFETY: both buffers hold `bytes`; the copies finish before
            // `time` returns (it waits for its end event, or on an error for
            // the stream), so before the buffers drop.
            let up = self.time(|| {
                unsafe { sys::cuMemcpyHtoDAsync_v2(device.ptr, host.ptr().cast(), bytes, stream) }
                    .result()
                    .map_err(|e| driver_error("pinned upload", e))
            })?;
            let down = self.time(|| {
                unsafe { sys::cuMemcpyDtoHAsync_v2(host.ptr().cast(), device.ptr, bytes, stream) }
                    .result()
                    .map_err(|e| driver_error("pinned download", e))
            })?;
            if run > 0 {
                to_device = to_device.min(up.1);
                to_host = to_host.min(down.1);
            }
        }
        let gbps = |ms: f32| bytes as f64 / (f64::from(ms) * 1e-3) / 1e9;
        Ok(TransferRates { bytes, host_to_device: gbps(to_device), device_to_host: gbps(to_host) })
    }
}
