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
    static constexpr bool FETCHES = false;  // early loads move vectors (exchange.cuh)
    template <int ITEMS>
    struct Fetched {};
    const Item* p;
    __device__ __forceinline__ Item operator()(u64 i) const { return p[i]; }
};

template <class Item>
struct ItemsOut {
    static constexpr bool DIRECT = true;
    Item* p;
    __device__ __forceinline__ void operator()(u64 i, const Item& x) const { p[i] = x; }
};

// Position i's item: M::lift of item i of each of the N arrays. With
// STAGED, a whole segment of COUNT positions whose arrays fit the slice that
// will hold its items (FITS) can instead be staged: every array copied into
// the slice as 16-byte vectors, one after the other (`stage`), then lifted
// from there (`lift_staged`; WarpExchange::load_staged does both).
template <class M, int N, bool STAGED, class A, class B = A, class C = A>
struct LiftedIn {
    static_assert(N >= 1 && N <= 3, "one to three input arrays");
    static constexpr bool DIRECT = false;
    // Early loads (single_pass.cuh): a whole segment's positions are
    // fetched into registers, array by array, before the previous tile is
    // stored, and lifted into the slice after it (WarpExchange::put_lifted).
    static constexpr bool FETCHES = true;
    template <int ITEMS>
    struct Fetched {
        A a[ITEMS];
        B b[N >= 2 ? ITEMS : 1];
        C c[N >= 3 ? ITEMS : 1];
    };
    // The input bytes of one position.
    static constexpr int BYTES =
        (int)sizeof(A) + (N >= 2 ? (int)sizeof(B) : 0) + (N >= 3 ? (int)sizeof(C) : 0);
    // Whether a segment of COUNT positions can be staged in a slice of
    // COUNT items: it fits, and each array moves as whole vectors.
    template <int COUNT>
    static constexpr bool FITS = STAGED && BYTES <= (int)sizeof(typename M::Item) &&
                                 (COUNT * (int)sizeof(A)) % 512 == 0 && (COUNT * (int)sizeof(B)) % 512 == 0 &&
                                 (COUNT * (int)sizeof(C)) % 512 == 0;
    const A* a;
    const B* b;
    const C* c;

    // Whether positions [base, base + COUNT) of every array start 16-byte aligned.
    __device__ __forceinline__ bool aligned(u64 base) const {
        bool ok = ((u64)(a + base) % 16) == 0;
        if constexpr (N >= 2) ok = ok && ((u64)(b + base) % 16) == 0;
        if constexpr (N >= 3) ok = ok && ((u64)(c + base) % 16) == 0;
        return ok;
    }

    template <int COUNT, class T>
    static __device__ __forceinline__ void stage_one(const T* g, unsigned char* raw) {
        constexpr int VECTORS = COUNT * (int)sizeof(T) / 16;
        const uint4* from = reinterpret_cast<const uint4*>(g);
        uint4* to = reinterpret_cast<uint4*>(raw);
#pragma unroll
        for (int q = (int)lane_id(); q < VECTORS; q += 32) to[q] = from[q];
    }

    // Copies positions [base, base + COUNT) of each array into `raw` (16-byte
    // aligned), array after array; the whole warp calls it.
    template <int COUNT>
    __device__ __forceinline__ void stage(u64 base, unsigned char* raw) const {
        stage_one<COUNT>(a + base, raw);
        if constexpr (N >= 2) stage_one<COUNT>(b + base, raw + COUNT * sizeof(A));
        if constexpr (N >= 3) stage_one<COUNT>(c + base, raw + COUNT * (sizeof(A) + sizeof(B)));
    }

    // The item of staged position m (after a __syncwarp).
    template <int COUNT>
    __device__ __forceinline__ typename M::Item lift_staged(const unsigned char* raw, int m) const {
        const A x = reinterpret_cast<const A*>(raw)[m];
        if constexpr (N == 1) {
            return M::lift(x);
        } else if constexpr (N == 2) {
            return M::lift(M::Input::make(x, reinterpret_cast<const B*>(raw + COUNT * sizeof(A))[m]));
        } else {
            return M::lift(M::Input::make(x, reinterpret_cast<const B*>(raw + COUNT * sizeof(A))[m],
                                          reinterpret_cast<const C*>(raw + COUNT * (sizeof(A) + sizeof(B)))[m]));
        }
    }
    // Memory positions base + k * 32 + lane, k < ITEMS, of each array
    // (a whole segment, warp-striped: every load is coalesced).
    template <int ITEMS>
    __device__ __forceinline__ void fetch(u64 base, Fetched<ITEMS>& f) const {
        const u64 at = base + lane_id();
#pragma unroll
        for (int k = 0; k < ITEMS; ++k) {
            f.a[k] = a[at + (u64)k * 32];
            if constexpr (N >= 2) f.b[k] = b[at + (u64)k * 32];
            if constexpr (N >= 3) f.c[k] = c[at + (u64)k * 32];
        }
    }
    // The item of fetched position k.
    template <int ITEMS>
    __device__ __forceinline__ typename M::Item lift_fetched(const Fetched<ITEMS>& f, int k) const {
        if constexpr (N == 1) {
            return M::lift(f.a[k]);
        } else if constexpr (N == 2) {
            return M::lift(M::Input::make(f.a[k], f.b[k]));
        } else {
            return M::lift(M::Input::make(f.a[k], f.b[k], f.c[k]));
        }
    }
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
