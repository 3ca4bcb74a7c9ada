// Grouped runs: how a forward fused-maps scan (maps.cuh) holds a segment when
// its input arrays and its output move in groups of the same V positions
// (the linear recurrence a[], b[] -> h[]: a float4 of a, one of b and one of
// h, V = 4). Each lane owns its groups from load to store: positions
// (g * 32 + lane) * V .. + V - 1 of the warp's segment, g < ITEMS / V, the
// layout in which LiftedIn::fetch reads them and ProjectedOut stores them.
//
//   scan   the lane lifts its groups in registers and reduces each; the warp
//          scans the ITEMS / V group totals of every lane side by side (as
//          many shuffle scans, independent of each other); the warp totals
//          give each warp its prefix within the tile (BlockScan::
//          warp_prefix). Each lane then rescans its groups to their prefixes
//          within the tile and puts them in its own part of the slot;
//   store  once the tile's prefix is known, each lane reads its groups back,
//          combines the prefix with each position, projects, and stores a
//          group per vector.
//
// Why: through the item slot (exchange.cuh) each position crosses shared
// memory five times (put, read to reduce, read and written by the rescan,
// read to store): 40 bytes for the recurrence's 8-byte item, against 12
// bytes of DRAM traffic, and Nsight Compute found the kernel waiting on
// shared memory (short scoreboard: 4.6 stalls per issue; 0.84 of copy).
// Here twice, 16 bytes, and no lane reads what another wrote, so no
// __syncwarp orders them. The price: ITEMS / V warp scans instead of one.
//
// The grouping differs from the item slot's (each position is combined with
// its prefix within the tile first, then with the tile's prefix), so floats
// may round differently from the other path, but it is fixed by N and the
// policy: results are still the same from run to run.
//
// The slot: each lane's run of ITEMS items, interleaved across the warp a
// chunk at a time (chunk j of lane l at (j * 32 + l) * sizeof(Chunk)), so
// that every access is free of bank conflicts. Chunks are 16 bytes when a
// group's items are a whole number of them, else 4.
//
// A reverse scan keeps the same layout in memory and takes it backwards
// (scan order: rows, lanes and a group's elements from the last). Segmented
// scans and narrow slots keep their own paths (single_pass.cuh). A segment
// that is partial or whose inputs are not aligned for vectors is read and
// written element by element in the same lane-owned layout (each
// instruction then touches every V-th element: slower, but only for the
// last tile or for unaligned arrays).
//
// Slots are sized for grouped runs alone (SinglePassPolicy::
// dynamic_shared_bytes: a run of items per thread and stage, no padding and
// no prefixes within the tile), so the policy sets grouped_runs exactly
// where this kernel takes them (checked here at compile time).

namespace scan {

template <class Op, int ITEMS, bool REVERSE, class In, class Out>
struct GroupedRun {
    typedef typename Op::Item Item;
    static constexpr int V = In::template VEC<ITEMS>;
    static constexpr int GROUPS = ITEMS / (V > 0 ? V : 1);
    static constexpr int GROUP_BYTES = V * (int)sizeof(Item);
    static constexpr int SEGMENT = 32 * ITEMS;
    // (Whether the run fits the registers beside everything else is the
    // policy's call: SinglePassPolicy::grouped_runs, which must agree with
    // this on the rest.)
    static constexpr bool USABLE =
        V > 1 && Out::template VEC<ITEMS> == V && ITEMS % V == 0 && GROUP_BYTES % 4 == 0;
    typedef typename If<GROUP_BYTES % 16 == 0, uint4, unsigned>::type Chunk;
    static constexpr int CHUNKS_PER_GROUP = GROUP_BYTES / (int)sizeof(Chunk);
    // Bytes of one warp's slice.
    static constexpr int SLICE_BYTES = SEGMENT * (int)sizeof(Item);

    // The scan position within the segment of this lane's element e of
    // group g (memory position (g * 32 + lane) * V + e; a reverse scan
    // counts from the segment's end).
    static __device__ __forceinline__ int position(int g, int e) {
        const int m = (g * 32 + (int)lane_id()) * V + e;
        return REVERSE ? SEGMENT - 1 - m : m;
    }

    // The lane's positions from a whole segment's fetched inputs
    // (LiftedIn::fetch: element g * V + e holds memory position
    // (g * 32 + lane) * V + e).
    template <class Fetched>
    static __device__ __forceinline__ void lift(const In& src, const Fetched& f, Item (&x)[ITEMS]) {
#pragma unroll
        for (int k = 0; k < ITEMS; ++k) x[k] = src.template lift_fetched<ITEMS>(f, k);
    }

    // The same positions element by element: scan position p of the segment
    // is global index `index(p)`; positions at or past `valid` hold the
    // identity.
    template <class Index>
    static __device__ __forceinline__ void load_items(const In& src, Index index, int valid, Item (&x)[ITEMS]) {
#pragma unroll
        for (int g = 0; g < GROUPS; ++g) {
#pragma unroll
            for (int e = 0; e < V; ++e) {
                const int p = position(g, e);
                x[g * V + e] = p < valid ? src(index(p)) : Op::identity();
            }
        }
    }

    // Rescans the lane's positions, in place, to their prefixes within the
    // tile (inclusive, or exclusive: the tile's first position then holds
    // the identity), and sets `total` to the tile's aggregate. Every
    // scanning thread calls it: it contains BlockScan's barrier.
    //
    // In scan order the segment is row after row (row g: group g of every
    // lane), lane after lane within a row, and a group's elements in order;
    // a reverse scan takes all three backwards, so there the lane "below"
    // (earlier in scan order) is the one above.
    template <bool INCLUSIVE, class Block>
    static __device__ __forceinline__ void scan(Item (&x)[ITEMS], Item& total, typename Block::Shared& s) {
        const unsigned rank = REVERSE ? 31 - lane_id() : lane_id();  // the lane's place in scan order
        constexpr int LAST = REVERSE ? 0 : 31;  // the lane last in scan order
        auto earlier = [](const Item& y, unsigned d) -> Item {
            return REVERSE ? Shuffle<Item>::down(y, d) : Shuffle<Item>::up(y, d);
        };
        // Each group's combination, then its inclusive scan over the lanes.
        Item inc[GROUPS];
#pragma unroll
        for (int g = 0; g < GROUPS; ++g) {
            inc[g] = x[g * V + (REVERSE ? V - 1 : 0)];
#pragma unroll
            for (int t = 1; t < V; ++t) inc[g] = Op::combine(inc[g], x[g * V + (REVERSE ? V - 1 - t : t)]);
        }
#pragma unroll
        for (unsigned d = 1; d < 32; d <<= 1) {
#pragma unroll
            for (int g = 0; g < GROUPS; ++g) {
                const Item below = earlier(inc[g], d);
                if (rank >= d) inc[g] = Op::combine(below, inc[g]);
            }
        }
        // The warp's total: the rows' totals (the last lane's), in scan
        // order. They are fetched again below rather than held across the
        // barrier (registers: the f32 recurrence's kernel spilled at 96).
        auto row = [](int r) { return REVERSE ? GROUPS - 1 - r : r; };  // the r-th row in scan order
        Item warp_total = Shuffle<Item>::from(inc[row(0)], LAST);
#pragma unroll
        for (int r = 1; r < GROUPS; ++r) warp_total = Op::combine(warp_total, Shuffle<Item>::from(inc[row(r)], LAST));
        const Item warp_prefix = Block::warp_prefix(warp_total, total, s);

        // Everything before row r (earlier warps, then earlier rows), and
        // whether there is anything: a flag rather than the identity, so
        // that no position is combined with an identity it does not need.
        Item before = warp_prefix;
        bool any = warp_id() != 0;
#pragma unroll
        for (int r = 0; r < GROUPS; ++r) {
            const int g = row(r);
            // The lanes before this one in row g.
            const Item lanes_before = earlier(inc[g], 1);
            const Item row_total = Shuffle<Item>::from(inc[g], LAST);
            Item prefix = before;
            bool has = any;
            if (rank > 0) {
                prefix = has ? Op::combine(prefix, lanes_before) : lanes_before;
                has = true;
            }
#pragma unroll
            for (int t = 0; t < V; ++t) {
                Item& y = x[g * V + (REVERSE ? V - 1 - t : t)];
                const Item next = has ? Op::combine(prefix, y) : y;
                y = INCLUSIVE ? next : (has ? prefix : Op::identity());
                prefix = next;
                has = true;
            }
            before = any ? Op::combine(before, row_total) : row_total;
            any = true;
        }
    }

    // The lane's positions into its part of the slice.
    static __device__ __forceinline__ void put(const Item (&x)[ITEMS], unsigned char* slice) {
        Chunk* to = reinterpret_cast<Chunk*>(slice);
        const int lane = (int)lane_id();
#pragma unroll
        for (int g = 0; g < GROUPS; ++g) {
            Chunk c[CHUNKS_PER_GROUP];
            memcpy(c, &x[g * V], GROUP_BYTES);
#pragma unroll
            for (int j = 0; j < CHUNKS_PER_GROUP; ++j) to[(g * CHUNKS_PER_GROUP + j) * 32 + lane] = c[j];
        }
    }

    // Group g of the lane's positions from the slice, each combined with
    // `prefix` unless `alone` (the tile has no prefix).
    static __device__ __forceinline__ void get_group(const unsigned char* slice, int g, bool alone,
                                                     const Item& prefix, Item (&y)[V]) {
        const Chunk* from = reinterpret_cast<const Chunk*>(slice);
        const int lane = (int)lane_id();
        Chunk c[CHUNKS_PER_GROUP];
#pragma unroll
        for (int j = 0; j < CHUNKS_PER_GROUP; ++j) c[j] = from[(g * CHUNKS_PER_GROUP + j) * 32 + lane];
        memcpy(y, c, GROUP_BYTES);
#pragma unroll
        for (int e = 0; e < V; ++e) {
            if (!alone) y[e] = Op::combine(prefix, y[e]);
        }
    }

    // Stores a whole segment whose lowest address is `base`
    // (ProjectedOut::groups_aligned), a group per vector; a group at a time,
    // so that few registers are held beside the next tile's loads in flight.
    static __device__ __forceinline__ void store(const Out& dst, u64 base, const unsigned char* slice, bool alone,
                                                 const Item& prefix) {
        const int lane = (int)lane_id();
#pragma unroll
        for (int g = 0; g < GROUPS; ++g) {
            Item y[V];
            get_group(slice, g, alone, prefix, y);
            dst.template put_group<V>(base + (u64)((g * 32 + lane) * V), y);
        }
    }

    // Stores the positions below `valid` (scan order), element by element,
    // at global index `index(p)`.
    template <class Index>
    static __device__ __forceinline__ void store_items(const Out& dst, Index index, int valid,
                                                       const unsigned char* slice, bool alone, const Item& prefix) {
#pragma unroll
        for (int g = 0; g < GROUPS; ++g) {
            Item y[V];
            get_group(slice, g, alone, prefix, y);
#pragma unroll
            for (int e = 0; e < V; ++e) {
                const int p = position(g, e);
                if (p < valid) dst(index(p), y[e]);
            }
        }
    }
};

}  // namespace scan
