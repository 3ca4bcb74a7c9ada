// The widening kernels (kernels/widen.cuh) on buffers at every alignment.
// On a GPU they get whole device allocations, always aligned for the
// vector path; this runs the scalar path too (a source not 8-byte aligned
// or a destination not 16-byte aligned), on grids that make threads stride
// over several groups, with lengths around a group of four and a grid's
// stride. Each value is checked against a plain decoding of its bits (NaNs
// only as NaNs), the words around the output must keep their sentinel, and
// the input must be left as it was. A vector access at a misaligned
// address is undefined here as on the GPU: GCC's aligned moves fault on it
// (the harness dies), and CXX="c++ -fsanitize=alignment" names it.
//
// scan-cuda/tests/emulated.rs runs it; exit status 0 and
// "widen: N cases ok" when every case holds.

#include "cuda_emulator.hpp"

// The module's sources, in the order widen.rs gives NVRTC.
// clang-format off
#include "../kernels/util.cuh"
#include "../kernels/widen.cuh"
// clang-format on

using scan::u64;

namespace {

int failures = 0, cases = 0;

// The f32 bits of a bf16's or an f16's `bits`, decoded field by field.
unsigned expected_bits(unsigned short bits, bool bf16) {
    if (bf16) return (unsigned)bits << 16;
    const unsigned sign = (unsigned)(bits >> 15) << 31, exponent = (bits >> 10) & 31u, mantissa = bits & 1023u;
    if (exponent == 31) return sign | 0x7f800000u | (mantissa << 13);  // infinity or NaN
    if (exponent != 0) return sign | ((exponent - 15 + 127) << 23) | (mantissa << 13);
    const float magnitude = std::ldexp((float)mantissa, -24);  // zero or subnormal: exact in f32
    unsigned m;
    std::memcpy(&m, &magnitude, sizeof m);
    return sign | m;
}

bool is_nan(unsigned f32_bits) { return (f32_bits & 0x7f800000u) == 0x7f800000u && (f32_bits & 0x7fffffu) != 0; }

constexpr unsigned SENTINEL = 0xa5a5a5a5u;

// One case: `n` random halves starting `src_offset` halves into 16-byte
// aligned storage, widened to `dst_offset` floats into another, on `blocks`
// blocks of `threads`.
void check(bool bf16, u64 n, unsigned src_offset, unsigned dst_offset, unsigned blocks, unsigned threads,
           std::mt19937& random) {
    ++cases;
    std::vector<uint4> src_storage((src_offset + n + 7) / 8 + 1);
    unsigned short* src = reinterpret_cast<unsigned short*>(src_storage.data()) + src_offset;
    for (u64 i = 0; i < n; ++i) src[i] = (unsigned short)random();
    const std::vector<uint4> src_before = src_storage;
    std::vector<uint4> dst_storage((dst_offset + n + 3) / 4 + 2);
    std::fill_n(reinterpret_cast<unsigned*>(dst_storage.data()), dst_storage.size() * 4, SENTINEL);
    float* dst = reinterpret_cast<float*>(dst_storage.data()) + dst_offset;

    scan_emulator::launch(dim3{blocks, 1, 1}, dim3{threads, 1, 1}, 0, (unsigned)random(), [&] {
        if (bf16)
            scan::widen_halves<true>(src, dst, n);
        else
            scan::widen_halves<false>(src, dst, n);
    });

    const char* format = bf16 ? "bf16" : "f16";
    const unsigned* words = reinterpret_cast<const unsigned*>(dst_storage.data());
    const u64 total = dst_storage.size() * 4;
    for (u64 w = 0; w < total; ++w) {
        const bool output = w >= dst_offset && w < dst_offset + n;
        if (!output) {
            if (words[w] != SENTINEL) {
                std::fprintf(stderr, "%s, %llu items at +%u -> +%u, %u x %u: word %llu outside the output written\n",
                             format, n, src_offset, dst_offset, blocks, threads, w);
                ++failures;
                return;
            }
            continue;
        }
        const u64 i = w - dst_offset;
        const unsigned want = expected_bits(src[i], bf16), got = words[w];
        if (got != want && !(is_nan(want) && is_nan(got))) {
            std::fprintf(stderr, "%s, %llu items at +%u -> +%u, %u x %u: item %llu (bits %04x) widened to %08x, not %08x\n",
                         format, n, src_offset, dst_offset, blocks, threads, i, src[i], got, want);
            ++failures;
            return;
        }
    }
    if (std::memcmp(src_before.data(), src_storage.data(), src_storage.size() * sizeof(uint4)) != 0) {
        std::fprintf(stderr, "%s, %llu items: the input changed\n", format, n);
        ++failures;
    }
}

}  // namespace

int main() {
    std::mt19937 random(20261207);
    // Around a group of four, a warp's and a block's groups, and the
    // grids' strides (3 x 64 threads: 192 groups, 768 items a stride).
    const u64 lengths[] = {0, 1, 2, 3, 4, 5, 7, 8, 9, 127, 128, 129, 767, 768, 769, 1023, 1024, 1027, 2305, 4099};
    const unsigned offsets[] = {0, 1, 2, 3, 4};  // halves into the source, floats into the output
    const unsigned grids[][2] = {{1, 64}, {3, 64}, {2, 32}, {1, 256}};
    for (bool bf16 : {true, false})
        for (u64 n : lengths)
            for (unsigned src_offset : offsets)
                for (unsigned dst_offset : offsets)
                    for (const auto& grid : grids) check(bf16, n, src_offset, dst_offset, grid[0], grid[1], random);
    if (failures != 0) {
        std::fprintf(stderr, "widen: %d of %d cases failed\n", failures, cases);
        return 1;
    }
    std::printf("widen: %d cases ok\n", cases);
}
