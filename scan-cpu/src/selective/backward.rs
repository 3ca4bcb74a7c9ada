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
//! outputs, per thread: a unit's checkpoints (steps / 64 x N lanes) and its
//! sums of dB and dC (2 x N x steps floats when B and C vary; for rows
//! shorter than 2048 steps, those of the blocks claimed together, about
//! 4096 steps in all), held until they are added.
//!
//! A unit of work is a block's whole rows, except with few blocks (fewer
//! than [`FEW_BLOCKS`]) of long rows (at least two `MIN_RANGE`s): then each
//! row is cut into ranges of whole chunks, about [`RANGE_UNITS`] units in
//! all, so that a few rows still use every thread. A range needs the states
//! before it and the adjoint after it: the states from the forward's
//! per-range aggregates (`super::range_starts`: the product of the decays
//! and the end state from zero, combined in order), the adjoint from the
//! backward's (`range_adjoint`: the product of the decays and the adjoint
//! at the range's start from zero after its end, combined from the row's
//! end). Both aggregates run in parallel; they cost two more exponentials
//! per (row, step, state), twice the arithmetic of whole rows. The cut
//! follows the shape alone, never the thread count, and the states kept by
//! a forward are not read there (the ranges start from the aggregates), so
//! the bits stay the same for every thread count and with or without them.
//!
//! Gradients of one row (du, ddelta, dz, the initial state's) are written
//! by its units (the initial state's by the unit of its first steps). Gradients shared by rows (A and D and delta_bias over the
//! batch, B and C over the channels of a group, or over the steps when
//! fixed) are summed within a unit in a fixed order (lanes by
//! [`lanes::sum`]), and the units' sums are added into the totals in
//! unit order ([`map_fold_in_order`]). So the gradients are bitwise the
//! same for every number of threads, as well as from run to run.

use scan_core::selective::backward::{check_dout, SsmGrads};
use scan_core::selective::{Projection, SelectiveScan, SsmShape};
use scan_core::Result;

use super::block::{self, forward_chunk, Block, Lines, Produce, Rows, Steps, CHUNK};
use super::lanes::{self, mul, mul_add, Lanes, LANES};
use crate::parallel::{for_each_part, map_fold_in_order};

/// One unit's share of the gradients that rows share (a unit: a block's
/// rows over a range of steps, the whole row unless few blocks).
struct Shared {
    block: Block,
    /// The unit's steps.
    steps: std::ops::Range<usize>,
    /// dA per state index, a lane per row; it, dD and d delta_bias sum
    /// every step of the unit: each chunk's f32 sum is added in f64 (a
    /// running f32 sum over 5000 steps was ten times less accurate: dA
    /// 1.4e-5 relative to the f64 reference against 1.1e-6).
    da: Vec<Wide>,
    dd: Wide,
    dbias: Wide,
    db: Along,
    dc: Along,
}

/// A lane per row in f64: the sums along a unit's steps.
type Wide = [f64; LANES];

/// `acc += chunk`, lane by lane, in f64.
fn add_wide(acc: &mut Wide, chunk: Lanes) {
    for (a, c) in acc.iter_mut().zip(chunk) {
        *a += f64::from(c);
    }
}

/// dB or dC of a unit: per (state, step) of its group over the unit's
/// steps (varying, N x steps), or per (state, row) (fixed: summed along the
/// unit's steps in f64, a chunk's f32 sums at a time, as dA; unlike dA's,
/// the totals over units stay f32, one rounding a unit).
enum Along {
    Steps(Vec<f32>),
    Fixed { sums: Vec<Wide>, chunk: Vec<Lanes> },
}

impl Along {
    fn zeros(p: Projection<'_>, state: usize, steps: usize) -> Along {
        match p {
            Projection::Varying { .. } => Along::Steps(vec![0.0; state * steps]),
            Projection::Fixed(_) => Along::Fixed { sums: vec![[0.0; LANES]; state], chunk: vec![[0.0; LANES]; state] },
        }
    }

    /// Adds the term of state `n` at the unit's step `t` (of `steps`) over
    /// the block's rows.
    #[inline(always)]
    fn add(&mut self, n: usize, t: usize, steps: usize, term: Lanes) {
        match self {
            Along::Steps(v) => v[n * steps + t] += lanes::sum(term),
            Along::Fixed { chunk, .. } => chunk[n] = lanes::add(chunk[n], term),
        }
    }

    /// Adds the chunk's sums (fixed) into the unit's, at the end of each chunk.
    fn end_chunk(&mut self) {
        if let Along::Fixed { sums, chunk } = self {
            for (sum, part) in sums.iter_mut().zip(chunk.iter_mut()) {
                add_wide(sum, std::mem::replace(part, [0.0; LANES]));
            }
        }
    }

    /// Adds this unit's sums (over `steps` of `block`'s rows) into `total`,
    /// shaped like the projection.
    fn add_into(
        &self,
        total: &mut [f32],
        p: Projection<'_>,
        block: Block,
        steps: &std::ops::Range<usize>,
        shape: SsmShape,
    ) {
        let SsmShape { dim, len, state, .. } = shape;
        match (self, p) {
            (Along::Steps(v), Projection::Varying { groups, .. }) => {
                let at = (block.b * groups + block.d0 / (dim / groups)) * state * len;
                for n in 0..state {
                    let here = &mut total[at + n * len + steps.start..at + n * len + steps.end];
                    for (t, v) in here.iter_mut().zip(&v[n * steps.len()..]) {
                        *t += v;
                    }
                }
            }
            (Along::Fixed { sums, .. }, Projection::Fixed(_)) => {
                for (n, v) in sums.iter().enumerate() {
                    for (j, v) in v[..block.rows].iter().enumerate() {
                        let t = &mut total[(block.d0 + j) * state + n];
                        *t = (f64::from(*t) + v) as f32;
                    }
                }
            }
            _ => unreachable!("made by Along::zeros from the same projection"),
        }
    }
}

/// One unit's per-row outputs: each row's du, ddelta and dz over the
/// unit's steps, and (the unit of the rows' first steps) the initial
/// state's gradient.
struct RowsOut<'a> {
    du: Vec<&'a mut [f32]>,
    ddelta: Vec<&'a mut [f32]>,
    dz: Option<Vec<&'a mut [f32]>>,
    dx0: Option<&'a mut [f32]>,
}

/// Where a unit starts: the states before its every chunk, kept by the
/// forward (whole rows only), or the states before its first step (from
/// the initial ones, or from the ranges' aggregates), and the adjoint after
/// its last step (zero at a row's end).
struct Start<'a> {
    kept: Option<&'a [Lanes]>,
    states: Option<Vec<Lanes>>,
    carry: Option<Vec<Lanes>>,
}

/// Fewer blocks than this cut their rows into ranges (a shape-only rule, so
/// that the gradients' bits do not follow the thread count), about
/// `RANGE_UNITS` units in all, each but a row's last of at least
/// `super::MIN_RANGE` steps.
const FEW_BLOCKS: usize = 8;
const RANGE_UNITS: usize = 16;

/// The backward pass (see the module docs) on `threads` threads.
/// With `kept`, each block's states before every chunk, from the forward
/// (`Cpu::selective_scan_saving`): the first pass is skipped (whole rows
/// only: with few blocks, rows are cut into ranges and `kept` is not read).
pub(crate) fn backward(
    args: &SelectiveScan<'_>,
    dout: &[f32],
    threads: usize,
    kept: Option<&[Vec<Lanes>]>,
) -> Result<SsmGrads> {
    check_dout(args, dout)?;
    let shape = args.shape;
    let SsmShape { batch, dim, len, state } = shape;
    if len == 0 {
        // Nothing depends on the (empty) rows: every gradient is 0, sized by
        // its argument (no list of blocks: with L = 0 nothing bounds it).
        let zeros = |n: usize| vec![0.0f32; n];
        return Ok(SsmGrads {
            du: Vec::new(),
            ddelta: Vec::new(),
            da: zeros(dim * state),
            db: zeros(args.b.data().len()),
            dc: zeros(args.c.data().len()),
            dd: args.d.map(|d| zeros(d.len())),
            dz: args.z.map(|_| Vec::new()),
            ddelta_bias: args.delta_bias.map(|b| zeros(b.len())),
            dinitial_state: args.initial_state.map(|x0| zeros(x0.len())),
        });
    }
    let bdl = batch * dim * len;
    // Every output's pages touched here, before any thread starts (see
    // `touched_zeros`).
    let (mut du, mut ddelta) = (touched_zeros(bdl), touched_zeros(bdl));
    let mut dz = args.z.map(|_| touched_zeros(bdl));
    let mut dx0 = args.initial_state.map(|_| touched_zeros(batch * dim * state));
    let (db, dc) = (touched_zeros(args.b.data().len()), touched_zeros(args.c.data().len()));
    // The sums along the rows, in f64 until the end (dim x N + 2 dim; small,
    // so their pages need no touching).
    let (da, dd, dbias) = (vec![0.0f64; dim * state], vec![0.0f64; dim], vec![0.0f64; dim]);

    let blocks = block::blocks(args)?;
    let ranges = row_ranges(blocks.len(), len);
    let per = ranges.len();
    let starts = unit_starts(args, dout, &blocks, &ranges, threads, kept);

    // The units, block-major: each one's rows' outputs over its range.
    let mut units: Vec<(Block, std::ops::Range<usize>, RowsOut<'_>, Start<'_>)> = Vec::with_capacity(starts.len());
    for (u, start) in starts.into_iter().enumerate() {
        let out = RowsOut { du: Vec::new(), ddelta: Vec::new(), dz: args.z.map(|_| Vec::new()), dx0: None };
        units.push((blocks[u / per], ranges[u % per].clone(), out, start));
    }
    {
        let mut du_rows = du.chunks_mut(len.max(1));
        let mut ddelta_rows = ddelta.chunks_mut(len.max(1));
        let mut dz_rows = dz.as_mut().map(|v| v.chunks_mut(len.max(1)));
        let mut dx0_rest = dx0.as_deref_mut();
        for (i, block) in blocks.iter().enumerate() {
            let mine = &mut units[i * per..(i + 1) * per];
            mine[0].2.dx0 = dx0_rest.as_mut().map(|v| super::split_front(v, block.rows * state));
            for _ in 0..block.rows {
                let (Some(mut du_row), Some(mut ddelta_row)) = (du_rows.next(), ddelta_rows.next()) else { break };
                let mut dz_row = dz_rows.as_mut().and_then(|rows| rows.next());
                for unit in mine.iter_mut() {
                    let n = unit.1.len();
                    unit.2.du.push(super::split_front(&mut du_row, n));
                    unit.2.ddelta.push(super::split_front(&mut ddelta_row, n));
                    if let (Some(dz), Some(row)) = (unit.2.dz.as_mut(), dz_row.as_mut()) {
                        dz.push(super::split_front(row, n));
                    }
                }
            }
        }
    }
    // Units in order on the threads; their shared sums are added in unit
    // order as they come (a thread that finishes early waits for its turn),
    // so the totals do not depend on the threads (nor on the claims' size).
    let mut totals = (da, db, dc, dd, dbias);
    // Claims of about 4096 steps of work (units of short rows together);
    // ranges, long by construction, one a claim (a claim of several would
    // leave threads idle on few units).
    let per_claim = if per > 1 { 1 } else { 4096 / len.max(1) };
    map_fold_in_order(
        &mut units,
        threads,
        per_claim,
        &mut totals,
        |(block, steps, out, start)| block_backward(args, dout, *block, steps.clone(), out, start),
        |(da, db, dc, dd, dbias), s| {
            let Block { d0, rows, .. } = s.block;
            for j in 0..rows {
                for n in 0..state {
                    da[(d0 + j) * state + n] += s.da[n][j];
                }
                dd[d0 + j] += s.dd[j];
                dbias[d0 + j] += s.dbias[j];
            }
            s.db.add_into(db, args.b, s.block, &s.steps, shape);
            s.dc.add_into(dc, args.c, s.block, &s.steps, shape);
        },
    );
    let (da, db, dc, dd, dbias) = totals;
    let narrow = |v: Vec<f64>| v.into_iter().map(|x| x as f32).collect::<Vec<f32>>();
    let (da, dd, dbias) = (narrow(da), narrow(dd), narrow(dbias));
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

/// Whether the backward cuts the rows of `blocks` blocks of `len` steps
/// into ranges (and so reads no states a forward kept).
pub(crate) fn cuts_rows(blocks: usize, len: usize) -> bool {
    row_ranges(blocks, len).len() > 1
}

/// `n` zeros, written (not `vec![0.0; n]`, whose fresh pages stay untouched
/// until first used): a page fault taken while another thread runs costs
/// several times more (on a 2-core VM, 1 x 8 x 65536 on 2 threads in a
/// fresh process: 53 ms with the outputs' pages faulted in by the folds and
/// the units, 27 ms with them touched first; 47-49 on 1 thread).
fn touched_zeros(n: usize) -> Vec<f32> {
    let mut v = Vec::with_capacity(n);
    v.resize(n, 0.0f32);
    v
}

/// The ranges each row is cut into: the whole row, or with fewer than
/// [`FEW_BLOCKS`] blocks and rows of at least two `MIN_RANGE`s, about
/// [`RANGE_UNITS`] units in all, each of whole chunks. By the shape alone.
fn row_ranges(blocks: usize, len: usize) -> Vec<std::ops::Range<usize>> {
    let per_block = if blocks > 0 && blocks < FEW_BLOCKS && len >= 2 * super::MIN_RANGE {
        (RANGE_UNITS / blocks).min(len / super::MIN_RANGE).max(1)
    } else {
        1
    };
    if per_block == 1 {
        std::iter::once(0..len).collect()
    } else {
        super::whole_chunk_ranges(len, per_block)
    }
}

/// Where every unit (block-major, `ranges` each) starts. Whole rows: from
/// the kept states, or the initial ones. Ranges: the states before each
/// range from the forward's aggregates (`super::range_starts`), and the
/// adjoint after it from the backward's: each later range's product of
/// decays and adjoint from zero (`range_adjoint`, in parallel), combined
/// from the row's end.
fn unit_starts<'a>(
    args: &SelectiveScan<'_>,
    dout: &[f32],
    blocks: &[Block],
    ranges: &[std::ops::Range<usize>],
    threads: usize,
    kept: Option<&'a [Vec<Lanes>]>,
) -> Vec<Start<'a>> {
    let state = args.shape.state;
    if ranges.len() == 1 {
        return (0..blocks.len()).map(|i| Start { kept: kept.map(|k| &k[i][..]), states: None, carry: None }).collect();
    }
    let per = ranges.len();
    let (states, _) = super::range_starts(args, blocks, ranges, threads);
    // Each range's (product of decays, adjoint at its start from zero).
    let mut aggregates: Vec<(usize, usize, Vec<Lanes>, Vec<Lanes>)> = (0..blocks.len())
        .flat_map(|i| (0..per).map(move |c| (i, c, vec![[1.0; LANES]; state], vec![[0.0; LANES]; state])))
        .collect();
    for_each_part(&mut aggregates, threads, |part| {
        for (i, c, prod, adjoint) in part.iter_mut() {
            range_adjoint(args, dout, blocks[*i], ranges[*c].clone(), prod, adjoint);
        }
    });
    let mut carries = vec![Vec::new(); blocks.len() * per];
    for i in 0..blocks.len() {
        let mut carry = vec![[0.0f32; LANES]; state];
        for c in (0..per).rev() {
            carries[i * per + c] = carry.clone();
            let (_, _, prod, adjoint) = &aggregates[i * per + c];
            for n in 0..state {
                carry[n] = mul_add(prod[n], carry[n], adjoint[n]);
            }
        }
    }
    states
        .into_iter()
        .zip(carries)
        .map(|(states, carry)| Start { kept: None, states: Some(states), carry: Some(carry) })
        .collect()
}

/// The adjoint's aggregate over `steps` of `block`'s rows: `prod[n]` times
/// every step's decay, and `adjoint[n]` the adjoint before the first step
/// when it is zero after the last (`g_t = C_t dy_t + G`, `G <- a_t g_t`,
/// backwards).
fn range_adjoint(
    args: &SelectiveScan<'_>,
    dout: &[f32],
    block: Block,
    steps: std::ops::Range<usize>,
    prod: &mut [Lanes],
    adjoint: &mut [Lanes],
) {
    #[cfg(target_arch = "x86_64")]
    if super::avx2() {
        // SAFETY: the CPU has AVX2.
        return unsafe { range_adjoint_avx2(args, dout, block, steps, prod, adjoint) };
    }
    range_adjoint_portable(args, dout, block, steps, prod, adjoint)
}

/// [`range_adjoint`] compiled for AVX2 (as `super::run_avx2`).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn range_adjoint_avx2(
    args: &SelectiveScan<'_>,
    dout: &[f32],
    block: Block,
    steps: std::ops::Range<usize>,
    prod: &mut [Lanes],
    adjoint: &mut [Lanes],
) {
    range_adjoint_portable(args, dout, block, steps, prod, adjoint)
}

#[inline(always)]
fn range_adjoint_portable(
    args: &SelectiveScan<'_>,
    dout: &[f32],
    block: Block,
    range: std::ops::Range<usize>,
    prod: &mut [Lanes],
    adjoint: &mut [Lanes],
) {
    let SsmShape { dim, len, .. } = args.shape;
    let rows = Rows::new(args, block);
    let mut steps = Steps::new();
    let mut lines = Lines::new();
    let mut dy = vec![[0.0f32; LANES]; CHUNK];
    let base = block.row0(dim) * len;
    // The product of the decays as one exponential of the summed steps
    // (a running product of thousands of decays crawls through subnormal
    // floats, each multiply a microcode assist: 5x the whole pass).
    let mut dt_sum = [0.0f32; LANES];
    let starts: Vec<usize> = range.clone().step_by(CHUNK).collect();
    for &start in starts.iter().rev() {
        let chunk = start..(start + CHUNK).min(range.end);
        let k_len = chunk.len();
        steps.load(args, &rows, chunk.clone());
        chunk_dy(args, dout, &steps, block, base, len, &mut dy, None);
        for dt in &steps.dt[..k_len] {
            dt_sum = lanes::add(dt_sum, *dt);
        }
        for (n, adjoint) in adjoint.iter_mut().enumerate() {
            rows.projection(args, args.c, n, chunk.clone(), &mut lines.c);
            let a2 = rows.a2[n];
            let mut g_next = *adjoint;
            for k in (0..k_len).rev() {
                let a = lanes::exp2(mul(steps.dt[k], a2));
                g_next = mul(a, mul_add(lines.c[k], dy[k], g_next));
            }
            *adjoint = g_next;
        }
    }
    for (p, a2) in prod.iter_mut().zip(&rows.a2) {
        *p = mul(*p, lanes::exp2(mul(dt_sum, *a2)));
    }
}

/// `dy = dout silu(z)` (or `dout`) of a chunk's steps, a lane per row, and
/// with `fz`, dz's factor `dout silu'(z)`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn chunk_dy(
    args: &SelectiveScan<'_>,
    dout: &[f32],
    steps: &Steps,
    block: Block,
    base: usize,
    len: usize,
    dy: &mut [Lanes],
    fz: Option<&mut [Lanes]>,
) {
    let range = steps.range.clone();
    let k_len = range.len();
    for j in 0..LANES {
        for k in 0..k_len {
            dy[k][j] = if j < block.rows { dout[base + j * len + range.start + k] } else { 0.0 };
        }
    }
    if args.z.is_some() {
        let mut fz = fz;
        for k in 0..k_len {
            let (z, go) = (steps.z[k], dy[k]);
            let sig = lanes::sigmoid(z);
            dy[k] = mul(go, mul(z, sig));
            if let Some(fz) = fz.as_deref_mut() {
                // dout sig (1 + z (1 - sig))
                fz[k] = std::array::from_fn(|j| go[j] * sig[j] * (z[j] * (1.0 - sig[j]) + 1.0));
            }
        }
    }
}

/// One unit's backward: `block`'s rows over `range`, from `start`.
fn block_backward(
    args: &SelectiveScan<'_>,
    dout: &[f32],
    block: Block,
    range: std::ops::Range<usize>,
    out: &mut RowsOut<'_>,
    start: &Start<'_>,
) -> Shared {
    #[cfg(target_arch = "x86_64")]
    if super::avx2() {
        // SAFETY: the CPU has AVX2.
        return unsafe { block_backward_avx2(args, dout, block, range, out, start) };
    }
    block_backward_portable(args, dout, block, range, out, start)
}

/// [`block_backward`] compiled for AVX2 (as `super::run_avx2`).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn block_backward_avx2(
    args: &SelectiveScan<'_>,
    dout: &[f32],
    block: Block,
    range: std::ops::Range<usize>,
    out: &mut RowsOut<'_>,
    start: &Start<'_>,
) -> Shared {
    block_backward_portable(args, dout, block, range, out, start)
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
    unit: std::ops::Range<usize>,
    out: &mut RowsOut<'_>,
    start: &Start<'_>,
) -> Shared {
    let SsmShape { dim, len, state, .. } = args.shape;
    let unit_len = unit.len();
    let rows = Rows::new(args, block);
    let a_lanes: Vec<Lanes> = (0..state)
        .map(|n| std::array::from_fn(|j| if j < block.rows { args.a[(block.d0 + j) * state + n] } else { 0.0 }))
        .collect();
    let mut steps = Steps::new();
    let mut lines = Lines::new();
    let chunks: Vec<std::ops::Range<usize>> =
        unit.clone().step_by(CHUNK).map(|s| s..(s + CHUNK).min(unit.end)).collect();

    // (1) The states before every chunk, unless the forward kept them.
    let computed: Vec<Lanes>;
    let checkpoints = match start.kept {
        Some(kept) => kept,
        None => {
            let mut x = match &start.states {
                Some(states) => states.clone(),
                None => rows.states_to_lanes(state, &super::initial(args, block)),
            };
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
    let mut carry = start.carry.clone().unwrap_or_else(|| vec![[0.0f32; LANES]; state]);
    let mut shared = Shared {
        block,
        steps: unit.clone(),
        da: vec![[0.0; LANES]; state],
        dd: [0.0; LANES],
        dbias: [0.0; LANES],
        db: Along::zeros(args.b, state, unit_len),
        dc: Along::zeros(args.c, state, unit_len),
    };
    let base = block.row0(dim) * len;
    for (ci, range) in chunks.iter().enumerate().rev() {
        let k_len = range.len();
        steps.load(args, &rows, range.clone());
        chunk_dy(args, dout, &steps, block, base, len, &mut c.dy, Some(&mut c.fz));
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
            let mut da = [0.0f32; LANES];
            for k in (0..k_len).rev() {
                let g = mul_add(cs[k], c.dy[k], g_next);
                let xt = mul_add(steps.dtu[k], bs[k], c.ax[k]);
                let q = mul(g, c.ax[k]);
                da = mul_add(steps.dt[k], q, da);
                c.gaq[k] = mul_add(an, q, c.gaq[k]);
                c.gb[k] = mul_add(g, bs[k], c.gb[k]);
                c.cx[k] = mul_add(cs[k], xt, c.cx[k]);
                let t = range.start - unit.start + k;
                shared.db.add(n, t, unit_len, mul(g, steps.dtu[k]));
                shared.dc.add(n, t, unit_len, mul(c.dy[k], xt));
                g_next = mul(c.a[k], g);
            }
            carry[n] = g_next;
            add_wide(&mut shared.da[n], da);
        }
        shared.db.end_chunk();
        shared.dc.end_chunk();
        // The per-row gradients of the chunk's steps.
        let (mut dd, mut dbias) = ([0.0f32; LANES], [0.0f32; LANES]);
        for k in 0..k_len {
            let (dt, u, dy) = (steps.dt[k], steps.u[k], c.dy[k]);
            let du = mul_add(dy, rows.skip, mul(dt, c.gb[k]));
            let ddt = mul_add(c.gb[k], u, c.gaq[k]);
            let ddelta = if args.delta_softplus { mul(ddt, lanes::sigmoid(steps.pre[k])) } else { ddt };
            let ddelta = mul(ddelta, rows.live);
            dd = mul_add(dy, u, dd);
            dbias = lanes::add(dbias, ddelta);
            c.gb[k] = du;
            c.gaq[k] = ddelta;
            if args.z.is_some() {
                c.cx[k] = mul(c.fz[k], mul_add(rows.skip, u, c.cx[k]));
            }
        }
        add_wide(&mut shared.dd, dd);
        add_wide(&mut shared.dbias, dbias);
        let at = range.start - unit.start;
        for j in 0..block.rows {
            for k in 0..k_len {
                out.du[j][at + k] = c.gb[k][j];
                out.ddelta[j][at + k] = c.gaq[k][j];
            }
            if let Some(dz) = out.dz.as_mut() {
                for k in 0..k_len {
                    dz[j][at + k] = c.cx[k][j];
                }
            }
        }
    }
    if let Some(dx0) = out.dx0.as_deref_mut() {
        super::lanes_to_states(&carry, block.rows, dx0);
    }
    shared
}
