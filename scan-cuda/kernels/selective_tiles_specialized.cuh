// The selective scan by tiles with specialised warps: the tile kernel of
// selective_tiles.cuh (32 channels per block, warp g of the scanning warps
// runs states 4 g .. 4 g + 3 of all 32 rows, lane r row r; steps in tiles of
// 32 through shared memory), with its phases split between two kinds of
// warps instead of run by every warp in turn:
//   - 4 scanning warps (warps 0-3: 16 states) run phase 2 only: the
//     recurrences and the partial sums of y;
//   - 4 producer warps (warps 4-7) run phases 1 and 3: the loads, softplus,
//     silu, the transposes of B and C, the sums of the partials, the gate
//     and the stores.
// Why: at 8/11's shape the grid is 384 blocks, about 3 per SM, so the tile
// kernel runs 3 warps per scheduler and is latency-bound (ncu: issue 56-61%,
// the special-function pipe 63-66% busy, stalls on short scoreboards and on
// the barriers between phases); the exponentials of phase 1 (softplus,
// silu) and of phase 2 (16 per row and step) share that pipe. Here a tile's
// phases 1 and 3 run while the scanning warps scan the next tile, and each
// scheduler holds 6 warps.
//
// Buffers come in two sets (tile i uses set i % 2), handed over by named
// barriers, each with all 256 threads (one side arrives, the other waits):
//   FULL[s] (ids 1, 2): the producers filled set s (steps, B and C, kept D u
//     and gates) for a tile; the scanners wait on it before scanning;
//   DONE[s] (ids 3, 4): the scanners finished the tile of set s (its steps
//     and B/C are free, its partial sums written); the producers wait on it
//     before the finish, then refill the set for tile i + 2.
// A side only arrives at a barrier again after waiting on the other, so no
// barrier is arrived at twice in one phase. Producer order per tile i: wait
// DONE[i % 2], finish tile i, prepare tile i + 2 into the same set, arrive
// FULL[i % 2], load tile i + 3 into registers.
//
// Shared memory per set: steps and bc as in SsmTiles<4>; partial[g][row]
// [step] in rows of 32 floats with the 16-byte chunk q of row r at q ^ (r %
// 8) (the scanners' quarter-warp writes 8 rows at one quad, the finish's
// reads one row's 8 quads: no conflict either way); kept D u and gates
// [row][step] (a quarter-warp covers one row's 128 bytes). 74752 bytes for
// both sets: three blocks per SM fit in the H200's 228 KiB.

namespace scan {

struct SsmTilesSpecialized {
    typedef SsmTiles<4> Tiles;
    static constexpr int G = 4;  // scanning warps
    static constexpr int ROWS = Tiles::ROWS, T = Tiles::T, STATES = Tiles::STATES;
    static constexpr int SCANNERS = 32 * G;
    static constexpr int PRODUCERS = 128;
    static constexpr int THREADS = SCANNERS + PRODUCERS;
    static constexpr int UNITS = ROWS * T / 4 / PRODUCERS;  // (row, 4 steps) units per producer thread
    static constexpr int ROW_FLOATS = T;                    // floats per row of `partial`, `du` and `gate`

    struct Set {
        float steps[ROWS * Tiles::STEPS_STRIDE];
        float bc[T * Tiles::BC_STRIDE];
        float partial[G * ROWS * ROW_FLOATS];
        float du[ROWS * ROW_FLOATS];
        float gate[ROWS * ROW_FLOATS];
    };
    struct Shared {
        Set set[2];
    };

    // The float offset in a row of `partial` of the chunk of steps 4 q .. 4 q + 3.
    static __device__ __forceinline__ int partial_chunk(int row, int q) { return 4 * (q ^ (row % 8)); }
};

__device__ __forceinline__ void ssm_named_sync(unsigned id, unsigned threads) {
    asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}
__device__ __forceinline__ void ssm_named_arrive(unsigned id, unsigned threads) {
    asm volatile("bar.arrive %0, %1;" ::"r"(id), "r"(threads) : "memory");
}

template <int YS>
__device__ __forceinline__ void selective_scan_tiles_specialized(const float* u, const float* delta, const float* A,
                                                                 SsmProjection B, SsmProjection C, const float* D,
                                                                 const float* z, const float* delta_bias,
                                                                 const float* x0, float* out, float* last, u64 batch,
                                                                 u64 dim, u64 len, u64 state, bool softplus) {
    typedef SsmTilesSpecialized S;
    typedef S::Tiles Tiles;
    constexpr int ROWS = S::ROWS, T = S::T, UNITS = S::UNITS, THREADS = S::THREADS;
    constexpr unsigned FULL = 1, DONE = 3;
    static_assert(YS % 4 == 0 && T % YS == 0, "runs of whole quads in a tile");
    static_assert(S::PRODUCERS / 8 == S::STATES, "a state per 8 producer threads");
    typename S::Shared& sh = ssm_dynamic_shared<typename S::Shared>();

    const u64 row0 = (u64)blockIdx.x * ROWS;
    const u64 b = row0 / dim, d0 = row0 % dim;
    const unsigned lane = lane_id(), warp = warp_id();
    const u64 tiles = (len + T - 1) / T;
    const bool aligned = len % 4 == 0 && ssm_aligned(u) && ssm_aligned(delta) && ssm_aligned(out) &&
                         (z == nullptr || ssm_aligned(z)) && ssm_aligned(B.data) && ssm_aligned(C.data);
    // Tile i is whole (vector loads, no bounds) when the rows are aligned
    // and it ends inside them.
    auto whole = [&](u64 i) { return aligned && (i + 1) * T <= len; };

    if (warp < S::G) {
        // A scanning warp: lane `lane` is row row0 + lane, states 4 g + k.
        const unsigned g = warp;
        float h[4], a2[4];
#pragma unroll
        for (int k = 0; k < 4; ++k) {
            const u64 n = 4 * (u64)g + k;
            const bool live = n < state;
            a2[k] = live ? A[(d0 + lane) * state + n] * SSM_LOG2E : 0.0f;
            h[k] = live && x0 != nullptr ? x0[(row0 + lane) * state + n] : 0.0f;
        }
        for (u64 i = 0; i < tiles; ++i) {
            const unsigned s = i % 2;
            ssm_named_sync(FULL + s, THREADS);
            const typename S::Set& set = sh.set[s];
            const float* my_steps = set.steps + lane * Tiles::STEPS_STRIDE;
            float* my_partial = sh.set[s].partial + (g * ROWS + lane) * S::ROW_FLOATS;
            // y over YS steps in registers, then stored (as in
            // selective_tiles.cuh's scan_tile).
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
                    const float4 bb = *reinterpret_cast<const float4*>(set.bc + Tiles::bc_at(step, 8 * g));
                    const float4 cc = *reinterpret_cast<const float4*>(set.bc + Tiles::bc_at(step, 8 * g + 4));
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
                if ((4 * q + 4) % YS == 0) {
#pragma unroll
                    for (int r = 4 * q + 4 - YS; r < 4 * q + 4; r += 4) {
                        *reinterpret_cast<float4*>(my_partial + S::partial_chunk(lane, r / 4)) =
                            make_float4(y[r], y[r + 1], y[r + 2], y[r + 3]);
                    }
                }
            }
            ssm_named_arrive(DONE + s, THREADS);
        }
        if (last != nullptr) {
#pragma unroll
            for (int k = 0; k < 4; ++k) {
                const u64 n = 4 * (u64)g + k;
                if (n < state) last[(row0 + lane) * state + n] = h[k];
            }
        }
        return;
    }

    // A producer: unit p of this thread is row (tid + p PRODUCERS) / 8,
    // steps 4 unit_quad .. 4 unit_quad + 3 of the tile (a quarter-warp
    // covers one row's 32 steps: one 128-byte line per load).
    const unsigned tid = threadIdx.x - S::SCANNERS;
    const unsigned unit_quad = tid % 8;
    u64 unit_at[UNITS];
    int unit_row[UNITS];
    float skip[UNITS], bias[UNITS];
#pragma unroll
    for (int p = 0; p < UNITS; ++p) {
        unit_row[p] = (tid + p * S::PRODUCERS) / 8;
        unit_at[p] = (row0 + unit_row[p]) * len;
        const u64 d = d0 + unit_row[p];
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

    // The raw inputs of the next tile to prepare.
    float4 raw_u[UNITS], raw_delta[UNITS], raw_z[UNITS], raw_bc[2];

    auto load = [&](const bool FAST, const u64 t0) {
        const u64 t = t0 + 4 * unit_quad;
#pragma unroll
        for (int p = 0; p < UNITS; ++p) {
            const u64 at = unit_at[p];
            if (FAST) {
                raw_u[p] = ssm_tile_load<true>(u + at, t, len);
                raw_delta[p] = ssm_tile_load<true>(delta + at, t, len);
                if (z != nullptr) raw_z[p] = ssm_tile_load<true>(z + at, t, len);
            } else {
                raw_u[p] = ssm_tile_load<false>(u + at, t, len);
                raw_delta[p] = ssm_tile_load<false>(delta + at, t, len);
                if (z != nullptr) raw_z[p] = ssm_tile_load<false>(z + at, t, len);
            }
        }
#pragma unroll
        for (int i = 0; i < 2; ++i) {
            raw_bc[i] = FAST ? ssm_tile_load<true>(bc_rows[i], t, len) : ssm_tile_load<false>(bc_rows[i], t, len);
        }
    };

    auto prepare = [&](const bool FAST, const u64 t0, typename S::Set& set) {
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
            if (z != nullptr) {
                const float zz[4] = {raw_z[p].x, raw_z[p].y, raw_z[p].z, raw_z[p].w};
#pragma unroll
                for (int j = 0; j < 4; ++j) gate[j] = ssm_silu(zz[j]);
            }
            const int row = unit_row[p];
            float* steps = set.steps + row * Tiles::STEPS_STRIDE;
            *reinterpret_cast<float4*>(steps + Tiles::steps_chunk(2 * unit_quad)) =
                make_float4(dt[0], dtu[0], dt[1], dtu[1]);
            *reinterpret_cast<float4*>(steps + Tiles::steps_chunk(2 * unit_quad + 1)) =
                make_float4(dt[2], dtu[2], dt[3], dtu[3]);
            *reinterpret_cast<float4*>(set.du + row * S::ROW_FLOATS + 4 * unit_quad) =
                make_float4(du[0], du[1], du[2], du[3]);
            *reinterpret_cast<float4*>(set.gate + row * S::ROW_FLOATS + 4 * unit_quad) =
                make_float4(gate[0], gate[1], gate[2], gate[3]);
        }
        // B and C, transposed; steps 4 unit_quad + j share their quad,
        // hence their swizzle.
#pragma unroll
        for (int i = 0; i < 2; ++i) {
            const float v[4] = {raw_bc[i].x, raw_bc[i].y, raw_bc[i].z, raw_bc[i].w};
#pragma unroll
            for (int j = 0; j < 4; ++j) set.bc[bc_at[i] + j * Tiles::BC_STRIDE] = bc_live ? v[j] : 0.0f;
        }
    };

    auto finish = [&](const bool FAST, const u64 t0, const typename S::Set& set) {
        const u64 t = t0 + 4 * unit_quad;
#pragma unroll
        for (int p = 0; p < UNITS; ++p) {
            const int row = unit_row[p];
            float4 y = *reinterpret_cast<const float4*>(set.du + row * S::ROW_FLOATS + 4 * unit_quad);
#pragma unroll
            for (int w = 0; w < S::G; ++w) {
                const float4 s = *reinterpret_cast<const float4*>(set.partial + (w * ROWS + row) * S::ROW_FLOATS +
                                                                  S::partial_chunk(row, unit_quad));
                y.x += s.x, y.y += s.y, y.z += s.z, y.w += s.w;
            }
            const float4 gate = *reinterpret_cast<const float4*>(set.gate + row * S::ROW_FLOATS + 4 * unit_quad);
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

    auto load_tile = [&](u64 i) {
        if (whole(i)) {
            load(true, i * T);
        } else {
            load(false, i * T);
        }
    };
    auto prepare_tile = [&](u64 i) {
        typename S::Set& set = sh.set[i % 2];
        if (whole(i)) {
            prepare(true, i * T, set);
        } else {
            prepare(false, i * T, set);
        }
    };
    // Sets 0 and 1 filled for tiles 0 and 1, tile 2 in registers.
    for (u64 i = 0; i < 2 && i < tiles; ++i) {
        load_tile(i);
        prepare_tile(i);
        ssm_named_arrive(FULL + i, THREADS);
    }
    if (tiles > 2) load_tile(2);
    for (u64 i = 0; i < tiles; ++i) {
        const unsigned s = i % 2;
        ssm_named_sync(DONE + s, THREADS);
        if (whole(i)) {
            finish(true, i * T, sh.set[s]);
        } else {
            finish(false, i * T, sh.set[s]);
        }
        if (i + 2 < tiles) {
            prepare_tile(i + 2);
            ssm_named_arrive(FULL + s, THREADS);
            if (i + 3 < tiles) load_tile(i + 3);
        }
    }
}

}  // namespace scan
