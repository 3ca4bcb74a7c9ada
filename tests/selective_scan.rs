//! The selective scan on the CPU and the GPU against the f64 reference
//! (`scan::selective::reference`), within mamba_ssm's own f32 tolerances
//! (rtol 6e-4, atol 2e-3):
//!
//! * N in {1, 4, 16, 64}, L from 1 to 2^17, batch x dim from 1 x 1 to
//!   8 x 1536, on one CPU thread and on several (rows split across threads,
//!   and few rows cut into chunks along L), and on the GPU (chunks of 2048
//!   steps carrying the state; `#[ignore]`d: they need a CUDA GPU);
//! * B and C varying (with groups) and fixed;
//! * every optional argument present and absent;
//! * resuming from the last state of the first half equals the whole;
//! * `selective_scan_into` gives `selective_scan`'s results bit for bit in
//!   a reused output of any earlier sizes, with and without the last state;
//! * wrong shapes are errors naming the argument.

use scan::cuda::SelectiveKernelChoice;
use scan::selective::{reference, Projection, SelectiveScan, SsmOutput, SsmShape};
use scan::{Cpu, Error, Result};
use scan_testing::Rng;

const RTOL: f64 = 6e-4;
const ATOL: f64 = 2e-3;

/// Random inputs of one shape, as mamba_ssm's tests draw them (decaying A,
/// positive delta).
struct Inputs {
    shape: SsmShape,
    u: Vec<f32>,
    delta: Vec<f32>,
    a: Vec<f32>,
    b: Vec<f32>,
    c: Vec<f32>,
    b_fixed: Vec<f32>,
    c_fixed: Vec<f32>,
    d: Vec<f32>,
    z: Vec<f32>,
    bias: Vec<f32>,
    init: Vec<f32>,
    groups: usize,
}

impl Inputs {
    fn new(rng: &mut Rng, shape: SsmShape, groups: usize) -> Inputs {
        Inputs::decaying(rng, shape, groups, (-1.5, -0.5))
    }

    /// With `A` drawn from `a` (near 0: a state that outlives thousands of
    /// steps, so chunk boundaries matter).
    fn decaying(rng: &mut Rng, shape: SsmShape, groups: usize, a: (f64, f64)) -> Inputs {
        let SsmShape { batch, dim, len, state } = shape;
        let mut v = |n: usize, lo: f64, hi: f64| rng.vec(n, |r| r.range_f64(lo, hi) as f32);
        Inputs {
            shape,
            u: v(batch * dim * len, -1.0, 1.0),
            delta: v(batch * dim * len, 0.0, 0.5),
            a: v(dim * state, a.0, a.1),
            b: v(batch * groups * state * len, -1.0, 1.0),
            c: v(batch * groups * state * len, -1.0, 1.0),
            b_fixed: v(dim * state, -1.0, 1.0),
            c_fixed: v(dim * state, -1.0, 1.0),
            d: v(dim, -1.0, 1.0),
            z: v(batch * dim * len, -2.0, 2.0),
            bias: v(dim, -0.3, 0.3),
            init: v(batch * dim * state, -1.0, 1.0),
            groups,
        }
    }

    /// The arguments with `options` (bits: D, z, bias + softplus, initial
    /// state, fixed B, fixed C).
    fn args(&self, options: u32) -> SelectiveScan<'_> {
        let on = |bit: u32| options & (1 << bit) != 0;
        let groups = self.groups;
        let b = if on(4) { Projection::Fixed(&self.b_fixed) } else { Projection::Varying { data: &self.b, groups } };
        let c = if on(5) { Projection::Fixed(&self.c_fixed) } else { Projection::Varying { data: &self.c, groups } };
        let mut args = SelectiveScan::new(self.shape, &self.u, &self.delta, &self.a, b, c).return_last_state(true);
        if on(0) {
            args = args.d(&self.d);
        }
        if on(1) {
            args = args.z(&self.z);
        }
        if on(2) {
            args = args.delta_bias(&self.bias).delta_softplus(true);
        }
        if on(3) {
            args = args.initial_state(&self.init);
        }
        args
    }
}

/// A backend's selective scan.
type Run<'a> = &'a dyn Fn(&SelectiveScan<'_>) -> Result<SsmOutput>;

fn check(run: Run<'_>, ctx: &str, args: &SelectiveScan<'_>) {
    let (want, want_last) = reference(args).unwrap();
    let got = run(args).unwrap();
    let close = |g: f32, w: f64| (f64::from(g) - w).abs() <= ATOL + RTOL * w.abs();
    if let Some(i) = (0..want.len()).find(|&i| !close(got.out[i], want[i])) {
        panic!("{ctx}: out[{i}] = {}, want {} ({:?})", got.out[i], want[i], args.shape);
    }
    let (got_last, want_last) = (got.last_state.unwrap(), want_last.unwrap());
    if let Some(i) = (0..want_last.len()).find(|&i| !close(got_last[i], want_last[i])) {
        panic!("{ctx}: last_state[{i}] = {}, want {} ({:?})", got_last[i], want_last[i], args.shape);
    }
}

/// The CUDA GPU's selective scan (a test that cannot open it fails).
fn gpu() -> scan::cuda::Cuda {
    scan::cuda::Cuda::new().unwrap_or_else(|e| panic!("this test needs a CUDA GPU: {e}"))
}

fn cpu_run(cpu: &Cpu) -> impl Fn(&SelectiveScan<'_>) -> Result<SsmOutput> + '_ {
    move |args| cpu.selective_scan(args)
}

fn gpu_run(cuda: &scan::cuda::Cuda) -> impl Fn(&SelectiveScan<'_>) -> Result<SsmOutput> + '_ {
    move |args| cuda.selective_scan(args)
}

#[test]
fn the_cpu_matches_the_reference_on_every_shape_and_option() {
    let (one, four) = (Cpu::new().with_threads(1), Cpu::new().with_threads(4));
    every_shape_and_option(&[("1 thread", &cpu_run(&one)), ("4 threads", &cpu_run(&four))]);
    // No steps: no output, the last state the initial one (or zeros).
    let mut rng = Rng::fresh("selective scan no steps");
    let inputs = Inputs::new(&mut rng, SsmShape { batch: 2, dim: 12, len: 0, state: 4 }, 3);
    for options in [0u32, 8, 15, 63] {
        for (name, run) in [("1 thread", &cpu_run(&one)), ("4 threads", &cpu_run(&four))] {
            check(run, &format!("L = 0, {name}, options {options:#b}"), &inputs.args(options));
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn the_gpu_matches_the_reference_on_every_shape_and_option() {
    let cuda = gpu();
    every_shape_and_option(&[("GPU", &gpu_run(&cuda))]);
}

/// The lane-group kernel (forced, and as Auto picks it for many short rows):
/// every kernel shape (S lanes per row, about four states per lane), N below
/// what the shape holds (idle states), rows that end inside a warp, partial
/// and unaligned blocks of steps (the checked path), rows of several whole
/// blocks (the unchecked path, the next block's loads running ahead of the
/// current one's work), and as many states as the kernel takes; and two
/// rows per lane (forced: N = 16 with even channels per group, else the
/// one-row kernel), with rows ending inside a warp.
#[test]
#[ignore = "needs a CUDA GPU"]
fn the_gpu_lane_group_kernel_matches_the_reference() {
    use scan::cuda::{SelectiveKernelChoice, Tuning};
    let auto = gpu();
    let forced = gpu().with_tuning(Tuning::default().selective_kernel(SelectiveKernelChoice::Lanes));
    let pairs = gpu().with_tuning(Tuning::default().selective_kernel(SelectiveKernelChoice::LanePairs));
    let mut rng = Rng::fresh("selective scan lane groups");
    // (batch, dim, L, N, groups)
    let shapes = [
        (64, 1024, 5, 1, 1),
        (32, 1024, 9, 2, 2),
        (8, 2048, 40, 4, 1),
        (4, 2048, 20, 5, 2),
        (2, 2048, 300, 8, 1),
        (8, 1536, 33, 16, 4),
        (4, 1024, 17, 64, 2),
        (2, 512, 7, 256, 1),
        (1, 3, 1, 16, 1),
        (2, 5, 4097, 16, 1),
        (1, 7, 1001, 3, 1),
        (3, 4, 2050, 33, 2),
        (1, 9, 515, 128, 1),
        (2, 6, 77, 16, 3),
        // L a multiple of 4 and of more than two blocks: the unchecked path
        // with its prefetch across blocks, for every kernel shape (N = 1,
        // 2: one lane per row, P odd and even; 3, 20, 100, 200: idle
        // states; 32, 64, 128, 256: full), and rows ending inside a warp.
        (8, 512, 36, 1, 1),
        (4, 512, 44, 2, 2),
        (4, 512, 28, 3, 1),
        (2, 64, 400, 16, 2),
        (1, 7, 48, 16, 1),
        (2, 256, 100, 20, 2),
        (2, 256, 68, 32, 1),
        (1, 40, 36, 64, 1),
        (1, 64, 132, 100, 1),
        (1, 16, 160, 128, 1),
        (1, 32, 196, 200, 1),
        (1, 8, 96, 256, 1),
        // At least 12288 rows of more than 192 steps, N 9 to 16: the lane
        // kernel's long rows (forced; Auto takes the tile kernel there).
        (8, 1536, 260, 16, 4),
        (4, 3072, 203, 12, 2),
        // Two rows per lane: 16 rows per warp, the last warp partly live.
        (1, 18, 40, 16, 1),
        (3, 32, 400, 16, 2),
        (2, 20, 4100, 16, 5),
    ];
    for (batch, dim, len, state, groups) in shapes {
        let inputs = Inputs::new(&mut rng, SsmShape { batch, dim, len, state }, groups);
        for options in [0u32, 1, 2, 4, 8, 16, 32, 15, 63] {
            let args = inputs.args(options);
            check(&gpu_run(&forced), &format!("lane groups forced, options {options:#b}"), &args);
            check(&gpu_run(&pairs), &format!("lane pairs forced, options {options:#b}"), &args);
            check(&gpu_run(&auto), &format!("lane groups or Auto's choice, options {options:#b}"), &args);
        }
    }
}

/// The tile kernel (32 channels per block, a warp per 4 states; forced):
/// lengths around its 32-step tiles, aligned (L a multiple of 4) and not,
/// N from 1 to 16 on both compiled widths (2 and 4 warps) with idle states,
/// groups of 32 and more channels, every option; and shapes it cannot take
/// (channels not in runs of 32 sharing B and C, fixed B or C, N past 16),
/// which fall back to Auto's choice.
#[test]
#[ignore = "needs a CUDA GPU"]
fn the_gpu_tile_kernel_matches_the_reference() {
    let mut rng = Rng::fresh("selective scan tiles");
    // (batch, dim, L, N, groups)
    let shapes = [
        (1, 32, 1, 16, 1),
        (2, 32, 31, 16, 1),
        (1, 64, 32, 16, 2),
        (2, 64, 33, 13, 1),
        (1, 96, 64, 8, 3),
        (1, 32, 65, 5, 1),
        (3, 32, 100, 4, 1),
        (1, 64, 129, 1, 1),
        (1, 32, 300, 9, 1),
        // Not taken: dim 48 (runs of 32 cross a batch), a group of 16
        // channels, N = 17.
        (2, 48, 40, 16, 1),
        (1, 64, 40, 16, 4),
        (1, 32, 40, 17, 1),
    ];
    tile_kernel_shapes(&mut rng, &shapes, (-1.5, -0.5), SelectiveKernelChoice::Tiles);
}

/// The tile kernel's other compiled shapes (with and without a register
/// bound, outputs kept over 4, 8 or 16 steps), forced, on shapes around
/// their tiles (N = 16, and N below it), and one long row; each shape the
/// tile kernels take must run the kernel asked for (a fallback would pass
/// without testing it). `SCAN_TEST_TILE_SHAPES=4x0x4,...` runs only those
/// named (as `SCAN_CUDA_SELECTIVE_KERNEL=tiles:...` names them), for
/// compute-sanitizer; `SCAN_TEST_SHORT_ROWS=1` drops the long row (for
/// racecheck).
#[test]
#[ignore = "needs a CUDA GPU"]
fn the_gpu_tile_kernel_shapes_match_the_reference() {
    let named = std::env::var("SCAN_TEST_TILE_SHAPES").unwrap_or_else(|_| "4x0x4,4x3x8,4x3x16".to_string());
    let mut rng = Rng::fresh("selective scan tile shapes");
    let shapes = [
        (1, 32, 1, 16, 1),
        (2, 64, 33, 13, 1),
        (1, 64, 64, 16, 2),
        (1, 64, 65, 9, 2),
        (1, 64, 100, 16, 2),
        (1, 32, 129, 16, 1),
        (1, 32, 4100, 16, 1),
    ];
    let shapes = if std::env::var_os("SCAN_TEST_SHORT_ROWS").is_some() { &shapes[..6] } else { &shapes[..] };
    for name in named.split(',').filter(|n| !n.is_empty()) {
        let choice = SelectiveKernelChoice::parse(&format!("tiles:{name}"))
            .unwrap_or_else(|| panic!("SCAN_TEST_TILE_SHAPES: {name:?} is not GxBxY"));
        tile_kernel_shapes(&mut rng, shapes, (-0.5, -0.01), choice);
    }
}

/// The tile kernel (forced) on long rows, with a state that barely decays:
/// every tile's result depends on the states carried into it. (Apart from
/// the shapes above so that compute-sanitizer can run those alone.)
#[test]
#[ignore = "needs a CUDA GPU"]
fn the_gpu_tile_kernel_carries_long_rows() {
    let mut rng = Rng::fresh("selective scan tiles, long rows");
    let shapes = [(2, 128, 4096, 16, 2), (1, 32, 4097, 9, 1), (1, 32, 1 << 15, 16, 1)];
    tile_kernel_shapes(&mut rng, &shapes, (-0.05, -0.001), SelectiveKernelChoice::Tiles);
}

/// Each (batch, dim, L, N, groups) shape on a tile kernel (`choice`,
/// forced), with every option, A drawn from `a`.
fn tile_kernel_shapes(
    rng: &mut Rng,
    shapes: &[(usize, usize, usize, usize, usize)],
    a: (f64, f64),
    choice: SelectiveKernelChoice,
) {
    use scan::cuda::Tuning;
    let cuda = gpu().with_tuning(Tuning::default().selective_kernel(choice));
    let run = gpu_run(&cuda);
    for &(batch, dim, len, state, groups) in shapes {
        let inputs = Inputs::decaying(rng, SsmShape { batch, dim, len, state }, groups, a);
        // A shape the tile kernels take runs the kernel asked for, not a
        // fallback (which would pass without testing it).
        let takes = state <= 16 && (dim / groups) % 32 == 0;
        let wanted = match choice {
            SelectiveKernelChoice::TileShape(g, b, y) if 4 * g as usize >= state => {
                Some(format!("selective_scan_tiles_{g}_{y}{}", if b > 0 { format!("_{b}") } else { String::new() }))
            }
            SelectiveKernelChoice::Tiles => Some("selective_scan_tiles_".to_string()),
            _ => None,
        };
        if let (true, Some(wanted)) = (takes, wanted) {
            let on_device = cuda.upload_selective(&inputs.args(0)).unwrap();
            let name = cuda.selective_kernel_name(&on_device);
            // The tile shape asked for exactly; `Tiles`, any tile kernel.
            let ok = if choice == SelectiveKernelChoice::Tiles { name.starts_with(&wanted) } else { name == wanted };
            assert!(ok, "{choice:?} on {batch} x {dim} x {len}, N {state}: runs {name}, not {wanted}");
        }
        for options in [0u32, 1, 2, 4, 8, 16, 32, 15, 63] {
            check(&run, &format!("{choice:?} forced, options {options:#b}"), &inputs.args(options));
        }
    }
}

/// The channel-group kernels (K = 2 and 4 channels per block, and 2 per
/// one-warp block, forced): on shapes where K divides the channels of every
/// group of B and C (and, for the other shapes and for fixed B or C, the
/// block scan they fall back to), with every option, lengths around their
/// 1024-, 512- and 256-step chunks.
#[test]
#[ignore = "needs a CUDA GPU"]
fn the_gpu_channel_group_kernels_match_the_reference() {
    use scan::cuda::{SelectiveKernelChoice, Tuning};
    let mut rng = Rng::fresh("selective scan channel groups");
    // (batch, dim, L, N, groups)
    let shapes = [
        (1, 4, 1, 1, 1),
        (2, 8, 511, 16, 2),
        (1, 4, 513, 4, 1),
        (2, 16, 1025, 16, 4),
        (1, 8, 4096, 16, 1),
        (3, 12, 100, 64, 3),
        (1, 6, 77, 16, 3),
        (2, 4, 257, 8, 2),
    ];
    let choices = [
        SelectiveKernelChoice::Channels(2),
        SelectiveKernelChoice::Channels(4),
        SelectiveKernelChoice::ChannelsPerWarp(2),
    ];
    for choice in choices {
        let cuda = gpu().with_tuning(Tuning::default().selective_kernel(choice));
        let run = gpu_run(&cuda);
        for (batch, dim, len, state, groups) in shapes {
            let inputs = Inputs::new(&mut rng, SsmShape { batch, dim, len, state }, groups);
            for options in [0u32, 1, 2, 4, 8, 16, 32, 15, 63] {
                check(&run, &format!("{choice:?}, options {options:#b}"), &inputs.args(options));
            }
        }
    }
}

fn every_shape_and_option(runs: &[(&str, Run<'_>)]) {
    let mut rng = Rng::fresh("selective scan shapes");
    // (batch, dim, L, N, groups): every N, lengths around 256 and 4096,
    // many rows with short sequences and few rows with long ones.
    let shapes = [
        (1, 1, 1, 1, 1),
        (1, 1, 2, 4, 1),
        (2, 3, 7, 16, 1),
        (1, 4, 255, 4, 2),
        (2, 2, 256, 64, 2),
        (1, 2, 257, 16, 1),
        (1, 1, 2048, 16, 1),
        (2, 1, 4097, 4, 1),
        (1, 1, 1 << 17, 4, 1),
        (8, 1536, 3, 1, 4),
    ];
    for (batch, dim, len, state, groups) in shapes {
        let inputs = Inputs::new(&mut rng, SsmShape { batch, dim, len, state }, groups);
        // Every option alone, none, and all at once; fixed B and C too.
        for options in [0u32, 1, 2, 4, 8, 16, 32, 15, 63] {
            for (name, run) in runs {
                check(*run, &format!("{name}, options {options:#b}"), &inputs.args(options));
            }
        }
    }
}

/// The CPU runs eight rows at a time (a block of channels sharing their
/// group of B and C, a lane each): dims and groups that cut blocks short
/// (groups of 4, of 10, a last block of one row), steps around its chunks
/// of 64, every option; with every row in a whole block, the outputs are
/// bitwise the same on 1 to 8 threads.
#[test]
fn the_cpu_blocks_of_rows_follow_the_groups_and_the_threads_change_nothing() {
    let mut rng = Rng::fresh("selective scan cpu blocks");
    let one = Cpu::new().with_threads(1);
    // (batch, dim, L, N, groups)
    for (batch, dim, len, state, groups) in [(2, 12, 65, 3, 3), (1, 20, 63, 8, 2), (3, 9, 130, 5, 1), (2, 17, 64, 2, 1)]
    {
        let inputs = Inputs::new(&mut rng, SsmShape { batch, dim, len, state }, groups);
        for options in [0u32, 1, 2, 4, 8, 16, 32, 15, 63] {
            let args = inputs.args(options);
            check(&cpu_run(&one), &format!("blocks, options {options:#b}"), &args);
            let first = one.selective_scan(&args).unwrap();
            for threads in 2..=8 {
                let again = Cpu::new().with_threads(threads).selective_scan(&args).unwrap();
                assert_eq!(again, first, "{:?}, options {options:#b}, {threads} threads", args.shape);
            }
        }
    }
}

/// No rows (batch or dim 0) with rows long enough to be cut along L: empty
/// outputs, no panic, on any number of threads; the backward too.
#[test]
fn no_rows_with_long_sequences_give_empty_results() {
    for (batch, dim) in [(0, 1), (1, 0), (0, 0)] {
        let shape = SsmShape { batch, dim, len: 4096, state: 2 };
        let (a, bc) = (vec![-1.0f32; dim * 2], vec![0.5f32; batch * 2 * 4096]);
        let b = Projection::Varying { data: &bc, groups: 1 };
        let args = SelectiveScan::new(shape, &[], &[], &a, b, b).return_last_state(true);
        for threads in [1, 2, 4] {
            let cpu = Cpu::new().with_threads(threads);
            let got = cpu.selective_scan(&args).unwrap();
            assert!(got.out.is_empty() && got.last_state == Some(vec![]), "{shape:?}, {threads} threads");
            let grads = cpu.selective_scan_backward(&args, &[]).unwrap();
            assert!(grads.du.is_empty(), "{shape:?}, {threads} threads");
            assert!(grads.da.len() == dim * 2 && grads.da.iter().all(|&v| v == 0.0), "{shape:?}: dA");
            assert!(grads.db.iter().all(|&v| v == 0.0) && grads.db.len() == bc.len(), "{shape:?}: dB");
        }
    }
}

/// A zero dim empties every argument, so nothing but the shape's own check
/// bounds batch and N: huge ones beside a zero are refused when a point per
/// (batch, dim, L, N), each 0 counted as 1, could not be addressed, and
/// return empty results at once otherwise (they used to loop over every
/// batch, or overflow or allocate by N alone).
#[test]
fn huge_dimensions_beside_an_empty_one_are_refused_or_done_at_once() {
    let empty: [f32; 0] = [];
    let fixed = Projection::Fixed(&empty);
    let cpu = Cpu::new().with_threads(2);
    for (batch, len, state) in [(1usize << 40, 1, 1), (1 << 40, 300, 1), (1, 1, 1 << 40), (1 << 20, 5, 1 << 20)] {
        let shape = SsmShape { batch, dim: 0, len, state };
        let args = SelectiveScan::new(shape, &empty, &empty, &empty, fixed, fixed).return_last_state(true);
        let got = cpu.selective_scan(&args).unwrap();
        assert!(got.out.is_empty() && got.last_state == Some(vec![]), "{shape:?}");
        let (saved_out, saved) = cpu.selective_scan_saving(&args).unwrap();
        assert!(saved_out.out.is_empty(), "{shape:?}: saving");
        let grads = cpu.selective_scan_backward(&args, &empty).unwrap();
        assert!(grads.du.is_empty() && grads.da.is_empty() && grads.db.is_empty(), "{shape:?}: backward");
        let again = cpu.selective_scan_backward_saved(&args, &saved, &empty).unwrap();
        assert!(again.du.is_empty() && again.dc.is_empty(), "{shape:?}: backward from saved states");
        let (out, last) = reference(&args).unwrap();
        assert!(out.is_empty() && last == Some(vec![]), "{shape:?}: reference");
        let grads = scan::selective::backward::reference_backward(&args, &empty).unwrap();
        assert!(grads.du.is_empty(), "{shape:?}: reference backward");
    }
    // Varying B and C in huge groups (dividing dim = 0) at L = 0: empty
    // arrays whose other dimensions multiply past usize are shaped right
    // (they were refused as "more items than fit in memory").
    let varying = Projection::Varying { data: &empty, groups: 1 << 30 };
    let shape = SsmShape { batch: 1 << 40, dim: 0, len: 0, state: 1 };
    let args = SelectiveScan::new(shape, &empty, &empty, &empty, varying, varying);
    let got = cpu.selective_scan(&args).unwrap();
    assert!(got.out.is_empty(), "{shape:?}, groups of 2^30");
    let grads = cpu.selective_scan_backward(&args, &empty).unwrap();
    assert!(grads.db.is_empty() && grads.dc.is_empty(), "{shape:?}, groups of 2^30: backward");
    for (batch, len, state) in [(1usize << 62, 1, 1), (1, 1, usize::MAX), (1 << 31, 1 << 31, 2), (1, 0, 1 << 61)] {
        let shape = SsmShape { batch, dim: 0, len, state };
        let args = SelectiveScan::new(shape, &empty, &empty, &empty, fixed, fixed);
        for (what, got) in [
            ("forward", cpu.selective_scan(&args).map(drop)),
            ("backward", cpu.selective_scan_backward(&args, &empty).map(drop)),
            ("reference", reference(&args).map(drop)),
        ] {
            assert!(matches!(got, Err(Error::TooLarge { .. })), "{shape:?}: {what} gave {got:?}");
        }
    }
}

/// Rows without steps (L = 0) train at once however many there are: the
/// training forward and the backward from its states cut no blocks of rows
/// (they listed 2^37 blocks for 2^40 rows and refused the shape as too
/// large, where the plain forward and backward returned at once; found by
/// the thirty-fifth session's review).
#[test]
fn huge_row_counts_without_steps_train_at_once() {
    rows_without_steps_return_at_once(&scan::Device::cpu());
}

/// The same on the GPU, whose forward planned a block per row and refused
/// 2^40 rows as more blocks than a grid takes (a helper's review): with no
/// step it launches nothing, and the last state is the starting one or
/// zeros.
#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_rows_without_steps_return_at_once() {
    let device = scan::Device::cuda().unwrap_or_else(|e| panic!("this test needs a CUDA GPU: {e}"));
    rows_without_steps_return_at_once(&device);
}

fn rows_without_steps_return_at_once(device: &scan::Device) {
    let empty: [f32; 0] = [];
    let per_channel = vec![-1.0f32; 1 << 20];
    let fixed = Projection::Fixed(&per_channel);
    let shape = SsmShape { batch: 1 << 20, dim: 1 << 20, len: 0, state: 1 };
    let args = SelectiveScan::new(shape, &empty, &empty, &per_channel, fixed, fixed);
    let plain = device.selective_scan(&args).expect("forward");
    assert!(plain.out.is_empty() && plain.last_state.is_none());
    let (out, saved) = device.selective_scan_for_training(&args).expect("training forward");
    assert!(out.out.is_empty() && out.last_state.is_none());
    let grads = device.selective_scan_backward_saved(&saved, &empty).expect("backward from the saved states");
    assert!(grads.du.is_empty() && grads.ddelta.is_empty());
    assert!(grads.da.len() == per_channel.len() && grads.da.iter().all(|&v| v == 0.0), "dA");
    assert_eq!(grads, device.selective_scan_backward(&args, &empty).expect("backward"));
    // The last state of no step: the starting one, or zeros.
    let shape = SsmShape { batch: 2, dim: 3, len: 0, state: 4 };
    let (a, b) = (vec![-1.0f32; 12], vec![0.5f32; 12]);
    let start: Vec<f32> = (0..24).map(|i| i as f32 - 7.5).collect();
    let args = SelectiveScan::new(shape, &empty, &empty, &a, Projection::Fixed(&b), Projection::Fixed(&b))
        .return_last_state(true);
    assert_eq!(device.selective_scan(&args).unwrap().last_state, Some(vec![0.0; 24]));
    let args = args.initial_state(&start);
    assert_eq!(device.selective_scan(&args).unwrap().last_state.as_ref(), Some(&start));
    assert_eq!(device.selective_scan_for_training(&args).unwrap().0.last_state.as_ref(), Some(&start));
}

/// Few rows on several threads are cut into chunks along L; with a state
/// that barely decays, every chunk's result depends on its carried start.
#[test]
fn chunks_along_the_sequence_carry_the_state() {
    chunks_carry_the_state(&cpu_run(&Cpu::new().with_threads(4)));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_chunks_along_the_sequence_carry_the_state() {
    let cuda = gpu();
    chunks_carry_the_state(&gpu_run(&cuda));
}

fn chunks_carry_the_state(run: Run<'_>) {
    let mut rng = Rng::fresh("selective scan chunks");
    for (batch, dim, len) in [(1, 1, 8192), (1, 2, 5000), (1, 3, 2048 + 7), (2, 2, 4096 + 1)] {
        let inputs = Inputs::decaying(&mut rng, SsmShape { batch, dim, len, state: 4 }, 1, (-0.002, 0.0));
        for options in [0u32, 8, 15, 63] {
            check(run, &format!("slow decay, options {options:#b}"), &inputs.args(options));
        }
    }
}

#[test]
fn resuming_from_the_last_state_of_the_first_half_equals_the_whole() {
    let (one, four) = (Cpu::new().with_threads(1), Cpu::new().with_threads(4));
    resuming_equals_the_whole(&cpu_run(&one));
    resuming_equals_the_whole(&cpu_run(&four));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn the_gpu_resumes_from_the_last_state_of_the_first_half() {
    let cuda = gpu();
    resuming_equals_the_whole(&gpu_run(&cuda));
}

fn resuming_equals_the_whole(run: Run<'_>) {
    let mut rng = Rng::fresh("selective scan resume");
    let (batch, dim, len, state) = (2, 3, 4000, 8);
    let whole = Inputs::new(&mut rng, SsmShape { batch, dim, len, state }, 1);
    let half = len / 2;
    // The first and second halves of every (batch, dim[, N]) row.
    let split = |x: &[f32], rows: usize, inner: usize, second: bool| -> Vec<f32> {
        let per = x.len() / rows / inner;
        let (lo, hi) = if second { (half, per) } else { (0, half) };
        (0..rows * inner).flat_map(|r| x[r * per + lo..r * per + hi].to_vec()).collect()
    };
    {
        let all = run(&whole.args(0b111)).unwrap();
        let part = |second: bool, init: Option<&[f32]>| {
            let shape = SsmShape { batch, dim, len: half, state };
            let (u, delta, z) = (
                split(&whole.u, batch * dim, 1, second),
                split(&whole.delta, batch * dim, 1, second),
                split(&whole.z, batch * dim, 1, second),
            );
            let (b, c) = (split(&whole.b, batch, state, second), split(&whole.c, batch, state, second));
            let vary = |data| Projection::Varying { data, groups: 1 };
            let mut args = SelectiveScan::new(shape, &u, &delta, &whole.a, vary(&b), vary(&c))
                .d(&whole.d)
                .z(&z)
                .delta_bias(&whole.bias)
                .delta_softplus(true)
                .return_last_state(true);
            if let Some(init) = init {
                args = args.initial_state(init);
            }
            run(&args).unwrap()
        };
        let first = part(false, None);
        let second = part(true, first.last_state.as_deref());
        let joined: Vec<f32> = (0..batch * dim)
            .flat_map(|r| first.out[r * half..(r + 1) * half].iter().chain(&second.out[r * half..(r + 1) * half]))
            .copied()
            .collect();
        for (i, (j, w)) in joined.iter().zip(&all.out).enumerate() {
            assert!((j - w).abs() <= 1e-4 * (1.0 + w.abs()), "out[{i}]: resumed {j}, whole {w}");
        }
        for (i, (j, w)) in second.last_state.unwrap().iter().zip(all.last_state.as_ref().unwrap()).enumerate() {
            assert!((j - w).abs() <= 1e-4 * (1.0 + w.abs()), "last_state[{i}]: resumed {j}, whole {w}");
        }
    }
}

#[test]
fn wrong_shapes_are_errors_that_name_the_argument() {
    wrong_shapes_are_errors(&cpu_run(&Cpu::new()));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn wrong_shapes_are_errors_on_the_gpu_too() {
    let cuda = gpu();
    wrong_shapes_are_errors(&gpu_run(&cuda));
}

fn wrong_shapes_are_errors(run: Run<'_>) {
    let mut rng = Rng::fresh("selective scan shapes wrong");
    let inputs = Inputs::new(&mut rng, SsmShape { batch: 2, dim: 4, len: 5, state: 3 }, 2);
    let args = inputs.args(0b1111);
    let expect = |args: SelectiveScan<'_>, name: &str| {
        let err = run(&args).unwrap_err();
        assert!(matches!(&err, Error::WrongShape { argument, .. } if argument == name), "{name}: {err}");
        eprintln!("{err}");
    };
    expect(SelectiveScan { u: &inputs.u[1..], ..args }, "u");
    expect(SelectiveScan { delta: &inputs.delta[..3], ..args }, "delta");
    expect(SelectiveScan { a: &inputs.a[1..], ..args }, "A");
    expect(SelectiveScan { b: Projection::Varying { data: &inputs.b, groups: 3 }, ..args }, "B");
    expect(SelectiveScan { c: Projection::Fixed(&inputs.c_fixed[1..]), ..args }, "C");
    expect(SelectiveScan { d: Some(&inputs.d[1..]), ..args }, "D");
    expect(SelectiveScan { z: Some(&inputs.z[1..]), ..args }, "z");
    expect(SelectiveScan { delta_bias: Some(&inputs.bias[1..]), ..args }, "delta_bias");
    expect(SelectiveScan { initial_state: Some(&inputs.init[1..]), ..args }, "initial_state");
    let err = run(&SelectiveScan { u: &inputs.u[1..], ..args }).unwrap_err();
    let text = err.to_string();
    assert!(text.contains("(batch, dim, L) = (2, 4, 5), 40 items") && text.contains("found 39 items"), "{text}");
    let zero = SsmShape { state: 0, ..inputs.shape };
    expect(SelectiveScan { shape: zero, ..args }, "N");
}

/// The device-resident form: arguments uploaded once, run twice (the second
/// run overwrites the first's results with the same values), and a state
/// size past the 48 KiB default of shared memory.
#[test]
#[ignore = "needs a CUDA GPU"]
fn the_device_resident_form_runs_again_and_takes_large_states() {
    let cuda = gpu();
    let mut rng = Rng::fresh("selective scan device form");
    let inputs = Inputs::new(&mut rng, SsmShape { batch: 2, dim: 3, len: 3000, state: 16 }, 1);
    let args = inputs.args(0b1111);
    let mut on_device = cuda.upload_selective(&args).unwrap();
    cuda.run_selective(&mut on_device).unwrap();
    let first = on_device.download().unwrap();
    cuda.run_selective(&mut on_device).unwrap();
    assert_eq!(on_device.download().unwrap(), first, "a second run changed the results");
    check(&|_| Ok(first.clone()), "device form", &args);
    // N = 8192: 64 KiB of carried state in shared memory.
    let big = Inputs::new(&mut rng, SsmShape { batch: 1, dim: 1, len: 300, state: 8192 }, 1);
    check(&gpu_run(&cuda), "N = 8192", &big.args(0b1111));
}

/// bf16 and f16 activations (`u`, `delta`, `z`, `B`, `C`; f32 weights and
/// state), as mamba_ssm allows: against the f64 reference of the same
/// (exactly widened) values, with every option and without, and bit for bit
/// what the f32 scan of the widened values gives, since widening is exact.
#[test]
fn bf16_and_f16_activations_match_the_reference_and_their_widened_f32_scan() {
    use scan::maps::{bf16, f16};
    let mut rng = Rng::fresh("selective scan half");
    for (batch, dim, len, state, groups) in [(2, 3, 257, 16, 1), (1, 2, 4097, 4, 2), (8, 64, 33, 4, 4)] {
        let f = Inputs::new(&mut rng, SsmShape { batch, dim, len, state }, groups);
        let bf = |v: &[f32]| v.iter().map(|&x| bf16::from_f32(x)).collect::<Vec<_>>();
        let hf = |v: &[f32]| v.iter().map(|&x| f16::from_f32(x)).collect::<Vec<_>>();
        let (u, delta, b, c, z) = (bf(&f.u), bf(&f.delta), bf(&f.b), bf(&f.c), bf(&f.z));
        let (hu, hdelta, hb, hc, hz) = (hf(&f.u), hf(&f.delta), hf(&f.b), hf(&f.c), hf(&f.z));
        let plain = SelectiveScan::new(
            f.shape,
            &u,
            &delta,
            &f.a,
            Projection::Varying { data: &b, groups },
            Projection::Varying { data: &c, groups },
        )
        .return_last_state(true);
        let all = plain.d(&f.d).z(&z).delta_bias(&f.bias).delta_softplus(true).initial_state(&f.init);
        let half = SelectiveScan::new(
            f.shape,
            &hu,
            &hdelta,
            &f.a,
            Projection::Varying { data: &hb, groups },
            Projection::Fixed(&hc[..dim * state]),
        )
        .z(&hz)
        .return_last_state(true);
        let fixed_b = SelectiveScan::new(
            f.shape,
            &u,
            &delta,
            &f.a,
            Projection::Fixed(&b[..dim * state]),
            Projection::Varying { data: &c, groups },
        )
        .initial_state(&f.init)
        .return_last_state(true);
        // The widening itself, checked apart from `SsmInput`: the reference
        // of the bf16 arguments is the reference of their values converted
        // here, one by one, to f32.
        let wide = |v: &[bf16]| v.iter().map(|x| x.to_f32()).collect::<Vec<f32>>();
        let (wu, wdelta, wb, wc, wz) = (wide(&u), wide(&delta), wide(&b), wide(&c), wide(&z));
        let all_f32 = SelectiveScan::new(
            f.shape,
            &wu,
            &wdelta,
            &f.a,
            Projection::Varying { data: &wb, groups },
            Projection::Varying { data: &wc, groups },
        )
        .return_last_state(true)
        .d(&f.d)
        .z(&wz)
        .delta_bias(&f.bias)
        .delta_softplus(true)
        .initial_state(&f.init);
        assert_eq!(reference(&all).unwrap(), reference(&all_f32).unwrap());
        for cpu in [Cpu::new().with_threads(1), Cpu::new().with_threads(3)] {
            let threads = cpu.threads();
            check_half(&cpu, &format!("bf16, no options, {threads} threads"), &plain);
            check_half(&cpu, &format!("bf16, every option, {threads} threads"), &all);
            check_half(&cpu, &format!("f16, z and a fixed C, {threads} threads"), &half);
            check_half(&cpu, &format!("bf16, a fixed B and an initial state, {threads} threads"), &fixed_b);
        }
    }
}

/// `args` on `cpu` against the reference, and equal to the f32 scan of the
/// widened arguments.
fn check_half<T: scan::selective::SsmInput>(cpu: &Cpu, ctx: &str, args: &SelectiveScan<'_, T>) {
    let (want, want_last) = reference(args).unwrap();
    let got = cpu.selective_scan(args).unwrap();
    let close = |g: f32, w: f64| (f64::from(g) - w).abs() <= ATOL + RTOL * w.abs();
    if let Some(i) = (0..want.len()).find(|&i| !close(got.out[i], want[i])) {
        panic!("{ctx}: out[{i}] = {}, want {}", got.out[i], want[i]);
    }
    assert_eq!(got.out.len(), want.len(), "{ctx}: out's length");
    let (last, want_last) = (got.last_state.as_ref().unwrap(), want_last.unwrap());
    assert_eq!(last.len(), want_last.len(), "{ctx}: the last state's length");
    assert!(last.iter().zip(want_last).all(|(&g, w)| close(g, w)), "{ctx}: last state");
    let widened = args.widened();
    assert!(args.as_f32().is_none(), "{ctx}: not f32");
    assert_eq!(cpu.selective_scan(&widened.args()).unwrap(), got, "{ctx}: the widened f32 scan differs");
}

/// On the GPU through `Device`: bf16 and f16 activations (uploaded at their
/// own width and widened on the device for the f32 kernel) against the
/// reference, every option on, and bit for bit what the same kernel gives
/// for the activations widened on the host; and f32 arguments (passed
/// through as they are) equal to `Cuda::selective_scan`'s.
#[test]
#[ignore = "needs a CUDA GPU"]
fn the_gpu_takes_half_precision_activations_through_the_device() {
    use scan::maps::{bf16, f16};
    let cuda = gpu();
    let device = scan::Device::cuda().unwrap_or_else(|e| panic!("this test needs a CUDA GPU: {e}"));
    let mut rng = Rng::fresh("selective scan half gpu");
    let f = Inputs::new(&mut rng, SsmShape { batch: 4, dim: 96, len: 513, state: 16 }, 2);
    let close = |g: f32, w: f64| (f64::from(g) - w).abs() <= ATOL + RTOL * w.abs();
    let bf = |v: &[f32]| v.iter().map(|&x| bf16::from_f32(x)).collect::<Vec<_>>();
    let hf = |v: &[f32]| v.iter().map(|&x| f16::from_f32(x)).collect::<Vec<_>>();
    let (u, delta, b, c, z) = (bf(&f.u), bf(&f.delta), bf(&f.b), bf(&f.c), bf(&f.z));
    let (hu, hdelta, hb, hc, hz) = (hf(&f.u), hf(&f.delta), hf(&f.b), hf(&f.c), hf(&f.z));
    macro_rules! every_option {
        ($u:expr, $delta:expr, $b:expr, $c:expr, $z:expr) => {
            SelectiveScan::new(
                f.shape,
                $u,
                $delta,
                &f.a,
                Projection::Varying { data: $b, groups: 2 },
                Projection::Varying { data: $c, groups: 2 },
            )
            .d(&f.d)
            .z($z)
            .delta_bias(&f.bias)
            .delta_softplus(true)
            .initial_state(&f.init)
            .return_last_state(true)
        };
    }
    let bf_args = every_option!(&u, &delta, &b, &c, &z);
    let hf_args = every_option!(&hu, &hdelta, &hb, &hc, &hz);
    for (what, (want, want_last), got) in [
        ("bf16", reference(&bf_args).unwrap(), device.selective_scan(&bf_args).unwrap()),
        ("f16", reference(&hf_args).unwrap(), device.selective_scan(&hf_args).unwrap()),
    ] {
        assert_eq!(got.out.len(), want.len(), "{what}: out's length");
        assert!(got.out.iter().zip(&want).all(|(&g, &w)| close(g, w)), "{what}: out");
        let (last, want_last) = (got.last_state.unwrap(), want_last.unwrap());
        assert_eq!(last.len(), want_last.len(), "{what}: the last state's length");
        assert!(last.iter().zip(want_last).all(|(&g, w)| close(g, w)), "{what}: last state");
    }
    let f32_args = f.args(63);
    assert_eq!(device.selective_scan(&f32_args).unwrap(), cuda.selective_scan(&f32_args).unwrap());
    // Widened on the device, the activations are the f32 values the host
    // widening gives: the same kernel then gives the same bits.
    for (what, half, wide) in [
        ("bf16", device.selective_scan(&bf_args).unwrap(), cuda.selective_scan(&bf_args.widened().args()).unwrap()),
        ("f16", device.selective_scan(&hf_args).unwrap(), cuda.selective_scan(&hf_args.widened().args()).unwrap()),
    ] {
        assert_eq!(half, wide, "{what}: widened on the device against on the host");
    }
}

/// `Cuda::widen_to_f32` on every bf16 and f16 bit pattern (twice over, and
/// at lengths that leave each remainder of 4, and past two of the
/// widening loop's strides: its grid is at most 2048 x 256 threads, 2^21
/// values a stride) equals the `half` crate's conversion: the same bits,
/// but NaNs, which need only stay NaNs (`half` quiets bf16's signalling
/// ones; the device keeps their payload). f32 values are copied as they are.
#[test]
#[ignore = "needs a CUDA GPU"]
fn the_gpu_widens_every_half_precision_value_exactly() {
    use scan::maps::{bf16, f16};
    let cuda = gpu();
    fn check<H: scan::selective::SsmInput>(cuda: &scan::cuda::Cuda, what: &str, from_bits: impl Fn(u16) -> H) {
        let every: Vec<H> = (0..=u16::MAX).chain(0..=u16::MAX).map(&from_bits).collect();
        for len in [0, 1, 2, 3, 4, 5, 7, 1023, every.len(), (1 << 21) + 3, (1 << 22) + 4 * 1000 + 1] {
            let values: Vec<H> = every.iter().copied().cycle().take(len).collect();
            let on_device = cuda.upload(&values).unwrap();
            let wide = cuda.widen_to_f32(&on_device).unwrap().download().unwrap();
            assert_eq!(wide.len(), len, "{what}, {len} values: the length");
            for (i, (&got, want)) in wide.iter().zip(values.iter().map(|v| v.to_f32())).enumerate() {
                let same = got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan());
                assert!(same, "{what}, {len} values: [{i}] {got:e} ({:#x}), want {want:e}", got.to_bits());
            }
            assert!(bytes(&on_device.download().unwrap()) == bytes(&values), "{what}, {len} values: the input changed");
        }
    }
    /// The values' bytes (f32, bf16 and f16 are plain data).
    fn bytes<H>(values: &[H]) -> &[u8] {
        // SAFETY: every byte of these types is initialised (no padding).
        unsafe { std::slice::from_raw_parts(values.as_ptr().cast::<u8>(), std::mem::size_of_val(values)) }
    }
    check(&cuda, "bf16", bf16::from_bits);
    check(&cuda, "f16", f16::from_bits);
    check(&cuda, "f32", |b| f32::from_bits(u32::from(b).wrapping_mul(0x9e37_79b1)));
}

/// `selective_scan_into` on `device` against its `selective_scan`, one
/// output reused across shapes that grow, shrink and drop the last state
/// (poisoned between calls, so a value left from before shows).
fn scans_into_a_reused_output(device: &scan::Device, shapes: &[SsmShape]) {
    let mut rng = Rng::fresh("selective scan into");
    let mut output = SsmOutput { out: vec![f32::NAN; 7], last_state: Some(vec![f32::NAN; 3]) };
    for (k, &shape) in shapes.iter().enumerate() {
        let inputs = Inputs::new(&mut rng, shape, 1);
        for keep_last in [true, false, true] {
            let args = inputs.args(0b1111).return_last_state(keep_last);
            let want = device.selective_scan(&args).unwrap();
            output.out.iter_mut().for_each(|x| *x = f32::NAN);
            if let Some(last) = output.last_state.as_mut() {
                last.iter_mut().for_each(|x| *x = f32::NAN);
            }
            device.selective_scan_into(&args, &mut output).unwrap();
            let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert!(bits(&output.out) == bits(&want.out), "shape {k} {shape:?}, last state {keep_last}: out differs");
            assert_eq!(
                output.last_state.as_deref().map(bits),
                want.last_state.as_deref().map(bits),
                "shape {k} {shape:?}, last state {keep_last}"
            );
        }
    }
    // A wrong shape is an error, as for selective_scan.
    let inputs = Inputs::new(&mut rng, shapes[0], 1);
    let bad = SelectiveScan { u: &inputs.u[1..], ..inputs.args(0) };
    assert!(matches!(device.selective_scan_into(&bad, &mut output), Err(Error::WrongShape { .. })));
}

#[test]
fn the_cpu_scans_into_a_reused_output() {
    let shapes = [
        SsmShape { batch: 2, dim: 3, len: 50, state: 4 },
        SsmShape { batch: 1, dim: 2, len: 7, state: 16 },
        SsmShape { batch: 3, dim: 4, len: 100, state: 2 },
    ];
    scans_into_a_reused_output(&scan::Device::cpu(), &shapes);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn the_gpu_scans_into_a_reused_output() {
    // The largest output (2 x 64 x 16384 floats, 8 MiB) and its state go
    // through the staging buffers; the others by single copies.
    let shapes = [
        SsmShape { batch: 2, dim: 64, len: 16384, state: 16 },
        SsmShape { batch: 1, dim: 32, len: 100, state: 16 },
        SsmShape { batch: 2, dim: 64, len: 16384, state: 16 },
        SsmShape { batch: 3, dim: 5, len: 300, state: 4 },
    ];
    let device = scan::Device::cuda().unwrap_or_else(|e| panic!("this test needs a CUDA GPU: {e}"));
    scans_into_a_reused_output(&device, &shapes);
}
