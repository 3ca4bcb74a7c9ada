// Does racecheck honour bar.arrive -> bar.sync hand-overs (named barriers)?
// Warp 0 writes slot[k], arrives at READY+k; warp 1 syncs there, reads it,
// arrives at DONE+k; warp 0 syncs at DONE+k before writing slot[k] again.
#include <cstdio>
__device__ __forceinline__ void arrive(unsigned id, unsigned n) { asm volatile("bar.arrive %0, %1;" ::"r"(id), "r"(n) : "memory"); }
__device__ __forceinline__ void sync(unsigned id, unsigned n) { asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(n) : "memory"); }
__global__ void probe(int* out, int rounds) {
    __shared__ int slot[2];
    const int warp = threadIdx.x / 32;
    int sum = 0;
    for (int i = 0; i < rounds; ++i) {
        const int k = i % 2;
        if (warp == 0) {
            if (i >= 2) sync(3 + k, 64);
            if (threadIdx.x == 0) slot[k] = i;
            arrive(1 + k, 64);
        } else {
            sync(1 + k, 64);
            sum += slot[k];
            arrive(3 + k, 64);
        }
    }
    if (threadIdx.x == 32) *out = sum;
}
int main() {
    int* d; cudaMalloc(&d, 4);
    probe<<<1, 64>>>(d, 8);
    int h = -1; cudaMemcpy(&h, d, 4, cudaMemcpyDeviceToHost);
    printf("sum %d (want %d) %s\n", h, 28, cudaGetErrorString(cudaGetLastError()));
    return h == 28 ? 0 : 1;
}
