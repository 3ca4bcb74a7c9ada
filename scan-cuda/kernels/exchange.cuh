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
// (Kernels with narrow slots, narrow.cuh, use none of this: their slices hold
// raw narrow elements.)

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

    // A whole segment starting at `seg` (memory order, VECTOR_BYTES-aligned),
    // in two halves so that other work can run while the loads are in
    // flight: fetch issues them into registers, put waits for them and
    // writes the slice.
    static __device__ __forceinline__ void fetch_vectors(const Item* seg, Vec (&v)[VECTORS_PER_RUN]) {
        const Vec* g = reinterpret_cast<const Vec*>(seg);
        const int lane = (int)lane_id();
#pragma unroll
        for (int q = 0; q < VECTORS_PER_RUN; ++q) v[q] = g[q * 32 + lane];
    }
    static __device__ __forceinline__ void put_vectors(const Vec (&v)[VECTORS_PER_RUN], Word* smem) {
        const int lane = (int)lane_id();
#pragma unroll
        for (int q = 0; q < VECTORS_PER_RUN; ++q)
            *reinterpret_cast<Vec*>(smem + slot((q * 32 + lane) * WORDS_PER_VECTOR)) = v[q];
    }
    static __device__ __forceinline__ void load_vectors(const Item* seg, Word* smem) {
        Vec v[VECTORS_PER_RUN];
        fetch_vectors(seg, v);
        put_vectors(v, smem);
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
    // is global index `index(p)`, read as `src(index(p))` (maps.cuh: an
    // item array, or a lift of input arrays); positions at or past `valid`
    // are not read and hold the identity.
    template <class In, class Index>
    static __device__ __forceinline__ void load_items(In src, Index index, int valid, Word* smem) {
        const int lane = (int)lane_id();
#pragma unroll
        for (int k = 0; k < ITEMS; ++k) {
            const int m = k * 32 + lane;  // memory order within the segment
            const int p = REVERSE ? SEGMENT - 1 - m : m;
            put_item(smem, m, p < valid ? src(index(p)) : Op::identity());
        }
    }

    // One item in the slice, at memory position m of the segment: one
    // access for items of 8 or 16 bytes (their slots are aligned: items sit
    // at multiples of their size, padding vectors are 16 bytes), else word
    // by word. 8-byte items word by word met 2.4-way bank conflicts (ncu,
    // H200, the fused recurrence); as one access, none.
    static constexpr int ITEM_ACCESS =
        (sizeof(Item) == 8 || sizeof(Item) == 16) && (PAD_WORDS * (int)sizeof(Word)) % (int)sizeof(Item) == 0
            ? (int)sizeof(Item)
            : 0;
    static __device__ __forceinline__ void put_item(Word* smem, int m, const Item& x) {
        if constexpr (ITEM_ACCESS != 0) {
            Vector<Word, ITEM_ACCESS> v;
            memcpy(v.w, &x, sizeof(Item));
            *reinterpret_cast<Vector<Word, ITEM_ACCESS>*>(smem + slot(m * WORDS_PER_ITEM)) = v;
        } else {
            Word w[WORDS_PER_ITEM];
            memcpy(w, &x, sizeof(Item));
#pragma unroll
            for (int j = 0; j < WORDS_PER_ITEM; ++j) smem[slot(m * WORDS_PER_ITEM + j)] = w[j];
        }
    }
    static __device__ __forceinline__ Item get_item(const Word* smem, int m) {
        Item x;
        if constexpr (ITEM_ACCESS != 0) {
            const Vector<Word, ITEM_ACCESS> v = *reinterpret_cast<const Vector<Word, ITEM_ACCESS>*>(smem + slot(m * WORDS_PER_ITEM));
            memcpy(&x, v.w, sizeof(Item));
        } else {
            Word w[WORDS_PER_ITEM];
#pragma unroll
            for (int j = 0; j < WORDS_PER_ITEM; ++j) w[j] = smem[slot(m * WORDS_PER_ITEM + j)];
            memcpy(&x, w, sizeof(Item));
        }
        return x;
    }
    // V consecutive items from memory position m0 (a multiple of V, V
    // dividing ITEMS: they lie in one run), as 16-byte vectors when their
    // bytes allow (they then start 16-byte aligned), else item by item.
    template <int V>
    static constexpr bool GROUP_VECTORS = (V * (int)sizeof(Item)) % 16 == 0 && sizeof(Word) == 4;
    template <int V>
    static __device__ __forceinline__ void put_group(Word* smem, int m0, const Item (&x)[V]) {
        if constexpr (GROUP_VECTORS<V>) {
            typedef Vector<Word, 16> V16;
            constexpr int COUNT = V * (int)sizeof(Item) / 16;
            V16 v[COUNT];
            memcpy(v, x, sizeof(v));
            V16* to = reinterpret_cast<V16*>(smem + slot(m0 * WORDS_PER_ITEM));
#pragma unroll
            for (int c = 0; c < COUNT; ++c) to[c] = v[c];
        } else {
#pragma unroll
            for (int e = 0; e < V; ++e) put_item(smem, m0 + e, x[e]);
        }
    }
    template <int V>
    static __device__ __forceinline__ void get_group(const Word* smem, int m0, Item (&x)[V]) {
        if constexpr (GROUP_VECTORS<V>) {
            typedef Vector<Word, 16> V16;
            constexpr int COUNT = V * (int)sizeof(Item) / 16;
            V16 v[COUNT];
            const V16* from = reinterpret_cast<const V16*>(smem + slot(m0 * WORDS_PER_ITEM));
#pragma unroll
            for (int c = 0; c < COUNT; ++c) v[c] = from[c];
            memcpy(x, v, sizeof(v));
        } else {
#pragma unroll
            for (int e = 0; e < V; ++e) x[e] = get_item(smem, m0 + e);
        }
    }

    // The second half of a whole segment's load through fused maps
    // (maps.cuh, LiftedIn::fetch): lifts the fetched positions and writes
    // them where load_items would (slot m holds memory position m, as with
    // load_vectors), a group of V = In::VEC at a time.
    template <class In, class Fetched>
    static __device__ __forceinline__ void put_lifted(const In& src, const Fetched& f, Word* smem) {
        constexpr int V = In::template VEC<ITEMS>;
#pragma unroll
        for (int q = 0; q < ITEMS / V; ++q) {
            Item x[V];
#pragma unroll
            for (int e = 0; e < V; ++e) x[e] = src.template lift_fetched<ITEMS>(f, q * V + e);
            put_group<V>(smem, (q * 32 + (int)lane_id()) * V, x);
        }
    }

    // A whole segment through a projection (maps.cuh, ProjectedOut) from
    // memory position `base` (groups_aligned): a group of V = Out::VEC
    // positions per lane and vector store.
    template <class Out>
    static __device__ __forceinline__ void store_projected(const Out& dst, u64 base, const Word* smem) {
        constexpr int V = Out::template VEC<ITEMS>;
        typedef typename Out::Output Output;
        Item x[ITEMS];
#pragma unroll
        for (int q = 0; q < ITEMS / V; ++q) {
            Item g[V];
            get_group<V>(smem, (q * 32 + (int)lane_id()) * V, g);
#pragma unroll
            for (int e = 0; e < V; ++e) x[q * V + e] = g[e];
        }
#pragma unroll
        for (int q = 0; q < ITEMS / V; ++q) {
            Item g[V];
#pragma unroll
            for (int e = 0; e < V; ++e) g[e] = x[q * V + e];
            dst.template put_group<V>(base + (u64)((q * 32 + (int)lane_id()) * V), g);
        }
    }

    // A whole segment of lifted positions (maps.cuh, LiftedIn::FITS) whose
    // arrays start at memory position `base`: staged into the slice as
    // vectors, lifted in registers, written back as load_items would (memory
    // order: for a whole segment, scan position p is memory position
    // base + SEGMENT - 1 - p in reverse, so slot m holds memory position m
    // either way, as with load_vectors).
    template <class In>
    static __device__ __forceinline__ void load_staged(const In& src, u64 base, Word* smem) {
        unsigned char* raw = reinterpret_cast<unsigned char*>(smem);
        src.template stage<SEGMENT>(base, raw);
        __syncwarp();
        const int lane = (int)lane_id();
        Item x[ITEMS];
#pragma unroll
        for (int k = 0; k < ITEMS; ++k) x[k] = src.template lift_staged<SEGMENT>(raw, k * 32 + lane);
        __syncwarp();  // every lane has read the staged inputs
#pragma unroll
        for (int k = 0; k < ITEMS; ++k) put_item(smem, k * 32 + lane, x[k]);
    }

    // Written as `dst(index(p), item)` (maps.cuh: an item array, or a
    // project into an output array).
    // Projections (maps.cuh) read every item from the slice first (past
    // `valid` too: the slice is the warp's own), so that the reads do not
    // wait, one by one, behind the conditional stores; item arrays, whose
    // whole segments take store_vectors, read each item just before its
    // store (holding a run's items cost the f32 recurrence's rows kernel an
    // 8-byte spill).
    template <class Out, class Index>
    static __device__ __forceinline__ void store_items(Out dst, Index index, int valid, const Word* smem) {
        const int lane = (int)lane_id();
        if constexpr (Out::DIRECT) {
#pragma unroll
            for (int k = 0; k < ITEMS; ++k) {
                const int m = k * 32 + lane;
                const int p = REVERSE ? SEGMENT - 1 - m : m;
                if (p < valid) dst(index(p), get_item(smem, m));
            }
        } else {
            Item x[ITEMS];
#pragma unroll
            for (int k = 0; k < ITEMS; ++k) x[k] = get_item(smem, k * 32 + lane);
#pragma unroll
            for (int k = 0; k < ITEMS; ++k) {
                const int m = k * 32 + lane;
                const int p = REVERSE ? SEGMENT - 1 - m : m;
                if (p < valid) dst(index(p), x[k]);
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

    // Whether a vector holds whole items, so that scan_run_in_place works.
    static constexpr bool WHOLE_ITEMS_PER_VECTOR = VECTOR_BYTES % sizeof(Item) == 0;

    // thread_scan (thread.cuh) of this lane's run where it lies in the
    // slice, a vector at a time: the same result as read_run, thread_scan,
    // write_run, with a vector's worth of registers instead of a run's.
    // (The segmented form below with no heads: the constant folds away.)
    template <bool INCLUSIVE>
    static __device__ __forceinline__ void scan_run_in_place(Word* smem, Item prefix) {
        scan_run_in_place_heads<INCLUSIVE>(smem, prefix, 0);
    }

    // The same for a segmented scan (thread_scan_heads, heads.cuh): bit i
    // of `heads` set where the run's item i (scan order) starts a segment;
    // the scan restarts there (a head's exclusive value is the identity).
    template <bool INCLUSIVE>
    static __device__ __forceinline__ void scan_run_in_place_heads(Word* smem, Item prefix, u64 heads) {
        static_assert(WHOLE_ITEMS_PER_VECTOR, "vectors of whole items");
        constexpr int PER_VECTOR = VECTOR_BYTES / (int)sizeof(Item);
        const int lane = (int)lane_id();
        Word* mine = smem + (REVERSE ? 31 - lane : lane) * STRIDE;
#pragma unroll
        for (int s = 0; s < VECTORS_PER_RUN; ++s) {
            Vec* p = reinterpret_cast<Vec*>(mine + (REVERSE ? VECTORS_PER_RUN - 1 - s : s) * WORDS_PER_VECTOR);
            Vec v = *p;
            Item items[PER_VECTOR];
            memcpy(items, v.w, sizeof(items));
#pragma unroll
            for (int t = 0; t < PER_VECTOR; ++t) {
                Item& x = items[REVERSE ? PER_VECTOR - 1 - t : t];
                const bool head = (heads >> (s * PER_VECTOR + t)) & 1u;
                const Item next = head ? x : Op::combine(prefix, x);
                x = INCLUSIVE ? next : (head ? Op::identity() : prefix);
                prefix = next;
            }
            memcpy(v.w, items, sizeof(items));
            *p = v;
        }
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
