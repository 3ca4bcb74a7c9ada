//! Blocks of rows, one per lane: the layout of both passes on the CPU.
//!
//! A block is up to [`LANES`] consecutive rows (channels) of one batch that
//! share their group of `B` and of `C`, so that a varying projection's value
//! at (state, step) is one scalar for the whole block, broadcast, and the
//! recurrence runs eight rows at a time, lane `j` row `d0 + j` (as the GPU's
//! tile kernels put a channel in each lane). Steps go in chunks of [`CHUNK`]:
//! each chunk's per-row inputs are transposed into lanes once ([`Steps`]) and
//! then serve every state index. Lanes past the block's rows get `dt = 0` and
//! `u = 0`: a decay of 1 and no input, and their outputs are dropped.

use std::ops::Range;

use scan_core::selective::{Projection, SelectiveScan, SsmInput, SsmShape};
use scan_core::{Error, Result};

use super::lanes::{self, mul, mul_add, splat, Lanes, LANES, LOG2E};

/// Steps per chunk: the chunk's lanes of inputs, decays and states stay in
/// the L1 cache.
pub(crate) const CHUNK: usize = 64;

/// Rows `d0 .. d0 + rows` of batch `b`, sharing their groups of B and C.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Block {
    pub b: usize,
    pub d0: usize,
    pub rows: usize,
}

impl Block {
    /// The index of the block's first row in (batch, dim) order.
    pub fn row0(&self, dim: usize) -> usize {
        self.b * dim + self.d0
    }
}

/// The channels of one group of a projection (all of them when fixed).
fn group_size(p: Projection<'_, impl SsmInput>, dim: usize) -> usize {
    match p {
        Projection::Varying { groups, .. } => dim / groups,
        Projection::Fixed(_) => dim,
    }
}

/// The blocks covering every row in (batch, dim) order: runs of up to
/// [`LANES`] rows, cut where a group of B or of C ends; none when rows have
/// no steps (L = 0: nothing runs, and nothing else bounds the row count,
/// so a list of them could be past memory). `Error::TooLarge` when their
/// list cannot be allocated.
pub(crate) fn blocks<T: SsmInput>(args: &SelectiveScan<'_, T>) -> Result<Vec<Block>> {
    let SsmShape { batch, dim, len, .. } = args.shape;
    if len == 0 {
        return Ok(Vec::new());
    }
    let (gb, gc) = (group_size(args.b, dim), group_size(args.c, dim));
    // One batch's cuts (the same in every batch), then the whole list
    // reserved at once, fallibly.
    let mut cuts = Vec::new();
    let mut d0 = 0;
    while d0 < dim {
        let end = (d0 + LANES).min((d0 / gb + 1) * gb).min((d0 / gc + 1) * gc).min(dim);
        cuts.push((d0, end - d0));
        d0 = end;
    }
    let mut out = Vec::new();
    if cuts.is_empty() {
        // dim = 0: no rows in any batch (and batch alone may be huge).
        return Ok(out);
    }
    let count = batch.saturating_mul(cuts.len());
    out.try_reserve_exact(count)
        .map_err(|_| Error::TooLarge { what: format!("cannot allocate the list of {count} blocks of rows") })?;
    for b in 0..batch {
        out.extend(cuts.iter().map(|&(d0, rows)| Block { b, d0, rows }));
    }
    Ok(out)
}

/// What a block needs of its rows' per-channel arguments, in lanes.
pub(crate) struct Rows {
    pub block: Block,
    /// `A log2(e)` per state index.
    pub a2: Vec<Lanes>,
    pub bias: Lanes,
    pub skip: Lanes,
    /// 1 in the lanes of rows, 0 past them.
    pub live: Lanes,
}

impl Rows {
    pub fn new<T: SsmInput>(args: &SelectiveScan<'_, T>, block: Block) -> Rows {
        let state = args.shape.state;
        let lane = |f: &dyn Fn(usize) -> f32| -> Lanes {
            std::array::from_fn(|j| if j < block.rows { f(block.d0 + j) } else { 0.0 })
        };
        Rows {
            block,
            a2: (0..state).map(|n| lane(&|d| args.a[d * state + n] * LOG2E)).collect(),
            bias: lane(&|d| args.delta_bias.map_or(0.0, |bias| bias[d])),
            skip: lane(&|d| args.d.map_or(0.0, |skip| skip[d])),
            live: lane(&|_| 1.0),
        }
    }

    /// The rows' states (row-major, N each) as lanes per state index.
    pub fn states_to_lanes(&self, state: usize, rows: &[f32]) -> Vec<Lanes> {
        (0..state)
            .map(|n| std::array::from_fn(|j| if j < self.block.rows { rows[j * state + n] } else { 0.0 }))
            .collect()
    }

    /// Fills `to` with projection `p`'s values of state `n` over steps
    /// `steps`: broadcast when varying, per lane when fixed.
    #[inline(always)]
    pub fn projection<T: SsmInput>(
        &self,
        args: &SelectiveScan<'_, T>,
        p: Projection<'_, T>,
        n: usize,
        steps: Range<usize>,
        to: &mut [Lanes],
    ) {
        let SsmShape { dim, len, state, .. } = args.shape;
        let Block { b, d0, rows } = self.block;
        match p {
            Projection::Varying { data, groups } => {
                let start = ((b * groups + d0 / (dim / groups)) * state + n) * len;
                for (to, v) in to.iter_mut().zip(&data[start + steps.start..start + steps.end]) {
                    *to = splat(v.to_f32());
                }
            }
            Projection::Fixed(data) => {
                let v: Lanes =
                    std::array::from_fn(|j| if j < rows { data[(d0 + j) * state + n].to_f32() } else { 0.0 });
                to[..steps.len()].fill(v);
            }
        }
    }
}

/// One chunk's per-step inputs in lanes.
pub(crate) struct Steps {
    /// The chunk's steps of the row.
    pub range: Range<usize>,
    pub dt: Vec<Lanes>,
    /// `dt u`.
    pub dtu: Vec<Lanes>,
    pub u: Vec<Lanes>,
    /// `delta + bias`, before the softplus (kept for its derivative).
    pub pre: Vec<Lanes>,
    /// `z`, when given.
    pub z: Vec<Lanes>,
}

impl Steps {
    pub fn new() -> Steps {
        let v = || vec![[0.0; LANES]; CHUNK];
        Steps { range: 0..0, dt: v(), dtu: v(), u: v(), pre: v(), z: v() }
    }

    /// Loads steps `range` (at most [`CHUNK`]) of `rows`' block.
    #[inline(always)]
    pub fn load<T: SsmInput>(&mut self, args: &SelectiveScan<'_, T>, rows: &Rows, range: Range<usize>) {
        let SsmShape { dim, len, .. } = args.shape;
        let base = rows.block.row0(dim) * len;
        let k_len = range.len();
        for j in 0..LANES {
            let live = j < rows.block.rows;
            let at = base + j * len + range.start;
            for k in 0..k_len {
                (self.u[k][j], self.pre[k][j]) = if live {
                    (args.u[at + k].to_f32(), args.delta[at + k].to_f32() + rows.bias[j])
                } else {
                    (0.0, 0.0)
                };
            }
            if let Some(z) = args.z {
                for k in 0..k_len {
                    self.z[k][j] = if live { z[at + k].to_f32() } else { 0.0 };
                }
            }
        }
        for k in 0..k_len {
            let dt = if args.delta_softplus { lanes::softplus(self.pre[k]) } else { self.pre[k] };
            // Lanes past the rows: dt = 0 (softplus(0) is not).
            self.dt[k] = mul(dt, rows.live);
            self.dtu[k] = mul(self.dt[k], self.u[k]);
        }
        self.range = range;
    }
}

/// `silu(z)` per lane.
#[inline(always)]
pub(crate) fn silu(z: Lanes) -> Lanes {
    mul(z, lanes::sigmoid(z))
}

/// Scratch for one state index over a chunk.
pub(crate) struct Lines {
    pub b: Vec<Lanes>,
    pub c: Vec<Lanes>,
}

impl Lines {
    pub fn new() -> Lines {
        Lines { b: vec![[0.0; LANES]; CHUNK], c: vec![[0.0; LANES]; CHUNK] }
    }
}

/// What [`forward_chunk`] produces besides the states.
pub(crate) enum Produce<'a> {
    /// Nothing: the states after the chunk only.
    States,
    /// `y[k] += C_t x_t` for each step of the chunk.
    Outputs(&'a mut [Lanes]),
    /// `prod[n]` multiplied by every step's decay of state index `n`.
    Decays(&'a mut [Lanes]),
}

/// The forward recurrence over one chunk, every state index: `x` (a lane
/// vector per state index) is the state before the chunk and is left as the
/// state after it.
#[inline(always)]
pub(crate) fn forward_chunk<T: SsmInput>(
    args: &SelectiveScan<'_, T>,
    rows: &Rows,
    steps: &Steps,
    lines: &mut Lines,
    x: &mut [Lanes],
    mut produce: Produce<'_>,
) {
    let k_len = steps.range.len();
    let (dt, dtu) = (&steps.dt[..k_len], &steps.dtu[..k_len]);
    for (n, x) in x.iter_mut().enumerate() {
        rows.projection(args, args.b, n, steps.range.clone(), &mut lines.b);
        let (a2, bs) = (rows.a2[n], &lines.b[..k_len]);
        let mut xn = *x;
        match &mut produce {
            Produce::States => {
                for k in 0..k_len {
                    xn = mul_add(lanes::exp2(mul(dt[k], a2)), xn, mul(dtu[k], bs[k]));
                }
            }
            Produce::Outputs(y) => {
                rows.projection(args, args.c, n, steps.range.clone(), &mut lines.c);
                let cs = &lines.c[..k_len];
                for k in 0..k_len {
                    xn = mul_add(lanes::exp2(mul(dt[k], a2)), xn, mul(dtu[k], bs[k]));
                    y[k] = mul_add(cs[k], xn, y[k]);
                }
            }
            Produce::Decays(prod) => {
                // The product of the chunk's decays as one exponential of
                // its summed steps (a running product of decays crawls
                // through subnormal floats, each multiply a microcode assist).
                let mut dt_sum = splat(0.0);
                for k in 0..k_len {
                    let a = lanes::exp2(mul(dt[k], a2));
                    xn = mul_add(a, xn, mul(dtu[k], bs[k]));
                    dt_sum = lanes::add(dt_sum, dt[k]);
                }
                prod[n] = mul(prod[n], lanes::exp2(mul(dt_sum, a2)));
            }
        }
        *x = xn;
    }
}
