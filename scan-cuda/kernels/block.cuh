// Block layer: an exclusive scan of one value per thread, in thread order:
// a warp scan per warp (warp.cuh), then the warp totals in shared memory,
// combined in warp order by every thread (at most 32 of them, read as
// broadcasts: cheaper than another barrier and a second warp scan).

namespace scan {

// Storage for a `T` in shared memory: `__shared__` variables cannot have
// constructors, and generated items may be aggregates of any shape.
template <class T>
struct Slot {
    __align__(16) unsigned char bytes[sizeof(T)];
    __device__ __forceinline__ T& get() { return *reinterpret_cast<T*>(bytes); }
};

// BARRIER 0 synchronises the whole block (__syncthreads); another id, only
// the THREADS threads that scan (a named barrier), so that other warps of the
// block can do other work meanwhile.
template <class Op, int THREADS, unsigned BARRIER = 0>
struct BlockScan {
    typedef typename Op::Item Item;
    static constexpr int WARPS = THREADS / 32;
    static_assert(THREADS % 32 == 0 && WARPS <= 32, "a block is 1 to 32 whole warps");

    struct Shared {
        Slot<Item> warp_totals[WARPS];
    };

    // Returns this thread's exclusive prefix (the combination of the values of
    // all lower threads; the identity for thread 0) and sets `total` to the
    // combination of every thread's value. Contains one barrier.
    static __device__ __forceinline__ Item exclusive(Item x, Item& total, Shared& s) {
        const unsigned lane = lane_id(), warp = warp_id();
        const Item inclusive = warp_inclusive<Op>(x);
        const Item below = Shuffle<Item>::up(inclusive, 1);
        if (lane == 31) s.warp_totals[warp].get() = inclusive;
        if constexpr (BARRIER == 0) {
            __syncthreads();
        } else {
            barrier_sync(BARRIER, THREADS);
        }
        Item acc = Op::identity();
        Item warp_prefix = acc;
#pragma unroll
        for (int w = 0; w < WARPS; ++w) {
            if (w == (int)warp) warp_prefix = acc;
            acc = w == 0 ? s.warp_totals[0].get() : Op::combine(acc, s.warp_totals[w].get());
        }
        total = acc;
        return lane == 0 ? warp_prefix : Op::combine(warp_prefix, below);
    }

    // The combination of the totals of all lower warps (the identity for
    // warp 0), given this warp's total in every lane, and the block's total
    // in `total`: the second half of `exclusive`, for callers that scan
    // within their warps themselves (grouped.cuh). Contains one barrier.
    static __device__ __forceinline__ Item warp_prefix(const Item& warp_total, Item& total, Shared& s) {
        const unsigned warp = warp_id();
        if (lane_id() == 0) s.warp_totals[warp].get() = warp_total;
        if constexpr (BARRIER == 0) {
            __syncthreads();
        } else {
            barrier_sync(BARRIER, THREADS);
        }
        Item acc = Op::identity();
        Item prefix = acc;
#pragma unroll
        for (int w = 0; w < WARPS; ++w) {
            if (w == (int)warp) prefix = acc;
            acc = w == 0 ? s.warp_totals[0].get() : Op::combine(acc, s.warp_totals[w].get());
        }
        total = acc;
        return prefix;
    }
};

}  // namespace scan
