// Warp layer: scans and reductions across the 32 lanes of a warp with
// shuffles, no shared memory and no barrier.
//
// The scan is Hillis and Steele's (the Kogge-Stone pattern): log2(32) = 5
// steps in which every lane combines with the lane `d` below it. It does
// n log n combines against Blelloch's 2n, but inside a warp the lanes run in
// lockstep anyway, so fewer steps beat less work. Operands keep scan order:
// the lower lane is always the left operand, so non-commutative operators
// are exact.

namespace scan {

// Lane l gets x_0 ∘ x_1 ∘ … ∘ x_l.
template <class Op>
__device__ __forceinline__ typename Op::Item warp_inclusive(typename Op::Item x) {
    const unsigned lane = lane_id();
#pragma unroll
    for (unsigned d = 1; d < 32; d <<= 1) {
        const typename Op::Item below = Shuffle<typename Op::Item>::up(x, d);
        if (lane >= d) x = Op::combine(below, x);
    }
    return x;
}

// Lane 0 gets x_0 ∘ x_1 ∘ … ∘ x_31 (the other lanes hold partial results):
// a tree in which each step joins neighbouring ranges, the lower one on the left.
template <class Op>
__device__ __forceinline__ typename Op::Item warp_reduce(typename Op::Item x) {
#pragma unroll
    for (unsigned d = 1; d < 32; d <<= 1) {
        // Lanes whose partner is past lane 31 combine with themselves; lane 0
        // only ever reads ranges that end inside the warp.
        x = Op::combine(x, Shuffle<typename Op::Item>::down(x, d));
    }
    return x;
}

}  // namespace scan
