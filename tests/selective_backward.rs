//! The selective scan's backward pass: the f64 reference
//! (`scan::selective::backward::reference_backward`) against central finite
//! differences of the f64 forward reference, for every argument and every
//! optional argument present and absent (B and C varying with groups, and
//! fixed); `Cpu::selective_scan_backward` against the reference on one and
//! several threads; a wrong `dout` shape is an error naming it.

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

#[test]
fn the_cpu_matches_the_reference_on_one_and_several_threads() {
    let mut rng = Rng::fresh("selective backward cpu");
    for (batch, dim, len, state, groups) in [(2, 6, 300, 8, 2), (1, 3, 1000, 16, 1), (3, 4, 17, 1, 4)] {
        for options in [0u32, 15, 63] {
            let shape = SsmShape { batch, dim, len, state };
            let o = owned(&mut rng, shape, groups, options);
            let w = rng.vec(batch * dim * len, |r| r.range_f64(-1.0, 1.0) as f32);
            let a = args(&o, options);
            let want = reference_backward(&a, &w).unwrap();
            for threads in [1, 4] {
                let got = Cpu::new().with_threads(threads).selective_scan_backward(&a, &w).unwrap();
                let close = |x: &[f32], y: &[f32]| {
                    x.len() == y.len() && x.iter().zip(y).all(|(a, b)| (a - b).abs() <= 1e-5 * (1.0 + b.abs()))
                };
                let pairs = [
                    (&got.du, &want.du),
                    (&got.ddelta, &want.ddelta),
                    (&got.da, &want.da),
                    (&got.db, &want.db),
                    (&got.dc, &want.dc),
                ];
                for (k, (x, y)) in pairs.into_iter().enumerate() {
                    assert!(close(x, y), "{shape:?}, options {options:#b}, {threads} threads: gradient {k}");
                }
                assert_eq!(got.dd.is_some(), want.dd.is_some());
                if let (Some(x), Some(y)) = (&got.dinitial_state, &want.dinitial_state) {
                    assert!(close(x, y), "{shape:?}: initial state gradient");
                }
            }
        }
    }
}

#[test]
fn a_wrong_dout_shape_is_an_error_naming_it() {
    let mut rng = Rng::fresh("selective backward shape");
    let o = owned(&mut rng, SsmShape { batch: 1, dim: 2, len: 3, state: 1 }, 1, 0);
    let err = Cpu::new().selective_scan_backward(&args(&o, 0), &[0.0; 5]).unwrap_err();
    assert!(matches!(&err, Error::WrongShape { argument, .. } if argument == "dout"), "{err}");
}
