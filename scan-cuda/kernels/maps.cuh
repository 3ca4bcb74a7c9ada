// Where the single-pass kernel reads its items and writes its results.
//
// Plainly, from and to arrays of items (ItemsIn, ItemsOut): a warp's
// segment moves a 16-byte vector at a time when it can (exchange.cuh). With
// fused maps (scan_core::maps), each position's item is lifted from one to
// three input arrays, item i of each (LiftedIn), and each result is
// projected into an array of outputs (ProjectedOut), so that nothing in
// between is stored: the linear recurrence reads a[] and b[] and writes h[]
// alone, 12 bytes per f32 item where the pairs scan moves 16 each way. The
// maps' positions move item by item, still coalesced: consecutive lanes
// touch consecutive positions of every array.
//
// A maps struct M (CudaMaps::cuda_source) declares Input (what lift reads
// at one position: one array's type, or a tuple with `make` for several),
// Item (the operator's), Output, and `lift` / `project`.

namespace scan {

template <class Item>
struct ItemsIn {
    static constexpr bool DIRECT = true;  // the items themselves: vectors allowed
    const Item* p;
    __device__ __forceinline__ Item operator()(u64 i) const { return p[i]; }
};

template <class Item>
struct ItemsOut {
    static constexpr bool DIRECT = true;
    Item* p;
    __device__ __forceinline__ void operator()(u64 i, const Item& x) const { p[i] = x; }
};

// Position i's item: M::lift of item i of each of the N arrays.
template <class M, int N, class A, class B = A, class C = A>
struct LiftedIn {
    static_assert(N >= 1 && N <= 3, "one to three input arrays");
    static constexpr bool DIRECT = false;
    const A* a;
    const B* b;
    const C* c;
    __device__ __forceinline__ typename M::Item operator()(u64 i) const {
        if constexpr (N == 1) {
            return M::lift(a[i]);
        } else if constexpr (N == 2) {
            return M::lift(M::Input::make(a[i], b[i]));
        } else {
            return M::lift(M::Input::make(a[i], b[i], c[i]));
        }
    }
};

// Writes M::project of each result.
template <class M>
struct ProjectedOut {
    static constexpr bool DIRECT = false;
    typename M::Output* p;
    __device__ __forceinline__ void operator()(u64 i, const typename M::Item& x) const { p[i] = M::project(x); }
};

}  // namespace scan
