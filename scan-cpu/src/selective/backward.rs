//! The selective scan's backward pass on the CPU, in f32, a block of eight
//! rows at a time (the forward's layout, [`super::block`]), with the
//! semantics of [`scan_core::selective::backward`] (its f64 reference is
//! the oracle of the tests).
//!
//! Per block: (1) the forward from the initial states, keeping only the
//! states before every chunk of [`CHUNK`] steps (N lanes per chunk); (2) the
//! chunks from the last to the first: per state index, the chunk's states
//! again from its checkpoint (the decays `a_t` and `a_t x_{t-1}` kept for
//! the chunk), then the adjoint `g_t = C_t dy_t + a_{t+1} g_{t+1}` backwards
//! from the carry, and every gradient term of the step. Two exponentials
//! per (row, step, state), none stored beyond a chunk. Memory besides the
//! outputs, per thread: a block's checkpoints (L / 64 x N lanes) and its
//! sums of dB and dC (2 x N x L floats when B and C vary; for rows shorter
//! than 2048 steps, those of the blocks claimed together, about 4096 steps
//! in all), held until they are added. A block is one thread's work: the backward does not cut rows
//! along L (the forward does), so 8 rows or fewer run on one thread.
//!
//! Gradients of one row (du, ddelta, dz, the initial state's) are written
//! by its block. Gradients shared by rows (A and D and delta_bias over the
//! batch, B and C over the channels of a group, or over the steps when
//! fixed) are summed within a block in a fixed order (lanes by
//! [`lanes::sum`]), and the blocks' sums are added into the totals in
//! block order ([`map_fold_in_order`]). So the gradients are bitwise the
//! same for every number of threads, as well as from run to run.

use scan_core::selective::backward::{check_dout, SsmGrads};
use scan_core::selective::{Projection, SelectiveScan, SsmShape};
use scan_core::Result;

use super::block::{self, forward_chunk, Block, Lines, Produce, Rows, Steps, CHUNK};
use super::lanes::{self, mul, mul_add, Lanes, LANES};
use crate::parallel::map_fold_in_order;

/// One block's share of the gradients that rows share.
struct Shared {
    block: Block,
    /// dA per state index, a lane per row.
    da: Vec<Lanes>,
    dd: Lanes,
    dbias: Lanes,
    db: Along,
    dc: Along,
}

/// dB or dC of a block: per (state, step) of its group (varying, N x L),
/// or per (state, row) (fixed).
enum Along {
    Steps(Vec<f32>),
    Fixed(Vec<Lanes>),
}

impl Along {
    fn zeros(p: Projection<'_>, shape: SsmShape) -> Along {
        match p {
            Projection::Varying { .. } => Along::Steps(vec![0.0; shape.state * shape.len]),
            Projection::Fixed(_) => Along::Fixed(vec![[0.0; LANES]; shape.state]),
        }
    }

    /// Adds the term of state `n` at step `t` over the block's rows.
    #[inline(always)]
    fn add(&mut self, n: usize, t: usize, len: usize, term: Lanes) {
        match self {
            Along::Steps(v) => v[n * len + t] += lanes::sum(term),
            Along::Fixed(v) => v[n] = lanes::add(v[n], term),
        }
    }

    /// Adds this block's sums into `total`, shaped like the projection.
    fn add_into(&self, total: &mut [f32], p: Projection<'_>, block: Block, shape: SsmShape) {
        let SsmShape { dim, len, state, .. } = shape;
        match (self, p) {
            (Along::Steps(v), Projection::Varying { groups, .. }) => {
                let at = (block.b * groups + block.d0 / (dim / groups)) * state * len;
                for (t, v) in total[at..at + state * len].iter_mut().zip(v) {
                    *t += v;
                }
            }
            (Along::Fixed(v), Projection::Fixed(_)) => {
                for (n, v) in v.iter().enumerate() {
                    for (j, v) in v[..block.rows].iter().enumerate() {
                        total[(block.d0 + j) * state + n] += v;
                    }
                }
            }
            _ => unreachable!("made by Along::zeros from the same projection"),
        }
    }
}

/// One block's per-row outputs: its rows of du, ddelta, dz and the initial
/// state's gradient.
struct RowsOut<'a> {
    du: &'a mut [f32],
    ddelta: &'a mut [f32],
    dz: Option<&'a mut [f32]>,
    dx0: Option<&'a mut [f32]>,
}

/// The backward pass (see the module docs) on `threads` threads.
/// With `kept`, each block's states before every chunk, from the forward
/// (`Cpu::selective_scan_saving`): the first pass is skipped.
pub(crate) fn backward(
    args: &SelectiveScan<'_>,
    dout: &[f32],
    threads: usize,
    kept: Option<&[Vec<Lanes>]>,
) -> Result<SsmGrads> {
    check_dout(args, dout)?;
    let shape = args.shape;
    let SsmShape { batch, dim, len, state } = shape;
    let bdl = batch * dim * len;
    let (mut du, mut ddelta) = (vec![0.0f32; bdl], vec![0.0f32; bdl]);
    let mut dz = args.z.map(|_| vec![0.0f32; bdl]);
    let mut dx0 = args.initial_state.map(|_| vec![0.0f32; batch * dim * state]);
    let da = vec![0.0f32; dim * state];
    let (db, dc) = (vec![0.0f32; args.b.data().len()], vec![0.0f32; args.c.data().len()]);
    let (dd, dbias) = (vec![0.0f32; dim], vec![0.0f32; dim]);

    let blocks = block::blocks(args);
    let mut units: Vec<(Block, RowsOut<'_>, Option<&[Lanes]>)> = Vec::with_capacity(blocks.len());
    {
        let (mut du, mut ddelta) = (&mut du[..], &mut ddelta[..]);
        let (mut dz, mut dx0) = (dz.as_deref_mut(), dx0.as_deref_mut());
        for (i, &block) in blocks.iter().enumerate() {
            let (rows_len, rows_state) = (block.rows * len, block.rows * state);
            let (du_here, dd_here) = (super::split_front(&mut du, rows_len), super::split_front(&mut ddelta, rows_len));
            let dz_here = dz.as_mut().map(|v| super::split_front(v, rows_len));
            let x0_here = dx0.as_mut().map(|v| super::split_front(v, rows_state));
            let checkpoints = kept.map(|k| &k[i][..]);
            units.push((block, RowsOut { du: du_here, ddelta: dd_here, dz: dz_here, dx0: x0_here }, checkpoints));
        }
    }
    // Blocks in order on the threads; their shared sums are added in block
    // order as they come (a thread that finishes early waits for its turn),
    // so the totals do not depend on the threads (nor on the claims' size).
    let mut totals = (da, db, dc, dd, dbias);
    // Claims of about 4096 steps of work (blocks of short rows together).
    let per_claim = 4096 / len.max(1);
    map_fold_in_order(
        &mut units,
        threads,
        per_claim,
        &mut totals,
        |(block, out, checkpoints)| block_backward(args, dout, *block, out, *checkpoints),
        |(da, db, dc, dd, dbias), s| {
            let Block { d0, rows, .. } = s.block;
            for j in 0..rows {
                for n in 0..state {
                    da[(d0 + j) * state + n] += s.da[n][j];
                }
                dd[d0 + j] += s.dd[j];
                dbias[d0 + j] += s.dbias[j];
            }
            s.db.add_into(db, args.b, s.block, shape);
            s.dc.add_into(dc, args.c, s.block, shape);
        },
    );
    let (da, db, dc, dd, dbias) = totals;
    Ok(SsmGrads {
        du,
        ddelta,
        da,
        db,
        dc,
        dd: args.d.map(|_| dd),
        dz,
        ddelta_bias: args.delta_bias.map(|_| dbias),
        dinitial_state: dx0,
    })
}

fn block_backward(
    args: &SelectiveScan<'_>,
    dout: &[f32],
    block: Block,
    out: &mut RowsOut<'_>,
    kept: Option<&[Lanes]>,
) -> Shared {
    #[cfg(target_arch = "x86_64")]
    if super::avx2() {
        // SAFETY: the CPU has AVX2.
        return unsafe { block_backward_avx2(args, dout, block, out, kept) };
    }
    block_backward_portable(args, dout, block, out, kept)
}

/// [`block_backward`] compiled for AVX2 (as `super::run_avx2`).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn block_backward_avx2(
    args: &SelectiveScan<'_>,
    dout: &[f32],
    block: Block,
    out: &mut RowsOut<'_>,
    kept: Option<&[Lanes]>,
) -> Shared {
    block_backward_portable(args, dout, block, out, kept)
}

/// Per-step lanes of a chunk in the backward, besides [`Steps`].
struct Chunk {
    /// `dy = dout silu(z)` (or `dout`).
    dy: Vec<Lanes>,
    /// dz's factor `dout silu'(z)`.
    fz: Vec<Lanes>,
    /// The sums over state indices: `g B` (du, ddt), `A g a x_{t-1}` (ddt),
    /// `C x` (y, for dz).
    gb: Vec<Lanes>,
    gaq: Vec<Lanes>,
    cx: Vec<Lanes>,
    /// One state index's decays and `a_t x_{t-1}` over the chunk.
    a: Vec<Lanes>,
    ax: Vec<Lanes>,
}

#[inline(always)]
fn block_backward_portable(
    args: &SelectiveScan<'_>,
    dout: &[f32],
    block: Block,
    out: &mut RowsOut<'_>,
    kept: Option<&[Lanes]>,
) -> Shared {
    let SsmShape { dim, len, state, .. } = args.shape;
    let rows = Rows::new(args, block);
    let a_lanes: Vec<Lanes> = (0..state)
        .map(|n| std::array::from_fn(|j| if j < block.rows { args.a[(block.d0 + j) * state + n] } else { 0.0 }))
        .collect();
    let mut steps = Steps::new();
    let mut lines = Lines::new();
    let chunks: Vec<std::ops::Range<usize>> = (0..len).step_by(CHUNK).map(|s| s..(s + CHUNK).min(len)).collect();

    // (1) The states before every chunk, unless the forward kept them.
    let computed: Vec<Lanes>;
    let checkpoints = match kept {
        Some(kept) => kept,
        None => {
            let initial = super::initial(args, block);
            let mut x = rows.states_to_lanes(state, &initial);
            let mut states = Vec::with_capacity(chunks.len() * state);
            for range in &chunks {
                states.extend_from_slice(&x);
                steps.load(args, &rows, range.clone());
                forward_chunk(args, &rows, &steps, &mut lines, &mut x, Produce::States);
            }
            computed = states;
            &computed[..]
        }
    };

    // (2) The chunks backwards.
    let v = || vec![[0.0f32; LANES]; CHUNK];
    let mut c = Chunk { dy: v(), fz: v(), gb: v(), gaq: v(), cx: v(), a: v(), ax: v() };
    let mut carry = vec![[0.0f32; LANES]; state];
    let mut shared = Shared {
        block,
        da: vec![[0.0; LANES]; state],
        dd: [0.0; LANES],
        dbias: [0.0; LANES],
        db: Along::zeros(args.b, args.shape),
        dc: Along::zeros(args.c, args.shape),
    };
    let base = block.row0(dim) * len;
    for (ci, range) in chunks.iter().enumerate().rev() {
        let k_len = range.len();
        steps.load(args, &rows, range.clone());
        for j in 0..LANES {
            for k in 0..k_len {
                c.dy[k][j] = if j < block.rows { dout[base + j * len + range.start + k] } else { 0.0 };
            }
        }
        if args.z.is_some() {
            for k in 0..k_len {
                let (z, go) = (steps.z[k], c.dy[k]);
                let sig = lanes::sigmoid(z);
                c.dy[k] = mul(go, mul(z, sig));
                // dout sig (1 + z (1 - sig))
                c.fz[k] = std::array::from_fn(|j| go[j] * sig[j] * (z[j] * (1.0 - sig[j]) + 1.0));
            }
        }
        for k in 0..k_len {
            c.gb[k] = [0.0; LANES];
            c.gaq[k] = [0.0; LANES];
            c.cx[k] = [0.0; LANES];
        }
        for n in 0..state {
            rows.projection(args, args.b, n, range.clone(), &mut lines.b);
            rows.projection(args, args.c, n, range.clone(), &mut lines.c);
            let (a2, an) = (rows.a2[n], a_lanes[n]);
            let (bs, cs) = (&lines.b[..k_len], &lines.c[..k_len]);
            // The chunk's states again, from the checkpoint.
            let mut xn = checkpoints[ci * state + n];
            for (k, b) in bs.iter().enumerate() {
                let a = lanes::exp2(mul(steps.dt[k], a2));
                let ax = mul(a, xn);
                c.a[k] = a;
                c.ax[k] = ax;
                xn = mul_add(steps.dtu[k], *b, ax);
            }
            // The adjoint backwards, and the step's terms.
            let mut g_next = carry[n];
            let mut da = shared.da[n];
            for k in (0..k_len).rev() {
                let g = mul_add(cs[k], c.dy[k], g_next);
                let xt = mul_add(steps.dtu[k], bs[k], c.ax[k]);
                let q = mul(g, c.ax[k]);
                da = mul_add(steps.dt[k], q, da);
                c.gaq[k] = mul_add(an, q, c.gaq[k]);
                c.gb[k] = mul_add(g, bs[k], c.gb[k]);
                c.cx[k] = mul_add(cs[k], xt, c.cx[k]);
                shared.db.add(n, range.start + k, len, mul(g, steps.dtu[k]));
                shared.dc.add(n, range.start + k, len, mul(c.dy[k], xt));
                g_next = mul(c.a[k], g);
            }
            carry[n] = g_next;
            shared.da[n] = da;
        }
        // The per-row gradients of the chunk's steps.
        for k in 0..k_len {
            let (dt, u, dy) = (steps.dt[k], steps.u[k], c.dy[k]);
            let du = mul_add(dy, rows.skip, mul(dt, c.gb[k]));
            let ddt = mul_add(c.gb[k], u, c.gaq[k]);
            let ddelta = if args.delta_softplus { mul(ddt, lanes::sigmoid(steps.pre[k])) } else { ddt };
            let ddelta = mul(ddelta, rows.live);
            shared.dd = mul_add(dy, u, shared.dd);
            shared.dbias = lanes::add(shared.dbias, ddelta);
            c.gb[k] = du;
            c.gaq[k] = ddelta;
            if args.z.is_some() {
                c.cx[k] = mul(c.fz[k], mul_add(rows.skip, u, c.cx[k]));
            }
        }
        for j in 0..block.rows {
            let at = j * len + range.start;
            for k in 0..k_len {
                out.du[at + k] = c.gb[k][j];
                out.ddelta[at + k] = c.gaq[k][j];
            }
            if let Some(dz) = out.dz.as_deref_mut() {
                for k in 0..k_len {
                    dz[at + k] = c.cx[k][j];
                }
            }
        }
    }
    if let Some(dx0) = out.dx0.as_deref_mut() {
        super::lanes_to_states(&carry, block.rows, dx0);
    }
    shared
}
