// Stream compaction (compact.rs): the items whose flag is set, in order, in
// three launches that read the flags twice and the kept items once:
//
//  1. compact_count: each tile's number of set flags;
//  2. an inclusive scan of those counts (the single-pass Add<u64> kernel,
//     launched by compact.rs): tile t's kept items start at count t - 1;
//  3. compact_scatter: each tile finds every kept item's place within the
//     tile (ballots and one small scan in shared memory) and writes it,
//     unless the kept items would not fit the output (the host learns the
//     count when the three are done: one wait for the device, not two).
//
// A tile is ROWS rows of THREADS items. The scatter stripes it: item base +
// r * THREADS + t belongs to thread t, so the loads of flags and items and
// the stores of the kept items are coalesced. The count, to which order does
// not matter, gives each thread ROWS consecutive flags instead (one 16-byte
// load). Grids are grid-stride loops over tiles. scan-cuda/emulator/compaction.cpp
// runs both kernels in the host emulation (no GPU), on grids of a few blocks.

namespace scan {

// A 16-byte word, for items whose size is a multiple of 16.
struct __align__(16) Word16 {
    unsigned long long lo, hi;
};

template <int THREADS, int ROWS>
struct CompactTile {
    static_assert(THREADS % 32 == 0 && THREADS <= 1024, "whole warps");
    static_assert(ROWS >= 1 && ROWS <= 32, "a thread's kept items are one 32-bit mask");
    static constexpr int WARPS = THREADS / 32;
    static constexpr u64 ITEMS = (u64)THREADS * ROWS;
};

// Pass 1: counts[tile] = the set flags of the tile. The order within a tile
// does not matter here, so each thread counts ROWS consecutive flags, with
// one 16-byte load where the tile is whole and the flags aligned (a nonzero
// byte counts, as in the scatter); byte by byte they were 16 loads a thread
// and the kernel latency-bound (H100: 14.6 us for 2^24 flags, 34% of
// DRAM's rate).
template <int THREADS, int ROWS>
__device__ __forceinline__ void compact_count(const unsigned char* flags, u64 len, u64* counts) {
    typedef CompactTile<THREADS, ROWS> Tile;
#ifndef SCAN_HOST_EMULATION
    __shared__ unsigned warp_counts[Tile::WARPS];
#else  // (static __shared__ arrays are per thread in the emulator)
    unsigned* warp_counts = static_cast<unsigned*>(scan_emulator::dynamic_shared(sizeof(unsigned) * Tile::WARPS));
#endif
    const u64 tiles = (len + Tile::ITEMS - 1) / Tile::ITEMS;
    const bool vector = ROWS == 16 && ((unsigned long long)flags % 16) == 0;
    for (u64 tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
        const u64 first = tile * Tile::ITEMS + (u64)threadIdx.x * ROWS;
        unsigned count = 0;
        if (vector && (tile + 1) * Tile::ITEMS <= len) {
            const uint4 w = *reinterpret_cast<const uint4*>(flags + first);
            // __vcmpne4: 0xff in each byte that is not 0.
            const unsigned set = __popc(__vcmpne4(w.x, 0u)) + __popc(__vcmpne4(w.y, 0u)) +
                                 __popc(__vcmpne4(w.z, 0u)) + __popc(__vcmpne4(w.w, 0u));
            count = set / 8;
        } else {
#pragma unroll
            for (int r = 0; r < ROWS; ++r) {
                const u64 i = first + r;
                count += (i < len && flags[i] != 0) ? 1u : 0u;
            }
        }
#pragma unroll
        for (int d = 16; d > 0; d /= 2) count += __shfl_down_sync(0xffffffffu, count, d);
        if (lane_id() == 0) warp_counts[warp_id()] = count;
        __syncthreads();
        if (threadIdx.x == 0) {
            u64 total = 0;
            for (int w = 0; w < Tile::WARPS; ++w) total += warp_counts[w];
            counts[tile] = total;
        }
        __syncthreads();  // before warp_counts is written again
    }
}

// Pass 3, within a tile: given which of this thread's items are kept (bit r
// for row r), the place of each among the tile's kept items. Each warp
// ballots its rows; `before[r]` counts the kept items of this warp's row r
// before this thread's; warp 0 scans the (row, warp) counts, in item order,
// into `offsets` (exclusive). Both barriers are inside: every thread of the
// block must call it, and the caller must pass a barrier after its last read
// of `offsets` before calling it again (its first writes come before its
// first barrier).
template <int THREADS, int ROWS>
__device__ __forceinline__ void compact_places(unsigned kept, unsigned (&before)[ROWS], unsigned* offsets) {
    typedef CompactTile<THREADS, ROWS> Tile;
    constexpr int SLOTS = ROWS * Tile::WARPS;  // one count per (row, warp), in item order
    constexpr int PER_LANE = (SLOTS + 31) / 32;
    const unsigned lane = lane_id(), warp = warp_id();
    const unsigned lanes_before = (1u << lane) - 1u;
#pragma unroll
    for (int r = 0; r < ROWS; ++r) {
        const unsigned ballot = __ballot_sync(0xffffffffu, (kept >> r) & 1u);
        before[r] = __popc(ballot & lanes_before);
        if (lane == 0) offsets[r * Tile::WARPS + warp] = __popc(ballot);
    }
    __syncthreads();
    if (warp == 0) {
        unsigned mine[PER_LANE], sum = 0;
#pragma unroll
        for (int k = 0; k < PER_LANE; ++k) {
            const int s = (int)lane * PER_LANE + k;
            mine[k] = s < SLOTS ? offsets[s] : 0u;
            sum += mine[k];
        }
        unsigned inclusive_sum = sum;
#pragma unroll
        for (int d = 1; d < 32; d *= 2) {
            const unsigned up = __shfl_up_sync(0xffffffffu, inclusive_sum, d);
            if ((int)lane >= d) inclusive_sum += up;
        }
        unsigned running = inclusive_sum - sum;
#pragma unroll
        for (int k = 0; k < PER_LANE; ++k) {
            const int s = (int)lane * PER_LANE + k;
            if (s < SLOTS) offsets[s] = running;
            running += mine[k];
        }
    }
    __syncthreads();
}

// Pass 3, a tile of items of one word (the common case: 4-byte items move as
// one `unsigned`). WHOLE: every item of the tile is below `len`, so none
// needs a bounds check.
//
// Written for few instructions per item: Nsight Compute put the general
// form below at 49 instructions per item (25.8 M warp instructions for 2^24
// f32 items on an H100, issue slots 57% busy, ALU the busiest pipe), 54 us
// at 53% of DRAM's rate (80 registers, 3 blocks an SM, occupancy 35%), and a
// variant at 48 registers and 5 blocks (occupancy 60%) took as long. Most of those instructions were 64-bit index
// arithmetic per item and the loop over an item's other words; here the
// tile's pointers are formed once, a row's offset is a constant (an
// immediate of the load), and places within the tile are 32-bit: 15.9 M
// instructions, 44.2 us at 65% of DRAM's rate (H100, 2026-12-06; 64
// registers, 4 blocks an SM).
//
// Tried and dropped (the same day): placing the kept items in shared memory
// and writing them out in order, so that every store of a warp fills whole
// sectors (in place, a warp's row of kept items is ~8 items at a quarter
// kept; Nsight Compute counted 16.3 of each store sector's 32 bytes used):
// 18.4 M instructions and 46.3 us against 45.8 for the same code without
// it, no faster.
template <int THREADS, int ROWS, class Word, bool WHOLE>
__device__ __forceinline__ void compact_scatter_words1(const Word* values, const unsigned char* flags, u64 first_item,
                                                       unsigned in_tile, u64 start, Word* out, unsigned* offsets) {
    typedef CompactTile<THREADS, ROWS> Tile;
    // This thread's items are first_item + threadIdx.x + r * THREADS.
    const Word* v = values + first_item + threadIdx.x;
    const unsigned char* f = flags + first_item + threadIdx.x;
    // Every item of this thread, loaded before the ballots and the barriers
    // so that the loads are in flight meanwhile (issued only after the
    // places were known, they left the scatter latency-bound: 71 us for 2^24
    // f32 on the H200, 28% of DRAM peak). Kept or not: at a quarter kept,
    // nearly every sector holds a kept item anyway.
    Word item[ROWS];
    unsigned kept = 0;
#pragma unroll
    for (int r = 0; r < ROWS; ++r) {
        const bool inside = WHOLE || threadIdx.x + (unsigned)r * THREADS < in_tile;
        item[r] = inside ? v[r * THREADS] : Word{};
        kept |= (inside && f[r * THREADS] != 0 ? 1u : 0u) << r;
    }
    unsigned before[ROWS];
    compact_places<THREADS, ROWS>(kept, before, offsets);
    const unsigned warp = warp_id();
    Word* o = out + start;
#pragma unroll
    for (int r = 0; r < ROWS; ++r)
        if (kept & (1u << r)) o[offsets[r * Tile::WARPS + warp] + before[r]] = item[r];
    __syncthreads();  // before offsets is written again
}

// Pass 3, a tile of items of any number of words, as the first form was
// written (64-bit indices per item); its first word loaded early, the rest
// when the item is written.
template <int THREADS, int ROWS, class Word>
__device__ __forceinline__ void compact_scatter_words(const Word* values, const unsigned char* flags, u64 len,
                                                      u64 first_item, u64 start, Word* out, unsigned words,
                                                      unsigned* offsets) {
    typedef CompactTile<THREADS, ROWS> Tile;
    const u64 base = first_item + threadIdx.x;
    Word first[ROWS];
    unsigned kept = 0;
#pragma unroll
    for (int r = 0; r < ROWS; ++r) {
        const u64 i = base + (u64)r * THREADS;
        first[r] = i < len ? values[i * words] : Word{};
        kept |= (i < len && flags[i] != 0 ? 1u : 0u) << r;
    }
    unsigned before[ROWS];
    compact_places<THREADS, ROWS>(kept, before, offsets);
    const unsigned warp = warp_id();
#pragma unroll
    for (int r = 0; r < ROWS; ++r) {
        if (kept & (1u << r)) {
            const u64 i = base + (u64)r * THREADS;
            const u64 at = start + offsets[r * Tile::WARPS + warp] + before[r];
            out[at * words] = first[r];
            for (unsigned w = 1; w < words; ++w) out[at * words + w] = values[i * words + w];
        }
    }
    __syncthreads();  // before offsets is written again
}

// Pass 3: writes every kept item of `values` to `out`, in order. An item is
// `words` consecutive Words; `inclusive` holds pass 2's inclusive scan of
// the tiles' counts. Writes nothing when the kept items are more than
// `capacity` (the output's items): the host then reports the error with
// `out` as it was.
template <int THREADS, int ROWS, class Word>
__device__ __forceinline__ void compact_scatter(const Word* values, const unsigned char* flags, u64 len,
                                                const u64* inclusive, Word* out, unsigned words, u64 capacity) {
    typedef CompactTile<THREADS, ROWS> Tile;
#ifndef SCAN_HOST_EMULATION
    __shared__ unsigned offsets[ROWS * Tile::WARPS];
#else  // (static __shared__ arrays are per thread in the emulator)
    unsigned* offsets = static_cast<unsigned*>(scan_emulator::dynamic_shared(sizeof(unsigned) * ROWS * Tile::WARPS));
#endif
    const u64 tiles = (len + Tile::ITEMS - 1) / Tile::ITEMS;
    if (tiles == 0 || inclusive[tiles - 1] > capacity) return;  // the same for every thread
    for (u64 tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
        const u64 first_item = tile * Tile::ITEMS;
        const u64 start = tile == 0 ? 0 : inclusive[tile - 1];
        // Each branch is the same for the whole block.
        if (words != 1) {
            compact_scatter_words<THREADS, ROWS, Word>(values, flags, len, first_item, start, out, words, offsets);
        } else if (first_item + Tile::ITEMS <= len) {
            compact_scatter_words1<THREADS, ROWS, Word, true>(values, flags, first_item, Tile::ITEMS, start, out,
                                                              offsets);
        } else {
            compact_scatter_words1<THREADS, ROWS, Word, false>(values, flags, first_item,
                                                               (unsigned)(len - first_item), start, out, offsets);
        }
    }
}

}  // namespace scan
