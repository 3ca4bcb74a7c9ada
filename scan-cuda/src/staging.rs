//! Scans of host slices at link speed: the data goes to the GPU and back in
//! chunks, through reusable pinned buffers, while the GPU scans the chunks
//! in order, each starting from the running total of the ones before it (its
//! carry, kernels/single_pass.cuh).
//!
//! Why: the copy engines can read only page-locked memory. A copy from a
//! pageable `Vec` is staged by the driver through a small pinned buffer, one
//! piece at a time, and ran at 8 GB/s end to end on an H200 host. Here host
//! threads copy each chunk into pinned memory, and the uploads, the scans
//! and the downloads of different chunks overlap, on three streams:
//!
//! ```text
//! chunk k, slot s = k % SLOTS   (stream or thread: waits for, then does)
//! caller:   uploaded[s] (pinned_in[s] free)    -> copy the chunk into pinned_in[s]
//! upload:   scanned[s] (dev_in[s] free)        -> pinned_in[s] -> dev_in[s], record uploaded[s]
//! compute:  uploaded[s], downloaded[s]         -> scan dev_in[s] -> dev_out[s] with the carry,
//!                                                 record scanned[s]
//! caller:   drained chunk k - SLOTS (pinned_out[s] free)
//! download: scanned[s]                         -> dev_out[s] -> pinned_out[s], record downloaded[s]
//! drainer:  downloaded[s]                      -> copy pinned_out[s] into the output chunk
//! ```
//!
//! Each wait names the last use of the buffer by the chunk SLOTS before, so
//! SLOTS chunks are in flight. A reverse scan takes the chunks last first.
//! The buffers live in the executor and are reused by the next call.
//!
//! Plain transfers ([`Staging::upload`], [`Staging::download`]: what
//! `Cuda::upload` and `Cuda::download` run for large buffers) use the same
//! pinned buffers, copied straight to or from the destination on the device:
//!
//! ```text
//! upload, chunk k:   caller: uploaded[s] -> copy the chunk into pinned_in[s]
//!                    upload: pinned_in[s] -> device, record uploaded[s]
//! download, chunk k: download: device -> pinned_out[s], record downloaded[s]
//!                              (queued SLOTS chunks ahead of the caller)
//!                    caller: downloaded[s] -> copy pinned_out[s] out, queue chunk k + SLOTS
//! ```

use std::mem::MaybeUninit;
use std::sync::{mpsc, Arc, OnceLock};

use cudarc::driver::{result, sys, CudaContext};
use rayon::prelude::*;
use scan_core::{Error, Result};

use crate::buffer::driver_error;
use crate::pinned::{DeviceBytes, Event, Pinned, Stream};
use crate::single_pass::Carry;

/// Chunks in flight at once.
const SLOTS: usize = 4;

/// The smallest chunk of a plain transfer: a tuned chunk size below it
/// (`Tuning::host_chunk_bytes`, which tests set to a few items to cross many
/// chunk boundaries of a scan) would cost a driver copy and an event wait per
/// few bytes.
const MIN_TRANSFER_CHUNK: usize = 4096;

/// Room for one carry item (items of the single-pass kernels are smaller).
const CARRY_BYTES: usize = 256;

/// How a host transfer is cut into chunks: `parts` chunks of one size,
/// held between `min_bytes` and `max_bytes`. Each chunk costs about ten
/// driver calls and two thread hand-overs, which small chunks do not
/// amortise; the first chunk must be copied into pinned memory before any
/// upload starts, and the last one downloaded and copied out after the rest,
/// which large chunks make long.
///
/// Measured on an H200 host (bench --gpu-host-only, f32 add, in + out
/// against the pinned link's bound): at 2^24 items (64 MiB), 8 MiB chunks
/// 0.93, 16 MiB 0.87, 4 MiB 0.61; at 2^28 (1 GiB), 16 MiB 1.22 (the copies
/// in and out overlap), 32 MiB 1.04, 8 MiB 0.91, 1 MiB 0.28. Chunks that
/// grew from 1 MiB to 16 MiB and shrank back (to start and end the pipeline
/// sooner) ran at 0.73 and 1.16: small chunks cost more than they save.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ChunkPolicy {
    pub(crate) min_bytes: usize,
    pub(crate) max_bytes: usize,
    pub(crate) parts: usize,
}

impl Default for ChunkPolicy {
    fn default() -> Self {
        ChunkPolicy { min_bytes: 4 << 20, max_bytes: 16 << 20, parts: 8 }
    }
}

impl ChunkPolicy {
    /// One size for every chunk.
    pub(crate) fn fixed(bytes: usize) -> ChunkPolicy {
        ChunkPolicy { min_bytes: bytes, max_bytes: bytes, parts: 1 }
    }

    /// Items per chunk for `len` items of `item_size` bytes: at least one,
    /// and at most `max_bytes` unless one item is larger.
    pub(crate) fn chunk_items(&self, len: usize, item_size: usize) -> usize {
        let bytes =
            (len * item_size).div_ceil(self.parts.max(1)).clamp(self.min_bytes, self.max_bytes.max(self.min_bytes));
        (bytes / item_size).max(1)
    }
}

/// The operands of a staged scan, as bytes.
pub(crate) enum HostBytes<'a> {
    Into { src: &'a Bytes, dst: &'a mut Bytes },
    InPlace(&'a mut Bytes),
}

/// Bytes of host items (padding included, hence `MaybeUninit`).
type Bytes = [MaybeUninit<u8>];

/// One chunk's buffers and the events that order their reuse.
struct Slot {
    pinned_in: Pinned,
    pinned_out: Pinned,
    /// The chunk's input and output on the device: made by the first staged
    /// scan, since plain transfers copy straight to or from their buffers.
    device: Option<SlotDevice>,
    uploaded: Event,
    scanned: Event,
    downloaded: Event,
}

struct SlotDevice {
    dev_in: DeviceBytes,
    dev_out: DeviceBytes,
}

impl Slot {
    fn new(ctx: &Arc<CudaContext>, bytes: usize) -> Result<Slot> {
        Ok(Slot {
            pinned_in: Pinned::new(ctx, bytes)?,
            pinned_out: Pinned::new(ctx, bytes)?,
            device: None,
            uploaded: Event::new(ctx)?,
            scanned: Event::new(ctx)?,
            downloaded: Event::new(ctx)?,
        })
    }

    /// The device buffers, which `Staging::run` made before queueing any
    /// chunk.
    fn device(&self) -> Result<&SlotDevice> {
        self.device.as_ref().ok_or_else(|| Error::Other("internal: a staging slot without device buffers".into()))
    }
}

/// The reusable state of staged scans on one executor.
///
/// Fields drop in order, and the context must outlive every handle made in
/// it: it comes last.
pub(crate) struct Staging {
    upload: Stream,
    download: Stream,
    slots: Vec<Slot>,
    /// Captures the caller's stream before a plain transfer, which must not
    /// overwrite or read device memory before the work queued there.
    ready: Event,
    /// Two carry items: chunk k reads slot (k - 1) % 2 and writes k % 2.
    carry: DeviceBytes,
    ctx: Arc<CudaContext>,
}

impl Drop for Staging {
    fn drop(&mut self) {
        // Frees (in the fields' drops) act on the current context.
        let _ = self.ctx.bind_to_thread();
    }
}

impl Staging {
    pub(crate) fn new(ctx: &Arc<CudaContext>) -> Result<Staging> {
        Ok(Staging {
            upload: Stream::new(ctx)?,
            download: Stream::new(ctx)?,
            slots: Vec::new(),
            ready: Event::new(ctx)?,
            carry: DeviceBytes::new(ctx, 2 * CARRY_BYTES)?,
            ctx: ctx.clone(),
        })
    }

    /// Slots of at least `bytes` each (with their device buffers when
    /// `device`), bound to this thread. Called between runs only, when no
    /// copy is pending (every run and transfer waits for all of its work).
    fn reserve(&mut self, bytes: usize, device: bool) -> Result<()> {
        // Frees and allocations act on the current context.
        self.ctx.bind_to_thread().map_err(|e| driver_error("binding the context", e))?;
        // Slots are made at least the default's smallest chunk (4 MiB), as
        // they always were for a small first call, so that the next larger
        // one reuses them.
        let bytes = bytes.max(ChunkPolicy::default().min_bytes);
        if !self.slots.first().is_some_and(|s| s.pinned_in.len() >= bytes) {
            self.slots.clear();
            let bytes = bytes
                .checked_next_power_of_two()
                .ok_or_else(|| Error::TooLarge { what: format!("staging buffers of {bytes} bytes") })?;
            self.slots = (0..SLOTS).map(|_| Slot::new(&self.ctx, bytes)).collect::<Result<_>>()?;
        }
        if device {
            for slot in self.slots.iter_mut().filter(|s| s.device.is_none()) {
                let bytes = slot.pinned_in.len();
                slot.device = Some(SlotDevice {
                    dev_in: DeviceBytes::new(&self.ctx, bytes)?,
                    dev_out: DeviceBytes::new(&self.ctx, bytes)?,
                });
            }
        }
        Ok(())
    }

    /// Scans host bytes holding items of `item_size` bytes, chunk by chunk:
    /// `scan(src, dst, items, carry)` queues the scan of one chunk on the
    /// `compute` stream. Returns when the output is complete on the host, or
    /// at the first failure (after every queued copy has finished, so that
    /// nothing writes to the output later).
    pub(crate) fn run(
        &mut self,
        operands: HostBytes<'_>,
        item_size: usize,
        reverse: bool,
        policy: ChunkPolicy,
        compute: sys::CUstream,
        scan: &mut dyn FnMut(u64, u64, usize, Carry) -> Result<()>,
    ) -> Result<()> {
        if item_size == 0 || item_size > CARRY_BYTES {
            return Err(Error::Other(format!("internal: staged scans take items of 1 to {CARRY_BYTES} bytes")));
        }
        let total = match &operands {
            HostBytes::Into { src, .. } => src.len(),
            HostBytes::InPlace(data) => data.len(),
        };
        if total == 0 {
            return Ok(());
        }
        // A chunk holds at most the whole input (a tuned chunk size,
        // `Tuning::host_chunk_bytes`, may ask for more).
        let items = total / item_size;
        let chunk_bytes = policy.chunk_items(items, item_size).min(items) * item_size;
        self.reserve(chunk_bytes, true)?;
        // Each chunk: where to read it (None: in place, from its output).
        let mut chunks: Vec<(Option<&Bytes>, &mut Bytes)> = match operands {
            HostBytes::Into { src, dst } => {
                src.chunks(chunk_bytes).map(Some).zip(dst.chunks_mut(chunk_bytes)).collect()
            }
            HostBytes::InPlace(data) => data.chunks_mut(chunk_bytes).map(|d| (None, d)).collect(),
        };
        if reverse {
            chunks.reverse();
        }
        let (slots, ctx) = (&self.slots, &self.ctx);
        let (upload, download) = (&self.upload, &self.download);
        let carry_at = |k: usize| self.carry.ptr + (k % 2 * CARRY_BYTES) as u64;

        let (to_drain, drain_jobs) = mpsc::channel::<(usize, &mut Bytes)>();
        let (drained_tx, drained) = mpsc::channel::<Result<()>>();
        std::thread::scope(|scope| {
            scope.spawn(move || {
                let _ = ctx.bind_to_thread();
                for (s, dst) in drain_jobs {
                    let slot = &slots[s];
                    let done = slot.downloaded.synchronize().map(|()| {
                        // SAFETY: the download into pinned_out[s] is complete,
                        // and the next one waits for this drain's message.
                        copy(unsafe { slot.pinned_out.head(dst.len()) }, dst);
                    });
                    let failed = done.is_err();
                    if drained_tx.send(done).is_err() || failed {
                        break;
                    }
                }
            });
            let mut finished = 0; // chunks drained
            let queue = || -> Result<usize> {
                let count = chunks.len();
                for (k, (src, dst)) in chunks.into_iter().enumerate() {
                    let slot = &slots[k % SLOTS];
                    let bytes = dst.len();
                    slot.uploaded.synchronize()?;
                    let src: &Bytes = match src {
                        Some(src) => src,
                        None => dst,
                    };
                    // SAFETY: the last upload from pinned_in[s] is complete,
                    // and the next is queued below, after this copy.
                    copy(src, unsafe { slot.pinned_in.head_mut(bytes) });
                    upload.wait(&slot.scanned)?;
                    let device = slot.device()?;
                    // SAFETY: `bytes` fit both buffers (slots hold a chunk).
                    unsafe {
                        sys::cuMemcpyHtoDAsync_v2(device.dev_in.ptr, slot.pinned_in.ptr().cast(), bytes, upload.0)
                    }
                    .result()
                    .map_err(|e| driver_error("staged upload", e))?;
                    slot.uploaded.record(upload.0)?;
                    slot.uploaded.block(compute)?;
                    slot.downloaded.block(compute)?;
                    let carry = Carry { from: if k == 0 { 0 } else { carry_at(k - 1) }, to: carry_at(k) };
                    scan(device.dev_in.ptr, device.dev_out.ptr, bytes / item_size, carry)?;
                    slot.scanned.record(compute)?;
                    wait_drained(&drained, (k + 1).saturating_sub(SLOTS), &mut finished)?;
                    download.wait(&slot.scanned)?;
                    // SAFETY: as for the upload; pinned_out[s] is drained.
                    unsafe {
                        sys::cuMemcpyDtoHAsync_v2(slot.pinned_out.ptr().cast(), device.dev_out.ptr, bytes, download.0)
                    }
                    .result()
                    .map_err(|e| driver_error("staged download", e))?;
                    slot.downloaded.record(download.0)?;
                    to_drain
                        .send((k % SLOTS, dst))
                        .map_err(|_| Error::Other("internal: the drain thread stopped".into()))?;
                }
                Ok(count)
            };
            let queued = queue();
            drop(to_drain);
            let drained_all = match queued {
                Ok(count) => wait_drained(&drained, count, &mut finished),
                Err(e) => Err(e),
            };
            // On a failure, wait for whatever was queued before returning.
            if drained_all.is_err() {
                let _ = upload.synchronize();
                let _ = download.synchronize();
                // SAFETY: a live stream.
                let _ = unsafe { result::stream::synchronize(compute) };
            }
            drained_all
        })
    }

    /// Copies host bytes to `dst` on the device through the pinned slots: the
    /// caller's thread (and the copy threads) fill slot k % SLOTS while the
    /// copy engine uploads the chunks before it. The copies start after the
    /// work queued on `after` so far and are complete when this returns, also
    /// on a failure (so nothing reads `src` later).
    pub(crate) fn upload(
        &mut self,
        src: &Bytes,
        dst: sys::CUdeviceptr,
        after: sys::CUstream,
        policy: ChunkPolicy,
    ) -> Result<()> {
        let Some(chunk) = self.prepare_transfer(src.len(), policy)? else {
            return Ok(());
        };
        let (slots, upload) = (&self.slots, &self.upload);
        self.ready.record(after)?;
        upload.wait(&self.ready)?;
        let queued = src.chunks(chunk).enumerate().try_for_each(|(k, piece)| {
            let slot = &slots[k % SLOTS];
            slot.uploaded.synchronize()?;
            // SAFETY: the last upload from pinned_in[s] is complete, and the
            // next is queued below, after this copy.
            copy(piece, unsafe { slot.pinned_in.head_mut(piece.len()) });
            // SAFETY: `piece` fits the slot (slots hold a chunk) and lies
            // inside the destination (the caller's `src.len()` bytes at `dst`).
            unsafe {
                sys::cuMemcpyHtoDAsync_v2(dst + (k * chunk) as u64, slot.pinned_in.ptr().cast(), piece.len(), upload.0)
            }
            .result()
            .map_err(|e| driver_error("staged upload", e))?;
            slot.uploaded.record(upload.0)
        });
        let synced = upload.synchronize();
        queued.and(synced)
    }

    /// Copies `dst.len()` bytes from `src` on the device into host `dst`
    /// through the pinned slots: the copy engine downloads up to SLOTS chunks
    /// ahead while the caller's thread (and the copy threads) copy the
    /// earliest one out. Starts after the work queued on `after` so far (the
    /// kernels that wrote `src`); returns when `dst` is complete, or at the
    /// first failure once every queued copy has finished.
    pub(crate) fn download(
        &mut self,
        src: sys::CUdeviceptr,
        dst: &mut Bytes,
        after: sys::CUstream,
        policy: ChunkPolicy,
    ) -> Result<()> {
        let total = dst.len();
        let Some(chunk) = self.prepare_transfer(total, policy)? else {
            return Ok(());
        };
        let (slots, download) = (&self.slots, &self.download);
        self.ready.record(after)?;
        download.wait(&self.ready)?;
        let pieces = total.div_ceil(chunk);
        let queue = |k: usize| -> Result<()> {
            let slot = &slots[k % SLOTS];
            let bytes = chunk.min(total - k * chunk);
            // SAFETY: `bytes` fit the slot and lie inside the source; the
            // slot's pinned_out was copied out (below) before chunk k is queued.
            unsafe {
                sys::cuMemcpyDtoHAsync_v2(slot.pinned_out.ptr().cast(), src + (k * chunk) as u64, bytes, download.0)
            }
            .result()
            .map_err(|e| driver_error("staged download", e))?;
            slot.downloaded.record(download.0)
        };
        let copied = (0..pieces.min(SLOTS)).try_for_each(queue).and_then(|()| {
            dst.chunks_mut(chunk).enumerate().try_for_each(|(k, piece)| {
                let slot = &slots[k % SLOTS];
                slot.downloaded.synchronize()?;
                // SAFETY: the download into pinned_out[s] is complete, and the
                // next one into it is queued only after this copy.
                copy(unsafe { slot.pinned_out.head(piece.len()) }, piece);
                if k + SLOTS < pieces {
                    queue(k + SLOTS)?;
                }
                Ok(())
            })
        });
        let synced = download.synchronize();
        copied.and(synced)
    }

    /// The chunk size of a plain transfer of `total` bytes (None for none),
    /// with the slots' pinned buffers reserved for it. Chunks are cut in
    /// bytes, at least [`MIN_TRANSFER_CHUNK`] (a tuned size may be smaller).
    fn prepare_transfer(&mut self, total: usize, policy: ChunkPolicy) -> Result<Option<usize>> {
        if total == 0 {
            return Ok(None);
        }
        let chunk = policy.chunk_items(total, 1).max(MIN_TRANSFER_CHUNK).min(total);
        self.reserve(chunk, false)?;
        Ok(Some(chunk))
    }
}

/// Receives drain reports until `upto` chunks are drained in all.
fn wait_drained(drained: &mpsc::Receiver<Result<()>>, upto: usize, finished: &mut usize) -> Result<()> {
    while *finished < upto {
        drained.recv().map_err(|_| Error::Other("internal: the drain thread stopped".into()))??;
        *finished += 1;
    }
    Ok(())
}

/// Copies `src` into `dst` (same length) on the host, split over rayon's
/// threads when large: one thread copies at a fraction of what the memory
/// and the link move.
///
/// Measured on the H200 host against this plain form (f32 add from a host
/// `Vec`, x the pinned link's bound): non-temporal stores on a pool of its
/// own of 8 threads (cores - 2, so that the two threads waiting on the GPU
/// keep a core each) ran at 0.61-0.68 at 2^24 and 2^28, where this ran at
/// 0.75-0.82 and 0.92-1.01.
///
/// The pieces go to a pool of their own ([`copy_pool`]), never to rayon's
/// global one: a staged scan holds the executor's staging lock and blocks
/// its thread in the pipeline's waits, so when it was called from a rayon
/// task and no other worker was free (one worker, or every worker calling
/// a scan, all but one waiting for the lock), the drain thread's copy waited
/// for a worker that waited for the drain: a deadlock. A worker of any rayon
/// pool copies alone: waiting for another pool, it would run its own pool's
/// pending tasks meanwhile, and one of them may be a scan on this executor,
/// which would wait for the lock its own thread holds. (The figures above
/// are for rayon's global pool; this one, of the same size, has not been
/// timed yet: it was written on a machine without a GPU.)
fn copy(src: &Bytes, dst: &mut Bytes) {
    const PIECE: usize = 256 << 10;
    match copy_pool() {
        Some(pool) if src.len() > PIECE && rayon::current_thread_index().is_none() => pool.install(|| {
            dst.par_chunks_mut(PIECE).zip(src.par_chunks(PIECE)).for_each(|(d, s)| d.copy_from_slice(s));
        }),
        _ => dst.copy_from_slice(src),
    }
}

/// The threads of the staged copies (as many as rayon's global pool has by
/// default), made on first use; `None` if the system refused them (the
/// copies then run on one thread).
fn copy_pool() -> Option<&'static rayon::ThreadPool> {
    static POOL: OnceLock<Option<rayon::ThreadPool>> = OnceLock::new();
    POOL.get_or_init(|| rayon::ThreadPoolBuilder::new().thread_name(|i| format!("scan-cuda-copy-{i}")).build().ok())
        .as_ref()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_are_exact_for_every_alignment_and_length() {
        let src: Vec<MaybeUninit<u8>> =
            (0..(3 << 20) + 77).map(|i| MaybeUninit::new((i * 7 + i / 251) as u8)).collect();
        for (from, to, len) in
            [(0, 0, 0), (1, 3, 5), (3, 0, 100), (5, 9, 4096 + 13), (0, 7, (3 << 20) + 60), (7, 1, 1 << 20)]
        {
            let mut dst = vec![MaybeUninit::new(0u8); len + to + 8];
            copy(&src[from..from + len], &mut dst[to..to + len]);
            // SAFETY: every byte of both was initialised above.
            let (got, want) = unsafe {
                (
                    std::mem::transmute::<&[MaybeUninit<u8>], &[u8]>(&dst[to..to + len]),
                    std::mem::transmute::<&[MaybeUninit<u8>], &[u8]>(&src[from..from + len]),
                )
            };
            assert!(got == want, "from {from} to {to}, {len} bytes");
            assert!(
                dst[..to].iter().chain(&dst[to + len..]).all(|b| unsafe { b.assume_init() } == 0),
                "outside the range"
            );
        }
    }

    /// Every worker of rayon's global pool busy (as when a scan is called
    /// from each of them, all but one waiting for the staging lock): a
    /// copy from another thread, the drain's, still finishes. On the global
    /// pool it waited for a worker, and the scan holding the lock for it.
    #[test]
    fn copies_finish_while_every_worker_of_the_global_pool_is_blocked() {
        let workers = rayon::current_num_threads();
        let release = Arc::new(std::sync::Barrier::new(workers + 1));
        let blocker = release.clone();
        rayon::spawn_broadcast(move |_| {
            blocker.wait();
        });
        let (done_tx, done) = mpsc::channel();
        let copier = std::thread::spawn(move || {
            let src = vec![MaybeUninit::new(7u8); 4 << 20];
            let mut dst = vec![MaybeUninit::new(0u8); 4 << 20];
            copy(&src, &mut dst);
            let _ = done_tx.send(dst.iter().all(|b| unsafe { b.assume_init() } == 7));
        });
        let finished = done.recv_timeout(std::time::Duration::from_secs(20));
        release.wait();
        copier.join().unwrap();
        assert_eq!(finished, Ok(true), "the copy waited for rayon's global pool");
    }

    #[test]
    fn chunks_are_an_eighth_of_the_input_within_4_and_16_mib() {
        let (policy, mib) = (ChunkPolicy::default(), 1usize << 20);
        assert_eq!(policy.chunk_items(1, 4), mib);
        assert_eq!(policy.chunk_items(16 * mib, 4), 2 * mib); // 64 MiB: 8 MiB chunks
        assert_eq!(policy.chunk_items(1 << 28, 4), 4 * mib); // 1 GiB: 16 MiB chunks
        assert_eq!(policy.chunk_items(100, 1 << 30), 1); // items above the cap: one each
        assert_eq!(ChunkPolicy::fixed(10).chunk_items(1000, 4), 2);
        assert_eq!(ChunkPolicy::fixed(1).chunk_items(1000, 4), 1);
    }
}
