// Shared by every kernel layer: integer types, an item's bytes as words, and
// moving any item through warp shuffles. NVRTC has no standard library here,
// so the two type-level helpers are written out.

namespace scan {

typedef unsigned long long u64;
typedef long long i64;

template <bool B, class T, class F>
struct If {
    typedef T type;
};
template <class T, class F>
struct If<false, T, F> {
    typedef F type;
};

// The widest unit an item of `Item` is made of, so that copies between
// registers and shared memory never split a unit: 4-byte words for items
// whose size is a multiple of 4 (all but bool-only aggregates), else 2 or 1.
template <class Item>
struct Words {
    typedef typename If<sizeof(Item) % 4 == 0, unsigned,
                        typename If<sizeof(Item) % 2 == 0, unsigned short, unsigned char>::type>::type Word;
    static constexpr int PER_ITEM = sizeof(Item) / sizeof(Word);
};

// A run of bytes loaded or stored by one instruction: 16, 8 or 4 bytes when
// the data allows, as plain structs so any width uses the same code.
template <class Word, int BYTES>
struct __align__(BYTES) Vector {
    Word w[BYTES / sizeof(Word)];
};

// The widest vector (16, 8, 4 bytes, or one word) that divides `bytes`.
template <class Word, int BYTES>
struct VectorFor {
    static constexpr int VALUE = BYTES % 16 == 0 ? 16 : BYTES % 8 == 0 ? 8 : BYTES % 4 == 0 ? 4 : (int)sizeof(Word);
};

// Any item through a warp shuffle, moved as 4-byte words: structs, tuples
// and arrays of any size work, not only the types __shfl_sync knows.
template <class Item>
struct Shuffle {
    static constexpr int N = (sizeof(Item) + 3) / 4;
    static __device__ __forceinline__ Item up(Item x, unsigned delta) {
        unsigned w[N];
        w[N - 1] = 0;  // the bytes past the item, if any, are copied but never read
        memcpy(w, &x, sizeof(Item));
#pragma unroll
        for (int i = 0; i < N; ++i) w[i] = __shfl_up_sync(0xffffffffu, w[i], delta);
        memcpy(&x, w, sizeof(Item));
        return x;
    }
    static __device__ __forceinline__ Item down(Item x, unsigned delta) {
        unsigned w[N];
        w[N - 1] = 0;
        memcpy(w, &x, sizeof(Item));
#pragma unroll
        for (int i = 0; i < N; ++i) w[i] = __shfl_down_sync(0xffffffffu, w[i], delta);
        memcpy(&x, w, sizeof(Item));
        return x;
    }
    static __device__ __forceinline__ Item from(Item x, int lane) {
        unsigned w[N];
        w[N - 1] = 0;
        memcpy(w, &x, sizeof(Item));
#pragma unroll
        for (int i = 0; i < N; ++i) w[i] = __shfl_sync(0xffffffffu, w[i], lane);
        memcpy(&x, w, sizeof(Item));
        return x;
    }
};

// Named barriers (bar.sync / bar.arrive): `threads` threads (whole warps)
// meet at barrier `id` (1 to 15; 0 is __syncthreads). A producer arrives
// without waiting, a consumer syncs and waits for it; the writes to shared
// memory before the arrival are visible after the sync (PTX memory model:
// the arrive synchronizes with the sync of the same barrier).
__device__ __forceinline__ void barrier_sync(unsigned id, unsigned threads) {
    asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}
__device__ __forceinline__ void barrier_arrive(unsigned id, unsigned threads) {
    asm volatile("bar.arrive %0, %1;" ::"r"(id), "r"(threads) : "memory");
}

// The hand-over of shared-memory slots between warps of one block: barrier
// `b` (0 to N - 1) is met by `threads` threads (whole warps) each use; a
// producer signals it without waiting, a consumer waits there until every
// producer has signalled, and then sees the producers' earlier writes.
// From sm_90 these are mbarriers (every thread arrives, release; a consumer
// then waits on its arrival's phase, acquire): compute-sanitizer's racecheck
// follows them, while on named barriers (bar.arrive, then bar.sync: the same
// ordering by the PTX memory model) it reported hazards on correct rings of
// three slots (scan-cuda/probes/racecheck_ring.cu). Before sm_90 (no
// mbarrier.try_wait) they are named barriers FIRST_ID + b. `init` is called
// by every thread of the block, before any other use.
template <int N, unsigned FIRST_ID>
struct SlotBarriers {
    static_assert(FIRST_ID + N <= 16, "named barrier ids are 0 to 15");
#if __CUDA_ARCH__ >= 900
    u64 bars[N];
    __device__ __forceinline__ unsigned address(unsigned b) const {
        return (unsigned)__cvta_generic_to_shared(&bars[b]);
    }
    __device__ __forceinline__ void init(unsigned threads) {
        if (threadIdx.x == 0)
            for (unsigned b = 0; b < N; ++b)
                asm volatile("mbarrier.init.shared.b64 [%0], %1;" ::"r"(address(b)), "r"(threads) : "memory");
        __syncthreads();
    }
    __device__ __forceinline__ u64 arrive(unsigned b) {
        u64 phase;
        asm volatile("mbarrier.arrive.shared.b64 %0, [%1];" : "=l"(phase) : "r"(address(b)) : "memory");
        return phase;
    }
    __device__ __forceinline__ void signal(unsigned b, unsigned) { (void)arrive(b); }
    __device__ __forceinline__ void wait(unsigned b, unsigned) {
        const u64 phase = arrive(b);
        asm volatile(
            "{\n\t.reg .pred done;\n\tWAIT:\n\t"
            "mbarrier.try_wait.shared.b64 done, [%0], %1;\n\t"
            "@!done bra WAIT;\n\t}" ::"r"(address(b)),
            "l"(phase)
            : "memory");
    }
#else
    __device__ __forceinline__ void init(unsigned) {}
    __device__ __forceinline__ void signal(unsigned b, unsigned threads) { barrier_arrive(FIRST_ID + b, threads); }
    __device__ __forceinline__ void wait(unsigned b, unsigned threads) { barrier_sync(FIRST_ID + b, threads); }
#endif
};

__device__ __forceinline__ unsigned lane_id() { return threadIdx.x & 31u; }
__device__ __forceinline__ unsigned warp_id() { return threadIdx.x >> 5; }

}  // namespace scan
