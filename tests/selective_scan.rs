//! The selective scan on the CPU against the f64 reference
//! (`scan::selective::reference`), within mamba_ssm's own f32 tolerances
//! (rtol 6e-4, atol 2e-3):
//!
//! * N in {1, 4, 16, 64}, L from 1 to 2^17, batch x dim from 1 x 1 to
//!   8 x 1536, on one thread and on several (rows split across threads, and
//!   few rows cut into chunks along L);
//! * B and C varying (with groups) and fixed;
//! * every optional argument present and absent;
//! * resuming from the last state of the first half equals the whole;
//! * wrong shapes are errors naming the argument.

use scan::selective::{reference, Projection, SelectiveScan, SsmShape};
use scan::{Cpu, Error};
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

fn check(cpu: &Cpu, ctx: &str, args: &SelectiveScan<'_>) {
    let (want, want_last) = reference(args).unwrap();
    let got = cpu.selective_scan(args).unwrap();
    let close = |g: f32, w: f64| (f64::from(g) - w).abs() <= ATOL + RTOL * w.abs();
    if let Some(i) = (0..want.len()).find(|&i| !close(got.out[i], want[i])) {
        panic!("{ctx}: out[{i}] = {}, want {} ({:?})", got.out[i], want[i], args.shape);
    }
    let (got_last, want_last) = (got.last_state.unwrap(), want_last.unwrap());
    if let Some(i) = (0..want_last.len()).find(|&i| !close(got_last[i], want_last[i])) {
        panic!("{ctx}: last_state[{i}] = {}, want {} ({:?})", got_last[i], want_last[i], args.shape);
    }
}

#[test]
fn the_cpu_matches_the_reference_on_every_shape_and_option() {
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
    let executors = [("1 thread", Cpu::new().with_threads(1)), ("4 threads", Cpu::new().with_threads(4))];
    for (batch, dim, len, state, groups) in shapes {
        let inputs = Inputs::new(&mut rng, SsmShape { batch, dim, len, state }, groups);
        // Every option alone, none, and all at once; fixed B and C too.
        for options in [0u32, 1, 2, 4, 8, 16, 32, 15, 63] {
            for (name, cpu) in &executors {
                check(cpu, &format!("{name}, options {options:#b}"), &inputs.args(options));
            }
        }
    }
}

/// Few rows on several threads are cut into chunks along L; with a state
/// that barely decays, every chunk's result depends on its carried start.
#[test]
fn chunks_along_the_sequence_carry_the_state() {
    let mut rng = Rng::fresh("selective scan chunks");
    let cpu = Cpu::new().with_threads(4);
    for (batch, dim, len) in [(1, 1, 8192), (1, 2, 5000), (1, 3, 2048 + 7)] {
        let inputs = Inputs::decaying(&mut rng, SsmShape { batch, dim, len, state: 4 }, 1, (-0.002, 0.0));
        for options in [0u32, 8, 15, 63] {
            check(&cpu, &format!("slow decay, options {options:#b}"), &inputs.args(options));
        }
    }
}

#[test]
fn resuming_from_the_last_state_of_the_first_half_equals_the_whole() {
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
    for cpu in [Cpu::new().with_threads(1), Cpu::new().with_threads(4)] {
        let all = cpu.selective_scan(&whole.args(0b111)).unwrap();
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
            cpu.selective_scan(&args).unwrap()
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
    let mut rng = Rng::fresh("selective scan shapes wrong");
    let inputs = Inputs::new(&mut rng, SsmShape { batch: 2, dim: 4, len: 5, state: 3 }, 2);
    let cpu = Cpu::new();
    let args = inputs.args(0b1111);
    let expect = |args: SelectiveScan<'_>, name: &str| {
        let err = cpu.selective_scan(&args).unwrap_err();
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
    let err = cpu.selective_scan(&SelectiveScan { u: &inputs.u[1..], ..args }).unwrap_err();
    let text = err.to_string();
    assert!(text.contains("(batch, dim, L) = (2, 4, 5), 40 items") && text.contains("found 39 items"), "{text}");
    let zero = SsmShape { state: 0, ..inputs.shape };
    expect(SelectiveScan { shape: zero, ..args }, "N");
}
