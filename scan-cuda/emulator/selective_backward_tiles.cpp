// The selective scan's tile backward (kernels/selective_backward_tiles.cuh)
// run in the host emulation, launched as scan-cuda/src/selective/backward_tiles.rs
// launches it: the training forward (which saves checkpoints beside its
// output), the backward's own checkpoint kernel (whose checkpoints must be
// the same bits), the gradient kernel, and the partial sums in index order;
// and the plain tile forward (selective_tiles.cuh), whose output and last
// state must be the training forward's bits.
// scan-cuda/tests/emulated.rs writes the inputs, runs this and checks the
// outputs against scan_core's f64 reference.
//
// Usage: selective_backward_tiles IN OUT. IN: 17 u64 (batch, dim, len,
// state, b_groups, c_groups, has D, has z, has delta_bias, softplus, has
// x0, warps G, rotated, the schedule's seed, narrow steps (rotated only),
// pipelined sums over rows (narrow steps only), short sums over rows
// (narrow steps only)), then f32
// arrays: u, delta, A, B, C, D?, z?, delta_bias?, x0?, dout. OUT: f32 arrays:
// out, the last state, du, ddelta, dA, dB, dC, dD?, dz?, d delta_bias?, dx0?.
// Every output buffer starts as NaNs, so one a kernel leaves unwritten shows.

#include "cuda_emulator.hpp"

// The backward module's sources, in the order selective/backward.rs gives NVRTC.
// clang-format off
#include "../kernels/util.cuh"
#include "../kernels/warp.cuh"
#include "../kernels/block.cuh"
#include "../kernels/selective.cuh"
#include "../kernels/selective_tiles.cuh"
#include "../kernels/selective_backward.cuh"
#include "../kernels/selective_backward_tiles.cuh"
// clang-format on

using scan::u64;

namespace {

struct Input {
    u64 batch, dim, len, state, b_groups, c_groups;
    bool has_d, has_z, has_bias, softplus, has_x0;
    unsigned warps, seed;
    bool rotated, narrow, piped, short_sums;
    std::vector<float> u, delta, a, b, c, d, z, bias, x0, dout;
};

std::vector<float> read_floats(std::FILE* f, u64 count) {
    std::vector<float> v(count);
    if (count > 0 && std::fread(v.data(), sizeof(float), count, f) != count) scan_emulator::fail("input too short");
    return v;
}

void write_floats(std::FILE* f, const std::vector<float>& v) {
    if (!v.empty() && std::fwrite(v.data(), sizeof(float), v.size(), f) != v.size())
        scan_emulator::fail("cannot write the output");
}

const float* or_null(const std::vector<float>& v, bool present) { return present ? v.data() : nullptr; }

// out[o][e] = sum over p of in[(o parts + p) inner + e], p ascending: the
// work of selective_backward_sum_parts, one output at a time.
std::vector<float> sum_parts(const std::vector<float>& in, u64 outers, u64 parts, u64 inner) {
    std::vector<float> out(outers * inner);
    for (u64 id = 0; id < outers * inner; ++id) {
        const u64 o = id / inner, e = id % inner;
        float sum = 0.0f;
        for (u64 p = 0; p < parts; ++p) sum += in[(o * parts + p) * inner + e];
        out[id] = sum;
    }
    return out;
}

template <int G>
int run(const Input& in, std::FILE* out_file) {
    constexpr unsigned ROWS = 32, CHECK = scan::SSM_CHECK;
    constexpr int YS = G == 4 ? 16 : 4;  // the training forward's y steps (selective/forward.rs TILE_DEFAULTS)
    const u64 rows = in.batch * in.dim, chunks = in.dim / ROWS;
    const u64 checks_len = rows * ((in.len + CHECK - 1) / CHECK) * 4 * G;
    const dim3 grid{(unsigned)(rows / ROWS), 1, 1}, block{32 * G, 1, 1};
    const scan::SsmProjection pb{in.b.data(), in.b_groups}, pc{in.c.data(), in.c_groups};
    const float* d = or_null(in.d, in.has_d);
    const float* z = or_null(in.z, in.has_z);
    const float* bias = or_null(in.bias, in.has_bias);
    const float* x0 = or_null(in.x0, in.has_x0);
    const std::size_t forward_shared = sizeof(typename scan::SsmTiles<G>::Shared);

    // The training forward: the output and its checkpoints (the shared
    // memory's NaN pattern stands for whatever an earlier block left).
    const float nan = std::nanf("");
    std::vector<float> out(rows * in.len, nan), last(rows * in.state, nan), saved(checks_len, -1.0f);
    scan_emulator::launch(grid, block, forward_shared, in.seed, [&] {
        scan::ssm_tiles_forward<G, YS, true, true>(in.u.data(), in.delta.data(), in.a.data(), pb, pc, d, z, bias, x0,
                                                   out.data(), last.data(), saved.data(), in.dim, in.len, in.state,
                                                   in.softplus);
    });
    // The backward's own checkpoints: the same bits.
    std::vector<float> checks(checks_len, -2.0f);
    scan_emulator::launch(grid, block, forward_shared, in.seed + 1, [&] {
        scan::ssm_tiles_forward<G, 4, false, true>(in.u.data(), in.delta.data(), in.a.data(), pb, pb, nullptr, nullptr,
                                                   bias, x0, nullptr, nullptr, checks.data(), in.dim, in.len, in.state,
                                                   in.softplus);
    });
    if (std::memcmp(saved.data(), checks.data(), checks_len * sizeof(float)) != 0) {
        std::fprintf(stderr, "the training forward's checkpoints differ from the checkpoint kernel's\n");
        return 3;
    }
    // The plain forward (selective_scan_tiles, what `run_selective` launches;
    // its other y-step counts too, for 4 warps): the training forward's
    // output and last state, bit for bit.
    auto plain = [&](auto y_steps) {
        constexpr int Y = decltype(y_steps)::value;
        std::vector<float> out2(rows * in.len, nan), last2(rows * in.state, nan);
        scan_emulator::launch(grid, block, forward_shared, in.seed + 3, [&] {
            scan::selective_scan_tiles<G, Y>(in.u.data(), in.delta.data(), in.a.data(), pb, pc, d, z, bias, x0,
                                             out2.data(), last2.data(), in.batch, in.dim, in.len, in.state,
                                             in.softplus);
        });
        return std::memcmp(out.data(), out2.data(), out.size() * sizeof(float)) == 0 &&
               std::memcmp(last.data(), last2.data(), last.size() * sizeof(float)) == 0;
    };
    bool same = plain(std::integral_constant<int, YS>{});
    if constexpr (G == 4) same = same && plain(std::integral_constant<int, 4>{}) && plain(std::integral_constant<int, 8>{});
    if (!same) {
        std::fprintf(stderr, "the plain forward's output or last state differs from the training forward's\n");
        return 3;
    }

    // The gradients and the partials.
    std::vector<float> du(rows * in.len, nan), ddelta(rows * in.len, nan), dz(in.has_z ? rows * in.len : 0, nan);
    std::vector<float> dx0(in.has_x0 ? rows * in.state : 0, nan);
    std::vector<float> part_b(in.batch * chunks * in.state * in.len, nan), part_c(part_b.size(), nan);
    std::vector<float> part_a(rows * in.state, nan), part_d(rows, nan), part_bias(rows, nan);
    auto gradients = [&](auto rotated, auto narrow, auto piped, auto short_sums) {
        constexpr bool ROT = decltype(rotated)::value, NARROW = decltype(narrow)::value;
        constexpr bool PIPE = decltype(piped)::value, SHORT = decltype(short_sums)::value;
        typedef scan::SsmBackTiles<G, ROT, NARROW> Tiles;
        const std::size_t shared = sizeof(typename Tiles::Shared) + (NARROW ? sizeof(typename Tiles::Narrow) : 0) +
                                   (SHORT ? sizeof(typename Tiles::Short) : 0);
        scan_emulator::launch(grid, block, shared, in.seed + 2, [&] {
            scan::selective_backward_tiles<G, ROT, NARROW, PIPE, SHORT>(in.u.data(), in.delta.data(), in.a.data(), pb, pc, d, z, bias,
                                                   in.dout.data(), checks.data(), in.has_x0 ? dx0.data() : nullptr,
                                                   du.data(), ddelta.data(), in.has_z ? dz.data() : nullptr,
                                                   part_b.data(), part_c.data(), part_a.data(), part_d.data(),
                                                   part_bias.data(), in.dim, in.len, in.state, in.softplus);
        });
    };
    using yes = std::true_type;
    using no = std::false_type;
    if (in.piped && in.short_sums) {
        gradients(yes{}, yes{}, yes{}, yes{});
    } else if (in.piped) {
        gradients(yes{}, yes{}, yes{}, no{});
    } else if (in.short_sums) {
        gradients(yes{}, yes{}, no{}, yes{});
    } else if (in.narrow) {
        gradients(yes{}, yes{}, no{}, no{});
    } else if (in.rotated) {
        gradients(yes{}, no{}, no{}, no{});
    } else {
        gradients(no{}, no{}, no{}, no{});
    }

    const u64 parts = in.batch;
    write_floats(out_file, out);
    write_floats(out_file, last);
    write_floats(out_file, du);
    write_floats(out_file, ddelta);
    write_floats(out_file, sum_parts(part_a, 1, parts, in.dim * in.state));
    write_floats(out_file, sum_parts(part_b, in.batch * in.b_groups, chunks / in.b_groups, in.state * in.len));
    write_floats(out_file, sum_parts(part_c, in.batch * in.c_groups, chunks / in.c_groups, in.state * in.len));
    if (in.has_d) write_floats(out_file, sum_parts(part_d, 1, parts, in.dim));
    if (in.has_z) write_floats(out_file, dz);
    if (in.has_bias) write_floats(out_file, sum_parts(part_bias, 1, parts, in.dim));
    if (in.has_x0) write_floats(out_file, dx0);
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 3) {
        std::fprintf(stderr, "usage: %s IN OUT\n", argv[0]);
        return 2;
    }
    std::FILE* f = std::fopen(argv[1], "rb");
    if (f == nullptr) scan_emulator::fail("cannot open the input");
    u64 h[17];
    if (std::fread(h, sizeof(u64), 17, f) != 17) scan_emulator::fail("input too short");
    Input in;
    in.batch = h[0], in.dim = h[1], in.len = h[2], in.state = h[3], in.b_groups = h[4], in.c_groups = h[5];
    in.has_d = h[6] != 0, in.has_z = h[7] != 0, in.has_bias = h[8] != 0, in.softplus = h[9] != 0;
    in.has_x0 = h[10] != 0, in.warps = (unsigned)h[11], in.rotated = h[12] != 0, in.seed = (unsigned)h[13];
    in.narrow = h[14] != 0;
    in.piped = h[15] != 0;
    in.short_sums = h[16] != 0;
    if (in.narrow && !in.rotated) scan_emulator::fail("narrow steps come with the rotated states only");
    if (in.piped && !in.narrow) scan_emulator::fail("pipelined sums come with narrow steps only");
    if (in.short_sums && !in.narrow) scan_emulator::fail("short sums come with narrow steps only");
    const u64 rows = in.batch * in.dim;
    if (in.dim % 32 != 0 || (in.dim / in.b_groups) % 32 != 0 || (in.dim / in.c_groups) % 32 != 0 || in.len == 0 ||
        in.state == 0 || in.state > 4 * in.warps)
        scan_emulator::fail("a shape the tile kernels do not take");
    in.u = read_floats(f, rows * in.len);
    in.delta = read_floats(f, rows * in.len);
    in.a = read_floats(f, in.dim * in.state);
    in.b = read_floats(f, in.batch * in.b_groups * in.state * in.len);
    in.c = read_floats(f, in.batch * in.c_groups * in.state * in.len);
    if (in.has_d) in.d = read_floats(f, in.dim);
    if (in.has_z) in.z = read_floats(f, rows * in.len);
    if (in.has_bias) in.bias = read_floats(f, in.dim);
    if (in.has_x0) in.x0 = read_floats(f, rows * in.state);
    in.dout = read_floats(f, rows * in.len);
    std::fclose(f);

    std::FILE* out = std::fopen(argv[2], "wb");
    if (out == nullptr) scan_emulator::fail("cannot open the output");
    int rc = 0;
    switch (in.warps) {
        case 2: rc = run<2>(in, out); break;
        case 4: rc = run<4>(in, out); break;
        default: scan_emulator::fail("warps must be 2 or 4");
    }
    std::fclose(out);
    return rc;
}
