//! The fast path: threads over cache-sized tiles, chained by a look-back.
//!
//! Per tile (claimed in scan order from an atomic counter), a worker
//! 1. scans the tile from the input as [`CHAINS`](crate::kernel::CHAINS)
//!    independent chains ([`kernel::local_scan`]), reading the input once,
//!    into the output (or, when streaming, into a staging buffer);
//! 2. publishes the tile's aggregate, looks back for the tile's prefix
//!    ([`lookback`]) and publishes its inclusive prefix;
//! 3. combines each chunk with its prefix, in cache;
//! 4. when the output is too large to stay in cache, copies the staging
//!    buffer out with non-temporal stores ([`stream`]).
//!
//! For products of f32 and half floats (`ScanOp::multiplies_narrow_floats`),
//! whose chains from the identity can stick on subnormals, steps 1 and 3
//! trade places ([`kernel::reduces_first`]): step 1 only reduces each chunk
//! ([`kernel::chain_totals`]), and step 3 scans the tile, still in cache,
//! each chain from its prefix ([`kernel::seeded_scan`]): the input is read
//! twice, the second time from cache.
//!
//! So the input is read once and the output written once, without the
//! read-for-ownership of ordinary stores: the bytes a `memcpy` moves. A worker
//! whose predecessor is late (another thread descheduled, on a busy machine)
//! does not wait: it keeps up to [`LOOKAHEAD`] scanned tiles pending and goes
//! on scanning, and waits only when they are all pending.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use scan_core::{ScanOp, ScanSpec};

use crate::kernel::{self, Chunks};
use crate::lookback::{self, AbortOnUnwind, Slot};
use crate::stream;

/// Bytes of one chunk of a tile (a tile is [`CHAINS`](kernel::CHAINS) chunks):
/// a tile (~60 KiB) and the input it is read from stay in a core's L2.
///
/// Not a multiple of 4 KiB, on purpose: the chunks are scanned side by side,
/// so their streams of loads and stores would otherwise sit at the same
/// offset within a page, map to the same L1 set and evict each other (and
/// trip 4K-aliasing stalls). 448 bytes (7 lines) less than 8 KiB spreads the
/// 8 streams over 8 different sets.
const CHUNK_BYTES: usize = 8192 - 448;

/// Outputs of [`Algorithm::Tiled`](crate::Algorithm::Tiled) of at least this
/// many bytes are written with non-temporal stores: they would not stay in
/// cache anyway, and skipping the read-for-ownership saves a third of the
/// traffic. Smaller outputs stay in cache for whoever reads them next.
pub const STREAM_MIN_BYTES: usize = 8 << 20;

/// Tiles a worker may have scanned but not finished (waiting for their
/// prefix), each in its own staging buffer when streaming.
const LOOKAHEAD: usize = 4;

/// A worker takes at least this many tiles on average; below that, starting a
/// thread costs more than it saves.
const MIN_TILES_PER_WORKER: usize = 4;

/// Items per tile of the tiled path for items of type `T`.
///
/// Public so that tests and benchmarks can probe the sizes around a tile.
///
/// ```
/// assert_eq!(scan_cpu::tile_len::<f32>(), 15488);
/// ```
pub fn tile_len<T>() -> usize {
    kernel::CHAINS * (CHUNK_BYTES / std::mem::size_of::<T>().max(1)).max(1)
}

/// The input and output of one scan, shared by the workers. Each tile's range
/// of both is touched by the one worker that claimed the tile.
#[derive(Clone, Copy)]
pub(crate) struct Buffers<T> {
    pub src: *const T,
    pub dst: *mut T,
    pub len: usize,
}

// SAFETY: workers touch disjoint tile ranges of the buffers (see `Buffers`).
unsafe impl<T: Send> Send for Buffers<T> {}
// SAFETY: as above.
unsafe impl<T: Sync> Sync for Buffers<T> {}

/// Scans `bufs` with up to `threads` threads.
///
/// # Safety
/// `bufs.src` is valid for reads and `bufs.dst` for writes of `bufs.len`
/// items (`dst` may be uninitialized), and they are either equal (in place)
/// or do not overlap. Nothing else accesses them during the call.
pub(crate) unsafe fn scan<Op: ScanOp>(bufs: Buffers<Op::Item>, spec: ScanSpec, threads: usize, stream: bool) {
    match (spec.is_reverse(), spec.is_inclusive()) {
        (false, true) => scan_with::<Op, false, true>(bufs, threads, stream),
        (false, false) => scan_with::<Op, false, false>(bufs, threads, stream),
        (true, true) => scan_with::<Op, true, true>(bufs, threads, stream),
        (true, false) => scan_with::<Op, true, false>(bufs, threads, stream),
    }
}

/// Whether a tiled scan of `len` items is the sequential fold, bit for bit:
/// one tile ([`tile_len`]) scanned as one chain from the identity
/// ([`kernel::is_one_chain`]), so callers may run the fold instead.
pub(crate) fn is_sequential_fold<T>(len: usize) -> bool {
    len <= tile_len::<T>() && kernel::is_one_chain(len)
}

/// Whether a scan of `len` items should write its output with non-temporal stores.
pub(crate) fn should_stream<T>(len: usize) -> bool {
    len.saturating_mul(std::mem::size_of::<T>()) >= STREAM_MIN_BYTES
}

/// # Safety
/// As [`scan`].
unsafe fn scan_with<Op: ScanOp, const REV: bool, const INCL: bool>(
    bufs: Buffers<Op::Item>,
    threads: usize,
    stream: bool,
) {
    let tile = tile_len::<Op::Item>();
    let tiles = bufs.len.div_ceil(tile);
    let workers = threads.min(tiles / MIN_TILES_PER_WORKER).max(1);
    if workers == 1 {
        let mut buf = staging::<Op>(stream, tile.min(bufs.len));
        let mut carry: Option<Op::Item> = None;
        for b in 0..tiles {
            let started = start_tile::<Op, REV, INCL>(bufs, b, &mut buf, stream);
            let prefix = carry;
            carry = Some(prefix.map_or(started.chunks.total, |p| Op::combine(p, started.chunks.total)));
            finish_tile::<Op, REV, INCL>(bufs, &started, &mut buf, stream, prefix);
        }
        return;
    }

    let slots: Vec<Slot<Op::Item>> = (0..tiles).map(|_| Slot::new()).collect();
    let next_tile = AtomicUsize::new(0);
    let abort = AtomicBool::new(false);
    let work = || {
        let _raise_on_unwind = AbortOnUnwind(&abort);
        // A worker keeps up to LOOKAHEAD tiles scanned but not yet finished,
        // oldest first: when a predecessor is late (its thread descheduled,
        // say) it scans further tiles instead of waiting, so the workers stay
        // busy on a machine that is not all theirs.
        let mut buffers: Vec<Vec<Op::Item>> = (0..LOOKAHEAD).map(|_| staging::<Op>(stream, tile)).collect();
        let mut pending: Pending<Op::Item> = VecDeque::with_capacity(LOOKAHEAD);
        let mut claiming = true;
        loop {
            // Finish every pending tile whose prefix is known, oldest first.
            while let Some((started, _)) = pending.front() {
                let Some(prefix) = lookback::ready_prefix(&slots, started.b, Op::combine) else {
                    break;
                };
                let Some((started, mut buf)) = pending.pop_front() else { break };
                slots[started.b].publish_inclusive(Op::combine(prefix, started.chunks.total));
                finish_tile::<Op, REV, INCL>(bufs, &started, &mut buf, stream, Some(prefix));
                buffers.push(buf);
            }
            // Scan a new tile while there is room. Tiles are claimed in order,
            // so every tile a worker waits on has been claimed by a running
            // worker, which publishes its aggregate without waiting on
            // anything: the look-back cannot deadlock.
            if claiming {
                if let Some(mut buf) = buffers.pop() {
                    let b = next_tile.fetch_add(1, Ordering::Relaxed);
                    if b >= tiles {
                        claiming = false;
                        buffers.push(buf);
                        continue;
                    }
                    let started = start_tile::<Op, REV, INCL>(bufs, b, &mut buf, stream);
                    if b == 0 {
                        slots[0].publish_inclusive(started.chunks.total);
                        finish_tile::<Op, REV, INCL>(bufs, &started, &mut buf, stream, None);
                        buffers.push(buf);
                    } else {
                        slots[b].publish_aggregate(started.chunks.total);
                        pending.push_back((started, buf));
                    }
                    continue;
                }
            }
            // No room or no tiles left: wait for the oldest pending tile.
            let Some((started, mut buf)) = pending.pop_front() else {
                return;
            };
            let Some(prefix) = lookback::exclusive_prefix(&slots, started.b, &abort, Op::combine) else {
                return;
            };
            slots[started.b].publish_inclusive(Op::combine(prefix, started.chunks.total));
            finish_tile::<Op, REV, INCL>(bufs, &started, &mut buf, stream, Some(prefix));
            buffers.push(buf);
        }
    };
    // Fewer threads than asked for (the OS refused one) is still correct:
    // the remaining workers claim every tile.
    crate::parallel::run_on_threads(workers - 1, work);
}

/// A worker's staging buffer for tiles on their way to non-temporal stores
/// (none when the output is written directly).
fn staging<Op: ScanOp>(stream: bool, len: usize) -> Vec<Op::Item> {
    if stream {
        vec![Op::identity(); len]
    } else {
        Vec::new()
    }
}

/// A tile scanned chunk by chunk (or only reduced, [`kernel::reduces_first`]),
/// waiting for its prefix.
struct Started<T> {
    /// The tile's number in scan order.
    b: usize,
    /// Its first buffer index.
    lo: usize,
    chunks: Chunks<T>,
}

/// A worker's started tiles, oldest first, each with the buffer it is in.
type Pending<T> = VecDeque<(Started<T>, Vec<T>)>;

/// Scans tile `b` (in scan order) of `bufs` chunk by chunk: into the output
/// when not streaming, else into `buf` (at least a tile long). For an
/// operator that [`kernel::reduces_first`], only reduces its chunks and
/// writes nothing.
///
/// # Safety
/// As [`scan`]; tile `b` is owned by the caller.
#[inline]
unsafe fn start_tile<Op: ScanOp, const REV: bool, const INCL: bool>(
    bufs: Buffers<Op::Item>,
    b: usize,
    buf: &mut [Op::Item],
    stream: bool,
) -> Started<Op::Item> {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        return start_tile_avx2::<Op, REV, INCL>(bufs, b, buf, stream);
    }
    start_tile_portable::<Op, REV, INCL, false>(bufs, b, buf, stream)
}

/// [`start_tile`] compiled for AVX2, where the chains' selects (max, min,
/// segmented operators) are one instruction each instead of three, and
/// 4-byte items take the chains eight lanes at a time (kernel/wide.rs). The
/// same order of combination, so the results are bit for bit those of the
/// portable build; `f32 max` at 2^26 went from 0.28 to about 0.40 of memcpy
/// on this project's 2-core machine with the selects alone (add: unchanged).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn start_tile_avx2<Op: ScanOp, const REV: bool, const INCL: bool>(
    bufs: Buffers<Op::Item>,
    b: usize,
    buf: &mut [Op::Item],
    stream: bool,
) -> Started<Op::Item> {
    start_tile_portable::<Op, REV, INCL, true>(bufs, b, buf, stream)
}

#[inline(always)]
unsafe fn start_tile_portable<Op: ScanOp, const REV: bool, const INCL: bool, const AVX2: bool>(
    bufs: Buffers<Op::Item>,
    b: usize,
    buf: &mut [Op::Item],
    stream: bool,
) -> Started<Op::Item> {
    let tile = tile_len::<Op::Item>();
    let start = b * tile;
    let end = (start + tile).min(bufs.len);
    let (lo, n) = if REV { (bufs.len - end, end - start) } else { (start, end - start) };
    // SAFETY: [lo, lo + n) of both buffers is inside them and owned by this
    // tile; src == dst (in place) is allowed by `local_scan`; `buf` is the
    // worker's own allocation, distinct from both buffers.
    if kernel::reduces_first::<Op>() {
        let chunks = kernel::chain_totals::<Op, REV>(bufs.src.add(lo), n);
        return Started { b, lo, chunks };
    }
    let out = if stream { buf[..n].as_mut_ptr() } else { bufs.dst.add(lo) };
    let chunks = kernel::local_scan::<Op, REV, INCL, AVX2>(bufs.src.add(lo), out, n);
    Started { b, lo, chunks }
}

/// Given the combination of every tile before it (`None` for the first
/// tile), completes a started tile: fixes its chunks up in cache (or, for an
/// operator that [`kernel::reduces_first`], scans the tile from its prefix)
/// and, when streaming, copies `buf` to the output with non-temporal stores.
///
/// # Safety
/// As [`scan`]; `started` came from [`start_tile`] with the same `buf`.
#[inline]
unsafe fn finish_tile<Op: ScanOp, const REV: bool, const INCL: bool>(
    bufs: Buffers<Op::Item>,
    started: &Started<Op::Item>,
    buf: &mut [Op::Item],
    stream: bool,
    prefix: Option<Op::Item>,
) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        return finish_tile_avx2::<Op, REV, INCL>(bufs, started, buf, stream, prefix);
    }
    finish_tile_portable::<Op, REV, INCL, false>(bufs, started, buf, stream, prefix)
}

/// [`finish_tile`] compiled for AVX2, for the same reason as
/// [`start_tile_avx2`]: the fix-up's selects (max, min) are then 8 lanes
/// and one blend each, where the portable build had 4 lanes and
/// and/andnot/or. With the chains 8 lanes at a time (kernel/wide.rs) as
/// well, `f32 max` at 2^26 went from 18.4 GB/s to 22.0-26.0 GB/s on this
/// project's 2-core machine (3 runs of bench --cpu; add: 28-35 GB/s).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn finish_tile_avx2<Op: ScanOp, const REV: bool, const INCL: bool>(
    bufs: Buffers<Op::Item>,
    started: &Started<Op::Item>,
    buf: &mut [Op::Item],
    stream: bool,
    prefix: Option<Op::Item>,
) {
    finish_tile_portable::<Op, REV, INCL, true>(bufs, started, buf, stream, prefix)
}

#[inline(always)]
unsafe fn finish_tile_portable<Op: ScanOp, const REV: bool, const INCL: bool, const AVX2: bool>(
    bufs: Buffers<Op::Item>,
    started: &Started<Op::Item>,
    buf: &mut [Op::Item],
    stream: bool,
    prefix: Option<Op::Item>,
) {
    let n = started.chunks.len;
    let dst = bufs.dst.add(started.lo);
    if kernel::reduces_first::<Op>() {
        // Only reduced so far: scan the tile (its input still in cache) from
        // its prefix, each chain from its own.
        // SAFETY: the tile's n items of src are readable and of dst (or
        // `buf`, the worker's own) writable; src == dst (in place) is
        // allowed by `seeded_scan`.
        let out = if stream { buf[..n].as_mut_ptr() } else { dst };
        let seeds = kernel::seeds::<Op>(&started.chunks, prefix);
        kernel::seeded_scan::<Op, REV, INCL, AVX2>(bufs.src.add(started.lo), out, n, seeds);
        if stream {
            stream::copy_streaming(&buf[..n], dst);
        }
        return;
    }
    if stream {
        kernel::finish_tile::<Op, REV>(&mut buf[..n], &started.chunks, prefix);
        // SAFETY: the tile's n items of dst are writable and owned by it.
        stream::copy_streaming(&buf[..n], dst);
    } else {
        // SAFETY: `start_tile` initialized the tile's n items of the output;
        // nothing else views them.
        kernel::finish_tile::<Op, REV>(std::slice::from_raw_parts_mut(dst, n), &started.chunks, prefix);
    }
}
