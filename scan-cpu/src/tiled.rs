//! The fast path: threads over cache-sized tiles, chained by a look-back.
//!
//! Per tile (claimed in scan order from an atomic counter), a worker
//! 1. scans the tile from the input into its own cache-resident buffer as
//!    [`CHAINS`](crate::kernel::CHAINS) independent chains ([`kernel::local_scan`]),
//!    reading the input exactly once;
//! 2. publishes the tile's aggregate, looks back for the tile's prefix
//!    ([`lookback`]) and publishes its inclusive prefix;
//! 3. combines each chunk of the buffer with its prefix, in cache;
//! 4. copies the buffer to the output, with non-temporal stores when the output
//!    is too large to stay in cache ([`stream`]).
//!
//! So the input is read once and the output written once, without the
//! read-for-ownership of ordinary stores: the bytes a `memcpy` moves.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use scan_core::{ScanOp, ScanSpec};

use crate::kernel;
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
            scan_tile::<Op, REV, INCL>(bufs, b, &mut buf, stream, |total| {
                let prefix = carry;
                carry = Some(prefix.map_or(total, |p| Op::combine(p, total)));
                Some(prefix)
            });
        }
        return;
    }

    let slots: Vec<Slot<Op::Item>> = (0..tiles).map(|_| Slot::new()).collect();
    let next_tile = AtomicUsize::new(0);
    let abort = AtomicBool::new(false);
    let work = || {
        let _raise_on_unwind = AbortOnUnwind(&abort);
        let mut buf = staging::<Op>(stream, tile);
        loop {
            // Tiles are claimed in order, so every tile a worker waits on has
            // been claimed by a running worker: the look-back cannot deadlock.
            let b = next_tile.fetch_add(1, Ordering::Relaxed);
            if b >= tiles {
                return;
            }
            let finished = scan_tile::<Op, REV, INCL>(bufs, b, &mut buf, stream, |total| {
                if b == 0 {
                    slots[0].publish_inclusive(total);
                    return Some(None);
                }
                slots[b].publish_aggregate(total);
                let prefix = lookback::exclusive_prefix(&slots, b, &abort, Op::combine, Op::identity())?;
                slots[b].publish_inclusive(Op::combine(prefix, total));
                Some(Some(prefix))
            });
            if !finished {
                return;
            }
        }
    };
    std::thread::scope(|s| {
        for _ in 1..workers {
            // Fewer threads than asked for (the OS refused one) is still
            // correct: the remaining workers claim every tile.
            if std::thread::Builder::new().spawn_scoped(s, work).is_err() {
                break;
            }
        }
        work();
    });
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

/// Scans tile `b` (in scan order) of `bufs`, through `buf` when streaming. `prefix_of` gets the
/// tile's total and returns the combination of all earlier tiles (`Some(None)`
/// for the first tile), or `None` to give up (the tile is left unwritten and
/// `false` returned).
///
/// # Safety
/// As [`scan`]; tile `b` is owned by the caller.
#[inline]
unsafe fn scan_tile<Op: ScanOp, const REV: bool, const INCL: bool>(
    bufs: Buffers<Op::Item>,
    b: usize,
    buf: &mut [Op::Item],
    stream: bool,
    prefix_of: impl FnOnce(Op::Item) -> Option<Option<Op::Item>>,
) -> bool {
    let tile = tile_len::<Op::Item>();
    let start = b * tile;
    let end = (start + tile).min(bufs.len);
    let (lo, n) = if REV { (bufs.len - end, end - start) } else { (start, end - start) };

    let src = bufs.src.add(lo);
    let dst = bufs.dst.add(lo);
    if !stream {
        // Scan straight into the output and fix it up there while it is in
        // cache. SAFETY: [lo, lo + n) of both buffers is inside them and owned
        // by this tile; src == dst (in place) is allowed by `local_scan`.
        let chunks = kernel::local_scan::<Op, REV, INCL>(src, dst, n);
        let Some(prefix) = prefix_of(chunks.total) else {
            return false;
        };
        // SAFETY: `local_scan` initialized the n items; nothing else views them.
        kernel::finish_tile::<Op, REV>(std::slice::from_raw_parts_mut(dst, n), &chunks, prefix);
        return true;
    }
    // Scan into this worker's buffer, fix it up there, and stream it out.
    // SAFETY: as above, and `buf` is this worker's own allocation of n items,
    // distinct from both buffers.
    let buf = &mut buf[..n];
    let chunks = kernel::local_scan::<Op, REV, INCL>(src, buf.as_mut_ptr(), n);
    let Some(prefix) = prefix_of(chunks.total) else {
        return false;
    };
    kernel::finish_tile::<Op, REV>(buf, &chunks, prefix);
    stream::copy_streaming(buf, dst);
    true
}
