//! The selective scan (scan_core::selective) on the CPU, in f32 (bf16 and
//! f16 activations are widened as they are read), and its backward pass
//! (`backward`).
//!
//! Rows go eight at a time, a channel a lane ([`block`]): up to eight
//! consecutive channels of one batch sharing their B and C, so that B and C
//! are one broadcast value per (state, step) and the recurrence, its decays
//! `exp(dt A)` included ([`lanes::exp2`]), runs on eight rows at once. With
//! at least as many blocks as threads, threads take whole blocks. With
//! fewer, each row's sequence is cut into ranges and the recurrence
//! `x_t = a_t x_{t-1} + b_t` (per state index) is scanned in pieces, as a
//! linear-recurrence monoid ([`LinearRecurrence`]): every range finds its
//! aggregate (the product of its `a` and its end state from zero) in
//! parallel, the aggregates are combined in order into each range's
//! starting state, and every range runs again from its start, in parallel,
//! writing its outputs. Twice the arithmetic, no (L, N) tensor stored.
//!
//! The kernels are plain loops over lanes (no fused multiply-adds, no
//! reassociation), compiled twice on x86-64 (for AVX2 where the CPU has it,
//! and for the baseline) with the same operations in the same order, so both
//! builds give the same bits. Whole blocks give the same bits on any number
//! of threads; the ranges' grouping follows the thread count (one range per
//! thread), so there the last bits may differ from one thread count to
//! another.

mod backward;
mod block;
mod lanes;

use std::ops::Range;

use scan_core::ops::LinearRecurrence;
use scan_core::selective::backward::SsmGrads;
use scan_core::selective::{Projection, SelectiveScan, SsmInput, SsmOutput, SsmShape};
use scan_core::{Result, ScanOp};

use crate::parallel::for_each_part;
use crate::Cpu;
use block::{forward_chunk, silu, Block, Lines, Produce, Rows, Steps, CHUNK};
use lanes::{mul, mul_add, Lanes, LANES};

/// Rows shorter than this are not cut into ranges (a range must pay for
/// its second pass).
const MIN_RANGE: usize = 1024;

/// One block's steps `range`, from the states `x` (lanes per state index;
/// left as the states after them): with `out` (a slice of `range.len()`
/// items per row of the block) writes the outputs, gated; with `prod`
/// multiplies it by every step's decay.
fn run<T: SsmInput>(
    args: &SelectiveScan<'_, T>,
    rows: &Rows,
    range: Range<usize>,
    x: &mut [Lanes],
    out: Option<&mut [&mut [f32]]>,
    prod: Option<&mut [Lanes]>,
) {
    #[cfg(target_arch = "x86_64")]
    if avx2() {
        // SAFETY: the CPU has AVX2.
        return unsafe { run_avx2(args, rows, range, x, out, prod) };
    }
    run_portable(args, rows, range, x, out, prod)
}

/// Whether the AVX2 builds of the kernels run: where the CPU has AVX2 (but
/// not while a test of this module has asked for the baseline build).
#[cfg(target_arch = "x86_64")]
#[inline]
fn avx2() -> bool {
    #[cfg(test)]
    if tests::BASELINE.load(std::sync::atomic::Ordering::SeqCst) {
        return false;
    }
    std::arch::is_x86_feature_detected!("avx2")
}

/// [`run`] compiled for AVX2: the lanes are one register. The same
/// operations in the same order as the baseline build.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn run_avx2<T: SsmInput>(
    args: &SelectiveScan<'_, T>,
    rows: &Rows,
    range: Range<usize>,
    x: &mut [Lanes],
    out: Option<&mut [&mut [f32]]>,
    prod: Option<&mut [Lanes]>,
) {
    run_portable(args, rows, range, x, out, prod)
}

#[inline(always)]
fn run_portable<T: SsmInput>(
    args: &SelectiveScan<'_, T>,
    rows: &Rows,
    range: Range<usize>,
    x: &mut [Lanes],
    mut out: Option<&mut [&mut [f32]]>,
    mut prod: Option<&mut [Lanes]>,
) {
    let mut steps = Steps::new();
    let mut lines = Lines::new();
    let mut y = vec![[0.0f32; LANES]; CHUNK];
    for start in range.clone().step_by(CHUNK) {
        let chunk = start..(start + CHUNK).min(range.end);
        steps.load(args, rows, chunk.clone());
        let k_len = chunk.len();
        let Some(out) = out.as_deref_mut() else {
            let produce = match prod.as_deref_mut() {
                Some(prod) => Produce::Decays(prod),
                None => Produce::States,
            };
            forward_chunk(args, rows, &steps, &mut lines, x, produce);
            continue;
        };
        y[..k_len].fill([0.0; LANES]);
        forward_chunk(args, rows, &steps, &mut lines, x, Produce::Outputs(&mut y));
        for (k, y) in y[..k_len].iter_mut().enumerate() {
            if args.d.is_some() {
                *y = mul_add(rows.skip, steps.u[k], *y);
            }
            if args.z.is_some() {
                *y = mul(*y, silu(steps.z[k]));
            }
        }
        for (j, row) in out.iter_mut().enumerate() {
            for (o, y) in row[start - range.start..][..k_len].iter_mut().zip(&y[..k_len]) {
                *o = y[j];
            }
        }
    }
}

/// The states the rows of `block` start from, row-major.
fn initial<T: SsmInput>(args: &SelectiveScan<'_, T>, block: Block) -> Vec<f32> {
    let n = args.shape.state;
    let at = block.row0(args.shape.dim) * n;
    args.initial_state.map_or_else(|| vec![0.0; block.rows * n], |s| s[at..at + block.rows * n].to_vec())
}

/// The first `n` values of `rest`, leaving the others in it.
pub(super) fn split_front<'a>(rest: &mut &'a mut [f32], n: usize) -> &'a mut [f32] {
    let (head, tail) = std::mem::take(rest).split_at_mut(n);
    *rest = tail;
    head
}

/// Writes lanes per state index back as the block's rows' states.
fn lanes_to_states(x: &[Lanes], rows: usize, to: &mut [f32]) {
    let state = x.len();
    for j in 0..rows {
        for (n, x) in x.iter().enumerate() {
            to[j * state + n] = x[j];
        }
    }
}

/// The states a CPU forward kept for the backward
/// ([`Cpu::selective_scan_saving`]): each block's states before every 64
/// steps, for [`Cpu::selective_scan_backward_saved`].
#[derive(Clone, Debug, PartialEq)]
pub struct SelectiveCheckpoints {
    shape: SsmShape,
    /// The arguments the states depend on (`origin`).
    from: Origin,
    blocks: Vec<Block>,
    /// Per block, in order; empty where the forward kept nothing.
    states: Vec<Vec<Lanes>>,
}

/// What the forward's states depend on, as the GPU's saved states check
/// it: the grouping of B and C (their form and groups: B's makes the
/// states, C's is the rest of the grouping the docs promise to check), the
/// address and length of u, delta, A, B, delta_bias and the initial state
/// ((0, 0) when absent), and softplus. (The shape and the blocks are
/// checked apart.) The lengths tell apart arrays starting at the same
/// address, as B as (batch, 1, N, L) and as (batch, 2, N, L) over one
/// buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Origin {
    /// B's and C's groups, `None` where fixed.
    groups: [Option<usize>; 2],
    inputs: [(usize, usize); 6],
    softplus: bool,
}

fn origin(args: &SelectiveScan<'_>) -> Origin {
    let at = |x: Option<&[f32]>| x.map_or((0, 0), |x| (x.as_ptr() as usize, x.len()));
    Origin {
        groups: [groups(args.b), groups(args.c)],
        inputs: [
            at(Some(args.u)),
            at(Some(args.delta)),
            at(Some(args.a)),
            at(Some(args.b.data())),
            at(args.delta_bias),
            at(args.initial_state),
        ],
        softplus: args.delta_softplus,
    }
}

/// A projection's groups, `None` where fixed.
fn groups(p: Projection<'_>) -> Option<usize> {
    match p {
        Projection::Varying { groups, .. } => Some(groups),
        Projection::Fixed(_) => None,
    }
}

/// B's and C's forms, for an error's message.
fn grouping(groups: [Option<usize>; 2]) -> String {
    let form = |g: Option<usize>| {
        g.map_or("fixed".to_string(), |g| format!("varying in {g} group{}", if g == 1 { "" } else { "s" }))
    };
    format!("B {}, C {}", form(groups[0]), form(groups[1]))
}

impl SelectiveCheckpoints {
    /// Whether states were kept (not where the forward cut rows into
    /// ranges, nor where the backward will); without them the backward
    /// computes them itself.
    pub fn holds_states(&self) -> bool {
        !self.states.is_empty() || self.blocks.is_empty()
    }
}

/// The forward on `threads` threads; with `save`, each block's states
/// before every chunk where it runs whole blocks (`None` otherwise).
#[allow(clippy::type_complexity)]
fn forward<T: SsmInput>(
    args: &SelectiveScan<'_, T>,
    threads: usize,
    save: bool,
) -> Result<(SsmOutput, Option<Vec<Vec<Lanes>>>)> {
    args.validate()?;
    let SsmShape { batch, dim, len, state } = args.shape;
    let rows = batch * dim;
    if len == 0 {
        // No steps: no output, and the last state is the initial one (with
        // L = 0 nothing bounds rows x N: allocated fallibly, and only when
        // asked for). Nothing kept: the backward has nothing to recompute.
        let last = match (args.return_last_state, args.initial_state) {
            (false, _) => None,
            (true, Some(x0)) => Some(x0.to_vec()),
            (true, None) => Some(scan_core::selective::zeros::<f32>(rows * state)?),
        };
        return Ok((SsmOutput { out: Vec::new(), last_state: last }, save.then(Vec::new)));
    }
    let mut out = vec![0.0f32; rows * len];
    let mut last = scan_core::selective::zeros::<f32>(rows * state)?;
    let blocks = block::blocks(args)?;
    let mut saved = None;
    if blocks.is_empty() || blocks.len() >= threads || len < 2 * MIN_RANGE {
        let mut units: Vec<(Block, &mut [f32], &mut [f32], Vec<Lanes>)> = Vec::with_capacity(blocks.len());
        let (mut out_rest, mut last_rest) = (&mut out[..], &mut last[..]);
        for &block in &blocks {
            let (o, l) =
                (split_front(&mut out_rest, block.rows * len), split_front(&mut last_rest, block.rows * state));
            units.push((block, o, l, Vec::new()));
        }
        for_each_part(&mut units, threads, |part| {
            for (block, o, l, kept) in part.iter_mut() {
                let rows = Rows::new(args, *block);
                let mut x = rows.states_to_lanes(state, &initial(args, *block));
                let mut outs: Vec<&mut [f32]> = o.chunks_mut(len).collect();
                if save {
                    // A chunk at a time, keeping the states before each
                    // (the chunks of the backward's first pass).
                    for start in (0..len).step_by(CHUNK) {
                        let chunk = start..(start + CHUNK).min(len);
                        kept.extend_from_slice(&x);
                        let mut parts: Vec<&mut [f32]> = outs.iter_mut().map(|o| &mut o[chunk.clone()]).collect();
                        run(args, &rows, chunk, &mut x, Some(&mut parts), None);
                    }
                } else {
                    run(args, &rows, 0..len, &mut x, Some(&mut outs), None);
                }
                lanes_to_states(&x, block.rows, l);
            }
        });
        saved = save.then(|| units.into_iter().map(|u| u.3).collect());
    } else {
        ranged(args, &blocks, threads, &mut out, &mut last);
    }
    Ok((SsmOutput { out, last_state: args.return_last_state.then_some(last) }, saved))
}

impl Cpu {
    /// The selective scan of Mamba (mamba_ssm's `selective_scan_fn`; see
    /// [`scan_core::selective`] for the definition and layouts), in f32 on
    /// this executor's threads; bf16 or f16 activations (`T`) are widened
    /// exactly as they are read. Shapes are checked first: a wrong one is an
    /// [`Error::WrongShape`](scan_core::Error::WrongShape) naming the argument.
    /// The outputs are bitwise the same for every number of threads
    /// whenever there are at least as many blocks as threads (a block is up
    /// to 8 consecutive rows of one batch and one group of B and C) or rows
    /// are shorter than 2048 steps; fewer, longer rows are cut into a range
    /// per thread, and the last bits follow that grouping.
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
        Ok(forward(args, self.threads(), false)?.0)
    }

    /// [`Cpu::selective_scan`], also keeping what
    /// [`Cpu::selective_scan_backward_saved`] needs to skip the backward's
    /// first pass: each block's states before every 64 steps (1/64 of the
    /// (batch, dim, L, N) states, up to 8 times that where a block holds
    /// fewer than 8 rows: its states are kept 8 lanes wide). The outputs are `selective_scan`'s, bit for
    /// bit. Where the forward cuts rows into ranges (few rows on many
    /// threads), or the backward will (fewer than 8 blocks of rows of 2048
    /// steps or more), nothing is kept ([`SelectiveCheckpoints::holds_states`]
    /// is false) and the backward computes the states itself.
    ///
    /// ```
    /// use scan_core::selective::{Projection, SelectiveScan, SsmShape};
    /// let cpu = scan_cpu::Cpu::new();
    /// let shape = SsmShape { batch: 1, dim: 1, len: 1, state: 1 };
    /// let one = Projection::Fixed(&[1.0]);
    /// let args = SelectiveScan::new(shape, &[2.0], &[0.5], &[-1.0], one, one);
    /// let (forward, saved) = cpu.selective_scan_saving(&args)?;
    /// assert_eq!(forward.out, [1.0]);
    /// let grads = cpu.selective_scan_backward_saved(&args, &saved, &[1.0])?;
    /// assert_eq!(grads, cpu.selective_scan_backward(&args, &[1.0])?);
    /// # Ok::<(), scan_core::Error>(())
    /// ```
    pub fn selective_scan_saving(&self, args: &SelectiveScan<'_>) -> Result<(SsmOutput, SelectiveCheckpoints)> {
        // Before the blocks, which divide by the groups' sizes.
        args.validate()?;
        let blocks = block::blocks(args)?;
        let keep = !backward::cuts_rows(blocks.len(), args.shape.len);
        let (out, states) = forward(args, self.threads(), keep)?;
        let states = states.unwrap_or_default();
        Ok((out, SelectiveCheckpoints { shape: args.shape, from: origin(args), blocks, states }))
    }

    /// The selective scan's backward pass (mamba_ssm's `selective_scan_bwd`;
    /// see [`scan_core::selective::backward`]): given `dout` = dL/d`out`,
    /// the gradients of every argument, the optional ones where the argument
    /// is given. In f32, eight rows at a time as the forward, each block of
    /// rows (one thread's work; with fewer than 8 blocks of rows of 2048
    /// steps or more, each range of a row's steps) recomputing its states
    /// from checkpoints every 64 steps (never the whole (batch, dim, L, N));
    /// the gradients shared by rows (A, B, C, D, delta_bias) are summed per
    /// unit and then in unit order, and the cut follows the shape alone, so
    /// they are bitwise the same for every number of threads.
    /// Within mamba_ssm's tolerances of the f64 reference
    /// ([`reference_backward`](scan_core::selective::backward::reference_backward)).
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
        backward::backward(args, dout, self.threads(), None)
    }

    /// [`Cpu::selective_scan_backward`] from the states that
    /// [`Cpu::selective_scan_saving`] kept for the same `args` (the
    /// backward's first pass skipped): the same gradients, bit for bit.
    /// Errors: those of `selective_scan_backward`, and
    /// [`Error::WrongShape`](scan_core::Error::WrongShape) naming `saved`
    /// when it was kept for arguments of another shape or grouping (B or C
    /// fixed or varying, and in how many groups), or for other arrays of u,
    /// delta, A, B, delta_bias or the initial state, or another softplus
    /// setting (the arrays are told apart by address and length: the same
    /// arrays changed since are not caught).
    pub fn selective_scan_backward_saved(
        &self,
        args: &SelectiveScan<'_>,
        saved: &SelectiveCheckpoints,
        dout: &[f32],
    ) -> Result<SsmGrads> {
        args.validate()?;
        let blocks = block::blocks(args)?;
        if saved.shape != args.shape || saved.blocks != blocks {
            return Err(scan_core::Error::WrongShape {
                argument: "saved".into(),
                expected: format!("states kept by a forward of shape {:?} in {} blocks", args.shape, blocks.len()),
                found: format!("states of shape {:?} in {} blocks", saved.shape, saved.blocks.len()),
            });
        }
        let from = origin(args);
        if saved.from.groups != from.groups {
            return Err(scan_core::Error::WrongShape {
                argument: "saved".into(),
                expected: format!("states kept by a forward with {}", grouping(from.groups)),
                found: format!("states kept by a forward with {}", grouping(saved.from.groups)),
            });
        }
        if saved.from != from {
            return Err(scan_core::Error::WrongShape {
                argument: "saved".into(),
                expected: "the states kept by the forward of these arguments".into(),
                found: "states kept by the forward of other arrays of u, delta, A, B, delta_bias or the initial \
                        state (another address or length), or another softplus setting"
                    .into(),
            });
        }
        let kept = (!saved.states.is_empty()).then_some(&saved.states[..]);
        backward::backward(args, dout, self.threads(), kept)
    }
}

/// `len` steps in `count` ranges or fewer, each of whole chunks, so that
/// each range's chunks are the whole row's (the same grouping of the work,
/// however the ranges fall).
fn whole_chunk_ranges(len: usize, count: usize) -> Vec<Range<usize>> {
    let range_len = len.div_ceil(count.max(1)).next_multiple_of(CHUNK).max(CHUNK);
    (0..len).step_by(range_len).map(|s| s..(s + range_len).min(len)).collect()
}

/// The states each block's rows start each of `ranges` from (block-major:
/// `blocks.len() x ranges.len()` lane vectors per state index), and each
/// block's states after the last step: (1) every range's aggregate, the
/// product of its decays and its end state from zero, in parallel; (2) the
/// aggregates combined in order through the linear-recurrence monoid.
fn range_starts<T: SsmInput>(
    args: &SelectiveScan<'_, T>,
    blocks: &[Block],
    ranges: &[Range<usize>],
    threads: usize,
) -> (Vec<Vec<Lanes>>, Vec<Vec<Lanes>>) {
    let state = args.shape.state;
    let per = ranges.len();
    let mut aggregates: Vec<(usize, usize, Vec<Lanes>, Vec<Lanes>)> = (0..blocks.len())
        .flat_map(|i| (0..per).map(move |c| (i, c, vec![[1.0; LANES]; state], vec![[0.0; LANES]; state])))
        .collect();
    for_each_part(&mut aggregates, threads, |part| {
        for (i, c, prod, end) in part.iter_mut() {
            let rows = Rows::new(args, blocks[*i]);
            run(args, &rows, ranges[*c].clone(), end, None, Some(prod));
        }
    });
    let mut starts = vec![Vec::new(); blocks.len() * per];
    let mut lasts = Vec::with_capacity(blocks.len());
    for (i, &block) in blocks.iter().enumerate() {
        let rows = Rows::new(args, block);
        let mut carry = rows.states_to_lanes(state, &initial(args, block));
        for c in 0..per {
            let (_, _, prod, end) = &aggregates[i * per + c];
            starts[i * per + c] = carry.clone();
            for n in 0..state {
                for j in 0..LANES {
                    // (1, carry) then (prod, end): the monoid's combine, on the state.
                    carry[n][j] = LinearRecurrence::<f32>::combine((1.0, carry[n][j]), (prod[n][j], end[n][j])).1;
                }
            }
        }
        lasts.push(carry);
    }
    (starts, lasts)
}

/// Few blocks: each block's rows in ranges of steps, joined through the
/// linear-recurrence monoid (see the module docs).
fn ranged<T: SsmInput>(
    args: &SelectiveScan<'_, T>,
    blocks: &[Block],
    threads: usize,
    out: &mut [f32],
    last: &mut [f32],
) {
    let SsmShape { dim, len, state, .. } = args.shape;
    let per_block = threads.div_ceil(blocks.len()).min(len / MIN_RANGE).max(1);
    let ranges = whole_chunk_ranges(len, per_block);
    let per = ranges.len();

    // 1 and 2: each range's starting state, and each block's last.
    let (starts, lasts) = range_starts(args, blocks, &ranges, threads);
    for (block, carry) in blocks.iter().zip(&lasts) {
        let at = block.row0(dim) * state;
        lanes_to_states(carry, block.rows, &mut last[at..at + block.rows * state]);
    }

    // 3. Every range again from its start, writing its outputs.
    let mut units: Vec<(usize, usize, Vec<&mut [f32]>)> =
        (0..blocks.len() * per).map(|u| (u / per, u % per, Vec::new())).collect();
    for (row, o) in out.chunks_mut(len).enumerate() {
        let i = blocks.partition_point(|b| b.row0(dim) + b.rows <= row);
        let mut rest = o;
        for (c, r) in ranges.iter().enumerate() {
            let (head, tail) = rest.split_at_mut(r.len());
            units[i * per + c].2.push(head);
            rest = tail;
        }
    }
    for_each_part(&mut units, threads, |part| {
        for (i, c, outs) in part.iter_mut() {
            let rows = Rows::new(args, blocks[*i]);
            let mut x = starts[*i * per + *c].clone();
            run(args, &rows, ranges[*c].clone(), &mut x, Some(outs), None);
        }
    });
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, Ordering};

    use scan_core::selective::{Projection, SelectiveScan, SsmShape};
    use scan_testing::Rng;

    use crate::Cpu;

    /// Set: the kernels run their baseline build even where the CPU has
    /// AVX2. (Other tests may run meanwhile: both builds give the same
    /// results, which is what the test below checks.)
    pub(super) static BASELINE: AtomicBool = AtomicBool::new(false);

    /// The AVX2 and the baseline builds of both passes give the same bits
    /// (on a CPU without AVX2 both runs take the baseline build).
    #[test]
    fn the_avx2_and_baseline_builds_agree_bit_for_bit() {
        let mut rng = Rng::fresh("selective builds");
        let shape = SsmShape { batch: 2, dim: 11, len: 130, state: 5 };
        let (bdl, nl) = (2 * 11 * 130, 2 * 5 * 130);
        let mut v = |n: usize, lo: f64, hi: f64| rng.vec(n, |r| r.range_f64(lo, hi) as f32);
        let (u, delta, z, dout) = (v(bdl, -1.0, 1.0), v(bdl, -3.0, 1.0), v(bdl, -3.0, 3.0), v(bdl, -1.0, 1.0));
        let (b, c, a, d, bias, init) = (
            v(nl, -1.0, 1.0),
            v(11 * 5, -1.0, 1.0),
            v(11 * 5, -2.0, -0.1),
            v(11, -1.0, 1.0),
            v(11, -0.5, 0.5),
            v(110, -1.0, 1.0),
        );
        let args = SelectiveScan::new(
            shape,
            &u,
            &delta,
            &a,
            Projection::Varying { data: &b, groups: 1 },
            Projection::Fixed(&c),
        )
        .d(&d)
        .z(&z)
        .delta_bias(&bias)
        .delta_softplus(true)
        .initial_state(&init)
        .return_last_state(true);
        let cpu = Cpu::new().with_threads(1);
        let (forward, backward) =
            (cpu.selective_scan(&args).unwrap(), cpu.selective_scan_backward(&args, &dout).unwrap());
        BASELINE.store(true, Ordering::SeqCst);
        let (forward_base, backward_base) = (cpu.selective_scan(&args), cpu.selective_scan_backward(&args, &dout));
        BASELINE.store(false, Ordering::SeqCst);
        assert_eq!(forward_base.unwrap(), forward);
        assert_eq!(backward_base.unwrap(), backward);
    }
}
