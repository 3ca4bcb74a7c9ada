// A host emulation of the CUDA execution model, for running kernel
// templates (kernels/*.cuh) on a machine without a GPU: each CUDA thread is
// a fiber (ucontext) of one OS thread, and a block's fibers run until they
// meet at __syncthreads or a warp shuffle; blocks run one after another.
// It checks a kernel's logic (indexing, barriers, shuffles, partial sums),
// not its memory-model use or its speed; results differ from the GPU's in
// the last bits where the GPU contracts a * b + c into an FMA or uses the
// SFU's approximations (ex2.approx and friends are exp2f and friends here).
//
// Include this before the kernel headers. What it provides:
//   - threadIdx, blockIdx, blockDim, gridDim; __syncthreads, __syncwarp;
//     __shfl_sync / _up / _down / _xor and __ballot_sync with the full mask;
//   - __popc, __vcmpne4;
//   - float2, float4, uint2, uint4, make_float2, make_float4, __trap (an
//     abort), __uint_as_float; `f16_bits_to_float` for the kernel headers'
//     PTX `cvt.f32.f16` (the compiler's _Float16, GCC 12 or clang 15 on x86-64);
//   - dynamic shared memory through `dynamic_shared(bytes)` (the kernel
//     headers take it under SCAN_HOST_EMULATION): a launch's block gets
//     `shared_bytes` bytes filled with a NaN pattern, so a read of shared
//     memory nobody wrote shows up as NaN;
//   - `launch(grid, block, shared_bytes, seed, body)`: the fibers of each
//     block are resumed in an order shuffled by `seed` at every round, so
//     a missing barrier shows as a wrong result rather than passing by
//     luck of the order; a deadlock (every fiber waiting, none released)
//     aborts with a message.
// Static `__shared__` arrays are NOT emulated (they would be per-fiber
// here); only kernels whose shared memory is dynamic can be run.
//
// What it cannot see (compute-sanitizer on the GPU can): a fiber runs
// without interruption from one barrier or shuffle to the next, so a race
// inside such a segment shows as one order or the other, never a torn
// mix; every shuffle also orders the warp's shared-memory accesses, which
// the GPU does not promise; __syncwarp and a shuffle's internal barrier
// are not told apart. Out-of-bounds global accesses are the host's (build
// with -fsanitize=address to catch them).

#pragma once

#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <vector>

#define SCAN_HOST_EMULATION 1
#define __device__
#define __global__
#define __host__
#define __forceinline__ inline
#define __align__(n) alignas(n)
#define __launch_bounds__(...)
#define __shared__
#define __restrict__

struct dim3 {
    unsigned x = 1, y = 1, z = 1;
};
struct alignas(8) float2 {
    float x, y;
};
struct alignas(16) float4 {
    float x, y, z, w;
};
struct alignas(8) uint2 {
    unsigned x, y;
};
struct alignas(16) uint4 {
    unsigned x, y, z, w;
};
inline float2 make_float2(float x, float y) { return float2{x, y}; }
inline float4 make_float4(float x, float y, float z, float w) { return float4{x, y, z, w}; }
inline float __uint_as_float(unsigned u) {
    float f;
    std::memcpy(&f, &u, sizeof f);
    return f;
}

namespace scan_emulator {

// An f16's bits as a float, by the compiler's conversion (exact, as PTX's
// cvt.f32.f16 is).
inline float f16_bits_to_float(unsigned short bits) {
    _Float16 h;
    std::memcpy(&h, &bits, sizeof h);
    return (float)h;
}

[[noreturn]] inline void fail(const char* what) {
    std::fprintf(stderr, "cuda emulator: %s\n", what);
    std::abort();
}

// A fiber's stack, with an inaccessible page below it, so that an overflow
// faults instead of corrupting a neighbour.
struct Stack {
    static constexpr std::size_t BYTES = 256 * 1024;
    unsigned char* mapping = nullptr;
    std::size_t page = 0;
    Stack() {
        page = (std::size_t)sysconf(_SC_PAGESIZE);
        void* m = mmap(nullptr, BYTES + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED) fail("cannot map a fiber stack");
        mapping = static_cast<unsigned char*>(m);
        if (mprotect(mapping, page, PROT_NONE) != 0) fail("cannot protect a fiber stack's guard page");
    }
    Stack(const Stack&) = delete;
    Stack& operator=(const Stack&) = delete;
    ~Stack() { munmap(mapping, BYTES + page); }
    void* base() const { return mapping + page; }
};

struct Fiber {
    ucontext_t context;
    Stack stack;
    dim3 index;
    bool done = false;
};

// The block being run: its fibers, barriers and shared memory.
struct Block {
    std::vector<Fiber> fibers;
    unsigned live = 0;  // fibers not yet returned
    unsigned arrived = 0;
    unsigned long long generation = 0;
    std::vector<unsigned> warp_arrived;
    std::vector<unsigned long long> warp_generation;
    std::vector<unsigned long long> slots;  // one 8-byte word per thread, for shuffles
    std::vector<unsigned char> shared;
    bool progress = false;
};

inline Block* block = nullptr;
inline Fiber* current = nullptr;
inline ucontext_t scheduler;
inline dim3 block_index, block_dim, grid_dim;
inline const std::function<void()>* body = nullptr;

inline void yield() { swapcontext(&current->context, &scheduler); }

inline unsigned flat_thread() {
    const dim3 i = current->index;
    return i.x + block_dim.x * (i.y + block_dim.y * i.z);
}

inline void sync_block() {
    Block& b = *block;
    b.progress = true;
    const unsigned long long generation = b.generation;
    if (++b.arrived == b.live) {
        b.arrived = 0;
        ++b.generation;
    } else {
        while (b.generation == generation) yield();
    }
}

inline void sync_warp() {
    Block& b = *block;
    b.progress = true;
    const unsigned warp = flat_thread() / 32;
    const unsigned threads = block_dim.x * block_dim.y * block_dim.z;
    const unsigned size = std::min(32u, threads - 32 * warp);
    const unsigned long long generation = b.warp_generation[warp];
    if (++b.warp_arrived[warp] == size) {
        b.warp_arrived[warp] = 0;
        ++b.warp_generation[warp];
    } else {
        while (b.warp_generation[warp] == generation) yield();
    }
}

// Every lane offers `value`; returns the one lane `source(lane)` offered.
template <class T, class Source>
inline T exchange(unsigned mask, T value, Source source) {
    static_assert(sizeof(T) <= 8, "shuffles move at most 8 bytes");
    if (mask != 0xffffffffu) fail("shuffles with a partial mask are not emulated");
    const unsigned me = flat_thread(), lane = me % 32;
    unsigned long long word = 0;
    std::memcpy(&word, &value, sizeof(T));
    block->slots[me] = word;
    sync_warp();
    const unsigned from = me - lane + source(lane);
    if (from >= block->slots.size()) fail("a shuffle from a lane past the block's last thread");
    std::memcpy(&value, &block->slots[from], sizeof(T));
    sync_warp();
    return value;
}

// Every lane offers `predicate`; returns the warp's bits (lane i's at bit i).
inline unsigned ballot(unsigned mask, bool predicate) {
    if (mask != 0xffffffffu) fail("ballots with a partial mask are not emulated");
    const unsigned me = flat_thread(), lane = me % 32, first = me - lane;
    block->slots[me] = predicate ? 1 : 0;
    sync_warp();
    unsigned bits = 0;
    for (unsigned i = 0; i < 32 && first + i < block->slots.size(); ++i)
        bits |= (block->slots[first + i] != 0 ? 1u : 0u) << i;
    sync_warp();
    return bits;
}

inline void* dynamic_shared(std::size_t bytes) {
    if (block->shared.size() < bytes) fail("the launch gave less dynamic shared memory than the kernel uses");
    return block->shared.data();
}

inline void trampoline() {
    (*body)();
    current->done = true;
    --block->live;
    block->progress = true;
    // A block barrier that waited only for this fiber is now complete.
    if (block->arrived != 0 && block->arrived == block->live) {
        block->arrived = 0;
        ++block->generation;
    }
    swapcontext(&current->context, &scheduler);
}

// Runs `kernel` (the body of a __global__ function) on a grid of `grid`
// blocks of `threads` threads, one block at a time, x fastest.
inline void launch(dim3 grid, dim3 threads, std::size_t shared_bytes, unsigned seed,
                   const std::function<void()>& kernel) {
    std::mt19937 random(seed);
    grid_dim = grid;
    block_dim = threads;
    body = &kernel;
    const unsigned count = threads.x * threads.y * threads.z;
    for (unsigned bz = 0; bz < grid.z; ++bz)
        for (unsigned by = 0; by < grid.y; ++by)
            for (unsigned bx = 0; bx < grid.x; ++bx) {
                Block b;
                block = &b;
                block_index = dim3{bx, by, bz};
                b.fibers = std::vector<Fiber>(count);
                b.live = count;
                b.warp_arrived.assign((count + 31) / 32, 0);
                b.warp_generation.assign((count + 31) / 32, 0);
                b.slots.assign(count, 0);
                b.shared.assign(shared_bytes, 0xff);  // NaN floats
                for (unsigned t = 0; t < count; ++t) {
                    Fiber& f = b.fibers[t];
                    f.index = dim3{t % threads.x, t / threads.x % threads.y, t / (threads.x * threads.y)};
                    getcontext(&f.context);
                    f.context.uc_stack.ss_sp = f.stack.base();
                    f.context.uc_stack.ss_size = Stack::BYTES;
                    f.context.uc_link = nullptr;
                    makecontext(&f.context, trampoline, 0);
                }
                std::vector<unsigned> order(count);
                for (unsigned t = 0; t < count; ++t) order[t] = t;
                while (b.live > 0) {
                    std::shuffle(order.begin(), order.end(), random);
                    b.progress = false;
                    for (unsigned t : order) {
                        Fiber& f = b.fibers[t];
                        if (f.done) continue;
                        current = &f;
                        swapcontext(&scheduler, &f.context);
                    }
                    if (!b.progress) fail("deadlock: every thread waits at a barrier that none will complete");
                }
                block = nullptr;
                current = nullptr;
            }
}

}  // namespace scan_emulator

#define threadIdx (scan_emulator::current->index)
#define blockIdx (scan_emulator::block_index)
#define blockDim (scan_emulator::block_dim)
#define gridDim (scan_emulator::grid_dim)

inline void __syncthreads() { scan_emulator::sync_block(); }
inline void __syncwarp(unsigned mask = 0xffffffffu) {
    if (mask != 0xffffffffu) scan_emulator::fail("__syncwarp with a partial mask is not emulated");
    scan_emulator::sync_warp();
}
[[noreturn]] inline void __trap() { scan_emulator::fail("__trap"); }
inline unsigned __ballot_sync(unsigned mask, bool predicate) { return scan_emulator::ballot(mask, predicate); }
inline int __popc(unsigned x) { return __builtin_popcount(x); }
// 0xff in each byte of `a` that differs from `b`'s, 0 elsewhere.
inline unsigned __vcmpne4(unsigned a, unsigned b) {
    unsigned r = 0;
    for (int i = 0; i < 32; i += 8)
        if (((a >> i) & 0xffu) != ((b >> i) & 0xffu)) r |= 0xffu << i;
    return r;
}
// A streaming store (st.global.cs): a plain store here.
inline void __stcs(float4* p, float4 v) { *p = v; }
inline void __stcs(float* p, float v) { *p = v; }
template <class T>
inline T min(T a, T b) {
    return a < b ? a : b;
}
template <class T>
inline T max(T a, T b) {
    return a < b ? b : a;
}
// The shuffles as the CUDA programming guide defines them for a `width`
// (a power of two up to 32) of lanes: a source outside the caller's group
// of `width` reads the caller's own value, except for xor, which may read
// an earlier group.
namespace scan_emulator {
inline unsigned checked_width(int width) {
    if (width < 1 || width > 32 || (width & (width - 1)) != 0) fail("a shuffle width that is not a power of two up to 32");
    return (unsigned)width;
}
}  // namespace scan_emulator
template <class T>
inline T __shfl_sync(unsigned mask, T v, int lane, int width = 32) {
    const unsigned w = scan_emulator::checked_width(width);
    return scan_emulator::exchange(mask, v, [&](unsigned me) { return (me & ~(w - 1)) + ((unsigned)lane & (w - 1)); });
}
template <class T>
inline T __shfl_xor_sync(unsigned mask, T v, int m, int width = 32) {
    const unsigned w = scan_emulator::checked_width(width);
    return scan_emulator::exchange(mask, v, [&](unsigned me) {
        const unsigned to = (me ^ (unsigned)m) & 31u;
        return to <= (me | (w - 1)) ? to : me;
    });
}
template <class T>
inline T __shfl_up_sync(unsigned mask, T v, unsigned delta, int width = 32) {
    scan_emulator::checked_width(width);
    return scan_emulator::exchange(mask, v, [&](unsigned me) {
        const unsigned base = me & ~(unsigned)(width - 1);
        return me >= base + delta ? me - delta : me;
    });
}
template <class T>
inline T __shfl_down_sync(unsigned mask, T v, unsigned delta, int width = 32) {
    scan_emulator::checked_width(width);
    return scan_emulator::exchange(mask, v, [&](unsigned me) {
        const unsigned base = me & ~(unsigned)(width - 1);
        return me + delta < base + (unsigned)width ? me + delta : me;
    });
}
