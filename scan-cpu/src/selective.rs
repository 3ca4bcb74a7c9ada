//! The selective scan (scan_core::selective) on the CPU, in f32 (bf16 and
//! f16 activations are widened as they are read).
//!
//! Each (batch, channel) row is independent: with at least as many rows as
//! threads, threads take whole rows. With fewer, each row's sequence is cut
//! into chunks and the recurrence `x_t = a_t x_{t-1} + b_t` (per state
//! index) is scanned in pieces, as a linear-recurrence monoid
//! ([`LinearRecurrence`]): every chunk finds its aggregate (the product of
//! its `a` and its end state from zero) in parallel, the aggregates are
//! combined in order into each chunk's starting state, and every chunk runs
//! again from its start, in parallel, writing its outputs. Twice the
//! arithmetic, no (L, N) tensor stored.
//!
//! Within a row the loop runs state index by state index over the steps, so
//! that `B` and `C` (laid out (N, L)) are read along memory; the outputs
//! gather the `N` contributions in the output row itself.

use std::ops::Range;

use scan_core::ops::LinearRecurrence;
use scan_core::selective::backward::{self, RowGrads, SsmGrads};
use scan_core::selective::{Projection, SelectiveScan, SsmInput, SsmOutput, SsmShape};
use scan_core::{Result, ScanOp};

use crate::parallel::for_each_part;
use crate::Cpu;

/// Rows shorter than this are not cut into chunks (a chunk must pay for
/// its second pass).
const MIN_CHUNK: usize = 1024;

/// A projection's values along a chunk for one state index.
#[derive(Clone, Copy)]
enum Along<'a, T> {
    Steps(&'a [T]),
    Fixed(f32),
}

impl<T: SsmInput> Along<'_, T> {
    #[inline]
    fn at(self, k: usize) -> f32 {
        match self {
            Along::Steps(s) => s[k].to_f32(),
            Along::Fixed(v) => v,
        }
    }
}

/// One row's steps `range`, from state `x` (left as the state after them).
/// When `out` is given (the row's outputs for `range`), writes `y` there,
/// gated; when `prod` is given, multiplies it by every step's `a`.
fn run<'a, T: SsmInput>(
    args: &SelectiveScan<'a, T>,
    row: usize,
    range: Range<usize>,
    x: &mut [f32],
    mut out: Option<&mut [f32]>,
    mut prod: Option<&mut [f32]>,
) {
    let SsmShape { dim, len, state, .. } = args.shape;
    let (b, d) = (row / dim, row % dim);
    let base = row * len;
    let dt: Vec<f32> = range
        .clone()
        .map(|t| {
            let mut dt = args.delta[base + t].to_f32();
            if let Some(bias) = args.delta_bias {
                dt += bias[d];
            }
            if args.delta_softplus {
                dt = if dt > 20.0 { dt } else { dt.exp().ln_1p() };
            }
            dt
        })
        .collect();
    let u = &args.u[base + range.start..base + range.end];
    let widened: Vec<f32>;
    let u: &[f32] = match T::as_f32(u) {
        Some(u) => u,
        None => {
            widened = u.iter().map(|v| v.to_f32()).collect();
            &widened
        }
    };
    if let Some(out) = out.as_deref_mut() {
        out.fill(0.0);
    }
    // A projection's values for state index n over `range`.
    let along = |p: Projection<'a, T>, n: usize| match p {
        Projection::Fixed(data) => Along::Fixed(data[d * state + n].to_f32()),
        Projection::Varying { data, groups } => {
            let g = d / (dim / groups);
            let start = ((b * groups + g) * state + n) * len;
            Along::Steps(&data[start + range.start..start + range.end])
        }
    };
    for (n, x) in x.iter_mut().enumerate() {
        let a_n = args.a[d * state + n];
        let (bs, cs) = (along(args.b, n), along(args.c, n));
        let mut p = 1.0f32;
        for k in 0..dt.len() {
            let a = (dt[k] * a_n).exp();
            *x = a * *x + dt[k] * bs.at(k) * u[k];
            p *= a;
            if let Some(out) = out.as_deref_mut() {
                out[k] += *x * cs.at(k);
            }
        }
        if let Some(prod) = prod.as_deref_mut() {
            prod[n] *= p;
        }
    }
    if let Some(out) = out {
        for (k, y) in out.iter_mut().enumerate() {
            let t = range.start + k;
            if let Some(dd) = args.d {
                *y += dd[d] * u[k];
            }
            if let Some(z) = args.z {
                let z = z[base + t].to_f32();
                *y *= z / (1.0 + (-z).exp());
            }
        }
    }
}

/// The state a row starts from.
fn initial<T: SsmInput>(args: &SelectiveScan<'_, T>, row: usize) -> Vec<f32> {
    let n = args.shape.state;
    args.initial_state.map_or_else(|| vec![0.0; n], |s| s[row * n..(row + 1) * n].to_vec())
}

impl Cpu {
    /// The selective scan of Mamba (mamba_ssm's `selective_scan_fn`; see
    /// [`scan_core::selective`] for the definition and layouts), in f32 on
    /// this executor's threads; bf16 or f16 activations (`T`) are widened
    /// exactly as they are read. Shapes are checked first: a wrong one is an
    /// [`Error::WrongShape`](scan_core::Error::WrongShape) naming the argument.
    ///
    /// ```
    /// use scan_core::selective::{Projection, SelectiveScan, SsmShape};
    /// let shape = SsmShape { batch: 1, dim: 1, len: 2, state: 1 };
    /// let b = Projection::Fixed(&[1.0]);
    /// let args = SelectiveScan::new(shape, &[1.0, 1.0], &[1.0, 1.0], &[0.0], b, b).return_last_state(true);
    /// let r = scan_cpu::Cpu::new().selective_scan(&args)?;
    /// // A = 0 keeps the state: x = 1, then 2.
    /// assert_eq!(r.out, [1.0, 2.0]);
    /// assert_eq!(r.last_state, Some(vec![2.0]));
    /// # Ok::<(), scan_core::Error>(())
    /// ```
    pub fn selective_scan<T: SsmInput>(&self, args: &SelectiveScan<'_, T>) -> Result<SsmOutput> {
        args.validate()?;
        let SsmShape { batch, dim, len, state } = args.shape;
        let rows = batch * dim;
        let mut out = vec![0.0f32; rows * len];
        let mut last = vec![0.0f32; rows * state];
        let threads = self.threads();
        if rows == 0 || len == 0 {
            // No steps: the last state is the initial one.
            for row in 0..rows {
                last[row * state..(row + 1) * state].copy_from_slice(&initial(args, row));
            }
        } else if rows >= threads || len < 2 * MIN_CHUNK {
            let mut units: Vec<(usize, &mut [f32], &mut [f32])> =
                out.chunks_mut(len).zip(last.chunks_mut(state)).enumerate().map(|(row, (o, l))| (row, o, l)).collect();
            for_each_part(&mut units, threads, |part| {
                for (row, o, l) in part.iter_mut() {
                    let mut x = initial(args, *row);
                    run(args, *row, 0..len, &mut x, Some(o), None);
                    l.copy_from_slice(&x);
                }
            });
        } else {
            chunked(args, threads, &mut out, &mut last);
        }
        Ok(SsmOutput { out, last_state: args.return_last_state.then_some(last) })
    }

    /// The selective scan's backward pass (mamba_ssm's `selective_scan_bwd`;
    /// see [`scan_core::selective::backward`]): given `dout` = dL/d`out`,
    /// the gradients of every argument, the optional ones where the argument
    /// is given. Rows go across threads, each recomputing its forward states
    /// (L x N values per row at a time, never the whole (batch, dim, L, N)),
    /// in f64; the gradients shared by rows (A, B, C, D, delta_bias) are summed
    /// per thread, then across threads in thread order.
    ///
    /// ```
    /// use scan_core::selective::{Projection, SelectiveScan, SsmShape};
    /// let shape = SsmShape { batch: 1, dim: 1, len: 1, state: 1 };
    /// let one = Projection::Fixed(&[1.0]);
    /// let args = SelectiveScan::new(shape, &[2.0], &[0.5], &[-1.0], one, one);
    /// // out = C dt B u: dL/du = C dt B = 0.5.
    /// let g = scan_cpu::Cpu::new().selective_scan_backward(&args, &[1.0])?;
    /// assert_eq!(g.du, [0.5]);
    /// # Ok::<(), scan_core::Error>(())
    /// ```
    pub fn selective_scan_backward(&self, args: &SelectiveScan<'_>, dout: &[f32]) -> Result<SsmGrads> {
        backward::check_dout(args, dout)?;
        let rows: Vec<usize> = (0..args.shape.batch * args.shape.dim).collect();
        let parts = self.threads().min(rows.len()).max(1);
        let per_part = rows.len().div_ceil(parts).max(1);
        let partial: Vec<RowGrads> = std::thread::scope(|s| {
            let handles: Vec<_> = rows
                .chunks(per_part)
                .map(|chunk| {
                    s.spawn(move || {
                        let mut grads = RowGrads::zeros(args);
                        let mut states = Vec::new();
                        for &row in chunk {
                            grads.row(args, dout, row, &mut states);
                        }
                        grads
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p))).collect()
        });
        let mut total = RowGrads::zeros(args);
        for part in &partial {
            total.add(part);
        }
        Ok(total.finish(args))
    }
}

/// Few rows: each row in chunks, joined through the linear-recurrence
/// monoid (see the module docs).
fn chunked<T: SsmInput>(args: &SelectiveScan<'_, T>, threads: usize, out: &mut [f32], last: &mut [f32]) {
    let SsmShape { dim, batch, len, state } = args.shape;
    let rows = batch * dim;
    let per_row = threads.div_ceil(rows).min(len / MIN_CHUNK).max(1);
    let chunk = len.div_ceil(per_row);
    let ranges: Vec<Range<usize>> = (0..len).step_by(chunk).map(|s| s..(s + chunk).min(len)).collect();

    // 1. Each chunk's aggregate: (product of a, end state from zero), per n.
    let mut aggregates: Vec<(usize, usize, Vec<f32>, Vec<f32>)> =
        (0..rows).flat_map(|r| (0..ranges.len()).map(move |c| (r, c, vec![1.0; state], vec![0.0; state]))).collect();
    for_each_part(&mut aggregates, threads, |part| {
        for (row, c, prod, end) in part.iter_mut() {
            run(args, *row, ranges[*c].clone(), end, None, Some(prod));
        }
    });

    // 2. In order: each chunk's starting state.
    let mut starts = vec![Vec::new(); rows * ranges.len()];
    for row in 0..rows {
        let mut carry = initial(args, row);
        for c in 0..ranges.len() {
            let (_, _, prod, end) = &aggregates[row * ranges.len() + c];
            starts[row * ranges.len() + c] = carry.clone();
            for n in 0..state {
                // (1, carry) then (prod, end): the monoid's combine, on the state.
                carry[n] = LinearRecurrence::<f32>::combine((1.0, carry[n]), (prod[n], end[n])).1;
            }
        }
        last[row * state..(row + 1) * state].copy_from_slice(&carry);
    }

    // 3. Every chunk again from its start, writing its outputs.
    let mut units: Vec<(usize, usize, &mut [f32])> = Vec::new();
    for (row, o) in out.chunks_mut(len).enumerate() {
        let mut rest = o;
        for (c, r) in ranges.iter().enumerate() {
            let (head, tail) = rest.split_at_mut(r.len());
            units.push((row, c, head));
            rest = tail;
        }
    }
    for_each_part(&mut units, threads, |part| {
        for (row, c, o) in part.iter_mut() {
            let mut x = starts[*row * ranges.len() + *c].clone();
            run(args, *row, ranges[*c].clone(), &mut x, Some(o), None);
        }
    });
}
