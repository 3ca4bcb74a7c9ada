// racecheck_two_slots.cu grown one feature at a time towards
// racecheck_handover.cu: the first VARIANT that racecheck reports hazards on
// names the feature it cannot follow. Every variant is a correct ring (each
// write of slot[k] waits at DONE+k for the reader's arrival after its read;
// each read waits at READY+k for the writer's arrival after its write), and
// checks its own result. racecheck.sh runs them all.
//   0 two_slots.cu as it is (the control)
//   1 + STAGES 3
//   2 + the reader warp's lane 0 writes val[k] back, the writer reads it after DONE+k
//   3 + the writer warp syncs a barrier of its own (id 1) before each write
//   4 + two writer warps (thread 0 writes), their own barrier between rounds
//   5 + the round count unknown to the reader: it stops at a sentinel in slot[k]
//   6 all of 1-5
// With -DMBAR=1 the ring hands over through mbarriers (arrive, then wait on
// the arrival's token) instead of named barriers (bar.arrive, bar.sync).
#ifndef VARIANT
#define VARIANT 0
#endif
#ifndef __CUDACC_RTC__
#include <cstdio>
#endif
__device__ __forceinline__ void arrive(unsigned id, unsigned n) { asm volatile("bar.arrive %0, %1;" ::"r"(id), "r"(n) : "memory"); }
__device__ __forceinline__ void bsync(unsigned id, unsigned n) { asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(n) : "memory"); }
#ifndef MBAR
#define MBAR 0
#endif
__device__ __forceinline__ unsigned smem(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }
__device__ __forceinline__ unsigned long long mb_arrive(unsigned long long* b) {
    unsigned long long state;
    asm volatile("mbarrier.arrive.shared.b64 %0, [%1];" : "=l"(state) : "r"(smem(b)) : "memory");
    return state;
}
__device__ __forceinline__ void mb_wait(unsigned long long* b, unsigned long long state) {
    asm volatile(
        "{\n\t.reg .pred p;\n\tWAIT:\n\tmbarrier.try_wait.shared.b64 p, [%0], %1;\n\t@!p bra WAIT;\n\t}"
        ::"r"(smem(b)), "l"(state) : "memory");
}
// Feature f is on in VARIANT f, and all of them in VARIANT 6.
#define has(f) (VARIANT == (f) || (VARIANT == 6 && (f) >= 1 && (f) <= 5))
constexpr int STAGES = has(1) ? 3 : 2;
constexpr int WRITERS = has(4) ? 2 : 1;  // writer warps
constexpr unsigned ALL = 32 * (WRITERS + 1), WRITER_BAR = 1, READY = 2, DONE = 2 + STAGES;
__global__ void probe(int* out, int rounds) {
    __shared__ int slot[STAGES];
    __shared__ int val[STAGES];
    // The hand-over: the side that signals arrives only, the side that
    // waits arrives and waits for the phase to complete (every thread of
    // the block arrives once per round and barrier).
    __shared__ unsigned long long mbar[2 * STAGES];
    if (MBAR && threadIdx.x == 0)
        for (int b = 0; b < 2 * STAGES; ++b)
            asm volatile("mbarrier.init.shared.b64 [%0], %1;" ::"r"(smem(&mbar[b])), "r"(ALL) : "memory");
    if (MBAR) __syncthreads();
    auto signal = [&](unsigned id) { if (MBAR) (void)mb_arrive(&mbar[id - 2]); else arrive(id, ALL); };
    auto wait = [&](unsigned id) { if (MBAR) mb_wait(&mbar[id - 2], mb_arrive(&mbar[id - 2])); else bsync(id, ALL); };
    const int warp = threadIdx.x / 32;
    int sum = 0;
    if (warp == WRITERS) {  // the reader
        for (int i = 0; has(5) || i < rounds; ++i) {
            const int k = i % STAGES;
            wait(READY + k);
            const int v = slot[k];
            if (has(5) && v < 0) break;
            sum += v;
            if (has(2) && threadIdx.x == 32 * WRITERS) val[k] = 2 * v;
            __syncwarp();
            signal(DONE + k);
        }
        if (threadIdx.x == 32 * WRITERS) out[0] = sum;
        return;
    }
    for (int i = 0; i < rounds + (has(5) ? 1 : 0); ++i) {
        const int k = i % STAGES;
        if (i >= STAGES) {
            wait(DONE + k);
            if (has(2) && threadIdx.x == 0) sum += val[k];
        }
        if (has(3) || has(4)) bsync(WRITER_BAR, 32 * WRITERS);
        if (threadIdx.x == 0) slot[k] = i < rounds ? i : -1;
        signal(READY + k);
    }
    // The reads of val in the last STAGES - 1 rounds still owed.
    if (has(2)) {
        for (int i = rounds + (has(5) ? 1 : 0); i < rounds + STAGES; ++i) {
            const int k = i % STAGES;
            if (i - STAGES < rounds) { wait(DONE + k); if (threadIdx.x == 0) sum += val[k]; }
        }
        if (threadIdx.x == 0) out[1] = sum;
    }
}
#ifndef __CUDACC_RTC__
int main() {
    const int rounds = 8;
    int* d; cudaMalloc(&d, 8); cudaMemset(d, 0xff, 8);
    probe<<<1, 32 * (WRITERS + 1)>>>(d, rounds);
    int h[2] = {-1, -1}; cudaMemcpy(h, d, 8, cudaMemcpyDeviceToHost);
    const int want = rounds * (rounds - 1) / 2;
    const bool ok = h[0] == want && (!has(2) || h[1] == 2 * want);
    printf("variant %d%s: sum %d (want %d) back %d %s %s\n", VARIANT, MBAR ? " (mbarriers)" : "", h[0], want, h[1], ok ? "ok" : "WRONG",
           cudaGetErrorString(cudaGetLastError()));
    return ok ? 0 : 1;
}
#endif
