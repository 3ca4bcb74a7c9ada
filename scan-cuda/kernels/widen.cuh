// Half-precision values widened to f32 on the device, exactly (widen.rs):
// the selective scan's bf16 and f16 activations cross PCIe at their own
// width, half the bytes of f32, and are widened here for the f32 kernels.
//
// A grid-stride loop; four values a thread a step (one 8-byte load, one
// 16-byte store) where both buffers allow it, one at a time otherwise and
// for the last n % 4.

namespace scan {

// bf16 is the upper half of an f32: widening is a shift (NaNs keep their
// payload; the `half` crate quiets signalling ones, a difference no
// arithmetic can see). f16 by the hardware conversion: exact, subnormals
// included.
template <bool BF16>
__device__ __forceinline__ float widen_half(unsigned bits) {
    if (BF16) return __uint_as_float(bits << 16);
#ifndef SCAN_HOST_EMULATION
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"((unsigned short)bits));
    return f;
#else
    return scan_emulator::f16_bits_to_float((unsigned short)bits);
#endif
}

template <bool BF16>
__device__ void widen_halves(const unsigned short* src, float* dst, u64 n) {
    const u64 threads = (u64)gridDim.x * blockDim.x;
    const u64 first = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    // Whole groups of four by vectors when the buffers are aligned for them
    // (device allocations are; a user's buffer is too, unless offset).
    const bool vectors = (((u64)src % 8) | ((u64)dst % 16)) == 0;
    const u64 quads = vectors ? n / 4 : 0;
    const uint2* src4 = reinterpret_cast<const uint2*>(src);
    float4* dst4 = reinterpret_cast<float4*>(dst);
    for (u64 i = first; i < quads; i += threads) {
        const uint2 w = src4[i];
        dst4[i] = make_float4(widen_half<BF16>(w.x & 0xffffu), widen_half<BF16>(w.x >> 16),
                              widen_half<BF16>(w.y & 0xffffu), widen_half<BF16>(w.y >> 16));
    }
    for (u64 i = 4 * quads + first; i < n; i += threads) dst[i] = widen_half<BF16>(src[i]);
}

}  // namespace scan
