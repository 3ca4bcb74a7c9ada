// The tile backward's checkpoint kernel with two states a warp: the states
// before every SSM_CHECK steps, in the layout and with the bits of
// ssm_tiles_forward<G, 4, false, true> (selective_tiles.cuh), from twice
// its warps.
//
// Why: that kernel runs a warp per 4 states of 32 channels, so 8/11's shape
// (8 x 1536 channels, N 16) is 384 blocks of 4 warps, 2.9 a SM, 12 warps a
// SM at 80 registers: its latency is not hidden (ncu, H200: issue 52%,
// 2.06 TB/s against a 4.2 TB/s copy). Each state's recurrence is its own,
// so spreading the states thinner changes no bit: here a block of 32
// channels has 2 G warps, warp w running states 2 w and 2 w + 1, and the
// same shape is 24 warps a SM. (The forward proper cannot do this: its y
// sums over the states, which a block of 4-state warps adds in shared
// memory; 2 states a warp cost it 46% more shared-memory traffic, slower at
// the same occupancy.)
//
// A tile of T = 32 steps, two barriers a tile, the next tile's inputs
// loaded during the scan (as the forward's tile kernel):
//   1. prepare (every thread, (row, 4 steps) units): dt = softplus(delta +
//      bias) and dt u into `steps` (a float2 per (row, step)); B of the
//      tile's states into `b`, transposed to [step][state];
//   2. scan (warp w, lane r = row): h_n = exp(dt A_n) h_n + dt u B_n, the
//      forward's expression, for n = 2 w, 2 w + 1; before every SSM_CHECK
//      steps, h to `checkpoints` ([block][check][state][lane], as the
//      forward writes it).
// Steps past L get dt = 0 and dt u = 0 (the identity); states past N get A
// = 0, B = 0 and no x0, and stay 0, as the forward's do.

namespace scan {

template <int G>
struct SsmCheckpointPairs {
    static_assert(G == 2 || G == 4, "the layout of ssm_tiles_forward<G>: 4 G states");
    static constexpr int ROWS = 32;
    static constexpr int T = 32;                           // steps per tile
    static constexpr int WARPS = 2 * G;                    // two states a warp
    static constexpr int THREADS = 32 * WARPS;
    static constexpr int STATES = 4 * G;                   // the checkpoints' states per block
    static constexpr int UNITS = ROWS * T / 4 / THREADS;   // (row, 4 steps) units per thread
    static constexpr int B_UNITS = STATES * T / 4;         // (state, 4 steps) units of B
    static constexpr int STEPS_STRIDE = T + 1;             // float2 per row of `steps`
    static constexpr int B_STRIDE = STATES + 2;            // floats per step of `b`
    static_assert(UNITS >= 1 && B_UNITS <= THREADS, "every unit has a thread");

    struct Shared {
        // Lane r reads row r's step t at 33 r + t: a half-warp's 16 lanes
        // on distinct bank pairs (8-byte accesses go a half-warp at a time).
        float2 steps[ROWS * STEPS_STRIDE];
        // B of step t, state n at t B_STRIDE + n: warp w's pair is one
        // broadcast 8-byte load a step; the prepare's stores of 8 step
        // quads land 2 to a bank (without the 2 floats' padding, 8).
        float b[T * B_STRIDE];
    };
    // The size the host gives a block (checkpoint_pairs_shared_bytes in
    // selective_backward_tiles.rs; the kernel traps on less).
    static_assert(sizeof(Shared) == 8 * ROWS * (T + 1) + 4 * T * (4 * G + 2), "the host's shared-memory size");
};

template <int G>
__device__ __forceinline__ void selective_checkpoint_pairs(const float* u, const float* delta, const float* A,
                                                           SsmProjection B, const float* delta_bias, const float* x0,
                                                           float* checkpoints, u64 dim, u64 len, u64 state,
                                                           bool softplus) {
    typedef SsmCheckpointPairs<G> Pairs;
    constexpr int ROWS = Pairs::ROWS, T = Pairs::T, UNITS = Pairs::UNITS, THREADS = Pairs::THREADS;
    constexpr int STATES = Pairs::STATES;
    typename Pairs::Shared& sh = ssm_dynamic_shared<typename Pairs::Shared>();

    const u64 row0 = (u64)blockIdx.x * ROWS;
    const u64 b = row0 / dim, d0 = row0 % dim;
    const unsigned tid = threadIdx.x, lane = lane_id(), w = warp_id();
    const u64 checks = (len + SSM_CHECK - 1) / SSM_CHECK;
    // State n = 2 w + k of row row0 + lane: the forward's a2 and start.
    float* my_checks = checkpoints + ((u64)blockIdx.x * checks * STATES + 2 * w) * ROWS + lane;
    float h[2], a2[2];
#pragma unroll
    for (int k = 0; k < 2; ++k) {
        const u64 n = 2 * (u64)w + k;
        const bool live = n < state;
        a2[k] = live ? A[(d0 + lane) * state + n] * SSM_LOG2E : 0.0f;
        h[k] = live && x0 != nullptr ? x0[(row0 + lane) * state + n] : 0.0f;
    }

    // The prepare's units: unit p is row (tid + p THREADS) / 8, steps 4
    // unit_quad .. 4 unit_quad + 3 of the tile (a quarter-warp reads one
    // row's 128 bytes).
    const unsigned unit_quad = tid % 8;
    u64 unit_at[UNITS];
    int steps_at[UNITS];
    float bias[UNITS];
#pragma unroll
    for (int p = 0; p < UNITS; ++p) {
        const unsigned unit_row = (tid + p * THREADS) / 8;
        unit_at[p] = (row0 + unit_row) * len;
        steps_at[p] = unit_row * Pairs::STEPS_STRIDE + 4 * unit_quad;
        bias[p] = delta_bias != nullptr ? delta_bias[d0 + unit_row] : 0.0f;
    }
    // B: thread tid < B_UNITS loads steps 4 unit_quad .. of state tid / 8;
    // states past N read state 0 and are zeroed.
    const bool b_thread = tid < (unsigned)Pairs::B_UNITS;
    const unsigned b_state = tid / 8;
    const bool b_live = b_thread && b_state < state;
    const float* b_row = B.row(b, d0, dim, b_live ? b_state : 0, state, len);

    const bool aligned = len % 4 == 0 && ssm_aligned(u) && ssm_aligned(delta) && ssm_aligned(B.data);
    float4 raw_u[UNITS], raw_delta[UNITS], raw_b = make_float4(0.0f, 0.0f, 0.0f, 0.0f);

    auto load = [&](const bool FAST, const u64 t0) {
        const u64 t = t0 + 4 * unit_quad;
#pragma unroll
        for (int p = 0; p < UNITS; ++p) {
            const float* row_u = u + unit_at[p];
            const float* row_delta = delta + unit_at[p];
            raw_u[p] = FAST ? ssm_tile_load<true>(row_u, t, len) : ssm_tile_load<false>(row_u, t, len);
            raw_delta[p] = FAST ? ssm_tile_load<true>(row_delta, t, len) : ssm_tile_load<false>(row_delta, t, len);
        }
        if (b_thread) raw_b = FAST ? ssm_tile_load<true>(b_row, t, len) : ssm_tile_load<false>(b_row, t, len);
    };

    auto prepare = [&](const bool FAST, const u64 t0) {
        const u64 t = t0 + 4 * unit_quad;
#pragma unroll
        for (int p = 0; p < UNITS; ++p) {
            const float uu[4] = {raw_u[p].x, raw_u[p].y, raw_u[p].z, raw_u[p].w};
            const float dd[4] = {raw_delta[p].x, raw_delta[p].y, raw_delta[p].z, raw_delta[p].w};
#pragma unroll
            for (int j = 0; j < 4; ++j) {
                // The forward's dt and dt u (ssm_tiles_forward's prepare).
                float v = dd[j] + bias[p];
                if (softplus) v = ssm_softplus(v);
                if (!FAST && t + j >= len) v = 0.0f;  // past the end: the identity
                sh.steps[steps_at[p] + j] = make_float2(v, v * uu[j]);
            }
        }
        if (b_thread) {
            const float v[4] = {raw_b.x, raw_b.y, raw_b.z, raw_b.w};
#pragma unroll
            for (int j = 0; j < 4; ++j) sh.b[(4 * unit_quad + j) * Pairs::B_STRIDE + b_state] = b_live ? v[j] : 0.0f;
        }
    };

    auto scan_tile = [&](const u64 tile) {
        const float2* my_steps = sh.steps + lane * Pairs::STEPS_STRIDE;
#pragma unroll
        for (int step = 0; step < T; ++step) {
            const u64 check = (tile * T + step) / SSM_CHECK;
            if (step % SSM_CHECK == 0 && check < checks) {
#pragma unroll
                for (int k = 0; k < 2; ++k) __stcs(my_checks + (check * STATES + k) * ROWS, h[k]);
            }
            const float2 st = my_steps[step];  // dt, dt u
            const float2 bb = *reinterpret_cast<const float2*>(sh.b + step * Pairs::B_STRIDE + 2 * w);
            const float bv[2] = {bb.x, bb.y};
#pragma unroll
            for (int k = 0; k < 2; ++k) h[k] = fmaf(ssm_exp2(st.x * a2[k]), h[k], st.y * bv[k]);
        }
    };

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
        if (i + 1 < tiles) prepare_tile(i + 1);
        if (i + 2 < tiles) load_tile(i + 2);
        __syncthreads();
    }
}

}  // namespace scan
