// Load/store layer: one warp's segment of 32 * ITEMS consecutive items moves
// between global memory and registers through the warp's own slice of shared
// memory.
//
//   global  warp-striped: consecutive lanes touch consecutive vectors (16
//           bytes when the run length and the addresses allow), so every
//           load and store instruction is one coalesced transaction;
//   shared  the segment in memory order, one padding vector after each run
//           of ITEMS items when runs are an even number of vectors, so that
//           the blocked accesses below hit distinct banks;
//   blocked each lane holds one run of ITEMS consecutive items in registers,
//           in *scan* order: for a reverse scan, lane 0 holds the last run of
//           the segment, reversed.
//
// Only the warp touches its slice, so a __syncwarp separates the phases. A
// segment that is partial (the last tile) or unaligned goes item by item,
// still coalesced, with the identity in place of the items past the end.

namespace scan {

template <class Op, int ITEMS, bool REVERSE>
struct WarpExchange {
    typedef typename Op::Item Item;
    typedef typename Words<Item>::Word Word;
    static constexpr int WORDS_PER_ITEM = Words<Item>::PER_ITEM;
    static constexpr int RUN_BYTES = ITEMS * (int)sizeof(Item);
    static constexpr int RUN_WORDS = ITEMS * WORDS_PER_ITEM;
    static constexpr int VECTOR_BYTES = VectorFor<Word, RUN_BYTES>::VALUE;
    typedef Vector<Word, VECTOR_BYTES> Vec;
    static constexpr int WORDS_PER_VECTOR = VECTOR_BYTES / (int)sizeof(Word);
    static constexpr int VECTORS_PER_RUN = RUN_BYTES / VECTOR_BYTES;
    static constexpr int PAD_WORDS = VECTORS_PER_RUN % 2 == 0 ? WORDS_PER_VECTOR : 0;
    static constexpr int STRIDE = RUN_WORDS + PAD_WORDS;
    static constexpr int SEGMENT = 32 * ITEMS;

    // Words of shared memory one warp needs.
    static constexpr int SHARED_WORDS = 32 * STRIDE;

    // Where word `i` of the segment (memory order) lives in the warp's slice.
    static __device__ __forceinline__ int slot(int i) { return i + (i / RUN_WORDS) * PAD_WORDS; }

    // True when `p` can be read or written a vector at a time.
    static __device__ __forceinline__ bool aligned(const void* p) {
        return ((unsigned long long)p % VECTOR_BYTES) == 0;
    }

    // A whole segment starting at `seg` (memory order, VECTOR_BYTES-aligned).
    static __device__ __forceinline__ void load_vectors(const Item* seg, Word* smem) {
        const Vec* g = reinterpret_cast<const Vec*>(seg);
        const int lane = (int)lane_id();
        Vec v[VECTORS_PER_RUN];
#pragma unroll
        for (int q = 0; q < VECTORS_PER_RUN; ++q) v[q] = g[q * 32 + lane];
#pragma unroll
        for (int q = 0; q < VECTORS_PER_RUN; ++q)
            *reinterpret_cast<Vec*>(smem + slot((q * 32 + lane) * WORDS_PER_VECTOR)) = v[q];
    }

    static __device__ __forceinline__ void store_vectors(Item* seg, const Word* smem) {
        Vec* g = reinterpret_cast<Vec*>(seg);
        const int lane = (int)lane_id();
        Vec v[VECTORS_PER_RUN];
#pragma unroll
        for (int q = 0; q < VECTORS_PER_RUN; ++q)
            v[q] = *reinterpret_cast<const Vec*>(smem + slot((q * 32 + lane) * WORDS_PER_VECTOR));
#pragma unroll
        for (int q = 0; q < VECTORS_PER_RUN; ++q) g[q * 32 + lane] = v[q];
    }

    // Item by item. Scan position p of the segment (0 = first in scan order)
    // is global index `index(p)`; positions at or past `valid` are not read
    // and hold the identity.
    template <class Index>
    static __device__ __forceinline__ void load_items(const Item* src, Index index, int valid, Word* smem) {
        const int lane = (int)lane_id();
#pragma unroll
        for (int k = 0; k < ITEMS; ++k) {
            const int m = k * 32 + lane;  // memory order within the segment
            const int p = REVERSE ? SEGMENT - 1 - m : m;
            const Item x = p < valid ? src[index(p)] : Op::identity();
            Word w[WORDS_PER_ITEM];
            memcpy(w, &x, sizeof(Item));
#pragma unroll
            for (int j = 0; j < WORDS_PER_ITEM; ++j) smem[slot(m * WORDS_PER_ITEM + j)] = w[j];
        }
    }

    template <class Index>
    static __device__ __forceinline__ void store_items(Item* dst, Index index, int valid, const Word* smem) {
        const int lane = (int)lane_id();
#pragma unroll
        for (int k = 0; k < ITEMS; ++k) {
            const int m = k * 32 + lane;
            const int p = REVERSE ? SEGMENT - 1 - m : m;
            if (p < valid) {
                Word w[WORDS_PER_ITEM];
#pragma unroll
                for (int j = 0; j < WORDS_PER_ITEM; ++j) w[j] = smem[slot(m * WORDS_PER_ITEM + j)];
                Item x;
                memcpy(&x, w, sizeof(Item));
                dst[index(p)] = x;
            }
        }
    }

    // This lane's run, in scan order, from the slice (after a __syncwarp).
    static __device__ __forceinline__ void read_run(const Word* smem, Item (&run)[ITEMS]) {
        const int lane = (int)lane_id();
        const Word* mine = smem + (REVERSE ? 31 - lane : lane) * STRIDE;
        Word w[RUN_WORDS];
#pragma unroll
        for (int q = 0; q < VECTORS_PER_RUN; ++q) {
            const Vec v = *reinterpret_cast<const Vec*>(mine + q * WORDS_PER_VECTOR);
#pragma unroll
            for (int j = 0; j < WORDS_PER_VECTOR; ++j) w[q * WORDS_PER_VECTOR + j] = v.w[j];
        }
#pragma unroll
        for (int k = 0; k < ITEMS; ++k)
            memcpy(&run[k], &w[(REVERSE ? ITEMS - 1 - k : k) * WORDS_PER_ITEM], sizeof(Item));
    }

    // Writes this lane's run back where read_run found it (a __syncwarp must
    // follow before the segment is stored).
    static __device__ __forceinline__ void write_run(Word* smem, const Item (&run)[ITEMS]) {
        const int lane = (int)lane_id();
        Word* mine = smem + (REVERSE ? 31 - lane : lane) * STRIDE;
        Word w[RUN_WORDS];
#pragma unroll
        for (int k = 0; k < ITEMS; ++k)
            memcpy(&w[(REVERSE ? ITEMS - 1 - k : k) * WORDS_PER_ITEM], &run[k], sizeof(Item));
#pragma unroll
        for (int q = 0; q < VECTORS_PER_RUN; ++q) {
            Vec v;
#pragma unroll
            for (int j = 0; j < WORDS_PER_VECTOR; ++j) v.w[j] = w[q * WORDS_PER_VECTOR + j];
            *reinterpret_cast<Vec*>(mine + q * WORDS_PER_VECTOR) = v;
        }
    }
};

}  // namespace scan
