// Blelloch multi-block scan, pass 1: the block scan, written once against
// `template <class Op>` (see scan_core::CudaSource for the operator's shape).
// Layered like CUB:
//
//   thread  each thread owns two runs of K consecutive items (2 "slots" per
//           thread, as in GPU Gems 3 ch. 39) and reduces / rescans them
//           sequentially in registers;
//   block   Blelloch's work-efficient scan of the 2 * THREADS run totals in
//           shared memory, with bank-conflict-free padding.
//
// A tile holds 2 * THREADS * K items; the host driver (scan_core::blelloch::
// scan_into / scan_in_place) numbers tiles in scan order and handles any length
// by scanning the tile totals recursively and calling add_prefixes below.
//
// Indices are 64-bit everywhere: lengths past 2^31 items are supported.

namespace scan {

// One padding slot every 32 items, so that strided shared-memory accesses
// (the sweeps' `2 * d * k` pattern and the K-strided runs) hit distinct banks.
__device__ __forceinline__ unsigned conflict_free(unsigned i) { return i + (i >> 5); }

// A tile's items in scan order. A reverse scan is the forward scan of the
// reversed sequence (scan_core::Direction), so only the addressing changes:
// item p of a tile lives at `base[p]` or `base[-p]`. The direction is a
// template parameter so that the unrolled loops address `base` plus constant
// offsets (one register, not one 64-bit address per item); the one 64-bit
// computation is the base. `Item` may be const-qualified (a read-only view).
template <class Item, bool REVERSE>
struct TileView {
    Item* base;
    unsigned valid;  // items of this tile inside [0, len)

    __device__ __forceinline__ TileView(Item* data, u64 len, u64 start, unsigned tile) {
        const u64 left = len - start;
        valid = left < tile ? (unsigned)left : tile;
        base = REVERSE ? data + (len - 1 - start) : data + start;
    }
    __device__ __forceinline__ Item& operator[](unsigned p) const { return REVERSE ? base[-(int)p] : base[p]; }
};

// Block layer: exclusive Blelloch scan of `n = 2 * THREADS` slots in place
// (`slots` padded by conflict_free); returns the combination of all slots to
// every thread. The left operand is always the earlier slot: non-commutative
// operators are exact.
template <class Op, int THREADS>
__device__ __forceinline__ typename Op::Item blelloch_exclusive(typename Op::Item* slots) {
    typedef typename Op::Item Item;
    const unsigned tid = threadIdx.x;
    const unsigned n = 2 * THREADS;
    unsigned offset = 1;
    // Up-sweep: build the tree of partial combinations; the root holds the total.
    for (unsigned d = n >> 1; d > 0; d >>= 1) {
        __syncthreads();
        if (tid < d) {
            unsigned ai = offset * (2 * tid + 1) - 1;
            unsigned bi = offset * (2 * tid + 2) - 1;
            ai = conflict_free(ai);
            bi = conflict_free(bi);
            slots[bi] = Op::combine(slots[ai], slots[bi]);
        }
        offset <<= 1;
    }
    __syncthreads();
    const Item total = slots[conflict_free(n - 1)];
    __syncthreads();
    if (tid == 0) slots[conflict_free(n - 1)] = Op::identity();
    // Down-sweep: the left child gets its parent's prefix, the right child
    // prefix ∘ left subtree.
    for (unsigned d = 1; d < n; d <<= 1) {
        offset >>= 1;
        __syncthreads();
        if (tid < d) {
            unsigned ai = offset * (2 * tid + 1) - 1;
            unsigned bi = offset * (2 * tid + 2) - 1;
            ai = conflict_free(ai);
            bi = conflict_free(bi);
            Item left = slots[ai];
            Item prefix = slots[bi];
            slots[ai] = prefix;
            slots[bi] = Op::combine(prefix, left);
        }
    }
    __syncthreads();
    return total;
}

// Device layer, pass 1: scans tile `blockIdx.x` of `src[0, len)` into the same
// tile of `dst` (inclusive or exclusive) and writes its total to
// `totals[blockIdx.x]` when `totals` is not null.
//
// In place, `src == dst`: the pointers are deliberately not restrict-qualified.
// That is sound because each CUDA block reads and writes only its own tile, and
// reads every item of it (the striped loads below) before the `__syncthreads`
// that precedes the first store to it.
//
// Shared memory (dynamic): the tile, staged so that global loads and stores
// are coalesced (striped) while each thread works on consecutive items
// (blocked), then the 2 * THREADS run totals.
template <class Op, int THREADS, int K, bool REVERSE, bool INCLUSIVE>
__device__ __forceinline__ void scan_tile(const typename Op::Item* src, typename Op::Item* dst, u64 len,
                                          typename Op::Item* totals) {
    typedef typename Op::Item Item;
    const unsigned TILE = 2 * THREADS * K;
    extern __shared__ __align__(16) unsigned char smem_raw[];
    Item* tile = reinterpret_cast<Item*>(smem_raw);
    Item* slots = tile + conflict_free(TILE);

    const unsigned tid = threadIdx.x;
    const u64 start = (u64)blockIdx.x * TILE;
    const TileView<const Item, REVERSE> in(src, len, start, TILE);
    const TileView<Item, REVERSE> out(dst, len, start, TILE);

    // Load striped (coalesced) into registers, padding past the end with the
    // identity, then stage in shared memory.
    Item v[2 * K];
#pragma unroll
    for (unsigned j = 0; j < 2 * K; ++j) {
        const unsigned p = j * THREADS + tid;
        v[j] = p < in.valid ? in[p] : Op::identity();
    }
#pragma unroll
    for (unsigned j = 0; j < 2 * K; ++j) tile[conflict_free(j * THREADS + tid)] = v[j];
    __syncthreads();

    // Thread layer: reduce each of this thread's two runs of K items.
    for (unsigned r = 0; r < 2; ++r) {
        const unsigned slot = tid + r * THREADS;
        Item acc = tile[conflict_free(slot * K)];
        for (unsigned i = 1; i < K; ++i) acc = Op::combine(acc, tile[conflict_free(slot * K + i)]);
        slots[conflict_free(slot)] = acc;
    }

    const Item total = blelloch_exclusive<Op, THREADS>(slots);

    // Thread layer: rescan each run from its exclusive prefix.
    for (unsigned r = 0; r < 2; ++r) {
        const unsigned slot = tid + r * THREADS;
        Item acc = slots[conflict_free(slot)];
        for (unsigned i = 0; i < K; ++i) {
            const unsigned p = conflict_free(slot * K + i);
            const Item x = tile[p];
            const Item next = Op::combine(acc, x);
            tile[p] = INCLUSIVE ? next : acc;
            acc = next;
        }
    }
    __syncthreads();

    // Store striped (coalesced).
#pragma unroll
    for (unsigned j = 0; j < 2 * K; ++j) {
        const unsigned p = j * THREADS + tid;
        if (p < out.valid) out[p] = tile[conflict_free(p)];
    }
    if (totals != 0 && tid == 0) totals[blockIdx.x] = total;
}

}  // namespace scan
