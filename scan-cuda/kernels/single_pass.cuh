// Device layer: the single-pass scan. One CUDA block scans one tile of
// THREADS * ITEMS items (its look-back reads 32 * LOOKBACK predecessors at a
// time) and chains it to its predecessors through the tile
// status (tile_status.cuh) and the look-back (lookback.cuh), so the input is
// read once and the output written once: the bytes a copy moves.
//
// Per block:
//  1. claim a tile number from the atomic counter (the last claimant resets
//     it for the next launch), in scan order;
//  2. each warp loads its segment and each lane reduces its run (thread);
//  3. warp scans and the warp totals give each thread its prefix within the
//     tile and the tile's aggregate (block);
//  4. warp 0 publishes the aggregate, looks back for the tile's exclusive
//     prefix and publishes the inclusive prefix; tile 0 publishes at once;
//  5. each lane rescans its run from its prefix and the warp stores it.
//
// A reverse scan is the forward scan of the reversed sequence: tile t covers
// the t-th block of items counted from the end, and only the addressing
// changes (exchange.cuh).
//
// `chaos` != 0 is a test mode: blocks claim tiles in an order unrelated to
// their index, and pause at random before publishing (sometimes skipping the
// aggregate), so the look-back meets every mix of statuses. The result must
// not change.

namespace scan {

__device__ __forceinline__ unsigned mix32(unsigned x) {
    x ^= x >> 16;
    x *= 0x7feb352du;
    x ^= x >> 15;
    x *= 0x846ca68bu;
    x ^= x >> 16;
    return x;
}

// A pseudo-random pause of 1 to 33 us for about 3 tiles in 8 (chaos mode).
__device__ __forceinline__ void chaos_pause(unsigned chaos, unsigned salt, i64 tile) {
    if (chaos == 0) return;
    const unsigned h = mix32(chaos ^ mix32((unsigned)tile * 2654435761u + salt));
    if ((h & 7u) < 3u) {
        for (unsigned i = 0; i <= (h >> 8) % 32u; ++i) __nanosleep(1000);
    }
}

template <class Op, int THREADS, int ITEMS, int LOOKBACK, bool REVERSE, bool INCLUSIVE, class Status>
__device__ __forceinline__ void single_pass(const typename Op::Item* src, typename Op::Item* dst, u64 len,
                                            u64* counter, Status status, unsigned epoch, unsigned chaos) {
    typedef typename Op::Item Item;
    typedef WarpExchange<Op, ITEMS, REVERSE> Exchange;
    typedef BlockScan<Op, THREADS> Block;
    typedef typename Exchange::Word Word;
    constexpr int WARPS = THREADS / 32;
    constexpr int TILE = THREADS * ITEMS;

    __shared__ __align__(16) Word exchange[WARPS][Exchange::SHARED_WORDS];
    __shared__ typename Block::Shared block;
    __shared__ Slot<Item> tile_prefix;
    __shared__ i64 claimed;

    // 1. The tile, in the order blocks start.
    if (threadIdx.x == 0) {
        if (chaos) {
            const unsigned late = (gridDim.x - 1u - blockIdx.x) % 16u;
            for (unsigned i = 0; i < late; ++i) __nanosleep(2000);
        }
        i64 t = 0;
        if (gridDim.x > 1) {
            t = (i64)atomicAdd(counter, 1ull);
            if (t == (i64)gridDim.x - 1) atomicExch(counter, 0ull);
        }
        claimed = t;
    }
    __syncthreads();
    const i64 tile = claimed;
    const u64 start = (u64)tile * TILE;
    const int valid = len - start < (u64)TILE ? (int)(len - start) : TILE;
    const int warp = (int)warp_id();
    Word* slice = exchange[warp];

    // 2. Load this warp's segment; scan position p of the segment is global
    // index `index(p)`.
    const u64 first = start + (u64)warp * Exchange::SEGMENT;  // scan position of the segment's first item
    const int seg_valid = valid - warp * Exchange::SEGMENT;
    auto index = [=](int p) -> u64 { return REVERSE ? len - 1 - (first + p) : first + p; };
    // The segment's lowest address when it is whole.
    const u64 base = REVERSE ? len - first - Exchange::SEGMENT : first;
    const bool whole = valid == TILE;
    if (whole && Exchange::aligned(src + base)) {
        Exchange::load_vectors(src + base, slice);
    } else {
        Exchange::load_items(src, index, seg_valid, slice);
    }
    __syncwarp();
    Item run[ITEMS];
    Exchange::read_run(slice, run);

    // 3. Prefix within the tile, and the tile's aggregate.
    Item aggregate;
    const Item within = Block::exclusive(thread_reduce<Op, ITEMS>(run), aggregate, block);

    // 4. The tile's prefix.
    Item prefix;
    if (tile == 0) {
        if (gridDim.x > 1 && threadIdx.x == 0) status.publish(0, status_code(epoch, STATUS_PREFIX), aggregate);
        prefix = within;
    } else {
        if (warp == 0) {
            const bool skip_aggregate = chaos && (mix32(chaos + (unsigned)tile) & 15u) == 0;
            if (lane_id() == 0 && !skip_aggregate) {
                chaos_pause(chaos, 1, tile);
                status.publish(tile, status_code(epoch, STATUS_AGGREGATE), aggregate);
            }
            const Item before = lookback<Op, LOOKBACK>(status, tile, epoch);
            if (lane_id() == 0) {
                chaos_pause(chaos, 2, tile);
                status.publish(tile, status_code(epoch, STATUS_PREFIX), Op::combine(before, aggregate));
                tile_prefix.get() = before;
            }
        }
        __syncthreads();
        prefix = Op::combine(tile_prefix.get(), within);
    }

    // 5. Rescan the run and store the segment.
    thread_scan<Op, ITEMS, INCLUSIVE>(run, prefix);
    Exchange::write_run(slice, run);
    __syncwarp();
    if (whole && Exchange::aligned(dst + base)) {
        Exchange::store_vectors(dst + base, slice);
    } else {
        Exchange::store_items(dst, index, seg_valid, slice);
    }
}

}  // namespace scan
