// The emulator's own semantics, against the CUDA programming guide: the
// shuffles with their widths and out-of-range sources, a ballot, __popc and
// __vcmpne4, barriers reached
// after other threads have exited, and dynamic shared memory seen by the
// whole block. scan-cuda/tests/emulated.rs runs it; exit status 0 and
// "emulator self-test: ok" when every check holds.

#include "cuda_emulator.hpp"

namespace {

int failures = 0;

void expect(bool ok, const char* what, unsigned lane, int got, int want) {
    if (!ok) {
        std::fprintf(stderr, "%s: lane %u got %d, want %d\n", what, lane, got, want);
        ++failures;
    }
}

// One warp; each lane offers its lane id.
void shuffles() {
    const unsigned lane = threadIdx.x;
    const int v = (int)lane;
    // xor within the warp, and with width 16: a partner in an earlier group
    // is read, one in a later group gives the caller's own value.
    int got = __shfl_xor_sync(0xffffffffu, v, 5);
    expect(got == (int)(lane ^ 5), "xor 5", lane, got, (int)(lane ^ 5));
    got = __shfl_xor_sync(0xffffffffu, v, 16, 16);
    const int want_xor16 = lane >= 16 ? (int)(lane - 16) : (int)lane;
    expect(got == want_xor16, "xor 16, width 16", lane, got, want_xor16);
    // Indexed, with a source modulo the width (negative too).
    got = __shfl_sync(0xffffffffu, v, -1, 8);
    const int want_idx = (int)((lane & ~7u) + 7);
    expect(got == want_idx, "from -1, width 8", lane, got, want_idx);
    got = __shfl_sync(0xffffffffu, v, 33);
    expect(got == 1, "from 33", lane, got, 1);
    // Up and down clamp at their group's edge.
    got = __shfl_up_sync(0xffffffffu, v, 3, 16);
    const int want_up = (lane & 15u) >= 3 ? (int)(lane - 3) : (int)lane;
    expect(got == want_up, "up 3, width 16", lane, got, want_up);
    got = __shfl_down_sync(0xffffffffu, v, 3, 16);
    const int want_down = (lane & 15u) + 3 < 16 ? (int)(lane + 3) : (int)lane;
    expect(got == want_down, "down 3, width 16", lane, got, want_down);
    // A ballot: lane i's predicate at bit i, the same bits for every lane.
    const unsigned bits = __ballot_sync(0xffffffffu, lane % 3 == 0 || lane == 31);
    expect(bits == 0xc9249249u, "ballot of lanes 0 mod 3 and 31", lane, (int)bits, (int)0xc9249249u);
    expect(__popc(bits) == 12, "popc of that ballot", lane, __popc(bits), 12);
    const unsigned ne = __vcmpne4(0x00120034u, 0x00ff0034u);
    expect(ne == 0x00ff0000u, "vcmpne4", lane, (int)ne, 0x00ff0000);
}

// Two warps; the second warp's upper half exits early, the rest meet at a
// barrier twice (a thread that has exited no longer counts), and every
// thread sees what the others wrote to shared memory before it.
void barriers_and_shared() {
    int* shared = static_cast<int*>(scan_emulator::dynamic_shared(64 * sizeof(int)));
    const unsigned t = threadIdx.x;
    if (t >= 48) return;
    shared[t] = (int)(t * t);
    __syncthreads();
    const unsigned other = 47 - t;
    const int got = shared[other];
    __syncthreads();
    expect(got == (int)(other * other), "shared after a barrier", t, got, (int)(other * other));
}

}  // namespace

int main() {
    for (unsigned seed = 0; seed < 4; ++seed) {
        scan_emulator::launch(dim3{2, 1, 1}, dim3{32, 1, 1}, 0, seed, shuffles);
        scan_emulator::launch(dim3{3, 1, 1}, dim3{64, 1, 1}, 64 * sizeof(int), seed, barriers_and_shared);
    }
    if (failures != 0) return 1;
    std::printf("emulator self-test: ok\n");
    return 0;
}
