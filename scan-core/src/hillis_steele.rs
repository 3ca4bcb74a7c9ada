//! Hillis and Steele's scan (1986): the naive parallel scan, kept as the
//! foil to Blelloch's.
//!
//! Step `d` (1, 2, 4, …) replaces every item `i >= d` with
//! `x[i - d] ∘ x[i]`, all at once (from a copy of the previous step). After
//! `log2 n` steps every item holds its inclusive prefix. It is short
//! (`log2 n` steps, every item busy) but not work-efficient: about
//! `n log2 n` combines against Blelloch's `2n`. That trade wins only where
//! the items run in lockstep anyway, which is why the GPU kernels use it
//! inside a warp (`scan-cuda/kernels/warp.cuh`) and Blelloch's or a
//! sequential run everywhere else.
//!
//! The classic trace, for addition:
//!
//! ```
//! use scan_core::{hillis_steele, ops::Add};
//!
//! let x = [3, 1, 7, 0, 4, 1, 6, 3];
//! let mut next = [0; 8];
//! hillis_steele::step::<Add<i32>>(&x, &mut next, 1)?;
//! assert_eq!(next, [3, 4, 8, 7, 4, 5, 7, 9]);
//! let prev = next;
//! hillis_steele::step::<Add<i32>>(&prev, &mut next, 2)?;
//! assert_eq!(next, [3, 4, 11, 11, 12, 12, 11, 14]);
//! let prev = next;
//! hillis_steele::step::<Add<i32>>(&prev, &mut next, 4)?;
//! assert_eq!(next, [3, 4, 11, 11, 15, 16, 22, 25]);
//!
//! let mut y = x;
//! hillis_steele::scan_block::<Add<i32>>(&mut y, scan_core::ScanSpec::inclusive());
//! assert_eq!(y, [3, 4, 11, 11, 15, 16, 22, 25]);
//! assert!(hillis_steele::step::<Add<i32>>(&x, &mut [0; 7], 1).is_err()); // lengths differ
//! # Ok::<(), scan_core::Error>(())
//! ```

use crate::{Error, Result, ScanOp, ScanSpec};

/// One step at distance `d`: `next[i] = prev[i - d] ∘ prev[i]` for `i >= d`,
/// `next[i] = prev[i]` below. The earlier item is the left operand.
/// [`Error::LengthMismatch`] (and `next` unchanged) when the slices differ
/// in length.
pub fn step<Op: ScanOp>(prev: &[Op::Item], next: &mut [Op::Item], d: usize) -> Result<()> {
    Error::check_lengths(prev.len(), next.len())?;
    combine_at::<Op>(prev, next, d);
    Ok(())
}

/// [`step`] on slices of one length.
fn combine_at<Op: ScanOp>(prev: &[Op::Item], next: &mut [Op::Item], d: usize) {
    let d = d.min(prev.len());
    next[..d].copy_from_slice(&prev[..d]);
    for i in d..prev.len() {
        next[i] = Op::combine(prev[i - d], prev[i]);
    }
}

/// Scans `data` (any length) in place with Hillis and Steele's steps: inclusive
/// by construction, exclusive by shifting in the identity, reverse by running
/// on the reversed order.
pub fn scan_block<Op: ScanOp>(data: &mut [Op::Item], spec: ScanSpec) {
    let n = data.len();
    // Zero-sized items are all the one value of their type (as in
    // `blelloch::block::scan_block`): n log n combines of them would change
    // nothing, and at 2^64 of them never end.
    if n == 0 || std::mem::size_of::<Op::Item>() == 0 {
        return;
    }
    let mut prev: Vec<Op::Item> = if spec.is_reverse() { data.iter().rev().copied().collect() } else { data.to_vec() };
    let mut next = prev.clone();
    let mut d = 1;
    while d < n {
        // (The same lengths: `next` is a clone of `prev`.)
        combine_at::<Op>(&prev, &mut next, d);
        std::mem::swap(&mut prev, &mut next);
        d = d.saturating_mul(2);
    }
    let at = |i: usize| -> Op::Item {
        if spec.is_inclusive() {
            prev[i]
        } else if i == 0 {
            Op::identity()
        } else {
            prev[i - 1]
        }
    };
    for k in 0..n {
        let i = if spec.is_reverse() { n - 1 - k } else { k };
        data[i] = at(k);
    }
}
