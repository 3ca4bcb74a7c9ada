// Rows of at most one tile each: a block per row, and nothing between
// blocks. A row that fits one tile has no predecessor to look back at, so
// the single-pass machinery (tile counter, status, look-back warp, slots
// handed between named barriers) is pure overhead for it: on the H200 the
// single-pass kernel moved f32 rows of 4096 at 0.93 of copy, limited per
// tile, not by the look-back (ncu: the same profile as a plain scan).
// Here each block loads its row, scans it and stores it, and the GPU's
// block scheduler does the rest: as many blocks per SM as fit keep the
// loads in flight that one persistent block kept with its slots.
//
// Rows are scanned in the module's tile shape (THREADS x ITEMS), each warp
// a segment of 32 * ITEMS positions; a row shorter than the tile leaves the
// last warps partial (the identity past its end, exchange.cuh), which is
// why the host sends only rows of more than half a tile here (single_pass.rs,
// Segments::for_rows). Results are bitwise the same run to run: a row's
// combination order is fixed by the tile shape alone.

namespace scan {

// `shared`: the warps' exchange slices, WARPS * Exchange::SHARED_WORDS
// words (dynamic shared memory: a Tuning's long runs can pass the 48 KiB of
// static shared memory).
template <class Op, int THREADS, int ITEMS, bool REVERSE, bool INCLUSIVE>
__device__ __forceinline__ void row_tiles(const typename Op::Item* src, typename Op::Item* dst, u64 rows,
                                          u64 row_len, u64 stride, unsigned char* shared) {
    typedef typename Op::Item Item;
    typedef WarpExchange<Op, ITEMS, REVERSE> Exchange;
    typedef TileSegment<Op, THREADS, ITEMS, REVERSE> Segment;
    typedef typename Exchange::Word Word;
    typedef BlockScan<Op, THREADS> Block;
    // Two block-scan scratches, alternately: a warp that runs ahead into the
    // next row writes the other one, and passes that row's barrier only
    // after every warp has read this row's totals.
    __shared__ typename Block::Shared block[2];
    Word* const buf = reinterpret_cast<Word*>(shared) + (size_t)warp_id() * Exchange::SHARED_WORDS;

    // This warp's segment of a row: the same for every row.
    const Segment seg(0, row_len);
    // A whole segment moves a vector at a time where the row's alignment allows.
    const bool whole = seg.valid >= Exchange::SEGMENT;
    auto index = [=](int p) -> u64 { return REVERSE ? row_len - 1 - (seg.first + p) : seg.first + p; };

    unsigned parity = 0;
    for (u64 row = blockIdx.x; row < rows; row += gridDim.x, parity ^= 1u) {
        const Item* in = src + row * stride;
        Item* out = dst + row * stride;
        if (whole && Exchange::aligned(in + seg.base)) {
            Exchange::load_vectors(in + seg.base, buf);
        } else {
            Exchange::load_items(ItemsIn<Item>{in}, index, seg.valid, buf);
        }
        __syncwarp();
        Item run[ITEMS];
        Exchange::read_run(buf, run);
        Item total;
        const Item within = Block::exclusive(thread_reduce<Op, ITEMS>(run), total, block[parity]);
        thread_scan<Op, ITEMS, INCLUSIVE>(run, within);
        // In place, every lane has read its run before any writes: each
        // lane's run is its own words of the slice.
        Exchange::write_run(buf, run);
        __syncwarp();
        if (whole && Exchange::aligned(out + seg.base)) {
            Exchange::store_vectors(out + seg.base, buf);
        } else {
            Exchange::store_items(ItemsOut<Item>{out}, index, seg.valid, buf);
        }
        __syncwarp();  // before the slice is loaded again
    }
}

}  // namespace scan
