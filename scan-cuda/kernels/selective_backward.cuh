// The selective scan's backward pass (scan_core::selective::backward has the
// definition and the f64 reference), f32, run-to-run deterministic: every
// sum is taken in an order fixed by the shapes alone, with no atomics.
// Three kernels (scan-cuda/src/selective/backward.rs launches them):
//
//   1. selective_backward_carries, a block per (batch, channel) row, as the
//      forward's chunked block scan: for every run of SSM_RUN steps and every
//      state index n, the state x before the run (a forward block scan) and,
//      when the gradient blocks split rows into ranges, the reverse carry G
//      entering the run from after it (a reverse block scan of g_t = dy_t
//      C_t + a_{t+1} g_{t+1}, as G_t = a_t g_t). These checkpoints are
//      (rows, ceil(L / SSM_RUN), N): 1/16 of the (batch, dim, L, N) states,
//      which are never stored.
//   2. selective_backward_grads, a block per (batch, chunk of channels that
//      share their B and C, range of runs), a group of S lanes per channel
//      and one lane per state index: the range's runs from the last to the
//      first, each recomputed from its x checkpoint (forward, then backward
//      over its SSM_RUN steps in registers) with G carried from the run
//      after (from the carries kernel only at the range's last run; with
//      whole rows as ranges, the carries kernel skips its reverse scan: one
//      exp per (step, state) less), the sums over n (du, ddelta, y for dz)
//      are butterflies across the lanes, and the sums over the channels (dB
//      and dC of varying projections) are taken slot by slot, then written
//      as one partial per chunk. Per-channel sums over time (dA, dD,
//      d delta_bias, dB and dC of fixed projections) are partials per range.
//   3. selective_backward_sum_parts adds the partials in index order.

namespace scan {

// Steps per checkpoint (and per thread's run in the carries kernel).
constexpr int SSM_RUN = 16;

// dt_t for a run: delta + bias, softplus when asked, 0 past the row's end
// (a = 1, the identity of the recurrence); returns the run's sum.
template <int ITEMS>
__device__ __forceinline__ float ssm_dt_run(bool whole, const float* delta_row, u64 t0, u64 len, float bias,
                                            bool softplus, float (&dt)[ITEMS]) {
    ssm_load_run(whole, delta_row, t0, len, dt);
    float sum = 0.0f;
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) {
        float v = dt[i] + bias;
        if (softplus) v = ssm_softplus(v);
        if (!whole && t0 + i >= len) v = 0.0f;
        dt[i] = v;
        sum += v;
    }
    return sum;
}

// Kernel 1. Block per row; THREADS threads (128, or one warp: no barrier per
// state, a chunk of 512 steps), each a run of SSM_RUN steps of a chunk of
// THREADS * SSM_RUN. For each state index n in turn, one block scan
// of LinearRecurrence composites (as selective_scan_chunked):
//   forward, chunks in order: x before each run -> xs[row][run][n];
//   reverse, chunks from the last, thread i taking the run THREADS - 1 - i
//   of the chunk so that thread order is reverse time: the composite of a
//   run maps the carry G entering it from after to the one leaving it at
//   its start (G <- a_t (G + dy_t C_t), t descending), and the carry
//   entering each run -> gs[row][run][n]; the carry leaving step 0 is dL/dx0.
// The carried values cross chunks in shared memory, two buffers read and
// written alternately (as in the forward kernel).
template <int THREADS>
__device__ __forceinline__ void selective_backward_carries(const float* u, const float* delta, const float* A,
                                                           SsmProjection B, SsmProjection C, const float* z,
                                                           const float* delta_bias, const float* x0,
                                                           const float* dout, float* xs, float* gs, float* dx0,
                                                           u64 dim, u64 len, u64 state, bool softplus) {
    constexpr int ITEMS = SSM_RUN;
    typedef SsmRecurrences<1> Op;
    typedef BlockScan<Op, THREADS> Scan;
    typedef typename Op::Item Pair;
    constexpr u64 CHUNK = (u64)THREADS * ITEMS;
    __shared__ typename Scan::Shared scan_shared[2];
    extern __shared__ float shared_floats[];
    float* carried = shared_floats;             // [2][state]
    float* a_log2 = shared_floats + 2 * state;  // [state]: A log2(e)
    // A chunk's checkpoints, [n][THREADS + 1] (padded: conflict-free both
    // ways), written out after the chunk's states as whole rows of
    // [run][n]: one value per (thread, n) stored directly would touch a
    // sector per value.
    float* staged = shared_floats + 3 * state;

    const u64 row = blockIdx.x;
    const u64 b = row / dim, d = row % dim;
    const u64 runs = (len + ITEMS - 1) / ITEMS;
    const float bias = delta_bias != nullptr ? delta_bias[d] : 0.0f;
    for (u64 j = threadIdx.x; j < state; j += THREADS) {
        carried[j] = x0 != nullptr ? x0[row * state + j] : 0.0f;
        a_log2[j] = A[d * state + j] * SSM_LOG2E;
    }
    const bool vary_b = B.groups != 0, vary_c = C.groups != 0;
    const float* b_rows = vary_b ? B.row(b, d, dim, 0, state, len) : B.data + d * state;
    const float* c_rows = vary_c ? C.row(b, d, dim, 0, state, len) : C.data + d * state;
    const bool aligned = len % 4 == 0 && ssm_aligned(u) && ssm_aligned(delta) && ssm_aligned(dout) &&
                         (z == nullptr || ssm_aligned(z)) && ssm_aligned(B.data) && ssm_aligned(C.data);
    const float* u_row = u + row * len;
    const float* delta_row = delta + row * len;
    __syncthreads();
    unsigned parity = 0, turn = 0;

    // The chunk's staged checkpoints (runs start / ITEMS on) to out[row].
    auto write_out = [&](const u64 start, float* out) {
        __syncthreads();  // every thread's values are staged
        const u64 run0 = start / ITEMS, count = min((u64)THREADS, runs - run0);
        float* to = out + (row * runs + run0) * state;
        for (u64 e = threadIdx.x; e < count * state; e += THREADS) {
            const u64 run = e / state, n = e % state;
            to[e] = staged[n * (THREADS + 1) + run];
        }
        // Read before the next chunk stages its own (a one-warp block has
        // no block scan whose barrier would order them), and thread 0's
        // carries are visible to the next chunk.
        __syncthreads();
    };

    // One pass over a chunk, state by state: each run's composite, its a
    // from the run's sum of dt, its b from dt, `other` (dt u forward, dy in
    // reverse) and state n's B or C over the run (`rows`, loaded one state
    // ahead so that the load overlaps the scan, as the forward kernel); the
    // block's exclusive scan; the carry entering each run staged for `out`;
    // the carry moved past the chunk. t0: this thread's run, start + ITEMS
    // x its place in the pass's order.
    auto pass = [&](const u64 start, const u64 t0, const bool whole, const bool reversed, const float (&dt)[ITEMS],
                    const float dt_sum, const float (&other)[ITEMS], const float* rows, const bool vary,
                    float* out) {
        const float* from = carried + parity * state;
        float* to = carried + (parity ^ 1u) * state;
        auto load = [&](u64 n, float (&v)[ITEMS]) {
            if (vary) {
                ssm_load_run(whole, rows + n * len, t0, len, v);
            } else {
                ssm_fill(rows[n], v);
            }
        };
        float next[ITEMS];
        load(0, next);
        for (u64 n = 0; n < state; ++n) {
            float values[ITEMS];
#pragma unroll
            for (int i = 0; i < ITEMS; ++i) values[i] = next[i];
            if (n + 1 < state) load(n + 1, next);
            const float a2 = a_log2[n];
            Pair run;
            run.a[0] = ssm_exp2(dt_sum * a2);
            if (!reversed) {
                // x <- a_t x + dt_t u_t B_t (the first a_t multiplies 0).
                float b = other[0] * values[0];
#pragma unroll
                for (int i = 1; i < ITEMS; ++i) b = fmaf(ssm_exp2(dt[i] * a2), b, other[i] * values[i]);
                run.b[0] = b;
            } else {
                // G <- a_t (G + dy_t C_t), t descending.
                float g = 0.0f;
#pragma unroll
                for (int i = ITEMS - 1; i >= 0; --i) g = ssm_exp2(dt[i] * a2) * fmaf(other[i], values[i], g);
                run.b[0] = g;
            }
            Pair total, before;
            if constexpr (THREADS == 32) {
                // One warp: no shared memory and no barrier per state.
                const Pair inclusive = warp_inclusive<Op>(run);
                const Pair below = Shuffle<Pair>::up(inclusive, 1);
                total = Shuffle<Pair>::from(inclusive, 31);
                before = lane_id() == 0 ? Op::identity() : below;
            } else {
                before = Scan::exclusive(run, total, scan_shared[turn]);
                turn ^= 1u;
            }
            const float carry = from[n];
            staged[n * (THREADS + 1) + (t0 - start) / ITEMS] = ssm_apply(before.a[0], carry, before.b[0]);
            if (threadIdx.x == 0) to[n] = ssm_apply(total.a[0], carry, total.b[0]);
        }
        parity ^= 1u;
        write_out(start, out);
    };

    // Forward: runs in thread order.
    auto forward = [&](const u64 start, const bool whole) {
        const u64 t0 = start + (u64)threadIdx.x * ITEMS;
        float dt[ITEMS], dtu[ITEMS];
        const float dt_sum = ssm_dt_run(whole, delta_row, t0, len, bias, softplus, dt);
        ssm_load_run(whole, u_row, t0, len, dtu);
#pragma unroll
        for (int i = 0; i < ITEMS; ++i) dtu[i] *= dt[i];
        pass(start, t0, whole, false, dt, dt_sum, dtu, b_rows, vary_b, xs);
    };

    // Reverse: thread i takes the chunk's run THREADS - 1 - i, so that
    // thread order is reverse time.
    auto reverse = [&](const u64 start, const bool whole) {
        const u64 t0 = start + (u64)(THREADS - 1 - threadIdx.x) * ITEMS;
        float dt[ITEMS], dy[ITEMS];
        const float dt_sum = ssm_dt_run(whole, delta_row, t0, len, bias, softplus, dt);
        ssm_load_run(whole, dout + row * len, t0, len, dy);
        if (z != nullptr) {
            float zz[ITEMS];
            ssm_load_run(whole, z + row * len, t0, len, zz);
#pragma unroll
            for (int i = 0; i < ITEMS; ++i) dy[i] *= ssm_silu(zz[i]);
        }
        pass(start, t0, whole, true, dt, dt_sum, dy, c_rows, vary_c, gs);
    };

    for (u64 start = 0; start < len; start += CHUNK) {
        // Two calls, so that each inlined copy sees a constant `whole`.
        if (aligned && start + CHUNK <= len) {
            forward(start, true);
        } else {
            forward(start, false);
        }
    }
    // Without gs, the gradient kernel carries G along whole rows itself.
    if (gs == nullptr) return;
    // Every thread has read the forward's carried states (the last block
    // scan's barrier came after); the reverse starts from G = 0.
    __syncthreads();
    for (u64 j = threadIdx.x; j < state; j += THREADS) carried[parity * state + j] = 0.0f;
    __syncthreads();
    if (len > 0) {
        for (u64 start = (len - 1) / CHUNK * CHUNK;; start -= CHUNK) {
            if (aligned && start + CHUNK <= len) {
                reverse(start, true);
            } else {
                reverse(start, false);
            }
            if (start == 0) break;
        }
    }
    if (dx0 != nullptr) {
        __syncthreads();
        for (u64 j = threadIdx.x; j < state; j += THREADS) dx0[row * state + j] = carried[parity * state + j];
    }
}

// The sums over the S lanes of a group (a power of two up to 32) of
// v[0 .. SSM_RUN): afterwards lane i of the group holds in v[m] the sum for
// step i + m S (m < SSM_RUN / S; for S = 32, lanes 0 to 15 hold step i in
// v[0]). Butterflies: each stage sends half the values to the partner lane
// and keeps the other half, so S - 1 shuffles per S values; the order of
// the additions depends on the lane only, never on timing.
template <int S>
__device__ __forceinline__ void ssm_group_sums(float (&v)[SSM_RUN], unsigned i) {
    constexpr int W = S < SSM_RUN ? S : SSM_RUN;  // lanes that end up owning steps
#pragma unroll
    for (int m = S / 2; m >= SSM_RUN; m /= 2) {
#pragma unroll
        for (int j = 0; j < SSM_RUN; ++j) v[j] += __shfl_xor_sync(0xffffffffu, v[j], m);
    }
#pragma unroll
    for (int q = 0; q < SSM_RUN / W; ++q) {
#pragma unroll
        for (int stage = 1; stage < W; stage *= 2) {
            const int m = W / (2 * stage);
#pragma unroll
            for (int j = 0; j < m; ++j) {
                const bool upper = (i & (unsigned)m) != 0;
                float& lo = v[q * W + j];
                float& hi = v[q * W + j + m];
                const float send = upper ? lo : hi;
                const float keep = upper ? hi : lo;
                lo = keep + __shfl_xor_sync(0xffffffffu, send, m);
            }
        }
    }
#pragma unroll
    for (int q = 1; q < SSM_RUN / W; ++q) v[q] = v[q * W];
}

// Kernel 2. blockIdx.x = (b chunks + chunk) ranges + range, for batch b. A
// chunk is CPT * SLOTS consecutive channels inside a span of channels that
// share their group of B and of C (the host passes span); a range is
// `range_runs` consecutive runs, taken from the last to the first: the
// reverse carry G of each (channel, state) goes from run to run in shared
// memory, starting from gs at the range's last run (0 without gs: the range
// then ends its row), and past run 0 it is dL/dx0 (written to dx0 when
// given). Thread (slot, i): lanes i of a group of S own state indices
// n = i + k S (k < PER_LANE) of channel first + j SLOTS + slot, for j < CPT
// in turn.
//
// Per run, per channel: the group's lanes load the run's steps (dt, dt u,
// dy, u) into shared memory (one float4 per step, read as broadcasts);
// per state index: x from the checkpoint forward over the run (a_t and x_t
// kept in registers), y_t's part C_t x_t, dC's dy_t x_t; then g backward
// from the carry: dB's g dt u, du's g dt B, ddt's g (x_{t-1} a_t A + B u),
// dA's g x_{t-1} a_t dt; then the group sums over n. Sums over channels of
// varying dB and dC: each thread adds into its own cells of shared memory
// ([t][slot][n]), and after the run's channels the block adds the slots in
// order. (B, C and these sums in registers instead, over a run: 95 -> 199
// to 240 registers, or spills under a bound of 3 or 4 blocks per SM; NVRTC,
// sm_90.)
template <int S, int PER_LANE, int WARPS, int CPT>
__device__ __forceinline__ void selective_backward_grads(
    const float* u, const float* delta, const float* A, SsmProjection B, SsmProjection C, const float* D,
    const float* z, const float* delta_bias, const float* dout, const float* xs, const float* gs, float* dx0,
    float* du, float* ddelta, float* dz, float* part_b, float* part_c, float* part_a, float* part_d,
    float* part_bias, u64 dim, u64 len, u64 state, u64 span, u64 range_runs, bool softplus) {
    constexpr int RUN = SSM_RUN, THREADS = 32 * WARPS, SLOTS = THREADS / S;
    constexpr int OWN = S >= RUN ? 1 : RUN / S;  // steps whose sums a lane finishes
    constexpr int CELLS = PER_LANE * S;          // state cells per slot
    constexpr u64 CHANNELS = (u64)CPT * SLOTS;
    static_assert(S >= 1 && S <= 32 && (S & (S - 1)) == 0, "S is a power of two up to 32");
    // The slots' sums per step: [RUN][SLOTS x CELLS + 1] (padded, so that
    // the lanes' adds and the per-step reads of the block's sums are both
    // free of bank conflicts).
    constexpr int STEP = SLOTS * CELLS + 1;
    extern __shared__ float4 shared_steps[];  // [SLOTS][RUN]
    float* sum_b = reinterpret_cast<float*>(shared_steps + SLOTS * RUN);
    float* sum_c = sum_b + RUN * STEP;
    // Per thread, channel j and state k: sums over the range's steps, each
    // thread its own cells ([j][k][thread]; dD and d delta_bias [j][thread]),
    // in shared memory rather than registers, so that the channel loop
    // need not be unrolled.
    float* acc_a = sum_c + RUN * STEP;
    float* acc_bf = acc_a + CPT * PER_LANE * THREADS;
    float* acc_cf = acc_bf + CPT * PER_LANE * THREADS;
    float* acc_d = acc_cf + CPT * PER_LANE * THREADS;
    float* acc_bias = acc_d + CPT * THREADS;
    // The reverse carry G of channel j and state k, carried from run to run
    // ([j][k][thread]).
    float* acc_g = acc_bias + CPT * THREADS;
    // The run's B and C of varying projections, shared by the block's
    // channels (they share a group): [n][RUN + 1] (padded: lanes read
    // consecutive n at one step without bank conflicts).
    constexpr int ROW = RUN + 1;
    float* run_b = acc_g + CPT * PER_LANE * THREADS;
    float* run_c = run_b + state * ROW;

    const unsigned slot = threadIdx.x / S, i = threadIdx.x % S;
    const u64 runs = (len + RUN - 1) / RUN, ranges = (runs + range_runs - 1) / range_runs;
    const u64 chunks_per_span = (span + CHANNELS - 1) / CHANNELS;
    const u64 chunks = dim / span * chunks_per_span;
    const u64 block = blockIdx.x;
    const u64 range = block % ranges, chunk = block / ranges % chunks, b = block / ranges / chunks;
    const u64 span_start = chunk / chunks_per_span * span;
    const u64 first = span_start + chunk % chunks_per_span * CHANNELS, end = span_start + span;
    const bool vary_b = B.groups != 0, vary_c = C.groups != 0;
    float4* steps = shared_steps + slot * RUN;
    // State 0's rows of varying B and C for this block's channels.
    const float* b_rows = vary_b ? B.row(b, first, dim, 0, state, len) : nullptr;
    const float* c_rows = vary_c ? C.row(b, first, dim, 0, state, len) : nullptr;

    const u64 run_first = range * range_runs, run_end = min(runs, run_first + range_runs);
    for (int j = 0; j < CPT; ++j) {
        acc_d[j * THREADS + threadIdx.x] = acc_bias[j * THREADS + threadIdx.x] = 0.0f;
        const u64 d = first + (u64)j * SLOTS + slot;
        const u64 row = b * dim + d;
        for (int k = 0; k < PER_LANE; ++k) {
            const unsigned cell = (j * PER_LANE + k) * THREADS + threadIdx.x;
            acc_a[cell] = acc_bf[cell] = acc_cf[cell] = 0.0f;
            // G entering the range's last run from after: the carries
            // kernel's (gs), or 0 where the range ends the row (no gs).
            const u64 n = i + (u64)k * S;
            acc_g[cell] = gs != nullptr && d < end && n < state ? gs[(row * runs + run_end - 1) * state + n] : 0.0f;
        }
    }
    // The range's runs from the last to the first, G carried between them.
    for (u64 r = run_end; r-- > run_first;) {
        const u64 t0 = r * RUN;
        for (u64 e = threadIdx.x; e < (u64)RUN * state; e += THREADS) {
            const u64 n = e / RUN, t = e % RUN;
            const bool in = t0 + t < len;
            if (vary_b) run_b[n * ROW + t] = in ? b_rows[n * len + t0 + t] : 0.0f;
            if (vary_c) run_c[n * ROW + t] = in ? c_rows[n * len + t0 + t] : 0.0f;
        }
        __syncthreads();  // the run's B and C are in place
#pragma unroll
        for (int t = 0; t < RUN; ++t) {
#pragma unroll
            for (int k = 0; k < PER_LANE; ++k) {
                const unsigned cell = t * STEP + slot * CELLS + k * S + i;
                sum_b[cell] = 0.0f;
                sum_c[cell] = 0.0f;
            }
        }
        // Channel j's inputs from global memory (this lane's steps, and the
        // checkpoints of its first state), fetched one channel ahead so
        // that their latency overlaps the previous channel's work.
        float raw_u[OWN], raw_delta[OWN], raw_dout[OWN], raw_z[OWN], pre_x = 0.0f;
        auto fetch = [&](const int j) {
            const u64 d = first + (u64)j * SLOTS + slot;
            const bool live = d < end;
            const u64 row = b * dim + d;
#pragma unroll
            for (int m = 0; m < OWN; ++m) {
                const u64 t = i + (u64)m * S;
                const bool in = live && t < RUN && t0 + t < len;
                const u64 at = row * len + t0 + t;
                raw_u[m] = in ? u[at] : 0.0f;
                raw_delta[m] = in ? delta[at] : 0.0f;
                raw_dout[m] = in ? dout[at] : 0.0f;
                raw_z[m] = in && z != nullptr ? z[at] : 0.0f;
            }
            const bool mine = live && i < state;
            const u64 at = (row * runs + r) * state + i;
            pre_x = mine ? xs[at] : 0.0f;
        };
        fetch(0);
#pragma unroll 1
        for (int j = 0; j < CPT; ++j) {
            const u64 d = first + (u64)j * SLOTS + slot;
            const bool live = d < end;
            const u64 row = b * dim + d;
            const float skip = live && D != nullptr ? D[d] : 0.0f;
            const float bias = live && delta_bias != nullptr ? delta_bias[d] : 0.0f;
            __syncwarp();  // the slot's steps of the last channel are read
#pragma unroll
            for (int m = 0; m < OWN; ++m) {
                const u64 t = i + (u64)m * S;
                if (t < RUN) {
                    float4 s = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
                    if (live && t0 + t < len) {
                        float dt = raw_delta[m] + bias;
                        if (softplus) dt = ssm_softplus(dt);
                        float dy = raw_dout[m];
                        if (z != nullptr) dy *= ssm_silu(raw_z[m]);
                        s = make_float4(dt, dt * raw_u[m], dy, raw_u[m]);
                    }
                    steps[t] = s;
                }
            }
            const float first_x = pre_x;
            if (j + 1 < CPT) fetch(j + 1);
            __syncwarp();
            float y_own[OWN], du_own[OWN], ddt_own[OWN];
#pragma unroll
            for (int m = 0; m < OWN; ++m) y_own[m] = du_own[m] = ddt_own[m] = 0.0f;
#pragma unroll 1
            for (int k = 0; k < PER_LANE; ++k) {
                const u64 n = i + (u64)k * S;
                const bool mine = live && n < state;
                const float a_n = mine ? A[d * state + n] : 0.0f, a2 = a_n * SSM_LOG2E;
                const u64 at = (row * runs + r) * state + n;
                const float x_start = k == 0 ? first_x : mine ? xs[at] : 0.0f;
                const unsigned cell = (j * PER_LANE + k) * THREADS + threadIdx.x;
                float carry = acc_g[cell];
                // B_t[n] and C_t[n]: the run's shared rows, or the fixed
                // values (0 for a lane without a state).
                const float b_fixed = mine && !vary_b ? B.fixed(d, n, state) : 0.0f;
                const float c_fixed = mine && !vary_c ? C.fixed(d, n, state) : 0.0f;
                const u64 own = n < state ? n * ROW : 0;
                auto bv = [&](int t) { return vary_b && mine ? run_b[own + t] : b_fixed; };
                auto cv = [&](int t) { return vary_c && mine ? run_c[own + t] : c_fixed; };
                float av[RUN], xv[RUN], part[RUN];
                float x = x_start, dcf = 0.0f, dbf = 0.0f, da = 0.0f;
#pragma unroll
                for (int t = 0; t < RUN; ++t) {
                    const float4 s = steps[t];
                    av[t] = ssm_exp2(s.x * a2);
                    x = fmaf(av[t], x, s.y * bv(t));
                    xv[t] = x;
                    part[t] = cv(t) * x;
                    if (vary_c) {
                        sum_c[t * STEP + slot * CELLS + k * S + i] += s.z * x;
                    } else {
                        dcf = fmaf(s.z, x, dcf);
                    }
                }
                ssm_group_sums<S>(part, i);
#pragma unroll
                for (int m = 0; m < OWN; ++m) y_own[m] += part[m];
                float ddt[RUN];
#pragma unroll
                for (int t = RUN - 1; t >= 0; --t) {
                    const float4 s = steps[t];
                    const float g = fmaf(s.z, cv(t), carry);
                    if (vary_b) {
                        sum_b[t * STEP + slot * CELLS + k * S + i] += g * s.y;
                    } else {
                        dbf = fmaf(g, s.y, dbf);
                    }
                    const float gb = g * bv(t);
                    part[t] = gb * s.x;
                    const float gxa = g * (t > 0 ? xv[t - 1] : x_start) * av[t];
                    ddt[t] = fmaf(gxa, a_n, gb * s.w);
                    da = fmaf(gxa, s.x, da);
                    carry = g * av[t];
                }
                acc_g[cell] = carry;
                // Past run 0: the carry leaving step 0 is dL/dx0 (asked for
                // when no carries kernel gives it).
                if (r == 0 && dx0 != nullptr && mine) dx0[row * state + n] = carry;
                acc_a[cell] += da;
                acc_bf[cell] += dbf;
                acc_cf[cell] += dcf;
                ssm_group_sums<S>(part, i);
                ssm_group_sums<S>(ddt, i);
#pragma unroll
                for (int m = 0; m < OWN; ++m) {
                    du_own[m] += part[m];
                    ddt_own[m] += ddt[m];
                }
            }
            // This lane's steps: i + m S.
            float dd = 0.0f, dbias = 0.0f;
#pragma unroll
            for (int m = 0; m < OWN; ++m) {
                const u64 t = i + (u64)m * S;
                if (t < RUN && live && t0 + t < len) {
                    const float4 s = steps[t];
                    const u64 at = row * len + t0 + t;
                    if (z != nullptr) {
                        const float zz = z[at], sig = ssm_sigmoid(zz);
                        const float y = fmaf(skip, s.w, y_own[m]);
                        dz[at] = dout[at] * y * sig * fmaf(zz, 1.0f - sig, 1.0f);
                    }
                    du[at] = fmaf(s.z, skip, du_own[m]);
                    float dd_t = ddt_own[m];
                    if (softplus) dd_t *= ssm_sigmoid(delta[at] + bias);
                    ddelta[at] = dd_t;
                    dd = fmaf(s.z, s.w, dd);
                    dbias += dd_t;
                }
            }
            acc_d[j * THREADS + threadIdx.x] += dd;
            acc_bias[j * THREADS + threadIdx.x] += dbias;
        }
        // The run's shared B and C are read, and the slots' sums written.
        __syncthreads();
        if (vary_b || vary_c) {
            // The slots' sums, added in slot order: one partial per chunk,
            // written a run of steps at a time.
            for (u64 e = threadIdx.x; e < (u64)RUN * state; e += THREADS) {
                const u64 n = e / RUN, t = e % RUN;
                if (t0 + t >= len) continue;
                float sb = 0.0f, sc = 0.0f;
                for (int s = 0; s < SLOTS; ++s) {
                    sb += sum_b[t * STEP + s * CELLS + n];
                    sc += sum_c[t * STEP + s * CELLS + n];
                }
                const u64 out = ((b * chunks + chunk) * state + n) * len + t0 + t;
                if (vary_b) part_b[out] = sb;
                if (vary_c) part_c[out] = sc;
            }
        }
        __syncthreads();  // read before the next run overwrites them
    }
    // Per channel: partials of this (batch, range), [b][range][d][n] and
    // [b][range][d].
    const u64 part_row = b * ranges + range;
    for (int j = 0; j < CPT; ++j) {
        const u64 d = first + (u64)j * SLOTS + slot;
        const bool live = d < end;
        for (int k = 0; k < PER_LANE; ++k) {
            const u64 n = i + (u64)k * S;
            if (live && n < state) {
                const unsigned cell = (j * PER_LANE + k) * THREADS + threadIdx.x;
                const u64 at = (part_row * dim + d) * state + n;
                part_a[at] = acc_a[cell];
                if (!vary_b) part_b[at] = acc_bf[cell];
                if (!vary_c) part_c[at] = acc_cf[cell];
            }
        }
        // The group's lanes hold parts of dD and d delta_bias: a butterfly
        // gives every lane the same sum.
        float dd = acc_d[j * THREADS + threadIdx.x], dbias = acc_bias[j * THREADS + threadIdx.x];
#pragma unroll
        for (int m = 1; m < S; m *= 2) {
            dd += __shfl_xor_sync(0xffffffffu, dd, m);
            dbias += __shfl_xor_sync(0xffffffffu, dbias, m);
        }
        if (live && i == 0) {
            part_d[part_row * dim + d] = dd;
            part_bias[part_row * dim + d] = dbias;
        }
    }
}

// Kernel 3. out[o][e] = sum over p < parts of in[(o parts + p) inner + e], p
// ascending, for o < outers and e < inner: one thread per output.
__device__ __forceinline__ void selective_backward_sum_parts(const float* in, float* out, u64 outers, u64 parts,
                                                             u64 inner) {
    const u64 id = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (id >= outers * inner) return;
    const u64 o = id / inner, e = id % inner;
    float sum = 0.0f;
    for (u64 p = 0; p < parts; ++p) sum += in[(o * parts + p) * inner + e];
    out[id] = sum;
}

}  // namespace scan
