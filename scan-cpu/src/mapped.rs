//! Mapped scans on the CPU (`scan_core::maps`): items are lifted from the
//! inputs as they are read and projected as they are written; nothing
//! lifted is stored.
//!
//! The input is cut into one piece per thread (in memory order). Pass 1
//! reduces each piece's lifted items in scan order; the pieces' totals are
//! combined in scan order (the last piece first for a reverse scan); pass 2
//! rescans each piece from its prefix, projecting into the output. So the
//! inputs are read twice and the output written once. The grouping depends
//! on the number of pieces: float results are identical from run to run for
//! one thread count, not across thread counts.

use scan_core::maps::{Inputs, Maps};
use scan_core::{Error, Result, ScanOp, ScanSpec};

use crate::cpu::Cpu;

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
        if n == 0 {
            return Ok(());
        }
        let pieces = self.threads().min(n / MIN_PIECE).max(1);
        let piece = n.div_ceil(pieces);
        let reverse = spec.is_reverse();
        // The memory indices of piece k, in scan order.
        let order = |k: usize| {
            let (lo, hi) = (k * piece, ((k + 1) * piece).min(n));
            (0..hi - lo).map(move |j| if reverse { hi - 1 - j } else { lo + j })
        };
        let lift = |i: usize| M::lift(inputs.get(i));

        // Pass 1: each piece's total (in memory order of pieces).
        let totals: Vec<Option<Op::Item>> = if pieces == 1 {
            vec![None] // one piece needs no prefix
        } else {
            std::thread::scope(|s| {
                let handles: Vec<_> = (0..pieces)
                    .map(|k| s.spawn(move || order(k).fold(None, |acc, i| Some(then::<Op>(acc, lift(i))))))
                    .collect();
                // A panic in a map (user code) is the caller's panic.
                handles.into_iter().map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p))).collect()
            })
        };
        // Each piece's prefix: the totals of the pieces before it in scan order.
        let mut prefixes = vec![None; pieces];
        let mut acc: Option<Op::Item> = None;
        let scan_order: Vec<usize> = if reverse { (0..pieces).rev().collect() } else { (0..pieces).collect() };
        for k in scan_order {
            prefixes[k] = acc;
            if let Some(t) = totals[k] {
                acc = Some(then::<Op>(acc, t));
            }
        }
        // Pass 2: rescan each piece from its prefix and project.
        let inclusive = spec.is_inclusive();
        let run = |k: usize, out: &mut [M::Output]| {
            let base = k * piece;
            let mut acc = prefixes[k];
            for i in order(k) {
                let next = then::<Op>(acc, lift(i));
                out[i - base] = M::project(if inclusive { next } else { acc.unwrap_or_else(Op::identity) });
                acc = Some(next);
            }
        };
        if pieces == 1 {
            run(0, output);
        } else {
            std::thread::scope(|s| {
                for (k, out) in output.chunks_mut(piece).enumerate() {
                    let run = &run;
                    s.spawn(move || run(k, out));
                }
            });
        }
        Ok(())
    }
}
