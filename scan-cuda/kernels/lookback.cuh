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

// `scan_start` is the first tile of the scan that `tile` belongs to (0, or the
// first tile of its row for rows of whole tiles): tiles before it count as
// an identity prefix, never waited for, so a row does not wait for the rows
// before it.
template <class Op, int PER_LANE, class Status>
__device__ __forceinline__ typename Op::Item lookback(const Status& status, i64 tile, unsigned epoch, i64 scan_start) {
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
            codes[j] = base + j < scan_start ? status_code(epoch, STATUS_PREFIX) : status.read(base + j, values[j]);
        }
        // This lane's part of the window, left to right from its nearest
        // inclusive prefix; before tile `scan_start` is an identity prefix.
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

// The deterministic look-back: the same exclusive prefix, always grouped the
// same way, whatever the timing. Tiles form fixed groups of G = 32 * PER_LANE;
// only the last tile of a group publishes its inclusive prefix (P), every
// other tile only its aggregate. Tile t of the group starting at tile s
// combines P of tile s - 1 (or `before_all`, the carry into tile 0, if any)
// with the aggregates of tiles s .. t - 1, reduced by a fixed tree (lane l
// folds its PER_LANE tiles left to right, identities past t - 1, then
// warp_reduce). So the grouping depends on t and G alone, and float scans are
// bitwise identical from run to run. The price: prefixes advance one group
// per status round trip, through the groups' last tiles only, and a group's
// last tile waits for every aggregate of its group; on the H200 groups of 64
// tiles ran fastest (0.80 of copy; 256: 0.34, 128: 0.74, 32: 0.58;
// bench/gpu-h200-results.md).
//
// Rows of whole tiles: `scan_start` is the first tile of `tile`'s row. Tiles
// before it are left out of the window, and a group that starts at or
// before it needs no prior prefix; the grouping still depends on t, G and
// the row length alone.
template <class Op, int PER_LANE, class Status>
__device__ __forceinline__ typename Op::Item lookback_fixed(const Status& status, i64 tile, unsigned epoch,
                                                           const typename Op::Item* before_all, i64 scan_start) {
    typedef typename Op::Item Item;
    constexpr i64 GROUP = 32 * PER_LANE;
    const i64 start = tile - tile % GROUP;
    // Whether the group starts after the first tile of this scan, so that
    // the previous group's inclusive prefix joins.
    const bool joins_prior = start > scan_start;
    const unsigned lane = lane_id();
    // Issue every read first: the group's earlier aggregates, and (lane 0)
    // the previous group's inclusive prefix.
    unsigned codes[PER_LANE];
    Item values[PER_LANE];
#pragma unroll
    for (int j = 0; j < PER_LANE; ++j) {
        const i64 t = start + (i64)lane * PER_LANE + j;
        values[j] = Op::identity();
        codes[j] = t >= scan_start && t < tile ? status.read(t, values[j]) : 0u;
    }
    Item prior = Op::identity();
    unsigned prior_code = 0;
    if (lane == 0 && joins_prior) prior_code = status.read(start - 1, prior);
    Item part = Op::identity();
    bool any = false;  // (the lane's first tile is taken as it is, not combined with the identity)
#pragma unroll
    for (int j = 0; j < PER_LANE; ++j) {
        const i64 t = start + (i64)lane * PER_LANE + j;
        if (t >= scan_start && t < tile) {
            if ((codes[j] >> 2) != epoch || (codes[j] & 3u) == 0) wait_status(status, t, epoch, values[j]);
            part = any ? Op::combine(part, values[j]) : values[j];
            any = true;
        }
    }
    const Item window = Shuffle<Item>::from(warp_reduce<Op>(part), 0);
    if (joins_prior) {
        if (lane == 0 && ((prior_code >> 2) != epoch || (prior_code & 3u) != STATUS_PREFIX)) {
            // Only a group's last tile publishes a prefix; wait until it has.
            while (wait_status(status, start - 1, epoch, prior) != STATUS_PREFIX) __nanosleep(64);
        }
        prior = Shuffle<Item>::from(prior, 0);
    } else if (scan_start == 0 && before_all != nullptr) {
        prior = *before_all;
    } else {
        return window;  // tile > scan_start here: the window holds that tile at least
    }
    return tile == start ? prior : Op::combine(prior, window);
}

}  // namespace scan
