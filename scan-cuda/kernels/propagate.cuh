// Device layer, pass 2 of the multi-block Blelloch scan: combine every item of
// tile b (in scan order) with the exclusive prefix of the tiles before it.
// Tile 0's prefix is the identity and is skipped: the launch covers tiles
// 1..n, one CUDA block per tile, so each block reads its prefix once.

namespace scan {

template <class Op, int THREADS, int K, bool REVERSE>
__device__ __forceinline__ void add_prefixes(typename Op::Item* data, u64 len, const typename Op::Item* prefixes) {
    typedef typename Op::Item Item;
    const unsigned TILE = 2 * THREADS * K;
    const u64 b = (u64)blockIdx.x + 1;
    const TileView<Item, REVERSE> view(data, len, b * TILE, TILE);
    const Item prefix = prefixes[b];
    // All loads first, then all stores: loads and stores to one array may
    // alias as far as the compiler knows, so interleaving them would wait for
    // each load's round trip in turn.
    Item v[2 * K];
#pragma unroll
    for (unsigned j = 0; j < 2 * K; ++j) {
        const unsigned p = j * THREADS + threadIdx.x;
        if (p < view.valid) v[j] = view[p];
    }
#pragma unroll
    for (unsigned j = 0; j < 2 * K; ++j) {
        const unsigned p = j * THREADS + threadIdx.x;
        if (p < view.valid) view[p] = Op::combine(prefix, v[j]);
    }
}

}  // namespace scan
