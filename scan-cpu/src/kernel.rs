//! The scan of one cache-resident tile, the inner loop of the tiled path.
//!
//! A single scan chain is latency-bound: every combine waits for the previous
//! one (3-4 cycles for a float add). The tile is therefore cut into [`CHAINS`]
//! contiguous chunks that are scanned in one interleaved loop: the chains are
//! independent, so the core overlaps them, and each chunk is contiguous, so
//! operands are never reordered and non-commutative operators stay correct.
//! The chunks are then stitched together by combining each with the total of
//! the chunks before it (and the tile's prefix), a pass over data in cache.
//! A tile too short for chains to pay (under `CHAINS * MIN_CHAIN` items:
//! the last tile of some scans, every tile of very large items) is one chain.
//!
//! The other order, for products of f32 and half floats ([`reduces_first`]):
//! each chunk is first only reduced ([`chain_totals`]), and the chains are
//! then scanned from their prefixes ([`seeded_scan`]), with nothing to fix
//! up; a chain from the identity can stick on a subnormal there.

use scan_core::ScanOp;

use crate::tree::{self, BLOCK};

mod accumulate;
#[cfg(target_arch = "x86_64")]
mod wide;

pub(crate) use accumulate::accumulate;

/// How many independent chains a tile is scanned as.
pub(crate) const CHAINS: usize = 8;

/// Items per chain below which a tile is scanned as a single chain.
const MIN_CHAIN: usize = 16;

/// Whether a tile of `n` items is scanned as one chain from the identity:
/// then a tile's scan is the sequential fold, bit for bit (nothing is
/// stitched). A whole input of `n` items is one such tile only when `n` is
/// also at most a tile ([`crate::tiled::is_sequential_fold`]).
pub(crate) fn is_one_chain(n: usize) -> bool {
    n < CHAINS * MIN_CHAIN
}

/// Whether a tile of `Op` is reduced first and then scanned from its
/// prefix ([`chain_totals`], [`seeds`], [`seeded_scan`]) instead of scanned
/// from the identity and then fixed up ([`local_scan`], [`finish_tile`]).
///
/// Scanning a chunk from the identity folds a chain of some thousand
/// items. For products of floats with factors in (0.5, 1) (the
/// recurrence's decays, a cumulative product) the running product
/// underflows and sticks at the smallest subnormal (half of it rounds back
/// up), and every later multiplication is on a subnormal, which this
/// machine's Xeon does some twenty times slower; factors below about 0.91
/// reach the subnormals within a chunk of the recurrence's pairs (968).
/// Reduced first, each chain starts from its prefix, by then tiny or 0,
/// and nothing sticks; but the reduce is a second full sweep of the tile
/// where the fix-up was a cheap vectorized one. 2^22 items, 1 / 2 threads,
/// ms, this order against the other:
///
/// | operator, factors | reduced first | scanned first |
/// |---|---|---|
/// | recurrence pairs, decays in (0.5, 0.56) | 6.6 / 3.5 | 147 / 74 |
/// | recurrence pairs, decays in (0.6, 0.9) | 6.8 / 3.5 | 115 / 61 |
/// | recurrence pairs, decays in (0.9, 1) | 6.9 / 3.5 | 6.2 / 3.2 |
/// | f32 cumulative product, (0.9, 1) | 3.2 / 1.8 | 4.7 / 2.6 |
/// | f32 2x2 matrices, diagonal in (0.6, 0.9) | 18.6 / 9.1 | 137 / 70 |
/// | f32 2x2 matrices, diagonal in (0.9, 1) | 18.6 / 9.2 | 15.0 / 7.6 |
///
/// (`bench --cpu` at 2^26, decays in (0.9, 1), 2 threads: 16.1 GB/s against
/// 18.5.) So the order is taken where the operator says it multiplies f32
/// or half floats ([`ScanOp::multiplies_narrow_floats`], which `#[scan_op]`
/// reads off the body: the built-in products, and any of one's own); f64
/// products stay normal over a chunk unless the factors are below 0.48, and
/// then they reach 0 rather than stick.
pub(crate) fn reduces_first<Op: ScanOp>() -> bool {
    Op::multiplies_narrow_floats()
}

/// How many lines ahead of each chain [`local_scan`] prefetches.
const PREFETCH_ITEMS: usize = 8;

/// Hints that the line at `p` will be read soon (a no-op off x86_64). Never
/// faults, so `p` may point anywhere.
#[inline(always)]
fn prefetch<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is a hint; it never faults, whatever the address.
    #[allow(unused_unsafe)]
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p.cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// The chunk structure of one locally scanned tile, in scan order.
pub(crate) struct Chunks<T> {
    /// Items in each chunk but the last, which also takes the remainder.
    pub sub: usize,
    /// Items in the tile.
    pub len: usize,
    /// `prefix[k]`: the combination of chunks `0..k` (`prefix[0]` is the identity).
    pub prefix: [T; CHAINS],
    /// The combination of the whole tile.
    pub total: T,
}

impl<T> Chunks<T> {
    /// Chunk `k` as a range of tile indices (the chunks run from the top of the
    /// tile down when the scan is reversed).
    pub fn range<const REV: bool>(&self, k: usize) -> std::ops::Range<usize> {
        let start = k * self.sub;
        let end = if k + 1 == CHAINS { self.len } else { start + self.sub };
        if REV {
            self.len - end..self.len - start
        } else {
            start..end
        }
    }
}

/// Scans the `n` items at `src` into the `n` items at `out` chunk by chunk,
/// each chunk from the identity: `out` then holds, per chunk, the inclusive
/// (`INCL`) or exclusive scan of that chunk alone. `REV` scans from the last
/// index down.
///
/// # Safety
/// `src` readable and `out` writable (possibly uninitialized) for `n` items;
/// either `src == out` (each item is read before it is overwritten) or the two
/// do not overlap.
// Always inlined, so that the AVX2 build of the tile scan (tiled.rs) compiles
// this loop for AVX2 too: an outlined copy would be the portable one.
#[inline(always)]
///
/// `AVX2`: the caller is compiled for AVX2 (and checked that the CPU has
/// it); 4-byte items then take the chains eight lanes at a time
/// ([`wide`]), with the same results.
pub(crate) unsafe fn local_scan<Op: ScanOp, const REV: bool, const INCL: bool, const AVX2: bool>(
    src: *const Op::Item,
    out: *mut Op::Item,
    n: usize,
) -> Chunks<Op::Item> {
    let acc = seeded_scan::<Op, REV, INCL, AVX2>(src, out, n, [Op::identity(); CHAINS]);
    chunks_of::<Op>(n, acc.map(Some))
}

/// The chunk structure of a tile of `n` items from each chunk's total in
/// scan order (`None`: nothing to add, as for an empty chunk).
fn chunks_of<Op: ScanOp>(n: usize, totals: [Option<Op::Item>; CHAINS]) -> Chunks<Op::Item> {
    let mut prefix = [Op::identity(); CHAINS];
    let mut acc = Op::identity();
    for (k, total) in totals.into_iter().enumerate() {
        prefix[k] = acc;
        if let Some(t) = total {
            acc = accumulate::<Op>(acc, t);
        }
    }
    Chunks { sub: chunk_len(n), len: n, prefix, total: acc }
}

/// Items in each chunk but the last of a tile of `n` items (0: one chain,
/// the last; the others empty). Chains pay off only when each is long
/// enough to hide the latency of a combine, and their stitching costs a
/// pass.
fn chunk_len(n: usize) -> usize {
    if is_one_chain(n) {
        0
    } else {
        n / CHAINS
    }
}

/// [`local_scan`] with chain `k` starting from `seeds[k]` (an accumulation
/// from the identity) instead of the identity: with the seeds of
/// [`seeds`], the tile's final values, with nothing to fix up. Returns
/// each chain's last accumulation.
///
/// # Safety
/// As [`local_scan`].
#[inline(always)]
pub(crate) unsafe fn seeded_scan<Op: ScanOp, const REV: bool, const INCL: bool, const AVX2: bool>(
    src: *const Op::Item,
    out: *mut Op::Item,
    n: usize,
    seeds: [Op::Item; CHAINS],
) -> [Op::Item; CHAINS] {
    // In place, one pointer per chain instead of two: fewer registers, no spills.
    if std::ptr::eq(src, out) {
        return local_scan_impl::<Op, REV, INCL, true, AVX2>(src, out, n, seeds);
    }
    local_scan_impl::<Op, REV, INCL, false, AVX2>(src, out, n, seeds)
}

/// [`seeded_scan`], with `SAME`: `src == out`, known at compile time.
#[inline(always)]
unsafe fn local_scan_impl<Op: ScanOp, const REV: bool, const INCL: bool, const SAME: bool, const AVX2: bool>(
    src: *const Op::Item,
    out: *mut Op::Item,
    n: usize,
    mut acc: [Op::Item; CHAINS],
) -> [Op::Item; CHAINS] {
    let src = if SAME { out as *const Op::Item } else { src };
    let sub = chunk_len(n);
    // Scan position `s` (0 = first in scan order) lives at tile index `at(s)`.
    let at = |s: usize| if REV { n - 1 - s } else { s };
    // One step of every chain at chunk offset `i`; the unsafe block's bound:
    // k * sub + i < CHAINS * sub <= n, so the index is in bounds.
    let step = |acc: &mut [Op::Item; CHAINS], i: usize| {
        for (k, acc) in acc.iter_mut().enumerate() {
            let m = at(k * sub + i);
            let next = accumulate::<Op>(*acc, *src.add(m));
            out.add(m).write(if INCL { next } else { *acc });
            *acc = next;
        }
    };
    // The chains read CHAINS streams at once, which the hardware prefetchers
    // follow poorly: ask for each chain's line PREFETCH_ITEMS ahead, once per
    // line. (Unrolling the loop by two spilled the chains' pointers instead.)
    let per_line = (64 / std::mem::size_of::<Op::Item>().max(1)).max(1);
    let mut i = 0;
    #[cfg(target_arch = "x86_64")]
    if AVX2 && std::mem::size_of::<Op::Item>() == 4 && CHAINS == 8 {
        while i + 8 <= sub {
            if i % per_line == 0 {
                for k in 0..CHAINS {
                    prefetch(src.wrapping_add(at((k * sub + i + PREFETCH_ITEMS * per_line).min(n - 1))));
                }
            }
            // SAFETY: the caller has AVX2 (this function's contract), items
            // are 4 bytes, i + 8 <= sub and CHAINS * sub <= n.
            wide::block::<Op, REV, INCL>(src, out, n, sub, i, &mut acc);
            i += 8;
        }
    }
    while i < sub {
        let end = (i + per_line).min(sub);
        for k in 0..CHAINS {
            prefetch(src.wrapping_add(at((k * sub + i + PREFETCH_ITEMS * per_line).min(n - 1))));
        }
        for i in i..end {
            step(&mut acc, i);
        }
        i = end;
    }
    // The remainder (fewer than CHAINS items) extends the last chunk.
    let last = &mut acc[CHAINS - 1];
    for s in CHAINS * sub..n {
        let m = at(s);
        let next = accumulate::<Op>(*last, *src.add(m));
        out.add(m).write(if INCL { next } else { *last });
        *last = next;
    }
    acc
}

/// The chunk structure of a tile of `n` items at `src`, as [`local_scan`]
/// cuts it, without scanning: each chunk's total is reduced as a [`Tree`](tree::Tree)
/// (the chunks side by side, whole blocks folded in lockstep). With
/// [`seeds`] and [`seeded_scan`] this is the other order of a tile's
/// work: reduce, then scan from the prefix, instead of scan, then fix up.
/// It reads the tile twice (the second time from cache) but never folds a
/// long chain from the identity, which for products of many factors in
/// (0.5, 1) sticks at the smallest subnormal (a chunk of the recurrence's
/// pairs then ran twenty times slower: 135 ms against 5.6 for 2^22 steps on
/// one thread).
///
/// # Safety
/// `src` readable for `n` items.
#[inline(always)]
pub(crate) unsafe fn chain_totals<Op: ScanOp, const REV: bool>(src: *const Op::Item, n: usize) -> Chunks<Op::Item> {
    let sub = chunk_len(n);
    let at = |s: usize| if REV { n - 1 - s } else { s };
    let item = |s: usize| *src.add(at(s));
    let per_line = (64 / std::mem::size_of::<Op::Item>().max(1)).max(1);
    // Every line of each chain's block PREFETCH_ITEMS lines ahead, as
    // `local_scan` asks for its lines (one per line; with one a block this
    // pass ran a quarter slower at 2^26).
    let prefetch_block = |j: usize| {
        for k in 0..CHAINS {
            for line in (0..BLOCK).step_by(per_line) {
                prefetch(src.wrapping_add(at((k * sub + j + line + PREFETCH_ITEMS * per_line).min(n - 1))));
            }
        }
    };
    chunks_of::<Op>(n, tree::reduce_side_by_side::<Op, CHAINS>(item, sub, n, prefetch_block))
}

/// Each chain's seed for [`seeded_scan`]: the combination of everything
/// before its chunk, given the combination of every tile before this one
/// (`None`: the first tile).
#[inline(always)]
pub(crate) fn seeds<Op: ScanOp>(chunks: &Chunks<Op::Item>, tile_prefix: Option<Op::Item>) -> [Op::Item; CHAINS] {
    match tile_prefix {
        Some(p) => chunks.prefix.map(|c| accumulate::<Op>(p, c)),
        None => chunks.prefix,
    }
}

/// Replaces every `x` of `data` with `combine(prefix, x)`, `prefix` an
/// accumulation from the identity ([`accumulate()`]). A loop the compiler
/// vectorizes for the arithmetic operators and max/min. (Always inlined, like
/// [`local_scan`], so that AVX2 builds of its callers vectorize it for AVX2.)
#[inline(always)]
pub(crate) fn fix_up<Op: ScanOp>(data: &mut [Op::Item], prefix: Op::Item) {
    for x in data {
        *x = accumulate::<Op>(prefix, *x);
    }
}

/// Turns the output of [`local_scan`] into the tile's final values, given the
/// combination of everything before the tile (`None`: nothing, the first tile).
#[inline(always)]
pub(crate) fn finish_tile<Op: ScanOp, const REV: bool>(
    out: &mut [Op::Item],
    chunks: &Chunks<Op::Item>,
    tile_prefix: Option<Op::Item>,
) {
    if chunks.sub == 0 {
        // One chain, the last, from the identity: only the tile's prefix to add.
        if let Some(p) = tile_prefix {
            fix_up::<Op>(out, p);
        }
        return;
    }
    for k in 0..CHAINS {
        let prefix = match tile_prefix {
            Some(p) => accumulate::<Op>(p, chunks.prefix[k]),
            // Chunk 0 of the first tile already has the right values.
            None if k == 0 => continue,
            None => chunks.prefix[k],
        };
        fix_up::<Op>(&mut out[chunks.range::<REV>(k)], prefix);
    }
}

#[cfg(test)]
mod tests {
    use scan_core::{ops::MatMul2x2, reference, ScanSpec};
    use scan_testing::Rng;

    use super::*;

    type M = MatMul2x2<i32>;

    fn spec<const REV: bool, const INCL: bool>() -> ScanSpec {
        match (REV, INCL) {
            (false, true) => ScanSpec::inclusive(),
            (false, false) => ScanSpec::exclusive(),
            (true, true) => ScanSpec::inclusive().reversed(),
            (true, false) => ScanSpec::exclusive().reversed(),
        }
    }

    fn check<const REV: bool, const INCL: bool>(x: &[[i32; 4]]) {
        let spec = spec::<REV, INCL>();
        let mut out = vec![[0; 4]; x.len()];
        // SAFETY: both hold x.len() items and are distinct.
        let chunks = unsafe { local_scan::<M, REV, INCL, false>(x.as_ptr(), out.as_mut_ptr(), x.len()) };
        finish_tile::<M, REV>(&mut out, &chunks, None);
        assert_eq!(out, reference::scan::<M>(x, spec), "len {} spec {spec:?}", x.len());
        let expected_total = reference::scan_in_place::<M>(&mut x.to_vec(), spec);
        assert_eq!(chunks.total, expected_total, "total, len {} spec {spec:?}", x.len());

        // The other order (reduce, then scan from the prefix), with and
        // without a tile prefix, out of place and in place.
        // SAFETY: x holds x.len() items.
        let reduced = unsafe { chain_totals::<M, REV>(x.as_ptr(), x.len()) };
        assert_eq!((reduced.sub, reduced.prefix, reduced.total), (chunks.sub, chunks.prefix, chunks.total));
        let p = [3, -1, 2, 5];
        for tile_prefix in [None, Some(p)] {
            let mut with = x.to_vec();
            if let Some(p) = tile_prefix {
                if REV {
                    with.push(p);
                } else {
                    with.insert(0, p);
                }
            }
            let mut want = reference::scan::<M>(&with, spec);
            if tile_prefix.is_some() {
                want.remove(if REV { x.len() } else { 0 });
            }
            let seeds = seeds::<M>(&reduced, tile_prefix);
            let mut out = vec![[0; 4]; x.len()];
            // SAFETY: both hold x.len() items and are distinct.
            unsafe { seeded_scan::<M, REV, INCL, false>(x.as_ptr(), out.as_mut_ptr(), x.len(), seeds) };
            assert_eq!(out, want, "reduced first, len {} spec {spec:?}, prefix {tile_prefix:?}", x.len());
            let mut in_place = x.to_vec();
            // SAFETY: src == out, x.len() items.
            unsafe { seeded_scan::<M, REV, INCL, false>(in_place.as_ptr(), in_place.as_mut_ptr(), x.len(), seeds) };
            assert_eq!(in_place, want, "reduced first in place, len {} spec {spec:?}", x.len());
        }
    }

    #[test]
    fn products_of_f32_and_half_floats_reduce_first() {
        use scan_core::maps::bf16;
        use scan_core::ops::{Add, LinearRecurrence, Mul};
        assert!(reduces_first::<LinearRecurrence<f32>>());
        assert!(reduces_first::<Mul<f32>>() && reduces_first::<MatMul2x2<bf16>>());
        assert!(!reduces_first::<Add<f32>>() && !reduces_first::<LinearRecurrence<f64>>());
        assert!(!reduces_first::<Mul<i32>>() && !reduces_first::<M>());
    }

    /// Why: a tile of decays 0.53 scanned from the identity leaves chunk 0's
    /// product stuck at the smallest subnormal (each later multiply on a
    /// subnormal, twenty times slower on this Xeon); reduced as trees, the
    /// chunks' products are 0.
    #[test]
    fn a_decay_chain_from_the_identity_sticks_and_its_tree_does_not() {
        type R = scan_core::ops::LinearRecurrence<f32>;
        let n = crate::tiled::tile_len::<(f32, f32)>();
        let x = vec![(0.53f32, 0.25f32); n];
        let mut out = vec![(0.0, 0.0); n];
        // SAFETY: both hold n items and are distinct.
        let scanned = unsafe { local_scan::<R, false, true, false>(x.as_ptr(), out.as_mut_ptr(), n) };
        assert_eq!(scanned.prefix[1].0, f32::from_bits(1), "chunk 0 from the identity sticks");
        // SAFETY: x holds n items.
        let reduced = unsafe { chain_totals::<R, false>(x.as_ptr(), n) };
        assert_eq!((reduced.prefix[1].0, reduced.total.0), (0.0, 0.0));
    }

    /// `x -> a x + b` on 16-bit integers, composed (wrapping): 4-byte items
    /// and not commutative, for the eight-lane path.
    struct Affine16;
    impl ScanOp for Affine16 {
        type Item = [u16; 2];
        fn identity() -> [u16; 2] {
            [1, 0]
        }
        fn combine(l: [u16; 2], r: [u16; 2]) -> [u16; 2] {
            [l[0].wrapping_mul(r[0]), r[0].wrapping_mul(l[1]).wrapping_add(r[1])]
        }
    }

    /// The eight-lane path against the scalar chains, bit for bit (the same
    /// order of combination: float sums round alike), out of place and in
    /// place; and against the reference when `exact` (integer and max/min
    /// scans do not depend on the grouping).
    #[cfg(target_arch = "x86_64")]
    fn check_wide<Op: ScanOp, const REV: bool, const INCL: bool>(
        x: &[Op::Item],
        bits: impl Fn(&Op::Item) -> u32,
        exact: bool,
    ) {
        let spec = spec::<REV, INCL>();
        let run = |wide: bool, in_place: bool| -> Vec<u32> {
            let mut out = x.to_vec();
            let src = if in_place { out.as_ptr() } else { x.as_ptr() };
            // SAFETY: AVX2 was detected (the caller); both hold x.len() items
            // and are either distinct or the same buffer.
            let chunks = unsafe {
                if wide {
                    local_scan::<Op, REV, INCL, true>(src, out.as_mut_ptr(), x.len())
                } else {
                    local_scan::<Op, REV, INCL, false>(src, out.as_mut_ptr(), x.len())
                }
            };
            finish_tile::<Op, REV>(&mut out, &chunks, None);
            out.iter().map(&bits).collect()
        };
        let scalar = run(false, false);
        for in_place in [false, true] {
            let got = run(true, in_place);
            let bad = (0..got.len()).find(|&i| got[i] != scalar[i]);
            assert!(
                bad.is_none(),
                "{} len {} {spec:?}, in place {in_place}: first difference at {bad:?}: {:x?} vs {:x?}",
                std::any::type_name::<Op>(),
                x.len(),
                bad.map(|i| got[i]),
                bad.map(|i| scalar[i])
            );
        }
        if exact {
            let want: Vec<u32> = reference::scan::<Op>(x, spec).iter().map(&bits).collect();
            assert!(scalar == want, "len {} {spec:?}: the scalar chains differ from the reference", x.len());
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn the_eight_lane_chains_match_the_reference_bit_for_bit() {
        if !std::arch::is_x86_feature_detected!("avx2") {
            eprintln!("no AVX2 here: the eight-lane path is not reachable");
            return;
        }
        let mut rng = Rng::fresh("kernel wide");
        let special = [0.0, -0.0, f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 1.5, -1.5];
        for len in [0, 7, 63, 64, 65, 71, 127, 128, 129, 200, 1000, 4099] {
            let a: Vec<[u16; 2]> = rng.vec(len, |r| [r.next_u64() as u16, r.next_u64() as u16]);
            let m: Vec<f32> = rng.vec(len, |r| {
                if r.below(4) == 0 {
                    special[r.below(special.len() as u64) as usize]
                } else {
                    r.range_f64(-9.0, 9.0) as f32
                }
            });
            let pair = |v: &[u16; 2]| u32::from(v[0]) << 16 | u32::from(v[1]);
            macro_rules! all_specs {
                ($op:ty, $x:expr, $bits:expr, $exact:expr) => {
                    check_wide::<$op, false, true>($x, $bits, $exact);
                    check_wide::<$op, false, false>($x, $bits, $exact);
                    check_wide::<$op, true, true>($x, $bits, $exact);
                    check_wide::<$op, true, false>($x, $bits, $exact);
                };
            }
            // Bits, NaNs as one: which NaN an operation returns is not
            // specified (the compiler may swap an add's operands).
            let f = |v: &f32| if v.is_nan() { f32::NAN.to_bits() } else { v.to_bits() };
            all_specs!(Affine16, &a, pair, true);
            all_specs!(scan_core::ops::Max<f32>, &m, f, true);
            all_specs!(scan_core::ops::Min<f32>, &m, f, true);
            all_specs!(scan_core::ops::Add<f32>, &m, f, false);
        }
    }

    /// The promise `is_one_chain` makes (callers run the fold instead): a
    /// short tile's scan is the sequential fold, bit for bit, for a float
    /// add, where any other grouping would round differently.
    #[test]
    fn a_short_tile_is_the_sequential_fold_bit_for_bit() {
        type A = scan_core::ops::Add<f32>;
        let mut rng = Rng::fresh("kernel short");
        for len in [1, 2, 16, 100, CHAINS * MIN_CHAIN - 1] {
            assert!(is_one_chain(len));
            let x: Vec<f32> = rng.vec(len, |r| r.range_f64(-1.0, 1.0) as f32 * 1e3);
            for (chained, spec) in [(true, ScanSpec::inclusive()), (false, ScanSpec::exclusive().reversed())] {
                let mut out = vec![0.0f32; len];
                // SAFETY: both hold len items and are distinct.
                let chunks = unsafe {
                    if chained {
                        local_scan::<A, false, true, false>(x.as_ptr(), out.as_mut_ptr(), len)
                    } else {
                        local_scan::<A, true, false, false>(x.as_ptr(), out.as_mut_ptr(), len)
                    }
                };
                if chained {
                    finish_tile::<A, false>(&mut out, &chunks, None);
                } else {
                    finish_tile::<A, true>(&mut out, &chunks, None);
                }
                let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&out), bits(&reference::scan::<A>(&x, spec)), "len {len} {spec:?}");
            }
        }
        assert!(!is_one_chain(CHAINS * MIN_CHAIN));
    }

    #[test]
    fn a_tile_scanned_as_chains_equals_the_reference_for_a_non_commutative_operator() {
        let mut rng = Rng::fresh("kernel");
        for len in [0, 1, 7, 8, 9, 15, 16, 17, 63, 64, 65, 127, 128, 129, 1000] {
            // Determinant 1: the prefixes never collapse to the zero matrix.
            let x = rng.vec(len, scan_testing::unimodular_i32);
            check::<false, true>(&x);
            check::<false, false>(&x);
            check::<true, true>(&x);
            check::<true, false>(&x);
        }
    }
}
