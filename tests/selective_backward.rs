//! The selective scan's backward pass: the f64 reference
//! (`scan::selective::backward::reference_backward`) against central finite
//! differences of the f64 forward reference, for every argument and every
//! optional argument present and absent (B and C varying with groups, and
//! fixed); `Cpu::selective_scan_backward` against the reference on one and
//! several threads; a wrong `dout` shape is an error naming it; decays
//! growing to near `f32::MAX` stay finite on the CPU; saved states of
//! another grouping of B or C are an error. On the GPU
//! (`#[ignore]`d: they need one): `Cuda::selective_scan_backward` against
//! the reference within mamba_ssm's tolerances on many shapes, bitwise the
//! same from run to run, and its errors.

use scan::selective::backward::{reference_backward, SsmGrads};
use scan::selective::{reference, Projection, SelectiveScan, SsmShape};
use scan::{Cpu, Error};
use scan_testing::Rng;

/// Owned arguments, so that one element at a time can be perturbed.
#[derive(Clone)]
struct Owned {
    shape: SsmShape,
    groups: usize,
    u: Vec<f32>,
    delta: Vec<f32>,
    a: Vec<f32>,
    b: Vec<f32>,
    c: Vec<f32>,
    d: Vec<f32>,
    z: Vec<f32>,
    bias: Vec<f32>,
    init: Vec<f32>,
}

/// Options (bits): D, z, bias + softplus, initial state, fixed B, fixed C.
fn args(o: &Owned, options: u32) -> SelectiveScan<'_> {
    let on = |bit: u32| options & (1 << bit) != 0;
    let groups = o.groups;
    let b = if on(4) { Projection::Fixed(&o.b) } else { Projection::Varying { data: &o.b, groups } };
    let c = if on(5) { Projection::Fixed(&o.c) } else { Projection::Varying { data: &o.c, groups } };
    let mut args = SelectiveScan::new(o.shape, &o.u, &o.delta, &o.a, b, c);
    if on(0) {
        args = args.d(&o.d);
    }
    if on(1) {
        args = args.z(&o.z);
    }
    if on(2) {
        args = args.delta_bias(&o.bias).delta_softplus(true);
    }
    if on(3) {
        args = args.initial_state(&o.init);
    }
    args
}

fn owned(rng: &mut Rng, shape: SsmShape, groups: usize, options: u32) -> Owned {
    let SsmShape { batch, dim, len, state } = shape;
    let mut v = |n: usize, lo: f64, hi: f64| rng.vec(n, |r| r.range_f64(lo, hi) as f32);
    let proj = |fixed: bool| if fixed { dim * state } else { batch * groups * state * len };
    Owned {
        shape,
        groups,
        u: v(batch * dim * len, -1.0, 1.0),
        delta: v(batch * dim * len, 0.1, 0.8),
        a: v(dim * state, -1.5, -0.3),
        b: v(proj(options & 16 != 0), -1.0, 1.0),
        c: v(proj(options & 32 != 0), -1.0, 1.0),
        d: v(dim, -1.0, 1.0),
        z: v(batch * dim * len, -2.0, 2.0),
        bias: v(dim, -0.3, 0.3),
        init: v(batch * dim * state, -1.0, 1.0),
    }
}

/// sum_i out_i w_i, in f64.
fn loss(o: &Owned, options: u32, w: &[f32]) -> f64 {
    let (out, _) = reference(&args(o, options)).unwrap();
    out.iter().zip(w).map(|(y, w)| y * f64::from(*w)).sum()
}

/// Each (name, array of `o`, its gradient) to check.
fn pick<'a>(o: &'a mut Owned, g: &'a SsmGrads, options: u32) -> Vec<(&'static str, &'a mut Vec<f32>, Vec<f32>)> {
    let on = |bit: u32| options & (1 << bit) != 0;
    let mut v = vec![
        ("u", &mut o.u, g.du.clone()),
        ("delta", &mut o.delta, g.ddelta.clone()),
        ("A", &mut o.a, g.da.clone()),
        ("B", &mut o.b, g.db.clone()),
        ("C", &mut o.c, g.dc.clone()),
    ];
    if on(0) {
        v.push(("D", &mut o.d, g.dd.clone().expect("dD")));
    }
    if on(1) {
        v.push(("z", &mut o.z, g.dz.clone().expect("dz")));
    }
    if on(2) {
        v.push(("delta_bias", &mut o.bias, g.ddelta_bias.clone().expect("d delta_bias")));
    }
    if on(3) {
        v.push(("initial_state", &mut o.init, g.dinitial_state.clone().expect("d initial_state")));
    }
    v
}

#[test]
fn the_reference_gradients_match_finite_differences() {
    let mut rng = Rng::fresh("selective backward fd");
    let shapes = [(1, 1, 1, 1, 1), (1, 2, 5, 3, 1), (2, 2, 4, 2, 2), (1, 1, 9, 4, 1)];
    for (batch, dim, len, state, groups) in shapes {
        for options in [0u32, 1, 2, 4, 8, 15, 16, 32, 63] {
            let shape = SsmShape { batch, dim, len, state };
            let base = owned(&mut rng, shape, groups, options);
            let w = rng.vec(batch * dim * len, |r| r.range_f64(-1.0, 1.0) as f32);
            let grads = reference_backward(&args(&base, options), &w).unwrap();
            // Absent options have no gradient.
            assert_eq!(grads.dd.is_some(), options & 1 != 0);
            assert_eq!(grads.dz.is_some(), options & 2 != 0);
            let mut probe = base.clone();
            let names: Vec<(&str, usize)> =
                pick(&mut probe, &grads, options).iter().map(|(n, a, _)| (*n, a.len())).collect();
            for (k, (name, count)) in names.into_iter().enumerate() {
                for i in 0..count {
                    let mut plus = base.clone();
                    let mut minus = base.clone();
                    let (x, g) = {
                        let list = pick(&mut plus, &grads, options);
                        (list[k].1[i], list[k].2[i])
                    };
                    let h = 1e-3 * x.abs().max(1.0);
                    let (xp, xm) = (x + h, x - h);
                    pick(&mut plus, &grads, options)[k].1[i] = xp;
                    pick(&mut minus, &grads, options)[k].1[i] = xm;
                    let fd = (loss(&plus, options, &w) - loss(&minus, options, &w)) / f64::from(xp - xm);
                    let ok = (fd - f64::from(g)).abs() <= 2e-3 * (1.0 + fd.abs());
                    assert!(ok, "{shape:?}, options {options:#b}: d{name}[{i}] = {g}, finite difference {fd}");
                }
            }
        }
    }
}

/// Above 20 the forward's softplus is the identity (torch's and mamba_ssm's
/// threshold), so with every `delta + delta_bias` past 20 the softplus
/// changes nothing: not the output and not one bit of any gradient, in the
/// f64 reference and on the CPU (whose f32 sigmoid rounds to 1 there).
#[test]
fn past_the_softplus_threshold_the_gradients_are_those_without_it() {
    let mut rng = Rng::fresh("selective backward softplus threshold");
    let shape = SsmShape { batch: 2, dim: 3, len: 40, state: 4 };
    let mut o = owned(&mut rng, shape, 1, 4);
    // Steps of 20.5 to 22 after the bias (|bias| <= 0.3); A dt stays finite.
    o.delta = rng.vec(o.delta.len(), |r| r.range_f64(20.8, 21.7) as f32);
    o.a = rng.vec(o.a.len(), |r| r.range_f64(-0.05, -0.01) as f32);
    let w = rng.vec(o.u.len(), |r| r.range_f64(-1.0, 1.0) as f32);
    let on = args(&o, 4);
    let off = args(&o, 4).delta_softplus(false);
    assert_eq!(reference(&on).unwrap(), reference(&off).unwrap(), "forward");
    assert_eq!(reference_backward(&on, &w).unwrap(), reference_backward(&off, &w).unwrap(), "reference backward");
    let cpu = Cpu::new();
    assert_eq!(
        cpu.selective_scan_backward(&on, &w).unwrap(),
        cpu.selective_scan_backward(&off, &w).unwrap(),
        "CPU backward"
    );
}

#[test]
fn the_cpu_matches_the_reference_on_one_and_several_threads() {
    let mut rng = Rng::fresh("selective backward cpu");
    // (batch, dim, L, N, groups): blocks of eight rows cut by groups of 3,
    // 4 and 10 channels and by the last rows, steps around the chunks of 64;
    // and no steps (every gradient 0, sized by its argument).
    let shapes = [
        (2, 6, 300, 8, 2),
        (1, 3, 1000, 16, 1),
        (3, 4, 17, 1, 4),
        (2, 12, 65, 3, 3),
        (1, 20, 128, 5, 2),
        (2, 6, 0, 8, 2),
    ];
    for (batch, dim, len, state, groups) in shapes {
        for options in [0u32, 1, 2, 4, 8, 16, 32, 15, 63] {
            let shape = SsmShape { batch, dim, len, state };
            let o = owned(&mut rng, shape, groups, options);
            let w = rng.vec(batch * dim * len, |r| r.range_f64(-1.0, 1.0) as f32);
            let a = args(&o, options);
            let want = reference_backward(&a, &w).unwrap();
            let first = Cpu::new().with_threads(1).selective_scan_backward(&a, &w).unwrap();
            if let Err(e) = grads_close_to(&first, &want, 1e-5) {
                panic!("{shape:?}, options {options:#b}: {e}");
            }
            // Shared gradients are summed per block of rows, then in block
            // order: the thread count changes no bit.
            for threads in 2..=8 {
                let got = Cpu::new().with_threads(threads).selective_scan_backward(&a, &w).unwrap();
                assert_eq!(got, first, "{shape:?}, options {options:#b}, {threads} threads");
            }
        }
    }
}

/// Few blocks of long rows (fewer than 8 blocks, rows of 2048 steps or
/// more): each row is cut into ranges of steps, joined through the
/// forward's and the adjoint's aggregates, so that a block's rows run on
/// several threads. Against the reference; bitwise the same on 1..=8
/// threads (the cut follows the shape alone); through the training pair
/// (`selective_scan_saving`, which keeps nothing here, and
/// `selective_scan_backward_saved`), the same bits again. Ranges of 1024
/// to 2112 steps, the last one short, 1 to 6 blocks, blocks cut by groups.
#[test]
fn the_cpu_backward_cuts_few_long_rows_into_ranges() {
    let mut rng = Rng::fresh("selective backward cpu ranges");
    // (batch, dim, L, N, groups)
    let shapes = [(1, 3, 2048, 16, 1), (1, 8, 5000, 4, 1), (2, 12, 4100, 3, 3), (1, 20, 2200, 5, 2)];
    for (batch, dim, len, state, groups) in shapes {
        for options in [0u32, 1, 2, 4, 8, 16, 32, 15, 63] {
            let shape = SsmShape { batch, dim, len, state };
            let o = owned(&mut rng, shape, groups, options);
            let w = rng.vec(batch * dim * len, |r| r.range_f64(-1.0, 1.0) as f32);
            let a = args(&o, options);
            let want = reference_backward(&a, &w).unwrap();
            let first = Cpu::new().with_threads(1).selective_scan_backward(&a, &w).unwrap();
            // 3e-5 over 2048 to 5000 steps (1e-5 failed once in ~40 runs of
            // fresh data, value not kept): dA, dD and d delta_bias sum
            // every step, each chunk's f32 sum added in f64 (a running f32
            // sum missed 1e-5: 5.4e-5 relative on dA on whole rows of 5000
            // steps, 1.1e-5 on a fixed B's dB here, 2026-12-05; now about
            // 1e-6 on those, 2.6e-7 on du).
            if let Err(e) = grads_close_to(&first, &want, 3e-5) {
                panic!("{shape:?}, options {options:#b}: {e}");
            }
            for threads in 2..=8 {
                let got = Cpu::new().with_threads(threads).selective_scan_backward(&a, &w).unwrap();
                assert_eq!(got, first, "{shape:?}, options {options:#b}, {threads} threads");
            }
            for threads in [1, 3] {
                let cpu = Cpu::new().with_threads(threads);
                let (_, saved) = cpu.selective_scan_saving(&a).unwrap();
                // The backward reads no kept states here, so none are kept.
                assert!(!saved.holds_states(), "{shape:?}: states kept for a backward that cuts its rows");
                let got = cpu.selective_scan_backward_saved(&a, &saved, &w).unwrap();
                assert_eq!(got, first, "{shape:?}, options {options:#b}, from saved states on {threads} threads");
            }
        }
    }
}

/// Every gradient of `got` within `rel` (relative to 1 + |want|) of
/// `want`, and present exactly where `want`'s is.
fn grads_close_to(got: &SsmGrads, want: &SsmGrads, rel: f32) -> Result<(), String> {
    let close = |name: &str, x: &[f32], y: &[f32]| -> Result<(), String> {
        if x.len() != y.len() {
            return Err(format!("d{name}: {} values, want {}", x.len(), y.len()));
        }
        match x.iter().zip(y).position(|(a, b)| (a - b).abs() > rel * (1.0 + b.abs())) {
            Some(i) => Err(format!("d{name}[{i}] = {}, want {}", x[i], y[i])),
            None => Ok(()),
        }
    };
    close("u", &got.du, &want.du)?;
    close("delta", &got.ddelta, &want.ddelta)?;
    close("A", &got.da, &want.da)?;
    close("B", &got.db, &want.db)?;
    close("C", &got.dc, &want.dc)?;
    for (name, x, y) in [
        ("D", &got.dd, &want.dd),
        ("z", &got.dz, &want.dz),
        ("delta_bias", &got.ddelta_bias, &want.ddelta_bias),
        ("initial_state", &got.dinitial_state, &want.dinitial_state),
    ] {
        match (x, y) {
            (Some(x), Some(y)) => close(name, x, y)?,
            (None, None) => {}
            _ => return Err(format!("d{name}: present {}, want {}", x.is_some(), y.is_some())),
        }
    }
    Ok(())
}

#[test]
fn a_wrong_dout_shape_is_an_error_naming_it() {
    let mut rng = Rng::fresh("selective backward shape");
    let o = owned(&mut rng, SsmShape { batch: 1, dim: 2, len: 3, state: 1 }, 1, 0);
    let err = Cpu::new().selective_scan_backward(&args(&o, 0), &[0.0; 5]).unwrap_err();
    assert!(matches!(&err, Error::WrongShape { argument, .. } if argument == "dout"), "{err}");
}

/// Every value within mamba_ssm's f32 tolerances of the reference.
fn within_mamba_tolerance(got: &[f32], want: &[f32]) -> Result<(), String> {
    if got.len() != want.len() {
        return Err(format!("{} values, want {}", got.len(), want.len()));
    }
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        if !scan_testing::within_mamba_tolerance(f64::from(*g), f64::from(*w)) {
            return Err(format!("[{i}] = {g}, want {w}"));
        }
    }
    Ok(())
}

/// Every gradient of `got` against `want`, the optional ones present in both
/// or absent in both.
fn grads_close(got: &SsmGrads, want: &SsmGrads) -> Result<(), String> {
    let pairs = [
        ("du", Some(&got.du), Some(&want.du)),
        ("ddelta", Some(&got.ddelta), Some(&want.ddelta)),
        ("dA", Some(&got.da), Some(&want.da)),
        ("dB", Some(&got.db), Some(&want.db)),
        ("dC", Some(&got.dc), Some(&want.dc)),
        ("dD", got.dd.as_ref(), want.dd.as_ref()),
        ("dz", got.dz.as_ref(), want.dz.as_ref()),
        ("d delta_bias", got.ddelta_bias.as_ref(), want.ddelta_bias.as_ref()),
        ("d initial_state", got.dinitial_state.as_ref(), want.dinitial_state.as_ref()),
    ];
    for (name, g, w) in pairs {
        match (g, w) {
            (Some(g), Some(w)) => within_mamba_tolerance(g, w).map_err(|e| format!("{name}{e}"))?,
            (None, None) => {}
            _ => return Err(format!("{name}: present on one side only")),
        }
    }
    Ok(())
}

fn gpu() -> scan::cuda::Cuda {
    scan::cuda::Cuda::new().expect("a CUDA GPU (these tests are #[ignore]d without one)")
}

/// Both forms of the GPU backward's lane kernels' gradient blocks, named:
/// whole rows (G carried along each row by the gradient kernel) and ranges
/// of 256 steps (G from the carries kernel's reverse scan at each range's
/// end).
fn both_forms() -> [(&'static str, scan::cuda::Cuda); 2] {
    let form = |whole| {
        let tuning = scan::cuda::Tuning::default().selective_backward_tiles(false).selective_backward_whole_rows(whole);
        gpu().with_tuning(tuning)
    };
    [("whole rows", form(true)), ("ranges", form(false))]
}

/// The tile kernels, taken wherever they apply (the default takes them
/// from 4096 rows); other shapes fall back to the lane kernels.
fn tiles() -> scan::cuda::Cuda {
    gpu().with_tuning(scan::cuda::Tuning::default().selective_backward_tiles(true))
}

/// The GPU backward against the f64 reference within mamba_ssm's f32
/// tolerances: N in {1, 2, 4, 5, 16, 24, 40, 64} (every lane shape), L around
/// a 16-step checkpoint, a 256-step block range and a 2048-step chunk of the
/// carries kernel, channel counts around a block's chunk of channels (32 at
/// N = 16), groups of B and C that differ (3 and 2: blocks of one channel),
/// fixed projections, and every option; both forms of the gradient blocks.
#[test]
#[ignore = "needs a CUDA GPU"]
fn the_gpu_matches_the_reference_within_mamba_tolerances() {
    let forms = both_forms();
    let mut rng = Rng::fresh("selective backward gpu");
    let mut cases = Vec::new();
    for state in [1, 4, 16, 64] {
        for len in [1, 2, 7, 15, 16, 17, 255, 256, 257] {
            cases.push((1, 2, len, state, 1));
        }
    }
    for state in [16, 5] {
        for len in [2047, 2048, 2049, 4097] {
            cases.push((2, 6, len, state, 2));
        }
    }
    cases.extend([(1, 33, 300, 16, 1), (2, 64, 129, 16, 1), (1, 96, 40, 4, 3), (3, 6, 100, 16, 6), (1, 129, 33, 1, 1)]);
    // The other lane shapes: N = 2, N = 24 (S = 32, lanes past N idle) and
    // N = 40 (two states per lane, the second past N on some lanes), with
    // more channels than one block's chunk and rows past one block's range.
    cases.extend([(2, 300, 300, 2, 2), (1, 40, 300, 24, 2), (2, 20, 513, 40, 1)]);
    let mut failures = Vec::new();
    for (batch, dim, len, state, groups) in cases {
        for options in [0u32, 1, 2, 4, 8, 15, 16, 32, 63] {
            let shape = SsmShape { batch, dim, len, state };
            let o = owned(&mut rng, shape, groups, options);
            let w = rng.vec(batch * dim * len, |r| r.range_f64(-1.0, 1.0) as f32);
            let a = args(&o, options);
            let want = reference_backward(&a, &w).unwrap();
            for (form, cuda) in &forms {
                let kernel = cuda.selective_backward_kernel_name(&cuda.upload_selective(&a).unwrap()).unwrap();
                assert_eq!(kernel, "lanes", "{shape:?}, {form}");
                let got = cuda.selective_scan_backward(&a, &w).unwrap_or_else(|e| panic!("{shape:?}, {form}: {e}"));
                if let Err(e) = grads_close(&got, &want) {
                    failures.push(format!("{shape:?}, groups {groups}, options {options:#b}, {form}: {e}"));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}

/// The tile kernels against the f64 reference within mamba_ssm's f32
/// tolerances: N in {1, 4, 8} (blocks of 2 warps) and {9, 16} (4 warps),
/// states past N idle; L around the 8-step checkpoints and the 16-step
/// tiles, and a long row; 32 to 96 channels in 1 to 3 groups of B and C;
/// every option. Options with a fixed B or C, shapes whose blocks of 32
/// channels would not share a batch and a group (dim 48; dim 64 in 4 groups
/// of 16) and N = 17 fall back to the lane kernels, and are checked too.
/// `SCAN_TEST_SHORT_ROWS=1` keeps rows of at most 300 steps (for
/// compute-sanitizer, which runs kernels hundreds of times slower).
#[test]
#[ignore = "needs a CUDA GPU"]
fn the_gpu_tile_backward_matches_the_reference() {
    // The gradient kernel with the states in order, with the upper
    // half-warp's rotated (`Tuning::selective_backward_rotated_states`),
    // rotated with narrow steps (`Tuning::selective_backward_narrow_steps`),
    // and that with its sums over rows pipelined, short, or both
    // (`Tuning::selective_backward_pipelined_sums`, `..._short_sums`).
    let tuning = scan::cuda::Tuning::default().selective_backward_tiles(true);
    for (rotated, narrow, piped, short) in [
        (false, false, false, false),
        (true, false, false, false),
        (true, true, false, false),
        (true, true, true, false),
        (true, true, false, true),
        (true, true, true, true),
    ] {
        let form = tuning
            .selective_backward_rotated_states(rotated)
            .selective_backward_narrow_steps(narrow)
            .selective_backward_pipelined_sums(piped)
            .selective_backward_short_sums(short);
        let label = format!("rotated {rotated}, narrow {narrow}, piped {piped}, short {short}");
        tile_backward_matches_the_reference(&gpu().with_tuning(form), &label);
    }
}

/// The pipelined and the short sums over rows
/// (`Tuning::selective_backward_pipelined_sums`, `..._short_sums`), alone
/// and together, add the same terms in the same order as the plain rotated
/// kernel with narrow steps: the same gradients bit for bit, on rows of whole tiles and
/// of a tile cut short, N 16 and 6 (two warps a block), B and C varying
/// (the tile kernels' case). `SCAN_TEST_SHORT_ROWS=1` keeps rows of at most
/// 300 steps (for compute-sanitizer).
#[test]
#[ignore = "needs a CUDA GPU"]
fn the_gpu_pipelined_and_short_sums_give_the_plain_kernels_bits() {
    let narrow = scan::cuda::Tuning::default()
        .selective_backward_tiles(true)
        .selective_backward_rotated_states(true)
        .selective_backward_narrow_steps(true)
        .selective_backward_pipelined_sums(false)
        .selective_backward_short_sums(false);
    let plain = gpu().with_tuning(narrow);
    let others = [
        ("pipelined", gpu().with_tuning(narrow.selective_backward_pipelined_sums(true))),
        ("short", gpu().with_tuning(narrow.selective_backward_short_sums(true))),
        (
            "pipelined short",
            gpu().with_tuning(narrow.selective_backward_pipelined_sums(true).selective_backward_short_sums(true)),
        ),
    ];
    let mut rng = Rng::fresh("selective backward gpu pipelined sums");
    let mut cases = vec![(4096, 16, 15u32), (4097, 16, 7), (37, 16, 0), (300, 6, 15)];
    if std::env::var_os("SCAN_TEST_SHORT_ROWS").is_some() {
        cases.retain(|&(len, _, _)| len <= 300);
    }
    for (len, state, options) in cases {
        let shape = SsmShape { batch: 2, dim: 64, len, state };
        let o = owned(&mut rng, shape, 1, options);
        let w = rng.vec(2 * 64 * len, |r| r.range_f64(-1.0, 1.0) as f32);
        let a = args(&o, options);
        let kernel = plain.selective_backward_kernel_name(&plain.upload_selective(&a).unwrap()).unwrap();
        assert!(kernel.starts_with("tiles"), "{shape:?}, options {options:#b}: {kernel}");
        let want = plain.selective_scan_backward(&a, &w).unwrap();
        for (name, other) in &others {
            let got = other.selective_scan_backward(&a, &w).unwrap();
            assert!(got == want, "{shape:?}, options {options:#b}: the {name} sums gave other gradients");
        }
    }
}

fn tile_backward_matches_the_reference(cuda: &scan::cuda::Cuda, label: &str) {
    let mut rng = Rng::fresh("selective backward gpu tiles");
    let mut cases = Vec::new();
    for state in [1, 4, 8, 9, 16] {
        for len in [1, 2, 7, 8, 9, 15, 16, 17, 31, 33, 100, 257] {
            cases.push((1, 32, len, state, 1));
        }
    }
    // Groups of two blocks each (the partials' sum over a group's blocks).
    cases.extend([(2, 64, 300, 16, 2), (2, 96, 129, 16, 3), (2, 128, 100, 16, 2)]);
    cases.extend([(1, 32, 1 << 17, 16, 1), (2, 64, 4097, 5, 1)]);
    // Declined: 48 channels, groups of 16 channels, N = 17.
    cases.extend([(1, 48, 40, 16, 1), (1, 64, 40, 16, 4), (1, 32, 40, 17, 1)]);
    if std::env::var_os("SCAN_TEST_SHORT_ROWS").is_some() {
        cases.retain(|&(_, _, len, _, _)| len <= 300);
    }
    let mut failures = Vec::new();
    for (batch, dim, len, state, groups) in cases {
        let long = len > 10_000;
        let all_options = [0u32, 1, 2, 4, 8, 15, 16, 32, 63];
        for &options in if long { &all_options[5..6] } else { &all_options[..] } {
            let shape = SsmShape { batch, dim, len, state };
            let o = owned(&mut rng, shape, groups, options);
            let w = rng.vec(batch * dim * len, |r| r.range_f64(-1.0, 1.0) as f32);
            let a = args(&o, options);
            // The tile kernels ran, except where the shape declines them
            // (a fixed B or C, the three declined shapes above).
            let declined = options & 0b11_0000 != 0 || dim == 48 || groups == 4 || state == 17;
            let on_device = cuda.upload_selective(&a).unwrap();
            let kernel = cuda.selective_backward_kernel_name(&on_device).unwrap();
            assert_eq!(kernel.starts_with("tiles"), !declined, "{label}: {shape:?}, options {options:#b}: {kernel}");
            let want = reference_backward(&a, &w).unwrap();
            let got = cuda.selective_scan_backward(&a, &w).unwrap_or_else(|e| panic!("{shape:?}: {e}"));
            if let Err(e) = grads_close(&got, &want) {
                failures.push(format!("{label}: {shape:?}, groups {groups}, options {options:#b}: {e}"));
            }
        }
    }
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}

/// Groups of B and C that differ (B in 2 groups, C in 3, dim 6: a block's
/// channels share both, so blocks hold one channel each), and a long row
/// (L = 2^17, as the 8/11 tests; B in 2 groups, C in 1), and dim 64 with B
/// in 2 groups of 32 and C in 1 (the tile kernels' blocks, whose dB and dC
/// partials then sum over different counts); both forms of the lane
/// kernels' gradient blocks and the tile kernels (which decline the first
/// two shapes: the lane kernels run them again).
#[test]
#[ignore = "needs a CUDA GPU"]
fn the_gpu_takes_different_groupings_of_b_and_c_and_long_rows() {
    let [whole, ranges] = both_forms();
    let forms = [whole, ranges, ("tiles", tiles())];
    let mut rng = Rng::fresh("selective backward gpu groups");
    for (dim, len, c_groups) in [(6, 300, 3), (2, 1 << 17, 1), (64, 100, 1)] {
        let (batch, state) = (2, 16);
        let shape = SsmShape { batch, dim, len, state };
        let o = owned(&mut rng, shape, 2, 15);
        let c = rng.vec(batch * c_groups * state * len, |r| r.range_f64(-1.0, 1.0) as f32);
        let w = rng.vec(batch * dim * len, |r| r.range_f64(-1.0, 1.0) as f32);
        let b = Projection::Varying { data: &o.b, groups: 2 };
        let a = SelectiveScan::new(shape, &o.u, &o.delta, &o.a, b, Projection::Varying { data: &c, groups: c_groups })
            .d(&o.d)
            .z(&o.z)
            .delta_bias(&o.bias)
            .delta_softplus(true)
            .initial_state(&o.init);
        let want = reference_backward(&a, &w).unwrap();
        for (form, cuda) in &forms {
            let got = cuda.selective_scan_backward(&a, &w).unwrap();
            grads_close(&got, &want).unwrap_or_else(|e| panic!("{shape:?}, C in {c_groups} groups, {form}: {e}"));
        }
    }
}

/// Every sum in a fixed order: two runs give the same bits, and the GPU
/// matches the CPU's backward within mamba_ssm's tolerances (both forms of
/// the lane kernels' gradient blocks, and the tile kernels).
#[test]
#[ignore = "needs a CUDA GPU"]
fn the_gpu_backward_is_bitwise_the_same_from_run_to_run() {
    let [whole, ranges] = both_forms();
    let forms = [whole, ranges, ("tiles", tiles())];
    let mut rng = Rng::fresh("selective backward gpu determinism");
    let shape = SsmShape { batch: 2, dim: 64, len: 4097, state: 16 };
    for options in [15u32, 63] {
        let o = owned(&mut rng, shape, 1, options);
        let w = rng.vec(2 * 64 * 4097, |r| r.range_f64(-1.0, 1.0) as f32);
        let a = args(&o, options);
        let cpu = Cpu::new().selective_scan_backward(&a, &w).unwrap();
        for (form, cuda) in &forms {
            let first = cuda.selective_scan_backward(&a, &w).unwrap();
            for run in 0..3 {
                let again = cuda.selective_scan_backward(&a, &w).unwrap();
                assert!(again == first, "options {options:#b}, {form}, run {run}: the gradients changed");
            }
            grads_close(&first, &cpu).unwrap_or_else(|e| panic!("against the CPU, options {options:#b}, {form}: {e}"));
        }
    }
}

/// The training forward (`run_selective_saving`) writes the output and the
/// last state of the forward's tile kernel bit for bit, and the backward
/// from its saved states (`run_selective_backward_saved`) the gradients of
/// `run_selective_backward` bit for bit: on the tile path (N 4, 9 and 16;
/// L around the 8-step checkpoints and the 32-step tiles of the forward,
/// and a row of 4097 steps; groups of B and C over two blocks; every option
/// with B and C varying, within mamba_ssm's tolerances of the f64
/// reference too), and off it (a fixed B or C: nothing saved, the same
/// gradients). Saved states of another scan are an error naming `saved`.
/// `SCAN_TEST_SHORT_ROWS=1` drops the long row (for compute-sanitizer).
#[test]
#[ignore = "needs a CUDA GPU"]
fn the_training_forward_saves_the_states_the_backward_would_compute() {
    let tuning = scan::cuda::Tuning::default()
        .selective_backward_tiles(true)
        .selective_kernel(scan::cuda::SelectiveKernelChoice::Tiles);
    let cuda = gpu().with_tuning(tuning);
    let mut rng = Rng::fresh("selective backward gpu saved");
    let mut cases = Vec::new();
    for len in [1, 7, 8, 9, 31, 32, 33, 100] {
        cases.push((1, 32, len, 16, 1));
    }
    cases.extend([(1, 32, 40, 4, 1), (1, 64, 65, 9, 1), (2, 128, 100, 16, 2), (1, 32, 4097, 16, 1)]);
    if std::env::var_os("SCAN_TEST_SHORT_ROWS").is_some() {
        cases.retain(|&(_, _, len, _, _)| len <= 300);
    }
    let mut failures = Vec::new();
    let mut saved_some = 0;
    // One set of saved states for every case, as a training loop keeps it.
    let mut reused = None;
    for (batch, dim, len, state, groups) in cases {
        for options in [0u32, 1, 2, 4, 8, 15, 16, 32] {
            let shape = SsmShape { batch, dim, len, state };
            let o = owned(&mut rng, shape, groups, options);
            let w = rng.vec(batch * dim * len, |r| r.range_f64(-1.0, 1.0) as f32);
            let a = args(&o, options).return_last_state(true);
            let case = format!("{shape:?}, groups {groups}, options {options:#b}");
            let mut s = cuda.upload_selective(&a).unwrap();
            let saved = cuda.run_selective_saving(&mut s).unwrap_or_else(|e| panic!("{case}: {e}"));
            let got = s.download().unwrap();
            let mut plain = cuda.upload_selective(&a).unwrap();
            cuda.run_selective(&mut plain).unwrap();
            let want = plain.download().unwrap();
            if got != want {
                let differ = got.out.iter().zip(&want.out).filter(|(g, w)| g != w).count();
                failures.push(format!("{case}: forward: {differ} outputs differ from run_selective's"));
            }
            let (reference_out, _) = reference(&a).unwrap();
            let reference_out: Vec<f32> = reference_out.iter().map(|&y| y as f32).collect();
            if let Err(e) = within_mamba_tolerance(&got.out, &reference_out) {
                failures.push(format!("{case}: forward against the reference: out{e}"));
            }
            let varying = options & 48 == 0;
            if saved.holds_states() != varying {
                failures.push(format!("{case}: states saved: {}, want {varying}", saved.holds_states()));
            }
            saved_some += usize::from(saved.holds_states());
            let dout = cuda.upload(&w).unwrap();
            let want = cuda.run_selective_backward(&s, &dout).unwrap().download().unwrap();
            let got = cuda.run_selective_backward_saved(&s, &dout, &saved).unwrap().download().unwrap();
            if got != want {
                failures.push(format!("{case}: the gradients from the saved states differ"));
            }
            if let Err(e) = grads_close(&got, &reference_backward(&a, &w).unwrap()) {
                failures.push(format!("{case}: against the reference: {e}"));
            }
            // The same forward into the states saved for the case before
            // (the same buffer when the size is the same).
            let mut again = cuda.upload_selective(&a).unwrap();
            let into = match reused.as_mut() {
                Some(r) => cuda.run_selective_saving_into(&mut again, r).map(|()| r),
                None => cuda.run_selective_saving(&mut again).map(|r| reused.insert(r)),
            };
            let into = into.unwrap_or_else(|e| panic!("{case}: saving into earlier states: {e}"));
            if into.bytes() != saved.bytes() || again.download().unwrap() != s.download().unwrap() {
                failures.push(format!("{case}: the forward into earlier states differs"));
            }
            if cuda.run_selective_backward_saved(&again, &dout, into).unwrap().download().unwrap() != want {
                failures.push(format!("{case}: the gradients from states saved into earlier ones differ"));
            }
            // The states of this forward with another scan's arguments.
            let other = cuda.upload_selective(&a).unwrap();
            match cuda.run_selective_backward_saved(&other, &dout, &saved) {
                Err(Error::WrongShape { argument, .. }) if argument == "saved" => {}
                r => failures.push(format!("{case}: saved states of another scan: {:?}", r.map(drop))),
            }
        }
    }
    assert!(saved_some > 0, "no case saved states");
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}

/// N past the GPU kernels' 64 is an error naming the limit from `Cuda`, and
/// `Device` runs the CPU's backward for it; a wrong `dout` is an error on
/// the GPU too.
#[test]
#[ignore = "needs a CUDA GPU"]
fn large_states_go_to_the_cpu_and_bad_calls_are_errors_on_the_gpu() {
    let cuda = gpu();
    let mut rng = Rng::fresh("selective backward gpu errors");
    let shape = SsmShape { batch: 1, dim: 2, len: 20, state: 65 };
    let o = owned(&mut rng, shape, 1, 15);
    let w = rng.vec(40, |r| r.range_f64(-1.0, 1.0) as f32);
    let a = args(&o, 15);
    let err = cuda.selective_scan_backward(&a, &w).unwrap_err();
    assert!(matches!(&err, Error::Unsupported(why) if why.contains("64")), "{err}");
    let device = scan::Device::cuda().expect("a CUDA GPU");
    assert_eq!(device.selective_scan_backward(&a, &w).unwrap(), Cpu::new().selective_scan_backward(&a, &w).unwrap());
    let err = cuda.selective_scan_backward(&args(&o, 0), &[0.0; 5]).unwrap_err();
    assert!(matches!(&err, Error::WrongShape { argument, .. } if argument == "dout"), "{err}");
}

/// `Cpu::selective_scan_saving` keeps each block's states before every 64
/// steps and `selective_scan_backward_saved` starts from them: outputs and
/// gradients bit for bit those of the plain calls, on rows around the
/// chunks, every option, several thread counts; where the forward or the
/// backward cuts few long rows into ranges (fewer than 8 blocks of rows of
/// 2048 steps or more: one block here on 1 thread and on 4) nothing is kept
/// and the gradients are the same still; states kept for another shape are
/// an error naming `saved`.
#[test]
fn the_cpus_saved_states_give_the_backwards_gradients_bit_for_bit() {
    let mut rng = Rng::fresh("selective saved cpu");
    // (batch, dim, L, N, groups, threads, states kept)
    let cases = [
        (2, 12, 130, 3, 3, 1, true),
        (1, 20, 64, 5, 2, 3, true),
        (2, 9, 1, 2, 1, 2, true),
        (1, 64, 4097, 4, 1, 1, true),
        (1, 2, 4097, 4, 1, 1, false),
        (1, 2, 4097, 4, 1, 4, false),
    ];
    for (batch, dim, len, state, groups, threads, kept) in cases {
        let shape = SsmShape { batch, dim, len, state };
        let cpu = Cpu::new().with_threads(threads);
        for options in [0u32, 15, 16, 32, 63] {
            let o = owned(&mut rng, shape, groups, options);
            let w = rng.vec(batch * dim * len, |r| r.range_f64(-1.0, 1.0) as f32);
            let a = args(&o, options).return_last_state(true);
            let (out, saved) = cpu.selective_scan_saving(&a).unwrap();
            let case = format!("{shape:?}, {threads} threads, options {options:#b}");
            assert_eq!(out, cpu.selective_scan(&a).unwrap(), "{case}: outputs");
            assert_eq!(saved.holds_states(), kept, "{case}: states kept");
            let grads = cpu.selective_scan_backward_saved(&a, &saved, &w).unwrap();
            assert_eq!(grads, cpu.selective_scan_backward(&a, &w).unwrap(), "{case}: gradients");
        }
    }
    let o = owned(&mut rng, SsmShape { batch: 1, dim: 3, len: 10, state: 2 }, 1, 0);
    let (_, saved) = Cpu::new().selective_scan_saving(&args(&o, 0)).unwrap();
    let other = owned(&mut rng, SsmShape { batch: 1, dim: 3, len: 11, state: 2 }, 1, 0);
    let err = Cpu::new().selective_scan_backward_saved(&args(&other, 0), &saved, &[0.0; 33]).unwrap_err();
    assert!(matches!(&err, Error::WrongShape { argument, .. } if argument == "saved"), "{err}");
    // The same shape, other arrays (a copy of u) or softplus toggled: the
    // states would be another scan's, so an error too (as on the GPU).
    let (_, saved) = Cpu::new().selective_scan_saving(&args(&o, 4)).unwrap();
    let copy = o.u.clone();
    let mut other_u = args(&o, 4);
    other_u.u = &copy;
    for (what, a) in [("a copy of u", other_u), ("softplus off", args(&o, 4).delta_softplus(false))] {
        let err = Cpu::new().selective_scan_backward_saved(&a, &saved, &[0.0; 30]).unwrap_err();
        assert!(matches!(&err, Error::WrongShape { argument, .. } if argument == "saved"), "{what}: {err}");
    }
    let same = Cpu::new().selective_scan_backward_saved(&args(&o, 4), &saved, &[0.0; 30]);
    assert!(same.is_ok(), "the arguments saved from: {same:?}");
    // Groups that do not divide the channels: an error naming B, not a
    // division by zero while the saving forward cuts its blocks (found by
    // this session's review: it checked after).
    let o = owned(&mut rng, SsmShape { batch: 1, dim: 2, len: 4096, state: 2 }, 1, 0);
    for groups in [0, 3] {
        let mut a = args(&o, 0);
        a.b = Projection::Varying { data: &o.b, groups };
        match Cpu::new().selective_scan_saving(&a) {
            Err(Error::WrongShape { argument, .. }) if argument == "B" => {}
            r => panic!("groups {groups}: {:?}", r.map(drop)),
        }
    }
}

/// `Device`'s training pair on the CPU: the forward is `selective_scan`'s,
/// the states before every 64 steps are kept, and the backward from them is
/// `selective_scan_backward`'s, bit for bit, for every option; a wrong
/// `dout` is an error naming it.
#[test]
fn the_devices_training_pair_on_the_cpu_is_its_forward_and_backward() {
    let device = scan::Device::cpu();
    let mut rng = Rng::fresh("selective training pair cpu");
    let shape = SsmShape { batch: 2, dim: 3, len: 130, state: 4 };
    for options in [0u32, 15, 16, 32, 63] {
        let o = owned(&mut rng, shape, 1, options);
        let w = rng.vec(2 * 3 * 130, |r| r.range_f64(-1.0, 1.0) as f32);
        let a = args(&o, options);
        let (out, saved) = device.selective_scan_for_training(&a).unwrap();
        assert_eq!(out, device.selective_scan(&a).unwrap(), "options {options:#b}");
        assert!(saved.holds_states());
        let grads = device.selective_scan_backward_saved(&saved, &w).unwrap();
        assert_eq!(grads, device.selective_scan_backward(&a, &w).unwrap(), "options {options:#b}");
        let err = device.selective_scan_backward_saved(&saved, &w[1..]).unwrap_err();
        assert!(matches!(&err, Error::WrongShape { argument, .. } if argument == "dout"), "{err}");
    }
}

/// The activations of `o` (u, delta, B, C, z) rounded to a half type.
struct Halves<H> {
    u: Vec<H>,
    delta: Vec<H>,
    b: Vec<H>,
    c: Vec<H>,
    z: Vec<H>,
}

fn halves<H>(o: &Owned, round: impl Fn(f32) -> H) -> Halves<H> {
    let r = |v: &[f32]| v.iter().map(|&x| round(x)).collect();
    Halves { u: r(&o.u), delta: r(&o.delta), b: r(&o.b), c: r(&o.c), z: r(&o.z) }
}

/// [`args`] with the activations of `h` (the weights and the starting
/// state of `o`).
fn half_args<'a, H: scan::selective::SsmInput>(o: &'a Owned, h: &'a Halves<H>, options: u32) -> SelectiveScan<'a, H> {
    let on = |bit: u32| options & (1 << bit) != 0;
    let groups = o.groups;
    let b = if on(4) { Projection::Fixed(&h.b[..]) } else { Projection::Varying { data: &h.b[..], groups } };
    let c = if on(5) { Projection::Fixed(&h.c[..]) } else { Projection::Varying { data: &h.c[..], groups } };
    let mut args = SelectiveScan::new(o.shape, &h.u, &h.delta, &o.a, b, c);
    if on(0) {
        args = args.d(&o.d);
    }
    if on(1) {
        args = args.z(&h.z);
    }
    if on(2) {
        args = args.delta_bias(&o.bias).delta_softplus(true);
    }
    if on(3) {
        args = args.initial_state(&o.init);
    }
    args
}

/// `Device`'s training pair and backward on bf16 and f16 activations, on
/// `device`: each gives, bit for bit, what it gives for the activations
/// widened to f32 on the host (the values the kernels read), for `cases` of
/// (shape, options); `saves` says whether the training forward keeps
/// states for them.
fn half_activations_train_as_their_widened_values(
    device: &scan::Device,
    cases: &[(SsmShape, u32, bool)],
    rng: &mut Rng,
) {
    use scan::maps::{bf16, f16};
    fn check<H: scan::selective::SsmInput>(
        device: &scan::Device,
        what: &str,
        a: &SelectiveScan<'_, H>,
        w: &[f32],
        saves: bool,
    ) {
        let widened = a.widened();
        let wide = widened.args();
        let (out, saved) = device.selective_scan_for_training(a).unwrap();
        assert_eq!(saved.holds_states(), saves, "{what}");
        assert_eq!(out, device.selective_scan(&wide).unwrap(), "{what}: the training forward");
        assert_eq!(out, device.selective_scan(a).unwrap(), "{what}: the forward");
        let grads = device.selective_scan_backward(&wide, w).unwrap();
        assert_eq!(device.selective_scan_backward(a, w).unwrap(), grads, "{what}: the backward");
        assert_eq!(device.selective_scan_backward_saved(&saved, w).unwrap(), grads, "{what}: from the saved forward");
    }
    for &(shape, options, saves) in cases {
        let o = owned(rng, shape, 1, options);
        let w = rng.vec(shape.batch * shape.dim * shape.len, |r| r.range_f64(-1.0, 1.0) as f32);
        let (hb, hf) = (halves(&o, bf16::from_f32), halves(&o, f16::from_f32));
        check(device, &format!("bf16, {shape:?}, options {options:#b}"), &half_args(&o, &hb, options), &w, saves);
        check(device, &format!("f16, {shape:?}, options {options:#b}"), &half_args(&o, &hf, options), &w, saves);
    }
}

/// On the CPU: no states kept for half-precision activations (the CPU's
/// saved backward reads f32), the gradients still those of the widened
/// values.
#[test]
fn half_precision_activations_train_on_the_cpu_as_their_widened_values() {
    let mut rng = Rng::fresh("selective half training cpu");
    let shape = SsmShape { batch: 2, dim: 3, len: 130, state: 4 };
    let cases = [(shape, 0, false), (shape, 15, false), (shape, 63, false)];
    half_activations_train_as_their_widened_values(&scan::Device::cpu(), &cases, &mut rng);
}

/// On the GPU (activations widened on the device): states saved where the
/// backward runs by tiles, as for f32; by lanes; and past the GPU
/// backward's N, where the CPU's backward takes them.
#[test]
#[ignore = "needs a CUDA GPU"]
fn half_precision_activations_train_on_the_gpu_as_their_widened_values() {
    let device = scan::Device::cuda().expect("a CUDA GPU");
    let mut rng = Rng::fresh("selective half training gpu");
    let shape = |batch, dim, len, state| SsmShape { batch, dim, len, state };
    let cases =
        [(shape(2, 2048, 200, 16), 7, true), (shape(1, 64, 33, 4), 15, false), (shape(1, 2, 20, 65), 15, false)];
    half_activations_train_as_their_widened_values(&device, &cases, &mut rng);
}

/// `Device`'s training pair on the GPU: where the backward runs by tiles
/// (4096 channels, N = 16, L 200) the forward saves states, its output is
/// `selective_scan`'s and the gradients are `selective_scan_backward`'s, bit
/// for bit; where it runs by lanes (N = 4) nothing is saved and the same
/// holds; past the GPU backward's N (65) the backward is the CPU's; another
/// executor and the CPU take the saved forward too (from its arguments); a
/// wrong `dout` is an error naming it.
#[test]
#[ignore = "needs a CUDA GPU"]
fn the_devices_training_pair_on_the_gpu_reuses_the_saved_states() {
    let device = scan::Device::cuda().expect("a CUDA GPU");
    let mut rng = Rng::fresh("selective training pair gpu");
    // (batch, dim, L, N, options, states saved)
    // (L past 192 so that the forward's Auto choice is the tile kernel too.)
    let cases = [(2, 2048, 200, 16, 7u32, true), (1, 64, 33, 4, 15, false), (1, 2, 20, 65, 15, false)];
    for (batch, dim, len, state, options, saves) in cases {
        let shape = SsmShape { batch, dim, len, state };
        let o = owned(&mut rng, shape, 1, options);
        let w = rng.vec(batch * dim * len, |r| r.range_f64(-1.0, 1.0) as f32);
        let a = args(&o, options);
        let (out, saved) = device.selective_scan_for_training(&a).unwrap();
        assert_eq!(saved.holds_states(), saves, "{shape:?}");
        assert_eq!(out, device.selective_scan(&a).unwrap(), "{shape:?}");
        let grads = device.selective_scan_backward_saved(&saved, &w).unwrap();
        assert_eq!(grads, device.selective_scan_backward(&a, &w).unwrap(), "{shape:?}");
        if state > scan::cuda::SELECTIVE_BACKWARD_MAX_STATE {
            assert_eq!(grads, Cpu::new().selective_scan_backward(&a, &w).unwrap(), "{shape:?}");
        }
        // Another executor (its own context) and the CPU start from the
        // arguments instead of this executor's device memory.
        let other = scan::Device::cuda().expect("a CUDA GPU");
        assert_eq!(other.selective_scan_backward_saved(&saved, &w).unwrap(), grads, "{shape:?}, another executor");
        let cpu = scan::Device::cpu().selective_scan_backward_saved(&saved, &w).unwrap();
        assert_eq!(cpu, Cpu::new().selective_scan_backward(&a, &w).unwrap(), "{shape:?}, the CPU");
        let err = device.selective_scan_backward_saved(&saved, &w[1..]).unwrap_err();
        assert!(matches!(&err, Error::WrongShape { argument, .. } if argument == "dout"), "{shape:?}: {err}");
    }
}

/// Decays `exp(dt A)` that grow to just below `f32::MAX` (e^88.72): A in
/// {88.3, 88.5, 88.7} with dt = 1, and A < 0 with a negative dt and no
/// softplus (dt A the same). The CPU's exponential put `2^128` (infinity)
/// in one factor for `dt A log2(e)` in [127.5, 128), so the decay came out
/// infinite where f32 holds it (2.7e38 at 88.5), and with a zero state
/// `inf * 0` gave NaN. The forward (out and last state) and the backward
/// against the f64 references: finite and within mamba_ssm's tolerances.
/// The first step's decay meets the starting state (zero, or 1e-30 so
/// that its value shows: 2.7e8 after it); the second step's decay is
/// small, so that nothing overflows in f64 either.
#[test]
fn decays_growing_to_near_f32_max_stay_finite_on_the_cpu() {
    let cpus: Vec<(String, Cpu)> = [1, 2].map(|t| (format!("{t} threads"), Cpu::new().with_threads(t))).into();
    growing_decays_stay_finite(
        &cpus,
        true,
        |cpu, args| cpu.selective_scan(args),
        |cpu, args, w| cpu.selective_scan_backward(args, w),
    );
}

/// The same on the GPU, whose chunked kernels (fixed B and C take them)
/// reduce a thread's run of steps to one composite decay: `e^(88.5 + ...)`
/// overflows to infinity there while the state it multiplies is zero, and
/// `inf * 0` gave NaN in the forward and in the backward's carries (a
/// helper's review, in the host emulation). The default executor, both
/// forms of the backward's gradient blocks, and the tile kernels. From zero
/// starting states only: a tiny one (1e-30) under a composite decay past
/// f32's range is a state no f32 composite represents, and comes out
/// infinite where the CPU, stepping one at a time, gives 5.4e8 (seen on an
/// H100, 2026-12-06; documented on `Cuda::selective_scan`).
#[test]
#[ignore = "needs a CUDA GPU"]
fn decays_growing_to_near_f32_max_stay_finite_on_the_gpu() {
    let mut gpus: Vec<(String, scan::cuda::Cuda)> = vec![("default".into(), gpu()), ("tiles".into(), tiles())];
    gpus.extend(both_forms().map(|(form, cuda)| (form.to_string(), cuda)));
    growing_decays_stay_finite(
        &gpus,
        false,
        |cuda, args| cuda.selective_scan(args),
        |cuda, args, w| cuda.selective_scan_backward(args, w),
    );
}

/// The growing decays' cases (see above) on each of `executors`, through
/// `forward` and `backward`: finite, and within mamba_ssm's tolerances of
/// the f64 references; `tiny_start`: also from a starting state of 1e-30.
fn growing_decays_stay_finite<E>(
    executors: &[(String, E)],
    tiny_start: bool,
    forward: impl Fn(&E, &SelectiveScan<'_>) -> Result<scan::selective::SsmOutput, Error>,
    backward: impl Fn(&E, &SelectiveScan<'_>, &[f32]) -> Result<SsmGrads, Error>,
) {
    let mut rng = Rng::fresh("selective growing decays");
    let (dim, state) = (3, 2);
    // (A of state 0 per channel; the first step's dt; the later steps')
    let cases: [([f32; 3], f32, f32); 2] = [([88.3, 88.5, 88.7], 1.0, 0.01), ([-8.83, -8.85, -8.87], -10.0, -0.1)];
    let mut failures = Vec::new();
    // Rows of 2 steps, and of 20, which a GPU block cuts into several runs
    // (their composite decays, e^105, overflow f32 where the states do not),
    // with no starting state: 1e-30 times e^105 would be a state no f32
    // composite represents, and the gradient of a starting state, e^105
    // times the adjoint, overflows f32 itself.
    let starts: &[Option<f32>] = if tiny_start { &[Some(0.0), Some(1e-30)] } else { &[Some(0.0)] };
    for (len, inits) in [(2, starts), (20, &[None][..])] {
        let shape = SsmShape { batch: 1, dim, len, state };
        for (growth, dt0, dt1) in cases {
            // State 1 decays as usual.
            let a: Vec<f32> = growth.iter().flat_map(|&g| [g, -1.0]).collect();
            let delta: Vec<f32> = (0..dim * len).map(|i| if i % len == 0 { dt0 } else { dt1 }).collect();
            let mut v = |n: usize, lo: f64, hi: f64| rng.vec(n, |r| r.range_f64(lo, hi) as f32);
            let (u, b, c, w) = (
                v(dim * len, -1.0, 1.0),
                v(dim * state, -1.0, 1.0),
                v(dim * state, -0.5, 0.5),
                v(dim * len, -0.1, 0.1),
            );
            for &init in inits {
                let case = format!("L {len}, A {growth:?}, dt {dt0} then {dt1}, starting state {init:?}");
                let init = init.map(|x| vec![x; dim * state]);
                let mut args = SelectiveScan::new(shape, &u, &delta, &a, Projection::Fixed(&b), Projection::Fixed(&c))
                    .return_last_state(true);
                if let Some(init) = &init {
                    args = args.initial_state(init);
                }
                let (want, want_last) = reference(&args).unwrap();
                let want_last = want_last.unwrap();
                let want_grads = reference_backward(&args, &w).unwrap();
                for (name_of, executor) in executors {
                    let got = forward(executor, &args).unwrap_or_else(|e| panic!("{case}, {name_of}: {e}"));
                    let pairs = [("out", got.out, &want), ("last_state", got.last_state.unwrap(), &want_last)];
                    for (name, got, want) in pairs {
                        assert!(want.iter().all(|x| x.is_finite()), "{case}: the reference's {name} {want:?}");
                        let want: Vec<f32> = want.iter().map(|&x| x as f32).collect();
                        if !got.iter().all(|x| x.is_finite()) {
                            failures.push(format!("{case}, {name_of}: {name} {got:?}, want {want:?}"));
                        } else if let Err(e) = within_mamba_tolerance(&got, &want) {
                            failures.push(format!("{case}, {name_of}: {name}{e}"));
                        }
                    }
                    let grads = backward(executor, &args, &w).unwrap_or_else(|e| panic!("{case}, {name_of}: {e}"));
                    let all = |g: &SsmGrads| {
                        let optional = [&g.dd, &g.dz, &g.ddelta_bias, &g.dinitial_state];
                        [&g.du, &g.ddelta, &g.da, &g.db, &g.dc]
                            .into_iter()
                            .chain(optional.into_iter().flatten())
                            .flatten()
                            .all(|x| x.is_finite())
                    };
                    assert!(all(&want_grads), "{case}: the reference's gradients {want_grads:?}");
                    if !all(&grads) {
                        failures.push(format!("{case}, {name_of}: gradients not finite: {grads:?}"));
                    } else if let Err(e) = grads_close(&grads, &want_grads) {
                        failures.push(format!("{case}, {name_of}: {e}"));
                    }
                }
            }
        }
    }
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}

/// Saved states of the same shape and the same B buffer but another
/// grouping of B or C are an error naming `saved` (they were taken for the
/// same arguments, the grouping unchecked, and gave wrong gradients): B
/// varying in 1 group against B fixed over the same buffer (batch x L =
/// dim: the same length; L past one chunk of 64, so that the states kept
/// depend on B), both ways; B in 1 group against 2 groups over a
/// buffer with the same start; C varying against C fixed. The arguments
/// saved from still give the plain backward's gradients bit for bit.
#[test]
fn saved_states_of_another_grouping_are_an_error() {
    let mut rng = Rng::fresh("selective saved grouping");
    let (dim, len, state) = (128, 128, 2);
    let shape = SsmShape { batch: 1, dim, len, state };
    let mut v = |n: usize, lo: f64, hi: f64| rng.vec(n, |r| r.range_f64(lo, hi) as f32);
    let (u, delta, a, w) =
        (v(dim * len, -1.0, 1.0), v(dim * len, 0.1, 0.8), v(dim * state, -1.5, -0.3), v(dim * len, -1.0, 1.0));
    // (batch, 2, N, L): its first half is (batch, 1, N, L), and (dim, N).
    let (bc, other) = (v(2 * state * len, -1.0, 1.0), v(dim * state, -1.0, 1.0));
    let one = state * len;
    assert_eq!(one, dim * state);
    let varying = |groups: usize| Projection::Varying { data: &bc[..groups * one], groups };
    let fixed = Projection::Fixed(&bc[..one]);
    let scan = |b, c| SelectiveScan::new(shape, &u, &delta, &a, b, c);
    let pairs = [
        (
            "B varying (1 group), then fixed",
            scan(varying(1), Projection::Fixed(&other)),
            scan(fixed, Projection::Fixed(&other)),
        ),
        (
            "B fixed, then varying (1 group)",
            scan(fixed, Projection::Fixed(&other)),
            scan(varying(1), Projection::Fixed(&other)),
        ),
        (
            "B in 1 group, then 2",
            scan(varying(1), Projection::Fixed(&other)),
            scan(varying(2), Projection::Fixed(&other)),
        ),
        (
            "B in 2 groups, then 1",
            scan(varying(2), Projection::Fixed(&other)),
            scan(varying(1), Projection::Fixed(&other)),
        ),
        (
            "C varying (1 group), then fixed",
            scan(Projection::Fixed(&other), varying(1)),
            scan(Projection::Fixed(&other), fixed),
        ),
    ];
    let mut failures = Vec::new();
    for threads in [1, 3] {
        let cpu = Cpu::new().with_threads(threads);
        for (what, from, to) in &pairs {
            let (_, saved) = cpu.selective_scan_saving(from).unwrap();
            assert!(saved.holds_states(), "{what}");
            match cpu.selective_scan_backward_saved(to, &saved, &w) {
                Err(Error::WrongShape { argument, .. }) if argument == "saved" => {}
                Err(e) => failures.push(format!("{what}, {threads} threads: {e}")),
                Ok(g) => {
                    let right = g == cpu.selective_scan_backward(to, &w).unwrap();
                    failures
                        .push(format!("{what}, {threads} threads: accepted, the plain backward's gradients: {right}"));
                }
            }
            let same = cpu.selective_scan_backward_saved(from, &saved, &w).unwrap();
            assert_eq!(
                same,
                cpu.selective_scan_backward(from, &w).unwrap(),
                "{what}, {threads} threads: the arguments saved from"
            );
        }
    }
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}

/// On the GPU too: the states saved by the training forward on the tile
/// path (B and C varying in 1 group) are refused, naming `saved`, by the
/// backward of the same device buffers with B or C made fixed (the fields
/// are public; batch x L = dim, so the lengths still pass), and taken by
/// the backward of the grouping saved from, with the plain backward's
/// gradients.
#[test]
#[ignore = "needs a CUDA GPU"]
fn the_gpus_saved_states_of_another_grouping_are_an_error() {
    let tuning = scan::cuda::Tuning::default()
        .selective_backward_tiles(true)
        .selective_kernel(scan::cuda::SelectiveKernelChoice::Tiles);
    let cuda = gpu().with_tuning(tuning);
    let mut rng = Rng::fresh("selective backward gpu saved grouping");
    let shape = SsmShape { batch: 1, dim: 64, len: 64, state: 16 };
    let o = owned(&mut rng, shape, 1, 0);
    let w = rng.vec(64 * 64, |r| r.range_f64(-1.0, 1.0) as f32);
    let mut s = cuda.upload_selective(&args(&o, 0)).unwrap();
    let saved = cuda.run_selective_saving(&mut s).unwrap();
    assert!(saved.holds_states(), "no states saved on the tile path");
    let dout = cuda.upload(&w).unwrap();
    let want = cuda.run_selective_backward(&s, &dout).unwrap().download().unwrap();
    let got = cuda.run_selective_backward_saved(&s, &dout, &saved).unwrap().download().unwrap();
    assert_eq!(got, want, "the grouping saved from");
    for which in ["B", "C"] {
        match which {
            "B" => s.b.groups = None,
            _ => s.c.groups = None,
        }
        match cuda.run_selective_backward_saved(&s, &dout, &saved) {
            Err(Error::WrongShape { argument, .. }) if argument == "saved" => {}
            r => panic!("{which} fixed over the buffer saved varying: {:?}", r.map(drop)),
        }
        (s.b.groups, s.c.groups) = (Some(1), Some(1));
    }
}
