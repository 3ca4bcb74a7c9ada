//! The selective scan's backward pass, with mamba_ssm's semantics
//! (`selective_scan_bwd`): given dL/d`out`, the gradients with respect to
//! `u`, `delta`, `A`, `B`, `C` and, when given, `D`, `z`, `delta_bias` and the
//! initial state.
//!
//! Per row (batch b, channel d) and state index n, with `a_t = exp(dt_t A)`
//! and `x_t = a_t x_{t-1} + dt_t B_t u_t`, the gradient reaching the state,
//! `g_t = dy_t C_t + a_{t+1} g_{t+1}`, is the reverse linear recurrence
//! (`crate::backward`); from it:
//!
//! ```text
//! dC_t += dy_t x_t      dB_t += g_t dt_t u_t      du_t += dy_t D + sum_n g_t dt_t B_t
//! dA   += sum_t g_t x_{t-1} a_t dt_t              ddt_t = sum_n g_t (x_{t-1} a_t A + B_t u_t)
//! ddelta_t = ddt_t sigmoid(delta_t + bias) (softplus, up to 20) or ddt_t;  d(delta_bias) = sum_t ddelta_t
//! dy_t = dout_t silu(z_t), dz_t = dout_t y_t silu'(z_t) when z is given;  dD = sum_t dy_t u_t
//! ```
//!
//! The forward states are recomputed one row at a time (L x N values for the
//! row being differentiated), never stored for the whole (batch, dim, L, N).
//! [`reference_backward`] runs the rows in order, in f64; backends split the
//! rows ([`RowGrads`] accumulates one part, [`RowGrads::add`] joins parts).

use super::{silu, SelectiveScan, SsmInput, SsmShape};
use crate::selective::Projection;
use crate::{Error, Result};

/// The gradients of a selective scan, shaped like the arguments they belong
/// to; the optional ones are present exactly when the argument was given.
#[derive(Clone, Debug, PartialEq)]
pub struct SsmGrads {
    /// dL/du, (batch, dim, L).
    pub du: Vec<f32>,
    /// dL/ddelta (before bias and softplus), (batch, dim, L).
    pub ddelta: Vec<f32>,
    /// dL/dA, (dim, N).
    pub da: Vec<f32>,
    /// dL/dB, shaped like B.
    pub db: Vec<f32>,
    /// dL/dC, shaped like C.
    pub dc: Vec<f32>,
    /// dL/dD, (dim).
    pub dd: Option<Vec<f32>>,
    /// dL/dz, (batch, dim, L).
    pub dz: Option<Vec<f32>>,
    /// dL/d(delta_bias), (dim).
    pub ddelta_bias: Option<Vec<f32>>,
    /// dL/d(initial state), (batch, dim, N).
    pub dinitial_state: Option<Vec<f32>>,
}

/// Gradients accumulated in f64 over some rows: per-row arrays (du, ddelta,
/// dz, the initial state's) are written by their row only; shared ones (A, B,
/// C, D, delta_bias) are summed.
#[derive(Clone, Debug)]
pub struct RowGrads {
    du: Vec<f64>,
    ddelta: Vec<f64>,
    da: Vec<f64>,
    db: Vec<f64>,
    dc: Vec<f64>,
    dd: Vec<f64>,
    dz: Vec<f64>,
    dbias: Vec<f64>,
    dx0: Vec<f64>,
}

fn len_of(p: Projection<'_>) -> usize {
    match p {
        Projection::Varying { data, .. } | Projection::Fixed(data) => data.len(),
    }
}

impl RowGrads {
    /// Zero gradients for `args`' shapes.
    ///
    /// # Panics
    /// When `args` fail [`SelectiveScan::validate`] (the sizes may then
    /// overflow): call it first, as [`reference_backward`] does.
    pub fn zeros(args: &SelectiveScan<'_>) -> RowGrads {
        let SsmShape { batch, dim, len, state } = args.shape;
        let bdl = batch * dim * len;
        RowGrads {
            du: vec![0.0; bdl],
            ddelta: vec![0.0; bdl],
            da: vec![0.0; dim * state],
            db: vec![0.0; len_of(args.b)],
            dc: vec![0.0; len_of(args.c)],
            dd: vec![0.0; dim],
            dz: vec![0.0; bdl],
            dbias: vec![0.0; dim],
            // Only where there is an initial state (bounded by it then).
            dx0: if args.initial_state.is_some() { vec![0.0; batch * dim * state] } else { Vec::new() },
        }
    }

    /// Adds `other`'s gradients (rows disjoint from this one's).
    pub fn add(&mut self, other: &RowGrads) {
        for (mine, theirs) in [
            (&mut self.du, &other.du),
            (&mut self.ddelta, &other.ddelta),
            (&mut self.da, &other.da),
            (&mut self.db, &other.db),
            (&mut self.dc, &other.dc),
            (&mut self.dd, &other.dd),
            (&mut self.dz, &other.dz),
            (&mut self.dbias, &other.dbias),
            (&mut self.dx0, &other.dx0),
        ] {
            mine.iter_mut().zip(theirs).for_each(|(m, t)| *m += t);
        }
    }

    /// The f32 gradients, with the optional ones where `args` has the
    /// argument.
    pub fn finish(self, args: &SelectiveScan<'_>) -> SsmGrads {
        let f = |v: Vec<f64>| v.into_iter().map(|x| x as f32).collect::<Vec<f32>>();
        SsmGrads {
            du: f(self.du),
            ddelta: f(self.ddelta),
            da: f(self.da),
            db: f(self.db),
            dc: f(self.dc),
            dd: args.d.map(|_| f(self.dd)),
            dz: args.z.map(|_| f(self.dz)),
            ddelta_bias: args.delta_bias.map(|_| f(self.dbias)),
            dinitial_state: args.initial_state.map(|_| f(self.dx0)),
        }
    }

    /// Differentiates row `row` (= b * dim + d) given `dout`, recomputing its
    /// forward states; `states` is scratch of (L + 1) * N values.
    ///
    /// # Panics
    /// When `row` is not below batch x dim, or `args` and `dout` fail
    /// [`check_dout`]: call it first, as [`reference_backward`] does.
    pub fn row(&mut self, args: &SelectiveScan<'_>, dout: &[f32], row: usize, states: &mut Vec<f64>) {
        let SsmShape { dim, len, state, .. } = args.shape;
        let (b, d) = (row / dim, row % dim);
        let base = row * len;
        let proj_index = |p: Projection<'_>, n: usize, t: usize| match p {
            Projection::Fixed(_) => d * state + n,
            Projection::Varying { groups, .. } => ((b * groups + d / (dim / groups)) * state + n) * len + t,
        };
        // Forward: x_{t}[n] at states[(t + 1) * N + n], x_{-1} at states[n].
        states.clear();
        states.resize((len + 1) * state, 0.0);
        for n in 0..state {
            states[n] = args.initial_state.map_or(0.0, |s| f64::from(s[row * state + n]));
        }
        let dts: Vec<f64> = (0..len).map(|t| args.dt_f64(b, d, t)).collect();
        let u = |t: usize| f64::from(args.u[base + t]);
        let a_of = |t: usize, n: usize| (dts[t] * f64::from(args.a[d * state + n])).exp();
        for t in 0..len {
            for n in 0..state {
                let bv = f64::from(args.projection_at(args.b, b, d, n, t));
                states[(t + 1) * state + n] = a_of(t, n) * states[t * state + n] + dts[t] * bv * u(t);
            }
        }
        // dy, dz, dD, du from the skip term.
        let skip = args.d.map_or(0.0, |dd| f64::from(dd[d]));
        let mut dy = vec![0.0f64; len];
        for t in 0..len {
            let g = f64::from(dout[base + t]);
            dy[t] = match args.z {
                Some(z) => {
                    let zt = f64::from(z[base + t]);
                    let y: f64 = (0..state)
                        .map(|n| f64::from(args.projection_at(args.c, b, d, n, t)) * states[(t + 1) * state + n])
                        .sum::<f64>()
                        + skip * u(t);
                    let sig = 1.0 / (1.0 + (-zt).exp());
                    self.dz[base + t] = g * y * sig * (1.0 + zt * (1.0 - sig));
                    g * silu(zt)
                }
                None => g,
            };
            self.dd[d] += dy[t] * u(t);
            self.du[base + t] += dy[t] * skip;
        }
        // The reverse recurrence per state index.
        let mut ddt = vec![0.0f64; len];
        for n in 0..state {
            let a_n = f64::from(args.a[d * state + n]);
            let mut carried = 0.0; // a_{t+1} g_{t+1}
            for t in (0..len).rev() {
                let cv = f64::from(args.projection_at(args.c, b, d, n, t));
                let bv = f64::from(args.projection_at(args.b, b, d, n, t));
                let g = dy[t] * cv + carried;
                let (x_t, x_prev) = (states[(t + 1) * state + n], states[t * state + n]);
                let a_t = a_of(t, n);
                self.dc[proj_index(args.c, n, t)] += dy[t] * x_t;
                let d_a = g * x_prev;
                self.da[d * state + n] += d_a * a_t * dts[t];
                ddt[t] += d_a * a_t * a_n + g * bv * u(t);
                self.db[proj_index(args.b, n, t)] += g * dts[t] * u(t);
                self.du[base + t] += g * dts[t] * bv;
                carried = g * a_t;
            }
            if let Some(dx0) = self.dx0.get_mut(row * state + n) {
                *dx0 = carried;
            }
        }
        let bias = args.delta_bias.map_or(0.0, |bias| f64::from(bias[d]));
        for (t, &ddt) in ddt.iter().enumerate() {
            let pre = f64::from(args.delta[base + t]) + bias;
            // The forward's softplus is the identity above 20 (as torch's and
            // mamba_ssm's), so its derivative there is 1, not sigmoid(pre).
            let dd = if args.delta_softplus && pre <= 20.0 { ddt / (1.0 + (-pre).exp()) } else { ddt };
            self.ddelta[base + t] = dd;
            self.dbias[d] += dd;
        }
    }
}

/// The backward pass in f64, rows in order: the oracle for the backends.
/// `dout` is dL/d`out`, (batch, dim, L). Errors: the argument checks of
/// [`SelectiveScan::validate`], and [`Error::WrongShape`] for `dout`.
///
/// ```
/// use scan_core::selective::{backward::reference_backward, Projection, SelectiveScan, SsmShape};
/// // One step, N = 1: out = C * dt * B * u with dt = 0.5, B = C = 1: dL/du = 0.5.
/// let shape = SsmShape { batch: 1, dim: 1, len: 1, state: 1 };
/// let one = Projection::Fixed(&[1.0]);
/// let args = SelectiveScan::new(shape, &[2.0], &[0.5], &[-1.0], one, one);
/// let g = reference_backward(&args, &[1.0]).unwrap();
/// assert_eq!((g.du[0], g.ddelta[0]), (0.5, 2.0));
/// ```
pub fn reference_backward(args: &SelectiveScan<'_>, dout: &[f32]) -> Result<SsmGrads> {
    check_dout(args, dout)?;
    let SsmShape { batch, dim, len, .. } = args.shape;
    let mut grads = RowGrads::zeros(args);
    if len == 0 {
        // Nothing depends on the rows' (empty) steps: every gradient is 0
        // (and batch x dim rows of nothing could be many).
        return Ok(grads.finish(args));
    }
    let mut states = Vec::new();
    for row in 0..batch * dim {
        grads.row(args, dout, row, &mut states);
    }
    Ok(grads.finish(args))
}

/// Checks the arguments and that `dout` is shaped like `out`.
pub fn check_dout<T: SsmInput>(args: &SelectiveScan<'_, T>, dout: &[f32]) -> Result<()> {
    args.validate()?;
    check_dout_len(args.shape, dout.len())
}

/// Checks that `len` items of `dout` are shaped like `out` of a scan of
/// `shape` ([`Error::WrongShape`] naming `dout` otherwise), for `dout` held
/// anywhere (a host slice, a device buffer).
pub fn check_dout_len(shape: SsmShape, len: usize) -> Result<()> {
    let SsmShape { batch, dim, len: steps, .. } = shape;
    let want = super::items_of([batch, dim, steps]);
    if want != Some(len) {
        let items = want.map_or("more items than fit in memory".to_string(), |n| format!("{n} items"));
        return Err(Error::WrongShape {
            argument: "dout".into(),
            expected: format!("(batch, dim, L) = ({batch}, {dim}, {steps}), {items}"),
            found: format!("{len} items"),
        });
    }
    Ok(())
}
