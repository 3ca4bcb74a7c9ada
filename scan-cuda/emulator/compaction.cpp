// Stream compaction's kernels (kernels/compact.cuh) run in the host emulation
// as scan-cuda/src/compact.rs launches them: the count over a grid-stride
// grid, an inclusive scan of the counts (on the host here; the single-pass
// Add<u64> scan on a GPU), then the scatter. Grids of one and two blocks make
// every block stride over several tiles, which the GPU tests reach only past
// 4096 tiles; the fibers resume in a shuffled order at every barrier,
// ballot and shuffle. Each case is checked against a plain filter, with the
// output's items past the kept ones left as they were, and an output too
// small for the kept items left untouched.
//
// scan-cuda/tests/emulated.rs runs it; exit status 0 and
// "compaction: N cases ok" when every case holds.

#include "cuda_emulator.hpp"

// The compaction module's sources, in the order compact.rs gives NVRTC.
// clang-format off
#include "../kernels/util.cuh"
#include "../kernels/compact.cuh"
// clang-format on

using scan::u64;

namespace {

constexpr int THREADS = 256, ROWS = 16;  // compact.rs's shape
constexpr u64 TILE = (u64)THREADS * ROWS;

int failures = 0, cases = 0;

// The kept items of `values` (items of `words` Words) into a copy of `out`,
// as the kernels leave it; `capacity` items fit.
template <class Word>
std::vector<Word> compact(const std::vector<Word>& values, const unsigned char* flags, u64 len, unsigned words,
                          std::vector<Word> out, u64 capacity, unsigned blocks, unsigned seed) {
    const u64 tiles = (len + TILE - 1) / TILE;
    std::vector<u64> counts(tiles, ~0ull);
    const dim3 grid{blocks, 1, 1}, block{THREADS, 1, 1};
    scan_emulator::launch(grid, block, sizeof(unsigned) * THREADS / 32, seed,
                          [&] { scan::compact_count<THREADS, ROWS>(flags, len, counts.data()); });
    for (u64 t = 1; t < tiles; ++t) counts[t] += counts[t - 1];
    scan_emulator::launch(grid, block, sizeof(unsigned) * ROWS * (THREADS / 32), seed + 1, [&] {
        scan::compact_scatter<THREADS, ROWS, Word>(values.data(), flags, len, counts.data(), out.data(), words,
                                                   capacity);
    });
    if (tiles > 0) {
        u64 set = 0;
        for (u64 i = 0; i < len; ++i) set += flags[i] != 0;
        if (counts[tiles - 1] != set) {
            std::fprintf(stderr, "the counts' total is %llu, the flags set %llu\n", counts[tiles - 1], set);
            ++failures;
        }
    }
    return out;
}

template <class Word>
bool same(const Word& a, const Word& b) {
    return std::memcmp(&a, &b, sizeof(Word)) == 0;
}

// One case: `len` items of `words` random Words, flags by `pattern` (0 none,
// 1 all, 2 about 30%, 3 alternating), the flags `misaligned` by a byte (the
// count's 16-byte loads then fall back to bytes), on `blocks` blocks.
template <class Word>
void check(const char* word_name, u64 len, unsigned words, int pattern, bool misaligned, unsigned blocks,
           std::mt19937& random) {
    ++cases;
    std::vector<Word> values(len * words);
    for (Word& w : values) {
        unsigned char* bytes = reinterpret_cast<unsigned char*>(&w);
        for (unsigned i = 0; i < sizeof(Word); ++i) bytes[i] = (unsigned char)random();
    }
    // 16-byte aligned storage, so that `misaligned` decides the alignment;
    // every flag byte around the `len` flags is set, so that a kernel that
    // reads past them keeps an item too many.
    std::vector<uint4> storage((len + 1 + 15) / 16 + 2);
    std::memset(storage.data(), 1, storage.size() * sizeof(uint4));
    unsigned char* flags = reinterpret_cast<unsigned char*>(storage.data()) + (misaligned ? 1 : 0);
    for (u64 i = 0; i < len; ++i)
        flags[i] = pattern == 0 ? 0 : pattern == 1 ? 1 : pattern == 2 ? (random() % 10 < 3) : (unsigned char)(i % 2);
    std::vector<Word> want;
    for (u64 i = 0; i < len; ++i)
        if (flags[i] != 0) want.insert(want.end(), values.begin() + i * words, values.begin() + (i + 1) * words);
    const u64 kept = want.size() / words;
    // A sentinel output one item longer than needed.
    Word sentinel;
    std::memset(&sentinel, 0xA5, sizeof(Word));
    const std::vector<Word> fresh((kept + 1) * words, sentinel);
    const unsigned seed = (unsigned)random();
    std::vector<Word> got = compact(values, flags, len, words, fresh, kept + 1, blocks, seed);
    for (u64 i = 0; i < got.size(); ++i) {
        const Word& w = i < want.size() ? want[i] : sentinel;
        if (!same(got[i], w)) {
            std::fprintf(stderr, "%s x %u, %llu items, pattern %d%s, %u blocks: word %llu differs (%s)\n", word_name,
                         words, len, pattern, misaligned ? ", misaligned flags" : "", blocks, i,
                         i < want.size() ? "a kept item" : "past the kept items");
            ++failures;
            return;
        }
    }
    // An output one item too small: the scatter writes nothing.
    if (kept > 0) {
        ++cases;
        const std::vector<Word> small((kept - 1) * words + 1, sentinel);
        got = compact(values, flags, len, words, small, kept - 1, blocks, seed + 2);
        for (const Word& w : got)
            if (!same(w, sentinel)) {
                std::fprintf(stderr, "%s x %u, %llu items, %u blocks: an output too small was written\n", word_name,
                             words, len, blocks);
                ++failures;
                return;
            }
    }
}

template <class Word>
void check_all(const char* word_name, unsigned words, std::mt19937& random) {
    const u64 lengths[] = {1, 33, TILE - 1, TILE + 1, 3 * TILE, 3 * TILE + 5};
    for (u64 len : lengths)
        for (unsigned blocks : {1u, 2u})
            for (int pattern : {1, 2, 3}) check<Word>(word_name, len, words, pattern, false, blocks, random);
    check<Word>(word_name, 2 * TILE + 7, words, 0, false, 1, random);
    check<Word>(word_name, 2 * TILE + 7, words, 2, true, 2, random);
}

}  // namespace

int main() {
    std::mt19937 random(20261206);
    // One word an item (the scatter's fast path) in each word size, and
    // items of several words (its general path).
    check_all<unsigned>("u32", 1, random);
    check_all<unsigned char>("u8", 1, random);
    check_all<unsigned long long>("u64", 1, random);
    check_all<scan::Word16>("16-byte word", 1, random);
    check_all<unsigned>("u32", 3, random);
    check_all<unsigned char>("u8", 3, random);
    if (failures != 0) {
        std::fprintf(stderr, "compaction: %d of %d cases failed\n", failures, cases);
        return 1;
    }
    std::printf("compaction: %d cases ok\n", cases);
    return 0;
}
