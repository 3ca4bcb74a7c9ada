// The decoupled look-back (Merrill and Garland, 2016): one warp finds the
// exclusive prefix of tile `tile` from the statuses its predecessors publish.
//
// Lane l reads the status of predecessor `end - 32 + l` of a window of 32,
// spinning with __nanosleep backoff until this launch has published it. If
// some predecessor in the window has published its inclusive prefix, the
// nearest one (the highest lane) ends the search: the prefix is its value
// combined with the aggregates after it. Otherwise the window's 32 aggregates
// are combined and the window moves 32 tiles back. Every combination keeps
// scan order (lower lane on the left; an earlier window on the left of a later
// one), so non-commutative operators are exact.
//
// Progress never depends on block scheduling: tiles are numbered by an atomic
// counter in the order blocks start, so every predecessor belongs to a block
// that is already running, and aggregates are published before any waiting.

namespace scan {

template <class Op, class Status>
__device__ __forceinline__ typename Op::Item lookback(const Status& status, i64 tile, unsigned epoch) {
    typedef typename Op::Item Item;
    const unsigned lane = lane_id();
    Item after = Op::identity();  // the predecessors already passed (they follow the window)
    bool first = true;
    for (i64 end = tile;; end -= 32) {
        const i64 pred = end - 32 + (i64)lane;
        unsigned kind = STATUS_PREFIX;  // before tile 0: nothing, i.e. an identity prefix
        Item value = Op::identity();
        if (pred >= 0) {
            unsigned ns = 32;
            for (;;) {
                const unsigned code = status.read(pred, value);
                if ((code >> 2) == epoch && (code & 3u) != 0) {
                    kind = code & 3u;
                    break;
                }
                __nanosleep(ns);
                ns = ns < 512 ? 2 * ns : 512;
            }
        }
        const unsigned prefixes = __ballot_sync(0xffffffffu, kind == STATUS_PREFIX);
        const int nearest = prefixes ? 31 - __clz(prefixes) : -1;
        const Item mine = (int)lane >= nearest ? value : Op::identity();
        const Item window = Shuffle<Item>::from(warp_reduce<Op>(mine), 0);
        after = first ? window : Op::combine(window, after);
        first = false;
        if (prefixes) return after;
    }
}

}  // namespace scan
