//! The selective scan's tile kernels (forward with checkpoints, and the
//! backward's gradient kernel), stream compaction's kernels and the
//! widening kernels run without a GPU, in the host emulation of
//! scan-cuda/emulator: each CUDA thread a fiber, blocks one after another,
//! the fibers resumed in a shuffled order at every barrier. The harness
//! (emulator/selective_backward_tiles.cpp) launches them as
//! src/selective/backward_tiles.rs does; this test checks what comes out
//! against scan_core's f64 reference, on shapes around the kernels' tiles
//! (16 and 32 steps), checkpoints (8), and states past N.
//!
//! This is how a change to those kernels is checked on a machine with no
//! GPU (the H200 runs the real thing: tests/selective_backward.rs and
//! support/gpu.rs, `--ignored`). Needs a C++20 compiler: `c++`, or the one
//! named by `CXX`, which may carry flags (`CXX="c++ -fsanitize=address"`
//! checks the kernels' global accesses too).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use scan_core::selective::backward::{reference_backward, SsmGrads};
use scan_core::selective::{reference, Projection, SelectiveScan, SsmShape};

/// `emulator/{name}.cpp` compiled into the test's scratch directory.
fn compile(name: &str) -> PathBuf {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("emulator/{name}.cpp"));
    let binary = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("emulated_{name}"));
    // `CXX` may carry flags too ("c++ -fsanitize=address").
    let compiler = std::env::var("CXX").unwrap_or_else(|_| "c++".into());
    let mut words = compiler.split_whitespace();
    let program = words.next().unwrap_or("c++");
    let output = Command::new(program)
        .args(words)
        .args(["-std=c++20", "-O2", "-Wall", "-Wno-unknown-pragmas", "-o"])
        .arg(&binary)
        .arg(&source)
        .output()
        .unwrap_or_else(|e| panic!("cannot run the C++ compiler `{compiler}` (set CXX): {e}"));
    assert!(output.status.success(), "{name}.cpp did not compile:\n{}", String::from_utf8_lossy(&output.stderr));
    binary
}

/// The harness, compiled once per test run.
fn harness() -> &'static Path {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(|| compile("selective_backward_tiles"))
}

/// The emulator's own semantics (emulator/self_test.cpp): shuffles of
/// every kind and width, sources out of range, barriers after some threads
/// exited, shared memory across a barrier, on four schedules.
#[test]
fn the_emulator_follows_the_cuda_semantics_it_claims() {
    let output = Command::new(compile("self_test")).output().unwrap();
    assert!(
        output.status.success(),
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&output.stdout).trim(), "emulator self-test: ok");
}

/// Runs the harness `emulator/{name}.cpp`, which checks its own cases and
/// prints "{name}: N cases ok" when all hold; at least `min_cases` must have
/// run.
fn run_counted_cases(name: &str, min_cases: usize) {
    let output = Command::new(compile(name)).output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}{}", String::from_utf8_lossy(&output.stderr));
    let cases: usize = stdout
        .trim()
        .strip_prefix(&format!("{name}: "))
        .and_then(|rest| rest.strip_suffix(" cases ok"))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("unexpected harness output: {stdout}"));
    assert!(cases >= min_cases, "{name}: only {cases} cases ran");
}

/// Stream compaction's count and scatter (kernels/compact.cuh) launched as
/// compact.rs launches them, on grids of one and two blocks, so that every
/// block strides over several tiles (on a GPU only past 4096 tiles): items
/// of one word of each size (the scatter's fast path) and of three words
/// (its general path), whole and partial tiles, flags none, all, ~30% and
/// alternating, aligned and not, and an output too small, which must stay
/// untouched; each case against a plain filter (emulator/compaction.cpp).
#[test]
fn the_compaction_kernels_filter_exactly_with_blocks_striding_over_tiles() {
    run_counted_cases("compaction", 400);
}

/// The widening kernels (kernels/widen.cuh) with the source and the output
/// at every offset of up to four items from 16-byte alignment, so that the
/// scalar path runs as well as the vector one (a GPU test only gets whole,
/// aligned allocations), on grids whose threads stride over several groups;
/// every bf16 and f16 value against a plain decoding of its bits, nothing
/// written around the output, the input unchanged (emulator/widen.cpp).
#[test]
fn the_widening_kernels_widen_exactly_at_every_alignment() {
    run_counted_cases("widen", 4000);
}

/// A deterministic stream of floats in [lo, hi).
struct Values(u64);

impl Values {
    fn next(&mut self, lo: f32, hi: f32) -> f32 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let unit = (self.0 >> 40) as f32 / (1u64 << 24) as f32;
        lo + (hi - lo) * unit
    }
    fn fill(&mut self, n: usize, lo: f32, hi: f32) -> Vec<f32> {
        (0..n).map(|_| self.next(lo, hi)).collect()
    }
}

#[derive(Clone, Copy, Debug)]
struct Case {
    batch: usize,
    dim: usize,
    len: usize,
    state: usize,
    b_groups: usize,
    c_groups: usize,
    d: bool,
    z: bool,
    bias: bool,
    softplus: bool,
    x0: bool,
    warps: u32,
    rotated: bool,
    /// The rotated kernel with narrow steps (`Tuning::selective_backward_narrow_steps`).
    narrow: bool,
    /// That kernel with its sums over rows pipelined
    /// (`Tuning::selective_backward_pipelined_sums`).
    piped: bool,
    /// That kernel with its sums over rows cut short after three stages
    /// (`Tuning::selective_backward_short_sums`).
    short: bool,
}

/// What the harness writes: the forward's output and last state, and the
/// gradients.
struct Emulated {
    out: Vec<f32>,
    last: Vec<f32>,
    grads: SsmGrads,
}

/// The harness's output for `input` with the fibers resumed in the order
/// `schedule` seeds.
fn emulate(case: Case, mut input: Vec<u8>, schedule: u64, tag: &str) -> Vec<u8> {
    // Header word 13: the schedule's seed.
    input[13 * 8..14 * 8].copy_from_slice(&schedule.to_le_bytes());
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let tag = format!("{}-{tag}-{schedule}", std::process::id());
    let (in_path, out_path) = (dir.join(format!("emulated-{tag}.in")), dir.join(format!("emulated-{tag}.out")));
    std::fs::write(&in_path, &input).unwrap();
    let status = Command::new(harness()).arg(&in_path).arg(&out_path).output().unwrap();
    assert!(status.status.success(), "{case:?}: the harness failed:\n{}", String::from_utf8_lossy(&status.stderr));
    let bytes = std::fs::read(&out_path).unwrap();
    let _ = std::fs::remove_file(&in_path);
    let _ = std::fs::remove_file(&out_path);
    bytes
}

/// Checks the harness's output for `case` (inputs seeded by `seed`) against
/// the f64 reference, and returns it.
fn run_case(case: Case, seed: u64) -> Vec<u8> {
    let Case { batch, dim, len, state, b_groups, c_groups, .. } = case;
    let rows = batch * dim;
    let mut v = Values(seed);
    let u = v.fill(rows * len, -1.0, 1.0);
    let delta = v.fill(rows * len, if case.softplus { -2.0 } else { 0.01 }, if case.softplus { 0.5 } else { 0.3 });
    let a = v.fill(dim * state, -2.0, -0.1);
    let b = v.fill(batch * b_groups * state * len, -1.0, 1.0);
    let c = v.fill(batch * c_groups * state * len, -1.0, 1.0);
    let d = v.fill(dim, -1.0, 1.0);
    let z = v.fill(rows * len, -2.0, 2.0);
    let bias = v.fill(dim, -0.5, 0.5);
    let x0 = v.fill(rows * state, -1.0, 1.0);
    let dout = v.fill(rows * len, -1.0, 1.0);

    let shape = SsmShape { batch, dim, len, state };
    let mut args = SelectiveScan::new(
        shape,
        &u,
        &delta,
        &a,
        Projection::Varying { data: &b, groups: b_groups },
        Projection::Varying { data: &c, groups: c_groups },
    )
    .delta_softplus(case.softplus);
    if case.d {
        args = args.d(&d);
    }
    if case.z {
        args = args.z(&z);
    }
    if case.bias {
        args = args.delta_bias(&bias);
    }
    if case.x0 {
        args = args.initial_state(&x0);
    }

    // The harness's input: the header, then the arrays it takes.
    let header: [u64; 17] = [
        batch as u64,
        dim as u64,
        len as u64,
        state as u64,
        b_groups as u64,
        c_groups as u64,
        case.d.into(),
        case.z.into(),
        case.bias.into(),
        case.softplus.into(),
        case.x0.into(),
        case.warps.into(),
        case.rotated.into(),
        seed,
        case.narrow.into(),
        case.piped.into(),
        case.short.into(),
    ];
    let mut input: Vec<u8> = header.iter().flat_map(|h| h.to_le_bytes()).collect();
    let mut put = |xs: &[f32]| input.extend(xs.iter().flat_map(|x| x.to_le_bytes()));
    for (xs, present) in [
        (&u, true),
        (&delta, true),
        (&a, true),
        (&b, true),
        (&c, true),
        (&d, case.d),
        (&z, case.z),
        (&bias, case.bias),
        (&x0, case.x0),
        (&dout, true),
    ] {
        if present {
            put(xs);
        }
    }
    // Two schedules of the fibers: every sum is in a fixed order, so the
    // same bits (a missing barrier usually changes them too).
    let bytes = emulate(case, input.clone(), seed, &seed.to_string());
    let again = emulate(case, input, seed ^ 0x5eed_5eed, &seed.to_string());
    assert!(bytes == again, "{case:?}: another schedule of the threads gave other bits");
    let output = bytes.clone();
    let floats: Vec<f32> = bytes.chunks_exact(4).map(|w| f32::from_le_bytes(w.try_into().unwrap())).collect();
    let mut rest = &floats[..];
    let mut take = |n: usize| {
        assert!(rest.len() >= n, "{case:?}: the harness wrote too little");
        let (head, tail) = rest.split_at(n);
        rest = tail;
        head.to_vec()
    };
    let out = take(rows * len);
    let last = take(rows * state);
    let du = take(rows * len);
    let ddelta = take(rows * len);
    let da = take(dim * state);
    let db = take(b.len());
    let dc = take(c.len());
    let dd = case.d.then(|| take(dim));
    let dz = case.z.then(|| take(rows * len));
    let ddelta_bias = case.bias.then(|| take(dim));
    let dinitial_state = case.x0.then(|| take(rows * state));
    assert!(rest.is_empty(), "{case:?}: the harness wrote {} floats too many", rest.len());
    let got = Emulated { out, last, grads: SsmGrads { du, ddelta, da, db, dc, dd, dz, ddelta_bias, dinitial_state } };

    let (want_out, want_last) = reference(&args.return_last_state(true)).unwrap();
    let want = reference_backward(&args, &dout).unwrap();
    // f32 against f64, over sums of at most a few hundred terms.
    let close = |name: &str, got: &[f32], want: &[f32]| {
        assert_eq!(got.len(), want.len(), "{case:?}: {name} length");
        for (i, (g, w)) in got.iter().zip(want).enumerate() {
            let tolerance = 2e-4 * (1.0 + w.abs());
            assert!((g - w).abs() <= tolerance, "{case:?}: {name}[{i}] = {g}, the reference {w}");
        }
    };
    let want_out: Vec<f32> = want_out.iter().map(|&y| y as f32).collect();
    close("out", &got.out, &want_out);
    let want_last: Vec<f32> = want_last.expect("asked for").iter().map(|&x| x as f32).collect();
    close("last state", &got.last, &want_last);
    let (g, w) = (&got.grads, &want);
    close("du", &g.du, &w.du);
    close("ddelta", &g.ddelta, &w.ddelta);
    close("dA", &g.da, &w.da);
    close("dB", &g.db, &w.db);
    close("dC", &g.dc, &w.dc);
    for (name, got, want) in [
        ("dD", &g.dd, &w.dd),
        ("dz", &g.dz, &w.dz),
        ("d delta_bias", &g.ddelta_bias, &w.ddelta_bias),
        ("dx0", &g.dinitial_state, &w.dinitial_state),
    ] {
        assert_eq!(got.is_some(), want.is_some(), "{case:?}: {name} present");
        if let (Some(got), Some(want)) = (got, want) {
            close(name, got, want);
        }
    }
    output
}

const BASE: Case = Case {
    batch: 1,
    dim: 32,
    len: 48,
    state: 16,
    b_groups: 1,
    c_groups: 1,
    d: true,
    z: true,
    bias: true,
    softplus: true,
    x0: false,
    warps: 4,
    rotated: true,
    narrow: false,
    piped: false,
    short: false,
};

#[test]
fn the_tile_backward_matches_the_reference_with_every_option() {
    // Rotated or not; every option on, then off, then the initial state.
    run_case(BASE, 1);
    run_case(Case { rotated: false, ..BASE }, 2);
    run_case(Case { d: false, z: false, bias: false, softplus: false, ..BASE }, 3);
    run_case(Case { x0: true, ..BASE }, 4);
}

#[test]
fn the_tile_backward_matches_the_reference_around_its_tiles_and_checkpoints() {
    // L around the 8-step checkpoints, the 16-step gradient tiles and the
    // forward's 32-step tiles; one step.
    for (i, len) in [1, 7, 8, 9, 15, 16, 17, 31, 33, 47, 65].into_iter().enumerate() {
        run_case(Case { len, x0: i % 2 == 0, ..BASE }, 10 + i as u64);
    }
}

#[test]
fn the_tile_backward_matches_the_reference_on_batches_groups_and_states_past_n() {
    // Two batches of two blocks, B and C in groups of 32 and of 64 channels.
    run_case(Case { batch: 2, dim: 64, len: 21, b_groups: 2, c_groups: 1, ..BASE }, 30);
    // N below 16 (states past N stay 0) on 4 warps, and N up to 8 on 2.
    run_case(Case { state: 13, len: 19, ..BASE }, 31);
    run_case(Case { state: 8, warps: 2, rotated: false, len: 37, ..BASE }, 32);
    run_case(Case { state: 5, warps: 2, rotated: true, len: 12, batch: 2, x0: true, ..BASE }, 33);
}

#[test]
fn the_tile_backward_with_narrow_steps_matches_the_reference() {
    let narrow = Case { narrow: true, ..BASE };
    run_case(narrow, 60);
    run_case(Case { d: false, z: false, bias: false, softplus: false, x0: true, ..narrow }, 61);
    for (i, len) in [1, 8, 15, 17, 33].into_iter().enumerate() {
        run_case(Case { len, x0: i % 2 == 1, ..narrow }, 62 + i as u64);
    }
    run_case(Case { batch: 2, dim: 64, len: 21, b_groups: 2, c_groups: 1, ..narrow }, 70);
    run_case(Case { state: 13, len: 19, ..narrow }, 71);
    run_case(Case { state: 6, warps: 2, len: 37, ..narrow }, 72);
}

/// The narrow kernel's shapes for the forms of its sums over rows, each with
/// a seed from `first_seed`: rows of 1 to 3 tiles, the last one whole or
/// padded with steps past L, N below 16, groups, and two warps.
fn row_sum_cases(first_seed: u64) -> impl Iterator<Item = (Case, u64)> {
    let narrow = Case { narrow: true, ..BASE };
    [
        narrow,
        Case { len: 1, ..narrow },
        Case { len: 5, x0: true, ..narrow },
        Case { len: 37, d: false, z: false, bias: false, softplus: false, ..narrow },
        Case { batch: 2, dim: 64, len: 21, b_groups: 2, c_groups: 1, ..narrow },
        Case { state: 13, len: 19, ..narrow },
        Case { state: 6, warps: 2, len: 37, ..narrow },
    ]
    .into_iter()
    .zip(first_seed..)
}

#[test]
fn the_pipelined_sums_over_rows_give_the_plain_kernels_bits() {
    // The same additions in the same order, spread over five steps: every
    // output bit for bit the narrow kernel's (every tile fills and drains
    // the pipeline).
    for (case, seed) in row_sum_cases(80) {
        let plain = run_case(case, seed);
        let piped = run_case(Case { piped: true, ..case }, seed);
        assert!(plain == piped, "{case:?}: the pipelined sums gave other bits");
    }
}

#[test]
fn the_short_sums_over_rows_give_the_plain_kernels_bits() {
    // Three stages of the reduce-scatter in the scan, the last two's adds
    // in the finish, in their order: every output bit for bit the narrow
    // kernel's, alone and with the pipeline (three stages deep then).
    for (case, seed) in row_sum_cases(90) {
        let plain = run_case(case, seed);
        let short = run_case(Case { short: true, ..case }, seed);
        assert!(plain == short, "{case:?}: the short sums gave other bits");
        let both = run_case(Case { short: true, piped: true, ..case }, seed);
        assert!(plain == both, "{case:?}: the pipelined short sums gave other bits");
    }
}
