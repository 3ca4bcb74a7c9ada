// The decoupled look-back (Merrill and Garland, 2016): one warp finds the
// exclusive prefix of tile `tile` from the statuses its predecessors publish.
//
// The warp reads a window of 32 * PER_LANE predecessors at once, lane l the
// PER_LANE consecutive ones starting at `end - 32 * PER_LANE + l * PER_LANE`,
// spinning (then sleeping, with backoff) until this launch has published each.
// If some predecessor in the window has published its inclusive prefix, the
// nearest one ends the search: the prefix is its value combined with the
// aggregates after it. Otherwise the window's aggregates are combined and the
// window moves back. Every combination keeps scan order (within a lane, then
// lower lane on the left, an earlier window on the left of a later one), so
// non-commutative operators are exact.
//
// Why a wide window: in steady state every tile finds the nearest inclusive
// prefix about as far back as tiles arrive during one status round trip, and
// the prefixes advance by at most one window per round trip. So the scan's rate
// is bounded by (window tiles x tile bytes) / round trip; a window of 32 tiles
// bounded it at about half of copy speed on an H200 (see bench/).
//
// Progress never depends on block scheduling: tiles are numbered by an atomic
// counter in the order blocks start, so every predecessor belongs to a block
// that is already running, and aggregates are published before any waiting.

namespace scan {

// Waits until this launch's status of tile `pred` is published; returns its kind.
template <class Status, class Item>
__device__ __forceinline__ unsigned wait_status(const Status& status, i64 pred, unsigned epoch, Item& value) {
    unsigned polls = 0, ns = 32;
    for (;;) {
        const unsigned code = status.read(pred, value);
        if ((code >> 2) == epoch && (code & 3u) != 0) return code & 3u;
        // A few polls first: a predecessor is usually a moment away.
        if (++polls > 4) {
            __nanosleep(ns);
            ns = ns < 256 ? 2 * ns : 256;
        }
    }
}

template <class Op, int PER_LANE, class Status>
__device__ __forceinline__ typename Op::Item lookback(const Status& status, i64 tile, unsigned epoch) {
    typedef typename Op::Item Item;
    constexpr int WINDOW = 32 * PER_LANE;
    const unsigned lane = lane_id();
    Item after = Op::identity();  // the predecessors already passed (they follow the window)
    bool first = true;
    for (i64 end = tile;; end -= WINDOW) {
        const i64 base = end - WINDOW + (i64)lane * PER_LANE;
        // Issue every read of the window before waiting on any.
        unsigned codes[PER_LANE];
        Item values[PER_LANE];
#pragma unroll
        for (int j = 0; j < PER_LANE; ++j) {
            values[j] = Op::identity();
            codes[j] = base + j < 0 ? status_code(epoch, STATUS_PREFIX) : status.read(base + j, values[j]);
        }
        // This lane's part of the window, left to right from its nearest
        // inclusive prefix; before tile 0 is an identity prefix.
        Item part = Op::identity();
        bool has_prefix = false;
#pragma unroll
        for (int j = 0; j < PER_LANE; ++j) {
            unsigned kind = codes[j] & 3u;
            if ((codes[j] >> 2) != epoch || kind == 0) kind = wait_status(status, base + j, epoch, values[j]);
            if (kind == STATUS_PREFIX) {
                part = values[j];
                has_prefix = true;
            } else {
                part = Op::combine(part, values[j]);
            }
        }
        const unsigned prefixes = __ballot_sync(0xffffffffu, has_prefix);
        const int nearest = prefixes ? 31 - __clz(prefixes) : -1;
        const Item mine = (int)lane >= nearest ? part : Op::identity();
        const Item window = Shuffle<Item>::from(warp_reduce<Op>(mine), 0);
        after = first ? window : Op::combine(window, after);
        first = false;
        if (prefixes) return after;
    }
}

// The ordered look-back: the same exclusive prefix, grouped as one thread
// chaining the tiles would group it, ((P_j . a_{j+1}) . a_{j+2}) . ...,
// whatever the timing. It walks back a window at a time, as `lookback`,
// until a window holds an inclusive prefix P_j (the nearest one), then
// combines forward, one status at a time in tile order: from P_j through the
// aggregates after it to tile - 1 (windows it walked over are read again; a
// status that has become an inclusive prefix since restarts the fold from
// it). Every inclusive prefix a tile publishes is its prefix so grouped,
// combined with its aggregate, so by induction from tile 0 (which publishes
// its aggregate, or the carry combined with it, as its inclusive prefix) the
// result depends on the tiles' aggregates alone: float scans are bitwise
// identical from run to run, with no more waiting than `lookback` (only the
// fold is sequential: one combine per tile after the nearest prefix, against
// `lookback`'s tree). The same fold runs on the CPU (scan-cpu lookback.rs).

// Reads the window of 32 * PER_LANE statuses ending before `end`, lane l the
// PER_LANE from `end - 32 * PER_LANE + l * PER_LANE`, waiting for each; a
// position before tile 0 reads as an identity prefix.
template <class Op, int PER_LANE, class Status>
__device__ __forceinline__ void read_window(const Status& status, i64 end, unsigned epoch,
                                            typename Op::Item (&values)[PER_LANE], bool (&prefix)[PER_LANE]) {
    const i64 base = end - 32 * PER_LANE + (i64)lane_id() * PER_LANE;
    unsigned codes[PER_LANE];
    // Issue every read of the window before waiting on any.
#pragma unroll
    for (int j = 0; j < PER_LANE; ++j) {
        values[j] = Op::identity();
        codes[j] = base + j < 0 ? status_code(epoch, STATUS_PREFIX) : status.read(base + j, values[j]);
    }
#pragma unroll
    for (int j = 0; j < PER_LANE; ++j) {
        unsigned kind = codes[j] & 3u;
        if ((codes[j] >> 2) != epoch || kind == 0) kind = wait_status(status, base + j, epoch, values[j]);
        prefix[j] = kind == STATUS_PREFIX;
    }
}

// `acc` combined, left to right, with the window's statuses in tile order
// (position l * PER_LANE + j): from the nearest inclusive prefix, if the
// window holds one (`acc` is then dropped), else from the first. Every lane
// returns the same value.
template <class Op, int PER_LANE>
__device__ __forceinline__ typename Op::Item fold_window(typename Op::Item acc,
                                                         const typename Op::Item (&values)[PER_LANE],
                                                         const bool (&prefix)[PER_LANE]) {
    typedef typename Op::Item Item;
    int mine = -1;
#pragma unroll
    for (int j = 0; j < PER_LANE; ++j)
        if (prefix[j]) mine = (int)lane_id() * PER_LANE + j;
    const unsigned holders = __ballot_sync(0xffffffffu, mine >= 0);
    const int nearest = holders ? __shfl_sync(0xffffffffu, mine, 31 - __clz(holders)) : -1;
    // Uniform bounds: every lane runs the same shuffles.
    for (int l = nearest < 0 ? 0 : nearest / PER_LANE; l < 32; ++l) {
#pragma unroll
        for (int j = 0; j < PER_LANE; ++j) {
            const Item v = Shuffle<Item>::from(values[j], l);
            const int position = l * PER_LANE + j;
            if (position == nearest) {
                acc = v;
            } else if (position > nearest) {
                acc = Op::combine(acc, v);
            }
        }
    }
    return acc;
}

template <class Op, int PER_LANE, class Status>
__device__ __forceinline__ typename Op::Item lookback_ordered(const Status& status, i64 tile, unsigned epoch) {
    typedef typename Op::Item Item;
    constexpr int WINDOW = 32 * PER_LANE;
    Item values[PER_LANE];
    bool prefix[PER_LANE];
    // 1. Back until a window holds an inclusive prefix.
    i64 end = tile;
    for (;; end -= WINDOW) {
        read_window<Op, PER_LANE>(status, end, epoch, values, prefix);
        bool any = false;
#pragma unroll
        for (int j = 0; j < PER_LANE; ++j) any = any || prefix[j];
        if (__any_sync(0xffffffffu, any)) break;
    }
    // 2. Forward from it, to tile - 1.
    Item acc = fold_window<Op, PER_LANE>(Op::identity(), values, prefix);
    for (end += WINDOW; end <= tile; end += WINDOW) {
        read_window<Op, PER_LANE>(status, end, epoch, values, prefix);
        acc = fold_window<Op, PER_LANE>(acc, values, prefix);
    }
    return acc;
}

}  // namespace scan
