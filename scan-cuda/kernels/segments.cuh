// Segment starts to head flags, for the FlagHeads single-pass scan
// (heads.cuh): CSR-style offsets, non-decreasing and each at most `len`
// (equal starts are empty segments, a start at `len` ends the last one).
// Sets flags[s] = 1 for every start s < len; the flags must be zero before.
// `*check` (0 before) becomes ~i for the least index i of a start that
// decreases or passes `len` (the largest ~i: atomicMax), and stays 0 when
// every start is good. The host reports a bad start as an error; the heads
// are unspecified then, and nothing is written: the bits scan reads the
// check first (heads.cuh, BitHeads::refused), and the flags are checked
// before any scan is queued.

namespace scan {

// Every start checked, grid-striding; `mark(s)` for each good start s < len.
template <class Mark>
__device__ __forceinline__ void check_starts(const u64* starts, u64 count, u64 len, u64* check, Mark mark) {
    const u64 step = (u64)gridDim.x * blockDim.x;
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += step) {
        const u64 s = starts[i];
        if (s > len || (i > 0 && starts[i - 1] > s)) {
            atomicMax(check, ~i);
        } else if (s < len) {
            mark(s);
        }
    }
}

__device__ __forceinline__ void segment_flags(const u64* starts, u64 count, u64 len, unsigned char* flags,
                                              u64* check) {
    check_starts(starts, count, len, check, [=](u64 s) { flags[s] = 1; });
}

// The same check, the starts set as bits (BitHeads): bit s of `bits`, 32-bit
// words here, read as 64-bit words by the scan (little-endian: the same
// bits). The words must be zero before; a start repeated (empty segments)
// sets its bit once.
__device__ __forceinline__ void segment_bits(const u64* starts, u64 count, u64 len, unsigned* bits, u64* check) {
    check_starts(starts, count, len, check, [=](u64 s) { atomicOr(bits + s / 32, 1u << (s % 32)); });
}

}  // namespace scan
