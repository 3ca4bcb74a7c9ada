// The selective scan by tiles of 32 channels: a block owns 32 consecutive
// channels (rows) of one batch and group of B and C, and G warps; warp g
// runs state indices 4 g .. 4 g + 3 of all 32 rows, lane r the recurrences
// of row r. Every lane of a warp is at the same step and the same states,
// so B and C are the same for the whole warp: each is one warp-uniform
// 16-byte shared-memory load per step (4 states), which costs 2 L1
// wavefronts (ncu, H200), where the lane kernels (selective.cuh) pay a
// wavefront per quarter-warp for every lane's own copy. That pipe bounded
// them (84% busy at 8/11's shape).
//
// Steps go in tiles of 32, through shared memory, three phases a tile:
//   1. prepare (every thread, two (row, 4 steps) units each at G = 4):
//      dt = softplus(delta + bias) and dt u into `steps` (float2 per (row,
//      step)); D u and silu(z) kept in registers for phase 3; B and C of the
//      tile's states into `bc`, transposed to [step][state];
//   2. scan (warp g, lane r): h_n = exp(dt A_n) h_n + dt u B_n and
//      y = sum of C_n h_n over the warp's 4 states, into `partial[g]`;
//   3. finish (the same units as phase 1): out = (the G partial sums + D u)
//      silu(z), one coalesced store.
// The next tile's inputs are loaded into registers while a tile scans, and
// prepared after its finish; two barriers a tile. A lane keeps YS steps of
// y in registers before it stores them (see scan_tile).
//
// Steps past L get dt = 0, dt u = 0 and B = C = 0: the identity (a = 1,
// b = 0), so the scan needs no bounds. States n >= N (N < 4 G) get A = 0
// and B = C = 0 and never leave 0. The host checks that the 32 rows of a
// block share a batch and a group (dim and dim / groups multiples of 32)
// and that B and C vary.
//
// Shared-memory layouts, each chosen so that no access conflicts (a 16-byte
// access runs a quarter-warp at a time, 8 lanes on 32 banks; ncu counted no
// bank conflict):
//   steps[row][pos]: 16-byte chunks k = steps 2k, 2k + 1 at chunk position
//     k ^ ((k >> 3) & 1) of a row of 68 floats. The scan's quarter reads 8
//     rows at one chunk (68 / 4 odd: distinct banks); phase 1's quarter
//     writes one row's chunks 2q or 2q + 1, q = 0..7 (the swizzle spreads
//     them over all 8 bank groups).
//   bc[step][pos]: 8 G floats a step, the 16-byte chunk c = 2 g (B of warp
//     g's states) or 2 g + 1 (C) at position c ^ ((step >> 2) & (2 G - 1)):
//     phase 1 writes 4 states x 8 step-quads per warp instruction, and the
//     swizzle puts the quads on distinct bank groups.
//   partial[g][row][step]: rows of 36 floats (the scan's quarter writes 8
//     rows at one step quad; phase 3's reads one row's 128 bytes).
//
// Measured and dropped (bench/gpu-h200-results.md, fourteenth session):
// 2 states a warp (8 warps: 46% more shared-memory traffic, 0.45 ms against
// 0.41), two buffers of each array and one barrier a tile (no faster, and
// it spills under the 3-block register bound), and a quarter or half of
// the exponentials on the FMA pipe by a polynomial (the MIO queue emptied,
// but the extra instructions cost more: 0.48 and 0.59 ms). Eighteenth
// session (commit 4ea1ecf holds both): specialised warps (4 scanning warps
// running phase 2 only, 4 producer warps running phases 1 and 3 for the
// tiles before and after, two sets of buffers handed over by named
// barriers; 6 warps a scheduler, 80 registers) 0.416-0.430 ms against
// 0.385-0.395 in the same calls: shared-memory wavefronts +15% (the kept
// D u and gates), ncu 496-499 us against 482; and blocks started 0.7 or
// 1.5 us apart per SM slot (so that the three blocks of an SM are in
// different phases), no change. ncu of this kernel (H200, 8/11's shape):
// the exponential pipe 69-71% busy on the SMs holding three blocks, shared
// memory 58% of its wavefronts, issue 58%, 2.6 warps a scheduler; the
// stalls per issue: wait 0.80, short scoreboard 0.78, MIO throttle 0.62.
// Then y summed over the warp's 4 states as two pairs plus an add (three
// dependent instructions instead of four, one more in all; 161 registers):
// 0.397-0.403 ms against 0.389-0.394 for the chain below, alternating in
// one call. Not kept.

namespace scan {

// The float offset in a tile's `bc` ([step][BC_STRIDE floats]: B of warp
// g's 4 states in 16-byte chunk 2 g, C in 2 g + 1) of float i of `step`, its
// chunk swizzled by the step's quad.
template <int BC_STRIDE>
__device__ __forceinline__ int ssm_bc_at(int step, int i) {
    return step * BC_STRIDE + 4 * ((i / 4) ^ ((step >> 2) & (BC_STRIDE / 4 - 1))) + i % 4;
}

// The block's dynamic shared memory as a `Shared` (and `beyond` bytes after
// it); traps if the launch gave less (the host passes the size; a smaller
// launch must not corrupt).
template <typename Shared>
__device__ __forceinline__ Shared& ssm_dynamic_shared(unsigned beyond = 0) {
#ifndef SCAN_HOST_EMULATION
    extern __shared__ __align__(16) unsigned char ssm_dynamic[];
    unsigned dynamic_bytes;
    asm("mov.u32 %0, %%dynamic_smem_size;" : "=r"(dynamic_bytes));
    if (dynamic_bytes < sizeof(Shared) + beyond) __trap();
    return *reinterpret_cast<Shared*>(ssm_dynamic);
#else
    return *static_cast<Shared*>(scan_emulator::dynamic_shared(sizeof(Shared) + beyond));
#endif
}

template <int G>
struct SsmTiles {
    static_assert(G == 2 || G == 4, "N up to 8 or 16, four states a warp");
    static constexpr int ROWS = 32;
    static constexpr int T = 32;                    // steps per tile
    static constexpr int THREADS = 32 * G;
    static constexpr int STATES = 4 * G;
    static constexpr int UNITS = ROWS * T / 4 / THREADS;  // (row, 4 steps) units per thread
    static constexpr int STEPS_STRIDE = 2 * T + 4;  // floats per row of `steps`
    static constexpr int BC_STRIDE = 2 * STATES;    // floats per step of `bc`: warp g's B, then C
    static constexpr int PARTIAL_STRIDE = T + 4;    // floats per row of `partial`

    struct Shared {
        float steps[ROWS * STEPS_STRIDE];
        float bc[T * BC_STRIDE];
        float partial[G * ROWS * PARTIAL_STRIDE];
    };

    // The float offset in a row of `steps` of the chunk holding step 2 k.
    static __device__ __forceinline__ int steps_chunk(int k) { return 4 * (k ^ ((k >> 3) & 1)); }
    // The float offset in `bc` of float i (of BC_STRIDE) of `step`: its
    // 16-byte chunk swizzled by the step's quad.
    static __device__ __forceinline__ int bc_at(int step, int i) { return ssm_bc_at<BC_STRIDE>(step, i); }
};

// 4 floats at p + t (t < len checked per float when !FAST; zeros past it).
template <bool FAST>
__device__ __forceinline__ float4 ssm_tile_load(const float* p, u64 t, u64 len) {
    if constexpr (FAST) {
        return *reinterpret_cast<const float4*>(p + t);
    } else {
        float v[4];
#pragma unroll
        for (int j = 0; j < 4; ++j) v[j] = t + j < len ? p[t + j] : 0.0f;
        return make_float4(v[0], v[1], v[2], v[3]);
    }
}

// Steps between two checkpoints of the states (CK below).
constexpr int SSM_CHECK = 8;

// The forward by tiles. OUT: the output (and the last state, if asked).
// CK: the states before every SSM_CHECK steps go to `checkpoints`, [block]
// [check][state 4 g + k][lane] (rows x ceil(L / SSM_CHECK) x 4 G floats;
// states past N stay 0) for the backward (selective_backward_tiles.cuh).
// Without OUT (the backward's own checkpoint kernel) C, z and y are never
// read or made (the host passes no D, z or output); with both, the
// training forward saves its checkpoints as it goes, and the backward
// skips that kernel.
template <int G, int YS, bool OUT, bool CK>
__device__ __forceinline__ void ssm_tiles_forward(const float* u, const float* delta, const float* A, SsmProjection B,
                                                  SsmProjection C, const float* D, const float* z,
                                                  const float* delta_bias, const float* x0, float* out, float* last,
                                                  float* checkpoints, u64 dim, u64 len, u64 state, bool softplus) {
    typedef SsmTiles<G> Tiles;
    constexpr int ROWS = Tiles::ROWS, T = Tiles::T, UNITS = Tiles::UNITS, THREADS = Tiles::THREADS;
    constexpr int STATES = Tiles::STATES;
    static_assert(YS % 4 == 0 && T % YS == 0, "runs of whole quads in a tile");
    static_assert(T % SSM_CHECK == 0, "checkpoints inside tiles");
    const u64 checks = (len + SSM_CHECK - 1) / SSM_CHECK;
    float* my_checks = CK ? checkpoints + ((u64)blockIdx.x * checks * STATES + 4 * warp_id()) * ROWS + lane_id() : nullptr;
    // Dynamic shared memory (the host opts in past 48 KiB where a shape
    // needs it); the host passes sizeof(Shared), which a smaller launch
    // must not corrupt.
    typename Tiles::Shared& sh = ssm_dynamic_shared<typename Tiles::Shared>();

    const u64 row0 = (u64)blockIdx.x * ROWS;
    const u64 b = row0 / dim, d0 = row0 % dim;
    const unsigned tid = threadIdx.x, lane = lane_id(), g = warp_id();

    // Phase 2's own: lane `lane` is row row0 + lane, states 4 g + k.
    float h[4], a2[4];
#pragma unroll
    for (int k = 0; k < 4; ++k) {
        const u64 n = 4 * (u64)g + k;
        const bool live = n < state;
        a2[k] = live ? A[(d0 + lane) * state + n] * SSM_LOG2E : 0.0f;
        h[k] = live && x0 != nullptr ? x0[(row0 + lane) * state + n] : 0.0f;
    }

    // Phases 1 and 3's units: unit p of this thread is row (tid + p
    // THREADS) / 8, steps 4 unit_quad .. 4 unit_quad + 3 of the tile (a
    // quarter-warp covers one row's 32 steps: one 128-byte line per load).
    // Their offsets, computed once: the row's first step in u, delta, z and
    // out; the row's chunks in `steps`, its 16 bytes in `partial`.
    const unsigned unit_quad = tid % 8;
    u64 unit_at[UNITS];
    int steps_at[UNITS][2], partial_at[UNITS];
    float skip[UNITS], bias[UNITS];
#pragma unroll
    for (int p = 0; p < UNITS; ++p) {
        const unsigned unit_row = (tid + p * THREADS) / 8;
        unit_at[p] = (row0 + unit_row) * len;
        steps_at[p][0] = unit_row * Tiles::STEPS_STRIDE + Tiles::steps_chunk(2 * unit_quad);
        steps_at[p][1] = unit_row * Tiles::STEPS_STRIDE + Tiles::steps_chunk(2 * unit_quad + 1);
        partial_at[p] = unit_row * Tiles::PARTIAL_STRIDE + 4 * unit_quad;
        const u64 d = d0 + unit_row;
        skip[p] = D != nullptr ? D[d] : 0.0f;
        bias[p] = delta_bias != nullptr ? delta_bias[d] : 0.0f;
    }
    // B and C: unit i of this thread is steps 4 unit_quad .. of state tid /
    // 8 of B (i = 0) or of C (i = 1); states past N read state 0 and are
    // zeroed.
    const unsigned bc_state = tid / 8;
    const bool bc_live = bc_state < state;
    const float* bc_rows[2] = {B.row(b, d0, dim, bc_live ? bc_state : 0, state, len),
                               C.row(b, d0, dim, bc_live ? bc_state : 0, state, len)};
    int bc_at[2];  // the unit's float in its first step of `bc` (the next are BC_STRIDE apart)
#pragma unroll
    for (int i = 0; i < 2; ++i) bc_at[i] = Tiles::bc_at(4 * unit_quad, 8 * (bc_state / 4) + 4 * i + bc_state % 4);
    static_assert(THREADS / 8 == STATES, "a state per 8 threads");

    const bool aligned = len % 4 == 0 && ssm_aligned(u) && ssm_aligned(delta) && ssm_aligned(out) &&
                         (z == nullptr || ssm_aligned(z)) && ssm_aligned(B.data) && ssm_aligned(C.data);

    // Registers between phases: the raw inputs of the next tile, and D u
    // and silu(z) of the tile being scanned.
    float4 raw_u[UNITS], raw_delta[UNITS], raw_z[UNITS], raw_bc[2];
    float4 kept_du[UNITS], kept_gate[UNITS];

    auto load = [&](const bool FAST, const u64 t0) {
        const u64 t = t0 + 4 * unit_quad;
#pragma unroll
        for (int p = 0; p < UNITS; ++p) {
            const u64 at = unit_at[p];
            if (FAST) {
                raw_u[p] = ssm_tile_load<true>(u + at, t, len);
                raw_delta[p] = ssm_tile_load<true>(delta + at, t, len);
                if (OUT && z != nullptr) raw_z[p] = ssm_tile_load<true>(z + at, t, len);
            } else {
                raw_u[p] = ssm_tile_load<false>(u + at, t, len);
                raw_delta[p] = ssm_tile_load<false>(delta + at, t, len);
                if (OUT && z != nullptr) raw_z[p] = ssm_tile_load<false>(z + at, t, len);
            }
        }
#pragma unroll
        for (int i = 0; i < (OUT ? 2 : 1); ++i) {
            raw_bc[i] = FAST ? ssm_tile_load<true>(bc_rows[i], t, len) : ssm_tile_load<false>(bc_rows[i], t, len);
        }
    };

    auto prepare = [&](const bool FAST, const u64 t0) {
        const u64 t = t0 + 4 * unit_quad;
#pragma unroll
        for (int p = 0; p < UNITS; ++p) {
            const float uu[4] = {raw_u[p].x, raw_u[p].y, raw_u[p].z, raw_u[p].w};
            const float dd[4] = {raw_delta[p].x, raw_delta[p].y, raw_delta[p].z, raw_delta[p].w};
            float dt[4], dtu[4], du[4], gate[4];
#pragma unroll
            for (int j = 0; j < 4; ++j) {
                float v = dd[j] + bias[p];
                if (softplus) v = ssm_softplus(v);
                if (!FAST && t + j >= len) v = 0.0f;  // past the end: the identity
                dt[j] = v;
                dtu[j] = v * uu[j];
                du[j] = skip[p] * uu[j];
                gate[j] = 1.0f;
            }
            if (OUT && z != nullptr) {
                const float zz[4] = {raw_z[p].x, raw_z[p].y, raw_z[p].z, raw_z[p].w};
#pragma unroll
                for (int j = 0; j < 4; ++j) gate[j] = ssm_silu(zz[j]);
            }
            kept_du[p] = make_float4(du[0], du[1], du[2], du[3]);
            kept_gate[p] = make_float4(gate[0], gate[1], gate[2], gate[3]);
            *reinterpret_cast<float4*>(sh.steps + steps_at[p][0]) = make_float4(dt[0], dtu[0], dt[1], dtu[1]);
            *reinterpret_cast<float4*>(sh.steps + steps_at[p][1]) = make_float4(dt[2], dtu[2], dt[3], dtu[3]);
        }
        // B and C, transposed; steps 4 unit_quad + j share their quad,
        // hence their swizzle.
#pragma unroll
        for (int i = 0; i < (OUT ? 2 : 1); ++i) {
            const float v[4] = {raw_bc[i].x, raw_bc[i].y, raw_bc[i].z, raw_bc[i].w};
#pragma unroll
            for (int j = 0; j < 4; ++j) sh.bc[bc_at[i] + j * Tiles::BC_STRIDE] = bc_live ? v[j] : 0.0f;
        }
    };

    auto scan_tile = [&](const u64 tile) {
        const float* my_steps = sh.steps + lane * Tiles::STEPS_STRIDE;
        float* my_partial = sh.partial + (g * ROWS + lane) * Tiles::PARTIAL_STRIDE;
        // y in registers over YS steps, then stored: a store among the steps
        // keeps the compiler from loading the next steps' B, C, dt and dt u
        // before it (it cannot tell the arrays apart), so each run of YS
        // steps starts with a shared-memory round trip; longer runs cost
        // registers (the whole tile took 196: two blocks per SM).
        float y[T];
#pragma unroll
        for (int q = 0; q < T / 4; ++q) {
            const float4 s01 = *reinterpret_cast<const float4*>(my_steps + Tiles::steps_chunk(2 * q));
            const float4 s23 = *reinterpret_cast<const float4*>(my_steps + Tiles::steps_chunk(2 * q + 1));
            const float dt[4] = {s01.x, s01.z, s23.x, s23.z};
            const float dtu[4] = {s01.y, s01.w, s23.y, s23.w};
#pragma unroll
            for (int j = 0; j < 4; ++j) {
                const int step = 4 * q + j;
                if constexpr (CK) {
                    // A streaming store (the backward reads it back much
                    // later), which the compiler may move past shared loads.
                    const u64 check = (tile * T + step) / SSM_CHECK;
                    if (step % SSM_CHECK == 0 && check < checks) {
#pragma unroll
                        for (int k = 0; k < 4; ++k) __stcs(my_checks + (check * STATES + k) * ROWS, h[k]);
                    }
                }
                // This warp's B and C of the step: one 16-byte chunk each.
                const float4 bb = *reinterpret_cast<const float4*>(sh.bc + Tiles::bc_at(step, 8 * g));
                const float4 cc = !OUT ? bb : *reinterpret_cast<const float4*>(sh.bc + Tiles::bc_at(step, 8 * g + 4));
                const float bv[4] = {bb.x, bb.y, bb.z, bb.w};
                const float cv[4] = {cc.x, cc.y, cc.z, cc.w};
                float acc = 0.0f;
#pragma unroll
                for (int k = 0; k < 4; ++k) {
                    h[k] = fmaf(ssm_exp2(dt[j] * a2[k]), h[k], dtu[j] * bv[k]);
                    acc = fmaf(cv[k], h[k], acc);
                }
                y[step] = acc;
            }
            if (OUT && (4 * q + 4) % YS == 0) {
#pragma unroll
                for (int r = 4 * q + 4 - YS; r < 4 * q + 4; r += 4) {
                    *reinterpret_cast<float4*>(my_partial + r) = make_float4(y[r], y[r + 1], y[r + 2], y[r + 3]);
                }
            }
        }
    };

    auto finish = [&](const bool FAST, const u64 t0) {
        const u64 t = t0 + 4 * unit_quad;
#pragma unroll
        for (int p = 0; p < UNITS; ++p) {
            float4 y = kept_du[p];
#pragma unroll
            for (int w = 0; w < G; ++w) {
                const float4 s =
                    *reinterpret_cast<const float4*>(sh.partial + w * ROWS * Tiles::PARTIAL_STRIDE + partial_at[p]);
                y.x += s.x, y.y += s.y, y.z += s.z, y.w += s.w;
            }
            const float4 gate = kept_gate[p];
            const float o[4] = {y.x * gate.x, y.y * gate.y, y.z * gate.z, y.w * gate.w};
            float* dst = out + unit_at[p];
            if (FAST) {
                *reinterpret_cast<float4*>(dst + t) = make_float4(o[0], o[1], o[2], o[3]);
            } else {
#pragma unroll
                for (int j = 0; j < 4; ++j)
                    if (t + j < len) dst[t + j] = o[j];
            }
        }
    };

    // Tile i is whole (FAST: vector loads, no bounds) when the rows are
    // aligned and it ends inside them.
    const u64 tiles = (len + T - 1) / T;
    auto whole = [&](u64 i) { return aligned && (i + 1) * T <= len; };
    auto load_tile = [&](u64 i) {
        if (whole(i)) {
            load(true, i * T);
        } else {
            load(false, i * T);
        }
    };
    auto prepare_tile = [&](u64 i) {
        if (whole(i)) {
            prepare(true, i * T);
        } else {
            prepare(false, i * T);
        }
    };
    load_tile(0);
    prepare_tile(0);
    if (tiles > 1) load_tile(1);
    __syncthreads();
    for (u64 i = 0; i < tiles; ++i) {
        scan_tile(i);
        __syncthreads();
        if constexpr (OUT) {
            if (whole(i)) {
                finish(true, i * T);
            } else {
                finish(false, i * T);
            }
        }
        if (i + 1 < tiles) prepare_tile(i + 1);
        if (i + 2 < tiles) load_tile(i + 2);
        __syncthreads();
    }
    if (OUT && last != nullptr) {
#pragma unroll
        for (int k = 0; k < 4; ++k) {
            const u64 n = 4 * (u64)g + k;
            if (n < state) last[(row0 + lane) * state + n] = h[k];
        }
    }
}

template <int G, int YS>
__device__ __forceinline__ void selective_scan_tiles(const float* u, const float* delta, const float* A,
                                                     SsmProjection B, SsmProjection C, const float* D, const float* z,
                                                     const float* delta_bias, const float* x0, float* out, float* last,
                                                     u64 batch, u64 dim, u64 len, u64 state, bool softplus) {
    ssm_tiles_forward<G, YS, true, false>(u, delta, A, B, C, D, z, delta_bias, x0, out, last, nullptr, dim, len, state,
                                    softplus);
}

}  // namespace scan
