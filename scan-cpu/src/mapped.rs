//! Mapped scans on the CPU (`scan_core::maps`): items are lifted from the
//! inputs as they are read and projected as they are written; nothing
//! lifted is stored.
//!
//! The input is cut into one piece per thread (in memory order). Pass 1
//! reduces each piece's lifted items in scan order, grouped as a tree of
//! 64-item blocks (a long fold can stick on a subnormal); the pieces' totals are
//! combined in scan order (the last piece first for a reverse scan); pass 2
//! rescans each piece from its prefix, projecting into the output. So the
//! inputs are read twice and the output written once. The grouping depends
//! on the number of pieces: float results are identical from run to run for
//! one thread count, not across thread counts. Rows (`scan_mapped_rows`)
//! are each such a scan: many rows a thread's block of rows each, one piece
//! per row; a few long rows one after another on every thread.

use scan_core::maps::{Inputs, Maps};
use scan_core::{reference, Error, Result, ScanOp, ScanSpec};

use crate::cpu::Cpu;
use crate::parallel;

/// Pieces smaller than this run on one thread: a thread's start costs more.
const MIN_PIECE: usize = 1 << 15;

/// `acc ∘ x`, where `None` is the empty prefix (so that a scan never
/// combines with the identity, which for floats is not always exact: 0.0 + -0.0).
fn then<Op: ScanOp>(acc: Option<Op::Item>, x: Op::Item) -> Op::Item {
    match acc {
        Some(a) => Op::combine(a, x),
        None => x,
    }
}

impl Cpu {
    /// Scans the items that `M` lifts from `inputs` (one slice, or a tuple
    /// of two or three slices of one length) and writes `M`'s projection
    /// of each result into `output`: the fused form of lifting into a
    /// buffer, scanning it and projecting it, without the buffer. Errors:
    /// [`Error::LengthMismatch`] when the inputs differ in length or the
    /// output does not match them.
    ///
    /// ```
    /// use scan_core::maps::{bf16, Recurrence, Widen};
    /// use scan_core::ops::{Add, LinearRecurrence};
    /// use scan_core::ScanSpec;
    /// let cpu = scan_cpu::Cpu::new();
    /// // h_t = a_t h_{t-1} + b_t from separate a and b arrays, h alone out.
    /// let (a, b) = ([0.5f32; 3], [1.0f32; 3]);
    /// let mut h = [0.0f32; 3];
    /// cpu.scan_mapped::<LinearRecurrence<f32>, Recurrence, _>((&a[..], &b[..]), &mut h, ScanSpec::inclusive())?;
    /// assert_eq!(h, [1.0, 1.5, 1.75]);
    /// // bf16 in, f32 accumulation and out.
    /// let ones = vec![bf16::ONE; 1000];
    /// let mut sums = vec![0.0f32; 1000];
    /// cpu.scan_mapped::<Add<f32>, Widen<bf16>, _>(&ones[..], &mut sums, ScanSpec::inclusive())?;
    /// assert_eq!(sums[999], 1000.0); // a bf16 accumulator stops at 256
    /// # Ok::<(), scan_core::Error>(())
    /// ```
    pub fn scan_mapped<Op: ScanOp, M: Maps<Op>, I: Inputs<Item = M::Input>>(
        &self,
        inputs: I,
        output: &mut [M::Output],
        spec: ScanSpec,
    ) -> Result<()> {
        let n = inputs.checked_len()?;
        Error::check_lengths(n, output.len())?;
        scan_range::<Op, M, I>(&inputs, 0, output, spec, self.threads());
        Ok(())
    }

    /// [`scan_mapped`](Cpu::scan_mapped) of each row of a row-major
    /// `[rows, len / rows]` layout of the inputs, each row on its own, into
    /// `output` in the same layout: the fused form of
    /// [`scan_rows`](Cpu::scan_rows). Many rows are split over the threads,
    /// each row scanned in one pass on one thread; a few long rows are
    /// scanned one after another, each on every thread. Errors:
    /// [`Error::LengthMismatch`] when the inputs differ in length or the
    /// output does not match them, [`Error::BadShape`] when `rows` is 0 or
    /// does not divide the length.
    ///
    /// ```
    /// use scan_core::maps::Recurrence;
    /// use scan_core::ops::LinearRecurrence;
    /// use scan_core::{Error, ScanSpec};
    /// let cpu = scan_cpu::Cpu::new();
    /// // Two rows of h_t = a_t h_{t-1} + b_t, each starting afresh.
    /// let (a, b) = ([0.5f32; 6], [1.0f32; 6]);
    /// let mut h = [0.0f32; 6];
    /// cpu.scan_mapped_rows::<LinearRecurrence<f32>, Recurrence, _>((&a[..], &b[..]), &mut h, 2, ScanSpec::inclusive())?;
    /// assert_eq!(h, [1.0, 1.5, 1.75, 1.0, 1.5, 1.75]);
    /// let bad = cpu.scan_mapped_rows::<LinearRecurrence<f32>, Recurrence, _>((&a[..], &b[..]), &mut h, 4, ScanSpec::inclusive());
    /// assert!(matches!(bad, Err(Error::BadShape { len: 6, rows: 4 })));
    /// # Ok::<(), scan_core::Error>(())
    /// ```
    pub fn scan_mapped_rows<Op: ScanOp, M: Maps<Op>, I: Inputs<Item = M::Input>>(
        &self,
        inputs: I,
        output: &mut [M::Output],
        rows: usize,
        spec: ScanSpec,
    ) -> Result<()> {
        let n = inputs.checked_len()?;
        Error::check_lengths(n, output.len())?;
        let row_len = reference::row_len(n, rows)?;
        if row_len == 0 {
            return Ok(());
        }
        let threads = self.threads();
        // Few rows long enough to split: each row on every thread. (Many
        // rows on few threads balance well; 3 rows on 2 threads do not.)
        if rows < threads.saturating_mul(4) && row_len >= 2 * MIN_PIECE {
            for (r, out) in output.chunks_exact_mut(row_len).enumerate() {
                scan_range::<Op, M, I>(&inputs, r * row_len, out, spec, threads);
            }
            return Ok(());
        }
        // Many rows: a block of whole rows per thread, each row in one pass.
        let block = rows.div_ceil(threads.min(rows)) * row_len;
        let scan_block = |base: usize, out: &mut [M::Output]| {
            for (j, row) in out.chunks_exact_mut(row_len).enumerate() {
                scan_range::<Op, M, I>(&inputs, base + j * row_len, row, spec, 1);
            }
        };
        // (A block a thread; if the OS refuses a thread, the others take its
        // block: `for_each_part`.)
        let mut blocks: Vec<(usize, &mut [M::Output])> = output.chunks_mut(block).enumerate().collect();
        let count = blocks.len();
        parallel::for_each_part(&mut blocks, count, |part| {
            for (k, out) in part.iter_mut() {
                scan_block(*k * block, out);
            }
        });
        Ok(())
    }
}

/// Items folded one after another before their total joins the tree.
const BLOCK: usize = 64;

/// The combination of `items` (in scan order; `None` when there are none),
/// grouped as a tree: blocks of [`BLOCK`] folded one after another, then the
/// blocks' totals joined pairwise as a binary counter joins its bits, the
/// earlier always on the left.
///
/// Why not one fold over the whole piece: a long chain of combines can
/// meet a value that no later step moves. The recurrence's decay product,
/// folded over a million decays in (0.5, 1), underflows to the smallest
/// subnormal f32 and stays there (half of it rounds back up), so every
/// further multiplication is on a subnormal, which this machine's Xeon
/// does some twenty times slower: `scan_mapped` of 2^22 such steps took
/// 70-76 ms on 2 threads against 7 on one (which needs no totals), and
/// 6.8-7.3 ms this way. In a tree, the products of whole blocks and then of
/// equal halves meet, and a tiny product times a tiny one is 0.
fn reduce<Op: ScanOp>(items: impl Iterator<Item = Op::Item>) -> Option<Op::Item> {
    // levels[l]: the total of the 2^l blocks before the current ones, if
    // the count of blocks so far has bit l set. (On the heap, as many as a
    // count has bits: an item may be large, and a piece's thread has a
    // thread's stack. Growing the levels as needed instead ran 40% slower:
    // 9.6 ms against 6.8 for 2^22 on 2 threads.)
    let mut levels: Vec<Option<Op::Item>> = vec![None; usize::BITS as usize];
    let mut block: Option<Op::Item> = None;
    let mut in_block = 0;
    let push = |levels: &mut [Option<Op::Item>], mut total: Op::Item| {
        for level in levels.iter_mut() {
            match level.take() {
                Some(earlier) => total = Op::combine(earlier, total),
                None => {
                    *level = Some(total);
                    return;
                }
            }
        }
    };
    for x in items {
        block = Some(then::<Op>(block, x));
        in_block += 1;
        if in_block == BLOCK {
            if let Some(total) = block.take() {
                push(&mut levels, total);
            }
            in_block = 0;
        }
    }
    // The levels hold earlier blocks the higher they are; the unfinished
    // block comes last.
    let joined = levels.iter().rev().flatten().fold(None, |acc, &t| Some(then::<Op>(acc, t)));
    match block {
        Some(rest) => Some(then::<Op>(joined, rest)),
        None => joined,
    }
}

/// The mapped scan of positions `base .. base + output.len()` of `inputs`
/// into `output`, on at most `threads` threads.
///
/// The positions are cut into one piece per thread (in memory order). Pass
/// 1 reduces each piece's lifted items in scan order (`reduce`); the pieces' totals
/// are combined in scan order (the last piece first for a reverse scan);
/// pass 2 rescans each piece from its prefix, projecting into the output.
/// One piece is one pass.
fn scan_range<Op: ScanOp, M: Maps<Op>, I: Inputs<Item = M::Input>>(
    inputs: &I,
    base: usize,
    output: &mut [M::Output],
    spec: ScanSpec,
    threads: usize,
) {
    let n = output.len();
    if n == 0 {
        return;
    }
    let piece = n.div_ceil(threads.min(n / MIN_PIECE).max(1));
    // As many pieces as `piece` cuts: fewer than asked only for more than
    // 2^15 threads (p pieces asked of n >= p 2^15 items cut n.div_ceil(p)
    // each; that makes p again unless (p - 1)^2 >= n).
    let pieces = n.div_ceil(piece);
    let reverse = spec.is_reverse();
    // The indices (within the range) of piece k, in scan order.
    let order = |k: usize| {
        let (lo, hi) = (k * piece, ((k + 1) * piece).min(n));
        (0..hi - lo).map(move |j| if reverse { hi - 1 - j } else { lo + j })
    };
    let lift = |i: usize| M::lift(inputs.get(base + i));

    // Pass 1: each piece's total (in memory order of pieces; one piece
    // needs no prefix), grouped as a tree of blocks (`reduce`). A piece a
    // thread; if the OS refuses a thread, the others take its piece
    // (`for_each_part`).
    let mut totals: Vec<(usize, Option<Op::Item>)> = (0..pieces).map(|k| (k, None)).collect();
    if pieces > 1 {
        parallel::for_each_part(&mut totals, pieces, |part| {
            for (k, total) in part.iter_mut() {
                *total = reduce::<Op>(order(*k).map(lift));
            }
        });
    }
    // Each piece's prefix: the totals of the pieces before it in scan order.
    let mut prefixes = vec![None; pieces];
    let mut acc: Option<Op::Item> = None;
    let scan_order: Vec<usize> = if reverse { (0..pieces).rev().collect() } else { (0..pieces).collect() };
    for k in scan_order {
        prefixes[k] = acc;
        if let Some(t) = totals[k].1 {
            acc = Some(then::<Op>(acc, t));
        }
    }
    // Pass 2: rescan each piece from its prefix and project.
    let inclusive = spec.is_inclusive();
    let run = |k: usize, out: &mut [M::Output]| {
        let first = k * piece;
        let mut acc = prefixes[k];
        for i in order(k) {
            let next = then::<Op>(acc, lift(i));
            out[i - first] = M::project(if inclusive { next } else { acc.unwrap_or_else(Op::identity) });
            acc = Some(next);
        }
    };
    let mut work: Vec<(usize, &mut [M::Output])> = output.chunks_mut(piece).enumerate().collect();
    parallel::for_each_part(&mut work, pieces, |part| {
        for (k, out) in part.iter_mut() {
            run(*k, out);
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ranges of positions joined in scan order: combining anything but
    /// neighbours, in order, panics.
    struct Ranges;
    impl ScanOp for Ranges {
        type Item = (u64, u64); // [start, end); (0, 0) is the identity
        fn identity() -> (u64, u64) {
            (0, 0)
        }
        fn combine(l: (u64, u64), r: (u64, u64)) -> (u64, u64) {
            if l == (0, 0) {
                return r;
            }
            if r == (0, 0) {
                return l;
            }
            assert_eq!(l.1, r.0, "joined out of order: {l:?} then {r:?}");
            (l.0, r.1)
        }
    }

    #[test]
    fn the_tree_joins_every_item_in_scan_order() {
        for n in [0u64, 1, 63, 64, 65, 128, 129, 64 * 5 + 3, 64 * 64 + 1, 100_000] {
            let got = reduce::<Ranges>((1..=n).map(|i| (i, i + 1)));
            assert_eq!(got, (n > 0).then_some((1, n + 1)), "{n} items");
        }
    }

    #[test]
    fn a_decay_product_leaves_the_subnormals_for_zero() {
        // Decays of 0.53: folded one after another the product sticks at
        // the smallest subnormal; the tree's is 0 (the exact product is
        // 0.53^4096, far below any f32).
        type Decay = scan_core::ops::Mul<f32>;
        let fold = (0..4096).fold(1.0f32, |p, _| p * 0.53);
        assert_eq!(fold, f32::from_bits(1), "the fold sticks at the smallest subnormal");
        assert_eq!(reduce::<Decay>(std::iter::repeat_n(0.53f32, 4096)), Some(0.0));
    }
}
