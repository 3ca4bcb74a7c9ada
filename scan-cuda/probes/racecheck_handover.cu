// The single-pass kernel's slot hand-over (kernels/single_pass.cuh), alone:
// scanning warps and a look-back warp, STAGES slots, tiles claimed from a
// counter by a persistent grid. Run on a GPU machine:
//   nvcc -arch=sm_90 -lineinfo -o handover racecheck_handover.cu && ./handover
//   compute-sanitizer --tool racecheck ./handover
// On the H200 (2026-12-02, CUDA 13.0) every tile came back right ("bad 0")
// and racecheck reported hazards between thread 0's write of slot_tile[k]
// (the next tile of slot k) and the look-back warp's read of it, with one
// scanning warp as with two, though the write waits at PREFIXED + k for the
// look-back warp's arrival after its read (PTX: a barrier's completion
// orders the arriving threads' earlier accesses). racecheck_two_slots.cu,
// the same ring without the claim barrier or the persistent loop, ran clean.
// So the hazards racecheck reports on the single-pass kernels' slot_tile
// look like its false positives; this file is how to check a newer tool.
// racecheck.sh builds VARIANTs that each drop one part, to find the one
// that trips it: 1 one block; 2 tiles dealt by block index (no counter, no
// claim barrier); 3 the claim barrier kept, the stand-in for the block
// scan's barrier dropped; 4 the look-back warp counts its slots instead of
// returning at the end tile.
#ifndef VARIANT
#define VARIANT 0
#endif
#include <cstdio>
__device__ __forceinline__ void arrive(unsigned id, unsigned n) { asm volatile("bar.arrive %0, %1;" ::"r"(id), "r"(n) : "memory"); }
__device__ __forceinline__ void bsync(unsigned id, unsigned n) { asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(n) : "memory"); }
template <int STAGES, int SCAN_WARPS>
__global__ void probe(unsigned long long* counter, long long tiles, long long* out) {
    constexpr unsigned THREADS = 32 * SCAN_WARPS, ALL = THREADS + 32, SCANNERS = 1, READY = 2, PREFIXED = 2 + STAGES;
    __shared__ long long slot_tile[STAGES];
    __shared__ long long claimed[2];
    __shared__ long long slot_val[STAGES];
    const int warp = threadIdx.x / 32;
    if (warp == SCAN_WARPS) {
        for (unsigned i = 0;; ++i) {
            const int k = i % STAGES;
            bsync(READY + k, ALL);
            const long long tile = slot_tile[k];
#if VARIANT == 4
            if (tile >= tiles) { arrive(PREFIXED + k, ALL); return; }
#else
            if (tile >= tiles) return;
#endif
            if (threadIdx.x == THREADS) slot_val[k] = tile * 2;
            __syncwarp();
            arrive(PREFIXED + k, ALL);
        }
    }
    auto store = [&](int k) {
        bsync(PREFIXED + k, ALL);
        const long long tile = slot_tile[k];
        if (tile < tiles && threadIdx.x == 0) out[tile] = slot_val[k];
    };
    unsigned i = 0;
    for (;; ++i) {
        const int k = i % STAGES;
        if (i >= STAGES) store(k);
#if VARIANT == 2
        const long long dealt = (long long)blockIdx.x + (long long)i * gridDim.x;
        const long long tile = dealt < tiles ? dealt : tiles;
#else
        if (threadIdx.x == 0) { long long t = atomicAdd(counter, 1ull); claimed[i & 1] = t < tiles ? t : tiles; }
        bsync(SCANNERS, THREADS);
        const long long tile = claimed[i & 1];
#endif
        if (tile >= tiles) {
            if (threadIdx.x == 0) slot_tile[k] = tiles;
            arrive(READY + k, ALL);
            break;
        }
#if VARIANT != 3
        bsync(SCANNERS, THREADS);  // stands for the block scan's barriers
#endif
        if (threadIdx.x == 0) slot_tile[k] = tile;
        arrive(READY + k, ALL);
    }
    for (unsigned j = i >= STAGES - 1 ? i - (STAGES - 1) : 0; j < i; ++j) store(j % STAGES);
}
int main() {
    const long long tiles = 4000;
    unsigned long long* c; long long* o;
    cudaMalloc(&c, 8); cudaMemset(c, 0, 8); cudaMalloc(&o, tiles * 8);
    long long* h = new long long[tiles];
    long long bad = 0;
    for (int s = 2; s <= 3; ++s) {
        cudaMemset(o, 0xff, tiles * 8);
#ifndef WARPS
#define WARPS 2
#endif
        const int blocks = VARIANT == 1 ? 1 : 32;
        if (s == 2) probe<2, WARPS><<<blocks, 32 * WARPS + 32>>>(c, tiles, o);
        else probe<3, WARPS><<<blocks, 32 * WARPS + 32>>>(c, tiles, o);
        cudaMemcpy(h, o, tiles * 8, cudaMemcpyDeviceToHost);
        for (long long t = 0; t < tiles; ++t) bad += h[t] != 2 * t;
        cudaMemset(c, 0, 8);
    }
    printf("bad %lld %s\n", bad, cudaGetErrorString(cudaGetLastError()));
    return bad != 0;
}
