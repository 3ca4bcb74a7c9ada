// Segment heads: where, in scan order, an independent scan starts. The
// single-pass kernel (single_pass.cuh) takes one of these as a policy:
//
//   NoHeads    one scan of the whole input (the plain kernel; its code path
//              does not change);
//   RowHeads   rows of `row_len` items: a head at every scan position that is
//              a multiple of row_len. The reverse scan reads positions from
//              the end, and the length is a multiple of row_len, so the same
//              rule holds in both directions. Rows may be `stride` items
//              apart in memory (a column block, a padded layout);
//   FlagHeads  a byte per item, nonzero where a segment starts (in memory
//              order; item 0 always starts one). In a reverse scan a segment
//              starts, in scan order, at its last item: the item before a
//              flagged one, or the last item.
//   BitHeads   a bit per item (bit i % 64 of 64-bit word i / 64), set where a
//              segment starts, in memory order as FlagHeads; item 0 always
//              starts one. From segment starts (segments.cuh, segment_bits):
//              the scan reads 1/8 byte per item for its heads, where
//              FlagHeads reads one (and a flags pass writes one).
//   TileRows   consecutive rows of `row_len` items, a whole number of tiles
//              each (two or more for item arrays, whose rows of one tile run
//              row_tiles.cuh, a block per row; one or more through fused
//              maps): no head falls inside a tile, so the kernel
//              takes the plain code path (NONE), and a tile that starts a
//              row neither looks back nor joins a prefix. The segmented
//              path's extra work per item (Headed<Op>, head masks) is gone.
//              The other tiles look back no further than their row's first
//              tile (`first_tile`), with the free look-back or the
//              deterministic one's fixed groups (lookback.cuh).
//
// `refused()`: whether the scan must write nothing (BitHeads from starts
// found bad; the others never refuse).
//
// Tiles cover scan positions whatever the segments, so short and long
// segments fill tiles alike. Inside a tile the scans are segmented: the
// thread and block layers run Headed<Op>, the lifted monoid over (value,
// head), whose combine restarts at a head. A tile that contains a head knows
// its inclusive prefix without looking back; single_pass.cuh publishes it at
// once, so that every look-back ends at its own segment's first tile.

namespace scan {

// (value, whether a head lies in the range): x ∘ y = y when y contains a head,
// else (x.value ∘ y.value, x.head).
template <class Op>
struct Headed {
    struct Item {
        typename Op::Item value;
        unsigned head;
    };
    static __device__ __forceinline__ Item identity() {
        Item x;
        x.value = Op::identity();
        x.head = 0u;
        return x;
    }
    static __device__ __forceinline__ Item combine(Item x, Item y) {
        Item r;
        r.value = y.head ? y.value : Op::combine(x.value, y.value);
        r.head = x.head | y.head;
        return r;
    }
};

struct NoHeads {
    static constexpr bool NONE = true;
    static constexpr bool TILE_ROWS = false;
    u64 len;
    // Memory index of flat index m (m = the scan position, or its mirror in
    // a reverse scan).
    __device__ __forceinline__ u64 memory(u64 m) const { return m; }
    __device__ __forceinline__ bool contiguous() const { return true; }
    __device__ __forceinline__ bool refused() const { return false; }
    template <int N, bool REVERSE>
    __device__ __forceinline__ u64 run(u64) const { return 0; }
};

struct TileRows {
    static constexpr bool NONE = true;
    static constexpr bool TILE_ROWS = true;
    u64 len;      // scan positions in all: rows * row_len
    u64 row_len;  // a multiple of the kernel's tile

    __device__ __forceinline__ u64 memory(u64 m) const { return m; }
    __device__ __forceinline__ bool contiguous() const { return true; }
    __device__ __forceinline__ bool refused() const { return false; }
    template <int N, bool REVERSE>
    __device__ __forceinline__ u64 run(u64) const { return 0; }
    // Whether tile `tile` of TILE items starts a row (in either direction:
    // len is a whole number of rows).
    template <int TILE>
    __device__ __forceinline__ bool starts(i64 tile) const { return (u64)tile * TILE % row_len == 0; }
    // The first tile of tile `tile`'s row.
    template <int TILE>
    __device__ __forceinline__ i64 first_tile(i64 tile) const {
        const i64 per_row = (i64)(row_len / TILE);
        return tile - tile % per_row;
    }
};

struct RowHeads {
    static constexpr bool NONE = false;
    static constexpr bool TILE_ROWS = false;
    u64 len;      // scan positions in all: rows * row_len
    u64 row_len;  // >= 1
    u64 stride;   // >= row_len: items from one row's start to the next's

    __device__ __forceinline__ u64 memory(u64 m) const { return m / row_len * stride + m % row_len; }
    __device__ __forceinline__ bool contiguous() const { return stride == row_len; }
    __device__ __forceinline__ bool refused() const { return false; }
    // Bit i set where scan position q + i is a head, for a run of N <= 64.
    template <int N, bool REVERSE>
    __device__ __forceinline__ u64 run(u64 q) const {
        u64 r = q % row_len, mask = 0;
#pragma unroll
        for (int i = 0; i < N; ++i) {
            if (r == 0) mask |= 1ull << i;
            r = r + 1 == row_len ? 0 : r + 1;
        }
        return mask;
    }
};

struct FlagHeads {
    static constexpr bool NONE = false;
    static constexpr bool TILE_ROWS = false;
    u64 len;
    const unsigned char* flags;  // one per item, memory order

    __device__ __forceinline__ u64 memory(u64 m) const { return m; }
    __device__ __forceinline__ bool contiguous() const { return true; }
    __device__ __forceinline__ bool refused() const { return false; }
    template <int N, bool REVERSE>
    __device__ __forceinline__ u64 run(u64 q) const {
        u64 mask = 0;
        if (!REVERSE && N % 16 == 0 && q % 16 == 0 && q + N <= len) {
            // Whole 16-byte vectors (the usual case: runs are aligned).
#pragma unroll
            for (int v = 0; v < N / 16; ++v) {
                const uint4 w = reinterpret_cast<const uint4*>(flags + q)[v];
                const unsigned words[4] = {w.x, w.y, w.z, w.w};
#pragma unroll
                for (int i = 0; i < 16; ++i) {
                    if ((words[i / 4] >> (8 * (i % 4))) & 0xffu) mask |= 1ull << (16 * v + i);
                }
            }
            return q == 0 ? mask | 1u : mask;
        }
#pragma unroll
        for (int i = 0; i < N; ++i) {
            const u64 p = q + i;
            bool head;
            if (p >= len) {
                head = false;
            } else if (REVERSE) {
                // Scan position p is memory item len - 1 - p; it starts a
                // segment in scan order when the item after it does in memory.
                head = p == 0 || flags[len - p] != 0;
            } else {
                head = p == 0 || flags[p] != 0;
            }
            if (head) mask |= 1ull << i;
        }
        return mask;
    }
};

struct BitHeads {
    static constexpr bool NONE = false;
    static constexpr bool TILE_ROWS = false;
    u64 len;
    const u64* bits;  // len / 64 + 2 words, zero past len, then the check word

    __device__ __forceinline__ u64 memory(u64 m) const { return m; }
    __device__ __forceinline__ bool contiguous() const { return true; }
    // The starts' check (segments.cuh): nonzero when a start was bad. The
    // scan is queued before the host reads it, and writes nothing then.
    __device__ __forceinline__ bool refused() const { return bits[len / 64 + 2] != 0; }
    // Bits a .. a + n - 1 of memory order (n <= 64, a <= len), bit 0 first.
    __device__ __forceinline__ u64 window(u64 a, int n) const {
        const u64 w = a / 64, s = a % 64;
        u64 v = bits[w] >> s;
        if (s != 0 && s + (u64)n > 64) v |= bits[w + 1] << (64 - s);
        return n == 64 ? v : v & ((1ull << n) - 1);
    }
    template <int N, bool REVERSE>
    __device__ __forceinline__ u64 run(u64 q) const {
        static_assert(N >= 1 && N <= 64, "a run's heads are one 64-bit mask");
        if (q >= len) return 0;
        // Bits of the run's positions past the end are cleared.
        const u64 valid = len - q >= (u64)N ? ~0ull >> (64 - N) : (1ull << (len - q)) - 1;
        u64 mask;
        if (!REVERSE) {
            mask = window(q, N);  // the usual case: one aligned load
        } else {
            // Scan position p is memory item len - 1 - p; it starts a segment
            // in scan order when memory item len - p does (bit len - p), so
            // the run's bits are those of memory items hi = len - q down to
            // len - q - N + 1 (not below 0), reversed.
            const u64 hi = len - q;
            const u64 base = hi + 1 >= (u64)N ? hi + 1 - N : 0;
            const int count = (int)(hi - base + 1);
            mask = __brevll(window(base, count)) >> (64 - count);
        }
        return (q == 0 ? mask | 1ull : mask) & valid;
    }
};

// The run's segmented reduction: from its last head (if any) to its end.
template <class Op, int N>
__device__ __forceinline__ typename Headed<Op>::Item thread_reduce_heads(const typename Op::Item (&run)[N], u64 heads) {
    typename Headed<Op>::Item acc;
    acc.value = run[0];
    acc.head = (unsigned)(heads & 1u);
#pragma unroll
    for (int i = 1; i < N; ++i) {
        acc.value = (heads >> i) & 1u ? run[i] : Op::combine(acc.value, run[i]);
    }
    acc.head |= heads != 0 ? 1u : 0u;
    return acc;
}

// thread_scan (thread.cuh) restarting at each head: a head item's inclusive
// value is the item itself, its exclusive value the identity.
template <class Op, int N, bool INCLUSIVE>
__device__ __forceinline__ void thread_scan_heads(typename Op::Item (&run)[N], typename Op::Item prefix, u64 heads) {
#pragma unroll
    for (int i = 0; i < N; ++i) {
        const bool head = (heads >> i) & 1u;
        const typename Op::Item next = head ? run[i] : Op::combine(prefix, run[i]);
        run[i] = INCLUSIVE ? next : (head ? Op::identity() : prefix);
        prefix = next;
    }
}

}  // namespace scan
