// Thread layer: a run of N items held in registers, in scan order. Loops are
// unrolled so the run never leaves registers.

namespace scan {

// x_0 ∘ x_1 ∘ … ∘ x_{N-1}, left to right.
template <class Op, int N>
__device__ __forceinline__ typename Op::Item thread_reduce(const typename Op::Item (&run)[N]) {
    typename Op::Item acc = run[0];
#pragma unroll
    for (int i = 1; i < N; ++i) acc = Op::combine(acc, run[i]);
    return acc;
}

// Rescans the run in place, starting from `prefix` (everything before it):
// item i becomes prefix ∘ x_0 ∘ … ∘ x_i (inclusive) or prefix ∘ … ∘ x_{i-1}.
template <class Op, int N, bool INCLUSIVE>
__device__ __forceinline__ void thread_scan(typename Op::Item (&run)[N], typename Op::Item prefix) {
#pragma unroll
    for (int i = 0; i < N; ++i) {
        const typename Op::Item next = Op::combine(prefix, run[i]);
        run[i] = INCLUSIVE ? next : prefix;
        prefix = next;
    }
}

}  // namespace scan
