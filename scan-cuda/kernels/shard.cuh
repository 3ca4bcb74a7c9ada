// The joins of a sharded scan (sharded.rs): each rank scans its shard on
// its own GPU with the ordinary kernels, and what joins the shards is one
// item per rank, each rank's total in scan order, gathered in rank order (an
// NCCL all-gather, or nothing to move when the ranks share a GPU). The carry
// of a rank is the totals of the ranks met before it in scan order,
// combined in that order (operands never swap, so non-commutative
// operators stay exact). Two ways to use it:
//
//  * reduce, then scan (executors whose scan of the operator is the
//    single-pass one): each rank's total comes from reduce.cuh (a read of
//    the shard), shard_carry folds the carry into one item, and the
//    single-pass scan starts from it: the shard is read twice and written
//    once;
//  * scan, then carry (Blelloch): each rank scans, shard_total takes the
//    total from the last output (and, for an exclusive scan, the last
//    input, saved before the scan, which may have overwritten it in place),
//    and shard_apply combines the carry in front of every output: read
//    twice, written twice.
//
// The rank met first in scan order has no carry.

namespace scan {

// total = the shard's scan-order total; `len` == 0 gives the identity.
template <class Op>
__device__ __forceinline__ void shard_total(const typename Op::Item* last_out, const typename Op::Item* last_in,
                                            u64 len, bool inclusive, typename Op::Item* total) {
    if (blockIdx.x != 0 || threadIdx.x != 0) return;
    typename Op::Item t = Op::identity();
    if (len != 0) t = inclusive ? *last_out : Op::combine(*last_out, *last_in);
    *total = t;
}

// *carry = totals[first] ∘ totals[first + step] ∘ … (`count` >= 1 totals;
// step is +1 for a forward scan, which meets the ranks before this one in
// rank order, and -1 for a reverse scan, which meets the ranks after it from
// the last down). One thread.
template <class Op>
__device__ __forceinline__ void shard_carry(const typename Op::Item* totals, i64 first, i64 step, u64 count,
                                            typename Op::Item* carry) {
    if (blockIdx.x != 0 || threadIdx.x != 0) return;
    typename Op::Item c = totals[first];
    for (u64 k = 1; k < count; ++k) c = Op::combine(c, totals[first + (i64)k * step]);
    *carry = c;
}

// data[i] = *carry ∘ data[i] for every i < len (the carry shard_carry
// folded).
template <class Op>
__device__ __forceinline__ void shard_apply(typename Op::Item* data, u64 len, const typename Op::Item* carry_in) {
    typedef typename Op::Item Item;
    const Item carry = *carry_in;
    // UNROLL items per thread in flight at once, each a whole grid apart
    // (coalesced): one load per thread in flight left the pass at 0.65 of a
    // copy on the H200.
    constexpr int UNROLL = 4;
    const u64 stride = (u64)gridDim.x * blockDim.x;
    for (u64 base = (u64)blockIdx.x * blockDim.x + threadIdx.x; base < len; base += UNROLL * stride) {
        Item v[UNROLL];
#pragma unroll
        for (int k = 0; k < UNROLL; ++k) {
            const u64 i = base + k * stride;
            if (i < len) v[k] = data[i];
        }
#pragma unroll
        for (int k = 0; k < UNROLL; ++k) {
            const u64 i = base + k * stride;
            if (i < len) data[i] = Op::combine(carry, v[k]);
        }
    }
}

}  // namespace scan
