// Tile status: what each tile of a single-pass scan publishes for its
// successors, first its aggregate (the combination of its own items), then its
// inclusive prefix (everything up to and including it).
//
// A status is a code, `epoch << 2 | kind`, and a value. The host gives every
// launch a new epoch, so a status left by an earlier launch on the same
// (reused) scratch reads as "not yet published": no initialisation pass runs
// between scans. The host clears the scratch when the 30-bit epoch wraps.
//
// Three layouts, chosen by the host (scan_cuda::StatusLayout):
// * Packed (items of up to 8 bytes): code and value in one 8-byte word (items
//   of up to 4 bytes) or one 16-byte word, written and read by one access, so
//   a reader never sees a code without its value. Relaxed accesses suffice:
//   nothing else is published with them. (The 16-byte case relies on an
//   aligned 16-byte access by one thread being performed at once, as CUB's
//   tile state does.)
// * Split (any item): separate code, aggregate and prefix arrays. The value
//   is stored first, then the code with st.release; a reader loads the code
//   with ld.acquire and only then the value, which the release/acquire pair
//   guarantees to be the one published. Aggregates and prefixes live in
//   different arrays, so upgrading a tile's status never overwrites a value
//   that a reader may be loading. A read is two dependent round trips.
// * Tagged (any item; the default for 9 to 32 bytes): the item in 8-byte pieces,
//   each in a 16-byte word beside the code, every word written and read by
//   one access as Packed's 16-byte case. A reader loads all of a tile's
//   words at once (one round trip) and takes the value only when every word
//   carries the same code: a tile midway through an upgrade (aggregate to
//   prefix) reads as unpublished, and the reader looks again.

namespace scan {

enum : unsigned { STATUS_AGGREGATE = 1, STATUS_PREFIX = 2 };

__device__ __forceinline__ unsigned status_code(unsigned epoch, unsigned kind) { return (epoch << 2) | kind; }

// A 16-byte status word must be read by one 16-byte load: two narrower
// loads can pair this launch's code with a value from before it. PTX
// promises no more than that a vector access is performed element by
// element, and ptxas narrows a vector load whose upper halves are never
// used: with the code (32 bits) and a 4-byte item each in the low half of an
// 8-byte element, one of the three status reads of a u32 scan compiled to
// two 4-byte loads (cuobjdump, sm_90), and u32 scans with tagged statuses
// came out wrong on the H200 (tests/gpu_single_pass.rs, tagged shapes). So
// every 32-bit half of a word takes part in the result:
// the writer leaves zeros above the code and above the item's last byte,
// and the reader checks them (always true, never optimised away). Padding
// inside an item (a bool beside an f64, a u32 beside an i64) is copied out
// whole and kept the loads whole too; scan-cuda/tests/sass.rs checks the
// machine code of every layout and item kind for a split access.
template <class Item>
__device__ __forceinline__ bool every_half_loaded(u64 code, u64 last_piece) {
    bool zeros = (code >> 32) == 0;
    if constexpr (sizeof(Item) % 8 != 0) zeros = zeros && (last_piece >> (8 * (sizeof(Item) % 8))) == 0;
    return zeros;
}

template <class Item>
struct PackedStatus {
    static_assert(sizeof(Item) <= 8, "packed tile status holds items of up to 8 bytes");
    static constexpr bool WIDE = sizeof(Item) > 4;
    u64* words;  // one (or, when WIDE, two) per tile

    static __device__ __forceinline__ PackedStatus make(void* words, void*, void*) {
        PackedStatus s;
        s.words = static_cast<u64*>(words);
        return s;
    }

    __device__ __forceinline__ void publish(i64 tile, unsigned code, Item value) const {
        if constexpr (WIDE) {
            u64 bits = 0;
            memcpy(&bits, &value, sizeof(Item));
            asm volatile("st.relaxed.gpu.global.v2.u64 [%0], {%1, %2};" ::"l"(words + 2 * tile), "l"((u64)code),
                         "l"(bits)
                         : "memory");
        } else {
            unsigned bits = 0;
            memcpy(&bits, &value, sizeof(Item));
            const u64 word = (u64)code | ((u64)bits << 32);
            asm volatile("st.relaxed.gpu.global.u64 [%0], %1;" ::"l"(words + tile), "l"(word) : "memory");
        }
    }

    __device__ __forceinline__ unsigned read(i64 tile, Item& value) const {
        if constexpr (WIDE) {
            u64 code, bits;
            asm volatile("ld.relaxed.gpu.global.v2.u64 {%0, %1}, [%2];"
                         : "=l"(code), "=l"(bits)
                         : "l"(words + 2 * tile)
                         : "memory");
            memcpy(&value, &bits, sizeof(Item));
            return every_half_loaded<Item>(code, bits) ? (unsigned)code : 0u;
        } else {
            u64 word;
            asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(word) : "l"(words + tile) : "memory");
            const unsigned bits = (unsigned)(word >> 32);
            memcpy(&value, &bits, sizeof(Item));
            return (unsigned)word;
        }
    }
};

template <class Item>
struct TaggedStatus {
    static constexpr int PIECES = (int)((sizeof(Item) + 7) / 8);
    u64* words;  // 2 * PIECES per tile: (code, piece) pairs

    static __device__ __forceinline__ TaggedStatus make(void* words, void*, void*) {
        TaggedStatus s;
        s.words = static_cast<u64*>(words);
        return s;
    }

    __device__ __forceinline__ void publish(i64 tile, unsigned code, Item value) const {
        u64 bits[PIECES] = {};
        memcpy(bits, &value, sizeof(Item));
        u64* w = words + 2 * PIECES * tile;
#pragma unroll
        for (int p = 0; p < PIECES; ++p) {
            asm volatile("st.relaxed.gpu.global.v2.u64 [%0], {%1, %2};" ::"l"(w + 2 * p), "l"((u64)code),
                         "l"(bits[p])
                         : "memory");
        }
    }

    __device__ __forceinline__ unsigned read(i64 tile, Item& value) const {
        u64 codes[PIECES], bits[PIECES];
        const u64* w = words + 2 * PIECES * tile;
#pragma unroll
        for (int p = 0; p < PIECES; ++p) {
            asm volatile("ld.relaxed.gpu.global.v2.u64 {%0, %1}, [%2];"
                         : "=l"(codes[p]), "=l"(bits[p])
                         : "l"(w + 2 * p)
                         : "memory");
        }
        bool agree = true;
#pragma unroll
        for (int p = 1; p < PIECES; ++p) agree = agree && codes[p] == codes[0];
        agree = agree && every_half_loaded<Item>(codes[0], bits[PIECES - 1]);
        memcpy(&value, bits, sizeof(Item));
        return agree ? (unsigned)codes[0] : 0u;  // 0: no epoch's status
    }
};

template <class Item>
struct SplitStatus {
    unsigned* codes;
    Item* aggregates;
    Item* prefixes;

    static __device__ __forceinline__ SplitStatus make(void* codes, void* aggregates, void* prefixes) {
        SplitStatus s;
        s.codes = static_cast<unsigned*>(codes);
        s.aggregates = static_cast<Item*>(aggregates);
        s.prefixes = static_cast<Item*>(prefixes);
        return s;
    }

    __device__ __forceinline__ void publish(i64 tile, unsigned code, Item value) const {
        if ((code & 3u) == STATUS_AGGREGATE) {
            aggregates[tile] = value;
        } else {
            prefixes[tile] = value;
        }
        asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(codes + tile), "r"(code) : "memory");
    }

    // The value is loaded only once the code says it is there.
    __device__ __forceinline__ unsigned read(i64 tile, Item& value) const {
        unsigned code;
        asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(code) : "l"(codes + tile) : "memory");
        const unsigned kind = code & 3u;
        if (kind == STATUS_AGGREGATE) value = aggregates[tile];
        if (kind == STATUS_PREFIX) value = prefixes[tile];
        return code;
    }
};

}  // namespace scan
