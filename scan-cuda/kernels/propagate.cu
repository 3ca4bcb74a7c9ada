// Device layer, pass 2 of the multi-block Blelloch scan: combine every item of
// tile b (in scan order) with the exclusive prefix of the tiles before it.
// Tile 0's prefix is the identity and is skipped: the launch covers tiles
// 1..n, one CUDA block per tile, so each block reads its prefix once.

namespace scan {

template <class Op, int THREADS, int K>
__device__ __forceinline__ void add_prefixes(typename Op::Item* data, u64 len, const typename Op::Item* prefixes,
                                             int reverse) {
    typedef typename Op::Item Item;
    const unsigned TILE = 2 * THREADS * K;
    const u64 b = (u64)blockIdx.x + 1;
    const u64 start = b * TILE;
    const Item prefix = prefixes[b];
    for (unsigned j = 0; j < 2 * K; ++j) {
        const u64 pos = start + j * THREADS + threadIdx.x;
        if (pos < len) {
            const u64 i = buffer_index(pos, len, reverse);
            data[i] = Op::combine(prefix, data[i]);
        }
    }
}

}  // namespace scan
