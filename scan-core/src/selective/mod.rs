//! The selective scan of Mamba (`selective_scan_fn` in mamba_ssm): the
//! arguments, their shape checks, and the sequential f64 reference that the
//! backends are tested against.
//!
//! For every batch `b`, channel `d` and state index `n`, with
//! `dt = softplus(delta + delta_bias)` (each step optional):
//!
//! ```text
//! x_t[n] = exp(dt_t * A[d, n]) * x_{t-1}[n] + dt_t * B_t[n] * u_t      (x_{-1} = initial state or 0)
//! y_t    = sum_n x_t[n] * C_t[n] + D[d] * u_t
//! out_t  = y_t * silu(z_t)                                             (when z is given)
//! ```
//!
//! The recurrence in `x` is the linear recurrence `h_t = a_t h_{t-1} + b_t`
//! ([`crate::ops::LinearRecurrence`]) with `a_t = exp(dt_t A)` and
//! `b_t = dt_t B_t u_t`, one per (b, d, n): backends may scan it in pieces.
//!
//! Layouts are mamba_ssm's, row-major: `u`, `delta`, `z`, `out`:
//! (batch, dim, L); `A`: (dim, N); `B`, `C`: (batch, N, L), (batch, groups,
//! N, L) (channel `d` reads group `d / (dim / groups)`) or (dim, N) fixed;
//! `D`, `delta_bias`: (dim); initial and last state: (batch, dim, N).

use crate::{Error, Result};

pub mod backward;

/// The sizes of one selective scan.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SsmShape {
    /// Sequences in the batch.
    pub batch: usize,
    /// Channels (`d_inner` in Mamba).
    pub dim: usize,
    /// Sequence length `L`.
    pub len: usize,
    /// State size `N` (`d_state`).
    pub state: usize,
}

/// The lengths of a selective scan's arguments, in items: what
/// [`SsmShape::check`] checks, for arguments held anywhere (host slices,
/// device buffers). A projection is (length, `Some(groups)` when varying,
/// `None` when fixed); an option is `None` when absent.
#[derive(Clone, Copy, Debug, Default)]
pub struct SsmLengths {
    /// `u`.
    pub u: usize,
    /// `delta`.
    pub delta: usize,
    /// `A`.
    pub a: usize,
    /// `B`.
    pub b: (usize, Option<usize>),
    /// `C`.
    pub c: (usize, Option<usize>),
    /// `D`.
    pub d: Option<usize>,
    /// `z`.
    pub z: Option<usize>,
    /// `delta_bias`.
    pub delta_bias: Option<usize>,
    /// The initial state.
    pub initial_state: Option<usize>,
}

/// The items of an array of these dimensions: 0 when any is 0 (however
/// large the others), `None` when the product overflows.
pub(crate) fn items_of(dims: impl IntoIterator<Item = usize> + Clone) -> Option<usize> {
    if dims.clone().into_iter().any(|n| n == 0) {
        return Some(0);
    }
    dims.into_iter().try_fold(1usize, usize::checked_mul)
}

impl SsmShape {
    /// Checks every argument's length against this shape; the error
    /// ([`Error::WrongShape`]) names the argument, the shape it must have
    /// and what it has; [`Error::TooLarge`] when an f64 per (batch, dim, L,
    /// N) point, each 0 counted as 1, could not be addressed (with L = 0 no
    /// argument bounds the states, with dim = 0 none bounds batch or N; an
    /// array that can be addressed but not allocated is a `TooLarge` of the
    /// call that needs it, see [`zeros`]).
    pub fn check(&self, lengths: &SsmLengths) -> Result<()> {
        let SsmShape { batch, dim, len, state } = *self;
        let check = |name: &str, got: usize, dims: &[(&str, usize)]| -> Result<()> {
            let want = items_of(dims.iter().map(|&(_, n)| n));
            if want == Some(got) {
                return Ok(());
            }
            let names: Vec<&str> = dims.iter().map(|(n, _)| *n).collect();
            let sizes: Vec<String> = dims.iter().map(|(_, n)| n.to_string()).collect();
            let expected = match want {
                Some(w) => format!("({}) = ({}), {w} items", names.join(", "), sizes.join(", ")),
                None => format!("({}) = ({}), more items than fit in memory", names.join(", "), sizes.join(", ")),
            };
            Err(Error::WrongShape { argument: name.to_string(), expected, found: format!("{got} items") })
        };
        if state == 0 {
            return Err(Error::WrongShape {
                argument: "N".into(),
                expected: "at least 1 (the state size)".into(),
                found: "0".into(),
            });
        }
        let bdl = [("batch", batch), ("dim", dim), ("L", len)];
        check("u", lengths.u, &bdl)?;
        check("delta", lengths.delta, &bdl)?;
        check("A", lengths.a, &[("dim", dim), ("N", state)])?;
        for (name, (got, groups)) in [("B", lengths.b), ("C", lengths.c)] {
            match groups {
                None => check(name, got, &[("dim", dim), ("N", state)])?,
                Some(groups) => {
                    if groups == 0 || dim % groups != 0 {
                        return Err(Error::WrongShape {
                            argument: name.to_string(),
                            expected: format!("a number of groups that divides dim = {dim}"),
                            found: format!("{groups} groups"),
                        });
                    }
                    check(name, got, &[("batch", batch), ("groups", groups), ("N", state), ("L", len)])?;
                }
            }
        }
        if let Some(d) = lengths.d {
            check("D", d, &[("dim", dim)])?;
        }
        if let Some(z) = lengths.z {
            check("z", z, &bdl)?;
        }
        if let Some(bias) = lengths.delta_bias {
            check("delta_bias", bias, &[("dim", dim)])?;
        }
        if let Some(s) = lengths.initial_state {
            check("initial_state", s, &[("batch", batch), ("dim", dim), ("N", state)])?;
        }
        // Bound the arrays no argument bounds: the states (the last one, an
        // initial one's gradient: (batch, dim, N) floats) when L = 0, and,
        // when dim = 0 empties every argument, batch and N themselves (the
        // loops, a state of N f64s, grids of batch x ranges). One bound
        // covers both: an f64 per (batch, dim, L, N) point, each 0 counted
        // as 1, must be addressable.
        let points = [batch, dim, len, state].iter().try_fold(1usize, |acc, &n| acc.checked_mul(n.max(1)));
        if !matches!(points.and_then(|n| n.checked_mul(std::mem::size_of::<f64>())), Some(b) if b <= isize::MAX as usize)
        {
            return Err(Error::TooLarge {
                what: format!(
                    "the shape (batch, dim, L, N) = ({batch}, {dim}, {len}, {state}), each 0 counted as 1, \
                     has more points than an f64 array in memory could hold"
                ),
            });
        }
        Ok(())
    }
}

/// The element type of the selective scan's activations (`u`, `delta`, `z`,
/// `B`, `C`): `f32`, or `bf16` / `f16` read into f32 exactly, as mamba_ssm
/// allows; the state, the weights (`A`, `D`, `delta_bias`) and the outputs
/// stay f32.
pub trait SsmInput: sealed::Sealed + Copy + Send + Sync + std::fmt::Debug + 'static {
    /// How the values are stored, for a backend that reads or widens them
    /// itself (the GPU uploads bf16 and f16 at their own width and widens
    /// them on the device).
    const FORMAT: SsmFormat;
    /// The exact f32 value.
    fn to_f32(self) -> f32;
    /// `values` as f32s without a copy, when they are f32s already.
    fn as_f32(values: &[Self]) -> Option<&[f32]>;
}

/// The storage of an [`SsmInput`] type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SsmFormat {
    /// IEEE binary32.
    F32,
    /// bfloat16: the upper 16 bits of an f32.
    Bf16,
    /// IEEE binary16.
    F16,
}

/// The three types above only: the backends trust `as_f32` to keep a
/// slice's length.
mod sealed {
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for half::bf16 {}
    impl Sealed for half::f16 {}
}

impl SsmInput for f32 {
    const FORMAT: SsmFormat = SsmFormat::F32;
    fn to_f32(self) -> f32 {
        self
    }
    fn as_f32(values: &[f32]) -> Option<&[f32]> {
        Some(values)
    }
}

impl SsmInput for half::bf16 {
    const FORMAT: SsmFormat = SsmFormat::Bf16;
    fn to_f32(self) -> f32 {
        half::bf16::to_f32(self)
    }
    fn as_f32(_: &[Self]) -> Option<&[f32]> {
        None
    }
}

impl SsmInput for half::f16 {
    const FORMAT: SsmFormat = SsmFormat::F16;
    fn to_f32(self) -> f32 {
        half::f16::to_f32(self)
    }
    fn as_f32(_: &[Self]) -> Option<&[f32]> {
        None
    }
}

/// `B` or `C`: input-dependent (per batch and step) or fixed (per channel).
#[derive(Clone, Copy, Debug)]
pub enum Projection<'a, T = f32> {
    /// (batch, groups, N, L); `groups` divides `dim` (1: the (batch, N, L) form).
    Varying {
        /// The values, (batch, groups, N, L).
        data: &'a [T],
        /// Groups of channels sharing one projection.
        groups: usize,
    },
    /// (dim, N), the same at every step.
    Fixed(&'a [T]),
}

impl<'a, T: SsmInput> Projection<'a, T> {
    /// The values, whatever the form.
    pub fn data(self) -> &'a [T] {
        match self {
            Projection::Varying { data, .. } | Projection::Fixed(data) => data,
        }
    }

    /// The same projection over `data` (of the same length).
    fn with<U>(self, data: &[U]) -> Projection<'_, U> {
        match self {
            Projection::Varying { groups, .. } => Projection::Varying { data, groups },
            Projection::Fixed(_) => Projection::Fixed(data),
        }
    }
}

/// The arguments of [`selective_scan`](crate::selective) as mamba_ssm's
/// `selective_scan_fn` takes them: the activations of type `T` (f32 by
/// default, or bf16 / f16: [`SsmInput`]), everything else f32. Build with
/// [`SelectiveScan::new`] and the optional setters.
///
/// ```
/// use scan_core::selective::{reference, Projection, SelectiveScan, SsmShape};
/// let shape = SsmShape { batch: 1, dim: 2, len: 3, state: 1 };
/// let (u, delta) = ([1.0; 6], [0.5; 6]);
/// let a = [-1.0, -2.0];
/// let b = Projection::Varying { data: &[1.0; 3], groups: 1 };
/// let c = Projection::Fixed(&[1.0, 1.0]);
/// let args = SelectiveScan::new(shape, &u, &delta, &a, b, c).d(&[0.0, 0.0]);
/// let (out, last) = reference(&args).unwrap();
/// assert_eq!(out.len(), 6);
/// // x_0 = 0.5 (dt * B * u), then x_t = exp(-0.5) x_{t-1} + 0.5.
/// assert!((out[0] - 0.5).abs() < 1e-12 && (out[1] - (0.5f64 * (-0.5f64).exp() + 0.5)).abs() < 1e-12);
/// assert!(last.is_none());
/// ```
#[derive(Clone, Copy, Debug)]
pub struct SelectiveScan<'a, T = f32> {
    /// The sizes every argument is checked against.
    pub shape: SsmShape,
    /// The input, (batch, dim, L).
    pub u: &'a [T],
    /// The step sizes before bias and softplus, (batch, dim, L).
    pub delta: &'a [T],
    /// The state matrix, real, (dim, N); negative for a decaying state.
    pub a: &'a [f32],
    /// The input projection.
    pub b: Projection<'a, T>,
    /// The output projection.
    pub c: Projection<'a, T>,
    /// The skip term, (dim).
    pub d: Option<&'a [f32]>,
    /// The gate, (batch, dim, L).
    pub z: Option<&'a [T]>,
    /// Added to `delta`, (dim).
    pub delta_bias: Option<&'a [f32]>,
    /// Whether `delta` (with its bias) goes through a softplus.
    pub delta_softplus: bool,
    /// The state to start from, (batch, dim, N); zero if absent.
    pub initial_state: Option<&'a [f32]>,
    /// Whether the state after the last step is returned.
    pub return_last_state: bool,
}

impl<'a, T: SsmInput> SelectiveScan<'a, T> {
    /// The required arguments; every option off.
    pub fn new(
        shape: SsmShape,
        u: &'a [T],
        delta: &'a [T],
        a: &'a [f32],
        b: Projection<'a, T>,
        c: Projection<'a, T>,
    ) -> Self {
        SelectiveScan {
            shape,
            u,
            delta,
            a,
            b,
            c,
            d: None,
            z: None,
            delta_bias: None,
            delta_softplus: false,
            initial_state: None,
            return_last_state: false,
        }
    }

    /// The skip term `D` (dim).
    pub fn d(mut self, d: &'a [f32]) -> Self {
        self.d = Some(d);
        self
    }

    /// The gate `z` (batch, dim, L): `out = y * silu(z)`.
    pub fn z(mut self, z: &'a [T]) -> Self {
        self.z = Some(z);
        self
    }

    /// `delta_bias` (dim), added to `delta` before the softplus.
    pub fn delta_bias(mut self, bias: &'a [f32]) -> Self {
        self.delta_bias = Some(bias);
        self
    }

    /// `delta = softplus(delta + delta_bias)`.
    pub fn delta_softplus(mut self, on: bool) -> Self {
        self.delta_softplus = on;
        self
    }

    /// The state to resume from (batch, dim, N), for chunked inference.
    pub fn initial_state(mut self, state: &'a [f32]) -> Self {
        self.initial_state = Some(state);
        self
    }

    /// Also return the state after the last step (batch, dim, N).
    pub fn return_last_state(mut self, on: bool) -> Self {
        self.return_last_state = on;
        self
    }

    /// Checks every argument's length against the shape; the error names
    /// the argument, the shape it must have and what it has
    /// ([`Error::WrongShape`]), or is [`Error::TooLarge`] for a state that
    /// could not be addressed ([`SsmShape::check`]).
    pub fn validate(&self) -> Result<()> {
        let projection = |p: Projection<'_, T>| match p {
            Projection::Varying { data, groups } => (data.len(), Some(groups)),
            Projection::Fixed(data) => (data.len(), None),
        };
        self.shape.check(&SsmLengths {
            u: self.u.len(),
            delta: self.delta.len(),
            a: self.a.len(),
            b: projection(self.b),
            c: projection(self.c),
            d: self.d.map(<[f32]>::len),
            z: self.z.map(<[T]>::len),
            delta_bias: self.delta_bias.map(<[f32]>::len),
            initial_state: self.initial_state.map(<[f32]>::len),
        })
    }

    /// `dt` at (b, d, t): delta, plus the bias, through the softplus, as
    /// asked. In f64 for the reference; backends compute it in f32.
    ///
    /// # Panics
    /// When (b, d, t) is outside the shape or the arguments do not match it:
    /// call [`SelectiveScan::validate`] first, as the references do.
    pub fn dt_f64(&self, b: usize, d: usize, t: usize) -> f64 {
        let SsmShape { dim, len, .. } = self.shape;
        let mut dt = f64::from(self.delta[(b * dim + d) * len + t].to_f32());
        if let Some(bias) = self.delta_bias {
            dt += f64::from(bias[d]);
        }
        if self.delta_softplus {
            dt = softplus(dt);
        }
        dt
    }

    /// `B` (or `C`, by `p`) at (b, d, n, t).
    ///
    /// # Panics
    /// When (b, d, n, t) is outside the shape or `p` does not match it (a
    /// group count of 0 or one that does not divide dim included): call
    /// [`SelectiveScan::validate`] first, as the references do.
    pub fn projection_at(&self, p: Projection<'_, T>, b: usize, d: usize, n: usize, t: usize) -> f32 {
        let SsmShape { dim, len, state, .. } = self.shape;
        match p {
            Projection::Fixed(data) => data[d * state + n].to_f32(),
            Projection::Varying { data, groups } => {
                let g = d / (dim / groups);
                data[((b * groups + g) * state + n) * len + t].to_f32()
            }
        }
    }

    /// These arguments with f32 activations, borrowed, when `T` is f32.
    pub fn as_f32(&self) -> Option<SelectiveScan<'a, f32>> {
        let z = match self.z {
            Some(z) => Some(T::as_f32(z)?),
            None => None,
        };
        Some(SelectiveScan {
            shape: self.shape,
            u: T::as_f32(self.u)?,
            delta: T::as_f32(self.delta)?,
            a: self.a,
            b: self.b.with(T::as_f32(self.b.data())?),
            c: self.c.with(T::as_f32(self.c.data())?),
            d: self.d,
            z,
            delta_bias: self.delta_bias,
            delta_softplus: self.delta_softplus,
            initial_state: self.initial_state,
            return_last_state: self.return_last_state,
        })
    }

    /// The activations widened to f32 (exactly), for a backend that reads
    /// f32 only: [`Widened::args`] are these arguments in f32.
    pub fn widened(&self) -> Widened<'a> {
        let widen = |x: &[T]| x.iter().map(|v| v.to_f32()).collect::<Vec<f32>>();
        Widened {
            scan: SelectiveScan {
                shape: self.shape,
                u: &[],
                delta: &[],
                a: self.a,
                b: self.b.with(&[]),
                c: self.c.with(&[]),
                d: self.d,
                z: None,
                delta_bias: self.delta_bias,
                delta_softplus: self.delta_softplus,
                initial_state: self.initial_state,
                return_last_state: self.return_last_state,
            },
            u: widen(self.u),
            delta: widen(self.delta),
            b: widen(self.b.data()),
            c: widen(self.c.data()),
            z: self.z.map(widen),
        }
    }
}

/// A selective scan's arguments with the activations widened to f32
/// ([`SelectiveScan::widened`]).
#[derive(Clone, Debug)]
pub struct Widened<'a> {
    /// The f32 arguments but for the widened arrays below.
    scan: SelectiveScan<'a, f32>,
    u: Vec<f32>,
    delta: Vec<f32>,
    b: Vec<f32>,
    c: Vec<f32>,
    z: Option<Vec<f32>>,
}

impl Widened<'_> {
    /// The arguments, borrowing the widened arrays.
    pub fn args(&self) -> SelectiveScan<'_, f32> {
        SelectiveScan {
            u: &self.u,
            delta: &self.delta,
            b: self.scan.b.with(&self.b),
            c: self.scan.c.with(&self.c),
            z: self.z.as_deref(),
            ..self.scan
        }
    }
}

/// What a backend's selective scan returns.
#[derive(Clone, Debug, PartialEq)]
pub struct SsmOutput {
    /// `out`, (batch, dim, L).
    pub out: Vec<f32>,
    /// The state after the last step, (batch, dim, N), when asked for.
    pub last_state: Option<Vec<f32>>,
}

/// `log(1 + exp(x))`, as torch's `softplus` (linear above 20).
pub fn softplus(x: f64) -> f64 {
    if x > 20.0 {
        x
    } else {
        x.exp().ln_1p()
    }
}

/// `x * sigmoid(x)`.
pub fn silu(x: f64) -> f64 {
    x / (1.0 + (-x).exp())
}

/// `n` zeros (states, their gradients), or [`Error::TooLarge`] when they
/// cannot be allocated (instead of aborting the process): with L = 0 no
/// argument bounds a (batch, dim, N) state by its own length.
///
/// ```
/// use scan_core::selective::zeros;
/// assert_eq!(zeros::<f32>(3).unwrap(), [0.0; 3]);
/// assert!(zeros::<f64>(usize::MAX / 8).is_err());
/// ```
pub fn zeros<T: Default + Clone>(n: usize) -> Result<Vec<T>> {
    let mut v = Vec::new();
    v.try_reserve_exact(n).map_err(|_| Error::TooLarge {
        what: format!("cannot allocate {n} values of {} bytes on the host", std::mem::size_of::<T>()),
    })?;
    v.resize(n, T::default());
    Ok(v)
}

/// The sequential reference in f64: `out` (batch, dim, L) and, when asked,
/// the last state (batch, dim, N). Slow and exact enough to test against.
pub fn reference<T: SsmInput>(args: &SelectiveScan<'_, T>) -> Result<(Vec<f64>, Option<Vec<f64>>)> {
    args.validate()?;
    let SsmShape { batch, dim, len, state } = args.shape;
    let mut out = vec![0.0; batch * dim * len];
    let mut last = if args.return_last_state { Some(zeros(batch * dim * state)?) } else { None };
    if (len == 0 && last.is_none()) || batch * dim == 0 {
        // Nothing to compute (and batch x dim rows of nothing could be many;
        // with no rows, batch or N alone could be).
        return Ok((out, last));
    }
    let mut x = vec![0.0f64; state];
    for b in 0..batch {
        for d in 0..dim {
            let row = (b * dim + d) * len;
            for (n, x) in x.iter_mut().enumerate() {
                *x = args.initial_state.map_or(0.0, |s| f64::from(s[(b * dim + d) * state + n]));
            }
            for t in 0..len {
                let dt = args.dt_f64(b, d, t);
                let u = f64::from(args.u[row + t].to_f32());
                let mut y = 0.0;
                for (n, x) in x.iter_mut().enumerate() {
                    let a = (dt * f64::from(args.a[d * state + n])).exp();
                    *x = a * *x + dt * f64::from(args.projection_at(args.b, b, d, n, t)) * u;
                    y += *x * f64::from(args.projection_at(args.c, b, d, n, t));
                }
                if let Some(dd) = args.d {
                    y += f64::from(dd[d]) * u;
                }
                if let Some(z) = args.z {
                    y *= silu(f64::from(z[row + t].to_f32()));
                }
                out[row + t] = y;
            }
            if let Some(last) = &mut last {
                for (n, x) in x.iter().enumerate() {
                    last[(b * dim + d) * state + n] = *x;
                }
            }
        }
    }
    Ok((out, last))
}
