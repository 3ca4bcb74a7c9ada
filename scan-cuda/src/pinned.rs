//! Page-locked host memory, streams and events as plain driver handles.
//!
//! The staged host transfers (staging.rs) need their own streams and events.
//! cudarc's `CudaStream`s would switch the whole context into its
//! multi-stream mode, in which every later use of a `CudaSlice` records and
//! waits on events: a cost every device-resident scan would then pay. These
//! handles are owned here and ordered by hand, so nothing else changes.

use std::mem::MaybeUninit;
use std::sync::Arc;

use cudarc::driver::{result, sys, CudaContext};
use scan_core::Result;

use crate::buffer::driver_error;

/// `len` bytes of page-locked host memory, which the copy engines read and
/// write at link speed. Cacheable (not write-combined): the host reads it
/// back after every download.
pub(crate) struct Pinned {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: a plain allocation; access is ordered by the owner (&/&mut).
unsafe impl Send for Pinned {}
unsafe impl Sync for Pinned {}

impl Pinned {
    /// Allocates `len` bytes (at least 1) in `ctx`.
    pub(crate) fn new(ctx: &Arc<CudaContext>, len: usize) -> Result<Pinned> {
        ctx.bind_to_thread().map_err(|e| driver_error("binding the context", e))?;
        // SAFETY: cuMemHostAlloc with no flags; the pointer is freed once, in Drop.
        let ptr = unsafe { result::malloc_host(len.max(1), 0) }.map_err(|e| driver_error("pinned allocation", e))?;
        Ok(Pinned { ptr: ptr.cast(), len })
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The address the copy engines read and write.
    pub(crate) fn ptr(&self) -> *mut u8 {
        self.ptr
    }

    /// The first `len` bytes, to read.
    ///
    /// # Safety
    /// No copy or host write into them may be pending or running (the
    /// caller waited for the event that follows the last one).
    pub(crate) unsafe fn head(&self, len: usize) -> &[MaybeUninit<u8>] {
        assert!(len <= self.len);
        // SAFETY: `len` bytes of a live allocation; exclusive of writers by
        // the caller's contract.
        unsafe { std::slice::from_raw_parts(self.ptr.cast(), len) }
    }

    /// The first `len` bytes, to write.
    ///
    /// # Safety
    /// No copy or host access may be pending or running on them, as in
    /// [`head`](Pinned::head), and none may start until the borrow ends.
    #[allow(clippy::mut_from_ref)] // the exclusivity is the caller's ordering
    pub(crate) unsafe fn head_mut(&self, len: usize) -> &mut [MaybeUninit<u8>] {
        assert!(len <= self.len);
        // SAFETY: as in `head`, and exclusive of every other access.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.cast(), len) }
    }
}

impl Drop for Pinned {
    fn drop(&mut self) {
        // SAFETY: allocated by cuMemHostAlloc, freed once; owners drop it
        // only when no copy that uses it is pending.
        let _ = unsafe { result::free_host(self.ptr.cast()) };
    }
}

/// A stream that does not synchronise with the legacy default stream.
pub(crate) struct Stream(pub(crate) sys::CUstream);

// SAFETY: a driver handle, usable from any thread with its context bound.
unsafe impl Send for Stream {}
unsafe impl Sync for Stream {}

impl Stream {
    pub(crate) fn new(ctx: &Arc<CudaContext>) -> Result<Stream> {
        ctx.bind_to_thread().map_err(|e| driver_error("binding the context", e))?;
        let stream = result::stream::create(result::stream::StreamKind::NonBlocking)
            .map_err(|e| driver_error("stream creation", e))?;
        Ok(Stream(stream))
    }

    /// Queued work of this stream waits for `event`'s last recorded work.
    pub(crate) fn wait(&self, event: &Event) -> Result<()> {
        event.block(self.0)
    }

    pub(crate) fn synchronize(&self) -> Result<()> {
        // SAFETY: a live stream.
        unsafe { result::stream::synchronize(self.0) }.map_err(|e| driver_error("stream synchronize", e))
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        // SAFETY: created by cuStreamCreate, destroyed once. Pending work
        // still completes (cuStreamDestroy does not cancel it).
        let _ = unsafe { result::stream::destroy(self.0) };
    }
}

/// An event for ordering (no timing). A host wait on it follows the
/// context's scheduling policy (spinning while there are spare cores), so
/// that a chunk's wait does not end with a thread wake-up.
pub(crate) struct Event(sys::CUevent);

// SAFETY: a driver handle, usable from any thread.
unsafe impl Send for Event {}
unsafe impl Sync for Event {}

impl Event {
    pub(crate) fn new(ctx: &Arc<CudaContext>) -> Result<Event> {
        ctx.bind_to_thread().map_err(|e| driver_error("binding the context", e))?;
        let flags = sys::CUevent_flags::CU_EVENT_DISABLE_TIMING as u32;
        let mut event = std::mem::MaybeUninit::uninit();
        // SAFETY: cuEventCreate writes the handle on success.
        let event = unsafe {
            sys::cuEventCreate(event.as_mut_ptr(), flags).result().map_err(|e| driver_error("event creation", e))?;
            event.assume_init()
        };
        Ok(Event(event))
    }

    /// Captures the work queued on `stream` so far.
    pub(crate) fn record(&self, stream: sys::CUstream) -> Result<()> {
        // SAFETY: a live event and stream.
        unsafe { result::event::record(self.0, stream) }.map_err(|e| driver_error("event record", e))
    }

    /// Work queued on `stream` from now on waits for the captured work.
    pub(crate) fn block(&self, stream: sys::CUstream) -> Result<()> {
        // SAFETY: a live event and stream.
        unsafe { result::stream::wait_event(stream, self.0, sys::CUevent_wait_flags::CU_EVENT_WAIT_DEFAULT) }
            .map_err(|e| driver_error("stream wait", e))
    }

    /// Waits for the captured work (at once if nothing was ever recorded).
    pub(crate) fn synchronize(&self) -> Result<()> {
        // SAFETY: a live event.
        unsafe { result::event::synchronize(self.0) }.map_err(|e| driver_error("event synchronize", e))
    }
}

impl Drop for Event {
    fn drop(&mut self) {
        // SAFETY: created by cuEventCreate, destroyed once.
        let _ = unsafe { result::event::destroy(self.0) };
    }
}

/// `len` bytes of device memory, freed synchronously on drop (owners drop
/// it only when no queued work uses it).
pub(crate) struct DeviceBytes {
    pub(crate) ptr: sys::CUdeviceptr,
}

impl DeviceBytes {
    pub(crate) fn new(ctx: &Arc<CudaContext>, len: usize) -> Result<DeviceBytes> {
        ctx.bind_to_thread().map_err(|e| driver_error("binding the context", e))?;
        // SAFETY: cuMemAlloc; freed once, in Drop.
        let ptr = unsafe { result::malloc_sync(len.max(1)) }.map_err(|e| driver_error("staging allocation", e))?;
        Ok(DeviceBytes { ptr })
    }
}

impl Drop for DeviceBytes {
    fn drop(&mut self) {
        // SAFETY: allocated by cuMemAlloc, freed once.
        let _ = unsafe { result::free_sync(self.ptr) };
    }
}
