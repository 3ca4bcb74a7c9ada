// Narrow slots: where a fused-maps scan (maps.cuh) keeps a whole segment when
// its one input array and its output are narrower than its items (bf16 sums
// accumulated in f32: 2-byte positions, 4-byte items). The slot then holds
// the raw inputs instead of the lifted items, and later the projected
// outputs in their place:
//
//   load   the fetched groups (LiftedIn::fetch, a 16-byte vector each) go
//          into the warp's slice as they came, in memory order, with 16
//          bytes of padding after each run;
//   scan   each lane lifts its run from there and reduces it;
//   store  each lane lifts its run again, rescans it from its prefix a
//          vector at a time and projects the results into the same bytes;
//          the warp then stores them as 16-byte vectors in memory order.
//
// Why: through the item slot (exchange.cuh) a bf16 position costs 20 bytes
// of shared-memory traffic for 4 bytes of DRAM traffic (a 4-byte item put,
// read to reduce, read and written by the rescan, read to store), twice a
// plain f32 scan's ratio, and Nsight Compute found its accesses 3- to 5-way
// bank-conflicted (bench/gpu-h200-results.md). Here it costs 10 (2 bytes
// each), the ratio of a plain f32 scan. H200, bf16 sums at 2^28 (ncu):
// 427 us with item slots, 383 with narrow slots for whole segments (shared
// wavefronts 51M -> 37M), 348 with them everywhere and the hardware bf16
// conversion (bench: 0.60 -> 0.73 of copy). The padding: runs of 64 bytes, 64
// bytes apart, put lanes 0, 2, 4 and 6 of a quarter-warp on one bank; 80
// bytes apart, a quarter's 16-byte accesses to its runs hit distinct banks.
// The memory-order accesses (put, store) then meet 2-way conflicts on one
// vector in four at runs of 16 and 32 positions (a quarter's 8 vectors span
// 144 bytes across a padding); an XOR swizzle instead of padding would avoid
// both (untried).
//
// A kernel takes narrow slots for every segment when the policy says so
// (SinglePassPolicy::narrow_slots, which sizes the slots for them: 21 KiB a
// stage of 256 x 32 bf16 positions against 37 for item slots, so more stages
// or blocks fit), and
// then never uses item slots: a segment that is not whole, or whose arrays
// are not aligned for vectors, moves element by element, still coalesced,
// and the positions past the end are left out of the reduction and the
// stores. Usable when, at this run length, the input is fetched and the
// output stored in groups of exactly 16 bytes, both of one element width.

namespace scan {

template <class Op, int ITEMS, bool REVERSE, class In, class Out>
struct NarrowSlice {
    typedef typename Op::Item Item;
    typedef typename In::Raw Raw;
    typedef typename Out::Output Output;
    static constexpr int BYTES = In::NARROW_BYTES;  // 0: not one array read through a lift
    static constexpr int PER_VECTOR = BYTES > 0 ? 16 / BYTES : 1;
    static constexpr int RUN_BYTES = ITEMS * BYTES;
    static constexpr int VECTORS_PER_RUN = RUN_BYTES / 16;
    static constexpr int PAD = VECTORS_PER_RUN % 2 == 0 ? 16 : 0;
    static constexpr int STRIDE = RUN_BYTES + PAD;
    typedef WarpExchange<Op, ITEMS, REVERSE> Exchange;
    static constexpr bool USABLE = BYTES > 0 && is_pow2(BYTES) && BYTES < (int)sizeof(Item) &&
                                   Out::NARROW_BYTES == BYTES && RUN_BYTES % 16 == 0 &&
                                   In::template VEC<ITEMS> * BYTES == 16 && Out::template VEC<ITEMS> * BYTES == 16;
    // Bytes of one warp's slice (a multiple of 16).
    static constexpr int SLICE_BYTES = 32 * STRIDE;
    static constexpr int SEGMENT = 32 * ITEMS;
    // (Vectors of a byte when not usable, so that no vector of a wide item
    // is ever named.)
    typedef Vector<typename If<USABLE, Raw, unsigned char>::type, 16> RawVec;
    typedef Vector<typename If<USABLE, Output, unsigned char>::type, 16> OutVec;

    // Where byte `b` of the segment (memory order) lives in the slice.
    static __device__ __forceinline__ int slot(int b) { return b + (b / (RUN_BYTES > 0 ? RUN_BYTES : 1)) * PAD; }

    // This lane's run: memory run `lane`, or for a reverse scan run 31 - lane
    // read from its end (scan order, as WarpExchange::read_run).
    static __device__ __forceinline__ int run_start() {
        const int lane = (int)lane_id();
        return (REVERSE ? 31 - lane : lane) * STRIDE;
    }

    // A whole segment's fetched inputs into the slice, raw.
    template <class Fetched>
    static __device__ __forceinline__ void put(const Fetched& f, unsigned char* raw) {
        const int lane = (int)lane_id();
#pragma unroll
        for (int q = 0; q < VECTORS_PER_RUN; ++q) {
            RawVec v;
#pragma unroll
            for (int e = 0; e < PER_VECTOR; ++e) v.w[e] = f.a[q * PER_VECTOR + e];
            *reinterpret_cast<RawVec*>(raw + slot((q * 32 + lane) * 16)) = v;
        }
    }

    // The combination of this lane's run, lifted, in scan order (after a
    // __syncwarp).
    static __device__ __forceinline__ Item reduce(const unsigned char* raw) {
        const unsigned char* mine = raw + run_start();
        Item acc;
#pragma unroll
        for (int s = 0; s < VECTORS_PER_RUN; ++s) {
            const RawVec v = *reinterpret_cast<const RawVec*>(mine + (REVERSE ? VECTORS_PER_RUN - 1 - s : s) * 16);
#pragma unroll
            for (int t = 0; t < PER_VECTOR; ++t) {
                const Item x = In::lift_raw(v.w[REVERSE ? PER_VECTOR - 1 - t : t]);
                acc = s == 0 && t == 0 ? x : Op::combine(acc, x);
            }
        }
        return acc;
    }

    // Rescans this lane's run from `prefix` (everything before it) and
    // writes the projected results over its inputs.
    template <bool INCLUSIVE>
    static __device__ __forceinline__ void rescan_project(unsigned char* raw, Item prefix) {
        unsigned char* mine = raw + run_start();
#pragma unroll 1
        for (int s = 0; s < VECTORS_PER_RUN; ++s) {
            unsigned char* at = mine + (REVERSE ? VECTORS_PER_RUN - 1 - s : s) * 16;
            const RawVec v = *reinterpret_cast<const RawVec*>(at);
            OutVec o;
#pragma unroll
            for (int t = 0; t < PER_VECTOR; ++t) {
                const int e = REVERSE ? PER_VECTOR - 1 - t : t;
                const Item next = Op::combine(prefix, In::lift_raw(v.w[e]));
                o.w[e] = Out::project_item(INCLUSIVE ? next : prefix);
                prefix = next;
            }
            *reinterpret_cast<OutVec*>(at) = o;
        }
    }

    // Element by element (a segment that is not whole, or not aligned):
    // scan position p of the segment is global index `index(p)`; positions
    // at or past `valid` are not read (their bytes stay as they were).
    template <class Index>
    static __device__ __forceinline__ void load_items(const In& src, Index index, int valid, unsigned char* raw) {
        const int lane = (int)lane_id();
#pragma unroll
        for (int k = 0; k < ITEMS; ++k) {
            const int m = k * 32 + lane;  // memory order within the segment
            const int p = REVERSE ? SEGMENT - 1 - m : m;
            if (p < valid) *reinterpret_cast<Raw*>(raw + slot(m * BYTES)) = src.raw_at(index(p));
        }
    }

    // reduce for a segment of which only `valid` positions exist: the
    // combination of this lane's existing positions (the identity if none).
    static __device__ __forceinline__ Item reduce_valid(const unsigned char* raw, int valid) {
        const unsigned char* mine = raw + run_start();
        const int first = (int)lane_id() * ITEMS;  // scan position of the run's first item
        Item acc = Op::identity();
#pragma unroll
        for (int s = 0; s < VECTORS_PER_RUN; ++s) {
            const RawVec v = *reinterpret_cast<const RawVec*>(mine + (REVERSE ? VECTORS_PER_RUN - 1 - s : s) * 16);
#pragma unroll
            for (int t = 0; t < PER_VECTOR; ++t) {
                if (first + s * PER_VECTOR + t < valid)
                    acc = Op::combine(acc, In::lift_raw(v.w[REVERSE ? PER_VECTOR - 1 - t : t]));
            }
        }
        return acc;
    }

    // Stores the projected positions that exist, element by element.
    template <class Index>
    static __device__ __forceinline__ void store_items(const Out& dst, Index index, int valid, const unsigned char* raw) {
        const int lane = (int)lane_id();
#pragma unroll
        for (int k = 0; k < ITEMS; ++k) {
            const int m = k * 32 + lane;
            const int p = REVERSE ? SEGMENT - 1 - m : m;
            if (p < valid) dst.p[index(p)] = *reinterpret_cast<const Output*>(raw + slot(m * BYTES));
        }
    }

    // Stores the projected segment (after a __syncwarp) to `seg`, its lowest
    // address, 16 bytes per lane and instruction.
    static __device__ __forceinline__ void store(Output* seg, const unsigned char* raw) {
        const int lane = (int)lane_id();
        OutVec v[VECTORS_PER_RUN];
#pragma unroll
        for (int q = 0; q < VECTORS_PER_RUN; ++q)
            v[q] = *reinterpret_cast<const OutVec*>(raw + slot((q * 32 + lane) * 16));
        OutVec* g = reinterpret_cast<OutVec*>(seg);
#pragma unroll
        for (int q = 0; q < VECTORS_PER_RUN; ++q) g[q * 32 + lane] = v[q];
    }
};

}  // namespace scan
