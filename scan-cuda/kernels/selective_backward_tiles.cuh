// The selective scan's backward by tiles of 32 channels, the layout of the
// forward's tile kernel (selective_tiles.cuh): a block owns 32 consecutive
// channels (rows) of one batch and group of B and C, and G warps; warp g
// runs state indices 4 g .. 4 g + 3 of all 32 rows, lane r the recurrences
// of row r, so B and C are warp-uniform shared loads. Two kernels before the
// partial sums (scan-cuda/src/selective/backward_tiles.rs launches them):
//
//   1. the forward tile kernel in checkpoint mode (ssm_tiles_forward<G, 4,
//      false, true>): the states before every SSM_CHECK = 8 steps, [block]
//      [check][state][lane], and nothing else (no C, z or output); the
//      training forward (selective_forward_saving_tiles, OUT and CK both
//      on) writes the same checkpoints beside the output, and then this
//      launch is skipped;
//   2. selective_backward_tiles, below: the row's tiles of T = 16 steps from
//      the last to the first, the reverse carry G of each (row, state) in
//      the lane's registers all along the row. Per tile, three phases:
//        prepare (a (row, 4 steps) unit per thread at G = 4): dt, dt u,
//          dy = dout silu(z) and u into `steps` (a float4 per (row, step));
//          B and C of the tile's states into `bc`, transposed to [step]
//          [state]; kept for the finish (in `gates`): dz's factor
//          dout silu'(z) and softplus' derivative sigmoid(delta + bias);
//          the lanes' checkpoints of the tile (loaded a tile ahead);
//        scan (warp g, lane r), per sub-run of 8 steps, the last first: the
//          states from the sub-run's checkpoint forward, a_t = exp(dt A)
//          and x_t kept in registers (one exp per (step, state) here, one
//          in the checkpoint kernel), then backward: g_t = C_t dy_t + G,
//          G <- a_t g_t, g a x_{t-1} = G x_{t-1}; the
//          sums over the warp's 4 states of g B (for du and ddt), A g
//          a x_{t-1} (ddt) and C x (y, for dz) into `partial[kind][g]`;
//          dA's dt g a x_{t-1} summed in the lane over the whole row; dB's
//          g dt u and dC's dy x summed over the 32 rows by a warp reduce-
//          scatter (9 shuffles for 8 values; with PIPE spread over five
//          steps, SsmRowSumsPipe), into `sums` (with SHORT: three stages,
//          every lane's sum over 8 rows into `sums4`, the finish adding a
//          value's four as the last two stages would);
//        finish (the prepare's units): du, ddelta and dz of the unit's 4
//          steps from the G partial sums, one coalesced store each; the
//          block's dB and dC of the tile, one partial per (batch, block)
//          ([b][chunk][n][t], chunk = the block's 32 channels), as the
//          gradient kernel of selective_backward.cuh writes them.
//      At the row's start, G is dL/dx0; dA (per (row, state)), dD and
//      d delta_bias (per row) are partials per batch.
//   3. selective_backward_sum_parts (selective_backward.cuh) adds the
//      partials in index order, so that every gradient is bitwise the same
//      from run to run.
//
// Steps past L get dt = 0, dt u = 0, dy = 0 and B = C = 0: a = 1 and no
// input, so G passes through them unchanged; their outputs are not stored.
// The host checks what the forward's tile kernel needs (32 rows a block
// share a batch and a group; B and C vary).

namespace scan {

template <int G, bool ROT, bool NARROW = false>
struct SsmBackTiles {
    static_assert(G == 2 || G == 4, "N up to 8 or 16, four states a warp");
    static constexpr int ROWS = 32;
    static constexpr int T = 16;  // steps per tile
    static constexpr int R = SSM_CHECK;  // steps per sub-run (from a checkpoint)
    static constexpr int THREADS = 32 * G;
    static constexpr int STATES = 4 * G;
    static constexpr int UNITS = ROWS * T / 4 / THREADS;  // (row, 4 steps) units per thread
    static constexpr int STEPS_STRIDE = T + 1;            // float4 per row of `steps`
    static constexpr int BC_STRIDE = 2 * STATES;          // floats per step of `bc` and `sums`
    static constexpr int PARTIAL_STRIDE = T;              // floats per row of `partial`
    static constexpr int NARROW_STRIDE = T + 1;           // float2 / float per row of `steps2` / `dys`
    static_assert(T % R == 0 && R % 4 == 0, "whole sub-runs of whole quads in a tile");
    static_assert(THREADS == 2 * STATES * (T / 4), "a thread per (B or C, state, quad of steps)");

    struct Shared {
        float4 steps[ROWS * STEPS_STRIDE];
        float bc[T * BC_STRIDE];
        // With ROT, the same with each 16-byte chunk's halves swapped (the
        // upper half-warp's state order, ssm_warp_sums8_rotated).
        float bc_rot[ROT ? T * BC_STRIDE : 4];
        float partial[3][G * ROWS * PARTIAL_STRIDE];
        float sums[T * BC_STRIDE];
        // Each thread's units' dz factors and softplus derivatives, from
        // the prepare to the finish ([kind][unit p][thread]; in registers
        // they spilled under the 3-block bound).
        float4 gates[2 * UNITS * THREADS];
    };
    // With NARROW, after `Shared`: each step's (dt, dt u) again as a float2,
    // and dy as a float, in rows of 17. The scan's forward then loads 8
    // bytes a lane (LDS.64: a half-warp's 16 rows on distinct bank pairs, 2
    // wavefronts) instead of `steps`' 16 (4 wavefronts: its stride of 17
    // float4 serves quarter-warps only), and its backward 8 + 4 (3).
    struct Narrow {
        float2 steps2[ROWS * NARROW_STRIDE];
        float dys[ROWS * NARROW_STRIDE];
    };

    // With SHORT, after `Narrow`: the sums over rows of dB's and dC's terms
    // stop after three stages of the reduce-scatter, each lane holding a
    // sum over 8 rows, and all 32 lanes store theirs; the finish adds a
    // value's 4 partial sums as the last two stages did ((p0 + p2) +
    // (p1 + p3): the same bits). Two shuffles and two adds a step fewer for
    // an LDS.128 and 3 adds per 4 steps in the finish.
    static constexpr int SHORT_KIND = 4 * STATES + 16;  // 16 banks apart: a step's store is one wavefront
    static constexpr int SHORT_STRIDE = 2 * SHORT_KIND; // a multiple of 32 floats
    static_assert(SHORT_STRIDE % 32 == 0 && SHORT_KIND % 32 == 16, "the short sums' bank layout");
    struct Short {
        float sums4[T * SHORT_STRIDE];
    };
    // The float offset in `sums4` of partial j (lane & 3) of (kind, state)
    // at step t. The state is XOR-ed with twice the step's quad, within its
    // 8-aligned group, so that the finish's quarter-warp (2 states, 4 quads,
    // one float4 each) reads 8 distinct bank groups; the scan's store of a
    // step (4 states, both kinds, 4 partials) stays on 32 distinct banks.
    static __device__ __forceinline__ int short_at(int t, int kind, int state, int j) {
        return t * SHORT_STRIDE + kind * SHORT_KIND + 4 * (state ^ (2 * (t >> 2))) + j;
    }

    // The float4 of step t in a row of `steps`: the quad q's steps 4 q + j
    // at 2 q + 8 (j & 1) + (j >> 1), so that the prepare's quarter-warp (two
    // rows, four quads, one j) and the scan's (eight rows, one step) both
    // touch 8 distinct bank groups (the row stride, 17, is odd).
    static __device__ __forceinline__ int step_at(int t) {
        const int q = t >> 2, j = t & 3;
        return 2 * q + 8 * (j & 1) + (j >> 1);
    }
    // The float offset in a warp's `partial` of row `row`'s step quad `quad`
    // (4 floats). The scan's quarter-warp writes 8 consecutive rows at one
    // quad, the finish's reads 2 rows (an even one and the next) at all 4:
    // rows of 16 floats with the quads rotated by row / 2 put the first on
    // 8 distinct bank groups (even rows on 0-3, odd ones on 4-7) and the
    // second too. (Rows of 20 floats, unrotated, served the scan's writes
    // but put the finish's reads two to a bank group: 5% slower, H200,
    // 8/11's shape, 1.869-1.891 ms against 1.771-1.794 alternating.)
    static __device__ __forceinline__ int partial_at(int row, int quad) {
        static_assert(T == 16, "four quads a row");
        return row * PARTIAL_STRIDE + 4 * ((quad + (row >> 1)) & 3);
    }
    // The float offset in `bc` of float i (of BC_STRIDE) of `step`, as
    // the forward's: 16-byte chunk 2 g (B of warp g's states) or 2 g + 1
    // (C), swizzled by the step's quad.
    static __device__ __forceinline__ int bc_at(int step, int i) { return ssm_bc_at<BC_STRIDE>(step, i); }
};

// The warp's sums over its 32 lanes of v[0 .. 8): afterwards every lane
// holds the sum of value lane / 4. Each of the first three stages sends
// half the values to the partner lane and keeps the other half; the order
// of the additions depends on the lane only, never on timing.
__device__ __forceinline__ float ssm_warp_sums8(float (&v)[8], unsigned lane) {
#pragma unroll
    for (int half = 4, m = 16; half >= 1; half /= 2, m /= 2) {
        const bool upper = (lane & (unsigned)m) != 0;
#pragma unroll
        for (int j = 0; j < half; ++j) {
            const float send = upper ? v[j] : v[j + half];
            const float keep = upper ? v[j + half] : v[j];
            v[j] = keep + __shfl_xor_sync(0xffffffffu, send, m);
        }
    }
    float s = v[0];
    s += __shfl_xor_sync(0xffffffffu, s, 2);
    s += __shfl_xor_sync(0xffffffffu, s, 1);
    return s;
}

// ssm_warp_sums8_rotated's first three stages: lane l holds the sum over
// the 8 lanes of its l & 3 of the value ssm_warp_sums8_rotated leaves it
// (the short sums over rows store that, and the finish adds the four).
__device__ __forceinline__ float ssm_warp_sums8_rotated_by8(float (&v)[8], unsigned lane) {
    float w[4];
    w[0] = v[0] + __shfl_xor_sync(0xffffffffu, v[2], 16);
    w[1] = v[1] + __shfl_xor_sync(0xffffffffu, v[3], 16);
    w[2] = v[4] + __shfl_xor_sync(0xffffffffu, v[6], 16);
    w[3] = v[5] + __shfl_xor_sync(0xffffffffu, v[7], 16);
#pragma unroll
    for (int half = 2, m = 8; half >= 1; half /= 2, m /= 2) {
        const bool upper = (lane & (unsigned)m) != 0;
#pragma unroll
        for (int j = 0; j < half; ++j) {
            const float send = upper ? w[j] : w[j + half];
            const float keep = upper ? w[j + half] : w[j];
            w[j] = keep + __shfl_xor_sync(0xffffffffu, send, m);
        }
    }
    return w[0];
}

// The warp's sums over its 32 lanes of v[0 .. 8) (B terms of registers 0..3,
// C terms of 4..7), where a lane's register k holds state k ^ 2 (lane >> 4 &
// 1): the first stage sends registers 2, 3, 6, 7 and keeps 0, 1, 4, 5, with
// no select. Afterwards lane l holds kind (l >> 3) & 1 of state 2 ((l >> 4)
// & 1) + ((l >> 2) & 1).
__device__ __forceinline__ float ssm_warp_sums8_rotated(float (&v)[8], unsigned lane) {
    float s = ssm_warp_sums8_rotated_by8(v, lane);
    s += __shfl_xor_sync(0xffffffffu, s, 2);
    s += __shfl_xor_sync(0xffffffffu, s, 1);
    return s;
}

// ssm_warp_sums8_rotated spread over five consecutive steps, one stage a
// step, so that the results of stages 2 to 5 are first needed a whole step
// later (stage 1's four shuffles, of the step's own terms, are issued
// together after its arithmetic and added a few instructions later: keeping
// them a step too would hold 8 more registers at the kernel's bound).
// The shuffles of a warp keep their order in the machine code (they are
// convergent: ptxas never moves one across another), so the plain form
// issues a step's nine shuffles as a chain whose last five are one shuffle
// each, its add waiting on it (NVRTC sm_90 SASS: a median of 5 instructions
// from a shuffle to its use; ncu: the adds waiting on shuffles were 34% of
// the gradient kernel's stall samples, H200, 8/11's shape). Here step t's
// call issues stage 1 of step t, stage 2 of step t + 1, ..., stage 5 of
// step t + 4 together, and completes them at `complete`, after the step's
// arithmetic. Every sum is added in the same order as the plain form's, so
// the bits are the same (the emulated test checks it).
struct SsmRowSumsPipe {
    float w[4];  // step t + 1 after stage 1 (the rotated form's w[0 .. 4))
    float y[2];  // step t + 2 after stage 2
    float s3;    // step t + 3 after stage 3
    float s4;    // step t + 4 after stage 4
    // In flight between `issue` and `complete`:
    float x2[2], x3, x4, x5, r1[4];

    // Stages 2 to 5 of the older steps (`live[k]`: the step that stage k + 2
    // would take exists; known at compile time in the unrolled loops).
    __device__ __forceinline__ void issue_older(unsigned lane, bool live2, bool live3, bool live4, bool live5) {
        const bool up8 = (lane & 8u) != 0, up4 = (lane & 4u) != 0;
        if (live2) {
            x2[0] = __shfl_xor_sync(0xffffffffu, up8 ? w[0] : w[2], 8);
            x2[1] = __shfl_xor_sync(0xffffffffu, up8 ? w[1] : w[3], 8);
        }
        if (live3) x3 = __shfl_xor_sync(0xffffffffu, up4 ? y[0] : y[1], 4);
        if (live4) x4 = __shfl_xor_sync(0xffffffffu, s3, 2);
        if (live5) x5 = __shfl_xor_sync(0xffffffffu, s4, 1);
    }
    // Stage 1 of the new step's terms v (ssm_warp_sums8_rotated's v).
    __device__ __forceinline__ void issue_new(const float (&v)[8]) {
        r1[0] = __shfl_xor_sync(0xffffffffu, v[2], 16);
        r1[1] = __shfl_xor_sync(0xffffffffu, v[3], 16);
        r1[2] = __shfl_xor_sync(0xffffffffu, v[6], 16);
        r1[3] = __shfl_xor_sync(0xffffffffu, v[7], 16);
    }
    // The adds: returns step t + 4's finished sum (when live5); the oldest
    // stage first, so that each reads the value its shuffle was sent with.
    __device__ __forceinline__ float complete(unsigned lane, bool live2, bool live3, bool live4, bool live5) {
        const bool up8 = (lane & 8u) != 0, up4 = (lane & 4u) != 0;
        float done = 0.0f;
        if (live5) done = s4 + x5;
        if (live4) s4 = s3 + x4;
        if (live3) s3 = (up4 ? y[1] : y[0]) + x3;
        if (live2) {
            y[0] = (up8 ? w[2] : w[0]) + x2[0];
            y[1] = (up8 ? w[3] : w[1]) + x2[1];
        }
        return done;
    }
    __device__ __forceinline__ void complete_new(const float (&v)[8]) {
        w[0] = v[0] + r1[0];
        w[1] = v[1] + r1[1];
        w[2] = v[4] + r1[2];
        w[3] = v[5] + r1[3];
    }
};

template <int G, bool ROT, bool NARROW = false, bool PIPE = false, bool SHORT = false>
__device__ __forceinline__ void selective_backward_tiles(const float* u, const float* delta, const float* A,
                                                         SsmProjection B, SsmProjection C, const float* D,
                                                         const float* z, const float* delta_bias, const float* dout,
                                                         const float* checkpoints, float* dx0, float* du,
                                                         float* ddelta, float* dz, float* part_b, float* part_c,
                                                         float* part_a, float* part_d, float* part_bias, u64 dim,
                                                         u64 len, u64 state, bool softplus) {
    static_assert(!PIPE || ROT, "the pipelined sums over rows are the rotated form's");
    static_assert(!SHORT || (ROT && NARROW), "the short sums over rows are the narrow form's");
    typedef SsmBackTiles<G, ROT, NARROW> Tiles;
    constexpr int ROWS = Tiles::ROWS, T = Tiles::T, R = Tiles::R, UNITS = Tiles::UNITS;
    constexpr int THREADS = Tiles::THREADS, STATES = Tiles::STATES;
    constexpr float LN2 = 0.6931471805599453f;
    typename Tiles::Shared& sh = ssm_dynamic_shared<typename Tiles::Shared>(
        (NARROW ? (unsigned)sizeof(typename Tiles::Narrow) : 0u) + (SHORT ? (unsigned)sizeof(typename Tiles::Short) : 0u));
    typename Tiles::Narrow& narrow_sh = *reinterpret_cast<typename Tiles::Narrow*>(&sh + 1);
    typename Tiles::Short& short_sh = *reinterpret_cast<typename Tiles::Short*>(&narrow_sh + 1);

    const u64 row0 = (u64)blockIdx.x * ROWS;
    const u64 b = row0 / dim, d0 = row0 % dim;
    const u64 chunks = dim / ROWS, chunk = d0 / ROWS;
    const unsigned tid = threadIdx.x, lane = lane_id(), g = warp_id();
    const u64 checks = (len + R - 1) / R, tiles = (len + T - 1) / T;

    // The scan's: lane `lane` is row row0 + lane, states 4 g + k. a2 is A
    // log2(e) (the partial sum of A g a x_{t-1} is taken with it, and
    // scaled by ln 2 in the finish).
    // Register k of a lane holds state 4 g + (k ^ rot): with ROT the upper
    // half-warp has its states in the order 2, 3, 0, 1, so that the first
    // stage of the sums over rows needs no select (ssm_warp_sums8_rotated).
    const unsigned rot = ROT ? 2 * ((lane >> 4) & 1u) : 0u;
    float a2[4], carry[4], da[4];
#pragma unroll
    for (int k = 0; k < 4; ++k) {
        const u64 n = 4 * (u64)g + (k ^ rot);
        a2[k] = n < state ? A[(d0 + lane) * state + n] * SSM_LOG2E : 0.0f;
        carry[k] = 0.0f;
        da[k] = 0.0f;
    }
    const float* my_checks = checkpoints + ((u64)blockIdx.x * checks * STATES + 4 * g) * ROWS + lane;

    // The prepare's and finish's units: unit p of this thread is row (tid +
    // p THREADS) / 4, steps 4 unit_quad .. 4 unit_quad + 3 of the tile.
    const unsigned unit_quad = tid % 4;
    u64 unit_at[UNITS];
    int steps_row[UNITS], partial_at[UNITS], narrow_row[UNITS];
    float skip[UNITS], bias[UNITS], acc_dd[UNITS], acc_bias[UNITS];
#pragma unroll
    for (int p = 0; p < UNITS; ++p) {
        const unsigned unit_row = (tid + p * THREADS) / 4;
        unit_at[p] = (row0 + unit_row) * len;
        steps_row[p] = unit_row * Tiles::STEPS_STRIDE;
        narrow_row[p] = unit_row * Tiles::NARROW_STRIDE;
        partial_at[p] = Tiles::partial_at(unit_row, unit_quad);
        const u64 d = d0 + unit_row;
        skip[p] = D != nullptr ? D[d] : 0.0f;
        bias[p] = delta_bias != nullptr ? delta_bias[d] : 0.0f;
        acc_dd[p] = acc_bias[p] = 0.0f;
    }
    // B and C: this thread's unit is steps 4 unit_quad .. of state bc_state
    // of B (bc_kind 0) or C (1), in and (as dB or dC) out; states past N
    // read state 0 and are zeroed, and write nothing.
    const unsigned bc_kind = tid / (4 * STATES), bc_state = tid / 4 % STATES;
    const bool bc_live = bc_state < state;
    const u64 bc_n = bc_live ? bc_state : 0;
    // (Both rows, then one chosen: choosing between B and C themselves put
    // them in local memory.)
    const float* b_row = B.row(b, d0, dim, bc_n, state, len);
    const float* c_row = C.row(b, d0, dim, bc_n, state, len);
    const float* bc_row = bc_kind == 0 ? b_row : c_row;
    float* bc_part = (bc_kind == 0 ? part_b : part_c) + ((b * chunks + chunk) * state + bc_n) * len;
    const int bc_in = Tiles::bc_at(4 * unit_quad, 8 * (bc_state / 4) + 4 * bc_kind + bc_state % 4);
    const int bc_in_rot = Tiles::bc_at(4 * unit_quad, 8 * (bc_state / 4) + 4 * bc_kind + ((bc_state % 4) ^ 2));
    const int bc_sum = bc_kind * STATES + bc_state;

    const bool aligned = len % 4 == 0 && ssm_aligned(u) && ssm_aligned(delta) && ssm_aligned(dout) &&
                         ssm_aligned(du) && ssm_aligned(ddelta) && (z == nullptr || (ssm_aligned(z) && ssm_aligned(dz))) &&
                         ssm_aligned(B.data) && ssm_aligned(C.data) && ssm_aligned(part_b) && ssm_aligned(part_c);

    // Registers between phases: the raw inputs of the next tile (with its
    // checkpoints), the checkpoints of the tile being scanned. (dz's factor
    // and softplus' derivative go through shared memory, `gates`: in
    // registers they spilled under the 3-block bound.)
    float4 raw_u[UNITS], raw_delta[UNITS], raw_dout[UNITS], raw_z[UNITS], raw_bc;
    float raw_checks[T / R][4], checks_now[T / R][4];
    float4* my_gates = sh.gates + tid;  // + (kind UNITS + p) THREADS

    auto load = [&](const bool FAST, const u64 tile) {
        const u64 t = tile * T + 4 * unit_quad;
#pragma unroll
        for (int p = 0; p < UNITS; ++p) {
            const u64 at = unit_at[p];
            raw_z[p] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            if (FAST) {
                raw_u[p] = ssm_tile_load<true>(u + at, t, len);
                raw_delta[p] = ssm_tile_load<true>(delta + at, t, len);
                raw_dout[p] = ssm_tile_load<true>(dout + at, t, len);
                if (z != nullptr) raw_z[p] = ssm_tile_load<true>(z + at, t, len);
            } else {
                raw_u[p] = ssm_tile_load<false>(u + at, t, len);
                raw_delta[p] = ssm_tile_load<false>(delta + at, t, len);
                raw_dout[p] = ssm_tile_load<false>(dout + at, t, len);
                if (z != nullptr) raw_z[p] = ssm_tile_load<false>(z + at, t, len);
            }
        }
        raw_bc = FAST ? ssm_tile_load<true>(bc_row, t, len) : ssm_tile_load<false>(bc_row, t, len);
#pragma unroll
        for (int c = 0; c < T / R; ++c) {
            const u64 check = tile * (T / R) + c;
#pragma unroll
            for (int k = 0; k < 4; ++k)
                raw_checks[c][k] = check < checks ? my_checks[(check * STATES + (k ^ rot)) * ROWS] : 0.0f;
        }
    };

    auto prepare = [&](const bool FAST, const u64 tile) {
        const u64 t = tile * T + 4 * unit_quad;
#pragma unroll
        for (int p = 0; p < UNITS; ++p) {
            const float uu[4] = {raw_u[p].x, raw_u[p].y, raw_u[p].z, raw_u[p].w};
            const float dd[4] = {raw_delta[p].x, raw_delta[p].y, raw_delta[p].z, raw_delta[p].w};
            const float go[4] = {raw_dout[p].x, raw_dout[p].y, raw_dout[p].z, raw_dout[p].w};
            const float zz[4] = {raw_z[p].x, raw_z[p].y, raw_z[p].z, raw_z[p].w};
            float fz[4], fsp[4];
#pragma unroll
            for (int j = 0; j < 4; ++j) {
                const float x = dd[j] + bias[p];
                float dt = softplus ? ssm_softplus(x) : x;
                fsp[j] = softplus ? ssm_sigmoid(x) : 1.0f;
                if (!FAST && t + j >= len) dt = 0.0f;  // past the end: the identity
                float dy = go[j];
                fz[j] = 0.0f;
                if (z != nullptr) {
                    const float sig = ssm_sigmoid(zz[j]);
                    dy *= zz[j] * sig;
                    fz[j] = go[j] * sig * fmaf(zz[j], 1.0f - sig, 1.0f);
                }
                sh.steps[steps_row[p] + Tiles::step_at(4 * unit_quad + j)] = make_float4(dt, dt * uu[j], dy, uu[j]);
                if constexpr (NARROW) {
                    const int at = narrow_row[p] + 4 * unit_quad + j;
                    narrow_sh.steps2[at] = make_float2(dt, dt * uu[j]);
                    narrow_sh.dys[at] = dy;
                }
            }
            my_gates[p * THREADS] = make_float4(fz[0], fz[1], fz[2], fz[3]);
            my_gates[(UNITS + p) * THREADS] = make_float4(fsp[0], fsp[1], fsp[2], fsp[3]);
        }
        const float v[4] = {raw_bc.x, raw_bc.y, raw_bc.z, raw_bc.w};
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            sh.bc[bc_in + j * Tiles::BC_STRIDE] = bc_live ? v[j] : 0.0f;
            if constexpr (ROT) sh.bc_rot[bc_in_rot + j * Tiles::BC_STRIDE] = bc_live ? v[j] : 0.0f;
        }
        // The tile's checkpoints, loaded a tile ahead (loaded here instead,
        // their latency cost 5%: 2.55 against 2.43 ms).
#pragma unroll
        for (int c = 0; c < T / R; ++c) {
#pragma unroll
            for (int k = 0; k < 4; ++k) checks_now[c][k] = raw_checks[c][k];
        }
    };

    auto scan_tile = [&]() {
        const float4* my_steps = sh.steps + lane * Tiles::STEPS_STRIDE;
        const float2* my_steps2 = narrow_sh.steps2 + lane * Tiles::NARROW_STRIDE;
        const float* my_dys = narrow_sh.dys + lane * Tiles::NARROW_STRIDE;
        const float* my_bc = ROT && rot != 0 ? sh.bc_rot : sh.bc;
        // Where this lane's sum over rows goes in a step of `sums` (lanes 4 i
        // only): kind and state as the reduce-scatter leaves them.
        const unsigned sums_state = ROT ? rot + ((lane >> 2) & 1u) : (lane >> 2) % 4;
        const unsigned sums_kind = ROT ? (lane >> 3) & 1u : lane >> 4;
        const int sums_at = (lane & 3u) == 0 ? (int)(sums_kind * STATES + 4 * g + sums_state) : -1;
        // With SHORT every lane stores its sum over 8 rows (partial lane & 3).
        auto store_short = [&](int t, float by8) {
            short_sh.sums4[Tiles::short_at(t, (int)sums_kind, (int)(4 * g + sums_state), (int)(lane & 3u))] = by8;
        };
        float* my_partial[3];
#pragma unroll
        for (int i = 0; i < 3; ++i) my_partial[i] = sh.partial[i] + g * ROWS * Tiles::PARTIAL_STRIDE;
        // With PIPE, the sums over rows of steps t + 1 .. t + 4 in flight
        // while step t is computed (SsmRowSumsPipe).
        SsmRowSumsPipe pipe;
        // Unrolled, so that the compiler can start the earlier sub-run's
        // forward during the later one's backward (H200, 8/11's shape: the
        // backward 2.41-2.43 ms; one sub-run at a time, 2.61-2.63).
#pragma unroll
        for (int run = T / R - 1; run >= 0; --run) {
            // Forward from the checkpoint: a_t and x_t (x_{t-1} of the
            // sub-run's first step is the checkpoint). Keeping x_t rather
            // than a_t x_{t-1} spares the backward an FMA per (step, state):
            // x_t is kept, and g a x_{t-1} is the new carry a g times x_{t-1}.
            float av[R][4], xv[R][4], x[4];
#pragma unroll
            for (int k = 0; k < 4; ++k) x[k] = checks_now[run][k];
#pragma unroll
            for (int s = 0; s < R; ++s) {
                const int t = run * R + s;
                float2 st;  // dt, dt u
                if constexpr (NARROW) {
                    st = my_steps2[t];
                } else {
                    const float4 wide = my_steps[Tiles::step_at(t)];
                    st = make_float2(wide.x, wide.y);
                }
                const float4 bb = *reinterpret_cast<const float4*>(my_bc + Tiles::bc_at(t, 8 * g));
                const float bv[4] = {bb.x, bb.y, bb.z, bb.w};
#pragma unroll
                for (int k = 0; k < 4; ++k) {
                    av[s][k] = ssm_exp2(st.x * a2[k]);
                    x[k] = fmaf(st.y, bv[k], av[s][k] * x[k]);
                    xv[s][k] = x[k];
                }
            }
            // Backward over the sub-run.
            float p1[4], p2[4], p3[4];
#pragma unroll
            for (int s = R - 1; s >= 0; --s) {
                const int t = run * R + s;
                if constexpr (PIPE)
                    pipe.issue_older(lane, t + 1 < T, t + 2 < T, !SHORT && t + 3 < T, !SHORT && t + 4 < T);
                float4 st;  // dt, dt u, dy (and u, unused here)
                if constexpr (NARROW) {
                    const float2 narrow = my_steps2[t];
                    st = make_float4(narrow.x, narrow.y, my_dys[t], 0.0f);
                } else {
                    st = my_steps[Tiles::step_at(t)];
                }
                const float4 bb = *reinterpret_cast<const float4*>(my_bc + Tiles::bc_at(t, 8 * g));
                const float4 cc = *reinterpret_cast<const float4*>(my_bc + Tiles::bc_at(t, 8 * g + 4));
                const float bv[4] = {bb.x, bb.y, bb.z, bb.w};
                const float cv[4] = {cc.x, cc.y, cc.z, cc.w};
                float gb = 0.0f, gaq = 0.0f, cx = 0.0f, bc_terms[8];
#pragma unroll
                for (int k = 0; k < 4; ++k) {
                    const float gk = fmaf(cv[k], st.z, carry[k]);
                    const float xk = xv[s][k];
                    carry[k] = av[s][k] * gk;
                    const float q = carry[k] * (s > 0 ? xv[s - 1][k] : checks_now[run][k]);  // g a x_{t-1}
                    da[k] = fmaf(st.x, q, da[k]);
                    gaq = fmaf(a2[k], q, gaq);
                    gb = fmaf(gk, bv[k], gb);
                    cx = fmaf(cv[k], xk, cx);
                    bc_terms[k] = gk * st.y;      // dB: g dt u
                    bc_terms[4 + k] = st.z * xk;  // dC: dy x
                }
                p1[s % 4] = gb;  // t % 4
                p2[s % 4] = gaq;
                p3[s % 4] = cx;
                if constexpr (PIPE && SHORT) {
                    // Three stages: after `complete`, s3 is step t + 2's sum over 8 rows.
                    pipe.issue_new(bc_terms);
                    pipe.complete(lane, t + 1 < T, t + 2 < T, false, false);
                    if (t + 2 < T) store_short(t + 2, pipe.s3);
                    pipe.complete_new(bc_terms);
                } else if constexpr (PIPE) {
                    pipe.issue_new(bc_terms);
                    const float done = pipe.complete(lane, t + 1 < T, t + 2 < T, t + 3 < T, t + 4 < T);
                    if (t + 4 < T && sums_at >= 0) sh.sums[(t + 4) * Tiles::BC_STRIDE + sums_at] = done;
                    pipe.complete_new(bc_terms);
                } else if constexpr (SHORT) {
                    store_short(t, ssm_warp_sums8_rotated_by8(bc_terms, lane));
                } else {
                    const float total = ROT ? ssm_warp_sums8_rotated(bc_terms, lane) : ssm_warp_sums8(bc_terms, lane);
                    if (sums_at >= 0) sh.sums[t * Tiles::BC_STRIDE + sums_at] = total;
                }
                if (s % 4 == 0) {
                    const int at = Tiles::partial_at(lane, t / 4);
                    *reinterpret_cast<float4*>(my_partial[0] + at) = make_float4(p1[0], p1[1], p1[2], p1[3]);
                    *reinterpret_cast<float4*>(my_partial[1] + at) = make_float4(p2[0], p2[1], p2[2], p2[3]);
                    *reinterpret_cast<float4*>(my_partial[2] + at) = make_float4(p3[0], p3[1], p3[2], p3[3]);
                }
            }
        }
        // The pipeline's last two steps (1, 0 finish in turn), with SHORT.
        if constexpr (PIPE && SHORT) {
#pragma unroll
            for (int t = -1; t >= -2; --t) {
                pipe.issue_older(lane, t + 1 >= 0, t + 2 >= 0, false, false);
                pipe.complete(lane, t + 1 >= 0, t + 2 >= 0, false, false);
                if (t + 2 >= 0) store_short(t + 2, pipe.s3);
            }
        }
        // The pipeline's last four steps (3, 2, 1, 0 finish in turn).
        if constexpr (PIPE && !SHORT) {
#pragma unroll
            for (int t = -1; t >= -4; --t) {
                pipe.issue_older(lane, t + 1 >= 0, t + 2 >= 0, t + 3 >= 0, t + 4 >= 0);
                const float done = pipe.complete(lane, t + 1 >= 0, t + 2 >= 0, t + 3 >= 0, t + 4 >= 0);
                if (t + 4 >= 0 && sums_at >= 0) sh.sums[(t + 4) * Tiles::BC_STRIDE + sums_at] = done;
            }
        }
    };

    auto finish = [&](const bool FAST, const u64 tile) {
        const u64 t = tile * T + 4 * unit_quad;
#pragma unroll
        for (int p = 0; p < UNITS; ++p) {
            float4 sum[3];
#pragma unroll
            for (int i = 0; i < 3; ++i) {
                sum[i] = *reinterpret_cast<const float4*>(sh.partial[i] + partial_at[p]);
#pragma unroll
                for (int w = 1; w < G; ++w) {
                    const float4 s = *reinterpret_cast<const float4*>(sh.partial[i] + w * ROWS * Tiles::PARTIAL_STRIDE +
                                                                      partial_at[p]);
                    sum[i].x += s.x, sum[i].y += s.y, sum[i].z += s.z, sum[i].w += s.w;
                }
            }
            const float gb[4] = {sum[0].x, sum[0].y, sum[0].z, sum[0].w};
            const float gaq[4] = {sum[1].x, sum[1].y, sum[1].z, sum[1].w};
            const float cx[4] = {sum[2].x, sum[2].y, sum[2].z, sum[2].w};
            const float4 kept_dz = my_gates[p * THREADS], kept_dsp = my_gates[(UNITS + p) * THREADS];
            const float fz[4] = {kept_dz.x, kept_dz.y, kept_dz.z, kept_dz.w};
            const float fsp[4] = {kept_dsp.x, kept_dsp.y, kept_dsp.z, kept_dsp.w};
            float o_du[4], o_dd[4], o_dz[4];
#pragma unroll
            for (int j = 0; j < 4; ++j) {
                const float4 st = sh.steps[steps_row[p] + Tiles::step_at(4 * unit_quad + j)];  // dt, dt u, dy, u
                o_du[j] = fmaf(st.z, skip[p], st.x * gb[j]);
                o_dd[j] = fmaf(LN2, gaq[j], st.w * gb[j]) * fsp[j];
                o_dz[j] = fz[j] * fmaf(skip[p], st.w, cx[j]);
                const bool in = FAST || t + j < len;
                acc_dd[p] = fmaf(st.z, st.w, acc_dd[p]);  // 0 past the end (dy = u = 0)
                acc_bias[p] += in ? o_dd[j] : 0.0f;
            }
            const u64 at = unit_at[p] + t;
            if (FAST) {
                *reinterpret_cast<float4*>(du + at) = make_float4(o_du[0], o_du[1], o_du[2], o_du[3]);
                *reinterpret_cast<float4*>(ddelta + at) = make_float4(o_dd[0], o_dd[1], o_dd[2], o_dd[3]);
                if (z != nullptr) *reinterpret_cast<float4*>(dz + at) = make_float4(o_dz[0], o_dz[1], o_dz[2], o_dz[3]);
            } else {
#pragma unroll
                for (int j = 0; j < 4; ++j) {
                    if (t + j < len) {
                        du[at + j] = o_du[j];
                        ddelta[at + j] = o_dd[j];
                        if (z != nullptr) dz[at + j] = o_dz[j];
                    }
                }
            }
        }
        // The block's dB or dC of state bc_state over 4 steps.
        if (bc_live) {
            float v[4];
#pragma unroll
            for (int j = 0; j < 4; ++j) {
                if constexpr (SHORT) {
                    // The last two stages of the reduce-scatter, in its order.
                    const float4 p = *reinterpret_cast<const float4*>(
                        short_sh.sums4 + Tiles::short_at(4 * unit_quad + j, bc_kind, bc_state, 0));
                    v[j] = (p.x + p.z) + (p.y + p.w);
                } else {
                    v[j] = sh.sums[(4 * unit_quad + j) * Tiles::BC_STRIDE + bc_sum];
                }
            }
            if (FAST) {
                *reinterpret_cast<float4*>(bc_part + t) = make_float4(v[0], v[1], v[2], v[3]);
            } else {
#pragma unroll
                for (int j = 0; j < 4; ++j)
                    if (t + j < len) bc_part[t + j] = v[j];
            }
        }
    };

    // Tile i is whole (FAST: vector loads, no bounds) when the rows are
    // aligned and it ends inside them.
    auto whole = [&](u64 i) { return aligned && (i + 1) * T <= len; };
    auto load_tile = [&](u64 i) {
        if (whole(i)) {
            load(true, i);
        } else {
            load(false, i);
        }
    };
    auto prepare_tile = [&](u64 i) {
        if (whole(i)) {
            prepare(true, i);
        } else {
            prepare(false, i);
        }
    };
    load_tile(tiles - 1);
    prepare_tile(tiles - 1);
    if (tiles > 1) load_tile(tiles - 2);
    __syncthreads();
    for (u64 i = tiles; i-- > 0;) {
        scan_tile();
        __syncthreads();
        if (whole(i)) {
            finish(true, i);
        } else {
            finish(false, i);
        }
        if (i > 0) prepare_tile(i - 1);
        if (i > 1) load_tile(i - 2);
        __syncthreads();
    }

    // Past step 0, G is dL/dx0; dA per (row, state) and dD, d delta_bias per
    // row are this batch's partials ([b][d][n], [b][d]).
#pragma unroll
    for (int k = 0; k < 4; ++k) {
        const u64 n = 4 * (u64)g + (k ^ rot);
        if (n < state) {
            const u64 at = (row0 + lane) * state + n;
            part_a[at] = da[k];
            if (dx0 != nullptr) dx0[at] = carry[k];
        }
    }
#pragma unroll
    for (int p = 0; p < UNITS; ++p) {
        float dd = acc_dd[p], dbias = acc_bias[p];
#pragma unroll
        for (int m = 1; m < 4; m *= 2) {
            dd += __shfl_xor_sync(0xffffffffu, dd, m);
            dbias += __shfl_xor_sync(0xffffffffu, dbias, m);
        }
        if (unit_quad == 0) {
            const u64 row = row0 + (tid + p * THREADS) / 4;
            part_d[row] = dd;
            part_bias[row] = dbias;
        }
    }
}

}  // namespace scan
