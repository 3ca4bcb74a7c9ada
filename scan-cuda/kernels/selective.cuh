// The selective scan of Mamba (scan_core::selective has the definition and
// the f64 reference), forward, f32. Two kernels: the chunked block scan, for
// long rows (K channels per block), and the lane-group kernel at the end of
// the file, for many short rows (the host chooses, scan-cuda/src/selective/forward.rs).

namespace scan {

// 2^x by the SFU alone (ex2.approx: relative error about 2^-22, far inside
// the tolerances of an f32 selective scan; exp2f adds range handling around
// it that costs more instructions than the recurrence itself).
#ifndef SCAN_HOST_EMULATION
__device__ __forceinline__ float ssm_exp2(float x) {
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

__device__ __forceinline__ float ssm_log2(float x) {
    float y;
    asm("lg2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

__device__ __forceinline__ float ssm_reciprocal(float x) {
    float y;
    asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}
#else
// The host emulation (scan-cuda/emulator) has no SFU: the libm functions.
inline float ssm_exp2(float x) { return exp2f(x); }
inline float ssm_log2(float x) { return log2f(x); }
inline float ssm_reciprocal(float x) { return 1.0f / x; }
#endif

// log2(e): exponentials are ex2 of x log2(e).
constexpr float SSM_LOG2E = 1.4426950408889634f;

// a x + b, but exactly b where x is 0. A run's composite factor (the product
// of its steps' e^(dt A)) overflows to inf for growing states (A dt above
// about 88.7 over the run) while the state it multiplies may be 0, as every
// state that starts at 0 is until its first input: inf * 0 would make NaN
// of a finite state (a helper's review; the CPU steps one at a time and
// never forms the composite). A tiny nonzero state under an overflowing
// factor still overflows: the f32 composite cannot represent it.
__device__ __forceinline__ float ssm_apply(float a, float x, float b) { return x == 0.0f ? b : fmaf(a, x, b); }

// softplus, sigmoid and silu by the SFU too: log1pf(expf(x)) and a division
// cost about 60 instructions per step, a quarter of all the kernel issues
// at N = 16. Their errors (a few 2^-22 relative; softplus of x below about
// -17 is 0 instead of e^x < 5e-8) are far inside the scan's tolerances.
__device__ __forceinline__ float ssm_softplus(float x) {
    constexpr float LN2 = 0.6931471805599453f;
    return x > 20.0f ? x : LN2 * ssm_log2(1.0f + ssm_exp2(x * SSM_LOG2E));
}
__device__ __forceinline__ float ssm_sigmoid(float x) { return ssm_reciprocal(1.0f + ssm_exp2(-x * SSM_LOG2E)); }
__device__ __forceinline__ float ssm_silu(float x) { return x * ssm_sigmoid(x); }

// ITEMS floats from `p`, 16-byte aligned, as ITEMS / 4 vector loads.
template <int ITEMS>
__device__ __forceinline__ void ssm_load_vectors(const float* p, float (&v)[ITEMS]) {
#pragma unroll
    for (int i = 0; i < ITEMS / 4; ++i) {
        const float4 w = reinterpret_cast<const float4*>(p)[i];
        v[4 * i] = w.x;
        v[4 * i + 1] = w.y;
        v[4 * i + 2] = w.z;
        v[4 * i + 3] = w.w;
    }
}

// ITEMS floats of a row from `p + t0`, or fewer where the row ends (zeros
// in their place); 16-byte loads when the run is whole and aligned.
template <int ITEMS>
__device__ __forceinline__ void ssm_load(const float* p, u64 t0, u64 len, float (&v)[ITEMS]) {
    if (t0 + ITEMS <= len && ((unsigned long long)(p + t0) % 16) == 0 && ITEMS % 4 == 0) {
        ssm_load_vectors(p + t0, v);
    } else {
#pragma unroll
        for (int i = 0; i < ITEMS; ++i) v[i] = t0 + i < len ? p[t0 + i] : 0.0f;
    }
}

template <int ITEMS>
__device__ __forceinline__ void ssm_store(float* p, u64 t0, u64 len, const float (&v)[ITEMS]) {
    if (t0 + ITEMS <= len && ((unsigned long long)(p + t0) % 16) == 0 && ITEMS % 4 == 0) {
#pragma unroll
        for (int i = 0; i < ITEMS / 4; ++i) {
            reinterpret_cast<float4*>(p + t0)[i] = make_float4(v[4 * i], v[4 * i + 1], v[4 * i + 2], v[4 * i + 3]);
        }
    } else {
#pragma unroll
        for (int i = 0; i < ITEMS; ++i)
            if (t0 + i < len) p[t0 + i] = v[i];
    }
}

// B or C for one row: varying (batch, groups, N, L) when `groups` > 0,
// else fixed (dim, N).
struct SsmProjection {
    const float* data;
    u64 groups;

    // The row of state n for (batch b, channel d), or the fixed value.
    __device__ __forceinline__ const float* row(u64 b, u64 d, u64 dim, u64 n, u64 state, u64 len) const {
        const u64 g = d / (dim / groups);
        return data + ((b * groups + g) * state + n) * len;
    }
    __device__ __forceinline__ float fixed(u64 d, u64 n, u64 state) const { return data[d * state + n]; }
};

// K recurrences side by side (K channels' states for one state index), so
// that one block scan serves all of them. h -> a h + b, composed left to
// right: (a1, b1) then (a2, b2) is (a1 a2, a2 b1 + b2), as
// scan_core::ops::LinearRecurrence.
template <int K>
struct SsmRecurrences {
    struct Item {
        float a[K], b[K];
    };
    static __device__ __forceinline__ Item identity() {
        Item x;
#pragma unroll
        for (int k = 0; k < K; ++k) {
            x.a[k] = 1.0f;
            x.b[k] = 0.0f;
        }
        return x;
    }
    static __device__ __forceinline__ Item combine(const Item& l, const Item& r) {
        Item x;
#pragma unroll
        for (int k = 0; k < K; ++k) {
            x.a[k] = l.a[k] * r.a[k];
            x.b[k] = ssm_apply(r.a[k], l.b[k], r.b[k]);
        }
        return x;
    }
};

// ITEMS floats from `p + t0`: 16-byte loads and no checks when `whole`
// (the run lies inside the row and the row is aligned), else ssm_load.
template <int ITEMS>
__device__ __forceinline__ void ssm_load_run(bool whole, const float* p, u64 t0, u64 len, float (&v)[ITEMS]) {
    if (whole && ITEMS % 4 == 0) {
        ssm_load_vectors(p + t0, v);
    } else {
        ssm_load<ITEMS>(p, t0, len, v);
    }
}

template <int ITEMS>
__device__ __forceinline__ void ssm_fill(float x, float (&v)[ITEMS]) {
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) v[i] = x;
}

__device__ __forceinline__ bool ssm_aligned(const void* p) { return ((unsigned long long)p % 16) == 0; }

// The chunked block scan: K consecutive channels of one batch per block
// (rows row0 .. row0 + K - 1; for K > 1 the host checks that B and C both
// vary and that the K channels share their group, so that the block reads
// B and C once for all K). The rows' L steps go in chunks of THREADS *
// ITEMS; in a chunk each thread holds a run of ITEMS consecutive steps of
// each channel in registers: dt (delta after bias and softplus), dt u, and
// the output accumulator y, which starts at D u. For each state index n in
// turn:
//   1. thread: a_t = exp(dt_t A[n]) and b_t = dt_t u_t B_t[n] for its run,
//      kept in registers, and the run's composite (a LinearRecurrence item:
//      its a is exp(A[n] * the run's sum of dt), one exp instead of ITEMS - 1
//      products);
//   2. block: an exclusive scan of the composites (block.cuh), which gives
//      each run the map from the chunk's starting state to its own;
//   3. thread: the run's starting state from the chunk's carried state
//      x[n], then h_t = a_t h_{t-1} + b_t along the run, y_t += C_t[n] h_t;
//      thread 0 moves the carried x[n] past the chunk (the block total).
// Then out_t = y_t * silu(z_t). The (batch, dim, L, N) states are never
// stored: each input is read once (B and C once per block, from L2 when
// blocks share them), out is written once, and x[n] crosses chunks in
// shared memory (two buffers, read and written alternately, so that no
// barrier separates the read of one chunk from the write of the next).
//
// Steps past L get dt = 0 and b = 0 (a = 1: the identity) and are neither
// read nor written. Every chunk but a row's last one is `whole`:
// vector loads, no bounds checks (the instructions per state and step are
// what bound this kernel: it issues, it does not wait on memory).
template <int THREADS, int ITEMS, int K, bool VARY_B, bool VARY_C>
__device__ __forceinline__ void selective_scan_chunked(const float* u, const float* delta, const float* A,
                                                       SsmProjection B, SsmProjection C, const float* D,
                                                       const float* z, const float* delta_bias, const float* x0,
                                                       float* out, float* last, u64 batch, u64 dim, u64 len,
                                                       u64 state, bool softplus) {
    typedef SsmRecurrences<K> Op;
    typedef BlockScan<Op, THREADS> Scan;
    typedef typename Op::Item Pairs;
    static_assert(ITEMS % 4 == 0, "runs of whole float4 vectors");
    constexpr u64 CHUNK = (u64)THREADS * ITEMS;
    __shared__ typename Scan::Shared scan_shared[2];
    extern __shared__ float shared_floats[];
    float* carried = shared_floats;              // [2][K][state]
    float* a_log2 = shared_floats + 2 * K * state;  // [K][state]: A log2(e)

    const u64 row0 = (u64)blockIdx.x * K;
    const u64 b = row0 / dim, d0 = row0 % dim;
    float skip[K], bias[K];
#pragma unroll
    for (int k = 0; k < K; ++k) {
        skip[k] = D != nullptr ? D[d0 + k] : 0.0f;
        bias[k] = delta_bias != nullptr ? delta_bias[d0 + k] : 0.0f;
    }
    for (u64 j = threadIdx.x; j < K * state; j += THREADS) {
        carried[j] = x0 != nullptr ? x0[row0 * state + j] : 0.0f;
        a_log2[j] = A[d0 * state + j] * SSM_LOG2E;
    }
    // VARY_B: state 0's row of B (state n's is n * len further on); else
    // the first channel's fixed values (the host passes K = 1). So for C.
    const float* b_rows = VARY_B ? B.row(b, d0, dim, 0, state, len) : B.data + d0 * state;
    const float* c_rows = VARY_C ? C.row(b, d0, dim, 0, state, len) : C.data + d0 * state;
    const bool aligned = len % 4 == 0 && ssm_aligned(u) && ssm_aligned(delta) && ssm_aligned(out) &&
                         (z == nullptr || ssm_aligned(z)) && ssm_aligned(B.data) && ssm_aligned(C.data);
    __syncthreads();

    unsigned parity = 0, turn = 0;
    // `whole`: the chunk lies inside the rows, which are aligned (block-uniform).
    auto chunk = [&](const u64 start, const bool whole) {
        const u64 t0 = start + (u64)threadIdx.x * ITEMS;
        float dt[K][ITEMS], dtu[K][ITEMS], y[K][ITEMS], dt_sum[K];
#pragma unroll
        for (int k = 0; k < K; ++k) {
            // u goes into dtu and is multiplied there: with no u left to keep,
            // the compiler cannot trade dtu for a product per state.
            ssm_load_run(whole, u + (row0 + k) * len, t0, len, dtu[k]);
            ssm_load_run(whole, delta + (row0 + k) * len, t0, len, dt[k]);
            dt_sum[k] = 0.0f;
#pragma unroll
            for (int i = 0; i < ITEMS; ++i) {
                float v = dt[k][i] + bias[k];
                if (softplus) v = ssm_softplus(v);
                if (!whole && t0 + i >= len) v = 0.0f;
                dt[k][i] = v;
                y[k][i] = skip[k] * dtu[k][i];
                dtu[k][i] = v * dtu[k][i];
                dt_sum[k] += v;
            }
        }
        auto load_b = [&](u64 n, float (&v)[ITEMS]) {
            if constexpr (VARY_B) {
                ssm_load_run(whole, b_rows + n * len, t0, len, v);
            } else {
                ssm_fill(b_rows[n], v);
            }
        };
        auto load_c = [&](u64 n, float (&v)[ITEMS]) {
            if constexpr (VARY_C) {
                ssm_load_run(whole, c_rows + n * len, t0, len, v);
            } else {
                ssm_fill(c_rows[n], v);
            }
        };
        const float* from = carried + parity * K * state;
        float* to = carried + (parity ^ 1u) * K * state;
        // B of state n is loaded one state ahead and C at the state's start,
        // so that their latency overlaps work instead of stalling it.
        float next_b[ITEMS];
        load_b(0, next_b);
        for (u64 n = 0; n < state; ++n) {
            float bb[ITEMS], cc[ITEMS];
#pragma unroll
            for (int i = 0; i < ITEMS; ++i) bb[i] = next_b[i];
            if (n + 1 < state) load_b(n + 1, next_b);
            load_c(n, cc);
            float a[K][ITEMS], bu[K][ITEMS];
            Pairs run;
#pragma unroll
            for (int k = 0; k < K; ++k) {
                const float a2 = a_log2[k * state + n];
#pragma unroll
                for (int i = 0; i < ITEMS; ++i) {
                    a[k][i] = ssm_exp2(dt[k][i] * a2);
                    bu[k][i] = dtu[k][i] * bb[i];
                }
                run.a[k] = ssm_exp2(dt_sum[k] * a2);
                run.b[k] = bu[k][0];
#pragma unroll
                for (int i = 1; i < ITEMS; ++i) run.b[k] = fmaf(a[k][i], run.b[k], bu[k][i]);
            }
            Pairs total, before;
            if constexpr (THREADS == 32) {
                // One warp: no shared memory and no barrier.
                const Pairs inclusive = warp_inclusive<Op>(run);
                const Pairs below = Shuffle<Pairs>::up(inclusive, 1);
                total = Shuffle<Pairs>::from(inclusive, 31);
                before = lane_id() == 0 ? Op::identity() : below;
            } else {
                before = Scan::exclusive(run, total, scan_shared[turn]);
                turn ^= 1u;
            }
#pragma unroll
            for (int k = 0; k < K; ++k) {
                const float x = from[k * state + n];
                float h = ssm_apply(before.a[k], x, before.b[k]);
                if (threadIdx.x == 0) to[k * state + n] = ssm_apply(total.a[k], x, total.b[k]);
#pragma unroll
                for (int i = 0; i < ITEMS; ++i) {
                    h = fmaf(a[k][i], h, bu[k][i]);
                    y[k][i] = fmaf(cc[i], h, y[k][i]);
                }
            }
        }
        parity ^= 1u;
        // One warp has no barrier per state: order thread 0's carried
        // states before the next chunk reads them.
        if constexpr (THREADS == 32) __syncwarp();
#pragma unroll
        for (int k = 0; k < K; ++k) {
            if (z != nullptr) {
                float zz[ITEMS];
                ssm_load_run(whole, z + (row0 + k) * len, t0, len, zz);
#pragma unroll
                for (int i = 0; i < ITEMS; ++i) y[k][i] *= ssm_silu(zz[i]);
            }
            ssm_store<ITEMS>(out + (row0 + k) * len, t0, len, y[k]);
        }
    };
    for (u64 start = 0; start < len; start += CHUNK) {
        // Two calls, so that each inlined copy sees a constant `whole`.
        if (aligned && start + CHUNK <= len) {
            chunk(start, true);
        } else {
            chunk(start, false);
        }
    }
    if (last != nullptr) {
        // Thread 0 wrote the last carried states before the last barrier
        // every thread passed; wait for it.
        __syncthreads();
        for (u64 j = threadIdx.x; j < K * state; j += THREADS) last[row0 * state + j] = carried[parity * K * state + j];
    }
}

// The selective scan by lane groups: no block scan at all. A group of S
// lanes owns one row (or K rows, below); lane i of the group owns the P
// consecutive state indices n = i P .. i P + P - 1 and runs their
// recurrences sequentially along L, so the (a, b) pairs never meet a scan. Steps go in blocks of T (a
// multiple of S and of 4): lane i loads steps t0 + i T / S .. t0 + (i + 1) T
// / S - 1 of u, delta and z (vectors, one after the other across the
// group), computes their dt (one softplus per step, not one per state) and
// shares (dt, dt u) through shared memory; every lane then advances its
// states over the T steps, collecting its part of y for each step; a
// halving butterfly across the group (T (S - 1) / S shuffles per block)
// leaves lane i with the whole y of its own steps, which it finishes and
// stores.
//
// Why this serves long rows too: the work per (step, state) is the
// recurrence itself (an exp, two products, two fused multiply-adds) with no
// scan around it, and a warp holds 32 K / S consecutive rows, which read the
// same B and C when they are channels of one batch and group (dim and dim /
// groups multiples of 32 K / S): one load then serves them all (one
// wavefront of the L1 data pipe per quarter-warp: see the lane layout in
// selective_scan_lanes). What it costs besides: B and C a
// vector of 4 steps per load, the butterfly, and each row's own work per step
// (softplus, silu, u, delta, z, out), shared by its N states. The hot loop
// runs over whole blocks with no bounds checks and no branches but the
// prefetch's: B and C of the next state (or of the next block's first
// state) and the next block's u, delta and z are loaded while the current
// state computes, in two alternating register buffers (P even: no copies).
// B and C vary (the host sends fixed ones to the chunked kernel); a state's
// row is at a 32-bit offset n L + t from its batch and group's first row (the
// host checks that N L fits), so an address costs one multiply-add.
// IDLE: N < S P, and the states past N are skipped (they read state 0's
// row); without it every state is live. Lanes past the last row compute on
// row 0 and store nothing; their sums stay within their own group.
template <int S, int P, int T, int K>
struct SsmLanes {
    static_assert(S >= 1 && S <= 32 && (S & (S - 1)) == 0, "S is a power of two up to 32");
    static_assert(T % S == 0 && T % 4 == 0, "blocks of whole groups of S steps and whole float4 vectors");
    static constexpr int OWN = T / S;  // the steps of a block each lane loads and finishes
    // Two slots more per group than it has steps: groups then start on
    // different banks and every pair of steps is one 16-byte read (T = 8:
    // 20 words apart, no conflict among 8 groups).
    static constexpr int STRIDE = T + 2;

    float bv[2][T], cv[2][T];  // B and C of a state over a block, double-buffered
    float own_u[K][OWN], own_dt[K][OWN], own_z[K][OWN];  // per row of the lane

    // B and C at offset `at` (state row and first step) into buffer `slot`:
    // whole vectors, no checks (FAST), or item by item with zeros from
    // step `left` of the block on.
    template <bool FAST>
    __device__ __forceinline__ void load_bc(int slot, const float* b, const float* c, unsigned at, u64 left) {
        if constexpr (FAST) {
            ssm_load_vectors(b + at, bv[slot]);
            ssm_load_vectors(c + at, cv[slot]);
        } else {
            ssm_load<T>(b + at, 0, left, bv[slot]);
            ssm_load<T>(c + at, 0, left, cv[slot]);
        }
    }

    // This lane's u, delta and z of its row k's block at t0, steps t0 + i
    // OWN .. t0 + i OWN + OWN - 1 (zeros past the row); FAST: the rows are
    // 16-byte aligned and the block whole, so OWN = 2 or a multiple of 4
    // goes in vectors (one load instruction touches one line per row: the
    // 8 rows of a warp's load, not 8 per step).
    template <bool FAST>
    __device__ __forceinline__ void load_own(int k, const float* u, const float* delta, const float* z, unsigned i,
                                             u64 t0, u64 len) {
        const u64 first = t0 + (u64)i * OWN;
        if constexpr (FAST && OWN % 4 == 0) {
            ssm_load_vectors(u + first, own_u[k]);
            ssm_load_vectors(delta + first, own_dt[k]);
            if (z != nullptr) ssm_load_vectors(z + first, own_z[k]);
        } else if constexpr (FAST && OWN == 2) {
            const float2 uu = *reinterpret_cast<const float2*>(u + first);
            const float2 dd = *reinterpret_cast<const float2*>(delta + first);
            own_u[k][0] = uu.x, own_u[k][1] = uu.y, own_dt[k][0] = dd.x, own_dt[k][1] = dd.y;
            if (z != nullptr) {
                const float2 zz = *reinterpret_cast<const float2*>(z + first);
                own_z[k][0] = zz.x, own_z[k][1] = zz.y;
            }
        } else {
#pragma unroll
            for (int j = 0; j < OWN; ++j) {
                const u64 t = first + j;
                const bool in = FAST || t < len;
                own_u[k][j] = in ? u[t] : 0.0f;
                own_dt[k][j] = in ? delta[t] : 0.0f;
                own_z[k][j] = in && z != nullptr ? z[t] : 0.0f;
            }
        }
    }

    // This lane's outputs of the block at t0 (none past the row).
    template <bool FAST>
    __device__ __forceinline__ void store_own(float* out, unsigned i, u64 t0, u64 len, const float (&o)[OWN]) {
        const u64 first = t0 + (u64)i * OWN;
        if constexpr (FAST && OWN % 4 == 0) {
#pragma unroll
            for (int j = 0; j < OWN; j += 4) {
                *reinterpret_cast<float4*>(out + first + j) = make_float4(o[j], o[j + 1], o[j + 2], o[j + 3]);
            }
        } else if constexpr (FAST && OWN == 2) {
            *reinterpret_cast<float2*>(out + first) = make_float2(o[0], o[1]);
        } else {
#pragma unroll
            for (int j = 0; j < OWN; ++j) {
                if (FAST || first + j < len) out[first + j] = o[j];
            }
        }
    }
};

// K rows per lane (K = 1 or 2): the lane's K rows (consecutive channels of
// one batch and group: the host checks) share its B and C registers, so
// that B and C cost half the L1 data pipe per (row, state, step) at K = 2,
// for twice the registers of the rows' own values.
template <int S, int P, int T, int WARPS, bool IDLE, int K = 1>
__device__ __forceinline__ void selective_scan_lanes(const float* u, const float* delta, const float* A,
                                                     SsmProjection B, SsmProjection C, const float* D, const float* z,
                                                     const float* delta_bias, const float* x0, float* out,
                                                     float* last, u64 batch, u64 dim, u64 len, u64 state,
                                                     bool softplus) {
    static_assert(K == 1 || K == 2, "one or two rows per lane");
    typedef SsmLanes<S, P, T, K> Lanes;
    constexpr int OWN = Lanes::OWN;
    // [warp][k][slot]: for each k the slots are consecutive, so a quarter-
    // warp's 8 slots read 8 rows Lanes::STRIDE apart (conflict-free).
    __shared__ __align__(16) float2 shared_steps[WARPS][K][32 / S][Lanes::STRIDE];
    // Lane i R + r is lane i of row slot r (R slots per warp): the S lanes of
    // a slot are R apart, so that the 8 lanes of a quarter-warp are one lane
    // of 8 slots. A 16-byte load runs a quarter-warp at a time, one data
    // wavefront per cache line it touches; B and C are the same for the
    // warp's rows, so each quarter-warp reads one line (lanes of a row side
    // by side would touch four: four times the L1 data pipe's work, which
    // bounded the kernel). Slot r holds rows r K .. r K + K - 1 of the warp.
    constexpr int R = 32 / S;
    const unsigned lane = lane_id(), i = lane / R, row_slot = lane % R;
    const u64 rows = batch * dim;
    const u64 row = (((u64)blockIdx.x * WARPS + warp_id()) * R + row_slot) * K;  // the lane's first row
    // With dim a multiple of K (the host's check), a lane's rows are all
    // live or none is.
    const bool live = row < rows;
    const u64 r = live ? row : 0, b = r / dim, d = r % dim;
    float a2[K][P], h[K][P];
    bool mine[P];
    unsigned at[P];  // each state's row, from state 0's
#pragma unroll
    for (int k = 0; k < P; ++k) {
        const u64 n = (u64)i * P + k;
        mine[k] = !IDLE || n < state;
        const u64 m = mine[k] ? n : 0;  // a valid state for the loads of the others
        at[k] = (unsigned)(m * len);
#pragma unroll
        for (int q = 0; q < K; ++q) {
            a2[q][k] = A[(d + q) * state + m] * SSM_LOG2E;
            h[q][k] = live && mine[k] && x0 != nullptr ? x0[(row + q) * state + n] : 0.0f;
        }
    }
    const float* b_base = B.row(b, d, dim, 0, state, len);
    const float* c_base = C.row(b, d, dim, 0, state, len);
    float skip[K], bias[K];
    const float *u_row[K], *delta_row[K], *z_row[K];
    float* out_row[K];
    float2* steps[K];
#pragma unroll
    for (int q = 0; q < K; ++q) {
        skip[q] = D != nullptr ? D[d + q] : 0.0f;
        bias[q] = delta_bias != nullptr ? delta_bias[d + q] : 0.0f;
        u_row[q] = u + (r + q) * len;
        delta_row[q] = delta + (r + q) * len;
        z_row[q] = z != nullptr ? z + (r + q) * len : nullptr;
        out_row[q] = out + (r + q) * len;
        steps[q] = shared_steps[warp_id()][q][row_slot];
    }
    // Whole blocks take the fast path when every row starts 16-byte aligned
    // (len a multiple of 4, aligned bases).
    const bool aligned = len % 4 == 0 && ssm_aligned(B.data) && ssm_aligned(C.data) && ssm_aligned(u) &&
                         ssm_aligned(delta) && ssm_aligned(out) && (z == nullptr || ssm_aligned(z));
    const u64 whole_end = aligned ? len / T * T : 0;

    Lanes io;
    // One block: FAST for whole blocks (no checks); `next`: whether the next
    // block is whole too, so that its loads are issued now. (A plain lambda
    // called with constants: NVRTC takes no generic lambda in device code,
    // and inlining folds FAST away.)
    auto block = [&](const bool FAST, const u64 t0, const bool next) {
        // This block's own steps: dt into the shared steps; u and z kept
        // for the output while the next block's are loaded.
        float keep_u[K][OWN], keep_z[K][OWN];
#pragma unroll
        for (int q = 0; q < K; ++q) {
#pragma unroll
            for (int j = 0; j < OWN; ++j) {
                const u64 t = t0 + (u64)i * OWN + j;
                float dt = io.own_dt[q][j] + bias[q];
                if (softplus) dt = ssm_softplus(dt);
                if (!FAST && t >= len) dt = 0.0f;  // past the end: a = 1, b = 0, h is kept
                steps[q][i * OWN + j] = make_float2(dt, dt * io.own_u[q][j]);
                keep_u[q][j] = io.own_u[q][j];
                keep_z[q][j] = io.own_z[q][j];
            }
        }
        const unsigned t32 = (unsigned)t0;
        if (FAST && next) {
#pragma unroll
            for (int q = 0; q < K; ++q) io.template load_own<true>(q, u_row[q], delta_row[q], z_row[q], i, t0 + T, len);
        }
        if (!FAST) io.template load_bc<false>(0, b_base, c_base, at[0] + t32, len - t0);
        __syncwarp();
        float2 st[K][T];
#pragma unroll
        for (int q = 0; q < K; ++q) {
#pragma unroll
            for (int t = 0; t < T; t += 2) {
                const float4 two = *reinterpret_cast<const float4*>(steps[q] + t);
                st[q][t] = make_float2(two.x, two.y);
                st[q][t + 1] = make_float2(two.z, two.w);
            }
        }
        float y[K][T];
#pragma unroll
        for (int q = 0; q < K; ++q) {
#pragma unroll
            for (int t = 0; t < T; ++t) y[q][t] = 0.0f;
        }
#pragma unroll
        for (int k = 0; k < P; ++k) {
            const int slot = k % 2;
            // B and C a state ahead, or the next block's first state.
            if (k + 1 < P && FAST) {
                io.template load_bc<true>(slot ^ 1, b_base, c_base, at[k + 1] + t32, T);
            } else if (k + 1 < P) {
                io.template load_bc<false>(slot ^ 1, b_base, c_base, at[k + 1] + t32, len - t0);
            } else if (FAST && next) {
                io.template load_bc<true>(slot ^ 1, b_base, c_base, at[0] + t32 + T, T);
            }
            if (!IDLE || mine[k]) {
#pragma unroll
                for (int t = 0; t < T; ++t) {
#pragma unroll
                    for (int q = 0; q < K; ++q) {
                        h[q][k] = fmaf(ssm_exp2(st[q][t].x * a2[q][k]), h[q][k], st[q][t].y * io.bv[slot][t]);
                        y[q][t] = fmaf(io.cv[slot][t], h[q][k], y[q][t]);
                    }
                }
            }
        }
        if (P % 2 == 1) {
            // The next block's first state went to slot 1; the block reads slot 0.
#pragma unroll
            for (int t = 0; t < T; ++t) {
                io.bv[0][t] = io.bv[1][t];
                io.cv[0][t] = io.cv[1][t];
            }
        }
        // Butterfly over the row's lanes, halving: at the stage of mask m
        // (S / 2 first), a lane keeps the half of its live y whose steps
        // match its bit m (the upper half if set), adds its partner's sums
        // of that half and sends the other half. After log2(S) stages y[0
        // .. OWN) hold the whole sums of steps i OWN .. i OWN + OWN - 1,
        // side by side for the vector stores. (Stages counted up, so that
        // the loop unrolls and y stays in registers: counting m down by
        // halving kept y in local memory.)
#pragma unroll
        for (int stage = 1; stage < S; stage *= 2) {
            const int m = S / (2 * stage), half = T / (2 * stage);
            const bool upper = (i & (unsigned)m) != 0;
#pragma unroll
            for (int q = 0; q < K; ++q) {
#pragma unroll
                for (int j = 0; j < half; ++j) {
                    const float send = upper ? y[q][j] : y[q][j + half];
                    const float keep = upper ? y[q][j + half] : y[q][j];
                    y[q][j] = keep + __shfl_xor_sync(0xffffffffu, send, m * R);
                }
            }
        }
#pragma unroll
        for (int q = 0; q < K; ++q) {
            float o[OWN];
#pragma unroll
            for (int j = 0; j < OWN; ++j) {
                o[j] = fmaf(skip[q], keep_u[q][j], y[q][j]);
                if (z_row[q] != nullptr) o[j] *= ssm_silu(keep_z[q][j]);
            }
            if (live && FAST) {
                io.template store_own<true>(out_row[q], i, t0, len, o);
            } else if (live) {
                io.template store_own<false>(out_row[q], i, t0, len, o);
            }
        }
        __syncwarp();  // the steps are read before the next block overwrites them
    };
    if (whole_end > 0) {
#pragma unroll
        for (int q = 0; q < K; ++q) io.template load_own<true>(q, u_row[q], delta_row[q], z_row[q], i, 0, len);
        io.template load_bc<true>(0, b_base, c_base, at[0], T);
    }
    u64 t0 = 0;
    for (; t0 < whole_end; t0 += T) block(true, t0, t0 + T < whole_end);
    for (; t0 < len; t0 += T) {
#pragma unroll
        for (int q = 0; q < K; ++q) io.template load_own<false>(q, u_row[q], delta_row[q], z_row[q], i, t0, len);
        block(false, t0, false);
    }
    if (live && last != nullptr) {
#pragma unroll
        for (int q = 0; q < K; ++q) {
#pragma unroll
            for (int k = 0; k < P; ++k) {
                if (mine[k]) last[(row + q) * state + (u64)i * P + k] = h[q][k];
            }
        }
    }
}

}  // namespace scan
