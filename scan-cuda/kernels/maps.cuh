// Where the single-pass kernel reads its items and writes its results.
//
// Plainly, from and to arrays of items (ItemsIn, ItemsOut): a warp's
// segment moves a 16-byte vector at a time when it can (exchange.cuh). With
// fused maps (scan_core::maps), each position's item is lifted from one to
// three input arrays, item i of each (LiftedIn), and each result is
// projected into an array of outputs (ProjectedOut), so that nothing in
// between is stored: the linear recurrence reads a[] and b[] and writes h[]
// alone, 12 bytes per f32 item where the pairs scan moves 16 each way.
//
// A whole, aligned segment moves in groups of VEC consecutive positions per
// lane (group g = q * 32 + lane holds positions g * VEC ..), each array read
// as one vector per group: 16 bytes of the widest input array (the
// recurrence: VEC 4, a float4 of a[] and one of b[]; bf16: VEC 8). The
// output has a VEC of its own, 16 bytes of outputs (bf16 sums: read 8 bf16
// at a time, write 8 bf16; the recurrence: write a float4 of h). Other
// segments move item by item, still coalesced: consecutive lanes touch
// consecutive positions of every array.
//
// A maps struct M (CudaMaps::cuda_source) declares Input (what lift reads
// at one position: one array's type, or a tuple with `make` for several),
// Item (the operator's), Output, and `lift` / `project`.

namespace scan {

// Positions per group for arrays whose widest element is MAX bytes: 16 bytes'
// worth, as long as it divides a run of ITEMS (else halved), and 1 when an
// element size is not a power of two (no vector of it).
template <int ITEMS, int MAX, bool POW2>
struct GroupOf {
    __host__ __device__ static constexpr int fit(int v) { return v <= 1 ? 1 : ITEMS % v == 0 ? v : fit(v / 2); }
    static constexpr int VALUE = POW2 && MAX <= 16 ? fit(16 / MAX) : 1;
};

__host__ __device__ constexpr bool is_pow2(int n) { return n > 0 && (n & (n - 1)) == 0; }

// V consecutive elements of one array, from index `at` (V * sizeof(X)
// aligned when V > 1): one vector load.
template <int V, class X>
__device__ __forceinline__ void read_group(const X* p, u64 at, X* out) {
    if constexpr (V == 1) {
        out[0] = p[at];
    } else {
        typedef Vector<X, V * (int)sizeof(X)> Vec;
        const Vec v = *reinterpret_cast<const Vec*>(p + at);
#pragma unroll
        for (int e = 0; e < V; ++e) out[e] = v.w[e];
    }
}

template <class Item>
struct ItemsIn {
    static constexpr bool DIRECT = true;  // the items themselves: vectors allowed
    static constexpr bool GROUPED = false;  // grouped runs are for fused maps (grouped.cuh)
    static constexpr bool FETCHES = false;  // early loads move vectors (exchange.cuh)
    static constexpr bool FETCHES_EARLY = false;
    template <int ITEMS>
    struct Fetched {};
    // Not a narrow slot's input (narrow.cuh).
    typedef Item Raw;
    static constexpr int NARROW_BYTES = 0;
    template <int ITEMS>
    static constexpr int VEC = 1;
    static __device__ __forceinline__ Item lift_raw(const Item& x) { return x; }
    const Item* p;
    __device__ __forceinline__ Item operator()(u64 i) const { return p[i]; }
};

template <class Item>
struct ItemsOut {
    static constexpr bool DIRECT = true;
    // Not a narrow slot's output (narrow.cuh).
    typedef Item Output;
    static constexpr int NARROW_BYTES = 0;
    template <int ITEMS>
    static constexpr int VEC = 1;
    static __device__ __forceinline__ Item project_item(const Item& x) { return x; }
    Item* p;
    __device__ __forceinline__ void operator()(u64 i, const Item& x) const { p[i] = x; }
};

// Position i's item: M::lift of item i of each of the N arrays. With
// STAGED, a whole segment of COUNT positions whose arrays fit the slice that
// will hold its items (FITS) can instead be staged: every array copied into
// the slice as 16-byte vectors, one after the other (`stage`), then lifted
// from there (`lift_staged`; WarpExchange::load_staged does both).
template <class M, int N, bool STAGED, class A, class B = A, class C = A, bool NARROW = false, bool GROUPED_RUNS = false>
struct LiftedIn {
    static_assert(N >= 1 && N <= 3, "one to three input arrays");
    static constexpr bool DIRECT = false;
    // GROUPED_RUNS (the policy's grouped_runs): forward scans keep each
    // lane's groups of positions in the lane (grouped.cuh) where the maps
    // allow it.
    static constexpr bool GROUPED = GROUPED_RUNS;
    // A whole segment's positions are fetched into registers, a group of
    // VEC per vector load, and lifted into the slice
    // (WarpExchange::put_lifted).
    static constexpr bool FETCHES = true;
    static constexpr int WIDEST = (int)(sizeof(A) > sizeof(B) ? (sizeof(A) > sizeof(C) ? sizeof(A) : sizeof(C))
                                                              : (sizeof(B) > sizeof(C) ? sizeof(B) : sizeof(C)));
    template <int ITEMS>
    static constexpr int VEC =
        GroupOf<ITEMS, WIDEST, is_pow2(sizeof(A)) && is_pow2(sizeof(B)) && is_pow2(sizeof(C))>::VALUE;
    template <int ITEMS>
    struct Fetched {
        A a[ITEMS];
        B b[N >= 2 ? ITEMS : 1];
        C c[N >= 3 ? ITEMS : 1];
    };
    // NARROW (the policy's narrow_slots): the kernel keeps one array's raw
    // elements in its slots (narrow.cuh) and lifts them one at a time.
    static_assert(!NARROW || (N == 1 && !STAGED), "narrow slots hold one array's elements");
    typedef A Raw;
    static constexpr int NARROW_BYTES = NARROW ? (int)sizeof(A) : 0;
    static __device__ __forceinline__ typename M::Item lift_raw(const A& x) { return lift_values(x, B{}, C{}); }
    __device__ __forceinline__ A raw_at(u64 i) const { return a[i]; }
    // The input bytes of one position.
    static constexpr int BYTES =
        (int)sizeof(A) + (N >= 2 ? (int)sizeof(B) : 0) + (N >= 3 ? (int)sizeof(C) : 0);
    // Early loads (single_pass.cuh: before the previous tile's store) hold
    // the fetched inputs in registers across the store, as plain kernels
    // hold their items: only when the inputs take no more bytes than the
    // items. (Three f32 arrays into 8-byte items spilled 24-40 bytes per
    // thread at the 96-register bound.)
    static constexpr bool FETCHES_EARLY = BYTES <= (int)sizeof(typename M::Item);
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
        const B y = N >= 2 ? reinterpret_cast<const B*>(raw + COUNT * sizeof(A))[m] : B{};
        const C z = N >= 3 ? reinterpret_cast<const C*>(raw + COUNT * (sizeof(A) + sizeof(B)))[m] : C{};
        return lift_values(x, y, z);
    }
    // Whether positions from `base` start a group of VEC<ITEMS> in every array.
    template <int ITEMS>
    __device__ __forceinline__ bool groups_aligned(u64 base) const {
        constexpr int V = VEC<ITEMS>;
        if constexpr (V == 1) return true;  // element loads (e.g. 12-byte elements)
        bool ok = ((u64)(a + base) % (V * sizeof(A))) == 0;
        if constexpr (N >= 2) ok = ok && ((u64)(b + base) % (V * sizeof(B))) == 0;
        if constexpr (N >= 3) ok = ok && ((u64)(c + base) % (V * sizeof(C))) == 0;
        return ok;
    }
    // The segment from `base` (whole, groups_aligned): element q * V + e of
    // each array holds position (q * 32 + lane) * V + e, V = VEC<ITEMS>.
    template <int ITEMS>
    __device__ __forceinline__ void fetch(u64 base, Fetched<ITEMS>& f) const {
        constexpr int V = VEC<ITEMS>;
#pragma unroll
        for (int q = 0; q < ITEMS / V; ++q) {
            const u64 at = base + (u64)(q * 32 + (int)lane_id()) * V;
            read_group<V>(a, at, f.a + q * V);
            if constexpr (N >= 2) read_group<V>(b, at, f.b + q * V);
            if constexpr (N >= 3) read_group<V>(c, at, f.c + q * V);
        }
    }
    // The item of fetched element k.
    template <int ITEMS>
    __device__ __forceinline__ typename M::Item lift_fetched(const Fetched<ITEMS>& f, int k) const {
        return lift_values(f.a[k], f.b[N >= 2 ? k : 0], f.c[N >= 3 ? k : 0]);
    }
    // M::lift of one position's values (those of arrays past N unused).
    static __device__ __forceinline__ typename M::Item lift_values(const A& x, const B& y, const C& z) {
        if constexpr (N == 1) {
            return M::lift(x);
        } else if constexpr (N == 2) {
            return M::lift(M::Input::make(x, y));
        } else {
            return M::lift(M::Input::make(x, y, z));
        }
    }
    __device__ __forceinline__ typename M::Item operator()(u64 i) const {
        return lift_values(a[i], N >= 2 ? b[i] : B{}, N >= 3 ? c[i] : C{});
    }
};

// Writes M::project of each result; a whole, aligned segment a group of
// VEC consecutive positions per vector store (WarpExchange::store_projected).
template <class M>
struct ProjectedOut {
    typedef typename M::Output Output;
    static constexpr bool DIRECT = false;
    template <int ITEMS>
    static constexpr int VEC = GroupOf<ITEMS, (int)sizeof(Output), is_pow2(sizeof(Output))>::VALUE;
    static constexpr int NARROW_BYTES = (int)sizeof(Output);
    static __device__ __forceinline__ Output project_item(const typename M::Item& x) { return M::project(x); }
    Output* p;
    __device__ __forceinline__ void operator()(u64 i, const typename M::Item& x) const { p[i] = M::project(x); }
    template <int ITEMS>
    __device__ __forceinline__ bool groups_aligned(u64 base) const {
        if constexpr (VEC<ITEMS> == 1) return true;
        return ((u64)(p + base) % (VEC<ITEMS> * sizeof(Output))) == 0;
    }
    // Positions at .. at + V - 1 (V * sizeof(Output) aligned when V > 1).
    template <int V>
    __device__ __forceinline__ void put_group(u64 at, const typename M::Item (&x)[V]) const {
        if constexpr (V == 1) {
            p[at] = M::project(x[0]);
        } else {
            Vector<Output, V * (int)sizeof(Output)> v;
#pragma unroll
            for (int e = 0; e < V; ++e) v.w[e] = M::project(x[e]);
            *reinterpret_cast<Vector<Output, V * (int)sizeof(Output)>*>(p + at) = v;
        }
    }
};

}  // namespace scan
