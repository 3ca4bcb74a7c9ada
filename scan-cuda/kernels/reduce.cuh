// Device layer: the total of a sequence, x[0] ∘ x[1] ∘ … ∘ x[n-1], in index
// order, so non-commutative operators are exact; with Flipped<Op>, the
// reverse order x[n-1] ∘ … ∘ x[0] (a reverse scan's total). Reads the items
// once and writes nothing else: the sharded scan's ranks (sharded.rs) learn
// their shards' totals this way before scanning, at the cost of a read.
//
// Two launches:
//  1. reduce_blocks: block b folds a contiguous range of tiles into
//     partials[b]. In a tile, warp w folds ROWS rows of 32 lanes, each lane
//     holding U consecutive items (one 16-byte vector when items divide 16),
//     so every load is coalesced: per row, the lane folds its U items, a
//     warp reduction (lower lanes on the left) joins the lanes, and lane 0
//     folds the row into the warp's total; the warps' totals join in warp
//     order, and the tiles in tile order.
//  2. reduce_partials: one warp folds the partials, in order, into *total
//     (the identity when there are none).

namespace scan {

// `Op` with its operands swapped: its index-order fold is Op's reverse fold.
template <class Op>
struct Flipped {
    typedef typename Op::Item Item;
    static __device__ __forceinline__ Item identity() { return Op::identity(); }
    static __device__ __forceinline__ Item combine(Item a, Item b) { return Op::combine(b, a); }
};

// Items a lane loads at once: a 16-byte vector's worth when items divide 16.
template <class Item>
struct ReduceUnit {
    static constexpr int ITEMS = (16 % sizeof(Item) == 0) ? (int)(16 / sizeof(Item)) : 1;
};

template <class Op, int WARPS, int ROWS>
__device__ __forceinline__ void reduce_blocks(const typename Op::Item* src, u64 len, typename Op::Item* partials) {
    typedef typename Op::Item Item;
    constexpr int U = ReduceUnit<Item>::ITEMS;
    constexpr u64 ROW = 32 * U, WARP_ITEMS = ROWS * ROW, TILE = WARPS * WARP_ITEMS;
    __shared__ Item warp_totals[WARPS];
    const unsigned lane = lane_id(), warp = warp_id();
    const u64 tiles = (len + TILE - 1) / TILE;
    const u64 first = tiles * blockIdx.x / gridDim.x, end = tiles * (blockIdx.x + 1) / gridDim.x;
    const bool aligned = ((u64)src & 15) == 0;
    Item block_total = Op::identity();
    for (u64 tile = first; tile < end; ++tile) {
        const u64 base = tile * TILE + warp * WARP_ITEMS;
        // Every row's loads first, so that ROWS of them are in flight.
        Item v[ROWS][U];
#pragma unroll
        for (int r = 0; r < ROWS; ++r) {
            const u64 at = base + r * ROW + lane * U;
            if (U > 1 && aligned && at + U <= len) {
                typedef Vector<typename Words<Item>::Word, 16> Vec;
                const Vec vec = *reinterpret_cast<const Vec*>(src + at);
                memcpy(&v[r][0], &vec, 16);
            } else {
#pragma unroll
                for (int u = 0; u < U; ++u) v[r][u] = at + u < len ? src[at + u] : Op::identity();
            }
        }
        Item warp_total = Op::identity();
#pragma unroll
        for (int r = 0; r < ROWS; ++r) {
            Item mine = v[r][0];
#pragma unroll
            for (int u = 1; u < U; ++u) mine = Op::combine(mine, v[r][u]);
            const Item row = warp_reduce<Op>(mine);
            if (lane == 0) warp_total = Op::combine(warp_total, row);
        }
        if (lane == 0) warp_totals[warp] = warp_total;
        __syncthreads();
        if (threadIdx.x == 0) {
#pragma unroll
            for (int w = 0; w < WARPS; ++w) block_total = Op::combine(block_total, warp_totals[w]);
        }
        __syncthreads();  // before warp_totals is written again
    }
    if (threadIdx.x == 0) partials[blockIdx.x] = block_total;
}

// One warp: *total = partials[0] ∘ … ∘ partials[count - 1].
template <class Op>
__device__ __forceinline__ void reduce_partials(const typename Op::Item* partials, u64 count,
                                                typename Op::Item* total) {
    typedef typename Op::Item Item;
    const unsigned lane = lane_id();
    if (threadIdx.x >= 32 || blockIdx.x != 0) return;
    // Lane l folds a contiguous run of the partials, the runs in lane order.
    const u64 per_lane = (count + 31) / 32;
    Item mine = Op::identity();
    for (u64 i = lane * per_lane; i < (lane + 1) * per_lane && i < count; ++i) mine = Op::combine(mine, partials[i]);
    const Item all = warp_reduce<Op>(mine);
    if (lane == 0) *total = all;
}

}  // namespace scan
