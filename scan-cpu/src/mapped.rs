//! Mapped scans on the CPU (`scan_core::maps`): items are lifted from the
//! inputs as they are read and projected as they are written; nothing
//! lifted is stored.
//!
//! The input is cut into one piece per thread (in memory order), and, when
//! there are several pieces, each piece of at least 2^15 items into 8 lanes,
//! scanned side by side (one fold is latency-bound). Pass 1 reduces each lane's lifted items in scan order,
//! grouped as a tree of 64-item blocks (a long fold can stick on a
//! subnormal); the lanes' totals are combined in scan order (the last piece
//! first for a reverse scan); pass 2 rescans each lane from its prefix,
//! projecting into the output. So the inputs are read twice and the output
//! written once; one piece (one thread, or under 2^16 items) is one pass. The grouping depends
//! on the number of pieces: float results are identical from run to run for
//! one thread count, not across thread counts. Rows (`scan_mapped_rows`)
//! are each such a scan: many rows a thread's block of rows each, one piece
//! per row; a few long rows one after another on every thread.

use scan_core::maps::{Inputs, Maps};
use scan_core::{reference, Error, Result, ScanOp, ScanSpec};

use crate::cpu::{is_zero_sized, Cpu};
use crate::parallel;
use crate::tree::{self, then};

/// Pieces smaller than this run on one thread: a thread's start costs more.
const MIN_PIECE: usize = 1 << 15;

impl Cpu {
    /// Scans the items that `M` lifts from `inputs` (one slice, or a tuple
    /// of two or three slices of one length) and writes `M`'s projection
    /// of each result into `output`: the fused form of lifting into a
    /// buffer, scanning it and projecting it, without the buffer. Errors:
    /// [`Error::WrongShape`] when the input arrays differ in length,
    /// [`Error::LengthMismatch`] when the output does not match them.
    ///
    /// The input is cut into one piece per thread (each of 2^15 items or
    /// more, but for the last), whatever the executor's [`Algorithm`](crate::Algorithm), and
    /// the grouping follows the pieces: float results are the same from run
    /// to run for one thread count, not across thread counts (an input
    /// under 2^16 items, or one thread, is one piece).
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
        // (Zero-sized outputs: nothing to write, however many.)
        if !is_zero_sized::<M::Output>() {
            scan_range::<Op, M, I>(&inputs, 0, output, spec, self.threads());
        }
        Ok(())
    }

    /// [`scan_mapped`](Cpu::scan_mapped) of each row of a row-major
    /// `[rows, len / rows]` layout of the inputs, each row on its own, into
    /// `output` in the same layout: the fused form of
    /// [`scan_rows`](Cpu::scan_rows). Many rows are split over the threads,
    /// each row scanned in one pass on one thread; a few long rows (fewer
    /// than 4 a thread, of 2^16 items or more) are scanned one after
    /// another, each on every thread and so grouped by the thread count, as
    /// in [`scan_mapped`](Cpu::scan_mapped). Errors:
    /// [`Error::WrongShape`] when the input arrays differ in length,
    /// [`Error::LengthMismatch`] when the output does not match them,
    /// [`Error::BadShape`] when `rows` is 0 or
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
        if row_len == 0 || is_zero_sized::<M::Output>() {
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

/// Lanes a long piece is cut into, scanned side by side in both passes. A
/// fold is latency-bound: every combine waits for the one before (the
/// recurrence's multiply then add; one chain measured about 5 cycles an
/// item here), so one chain leaves the core mostly idle; eight independent
/// chains in one loop keep it busy. Each lane is contiguous, so operands
/// keep their order. (The lanes' block folds, accumulators and seeds are
/// arrays of 8 items on the worker's stack, so items larger than
/// [`STACK_ITEM_MAX_BYTES`](crate::STACK_ITEM_MAX_BYTES) run in one lane a
/// piece, compiled apart: [`scan_range`]. `Tree`'s levels stay on the heap.)
const LANES: usize = 8;

/// A piece is cut into lanes from `LANES * MIN_LANE` items on; shorter
/// pieces are one lane. (Lanes are about an eighth of the piece, skewed:
/// [`lanes_of`].)
const MIN_LANE: usize = 1 << 12;

/// How a piece of `len` items is cut: the number of lanes and the items of
/// each lane but the last, which also takes the remainder.
///
/// A lane's length is 128 more than a multiple of 1024 items, so that the
/// lanes' streams do not all sit at one offset within a 4 KiB page: there
/// they would map to one L1 set and trip 4K-aliasing stalls (in a first
/// form of these loops, 2^24 recurrence steps took 42 ms on 2 threads in
/// lanes of exactly an eighth of a piece, 26 in skewed lanes). For 4-byte
/// items the 8 lanes sit 512 bytes apart within a page; 8-byte items pair
/// lanes l and l + 4 at one offset, and 32-byte items get no spread (the
/// skew is then 4 KiB): the arrays timed were f32.
fn lanes_of(len: usize) -> (usize, usize) {
    if len >= LANES * MIN_LANE {
        (LANES, (len / LANES - 128) / 1024 * 1024 + 128)
    } else {
        (1, len)
    }
}

/// The combination of `items` (in scan order; `None` when there are none),
/// grouped as a [`Tree`](tree::Tree).
#[cfg(test)]
fn reduce<Op: ScanOp>(items: impl Iterator<Item = Op::Item>) -> Option<Op::Item> {
    let mut tree = tree::Tree::new();
    for x in items {
        tree.push::<Op>(x);
    }
    tree.total::<Op>()
}

/// Pass 1 of one piece of `len` items (`item(s)`: the lifted item at scan
/// position `s`): the totals of its `L` lanes of `sub` items (the last
/// taking the rest), each a [`Tree`](tree::Tree), reduced side by side.
#[inline(always)]
fn reduce_lanes<Op: ScanOp, const L: usize>(
    item: impl Fn(usize) -> Op::Item,
    sub: usize,
    len: usize,
) -> [Option<Op::Item>; L] {
    tree::reduce_side_by_side::<Op, L>(item, sub, len, |_| {})
}

/// Pass 2 of one piece: its `L` lanes of `sub` items (the last taking the
/// rest of `len`) scanned side by side, lane `l` from `seeds[l]` (the
/// combination of everything before it in scan order), each result
/// projected into `out` at `at(s)` for scan position `s`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn scan_lanes<Op: ScanOp, M: Maps<Op>, const L: usize>(
    item: impl Fn(usize) -> Op::Item,
    at: impl Fn(usize) -> usize,
    out: &mut [M::Output],
    seeds: [Option<Op::Item>; L],
    sub: usize,
    len: usize,
    inclusive: bool,
) {
    // Every lane's first item (the first lane of a scan has no seed), so
    // that the loop's accumulators are plain items.
    let mut acc: [Op::Item; L] = std::array::from_fn(|l| {
        let (s, seed) = (l * sub, seeds[l]);
        let next = then::<Op>(seed, item(s));
        out[at(s)] = M::project(if inclusive { next } else { seed.unwrap_or_else(Op::identity) });
        next
    });
    let mut step = |acc: &mut Op::Item, s: usize| {
        let next = Op::combine(*acc, item(s));
        out[at(s)] = M::project(if inclusive { next } else { *acc });
        *acc = next;
    };
    for i in 1..sub {
        for (l, acc) in acc.iter_mut().enumerate() {
            step(acc, l * sub + i);
        }
    }
    for s in L * sub..len {
        step(&mut acc[L - 1], s);
    }
}

/// The mapped scan of positions `base .. base + output.len()` of `inputs`
/// into `output`, on at most `threads` threads.
///
/// The positions are cut into one piece per thread (in memory order), and
/// a long piece into [`LANES`] lanes (in scan order). Pass 1 reduces each
/// lane's lifted items in scan order, as a [`Tree`](tree::Tree); the lanes' totals are
/// combined in scan order (the last piece first for a reverse scan); pass 2
/// rescans each lane from its prefix, projecting into the output. A single
/// piece (one lane) is one pass, with no totals.
fn scan_range<Op: ScanOp, M: Maps<Op>, I: Inputs<Item = M::Input>>(
    inputs: &I,
    base: usize,
    output: &mut [M::Output],
    spec: ScanSpec,
    threads: usize,
) {
    // (Each form is its own function, so a large item's frames hold no
    // 8-lane arrays even on the paths not taken.)
    let one_lane = std::mem::size_of::<Op::Item>() > crate::STACK_ITEM_MAX_BYTES;
    match (spec.is_reverse(), one_lane) {
        (false, false) => scan_range_in::<Op, M, I, false, LANES>(inputs, base, output, spec, threads),
        (true, false) => scan_range_in::<Op, M, I, true, LANES>(inputs, base, output, spec, threads),
        (false, true) => scan_range_in::<Op, M, I, false, 1>(inputs, base, output, spec, threads),
        (true, true) => scan_range_in::<Op, M, I, true, 1>(inputs, base, output, spec, threads),
    }
}

/// [`scan_range`] in one direction (`REV`: from the last position down),
/// fixed at compile time so that positions step by one in the loops, in at
/// most `L` lanes a piece ([`LANES`], or 1).
fn scan_range_in<Op: ScanOp, M: Maps<Op>, I: Inputs<Item = M::Input>, const REV: bool, const L: usize>(
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
    let len_of = |k: usize| ((k + 1) * piece).min(n) - k * piece;
    // Scan position `s` of piece k, as an index within the piece.
    let at = move |len: usize| move |s: usize| if REV { len - 1 - s } else { s };
    let item = |k: usize| {
        let (first, at) = (base + k * piece, at(len_of(k)));
        move |s: usize| M::lift(inputs.get(first + at(s)))
    };

    // One piece is one lane: one pass, which on one thread beats two
    // passes of lanes (2^24 recurrence steps: 31.7 ms against 36).
    let lanes_of = |len: usize| if pieces > 1 && L > 1 { lanes_of(len) } else { (1, len) };

    // Pass 1: each lane's total (pieces in memory order, lanes in scan
    // order). A piece a thread; if the OS refuses a thread, the others take
    // its piece (`for_each_part`).
    let mut totals: Vec<(usize, [Option<Op::Item>; L])> = (0..pieces).map(|k| (k, [None; L])).collect();
    if pieces > 1 {
        parallel::for_each_part(&mut totals, pieces, |part| {
            for (k, total) in part.iter_mut() {
                let len = len_of(*k);
                match lanes_of(len) {
                    (1, _) => total[0] = reduce_lanes::<Op, 1>(item(*k), len, len)[0],
                    (_, sub) => *total = reduce_lanes::<Op, L>(item(*k), sub, len),
                }
            }
        });
    }
    // Each lane's prefix: the totals before it in scan order.
    let mut seeds = vec![[None; L]; pieces];
    let mut acc: Option<Op::Item> = None;
    let scan_order: Vec<usize> = if REV { (0..pieces).rev().collect() } else { (0..pieces).collect() };
    for k in scan_order {
        for (seed, total) in seeds[k].iter_mut().zip(totals[k].1) {
            *seed = acc;
            if let Some(t) = total {
                acc = Some(then::<Op>(acc, t));
            }
        }
    }
    // Pass 2: rescan each lane from its prefix and project.
    let inclusive = spec.is_inclusive();
    let mut work: Vec<(usize, &mut [M::Output])> = output.chunks_mut(piece).enumerate().collect();
    parallel::for_each_part(&mut work, pieces, |part| {
        for (k, out) in part.iter_mut() {
            let len = out.len();
            match lanes_of(len) {
                (1, _) => scan_lanes::<Op, M, 1>(item(*k), at(len), out, [seeds[*k][0]], len, len, inclusive),
                (_, sub) => scan_lanes::<Op, M, L>(item(*k), at(len), out, seeds[*k], sub, len, inclusive),
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ranges of positions joined in scan order: combining anything but
    /// neighbours, in order, panics. `DOWN`: the scan runs from the last
    /// position down, so an earlier item is the range above.
    struct Ranges<const DOWN: bool>;
    impl<const DOWN: bool> ScanOp for Ranges<DOWN> {
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
            if DOWN {
                assert_eq!(r.1, l.0, "joined out of order: {l:?} then {r:?}");
                (r.0, l.1)
            } else {
                assert_eq!(l.1, r.0, "joined out of order: {l:?} then {r:?}");
                (l.0, r.1)
            }
        }
    }

    /// Position `i` (counted from 1) as the range `[i, i + 1)`.
    struct Positions;
    impl<const DOWN: bool> Maps<Ranges<DOWN>> for Positions {
        type Input = u64;
        type Output = (u64, u64);
        fn lift(i: u64) -> (u64, u64) {
            (i, i + 1)
        }
        fn project(x: (u64, u64)) -> (u64, u64) {
            x
        }
    }

    #[test]
    fn the_tree_joins_every_item_in_scan_order() {
        for n in [0u64, 1, 63, 64, 65, 128, 129, 64 * 5 + 3, 64 * 64 + 1, 100_000] {
            let got = reduce::<Ranges<false>>((1..=n).map(|i| (i, i + 1)));
            assert_eq!(got, (n > 0).then_some((1, n + 1)), "{n} items");
        }
    }

    /// Pieces (one a thread) and their lanes around every edge: one piece
    /// (one pass), pieces at and just past the lanes' threshold (2^15:
    /// lanes of 3200, the last 10368), lanes of 128 past a multiple of 1024
    /// with the rest in the last, a last piece too short for lanes beside
    /// pieces in lanes (98305 on 3 threads: the last piece 32767), and a
    /// range that does not start at position 0 (as rows do). Every result
    /// is the range from the scan's start, joined in scan order (else
    /// `Ranges` panics).
    #[test]
    fn lanes_and_pieces_join_in_scan_order() {
        let lengths = [1, 63, 64, 65, 32767, 32768, 32769, 65535, 65536, 65537, 73737, 98305, 200_003];
        for n in lengths {
            let x: Vec<u64> = (1..=n as u64 + 5).collect();
            for threads in 1..=4 {
                for spec in ScanSpec::ALL {
                    for base in [0, 5] {
                        check_range(&x, base, n, threads, spec);
                    }
                }
            }
        }
    }

    /// `scan_range` over positions `base + 1 ..= base + n` of `x` (which
    /// holds 1, 2, ...), checked against the ranges each result must be.
    fn check_range(x: &[u64], base: usize, n: usize, threads: usize, spec: ScanSpec) {
        let mut out = vec![(7, 7); n];
        let x = &x[..base + n];
        if spec.is_reverse() {
            scan_range::<Ranges<true>, Positions, _>(&x, base, &mut out, spec, threads);
        } else {
            scan_range::<Ranges<false>, Positions, _>(&x, base, &mut out, spec, threads);
        }
        let ctx = format!("n {n}, base {base}, {threads} threads, {spec:?}");
        let (lo, hi) = (base as u64 + 1, (base + n) as u64 + 1); // the range's positions: [lo, hi)
        for (j, &got) in out.iter().enumerate() {
            let i = lo + j as u64; // this position's own range is [i, i + 1)
            let (first, last) = match (spec.is_inclusive(), spec.is_reverse()) {
                (true, false) => (lo, i + 1),
                (true, true) => (i, hi),
                (false, false) => (lo, i),
                (false, true) => (i + 1, hi),
            };
            let want = if first == last { (0, 0) } else { (first, last) };
            assert_eq!(got, want, "{ctx}, position {i}");
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
        // And in lanes side by side: each lane's tree.
        let lanes = reduce_lanes::<Decay, LANES>(|_| 0.53, 4224, LANES * 4224 + 5);
        assert!(lanes.iter().all(|&t| t == Some(0.0)), "{lanes:?}");
    }
}
